/* SPDX-License-Identifier: MIT */
/* The burst profiler's parts: kallsyms symbolizer, perf sample records, folding, frame choice;
 * and one real profile of a core busy reading /dev/zero (root only). */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "agent/profiler.h"
#include "cpu/folded.h"
#include "host/caps.h"
#include "host/hostfs.h"
#include "host/kallsyms.h"
#include "host/perf.h"
#include "base/util.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 1 << 16);

	assert_non_null(f);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	return buf;
}

static void test_kallsyms_parse_lookup(void **state)
{
	size_t len;
	_cleanup_free_ char *text = slurp(FIXTURES "/profile/kallsyms", &len);
	struct kallsyms ks = { 0 };
	const char *mod = NULL;

	/* 10 core text symbols + 3 module ones; data, rodata and the garbage line are skipped */
	assert_int_equal(kallsyms_parse(text, len, &ks), 13);
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81689710ULL, &mod), "memcg_numa_stat_show");
	assert_string_equal(mod, "");
	/* inside the function, at its last byte before the next symbol, not below the first */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff816896ffULL, NULL),
			    "mem_cgroup_node_nr_lru_pages");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81689711ULL, NULL), "memcg_numa_stat_show");
	assert_null(kallsyms_lookup(&ks, 0xffffffff80ffffffULL, NULL));
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffff81000000ULL, NULL), "_stext");
	/* modules keep their name; far beyond the last symbol is nobody's */
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffffc0a01234ULL, &mod), "ena_io_poll");
	assert_string_equal(mod, "ena");
	assert_string_equal(kallsyms_lookup(&ks, 0xffffffffc0b00010ULL, &mod), "nf_conntrack_in");
	assert_string_equal(mod, "nf_conntrack");
	assert_null(kallsyms_lookup(&ks, 0xffffffffc0b00000ULL + KALLSYMS_FUNC_MAX + 1, NULL));
	assert_null(kallsyms_lookup(&ks, UINT64_MAX, NULL));
	kallsyms_free(&ks);
	kallsyms_free(&ks); /* idempotent */
}

static void test_kallsyms_bad(void **state)
{
	size_t len;
	_cleanup_free_ char *text = slurp(FIXTURES "/profile/kallsyms-restricted", &len);
	struct kallsyms ks = { 0 }, keep;
	static const char *const none[] = { "", "\n\n", "zz T x\n", "ffff d data\n",
					    "ffffffffffffffff0 T too_long_address\n",
					    "ffff T\n", "ffff T x\t[\n", "ffff T x\t[]\n" };

	assert_int_equal(kallsyms_parse(text, len, &ks), -EPERM);
	keep = ks;
	for (size_t i = 0; i < ARRAY_SIZE(none); i++)
		assert_int_equal(kallsyms_parse(none[i], strlen(none[i]), &ks), -ENODATA);
	assert_memory_equal(&ks, &keep, sizeof(ks));
	/* no trailing newline, and NUL-free text not terminated: still parsed */
	assert_int_equal(kallsyms_parse("ffff T x", 8, &ks), 1);
	assert_string_equal(kallsyms_lookup(&ks, 0xffff, NULL), "x");
	kallsyms_free(&ks);
}

/* A PERF_RECORD_SAMPLE of our layout into @buf: ip, pid/tid, time, callchain with @nr entries. */
static size_t make_sample(unsigned char *buf, uint16_t misc, const uint64_t *chain, uint64_t nr)
{
	struct perf_event_header h = { PERF_RECORD_SAMPLE, misc, 0 };
	uint32_t pt[2] = { 42, 43 };
	uint64_t ip = chain && nr ? chain[nr - 1] : 0, t = 123456789012ULL;
	size_t off = sizeof(h);

	memcpy(buf + off, &ip, 8), off += 8;
	memcpy(buf + off, pt, 8), off += 8;
	memcpy(buf + off, &t, 8), off += 8;
	memcpy(buf + off, &nr, 8), off += 8;
	memcpy(buf + off, chain, nr * 8), off += nr * 8;
	h.size = (uint16_t)off;
	memcpy(buf, &h, sizeof(h));
	return off;
}

