/* SPDX-License-Identifier: MIT */
/*
 * The ENA driver's counters: default class lists and one-line explanations.
 * Names from the driver's ena_ethtool.c: upstream drivers/net/ethernet/amazon/ena and Amazon's
 * out-of-tree amzn-drivers kernel/linux/ena (2.10+ adds total_resets and one counter per reset
 * reason, ENA_REGS_RESET_* in ena_regs_defs.h). Per-queue names are "queue_<q>_tx_<stat>",
 * "queue_<q>_rx_<stat>" and "queue_<q>_xdp_tx_<stat>".
 */
#include <stddef.h>

#include "checks/ena.h"
#include "base/util.h"

/* Counters that only move when the driver resets (or fails to reset) the device. */
const char *const ena_default_reset_counters[] = {
	"total_resets",			/* out-of-tree 2.10+: every reset */
	"reset_fail",			/* upstream 6.10+ and out-of-tree: the reset did not recover */
	"tx_timeout",			/* netdev watchdog fired (ndo_tx_timeout) -> reset */
	"wd_expired",			/* device keep-alive missed -> reset */
	"admin_q_pause",		/* admin queue stopped -> reset */
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

struct explanation {
	const char *pattern;
	const char *text;
};

static const struct explanation explanations[] = {
	{ "total_resets", "the driver reset the device" },
	{ "reset_fail", "a device reset FAILED: the interface may stay down" },
	{ "tx_timeout", "the kernel's netdev watchdog saw a Tx queue stuck, the driver reset" },
	{ "wd_expired", "the device's keep-alive stopped arriving, the driver reset" },
	{ "admin_q_pause", "the admin queue stopped answering, the driver reset" },
	{ "suspected_poll_starvation",
	  "reset: NAPI poll scheduled but never ran for 2x the Tx timeout (CPU starvation)" },
	{ "missing_tx_cmpl", "reset: Tx completions missing longer than the timeout" },
	{ "missing_intr", "reset: completions were waiting but no interrupt arrived" },
	{ "missing_first_intr", "reset: a queue never got its first interrupt" },
	{ "missing_admin_interrupt", "reset: the admin queue interrupt went missing" },
	{ "admin_to", "reset: an admin command timed out" },
	{ "os_netdev_wd", "reset: requested by the kernel's netdev watchdog" },
	{ "bad_tx_req_id", "reset: the device completed an invalid Tx request id" },
	{ "bad_rx_req_id", "reset: the device returned an invalid Rx request id" },
	{ "bad_rx_desc_num", "reset: an Rx packet with too many descriptors" },
	{ "rx_desc_malformed", "reset: a malformed Rx descriptor" },
	{ "tx_desc_malformed", "reset: a malformed Tx descriptor" },
	{ "invalid_state", "reset: the driver found itself in an invalid state" },
	{ "device_request_reset", "reset: the device asked for it" },
	{ "interface_up", "the interface was brought up (after a reset, or by an admin)" },
	{ "interface_down", "the interface was brought down (for a reset, or by an admin)" },
	{ "suspend", "the device was suspended" },
	{ "resume", "the device resumed" },
	{ "queue_*_tx_missed_tx", "Tx completions overdue on this queue: the step before a reset" },
	{ "queue_*_xdp_tx_missed_tx", "XDP Tx completions overdue on this queue" },
	{ "queue_*_tx_pending_timedout_pkts", "Tx packets still pending after the timeout" },
	{ "queue_*_tx_lost_interrupt", "an interrupt of this queue was lost" },
	{ "lost_interrupt", "an interrupt was lost" },
	{ "queue_*_tx_bad_req_id", "the device completed a Tx request id it was not given" },
	{ "queue_*_rx_bad_req_id", "the device returned an Rx request id it was not given" },
	{ "ena_admin_q_no_completion", "admin commands that never completed" },
	{ "bw_in_allowance_exceeded", "inbound packets queued or dropped: instance bandwidth cap" },
	{ "bw_out_allowance_exceeded", "outbound packets queued or dropped: instance bandwidth cap" },
	{ "pps_allowance_exceeded", "packets queued or dropped: packets-per-second cap" },
	{ "conntrack_allowance_exceeded", "packets dropped: connection tracking table full" },
	{ "linklocal_allowance_exceeded",
	  "packets dropped: DNS/IMDS/NTP link-local traffic over its PPS cap" },
	{ "conntrack_allowance_available", "tracked connections still available (a gauge)" },
	{ "queue_*_tx_cnt", "packets sent on this queue" },
	{ "queue_*_rx_cnt", "packets received on this queue" },
};

const char *ena_explain(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(explanations); i++)
		if (ena_name_match(explanations[i].pattern, name, NULL))
			return explanations[i].text;
	return "driver counter";
}
