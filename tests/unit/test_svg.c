/* SPDX-License-Identifier: MIT */
/* The SVG heatmap of a fixed node (golden file), its structure for 4 and 192 cores, merging of
 * equal cells, escaping, and markers outside the window. */
#include "testutil.h"

#include "report_fixture.h"
#include "report/svg.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void test_golden_structure(void **state)
{
	struct report *r = fx_report();
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
	report_free(r);
}

static void test_192_cores_merged_and_escaped(void **state)
{
	struct report *r = fx_report();
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
	report_free(r);
}

static void test_markers_outside_window_and_no_cores(void **state)
{
	struct report *r = fx_report();
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
	report_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_structure),
		cmocka_unit_test(test_192_cores_merged_and_escaped),
		cmocka_unit_test(test_markers_outside_window_and_no_cores),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
