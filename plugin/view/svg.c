/* SPDX-License-Identifier: MIT */
/*
 * The SVG heatmap (svg.h): the overview, its legend and the zoom panels. Each section is a
 * translated <g> with its own origin and frame, so the drawing code works in section
 * coordinates (one <svg> element: nested ones are not for every SVG consumer).
 */
#include <errno.h>
#include <time.h>

#include "klog/kevents.h"
#include "ena/klog_incident.h"
#include "node/model.h"
#include "view/svg.h"
#include "base/textsafe.h"
#include "base/util.h"

#define LEFT 80
#define TOP 56
#define BOTTOM 64
#define WIDTH (LEFT + SVG_PLOT_W + 40)
#define ZOOM_HEAD 54		/* px of a panel's three label lines */
#define ZOOM_RH 16		/* px per core row in a panel */
#define ZOOM_AXIS 36		/* px of a panel's time axis, and the gap after it */

/* A time window drawn on SVG_PLOT_W px for rows c0..c0+nrows-1, from the section's origin. */
struct plot {
	uint64_t t0, t1;	/* window, ms (t1 > t0) */
	uint64_t interval;	/* the sampler's, ms */
	unsigned c0, nrows, cols;
	double top, rh, cw;	/* y of the first row, row height, cell width */
};

static double x_of(const struct plot *p, uint64_t t)
{
	if (t < p->t0)
		t = p->t0;
	if (t > p->t1)
		t = p->t1;
	return LEFT + (double)(t - p->t0) * SVG_PLOT_W / (double)(p->t1 - p->t0);
}

/* XML text: the five special characters as entities, UTF-8 kept, controls shown (textsafe.h). */
static void xml(FILE *out, const char *s)
{
	(void)textsafe_fputs(TEXTSAFE_XML, s, out);
}

static uint64_t interval_of(const struct node_model *r)
{
	if (r->hist_interval_ms) /* a coarser history tier (report --since) */
		return r->hist_interval_ms;
	return r->cfg->cpu.interval_ms ? r->cfg->cpu.interval_ms : 250;
}

/*
 * Highest share per (row, column); HISTORY_NO_SAMPLE where nothing was sampled. A sample is the
 * share over the interval that ended at its time stamp, so it paints every column that interval
 * overlaps: sampler jitter never leaves a grey column between two samples, and a burst is never
 * averaged away.
 */
static uint8_t *paint(const struct node_model *r, const struct plot *p)
{
	const struct history_series *h = &r->hist;
	uint64_t span = p->t1 - p->t0;
	uint8_t *cell = malloc((size_t)p->nrows * p->cols);

	if (!cell)
		return NULL;
	memset(cell, HISTORY_NO_SAMPLE, (size_t)p->nrows * p->cols);
	for (size_t i = 0; i < h->n; i++) {
		uint64_t t = h->t_ms[i], prev, a, b;

		prev = i > 0 && t - h->t_ms[i - 1] <= 2 * p->interval ? h->t_ms[i - 1]
		       : t > p->interval			      ? t - p->interval
								      : 0;
		if (t <= p->t0 || prev >= p->t1)
			continue;
		a = prev > p->t0 ? (prev - p->t0) * p->cols / span : 0;
		b = ((t < p->t1 ? t : p->t1) - p->t0) * p->cols;
		b = (b + span - 1) / span; /* columns a .. b-1 start before t */
		for (unsigned k = 0; k < p->nrows; k++) {
			unsigned c = p->c0 + k;
			uint8_t v = c < h->ncpu ? h->pct[i * h->ncpu + c] : HISTORY_NO_SAMPLE;

			if (v == HISTORY_NO_SAMPLE)
				continue;
			v = v > 100 ? 100 : v;
			for (uint64_t col = a; col < b && col < p->cols; col++) {
				uint8_t *q = &cell[(size_t)k * p->cols + col];

				if (*q == HISTORY_NO_SAMPLE || v > *q)
					*q = v;
			}
		}
	}
	return cell;
}

static int level(uint8_t v)
{
	return v == HISTORY_NO_SAMPLE ? -1 : v / 10;
}

