/*
 * timeline.c — when a subtree ran: `timeline`, one line per interval of a
 * resolution that fits the span shown (1 s over a short recording,
 * minutes over days) with the samples and weight of the subtree in it and
 * its weight per second of the time it covers, and `timeline.svg`, the
 * same as a bar chart drawn in the self-contained style of flame.svg.
 *
 * A tree keeps no counts per bucket while it is only walked (that would
 * cost memory per node and bucket in every tree).  The first timeline or
 * heatmap rendered of a tree reads the counts of the tree's series over
 * its span from the store (one set-based read), and the detail of their
 * samples (their moments), into the tree's time index: each row keyed
 * by the view node its store node maps to (its parent's node's child of
 * the same frame name, as build.c merges them; a node the tree does not
 * show maps to its deepest ancestor it shows), sorted depth-first, so
 * that every later node's rows are one run found by two binary searches
 * and `grep -r` over a mount reads the store once per tree, not three
 * times per directory.  A tree whose rows would pass view_time_rows_max
 * keeps no index: each rendering reads the store again and decides per
 * store node, memoized, whether it lies in the subtree (only the nodes
 * on the way from the binary down to the subtree's root need their
 * names compared; below it every node is in, beside it every node is
 * out).  Either way, where an interval is shorter than a bucket or a
 * window cuts a bucket, the subtree's samples are placed by their
 * moment; what of such a bucket has no moment (its counts minus its
 * samples' detail) is never spread: it is shown whole, as its bucket,
 * flagged.  The top root and a binary's node take every count of their
 * series.  Trees derived from trees (diffs, callers, callees) read
 * nothing and show only the header.  The rows last collected are kept
 * in the tree (one node's), so `timeline.svg` after `timeline` of the
 * same node sums nothing again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "view-internal.h"

#define MEMO_UNKNOWN 0u
#define MEMO_OUT     1u
#define MEMO_IN      2u
#define MEMO_PATH    3u /* + k: maps to path[k], an ancestor of the subtree's root */

int view_subtree_init(struct view_subtree *c, const struct view_tree *t, uint32_t node)
{
	*c = (struct view_subtree){.t = t, .node = node, .binary = VIEW_NONE, .all = true};
	if (node >= t->nnodes)
		return -EINVAL;
	if (node == VIEW_ROOT || !t->src.store)
		return 0;
	/* The view nodes from the binary's down to node. */
	uint32_t depth = 0;
	for (uint32_t n = node; n != VIEW_ROOT; n = t->nodes[n].parent)
		depth++;
	c->path = malloc(depth * sizeof(*c->path));
	if (!c->path)
		return -ENOMEM;
	uint32_t k = depth;
	for (uint32_t n = node; n != VIEW_ROOT; n = t->nodes[n].parent)
		c->path[--k] = n;
	c->binary = c->path[0];
	c->depth = depth;
	if (depth > 1) {
		/* calloc: only the pages of nodes the series reach are touched. */
		c->all = false;
		c->memo = calloc(t->src.store_nodes ? t->src.store_nodes : 1, sizeof(*c->memo));
		c->walk = malloc((t->src.store_nodes ? t->src.store_nodes : 1) * sizeof(*c->walk));
		if (!c->memo || !c->walk)
			return -ENOMEM;
		if (t->src.store_nodes > STORE_ROOT_NODE)
			c->memo[STORE_ROOT_NODE] = MEMO_PATH;
	}
	return 0;
}

void view_subtree_fini(struct view_subtree *c)
{
	free(c->path);
	free(c->memo);
	free(c->walk);
	c->path = c->memo = c->walk = NULL;
}

int view_subtree_has(struct view_subtree *c, uint32_t sn)
{
	const struct view_tree *t = c->t;
	struct store *s = t->src.store;
	size_t depth = 0;
	uint32_t state, parent, frame;
	int r;

	if (sn >= t->src.store_nodes)
		return 0; /* a stack the tree has not seen */
	if (c->all)
		return 1;
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
	return state == MEMO_IN; /* on the path above: out */
}

/* ---- the tree's rows, read once ------------------------------------------ */

struct view_time_index view_time_none;
size_t view_time_rows_max = (size_t)1 << 21;

/* The span a timeline of t shows before its rows widen it: [*S, *E)
 * microseconds; false when there is nothing to read. */
static bool tree_span(const struct view_tree *t, int64_t *S, int64_t *E)
{
	const struct view_window *w = t->src.window;

	*S = t->src.first_us;
	*E = t->src.last_us == INT64_MIN ? INT64_MIN : t->src.last_us + 1;
	if (w) {
		if (w->from_us > *S)
			*S = w->from_us;
		if (w->to_us < *E)
			*E = w->to_us;
	}
	return t->src.store && *E > *S;
}

static int64_t tree_bucket_us(const struct view_tree *t)
{
	return (int64_t)(t->src.bucket_seconds ? t->src.bucket_seconds : 60) * 1000000;
}

void view_time_index_free(struct view_time_index *x)
{
	if (!x || x == VIEW_TIME_NONE)
		return;
	free(x->pre);
	free(x->size);
	free(x->counts);
	free(x->samples);
	free(x);
}

