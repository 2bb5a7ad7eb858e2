/*
 * finish.c — makes a tree's built nodes the finished, read-only tree
 * (view_tree_finish(), for build.c's builds from the store and
 * derive.c's from trees): path lengths, recursive nodes, liveness,
 * totals, then the child lists in bytewise name order, folded sizes and
 * whether the folded order needs keys or a sort
 * (view_sibling_order_breaks()).  The one place that works on every node
 * of a tree at once, so the one that counts its passes over them and
 * uses a second thread.  A large tree from the store is handed out once
 * its counts are final; its lists may still be in the making on that
 * thread, and their readers wait for them (view_tree_settle()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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
 * string per partition, where a comparison sort reads both strings'
 * common head again at every comparison, and a tree's names share long
 * prefixes (namespaces, classes).  The equal part goes on at the next
 * byte in the loop; the two others recurse, `budget` levels deep at most
 * (bad pivots), past which a part is left to qsort_r. */
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

/* view_tree_finish()'s state, shared with its second thread when it has
 * one.  Every array is allocated before the thread starts, so that the
 * work after the tree is handed out (the child lists) cannot fail. */
struct view_lists {
	struct view_tree *t;
	/* paths_down()'s: per node. */
	uint64_t *mask; /* the names on its path */
	uint8_t *rec;   /* zeroed, set when recursive */
	/* rank_strings()': per string. */
	struct skey *keys;
	uint32_t *rank;  /* string id -> rank */
	uint8_t *ext;    /* per rank: some string extends it by a byte <= ';' */
	uint32_t *start; /* nstrs + 1: per rank, then a running end */
	/* lists()': per node. */
	uint32_t *rk;       /* UINT32_MAX (hidden) or its name, then its name's rank */
	uint32_t *bynode;   /* the visible nodes by rank */
	uint32_t *byparent; /* their parents */
	uint32_t *par;      /* its parent, then its cursor into kids */
	uint32_t *chk;      /* places in kids to run the sibling check at */
	bool trim_kids;     /* kids has entries for far more nodes than made */
	/* The thread, and what the two threads tell each other. */
	pthread_t thread;
	pthread_mutex_t mu;      /* the two threads' */
	pthread_mutex_t join_mu; /* view_tree_settle()'s: the thread may still want mu */
	pthread_cond_t cv;
	bool lengths_done; /* path_lengths() ran before the lists */
	bool down_done;    /* guarded by mu: paths_down() ran */
	bool up_done;      /* guarded by mu: the totals pass ran, up_r says how */
	int up_r;
	bool joined;      /* guarded by join_mu */
	atomic_bool done; /* set once joined: the lists are there */
};

/* The tree's strings ranked in bytewise order (a prefix first): l->rank
 * per string id, and l->ext per rank whether some string extends it by
 * a byte <= ';' (the only extensions that break the folded order, see
 * view_sibling_order_breaks()). */
static void rank_strings(struct view_lists *l)
{
	const struct view_tree *t = l->t;
	struct skey *keys = l->keys;
	unsigned budget = 8;

	for (uint32_t i = 0; i < t->nstrs; i++)
		keys[i] = (struct skey){(const unsigned char *)vstr_ptr(t, i), t->strs[i].len, i};
	for (size_t m = t->nstrs; m > 1; m /= 2)
		budget += 2;
	skey_sort(keys, t->nstrs, 0, budget);
	for (uint32_t i = 0; i < t->nstrs; i++) {
		l->rank[keys[i].sid] = i;
		/* The strings that extend one follow it in this order, by the
		 * byte after it first: the next one tells. */
		l->ext[i] = 0;
		if (i + 1 < t->nstrs) {
			const struct skey *x = &keys[i], *y = &keys[i + 1];
			l->ext[i] = y->len > x->len && memcmp(x->p, y->p, x->len) == 0 &&
			            y->p[x->len] <= ';';
		}
	}
}

/* The passes over every node read each node's parent, which is often far
 * from it in memory (a new branch of the tree hangs from an old node):
 * they ask for the parent (and frame) of the node this many steps on
 * before they need it, so the reads overlap instead of waiting in turn. */
#define PREFETCH_AHEAD 16

