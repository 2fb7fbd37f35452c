/* SPDX-License-Identifier: MIT */
#ifndef CZ_TEST_ENA_FAKE_H
#define CZ_TEST_ENA_FAKE_H

/*
 * A scripted SIOCETHTOOL seam for unit tests (ethtool's test-features.c idea): fake devices
 * answer GDRVINFO/GSSET_INFO/GSTRINGS/GSTATS from tables, and a script can change a device's
 * stat count on a given call, make it vanish, or rename it.
 */

#include <linux/ethtool.h>

#include "host/ethtool.h"

#define FAKE_MAX_STATS 64
#define FAKE_MAX_DEVS 4

struct fake_dev {
	char name[16];
	const char *driver, *bus;
	size_t n;
	char names[FAKE_MAX_STATS][ETH_GSTRING_LEN]; /* not NUL-terminated when 32 long */
	uint64_t values[FAKE_MAX_STATS];
	bool gone;
	bool no_drvinfo;
};

struct fake {
	struct fake_dev dev[FAKE_MAX_DEVS];
	size_t ndev;
	unsigned calls;		/* ioctls so far */
	unsigned grow_at;	/* on this call (1-based), before answering: dev 0 gains a stat */
	bool grow_always;	/* every GSTATS adds a stat: the count never settles */
	unsigned vanish_at;	/* on this call: dev 0 vanishes */
};

static inline void fake_set(struct fake_dev *d, const char *name, uint64_t v)
{
	for (size_t i = 0; i < d->n; i++)
		if (strncmp(d->names[i], name, ETH_GSTRING_LEN) == 0) {
			d->values[i] = v;
			return;
		}
	memset(d->names[d->n], 0, ETH_GSTRING_LEN);
	memcpy(d->names[d->n], name, strlen(name) < ETH_GSTRING_LEN ? strlen(name) : ETH_GSTRING_LEN);
	d->values[d->n++] = v;
}

static inline uint64_t fake_get(struct fake_dev *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strncmp(d->names[i], name, ETH_GSTRING_LEN) == 0)
			return d->values[i];
	return 0;
}

static inline struct fake_dev *fake_add(struct fake *f, const char *name, const char *driver,
					const char *bus)
{
	struct fake_dev *d = &f->dev[f->ndev++];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->driver = driver;
	d->bus = bus;
	return d;
}

static inline void fake_grow(struct fake_dev *d)
{
	char name[32];

	snprintf(name, sizeof(name), "queue_%zu_tx_cnt", d->n);
	fake_set(d, name, 7);
}

static inline int fake_ioctl(void *ud, const char *ifname, void *cmd)
{
	struct fake *f = ud;
	struct fake_dev *d = NULL;
	uint32_t c;

	f->calls++;
	if (f->calls == f->grow_at)
		fake_grow(&f->dev[0]);
	if (f->calls == f->vanish_at)
		f->dev[0].gone = true;
	for (size_t i = 0; i < f->ndev; i++)
		if (!f->dev[i].gone && strcmp(f->dev[i].name, ifname) == 0)
			d = &f->dev[i];
	if (!d)
		return -ENODEV;
	memcpy(&c, cmd, sizeof(c));
	switch (c) {
	case ETHTOOL_GDRVINFO: {
		struct ethtool_drvinfo *di = cmd;

		if (d->no_drvinfo)
			return -EOPNOTSUPP;
		memset(di->driver, 'X', sizeof(di->driver)); /* garbage past the NUL must not leak */
		snprintf(di->driver, sizeof(di->driver), "%s", d->driver);
		snprintf(di->version, sizeof(di->version), "2.14.1g");
		snprintf(di->bus_info, sizeof(di->bus_info), "%s", d->bus);
		return 0;
	}
	case ETHTOOL_GSSET_INFO: {
		struct ethtool_sset_info *si = cmd;

		if (d->n == 0)
			return -EOPNOTSUPP;
		si->data[0] = (uint32_t)d->n;
		return 0;
	}
	case ETHTOOL_GSTRINGS: {
		struct ethtool_gstrings *gs = cmd;

		gs->len = (uint32_t)d->n; /* like the kernel: as many as there are now */
		memcpy(gs->data, d->names, d->n * ETH_GSTRING_LEN);
		return 0;
	}
	case ETHTOOL_GSTATS: {
		struct ethtool_stats *st = cmd;

		if (f->grow_always)
			fake_grow(d);
		st->n_stats = (uint32_t)d->n;
		memcpy(st->data, d->values, d->n * sizeof(uint64_t));
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

static inline int fake_list(void *ud, char (*names)[ETHTOOL_IFNAME_MAX + 1], size_t max)
{
	struct fake *f = ud;
	size_t n = 0;

	for (size_t i = 0; i < f->ndev && n < max; i++)
		if (!f->dev[i].gone)
			snprintf(names[n++], ETHTOOL_IFNAME_MAX + 1, "%s", f->dev[i].name);
	return (int)n;
}

static inline struct ethtool_ops fake_ops(struct fake *f)
{
	return (struct ethtool_ops){ fake_ioctl, fake_list, f };
}

#endif
