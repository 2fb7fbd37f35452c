/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <time.h>

#include "report/report.h"
#include "report/svg.h"
#include "base/textsafe.h"
#include "base/util.h"

#define LEFT 80
#define TOP 56
#define BOTTOM 64

struct geom {
	uint64_t t0, t1;	/* window, ms */
	unsigned ncpu, cols;
	double rh, cw;		/* row height, cell width */
};

static double x_of(const struct geom *g, uint64_t t)
{
	if (t < g->t0)
		t = g->t0;
	if (t > g->t1)
		t = g->t1;
	return LEFT + (double)(t - g->t0) * SVG_PLOT_W / (double)(g->t1 - g->t0);
}

/* XML text: the five special characters as entities, UTF-8 kept, controls shown (textsafe.h). */
static void xml(FILE *out, const char *s)
{
	(void)textsafe_fputs(TEXTSAFE_XML, s, out);
}

/* Highest share per (core, column); HISTORY_NO_SAMPLE where nothing was sampled. */
static uint8_t *bin(const struct report *r, const struct geom *g)
{
	const struct history_series *h = &r->hist;
	uint8_t *cell = malloc((size_t)g->ncpu * g->cols);

	if (!cell)
		return NULL;
	memset(cell, HISTORY_NO_SAMPLE, (size_t)g->ncpu * g->cols);
	for (size_t i = 0; i < h->n; i++) {
		uint64_t col;

		if (h->t_ms[i] < g->t0 || h->t_ms[i] > g->t1)
			continue;
		col = (h->t_ms[i] - g->t0) * g->cols / (g->t1 - g->t0 + 1);
		for (unsigned c = 0; c < g->ncpu && c < h->ncpu; c++) {
			uint8_t v = h->pct[i * h->ncpu + c], *p = &cell[(size_t)c * g->cols + col];

			if (v != HISTORY_NO_SAMPLE && (*p == HISTORY_NO_SAMPLE || v > *p))
				*p = v > 100 ? 100 : v;
		}
	}
	return cell;
}

static int level(uint8_t v)
{
	return v == HISTORY_NO_SAMPLE ? -1 : v / 10;
}

static void row(FILE *out, const struct geom *g, const uint8_t *cells, unsigned c)
{
	double y = TOP + c * g->rh;
	unsigned every = g->rh >= 10 ? 1 : (unsigned)(12 / g->rh + 1);

	fprintf(out, "<g class=\"core\" id=\"core-%u\" data-cpu=\"%u\">", c, c);
	for (unsigned col = 0; col < g->cols;) {
		int l = level(cells[col]);
		unsigned end = col + 1;

		while (end < g->cols && level(cells[end]) == l)
			end++;
		if (l == -1)
			fprintf(out, "<rect class=\"cell none\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
				     "height=\"%.2f\"/>", LEFT + col * g->cw, y, (end - col) * g->cw, g->rh);
		else
			fprintf(out, "<rect class=\"cell s%d\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
				     "height=\"%.2f\"/>", l, LEFT + col * g->cw, y, (end - col) * g->cw,
				g->rh);
		col = end;
	}
	if (c % every == 0)
		fprintf(out, "<text class=\"label\" x=\"%d\" y=\"%.2f\">cpu%u</text>", LEFT - 6,
			y + g->rh / 2 + 4, c);
	fprintf(out, "</g>\n");
}

static void bursts(FILE *out, const struct report *r, const struct geom *g)
{
	unsigned k = 0;

	for (size_t i = 0; i < r->nbursts; i++) {
		const struct burst_event *ev = &r->bursts[i];
		double x1, x2, y;
		char a[16], b[16], cmd[96];
		uint64_t dur = ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;

		if (ev->cpu >= g->ncpu || ev->end_ms < g->t0 || ev->start_ms > g->t1)
			continue;
		x1 = x_of(g, ev->start_ms);
		x2 = x_of(g, ev->end_ms);
		if (x2 - x1 < 3)
			x2 = x1 + 3;
		y = TOP + ev->cpu * g->rh;
		fprintf(out, "<g class=\"marker burst\" id=\"burst-%u\" data-cpu=\"%u\"><title>cpu%u "
			     "burst %s..%s UTC %.1fs peak %.0f%%", k++, ev->cpu, ev->cpu,
			utc_hms(ev->start_ms, a, sizeof(a)), utc_hms(ev->end_ms, b, sizeof(b)),
			(double)dur / 1000.0, ev->peak_pct);
		if (ev->ntasks) {
			fputs(" top ", out);
			xml(out, ev->task[0].comm);
		}
		if (ev->irqs[0]) {
			fputs("; serves ", out);
			xml(out, ev->irqs);
		}
		fprintf(out, "; node ");
		xml(out, r->node[0] ? r->node : "-");
		fprintf(out, ": %s</title>", report_perf_cmd(ev->cpu, dur, cmd, sizeof(cmd)));
		fprintf(out, "<rect class=\"burst-box\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
			     "height=\"%.2f\"/><path class=\"burst-tick\" d=\"M%.2f %.2f l-5 -7 h10 z\"/>"
			     "</g>\n", x1, y - 1, x2 - x1, g->rh + 2, x1, y);
	}
}