size_t view_time_index_memory(const struct view_tree *t)
{
	const struct view_time_index *x = __atomic_load_n(&t->time_index, __ATOMIC_ACQUIRE);

	if (!x || x == VIEW_TIME_NONE)
		return 0;
	return sizeof(*x) + (size_t)t->nnodes * (sizeof(*x->pre) + sizeof(*x->size)) +
	       x->ncounts * sizeof(*x->counts) + x->nsamples * sizeof(*x->samples);
}

/* What is being read into an index. */
struct xbuild {
	const struct view_tree *t;
	struct view_time_index *x;
	uint32_t *map;  /* store node -> view node + 1 | XMAP_EXACT, 0: not yet */
	uint32_t *walk; /* scratch: store nodes not yet mapped */
	uint32_t binary;
	int64_t bsu;
	size_t ccap, scap;
	bool full; /* past view_time_rows_max */
};
#define XMAP_EXACT 0x80000000u

/* The view node store node sn maps to (its deepest visible node of the
 * same names below the series' binary), or VIEW_NONE for a node the tree
 * has not seen; memoized in b->map.  -errno as a negative int64. */
static int64_t xmap(struct xbuild *b, uint32_t sn)
{
	const struct view_tree *t = b->t;
	struct store *s = t->src.store;
	uint32_t parent, frame, m;
	size_t depth = 0;
	int r;

	if (sn >= t->src.store_nodes)
		return VIEW_NONE;
	while ((m = b->map[sn]) == 0) {
		if (depth == t->src.store_nodes)
			return -EIO; /* a cycle: the store is corrupt */
		b->walk[depth++] = sn;
		if ((r = store_node_get(s, sn, &parent, &frame)) < 0)
			return r;
		if (parent >= t->src.store_nodes)
			return -EIO;
		sn = parent;
	}
	while (depth > 0) {
		sn = b->walk[--depth];
		if (m & XMAP_EXACT) {
			struct store_frame f;
			if ((r = store_node_get(s, sn, &parent, &frame)) < 0 ||
			    (r = store_frame_get(s, frame, &f)) < 0)
				return r;
			uint32_t v = (m & ~XMAP_EXACT) - 1;
			uint32_t c = view_node_find_child(t, v, f.name, f.name_len);
			if (c != VIEW_NONE && view_node_visible(t, c))
				m = (c + 1) | XMAP_EXACT;
			else
				m = v + 1; /* below v, beside every node of the tree */
		}
		b->map[sn] = m;
	}
	return (m & ~XMAP_EXACT) - 1;
}

/* Room for one more row in an array of the index, `rows` (n rows of
 * `size` bytes in use, room for *cap): returns the array, grown if it was
 * full, with *r 0; or *r 1 (and b->full) when the index holds
 * view_time_rows_max rows of both kinds, or -ENOMEM. */
static void *xroom(struct xbuild *b, void *rows, size_t n, size_t *cap, size_t size, int *r)
{
	*r = 0;
	if (b->x->ncounts + b->x->nsamples >= view_time_rows_max) {
		b->full = true;
		*r = 1;
		return rows;
	}
	if (n == *cap) {
		size_t c = *cap ? 2 * *cap : 1024;
		void *p = realloc(rows, c * size);
		if (!p) {
			*r = -ENOMEM;
			return rows;
		}
		rows = p;
		*cap = c;
	}
	return rows;
}

static int xcount(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct xbuild *b = ctx;
	struct view_time_index *x = b->x;
	int64_t v = xmap(b, node);
	int r;

	if (v < 0)
		return (int)v;
	int64_t k = view_floor_div(bucket_start * 1000000, b->bsu) - x->b0;
	if (v == VIEW_NONE || k < 0 || (size_t)k >= x->nbk)
		return 0;
	x->counts = xroom(b, x->counts, x->ncounts, &b->ccap, sizeof(*x->counts), &r);
	if (r != 0)
		return r;
	x->counts[x->ncounts++] = (struct view_time_count){
	        .pre = (uint32_t)v, .bucket = (uint32_t)k, .samples = samples, .weight = weight};
	return 0;
}

static int xsample(void *ctx, const struct store_sample *smp)
{
	struct xbuild *b = ctx;
	struct view_time_index *x = b->x;
	int64_t v = xmap(b, smp->node);
	int r;

	if (v < 0)
		return (int)v;
	if (v == VIEW_NONE)
		return 0;
	x->samples = xroom(b, x->samples, x->nsamples, &b->scap, sizeof(*x->samples), &r);
	if (r != 0)
		return r;
	x->samples[x->nsamples++] = (struct view_time_sample){
	        .time_us = smp->time_us, .weight = smp->weight, .pre = (uint32_t)v};
	return 0;
}

/* Depth-first numbers from the parent links (a parent's id is smaller
 * than its children's): pre[n] and size[n], nodes n's subtree holds. */
