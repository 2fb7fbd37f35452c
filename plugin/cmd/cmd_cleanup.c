/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie cleanup [--keep-cordons]`: remove every condition type, cpuzombie.io/ annotation
 * and taint of ours from all nodes, lift our cordons (or keep them, with their marker), and our
 * Leases (remediator/cleanup.h). The chart's uninstall hook runs it as its
 * own ServiceAccount; a person can run it with --kubeconfig. Exit 0 when all is gone, 2 with a
 * one-line error otherwise (running it again finishes the job).
 */
#include <errno.h>
#include <fcntl.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "remediator/cleanup.h"
#include "kube/fleet_fetch.h"
#include "remediator/remediator.h"
#include "cmd/cmd.h"

const char cmd_cleanup_usage[] =
	"cleanup [--keep-cordons]\n"
	"    Remove cpuzombie's condition types (not set False), its cpuzombie.io/ annotations\n"
	"    and taints from every node, and its Leases (remediation.lease_namespace, the\n"
	"    leader's); nothing of anyone else's. The chart's uninstall hook runs it. A node\n"
	"    cordoned by cpuzombie is uncordoned in the same patch; --keep-cordons: it stays\n"
	"    cordoned with its cpuzombie.io/cordoned marker, and the summary names it.\n";

/* The options of `cleanup` (cmd_cleanup), and the words after them. */
struct cleanup_opts {
	bool keep_cordons;	/* --keep-cordons: our cordons stay, with their marker */
	int argc;
	char **argv;
};

#define SA_NAMESPACE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* remediation.leader_namespace, else this pod's namespace, else cpuzombie (as the remediator) */
static void leader_namespace(const struct cz_config *cfg, char *buf, size_t size)
{
	const char *dir = getenv("CZ_SERVICEACCOUNT_DIR");
	char path[FILEIO_PATH_MAX], text[128];

	if (*cfg->remediation.leader_namespace) {
		snprintf(buf, size, "%s", cfg->remediation.leader_namespace);
		return;
	}
	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/namespace", dir);
	else
		snprintf(path, sizeof(path), "%s", SA_NAMESPACE);
	remediator_default_namespace(fileio_read_at(AT_FDCWD, path, FILEIO_REGULAR, text,
						    sizeof(text)) > 0 ? text : NULL, buf, size);
}

static int cleanup_main(struct cz_ctx *ctx, const struct cleanup_opts *o)
{
	struct kube_client *kc = NULL;
	struct cleanup_stats st;
	char err[512] = "", ns[64];
	int r;

	if (o->argc > 0) {
		log_error("cleanup: unexpected argument '%.64s'", o->argv[0]);
		return CZ_EXIT_ERROR;
	}
	leader_namespace(&ctx->cfg, ns, sizeof(ns));
	r = fleet_fetch_open(ctx->cfg.kubernetes.kubeconfig, &kc, err, sizeof(err));
	if (r < 0) {
		log_error_errno(r, "Failed to reach the API server: %s", err);
		return CZ_EXIT_ERROR;
	}
	r = cleanup_run(kc, ctx->cfg.remediation.lease_namespace, ns, o->keep_cordons, &st, err,
			sizeof(err));
	if (r == 0)
		r = cleanup_handoffs(kc, ctx->cfg.remediation.medik8s_lease_namespace,
				     ctx->cfg.remediation.kured_daemonset, &st, err, sizeof(err));
	fleet_fetch_close(kc);
	if (r < 0) {
		log_error_errno(r, "Failed to clean up: %s", *err ? err : "(no reason given)");
		return CZ_EXIT_ERROR;
	}
	printf("cleanup: %zu nodes: %zu conditions, %zu annotations/taints removed, %zu "
	       "uncordoned; %zu Leases deleted (%s, %s); %zu hand-off locks released",
	       st.nodes, st.conditions, st.marks, st.uncordoned, st.leases,
	       ctx->cfg.remediation.lease_namespace, ns, st.locks);
	if (st.kept)
		printf("; %zu kept cordoned (--keep-cordons): %s", st.kept, st.kept_names);
	printf("\n");
	return CZ_EXIT_OK;
}

enum { OPT_KEEP_CORDONS = 256 };

int cmd_cleanup(int argc, char **argv, struct cmd_env *env)
{
	static const struct option options[] = {
		{ "keep-cordons", no_argument, NULL, OPT_KEEP_CORDONS },
		CMD_COMMON_OPTIONS,
	};
	struct cleanup_opts o = { 0 };
	int r;

	while ((r = cmd_getopt(env, argc, argv, CMD_COMMON_SHORT, options)) > 0)
		if (r == OPT_KEEP_CORDONS)
			o.keep_cordons = true;
	r = cmd_args(env, r, argc, argv, cmd_cleanup_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return cleanup_main(&env->ctx, &o);
}