/* Top-down: the nodes a frame above has the name of (marked in l->rec,
 * not flagged: the totals pass writes the flags meanwhile).  It reads the
 * nodes' parents and frames and writes nothing in the nodes, so it runs
 * beside the totals pass.  A mask of the names on each node's path (one
 * of 64 bits per name, the parent's mask and the node's bit) rules out
 * most nodes at once, and only one whose bit its parent's mask has walks
 * up to compare names.  Path lengths wait for the lists (path_lengths()):
 * here they would cost a read of each node's parent, which is often far
 * away, where the mask is not. */
static void paths_down(struct view_lists *l)
{
	struct view_tree *t = l->t;
	uint64_t *mask = l->mask;

	mask[0] = 0;
	for (uint32_t n = 1; n < t->nnodes; n++) {
		const struct vnode *v = &t->nodes[n];
		if (n + PREFETCH_AHEAD < t->nnodes) {
			const struct vnode *w = &t->nodes[n + PREFETCH_AHEAD];
			__builtin_prefetch(&mask[w->parent]);
			__builtin_prefetch(&t->frames[w->frame]);
		}
		uint32_t name = vnode_frame(t, n)->name;
		mask[n] = 0;
		if (v->parent != VIEW_ROOT) {
			uint64_t bit = 1ull << ((name * 0x9e3779b9u) >> 26);
			if (mask[v->parent] & bit)
				for (uint32_t a = v->parent; t->nodes[a].parent != VIEW_ROOT;
				     a = t->nodes[a].parent)
					if (vnode_frame(t, a)->name == name) {
						l->rec[n] = 1;
						break;
					}
			mask[n] = mask[v->parent] | bit;
		}
	}
}

/* Top-down: path lengths ("bin;a;b" of each node). */
static int path_lengths(struct view_tree *t)
{
	for (uint32_t n = 1; n < t->nnodes; n++) {
		struct vnode *v = &t->nodes[n];
		if (n + PREFETCH_AHEAD < t->nnodes)
			__builtin_prefetch(&t->nodes[t->nodes[n + PREFETCH_AHEAD].parent]);
		uint64_t len = vstr_folded_len(t, vnode_frame(t, n)->name);
		if (v->parent != VIEW_ROOT)
			len += t->nodes[v->parent].path_len + 1;
		if (len > UINT32_MAX)
			return -EOVERFLOW;
		v->path_len = (uint32_t)len;
	}
	return 0;
}

/* The child lists, each in bytewise name order, and the folded sizes,
 * once the totals pass has counted every node's children, marked the
 * visible ones in l->rk with their name and their parents in l->par.
 * The lists need no sort per list and read no node, whose parent is
 * often far away in memory: the visible nodes are bucketed by the rank
 * of their name with their parent beside them, and each appended to its
 * parent's list in that order, so the arrays are read in sequence.
 * Cannot fail; frees the scratch. */
