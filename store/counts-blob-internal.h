/*
 * counts-blob-internal.h — the counts blob, shared by both backends: one (series,
 * bucket)'s counts as a list sorted by node, strictly increasing, each
 * entry
 *
 *     varint(delta << 1 | has_weight), varint(samples) [, varint(weight)]
 *
 * where delta is the node minus the previous entry's node (the first
 * entry's delta is its node, so node 0 can be stored), and the weight is
 * present only when it differs from samples (folded input has weight ==
 * samples).  The flag lives in the delta because a node delta is at most
 * 32 bits, so the shift can never lose a bit.  The embedded store keeps
 * one such blob per counts key; the central store one per counts row.
 * The cursor checks every varint against the end of the value, that
 * nodes stay in 32 bits and strictly increase, and that a promised weight
 * is there and differs from samples.  store/README.md documents it.
 */
#ifndef FLAMEFS_COUNTS_BLOB_H
#define FLAMEFS_COUNTS_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest encoded entry: three 10-byte varints. */
#define COUNT_ENTRY_MAX 30

static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Returns 0, or -1 when the input ends early or the varint is too long. */
static inline int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	while (*p < end && shift < 64) {
		uint8_t c = *(*p)++;

		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

/* Reads a blob entry by entry; node/samples/weight are the last one read. */
struct count_cursor {
	const uint8_t *p, *end;
	bool started;
	uint32_t node;
	uint64_t samples, weight;
};

void count_cursor_init(struct count_cursor *c, const void *p, size_t len);

/* Reads the next entry: 1 when one was read, 0 at the end, -1 when the
 * value is damaged. */
int count_cursor_next(struct count_cursor *c);

/* Writes one entry at p (room for COUNT_ENTRY_MAX bytes) and returns its
 * length; delta is the node minus the previous entry's (the node itself
 * for the first). */
size_t count_entry_put(uint8_t *p, uint32_t delta, uint64_t samples, uint64_t weight);

#endif
