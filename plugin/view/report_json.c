/* SPDX-License-Identifier: MIT */
/* `cpuzombie report --json`: the model of report.h as one JSON document (json-c). */
#include <errno.h>

#include "node/advice.h"
#include "node/model.h"
#include "view/render.h"
#include "view/report_profile.h"
#include "base/jsonw.h"
#include "base/textsafe.h"
#include "base/util.h"

/* Every string reaches the document through jsonw_str(): task names, hostnames and interface
 * names are any bytes (base/jsonw.h). */

/* The agent's recorded profile of @ev (report_profile.h) into @p; "why" when it has none. */
static void recorded(const struct node_model *r, const struct burst_event *ev, json_object *p)
{
	static struct report_profile rp;
	json_object *top = json_object_new_array();

	jsonw_add(p, "file", NULL);
	jsonw_add(p, "hot_frame", ev->hot[0] ? jsonw_str(ev->hot) : NULL);
	jsonw_add(p, "hot_pct", ev->hot[0] ? json_object_new_int((int)ev->hot_pct) : NULL);
	jsonw_add(p, "why", ev->why[0] ? jsonw_str(ev->why) : NULL);
	if (report_profile_load(r->cfg->paths.run, ev, (size_t)r->cfg->cpu.profile_bytes + 1,
				&rp) == 0) {
		jsonw_add(p, "file", jsonw_str(rp.path));
		jsonw_add(p, "samples", jsonw_u64(rp.total));
		for (size_t i = 0; i < rp.n; i++) {
			json_object *s = json_object_new_object();

			jsonw_add(s, "stack", jsonw_str(rp.top[i].stack));
			jsonw_add(s, "count", jsonw_u64(rp.top[i].count));
			json_object_array_add(top, s);
		}
	}
	jsonw_add(p, "top", top);
}

static json_object *profile(const struct node_model *r, unsigned cpu, uint64_t start, uint64_t end,
			    uint64_t dur)
{
	json_object *p = json_object_new_object();
	char cmd[96];

	jsonw_add(p, "node", jsonw_str(r->node));
	jsonw_add(p, "cpu", json_object_new_int((int)cpu));
	jsonw_add(p, "start_ms", jsonw_u64(start));
	jsonw_add(p, "end_ms", jsonw_u64(end));
	jsonw_add(p, "command", jsonw_str(report_perf_cmd(cpu, dur, cmd, sizeof(cmd))));
	return p;
}

static json_object *conditions(const struct node_model *r)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < r->nchecks; i++) {
		const struct report_check *c = &r->checks[i];
		json_object *o = json_object_new_object();

		jsonw_add(o, "check", jsonw_str(c->check));
		jsonw_add(o, "type", c->cond ? jsonw_str(c->cond->type) : NULL);
		jsonw_add(o, "status", jsonw_str(conditions_status_name(c->res.status)));
		jsonw_add(o, "reason", !c->cond ? NULL
				 : jsonw_str(c->res.status == NPD_PROBLEM ? c->cond->reason_true
								     : c->cond->reason_false));
		jsonw_add(o, "message", jsonw_str(c->res.msg));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *restarts(const struct node_model *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	for (size_t i = 0; r->restarts_rc == 0 && i < r->restarts.n; i++) {
		const struct systemd_unit_restarts *u = &r->restarts.u[i];
		json_object *j = json_object_new_object();

		jsonw_add(j, "unit", jsonw_str(u->name));
		jsonw_add(j, "restarts", jsonw_u64(u->restarts));
		jsonw_add(j, "per_hour",
			  u->has_growth ? json_object_new_double(u->per_hour) : NULL);
		json_object_array_add(a, j);
	}
	jsonw_add(o, "units", a);
	jsonw_add(o, "error", r->restarts_rc < 0 ? jsonw_str(r->restarts_err) : NULL);
	if (r->restarts_rc < 0) /* what to do about it, as the text line says */
		jsonw_add(o, "advice", jsonw_str(advice_restarts(r->restarts_rc)));
	return o;
}

static json_object *census_groups(const struct census_group *g, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *j = json_object_new_object();

		jsonw_add(j, "group", jsonw_str(g[i].key));
		jsonw_add(j, "dying", jsonw_u64(g[i].count));
		jsonw_add(j, "pinned_bytes", jsonw_u64(g[i].bytes));
		jsonw_add(j, "first_seen_ms", jsonw_u64(g[i].first_ms));
		json_object_array_add(a, j);
	}
	return a;
}

