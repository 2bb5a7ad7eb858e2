/*
 * staging.c — building a batch for the central store: series, frames and
 * nodes interned by content against what the writer holds in memory
 * (provisional ids past the committed ones; commit.c makes them final),
 * and counts collected in one vector that is sorted and summed when it
 * grows large and again at commit.  A hash match with different content
 * is a collision and is refused, never merged.
 */
#include "central-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The vector of counts is summed in place once it holds this many. */
#define COUNTS_COMPACT_MIN (1u << 20)

/* ---- series ------------------------------------------------------------------- */

static uint64_t series_key_hash(const char *host, const char *binary, const char *version,
                                const char *event, const char *labels)
{
	uint64_t h = XXH3_64bits(host, strlen(host) + 1);

	h = XXH3_64bits_withSeed(binary, strlen(binary) + 1, h);
	h = XXH3_64bits_withSeed(version, strlen(version) + 1, h);
	h = XXH3_64bits_withSeed(event, strlen(event) + 1, h);
	return XXH3_64bits_withSeed(labels, strlen(labels) + 1, h);
}

static uint64_t series_key(const struct pg *s, uint32_t idx)
{
	const struct cseries *r = &s->series[idx];

	return series_key_hash(r->host, r->binary, r->version, r->event, r->labels);
}

void central_series_clear(struct cseries *r)
{
	free(r->host);
	free(r->binary);
	free(r->version);
	free(r->event);
	free(r->unit);
	free(r->labels);
	memset(r, 0, sizeof(*r));
}

struct cseries *central_series_by_id(struct pg *s, uint32_t id)
{
	if (id >= s->series_by_id_len || !s->series_by_id[id])
		return NULL;
	return &s->series[s->series_by_id[id] - 1];
}

/* Indexes series[idx] by key and by id. */
int central_series_index(struct pg *s, uint32_t idx)
{
	struct cseries *r = &s->series[idx];

	if (htab_full(&s->series_tab) && htab_rebuild(&s->series_tab, idx, series_key, s) < 0)
		return -ENOMEM;
	if (r->id >= s->series_by_id_len) {
		uint32_t n = s->series_by_id_len ? s->series_by_id_len : 64;
		uint32_t *m;

		while (n <= r->id) {
			if (n > UINT32_MAX / 2)
				return -EOVERFLOW;
			n *= 2;
		}
		m = realloc(s->series_by_id, (size_t)n * sizeof(*m));
		if (!m)
			return -ENOMEM;
		memset(m + s->series_by_id_len, 0, (size_t)(n - s->series_by_id_len) * sizeof(*m));
		s->series_by_id = m;
		s->series_by_id_len = n;
	}
	htab_add(&s->series_tab, series_key(s, idx), idx);
	s->series_by_id[r->id] = idx + 1;
	return 0;
}

static int series_push(struct pg *s, const char *host, const char *binary, const char *version,
                       const char *event, const char *unit, const char *labels, uint32_t id)
{
	struct cseries *r;

	if (s->nseries == s->series_cap) {
		uint32_t cap = s->series_cap ? s->series_cap * 2 : 64;
		struct cseries *n = realloc(s->series, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->series = n;
		s->series_cap = cap;
	}
	r = &s->series[s->nseries];
	memset(r, 0, sizeof(*r));
	r->host = strdup(host);
	r->binary = strdup(binary);
	r->version = strdup(version);
	r->event = strdup(event);
	r->unit = strdup(unit);
	r->labels = strdup(labels);
	r->counted = store_labels_counted(labels);
	r->id = id;
	if (!r->host || !r->binary || !r->version || !r->event || !r->unit || !r->labels ||
	    central_series_index(s, s->nseries) < 0) {
		central_series_clear(r);
		return -ENOMEM;
	}
	s->nseries++;
	return 0;
}

/* The writer's series, by id, from the database. */
int central_load_series(struct pg *s)
{
	PGresult *res;
	int r = central_exec(s, "loading series",
	                     "SELECT id, host, binary_name, version, event, unit, labels"
	                     " FROM series ORDER BY id",
	                     0, NULL, false, &res);

	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		char *k[5];
		uint64_t id;

		/* ids are dense (max + 1), never deleted: a much larger one
		 * would only make series_by_id huge */
		r = central_value_u64(s, res, i, 0, (uint64_t)PQntuples(res) + 65536, "a series id",
		                      &id);
		if (r < 0)
			break;
		for (int c = 0; c < 4; c++)
			k[c] = central_str_of_bytea(res, i, 1 + c);
		k[4] = central_str_of_bytea(res, i, 6);
		r = k[0] && k[1] && k[2] && k[3] && k[4]
		            ? series_push(s, k[0], k[1], k[2], k[3], PQgetvalue(res, i, 5), k[4],
		                          (uint32_t)id)
		            : -ENOMEM;
		if (r == 0 && !store_labels_valid(k[4])) {
			central_seterr(s, "%s: store is damaged: the labels of series %" PRIu64,
			               s->base.where, id);
			r = -EIO;
		}
		for (int c = 0; c < 5; c++)
			free(k[c]);
		if (r == -ENOMEM)
			central_seterr(s, "%s: out of memory", s->base.where);
	}
	PQclear(res);
	return r;
}

