/* SPDX-License-Identifier: MIT */
/* The remediator: see remediator.h. Decisions are pure (leader.c, remediate_plan.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "kube/fleet_fetch.h"
#include "remediator/guard.h"
#include "kube/kube.h"
#include "remediator/informer.h"
#include "remediator/leader.h"
#include "remediator/remediate.h"
#include "remediator/remediator.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define NODES_PAGE 500
#define DUE_MAX 100000		/* nodes remediated in one cycle, at most */
#define EVENT_GAP_MS 1000	/* a cycle for a node's change at most this often */
#define LEASE_SELECTOR "app.kubernetes.io/managed-by=cpuzombie"	/* the budget Leases */
#define SYNC_WAIT_MS 120000	/* the first LIST of 10,000 nodes at 500 a page takes seconds */

#define log_kube(prio, ...) \
	log_fields_full((prio), &(struct log_fields){ LOG_MID_KUBE, NULL, -1, NULL }, __VA_ARGS__)

struct leader_state {
	bool leading;
	int err;		/* -errno of the last try, 0 */
	char holder[254];	/* who leads when not us ("" unknown) */
	uint64_t until_ms;
	uint64_t at_ms;		/* when this look was taken (monotonic) */
};

struct remediator {
	struct cz_config cfg;
	struct kube_client *kc;		/* the cycles' */
	struct kube_client *lkc;	/* the leader thread's */
	char me[254], ns[CZ_NAME_MAX];
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, want;
	unsigned gen;
	struct leader_state st;
	char storm[320];	/* the storm guard's last word, logged once */
	enum remediator_source source;
	struct informer *nodes, *leases;	/* the caches (REMEDIATOR_WATCH) */
	bool dirty;		/* a node or Lease changed in a way a decision reads */
	uint64_t cycle_ms;	/* when the last cycle started (monotonic) */
	char lease_path[320];
};

const char *remediator_identity(const struct remediator *rm)
{
	return rm->me;
}

const char *remediator_namespace(const struct remediator *rm)
{
	return rm->ns;
}

/* ---- pure ---------------------------------------------------------------------------------- */

bool remediator_node_due(json_object *node, const struct cz_config *cfg,
			 const char *const *holders, size_t nholders)
{
	const char *name = kube_get_str(node, "metadata.name", "");
	bool any = false;

	if (!valid_name(name, 253))
		return false;
	if (kube_annotation(node, REMEDIATE_ANN_CORDONED) ||
	    kube_annotation(node, REMEDIATE_ANN_TRUE_SINCE))
		return true;	/* an uncordon due, or our clock to stop */
	for (size_t i = 0; i < nholders; i++)
		if (streq(holders[i], name))
			return true;
	(void)remediate_problem(node, &cfg->remediation.conditions, 0, 0, 0, NULL, &any);
	return any;
}

/* Add @from's member @key to @to when present (shared, not copied). */
static int keep(json_object *to, json_object *from, const char *key)
{
	json_object *v;

	if (!from || !json_object_object_get_ex(from, key, &v))
		return 0;
	return json_object_object_add(to, key, json_object_get(v));
}

