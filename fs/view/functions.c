/*
 * functions.c — the function view: an index of a tree's distinct frame
 * names with each function's self and total weight, and the two trees a
 * function directory shows, its callers (the inverted tree above it) and
 * its callees (the tree below it, all its occurrences merged).
 *
 * One depth-first walk finds every occurrence of every name.  An
 * occurrence is outermost when no ancestor has its name; the function's
 * total is the sum of its outermost occurrences' totals, so each stack
 * counts once however often the function recurses in it.  An occurrence's
 * exclusive weight is its total less that of the nearest occurrences of
 * the same name below it: the weight of the stacks in which it is the
 * innermost occurrence.  Those weights add up to the total too, and the
 * callers tree is built from them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

struct occ {
	uint32_t node;
	bool outer;
	uint64_t excl_weight, excl_samples;
};

struct func {
	uint32_t name; /* tree string id */
	uint32_t first_occ, nocc;
	uint64_t self_weight, self_samples;
	uint64_t total_weight, total_samples;
};

struct view_functions {
	const struct view_tree *t;
	struct func *funcs; /* sorted by name */
	uint32_t nfuncs;
	struct occ *occs; /* grouped by function, in walk order */
};

static int cmp_func(const void *a, const void *b, void *ctx)
{
	const struct view_tree *t = ctx;
	const struct vstr *x = &t->strs[((const struct func *)a)->name];
	const struct vstr *y = &t->strs[((const struct func *)b)->name];
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(t->arena + x->off, t->arena + y->off, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static bool is_frame(const struct view_tree *t, uint32_t n)
{
	return n != VIEW_ROOT && t->nodes[n].parent != VIEW_ROOT;
}

/* view_functions_build()'s walk: the index it fills, and what it keeps
 * per name and on its stack. */
struct fwalk {
	const struct view_tree *t;
	struct view_functions *fx;
	uint32_t *fidx;   /* string id -> function index + 1 */
	uint32_t *open;   /* string id -> innermost open occurrence + 1 */
	struct occ *walk; /* occurrences in walk order */
	uint32_t nwalk;
	struct fstep {
		uint32_t node, next, saved_open, occ;
	} * stack;
	size_t depth;
};

/* The walk's arrays, each with an entry per node or per string of the
 * tree, and the index with room for a function per node.  0 or -ENOMEM. */
static int fwalk_alloc(struct fwalk *w)
{
	const struct view_tree *t = w->t;

	w->fx = calloc(1, sizeof(*w->fx));
	w->fidx = calloc(t->nstrs, sizeof(*w->fidx));
	w->open = calloc(t->nstrs, sizeof(*w->open));
	w->walk = malloc((size_t)t->nnodes * sizeof(*w->walk));
	w->stack = malloc((size_t)(t->nnodes + 1) * sizeof(*w->stack));
	if (!w->fx || !w->fidx || !w->open || !w->walk || !w->stack)
		return -ENOMEM;
	w->fx->t = t;
	w->fx->funcs = malloc((size_t)t->nnodes * sizeof(*w->fx->funcs));
	return w->fx->funcs ? 0 : -ENOMEM;
}

/* Frees the walk's arrays and the index, unless handed out (w->fx NULL). */
static void fwalk_free(struct fwalk *w)
{
	view_functions_free(w->fx);
	free(w->fidx);
	free(w->open);
	free(w->walk);
	free(w->stack);
}

static void fwalk_push(struct fwalk *w, uint32_t n)
{
	w->stack[w->depth++] = (struct fstep){.node = n, .occ = VIEW_NONE};
}

/* Frame node n, on top of the stack: an occurrence of its name's
 * function, which adds its self counts, and its total when it is the
 * outermost occurrence; otherwise its total leaves the exclusive weight
 * of the innermost open occurrence above it.  It stays open until the
 * walk leaves n. */
static void fwalk_visit(struct fwalk *w, uint32_t n)
{
	const struct vnode *v = &w->t->nodes[n];
	uint32_t name = vnode_frame(w->t, n)->name;
	struct view_functions *fx = w->fx;

	if (!w->fidx[name]) {
		fx->funcs[fx->nfuncs] = (struct func){.name = name};
		w->fidx[name] = ++fx->nfuncs;
	}
	struct func *f = &fx->funcs[w->fidx[name] - 1];
	f->nocc++;
	f->self_weight += v->self_weight;
	f->self_samples += v->self_samples;
	w->walk[w->nwalk] = (struct occ){n, !w->open[name], v->total_weight, v->total_samples};
	if (w->open[name]) {
		struct occ *p = &w->walk[w->open[name] - 1];
		p->excl_weight -= v->total_weight;
		p->excl_samples -= v->total_samples;
	} else {
		f->total_weight += v->total_weight;
		f->total_samples += v->total_samples;
	}
	w->stack[w->depth - 1].saved_open = w->open[name];
	w->stack[w->depth - 1].occ = w->nwalk;
	w->open[name] = ++w->nwalk;
}

/* The walk of node's subtree, depth-first in child order: counts the
 * occurrences, self, total (outermost only) and exclusive weights. */
static void fwalk_run(struct fwalk *w, uint32_t node)
{
	const struct view_tree *t = w->t;

	fwalk_push(w, node);
	for (uint32_t n = node;;) {
		if (is_frame(t, n))
			fwalk_visit(w, n);
		/* The next node: down to the next child, or up, closing
		 * occurrences on the way. */
		for (;;) {
			struct fstep *top = &w->stack[w->depth - 1];
			if (top->next < t->nodes[top->node].nkids) {
				n = t->kids[t->nodes[top->node].first_kid + top->next++];
				fwalk_push(w, n);
				break;
			}
			if (top->occ != VIEW_NONE)
				w->open[vnode_frame(t, top->node)->name] = top->saved_open;
			if (--w->depth == 0)
				return;
		}
	}
}

/* The occurrences grouped by function, in walk order (fx->occs, each
 * function's from its first_occ).  0 or -ENOMEM. */
static int fwalk_group(struct fwalk *w)
{
	struct view_functions *fx = w->fx;
	uint32_t *wocc; /* function -> its next slot in occs */

	fx->occs = malloc((size_t)(w->nwalk ? w->nwalk : 1) * sizeof(*fx->occs));
	wocc = malloc((size_t)(fx->nfuncs ? fx->nfuncs : 1) * sizeof(*wocc));
	if (!fx->occs || !wocc) {
		free(wocc);
		return -ENOMEM;
	}
	uint32_t pos = 0;
	for (uint32_t i = 0; i < fx->nfuncs; i++) {
		fx->funcs[i].first_occ = pos;
		wocc[i] = pos;
		pos += fx->funcs[i].nocc;
	}
	for (uint32_t i = 0; i < w->nwalk; i++) {
		uint32_t f = w->fidx[vnode_frame(w->t, w->walk[i].node)->name] - 1;
		fx->occs[wocc[f]++] = w->walk[i];
	}
	free(wocc);
	return 0;
}

int view_functions_build(const struct view_tree *t, uint32_t node, struct view_functions **out)
{
	struct fwalk w = {.t = t};
	int r;

	view_tree_settle(t);
	*out = NULL;
	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = fwalk_alloc(&w)) < 0)
		goto out;
	fwalk_run(&w, node);
	if ((r = fwalk_group(&w)) < 0)
		goto out;
	qsort_r(w.fx->funcs, w.fx->nfuncs, sizeof(*w.fx->funcs), cmp_func, (void *)t);
	*out = w.fx;
	w.fx = NULL;
out:
	fwalk_free(&w);
	return r;
}

