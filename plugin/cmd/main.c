/* SPDX-License-Identifier: MIT */
/*
 * Subcommand dispatch only: parse the common options, load the configuration, open the host
 * roots, run the subcommand and return its exit code. Errors are reported here, once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#ifndef CZ_CHECK_BINARY
#include "agent/census_bpf.h"
#include "agent/census_publish.h"
#include "host/systemd.h"
#endif
#include "base/log.h"
#include "base/util.h"

struct cmd {
	const char *name;
	cmd_fn run;
	const char *usage;
};

/*
 * The static check binary (cpuzombie-check: this file built with CZ_CHECK_BINARY) holds only
 * the offline subcommands: it links no libcurl and no libsystemd. An online one (ONLINE(fn))
 * answers there with one line and exit 2 instead of running.
 */
#ifdef CZ_CHECK_BINARY
static const char *online_name;

static int cmd_online_only(struct cz_ctx *ctx, const struct cmd_opts *o)
{
	(void)ctx, (void)o;
	log_error("'%s' is not in this binary (the static check binary runs checks, report, "
		  "ena-diff and config check); run the full cpuzombie", online_name);
	return CZ_EXIT_ERROR;
}
#define ONLINE(fn) cmd_online_only
#else
#define ONLINE(fn) fn
#endif

