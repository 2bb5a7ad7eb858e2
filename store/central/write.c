/*
 * write.c — the rows a commit writes, inside commit.c's transaction: the
 * batch's new frames and nodes and its counts rows by binary COPY, the
 * recent tier's detail blocks, the input bytes and totals of its series
 * (a copy replacing what its source sent before, so that a repeated copy
 * adds nothing).
 */
#include "central-internal.h"
#include "counts-blob-internal.h"
#include "samples-block-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OID_INT4 23

/* ---- binary COPY ---------------------------------------------------------- */

struct cbuf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void cb_need(struct cbuf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->failed || b->len + n <= b->cap)
		return;
	cap = b->cap ? b->cap : 65536;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void cb_raw(struct cbuf *b, const void *p, size_t n)
{
	cb_need(b, n);
	if (b->failed)
		return;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void cb_16(struct cbuf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	cb_raw(b, x, 2);
}

static void cb_32(struct cbuf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	cb_raw(b, x, 4);
}

static void cb_64(struct cbuf *b, uint64_t v)
{
	cb_32(b, (uint32_t)(v >> 32));
	cb_32(b, (uint32_t)v);
}

static void f_int4(struct cbuf *b, uint32_t v)
{
	cb_32(b, 4);
	cb_32(b, v);
}

static void f_int8(struct cbuf *b, uint64_t v)
{
	cb_32(b, 8);
	cb_64(b, v);
}

static void f_bytes(struct cbuf *b, const void *p, size_t n)
{
	cb_32(b, (uint32_t)n);
	cb_raw(b, p, n);
}

static void copy_start(struct cbuf *b)
{
	cb_raw(b, "PGCOPY\n\377\r\n", 11);
	cb_32(b, 0); /* flags */
	cb_32(b, 0); /* header extension */
}

static void copy_end(struct cbuf *b)
{
	cb_16(b, 0xffff);
}

/* The entries of one (series, bucket), sorted by node with no node twice,
 * as one bytea: the counts blob of ../counts-blob-internal.h. */
static void f_counts(struct cbuf *b, const struct count_ent *e, size_t n)
{
	size_t at, len = 0;

	cb_32(b, 0); /* the length, set below */
	cb_need(b, n * COUNT_ENTRY_MAX);
	if (b->failed)
		return;
	at = b->len - 4;
	for (size_t i = 0; i < n; i++)
		len += count_entry_put(b->p + b->len + len,
		                       i ? e[i].node - e[i - 1].node : e[i].node, e[i].samples,
		                       e[i].weight);
	b->len += len;
	b->p[at] = (uint8_t)(len >> 24);
	b->p[at + 1] = (uint8_t)(len >> 16);
	b->p[at + 2] = (uint8_t)(len >> 8);
	b->p[at + 3] = (uint8_t)len;
}

/* A series id the server sent. */
int central_series_id(struct pg *s, const PGresult *res, int row, int col, uint32_t *id)
{
	uint64_t v;
	int r = central_value_u64(s, res, row, col, INT32_MAX, "a series id", &v);

	*id = (uint32_t)v;
	return r;
}

/* ---- the rows of a commit --------------------------------------------------------- */

static uint32_t final_series(const struct pg_batch *b, const uint32_t *ids, uint32_t id)
{
	const struct cseries *e = central_series_by_id(b->s, id);
	uint32_t idx = (uint32_t)(e - b->s->series);

	return idx >= b->series_base ? ids[idx - b->series_base] : id;
}

/* An array of n byte strings (bytea[]): get(s, id, &len) for ids
 * first..first+n-1. */
static void f_bytes_array(struct cbuf *b, const struct pg *s, uint32_t first, uint32_t n,
                          const void *(*get)(const struct pg *, uint32_t, size_t *))
{
	size_t total = 20;

	for (uint32_t i = 0; i < n; i++) {
		size_t len;

		get(s, first + i, &len);
		total += 4 + len;
	}
	cb_32(b, (uint32_t)total);
	cb_32(b, 1);
	cb_32(b, 0);
	cb_32(b, 17); /* bytea */
	cb_32(b, n);
	cb_32(b, 1);
	for (uint32_t i = 0; i < n; i++) {
		size_t len;
		const void *p = get(s, first + i, &len);

		f_bytes(b, p, len);
	}
}

static const void *get_name(const struct pg *s, uint32_t id, size_t *len)
{
	*len = s->frames[id].name_len;
	return s->frames[id].name;
}

static const void *get_module(const struct pg *s, uint32_t id, size_t *len)
{
	*len = s->frames[id].module_len;
	return s->frames[id].module;
}

static const void *get_build_id(const struct pg *s, uint32_t id, size_t *len)
{
	*len = s->frames[id].build_id_len;
	return s->frames[id].build_id;
}

static const void *get_file(const struct pg *s, uint32_t id, size_t *len)
{
	*len = s->frames[id].file_len;
	return s->frames[id].file;
}

/* An int2[] / int4[] of n values, get(s, id) for ids first.. . */
static void f_int_array(struct cbuf *b, const struct pg *s, uint32_t first, uint32_t n, int elem,
                        uint32_t (*get)(const struct pg *, uint32_t))
{
	cb_32(b, 20 + n * (4 + (uint32_t)elem));
	cb_32(b, 1);
	cb_32(b, 0);
	cb_32(b, elem == 2 ? 21 : OID_INT4);
	cb_32(b, n);
	cb_32(b, 1);
	for (uint32_t i = 0; i < n; i++) {
		cb_32(b, (uint32_t)elem);
		if (elem == 2)
			cb_16(b, (uint16_t)get(s, first + i));
		else
			cb_32(b, get(s, first + i));
	}
}

static uint32_t get_kind(const struct pg *s, uint32_t id)
{
	return s->frames[id].kind;
}

static uint32_t get_line(const struct pg *s, uint32_t id)
{
	return s->frames[id].line;
}

static uint32_t get_parent(const struct pg *s, uint32_t id)
{
	return s->node_parent[id];
}

static uint32_t get_frame(const struct pg *s, uint32_t id)
{
	return s->node_frame[id];
}

/* Whether a frame of the run at..at+n-1 has an offset. */
static bool run_has_offsets(const struct pg *s, uint32_t at, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (s->frames[at + i].offset)
			return true;
	return false;
}

/* A run's offsets (schema 6): an int8[] of n values. */
static void f_offsets(struct cbuf *b, const struct pg *s, uint32_t first, uint32_t n)
{
	cb_32(b, 20 + n * 12);
	cb_32(b, 1);
	cb_32(b, 0);
	cb_32(b, 20); /* int8 */
	cb_32(b, n);
	cb_32(b, 1);
	for (uint32_t i = 0; i < n; i++) {
		cb_32(b, 8);
		cb_64(b, s->frames[first + i].offset);
	}
}

/* The batch's new frames and nodes, as runs of up to CENTRAL_RUN. */
int central_copy_frames_nodes(struct pg_batch *b)
{
	struct pg *s = b->s;
	struct cbuf c = {0};
	int r = 0;

	if (s->nframes > b->frame_base) {
		copy_start(&c);
		for (uint32_t at = b->frame_base, n; at < s->nframes; at += n) {
			n = s->nframes - at < CENTRAL_RUN ? s->nframes - at : CENTRAL_RUN;
			cb_16(&c, 7);
			f_int4(&c, at);
			f_int_array(&c, s, at, n, 2, get_kind);
			f_int_array(&c, s, at, n, 4, get_line);
			f_bytes_array(&c, s, at, n, get_name);
			f_bytes_array(&c, s, at, n, get_module);
			f_bytes_array(&c, s, at, n, get_build_id);
			f_bytes_array(&c, s, at, n, get_file);
		}
		copy_end(&c);
		r = c.failed ? -ENOMEM
		             : central_copy_in(s, "writing frames",
		                               "COPY frame_runs FROM STDIN (FORMAT binary)", c.p,
		                               c.len);
		c.len = 0;
	}
	if (r == 0 && run_has_offsets(s, b->frame_base, s->nframes - b->frame_base)) {
		copy_start(&c);
		for (uint32_t at = b->frame_base, n; at < s->nframes; at += n) {
			n = s->nframes - at < CENTRAL_RUN ? s->nframes - at : CENTRAL_RUN;
			if (!run_has_offsets(s, at, n))
				continue;
			cb_16(&c, 2);
			f_int4(&c, at);
			f_offsets(&c, s, at, n);
		}
		copy_end(&c);
		r = c.failed ? -ENOMEM
		             : central_copy_in(s, "writing frame offsets",
		                               "COPY frame_offsets FROM STDIN (FORMAT binary)", c.p,
		                               c.len);
		c.len = 0;
	}
	if (r == 0 && s->nnodes > b->node_base) {
		copy_start(&c);
		for (uint32_t at = b->node_base, n; at < s->nnodes; at += n) {
			n = s->nnodes - at < CENTRAL_RUN ? s->nnodes - at : CENTRAL_RUN;
			cb_16(&c, 3);
			f_int4(&c, at);
			f_int_array(&c, s, at, n, 4, get_parent);
			f_int_array(&c, s, at, n, 4, get_frame);
		}
		copy_end(&c);
		r = c.failed ? -ENOMEM
		             : central_copy_in(s, "writing stack nodes",
		                               "COPY node_runs FROM STDIN (FORMAT binary)", c.p,
		                               c.len);
	}
	free(c.p);
	return r;
}

/* A text array of n values, "{a,b,...}"; NULL on ENOMEM. */
struct tarr {
	char *p;
	size_t len, cap;
};

static void ta_add(struct tarr *a, const char *v)
{
	size_t n = strlen(v);

	if (a->len + n + 3 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		char *p;

		while (cap < a->len + n + 3)
			cap *= 2;
		p = realloc(a->p, cap);
		if (!p) {
			free(a->p);
			a->p = NULL;
			a->cap = SIZE_MAX / 2; /* stays failed */
			return;
		}
		a->p = p;
		a->cap = cap;
	}
	if (!a->p)
		return;
	a->p[a->len] = a->len == 0 ? '{' : ',';
	a->len++;
	if (n)
		memcpy(a->p + a->len, v, n);
	a->len += n;
	a->p[a->len] = '}';
	a->p[a->len + 1] = '\0';
}

static const char *ta_str(struct tarr *a)
{
	if (!a->cap)
		return "{}";
	return a->p;
}

/* Per series touched (by final id): what the commit adds to its row. */
struct delta {
	uint32_t id;
	bool touched, timed;
	int64_t first, last;
	int64_t first_us, last_us;             /* when timed */
	uint64_t samples, weight, input_bytes; /* added */
	uint64_t recent;                       /* samples whose detail is added */
	uint64_t less_samples, less_weight;    /* taken by replaced rows */
	uint64_t less_input;                   /* the source's bytes sent before */
	uint64_t less_recent;                  /* detail of replaced rows */
};

/* A series' first and last moment in the batch: the exact moments of
 * samples and the `when`s of counts, except that in a copy (whose counts
 * come at their bucket's start) a bucket's `when` gives way to the exact
 * moments of the detail that came with it, and every `when` to the
 * source's moments when the copy gave them (batch_moments), as the
 * embedded store does. */
static void batch_moments(const struct pg_batch *b, const struct cseries *e, int64_t *first,
                          int64_t *last)
{
	int64_t bus = (int64_t)b->s->bucket_seconds * 1000000;

	*first = INT64_MAX;
	*last = INT64_MIN;
	if (e->has_moments) {
		*first = e->moments_first_us;
		*last = e->moments_last_us;
	} else if (e->has_add) {
		*first = e->add_first_us;
		*last = e->add_last_us;
	}
	if (!e->has_exact)
		return;
	if (b->replace && e->has_add && !e->has_moments) {
		if (e->exact_first_us >= e->add_first_us &&
		    e->exact_first_us - bus < e->add_first_us)
			*first = e->exact_first_us;
		if (e->exact_last_us >= e->add_last_us && e->exact_last_us - bus < e->add_last_us)
			*last = e->exact_last_us;
	}
	if (e->exact_first_us < *first)
		*first = e->exact_first_us;
	if (e->exact_last_us > *last)
		*last = e->exact_last_us;
}

static struct delta *delta_of(struct delta *d, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].id == id)
			return &d[i];
	return NULL;
}

