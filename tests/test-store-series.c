/*
 * test-store-series.c — the store library's unit tests (run by test-store.c) of
 * the series table: retention (prune by cut-off) and hosts, including a
 * store of the schema before hosts, and the records' forms (plain and
 * compact).
 */
#include "store-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- retention ------------------------------------------------------------------- */

/* Finds series `id` in a fresh listing; returns false when not listed. */
static bool listed(struct store *s, uint32_t id, struct store_series *out)
{
	struct store_series *list = NULL;
	size_t n = 0;
	bool found = false;

	CHECK_OK(store_series_list(s, &list, &n));
	for (size_t i = 0; i < n; i++) {
		if (list[i].id == id) {
			*out = list[i];
			out->binary = out->version = out->event = out->unit = NULL;
			found = true;
		}
	}
	store_series_free(list, n);
	return found;
}

void test_prune(void)
{
	static const struct store_series_key key_b = {NULL,        "db",          "2.0",
	                                              "cpu-clock", "nanoseconds", NULL};
	static const struct store_series_key key_perf = {NULL,        "cc1",         "default",
	                                                 "cpu-clock", "nanoseconds", NULL};
	const int64_t t0 = 1700000000 - 1700000000 % 60; /* a bucket start */
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_prune_stats st;
	struct store_series info;
	struct sf_collected c = {0};
	uint32_t a, b, perf, node;

	if (!s)
		return;
	struct store_batch *batch = store_batch_new(s);
	CHECK_OK(store_batch_series(batch, &sf_key_a, &a));
	CHECK_OK(store_batch_series(batch, &key_b, &b));
	CHECK_OK(store_batch_series(batch, &key_perf, &perf));
	node = sf_add_stack(batch, sf_stack1, 3);
	/* a: three buckets; b: one old bucket; perf: perf-clock times. */
	CHECK_OK(store_batch_add(batch, a, t0, node, 1, 10));
	CHECK_OK(store_batch_add(batch, a, t0 + 60, node, 2, 20));
	CHECK_OK(store_batch_add(batch, a, t0 + 120, node, 4, 40));
	CHECK_OK(store_batch_add(batch, b, t0, node, 8, 80));
	CHECK_OK(store_batch_add(batch, perf, 5000, node, 16, 160));
	CHECK_OK(store_batch_commit(batch));

	/* While a batch is open, prune refuses. */
	struct store_prune_opts o = {.before = t0 + 120, .wall_clock_only = true};
	CHECK(store_prune(s, &o, &st) == -EBUSY);
	store_batch_free(batch);

	/* A dry run counts and writes nothing. */
	o.dry_run = true;
	CHECK_OK(store_prune(s, &o, &st));
	CHECK(st.buckets == 3 && st.series == 2 && st.series_emptied == 1);
	CHECK(st.samples == 1 + 2 + 8 && st.weight == 10 + 20 + 80);
	CHECK(st.other_clock == 1);
	CHECK(listed(s, b, &info) && info.samples == 8);

	/* Buckets that end at or before t0 + 120 go. */
	o.dry_run = false;
	CHECK_OK(store_prune(s, &o, &st));
	CHECK(st.buckets == 3 && st.series == 2 && st.series_emptied == 1);
	CHECK_OK(store_series_counts(s, a, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 1 && c.bucket[0] == t0 + 120 && c.samples[0] == 4);
	CHECK(listed(s, a, &info) && info.samples == 4 && info.weight == 40 &&
	      info.first_seen == t0 + 120);
	CHECK(!listed(s, b, &info));                         /* emptied: not listed any more */
	CHECK(listed(s, perf, &info) && info.samples == 16); /* perf's clock: left alone */

	/* Nothing left to prune: a no-op.  A bucket that straddles `before`
	 * stays. */
	CHECK_OK(store_prune(s, &o, &st));
	CHECK(st.buckets == 0);
	o.before = t0 + 179;
	CHECK_OK(store_prune(s, &o, &st));
	CHECK(st.buckets == 0);
	CHECK(listed(s, a, &info) && info.samples == 4);

	/* It holds across a reopen, and an emptied series comes back with
	 * only what is added after. */
	store_close(s);
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	CHECK(!listed(s, b, &info));
	CHECK(listed(s, a, &info) && info.samples == 4 && info.first_seen == t0 + 120);
	batch = store_batch_new(s);
	uint32_t b2;
	CHECK_OK(store_batch_series(batch, &key_b, &b2));
	CHECK(b2 == b);
	CHECK_OK(store_batch_add(batch, b2, t0 + 600, sf_add_stack(batch, sf_stack1, 3), 3, 30));
	CHECK_OK(store_batch_commit(batch));
	store_batch_free(batch);
	CHECK(listed(s, b, &info) && info.samples == 3 && info.weight == 30 &&
	      info.first_seen == t0 + 600 && info.last_seen == t0 + 600);

	/* By binary, every clock: the perf-clock series goes entirely. */
	struct store_prune_opts all = {.before = INT64_MAX, .binary = "cc1"};
	CHECK_OK(store_prune(s, &all, &st));
	CHECK(st.series == 1 && st.series_emptied == 1 && st.samples == 16);
	CHECK(!listed(s, perf, &info));
	CHECK(listed(s, a, &info) && listed(s, b, &info));

	/* A reader sees the same. */
	struct store *r = NULL;
	char err[256];
	CHECK_OK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)));
	if (r) {
		CHECK(!listed(r, perf, &info));
		CHECK(listed(r, a, &info) && info.samples == 4);
		store_close(r);
	}
	store_close(s);

	/* A reader cannot prune. */
	CHECK_OK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)));
	if (r) {
		CHECK(store_prune(r, &o, &st) == -EROFS);
		store_close(r);
	}
}

