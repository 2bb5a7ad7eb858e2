/*
 * timeline.c — when a subtree ran: `timeline`, one line per time bucket
 * that holds counts of the subtree (its start, samples, weight), and
 * `timeline.svg`, the same as a bar chart drawn in the self-contained
 * style of flame.svg.  They read the per-bucket self counts a tree built
 * from a store keeps for every node (view_tree.times), summed over the
 * subtree; trees derived from trees (diffs, callers, callees) have none
 * and show only the header.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "view-internal.h"

/* One bucket of the subtree. */
struct tbucket {
	int64_t start;
	uint64_t samples, weight;
};

static int cmp_tbucket(const void *a, const void *b)
{
	const struct tbucket *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The first entry of node n in t->times (binary search). */
static size_t times_lower(const struct view_tree *t, uint32_t n)
{
	size_t lo = 0, hi = t->ntimes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->times[mid].node < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The buckets of the subtree of `node`, by start, into *out (malloc'd;
 * the caller frees) and their count into *nout. */
static int collect(const struct view_tree *t, uint32_t node, struct tbucket **out, size_t *nout)
{
	struct tbucket *b = NULL;
	size_t nb = 0, cap = 0;
	uint32_t *stack = malloc(((size_t)t->nnodes + 1) * sizeof(*stack));
	size_t depth = 0;

	*out = NULL;
	*nout = 0;
	if (!stack)
		return -ENOMEM;
	/* The whole tree: every entry, without a walk. */
	if (node == VIEW_ROOT)
		depth = 0;
	else
		stack[depth++] = node;
	for (size_t i = 0; node == VIEW_ROOT && i < t->ntimes; i++) {
		if (nb == cap) {
			cap = cap ? cap * 2 : 64;
			struct tbucket *nbuf = realloc(b, cap * sizeof(*nbuf));
			if (!nbuf) {
				free(b);
				free(stack);
				return -ENOMEM;
			}
			b = nbuf;
		}
		b[nb++] = (struct tbucket){t->times[i].bucket, t->times[i].samples,
		                           t->times[i].weight};
	}
	while (depth) {
		uint32_t n = stack[--depth];
		const struct vnode *v = &t->nodes[n];
		for (size_t i = times_lower(t, n); i < t->ntimes && t->times[i].node == n; i++) {
			if (nb == cap) {
				cap = cap ? cap * 2 : 64;
				struct tbucket *nbuf = realloc(b, cap * sizeof(*nbuf));
				if (!nbuf) {
					free(b);
					free(stack);
					return -ENOMEM;
				}
				b = nbuf;
			}
			b[nb++] = (struct tbucket){t->times[i].bucket, t->times[i].samples,
			                           t->times[i].weight};
		}
		for (uint32_t i = 0; i < v->nkids; i++)
			stack[depth++] = t->kids[v->first_kid + i];
	}
	free(stack);
	qsort(b, nb, sizeof(*b), cmp_tbucket);
	size_t k = 0;
	for (size_t i = 0; i < nb; i++) {
		if (k && b[k - 1].start == b[i].start) {
			/* Sums of a subtree's counts: at most the subtree's
			 * total, which did not overflow. */
			b[k - 1].samples += b[i].samples;
			b[k - 1].weight += b[i].weight;
		} else {
			b[k++] = b[i];
		}
	}
	*out = b;
	*nout = k;
	return 0;
}

static int appendf(struct view_buf *out, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static int appendf(struct view_buf *out, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EINVAL;
	return view_buf_append(out, buf, (size_t)n);
}

/* Whether the buckets are wall-clock times (else perf's clock). */
static bool wall_clock(const struct tbucket *b, size_t n)
{
	return n == 0 || b[0].start >= STORE_WALL_CLOCK_MIN;
}

/* "2026-11-24T14:02:00Z", or "-" for times before 2000 (perf's clock). */
static void iso(char out[32], int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t < STORE_WALL_CLOCK_MIN || !gmtime_r(&tt, &tm) ||
	    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "-");
}

int view_render_timeline(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct tbucket *b;
	size_t n;
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = collect(t, node, &b, &n)) < 0)
		return r;
	r = appendf(out,
	            "# %zu buckets of %" PRIu32 " s; clock %s; unit %s (%s)\n"
	            "# start samples weight start_utc\n",
	            n, t->bucket_seconds,
	            wall_clock(b, n) ? "unix (seconds, UTC)"
	                             : "perf (seconds since boot unless perf recorded with -k)",
	            t->unit ? t->unit : "", t->event ? t->event : "");
	for (size_t i = 0; i < n && r == 0; i++) {
		char when[32];
		iso(when, b[i].start);
		r = appendf(out, "%" PRId64 " %" PRIu64 " %" PRIu64 " %s\n", b[i].start,
		            b[i].samples, b[i].weight, when);
	}
	free(b);
	return r;
}

