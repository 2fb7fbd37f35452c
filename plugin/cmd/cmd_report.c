/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie report [--json|--svg FILE]`: the I/O edge of the report. Runs the checks (so the
 * verdicts are exactly NPD's), reads the rest of what the node says into a struct report, and
 * hands it to the pure renderers (report.c, report_json.c, svg.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>

#include "node/checks.h"
#include "memcg/check_memcg.h"
#include "cpu/cpustat.h"
#include "cmd/cmd.h"
#include "node/report.h"
#include "node/report_window.h"
#include "base/log.h"
#include "base/timespec.h"
#include "memcg/units.h"
#include "base/state.h"
#include "view/svg.h"
#include "base/util.h"

#define NOW_SAMPLE_MS 500

static void run_checks(struct cz_ctx *ctx, struct report *r)
{
	for (const struct check_def *c = checks_all(); c->name; c++) {
		struct report_check *rc;

		if (!conditions_for_check(c->name) || r->nchecks == REPORT_CHECKS_MAX)
			continue;
		rc = &r->checks[r->nchecks++];
		rc->check = c->name;
		rc->cond = conditions_for_check(c->name);
		rc->res = (struct npd_result){ .status = NPD_UNKNOWN };
		c->run(ctx, &rc->res);
	}
}

static void gather_memcg(struct cz_ctx *ctx, struct report *r)
{
	struct npd_result res = { 0 };

	r->memcg_rc = memcg_read(ctx, &r->memcg, &res);
	if (r->memcg_rc != NPD_OK) {
		snprintf(r->memcg_err, sizeof(r->memcg_err), "%s", res.msg);
		return;
	}
	report_memcg_growth(r, ctx->cfg.paths.state);
	r->canary_rc = canary_run(&ctx->hf, ctx->cfg.paths.state, ctx->cfg.memcg.latency_canary_ms,
				  r->now_ms, &r->canary);
	/* the units the agent published, like the checks read them */
	if (ctx->cfg.memcg.census_interval_ms)	/* the agent's zombie census, when fresh */
		r->census_rc = census_load(ctx->cfg.paths.run, r->now_ms,
					   2 * ctx->cfg.memcg.census_interval_ms + 60000, &r->census,
					   r->census_err, sizeof(r->census_err));
	/* no fresh census from an agent, and this binary can count itself (the full one, run by
	 * hand: `make run`, with the privileges for BPF): the one-command answer names the groups */
	if (ctx->cfg.memcg.census_interval_ms && r->census_rc < 0 && ctx->census_direct) {
		char why[CENSUS_ERR_MAX];

		if (ctx->census_direct(ctx, r->now_ms, &r->census, why, sizeof(why)) == 0) {
			r->census_rc = 0;
		} else {
			size_t n = strlen(r->census_err);

			snprintf(r->census_err + n, sizeof(r->census_err) - n,
				 ", and counting here failed: %s", why);
		}
	}
	/* remediation.reclaim's last run: the agent's state, read without a lock */
	r->reclaim_rc = state_read(ctx->cfg.paths.state, &reclaim_state_type, &r->reclaim);
	if (ctx->cfg.memcg.systemd_hints)
		r->restarts_rc = units_load(ctx->cfg.paths.run, r->now_ms, &r->restarts,
					    r->restarts_err, sizeof(r->restarts_err));
	/* nothing fresh from an agent, and this binary can ask systemd itself (the full one, run by
	 * hand: `make run`): the one-command answer keeps its leaker line */
	if (ctx->cfg.memcg.systemd_hints && r->restarts_rc < 0 && ctx->restarts_direct) {
		struct systemd_restarts direct;
		char why[sizeof(r->restarts_err)];

		if (ctx->restarts_direct(ctx->cfg.systemd.bus, ctx->cfg.paths.state, r->now_ms,
					 &direct, why, sizeof(why)) == 0) {
			r->restarts = direct;
			r->restarts_rc = 0;
		} else {
			size_t n = strlen(r->restarts_err);

			snprintf(r->restarts_err + n, sizeof(r->restarts_err) - n,
				 ", and asking systemd here failed: %s", why);
		}
	}
}

static int read_stat(struct cz_ctx *ctx, char *buf, size_t size, struct cpustat_core *c,
		     size_t max)
{
	ssize_t n = hostfs_read(&ctx->hf, HOSTFS_PROC, "stat", buf, size);

	return n < 0 ? (int)n : cpustat_parse(buf, c, max);
}

/* Current shares: the sampler's newest sample when fresh, else two /proc/stat reads. */
static void gather_now(struct cz_ctx *ctx, struct report *r)
{
	const size_t max = CPUSTAT_MAX_CPUS, size = CPUSTAT_BUF_SIZE(1024) * 2;
	_cleanup_free_ struct cpustat_core *a = calloc(max, sizeof(*a)), *b = calloc(max, sizeof(*b));
	_cleanup_free_ char *buf = malloc(size);
	const struct history_series *h = &r->hist;
	int na, nb;

	if (h->n > 0 && h->t_ms[h->n - 1] + 3 * HISTORY_HEARTBEAT_MS >= r->now_ms) {
		r->now_pct = malloc(h->ncpu);
		if (!r->now_pct)
			return;
		memcpy(r->now_pct, &h->pct[(h->n - 1) * h->ncpu], h->ncpu);
		r->has_now = true;
		return;
	}
	if (!a || !b || !buf || (na = read_stat(ctx, buf, size, a, max)) <= 0)
		return;
	usleep(NOW_SAMPLE_MS * 1000);
	nb = read_stat(ctx, buf, size, b, max);
	if (nb <= 0)
		return;
	if ((unsigned)nb > r->ncpu)
		r->ncpu = (unsigned)nb;
	r->now_pct = malloc(r->ncpu);
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

/* --since/--until into a window; both 0 when neither was given. 0 or -EINVAL (logged). */
static int window(const struct cz_ctx *ctx, uint64_t now, uint64_t *since, uint64_t *until)
{
	*since = *until = 0;
	if (!ctx->since && !ctx->until)
		return 0;
	*until = now;
	if (ctx->since && parse_time_spec(ctx->since, now, since) < 0)
		return log_error_errno(EINVAL, "report: --since: not a time: '%.64s' (use 3h, "
					       "2026-12-01T03:10 in UTC, or @EPOCH)", ctx->since);
	if (ctx->until && parse_time_spec(ctx->until, now, until) < 0)
		return log_error_errno(EINVAL, "report: --until: not a time: '%.64s' (use 1h, "
					       "2026-12-01T04:00 in UTC, or @EPOCH)", ctx->until);
	if (!ctx->since) /* --until alone: the lookback before it */
		*since = *until > ctx->cfg.cpu.lookback_ms ? *until - ctx->cfg.cpu.lookback_ms : 0;
	if (*until <= *since)
		return log_error_errno(EINVAL, "report: --until is not after --since");
	return 0;
}

static int gather(struct cz_ctx *ctx, struct report *r, uint64_t since, uint64_t until)
{
	const struct cz_config *cfg = &ctx->cfg;
	int n;

	report_node_name(r, &ctx->hf);
	r->since_ms = r->now_ms > cfg->cpu.lookback_ms ? r->now_ms - cfg->cpu.lookback_ms : 0;
	if (until)
		r->since_ms = since;
	r->ena_rc = report_ena_load(cfg->paths.state, &ena_reset_state, &r->ena_prev);
	run_checks(ctx, r);
	gather_memcg(ctx, r);
	if (report_load_run(r, cfg->paths.run,
			    r->now_ms > cfg->cpu.history_ms ? r->now_ms - cfg->cpu.history_ms : 0) < 0)
		return -ENOMEM;
	if (until && report_load_window(r, cfg->paths.run, since, until) < 0)
		return -ENOMEM;
	gather_now(ctx, r);
	n = irq_map_all(&ctx->hf, &r->maps);
	r->maps_rc = n < 0 ? n : 0;
	r->nmaps = n > 0 ? (size_t)n : 0;
	r->ena_rc = report_ena_load(cfg->paths.state, &ena_reset_state, &r->ena);
	r->allowance_rc = report_ena_load(cfg->paths.state, &ena_allowance_state, &r->allowance);
	return 0;
}

static int write_svg(const struct report *r, const char *path, uint64_t since, uint64_t until)
{
	_cleanup_fclose_ FILE *f = fopen(path, "we");
	int e;

	if (!f)
		return log_error_errno(errno, "Failed to create '%s': %m", path);
	e = until ? svg_write_span(r, since, until, f) : svg_write(r, f);
	if (e == 0 && (fflush(f) != 0 || ferror(f)))
		e = -EIO;
	if (e < 0)
		return log_error_errno(e, "Failed to write '%s': %m", path);
	return 0;
}

int cmd_report(struct cz_ctx *ctx)
{
	uint64_t since, until;
	struct report *r;
	int e = 0;

	if (window(ctx, now_realtime_ms(), &since, &until) < 0)
		return CZ_EXIT_ERROR;
	if (ctx->argc > 0 || (ctx->json && ctx->svg_path)) {
		fprintf(stderr, "cpuzombie report: usage: report [--json|--svg FILE] [--since TIME] [--until TIME]\n");
		return CZ_EXIT_ERROR;
	}
	/* a report shows the checks' verdicts but must not move their baselines or create files
	 * (it runs on read-only state and run dirs too): the state store writes nothing */
	state_set_read_only(true);
	r = report_new(&ctx->cfg, now_realtime_ms());
	if (!r || gather(ctx, r, since, until) < 0) {
		log_error_errno(ENOMEM, "Failed to gather the report: %m");
		report_free(r);
		return CZ_EXIT_ERROR;
	}
	if (ctx->json) {
		json_object *j = report_json(r);
		const char *s = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_NOSLASHESCAPE)
				  : NULL;

		e = s && printf("%s\n", s) > 0 ? 0 : -EIO;
		json_object_put(j);
	} else {
		if (ctx->svg_path)
			e = write_svg(r, ctx->svg_path, since, until);
		if (e == 0)
			e = report_print(r, stdout);
		if (e == 0 && ctx->svg_path)
			printf("\nheatmap: %s\n", ctx->svg_path);
	}
	if (fflush(stdout) != 0)
		e = -EIO;
	e = e < 0 ? CZ_EXIT_ERROR : report_worst(r) == NPD_PROBLEM ? CZ_EXIT_PROBLEM : CZ_EXIT_OK;
	report_free(r);
	return e;
}
