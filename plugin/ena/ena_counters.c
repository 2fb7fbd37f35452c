/* SPDX-License-Identifier: MIT */
/*
 * The ENA driver's counters: one-line explanations (the default class lists, which are also
 * config defaults, are in base/ena_defaults.c).
 * Names from the driver's ena_ethtool.c: upstream drivers/net/ethernet/amazon/ena and Amazon's
 * out-of-tree amzn-drivers kernel/linux/ena (2.10+ adds total_resets and one counter per reset
 * reason, ENA_REGS_RESET_* in ena_regs_defs.h). Per-queue names are "queue_<q>_tx_<stat>",
 * "queue_<q>_rx_<stat>" and "queue_<q>_xdp_tx_<stat>".
 */
#include <stddef.h>

#include "ena/ena.h"
#include "base/util.h"

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
	{ "bw_out_allowance_exceeded",
	  "outbound packets queued or dropped: instance bandwidth cap" },
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
