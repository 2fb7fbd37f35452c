/* SPDX-License-Identifier: MIT */
/*
 * The three callers of a check agree (node/check_run.h): `check cpu` as NPD runs it
 * (cmd_check, its one stdout line and exit code), the agent's cycle (check_run_conditions) and
 * the agent's trigger (trigger_run_checks) give the same status and message for the same node
 * and the same history of its condition: OK, a problem, a problem held by recover_after,
 * Unknown when /proc/stat is missing (-ENOENT), and the check's own word when the
 * recover_after state cannot be kept.
 */
#include <fcntl.h>
#include <unistd.h>

#include "testutil.h"
#include "agent/trigger.h"
#include "base/config.h"
#include "base/util.h"
#include "cmd/cmd.h"
#include "cpu/history.h"
#include "node/check_run.h"

enum node_is { NODE_OK, NODE_BURST, NODE_NO_SAMPLER };

enum caller { BY_CHECK, BY_CYCLE, BY_TRIGGER, NCALLERS };
static const char *const caller_name[NCALLERS] = { "check", "cycle", "trigger" };

struct tree {
	char top[64];
	char proc[128], sys[128], run[128], cfg[128], out[128];
	char state[NCALLERS][128]; /* each caller keeps its own recover_after state */
};

static void tree_make(struct tree *t, bool bad_state)
{
	FILE *f;

	tmptree_make(t->top, sizeof(t->top), "check-run");
	snprintf(t->proc, sizeof(t->proc), "%s/proc", t->top);
	snprintf(t->sys, sizeof(t->sys), "%s/sys", t->top);
	snprintf(t->run, sizeof(t->run), "%s/run", t->top);
	snprintf(t->cfg, sizeof(t->cfg), "%s/cz.yaml", t->top);
	snprintf(t->out, sizeof(t->out), "%s/stdout", t->top);
	assert_int_equal(mkdir(t->proc, 0700), 0); /* no stat: inline sampling cannot start */
	assert_int_equal(mkdir(t->sys, 0700), 0);
	assert_int_equal(mkdir(t->run, 0700), 0);
	f = fopen(t->cfg, "w");
	assert_non_null(f);
	fputs("cpu:\n  recover_after: 1h\n", f);
	assert_int_equal(fclose(f), 0);
	for (int by = 0; by < NCALLERS; by++) {
		if (bad_state) { /* under a regular file: the state can never be kept */
			char file[96];

			snprintf(file, sizeof(file), "%s/file-%d", t->top, by);
			f = fopen(file, "w");
			assert_non_null(f);
			assert_int_equal(fclose(f), 0);
			snprintf(t->state[by], sizeof(t->state[by]), "%s/state", file);
		} else {
			snprintf(t->state[by], sizeof(t->state[by]), "%s/state-%d", t->top, by);
		}
	}
}

/* The run dir as the agent left it: a fresh heartbeat (and a burst), or nothing. */
static void node_set(const struct tree *t, enum node_is is)
{
	struct cz_config cfg;
	struct heartbeat hb = { 0 };
	uint64_t now = now_realtime_ms();
	char path[160];

	config_defaults(&cfg);
	snprintf(path, sizeof(path), "%s/%s", t->run, HISTORY_HEARTBEAT);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/%s", t->run, HISTORY_BURSTS);
	(void)unlink(path);
	if (is == NODE_NO_SAMPLER)
		return;
	hb = (struct heartbeat){ .pid = getpid(), .time_ms = now,
				 .interval_ms = cfg.cpu.interval_ms, .metric = cfg.cpu.metric,
				 .ncpu = 2 };
	assert_int_equal(heartbeat_write(t->run, &hb), 0);
	if (is == NODE_BURST) {
		struct burst_event ev = { .cpu = 1, .start_ms = now - 8000, .end_ms = now - 4000,
					  .peak_pct = 100, .mean_pct = 98,
					  .metric = cfg.cpu.metric };

		assert_int_equal(burst_log_append(t->run, &ev), 0);
	}
}

/* `cpuzombie check cpu` with the tree's options: its exit code, and its line into @msg. */
static int by_check(const struct tree *t, int by, char *msg, size_t size)
{
	static struct cmd_env env;
	const char *const words[] = { "check", "cpu", "--config", t->cfg, "--proc-root", t->proc,
				      "--sys-root", t->sys, "--run-dir", t->run, "--state-dir",
				      t->state[by] };
	char buf[ARRAY_SIZE(words)][160], *argv[ARRAY_SIZE(words) + 1];
	int saved, fd, rc;
	FILE *f;

	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		snprintf(buf[i], sizeof(buf[i]), "%s", words[i]);
		argv[i] = buf[i];
	}
	argv[ARRAY_SIZE(words)] = NULL;
	memset(&env, 0, sizeof(env));
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(t->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
	rc = cmd_check((int)ARRAY_SIZE(words), argv, &env);
	fflush(stdout);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	close(fd);
	if (env.hf_open)
		hostfs_close(&env.ctx.hf);
	f = fopen(t->out, "r");
	assert_non_null(f);
	assert_non_null(fgets(msg, (int)size, f));
	assert_int_equal(fgetc(f), EOF); /* one line */
	fclose(f);
	assert_true(msg[0] && msg[strlen(msg) - 1] == '\n');
	msg[strlen(msg) - 1] = '\0';
	return rc;
}

