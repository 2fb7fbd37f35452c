/* SPDX-License-Identifier: MIT */
/* An informer: see informer.h. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/kjson.h"
#include "base/log.h"
#include "base/util.h"
#include "kube/fleet_fetch.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "remediator/informer.h"

#define BACKOFF_BASE_MS 500
#define BACKOFF_CAP_MS 30000
/* Past timeoutSeconds, the server has had its chance to end a watch: a tenth more, 5 s at least */
#define STALL_GRACE_S(t) ((t) / 10 > 5 ? (t) / 10 : 5)

#define log_kube(prio, ...) \
	log_fields_full((prio), &(struct log_fields){ LOG_MID_KUBE, NULL, -1, NULL }, __VA_ARGS__)

struct informer {
	struct kube_client *kc;
	bool owns_kc;
	char path[512], what[64], selector[1024];
	struct informer_opts o;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_bool stop;
	json_object *cache;		/* name -> trimmed object */
	json_object *fresh;		/* a LIST being built */
	char rv[WATCH_RV_MAX];		/* where the next WATCH resumes */
	bool synced;
	int list_err;
	struct informer_stats st;
	unsigned seed;
};

/* ---- the cache ----------------------------------------------------------------------------- */

static json_object *trimmed(struct informer *inf, json_object *obj)
{
	return inf->o.trim ? inf->o.trim(obj) : json_object_get(obj);
}

static void changed(struct informer *inf, const char *name, json_object *old, json_object *now)
{
	if (inf->o.change)
		inf->o.change(name, old, now, inf->o.userdata);
}

static int collect(json_object *item, void *userdata)
{
	struct informer *inf = userdata;
	const char *name = kube_get_str(item, "metadata.name", "");
	json_object *t;

	if (!valid_name(name, 253))
		return 0;
	t = trimmed(inf, item);
	if (t && json_object_object_add(inf->fresh, name, t) < 0) {
		json_object_put(t);
		return -ENOMEM;
	}
	return 0;
}

/* One paged LIST into a new cache. Returns 0 or -errno (logged). */
static int list(struct informer *inf)
{
	struct fleet_fetch_stats fs = { 0 };
	char err[512] = "";
	int r = -ESTALE;

	for (int attempt = 0; r == -ESTALE && attempt < 3; attempt++) {
		json_object_put(inf->fresh);
		inf->fresh = json_object_new_object();
		if (!inf->fresh)
			return -ENOMEM;
		fs = (struct fleet_fetch_stats){ 0 };
		r = fleet_fetch_list(inf->kc, inf->o.path, inf->o.what, inf->o.selector,
				     inf->o.page, collect, inf, &fs, err, sizeof(err));
	}
	if (r == 0 && !*fs.rv) {
		snprintf(err, sizeof(err), "the list of %s has no resourceVersion", inf->o.what);
		r = -EBADMSG;
	}
	if (r < 0) {
		json_object_put(TAKE_PTR(inf->fresh));
		return log_error_errno(r, "informer: %s", *err ? err : "cannot list");
	}
	pthread_mutex_lock(&inf->lock);
	json_object_put(inf->cache);
	inf->cache = TAKE_PTR(inf->fresh);
	snprintf(inf->rv, sizeof(inf->rv), "%s", fs.rv);
	inf->st.lists++;
	inf->st.items = (size_t)json_object_object_length(inf->cache);
	inf->synced = true;
	inf->list_err = 0;
	changed(inf, NULL, NULL, NULL);
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
	return 0;
}

