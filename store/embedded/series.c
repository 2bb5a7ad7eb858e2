/*
 * series.c — series records: one per (host, binary, version, event,
 * labels), with the unit and the totals, and the bound on label sets per
 * (host, binary, version, event) (store.h, "labels").  The writer keeps every record in memory
 * behind a hash table; readers list them from disk.  Records written
 * before schema 3 name no host; they keep that form, and their host is the
 * one the "mhost" meta record names (see store/README.md, "Hosts").
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define US_PER_S 1000000

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- series in memory (writer) -------------------------------------------- */

static uint32_t base_hash(const char *host, const char *binary, const char *version,
                          const char *event)
{
	uint64_t h = XXH3_64bits(host, strlen(host));

	h = XXH3_64bits_withSeed(binary, strlen(binary), h);
	h = XXH3_64bits_withSeed(version, strlen(version), h);
	h = XXH3_64bits_withSeed(event, strlen(event), h);
	return (uint32_t)(h ^ (h >> 32));
}

/* The hash of the whole key: the base key's, then the labels. */
static uint32_t series_hash(uint32_t base_h, const char *labels)
{
	uint64_t h = XXH3_64bits_withSeed(labels, strlen(labels), base_h);

	return (uint32_t)(h ^ (h >> 32));
}

void series_rec_clear(struct series_rec *r)
{
	free(r->host);
	free(r->binary);
	free(r->version);
	free(r->event);
	free(r->unit);
	free(r->labels);
	memset(r, 0, sizeof(*r));
}

/* Series record, in one of three forms (store/README.md, "Series
 * records").  Legacy (written before schema 3; kept in that form for
 * good): binary, version, event, unit as (varint length, bytes), zigzag
 * first_seen, zigzag last_seen, varint samples, weight, input_bytes, and
 * (schema 4) zigzag first_us, zigzag last_us, varint recent.  Plain
 * (schemas 3 to 5): the same with host first, and (schema 5, only when it
 * has labels) the canonical labels as (varint length, bytes).  Compact
 * (schema 6, what this build writes for every record but legacy ones): a
 * 0 byte (a plain record starts with its host's length, never 0), the
 * five strings, zigzag first_seen, zigzag (last_seen - first_seen),
 * varint samples, the weight as varint (weight / samples) and varint
 * (weight % samples) (as varint weight when samples is 0), varint
 * input_bytes, zigzag (first_us - first_seen * 10^6), zigzag (last_us -
 * last_seen * 10^6), zigzag (samples - recent), then the labels as in a
 * plain record.  Differences wrap modulo 2^64, so every value round-trips;
 * for a series' usual values each is a byte or three where the plain form
 * spent five to eight, and the weight of a fixed period (a sampling
 * clock's nanoseconds) repeats from record to record. */
int series_encode(struct buf *b, const struct series_rec *r)
{
	size_t lh = r->legacy ? 0 : strlen(r->host);
	size_t lb = strlen(r->binary), lv = strlen(r->version);
	size_t le = strlen(r->event), lu = strlen(r->unit);
	size_t ll = r->labels ? strlen(r->labels) : 0;
	int ret = buf_reserve(b, 1 + lh + lb + lv + le + lu + ll + 12 * 10);

	if (ret < 0)
		return ret;
	if (r->legacy) {
		buf_bytes(b, r->binary, lb);
		buf_bytes(b, r->version, lv);
		buf_bytes(b, r->event, le);
		buf_bytes(b, r->unit, lu);
		buf_varint(b, zigzag(r->first_seen));
		buf_varint(b, zigzag(r->last_seen));
		buf_varint(b, r->samples);
		buf_varint(b, r->weight);
		buf_varint(b, r->input_bytes);
		buf_varint(b, zigzag(r->first_us));
		buf_varint(b, zigzag(r->last_us));
		buf_varint(b, r->recent);
		return 0;
	}
	b->p[b->len++] = SERIES_COMPACT;
	buf_bytes(b, r->host, lh);
	buf_bytes(b, r->binary, lb);
	buf_bytes(b, r->version, lv);
	buf_bytes(b, r->event, le);
	buf_bytes(b, r->unit, lu);
	buf_varint(b, zigzag(r->first_seen));
	buf_varint(b, zigzag((int64_t)((uint64_t)r->last_seen - (uint64_t)r->first_seen)));
	buf_varint(b, r->samples);
	if (r->samples) {
		buf_varint(b, r->weight / r->samples);
		buf_varint(b, r->weight % r->samples);
	} else {
		buf_varint(b, r->weight);
	}
	buf_varint(b, r->input_bytes);
	buf_varint(b,
	           zigzag((int64_t)((uint64_t)r->first_us - (uint64_t)r->first_seen * US_PER_S)));
	buf_varint(b, zigzag((int64_t)((uint64_t)r->last_us - (uint64_t)r->last_seen * US_PER_S)));
	buf_varint(b, zigzag((int64_t)(r->samples - r->recent)));
	if (ll)
		buf_bytes(b, r->labels, ll);
	return 0;
}

