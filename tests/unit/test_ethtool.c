/* SPDX-License-Identifier: MIT */
/* ethtool.c: live reads through the scripted seam, and the `ethtool -S` text parser. */
#include "testutil.h"

#include "ena_fake.h"
#include "host/ethtool.h"
#include "base/util.h"

static struct fake F;

static struct fake_dev *ena_dev(void)
{
	struct fake_dev *d;

	memset(&F, 0, sizeof(F));
	d = fake_add(&F, "eth0", "ena", "0000:00:05.0");
	fake_set(d, "total_resets", 2);
	fake_set(d, "suspected_poll_starvation", 1);
	fake_set(d, "queue_3_tx_xdp_short_linear_part", 9); /* 32 chars: no NUL in the kernel */
	return d;
}

static void test_read_basic(void **s)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { 0 };

	ena_dev();
	ops = fake_ops(&F);
	assert_int_equal(ethtool_read(&ops, "eth0", &d), 0);
	assert_string_equal(d.driver, "ena");
	assert_string_equal(d.bus_info, "0000:00:05.0");
	assert_string_equal(d.ifname, "eth0");
	assert_int_equal(d.n, 3);
	assert_string_equal(d.stats[0].name, "total_resets");
	assert_int_equal(d.stats[0].value, 2);
	/* 32-byte name without NUL: kept as the 31 characters ethtool prints */
	assert_string_equal(d.stats[2].name, "queue_3_tx_xdp_short_linear_par");
	assert_non_null(ethtool_dump_find(&d, "queue_3_tx_xdp_short_linear_part"));
	assert_int_equal(F.calls, 5); /* drvinfo, count, strings, stats, count again */
	ethtool_dump_free(&d);
}

/* The stat count changes on call @at: the read starts over and returns a consistent set. */
static void count_change_at(unsigned at)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { 0 };

	ena_dev();
	F.grow_at = at;
	ops = fake_ops(&F);
	assert_int_equal(ethtool_read_stats(&ops, "eth0", &d), 4);
	assert_int_equal(d.n, 4);
	assert_string_equal(d.stats[3].name, "queue_3_tx_cnt");
	assert_int_equal(d.stats[3].value, 7);
	assert_true(F.calls > 4);
	ethtool_dump_free(&d);
}

static void test_count_changes_before_gstrings(void **s) { count_change_at(2); }
static void test_count_changes_before_gstats(void **s) { count_change_at(3); }
static void test_count_changes_after_gstats(void **s) { count_change_at(4); }

static void test_count_never_settles(void **s)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { .n = 99 };

	ena_dev();
	F.grow_always = true;
	ops = fake_ops(&F);
	assert_int_equal(ethtool_read_stats(&ops, "eth0", &d), -EAGAIN);
	assert_int_equal(d.n, 99); /* untouched */
	assert_null(d.stats);
}

static void test_vanishes(void **s)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { .n = 99 };

	for (unsigned at = 1; at <= 5; at++) {
		ena_dev();
		F.vanish_at = at;
		ops = fake_ops(&F);
		assert_int_equal(ethtool_read(&ops, "eth0", &d), -ENODEV);
		assert_int_equal(d.n, 99);
	}
	ena_dev();
	ops = fake_ops(&F);
	assert_int_equal(ethtool_read(&ops, "eth1", &d), -ENODEV); /* renamed away */
}

static void test_bad_input(void **s)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { 0 };
	struct fake_dev *fd = ena_dev();

	ops = fake_ops(&F);
	assert_int_equal(ethtool_read(&ops, "../eth0", &d), -EINVAL);
	assert_int_equal(ethtool_read(&ops, "averyveryverylongname", &d), -EINVAL);
	assert_int_equal(F.calls, 0); /* never reached the kernel */
	fd->n = 0;
	assert_int_equal(ethtool_read(&ops, "eth0", &d), -EOPNOTSUPP);
}

static void test_key(void **s)
{
	struct ethtool_devdump d = { 0 };
	char k[48];

	assert_int_equal(ethtool_dump_key(&d, k, sizeof(k)), -EINVAL);
	snprintf(d.ifname, sizeof(d.ifname), "veth0");
	assert_int_equal(ethtool_dump_key(&d, k, sizeof(k)), 0);
	assert_string_equal(k, "if:veth0");
	snprintf(d.bus_info, sizeof(d.bus_info), "0000:00:05.0");
	assert_int_equal(ethtool_dump_key(&d, k, sizeof(k)), 0);
	assert_string_equal(k, "pci:0000:00:05.0");
	assert_int_equal(ethtool_dump_key(&d, k, 8), -ENOBUFS);
}