static void test_perf_sample_parse(void **state)
{
	uint64_t chain[] = { (uint64_t)PERF_CONTEXT_KERNEL, 0xffffffff81689710ULL,
			     0xffffffff816f9510ULL, 0xffffffff81000080ULL,
			     (uint64_t)PERF_CONTEXT_USER, 0x401000 };
	unsigned char buf[2048];
	struct perf_sample s;
	size_t n = make_sample(buf, PERF_RECORD_MISC_KERNEL, chain, ARRAY_SIZE(chain));

	assert_int_equal(perf_sample_parse(buf, n, &s), 0);
	assert_int_equal(s.pid, 42);
	assert_int_equal(s.tid, 43);
	assert_true(s.time_ns == 123456789012ULL);
	assert_true(s.user); /* the chain has a user context */
	assert_int_equal(s.nips, 4);  /* markers removed, frames kept leaf first */
	assert_true(s.ips[0] == 0xffffffff81689710ULL);
	/* short, lying about its size, another record type, a chain longer than the record */
	assert_int_equal(perf_sample_parse(buf, 7, &s), -EINVAL);
	assert_int_equal(perf_sample_parse(buf, n - 1, &s), -EINVAL);
	buf[0] = PERF_RECORD_LOST;
	assert_int_equal(perf_sample_parse(buf, n, &s), -EINVAL);
	buf[0] = PERF_RECORD_SAMPLE;
	{
		uint64_t big = 1000;

		memcpy(buf + 8 + 24, &big, 8);
		assert_int_equal(perf_sample_parse(buf, n, &s), -EINVAL);
	}
	/* more frames than PERF_STACK_MAX: the first ones are kept */
	{
		static uint64_t many[300];
		static unsigned char big[4096];

		for (size_t i = 0; i < ARRAY_SIZE(many); i++)
			many[i] = 0xffffffff81000000ULL + i;
		n = make_sample(big, PERF_RECORD_MISC_KERNEL, many, 300);
		assert_int_equal(perf_sample_parse(big, n, &s), 0);
		assert_int_equal(s.nips, PERF_STACK_MAX);
		assert_false(s.user);
	}
}

