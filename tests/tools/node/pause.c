// SPDX-License-Identifier: MIT
/*
 * The pod sandbox's process for the test node (tests/tools/node/images.py makes the image the
 * node's containerd starts each pod's sandbox from; no registry is reachable here). It holds
 * the pod's namespaces and, as PID 1 of a pod that shares its PID namespace, reaps orphans.
 * SIGTERM and SIGINT end it (exit 0); nothing else does.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* on_end() - SIGTERM/SIGINT: the sandbox is being stopped. */
static void on_end(int sig)
{
	(void)sig;
	_exit(0);
}

/* on_child() - SIGCHLD: reap every exited child (orphans reparented to us). */
static void on_child(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

int main(void)
{
	struct sigaction end = { .sa_handler = on_end };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART };

	if (getpid() != 1)
		return 2; /* only meaningful as a namespace's first process */
	if (sigaction(SIGINT, &end, NULL) < 0 || sigaction(SIGTERM, &end, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0)
		return 1;
	for (;;)
		pause();
}
