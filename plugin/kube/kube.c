/* SPDX-License-Identifier: MIT */
/* The HTTP transport to the API server: see kube.h. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>

#include "base/log.h"
#include "base/util.h"
#include "kube/credentials.h"
#include "kube/kube.h"

struct kube_client {
	CURL *h;
	struct creds *creds;
	uint64_t timeout_ms;
	unsigned max_attempts;
	uint64_t backoff_base_ms, backoff_cap_ms;
	unsigned seed;
};

struct buf {
	char *p;
	size_t n, cap;
	bool too_big;
};

#define log_kube(prio, ...) \
	log_fields_full((prio), &(struct log_fields){ LOG_MID_KUBE, NULL, -1, NULL }, __VA_ARGS__)

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

static void global_init(void)
{
	(void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kube_client_new(struct kube_auth *auth, uint64_t timeout_ms, unsigned max_attempts,
		    struct kube_client **ret)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct kube_client *kc;
	bool insecure = auth->insecure;

	/* curl_global_init() is not thread-safe before 7.84: once, before any handle */
	(void)pthread_once(&once, global_init);
	kc = calloc(1, sizeof(*kc));
	if (!kc || !(kc->h = curl_easy_init())) {
		free(kc);
		return -ENOMEM;
	}
	kc->timeout_ms = timeout_ms ? timeout_ms : 10000;
	if (creds_new(auth, kc->timeout_ms, &kc->creds) < 0) {
		curl_easy_cleanup(kc->h);
		free(kc);
		return -ENOMEM;
	}
	kc->max_attempts = max_attempts ? max_attempts : 1;
	kc->backoff_base_ms = 200;
	kc->backoff_cap_ms = 5000;
	kc->seed = (unsigned)(now_monotonic_ms() ^ (uint64_t)getpid() << 16);
	if (insecure)
		log_kube(LOG_PRIO_WARNING, "insecure-skip-tls-verify is set in the kubeconfig: the "
			 "API server's certificate is NOT verified");
	*ret = kc;
	return 0;
}

int kube_client_from_config(const char *kubeconfig_path, uint64_t timeout_ms,
			    struct kube_client **ret)
{
	struct kube_auth a = { 0 };
	int r;

	if (kubeconfig_path && *kubeconfig_path)
		r = kubeconfig_load(kubeconfig_path, &a);
	else
		r = kubeconfig_incluster(getenv("CZ_SERVICEACCOUNT_DIR"), &a);
	if (r < 0)
		return r;
	r = kube_client_new(&a, timeout_ms, 5, ret);
	kubeconfig_free(&a);
	return r;
}

void kube_client_free(struct kube_client *kc)
{
	if (!kc)
		return;
	curl_easy_cleanup(kc->h);
	creds_free(kc->creds);
	free(kc);
}

void kube_client_set_backoff(struct kube_client *kc, uint64_t base_ms, uint64_t cap_ms)
{
	kc->backoff_base_ms = base_ms;
	kc->backoff_cap_ms = cap_ms;
}

/* ---- one attempt --------------------------------------------------------------------------- */

static void set_blob(struct kube_client *kc, CURLoption opt, const void *data, size_t len)
{
	struct curl_blob b = { .data = (void *)data, .len = len, .flags = CURL_BLOB_COPY };

	curl_easy_setopt(kc->h, opt, &b);
}

