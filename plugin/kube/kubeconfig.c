/* SPDX-License-Identifier: MIT */
/*
 * kubeconfig and in-cluster configuration. The kubeconfig format is client-go's
 * (k8s.io/client-go/tools/clientcmd/api/v1/types.go): clusters[], users[] and contexts[] are
 * lists of {name, cluster|user|context} and current-context picks one context.
 */
#include <errno.h>
#include <fcntl.h>
#include <yaml.h>

#include "kube/kubeconfig.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "base/kjson.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* A bad kubeconfig: one line naming what is wrong, and -EINVAL. */
#define fail(...) log_error_errno(EINVAL, __VA_ARGS__)

int base64_decode(const char *in, size_t len, unsigned char **ret, size_t *ret_len)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	_cleanup_free_ unsigned char *out = malloc(len / 4 * 3 + 4);
	uint32_t acc = 0;
	size_t n = 0, bits = 0, pad = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		const char *p;

		if (in[i] == ' ' || in[i] == '\n' || in[i] == '\r' || in[i] == '\t')
			continue;
		if (in[i] == '=') {
			pad++;
			continue;
		}
		p = in[i] ? strchr(tbl, in[i]) : NULL;
		if (!p || pad)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(p - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2 || bits >= 6)
		return -EINVAL;
	out[n] = '\0';
	*ret_len = n;
	*ret = TAKE_PTR(out);
	return 0;
}

/* ---- libyaml document helpers -------------------------------------------------------------- */

