/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "agent_periodic.h"
#include "kube_agent.h"
#include "util.h"

#define MAX_RESULTS 8
#define STOP_WAIT_MS 5000

struct periodic {
	struct cz_ctx *ctx;
	struct kube_agent *ka;
	pthread_t thread;
	bool started;
	atomic_bool stop, done;
	pthread_mutex_t lock;
	pthread_cond_t wake;
};

int periodic_new(struct cz_ctx *ctx, struct periodic **ret)
{
	struct periodic *p;
	char err[512] = "";
	int r;

	*ret = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ctx = ctx;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	r = kube_agent_new(&ctx->cfg, &p->ka, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "cpuzombie agent: Kubernetes disabled: %s\n", err);
	if (!p->ka) {
		/* nothing to publish: the sampler alone is the agent's job */
		periodic_free(p);
		return 0;
	}
	*ret = p;
	return 0;
}

int periodic_cycle(struct periodic *p)
{
	const char *names[MAX_RESULTS];
	struct npd_result res[MAX_RESULTS];
	char summary[1024] = "";
	size_t n;
	int r;

	n = kube_agent_run_checks(p->ctx, names, res, MAX_RESULTS);
	r = kube_agent_cycle(p->ka, p->ctx, names, res, n, summary, sizeof(summary));
	if (r < 0 || p->ctx->verbose)
		fprintf(stderr, "cpuzombie agent: %s\n", summary);
	return r;
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
		while (!atomic_load(&p->stop) &&
		       pthread_cond_timedwait(&p->wake, &p->lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&p->lock);
	}
	atomic_store(&p->done, true);
	return NULL;
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
			/* a cycle is stuck in a drain or a slow API call: leave it to process exit */
			fprintf(stderr, "cpuzombie agent: periodic work still running at exit\n");
			return;
		}
		pthread_join(p->thread, NULL);
	}
	kube_agent_free(p->ka);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
