/* SPDX-License-Identifier: MIT */
/*
 * The standalone flame-graph SVG (flame_svg.h). Layout as flamegraph.pl: x by the samples left
 * of a frame, width by its own, the root at the bottom; the script (flame_js.h) works on the
 * drawn frames' data-s/-n/-d attributes alone.
 */
#include <errno.h>

#include "view/flame_js.h"
#include "view/flame_svg.h"
#include "base/textsafe.h"
#include "base/util.h"

#define LEFT 10
#define TOP 56	   /* title and controls above the frames */
#define BOTTOM 30  /* the details line below */
#define WIDTH (LEFT + FLAME_SVG_W + LEFT)

static void xml(FILE *out, const char *s)
{
	(void)textsafe_fputs(TEXTSAFE_XML, s, out);
}

/* The same 32-bit hash as the page's script: h = h * 31 + byte. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 0;

	for (; *s; s++)
		h = h * 31 + (unsigned char)*s;
	return h;
}

char *flame_color(const char *name, enum flame_kind kind, char buf[8])
{
	uint32_t h = name_hash(name);
	unsigned a = h & 0xff, b = (h >> 8) & 0xff, r, g, bl;

	switch (kind) {
	case FLAME_KERNEL: /* flamegraph.pl's "hot": red to yellow */
		r = 205 + 50 * a / 255;
		g = 230 * b / 255;
		bl = 55 * ((h >> 16) & 0xff) / 255;
		break;
	case FLAME_USER: /* aqua */
		r = 50 + 60 * a / 255;
		g = 165 + 55 * a / 255;
		bl = 165 + 55 * a / 255;
		break;
	case FLAME_TASK:
		r = g = bl = 150 + 40 * a / 255;
		g += 15;
		break;
	default:
		r = g = bl = 200;
		break;
	}
	snprintf(buf, 8, "#%02x%02x%02x", r, g, bl);
	return buf;
}

char *flame_label(const char *name, double px, char *buf, size_t size)
{
	size_t n = strlen(name), k = px < 27 ? 0 : (size_t)((px - 6) / 7);

	if (k < 3)
		snprintf(buf, size, "%s", "");
	else if (n <= k)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%.*s..", (int)(k - 2), name);
	return buf;
}

struct layout {
	const struct flame *fl;
	FILE *out;
	double scale; /* px per sample */
	double y0;    /* y of the deepest row */
};

static void frame(const struct layout *L, uint32_t i, uint64_t s)
{
	const struct flame *fl = L->fl;
	const struct flame_node *n = &fl->node[i];
	double x = LEFT + (double)s * L->scale, w = (double)n->total * L->scale;
	double y = L->y0 + (double)(fl->depth_max - n->depth) * FLAME_SVG_FRAME_H;
	const char *name = flame_name(fl, i);
	char label[256], color[8];

	if (w < FLAME_SVG_MIN_PX)
		return;
	fprintf(L->out, "<g class=\"f %s%s\" data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		flame_kind_name(n->kind), n->name == fl->hot ? " hot" : "",
		(unsigned long long)s, (unsigned long long)n->total, n->depth);
	xml(L->out, name);
	fprintf(L->out, "\n%llu samples (%.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
			"height=\"%d\" fill=\"%s\"/><text x=\"%.2f\" y=\"%.1f\">",
		(unsigned long long)n->total, 100.0 * (double)n->total / (double)fl->node[0].total,
		x, y, w, FLAME_SVG_FRAME_H - 1, flame_color(name, n->kind, color), x + 3, y + 11.5);
	xml(L->out, flame_label(name, w, label, sizeof(label)));
	fputs("</text></g>\n", L->out);
	for (uint32_t c = n->child; c != FLAME_NONE; c = fl->node[c].next) {
		frame(L, c, s);
		s += fl->node[c].total;
	}
}

static void style(FILE *out)
{
	fputs("<style>text{font:12px Verdana,sans-serif;fill:#000}.f text{pointer-events:none}"
	      ".f{cursor:pointer}.f rect{stroke:#fff;stroke-width:.5}"
	      ".f.hot rect{stroke:#6000a0;stroke-width:2}.f.match rect{fill:#e600e6}"
	      ".f.dim rect{fill-opacity:.35}.f:hover rect{stroke:#000;stroke-width:1}"
	      ".title{font-size:16px;text-anchor:middle}.ctl{cursor:pointer;fill:#0050c0}"
	      ".right{text-anchor:end}</style>\n", out);
}

int flame_svg_write(const struct flame *fl, const char *title, FILE *out)
{
	const struct flame_node *root = fl ? &fl->node[0] : NULL;
	double h;
	struct layout L;

	if (!root || root->total == 0)
		return -EINVAL;
	h = TOP + (double)(fl->depth_max + 1) * FLAME_SVG_FRAME_H + BOTTOM;
	L = (struct layout){ fl, out, (double)FLAME_SVG_W / (double)root->total, TOP };
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		     "2000/svg\" class=\"flamegraph\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 "
		     "%d %.0f\" data-w=\"%d\" data-left=\"%d\" data-total=\"%llu\" data-hot=\"",
		WIDTH, h, WIDTH, h, FLAME_SVG_W, LEFT, (unsigned long long)root->total);
	xml(out, fl->hot != FLAME_NONE ? fl->names[fl->hot] : "");
	fputs("\">\n", out);
	style(out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#f8f8f8\"/>\n"
		     "<text class=\"title\" x=\"%d\" y=\"22\">", WIDTH, h, WIDTH / 2);
	xml(out, title ? title : "flame graph");
	fprintf(out, "</text>\n<text id=\"reset\" class=\"ctl\" x=\"%d\" y=\"44\" "
		     "display=\"none\">Reset zoom</text>\n<text id=\"search\" class=\"ctl right\" "
		     "x=\"%d\" y=\"44\">Search</text>\n<text id=\"matched\" class=\"right\" "
		     "x=\"%d\" y=\"%.0f\"></text>\n<text id=\"details\" x=\"%d\" y=\"%.0f\">",
		LEFT, LEFT + FLAME_SVG_W, LEFT + FLAME_SVG_W, h - 10, LEFT, h - 10);
	if (fl->hot != FLAME_NONE) {
		fputs("hot: ", out);
		xml(out, fl->names[fl->hot]);
		fprintf(out, " %.0f%% of %llu samples", 100.0 * (double)fl->hot_samples /
				(double)root->total, (unsigned long long)root->total);
	}
	fputs("</text>\n<g id=\"frames\">\n", out);
	frame(&L, 0, 0);
	fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		flame_svg_js);
	return ferror(out) ? -EIO : 0;
}