/* One row per subcommand. */
static const struct cmd cmds[] = {
	{ "check", cmd_check,
	  "check memcg|cpu|ena|ena-allowance\n"
	  "    Run one NPD custom-plugin check: one line on stdout; exit 0 OK, 1 problem,\n"
	  "    2 unknown (we could not tell).\n" },
	{ "config", cmd_config,
	  "config check [--config FILE]\n"
	  "    Validate a configuration: 'configuration OK' or FILE:LINE errors (exit 2).\n"
	  "    With -v, print the effective configuration.\n" },
	{ "ena-diff", cmd_ena_diff,
	  "ena-diff BEFORE AFTER | ena-diff BEFORE - | ena-diff - [IF...]\n"
	  "    ENA verdict from two saved `ethtool -S` texts (AFTER '-': read now); exit 0 no\n"
	  "    reset, 1 reset or risk (counters that went down count from their new value),\n"
	  "    2 bad input or no verdict. '- [IF...]' prints the live counters instead.\n" },
	{ "explain", cmd_explain,
	  "explain FILE|- [--json]\n"
	  "    Kernel log text (dmesg, dmesg -T/-H, journalctl -k, syslog, /dev/kmsg) into what\n"
	  "    happened: ENA resets with cause, queue and the lockup that starved them, and a\n"
	  "    timeline; exit 1 reset/lockup found, 0 none, 2 unreadable input.\n" },
	{ "agent", ONLINE(cmd_agent),
	  "agent [--once]\n"
	  "    Sample per-core CPU every cpu.interval into --run-dir (bursts, history, heartbeat)\n"
	  "    until SIGTERM; --once: one cycle of cpu.inline_window, then exit.\n" },
	{ "remediator", ONLINE(cmd_remediator),
	  "remediator [--once]\n"
	  "    The cluster's one remediator (the chart's Deployment): every agent.check_interval,\n"
	  "    if it holds the leader Lease, cordon/drain/uncordon the nodes whose listed\n"
	  "    conditions are True, under the budget; node agents then only report.\n"
	  "    --once: one cycle, its summary on stdout, then exit.\n" },
	{ "cleanup", ONLINE(cmd_cleanup),
	  "cleanup [--keep-cordons]\n"
	  "    Remove cpuzombie's condition types (not set False), its cpuzombie.io/ annotations\n"
	  "    and taints from every node, and its Leases (remediation.lease_namespace, the\n"
	  "    leader's); nothing of anyone else's. The chart's uninstall hook runs it. A node\n"
	  "    cordoned by cpuzombie is uncordoned in the same patch; --keep-cordons: it stays\n"
	  "    cordoned with its cpuzombie.io/cordoned marker, and the summary names it.\n" },
	{ "report", cmd_report,
	  "report [--json|--svg FILE|--html FILE] [--since TIME] [--until TIME]\n"
	  "    Everything this node says, in one screen: memcg, cores, NICs, conditions; exit 1\n"
	  "    when a condition is True. --json: one JSON document; --svg: per-core heatmap;\n"
	  "    --html: one self-contained page: the verdict, the heatmap and each burst's flame\n"
	  "    graph (zoom, search, and the sub-second strip whose drag selects a range).\n"
	  "    --since/--until: the window of the heatmap and bursts, as '3h' (ago),\n"
	  "    '2026-12-01T03:10' (UTC) or '@EPOCH'; from the finest history tier covering it.\n" },
	{ "flame", cmd_flame,
	  "flame BURST-ID [--out FILE]\n"
	  "    One burst's recorded profile as a standalone interactive flame graph (SVG: click\n"
	  "    to zoom, Search or Ctrl-F); BURST-ID is CPU-START_MS, as in the profile's file\n"
	  "    name cpu-profile-CPU-START_MS.folded and on the --html page; stdout without\n"
	  "    --out.\n" },
	{ "top", cmd_top,
	  "top [--once]\n"
	  "    The node live, every second: each core's share and heatmap, the bursting core with\n"
	  "    its task, kernel function and NIC queue, dying memcgs, ENA counters, kernel-log "
	  "events;\n"
	  "    from the agent's run dir, or sampling inline without one. q quits, p pauses; not a\n"
	  "    terminal: one line a second.\n" },
	{ "fleet", ONLINE(cmd_fleet),
	  "fleet [-l SELECTOR] [--group-by LABEL]... [--nodes] [--json] [--chunk-size N]\n"
	  "      [--watch]\n"
	  "    Where the chain concentrates across the cluster, read from the API server\n"
	  "    (--kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster): per condition, the\n"
	  "    zone, instance type, OS image, kernel, runtime or label that best separates True\n"
	  "    from False nodes; leakers, tasks and reset causes; remediation and its Leases.\n"
	  "    Also `kubectl cpuzombie` (installed as kubectl-cpuzombie). Exit 1: some node "
	  "True.\n"
	  "    --watch: live, from one LIST and a WATCH, redrawn on change (q quits).\n" },
	{ "install-plugin", ONLINE(cmd_install_plugin),
	  "install-plugin DEST_DIR [--from FILE]\n"
	  "    Copy the static check binary (--from, default " CZ_PLUGIN_BINARY ") to\n"
	  "    DEST_DIR/bin/cpuzombie for node-problem-detector's container: a temporary file\n"
	  "    fsynced, mode 0755, renamed over the old one; never through a symlink. The chart's\n"
	  "    init container runs it (the image has no cp). One line; exit 0, or 2 on\n"
	  "    failure.\n" },
	{ "own-state", ONLINE(cmd_own_state),
	  "own-state UID DIR\n"
	  "    Give DIR (itself, never through a symlink) to UID:UID (1-65534): the chart's\n"
	  "    init container for node containers that run as non-root (the image has no\n"
	  "    chown). One line; exit 0, or 2 on failure.\n" },
	{ NULL, NULL, NULL },
};

static const char common_usage[] =
	"Common options:\n"
	"  --config FILE      configuration (default " CZ_DEFAULT_CONFIG_PATH " if it exists,\n"
	"                     else built-in defaults)\n"
	"  --proc-root DIR    host /proc (default /proc; /host/proc in a container)\n"
	"  --sys-root DIR     host /sys (default /sys)\n"
	"  --state-dir DIR    persistent state (default /var/lib/cpuzombie)\n"
	"  --run-dir DIR      sampler history and heartbeat (default /run/cpuzombie)\n"
	"  --node-name NAME   Kubernetes node name (default $NODE_NAME)\n"
	"  --kubeconfig FILE  kubeconfig (default: in-cluster service account)\n"
	"  --max-output BYTES longest check line (default 256; match NPD's max_output_length)\n"
	"  -v, --verbose      diagnostics on stderr\n"
	"  --version, --help  (-v --version: also how this binary was built)\n";

