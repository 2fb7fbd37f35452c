/* SPDX-License-Identifier: MIT */
/* The agent's Kubernetes side: see kube_agent.h. */
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include "node/checks.h"
#include "node/model.h"
#include "agent/kube_agent.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "condition/conditions.h"
#include "condition/condwrite.h"
#include "kube/event.h"
#include "kube/kube.h"
#include "condition/recover_store.h"
#include "remediator/remediate.h"

struct kube_agent {
	struct kube_client *kc;
	const struct cz_config *cfg;
	enum remediate_action last;
	bool swept;		/* NPD mode: the conditions turned off are gone (once per config) */
	/* this node as last read or as the last status PATCH answered; NULL: to be read (at the
	 * start, after a refused or failed write) */
	json_object *node;
	struct condwrite cw;	/* which conditions to write when (condwrite.h) */
	struct event_cache events; /* the condition flips' Events, aggregated (event.h) */
	struct {		/* each condition's last result (conditions_nth order) */
		bool have;
		enum npd_status status;
		char msg[NPD_MSG_MAX];
	} result[CONDWRITE_MAX];
};

/* A random number for the first heartbeat's jitter; the clock and pid when none is to be had. */
static uint64_t seed(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return now_realtime_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
}

bool kube_agent_remediates(const struct cz_config *cfg)
{
	return cfg->agent.remediate && cfg->remediation.mode != CZ_REMEDIATE_OFF;
}

bool kube_agent_hands_off(const struct cz_config *cfg)
{
	return !cfg->agent.remediate && cfg->remediation.mode == CZ_REMEDIATE_DRAIN &&
	       *cfg->remediation.reboot_sentinel;
}

/* A check whose condition is off (<check>.condition false): its type is to be removed. */
static bool condition_off(const struct cz_config *cfg)
{
	return !cfg->memcg.condition || !cfg->cpu.condition || !cfg->ena.condition;
}

/* NPD owns the conditions (set_conditions false): the agent only removes the ones turned off. */
static bool sweeps(const struct cz_config *cfg)
{
	return !cfg->agent.set_conditions && condition_off(cfg);
}

static int sweep(struct kube_agent *ka, char *out, size_t size);

/* What runs without an API client, as a log line names it: only what is on. */
static const char *courtesies(const struct cz_config *cfg)
{
	bool reclaim = cfg->remediation.reclaim != CZ_RECLAIM_OFF;

	if (reclaim && sweeps(cfg))
		return "Reclaim Events and the removal of disabled checks' conditions";
	return reclaim ? "Reclaim Events" : "The removal of disabled checks' conditions";
}

int kube_agent_new(const struct cz_config *cfg, struct kube_agent **ret)
{
	struct kube_agent *ka;
	int r;

	/* reclaim alone wants the client only for its Events, and the sweep of the conditions
	 * turned off (NPD mode) is a courtesy: without one both still run, the rest is an error */
	bool need = cfg->agent.set_conditions || kube_agent_remediates(cfg) ||
		    kube_agent_hands_off(cfg);

	*ret = NULL;
	if (!need && cfg->remediation.reclaim == CZ_RECLAIM_OFF && !sweeps(cfg))
		return 0;
	if (!cfg->kubernetes.node_name[0]) {
		if (!need) {
			log_info("%s off: no node name (kubernetes.node_name, $NODE_NAME or "
				 "--node-name)", courtesies(cfg));
			return 0;
		}
		return log_error_errno(EINVAL, "No node name: set kubernetes.node_name, $NODE_NAME "
				       "or --node-name");
	}
	ka = calloc(1, sizeof(*ka));
	if (!ka)
		return -ENOMEM;
	r = kube_client_from_config(cfg->kubernetes.kubeconfig, cfg->kubernetes.timeout_ms,
				    &ka->kc);
	if (r < 0) {
		free(ka);
		if (!need) {
			log_warning_errno(r, "%s off: no API client (the reason is above)",
					  courtesies(cfg));
			return 0;
		}
		return r;
	}
	ka->cfg = cfg;
	condwrite_init(&ka->cw, cfg->agent.heartbeat_ms, now_monotonic_ms(), seed());
	if (sweeps(cfg)) {	/* at the start (and each reload: a new kube_agent) */
		char out[200];

		(void)sweep(ka, out, sizeof(out));	/* each removal, or the failure, logged */
	}
	if (!need && cfg->remediation.reclaim == CZ_RECLAIM_OFF) {
		kube_agent_free(ka);	/* only the sweep wanted it: no checks run in the agent */
		return 0;
	}
	*ret = ka;
	return 0;
}

void kube_agent_free(struct kube_agent *ka)
{
	if (!ka)
		return;
	kube_client_free(ka->kc);
	json_object_put(ka->node);
	free(ka);
}