/* The agent's cycle or its trigger on the same tree: check cpu's status, its message in @msg. */
static int by_agent(const struct tree *t, int by, char *msg, size_t size)
{
	static struct cz_ctx ctx;
	static struct check_run_seen seen;
	struct cz_overrides ov = { .config = t->cfg, .proc = t->proc, .sys = t->sys,
				   .state = t->state[by], .run = t->run };
	const char *names[8], *path;
	struct npd_result res[8];
	char errs[1024];
	size_t n, i;

	memset(&ctx, 0, sizeof(ctx));
	assert_int_equal(config_load_effective(&ov, &ctx.cfg, &path, errs, sizeof(errs)), 0);
	assert_int_equal(hostfs_open(&ctx.hf, ctx.cfg.paths.proc, ctx.cfg.paths.sys), 0);
	if (by == BY_CYCLE) {
		check_run_seen_begin(&seen, true);
		n = check_run_conditions(&ctx, &seen, names, res, ARRAY_SIZE(res));
		/* the condition's state as the run stepped it, for the cycle's metrics */
		for (i = 0; i < seen.recovery.n && !streq(seen.recovery.c[i].check, "cpu"); i++)
			;
		assert_true(i < seen.recovery.n);
		check_run_seen_free(&seen);
	} else {
		n = trigger_run_checks(&ctx, TRIGGER_CPU, names, res);
		assert_int_equal(n, 1);
	}
	hostfs_close(&ctx.hf);
	for (i = 0; i < n && !streq(names[i], "cpu"); i++)
		;
	assert_true(i < n);
	snprintf(msg, size, "%s", res[i].msg);
	return (int)res[i].status;
}

struct step {
	enum node_is node;
	int status;
	const char *starts; /* the message starts so */
};

/* Each step of @steps in turn on one tree, asked of every caller: all agree, as expected. */
static void agree(const struct step *steps, size_t n, bool bad_state)
{
	struct tree t;

	tree_make(&t, bad_state);
	for (size_t i = 0; i < n; i++) {
		char msg[NCALLERS][NPD_MSG_MAX];
		int st[NCALLERS];

		node_set(&t, steps[i].node);
		for (int by = 0; by < NCALLERS; by++) {
			st[by] = by == BY_CHECK ? by_check(&t, by, msg[by], sizeof(msg[by]))
						: by_agent(&t, by, msg[by], sizeof(msg[by]));
			if (st[by] != steps[i].status || !startswith(msg[by], steps[i].starts))
				fail_msg("step %zu, %s: status %d '%s', expected %d '%s...'", i,
					 caller_name[by], st[by], msg[by], steps[i].status,
					 steps[i].starts);
		}
		for (int by = 1; by < NCALLERS; by++)
			if (st[by] != st[0] || !streq(msg[by], msg[0]))
				fail_msg("step %zu: %s says %d '%s', check says %d '%s'", i,
					 caller_name[by], st[by], msg[by], st[0], msg[0]);
	}
	tmptree_remove(t.top);
}

static void test_ok(void **state)
{
	static const struct step s[] = { { NODE_OK, NPD_OK, "no core >= " } };

	(void)state;
	agree(s, ARRAY_SIZE(s), false);
}

static void test_problem_then_held_by_recover_after(void **state)
{
	static const struct step s[] = {
		{ NODE_BURST, NPD_PROBLEM, "cpu1 " },
		{ NODE_OK, NPD_PROBLEM, "recovering: OK for 0s of recover_after 1h; no core >= " },
	};

	(void)state;
	agree(s, ARRAY_SIZE(s), false);
}

static void test_unknown_without_proc_stat(void **state)
{
	/* no sampler and no /proc/stat to sample inline: -ENOENT, Unknown, never a problem; it
	 * restarts recover_after's clock but does not clear the held condition */
	static const struct step s[] = {
		{ NODE_NO_SAMPLER, NPD_UNKNOWN, "cannot sample '" },
		{ NODE_BURST, NPD_PROBLEM, "cpu1 " },
		{ NODE_NO_SAMPLER, NPD_UNKNOWN, "cannot sample '" },
		{ NODE_OK, NPD_PROBLEM, "recovering: OK for 0s of recover_after 1h; " },
	};

	(void)state;
	agree(s, ARRAY_SIZE(s), false);
}

static void test_state_that_cannot_be_kept_leaves_the_checks_word(void **state)
{
	static const struct step s[] = {
		{ NODE_BURST, NPD_PROBLEM, "cpu1 " },
		{ NODE_OK, NPD_OK, "no core >= " },
	};

	(void)state;
	agree(s, ARRAY_SIZE(s), true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_problem_then_held_by_recover_after),
		cmocka_unit_test(test_unknown_without_proc_stat),
		cmocka_unit_test(test_state_that_cannot_be_kept_leaves_the_checks_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
