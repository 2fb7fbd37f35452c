/* SPDX-License-Identifier: MIT */
/* Credentials, exec credential plugins through posix_spawn(): see credentials.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/util.h"
#include "kube/credentials.h"
#include "base/kjson.h"

extern char **environ;

struct creds {
	struct kube_auth auth;
	uint64_t timeout_ms;
	struct creds_exec_result exec;	/* the plugin's cached answer */
	bool have_exec;
};

int creds_new(struct kube_auth *auth, uint64_t timeout_ms, struct creds **ret)
{
	struct creds *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->auth = *auth;
	*auth = (struct kube_auth){ 0 };
	c->timeout_ms = timeout_ms ? timeout_ms : 10000;
	*ret = c;
	return 0;
}

void creds_free(struct creds *c)
{
	if (!c)
		return;
	kubeconfig_free(&c->auth);
	creds_exec_clear(&c->exec);
	free(c);
}

const struct kube_auth *creds_auth(const struct creds *c)
{
	return &c->auth;
}

void creds_exec_clear(struct creds_exec_result *r)
{
	if (!r)
		return;
	free(r->token);
	free(r->cert);
	free(r->key);
	*r = (struct creds_exec_result){ 0 };
}

void creds_invalidate(struct creds *c)
{
	creds_exec_clear(&c->exec);
	c->have_exec = false;
}

bool creds_exec_cert(const struct creds *c, const char **ret_cert, const char **ret_key)
{
	if (!c->have_exec || !c->exec.cert)
		return false;
	*ret_cert = c->exec.cert;
	*ret_key = c->exec.key;
	return true;
}

int creds_read_token_file(const char *path, char **ret)
{
	char buf[CREDS_TOKEN_MAX + 1];
	ssize_t k = fileio_read_at(AT_FDCWD, path, 0, buf, sizeof(buf)); /* follows ..data links */
	size_t n;

	if (k < 0)
		return (int)k; /* -EFBIG: longer than CREDS_TOKEN_MAX */
	n = (size_t)k;
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]) && buf[n - 1])
		n--;
	if (!kube_token_ok(buf, n))
		return -EINVAL;
	*ret = strndup(buf, n);
	return *ret ? 0 : -ENOMEM;
}

int creds_exec_parse(const char *text, struct creds_exec_result *ret)
{
	_cleanup_(json_object_putp) json_object *o = kube_parse_body(text, strlen(text));
	const char *tok = kube_get_str(o, "status.token", NULL);
	const char *exp = kube_get_str(o, "status.expirationTimestamp", NULL);
	const char *cert = kube_get_str(o, "status.clientCertificateData", NULL);
	const char *key = kube_get_str(o, "status.clientKeyData", NULL);
	struct creds_exec_result r = { 0 };

	if (!o || !streq(kube_get_str(o, "kind", ""), "ExecCredential") || (!tok && !(cert && key)))
		return -EINVAL;
	/* the length json-c decoded, not strlen(): a "\u0000" inside must not cut the token */
	if (tok && !kube_token_ok(tok, (size_t)json_object_get_string_len(kube_get(o,
								       "status.token"))))
		return -EINVAL;
	if ((tok && !(r.token = strdup(tok))) || (cert && key && (!(r.cert = strdup(cert)) ||
								 !(r.key = strdup(key))))) {
		creds_exec_clear(&r);
		return -ENOMEM;
	}
	if (exp && kube_parse_time(exp, &r.expiry_ms) < 0)
		r.expiry_ms = 0;
	*ret = r;
	return 0;
}

/* ---- running the plugin -------------------------------------------------------------------- */

static bool env_overridden(const char *entry, const struct kube_exec *e)
{
	size_t n = strcspn(entry, "=");

	if (n == strlen("KUBERNETES_EXEC_INFO") && startswith(entry, "KUBERNETES_EXEC_INFO="))
		return true;
	for (size_t i = 0; e->env[i]; i++)
		if (strncmp(entry, e->env[i], n + 1) == 0)
			return true;
	return false;
}

/* Our environment, less what the kubeconfig sets, plus KUBERNETES_EXEC_INFO and its env entries.
 * The array is malloc()ed; its strings are borrowed except *@ret_info. */
