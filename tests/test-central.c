/*
 * test-central.c — unit tests for the central store backend
 * (store/central/) against a real PostgreSQL server.
 *
 * Usage: test-central SOCKET_DIR USER [PORT] (or $FLAMEFS_TEST_PGHOST,
 * $FLAMEFS_TEST_PGUSER, $FLAMEFS_TEST_PGPORT): the server's Unix socket
 * directory, its port and a superuser to create a fresh database per test with.  Without them it
 * prints "SKIP: ..." and exits 77; tests/test-central.sh starts a private
 * server and runs it; with $FLAMEFS_TEST_HASH_BITS=1 it runs the
 * collision test alone (the hashes cut to one bit).  Each test prints "PASS name" or "FAIL name"; the
 * exit status is non-zero when any check failed.  The copy entries of
 * the backend are called through store-internal.h, as store_copy() will.
 * This file: writing and reading, two writers, collisions, copies, prune,
 * refusals, reconnecting, hostile databases; the recent tier's tests are
 * in test-central-samples.c and test-central-tier.c, labels' in
 * test-central-labels.c (central-fixture.h lists them).
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void test_write_read(void)
{
	struct store *w, *r;
	struct store_batch *b;
	struct store_series *l = NULL;
	size_t n = 0;
	uint32_t a, h2, ab, abc, x;

	fresh_db("c_rw");
	w = open_ok("c_rw", STORE_CREATE);
	if (!w)
		return;
	CHECK(strlen(store_id(w)) == 32 && strspn(store_id(w), "0123456789abcdef") == 32);
	CHECK(store_bucket_seconds(w) == 60);
	CHECK_STR(store_where(w), uri("c_rw"));
	CHECK(store_set_host(w, "alpha") == 0);
	b = store_batch_new(w);
	CHECK(b && !store_batch_new(w));
	a = series(b, NULL, "app");
	h2 = series(b, "beta", "app");
	CHECK(a != h2);
	ab = stack(b, "main;work");
	abc = stack(b, "main;work;leaf");
	x = stack(b, "other");
	CHECK(store_batch_add(b, a, T0 + 5, abc, 3, 300) == 0);
	CHECK(store_batch_add(b, a, T0 + 7, abc, 1, 100) == 0);
	CHECK(store_batch_add(b, a, T0 + 61, ab, 2, 2) == 0);
	CHECK(store_batch_add(b, h2, T0 + 1, x, 5, 5) == 0);
	CHECK(store_batch_input_bytes(b, a, 1000) == 0);
	CHECK(store_batch_add(b, 999, T0, x, 1, 1) == -EINVAL);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(store_node_count(w) == 5); /* root, main, work, leaf, other */
	CHECK(store_frame_count(w) == 5);

	r = open_ok("c_rw", STORE_READONLY);
	if (!r) {
		store_close(w);
		return;
	}
	CHECK(store_node_count(r) == 5 && store_frame_count(r) == 5);
	CHECK_STR(store_id(r), store_id(w));
	CHECK(store_sequence(r) == store_sequence(w) && store_sequence(r) == 1);
	CHECK(!store_batch_new(r));
	CHECK(strstr(store_errmsg(r), "read-only") != NULL);
	CHECK(store_series_list(r, &l, &n) == 0);
	CHECK(n == 2);
	if (n == 2) {
		CHECK_STR(l[0].host, "alpha"); /* sorted by (binary, ..., host) */
		CHECK_STR(l[1].host, "beta");
		CHECK(l[0].samples == 6 && l[0].weight == 402 && l[0].input_bytes == 1000);
		CHECK(l[0].first_seen == T0 + 5 && l[0].last_seen == T0 + 61);
		CHECK(l[1].samples == 5 && l[1].weight == 5);
		CHECK_STR(l[0].unit, "nanoseconds");
	}
	store_series_free(l, n);
	CHECK_STR(dump(r, a, INT64_MIN, INT64_MAX), "1700000040 main;work;leaf 4 400\n"
	                                            "1700000100 main;work 2 2\n");
	CHECK_STR(dump(r, a, T0 + 60, T0 + 60), "1700000100 main;work 2 2\n");
	CHECK_STR(dump(r, a, T0 + 59, T0 + 59), "1700000040 main;work;leaf 4 400\n");
	CHECK_STR(dump(r, h2, INT64_MIN, INT64_MAX), "1700000040 other 5 5\n");
	CHECK(store_refresh(r) == 0);

	/* A second commit adds a row to the same bucket: read back summed,
	 * node by node, in node order. */
	b = store_batch_new(w);
	CHECK(store_batch_add(b, a, T0 + 9, abc, 10, 10) == 0);
	CHECK(store_batch_add(b, a, T0 + 9, stack(b, "main;work;leaf2"), 1, 1) == 0);
	CHECK(store_batch_add(b, a, T0 + 9, ab, 7, 7) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(store_refresh(r) == 1);
	CHECK(store_refresh(r) == 0);
	CHECK(store_node_count(r) == 6);
	CHECK_STR(dump(r, a, INT64_MIN, INT64_MAX), "1700000040 main;work 7 7\n"
	                                            "1700000040 main;work;leaf 14 410\n"
	                                            "1700000040 main;work;leaf2 1 1\n"
	                                            "1700000100 main;work 2 2\n");
	CHECK(find_series(r, "alpha", "app", NULL) == a);
	{
		struct store_series e;

		find_series(r, "alpha", "app", &e);
		CHECK(e.samples == 6 + 18 && e.weight == 402 + 18);
	}
	/* An empty batch changes nothing, not even the counter. */
	b = store_batch_new(w);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(store_refresh(r) == 0);
	/* A freed batch forgets its frames and nodes. */
	b = store_batch_new(w);
	stack(b, "forgotten;stack");
	CHECK(store_node_count(w) == 8);
	store_batch_free(b);
	CHECK(store_node_count(w) == 6 && store_frame_count(w) == 6);
	store_close(r);
	store_close(w);
}

