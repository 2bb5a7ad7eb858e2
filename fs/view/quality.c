/*
 * quality.c — how good a subtree's stacks are: the share of its weight
 * whose stacks reach an outermost frame (a process's or thread's entry
 * point, so the stack was not cut short), and the share whose leaf was
 * not symbolized, and which modules that unnamed weight falls in.
 * `flamefs-collect stats --quality`, the view's `quality` file and the
 * warnings at the end of an import or a recording read these.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

/* Frames a complete stack begins with: libc's and the dynamic loader's
 * process and thread entries, the kernel's for a new task, and the
 * runtimes' (Go's goroutines and threads). */
static const char *const entries[] = {
        "_start",
        "__libc_start_main",
        "__libc_start_call_main",
        "_dl_start",
        "_dl_start_user",
        "start_thread",
        "clone",
        "clone3",
        "__clone",
        "__clone3",
        "thread_start",
        "ret_from_fork",
        "ret_from_fork_asm",
        "kthread",
        "runtime.goexit",
        "runtime.rt0_go",
        "runtime.mstart",
        "runtime.main",
};

bool view_name_is_entry(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (strlen(entries[i]) == len && memcmp(entries[i], name, len) == 0)
			return true;
	return false;
}

/* "[unknown]", or a bare module name ("[libc.so.6]", "[kernel.kallsyms]"):
 * what perf and the importers write for a frame they could not name. */
static bool unknown_frame(const struct view_tree *t, uint32_t n)
{
	const struct vframe *f = vnode_frame(t, n);
	const struct vstr *s = &t->strs[f->name];
	const char *p = t->arena + s->off;

	return f->kind == STORE_FRAME_UNKNOWN ||
	       (s->len >= 2 && p[0] == '[' && p[s->len - 1] == ']');
}

static bool entry_frame(const struct view_tree *t, uint32_t n)
{
	const struct vstr *s = &t->strs[vnode_frame(t, n)->name];

	return view_name_is_entry(t->arena + s->off, s->len);
}

/* The weight of the stacks through node n (a frame, or a binary) that
 * are rooted. */
static uint64_t rooted_weight(const struct view_tree *t, uint32_t n)
{
	uint32_t chain[3], k = 0; /* n's ancestors at depth 1 and 2 below the binary */

	for (uint32_t a = n; a != VIEW_ROOT && t->nodes[a].parent != VIEW_ROOT;
	     a = t->nodes[a].parent) {
		chain[k % 3] = a;
		k++;
	}
	/* chain[(k - 1) % 3] is the depth-1 frame, chain[(k - 2) % 3] depth 2. */
	if (k == 0) { /* a binary: its outermost frames */
		uint64_t w = 0;
		const struct vnode *b = &t->nodes[n];
		for (uint32_t i = 0; i < b->nkids; i++)
			w += rooted_weight(t, t->kids[b->first_kid + i]);
		return w;
	}
	uint32_t d1 = chain[(k - 1) % 3];
	if (entry_frame(t, d1))
		return t->nodes[n].total_weight;
	if (!unknown_frame(t, d1))
		return 0;
	if (k >= 2)
		return entry_frame(t, chain[(k - 2) % 3]) ? t->nodes[n].total_weight : 0;
	/* perf's last frame-pointer step often gives an unnamed frame below
	 * _start: the entries right above it count. */
	uint64_t w = 0;
	const struct vnode *u = &t->nodes[d1];
	for (uint32_t j = 0; j < u->nkids; j++) {
		uint32_t g = t->kids[u->first_kid + j];
		if (entry_frame(t, g))
			w += t->nodes[g].total_weight;
	}
	return w;
}

int view_quality(const struct view_tree *t, uint32_t node, struct view_quality *q)
{
	view_tree_settle(t);
	memset(q, 0, sizeof(*q));
	if (node >= t->nnodes)
		return -EINVAL;
	q->total = t->nodes[node].total_weight;
	if (node == VIEW_ROOT) {
		const struct vnode *r = &t->nodes[VIEW_ROOT];
		for (uint32_t i = 0; i < r->nkids; i++)
			q->rooted += rooted_weight(t, t->kids[r->first_kid + i]);
	} else {
		q->rooted = rooted_weight(t, node);
	}
	/* Unknown leaves: the self weight of the unnamed frames of the
	 * subtree, in one depth-first walk. */
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack));
	size_t depth = 0;
	if (!stack)
		return -ENOMEM;
	stack[depth++] = node;
	while (depth) {
		uint32_t n = stack[--depth];
		const struct vnode *v = &t->nodes[n];
		if (n != VIEW_ROOT && v->parent != VIEW_ROOT && v->self_weight &&
		    unknown_frame(t, n))
			q->unknown_leaf += v->self_weight;
		for (uint32_t i = 0; i < v->nkids; i++)
			stack[depth++] = t->kids[v->first_kid + i];
	}
	free(stack);
	return 0;
}

/* A frame's module for view_quality_unnamed(): its module path, or its
 * name when it has none. */
static uint32_t unnamed_module(const struct view_tree *t, uint32_t n)
{
	const struct vframe *f = vnode_frame(t, n);

	return t->strs[f->module].len ? f->module : f->name;
}

static int unnamed_cmp_ids(const void *a, const void *b)
{
	const struct view_unnamed *x = a, *y = b;

	/* Interned strings: one pointer per distinct string. */
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	if (x->build_id != y->build_id)
		return x->build_id < y->build_id ? -1 : 1;
	return 0;
}

static int bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : al < bl ? -1 : al > bl;
}

static int unnamed_cmp_weight(const void *a, const void *b)
{
	const struct view_unnamed *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	int c = bytes_cmp(x->module, x->module_len, y->module, y->module_len);
	return c ? c : bytes_cmp(x->build_id, x->build_id_len, y->build_id, y->build_id_len);
}

