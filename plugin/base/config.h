/* SPDX-License-Identifier: MIT */
#ifndef CZ_CONFIG_H
#define CZ_CONFIG_H

/*
 * cpuzombie.yaml -> one struct. Every key has a default (config_defaults()), so no file is
 * needed. Loading is all-or-nothing: on any error the caller's struct is left untouched and
 * every error found is reported as "FILE:LINE: key 'a.b': what was wrong".
 *
 * Durations are kept in milliseconds. Strings and lists live inside the struct (fixed bounds),
 * so a config can be copied by assignment and never needs freeing.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CZ_PATH_MAX 256
#define CZ_NAME_MAX 64
#define CZ_LIST_MAX 32

#define CZ_DEFAULT_CONFIG_PATH "/etc/cpuzombie/cpuzombie.yaml"

struct cz_strlist {
	size_t n;
	char item[CZ_LIST_MAX][CZ_NAME_MAX];
};

/* Which part of a core's time counts toward saturation (cpu.metric). */
enum cz_cpu_metric {
	CZ_METRIC_SYSTEM, /* "system": kernel time outside interrupts (the Pinterest case) */
	CZ_METRIC_SYSTEM_IRQ,	   /* "system+irq+softirq" */
	CZ_METRIC_BUSY,		   /* "busy": everything but idle and iowait */
};

enum cz_remediation_mode {
	CZ_REMEDIATE_OFF,
	CZ_REMEDIATE_DRY_RUN,
	CZ_REMEDIATE_CORDON,
	CZ_REMEDIATE_DRAIN,
};

/* remediation.reclaim: how the agent frees the dying memcgs (agent/reclaim.h) */
enum cz_reclaim_mode {
	CZ_RECLAIM_OFF,
	CZ_RECLAIM_MEMORY_RECLAIM, /* "memory.reclaim": v2 proactive reclaim, else drop_caches */
	CZ_RECLAIM_DROP_CACHES,		/* "drop_caches": vm.drop_caches=1 (page cache only) */
};

