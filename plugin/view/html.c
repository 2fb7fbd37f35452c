/* SPDX-License-Identifier: MIT */
/*
 * The page of `report --html` (html.h): the verdict and headings as escaped text, the heatmap
 * SVG inline, the flame graphs as a data block (html_data.h) the page's one script draws.
 */
#include <errno.h>

#include "node/model.h"
#include "view/render.h"
#include "view/flame_js.h"
#include "view/html.h"
#include "view/html_data.h"
#include "view/svg.h"
#include "base/sha256.h"
#include "base/textsafe.h"
#include "base/util.h"

/* ---- escaping ---- */

void html_text(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = textsafe_utf8_len(p + i, len - i);
		unsigned cp = n ? textsafe_utf8_cp(p + i, n) : 0xfffd;

		if (n == 0) {
			fputs("\xef\xbf\xbd", out);
			i++;
			continue;
		}
		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		case '\n':
		case '\t': fputc((int)cp, out); break;
		default:
			if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
				fprintf(out, cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
			else if (textsafe_is_hazard(cp))
				fprintf(out, "\\u%04x", cp);
			else
				fwrite(p + i, 1, n, out);
		}
		i += n;
	}
}

static void text(FILE *out, const char *s)
{
	html_text(out, s, strlen(s));
}

void html_json_str(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (size_t i = 0; i < len;) {
		size_t n = textsafe_utf8_len(p + i, len - i);
		unsigned cp = n ? textsafe_utf8_cp(p + i, n) : 0xfffd;

		i += n ? n : 1;
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (char)cp);
		else if (cp >= 0x20 && cp < 0x7f && cp != '<' && cp != '>' && cp != '&')
			fputc((int)cp, out);
		else if (textsafe_is_hazard(cp))
			fprintf(out, "\\\\u%04x", cp); /* the text "\u202e", not the character */
		else if (cp > 0xffff)
			fprintf(out, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
				0xdc00 + ((cp - 0x10000) & 0x3ff));
		else
			fprintf(out, "\\u%04x", cp);
	}
	fputc('"', out);
}

char *html_burst_id(const struct burst_event *ev, char *buf, size_t size)
{
	snprintf(buf, size, "%u-%llu", ev->cpu, (unsigned long long)ev->start_ms);
	return buf;
}

/* ---- the page ---- */

static const char page_style[] =
	"body{font:14px sans-serif;margin:16px;color:#222;background:#fff}"
	"h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:15px;margin:4px 0}"
	"pre{background:#f4f4f4;padding:8px;overflow-x:auto;font-size:12px}"
	".burst{border-top:1px solid #ccc;padding:8px 0 16px}.meta{margin:2px 0;color:#444}"
	".controls{margin:6px 0}.controls input{width:260px}.matched,.range{margin-left:12px}"
	"svg.flame{display:block;width:1220px;background:#f8f8f8}"
	"svg.flame text{font:12px Verdana,sans-serif;fill:#000;pointer-events:none}"
	".f{cursor:pointer}.f rect{stroke:#fff;stroke-width:.5}"
	".f.hot rect{stroke:#6000a0;stroke-width:2}.f.match rect{fill:#e600e6}"
	".f.dim rect{fill-opacity:.35}svg.strip{display:block;margin:6px 0}"
	"svg.strip text{font:10px sans-serif;fill:#444}.cell{cursor:crosshair}"
	".cell.sel{stroke:#0050ff;stroke-width:1.5}.legend span{padding:0 6px;margin-right:6px}"
	".k{background:#f08020}.u{background:#60d0d0}.t{background:#b0c0b0}.h{outline:2px solid"
	" #6000a0}";

