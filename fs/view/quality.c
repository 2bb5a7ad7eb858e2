/*
 * quality.c — how good a subtree's stacks are: the share of its weight
 * whose stacks reach an outermost frame (a process's or thread's entry
 * point, so the stack was not cut short), and the share whose leaf was
 * not symbolized.  `flamefs-collect stats --quality`, the view's
 * `quality` file and the warning after an import read these.
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

/* "98.23" for part/whole in percent, two decimals rounded half up. */
static void put_share(char out[32], uint64_t part, uint64_t whole)
{
	__extension__ typedef unsigned __int128 u128;
	uint64_t v = whole ? (uint64_t)(((u128)part * 20000 + whole) / ((u128)whole * 2)) : 0;

	snprintf(out, 32, "%" PRIu64 ".%02" PRIu64, v / 100, v % 100);
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