/* ---- text ------------------------------------------------------------------------------------- */

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 20);

	snprintf(path, sizeof(path), "%s/ena/%s", FIXTURES, name);
	f = fopen(path, "r");
	assert_non_null(f);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void parse_fixture(const char *name, size_t ndumps, const char *ifname, size_t nstats,
			  const char *stat, uint64_t value)
{
	size_t len, n = 0;
	char *text = slurp(name, &len);
	struct ethtool_devdump *d = NULL;
	struct ethtool_text_error e;
	const struct ethtool_stat *st;

	assert_int_equal(ethtool_parse_text(text, len, &d, &n, &e), 0);
	assert_int_equal(n, ndumps);
	assert_string_equal(d[0].ifname, ifname);
	assert_int_equal(d[0].n, nstats);
	st = ethtool_dump_find(&d[0], stat);
	assert_non_null(st);
	assert_int_equal(st->value, value);
	ethtool_dumps_free(d, n);
	free(text);
}

static void test_every_fixture_parses(void **s)
{
	parse_fixture("01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt", 1, "eth0", 34, "queue_0_rx_bytes",
		      64430725908ULL);
	parse_fixture("02-sliderule518-ens34-ena-2.14-2.15-allowance-exceeded.txt", 1, "ens34", 37,
		      "bw_in_allowance_exceeded", 3241329);
	parse_fixture("03-sliderule518-perqueue-excerpt-truncated-stat-name.txt", 1, "", 40,
		      "queue_3_tx_xdp_short_linear_par", 0);
	parse_fixture("09-awsdocs-troubleshooting-ethtool-S-example.txt", 1, "ethN", 16,
		      "conntrack_allowance_available", 450878);
	parse_fixture("11-awsdocs-allowance-metrics-example.txt", 1, "eth0", 6,
		      "conntrack_allowance_available", 136812);
	parse_fixture("12-awsdocs-ena-srd-metrics-example.txt", 1, "eth0", 5,
		      "pena_srd_eligible_tx_pkts", 0);
	parse_fixture("13-repost-x2gd-medium-ens5-allowance-exceeded.txt", 1, "ens5", 2,
		      "bw_out_allowance_exceeded", 281794);
	parse_fixture("14-local-veth-netns-ethtool-i-and-S.txt", 2, "veth-a", 10, "peer_ifindex", 2);
}

static void test_fixture_drvinfo(void **s)
{
	size_t len, n;
	char *text = slurp("01-ethq15-ena-1.2.0k-ethtool-i-and-S.txt", &len);
	struct ethtool_devdump *d;

	assert_int_equal(ethtool_parse_text(text, len, &d, &n, NULL), 0);
	assert_true(d[0].has_drvinfo);
	assert_string_equal(d[0].driver, "ena");
	assert_string_equal(d[0].version, "1.2.0k");
	assert_string_equal(d[0].bus_info, "0000:00:05.0");
	ethtool_dumps_free(d, n);
	free(text);
	text = slurp("14-local-veth-netns-ethtool-i-and-S.txt", &len);
	assert_int_equal(ethtool_parse_text(text, len, &d, &n, NULL), 0);
	assert_string_equal(d[1].ifname, "veth-b");
	assert_int_equal(ethtool_dump_find(&d[1], "peer_ifindex")->value, 3);
	assert_string_equal(d[0].driver, "veth");
	assert_false(d[1].has_drvinfo);
	ethtool_dumps_free(d, n);
	free(text);
}

struct bad_case {
	const char *text;
	int err;
	unsigned line;
	const char *what;
};