static int number_nodes(const struct view_tree *t, struct view_time_index *x)
{
	uint32_t n = t->nnodes;
	uint32_t *next = malloc((n ? n : 1) * sizeof(*next));

	x->pre = malloc((n ? n : 1) * sizeof(*x->pre));
	x->size = malloc((n ? n : 1) * sizeof(*x->size));
	if (!next || !x->pre || !x->size) {
		free(next);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		x->size[i] = 1;
	for (uint32_t i = n; i-- > 1;)
		x->size[t->nodes[i].parent] += x->size[i];
	if (n) {
		x->pre[VIEW_ROOT] = 0;
		next[VIEW_ROOT] = 1;
	}
	for (uint32_t i = 1; i < n; i++) {
		uint32_t p = t->nodes[i].parent;
		x->pre[i] = next[p];
		next[p] += x->size[i];
		next[i] = x->pre[i] + 1;
	}
	free(next);
	return 0;
}

/* Reads the tree's counts and samples into b->x (rows hold view nodes
 * until sort_rows() numbers them). */
static int read_rows(struct xbuild *b)
{
	const struct view_tree *t = b->t;
	struct view_time_index *x = b->x;
	int64_t bs = b->bsu / 1000000;
	int64_t bfrom = x->b0 * bs, bto = (x->b0 + (int64_t)x->nbk - 1) * bs;
	int64_t sfrom = x->b0 * b->bsu, sto = (x->b0 + (int64_t)x->nbk) * b->bsu;
	uint32_t *ids = malloc((t->src.nseries ? t->src.nseries : 1) * sizeof(*ids));
	size_t nids = 0, nrecent = 0;
	int r = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->src.nseries; i++)
		ids[nids++] = t->src.series[i];
	if (nids > 1)
		r = store_series_prefetch(t->src.store, ids, nids, bfrom, bto);
	nids = 0;
	for (size_t i = 0; i < t->src.nseries; i++)
		if (t->src.recent[i])
			ids[nrecent++] = t->src.series[i];
	if (r == 0 && nrecent > 1)
		r = store_samples_prefetch(t->src.store, ids, nrecent, sfrom, sto);
	free(ids);
	/* Series by binary: each binary's store nodes map below its node. */
	for (size_t i = 0; i < t->src.nseries && r == 0; i++) {
		uint32_t bin = t->src.binary[i];
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = t->src.binary[j] == bin;
		if (seen)
			continue;
		memset(b->map, 0, (size_t)t->src.store_nodes * sizeof(*b->map));
		/* The top root's rows of series without a binary node. */
		uint32_t top = bin < t->nnodes ? bin : VIEW_ROOT;
		if (t->src.store_nodes > STORE_ROOT_NODE)
			b->map[STORE_ROOT_NODE] = (top + 1) | (bin < t->nnodes ? XMAP_EXACT : 0);
		for (size_t j = i; j < t->src.nseries && r == 0; j++) {
			if (t->src.binary[j] != bin)
				continue;
			r = store_series_counts(t->src.store, t->src.series[j], bfrom, bto, xcount,
			                        b);
			if (r == 0 && t->src.recent[j]) {
				r = store_series_samples(t->src.store, t->src.series[j], sfrom, sto,
				                         xsample, b);
				if (r == -EOPNOTSUPP || r == -ENOSYS)
					r = 0; /* no recent tier */
			}
		}
	}
	if (r > 0 && !b->full)
		r = -EIO;
	return r;
}

/* Numbers the rows' view nodes depth-first and sorts each kind by that
 * number (a counting sort, stable: each node's rows keep their order). */
static int sort_rows(struct view_time_index *x, uint32_t nnodes)
{
	size_t *at = calloc((size_t)nnodes + 1, sizeof(*at));
	struct view_time_count *c = malloc((x->ncounts ? x->ncounts : 1) * sizeof(*c));
	struct view_time_sample *s = malloc((x->nsamples ? x->nsamples : 1) * sizeof(*s));

	if (!at || !c || !s) {
		free(at);
		free(c);
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->ncounts; i++)
		at[(x->counts[i].pre = x->pre[x->counts[i].pre]) + 1]++;
	for (uint32_t i = 0; i < nnodes; i++)
		at[i + 1] += at[i];
	for (size_t i = 0; i < x->ncounts; i++)
		c[at[x->counts[i].pre]++] = x->counts[i];
	memset(at, 0, ((size_t)nnodes + 1) * sizeof(*at));
	for (size_t i = 0; i < x->nsamples; i++)
		at[(x->samples[i].pre = x->pre[x->samples[i].pre]) + 1]++;
	for (uint32_t i = 0; i < nnodes; i++)
		at[i + 1] += at[i];
	for (size_t i = 0; i < x->nsamples; i++)
		s[at[x->samples[i].pre]++] = x->samples[i];
	free(at);
	free(x->counts);
	free(x->samples);
	x->counts = c;
	x->samples = s;
	return 0;
}

static int build_index(const struct view_tree *t, struct view_time_index **out)
{
	int64_t S, E;
	int r;

	*out = VIEW_TIME_NONE;
	if (!tree_span(t, &S, &E) || view_time_rows_max == 0)
		return 0;
	struct view_time_index *x = calloc(1, sizeof(*x));
	size_t sn = t->src.store_nodes ? t->src.store_nodes : 1;
	struct xbuild b = {.t = t, .x = x, .bsu = tree_bucket_us(t)};
	if (!x || !(b.map = malloc(sn * sizeof(*b.map))) ||
	    !(b.walk = malloc(sn * sizeof(*b.walk)))) {
		r = -ENOMEM;
		goto out;
	}
	x->b0 = view_floor_div(S, b.bsu);
	x->nbk = (size_t)(view_floor_div(E - 1, b.bsu) - x->b0 + 1);
	if (x->nbk > UINT32_MAX) {
		r = 0;
		goto out;
	}
	view_tree_settle(t); /* xmap() looks children up */
	if ((r = read_rows(&b)) < 0 || b.full)
		goto out;
	if ((r = number_nodes(t, x)) < 0 || (r = sort_rows(x, t->nnodes)) < 0)
		goto out;
	*out = x;
	x = NULL;
out:
	view_time_index_free(x);
	free(b.map);
	free(b.walk);
	return r < 0 ? r : 0;
}

