/*
 * top.c — the `top` renderer: the functions of a subtree ranked by self
 * weight, then total weight, one aligned line per function with its
 * weights, their shares of the subtree and its frame kind, the way
 * `pprof -top` and perf report's flat view show them.
 *
 * Every node of the subtree adds its self weight to its name's, and its
 * total weight when no ancestor inside the subtree has the same name
 * (its outermost occurrence), so a function's numbers are what the
 * function view (functions.c) gives for the same subtree.  Below a
 * binary's node, a depth-first walk keeps count of the names open on the
 * path.  At the top root, and at a binary's node (a version directory)
 * when the tree has no other binary, the subtree is the whole tree, whose
 * sums per name view_tree_finish() made in its totals pass
 * (t->name_sums): no node is read.  At a binary's node of a tree of
 * several, the nodes are read in id order, front to back, not in a walk
 * that jumps around memory (a node's children are rarely next to it),
 * and whether an ancestor has the node's name is the flag
 * VNODE_RECURSIVE the build set.
 * No per-function index beyond one slot per interned string is needed,
 * so it is cheaper than view_functions_build() and fit for every
 * directory.  A function's kind is that of its first node in id order.
 *
 * Samples without frames (a process name only: the count sits on a
 * binary's node) belong to no function; they are one more row, named
 * TOP_NO_FRAMES with the kind "-", so that the self column sums to the
 * directory's total.  Its weight is that total less the functions' self
 * weights: every other sample of the subtree ends at a frame below a
 * binary's node, whose self weight its function counts once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

/* The row of the samples without frames: a data name in brackets, like
 * perf's "[unknown]", and the name the SQL of store/README.md gives them. */
#define TOP_NO_FRAMES "[no frames]"
/* Its name id: no string of a tree has it. */
#define TOP_NO_FRAMES_ID UINT32_MAX

struct top_func {
	uint32_t name; /* tree string id, or TOP_NO_FRAMES_ID */
	uint8_t kind;  /* of the first occurrence in walk order */
	uint64_t self, total;
};

const char *view_kind_name(unsigned kind)
{
	static const char *const names[] = {
	        [STORE_FRAME_USER] = "user",     [STORE_FRAME_KERNEL] = "kernel",
	        [STORE_FRAME_INLINE] = "inline", [STORE_FRAME_UNKNOWN] = "unknown",
	        [STORE_FRAME_JIT] = "jit",       [STORE_FRAME_PYTHON] = "python",
	        [STORE_FRAME_SPAN] = "span",
	};

	if (kind < sizeof(names) / sizeof(names[0]) && names[kind])
		return names[kind];
	return "other";
}

bool view_unit_is_clock(const char *unit, uint64_t *per_second)
{
	static const struct {
		const char *unit;
		uint64_t per_second;
	} clocks[] = {
	        {"nanoseconds", 1000000000},
	        {"microseconds", 1000000},
	        {"milliseconds", 1000},
	        {"seconds", 1},
	};

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (unit && strcmp(unit, clocks[i].unit) == 0) {
			*per_second = clocks[i].per_second;
			return true;
		}
	return false;
}

/* The raw bytes of a row's name (unescaped) and their length. */
static const char *top_name(const struct view_tree *t, uint32_t name, size_t *len)
{
	if (name == TOP_NO_FRAMES_ID) {
		*len = sizeof(TOP_NO_FRAMES) - 1;
		return TOP_NO_FRAMES;
	}
	*len = t->strs[name].len;
	return t->arena + t->strs[name].off;
}

static int cmp_top(const void *a, const void *b, void *ctx)
{
	const struct view_tree *t = ctx;
	const struct top_func *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	size_t lx, ly;
	const char *px = top_name(t, x->name, &lx), *py = top_name(t, y->name, &ly);
	int c = memcmp(px, py, lx < ly ? lx : ly);
	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	/* A frame named like the row of no frames ranks before it. */
	return (x->name == TOP_NO_FRAMES_ID) - (y->name == TOP_NO_FRAMES_ID);
}

/* cmp_top(x, y) < 0, inline. */
static inline bool top_before(const struct view_tree *t, const struct top_func *x,
                              const struct top_func *y)
{
	if (x->self != y->self)
		return x->self > y->self;
	if (x->total != y->total)
		return x->total > y->total;
	return cmp_top(x, y, (void *)t) < 0;
}

static void top_swap(struct top_func *a, size_t i, size_t j)
{
	struct top_func f = a[i];

	a[i] = a[j];
	a[j] = f;
}