static void add(struct fold *f, const char *comm, uint64_t count, const char *stack)
{
	char buf[1024];
	const char *frames[64];
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (char *save = NULL, *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
		frames[n++] = t;
	assert_int_equal(fold_add(f, comm, frames, n, count), 0);
}

#define ENTRY "entry_SYSCALL_64;do_syscall_64;ksys_read;vfs_read;seq_read_iter"

static void test_fold_and_hot_frame(void **state)
{
	struct fold *f = NULL;
	char out[4096];
	struct folded_line l[8];
	struct hot_frame h;
	ssize_t len;

	assert_int_equal(fold_new(16, &f), 0);
	/* the incident's path: kubelet reading memory.numa_stat, most time below the show function */
	add(f, "kubelet", 60, ENTRY ";memcg_numa_stat_show;mem_cgroup_node_nr_lru_pages");
	add(f, "kubelet", 14, ENTRY ";memcg_numa_stat_show;seq_printf;vsnprintf");
	add(f, "kubelet", 10, ENTRY ";memcg_numa_stat_show;mem_cgroup_node_nr_lru_pages");
	add(f, "ena-poll;x\n", 16, "asm_common_interrupt;common_interrupt;ena_io_poll");
	assert_int_equal(fold_samples(f), 100);
	len = fold_format(f, out, sizeof(out));
	assert_true(len > 0);
	/* heaviest first, merged duplicates, hostile comm made safe */
	assert_int_equal(folded_parse(out, (size_t)len, l, ARRAY_SIZE(l)), 3);
	assert_int_equal(l[0].count, 70);
	assert_true(strncmp(l[0].stack, "kubelet;" ENTRY, strlen("kubelet;" ENTRY)) == 0);
	assert_non_null(strstr(out, "\nena-poll:x?;asm_common_interrupt;common_interrupt;ena_io_poll 16\n"));
	assert_int_equal(folded_hot_frame(out, (size_t)len, &h), 0);
	/* not vsnprintf, not the syscall plumbing: the function that explains 84 of 100 samples */
	assert_string_equal(h.frame, "memcg_numa_stat_show");
	assert_string_equal(h.comm, "kubelet");
	assert_int_equal(h.samples, 84);
	assert_int_equal(h.total, 100);
	fold_free(f);
}

static void test_fold_bounds(void **state)
{
	struct fold *f = NULL;
	char out[4096], small[200];
	struct hot_frame h;
	ssize_t len;
	struct folded_line l[64];
	uint64_t sum = 0;
	int n;

	assert_int_equal(fold_new(4, &f), 0);
	for (int i = 0; i < 10; i++) {
		char st[64];

		snprintf(st, sizeof(st), "entry_SYSCALL_64;fn_%d", i);
		add(f, "t", (uint64_t)(i + 1), st);
	}
	/* 4 distinct stacks kept, the rest counted as [other]: counts add up */
	len = fold_format(f, out, sizeof(out));
	n = folded_parse(out, (size_t)len, l, ARRAY_SIZE(l));
	assert_int_equal(n, 5);
	for (int i = 0; i < n; i++)
		sum += l[i].count;
	assert_int_equal(sum, 55);
	assert_non_null(strstr(out, "t;[other] "));
	/* a byte budget: whole lines, then "[truncated] N"; the sum still adds up */
	len = fold_format(f, small, 80);
	assert_true(len > 0 && len < 80);
	n = folded_parse(small, (size_t)len, l, ARRAY_SIZE(l));
	sum = 0;
	for (int i = 0; i < n; i++)
		sum += l[i].count;
	assert_int_equal(sum, 55);
	assert_non_null(strstr(small, "[truncated] "));
	assert_int_equal(fold_format(f, small, 10), -ENOBUFS);
	/* all plumbing: the heaviest stack's leaf */
	assert_int_equal(folded_hot_frame("t;entry_SYSCALL_64;vfs_read 5\nt;do_idle 3\n", 42, &h), 0);
	assert_string_equal(h.frame, "vfs_read");
	/* malformed and empty */
	assert_int_equal(folded_hot_frame("a;b\n", 4, &h), -EINVAL);
	assert_int_equal(folded_hot_frame("a;b x\n", 6, &h), -EINVAL);
	assert_int_equal(folded_hot_frame("", 0, &h), -ENODATA);
	/* counts that wrap the total are damage (fuzz_profile): not 3 samples out of 2 */
	{
		const char *wrap = "t;f 3\nt;g 18446744073709551615\n";

		assert_int_equal(folded_hot_frame(wrap, strlen(wrap), &h), -EINVAL);
	}
	assert_int_equal(folded_hot_frame("a;b 0\n", 6, &h), -ENODATA);
	fold_free(f);
}

static void add_at(struct fold *f, const char *comm, uint32_t t, const char *stack)
{
	char buf[1024];
	const char *frames[64];
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save))
		frames[n++] = p;
	assert_int_equal(fold_add_at(f, comm, frames, n, t), 0);
}