json_object *remediator_node_trim(json_object *node)
{
	json_object *t = json_object_new_object(), *md = json_object_new_object();
	json_object *st = json_object_new_object(), *conds = json_object_new_array();
	json_object *src_md = kube_get(node, "metadata"), *spec = kube_get(node, "spec");
	json_object *src = kube_get_array(node, "status.conditions");
	int r = t && md && st && conds ? 0 : -ENOMEM;

	if (r == 0)
		r = keep(md, src_md, "name") | keep(md, src_md, "resourceVersion") |
		    keep(md, src_md, "uid") | keep(md, src_md, "labels") |
		    keep(md, src_md, "annotations");
	for (size_t i = 0; r == 0 && src && i < json_object_array_length(src); i++) {
		json_object *c = json_object_array_get_idx(src, i), *k = json_object_new_object();

		/* not lastHeartbeatTime: a heartbeat alone changes no decision */
		r = k ? keep(k, c, "type") | keep(k, c, "status") | keep(k, c, "reason") |
			keep(k, c, "message") | keep(k, c, "lastTransitionTime") : -ENOMEM;
		if (r == 0)
			r = json_object_array_add(conds, k);
		else
			json_object_put(k);
	}
	if (r == 0 && spec)
		r = json_object_object_add(t, "spec", json_object_get(spec));
	if (r == 0)
		r = json_object_object_add(st, "conditions", TAKE_PTR(conds)) |
		    json_object_object_add(t, "status", TAKE_PTR(st)) |
		    json_object_object_add(t, "metadata", TAKE_PTR(md));
	json_object_put(conds);
	json_object_put(st);
	json_object_put(md);
	if (r != 0) {
		json_object_put(t);
		return NULL;
	}
	return t;
}

json_object *remediator_lease_trim(json_object *lease)
{
	json_object *t = json_object_new_object(), *md = json_object_new_object();
	json_object *spec = json_object_new_object();
	json_object *src_md = kube_get(lease, "metadata"), *src_spec = kube_get(lease, "spec");
	int r = t && md && spec ? 0 : -ENOMEM;

	if (r == 0)
		r = keep(md, src_md, "name") | keep(md, src_md, "resourceVersion") |
		    keep(spec, src_spec, "holderIdentity");
	if (r == 0)
		r = json_object_object_add(t, "metadata", TAKE_PTR(md)) |
		    json_object_object_add(t, "spec", TAKE_PTR(spec));
	json_object_put(md);
	json_object_put(spec);
	if (r != 0) {
		json_object_put(t);
		return NULL;
	}
	return t;
}

const char *remediator_default_namespace(const char *text, char *buf, size_t size)
{
	size_t n;

	snprintf(buf, size, "cpuzombie");
	if (!text)
		return buf;
	n = strcspn(text, " \t\r\n");
	if (n > 0 && n < size && n <= 63) {
		char tmp[64];

		memcpy(tmp, text, n);
		tmp[n] = '\0';
		if (valid_name(tmp, 63))
			snprintf(buf, size, "%s", tmp);
	}
	return buf;
}

/* ---- the leader Lease ---------------------------------------------------------------------- */

static void leader_path(const struct remediator *rm, bool named, char *buf, size_t size)
{
	snprintf(buf, size, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s", rm->ns,
		 named ? "/" LEADER_LEASE : "");
}

/* Write @body (POST a new Lease, else PUT at its resourceVersion): the HTTP status or -errno. */
static long leader_write(struct remediator *rm, json_object *body, bool create)
{
	struct kube_response resp = { 0 };
	char path[300];
	long st;
	int e;

	if (!body)
		return -ENOMEM;
	struct kube_client *kc = rm->lkc;

	leader_path(rm, !create, path, sizeof(path));
	e = kube_json(kc, create ? "POST" : "PUT", path, "application/json", body, 0, &resp);
	st = e < 0 ? e : resp.status;
	if (st >= 0 && st != 200 && st != 201 && st != 409)
		log_kube(LOG_PRIO_ERR, "Failed to write Lease %s/%s: HTTP %ld: %s", rm->ns,
			 LEADER_LEASE, st, resp.message);
	kube_response_clear(&resp);
	return st;
}

/* One look at the leader Lease, and the write it calls for; @release hands it back. */
static struct leader_state leader_try(struct remediator *rm, bool release)
{
	struct leader_state s = { 0 };
	struct kube_response resp = { 0 };
	_cleanup_(json_object_putp) json_object *body = NULL;
	struct leader_decision d;
	json_object *lease = NULL;
	char path[300];
	long st;
	int e;

	struct kube_client *kc = rm->lkc;

