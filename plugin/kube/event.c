/* SPDX-License-Identifier: MIT */
/* Events about our Node: see event.h. Field names: k8s.io/api/core/v1 Event. */
#include <errno.h>

#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"
#include "base/jsonw.h"
#include "kube/event.h"
#include "kube/kube.h"

void event_name(const struct event_desc *d, char *buf, size_t size)
{
	snprintf(buf, size, "%.200s.cz-%llx-%.40s", d->node, (unsigned long long)d->when_ms,
		 d->reason);
	for (char *p = buf; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
}

json_object *event_body(const struct event_desc *d)
{
	json_object *ev = json_object_new_object(), *md = json_object_new_object();
	json_object *inv = json_object_new_object(), *src = json_object_new_object();
	char name[320], ts[40], msg[2048];

	if (!ev || !md || !inv || !src) {
		json_object_put(ev);
		json_object_put(md);
		json_object_put(inv);
		json_object_put(src);
		return NULL;
	}
	event_name(d, name, sizeof(name));
	kube_time(d->when_ms, false, ts, sizeof(ts));
	jsonw_add(md, "name", json_object_new_string(name));
	jsonw_add(md, "namespace", json_object_new_string("default"));
	json_object_object_add(ev, "metadata", md);
	jsonw_add(inv, "kind", json_object_new_string("Node"));
	jsonw_add(inv, "apiVersion", json_object_new_string("v1"));
	jsonw_add(inv, "name", json_object_new_string(d->node));
	if (d->node_uid)
		jsonw_add(inv, "uid", json_object_new_string(d->node_uid));
	json_object_object_add(ev, "involvedObject", inv);
	jsonw_add(ev, "reason", json_object_new_string(d->reason));
	/* kubectl prints it */
	jsonw_add(ev, "message",
		  json_object_new_string(textsafe(TEXTSAFE_TEXT, d->message, msg, sizeof(msg))));
	jsonw_add(ev, "type", json_object_new_string(d->type));
	jsonw_add(src, "component", json_object_new_string("cpuzombie"));
	jsonw_add(src, "host", json_object_new_string(d->node));
	json_object_object_add(ev, "source", src);
	jsonw_add(ev, "firstTimestamp", json_object_new_string(ts));
	jsonw_add(ev, "lastTimestamp", json_object_new_string(ts));
	json_object_object_add(ev, "count", json_object_new_int(1));
	return ev;
}

int event_post(struct kube_client *kc, const struct event_desc *d)
{
	_cleanup_(json_object_putp) json_object *ev = event_body(d);
	struct kube_response resp = { 0 };
	int r;

	if (!ev)
		return -ENOMEM;
	r = kube_json(kc, "POST", "/api/v1/namespaces/default/events", "application/json", ev, 0,
		      &resp);
	if (r == 0 && resp.status != 201 && resp.status != 409)	/* 409: a retry landed */
		r = log_warning_errno(EREMOTEIO,
				      "Failed to create event %s: HTTP %ld: %s, ignoring",
				      d->reason, resp.status, resp.message);
	else if (r < 0)
		log_warning_errno(r, "Failed to create event %s: %s, ignoring", d->reason,
				  resp.message);
	kube_response_clear(&resp);
	return r;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (s = s ? s : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h * 0x100000001b3ull;	/* the NUL after it */
}

uint64_t event_key(const struct event_desc *d)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = fnv(fnv(fnv(h, d->node), d->node_uid), d->type);
	h = fnv(fnv(h, d->reason), d->message);
	return h ? h : 1;
}

struct event_series *event_correlate(struct event_cache *c, const struct event_desc *d)
{
	uint64_t key = event_key(d);

	for (size_t i = 0; i < EVENT_SERIES_MAX; i++) {
		struct event_series *s = &c->s[i];

		if (s->key == key && d->when_ms >= s->last_ms &&
		    d->when_ms - s->last_ms <= EVENT_SERIES_WINDOW_MS)
			return s;
	}
	return NULL;
}

void event_remember(struct event_cache *c, struct event_series *s, const struct event_desc *d,
		    const char *name)
{
	if (s) {
		s->count++;
		s->last_ms = d->when_ms;
		return;
	}
	s = &c->s[0];
	for (size_t i = 0; i < EVENT_SERIES_MAX; i++) {	/* an unused one, else the least recent */
		if (!c->s[i].key) {
			s = &c->s[i];
			break;
		}
		if (c->s[i].last_ms < s->last_ms)
			s = &c->s[i];
	}
	*s = (struct event_series){ event_key(d), "", d->when_ms, d->when_ms, 1 };
	snprintf(s->name, sizeof(s->name), "%s", name);
}

json_object *event_count_patch(const struct event_series *s, const struct event_desc *d)
{
	json_object *p = json_object_new_object();
	char ts[40];

	if (!p)
		return NULL;
	kube_time(d->when_ms, false, ts, sizeof(ts));
	jsonw_add(p, "count", json_object_new_int64((int64_t)s->count + 1));
	jsonw_add(p, "lastTimestamp", json_object_new_string(ts));
	return p;
}

/* PATCH series @s's Event: 0, -ENOENT (it is gone: expired), or -errno (logged). */
static int count_on(struct kube_client *kc, const struct event_series *s,
		    const struct event_desc *d)
{
	_cleanup_(json_object_putp) json_object *patch = event_count_patch(s, d);
	struct kube_response resp = { 0 };
	char path[400];
	int r;

	if (!patch)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/events/%s", s->name);
	r = kube_json(kc, "PATCH", path, "application/strategic-merge-patch+json", patch, 0,
		      &resp);
	if (r == 0 && resp.status == 404)
		r = -ENOENT;
	else if (r == 0 && resp.status != 200)
		r = log_warning_errno(EREMOTEIO, "Failed to count event %s: HTTP %ld: %s, ignoring",
				      d->reason, resp.status, resp.message);
	else if (r < 0)
		log_warning_errno(r, "Failed to count event %s: %s, ignoring", d->reason,
				  resp.message);
	kube_response_clear(&resp);
	return r;
}

int event_record(struct kube_client *kc, struct event_cache *c, const struct event_desc *d)
{
	struct event_series *s = event_correlate(c, d);
	char name[320];
	int r;

	if (s) {
		r = count_on(kc, s, d);
		if (r == 0)
			event_remember(c, s, d, s->name);
		if (r != -ENOENT)
			return r;
		s->key = 0;	/* expired on the server: a new series */
	}
	r = event_post(kc, d);
	if (r == 0) {
		event_name(d, name, sizeof(name));
		event_remember(c, NULL, d, name);
	}
	return r;
}
