/*
 * diff.c — version diffs: the union tree of two versions' subtrees, with
 * both versions' counts on every node, and the regressions file that lists
 * the stacks whose share of the total grew most.  The other renderers
 * (folded, self, total, pprof, flame.svg) know diff trees themselves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

/* Compares the names of node x of tree a and node y of tree b bytewise. */
static int cmp_names(const struct view_tree *a, uint32_t x, const struct view_tree *b, uint32_t y)
{
	const struct vstr *sx = &a->strs[vnode_frame(a, x)->name];
	const struct vstr *sy = &b->strs[vnode_frame(b, y)->name];
	size_t n = sx->len < sy->len ? sx->len : sy->len;
	int c = memcmp(a->arena + sx->off, b->arena + sy->off, n);

	if (c)
		return c;
	return sx->len < sy->len ? -1 : sx->len > sy->len;
}

/* One pair of merged nodes: dst, and its source nodes in A and B (or
 * VIEW_NONE where one version lacks it). */
struct pair {
	uint32_t dst, a, b;
};

/* Builds the union below `top` from the pair (anode, bnode): both child
 * lists are sorted by name, so one merge step per node pairs them up, and
 * no lookup table is needed. */
static int merge(struct view_builder *vb, const struct view_tree *a, uint32_t anode,
                 const struct view_tree *b, uint32_t bnode, uint32_t top)
{
	struct pair *stack;
	size_t depth = 0, cap = 256;
	int r = 0;

	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[depth++] = (struct pair){top, anode, bnode};
	while (depth > 0 && r == 0) {
		struct pair p = stack[--depth];
		const struct vnode *va = p.a == VIEW_NONE ? NULL : &a->nodes[p.a];
		const struct vnode *vbn = p.b == VIEW_NONE ? NULL : &b->nodes[p.b];
		uint32_t na = va ? va->nkids : 0, nb = vbn ? vbn->nkids : 0, i = 0, j = 0;
		if (vbn)
			view_builder_add(vb, p.dst, vbn->self_samples, vbn->self_weight);
		if (va &&
		    (r = view_builder_add_base(vb, p.dst, va->self_samples, va->self_weight)) < 0)
			break;
		if (depth + na + nb > cap) {
			size_t ncap = (depth + na + nb) * 2;
			struct pair *ns = realloc(stack, ncap * sizeof(*ns));
			if (!ns) {
				r = -ENOMEM;
				break;
			}
			stack = ns;
			cap = ncap;
		}
		while ((i < na || j < nb) && r == 0) {
			uint32_t ca = i < na ? a->kids[va->first_kid + i] : VIEW_NONE;
			uint32_t cb = j < nb ? b->kids[vbn->first_kid + j] : VIEW_NONE;
			int c = ca == VIEW_NONE   ? 1
			        : cb == VIEW_NONE ? -1
			                          : cmp_names(a, ca, b, cb);
			uint32_t frame, d = 0;
			if (c > 0) {
				ca = VIEW_NONE;
				j++;
				r = view_builder_frame(vb, b, b->nodes[cb].frame, &frame);
			} else {
				i++;
				if (c < 0)
					cb = VIEW_NONE;
				else
					j++;
				r = cb != VIEW_NONE
				            ? view_builder_frame(vb, b, b->nodes[cb].frame, &frame)
				            : view_builder_frame(vb, a, a->nodes[ca].frame, &frame);
			}
			if (r == 0)
				r = view_builder_append(vb, p.dst, frame, &d);
			stack[depth++] = (struct pair){d, ca, cb};
		}
	}
	free(stack);
	return r;
}

int view_diff_build(const struct view_tree *a, uint32_t anode, const struct view_tree *b,
                    uint32_t bnode, struct view_tree **out)
{
	return view_diff_build_seeded(a, anode, b, bnode, NULL, out);
}

