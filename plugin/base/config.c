/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <strings.h>
#include <yaml.h>

#include "base/config.h"
#include "base/ena_defaults.h"
#include "base/fileio.h"
#include "base/textsafe.h"
#include "base/yamldoc.h"
#include "base/util.h"

#define CONFIG_FILE_MAX (1024 * 1024)

/*
 * What a configuration can need, with room to spare: sections, keys and lists nest 3 deep (the
 * root mapping, a section, a list); the shipped file has about 60 keys and 250 events. Anything
 * beyond is refused at the line that crosses the limit, before it can cost time (yamldoc.h).
 */
static const struct yamldoc_limits limits = {
	.max_depth = 4,
	.max_keys = 512,
	.max_events = 8192,
	.max_directives = 8,
};

enum key_type {
	T_STR,	    /* char[] of .size bytes */
	T_NAME,	    /* like T_STR, but must be a valid name (Kubernetes node / namespace) */
	T_U64,	    /* non-negative integer */
	T_RATIO,    /* non-negative decimal, > 0 */
	T_PCT,	    /* decimal in (0, 100] */
	T_DUR,	    /* duration, stored as ms */
	T_DUR_POS,  /* duration > 0 */
	T_BOOL,
	T_LIST,	    /* sequence of names */
	T_METRIC,
	T_MODE,
	T_BUDGET,   /* "2" or "10%" */
	T_RECLAIM,
};

struct key_def {
	const char *section, *key;
	enum key_type type;
	size_t off, size;
};

#define K(sec, k, t, field)                                                                        \
	{                                                                                          \
		sec, k, t, offsetof(struct cz_config, field),                                      \
			sizeof(((struct cz_config *)0)->field)                                     \
	}

static const struct key_def keys[] = {
	K("paths", "proc", T_STR, paths.proc),
	K("paths", "sys", T_STR, paths.sys),
	K("paths", "state", T_STR, paths.state),
	K("paths", "run", T_STR, paths.run),
	K("paths", "pod_logs", T_STR, paths.pod_logs),
	K("memcg", "min_dying", T_U64, memcg.min_dying),
	K("memcg", "max_ratio", T_RATIO, memcg.max_ratio),
	K("memcg", "latency_canary", T_DUR, memcg.latency_canary_ms),
	K("memcg", "systemd_hints", T_BOOL, memcg.systemd_hints),
	K("memcg", "census_interval", T_DUR, memcg.census_interval_ms),
	K("memcg", "recover_after", T_DUR, memcg.recover_after_ms),
	K("memcg", "condition", T_BOOL, memcg.condition),
	K("cpu", "interval", T_DUR_POS, cpu.interval_ms),
	K("cpu", "metric", T_METRIC, cpu.metric),
	K("cpu", "threshold_pct", T_PCT, cpu.threshold_pct),
	K("cpu", "min_burst", T_DUR_POS, cpu.min_burst_ms),
	K("cpu", "lookback", T_DUR_POS, cpu.lookback_ms),
	K("cpu", "inline_window", T_DUR, cpu.inline_window_ms),
	K("cpu", "attribute_tasks", T_BOOL, cpu.attribute_tasks),
	K("cpu", "history", T_DUR_POS, cpu.history_ms),
	K("cpu", "history_seconds", T_DUR, cpu.history_seconds_ms),
	K("cpu", "history_minutes", T_DUR, cpu.history_minutes_ms),
	K("cpu", "hysteresis_pct", T_U64, cpu.hysteresis_pct),
	K("cpu", "max_dip", T_DUR, cpu.max_dip_ms),
	K("cpu", "profile", T_BOOL, cpu.profile),
	K("cpu", "profile_hz", T_U64, cpu.profile_hz),
	K("cpu", "profile_max", T_DUR_POS, cpu.profile_max_ms),
	K("cpu", "profile_bytes", T_U64, cpu.profile_bytes),
	K("cpu", "recover_after", T_DUR, cpu.recover_after_ms),
	K("cpu", "condition", T_BOOL, cpu.condition),
	K("ena", "drivers", T_LIST, ena.drivers),
	K("ena", "interfaces", T_LIST, ena.interfaces),
	K("ena", "window", T_DUR_POS, ena.window_ms),
	K("ena", "min_read_interval", T_DUR, ena.min_read_interval_ms),
	K("ena", "conntrack_floor", T_U64, ena.conntrack_floor),
	K("ena", "recover_after", T_DUR, ena.recover_after_ms),
	K("ena", "condition", T_BOOL, ena.condition),
	K("ena", "reset_counters", T_LIST, ena.reset_counters),
	K("ena", "risk_counters", T_LIST, ena.risk_counters),
	K("ena", "allowance_counters", T_LIST, ena.allowance_counters),
	K("kubernetes", "node_name", T_NAME, kubernetes.node_name),
	K("kubernetes", "kubeconfig", T_STR, kubernetes.kubeconfig),
	K("kubernetes", "timeout", T_DUR_POS, kubernetes.timeout_ms),
	K("systemd", "bus", T_STR, systemd.bus),
	K("agent", "check_interval", T_DUR_POS, agent.check_interval_ms),
	K("agent", "set_conditions", T_BOOL, agent.set_conditions),
	K("agent", "heartbeat", T_DUR_POS, agent.heartbeat_ms),
	K("agent", "metrics_textfile", T_STR, agent.metrics_textfile),
	K("agent", "kmsg", T_STR, agent.kmsg),
	K("agent", "remediate", T_BOOL, agent.remediate),
	K("remediation", "mode", T_MODE, remediation.mode),
	K("remediation", "conditions", T_LIST, remediation.conditions),
	K("remediation", "for", T_DUR, remediation.for_ms),
	K("remediation", "max_unavailable", T_BUDGET, remediation.max_unavailable),
	K("remediation", "drain_timeout", T_DUR_POS, remediation.drain_timeout_ms),
	K("remediation", "delete_emptydir_data", T_BOOL, remediation.delete_emptydir_data),
	K("remediation", "allow_delete", T_BOOL, remediation.allow_delete),
	K("remediation", "allow_control_plane", T_BOOL, remediation.allow_control_plane),
	K("remediation", "uncordon_after", T_DUR, remediation.uncordon_after_ms),
	K("remediation", "reboot_sentinel", T_STR, remediation.reboot_sentinel),
	K("remediation", "lease_namespace", T_NAME, remediation.lease_namespace),
	K("remediation", "node_selector", T_STR, remediation.node_selector),
	K("remediation", "leader_namespace", T_NAME, remediation.leader_namespace),
	K("remediation", "reclaim", T_RECLAIM, remediation.reclaim),
	K("remediation", "reclaim_interval", T_DUR_POS, remediation.reclaim_interval_ms),
	K("remediation", "max_unhealthy", T_BUDGET, remediation.max_unhealthy),
	K("remediation", "max_unhealthy_min_nodes", T_U64, remediation.max_unhealthy_min_nodes),
	K("remediation", "breaker_max", T_U64, remediation.breaker_max),
	K("remediation", "breaker_window", T_DUR_POS, remediation.breaker_window_ms),
	K("remediation", "drain_gap", T_DUR, remediation.drain_gap_ms),
	K("remediation", "window_days", T_LIST, remediation.window_days),
	K("remediation", "window_start", T_STR, remediation.window_start),
	K("remediation", "window_end", T_STR, remediation.window_end),
	K("remediation", "window_timezone", T_STR, remediation.window_timezone),
	K("remediation", "medik8s_lease_namespace", T_NAME, remediation.medik8s_lease_namespace),
	K("remediation", "kured_daemonset", T_STR, remediation.kured_daemonset),
};