/* The agent's zombie census: null when off, {"error"} when it could not count. */
static json_object *census(const struct node_model *r)
{
	const struct census *c = &r->census;
	json_object *o;

	if (r->census_rc > 0)
		return NULL;
	o = json_object_new_object();
	if (r->census_rc < 0) {
		jsonw_add(o, "error", jsonw_str(r->census_err));
		return o;
	}
	jsonw_add(o, "time_ms", jsonw_u64(c->t_ms));
	jsonw_add(o, "dying", jsonw_u64(c->dying));
	jsonw_add(o, "pinned_bytes", jsonw_u64(c->bytes));
	jsonw_add(o, "visited", jsonw_u64(c->visited));
	jsonw_add(o, "truncated", json_object_new_boolean(c->truncated));
	jsonw_add(o, "groups", census_groups(c->group, c->ngroups));
	jsonw_add(o, "parents", census_groups(c->parent, c->nparents));
	return o;
}

/* remediation.reclaim's last run: null when there was none. */
static json_object *reclaim(const struct node_model *r)
{
	const struct reclaim_state *s = &r->reclaim;
	json_object *o;

	if (r->reclaim_rc != STATE_LOADED || !s->last_ms)
		return NULL;
	o = json_object_new_object();
	jsonw_add(o, "time_ms", jsonw_u64(s->last_ms));
	jsonw_add(o, "method", jsonw_str(reclaim_method_name(s->method)));
	jsonw_add(o, "result", jsonw_str(reclaim_result_name(s->result)));
	jsonw_add(o, "dying_before", jsonw_u64(s->before));
	jsonw_add(o, "dying_after", jsonw_u64(s->after));
	jsonw_add(o, "took_ms", jsonw_u64(s->took_ms));
	jsonw_add(o, "error", s->result == RECLAIM_FAILED ? jsonw_str(strerror(s->err)) : NULL);
	jsonw_add(o, "freed_total", jsonw_u64(s->freed));
	return o;
}

static json_object *canary(const struct node_model *r)
{
	json_object *o;

	if (r->canary_rc < 0)
		return NULL;
	o = json_object_new_object();
	jsonw_add(o, "file", jsonw_str(r->canary.file));
	jsonw_add(o, "time_ms", jsonw_u64(r->canary.t_ms));
	jsonw_add(o, "fresh", json_object_new_boolean(r->canary.fresh));
	jsonw_add(o, "read_seconds", r->canary.err < 0 ? NULL
			       : json_object_new_double((double)r->canary.read_us / 1e6));
	jsonw_add(o, "bytes", jsonw_u64(r->canary.bytes));
	jsonw_add(o, "error", r->canary.err < 0 ? jsonw_str(strerror(-r->canary.err)) : NULL);
	return o;
}

static json_object *memcg(const struct node_model *r)
{
	const struct memcg_reading *m = &r->memcg;
	json_object *o = json_object_new_object();
	static const char *const src[] = { "v1", "v2-subsys", "v2-descendants" };

	if (r->memcg_rc != NPD_OK) {
		jsonw_add(o, "error", jsonw_str(r->memcg_err));
		return o;
	}
	jsonw_add(o, "source", jsonw_str(src[m->source]));
	jsonw_add(o, "live", jsonw_u64(m->live));
	jsonw_add(o, "dying", jsonw_u64(m->dying));
	/* rounded as the check line and the text print it ("x1070" -> 1070) */
	jsonw_add(o, "ratio", json_object_new_double(ratio_rounded(memcg_ratio(m))));
	jsonw_add(o, "growth_per_hour",
		  m->has_growth ? json_object_new_double(m->growth_per_hour) : NULL);
	jsonw_add(o, "percpu_bytes", m->has_percpu ? jsonw_u64(m->percpu_bytes) : NULL);
	if (m->has_kernel) {
		char k[32];

		snprintf(k, sizeof(k), "%u.%u", m->kernel_major, m->kernel_minor);
		jsonw_add(o, "kernel", jsonw_str(k));
	}
	jsonw_add(o, "exposed", json_object_new_boolean(memcg_exposed(m)));
	jsonw_add(o, "canary", canary(r));
	jsonw_add(o, "restarts", restarts(r));
	if (r->census_rc <= 0)	/* the census off: no key (the JSON of before) */
		jsonw_add(o, "census", census(r));
	jsonw_add(o, "reclaim", reclaim(r));
	return o;
}

