/* SPDX-License-Identifier: MIT */
#ifndef CZ_YAMLDOC_H
#define CZ_YAMLDOC_H

/*
 * A bounded replacement for libyaml's yaml_parser_load(): it builds the same yaml_document_t
 * from the parser's events, but refuses, as soon as the event that crosses a limit arrives,
 * what a configuration never needs and what makes libyaml (or a loader walking the document)
 * slow: anchors and aliases (yaml_parser_load registers anchors in a list it searches for each
 * one - 60k anchors took 17 s - and aliases expand into billion-laughs documents), nesting
 * deeper than a few levels (libyaml's scanner is quadratic in flow depth: a 1 MB `[[[...` ran
 * past 60 s), and more keys or events than any configuration has. What remains is linear in
 * the size of the text, so every file under the caller's size cap is accepted or refused
 * quickly.
 */

#include <stddef.h>
#include <yaml.h>

struct yamldoc_limits {
	unsigned max_depth;	/* collections open at once: root mapping = 1 */
	size_t max_keys;	/* mapping keys in the whole document */
	size_t max_events;	/* parser events in the whole stream */
	size_t max_directives;	/* %YAML / %TAG lines (libyaml compares each with all before) */
};

struct yamldoc_error {
	size_t line;		/* 1-based line of the offending event, 0 when none */
	char what[160];		/* "nesting deeper than 4 levels", "YAML syntax: ..." */
};

/*
 * yamldoc_load - parse the first document of the @len bytes at @text into @doc (which the
 * caller deletes with yaml_document_delete() on success). An empty stream gives an initialized
 * document with no root node. *@ret_more is set when a second document follows (not read).
 * Returns 0, or -EINVAL (syntax error or a limit crossed: @err says which, at which line) /
 * -ENOMEM; on failure @doc holds nothing to delete.
 */
int yamldoc_load(const char *text, size_t len, const struct yamldoc_limits *lim,
		 yaml_document_t *doc, int *ret_more, struct yamldoc_error *err);

#endif