static void lists(struct view_lists *l)
{
	struct view_tree *t = l->t;
	uint32_t *rk = l->rk, *par = l->par, *start = l->start;
	uint32_t n, i, nvisible = 0, nchk = 0, pos = 0;

	if (!l->lengths_done)
		(void)path_lengths(t); /* cannot pass 32 bits: path_lengths_early() */
	for (n = 1; n < t->nnodes; n++)
		if (rk[n] != UINT32_MAX) {
			rk[n] = l->rank[rk[n]];
			start[rk[n] + 1]++;
			nvisible++;
		}
	for (i = 0; i < t->nstrs; i++)
		start[i + 1] += start[i];
	for (n = 1; n < t->nnodes; n++)
		if (rk[n] != UINT32_MAX) {
			l->bynode[start[rk[n]]] = n;
			l->byparent[start[rk[n]]++] = par[n];
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
		uint32_t pn = l->byparent[i];
		if (l->ext[k]) {
			l->chk[nchk] = par[pn];
			rk[nchk++] = pn;
		}
		t->kids[par[pn]++] = l->bynode[i];
	}
	/* Once a sibling extends a name by ';', the renderer sorts every
	 * line and the keys do not matter. */
	for (i = 0; i < nchk && !t->folded_needs_sort; i++) {
		int b = view_sibling_order_breaks(t, t->kids, l->chk[i], par[rk[i]]);
		if (b == 2)
			t->folded_needs_sort = true;
		else if (b == 1)
			t->folded_keyed = true;
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
	/* Made for every node the build could have made: trimmed to the
	 * nodes (their pages past it were never used). */
	if (l->trim_kids) {
		uint32_t *kids =
		        realloc(t->kids, (size_t)(t->nnodes ? t->nnodes : 1) * sizeof(*kids));
		if (kids)
			t->kids = kids;
	}
}

/* Frees what the lists were made with (not the tree's own arrays, nor
 * paths_down()'s, which the first thread frees). */
static void lists_scratch_free(struct view_lists *l)
{
	free(l->keys);
	free(l->rank);
	free(l->ext);
	free(l->start);
	free(l->rk);
	free(l->bynode);
	free(l->byparent);
	free(l->par);
	free(l->chk);
	l->keys = NULL;
	l->rank = l->start = l->rk = l->bynode = l->byparent = l->par = l->chk = NULL;
	l->ext = NULL;
}

/* The second thread: paths_down(), then (while the first thread finishes
 * the totals) the names' ranks, then, once the totals pass has run, the
 * child lists and folded sizes. */
static void *lists_thread(void *arg)
{
	struct view_lists *l = arg;
	int up;

	paths_down(l);
	pthread_mutex_lock(&l->mu);
	l->down_done = true;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	rank_strings(l);
	pthread_mutex_lock(&l->mu);
	while (!l->up_done)
		pthread_cond_wait(&l->cv, &l->mu);
	up = l->up_r;
	pthread_mutex_unlock(&l->mu);
	if (up == 0)
		lists(l);
	lists_scratch_free(l);
	return NULL;
}

void view_tree_settle(const struct view_tree *t)
{
	struct view_lists *l = t->lists;

	if (!l || atomic_load_explicit(&l->done, memory_order_acquire))
		return;
	pthread_mutex_lock(&l->join_mu);
	if (!l->joined) {
		pthread_join(l->thread, NULL);
		l->joined = true;
		atomic_store_explicit(&l->done, true, memory_order_release);
	}
	pthread_mutex_unlock(&l->join_mu);
}

/* Frees l and every array it holds, its mutex and condition not made or
 * destroyed. */
static void lists_discard(struct view_lists *l)
{
	free(l->mask);
	free(l->rec);
	lists_scratch_free(l);
	free(l);
}

void view_lists_free(struct view_lists *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->join_mu);
	pthread_cond_destroy(&l->cv);
	lists_discard(l);
}

/* From this many nodes on, view_tree_finish() runs paths_down() and the
 * lists on a second thread: below it, making the thread would cost about
 * what it saves. */
#define LISTS_THREAD_MIN 16384u

/* view_tree_finish()'s state for t, holding the arrays `s` hands over,
 * with its mutexes and condition made.  NULL when out of memory, the
 * arrays then freed (but s->kids, which is t->kids already). */
static struct view_lists *lists_new(struct view_tree *t, const struct view_scratch *s)
{
	struct view_lists *l = calloc(1, sizeof(*l));

	if (!l) {
		free(s->list[0]);
		free(s->list[1]);
		free(s->list[2]);
		free(s->par);
		free(s->mask);
		free(s->rec);
		return NULL;
	}
	l->t = t;
	l->rk = s->list[0];
	l->bynode = s->list[1];
	l->byparent = s->list[2];
	l->par = s->par;
	l->mask = s->mask;
	l->rec = s->rec;
	if (pthread_mutex_init(&l->mu, NULL) != 0) {
		lists_discard(l);
		return NULL;
	}
	if (pthread_mutex_init(&l->join_mu, NULL) != 0) {
		pthread_mutex_destroy(&l->mu);
		lists_discard(l);
		return NULL;
	}
	if (pthread_cond_init(&l->cv, NULL) != 0) {
		pthread_mutex_destroy(&l->mu);
		pthread_mutex_destroy(&l->join_mu);
		lists_discard(l);
		return NULL;
	}
	return l;
}

/* Every array the passes and the lists work in that the build did not
 * hand over (`spare`), and the tree's kids and name sums: all made before
 * the second thread starts, so that nothing after the hand-out can fail.
 * The per-node ones ask for huge pages.  0 or -ENOMEM. */
