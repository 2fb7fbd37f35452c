/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the typed state store end to end, as a reader and as a writer meet a file on disk.
 * The first byte picks the state (memcg history, ENA, canary, the agent's burst log and
 * heartbeat, the reclaim state) and whether the rest is wrapped in a valid envelope (so the checksum is no barrier)
 * or written raw (torn and foreign files). The file goes through state_read() (lock-free, must
 * leave the file alone) and then state_begin() (must move a bad file aside and leave nothing but
 * a good file or none); a state that loads formats and loads again to the same object text.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/state.h"
#include "base/util.h"
#include "memcg/canary.h"
#include "ena/ena.h"
#include "cpu/history.h"
#include "memcg/memcg.h"
#include "memcg/reclaim.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static char dir[64];

static void put(const char *name, const unsigned char *p, size_t n, int wrap)
{
	char path[128], head[96], tail[16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f)
		__builtin_trap();
	if (wrap) {
		snprintf(head, sizeof(head), "cpuzombie-state 1 %s\n", name);
		snprintf(tail, sizeof(tail), "end %08x\n", state_crc32(p, n));
		fputs(head, f);
	}
	fwrite(p, 1, n, f);
	if (wrap)
		fputs(tail, f);
	fclose(f);
}

static void clean(void)
{
	static const char *const names[] = { STATE_MEMCG, STATE_ENA, STATE_CANARY, RUN_CPU_BURSTS,
					     RUN_CPU_HEARTBEAT, STATE_RECLAIM };
	char path[128];

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		for (int k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "%s/%s%s", dir, names[i],
				 k == 0 ? "" : k == 1 ? ".lock" : ".corrupt");
			unlink(path);
		}
}

static void check_left(const char *name, int begin_status)
{
	char path[128];
	struct stat st;

	/* after a writer: a discarded file is gone from the name (kept as .corrupt) */
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (begin_status == STATE_DISCARDED && lstat(path, &st) == 0)
		__builtin_trap();
}

/* one state through its owner's typed calls (the STATE_CODEC of PFX, state.h) */
#define one(PFX, t, a, b, p, n, wrap)								\
	do {											\
		_cleanup_(state_end) struct state_txn txn_ = STATE_TXN_INIT;			\
		int r_;										\
												\
		put((t)->name, p, n, wrap);							\
		r_ = PFX##_read(dir, t, a);							\
		if (r_ == STATE_DISCARDED) /* readers report errors, never "discarded" */	\
			__builtin_trap();							\
		r_ = PFX##_begin(&txn_, dir, t, b);						\
		if (r_ < 0 && r_ != -ENOMEM)							\
			__builtin_trap(); /* the dir is ours and writable: only the file */	\
		check_left((t)->name, r_);							\
		if (r_ == STATE_LOADED && PFX##_commit(&txn_, b) < 0)				\
			__builtin_trap();							\
	} while (0)

static void remove_dir(void)
{
	clean();
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct memcg_history ha, hb;
	static struct canary_result ca, cb;
	static struct heartbeat hba;
	static struct burst_event ev[8];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/cz-fuzz-state-%ld", (long)getpid());
		if (mkdir(dir, 0700) < 0)
			__builtin_trap();
		atexit(remove_dir);
	}
	if (size < 1)
		return 0;
	clean();
	switch (data[0] % 6) {
	case 0:
		one(memcg_history_state, &memcg_history_state, &ha, &hb, data + 1, size - 1, data[0] & 0x80);
		break;
	case 1: {
		struct ena_state a = { 0 }, b = { 0 };

		one(ena_state, &ena_reset_state, &a, &b, data + 1, size - 1, data[0] & 0x80);
		ena_state_free(&a);
		ena_state_free(&b);
		break;
	}
	case 2:
		one(canary_state, &canary_state, &ca, &cb, data + 1, size - 1, data[0] & 0x80);
		break;
	case 3:
		put(RUN_CPU_BURSTS, data + 1, size - 1, data[0] & 0x80);
		if (burst_log_read(dir, 0, ev, ARRAY_SIZE(ev)) > (int)ARRAY_SIZE(ev))
			__builtin_trap();
		break;
	case 4: {
		/* the reclaim state: what loads formats and loads again to the same object */
		struct reclaim_state a = { 0 }, b = { 0 }, c = { 0 };
		_cleanup_free_ char *text = NULL, *again = NULL;
		ssize_t n, m;

		one(reclaim_state, &reclaim_state_type, &a, &b, data + 1, size - 1, data[0] & 0x80);
		n = reclaim_state_format(&b, &text);
		if (n < 0 || reclaim_state_parse(text, (size_t)n, &c) != 0)
			__builtin_trap();
		m = reclaim_state_format(&c, &again);
		if (m != n || memcmp(text, again, (size_t)n) != 0)
			__builtin_trap();
		break;
	}
	default:
		put(RUN_CPU_HEARTBEAT, data + 1, size - 1, data[0] & 0x80);
		(void)heartbeat_read(dir, &hba);
		break;
	}
	return 0;
}
