/* SPDX-License-Identifier: MIT */
/*
 * `cpuzombie ena-diff BEFORE AFTER`: the ENA verdict from two saved `ethtool -S` texts (what
 * SREs paste into tickets), with one line of explanation per counter that moved.
 *
 *   ena-diff BEFORE AFTER   two files
 *   ena-diff BEFORE -       AFTER read now through SIOCETHTOOL (the interfaces named in BEFORE)
 *   ena-diff - [IF...]      print the live counters as `ethtool -i` + `ethtool -S` text (every
 *                           interface of ena.drivers, or the ones named): the input format
 *
 * Exit 0 no reset or risk, 1 reset or risk found (counters that went down between the dumps
 * count from their new value), 2 bad input, I/O error or no verdict possible.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>

#include "cmd/cmd.h"
#include "ena/check_ena.h"
#include "ena/ena.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/textsafe.h"
#include "base/util.h"

const char cmd_ena_diff_usage[] =
	"ena-diff BEFORE AFTER | ena-diff BEFORE - | ena-diff - [IF...]\n"
	"    ENA verdict from two saved `ethtool -S` texts (AFTER '-': read now); exit 0 no\n"
	"    reset, 1 reset or risk (counters that went down count from their new value),\n"
	"    2 bad input or no verdict. '- [IF...]' prints the live counters instead.\n";

/* The options of `ena-diff` (cmd_ena_diff), and the words after them. */
struct ena_diff_opts {
	int argc;
	char **argv;
};

#define TEXT_MAX (8u << 20)

static int read_text(const char *path, struct ethtool_devdump **ret, size_t *ret_n)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	struct ethtool_text_error e;
	size_t len = 0;
	int r;

	/* a pipe is fine (`ena-diff <(ethtool -S eth0) after.txt`): opened without blocking,
	 * then read to its end */
	fd = fileio_open(AT_FDCWD, path, FILEIO_BLOCKING_READ);
	if (fd < 0)
		return log_error_errno(fd, "Failed to open '%s': %m", path);
	r = fileio_read_alloc_fd(fd, TEXT_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "Failed to read '%s': %m", path);
	r = ethtool_parse_text(buf, len, ret, ret_n, &e);
	if (r < 0) {
		if (e.line)
			log_error("%s:%u: %s", path, e.line, e.what);
		else
			log_error("%s: %s", path, e.what);
	}
	return r;
}

/* Read the live devices: the ones named, else every interface of ena.drivers. */
static int read_live(struct cz_ctx *ctx, char **names, size_t n_names, struct ethtool_devdump **ret,
		     size_t *ret_n)
{
	static struct ena_devices devs; /* large: keep it off the stack */
	struct ethtool_ops ops;
	int r = ethtool_ops_kernel(&ops);

	if (r < 0)
		return log_error_errno(r, "Failed to open a socket for SIOCETHTOOL: %m");
	r = ena_read_devices(&ctx->cfg, &ops, names, n_names, &devs);
	ethtool_ops_kernel_close(&ops);
	if (r < 0)
		return log_error_errno(r, "Failed to list interfaces: %m");
	if (devs.failed) {
		log_error_errno(devs.first_err, "Failed to read '%s': %m", devs.failed_if);
		ena_devices_free(&devs);
		return devs.first_err;
	}
	*ret = calloc(devs.n ? devs.n : 1, sizeof(**ret));
	if (!*ret) {
		ena_devices_free(&devs);
		return -ENOMEM;
	}
	memcpy(*ret, devs.d, devs.n * sizeof(devs.d[0]));
	*ret_n = devs.n;
	devs.n = 0; /* ownership moved */
	return 0;
}

static void explain(const struct ena_counter *c)
{
	if (c->went_down)
		printf("  %s %" PRIu64 " -> %" PRIu64
		       " (went down: counted from its new value): %s\n",
		       c->name, c->prev, c->cur, ena_explain(c->name));
	else
		printf("  %s +%" PRIu64 " (%" PRIu64 " -> %" PRIu64 "): %s\n", c->name, c->delta,
		       c->prev, c->cur, ena_explain(c->name));
}

/* Counters both dumps have: none means two different kinds of dump (another driver, another
 * tool's text), and "no reset" would be a verdict about nothing. */
static bool has_common_counter(const struct ethtool_devdump *b, const struct ethtool_devdump *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (ethtool_dump_find_near(b, a->stats[i].name, i))
			return true;
	return false;
}

/* Print the verdict for one pair; returns 1 when it found a reset or a risk, 0 when not,
 * -EINVAL when the pair has no counter in common and -ENODATA when the counters went down
 * between the dumps and nothing moved after (no verdict: both logged). */