int view_time_index_get(const struct view_tree *t, const struct view_time_index **out)
{
	struct view_time_index **slot = &((struct view_tree *)t)->time_index;
	struct view_time_index *x = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;
	int r;

	if (!x) {
		if ((r = build_index(t, &x)) < 0)
			return *out = NULL, r;
		/* Two renderings may build it at once: the first kept wins. */
		if (!__atomic_compare_exchange_n(slot, &none, x, false, __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE)) {
			view_time_index_free(x);
			x = none;
		}
	}
	*out = x == VIEW_TIME_NONE ? NULL : x;
	return 0;
}

static size_t counts_from(const struct view_time_index *x, uint32_t p)
{
	size_t lo = 0, hi = x->ncounts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->counts[mid].pre < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t samples_from(const struct view_time_index *x, uint32_t p)
{
	size_t lo = 0, hi = x->nsamples;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->samples[mid].pre < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void view_time_counts_of(const struct view_time_index *x, uint32_t node, size_t *a, size_t *z)
{
	*a = counts_from(x, x->pre[node]);
	*z = counts_from(x, x->pre[node] + x->size[node]);
}

void view_time_samples_of(const struct view_time_index *x, uint32_t node, size_t *a, size_t *z)
{
	*a = samples_from(x, x->pre[node]);
	*z = samples_from(x, x->pre[node] + x->size[node]);
}

/* ---- reading the span ---------------------------------------------------- */

/* The interval lengths a timeline picks from, in seconds: the shortest
 * that gives at most MAX_INTERVALS over the span, and that divides the
 * bucket or is a multiple of it. */
static const int64_t steps[] = {1,   2,    5,    10,   15,    30,    60,    120,   300,    600,
                                900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
#define MAX_INTERVALS 240

/* One line of the timeline: [start, end) is the time it covers. */
struct trow {
	int64_t start, end; /* microseconds */
	uint64_t samples, weight;
	uint64_t untimed; /* samples among them without a moment (a bucket's) */
};

static int cmp_row(const void *a, const void *b)
{
	const struct trow *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->untimed > 0) - (y->untimed > 0);
}

/* Per bucket of the span: the subtree's counts, and the detail of its
 * samples read. */
struct tbk {
	uint64_t count_samples, count_weight;
	uint64_t detail_samples, detail_weight;
	bool detail; /* its detail is read */
};

struct tcollect {
	const struct view_tree *t;
	struct view_subtree st;
	int64_t S, E;   /* the span shown, microseconds, [S, E) */
	int64_t r, bsu; /* interval and bucket lengths, microseconds */
	int64_t k0;     /* the first interval's index (start / r) */
	size_t nint;
	struct trow *iv; /* per interval */
	int64_t b0;      /* the first bucket's index (start / bsu) */
	size_t nbk;
	struct tbk *bk;
	bool fine; /* intervals shorter than a bucket */
};

static int add_count(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	struct tcollect *c = ctx;
	int r = view_subtree_has(&c->st, node);

	if (r <= 0)
		return r;
	int64_t b = view_floor_div(bucket_start * 1000000, c->bsu) - c->b0;
	if (b < 0 || (size_t)b >= c->nbk)
		return 0;
	struct tbk *k = &c->bk[b];
	if (__builtin_add_overflow(k->count_samples, samples, &k->count_samples) ||
	    __builtin_add_overflow(k->count_weight, weight, &k->count_weight))
		return -EOVERFLOW;
	return 0;
}

/* A sample of the subtree at time_us: into its bucket's detail when that
 * is read, and its interval. */
static int add_moment(struct tcollect *c, int64_t time_us, uint64_t weight)
{
	int64_t b = view_floor_div(time_us, c->bsu) - c->b0;
	if (b < 0 || (size_t)b >= c->nbk || !c->bk[b].detail)
		return 0;
	c->bk[b].detail_samples++;
	c->bk[b].detail_weight += weight;
	if (time_us < c->S || time_us >= c->E)
		return 0;
	struct trow *iv = &c->iv[view_floor_div(time_us, c->r) - c->k0];
	iv->samples++;
	if (__builtin_add_overflow(iv->weight, weight, &iv->weight))
		return -EOVERFLOW;
	return 0;
}

static int add_sample(void *ctx, const struct store_sample *smp)
{
	struct tcollect *c = ctx;
	int r = view_subtree_has(&c->st, smp->node);

	if (r <= 0)
		return r;
	return add_moment(c, smp->time_us, smp->weight);
}

/* The resolution for a span of `span` microseconds and buckets of bs
 * seconds, in microseconds. */
static int64_t pick_resolution(int64_t span, int64_t bs)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int64_t r = steps[i];
		if ((r < bs && bs % r != 0) || (r >= bs && r % bs != 0))
			continue;
		if ((span + r * 1000000 - 1) / (r * 1000000) <= MAX_INTERVALS)
			return r * 1000000;
	}
	int64_t n = (span + (int64_t)MAX_INTERVALS * bs * 1000000 - 1) /
	            ((int64_t)MAX_INTERVALS * bs * 1000000);
	return (n ? n : 1) * bs * 1000000;
}

