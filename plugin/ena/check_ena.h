/* SPDX-License-Identifier: MIT */
#ifndef CZ_CHECK_ENA_H
#define CZ_CHECK_ENA_H

/*
 * The I/O edge of check ena and check ena-allowance (check_ena.c), with the kernel injected
 * (struct ethtool_ops) for tests: read the devices, lock/load/save the state, the clock. ena.h
 * is the pure half (what the counters mean, the state payload).
 */

#include "check/cz.h"
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "ena/ena.h"
#include "host/ethtool.h"

struct npd_result;

/* Devices read in one pass: the ENA-driver interfaces that are there now. */
struct ena_devices {
	size_t n;
	struct ethtool_devdump d[ETHTOOL_MAX_DUMPS];
	unsigned gone;			/* vanished or renamed while we read: skipped */
	unsigned failed;		/* could not be read (other errors) */
	int first_err;			/* -errno of the first failure */
	char failed_if[ETHTOOL_IFNAME_MAX + 1];
};

/*
 * ena_read_devices - list interfaces through @ops and read every one whose driver is in
 * cfg->ena.drivers and, when cfg->ena.interfaces is not empty, whose name is listed (@only,
 * when not NULL/0, overrides both with explicit names). Returns 0 (*@ret filled; free with
 * ena_devices_free()) or -errno when the listing itself failed.
 */
int ena_read_devices(const struct cz_config *cfg, const struct ethtool_ops *ops, char **only,
		     size_t n_only, struct ena_devices *ret);

/* ena_devices_free - free the dumps in @d. NULL-safe. */
void ena_devices_free(struct ena_devices *d);

/*
 * Where a device's queues are served and whether those CPUs were saturated. Asked only when a
 * device shows a reset or a risk, so a quiet node never pays for the IRQ map and burst log.
 * @get writes at most @max entries for interface @ifname and returns how many, or -errno
 * (then the cause names queues without CPUs).
 */
struct ena_qc_source {
	int (*get)(void *userdata, const char *ifname, struct ena_queue_cpu *ret, size_t max);
	void *userdata;
};

/*
 * ena_check_resets / ena_check_allowance - `check ena` and `check ena-allowance` with the
 * kernel (@ops), the state directory and the clock (@now_ms) given, and @src tying queues to
 * CPUs (may be NULL). Lock, load, read (at most every ena.min_read_interval), compare, save,
 * and write the verdict into @res. Return res->status.
 */
int ena_check_resets(const struct cz_config *cfg, const struct ethtool_ops *ops,
		     const char *state_dir, uint64_t now_ms, const struct ena_qc_source *src,
		     struct npd_result *res);
int ena_check_allowance(const struct cz_config *cfg, const struct ethtool_ops *ops,
			const char *state_dir, uint64_t now_ms, struct npd_result *res);

/*
 * ena_check_resets_kernel - ena_check_resets with the resets the kernel logged (@kr, from
 * ena_kernel_load(); may be NULL) merged per device: max of the two counts, the counters'
 * cause first (ena_kernel.h).
 */
struct ena_kernel;
int ena_check_resets_kernel(const struct cz_config *cfg, const struct ethtool_ops *ops,
			    const char *state_dir, uint64_t now_ms, const struct ena_qc_source *src,
			    struct ena_kernel *kr, struct npd_result *res);

/* check_ena / check_ena_allowance - `check ena` (condition ENADeviceReset) and
 * `check ena-allowance` (an event), the node/checks.c rows. */
/*
 * What check ena and check ena-allowance leave for the agent's node model (check_seen's ena,
 * check/cz.h): the state file as it is after the check (@set; @rc 0 and @st, or -ENOENT: none),
 * parsed from the bytes the check loaded or committed, so node_take_ena() has what node_read_ena()
 * would read back. Not set when the check could not tell (a lock timeout, a file it discarded).
 */
struct ena_seen_one {
	bool set;
	int rc;
	struct ena_state st;
};

struct ena_seen {
	struct ena_seen_one reset, allowance;
};

/* ena_seen_free - free what @s holds and clear it. */
void ena_seen_free(struct ena_seen *s);

int check_ena(struct cz_ctx *ctx, const struct check_seen *cs, struct npd_result *res);
int check_ena_allowance(struct cz_ctx *ctx, const struct check_seen *cs,
			struct npd_result *res);

#endif
