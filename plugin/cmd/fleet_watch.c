/* SPDX-License-Identifier: MIT */
/* `cpuzombie fleet --watch`: see fleet_watch.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "base/kjson.h"
#include "base/log.h"
#include "base/util.h"
#include "cmd/fleet_watch.h"
#include "kube/fleet_fetch.h"
#include "remediator/informer.h"
#include "view/term.h"

#define REDRAW_GAP_MS 1000	/* a busy cluster redraws once a second, not on every event */
#define SYNC_WAIT_MS 300000
#define LEASES_MAX 1024
#define LEASE_SELECTOR "app.kubernetes.io/managed-by=cpuzombie"

static volatile sig_atomic_t got_stop, got_winch;
static atomic_bool dirty;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_stop = 1;
}

static void on_change(const char *name, json_object *old, json_object *now, void *userdata)
{
	(void)name, (void)old, (void)now, (void)userdata;
	atomic_store(&dirty, true);
}

/* Drop what the view never reads (managedFields, the image list: most of a real node's bytes). */
static json_object *trim_node(json_object *node)
{
	json_object *t = NULL, *md, *st;

	if (json_object_deep_copy(node, &t, NULL) < 0)
		return NULL;
	if (json_object_object_get_ex(t, "metadata", &md))
		json_object_object_del(md, "managedFields");
	if (json_object_object_get_ex(t, "status", &st))
		json_object_object_del(st, "images");
	return t;
}

struct caches {
	struct informer *nodes, *leases;
	bool leases_ok;
	char leases_err[160];
};

static int add_node(json_object *node, void *userdata)
{
	return fleet_add_node(userdata, node);
}

struct lease_list {
	json_object *item[LEASES_MAX];
	size_t n;
};

static int add_lease(json_object *lease, void *userdata)
{
	struct lease_list *l = userdata;

	if (l->n < LEASES_MAX)
		l->item[l->n++] = json_object_get(lease);
	return 0;
}

/* The summary of the caches now, as `fleet` prints it, into a new string (*@ret). */
static int summary_text(const struct fleet_opts *o, struct fleet *f, struct caches *c,
			char **ret, size_t *len)
{
	_cleanup_free_ struct fleet_summary *s = calloc(1, sizeof(*s));
	struct lease_list *l = calloc(1, sizeof(*l));
	FILE *m;
	int r;

	if (!s || !l) {
		free(l);
		return -ENOMEM;
	}
	fleet_reset(f);
	r = informer_each(c->nodes, add_node, f);
	if (r >= 0 && c->leases_ok)
		r = informer_each(c->leases, add_lease, l);
	if (r >= 0) {
		fleet_set_leases(f, c->leases_ok ? l->item : NULL, c->leases_ok ? l->n : 0,
				 now_realtime_ms(), 0, c->leases_ok ? NULL : c->leases_err);
		r = fleet_summarize(f, s);
	}
	for (size_t i = 0; i < l->n; i++)
		json_object_put(l->item[i]);
	free(l);
	if (r < 0)
		return r;
	m = open_memstream(ret, len);
	if (!m)
		return -errno;
	fleet_print(f, s, o->nodes, m);
	return fclose(m) == 0 ? 0 : -EIO;
}

/* Append @line (@n bytes) cut at @cols columns (bytes here; never inside a UTF-8 sequence). */
static void put_cut(FILE *out, const char *line, size_t n, unsigned cols)
{
	size_t k = n < cols ? n : cols;

	while (k < n && k > 0 && ((unsigned char)line[k] & 0xC0) == 0x80)
		k--;
	fwrite(line, 1, k, out);
	fputs("\033[K\r\n", out);
}