/* One row's cells, equal neighbours merged into one rectangle of class @cls. */
static void cells_row(FILE *out, const struct plot *p, const uint8_t *cells, double y,
		      const char *cls)
{
	for (unsigned col = 0; col < p->cols;) {
		int l = level(cells[col]);
		unsigned end = col + 1;

		while (end < p->cols && level(cells[end]) == l)
			end++;
		if (l == -1)
			fprintf(out, "<rect class=\"%s none\"", cls);
		else
			fprintf(out, "<rect class=\"%s s%d\"", cls, l);
		fprintf(out, " x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>",
			LEFT + col * p->cw, y, (end - col) * p->cw, p->rh);
		col = end;
	}
}

static void row(FILE *out, const struct plot *p, const uint8_t *cells, unsigned c)
{
	double y = p->top + c * p->rh;
	unsigned every = p->rh >= 10 ? 1 : (unsigned)(12 / p->rh + 1);

	fprintf(out, "<g class=\"core\" id=\"core-%u\" data-cpu=\"%u\">", c, c);
	cells_row(out, p, cells, y, "cell");
	if (c % every == 0)
		fprintf(out, "<text class=\"label\" x=\"%d\" y=\"%.2f\">cpu%u</text>", LEFT - 6,
			y + p->rh / 2 + 4, c);
	fprintf(out, "</g>\n");
}

static uint64_t burst_ms(const struct burst_event *ev)
{
	return ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;
}

/* The burst is drawn: its core has a row and it overlaps the window. */
static bool burst_shown(const struct burst_event *ev, const struct plot *p, unsigned ncpu)
{
	return ev->cpu < ncpu && ev->end_ms >= p->t0 && ev->start_ms <= p->t1;
}

static void bursts(FILE *out, const struct node_model *r, const struct plot *g)
{
	unsigned k = 0;

	for (size_t i = 0; i < r->nbursts; i++) {
		const struct burst_event *ev = &r->bursts[i];
		double x1, x2, y;
		char a[16], b[16], cmd[96];
		uint64_t dur = burst_ms(ev);

		if (!burst_shown(ev, g, g->nrows))
			continue;
		x1 = x_of(g, ev->start_ms);
		x2 = x_of(g, ev->end_ms);
		if (x2 - x1 < 3)
			x2 = x1 + 3;
		y = g->top + ev->cpu * g->rh;
		fprintf(out,
			"<g class=\"marker burst\" id=\"burst-%u\" data-cpu=\"%u\"><title>cpu%u "
			"burst %s..%s UTC %.1fs peak %.0f%%",
			k++, ev->cpu, ev->cpu, utc_hms(ev->start_ms, a, sizeof(a)),
			utc_hms(ev->end_ms, b, sizeof(b)), (double)dur / 1000.0, ev->peak_pct);
		if (ev->ntasks) {
			fputs(" top ", out);
			xml(out, ev->task[0].comm);
		}
		if (ev->hot[0]) { /* the burst's recorded profile: its hottest kernel function */
			fputs(" in ", out);
			xml(out, ev->hot);
			fprintf(out, " %u%%", ev->hot_pct);
		}
		if (ev->irqs[0]) {
			fputs("; serves ", out);
			xml(out, ev->irqs);
		}
		fprintf(out, "; node ");
		xml(out, r->node[0] ? r->node : "-");
		fprintf(out, ": %s</title>", report_perf_cmd(ev->cpu, dur, cmd, sizeof(cmd)));
		fprintf(out,
			"<rect class=\"burst-box\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
			"height=\"%.2f\"/><path class=\"burst-tick\" d=\"M%.2f %.2f l-5 -7 h10 "
			"z\"/>"
			"</g>\n",
			x1, y - 1, x2 - x1, g->rh + 2, x1, y);
	}
}

