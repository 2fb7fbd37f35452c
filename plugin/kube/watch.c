/* SPDX-License-Identifier: MIT */
/* A Kubernetes watch stream: see watch.h. */
#include <errno.h>

#include "base/kjson.h"
#include "base/util.h"
#include "kube/kube.h"
#include "kube/watch.h"

static const char *const TYPES[] = {
	[WATCH_ADDED] = "ADDED", [WATCH_MODIFIED] = "MODIFIED", [WATCH_DELETED] = "DELETED",
	[WATCH_BOOKMARK] = "BOOKMARK", [WATCH_ERROR] = "ERROR",
};

const char *watch_type_name(enum watch_type t)
{
	return (unsigned)t < ARRAY_SIZE(TYPES) ? TYPES[t] : "?";
}

void watch_event_clear(struct watch_event *ev)
{
	if (!ev)
		return;
	if (ev->object)
		json_object_put(ev->object);
	*ev = (struct watch_event){ 0 };
}

/* A resourceVersion as the server writes it: decimal digits (opaque to clients, but a bound
 * and a charset keep it safe to put in a URL and a log). */
static bool rv_ok(const char *rv)
{
	size_t n = rv ? strlen(rv) : 0;

	if (n == 0 || n >= WATCH_RV_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (rv[i] < '0' || rv[i] > '9')
			return false;
	return true;
}

int watch_event_parse(const char *line, size_t n, struct watch_event *ev, char *err, size_t size)
{
	json_object *doc, *type, *obj;
	const char *t, *rv, *name;
	size_t i;

	watch_event_clear(ev);
	doc = kube_parse_body(line, n);
	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		snprintf(err, size, "watch event: not a JSON object");
		return -EBADMSG;
	}
	if (!json_object_object_get_ex(doc, "type", &type) ||
	    !json_object_is_type(type, json_type_string)) {
		json_object_put(doc);
		snprintf(err, size, "watch event: no type");
		return -EBADMSG;
	}
	t = json_object_get_string(type);
	for (i = 0; i < ARRAY_SIZE(TYPES) && !streq(t, TYPES[i]); i++)
		;
	if (i == ARRAY_SIZE(TYPES)) {
		json_object_put(doc);
		snprintf(err, size, "watch event: unknown type");
		return -EBADMSG;
	}
	if (!json_object_object_get_ex(doc, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object)) {
		json_object_put(doc);
		snprintf(err, size, "watch event %s: no object", TYPES[i]);
		return -EBADMSG;
	}
	ev->type = (enum watch_type)i;
	ev->object = json_object_get(obj);
	json_object_put(doc);
	if (ev->type == WATCH_ERROR) {
		json_object *code;

		if (json_object_object_get_ex(ev->object, "code", &code) &&
		    json_object_is_type(code, json_type_int))
			ev->code = (long)json_object_get_int64(code);
		kube_status_message(ev->object, ev->message, sizeof(ev->message));
		return 0;
	}
	rv = kube_get_str(ev->object, "metadata.resourceVersion", NULL);
	name = kube_get_str(ev->object, "metadata.name", NULL);
	if (!rv_ok(rv)) {
		snprintf(err, size, "watch event %s: no valid metadata.resourceVersion", TYPES[i]);
		watch_event_clear(ev);
		return -EBADMSG;
	}
	if (ev->type != WATCH_BOOKMARK && !valid_name(name ? name : "", 253)) {
		snprintf(err, size, "watch event %s: no valid metadata.name", TYPES[i]);
		watch_event_clear(ev);
		return -EBADMSG;
	}
	snprintf(ev->rv, sizeof(ev->rv), "%s", rv);
	return 0;
}

/* ---- lines --------------------------------------------------------------------------------- */

void watch_lines_init(struct watch_lines *w, size_t max)
{
	*w = (struct watch_lines){ .max = max ? max : WATCH_EVENT_MAX };
}

size_t watch_lines_pending(const struct watch_lines *w)
{
	return w->n;
}

void watch_lines_done(struct watch_lines *w)
{
	if (!w)
		return;
	free(w->buf);
	w->buf = NULL;
	w->n = w->cap = 0;
}

static int emit(const char *line, size_t n, watch_line_fn fn, void *userdata)
{
	if (n > 0 && line[n - 1] == '\r')
		n--;
	return n > 0 ? fn(line, n, userdata) : 0;
}

