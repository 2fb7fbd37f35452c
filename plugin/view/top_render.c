/* SPDX-License-Identifier: MIT */
/* `cpuzombie top`'s screen, pure (top_render.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/textsafe.h"
#include "base/util.h"
#include "view/top_render.h"

#define LINE_MAX_BYTES 4096
#define BAR_WIDTH 20
#define SGR_HOT "\033[1;37;41m"	/* the bursting core: bold white on red */
#define SGR_DIM "\033[2m"
#define SGR_OFF "\033[0m"

struct out {
	char *buf;
	size_t size, off;
	bool full;
	unsigned rows_left; /* rows the screen has left: the rest is not drawn */
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || o->off + n + 1 > o->size) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->off, s, n);
	o->off += n;
	o->buf[o->off] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* The byte length of @s's first @cols characters (UTF-8: continuation bytes are free). */
static size_t cut_cols(const char *s, unsigned cols)
{
	size_t i = 0;
	unsigned n = 0;

	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue;
		if (n == cols)
			break;
		n++;
	}
	return i;
}

/* One screen row: @text (already safe) cut at @cols, wrapped in @sgr when colored. */
static void row(struct out *o, const char *text, unsigned cols, const char *sgr, bool color)
{
	if (o->rows_left == 0)
		return;
	o->rows_left--;
	if (color && sgr)
		puts_(o, sgr);
	put(o, text, cut_cols(text, cols));
	if (color && sgr)
		puts_(o, SGR_OFF);
	puts_(o, "\033[K\r\n");
}