int view_diff_build_seeded(const struct view_tree *a, uint32_t anode, const struct view_tree *b,
                           uint32_t bnode, const struct view_tree *seed, struct view_tree **out)
{
	struct view_builder *vb;
	uint32_t top = VIEW_ROOT, frame;
	int r;

	*out = NULL;
	view_tree_settle(a);
	view_tree_settle(b);
	if (anode >= a->nnodes || bnode >= b->nnodes ||
	    (anode == VIEW_ROOT) != (bnode == VIEW_ROOT))
		return -EINVAL;
	r = view_builder_new(b->event, b->unit, seed ? view_tree_node_count(seed) : 0, &vb);
	if (r < 0)
		return r;
	r = view_builder_seed(vb, seed);
	/* Make it a diff tree even when A is empty. */
	if (r == 0)
		r = view_builder_add_base(vb, VIEW_ROOT, 0, 0);
	if (r == 0 && bnode != VIEW_ROOT) {
		r = view_builder_frame(vb, b, b->nodes[bnode].frame, &frame);
		if (r == 0)
			r = view_builder_append(vb, VIEW_ROOT, frame, &top);
	}
	if (r == 0)
		r = merge(vb, a, anode, b, bnode, top);
	if (r < 0) {
		view_builder_free(vb);
		return r;
	}
	return view_builder_finish(vb, out);
}

bool view_tree_is_diff(const struct view_tree *t)
{
	return t->base != NULL;
}

void view_node_base_counts(const struct view_tree *t, uint32_t node, struct view_counts *c)
{
	if (!t->base) {
		memset(c, 0, sizeof(*c));
		return;
	}
	c->self_weight = t->base[node].self_weight;
	c->self_samples = t->base[node].self_samples;
	c->total_weight = t->base[node].total_weight;
	c->total_samples = t->base[node].total_samples;
}

/* ---- regressions ---------------------------------------------------------- */

/* Growths are compared in millionths of a share: 1000 is 0.1 point. */
#define REG_MIN   1000 /* list growths of at least 0.1 percentage points */
#define REG_SLACK 500  /* a callee within 0.05 points carries all of it */

struct reg {
	uint32_t node;
	int64_t growth;
};

static int cmp_reg(const void *x, const void *y)
{
	const struct reg *a = x, *b = y;

	if (a->growth != b->growth)
		return a->growth > b->growth ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

static int64_t growth(const struct view_tree *t, uint32_t n, double ta, double tb)
{
	double sa = ta > 0 ? (double)t->base[n].total_weight / ta : 0;
	double sb = tb > 0 ? (double)t->nodes[n].total_weight / tb : 0;
	double g = (sb - sa) * 1e6;

	return (int64_t)(g < 0 ? g - 0.5 : g + 0.5);
}

int view_render_regressions(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	view_tree_settle(t);
	struct reg *regs = NULL;
	uint32_t *stack = NULL;
	size_t nregs = 0, depth = 0;
	char *path = NULL;
	int r = 0;

	if (!t->base)
		return 0;
	double ta = (double)t->base[node].total_weight, tb = (double)t->nodes[node].total_weight;
	regs = malloc((size_t)t->nnodes * sizeof(*regs));
	stack = malloc((size_t)t->nnodes * sizeof(*stack));
	if (!regs || !stack) {
		r = -ENOMEM;
		goto out;
	}
	stack[depth++] = node;
	while (depth > 0) {
		uint32_t n = stack[--depth];
		const struct vnode *v = &t->nodes[n];
		int64_t g = growth(t, n, ta, tb), most = INT64_MIN;
		for (uint32_t i = 0; i < v->nkids; i++) {
			uint32_t c = t->kids[v->first_kid + i];
			int64_t gc = growth(t, c, ta, tb);
			if (gc > most)
				most = gc;
			stack[depth++] = c; /* a callee may grow while its caller shrinks */
		}
		if (n != VIEW_ROOT && g >= REG_MIN && (most == INT64_MIN || most < g - REG_SLACK))
			regs[nregs++] = (struct reg){n, g};
	}
	qsort(regs, nregs, sizeof(*regs), cmp_reg);
	for (size_t i = 0; i < nregs; i++) {
		uint32_t n = regs[i].node, len = t->nodes[n].path_len;
		char pct[32];
		int plen = snprintf(pct, sizeof(pct), "+%.1f%% ", (double)regs[i].growth / 1e4);
		char *np = realloc(path, (size_t)len + 1);
		if (!np) {
			r = -ENOMEM;
			goto out;
		}
		path = np;
		/* The path, written from the leaf up at its final offsets. */
		for (uint32_t a = n; a != VIEW_ROOT; a = t->nodes[a].parent)
			view_path_put_name(t, a, path);
		if ((r = view_buf_append(out, pct, (size_t)plen)) < 0 ||
		    (r = view_buf_append(out, path, len)) < 0 ||
		    (r = view_buf_append(out, "\n", 1)) < 0)
			goto out;
	}
out:
	free(regs);
	free(stack);
	free(path);
	return r;
}