/* Apply one event to the cache. */
static int on_event(struct watch_event *ev, void *userdata)
{
	struct informer *inf = userdata;
	const char *name;
	json_object *old = NULL, *now = NULL;

	if (!ev)
		return atomic_load(&inf->stop) ? -ECANCELED : 0;
	if (ev->type == WATCH_ERROR) {
		log_kube(LOG_PRIO_NOTICE, "informer: watch of %s: ERROR %ld: %s", inf->o.what,
			 ev->code, ev->message);
		return ev->code == 410 ? -ESTALE : -EREMOTEIO;
	}
	pthread_mutex_lock(&inf->lock);
	inf->st.events++;
	snprintf(inf->rv, sizeof(inf->rv), "%s", ev->rv);
	if (ev->type == WATCH_BOOKMARK) {
		pthread_mutex_unlock(&inf->lock);
		return 0;
	}
	name = kube_get_str(ev->object, "metadata.name", "");
	if (json_object_object_get_ex(inf->cache, name, &old))
		json_object_get(old);
	if (ev->type == WATCH_DELETED) {
		json_object_object_del(inf->cache, name);
	} else if ((now = trimmed(inf, ev->object)) &&
		   json_object_object_add(inf->cache, name, json_object_get(now)) < 0) {
		json_object_put(now);	/* the cache's reference */
		json_object_put(now);
		json_object_put(old);
		pthread_mutex_unlock(&inf->lock);
		return -ENOMEM;
	}
	inf->st.items = (size_t)json_object_object_length(inf->cache);
	changed(inf, name, old, now);
	pthread_mutex_unlock(&inf->lock);
	json_object_put(old);
	json_object_put(now);
	return 0;
}

/* One WATCH from inf->rv. Returns as watch_stream(). */
static int watch_once(struct informer *inf, struct watch_stats *ws, char *err, size_t size)
{
	char path[2048], rv[WATCH_RV_MAX];
	unsigned t = inf->o.watch_s;

	pthread_mutex_lock(&inf->lock);
	snprintf(rv, sizeof(rv), "%s", inf->rv);
	inf->st.watches++;
	pthread_mutex_unlock(&inf->lock);
	if (fleet_fetch_watch_path(inf->o.path, inf->o.selector, rv, t, path, sizeof(path)) < 0) {
		snprintf(err, size, "the label selector is too long");
		return -E2BIG;
	}
	return watch_stream(inf->kc, path, (uint64_t)(t + STALL_GRACE_S(t)) * 1000,
			    (uint64_t)(t + STALL_GRACE_S(t)) * 1000, WATCH_EVENT_MAX, on_event, inf,
			    ws, err, size);
}

/* Sleep @ms unless stopped (in short steps). */
static void nap(struct informer *inf, uint64_t ms)
{
	uint64_t until = now_monotonic_ms() + ms;

	while (!atomic_load(&inf->stop) && now_monotonic_ms() < until)
		usleep(100 * 1000);
}