static void usage(FILE *out, const struct cmd *only)
{
	fprintf(out,
		"Usage: cpuzombie [OPTIONS] COMMAND ...\n\n"
		"Finds the CPU-zombie chain on a Kubernetes node: leaked (dying) memory cgroups,\n"
		"single cores saturated in system time, and the ENA NIC resets they cause.\n\n");
	for (const struct cmd *c = cmds; c->name; c++)
		if ((!only || c == only) && c->usage)
			fprintf(out, "cpuzombie %s\n", c->usage);
	fprintf(out, "%s", common_usage);
}

/* What was wrong with the command line: main prints it on stderr, and a check also puts it in
 * its one stdout line (NPD never shows stderr). */
static char cmdline_err[256];

static int _printf_(1, 2) cmdline_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmdline_err, sizeof(cmdline_err), fmt, ap);
	va_end(ap);
	log_error("%s", cmdline_err);
	return -EINVAL;
}

enum {
	OPT_CONFIG = 256, OPT_PROC, OPT_SYS, OPT_STATE, OPT_RUN, OPT_NODE, OPT_KUBECONFIG,
	OPT_MAXOUT, OPT_VERSION, OPT_HELP, OPT_ONCE, OPT_JSON, OPT_SVG, OPT_SINCE, OPT_UNTIL,
	OPT_SELECTOR, OPT_GROUP_BY, OPT_NODES, OPT_WATCH, OPT_CHUNK, OPT_FROM, OPT_HTML, OPT_OUT,
	OPT_KEEP_CORDONS,
};

struct opts {
	const char *config, *proc, *sys, *state, *run, *node, *kubeconfig, *svg, *since, *until;
	const char *selector, *group_by[CZ_GROUP_BY_MAX];	/* fleet */
	size_t n_group_by;
	bool nodes, watch;
	uint64_t chunk_size;
	const char *from;	/* install-plugin */
	const char *html, *out;	/* report --html, flame --out */
	uint64_t max_output;
	int verbose;
	bool help, version, once, json, keep_cordons;
};

/*
 * Parse options from argv[1..]. @permute false stops at the first non-option (the subcommand);
 * true lets options and positional words mix (GNU permutation), for what follows the
 * subcommand. Returns the index of the first positional word, or -EINVAL.
 */
static int parse_opts(int argc, char **argv, struct opts *o, bool permute)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "proc-root", required_argument, NULL, OPT_PROC },
		{ "sys-root", required_argument, NULL, OPT_SYS },
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "run-dir", required_argument, NULL, OPT_RUN },
		{ "node-name", required_argument, NULL, OPT_NODE },
		{ "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
		{ "max-output", required_argument, NULL, OPT_MAXOUT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ "selector", required_argument, NULL, OPT_SELECTOR },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "nodes", no_argument, NULL, OPT_NODES },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "keep-cordons", no_argument, NULL, OPT_KEEP_CORDONS },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	if (o->max_output == 0)
		o->max_output = NPD_DEFAULT_MAX_OUTPUT;
	opterr = 0; /* we print our own one-line error */
	optind = 0; /* restart getopt on this argv */
	while ((c = getopt_long(argc, argv, permute ? "vhl:" : "+vhl:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG: o->config = optarg; break;
		case OPT_PROC: o->proc = optarg; break;
		case OPT_SYS: o->sys = optarg; break;
		case OPT_STATE: o->state = optarg; break;
		case OPT_RUN: o->run = optarg; break;
		case OPT_NODE: o->node = optarg; break;
		case OPT_KUBECONFIG: o->kubeconfig = optarg; break;
		case OPT_MAXOUT:
			if (parse_u64(optarg, &o->max_output) < 0 || o->max_output == 0 ||
			    o->max_output >= NPD_MSG_MAX) {
				return cmdline_error("--max-output: expected 1..%d, got '%.32s'",
						     NPD_MSG_MAX - 1, optarg);
			}
			break;
		case 'v': o->verbose++; break;
		case 'h':
		case OPT_HELP: o->help = true; break;
		case OPT_VERSION: o->version = true; break;
		case OPT_ONCE: o->once = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_SVG: o->svg = optarg; break;
		case OPT_SINCE: o->since = optarg; break;
		case OPT_UNTIL: o->until = optarg; break;
		case 'l':
		case OPT_SELECTOR: o->selector = optarg; break;
		case OPT_GROUP_BY:
			if (o->n_group_by == CZ_GROUP_BY_MAX || !*optarg || strlen(optarg) > 316)
				return cmdline_error(
					"--group-by: at most %d label keys of 1..316 bytes",
					CZ_GROUP_BY_MAX);
			o->group_by[o->n_group_by++] = optarg;
			break;
		case OPT_NODES: o->nodes = true; break;
		case OPT_WATCH: o->watch = true; break;
		case OPT_KEEP_CORDONS: o->keep_cordons = true; break;
		case OPT_CHUNK:
			if (parse_u64(optarg, &o->chunk_size) < 0 || o->chunk_size == 0 ||
			    o->chunk_size > 100000)
				return cmdline_error(
					"--chunk-size: expected 1..100000, got '%.32s'", optarg);
			break;
		case OPT_FROM: o->from = optarg; break;
		case OPT_HTML: o->html = optarg; break;
		case OPT_OUT: o->out = optarg; break;
		default:
			return cmdline_error("unknown or incomplete option '%.32s'",
					     argv[optind - 1]);
		}
	}
	return optind;
}

