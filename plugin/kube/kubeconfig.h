/* SPDX-License-Identifier: MIT */
#ifndef CZ_KUBECONFIG_H
#define CZ_KUBECONFIG_H

/*
 * Where the API server is and how to authenticate to it: a kubeconfig file (parsed with libyaml:
 * current context, its cluster and user) or the in-cluster service account. Parsing is pure (text
 * in, struct out); reading files is the caller's business, except kubeconfig_load() and
 * kubeconfig_incluster(), the two I/O edges.
 */

#include <stdbool.h>
#include <stddef.h>

#define KUBECONFIG_MAX_BYTES (1 << 20)	/* a kubeconfig bigger than 1 MiB is refused */
#define KUBECONFIG_MAX_DEPTH 32
#define KUBECONFIG_MAX_ARGS 32

/* An exec credential plugin (client.authentication.k8s.io/v1 or v1beta1), e.g. aws eks get-token.
 * */
struct kube_exec {
	char *api_version;
	char *command;
	char *args[KUBECONFIG_MAX_ARGS + 1];	/* NULL-terminated */
	char *env[KUBECONFIG_MAX_ARGS + 1];	/* "NAME=value", NULL-terminated */
};

struct kube_auth {
	char *server;			/* https://host:port (no trailing slash) */
	char *ca_file;			/* PEM file, or NULL */
	unsigned char *ca_data; /* PEM bytes (decoded certificate-authority-data), or NULL */
	size_t ca_data_len;
	bool insecure; /* insecure-skip-tls-verify: true (the kubeconfig said so) */
	char *token;			/* static bearer token, or NULL */
	char *token_file;		/* re-read as it rotates (service accounts, tokenFile) */
	char *cert_file, *key_file;	/* client certificate and key files, or NULL */
	unsigned char *cert_data, *key_data; /* ... or PEM bytes */
	size_t cert_data_len, key_data_len;
	bool has_exec;
	struct kube_exec exec;
};

/*
 * kubeconfig_parse - parse kubeconfig @text (@len bytes) and resolve its current context. Relative
 * file paths are resolved against @dir (the kubeconfig's directory; may be NULL). On success fills
 * *@ret (caller frees with kubeconfig_free) and returns 0. On failure returns -EINVAL (bad YAML,
 * missing or unknown context/cluster/user, bad base64, non-https server without TLS...),
 * -EFBIG (larger than KUBECONFIG_MAX_BYTES), -E2BIG (too deep) or -ENOMEM, logs a one-line reason
 * (log.h) and leaves *@ret
 * untouched. A static token with control characters is refused (-EINVAL).
 */
int kubeconfig_parse(const char *text, size_t len, const char *dir, struct kube_auth *ret);

/*
 * kubeconfig_load - read @path (bounded: a file larger than KUBECONFIG_MAX_BYTES is -EFBIG from
 * its size, unread) and kubeconfig_parse() it. Same returns, plus -errno from reading.
 */
int kubeconfig_load(const char *path, struct kube_auth *ret);

/*
 * kubeconfig_incluster - the in-cluster config: server from $KUBERNETES_SERVICE_HOST and
 * $KUBERNETES_SERVICE_PORT (an IPv6 host is bracketed), token file and CA file from @sa_dir
 * (NULL = /var/run/secrets/kubernetes.io/serviceaccount). Returns 0, or -ENOENT when the
 * environment variables are missing (not in a cluster), logged; *@ret untouched on failure.
 */
int kubeconfig_incluster(const char *sa_dir, struct kube_auth *ret);

/* kubeconfig_free - free everything *@a owns and zero it. Accepts NULL and zeroed structs. */
void kubeconfig_free(struct kube_auth *a);

/*
 * base64_decode - decode standard base64 (padding optional, ASCII white space ignored) from @in
 * (@len bytes). Returns 0 and a malloc()ed buffer in *@ret (NUL-terminated for convenience,
 * *@ret_len bytes without the NUL), or -EINVAL / -ENOMEM; outputs untouched on failure.
 */
int base64_decode(const char *in, size_t len, unsigned char **ret, size_t *ret_len);

#endif