/* Sorts a[0..n) in cmp_top()'s order: a quicksort with the comparison
 * inline (qsort_r calls it through a pointer and moves the elements as
 * bytes of a size it learns at run time), the median of three as pivot,
 * the smaller part first and the larger in the loop, an insertion sort
 * from 16 down; past `budget` partitions (bad pivots), qsort_r. */
static void top_sort(const struct view_tree *t, struct top_func *a, size_t n, unsigned budget)
{
	while (n > 16) {
		if (budget == 0) {
			qsort_r(a, n, sizeof(*a), cmp_top, (void *)t);
			return;
		}
		budget--;
		size_t m = n / 2;
		if (top_before(t, &a[m], &a[0]))
			top_swap(a, 0, m);
		if (top_before(t, &a[n - 1], &a[m])) {
			top_swap(a, m, n - 1);
			if (top_before(t, &a[m], &a[0]))
				top_swap(a, 0, m);
		}
		/* Hoare's partition around a copy of the pivot: a[0..j] rank
		 * before it or equal, a[j + 1..n) after or equal. */
		struct top_func p = a[m];
		size_t i = 0, j = n - 1;
		for (;;) {
			while (top_before(t, &a[i], &p))
				i++;
			while (top_before(t, &p, &a[j]))
				j--;
			if (i >= j)
				break;
			top_swap(a, i++, j--);
		}
		if (j + 1 < n - (j + 1)) {
			top_sort(t, a, j + 1, budget);
			a += j + 1;
			n -= j + 1;
		} else {
			top_sort(t, a + j + 1, n - (j + 1), budget);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && top_before(t, &a[j], &a[j - 1]); j--)
			top_swap(a, j - 1, j);
}

/* top_sort()'s partitions for n functions: 8 + 2 log2(n). */
static unsigned top_budget(size_t n)
{
	unsigned budget = 8;

	for (; n > 1; n /= 2)
		budget += 2;
	return budget;
}

static bool is_frame(const struct view_tree *t, uint32_t n)
{
	return n != VIEW_ROOT && t->nodes[n].parent != VIEW_ROOT;
}

/* Adds node n (a frame) to its function. */
static inline void top_add(const struct view_tree *t, uint32_t n, uint32_t *fidx,
                           struct top_func *funcs, uint32_t *nfuncs, bool outermost)
{
	const struct vnode *v = &t->nodes[n];
	const struct vframe *f = vnode_frame(t, n);

	if (!fidx[f->name]) {
		funcs[*nfuncs] = (struct top_func){.name = f->name, .kind = f->kind};
		fidx[f->name] = ++*nfuncs;
	}
	struct top_func *fn = &funcs[fidx[f->name] - 1];
	fn->self += v->self_weight;
	if (outermost)
		fn->total += v->total_weight;
}

/* The functions of the top root's subtree or a binary node's (`node`), in
 * id order: VNODE_RECURSIVE says whether a frame above has the name. */
static int top_scan(const struct view_tree *t, uint32_t node, uint32_t *fidx,
                    struct top_func *funcs, uint32_t *nfuncs)
{
	/* Several binaries and one of them: which nodes are its, by id order
	 * (a parent's id is below its children's). */
	uint8_t *in = NULL;

	if (node != VIEW_ROOT && t->nodes[VIEW_ROOT].nkids > 1) {
		in = calloc(t->nnodes, 1);
		if (!in)
			return -ENOMEM;
		in[node] = 1;
	}
	for (uint32_t n = 1; n < t->nnodes; n++) {
		const struct vnode *v = &t->nodes[n];
		if (v->parent == VIEW_ROOT || (v->flags & VNODE_HIDDEN))
			continue;
		if (in) {
			if (!in[v->parent])
				continue;
			in[n] = 1;
		}
		top_add(t, n, fidx, funcs, nfuncs, !(v->flags & VNODE_RECURSIVE));
	}
	free(in);
	return 0;
}

/* Gathers the rows of the subtree of `node`, sorted, into *out (malloc'd,
 * the caller frees): its functions (their number into *nout) and, when
 * it holds samples without frames, their row (the number of rows into
 * *nrows). */
static int top_collect(const struct view_tree *t, uint32_t node, struct top_func **out,
                       uint32_t *nout, uint32_t *nrows)
{
	/* The whole tree: view_tree_finish() summed it by name, and nothing
	 * but the functions is needed. */
	bool whole = t->name_sums && (node == VIEW_ROOT || (t->nodes[node].parent == VIEW_ROOT &&
	                                                    t->nodes[VIEW_ROOT].nkids == 1));
	size_t nslots = t->nstrs ? t->nstrs : 1;
	uint32_t *fidx = whole ? NULL : calloc(nslots, sizeof(*fidx)); /* sid -> func + 1 */
	uint32_t *open = whole ? NULL : calloc(nslots, sizeof(*open)); /* sid -> depth */
	/* A function per name at most, and the row of no frames. */
	struct top_func *funcs = malloc(
	        ((size_t)(t->nstrs < t->nnodes ? t->nstrs : t->nnodes) + 1) * sizeof(*funcs));
	struct {
		uint32_t node, next;
	} *stack = whole ? NULL : malloc((size_t)(t->nnodes + 1) * sizeof(*stack));
	uint32_t nfuncs = 0;
	size_t depth = 0;
	int r = -ENOMEM;

	if (!funcs || (!whole && (!fidx || !open || !stack)))
		goto out;
	if (whole) {
		for (uint32_t sid = 0; sid < t->nstrs; sid++) {
			const struct vname_sum *ns = &t->name_sums[sid];
			if (ns->used)
				funcs[nfuncs++] =
				        (struct top_func){sid, ns->kind, ns->self, ns->total};
		}
		goto walked;
	}
	if (node == VIEW_ROOT || t->nodes[node].parent == VIEW_ROOT) {
		if ((r = top_scan(t, node, fidx, funcs, &nfuncs)) < 0)
			goto out;
		goto walked;
	}
	/* Below a binary's node the walk reads the child lists. */
	view_tree_settle(t);
	stack[depth].node = node;
	stack[depth++].next = 0;
	for (uint32_t n = node;;) {
		if (is_frame(t, n)) {
			uint32_t name = vnode_frame(t, n)->name;
			top_add(t, n, fidx, funcs, &nfuncs, !open[name]);
			open[name]++;
		}
		for (;;) {
			uint32_t top = stack[depth - 1].node;
			if (stack[depth - 1].next < t->nodes[top].nkids) {
				n = t->kids[t->nodes[top].first_kid + stack[depth - 1].next++];
				stack[depth].node = n;
				stack[depth++].next = 0;
				break;
			}
			if (is_frame(t, top))
				open[vnode_frame(t, top)->name]--;
			if (--depth == 0)
				goto walked;
		}
	}
walked:
	/* Functions without weight (in a seeded tree's hidden nodes only,
	 * which no child list holds) cannot occur: every visible node has
	 * a total.  The row of no frames: what the functions' self weights
	 * leave of the total (modulo 2^64, as the sums were made, so
	 * exact). */
	*nout = nfuncs;
	uint64_t frameless = t->nodes[node].total_weight;
	for (uint32_t i = 0; i < nfuncs; i++)
		frameless -= funcs[i].self;
	if (frameless)
		funcs[nfuncs++] = (struct top_func){
		        .name = TOP_NO_FRAMES_ID, .self = frameless, .total = frameless};
	top_sort(t, funcs, nfuncs, top_budget(nfuncs));
	*out = funcs;
	*nrows = nfuncs;
	funcs = NULL;
	r = 0;
out:
	free(fidx);
	free(open);
	free(funcs);
	free(stack);
	return r;
}

/* v in decimal, right-aligned in `width` columns, at p (no NUL).
 * Returns the bytes written. */
static size_t put_num(char *p, uint64_t v, unsigned width)
{
	char digits[20];
	unsigned n = 0;
	size_t o = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (o + n < width)
		p[o++] = ' ';
	while (n)
		p[o++] = digits[--n];
	return o;
}

/* "12.34" for part/whole as a percentage (two decimals, rounded half up
 * in integers so every platform prints the same). */
__extension__ typedef unsigned __int128 u128;

static void put_percent(char out[32], uint64_t part, uint64_t whole)
{
	u128 x = whole ? ((u128)part * 20000 + whole) / ((u128)whole * 2) : 0;
	uint64_t v = (uint64_t)x;
	size_t n = put_num(out, v / 100, 1);

	out[n] = '.';
	out[n + 1] = (char)('0' + v / 10 % 10);
	out[n + 2] = (char)('0' + v % 10);
	out[n + 3] = '\0';
}

/* put_percent()'s "12.34", right-aligned in 7 columns, at p (no NUL).
 * Returns the bytes written. */
static size_t put_share(char *p, uint64_t part, uint64_t whole)
{
	char s[32];
	size_t n, o = 0;

	put_percent(s, part, whole);
	n = strlen(s);
	while (o + n < 7)
		p[o++] = ' ';
	memcpy(p + o, s, n);
	return o + n;
}

/* "1.234567890" for v units of which per_second make a second. */
static void put_seconds(char out[48], uint64_t v, uint64_t per_second)
{
	unsigned digits = view_digits(per_second) - 1;

	if (digits == 0)
		snprintf(out, 48, "%" PRIu64, v);
	else
		snprintf(out, 48, "%" PRIu64 ".%0*" PRIu64, v / per_second, (int)digits,
		         v % per_second);
}

/* The bytes name string sid takes in `top` (escaped as text files
 * escape names; a tree with no name a folded path escapes has none). */
static size_t top_name_len(const struct view_tree *t, uint32_t sid)
{
	if (sid == TOP_NO_FRAMES_ID)
		return sizeof(TOP_NO_FRAMES) - 1;
	if (!t->esc_len)
		return t->strs[sid].len;
	return view_text_len(vstr_ptr(t, sid), t->strs[sid].len, 0);
}

/* The kind column of a row: its frame's kind, "-" for no frames. */
static const char *top_kind(const struct top_func *f)
{
	return f->name == TOP_NO_FRAMES_ID ? "-" : view_kind_name(f->kind);
}

int view_render_top(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct top_func *funcs = NULL;
	uint32_t nfuncs = 0, nrows = 0;
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = top_collect(t, node, &funcs, &nfuncs, &nrows)) < 0)
		return r;

	uint64_t whole = t->nodes[node].total_weight, per_second;
	const char *unit = t->unit ? t->unit : "";
	unsigned w = view_digits(whole);
	if (w < 4)
		w = 4;
	const char *event = t->event ? t->event : "";
	char secs[48];
	r = view_buf_printf(out, "# %" PRIu32 " functions by self weight; unit ", nfuncs);
	if (r == 0 && (r = view_text_append(out, unit, strlen(unit), 0)) == 0 &&
	    (r = view_buf_append(out, " (", 2)) == 0 &&
	    (r = view_text_append(out, event, strlen(event), 0)) == 0) {
		if (view_unit_is_clock(unit, &per_second)) {
			put_seconds(secs, whole, per_second);
			r = view_buf_printf(out, "), total %" PRIu64 " = %s s\n", whole, secs);
		} else {
			r = view_buf_printf(out, "), total %" PRIu64 "\n", whole);
		}
	}
	if (r == 0)
		r = view_buf_printf(out, "#%*s %7s %*s %7s %-7s %s\n", (int)w - 1, "self", "self%",
		                    (int)w, "total", "total%", "kind", "name");
	/* The lines are written by hand, not with printf, which would parse
	 * its format again for each of a version's many functions.  Their
	 * bytes are known (the numbers take w columns, w being the whole's
	 * digits, the shares 7), so the buffer is grown once, not doubled
	 * (and copied) line after line. */
	size_t all = 0;
	for (uint32_t i = 0; i < nrows; i++) {
		size_t klen = strlen(top_kind(&funcs[i]));
		all += 2 * (size_t)w + 2 * 7 + (klen > 7 ? klen : 7) + 4 +
		       top_name_len(t, funcs[i].name) + 1;
	}
	/* With room for the loop's reservation per line, which allows 20
	 * digits a number (2 * (20 - 4) bytes more at most). */
	if (r == 0)
		r = view_buf_reserve(out, all + 64);
	for (uint32_t i = 0; i < nrows && r == 0; i++) {
		const char *kind = top_kind(&funcs[i]);
		size_t klen = strlen(kind);
		/* Two numbers of at most max(w, 20) digits, two shares of 7
		 * columns, the kind padded to at least 7, four spaces after
		 * them, the name and the newline. */
		size_t num = w > 20 ? w : 20;
		if ((r = view_buf_reserve(out, 2 * num + 2 * 7 + (klen > 7 ? klen : 7) + 4 +
		                                       top_name_len(t, funcs[i].name) + 1)) < 0)
			break;
		char *p = out->data + out->len, *p0 = p;
		p += put_num(p, funcs[i].self, w);
		*p++ = ' ';
		p += put_share(p, funcs[i].self, whole);
		*p++ = ' ';
		p += put_num(p, funcs[i].total, w);
		*p++ = ' ';
		p += put_share(p, funcs[i].total, whole);
		*p++ = ' ';
		memcpy(p, kind, klen);
		p += klen;
		for (size_t k = klen; k < 7; k++)
			*p++ = ' ';
		*p++ = ' ';
		size_t nlen;
		const char *name = top_name(t, funcs[i].name, &nlen);
		if (t->esc_len && funcs[i].name != TOP_NO_FRAMES_ID) {
			p = view_text_put(p, name, nlen, 0);
		} else {
			memcpy(p, name, nlen);
			p += nlen;
		}
		*p++ = '\n';
		out->len += (size_t)(p - p0);
		out->data[out->len] = '\0';
	}
	free(funcs);
	return r;
}