static void test_bad_text(void **s)
{
	static const struct bad_case cases[] = {
		{ "", -ENODATA, 0, "no ethtool statistics" },
		{ "NIC statistics:\n", -ENODATA, 0, "no ethtool statistics" },
		{ "hello world\n", -EINVAL, 1, "not an ethtool -S line" },
		{ "NIC statistics:\n     tx_timeout: 0\n     queue_", -EINVAL, 3, "not an ethtool" },
		{ "     tx_timeout: \n", -EINVAL, 1, "is not a counter" },
		{ "     tx_timeout: 12abc\n", -EINVAL, 1, "is not a counter" },
		{ "     tx_timeout: -1\n", -EINVAL, 1, "is not a counter" },
		{ "     tx_timeout: 99999999999999999999\n", -EINVAL, 1, "is not a counter" },
		{ "     a_name_that_is_longer_than_31_chars: 1\n", -EINVAL, 1, "longer than 31" },
		{ " 65:  8362  0  0  2  PCI-MSIX-0000:27:00.0   0-edge\n", -EINVAL, 1, "not a counter" },
		{ "     tx timeout: 1\n", -EINVAL, 1, "not an ethtool -S line" },
		{ "$ ethtool -S eth0\n  a: 1\n$ ethtool -S eth0\n  a: 2\n", -EINVAL, 3, "second" },
		{ "     a: 1\n\xff\xfe: 2\n", -EINVAL, 2, "not an ethtool -S line" },
		/* a counter twice in one dump (the verdict would depend on line order) */
		{ "NIC statistics:\n  tx_timeout: 5\n  b: 1\n  tx_timeout: 0\n", -EINVAL, 4,
		  "'tx_timeout' appears twice" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ethtool_devdump *d = (void *)0x1;
		size_t n = 77;
		struct ethtool_text_error e;

		assert_int_equal(ethtool_parse_text(cases[i].text, strlen(cases[i].text), &d, &n, &e),
				 cases[i].err);
		assert_ptr_equal(d, (void *)0x1); /* outputs untouched */
		assert_int_equal(n, 77);
		assert_int_equal(e.line, cases[i].line);
		if (!strstr(e.what, cases[i].what))
			fail_msg("case %zu: '%s' does not say '%s'", i, e.what, cases[i].what);
	}
	{
		const char nul[] = "  a: 1\n  b\0: 2\n";
		struct ethtool_devdump *d;
		size_t n;

		assert_int_equal(ethtool_parse_text(nul, sizeof(nul) - 1, &d, &n, NULL), -EINVAL);
	}
}

static void test_text_forms(void **s)
{
	/* tabs, CRLF, prompts of several shells, ellipsis, other commands' output skipped */
	const char *t = "root@node:~# ethtool -i eth1\r\ndriver: ena\r\nbus-info: 0000:00:06.0\r\n"
			"root@node:~# ethtool -S eth1\r\nNIC statistics:\r\n\ttotal_resets: 3\r\n"
			"\t...\r\n$ ip -br link\r\neth1 UP 02:00\r\n"
			"[ec2-user ~]$ ethtool --statistics eth2 | grep x\r\n  wd_expired: 4\r\n";
	struct ethtool_devdump *d;
	size_t n;

	assert_int_equal(ethtool_parse_text(t, strlen(t), &d, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].ifname, "eth1");
	assert_string_equal(d[0].bus_info, "0000:00:06.0");
	assert_int_equal(ethtool_dump_find(&d[0], "total_resets")->value, 3);
	assert_string_equal(d[1].ifname, "eth2");
	assert_int_equal(ethtool_dump_find(&d[1], "wd_expired")->value, 4);
	ethtool_dumps_free(d, n);
}

static void test_format_roundtrip(void **s)
{
	struct ethtool_ops ops;
	struct ethtool_devdump d = { 0 }, *back;
	char *buf = NULL;
	size_t size = 0, n;
	FILE *f = open_memstream(&buf, &size);

	ena_dev();
	ops = fake_ops(&F);
	assert_int_equal(ethtool_read(&ops, "eth0", &d), 0);
	assert_int_equal(ethtool_format_text(&d, f), 0);
	fclose(f);
	assert_int_equal(ethtool_parse_text(buf, size, &back, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(back[0].n, d.n);
	assert_string_equal(back[0].bus_info, d.bus_info);
	for (size_t i = 0; i < d.n; i++) {
		assert_string_equal(back[0].stats[i].name, d.stats[i].name);
		assert_int_equal(back[0].stats[i].value, d.stats[i].value);
	}
	ethtool_dumps_free(back, n);
	ethtool_dump_free(&d);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_basic),
		cmocka_unit_test(test_count_changes_before_gstrings),
		cmocka_unit_test(test_count_changes_before_gstats),
		cmocka_unit_test(test_count_changes_after_gstats),
		cmocka_unit_test(test_count_never_settles),
		cmocka_unit_test(test_vanishes),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_every_fixture_parses),
		cmocka_unit_test(test_fixture_drvinfo),
		cmocka_unit_test(test_bad_text),
		cmocka_unit_test(test_text_forms),
		cmocka_unit_test(test_format_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
