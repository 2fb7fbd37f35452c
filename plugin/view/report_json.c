/* SPDX-License-Identifier: MIT */
/* `cpuzombie report --json`: the model of report.h as one JSON document (json-c). */
#include <errno.h>

#include "node/advice.h"
#include "node/report.h"
#include "view/report_profile.h"
#include "base/textsafe.h"
#include "base/util.h"

static void add(json_object *o, const char *k, json_object *v)
{
	json_object_object_add(o, k, v);
}

/* Every string reaches the document through here: task names, hostnames and interface names are
 * any bytes, and a JSON document must be valid UTF-8 (textsafe.h). */
static json_object *jstr(const char *s)
{
	_cleanup_free_ char *safe = textsafe_strdup(TEXTSAFE_TEXT, s);

	return safe ? json_object_new_string(safe) : NULL;
}

/* jstr() of the @n bytes at @s (a field inside a longer string). */
static json_object *jstrn(const char *s, size_t n)
{
	char buf[1024];

	return json_object_new_string(textsafe_n(TEXTSAFE_TEXT, s, n, buf, sizeof(buf)));
}

static json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* The agent's recorded profile of @ev (report_profile.h) into @p; "why" when it has none. */
static void recorded(const struct report *r, const struct burst_event *ev, json_object *p)
{
	static struct report_profile rp;
	json_object *top = json_object_new_array();

	add(p, "file", NULL);
	add(p, "hot_frame", ev->hot[0] ? jstr(ev->hot) : NULL);
	add(p, "hot_pct", ev->hot[0] ? json_object_new_int((int)ev->hot_pct) : NULL);
	add(p, "why", ev->why[0] ? jstr(ev->why) : NULL);
	if (report_profile_load(r->cfg->paths.run, ev, (size_t)r->cfg->cpu.profile_bytes + 1,
				&rp) == 0) {
		add(p, "file", jstr(rp.path));
		add(p, "samples", ju64(rp.total));
		for (size_t i = 0; i < rp.n; i++) {
			json_object *s = json_object_new_object();

			add(s, "stack", jstr(rp.top[i].stack));
			add(s, "count", ju64(rp.top[i].count));
			json_object_array_add(top, s);
		}
	}
	add(p, "top", top);
}

static json_object *profile(const struct report *r, unsigned cpu, uint64_t start, uint64_t end,
			    uint64_t dur)
{
	json_object *p = json_object_new_object();
	char cmd[96];

	add(p, "node", jstr(r->node));
	add(p, "cpu", json_object_new_int((int)cpu));
	add(p, "start_ms", ju64(start));
	add(p, "end_ms", ju64(end));
	add(p, "command", jstr(report_perf_cmd(cpu, dur, cmd, sizeof(cmd))));
	return p;
}

static json_object *conditions(const struct report *r)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < r->nchecks; i++) {
		const struct report_check *c = &r->checks[i];
		json_object *o = json_object_new_object();

		add(o, "check", jstr(c->check));
		add(o, "type", c->cond ? jstr(c->cond->type) : NULL);
		add(o, "status", jstr(conditions_status_name(c->res.status)));
		add(o, "reason", !c->cond ? NULL
				 : jstr(c->res.status == NPD_PROBLEM ? c->cond->reason_true
								     : c->cond->reason_false));
		add(o, "message", jstr(c->res.msg));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *restarts(const struct report *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	for (size_t i = 0; r->restarts_rc == 0 && i < r->restarts.n; i++) {
		const struct systemd_unit_restarts *u = &r->restarts.u[i];
		json_object *j = json_object_new_object();

		add(j, "unit", jstr(u->name));
		add(j, "restarts", ju64(u->restarts));
		add(j, "per_hour", u->has_growth ? json_object_new_double(u->per_hour) : NULL);
		json_object_array_add(a, j);
	}
	add(o, "units", a);
	add(o, "error", r->restarts_rc < 0 ? jstr(r->restarts_err) : NULL);
	if (r->restarts_rc < 0) /* what to do about it, as the text line says */
		add(o, "advice", jstr(advice_restarts(r->restarts_rc)));
	return o;
}

static json_object *census_groups(const struct census_group *g, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *j = json_object_new_object();

		add(j, "group", jstr(g[i].key));
		add(j, "dying", ju64(g[i].count));
		add(j, "pinned_bytes", ju64(g[i].bytes));
		add(j, "first_seen_ms", ju64(g[i].first_ms));
		json_object_array_add(a, j);
	}
	return a;
}

