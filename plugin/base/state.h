/* SPDX-License-Identifier: MIT */
#ifndef CZ_STATE_H
#define CZ_STATE_H

/*
 * The state store: crash-safe state files under --state-dir and the run dir.
 *
 * NPD may run checks concurrently, and a check can be SIGKILLed at its timeout at any moment,
 * so a state file is only ever replaced whole, through base/fileio.h's atomic writer (unnamed
 * O_TMPFILE, linked and renamed over the old file, fsync'ed in the state dir). Writers of one name
 * serialise on flock() of "<name>.lock" (bounded wait: a check never blocks past its deadline).
 * Readers take no lock and create nothing: the rename makes every file they open whole, so
 * `check cpu` and `report` work on a read-only run dir.
 *
 * On disk:   cpuzombie-state <version> <name>\n   payload   end <crc32 of payload, 8 hex>\n
 * The payload is whatever the owner writes (text "key value" lines by convention). A file whose
 * header, version or checksum is wrong, or that is not a regular file at all (a FIFO, socket,
 * device, directory or symlink someone put there), is not ours: a writer moves it aside to
 * "<name>.corrupt", logs that, and starts a new baseline; a reader ignores it. Every open is
 * non-blocking, so no such file can block the sampler or a check.
 *
 * Typed use (one module owns each state, its struct state_type and its STATE_CODEC, below):
 *     r = memcg_history_begin(&txn, dir, &memcg_history_state, &h); // lock, load, parse
 *     ... update h ...
 *     r = memcg_history_commit(&txn, &h);			// format, replace atomically
 *     state_end(&txn);					// or _cleanup_(state_end)
 * and memcg_history_read() for readers. The owner parses and formats; this store moves the
 * bytes (state_read/begin/commit/write). The raw calls below them (state_lock/load/save) remain
 * for tests and special cases.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>

#define STATE_VERSION 1
#define STATE_LOCK_WAIT_MS 2000
#define STATE_ENVELOPE_MAX 256 /* header and trailer around the payload */

/* The state and run files, one constant each; the owning module defines the struct state_type.
 * Run files of later features name themselves in their module (kevents.h RUN_KERNEL_EVENTS,
 * units.h UNITS_FILE, tier.h) and go through the same store or base/fileio.h. */
#define STATE_MEMCG "memcg"			/* memcg/memcg.h: dying-memcg history */
#define STATE_ENA "ena"				/* ena/ena.h: readings and reset events */
#define STATE_ENA_ALLOWANCE "ena-allowance"	/* ena/ena.h: allowance readings */
#define STATE_CANARY "canary"			/* memcg/canary.h: last canary read */
#define STATE_SYSTEMD_RESTARTS "systemd-restarts" /* host/systemd.h: restart baseline */
#define RUN_CPU_BURSTS "cpu-bursts"		/* cpu/history.h: the burst log (run dir) */
#define RUN_CPU_HEARTBEAT "cpu-heartbeat"	/* cpu/history.h: the sampler's heartbeat */
#define RUN_CPU_HISTORY "cpu-history"		/* cpu/history.h: the per-core ring (not an
						 * envelope file: rewritten in place by slots) */

struct state_lock {
	int fd; /* -1 when not held */
};

/*
 * state_lock - take the exclusive lock for @name in directory @dir, creating @dir (0700) if
 * missing. Waits at most STATE_LOCK_WAIT_MS. Returns 0 or -errno (-ETIMEDOUT when another holder
 * kept it too long, -EINVAL for a bad name).
 */
int state_lock(const char *dir, const char *name, struct state_lock *ret_lock);

/*
 * state_trylock - state_lock() without waiting: -EWOULDBLOCK at once when another holds it (the
 * agent's run-dir lock: a second agent must not share the run dir). The lock's fd is the
 * holder's to write into (the agent writes its pid there for the next one's message).
 */
int state_trylock(const char *dir, const char *name, struct state_lock *ret_lock);

/* state_unlock - release; safe on an unheld lock. Usable as a _cleanup_ function. */
void state_unlock(struct state_lock *lock);

/*
 * state_load - read the payload of @dir/@name into @buf (NUL-terminated). Returns the payload
 * length, -ENOENT when there is no state yet, -EBADMSG when the file was corrupt (it has been
 * moved to <name>.corrupt; start afresh; also for a FIFO, socket, device, directory or symlink
 * at that name), -EFBIG when it does not fit, or another -errno. Call with the lock held.
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

/* ---- typed state ------------------------------------------------------------------------------
 * The store moves bytes only: it reads a bounded, locked, checksummed payload and hands it back,
 * and writes a payload its owner formatted. Parsing and formatting stay in the domain, which
 * calls down (STATE_CODEC below generates those calls in the owner's file): nothing in base/
 * calls back up into a domain.
 * */