static void resets(FILE *out, const struct node_model *r, const struct plot *g)
{
	unsigned k = 0;
	double bottom = g->top + g->nrows * g->rh;

	for (size_t i = 0; i < r->ena.n; i++) {
		const struct ena_ifstate *s = &r->ena.ifs[i];

		for (size_t e = 0; e < s->hist.n; e++) {
			const struct ena_event *ev = &s->hist.ev[e];
			double x = x_of(g, ev->t_ms);
			char a[16];

			if (ev->t_ms < g->t0 || ev->t_ms > g->t1)
				continue;
			fprintf(out, "<g class=\"marker ena-reset\" id=\"reset-%u\"><title>", k++);
			xml(out, s->base.ifname);
			fprintf(out,
				" ENA reset x%llu seen %s UTC: ", (unsigned long long)ev->resets,
				utc_hms(ev->t_ms, a, sizeof(a)));
			xml(out, ev->cause);
			fprintf(out, "</title><line class=\"reset-line\" x1=\"%.2f\" y1=\"%.2f\" "
				     "x2=\"%.2f\" y2=\"%.2f\"/><path class=\"reset-tick\" "
				     "d=\"M%.2f %.2f l-6 -10 h12 z\"/></g>\n", x, g->top - 4, x,
				bottom + 2, x, g->top - 4);
		}
	}
}

/* What the kernel logged (the agent's kernel-event log): a diamond on the row of the CPU a
 * lockup or stall names, a purple tick above the cores for an ENA reset line. */
static void kernel(FILE *out, const struct node_model *r, const struct plot *g)
{
	const struct kevents *k = r->kev;
	unsigned n = 0;

	for (size_t i = 0; k && i < k->n; i++) {
		struct klog_event e;
		uint64_t t = k->ev[i].t_ms;
		char a[16], d[256];
		double x = x_of(g, t);

		if (t < g->t0 || t > g->t1 || kevents_event(k, i, &e) != 1 || e.cont ||
		    !(klog_is_lockup(&e) || klog_kind_is_reset(e.kind)))
			continue;
		fprintf(out, "<g class=\"marker kernel %s\" id=\"kernel-%u\"><title>%s UTC ",
			klog_kind_name(e.kind), n++, utc_hms(t, a, sizeof(a)));
		xml(out, klog_event_describe(&e, d, sizeof(d)));
		fputs(" (kernel log)</title>", out);
		if (e.cpu >= 0 && (unsigned)e.cpu >= g->c0 && (unsigned)e.cpu < g->c0 + g->nrows &&
		    !klog_kind_is_ena(e.kind))
			fprintf(out, "<path class=\"kernel-cpu\" fill=\"#8000c0\" stroke=\"#fff\" "
				     "d=\"M%.2f %.2f l6 %.2f l-6 %.2f l-6 %.2f z\"/>", x,
				g->top + (e.cpu - g->c0) * g->rh, g->rh / 2, g->rh / 2, -g->rh / 2);
		else
			fprintf(out,
				"<path class=\"kernel-tick\" fill=\"#8000c0\" d=\"M%.2f %.2f l-5 "
				"-9 h10 z\"/>",
				x, g->top - 14);
		fputs("</g>\n", out);
	}
}