/* The agent's zombie census: null when off, {"error"} when it could not count. */
static json_object *census(const struct report *r)
{
	const struct census *c = &r->census;
	json_object *o;

	if (r->census_rc > 0)
		return NULL;
	o = json_object_new_object();
	if (r->census_rc < 0) {
		add(o, "error", jstr(r->census_err));
		return o;
	}
	add(o, "time_ms", ju64(c->t_ms));
	add(o, "dying", ju64(c->dying));
	add(o, "pinned_bytes", ju64(c->bytes));
	add(o, "visited", ju64(c->visited));
	add(o, "truncated", json_object_new_boolean(c->truncated));
	add(o, "groups", census_groups(c->group, c->ngroups));
	add(o, "parents", census_groups(c->parent, c->nparents));
	return o;
}

/* remediation.reclaim's last run: null when there was none. */
static json_object *reclaim(const struct report *r)
{
	const struct reclaim_state *s = &r->reclaim;
	json_object *o;

	if (r->reclaim_rc != STATE_LOADED || !s->last_ms)
		return NULL;
	o = json_object_new_object();
	add(o, "time_ms", ju64(s->last_ms));
	add(o, "method", jstr(reclaim_method_name(s->method)));
	add(o, "result", jstr(reclaim_result_name(s->result)));
	add(o, "dying_before", ju64(s->before));
	add(o, "dying_after", ju64(s->after));
	add(o, "took_ms", ju64(s->took_ms));
	add(o, "error", s->result == RECLAIM_FAILED ? jstr(strerror(s->err)) : NULL);
	add(o, "freed_total", ju64(s->freed));
	return o;
}

static json_object *canary(const struct report *r)
{
	json_object *o;

	if (r->canary_rc < 0)
		return NULL;
	o = json_object_new_object();
	add(o, "file", jstr(r->canary.file));
	add(o, "time_ms", ju64(r->canary.t_ms));
	add(o, "fresh", json_object_new_boolean(r->canary.fresh));
	add(o, "read_seconds", r->canary.err < 0 ? NULL
			       : json_object_new_double((double)r->canary.read_us / 1e6));
	add(o, "bytes", ju64(r->canary.bytes));
	add(o, "error", r->canary.err < 0 ? jstr(strerror(-r->canary.err)) : NULL);
	return o;
}

static json_object *memcg(const struct report *r)
{
	const struct memcg_reading *m = &r->memcg;
	json_object *o = json_object_new_object();
	static const char *const src[] = { "v1", "v2-subsys", "v2-descendants" };

	if (r->memcg_rc != NPD_OK) {
		add(o, "error", jstr(r->memcg_err));
		return o;
	}
	add(o, "source", jstr(src[m->source]));
	add(o, "live", ju64(m->live));
	add(o, "dying", ju64(m->dying));
	/* rounded as the check line and the text print it ("x1070" -> 1070) */
	add(o, "ratio", json_object_new_double(ratio_rounded(memcg_ratio(m))));
	add(o, "growth_per_hour", m->has_growth ? json_object_new_double(m->growth_per_hour) : NULL);
	add(o, "percpu_bytes", m->has_percpu ? ju64(m->percpu_bytes) : NULL);
	if (m->has_kernel) {
		char k[32];

		snprintf(k, sizeof(k), "%u.%u", m->kernel_major, m->kernel_minor);
		add(o, "kernel", jstr(k));
	}
	add(o, "exposed", json_object_new_boolean(memcg_exposed(m)));
	add(o, "canary", canary(r));
	add(o, "restarts", restarts(r));
	if (r->census_rc <= 0)	/* the census off: no key (the JSON of before) */
		add(o, "census", census(r));
	add(o, "reclaim", reclaim(r));
	return o;
}

