/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "memcg/check_memcg.h"
#include "agent/agent_periodic.h"
#include "memcg/canary.h"
#include "agent/kube_agent.h"
#include "base/log.h"
#include "agent/metrics.h"
#include "agent/pods_publish.h"
#include "agent/units_publish.h"
#include "agent/census_publish.h"
#include "agent/reclaimer.h"
#include "agent/trigger.h"
#include "node/check_run.h"
#include "node/node.h"
#include "node/model.h"
#include "base/util.h"

#define MAX_RESULTS 8
#define STOP_WAIT_MS 5000

struct periodic {
	struct cz_ctx *ctx;
	bool once;			/* agent --once */
	struct kube_agent *ka;
	int kube_err;			/* why Kubernetes could not be set up (logged), or 0 */
	struct units_publisher units;	/* systemd units for the checks, every UNITS_PUBLISH_MS */
	struct pods_publisher pods;	/* this node's pods by UID, for the memcg subtree */
	struct census_publisher census;	/* the zombie census, every memcg.census_interval */
	int last[MAX_RESULTS];		/* previous status per check, -1 before the first */
	struct check_run_seen seen;	/* what this cycle's checks read, for its model */
	pthread_t thread;
	bool started;
	atomic_bool stop, done;
	atomic_uint kick;		/* TRIGGER_* bits to publish now (trigger.h) */
	pthread_mutex_t lock;
	pthread_cond_t wake;
};

int periodic_new(struct cz_ctx *ctx, bool once, struct periodic **ret)
{
	struct periodic *p;

	*ret = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ctx = ctx;
	p->once = once;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->kube_err = kube_agent_new(&ctx->cfg, &p->ka);
	if (p->kube_err < 0)
		log_warning("Kubernetes disabled (the reason is above)");
	if (once)
		kube_agent_set_once(p->ka);
	for (size_t i = 0; i < MAX_RESULTS; i++)
		p->last[i] = -1;
	/* --once keeps the failure, so that the one cycle reports it in its exit code */
	if (!p->ka && !ctx->cfg.agent.metrics_textfile[0] && !ctx->cfg.memcg.systemd_hints &&
	    !ctx->cfg.kubernetes.node_name[0] && !ctx->cfg.memcg.census_interval_ms &&
	    ctx->cfg.remediation.reclaim == CZ_RECLAIM_OFF && !(once && p->kube_err < 0)) {
		/* nothing to publish: the sampler alone is the agent's job */
		periodic_free(p);
		return 0;
	}
	*ret = p;
	return 0;
}

/* The canary (rate-limited by itself): a slow read is what kubelet pays on every stats pass. It
 * times the hierarchy this cycle's check memcg read, when it did. */
static void canary(struct periodic *p, struct node_model *r)
{
	const struct memcg_seen *s = &p->seen.memcg;

	node_read_canary(p->ctx, r, s->read && s->rc == NPD_OK ? &s->reading : NULL);
	if (r->canary_rc == 0 && r->canary.fresh && r->canary.err == 0 &&
	    r->canary.read_us >= 100000)
		log_fields_full(LOG_PRIO_WARNING,
				&(struct log_fields){ LOG_MID_CHECK, "memcg", -1, NULL },
				"memcg read-latency canary: %s took %.0f ms", r->canary.file,
				(double)r->canary.read_us / 1000.0);
}

/* The metrics read the model: what this cycle's checks read (p->seen), the run dir, the state
 * the checks keep. After a reclaim (@reclaimed) the dying memcgs are counted again: the node
 * changed under the check's reading. */
