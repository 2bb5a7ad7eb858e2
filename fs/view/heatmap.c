/*
 * heatmap.c — heatmap.svg: where in each second a subtree ran, as
 * FlameScope draws it: one column per second, 50 rows of 20 ms for the
 * offset inside the second (0 at the top), each cell coloured by the
 * number of the subtree's samples whose moment falls in it.  The
 * samples are the recent tier's detail: the subtree's run of the tree's
 * time index (timeline.c; read from the store at the first timeline or
 * heatmap of the tree), or, for a tree too large for one, read again
 * from the store when rendered (under the same lock) and streamed into
 * the cells.  Only the cells are held.  Hovering a cell
 * names its interval and count, and each cell links to the @range
 * directory of its interval (where the tree's place is known:
 * view_tree_set_place()), so a click opens that 20 ms of the same
 * directory.  Self-contained like flame.svg: no script, font or image
 * from elsewhere; every string of the data goes through
 * view_xml_append().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

#define ROW_US   (1000000 / VIEW_HEATMAP_ROWS) /* 20 ms */
#define CELL_H   8
#define LEFT     70
#define TOP      60
#define BOTTOM   70
#define RIGHT    30
#define TEXT_MAX 200

int view_tree_set_place(struct view_tree *t, unsigned between, const char *top)
{
	struct view_place *p = calloc(1, sizeof(*p));

	if (!p || !(p->top = strdup(top ? top : ""))) {
		view_place_free(p);
		return -ENOMEM;
	}
	p->between = between;
	view_place_free(t->src.place);
	t->src.place = p;
	return 0;
}

void view_place_free(struct view_place *p)
{
	if (!p)
		return;
	free(p->top);
	free(p);
}

/* The cells being filled. */
struct heat {
	struct view_subtree st;
	int64_t S, E; /* the samples drawn: [S, E), microseconds */
	int64_t col0; /* the first column's second */
	size_t ncols;
	uint32_t *cells; /* [col * ROWS + row] */
	uint64_t drawn;
};

/* A sample of the subtree at time_us, into its cell when drawn. */
static void add_moment(struct heat *h, int64_t time_us)
{
	if (time_us < h->S || time_us >= h->E)
		return;
	int64_t sec = view_floor_div(time_us, 1000000);
	size_t col = (size_t)(sec - h->col0);
	size_t row = (size_t)((time_us - sec * 1000000) / ROW_US);
	h->cells[col * VIEW_HEATMAP_ROWS + row]++;
	h->drawn++;
}

static int add_sample(void *ctx, const struct store_sample *smp)
{
	struct heat *h = ctx;
	int r;

	if (smp->time_us < h->S || smp->time_us >= h->E)
		return 0;
	if ((r = view_subtree_has(&h->st, smp->node)) <= 0)
		return r;
	add_moment(h, smp->time_us);
	return 0;
}

/* Appends directory names (already escaped as the mount shows them) to a
 * link: as a URL path for an href (every byte but letters, digits and
 * -._~!$&'()*+,;=:@/ as %XX, so that a name's own %XX reaches the mount
 * unchanged), then XML-escaped; or as text for a title. */
static int append_path(struct view_buf *out, const char *s, size_t len, bool url)
{
	static const char safe[] = "-._~!$&'()*+,;=:@/";
	struct view_buf u = {0};
	int r = 0;

	if (!url)
		return view_xml_append(out, s, len, SIZE_MAX);
	for (size_t i = 0; i < len && r == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		char hex[4];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    (c && strchr(safe, c)))
			r = view_buf_append(&u, s + i, 1);
		else {
			snprintf(hex, sizeof(hex), "%%%02X", c);
			r = view_buf_append(&u, hex, 3);
		}
	}
	if (r == 0 && u.len)
		r = view_xml_append(out, u.data, u.len, SIZE_MAX);
	view_buf_free(&u);
	return r;
}

/* The directory part of node's path below the tree's top directory
 * ("a/b/", escaped as the mount names them), appended. */
static int append_dirs(struct view_buf *out, const struct view_tree *t, uint32_t node, bool url)
{
	uint32_t chain[256];
	size_t k = 0;

	for (uint32_t n = node; n != VIEW_ROOT && t->nodes[n].parent != VIEW_ROOT;
	     n = t->nodes[n].parent) {
		if (k == sizeof(chain) / sizeof(chain[0]))
			return -ENAMETOOLONG;
		chain[k++] = n;
	}
	while (k > 0) {
		char esc[VIEW_NAME_MAX + 1];
		size_t len;
		const char *name = view_node_name(t, chain[--k], &len);
		size_t el = view_escape(name, len, 0, esc);
		int r = append_path(out, esc, el, url);
		if (r < 0 || (r = view_buf_append(out, "/", 1)) < 0)
			return r;
	}
	return 0;
}