/* A tick label: seconds while steps are below a minute, the date once the span passes a day. */
static char *tick_label(uint64_t t, uint64_t step, uint64_t span, char *buf, size_t size)
{
	time_t s = (time_t)(t / 1000);
	struct tm tm;

	if (!gmtime_r(&s, &tm))
		snprintf(buf, size, "?");
	else if (step >= 86400000)
		snprintf(buf, size, "%02d-%02d", tm.tm_mon + 1, tm.tm_mday);
	else if (span > 86400000)
		snprintf(buf, size, "%02d-%02d %02d:%02d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min);
	else if (step >= 60000)
		snprintf(buf, size, "%02d:%02d", tm.tm_hour, tm.tm_min);
	else
		snprintf(buf, size, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
	return buf;
}

/* Ticks at round times, as many as fit (at most ten across the span). */
static void axis(FILE *out, const struct plot *p, double y, const char *cls)
{
	static const uint64_t steps[] = { 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000,
					  300000, 600000, 900000, 1800000, 3600000, 7200000,
					  10800000, 21600000, 43200000, 86400000 };
	uint64_t span = p->t1 - p->t0, step = steps[ARRAY_SIZE(steps) - 1], t;
	char a[32];

	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		if (span / steps[i] <= 10) {
			step = steps[i];
			break;
		}
	while (span / step > 10)
		step *= 2; /* beyond the table: more than ten days */
	fprintf(out, "<g class=\"%s\"><line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\"/>\n", cls,
		LEFT, y, LEFT + SVG_PLOT_W, y);
	t = p->t0 - p->t0 % step;
	if (t < p->t0)
		t = t > UINT64_MAX - step ? p->t1 + 1 : t + step; /* times near the end of time */
	for (unsigned n = 0; t <= p->t1 && t >= p->t0 && n <= 11; n++, t += step) {
		fprintf(out,
			"<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/><text "
			"class=\"tick\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
			x_of(p, t), y, x_of(p, t), y + 5, x_of(p, t), y + 18,
			tick_label(t, step, span, a, sizeof(a)));
		if (t > UINT64_MAX - step)
			break;
	}
	fputs("</g>\n", out);
}

/* Under the overview's axis: what the shades and marks mean. */
static void legend(FILE *out, const struct node_model *r, double y)
{
	double x = LEFT + 250;

	fprintf(out, "<g class=\"legend\"><text x=\"%d\" y=\"%.2f\">shade: highest %s share in "
		     "the cell</text>", LEFT, y + 9, config_metric_name(r->cfg->cpu.metric));
	fprintf(out, "<text class=\"label\" x=\"%.2f\" y=\"%.2f\">0%%</text>", x - 4, y + 9);
	for (int l = 0; l <= 10; l++)
		fprintf(out, "<rect class=\"swatch s%d\" x=\"%.2f\" y=\"%.2f\" width=\"18\" "
			     "height=\"10\"/>", l, x + l * 18, y);
	x += 11 * 18;
	fprintf(out, "<text x=\"%.2f\" y=\"%.2f\">100%%</text>", x + 4, y + 9);
	x += 50;
	fprintf(out,
		"<rect class=\"swatch none\" x=\"%.2f\" y=\"%.2f\" width=\"18\" height=\"10\"/>"
		"<text x=\"%.2f\" y=\"%.2f\">no sample</text>",
		x, y, x + 22, y + 9);
	x += 90;
	fprintf(out,
		"<rect class=\"burst-box\" x=\"%.2f\" y=\"%.2f\" width=\"18\" height=\"10\"/>"
		"<text x=\"%.2f\" y=\"%.2f\">burst (&gt;= %g%% for &gt;= %.1fs)</text>",
		x, y, x + 22, y + 9, r->cfg->cpu.threshold_pct,
		(double)r->cfg->cpu.min_burst_ms / 1000.0);
	x += 190;
	fprintf(out, "<line class=\"reset-line\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>"
		     "<text x=\"%.2f\" y=\"%.2f\">ENA reset</text>", x + 9, y - 2, x + 9, y + 12,
		x + 22, y + 9);
	fprintf(out, "<text class=\"label\" x=\"%d\" y=\"%.2f\">time (UTC)</text></g>\n",
		LEFT + SVG_PLOT_W, y + 9);
}

static void style(FILE *out)
{
	fputs("<style>text{font:11px sans-serif;fill:#222}.label{text-anchor:end}"
	      ".tick{text-anchor:middle}.axis line,.zaxis line{stroke:#444}"
	      ".cell,.zcell{shape-rendering:crispEdges}.swatch{stroke:#888;stroke-width:.5}"
	      ".none{fill:#d0d0d0}.s0{fill:#ffffff}.s1{fill:#ffe6e6}.s2{fill:#ffcccc}"
	      ".s3{fill:#ffb3b3}.s4{fill:#ff9999}.s5{fill:#ff8080}.s6{fill:#ff6666}"
	      ".s7{fill:#ff4d4d}.s8{fill:#f03030}.s9{fill:#d00000}.s10{fill:#a00000}"
	      ".burst-box{fill:none;stroke:#0050ff;stroke-width:2}.burst-tick{fill:#0050ff}"
	      ".zoom-box{fill:none;stroke:#0050ff;stroke-width:2}.hot{font-weight:bold}"
	      ".ztitle{font-size:13px;font-weight:bold}.zframe{fill:#ffffff;stroke:#bbb}"
	      ".reset-line{stroke:#00b000;stroke-width:3;stroke-dasharray:6 3}"
	      ".reset-tick{fill:#00b000}.section{fill:#f7f7f7;stroke:#ddd}</style>\n", out);
}

/* The title, and the memcg numbers as the check line and the report text spell them. */
static void head(FILE *out, const struct node_model *r, const struct plot *g)
{
	char a[16], b[16], ratio[32];

	fprintf(out, "<text x=\"%d\" y=\"22\" style=\"font-size:15px\">cpuzombie: ", LEFT);
	xml(out, r->node[0] ? r->node : "-");
	fprintf(out, " per-core %s share %s..%s UTC, %u cores; blue: bursts >= %g%%, green: ENA "
		     "resets%s</text>\n", config_metric_name(r->cfg->cpu.metric),
		utc_hms(g->t0, a, sizeof(a)), utc_hms(g->t1, b, sizeof(b)), g->nrows,
		r->cfg->cpu.threshold_pct, r->kev ? ", purple: kernel log" : "");
	if (r->memcg_rc == NPD_OK)
		fprintf(out,
			"<text class=\"memcg\" x=\"%d\" y=\"40\">memcg: %llu dying vs %llu live "
			"(%s; problem at &gt;= %llu dying and &gt;= x%g)</text>\n",
			LEFT, (unsigned long long)r->memcg.dying, (unsigned long long)r->memcg.live,
			format_ratio(memcg_ratio(&r->memcg), ratio, sizeof(ratio)),
			(unsigned long long)r->cfg->memcg.min_dying, r->cfg->memcg.max_ratio);
}

/* The overview section, @h px high. Returns 0 or -ENOMEM. */
static int overview(FILE *out, const struct node_model *r, const struct plot *g, double h)
{
	_cleanup_free_ uint8_t *cells = paint(r, g);
	double y = g->top + g->nrows * g->rh;

	if (!cells)
		return -ENOMEM;
	fprintf(out, "<g id=\"overview\"><rect class=\"section\" x=\"0\" y=\"0\" width=\"%d\" "
		     "height=\"%.0f\"/>\n", WIDTH, h);
	head(out, r, g);
	fputs("<g id=\"cores\">\n", out);
	for (unsigned c = 0; c < g->nrows; c++)
		row(out, g, cells + (size_t)c * g->cols, c);
	fputs("</g>\n<g id=\"markers\">\n", out);
	bursts(out, r, g);
	resets(out, r, g);
	kernel(out, r, g);
	fputs("</g>\n", out);
	axis(out, g, y, "axis");
	legend(out, r, y + 40);
	fputs("</g>\n", out);
	return 0;
}

/* ---- zoom panels ---- */

/* The overview marker id of burst @i (bursts() numbers the ones it draws, in order). */
static unsigned marker_id(const struct node_model *r, const struct plot *g, size_t i)
{
	unsigned k = 0;

	for (size_t j = 0; j < i; j++)
		k += burst_shown(&r->bursts[j], g, g->nrows);
	return k;
}

/* Up to SVG_ZOOM_MAX bursts drawn in the overview, the latest-ending first. Returns the count. */
static size_t pick_zooms(const struct node_model *r, const struct plot *g, size_t *ret)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nbursts; i++) {
		size_t k = 0;

		if (!burst_shown(&r->bursts[i], g, g->nrows))
			continue;
		while (k < n && r->bursts[ret[k]].end_ms >= r->bursts[i].end_ms)
			k++;
		if (k == SVG_ZOOM_MAX)
			continue;
		n += n < SVG_ZOOM_MAX;
		memmove(&ret[k + 1], &ret[k], (n - 1 - k) * sizeof(*ret)); /* the last falls off */
		ret[k] = i;
	}
	return n;
}