/* The heatmap as `report --svg` draws it, without its XML declaration (not allowed inside). */
static void heatmap(FILE *out, const struct node_model *r, uint64_t since, uint64_t until)
{
	_cleanup_free_ char *svg = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&svg, &len);
	int e;
	const char *body;

	fputs("<section id=\"heatmap\"><h2>Per-core heatmap</h2>\n", out);
	if (!m) {
		fputs("<p>heatmap: out of memory</p></section>\n", out);
		return;
	}
	e = until ? svg_write_span(r, since, until, m) : svg_write(r, m);
	if (fclose(m) != 0 && e == 0)
		e = -EIO;
	body = e == 0 && svg ? strstr(svg, "<svg") : NULL;
	if (body)
		fputs(body, out);
	else
		fprintf(out, "<p>heatmap: none (%s)</p>\n", strerror(e < 0 ? -e : ENODATA));
	fputs("</section>\n", out);
}

static int verdict(FILE *out, const struct node_model *r)
{
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&txt, &len);

	if (!m)
		return -ENOMEM;
	(void)report_print(r, m);
	if (fclose(m) != 0)
		return -ENOMEM;
	fputs("<section id=\"verdict\"><h2>Verdict</h2>\n<pre>", out);
	html_text(out, txt ? txt : "", len);
	fputs("</pre></section>\n", out);
	return 0;
}

static void burst_head(FILE *out, const struct node_model *r, const struct html_burst *b)
{
	const struct burst_event *ev = b->ev;
	char a[16], z[16], line[512], tasks[256], id[48];
	uint64_t dur = ev->end_ms > ev->start_ms ? ev->end_ms - ev->start_ms : 0;

	snprintf(line, sizeof(line), "cpu%u burst %s..%s UTC: %.1fs%s, peak %.0f%%, mean %.0f%% %s",
		 ev->cpu, utc_hms(ev->start_ms, a, sizeof(a)), utc_hms(ev->end_ms, z, sizeof(z)),
		 (double)dur / 1000.0, b->ongoing ? " so far" : "", ev->peak_pct, ev->mean_pct,
		 config_metric_name(b->ongoing ? r->cfg->cpu.metric : ev->metric));
	fputs("<h3>", out);
	text(out, line);
	fputs("</h3>\n<p class=\"meta\">burst ", out);
	text(out, html_burst_id(ev, id, sizeof(id)));
	fputs("; top tasks: ", out);
	text(out, ev->ntasks ? report_format_tasks(ev, tasks, sizeof(tasks)) : "- (not sampled)");
	fputs("; NIC queues on this core: ", out);
	text(out, ev->irqs[0] ? ev->irqs : "none");
	fputs("</p>\n", out);
}

static void flame_part(FILE *out, const struct html_burst *b, size_t k)
{
	const struct flame *fl = b->fl;
	uint32_t w = flame_widest(fl, FLAME_KERNEL);
	char num[96];

	fputs("<p class=\"meta\">", out);
	snprintf(num, sizeof(num), "%llu samples", (unsigned long long)fl->node[0].total);
	text(out, num);
	if (fl->hot != FLAME_NONE) {
		fputs("; hot kernel function: ", out);
		text(out, fl->names[fl->hot]);
		snprintf(num, sizeof(num), " (%.0f%%)",
			 100.0 * (double)fl->hot_samples / (double)fl->node[0].total);
		text(out, num);
	}
	if (w != FLAME_NONE) {
		fputs("; widest kernel frame: <span class=\"widest\">", out);
		text(out, flame_name(fl, w));
		fputs("</span>", out);
	}
	fputs("</p>\n<p class=\"legend\"><span class=\"k\">kernel</span><span class=\"u\">user"
	      "</span><span class=\"t\">task</span><span class=\"h\">hot function</span>"
	      "click a frame to zoom, type to search</p>\n", out);
	if (fl->ntimes > 0)
		fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"strip\" width=\"0\" "
		      "height=\"0\"></svg>\n<p class=\"meta\">sub-second strip: 1 s columns, 20 ms "
		      "rows, darker = more samples; drag across cells to see that range "
		      "<button type=\"button\" class=\"whole\">Whole burst</button><span "
		      "class=\"range\"></span></p>\n", out);
	else {
		fputs("<p class=\"meta\">no sub-second strip: sample times ", out);
		text(out, fl->times_why ? fl->times_why : "not recorded");
		fputs("</p>\n", out);
	}
	fprintf(out, "<div class=\"controls\"><input type=\"search\" class=\"search\" "
		     "placeholder=\"search frames\" aria-label=\"search frames %zu\"/> <button "
		     "type=\"button\" class=\"reset\">Reset zoom</button><span "
		     "class=\"matched\"></span></div>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		     "class=\"flame\" width=\"1220\" height=\"0\"></svg>\n<p class=\"details\">"
		     "</p>\n", k);
}