/* A copy's input bytes: each series' total in the source, which replaces
 * what the same source sent before (source_input); d[].less_input gets
 * that earlier value, so the series' total moves by the difference and a
 * repeated copy adds nothing. */
static int replace_input_bytes(struct pg *s, struct delta *d, size_t nd, const char *source_id)
{
	struct tarr ids = {0}, bytes = {0};
	char v[32];
	PGresult *res;
	int r;

	for (size_t i = 0; i < nd; i++) {
		if (!d[i].input_bytes)
			continue;
		snprintf(v, sizeof(v), "%" PRIu32, d[i].id);
		ta_add(&ids, v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].input_bytes);
		ta_add(&bytes, v);
	}
	if (!ids.cap) /* none */
		return 0;
	if (!ids.p || !bytes.p) {
		free(ids.p);
		free(bytes.p);
		return -ENOMEM;
	}
	{
		const char *vals[3] = {ids.p, bytes.p, source_id};

		r = central_exec(
		        s, "recording a source's input bytes",
		        "WITH n AS (SELECT * FROM unnest($1::int4[], $2::numeric[])"
		        " AS n(series, bytes)),"
		        " o AS (SELECT n.series, coalesce(i.input_bytes, 0) AS old FROM n"
		        " LEFT JOIN source_input i ON i.source = $3 AND i.series = n.series),"
		        " w AS (INSERT INTO source_input SELECT $3, series, bytes FROM n"
		        " ON CONFLICT (source, series) DO UPDATE"
		        " SET input_bytes = EXCLUDED.input_bytes)"
		        " SELECT series, old FROM o",
		        3, vals, false, &res);
	}
	free(ids.p);
	free(bytes.p);
	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		uint32_t id;
		uint64_t old;
		struct delta *x;

		r = central_series_id(s, res, i, 0, &id);
		if (r == 0)
			r = central_value_u64(s, res, i, 1, UINT64_MAX, "a source's input bytes",
			                      &old);
		x = r == 0 ? delta_of(d, nd, id) : NULL;
		if (x)
			x->less_input = old;
	}
	PQclear(res);
	return r;
}