/* ---- hosts ----------------------------------------------------------------- */

/* Interns key in a new batch, adds `samples` at t=60 on node 0, commits. */
static uint32_t add_series(struct store *s, const struct store_series_key *k, uint64_t samples)
{
	struct store_batch *b = store_batch_new(s);
	uint32_t id = 0;

	CHECK(b != NULL);
	if (!b)
		return 0;
	CHECK_OK(store_batch_series(b, k, &id));
	CHECK_OK(store_batch_add(b, id, 60, STORE_ROOT_NODE, samples, samples));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	return id;
}

/* The list's "host/binary/version/event=samples" entries, ';'-joined. */
static void list_str(struct store *s, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0, used = 0;

	out[0] = '\0';
	CHECK_OK(store_series_list(s, &l, &n));
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s/%s/%s/%s=%" PRIu64,
		                         i ? ";" : "", l[i].host, l[i].binary, l[i].version,
		                         l[i].event, l[i].samples);
	store_series_free(l, n);
}

/* Two hosts with the same binary, version and event are two series; the
 * list is sorted by (binary, version, event, host); a key without a host
 * takes store_host(); hosts and ids survive close and reopen. */
void test_hosts(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE), *r = NULL;
	char got[1024], err[512] = "", longname[300];
	struct store_series_key k = {"zed", "b", "1", "cpu", "count", NULL};
	uint32_t zed, alpha, mid, y;

	if (!s)
		return;
	/* bad host names */
	memset(longname, 'h', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(store_set_host(s, "") == -EINVAL);
	CHECK(store_set_host(s, "a/b") == -EINVAL);
	CHECK(store_set_host(s, "a\nb") == -EINVAL);
	CHECK(store_set_host(s, "a\x7f") == -EINVAL);
	CHECK(store_set_host(s, longname) == -EINVAL);
	longname[255] = '\0';
	CHECK_OK(store_set_host(s, longname));
	CHECK(strcmp(store_host(s), longname) == 0);
	CHECK_OK(store_set_host(s, "mid"));
	CHECK(strcmp(store_host(s), "mid") == 0);

	zed = add_series(s, &k, 1);
	k.host = "alpha";
	alpha = add_series(s, &k, 2);
	k.host = NULL;
	mid = add_series(s, &k, 3);
	k.host = "";
	CHECK(add_series(s, &k, 4) == mid);
	k = (struct store_series_key){"y", "a", "1", "cpu", "count", NULL};
	y = add_series(s, &k, 5);
	CHECK(zed && alpha && mid && y);
	CHECK(zed != alpha && alpha != mid && mid != zed);
	/* the same (host, binary, version, event) with another unit */
	k.unit = "nanoseconds";
	struct store_batch *b = store_batch_new(s);
	uint32_t id;
	CHECK(b && store_batch_series(b, &k, &id) == -EINVAL);
	CHECK(b && strstr(store_errmsg(s), "host y") != NULL);
	store_batch_free(b);

	const char *want = "y/a/1/cpu=5;alpha/b/1/cpu=2;mid/b/1/cpu=7;zed/b/1/cpu=1";
	list_str(s, got, sizeof(got));
	CHECK(strcmp(got, want) == 0);
	store_close(s);

	/* a reader, and a writer on another host, see the same */
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		list_str(r, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}
	s = sf_open_rw(dir, 0);
	if (!s)
		goto out;
	CHECK_OK(store_set_host(s, "other"));
	k = (struct store_series_key){"alpha", "b", "1", "cpu", "count", NULL};
	CHECK(add_series(s, &k, 10) == alpha);
	k.host = "mid";
	CHECK(add_series(s, &k, 10) == mid);
	k.host = NULL;
	uint32_t other = add_series(s, &k, 10);
	CHECK(other > y);
	store_close(s);
	if (r) {
		CHECK(store_refresh(r) == 1);
		list_str(r, got, sizeof(got));
		CHECK(strcmp(got, "y/a/1/cpu=5;alpha/b/1/cpu=12;mid/b/1/cpu=17;other/b/1/cpu=10;"
		                  "zed/b/1/cpu=1") == 0);
	}
out:
	store_close(r);
}

