/* SPDX-License-Identifier: MIT */
/*
 * The agent's /dev/kmsg follower (kmsg_follow.h): non-blocking reads, facility 0 only, resume by
 * sequence number, recognized events into the run dir's kernel-event log.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>

#include "agent/kmsg_follow.h"
#include "klog/kevents.h"
#include "ena/klog_incident.h"
#include "base/log.h"
#include "base/state.h"
#include "base/util.h"

#define READS_PER_POLL 256	/* records per poll: a flood is spread over several polls */
#define RECORD_MAX 8192		/* a /dev/kmsg read must hold a whole record (else -EINVAL) */
#define SEQ_SAVE_MS 10000	/* the resume point alone is saved at most this often */

struct kmsg_follow {
	int fd;
	char path[CZ_PATH_MAX];
	char run[CZ_PATH_MAX];
	char buf[2 * RECORD_MAX];
	size_t have;
	int64_t boot_wall_ms; /* CLOCK_REALTIME - CLOCK_MONOTONIC: a record's usec to wall */
	bool dirty_events, dirty_seq;
	uint64_t saved_ms;		/* monotonic */
	bool read_err_logged, save_err_logged;
	uint64_t foreign;		/* records of other facilities, skipped */
	struct kevents k;
};

static void read_boot_id(const struct cz_ctx *ctx, char *buf, size_t size)
{
	ssize_t n = hostfs_read(&ctx->hf, HOSTFS_PROC, "sys/kernel/random/boot_id", buf, size);

	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!valid_name(buf, size - 1))
		buf[0] = '\0';
}

int kmsg_follow_open(const struct cz_ctx *ctx, struct kmsg_follow **ret)
{
	_cleanup_free_ struct kmsg_follow *f = NULL;
	char boot[sizeof(f->k.boot_id)];
	int r;

	if (!ctx->cfg.agent.kmsg[0]) {
		*ret = NULL;
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	snprintf(f->path, sizeof(f->path), "%s", ctx->cfg.agent.kmsg);
	snprintf(f->run, sizeof(f->run), "%s", ctx->cfg.paths.run);
	r = kevents_state_read(f->run, &kevents_state, &f->k);
	if (r < 0)
		return r;
	if (r != STATE_LOADED)
		memset(&f->k, 0, sizeof(f->k));
	read_boot_id(ctx, boot, sizeof(boot));
	if (!streq(boot, f->k.boot_id)) {
		/* another boot (or an unknown one): its sequence numbers start over */
		f->k.have_seq = false;
		memcpy(f->k.boot_id, boot, sizeof(boot));
		f->dirty_seq = true;
	}
	f->fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (f->fd < 0)
		return -errno;
	f->boot_wall_ms = (int64_t)now_realtime_ms() - (int64_t)now_monotonic_ms();
	*ret = TAKE_PTR(f);
	return 0;
}

static int save(struct kmsg_follow *f)
{
	/* locked, atomic, not fsync'ed */
	int r = kevents_state_write(f->run, &kevents_state, &f->k);

	if (r == 0) {
		f->dirty_events = f->dirty_seq = false;
		f->saved_ms = now_monotonic_ms();
	}
	return r;
}

/* One record line; returns 1 when an event was kept. */
static int take_record(struct kmsg_follow *f, const char *line, size_t len)
{
	struct kmsg_record rec;
	struct klog_event e;
	uint64_t t_ms;
	char d[256];

	if (len == 0 || line[0] == ' ' || kmsg_parse_record(line, len, &rec) < 0)
		return 0; /* a " KEY=value" dictionary line, or not a record */
	if (f->k.have_seq && rec.seq < f->k.next_seq)
		return 0; /* read before this agent restarted */
	if (f->k.have_seq && rec.seq > f->k.next_seq)
		f->k.lost += rec.seq - f->k.next_seq;
	f->k.next_seq = rec.seq + 1;
	f->k.have_seq = true;
	f->dirty_seq = true;
	if (rec.facility != 0) {
		f->foreign++; /* written from user space: never evidence */
		return 0;
	}
	if (klog_parse_message(rec.msg, rec.msg_len, NULL, 0, &e) != 1)
		return 0;
	t_ms = (uint64_t)(f->boot_wall_ms + (int64_t)(rec.usec / 1000));
	if (!kevents_record(&f->k, &e, t_ms, rec.seq, rec.msg, rec.msg_len))
		return 0;
	f->dirty_events = true;
	log_notice("kernel: %s", klog_event_describe(&e, d, sizeof(d)));
	return 1;
}

/* Split what was read into lines; keeps an unfinished line for the next read (FIFOs). */
static int take_buffer(struct kmsg_follow *f)
{
	size_t start = 0;
	int kept = 0;

	for (size_t i = 0; i < f->have; i++)
		if (f->buf[i] == '\n') {
			kept += take_record(f, f->buf + start, i - start);
			start = i + 1;
		}
	if (start == 0 && f->have == sizeof(f->buf))
		start = f->have; /* a line longer than any record: drop it */
	memmove(f->buf, f->buf + start, f->have - start);
	f->have -= start;
	return kept;
}

int kmsg_follow_poll(struct kmsg_follow *f)
{
	int kept = 0, r = 0;

	if (!f)
		return 0;
	for (int i = 0; i < READS_PER_POLL; i++) {
		ssize_t n = read(f->fd, f->buf + f->have, sizeof(f->buf) - f->have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			/* overwritten under us: the next read goes on from the oldest */
			f->k.overruns++;
			f->dirty_seq = true;
			continue;
		}
		if (n < 0 && errno != EAGAIN && !f->read_err_logged) {
			log_warning_errno(errno, "Failed to read '%s': %m, ignoring", f->path);
			f->read_err_logged = true;
		}
		if (n <= 0)
			break; /* nothing new (EAGAIN), or a FIFO without a writer (0) */
		f->have += (size_t)n;
		kept += take_buffer(f);
	}
	if (f->dirty_events || (f->dirty_seq && now_monotonic_ms() - f->saved_ms >= SEQ_SAVE_MS))
		r = save(f);
	if (r < 0 && !f->save_err_logged) {
		log_warning_errno(r, "Failed to save '%s/%s': %m, ignoring", f->run,
				  RUN_KERNEL_EVENTS);
		f->save_err_logged = true;
	}
	return r < 0 ? r : kept;
}

void kmsg_follow_free(struct kmsg_follow *f)
{
	if (!f)
		return;
	if (f->dirty_events || f->dirty_seq)
		(void)save(f);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}
