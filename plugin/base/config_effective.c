// SPDX-License-Identifier: MIT
/* The effective config: defaults, file, command-line overrides (config.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/config.h"
#include "base/util.h"

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
		r = config_load_file(path, ret, errs, errs_size);
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
	return r;
}