/* Each sample's time, on the line of the folded text that holds its stack. */
static void test_fold_times(void **state)
{
	struct fold *f = NULL;
	char out[4096], times[4096], small[160];
	struct folded_line l[16];
	struct folded_time t[32];
	ssize_t len, tlen;
	int n, nt;

	assert_int_equal(fold_new(16, &f), 0);
	assert_int_equal(fold_format_times(f, 1, times, sizeof(times)), 0); /* none kept */
	assert_int_equal(fold_keep_times(f, 6), 0);
	add_at(f, "cat", 5, "entry_SYSCALL_64;memcg_numa_stat_show");
	add_at(f, "cat", 25, "entry_SYSCALL_64;memcg_numa_stat_show");
	add_at(f, "dd", 30, "entry_SYSCALL_64;read_iter_zero");
	add_at(f, "cat", 1010, "entry_SYSCALL_64;memcg_numa_stat_show");
	add_at(f, "kworker", 1020, "worker_thread;process_one_work");
	add_at(f, "dd", 1500, "entry_SYSCALL_64;read_iter_zero");
	add_at(f, "dd", 1600, "entry_SYSCALL_64;read_iter_zero"); /* beyond the 6 kept; a tie with
								     * cat: by name */
	assert_int_equal(fold_samples(f), 7);
	assert_int_equal(fold_times_lost(f), 1);
	len = fold_format(f, out, sizeof(out));
	n = folded_parse(out, (size_t)len, l, ARRAY_SIZE(l));
	assert_int_equal(n, 3);
	tlen = fold_format_times(f, (size_t)n, times, sizeof(times));
	assert_true(tlen > 0);
	assert_string_equal(times, FOLDED_TIMES_HEADER "5 0\n25 0\n30 1\n1010 0\n1020 2\n1500 1\n");
	nt = folded_times_parse(times, (size_t)tlen, (size_t)n, t, ARRAY_SIZE(t));
	assert_int_equal(nt, 6);
	assert_int_equal(t[3].t_ms, 1010);
	assert_true(strncmp(l[t[3].line].stack, "cat;", 4) == 0);
	/* whole or nothing */
	assert_int_equal(fold_format_times(f, (size_t)n, small, 30), -ENOBUFS);
	assert_int_equal(fold_format_times(f, 0, small, sizeof(small)), -EINVAL);
	/* stacks cut to "[truncated]" map to its line, the last */
	len = fold_format(f, small, 150);
	n = folded_parse(small, (size_t)len, l, ARRAY_SIZE(l));
	assert_true(n >= 2 && strncmp(l[n - 1].stack, "[truncated]", 11) == 0);
	tlen = fold_format_times(f, (size_t)n, times, sizeof(times));
	nt = folded_times_parse(times, (size_t)tlen, (size_t)n, t, ARRAY_SIZE(t));
	assert_int_equal(nt, 6);
	for (int i = 0; i < nt; i++)
		assert_true(t[i].line < (uint32_t)n);
	/* bad texts: no header, a line out of range, not numbers, a day and more */
	assert_int_equal(folded_times_parse("5 0\n", 4, 3, t, 4), -EINVAL);
	assert_int_equal(folded_times_parse(FOLDED_TIMES_HEADER "5 3\n", 22, 3, t, 4), -EINVAL);
	assert_int_equal(folded_times_parse(FOLDED_TIMES_HEADER "5x 0\n", 23, 3, t, 4), -EINVAL);
	assert_int_equal(folded_times_parse(FOLDED_TIMES_HEADER "5\n", 20, 3, t, 4), -EINVAL);
	assert_int_equal(folded_times_parse(FOLDED_TIMES_HEADER "86400001 0\n", 29, 3, t, 4),
			 -EINVAL);
	/* more than @max: counted, the first stored */
	assert_int_equal(folded_times_parse(FOLDED_TIMES_HEADER "1 0\n2 0\n3 0\n", 30, 1, t, 2),
			 3);
	assert_int_equal(t[1].t_ms, 2);
	fold_free(f);
}

/* ---- the real kernel: profile a core that reads /dev/zero ---- */

static volatile int burner_stop;
/* CPU time the burner thread has had, in ms (CLOCK_THREAD_CPUTIME_ID): on a busy machine a burn
 * lasts until the burner has had the CPU it needs, not a fixed wall time, so what the profile
 * must show is measured on what the burner really ran. */
static volatile uint64_t burner_cpu_ms;
/* The longest a burn may take on a busy machine before the test gives up waiting. */
#define BURN_WALL_MAX_MS 20000

/*
 * One burn at a time on this machine, shared with tests/e2e/cpu_helpers.py: the abstract unix
 * socket name is the lock (nothing on disk; the kernel drops it if we die).
 */