static int build_envp(const struct kube_exec *e, char ***ret, char **ret_info)
{
	size_t n = 0, k = 0, extra = 0;
	char **envp, *info;

	while (environ && environ[n])
		n++;
	while (e->env[extra])
		extra++;
	if (asprintf(&info,
		     "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
		     "\"spec\":{\"interactive\":false}}",
		     e->api_version) < 0)
		return -ENOMEM;
	envp = calloc(n + extra + 2, sizeof(*envp));
	if (!envp) {
		free(info);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (!env_overridden(environ[i], e))
			envp[k++] = environ[i];
	envp[k++] = info;
	for (size_t i = 0; i < extra; i++)
		envp[k++] = e->env[i];
	*ret = envp;
	*ret_info = info;
	return 0;
}

/*
 * Every signal, for POSIX_SPAWN_SETSIGDEF. glibc's sigfillset() leaves out its two internal
 * signals (32 and 33, below SIGRTMIN) and sigaddset() refuses them, and its posix_spawn() then
 * sets them to SIG_IGN in the child, which exec keeps: measured, SigIgn 0x180000000 in the
 * plugin. Their bits set by hand ask for SIG_DFL instead, which is what fork+exec gave.
 */
static void all_signals(sigset_t *s)
{
	unsigned long *w = (unsigned long *)(void *)s;
	const size_t bits = 8 * sizeof(*w);

	sigfillset(s);
	for (int sig = 32; sig < SIGRTMIN && (size_t)(sig - 1) / bits < sizeof(*s) / sizeof(*w);
	     sig++)
		w[(size_t)(sig - 1) / bits] |= 1UL << ((size_t)(sig - 1) % bits);
}

/* Start the plugin with its stdout on @out_fd and its stderr on @err_fd: default signals, fds
 * 0-2 only, own group. */
static int spawn(const struct kube_exec *e, int out_fd, int err_fd, pid_t *ret_pid)
{
	char *argv[KUBECONFIG_MAX_ARGS + 2] = { e->command };
	_cleanup_free_ char **envp = NULL;
	_cleanup_free_ char *info = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int r;

	for (size_t i = 0; e->args[i]; i++)
		argv[i + 1] = e->args[i];
	r = build_envp(e, &envp, &info);
	if (r < 0)
		return r;
	sigemptyset(&none);
	all_signals(&all);
	r = posix_spawnattr_init(&at);
	if (r != 0)
		return -r;
	r = posix_spawn_file_actions_init(&fa);
	if (r != 0) {
		posix_spawnattr_destroy(&at);
		return -r;
	}
	/* the agent's threads block every signal and it may ignore some: none of that is the
	 * plugin's business, nor are our sockets and files; its group is ours to kill */
	r = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				     POSIX_SPAWN_SETPGROUP);
	r = r ?: posix_spawnattr_setsigmask(&at, &none);
	r = r ?: posix_spawnattr_setsigdefault(&at, &all);
	r = r ?: posix_spawnattr_setpgroup(&at, 0);
	r = r ?: posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	r = r ?: posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	r = r ?: posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	r = r ?: posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	r = r ?: posix_spawnp(ret_pid, e->command, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -r;
}

/* What the plugin wrote to stderr: the first CREDS_EXEC_MAX_STDERR bytes kept, the rest counted. */
struct err_buf {
	char text[CREDS_EXEC_MAX_STDERR + 1];
	size_t n, dropped;
};

/* Read what @fd (non-blocking) has now into @eb. Returns true at EOF or on an error. */
static bool drain_err(int fd, struct err_buf *eb)
{
	char skip[1024];

	for (;;) {
		size_t room = CREDS_EXEC_MAX_STDERR - eb->n;
		ssize_t k = room ? read(fd, eb->text + eb->n, room) : read(fd, skip, sizeof(skip));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 || errno != EAGAIN;
		if (room)
			eb->n += (size_t)k;
		else
			eb->dropped += (size_t)k;
	}
}

/*
 * Read the plugin's stdout until EOF, the deadline or the size bound, and its stderr (@err_fd,
 * non-blocking) beside it so that a chatty plugin never blocks on a full pipe; stderr is not
 * waited for once stdout ended (a leftover child may hold it). Returns 0 or -errno.
 */
static int collect(int fd, int err_fd, uint64_t deadline, char **ret, struct err_buf *eb)
{
	_cleanup_free_ char *out = malloc(CREDS_EXEC_MAX_OUTPUT + 1);
	bool err_open = true;
	size_t n = 0;

	if (!out)
		return -ENOMEM;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
					 { .fd = err_open ? err_fd : -1, .events = POLLIN } };
		uint64_t now = now_monotonic_ms();
		ssize_t k;

		if (now >= deadline || poll(pfd, 2, (int)(deadline - now)) == 0)
			return -ETIME;
		if (err_open && pfd[1].revents)
			err_open = !drain_err(err_fd, eb);
		if (!pfd[0].revents)
			continue;
		if (n >= CREDS_EXEC_MAX_OUTPUT)
			return -EFBIG;
		k = read(fd, out + n, CREDS_EXEC_MAX_OUTPUT - n);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (err_open)
		(void)drain_err(err_fd, eb); /* what it wrote before it ended */
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

/*
 * The plugin's stderr, one log entry per line (at most CREDS_EXEC_STDERR_LINES), each through
 * log.h, which makes it safe text (base/textsafe.h: escapes and control characters shown, never
 * sent to a terminal or the journal raw); a NUL byte shows as U+FFFD instead of cutting the line.
 */
static void log_plugin_stderr(const char *cmd, struct err_buf *eb, bool failed)
{
	const enum log_prio prio = failed ? LOG_PRIO_WARNING : LOG_PRIO_INFO;
	size_t pos = 0, lines = 0;

	while (pos < eb->n && lines < CREDS_EXEC_STDERR_LINES) {
		char line[512];
		size_t len = 0;

		for (; pos < eb->n && eb->text[pos] != '\n'; pos++) {
			const char *c = eb->text[pos] ? &eb->text[pos] : "\xef\xbf\xbd";
			size_t cl = eb->text[pos] ? 1 : 3;

			if (len + cl < sizeof(line)) {
				memcpy(line + len, c, cl);
				len += cl;
			}
		}
		pos++; /* the newline */
		line[len] = '\0';
		log_full_errno(prio, 0, NULL, "Exec credential plugin '%s' said: %s", cmd, line);
		lines++;
	}
	if (pos < eb->n || eb->dropped)
		log_full_errno(prio, 0, NULL,
			       "Exec credential plugin '%s' said more (%zu bytes not "
			       "shown)",
			       cmd, (pos < eb->n ? eb->n - pos : 0) + eb->dropped);
}

/* Wait (until @deadline) for the plugin to end without reaping it, kill its whole group, reap. */
static int finish(pid_t pid, uint64_t deadline, bool kill_now)
{
	siginfo_t si = { 0 };
	int status = 0;

	while (!kill_now) {
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 &&
		    errno != EINTR)
			break;
		if (si.si_pid == pid || now_monotonic_ms() >= deadline)
			break;
		usleep(5000);
	}
	/* the leader is a zombie until reaped, so its group id cannot be reused meanwhile */
	(void)kill(-pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static int run_plugin(const struct kube_exec *e, uint64_t timeout_ms, char **ret,
		      struct err_buf *eb)
{
	uint64_t deadline = now_monotonic_ms() + timeout_ms;
	_cleanup_free_ char *out = NULL;
	int p[2], q[2], r, w;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(q, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	r = spawn(e, p[1], q[1], &pid);
	close(p[1]);
	close(q[1]);
	if (r < 0) {
		close(p[0]);
		close(q[0]);
		return r;
	}
	r = collect(p[0], q[0], deadline, &out, eb);
	close(p[0]);
	close(q[0]);
	w = finish(pid, deadline, r < 0);
	if (r == 0 && w < 0)
		r = now_monotonic_ms() >= deadline ? -ETIME : w;
	if (r < 0)
		return r;
	*ret = TAKE_PTR(out);
	return 0;
}

int creds_exec_run(const struct kube_exec *e, uint64_t timeout_ms, char **ret)
{
	_cleanup_free_ struct err_buf *eb = calloc(1, sizeof(*eb));
	int r;

	if (!eb)
		return -ENOMEM;
	r = run_plugin(e, timeout_ms, ret, eb);
	log_plugin_stderr(e->command, eb, r < 0);
	return r;
}

static int exec_credential(struct creds *c)
{
	_cleanup_free_ char *text = NULL;
	struct creds_exec_result res;
	const char *cmd = c->auth.exec.command;
	int r;

	if (c->have_exec && (!c->exec.expiry_ms || now_realtime_ms() + 10000 < c->exec.expiry_ms))
		return 0;
	creds_invalidate(c);
	r = creds_exec_run(&c->auth.exec, c->timeout_ms, &text);
	if (r == -ETIME)
		return log_error_errno(EACCES,
				       "Exec credential plugin '%s' ran longer than %llums: "
				       "killed with its process group",
				       cmd, (unsigned long long)c->timeout_ms);
	if (r < 0)
		return log_error_errno(EACCES, "Exec credential plugin '%s' failed: %s", cmd,
				       r == -ECHILD ? "it exited with an error" : strerror(-r));
	r = creds_exec_parse(text, &res);
	if (r == -EINVAL)
		return log_error_errno(EACCES,
				       "Exec credential plugin '%s' printed no ExecCredential "
				       "with a usable token (control characters are refused) or "
				       "certificate",
				       cmd);
	if (r < 0)
		return log_error_errno(EACCES, "Exec credential plugin '%s': %s", cmd,
				       strerror(-r));
	c->exec = res;
	c->have_exec = true;
	return 0;
}

int creds_bearer(struct creds *c, char **ret)
{
	const struct kube_auth *a = &c->auth;
	char *tok = NULL;
	int r;

	if (a->has_exec) {
		r = exec_credential(c);
		if (r < 0)
			return r;
		if (c->exec.token && !(tok = strdup(c->exec.token)))
			return -ENOMEM;
	} else if (a->token_file) {
		r = creds_read_token_file(a->token_file, &tok);	/* rotates: read every time */
		if (r == -EINVAL)
			return log_error_errno(EACCES,
					       "Token file '%s' is empty or contains control "
					       "characters: refused",
					       a->token_file);
		if (r == -EFBIG)
			return log_error_errno(EACCES, "Failed to read token file '%s': larger "
					       "than %d bytes", a->token_file, CREDS_TOKEN_MAX);
		if (r < 0)
			return log_error_errno(EACCES, "Failed to read token file '%s': %s",
					       a->token_file, strerror(-r));
	} else if (a->token) {
		/* kubeconfig_parse() refused control characters already; kept as a second gate */
		if (!kube_token_ok(a->token, strlen(a->token)))
			return log_error_errno(EACCES, "The kubeconfig token contains control "
					       "characters: refused");
		if (!(tok = strdup(a->token)))
			return -ENOMEM;
	}
	*ret = tok;
	return 0;
}