void kube_agent_set_once(struct kube_agent *ka)
{
	if (ka)	/* no later cycle to write a deferred heartbeat: it is due now */
		condwrite_init(&ka->cw, ka->cfg->agent.heartbeat_ms, now_monotonic_ms(), 0);
}

enum remediate_action kube_agent_last_action(const struct kube_agent *ka)
{
	return ka ? ka->last : REM_NONE;
}

/* This node as the API server has it (kube_get_object: -errno, logged). */
static int get_node(struct kube_agent *ka, json_object **ret)
{
	const char *node = ka->cfg->kubernetes.node_name;
	char path[400], what[320];

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	snprintf(what, sizeof(what), "node %s", node);
	return kube_get_object(ka->kc, path, what, ret);
}

/*
 * PATCH this node's status (@path) with @patch. The answer is the node as patched: it replaces
 * ka->node (an answer that is no node drops it: read again next time). Returns 0, -ESTALE on a
 * 409 Conflict, or -errno (logged); on a failure ka->node is dropped too, so that the next
 * write starts from the node as the API server has it.
 */
static int patch_status(struct kube_agent *ka, const char *path, json_object *patch)
{
	struct kube_response resp = { 0 };
	int r = kube_json(ka->kc, "PATCH", path, "application/strategic-merge-patch+json", patch,
			  0, &resp);

	if (r == 0 && resp.status == 409)
		r = log_warning_errno(ESTALE, "PATCH %s: HTTP 409: %s", path, resp.message);
	else if (r == 0 && resp.status != 200)
		r = log_error_errno(EREMOTEIO, "PATCH %s: HTTP %ld: %s", path, resp.status,
				    resp.message);
	else if (r < 0)
		log_error_errno(r, "PATCH %s: %s", path, resp.message);
	json_object_put(ka->node);
	ka->node = NULL;
	if (r == 0 && json_object_is_type(resp.body, json_type_object) &&
	    streq(kube_get_str(resp.body, "metadata.name", ""), ka->cfg->kubernetes.node_name))
		ka->node = json_object_get(resp.body);
	if (ka->node)
		condwrite_learn(&ka->cw, ka->node);
	kube_response_clear(&resp);
	return r;
}

/* ka->node, read when it is not known. Returns 0 or -errno (logged). */
static int known_node(struct kube_agent *ka)
{
	int r;

	if (ka->node)
		return 0;
	r = get_node(ka, &ka->node);
	if (r == 0)
		condwrite_learn(&ka->cw, ka->node);
	return r;
}

/* Remove from node @cur each condition of ours whose <check>.condition is false (not False:
 * gone, as if the check had never been installed). Returns how many, or -errno (logged). */
static int remove_disabled(struct kube_agent *ka, json_object *cur, const char *path)
{
	_cleanup_(json_object_putp) json_object *patch = NULL;
	const char *types[3];
	int n, r;

	n = conditions_build_removal(cur, ka->cfg, conditions_enabled, &patch, types);
	if (n <= 0)
		return n;
	r = patch_status(ka, path, patch);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++)
		log_notice("%s: condition %s removed (its check's condition is off)",
			   ka->cfg->kubernetes.node_name, types[i]);
	return n;
}

/*
 * NPD mode: NPD sets our conditions, and a check turned off (<check>.condition false) leaves
 * its condition on the node for ever (NPD never removes a type). At the agent's start and
 * after each reload (a new kube_agent), remove those types once: present ones only, ours only
 * (conditions.h's table: never KernelReady or another agent's type). Returns 0 or -errno.
 */
static int sweep(struct kube_agent *ka, char *out, size_t size)
{
	_cleanup_(json_object_putp) json_object *cur = NULL;
	char path[400];
	int r;

	r = get_node(ka, &cur);
	if (r < 0) {
		snprintf(out, size, "conditions: set by NPD; cannot read the node");
		return r;
	}
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", ka->cfg->kubernetes.node_name);
	r = remove_disabled(ka, cur, path);
	if (r < 0) {
		snprintf(out, size, "conditions: set by NPD; cannot remove those turned off");
		return r;
	}
	ka->swept = true;
	snprintf(out, size, "conditions: set by NPD; %d turned off removed", r);
	return 0;
}

/* An Event for each status flip in @ch (@nch), aggregated (event.h). */
static void flip_events(struct kube_agent *ka, const char *uid, const struct cond_change ch[],
			size_t nch, uint64_t now)
{
	for (size_t i = 0; i < nch; i++) {
		bool bad = streq(ch[i].new_status, "True");
		char msg[NPD_MSG_MAX + 100];
		struct event_desc d = { ka->cfg->kubernetes.node_name, uid,
					bad ? "Warning" : "Normal",
					bad ? ch[i].def->reason_true : ch[i].def->reason_false, msg,
					now };

		snprintf(msg, sizeof(msg), "%s is now %s (was %s)", ch[i].def->type,
			 ch[i].new_status, *ch[i].old_status ? ch[i].old_status : "unset");
		(void)event_record(ka->kc, &ka->events, &d);
	}
}