/*
 * Bounds of the durations that make sense (an unbounded value would be taken as it is:
 * cpu.inline_window 25h under NPD's timeout, agent.check_interval 1ms). For a T_DUR key 0
 * keeps its meaning (off, or no limit) and the bounds hold for every other value.
 */
static const struct key_bound {
	const char *section, *key;
	uint64_t lo_ms, hi_ms;
	const char *why; /* shown after the range */
} bounds[] = {
	{ "memcg", "latency_canary", 1000, 24 * 3600 * 1000ull, NULL },
	{ "memcg", "census_interval", 1000, 24 * 3600 * 1000ull, NULL },
	{ "cpu", "interval", 10, 60 * 1000, NULL },
	{ "cpu", "min_burst", 1, 24 * 3600 * 1000ull, NULL },
	/* the check samples this long itself: NPD kills it at the timeout of its config (4 s
	 * in config/npd/cpuzombie-cpu.json), exec and reads around the window included */
	{ "cpu", "inline_window", 0, 8000, "sampled inside the check, under NPD's timeout" },
	/* each statistics read holds RTNL (ena.h) */
	{ "ena", "min_read_interval", 1000, 3600 * 1000, "each statistics read holds RTNL" },
	{ "kubernetes", "timeout", 100, 10 * 60 * 1000, NULL },
	/* a condition held True this long after its problem went away (condition/recover.h) */
	{ "memcg", "recover_after", 1000, 7 * 24 * 3600 * 1000ull, NULL },
	{ "cpu", "recover_after", 1000, 7 * 24 * 3600 * 1000ull, NULL },
	{ "ena", "recover_after", 1000, 7 * 24 * 3600 * 1000ull, NULL },
	{ "agent", "check_interval", 100, 24 * 3600 * 1000ull, "every check runs each interval" },
	{ "agent", "heartbeat", 1000, 24 * 3600 * 1000ull, NULL },
	{ "remediation", "breaker_window", 60 * 1000, 30 * 24 * 3600 * 1000ull, NULL },
	{ "remediation", "drain_gap", 1000, 7 * 24 * 3600 * 1000ull, NULL },
};

static const char *const metric_names[] = {
	[CZ_METRIC_SYSTEM] = "system",
	[CZ_METRIC_SYSTEM_IRQ] = "system+irq+softirq",
	[CZ_METRIC_BUSY] = "busy",
};

static const char *const mode_names[] = {
	[CZ_REMEDIATE_OFF] = "off",
	[CZ_REMEDIATE_DRY_RUN] = "dry-run",
	[CZ_REMEDIATE_CORDON] = "cordon",
	[CZ_REMEDIATE_DRAIN] = "drain",
};