static json_object *burst(const struct node_model *r, const struct burst_event *ev, bool ongoing)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array();
	json_object *irqs = json_object_new_array(), *stack = json_object_new_array(), *prof;
	uint64_t dur = ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;
	const char *p;

	jsonw_add(o, "cpu", json_object_new_int((int)ev->cpu));
	jsonw_add(o, "start_ms", jsonw_u64(ev->start_ms));
	jsonw_add(o, "end_ms", jsonw_u64(ev->end_ms));
	jsonw_add(o, "seconds", json_object_new_double((double)dur / 1000.0));
	jsonw_add(o, "peak_pct", json_object_new_double(ev->peak_pct));
	jsonw_add(o, "mean_pct", json_object_new_double(ev->mean_pct));
	jsonw_add(o, "ongoing", json_object_new_boolean(ongoing));
	for (size_t k = 0; k < ev->ntasks; k++) {
		json_object *j = json_object_new_object();

		jsonw_add(j, "pid", json_object_new_int(ev->task[k].pid));
		jsonw_add(j, "tid", json_object_new_int(ev->task[k].tid));
		jsonw_add(j, "comm", jsonw_str(ev->task[k].comm));
		jsonw_add(j, "stime_ms", jsonw_u64(ev->task[k].stime_ms));
		json_object_array_add(t, j);
	}
	jsonw_add(o, "tasks", t);
	for (p = ev->irqs; *p;) {
		size_t n = strcspn(p, ",");

		json_object_array_add(irqs, jsonw_strn(p, n)); /* names hold ifnames */
		p += n + (p[n] == ',');
	}
	jsonw_add(o, "nic_irqs", irqs);
	for (p = ev->stack; *p;) {
		size_t n = strcspn(p, "<");

		json_object_array_add(stack, jsonw_strn(p, n));
		p += n + (p[n] == '<');
	}
	jsonw_add(o, "kernel_stack", stack);
	prof = profile(r, ev->cpu, ev->start_ms, ev->end_ms, dur);
	recorded(r, ev, prof);
	jsonw_add(o, "profile", prof);
	return o;
}

static json_object *cores(const struct node_model *r)
{
	json_object *o = json_object_new_object(), *b = json_object_new_array(), *now;

	jsonw_add(o, "ncpu", json_object_new_int((int)r->ncpu));
	jsonw_add(o, "metric", jsonw_str(config_metric_name(r->cfg->cpu.metric)));
	jsonw_add(o, "threshold_pct", json_object_new_double(r->cfg->cpu.threshold_pct));
	jsonw_add(o, "sampler_running", json_object_new_boolean(
					  r->hb && !r->hb->stopped &&
					  r->hb->time_ms + 3 * HISTORY_HEARTBEAT_MS >= r->now_ms));
	now = r->has_now ? json_object_new_array() : NULL;
	for (unsigned c = 0; now && c < r->ncpu; c++)
		json_object_array_add(now, r->now_pct[c] == HISTORY_NO_SAMPLE
						   ? NULL
						   : json_object_new_int(r->now_pct[c]));
	jsonw_add(o, "now_pct", now);
	if (r->hist_rc > 0) {
		json_object *h = json_object_new_object();

		jsonw_add(h, "samples", jsonw_u64(r->hist.n));
		jsonw_add(h, "start_ms", jsonw_u64(r->hist.t_ms[0]));
		jsonw_add(h, "end_ms", jsonw_u64(r->hist.t_ms[r->hist.n - 1]));
		jsonw_add(o, "history", h);
	} else {
		jsonw_add(o, "history", NULL);
	}
	jsonw_add(o, "since_ms", jsonw_u64(r->since_ms));
	for (size_t i = 0; i < r->nbursts; i++)
		json_object_array_add(b, burst(r, &r->bursts[i], i >= r->nlogged));
	jsonw_add(o, "bursts", b);
	return o;
}

