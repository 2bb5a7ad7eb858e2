/*
 * spans.c — record --span's spans record: each span that ended (or was
 * closed unended) becomes a sample of its process's STORE_EVENT_SPANS
 * series (store.h "spans"): its start as the moment, its duration in
 * nanoseconds as the weight, its id and parent's id, its thread, and as
 * its stack the chain of span names from the outermost span open around
 * it down to its own (frames of kind STORE_FRAME_SPAN), then
 * STORE_SPAN_UNENDED_FRAME when it never ended.  The series has the
 * labels its thread's samples get (labels.c), span=<its own name> among
 * them.
 *
 * The records come from the BPF side's `span_records` ring
 * (profile-spans.bpf.h), read into r->spans whenever the process events'
 * ring is served (the two share one ring_buffer) and stored at each
 * drain.  The enclosing names come through `span_chains`, read once a
 * chain and then cached here.  At the recording's end the spans still
 * open in `span_stacks` are closed from here.  Nothing here prints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "record-internal.h"

#define CHAIN_BUCKETS 1024u
/* Chains kept at most (SQL spans nest under statements before they are
 * normalised, so chains may be many): past it the cache starts again. */
#define CHAIN_MAX 65536u

struct span_chain_ent {
	struct span_chain_ent *next;
	uint64_t key;
	uint32_t depth;
	uint64_t name[PROFILE_SPAN_DEPTH];
};

struct record_span_chains {
	struct span_chain_ent *b[CHAIN_BUCKETS];
	size_t n;
};

static void chains_clear(struct record_span_chains *c)
{
	for (unsigned i = 0; i < CHAIN_BUCKETS; i++) {
		for (struct span_chain_ent *e = c->b[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
		c->b[i] = NULL;
	}
	c->n = 0;
}

void record_spans_free(struct recorder *r)
{
	if (r->span_chains)
		chains_clear(r->span_chains);
	free(r->span_chains);
	r->span_chains = NULL;
	free(r->spans);
	r->spans = NULL;
	r->nspan_recs = r->span_recs_cap = 0;
}

static int push_record(struct recorder *r, const struct profile_span_record *rec)
{
	if (r->nspan_recs == r->span_recs_cap) {
		size_t ncap = r->span_recs_cap ? r->span_recs_cap * 2 : 1024;
		struct profile_span_record *n = realloc(r->spans, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->spans = n;
		r->span_recs_cap = ncap;
	}
	r->spans[r->nspan_recs++] = *rec;
	return 0;
}

int record_on_span(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;

	if (len < sizeof(struct profile_span_record))
		return 0;
	int rc = push_record(r, data);
	if (rc < 0)
		record_fail(r, rc, "out of memory");
	return rc;
}

/* The chain of enclosing names with key `key`: from the cache, or read
 * from `span_chains` (and deleted there) and cached.  NULL when it cannot
 * be found (*err 0) or on -ENOMEM (*err). */
static const struct span_chain_ent *chain_of(struct recorder *r, uint64_t key, int *err)
{
	struct record_span_chains *c = r->span_chains;
	unsigned b = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) % CHAIN_BUCKETS;
	struct profile_span_chain v;

	*err = 0;
	if (!c && !(c = r->span_chains = calloc(1, sizeof(*c)))) {
		*err = -ENOMEM;
		return NULL;
	}
	for (struct span_chain_ent *e = c->b[b]; e; e = e->next)
		if (e->key == key)
			return e;
	if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.span_chains), &key, &v) < 0)
		return NULL;
	if (c->n >= CHAIN_MAX) {
		chains_clear(c);
		b = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) % CHAIN_BUCKETS;
	}
	struct span_chain_ent *e = calloc(1, sizeof(*e));
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->key = key;
	e->depth = v.depth < PROFILE_SPAN_DEPTH ? v.depth : PROFILE_SPAN_DEPTH;
	memcpy(e->name, v.name, e->depth * sizeof(e->name[0]));
	e->next = c->b[b];
	c->b[b] = e;
	c->n++;
	bpf_map_delete_elem(bpf_map__fd(r->skel->maps.span_chains), &key);
	return e;
}

/* Records by what decides their series, then by start. */
static int rec_cmp(const void *a, const void *b)
{
	const struct profile_span_record *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	int c = memcmp(x->comm, y->comm, sizeof(x->comm));
	if (c)
		return c;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->chain != y->chain)
		return x->chain < y->chain ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Appends to the node `*node` the frame of span name `key`. */
static int add_name(struct recorder *r, struct store_batch *b, uint64_t key, uint32_t *node)
{
	const char *name;
	uint32_t frame;
	int rc = record_labels_span_name(r, key, &name);
	if (rc < 0)
		return rc;
	struct store_frame f = {.name = name, .name_len = strlen(name), .kind = STORE_FRAME_SPAN};
	rc = store_batch_frame(b, &f, &frame);
	return rc < 0 ? rc : store_batch_node(b, *node, frame, node);
}

/* Appends a frame of kind `kind` named `name` to the node `*node`. */
static int add_marker(struct store_batch *b, const char *name, uint8_t kind, uint32_t *node)
{
	struct store_frame f = {.name = name, .name_len = strlen(name), .kind = kind};
	uint32_t frame;
	int rc = store_batch_frame(b, &f, &frame);
	return rc < 0 ? rc : store_batch_node(b, *node, frame, node);
}