/* A moment in seconds as microseconds, saturating (the unseen bounds
 * INT64_MAX / INT64_MIN stay where they are). */
static int64_t seconds_us(int64_t t)
{
	if (t >= INT64_MAX / 1000000)
		return INT64_MAX;
	if (t <= INT64_MIN / 1000000)
		return INT64_MIN;
	return t * 1000000;
}

/* The numbers of a compact record into r: 0, or -1 when they are
 * damaged. */
static int compact_numbers(const uint8_t **p, const uint8_t *end, struct series_rec *r)
{
	uint64_t first, span, q, rem = 0, fu, lu, gap;

	if (get_varint(p, end, &first) < 0 || get_varint(p, end, &span) < 0 ||
	    get_varint(p, end, &r->samples) < 0 || get_varint(p, end, &q) < 0 ||
	    (r->samples && get_varint(p, end, &rem) < 0) ||
	    get_varint(p, end, &r->input_bytes) < 0 || get_varint(p, end, &fu) < 0 ||
	    get_varint(p, end, &lu) < 0 || get_varint(p, end, &gap) < 0)
		return -1;
	if (r->samples) {
		/* q * samples + rem, with rem < samples, must fit */
		if (rem >= r->samples || q > (UINT64_MAX - rem) / r->samples)
			return -1;
		r->weight = q * r->samples + rem;
	} else {
		r->weight = q;
	}
	r->first_seen = unzigzag(first);
	r->last_seen = (int64_t)((uint64_t)r->first_seen + (uint64_t)unzigzag(span));
	r->first_us = (int64_t)((uint64_t)unzigzag(fu) + (uint64_t)r->first_seen * US_PER_S);
	r->last_us = (int64_t)((uint64_t)unzigzag(lu) + (uint64_t)r->last_seen * US_PER_S);
	r->recent = r->samples - (uint64_t)unzigzag(gap);
	return 0;
}

/* Decodes into r, whose strings it mallocs; a legacy record gets `host`.
 * Returns 0, -ENOMEM, or -1 for a damaged record. */
static int series_decode(const uint8_t *p, size_t len, bool legacy, const char *host,
                         struct series_rec *r)
{
	const uint8_t *end = p + len;
	const void *v[6] = {0};
	size_t l[6] = {0};
	uint64_t first, last;
	char **dst[6] = {&r->host, &r->binary, &r->version, &r->event, &r->unit, &r->labels};
	int from = legacy ? 1 : 0;
	bool compact = false;

	memset(r, 0, sizeof(*r));
	if (!legacy && p < end && *p == SERIES_COMPACT) {
		p++;
		compact = true;
	}
	for (int i = from; i < 5; i++) {
		if (get_bytes(&p, end, &v[i], &l[i]) < 0)
			return -1;
	}
	if (compact) {
		if (compact_numbers(&p, end, r) < 0 ||
		    (p != end && (get_bytes(&p, end, &v[5], &l[5]) < 0 || l[5] == 0 || p != end)))
			return -1;
		first = zigzag(r->first_seen);
		last = zigzag(r->last_seen);
	} else if (get_varint(&p, end, &first) < 0 || get_varint(&p, end, &last) < 0 ||
	           get_varint(&p, end, &r->samples) < 0 || get_varint(&p, end, &r->weight) < 0 ||
	           get_varint(&p, end, &r->input_bytes) < 0) {
		return -1;
	} else if (p == end) {
		/* Before schema 4: the moments are the `when`s counts had. */
		r->first_us = seconds_us(unzigzag(first));
		r->last_us = seconds_us(unzigzag(last));
		r->recent = 0;
	} else {
		uint64_t fu, lu;

		if (get_varint(&p, end, &fu) < 0 || get_varint(&p, end, &lu) < 0 ||
		    get_varint(&p, end, &r->recent) < 0)
			return -1;
		if (p != end &&
		    (legacy || get_bytes(&p, end, &v[5], &l[5]) < 0 || l[5] == 0 || p != end))
			return -1;
		r->first_us = unzigzag(fu);
		r->last_us = unzigzag(lu);
	}
	if (!legacy && l[0] == 0)
		return -1; /* every schema 3 record names its host */
	r->first_seen = unzigzag(first);
	r->last_seen = unzigzag(last);
	r->legacy = legacy;
	if (legacy) {
		v[0] = host;
		l[0] = strlen(host);
	}
	for (int i = 0; i < 6; i++) {
		*dst[i] = dup_bytes(v[i], l[i]);
		if (!*dst[i]) {
			series_rec_clear(r);
			return -ENOMEM;
		}
	}
	if ((l[5] && memchr(r->labels, 0, l[5])) || !store_labels_valid(r->labels)) {
		series_rec_clear(r);
		return -1;
	}
	return 0;
}

