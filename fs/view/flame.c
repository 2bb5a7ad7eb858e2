/*
 * flame.c — the flame.svg renderer: an interactive flame graph drawn the
 * way flamegraph.pl draws one (the same layout, palette, tooltips, zoom
 * and search), in C, with its script (fs/view/flame.js) embedded so the file
 * works offline.  Each frame is a <g> with a <title> (name, weight, share),
 * a <rect> whose fg:x and fg:w attributes hold its offset and width in
 * weight units (the script zooms with them), and a <text> that already
 * holds the name cut to fit, so the picture reads without the script too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "flame-js.h"
#include "view-internal.h"

#define IMAGE_WIDTH  1200
#define PAD          10 /* left and right */
#define FRAME_HEIGHT 16
#define FONT_SIZE    12
#define PAD_TOP      (FONT_SIZE * 4) /* title and subtitle */
#define PAD_BOTTOM   (FONT_SIZE * 2 + 10)
#define FRAMES_WIDTH (IMAGE_WIDTH - 2 * PAD)
/* Frames narrower than this share of the graph are left out. */
#define MIN_SHARE 0.001
/* A tooltip shows at most this many characters of a name, so that the
 * graph's size follows its frames, not its longest names. */
#define TITLE_CHARS 1024

struct frame {
	uint32_t node; /* VIEW_NONE for the "all" frame */
	bool ancestor; /* "all" or below the graph's node: as wide as the graph */
	uint32_t depth;
	uint64_t x; /* offset in weight units */
};

struct flame {
	const struct view_tree *t;
	uint32_t node; /* the graph's */
	struct view_buf *out;
	uint64_t total;      /* the graph's width in weight units (B's in a diff) */
	uint64_t base_total; /* A's, in a diff */
	uint32_t max_depth;
	double max_delta; /* largest |share change| drawn, in a diff */
};

/* ---- text ------------------------------------------------------------- */

static int put(struct flame *f, const char *s)
{
	return view_buf_append(f->out, s, strlen(s));
}

/* Numbers and the renderer's own words only: a string of the data (a
 * name, the unit, the event) goes through put_xml(). */