/*
 * Write @in (@k) when condwrite says so: one PATCH of them all, and an Event per flip. A 409
 * Conflict reads the node again and tries once more. Returns the conditions' flips (>= 0,
 * into @ch), -EALREADY when nothing was due, or -errno (logged).
 */
static int write_conditions(struct kube_agent *ka, const char *path, const struct cond_input in[],
			    size_t k, struct cond_change ch[])
{
	uint64_t now = now_realtime_ms();
	size_t nch = 0;
	int r = -ESTALE;

	for (int attempt = 0; attempt < 2 && r == -ESTALE; attempt++) {
		_cleanup_(json_object_putp) json_object *patch = NULL, *was = NULL;

		r = known_node(ka);
		if (r < 0)
			return r;
		if (!condwrite_decide(&ka->cw, in, k, now_monotonic_ms(), NULL))
			return -EALREADY;
		r = conditions_build_patch(ka->node, in, k, now, &patch, ch, &nch);
		if (r < 0)
			return r;
		was = json_object_get(ka->node);	/* the flips' Events name its uid */
		r = patch_status(ka, path, patch);
		if (r == 0) {
			condwrite_written(&ka->cw, in, k, now_monotonic_ms());
			flip_events(ka, kube_get_str(was, "metadata.uid", NULL), ch, nch, now);
		}
	}
	return r < 0 ? r : (int)nch;
}

/*
 * Keep @in's @k results as the last ones, then add to @in (room for CONDWRITE_MAX) the last
 * result of each enabled condition @in lacks (the trigger runs one check): a write carries
 * every condition, as NPD's exporter does, so that one heartbeat covers them all. Returns the
 * new count.
 */
static size_t carry(struct kube_agent *ka, struct cond_input in[], size_t k)
{
	size_t fresh = k;

	for (size_t i = 0; i < CONDWRITE_MAX; i++) {
		const struct cond_def *d = conditions_nth(i);
		bool given = false;

		for (size_t j = 0; j < fresh; j++)
			if (in[j].def == d) {
				given = true;
				ka->result[i].have = true;
				ka->result[i].status = in[j].status;
				snprintf(ka->result[i].msg, sizeof(ka->result[i].msg), "%s",
					 in[j].message);
			}
		if (!given && d && ka->result[i].have && conditions_enabled(ka->cfg, d->check))
			in[k++] = (struct cond_input){ d, ka->result[i].status, ka->result[i].msg };
	}
	return k;
}

static int publish(struct kube_agent *ka, const char *const checks[],
		   const struct npd_result res[], size_t n, char *out, size_t size)
{
	const char *node = ka->cfg->kubernetes.node_name;
	struct cond_input in[8 + CONDWRITE_MAX];
	struct cond_change ch[8 + CONDWRITE_MAX];
	size_t k = 0, all;
	char path[400];
	int r, removed;

	for (size_t i = 0; i < n && k < 8; i++)
		if (conditions_for_check(checks[i]) && conditions_enabled(ka->cfg, checks[i]))
			in[k++] = (struct cond_input){ conditions_for_check(checks[i]),
						       res[i].status, res[i].msg };
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", node);
	/* not "a node without conditions" when unreadable: that would reset every transition time
	 * */
	r = known_node(ka);
	if (r < 0) {
		snprintf(out, size, "cannot read node %.64s", node);
		return r;
	}
	removed = remove_disabled(ka, ka->node, path);
	if (removed < 0) {
		snprintf(out, size, "cannot remove the conditions turned off");
		return removed;
	}
	if (k == 0) {
		snprintf(out, size, "conditions: none on (%d removed)", removed);
		return 0;
	}
	all = carry(ka, in, k);
	r = write_conditions(ka, path, in, all, ch);
	if (r == -EALREADY) {
		uint64_t due = condwrite_next_due(&ka->cw, in, all), now = now_monotonic_ms();

		snprintf(out, size, "conditions: %zu unchanged, heartbeat in %llus, %d removed", k,
			 (unsigned long long)(due > now ? (due - now + 999) / 1000 : 0), removed);
		return 0;
	}
	if (r < 0) {
		snprintf(out, size, "cannot patch %.100s", path);
		return r;
	}
	snprintf(out, size, "conditions: %zu set, %d changed", k, r);
	if (all > k)	/* the last results of the others, carried along */
		snprintf(out + strlen(out), size - strlen(out), ", %zu carried", all - k);
	if (removed)
		snprintf(out + strlen(out), size - strlen(out), ", %d removed", removed);
	return 0;
}