/* ---- batches ------------------------------------------------------------------- */

static uint32_t next_series_id(const struct pg *s)
{
	uint32_t id = 1;

	for (uint32_t i = 0; i < s->nseries; i++)
		if (s->series[i].id >= id)
			id = s->series[i].id + 1;
	return id;
}

struct store_batch *central_batch_new(struct store *sbase)
{
	struct pg *s = pg_of(sbase);
	struct pg_batch *b;

	if (s->readonly) {
		central_seterr(s, "%s: store is open read-only", s->base.where);
		return NULL;
	}
	if (s->batch) {
		central_seterr(s, "%s: a batch is already open", s->base.where);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		central_seterr(s, "%s: out of memory", s->base.where);
		return NULL;
	}
	b->base.store = &s->base;
	b->s = s;
	central_batch_reset(b);
	s->batch = b;
	return &b->base;
}

/* Starts the batch afresh at what the store holds now. */
void central_batch_reset(struct pg_batch *b)
{
	struct pg *s = b->s;

	b->frame_base = s->nframes;
	b->node_base = s->nnodes;
	b->series_base = s->nseries;
	b->next_series_id = next_series_id(s);
	free(b->counts);
	b->counts = NULL;
	b->ncounts = b->counts_cap = 0;
	free(b->detail);
	b->detail = NULL;
	b->ndetail = b->detail_cap = 0;
	free(b->dkeys);
	b->dkeys = NULL;
	b->ndkeys = b->dkeys_cap = 0;
	b->token[0] = '\0';
	central_batch_renames_reset(b);
	for (uint32_t i = 0; i < s->nseries; i++) {
		struct cseries *r = &s->series[i];

		r->touched = r->has_add = r->has_exact = r->detailed = r->has_moments = false;
		r->samples = r->weight = r->input_bytes = r->recent = 0;
	}
}

void central_batch_free(struct store_batch *bbase)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s;

	if (!b)
		return;
	s = b->s;
	central_truncate(s, b->frame_base, b->node_base);
	if (s->nseries > b->series_base) {
		s->full_base = 0;
		while (s->nseries > b->series_base)
			central_series_clear(&s->series[--s->nseries]);
		htab_free(&s->series_tab);
		if (s->series_by_id)
			memset(s->series_by_id, 0,
			       (size_t)s->series_by_id_len * sizeof(*s->series_by_id));
		for (uint32_t i = 0; i < s->nseries; i++)
			if (central_series_index(s, i) < 0)
				break; /* lookups miss; batch_series adds again */
	}
	b->ncounts = 0;
	central_batch_reset(b);
	free(b->counts);
	free(b->renames);
	s->batch = NULL;
	free(b);
}

static bool same_base(const struct cseries *e, const char *host, const struct store_series_key *k)
{
	return !strcmp(e->event, k->event) && !strcmp(e->binary, k->binary) &&
	       !strcmp(e->version, k->version) && !strcmp(e->host, host);
}

/* Whether (host, binary, version, event) has STORE_LABEL_SETS_MAX label
 * sets that count against the bound among the series the writer knows. */
