/* SPDX-License-Identifier: MIT */
/* The fleet guards of remediation, pure: see guard.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/textsafe.h"
#include "base/util.h"
#include "remediator/guard.h"
#include "base/kjson.h"

/* ---- storm guard --------------------------------------------------------------------------- */

void guard_fleet_add(struct guard_fleet *f, json_object *node, const struct cz_strlist *types)
{
	f->covered++;
	for (size_t i = 0; i < types->n && i < CZ_LIST_MAX; i++)
		if (streq(kube_get_str(kube_condition(node, types->item[i]), "status", ""), "True"))
			f->true_n[i]++;
}

long guard_unhealthy_limit(const char *max_unhealthy, size_t covered)
{
	size_t len = strlen(max_unhealthy);
	char num[16];
	uint64_t v;

	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, max_unhealthy, len + 1);
	if (num[len - 1] == '%') {
		num[len - 1] = '\0';
		if (parse_u64(num, &v) < 0 || v == 0 || v > 100)
			return -EINVAL;
		return (long)((uint64_t)covered * v / 100);
	}
	if (parse_u64(num, &v) < 0 || v == 0 || v > 10000000)
		return -EINVAL;
	return (long)v;
}

int guard_storm(const struct guard_fleet *f, const struct cz_config *cfg, char *why, size_t size)
{
	const struct cz_strlist *types = &cfg->remediation.conditions;
	long limit = guard_unhealthy_limit(cfg->remediation.max_unhealthy, f->covered);

	if (limit < 0 || f->covered < cfg->remediation.max_unhealthy_min_nodes)
		return -1;
	for (size_t i = 0; i < types->n && i < CZ_LIST_MAX; i++) {
		if (f->true_n[i] <= (size_t)limit)
			continue;
		snprintf(
			why, size,
			"storm guard: %s is True on %zu of %zu nodes, more than "
			"remediation.max_unhealthy %s (%ld): a fleet-wide cause, remediating "
			"nothing",
			types->item[i], f->true_n[i], f->covered, cfg->remediation.max_unhealthy,
			limit);
		return (int)i;
	}
	return -1;
}

/* ---- breaker and pacing -------------------------------------------------------------------- */

/* One history entry "<RFC 3339> <node>" of @s (up to ';' or the end): its time, or -EINVAL. */
static int entry_time(const char *s, size_t len, uint64_t *ret)
{
	char t[40];
	size_t n = 0;

	while (n < len && s[n] != ' ')
		n++;
	if (n == 0 || n >= sizeof(t))
		return -EINVAL;
	memcpy(t, s, n);
	t[n] = '\0';
	return kube_parse_time(t, ret);
}

/* Within the last @window_ms at @now_ms; up to a minute ahead counts too (another replica's
 * clock a little ahead of ours), further ahead is garbage. */
static bool in_window(uint64_t t, uint64_t now_ms, uint64_t window_ms)
{
	return t > now_ms ? t - now_ms <= 60000 : now_ms - t < window_ms;
}

void guard_state_read(json_object *lease, uint64_t now_ms, uint64_t window_ms,
		      struct guard_state *ret)
{
	const char *trip = kube_annotation(lease, GUARD_ANN_TRIPPED);
	const char *hist = kube_annotation(lease, GUARD_ANN_HISTORY);
	const char *last = kube_annotation(lease, GUARD_ANN_LAST);
	struct guard_state g = { 0 };

	if (trip) {
		g.tripped = true;
		textsafe(TEXTSAFE_TEXT, *trip ? trip : "(no reason given)", g.tripped_why,
			 sizeof(g.tripped_why));
	}
	for (const char *p = hist; p && *p;) {
		size_t len = strcspn(p, ";");
		uint64_t t;

		while (len && *p == ' ')
			p++, len--;
		if (entry_time(p, len, &t) == 0 && in_window(t, now_ms, window_ms))
			g.recent++;
		p += len;
		if (*p == ';')
			p++;
	}
	if (last && entry_time(last, strlen(last), &g.last_ms) == 0) {
		const char *sp = strchr(last, ' ');

		if (sp)
			textsafe(TEXTSAFE_TEXT, sp + 1, g.last_node, sizeof(g.last_node));
	}
	*ret = g;
}

/* The guard Lease to write: @old's metadata (resourceVersion kept) or a new one, with
 * annotations to change; returns the new Lease and its annotations object in *@ret_ann. */
