/*
 * samples-block.c — encoding and decoding the samples block
 * (samples-block-internal.h), the recent tier's form of one (series,
 * bucket)'s detail: a node table, a thread table and columns of time
 * deltas, indexes and weight differences, all varints.
 */
#include "samples-block-internal.h"
#include "counts-blob-internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int samples_block_cmp(const struct store_sample *a, const struct store_sample *b)
{
	if (a->time_us != b->time_us)
		return a->time_us < b->time_us ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	if (a->weight != b->weight)
		return a->weight < b->weight ? -1 : 1;
	if (a->span != b->span)
		return a->span < b->span ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

static int sample_qcmp(const void *a, const void *b)
{
	return samples_block_cmp(a, b);
}

void samples_block_sort(struct store_sample *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), sample_qcmp);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts and dedups keys in place: the count left.  A block's samples
 * repeat a few nodes and threads, so the keys are made unique first
 * through a set (open addressing; 0 kept apart, as it marks a free slot)
 * and only those are sorted.  Without memory for the set, all are. */
static size_t sort_unique(uint64_t *k, size_t n)
{
	size_t o = 0;
	unsigned log2 = 4;

	while (((size_t)1 << log2) < n * 2)
		log2++;
	uint64_t *set = n > 1 ? calloc((size_t)1 << log2, sizeof(*set)) : NULL;
	if (set) {
		size_t mask = ((size_t)1 << log2) - 1;
		bool zero = false;
		for (size_t i = 0; i < n; i++) {
			uint64_t x = k[i];
			if (x == 0) {
				if (!zero)
					k[o++] = 0;
				zero = true;
				continue;
			}
			size_t h = (size_t)((x * 0x9e3779b97f4a7c15ull) >> (64 - log2));
			while (set[h] && set[h] != x)
				h = (h + 1) & mask;
			if (!set[h]) {
				set[h] = x;
				k[o++] = x; /* o <= i: k[i + 1..n) still unread */
			}
		}
		free(set);
		n = o;
		o = 0;
	}
	qsort(k, n, sizeof(*k), u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || k[i] != k[o - 1])
			k[o++] = k[i];
	return o;
}

/* The index of key in the sorted table t[0..n). */
static size_t find(const uint64_t *t, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] <= key)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static inline uint64_t zigzag(uint64_t diff)
{
	return diff << 1 ^ (0 - (diff >> 63));
}

static inline uint64_t unzigzag(uint64_t z)
{
	return z >> 1 ^ (0 - (z & 1));
}

static inline uint64_t thread_key(const struct store_sample *s)
{
	return (uint64_t)s->pid << 32 | s->tid;
}

/* The parent column's difference: the parent minus the sample's own
 * span, with the two values 0 (no parent) and the span itself swapped,
 * so that a top-level span's parent costs a byte.  A bijection of the
 * 64-bit values for every span, undone by parent_of(). */
static inline uint64_t parent_diff(uint64_t span, uint64_t parent)
{
	if (parent == 0)
		return 0;
	if (parent == span)
		return 0 - span;
	return parent - span;
}

static inline uint64_t parent_of(uint64_t span, uint64_t diff)
{
	if (diff == 0)
		return 0;
	if (span + diff == 0)
		return span;
	return span + diff;
}

int samples_block_encode(const struct store_sample *v, size_t n, int64_t start_us, int64_t span_us,
                         uint8_t **out, size_t *len)
{
	uint64_t *nodes = NULL, *threads = NULL, *last = NULL;
	size_t k, m, o = 0, bound;
	uint8_t *p = NULL;
	bool weights = false, spans = false, parents = false;
	int r = -EINVAL;

	*out = NULL;
	*len = 0;
	if (n == 0 || span_us <= 0 || start_us > INT64_MAX - span_us)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i].time_us < start_us || v[i].time_us - start_us >= span_us ||
		    (i && samples_block_cmp(&v[i - 1], &v[i]) > 0))
			return -EINVAL;
		weights = weights || v[i].weight != v[0].weight;
		spans = spans || v[i].span;
		parents = parents || v[i].parent;
	}
	if (n > (SIZE_MAX - 64) / 64)
		return -ENOMEM;
	nodes = malloc(n * sizeof(*nodes));
	threads = malloc(n * sizeof(*threads));
	if (!nodes || !threads) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		nodes[i] = v[i].node;
		threads[i] = thread_key(&v[i]);
	}
	k = sort_unique(nodes, n);
	m = sort_unique(threads, n);
	/* header and w0: 4 varints; tables: 5 and 5 + 10 bytes an entry;
	 * columns: 10 + 10 + 10 + 10 + 10 bytes a sample at most */
	bound = 40 + k * 5 + m * 15 + n * 50;
	p = malloc(bound);
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	o += put_varint(p + o, n);
	o += put_varint(p + o, (uint64_t)weights | (uint64_t)spans << 1 | (uint64_t)parents << 2);
	o += put_varint(p + o, k);
	for (size_t i = 0; i < k; i++)
		o += put_varint(p + o, i ? nodes[i] - nodes[i - 1] : nodes[i]);
	o += put_varint(p + o, m);
	for (size_t i = 0; i < m; i++) {
		uint32_t pid = (uint32_t)(threads[i] >> 32), tid = (uint32_t)threads[i];

		o += put_varint(p + o, i ? pid - (uint32_t)(threads[i - 1] >> 32) : pid);
		o += put_varint(p + o, zigzag((uint64_t)tid - pid));
	}
	o += put_varint(p + o, v[0].weight);
	for (size_t i = 0; i < n; i++)
		o += put_varint(p + o,
		                (uint64_t)(v[i].time_us - (i ? v[i - 1].time_us : start_us)));
	if (k * m > 1)
		for (size_t i = 0; i < n; i++)
			o += put_varint(p + o, find(nodes, k, v[i].node) * m +
			                               find(threads, m, thread_key(&v[i])));
	if (weights)
		for (size_t i = 0; i < n; i++)
			o += put_varint(p + o, zigzag(v[i].weight - v[0].weight));
	if (spans) {
		/* each thread's span ids from its previous sample's (the first:
		 * from 0) */
		last = calloc(m, sizeof(*last));
		if (!last) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			size_t t = find(threads, m, thread_key(&v[i]));

			o += put_varint(p + o, zigzag(v[i].span - last[t]));
			last[t] = v[i].span;
		}
	}
	if (parents)
		for (size_t i = 0; i < n; i++)
			o += put_varint(p + o, zigzag(parent_diff(v[i].span, v[i].parent)));
	*out = p;
	*len = o;
	p = NULL;
	r = 0;