static bool labels_full(struct pg *s, const char *host, const struct store_series_key *k)
{
	uint32_t n = 0, last = 0;

	if (s->full_base && same_base(&s->series[s->full_base - 1], host, k))
		return true;
	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct cseries *e = &s->series[i];

		if (e->counted && same_base(e, host, k)) {
			n++;
			last = i;
		}
	}
	if (n < STORE_LABEL_SETS_MAX)
		return false;
	s->full_base = last + 1;
	return true;
}

/* The id of the series of key k whose host is `host` and labels `labels`
 * (canonical, "" for none), made (provisional) when new. */
static int batch_series(struct pg_batch *b, const struct store_series_key *k, const char *host,
                        const char *labels, uint32_t *id)
{
	struct pg *s = b->s;
	uint64_t h = series_key_hash(host, k->binary, k->version, k->event, labels);
	int r;

	if (s->series_tab.slots) {
		for (size_t pos = h & s->series_tab.mask; s->series_tab.slots[pos];
		     pos = (pos + 1) & s->series_tab.mask) {
			struct cseries *e = &s->series[s->series_tab.slots[pos] - 1];

			if (strcmp(e->host, host) || strcmp(e->binary, k->binary) ||
			    strcmp(e->version, k->version) || strcmp(e->event, k->event) ||
			    strcmp(e->labels, labels))
				continue;
			if (strcmp(e->unit, k->unit)) {
				central_seterr(
				        s, "series %s/%s/%s of host %s has unit \"%s\", not \"%s\"",
				        k->binary, k->version, k->event, host, e->unit, k->unit);
				return -EINVAL;
			}
			*id = e->id;
			return 0;
		}
	}
	if (store_labels_counted(labels) && labels_full(s, host, k)) {
		char *other;

		r = store_labels_other(labels, &other);
		if (r < 0)
			return r;
		r = batch_series(b, k, host, other, id);
		free(other);
		return r;
	}
	if (b->next_series_id == INT32_MAX) {
		central_seterr(s, "%s: too many series", s->base.where);
		return -EOVERFLOW;
	}
	r = series_push(s, host, k->binary, k->version, k->event, k->unit, labels,
	                b->next_series_id);
	if (r < 0)
		return r;
	*id = b->next_series_id++;
	return 0;
}

int central_batch_series(struct store_batch *bbase, const struct store_series_key *k, uint32_t *id)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	const char *host = k->host && *k->host ? k->host : s->base.host;

	if (!k->binary || !k->version || !k->event || !k->unit || !host) {
		central_seterr(s, "series key with a missing field");
		return -EINVAL;
	}
	if (!store_labels_valid(k->labels)) {
		central_seterr(s, "series %s/%s/%s: labels are not canonical", k->binary,
		               k->version, k->event);
		return -EINVAL;
	}
	return batch_series(b, k, host, k->labels ? k->labels : "", id);
}

int central_batch_frame(struct store_batch *bbase, const struct store_frame *f, uint32_t *id)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	struct hash128 h;
	uint32_t found;
	int r;

	if (f->offset && f->kind != STORE_FRAME_UNKNOWN) {
		central_seterr(s, "%s: invalid frame: an offset in a frame that has a name",
		               s->base.where);
		return -EINVAL;
	}
	central_frame_hash(f, &h);
	found = central_frame_find(s, &h);
	if (found != UINT32_MAX) {
		if (!central_frame_equal(&s->frames[found], f)) {
			char hex[33];

			central_hex(&h, hex);
			central_seterr(s,
			               "%s: host %s: frame \"%.*s\" and frame %u share the content "
			               "hash %s (a collision): refused",
			               s->base.where, s->base.host,
			               (int)(f->name ? f->name_len : 0), f->name ? f->name : "",
			               found, hex);
			return -EEXIST;
		}
		*id = found;
		return 0;
	}
	if (s->nframes >= INT32_MAX) {
		central_seterr(s, "%s: too many frames", s->base.where);
		return -EOVERFLOW;
	}
	r = central_frame_append(s, f, &h);
	if (r < 0)
		return r;
	*id = s->nframes - 1;
	return 0;
}

