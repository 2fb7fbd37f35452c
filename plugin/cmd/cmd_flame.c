/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie flame BURST-ID [--out FILE]`: one burst's recorded profile (the run dir's burst
 * log, or the heartbeat's bursts still going on) as the standalone flame-graph SVG
 * (view/flame_svg.h), to FILE or stdout.
 */
#include <errno.h>

#include "cmd/cmd.h"
#include "cpu/history.h"
#include "base/log.h"
#include "base/util.h"
#include "view/flame.h"
#include "view/flame_svg.h"
#include "view/html.h"
#include "view/report_profile.h"

const char cmd_flame_usage[] =
	"flame BURST-ID [--out FILE]\n"
	"    One burst's recorded profile as a standalone interactive flame graph (SVG: click\n"
	"    to zoom, Search or Ctrl-F); BURST-ID is CPU-START_MS, as in the profile's file\n"
	"    name cpu-profile-CPU-START_MS.folded and on the --html page; stdout without\n"
	"    --out.\n";

enum { OPT_OUT = 256 };

/* The options of `flame` (cmd_flame), and the words after them. */
struct flame_opts {
	const char *out_path;	 /* --out FILE, or NULL: stdout */
	int argc;
	char **argv;
};

/* "CPU-START_MS" into its two numbers. 0 or -EINVAL. */
static int parse_id(const char *id, unsigned *ret_cpu, uint64_t *ret_start)
{
	const char *dash = strchr(id, '-');
	uint64_t cpu, start;

	if (!dash || parse_u64_n(id, (size_t)(dash - id), &cpu) < 0 || cpu > 65535 ||
	    parse_u64(dash + 1, &start) < 0)
		return -EINVAL;
	*ret_cpu = (unsigned)cpu;
	*ret_start = start;
	return 0;
}

/* The burst @cpu/@start from the log or the heartbeat into *@ret. 0, -ENOENT or -errno. */
static int find_burst(const char *run_dir, unsigned cpu, uint64_t start, struct burst_event *ret)
{
	_cleanup_free_ struct burst_event *ev = calloc(HISTORY_EVENTS_MAX, sizeof(*ev));
	_cleanup_free_ struct heartbeat *hb = calloc(1, sizeof(*hb));
	int n;

	if (!ev || !hb)
		return -ENOMEM;
	n = burst_log_read(run_dir, 0, ev, HISTORY_EVENTS_MAX);
	for (int i = 0; i < n; i++)
		if (ev[i].cpu == cpu && ev[i].start_ms == start) {
			*ret = ev[i];
			return 0;
		}
	if (heartbeat_read(run_dir, hb) == 0)
		for (size_t i = 0; i < hb->nactive; i++)
			if (hb->active[i].cpu == cpu && hb->active[i].start_ms == start) {
				*ret = hb->active[i];
				return 0;
			}
	return n < 0 ? n : -ENOENT;
}

static int write_flame(const struct flame *fl, const struct burst_event *ev, const char *node,
		       const char *path)
{
	_cleanup_fclose_ FILE *f = path ? fopen(path, "we") : NULL;
	char title[512], a[16], z[16];
	int e;

	if (path && !f)
		return log_error_errno(errno, "Failed to create '%s': %m", path);
	snprintf(title, sizeof(title), "cpu%u burst %s..%s UTC (%.1fs), node %.255s: %llu samples",
		 ev->cpu, utc_hms(ev->start_ms, a, sizeof(a)), utc_hms(ev->end_ms, z, sizeof(z)),
		 (double)(ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0) / 1000.0,
		 node[0] ? node : "-", (unsigned long long)fl->node[0].total);
	e = flame_svg_write(fl, title, f ? f : stdout);
	if (e == 0 && f && (fflush(f) != 0 || ferror(f)))
		e = -EIO;
	if (e < 0)
		return log_error_errno(e, "Failed to write '%s': %m", path ? path : "stdout");
	return 0;
}

static int flame_main(struct cz_ctx *ctx, const struct flame_opts *o)
{
	const char *run = ctx->cfg.paths.run;
	struct burst_event ev;
	struct flame *fl = NULL;
	unsigned cpu;
	uint64_t start;
	int e;

	if (o->argc != 1) {
		fprintf(stderr, "cpuzombie flame: usage: flame BURST-ID [--out FILE]\n");
		return CZ_EXIT_ERROR;
	}
	if (parse_id(o->argv[0], &cpu, &start) < 0) {
		log_error("flame: not a burst id: '%.64s' (CPU-START_MS, as in "
			  "cpu-profile-CPU-START_MS.folded)", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	e = find_burst(run, cpu, start, &ev);
	if (e < 0) {
		log_error("flame: no burst %u-%llu in '%s' (%s)", cpu, (unsigned long long)start,
			  run, e == -ENOENT ? "not in the burst log" : strerror(-e));
		return CZ_EXIT_ERROR;
	}
	e = report_profile_flame(run, &ev, (size_t)ctx->cfg.cpu.profile_bytes + 1, &fl);
	if (e < 0) {
		log_error("flame: burst %u-%llu has no flame graph: %s", cpu,
			  (unsigned long long)start,
			  !ev.profile[0] ? (ev.why[0] ? ev.why : "no profile recorded")
			  : e == -ENOENT ? "its profile file rolled off"
			  : e == -ENODATA ? "its profile has no samples"
					  : "its profile file is unreadable");
		return CZ_EXIT_ERROR;
	}
	e = write_flame(fl, &ev, ctx->cfg.kubernetes.node_name, o->out_path);
	flame_free(fl);
	return e < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}

int cmd_flame(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "out", required_argument, NULL, OPT_OUT },
		CMD_COMMON_OPTIONS,
	};
	struct flame_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_OUT: o.out_path = optarg; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_flame_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return flame_main(&env->ctx, &o);
}
