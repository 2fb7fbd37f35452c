/* SPDX-License-Identifier: MIT */
#ifndef CZ_ENA_H
#define CZ_ENA_H

/*
 * What the ENA driver's ethtool counters mean. Pure: two readings (struct ethtool_devdump) and
 * the configured counter lists in, a verdict out. No I/O, no clock (times are arguments).
 *
 * Counter classes (config ena.reset_counters / risk_counters / allowance_counters, defaults in
 * base/ena_defaults.c from the driver's own semantics; docs/design.md "ENA counter classes"):
 *  - reset: the driver reset the device. Amazon's out-of-tree driver 2.10+ has `total_resets`
 *    plus one counter per reset reason (`suspected_poll_starvation` = NAPI scheduled but never
 *    ran: CPU starvation); the upstream driver has only `tx_timeout`, `wd_expired`,
 *    `admin_q_pause` (+ `reset_fail` from 6.10).
 *  - risk: per-queue missed Tx completions and lost interrupts, the step before a reset.
 *  - allowance: the instance's network allowances exceeded (throttling, not resets);
 *    `conntrack_allowance_available` is a gauge, compared with a floor instead.
 *
 * List entries are stat names; '*' matches a queue number ("queue_*_tx_missed_tx"). Names are
 * compared on at most 31 characters (a driver's 32-character name is printed cut to 31).
 *
 * A counter that went down never gives a negative delta: when a reset-class counter or
 * interface_up went down the driver was reloaded (or the node rebooted) and the whole reading is
 * a new baseline; any other counter that went down counts from its new value as 0.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "base/ena_defaults.h"
#include "host/ethtool.h"
#include "base/state.h"


#define ENA_CONNTRACK_AVAILABLE "conntrack_allowance_available"
#define ENA_MOVED_MAX 64
#define ENA_CAUSE_MAX 200
#define ENA_EVENTS_MAX 16

enum ena_class {
	ENA_CLASS_NONE,
	ENA_CLASS_RESET,
	ENA_CLASS_RISK,
	ENA_CLASS_ALLOWANCE,
};

/* The three lists; NULL means the built-in default list. */
struct ena_lists {
	const struct cz_strlist *reset, *risk, *allowance;
};

/*
 * ena_name_match - does stat @name match list entry @pattern ('*' = one or more digits)? On a
 * match writes the number '*' stood for into *@ret_queue (may be NULL), or -1 when the pattern
 * has no '*'. A @name of exactly 31 characters also matches a longer pattern it is a prefix of.
 */
bool ena_name_match(const char *pattern, const char *name, int *ret_queue);

/* ena_classify - the class of @name under @l and its queue number (-1 when none). */
enum ena_class ena_classify(const struct ena_lists *l, const char *name, int *ret_queue);

/* ena_explain - one short human sentence about what counter @name counts (never NULL). */
const char *ena_explain(const char *name);

/* One counter that moved between two readings. */
struct ena_counter {
	char name[ETHTOOL_NAME_MAX + 1];
	enum ena_class cls;
	int queue;		/* -1 when not a per-queue counter */
	uint64_t prev, cur;
	uint64_t delta;		/* cur - prev; when it went down 0, or cur across a reload */
	bool went_down;
};

/*
 * Which CPUs serve a queue and whether they were saturated: filled by the caller (check_ena.c
 * from the NIC IRQ map and the sampler's burst log), so the verdict stays pure.
 */
struct ena_queue_cpu {
	int queue;
	int cpu;
	uint64_t burst_ms;	/* longest saturation burst on @cpu within the window; 0 none */
};

struct ena_verdict {
	uint64_t resets;	/* resets between the readings (total_resets or the reason sums) */
	bool reset_fail;	/* the driver could not bring the device back: critical */
	bool new_baseline;	/* driver reloaded: no deltas, nothing to report */
	bool restart;		/* interface_down and _up both rose and queue counters went to 0 */
	bool risk;		/* a risk counter rose */
	bool throttled;		/* an allowance-exceeded counter rose */
	int queue;		/* the queue the risk counters point at, -1 when none */
	size_t n_moved;
	struct ena_counter moved[ENA_MOVED_MAX]; /* most important first */
	char cause[ENA_CAUSE_MAX]; /* "poll starvation q5 (cpu39 burst 6.2s); tx_timeout +2" */
};

/*
 * ena_diff - compare @after with @before (same device; the caller matches them by bus_info).
 * @qc/@n_qc (may be NULL/0) tie queues to CPUs for the cause text. Fills *@ret; returns 0, or
 * -EINVAL when @after has no statistics.
 */
int ena_diff(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
	     const struct ena_lists *l, const struct ena_queue_cpu *qc, size_t n_qc,
	     struct ena_verdict *ret);

/*
 * ena_diff_across_reload - ena_diff() for two dumps that stand alone (`ena-diff`): when the
 * counters went down between them (the driver reloaded), each counter that went down is
 * counted from its new value (the driver restarted it at 0) and the others by how much they
 * rose, so what happened after the reload is still a verdict; ret->new_baseline says the
 * counts are lower bounds (what happened before the reload is not known). Returns as ena_diff.
 */
int ena_diff_across_reload(const struct ethtool_devdump *before,
			   const struct ethtool_devdump *after, const struct ena_lists *l,
			   struct ena_verdict *ret);

/*
 * ena_filter - a copy of @d keeping only what the verdicts need (classified counters,
 * interface_up/down, per-queue tx_cnt/rx_cnt): what a baseline stores. Returns 0 or -ENOMEM;
 * free *@ret with ethtool_dump_free().
 */