static json_object *ena(const struct node_model *r, const struct ena_ifstate *s)
{
	struct ena_lists l = ena_lists_from_config(r->cfg);
	json_object *o = json_object_new_object(), *cs = json_object_new_array();
	json_object *evs = json_object_new_array();
	struct ena_ifstate *p = ena_state_find((struct ena_state *)&r->ena_prev, s->key);
	static const char *const cls[] = { "none", "reset", "risk", "allowance" };

	jsonw_add(o, "key", jsonw_str(s->key));
	jsonw_add(o, "bus_info", jsonw_str(s->base.bus_info));
	jsonw_add(o, "read_ms", jsonw_u64(s->read_ms));
	jsonw_add(o, "prev_read_ms", p && p->read_ms < s->read_ms ? jsonw_u64(p->read_ms) : NULL);
	for (size_t i = 0; i < s->base.n; i++) {
		const struct ethtool_stat *st = &s->base.stats[i];
		const struct ethtool_stat *q =
			p ? ethtool_dump_find_near(&p->base, st->name, i) : NULL;
		enum ena_class c = ena_classify(&l, st->name, NULL);
		json_object *j;

		if (c == ENA_CLASS_NONE)
			continue;
		j = json_object_new_object();
		jsonw_add(j, "name", jsonw_str(st->name));
		jsonw_add(j, "class", jsonw_str(cls[c]));
		jsonw_add(j, "value", jsonw_u64(st->value));
		jsonw_add(j, "delta", q && p->read_ms < s->read_ms && st->value >= q->value
					? jsonw_u64(st->value - q->value) : NULL);
		json_object_array_add(cs, j);
	}
	jsonw_add(o, "counters", cs);
	jsonw_add(o, "resets_in_window", jsonw_u64(ena_history_resets(&s->hist)));
	for (size_t i = 0; i < s->hist.n; i++) {
		json_object *j = json_object_new_object();
		int cpu = report_ena_cpu(s->hist.ev[i].cause);

		jsonw_add(j, "time_ms", jsonw_u64(s->hist.ev[i].t_ms));
		jsonw_add(j, "resets", jsonw_u64(s->hist.ev[i].resets));
		jsonw_add(j, "cause", jsonw_str(s->hist.ev[i].cause));
		jsonw_add(j, "profile", cpu < 0 ? NULL
					  : profile(r, (unsigned)cpu, s->hist.ev[i].t_ms - 10000,
						    s->hist.ev[i].t_ms, 5000));
		json_object_array_add(evs, j);
	}
	jsonw_add(o, "events", evs);
	return o;
}

static json_object *nic(const struct node_model *r, const struct irq_map *m, const char *ifname)
{
	json_object *o = json_object_new_object(), *irqs = json_object_new_array();

	jsonw_add(o, "interface", jsonw_str(ifname));
	jsonw_add(o, "driver", m ? jsonw_str(m->driver) : NULL);
	jsonw_add(o, "pci", m ? jsonw_str(m->pci) : NULL);
	jsonw_add(o, "threaded_napi",
		  m && m->threaded >= 0 ? json_object_new_boolean(m->threaded) : NULL);
	for (size_t i = 0; m && i < m->n; i++) {
		json_object *j = json_object_new_object();

		jsonw_add(j, "irq", json_object_new_int((int)m->irq[i].irq));
		jsonw_add(j, "name", jsonw_str(m->irq[i].name));
		jsonw_add(j, "queue",
			  m->irq[i].queue >= 0 ? json_object_new_int(m->irq[i].queue) : NULL);
		jsonw_add(j, "cpus", jsonw_str(m->irq[i].cpulist));
		json_object_array_add(irqs, j);
	}
	jsonw_add(o, "irqs", irqs);
	jsonw_add(o, "ena", NULL);
	for (size_t k = 0; k < r->ena.n; k++)
		if (streq(r->ena.ifs[k].base.ifname, ifname))
			jsonw_add(o, "ena", ena(r, &r->ena.ifs[k]));
	return o;
}

static json_object *nics(const struct node_model *r)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < r->nmaps; i++)
		json_object_array_add(a, nic(r, &r->maps[i], r->maps[i].ifname));
	for (size_t k = 0; k < r->ena.n; k++) {
		bool mapped = false;

		for (size_t i = 0; i < r->nmaps; i++)
			mapped |= streq(r->ena.ifs[k].base.ifname, r->maps[i].ifname);
		if (!mapped)
			json_object_array_add(a, nic(r, NULL, r->ena.ifs[k].base.ifname));
	}
	return a;
}

json_object *report_json(const struct node_model *r)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	jsonw_add(o, "node", jsonw_str(r->node));
	jsonw_add(o, "time_ms", jsonw_u64(r->now_ms));
	jsonw_add(o, "version", jsonw_str(CZ_VERSION));
	jsonw_add(o, "status", jsonw_str(npd_status_name(report_worst(r))));
	jsonw_add(o, "conditions", conditions(r));
	jsonw_add(o, "memcg", memcg(r));
	jsonw_add(o, "cores", cores(r));
	jsonw_add(o, "nics", nics(r));
	if (r->kev) /* only with the agent's kernel-event log */
		jsonw_add(o, "kernel", report_kernel_json(r));
	return o;
}
