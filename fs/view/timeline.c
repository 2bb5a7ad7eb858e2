/*
 * timeline.c — when a subtree ran: `timeline`, one line per time bucket
 * that holds counts of the subtree (its start, samples, weight), and
 * `timeline.svg`, the same as a bar chart drawn in the self-contained
 * style of flame.svg.
 *
 * A tree keeps no counts per bucket (that would cost memory per node and
 * bucket in every tree): a timeline reads the counts of the tree's
 * series in its window from the store again, when it is rendered, and
 * sums those whose store node lies in the subtree.  Whether it does is
 * decided once per store node, memoized: a store node maps to the view
 * node its parent's maps to, or to that node's child of the same frame
 * name (as build.c merges them), so only the nodes on the way from the
 * binary down to the subtree's root need their names compared; below
 * it every node is in, beside it every node is out.  The top root and a
 * binary's node take every count of their series without a test.  Trees
 * derived from trees (diffs, callers, callees) read nothing and show
 * only the header.
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

/* The buckets of one read, summed as the counts arrive. */
struct tcollect {
	const struct view_tree *t;
	uint32_t node;        /* the subtree's root */
	const uint32_t *path; /* the view nodes from the binary's (0) down to node */
	uint32_t depth;       /* entries of path */
	uint32_t *memo;       /* store node -> MEMO_* or MEMO_PATH + path index */
	uint32_t *walk;       /* scratch: store nodes not yet decided */
	bool all;             /* every count is in the subtree */
	struct tbucket *b;
	size_t nb, cap;
};

#define MEMO_UNKNOWN 0u
#define MEMO_OUT     1u
#define MEMO_IN      2u
#define MEMO_PATH    3u /* + k: maps to path[k], an ancestor of the subtree's root */

/* Whether store node sn lies in the subtree: MEMO_IN or MEMO_OUT, or a
 * negative errno. */
static int classify(struct tcollect *c, uint32_t sn)
{
	const struct view_tree *t = c->t;
	struct store *s = t->src.store;
	size_t depth = 0;
	uint32_t state, parent, frame;
	int r;

	if (sn >= t->src.store_nodes)
		return MEMO_OUT; /* a stack the tree has not seen */
	while ((state = c->memo[sn]) == MEMO_UNKNOWN) {
		if (depth == t->src.store_nodes)
			return -EIO; /* a cycle: the store is corrupt */
		c->walk[depth++] = sn;
		if ((r = store_node_get(s, sn, &parent, &frame)) < 0)
			return r;
		if (parent >= t->src.store_nodes)
			return -EIO;
		sn = parent;
	}
	while (depth > 0) {
		sn = c->walk[--depth];
		if (state == MEMO_OUT || state == MEMO_IN) {
			c->memo[sn] = state;
			continue;
		}
		/* The parent maps to path[k], above the subtree's root: this
		 * node maps to path[k + 1] when it has that node's name. */
		uint32_t k = state - MEMO_PATH;
		struct store_frame f;
		size_t len;
		if ((r = store_node_get(s, sn, &parent, &frame)) < 0 ||
		    (r = store_frame_get(s, frame, &f)) < 0)
			return r;
		const char *name = view_node_name(t, c->path[k + 1], &len);
		if (f.name_len != len || (len && memcmp(f.name, name, len) != 0))
			state = MEMO_OUT;
		else if (k + 2 == c->depth)
			state = MEMO_IN;
		else
			state = MEMO_PATH + k + 1;
		c->memo[sn] = state;
	}
	return state == MEMO_IN ? MEMO_IN : MEMO_OUT; /* on the path above: out */
}

static int add_count(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	struct tcollect *c = ctx;

	if (!c->all) {
		int r = classify(c, node);
		if (r < 0)
			return r;
		if (r != MEMO_IN)
			return 0;
	} else if (node >= c->t->src.store_nodes) {
		return 0;
	}
	/* A series' counts come in bucket order: add to the last bucket. */
	if (c->nb && c->b[c->nb - 1].start == bucket_start) {
		struct tbucket *l = &c->b[c->nb - 1];
		if (__builtin_add_overflow(l->samples, samples, &l->samples) ||
		    __builtin_add_overflow(l->weight, weight, &l->weight))
			return -EOVERFLOW;
		return 0;
	}
	if (c->nb == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct tbucket *nbuf = realloc(c->b, cap * sizeof(*nbuf));
		if (!nbuf)
			return -ENOMEM;
		c->b = nbuf;
		c->cap = cap;
	}
	c->b[c->nb++] = (struct tbucket){bucket_start, samples, weight};
	return 0;
}

/* The buckets of the subtree of `node`, by start, into *out (malloc'd;
 * the caller frees) and their count into *nout: read from the store the
 * tree was built from (nothing for a derived tree). */