/* The panel's window and rows: the burst padded, within the overview's window. */
static struct plot zoom_plot(const struct node_model *r, const struct plot *g,
			     const struct burst_event *ev)
{
	struct plot p = { .interval = g->interval, .rh = ZOOM_RH, .top = ZOOM_HEAD };
	uint64_t w;

	p.t0 = ev->start_ms > SVG_ZOOM_PAD_MS ? ev->start_ms - SVG_ZOOM_PAD_MS : 0;
	p.t1 = ev->end_ms + SVG_ZOOM_PAD_MS;
	p.t0 = p.t0 < g->t0 && ev->start_ms >= g->t0 ? g->t0 : p.t0;
	p.t1 = p.t1 > g->t1 && ev->end_ms <= g->t1 ? g->t1 : p.t1;
	if (p.t1 <= p.t0)
		p.t1 = p.t0 + 1;
	w = (p.t1 - p.t0) / p.interval;
	p.cols = w < 1 ? 1 : w > SVG_PLOT_W ? SVG_PLOT_W : (unsigned)w;
	p.cw = (double)SVG_PLOT_W / p.cols;
	p.c0 = ev->cpu > SVG_ZOOM_NEIGHBOURS ? ev->cpu - SVG_ZOOM_NEIGHBOURS : 0;
	p.nrows = ev->cpu + SVG_ZOOM_NEIGHBOURS + 1 < r->ncpu ? ev->cpu + SVG_ZOOM_NEIGHBOURS + 1
							       : r->ncpu;
	p.nrows -= p.c0;
	return p;
}