static json_object *burst(const struct report *r, const struct burst_event *ev, bool ongoing)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array();
	json_object *irqs = json_object_new_array(), *stack = json_object_new_array(), *prof;
	uint64_t dur = ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;
	const char *p;

	add(o, "cpu", json_object_new_int((int)ev->cpu));
	add(o, "start_ms", ju64(ev->start_ms));
	add(o, "end_ms", ju64(ev->end_ms));
	add(o, "seconds", json_object_new_double((double)dur / 1000.0));
	add(o, "peak_pct", json_object_new_double(ev->peak_pct));
	add(o, "mean_pct", json_object_new_double(ev->mean_pct));
	add(o, "ongoing", json_object_new_boolean(ongoing));
	for (size_t k = 0; k < ev->ntasks; k++) {
		json_object *j = json_object_new_object();

		add(j, "pid", json_object_new_int(ev->task[k].pid));
		add(j, "tid", json_object_new_int(ev->task[k].tid));
		add(j, "comm", jstr(ev->task[k].comm));
		add(j, "stime_ms", ju64(ev->task[k].stime_ms));
		json_object_array_add(t, j);
	}
	add(o, "tasks", t);
	for (p = ev->irqs; *p;) {
		size_t n = strcspn(p, ",");

		json_object_array_add(irqs, jstrn(p, n)); /* names hold ifnames */
		p += n + (p[n] == ',');
	}
	add(o, "nic_irqs", irqs);
	for (p = ev->stack; *p;) {
		size_t n = strcspn(p, "<");

		json_object_array_add(stack, jstrn(p, n));
		p += n + (p[n] == '<');
	}
	add(o, "kernel_stack", stack);
	prof = profile(r, ev->cpu, ev->start_ms, ev->end_ms, dur);
	recorded(r, ev, prof);
	add(o, "profile", prof);
	return o;
}

static json_object *cores(const struct report *r)
{
	json_object *o = json_object_new_object(), *b = json_object_new_array(), *now;

	add(o, "ncpu", json_object_new_int((int)r->ncpu));
	add(o, "metric", jstr(config_metric_name(r->cfg->cpu.metric)));
	add(o, "threshold_pct", json_object_new_double(r->cfg->cpu.threshold_pct));
	add(o, "sampler_running", json_object_new_boolean(
					  r->hb && !r->hb->stopped &&
					  r->hb->time_ms + 3 * HISTORY_HEARTBEAT_MS >= r->now_ms));
	now = r->has_now ? json_object_new_array() : NULL;
	for (unsigned c = 0; now && c < r->ncpu; c++)
		json_object_array_add(now, r->now_pct[c] == HISTORY_NO_SAMPLE
						   ? NULL
						   : json_object_new_int(r->now_pct[c]));
	add(o, "now_pct", now);
	if (r->hist_rc > 0) {
		json_object *h = json_object_new_object();

		add(h, "samples", ju64(r->hist.n));
		add(h, "start_ms", ju64(r->hist.t_ms[0]));
		add(h, "end_ms", ju64(r->hist.t_ms[r->hist.n - 1]));
		add(o, "history", h);
	} else {
		add(o, "history", NULL);
	}
	add(o, "since_ms", ju64(r->since_ms));
	for (size_t i = 0; i < r->nbursts; i++)
		json_object_array_add(b, burst(r, &r->bursts[i], i >= r->nlogged));
	add(o, "bursts", b);
	return o;
}

