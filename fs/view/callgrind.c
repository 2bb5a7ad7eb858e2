/*
 * callgrind.c — the callgrind renderer: a subtree in the profile format of
 * valgrind's callgrind, which callgrind_annotate, kcachegrind and
 * qcachegrind read.
 *
 * Each distinct frame name is one function (with the file, line and
 * module of its first frame), and the binary is a function too, the one
 * every stack starts in.  A function's self cost is the weight of the
 * stacks it ends.  Call costs are chosen so that inclusive costs come out
 * as flamefs counts them, once per stack however often a function
 * recurses: in each stack, every function but the first gets exactly one
 * incoming call, from the frame just before its outermost occurrence.
 * So the sum of a function's incoming call costs (what callgrind_annotate
 * --inclusive=yes and kcachegrind show as inclusive) is the weight of the
 * stacks that contain it, and no call is recursive.  Without call counts
 * in a profile, `calls=` counts the samples that went through the call.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

struct edge {
	uint32_t caller, callee; /* name string ids */
	uint64_t weight, samples;
};

struct cg {
	const struct view_tree *t;
	struct view_buf *out;
	/* per name string id */
	uint32_t *stamp; /* the last stack that saw the name, + 1 */
	uint32_t *frame; /* first frame with the name, + 1 */
	uint64_t *self_w, *self_s;
	uint32_t *first_edge; /* head of the name's outgoing edges + 1 */
	/* edges, hashed by (caller, callee) */
	struct edge *edges;
	uint32_t *next_edge; /* next outgoing edge of the same caller + 1 */
	uint32_t nedges, edges_cap;
	uint32_t *etab; /* edge index + 1 */
	uint32_t etab_mask;
	/* compressed names already written: file, function and object ids */
	uint32_t *fl_id, *fn_id, *ob_id;
	uint32_t next_fl, next_fn, next_ob;
};