static int putf(struct flame *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int putf(struct flame *f, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	return view_buf_append(f->out, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Appends name[0..len) as XML text, at most `max_chars` characters of it
 * (see view_xml_append(), the only way a string enters the SVG). */
static int put_xml(struct flame *f, const char *name, size_t len, size_t max_chars)
{
	return view_xml_append(f->out, name, len, max_chars);
}

static int put_xml_str(struct flame *f, const char *s)
{
	return view_xml_append(f->out, s, strlen(s), SIZE_MAX);
}

/* Writes v with thousands separators. */
static int put_grouped(struct flame *f, uint64_t v)
{
	char tmp[32], out[48];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = tmp[i];
	}
	return view_buf_append(f->out, out, (size_t)o);
}

/* ---- colours ------------------------------------------------------------ */

/* flamegraph.pl's palettes, picked by frame kind, with the variation taken
 * from a hash of the name so a name keeps its colour in every graph. */
static void colour(const struct view_tree *t, uint32_t node, char out[40])
{
	size_t len = 0;
	const char *name = node == VIEW_NONE ? "" : view_node_name(t, node, &len);
	uint64_t h = XXH64(name, len, 0);
	double v1 = (double)(h & 0xffff) / 65536, v2 = (double)(h >> 16 & 0xffff) / 65536,
	       v3 = (double)(h >> 32 & 0xffff) / 65536;
	int kind = node == VIEW_NONE || t->nodes[node].parent == VIEW_ROOT || node == VIEW_ROOT
	                   ? -1
	                   : vnode_frame(t, node)->kind;
	int r, g, b;

	switch (kind) {
	case -1: /* "all" and binaries */ r = g = b = 200 + (int)(30 * v1); break;
	case STORE_FRAME_KERNEL: /* orange */
		r = 200 + (int)(55 * v3), g = 90 + (int)(65 * v1), b = 0;
		break;
	case STORE_FRAME_INLINE: /* aqua */
		r = 50 + (int)(60 * v1), g = 165 + (int)(55 * v1), b = 165 + (int)(55 * v1);
		break;
	case STORE_FRAME_JIT: /* green */
		r = 0, g = 190 + (int)(50 * v2), b = (int)(50 * v1);
		break;
	case STORE_FRAME_PYTHON: /* blue */
		r = 80 + (int)(60 * v1), g = 80 + (int)(60 * v1), b = 190 + (int)(55 * v2);
		break;
	case STORE_FRAME_UNKNOWN: /* grey */ r = g = b = 160 + (int)(40 * v1); break;
	default: /* hot */ r = 205 + (int)(50 * v3), g = (int)(230 * v1), b = (int)(55 * v2); break;
	}
	snprintf(out, 40, "rgb(%d,%d,%d)", r, g, b);
}

static double share_delta(const struct flame *f, uint32_t node)
{
	const struct view_tree *t = f->t;
	double sa = f->base_total ? (double)t->base[node].total_weight / (double)f->base_total : 0;
	double sb = f->total ? (double)t->nodes[node].total_weight / (double)f->total : 0;

	return sb - sa;
}

/* difffolded's colours: red where the share grew, blue where it shrank,
 * as deep as the change is against the largest one drawn. */
static void diff_colour(const struct flame *f, uint32_t node, char out[40])
{
	double d = node == VIEW_NONE ? 0 : share_delta(f, node);
	int x = f->max_delta > 0 ? (int)(210 * (d < 0 ? -d : d) / f->max_delta) : 0;

	if (d > 0)
		snprintf(out, 40, "rgb(255,%d,%d)", 255 - x, 255 - x);
	else if (d < 0)
		snprintf(out, 40, "rgb(%d,%d,255)", 255 - x, 255 - x);
	else
		snprintf(out, 40, "rgb(250,250,250)");
}

/* ---- frames ------------------------------------------------------------- */

/* A frame's weight: an ancestor's is the graph's node's (only the stacks
 * through that node are drawn, as in its folded file). */
static uint64_t weight_of(const struct flame *f, const struct frame *fr)
{
	return fr->ancestor ? f->total : f->t->nodes[fr->node].total_weight;
}

static uint64_t base_weight_of(const struct flame *f, const struct frame *fr)
{
	return fr->ancestor ? f->base_total : f->t->base[fr->node].total_weight;
}

static int put_title(struct flame *f, const struct frame *fr)
{
	const struct view_tree *t = f->t;
	uint32_t node = fr->node;
	size_t len = 3;
	const char *name = node == VIEW_NONE ? "all" : view_node_name(t, node, &len);
	uint64_t w = weight_of(f, fr);
	int r;

	if ((r = put(f, "<title>")) < 0 || (r = put_xml(f, name, len, TITLE_CHARS)) < 0)
		return r;
	if (t->base) {
		uint64_t a = base_weight_of(f, fr);
		double sa = f->base_total ? 100.0 * (double)a / (double)f->base_total : 0;
		double sb = f->total ? 100.0 * (double)w / (double)f->total : 0;
		if ((r = put(f, " (A ")) < 0 || (r = put_grouped(f, a)) < 0 ||
		    (r = put(f, ", B ")) < 0 || (r = put_grouped(f, w)) < 0 ||
		    (r = put(f, " ")) < 0 || (r = put_xml_str(f, t->unit)) < 0)
			return r;
		return putf(f, "; %.2f%% to %.2f%%, %+.2f%%)</title>", sa, sb, sb - sa);
	}
	uint64_t samples =
	        fr->ancestor ? t->nodes[f->node].total_samples : t->nodes[node].total_samples;
	if ((r = put(f, " (")) < 0 || (r = put_grouped(f, w)) < 0)
		return r;
	if (strcmp(t->unit, "count") == 0 || t->unit[0] == '\0')
		r = put(f, w == 1 ? " sample" : " samples");
	else if ((r = put(f, " ")) == 0)
		r = put_xml_str(f, t->unit);
	if (r == 0 && samples != w && strcmp(t->unit, "count") != 0) {
		if ((r = put(f, ", ")) < 0 || (r = put_grouped(f, samples)) < 0)
			return r;
		r = put(f, samples == 1 ? " sample" : " samples");
	}
	if (r < 0)
		return r;
	return putf(f, ", %.2f%%)</title>", f->total ? 100.0 * (double)w / (double)f->total : 0);
}

static int put_frame(struct flame *f, const struct frame *fr)
{
	uint64_t w = weight_of(f, fr);
	double x = PAD + (double)fr->x / (double)f->total * FRAMES_WIDTH;
	double width = (double)w / (double)f->total * FRAMES_WIDTH;
	int y = PAD_TOP + (int)(f->max_depth - fr->depth) * FRAME_HEIGHT;
	size_t len = 3;
	const char *name = fr->node == VIEW_NONE ? "all" : view_node_name(f->t, fr->node, &len);
	char fill[40];
	int r;

	if (f->t->base)
		diff_colour(f, fr->ancestor ? VIEW_NONE : fr->node, fill);
	else
		colour(f->t, fr->node, fill);
	if ((r = put(f, "<g>")) < 0 || (r = put_title(f, fr)) < 0 ||
	    (r = putf(f,
	              "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
	              "fg:x=\"%llu\" fg:w=\"%llu\"/><text x=\"%.1f\" y=\"%.1f\">",
	              x, y, width, FRAME_HEIGHT - 1, fill, (unsigned long long)fr->x,
	              (unsigned long long)w, x + 3, y + FRAME_HEIGHT / 2.0 + 2.5)) < 0)
		return r;
	double fits = (width - 6) / (FONT_SIZE * 0.59);
	if (fits >= 3 && (r = put_xml(f, name, len, (size_t)fits)) < 0)
		return r;
	return put(f, "</text></g>\n");
}

/* Walks the graph's frames: the "all" frame, the ancestors of `node`,
 * `node` and its subtree, skipping frames narrower than MIN_SHARE.  Calls
 * fn for each, in depth-first order. */
static int walk(struct flame *f, uint32_t node, int (*fn)(struct flame *, const struct frame *))
{
	const struct view_tree *t = f->t;
	struct frame *stack = NULL;
	uint32_t *chain = NULL, depth0 = 0;
	size_t depth = 0, cap = 64;
	int r;

	/* "all", then the ancestors below `node` from the top root down. */
	struct frame all = {VIEW_NONE, true, 0, 0};
	if ((r = fn(f, &all)) < 0)
		return r;
	for (uint32_t a = node; a != VIEW_ROOT; a = t->nodes[a].parent)
		depth0++;
	chain = malloc((size_t)(depth0 ? depth0 : 1) * sizeof(*chain));
	if (!chain)
		return -ENOMEM;
	uint32_t k = depth0;
	for (uint32_t a = node; a != VIEW_ROOT; a = t->nodes[a].parent)
		chain[--k] = a; /* chain[d - 1] is at depth d */
	for (uint32_t d = 1; d < depth0 && r == 0; d++) {
		struct frame anc = {chain[d - 1], true, d, 0};
		r = fn(f, &anc);
	}
	free(chain);
	if (r < 0)
		return r;
	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[depth++] = (struct frame){node, false, depth0, 0};
	while (depth > 0) {
		struct frame fr = stack[--depth];
		const struct vnode *v = &t->nodes[fr.node];
		if (fr.node != VIEW_ROOT && (r = fn(f, &fr)) < 0)
			break;
		if (depth + v->nkids > cap) {
			size_t ncap = (depth + v->nkids) * 2;
			struct frame *ns = realloc(stack, ncap * sizeof(*ns));
			if (!ns) {
				r = -ENOMEM;
				break;
			}
			stack = ns;
			cap = ncap;
		}
		/* Children left to right; pushed right to left. */
		uint64_t x = fr.x;
		for (uint32_t i = 0; i < v->nkids; i++)
			x += t->nodes[t->kids[v->first_kid + i]].total_weight;
		for (uint32_t i = v->nkids; i-- > 0;) {
			uint32_t c = t->kids[v->first_kid + i];
			uint64_t w = t->nodes[c].total_weight;
			x -= w;
			if ((double)w >= MIN_SHARE * (double)f->total && w > 0)
				stack[depth++] = (struct frame){c, false, fr.depth + 1, x};
		}
	}
	free(stack);
	return r < 0 ? r : 0;
}

static int measure(struct flame *f, const struct frame *fr)
{
	if (fr->depth > f->max_depth)
		f->max_depth = fr->depth;
	if (f->t->base && !fr->ancestor) {
		double d = share_delta(f, fr->node);
		if (d < 0)
			d = -d;
		if (d > f->max_delta)
			f->max_delta = d;
	}
	return 0;
}

int view_render_flame_svg(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	view_tree_settle(t);
	struct flame f = {.t = t, .node = node, .out = out, .total = t->nodes[node].total_weight};
	int r;

	if (t->base)
		f.base_total = t->base[node].total_weight;
	if (f.total > 0 && (r = walk(&f, node, measure)) < 0)
		return r;
	int height = PAD_TOP + (int)(f.max_depth + 1) * FRAME_HEIGHT + PAD_BOTTOM;
	if ((r = putf(&f,
	              "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	              "<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init(evt)\" "
	              "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
	              "xmlns:fg=\"urn:flamefs:flame\">\n",
	              IMAGE_WIDTH, height, IMAGE_WIDTH, height)) < 0 ||
	    (r = put(&f, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" "
	                 "x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop "
	                 "stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n"
	                 "<style type=\"text/css\">text{font-family:Verdana,sans-serif;"
	                 "font-size:12px;fill:rgb(0,0,0)}#title{text-anchor:middle;font-size:17px}"
	                 "#search,#matched{text-anchor:end}#search,#unzoom{cursor:pointer;opacity:"
	                 ".6}#search:hover,#unzoom:hover{opacity:1}#frames>g:hover>rect{stroke:"
	                 "black;stroke-width:.5;cursor:pointer}.hide{display:none}.parent{opacity:"
	                 ".5}</style>\n<script type=\"text/ecmascript\"><![CDATA[\n")) < 0 ||
	    (r = view_buf_append(out, flame_js, sizeof(flame_js) - 1)) < 0 ||
	    (r = put(&f, "]]></script>\n")) < 0 ||
	    (r = putf(&f,
	              "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
	              "fill=\"url(#background)\"/>\n",
	              IMAGE_WIDTH, height)) < 0 ||
	    (r = putf(&f, "<text id=\"title\" x=\"%d\" y=\"24\">%s</text>\n", IMAGE_WIDTH / 2,
	              t->base ? "Differential Flame Graph" : "Flame Graph")) < 0 ||
	    (r = putf(&f, "<text id=\"subtitle\" x=\"%d\" y=\"%d\" style=\"text-anchor:middle\">",
	              IMAGE_WIDTH / 2, PAD_TOP - 8)) < 0 ||
	    (r = put_xml_str(&f, t->event)) < 0 || (r = put(&f, " (")) < 0 ||
	    (r = put_xml_str(&f, t->unit)) < 0 ||
	    (r = put(&f, t->base ? "): B against A, widths by B, red grew, blue shrank" : ")")) <
	            0 ||
	    (r = putf(&f,
	              "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset "
	              "Zoom</text>\n"
	              "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
	              "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
	              "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n",
	              PAD, IMAGE_WIDTH - PAD, PAD, height - PAD_BOTTOM / 2, IMAGE_WIDTH - PAD,
	              height - PAD_BOTTOM / 2)) < 0)
		return r;
	if (f.total > 0)
		r = walk(&f, node, put_frame);
	else
		r = putf(&f, "<text x=\"%d\" y=\"%d\">No samples</text>\n", PAD,
		         PAD_TOP + FRAME_HEIGHT - 4);
	if (r < 0)
		return r;
	return put(&f, "</g>\n</svg>\n");
}