static int detail_cmp(const void *a, const void *b)
{
	const struct detail_ent *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	return samples_block_cmp(&x->smp, &y->smp);
}

/* The recent tier's rows: in a copy, the rows the same source gave each
 * (series, bucket) it sends detail for (batch_detail, also with none)
 * go first, their samples leaving the series' series_recent (d[]);
 * then one row per (series, bucket) of the batch's detail, its samples
 * in the block's order. */
static int write_detail(struct pg_batch *b, const uint32_t *ids, int64_t commit,
                        const char *source_id, struct delta *d, size_t nd)
{
	struct pg *s = b->s;
	struct cbuf c = {0};
	struct tarr ks = {0}, kb = {0};
	struct store_sample *v = NULL;
	size_t vcap = 0;
	char num[32];
	int r = 0;

	if (!b->ndetail && !b->ndkeys)
		return 0;
	/* The sort runs again at each attempt: a renumbering after other
	 * writers moves nodes. */
	if (b->ndetail > 1)
		qsort(b->detail, b->ndetail, sizeof(*b->detail), detail_cmp);
	for (size_t i = 0; b->replace && i < b->ndkeys; i++) {
		snprintf(num, sizeof(num), "%" PRIu32, final_series(b, ids, b->dkeys[i].series));
		ta_add(&ks, num);
		snprintf(num, sizeof(num), "%" PRId64, b->dkeys[i].bucket);
		ta_add(&kb, num);
	}
	copy_start(&c);
	for (size_t i = 0, n; i < b->ndetail; i += n) {
		const struct detail_ent *e = &b->detail[i];
		int64_t bucket = central_bucket_of_us(s, e->smp.time_us);
		uint32_t series = final_series(b, ids, e->series);
		uint8_t *block;
		size_t len;

		for (n = 1; i + n < b->ndetail && e[n].series == e->series &&
		            central_bucket_of_us(s, e[n].smp.time_us) == bucket;
		     n++)
			;
		if (n > INT32_MAX) {
			central_seterr(s, "%s: more than 2^31 - 1 samples in one bucket",
			               s->base.where);
			r = -EOVERFLOW;
			goto out;
		}
		if (n > vcap) {
			struct store_sample *nv = realloc(v, n * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				goto out;
			}
			v = nv;
			vcap = n;
		}
		for (size_t k = 0; k < n; k++)
			v[k] = e[k].smp;
		r = samples_block_encode(v, n, bucket * 1000000,
		                         (int64_t)s->bucket_seconds * 1000000, &block, &len);
		if (r < 0) {
			central_seterr(s, "%s: encoding the samples of series %u at %lld: %s",
			               s->base.where, series, (long long)bucket, strerror(-r));
			goto out;
		}
		cb_16(&c, 6);
		f_int4(&c, series);
		f_int8(&c, (uint64_t)bucket);
		f_int4(&c, (uint32_t)strtoul(source_id, NULL, 10)); /* 0: written directly */
		f_int8(&c, (uint64_t)commit);
		f_int4(&c, (uint32_t)n);
		f_bytes(&c, block, len);
		free(block);
		if (b->replace) {
			/* a source keeps one row per (series, bucket) */
			snprintf(num, sizeof(num), "%" PRIu32, series);
			ta_add(&ks, num);
			snprintf(num, sizeof(num), "%" PRId64, bucket);
			ta_add(&kb, num);
		}
	}
	copy_end(&c);
	if (c.failed || (b->replace && ks.cap && (!ks.p || !kb.p))) {
		r = -ENOMEM;
		goto out;
	}
	if (b->replace && ks.cap) {
		const char *vals[3] = {ks.p, kb.p, source_id};
		PGresult *res;

		r = central_exec(s, "replacing copied detail",
		                 "DELETE FROM samples x USING unnest($1::int4[], $2::int8[]) AS"
		                 " k(series, bucket) WHERE x.source = $3 AND x.series = k.series"
		                 " AND x.bucket = k.bucket RETURNING x.series, x.n",
		                 3, vals, false, &res);
		if (r < 0)
			goto out;
		for (int i = 0; i < PQntuples(res) && r == 0; i++) {
			uint32_t id;
			uint64_t n;
			struct delta *x;

			r = central_series_id(s, res, i, 0, &id);
			if (r == 0)
				r = central_value_u64(s, res, i, 1, INT32_MAX,
				                      "a replaced row's samples", &n);
			x = r == 0 ? delta_of(d, nd, id) : NULL;
			if (x)
				x->less_recent += n;
		}
		PQclear(res);
		if (r < 0)
			goto out;
	}
	if (b->ndetail)
		r = central_copy_in(s, "writing samples", "COPY samples FROM STDIN (FORMAT binary)",
		                    c.p, c.len);
out:
	free(v);
	free(ks.p);
	free(kb.p);
	free(c.p);
	return r;
}

