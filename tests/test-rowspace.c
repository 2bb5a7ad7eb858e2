/*
 * test-rowspace.c — unit tests for the unwind rows allocator
 * (collector/unwind/rowspace.c): seeded random sequences of allocations
 * and frees checked against a bitmap of the rows in use (no range handed
 * out twice, first fit: the lowest hole that holds the request), the free
 * list kept sorted and coalesced, exhaustion (-ENOSPC only when no hole
 * and no space above holds the request), bad frees refused, and the rows
 * reused counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rowspace-internal.h"

/* A description, never a format. */
#define CHECK_WHAT(cond, what) CHECKF(cond, "%s", what)

/* xorshift64*: the same sequence on every machine */
static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 33) % n;
}

/* The lowest first of count free rows by the bitmap, or UINT32_MAX. */
static uint32_t brute_first_fit(const bool *used, uint32_t cap, uint32_t count)
{
	uint32_t run = 0;
	for (uint32_t i = 0; i < cap; i++) {
		run = used[i] ? 0 : run + 1;
		if (run == count)
			return i + 1 - count;
	}
	return UINT32_MAX;
}

/* The free list against the bitmap: sorted, disjoint, not adjacent to
 * each other or to top, every row in it free, every free row below top in
 * it, and nothing at or above top in use. */
static void check_shape(const struct rowspace *r, const bool *used)
{
	uint32_t at = 0;
	for (size_t i = 0; i < r->nfree; i++) {
		const struct rowspace_range *f = &r->free[i];
		CHECK_WHAT(f->count > 0, "no empty free range");
		CHECK_WHAT(i == 0 || f->first > at, "free ranges sorted and not adjacent");
		for (uint32_t k = at; k < f->first && k < r->top; k++)
			if (!used[k]) {
				CHECK_WHAT(false, "a free row below top is on the free list");
				break;
			}
		for (uint32_t k = f->first; k < f->first + f->count; k++)
			if (used[k]) {
				CHECK_WHAT(false, "a row on the free list is in use");
				break;
			}
		at = f->first + f->count;
	}
	CHECK_WHAT(at < r->top || r->nfree == 0, "the last free range does not reach top");
	for (uint32_t k = at; k < r->top; k++)
		if (!used[k]) {
			CHECK_WHAT(false, "a free row below top is on the free list");
			break;
		}
	for (uint32_t k = r->top; k < r->cap; k++)
		if (used[k]) {
			CHECK_WHAT(false, "nothing at or above top is in use");
			break;
		}
}

struct live {
	uint32_t first, count;
};

static void random_run(uint64_t seed, uint32_t cap, uint32_t max_count, int steps)
{
	struct rowspace r;
	bool *used = calloc(cap, sizeof(*used));
	struct live *live = calloc((size_t)cap, sizeof(*live));
	size_t nlive = 0;
	uint64_t reused = 0, exhausted = 0, holes = 0;
	char what[96];

	rng_state = seed;
	rowspace_init(&r, cap);
	for (int step = 0; step < steps && check_failures < 20; step++) {
		snprintf(what, sizeof(what), "seed %llu step %d", (unsigned long long)seed, step);
		if (nlive && rnd(100) < 45) {
			size_t k = rnd((uint32_t)nlive);
			struct live x = live[k];
			live[k] = live[--nlive];
			CHECK_WHAT(rowspace_free(&r, x.first, x.count) == 0, what);
			for (uint32_t i = x.first; i < x.first + x.count; i++)
				used[i] = false;
		} else {
			uint32_t count = 1 + rnd(max_count);
			/* First fit over the whole space: a free range never
			 * reaches top (it joins the space above), so the lowest
			 * run of free rows is the lowest hole, else top. */
			uint32_t expect = brute_first_fit(used, cap, count);
			bool in_hole = expect != UINT32_MAX && expect < r.top;
			uint32_t first = UINT32_MAX;
			int rc = rowspace_alloc(&r, count, &first);
			if (expect == UINT32_MAX) {
				CHECK_WHAT(rc == -ENOSPC, what);
				exhausted++;
				continue;
			}
			CHECK_WHAT(rc == 0 && first == expect, what);
			if (rc != 0)
				continue;
			if (in_hole) {
				reused += count;
				holes++;
			}
			for (uint32_t i = first; i < first + count; i++) {
				if (used[i]) {
					CHECK_WHAT(false, "a row handed out twice");
					break;
				}
				used[i] = true;
			}
			live[nlive++] = (struct live){first, count};
		}
		check_shape(&r, used);
		uint64_t nfree = 0;
		for (uint32_t i = 0; i < cap; i++)
			nfree += !used[i];
		CHECK_WHAT(rowspace_free_rows(&r) == nfree, what);
		CHECK_WHAT(r.reused == reused, what);
	}
	/* The run met both a full space and reuse of holes. */
	CHECK_WHAT(exhausted > 0 && holes > 0, "the sequence exhausts the space and reuses holes");
	printf("seed %llu: %llu allocations from holes, %llu refused (full)\n",
	       (unsigned long long)seed, (unsigned long long)holes, (unsigned long long)exhausted);
	/* Everything back: one empty space again. */
	while (nlive) {
		struct live x = live[--nlive];
		CHECK_WHAT(rowspace_free(&r, x.first, x.count) == 0, "final free");
	}
	CHECK_WHAT(r.top == 0 && r.nfree == 0, "all freed: the space is whole again");
	rowspace_clear(&r);
	free(used);
	free(live);
}