struct cz_config {
	struct {
		char proc[CZ_PATH_MAX];		/* /proc */
		char sys[CZ_PATH_MAX];		/* /sys */
		char state[CZ_PATH_MAX];	/* /var/lib/cpuzombie */
		char run[CZ_PATH_MAX];		/* /run/cpuzombie */
		char pod_logs[CZ_PATH_MAX]; /* /var/log/pods (the kubelet's); "" = no pod names */
	} paths;
	struct {
		uint64_t min_dying;		/* 1000 */
		double max_ratio;		/* 10 */
		uint64_t latency_canary_ms;	/* 10m: at most one canary read per this; 0 = off */
		bool systemd_hints;		/* true */
		uint64_t census_interval_ms;	/* 10m: the agent's zombie census (BPF); 0 = off */
		uint64_t recover_after_ms; /* 0: MemcgZombieLeak False only after OK this long */
		bool condition;			/* true; false: no MemcgZombieLeak (removed) */
	} memcg;
	struct {
		uint64_t interval_ms;		/* 250ms */
		enum cz_cpu_metric metric;	/* system */
		double threshold_pct;		/* 90 */
		uint64_t min_burst_ms;		/* 2s */
		uint64_t lookback_ms;		/* 10m */
		uint64_t inline_window_ms;	/* 3s */
		bool attribute_tasks;		/* true */
		uint64_t history_ms;		/* 15m: the fine ring, one sample per interval */
		uint64_t history_seconds_ms;	/* 6h: per-second maxima; 0 = off */
		uint64_t history_minutes_ms;	/* 7d: per-minute maxima; 0 = off */
		uint64_t hysteresis_pct;	/* 20: a burst survives dips this far under */
		uint64_t max_dip_ms;		/* 1s: ...for this long */
		bool profile;			/* true: perf profile of each burst (agent) */
		uint64_t profile_hz;		/* 99 */
		uint64_t profile_max_ms;	/* 30s: a profile samples at most this long */
		uint64_t profile_bytes;		/* 65536: folded stacks kept per burst */
		uint64_t recover_after_ms; /* 0: CPUCoreSaturation False only after OK this long */
		bool condition;			/* true; false: no CPUCoreSaturation (removed) */
	} cpu;
	struct {
		struct cz_strlist drivers;	/* [ena] */
		struct cz_strlist interfaces;	/* [] = every interface of a listed driver */
		uint64_t window_ms;		/* 1h */
		uint64_t min_read_interval_ms;	/* 5s: each read holds RTNL */
		uint64_t conntrack_floor;	/* 0 = off */
		uint64_t recover_after_ms; /* 0: ENADeviceReset False only after OK this long */
		bool condition;			/* true; false: no ENADeviceReset (removed) */
		struct cz_strlist reset_counters;
		struct cz_strlist risk_counters;
		struct cz_strlist allowance_counters;
	} ena;
	struct {
		char node_name[CZ_NAME_MAX * 4]; /* $NODE_NAME */
		char kubeconfig[CZ_PATH_MAX];	/* "" = in-cluster */
		uint64_t timeout_ms;		/* 10s per request */
	} kubernetes;
	struct {
		char bus[CZ_PATH_MAX];		/* "system", "user" or a D-Bus address */
	} systemd;
	struct {
		uint64_t check_interval_ms;	/* 30s */
		bool set_conditions;		/* false */
		uint64_t heartbeat_ms;		/* 5m: an unchanged condition is rewritten */
		char metrics_textfile[CZ_PATH_MAX]; /* "" = off */
		char kmsg[CZ_PATH_MAX];		/* "/dev/kmsg"; "" = do not follow the kernel log */
		bool remediate;			/* true: the agent remediates its own node; false:
						 * `cpuzombie remediator` does (the chart) */
	} agent;
	struct {
		enum cz_remediation_mode mode;	/* off */
		struct cz_strlist conditions;	/* MemcgZombieLeak, ENADeviceReset */
		uint64_t for_ms;		/* 10m */
		char max_unavailable[16];	/* "1", or a percentage such as "10%" */
		uint64_t drain_timeout_ms;	/* 10m */
		bool delete_emptydir_data;	/* false */
		bool allow_delete;		/* false: evictions only, never a plain delete */
		bool allow_control_plane;	/* false */
		uint64_t uncordon_after_ms;	/* 30m */
		char reboot_sentinel
			[CZ_PATH_MAX]; /* "" = off; e.g. /var/lib/cpuzombie/reboot-required */
		char lease_namespace[CZ_NAME_MAX]; /* "" = this pod's namespace */
		char node_selector[CZ_PATH_MAX]; /* remediator: label selector; "" = every node */
		char leader_namespace[CZ_NAME_MAX]; /* remediator's leader Lease; "" = its pod's */
		enum cz_reclaim_mode reclaim;	/* off */
		uint64_t reclaim_interval_ms;	/* 1h: at most one reclaim per this */
		/* fleet guards (remediator/guard.h) */
		char max_unhealthy[16];		/* "20%": storm guard, a count or a percentage */
		uint64_t
			/* 6: the storm guard holds in selections this big */
			max_unhealthy_min_nodes;
		uint64_t breaker_max;		/* 0 = off: remediations per breaker_window */
		uint64_t breaker_window_ms;	/* 1h */
		uint64_t drain_gap_ms;		/* 0 = off: between two remediations cluster-wide */
		struct cz_strlist window_days;	/* [] = every day */
		char window_start[8];		/* "" = 00:00 */
		char window_end[8];		/* "" = 24:00 */
		char window_timezone[CZ_NAME_MAX]; /* "UTC"; the TZ database's names */
		char medik8s_lease_namespace[CZ_NAME_MAX]; /* "" = off; medik8s: medik8s-leases */
		char kured_daemonset[CZ_NAME_MAX * 2]; /* "" = off; "kube-system/kured" */
	} remediation;
};