/* The node of a record's chain of names (and [unended]). */
static int record_node(struct recorder *r, struct store_batch *b,
                       const struct profile_span_record *rec, uint32_t *node)
{
	int rc = 0;

	*node = STORE_ROOT_NODE;
	if (rec->flags & PROFILE_SPAN_CHAIN_LOST) {
		rc = add_marker(b, "[unknown]", STORE_FRAME_UNKNOWN, node);
	} else if (rec->chain) {
		const struct span_chain_ent *c = chain_of(r, rec->chain, &rc);
		if (!c && rc == 0) {
			r->span_chains_unread++;
			rc = add_marker(b, "[unknown]", STORE_FRAME_UNKNOWN, node);
		}
		for (uint32_t i = 0; c && rc == 0 && i < c->depth; i++)
			rc = add_name(r, b, c->name[i], node);
	}
	if (rc == 0)
		rc = add_name(r, b, rec->name, node);
	if (rc == 0 && (rec->flags & PROFILE_SPAN_UNENDED))
		rc = add_marker(b, STORE_SPAN_UNENDED_FRAME, STORE_FRAME_SPAN, node);
	return rc;
}

int record_spans_store(struct recorder *r, struct store_batch *b)
{
	const struct profile_span_record *last = NULL;
	uint32_t series = 0, node = 0;
	int rc;

	if (r->nspan_recs > 1)
		qsort(r->spans, r->nspan_recs, sizeof(*r->spans), rec_cmp);
	for (size_t i = 0; i < r->nspan_recs; i++) {
		const struct profile_span_record *rec = &r->spans[i];
		bool same_series = last && last->pid == rec->pid && last->gen == rec->gen &&
		                   last->cgroup == rec->cgroup && last->name == rec->name &&
		                   memcmp(last->comm, rec->comm, sizeof(rec->comm)) == 0;
		if (!same_series) {
			struct profile_key k;
			memset(&k, 0, sizeof(k));
			k.pid = rec->pid;
			k.gen = rec->gen;
			k.cgroup = rec->cgroup;
			memcpy(k.comm, rec->comm, sizeof(k.comm));
			k.span = rec->name;
			rc = record_series_event(r, b, &k, STORE_EVENT_SPANS, "nanoseconds",
			                         &series);
			if (rc < 0)
				return rc;
		}
		if (!same_series || last->chain != rec->chain || last->flags != rec->flags) {
			rc = record_node(r, b, rec, &node);
			if (rc < 0)
				return rc;
		}
		last = rec;
		int64_t ns = (int64_t)rec->start + r->clock_off_ns;
		struct store_sample smp = {
		        .time_us = ns / 1000 - (ns % 1000 < 0),
		        .node = node,
		        .pid = rec->pid,
		        .tid = rec->tid,
		        .weight = rec->end > rec->start ? rec->end - rec->start : 0,
		        .span = rec->id,
		        .parent = rec->parent,
		};
		rc = store_batch_sample(b, series, &smp);
		if (rc < 0)
			return rc;
		r->span_stored++;
		r->span_weight += smp.weight;
		if (rec->flags & PROFILE_SPAN_UNENDED)
			r->span_unended++;
	}
	r->nspan_recs = 0;
	return 0;
}

/* FNV-1a over the keys and the depth, as span_chain() in
 * profile-spans.bpf.h does it. */
static uint64_t chain_hash(const __u64 *name, uint32_t d)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < d; i++) {
		h ^= name[i];
		h *= 0x100000001b3ull;
	}
	h ^= d;
	h *= 0x100000001b3ull;
	return h ? h : 1;
}

int record_spans_close(struct recorder *r)
{
	int fd = bpf_map__fd(r->skel->maps.span_stacks);
	int cfd = bpf_map__fd(r->skel->maps.span_chains);
	int efd = bpf_map__fd(r->skel->maps.execs);
	uint32_t tid, next, *prev = NULL;
	struct profile_span_stack st;
	struct timespec now;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t end = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		tid = next;
		prev = &tid;
		if (bpf_map_lookup_elem(fd, &tid, &st) < 0 || st.depth == 0)
			continue;
		uint32_t kept = st.depth < PROFILE_SPAN_DEPTH ? st.depth : PROFILE_SPAN_DEPTH;
		uint32_t gen = 0;
		if (bpf_map_lookup_elem(efd, &st.tgid, &gen) < 0)
			gen = 0;
		for (uint32_t d = 0; d < kept; d++) {
			struct profile_span_record rec = {
			        .id = st.id[d],
			        .parent = st.parent[d],
			        .start = st.start[d],
			        .end = end > st.start[d] ? end : st.start[d],
			        .name = st.span[d],
			        .cgroup = st.cgroup,
			        .pid = st.tgid,
			        .tid = tid,
			        .gen = gen,
			        .flags = PROFILE_SPAN_UNENDED,
			};
			memcpy(rec.comm, st.comm, sizeof(rec.comm));
			if (d > 0) {
				struct profile_span_chain c = {.depth = d};
				memcpy(c.name, st.span, d * sizeof(c.name[0]));
				rec.chain = chain_hash(st.span, d);
				if (bpf_map_update_elem(cfd, &rec.chain, &c, BPF_ANY) < 0 &&
				    !chain_of(r, rec.chain, &rc)) {
					if (rc < 0)
						return rc;
					rec.chain = 0;
					rec.flags |= PROFILE_SPAN_CHAIN_LOST;
				}
			}
			if ((rc = push_record(r, &rec)) < 0)
				return rc;
		}
	}
	return 0;
}

uint64_t record_span_fixed_key(const char *text)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t len = strnlen(text, PROFILE_SPAN_NAME - 1);
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)text[i];
		h *= 0x100000001b3ull;
	}
	/* then the flags, 0 for a string name (neither NUM nor SQL) */
	h *= 0x100000001b3ull;
	return h > PROFILE_SPAN_UNKNOWN ? h : h + 2;
}