/* Two writers that both start before either commits: the second's ids
 * are renumbered after the first's, the stack both saw is stored once,
 * ids stay dense. */
void test_two_writers(void)
{
	struct store *w1, *w2, *r;
	struct store_batch *b1, *b2;
	uint32_t s1, s2;
	uint32_t n1a, n1b, n2b, n2c;

	fresh_db("c_two");
	w1 = open_ok("c_two", STORE_CREATE);
	w2 = open_ok("c_two", 0);
	if (!w1 || !w2)
		goto out;
	CHECK(store_set_host(w1, "h1") == 0 && store_set_host(w2, "h2") == 0);
	b1 = store_batch_new(w1);
	b2 = store_batch_new(w2);
	s1 = series(b1, NULL, "nginx");
	s2 = series(b2, NULL, "nginx");
	n1a = stack(b1, "main;a");
	n1b = stack(b1, "main;b;deep");
	n2b = stack(b2, "main;b;deep");
	n2c = stack(b2, "main;c");
	CHECK(store_batch_add(b1, s1, T0, n1a, 1, 1) == 0);
	CHECK(store_batch_add(b1, s1, T0, n1b, 2, 2) == 0);
	CHECK(store_batch_add(b2, s2, T0, n2b, 20, 20) == 0);
	CHECK(store_batch_add(b2, s2, T0, n2c, 30, 30) == 0);
	CHECK(store_batch_commit(b1) == 0);
	CHECK(store_batch_commit(b2) == 0);
	store_batch_free(b1);
	store_batch_free(b2);
	/* root, main, a, b, deep, c */
	CHECK(store_node_count(w2) == 6);
	CHECK_STR(sql("c_two", "SELECT count(*) || ' ' || max(id) FROM nodes"), "6 5");
	CHECK_STR(sql("c_two", "SELECT count(*) || ' ' || max(id) FROM frames"), "6 5");
	r = open_ok("c_two", STORE_READONLY);
	if (r) {
		uint32_t a = find_series(r, "h1", "nginx", NULL),
		         c = find_series(r, "h2", "nginx", NULL);

		CHECK(a && c && a != c);
		CHECK_STR(dump(r, a, INT64_MIN, INT64_MAX), "1700000040 main;a 1 1\n"
		                                            "1700000040 main;b;deep 2 2\n");
		CHECK_STR(dump(r, c, INT64_MIN, INT64_MAX), "1700000040 main;b;deep 20 20\n"
		                                            "1700000040 main;c 30 30\n");
		store_close(r);
	}
	/* The second writer goes on with the ids it now holds. */
	b2 = store_batch_new(w2);
	s2 = series(b2, NULL, "nginx");
	CHECK(store_batch_add(b2, s2, T0, stack(b2, "main;a"), 4, 4) == 0);
	CHECK(store_batch_commit(b2) == 0);
	store_batch_free(b2);
	CHECK(store_node_count(w2) == 6);
	r = open_ok("c_two", STORE_READONLY);
	if (r) {
		CHECK_STR(dump(r, find_series(r, "h2", "nginx", NULL), INT64_MIN, INT64_MAX),
		          "1700000040 main;a 4 4\n"
		          "1700000040 main;b;deep 20 20\n"
		          "1700000040 main;c 30 30\n");
		store_close(r);
	}
out:
	store_close(w1);
	store_close(w2);
}

/* With $FLAMEFS_TEST_HASH_BITS=1 (hashes cut to their first bit; main
 * runs this test alone then), collisions are everywhere: each must be
 * refused, naming the host, the series and the hash, never merged. */