/* config_defaults - fill @cfg with every default (NODE_NAME from the environment). */
void config_defaults(struct cz_config *cfg);

/*
 * config_load_file - parse @path over the defaults. On success writes *@cfg and returns 0. On
 * failure returns -EINVAL (bad content: @errs holds one "FILE:LINE: ..." line per error) or
 * -errno from opening/reading (@errs names the file); *@cfg untouched.
 * @errs (may be NULL) receives at most @errs_size bytes, NUL-terminated, '\n'-separated.
 */
int config_load_file(const char *path, struct cz_config *cfg, char *errs, size_t errs_size);

/*
 * config_load_file_state - config_load_file, the host files (config_host_file_refused) checked
 * against the state directory @state (--state-dir) when not NULL, else against paths.state.
 */
int config_load_file_state(const char *path, const char *state, struct cz_config *cfg,
			   char *errs, size_t errs_size);

/*
 * config_load_string - same from an in-memory document; @name is used in messages.
 */
int config_load_string(const char *name, const char *text, size_t len, struct cz_config *cfg,
		       char *errs, size_t errs_size);

/*
 * The command line's say over the config file (--config, --proc-root, --sys-root, --state-dir,
 * --run-dir, --kubeconfig, --node-name; NULL: not given). Kept as data so that the agent's
 * SIGHUP applies them again over the file it rereads.
 */
struct cz_overrides {
	const char *config, *proc, *sys, *state, *run, *kubeconfig, *node;
};

/*
 * config_load_effective - the config a run uses: the defaults, then the file (@ov->config, else
 * CZ_DEFAULT_CONFIG_PATH when it exists), then the overrides. On success writes *@ret and
 * *@ret_path (the file loaded, or NULL for the embedded defaults) and returns 0. On failure
 * *@ret is undefined and @errs holds the errors, one per line: the file's ("FILE:LINE: ...", as
 * config_load_file) with -EINVAL or -errno, or one override's ("--node-name: ...") with
 * -EDOM, so that the caller can tell a bad option from a bad file.
 * remediation.lease_namespace "" becomes this pod's namespace ($POD_NAMESPACE, else the service
 * account's namespace file: $CZ_SERVICEACCOUNT_DIR/namespace, else the in-cluster one); when
 * neither is known and remediation.mode is not off: -EINVAL with one line saying so; with it
 * off (fleet, cleanup by hand): "cpuzombie", like remediation.leader_namespace.
 */
int config_load_effective(const struct cz_overrides *ov, struct cz_config *ret,
			  const char **ret_path, char *errs, size_t errs_size);

/* config_metric_name / config_mode_name - the YAML spelling of an enum value. */
const char *config_metric_name(enum cz_cpu_metric m);
const char *config_mode_name(enum cz_remediation_mode m);
const char *config_reclaim_name(enum cz_reclaim_mode m);

/* config_strlist_has - true when @name is in @l (exact match). */
bool config_strlist_has(const struct cz_strlist *l, const char *name);

/*
 * config_dump - write the effective config as YAML to @out (for `config check -v` and the
 * report). Returns 0 or -EIO.
 */
#include <stdio.h>
int config_dump(const struct cz_config *cfg, FILE *out);

/*
 * config_host_file_refused - pure: why @path may not be a file the agent writes on the host
 * (agent.metrics_textfile when @textfile, remediation.reboot_sentinel), or NULL when it may.
 * The chart mounts the file's directory writable into the agent, so that directory is taken
 * from an allow-list: the state directory @state_dir or a directory below it; for a textfile
 * also one directory of its own directly below node_exporter's collector directories
 * (/var/lib/node_exporter/NAME/, /var/lib/prometheus/node-exporter/NAME/). Absolute, no "." or
 * ".." component, no "//".
 */
const char *config_host_file_refused(const char *path, const char *state_dir, bool textfile);

#endif