/* How many directories node's lies below its view's root. */
static unsigned dir_depth(const struct view_tree *t, uint32_t node, const struct view_place *p)
{
	unsigned d = p->between;

	if (node == VIEW_ROOT)
		return d;
	d += 1;
	for (const char *c = p->top; *c; c++)
		d += *c == '/';
	for (uint32_t n = node; t->nodes[n].parent != VIEW_ROOT; n = t->nodes[n].parent)
		d++;
	return d;
}

/* The link from node's directory to the @range directory of [from, to)
 * showing the same subtree in the same view: the part before the times
 * (relative, from the heatmap's directory up to its view's root: href
 * only) and the part after them, as an href (url) or as a title's text. */
static int link_parts(const struct view_tree *t, uint32_t node, struct view_buf *pre,
                      struct view_buf *post, bool url)
{
	const struct view_place *p = t->src.place;
	int r = 0;

	if (!p)
		return view_buf_append(pre, "@range/", 7);
	for (unsigned d = dir_depth(t, node, p); url && d > 0 && r == 0; d--)
		r = view_buf_append(pre, "../", 3);
	if (r == 0)
		r = view_buf_append(pre, "@range/", 7);
	if (r == 0 && node != VIEW_ROOT && *p->top) {
		if ((r = append_path(post, p->top, strlen(p->top), url)) == 0 &&
		    (r = view_buf_append(post, "/", 1)) == 0)
			r = append_dirs(post, t, node, url);
	}
	if (r == 0)
		r = view_buf_append(post, "", 0);
	return r;
}

/* A cell's colour, FlameScope's way: pale for few samples, deep red for
 * the most of any cell. */
static void colour(uint32_t n, uint32_t max, int rgb[3])
{
	double f = max ? (double)n / (double)max : 0;

	rgb[0] = 255 - (int)(f * 80);
	rgb[1] = 235 - (int)(f * 205);
	rgb[2] = 225 - (int)(f * 205);
}

/* Narrows [h->S, h->E) to what the recent tier can hold (the buckets
 * that reach into its keep window, counted back from the newest sample:
 * roll-up forgets whole buckets only) and to the last
 * VIEW_HEATMAP_COLUMNS seconds, and sets the columns. */
static void heat_columns(const struct view_tree *t, struct heat *h)
{
	int64_t keep = store_keep_samples(t->src.store);
	int64_t bs = (int64_t)(t->src.bucket_seconds ? t->src.bucket_seconds : 1) * 1000000;
	if (keep > 0 && keep < INT64_MAX / 1000000 / 2) {
		int64_t edge = view_floor_div(h->E - keep * 1000000, bs) * bs;
		if (edge > h->S)
			h->S = edge;
	}
	int64_t c1 = view_floor_div(h->E - 1, 1000000);
	h->col0 = view_floor_div(h->S, 1000000);
	if (c1 - h->col0 + 1 > VIEW_HEATMAP_COLUMNS) {
		h->col0 = c1 - VIEW_HEATMAP_COLUMNS + 1;
		h->S = h->col0 * 1000000;
	}
	h->ncols = (size_t)(c1 - h->col0 + 1);
}

/* Counts the samples of the subtree of node into the cells: from the
 * tree's index (its run of the subtree's samples), or else the detail of
 * the series that have some, asked for in one read. */
