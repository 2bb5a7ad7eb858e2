/*
 * rowspace.c — first-fit allocation of unwind row ranges with coalescing
 * free ranges (see rowspace-internal.h).  The free list is a sorted array: it holds
 * at most one range per table freed and not reused (a few thousand), so a
 * linear first-fit scan and a memmove per change cost less than the table
 * build they serve.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rowspace-internal.h"

void rowspace_init(struct rowspace *r, uint32_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap;
}

void rowspace_clear(struct rowspace *r)
{
	free(r->free);
	rowspace_init(r, r->cap);
}

int rowspace_alloc(struct rowspace *r, uint32_t count, uint32_t *first)
{
	if (count == 0)
		return -EINVAL;
	for (size_t i = 0; i < r->nfree; i++) {
		struct rowspace_range *f = &r->free[i];
		if (f->count < count)
			continue;
		*first = f->first;
		r->reused += count;
		f->first += count;
		f->count -= count;
		if (f->count == 0) {
			memmove(f, f + 1, (r->nfree - i - 1) * sizeof(*f));
			r->nfree--;
		}
		return 0;
	}
	if (count > r->cap - r->top)
		return -ENOSPC;
	*first = r->top;
	r->top += count;
	return 0;
}

/* The index of the first free range above `first`. */
static size_t first_above(const struct rowspace *r, uint32_t first)
{
	size_t lo = 0, hi = r->nfree;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->free[mid].first <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rowspace_free(struct rowspace *r, uint32_t first, uint32_t count)
{
	if (count == 0)
		return 0;
	if (first >= r->top || count > r->top - first)
		return -EINVAL;
	uint32_t end = first + count;
	size_t i = first_above(r, first);
	struct rowspace_range *prev = i > 0 ? &r->free[i - 1] : NULL;
	struct rowspace_range *next = i < r->nfree ? &r->free[i] : NULL;
	if ((prev && prev->first + prev->count > first) || (next && next->first < end))
		return -EINVAL;
	bool join_prev = prev && prev->first + prev->count == first;
	bool join_next = next && next->first == end;

	if (join_prev && join_next) {
		prev->count += count + next->count;
		memmove(next, next + 1, (r->nfree - i - 1) * sizeof(*next));
		r->nfree--;
	} else if (join_prev) {
		prev->count += count;
	} else if (join_next) {
		next->first = first;
		next->count += count;
	} else {
		if (r->nfree == r->free_cap) {
			size_t ncap = r->free_cap ? r->free_cap * 2 : 64;
			struct rowspace_range *n = realloc(r->free, ncap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			r->free = n;
			r->free_cap = ncap;
		}
		memmove(&r->free[i + 1], &r->free[i], (r->nfree - i) * sizeof(*r->free));
		r->free[i] = (struct rowspace_range){first, count};
		r->nfree++;
	}
	/* The last free range reaching top goes back to the space above. */
	if (r->nfree && r->free[r->nfree - 1].first + r->free[r->nfree - 1].count == r->top) {
		r->top = r->free[r->nfree - 1].first;
		r->nfree--;
	}
	return 0;
}

uint64_t rowspace_free_rows(const struct rowspace *r)
{
	uint64_t n = r->cap - r->top;
	for (size_t i = 0; i < r->nfree; i++)
		n += r->free[i].count;
	return n;
}