static const char *const reclaim_names[] = {
	[CZ_RECLAIM_OFF] = "off",
	[CZ_RECLAIM_MEMORY_RECLAIM] = "memory.reclaim",
	[CZ_RECLAIM_DROP_CACHES] = "drop_caches",
};

const char *config_reclaim_name(enum cz_reclaim_mode m)
{
	return (unsigned)m < ARRAY_SIZE(reclaim_names) ? reclaim_names[m] : "?";
}

const char *config_metric_name(enum cz_cpu_metric m)
{
	return (unsigned)m < ARRAY_SIZE(metric_names) ? metric_names[m] : "?";
}

const char *config_mode_name(enum cz_remediation_mode m)
{
	return (unsigned)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

bool config_strlist_has(const struct cz_strlist *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (streq(l->item[i], name))
			return true;
	return false;
}

static void list_set(struct cz_strlist *l, const char *const *items)
{
	l->n = 0;
	/* memcpy, not snprintf: this runs on every exec of every check (config_defaults) */
	for (; items && *items && l->n < CZ_LIST_MAX; items++) {
		size_t n = strnlen(*items, CZ_NAME_MAX - 1);

		memcpy(l->item[l->n], *items, n);
		l->item[l->n++][n] = '\0';
	}
}

/*
 * kubernetes.node_name "" means $NODE_NAME (the downward API in the DaemonSet). An invalid
 * value is ignored here and reported by whoever needs a node name.
 */
static void node_name_from_env(struct cz_config *cfg)
{
	const char *node = getenv("NODE_NAME");

	if (!cfg->kubernetes.node_name[0] && node &&
	    valid_name(node, sizeof(cfg->kubernetes.node_name) - 1))
		snprintf(cfg->kubernetes.node_name, sizeof(cfg->kubernetes.node_name), "%s", node);
}

void config_defaults(struct cz_config *cfg)
{
	static const char *const drivers[] = { "ena", NULL };
	/* node-intrinsic only: any tenant can cause CPUCoreSaturation with a busy loop */
	static const char *const conditions[] = { "MemcgZombieLeak", "ENADeviceReset", NULL };
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->paths.proc, sizeof(cfg->paths.proc), "/proc");
	snprintf(cfg->paths.sys, sizeof(cfg->paths.sys), "/sys");
	snprintf(cfg->paths.state, sizeof(cfg->paths.state), "/var/lib/cpuzombie");
	snprintf(cfg->paths.run, sizeof(cfg->paths.run), "/run/cpuzombie");
	snprintf(cfg->paths.pod_logs, sizeof(cfg->paths.pod_logs), "/var/log/pods");
	cfg->memcg.min_dying = 1000;
	cfg->memcg.max_ratio = 10;
	cfg->memcg.latency_canary_ms = 10 * 60 * 1000;
	cfg->memcg.census_interval_ms = 10 * 60 * 1000;
	cfg->memcg.systemd_hints = true;
	cfg->memcg.condition = true;
	cfg->cpu.condition = true;
	cfg->ena.condition = true;
	cfg->cpu.interval_ms = 250;
	cfg->cpu.metric = CZ_METRIC_SYSTEM;
	cfg->cpu.threshold_pct = 90;
	cfg->cpu.min_burst_ms = 2000;
	cfg->cpu.lookback_ms = 10 * 60 * 1000;
	cfg->cpu.inline_window_ms = 3000;
	cfg->cpu.attribute_tasks = true;
	cfg->cpu.history_ms = 15 * 60 * 1000;
	cfg->cpu.history_seconds_ms = 6 * 3600 * 1000;
	cfg->cpu.history_minutes_ms = 7 * 24 * 3600 * 1000ull;
	cfg->cpu.hysteresis_pct = 20;
	cfg->cpu.max_dip_ms = 1000;
	cfg->cpu.profile = true;
	cfg->cpu.profile_hz = 99;
	cfg->cpu.profile_max_ms = 30 * 1000;
	cfg->cpu.profile_bytes = 64 * 1024;
	list_set(&cfg->ena.drivers, drivers);
	cfg->ena.window_ms = 60 * 60 * 1000;
	cfg->ena.min_read_interval_ms = 5000;
	list_set(&cfg->ena.reset_counters, ena_default_reset_counters);
	list_set(&cfg->ena.risk_counters, ena_default_risk_counters);
	list_set(&cfg->ena.allowance_counters, ena_default_allowance_counters);
	node_name_from_env(cfg);
	cfg->kubernetes.timeout_ms = 10000;
	snprintf(cfg->systemd.bus, sizeof(cfg->systemd.bus), "system");
	cfg->agent.check_interval_ms = 30000;
	cfg->agent.heartbeat_ms = 5 * 60 * 1000;
	snprintf(cfg->agent.kmsg, sizeof(cfg->agent.kmsg), "/dev/kmsg");
	cfg->agent.remediate = true;
	cfg->remediation.mode = CZ_REMEDIATE_OFF;
	list_set(&cfg->remediation.conditions, conditions);
	cfg->remediation.for_ms = 10 * 60 * 1000;
	snprintf(cfg->remediation.max_unavailable, sizeof(cfg->remediation.max_unavailable), "1");
	cfg->remediation.drain_timeout_ms = 10 * 60 * 1000;
	cfg->remediation.uncordon_after_ms = 30 * 60 * 1000;
	cfg->remediation.reclaim = CZ_RECLAIM_OFF;
	cfg->remediation.reclaim_interval_ms = 60 * 60 * 1000;
	/* remediation.lease_namespace "": this pod's namespace (config_load_effective) */
	/* the storm guard as EKS node auto repair: over 20% of a group of more than 5 pauses it */
	snprintf(cfg->remediation.max_unhealthy, sizeof(cfg->remediation.max_unhealthy), "20%%");
	cfg->remediation.max_unhealthy_min_nodes = 6;
	cfg->remediation.breaker_window_ms = 60 * 60 * 1000;
	snprintf(cfg->remediation.window_timezone, sizeof(cfg->remediation.window_timezone), "UTC");
}