static void resets(FILE *out, const struct report *r, const struct geom *g)
{
	unsigned k = 0;
	double bottom = TOP + g->ncpu * g->rh;

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
			fprintf(out, " ENA reset x%llu seen %s UTC: ", (unsigned long long)ev->resets,
				utc_hms(ev->t_ms, a, sizeof(a)));
			xml(out, ev->cause);
			fprintf(out, "</title><line class=\"reset-line\" x1=\"%.2f\" y1=\"%d\" "
				     "x2=\"%.2f\" y2=\"%.2f\"/><path class=\"reset-tick\" "
				     "d=\"M%.2f %d l-6 -10 h12 z\"/></g>\n", x, TOP - 4, x, bottom + 2, x,
				TOP - 4);
		}
	}
}

static void axis(FILE *out, const struct geom *g)
{
	static const uint64_t steps[] = { 1000, 5000, 10000, 30000, 60000, 120000, 300000, 600000,
					  900000, 1800000, 3600000, 7200000 };
	double y = TOP + g->ncpu * g->rh;
	uint64_t span = g->t1 - g->t0, step = steps[ARRAY_SIZE(steps) - 1];
	char a[16];

	for (size_t i = 0; i < ARRAY_SIZE(steps); i++)
		if (span / steps[i] <= 10) {
			step = steps[i];
			break;
		}
	fprintf(out, "<g class=\"axis\"><line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\"/>\n", LEFT,
		y, LEFT + SVG_PLOT_W, y);
	for (uint64_t t = (g->t0 + step - 1) / step * step; t <= g->t1; t += step)
		fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/><text "
			     "class=\"tick\" x=\"%.2f\" y=\"%.2f\">%s</text>\n", x_of(g, t), y, x_of(g, t),
			y + 5, x_of(g, t), y + 18, utc_hms(t, a, sizeof(a)));
	fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%.2f\">time (UTC)</text></g>\n",
		LEFT + SVG_PLOT_W / 2, y + 36);
}

static void head(FILE *out, const struct report *r, const struct geom *g, double h)
{
	char a[16], b[16];

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		     "2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
		     "data-ncpu=\"%u\">\n", LEFT + SVG_PLOT_W + 20, h, LEFT + SVG_PLOT_W + 20, h,
		g->ncpu);
	fputs("<style>text{font:11px sans-serif;fill:#222}.label{text-anchor:end}"
	      ".tick{text-anchor:middle}.axis line{stroke:#444}.cell{shape-rendering:crispEdges}"
	      ".none{fill:#d0d0d0}.s0{fill:#ffffff}.s1{fill:#ffe6e6}.s2{fill:#ffcccc}"
	      ".s3{fill:#ffb3b3}.s4{fill:#ff9999}.s5{fill:#ff8080}.s6{fill:#ff6666}"
	      ".s7{fill:#ff4d4d}.s8{fill:#f03030}.s9{fill:#d00000}.s10{fill:#a00000}"
	      ".burst-box{fill:none;stroke:#0050ff;stroke-width:2}.burst-tick{fill:#0050ff}"
	      ".reset-line{stroke:#00b000;stroke-width:3;stroke-dasharray:6 3}"
	      ".reset-tick{fill:#00b000}</style>\n", out);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f7f7f7\"/>\n<text x=\"%d\" "
		     "y=\"22\" style=\"font-size:15px\">cpuzombie: ", LEFT);
	xml(out, r->node[0] ? r->node : "-");
	fprintf(out, " per-core %s share %s..%s UTC, %u cores; blue: bursts >= %g%%, green: ENA "
		     "resets</text>\n", config_metric_name(r->cfg->cpu.metric),
		utc_hms(g->t0, a, sizeof(a)), utc_hms(g->t1, b, sizeof(b)), g->ncpu,
		r->cfg->cpu.threshold_pct);
}

int svg_write(const struct report *r, FILE *out)
{
	struct geom g = { 0 };
	_cleanup_free_ uint8_t *cells = NULL;
	uint64_t interval = r->cfg->cpu.interval_ms ? r->cfg->cpu.interval_ms : 250;

	g.ncpu = r->ncpu;
	if (g.ncpu == 0)
		return -ENODATA;
	g.t1 = r->now_ms;
	g.t0 = r->now_ms > r->cfg->cpu.history_ms ? r->now_ms - r->cfg->cpu.history_ms : 0;
	if (g.t1 <= g.t0)
		g.t0 = g.t1 - 1;
	g.cols = (unsigned)((g.t1 - g.t0) / interval);
	g.cols = g.cols < 1 ? 1 : g.cols > SVG_COLS_MAX ? SVG_COLS_MAX : g.cols;
	g.cw = (double)SVG_PLOT_W / g.cols;
	g.rh = (double)(SVG_PLOT_H_MAX / g.ncpu);
	g.rh = g.rh < 3 ? 3 : g.rh > 18 ? 18 : g.rh;
	cells = bin(r, &g);
	if (!cells)
		return -ENOMEM;
	head(out, r, &g, TOP + g.ncpu * g.rh + BOTTOM);
	fputs("<g id=\"cores\">\n", out);
	for (unsigned c = 0; c < g.ncpu; c++)
		row(out, &g, cells + (size_t)c * g.cols, c);
	fputs("</g>\n<g id=\"markers\">\n", out);
	bursts(out, r, &g);
	resets(out, r, &g);
	fputs("</g>\n", out);
	axis(out, &g);
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
