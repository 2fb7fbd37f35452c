/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie fleet` (also `kubectl cpuzombie`): where the chain concentrates across the cluster.
 * Lists the nodes through the API server in pages (cluster/fleet_fetch.h), records each into the
 * pure fleet view (fleet/fleet.h), reads the remediation Leases, and prints the ranked summary
 * (text or --json). Exit 0: no node has one of our conditions True; 1: some do; 2: the nodes
 * could not be listed.
 */
#include <errno.h>
#include <time.h>

#include "cmd/cmd.h"
#include "cluster/fleet_fetch.h"
#include "cluster/remediate_plan.h"
#include "fleet/fleet.h"
#include "base/log.h"
#include "base/util.h"

#define DEFAULT_CHUNK 500	/* kubectl's --chunk-size default */
#define LEASES_MAX 1024

_Static_assert(CZ_GROUP_BY_MAX <= FLEET_GROUP_BY_MAX, "--group-by bound");

static int add_node(json_object *node, void *userdata)
{
	return fleet_add_node(userdata, node);
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

static int list_nodes(struct cz_ctx *ctx, struct kube_client *kc, struct fleet *f)
{
	unsigned chunk = ctx->chunk_size ? (unsigned)ctx->chunk_size : DEFAULT_CHUNK;
	struct fleet_fetch_stats st = { 0 };
	char err[512] = "";
	int r;

	r = fleet_fetch_nodes(kc, ctx->selector, chunk, add_node, f, &st, err, sizeof(err));
	if (r == -ESTALE) {
		/* the continue token expired between pages (a slow client, a compaction): start
		 * over, as client-go's pager does; the records are replaced, nothing is counted twice */
		log_warning("%s; listing the nodes again", err);
		fleet_reset(f);
		r = fleet_fetch_nodes(kc, ctx->selector, chunk, add_node, f, &st, err, sizeof(err));
	}
	if (r < 0)
		return log_error_errno(r, "Failed to list the nodes: %s", err);
	log_debug("listed %zu nodes in %u pages of %u", st.items, st.pages, chunk);
	return 0;
}

static void read_leases(struct cz_ctx *ctx, struct kube_client *kc, struct fleet *f)
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
	if (!ctx->selector || !*ctx->selector)
		budget = remediate_budget(ctx->cfg.remediation.max_unavailable,
					  fleet_node_count(f));
	fleet_set_leases(f, r < 0 ? NULL : l->item, r < 0 ? 0 : l->n,
			 (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
			 budget > 0 ? budget : 0, r < 0 ? err : NULL);
	for (size_t i = 0; i < l->n; i++)
		json_object_put(l->item[i]);
	free(l);
}

static int output(struct cz_ctx *ctx, struct fleet *f, const struct fleet_summary *s)
{
	if (ctx->json) {
		json_object *o = fleet_json(f, s, ctx->nodes);

		if (!o)
			return log_error_errno(-ENOMEM, "Failed to build the JSON summary: %m");
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		fleet_print(f, s, ctx->nodes, stdout);
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		return log_error_errno(-EIO, "Failed to write the summary: %m");
	return 0;
}

int cmd_fleet(struct cz_ctx *ctx)
{
	struct fleet *f = NULL;
	struct kube_client *kc = NULL;
	struct fleet_summary *s = NULL;
	char err[512] = "";
	int r, ret = CZ_EXIT_ERROR;

	if (ctx->argc > 0) {
		log_error("fleet: unexpected argument '%.64s'", ctx->argv[0]);
		return CZ_EXIT_ERROR;
	}
	r = fleet_new(ctx->group_by, ctx->n_group_by, ctx->max_output, &f);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the fleet view: %m");
		return CZ_EXIT_ERROR;
	}
	r = fleet_fetch_open(ctx->cfg.kubernetes.kubeconfig, &kc, err, sizeof(err));
	if (r < 0) {
		log_error_errno(r, "Failed to reach the API server: %s", err);
		goto out;
	}
	if (list_nodes(ctx, kc, f) < 0)
		goto out;
	read_leases(ctx, kc, f);
	s = calloc(1, sizeof(*s));
	r = s ? fleet_summarize(f, s) : -ENOMEM;
	if (r < 0) {
		log_error_errno(r, "Failed to summarize %zu nodes: %m", fleet_node_count(f));
		goto out;
	}
	if (output(ctx, f, s) < 0)
		goto out;
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