/* Copy a path option into the config, refusing what does not fit rather than cutting it. */
/* The config this run uses (config_load_effective): a bad option comes back as -EDOM and is
 * the command line's error; a bad file's lines go to stderr as they are. */
static int load_config(struct cz_ctx *ctx, const struct cz_overrides *ov, const char **ret_path,
		       char *errs, size_t errs_size)
{
	int r = config_load_effective(ov, &ctx->cfg, ret_path, errs, errs_size);

	if (r == -EDOM)
		return cmdline_error("%s", errs);
	if (r < 0)
		fprintf(stderr, "%s", errs);
	return r;
}

static const struct cmd *find_cmd(const char *name)
{
	for (const struct cmd *c = cmds; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}

/* A check must always answer NPD with one line, even when the config is broken. */
static int fail(const struct cmd *c, const char *msg)
{
	if (c && c->run == cmd_check) {
		struct npd_result res;

		npd_set(&res, NPD_UNKNOWN, "%s", msg);
		return npd_emit(&res, NPD_DEFAULT_MAX_OUTPUT, stdout);
	}
	return CZ_EXIT_ERROR;
}

/*
 * fds 0-2 closed by whoever started us: hold them with /dev/null opened read-only, so that no
 * file we open becomes "stdout" and a write to a closed stdout still fails (EBADF) - and is
 * reported by finish_stdout() - instead of landing in that file.
 */
static void hold_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		n = open("/dev/null", O_RDONLY | O_NOCTTY);
		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
}

/*
 * Every command's output is its answer: a write that failed (stdout closed, /dev/full, a pipe
 * whose reader left - SIGPIPE is ignored) turns any exit code into 2, said on stderr.
 */
static int finish_stdout(int r)
{
	int err = 0;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		err = errno ? errno : EIO;
	if (fclose(stdout) != 0 && !err)
		err = errno ? errno : EIO;
	if (!err)
		return r;
	log_error_errno(err, "Failed to write to standard output: %m");
	return CZ_EXIT_ERROR;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
	hold_std_fds();
	signal(SIGPIPE, SIG_IGN);
	return finish_stdout(run(argc, argv));
}

/*
 * Installed as kubectl-cpuzombie, kubectl runs us for `kubectl cpuzombie ARGS` (its plugin
 * convention: argv[0] is the file name): that is `cpuzombie fleet ARGS` unless ARGS name a
 * subcommand. Returns the argv to use (@argv, or a static copy with "fleet" inserted).
 */
static char **plugin_argv(int *argc, char **argv)
{
	static char *av[512];
	const char *base = *argc > 0 ? strrchr(argv[0], '/') : NULL;

	if (*argc < 1 || !streq(base ? base + 1 : argv[0], "kubectl-cpuzombie") ||
	    (*argc > 1 && find_cmd(argv[1])) || *argc + 2 > (int)ARRAY_SIZE(av))
		return argv;
	av[0] = argv[0];
	av[1] = (char *)"fleet";
	memcpy(av + 2, argv + 1, (size_t)(*argc - 1) * sizeof(*av));
	av[++*argc] = NULL;
	return av;
}