	leader_path(rm, true, path, sizeof(path));
	e = kube_request(kc, "GET", path, NULL, NULL, 0, &resp);
	if (e == 0 && resp.status == 200 && resp.body &&
	    json_object_is_type(resp.body, json_type_object))
		lease = resp.body;
	else if (e == 0 && resp.status != 404)
		e = log_error_errno(EREMOTEIO, "Failed to read Lease %s/%s: HTTP %ld: %s", rm->ns,
				    LEADER_LEASE, resp.status, resp.message);
	else if (e < 0)
		log_error_errno(e, "Failed to read Lease %s/%s: %s", rm->ns, LEADER_LEASE,
				resp.message);
	if (e < 0) {
		kube_response_clear(&resp);
		s.err = e;
		return s;
	}
	d = leader_decide(lease, rm->me, now_realtime_ms());
	if (release) {
		if (d.verdict == LEADER_RENEW)
			(void)leader_write(rm, body = leader_body("", lease, now_realtime_ms()),
					   false);
		kube_response_clear(&resp);
		return s;
	}
	if (d.verdict == LEADER_FOLLOW) {
		snprintf(s.holder, sizeof(s.holder), "%s", d.holder ? d.holder : "");
		s.until_ms = d.until_ms;
		kube_response_clear(&resp);
		return s;
	}
	body = leader_body(rm->me, lease, now_realtime_ms());
	st = leader_write(rm, body, d.verdict == LEADER_CREATE);
	kube_response_clear(&resp);
	if (st == 200 || st == 201)
		s.leading = true;
	else if (st == 409)	/* another replica wrote it first: it leads */
		snprintf(s.holder, sizeof(s.holder), "another replica (409)");
	else
		s.err = st < 0 ? (int)st : -EREMOTEIO;
	return s;
}

/* Renews (or tries to take) the Lease every LEADER_RENEW_MS, and at once when asked. */
static void *leader_thread(void *arg)
{
	struct remediator *rm = arg;
	struct timespec at;
	bool release;

	pthread_mutex_lock(&rm->lock);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += LEADER_RENEW_MS / 1000;
		while (!rm->want && !rm->stop &&
		       pthread_cond_timedwait(&rm->cond, &rm->lock, &at) != ETIMEDOUT)
			;
		if (rm->stop)
			break;
		rm->want = false;
		pthread_mutex_unlock(&rm->lock);
		struct leader_state s = leader_try(rm, false);

		s.at_ms = now_monotonic_ms();
		pthread_mutex_lock(&rm->lock);
		if (rm->st.leading && !s.leading)
			log_kube(LOG_PRIO_WARNING, "remediator %s: no longer the leader", rm->me);
		rm->st = s;
		rm->gen++;
		pthread_cond_broadcast(&rm->cond);
	}
	release = rm->st.leading && rm->want;	/* free() sets want to ask for the release */
	pthread_mutex_unlock(&rm->lock);
	if (release)
		(void)leader_try(rm, true);
	return NULL;
}

/* Ask the thread for a fresh look and wait for it. */
static struct leader_state leader_now(struct remediator *rm)
{
	struct leader_state s;
	unsigned gen;

	pthread_mutex_lock(&rm->lock);
	gen = rm->gen;
	rm->want = true;
	pthread_cond_broadcast(&rm->cond);
	while (rm->gen == gen)
		pthread_cond_wait(&rm->cond, &rm->lock);
	s = rm->st;
	pthread_mutex_unlock(&rm->lock);
	return s;
}