static int lists_alloc(struct view_lists *l, const struct view_scratch *spare)
{
	struct view_tree *t = l->t;
	size_t nnodes = t->nnodes ? t->nnodes : 1, nstrs = t->nstrs ? t->nstrs : 1;

	if (!l->rk)
		l->rk = malloc(nnodes * sizeof(*l->rk));
	if (!l->bynode)
		l->bynode = malloc(nnodes * sizeof(*l->bynode));
	if (!l->byparent)
		l->byparent = malloc(nnodes * sizeof(*l->byparent));
	if (!l->par)
		l->par = malloc(nnodes * sizeof(*l->par));
	if (!l->mask)
		l->mask = malloc(nnodes * sizeof(*l->mask));
	l->rec = l->rec ? memset(l->rec, 0, nnodes) : calloc(nnodes, sizeof(*l->rec));
	l->chk = malloc(nnodes * sizeof(*l->chk));
	l->keys = malloc(nstrs * sizeof(*l->keys));
	l->rank = malloc(nstrs * sizeof(*l->rank));
	l->ext = malloc(nstrs);
	l->start = calloc(nstrs + 1, sizeof(*l->start));
	t->name_sums = calloc(nstrs, sizeof(*t->name_sums));
	l->trim_kids = spare && spare->kids_cap > t->nnodes + t->nnodes / 8;
	if (!t->kids)
		t->kids = malloc(nnodes * sizeof(*t->kids));
	if (!l->rk || !l->bynode || !l->byparent || !l->par || !l->mask || !l->rec || !l->chk ||
	    !l->keys || !l->rank || !l->ext || !l->start || !t->kids || !t->name_sums)
		return -ENOMEM;
	uint32_t *big[] = {l->rk, l->bynode, l->byparent, l->par, l->chk, t->kids};
	for (size_t k = 0; k < sizeof(big) / sizeof(big[0]); k++)
		view_hugepages(big[k], nnodes * sizeof(*big[k]));
	return 0;
}

/* When some name needs escaping in a folded path: each string's escaped
 * length (t->esc_len), which the path lengths and folded sizes count.
 * 0, -ENOMEM or -EOVERFLOW. */
static int escaped_lengths(struct view_tree *t)
{
	if (!t->names_escape || t->esc_len)
		return 0;
	t->esc_len = malloc((t->nstrs ? t->nstrs : 1) * sizeof(*t->esc_len));
	if (!t->esc_len)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nstrs; i++) {
		size_t e = view_text_len(vstr_ptr(t, i), t->strs[i].len, VIEW_TEXT_FOLDED);
		if (e > UINT32_MAX)
			return -EOVERFLOW;
		t->esc_len[i] = (uint32_t)e;
	}
	return 0;
}

/* Path lengths are made with the lists, which cannot fail, unless one
 * could pass 32 bits (nnodes names of the longest length, at most): then
 * here, before the tree can be handed out.  0 or -EOVERFLOW. */
static int path_lengths_early(struct view_lists *l)
{
	struct view_tree *t = l->t;
	uint32_t longest = 0;
	int r;

	for (uint32_t i = 0; i < t->nstrs; i++)
		if (vstr_folded_len(t, i) > longest)
			longest = vstr_folded_len(t, i);
	if ((uint64_t)t->nnodes * ((uint64_t)longest + 1) <= UINT32_MAX)
		return 0;
	if ((r = path_lengths(t)) < 0)
		return r;
	l->lengths_done = true;
	return 0;
}

/* Bottom-up (a node's children are done when it is reached): liveness (a
 * node no count reached, one kept from the seed only, is hidden), totals,
 * the number of children, the name sums, and for the lists each node's
 * parent and, when visible, its name; then a diff's base totals.  Writes
 * only the fields paths_down() does not read.  0 or -EOVERFLOW (a sum
 * past 64 bits; the base totals are then not made). */
static int totals_up(struct view_lists *l)
{
	struct view_tree *t = l->t;

	for (uint32_t n = t->nnodes; n-- > 0;) {
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
			return -EOVERFLOW;
		if (!p)
			break;
		if (__builtin_add_overflow(p->total_weight, v->total_weight, &p->total_weight) ||
		    __builtin_add_overflow(p->total_samples, v->total_samples, &p->total_samples))
			return -EOVERFLOW;
		l->rk[n] = UINT32_MAX;
		l->par[n] = v->parent;
		if (!(v->flags & VNODE_HIDDEN)) {
			const struct vframe *f = vnode_frame(t, n);
			p->nkids++;
			l->rk[n] = f->name;
			/* Every node's total, the recursive ones' taken off
			 * once they are known (modulo 2^64, so exact). */
			if (v->parent != VIEW_ROOT) {
				struct vname_sum *ns = &t->name_sums[f->name];
				ns->self += v->self_weight;
				ns->total += v->total_weight;
				ns->kind = f->kind;
				ns->used = true;
			}
		}
	}
	for (uint32_t n = t->base ? t->nnodes : 0; n-- > 0;) {
		struct vbase *v = &t->base[n];
		v->total_weight += v->self_weight;
		v->total_samples += v->self_samples;
		if (n > 0) {
			t->base[t->nodes[n].parent].total_weight += v->total_weight;
			t->base[t->nodes[n].parent].total_samples += v->total_samples;
		}
	}
	return 0;
}

