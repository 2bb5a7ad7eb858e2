/*
 * render.c — the renderers: each turns one node of a built view tree into
 * the bytes of one file of the view (folded, self, total, name, pprof),
 * plus the growable buffer they write into.  Renderers only read the tree,
 * so several threads may render the same tree at once.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile-codec.h"
#include "view-internal.h"

/* ---- buffer ------------------------------------------------------------ */

void view_buf_init(struct view_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = 0;
}

void view_buf_free(struct view_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

size_t view_buf_max(const struct view_buf *b)
{
	return b->max ? b->max : VIEW_RENDER_MAX;
}

int view_buf_reserve(struct view_buf *b, size_t extra)
{
	size_t max = view_buf_max(b);

	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	if (b->len + extra > max)
		return -EFBIG;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	/* Doubling, but never past the cap and its NUL (need is within). */
	size_t ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap - 1 > max)
		ncap = max + 1;
	char *nd = realloc(b->data, ncap);
	if (!nd)
		return -ENOMEM;
	view_hugepages(nd, ncap);
	if (!b->data)
		nd[0] = '\0';
	b->data = nd;
	b->cap = ncap;
	return 0;
}

int view_buf_append(struct view_buf *b, const void *data, size_t len)
{
	int r = view_buf_reserve(b, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int view_buf_vprintf(struct view_buf *b, const char *fmt, va_list ap)
{
	char small[512];
	va_list again;

	va_copy(again, ap);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	int r = n < 0 ? -EINVAL : 0;
	if (r == 0 && (size_t)n < sizeof(small))
		r = view_buf_append(b, small, (size_t)n);
	else if (r == 0 && (r = view_buf_reserve(b, (size_t)n)) == 0) {
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
		b->len += (size_t)n;
	}
	va_end(again);
	return r;
}

int view_buf_printf(struct view_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int r = view_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

int view_parse_size(const char *s, size_t *bytes)
{
	uint64_t v = 0, unit = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
			return -ERANGE;
	switch (*p) {
	case 'K':
	case 'k':
		unit = 1ull << 10;
		p++;
		break;
	case 'M':
	case 'm':
		unit = 1ull << 20;
		p++;
		break;
	case 'G':
	case 'g':
		unit = 1ull << 30;
		p++;
		break;
	default: break;
	}
	if (*p != '\0')
		return -EINVAL;
	if (__builtin_mul_overflow(v, unit, &v) || v > SIZE_MAX - 1)
		return -ERANGE;
	if (v == 0)
		return -ERANGE;
	*bytes = (size_t)v;
	return 0;
}

/* ---- small files ------------------------------------------------------- */

static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0)
		*p++ = tmp[--n];
	return p;
}

static int render_number(struct view_buf *out, uint64_t v)
{
	char tmp[24];
	char *e = put_u64(tmp, v);

	*e++ = '\n';
	return view_buf_append(out, tmp, (size_t)(e - tmp));
}

/* "A B\n" for a diff tree's self or total. */
static int render_pair(struct view_buf *out, uint64_t a, uint64_t b)
{
	char tmp[48];
	char *e = put_u64(tmp, a);

	*e++ = ' ';
	e = put_u64(e, b);
	*e++ = '\n';
	return view_buf_append(out, tmp, (size_t)(e - tmp));
}

int view_render_self(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	if (t->base)
		return render_pair(out, t->base[node].self_weight, t->nodes[node].self_weight);
	return render_number(out, t->nodes[node].self_weight);
}

int view_render_total(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	if (t->base)
		return render_pair(out, t->base[node].total_weight, t->nodes[node].total_weight);
	return render_number(out, t->nodes[node].total_weight);
}

int view_render_name(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	size_t len;
	const char *name = view_node_name(t, node, &len);
	int r = view_buf_reserve(out, view_text_len(name, len, 0) + 1);

	if (r < 0)
		return r;
	view_text_append(out, name, len, 0);
	return view_buf_append(out, "\n", 1);
}

static uint64_t self_size(const struct view_tree *t, uint32_t node)
{
	if (t->base)
		return 2 + view_digits(t->base[node].self_weight) +
		       view_digits(t->nodes[node].self_weight);
	return 1 + view_digits(t->nodes[node].self_weight);
}

static uint64_t total_size(const struct view_tree *t, uint32_t node)
{
	if (t->base)
		return 2 + view_digits(t->base[node].total_weight) +
		       view_digits(t->nodes[node].total_weight);
	return 1 + view_digits(t->nodes[node].total_weight);
}

static uint64_t name_size(const struct view_tree *t, uint32_t node)
{
	size_t len;
	const char *name = view_node_name(t, node, &len);

	return view_text_len(name, len, 0) + 1;
}

uint64_t view_folded_size(const struct view_tree *t, uint32_t node)
{
	view_tree_settle(t);
	return t->nodes[node].folded_bytes;
}

/* ---- folded ------------------------------------------------------------ */

struct dfs {
	uint32_t node;
	uint32_t next; /* next child index to visit */
};

/* Pushes node n on a depth-first walk's stack, doubling it when full.
 * Returns 0 or -ENOMEM (the stack is unchanged then). */
static int dfs_push(struct dfs **stack, size_t *depth, size_t *cap, uint32_t n)
{
	if (*depth == *cap) {
		struct dfs *ns = realloc(*stack, *cap * 2 * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		*stack = ns;
		*cap *= 2;
	}
	(*stack)[(*depth)++] = (struct dfs){n, 0};
	return 0;
}

void view_path_put_name(const struct view_tree *t, uint32_t n, char *path)
{
	const struct vnode *v = &t->nodes[n];
	uint32_t sid = vnode_frame(t, n)->name;
	const struct vstr *s = &t->strs[sid];

	if (v->parent != VIEW_ROOT)
		path[t->nodes[v->parent].path_len] = ';';
	if (t->esc_len)
		view_text_put(path + v->path_len - t->esc_len[sid], t->arena + s->off, s->len,
		              VIEW_TEXT_FOLDED);
	else
		memcpy(path + v->path_len - s->len, t->arena + s->off, s->len);
}

/* Writes the "bin;a;b" path of `n` into path[0..path_len) (the buffer is
 * at least that long).  Names are placed at their final offsets. */
static void put_name(const struct view_tree *t, uint32_t n, char *path)
{
	view_path_put_name(t, n, path);
}

/* Writes the counts that end node n's folded line, " W" (" A B" in a
 * diff tree), and the newline; returns the end. */
static char *put_line_counts(const struct view_tree *t, uint32_t n, char *o)
{
	*o++ = ' ';
	if (t->base) {
		o = put_u64(o, t->base[n].self_weight);
		*o++ = ' ';
	}
	o = put_u64(o, t->nodes[n].self_weight);
	*o++ = '\n';
	return o;
}

/* Appends the subtree's lines in depth-first order, children in name
 * order.  `out` must have room for folded_bytes more bytes. */
static int folded_dfs(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct dfs *stack = NULL;
	size_t depth = 0, cap = 64;
	char *path = NULL;
	size_t path_cap = 0;
	int r = 0;
	uint32_t a;

	/* The path of `node` itself, from its ancestors. */
	path_cap = (size_t)t->nodes[node].path_len + 4096;
	path = malloc(path_cap);
	stack = malloc(cap * sizeof(*stack));
	if (!path || !stack) {
		r = -ENOMEM;
		goto out;
	}
	for (a = node; a != VIEW_ROOT; a = t->nodes[a].parent)
		put_name(t, a, path);

	char *o = out->data + out->len;
	stack[depth++] = (struct dfs){node, 0};
	uint32_t n = node;
	for (;;) {
		const struct vnode *v = &t->nodes[n];
		if (vnode_has_line(t, n)) {
			memcpy(o, path, v->path_len);
			o += v->path_len;
			o = put_line_counts(t, n, o);
		}
		/* Find the next node to visit. */
		for (;;) {
			struct dfs *top = &stack[depth - 1];
			const struct vnode *tv = &t->nodes[top->node];
			if (top->next < tv->nkids) {
				n = t->kids[tv->first_kid + top->next++];
				break;
			}
			if (--depth == 0)
				goto done;
		}
		if (t->nodes[n].path_len > path_cap) {
			size_t ncap = path_cap * 2 > t->nodes[n].path_len ? path_cap * 2
			                                                  : t->nodes[n].path_len;
			char *np = realloc(path, ncap);
			if (!np) {
				r = -ENOMEM;
				goto out;
			}
			path = np;
			path_cap = ncap;
		}
		put_name(t, n, path);
		r = dfs_push(&stack, &depth, &cap, n);
		if (r < 0)
			goto out;
	}
done:
	out->len = (size_t)(o - out->data);
	out->data[out->len] = '\0';
out:
	free(path);
	free(stack);
	return r;
}

/* ---- folded, keyed order ------------------------------------------------ */

/* Below a node, a child c contributes two runs of lines: its own line
 * ("...;c W") and its subtree's lines ("...;c;..."), and no other sibling's
 * lines fall between lines of one run.  Lines of different runs first
 * differ inside the run keys `c + ' ' + W` (the whole own line) and
 * `c + ';'`, or one key is a prefix of the other and then so is the line,
 * unless a name extends a sibling's by ';' (folded_needs_sort covers that).
 * So ordering each sibling group's runs by key gives bytewise line order.
 * An item is child index * 2 + 1 for the subtree run, * 2 for the line. */
struct kframe {
	uint32_t node;
	size_t items; /* offset of this node's items in the item stack */
	uint32_t nitems;
	uint32_t pos;
};

/* The key of item `it` below `parent`: name, then the suffix in suf. */
static const char *item_key(const struct view_tree *t, uint32_t parent, uint32_t it, size_t *len,
                            char suf[48], size_t *suf_len)
{
	uint32_t c = t->kids[t->nodes[parent].first_kid + it / 2];
	const struct vstr *s = &t->strs[vnode_frame(t, c)->name];

	*len = s->len;
	if (it & 1) {
		suf[0] = ';';
		*suf_len = 1;
	} else {
		*suf_len = (size_t)(put_line_counts(t, c, suf) - suf) - 1; /* no newline */
	}
	return t->arena + s->off;
}

/* qsort_r's context for cmp_item. */
struct kctx {
	const struct view_tree *t;
	uint32_t parent;
};

static int cmp_item(const void *a, const void *b, void *ctx)
{
	const struct kctx *k = ctx;
	char sa[48], sb[48];
	size_t la, lb, sla, slb;
	const char *na = item_key(k->t, k->parent, *(const uint32_t *)a, &la, sa, &sla);
	const char *nb = item_key(k->t, k->parent, *(const uint32_t *)b, &lb, sb, &slb);
	size_t ta = la + sla, tb = lb + slb;

	for (size_t i = 0; i < ta && i < tb; i++) {
		unsigned char x = (unsigned char)(i < la ? na[i] : sa[i - la]);
		unsigned char y = (unsigned char)(i < lb ? nb[i] : sb[i - lb]);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return ta < tb ? -1 : ta > tb;
}

/* Does the child group of `node` need keyed order? */
static bool group_keyed(const struct view_tree *t, uint32_t node)
{
	const struct vnode *v = &t->nodes[node];

	for (uint32_t i = 0; i + 1 < v->nkids; i++)
		if (view_sibling_order_breaks(t, t->kids + v->first_kid, i, v->nkids))
			return true;
	return false;
}

static int ensure_path(char **path, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap * 2 > need ? *cap * 2 : need;
	char *np = realloc(*path, ncap);
	if (!np)
		return -ENOMEM;
	*path = np;
	*cap = ncap;
	return 0;
}

/* Like folded_dfs, in exact bytewise line order for trees with
 * folded_keyed set.  `out` must have room for folded_bytes more bytes. */
static int folded_keyed(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct kframe *stack = NULL;
	uint32_t *items = NULL;
	size_t depth = 0, cap = 64, nitems = 0, items_cap = 256;
	size_t path_cap = (size_t)t->nodes[node].path_len + 4096;
	char *path = malloc(path_cap);
	char *o = out->data + out->len;
	int r = 0;

	stack = malloc(cap * sizeof(*stack));
	items = malloc(items_cap * sizeof(*items));
	if (!path || !stack || !items) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t a = node; a != VIEW_ROOT; a = t->nodes[a].parent)
		put_name(t, a, path);
	if (vnode_has_line(t, node) && node != VIEW_ROOT) {
		memcpy(o, path, t->nodes[node].path_len);
		o += t->nodes[node].path_len;
		o = put_line_counts(t, node, o);
	}
	uint32_t n = node;
	for (;;) {
		/* Push n's subtree run: its children's items, ordered. */
		const struct vnode *v = &t->nodes[n];
		if (nitems + 2 * (size_t)v->nkids > items_cap) {
			size_t ncap = items_cap * 2 + 2 * (size_t)v->nkids;
			uint32_t *ni = realloc(items, ncap * sizeof(*ni));
			if (!ni) {
				r = -ENOMEM;
				goto out;
			}
			items = ni;
			items_cap = ncap;
		}
		if (depth == cap) {
			struct kframe *ns = realloc(stack, cap * 2 * sizeof(*ns));
			if (!ns) {
				r = -ENOMEM;
				goto out;
			}
			stack = ns;
			cap *= 2;
		}
		struct kframe *f = &stack[depth++];
		*f = (struct kframe){n, nitems, 0, 0};
		for (uint32_t i = 0; i < v->nkids; i++) {
			uint32_t ci = t->kids[v->first_kid + i];
			const struct vnode *c = &t->nodes[ci];
			if (vnode_has_line(t, ci))
				items[nitems + f->nitems++] = 2 * i;
			if (c->nkids > 0)
				items[nitems + f->nitems++] = 2 * i + 1;
		}
		if (f->nitems > 1 && group_keyed(t, n)) {
			struct kctx ctx = {t, n};
			qsort_r(items + nitems, f->nitems, sizeof(*items), cmp_item, &ctx);
		}
		nitems += f->nitems;
		/* Emit own lines until the next subtree run (or the end). */
		for (;;) {
			struct kframe *top = &stack[depth - 1];
			if (top->pos == top->nitems) {
				nitems = top->items;
				if (--depth == 0)
					goto done;
				continue;
			}
			uint32_t it = items[top->items + top->pos++];
			uint32_t c = t->kids[t->nodes[top->node].first_kid + it / 2];
			r = ensure_path(&path, &path_cap, t->nodes[c].path_len);
			if (r < 0)
				goto out;
			put_name(t, c, path);
			if (it & 1) {
				n = c;
				break;
			}
			memcpy(o, path, t->nodes[c].path_len);
			o += t->nodes[c].path_len;
			o = put_line_counts(t, c, o);
		}
	}
done:
	out->len = (size_t)(o - out->data);
	out->data[out->len] = '\0';
out:
	free(path);
	free(stack);
	free(items);
	return r;
}

struct line {
	const char *p;
	size_t len;
};

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->p, y->p, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

int view_render_folded(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	view_tree_settle(t);
	uint64_t size = t->nodes[node].folded_bytes;
	struct view_buf tmp = {0};
	struct line *lines = NULL;
	size_t nlines = 0, i;
	int r;

	/* The size is known before a byte is written: a rendering past the
	 * cap is refused before its memory is asked for. */
	if (size > view_buf_max(out) || out->len > view_buf_max(out) - size)
		return -EFBIG;
	r = view_buf_reserve(out, (size_t)size);
	if (r < 0)
		return r;
	if (!t->folded_needs_sort && !t->esc_len)
		return t->folded_keyed ? folded_keyed(t, node, out) : folded_dfs(t, node, out);

	/* Rare: some sibling name extends another by ';' itself (names with
	 * ';' in them), so keys do not decide the order, or names are
	 * written escaped, which changes their order.  Sort lines. */
	tmp.max = out->max;
	r = view_buf_reserve(&tmp, (size_t)size);
	if (r < 0)
		goto out;
	r = folded_dfs(t, node, &tmp);
	if (r < 0)
		goto out;
	for (i = 0; i < tmp.len; i++)
		nlines += tmp.data[i] == '\n';
	lines = malloc((nlines ? nlines : 1) * sizeof(*lines));
	if (!lines) {
		r = -ENOMEM;
		goto out;
	}
	const char *p = tmp.data, *end = tmp.data + tmp.len;
	for (i = 0; p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		lines[i].p = p;
		lines[i].len = (size_t)(nl - p);
		p = nl + 1;
	}
	qsort(lines, nlines, sizeof(*lines), cmp_line);
	for (i = 0; i < nlines; i++) {
		memcpy(out->data + out->len, lines[i].p, lines[i].len);
		out->len += lines[i].len;
		out->data[out->len++] = '\n';
	}
	out->data[out->len] = '\0';
out:
	free(lines);
	view_buf_free(&tmp);
	return r;
}

/* ---- pprof ------------------------------------------------------------- */

struct strtab {
	char **v;
	size_t n, cap;
	char **owned; /* strings we allocated (build id hex) */
	size_t nowned;
	uint32_t *of_sid; /* tree string id -> index, 0 = not yet */
};

static int strtab_add(struct strtab *st, char *s, int64_t *idx)
{
	if (st->n == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 64;
		char **nv = realloc(st->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		st->v = nv;
		st->cap = ncap;
	}
	st->v[st->n] = s;
	*idx = (int64_t)st->n++;
	return 0;
}

static int strtab_sid(struct strtab *st, const struct view_tree *t, uint32_t sid, int64_t *idx)
{
	int r;

	if (sid == 0) {
		*idx = 0;
		return 0;
	}
	if (st->of_sid[sid]) {
		*idx = st->of_sid[sid];
		return 0;
	}
	r = strtab_add(st, (char *)vstr_ptr(t, sid), idx);
	if (r < 0)
		return r;
	st->of_sid[sid] = (uint32_t)*idx;
	return 0;
}

/* Adds a static or tree-owned string by value (small fixed set). */
static int strtab_lit(struct strtab *st, const char *s, int64_t *idx)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->v[i], s) == 0) {
			*idx = (int64_t)i;
			return 0;
		}
	return strtab_add(st, (char *)s, idx);
}