static json_object *ena(const struct report *r, const struct ena_ifstate *s)
{
	struct ena_lists l = ena_lists_from_config(r->cfg);
	json_object *o = json_object_new_object(), *cs = json_object_new_array();
	json_object *evs = json_object_new_array();
	struct ena_ifstate *p = ena_state_find((struct ena_state *)&r->ena_prev, s->key);
	static const char *const cls[] = { "none", "reset", "risk", "allowance" };

	add(o, "key", jstr(s->key));
	add(o, "bus_info", jstr(s->base.bus_info));
	add(o, "read_ms", ju64(s->read_ms));
	add(o, "prev_read_ms", p && p->read_ms < s->read_ms ? ju64(p->read_ms) : NULL);
	for (size_t i = 0; i < s->base.n; i++) {
		const struct ethtool_stat *st = &s->base.stats[i];
		const struct ethtool_stat *q = p ? ethtool_dump_find_near(&p->base, st->name, i) : NULL;
		enum ena_class c = ena_classify(&l, st->name, NULL);
		json_object *j;

		if (c == ENA_CLASS_NONE)
			continue;
		j = json_object_new_object();
		add(j, "name", jstr(st->name));
		add(j, "class", jstr(cls[c]));
		add(j, "value", ju64(st->value));
		add(j, "delta", q && p->read_ms < s->read_ms && st->value >= q->value
					? ju64(st->value - q->value) : NULL);
		json_object_array_add(cs, j);
	}
	add(o, "counters", cs);
	add(o, "resets_in_window", ju64(ena_history_resets(&s->hist)));
	for (size_t i = 0; i < s->hist.n; i++) {
		json_object *j = json_object_new_object();
		int cpu = report_ena_cpu(s->hist.ev[i].cause);

		add(j, "time_ms", ju64(s->hist.ev[i].t_ms));
		add(j, "resets", ju64(s->hist.ev[i].resets));
		add(j, "cause", jstr(s->hist.ev[i].cause));
		add(j, "profile", cpu < 0 ? NULL
					  : profile(r, (unsigned)cpu, s->hist.ev[i].t_ms - 10000,
						    s->hist.ev[i].t_ms, 5000));
		json_object_array_add(evs, j);
	}
	add(o, "events", evs);
	return o;
}

static json_object *nic(const struct report *r, const struct irq_map *m, const char *ifname)
{
	json_object *o = json_object_new_object(), *irqs = json_object_new_array();

	add(o, "interface", jstr(ifname));
	add(o, "driver", m ? jstr(m->driver) : NULL);
	add(o, "pci", m ? jstr(m->pci) : NULL);
	add(o, "threaded_napi", m && m->threaded >= 0 ? json_object_new_boolean(m->threaded) : NULL);
	for (size_t i = 0; m && i < m->n; i++) {
		json_object *j = json_object_new_object();

		add(j, "irq", json_object_new_int((int)m->irq[i].irq));
		add(j, "name", jstr(m->irq[i].name));
		add(j, "queue", m->irq[i].queue >= 0 ? json_object_new_int(m->irq[i].queue) : NULL);
		add(j, "cpus", jstr(m->irq[i].cpulist));
		json_object_array_add(irqs, j);
	}
	add(o, "irqs", irqs);
	add(o, "ena", NULL);
	for (size_t k = 0; k < r->ena.n; k++)
		if (streq(r->ena.ifs[k].base.ifname, ifname))
			add(o, "ena", ena(r, &r->ena.ifs[k]));
	return o;
}

static json_object *nics(const struct report *r)
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

json_object *report_json(const struct report *r)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	add(o, "node", jstr(r->node));
	add(o, "time_ms", ju64(r->now_ms));
	add(o, "version", jstr(CZ_VERSION));
	add(o, "status", jstr(npd_status_name(report_worst(r))));
	add(o, "conditions", conditions(r));
	add(o, "memcg", memcg(r));
	add(o, "cores", cores(r));
	add(o, "nics", nics(r));
	if (r->kev) /* only with the agent's kernel-event log */
		add(o, "kernel", report_kernel_json(r));
	return o;
}