/* One delta per series the batch touched: the known ones and its own,
 * by final id.  *d is the caller's to free. */
static int series_deltas(struct pg_batch *b, const uint32_t *ids, struct delta **dp, size_t *ndp)
{
	struct pg *s = b->s;
	struct delta *d;
	size_t nd = 0;

	d = calloc(s->nseries + 1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct cseries *e = &s->series[i];

		if (!e->touched && !e->input_bytes && !e->has_exact && !e->detailed &&
		    !e->has_moments)
			continue;
		d[nd].id = final_series(b, ids, e->id);
		d[nd].touched = e->touched;
		d[nd].first = e->first_seen;
		d[nd].last = e->last_seen;
		d[nd].timed = e->has_add || e->has_exact || e->has_moments;
		batch_moments(b, e, &d[nd].first_us, &d[nd].last_us);
		d[nd].samples = e->samples;
		d[nd].weight = e->weight;
		d[nd].input_bytes = e->input_bytes;
		d[nd].recent = e->recent;
		nd++;
	}
	*dp = d;
	*ndp = nd;
	return 0;
}

/* The batch's counts as binary COPY rows, one per (series, bucket); in a
 * copy, each row's key also goes to ks and kb. */
static void encode_counts(struct pg_batch *b, const uint32_t *ids, int64_t commit,
                          const char *source_id, struct cbuf *c, struct tarr *ks, struct tarr *kb)
{
	char v[32];

	copy_start(c);
	for (size_t i = 0; i < b->ncounts;) {
		const struct count_ent *e = &b->counts[i];
		size_t n = 1;
		uint64_t ts = e->samples, tw = e->weight;
		uint32_t series = final_series(b, ids, e->series);

		while (i + n < b->ncounts && e[n].series == e->series && e[n].bucket == e->bucket) {
			ts += e[n].samples;
			tw += e[n].weight;
			n++;
		}
		cb_16(c, 7);
		f_int4(c, series);
		f_int8(c, (uint64_t)e->bucket);
		f_int4(c, (uint32_t)strtoul(source_id, NULL, 10)); /* 0: written directly */
		f_int8(c, (uint64_t)commit);
		f_counts(c, e, n);
		f_int8(c, ts);
		f_int8(c, tw);
		if (b->replace) {
			snprintf(v, sizeof(v), "%" PRIu32, series);
			ta_add(ks, v);
			snprintf(v, sizeof(v), "%" PRId64, e->bucket);
			ta_add(kb, v);
		}
		i += n;
	}
	copy_end(c);
}