/* ---- hosts of records older than schema 3 ----------------------------------- */

/* The machine's name, as store.c gives it to store_host(): the host of
 * series written before schema 3 in a store no writer has upgraded yet. */
static char *machine_name(void)
{
	char name[256] = "";
	bool ok = gethostname(name, sizeof(name) - 1) == 0 && name[0];

	for (const unsigned char *p = (const unsigned char *)name; ok && *p; p++)
		ok = *p != '/' && *p >= 0x20 && *p != 0x7f;
	return strdup(ok ? name : "localhost");
}

int host_meta_load(struct rdb *s)
{
	char *rerr = NULL;
	size_t len = 0;
	char *val = rocksdb_get_cf(s->db, s->ropts, s->cf[CF_DEFAULT], META_HOST, strlen(META_HOST),
	                           &len, &rerr);
	char *host;

	if (rerr)
		return rdb_fail(s, rerr, "reading meta");
	if (!val) {
		/* Never upgraded (every record is legacy), or created with
		 * schema 3 (none is). */
		if (s->host_from && !s->legacy_host && !(s->legacy_host = machine_name()))
			return -ENOMEM;
		return 0;
	}
	if (len < 5 || memchr(val + 4, '\0', len - 4)) {
		rocksdb_free(val);
		seterr(s, "%s: store is damaged: meta host", s->dir);
		return -EIO;
	}
	host = dup_bytes(val + 4, len - 4);
	if (!host) {
		rocksdb_free(val);
		return -ENOMEM;
	}
	s->host_from = get_be32((const uint8_t *)val);
	free(s->legacy_host);
	s->legacy_host = host;
	rocksdb_free(val);
	return 0;
}

int schema_upgrade(struct rdb *s)
{
	rocksdb_writebatch_t *wb;
	size_t hl = strlen(s->legacy_host ? s->legacy_host : "");
	uint8_t schema[4], *host;
	char *rerr = NULL;
	int r = 0;

	if (s->schema >= STORE_SCHEMA_VERSION)
		return 0;
	if (s->schema < 3 && !s->legacy_host) /* host_meta_load() gave it one */
		return -EINVAL;
	host = malloc(4 + hl);
	wb = rocksdb_writebatch_create();
	if (!host || !wb) {
		r = -ENOMEM;
		seterr(s, "%s: out of memory", s->dir);
		goto out;
	}
	/* Schema 4 adds detail records and the series records' moments,
	 * schema 5 the records' labels, schema 6 unnamed frames' offsets;
	 * what older ones wrote reads as it is (no detail, no labels, offset
	 * 0). */
	put_be32(schema, STORE_SCHEMA_VERSION);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_SCHEMA, strlen(META_SCHEMA),
	                          (char *)schema, 4);
	if (s->schema < 3) {
		put_be32(host, s->nseries);
		memcpy(host + 4, s->legacy_host, hl);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_HOST, strlen(META_HOST),
		                          (char *)host, 4 + hl);
	}
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "writing meta");
		goto out;
	}
	if (s->schema < 3)
		s->host_from = s->nseries;
	s->schema = STORE_SCHEMA_VERSION;
out:
	if (wb)
		rocksdb_writebatch_destroy(wb);
	free(host);
	return r;
}

int series_rewrite_all(struct rdb *s)
{
	rocksdb_writebatch_t *wb;
	struct buf buf = {0};
	char *rerr = NULL;
	int r;

	if (s->readonly || s->schema < 3 || s->nseries <= 1)
		return 0;
	r = schema_upgrade(s);
	if (r < 0)
		return r;
	wb = rocksdb_writebatch_create();
	if (!wb) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	for (uint32_t id = 1; id < s->nseries; id++) {
		uint8_t key[5];

		if (s->series[id].legacy)
			continue;
		buf.len = 0;
		r = series_encode(&buf, &s->series[id]);
		if (r < 0) {
			seterr(s, "%s: out of memory", s->dir);
			goto out;
		}
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "rewriting series records");
out:
	free(buf.p);
	rocksdb_writebatch_destroy(wb);
	return r;
}