int ena_filter(const struct ethtool_devdump *d, const struct ena_lists *l,
	       struct ethtool_devdump *ret);

/*
 * ena_baseline_same - pure: would the filtered reading @b, as a new baseline, tell the verdicts
 * nothing that @a does not? True when both name the same device (ifname, driver, bus_info) and
 * hold the same counters in the same order with the same values, except those the verdicts never
 * take a delta of: the per-queue tx_cnt/rx_cnt (compared only to see them go down, the
 * "queue counters zeroed" of a restart note, not a verdict; an older value may miss a zeroing
 * once the new count has passed it, so the caller bounds how old a kept baseline gets) and the
 * conntrack gauge (read as it is). A caller may keep @a instead of writing @b when this is true.
 */
bool ena_baseline_same(const struct ethtool_devdump *a, const struct ethtool_devdump *b);

/* ---- allowance (throttling) ----------------------------------------------------------------- */

struct ena_allowance {
	size_t n_rose;
	struct ena_counter rose[ENA_MOVED_MAX];	/* allowance-exceeded counters that rose */
	bool has_available;
	uint64_t available;			/* conntrack_allowance_available now */
	bool below_floor;			/* available < floor (floor 0 = off) */
};

/*
 * ena_allowance_diff - allowance counters that rose from @before (NULL: first reading, nothing
 * rose) to @after, and the conntrack gauge against @floor. Fills *@ret; returns 0.
 */
int ena_allowance_diff(const struct ethtool_devdump *before, const struct ethtool_devdump *after,
		       const struct ena_lists *l, uint64_t floor, struct ena_allowance *ret);

/*
 * ena_allowance_format - "bw_in_allowance_exceeded +314, pps_allowance_exceeded +2;
 * conntrack_allowance_available 512 < 1000" into @buf. Returns @buf.
 */
char *ena_allowance_format(const struct ena_allowance *a, uint64_t floor, char *buf, size_t size);

/* ---- the window: reset events kept in state ------------------------------------------------- */

struct ena_event {
	uint64_t t_ms;				/* wall clock of the reading that saw it */
	uint64_t resets;
	char cause[ENA_CAUSE_MAX];
};

struct ena_history {
	size_t n;
	struct ena_event ev[ENA_EVENTS_MAX];	/* oldest first */
};

/* ena_history_prune - drop events older than @window_ms before @now_ms (or in the future). */
void ena_history_prune(struct ena_history *h, uint64_t now_ms, uint64_t window_ms);

/* ena_history_add - append an event, dropping the oldest when full. */
void ena_history_add(struct ena_history *h, uint64_t t_ms, uint64_t resets, const char *cause);

/* ena_history_resets - the sum of resets of the events held. */
uint64_t ena_history_resets(const struct ena_history *h);

/* ---- state payload --------------------------------------------------------------------------- */

#define ENA_STATE_MAX_IFACES 64

/* One device's baseline and events, keyed by ethtool_dump_key(). */
struct ena_ifstate {
	char key[ETHTOOL_INFO_MAX + 8];
	uint64_t read_ms;			/* when @base was read */
	struct ethtool_devdump base;		/* ifname, driver, bus_info and filtered counters */
	struct ena_history hist;
};

struct ena_state {
	uint64_t read_ms;			/* last time the devices were read (rate limit) */
	size_t n, cap;
	struct ena_ifstate *ifs;		/* n entries (room for cap), owned */
};

/* ena_state_free - free everything @s owns and zero it. NULL-safe. */
void ena_state_free(struct ena_state *s);

/* ena_state_find - the entry for @key, or NULL. */
struct ena_ifstate *ena_state_find(struct ena_state *s, const char *key);

/*
 * ena_state_add - append an empty entry for @key (whose base is empty). Returns it, or NULL
 * when full (ENA_STATE_MAX_IFACES) or out of memory. The array grows: a pointer to an entry
 * does not survive the next add.
 */
struct ena_ifstate *ena_state_add(struct ena_state *s, const char *key);

/*
 * ena_state_parse - pure: the payload written by ena_state_format() back into *@ret (free with
 * ena_state_free()). Returns 0, -EINVAL (a line that does not belong: the caller starts a new
 * baseline) or -ENOMEM; *@ret untouched on failure.
 */
int ena_state_parse(const char *text, size_t len, struct ena_state *ret);

/*
 * ena_state_format - the payload for state_save(): text lines. Returns the length and a
 * malloc()ed NUL-terminated buffer in *@ret_buf, or -ENOMEM.
 */
ssize_t ena_state_format(const struct ena_state *s, char **ret_buf);

/*
 * The state files of `check ena` (STATE_ENA) and `check ena-allowance` (STATE_ENA_ALLOWANCE),
 * both a struct ena_state (base/state.h; ENA_STATE_MAX bytes of payload at most).
 */
#define ENA_STATE_MAX (4u << 20) /* 64 devices x ~1000 filtered counters, with room */
struct state_type;
struct state_txn;
extern const struct state_type ena_reset_state, ena_allowance_state;
/* ena_state_read, _begin, _commit, _write: the typed calls STATE_CODEC generates (base/state.h) */
int ena_state_read(const char *dir, const struct state_type *t, struct ena_state *obj);
int ena_state_begin(struct state_txn *txn, const char *dir, const struct state_type *t,
		    struct ena_state *obj);
int ena_state_commit(struct state_txn *txn, const struct ena_state *obj);
int ena_state_write(const char *dir, const struct state_type *t, const struct ena_state *obj);

/* ena_lists_from_config - the three lists of @cfg as a struct ena_lists. */
struct ena_lists ena_lists_from_config(const struct cz_config *cfg);

#endif
