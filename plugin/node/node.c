// SPDX-License-Identifier: MIT
/*
 * The node model gathered in one place (node.h): `report` reads all of it, the agent's metrics
 * the part its cycle has not already got.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/state.h"
#include "base/util.h"
#include "condition/conditions.h"
#include "condition/recover_store.h"
#include "cpu/cpustat.h"
#include "ena/ena.h"
#include "memcg/canary.h"
#include "memcg/census.h"
#include "memcg/check_memcg.h"
#include "memcg/reclaim.h"
#include "memcg/units.h"
#include "node/checks.h"
#include "node/node.h"
#include "node/report_window.h"

#define NOW_SAMPLE_MS 500

void node_run_checks(struct cz_ctx *ctx, struct node_model *r)
{
	for (const struct check_def *c = checks_all(); c->name; c++) {
		struct report_check *rc;

		if (!conditions_for_check(c->name) || r->nchecks == REPORT_CHECKS_MAX)
			continue;
		rc = &r->checks[r->nchecks++];
		rc->check = c->name;
		rc->cond = conditions_for_check(c->name);
		rc->res = (struct npd_result){ .status = NPD_UNKNOWN };
		c->run(ctx, NULL, &rc->res);
	}
}

int node_read_memcg(struct cz_ctx *ctx, struct node_model *r)
{
	struct npd_result res = { 0 };

	r->memcg_rc = memcg_read(ctx, &r->memcg, &res);
	if (r->memcg_rc != NPD_OK)
		snprintf(r->memcg_err, sizeof(r->memcg_err), "%s", res.msg);
	else
		report_memcg_growth(r, ctx->cfg.paths.state);
	return r->memcg_rc;
}

int node_take_memcg(struct cz_ctx *ctx, struct node_model *r, const struct memcg_seen *seen)
{
	if (!seen || !seen->read)
		return node_read_memcg(ctx, r);
	r->memcg_rc = seen->rc;
	r->memcg = seen->reading; /* with the growth from the history, as report_memcg_growth */
	if (r->memcg_rc != NPD_OK)
		snprintf(r->memcg_err, sizeof(r->memcg_err), "%s", seen->msg);
	return r->memcg_rc;
}

void node_read_canary(struct cz_ctx *ctx, struct node_model *r, const struct memcg_reading *seen)
{
	r->canary_rc = canary_run(&ctx->hf, ctx->cfg.paths.state, ctx->state_flags,
				  ctx->cfg.memcg.latency_canary_ms, r->now_ms, seen, &r->canary);
}

void node_read_published(const struct cz_config *cfg, struct node_model *r)
{
	if (cfg->memcg.census_interval_ms)	/* the agent's zombie census, when fresh */
		r->census_rc = census_load(cfg->paths.run, r->now_ms,
					   2 * cfg->memcg.census_interval_ms + 60000, &r->census,
					   r->census_err, sizeof(r->census_err));
	if (cfg->memcg.systemd_hints) /* the units the agent published, like the checks read them */
		r->restarts_rc = units_load(cfg->paths.run, r->now_ms, &r->restarts,
					    r->restarts_err, sizeof(r->restarts_err));
}

void node_read_reclaim(const struct cz_config *cfg, struct node_model *r)
{
	/* remediation.reclaim's last run: the agent's state, read without a lock */
	r->reclaim_rc = reclaim_state_read(cfg->paths.state, &reclaim_state_type, &r->reclaim);
}

int node_ena_load(const char *state_dir, const struct state_type *t, struct ena_state *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	r = ena_state_read(state_dir, t, ret);
	return r == STATE_NONE ? -ENOENT : r == -EINVAL ? -EBADMSG : r < 0 ? r : 0;
}

/* The counters of class @want in @st (per-queue ones left out) into *@ret, *@n of them. */
static int ena_class_counters(const struct ena_lists *l, const struct ena_state *st,
			      enum ena_class want, struct report_ena_counter **ret, size_t *n)
{
	size_t max = 0;

