/*
 * perfdata-paths.c — the perf.data importer's path cache: what a stack's
 * entries (one callchain address each, keyed as stack_key() in perfdata.c
 * keys them) became in the store, so that an entry met again, in another
 * stack or another process, is named and interned once.
 *
 * One table holds two kinds of entries, told apart by their parent:
 *   - an entry's frames (parent PDPATH_FRAMES): the ids of the frames its
 *     address gave (the function, then those inlined in it), kept in the
 *     cache's id array, and the bytes of their names;
 *   - a step of a path (parent a node): the node that the entry's frames
 *     lead to below that parent, and the bytes of the names from the root
 *     to it.
 * Keys are compared whole (no hash stands for them).  The table starts
 * small and doubles as it fills, up to PDPATH_MAX_LOG2 slots; at that size,
 * or once the id array holds PDPATH_MAX_IDS ids, it is emptied and refilled,
 * so memory stays bounded whatever the input.  The ids are the store
 * batch's: the cache lives as long as one import's batch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#include "perfdata-internal.h"

#define START_LOG2      16u
#define PDPATH_MAX_LOG2 20u               /* 32 MiB of slots */
#define PDPATH_MAX_IDS  ((size_t)1 << 22) /* 16 MiB of frame ids */

/* kind1 is the key's kind + 1, so that zeroed memory is an empty table. */
struct pdpath_slot {
	uint64_t w0, w1;
	uint32_t parent;
	uint8_t kind1; /* 0 marks an unused slot */
	uint8_t n;     /* frames: how many */
	uint32_t a, b; /* frames: first id in ids, bytes; path: node, bytes */
};

struct pdpath {
	struct pdpath_slot *slots;
	size_t mask, used;
	unsigned log2;
	uint32_t *ids;
	size_t nids, ids_cap;
};

struct pdpath *pdpath_new(void)
{
	struct pdpath *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->log2 = START_LOG2;
	c->mask = ((size_t)1 << START_LOG2) - 1;
	c->slots = calloc(c->mask + 1, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	return c;
}

void pdpath_free(struct pdpath *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c->ids);
	free(c);
}

static size_t slot_of(const struct pdpath *c, uint32_t parent, uint8_t kind, uint64_t w0,
                      uint64_t w1)
{
	uint64_t h = (w0 ^ ((uint64_t)parent << 8 | kind)) * 0x9e3779b97f4a7c15ull;

	h = (h ^ (h >> 29) ^ w1) * 0xbf58476d1ce4e5b9ull;
	return (size_t)(h ^ (h >> 32)) & c->mask;
}

static struct pdpath_slot *probe(struct pdpath_slot *t, size_t mask, size_t i, uint32_t parent,
                                 uint8_t kind, uint64_t w0, uint64_t w1)
{
	while (t[i].kind1 && !(t[i].w0 == w0 && t[i].w1 == w1 && t[i].parent == parent &&
	                       t[i].kind1 == kind + 1))
		i = (i + 1) & mask;
	return &t[i];
}

static const struct pdpath_slot *find(const struct pdpath *c, uint32_t parent, uint8_t kind,
                                      uint64_t w0, uint64_t w1)
{
	const struct pdpath_slot *s = probe(c->slots, c->mask, slot_of(c, parent, kind, w0, w1),
	                                    parent, kind, w0, w1);
	return s->kind1 ? s : NULL;
}

static void empty(struct pdpath *c)
{
	memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
	c->used = 0;
	c->nids = 0;
}

/* Room for one more slot: the table doubled, or emptied at its limit or
 * when no memory is left for a bigger one (the cache only loses entries). */
static void make_room(struct pdpath *c)
{
	if (c->used < (c->mask + 1) / 4 * 3)
		return;
	struct pdpath_slot *t = NULL;
	if (c->log2 < PDPATH_MAX_LOG2)
		t = calloc((c->mask + 1) * 2, sizeof(*t));
	if (!t) {
		empty(c);
		return;
	}
	struct pdpath_slot *old = c->slots;
	size_t omask = c->mask;
	c->slots = t;
	c->mask = omask * 2 + 1;
	c->log2++;
	for (size_t i = 0; i <= omask; i++)
		if (old[i].kind1)
			*probe(t, c->mask,
			       slot_of(c, old[i].parent, old[i].kind1 - 1u, old[i].w0, old[i].w1),
			       old[i].parent, old[i].kind1 - 1u, old[i].w0, old[i].w1) = old[i];
	free(old);
}

/* The key's slot, its key set, for the caller to fill; room is made
 * first, which may empty the table. */
static struct pdpath_slot *add(struct pdpath *c, uint32_t parent, uint8_t kind, uint64_t w0,
                               uint64_t w1)
{
	make_room(c);
	struct pdpath_slot *s = probe(c->slots, c->mask, slot_of(c, parent, kind, w0, w1), parent,
	                              kind, w0, w1);
	if (!s->kind1)
		c->used++;
	s->w0 = w0;
	s->w1 = w1;
	s->parent = parent;
	s->kind1 = (uint8_t)(kind + 1u);
	return s;
}

bool pdpath_frames(const struct pdpath *c, uint8_t kind, uint64_t w0, uint64_t w1,
                   const uint32_t **ids, size_t *n, uint32_t *bytes)
{
	const struct pdpath_slot *s = find(c, PDPATH_FRAMES, kind, w0, w1);

	if (!s)
		return false;
	*ids = c->ids + s->a;
	*n = s->n;
	*bytes = s->b;
	return true;
}

int pdpath_put_frames(struct pdpath *c, uint8_t kind, uint64_t w0, uint64_t w1,
                      const uint32_t *ids, size_t n, uint32_t bytes)
{
	if (n > UINT8_MAX)
		return -EINVAL;
	if (c->nids + n > PDPATH_MAX_IDS)
		empty(c);
	int rc = import_grow((void **)&c->ids, &c->ids_cap, c->nids + n, sizeof(*c->ids));
	if (rc < 0)
		return rc;
	struct pdpath_slot *s = add(c, PDPATH_FRAMES, kind, w0, w1);
	memcpy(c->ids + c->nids, ids, n * sizeof(*ids));
	s->a = (uint32_t)c->nids;
	s->n = (uint8_t)n;
	s->b = bytes;
	c->nids += n;
	return 0;
}

bool pdpath_step(const struct pdpath *c, uint32_t parent, uint8_t kind, uint64_t w0, uint64_t w1,
                 uint32_t *node, uint32_t *bytes)
{
	const struct pdpath_slot *s = find(c, parent, kind, w0, w1);

	if (!s)
		return false;
	*node = s->a;
	*bytes = s->b;
	return true;
}

void pdpath_put_step(struct pdpath *c, uint32_t parent, uint8_t kind, uint64_t w0, uint64_t w1,
                     uint32_t node, uint32_t bytes)
{
	struct pdpath_slot *s = add(c, parent, kind, w0, w1);
	s->a = node;
	s->b = bytes;
}
