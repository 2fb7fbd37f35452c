// SPDX-License-Identifier: MIT
/* The effective config: defaults, file, command-line overrides (config.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/config.h"
#include "base/fileio.h"
#include "base/util.h"

#define SA_NAMESPACE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

static int set(char *dst, size_t size, const char *src, const char *what, char *errs,
	       size_t errs_size)
{
	if (!src)
		return 0;
	if (!*src || strlen(src) >= size) {
		snprintf(errs, errs_size, "%s: empty or too long", what);
		return -EDOM;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* The first word of @text when it is a valid namespace name, copied into @dst. */
static bool take_namespace(char *dst, size_t size, const char *text)
{
	size_t n = text ? strcspn(text, " \t\r\n") : 0;

	if (n == 0 || n >= size || n > 63)
		return false;
	memcpy(dst, text, n);
	dst[n] = '\0';
	if (valid_name(dst, 63))
		return true;
	dst[0] = '\0';
	return false;
}

/*
 * remediation.lease_namespace "" = this pod's namespace: $POD_NAMESPACE (the chart's downward
 * API), else the service account's namespace file ($CZ_SERVICEACCOUNT_DIR/namespace, else the
 * in-cluster one). Unknown: where Leases are written (cordon, drain), a one-line error (the
 * caller exits 2); off or dry-run (`cpuzombie fleet` or `cleanup` run by a person, an agent whose
 * reclaim runs in dry-run: neither takes a slot), "cpuzombie", the chart's release namespace in
 * docs/install.md, as remediation.leader_namespace falls back.
 */
static int lease_namespace_of_pod(struct cz_config *cfg, char *errs, size_t errs_size)
{
	char *ns = cfg->remediation.lease_namespace, path[FILEIO_PATH_MAX], text[128];
	const char *dir = getenv("CZ_SERVICEACCOUNT_DIR");
	size_t size = sizeof(cfg->remediation.lease_namespace);

	if (*ns || take_namespace(ns, size, getenv("POD_NAMESPACE")))
		return 0;
	snprintf(path, sizeof(path), "%s", SA_NAMESPACE);
	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/namespace", dir);
	if (fileio_read_at(AT_FDCWD, path, FILEIO_REGULAR, text, sizeof(text)) > 0 &&
	    take_namespace(ns, size, text))
		return 0;
	if (cfg->remediation.mode == CZ_REMEDIATE_OFF ||
	    cfg->remediation.mode == CZ_REMEDIATE_DRY_RUN) {
		snprintf(ns, size, "cpuzombie");
		return 0;
	}
	snprintf(errs, errs_size, "remediation.lease_namespace: unset, and this pod's namespace is "
		 "unknown (no $POD_NAMESPACE, no %.200s): set it to the namespace of cpuzombie's "
		 "Leases (the chart's release namespace)\n", path);
	return -EINVAL;
}

int config_load_effective(const struct cz_overrides *ov, struct cz_config *ret,
			  const char **ret_path, char *errs, size_t errs_size)
{
	const char *path = ov->config;
	struct stat st;
	int r;

	if (errs_size)
		errs[0] = '\0';
	*ret_path = NULL;
	config_defaults(ret);
	if (!path && stat(CZ_DEFAULT_CONFIG_PATH, &st) == 0)
		path = CZ_DEFAULT_CONFIG_PATH;
	if (path) {
		r = config_load_file_state(path, ov->state, ret, errs, errs_size);
		if (r < 0)
			return r;
		*ret_path = path;
	}
	r = set(ret->paths.proc, sizeof(ret->paths.proc), ov->proc, "--proc-root", errs, errs_size);
	r = r ?: set(ret->paths.sys, sizeof(ret->paths.sys), ov->sys, "--sys-root", errs,
		     errs_size);
	r = r ?: set(ret->paths.state, sizeof(ret->paths.state), ov->state, "--state-dir", errs,
		     errs_size);
	r = r ?: set(ret->paths.run, sizeof(ret->paths.run), ov->run, "--run-dir", errs, errs_size);
	r = r ?: set(ret->kubernetes.kubeconfig, sizeof(ret->kubernetes.kubeconfig), ov->kubeconfig,
		     "--kubeconfig", errs, errs_size);
	if (r == 0 && ov->node) {
		if (!valid_name(ov->node, sizeof(ret->kubernetes.node_name) - 1)) {
			snprintf(errs, errs_size, "--node-name: not a valid node name: '%.64s'",
				 ov->node);
			return -EDOM;
		}
		r = set(ret->kubernetes.node_name, sizeof(ret->kubernetes.node_name), ov->node,
			"--node-name", errs, errs_size);
	}
	return r ?: lease_namespace_of_pod(ret, errs, errs_size);
}