/* Writes a schema 2 series record (no host) with `samples` for series id. */
static void raw_put_series2(struct sf_raw *w, uint32_t id, const char *binary, uint8_t samples)
{
	char key[5] = {'s', (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	char v[64];
	size_t n = 0, bl = strlen(binary);

	v[n++] = (char)bl;
	memcpy(v + n, binary, bl);
	n += bl;
	memcpy(v + n, "\0011\003cpu\005count", 12); /* version "1", event, unit */
	n += 12;
	v[n++] = 120;           /* first_seen 60, zigzag */
	v[n++] = 120;           /* last_seen 60 */
	v[n++] = (char)samples; /* samples */
	v[n++] = (char)samples; /* weight */
	v[n++] = 0;             /* input bytes */
	sf_raw_put(w, key, 5, v, n);
}

/* A schema 2 store: its series name no host.  A reader shows the reading
 * machine's name; the first writer to write marks the store 3 and
 * records that name ("mhost") for them, whatever --host it writes with;
 * they keep their record form (and their ids) when they grow. */
void test_hosts_old_schema(void)
{
	struct sf_raw w;
	char *dir = sf_empty_store_raw(&w);
	struct store *s = NULL, *r = NULL, *r2 = NULL;
	char err[512] = "", got[1024], want[1024], machine[256] = "";
	const char v2[4] = {0, 0, 0, 2};
	size_t vlen = 0;
	char *v;

	if (!dir)
		return;
	CHECK(gethostname(machine, sizeof(machine) - 1) == 0 && machine[0]);
	sf_raw_put(&w, "mschema", 7, v2, 4);
	raw_put_series2(&w, 1, "old", 3);
	raw_put_series2(&w, 2, "older", 4);
	sf_raw_close(&w);

	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	snprintf(want, sizeof(want), "%s/old/1/cpu=3;%s/older/1/cpu=4", machine, machine);
	if (r) {
		CHECK_OK(store_set_host(r, "reader-set")); /* not the old series' host */
		list_str(r, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}

	/* a writer opening without writing changes nothing */
	s = sf_open_rw(dir, 0);
	store_close(s);
	if (sf_raw_open(dir, &w)) {
		v = sf_raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == 2);
		rocksdb_free(v);
		v = sf_raw_get(&w, "mhost", 5, &vlen);
		CHECK(v == NULL);
		rocksdb_free(v);
	}
	sf_raw_close(&w);

	/* a writer on host "new" */
	s = sf_open_rw(dir, 0);
	if (!s)
		goto out;
	CHECK_OK(store_set_host(s, "new"));
	struct store_series_key k = {NULL, "old", "1", "cpu", "count", NULL};
	CHECK(add_series(s, &k, 10) == 3);
	k.host = machine;
	CHECK(add_series(s, &k, 10) == 1);
	store_close(s);
	s = NULL;
	/* sorted by host within (binary, version, event) */
	char old2[600];
	if (strcmp(machine, "new") < 0)
		snprintf(old2, sizeof(old2), "%s/old/1/cpu=13;new/old/1/cpu=10", machine);
	else
		snprintf(old2, sizeof(old2), "new/old/1/cpu=10;%s/old/1/cpu=13", machine);
	snprintf(want, sizeof(want), "%s;%s/older/1/cpu=4", old2, machine);
	if (r) {
		CHECK(store_refresh(r) == 1);
		list_str(r, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}
	if (sf_raw_open(dir, &w)) {
		v = sf_raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == STORE_SCHEMA_VERSION);
		rocksdb_free(v);
		v = sf_raw_get(&w, "mhost", 5, &vlen);
		CHECK(v && vlen == 4 + strlen(machine) && !memcmp(v, "\0\0\0\003", 4) &&
		      !memcmp(v + 4, machine, vlen - 4));
		rocksdb_free(v);
		/* series 1 kept its form: it starts with the binary */
		v = sf_raw_get(&w, "s\0\0\0\001", 5, &vlen);
		CHECK(v && vlen > 4 && v[0] == 3 && !memcmp(v + 1, "old", 3));
		rocksdb_free(v);
		/* series 3 names its host first, after the 0 byte of the
		 * compact form (schema 6) */
		v = sf_raw_get(&w, "s\0\0\0\003", 5, &vlen);
		CHECK(v && vlen > 5 && v[0] == 0 && v[1] == 3 && !memcmp(v + 2, "new", 3));
		rocksdb_free(v);
	}
	sf_raw_close(&w);

	/* a fresh reader and writer read it back; mhost's name holds */
	CHECK(store_open(dir, STORE_READONLY, &r2, err, sizeof(err)) == 0);
	if (r2) {
		list_str(r2, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}
	s = sf_open_rw(dir, 0);
	if (s) {
		k.host = machine;
		k.binary = "older";
		CHECK(add_series(s, &k, 1) == 2);
		list_str(s, got, sizeof(got));
		snprintf(want, sizeof(want), "%s;%s/older/1/cpu=5", old2, machine);
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}
	/* a damaged mhost is named */
	store_close(s);
	s = NULL;
	if (sf_raw_open(dir, &w))
		sf_raw_put(&w, "mhost", 5, "\0\0\0", 3);
	sf_raw_close(&w);
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EIO);
	CHECK(strstr(err, "store is damaged: meta host") != NULL);
out:
	store_close(s);
	store_close(r);
	store_close(r2);
}

/* ---- record forms ------------------------------------------------------------------ */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t put_str(uint8_t *p, const char *s)
{
	size_t n = put_varint(p, strlen(s));

	memcpy(p + n, s, strlen(s));
	return n + strlen(s);
}

static uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* A record: 0 (compact) or not, the five strings, then the numbers as
 * given, then the labels (none when NULL). */
static size_t raw_record(uint8_t *p, bool compact, const char *binary, const uint64_t *num,
                         size_t nnum, const char *labels)
{
	size_t n = 0;

	if (compact)
		p[n++] = 0;
	n += put_str(p + n, "h");
	n += put_str(p + n, binary);
	n += put_str(p + n, "1");
	n += put_str(p + n, "cpu");
	n += put_str(p + n, "count");
	for (size_t i = 0; i < nnum; i++)
		n += put_varint(p + n, num[i]);
	if (labels)
		n += put_str(p + n, labels);
	return n;
}

/* The series of `binary` as listed by s, every field as "k=v ". */
static void series_str(struct store *s, const char *binary, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0;

	snprintf(out, len, "(not listed)");
	CHECK_OK(store_series_list(s, &l, &n));
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].binary, binary))
			snprintf(out, len,
			         "seen=%" PRId64 "..%" PRId64 " us=%" PRId64 "..%" PRId64
			         " samples=%" PRIu64 " weight=%" PRIu64 " recent=%" PRIu64
			         " labels=%s",
			         l[i].first_seen, l[i].last_seen, l[i].first_us, l[i].last_us,
			         l[i].samples, l[i].weight, l[i].recent_samples, l[i].labels);
	store_series_free(l, n);
}