	*n = 0;
	for (size_t i = 0; i < st->n; i++)
		max += st->ifs[i].base.n;
	*ret = calloc(max ? max : 1, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < st->n; i++) {
		const struct ethtool_devdump *d = &st->ifs[i].base;

		for (size_t k = 0; k < d->n; k++) {
			int q;

			if (ena_classify(l, d->stats[k].name, &q) != want || q >= 0)
				continue;
			(*ret)[(*n)++] = (struct report_ena_counter){ d->ifname, d->stats[k].name,
								      d->stats[k].value };
		}
	}
	return 0;
}

int node_ena_metrics(struct node_model *r)
{
	struct report_ena_metrics *m = &r->ena_metrics;
	struct ena_lists l = ena_lists_from_config(r->cfg);

	if (m->set)
		return 0; /* computed once, when the model is built */
	*m = (struct report_ena_metrics){ 0 };
	m->window = calloc(r->ena.n ? r->ena.n : 1, sizeof(*m->window));
	if (!m->window || ena_class_counters(&l, &r->ena, ENA_CLASS_RESET, &m->resets,
					     &m->nresets) < 0 ||
	    ena_class_counters(&l, &r->allowance, ENA_CLASS_ALLOWANCE, &m->allowance,
			       &m->nallowance) < 0) {
		free(m->window);
		free(m->resets);
		*m = (struct report_ena_metrics){ 0 }; /* (allowance failed: not allocated) */
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->ena.n; i++)
		m->window[i] = ena_history_resets(&r->ena.ifs[i].hist);
	m->set = true;
	return 0;
}

void node_read_ena(const struct cz_config *cfg, struct node_model *r)
{
	r->ena_rc = node_ena_load(cfg->paths.state, &ena_reset_state, &r->ena);
	r->allowance_rc = node_ena_load(cfg->paths.state, &ena_allowance_state, &r->allowance);
	(void)node_ena_metrics(r);
}

static void take_one(struct ena_seen_one *s, int *ret_rc, struct ena_state *ret)
{
	*ret_rc = s->rc;
	*ret = s->st; /* moved: @r frees it */
	memset(s, 0, sizeof(*s));
}

void node_take_ena(const struct cz_config *cfg, struct node_model *r, struct ena_seen *seen)
{
	if (seen && seen->reset.set)
		take_one(&seen->reset, &r->ena_rc, &r->ena);
	else
		r->ena_rc = node_ena_load(cfg->paths.state, &ena_reset_state, &r->ena);
	if (seen && seen->allowance.set)
		take_one(&seen->allowance, &r->allowance_rc, &r->allowance);
	else
		r->allowance_rc = node_ena_load(cfg->paths.state, &ena_allowance_state,
						&r->allowance);
	(void)node_ena_metrics(r);
}

int node_take_kevents(const struct cz_config *cfg, struct node_model *r, struct cpu_seen *seen)
{
	if (!seen || !seen->set)
		return report_load_kevents(r, cfg->paths.run);
	free(r->kev);
	r->kev = seen->kev; /* moved: @r frees it */
	*seen = (struct cpu_seen){ 0 };
	return 0;
}

void node_take_recovery(const struct cz_config *cfg, struct node_model *r,
			const struct report_recovery *seen)
{
	static const char *const checks[] = { "memcg", "cpu", "ena" };

	r->recovery.n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(checks) && i < REPORT_RECOVER_MAX; i++) {
		struct report_recover *c = &r->recovery.c[r->recovery.n++];
		size_t k = 0;

		while (seen && k < seen->n && !streq(seen->c[k].check, checks[i]))
			k++;
		if (seen && k < seen->n) {
			*c = seen->c[k];
			continue;
		}
		*c = (struct report_recover){ checks[i], conditions_for_check(checks[i])->type, 0,
					      { 0 } };
		c->rc = recover_store_read(cfg->paths.state, checks[i], &c->st);
	}
}