static double zoom_height(const struct plot *p)
{
	return ZOOM_HEAD + p->nrows * ZOOM_RH + ZOOM_AXIS;
}

/* The three label lines: what, how long and how hot; who ran there; what to do next. */
static void zoom_labels(FILE *out, const struct node_model *r, const struct burst_event *ev,
			bool ongoing)
{
	char a[16], b[16], tasks[256], cmd[96];
	uint64_t dur = burst_ms(ev);

	fprintf(out,
		"<text class=\"ztitle\" x=\"%d\" y=\"16\">cpu%u burst %s..%s UTC: %.1fs%s, "
		"peak %.0f%%, mean %.0f%% %s</text>\n",
		LEFT, ev->cpu, utc_hms(ev->start_ms, a, sizeof(a)),
		utc_hms(ev->end_ms, b, sizeof(b)), (double)dur / 1000.0, ongoing ? " so far" : "",
		ev->peak_pct, ev->mean_pct,
		config_metric_name(ongoing ? r->cfg->cpu.metric
					   : ev->metric)); /* not in heartbeat */
	fprintf(out, "<text x=\"%d\" y=\"32\">top tasks: ", LEFT);
	xml(out, ev->ntasks ? report_format_tasks(ev, tasks, sizeof(tasks)) : "- (not sampled)");
	fputs("; NIC queues on this core: ", out);
	xml(out, ev->irqs[0] ? ev->irqs : "none");
	fprintf(out, "</text>\n<text x=\"%d\" y=\"46\">", LEFT);
	if (ev->hot[0]) { /* the recorded profile: where the kernel spent the burst */
		fputs("hot kernel function: ", out);
		xml(out, ev->hot);
		fprintf(out, " (%u%% of the profile); ", ev->hot_pct);
	} else if (ev->why[0]) {
		fputs("no profile: ", out);
		xml(out, ev->why);
		fputs("; ", out);
	}
	if (ev->stack[0]) {
		fputs("kernel stack of the top task: ", out);
		xml(out, ev->stack);
		fputs("; ", out);
	}
	fputs("next one: ", out);
	xml(out, r->node[0] ? r->node : "-");
	fprintf(out, " %s</text>\n", report_perf_cmd(ev->cpu, dur, cmd, sizeof(cmd)));
}

