/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "view/top_render.h"

static const char *next_esc(const char *p)
{
	return strchr(p, '\033');
}

/* Every ESC in the screen starts one of our own sequences: CSI H, K, J, or an SGR. */
static void assert_only_our_escapes(const char *s)
{
	for (const char *p = next_esc(s); p; p = next_esc(p + 1)) {
		size_t n = 2;

		assert_int_equal(p[1], '[');
		while (p[n] && (p[n] == ';' || (p[n] >= '0' && p[n] <= '9')))
			n++;
		assert_non_null(strchr("HKJm", p[n]));
	}
}

static void model(struct top_model *m, struct burst_event *b, uint8_t *shares, uint8_t *heat)
{
	*m = (struct top_model){ .now_ms = 1000 * (3600 + 62), .threshold_pct = 90,
				 .metric = "sys", .ncpu = 2, .shares = shares, .heat = heat,
				 .nheat = 3, .bursts = b, .nbursts = 1, .have_memcg = true,
				 .dying = 12840, .live = 300 };
	snprintf(m->source, sizeof(m->source), "agent pid 7");
	snprintf(m->node, sizeof(m->node), "n\033]0;x\a1");
	*b = (struct burst_event){ .cpu = 1, .start_ms = m->now_ms - 4200, .end_ms = m->now_ms - 200,
				   .peak_pct = 100, .ntasks = 1, .hot_pct = 94, .hot = "read_zero",
				   .irqs = "eth0-Tx-Rx-1" };
	snprintf(b->task[0].comm, sizeof(b->task[0].comm), "\033]0;pwn\a\033[2J");
	b->task[0].stime_ms = 3000;
	shares[0] = 3;
	shares[1] = 100;
	memcpy(heat, (uint8_t[]){ 0, 100, 50, 100, HISTORY_NO_SAMPLE, 99 }, 6);
}

static void test_screen_is_safe_and_cut(void **state)
{
	static char buf[1 << 16];
	struct top_model m;
	struct burst_event b;
	uint8_t shares[2], heat[6];
	ssize_t n;

	model(&m, &b, shares, heat);
	m.events[0] = "ena 0000:00:05.0 eth0: \033[31mreset";
	snprintf(m.event_time[0], sizeof(m.event_time[0]), "01:01:00");
	m.nevents = 1;
	n = top_render(&m, 200, 30, true, buf, sizeof(buf));
	assert_true(n > 0);
	assert_only_our_escapes(buf);
	assert_non_null(strstr(buf, "cpuzombie top  n\\e]0;x\\x071  01:01:02 UTC  agent pid 7"));
	assert_non_null(strstr(buf, "*cpu1   [####################] 100% |@@%|"));
	assert_non_null(strstr(buf, "> burst 4.2s+ peak 100% top \\e]0;pwn\\x07\\e[2J 3.0s in "
				    "read_zero 94% serves eth0-Tx-Rx-1"));
	assert_non_null(strstr(buf, "memcg: 12840 dying / 300 live"));
	assert_non_null(strstr(buf, "01:01:00 ena 0000:00:05.0 eth0: \\e[31mreset"));
	/* without color: no SGR, still no raw escape from the names */
	n = top_render(&m, 200, 30, false, buf, sizeof(buf));
	assert_true(n > 0);
	assert_null(strstr(buf, "\033[1"));
	assert_only_our_escapes(buf);
	/* 30 columns: every row cut at 30 characters */
	n = top_render(&m, 30, 30, false, buf, sizeof(buf));
	assert_true(n > 0);
	for (char *row = strstr(buf, "\033[H") + 3, *e; (e = strstr(row, "\033[K")); row = e + 5)
		assert_true(e - row <= 30);
	/* 6 rows: the bursting core first, the rest is cut */
	n = top_render(&m, 200, 6, false, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "*cpu1"));
	assert_int_equal(top_render(&m, 200, 30, false, buf, 10), -ENOBUFS);
}

static void test_line_is_plain(void **state)
{
	char buf[4096];
	struct top_model m;
	struct burst_event b;
	uint8_t shares[2], heat[6];

	model(&m, &b, shares, heat);
	assert_true(top_render_line(&m, buf, sizeof(buf)) > 0);
	assert_null(strchr(buf, '\033'));
	assert_null(strchr(buf, '\a'));
	assert_null(strchr(buf, '\n'));
	assert_string_equal(buf, "01:01:02 cpu0 3% cpu1 100%*; cpu1 burst 4.2s+ peak 100% top "
				 "\\e]0;pwn\\x07\\e[2J 3.0s in read_zero 94% serves eth0-Tx-Rx-1; "
				 "memcg: 12840 dying / 300 live; ENA:; agent pid 7");
	assert_int_equal(top_heat_cell(0), ' ');
	assert_int_equal(top_heat_cell(1), '.');
	assert_int_equal(top_heat_cell(100), '@');
	assert_int_equal(top_heat_cell(HISTORY_NO_SAMPLE), '?');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_screen_is_safe_and_cut),
		cmocka_unit_test(test_line_is_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