static int collect(const struct view_tree *t, uint32_t node, struct tbucket **out, size_t *nout)
{
	struct tcollect c = {.t = t, .node = node, .all = true};
	uint32_t *path = NULL, binary = VIEW_NONE;
	int r = 0;

	*out = NULL;
	*nout = 0;
	if (!t->src.store)
		return 0;
	if (node != VIEW_ROOT) {
		/* The view nodes from the binary's down to node. */
		uint32_t depth = 0;
		for (uint32_t n = node; n != VIEW_ROOT; n = t->nodes[n].parent)
			depth++;
		path = malloc(depth * sizeof(*path));
		if (!path)
			return -ENOMEM;
		uint32_t k = depth;
		for (uint32_t n = node; n != VIEW_ROOT; n = t->nodes[n].parent)
			path[--k] = n;
		binary = path[0];
		c.path = path;
		c.depth = depth;
		if (depth > 1) {
			/* calloc: only the pages of nodes the series reach are touched. */
			c.all = false;
			c.memo = calloc(t->src.store_nodes ? t->src.store_nodes : 1,
			                sizeof(*c.memo));
			c.walk = malloc((t->src.store_nodes ? t->src.store_nodes : 1) *
			                sizeof(*c.walk));
			if (!c.memo || !c.walk) {
				r = -ENOMEM;
				goto out;
			}
			if (t->src.store_nodes > STORE_ROOT_NODE)
				c.memo[STORE_ROOT_NODE] = MEMO_PATH;
		}
	}
	for (size_t i = 0; i < t->src.nseries && r == 0; i++) {
		if (binary != VIEW_NONE && t->src.binary[i] != binary)
			continue;
		r = store_series_counts(t->src.store, t->src.series[i], t->src.from, t->src.to,
		                        add_count, &c);
		if (r > 0)
			r = -EIO;
	}
	if (r < 0)
		goto out;
	qsort(c.b, c.nb, sizeof(*c.b), cmp_tbucket);
	size_t k = 0;
	for (size_t i = 0; i < c.nb; i++) {
		if (k && c.b[k - 1].start == c.b[i].start) {
			if (__builtin_add_overflow(c.b[k - 1].samples, c.b[i].samples,
			                           &c.b[k - 1].samples) ||
			    __builtin_add_overflow(c.b[k - 1].weight, c.b[i].weight,
			                           &c.b[k - 1].weight)) {
				r = -EOVERFLOW;
				goto out;
			}
		} else {
			c.b[k++] = c.b[i];
		}
	}
	*out = c.b;
	*nout = k;
	c.b = NULL;
out:
	free(c.b);
	free(c.memo);
	free(c.walk);
	free(path);
	return r;
}

/* Numbers and the renderer's own words only: a name, unit or event goes
 * through view_text_append() or view_xml_append(). */
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
	const char *event = t->event ? t->event : "", *unit = t->unit ? t->unit : "";
	r = appendf(out, "# %zu buckets of %" PRIu32 " s; clock %s; unit ", n,
	            t->src.bucket_seconds,
	            wall_clock(b, n) ? "unix (seconds, UTC)"
	                             : "perf (seconds since boot unless perf recorded with -k)");
	if (r == 0 && (r = view_text_append(out, unit, strlen(unit), 0)) == 0 &&
	    (r = view_buf_append(out, " (", 2)) == 0 &&
	    (r = view_text_append(out, event, strlen(event), 0)) == 0)
		r = appendf(out, ")\n# start samples weight start_utc\n");
	for (size_t i = 0; i < n && r == 0; i++) {
		char when[32];
		iso(when, b[i].start);
		r = appendf(out, "%" PRId64 " %" PRIu64 " %" PRIu64 " %s\n", b[i].start,
		            b[i].samples, b[i].weight, when);
	}
	free(b);
	return r;
}

/* A name, unit or event in timeline.svg: at most this many characters. */
#define SVG_TEXT_CHARS 200

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
	int64_t bs = t->src.bucket_seconds ? t->src.bucket_seconds : 60;
	int64_t first = n ? b[0].start : 0, last = n ? b[n - 1].start + bs : bs;
	double span = (double)(last - first);
	const char *name = node == VIEW_ROOT ? "all" : view_node_name(t, node, &len);
	const char *event = t->event ? t->event : "", *unit = t->unit ? t->unit : "";
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
		r = view_xml_append(out, name, len, SVG_TEXT_CHARS);
	if (r == 0 && (r = view_buf_append(out, " (", 2)) == 0 &&
	    (r = view_xml_append(out, event, strlen(event), SVG_TEXT_CHARS)) == 0 &&
	    (r = view_buf_append(out, ", ", 2)) == 0 &&
	    (r = view_xml_append(out, unit, strlen(unit), SVG_TEXT_CHARS)) == 0)
		r = appendf(out, " per %" PRId64 " s bucket)</text>\n", bs);
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