/* Each (series, bucket) the copy carries replaces the one the same
 * source sent before; the totals in d[] lose what it held. */
static int delete_replaced_counts(struct pg *s, struct tarr *ks, struct tarr *kb,
                                  const char *source_id, struct delta *d, size_t nd)
{
	const char *vals[3] = {ta_str(ks), ta_str(kb), source_id};
	PGresult *res;
	int r;

	r = central_exec(s, "replacing copied counts",
	                 "DELETE FROM counts c USING unnest($1::int4[], $2::int8[]) AS"
	                 " k(series, bucket) WHERE c.source = $3 AND c.series = k.series"
	                 " AND c.bucket = k.bucket"
	                 " RETURNING c.series, c.total_samples, c.total_weight",
	                 3, vals, false, &res);
	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		uint32_t id;
		int64_t ts, tw;
		struct delta *x;

		r = central_series_id(s, res, i, 0, &id);
		if (r == 0)
			r = central_value_i64(s, res, i, 1, "a replaced row's samples", &ts);
		if (r == 0)
			r = central_value_i64(s, res, i, 2, "a replaced row's weight", &tw);
		x = r == 0 ? delta_of(d, nd, id) : NULL;
		if (x) {
			/* counts hold u64 values as int8 bit patterns */
			x->less_samples += (uint64_t)ts;
			x->less_weight += (uint64_t)tw;
		}
	}
	PQclear(res);
	return r;
}

