/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/yamldoc.h"
#include "base/util.h"

#define DEPTH_CAP 16

struct builder {
	yaml_document_t *doc;
	const struct yamldoc_limits *lim;
	struct yamldoc_error *err;
	int open[DEPTH_CAP];	/* the collections open, outermost first */
	int key[DEPTH_CAP];	/* for an open mapping: its key waiting for a value, or 0 */
	unsigned depth;
	size_t keys;
};

static int _printf_(3, 4) refuse(struct builder *b, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;

	b->err->line = m ? m->line + 1 : 0;
	va_start(ap, fmt);
	vsnprintf(b->err->what, sizeof(b->err->what), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Hang node @id under the innermost open collection (the first node is the root). */
static int attach(struct builder *b, int id, const yaml_mark_t *m)
{
	int parent, *key;

	if (id == 0)
		return -ENOMEM;
	if (b->depth == 0)
		return 0;
	parent = b->open[b->depth - 1];
	key = &b->key[b->depth - 1];
	if (yaml_document_get_node(b->doc, parent)->type == YAML_SEQUENCE_NODE)
		return yaml_document_append_sequence_item(b->doc, parent, id) ? 0 : -ENOMEM;
	if (*key == 0) {
		if (++b->keys > b->lim->max_keys)
			return refuse(b, m, "more than %zu keys", b->lim->max_keys);
		*key = id;
		return 0;
	}
	if (!yaml_document_append_mapping_pair(b->doc, parent, *key, id))
		return -ENOMEM;
	*key = 0;
	return 0;
}

static int add_node(struct builder *b, const yaml_event_t *ev)
{
	const unsigned char *anchor = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.anchor
				      : ev->type == YAML_SEQUENCE_START_EVENT
					      ? ev->data.sequence_start.anchor
					      : ev->data.mapping_start.anchor;
	int id, r;

	if (anchor)
		return refuse(b, &ev->start_mark, "anchors (&%.32s) are not supported", anchor);
	if (ev->type == YAML_SCALAR_EVENT) {
		id = yaml_document_add_scalar(b->doc, ev->data.scalar.tag, ev->data.scalar.value,
					      (int)ev->data.scalar.length, ev->data.scalar.style);
	} else {
		if (b->depth >= b->lim->max_depth || b->depth >= DEPTH_CAP)
			return refuse(b, &ev->start_mark, "nesting deeper than %u levels",
				      b->lim->max_depth);
		id = ev->type == YAML_SEQUENCE_START_EVENT
			     ? yaml_document_add_sequence(b->doc, ev->data.sequence_start.tag,
							  ev->data.sequence_start.style)
			     : yaml_document_add_mapping(b->doc, ev->data.mapping_start.tag,
							 ev->data.mapping_start.style);
	}
	r = attach(b, id, &ev->start_mark);
	if (r < 0)
		return r;
	/* yaml_document_add_*() leave the marks zero: the loader's FILE:LINE errors need them */
	yaml_document_get_node(b->doc, id)->start_mark = ev->start_mark;
	if (ev->type != YAML_SCALAR_EVENT) {
		b->key[b->depth] = 0;
		b->open[b->depth++] = id;
	}
	return 0;
}

/* One event. Returns 1 when the document is complete, 0 to go on, or -errno. */
static int step(struct builder *b, const yaml_event_t *ev, bool *started, int *ret_more)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (*started) {
			*ret_more = 1;
			return 1;
		}
		*started = true;
		return 0;
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_ALIAS_EVENT:
		return refuse(b, &ev->start_mark, "aliases (*%.32s) are not supported",
			      ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		return add_node(b, ev);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0)
			b->depth--;
		return 0;
	default: /* STREAM_START, DOCUMENT_END, NO_EVENT */
		return 0;
	}
}

/*
 * libyaml checks each %TAG directive against every earlier one before the first event of the
 * document: 40k of them took 2.7 s. Count the lines that can be directives first.
 */
static int count_directives(const char *text, size_t len, const struct yamldoc_limits *lim,
			    struct yamldoc_error *err)
{
	size_t n = 0, line = 1;

	for (const char *p = text, *end = text + len; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (*p == '%' && ++n > lim->max_directives) {
			err->line = line;
			snprintf(err->what, sizeof(err->what), "more than %zu YAML directives",
				 lim->max_directives);
			return -EINVAL;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

static int load(yaml_parser_t *parser, const struct yamldoc_limits *lim, yaml_document_t *doc,
		int *ret_more, struct yamldoc_error *err)
{
	struct builder b = { .doc = doc, .lim = lim, .err = err };
	bool started = false;
	size_t events = 0;
	int r = 0;

	if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1))
		return -ENOMEM;
	while (r == 0) {
		yaml_event_t ev;

		if (!yaml_parser_parse(parser, &ev)) {
			r = refuse(&b, &parser->problem_mark, "YAML syntax: %s",
				   parser->problem ? parser->problem : "malformed");
			break;
		}
		if (++events > lim->max_events)
			r = refuse(&b, &ev.start_mark, "more than %zu YAML events (keys, values, "
				   "list items)", lim->max_events);
		else
			r = step(&b, &ev, &started, ret_more);
		yaml_event_delete(&ev);
	}
	if (r < 0) {
		yaml_document_delete(doc);
		return r;
	}
	return 0;
}

int yamldoc_load(const char *text, size_t len, const struct yamldoc_limits *lim,
		 yaml_document_t *doc, int *ret_more, struct yamldoc_error *err)
{
	yaml_parser_t parser;
	int r;

	*ret_more = 0;
	err->line = 0;
	err->what[0] = '\0';
	r = count_directives(text, len, lim, err);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	r = load(&parser, lim, doc, ret_more, err);
	yaml_parser_delete(&parser);
	return r;
}
