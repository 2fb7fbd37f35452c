/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include "host/irq.h"
#include "base/util.h"

static struct irq_line lines[64];
static struct irq_map map;

static void test_cpulist(void **state)
{
	uint64_t m[IRQ_MASK_WORDS], keep[IRQ_MASK_WORDS];

	assert_int_equal(irq_parse_cpulist("0-3,8,10-11\n", m, IRQ_MASK_WORDS), 7);
	assert_true(irq_mask_test(m, IRQ_MASK_WORDS, 3) && !irq_mask_test(m, IRQ_MASK_WORDS, 4));
	assert_true(irq_mask_test(m, IRQ_MASK_WORDS, 11));
	assert_int_equal(irq_parse_cpulist("191\n", m, IRQ_MASK_WORDS), 1);
	assert_int_equal(irq_parse_cpulist("\n", m, IRQ_MASK_WORDS), 0);
	memcpy(keep, m, sizeof(m));
	static const char *const bad[] = { "3-1", "a", "1,", ",1", "1--2", "1-", "1 2", "-1", "1\n2" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(irq_parse_cpulist(bad[i], m, IRQ_MASK_WORDS), -EINVAL);
	assert_memory_equal(m, keep, sizeof(m));
}

static void test_interrupts_names_queues(void **state)
{
	static char buf[65536];
	FILE *f = fopen(FIXTURES "/cpu/interrupts-ena-msix.txt", "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the excerpt has no header row; unnamed vectors 67-69 have trailing spaces only */
	assert_int_equal(irq_parse_interrupts(buf, lines, 64), 5);
	assert_int_equal(lines[0].irq, 65);
	assert_string_equal(lines[0].name, "ena-mgmnt@pci:0000:27:00.0");
	assert_string_equal(lines[0].chip, "PCI-MSIX-0000:27:00.0");
	assert_int_equal(lines[1].msix_index, 1);
	assert_string_equal(lines[1].name, "enp39s0-Tx-Rx-0");
	assert_string_equal(lines[2].name, "");
	assert_int_equal(lines[4].msix_index, 4);
	assert_int_equal(irq_parse_interrupts(" 45:   1  2  PCI-MSI-edge   eth0-TxRx-3\n", lines, 4), 1);
	assert_string_equal(lines[0].name, "eth0-TxRx-3"); /* old kernels: no hwirq column */
	assert_int_equal(irq_parse_interrupts(" 24: 1 IR-PCI-MSI 524289-edge eth1\n", lines, 4), 1);
	assert_int_equal(lines[0].msix_index, 1);
	assert_int_equal(irq_parse_interrupts(" x5: 1\n", lines, 4), 0); /* not numbered: skipped */
	assert_int_equal(irq_parse_interrupts(" 5 1 2\n", lines, 4), -EINVAL);
	assert_int_equal(irq_queue_from_name("enp39s0-Tx-Rx-12", "enp39s0", NULL), 12);
	assert_int_equal(irq_queue_from_name("eth0-TxRx-3", "eth0", NULL), 3);
	assert_int_equal(irq_queue_from_name("virtio2-input.0", "eth0", "virtio2"), 0);
	assert_int_equal(irq_queue_from_name("virtio2-config", "eth0", "virtio2"), -1);
	assert_int_equal(irq_queue_from_name("eth0-Tx-Rx-", "eth0", NULL), -1);
	assert_int_equal(irq_queue_from_name("eth01-Tx-Rx-1", "eth0", NULL), -1);
	assert_int_equal(irq_queue_from_name("", "eth0", NULL), -1);
}

static int map_of(const char *tree, const char *ifname)
{
	char p[512], s[512], buf[65536];
	struct hostfs hf;
	ssize_t len;
	int nl, r;

	snprintf(p, sizeof(p), "%s/cpu/%s/proc", FIXTURES, tree);
	snprintf(s, sizeof(s), "%s/cpu/%s/sys", FIXTURES, tree);
	assert_int_equal(hostfs_open(&hf, p, s), 0);
	len = hostfs_read(&hf, HOSTFS_PROC, "interrupts", buf, sizeof(buf));
	assert_true(len > 0);
	nl = irq_parse_interrupts(buf, lines, 64);
	assert_true(nl > 0);
	r = irq_map_read(&hf, ifname, lines, (size_t)nl, &map);
	hostfs_close(&hf);
	return r;
}

static void test_map_ena(void **state)
{
	char served[256];

	assert_int_equal(map_of("irq-ena", "enp39s0"), 5);
	assert_int_equal(map.source, IRQ_SOURCE_MSI);
	assert_string_equal(map.pci, "0000:27:00.0");
	assert_string_equal(map.driver, "ena");
	assert_int_equal(map.threaded, 0);
	assert_string_equal(map.irq[0].name, "ena-mgmnt@pci:0000:27:00.0");
	assert_int_equal(map.irq[0].queue, -1);
	assert_int_equal(map.irq[1].queue, 0);
	assert_string_equal(map.irq[1].cpulist, "1");
	assert_string_equal(map.irq[2].cpulist, "2"); /* empty effective: smp_affinity_list */
	assert_int_equal(map.irq[2].queue, -1);	      /* unnamed vector: no queue */
	assert_int_equal(irq_served_by(&map, 1, 1, served, sizeof(served)), 1);
	assert_string_equal(served, "enp39s0-Tx-Rx-0");
	assert_int_equal(irq_served_by(&map, 1, 3, served, sizeof(served)), 2);
	assert_string_equal(served, "irq68,irq69");
	assert_int_equal(map_of("irq-ena", "nope0"), -ENOENT);
	assert_int_equal(map_of("irq-ena", "../x"), -EINVAL);
}

static void test_map_virtio_walks_up(void **state)
{
	assert_int_equal(map_of("irq-virtio", "eth0"), 3);
	assert_string_equal(map.device, "virtio2");
	assert_string_equal(map.driver, "virtio_net");
	assert_string_equal(map.pci, "0000:00:03.0");
	assert_string_equal(map.irq[1].name, "virtio2-input.0");
	assert_int_equal(map.irq[1].queue, 0);
	assert_int_equal(map.irq[2].queue, 0);
	assert_int_equal(map_of("irq-virtio", "lo"), -ENOENT); /* virtual: no device */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_interrupts_names_queues),
		cmocka_unit_test(test_map_ena),
		cmocka_unit_test(test_map_virtio_walks_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