/* The counts rows and, in a copy, the deletion of the rows they replace
 * first. */
static int copy_counts(struct pg_batch *b, const uint32_t *ids, int64_t commit,
                       const char *source_id, struct delta *d, size_t nd)
{
	struct pg *s = b->s;
	struct cbuf c = {0};
	struct tarr ks = {0}, kb = {0};
	int r = 0;

	encode_counts(b, ids, commit, source_id, &c, &ks, &kb);
	if (c.failed || (b->replace && b->ncounts && (!ks.p || !kb.p))) {
		r = -ENOMEM;
		goto out;
	}
	if (b->replace && b->ncounts) {
		r = delete_replaced_counts(s, &ks, &kb, source_id, d, nd);
		if (r < 0)
			goto out;
	}
	if (b->ncounts)
		r = central_copy_in(s, "writing counts", "COPY counts FROM STDIN (FORMAT binary)",
		                    c.p, c.len);
out:
	free(ks.p);
	free(kb.p);
	free(c.p);
	return r;
}

/* The 13 columns of update_series_totals, as Postgres array literals;
 * "NULL" where a series has no moment of that kind. */
static void totals_columns(const struct delta *d, size_t nd, struct tarr a[13])
{
	char v[32];

	for (size_t i = 0; i < nd; i++) {
		snprintf(v, sizeof(v), "%" PRIu32, d[i].id);
		ta_add(&a[0], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].samples);
		ta_add(&a[1], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].weight);
		ta_add(&a[2], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].input_bytes);
		ta_add(&a[3], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].less_samples);
		ta_add(&a[6], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].less_weight);
		ta_add(&a[7], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].less_input);
		ta_add(&a[8], v);
		if (d[i].touched)
			snprintf(v, sizeof(v), "%" PRId64, d[i].first);
		ta_add(&a[4], d[i].touched ? v : "NULL");
		if (d[i].touched)
			snprintf(v, sizeof(v), "%" PRId64, d[i].last);
		ta_add(&a[5], d[i].touched ? v : "NULL");
		if (d[i].timed)
			snprintf(v, sizeof(v), "%" PRId64, d[i].first_us);
		ta_add(&a[9], d[i].timed ? v : "NULL");
		if (d[i].timed)
			snprintf(v, sizeof(v), "%" PRId64, d[i].last_us);
		ta_add(&a[10], d[i].timed ? v : "NULL");
		snprintf(v, sizeof(v), "%" PRIu64, d[i].recent);
		ta_add(&a[11], v);
		snprintf(v, sizeof(v), "%" PRIu64, d[i].less_recent);
		ta_add(&a[12], v);
	}
}

