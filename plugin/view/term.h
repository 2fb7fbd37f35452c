/* SPDX-License-Identifier: MIT */
#ifndef CZ_TERM_H
#define CZ_TERM_H

/*
 * The live views' terminal (`top`, `fleet --watch`): the alternate screen with the cursor
 * hidden and keys read without Enter or echo, given back as it was at the end; the window's
 * size; whole writes to stdout.
 */

#include <stddef.h>

/* term_enter - the alternate screen, keys raw. Returns 0 or -errno (stdin is no terminal). */
int term_enter(void);

/* term_restore - the screen and the key mode as before term_enter(); nothing if not entered. */
void term_restore(void);

/* term_size - the window's columns and rows (80 x 24 when it cannot be read). */
void term_size(unsigned *cols, unsigned *rows);

/* term_write - write all of @s (@n bytes) to stdout, retried on EINTR; a failure drops it. */
void term_write(const char *s, size_t n);

/*
 * term_signals - what a live view stops or redraws on: @handler for SIGWINCH (a new size),
 * SIGINT, SIGTERM and SIGHUP (restore the terminal and quit), without SA_RESTART so that a
 * poll() returns at once; SIGPIPE ignored (a closed pipe is a write error, not a death).
 */
void term_signals(void (*handler)(int));

#endif
