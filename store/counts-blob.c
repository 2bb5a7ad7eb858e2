/*
 * counts-blob.c — encoding and reading the counts blob (counts-blob-internal.h),
 * the one format both backends keep a (series, bucket)'s counts in.
 */
#include "counts-blob-internal.h"

void count_cursor_init(struct count_cursor *c, const void *p, size_t len)
{
	c->p = p;
	c->end = c->p + len;
	c->started = false;
	c->node = 0;
	c->samples = 0;
	c->weight = 0;
}

int count_cursor_next(struct count_cursor *c)
{
	uint64_t head, delta, node;

	if (c->p == c->end)
		return 0;
	if (get_varint(&c->p, c->end, &head) < 0)
		return -1;
	delta = head >> 1;
	if (c->started && delta == 0)
		return -1;
	node = (uint64_t)c->node + delta;
	if (node > UINT32_MAX)
		return -1;
	if (get_varint(&c->p, c->end, &c->samples) < 0)
		return -1;
	if (head & 1) {
		if (get_varint(&c->p, c->end, &c->weight) < 0 || c->weight == c->samples)
			return -1;
	} else {
		c->weight = c->samples;
	}
	c->node = (uint32_t)node;
	c->started = true;
	return 1;
}

size_t count_entry_put(uint8_t *p, uint32_t delta, uint64_t samples, uint64_t weight)
{
	size_t n = put_varint(p, (uint64_t)delta << 1 | (weight != samples));

	n += put_varint(p + n, samples);
	if (weight != samples)
		n += put_varint(p + n, weight);
	return n;
}
