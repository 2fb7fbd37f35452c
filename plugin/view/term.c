/* SPDX-License-Identifier: MIT */
/* The live views' terminal: see term.h. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "view/term.h"

static struct termios saved_tio;
static bool tio_saved;

void term_size(unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	} else {
		*cols = 80;
		*rows = 24;
	}
}

void term_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

void term_restore(void)
{
	static const char leave[] = "\033[0m\033[?25h\033[?1049l";

	if (!tio_saved)
		return;
	term_write(leave, sizeof(leave) - 1);
	(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	tio_saved = false;
}

int term_enter(void)
{
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	struct termios raw;

	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -errno;
	raw = saved_tio;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
		return -errno;
	tio_saved = true;
	term_write(enter, sizeof(enter) - 1);
	return 0;
}

void term_signals(void (*handler)(int))
{
	struct sigaction sa = { .sa_handler = handler };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