/* From name "n<from>" on, the first frame that interns with its node
 * under the root into a fresh batch of s; -1 when none does. */
static int pick(struct store *s, struct store_batch **b, int from, uint32_t *node)
{
	for (int i = from; i < 200; i++) {
		char name[16];
		struct store_frame f = {.name = name};
		uint32_t id;

		snprintf(name, sizeof(name), "n%d", i);
		f.name_len = strlen(name);
		if (store_batch_frame(*b, &f, &id) < 0)
			continue;
		if (store_batch_node(*b, STORE_ROOT_NODE, id, node) == 0)
			return i;
		/* a frame with this hash is in the batch now: start afresh */
		store_batch_free(*b);
		*b = store_batch_new(s);
	}
	return -1;
}

void test_collision(void)
{
	struct store *w, *w2;
	struct store_batch *b, *b2;
	unsigned ok = 0, refused = 0;
	uint32_t s, n, n2;
	int x, y;

	fresh_db("c_coll");
	w = open_ok("c_coll", STORE_CREATE);
	w2 = open_ok("c_coll", 0);
	if (!w || !w2)
		goto out;
	store_set_host(w, "early");
	store_set_host(w2, "late");
	/* In one batch: frame 0's hash is 16 zero bytes, so of any ten
	 * frames at most one (a hash of 0x80 then zeros) gets in. */
	b = store_batch_new(w);
	for (int i = 0; i < 10; i++) {
		char name[16];
		struct store_frame f = {.name = name};
		uint32_t id;

		snprintf(name, sizeof(name), "f%d", i);
		f.name_len = strlen(name);
		if (store_batch_frame(b, &f, &id) == 0) {
			ok++;
		} else {
			refused++;
			CHECK(strstr(store_errmsg(w), "collision") != NULL);
			CHECK(strstr(store_errmsg(w), "host early") != NULL);
			CHECK(strstr(store_errmsg(w), "000000000000000000000000000000") != NULL);
		}
	}
	CHECK(ok <= 1 && refused >= 9);
	store_batch_free(b);

	/* Across writers: each interns a different frame of the same hash;
	 * the second commit finds the first's and refuses. */
	b = store_batch_new(w);
	b2 = store_batch_new(w2);
	x = pick(w, &b, 0, &n);
	y = pick(w2, &b2, x + 1, &n2);
	CHECK(x >= 0 && y > x);
	if (x < 0 || y < 0) {
		store_batch_free(b);
		store_batch_free(b2);
		goto out;
	}
	s = series(b, NULL, "prog");
	CHECK(store_batch_add(b, s, T0, n, 1, 1) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	s = series(b2, NULL, "prog");
	CHECK(store_batch_add(b2, s, T0, n2, 2, 2) == 0);
	CHECK(store_batch_commit(b2) == -EEXIST);
	CHECK(strstr(store_errmsg(w2), "collision") != NULL);
	CHECK(strstr(store_errmsg(w2), "host late") != NULL);
	CHECK(strstr(store_errmsg(w2), "series prog/1/cpu") != NULL);
	CHECK(strstr(store_errmsg(w2), "80000000000000000000000000000000") != NULL);
	store_batch_free(b2);
	CHECK_STR(sql("c_coll", "SELECT count(*) FROM counts"), "1");
	CHECK_STR(sql("c_coll", "SELECT count(*) FROM frames"), "2");
out:
	store_close(w);
	store_close(w2);
}

/* Copies: a batch_source() batch replaces the source's (series, bucket)
 * rows, records how far it reached; changes and the cursors. */
static int change_fn(void *ctx, uint32_t series, int64_t bucket)
{
	char *out = ctx;

	snprintf(out + strlen(out), 256 - strlen(out), "%u@%" PRId64 " ", series, bucket);
	return 0;
}

void test_copy_entries(void)
{
	const char *src = "0123456789abcdef0123456789abcdef";
	struct store *w, *r;
	struct store_batch *b;
	uint64_t upto = 99;
	uint32_t s, n;
	char changes[256] = "";

	fresh_db("c_copy");
	w = open_ok("c_copy", STORE_CREATE);
	if (!w)
		return;
	CHECK(w->ops->replaces_sources);
	CHECK(w->ops->source_cursor(w, src, &upto) == 0 && upto == 0);
	/* A copy that only moves the record (the source committed nothing
	 * with counts), by a writer that knows no series yet. */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, "ffffffffffffffffffffffffffffffff", 0, 3) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(w->ops->source_cursor(w, "ffffffffffffffffffffffffffffffff", &upto) == 0 &&
	      upto == 3);
	for (int round = 0; round < 2; round++) {
		b = store_batch_new(w);
		CHECK(w->ops->batch_source(b, "not hex", 0, 1) == -EINVAL);
		CHECK(w->ops->batch_source(b, src, round ? 10 : 0, 10 + (uint64_t)round) == 0);
		s = series(b, "far", "db");
		n = stack(b, "q;r");
		CHECK(store_batch_add(b, s, T0, n, round ? 7 : 5, round ? 70 : 50) == 0);
		if (!round)
			CHECK(store_batch_add(b, s, T0 + 60, n, 1, 1) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
	}
	/* A copy that expects an older record (another copy of the same
	 * source committed meanwhile) is refused whole. */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 10, 12) == 0);
	s = series(b, "far", "db");
	CHECK(store_batch_add(b, s, T0, stack(b, "q;r"), 1000, 1000) == 0);
	CHECK(store_batch_commit(b) == -EAGAIN);
	CHECK(strstr(store_errmsg(w), "another copy of store") != NULL);
	store_batch_free(b);
	/* A direct write to the same bucket adds beside the copy. */
	b = store_batch_new(w);
	s = series(b, "far", "db");
	CHECK(store_batch_add(b, s, T0, stack(b, "q;r"), 100, 100) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(w->ops->source_cursor(w, src, &upto) == 0 && upto == 11);
	r = open_ok("c_copy", STORE_READONLY);
	if (r) {
		struct store_series e;

		s = find_series(r, "far", "db", &e);
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000040 q;r 107 170\n"
		                                            "1700000100 q;r 1 1\n");
		CHECK(e.samples == 108 && e.weight == 171);
		CHECK(r->ops->changes(r, 0, &upto, change_fn, changes) == 0);
		CHECK(upto == 4); /* the cursor-only copy, two copies, a write */
		CHECK_STR(changes, "1@1700000040 1@1700000100 ");
		changes[0] = '\0';
		CHECK(r->ops->changes(r, 3, &upto, change_fn, changes) == 0);
		CHECK_STR(changes, "1@1700000040 ");
		CHECK(r->ops->set_dest_cursor(r, src, 5) == -EROFS);
		store_close(r);
	}
	/* A snapshot (how a copy reads its source): a bucket that a copy
	 * replaces meanwhile still reads whole, as it was, until its end. */
	r = open_ok("c_copy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", NULL);
		CHECK(r->ops->snapshot(r, true) == 0);
		CHECK(r->ops->snapshot(r, true) == -EBUSY);
		b = store_batch_new(w);
		CHECK(w->ops->batch_source(b, src, 11, 12) == 0);
		CHECK(store_batch_add(b, series(b, "far", "db"), T0, stack(b, "q;r"), 9, 90) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		CHECK(store_refresh(r) == 0); /* nothing moves inside */
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000040 q;r 107 170\n"
		                                            "1700000100 q;r 1 1\n");
		changes[0] = '\0';
		CHECK(r->ops->changes(r, 0, &upto, change_fn, changes) == 0 && upto == 4);
		CHECK(r->ops->snapshot(r, false) == 0);
		CHECK(store_refresh(r) == 1);
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000040 q;r 109 190\n"
		                                            "1700000100 q;r 1 1\n");
		store_close(r);
	}
	CHECK(w->ops->dest_cursor(w, src, &upto) == 0 && upto == 0);
	CHECK(w->ops->set_dest_cursor(w, src, 42) == 0);
	CHECK(w->ops->set_dest_cursor(w, src, 43) == 0);
	CHECK(w->ops->dest_cursor(w, src, &upto) == 0 && upto == 43);
	store_close(w);
}