/* Reads the detail of the series' samples in [from, to) (microseconds):
 * of the series of the subtree's binary that have some, asked for in one
 * read. */
static int read_detail(struct tcollect *c, int64_t from, int64_t to)
{
	const struct view_tree *t = c->t;
	uint32_t *ids = malloc((t->src.nseries ? t->src.nseries : 1) * sizeof(*ids));
	size_t n = 0;
	int r = 0;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->src.nseries; i++)
		if (view_subtree_series(&c->st, i) && t->src.recent[i])
			ids[n++] = t->src.series[i];
	if (n > 1)
		r = store_samples_prefetch(t->src.store, ids, n, from, to);
	free(ids);
	for (size_t i = 0; i < t->src.nseries && r == 0; i++) {
		if (!view_subtree_series(&c->st, i) || !t->src.recent[i])
			continue;
		r = store_series_samples(t->src.store, t->src.series[i], from, to, add_sample, c);
		if (r == -EOPNOTSUPP || r == -ENOSYS)
			r = 0; /* no recent tier: what it holds has no moment */
		else if (r > 0)
			r = -EIO;
	}
	return r;
}

/* collect()'s counts and detail from the tree's index: its run of the
 * subtree's rows. */
static int collect_indexed(struct tcollect *c, const struct view_time_index *x, uint32_t node)
{
	const struct view_window *w = c->t->src.window;
	size_t a, z;
	int r = 0;

	view_time_counts_of(x, node, &a, &z);
	for (size_t i = a; i < z; i++) {
		struct tbk *k = &c->bk[x->counts[i].bucket];
		if (__builtin_add_overflow(k->count_samples, x->counts[i].samples,
		                           &k->count_samples) ||
		    __builtin_add_overflow(k->count_weight, x->counts[i].weight, &k->count_weight))
			return -EOVERFLOW;
	}
	/* The buckets whose samples go by their moment, as collect() reads
	 * them. */
	bool any = false;
	if (c->fine) {
		for (size_t b = 0; b < c->nbk; b++)
			any |= c->bk[b].detail = c->bk[b].count_samples > 0;
	} else if (w) {
		for (unsigned k = 0; k < w->ncut; k++) {
			int64_t b = view_floor_div(w->cut[k].bucket * 1000000, c->bsu) - c->b0;
			if (b >= 0 && (size_t)b < c->nbk)
				any = c->bk[b].detail = true;
		}
	}
	if (!any)
		return 0;
	view_time_samples_of(x, node, &a, &z);
	for (size_t i = a; i < z && r == 0; i++)
		r = add_moment(c, x->samples[i].time_us, x->samples[i].weight);
	return r;
}

/* collect()'s counts and detail read from the store (a tree without its
 * index). */
static int collect_read(struct tcollect *c, const struct view_tree *t, int64_t bs)
{
	const struct view_window *w = t->src.window;
	int r = 0;

	/* The counts of every bucket of the span: one set-based read. */
	uint32_t *ids = malloc((t->src.nseries ? t->src.nseries : 1) * sizeof(*ids));
	size_t nids = 0;
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->src.nseries; i++)
		if (view_subtree_series(&c->st, i))
			ids[nids++] = t->src.series[i];
	int64_t bfrom = c->b0 * bs, bto = (c->b0 + (int64_t)c->nbk - 1) * bs;
	if (nids > 1)
		r = store_series_prefetch(t->src.store, ids, nids, bfrom, bto);
	for (size_t i = 0; i < nids && r == 0; i++) {
		r = store_series_counts(t->src.store, ids[i], bfrom, bto, add_count, c);
		if (r > 0)
			r = -EIO;
	}
	free(ids);
	if (r < 0)
		return r;

	/* The detail of the buckets whose samples go by their moment: all
	 * of them for intervals shorter than a bucket, else those a window
	 * cuts. */
	if (c->fine) {
		bool any = false;
		for (size_t b = 0; b < c->nbk; b++)
			any |= c->bk[b].detail = c->bk[b].count_samples > 0;
		if (any)
			r = read_detail(c, c->b0 * c->bsu, (c->b0 + (int64_t)c->nbk) * c->bsu);
	} else if (w) {
		for (unsigned k = 0; k < w->ncut && r == 0; k++) {
			int64_t b = view_floor_div(w->cut[k].bucket * 1000000, c->bsu) - c->b0;
			if (b < 0 || (size_t)b >= c->nbk)
				continue;
			c->bk[b].detail = true;
			r = read_detail(c, (c->b0 + b) * c->bsu, (c->b0 + b + 1) * c->bsu);
		}
	}
	return r;
}

/* The rows of the subtree of `node` into *out (malloc'd; the caller
 * frees), by start, and the span and resolution into *c. */
