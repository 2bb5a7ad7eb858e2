/*
 * finish.c — makes a tree's built nodes the finished, read-only tree
 * (view_tree_finish(), for build.c's builds from the store and
 * derive.c's from trees): path lengths, recursive nodes, folded sizes, liveness, totals
 * and the child lists in bytewise name order, and whether the folded
 * order needs keys or a sort (view_sibling_order_breaks()).  The one
 * place that works on every node of a tree at once, so the one that
 * counts its passes over them and uses a second thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

int view_sibling_order_breaks(const struct view_tree *t, const uint32_t *kids, uint32_t i,
                              uint32_t nkids)
{
	const struct vstr *x = &t->strs[vnode_frame(t, kids[i])->name];
	int worst = 0;

	for (uint32_t j = i + 1; j < nkids; j++) {
		const struct vstr *y = &t->strs[vnode_frame(t, kids[j])->name];
		if (y->len <= x->len || memcmp(t->arena + x->off, t->arena + y->off, x->len) != 0)
			break;
		unsigned char c = (unsigned char)t->arena[y->off + x->len];
		if (c == ';')
			return 2;
		if (c < ';')
			worst = 1;
	}
	return worst;
}

/* A string being ranked: its bytes, length and id. */
struct skey {
	const unsigned char *p;
	uint32_t len, sid;
};

/* Byte d of k plus one, or 0 past its end (a prefix sorts first). */
static inline int skey_at(const struct skey *k, uint32_t d)
{
	return d < k->len ? k->p[d] + 1 : 0;
}