/* ---- loading ---- */

struct loader {
	const char *file;
	struct cz_config *cfg;
	char *errs;
	size_t errs_size, errs_len;
	unsigned nerr;
	const char *state;	/* the state directory host files are checked against, or NULL */
	struct host_key {
		const struct key_def *k;
		size_t line;
	} host[4];		/* the host file keys given, checked once all is read */
	size_t nhost;
};

static void _printf_(3, 4) add_err(struct loader *ld, const yaml_node_t *node, const char *fmt, ...)
{
	char raw[512], line[512];
	va_list ap;
	int w;

	ld->nerr++;
	if (!ld->errs || ld->errs_len + 1 >= ld->errs_size)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	textsafe(TEXTSAFE_TEXT, raw, line, sizeof(line)); /* keys and values are any bytes */
	if (node)
		w = snprintf(ld->errs + ld->errs_len, ld->errs_size - ld->errs_len, "%s:%zu: %s\n",
			     ld->file, node->start_mark.line + 1, line);
	else
		w = snprintf(ld->errs + ld->errs_len, ld->errs_size - ld->errs_len, "%s: %s\n",
			     ld->file, line);
	if (w > 0)
		ld->errs_len = (size_t)w >= ld->errs_size - ld->errs_len ? ld->errs_size - 1
									 : ld->errs_len + (size_t)w;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A scalar with a NUL byte inside ("system\0garbage" in double quotes): its C string would be
 * cut at the NUL, silently; libyaml keeps the real length beside it. */
static bool has_nul(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE &&
	       strlen((const char *)n->data.scalar.value) != n->data.scalar.length;
}

/*
 * node_exporter's textfile collector directories as its packages lay them out: a host file the
 * agent writes for it lies in one directory of its own directly below one of these (the chart
 * mounts that one directory writable, nothing above it).
 */
static const char *const collector_dirs[] = {
	"/var/lib/node_exporter",
	"/var/lib/prometheus/node-exporter",
};

/* @dir (not NUL-terminated, @dlen bytes) is @base or below it. */
static bool dir_under(const char *dir, size_t dlen, const char *base)
{
	size_t n = strlen(base);

	while (n > 1 && base[n - 1] == '/')
		n--;
	return n > 0 && base[0] == '/' && dlen >= n && memcmp(dir, base, n) == 0 &&
	       (dlen == n || dir[n] == '/' || n == 1);
}

/* One path component a directory of its own may be named: [A-Za-z0-9._-], not "." or "..". */
static bool plain_component(const char *s, size_t n)
{
	if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

const char *config_host_file_refused(const char *path, const char *state_dir, bool textfile)
{
	size_t len = strlen(path), dlen;
	const char *slash;

	if (path[0] != '/')
		return "not an absolute path";
	for (const char *c = path; *c; c++)
		if (c[0] == '/' && c[1] == '.' &&
		    (c[2] == '/' || !c[2] || (c[2] == '.' && (c[3] == '/' || !c[3]))))
			return "a '.' or '..' component";
	if (path[len - 1] == '/' || strstr(path, "//"))
		return "not a file's path";
	slash = strrchr(path, '/');
	dlen = (size_t)(slash - path);
	/* the state directory, or a directory of its own below it */
	if (state_dir && dlen > 0 && dir_under(path, dlen, state_dir))
		return NULL;
	/* one textfile directory of its own directly below node_exporter's */
	for (size_t i = 0; textfile && i < ARRAY_SIZE(collector_dirs); i++) {
		size_t n = strlen(collector_dirs[i]);

		if (dlen > n + 1 && memcmp(path, collector_dirs[i], n) == 0 && path[n] == '/' &&
		    plain_component(path + n + 1, dlen - n - 1))
			return NULL;
	}
	/* short: the NPD line carries it, cut at the check's output limit */
	return textfile ? "its directory is neither the state dir (or below) nor one of its "
			  "own below node_exporter's (/var/lib/node_exporter/)"
			: "its directory is not the state dir (or below it)";
}

static bool host_file_key(const struct key_def *k)
{
	return (streq(k->section, "agent") && streq(k->key, "metrics_textfile")) ||
	       (streq(k->section, "remediation") && streq(k->key, "reboot_sentinel"));
}

/* True (with the allowed range in @buf) when a duration key's value is outside bounds[]. */
static bool out_of_bounds(const struct key_def *k, const void *val, char *buf, size_t size)
{
	char lo[32], hi[32];
	uint64_t v;

	if (k->type != T_DUR && k->type != T_DUR_POS)
		return false;
	v = *(const uint64_t *)val;
	for (size_t i = 0; i < ARRAY_SIZE(bounds); i++) {
		const struct key_bound *b = &bounds[i];

		if (!streq(b->section, k->section) || !streq(b->key, k->key))
			continue;
		if ((k->type == T_DUR && v == 0) || (v >= b->lo_ms && v <= b->hi_ms))
			return false;
		format_duration(b->lo_ms, lo, sizeof(lo));
		format_duration(b->hi_ms, hi, sizeof(hi));
		snprintf(buf, size, "%s%s..%s%s%s%s", k->type == T_DUR && b->lo_ms ? "0 or " : "",
			 lo, hi, b->why ? " (" : "", b->why ? b->why : "", b->why ? ")" : "");
		return true;
	}
	return false;
}

static bool plain_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (streq(s, "") || streq(s, "~") || streq(s, "null"));
}

static bool valid_counter_name(const char *s)
{
	size_t n = strlen(s);

	/* ethtool stat names, '*' standing for a queue number. The kernel cuts names to 31 bytes
	 * (ETH_GSTRING_LEN - 1); a longer pattern still matches the cut name (ena_name_match). */
	if (n == 0 || n >= CZ_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '*'))
			return false;
	return true;
}