/* appendf into a row buffer (a cut row is fine: rows are cut at the width anyway) */
static void addf(char *line, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void addf(char *line, size_t size, const char *fmt, ...)
{
	size_t l = strlen(line);
	va_list ap;

	if (l + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(line + l, size - l, fmt, ap);
	va_end(ap);
}

char top_heat_cell(uint8_t share)
{
	static const char ramp[] = " .:-=+*#%@";

	if (share == HISTORY_NO_SAMPLE)
		return '?';
	if (share > 100)
		share = 100;
	return ramp[share * 9 / 100 + (share > 0 && share * 9 / 100 == 0)];
}

static const struct burst_event *burst_of(const struct top_model *m, unsigned cpu)
{
	for (size_t i = 0; i < m->nbursts; i++)
		if (m->bursts[i].cpu == cpu)
			return &m->bursts[i];
	return NULL;
}

/* "burst 4.2s peak 100% top dd 3.0s in read_zero 94% serves virtio2-input.0" */
static void burst_text(const struct burst_event *b, uint64_t now_ms, char *line, size_t size)
{
	char comm[4 * sizeof(b->task[0].comm)], hot[4 * sizeof(b->hot)], irqs[4 * sizeof(b->irqs)];
	/* going on: its length so far is to now (the heartbeat's end is up to 2 s old) */
	uint64_t end = now_ms > b->end_ms && now_ms - b->end_ms < 3 * HISTORY_HEARTBEAT_MS ?
			       now_ms : b->end_ms;
	uint64_t dur = end > b->start_ms ? end - b->start_ms : 0;

	addf(line, size, "burst %.1fs+ peak %.0f%%", (double)dur / 1000.0, b->peak_pct);
	if (b->ntasks)
		addf(line, size, " top %s %.1fs",
		     textsafe(TEXTSAFE_TEXT, b->task[0].comm, comm, sizeof(comm)),
		     (double)b->task[0].stime_ms / 1000.0);
	if (b->hot[0])
		addf(line, size, " in %s %u%%", textsafe(TEXTSAFE_TEXT, b->hot, hot, sizeof(hot)),
		     b->hot_pct);
	else if (b->why[0])
		addf(line, size, " (no profile: %s)",
		     textsafe(TEXTSAFE_TEXT, b->why, hot, sizeof(hot)));
	if (b->irqs[0])
		addf(line, size, " serves %s",
		     textsafe(TEXTSAFE_TEXT, b->irqs, irqs, sizeof(irqs)));
}

static void core_row(struct out *o, const struct top_model *m, unsigned c, unsigned cols,
		     bool color)
{
	char line[LINE_MAX_BYTES] = "", bar[BAR_WIDTH + 1];
	uint8_t s = m->shares ? m->shares[c] : HISTORY_NO_SAMPLE;
	const struct burst_event *b = burst_of(m, c);
	size_t used, hw, from;
	unsigned fill = s == HISTORY_NO_SAMPLE ? 0 : (s > 100 ? 100 : s) * BAR_WIDTH / 100;

	for (unsigned i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	if (s == HISTORY_NO_SAMPLE)
		addf(line, sizeof(line), "%scpu%-3u [%s]   - |", b ? "*" : " ", c, bar);
	else
		addf(line, sizeof(line), "%scpu%-3u [%s] %3u%% |", b ? "*" : " ", c, bar, s);
	used = strlen(line);
	hw = cols > used + 1 ? cols - used - 1 : 0;
	if (hw > m->nheat)
		hw = m->nheat;
	from = m->nheat - hw;
	for (size_t i = from; i < m->nheat && strlen(line) + 2 < sizeof(line); i++) {
		size_t l = strlen(line);

		line[l] = top_heat_cell(m->heat[i * m->ncpu + c]);
		line[l + 1] = '\0';
	}
	addf(line, sizeof(line), "|");
	row(o, line, cols, b ? SGR_HOT : NULL, color);
	if (b) {
		char bl[LINE_MAX_BYTES] = "     > ";

		burst_text(b, m->now_ms, bl, sizeof(bl));
		row(o, bl, cols, SGR_HOT, color);
	}
}

static void title(const struct top_model *m, char *line, size_t size)
{
	char node[4 * sizeof(m->node)], src[4 * sizeof(m->source)];
	uint64_t s = m->now_ms / 1000;

	addf(line, size, "cpuzombie top  %s  %02u:%02u:%02u UTC  %s%s",
	     m->node[0] ? textsafe(TEXTSAFE_TEXT, m->node, node, sizeof(node)) : "-",
	     (unsigned)(s / 3600 % 24), (unsigned)(s / 60 % 60), (unsigned)(s % 60),
	     textsafe(TEXTSAFE_TEXT, m->source, src, sizeof(src)), m->paused ? "  [paused]" : "");
}

static void memcg_text(const struct top_model *m, char *line, size_t size)
{
	if (m->have_memcg)
		addf(line, size, "memcg: %" PRIu64 " dying / %" PRIu64 " live", m->dying, m->live);
	else
		addf(line, size, "memcg: %s", m->memcg_note[0] ? m->memcg_note : "-");
}

static void ena_text(const struct top_model *m, char *line, size_t size)
{
	char a[4 * 32], b[4 * 64];

	addf(line, size, "ENA:");
	for (size_t i = 0; i < m->nena; i++)
		addf(line, size, " %s %s +%" PRIu64 "%s",
		     textsafe(TEXTSAFE_TEXT, m->ena[i].ifname, a, sizeof(a)),
		     textsafe(TEXTSAFE_TEXT, m->ena[i].counter, b, sizeof(b)), m->ena[i].delta,
		     i + 1 < m->nena ? "," : "");
	if (m->ena_note[0])
		addf(line, size, "%s%s", m->nena ? "; " : " ",
		     textsafe(TEXTSAFE_TEXT, m->ena_note, b, sizeof(b)));
}

ssize_t top_render(const struct top_model *m, unsigned cols, unsigned rows, bool color,
		   char *buf, size_t size)
{
	struct out o = { buf, size, 0, false, rows ? rows : 24 };
	char line[LINE_MAX_BYTES];
	unsigned left, fixed;

	if (size < 64)
		return -ENOBUFS;
	buf[0] = '\0';
	if (cols == 0)
		cols = 80;
	if (rows == 0)
		rows = 24;
	puts_(&o, "\033[H");
	line[0] = '\0';
	title(m, line, sizeof(line));
	row(&o, line, cols, color ? "\033[1m" : NULL, color);
	line[0] = '\0';
	addf(line, sizeof(line), "q quit  p pause   share of %s, hot >= %.0f%%; heat: oldest left",
	     m->metric ? m->metric : "-", m->threshold_pct);
	row(&o, line, cols, SGR_DIM, color);
	/* rows for the sections below: memcg, ENA, the kernel log's title and its events */
	fixed = 3 + (unsigned)(m->nevents ? m->nevents : 1);
	left = rows > 2 + fixed ? rows - 2 - fixed : 0;
	if (left < 2 && m->nbursts && rows >= 4)
		left = 2; /* a bursting core before the sections below it */
	/* the bursting cores first when not every core fits, then the others in order */
	if ((size_t)m->ncpu + m->nbursts > left) {
		for (size_t i = 0; i < m->nbursts && left >= 2; i++) {
			if (m->bursts[i].cpu >= m->ncpu ||
			    burst_of(m, m->bursts[i].cpu) != &m->bursts[i])
				continue;
			core_row(&o, m, m->bursts[i].cpu, cols, color);
			left -= 2;
		}
		for (unsigned c = 0; c < m->ncpu && left > 0; c++) {
			if (burst_of(m, c))
				continue;
			core_row(&o, m, c, cols, color);
			left--;
		}
	} else {
		for (unsigned c = 0; c < m->ncpu; c++)
			core_row(&o, m, c, cols, color);
	}
	line[0] = '\0';
	memcg_text(m, line, sizeof(line));
	row(&o, line, cols, NULL, color);
	line[0] = '\0';
	ena_text(m, line, sizeof(line));
	row(&o, line, cols, NULL, color);
	row(&o, "kernel log:", cols, NULL, color);
	if (!m->nevents)
		row(&o, "  (no event recorded)", cols, SGR_DIM, color);
	for (size_t i = 0; i < m->nevents; i++) {
		char msg[4 * 200];

		line[0] = '\0';
		addf(line, sizeof(line), "  %s %s", m->event_time[i],
		     textsafe(TEXTSAFE_TEXT, m->events[i] ? m->events[i] : "", msg, sizeof(msg)));
		row(&o, line, cols, NULL, color);
	}
	puts_(&o, "\033[J");
	if (o.full)
		return -ENOBUFS;
	return (ssize_t)o.off;
}

ssize_t top_render_line(const struct top_model *m, char *buf, size_t size)
{
	char line[LINE_MAX_BYTES] = "";
	uint64_t s = m->now_ms / 1000;

	addf(line, sizeof(line), "%02u:%02u:%02u", (unsigned)(s / 3600 % 24),
	     (unsigned)(s / 60 % 60), (unsigned)(s % 60));
	for (unsigned c = 0; c < m->ncpu; c++) {
		uint8_t v = m->shares ? m->shares[c] : HISTORY_NO_SAMPLE;

		if (v == HISTORY_NO_SAMPLE)
			addf(line, sizeof(line), " cpu%u -", c);
		else
			addf(line, sizeof(line), " cpu%u %u%%%s", c, v, burst_of(m, c) ? "*" : "");
	}
	for (size_t i = 0; i < m->nbursts && i < TOP_BURSTS_MAX; i++) {
		addf(line, sizeof(line), "; cpu%u ", m->bursts[i].cpu);
		burst_text(&m->bursts[i], m->now_ms, line, sizeof(line));
	}
	addf(line, sizeof(line), "; ");
	memcg_text(m, line, sizeof(line));
	addf(line, sizeof(line), "; ");
	ena_text(m, line, sizeof(line));
	if (m->nevents) {
		char msg[4 * 200];

		addf(line, sizeof(line), "; klog %s %s", m->event_time[m->nevents - 1],
		     textsafe(TEXTSAFE_TEXT,
			      m->events[m->nevents - 1] ? m->events[m->nevents - 1] : "", msg,
			      sizeof(msg)));
	}
	{
		char src[4 * sizeof(m->source)];

		addf(line, sizeof(line), "; %s",
		     textsafe(TEXTSAFE_TEXT, m->source, src, sizeof(src)));
	}
	snprintf(buf, size, "%s", line);
	return (ssize_t)strlen(buf);
}
