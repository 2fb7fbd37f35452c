/* SPDX-License-Identifier: MIT */
/* The flame-graph model (merge, kinds, hot and widest frames, sample times), the standalone SVG
 * (layout, structure, escaping, no inline handlers) and the --html page (CSP hash of its one
 * script, the data block and markup safe for hostile names, XML-safe characters only). */
#include "testutil.h"

#include "report_fixture.h"
#include "base/sha256.h"
#include "view/flame.h"
#include "view/flame_js.h"
#include "view/flame_svg.h"
#include "view/html.h"
#include "view/html_data.h"
#include "view/svg.h"

#define E "entry_SYSCALL_64;do_syscall_64;ksys_read;vfs_read;seq_read_iter"
#define EVIL "evil</script><b>&\"'"

static const char folded[] = "kubelet;" E ";memcg_numa_stat_show;mem_cgroup_node_nr_lru_pages 300\n"
			     "kubelet;" E ";memcg_numa_stat_show;seq_printf 80\n"
			     EVIL ";[user] 20\n"
			     "swapper;do_idle;default_idle 10\n";

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static uint32_t find(const struct flame *fl, const char *name, uint32_t depth)
{
	for (uint32_t i = 0; i < fl->nnodes; i++)
		if (streq(flame_name(fl, i), name) && fl->node[i].depth == depth)
			return i;
	return FLAME_NONE;
}

static void test_model(void **state)
{
	struct flame *fl = NULL;
	uint32_t k, m, u;
	char times[256];

	/* sample times: 2 of the first line, 1 of the [user] line */
	snprintf(times, sizeof(times), "cpuzombie-times 1\n5 0\n900 2\n1010 0\n");
	assert_int_equal(flame_build(folded, strlen(folded), times, strlen(times), &fl), 0);
	assert_int_equal(fl->node[0].total, 410);
	assert_string_equal(flame_name(fl, 0), "all");
	/* 1 root + kubelet 8 + 1 (seq_printf) + evil 2 + swapper 3 */
	assert_int_equal(fl->nnodes, 15);
	assert_int_equal(fl->depth_max, 8);
	k = find(fl, "kubelet", 1);
	assert_int_equal(fl->node[k].total, 380);
	assert_int_equal(fl->node[k].kind, FLAME_TASK);
	m = find(fl, "memcg_numa_stat_show", 7);
	assert_int_equal(fl->node[m].total, 380);
	assert_int_equal(fl->node[m].kind, FLAME_KERNEL);
	u = find(fl, "[user]", 2);
	assert_int_equal(fl->node[u].kind, FLAME_USER);
	assert_int_equal(fl->node[u].self, 20);
	assert_int_equal(fl->node[find(fl, EVIL, 1)].kind, FLAME_TASK);
	/* children in name order: "evil..." < "kubelet" < "swapper" */
	assert_string_equal(flame_name(fl, fl->node[0].child), EVIL);
	assert_string_equal(flame_name(fl, fl->node[fl->node[0].child].next), "kubelet");
	/* the hot frame is folded_hot_frame's; the widest kernel frame past the plumbing too */
	assert_string_equal(fl->names[fl->hot], "memcg_numa_stat_show");
	assert_int_equal(fl->hot_samples, 380);
	assert_int_equal(flame_widest(fl, FLAME_KERNEL), m);
	assert_int_equal(flame_widest(fl, FLAME_USER), FLAME_NONE); /* "[user]" is a marker name */
	/* times map to the node each stack ends in */
	assert_int_equal(fl->ntimes, 3);
	assert_null(fl->times_why);
	assert_int_equal(fl->times[1].t_ms, 900);
	assert_int_equal(fl->times[1].node, u);
	assert_string_equal(flame_name(fl, fl->times[0].node), "mem_cgroup_node_nr_lru_pages");
	flame_free(fl);
}