void view_functions_free(struct view_functions *fx)
{
	if (!fx)
		return;
	free(fx->funcs);
	free(fx->occs);
	free(fx);
}

uint32_t view_functions_count(const struct view_functions *fx)
{
	return fx->nfuncs;
}

const char *view_functions_name(const struct view_functions *fx, uint32_t i, size_t *len)
{
	const struct vstr *s = &fx->t->strs[fx->funcs[i].name];

	*len = s->len;
	return fx->t->arena + s->off;
}

uint32_t view_functions_find(const struct view_functions *fx, const char *name, size_t len)
{
	uint32_t lo = 0, hi = fx->nfuncs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct vstr *s = &fx->t->strs[fx->funcs[mid].name];
		size_t m = s->len < len ? s->len : len;
		int c = memcmp(fx->t->arena + s->off, name, m);
		if (c == 0)
			c = s->len < len ? -1 : s->len > len;
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return VIEW_NONE;
}

void view_functions_counts(const struct view_functions *fx, uint32_t i, struct view_counts *c)
{
	const struct func *f = &fx->funcs[i];

	c->self_weight = f->self_weight;
	c->self_samples = f->self_samples;
	c->total_weight = f->total_weight;
	c->total_samples = f->total_samples;
}

/* A builder whose root has one child: function i. */
static int start(const struct view_functions *fx, uint32_t i, const struct view_tree *seed,
                 struct view_builder **vb, uint32_t *fnode)
{
	const struct view_tree *t = fx->t;
	const struct func *f = &fx->funcs[i];
	uint32_t frame;
	int r = view_builder_new(t->event, t->unit, seed ? view_tree_node_count(seed) : 0, vb);