/* One state file, defined once, by the module owning the state: data only. */
struct state_type {
	const char *name; /* one of the names above */
	size_t max;	  /* largest payload: a bigger file is treated as corrupt */
	bool durable;	  /* state dir: fsync; run dir (tmpfs): atomic but not fsync'ed */
};

enum state_status {
	STATE_NONE = 0,	     /* no file yet: @obj left as the caller initialised it */
	STATE_LOADED = 1,    /* @obj holds the stored state */
	STATE_DISCARDED = 2, /* state_begin only: corrupt, unparsable or not a regular file;
			      * moved aside and logged, @obj left alone (a new baseline) */
};

/* How a state is read or written: the call's property, never the process's. */
enum state_flags {
	STATE_READ_ONLY = 1 << 0, /* nothing is written or created: no lock file, no moving
				   * aside; commits and stamps succeed without writing (`report`
				   * runs the checks to show their verdicts, but must not change
				   * their baselines) */
};

/*
 * state_read - the payload of @t in @dir, without locking or writing anything (a bad file is
 * left for the next writer). Returns STATE_NONE, or STATE_LOADED with the payload in *@ret
 * (malloc()ed, NUL-terminated, free() it) and its length in *@ret_len; or -errno: -EBADMSG when
 * the file is corrupt, too big or not a regular file, -EACCES, -EIO, -ENOMEM.
 */
int state_read(const char *dir, const struct state_type *t, char **ret, size_t *ret_len);

struct state_txn {
	struct state_lock lock;
	const char *dir;
	const struct state_type *t;
	unsigned flags; /* enum state_flags, set before state_begin() (STATE_TXN_INIT_FLAGS) */
};

#define STATE_TXN_INIT { .lock = { .fd = -1 } }
#define STATE_TXN_INIT_FLAGS(f) { .lock = { .fd = -1 }, .flags = (f) }

/*
 * state_begin - the writer's half: take @t's lock in @dir (creating @dir 0700), then load as
 * state_read() does, moving a bad file aside. Returns an enum state_status (STATE_LOADED: the
 * payload in *@ret, *@ret_len as state_read) or -errno (lock timeout -ETIMEDOUT, no space,
 * read-only file system: nothing loaded). @txn->flags (STATE_READ_ONLY) hold for the whole
 * transaction. Call state_end() afterwards in every case.
 */
int state_begin(struct state_txn *txn, const char *dir, const struct state_type *t, char **ret,
		size_t *ret_len);

/* state_discard - the owner could not parse what state_begin() loaded: move it aside
 * ("unparsable", nothing under STATE_READ_ONLY) and return STATE_DISCARDED (a new baseline). */
int state_discard(struct state_txn *txn);

/* state_commit - replace the file atomically with @payload (@len bytes, at most @t->max).
 * 0 or -errno (old file intact); 0 without writing under STATE_READ_ONLY. */
int state_commit(struct state_txn *txn, const char *payload, size_t len);

/* state_end - release the lock; safe on a failed or ended transaction. Usable with _cleanup_. */
void state_end(struct state_txn *txn);

/*
 * state_write - replace @t in @dir with @payload under the lock, without reading the old file
 * first (the agent's heartbeat, every 2 s). Returns 0 or -errno.
 */
int state_write(const char *dir, const struct state_type *t, const char *payload, size_t len);

/*
 * STATE_CODEC - the owner's typed calls, generated in the owner's file (@qual: static, or
 * nothing for ones its header declares) from its pure pair
 *     int PARSE(const char *payload, size_t len, T *obj)	0 or -errno, @obj untouched on
 *							failure (-EINVAL: discarded)
 *     ssize_t FORMAT(const T *obj, char **ret)		a malloc()ed payload, its length
 * as
 *     PFX_read(dir, t, obj)		state_read, then PARSE: STATE_NONE, STATE_LOADED, -errno
 *					(the parser's: the payload is malformed)
 *     PFX_begin(txn, dir, t, obj)	state_begin, then PARSE (unparsable: STATE_DISCARDED)
 *     PFX_commit(txn, obj)		FORMAT, then state_commit (nothing formatted read-only)
 *     PFX_write(dir, t, obj)		FORMAT, then state_write
 * The module writes its parser and formatter once, in its own types, and no adapter by hand;
 * the store below never sees them. Each use has the four prototypes beside it, written out (in
 * the owner's header, or above the use for static ones), so that grep finds each name and the
 * compiler holds the generated definitions to them.
 */