static json_object *guard_base(json_object *old, json_object **ret_ann)
{
	json_object *l = NULL, *md, *ann, *labels;

	if (old && !json_object_is_type(old, json_type_object))
		return NULL;
	if (old) {
		if (json_object_deep_copy(old, &l, NULL) < 0)
			return NULL;
	} else {
		l = json_object_new_object();
		json_object_object_add(l, "apiVersion",
				       json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(l, "kind", json_object_new_string("Lease"));
		json_object_object_add(l, "spec", json_object_new_object());
	}
	md = kube_get(l, "metadata");
	if (!md || !json_object_is_type(md, json_type_object)) {
		md = json_object_new_object();
		json_object_object_add(l, "metadata", md);
	}
	json_object_object_add(md, "name", json_object_new_string(GUARD_LEASE));
	labels = kube_get(md, "labels");
	if (!labels || !json_object_is_type(labels, json_type_object)) {
		labels = json_object_new_object();
		json_object_object_add(md, "labels", labels);
	}
	json_object_object_add(labels, "app.kubernetes.io/managed-by",
			       json_object_new_string("cpuzombie"));
	ann = kube_get(md, "annotations");
	if (!ann || !json_object_is_type(ann, json_type_object)) {
		ann = json_object_new_object();
		json_object_object_add(md, "annotations", ann);
	}
	*ret_ann = ann;
	return l;
}

json_object *guard_record_body(json_object *old, const char *node, uint64_t now_ms,
			       uint64_t window_ms)
{
	const char *hist = kube_annotation(old, GUARD_ANN_HISTORY);
	char ts[40], one[320], *buf;
	size_t cap = (GUARD_HISTORY_MAX + 1) * sizeof(one), len = 0, kept = 0;
	const char *ents[GUARD_HISTORY_MAX * 4];
	size_t lens[GUARD_HISTORY_MAX * 4], n = 0;
	json_object *ann, *l = guard_base(old, &ann);

	if (!l || !(buf = malloc(cap))) {
		json_object_put(l);
		return NULL;
	}
	for (const char *p = hist; p && *p && n < ARRAY_SIZE(ents);) {
		size_t e = strcspn(p, ";");
		uint64_t t;

		while (e && *p == ' ')
			p++, e--;
		if (entry_time(p, e, &t) == 0 && in_window(t, now_ms, window_ms) &&
		    e < sizeof(one)) {
			ents[n] = p;
			lens[n++] = e;
		}
		p += e;
		if (*p == ';')
			p++;
	}
	/* the newest GUARD_HISTORY_MAX - 1, then this one */
	for (size_t i = n > GUARD_HISTORY_MAX - 1 ? n - (GUARD_HISTORY_MAX - 1) : 0; i < n; i++) {
		memcpy(buf + len, ents[i], lens[i]);
		len += lens[i];
		buf[len++] = ';';
		kept++;
	}
	snprintf(one, sizeof(one), "%s %.253s", kube_time(now_ms, false, ts, sizeof(ts)), node);
	memcpy(buf + len, one, strlen(one) + 1);
	json_object_object_add(ann, GUARD_ANN_HISTORY, json_object_new_string(buf));
	json_object_object_add(ann, GUARD_ANN_LAST, json_object_new_string(one));
	free(buf);
	return l;
}

json_object *guard_trip_body(json_object *old, uint64_t now_ms, const char *why)
{
	char ts[40], v[400];
	json_object *ann, *l = guard_base(old, &ann);

	if (!l)
		return NULL;
	snprintf(v, sizeof(v), "%s %s", kube_time(now_ms, false, ts, sizeof(ts)), why);
	json_object_object_add(ann, GUARD_ANN_TRIPPED, json_object_new_string(v));
	json_object_object_del(ann, GUARD_ANN_HISTORY);
	return l;
}

/* ---- pause, windows, protected pods -------------------------------------------------------- */

bool guard_paused_node(json_object *node)
{
	const char *v = kube_annotation(node, GUARD_ANN_PAUSE);

	return v && strcasecmp(v, "false") != 0;
}

int guard_parse_hhmm(const char *s)
{
	if (!s || strlen(s) != 5 || s[2] != ':')
		return -EINVAL;
	for (int i = 0; i < 5; i++)
		if (i != 2 && (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');

	if (m > 59 || h > 24 || (h == 24 && m != 0))
		return -EINVAL;
	return h * 60 + m;
}

int guard_day_index(const char *s)
{
	static const char *const days[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

	for (int i = 0; i < 7; i++)
		if (s && strcasecmp(s, days[i]) == 0)
			return i;
	return -EINVAL;
}

bool guard_window_open(const struct cz_config *cfg, int wday, int minute)
{
	const struct cz_config *c = cfg;
	int start =
		*c->remediation.window_start ? guard_parse_hhmm(c->remediation.window_start) : 0;
	int end = *c->remediation.window_end ? guard_parse_hhmm(c->remediation.window_end) : 1440;
	bool day = c->remediation.window_days.n == 0;

	for (size_t i = 0; i < c->remediation.window_days.n; i++)
		day = day || guard_day_index(c->remediation.window_days.item[i]) == wday;
	if (start < 0 || end < 0)
		return false;	/* cannot happen after config validation: closed, never open */
	if (start <= end)
		return day && minute >= start && minute < end;
	/* over midnight (22:00-04:00): the evening belongs to a listed day, the small hours to
	 * the day after one (kured does the same with its window) */
	if (minute >= start)
		return day;
	if (minute < end) {
		bool prev = c->remediation.window_days.n == 0;

		for (size_t i = 0; i < c->remediation.window_days.n; i++)
			prev = prev || guard_day_index(c->remediation.window_days.item[i]) ==
					       (wday + 6) % 7;
		return prev;
	}
	return false;
}

bool guard_zone_ok(const char *zone)
{
	char path[300];

	if (!zone || !*zone || *zone == '/' || strstr(zone, "..") || strlen(zone) > 200)
		return false;
	if (streq(zone, "UTC"))
		return true;
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", zone);
	return access(path, R_OK) == 0;
}

static pthread_once_t tz_once = PTHREAD_ONCE_INIT;
static char tz_name[CZ_NAME_MAX];

static void tz_set(void)
{
	setenv("TZ", tz_name, 1);
	tzset();
}

int guard_local(const char *zone, uint64_t now_ms, int *ret_wday, int *ret_minute)
{
	time_t t = (time_t)(now_ms / 1000);
	struct tm tm;

	if (!guard_zone_ok(zone))
		return -EINVAL;
	if (!*tz_name)
		snprintf(tz_name, sizeof(tz_name), "%s", zone);
	pthread_once(&tz_once, tz_set);
	if (!streq(tz_name, zone) || !localtime_r(&t, &tm))
		return -EINVAL;	/* one zone per process */
	*ret_wday = tm.tm_wday;
	*ret_minute = tm.tm_hour * 60 + tm.tm_min;
	return 0;
}

bool guard_pod_protected(json_object *pod)
{
	const char *p = kube_annotation(pod, GUARD_ANN_PROTECT);
	const char *s = kube_annotation(pod, GUARD_ANN_SAFE_TO_EVICT);

	return (p && strcasecmp(p, "true") == 0) || (s && strcasecmp(s, "false") == 0);
}

/* ---- medik8s NodeHealthCheck's per-node Lease ---------------------------------------------- */

bool guard_medik8s_valid(json_object *lease, uint64_t now_ms)
{
	json_object *d = kube_get(lease, "spec.leaseDurationSeconds");
	uint64_t renew;

	if (!d || !json_object_is_type(d, json_type_int) ||
	    kube_parse_time(kube_get_str(lease, "spec.renewTime", NULL), &renew) < 0)
		return false;
	return renew <= now_ms && renew + (uint64_t)json_object_get_int64(d) * 1000 >= now_ms;
}

json_object *guard_medik8s_body(json_object *old, const char *node, const char *node_uid,
				uint64_t now_ms)
{
	json_object *l = NULL, *md, *spec, *refs, *ref;
	const char *holder = kube_get_str(old, "spec.holderIdentity", "");
	char name[300], ts[40];
	int64_t tr = 0;

	if (old && (!json_object_is_type(old, json_type_object) ||
		    json_object_deep_copy(old, &l, NULL) < 0))
		return NULL;
	if (!l) {
		l = json_object_new_object();
		json_object_object_add(l, "apiVersion",
				       json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(l, "kind", json_object_new_string("Lease"));
	}
	md = kube_get(l, "metadata");
	if (!md || !json_object_is_type(md, json_type_object)) {
		md = json_object_new_object();
		json_object_object_add(l, "metadata", md);
	}
	snprintf(name, sizeof(name), GUARD_MEDIK8S_PREFIX "%.253s", node);
	json_object_object_add(md, "name", json_object_new_string(name));
	refs = json_object_new_array();
	ref = json_object_new_object();
	json_object_object_add(ref, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(ref, "kind", json_object_new_string("Node"));
	json_object_object_add(ref, "name", json_object_new_string(node));
	json_object_object_add(ref, "uid", json_object_new_string(node_uid ? node_uid : ""));
	json_object_array_add(refs, ref);
	json_object_object_add(md, "ownerReferences", refs);
	spec = kube_get(l, "spec");
	if (!spec || !json_object_is_type(spec, json_type_object)) {
		spec = json_object_new_object();
		json_object_object_add(l, "spec", spec);
	}
	if (kube_get(spec, "leaseTransitions"))
		tr = json_object_get_int64(kube_get(spec, "leaseTransitions"));
	kube_time(now_ms, true, ts, sizeof(ts));
	if (!old || !streq(holder, GUARD_MEDIK8S_HOLDER)) {
		json_object_object_add(spec, "acquireTime", json_object_new_string(ts));
		json_object_object_add(spec, "leaseTransitions",
				       json_object_new_int64(old ? tr + 1 : 0));
	}
	json_object_object_add(spec, "holderIdentity",
			       json_object_new_string(GUARD_MEDIK8S_HOLDER));
	json_object_object_add(spec, "leaseDurationSeconds",
			       json_object_new_int(GUARD_MEDIK8S_SECONDS));
	json_object_object_add(spec, "renewTime", json_object_new_string(ts));
	return l;
}

/* ---- kured's node lock ---------------------------------------------------------------------- */

/* One kured lock entry: does it hold @node now? -1: unreadable. */
static int kured_entry(json_object *e, const char *node, uint64_t now_ms)
{
	json_object *ttl = kube_get(e, "TTL");
	const char *id = kube_get_str(e, "nodeID", NULL);
	uint64_t created;
	int64_t ns;

	if (!id || kube_parse_time(kube_get_str(e, "created", NULL), &created) < 0)
		return -1;
	if (!streq(id, node))
		return 0;
	ns = ttl && json_object_is_type(ttl, json_type_int) ? json_object_get_int64(ttl) : 0;
	/* kured's ttlExpired(): a positive TTL since created has passed */
	return ns <= 0 || created + (uint64_t)(ns / 1000000) > now_ms;
}

bool guard_kured_locked(const char *value, const char *node, uint64_t now_ms)
{
	_cleanup_(json_object_putp) json_object *v = NULL;
	json_object *locks;
	size_t n;

	if (!value || !*value)
		return false;
	v = kube_parse_body(value, strlen(value));
	if (!v || !json_object_is_type(v, json_type_object))
		return true;
	locks = kube_get(v, "locks");
	if (!locks)
		return kured_entry(v, node, now_ms) != 0;
	if (!json_object_is_type(locks, json_type_array))
		return true;
	n = json_object_array_length(locks);
	for (size_t i = 0; i < n; i++)
		if (kured_entry(json_object_array_get_idx(locks, i), node, now_ms) != 0)
			return true;
	return false;
}

/* ---- taking kured's lock -------------------------------------------------------------------- */

/* One entry: -1 unreadable, 0 expired, 1 live; its node in *@id. */
static int kured_live(json_object *e, uint64_t now_ms, const char **id)
{
	json_object *ttl = kube_get(e, "TTL");
	uint64_t created;
	int64_t ns;

	*id = kube_get_str(e, "nodeID", NULL);
	if (!*id || kube_parse_time(kube_get_str(e, "created", NULL), &created) < 0)
		return -1;
	ns = ttl && json_object_is_type(ttl, json_type_int) ? json_object_get_int64(ttl) : 0;
	return ns <= 0 || created + (uint64_t)(ns / 1000000) > now_ms;
}

/* Our entry for @node (NULL: for any node). */
static bool kured_ours(json_object *e, const char *node)
{
	return (!node || streq(kube_get_str(e, "nodeID", ""), node)) &&
	       streq(kube_get_str(e, "holder", ""), GUARD_KURED_HOLDER);
}

static void add_holder(char *holder, size_t size, const char *id)
{
	size_t n = size ? strlen(holder) : 0;

	if (size && n + 1 < size)
		snprintf(holder + n, size - n, "%s%.100s", n ? "," : "", id);
}

enum guard_kured guard_kured_state(const char *value, const char *node, uint64_t now_ms,
				   char *holder, size_t size)
{
	_cleanup_(json_object_putp) json_object *v = NULL;
	json_object *locks;
	bool room;
	size_t n;

	if (size)
		*holder = '\0';
	if (!value || !*value)
		return GUARD_KURED_FREE;
	v = kube_parse_body(value, strlen(value));
	if (!v || !json_object_is_type(v, json_type_object))
		goto unreadable;
	locks = kube_get(v, "locks");
	if (!locks) {
		const char *id;
		int live = kured_live(v, now_ms, &id);

		if (live < 0)
			goto unreadable;
		if (!live)
			return GUARD_KURED_FREE;
		if (streq(id, node))
			return kured_ours(v, node) ? GUARD_KURED_OURS : GUARD_KURED_HERE;
		add_holder(holder, size, id);
		return GUARD_KURED_OTHER;
	}
	if (!json_object_is_type(locks, json_type_array))
		goto unreadable;
	n = json_object_array_length(locks);
	room = (int64_t)n < json_object_get_int64(kube_get(v, "maxOwners"));
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(locks, i);
		const char *id;
		int live = kured_live(e, now_ms, &id);

		if (live < 0)
			goto unreadable;
		if (live && streq(id, node))
			return kured_ours(e, node) ? GUARD_KURED_OURS : GUARD_KURED_HERE;
		room |= !live;
		if (live)
			add_holder(holder, size, id);
	}
	return room ? GUARD_KURED_FREE : GUARD_KURED_OTHER;
unreadable:
	if (size)
		snprintf(holder, size, "unreadable");
	return GUARD_KURED_OTHER;
}

static json_object *kured_entry_new(const char *node, uint64_t now_ms)
{
	json_object *e = json_object_new_object(), *m = json_object_new_object();
	char ts[40];

	json_object_object_add(e, "nodeID", json_object_new_string(node));
	json_object_object_add(m, "unschedulable", json_object_new_boolean(true));
	json_object_object_add(e, "metadata", m);
	json_object_object_add(e, "created",
			       json_object_new_string(kube_time(now_ms, true, ts, sizeof(ts))));
	json_object_object_add(e, "TTL", json_object_new_int64(GUARD_KURED_TTL_MS * 1000000));
	json_object_object_add(e, "holder", json_object_new_string(GUARD_KURED_HOLDER));
	return e;
}

static char *kured_string(json_object *v)
{
	const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);

	return s ? strdup(s) : NULL;
}

char *guard_kured_take(const char *value, const char *node, uint64_t now_ms)
{
	_cleanup_(json_object_putp) json_object *v = NULL, *out = NULL;
	json_object *locks, *keep;
	enum guard_kured st = guard_kured_state(value, node, now_ms, NULL, 0);
	int64_t max;
	bool full;
	size_t n;

	if (st != GUARD_KURED_FREE && st != GUARD_KURED_OURS)
		return NULL;
	if (value && *value)
		v = kube_parse_body(value, strlen(value));
	locks = v ? kube_get(v, "locks") : NULL;
	if (!locks) {	/* the single lock (or none): ours replaces it */
		out = kured_entry_new(node, now_ms);
		return kured_string(out);
	}
	n = json_object_array_length(locks);
	max = json_object_get_int64(kube_get(v, "maxOwners"));
	full = (int64_t)n >= max;
	out = json_object_new_object();
	keep = json_object_new_array();
	json_object_object_add(out, "maxOwners", json_object_new_int64(max));
	json_object_object_add(out, "locks", keep);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(locks, i);
		const char *id;
		int live = kured_live(e, now_ms, &id);

		/* ours is renewed below; expired ones make room when full */
		if (kured_ours(e, node) || (full && !live))
			continue;
		json_object_array_add(keep, json_object_get(e));
	}
	json_object_array_add(keep, kured_entry_new(node, now_ms));
	return kured_string(out);
}

char *guard_kured_release(const char *value, const char *node)
{
	_cleanup_(json_object_putp) json_object *v = NULL;
	json_object *locks, *keep;
	bool found = false;
	size_t n;

	if (!value || !*value)
		return NULL;
	v = kube_parse_body(value, strlen(value));
	if (!v || !json_object_is_type(v, json_type_object))
		return NULL;
	locks = kube_get(v, "locks");
	if (!locks)
		return kured_ours(v, node) ? strdup("") : NULL;
	if (!json_object_is_type(locks, json_type_array))
		return NULL;
	keep = json_object_new_array();
	n = json_object_array_length(locks);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(locks, i);

		if (kured_ours(e, node))
			found = true;
		else
			json_object_array_add(keep, json_object_get(e));
	}
	json_object_object_add(v, "locks", keep);
	return found ? kured_string(v) : NULL;
}
