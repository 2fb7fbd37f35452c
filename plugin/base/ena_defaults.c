/* SPDX-License-Identifier: MIT */
/*
 * The default lists of ena.reset_counters / risk_counters / allowance_counters. They are config
 * defaults (config_defaults() copies them) and what ena/ena.c classifies with when a list is
 * not given, so they sit below both. Names from the driver's ena_ethtool.c: upstream
 * drivers/net/ethernet/amazon/ena and Amazon's out-of-tree amzn-drivers kernel/linux/ena (2.10+
 * adds total_resets and one counter per reset reason, ENA_REGS_RESET_* in ena_regs_defs.h).
 */
#include <stddef.h>

#include "base/ena_defaults.h"

/* Counters that only move when the driver resets (or fails to reset) the device. */
const char *const ena_default_reset_counters[] = {
	"total_resets",  /* out-of-tree 2.10+: every reset */
	"reset_fail",    /* upstream 6.10+ and out-of-tree: the reset did not recover */
	"tx_timeout",    /* netdev watchdog fired (ndo_tx_timeout) -> reset */
	"wd_expired",    /* device keep-alive missed -> reset */
	"admin_q_pause", /* admin queue stopped -> reset */
	/* out-of-tree 2.10+: one per ENA_REGS_RESET_* reason */
	"suspected_poll_starvation",
	"missing_tx_cmpl",
	"missing_intr",
	"missing_first_intr",
	"missing_admin_interrupt",
	"admin_to",
	"os_netdev_wd",
	"bad_tx_req_id",
	"bad_rx_req_id",
	"bad_rx_desc_num",
	"rx_desc_malformed",
	"tx_desc_malformed",
	"invalid_state",
	"device_request_reset",
	NULL,
};

/* Counters that rise before a reset: missed Tx completions and lost interrupts. */
const char *const ena_default_risk_counters[] = {
	"queue_*_tx_missed_tx",
	"queue_*_xdp_tx_missed_tx",
	"queue_*_tx_pending_timedout_pkts",
	"queue_*_tx_lost_interrupt",
	"queue_*_tx_bad_req_id",
	"queue_*_rx_bad_req_id",
	"lost_interrupt",
	"ena_admin_q_no_completion",
	NULL,
};

/* The instance's network allowances (ENI metrics): throttling, not resets. */
const char *const ena_default_allowance_counters[] = {
	"bw_in_allowance_exceeded",
	"bw_out_allowance_exceeded",
	"pps_allowance_exceeded",
	"conntrack_allowance_exceeded",
	"linklocal_allowance_exceeded",
	NULL,
};