out:
	free(p);
	free(nodes);
	free(threads);
	free(last);
	return r;
}

int samples_block_decode(const void *buf, size_t len, int64_t start_us, int64_t span_us,
                         struct store_sample **vp, size_t *np, size_t *capp)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t n, flags, k, m, w0, x;
	uint32_t *nodes = NULL;
	uint64_t *threads = NULL, *last = NULL;
	bool any;
	struct store_sample *v;
	int64_t t;
	int r = -EIO;

	if (span_us <= 0 || start_us > INT64_MAX - span_us)
		return -EIO;
	/* Every sample takes at least one byte (its time delta), every
	 * table entry one or two: counts past the length are damage. */
	if (get_varint(&p, end, &n) < 0 || n == 0 || n > len || get_varint(&p, end, &flags) < 0 ||
	    flags > 7 || get_varint(&p, end, &k) < 0 || k == 0 || k > n)
		return -EIO;
	nodes = malloc(k * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	for (uint64_t i = 0, cur = 0; i < k; i++) {
		if (get_varint(&p, end, &x) < 0 || (i && x == 0) || x > UINT32_MAX - cur)
			goto out;
		cur += x;
		nodes[i] = (uint32_t)cur;
	}
	if (get_varint(&p, end, &m) < 0 || m == 0 || m > n)
		goto out;
	threads = malloc(m * sizeof(*threads));
	if (!threads) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0, pid = 0; i < m; i++) {
		uint64_t dpid, z, tid;

		if (get_varint(&p, end, &dpid) < 0 || dpid > UINT32_MAX - pid ||
		    get_varint(&p, end, &z) < 0)
			goto out;
		pid += dpid;
		tid = pid + unzigzag(z);
		if (tid > UINT32_MAX || (i && (pid << 32 | tid) <= threads[i - 1]))
			goto out;
		threads[i] = pid << 32 | tid;
	}
	if (get_varint(&p, end, &w0) < 0)
		goto out;
	if (*np + n > *capp) {
		size_t cap = *capp ? *capp : 1024;

		while (cap < *np + n)
			cap *= 2;
		v = realloc(*vp, cap * sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			goto out;
		}
		*vp = v;
		*capp = cap;
	}
	v = *vp + *np;
	t = start_us;
	for (uint64_t i = 0; i < n; i++) {
		if (get_varint(&p, end, &x) < 0 || x >= (uint64_t)span_us ||
		    (int64_t)x > start_us + span_us - 1 - t)
			goto out;
		t += (int64_t)x;
		v[i].time_us = t;
		v[i].node = nodes[0];
		v[i].pid = (uint32_t)(threads[0] >> 32);
		v[i].tid = (uint32_t)threads[0];
		v[i].weight = w0;
		v[i].span = 0;
		v[i].parent = 0;
	}
	/* k and m are at most n, itself at most len: k * m fits 64 bits */
	if (k * m > 1)
		for (uint64_t i = 0; i < n; i++) {
			if (get_varint(&p, end, &x) < 0 || x >= k * m)
				goto out;
			v[i].node = nodes[x / m];
			v[i].pid = (uint32_t)(threads[x % m] >> 32);
			v[i].tid = (uint32_t)threads[x % m];
		}
	if (flags & 1)
		for (uint64_t i = 0; i < n; i++) {
			if (get_varint(&p, end, &x) < 0)
				goto out;
			v[i].weight = w0 + unzigzag(x);
		}
	/* a column is there only when one of its values is not 0 */
	if (flags & 2) {
		last = calloc(m, sizeof(*last));
		if (!last) {
			r = -ENOMEM;
			goto out;
		}
		any = false;
		for (uint64_t i = 0; i < n; i++) {
			size_t t = find(threads, m, thread_key(&v[i]));

			if (get_varint(&p, end, &x) < 0)
				goto out;
			v[i].span = last[t] + unzigzag(x);
			last[t] = v[i].span;
			any = any || v[i].span;
		}
		if (!any)
			goto out;
	}
	if (flags & 4) {
		any = false;
		for (uint64_t i = 0; i < n; i++) {
			if (get_varint(&p, end, &x) < 0)
				goto out;
			v[i].parent = parent_of(v[i].span, unzigzag(x));
			any = any || v[i].parent;
		}
		if (!any)
			goto out;
	}
	if (p != end)
		goto out;
	for (uint64_t i = 1; i < n; i++)
		if (samples_block_cmp(&v[i - 1], &v[i]) > 0)
			goto out;
	*np += n;
	r = 0;
out:
	free(nodes);
	free(threads);
	free(last);
	return r;
}

int samples_block_count(const void *buf, size_t len, uint64_t *n)
{
	const uint8_t *p = buf;

	/* every sample takes at least a byte, its time delta */
	if (get_varint(&p, p + len, n) < 0 || *n == 0 || *n > len)
		return -EIO;
	return 0;
}
