/* SPDX-License-Identifier: MIT */
/* Kubernetes API client: see kube.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

#include "cluster/curl_dl.h"
#include "cluster/kube.h"
#include "base/textsafe.h"
#include "base/util.h"

#define EXEC_MAX_OUTPUT (64u << 10)
#define TOKEN_MAX 16384

struct kube_client {
	const struct curl_dl *c;
	CURL *h;
	struct kube_auth auth;
	uint64_t timeout_ms;
	unsigned max_attempts;
	uint64_t backoff_base_ms, backoff_cap_ms;
	FILE *log;
	/* exec credential cache */
	char *exec_token;
	unsigned char *exec_cert, *exec_key;
	size_t exec_cert_len, exec_key_len;
	uint64_t exec_expiry_ms;	/* 0 = no expiry given */
	unsigned seed;
};

struct buf {
	char *p;
	size_t n, cap;
	bool too_big;
};

void kube_log(struct kube_client *kc, const char *fmt, ...)
{
	va_list ap;

	if (!kc || !kc->log)
		return;
	fprintf(kc->log, "cpuzombie: kube: ");
	va_start(ap, fmt);
	vfprintf(kc->log, fmt, ap);
	va_end(ap);
	fputc('\n', kc->log);
	fflush(kc->log);
}

void kube_response_clear(struct kube_response *r)
{
	if (!r)
		return;
	if (r->body)
		json_object_put(r->body);
	*r = (struct kube_response){ 0 };
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct buf *b = userdata;
	size_t n = size * nmemb;

	if (b->n + n > KUBE_MAX_BODY) {
		b->too_big = true;
		return 0;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

int kube_client_new(struct kube_auth *auth, uint64_t timeout_ms, unsigned max_attempts,
		    struct kube_client **ret, char *err, size_t err_size)
{
	const char *why = NULL;
	const struct curl_dl *c = curl_dl_load(&why);
	struct kube_client *kc;

	if (!c) {
		snprintf(err, err_size, "%s", why);
		return -ELIBACC;
	}
	kc = calloc(1, sizeof(*kc));
	if (!kc || !(kc->h = c->easy_init())) {
		free(kc);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	kc->c = c;
	kc->auth = *auth;
	*auth = (struct kube_auth){ 0 };
	kc->timeout_ms = timeout_ms ? timeout_ms : 10000;
	kc->max_attempts = max_attempts ? max_attempts : 1;
	kc->backoff_base_ms = 200;
	kc->backoff_cap_ms = 5000;
	kc->log = stderr;
	kc->seed = (unsigned)(now_monotonic_ms() ^ (uint64_t)getpid() << 16);
	if (kc->auth.insecure)
		kube_log(kc, "WARNING: insecure-skip-tls-verify is set in the kubeconfig: the API "
			     "server's certificate is NOT verified");
	*ret = kc;
	return 0;
}

int kube_client_from_config(const char *kubeconfig_path, uint64_t timeout_ms,
			    struct kube_client **ret, char *err, size_t err_size)
{
	struct kube_auth a = { 0 };
	int r;

	if (kubeconfig_path && *kubeconfig_path)
		r = kubeconfig_load(kubeconfig_path, &a, err, err_size);
	else
		r = kubeconfig_incluster(getenv("CZ_SERVICEACCOUNT_DIR"), &a, err, err_size);
	if (r < 0)
		return r;
	r = kube_client_new(&a, timeout_ms, 5, ret, err, err_size);
	kubeconfig_free(&a);
	return r;
}

void kube_client_free(struct kube_client *kc)
{
	if (!kc)
		return;
	kc->c->easy_cleanup(kc->h);
	kubeconfig_free(&kc->auth);
	free(kc->exec_token);
	free(kc->exec_cert);
	free(kc->exec_key);
	free(kc);
}

void kube_client_set_log(struct kube_client *kc, FILE *log)
{
	kc->log = log;
}

void kube_client_set_backoff(struct kube_client *kc, uint64_t base_ms, uint64_t cap_ms)
{
	kc->backoff_base_ms = base_ms;
	kc->backoff_cap_ms = cap_ms;
}

/* ---- credentials --------------------------------------------------------------------------- */

static int read_token_file(const char *path, char **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char buf[TOKEN_MAX + 1];
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	if ((size_t)n > TOKEN_MAX)
		return -E2BIG;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
		n--;
	if (n == 0 || memchr(buf, '\n', (size_t)n))
		return -EINVAL;
	*ret = strndup(buf, (size_t)n);
	return *ret ? 0 : -ENOMEM;
}

/* Run the exec plugin with a deadline; its stdout (bounded) goes to *@ret. Never leaves a child. */
static int exec_run(struct kube_client *kc, char **ret)
{
	const struct kube_exec *e = &kc->auth.exec;
	int p[2], status;
	struct buf out = { 0 };
	uint64_t deadline = now_monotonic_ms() + kc->timeout_ms;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char info[256];
		char *argv[KUBECONFIG_MAX_ARGS + 2] = { e->command };
		int devnull = open("/dev/null", O_RDONLY);

		for (size_t i = 0; e->args[i]; i++)
			argv[i + 1] = e->args[i];
		snprintf(info, sizeof(info), "{\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
			 "\"spec\":{\"interactive\":false}}", e->api_version);
		setenv("KUBERNETES_EXEC_INFO", info, 1);
		for (size_t i = 0; e->env[i]; i++)
			putenv(e->env[i]);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(p[1], 1);
		execvp(e->command, argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		uint64_t now = now_monotonic_ms();
		char chunk[4096];
		ssize_t n;

		if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) == 0) {
			kill(pid, SIGKILL);
			break;
		}
		n = read(p[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || on_data(chunk, 1, (size_t)n, &out) != (size_t)n || out.n > EXEC_MAX_OUTPUT)
			break;
	}
	close(p[0]);
	if (now_monotonic_ms() >= deadline || out.n > EXEC_MAX_OUTPUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !out.p) {
		free(out.p);
		return -EACCES;
	}
	*ret = out.p;
	return 0;
}

static int exec_credential(struct kube_client *kc)
{
	_cleanup_free_ char *text = NULL;
	json_object *o;
	const char *tok, *exp, *cert, *key;
	uint64_t t;
	int r;

	if (kc->exec_token || kc->exec_cert) {
		if (!kc->exec_expiry_ms || now_realtime_ms() + 10000 < kc->exec_expiry_ms)
			return 0;
	}
	free(kc->exec_token);
	free(kc->exec_cert);
	free(kc->exec_key);
	kc->exec_token = NULL;
	kc->exec_cert = kc->exec_key = NULL;
	r = exec_run(kc, &text);
	if (r < 0) {
		kube_log(kc, "exec credential plugin '%s' failed", kc->auth.exec.command);
		return r;
	}
	o = json_tokener_parse(text);
	tok = kube_get_str(o, "status.token", NULL);
	exp = kube_get_str(o, "status.expirationTimestamp", NULL);
	cert = kube_get_str(o, "status.clientCertificateData", NULL);
	key = kube_get_str(o, "status.clientKeyData", NULL);
	if (!o || !streq(kube_get_str(o, "kind", ""), "ExecCredential") || (!tok && !(cert && key))) {
		kube_log(kc, "exec credential plugin '%s' printed no ExecCredential with a token or "
			     "certificate", kc->auth.exec.command);
		json_object_put(o);
		return -EACCES;
	}
	kc->exec_token = tok ? strdup(tok) : NULL;
	if (cert && key) {
		kc->exec_cert = (unsigned char *)strdup(cert);
		kc->exec_key = (unsigned char *)strdup(key);
		kc->exec_cert_len = strlen(cert);
		kc->exec_key_len = strlen(key);
	}
	kc->exec_expiry_ms = exp && kube_parse_time(exp, &t) == 0 ? t : 0;
	json_object_put(o);
	return 0;
}

static void exec_invalidate(struct kube_client *kc)
{
	kc->exec_expiry_ms = 1;	/* expired: the next request runs the plugin again */
}

/* ---- one attempt --------------------------------------------------------------------------- */

static void set_blob(struct kube_client *kc, CURLoption opt, const void *data, size_t len)
{
	struct curl_blob b = { .data = (void *)data, .len = len, .flags = CURL_BLOB_COPY };

	kc->c->easy_setopt(kc->h, opt, &b);
}

static int setup_tls(struct kube_client *kc)
{
	const struct curl_dl *c = kc->c;
	const struct kube_auth *a = &kc->auth;

	c->easy_setopt(kc->h, CURLOPT_SSL_VERIFYPEER, a->insecure ? 0L : 1L);
	c->easy_setopt(kc->h, CURLOPT_SSL_VERIFYHOST, a->insecure ? 0L : 2L);
	if (a->ca_file)
		c->easy_setopt(kc->h, CURLOPT_CAINFO, a->ca_file);
	else if (a->ca_data)
		set_blob(kc, CURLOPT_CAINFO_BLOB, a->ca_data, a->ca_data_len);
	if (kc->exec_cert) {
		set_blob(kc, CURLOPT_SSLCERT_BLOB, kc->exec_cert, kc->exec_cert_len);
		set_blob(kc, CURLOPT_SSLKEY_BLOB, kc->exec_key, kc->exec_key_len);
	} else if (a->cert_file || a->cert_data) {
		if (a->cert_file)
			c->easy_setopt(kc->h, CURLOPT_SSLCERT, a->cert_file);
		else
			set_blob(kc, CURLOPT_SSLCERT_BLOB, a->cert_data, a->cert_data_len);
		if (a->key_file)
			c->easy_setopt(kc->h, CURLOPT_SSLKEY, a->key_file);
		else
			set_blob(kc, CURLOPT_SSLKEY_BLOB, a->key_data, a->key_data_len);
	}
	return 0;
}

static int auth_header(struct kube_client *kc, char **ret)
{
	_cleanup_free_ char *tok = NULL;
	int r;

	if (kc->auth.has_exec) {
		r = exec_credential(kc);
		if (r < 0)
			return r;
		if (kc->exec_token)
			tok = strdup(kc->exec_token);
	} else if (kc->auth.token_file) {
		r = read_token_file(kc->auth.token_file, &tok);	/* rotates: read every time */
		if (r < 0) {
			kube_log(kc, "Failed to read token file '%s': %s", kc->auth.token_file,
				 strerror(-r));
			return -EACCES;
		}
	} else if (kc->auth.token) {
		tok = strdup(kc->auth.token);
	}
	if (!tok) {
		*ret = NULL;
		return 0;
	}
	return asprintf(ret, "Authorization: Bearer %s", tok) < 0 ? -ENOMEM : 0;
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM: return -EPROTO;
	default: return -EIO;
	}
}

static void fill_response(struct buf *b, struct kube_response *resp)
{
	json_tokener *t;

	if (!b->p)
		return;
	t = json_tokener_new_ex(KUBE_JSON_DEPTH);
	if (!t)
		return;
	resp->body = json_tokener_parse_ex(t, b->p, (int)b->n);
	if (json_tokener_get_error(t) != json_tokener_success && resp->body) {
		json_object_put(resp->body);
		resp->body = NULL;
	}
	json_tokener_free(t);
	if (streq(kube_get_str(resp->body, "kind", ""), "Status"))
		snprintf(resp->message, sizeof(resp->message), "%s",
			 kube_get_str(resp->body, "message", ""));
	/* the server's words end up inside our one-line logs and summaries: no line breaks, no
	 * terminal escapes */
	for (char *c = resp->message; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
}

static int attempt(struct kube_client *kc, const char *method, const char *url,
		   const char *ctype, const char *body, struct kube_response *resp)
{
	const struct curl_dl *c = kc->c;
	_cleanup_free_ char *authz = NULL, *ct = NULL;
	struct curl_slist *hdr = NULL;
	struct buf b = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode cc;
	int r;

	r = auth_header(kc, &authz);
	if (r < 0) {
		snprintf(resp->message, sizeof(resp->message), "no credential");
		return r;
	}
	c->easy_reset(kc->h);
	c->easy_setopt(kc->h, CURLOPT_URL, url);
	c->easy_setopt(kc->h, CURLOPT_PROTOCOLS_STR, "https");
	c->easy_setopt(kc->h, CURLOPT_NOSIGNAL, 1L);
	c->easy_setopt(kc->h, CURLOPT_TIMEOUT_MS, (long)kc->timeout_ms);
	c->easy_setopt(kc->h, CURLOPT_CONNECTTIMEOUT_MS, (long)kc->timeout_ms);
	c->easy_setopt(kc->h, CURLOPT_CUSTOMREQUEST, method);
	c->easy_setopt(kc->h, CURLOPT_ERRORBUFFER, errbuf);
	c->easy_setopt(kc->h, CURLOPT_WRITEFUNCTION, on_data);
	c->easy_setopt(kc->h, CURLOPT_WRITEDATA, &b);
	c->easy_setopt(kc->h, CURLOPT_USERAGENT, "cpuzombie/" CZ_VERSION);
	if (body) {
		c->easy_setopt(kc->h, CURLOPT_POSTFIELDS, body);
		c->easy_setopt(kc->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	setup_tls(kc);
	hdr = c->slist_append(hdr, "Accept: application/json");
	if (authz)
		hdr = c->slist_append(hdr, authz);
	if (ctype && asprintf(&ct, "Content-Type: %s", ctype) >= 0)
		hdr = c->slist_append(hdr, ct);
	c->easy_setopt(kc->h, CURLOPT_HTTPHEADER, hdr);
	cc = c->easy_perform(kc->h);
	c->slist_free_all(hdr);
	if (cc != CURLE_OK) {
		snprintf(resp->message, sizeof(resp->message), "%s",
			 b.too_big ? "response body too large" : *errbuf ? errbuf :
			 c->easy_strerror(cc));
		free(b.p);
		return b.too_big ? -EFBIG : curl_errno(cc);
	}
	c->easy_getinfo(kc->h, CURLINFO_RESPONSE_CODE, &resp->status);
	fill_response(&b, resp);
	free(b.p);
	return 0;
}

static bool retryable(int r, long status, unsigned flags)
{
	if (r == -EACCES || r == -EFBIG || r == -ENOMEM || r == -EPROTO)
		return false;	/* retrying cannot help: credentials, size, TLS trust */
	if (r < 0)
		return true;
	return status >= 500 || (status == 429 && !(flags & KUBE_NO_RETRY_429));
}

int kube_request(struct kube_client *kc, const char *method, const char *path,
		 const char *content_type, const char *body, unsigned flags,
		 struct kube_response *resp)
{
	_cleanup_free_ char *url = NULL;
	bool reauth = kc->auth.has_exec;
	int r = -EIO;

	kube_response_clear(resp);
	if (asprintf(&url, "%s%s", kc->auth.server, path) < 0)
		return -ENOMEM;
	for (unsigned i = 1; i <= kc->max_attempts; i++) {
		uint64_t cap, sleep_ms;

		kube_response_clear(resp);
		resp->attempts = i;
		r = attempt(kc, method, url, content_type, body, resp);
		if (r == 0 && resp->status == 401 && reauth) {
			reauth = false;	/* the exec credential may have expired early: once more */
			exec_invalidate(kc);
			i--;
			continue;
		}
		if (!retryable(r, resp->status, flags) || i == kc->max_attempts)
			break;
		cap = kc->backoff_base_ms << (i - 1 < 16 ? i - 1 : 16);
		if (cap > kc->backoff_cap_ms)
			cap = kc->backoff_cap_ms;
		sleep_ms = cap ? (uint64_t)rand_r(&kc->seed) % (cap + 1) : 0;	/* full jitter */
		if (r < 0)
			kube_log(kc, "%s %s: %s, retry %u/%u in %llums", method, path, resp->message,
				 i, kc->max_attempts - 1, (unsigned long long)sleep_ms);
		else
			kube_log(kc, "%s %s: HTTP %ld%s%s, retry %u/%u in %llums", method, path,
				 resp->status, *resp->message ? ": " : "", resp->message, i,
				 kc->max_attempts - 1, (unsigned long long)sleep_ms);
		usleep((useconds_t)(sleep_ms * 1000));
	}
	return r;
}

int kube_json(struct kube_client *kc, const char *method, const char *path,
	      const char *content_type, json_object *body, unsigned flags,
	      struct kube_response *resp)
{
	const char *s = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;

	return kube_request(kc, method, path, content_type, s, flags, resp);
}

/* ---- helpers ------------------------------------------------------------------------------- */

json_object *kube_get(json_object *o, const char *dotted)
{
	char key[128];

	while (o && *dotted) {
		size_t n = strcspn(dotted, ".");

		if (n >= sizeof(key) || !json_object_is_type(o, json_type_object))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = '\0';
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		dotted += n + (dotted[n] == '.');
	}
	return o;
}

const char *kube_get_str(json_object *o, const char *dotted, const char *def)
{
	json_object *v = kube_get(o, dotted);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : def;
}

char *kube_time(uint64_t ms, bool micro, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf, size, "%s.%06uZ", base, (unsigned)(ms % 1000) * 1000);
	else
		snprintf(buf, size, "%sZ", base);
	return buf;
}

int kube_parse_time(const char *s, uint64_t *ret_ms)
{
	struct tm tm = { 0 };
	const char *end;
	uint64_t frac_ms = 0;
	time_t t;

	if (!s)
		return -EINVAL;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -EINVAL;
	if (*end == '.') {
		unsigned digits = 0;

		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 3)
				frac_ms = frac_ms * 10 + (uint64_t)(*end - '0');
		if (digits == 0)
			return -EINVAL;
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	if (!streq(end, "Z"))
		return -EINVAL;
	t = timegm(&tm);
	if (t < 0)
		return -EINVAL;
	*ret_ms = (uint64_t)t * 1000 + frac_ms;
	return 0;
}

int kube_post_event(struct kube_client *kc, const char *node_name, const char *node_uid,
		    const char *type, const char *reason, const char *message, uint64_t now_ms)
{
	_cleanup_(json_object_putp) json_object *ev = json_object_new_object();
	json_object *md = json_object_new_object(), *inv = json_object_new_object();
	json_object *src = json_object_new_object();
	struct kube_response resp = { 0 };
	char name[320], ts[40], msg[2048];
	int r;

	snprintf(name, sizeof(name), "%.200s.cz-%llx-%.40s", node_name,
		 (unsigned long long)now_ms, reason);
	for (char *p = name; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	kube_time(now_ms, false, ts, sizeof(ts));
	json_object_object_add(md, "name", json_object_new_string(name));
	json_object_object_add(md, "namespace", json_object_new_string("default"));
	json_object_object_add(ev, "metadata", md);
	json_object_object_add(inv, "kind", json_object_new_string("Node"));
	json_object_object_add(inv, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(inv, "name", json_object_new_string(node_name));
	if (node_uid)
		json_object_object_add(inv, "uid", json_object_new_string(node_uid));
	json_object_object_add(ev, "involvedObject", inv);
	json_object_object_add(ev, "reason", json_object_new_string(reason));
	json_object_object_add(ev, "message", json_object_new_string(
		textsafe(TEXTSAFE_TEXT, message, msg, sizeof(msg)))); /* kubectl prints it */
	json_object_object_add(ev, "type", json_object_new_string(type));
	json_object_object_add(src, "component", json_object_new_string("cpuzombie"));
	json_object_object_add(src, "host", json_object_new_string(node_name));
	json_object_object_add(ev, "source", src);
	json_object_object_add(ev, "firstTimestamp", json_object_new_string(ts));
	json_object_object_add(ev, "lastTimestamp", json_object_new_string(ts));
	json_object_object_add(ev, "count", json_object_new_int(1));
	r = kube_json(kc, "POST", "/api/v1/namespaces/default/events", "application/json", ev, 0,
		      &resp);
	if (r == 0 && resp.status != 201 && resp.status != 409) {	/* 409: a retry landed */
		kube_log(kc, "Failed to create event %s: HTTP %ld: %s, ignoring", reason,
			 resp.status, resp.message);
		r = -EREMOTEIO;
	}
	kube_response_clear(&resp);
	return r;
}
