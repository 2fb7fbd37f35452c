/* SPDX-License-Identifier: MIT */
/* The SVG heatmap of a fixed node (golden file), its structure for 4 and 192 cores, merging of
 * equal cells, escaping, and markers outside the window; the span of a minute-old sampler, the
 * zoom panels' layout at 2 and 192 cores (golden files), their bound and order, and an explicit
 * window. */
#include "testutil.h"

#include "report_fixture.h"
#include "view/svg.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void test_golden_structure(void **state)
{
	struct node_model *r = fx_report();
	char *t = fx_render(svg_write, r);

	fx_golden("node1.svg", t);
	assert_int_equal(count(t, "<g class=\"core\""), 4);
	assert_int_equal(count(t, "<g class=\"marker burst\""), 3);
	assert_int_equal(count(t, "<g class=\"marker ena-reset\""), 1);
	assert_non_null(strstr(t, "data-cpu=\"3\"><title>cpu3 burst 11:55:00..11:55:10 UTC 10.0s"));
	assert_non_null(strstr(t, "perf record -C 3 -g -- sleep 20</title>"));
	assert_non_null(strstr(t, "class=\"cell none\""));	/* cpu2 offline at the start */
	assert_non_null(strstr(t, "class=\"cell s10\""));	/* the saturated cells */
	assert_int_equal(count(t, "<svg "), 1);
	assert_int_equal(count(t, "</svg>"), 1);
	free(t);
	node_model_free(r);
}

static void test_192_cores_merged_and_escaped(void **state)
{
	struct node_model *r = fx_report();
	unsigned ncpu = 192;
	char *t;

	history_series_free(&r->hist);
	r->hist.ncpu = r->ncpu = ncpu;
	r->hist.n = 900;
	r->hist.t_ms = calloc(900, sizeof(uint64_t));
	r->hist.pct = calloc(900 * ncpu, 1);
	for (size_t i = 0; i < 900; i++)
		r->hist.t_ms[i] = FX_NOW - (900 - i) * 1000; /* every 1.5 s column has a sample */
	r->hist.pct[450 * ncpu + 191] = 100;
	snprintf(r->node, sizeof(r->node), "<evil & \"node\">");
	t = fx_render(svg_write, r);
	assert_int_equal(count(t, "<g class=\"core\""), 192);
	/* idle rows are one rectangle each; cpu191 has three (idle, hot, idle) */
	assert_int_equal(count(t, "<rect class=\"cell"), 191 + 3);
	assert_null(strstr(t, "<evil"));
	assert_non_null(strstr(t, "&lt;evil &amp; &quot;node&quot;&gt;"));
	/* rows are 4 px (900 / 192), the picture stays under 1100 px high */
	assert_non_null(strstr(t, "height=\"888\""));
	free(t);
	node_model_free(r);
}

static void test_markers_outside_window_and_no_cores(void **state)
{
	struct node_model *r = fx_report();
	char *t;

	r->bursts[0].start_ms = FX_NOW - 7200000;	/* long before the window */
	r->bursts[0].end_ms = FX_NOW - 7100000;
	r->bursts[1].cpu = 99;				/* a core we have no row for */
	r->ena.ifs[0].hist.ev[0].t_ms = FX_NOW - 7200000;
	t = fx_render(svg_write, r);
	assert_int_equal(count(t, "<g class=\"marker burst\""), 1);
	assert_int_equal(count(t, "<g class=\"marker ena-reset\""), 0);
	free(t);
	r->ncpu = 0;
	assert_int_equal(svg_write(r, stdout), -ENODATA);
	node_model_free(r);
}

/*
 * A node whose sampler started a minute ago: @ncpu cores, 250 ms samples over 60 s ending at
 * FX_NOW, idle (2%) except each burst's core at 100% during it (a sample covers the interval
 * that ends at its stamp, as the sampler writes them).
 */
static struct node_model *fresh(unsigned ncpu, const unsigned *cpu, const uint64_t (*win)[2],
			    size_t nb)
{
	struct node_model *r = fx_report();
	size_t n = 240;

	fx_cfg.cpu.interval_ms = 250;
	history_series_free(&r->hist);
	r->hist.ncpu = r->ncpu = ncpu;
	r->hist.n = n;
	r->hist_rc = (int)n;
	r->hist.t_ms = calloc(n, sizeof(uint64_t));
	r->hist.pct = calloc(n * ncpu, 1);
	memset(r->hist.pct, 2, n * ncpu);
	for (size_t i = 0; i < n; i++) {
		r->hist.t_ms[i] = FX_NOW - (n - 1 - i) * 250;
		for (size_t b = 0; b < nb; b++)
			if (r->hist.t_ms[i] > win[b][0] && r->hist.t_ms[i] <= win[b][1])
				r->hist.pct[i * ncpu + cpu[b]] = 100;
	}
	r->ena.ifs[0].hist.n = 0; /* the reset is from before this sampler */
	for (size_t b = 0; b < nb; b++) {
		fx_burst(&r->bursts[b], cpu[b], win[b][0], win[b][1]);
		snprintf(r->bursts[b].task[0].comm, sizeof(r->bursts[b].task[0].comm), "dd");
	}
	r->nbursts = r->nlogged = nb;
	return r;
}