static int metrics(struct periodic *p, struct node_model *r, bool reclaimed)
{
	const struct cz_config *cfg = &p->ctx->cfg;
	int e;

	(void)node_take_memcg(p->ctx, r, reclaimed ? NULL : &p->seen.memcg);
	r->since_ms = r->now_ms > cfg->cpu.lookback_ms ? r->now_ms - cfg->cpu.lookback_ms : 0;
	e = report_load_run(r, cfg->paths.run, r->now_ms);
	if (e >= 0)
		e = node_take_kevents(cfg, r, &p->seen.cpu);
	if (e < 0)
		return e;
	node_take_ena(cfg, r, &p->seen.ena);
	node_take_recovery(cfg, r, p->seen.recovery_on ? &p->seen.recovery : NULL);
	node_read_reclaim(cfg, r);
	e = metrics_write(r, cfg->agent.metrics_textfile);
	if (e < 0)
		log_fields_full(LOG_PRIO_ERR,
				&(struct log_fields){ LOG_MID_METRICS, NULL, -1, NULL },
				"Failed to write metrics '%s': %s", cfg->agent.metrics_textfile,
				strerror(-e));
	return e;
}

/* MemcgZombieLeak just turned True: count the zombies now, not at the next census period, so
 * the next check line (NPD's, or this agent's next cycle) names their group. Not on the first
 * cycle: the census ran just before it. */
static void census_on_leak(struct periodic *p, const char *const names[],
			   const struct npd_result res[], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(names[i], "memcg") && res[i].status == NPD_PROBLEM && p->last[i] != -1 &&
		    p->last[i] != NPD_PROBLEM && p->ctx->cfg.memcg.census_interval_ms)
			(void)census_publish(&p->census, p->ctx, now_monotonic_ms(),
					     now_realtime_ms());
}

/* remediation.reclaim, on this cycle's memcg status (reclaimer.h); its line joins the summary. */
static int reclaim(struct periodic *p, const char *const names[], const struct npd_result res[],
		   size_t n, char *summary, size_t size)
{
	char line[600] = "";
	int r = 0;

	if (p->ctx->cfg.remediation.reclaim == CZ_RECLAIM_OFF)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (streq(names[i], "memcg"))
			r = reclaimer_cycle(p->ctx, res[i].status, kube_agent_client(p->ka),
					    &p->census, line, sizeof(line));
	if (*line && strlen(summary) + 2 < size)
		snprintf(summary + strlen(summary), size - strlen(summary), "%s%s",
			 *summary ? "; " : "", line);
	return r < 0 ? r : 0;
}

/* Log each check whose status changed since the last cycle. */
static void log_changes(struct periodic *p, const char *const names[],
			const struct npd_result res[], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p->last[i] == (int)res[i].status)
			continue;
		log_fields_full(res[i].status == NPD_PROBLEM ? LOG_PRIO_WARNING : LOG_PRIO_INFO,
				&(struct log_fields){ LOG_MID_CHECK, names[i], -1, NULL },
				"check %s: %s: %s", names[i], npd_status_name(res[i].status),
				res[i].msg);
		p->last[i] = (int)res[i].status;
	}
}