static int run(int argc, char **argv)
{
	static struct cz_ctx
		ctx; /* static: ~160 KiB (the config), not zeroed on the stack per exec */
	static struct cmd_opts co;
	static struct cz_overrides ov;
	struct opts o = { 0 };
	static char errs[8192]; /* static: not probed page by page on every exec */
	const struct cmd *c = NULL;
	int first, r;

	argv = plugin_argv(&argc, argv);
	first = parse_opts(argc, argv, &o, false);
	if (first >= 0 && first < argc)
		c = find_cmd(argv[first]);
	if (o.version) {
		printf("cpuzombie %s\n", CZ_VERSION);
		if (o.verbose)	/* build options on their own lines: --version stays one line */
#ifdef CZ_CHECK_BINARY
			printf("binary: static check binary (offline commands)\n"
			       "census: no (the check binary reads the agent's census)\n");
#else
			printf("binary: full\ncensus: %s\n", census_bpf_build());
#endif
		return CZ_EXIT_OK;
	}
	if (o.help) {
		usage(stdout, c);
		return CZ_EXIT_OK;
	}
	if (first < 0)
		return fail(c, cmdline_err);
	if (!c) {
		if (first < argc)
			log_error("unknown command '%s'", argv[first]);
		usage(stderr, NULL);
		return CZ_EXIT_ERROR;
	}
	/* Options may also follow the subcommand ("check memcg --proc-root X"): parse the rest as
	 * its own argv, the subcommand standing in for the program name. */
	r = parse_opts(argc - first, argv + first, &o, true);
	if (r < 0)
		return fail(c, cmdline_err);
	if (o.help) {
		usage(stdout, c);
		return CZ_EXIT_OK;
	}
	ov = (struct cz_overrides){ .config = o.config, .proc = o.proc, .sys = o.sys,
				    .state = o.state, .run = o.run, .kubeconfig = o.kubeconfig,
				    .node = o.node };
	co.ov = &ov;
	co.max_output = (size_t)o.max_output;
	ctx.verbose = o.verbose;
	if (o.verbose)
		log_set_max_level(LOG_PRIO_DEBUG); /* -v: the diagnostics behind log_debug() */
	co.once = o.once;
	co.keep_cordons = o.keep_cordons;
	co.json = o.json;
	co.svg_path = o.svg;
	co.html_path = o.html;
	co.out_path = o.out;
	co.since = o.since;
	co.until = o.until;
	co.selector = o.selector;
	memcpy(co.group_by, o.group_by, sizeof(co.group_by));
	co.n_group_by = o.n_group_by;
	co.nodes = o.nodes;
	co.watch = o.watch;
	co.chunk_size = o.chunk_size;
	co.from = o.from;
	co.argc = argc - first - r;
	co.argv = argv + first + r;
	if (load_config(&ctx, &ov, &co.config_path, errs, sizeof(errs)) < 0) {
		/* NPD shows only stdout: lead with the first error, which names file, line and key
		 * */
		char msg[NPD_MSG_MAX];

		if (cmdline_err[0]) /* an option given with the config, not the config file */
			return fail(c, cmdline_err);
		size_t n = strcspn(errs, "\n");
		unsigned more = 0;

		for (const char *p = errs + n; *p; p++)
			more += *p == '\n' && p[1] != '\0';
		snprintf(msg, sizeof(msg), "bad config: %.*s%s", (int)n, errs,
			 more ? " (and more: cpuzombie config check)" : "");
		return fail(c, msg);
	}
#ifdef CZ_CHECK_BINARY
	if (c->run == cmd_online_only) {
		online_name = c->name;
		return c->run(&ctx, &co);
	}
#endif
	r = hostfs_open(&ctx.hf, ctx.cfg.paths.proc, ctx.cfg.paths.sys);
	if (r < 0) {
		log_error("bad --proc-root or --sys-root");
		return fail(c, "bad --proc-root or --sys-root");
	}
	r = c->run(&ctx, &co);
	hostfs_close(&ctx.hf);
	return r;
}