static void test_model_bad(void **state)
{
	struct flame *fl = NULL;
	char times[64];

	/* more times on a line than its count: the stacks are kept, the times left out */
	assert_int_equal(flame_build("a;b 1\n", 6, "cpuzombie-times 1\n1 0\n2 0\n", 26, &fl), 0);
	assert_int_equal(fl->ntimes, 0);
	assert_string_equal(fl->times_why, "do not match the stacks");
	flame_free(fl);
	assert_int_equal(flame_build("a;b 1\n", 6, "garbage\n", 8, &fl), 0);
	assert_string_equal(fl->times_why, "unreadable");
	flame_free(fl);
	assert_int_equal(flame_build("a;b 1\n", 6, NULL, 0, &fl), 0);
	assert_string_equal(fl->times_why, "not recorded");
	flame_free(fl);
	snprintf(times, sizeof(times), "cpuzombie-times 1\n1 5\n"); /* no line 5 */
	assert_int_equal(flame_build("a;b 1\n", 6, times, strlen(times), &fl), 0);
	assert_string_equal(fl->times_why, "unreadable");
	flame_free(fl);
	fl = NULL;
	assert_int_equal(flame_build("a;b\n", 4, NULL, 0, &fl), -EINVAL);
	assert_int_equal(flame_build("a;b 0\n", 6, NULL, 0, &fl), -ENODATA);
	assert_int_equal(flame_build("", 0, NULL, 0, &fl), -ENODATA);
	assert_null(fl);
	flame_free(NULL);
}

static char *render_svg(const struct flame *fl, const char *title)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_int_equal(flame_svg_write(fl, title, f), 0);
	fclose(f);
	return buf;
}

static void test_svg(void **state)
{
	struct flame *fl = NULL;
	char *t, lab[64], col[8];

	assert_int_equal(flame_build(folded, strlen(folded), NULL, 0, &fl), 0);
	t = render_svg(fl, "cpu1 <burst> & \"x\"");
	fx_golden("flame1.svg", t);
	/* every frame is wide enough at 410 samples over 1200 px: one <g> per node */
	assert_int_equal(count(t, "<g class=\"f "), fl->nnodes);
	assert_non_null(strstr(t, "data-total=\"410\" data-hot=\"memcg_numa_stat_show\""));
	assert_int_equal(count(t, "<g class=\"f kernel hot\""), 1);
	assert_int_equal(count(t, "<g class=\"f user\""), 1);
	/* the root spans the width at the bottom row; kubelet is after "evil" (name order) */
	assert_non_null(strstr(t, "<g class=\"f root\" data-s=\"0\" data-n=\"410\" data-d=\"0\">"
				  "<title>all\n410 samples (100.00%)</title><rect x=\"10.00\" "
				  "y=\"184.0\" width=\"1200.00\""));
	assert_non_null(strstr(t, "<g class=\"f task\" data-s=\"20\" data-n=\"380\" data-d=\"1\">"));
	/* names and the title are text: nothing of them is markup */
	assert_null(strstr(t, "<b>"));
	assert_null(strstr(t, "</script><b>"));
	assert_non_null(strstr(t, "<title>evil&lt;/script&gt;&lt;b&gt;&amp;&quot;&apos;\n"));
	assert_non_null(strstr(t, "cpu1 &lt;burst&gt; &amp; &quot;x&quot;"));
	/* no inline event handler anywhere: the one script adds its listeners */
	assert_null(strstr(t, " onclick"));
	assert_null(strstr(t, " onload"));
	assert_null(strstr(t, " onmouse"));
	assert_int_equal(count(t, "<script"), 1);
	assert_int_equal(count(t, "<svg "), 1);
	free(t);
	/* labels cut to fit with "..", none below three characters; colours by kind */
	assert_string_equal(flame_label("memcg_numa_stat_show", 1000, lab, sizeof(lab)),
			    "memcg_numa_stat_show");
	assert_string_equal(flame_label("memcg_numa_stat_show", 55, lab, sizeof(lab)), "memcg..");
	assert_string_equal(flame_label("memcg_numa_stat_show", 26, lab, sizeof(lab)), "");
	assert_string_equal(flame_color("x", FLAME_MARKER, col), "#c8c8c8");
	assert_int_equal(col[1] >= 'c', 1);
	flame_color("memcg_numa_stat_show", FLAME_KERNEL, col); /* red 205..255: c.. or f. */
	assert_true(col[1] == 'c' || col[1] == 'd' || col[1] == 'e' || col[1] == 'f');
	assert_int_equal(flame_svg_write(NULL, "x", stdout), -EINVAL);
	flame_free(fl);
}

