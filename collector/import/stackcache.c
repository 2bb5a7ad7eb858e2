/*
 * stackcache.c — the importers' bounded hash -> (id, id) cache: open
 * addressing with linear probing over one flat array that starts small,
 * doubles up to its limit and is then emptied wholesale whenever it is
 * three-quarters full (see stackcache-internal.h).
 */
#include <stddef.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "stackcache-internal.h"

#define START_LOG2 14u
#define HUGE_PAGE  ((size_t)2 << 20)

/* A slot holds a + 1 in a1, so that zeroed memory is an empty table. */
struct slot {
	uint64_t lo, hi;
	uint32_t a1; /* 0 marks an unused slot */
	uint32_t b;
};

struct stackcache {
	struct slot *slots;
	size_t mask;
	size_t used;
	unsigned log2, max_log2;
};

/* A zeroed table of 2^log2 slots, or NULL.  Pages are faulted in only as
 * probes reach them; a big table asks for huge pages, since probes land
 * anywhere in it and each would otherwise cost a TLB miss. */
static struct slot *table_new(unsigned log2)
{
	size_t bytes = ((size_t)1 << log2) * sizeof(struct slot);
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	if (bytes >= HUGE_PAGE)
		(void)madvise(mem, bytes, MADV_HUGEPAGE); /* a hint only */
	return mem;
}

static void table_free(struct slot *t, unsigned log2)
{
	if (t)
		munmap(t, ((size_t)1 << log2) * sizeof(struct slot));
}

static struct slot *probe(struct slot *t, size_t mask, uint64_t lo, uint64_t hi)
{
	size_t i = (size_t)lo & mask;

	while (t[i].a1 && !(t[i].lo == lo && t[i].hi == hi))
		i = (i + 1) & mask;
	return &t[i];
}

struct stackcache *stackcache_new(unsigned slots_log2)
{
	struct stackcache *c;

	if (slots_log2 < 4 || slots_log2 > 30)
		return NULL;
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->max_log2 = slots_log2;
	c->log2 = slots_log2 < START_LOG2 ? slots_log2 : START_LOG2;
	c->slots = table_new(c->log2);
	if (!c->slots) {
		free(c);
		return NULL;
	}
	c->mask = ((size_t)1 << c->log2) - 1;
	c->used = 0;
	return c;
}

void stackcache_free(struct stackcache *c)
{
	if (!c)
		return;
	table_free(c->slots, c->log2);
	free(c);
}

bool stackcache_get(const struct stackcache *c, struct stackcache_key key, uint32_t *a, uint32_t *b)
{
	const struct slot *s = probe(c->slots, c->mask, key.lo, key.hi);

	if (!s->a1)
		return false;
	*a = s->a1 - 1;
	*b = s->b;
	return true;
}

void stackcache_prefetch(const struct stackcache *c, struct stackcache_key key)
{
	__builtin_prefetch(&c->slots[(size_t)key.lo & c->mask]);
}

/* Doubles the table, or empties it when it is at its limit or no memory
 * is left for a bigger one (the cache only loses entries). */
static void make_room(struct stackcache *c)
{
	struct slot *t = NULL;

	if (c->log2 < c->max_log2)
		t = table_new(c->log2 + 1);
	if (!t) {
		memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
		c->used = 0;
		return;
	}
	size_t nmask = c->mask * 2 + 1;
	for (size_t i = 0; i <= c->mask; i++)
		if (c->slots[i].a1)
			*probe(t, nmask, c->slots[i].lo, c->slots[i].hi) = c->slots[i];
	table_free(c->slots, c->log2);
	c->slots = t;
	c->log2++;
	c->mask = nmask;
}

void stackcache_put(struct stackcache *c, struct stackcache_key key, uint32_t a, uint32_t b)
{
	if (c->used >= (c->mask + 1) / 4 * 3)
		make_room(c);
	struct slot *s = probe(c->slots, c->mask, key.lo, key.hi);
	if (!s->a1)
		c->used++;
	s->lo = key.lo;
	s->hi = key.hi;
	s->a1 = a + 1;
	s->b = b;
}
