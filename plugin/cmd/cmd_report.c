/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie report [--json|--svg FILE|--html FILE]`: the node model (node/node.h: the checks,
 * so the verdicts are exactly NPD's, and the rest of what the node says), what only this command
 * finds out itself (report_direct.h), handed to the pure renderers (view/).
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>

#include "base/jsonw.h"
#include "node/node.h"
#include "memcg/check_memcg.h"
#include "cpu/cpustat.h"
#include "cmd/report_direct.h"
#include "cmd/cmd.h"
#include "node/model.h"
#include "view/render.h"
#include "node/report_window.h"
#include "base/log.h"
#include "base/timespec.h"
#include "memcg/units.h"
#include "base/state.h"
#include "view/flame.h"
#include "view/html.h"
#include "view/report_profile.h"
#include "view/svg.h"
#include "base/util.h"

const char cmd_report_usage[] =
	"report [--json|--svg FILE|--html FILE] [--since TIME] [--until TIME]\n"
	"    Everything this node says, in one screen: memcg, cores, NICs, conditions; exit 1\n"
	"    when a condition is True. --json: one JSON document; --svg: per-core heatmap;\n"
	"    --html: one self-contained page: the verdict, the heatmap and each burst's flame\n"
	"    graph (zoom, search, and the sub-second strip whose drag selects a range).\n"
	"    --since/--until: the window of the heatmap and bursts, as '3h' (ago),\n"
	"    '2026-12-01T03:10' (UTC) or '@EPOCH'; from the finest history tier covering it.\n";

enum { OPT_JSON = 256, OPT_SVG, OPT_HTML, OPT_SINCE, OPT_UNTIL };

/* The options of `report` (cmd_report), and the words after them. */
struct report_opts {
	bool json;		 /* --json */
	const char *svg_path;	 /* --svg FILE */
	const char *html_path;	 /* --html FILE */
	const char *since, *until; /* --since/--until TIME (base/timespec.h), or NULL */
	int argc;
	char **argv;
};

/* --since/--until into a window; both 0 when neither was given. 0 or -EINVAL (logged). */
static int window(const struct cz_ctx *ctx, const struct report_opts *o, uint64_t now,
		  uint64_t *since, uint64_t *until)
{
	*since = *until = 0;
	if (!o->since && !o->until)
		return 0;
	*until = now;
	if (o->since && parse_time_spec(o->since, now, since) < 0)
		return log_error_errno(EINVAL, "report: --since: not a time: '%.64s' (use 3h, "
					       "2026-12-01T03:10 in UTC, or @EPOCH)", o->since);
	if (o->until && parse_time_spec(o->until, now, until) < 0)
		return log_error_errno(EINVAL, "report: --until: not a time: '%.64s' (use 1h, "
					       "2026-12-01T04:00 in UTC, or @EPOCH)", o->until);
	if (!o->since) /* --until alone: the lookback before it */
		*since = *until > ctx->cfg.cpu.lookback_ms ? *until - ctx->cfg.cpu.lookback_ms : 0;
	if (*until <= *since)
		return log_error_errno(EINVAL, "report: --until is not after --since");
	return 0;
}

/* What no agent published, `report` run by hand finds out itself where this binary can
 * (report_direct.h): the census and the leaker line, so the one-command answer keeps them. */
static void direct(struct cz_ctx *ctx, struct node_model *r)
{
	/* no fresh census from an agent, and this binary can count itself (the full one, run by
	 * hand: `make run`, with the privileges for BPF): the one-command answer names the groups
	 * */
	if (ctx->cfg.memcg.census_interval_ms && r->census_rc < 0) {
		char why[CENSUS_ERR_MAX];
		int e = report_direct_census(ctx, r->now_ms, &r->census, why, sizeof(why));

		if (e == 0) {
			r->census_rc = 0;
		} else if (e != -ENOSYS) {
			size_t n = strlen(r->census_err);

			snprintf(r->census_err + n, sizeof(r->census_err) - n,
				 ", and counting here failed: %s", why);
		}
	}
	/* nothing fresh from an agent, and this binary can ask systemd itself (the full one, run by
	 * hand: `make run`): the one-command answer keeps its leaker line */
	if (ctx->cfg.memcg.systemd_hints && r->restarts_rc < 0) {
		struct systemd_restarts direct;
		char why[sizeof(r->restarts_err)];
		int e = report_direct_restarts(ctx, r->now_ms, &direct, why, sizeof(why));

		if (e == 0) {
			r->restarts = direct;
			r->restarts_rc = 0;
		} else if (e != -ENOSYS) {
			size_t n = strlen(r->restarts_err);

			snprintf(r->restarts_err + n, sizeof(r->restarts_err) - n,
				 ", and asking systemd here failed: %s", why);
		}
	}
}

static int write_svg(const struct node_model *r, const char *path, uint64_t since, uint64_t until)
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

/* The page's bursts, newest first, each with its flame graph or why not; *@ret_n of them. */
static struct html_burst *page_bursts(const struct node_model *r, size_t *ret_n)
{
	size_t n = r->nbursts < HTML_BURSTS_MAX ? r->nbursts : HTML_BURSTS_MAX, k = 0;
	struct html_burst *b = calloc(n + 1, sizeof(*b));

	if (!b)
		return NULL;
	for (size_t i = r->nbursts; i-- > 0 && k < n;) {
		const struct burst_event *ev = &r->bursts[i];
		struct flame *fl = NULL;
		int e = report_profile_flame(r->cfg->paths.run, ev,
					     (size_t)r->cfg->cpu.profile_bytes + 1, &fl);

		b[k] = (struct html_burst){ .ev = ev, .ongoing = i >= r->nlogged, .fl = fl };
		if (e < 0)
			b[k].why = !ev->profile[0] ? (ev->why[0] ? ev->why : "no profile recorded")
				   : e == -ENOENT  ? "its profile file rolled off"
						   : "its profile file is unreadable";
		k++;
	}
	*ret_n = k;
	return b;
}

static int write_html(const struct node_model *r, const char *path, uint64_t since, uint64_t until)
{
	_cleanup_fclose_ FILE *f = fopen(path, "we");
	struct html_burst *b;
	size_t n = 0;
	int e;

	if (!f)
		return log_error_errno(errno, "Failed to create '%s': %m", path);
	b = page_bursts(r, &n);
	e = b ? html_write(r, since, until, b, n, f) : -ENOMEM;
	for (size_t i = 0; b && i < n; i++)
		flame_free((struct flame *)b[i].fl);
	free(b);
	if (e == 0 && (fflush(f) != 0 || ferror(f)))
		e = -EIO;
	if (e < 0)
		return log_error_errno(e, "Failed to write '%s': %m", path);
	return 0;
}

static int report_main(struct cz_ctx *ctx, const struct report_opts *o)
{
	uint64_t since, until;
	struct node_model *r;
	int e = 0;

	if (window(ctx, o, now_realtime_ms(), &since, &until) < 0)
		return CZ_EXIT_ERROR;
	if (o->argc > 0 || (o->json && (o->svg_path || o->html_path))) {
		fprintf(stderr,
			"cpuzombie report: usage: report [--json|--svg FILE|--html FILE] [--since "
			"TIME] [--until TIME]\n");
		return CZ_EXIT_ERROR;
	}
	/* a report shows the checks' verdicts but must not move their baselines or create files
	 * (it runs on read-only state and run dirs too): the checks open their state read-only */
	ctx->state_flags |= STATE_READ_ONLY;
	r = node_model_new(&ctx->cfg, now_realtime_ms());
	if (!r || node_read(ctx, r, since, until) < 0) {
		log_error_errno(ENOMEM, "Failed to gather the report: %m");
		node_model_free(r);
		return CZ_EXIT_ERROR;
	}
	if (r->memcg_rc == NPD_OK)
		direct(ctx, r);
	if (o->json) {
		json_object *j = report_json(r);

		e = jsonw_print(j, stdout) < 0 ? -EIO : 0;
		json_object_put(j);
	} else {
		if (o->svg_path)
			e = write_svg(r, o->svg_path, since, until);
		if (e == 0 && o->html_path)
			e = write_html(r, o->html_path, since, until);
		if (e == 0)
			e = report_print(r, stdout);
		if (e == 0 && o->svg_path)
			printf("\nheatmap: %s\n", o->svg_path);
		if (e == 0 && o->html_path)
			printf("%spage: %s\n", o->svg_path ? "" : "\n", o->html_path);
	}
	if (fflush(stdout) != 0)
		e = -EIO;
	e = e < 0 ? CZ_EXIT_ERROR : report_worst(r) == NPD_PROBLEM ? CZ_EXIT_PROBLEM : CZ_EXIT_OK;
	node_model_free(r);
	return e;
}

int cmd_report(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		CMD_COMMON_OPTIONS,
	};
	struct report_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_JSON: o.json = true; break;
		case OPT_SVG: o.svg_path = optarg; break;
		case OPT_HTML: o.html_path = optarg; break;
		case OPT_SINCE: o.since = optarg; break;
		case OPT_UNTIL: o.until = optarg; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_report_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return report_main(&env->ctx, &o);
}