static void setup_tls(struct kube_client *kc)
{
	const struct kube_auth *a = creds_auth(kc->creds);
	const char *cert, *key;

	curl_easy_setopt(kc->h, CURLOPT_SSL_VERIFYPEER, a->insecure ? 0L : 1L);
	curl_easy_setopt(kc->h, CURLOPT_SSL_VERIFYHOST, a->insecure ? 0L : 2L);
	if (a->ca_file)
		curl_easy_setopt(kc->h, CURLOPT_CAINFO, a->ca_file);
	else if (a->ca_data)
		set_blob(kc, CURLOPT_CAINFO_BLOB, a->ca_data, a->ca_data_len);
	if (creds_exec_cert(kc->creds, &cert, &key)) {
		set_blob(kc, CURLOPT_SSLCERT_BLOB, cert, strlen(cert));
		set_blob(kc, CURLOPT_SSLKEY_BLOB, key, strlen(key));
	} else if (a->cert_file || a->cert_data) {
		if (a->cert_file)
			curl_easy_setopt(kc->h, CURLOPT_SSLCERT, a->cert_file);
		else
			set_blob(kc, CURLOPT_SSLCERT_BLOB, a->cert_data, a->cert_data_len);
		if (a->key_file)
			curl_easy_setopt(kc->h, CURLOPT_SSLKEY, a->key_file);
		else
			set_blob(kc, CURLOPT_SSLKEY_BLOB, a->key_data, a->key_data_len);
	}
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

static struct curl_slist *headers(const char *authz, const char *ctype)
{
	_cleanup_free_ char *ct = NULL;
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");

	if (h && authz)
		h = curl_slist_append(h, authz);
	if (h && ctype && asprintf(&ct, "Content-Type: %s", ctype) >= 0)
		h = curl_slist_append(h, ct);
	return h;
}

/* Set up @kc's handle for one request of @method to @url; the header list in *@ret_hdr (the
 * caller frees it after the transfer). Returns 0 or -errno (resp->message says why). */
static int prepare(struct kube_client *kc, const char *method, const char *url,
		   const char *ctype, uint64_t timeout_ms, char *errbuf,
		   struct curl_slist **ret_hdr, struct kube_response *resp)
{
	_cleanup_free_ char *tok = NULL, *authz = NULL;
	int r;

	r = creds_bearer(kc->creds, &tok);
	if (r < 0) {
		snprintf(resp->message, sizeof(resp->message), "no credential");
		return r;
	}
	if (tok && asprintf(&authz, "Authorization: Bearer %s", tok) < 0)
		return -ENOMEM;
	curl_easy_reset(kc->h);
	curl_easy_setopt(kc->h, CURLOPT_URL, url);
	curl_easy_setopt(kc->h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(kc->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(kc->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(kc->h, CURLOPT_CONNECTTIMEOUT_MS, (long)kc->timeout_ms);
	curl_easy_setopt(kc->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(kc->h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(kc->h, CURLOPT_USERAGENT, "cpuzombie/" CZ_VERSION);
	/* gzip, as kubectl asks: the API server compresses answers over 128 KiB (a page of 500
	 * nodes is ~2.9 MB, ~145 KB gzipped). The body bound in on_data counts what libcurl has
	 * decompressed, so a small compressed answer cannot grow past it. */
	curl_easy_setopt(kc->h, CURLOPT_ACCEPT_ENCODING, "gzip");
	setup_tls(kc);
	*ret_hdr = headers(authz, ctype);
	if (!*ret_hdr)
		return -ENOMEM;
	curl_easy_setopt(kc->h, CURLOPT_HTTPHEADER, *ret_hdr);
	return 0;
}

static int attempt(struct kube_client *kc, const char *method, const char *url,
		   const char *ctype, const char *body, struct kube_response *resp)
{
	struct curl_slist *hdr = NULL;
	struct buf b = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode cc;
	int r;

	r = prepare(kc, method, url, ctype, kc->timeout_ms, errbuf, &hdr, resp);
	if (r < 0)
		return r;
	curl_easy_setopt(kc->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(kc->h, CURLOPT_WRITEDATA, &b);
	if (body) {
		curl_easy_setopt(kc->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(kc->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	cc = curl_easy_perform(kc->h);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK) {
		snprintf(resp->message, sizeof(resp->message), "%s",
			 b.too_big ? "response body too large" : *errbuf ? errbuf :
			 curl_easy_strerror(cc));
		free(b.p);
		return b.too_big ? -EFBIG : curl_errno(cc);
	}
	curl_easy_getinfo(kc->h, CURLINFO_RESPONSE_CODE, &resp->status);
	resp->body = kube_parse_body(b.p, b.n);
	kube_status_message(resp->body, resp->message, sizeof(resp->message));
	free(b.p);
	return 0;
}

/* ---- a streamed answer --------------------------------------------------------------------- */

#define STREAM_ERROR_BODY (64u << 10)	/* a non-200 answer to a stream is a short Status */

struct stream {
	struct kube_client *kc;
	kube_stream_fn fn;
	void *userdata;
	long status;
	int fn_err;
	struct buf other;	/* a non-200 body, at most STREAM_ERROR_BODY */
};

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct stream *s = userdata;
	size_t n = size * nmemb;

	if (!s->status)
		curl_easy_getinfo(s->kc->h, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200 || n == 0) {
		if (s->other.n + n > STREAM_ERROR_BODY)
			return n;	/* the rest of an error body is not needed */
		return on_data(ptr, 1, n, &s->other);
	}
	if (s->fn_err == 0)
		s->fn_err = s->fn(ptr, n, s->userdata);
	return s->fn_err < 0 ? 0 : n;
}

static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct stream *s = userdata;

	(void)dt, (void)dn, (void)ut, (void)un;
	if (s->fn_err == 0)	/* the first error stays: the write callback's, say */
		s->fn_err = s->fn(NULL, 0, s->userdata);
	return s->fn_err < 0;
}

int kube_stream(struct kube_client *kc, const char *path, uint64_t timeout_ms, uint64_t stall_ms,
		kube_stream_fn fn, void *userdata, struct kube_response *resp)
{
	_cleanup_free_ char *url = NULL;
	struct stream s = { .kc = kc, .fn = fn, .userdata = userdata };
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode cc;
	int r;

	kube_response_clear(resp);
	resp->attempts = 1;
	if (asprintf(&url, "%s%s", creds_auth(kc->creds)->server, path) < 0)
		return -ENOMEM;
	r = prepare(kc, "GET", url, NULL, timeout_ms, errbuf, &hdr, resp);
	if (r < 0)
		return r;
	curl_easy_setopt(kc->h, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(kc->h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(kc->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(kc->h, CURLOPT_XFERINFODATA, &s);
	curl_easy_setopt(kc->h, CURLOPT_NOPROGRESS, 0L);
	/* a stall: less than 1 byte a second for @stall_ms */
	curl_easy_setopt(kc->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(kc->h, CURLOPT_LOW_SPEED_TIME, (long)((stall_ms + 999) / 1000));
	cc = curl_easy_perform(kc->h);
	curl_slist_free_all(hdr);
	curl_easy_getinfo(kc->h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (s.fn_err < 0)
		r = s.fn_err;
	else if (cc != CURLE_OK) {
		snprintf(resp->message, sizeof(resp->message), "%s",
			 *errbuf ? errbuf : curl_easy_strerror(cc));
		r = curl_errno(cc);
	} else if (resp->status != 200) {
		resp->body = kube_parse_body(s.other.p, s.other.n);
		kube_status_message(resp->body, resp->message, sizeof(resp->message));
	}
	free(s.other.p);
	return r;
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
	bool reauth = creds_auth(kc->creds)->has_exec;
	int r = -EIO;

	kube_response_clear(resp);
	if (asprintf(&url, "%s%s", creds_auth(kc->creds)->server, path) < 0)
		return -ENOMEM;
	for (unsigned i = 1; i <= kc->max_attempts; i++) {
		uint64_t cap, sleep_ms;

		kube_response_clear(resp);
		resp->attempts = i;
		r = attempt(kc, method, url, content_type, body, resp);
		if (r == 0 && resp->status == 401 && reauth) {
			reauth = false;	/* the exec credential may have expired early: once more */
			creds_invalidate(kc->creds);
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
			log_kube(LOG_PRIO_WARNING, "%s %s: %s, retry %u/%u in %llums", method, path,
				 resp->message, i, kc->max_attempts - 1,
				 (unsigned long long)sleep_ms);
		else
			log_kube(LOG_PRIO_WARNING, "%s %s: HTTP %ld%s%s, retry %u/%u in %llums",
				 method, path, resp->status, *resp->message ? ": " : "",
				 resp->message, i, kc->max_attempts - 1,
				 (unsigned long long)sleep_ms);
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

int kube_get_object(struct kube_client *kc, const char *path, const char *what, json_object **ret)
{
	struct kube_response resp = { 0 };
	int r = kube_request(kc, "GET", path, NULL, NULL, 0, &resp);

	if (r < 0)
		r = log_error_errno(r, "Failed to read %s: %s", what, resp.message);
	else if (resp.status != 200)
		r = log_error_errno(EREMOTEIO, "Failed to read %s: HTTP %ld%s%s", what, resp.status,
				    *resp.message ? ": " : "", resp.message);
	else if (!json_object_is_type(resp.body, json_type_object))
		r = log_error_errno(EBADMSG, "Failed to read %s: the answer is not a JSON object",
				    what);
	else
		*ret = json_object_get(resp.body);
	kube_response_clear(&resp);
	return r;
}
