/* SPDX-License-Identifier: MIT */
#ifndef CZ_STATE_H
#define CZ_STATE_H

/*
 * Crash-safe state files under --state-dir (and the run dir).
 *
 * NPD may run checks concurrently, and a check can be SIGKILLed at its timeout at any moment,
 * so a state file is only ever replaced whole: write the new file unnamed (O_TMPFILE), fsync,
 * link it as "<name>.tmp", rename over the old one, fsync the directory. A writer killed mid-write
 * leaves no file behind (where O_TMPFILE or /proc is missing, "<name>.tmp" is written by name and
 * the next writer replaces it). Readers and writers of one name serialise on flock() of
 * "<name>.lock" (bounded wait: a check never blocks past its deadline).
 *
 * On disk:   cpuzombie-state <version> <name>\n   payload   end <crc32 of payload, 8 hex>\n
 * The payload is whatever the owner writes (text "key value" lines by convention). A file whose
 * header, version or checksum is wrong is corrupt: state_load() moves it aside to
 * "<name>.corrupt" and reports that, and the caller starts a new baseline.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STATE_VERSION 1
#define STATE_LOCK_WAIT_MS 2000

struct state_lock {
	int fd; /* -1 when not held */
};

/*
 * state_lock - take the exclusive lock for @name in directory @dir, creating @dir (0700) if
 * missing. Waits at most STATE_LOCK_WAIT_MS. Returns 0 or -errno (-ETIMEDOUT when another holder
 * kept it too long, -EINVAL for a bad name).
 */
int state_lock(const char *dir, const char *name, struct state_lock *ret_lock);

/* state_unlock - release; safe on an unheld lock. Usable as a _cleanup_ function. */
void state_unlock(struct state_lock *lock);

/*
 * state_load - read the payload of @dir/@name into @buf (NUL-terminated). Returns the payload
 * length, -ENOENT when there is no state yet, -EBADMSG when the file was corrupt (it has been
 * moved to <name>.corrupt; start afresh), -EFBIG when it does not fit, or another -errno.
 * Call with the lock held.
 */
ssize_t state_load(const char *dir, const char *name, char *buf, size_t size);

/*
 * state_save - atomically replace @dir/@name with @payload (@len bytes). Returns 0 or -errno;
 * on failure the previous file is intact and no temporary file is left behind.
 * Call with the lock held.
 */
int state_save(const char *dir, const char *name, const char *payload, size_t len);

/*
 * state_save_volatile - state_save without the fsyncs, for files in the run dir (a tmpfs that a
 * reboot empties anyway): still replaced atomically by rename, so readers see the old or the new
 * file, never a torn one; only durability across power loss is given up. The agent's heartbeat
 * goes through here every 2 s.
 */
int state_save_volatile(const char *dir, const char *name, const char *payload, size_t len);

/*
 * state_parse_envelope - pure: validate a whole file's bytes (header, version, name, trailer
 * checksum). On success sets *@ret_payload and *@ret_len to the payload inside @file and returns 0;
 * -EBADMSG otherwise.
 */
int state_parse_envelope(const char *file, size_t len, const char *name, const char **ret_payload,
			 size_t *ret_len);

/* state_crc32 - IEEE CRC-32 of @len bytes (zlib's polynomial), for the trailer. */
uint32_t state_crc32(const void *data, size_t len);

#endif