static int burn_lock(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	static const char name[] = "\0cpuzombie-test-burn";
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(a.sun_path, name, sizeof(name) - 1);
	for (int i = 0; fd >= 0 && i < 600; i++) {
		if (bind(fd, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) +
							 sizeof(name) - 1) == 0)
			return fd;
		usleep(200 * 1000);
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Samples of stacks run by @comm that pass through the /dev/zero read path. */
static uint64_t zero_path_samples(const char *folded, size_t len, const char *comm)
{
	struct folded_line l[512];
	int n = folded_parse(folded, len, l, ARRAY_SIZE(l));
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		char st[4096];

		snprintf(st, sizeof(st), "%.*s", (int)l[i].len, l[i].stack);
		if (startswith(st, comm) && st[strlen(comm)] == ';' &&
		    (strstr(st, "zero") || strstr(st, "clear_user") || strstr(st, "iov_iter")))
			sum += l[i].count;
	}
	return sum;
}

static void *burner(void *arg)
{
	int cpu = *(int *)arg, fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	cpu_set_t set;
	/* 32 MiB a read: on a paravirtualized guest (PVM) every syscall's entry and exit is a
	 * kernel frame of its own (pvm_irq_enable); with 64 KiB reads it took a quarter of the
	 * samples and, on a loaded machine, left the /dev/zero path under 50 of 625 */
	static char buf[32 << 20];

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!burner_stop && fd >= 0) {
		struct timespec ts;

		if (read(fd, buf, sizeof(buf)) < 0)
			break;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
			burner_cpu_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

struct collect {
	const struct kallsyms *ks;
	struct fold *f;
	int samples;
};

static void on_sample(const struct perf_sample *s, void *ud)
{
	struct collect *c = ud;
	const char *frames[PERF_STACK_MAX + 1];
	size_t n = 0;

	for (size_t i = s->nips; i-- > 0;) { /* root first */
		const char *name = kallsyms_lookup(c->ks, s->ips[i], NULL);

		frames[n++] = name ? name : "[unknown]";
	}
	if (s->user)
		frames[n++] = "[user]";
	assert_int_equal(fold_add(c->f, "burner", frames, n, 1), 0);
	c->samples++;
}

static void test_real_profile(void **state)
{
	struct perf_cpu *p = NULL;
	struct kallsyms ks = { 0 };
	struct hostfs hf;
	struct collect c = { 0 };
	struct hot_frame h;
	pthread_t t;
	int cpu = 0, r, lock;
	_cleanup_free_ char *out = malloc(1 << 16);
	ssize_t len;

	if (geteuid() != 0) {
		print_message("SKIP test_real_profile: needs root (CAP_PERFMON) for a CPU-wide event\n");
		skip();
	}
	r = perf_cpu_open(cpu, 997, 16, &p);
	if (r == -ENOENT || r == -ENOSYS || r == -EOPNOTSUPP) {
		print_message("SKIP test_real_profile: this kernel has no perf events (%s)\n",
			      strerror(-r));
		skip();
	}
	assert_int_equal(r, 0);
	/* opened disabled: nothing mapped, nothing to drain until it starts */
	assert_false(perf_cpu_started(p));
	assert_int_equal(perf_cpu_drain(p, on_sample, &c), 0);
	assert_int_equal(perf_cpu_start(p), 0);
	assert_int_equal(perf_cpu_start(p), -EALREADY);
	assert_true(perf_cpu_started(p));
	assert_int_equal(hostfs_open(&hf, "/proc", "/sys"), 0);
	assert_true(kallsyms_load(&hf, &ks) > 1000);
	assert_int_equal(fold_new(FOLD_STACKS_MAX, &c.f), 0);
	c.ks = &ks;
	lock = burn_lock();
	assert_true(lock >= 0);
	burner_stop = 0;
	burner_cpu_ms = 0;
	assert_int_equal(pthread_create(&t, NULL, burner, &cpu), 0);
	/* 2 s (of the burner's CPU), drained like the agent does every sample */
	for (uint64_t t0 = now_monotonic_ms();
	     burner_cpu_ms < 2000 && now_monotonic_ms() - t0 < BURN_WALL_MAX_MS;) {
		usleep(250 * 1000);
		assert_true(perf_cpu_drain(p, on_sample, &c) >= 0);
	}
	assert_true(burner_cpu_ms >= 2000);
	burner_stop = 1;
	pthread_join(t, NULL);
	close(lock);
	assert_true(c.samples > 100); /* ~2000 expected at 997 Hz; a noisy neighbour costs some */
	len = fold_format(c.f, out, 1 << 16);
	assert_true(len > 0);
	assert_int_equal(folded_hot_frame(out, (size_t)len, &h), 0);
	print_message("real profile: %d samples, hot frame %s (%" PRIu64 "/%" PRIu64 ")\n",
		      c.samples, h.frame, h.samples, h.total);
	/* the burner's samples are on the /dev/zero read path (read_iter_zero on 6.x, read_zero or
	 * its helpers elsewhere); whatever else ran on the core is there too, under its own name */
	assert_true(zero_path_samples(out, (size_t)len, "burner") >= 50);
	{
		uint64_t en = 0, run = 0;

		/* it ran on its CPU all the time it was enabled (a dead event would not) */
		assert_int_equal(perf_cpu_times(p, &en, &run), 0);
		assert_true(en >= 2000000000ull && run == en);
	}
	perf_cpu_stop(p);
	assert_false(perf_cpu_started(p));
	perf_cpu_stop(p); /* twice is fine */
	assert_int_equal(perf_cpu_set_hz(p, 0), -EINVAL);
	assert_int_equal(perf_cpu_set_hz(p, 199), 0);
	fold_free(c.f);
	kallsyms_free(&ks);
	hostfs_close(&hf);
	perf_cpu_close(p);
}

#define CHILD_CHECK(cond)                                                                      \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			_exit(1);                                                              \
		}                                                                              \
	} while (0)