static void draw(const struct fleet_opts *o, struct fleet *f, struct caches *c, bool tty)
{
	_cleanup_free_ char *text = NULL, *screen = NULL;
	size_t len = 0, slen = 0;
	unsigned cols, rows, row = 1;
	char when[40], title[200];
	FILE *m;

	if (summary_text(o, f, c, &text, &len) < 0) {
		log_error("fleet --watch: cannot make the summary: out of memory");
		return;
	}
	kube_time(now_realtime_ms(), false, when, sizeof(when));
	snprintf(title, sizeof(title), "cpuzombie fleet --watch: %zu nodes at %s%s",
		 fleet_node_count(f), when, tty ? " (q quits)" : "");
	if (!tty) {
		printf("%s\n%s--\n", title, text);
		fflush(stdout);
		return;
	}
	term_size(&cols, &rows);
	m = open_memstream(&screen, &slen);
	if (!m)
		return;
	fputs("\033[H", m);
	put_cut(m, title, strlen(title), cols);
	for (const char *p = text; *p && row < rows; row++) {
		size_t n = strcspn(p, "\n");

		put_cut(m, p, n, cols);
		p += n + (p[n] == '\n');
	}
	fputs("\033[J", m);
	if (fclose(m) == 0)
		term_write(screen, slen);
}

static int open_caches(struct cz_ctx *ctx, const struct fleet_opts *o, struct caches *c)
{
	struct informer_opts on = {
		.path = "/api/v1/nodes", .what = "nodes", .selector = o->selector,
		.page = o->chunk_size ? (unsigned)o->chunk_size : DEFAULT_CHUNK,
		.trim = trim_node, .change = on_change,
	};
	struct informer_opts ol = {
		.what = "cpuzombie Leases", .selector = LEASE_SELECTOR, .change = on_change,
	};
	struct kube_client *kc = NULL;
	char err[512] = "", path[320];
	int r;

	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
		 ctx->cfg.remediation.lease_namespace);
	ol.path = path;
	r = fleet_fetch_open(ctx->cfg.kubernetes.kubeconfig, &kc, err, sizeof(err));
	if (r < 0 || (r = informer_start(kc, &on, &c->nodes)) < 0)
		return log_error_errno(r, "Failed to reach the API server: %s", err);
	r = fleet_fetch_open(ctx->cfg.kubernetes.kubeconfig, &kc, err, sizeof(err));
	if (r == 0)
		r = informer_start(kc, &ol, &c->leases);
	r = r < 0 ? r : informer_wait_synced(c->leases, SYNC_WAIT_MS);
	c->leases_ok = r == 0;
	if (r < 0) {
		snprintf(c->leases_err, sizeof(c->leases_err), "cannot list the Leases: %s",
			 strerror(-r));
		informer_free(TAKE_PTR(c->leases));
	}
	r = informer_wait_synced(c->nodes, SYNC_WAIT_MS);
	if (r < 0)
		return log_error_errno(r, "Failed to list the nodes: %m");
	return 0;
}

int fleet_watch(struct cz_ctx *ctx, const struct fleet_opts *o, struct fleet *f)
{
	bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	struct caches c = { 0 };
	uint64_t drawn = 0;
	int ret = CZ_EXIT_OK;

	term_signals(on_signal);
	if (open_caches(ctx, o, &c) < 0) {
		ret = CZ_EXIT_ERROR;
		goto out;
	}
	if (tty && term_enter() < 0)
		tty = false;
	atomic_store(&dirty, true);
	while (!got_stop) {
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
		uint64_t now = now_monotonic_ms();
		int r;

		if (got_winch || (atomic_load(&dirty) && now >= drawn + REDRAW_GAP_MS)) {
			got_winch = 0;
			atomic_store(&dirty, false);
			drawn = now;
			draw(o, f, &c, tty);
		}
		r = poll(&pfd, tty ? 1 : 0, 250);
		if (r > 0 && (pfd.revents & POLLIN)) {
			char k[32];
			ssize_t n = read(STDIN_FILENO, k, sizeof(k));

			for (ssize_t i = 0; i < n; i++)
				if (k[i] == 'q' || k[i] == 'Q')
					got_stop = 1;
		} else if (r > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
			break;
		}
	}
out:
	term_restore();
	informer_free(c.nodes);
	informer_free(c.leases);
	return ret;
}
