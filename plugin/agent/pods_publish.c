/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "agent/pods_publish.h"
#include "memcg/pods.h"
#include "memcg/units.h"
#include "cluster/kube.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"

static int publish(struct pods_publisher *p, const struct cz_config *cfg, uint64_t now_ms)
{
	_cleanup_free_ char *buf = NULL;
	struct kube_response resp = { 0 };
	char path[512];
	json_object *items;
	size_t off, n;
	int r;

	struct kube_client *kc = p->shared;

	if (!kc && p->no_client)
		return -ENOTCONN;
	if (!kc && !p->kc) {
		/* once: a kubeconfig or in-cluster setup that fails does not heal while we run
		 * (kube_client_from_config logs why) */
		r = kube_client_from_config(cfg->kubernetes.kubeconfig, cfg->kubernetes.timeout_ms,
					    &p->kc);
		if (r < 0) {
			p->no_client = true;
			log_info("pods not published: no API server");
			return r;
		}
	}
	if (!kc)	/* one client per agent where it can: credentials (exec plugins) once */
		kc = p->kc;
	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 cfg->kubernetes.node_name);
	r = kube_request(kc, "GET", path, NULL, NULL, 0, &resp);
	if (r < 0 || resp.status != 200) {
		if (r >= 0)
			r = -EIO;
		if (p->last_rc != r)
			log_warning("pods not published: GET %s: %s", path,
				    resp.message[0] ? resp.message : strerror(-r));
		kube_response_clear(&resp);
		return r;
	}
	buf = malloc(PODS_FILE_MAX);
	if (!buf) {
		kube_response_clear(&resp);
		return -ENOMEM;
	}
	off = (size_t)snprintf(buf, PODS_FILE_MAX, "cpuzombie-pods 1\nt %llu\n",
			       (unsigned long long)now_ms);
	items = kube_get(resp.body, "items");
	n = items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *it = json_object_array_get_idx(items, i);

		/* a pod whose fields are not valid names is left out, never published */
		off += pods_format_line(kube_get_str(it, "metadata.uid", NULL),
					kube_get_str(it, "metadata.namespace", NULL),
					kube_get_str(it, "metadata.name", NULL), buf + off,
					PODS_FILE_MAX - off);
	}
	kube_response_clear(&resp);
	r = fileio_write_atomic(cfg->paths.run, PODS_FILE,
				&(struct iovec){ .iov_base = buf, .iov_len = off }, 1, 0644, 0);
	if (r < 0)
		return log_error_errno(r, "Failed to write '%s/%s': %m", cfg->paths.run, PODS_FILE);
	return 0;
}

int pods_publish_due(struct pods_publisher *p, const struct cz_config *cfg, uint64_t mono_ms,
		     uint64_t now_ms)
{
	int r;

	if (!cfg->kubernetes.node_name[0] || (p->next_ms && mono_ms < p->next_ms))
		return 0;
	p->next_ms = mono_ms + UNITS_PUBLISH_MS;
	r = publish(p, cfg, now_ms);
	p->last_rc = r;
	return r < 0 ? r : 1;
}

void pods_publisher_clear(struct pods_publisher *p)
{
	kube_client_free(p->kc);
	p->kc = NULL;
}