/* After the totals pass (r: how it went): with the second thread, tells
 * it r (it makes the lists only after a pass that succeeded) and waits
 * for its paths_down(); without, runs paths_down() here when r is 0. */
static void paths_down_meet(struct view_lists *l, bool threaded, int r)
{
	if (threaded) {
		pthread_mutex_lock(&l->mu);
		l->up_r = r;
		l->up_done = true;
		pthread_cond_broadcast(&l->cv);
		while (!l->down_done)
			pthread_cond_wait(&l->cv, &l->mu);
		pthread_mutex_unlock(&l->mu);
	} else if (r == 0) {
		paths_down(l);
	}
}

/* Flags the nodes paths_down() marked recursive, and takes their totals
 * off their names' sums (a function's total counts its outermost
 * occurrences only).  Needs both passes done. */
static void flag_recursive(struct view_lists *l)
{
	struct view_tree *t = l->t;

	for (uint32_t n = 1; n < t->nnodes; n++)
		if (l->rec[n]) {
			struct vnode *v = &t->nodes[n];
			v->flags |= VNODE_RECURSIVE;
			if (!(v->flags & VNODE_HIDDEN))
				t->name_sums[vnode_frame(t, n)->name].total -= v->total_weight;
		}
}

/* Frees paths_down()'s arrays, which nothing needs once the recursive
 * nodes are flagged. */
static void paths_down_free(struct view_lists *l)
{
	free(l->mask);
	free(l->rec);
	l->mask = NULL;
	l->rec = NULL;
}

/* Ends view_tree_finish() without a hand-out: joins the second thread
 * (which made the lists, or made none after a failed pass), or makes the
 * lists here when r is 0, then frees l.  Returns r. */
static int lists_now(struct view_lists *l, bool threaded, int r)
{
	if (threaded)
		pthread_join(l->thread, NULL);
	else if (r == 0) {
		rank_strings(l);
		lists(l);
	}
	view_lists_free(l);
	return r;
}

/* The passes, in order: the arrays (lists_alloc(); all of them, since
 * what runs after the hand-out cannot fail), escaped name lengths, path
 * lengths when they could pass 32 bits; then, side by side on two threads
 * for a large tree, paths_down() (recursive nodes; the second thread) and
 * totals_up() (liveness, totals, child counts, name sums; the calling
 * thread), which write disjoint fields; the recursive nodes flagged once
 * both are done; then the child lists in bytewise name order, path
 * lengths and folded sizes (lists(), after rank_strings()).  Each pass
 * reads every node and its parent, often far away in memory, so there
 * are few, and path lengths and recursion are made in passes rather than
 * as the nodes are made, where the build would wait on each parent's
 * read.  With `defer`, a tree that has the second thread is handed out
 * before its lists are made (t->lists, view_tree_settle()). */
int view_tree_finish(struct view_tree *t, const struct view_scratch *spare, bool defer)
{
	struct view_scratch s = spare ? *spare : (struct view_scratch){0};
	struct view_lists *l;
	bool threaded;
	int r;

	t->kids = s.kids; /* the tree's from here on, also on failure */
	if (!(l = lists_new(t, &s)))
		return -ENOMEM;
	if ((r = lists_alloc(l, spare)) < 0 || (r = escaped_lengths(t)) < 0 ||
	    (r = path_lengths_early(l)) < 0) {
		view_lists_free(l);
		return r;
	}
	threaded = t->nnodes >= LISTS_THREAD_MIN &&
	           pthread_create(&l->thread, NULL, lists_thread, l) == 0;
	r = totals_up(l);
	paths_down_meet(l, threaded, r);
	if (r == 0)
		flag_recursive(l);
	paths_down_free(l);
	if (r < 0 || !threaded || !defer)
		return lists_now(l, threaded, r);
	t->lists = l;
	return 0;
}
