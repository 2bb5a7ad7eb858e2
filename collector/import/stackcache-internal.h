/*
 * stackcache-internal.h — a bounded map from 128-bit stack hashes to store ids,
 * shared by the text importers.
 *
 * Most samples repeat a stack the importer has already interned.  The
 * importers hash the text that decides a stack's (series, node) and keep
 * the answer here, so a repeated stack costs one hash and one probe.  The
 * table starts small and doubles as it fills, up to a fixed number of
 * slots; at that size, whenever it is three-quarters full it is emptied
 * and refilled, so memory stays bounded whatever the input.  A
 * 128-bit XXH3 hash is taken to identify its text: two different texts
 * with the same hash would share an entry.
 */
#ifndef FLAMEFS_STACKCACHE_H
#define FLAMEFS_STACKCACHE_H

#include <stdbool.h>
#include <stdint.h>

struct stackcache_key {
	uint64_t lo, hi;
};

struct stackcache;

/* A cache of at most 2^slots_log2 slots (each 24 bytes).  Returns NULL
 * on ENOMEM or a slots_log2 outside 4..30; the caller owns the result and
 * frees it with stackcache_free(). */
struct stackcache *stackcache_new(unsigned slots_log2);
void stackcache_free(struct stackcache *c); /* accepts NULL */

/* Looks key up: true and *a, *b when present, false when not. */
bool stackcache_get(const struct stackcache *c, struct stackcache_key key, uint32_t *a,
                    uint32_t *b);

/* Starts loading the slot where a lookup of key begins, so that lookups
 * issued together wait for memory once rather than one after another. */
void stackcache_prefetch(const struct stackcache *c, struct stackcache_key key);

/* Stores (a, b) for key, replacing any earlier value.  a must not be
 * UINT32_MAX (a + 1 is stored, and 0 marks an empty slot).  May empty
 * the cache first. */
void stackcache_put(struct stackcache *c, struct stackcache_key key, uint32_t a, uint32_t b);

#endif