static int too_long(const struct watch_lines *w, char *err, size_t size)
{
	snprintf(err, size, "a watch event is longer than the %zu-byte cap", w->max);
	return -EMSGSIZE;
}

/* Append @n bytes to the held partial line. */
static int hold(struct watch_lines *w, const char *data, size_t n, char *err, size_t size)
{
	if (n > w->max - w->n)
		return too_long(w, err, size);
	if (w->n + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		char *p;

		while (cap < w->n + n)
			cap *= 2;
		if (cap > w->max)
			cap = w->max;
		p = realloc(w->buf, cap);
		if (!p)
			return -ENOMEM;
		w->buf = p;
		w->cap = cap;
	}
	memcpy(w->buf + w->n, data, n);
	w->n += n;
	return 0;
}

int watch_lines_feed(struct watch_lines *w, const char *data, size_t n, watch_line_fn fn,
		     void *userdata, char *err, size_t size)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t k = nl ? (size_t)(nl - data) : n;
		int r;

		if (!nl)
			return hold(w, data, k, err, size);
		if (w->n) {	/* the end of a held line */
			r = hold(w, data, k, err, size);
			if (r < 0)
				return r;
			r = emit(w->buf, w->n, fn, userdata);
			w->n = 0;
		} else if (k > w->max) {
			return too_long(w, err, size);
		} else {
			r = emit(data, k, fn, userdata);
		}
		if (r < 0)
			return r;
		data += k + 1;
		n -= k + 1;
	}
	return 0;
}

/* ---- the stream ---------------------------------------------------------------------------- */

struct stream_ctx {
	struct watch_lines lines;
	watch_event_fn fn;
	void *userdata;
	struct watch_stats *stats;
	char *err;
	size_t err_size;
};

static int on_line(const char *line, size_t n, void *userdata)
{
	struct stream_ctx *c = userdata;
	struct watch_event ev = { 0 };
	int r;

	r = watch_event_parse(line, n, &ev, c->err, c->err_size);
	if (r < 0)
		return r;
	c->stats->events++;
	if (ev.type == WATCH_BOOKMARK)
		c->stats->bookmarks++;
	r = c->fn(&ev, c->userdata);
	watch_event_clear(&ev);
	return r;
}

static int on_bytes(const char *data, size_t n, void *userdata)
{
	struct stream_ctx *c = userdata;

	if (n == 0)	/* a tick: may the watch go on? */
		return c->fn(NULL, c->userdata);
	c->stats->bytes += n;
	return watch_lines_feed(&c->lines, data, n, on_line, c, c->err, c->err_size);
}

int watch_stream(struct kube_client *kc, const char *path, uint64_t timeout_ms, uint64_t stall_ms,
		 size_t max_line, watch_event_fn fn, void *userdata, struct watch_stats *stats,
		 char *err, size_t size)
{
	struct watch_stats local = { 0 };
	struct stream_ctx c = { .fn = fn, .userdata = userdata, .stats = stats ? stats : &local,
				.err = err, .err_size = size };
	struct kube_response resp = { 0 };
	int r;

	err[0] = '\0';
	watch_lines_init(&c.lines, max_line);
	r = kube_stream(kc, path, timeout_ms, stall_ms, on_bytes, &c, &resp);
	if (r == -ETIMEDOUT)
		snprintf(err, size, "the watch stalled or outlived its time: %s", resp.message);
	else if (r < 0 && !err[0])
		snprintf(err, size, "the watch stream broke: %s",
		    resp.message[0] ? resp.message : strerror(-r));
	else if (r == 0 && resp.status != 200) {
		snprintf(err, size, "watch: HTTP %ld%s%s", resp.status, resp.message[0] ? ": " : "",
		    resp.message);
		r = resp.status == 410 ? -ESTALE :
		    resp.status == 401 || resp.status == 403 ? -EACCES : -EREMOTEIO;
	} else if (r == 0 && watch_lines_pending(&c.lines)) {
		snprintf(err, size, "the watch stream ended inside an event (%zu bytes)",
		    watch_lines_pending(&c.lines));
		r = -EBADMSG;
	}
	watch_lines_done(&c.lines);
	kube_response_clear(&resp);
	return r;
}
