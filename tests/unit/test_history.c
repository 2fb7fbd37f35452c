/* SPDX-License-Identifier: MIT */
/* cpu/history: the ring read back is a series in time order, as every renderer assumes (a
 * heatmap column is computed from t - first), whatever the stamps in write order did. */
#include "testutil.h"

#include "cpu/history.h"
#include "node/model.h"
#include "view/render.h"

static void write_ring(const char *dir, const uint64_t *t, size_t n)
{
	struct history_ring ring;
	uint8_t row[2] = { 7, 9 };

	assert_int_equal(history_ring_open(dir, 2, 60000, 1000, &ring), 0);
	for (size_t i = 0; i < n; i++) {
		row[0] = (uint8_t)i;
		assert_int_equal(history_ring_add(&ring, t[i], row), 0);
	}
	history_ring_close(&ring);
}

/* The clock stepped back between two runs of the sampler: the newest samples are kept, and the
 * older ones stamped after them are left out. */
static void test_time_order_after_a_clock_step_back(void **state)
{
	static const uint64_t t[] = { 5000, 6000, 7000, 8000, 3000, 4000, 4500 };
	struct history_series s;
	char dir[128];

	(void)state;
	tmptree_make(dir, sizeof(dir), "history");
	write_ring(dir, t, sizeof(t) / sizeof(t[0]));
	assert_int_equal(history_read(dir, 0, &s), 3);
	assert_int_equal(s.t_ms[0], 3000);
	assert_int_equal(s.t_ms[1], 4000);
	assert_int_equal(s.t_ms[2], 4500);
	assert_int_equal(s.pct[2 * 2], 6); /* the last written */
	history_series_free(&s);
	tmptree_remove(dir);
}

/* A report's heatmap over a hand-made series whose stamps go back stays in its cells. */
static void test_heatmap_of_a_series_out_of_order(void **state)
{
	struct cz_config cfg;
	struct node_model *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	config_defaults(&cfg);
	r = node_model_new(&cfg, 10000);
	r->ncpu = r->hist.ncpu = 2;
	r->hist.n = 3;
	r->hist.t_ms = calloc(3, sizeof(uint64_t));
	r->hist.pct = calloc(6, 1);
	r->hist.t_ms[0] = 9000, r->hist.t_ms[1] = 1000, r->hist.t_ms[2] = 9500;
	assert_int_equal(report_heatmap(r, 40, f), 0);
	fclose(f);
	free(buf);
	node_model_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_order_after_a_clock_step_back),
		cmocka_unit_test(test_heatmap_of_a_series_out_of_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