/* The `base` series of (host, binary, version, event) of record r, or 0
 * when none is indexed. */
static uint32_t base_find(const struct rdb *s, const struct series_rec *r, uint32_t base_h)
{
	if (!s->base_tab.slots)
		return 0;
	for (size_t pos = base_h & s->base_tab.mask; s->base_tab.slots[pos].id;
	     pos = (pos + 1) & s->base_tab.mask) {
		const struct series_rec *b = &s->series[s->base_tab.slots[pos].id];

		if (s->base_tab.slots[pos].h == base_h && !strcmp(b->host, r->host) &&
		    !strcmp(b->binary, r->binary) && !strcmp(b->version, r->version) &&
		    !strcmp(b->event, r->event))
			return s->base_tab.slots[pos].id;
	}
	return 0;
}

/* Indexes series `id` (its record filled in) by its whole key and under
 * its base, counting its labels against the bound. */
static int series_index(struct rdb *s, uint32_t id)
{
	struct series_rec *r = &s->series[id];
	size_t pos;
	int ret = idtab_reserve(&s->series_tab);

	if (ret == 0)
		ret = idtab_reserve(&s->base_tab);
	if (ret < 0)
		return ret;
	r->base_h = base_hash(r->host, r->binary, r->version, r->event);
	r->h = series_hash(r->base_h, r->labels);
	pos = r->h & s->series_tab.mask;
	while (s->series_tab.slots[pos].id)
		pos = (pos + 1) & s->series_tab.mask;
	idtab_put(&s->series_tab, pos, id, r->h);
	r->base = base_find(s, r, r->base_h);
	if (!r->base) {
		r->base = id;
		pos = r->base_h & s->base_tab.mask;
		while (s->base_tab.slots[pos].id)
			pos = (pos + 1) & s->base_tab.mask;
		idtab_put(&s->base_tab, pos, id, r->base_h);
	}
	if (store_labels_counted(r->labels))
		s->series[r->base].sets++;
	return 0;
}

void series_unindex(struct rdb *s, uint32_t id)
{
	struct series_rec *r = &s->series[id];

	idtab_remove(&s->series_tab, id, r->h);
	if (r->base && store_labels_counted(r->labels))
		s->series[r->base].sets--;
	if (r->base == id)
		idtab_remove(&s->base_tab, id, r->base_h);
	series_rec_clear(r);
}

