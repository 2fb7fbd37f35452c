/* SPDX-License-Identifier: MIT */
/* Events about our Node: see event.h. Field names: k8s.io/api/core/v1 Event. */
#include <errno.h>

#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"
#include "cluster/event.h"
#include "cluster/kube.h"

static void add_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
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
	snprintf(name, sizeof(name), "%.200s.cz-%llx-%.40s", d->node,
		 (unsigned long long)d->when_ms, d->reason);
	for (char *p = name; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	kube_time(d->when_ms, false, ts, sizeof(ts));
	add_str(md, "name", name);
	add_str(md, "namespace", "default");
	json_object_object_add(ev, "metadata", md);
	add_str(inv, "kind", "Node");
	add_str(inv, "apiVersion", "v1");
	add_str(inv, "name", d->node);
	if (d->node_uid)
		add_str(inv, "uid", d->node_uid);
	json_object_object_add(ev, "involvedObject", inv);
	add_str(ev, "reason", d->reason);
	add_str(ev, "message", textsafe(TEXTSAFE_TEXT, d->message, msg, sizeof(msg))); /* kubectl prints it */
	add_str(ev, "type", d->type);
	add_str(src, "component", "cpuzombie");
	add_str(src, "host", d->node);
	json_object_object_add(ev, "source", src);
	add_str(ev, "firstTimestamp", ts);
	add_str(ev, "lastTimestamp", ts);
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
		r = log_warning_errno(EREMOTEIO, "Failed to create event %s: HTTP %ld: %s, ignoring",
				      d->reason, resp.status, resp.message);
	else if (r < 0)
		log_warning_errno(r, "Failed to create event %s: %s, ignoring", d->reason,
				  resp.message);
	kube_response_clear(&resp);
	return r;
}