int view_quality_unnamed(const struct view_tree *t, uint32_t node, struct view_unnamed **out,
                         size_t *n)
{
	view_tree_settle(t);
	*out = NULL;
	*n = 0;
	if (node >= t->nnodes)
		return -EINVAL;
	uint32_t *stack = malloc((size_t)t->nnodes * sizeof(*stack));
	struct view_unnamed *rows = NULL;
	size_t depth = 0, nrows = 0, cap = 0;
	if (!stack)
		return -ENOMEM;
	stack[depth++] = node;
	while (depth) {
		uint32_t k = stack[--depth];
		const struct vnode *v = &t->nodes[k];
		for (uint32_t i = 0; i < v->nkids; i++)
			stack[depth++] = t->kids[v->first_kid + i];
		if (k == VIEW_ROOT || v->parent == VIEW_ROOT || !v->self_weight ||
		    !unknown_frame(t, k))
			continue;
		if (nrows == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct view_unnamed *nr = realloc(rows, ncap * sizeof(*nr));
			if (!nr) {
				free(rows);
				free(stack);
				return -ENOMEM;
			}
			rows = nr;
			cap = ncap;
		}
		uint32_t m = unnamed_module(t, k), b = vnode_frame(t, k)->build_id;
		rows[nrows++] = (struct view_unnamed){
		        .module = t->arena + t->strs[m].off,
		        .module_len = t->strs[m].len,
		        .build_id = (const uint8_t *)t->arena + t->strs[b].off,
		        .build_id_len = t->strs[b].len,
		        .weight = v->self_weight,
		};
	}
	free(stack);
	if (nrows == 0) {
		free(rows);
		return 0;
	}
	/* One row per (module, build id), then by weight. */
	qsort(rows, nrows, sizeof(*rows), unnamed_cmp_ids);
	size_t w = 0;
	for (size_t i = 0; i < nrows; i++) {
		if (w && unnamed_cmp_ids(&rows[w - 1], &rows[i]) == 0)
			rows[w - 1].weight += rows[i].weight;
		else
			rows[w++] = rows[i];
	}
	qsort(rows, w, sizeof(*rows), unnamed_cmp_weight);
	*out = rows;
	*n = w;
	return 0;
}

/* "98.23" for part/whole in percent, two decimals rounded half up. */
static void put_share(char out[32], uint64_t part, uint64_t whole)
{
	__extension__ typedef unsigned __int128 u128;
	uint64_t v = whole ? (uint64_t)(((u128)part * 20000 + whole) / ((u128)whole * 2)) : 0;

	snprintf(out, 32, "%" PRIu64 ".%02" PRIu64, v / 100, v % 100);
}

bool view_unnamed_large(uint64_t unnamed, uint64_t whole)
{
	__extension__ typedef unsigned __int128 u128;

	return whole && (u128)unnamed * 100 >= (u128)VIEW_UNNAMED_WARN_PERCENT * whole;
}

void view_quality_share(uint64_t part, uint64_t whole, char out[32])
{
	put_share(out, part, whole);
}

int view_render_quality(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct view_quality q;
	char line[512], rs[32], us[32];
	int r = view_quality(t, node, &q);

	if (r < 0)
		return r;
	put_share(rs, q.rooted, q.total);
	put_share(us, q.unknown_leaf, q.total);
	int n = snprintf(line, sizeof(line),
	                 "total %" PRIu64 "\n"
	                 "rooted %" PRIu64 " %s%%\n"
	                 "unknown_leaf %" PRIu64 " %s%%\n",
	                 q.total, q.rooted, rs, q.unknown_leaf, us);
	if ((r = view_buf_append(out, line, (size_t)n)) < 0)
		return r;
	struct view_unnamed *un;
	size_t nun;
	if ((r = view_quality_unnamed(t, node, &un, &nun)) < 0)
		return r;
	for (size_t i = 0; i < nun && r >= 0; i++) {
		char hex[2 * 64 + 1] = "-", ws[32];
		size_t bl = un[i].build_id_len < 64 ? un[i].build_id_len : 64;
		for (size_t j = 0; j < bl; j++)
			snprintf(hex + 2 * j, 3, "%02x", un[i].build_id[j]);
		put_share(ws, un[i].weight, q.total);
		r = view_buf_printf(out, "unnamed %" PRIu64 " %s%% %s ", un[i].weight, ws, hex);
		if (r >= 0)
			r = view_text_append(out, un[i].module, un[i].module_len, 0);
		if (r >= 0)
			r = view_buf_append(out, "\n", 1);
	}
	free(un);
	if (r < 0)
		return r;
	if (nun && view_unnamed_large(q.unknown_leaf, q.total) &&
	    (r = view_buf_printf(out,
	                         "# %s%% of the weight ends in code without function names\n"
	                         "# (stripped binaries): the debug packages of the modules above\n"
	                         "# hold them (flamefs-collect stats --quality names them on\n"
	                         "# Debian); install them, or set DEBUGINFOD_URLS, and run\n"
	                         "# flamefs-collect symbolize\n",
	                         us)) < 0)
		return r;
	if (q.total && q.rooted * 2 < q.total) {
		static const char hint[] =
		        "# fewer than half the stacks reach an entry point (_start, start_thread,\n"
		        "# clone, ret_from_fork...): they were cut short, usually because frame\n"
		        "# pointers are missing under perf record -g; record with --call-graph "
		        "dwarf,\n"
		        "# or with flamefs-collect record\n";
		r = view_buf_append(out, hint, sizeof(hint) - 1);
	}
	return r;
}