static void fixed_cases(void)
{
	struct rowspace r;
	uint32_t a, b, c, d, x;

	rowspace_init(&r, 100);
	CHECK_WHAT(rowspace_alloc(&r, 0, &x) == -EINVAL, "no empty range");
	CHECK_WHAT(rowspace_alloc(&r, 10, &a) == 0 && a == 0, "a at 0");
	CHECK_WHAT(rowspace_alloc(&r, 20, &b) == 0 && b == 10, "b at 10");
	CHECK_WHAT(rowspace_alloc(&r, 30, &c) == 0 && c == 30, "c at 30");
	CHECK_WHAT(rowspace_alloc(&r, 40, &d) == 0 && d == 60, "d at 60: full");
	CHECK_WHAT(rowspace_alloc(&r, 1, &x) == -ENOSPC, "exhausted");
	/* bad frees */
	CHECK_WHAT(rowspace_free(&r, 100, 1) == -EINVAL, "past the space");
	CHECK_WHAT(rowspace_free(&r, 95, 10) == -EINVAL, "across the end");
	CHECK_WHAT(rowspace_free(&r, 10, 20) == 0, "b freed");
	CHECK_WHAT(rowspace_free(&r, 15, 2) == -EINVAL, "inside a free range");
	CHECK_WHAT(rowspace_free(&r, 5, 10) == -EINVAL, "overlapping a free range");
	CHECK_WHAT(r.nfree == 1 && r.free[0].first == 10 && r.free[0].count == 20, "one hole");
	/* coalescing both sides */
	CHECK_WHAT(rowspace_free(&r, 0, 10) == 0, "a freed");
	CHECK_WHAT(r.nfree == 1 && r.free[0].first == 0 && r.free[0].count == 30, "a joins b");
	CHECK_WHAT(rowspace_free(&r, 60, 40) == 0 && r.top == 60, "d freed: back to top");
	CHECK_WHAT(rowspace_free(&r, 30, 30) == 0 && r.top == 0 && r.nfree == 0,
	           "c freed: joins the hole below and top");
	/* first fit: the lowest hole that holds the request */
	CHECK_WHAT(rowspace_alloc(&r, 10, &a) == 0 && rowspace_alloc(&r, 5, &b) == 0 &&
	                   rowspace_alloc(&r, 20, &c) == 0 && rowspace_alloc(&r, 5, &d) == 0,
	           "four again");
	CHECK_WHAT(rowspace_free(&r, a, 10) == 0 && rowspace_free(&r, c, 20) == 0, "two holes");
	CHECK_WHAT(rowspace_alloc(&r, 12, &x) == 0 && x == c, "12 rows: the second hole");
	CHECK_WHAT(rowspace_alloc(&r, 8, &x) == 0 && x == a, "8 rows: the first hole");
	CHECK_WHAT(rowspace_alloc(&r, 8, &x) == 0 && x == c + 12, "8 more: the rest of the second");
	CHECK_WHAT(r.reused == 28, "rows reused counted");
	CHECK_WHAT(rowspace_alloc(&r, 61, &x) == -ENOSPC, "61 rows: 2 in a hole, 60 above");
	CHECK_WHAT(rowspace_alloc(&r, 60, &x) == 0 && x == 40, "60 rows above");
	rowspace_clear(&r);
}

int main(void)
{
	fixed_cases();
	random_run(1, 64, 8, 20000);
	random_run(2, 1000, 50, 20000);
	random_run(3, 4096, 700, 5000);
	random_run(4, 1u << 16, 4096, 3000);
	if (check_failures) {
		fprintf(stderr, "%d check_failures\n", check_failures);
		return 1;
	}
	printf("rowspace: all checks passed\n");
	return 0;
}