static int collect(struct tcollect *c, const struct view_tree *t, uint32_t node, struct trow **out,
                   size_t *nout)
{
	const struct view_window *w = t->src.window;
	struct trow *rows = NULL;
	size_t nrows = 0;
	int r;

	*c = (struct tcollect){.t = t};
	*out = NULL;
	*nout = 0;
	if (node >= t->nnodes)
		return -EINVAL;
	int64_t bs = t->src.bucket_seconds ? t->src.bucket_seconds : 60;
	c->bsu = bs * 1000000;
	if (!tree_span(t, &c->S, &c->E)) {
		c->S = c->E = 0;
		c->r = c->bsu;
		return 0;
	}
	c->r = pick_resolution(c->E - c->S, bs);
	c->fine = c->r < c->bsu;
	c->k0 = view_floor_div(c->S, c->r);
	c->nint = (size_t)(view_floor_div(c->E - 1, c->r) - c->k0 + 1);
	c->b0 = view_floor_div(c->S, c->bsu);
	c->nbk = (size_t)(view_floor_div(c->E - 1, c->bsu) - c->b0 + 1);
	c->iv = calloc(c->nint, sizeof(*c->iv));
	c->bk = calloc(c->nbk, sizeof(*c->bk));
	if (!c->iv || !c->bk)
		return -ENOMEM;

	const struct view_time_index *x;
	if ((r = view_time_index_get(t, &x)) < 0)
		return r;
	if (x && (x->b0 != c->b0 || x->nbk != c->nbk))
		return -EIO; /* both come from tree_span() */
	if (x)
		r = collect_indexed(c, x, node);
	else if ((r = view_subtree_init(&c->st, t, node)) == 0)
		r = collect_read(c, t, bs);
	if (r < 0)
		return r;

	/* Rows: the intervals, and in fine mode each bucket's samples without
	 * a moment as a row of their own. */
	rows = calloc(c->nint + c->nbk, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t b = 0; b < c->nbk; b++) {
		const struct tbk *k = &c->bk[b];
		int64_t start = (c->b0 + (int64_t)b) * c->bsu;
		uint64_t us = k->count_samples, uw = k->count_weight;
		if (k->detail) {
			us = us > k->detail_samples ? us - k->detail_samples : 0;
			uw = uw > k->detail_weight ? uw - k->detail_weight : 0;
		}
		if (us == 0 && uw == 0)
			continue;
		if (c->fine) {
			/* No moment: the row covers its bucket in the window,
			 * from the series' first moment on (a recording's
			 * rolled-up first bucket begins at its first sample,
			 * not at the minute).  Its end stays the bucket's: a
			 * count added at a whole second (an import's time) may
			 * stand for samples after it. */
			int64_t a = start > c->S ? start : c->S;
			int64_t z = w && w->to_us < start + c->bsu ? w->to_us : start + c->bsu;
			rows[nrows++] = (struct trow){
			        .start = a, .end = z, .samples = us, .weight = uw, .untimed = us};
			continue;
		}
		struct trow *iv = &c->iv[view_floor_div(start > c->S ? start : c->S, c->r) - c->k0];
		iv->samples += us;
		if (__builtin_add_overflow(iv->weight, uw, &iv->weight))
			return free(rows), -EOVERFLOW;
		if (k->detail)
			iv->untimed += us; /* a cut bucket's samples without a moment */
	}
	for (size_t i = 0; i < c->nint; i++) {
		struct trow *iv = &c->iv[i];
		int64_t a = (c->k0 + (int64_t)i) * c->r, z = a + c->r;
		if (iv->samples == 0 && iv->weight == 0)
			continue;
		iv->start = a > c->S ? a : c->S;
		iv->end = z < c->E ? z : c->E;
		rows[nrows++] = *iv;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	/* The span shown reaches over every row. */
	for (size_t i = 0; i < nrows; i++) {
		c->S = rows[i].start < c->S ? rows[i].start : c->S;
		c->E = rows[i].end > c->E ? rows[i].end : c->E;
	}
	*out = rows;
	*nout = nrows;
	return 0;
}

/* The rows of one node's timeline, kept in its tree (tl_memo). */
struct tl_memo {
	uint32_t node;
	int64_t S, E, r;
	size_t n;
	struct trow rows[];
};

/* collect(), or a copy of the rows the tree's memo holds for `node`; the
 * rows collected are kept there in place of the memo's.  Of *c only S, E
 * and r are set on a copy (and collect_fini() frees nothing). */
static int collect_memo(struct tcollect *c, const struct view_tree *t, uint32_t node,
                        struct trow **out, size_t *nout)
{
	struct tl_memo **slot = &((struct view_tree *)t)->tl_memo;
	struct tl_memo *m = __atomic_exchange_n(slot, NULL, __ATOMIC_ACQ_REL), *none = NULL;

	if (m && m->node == node) {
		*c = (struct tcollect){.t = t, .S = m->S, .E = m->E, .r = m->r};
		*out = malloc((m->n ? m->n : 1) * sizeof(**out));
		*nout = m->n;
		if (*out)
			memcpy(*out, m->rows, m->n * sizeof(**out));
		if (!__atomic_compare_exchange_n(slot, &none, m, false, __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE))
			free(m);
		return *out ? 0 : -ENOMEM;
	}
	free(m);
	int r = collect(c, t, node, out, nout);
	if (r < 0)
		return r;
	m = malloc(sizeof(*m) + *nout * sizeof(**out));
	if (m) {
		*m = (struct tl_memo){.node = node, .S = c->S, .E = c->E, .r = c->r, .n = *nout};
		if (*nout)
			memcpy(m->rows, *out, *nout * sizeof(**out));
		free(__atomic_exchange_n(slot, m, __ATOMIC_ACQ_REL));
	}
	return 0;
}

static void collect_fini(struct tcollect *c)
{
	view_subtree_fini(&c->st);
	free(c->iv);
	free(c->bk);
}

static bool wall_clock_us(int64_t us)
{
	return us >= (int64_t)STORE_WALL_CLOCK_MIN * 1000000;
}

/* The weight per second of a row: for a clock unit in seconds per
 * second (cores busy). */
static double row_rate(const struct trow *row, uint64_t per_second)
{
	double secs = (double)(row->end - row->start) / 1e6;

	if (secs <= 0)
		return 0;
	return (double)row->weight / (double)(per_second ? per_second : 1) / secs;
}

/* The header lines both files share the words of: the span, and what
 * has no moment. */
static uint64_t untimed_sum(const struct trow *rows, size_t n, size_t *buckets)
{
	uint64_t sum = 0;

	*buckets = 0;
	for (size_t i = 0; i < n; i++)
		if (rows[i].untimed) {
			sum += rows[i].untimed;
			(*buckets)++;
		}
	return sum;
}

int view_render_timeline(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct tcollect c;
	struct trow *rows = NULL;
	size_t n = 0, nb;
	uint64_t per_second = 0;
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = collect_memo(&c, t, node, &rows, &n)) < 0)
		goto out;
	const char *event = t->event ? t->event : "", *unit = t->unit ? t->unit : "";
	bool clock = view_unit_is_clock(unit, &per_second);
	char a[40], z[40], span[40];
	if (wall_clock_us(c.S)) {
		view_format_iso_us(c.S, a);
		view_format_iso_us(c.E, z);
	} else {
		view_format_us(c.S, a);
		view_format_us(c.E, z);
	}
	view_format_us(c.E - c.S, span);
	r = view_buf_printf(
	        out, "# %zu intervals of %" PRId64 " s over [%s, %s) (%s s); clock %s; unit ", n,
	        c.r / 1000000, a, z, span,
	        wall_clock_us(c.S) ? "unix (seconds, UTC)"
	                           : "perf (seconds since boot unless perf recorded with -k)");
	if (r == 0 && (r = view_text_append(out, unit, strlen(unit), 0)) == 0 &&
	    (r = view_buf_append(out, " (", 2)) == 0 &&
	    (r = view_text_append(out, event, strlen(event), 0)) == 0)
		r = view_buf_printf(out, "); per_second: %s\n",
		                    clock ? "cores busy (seconds of the unit per second)"
		                          : "weight per second");
	const struct view_window *w = t->src.window;
	if (r == 0 && w) {
		char wa[40], wz[40];
		unsigned wb;
		uint64_t ws = view_window_whole_samples(w, &wb);
		view_format_us(w->from_us, wa);
		view_format_us(w->to_us, wz);
		if (view_window_exact(w))
			r = view_buf_printf(out, "# window [%s, %s): exact\n", wa, wz);
		else
			r = view_buf_printf(out,
			                    "# window [%s, %s): NOT exact: %" PRIu64
			                    " samples of %u "
			                    "bucket%s it cuts have no moment and are taken whole\n",
			                    wa, wz, ws, wb, wb == 1 ? "" : "s");
	}
	uint64_t untimed = untimed_sum(rows, n, &nb);
	if (r == 0 && untimed)
		r = view_buf_printf(
		        out,
		        "# %" PRIu64 " samples in %zu line%s have no moment (buckets of %" PRIu32
		        " s without detail): counted in the interval of their bucket, column "
		        "untimed\n",
		        untimed, nb, nb == 1 ? "" : "s", t->src.bucket_seconds);
	if (r == 0)
		r = view_buf_printf(
		        out, "# start seconds samples weight per_second untimed start_utc\n");
	for (size_t i = 0; i < n && r == 0; i++) {
		char st[40], secs[40], iso[40];
		view_format_us(rows[i].start, st);
		view_format_us(rows[i].end - rows[i].start, secs);
		view_format_iso_us(rows[i].start, iso);
		r = view_buf_printf(out, "%s %s %" PRIu64 " %" PRIu64 " %.3f %" PRIu64 " %s\n", st,
		                    secs, rows[i].samples, rows[i].weight,
		                    row_rate(&rows[i], clock ? per_second : 1), rows[i].untimed,
		                    iso);
	}
