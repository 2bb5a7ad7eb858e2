/*
 * codec.c — the store's byte codec: growable buffers and the
 * length-prefixed byte strings of its records.  The smallest encoders
 * (big-endian u32, LEB128 varints, zigzag) are inline in store-internal.h.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int get_bytes(const uint8_t **p, const uint8_t *end, const void **out, size_t *len)
{
	uint64_t n;

	if (get_varint(p, end, &n) < 0 || n > (uint64_t)(end - *p))
		return -1;
	*out = n ? *p : NULL;
	*len = n;
	*p += n;
	return 0;
}

char *dup_bytes(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}