	if (r < 0)
		return r;
	r = view_builder_seed(*vb, seed);
	if (r == 0)
		r = view_builder_frame(*vb, t, t->nodes[fx->occs[f->first_occ].node].frame, &frame);
	if (r == 0)
		r = view_builder_child(*vb, VIEW_ROOT, frame, fnode);
	if (r < 0) {
		view_builder_free(*vb);
		*vb = NULL;
	}
	return r;
}

int view_functions_callers(const struct view_functions *fx, uint32_t i, struct view_tree **out)
{
	return view_functions_callers_seeded(fx, i, NULL, out);
}

int view_functions_callees(const struct view_functions *fx, uint32_t i, struct view_tree **out)
{
	return view_functions_callees_seeded(fx, i, NULL, out);
}

int view_functions_callers_seeded(const struct view_functions *fx, uint32_t i,
                                  const struct view_tree *seed, struct view_tree **out)
{
	const struct view_tree *t = fx->t;
	const struct func *f;
	struct view_builder *vb;
	uint32_t fnode;
	int r;

	*out = NULL;
	if (i >= fx->nfuncs)
		return -EINVAL;
	f = &fx->funcs[i];
	r = start(fx, i, seed, &vb, &fnode);
	if (r < 0)
		return r;
	for (uint32_t k = 0; k < f->nocc && r == 0; k++) {
		const struct occ *o = &fx->occs[f->first_occ + k];
		uint32_t cur = fnode, frame;
		if (o->excl_weight == 0 && o->excl_samples == 0)
			continue;
		for (uint32_t a = t->nodes[o->node].parent; a != VIEW_ROOT && r == 0;
		     a = t->nodes[a].parent) {
			r = view_builder_frame(vb, t, t->nodes[a].frame, &frame);
			if (r == 0)
				r = view_builder_child(vb, cur, frame, &cur);
		}
		view_builder_add(vb, cur, o->excl_samples, o->excl_weight);
	}
	if (r < 0) {
		view_builder_free(vb);
		return r;
	}
	return view_builder_finish(vb, out);
}

int view_functions_callees_seeded(const struct view_functions *fx, uint32_t i,
                                  const struct view_tree *seed, struct view_tree **out)
{
	const struct view_tree *t = fx->t;
	const struct func *f;
	struct view_builder *vb;
	struct item {
		uint32_t src, dst;
	} *stack = NULL;
	size_t depth = 0;
	uint32_t fnode;
	int r;

	*out = NULL;
	if (i >= fx->nfuncs)
		return -EINVAL;
	f = &fx->funcs[i];
	r = start(fx, i, seed, &vb, &fnode);
	if (r < 0)
		return r;
	stack = malloc((size_t)t->nnodes * sizeof(*stack));
	if (!stack)
		r = -ENOMEM;
	for (uint32_t k = 0; k < f->nocc && r == 0; k++) {
		const struct occ *o = &fx->occs[f->first_occ + k];
		if (!o->outer)
			continue;
		stack[depth++] = (struct item){o->node, fnode};
		while (depth > 0 && r == 0) {
			struct item it = stack[--depth];
			const struct vnode *v = &t->nodes[it.src];
			view_builder_add(vb, it.dst, v->self_samples, v->self_weight);
			for (uint32_t c = 0; c < v->nkids && r == 0; c++) {
				uint32_t sc = t->kids[v->first_kid + c], frame, d = 0;
				r = view_builder_frame(vb, t, t->nodes[sc].frame, &frame);
				if (r == 0)
					r = view_builder_child(vb, it.dst, frame, &d);
				stack[depth++] = (struct item){sc, d};
			}
		}
	}
	free(stack);
	if (r < 0) {
		view_builder_free(vb);
		return r;
	}
	return view_builder_finish(vb, out);
}

int view_render_functions(const struct view_functions *fx, struct view_buf *out)
{
	int rc = 0;

	for (uint32_t i = 0; i < view_functions_count(fx) && rc == 0; i++) {
		struct view_counts c;
		size_t len;
		const char *name = view_functions_name(fx, i, &len);
		char num[64];

		view_functions_counts(fx, i, &c);
		int n = snprintf(num, sizeof(num), "%" PRIu64 " %" PRIu64 " ", c.self_weight,
		                 c.total_weight);
		if ((rc = view_buf_append(out, num, (size_t)n)) == 0 &&
		    (rc = view_text_append(out, name, len, 0)) == 0)
			rc = view_buf_append(out, "\n", 1);
	}
	return rc;
}