static int read_stat(struct cz_ctx *ctx, char *buf, size_t size, struct cpustat_core *c,
		     size_t max)
{
	ssize_t n = hostfs_read(&ctx->hf, HOSTFS_PROC, "stat", buf, size);

	return n < 0 ? (int)n : cpustat_parse(buf, c, max);
}

/* The CPUs this host can have: sysfs's possible CPUs, else the most a run file may claim. */
static unsigned node_cpu_limit(const struct hostfs *hf)
{
	char text[256];
	unsigned n = 0;

	if (hostfs_read(hf, HOSTFS_SYS, "devices/system/cpu/possible", text, sizeof(text)) > 0)
		n = cpustat_possible_parse(text);
	return n ? n : CPUSTAT_MAX_CPUS;
}

/* Current shares: the sampler's newest sample when fresh, else two /proc/stat reads. */
void node_read_now(struct cz_ctx *ctx, struct node_model *r)
{
	const size_t max = CPUSTAT_MAX_CPUS, size = CPUSTAT_BUF_SIZE(1024) * 2;
	_cleanup_free_ struct cpustat_core *a = calloc(max, sizeof(*a)),
					   *b = calloc(max, sizeof(*b));
	_cleanup_free_ char *buf = malloc(size);
	const struct history_series *h = &r->hist;
	int na, nb;

	if (h->n > 0 && h->t_ms[h->n - 1] + 3 * HISTORY_HEARTBEAT_MS >= r->now_ms) {
		r->now_pct = report_percpu_new(r, &h->pct[(h->n - 1) * h->ncpu], h->ncpu);
		r->has_now = r->now_pct != NULL;
		return;
	}
	if (!a || !b || !buf || (na = read_stat(ctx, buf, size, a, max)) <= 0)
		return;
	usleep(NOW_SAMPLE_MS * 1000);
	nb = read_stat(ctx, buf, size, b, max);
	if (nb <= 0)
		return;
	(void)report_claim_cpus(r, (unsigned)nb);
	r->now_pct = report_percpu_new(r, NULL, 0);
	if (!r->now_pct)
		return;
	for (unsigned c = 0; c < r->ncpu; c++) {
		double pct;

		r->now_pct[c] = (int)c < na && (int)c < nb &&
					cpustat_share(&a[c], &b[c], ctx->cfg.cpu.metric, &pct) == 0
				? (uint8_t)(pct + 0.5)
				: HISTORY_NO_SAMPLE;
	}
	r->has_now = true;
}

int node_read(struct cz_ctx *ctx, struct node_model *r, uint64_t since, uint64_t until)
{
	const struct cz_config *cfg = &ctx->cfg;
	int n;

	report_node_name(r, &ctx->hf);
	r->cpu_limit = node_cpu_limit(&ctx->hf);
	r->since_ms = r->now_ms > cfg->cpu.lookback_ms ? r->now_ms - cfg->cpu.lookback_ms : 0;
	if (until)
		r->since_ms = since;
	/* before the checks run: what `check ena` compared with (the report shows the change) */
	r->ena_rc = node_ena_load(cfg->paths.state, &ena_reset_state, &r->ena_prev);
	node_run_checks(ctx, r);
	if (node_read_memcg(ctx, r) == NPD_OK) {
		node_read_canary(ctx, r, &r->memcg);
		node_read_published(cfg, r);
		node_read_reclaim(cfg, r);
	}
	if (report_load_run(r, cfg->paths.run,
			    r->now_ms > cfg->cpu.history_ms ? r->now_ms - cfg->cpu.history_ms : 0) <
		    0 ||
	    report_load_kevents(r, cfg->paths.run) < 0)
		return -ENOMEM;
	if (until && report_load_window(r, cfg->paths.run, since, until) < 0)
		return -ENOMEM;
	node_read_now(ctx, r);
	n = irq_map_all(&ctx->hf, &r->maps);
	r->maps_rc = n < 0 ? n : 0;
	r->nmaps = n > 0 ? (size_t)n : 0;
	node_read_ena(cfg, r);
	return 0;
}
