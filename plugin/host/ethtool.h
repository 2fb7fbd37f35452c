/* SPDX-License-Identifier: MIT */
#ifndef CZ_ETHTOOL_H
#define CZ_ETHTOOL_H

/*
 * A network device's driver-private statistics, the numbers `ethtool -S` prints, read two ways:
 *
 *  - live, with the SIOCETHTOOL ioctl (ETHTOOL_GDRVINFO for driver and bus_info,
 *    ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS, ETHTOOL_GSTATS), the three ioctls
 *    `ethtool -S` itself makes; every ioctl and the interface listing go through one seam
 *    (struct ethtool_ops) that unit tests script, like ethtool's own test-features.c;
 *  - offline, from the text of `ethtool -S` (and `ethtool -i`) that SREs paste into tickets.
 *
 * Both produce the same struct ethtool_devdump, so every verdict downstream is the same either way.
 *
 * Stat names are ETH_GSTRING_LEN (32) bytes in the kernel and NOT NUL-terminated when all 32 are
 * used; `ethtool` prints at most 31 characters. We keep at most ETHTOOL_NAME_MAX (31) characters
 * plus a NUL, so a live name and a pasted name compare equal.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETHTOOL_NAME_MAX 31	   /* printable characters of a stat name (ETH_GSTRING_LEN - 1) */
#define ETHTOOL_IFNAME_MAX 15	   /* IFNAMSIZ - 1 */
#define ETHTOOL_INFO_MAX 31	   /* driver, version, bus_info as kept here */
#define ETHTOOL_MAX_STATS 16384	   /* more than any driver has; a count beyond is -E2BIG */
#define ETHTOOL_MAX_DUMPS 64	   /* interfaces in one pasted text / one listing */
#define ETHTOOL_READ_RETRIES 4	   /* re-reads when the stat count changes under us */

struct ethtool_stat {
	char name[ETHTOOL_NAME_MAX + 1];
	uint64_t value;
};

/* One interface's statistics (and driver info when known). */
struct ethtool_devdump {
	char ifname[ETHTOOL_IFNAME_MAX + 1];	/* "" when a pasted text did not say */
	bool has_drvinfo;			/* driver/version/bus_info below are known */
	char driver[ETHTOOL_INFO_MAX + 1];
	char version[ETHTOOL_INFO_MAX + 1];
	char bus_info[ETHTOOL_INFO_MAX + 1];	/* "0000:00:05.0"; "" for virtual devices */
	size_t n;
	struct ethtool_stat *stats;		/* n entries, owned, in the driver's order */
};

/* ethtool_dump_free - free @d's stats and zero it. NULL-safe. */
void ethtool_dump_free(struct ethtool_devdump *d);

/* ethtool_dumps_free - free @n dumps and the array itself. NULL-safe. */
void ethtool_dumps_free(struct ethtool_devdump *d, size_t n);

/*
 * ethtool_dump_find - the first stat called @name (compared on at most ETHTOOL_NAME_MAX
 * characters, so a 32-character driver name matches its truncated form), or NULL.
 */
const struct ethtool_stat *ethtool_dump_find(const struct ethtool_devdump *d, const char *name);

/*
 * ethtool_dump_find_near - ethtool_dump_find trying index @hint first. Comparing two readings of
 * one device walks the same names in the same order, so the hint (the index in the other dump)
 * is almost always right: O(n) for the whole comparison instead of O(n^2) — 1,253 counters on a
 * 32-queue ENA device.
 */
const struct ethtool_stat *ethtool_dump_find_near(const struct ethtool_devdump *d,
						  const char *name, size_t hint);

/*
 * ethtool_dump_key - the identity a baseline is kept under: "pci:<bus_info>" when the device
 * has a bus address (survives renames), else "if:<ifname>". Writes into @buf. Returns 0, or
 * -EINVAL when neither is known, -ENOBUFS when @size is too small.
 */
int ethtool_dump_key(const struct ethtool_devdump *d, char *buf, size_t size);

/* ---- live reads: the seam ------------------------------------------------------------------ */

/*
 * Every kernel call the live path makes. @cmd points at a struct ethtool_* from
 * <linux/ethtool.h> whose first u32 is the ETHTOOL_* command, exactly what SIOCETHTOOL takes in
 * ifr_data. ioctl returns 0 or -errno (-ENODEV when the device vanished or was renamed,
 * -EOPNOTSUPP when the driver has no statistics). list fills up to @max interface names and
 * returns how many, or -errno.
 */