static int set_list(struct loader *ld, const struct key_def *k, const yaml_node_t *val,
		    yaml_document_t *doc, void *dst)
{
	struct cz_strlist tmp = { 0 };
	const bool counters = streq(k->section, "ena") && !streq(k->key, "drivers") &&
			      !streq(k->key, "interfaces");
	const bool ifnames = streq(k->section, "ena") && streq(k->key, "interfaces");

	if (plain_null(val)) {
		*(struct cz_strlist *)dst = tmp;
		return 0;
	}
	if (val->type != YAML_SEQUENCE_NODE) {
		add_err(ld, val, "key '%s.%s': expected a list", k->section, k->key);
		return -EINVAL;
	}
	for (yaml_node_item_t *it = val->data.sequence.items.start;
	     it < val->data.sequence.items.top; it++) {
		yaml_node_t *item = yaml_document_get_node(doc, *it);
		const char *s = scalar(item);

		if (has_nul(item)) {
			add_err(ld, item, "key '%s.%s': an entry contains a NUL byte", k->section,
				k->key);
			return -EINVAL;
		}
		if (!s || (counters  ? !valid_counter_name(s)
			   : ifnames ? !valid_ifname(s) /* any name the kernel takes */
				     : !valid_name(s, CZ_NAME_MAX - 1))) {
			add_err(ld, item ? item : val, "key '%s.%s': invalid entry '%s'",
				k->section, k->key, s ? s : "(not a string)");
			return -EINVAL;
		}
		if (tmp.n >= CZ_LIST_MAX) {
			add_err(ld, item, "key '%s.%s': more than %d entries", k->section, k->key,
				CZ_LIST_MAX);
			return -E2BIG;
		}
		snprintf(tmp.item[tmp.n++], CZ_NAME_MAX, "%s", s);
	}
	*(struct cz_strlist *)dst = tmp;
	return 0;
}

static int lookup(const char *const *names, size_t n, const char *s)
{
	return name_index(names, n, s, strlen(s));
}