#define STATE_CODEC(qual, PFX, T, PARSE, FORMAT)						\
	__attribute__((unused)) qual int PFX##_read(const char *dir_,				\
						    const struct state_type *t_, T *obj_)	\
	{											\
		char *p_ = NULL;								\
		size_t n_ = 0;									\
		int r_ = state_read(dir_, t_, &p_, &n_);					\
												\
		if (r_ == STATE_LOADED) {							\
			r_ = PARSE(p_, n_, obj_);						\
			r_ = r_ < 0 ? r_ : STATE_LOADED;					\
		}										\
		free(p_);									\
		return r_;									\
	}											\
	__attribute__((unused)) qual int PFX##_begin(struct state_txn *txn_, const char *dir_,	\
						     const struct state_type *t_, T *obj_)	\
	{											\
		char *p_ = NULL;								\
		size_t n_ = 0;									\
		int r_ = state_begin(txn_, dir_, t_, &p_, &n_);					\
												\
		if (r_ == STATE_LOADED) {							\
			r_ = PARSE(p_, n_, obj_);						\
			r_ = r_ == -ENOMEM ? r_ : r_ < 0 ? state_discard(txn_) : STATE_LOADED;	\
		}										\
		free(p_);									\
		return r_;									\
	}											\
	__attribute__((unused)) qual int PFX##_commit(struct state_txn *txn_, const T *obj_)	\
	{											\
		char *p_ = NULL;								\
		ssize_t n_;									\
		int r_;										\
												\
		if (!txn_->t)									\
			return -EINVAL;								\
		if (txn_->flags & STATE_READ_ONLY)						\
			return 0;								\
		n_ = FORMAT(obj_, &p_);								\
		r_ = n_ < 0 ? (int)n_ : state_commit(txn_, p_, (size_t)n_);			\
		free(p_);									\
		return r_;									\
	}											\
	__attribute__((unused)) qual int PFX##_write(const char *dir_,				\
					     const struct state_type *t_, const T *obj_) \
	{											\
		char *p_ = NULL;								\
		ssize_t n_ = FORMAT(obj_, &p_);							\
		int r_ = n_ < 0 ? (int)n_ : state_write(dir_, t_, p_, (size_t)n_);		\
												\
		free(p_);									\
		return r_;									\
	}											\
	struct state_codec_end_##PFX

/*
 * STATE_CODEC_BOUNDED - STATE_CODEC for the common form of a module's pure pair:
 *     int PARSE(const char *payload, T *obj)		0 or -errno, @obj untouched on failure
 *     N FORMAT(const T *obj, char *buf, size_t size)	the length written, or < 0
 * with payloads of at most MAX bytes (the buffer is allocated here).
 */
#define STATE_CODEC_BOUNDED(qual, PFX, T, MAX, PARSE, FORMAT)					\
	static int PFX##_parse_bounded(const char *payload, size_t len, T *obj)			\
	{											\
		(void)len;									\
		return PARSE(payload, obj);							\
	}											\
	static ssize_t PFX##_format_bounded(const T *obj, char **ret)				\
	{											\
		char *buf = malloc(MAX);							\
		ssize_t n;									\
												\
		if (!buf)									\
			return -ENOMEM;								\
		n = (ssize_t)FORMAT(obj, buf, MAX);						\
		if (n < 0) {									\
			free(buf);								\
			return n;								\
		}										\
		*ret = buf;									\
		return n;									\
	}											\
	STATE_CODEC(qual, PFX, T, PFX##_parse_bounded, PFX##_format_bounded)

/*
 * The stamp: one number kept beside a state, in its lock file, for what changes on every run
 * while the state itself does not (check ena: when the devices were last read, for its rate
 * limit, while the counters stay put). Written in place without fsync and without a rename, so
 * it costs a write(2) where a durable state_commit() costs two fsyncs, and a crash may lose it:
 * the owner may keep only what it can afford to lose there (an earlier time makes the next run
 * do the work again), never what a verdict depends on.
 */

/*
 * state_stamp_get - the stamp @txn's lock holds (call between state_begin() and state_end()).
 * Returns 0 and sets *@ret, or -ENODATA when there is none (a new lock file, one written by
 * someone else, STATE_READ_ONLY): *@ret untouched then.
 */
int state_stamp_get(const struct state_txn *txn, uint64_t *ret);

/*
 * state_stamp_set - keep @v as @txn's stamp (nothing under STATE_READ_ONLY). Returns 0 or -errno.
 */
int state_stamp_set(struct state_txn *txn, uint64_t v);

/*
 * state_move_aside - move @dir/@name to "<name>.corrupt" and log it with @why ("a symlink",
 * "corrupt"): for files of ours that are not envelope files (the cpu-history ring, which only
 * the agent opens for writing).
 */
void state_move_aside(const char *dir, const char *name, const char *why);

/* state_not_ours - the @why for a fileio_open() error that means "not a regular file of ours"
 * (-ELOOP, -EISDIR, -EBADFD), or NULL for any other error. */
const char *state_not_ours(int err);

/* ---- raw payloads -----------------------------------------------------------------------------
 * */

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