static int heat_fill(const struct view_tree *t, uint32_t node, struct heat *h)
{
	const struct view_time_index *x;
	size_t nd = 0, a, z;
	int r;

	if (!(h->cells = calloc(h->ncols * VIEW_HEATMAP_ROWS, sizeof(*h->cells))))
		return -ENOMEM;
	if ((r = view_time_index_get(t, &x)) < 0)
		return r;
	if (x) {
		view_time_samples_of(x, node, &a, &z);
		for (size_t i = a; i < z; i++)
			add_moment(h, x->samples[i].time_us);
		return 0;
	}
	if ((r = view_subtree_init(&h->st, t, node)) < 0)
		return r;
	uint32_t *ids = malloc(t->src.nseries * sizeof(*ids) + 1);
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->src.nseries; i++)
		if (view_subtree_series(&h->st, i) && t->src.recent[i])
			ids[nd++] = t->src.series[i];
	if (nd > 1)
		r = store_samples_prefetch(t->src.store, ids, nd, h->S, h->E);
	free(ids);
	for (size_t i = 0; i < t->src.nseries && r == 0; i++) {
		if (!view_subtree_series(&h->st, i) || !t->src.recent[i])
			continue;
		r = store_series_samples(t->src.store, t->src.series[i], h->S, h->E, add_sample, h);
		if (r == -EOPNOTSUPP || r == -ENOSYS)
			r = 0;
		else if (r > 0)
			r = -EIO;
	}
	return r;
}

/* The picture's size: a cell's width, the plot's and the whole's. */
struct heat_geom {
	int cw, pw, ph, width, height;
	uint32_t max; /* the most samples in a cell */
};

static void heat_geom(const struct heat *h, struct heat_geom *g)
{
	g->max = 0;
	for (size_t i = 0; i < h->ncols * VIEW_HEATMAP_ROWS; i++)
		if (h->cells[i] > g->max)
			g->max = h->cells[i];
	g->cw = h->ncols ? (int)(1200 / h->ncols) : 12;
	g->cw = g->cw < 2 ? 2 : g->cw > 16 ? 16 : g->cw;
	g->pw = (int)h->ncols * g->cw;
	g->width = LEFT + (g->pw > 600 ? g->pw : 600) + RIGHT;
	g->ph = VIEW_HEATMAP_ROWS * CELL_H;
	g->height = TOP + g->ph + BOTTOM;
}

/* The SVG's head: style, background, plot frame, title and subtitle. */
static int heat_head(struct view_buf *out, const struct view_tree *t, uint32_t node,
                     const struct heat *h, const struct heat_geom *g)
{
	size_t len = 3;
	const char *name = node == VIEW_ROOT ? "all" : view_node_name(t, node, &len);
	char a[40], z[40];
	view_format_time_us(h->S, a);
	view_format_time_us(h->E, z);

	int r = view_buf_printf(
	        out,
	        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	        "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "xmlns=\"http://www.w3.org/2000/svg\" "
	        "xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n",
	        g->width, g->height, g->width, g->height);
	if (r == 0)
		r = view_buf_printf(
		        out,
		        "<style type=\"text/css\">text { font-family: Verdana, sans-serif; "
		        "font-size: 12px; fill: rgb(0,0,0); } .c:hover { stroke: rgb(0,0,0); "
		        "stroke-width: 1; }</style>\n"
		        "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
		        "fill=\"rgb(248,248,248)\"/>\n"
		        "<rect id=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		        "fill=\"rgb(250,250,250)\" stroke=\"rgb(200,200,200)\"/>\n"
		        "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: "
		        "17px\">Heatmap of ",
		        g->width, g->height, LEFT, TOP, g->pw, g->ph, g->width / 2);
	if (r == 0)
		r = view_xml_append(out, name, len, TEXT_MAX);
	if (r == 0)
		r = view_buf_printf(
		        out,
		        "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\">%" PRIu64
		        " samples in [%s, %s): a column a second, a row 20 ms; most in a "
		        "cell: %" PRIu32 "</text>\n",
		        g->width / 2, h->drawn, a, z, g->max);
	return r;
}

/* The offsets down the left, the seconds along the bottom. */
static int heat_axes(struct view_buf *out, const struct heat *h, const struct heat_geom *g)
{
	int r = 0;

	for (int ms = 0; ms < 1000 && r == 0; ms += 200)
		r = view_buf_printf(out,
		                    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d ms</text>\n",
		                    LEFT - 6, TOP + ms / (ROW_US / 1000) * CELL_H + 10, ms);
	size_t every = (size_t)(g->cw >= 12 ? 10 : g->cw >= 6 ? 30 : 60);
	for (size_t col = 0; col < h->ncols && r == 0; col++) {
		if ((h->col0 + (int64_t)col) % (int64_t)every != 0 && col != 0)
			continue;
		char iso[40];
		int x = LEFT + (int)col * g->cw;
		view_format_time_us((h->col0 + (int64_t)col) * 1000000, iso);
		r = view_buf_printf(out,
		                    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		                    "stroke=\"rgb(120,120,120)\"/>"
		                    "<text x=\"%d\" y=\"%d\" style=\"font-size: 10px\">%s</text>\n",
		                    x, TOP + g->ph, x, TOP + g->ph + 5, x,
		                    TOP + g->ph + 18 + (int)(col / every % 2) * 12, iso);
	}
	return r;
}

