/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the live SIOCETHTOOL path against a hostile "kernel". Every answer of the seam
 * (struct ethtool_ops) comes from the fuzz input: the interface listing (names of any bytes),
 * error codes, GDRVINFO strings without a NUL, GSSET_INFO masks and counts (0, huge, changing
 * between calls), GSTRINGS/GSTATS lengths that disagree with what was asked, names of 32 bytes
 * with no NUL. Like the kernel (net/ethtool/ioctl.c), GSTRINGS/GSTATS write as many entries as
 * the device has now - capped here at the headroom ethtool.c documents it allocates, since
 * beyond that the kernel ABI itself offers no protection. Then ENA verdicts over two such reads.
 * Invariants: every name is NUL-terminated within ETHTOOL_NAME_MAX, counts are bounded.
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "ena/check_ena.h"
#include "ena/ena.h"
#include "host/ethtool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct src {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct src *s)
{
	uint8_t v = 0;

	if (s->n) {
		v = *s->p++;
		s->n--;
	}
	return v;
}

static uint32_t u32(struct src *s)
{
	return (uint32_t)u8(s) | (uint32_t)u8(s) << 8 | (uint32_t)u8(s) << 16 | (uint32_t)u8(s) << 24;
}

static void bytes(struct src *s, void *dst, size_t n)
{
	size_t k = n < s->n ? n : s->n;

	memcpy(dst, s->p, k);
	memset((uint8_t *)dst + k, 'A', n - k);
	s->p += k;
	s->n -= k;
}

/* How many entries ethtool.c allocates room for when it asked for @n (see with_headroom()). */
static size_t room(size_t n)
{
	return n + (n < 256 ? 256 : n);
}

/* A count: mostly small, sometimes the asked one +-1, sometimes anything. */
static uint32_t count(struct src *s, uint32_t asked)
{
	uint8_t k = u8(s);

	switch (k % 4) {
	case 0: return asked;
	case 1: return asked + 1;
	case 2: return k / 4;
	default: return u32(s);
	}
}

static int hostile_ioctl(void *ud, const char *ifname, void *cmd)
{
	struct src *s = ud;
	uint32_t c;
	uint8_t e = u8(s);

	if (e % 16 == 15)
		return -(int)(e % 7 == 0 ? ENODEV : e % 7 == 1 ? EOPNOTSUPP : EIO);
	memcpy(&c, cmd, sizeof(c));
	switch (c) {
	case ETHTOOL_GDRVINFO: {
		struct ethtool_drvinfo *di = cmd;

		bytes(s, di->driver, sizeof(di->driver));
		if (e & 1)
			memcpy(di->driver, "ena", 4);
		bytes(s, di->version, sizeof(di->version));
		bytes(s, di->bus_info, sizeof(di->bus_info));
		return 0;
	}
	case ETHTOOL_GSSET_INFO: {
		struct ethtool_sset_info *si = cmd;
		uint32_t n = count(s, 40);

		si->sset_mask = e & 2 ? 0 : si->sset_mask;
		memcpy(si->data, &n, sizeof(n));	/* one set was asked for: one u32 */
		return 0;
	}
	case ETHTOOL_GSTRINGS: {
		struct ethtool_gstrings *gs = cmd;
		size_t asked = gs->len, now = count(s, gs->len);
		size_t w = now < room(asked) ? now : room(asked);

		for (size_t i = 0; i < w; i++)
			bytes(s, gs->data + i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		gs->len = (uint32_t)now;
		return 0;
	}
	case ETHTOOL_GSTATS: {
		struct ethtool_stats *st = cmd;
		size_t asked = st->n_stats, now = count(s, st->n_stats);
		size_t w = now < room(asked) ? now : room(asked);

		for (size_t i = 0; i < w; i++)
			bytes(s, &st->data[i], sizeof(st->data[i]));
		st->n_stats = (uint32_t)now;
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

static int hostile_list(void *ud, char (*names)[ETHTOOL_IFNAME_MAX + 1], size_t max)
{
	struct src *s = ud;
	size_t n = u8(s) % 5;

	if (n == 4)
		return -EIO;
	for (size_t i = 0; i < n && i < max; i++) {
		bytes(s, names[i], ETHTOOL_IFNAME_MAX + 1);
		names[i][u8(s) % (ETHTOOL_IFNAME_MAX + 1)] = '\0';	/* the seam's contract */
		if (u8(s) & 1)
			memcpy(names[i], "eth0", 5);
	}
	return (int)(n < max ? n : max);
}

static void check_dump(const struct ethtool_devdump *d)
{
	if (d->n > ETHTOOL_MAX_STATS || (d->n && !d->stats))
		__builtin_trap();
	for (size_t k = 0; k < d->n; k++)
		if (strnlen(d->stats[k].name, sizeof(d->stats[k].name)) > ETHTOOL_NAME_MAX)
			__builtin_trap();
	if (strnlen(d->driver, sizeof(d->driver)) >= sizeof(d->driver) ||
	    strnlen(d->bus_info, sizeof(d->bus_info)) >= sizeof(d->bus_info))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cz_config cfg;
	static struct ena_devices a, b;
	struct src s = { data, size };
	struct ethtool_ops ops = { hostile_ioctl, hostile_list, &s };
	struct ethtool_devdump one = { 0 };
	struct ena_lists lists;
	struct ena_verdict v;

	config_defaults(&cfg);
	lists = ena_lists_from_config(&cfg);
	if (ethtool_read(&ops, "eth0", &one) == 0) {
		check_dump(&one);
		ethtool_dump_free(&one);
	}
	if (ena_read_devices(&cfg, &ops, NULL, 0, &a) < 0)
		return 0;
	if (ena_read_devices(&cfg, &ops, NULL, 0, &b) == 0) {
		for (size_t i = 0; i < a.n && i < b.n; i++) {
			check_dump(&a.d[i]);
			check_dump(&b.d[i]);
			if (ena_diff(&a.d[i], &b.d[i], &lists, NULL, 0, &v) == 0 &&
			    (v.n_moved > ENA_MOVED_MAX || strlen(v.cause) >= ENA_CAUSE_MAX))
				__builtin_trap();
		}
		ena_devices_free(&b);
	}
	ena_devices_free(&a);
	return 0;
}