static int strtab_hex(struct strtab *st, const struct view_tree *t, uint32_t sid, int64_t *idx)
{
	const struct vstr *s = &t->strs[sid];
	const unsigned char *raw = (const unsigned char *)vstr_ptr(t, sid);
	char *hex;
	char **no;
	int r;

	if (s->len == 0) {
		*idx = 0;
		return 0;
	}
	hex = malloc((size_t)s->len * 2 + 1);
	no = realloc(st->owned, (st->nowned + 1) * sizeof(*no));
	if (!hex || !no) {
		free(hex);
		if (no)
			st->owned = no;
		return -ENOMEM;
	}
	st->owned = no;
	st->owned[st->nowned++] = hex;
	for (uint32_t i = 0; i < s->len; i++) {
		hex[2 * i] = "0123456789abcdef"[raw[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[raw[i] & 15];
	}
	hex[2 * s->len] = '\0';
	r = strtab_add(st, hex, idx);
	return r;
}

struct pp {
	const struct view_tree *t;
	struct strtab st;
	uint32_t *loc_of_frame; /* local frame -> location id, 0 = none */
	Perftools__Profiles__Location *locs;
	Perftools__Profiles__Location **plocs;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **plines;
	Perftools__Profiles__Function *funcs;
	Perftools__Profiles__Function **pfuncs;
	size_t nlocs;
	Perftools__Profiles__Mapping *maps;
	Perftools__Profiles__Mapping **pmaps;
	size_t nmaps;
	uint32_t *map_build;  /* build id sid of each mapping */
	uint32_t *map_module; /* module sid of each mapping */
	/* The samples: the nodes that become one, what their stacks take,
	 * and what the profile's samples and sample types point into. */
	uint32_t *sampled;
	size_t nsampled, nlocids;
	Perftools__Profiles__ValueType vt[2], *pvt[2];
	Perftools__Profiles__Sample *samples, **psamples;
	uint64_t *locpool; /* the samples' location ids, leaf first */
	int64_t *valpool;  /* the samples' two values each */
};

static int pp_mapping(struct pp *pp, const struct vframe *f, uint64_t *id)
{
	int r;

	*id = 0;
	if (f->module == 0 && f->build_id == 0)
		return 0;
	for (size_t i = 0; i < pp->nmaps; i++)
		if (pp->map_module[i] == f->module && pp->map_build[i] == f->build_id) {
			*id = i + 1;
			return 0;
		}
	Perftools__Profiles__Mapping *m = &pp->maps[pp->nmaps];
	perftools__profiles__mapping__init(m);
	m->id = pp->nmaps + 1;
	m->has_functions = true;
	if ((r = strtab_sid(&pp->st, pp->t, f->module, &m->filename)) < 0 ||
	    (r = strtab_hex(&pp->st, pp->t, f->build_id, &m->build_id)) < 0)
		return r;
	pp->map_module[pp->nmaps] = f->module;
	pp->map_build[pp->nmaps] = f->build_id;
	pp->pmaps[pp->nmaps] = m;
	*id = ++pp->nmaps;
	return 0;
}

/* A Python frame's function name: its name "qualname (file)" without the
 * " (file)" its file already says, in a string the table owns.  Sets
 * *idx to -1 when the name is not of that form. */
static int strtab_python(struct strtab *st, const struct view_tree *t, const struct vframe *f,
                         int64_t *idx)
{
	const struct vstr *n = &t->strs[f->name], *fl = &t->strs[f->file];
	const char *name = vstr_ptr(t, f->name), *file = vstr_ptr(t, f->file);
	char *q;
	char **no;

	*idx = -1;
	if (f->kind != STORE_FRAME_PYTHON || !f->file || n->len < fl->len + 4 ||
	    memcmp(name + n->len - fl->len - 1, file, fl->len) != 0 ||
	    memcmp(name + n->len - fl->len - 3, " (", 2) != 0 || name[n->len - 1] != ')')
		return 0;
	size_t len = n->len - fl->len - 3;
	q = malloc(len + 1);
	no = realloc(st->owned, (st->nowned + 1) * sizeof(*no));
	if (!q || !no) {
		free(q);
		if (no)
			st->owned = no;
		return -ENOMEM;
	}
	st->owned = no;
	st->owned[st->nowned++] = q;
	memcpy(q, name, len);
	q[len] = '\0';
	return strtab_add(st, q, idx);
}

static int pp_location(struct pp *pp, uint32_t frame, uint64_t *id)
{
	const struct vframe *f = &pp->t->frames[frame];
	size_t k;
	int r;

	if (pp->loc_of_frame[frame]) {
		*id = pp->loc_of_frame[frame];
		return 0;
	}
	k = pp->nlocs;
	Perftools__Profiles__Function *fn = &pp->funcs[k];
	perftools__profiles__function__init(fn);
	fn->id = k + 1;
	if ((r = strtab_sid(&pp->st, pp->t, f->name, &fn->name)) < 0 ||
	    (r = strtab_sid(&pp->st, pp->t, f->file, &fn->filename)) < 0)
		return r;
	fn->system_name = fn->name;
	/* A Python function: its qualified name, the file apart (the
	 * system name keeps the frame's whole name). */
	int64_t py;
	if ((r = strtab_python(&pp->st, pp->t, f, &py)) < 0)
		return r;
	if (py >= 0)
		fn->name = py;
	Perftools__Profiles__Line *ln = &pp->lines[k];
	perftools__profiles__line__init(ln);
	ln->function_id = k + 1;
	ln->line = f->line;
	Perftools__Profiles__Location *loc = &pp->locs[k];
	perftools__profiles__location__init(loc);
	loc->id = k + 1;
	r = pp_mapping(pp, f, &loc->mapping_id);
	if (r < 0)
		return r;
	if (loc->mapping_id) {
		Perftools__Profiles__Mapping *m = pp->pmaps[loc->mapping_id - 1];
		if (f->file)
			m->has_filenames = true;
		if (f->line)
			m->has_line_numbers = true;
	}
	pp->plines[k] = ln;
	loc->n_line = 1;
	loc->line = &pp->plines[k];
	pp->plocs[k] = loc;
	pp->pfuncs[k] = fn;
	pp->nlocs++;
	pp->loc_of_frame[frame] = (uint32_t)(k + 1);
	*id = k + 1;
	return 0;
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static bool is_cpu_event(const char *e)
{
	return strcmp(e, "cpu-clock") == 0 || strcmp(e, "task-clock") == 0;
}

/* Gzips in[0..len) onto out. */
static int gzip_append(const uint8_t *in, size_t len, struct view_buf *out)
{
	z_stream zs;
	int r, zr;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	size_t bound = deflateBound(&zs, (uLong)len);
	r = view_buf_reserve(out, bound);
	if (r < 0)
		goto out;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out->data + out->len;
	zs.avail_out = (uInt)bound;
	zr = deflate(&zs, Z_FINISH);
	if (zr != Z_STREAM_END) {
		r = -EIO;
		goto out;
	}
	out->len += zs.total_out;
	out->data[out->len] = '\0';
	r = 0;
out:
	deflateEnd(&zs);
	return r;
}

/* The binary node that `node` lies under; for VIEW_ROOT, the heaviest
 * binary.  VIEW_ROOT when the tree is empty. */
static uint32_t binary_of(const struct view_tree *t, uint32_t node)
{
	if (node != VIEW_ROOT) {
		while (t->nodes[node].parent != VIEW_ROOT)
			node = t->nodes[node].parent;
		return node;
	}
	const struct vnode *root = &t->nodes[VIEW_ROOT];
	uint32_t best = VIEW_ROOT;
	for (uint32_t k = 0; k < root->nkids; k++) {
		uint32_t n = t->kids[root->first_kid + k];
		if (best == VIEW_ROOT || t->nodes[n].total_weight > t->nodes[best].total_weight)
			best = n;
	}
	return best;
}

/* pprof takes the first mapping for the main binary (go tool pprof's
 * "File:" line): moves the mapping of the file named like the binary, if
 * any, to the front, and renumbers the locations. */
static void pp_main_mapping_first(struct pp *pp, uint32_t binary)
{
	if (binary == VIEW_ROOT || pp->nmaps < 2)
		return;
	const char *want = vstr_ptr(pp->t, pp->t->frames[pp->t->nodes[binary].frame].name);
	size_t main = 0;
	for (; main < pp->nmaps; main++) {
		const char *path = pp->st.v[pp->pmaps[main]->filename];
		const char *slash = strrchr(path, '/');
		if (strcmp(slash ? slash + 1 : path, want) == 0)
			break;
	}
	if (main == 0 || main == pp->nmaps)
		return;
	Perftools__Profiles__Mapping *m = pp->pmaps[main];
	pp->pmaps[main] = pp->pmaps[0];
	pp->pmaps[0] = m;
	pp->pmaps[0]->id = 1;
	pp->pmaps[main]->id = main + 1;
	for (size_t i = 0; i < pp->nlocs; i++) {
		Perftools__Profiles__Location *loc = pp->plocs[i];
		if (loc->mapping_id == 1)
			loc->mapping_id = main + 1;
		else if (loc->mapping_id == main + 1)
			loc->mapping_id = 1;
	}
}

/* Does node n become a pprof sample (non-zero counts, in either version
 * of a diff)? */
static bool has_sample(const struct view_tree *t, uint32_t n)
{
	return t->nodes[n].self_weight || t->nodes[n].self_samples ||
	       (t->base && (t->base[n].self_weight || t->base[n].self_samples));
}

/* The tables of pp, each with room for one entry per frame of the tree.
 * 0 or -ENOMEM. */
static int pp_alloc(struct pp *pp)
{
	const struct view_tree *t = pp->t;

	pp->st.of_sid = calloc(t->nstrs, sizeof(*pp->st.of_sid));
	pp->loc_of_frame = calloc(t->nframes, sizeof(*pp->loc_of_frame));
	pp->locs = malloc(t->nframes * sizeof(*pp->locs));
	pp->plocs = malloc(t->nframes * sizeof(*pp->plocs));
	pp->lines = malloc(t->nframes * sizeof(*pp->lines));
	pp->plines = malloc(t->nframes * sizeof(*pp->plines));
	pp->funcs = malloc(t->nframes * sizeof(*pp->funcs));
	pp->pfuncs = malloc(t->nframes * sizeof(*pp->pfuncs));
	pp->maps = malloc(t->nframes * sizeof(*pp->maps));
	pp->pmaps = malloc(t->nframes * sizeof(*pp->pmaps));
	pp->map_build = malloc(t->nframes * sizeof(*pp->map_build));
	pp->map_module = malloc(t->nframes * sizeof(*pp->map_module));
	if (!pp->st.of_sid || !pp->loc_of_frame || !pp->locs || !pp->plocs || !pp->lines ||
	    !pp->plines || !pp->funcs || !pp->pfuncs || !pp->maps || !pp->pmaps || !pp->map_build ||
	    !pp->map_module)
		return -ENOMEM;
	return 0;
}

/* Frees everything pp holds (the tree is borrowed).  A pp zeroed but for
 * its tree, or filled in part, is fine. */
static void pp_free(struct pp *pp)
{
	free(pp->sampled);
	free(pp->samples);
	free(pp->psamples);
	free(pp->locpool);
	free(pp->valpool);
	for (size_t i = 0; i < pp->st.nowned; i++)
		free(pp->st.owned[i]);
	free(pp->st.owned);
	free(pp->st.v);
	free(pp->st.of_sid);
	free(pp->loc_of_frame);
	free(pp->locs);
	free(pp->plocs);
	free(pp->lines);
	free(pp->plines);
	free(pp->funcs);
	free(pp->pfuncs);
	free(pp->maps);
	free(pp->pmaps);
	free(pp->map_build);
	free(pp->map_module);
}

/* The nodes of node's subtree that become samples, node first, then
 * depth-first in child order (pp->sampled), and the location ids their
 * stacks take, one per frame up to the binary's (pp->nlocids).  0 or
 * -ENOMEM. */
static int pp_find_samples(struct pp *pp, uint32_t node)
{
	const struct view_tree *t = pp->t;
	size_t depth = 0, cap = 64;
	struct dfs *stack = malloc(cap * sizeof(*stack));
	int r = 0;

	pp->sampled = malloc((size_t)t->nnodes * sizeof(*pp->sampled));
	if (!stack || !pp->sampled) {
		free(stack);
		return -ENOMEM;
	}
	stack[depth++] = (struct dfs){node, 0};
	if (has_sample(t, node))
		pp->sampled[pp->nsampled++] = node;
	while (depth > 0) {
		struct dfs *top = &stack[depth - 1];
		const struct vnode *tv = &t->nodes[top->node];
		if (top->next >= tv->nkids) {
			depth--;
			continue;
		}
		uint32_t n = t->kids[tv->first_kid + top->next++];
		if (has_sample(t, n))
			pp->sampled[pp->nsampled++] = n;
		r = dfs_push(&stack, &depth, &cap, n);
		if (r < 0)
			break;
	}
	free(stack);
	for (size_t i = 0; r == 0 && i < pp->nsampled; i++)
		for (uint32_t a = pp->sampled[i]; a != VIEW_ROOT; a = t->nodes[a].parent)
			pp->nlocids++;
	return r;
}

/* The string table's head: "" first, then the two sample types, samples
 * (count) and the weight: cpu (nanoseconds) for a CPU clock, else the
 * event and its unit.  0 or -ENOMEM. */
static int pp_sample_types(struct pp *pp)
{
	const struct view_tree *t = pp->t;
	const char *wtype = is_cpu_event(t->event) ? "cpu" : t->event;
	const char *wunit = is_cpu_event(t->event) ? "nanoseconds" : t->unit;
	int64_t idx;
	int r;

	if (strcmp(wtype, "samples") == 0 || wtype[0] == '\0')
		wtype = "weight"; /* keep the two sample types apart */
	if ((r = strtab_add(&pp->st, "", &idx)) < 0)
		return r;
	for (size_t i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&pp->vt[i]);
		pp->pvt[i] = &pp->vt[i];
	}
	if ((r = strtab_lit(&pp->st, "samples", &pp->vt[0].type)) < 0 ||
	    (r = strtab_lit(&pp->st, "count", &pp->vt[0].unit)) < 0 ||
	    (r = strtab_lit(&pp->st, wtype, &pp->vt[1].type)) < 0 ||
	    (r = strtab_lit(&pp->st, wunit[0] ? wunit : "count", &pp->vt[1].unit)) < 0)
		return r;
	return 0;
}

/* One sample per sampled node: its stack as location ids, the leaf
 * first (the locations, functions and mappings made as their frames
 * first come), and its counts, a diff's B - A.  0 or -ENOMEM. */
static int pp_samples(struct pp *pp)
{
	const struct view_tree *t = pp->t;
	size_t n = pp->nsampled ? pp->nsampled : 1, lp = 0;
	int r;

	pp->samples = malloc(n * sizeof(*pp->samples));
	pp->psamples = malloc(n * sizeof(*pp->psamples));
	pp->locpool = malloc((pp->nlocids ? pp->nlocids : 1) * sizeof(*pp->locpool));
	pp->valpool = malloc(n * 2 * sizeof(*pp->valpool));
	if (!pp->samples || !pp->psamples || !pp->locpool || !pp->valpool)
		return -ENOMEM;
	for (size_t i = 0; i < pp->nsampled; i++) {
		Perftools__Profiles__Sample *s = &pp->samples[i];
		uint32_t node = pp->sampled[i];
		const struct vnode *v = &t->nodes[node];
		perftools__profiles__sample__init(s);
		s->location_id = pp->locpool + lp;
		for (uint32_t a = node; a != VIEW_ROOT; a = t->nodes[a].parent) {
			r = pp_location(pp, t->nodes[a].frame, &pp->locpool[lp++]);
			if (r < 0)
				return r;
		}
		s->n_location_id = (size_t)(pp->locpool + lp - s->location_id);
		s->value = pp->valpool + 2 * i;
		s->value[0] = clamp64(v->self_samples);
		s->value[1] = clamp64(v->self_weight);
		if (t->base) {
			/* A diff: B - A, as pprof -diff_base shows it. */
			s->value[0] -= clamp64(t->base[node].self_samples);
			s->value[1] -= clamp64(t->base[node].self_weight);
		}
		s->n_value = 2;
		pp->psamples[i] = s;
	}
	return 0;
}

/* The profile of pp's tables, its default sample type the weight,
 * encoded and gzipped onto out.  0 or -errno. */
static int pp_write(struct pp *pp, struct view_buf *out)
{
	Perftools__Profiles__Profile prof;
	size_t plen;
	uint8_t *packed;
	int r;

	perftools__profiles__profile__init(&prof);
	prof.n_sample_type = 2;
	prof.sample_type = pp->pvt;
	prof.n_sample = pp->nsampled;
	prof.sample = pp->psamples;
	prof.n_location = pp->nlocs;
	prof.location = pp->plocs;
	prof.n_function = pp->nlocs;
	prof.function = pp->pfuncs;
	prof.n_mapping = pp->nmaps;
	prof.mapping = pp->pmaps;
	prof.period_type = &pp->vt[1];
	prof.default_sample_type = pp->vt[1].type;
	prof.n_string_table = pp->st.n;
	prof.string_table = pp->st.v;
	packed = profile_encode(&prof, &plen);
	if (!packed)
		return -ENOMEM;
	r = gzip_append(packed, plen, out);
	free(packed);
	return r;
}

int view_render_pprof(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct pp pp = {.t = t};
	int r;

	view_tree_settle(t);
	if ((r = pp_alloc(&pp)) < 0 || (r = pp_find_samples(&pp, node)) < 0)
		goto out;
	/* Each location id takes a byte of the profile at least (and 8 here
	 * before it is encoded): past the cap, refuse before allocating. */
	if (pp.nlocids > view_buf_max(out) / 8) {
		r = -EFBIG;
		goto out;
	}
	if ((r = pp_sample_types(&pp)) < 0 || (r = pp_samples(&pp)) < 0)
		goto out;
	pp_main_mapping_first(&pp, binary_of(t, node));
	r = pp_write(&pp, out);
out:
	pp_free(&pp);
	return r;
}

/* ---- the file table ------------------------------------------------------ */

const struct view_file view_files[] = {
        {"folded", view_render_folded, view_folded_size},
        {"self", view_render_self, self_size},
        {"total", view_render_total, total_size},
        {"pprof", view_render_pprof, NULL},
        {"name", view_render_name, name_size},
        {"flame.svg", view_render_flame_svg, NULL},
        {"callgrind", view_render_callgrind, NULL},
        {"top", view_render_top, NULL},
        {"timeline", view_render_timeline, NULL},
        {"timeline.svg", view_render_timeline_svg, NULL},
        {"heatmap.svg", view_render_heatmap_svg, NULL},
};
const size_t view_file_count = sizeof(view_files) / sizeof(view_files[0]);

const struct view_file view_diff_files[] = {
        {"folded", view_render_folded, view_folded_size},
        {"self", view_render_self, self_size},
        {"total", view_render_total, total_size},
        {"pprof", view_render_pprof, NULL},
        {"name", view_render_name, name_size},
        {"flame.svg", view_render_flame_svg, NULL},
};
const size_t view_diff_file_count = sizeof(view_diff_files) / sizeof(view_diff_files[0]);