/* Bytewise order of two strings equal in their first d bytes. */
static int skey_cmp(const void *a, const void *b, void *ctx)
{
	const struct skey *x = a, *y = b;
	uint32_t d = *(const uint32_t *)ctx, n = x->len < y->len ? x->len : y->len;
	int c = n > d ? memcmp(x->p + d, y->p + d, n - d) : 0;

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void skey_swap(struct skey *a, size_t i, size_t j)
{
	struct skey k = a[i];

	a[i] = a[j];
	a[j] = k;
}

/* Sorts a[0..n), strings equal in their first d bytes, bytewise: a
 * multikey quicksort (Bentley and Sedgewick), which reads one byte of a
 * string per partition where a comparison sort read both strings' heads
 * again at every comparison (30,000 names sharing long prefixes: 5 ms
 * with qsort_r).  The equal part goes on at the next byte in the loop;
 * the two others recurse, `budget` levels deep at most (bad pivots),
 * past which a part is left to qsort_r. */
static void skey_sort(struct skey *a, size_t n, uint32_t d, unsigned budget)
{
	while (n > 16) {
		if (budget == 0) {
			qsort_r(a, n, sizeof(*a), skey_cmp, &d);
			return;
		}
		int x = skey_at(&a[0], d), y = skey_at(&a[n / 2], d), z = skey_at(&a[n - 1], d);
		int v = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		size_t lt = 0, i = 0, gt = n;
		while (i < gt) {
			int c = skey_at(&a[i], d);
			if (c < v)
				skey_swap(a, lt++, i++);
			else if (c > v)
				skey_swap(a, i, --gt);
			else
				i++;
		}
		skey_sort(a, lt, d, budget - 1);
		skey_sort(a + gt, n - gt, d, budget - 1);
		if (v == 0)
			return; /* the equal part ended here: equal strings */
		a += lt;
		n = gt - lt;
		d++;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && skey_cmp(&a[j - 1], &a[j], &d) > 0; j--)
			skey_swap(a, j - 1, j);
}

/* The tree's strings ranked in bytewise order (a prefix first): rank
 * per string id into *rank, and per rank into *ext whether some string
 * extends it by a byte <= ';' (the only extensions that break the
 * folded order, see view_sibling_order_breaks()); both malloc'd, the
 * caller frees. */
static int rank_strings(const struct view_tree *t, uint32_t **rank, uint8_t **ext)
{
	size_t nstrs = t->nstrs ? t->nstrs : 1;
	struct skey *keys = malloc(nstrs * sizeof(*keys));
	unsigned budget = 8;

	*rank = malloc(nstrs * sizeof(**rank));
	*ext = calloc(nstrs, 1);
	if (!keys || !*rank || !*ext) {
		free(keys);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nstrs; i++)
		keys[i] = (struct skey){(const unsigned char *)vstr_ptr(t, i), t->strs[i].len, i};
	for (size_t m = t->nstrs; m > 1; m /= 2)
		budget += 2;
	skey_sort(keys, t->nstrs, 0, budget);
	for (uint32_t i = 0; i < t->nstrs; i++) {
		(*rank)[keys[i].sid] = i;
		/* The strings that extend one follow it in this order, by the
		 * byte after it first: the next one tells. */
		if (i + 1 < t->nstrs) {
			const struct skey *x = &keys[i], *y = &keys[i + 1];
			(*ext)[i] = y->len > x->len && memcmp(x->p, y->p, x->len) == 0 &&
			            y->p[x->len] <= ';';
		}
	}
	free(keys);
	return 0;
}

/* The passes over every node read each node's parent, which is often far
 * from it in memory (a new branch of the tree hangs from an old node):
 * they ask for the parent (and frame) of the node this many steps on
 * before they need it, so the reads overlap instead of waiting in turn. */
#define PREFETCH_AHEAD 16

/* view_tree_finish()'s work on what a node's path decides: path lengths,
 * the nodes a frame above has the name of (VNODE_RECURSIVE) and folded
 * sizes.  It reads the nodes' parents, frames and self counts and writes
 * only path_len and folded_bytes, fields the rest of view_tree_finish()
 * neither reads nor writes, so the two run on two threads; the recursive
 * nodes are marked in rec, not flagged, for the same reason.  The caller
 * allocates mask and rec: the thread allocates nothing, so glibc gives it
 * no arena of its own to keep memory in. */
struct paths_job {
	struct view_tree *t;
	uint64_t *mask; /* per node: scratch */
	uint8_t *rec;   /* per node, zeroed: set when recursive */
	int r;
};

static int paths(struct paths_job *j)
{
	struct view_tree *t = j->t;
	uint64_t *mask = j->mask;
	uint32_t n;

	/* Top-down: a mask of the names on each node's path (one of 64 bits
	 * per name, the parent's mask and the node's bit) rules out most
	 * nodes at once, and only one whose bit its parent's mask has walks
	 * up to compare names. */
	mask[0] = 0;
	for (n = 1; n < t->nnodes; n++) {
		struct vnode *v = &t->nodes[n];
		if (n + PREFETCH_AHEAD < t->nnodes) {
			const struct vnode *w = &t->nodes[n + PREFETCH_AHEAD];
			__builtin_prefetch(&t->nodes[w->parent]);
			__builtin_prefetch(&mask[w->parent]);
			__builtin_prefetch(&t->frames[w->frame]);
		}
		uint32_t name = vnode_frame(t, n)->name;
		uint64_t len = t->strs[name].len;
		mask[n] = 0;
		if (v->parent != VIEW_ROOT) {
			len += t->nodes[v->parent].path_len + 1;
			uint64_t bit = 1ull << ((name * 0x9e3779b9u) >> 26);
			if (mask[v->parent] & bit)
				for (uint32_t a = v->parent; t->nodes[a].parent != VIEW_ROOT;
				     a = t->nodes[a].parent)
					if (vnode_frame(t, a)->name == name) {
						j->rec[n] = 1;
						break;
					}
			mask[n] = mask[v->parent] | bit;
		}
		if (len > UINT32_MAX)
			return -EOVERFLOW;
		v->path_len = (uint32_t)len;
	}
	/* Bottom-up (children have larger ids than their parent): folded
	 * sizes. */
	for (n = t->nnodes; n-- > 1;) {
		struct vnode *v = &t->nodes[n];
		if (n > PREFETCH_AHEAD)
			__builtin_prefetch(&t->nodes[t->nodes[n - PREFETCH_AHEAD].parent], 1);
		if (t->base && vnode_has_line(t, n))
			v->folded_bytes += v->path_len + 3 + view_digits(t->base[n].self_weight) +
			                   view_digits(v->self_weight);
		else if (v->self_weight > 0)
			v->folded_bytes += v->path_len + 2 + view_digits(v->self_weight);
		t->nodes[v->parent].folded_bytes += v->folded_bytes;
	}
	return 0;
}

static void *paths_thread(void *arg)
{
	struct paths_job *j = arg;

	j->r = paths(j);
	return NULL;
}

/* From this many nodes on, view_tree_finish() runs paths() on a second thread
 * (bench/glance.sh's bin1/1: 450,000 nodes, about 15 ms of it): below
 * it, making the thread would cost about what it saves. */
#define PATHS_THREAD_MIN 16384u

/* Path lengths, recursive nodes, folded sizes (paths(), on a second
 * thread for a large tree), liveness, hidden nodes, totals and the child
 * lists, each in bytewise name order.  Each pass over the nodes costs a
 * read of every node and of its parent, at random, so there are few:
 * top-down and bottom-up in paths(), one bottom-up here for the sums and
 * the counts of children.  The child lists need no sort per list and
 * read no node: the names are ranked once, the visible nodes bucketed by
 * the rank of their name with their parent beside them, and each
 * appended to its parent's list in that order (bin1/1 of
 * bench/glance.sh: 9.5 -> 2.5 ms, against a pass that read each node and
 * its parent).  Path lengths and recursion are not set as the nodes are
 * made: there the parent is often far in memory and the build waits on
 * each read, where a pass has several reads in flight at once (bin1/1:
 * about 27 ms of the build there, 11 in the pass). */
int view_tree_finish(struct view_tree *t, const struct view_scratch *spare)
{
	size_t nnodes = t->nnodes ? t->nnodes : 1, nstrs = t->nstrs ? t->nstrs : 1;
	struct view_scratch s = spare ? *spare : (struct view_scratch){0};
	uint32_t *rank = NULL, *start = NULL, *chk = NULL;
	/* Per node: its name's rank; per visible node in rank order: the node
	 * and its parent. */
	uint32_t *rk = s.list[0] ? s.list[0] : malloc(nnodes * sizeof(*rk));
	uint32_t *bynode = s.list[1] ? s.list[1] : malloc(nnodes * sizeof(*bynode));
	uint32_t *byparent = s.list[2] ? s.list[2] : malloc(nnodes * sizeof(*byparent));
	/* Per node: its parent, then where its next child goes in kids. */
	uint32_t *par = s.par ? s.par : malloc(nnodes * sizeof(*par));
	uint8_t *ext = NULL;
	uint32_t n, i, nvisible = 0, nchk = 0, pos = 0;
	struct paths_job job = {
	        .t = t,
	        .mask = s.mask ? s.mask : malloc(nnodes * sizeof(*job.mask)),
	        .rec = s.rec ? memset(s.rec, 0, nnodes) : calloc(nnodes, sizeof(*job.rec)),
	};
	pthread_t pather;
	bool threaded = job.mask && job.rec && t->nnodes >= PATHS_THREAD_MIN &&
	                pthread_create(&pather, NULL, paths_thread, &job) == 0;
	int r = -ENOMEM;

	t->kids = s.kids ? s.kids : malloc(nnodes * sizeof(*t->kids));
	if (!job.mask || !job.rec || (r = rank_strings(t, &rank, &ext)) < 0)
		goto out;
	r = -ENOMEM;
	start = calloc(nstrs + 1, sizeof(*start)); /* per rank, then running */
	chk = malloc(nnodes * sizeof(*chk));       /* places in kids to run the sibling check at */
	if (!start || !rk || !par || !bynode || !byparent || !chk || !t->kids)
		goto out;
	{
		uint32_t *big[] = {rk, bynode, byparent, par, chk, t->kids};
		for (size_t k = 0; k < sizeof(big) / sizeof(big[0]); k++)
			view_hugepages(big[k], nnodes * sizeof(*big[k]));
	}

	/* Bottom-up (a node's children are done when it is reached):
	 * liveness (a node no count reached, one kept from the seed only, is
	 * hidden), totals, the number of children, and the nodes per rank of
	 * their name. */
	r = -EOVERFLOW;
	for (n = t->nnodes; n-- > 0;) {
		struct vnode *v = &t->nodes[n];
		struct vnode *p = n > 0 ? &t->nodes[v->parent] : NULL;
		if (n >= PREFETCH_AHEAD) {
			const struct vnode *w = &t->nodes[n - PREFETCH_AHEAD];
			__builtin_prefetch(&t->nodes[w->parent], 1);
			__builtin_prefetch(&t->frames[w->frame]);
		}
		if (p && !(v->flags & VNODE_LIVE))
			v->flags |= VNODE_HIDDEN;
		if (p && (v->flags & VNODE_LIVE))
			p->flags |= VNODE_LIVE;
		v->flags &= ~(VNODE_LIVE | VNODE_INDEXED | VNODE_RECURSIVE);
		if (__builtin_add_overflow(v->total_weight, v->self_weight, &v->total_weight) ||
		    __builtin_add_overflow(v->total_samples, v->self_samples, &v->total_samples))
			goto out;
		if (!p)
			break;
		if (__builtin_add_overflow(p->total_weight, v->total_weight, &p->total_weight) ||
		    __builtin_add_overflow(p->total_samples, v->total_samples, &p->total_samples))
			goto out;
		rk[n] = UINT32_MAX;
		par[n] = v->parent;
		if (!(v->flags & VNODE_HIDDEN)) {
			p->nkids++;
			rk[n] = rank[vnode_frame(t, n)->name];
			start[rk[n] + 1]++;
			nvisible++;
		}
	}
	for (n = t->base ? t->nnodes : 0; n-- > 0;) {
		struct vbase *v = &t->base[n];
		v->total_weight += v->self_weight;
		v->total_samples += v->self_samples;
		if (n > 0) {
			t->base[t->nodes[n].parent].total_weight += v->total_weight;
			t->base[t->nodes[n].parent].total_samples += v->total_samples;
		}
	}

	/* The visible nodes bucketed by the rank of their name, each with its
	 * parent, so that placing them reads no node. */
	for (i = 0; i < t->nstrs; i++)
		start[i + 1] += start[i];
	for (n = 1; n < t->nnodes; n++)
		if (rk[n] != UINT32_MAX) {
			bynode[start[rk[n]]] = n;
			byparent[start[rk[n]]++] = par[n];
		}
	for (n = 0; n < t->nnodes; n++) {
		t->nodes[n].first_kid = pos;
		par[n] = pos;
		pos += t->nodes[n].nkids;
	}
	/* start[k] is now the end of rank k's bucket.  A child whose name
	 * some string extends by a byte <= ';' needs the sibling check: its
	 * place in kids goes to chk and its parent to rk (free by now), and
	 * once every list is placed, its parent's cursor is the list's end,
	 * so the check reads no node. */
	uint32_t k = 0;
	for (i = 0; i < nvisible; i++) {
		while (i >= start[k])
			k++;
		uint32_t pn = byparent[i];
		if (ext[k]) {
			chk[nchk] = par[pn];
			rk[nchk++] = pn;
		}
		t->kids[par[pn]++] = bynode[i];
	}
	/* Once a sibling extends a name by ';', the renderer sorts every
	 * line and the keys do not matter. */
	for (i = 0; i < nchk && !t->folded_needs_sort; i++) {
		int b = view_sibling_order_breaks(t, t->kids, chk[i], par[rk[i]]);
		if (b == 2)
			t->folded_needs_sort = true;
		else if (b == 1)
			t->folded_keyed = true;
	}
	r = 0;
out:
	if (threaded)
		pthread_join(pather, NULL);
	else if (r == 0)
		job.r = paths(&job);
	if (r == 0)
		r = job.r;
	for (n = 1; r == 0 && n < t->nnodes; n++)
		if (job.rec[n])
			t->nodes[n].flags |= VNODE_RECURSIVE;
	free(job.mask);
	free(job.rec);
	free(rank);
	free(ext);
	free(start);
	free(rk);
	free(par);
	free(bynode);
	free(byparent);
	free(chk);
	return r;
}