static void *run(void *arg)
{
	struct informer *inf = arg;
	bool need_list = true;
	unsigned fails = 0;

	while (!atomic_load(&inf->stop)) {
		struct watch_stats ws = { 0 };
		bool healthy = false;
		char err[512] = "";
		uint64_t cap;
		int r;

		if (need_list) {
			r = list(inf);
			if (r < 0) {
				pthread_mutex_lock(&inf->lock);
				inf->list_err = r;
				pthread_cond_broadcast(&inf->cond);
				pthread_mutex_unlock(&inf->lock);
			}
		} else {
			uint64_t t0 = now_monotonic_ms();

			r = watch_once(inf, &ws, err, sizeof(err));
			/* it lasted or carried events: not a server that ends watches at once */
			healthy = ws.bytes || now_monotonic_ms() >= t0 + 1000;
			pthread_mutex_lock(&inf->lock);
			inf->st.bytes += ws.bytes;
			if (r == -ESTALE)
				inf->st.gone++;
			else if (r == -ETIMEDOUT)
				inf->st.stalls++;
			else if (r < 0 && r != -ECANCELED)
				inf->st.broken++;
			pthread_mutex_unlock(&inf->lock);
			if (r < 0 && r != -ECANCELED)
				log_kube(r == -ESTALE ? LOG_PRIO_NOTICE : LOG_PRIO_WARNING,
					 "informer: watch of %s: %s%s", inf->o.what,
					 *err ? err : strerror(-r),
					 r == -ESTALE || r == -EMSGSIZE || r == -EBADMSG ?
					 ": listing again" : ": watching again");
		}
		if (r == -ECANCELED)
			break;
		/* what only a new LIST can mend: a resourceVersion too old, an event lost */
		need_list = need_list ? r < 0 : r == -ESTALE || r == -EMSGSIZE || r == -EBADMSG;
		if ((r == 0 && healthy) || r == -ESTALE || (r == -ETIMEDOUT && ws.bytes)) {
			fails = 0;	/* an orderly end or a plain relist: at once */
			continue;
		}
		fails++;
		cap = (uint64_t)BACKOFF_BASE_MS << (fails < 7 ? fails - 1 : 6);
		if (cap > BACKOFF_CAP_MS)
			cap = BACKOFF_CAP_MS;
		nap(inf, cap / 2 + (uint64_t)rand_r(&inf->seed) % (cap / 2 + 1));
	}
	return NULL;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

/* timeoutSeconds of a watch: as client-go's reflector, 5 to 10 minutes at random (so that many
 * watchers do not reconnect together); $CZ_WATCH_TIMEOUT (seconds) sets it for tests. */
static unsigned watch_seconds(struct informer *inf)
{
	const char *env = getenv("CZ_WATCH_TIMEOUT");
	uint64_t v;

	if (env && parse_u64(env, &v) == 0 && v >= 1 && v <= 3600)
		return (unsigned)v;
	return 300 + (unsigned)rand_r(&inf->seed) % 301;
}

static struct informer *informer_alloc(struct kube_client *kc, const struct informer_opts *o)
{
	struct informer *inf = calloc(1, sizeof(*inf));
	pthread_condattr_t ca;

	if (!inf)
		return NULL;
	inf->kc = kc;
	inf->o = *o;
	snprintf(inf->path, sizeof(inf->path), "%s", o->path);
	snprintf(inf->what, sizeof(inf->what), "%s", o->what ? o->what : o->path);
	snprintf(inf->selector, sizeof(inf->selector), "%s", o->selector ? o->selector : "");
	inf->o.path = inf->path;
	inf->o.what = inf->what;
	inf->o.selector = inf->selector;
	inf->seed = (unsigned)(now_monotonic_ms() ^ (uintptr_t)inf);
	inf->o.watch_s = o->watch_s ? o->watch_s : watch_seconds(inf);
	inf->cache = json_object_new_object();
	pthread_mutex_init(&inf->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!inf->cache) {
		informer_free(inf);
		return NULL;
	}
	return inf;
}

int informer_list_once(struct kube_client *kc, const struct informer_opts *o,
		       struct informer **ret)
{
	struct informer *inf = informer_alloc(kc, o);
	int r;

	if (!inf)
		return -ENOMEM;
	r = list(inf);
	if (r < 0) {
		informer_free(inf);
		return r;
	}
	*ret = inf;
	return 0;
}

int informer_start(struct kube_client *kc, const struct informer_opts *o, struct informer **ret)
{
	struct informer *inf = informer_alloc(kc, o);
	int r;

	if (!inf) {
		kube_client_free(kc);
		return -ENOMEM;
	}
	inf->owns_kc = true;
	r = -pthread_create(&inf->thread, NULL, run, inf);
	if (r < 0) {
		informer_free(inf);
		return log_error_errno(r, "Failed to start the informer of %s: %m", o->what);
	}
	inf->started = true;
	*ret = inf;
	return 0;
}

int informer_wait_synced(struct informer *inf, uint64_t timeout_ms)
{
	struct timespec at;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)(timeout_ms / 1000);
	at.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&inf->lock);
	while (!inf->synced && !inf->list_err &&
	       pthread_cond_timedwait(&inf->cond, &inf->lock, &at) != ETIMEDOUT)
		;
	r = inf->synced ? 0 : inf->list_err ? inf->list_err : -ETIMEDOUT;
	pthread_mutex_unlock(&inf->lock);
	return r;
}

int informer_each(struct informer *inf, int (*fn)(json_object *obj, void *userdata),
		  void *userdata)
{
	int r = 0;

	pthread_mutex_lock(&inf->lock);
	json_object_object_foreach(inf->cache, key, val) {
		(void)key;
		r = fn(val, userdata);
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&inf->lock);
	return r;
}

struct informer_stats informer_stats(struct informer *inf)
{
	struct informer_stats s;

	pthread_mutex_lock(&inf->lock);
	s = inf->st;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

void informer_free(struct informer *inf)
{
	if (!inf)
		return;
	if (inf->started) {
		atomic_store(&inf->stop, true);
		pthread_join(inf->thread, NULL);
	}
	json_object_put(inf->cache);
	json_object_put(inf->fresh);
	pthread_cond_destroy(&inf->cond);
	pthread_mutex_destroy(&inf->lock);
	if (inf->owns_kc)
		kube_client_free(inf->kc);
	free(inf);
}
