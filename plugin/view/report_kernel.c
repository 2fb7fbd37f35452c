/* SPDX-License-Identifier: MIT */
/*
 * The report's kernel-log part: what the agent's /dev/kmsg follower recorded (klog/kevents.h)
 * on the terminal, in JSON, and (svg.c) as markers on the heatmap.
 */
#include <errno.h>

#include "klog/kevents.h"
#include "ena/klog_incident.h"
#include "node/model.h"
#include "view/render.h"
#include "base/state.h"
#include "base/textsafe.h"
#include "base/util.h"

/* The first event of the history window. */
static size_t first_in_window(const struct node_model *r)
{
	uint64_t t0 = r->now_ms > r->cfg->cpu.history_ms ? r->now_ms - r->cfg->cpu.history_ms : 0;
	size_t i = 0;

	while (i < r->kev->n && r->kev->ev[i].t_ms < t0)
		i++;
	return i;
}

void report_print_kernel(const struct node_model *r, FILE *out)
{
	const struct kevents *k = r->kev;
	char d[256], win[32], s1[256], s2[1024];
	size_t shown = 0;

	if (!k)
		return;
	format_duration(r->cfg->cpu.history_ms, win, sizeof(win));
	fprintf(out, "\nKernel log (agent.kmsg; last %s", win);
	if (k->lost || k->overruns)
		fprintf(out, "; %llu records lost, %llu overruns",
			(unsigned long long)k->lost, (unsigned long long)k->overruns);
	fprintf(out, ")\n");
	for (size_t i = first_in_window(r); i < k->n; i++) {
		struct klog_event e;

		if (kevents_event(k, i, &e) != 1 || e.cont)
			continue;
		fprintf(out, "  %s  %s\n", textsafe(TEXTSAFE_TEXT, e.stamp, s1, sizeof(s1)),
			textsafe(TEXTSAFE_TEXT, klog_event_describe(&e, d, sizeof(d)), s2,
				 sizeof(s2))); /* kernel text quotes task and interface names */
		shown++;
	}
	if (!shown)
		fprintf(out, "  no ENA reset, lockup or stall logged\n");
}

json_object *report_kernel_json(const struct node_model *r)
{
	const struct kevents *k = r->kev;
	json_object *o, *counts, *evs;
	char d[256], s1[256], s2[1024];

	if (!k)
		return NULL;
	o = json_object_new_object();
	counts = json_object_new_object();
	evs = json_object_new_array();
	for (int i = 1; i < KLOG_KIND_MAX; i++)
		if (k->count[i])
			json_object_object_add(counts, klog_kind_name((enum klog_kind)i),
					       json_object_new_uint64(k->count[i]));
	for (size_t i = first_in_window(r); i < k->n; i++) {
		struct klog_event e;
		json_object *j;

		if (kevents_event(k, i, &e) != 1 || e.cont)
			continue;
		j = json_object_new_object();
		json_object_object_add(j, "time_ms", json_object_new_uint64(k->ev[i].t_ms));
		json_object_object_add(j, "kind", json_object_new_string(klog_kind_name(e.kind)));
		if (e.ifname[0])
			json_object_object_add(j, "interface", json_object_new_string(
				textsafe(TEXTSAFE_TEXT, e.ifname, s1, sizeof(s1))));
		if (e.queue >= 0)
			json_object_object_add(j, "queue", json_object_new_int(e.queue));
		if (e.cpu >= 0)
			json_object_object_add(j, "cpu", json_object_new_int(e.cpu));
		if (e.comm[0])
			json_object_object_add(j, "task", json_object_new_string(
				textsafe(TEXTSAFE_TEXT, e.comm, s1, sizeof(s1))));
		json_object_object_add(j, "text", json_object_new_string(textsafe(
			TEXTSAFE_TEXT, klog_event_describe(&e, d, sizeof(d)), s2, sizeof(s2))));
		json_object_array_add(evs, j);
	}
	json_object_object_add(o, "counts", counts);
	json_object_object_add(o, "lost", json_object_new_uint64(k->lost));
	json_object_object_add(o, "overruns", json_object_new_uint64(k->overruns));
	json_object_object_add(o, "events", evs);
	return o;
}