/* A copy cache (a recorder's pushes): rounds of copies from one store to
 * another that other writers also write to, with the cache and with a new
 * cache each round, give the same destination; so does the cache moved to
 * another pair of stores. */
void test_copy_cache(void)
{
	struct store *src, *dst, *other, *plain, *plain2;
	struct store_copy_cache *cache = store_copy_cache_new();
	struct store_copy_opts oc = {.incremental = true, .buckets_per_commit = 1, .cache = cache};
	struct store_copy_opts on = {.incremental = true};
	struct store_copy_stats st;
	char err[512], want[4096];

	CHECK(cache != NULL);
	fresh_db("c_csrc");
	fresh_db("c_cdst");
	fresh_db("c_cplain");
	fresh_db("c_cplain2");
	src = open_ok("c_csrc", STORE_CREATE);
	dst = open_ok("c_cdst", STORE_CREATE);
	other = open_ok("c_cdst", STORE_CREATE);
	plain = open_ok("c_cplain", STORE_CREATE);
	plain2 = open_ok("c_cplain2", STORE_CREATE);
	if (!cache || !src || !dst || !other || !plain || !plain2)
		goto out;
	for (int round = 0; round < 4; round++) {
		struct store_batch *b = store_batch_new(src);
		char st1[64], st2[64];
		uint32_t s = series(b, "h", "svc");

		snprintf(st1, sizeof(st1), "a;c;d%d", round);
		snprintf(st2, sizeof(st2), "e%d;f", round % 2);
		CHECK(store_batch_add(b, s, T0 + 60 * round, stack(b, "a;b"), 1, 10) == 0);
		CHECK(store_batch_add(b, s, T0 + 60 * round, stack(b, st1), 2, 20) == 0);
		CHECK(store_batch_add(b, s, T0 + 60 * (round / 2), stack(b, st2), 3, 30) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		/* Another writer's new nodes move the ids a copy's batch hands out. */
		b = store_batch_new(other);
		snprintf(st1, sizeof(st1), "o%d;a;b", round);
		CHECK(store_batch_add(b, series(b, "o", "x"), T0, stack(b, st1), 1, 1) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		CHECK(store_copy(dst, src, &oc, &st, err, sizeof(err)) == 0);
		CHECK(store_copy(plain, src, &on, &st, err, sizeof(err)) == 0);
	}
	CHECK(store_refresh(dst) >= 0 && store_refresh(plain) >= 0);
	snprintf(want, sizeof(want), "%s",
	         dump(plain, find_series(plain, "h", "svc", NULL), INT64_MIN, INT64_MAX));
	CHECK(strstr(want, "a;c;d3") != NULL);
	CHECK_STR(dump(dst, find_series(dst, "h", "svc", NULL), INT64_MIN, INT64_MAX), want);
	/* The same cache, another pair of stores: it starts afresh. */
	CHECK(store_copy(plain2, src, &oc, &st, err, sizeof(err)) == 0);
	CHECK_STR(dump(plain2, find_series(plain2, "h", "svc", NULL), INT64_MIN, INT64_MAX), want);
out:
	store_copy_cache_free(cache);
	store_close(src);
	store_close(dst);
	store_close(other);
	store_close(plain);
	store_close(plain2);
}

void test_prune(void)
{
	struct store *w, *r;
	struct store_batch *b;
	struct store_prune_stats st;
	struct store_prune_opts o = {.before = T0 + 120};
	uint32_t s, p, n;
	uint64_t seq;

	fresh_db("c_prune");
	w = open_ok("c_prune", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	s = series(b, "h", "wall");
	p = series(b, "h", "boot"); /* perf's clock */
	n = stack(b, "x;y");
	for (int i = 0; i < 3; i++)
		CHECK(store_batch_add(b, s, T0 + 60 * i, n, 1u << i, 10u << i) == 0);
	CHECK(store_batch_add(b, p, 100, n, 9, 9) == 0);
	CHECK(store_batch_commit(b) == 0);
	/* a second row in the first bucket: one record pruned, two rows */
	CHECK(store_batch_add(b, s, T0, n, 16, 160) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	seq = store_sequence(w);

	o.dry_run = true;
	o.wall_clock_only = true;
	CHECK(store_prune(w, &o, &st) == 0);
	CHECK(st.series == 1 && st.buckets == 2 && st.samples == 1 + 2 + 16 &&
	      st.weight == 10 + 20 + 160 && st.other_clock == 1 && st.series_emptied == 0);
	CHECK(store_sequence(w) == seq);
	CHECK_STR(sql("c_prune", "SELECT count(*) FROM counts"), "5");

	o.dry_run = false;
	o.binary = "nothing-like-it";
	CHECK(store_prune(w, &o, &st) == 0 && st.buckets == 0);
	o.binary = NULL;
	CHECK(store_prune(w, &o, &st) == 0);
	CHECK(st.series == 1 && st.buckets == 2 && st.samples == 19 && st.other_clock == 1);
	CHECK(store_sequence(w) == seq + 1);
	CHECK_STR(sql("c_prune", "SELECT samples || ' ' || weight || ' ' || first_seen FROM series "
	                         "WHERE binary_name = 'wall'"),
	          "4 40 1700000160");
	/* without wall_clock_only the boot-clock series goes too, emptied */
	o.wall_clock_only = false;
	CHECK(store_prune(w, &o, &st) == 0);
	CHECK(st.series == 1 && st.series_emptied == 1 && st.samples == 9 && st.other_clock == 0);
	r = open_ok("c_prune", STORE_READONLY);
	if (r) {
		CHECK(find_series(r, "h", "boot", NULL) == 0);
		CHECK(find_series(r, "h", "wall", NULL) == s);
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000160 x;y 4 40\n");
		CHECK(store_prune(r, &o, &st) == -EROFS);
		store_close(r);
	}
	{
		struct store_footprint fp;
		uint64_t bytes = 0;

		CHECK(store_compact(w) == 0);
		CHECK(store_footprint(w, &fp) == 0);
		CHECK(fp.counts_bytes > 0 && fp.nodes_bytes > 0 &&
		      fp.dir_bytes == fp.frames_bytes + fp.nodes_bytes + fp.counts_bytes +
		                              fp.samples_bytes + fp.other_bytes);
		CHECK(store_series_disk_bytes(w, s, &bytes) == 0 && bytes > 0);
	}
	store_close(w);
}
void test_refusals(void)
{
	char conn[512], want[600];

	fresh_db("c_other");
	sql("c_other", "CREATE TABLE accounts (id int)");
	expect_open_error(uri("c_other"), STORE_CREATE, -EINVAL, "not a flamefs store (", NULL);
	fresh_db("c_empty");
	expect_open_error(uri("c_empty"), 0, -ENOENT, "not a flamefs store yet", NULL);
	expect_open_error(uri("c_empty"), STORE_READONLY | STORE_CREATE, -ENOENT,
	                  "not a flamefs store yet", NULL);
	CHECK_STR(sql("c_empty", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
	          "0");
	fresh_db("c_future");
	store_close(open_ok("c_future", STORE_CREATE));
	sql("c_future", "UPDATE flamefs_meta SET value = '9' WHERE key = 'schema'");
	sql("c_future", "UPDATE flamefs_meta SET value = '8' WHERE key = 'oldest_reader'");
	snprintf(want, sizeof(want),
	         "%s: schema version 9 is newer than this flamefs understands (7)",
	         uri("c_future"));
	expect_open_error(uri("c_future"), 0, -EPROTONOSUPPORT, want, NULL);
	expect_open_error(uri("c_future"), STORE_READONLY, -EPROTONOSUPPORT, want, NULL);
	/* A newer schema that says readers of this one read it correctly is
	 * read; it is never written. */
	sql("c_future", "UPDATE flamefs_meta SET value = '4' WHERE key = 'oldest_reader'");
	store_close(open_ok("c_future", STORE_READONLY));
	expect_open_error(uri("c_future"), 0, -EPROTONOSUPPORT, want, NULL);
	sql("c_future", "DELETE FROM flamefs_meta WHERE key = 'oldest_reader'");
	expect_open_error(uri("c_future"), STORE_READONLY, -EPROTONOSUPPORT, want, NULL);

	/* Unreachable: the message says so and never shows a password. */
	expect_open_error(
	        "postgresql://flamefs:hunter2@/db?host=/nonexistent-dir", 0, -ECONNREFUSED,
	        "postgresql://flamefs:***@/db?host=/nonexistent-dir: cannot connect: ", "hunter2");
	expect_open_error("postgresql:///db?host=/nonexistent-dir&password=hunter2&user=u", 0,
	                  -ECONNREFUSED,
	                  "postgresql:///db?host=/nonexistent-dir&password=***&user=u: cannot "
	                  "connect: ",
	                  "hunter2");
	expect_open_error("postgresql://u:p%40ss@/db?host=/nonexistent-dir", 0, -ECONNREFUSED,
	                  "postgresql://u:***@/db", "p%40ss");
	expect_open_error("postgres://u@/db?host=/nonexistent-dir", 0, -ECONNREFUSED,
	                  "postgres://u@/db?host=/nonexistent-dir: cannot connect: ", NULL);
	/* A connection string libpq does not take: libpq's own message would
	 * echo the part it cannot read, a password among them. */
	snprintf(conn, sizeof(conn), "postgresql://[bad");
	expect_open_error(conn, 0, -EINVAL,
	                  "postgresql://***: not a connection string libpq can read", NULL);
	expect_open_error("postgresql:user:hunter2@host/db", 0, -EINVAL,
	                  "postgresql:***: not a connection string libpq can read", "hunter2");
	expect_open_error("postgresql://u:p%zzhunter2@/db?host=/nonexistent-dir", 0, -EINVAL,
	                  "not a connection string libpq can read", "hunter2");
	expect_open_error("postgresql:///db?host=/nonexistent-dir&sslpassword=hunter2", 0,
	                  -ECONNREFUSED, "sslpassword=***", "hunter2");
}

/* Ends every other connection to the database, as a server restart or
 * an administrator would, and gives the backends time to go. */
static void kill_others(const char *db)
{
	CHECK(sql(db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
	              "WHERE datname = current_database() AND pid <> pg_backend_pid()") != NULL);
	usleep(100000);
}

/* The writer's connection dies before its commit: it reconnects and
 * commits once. */
void test_reconnect(void)
{
	struct store *w, *r;
	struct store_batch *b;
	uint32_t s;

	fresh_db("c_retry");
	w = open_ok("c_retry", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	s = series(b, "h", "r");
	CHECK(store_batch_add(b, s, T0, stack(b, "k"), 3, 3) == 0);
	CHECK(sql("c_retry", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
	                     "WHERE datname = 'c_retry' AND pid <> pg_backend_pid()") != NULL);
	usleep(100000);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_retry", STORE_READONLY);
	if (r) {
		CHECK_STR(dump(r, find_series(r, "h", "r", NULL), INT64_MIN, INT64_MAX),
		          "1700000040 k 3 3\n");
		store_close(r);
	}
	CHECK_STR(sql("c_retry", "SELECT value FROM flamefs_meta WHERE key = 'commits'"), "1");
	/* The server commits but the reply is lost: the retry finds the
	 * token and does not commit again. */
	setenv("FLAMEFS_TEST_LOSE_REPLY", "1", 1);
	b = store_batch_new(w);
	s = series(b, "h", "r");
	CHECK(store_batch_add(b, s, T0, stack(b, "k;k2"), 5, 5) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	unsetenv("FLAMEFS_TEST_LOSE_REPLY");
	CHECK_STR(sql("c_retry", "SELECT value FROM flamefs_meta WHERE key = 'commits'"), "2");
	CHECK_STR(sql("c_retry", "SELECT count(*) || ' ' || sum(total_samples) FROM counts"),
	          "2 8");
	CHECK_STR(sql("c_retry", "SELECT samples FROM series"), "8");
	CHECK(store_node_count(w) == 3);
	/* A reader whose connection died reconnects on refresh. */
	r = open_ok("c_retry", STORE_READONLY);
	if (r) {
		sql("c_retry", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
		               "WHERE datname = 'c_retry' AND pid <> pg_backend_pid()");
		usleep(100000);
		CHECK(store_refresh(r) == 0);
		CHECK(store_node_count(r) == 3);
		store_close(r);
	}
	/* Listing series, as an import does right after opening, survives
	 * the connection's death for a writer and a reader; inside a
	 * snapshot it is an error (the snapshot is gone), and the next
	 * snapshot reads again. */
	r = open_ok("c_retry", STORE_READONLY);
	if (r) {
		struct store_series *list;
		size_t n;

		kill_others("c_retry");
		CHECK(store_series_list(w, &list, &n) == 0 && n == 1 && list[0].samples == 8);
		if (n)
			store_series_free(list, n);
		kill_others("c_retry");
		CHECK(store_series_list(r, &list, &n) == 0 && n == 1 && list[0].samples == 8);
		if (n)
			store_series_free(list, n);
		CHECK(r->ops->snapshot(r, true) == 0);
		kill_others("c_retry");
		CHECK(store_series_list(r, &list, &n) < 0);
		CHECK(strstr(store_errmsg(r), "listing series") != NULL);
		CHECK(r->ops->snapshot(r, false) < 0);
		CHECK(r->ops->snapshot(r, true) == 0);
		CHECK(store_series_list(r, &list, &n) == 0 && n == 1);
		if (n)
			store_series_free(list, n);
		CHECK(r->ops->snapshot(r, false) == 0);
		store_close(r);
	}
	store_close(w);
}

/* A database whose values are not what flamefs wrote (damaged, altered by
 * hand, or a hostile server): every number is checked before it is used
 * and every binary value's length before it is read, so each read and
 * prune fails with a message instead of writing or reading out of
 * bounds (AddressSanitizer in CI's second stage sees any such access). */
static void hostile_db(const char *db, const char *tamper)
{
	struct store *w;
	struct store_batch *b;
	uint32_t a, c;

	fresh_db(db);
	w = open_ok(db, STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	a = series(b, "h", "app");
	c = series(b, "h", "other");
	CHECK(store_batch_add(b, a, T0, stack(b, "main;work"), 3, 3) == 0);
	CHECK(store_batch_add(b, c, T0 + 60, stack(b, "main;idle"), 4, 4) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	/* the views stand in the way of altering their tables' columns */
	CHECK(sql(db,
	          "DROP VIEW count_entries; DROP VIEW nodes; DROP VIEW frames;"
	          " DROP VIEW series_labels; %s",
	          tamper) != NULL);
}

static void expect_unexpected(struct store *s, int r, const char *what)
{
	if (r != -EIO || !strstr(store_errmsg(s), "unexpected reply from the server")) {
		fprintf(stderr, "  %s: %d, \"%s\"\n", what, r, store_errmsg(s));
		check_failures++;
	}
}

void test_hostile(void)
{
	struct store *s;
	struct store_series *l = NULL;
	size_t n = 0;
	struct store_prune_stats st;
	struct store_prune_opts o = {.before = INT64_MAX};
	uint32_t a;

	/* Series ids longer than any int4: prune's id arrays were sized for
	 * 11 characters an id. */
	hostile_db("c_hostile1", "ALTER TABLE series ALTER COLUMN id TYPE text;"
	                         "UPDATE series SET id = repeat('9', 40) || id");
	s = open_ok("c_hostile1", STORE_READONLY);
	if (s) {
		expect_unexpected(s, store_series_list(s, &l, &n), "series list, long ids");
		store_close(s);
	}
	expect_open_error(uri("c_hostile1"), 0, -EIO, "a series id (row 0, column 0)", NULL);
	/* prune on a handle opened before the tampering */
	hostile_db("c_hostile2", "SELECT 1");
	s = open_ok("c_hostile2", 0);
	if (s) {
		CHECK(sql("c_hostile2", "ALTER TABLE series ALTER COLUMN id TYPE text;"
		                        "UPDATE series SET id = repeat('9', 40) || id") != NULL);
		expect_unexpected(s, store_prune(s, &o, &st), "prune, long ids");
		CHECK(st.series == 0 && st.samples == 0);
		store_close(s);
	}
	CHECK_STR(sql("c_hostile2", "SELECT count(*) FROM counts"), "2");
	/* Negative and signed counts where unsigned ones belong. */
	hostile_db("c_hostile3", "UPDATE series SET weight = -5 WHERE binary_name = 'app'");
	s = open_ok("c_hostile3", STORE_READONLY);
	if (s) {
		expect_unexpected(s, store_series_list(s, &l, &n),
		                  "series list, a negative weight");
		store_close(s);
	}
	hostile_db("c_hostile4", "UPDATE flamefs_meta SET value = '-1' WHERE key = 'commits'");
	expect_open_error(uri("c_hostile4"), STORE_READONLY, -EIO, "store is damaged", NULL);
	/* Binary values shorter than the reader needs: an int4 bucket and an
	 * int2 run start were read as 8 and 4 bytes. */
	hostile_db("c_hostile5", "ALTER TABLE counts ALTER COLUMN bucket TYPE int4"
	                         " USING (bucket / 60)::int4");
	s = open_ok("c_hostile5", STORE_READONLY);
	if (s) {
		struct dump d = {.s = s};

		a = find_series(s, "h", "app", NULL);
		CHECK(a != 0);
		expect_unexpected(s, store_series_counts(s, a, 0, T0 + 600, dump_fn, &d),
		                  "counts, an int4 bucket");
		CHECK(d.len == 0);
		CHECK(strstr(store_errmsg(s), "a bucket") != NULL);
		store_close(s);
	}
	hostile_db("c_hostile6", "ALTER TABLE node_runs ALTER COLUMN first TYPE int2");
	expect_open_error(uri("c_hostile6"), STORE_READONLY, -EIO,
	                  "a node run's first id (row 0, column 0)", NULL);
	store_series_free(l, n);
}

int main(int argc, char **argv)
{
	pghost = argc > 2 ? argv[1] : getenv("FLAMEFS_TEST_PGHOST");
	pguser = argc > 2 ? argv[2] : getenv("FLAMEFS_TEST_PGUSER");
	pgport = argc > 3 ? argv[3] : getenv("FLAMEFS_TEST_PGPORT");
	if (pgport && !*pgport)
		pgport = NULL;
	if (!pghost || !*pghost || !pguser || !*pguser) {
		printf("SKIP: no PostgreSQL server given (test-central SOCKET_DIR USER [PORT], "
		       "or $FLAMEFS_TEST_PGHOST and $FLAMEFS_TEST_PGUSER; tests/test-central.sh "
		       "starts one)\n");
		return 77;
	}
	if (!getenv("FLAMEFS_PG_RETRY_SECONDS"))
		setenv("FLAMEFS_PG_RETRY_SECONDS", "10", 1);
	if (!sql("postgres", "SELECT 1")) {
		printf("SKIP: cannot reach the PostgreSQL server at %s\n", pghost);
		return 77;
	}
	if (getenv("FLAMEFS_TEST_HASH_BITS")) {
		run("collision", test_collision);
		return central_failures ? 1 : 0;
	}
	run("write_read", test_write_read);
	run("two_writers", test_two_writers);
	run("copy_entries", test_copy_entries);
	run("copy_cache", test_copy_cache);
	run("prune", test_prune);
	run("refusals", test_refusals);
	run("reconnect", test_reconnect);
	run("hostile", test_hostile);
	run("samples_block", test_samples_block);
	run("samples", test_samples);
	run("samples_copy", test_samples_copy);
	run("samples_rollup", test_samples_rollup);
	run("samples_snapshot", test_samples_snapshot);
	run("samples_upgrade", test_samples_upgrade);
	run("samples_prefetch", test_samples_prefetch);
	run("samples_damaged", test_samples_damaged);
	run("samples_push", test_samples_push);
	run("push_moments", test_push_moments);
	run("samples_prune", test_samples_prune);
	run("samples_two_writers", test_samples_two_writers);
	run("readme_sql", test_readme_sql);
	run("labels", test_labels);
	run("labels_upgrade", test_labels_upgrade);
	run("labels_push", test_labels_push);
	run("labels_push_fold", test_labels_push_fold);
	return central_failures ? 1 : 0;
}