int series_grow(struct rdb *s)
{
	uint32_t cap;
	struct series_rec *n;

	if (s->nseries < s->series_cap)
		return 0;
	if (s->nseries == UINT32_MAX)
		return -EOVERFLOW;
	cap = s->series_cap ? s->series_cap * 2 : 16;
	if (cap < s->series_cap)
		cap = UINT32_MAX;
	n = realloc(s->series, (size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->series = n;
	s->series_cap = cap;
	return 0;
}

int load_series(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen)
{
	int r = series_grow(s);

	if (r < 0)
		return r;
	r = series_decode(v, vlen, id < s->host_from, s->legacy_host, &s->series[id]);
	if (r == -1) {
		seterr(s, "%s: store is damaged: series %u", s->dir, id);
		return -EIO;
	}
	if (r < 0)
		return r;
	s->nseries++;
	r = series_index(s, id);
	return r < 0 ? r : 1;
}

/* The id of the series of key k whose host is `host` and labels `labels`
 * (canonical, "" for none), made when new. */
static int batch_series(struct rdb *s, const struct store_series_key *k, const char *host,
                        const char *labels, uint32_t *id)
{
	struct series_rec *r, key = {.host = (char *)host,
	                             .binary = (char *)k->binary,
	                             .version = (char *)k->version,
	                             .event = (char *)k->event};
	uint32_t base_h = base_hash(host, k->binary, k->version, k->event);
	uint32_t h = series_hash(base_h, labels);
	size_t pos;
	int ret;

	ret = idtab_reserve(&s->series_tab);
	if (ret < 0)
		return ret;
	for (pos = h & s->series_tab.mask; s->series_tab.slots[pos].id;
	     pos = (pos + 1) & s->series_tab.mask) {
		if (s->series_tab.slots[pos].h != h)
			continue;
		r = &s->series[s->series_tab.slots[pos].id];
		if (strcmp(r->host, host) || strcmp(r->binary, k->binary) ||
		    strcmp(r->version, k->version) || strcmp(r->event, k->event) ||
		    strcmp(r->labels, labels))
			continue;
		if (strcmp(r->unit, k->unit)) {
			seterr(s, "series %s/%s/%s of host %s has unit \"%s\", not \"%s\"",
			       k->binary, k->version, k->event, host, r->unit, k->unit);
			return -EINVAL;
		}
		*id = s->series_tab.slots[pos].id;
		return 0;
	}
	if (store_labels_counted(labels)) {
		uint32_t base = base_find(s, &key, base_h);

		if (base && s->series[base].sets >= STORE_LABEL_SETS_MAX) {
			char *other;

			ret = store_labels_other(labels, &other);
			if (ret < 0)
				return ret;
			ret = batch_series(s, k, host, other, id);
			free(other);
			return ret;
		}
	}
	ret = series_grow(s);
	if (ret < 0)
		return ret;
	r = &s->series[s->nseries];
	memset(r, 0, sizeof(*r));
	r->host = strdup(host);
	r->binary = strdup(k->binary);
	r->version = strdup(k->version);
	r->event = strdup(k->event);
	r->unit = strdup(k->unit);
	r->labels = strdup(labels);
	if (!r->host || !r->binary || !r->version || !r->event || !r->unit || !r->labels) {
		series_rec_clear(r);
		return -ENOMEM;
	}
	r->legacy = s->nseries < s->host_from; /* never: batches upgrade first */
	r->first_seen = INT64_MAX;
	r->last_seen = INT64_MIN;
	r->first_us = INT64_MAX;
	r->last_us = INT64_MIN;
	ret = series_index(s, s->nseries);
	if (ret < 0) {
		series_rec_clear(r);
		return ret;
	}
	*id = s->nseries++;
	return 0;
}

int rdb_batch_series(struct store_batch *bbase, const struct store_series_key *k, uint32_t *id)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	const char *host = k->host && *k->host ? k->host : s->base.host;

	if (!k->binary || !k->version || !k->event || !k->unit) {
		seterr(s, "series key with a missing field");
		return -EINVAL;
	}
	if (!store_labels_valid(k->labels)) {
		seterr(s, "series %s/%s/%s: labels are not canonical", k->binary, k->version,
		       k->event);
		return -EINVAL;
	}
	return batch_series(s, k, host, k->labels ? k->labels : "", id);
}

int rdb_series_list(struct store *sbase, struct store_series **out, size_t *n)
{
	struct rdb *s = rdb_of(sbase);
	rocksdb_iterator_t *it;
	struct store_series *list = NULL;
	size_t len = 0, cap = 0;
	char *rerr = NULL;
	int r = 0;

	*out = NULL;
	*n = 0;
	if (need_db(s) < 0)
		return -EIO;
	/* A writer may have upgraded the store since a reader opened it. */
	if (s->readonly && (r = host_meta_load(s)) < 0)
		return r;
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it)
		return -ENOMEM;
	for (rocksdb_iter_seek(it, (const char[]){KEY_SERIES}, 1); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		struct series_rec rec;
		struct store_series *e;

		if (klen && k[0] != KEY_SERIES)
			break;

		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct store_series *nl = realloc(list, nc * sizeof(*nl));

			if (!nl) {
				r = -ENOMEM;
				goto fail;
			}
			list = nl;
			cap = nc;
		}
		if (klen != 5) {
			r = -1;
		} else {
			uint32_t id = get_be32(k + 1);

			r = series_decode(v, vlen, id < s->host_from, s->legacy_host, &rec);
		}
		if (r == -1) {
			seterr(s, "%s: store is damaged: a series record", s->dir);
			r = -EIO;
			goto fail;
		}
		if (r < 0)
			goto fail;
		if (!rec.samples) {
			/* Emptied by store_prune(): not a series any more. */
			series_rec_clear(&rec);
			continue;
		}
		e = &list[len++];
		e->host = rec.host;
		e->id = get_be32(k + 1);
		e->binary = rec.binary;
		e->version = rec.version;
		e->event = rec.event;
		e->unit = rec.unit;
		e->first_seen = rec.samples ? rec.first_seen : 0;
		e->last_seen = rec.samples ? rec.last_seen : 0;
		e->samples = rec.samples;
		e->weight = rec.weight;
		e->input_bytes = rec.input_bytes;
		e->first_us = rec.first_us;
		e->last_us = rec.last_us;
		e->recent_samples = rec.recent;
		e->labels = rec.labels;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "listing series");
		goto fail;
	}
	rocksdb_iter_destroy(it);
	if (len)
		qsort(list, len, sizeof(*list), store_series_cmp);
	*out = list;
	*n = len;
	return 0;
fail:
	rocksdb_iter_destroy(it);
	store_series_free(list, len);
	return r;
}