struct ethtool_ops {
	int (*ioctl)(void *userdata, const char *ifname, void *cmd);
	int (*list)(void *userdata, char (*names)[ETHTOOL_IFNAME_MAX + 1], size_t max);
	void *userdata;
};

/*
 * ethtool_ops_kernel - the real seam: an AF_INET datagram socket (O_CLOEXEC) for SIOCETHTOOL in
 * the caller's network namespace and if_nameindex() for the listing. Returns 0 and fills @ops
 * (close it with ethtool_ops_kernel_close()), or -errno from socket().
 */
int ethtool_ops_kernel(struct ethtool_ops *ops);

/* ethtool_ops_kernel_close - close the socket; safe on an unopened or already closed @ops. */
void ethtool_ops_kernel_close(struct ethtool_ops *ops);

/*
 * ethtool_read_drvinfo - ETHTOOL_GDRVINFO into @d's ifname/driver/version/bus_info (sets
 * has_drvinfo). @ifname must pass valid_ifname(). Returns 0 or -errno (-ENODEV: gone); @d is
 * untouched on failure.
 */
int ethtool_read_drvinfo(const struct ethtool_ops *ops, const char *ifname,
			 struct ethtool_devdump *d);

/*
 * ethtool_read_stats - the statistics of @ifname: count, names, values, then the count again.
 * When the count differs between any two calls (queues reconfigured, device reset mid-read) the
 * whole read starts over, at most ETHTOOL_READ_RETRIES times (-EAGAIN after that). Buffers are
 * sized with headroom because the kernel writes as many entries as it has now, not as many as
 * we asked for. On success replaces @d->stats/@d->n (freeing the old ones) and returns the
 * count. Errors: -ENODEV (vanished or renamed), -EOPNOTSUPP (no stats), -E2BIG (count above
 * ETHTOOL_MAX_STATS), -ENOMEM, -EAGAIN; @d untouched.
 */
int ethtool_read_stats(const struct ethtool_ops *ops, const char *ifname,
		       struct ethtool_devdump *d);

/*
 * ethtool_read - drvinfo then stats into a fresh @ret (ethtool_dump_free() it). Returns 0 or
 * the -errno of the step that failed; *@ret untouched on failure.
 */
int ethtool_read(const struct ethtool_ops *ops, const char *ifname, struct ethtool_devdump *ret);

/* ---- pasted text ----------------------------------------------------------------------------- */

struct ethtool_text_error {
	unsigned line;		/* 1-based; 0 when not about one line */
	char what[160];		/* "value 'abc' of 'tx_timeout' is not a counter" */
};

/*
 * ethtool_parse_text - pure: parse a paste of `ethtool -S IF` output, with or without the
 * "NIC statistics:" header, any indentation (spaces or tabs), optionally preceded by shell
 * prompts/command lines ("$ ethtool -S eth0", "# ethtool -i eth0", "[user ~]$ ethtool -S eth0")
 * and `ethtool -i` output, "..." elisions, several interfaces one after the other. Each
 * `ethtool -S IF`/`-i IF` command line or repeated "NIC statistics:" header starts or selects an
 * interface; -i and -S blocks of one interface are merged.
 *
 * On success *@ret_dumps (free with ethtool_dumps_free()) holds *@ret_n >= 1 dumps each with at
 * least one stat, and 0 is returned. Errors (*@ret_* untouched, @err filled when not NULL):
 * -EINVAL a line that is neither (line number, what), -ENODATA no statistics at all, -E2BIG
 * more than ETHTOOL_MAX_STATS stats or ETHTOOL_MAX_DUMPS interfaces, -ENOMEM.
 */
int ethtool_parse_text(const char *text, size_t len, struct ethtool_devdump **ret_dumps,
		       size_t *ret_n, struct ethtool_text_error *err);

/*
 * ethtool_format_text - write @d the way `ethtool -i IF` + `ethtool -S IF` print it (with "# "
 * command lines), so ethtool_parse_text() reads it back. Returns 0 or -EIO.
 */
#include <stdio.h>
int ethtool_format_text(const struct ethtool_devdump *d, FILE *out);

#endif
