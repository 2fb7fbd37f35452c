/* SPDX-License-Identifier: MIT */
#ifndef CZ_CREDENTIALS_H
#define CZ_CREDENTIALS_H

/*
 * Credentials for the API server, from what kubeconfig.h resolved: a static token, a token file
 * (re-read before every request: service-account tokens rotate), a client certificate, or an exec
 * credential plugin (client.authentication.k8s.io ExecCredential, e.g. `aws eks get-token`).
 *
 * The plugin is started with posix_spawn() (the agent is multithreaded: a child made by fork could
 * hang on a lock another thread held), its argv and envp built before the spawn, with the default
 * signal mask and dispositions, only fds 0-2 (stdin /dev/null, stdout and stderr pipes to us),
 * in a process group of its own that is killed as a whole when it runs past the timeout or ends.
 *
 * A token from any source with a control character (CR, LF, ...) is refused: it would become a
 * header of its own. Every failure is logged once (log.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kubeconfig.h"

#define CREDS_TOKEN_MAX 16384		/* bytes of a token file */
#define CREDS_EXEC_MAX_OUTPUT (64u << 10) /* bytes a plugin may print */
#define CREDS_EXEC_MAX_STDERR 4096	/* bytes of a plugin's stderr logged; the rest counted */
#define CREDS_EXEC_STDERR_LINES 8	/* lines of it logged */

struct creds;

/* What an exec plugin printed, parsed. Strings are malloc()ed; creds_exec_clear() frees them. */
struct creds_exec_result {
	char *token;			/* status.token, or NULL */
	char *cert, *key; /* status.clientCertificateData / clientKeyData (PEM) or NULL */
	uint64_t expiry_ms;		/* status.expirationTimestamp, 0 = none given */
};

/*
 * creds_new - credentials from @auth (its contents move to the result on success; @auth is
 * zeroed). @timeout_ms bounds an exec plugin's run. Returns 0 or -ENOMEM.
 */
int creds_new(struct kube_auth *auth, uint64_t timeout_ms, struct creds **ret);

/* creds_free - accepts NULL. */
void creds_free(struct creds *c);

/* creds_auth - what the kubeconfig said (server, CA, certificate files). Borrowed. */
const struct kube_auth *creds_auth(const struct creds *c);

/*
 * creds_bearer - the bearer token for the next request into *@ret (malloc()ed) or NULL when the
 * credential is a client certificate only. Re-reads a token file; runs the exec plugin when its
 * cached answer is missing or about to expire. Returns 0, or -EACCES (the reason is logged).
 */
int creds_bearer(struct creds *c, char **ret);

/*
 * creds_exec_cert - the client certificate and key an exec plugin gave (PEM bytes, borrowed), or
 * false when it gave none. Valid until the next creds_bearer() call.
 */
bool creds_exec_cert(const struct creds *c, const char **ret_cert, const char **ret_key);

/* creds_invalidate - forget the exec plugin's answer (after a 401): the next request reruns it. */
void creds_invalidate(struct creds *c);

/*
 * creds_read_token_file - read a bearer token from @path: at most CREDS_TOKEN_MAX bytes, trailing
 * white space and newlines dropped. Returns 0 and a malloc()ed token, -EFBIG, -EINVAL (empty, or a
 * control character inside), or -errno from reading; *@ret untouched on failure.
 */
int creds_read_token_file(const char *path, char **ret);

/*
 * creds_exec_parse - pure: parse an ExecCredential printed by a plugin (@text, NUL-terminated).
 * Returns 0 and fills *@ret, or -EINVAL (not an ExecCredential; no token and no certificate and
 * key; a token with a control character); *@ret untouched on failure.
 */
int creds_exec_parse(const char *text, struct creds_exec_result *ret);

/* creds_exec_clear - free what *@r holds and zero it. Accepts NULL. */
void creds_exec_clear(struct creds_exec_result *r);

/*
 * creds_exec_run - run plugin @e as described above; its stdout (at most CREDS_EXEC_MAX_OUTPUT
 * bytes) into *@ret (malloc()ed, NUL-terminated). Never leaves a process behind: on return the
 * plugin and whatever it started in its process group are gone. What it wrote to stderr is
 * logged (log.h makes it safe text: no terminal escape or control byte passes raw), one entry a
 * line, at most CREDS_EXEC_STDERR_LINES lines and CREDS_EXEC_MAX_STDERR bytes, as warnings when
 * it failed and info otherwise (kubectl shows it on the terminal as is). Returns 0, -ETIME (ran
 * past
 * @timeout_ms), -EFBIG (printed too much), -ECHILD (exited non-zero or by a signal), -errno.
 */
int creds_exec_run(const struct kube_exec *e, uint64_t timeout_ms, char **ret);

#endif