/* Series records in the compact form (schema 6) give back every field
 * exactly: times before 1970, a weight that is no multiple of the samples
 * and one near 2^64, moments to the microsecond, recent detail; a plain
 * record (schema 5) reads as it was and store_compact() rewrites it in
 * the compact form; a compact record whose weight does not add up is
 * damage. */
void test_series_compact(void)
{
	char dir[PATH_MAX], got[512], err[512] = "";
	struct store *s = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE), *r = NULL;
	struct store_series_key ka = {"h", "a", "1", "cpu", "count", "thread=a"};
	struct store_series_key kb = {"h", "b", "1", "cpu", "count", NULL};
	const char *want_a = "seen=-100..200 us=-100000000..200000000 samples=4 weight=11 "
	                     "recent=0 labels=thread=a";
	const char *want_b = "seen=1700000000..1700000100 us=1700000000123456..1700000100999999 "
	                     "samples=5 weight=18446744073709551614 recent=2 labels=";
	uint32_t a = 0, b = 0;
	struct sf_raw w;

	if (!s)
		return;
	struct store_batch *bt = store_batch_new(s);
	CHECK_OK(store_batch_series(bt, &ka, &a));
	CHECK_OK(store_batch_series(bt, &kb, &b));
	uint32_t node = sf_add_stack(bt, sf_stack1, 3);
	CHECK_OK(store_batch_add(bt, a, -100, node, 3, 10));
	CHECK_OK(store_batch_add(bt, a, 200, node, 1, 1));
	struct store_sample sm = {.time_us = 1700000000123456, .weight = 7, .node = node};
	CHECK_OK(store_batch_sample(bt, b, &sm));
	sm.time_us = 1700000100999999;
	CHECK_OK(store_batch_sample(bt, b, &sm));
	CHECK_OK(store_batch_add(bt, b, 1700000050, node, 3, UINT64_MAX - 15));
	CHECK_OK(store_batch_commit(bt));
	store_batch_free(bt);
	series_str(s, "a", got, sizeof(got));
	CHECK_STR(got, want_a);
	store_close(s);
	s = sf_open_rw(dir, 0); /* the writer's load */
	if (s) {
		series_str(s, "a", got, sizeof(got));
		CHECK_STR(got, want_a);
		series_str(s, "b", got, sizeof(got));
		CHECK_STR(got, want_b);
		store_close(s);
	}
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		series_str(r, "b", got, sizeof(got));
		CHECK_STR(got, want_b);
		store_close(r);
	}

	/* a plain record of schema 5 (series 3) */
	if (sf_raw_open(dir, &w)) {
		uint8_t rec[256];
		uint64_t num[8] = {zz(60), zz(119), 7, 9, 0, zz(60500000), zz(119000001), 2};
		size_t n = raw_record(rec, false, "plain", num, 8, "thread=p");

		sf_raw_put(&w, "mschema", 7, "\0\0\0\005", 4);
		sf_raw_put(&w, "s\0\0\0\003", 5, (char *)rec, n);
	}
	sf_raw_close(&w);
	const char *want_p = "seen=60..119 us=60500000..119000001 samples=7 weight=9 recent=2 "
	                     "labels=thread=p";
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		series_str(r, "plain", got, sizeof(got));
		CHECK_STR(got, want_p);
		store_close(r);
	}
	s = sf_open_rw(dir, 0);
	if (s) {
		CHECK_OK(store_compact(s));
		series_str(s, "plain", got, sizeof(got));
		CHECK_STR(got, want_p);
		store_close(s);
	}
	if (sf_raw_open(dir, &w)) {
		size_t vlen = 0;
		char *v = sf_raw_get(&w, "mschema", 7, &vlen);

		CHECK(v && vlen == 4 && v[3] == STORE_SCHEMA_VERSION && STORE_SCHEMA_VERSION == 6);
		rocksdb_free(v);
		v = sf_raw_get(&w, "s\0\0\0\003", 5, &vlen);
		CHECK(v && vlen > 3 && v[0] == 0 && v[1] == 1 && v[2] == 'h');
		rocksdb_free(v);
	}
	sf_raw_close(&w);
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		series_str(r, "plain", got, sizeof(got));
		CHECK_STR(got, want_p);
		series_str(r, "a", got, sizeof(got));
		CHECK_STR(got, want_a);
		store_close(r);
	}

	/* a compact record whose remainder is not below its samples */
	if (sf_raw_open(dir, &w)) {
		uint8_t rec[256];
		uint64_t num[9] = {zz(60), zz(0), 2, 1, 2, 0, zz(0), zz(0), zz(0)};
		size_t n = raw_record(rec, true, "plain", num, 9, NULL);

		sf_raw_put(&w, "s\0\0\0\003", 5, (char *)rec, n);
	}
	sf_raw_close(&w);
	s = NULL;
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EIO);
	CHECKF(strstr(err, "store is damaged: series 3") != NULL, "%s", err);
	store_close(s);
}