/* In a child: events opened and kallsyms loaded, every capability dropped, then a profile. */
static void profile_after_drop(int cpu)
{
	struct profiler_opts o = { .hz = 499, .max_ms = 30000 }, o2 = o;
	int nonline = (int)sysconf(_SC_NPROCESSORS_ONLN), r;
	struct profiler *p = NULL;
	struct caps_state after;
	struct perf_cpu *pc = NULL;
	struct hostfs hf;
	pthread_t t;
	uint64_t t0, burned;
	_cleanup_free_ char *out = malloc(1 << 16);
	ssize_t len;

	CHILD_CHECK(hostfs_open(&hf, "/proc", "/sys") == 0);
	/* two CPU slots past the last one there is: no event for them, and the reason stays */
	CHILD_CHECK(profiler_new(&hf, (unsigned)nonline + 2, &o, &p) == 0);
	CHILD_CHECK(profiler_open(p) == nonline);
	CHILD_CHECK(profiler_preload(p) == 0);
	CHILD_CHECK(caps_drop(0, &after) == 0);
	CHILD_CHECK(after.eff == 0 && after.prm == 0 && after.inh == 0 && after.amb == 0);
	CHILD_CHECK(after.bnd == 0 && after.nnp);
	/* no new event now: the ones opened before are all there is */
	CHILD_CHECK(perf_cpu_open(cpu, 99, 16, &pc) == -EACCES);
	o2.hz = 997; /* a reload's new rate, on the open events */
	CHILD_CHECK(profiler_set_opts(p, &o2) == 0);
	CHILD_CHECK(profiler_cpu_error(p, (unsigned)cpu) == 0);
	r = profiler_cpu_error(p, (unsigned)nonline + 1);
	CHILD_CHECK(r == -EINVAL || r == -ENODEV);
	CHILD_CHECK(profiler_start(p, (unsigned)nonline + 1, 1) == r); /* not opened again */
	CHILD_CHECK(streq(profiler_strerror(r), "CPU offline when the agent opened its perf events"));
	t0 = now_monotonic_ms();
	CHILD_CHECK(profiler_start(p, (unsigned)cpu, t0) == 1);
	burner_stop = 0;
	burner_cpu_ms = 0;
	CHILD_CHECK(pthread_create(&t, NULL, burner, &cpu) == 0);
	pthread_setname_np(t, "cz-burner");
	do {
		usleep(250 * 1000);
		burned = now_monotonic_ms() - t0;
		profiler_tick(p, t0 + burned);
	} while ((burned < 1000 || burner_cpu_ms < 500) && burned < BURN_WALL_MAX_MS);
	burner_stop = 1;
	pthread_join(t, NULL);
	CHILD_CHECK(burner_cpu_ms >= 500);
	CHILD_CHECK(profiler_cpu_error(p, (unsigned)cpu) == 0); /* it ran: alive */
	len = profiler_stop(p, (unsigned)cpu, true, out, 1 << 16);
	CHILD_CHECK(len > 0);
	/* kernel symbols, read at start with CAP_SYSLOG, still name the frames */
	CHILD_CHECK(zero_path_samples(out, (size_t)len, "cz-burner") >= 50);
	/* and again: the event is reused */
	CHILD_CHECK(profiler_start(p, (unsigned)cpu, now_monotonic_ms()) == 1);
	CHILD_CHECK(profiler_stop(p, (unsigned)cpu, false, out, 1 << 16) == 0);
	profiler_free(p);
	hostfs_close(&hf);
	_exit(0);
}