static int zoom(FILE *out, const struct node_model *r, const struct plot *g, size_t i, unsigned k,
		double y)
{
	const struct burst_event *ev = &r->bursts[i];
	struct plot p = zoom_plot(r, g, ev);
	_cleanup_free_ uint8_t *cells = paint(r, &p);
	double h = zoom_height(&p), rows_h = p.nrows * p.rh, x1, x2;

	if (!cells)
		return -ENOMEM;
	fprintf(out,
		"<g class=\"zoom\" id=\"zoom-%u\" data-cpu=\"%u\" data-burst=\"%u\" "
		"transform=\"translate(0 %.0f)\"><rect class=\"section\" x=\"0\" y=\"0\" "
		"width=\"%d\" height=\"%.0f\"/>\n",
		k, ev->cpu, marker_id(r, g, i), y, WIDTH, h);
	zoom_labels(out, r, ev, i >= r->nlogged);
	fprintf(out, "<rect class=\"zframe\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\"/>\n",
		LEFT - 1, p.top - 1, SVG_PLOT_W + 2, rows_h + 2);
	for (unsigned c = 0; c < p.nrows; c++) {
		fprintf(out, "<g class=\"zoom-core\" data-cpu=\"%u\">", p.c0 + c);
		cells_row(out, &p, cells + (size_t)c * p.cols, p.top + c * p.rh, "zcell");
		fprintf(out, "<text class=\"label%s\" x=\"%d\" y=\"%.2f\">cpu%u</text></g>\n",
			p.c0 + c == ev->cpu ? " hot" : "", LEFT - 6,
			p.top + c * p.rh + p.rh / 2 + 4, p.c0 + c);
	}
	x1 = x_of(&p, ev->start_ms);
	x2 = x_of(&p, ev->end_ms);
	fprintf(out, "<rect class=\"zoom-box\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
		     "height=\"%.2f\"/>\n", x1, p.top + (ev->cpu - p.c0) * p.rh - 1,
		x2 - x1 < 3 ? 3 : x2 - x1, p.rh + 2);
	axis(out, &p, p.top + rows_h, "zaxis");
	fputs("</g>\n", out);
	return 0;
}

/* ---- the document ---- */

void svg_span_auto(const struct node_model *r, uint64_t *ret_from_ms, uint64_t *ret_to_ms)
{
	const struct history_series *h = &r->hist;
	uint64_t iv = interval_of(r), from, to;

	if (h->n == 0) {
		to = r->now_ms;
		from = to > r->cfg->cpu.history_ms ? to - r->cfg->cpu.history_ms : 0;
	} else {
		from = h->t_ms[0] > iv ? h->t_ms[0] - iv : 0;
		to = h->t_ms[h->n - 1];
		for (size_t i = 0; i < r->nbursts; i++) /* going on past the last sample */
			if (r->bursts[i].start_ms <= to && r->bursts[i].end_ms > to)
				to = r->bursts[i].end_ms;
		if (to > r->now_ms && r->now_ms > h->t_ms[h->n - 1])
			to = r->now_ms;
	}
	if (to <= from)
		to = from + iv;
	*ret_from_ms = from;
	*ret_to_ms = to;
}

int svg_write_span(const struct node_model *r, uint64_t from_ms, uint64_t to_ms, FILE *out)
{
	struct plot g = { .interval = interval_of(r), .top = TOP };
	size_t pick[SVG_ZOOM_MAX], n;
	double h, y;
	uint64_t w;

	if (from_ms == 0 && to_ms == 0)
		svg_span_auto(r, &from_ms, &to_ms);
	if (to_ms <= from_ms)
		return -EINVAL;
	if (r->ncpu == 0)
		return -ENODATA;
	g.t0 = from_ms;
	g.t1 = to_ms;
	g.nrows = r->ncpu;
	w = (g.t1 - g.t0) / g.interval;
	g.cols = w < 1 ? 1 : w > SVG_COLS_MAX ? SVG_COLS_MAX : (unsigned)w;
	g.cw = (double)SVG_PLOT_W / g.cols;
	g.rh = (double)(SVG_PLOT_H_MAX / g.nrows);
	g.rh = g.rh < 3 ? 3 : g.rh > 18 ? 18 : g.rh;
	n = pick_zooms(r, &g, pick);
	y = h = TOP + g.nrows * g.rh + BOTTOM;
	for (size_t k = 0; k < n; k++) {
		struct plot p = zoom_plot(r, &g, &r->bursts[pick[k]]);

		y += zoom_height(&p);
	}
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		     "2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
		     "data-ncpu=\"%u\" data-zooms=\"%zu\">\n", WIDTH, y, WIDTH, y, g.nrows, n);
	style(out);
	if (overview(out, r, &g, h) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct plot p = zoom_plot(r, &g, &r->bursts[pick[k]]);

		if (zoom(out, r, &g, pick[k], (unsigned)k, h) < 0)
			return -ENOMEM;
		h += zoom_height(&p);
	}
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}

int svg_write(const struct node_model *r, FILE *out)
{
	return svg_write_span(r, 0, 0, out);
}
