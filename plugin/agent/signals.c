/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "agent/signals.h"
#include "base/log.h"
#include "base/util.h"

static volatile sig_atomic_t stop_signal, reload_requested;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_reload(int sig)
{
	reload_requested = 1;
}

void agent_signals_install(void)
{
	struct sigaction stop = { .sa_handler = on_stop }; /* no SA_RESTART: wake the sleep */
	struct sigaction hup = { .sa_handler = on_reload, .sa_flags = SA_RESTART };
	struct sigaction ign = { .sa_handler = SIG_IGN };

	stop_signal = 0;
	reload_requested = 0;
	sigemptyset(&stop.sa_mask);
	sigemptyset(&hup.sa_mask);
	sigemptyset(&ign.sa_mask);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGHUP, &hup, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGUSR1, &ign, NULL);
	sigaction(SIGUSR2, &ign, NULL);
}

int agent_signals_stop(void)
{
	return stop_signal;
}

bool agent_signals_take_reload(void)
{
	if (!reload_requested)
		return false;
	reload_requested = 0;
	return true;
}

int agent_reload_prepare(const struct agent_opts *ao, struct cz_config *next, struct hostfs *hf)
{
	const char *file = ao->config_path ? ao->config_path : "built-in defaults";
	static char errs[8192]; /* static: the agent's one reloading thread */
	const char *path;
	int r;

	if (!ao->ov)
		return log_warning_errno(-EOPNOTSUPP, "Cannot reload the configuration here, "
				       "ignoring SIGHUP");
	r = config_load_effective(ao->ov, next, &path, errs, sizeof(errs));
	if (r < 0) {
		/* every error of the file (FILE:LINE: ...), then what it means for the agent */
		for (char *line = errs, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
			nl = strchr(line, '\n');
			log_error("%.*s", nl ? (int)(nl - line) : (int)strlen(line), line);
		}
		return log_error_errno(r == -EDOM ? -EINVAL : r,
				       "Failed to reload the configuration "
				       "from '%s' on SIGHUP, keeping the running one: %m",
				       file);
	}
	r = hostfs_open(hf, next->paths.proc, next->paths.sys);
	if (r < 0) {
		hostfs_close(hf);
		return log_error_errno(r, "Failed to open the host roots '%s' and '%s' of the new "
				       "configuration, keeping the running one: %m",
				       next->paths.proc, next->paths.sys);
	}
	return 0;
}

void agent_reload_apply(struct cz_ctx *ctx, const struct agent_opts *ao,
			const struct cz_config *next, struct hostfs *hf)
{
	hostfs_close(&ctx->hf);
	ctx->hf = *hf;
	ctx->cfg = *next;
	log_info("Configuration reloaded from '%s'",
		 ao->config_path ? ao->config_path : "built-in defaults");
}