static void test_escapes(void **state)
{
	static const struct {
		const char *in, *json, *text;
	} t[] = {
		{ "a</script>&b", "\"a\\u003c/script\\u003e\\u0026b\"", "a&lt;/script&gt;&amp;b" },
		{ "q\"'\\", "\"q\\\"'\\\\\"", "q&quot;&#39;\\" },
		{ "\xef\xbf\xbe", "\"\\\\ufffe\"", "\\ufffe" },			/* U+FFFE */
		{ "r\xe2\x80\xael", "\"r\\\\u202el\"", "r\\u202el" },		/* bidi override */
		{ "\x01\n", "\"\\u0001\\u000a\"", "\\x01\n" },
		{ "\xc3\xa9\xf0\x9f\x98\x80", "\"\\u00e9\\ud83d\\ude00\"", "\xc3\xa9\xf0\x9f\x98\x80" },
		{ "\xff", "\"\\ufffd\"", "\xef\xbf\xbd" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char *buf = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&buf, &size);

		html_json_str(f, t[i].in, strlen(t[i].in));
		fclose(f);
		assert_string_equal(buf, t[i].json);
		free(buf);
		buf = NULL;
		f = open_memstream(&buf, &size);
		html_text(f, t[i].in, strlen(t[i].in));
		fclose(f);
		assert_string_equal(buf, t[i].text);
		free(buf);
	}
}

/* The text between @open and the next @close in @t, as a new string. */
static char *between(const char *t, const char *open, const char *close)
{
	const char *a = strstr(t, open), *b;

	assert_non_null(a);
	a += strlen(open);
	b = strstr(a, close);
	assert_non_null(b);
	return strndup(a, (size_t)(b - a));
}

static char *render_page(struct node_model *r, struct html_burst *b, size_t n)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_int_equal(html_write(r, 0, 0, b, n, f), 0);
	fclose(f);
	return buf;
}