static bool still_leading(struct remediator *rm)
{
	bool l;

	pthread_mutex_lock(&rm->lock);
	l = rm->st.leading;
	pthread_mutex_unlock(&rm->lock);
	return l;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static void pick_namespace(struct remediator *rm)
{
	const char *dir = getenv("CZ_SERVICEACCOUNT_DIR");
	char path[FILEIO_PATH_MAX], text[128];

	if (*rm->cfg.remediation.leader_namespace) {
		snprintf(rm->ns, sizeof(rm->ns), "%s", rm->cfg.remediation.leader_namespace);
		return;
	}
	snprintf(path, sizeof(path), "%s/namespace", dir && *dir ? dir : SA_DIR);
	remediator_default_namespace(fileio_read_at(AT_FDCWD, path, FILEIO_REGULAR, text,
						    sizeof(text)) > 0 ? text : NULL,
				     rm->ns, sizeof(rm->ns));
}

/* The maintenance window's zone, set for the process before any thread starts (guard_local). */
static int remediator_window_check(const struct cz_config *cfg)
{
	int wday, minute;

	if (!cfg->remediation.window_days.n && !*cfg->remediation.window_start &&
	    !*cfg->remediation.window_end)
		return 0;
	if (guard_local(cfg->remediation.window_timezone, now_realtime_ms(), &wday, &minute) < 0)
		return log_error_errno(EINVAL, "remediation.window_timezone '%s': not in the TZ "
				       "database (/usr/share/zoneinfo)",
				       cfg->remediation.window_timezone);
	log_info("remediator: maintenance window %s-%s in %s, now %s",
		 *cfg->remediation.window_start ? cfg->remediation.window_start : "00:00",
		 *cfg->remediation.window_end ? cfg->remediation.window_end : "24:00",
		 cfg->remediation.window_timezone,
		 guard_window_open(cfg, wday, minute) ? "open" : "closed");
	return 0;
}

/* Log the storm guard's verdict once each time it changes (the plan says it per node). */
static void storm_log(struct remediator *rm, const struct guard_fleet *f)
{
	char why[320] = "";

	(void)guard_storm(f, &rm->cfg, why, sizeof(why));
	if (streq(why, rm->storm))
		return;
	if (*why)
		log_kube(LOG_PRIO_WARNING, "remediator %s: %s", rm->me, why);
	else
		log_kube(LOG_PRIO_NOTICE, "remediator %s: storm guard lifted: %s", rm->me,
			 rm->storm);
	snprintf(rm->storm, sizeof(rm->storm), "%s", why);
}

int remediator_new(const struct cz_config *cfg, const char *identity, struct remediator **ret)
{
	struct remediator *rm;
	pthread_condattr_t ca;
	int r;

	if (!valid_name(identity, 253))
		return log_error_errno(EINVAL, "Not a valid leader identity: '%.64s'", identity);
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return -ENOMEM;
	rm->cfg = *cfg;
	if (*rm->cfg.remediation.reboot_sentinel) {
		log_info(
			"remediator: remediation.reboot_sentinel is a file on the node: the node's "
			"agent writes it once the remediator has drained the node");
		rm->cfg.remediation.reboot_sentinel[0] = '\0';
	}
	snprintf(rm->me, sizeof(rm->me), "%s", identity);
	rm->source = REMEDIATOR_WATCH;
	pick_namespace(rm);
	if (remediator_window_check(&rm->cfg) < 0) {
		free(rm);
		return -EINVAL;
	}
	r = kube_client_from_config(cfg->kubernetes.kubeconfig, cfg->kubernetes.timeout_ms,
				    &rm->kc);
	if (r >= 0)
		r = kube_client_from_config(cfg->kubernetes.kubeconfig, cfg->kubernetes.timeout_ms,
					    &rm->lkc);
	if (r < 0) {
		remediator_free(rm, false);
		return r;
	}
	pthread_mutex_init(&rm->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rm->cond, &ca);
	pthread_condattr_destroy(&ca);
	rm->want = true;	/* a first look at once */
	r = -pthread_create(&rm->thread, NULL, leader_thread, rm);
	if (r < 0) {
		pthread_cond_destroy(&rm->cond);
		pthread_mutex_destroy(&rm->lock);
		remediator_free(rm, false);
		return log_error_errno(r, "Failed to start the leader thread: %m");
	}
	rm->started = true;
	*ret = rm;
	return 0;
}

void remediator_free(struct remediator *rm, bool release)
{
	if (!rm)
		return;
	informer_free(rm->nodes);
	informer_free(rm->leases);
	if (rm->started) {
		pthread_mutex_lock(&rm->lock);
		rm->stop = true;
		rm->want = release;
		pthread_cond_broadcast(&rm->cond);
		pthread_mutex_unlock(&rm->lock);
		pthread_join(rm->thread, NULL);
		pthread_cond_destroy(&rm->cond);
		pthread_mutex_destroy(&rm->lock);
	}
	kube_client_free(rm->kc);
	kube_client_free(rm->lkc);
	free(rm);
}

/* ---- the cycle ----------------------------------------------------------------------------- */

struct due {
	const struct cz_config *cfg;
	const char **holders;
	size_t nholders;
	char **names;
	size_t n, cap, listed;
	struct guard_fleet fleet;	/* the storm guard's count of the selection */
};

static int collect_holder(json_object *lease, void *userdata)
{
	struct due *d = userdata;
	const char *h = kube_get_str(lease, "spec.holderIdentity", "");
	const char **nh;

	if (!valid_name(h, 253) || d->nholders >= 4096)
		return 0;
	nh = realloc(d->holders, (d->nholders + 1) * sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	d->holders = nh;
	if (!(d->holders[d->nholders] = strdup(h)))
		return -ENOMEM;
	d->nholders++;
	return 0;
}

static int collect_node(json_object *node, void *userdata)
{
	struct due *d = userdata;

	d->listed++;
	guard_fleet_add(&d->fleet, node, &d->cfg->remediation.conditions);
	if (!remediator_node_due(node, d->cfg, d->holders, d->nholders))
		return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		char **nn = cap <= DUE_MAX ? realloc(d->names, cap * sizeof(*nn)) : NULL;

		if (!nn)
			return -E2BIG;
		d->names = nn;
		d->cap = cap;
	}
	if (!(d->names[d->n] = strdup(kube_get_str(node, "metadata.name", ""))))
		return -ENOMEM;
	d->n++;
	return 0;
}

static void due_clear(struct due *d)
{
	for (size_t i = 0; i < d->nholders; i++)
		free((char *)d->holders[i]);
	free(d->holders);
	for (size_t i = 0; i < d->n; i++)
		free(d->names[i]);
	free(d->names);
	*d = (struct due){ .cfg = d->cfg };
}

/* The budget Leases' holders and the nodes due, into @d. Returns 0 or -errno (logged). */
static int list_due(struct remediator *rm, struct due *d)
{
	const char *sel = rm->cfg.remediation.node_selector;
	char err[512] = "";
	int r;

	r = fleet_fetch_leases(rm->kc, rm->cfg.remediation.lease_namespace, collect_holder, d, err,
			       sizeof(err));
	for (int attempt = 0; r >= 0 && attempt < 3; attempt++) {
		for (size_t i = 0; i < d->n; i++)
			free(d->names[i]);
		d->n = d->listed = 0;
		d->fleet = (struct guard_fleet){ 0 };
		r = fleet_fetch_nodes(rm->kc, sel, NODES_PAGE, collect_node, d, NULL, err,
				      sizeof(err));
		if (r != -ESTALE)	/* 410: the continue token expired; list again */
			break;
	}
	if (r < 0)
		log_error_errno(r, "remediator: %s", *err ? err : "cannot list");
	return r;
}

/* ---- the caches ---------------------------------------------------------------------------- */

void remediator_set_source(struct remediator *rm, enum remediator_source source)
{
	rm->source = source;
}

static void wake(struct remediator *rm)
{
	pthread_mutex_lock(&rm->lock);
	rm->dirty = true;
	pthread_cond_broadcast(&rm->cond);
	pthread_mutex_unlock(&rm->lock);
}

/* A node's change calls for a cycle when the node is or was one a decision acts on. The cache
 * is trimmed (no heartbeat times), so an equal object is a change of nothing we read. */
static void node_changed(const char *name, json_object *old, json_object *now, void *userdata)
{
	struct remediator *rm = userdata;

	if (!name || (!json_object_equal(old, now) &&
		      ((old && remediator_node_due(old, &rm->cfg, NULL, 0)) ||
		       (now && remediator_node_due(now, &rm->cfg, NULL, 0)))))
		wake(rm);
}

static void lease_changed(const char *name, json_object *old, json_object *now, void *userdata)
{
	struct remediator *rm = userdata;

	if (!name || !streq(kube_get_str(old, "spec.holderIdentity", ""),
			    kube_get_str(now, "spec.holderIdentity", "")))
		wake(rm);
}

static int caches_open(struct remediator *rm)
{
	struct informer_opts on = {
		.path = "/api/v1/nodes", .what = "nodes",
		.selector = rm->cfg.remediation.node_selector, .page = NODES_PAGE,
		.trim = remediator_node_trim, .change = node_changed,
		.userdata = rm,
	};
	struct informer_opts ol = {
		.path = rm->lease_path, .what = "budget Leases", .selector = LEASE_SELECTOR,
		.page = 0, .trim = remediator_lease_trim,
		.change = lease_changed, .userdata = rm,
	};
	struct kube_client *kc = NULL;
	int r;

	snprintf(rm->lease_path, sizeof(rm->lease_path),
		 "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
		 rm->cfg.remediation.lease_namespace);
	if (rm->source == REMEDIATOR_LIST) {
		r = informer_list_once(rm->kc, &ol, &rm->leases);
		return r < 0 ? r : informer_list_once(rm->kc, &on, &rm->nodes);
	}
	if (!rm->leases) {
		r = kube_client_from_config(rm->cfg.kubernetes.kubeconfig,
					    rm->cfg.kubernetes.timeout_ms, &kc);
		if (r < 0 || (r = informer_start(kc, &ol, &rm->leases)) < 0)
			return r;
	}
	if (!rm->nodes) {
		r = kube_client_from_config(rm->cfg.kubernetes.kubeconfig,
					    rm->cfg.kubernetes.timeout_ms, &kc);
		if (r < 0 || (r = informer_start(kc, &on, &rm->nodes)) < 0)
			return r;
	}
	r = informer_wait_synced(rm->leases, SYNC_WAIT_MS);
	return r < 0 ? r : informer_wait_synced(rm->nodes, SYNC_WAIT_MS);
}

/* The budget Leases' holders and the nodes due, into @d, from the caches. */
static int cached_due(struct remediator *rm, struct due *d)
{
	int r = caches_open(rm);

	if (r < 0)
		return log_error_errno(r, "remediator: the caches of nodes and Leases are not "
				       "filled: nothing decided");
	r = informer_each(rm->leases, collect_holder, d);
	if (r >= 0)
		r = informer_each(rm->nodes, collect_node, d);
	if (rm->source == REMEDIATOR_LIST) {
		informer_free(TAKE_PTR(rm->nodes));
		informer_free(TAKE_PTR(rm->leases));
	}
	return r < 0 ? log_error_errno(r, "remediator: cannot read the caches") : 0;
}

bool remediator_wait(struct remediator *rm, uint64_t ms)
{
	struct timespec at;
	bool due;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)(ms / 1000);
	at.tv_nsec += (long)(ms % 1000) * 1000000;
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&rm->lock);
	while (!rm->dirty && pthread_cond_timedwait(&rm->cond, &rm->lock, &at) != ETIMEDOUT)
		;
	due = rm->dirty && now_monotonic_ms() >= rm->cycle_ms + EVENT_GAP_MS;
	pthread_mutex_unlock(&rm->lock);
	return due;
}