int central_batch_node(struct store_batch *bbase, uint32_t parent, uint32_t frame, uint32_t *id)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	struct hash128 h;
	uint32_t found;
	int r;

	if (parent >= s->nnodes || frame == 0 || frame >= s->nframes) {
		central_seterr(s, "node with an unknown parent %u or frame %u", parent, frame);
		return -EINVAL;
	}
	central_node_hash(&s->nhash[parent], &s->fhash[frame], &h);
	found = central_node_find(s, &h);
	if (found != UINT32_MAX) {
		if (s->node_parent[found] != parent || s->node_frame[found] != frame) {
			char hex[33];

			central_hex(&h, hex);
			central_seterr(
			        s,
			        "%s: host %s: stack node (%u, %u) and node %u share the content "
			        "hash %s (a collision): refused",
			        s->base.where, s->base.host, parent, frame, found, hex);
			return -EEXIST;
		}
		*id = found;
		return 0;
	}
	if (s->nnodes >= INT32_MAX) {
		central_seterr(s, "%s: too many stack nodes", s->base.where);
		return -EOVERFLOW;
	}
	r = central_node_append(s, parent, frame, &h);
	if (r < 0)
		return r;
	*id = s->nnodes - 1;
	return 0;
}

static int count_cmp(const void *a, const void *b)
{
	const struct count_ent *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return 0;
}

/* Sorts the counts by (series, bucket, node) and sums equal keys. */
void central_counts_sum(struct pg_batch *b)
{
	size_t o = 0;

	if (!b->ncounts)
		return;
	qsort(b->counts, b->ncounts, sizeof(*b->counts), count_cmp);
	for (size_t i = 1; i < b->ncounts; i++) {
		struct count_ent *e = &b->counts[o], *n = &b->counts[i];

		if (e->series == n->series && e->bucket == n->bucket && e->node == n->node) {
			e->samples += n->samples;
			e->weight += n->weight;
		} else {
			b->counts[++o] = *n;
		}
	}
	b->ncounts = o + 1;
}

static int64_t bucket_of(const struct pg *s, int64_t when)
{
	int64_t bs = s->bucket_seconds;

	return (when / bs - (when % bs < 0)) * bs;
}

int central_batch_add(struct store_batch *bbase, uint32_t series, int64_t when, uint32_t node,
                      uint64_t samples, uint64_t weight)
{
	return central_batch_count(pg_batch_of(bbase), series, when, node, samples, weight,
	                           central_us_of(when), false);
}

int central_batch_moments(struct store_batch *bbase, uint32_t series, int64_t first_us,
                          int64_t last_us)
{
	struct pg *s = pg_batch_of(bbase)->s;
	struct cseries *r = central_series_by_id(s, series);

	if (!r) {
		central_seterr(s, "moments for an unknown series %u", series);
		return -EINVAL;
	}
	if (first_us > last_us) {
		central_seterr(s, "series %u: first moment %lld after its last %lld", series,
		               (long long)first_us, (long long)last_us);
		return -EINVAL;
	}
	if (!r->has_moments || first_us < r->moments_first_us)
		r->moments_first_us = first_us;
	if (!r->has_moments || last_us > r->moments_last_us)
		r->moments_last_us = last_us;
	r->has_moments = true;
	return 0;
}

void central_series_moment(struct cseries *r, int64_t at_us, bool exact)
{
	if (exact) {
		if (!r->has_exact || at_us < r->exact_first_us)
			r->exact_first_us = at_us;
		if (!r->has_exact || at_us > r->exact_last_us)
			r->exact_last_us = at_us;
		r->has_exact = true;
	} else {
		if (!r->has_add || at_us < r->add_first_us)
			r->add_first_us = at_us;
		if (!r->has_add || at_us > r->add_last_us)
			r->add_last_us = at_us;
		r->has_add = true;
	}
}