static int set_budget(const char *s, char *dst, size_t size)
{
	uint64_t v;
	size_t n = strlen(s);
	char num[16];

	if (n == 0 || n >= size || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	if (num[n - 1] == '%') {
		num[n - 1] = '\0';
		if (parse_u64(num, &v) < 0 || v == 0 || v > 100)
			return -EINVAL;
	} else if (parse_u64(num, &v) < 0 || v == 0) {
		return -EINVAL; /* 0 would mean "never act": that is mode: off */
	}
	memcpy(dst, s, n + 1);
	return 0;
}

/* Convert one scalar into its field; returns 0 or -EINVAL with a reason in @why. */
static int set_scalar(const struct key_def *k, const char *s, void *dst, const char **why)
{
	uint64_t u;
	double d;
	int i;

	switch (k->type) {
	case T_STR:
	case T_NAME:
		if (strlen(s) >= k->size)
			return *why = "too long", -EINVAL;
		if (k->type == T_NAME && *s && !valid_name(s, k->size - 1))
			return *why = "not a valid name", -EINVAL;
		snprintf(dst, k->size, "%s", s);
		return 0;
	case T_U64:
		if (parse_u64(s, &u) < 0)
			return *why = "expected a non-negative integer", -EINVAL;
		*(uint64_t *)dst = u;
		return 0;
	case T_RATIO:
	case T_PCT:
		if (parse_double(s, &d) < 0 || d <= 0 || (k->type == T_PCT && d > 100))
			return *why = k->type == T_PCT ? "expected a percentage in (0, 100]"
						       : "expected a positive number",
			       -EINVAL;
		*(double *)dst = d;
		return 0;
	case T_DUR:
	case T_DUR_POS:
		if (parse_duration_ms(s, &u) < 0 || (k->type == T_DUR_POS && u == 0))
			return *why = "expected a duration such as 250ms, 2s, 10m, 1h", -EINVAL;
		*(uint64_t *)dst = u;
		return 0;
	case T_BOOL:
		if (!streq(s, "true") && !streq(s, "false"))
			return *why = "expected true or false", -EINVAL;
		*(bool *)dst = streq(s, "true");
		return 0;
	case T_METRIC:
		i = lookup(metric_names, ARRAY_SIZE(metric_names), s);
		if (i < 0)
			return *why = "expected system, system+irq+softirq or busy", -EINVAL;
		*(enum cz_cpu_metric *)dst = (enum cz_cpu_metric)i;
		return 0;
	case T_MODE:
		i = lookup(mode_names, ARRAY_SIZE(mode_names), s);
		if (i < 0)
			return *why = "expected off, dry-run, cordon or drain", -EINVAL;
		*(enum cz_remediation_mode *)dst = (enum cz_remediation_mode)i;
		return 0;
	case T_RECLAIM:
		i = lookup(reclaim_names, ARRAY_SIZE(reclaim_names), s);
		if (i < 0)
			return *why = "expected off, memory.reclaim or drop_caches", -EINVAL;
		*(enum cz_reclaim_mode *)dst = (enum cz_reclaim_mode)i;
		return 0;
	case T_BUDGET:
		if (set_budget(s, dst, k->size) < 0)
			return *why = "expected a node count >= 1 or a percentage such as 10%",
			       -EINVAL;
		return 0;
	default:
		return *why = "internal: unknown type", -EINVAL;
	}
}

static const struct key_def *find_key(const char *section, const char *key, bool *section_known)
{
	*section_known = false;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (!streq(keys[i].section, section))
			continue;
		*section_known = true;
		if (key && streq(keys[i].key, key))
			return &keys[i];
	}
	return NULL;
}

/* The first row of @section in keys[], or -1: stands for the section in the seen[] bitmap. */
static int section_row(const char *section)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (streq(keys[i].section, section))
			return (int)i;
	return -1;
}

/*
 * Duplicates are found with one flag per row of keys[] (@seen): known names are the only ones
 * that can repeat without being errors already, so this is linear in the number of keys.
 */
static void load_section(struct loader *ld, yaml_document_t *doc, const char *section,
			 const yaml_node_t *map, bool *seen)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *kn = yaml_document_get_node(doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(doc, p->value);
		const char *key = scalar(kn), *why = NULL, *s;
		const struct key_def *k;
		char range[160];
		bool known;

		if (!key || has_nul(kn)) {
			add_err(ld, kn, "section '%s': keys must be plain names", section);
			continue;
		}
		k = find_key(section, key, &known);
		if (!k) {
			add_err(ld, kn, "unknown key '%s.%s'", section, key);
			continue;
		}
		if (seen[k - keys]) {
			add_err(ld, kn, "key '%s.%s': given twice", section, key);
			continue;
		}
		seen[k - keys] = true;
		if (k->type == T_LIST) {
			set_list(ld, k, vn, doc, (char *)ld->cfg + k->off);
			continue;
		}
		s = scalar(vn);
		if (!s) {
			add_err(ld, vn ? vn : kn, "key '%s.%s': expected a single value", section,
				key);
			continue;
		}
		if (has_nul(vn)) {
			add_err(ld, vn, "key '%s.%s': the value contains a NUL byte", section, key);
			continue;
		}
		if (set_scalar(k, s, (char *)ld->cfg + k->off, &why) < 0)
			add_err(ld, vn, "key '%s.%s': %s, got '%.64s'", section, key, why, s);
		else if (out_of_bounds(k, (char *)ld->cfg + k->off, range, sizeof(range)))
			add_err(ld, vn, "key '%s.%s': out of range, expected %s, got '%.64s'",
				section, key, range, s);
		else if (host_file_key(k) && s[0] && ld->nhost < ARRAY_SIZE(ld->host))
			ld->host[ld->nhost++] = (struct host_key){ k, vn->start_mark.line + 1 };
	}
}

static void load_root(struct loader *ld, yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	bool seen_key[ARRAY_SIZE(keys)] = { false }, seen_section[ARRAY_SIZE(keys)] = { false };

	if (!root || plain_null(root))
		return; /* an empty file: every default */
	if (root->type != YAML_MAPPING_NODE) {
		add_err(ld, root, "expected a mapping of sections (paths, memcg, cpu, ena, ...)");
		return;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(doc, p->value);
		const char *sec = scalar(kn);
		int row;

		if (!sec || has_nul(kn)) {
			add_err(ld, kn, "section names must be plain names");
			continue;
		}
		row = section_row(sec);
		if (row < 0) {
			add_err(ld, kn, "unknown section '%s'", sec);
			continue;
		}
		if (seen_section[row]) {
			add_err(ld, kn, "section '%s': given twice", sec);
			continue;
		}
		seen_section[row] = true;
		if (plain_null(vn))
			continue;
		if (vn->type != YAML_MAPPING_NODE) {
			add_err(ld, vn, "section '%s': expected a mapping of keys", sec);
			continue;
		}
		load_section(ld, doc, sec, vn, seen_key);
	}
}