static const char *scalar(yaml_document_t *d, yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = scalar(d, yaml_document_get_node(d, p->key));

		if (k && streq(k, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

static const char *map_str(yaml_document_t *d, yaml_node_t *m, const char *key)
{
	return scalar(d, map_get(d, m, key));
}

/* In a list of {name: N, <field>: {...}} return the <field> mapping of the entry named @name. */
static yaml_node_t *named(yaml_document_t *d, yaml_node_t *root, const char *list,
			  const char *field, const char *name)
{
	yaml_node_t *seq = map_get(d, root, list);

	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top;
	     i++) {
		yaml_node_t *e = yaml_document_get_node(d, *i);
		const char *n = map_str(d, e, "name");

		if (n && streq(n, name))
			return map_get(d, e, field);
	}
	return NULL;
}

/* Nesting depth check with the event parser before building a document (bounds the loader). */
static int check_depth(const char *text, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, r = 0;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (;;) {
		if (!yaml_parser_parse(&p, &ev)) {
			r = fail("kubeconfig: YAML error at line %zu: %s",
				 p.problem_mark.line + 1, p.problem ? p.problem : "?");
			break;
		}
		if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
			depth++;
		else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
			depth--;
		if (depth > KUBECONFIG_MAX_DEPTH) {
			r = log_error_errno(E2BIG, "kubeconfig: nested deeper than %d",
					    KUBECONFIG_MAX_DEPTH);
		}
		bool end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (end || r < 0)
			break;
	}
	yaml_parser_delete(&p);
	return r;
}

/* ---- building the result ------------------------------------------------------------------- */

static int dup_path(const char *dir, const char *v, char **ret)
{
	if (!v || !*v)
		return 0;
	if (v[0] == '/' || !dir || !*dir)
		*ret = strdup(v);
	else if (asprintf(ret, "%s/%s", dir, v) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

static int dup_b64(const char *v, unsigned char **ret, size_t *ret_len, const char *what)
{
	int r;

	if (!v || !*v)
		return 0;
	r = base64_decode(v, strlen(v), ret, ret_len);
	if (r == -EINVAL)
		return fail("kubeconfig: %s is not valid base64", what);
	return r;
}

static int parse_exec(yaml_document_t *d, yaml_node_t *ex, struct kube_exec *e)
{
	const char *cmd = map_str(d, ex, "command"), *api = map_str(d, ex, "apiVersion");
	yaml_node_t *args = map_get(d, ex, "args"), *env = map_get(d, ex, "env");
	size_t n = 0;

	if (!cmd || !*cmd)
		return fail("kubeconfig: user.exec.command is missing");
	if (api && !streq(api, "client.authentication.k8s.io/v1") &&
	    !streq(api, "client.authentication.k8s.io/v1beta1"))
		return fail("kubeconfig: exec apiVersion '%.64s' is not supported",
			    api);
	e->command = strdup(cmd);
	e->api_version = strdup(api ? api : "client.authentication.k8s.io/v1");
	if (!e->command || !e->api_version)
		return -ENOMEM;
	if (args && args->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *i = args->data.sequence.items.start;
		     i < args->data.sequence.items.top; i++) {
			const char *a = scalar(d, yaml_document_get_node(d, *i));

			if (!a || n >= KUBECONFIG_MAX_ARGS)
				return fail("kubeconfig: bad or too many exec args");
			if (!(e->args[n++] = strdup(a)))
				return -ENOMEM;
		}
	n = 0;
	if (env && env->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *i = env->data.sequence.items.start;
		     i < env->data.sequence.items.top; i++) {
			yaml_node_t *kv = yaml_document_get_node(d, *i);
			const char *k = map_str(d, kv, "name"), *v = map_str(d, kv, "value");

			if (!k || !v || !*k || strchr(k, '=') || n >= KUBECONFIG_MAX_ARGS)
				return fail("kubeconfig: bad exec env entry");
			if (asprintf(&e->env[n++], "%s=%s", k, v) < 0) {
				e->env[n - 1] = NULL;
				return -ENOMEM;
			}
		}
	return 0;
}

static int parse_user(yaml_document_t *d, yaml_node_t *u, const char *dir, struct kube_auth *a)
{
	const char *tok = map_str(d, u, "token");
	yaml_node_t *ex = map_get(d, u, "exec"), *tn = map_get(d, u, "token");
	int r;

	if (map_get(d, u, "auth-provider"))
		return fail("kubeconfig: auth-provider is not supported (use exec)");
	/* the length libyaml decoded, not strlen(): a "\0" inside must not cut the token */
	if (tok && *tok && !kube_token_ok(tok, tn->data.scalar.length))
		return fail("kubeconfig: the user's token contains control characters (a CR or LF "
			    "would start a header of its own): refused");
	if (tok && *tok && !(a->token = strdup(tok)))
		return -ENOMEM;
	r = dup_path(dir, map_str(d, u, "tokenFile"), &a->token_file);
	r = r ?: dup_path(dir, map_str(d, u, "client-certificate"), &a->cert_file);
	r = r ?: dup_path(dir, map_str(d, u, "client-key"), &a->key_file);
	r = r ?: dup_b64(map_str(d, u, "client-certificate-data"), &a->cert_data,
			 &a->cert_data_len, "client-certificate-data");
	r = r ?: dup_b64(map_str(d, u, "client-key-data"), &a->key_data, &a->key_data_len,
			 "client-key-data");
	if (r < 0)
		return r;
	if ((a->cert_file || a->cert_data) != (a->key_file || a->key_data))
		return fail("kubeconfig: client certificate without key (or key "
					   "without certificate)");
	if (ex) {
		a->has_exec = true;
		r = parse_exec(d, ex, &a->exec);
	}
	return r;
}

static int parse_cluster(yaml_document_t *d, yaml_node_t *c, const char *dir, struct kube_auth *a)
{
	const char *server = map_str(d, c, "server"), *ins;
	size_t n;
	int r;

	if (!server || !*server)
		return fail("kubeconfig: cluster has no server");
	if (!startswith(server, "https://"))
		return fail("kubeconfig: server '%.128s' is not https:// (TLS is "
					   "required)", server);
	n = strlen(server);
	while (n > 8 && server[n - 1] == '/')
		n--;
	if (!(a->server = strndup(server, n)))
		return -ENOMEM;
	ins = map_str(d, c, "insecure-skip-tls-verify");
	a->insecure = ins && streq(ins, "true");
	r = dup_path(dir, map_str(d, c, "certificate-authority"), &a->ca_file);
	return r ?: dup_b64(map_str(d, c, "certificate-authority-data"), &a->ca_data,
			    &a->ca_data_len, "certificate-authority-data");
}

static int parse_doc(yaml_document_t *d, const char *dir, struct kube_auth *a)
{
	yaml_node_t *root = yaml_document_get_root_node(d), *ctx, *cluster, *user;
	const char *cur, *cname, *uname;
	int r;

	if (!root || root->type != YAML_MAPPING_NODE)
		return fail("kubeconfig: not a mapping");
	cur = map_str(d, root, "current-context");
	if (!cur || !*cur)
		return fail("kubeconfig: no current-context");
	ctx = named(d, root, "contexts", "context", cur);
	if (!ctx)
		return fail("kubeconfig: context '%.64s' not found", cur);
	cname = map_str(d, ctx, "cluster");
	uname = map_str(d, ctx, "user");
	cluster = cname ? named(d, root, "clusters", "cluster", cname) : NULL;
	if (!cluster)
		return fail("kubeconfig: cluster '%.64s' of context '%.64s' not found",
			    cname ? cname : "", cur);
	user = uname && *uname ? named(d, root, "users", "user", uname) : NULL;
	if (uname && *uname && !user)
		return fail("kubeconfig: user '%.64s' of context '%.64s' not found",
			    uname, cur);
	r = parse_cluster(d, cluster, dir, a);
	if (r == 0 && user)
		r = parse_user(d, user, dir, a);
	return r;
}

int kubeconfig_parse(const char *text, size_t len, const char *dir, struct kube_auth *ret)
{
	struct kube_auth a = { 0 };
	yaml_parser_t p;
	yaml_document_t d;
	int r;

	if (len > KUBECONFIG_MAX_BYTES) {
		return log_error_errno(EFBIG, "kubeconfig: larger than %d bytes",
				       KUBECONFIG_MAX_BYTES);
	}
	r = check_depth(text, len);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &d)) {
		r = fail("kubeconfig: YAML error at line %zu: %s",
			 p.problem_mark.line + 1, p.problem ? p.problem : "?");
		yaml_parser_delete(&p);
		return r;
	}
	r = parse_doc(&d, dir, &a);
	yaml_document_delete(&d);
	yaml_parser_delete(&p);
	if (r < 0) {
		kubeconfig_free(&a);
		return r;
	}
	*ret = a;
	return 0;
}

int kubeconfig_load(const char *path, struct kube_auth *ret)
{
	_cleanup_free_ char *text = NULL, *dir = strdup(path);
	char *slash;
	size_t len = 0;
	int r;

	if (!dir)
		return -ENOMEM;
	/* bounded, and judged by its size first: a 100 MB file is refused without being read
	 * (-EFBIG, not the -E2BIG that printed as "Argument list too long") */
	r = fileio_read_alloc_at(AT_FDCWD, path, 0, KUBECONFIG_MAX_BYTES, &text, &len);
	if (r == -EFBIG)
		return log_error_errno(r, "Failed to read kubeconfig '%s': larger than %d bytes",
				       path, KUBECONFIG_MAX_BYTES);
	if (r < 0)
		return log_error_errno(r, "Failed to read kubeconfig '%s': %m", path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return kubeconfig_parse(text, len, slash ? dir : NULL, ret);
}

int kubeconfig_incluster(const char *sa_dir, struct kube_auth *ret)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kube_auth a = { 0 };
	uint64_t p;

	if (!sa_dir)
		sa_dir = SA_DIR;
	if (!host || !*host || !port || !*port) {
		return log_error_errno(ENOENT, "Not in a cluster: KUBERNETES_SERVICE_HOST/PORT "
				       "unset and no kubeconfig");
	}
	if (parse_u64(port, &p) < 0 || p == 0 || p > 65535 || strpbrk(host, "/[]@ ")) {
		return fail("Bad KUBERNETES_SERVICE_HOST/PORT '%.64s' '%.16s'", host, port);
	}
	/* An IPv6 literal needs brackets in a URL (client-go: net.JoinHostPort). */
	if (asprintf(&a.server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
		     port) < 0 ||
	    asprintf(&a.token_file, "%s/token", sa_dir) < 0 ||
	    asprintf(&a.ca_file, "%s/ca.crt", sa_dir) < 0) {
		kubeconfig_free(&a);
		return -ENOMEM;
	}
	*ret = a;
	return 0;
}

void kubeconfig_free(struct kube_auth *a)
{
	if (!a)
		return;
	free(a->server);
	free(a->ca_file);
	free(a->ca_data);
	free(a->token);
	free(a->token_file);
	free(a->cert_file);
	free(a->key_file);
	free(a->cert_data);
	free(a->key_data);
	free(a->exec.api_version);
	free(a->exec.command);
	for (size_t i = 0; a->exec.args[i]; i++)
		free(a->exec.args[i]);
	for (size_t i = 0; a->exec.env[i]; i++)
		free(a->exec.env[i]);
	*a = (struct kube_auth){ 0 };
}