bool remediator_watch_stats(struct remediator *rm, struct remediator_watch_stats *ret)
{
	struct informer_stats n, l;

	if (!rm->nodes || !rm->leases)
		return false;
	n = informer_stats(rm->nodes);
	l = informer_stats(rm->leases);
	*ret = (struct remediator_watch_stats){
		.lists = n.lists + l.lists, .watches = n.watches + l.watches,
		.gone = n.gone + l.gone, .stalls = n.stalls + l.stalls,
		.broken = n.broken + l.broken, .events = n.events + l.events, .nodes = n.items,
	};
	return true;
}

/* Append "; @a: @b" (or "; @a") to @buf, cut at its size. */
static void append(char *buf, size_t size, const char *a, const char *b)
{
	size_t off = strnlen(buf, size);

	buf_appendf_cut(buf, size, &off, "; %s%s%s", a, b ? ": " : "", b ? b : "");
}

static const char *watch_line(const struct remediator_watch_stats *ws, char *buf, size_t size)
{
	snprintf(buf, size, "%u lists, %u watches (%u ended by 410 Gone, %u stalled, %u broken), "
		 "%zu events", ws->lists, ws->watches, ws->gone, ws->stalls, ws->broken,
		 ws->events);
	return buf;
}

/* The leader's state for a cycle: a fresh look, or (a cycle from the caches, which may run on
 * every change) the leader thread's last one while it is younger than a renewal. */