int kube_agent_publish(struct kube_agent *ka, const char *const checks[],
		       const struct npd_result res[], size_t n, char *out, size_t size)
{
	if (!ka || !ka->cfg->agent.set_conditions)
		return 0;
	return publish(ka, checks, res, n, out, size);
}

#define HANDOFF_STATE "reboot-handoff"	/* the drained annotation last handed to kured */

/*
 * The remediator drained this node (its annotation cpuzombie.io/drained, a time): write kured's
 * sentinel once for that drain. The drain handed off is kept in the state dir, which outlives
 * the reboot, so the rebooted node (still annotated until it is uncordoned) is not rebooted
 * again.
 */
static int hand_off(struct kube_agent *ka, const char *state_dir, char *out, size_t size)
{
	const char *node = ka->cfg->kubernetes.node_name;
	const char *sentinel = ka->cfg->remediation.reboot_sentinel;
	_cleanup_(json_object_putp) json_object *n = NULL;
	char file[FILEIO_PATH_MAX], done[64] = "";
	const char *drained;
	int fd, r;

	r = get_node(ka, &n);
	if (r < 0) {
		snprintf(out, size, "reboot hand-off: cannot read node %.64s", node);
		return r;
	}
	drained = kube_annotation(n, REMEDIATE_ANN_DRAINED);
	if (!drained || !*drained || strlen(drained) >= sizeof(done)) {
		snprintf(out, size, "reboot hand-off: not drained");
		return 0;
	}
	snprintf(file, sizeof(file), "%s/" HANDOFF_STATE, state_dir);
	if (fileio_read_at(AT_FDCWD, file, FILEIO_REGULAR, done, sizeof(done)) > 0 &&
	    streq(done, drained)) {
		snprintf(out, size, "reboot hand-off: drain of %.40s already handed to kured",
			 drained);
		return 0;
	}
	fd = open(sentinel, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0) {
		r = log_error_errno(errno, "Failed to write reboot sentinel '%s': %m", sentinel);
		snprintf(out, size, "reboot hand-off: cannot write the sentinel");
		return r;
	}
	close(fd);
	r = fileio_write_atomic(state_dir, HANDOFF_STATE,
				&(struct iovec){ (void *)drained, strlen(drained) }, 1, 0644,
				FILEIO_DURABLE);
	if (r < 0)
		log_warning_errno(r, "Failed to record the reboot hand-off in '%s': %m, ignoring",
				  state_dir);
	log_notice("%s: drained by the remediator (%s): reboot sentinel %s written for kured", node,
		   drained, sentinel);
	snprintf(out, size, "reboot hand-off: sentinel written for kured");
	return 0;
}

int kube_agent_cycle(struct kube_agent *ka, struct cz_ctx *ctx, const char *const checks[],
		     const struct npd_result res[], size_t n, char *summary, size_t summary_size)
{
	char cond[300] = "conditions: not set (agent.set_conditions false)", rem[300] = "";
	int r = 0, r2 = 0;

	snprintf(summary, summary_size, "kubernetes: off");
	if (!ka)
		return 0;
	if (ka->cfg->agent.set_conditions)
		r = kube_agent_publish(ka, checks, res, n, cond, sizeof(cond));
	else if (sweeps(ka->cfg) && !ka->swept)
		r = sweep(ka, cond, sizeof(cond));	/* failed at the start: tried again */
	ka->last = REM_NONE;
	if (kube_agent_remediates(ka->cfg))
		r2 = remediate_cycle(ka->kc, ka->cfg, ka->cfg->kubernetes.node_name,
				     now_realtime_ms(), &ka->last, rem, sizeof(rem));
	else if (kube_agent_hands_off(ka->cfg))
		r2 = hand_off(ka, ctx->cfg.paths.state, rem, sizeof(rem));
	if (!ka->cfg->agent.remediate && ka->cfg->remediation.mode != CZ_REMEDIATE_OFF)
		snprintf(summary, summary_size, "%s; remediation %s: by the remediator%s%s", cond,
			 config_mode_name(ka->cfg->remediation.mode), *rem ? "; " : "", rem);
	else
		snprintf(summary, summary_size, "%s; remediation %s: %s: %s", cond,
			 config_mode_name(ka->cfg->remediation.mode),
			 remediate_action_name(ka->last), *rem ? rem : "off");
	return r < 0 ? r : r2;
}

struct kube_client *kube_agent_client(struct kube_agent *ka)
{
	return ka ? ka->kc : NULL;
}