/* Appends s with &, <, >, " escaped for XML. */
static int xml_text(struct view_buf *out, const char *s, size_t len)
{
	int r = 0;

	for (size_t i = 0; i < len && r == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '&': r = view_buf_append(out, "&amp;", 5); break;
		case '<': r = view_buf_append(out, "&lt;", 4); break;
		case '>': r = view_buf_append(out, "&gt;", 4); break;
		case '"': r = view_buf_append(out, "&quot;", 6); break;
		default:
			/* XML 1.0 forbids most control characters. */
			r = c < 0x20 && c != '\t' ? view_buf_append(out, "?", 1)
			                          : view_buf_append(out, s + i, 1);
		}
	}
	return r;
}

#define SVG_W  1200
#define SVG_H  360
#define PLOT_X 90
#define PLOT_Y 50
#define PLOT_W (SVG_W - PLOT_X - 30)
#define PLOT_H (SVG_H - PLOT_Y - 60)

int view_render_timeline_svg(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct tbucket *b;
	size_t n, len = 0;
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = collect(t, node, &b, &n)) < 0)
		return r;
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++)
		if (b[i].weight > max)
			max = b[i].weight;
	int64_t bs = t->bucket_seconds ? t->bucket_seconds : 60;
	int64_t first = n ? b[0].start : 0, last = n ? b[n - 1].start + bs : bs;
	double span = (double)(last - first);
	const char *name = node == VIEW_ROOT ? "all" : view_node_name(t, node, &len);
	if (node == VIEW_ROOT)
		len = 3;

	r = appendf(
	        out,
	        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	        "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "xmlns=\"http://www.w3.org/2000/svg\">\n"
	        "<style type=\"text/css\">text { font-family: Verdana, sans-serif; font-size: "
	        "12px; fill: rgb(0,0,0); } .bar { fill: rgb(230,120,30); } .bar:hover { fill: "
	        "rgb(200,60,0); } .axis { stroke: rgb(120,120,120); stroke-width: 1; "
	        "}</style>\n"
	        "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n"
	        "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">Timeline "
	        "of ",
	        SVG_W, SVG_H, SVG_W, SVG_H, SVG_W, SVG_H, SVG_W / 2);
	if (r == 0)
		r = xml_text(out, name, len);
	if (r == 0)
		r = appendf(out, " (%s, %s per %" PRId64 " s bucket)</text>\n",
		            t->event ? t->event : "", t->unit ? t->unit : "", bs);
	if (r == 0)
		r = appendf(out,
		            "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		            "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRIu64 "</text>\n"
		            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n",
		            PLOT_X, PLOT_Y + PLOT_H, PLOT_X + PLOT_W, PLOT_Y + PLOT_H, PLOT_X,
		            PLOT_Y, PLOT_X, PLOT_Y + PLOT_H, PLOT_X - 6, PLOT_Y + 10, max,
		            PLOT_X - 6, PLOT_Y + PLOT_H);
	for (size_t i = 0; i < n && r == 0; i++) {
		double x = PLOT_X + (double)(b[i].start - first) / span * PLOT_W;
		double w = (double)bs / span * PLOT_W;
		double h = max ? (double)b[i].weight / (double)max * PLOT_H : 0;
		char when[32];
		iso(when, b[i].start);
		r = appendf(
		        out,
		        "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\">"
		        "<title>%" PRId64 " %s: %" PRIu64 " samples, weight %" PRIu64
		        "</title></rect>\n",
		        x, PLOT_Y + PLOT_H - h, w > 1.5 ? w - 0.5 : w, h, b[i].start, when,
		        b[i].samples, b[i].weight);
	}
	if (r == 0) {
		char a[32], z[32];
		iso(a, first);
		iso(z, last);
		r = appendf(
		        out,
		        "<text x=\"%d\" y=\"%d\">%" PRId64 " %s</text>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRId64 " %s</text>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%zu buckets with counts; "
		        "clock: %s</text>\n"
		        "</svg>\n",
		        PLOT_X, PLOT_Y + PLOT_H + 18, first, a, PLOT_X + PLOT_W,
		        PLOT_Y + PLOT_H + 18, last, z, SVG_W / 2, PLOT_Y + PLOT_H + 42, n,
		        wall_clock(b, n) ? "unix seconds, UTC" : "perf's (seconds since boot)");
	}
	free(b);
	return r;
}