/* The agent's order: open, preload, drop every capability, then profile: the profile works. */
static void test_real_profiler_after_drop(void **state)
{
	int cpu = 1 % (int)sysconf(_SC_NPROCESSORS_ONLN), st = -1, lock;
	struct perf_cpu *pc = NULL;
	pid_t pid;

	if (geteuid() != 0) {
		print_message("SKIP test_real_profiler_after_drop: needs root (CAP_PERFMON)\n");
		skip();
	}
	if (perf_cpu_open(cpu, 99, 16, &pc) < 0) {
		print_message("SKIP test_real_profiler_after_drop: no perf events\n");
		skip();
	}
	perf_cpu_close(pc);
	lock = burn_lock();
	assert_true(lock >= 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		profile_after_drop(cpu);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(lock);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The agent's profiler on the same burner: start, tick, stop; the guards around it. */
static void test_real_profiler(void **state)
{
	struct profiler_opts o = { .hz = 499, .max_ms = 30000 };
	struct profiler *p = NULL;
	uint64_t t0, burned;
	struct hostfs hf;
	struct hot_frame h;
	pthread_t t;
	int cpu = 1 % (int)sysconf(_SC_NPROCESSORS_ONLN), r, lock;
	_cleanup_free_ char *out = malloc(1 << 16);
	char tiny[8];
	ssize_t len;

	if (geteuid() != 0) {
		print_message("SKIP test_real_profiler: needs root (CAP_PERFMON)\n");
		skip();
	}
	assert_int_equal(hostfs_open(&hf, "/proc", "/sys"), 0);
	assert_int_equal(profiler_new(&hf, (unsigned)cpu + 1, &o, &p), 0);
	r = profiler_start(p, (unsigned)cpu, 1000);
	if (r == -ENOSYS || r == -ENOENT) {
		print_message("SKIP test_real_profiler: %s\n", profiler_strerror(r));
		skip();
	}
	assert_int_equal(r, 1);
	assert_int_equal(profiler_start(p, (unsigned)cpu, 1100), 0); /* already running */
	assert_int_equal(profiler_start(p, (unsigned)cpu + 5, 1100), -ENODEV);
	assert_true(profiler_running(p, (unsigned)cpu));
	lock = burn_lock();
	assert_true(lock >= 0);
	burner_stop = 0;
	assert_int_equal(pthread_create(&t, NULL, burner, &cpu), 0);
	pthread_setname_np(t, "cz-burner");
	for (int i = 0; i < 6; i++) {
		usleep(250 * 1000);
		profiler_tick(p, 1000 + 250 * (uint64_t)(i + 1));
	}
	burner_stop = 1;
	pthread_join(t, NULL);
	assert_int_equal(profiler_stop(p, (unsigned)cpu, true, tiny, sizeof(tiny)), -ENOBUFS);
	/* a stopped profile is gone: start again, and this time keep it */
	assert_false(profiler_running(p, (unsigned)cpu));
	assert_int_equal(profiler_stop(p, (unsigned)cpu, true, out, 1 << 16), -ENOENT);
	t0 = now_monotonic_ms(); /* the agent's clock: sample times count from here */
	assert_int_equal(profiler_start(p, (unsigned)cpu, t0), 1);
	burner_stop = 0;
	burner_cpu_ms = 0;
	assert_int_equal(pthread_create(&t, NULL, burner, &cpu), 0);
	pthread_setname_np(t, "cz-burner");
	/* a second at least, and until the burner has had 0.5 s of CPU */
	do {
		usleep(250 * 1000);
		burned = now_monotonic_ms() - t0;
		profiler_tick(p, t0 + burned);
	} while ((burned < 1000 || burner_cpu_ms < 500) && burned < BURN_WALL_MAX_MS);
	assert_true(burner_cpu_ms >= 500);
	burner_stop = 1;
	pthread_join(t, NULL);
	close(lock);
	/* every sample's time, within the second it ran, on the line of its stack */
	profiler_drain(p, (unsigned)cpu);
	len = profiler_peek(p, (unsigned)cpu, out, 1 << 16);
	assert_true(len > 0);
	{
		_cleanup_free_ char *times = malloc(1 << 17);
		_cleanup_free_ struct folded_time *ft = calloc(1 << 14, sizeof(*ft));
		struct folded_line l[FOLD_STACKS_MAX + 2];
		int nl = folded_parse(out, (size_t)len, l, ARRAY_SIZE(l)), nt;
		ssize_t tlen = profiler_times(p, (unsigned)cpu, (size_t)nl, times, 1 << 17);
		uint64_t sum = 0;

		assert_true(tlen > 0);
		nt = folded_times_parse(times, (size_t)tlen, (size_t)nl, ft, 1 << 14);
		for (int i = 0; i < nl; i++)
			sum += l[i].count;
		assert_int_equal((uint64_t)nt, sum);
		for (int i = 0; i < nt; i++)
			assert_true(ft[i].t_ms < burned + 2000);
		assert_true(ft[nt - 1].t_ms >= burned / 2); /* they spread over the burn */
	}
	len = profiler_stop(p, (unsigned)cpu, true, out, 1 << 16);
	assert_true(len > 0);
	assert_int_equal(folded_hot_frame(out, (size_t)len, &h), 0);
	print_message("profiler: hot %s in %s (%" PRIu64 "/%" PRIu64 ")\n", h.frame, h.comm,
		      h.samples, h.total);
	assert_true(zero_path_samples(out, (size_t)len, "cz-burner") >= 50);
	/* thrown away when the run never became a burst */
	assert_int_equal(profiler_start(p, (unsigned)cpu, 7000), 1);
	assert_int_equal(profiler_stop(p, (unsigned)cpu, false, out, 1 << 16), 0);
	profiler_free(p);
	/* the cap on cores profiled at once */
	o.max_active = 1;
	assert_int_equal(profiler_new(&hf, 2, &o, &p), 0);
	assert_int_equal(profiler_start(p, 0, 1), 1);
	assert_int_equal(profiler_start(p, 1, 1), -EBUSY);
	assert_int_equal(profiler_stop(p, 0, false, out, 1 << 16), 0);
	assert_int_equal(profiler_start(p, 1, 2), 1);
	profiler_free(p);
	hostfs_close(&hf);
	assert_string_equal(profiler_strerror(-EACCES), "no CAP_PERFMON (CAP_SYS_ADMIN before 5.8)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms_parse_lookup), cmocka_unit_test(test_kallsyms_bad),
		cmocka_unit_test(test_perf_sample_parse),     cmocka_unit_test(test_fold_and_hot_frame),
		cmocka_unit_test(test_fold_times),
		cmocka_unit_test(test_fold_bounds),	      cmocka_unit_test(test_real_profile),
		cmocka_unit_test(test_real_profiler),
		cmocka_unit_test(test_real_profiler_after_drop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