static struct leader_state leader_for_cycle(struct remediator *rm)
{
	struct leader_state s;

	pthread_mutex_lock(&rm->lock);
	s = rm->st;
	rm->dirty = false;
	rm->cycle_ms = now_monotonic_ms();
	pthread_mutex_unlock(&rm->lock);
	if (rm->source == REMEDIATOR_WATCH && s.at_ms && s.err == 0 &&
	    now_monotonic_ms() < s.at_ms + LEADER_RENEW_MS)
		return s;
	return leader_now(rm);
}

int remediator_cycle(struct remediator *rm, char *summary, size_t summary_size)
{
	struct leader_state s = leader_for_cycle(rm);
	struct due d = { .cfg = &rm->cfg };
	struct remediator_watch_stats ws;
	char wl[160];
	char until[40] = "?";
	int r, first = 0;

	if (s.err < 0) {
		snprintf(summary, summary_size,
			 "remediator %s: cannot read the leader Lease %s/%s: "
			 "nothing done",
			 rm->me, rm->ns, LEADER_LEASE);
		return s.err;
	}
	if (!s.leading) {
		if (s.until_ms)
			kube_time(s.until_ms, false, until, sizeof(until));
		snprintf(summary, summary_size,
			 "remediator %s: not the leader (%s holds Lease %s/%s "
			 "until %s): nothing done",
			 rm->me, *s.holder ? s.holder : "?", rm->ns, LEADER_LEASE, until);
		return 0;
	}
	r = rm->source == REMEDIATOR_POLL ? list_due(rm, &d) : cached_due(rm, &d);
	if (r < 0) {
		snprintf(summary, summary_size, "remediator %s (leader): cannot list the nodes: "
			 "nothing done", rm->me);
		due_clear(&d);
		return r;
	}
	snprintf(summary, summary_size, "remediator %s (leader): %zu nodes, %zu due", rm->me,
		 d.listed, d.n);
	if (rm->source == REMEDIATOR_WATCH && remediator_watch_stats(rm, &ws))
		append(summary, summary_size, "watch", watch_line(&ws, wl, sizeof(wl)));
	storm_log(rm, &d.fleet);
	for (size_t i = 0; i < d.n; i++) {
		enum remediate_action act;
		char line[400], what[300];

		if (!still_leading(rm)) {
			append(summary, summary_size, "leadership lost: the rest left to the new "
			       "leader", NULL);
			break;
		}
		r = remediate_cycle_fleet(rm->kc, &rm->cfg, d.names[i], now_realtime_ms(), &d.fleet,
					  &act, line, sizeof(line));
		if (r < 0 && first == 0)
			first = r;
		snprintf(what, sizeof(what), "%s: %s", d.names[i], remediate_action_name(act));
		append(summary, summary_size, what, line);
	}
	due_clear(&d);
	return first;
}
