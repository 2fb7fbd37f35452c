/* SPDX-License-Identifier: MIT */
/* Events about our Node: see event.h. Field names: k8s.io/api/core/v1 Event. */
#include <errno.h>

#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"
#include "base/jsonw.h"
#include "kube/event.h"
#include "kube/kube.h"

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