int periodic_cycle(struct periodic *p)
{
	const char *names[MAX_RESULTS];
	struct npd_result res[MAX_RESULTS];
	char summary[1024] = "", rsum[700] = "";
	struct node_model *r;
	size_t n;
	int e = 0, m = 0, q;

	/* first: `check memcg` in this cycle (and in NPD's container) reads what it publishes */
	(void)units_publish_due(&p->units, &p->ctx->cfg, now_monotonic_ms(), now_realtime_ms());
	(void)pods_publish_due(&p->pods, &p->ctx->cfg, now_monotonic_ms(), now_realtime_ms());
	(void)census_publish_due(&p->census, p->ctx, now_monotonic_ms(), now_realtime_ms());
	if (!p->ka && !p->ctx->cfg.agent.metrics_textfile[0] &&
	    p->ctx->cfg.remediation.reclaim == CZ_RECLAIM_OFF)
		return p->kube_err;	/* the units were the only work (NPD runs the checks) */
	/* the checks leave what they read in p->seen for the model below: read once per cycle */
	check_run_seen_begin(&p->seen, p->ctx->cfg.agent.metrics_textfile[0] != '\0');
	n = check_run_conditions(p->ctx, &p->seen, names, res, MAX_RESULTS);
	census_on_leak(p, names, res, n);
	log_changes(p, names, res, n);
	if (p->ka) {
		e = kube_agent_cycle(p->ka, p->ctx, names, res, n, summary, sizeof(summary));
		if (e < 0 || p->ctx->verbose)
			log_fields_full(e < 0 ? LOG_PRIO_ERR : LOG_PRIO_INFO, NULL, "%s", summary);
	} else if (p->kube_err < 0) {
		e = p->kube_err;
	}
	/* after the conditions: the node says MemcgZombieLeak before it says what was done */
	q = reclaim(p, names, res, n, rsum, sizeof(rsum));
	e = e < 0 ? e : q;
	if (p->once && (p->ka || *rsum)) {	/* `agent --once`: what the one cycle did */
		printf("%s%s%s\n", summary, *summary && *rsum ? "; " : "", rsum);
		fflush(stdout);
	}
	r = node_model_new(&p->ctx->cfg, now_realtime_ms());
	if (!r)
		return -ENOMEM;
	report_node_name(r, &p->ctx->hf);
	for (size_t i = 0; i < n && i < REPORT_CHECKS_MAX; i++) {
		r->checks[i] =
			(struct report_check){ names[i], conditions_for_check(names[i]), res[i] };
		r->nchecks++;
	}
	canary(p, r);
	if (p->census.has_last) {
		r->census_rc = 0;
		r->census = p->census.last;
	}
	if (p->ctx->cfg.memcg.systemd_hints) {
		r->restarts_rc = p->units.last_rc;
		r->restarts = p->units.last;
	}
	if (p->ctx->cfg.agent.metrics_textfile[0])
		m = metrics(p, r, *rsum != '\0');
	node_model_free(r);
	check_run_seen_free(&p->seen); /* what the metrics did not take */
	return e < 0 ? e : m;
}

static void *thread_main(void *arg)
{
	struct periodic *p = arg;
	uint64_t every = p->ctx->cfg.agent.check_interval_ms;

	while (!atomic_load(&p->stop)) {
		struct timespec ts;

		(void)periodic_cycle(p);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(every / 1000);
		ts.tv_nsec += (long)(every % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->lock);
		while (!atomic_load(&p->stop)) {
			unsigned k = atomic_exchange(&p->kick, 0);
			char line[300];

			if (k) { /* evidence just appeared: its condition now (trigger.h) */
				pthread_mutex_unlock(&p->lock);
				if (trigger_publish(p->ctx, p->ka, k, line, sizeof(line)) < 0 ||
				    p->ctx->verbose)
					log_info("trigger: %s", line);
				pthread_mutex_lock(&p->lock);
				continue;
			}
			if (pthread_cond_timedwait(&p->wake, &p->lock, &ts) == ETIMEDOUT)
				break;
		}
		pthread_mutex_unlock(&p->lock);
	}
	atomic_store(&p->done, true);
	return NULL;
}

void periodic_kick(struct periodic *p, unsigned what)
{
	if (!p || !p->started || !p->ka || !p->ctx->cfg.agent.set_conditions || !what)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_fetch_or(&p->kick, what);
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
}

int periodic_start(struct periodic *p)
{
	sigset_t all, old;
	int r;

	/* signals stay with the sampler's thread, which owns the shutdown */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&p->thread, NULL, thread_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return -r;
	p->started = true;
	return 0;
}

void periodic_free(struct periodic *p)
{
	if (!p)
		return;
	if (p->started) {
		uint64_t deadline = now_monotonic_ms() + STOP_WAIT_MS;

		pthread_mutex_lock(&p->lock);
		atomic_store(&p->stop, true);
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		while (!atomic_load(&p->done) && now_monotonic_ms() < deadline)
			usleep(20000);
		if (!atomic_load(&p->done)) {
			/* a cycle is stuck in a drain or a slow API call: leave it to process exit
			 * */
			log_fields_full(LOG_PRIO_WARNING, NULL,
					"periodic work still running at exit");
			return;
		}
		pthread_join(p->thread, NULL);
	}
	kube_agent_free(p->ka);
	pods_publisher_clear(&p->pods);
	census_publisher_done(&p->census);
	check_run_seen_free(&p->seen);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