/* The number in `attr="N"` after @from in @t (-1 if none). */
static double attr_after(const char *t, const char *from, const char *attr)
{
	const char *p = strstr(t, from);
	char key[64];

	snprintf(key, sizeof(key), " %s=\"", attr);
	p = p ? strstr(p, key) : NULL;
	return p ? strtod(p + strlen(key), NULL) : -1;
}

static void test_fresh_sampler_spans_its_minute_2_cores(void **state)
{
	static const unsigned cpu[] = { 1 };
	static const uint64_t win[][2] = { { FX_NOW - 30000, FX_NOW - 25000 } };
	struct node_model *r = fresh(2, cpu, win, 1);
	char *t = fx_render(svg_write, r);
	double w;

	fx_golden("panels-2.svg", t);
	/* the overview spans the minute sampled, not the 15-minute ring: a 5 s burst is 1/12 of it */
	assert_non_null(strstr(t, "share 11:59:00..12:00:00 UTC, 2 cores"));
	w = attr_after(t, "<g class=\"marker burst\" id=\"burst-0\"", "width");
	assert_true(w > 1200 * 5.0 / 60 * 0.95 && w < 1200 * 5.0 / 60 * 1.05);
	assert_int_equal(count(t, "<g class=\"core\""), 2);
	/* ticks every 10 s, from the left edge to the right */
	assert_non_null(strstr(t, "<text class=\"tick\" x=\"80.00\" y=\"110.00\">11:59:00</text>"));
	assert_non_null(strstr(t, "<text class=\"tick\" x=\"1280.00\" y=\"110.00\">12:00:00</text>"));
	assert_int_equal(count(t, "y=\"110.00\">"), 7);
	/* the legend: eleven shades, no sample, burst, reset */
	assert_int_equal(count(t, "<rect class=\"swatch s"), 11);
	assert_non_null(strstr(t, "burst (&gt;= 90% for &gt;= 2.0s)"));
	/* one panel: both cores (the burst's and its one neighbour), 5 s either side at 250 ms */
	assert_int_equal(count(t, "<g class=\"zoom\""), 1);
	assert_non_null(strstr(t, "<g class=\"zoom\" id=\"zoom-0\" data-cpu=\"1\" data-burst=\"0\""));
	assert_int_equal(count(t, "<g class=\"zoom-core\""), 2);
	assert_non_null(strstr(t, "<text class=\"label hot\" x=\"74\" y=\"82.00\">cpu1</text>"));
	w = attr_after(t, "<rect class=\"zoom-box\"", "width");
	assert_true(w > 1200 * 5.0 / 15 * 0.99 && w < 1200 * 5.0 / 15 * 1.01);
	/* the hot row: idle, 20 saturated 20 px columns (5 s at 250 ms over 15 s), idle */
	assert_non_null(strstr(t, "<rect class=\"zcell s10\" x=\"480.00\" y=\"70.00\" width=\"400.00\""));
	assert_non_null(strstr(t, "cpu1 burst 11:59:30..11:59:35 UTC: 5.0s, peak 100%, mean 98% "));
	assert_non_null(strstr(t, "top tasks: dd[815] 4.5s, systemd[1] 0.1s; NIC queues on this "
				  "core: eth0-Tx-Rx-1"));
	assert_non_null(strstr(t, "perf record -C 1 -g -- sleep 10"));
	assert_non_null(strstr(t, "(x1070; problem at &gt;= 1000 dying and &gt;= x10)"));
	free(t);
	node_model_free(r);
}