static uint32_t edge_hash(uint32_t a, uint32_t b)
{
	uint64_t k = (uint64_t)a << 32 | b;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

static int edge_add(struct cg *g, uint32_t caller, uint32_t callee, uint64_t w, uint64_t s)
{
	uint32_t j = edge_hash(caller, callee) & g->etab_mask;

	for (; g->etab[j]; j = (j + 1) & g->etab_mask) {
		struct edge *e = &g->edges[g->etab[j] - 1];
		if (e->caller == caller && e->callee == callee) {
			e->weight += w;
			e->samples += s;
			return 0;
		}
	}
	if (g->nedges == g->edges_cap) {
		uint32_t ncap = g->edges_cap ? g->edges_cap * 2 : 256;
		struct edge *ne = realloc(g->edges, (size_t)ncap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		g->edges = ne;
		uint32_t *nn = realloc(g->next_edge, (size_t)ncap * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		g->next_edge = nn;
		g->edges_cap = ncap;
	}
	g->edges[g->nedges] = (struct edge){caller, callee, w, s};
	g->next_edge[g->nedges] = g->first_edge[caller];
	g->first_edge[caller] = g->nedges + 1;
	g->etab[j] = ++g->nedges;
	if ((uint64_t)g->nedges * 2 > g->etab_mask) {
		uint32_t size = (g->etab_mask + 1) * 2;
		uint32_t *nt = calloc(size, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (uint32_t i = 0; i < g->nedges; i++) {
			uint32_t k = edge_hash(g->edges[i].caller, g->edges[i].callee) & (size - 1);
			while (nt[k])
				k = (k + 1) & (size - 1);
			nt[k] = i + 1;
		}
		free(g->etab);
		g->etab = nt;
		g->etab_mask = size - 1;
	}
	return 0;
}

/* ---- output ------------------------------------------------------------- */

static int put(struct cg *g, const char *s)
{
	return view_buf_append(g->out, s, strlen(s));
}

/* Numbers and the format's own words only: names, the unit and the event
 * go through put_text(). */
static int putf(struct cg *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int putf(struct cg *g, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	return view_buf_append(g->out, tmp, (size_t)n);
}

/* A name on one line, escaped as every text file escapes names (its
 * control bytes and backslashes as \xNN); "???" for none. */
static int put_text(struct cg *g, const char *p, size_t len)
{
	if (len == 0)
		return put(g, "???");
	return view_text_append(g->out, p, len, 0);
}

/* "key=(id)" and, the first time, " name"; ids per string in `ids`. */
static int put_compressed(struct cg *g, const char *key, uint32_t *ids, uint32_t *next,
                          uint32_t sid)
{
	int r;

	if (ids[sid])
		return putf(g, "%s=(%" PRIu32 ")\n", key, ids[sid]);
	ids[sid] = ++*next;
	if ((r = putf(g, "%s=(%" PRIu32 ") ", key, ids[sid])) < 0 ||
	    (r = put_text(g, vstr_ptr(g->t, sid), g->t->strs[sid].len)) < 0)
		return r;
	return put(g, "\n");
}

static const struct vframe *frame_of(const struct cg *g, uint32_t name)
{
	return &g->t->frames[g->frame[name] - 1];
}

/* ob=, fl=, fn= of a function, or cob=, cfi=, cfn= of a callee. */
static int put_function(struct cg *g, bool callee, uint32_t name)
{
	const struct vframe *f = frame_of(g, name);
	const char *ob = callee ? "cob" : "ob", *fl = callee ? "cfi" : "fl",
	           *fn = callee ? "cfn" : "fn";
	int r;

	if ((r = put_compressed(g, ob, g->ob_id, &g->next_ob, f->module)) < 0 ||
	    (r = put_compressed(g, fl, g->fl_id, &g->next_fl, f->file)) < 0)
		return r;
	return put_compressed(g, fn, g->fn_id, &g->next_fn, name);
}

/* The event name callgrind shows: letters, digits and '_'. */
static int put_event_name(struct cg *g)
{
	const char *e = g->t->event;
	char tmp[64];
	size_t n = 0;

	for (; *e && n < sizeof(tmp) - 1; e++)
		tmp[n++] = (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') ||
		                           (*e >= '0' && *e <= '9')
		                   ? *e
		                   : '_';
	tmp[n] = '\0';
	if (n == 0 || strcmp(tmp, "Samples") == 0 || strcmp(tmp, "samples") == 0)
		return put(g, "Weight");
	return put(g, tmp);
}

/* ---- the walk ------------------------------------------------------------ */

/* Adds the stack that ends at `leaf`: its self cost, and one incoming call
 * for each function but the first, from the frame before its outermost
 * occurrence.  path[] has room for the leaf's depth. */
static int add_stack(struct cg *g, uint32_t leaf, uint32_t stack_id, uint32_t *path)
{
	const struct view_tree *t = g->t;
	const struct vnode *v = &t->nodes[leaf];
	uint32_t depth = 0;
	int r;

	for (uint32_t a = leaf; a != VIEW_ROOT; a = t->nodes[a].parent)
		path[depth++] = a;
	for (uint32_t i = depth; i-- > 0;) {
		uint32_t name = vnode_frame(t, path[i])->name;
		if (!g->frame[name])
			g->frame[name] = t->nodes[path[i]].frame + 1;
		if (g->stamp[name] == stack_id + 1)
			continue;
		g->stamp[name] = stack_id + 1;
		if (i + 1 < depth) {
			r = edge_add(g, vnode_frame(t, path[i + 1])->name, name, v->self_weight,
			             v->self_samples);
			if (r < 0)
				return r;
		}
	}
	uint32_t name = vnode_frame(t, leaf)->name;
	g->self_w[name] += v->self_weight;
	g->self_s[name] += v->self_samples;
	return 0;
}

static int cmp_first_frame(const void *a, const void *b, void *ctx)
{
	const struct cg *g = ctx;
	uint32_t x = g->frame[*(const uint32_t *)a], y = g->frame[*(const uint32_t *)b];

	return x < y ? -1 : x > y;
}

/* g's arrays: per name string, and the edge table's first slots.  0 or
 * -ENOMEM. */
static int cg_alloc(struct cg *g)
{
	const struct view_tree *t = g->t;

	g->stamp = calloc(t->nstrs, sizeof(*g->stamp));
	g->frame = calloc(t->nstrs, sizeof(*g->frame));
	g->self_w = calloc(t->nstrs, sizeof(*g->self_w));
	g->self_s = calloc(t->nstrs, sizeof(*g->self_s));
	g->first_edge = calloc(t->nstrs, sizeof(*g->first_edge));
	g->fl_id = calloc(t->nstrs, sizeof(*g->fl_id));
	g->fn_id = calloc(t->nstrs, sizeof(*g->fn_id));
	g->ob_id = calloc(t->nstrs, sizeof(*g->ob_id));
	g->etab = calloc(1024, sizeof(*g->etab));
	g->etab_mask = 1023;
	if (!g->stamp || !g->frame || !g->self_w || !g->self_s || !g->first_edge || !g->fl_id ||
	    !g->fn_id || !g->ob_id || !g->etab)
		return -ENOMEM;
	return 0;
}

static void cg_free(struct cg *g)
{
	free(g->stamp);
	free(g->frame);
	free(g->self_w);
	free(g->self_s);
	free(g->first_edge);
	free(g->fl_id);
	free(g->fn_id);
	free(g->ob_id);
	free(g->etab);
	free(g->edges);
	free(g->next_edge);
}

/* Adds every stack of node's subtree (add_stack()): every node of it
 * with a self count ends one, taken depth-first, children in name order.
 * 0 or -ENOMEM. */
static int cg_walk(struct cg *g, uint32_t node)
{
	const struct view_tree *t = g->t;
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack)), *path = NULL;
	uint32_t maxdepth = 0, nstacks = 0;
	size_t depth = 0;
	int r = 0;

	if (!stack)
		return -ENOMEM;
	for (uint32_t a = node; a != VIEW_ROOT; a = t->nodes[a].parent)
		maxdepth++;
	stack[depth++] = node;
	while (depth > 0 && r == 0) {
		uint32_t n = stack[--depth];
		const struct vnode *v = &t->nodes[n];
		if (n != VIEW_ROOT && (v->self_weight || v->self_samples)) {
			uint32_t d = 0;
			for (uint32_t a = n; a != VIEW_ROOT; a = t->nodes[a].parent)
				d++;
			if (d > maxdepth || !path) {
				maxdepth = d > maxdepth ? d : maxdepth;
				uint32_t *np = realloc(path, (size_t)(maxdepth + 1) * sizeof(*np));
				if (!np) {
					r = -ENOMEM;
					break;
				}
				path = np;
			}
			r = add_stack(g, n, nstacks++, path);
		}
		for (uint32_t i = v->nkids; i-- > 0;)
			stack[depth++] = t->kids[v->first_kid + i];
	}
	free(stack);
	free(path);
	return r;
}

/* The header: the format and creator, the command (the binary, below
 * the top root), the event and its unit, and the summary. */
static int cg_header(struct cg *g, uint32_t node)
{
	const struct view_tree *t = g->t;
	uint64_t tw = t->nodes[node].total_weight, ts = t->nodes[node].total_samples;
	int r;

	if ((r = put(g, "# callgrind format\nversion: 1\ncreator: flamefs\n")) < 0)
		return r;
	if (node != VIEW_ROOT) {
		uint32_t bin = node;
		while (t->nodes[bin].parent != VIEW_ROOT)
			bin = t->nodes[bin].parent;
		const struct vstr *s = &t->strs[vnode_frame(t, bin)->name];
		if ((r = put(g, "cmd: ")) < 0 || (r = put_text(g, t->arena + s->off, s->len)) < 0 ||
		    (r = put(g, "\n")) < 0)
			return r;
	}
	if ((r = put(g, "positions: line\nevent: ")) < 0 || (r = put_event_name(g)) < 0 ||
	    (r = put(g, " : ")) < 0 || (r = put_text(g, t->event, strlen(t->event))) < 0 ||
	    (r = put(g, " (")) < 0 ||
	    (r = put_text(g, t->unit[0] ? t->unit : "count", t->unit[0] ? strlen(t->unit) : 5)) <
	            0 ||
	    (r = put(g, ")\nevents: ")) < 0 || (r = put_event_name(g)) < 0 ||
	    (r = putf(g, " Samples\nsummary: %" PRIu64 " %" PRIu64 "\n", tw, ts)) < 0)
		return r;
	return 0;
}

/* Function s's block: its name, its self cost when it has one, and its
 * outgoing calls. */
static int cg_function(struct cg *g, uint32_t s)
{
	uint32_t line = frame_of(g, s)->line;
	int r;

	if ((r = put(g, "\n")) < 0 || (r = put_function(g, false, s)) < 0)
		return r;
	if ((g->self_w[s] || g->self_s[s]) && (r = putf(g, "%" PRIu32 " %" PRIu64 " %" PRIu64 "\n",
	                                                line, g->self_w[s], g->self_s[s])) < 0)
		return r;
	for (uint32_t e = g->first_edge[s]; e; e = g->next_edge[e - 1]) {
		const struct edge *ed = &g->edges[e - 1];
		if ((r = put_function(g, true, ed->callee)) < 0 ||
		    (r = putf(g,
		              "calls=%" PRIu64 " %" PRIu32 "\n%" PRIu32 " %" PRIu64 " %" PRIu64
		              "\n",
		              ed->samples ? ed->samples : 1, frame_of(g, ed->callee)->line, line,
		              ed->weight, ed->samples)) < 0)
			return r;
	}
	return 0;
}

int view_render_callgrind(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct cg g = {.t = t, .out = out};
	uint32_t *names = NULL, nnames = 0;
	int r;

	view_tree_settle(t);
	if ((r = cg_alloc(&g)) < 0 || (r = cg_walk(&g, node)) < 0)
		goto out;
	/* Functions in order of their first frame's id. */
	names = malloc((size_t)t->nstrs * sizeof(*names));
	if (!names) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t s = 0; s < t->nstrs; s++)
		if (g.frame[s])
			names[nnames++] = s;
	qsort_r(names, nnames, sizeof(*names), cmp_first_frame, &g);
	if ((r = cg_header(&g, node)) < 0)
		goto out;
	for (uint32_t i = 0; i < nnames; i++)
		if ((r = cg_function(&g, names[i])) < 0)
			goto out;
	r = putf(&g, "\ntotals: %" PRIu64 " %" PRIu64 "\n", t->nodes[node].total_weight,
	         t->nodes[node].total_samples);
out:
	cg_free(&g);
	free(names);
	return r;
}
