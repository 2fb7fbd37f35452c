/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie fleet` (also `kubectl cpuzombie`): where the chain concentrates across the cluster.
 * Lists the nodes through the API server in pages (kube/fleet_fetch.h), records each into the
 * pure fleet view (fleet/fleet.h), reads the remediation Leases, and prints the ranked summary
 * (text or --json). Exit 0: no node has one of our conditions True; 1: some do; 2: the nodes
 * could not be listed. --watch: live (cmd/fleet_watch.h).
 */
#include <errno.h>
#include <time.h>

#include "base/jsonw.h"
#include "cmd/cmd.h"
#include "cmd/fleet_watch.h"
#include "kube/fleet_fetch.h"
#include "remediator/guard.h"
#include "base/kjson.h"
#include "kube/kube.h"
#include "remediator/remediate_plan.h"
#include "fleet/fleet.h"
#include "base/log.h"
#include "base/util.h"

#define LEASES_MAX 1024

const char cmd_fleet_usage[] =
	"fleet [-l SELECTOR] [--group-by LABEL]... [--nodes] [--json] [--chunk-size N]\n"
	"      [--watch]\n"
	"    Where the chain concentrates across the cluster, read from the API server\n"
	"    (--kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster): per condition, the\n"
	"    zone, instance type, OS image, kernel, runtime or label that best separates True\n"
	"    from False nodes; leakers, tasks and reset causes; remediation and its Leases.\n"
	"    Also `kubectl cpuzombie` (installed as kubectl-cpuzombie). Exit 1: some node "
	"True.\n"
	"    --watch: live, from one LIST and a WATCH, redrawn on change (q quits).\n";

enum { OPT_SELECTOR = 256, OPT_GROUP_BY, OPT_NODES, OPT_CHUNK, OPT_JSON, OPT_WATCH };


_Static_assert(CZ_GROUP_BY_MAX <= FLEET_GROUP_BY_MAX, "--group-by bound");

/* The fleet view, and what the remediation guards need to know about the same nodes. */
struct listing {
	struct fleet *f;
	struct guard_fleet g;
	const struct cz_strlist *types;
	size_t paused;
};

static int add_node(json_object *node, void *userdata)
{
	struct listing *l = userdata;

	guard_fleet_add(&l->g, node, l->types);
	l->paused += guard_paused_node(node);
	return fleet_add_node(l->f, node);
}

/* GET @path: 1 found (*@ret, may be NULL), 0 none (404), -errno. */
static int get_maybe(struct kube_client *kc, const char *path, json_object **ret)
{
	struct kube_response resp = { 0 };
	int e = kube_request(kc, "GET", path, NULL, NULL, 0, &resp);

	e = e < 0 ? e : resp.status == 404 ? 0 : resp.status == 200 ? 1 : -EREMOTEIO;
	if (e == 1 && ret)
		*ret = json_object_get(resp.body);
	kube_response_clear(&resp);
	return e;
}

/* The remediation guards' lines (remediator/guard.h), judged with the local config. */
static void print_guards(struct cz_ctx *ctx, struct kube_client *kc, const struct listing *l)
{
	const struct cz_config *cfg = &ctx->cfg;
	const char *ns = cfg->remediation.lease_namespace;
	json_object *lease = NULL;
	struct guard_state g;
	char path[300], why[320] = "";
	int e;

	if (guard_storm(&l->g, cfg, why, sizeof(why)) >= 0)
		printf("Guards: %s\n", why);
	else
		printf("Guards: storm guard clear (remediation.max_unhealthy %s of %zu nodes)\n",
		       cfg->remediation.max_unhealthy, l->g.covered);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/" GUARD_PAUSE_CM, ns);
	e = get_maybe(kc, path, NULL);
	if (e != 0)
		printf("Guards: %s\n", e > 0 ? "PAUSED cluster-wide (ConfigMap " GUARD_PAUSE_CM
		       " exists): cpuzombie changes nothing" : "cannot read the pause ConfigMap");
	if (l->paused)
		printf("Guards: %zu node%s paused (annotation " GUARD_ANN_PAUSE ")\n", l->paused,
		       l->paused == 1 ? "" : "s");
	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/"
		 GUARD_LEASE, ns);
	e = get_maybe(kc, path, &lease);
	guard_state_read(e > 0 ? lease : NULL, now_realtime_ms(),
			 cfg->remediation.breaker_window_ms, &g);
	if (g.tripped) {
		printf("Guards: circuit breaker TRIPPED (%s); reset: ", g.tripped_why);
		printf(GUARD_RESET_HINT "\n", ns);
	} else if (e > 0) {
		printf("Guards: circuit breaker closed: %zu remediation%s within remediation."
		       "breaker_window\n", g.recent, g.recent == 1 ? "" : "s");
	}
	json_object_put(lease);
}

struct leases {
	json_object *item[LEASES_MAX];
	size_t n;
};

static int add_lease(json_object *lease, void *userdata)
{
	struct leases *l = userdata;

	if (l->n < LEASES_MAX)
		l->item[l->n++] = json_object_get(lease);
	return 0;
}

static int list_nodes(struct cz_ctx *ctx, const struct fleet_opts *o, struct kube_client *kc,
		      struct listing *l)
{
	struct fleet *f = l->f;
	unsigned chunk = o->chunk_size ? (unsigned)o->chunk_size : DEFAULT_CHUNK;
	struct fleet_fetch_stats st = { 0 };
	char err[512] = "";
	int r;

	r = fleet_fetch_nodes(kc, o->selector, chunk, add_node, l, &st, err, sizeof(err));
	if (r == -ESTALE) {
		/* the continue token expired between pages (a slow client, a compaction): start
		 * over, as client-go's pager does; the records are replaced, nothing is counted
		 * twice */
		log_warning("%s; listing the nodes again", err);
		fleet_reset(f);
		l->g = (struct guard_fleet){ 0 };
		l->paused = 0;
		r = fleet_fetch_nodes(kc, o->selector, chunk, add_node, l, &st, err, sizeof(err));
	}
	if (r < 0)
		return log_error_errno(r, "Failed to list the nodes: %s", err);
	log_debug("listed %zu nodes in %u pages of %u", st.items, st.pages, chunk);
	return 0;
}

static void read_leases(struct cz_ctx *ctx, const struct fleet_opts *o, struct kube_client *kc,
			struct fleet *f)
{
	struct leases *l = calloc(1, sizeof(*l));
	char err[512] = "";
	int r, budget = 0;
	struct timespec ts;

	if (!l) {
		fleet_set_leases(f, NULL, 0, 0, 0, "out of memory");
		return;
	}
	r = fleet_fetch_leases(kc, ctx->cfg.remediation.lease_namespace, add_lease, l, err,
			       sizeof(err));
	clock_gettime(CLOCK_REALTIME, &ts);
	/* with a selector the node count is not the cluster's: the budget would be wrong */
	if (!o->selector || !*o->selector)
		budget = remediate_budget(ctx->cfg.remediation.max_unavailable,
					  fleet_node_count(f));
	fleet_set_leases(f, r < 0 ? NULL : l->item, r < 0 ? 0 : l->n,
			 (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
			 budget > 0 ? budget : 0, r < 0 ? err : NULL);
	for (size_t i = 0; i < l->n; i++)
		json_object_put(l->item[i]);
	free(l);
}

static int output(struct cz_ctx *ctx, const struct fleet_opts *o, struct fleet *f,
		  const struct fleet_summary *s)
{
	if (o->json) {
		json_object *j = fleet_json(f, s, o->nodes);

		if (!j)
			return log_error_errno(-ENOMEM, "Failed to build the JSON summary: %m");
		(void)jsonw_print(j, stdout); /* a failed write is the fflush() below */
		json_object_put(j);
	} else {
		fleet_print(f, s, o->nodes, stdout);
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		return log_error_errno(-EIO, "Failed to write the summary: %m");
	return 0;
}

static int fleet_main(struct cz_ctx *ctx, const struct fleet_opts *o)
{
	struct fleet *f = NULL;
	struct kube_client *kc = NULL;
	struct fleet_summary *s = NULL;
	struct listing l = { 0 };
	char err[512] = "";
	int r, ret = CZ_EXIT_ERROR;

	if (o->argc > 0) {
		log_error("fleet: unexpected argument '%.64s'", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	if (o->watch && o->json) {
		log_error("fleet: --watch draws the text view; --json is one summary");
		return CZ_EXIT_ERROR;
	}
	r = fleet_new(o->group_by, o->n_group_by, o->max_output, &f);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the fleet view: %m");
		return CZ_EXIT_ERROR;
	}
	if (o->watch) {
		ret = fleet_watch(ctx, o, f);
		fleet_free(f);
		return ret;
	}
	r = fleet_fetch_open(ctx->cfg.kubernetes.kubeconfig, &kc, err, sizeof(err));
	if (r < 0) {
		log_error_errno(r, "Failed to reach the API server: %s", err);
		goto out;
	}
	l.f = f;
	l.types = &ctx->cfg.remediation.conditions;
	if (list_nodes(ctx, o, kc, &l) < 0)
		goto out;
	read_leases(ctx, o, kc, f);
	s = calloc(1, sizeof(*s));
	r = s ? fleet_summarize(f, s) : -ENOMEM;
	if (r < 0) {
		log_error_errno(r, "Failed to summarize %zu nodes: %m", fleet_node_count(f));
		goto out;
	}
	if (output(ctx, o, f, s) < 0)
		goto out;
	if (!o->json)
		print_guards(ctx, kc, &l);
	ret = CZ_EXIT_OK;
	for (int c = 0; c < FLEET_NCOND; c++)
		if (s->cond[c].t)
			ret = CZ_EXIT_PROBLEM;
out:
	free(s);
	fleet_fetch_close(kc);
	fleet_free(f);
	return ret;
}

/* One of fleet's own options (@c, with optarg) into @o: 0, or -EINVAL (env->err says why). */
static int fleet_option(struct cmd_env *env, int c, struct fleet_opts *o)
{
	switch (c) {
	case 'l':
	case OPT_SELECTOR: o->selector = optarg; break;
	case OPT_GROUP_BY:
		if (o->n_group_by == CZ_GROUP_BY_MAX || !*optarg || strlen(optarg) > 316)
			return cmd_error(env, "--group-by: at most %d label keys of 1..316 bytes",
					 CZ_GROUP_BY_MAX);
		o->group_by[o->n_group_by++] = optarg;
		break;
	case OPT_NODES: o->nodes = true; break;
	case OPT_CHUNK:
		if (parse_u64(optarg, &o->chunk_size) < 0 || o->chunk_size == 0 ||
		    o->chunk_size > 100000)
			return cmd_error(env, "--chunk-size: expected 1..100000, got '%.32s'",
					 optarg);
		break;
	case OPT_JSON: o->json = true; break;
	case OPT_WATCH: o->watch = true; break;
	}
	return 0;
}

int cmd_fleet(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "selector", required_argument, NULL, OPT_SELECTOR },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "nodes", no_argument, NULL, OPT_NODES },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "watch", no_argument, NULL, OPT_WATCH },
		CMD_COMMON_OPTIONS,
	};
	struct fleet_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT "l:", options)) > 0) {
		r = fleet_option(env, r, &o);
		if (r < 0)
			break;
	}
	r = cmd_args(env, r, argc, argv, cmd_fleet_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	o.max_output = env->max_output ? (size_t)env->max_output : NPD_DEFAULT_MAX_OUTPUT;
	return fleet_main(&env->ctx, &o);
}