out:
	free(rows);
	collect_fini(&c);
	return r;
}

/* A name, unit or event in timeline.svg: at most this many characters. */
#define SVG_TEXT_CHARS 200

#define SVG_W  1200
#define SVG_H  380
#define PLOT_X 90
#define PLOT_Y 50
#define PLOT_W (SVG_W - PLOT_X - 30)
#define PLOT_H (SVG_H - PLOT_Y - 80)

int view_render_timeline_svg(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	struct tcollect c;
	struct trow *rows = NULL;
	size_t n = 0, len = 0, nb;
	uint64_t per_second = 0;
	int r;

	if (node >= t->nnodes)
		return -EINVAL;
	if ((r = collect_memo(&c, t, node, &rows, &n)) < 0)
		goto out;
	const char *unit = t->unit ? t->unit : "", *event = t->event ? t->event : "";
	bool clock = view_unit_is_clock(unit, &per_second);
	uint64_t ps = clock ? per_second : 1;
	double max = 0;
	for (size_t i = 0; i < n; i++)
		if (row_rate(&rows[i], ps) > max)
			max = row_rate(&rows[i], ps);
	double span = c.E > c.S ? (double)(c.E - c.S) : 1;
	const char *name = node == VIEW_ROOT ? "all" : view_node_name(t, node, &len);
	if (node == VIEW_ROOT)
		len = 3;

	r = view_buf_printf(
	        out,
	        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	        "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "xmlns=\"http://www.w3.org/2000/svg\">\n"
	        "<style type=\"text/css\">text { font-family: Verdana, sans-serif; font-size: "
	        "12px; fill: rgb(0,0,0); } .bar { fill: rgb(230,120,30); } .bar:hover { fill: "
	        "rgb(200,60,0); } .axis { stroke: "
	        "rgb(120,120,120); stroke-width: 1; }</style>\n"
	        "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n"
	        "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">Timeline "
	        "of ",
	        SVG_W, SVG_H, SVG_W, SVG_H, SVG_W, SVG_H, SVG_W / 2);
	if (r == 0)
		r = view_xml_append(out, name, len, SVG_TEXT_CHARS);
	if (r == 0 && (r = view_buf_append(out, " (", 2)) == 0 &&
	    (r = view_xml_append(out, event, strlen(event), SVG_TEXT_CHARS)) == 0 &&
	    (r = view_buf_append(out, ", ", 2)) == 0) {
		if (clock)
			r = view_buf_printf(out, "cores busy");
		else if ((r = view_xml_append(out, unit, strlen(unit), SVG_TEXT_CHARS)) == 0)
			r = view_buf_printf(out, " per second");
	}
	if (r == 0)
		r = view_buf_printf(out, ", %" PRId64 " s intervals)</text>\n", c.r / 1000000);
	if (r == 0) {
		char top[40];
		snprintf(top, sizeof(top), "%.3f", max);
		r = view_buf_printf(
		        out,
		        "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		        "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n",
		        PLOT_X, PLOT_Y + PLOT_H, PLOT_X + PLOT_W, PLOT_Y + PLOT_H, PLOT_X, PLOT_Y,
		        PLOT_X, PLOT_Y + PLOT_H, PLOT_X - 6, PLOT_Y + 10, top, PLOT_X - 6,
		        PLOT_Y + PLOT_H);
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct trow *row = &rows[i];
		double x = PLOT_X + (double)(row->start - c.S) / span * PLOT_W;
		double wdt = (double)(row->end - row->start) / span * PLOT_W;
		double rate = row_rate(row, ps);
		double h = max > 0 ? rate / max * PLOT_H : 0;
		char iso[40], secs[40];
		view_format_time_us(row->start, iso);
		view_format_us(row->end - row->start, secs);
		r = view_buf_printf(
		        out,
		        "<rect class=\"bar\"%s x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
		        "height=\"%.2f\"><title>%s +%s s: %" PRIu64 " samples, weight %" PRIu64
		        ", %.3f %s",
		        row->untimed ? " style=\"stroke: rgb(90,90,90); stroke-dasharray: 4,3\""
		                     : "",
		        x, PLOT_Y + PLOT_H - h, wdt > 1.5 ? wdt - 0.5 : wdt, h, iso, secs,
		        row->samples, row->weight, rate, clock ? "cores busy" : "per second");
		if (r == 0 && row->untimed)
			r = view_buf_printf(out,
			                    "; %" PRIu64
			                    " samples without a moment, shown over their bucket",
			                    row->untimed);
		if (r == 0)
			r = view_buf_printf(out, "</title></rect>\n");
	}
	uint64_t untimed = untimed_sum(rows, n, &nb);
	if (r == 0) {
		char a[40], z[40];
		view_format_time_us(c.S, a);
		view_format_time_us(c.E, z);
		r = view_buf_printf(
		        out,
		        "<text x=\"%d\" y=\"%d\">%s</text>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%zu intervals of %" PRId64
		        " s with samples; clock: %s</text>\n",
		        PLOT_X, PLOT_Y + PLOT_H + 18, a, PLOT_X + PLOT_W, PLOT_Y + PLOT_H + 18, z,
		        SVG_W / 2, PLOT_Y + PLOT_H + 40, n, c.r / 1000000,
		        wall_clock_us(c.S) ? "unix seconds, UTC" : "perf's (seconds since boot)");
	}
	if (r == 0 && untimed)
		r = view_buf_printf(
		        out,
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">dashed: %" PRIu64
		        " samples without a moment (buckets of %" PRIu32
		        " s without detail), each shown over its bucket</text>\n",
		        SVG_W / 2, PLOT_Y + PLOT_H + 60, untimed, t->src.bucket_seconds);
	const struct view_window *w = t->src.window;
	if (r == 0 && w && !view_window_exact(w)) {
		unsigned wb;
		uint64_t ws = view_window_whole_samples(w, &wb);
		r = view_buf_printf(
		        out,
		        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">window NOT exact: %" PRIu64
		        " samples of %u bucket%s it cuts taken whole</text>\n",
		        SVG_W / 2, 40, ws, wb, wb == 1 ? "" : "s");
	}
	if (r == 0)
		r = view_buf_printf(out, "</svg>\n");
out:
	free(rows);
	collect_fini(&c);
	return r;
}