static void test_page(void **state)
{
	struct node_model *r = fx_report();
	struct flame *fl = NULL;
	struct html_burst b[3];
	char hash[SHA256_B64_LEN + 1], csp[128];
	char *t, *data, *script;

	/* a hostile node and task name: markup, quotes, U+FFFE, a bidi override */
	snprintf(r->node, sizeof(r->node), "n</script>\xef\xbf\xbe");
	snprintf(r->bursts[1].task[0].comm, sizeof(r->bursts[1].task[0].comm),
		 "<i>\xe2\x80\xae&x");
	assert_int_equal(flame_build(folded, strlen(folded), "cpuzombie-times 1\n5 0\n", 22, &fl),
			 0);
	b[0] = (struct html_burst){ .ev = &r->bursts[2], .ongoing = true, .why = "no samples" };
	b[1] = (struct html_burst){ .ev = &r->bursts[1], .fl = fl };
	b[2] = (struct html_burst){ .ev = &r->bursts[0], .why = "its profile file rolled off" };
	t = render_page(r, b, 3);
	/* one script that runs, allowed by its hash; nothing else may (no 'unsafe-inline') */
	script = between(t, "<script>", "</script>");
	assert_string_equal(script, flame_page_js);
	snprintf(csp, sizeof(csp), "script-src 'sha256-%s';",
		 sha256_b64(script, strlen(script), hash));
	assert_non_null(strstr(t, csp));
	assert_null(strchr(script, '<'));
	assert_null(strchr(script, '&'));
	assert_int_equal(count(t, "<script"), 2); /* and the data block, which is not run */
	/* the data block: ASCII only, no '<' or '&' that could end it or open markup */
	data = between(t, "<script type=\"application/json\" id=\"cz-data\">", "</script>");
	assert_null(strchr(data, '<'));
	assert_null(strchr(data, '&'));
	for (const char *p = data; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	assert_non_null(strstr(data, "\"evil\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\\"'\""));
	assert_non_null(strstr(data, "\"id\":\"0-1714564680000\""));
	/* depth first: all, evil, [user], kubelet, its 7 frames, seq_printf (up 2: a sibling),
	 * swapper (up 12: the root's), do_idle, default_idle; the one timed sample 5 ms in,
	 * ending in the first stack's leaf (node 10) */
	assert_non_null(strstr(data, "\"up\":[0,1,1,3,1,1,1,1,1,1,1,2,12,1,1],"));
	assert_non_null(strstr(data, "\"dt\":[5],\"leaves\":[10],\"leaf\":[0]}"));
	/* the markup: the names are text, hazards shown; one div per burst, data-i where drawn */
	assert_null(strstr(t, "<i>"));
	assert_null(strstr(t, "\xef\xbf\xbe"));
	assert_null(strstr(t, "\xe2\x80\xae"));
	assert_non_null(strstr(t, "n&lt;/script&gt;\\ufffe"));
	assert_non_null(strstr(t, "&lt;i&gt;\\u202e&amp;x"));
	assert_int_equal(count(t, "<div class=\"burst\""), 3);
	assert_non_null(strstr(t, "<div class=\"burst\" id=\"burst-0-1714564680000\" data-i=\"0\">"));
	assert_non_null(strstr(t, "<div class=\"burst\" id=\"burst-3-1714564796000\">"));
	assert_non_null(strstr(t, "no flame graph: its profile file rolled off"));
	assert_int_equal(count(t, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"strip\""), 1);
	assert_non_null(strstr(t, "widest kernel frame: <span class=\"widest\">memcg_numa_stat_show"));
	/* the verdict is report's own text; the heatmap is --svg's, without its XML declaration */
	assert_non_null(strstr(t, "<section id=\"verdict\"><h2>Verdict</h2>\n<pre>cpuzombie report"));
	assert_non_null(strstr(t, "CONDITIONS\n  MemcgZombieLeak"));
	assert_non_null(strstr(t, "<section id=\"heatmap\"><h2>Per-core heatmap</h2>\n<svg "));
	assert_int_equal(count(t, "<?xml"), 0);
	{
		char *svg = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&svg, &size);

		assert_int_equal(svg_write(r, f), 0);
		fclose(f);
		assert_non_null(strstr(t, strstr(svg, "<svg "))); /* byte for byte */
		free(svg);
	}
	/* no inline handler, nothing from elsewhere */
	assert_null(strstr(t, " onclick"));
	assert_null(strstr(t, " onload"));
	assert_null(strstr(t, "src=\"http"));
	assert_null(strstr(t, "href=\"http"));
	assert_null(strstr(t, "<link"));
	assert_non_null(strstr(t, "default-src 'none'"));
	free(script);
	free(data);
	free(t);
	flame_free(fl);
	node_model_free(r);
}

/* The data block's bound: bursts go in newest first while they fit, whole or not at all. */
static void test_data_budget(void **state)
{
	struct flame *fl = NULL;
	struct burst_event ev[3] = { { .cpu = 1, .start_ms = 30 }, { .cpu = 1, .start_ms = 20 },
				     { .cpu = 0, .start_ms = 10 } };
	struct html_burst b[3];
	struct html_data *d = NULL;
	char *buf = NULL;
	size_t size = 0, one;
	FILE *f;

	assert_int_equal(flame_build(folded, strlen(folded), NULL, 0, &fl), 0);
	for (int i = 0; i < 3; i++)
		b[i] = (struct html_burst){ .ev = &ev[i], .fl = i == 1 ? NULL : fl };
	assert_int_equal(html_data_build(b, 3, 1 << 20, &d), 0);
	assert_int_equal(html_data_index(d, 0), 0);
	assert_int_equal(html_data_index(d, 1), -1); /* no flame graph */
	assert_int_equal(html_data_index(d, 2), 1);
	f = open_memstream(&buf, &size);
	html_data_write(d, f);
	fclose(f);
	one = size;
	html_data_free(d);
	/* room for the newest only: the other is left out, and so are the names only it had */
	assert_int_equal(html_data_build(b, 3, one - 1, &d), 0);
	assert_int_equal(html_data_index(d, 0), 0);
	assert_int_equal(html_data_index(d, 2), -1);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &size);
	html_data_write(d, f);
	fclose(f);
	assert_true(size < one);
	assert_int_equal(count(buf, "\"id\":"), 1);
	assert_int_equal(count(buf, "memcg_numa_stat_show"), 1);
	free(buf);
	html_data_free(d);
	/* no room at all: an empty block */
	assert_int_equal(html_data_build(b, 3, 10, &d), 0);
	assert_int_equal(html_data_index(d, 0), -1);
	html_data_free(d);
	html_data_free(NULL);
	flame_free(fl);
}

static int page_without_bursts(const struct node_model *r, FILE *out)
{
	return html_write(r, 0, 0, NULL, 0, out);
}

/* No burst in the window: the verdict, the heatmap, an empty data block; the script still runs
 * (nothing to draw). */
static void test_page_without_bursts(void **state)
{
	struct node_model *r = fx_report();
	char *t = fx_render(page_without_bursts, r);

	assert_non_null(strstr(t, "<p>no burst in the window</p>"));
	assert_non_null(strstr(t, "{\"bursts\":[],\"names\":[]}</script>"));
	assert_non_null(strstr(t, "(cpuzombie @VERSION@)"));
	free(t);
	node_model_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_model_bad),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_page),
		cmocka_unit_test(test_page_without_bursts),
		cmocka_unit_test(test_data_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