int central_batch_count(struct pg_batch *b, uint32_t series, int64_t when, uint32_t node,
                        uint64_t samples, uint64_t weight, int64_t at_us, bool exact)
{
	struct pg *s = b->s;
	struct cseries *r = central_series_by_id(s, series);
	struct count_ent *e;

	if (!r || node >= s->nnodes) {
		central_seterr(s, "count for an unknown series %u or node %u", series, node);
		return -EINVAL;
	}
	if (when < INT64_MIN / 2 || when > INT64_MAX / 2) {
		central_seterr(s, "time %lld is out of range", (long long)when);
		return -ERANGE;
	}
	/* No sum wraps; a commit also refuses a series total past 2^64 - 1. */
	if (samples > UINT64_MAX - r->samples || weight > UINT64_MAX - r->weight) {
		central_seterr(s,
		               "series %s/%s/%s of host %s: its counts would add up to more than "
		               "2^64 - 1",
		               r->binary, r->version, r->event, r->host);
		return -EOVERFLOW;
	}
	if (b->ncounts == b->counts_cap) {
		size_t cap;
		struct count_ent *n;

		if (b->ncounts >= COUNTS_COMPACT_MIN) {
			central_counts_sum(b);
			if (b->ncounts < b->counts_cap / 2)
				goto room;
		}
		cap = b->counts_cap ? b->counts_cap * 2 : 4096;
		n = realloc(b->counts, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->counts = n;
		b->counts_cap = cap;
	}
room:
	e = &b->counts[b->ncounts++];
	e->series = series;
	e->node = node;
	e->bucket = bucket_of(s, when);
	e->samples = samples;
	e->weight = weight;
	if (!r->touched) {
		r->touched = true;
		r->first_seen = r->last_seen = when;
	}
	if (when < r->first_seen)
		r->first_seen = when;
	if (when > r->last_seen)
		r->last_seen = when;
	central_series_moment(r, at_us, exact);
	r->samples += samples;
	r->weight += weight;
	return 0;
}

int central_batch_input_bytes(struct store_batch *bbase, uint32_t series, uint64_t bytes)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct cseries *r = central_series_by_id(b->s, series);

	if (!r) {
		central_seterr(b->s, "input bytes for an unknown series %u", series);
		return -EINVAL;
	}
	if (bytes > UINT64_MAX - r->input_bytes) {
		central_seterr(b->s,
		               "series %u: its input bytes would add up to more than 2^64 - 1",
		               series);
		return -EOVERFLOW;
	}
	r->input_bytes += bytes;
	return 0;
}

int central_batch_source(struct store_batch *bbase, const char *source, uint64_t expect,
                         uint64_t upto)
{
	struct pg_batch *b = pg_batch_of(bbase);

	if (!central_source_key_ok(source)) {
		central_seterr(b->s,
		               "%s: a source store id is 32 hex digits (a clone's: and \"~\" and "
		               "16 more), not \"%s\"",
		               b->s->base.where, source);
		return -EINVAL;
	}
	if (upto > INT64_MAX || expect > INT64_MAX) {
		central_seterr(b->s, "%s: commit number %llu is out of range", b->s->base.where,
		               (unsigned long long)upto);
		return -ERANGE;
	}
	snprintf(b->source, sizeof(b->source), "%s", source);
	memset(&b->mark, 0, sizeof(b->mark));
	b->expect = expect;
	b->upto = upto;
	b->replace = true;
	return 0;
}

bool central_source_key_ok(const char *key)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(key);

	return strspn(key, hex) == 32 &&
	       (n == 32 || (n == 49 && key[32] == '~' && strspn(key + 33, hex) == 16));
}

int central_batch_lineage(struct store_batch *bbase, const struct source_mark *m)
{
	struct pg_batch *b = pg_batch_of(bbase);

	if (!b->replace || (m->split_from && !central_source_key_ok(m->split_from)) ||
	    m->split_before > INT64_MAX) {
		central_seterr(b->s, "%s: a source's mark without its source, or a bad key",
		               b->s->base.where);
		return -EINVAL;
	}
	b->mark.has_nonce = m->has_nonce;
	b->mark.nonce = m->nonce;
	b->mark.resync = m->resync;
	snprintf(b->mark.split_from, sizeof(b->mark.split_from), "%s",
	         m->split_from ? m->split_from : "");
	b->mark.split_before = m->split_before;
	return 0;
}
