/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie explain FILE|-`: pasted kernel log text (dmesg in any of its stamp styles,
 * journalctl -k, syslog, /dev/kmsg records) into what happened: each ENA reset with its cause,
 * queue, outcome and the lockup that starved it, the statistics dump at the reset through the
 * `ethtool -S` verdict, and a timeline. --json: one JSON document.
 *
 * Exit 1 when a reset, a lockup, a stall, a hung task or a NETDEV WATCHDOG is found, 0 when
 * none, 2 when the input cannot be read. Lines that match nothing are skipped; input is read
 * as a stream (bounded memory: KLOG_EVENTS_MAX events, lines cut at KLOG_LINE_MAX with their
 * tails skipped, at most INPUT_MAX bytes read). Text with a NUL byte (UTF-16, a binary) is
 * unreadable input: exit 2 naming the line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>

#include "base/jsonw.h"
#include "cmd/cmd.h"
#include "ena/klog_incident.h"
#include "base/log.h"
#include "base/util.h"

const char cmd_explain_usage[] =
	"explain FILE|- [--json]\n"
	"    Kernel log text (dmesg, dmesg -T/-H, journalctl -k, syslog, /dev/kmsg) into what\n"
	"    happened: ENA resets with cause, queue and the lockup that starved them, and a\n"
	"    timeline; exit 1 reset/lockup found, 0 none, 2 unreadable input.\n";

enum { OPT_JSON = 256 };

/* The options of `explain` (cmd_explain), and the words after them. */
struct explain_opts {
	bool json;		 /* --json */
	int argc;
	char **argv;
};

#define INPUT_MAX (512ull << 20)
#define CHUNK (64u << 10)
#define TIMELINE_MAX 400

struct input {
	struct klog_reader rd;
	struct klog_log log;
	uint64_t bytes;
	bool cut;		/* INPUT_MAX reached */
	bool utf16;		/* starts with a UTF-16 byte order mark */
	unsigned bad_line;	/* -EILSEQ: the first line with a NUL byte */
	size_t stat_lines;
};

static void take_line(struct input *in, const char *line, size_t len)
{
	struct klog_event e;

	if (klog_reader_line(&in->rd, line, len, &e) != 1)
		return;
	in->stat_lines += e.kind == KLOG_ENA_STAT;
	(void)klog_log_add(&in->log, &e); /* full: counted in log.dropped, reported below */
}

/* Read @fd line by line (klog_lines: over-long lines keep their head, their tail is skipped).
 * Text with a NUL byte is none we can read (UTF-16, a binary, /dev/zero): -EILSEQ, with the
 * line in in->rd.line. */
static int read_all(int fd, struct input *in)
{
	_cleanup_free_ char *buf = malloc(CHUNK);
	struct klog_lines ls = { 0 };
	const char *line;
	size_t len;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (in->bytes == 0 && n >= 2 && ((buf[0] == '\xff' && buf[1] == '\xfe') ||
						 (buf[0] == '\xfe' && buf[1] == '\xff')))
			in->utf16 = true;
		in->bytes += (uint64_t)n;
		for (size_t i = 0; i < (size_t)n;) {
			i += klog_lines_feed(&ls, buf + i, (size_t)n - i, &line, &len);
			if (ls.nul_line) {
				in->bad_line = ls.nul_line;
				return -EILSEQ;
			}
			if (line)
				take_line(in, line, len);
		}
		if (in->bytes >= INPUT_MAX) {
			in->cut = true;
			break;
		}
	}
	if (klog_lines_end(&ls, &line, &len))
		take_line(in, line, len);
	return 0;
}

static int open_input(const char *path)
{
	int fd;

	if (streq(path, "-"))
		return STDIN_FILENO;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* ---- text --------------------------------------------------------------------------------- */

static const char *outcome_word(enum klog_outcome o)
{
	return o == KLOG_OUTCOME_COMPLETED ? "completed" : o == KLOG_OUTCOME_FAILED ? "failed" :
									     "not_logged";
}

static void print_reset(const struct input *in, const struct klog_reset *r, size_t k)
{
	const struct klog_event *f = &in->log.ev[r->first];
	char chain[512];

	printf("%s %zu (line %u%s%s): %s\n", r->is_reset ? "ENA reset" : "ENA risk", k + 1, f->line,
	       f->stamp[0] ? ", " : "", f->stamp,
	       klog_reset_chain(&in->log, r, chain, sizeof(chain)));
	if (klog_reset_reason(r)[0])
		printf("  reason counter: %s\n", klog_reset_reason(r));
	if (r->has_verdict)
		printf("  statistics dump at the reset (%zu counters%s): %s\n", r->n_stats,
		       r->since_load ? ", counted since the driver loaded"
				     : ", since the dump before",
		       r->verdict.cause[0] ? r->verdict.cause : "no reset or risk counter moved");
}

static void print_timeline(const struct input *in)
{
	size_t shown = 0, stats = 0;
	char d[256];

	printf("Timeline:\n");
	for (size_t i = 0; i < in->log.n; i++) {
		const struct klog_event *e = &in->log.ev[i];

		if (e->kind == KLOG_ENA_STAT) {
			stats++;
			if (i + 1 < in->log.n && in->log.ev[i + 1].kind == KLOG_ENA_STAT)
				continue;
			printf("  %-26s %s statistics dump: %zu counters\n", "", e->ifname, stats);
			stats = 0;
			continue;
		}
		if (e->cont && e->kind == KLOG_RCU_STALL)
			continue;
		if (shown++ == TIMELINE_MAX) {
			printf("  ... (more events in --json)\n");
			break;
		}
		printf("  %-26s %s\n", e->stamp[0] ? e->stamp : "",
		       klog_event_describe(e, d, sizeof(d)));
	}
}

static void print_text(const struct input *in, const struct klog_incident *inc)
{
	size_t resets = 0;

	for (size_t k = 0; k < inc->n_resets; k++) {
		print_reset(in, &inc->resets[k], k);
		resets += inc->resets[k].is_reset;
	}
	if (in->log.n)
		print_timeline(in);
	printf("%zu ENA reset%s, %zu lockup/stall/hung-task/watchdog event%s in %u kernel lines",
	       resets, resets == 1 ? "" : "s", inc->n_lockups, inc->n_lockups == 1 ? "" : "s",
	       in->rd.kernel_lines);
	if (in->rd.skipped_foreign)
		printf(" (%u line%s of other programs skipped)", in->rd.skipped_foreign,
		       in->rd.skipped_foreign == 1 ? "" : "s");
	printf("\n");
}

/* ---- JSON --------------------------------------------------------------------------------- */

static json_object *str_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

static json_object *int_or_null(int v)
{
	return v >= 0 ? json_object_new_int(v) : NULL;
}

static json_object *event_json(const struct klog_event *e)
{
	json_object *o = json_object_new_object();
	char d[256];

	jsonw_add(o, "line", json_object_new_int64(e->line));
	jsonw_add(o, "stamp", str_or_null(e->stamp));
	jsonw_add(o, "kind", json_object_new_string(klog_kind_name(e->kind)));
	jsonw_add(o, "interface", str_or_null(e->ifname));
	jsonw_add(o, "pci", str_or_null(e->pci));
	jsonw_add(o, "queue", int_or_null(e->queue));
	jsonw_add(o, "cpu", int_or_null(e->cpu));
	jsonw_add(o, "task", str_or_null(e->comm));
	jsonw_add(o, "pid", int_or_null(e->pid));
	if (e->kind == KLOG_SOFT_LOCKUP || e->kind == KLOG_HUNG_TASK)
		jsonw_add(o, "seconds", json_object_new_uint64(e->n1));
	jsonw_add(o, "text", json_object_new_string(klog_event_describe(e, d, sizeof(d))));
	return o;
}

static json_object *verdict_json(const struct klog_reset *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	jsonw_add(o, "counters", json_object_new_uint64(r->n_stats));
	jsonw_add(o, "since_driver_load", json_object_new_boolean(r->since_load));
	jsonw_add(o, "resets", json_object_new_uint64(r->verdict.resets));
	jsonw_add(o, "reset_fail", json_object_new_boolean(r->verdict.reset_fail));
	jsonw_add(o, "cause", json_object_new_string(r->verdict.cause));
	for (size_t i = 0; i < r->verdict.n_moved; i++) {
		json_object *m = json_object_new_object();

		jsonw_add(m, "name", json_object_new_string(r->verdict.moved[i].name));
		jsonw_add(m, "delta", json_object_new_uint64(r->verdict.moved[i].delta));
		json_object_array_add(a, m);
	}
	jsonw_add(o, "moved", a);
	return o;
}

static json_object *reset_json(const struct input *in, const struct klog_reset *r)
{
	json_object *o = json_object_new_object();
	char buf[512];

	jsonw_add(o, "reset", json_object_new_boolean(r->is_reset));
	jsonw_add(o, "interface", str_or_null(r->ifname));
	jsonw_add(o, "pci", str_or_null(r->pci));
	jsonw_add(o, "queue", int_or_null(r->queue));
	jsonw_add(o, "napi_cpu", int_or_null(r->cpu));
	jsonw_add(o, "cause", json_object_new_string(klog_reset_cause(r, buf, sizeof(buf))));
	jsonw_add(o, "reason", str_or_null(klog_reset_reason(r)));
	jsonw_add(o, "poll_starvation", json_object_new_boolean(r->poll_starved));
	jsonw_add(o, "napi_not_run_ms", json_object_new_uint64(r->napi_us / 1000));
	jsonw_add(o, "lost_tx", json_object_new_uint64(r->lost));
	jsonw_add(o, "lost_tx_threshold", json_object_new_uint64(r->threshold));
	jsonw_add(o, "missed_tx", json_object_new_uint64(r->missed));
	jsonw_add(o, "outcome", json_object_new_string(outcome_word(r->outcome)));
	jsonw_add(o, "driver_version", str_or_null(r->version));
	jsonw_add(o, "first_line", json_object_new_int64(in->log.ev[r->first].line));
	jsonw_add(o, "last_line", json_object_new_int64(in->log.ev[r->last].line));
	jsonw_add(o, "chain",
		  json_object_new_string(klog_reset_chain(&in->log, r, buf, sizeof(buf))));
	jsonw_add(o, "lockup", r->lockup >= 0 ? event_json(&in->log.ev[r->lockup]) : NULL);
	jsonw_add(o, "statistics", r->has_verdict ? verdict_json(r) : NULL);
	return o;
}

static int print_json(const struct input *in, const struct klog_incident *inc)
{
	json_object *o = json_object_new_object(), *rs = json_object_new_array(),
		    *ev = json_object_new_array();
	int r;

	for (size_t k = 0; k < inc->n_resets; k++)
		json_object_array_add(rs, reset_json(in, &inc->resets[k]));
	for (size_t i = 0; i < in->log.n; i++)
		if (in->log.ev[i].kind != KLOG_ENA_STAT)
			json_object_array_add(ev, event_json(&in->log.ev[i]));
	jsonw_add(o, "resets", rs);
	jsonw_add(o, "lockups", json_object_new_uint64(inc->n_lockups));
	jsonw_add(o, "events", ev);
	jsonw_add(o, "statistics_lines", json_object_new_uint64(in->stat_lines));
	jsonw_add(o, "lines", json_object_new_int64(in->rd.line));
	jsonw_add(o, "kernel_lines", json_object_new_int64(in->rd.kernel_lines));
	jsonw_add(o, "skipped_lines", json_object_new_int64(in->rd.skipped_foreign));
	jsonw_add(o, "dropped_events", json_object_new_uint64(in->log.dropped));
	jsonw_add(o, "input_cut", json_object_new_boolean(in->cut));
	r = jsonw_print(o, stdout);
	json_object_put(o);
	return r;
}

static int explain_main(struct cz_ctx *ctx, const struct explain_opts *o)
{
	static struct klog_incident inc; /* large: keep it off the stack */
	struct ena_lists lists = ena_lists_from_config(&ctx->cfg);
	struct input in = { 0 };
	int fd, r;

	if (o->argc != 1) {
		log_error(
			"usage: cpuzombie explain FILE|-  (kernel log text: dmesg, journalctl -k)");
		return CZ_EXIT_ERROR;
	}
	fd = open_input(o->argv[0]);
	if (fd < 0) {
		log_error_errno(fd, "Failed to open '%s': %m", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	r = read_all(fd, &in);
	if (fd != STDIN_FILENO)
		close(fd);
	if (r == -EILSEQ) {
		log_error("%s:%u: NUL byte: not kernel log text%s", o->argv[0], in.bad_line,
			  in.utf16 ? " (UTF-16: convert it with iconv -f UTF-16 -t UTF-8)" :
				     " (UTF-16 or binary?)");
		klog_log_free(&in.log);
		return CZ_EXIT_ERROR;
	}
	if (r < 0) {
		log_error_errno(r, "Failed to read '%s': %m", o->argv[0]);
		klog_log_free(&in.log);
		return CZ_EXIT_ERROR;
	}
	if (in.cut)
		log_warning("'%s': only the first %llu MiB read", o->argv[0], INPUT_MAX >> 20);
	if (in.log.dropped)
		log_warning("'%s': %zu events beyond the first %d not analysed", o->argv[0],
			    in.log.dropped, KLOG_EVENTS_MAX);
	r = klog_analyze(&in.log, &lists, &inc);
	if (r < 0) {
		log_error_errno(r, "Failed to analyse '%s': %m", o->argv[0]);
		klog_log_free(&in.log);
		return CZ_EXIT_ERROR;
	}
	r = o->json ? print_json(&in, &inc) : (print_text(&in, &inc), 0);
	klog_log_free(&in.log);
	if (r < 0 || fflush(stdout) != 0)
		return CZ_EXIT_ERROR;
	for (size_t k = 0; k < inc.n_resets; k++)
		if (inc.resets[k].is_reset)
			return CZ_EXIT_PROBLEM;
	return inc.n_lockups ? CZ_EXIT_PROBLEM : CZ_EXIT_OK;
}

int cmd_explain(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		CMD_COMMON_OPTIONS,
	};
	struct explain_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_JSON: o.json = true; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_explain_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return explain_main(&env->ctx, &o);
}
