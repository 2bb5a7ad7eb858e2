/*
 * rowspace-internal.h — the allocator of the unwind rows array: each table's rows
 * are one range of it, taken first-fit from the ranges freed before (a
 * freed range merges with free neighbours), else from the never used part
 * above them.  Plain data, no locking: the caller guards it
 * (unwinder.c).  Nothing here prints or exits.
 */
#ifndef FLAMEFS_ROWSPACE_H
#define FLAMEFS_ROWSPACE_H

#include <stddef.h>
#include <stdint.h>

struct rowspace_range {
	uint32_t first, count;
};

struct rowspace {
	uint32_t cap; /* rows [0, cap) */
	uint32_t top; /* rows [top, cap) were never handed out, or came back */
	/* Free ranges below top, by first, none adjacent to another or to
	 * top; malloc'd. */
	struct rowspace_range *free;
	size_t nfree, free_cap;
	uint64_t reused; /* rows handed out from freed ranges */
};

/* An empty space of cap rows.  Free it with rowspace_clear(). */
void rowspace_init(struct rowspace *r, uint32_t cap);
void rowspace_clear(struct rowspace *r);

/* Takes count (> 0) rows: the lowest freed range that holds them, else
 * the space above.  Returns 0 with *first set, or -ENOSPC. */
int rowspace_alloc(struct rowspace *r, uint32_t count, uint32_t *first);

/* Gives back [first, first + count), which rowspace_alloc() handed out
 * (or a part of what it did).  Returns 0, -EINVAL when the range is not
 * in use (outside the space, or overlapping a free range), or -ENOMEM
 * (the range is then lost, not handed out again). */
int rowspace_free(struct rowspace *r, uint32_t first, uint32_t count);

/* Rows free in all (above top and in freed ranges). */
uint64_t rowspace_free_rows(const struct rowspace *r);

#endif