/* The @range path of [f, to) between a link's two parts. */
static int heat_path(struct view_buf *out, const struct view_buf *pre, const char *f,
                     const char *to, const struct view_buf *post)
{
	int r = view_buf_append(out, pre->data, pre->len);
	if (r == 0)
		r = view_buf_printf(out, "%s/%s/", f, to);
	if (r == 0 && post->len)
		r = view_buf_append(out, post->data, post->len);
	return r;
}

/* One cell: a link to its 20 ms as an @range directory (href: a URL;
 * title: the path as the mount shows it) around its rectangle. */
static int heat_cell(struct view_buf *out, const struct heat *h, const struct heat_geom *g,
                     size_t col, unsigned row, const struct view_buf links[4])
{
	uint32_t n = h->cells[col * VIEW_HEATMAP_ROWS + row];
	int64_t from = (h->col0 + (int64_t)col) * 1000000 + (int64_t)row * ROW_US;
	char f[40], to[40], iso[40];
	int rgb[3];

	view_format_us(from, f);
	view_format_us(from + ROW_US, to);
	view_format_time_us(from, iso);
	colour(n, g->max, rgb);
	int r = view_buf_append(out, "<a xlink:href=\"", strlen("<a xlink:href=\""));
	if (r == 0)
		r = heat_path(out, &links[0], f, to, &links[1]);
	if (r == 0)
		r = view_buf_printf(out,
		                    "\"><rect class=\"c\" x=\"%d\" y=\"%d\" width=\"%d\" "
		                    "height=\"%d\" fill=\"rgb(%d,%d,%d)\"><title>%" PRIu32
		                    " samples in [%s, +20 ms): ",
		                    LEFT + (int)col * g->cw, TOP + (int)row * CELL_H, g->cw, CELL_H,
		                    rgb[0], rgb[1], rgb[2], n, iso);
	if (r == 0)
		r = heat_path(out, &links[2], f, to, &links[3]);
	if (r == 0)
		r = view_buf_printf(out, "</title></rect></a>\n");
	return r;
}

int view_render_heatmap_svg(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct heat h = {0};
	struct heat_geom g;
	/* A cell link's parts before and after its times: as a URL, then as
	 * the mount shows the path. */
	struct view_buf links[4] = {{0}, {0}, {0}, {0}};
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	const struct view_window *w = t->src.window;
	h.S = t->src.first_us;
	h.E = t->src.last_us == INT64_MIN ? INT64_MIN : t->src.last_us + 1;
	if (w) {
		h.S = w->from_us > h.S ? w->from_us : h.S;
		h.E = w->to_us < h.E ? w->to_us : h.E;
	}
	if (t->src.store && h.E > h.S) {
		heat_columns(t, &h);
		if ((r = heat_fill(t, node, &h)) < 0)
			goto out;
	} else {
		h.S = h.E = 0;
	}
	if ((r = link_parts(t, node, &links[0], &links[1], true)) < 0 ||
	    (r = link_parts(t, node, &links[2], &links[3], false)) < 0)
		goto out;
	heat_geom(&h, &g);
	struct view_counts c;
	view_node_counts(t, node, &c);

	r = heat_head(out, t, node, &h, &g);
	if (r == 0)
		r = heat_axes(out, &h, &g);
	for (size_t col = 0; col < h.ncols && r == 0; col++)
		for (unsigned row = 0; row < VIEW_HEATMAP_ROWS && r == 0; row++)
			if (h.cells[col * VIEW_HEATMAP_ROWS + row])
				r = heat_cell(out, &h, &g, col, row, links);
	if (r == 0 && c.total_samples > h.drawn)
		r = view_buf_printf(
		        out,
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%" PRIu64
		        " samples of this directory have no moment here (older than the recent "
		        "tier, or outside the columns drawn) and are not drawn</text>\n",
		        g.width / 2, g.height - 12, c.total_samples - h.drawn);
	if (r == 0)
		r = view_buf_printf(out, "</svg>\n");
out:
	view_subtree_fini(&h.st);
	free(h.cells);
	for (int i = 0; i < 4; i++)
		view_buf_free(&links[i]);
	return r;
}