/* "HH:MM", 00:00..24:00 (kured's --start-time/--end-time, minutes only) */
static bool valid_hhmm(const char *s)
{
	return strlen(s) == 5 && s[2] == ':' && s[0] >= '0' && s[0] <= '2' && s[1] >= '0' &&
	       s[1] <= '9' && s[3] >= '0' && s[3] <= '5' && s[4] >= '0' && s[4] <= '9' &&
	       ((s[0] - '0') * 10 + (s[1] - '0') < 24 || streq(s, "24:00"));
}

/* A TZ database name: letters, digits, '/', '_', '-', '+'; no "..", no leading '/'. */
static bool valid_zone(const char *s)
{
	if (!*s || *s == '/' || strstr(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '/' || *s == '_' || *s == '-' || *s == '+'))
			return false;
	return true;
}

/* The maintenance window and breaker keys (remediation.window_*, breaker_max). */
static void check_guards(struct loader *ld)
{
	static const char *const days[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };
	const struct cz_config *c = ld->cfg;

	for (size_t i = 0; i < c->remediation.window_days.n; i++) {
		const char *d = c->remediation.window_days.item[i];
		bool ok = false;

		for (size_t k = 0; k < ARRAY_SIZE(days); k++)
			ok = ok || strcasecmp(d, days[k]) == 0;
		if (!ok)
			add_err(ld, NULL,
				"key 'remediation.window_days': '%s' is not a day (sun, mon, "
				"tue, wed, thu, fri, sat)",
				d);
	}
	if (*c->remediation.window_start && !valid_hhmm(c->remediation.window_start))
		add_err(ld, NULL, "key 'remediation.window_start': expected HH:MM, got '%s'",
			c->remediation.window_start);
	if (*c->remediation.window_end && !valid_hhmm(c->remediation.window_end))
		add_err(ld, NULL, "key 'remediation.window_end': expected HH:MM, got '%s'",
			c->remediation.window_end);
	if (!valid_zone(c->remediation.window_timezone))
		add_err(ld, NULL,
			"key 'remediation.window_timezone': not a TZ database name such as "
			"UTC or Europe/Berlin, got '%s'",
			c->remediation.window_timezone);
	if (*c->remediation.kured_daemonset) {
		const char *k = c->remediation.kured_daemonset, *sl = strchr(k, '/');
		char ns[CZ_NAME_MAX] = "";

		if (sl && (size_t)(sl - k) < sizeof(ns))
			memcpy(ns, k, (size_t)(sl - k));
		if (!sl || !valid_name(ns, CZ_NAME_MAX - 1) || !valid_name(sl + 1, CZ_NAME_MAX - 1))
			add_err(ld, NULL,
				"key 'remediation.kured_daemonset': expected NAMESPACE/NAME "
				"such as kube-system/kured, got '%s'",
				k);
	}
	if (c->remediation.breaker_max > 64)
		add_err(ld, NULL, "key 'remediation.breaker_max': more than 64 (the history kept)");
}

static int check_consistency(struct loader *ld)
{
	const struct cz_config *c = ld->cfg;

	/* Relations between keys, checked after everything parsed. */
	if (c->cpu.min_burst_ms < c->cpu.interval_ms)
		add_err(ld, NULL, "key 'cpu.min_burst': shorter than cpu.interval");
	if (c->cpu.history_ms / c->cpu.interval_ms > 24 * 3600 * 4)
		add_err(ld, NULL, "key 'cpu.history': more than a day of samples at cpu.interval");
	if (c->cpu.history_seconds_ms / 1000 > 7 * 24 * 3600)
		add_err(ld, NULL, "key 'cpu.history_seconds': more than 7 days of seconds");
	if (c->cpu.history_minutes_ms / 60000 > 366 * 24 * 60)
		add_err(ld, NULL, "key 'cpu.history_minutes': more than a year of minutes");
	if ((double)c->cpu.hysteresis_pct >= c->cpu.threshold_pct)
		add_err(ld, NULL, "key 'cpu.hysteresis_pct': not below cpu.threshold_pct");
	if (c->cpu.profile_hz < 1 || c->cpu.profile_hz > 10000)
		add_err(ld, NULL, "key 'cpu.profile_hz': not within 1..10000");
	if (c->cpu.profile_bytes < 1024 || c->cpu.profile_bytes > 16 * 1024 * 1024)
		add_err(ld, NULL, "key 'cpu.profile_bytes': not within 1024..16777216");
	if (c->cpu.lookback_ms > c->cpu.history_ms && c->cpu.lookback_ms > 24 * 3600 * 1000ull)
		add_err(ld, NULL, "key 'cpu.lookback': longer than a day");
	for (size_t i = 0; i < c->ena.interfaces.n; i++)
		if (strlen(c->ena.interfaces.item[i]) > 15) /* IFNAMSIZ - 1 */
			add_err(ld, NULL,
				"key 'ena.interfaces': '%s' is longer than an interface name",
				c->ena.interfaces.item[i]);
	check_guards(ld);
	return ld->nerr ? -EINVAL : 0;
}

/* The host files given (agent.metrics_textfile, remediation.reboot_sentinel), each against
 * the state directory: @ld->state (--state-dir) or paths.state as read. */