static void bursts(FILE *out, const struct node_model *r, const struct html_burst *b, size_t n,
		   const struct html_data *d)
{
	char id[48];

	fprintf(out, "<section id=\"bursts\"><h2>Bursts (%zu)</h2>\n", n);
	if (n > HTML_BURSTS_MAX)
		fprintf(out, "<p>the %d newest are shown</p>\n", HTML_BURSTS_MAX);
	for (size_t i = 0; i < n && i < HTML_BURSTS_MAX; i++) {
		int k = html_data_index(d, i);

		fputs("<div class=\"burst\" id=\"burst-", out);
		text(out, html_burst_id(b[i].ev, id, sizeof(id)));
		if (k >= 0)
			fprintf(out, "\" data-i=\"%d", k);
		fputs("\">\n", out);
		burst_head(out, r, &b[i]);
		if (k >= 0) {
			flame_part(out, &b[i], (size_t)k);
		} else if (b[i].fl) {
			fprintf(out, "<p class=\"meta\">flame graph left out: the page holds at "
				"most %d KiB of profiles, the newest first; <code>cpuzombie "
				"flame ", HTML_DATA_MAX / 1024);
			text(out, id);
			fputs("</code> draws it</p>\n", out);
		} else {
			fputs("<p class=\"meta\">no flame graph: ", out);
			text(out, b[i].why ? b[i].why : "no profile");
			fputs("</p>\n", out);
		}
		fputs("</div>\n", out);
	}
	if (n == 0)
		fputs("<p>no burst in the window</p>\n", out);
	fputs("</section>\n", out);
}

int html_write(const struct node_model *r, uint64_t since_ms, uint64_t until_ms,
	       const struct html_burst *b, size_t n, FILE *out)
{
	char hash[SHA256_B64_LEN + 1], t[48];
	size_t shown = n < HTML_BURSTS_MAX ? n : HTML_BURSTS_MAX;
	struct html_data *d = NULL;
	int e;

	e = html_data_build(b, shown, HTML_DATA_MAX, &d);
	if (e < 0)
		return e;
	sha256_b64(flame_page_js, strlen(flame_page_js), hash);
	fprintf(out, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n"
		     "<head>\n<meta charset=\"utf-8\"/>\n<meta http-equiv=\"Content-Security-"
		     "Policy\" content=\"default-src 'none'; script-src 'sha256-%s'; style-src "
		     "'unsafe-inline'; base-uri 'none'; form-action 'none'\"/>\n<title>", hash);
	fputs("cpuzombie: ", out);
	text(out, r->node[0] ? r->node : "-");
	fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", page_style);
	fputs("cpuzombie report: node ", out);
	text(out, r->node[0] ? r->node : "-");
	fputs(", ", out);
	text(out, utc_datetime(r->now_ms, t, sizeof(t)));
	fputs("</h1>\n", out);
	e = verdict(out, r);
	if (e < 0) {
		html_data_free(d);
		return e;
	}
	heatmap(out, r, since_ms, until_ms);
	bursts(out, r, b, n, d);
	html_data_write(d, out);
	html_data_free(d);
	fprintf(out, "<script>%s</script>\n</body>\n</html>\n", flame_page_js);
	return ferror(out) ? -EIO : 0;
}