/* The series totals and series_recent, by the deltas. */
static int update_series_totals(struct pg *s, const struct delta *d, size_t nd)
{
	struct tarr a[13] = {{0}};
	const char *vals[13];
	int r = 0;

	if (!nd)
		return 0;
	totals_columns(d, nd, a);
	for (int k = 0; k < 13; k++) {
		if (!a[k].p) {
			r = -ENOMEM;
			goto out;
		}
		vals[k] = a[k].p;
	}
	r = central_exec(s, "updating series totals",
	                 "WITH d AS (SELECT * FROM unnest($1::int4[], $2::numeric[], $3::numeric[],"
	                 " $4::numeric[], $5::int8[], $6::int8[], $7::numeric[],"
	                 " $8::numeric[], $9::numeric[], $10::int8[], $11::int8[],"
	                 " $12::int8[], $13::int8[]) AS d(id, samples, weight, input_bytes,"
	                 " first, last, less_samples, less_weight, less_input, first_us, last_us,"
	                 " recent, less_recent)),"
	                 " u AS (UPDATE series s SET samples = s.samples + d.samples - "
	                 "d.less_samples,"
	                 " weight = s.weight + d.weight - d.less_weight,"
	                 " input_bytes = s.input_bytes + d.input_bytes - d.less_input,"
	                 " first_seen = least(s.first_seen, d.first),"
	                 " last_seen = greatest(s.last_seen, d.last) FROM d WHERE s.id = d.id)"
	                 " INSERT INTO series_recent AS x SELECT id, first_us, last_us,"
	                 " recent - less_recent FROM d ON CONFLICT (series) DO UPDATE"
	                 " SET first_us = least(x.first_us, excluded.first_us),"
	                 " last_us = greatest(x.last_us, excluded.last_us),"
	                 " samples = x.samples + excluded.samples",
	                 13, vals, false, NULL);
out:
	for (int k = 0; k < 13; k++)
		free(a[k].p);
	return r;
}

/* The counts rows, the replaced rows they take the place of, the recent
 * tier's rows, and the series totals. */
int central_write_counts(struct pg_batch *b, const uint32_t *ids, int64_t commit,
                         const char *source_id)
{
	struct delta *d = NULL;
	size_t nd = 0;
	int r;

	r = series_deltas(b, ids, &d, &nd);
	if (r < 0)
		return r;
	r = copy_counts(b, ids, commit, source_id, d, nd);
	if (r == 0 && b->replace)
		r = replace_input_bytes(b->s, d, nd, source_id);
	if (r == 0)
		r = write_detail(b, ids, commit, source_id, d, nd);
	if (r == 0)
		r = update_series_totals(b->s, d, nd);
	free(d);
	return r;
}