static int verdict(struct cz_ctx *ctx, const struct ethtool_devdump *b,
		    const struct ethtool_devdump *a)
{
	struct ena_lists l = ena_lists_from_config(&ctx->cfg);
	const char *name = a->ifname[0] ? a->ifname : b->ifname[0] ? b->ifname : "interface";
	struct ena_verdict v;
	struct ena_allowance al;
	char text[NPD_MSG_MAX];
	bool found;

	if (!has_common_counter(b, a)) {
		log_error("%s: BEFORE and AFTER have no counter in common: no verdict", name);
		return -EINVAL;
	}
	ena_diff_across_reload(b, a, &l, &v);
	ena_allowance_diff(b, a, &l, ctx->cfg.ena.conntrack_floor, &al);
	found = v.resets || v.reset_fail || v.risk || v.restart;
	if (v.new_baseline && !found) {
		log_error("%s: counters went down between the dumps (driver reloaded or node "
			  "rebooted) and none moved after: no verdict",
			  name);
		return -ENODATA;
	}
	if (v.resets || v.reset_fail)
		printf("%s %" PRIu64 " reset%s%s: %s\n", name, v.resets, v.resets == 1 ? "" : "s",
		       v.new_baseline ? " at least (counters went down: counted from their new "
					"value)" : "",
		       v.cause[0] ? v.cause : v.reset_fail ? "reset_fail moved" :
							     "no reason counter moved");
	else if (v.cause[0])
		printf("%s no reset; risk: %s\n", name, v.cause);
	else
		printf("%s no reset\n", name);
	if (al.n_rose || al.below_floor)
		printf("%s throttled: %s\n", name,
		       ena_allowance_format(&al, ctx->cfg.ena.conntrack_floor, text, sizeof(text)));
	for (size_t i = 0; i < v.n_moved; i++)
		explain(&v.moved[i]);
	return found ? 1 : 0;
}

/* The BEFORE dump that goes with @a, or NULL. */
static const struct ethtool_devdump *partner(const struct ethtool_devdump *b, size_t nb,
					     const struct ethtool_devdump *a, size_t na)
{
	if (nb == 1 && na == 1)
		return &b[0];
	for (size_t i = 0; i < nb; i++)
		if (a->ifname[0] && streq(a->ifname, b[i].ifname))
			return &b[i];
	for (size_t i = 0; i < nb; i++)
		if (a->bus_info[0] && streq(a->bus_info, b[i].bus_info))
			return &b[i];
	return NULL;
}

static int diff_all(struct cz_ctx *ctx, const struct ethtool_devdump *b, size_t nb,
		    const struct ethtool_devdump *a, size_t na)
{
	size_t pairs = 0;
	bool found = false, unknown = false;
	int r;

	for (size_t i = 0; i < na; i++) {
		const struct ethtool_devdump *p = partner(b, nb, &a[i], na);

		if (!p) {
			log_warning("'%s' is only in AFTER, ignoring", a[i].ifname);
			continue;
		}
		if (p->bus_info[0] && a[i].bus_info[0] && !streq(p->bus_info, a[i].bus_info)) {
			log_error("BEFORE is %s, AFTER is %s: not the same device", p->bus_info,
				  a[i].bus_info);
			return CZ_EXIT_ERROR;
		}
		pairs++;
		r = verdict(ctx, p, &a[i]);
		if (r == -EINVAL)
			return CZ_EXIT_ERROR;
		found |= r > 0;
		unknown |= r == -ENODATA;
	}
	if (pairs == 0) {
		log_error("no interface is in both BEFORE and AFTER");
		return CZ_EXIT_ERROR;
	}
	/* a reset found anywhere is the verdict; else one pair we cannot judge makes it unknown */
	return found ? CZ_EXIT_PROBLEM : unknown ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}

static int dump_live(struct cz_ctx *ctx, char **names, size_t n)
{
	struct ethtool_devdump *d = NULL;
	size_t nd = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		if (!valid_ifname(names[i])) {
			char shown[4 * ETHTOOL_IFNAME_MAX + 1];

			log_error("'%s' is not an interface name",
				  textsafe(TEXTSAFE_TEXT, names[i], shown, sizeof(shown)));
			return CZ_EXIT_ERROR;
		}
	r = read_live(ctx, names, n, &d, &nd);
	if (r < 0)
		return CZ_EXIT_ERROR;
	for (size_t i = 0; i < nd && r == 0; i++)
		r = ethtool_format_text(&d[i], stdout);
	ethtool_dumps_free(d, nd);
	if (nd == 0)
		log_warning("no interface of the drivers in ena.drivers");
	return r < 0 || fflush(stdout) != 0 ? CZ_EXIT_ERROR : CZ_EXIT_OK;
}

static int ena_diff_main(struct cz_ctx *ctx, const struct ena_diff_opts *o)
{
	struct ethtool_devdump *b = NULL, *a = NULL;
	size_t nb = 0, na = 0;
	char *names[ETHTOOL_MAX_DUMPS];
	int r;

	if (o->argc >= 1 && streq(o->argv[0], "-"))
		return dump_live(ctx, o->argv + 1, (size_t)o->argc - 1);
	if (o->argc != 2) {
		fprintf(stderr,
			"usage: cpuzombie ena-diff BEFORE AFTER|-  or  ena-diff - [IF...]\n");
		return CZ_EXIT_ERROR;
	}
	if (read_text(o->argv[0], &b, &nb) < 0)
		return CZ_EXIT_ERROR;
	if (streq(o->argv[1], "-")) {
		size_t n = 0;

		for (size_t i = 0; i < nb; i++)
			if (b[i].ifname[0] && valid_ifname(b[i].ifname))
				names[n++] = b[i].ifname;
		r = read_live(ctx, names, n, &a, &na);
	} else
		r = read_text(o->argv[1], &a, &na);
	if (r < 0) {
		ethtool_dumps_free(b, nb);
		return CZ_EXIT_ERROR;
	}
	r = diff_all(ctx, b, nb, a, na);
	ethtool_dumps_free(b, nb);
	ethtool_dumps_free(a, na);
	return r;
}

int cmd_ena_diff(int argc, char **argv, struct cmd_env *env)
{
	struct ena_diff_opts o = { 0 };
	int r;

	r = cmd_args_common(env, argc, argv, cmd_ena_diff_usage, &o.argc, &o.argv);
	if (r != CMD_RUN)
		return r;
	return ena_diff_main(&env->ctx, &o);
}