static void check_host_files(struct loader *ld)
{
	const char *state = ld->state ? ld->state : ld->cfg->paths.state;

	for (size_t i = 0; i < ld->nhost; i++) {
		const struct key_def *k = ld->host[i].k;
		const char *v = (const char *)ld->cfg + k->off;
		const char *why = config_host_file_refused(v, state, streq(k->section, "agent"));
		yaml_node_t at = { .start_mark.line = ld->host[i].line - 1 };

		if (why)
			add_err(ld, &at, "key '%s.%s': %s, got '%.64s'", k->section, k->key, why,
				v);
	}
}

static int load_string(const char *name, const char *text, size_t len, const char *state,
		       struct cz_config *cfg, char *errs, size_t errs_size)
{
	struct cz_config tmp;
	struct loader ld = { .file = name, .cfg = &tmp, .errs = errs, .errs_size = errs_size,
			     .state = state };
	yaml_document_t doc;
	struct yamldoc_error yerr;
	int r = 0, more = 0;

	if (errs && errs_size)
		errs[0] = '\0';
	if (len > CONFIG_FILE_MAX) {
		add_err(&ld, NULL, "larger than %d bytes", CONFIG_FILE_MAX);
		return -EFBIG;
	}
	config_defaults(&tmp);
	r = yamldoc_load(text, len, &limits, &doc, &more, &yerr);
	if (r < 0) {
		if (r != -EINVAL)
			return r;
		ld.nerr++;
		if (errs && errs_size && yerr.line)
			snprintf(errs, errs_size, "%s:%zu: %s\n", name, yerr.line, yerr.what);
		else if (errs && errs_size)
			snprintf(errs, errs_size, "%s: %s\n", name, yerr.what);
		return -EINVAL;
	}
	load_root(&ld, &doc);
	yaml_document_delete(&doc);
	check_host_files(&ld);
	/* A second document ("---") would be silently ignored: refuse it instead. */
	if (ld.nerr == 0 && more)
		add_err(&ld, NULL, "more than one YAML document");
	r = 0;
	if (ld.nerr == 0)
		r = check_consistency(&ld);
	if (ld.nerr)
		return -EINVAL;
	if (r == 0) {
		node_name_from_env(&tmp);
		*cfg = tmp;
	}
	return r;
}

int config_load_string(const char *name, const char *text, size_t len, struct cz_config *cfg,
		       char *errs, size_t errs_size)
{
	return load_string(name, text, len, NULL, cfg, errs, errs_size);
}

int config_load_file(const char *path, struct cz_config *cfg, char *errs, size_t errs_size)
{
	return config_load_file_state(path, NULL, cfg, errs, errs_size);
}

int config_load_file_state(const char *path, const char *state, struct cz_config *cfg,
			   char *errs, size_t errs_size)
{
	_cleanup_free_ char *buf = malloc(CONFIG_FILE_MAX + 1);
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	n = fd < 0 ? -errno : fileio_pread_all(fd, buf, CONFIG_FILE_MAX + 1);
	if (n < 0) {
		if (errs && errs_size)
			snprintf(errs, errs_size, "%s: cannot read: %s\n", path,
				 n == -EFBIG ? "larger than 1 MiB" : strerror((int)-n));
		return (int)n;
	}
	return load_string(path, buf, (size_t)n, state, cfg, errs, errs_size);
}

static void dump_value(const struct key_def *k, const void *p, FILE *out)
{
	char d[64];

	switch (k->type) {
	case T_STR:
	case T_NAME:
	case T_BUDGET:
		fprintf(out, "\"%s\"", (const char *)p);
		break;
	case T_U64:
		fprintf(out, "%" PRIu64, *(const uint64_t *)p);
		break;
	case T_RATIO:
	case T_PCT:
		fprintf(out, "%g", *(const double *)p);
		break;
	case T_DUR:
	case T_DUR_POS:
		fprintf(out, "%s", format_duration(*(const uint64_t *)p, d, sizeof(d)));
		break;
	case T_BOOL:
		fprintf(out, "%s", *(const bool *)p ? "true" : "false");
		break;
	case T_METRIC:
		fprintf(out, "%s", config_metric_name(*(const enum cz_cpu_metric *)p));
		break;
	case T_MODE:
		fprintf(out, "%s", config_mode_name(*(const enum cz_remediation_mode *)p));
		break;
	case T_RECLAIM:
		fprintf(out, "%s", config_reclaim_name(*(const enum cz_reclaim_mode *)p));
		break;
	case T_LIST: {
		const struct cz_strlist *l = p;

		fputc('[', out);
		for (size_t i = 0; i < l->n; i++)
			fprintf(out, "%s%s", i ? ", " : "", l->item[i]);
		fputc(']', out);
		break;
	}
	}
}

int config_dump(const struct cz_config *cfg, FILE *out)
{
	const char *section = "";

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (!streq(section, keys[i].section)) {
			section = keys[i].section;
			fprintf(out, "%s:\n", section);
		}
		fprintf(out, "  %s: ", keys[i].key);
		dump_value(&keys[i], (const char *)cfg + keys[i].off, out);
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}