static void test_panels_192_cores(void **state)
{
	static const unsigned cpu[] = { 0, 97, 191 };
	static const uint64_t win[][2] = { { FX_NOW - 50000, FX_NOW - 47000 },
					   { FX_NOW - 30000, FX_NOW - 20000 },
					   { FX_NOW - 6000, FX_NOW - 3000 } };
	struct node_model *r = fresh(192, cpu, win, 3);
	char *t = fx_render(svg_write, r);
	const char *z;

	fx_golden("panels-192.svg", t);
	assert_int_equal(count(t, "<g class=\"core\""), 192);
	assert_int_equal(count(t, "<rect class=\"cell"), 189 + 3 * 3); /* idle rows merged */
	/* newest first; rows clipped at the edges: cpu189..191, cpu95..99, cpu0..2 */
	assert_int_equal(count(t, "<g class=\"zoom\""), 3);
	z = strstr(t, "<g class=\"zoom\" id=\"zoom-0\" data-cpu=\"191\" data-burst=\"2\"");
	assert_non_null(z);
	assert_non_null(strstr(z, "<g class=\"zoom\" id=\"zoom-1\" data-cpu=\"97\" data-burst=\"1\""));
	assert_non_null(strstr(z, "<g class=\"zoom\" id=\"zoom-2\" data-cpu=\"0\" data-burst=\"0\""));
	assert_int_equal(count(t, "<g class=\"zoom-core\""), 3 + 5 + 3);
	assert_non_null(strstr(t, "<g class=\"zoom-core\" data-cpu=\"189\">"));
	assert_null(strstr(t, "<g class=\"zoom-core\" data-cpu=\"188\">"));
	assert_non_null(strstr(t, "<g class=\"zoom-core\" data-cpu=\"95\">"));
	assert_non_null(strstr(t, "<g class=\"zoom-core\" data-cpu=\"99\">"));
	assert_null(strstr(t, "<g class=\"zoom-core\" data-cpu=\"100\">"));
	/* the newest panel stops at the last sample: 5 s before, the burst, 3 s after */
	assert_non_null(strstr(t, "cpu191 burst 11:59:54..11:59:57 UTC: 3.0s"));
	/* the picture: overview rows of 4 px (888 px), panels of 3, 5 and 3 rows below it: each 54 px
	 * of labels, 16 px a row and 36 of axis: 888 + 138 + 170 + 138 */
	assert_non_null(strstr(t, "<g id=\"overview\"><rect class=\"section\" x=\"0\" y=\"0\" "
				  "width=\"1320\" height=\"888\"/>"));
	assert_non_null(strstr(t, "height=\"1334\" viewBox=\"0 0 1320 1334\""));
	free(t);
	node_model_free(r);
}

static void test_panels_bounded_and_window(void **state)
{
	unsigned cpu[10];
	uint64_t win[10][2];
	struct node_model *r;
	char *t, *buf = NULL;
	size_t size = 0;
	FILE *f;

	for (unsigned i = 0; i < 10; i++) {
		cpu[i] = i % 2;
		win[i][0] = FX_NOW - 58000 + i * 5000;
		win[i][1] = win[i][0] + 2500;
	}
	r = fresh(2, cpu, (const uint64_t(*)[2])win, 10);
	t = fx_render(svg_write, r);
	assert_int_equal(count(t, "<g class=\"marker burst\""), 10);
	assert_int_equal(count(t, "<g class=\"zoom\""), SVG_ZOOM_MAX);
	assert_non_null(strstr(t, "id=\"zoom-0\" data-cpu=\"1\" data-burst=\"9\""));
	assert_non_null(strstr(t, "id=\"zoom-3\" data-cpu=\"0\" data-burst=\"6\""));
	free(t);

	/* a window asked for (--since/--until): the title and the markers follow it */
	f = open_memstream(&buf, &size);
	assert_int_equal(svg_write_span(r, FX_NOW - 20000, FX_NOW - 10000, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "share 11:59:40..11:59:50 UTC"));
	assert_int_equal(count(buf, "<g class=\"marker burst\""), 2);
	assert_int_equal(count(buf, "<g class=\"zoom\""), 2);
	free(buf);
	assert_int_equal(svg_write_span(r, FX_NOW, FX_NOW - 1, stdout), -EINVAL);
	node_model_free(r);
}

static void test_span_auto(void **state)
{
	struct node_model *r = fx_report();
	uint64_t a, b;

	svg_span_auto(r, &a, &b);	/* one interval before the first sample .. the last */
	assert_int_equal(a, FX_NOW - 901000);
	assert_int_equal(b, FX_NOW - 1000);
	r->bursts[2].end_ms = FX_NOW;	/* going on past the last sample */
	svg_span_auto(r, &a, &b);
	assert_int_equal(b, FX_NOW);
	r->hist.n = 0;			/* no sampler: the configured ring up to now */
	svg_span_auto(r, &a, &b);
	assert_int_equal(a, FX_NOW - fx_cfg.cpu.history_ms);
	assert_int_equal(b, FX_NOW);
	r->hist.n = 1;			/* one sample: one interval */
	svg_span_auto(r, &a, &b);
	assert_int_equal(b - a, 1000);
	node_model_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_structure),
		cmocka_unit_test(test_192_cores_merged_and_escaped),
		cmocka_unit_test(test_markers_outside_window_and_no_cores),
		cmocka_unit_test(test_fresh_sampler_spans_its_minute_2_cores),
		cmocka_unit_test(test_panels_192_cores),
		cmocka_unit_test(test_panels_bounded_and_window),
		cmocka_unit_test(test_span_auto),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
