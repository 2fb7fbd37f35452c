/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie top`: the incident as it happens, for the person on the node. Every
 * second it reads what the agent wrote to the run dir (the history ring, the heartbeat with the
 * bursts going on and their links, the kernel-event log) and draws it (view/top_render.h).
 * Without a live agent it samples /proc/stat itself (the sampler `check cpu` uses inline) and
 * says so on the screen. The node's dying memcgs (what `check memcg` reads, every 5 s) and the
 * ENA counters that moved (read at most every ena.min_read_interval: each read holds RTNL) join
 * it.
 *
 * On a terminal: the alternate screen, keys without Enter (q quits, p pauses the display),
 * SIGWINCH redraws at the new size, SIGINT/SIGTERM restore the terminal and exit. Not a terminal
 * (a pipe, a log): one plain line per second; --once: one line (or one screen) and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/state.h"
#include "base/util.h"
#include "cpu/cpu_sampler.h"
#include "ena/check_ena.h"
#include "memcg/check_memcg.h"
#include "cpu/cpustat.h"
#include "cpu/history.h"
#include "klog/kevents.h"
#include "cmd/cmd.h"
#include "view/term.h"
#include "host/ethtool.h"
#include "view/top_render.h"

const char cmd_top_usage[] =
	"top [--once]\n"
	"    The node live, every second: each core's share and heatmap, the bursting core with\n"
	"    its task, kernel function and NIC queue, dying memcgs, ENA counters, kernel-log "
	"events;\n"
	"    from the agent's run dir, or sampling inline without one. q quits, p pauses; not a\n"
	"    terminal: one line a second.\n";

enum { OPT_ONCE = 256 };

/* The options of `top` (cmd_top), and the words after them. */
struct top_opts {
	bool once;		 /* --once */
	int argc;
	char **argv;
};

#define REFRESH_MS 1000
#define MEMCG_EVERY_MS 5000
#define SCREEN_MAX (1u << 20)

static volatile sig_atomic_t got_winch, got_stop;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_stop = 1;
}

struct top {
	struct cz_ctx *ctx;
	bool once;			/* --once: one screen or line */
	unsigned ncpu;
	struct top_model m;
	struct heartbeat *hb;
	struct burst_event *active;	/* inline: the sampler's bursts going on */
	struct cpu_sampler *inl;	/* NULL while an agent runs */
	uint8_t *heat;			/* TOP_HEAT_MAX * ncpu, inline only */
	size_t nheat;
	uint8_t *last;			/* ncpu: the inline sampler's last shares */
	struct history_series hist;
	bool have_hist;
	struct kevents *kev;
	uint64_t memcg_ms, ena_ms;
	struct ena_devices *ena_prev;
	bool have_ena_prev;
};

/* Is the agent that wrote the heartbeat alive? (check cpu's test, without its details) */
static const char *agent_state(struct top *t, uint64_t now, char *why, size_t size)
{
	int r = heartbeat_read(t->ctx->cfg.paths.run, t->hb);
	uint64_t limit = 3 * HISTORY_HEARTBEAT_MS;

	if (r == -ENOENT)
		return "no sampler";
	if (r < 0) {
		snprintf(why, size, "sampler heartbeat unreadable (%s)", strerror(-r));
		return why;
	}
	if (t->hb->stopped)
		return "sampler stopped";
	if (t->hb->time_ms > now + HISTORY_FUTURE_SLACK_MS)
		return "sampler heartbeat from the future";
	if (t->hb->time_ms + limit < now)
		return "sampler stale";
	return NULL;
}

static void heat_push(struct top *t, const uint8_t *row)
{
	if (t->nheat == TOP_HEAT_MAX) {
		memmove(t->heat, t->heat + t->ncpu, (TOP_HEAT_MAX - 1) * (size_t)t->ncpu);
		t->nheat--;
	}
	memcpy(t->heat + t->nheat * t->ncpu, row, t->ncpu);
	t->nheat++;
}

/* From the agent's files: shares and heat from the ring, bursts from the heartbeat. */
static void from_agent(struct top *t, uint64_t now)
{
	const struct cz_config *cfg = &t->ctx->cfg;
	uint64_t span = (uint64_t)TOP_HEAT_MAX * cfg->cpu.interval_ms;
	unsigned n;

	if (t->inl) { /* the agent is back: it samples, we do not */
		cpu_sampler_free(t->inl);
		t->inl = NULL;
	}
	if (t->have_hist)
		history_series_free(&t->hist);
	t->have_hist = history_read(cfg->paths.run, now > span ? now - span : 0, &t->hist) >= 0;
	t->m.ncpu = t->hb->ncpu;
	t->m.shares = NULL;
	t->m.heat = NULL;
	t->m.nheat = 0;
	if (t->have_hist && t->hist.n > 0) {
		n = t->hist.ncpu;
		t->m.ncpu = n;
		t->m.heat = t->hist.pct;
		t->m.nheat = t->hist.n;
		t->m.shares = t->hist.pct + (t->hist.n - 1) * (size_t)n;
	}
	t->m.bursts = t->hb->active;
	t->m.nbursts = t->hb->nactive;
	snprintf(t->m.source, sizeof(t->m.source), "agent pid %d (run dir %.300s)",
		 t->hb->host_pid ? t->hb->host_pid : t->hb->pid, cfg->paths.run);
}

/* Without an agent: our own sampler, stepped by the loop every cpu.interval. */
static int from_inline(struct top *t, const char *why)
{
	const struct cz_config *cfg = &t->ctx->cfg;
	char d[32];
	int r;

	if (!t->inl) {
		r = cpu_sampler_new(t->ctx, cfg->cpu.attribute_tasks, &t->inl);
		if (r < 0)
			return log_error_errno(r, "Failed to sample '%s/stat': %m",
					       cfg->paths.proc);
		t->ncpu = cpu_sampler_ncpu(t->inl);
		free(t->heat);
		free(t->last);
		t->heat = calloc((size_t)TOP_HEAT_MAX * t->ncpu, 1);
		t->last = malloc(t->ncpu);
		if (!t->heat || !t->last) {
			cpu_sampler_free(t->inl);
			t->inl = NULL;
			return log_error_errno(ENOMEM, "Failed to sample inline: %m");
		}
		memset(t->last, HISTORY_NO_SAMPLE, t->ncpu);
		t->nheat = 0;
	}
	t->m.ncpu = t->ncpu;
	t->m.shares = t->last;
	t->m.heat = t->heat;
	t->m.nheat = t->nheat;
	t->m.bursts = t->active;
	t->m.nbursts = cpu_sampler_active(t->inl, t->active, HISTORY_ACTIVE_MAX);
	snprintf(t->m.source, sizeof(t->m.source), "inline sampling every %s (no agent: %s)",
		 format_duration(cfg->cpu.interval_ms, d, sizeof(d)), why);
	return 0;
}

static void inline_step(struct top *t)
{
	if (!t->inl || cpu_sampler_step(t->inl, NULL, 0) < 0)
		return;
	memcpy(t->last, cpu_sampler_shares(t->inl), t->ncpu);
	heat_push(t, t->last);
}

static void read_memcg(struct top *t, uint64_t mono)
{
	struct memcg_reading r;
	struct npd_result res = { .status = NPD_UNKNOWN };

	if (t->memcg_ms && mono - t->memcg_ms < MEMCG_EVERY_MS)
		return;
	t->memcg_ms = mono;
	t->m.have_memcg = memcg_read(t->ctx, &r, &res) == NPD_OK;
	t->m.dying = r.dying;
	t->m.live = r.live;
	snprintf(t->m.memcg_note, sizeof(t->m.memcg_note), "%.150s",
		 t->m.have_memcg ? "" : res.msg);
}

/* The counters that moved since the last read, largest first. */
static void ena_moves(struct top *t, const struct ena_devices *now)
{
	t->m.nena = 0;
	for (size_t i = 0; i < now->n; i++) {
		const struct ethtool_devdump *a = &now->d[i], *b = NULL;

		for (size_t j = 0; j < t->ena_prev->n && !b; j++)
			if (streq(t->ena_prev->d[j].ifname, a->ifname))
				b = &t->ena_prev->d[j];
		for (size_t k = 0; b && k < a->n; k++) {
			const struct ethtool_stat *s =
				ethtool_dump_find_near(b, a->stats[k].name, k);
			uint64_t d;
			size_t at;

			if (!s || a->stats[k].value <= s->value)
				continue;
			d = a->stats[k].value - s->value;
			for (at = t->m.nena; at > 0 && t->m.ena[at - 1].delta < d; at--)
				;
			if (at >= TOP_ENA_MAX)
				continue;
			memmove(&t->m.ena[at + 1], &t->m.ena[at],
				(TOP_ENA_MAX - 1 - at) * sizeof(t->m.ena[0]));
			snprintf(t->m.ena[at].ifname, sizeof(t->m.ena[at].ifname), "%s", a->ifname);
			snprintf(t->m.ena[at].counter, sizeof(t->m.ena[at].counter), "%s",
				 a->stats[k].name);
			t->m.ena[at].delta = d;
			if (t->m.nena < TOP_ENA_MAX)
				t->m.nena++;
		}
	}
}

static void read_ena(struct top *t, uint64_t mono)
{
	static struct ena_devices cur; /* large: off the stack */
	uint64_t every = t->ctx->cfg.ena.min_read_interval_ms;
	struct ethtool_ops ops;
	char d[32];
	int r;

	every = every < MEMCG_EVERY_MS ? MEMCG_EVERY_MS : every;
	if (t->ena_ms && mono - t->ena_ms < every)
		return;
	t->ena_ms = mono;
	r = ethtool_ops_kernel(&ops);
	if (r >= 0) {
		r = ena_read_devices(&t->ctx->cfg, &ops, NULL, 0, &cur);
		ethtool_ops_kernel_close(&ops);
	}
	if (r < 0) {
		snprintf(t->m.ena_note, sizeof(t->m.ena_note), "cannot list interfaces (%s)",
			 strerror(-r));
		return;
	}
	if (cur.n == 0) {
		snprintf(t->m.ena_note, sizeof(t->m.ena_note), "no ENA interface");
		t->m.nena = 0;
	} else {
		if (t->have_ena_prev)
			ena_moves(t, &cur);
		snprintf(t->m.ena_note, sizeof(t->m.ena_note), "%zu interface%s, read every %s%s",
			 cur.n, cur.n == 1 ? "" : "s", format_duration(every, d, sizeof(d)),
			 t->have_ena_prev && !t->m.nena ? ", no counter moved" : "");
	}
	if (t->have_ena_prev)
		ena_devices_free(t->ena_prev);
	*t->ena_prev = cur;
	memset(&cur, 0, sizeof(cur));
	t->have_ena_prev = true;
}

static void read_klog(struct top *t)
{
	const struct kevents *k = t->kev;
	size_t first;

	t->m.nevents = 0;
	if (kevents_state_read(t->ctx->cfg.paths.run, &kevents_state, t->kev) != STATE_LOADED)
		return;
	first = k->n > TOP_EVENTS_MAX ? k->n - TOP_EVENTS_MAX : 0;
	for (size_t i = first; i < k->n; i++) {
		uint64_t s = k->ev[i].t_ms / 1000;

		snprintf(t->m.event_time[t->m.nevents], sizeof(t->m.event_time[0]),
			 "%02u:%02u:%02u", (unsigned)(s / 3600 % 24), (unsigned)(s / 60 % 60),
			 (unsigned)(s % 60));
		t->m.events[t->m.nevents++] = k->ev[i].msg;
	}
}

static void node_name(struct top *t)
{
	char buf[256];
	ssize_t n;

	if (t->ctx->cfg.kubernetes.node_name[0]) {
		snprintf(t->m.node, sizeof(t->m.node), "%.250s", t->ctx->cfg.kubernetes.node_name);
		return;
	}
	n = hostfs_read(&t->ctx->hf, HOSTFS_PROC, "sys/kernel/hostname", buf, sizeof(buf));
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(t->m.node, sizeof(t->m.node), "%.250s", buf);
	}
}

/* One refresh of the model. Returns 0 or -errno (inline sampling impossible). */
static int collect(struct top *t)
{
	uint64_t now = now_realtime_ms(), mono = now_monotonic_ms();
	char why[96];
	const char *stale = agent_state(t, now, why, sizeof(why));

	t->m.now_ms = now;
	if (!stale)
		from_agent(t, now);
	else if (from_inline(t, stale) < 0)
		return -EIO;
	read_memcg(t, mono);
	read_ena(t, mono);
	read_klog(t);
	return 0;
}

static void draw(struct top *t, bool tty, char *screen)
{
	ssize_t n;

	if (tty) {
		unsigned cols, rows;

		term_size(&cols, &rows);
		n = top_render(&t->m, cols, rows, true, screen, SCREEN_MAX);
	} else {
		n = top_render_line(&t->m, screen, SCREEN_MAX - 1);
		if (n >= 0)
			screen[n++] = '\n';
	}
	if (n > 0)
		term_write(screen, (size_t)n);
}

/* Keys waiting on the terminal: 'q' quits (returns 1), 'p' toggles the pause (returns 2). */
static int read_keys(struct top *t)
{
	char k[32];
	ssize_t n = read(STDIN_FILENO, k, sizeof(k));
	int r = 0;

	for (ssize_t i = 0; i < n; i++) {
		if (k[i] == 'q' || k[i] == 'Q')
			return 1;
		if (k[i] == 'p' || k[i] == 'P') {
			t->m.paused = !t->m.paused;
			r = 2;
		}
	}
	return r;
}

static void top_free(struct top *t)
{
	cpu_sampler_free(t->inl);
	if (t->have_hist)
		history_series_free(&t->hist);
	if (t->have_ena_prev)
		ena_devices_free(t->ena_prev);
	free(t->ena_prev);
	free(t->hb);
	free(t->active);
	free(t->heat);
	free(t->last);
	free(t->kev);
}

static int run(struct top *t, bool tty, char *screen)
{
	const struct cz_config *cfg = &t->ctx->cfg;
	uint64_t next = now_monotonic_ms(), step = next;
	int r;

	for (;;) {
		uint64_t now = now_monotonic_ms();
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
		int wait;

		if (got_stop)
			return 0;
		if (t->inl && now >= step) {
			inline_step(t);
			step += cfg->cpu.interval_ms;
			if (step <= now)
				step = now + cfg->cpu.interval_ms;
		}
		if (now >= next || got_winch) {
			if (now >= next) {
				if (!t->m.paused) {
					r = collect(t);
					if (r < 0)
						return r;
					if (t->inl && step > now + cfg->cpu.interval_ms)
						step = now;
				}
				next += REFRESH_MS;
				if (next <= now)
					next = now + REFRESH_MS;
			}
			got_winch = 0;
			draw(t, tty, screen);
			if (t->once)
				return 0;
		}
		now = now_monotonic_ms();
		wait = (int)((t->inl && step < next ? step : next) - (now < next ? now : next));
		if (wait < 0)
			wait = 0;
		r = poll(&pfd, tty ? 1 : 0, wait);
		if (r > 0 && (pfd.revents & POLLIN)) {
			int k = read_keys(t);

			if (k == 1)
				return 0;
			if (k == 2)
				draw(t, tty, screen); /* "[paused]" on or off at once */
		} else if (r > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
			return 0;
		}
	}
}

static int top_main(struct cz_ctx *ctx, const struct top_opts *o)
{
	struct top t = { .ctx = ctx, .once = o->once };
	_cleanup_free_ char *screen = malloc(SCREEN_MAX);
	bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	int r;

	if (o->argc > 0) {
		log_error("Unexpected argument '%s' (usage: top [--once])", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	t.hb = calloc(1, sizeof(*t.hb));
	t.active = calloc(HISTORY_ACTIVE_MAX, sizeof(*t.active));
	t.kev = calloc(1, sizeof(*t.kev));
	t.ena_prev = calloc(1, sizeof(*t.ena_prev));
	if (!screen || !t.hb || !t.active || !t.kev || !t.ena_prev) {
		top_free(&t);
		log_error("Failed to start top: out of memory");
		return CZ_EXIT_ERROR;
	}
	t.m.threshold_pct = ctx->cfg.cpu.threshold_pct;
	t.m.metric = cpustat_metric_short(ctx->cfg.cpu.metric);
	node_name(&t);
	term_signals(on_signal);
	if (tty && !o->once && term_enter() < 0)
		tty = false;
	r = run(&t, tty, screen);
	term_restore();
	top_free(&t);
	return r < 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}

int cmd_top(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		CMD_COMMON_OPTIONS,
	};
	struct top_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0) {
		switch (r) {
		case OPT_ONCE: o.once = true; break;
		}
	}
	r = cmd_args(env, r, argc, argv, cmd_top_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return top_main(&env->ctx, &o);
}
