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
 */
#include "samples-block-internal.h"
#include "store-internal.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "check.h"

static int failures;
static int checks_before; /* check_failures when the running test began */
#define test_failed (check_failures != checks_before)
static const char *pghost, *pguser, *pgport;

/* ---- the server --------------------------------------------------------------- */

static char *uri(const char *db)
{
	static char buf[8][512];
	static int next;
	char *b = buf[next++ % 8];

	snprintf(b, 512, "postgresql:///%s?host=%s&user=%s%s%s", db, pghost, pguser,
	         pgport ? "&port=" : "", pgport ? pgport : "");
	return b;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Runs SQL on database db; returns the first value of the result (a
 * static buffer) or NULL on failure. */
static const char *sql(const char *db, const char *fmt, ...)
{
	static char out[4096];
	char q[4096];
	va_list ap;
	PGconn *c = PQconnectdb(uri(db));
	PGresult *res;
	const char *r = NULL;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "  cannot connect to %s: %s", db, PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexec(c, q);
	if (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK) {
		snprintf(out, sizeof(out), "%s",
		         PQntuples(res) > 0 && PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
		r = out;
	} else {
		fprintf(stderr, "  %s: %s", q, PQerrorMessage(c));
	}
	PQclear(res);
	PQfinish(c);
	return r;
}

static void fresh_db(const char *db)
{
	sql("postgres", "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
	sql("postgres", "CREATE DATABASE %s", db);
}

/* ---- helpers --------------------------------------------------------------------- */

static struct store *open_ok(const char *db, int flags)
{
	struct store *s = NULL;
	char err[512];
	int r = store_open(uri(db), flags, &s, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "  open %s: %s\n", db, err);
		check_failures++;
		return NULL;
	}
	return s;
}

static uint32_t frame(struct store_batch *b, const char *name)
{
	struct store_frame f = {.name = name, .name_len = strlen(name), .kind = STORE_FRAME_USER};
	uint32_t id = 0;

	CHECK(store_batch_frame(b, &f, &id) == 0);
	return id;
}

/* Interns the stack "a;b;c" and returns its leaf node. */
static uint32_t stack(struct store_batch *b, const char *folded)
{
	char buf[256], *save = NULL;
	uint32_t node = STORE_ROOT_NODE;

	snprintf(buf, sizeof(buf), "%s", folded);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
		CHECK(store_batch_node(b, node, frame(b, t), &node) == 0);
	return node;
}

static uint32_t series(struct store_batch *b, const char *host, const char *binary)
{
	struct store_series_key k = {.host = host,
	                             .binary = binary,
	                             .version = "1",
	                             .event = "cpu",
	                             .unit = "nanoseconds"};
	uint32_t id = 0;

	CHECK(store_batch_series(b, &k, &id) == 0);
	return id;
}

/* The folded name of a node ("a;b;c"). */
static void node_name(struct store *s, uint32_t node, char *out, size_t len)
{
	char parts[32][64];
	int n = 0;
	size_t o = 0;

	out[0] = '\0';
	while (node != STORE_ROOT_NODE && n < 32) {
		uint32_t parent, fr;
		struct store_frame f;

		if (store_node_get(s, node, &parent, &fr) < 0 || store_frame_get(s, fr, &f) < 0) {
			snprintf(out, len, "?");
			return;
		}
		snprintf(parts[n++], 64, "%.*s", (int)f.name_len, f.name);
		node = parent;
	}
	while (n-- > 0)
		o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ";" : "", parts[n]);
}

struct dump {
	struct store *s;
	char buf[4096];
	size_t len;
	int64_t last_bucket;
	uint32_t last_node;
	bool ordered;
};

static int dump_fn(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct dump *d = ctx;
	char name[512];

	if (d->len &&
	    (bucket < d->last_bucket || (bucket == d->last_bucket && node <= d->last_node)))
		d->ordered = false;
	d->last_bucket = bucket;
	d->last_node = node;
	node_name(d->s, node, name, sizeof(name));
	d->len += (size_t)snprintf(d->buf + d->len, sizeof(d->buf) - d->len,
	                           "%" PRId64 " %s %" PRIu64 " %" PRIu64 "\n", bucket, name,
	                           samples, weight);
	return 0;
}

/* "bucket stack samples weight" lines of a series, in store order. */
static const char *dump(struct store *s, uint32_t id, int64_t from, int64_t to)
{
	static struct dump d;

	memset(&d, 0, sizeof(d));
	d.s = s;
	d.ordered = true;
	CHECK(store_series_counts(s, id, from, to, dump_fn, &d) == 0);
	CHECK(d.ordered);
	return d.buf;
}

/* The id of the listed series of (host, binary), or 0. */
static uint32_t find_series(struct store *s, const char *host, const char *binary,
                            struct store_series *out)
{
	struct store_series *l = NULL;
	size_t n = 0;
	uint32_t id = 0;

	CHECK(store_series_list(s, &l, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].host, host) && !strcmp(l[i].binary, binary)) {
			id = l[i].id;
			if (out) {
				*out = l[i];
				out->host = out->binary = out->version = out->event = out->unit =
				        NULL;
			}
		}
	store_series_free(l, n);
	return id;
}

#define T0 1700000040 /* a bucket start: 28333334 * 60 */

/* ---- tests ------------------------------------------------------------------------ */

static void test_write_read(void)
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
static void test_two_writers(void)
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

static void test_collision(void)
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

static void test_copy_entries(void)
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
static void test_copy_cache(void)
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

static void test_prune(void)
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

static void expect_open_error(const char *conn, int flags, int want, const char *needle,
                              const char *never)
{
	struct store *s = NULL;
	char err[512] = "";
	int r = store_open(conn, flags, &s, err, sizeof(err));

	CHECK(r == want);
	CHECK(s == NULL);
	if (!strstr(err, needle)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err, needle);
		check_failures++;
	}
	if (never && strstr(err, never)) {
		fprintf(stderr, "  message \"%s\" shows \"%s\"\n", err, never);
		check_failures++;
	}
	store_close(s);
}

static void test_refusals(void)
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
	sql("c_future", "UPDATE flamefs_meta SET value = '4' WHERE key = 'oldest_reader'");
	snprintf(want, sizeof(want),
	         "%s: schema version 9 is newer than this flamefs understands (3)",
	         uri("c_future"));
	expect_open_error(uri("c_future"), 0, -EPROTONOSUPPORT, want, NULL);
	expect_open_error(uri("c_future"), STORE_READONLY, -EPROTONOSUPPORT, want, NULL);
	/* A newer schema that says readers of this one read it correctly is
	 * read; it is never written. */
	sql("c_future", "UPDATE flamefs_meta SET value = '3' WHERE key = 'oldest_reader'");
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
static void test_reconnect(void)
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
	CHECK(sql(db, "DROP VIEW count_entries; DROP VIEW nodes; DROP VIEW frames; %s", tamper) !=
	      NULL);
}

static void expect_unexpected(struct store *s, int r, const char *what)
{
	if (r != -EIO || !strstr(store_errmsg(s), "unexpected reply from the server")) {
		fprintf(stderr, "  %s: %d, \"%s\"\n", what, r, store_errmsg(s));
		check_failures++;
	}
}

static void test_hostile(void)
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

/* ---- the recent tier ------------------------------------------------------------- */

#define US   1000000LL
#define T0US ((int64_t)T0 * US)

struct svec {
	struct store_sample *v;
	size_t n, cap;
	int stop_after; /* > 0: the callback returns 7 after that many */
};

static void svec_add(struct svec *a, const struct store_sample *smp)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 256;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = *smp;
}

static int svec_fn(void *ctx, const struct store_sample *smp)
{
	struct svec *a = ctx;

	svec_add(a, smp);
	return a->stop_after && a->n == (size_t)a->stop_after ? 7 : 0;
}

/* The order a walk must keep: time, and within a time (pid, tid, node,
 * weight), so that a walk is one sequence whatever the rows. */
static int smp_cmp(const void *pa, const void *pb)
{
	const struct store_sample *a = pa, *b = pb;

	if (a->time_us != b->time_us)
		return a->time_us < b->time_us ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	if (a->weight != b->weight)
		return a->weight < b->weight ? -1 : 1;
	return 0;
}

static void svec_sort(struct svec *a)
{
	if (a->n > 1)
		qsort(a->v, a->n, sizeof(*a->v), smp_cmp);
}

/* The samples of a in [from, to), in order. */
static struct svec svec_window(const struct svec *a, int64_t from, int64_t to)
{
	struct svec o = {0};

	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].time_us >= from && a->v[i].time_us < to)
			svec_add(&o, &a->v[i]);
	svec_sort(&o);
	return o;
}

/* The detail of a series over [from, to) as walked; the walk returns 0. */
static struct svec walk(struct store *s, uint32_t id, int64_t from, int64_t to)
{
	struct svec o = {0};

	CHECK(store_series_samples(s, id, from, to, svec_fn, &o) == 0);
	return o;
}

/* Whether got (as walked) is exactly want (sorted here). */
static bool same_detail(const struct svec *got, struct svec *want, const char *what)
{
	svec_sort(want);
	if (got->n != want->n) {
		fprintf(stderr, "  %s: %zu samples walked, %zu expected\n", what, got->n, want->n);
		return false;
	}
	for (size_t i = 0; i < got->n; i++)
		if (smp_cmp(&got->v[i], &want->v[i])) {
			fprintf(stderr,
			        "  %s: sample %zu: %" PRId64 " %u %u %u %" PRIu64
			        ", expected %" PRId64 " %u %u %u %" PRIu64 "\n",
			        what, i, got->v[i].time_us, got->v[i].node, got->v[i].pid,
			        got->v[i].tid, got->v[i].weight, want->v[i].time_us,
			        want->v[i].node, want->v[i].pid, want->v[i].tid, want->v[i].weight);
			return false;
		}
	return true;
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A sample in [from_us, from_us + span_us) on one of the nodes. */
static struct store_sample gen_sample(uint64_t *x, int64_t from_us, int64_t span_us,
                                      const uint32_t *nodes, int nnodes)
{
	static const uint32_t pids[] = {100, 200, 4194303};
	struct store_sample s;
	uint32_t pid = pids[rnd(x) % 3];

	s.time_us = from_us + (int64_t)(rnd(x) % (uint64_t)span_us);
	s.node = nodes[rnd(x) % (uint64_t)nnodes];
	s.pid = pid;
	s.tid = rnd(x) % 4 ? pid + (uint32_t)(rnd(x) % 3) : pid - 1;
	s.weight = rnd(x) % 5 ? 10101010 + rnd(x) % 20000 : 10101010;
	return s;
}

/* One round of test_samples: 1500 samples over three buckets of "app"
 * (with its edges, and in round 1 a sample taken twice), their counts
 * in "ref" by batch_add, 4 on perf's clock in "boot", and samples
 * refused, in one commit.  nodes[] gets the five stacks. */
static void samples_write_round(struct store *w, int round, uint64_t *x, uint32_t nodes[5],
                                struct svec *all, struct svec *boot)
{
	static const char *stacks[] = {"main;a", "main;a;b", "main;c", "main;c;d;e", "idle"};
	struct store_batch *b = store_batch_new(w);
	uint32_t sa = series(b, "h", "app"), sb = series(b, "h", "ref"),
	         sboot = series(b, "h", "boot");

	for (int i = 0; i < 5; i++)
		nodes[i] = stack(b, stacks[i]);
	/* three buckets, two commits (two rows a bucket), with its edges
	 * and a sample taken twice */
	for (int i = 0; i < 1500; i++) {
		struct store_sample smp = gen_sample(x, T0US, 180 * US, nodes, 5);

		if (i == 0)
			smp.time_us = T0US + round * 60 * US;
		if (i == 1)
			smp.time_us = T0US + (round + 1) * 60 * US - 1;
		if (i == 2 && round)
			smp = all->v[17];
		CHECK(store_batch_sample(b, sa, &smp) == 0);
		CHECK(store_batch_add(b, sb, (smp.time_us / US), smp.node, 1, smp.weight) == 0);
		svec_add(all, &smp);
	}
	/* perf's clock, below 1970 too */
	for (int i = 0; i < 4; i++) {
		struct store_sample smp = {.time_us = round ? -1 - i : 5 * US + i * 70 * US,
		                           .node = nodes[i],
		                           .pid = 1,
		                           .tid = 1,
		                           .weight = 1};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	{
		struct store_sample bad = {.time_us = T0US, .node = 1u << 30};

		CHECK(store_batch_sample(b, sa, &bad) == -EINVAL);
		bad.node = nodes[0];
		CHECK(store_batch_sample(b, 999, &bad) == -EINVAL);
		bad.time_us = INT64_MIN;
		CHECK(store_batch_sample(b, sa, &bad) == -ERANGE);
		bad.time_us = INT64_MAX;
		CHECK(store_batch_sample(b, sa, &bad) == -ERANGE);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
}

/* The "app" series' totals and moments, and the same detail through the
 * documented SQL decoder: its id. */
static uint32_t samples_check_app(struct store *r, const struct svec *all)
{
	struct store_series e;
	uint32_t sa = find_series(r, "h", "app", &e);
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	uint64_t wsum = 0;
	__uint128_t sum = 0;
	char want[64], chk[64];

	CHECK(e.samples == 3000 && e.recent_samples == 3000);
	for (size_t i = 0; i < all->n; i++) {
		lo = all->v[i].time_us < lo ? all->v[i].time_us : lo;
		hi = all->v[i].time_us > hi ? all->v[i].time_us : hi;
		wsum += all->v[i].weight;
	}
	CHECK(e.first_us == lo && e.last_us == hi);
	CHECK(lo == T0US && hi < T0US + 180 * US);
	CHECK(e.weight == wsum);
	/* the documented decoder gives the same detail in SQL */
	snprintf(want, sizeof(want), "3000 %" PRIu64, wsum);
	CHECK_STR(sql("c_smp",
	              "SELECT count(*) || ' ' || sum(weight) FROM sample_entries"
	              " WHERE series = %u",
	              sa),
	          want);
	for (size_t i = 0; i < all->n; i++)
		sum += (__uint128_t)((uint64_t)all->v[i].time_us % 1000003) * 7 +
		       all->v[i].node * 131u + all->v[i].pid * 17u + all->v[i].tid;
	snprintf(chk, sizeof(chk), "%" PRIu64, (uint64_t)sum);
	CHECK_STR(sql("c_smp",
	              "SELECT sum((time_us %% 1000003) * 7 + node * 131 + pid * 17"
	              " + tid) FROM sample_entries WHERE series = %u",
	              sa),
	          chk);
	return sa;
}

/* Walks of "app": its counts equal "ref"'s, the whole series and
 * windows with edges exact, and a walk that stops where its callback
 * says. */
static void samples_check_walks(struct store *r, uint32_t sa, struct svec *all)
{
	static const int64_t win[][2] = {{T0US + 12345678, T0US + 100000000},
	                                 {T0US + 60 * US, T0US + 120 * US},
	                                 {T0US + 60 * US - 1, T0US + 60 * US + 1},
	                                 {T0US - 1, T0US + 1},
	                                 {T0US + 5, T0US + 5},
	                                 {T0US + 200 * US, INT64_MAX}};
	struct store_series e;
	uint32_t sb = find_series(r, "h", "ref", &e);
	struct svec got, st = {.stop_after = 10};
	char a[4096];

	CHECK(e.recent_samples == 0 && e.first_us == T0US);
	snprintf(a, sizeof(a), "%s", dump(r, sa, INT64_MIN, INT64_MAX));
	CHECK_STR(dump(r, sb, INT64_MIN, INT64_MAX), a);
	CHECK(strlen(a) > 100);
	got = walk(r, sa, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, all, "the whole series"));
	free(got.v);
	for (size_t i = 0; i < sizeof(win) / sizeof(win[0]); i++) {
		struct svec wnt = svec_window(all, win[i][0], win[i][1]);
		char what[64];

		snprintf(what, sizeof(what), "window %zu", i);
		got = walk(r, sa, win[i][0], win[i][1]);
		CHECK(same_detail(&got, &wnt, what));
		if (i == 3)
			CHECK(got.n >= 1 && got.v[0].time_us == T0US);
		free(got.v);
		free(wnt.v);
	}
	/* a walk stops where its callback says */
	CHECK(store_series_samples(r, sa, INT64_MIN, INT64_MAX, svec_fn, &st) == 7);
	CHECK(st.n == 10);
	free(st.v);
}

/* keep 0: counted, no detail kept, from then on; then the default again. */
static void samples_keep_zero(struct store *w, uint32_t node)
{
	struct store_batch *b;
	struct store *r;
	struct store_series e;
	struct store_sample smp = {.time_us = T0US + 3, .node = node, .weight = 5};

	CHECK(store_set_keep_samples(w, 0) == 0 && store_keep_samples(w) == 0);
	b = store_batch_new(w);
	CHECK(store_batch_sample(b, series(b, "h", "app"), &smp) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_smp", STORE_READONLY);
	if (r) {
		CHECK(store_keep_samples(r) == 0);
		find_series(r, "h", "app", &e);
		CHECK(e.samples == 3001 && e.recent_samples == 3000 && e.first_us == T0US);
		store_close(r);
	}
	CHECK(store_set_keep_samples(w, -1) == -EINVAL);
	CHECK(store_set_keep_samples(w, STORE_DEFAULT_KEEP_SAMPLES) == 0);
}

/* Samples in, walked back exact; counts equal to batch_add's. */
static void test_samples(void)
{
	struct store *w, *r;
	struct svec all = {0}, boot = {0}, got, wnt;
	struct store_series e;
	uint32_t sa, sboot, nodes[5];
	uint64_t x = 88172645463325252ull;

	fresh_db("c_smp");
	w = open_ok("c_smp", STORE_CREATE);
	if (!w)
		return;
	CHECK(store_keep_samples(w) == STORE_DEFAULT_KEEP_SAMPLES);
	for (int round = 0; round < 2; round++)
		samples_write_round(w, round, &x, nodes, &all, &boot);
	r = open_ok("c_smp", STORE_READONLY);
	if (!r)
		goto out;
	sa = samples_check_app(r, &all);
	samples_check_walks(r, sa, &all);
	sboot = find_series(r, "h", "boot", &e);
	CHECK(e.first_us == -4 && e.last_us == 5 * US + 210 * US && e.recent_samples == 8);
	got = walk(r, sboot, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &boot, "perf's clock"));
	free(got.v);
	/* the writer reads its own detail too */
	got = walk(w, sa, T0US, T0US + 60 * US);
	wnt = svec_window(&all, T0US, T0US + 60 * US);
	CHECK(same_detail(&got, &wnt, "the writer's walk"));
	free(wnt.v);
	free(got.v);
	store_close(r);
	samples_keep_zero(w, nodes[0]);
out:
	free(all.v);
	free(boot.v);
	store_close(w);
}

/* A copy's detail: batch_detail replaces what the same source gave a
 * (series, bucket) before, beside other sources' and direct writes. */
static void test_samples_copy(void)
{
	const char *src = "0123456789abcdef0123456789abcdef",
	           *src2 = "fedcba9876543210fedcba9876543210";
	struct store *w, *r;
	struct store_batch *b;
	struct store_series e;
	struct svec want = {0}, got;
	uint32_t s, n, m;
	struct store_sample v1[3], v2[2], v3[1], d1;

	fresh_db("c_scopy");
	w = open_ok("c_scopy", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 0, 1) == 0);
	s = series(b, "far", "db");
	n = stack(b, "q;r");
	m = stack(b, "q;s");
	for (int i = 0; i < 3; i++)
		v1[i] = (struct store_sample){T0US + 1000 * i, i ? n : m, 7, 8, 100 + (uint64_t)i};
	CHECK(store_batch_add(b, s, T0, n, 2, 201) == 0);
	CHECK(store_batch_add(b, s, T0, m, 1, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v1, 3) == 0);
	/* bad input */
	CHECK(w->ops->batch_detail(b, s, T0 + 1, v1, 3) == -EINVAL);
	CHECK(w->ops->batch_detail(b, s, T0 + 60, v1, 3) == -EINVAL);
	CHECK(w->ops->batch_detail(b, 77, T0, v1, 3) == -EINVAL);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 3 && e.recent_samples == 3);
		CHECK(e.first_us == T0US && e.last_us == T0US + 2000);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		for (int i = 0; i < 3; i++)
			svec_add(&want, &v1[i]);
		CHECK(same_detail(&got, &want, "the first copy"));
		free(got.v);
		store_close(r);
	}
	/* the same source again: its detail of that bucket is replaced */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 1, 2) == 0);
	s = series(b, "far", "db");
	for (int i = 0; i < 2; i++)
		v2[i] = (struct store_sample){T0US + 5000 + i, n, 9, 9, 50};
	CHECK(store_batch_add(b, s, T0, n, 2, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v2, 2) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	/* another source, and a direct write, beside it */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src2, 0, 1) == 0);
	s = series(b, "far", "db");
	v3[0] = (struct store_sample){T0US + 5000, n, 1, 1, 1};
	CHECK(store_batch_add(b, s, T0, n, 1, 1) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v3, 1) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	b = store_batch_new(w);
	s = series(b, "far", "db");
	d1 = (struct store_sample){T0US + 59 * US, m, 3, 4, 5};
	CHECK(store_batch_sample(b, s, &d1) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 4 && e.recent_samples == 4);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		svec_add(&want, &v2[0]);
		svec_add(&want, &v2[1]);
		svec_add(&want, &v3[0]);
		svec_add(&want, &d1);
		CHECK(same_detail(&got, &want, "replaced, beside another source and a write"));
		free(got.v);
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000040 q;r 3 101\n"
		                                            "1700000040 q;s 1 5\n");
		store_close(r);
	}
	/* the source now has no detail of the bucket (rolled up there) */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 2, 3) == 0);
	s = series(b, "far", "db");
	CHECK(store_batch_add(b, s, T0, n, 2, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, NULL, 0) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 4 && e.recent_samples == 2);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		svec_add(&want, &v3[0]);
		svec_add(&want, &d1);
		CHECK(same_detail(&got, &want, "a source's detail gone"));
		free(got.v);
		CHECK_STR(sql("c_scopy", "SELECT count(*) || ' ' || sum(n) FROM samples"), "2 2");
		store_close(r);
	}
	/* a batch that is no copy adds the detail it is given */
	b = store_batch_new(w);
	s = series(b, "far", "db");
	CHECK(w->ops->batch_detail(b, s, T0, v2, 2) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK_STR(sql("c_scopy", "SELECT samples FROM series_recent"), "4");
	free(want.v);
	store_close(w);
}

/* test_samples_rollup's newest moment: exactly 2 h after the end of the
 * bucket at T0 + 30 min, so that bucket is the last one forgotten; and
 * the newest on perf's clock, which has its own. */
#define ROLL_NEWEST      (T0US + (30 * 60 + 60 + STORE_DEFAULT_KEEP_SAMPLES) * US)
#define ROLL_BOOT_NEWEST ((5000 + 60 + STORE_DEFAULT_KEEP_SAMPLES) * US + 999999)

/* test_samples_rollup's store, in one commit: "app" of h with a bucket
 * every 5 minutes up to the newest and one sample in the first bucket
 * that stays, "app" of h2 whose own newest is older, and "boot" on perf's
 * clock.  ids[] gets the three series. */
static void rollup_fill(struct store *w, uint32_t ids[3], struct svec *app, struct svec *app2,
                        struct svec *boot)
{
	const int64_t newest = ROLL_NEWEST, boot_newest = ROLL_BOOT_NEWEST;
	struct store_batch *b = store_batch_new(w);
	uint32_t sa, s2, sboot, node;

	sa = series(b, "h", "app");
	s2 = series(b, "h2", "app");
	sboot = series(b, "h", "boot");
	node = stack(b, "main;work");
	/* a bucket every 5 minutes, 3 samples each, up to the newest */
	for (int64_t t = T0US; t <= newest; t += 300 * US)
		for (int k = 0; k < 3; k++) {
			struct store_sample smp = {t + k * 17 * US, node, 10, 11, 1 + (uint64_t)k};

			if (smp.time_us > newest)
				smp.time_us = newest;
			CHECK(store_batch_sample(b, sa, &smp) == 0);
			svec_add(app, &smp);
		}
	{
		struct store_sample last = {newest, node, 10, 11, 9};
		/* in the first bucket that stays: it ends a minute after
		 * newest - keep */
		struct store_sample edge = {T0US + (30 * 60 + 65) * US, node, 10, 11, 9};

		CHECK(store_batch_sample(b, sa, &last) == 0);
		svec_add(app, &last);
		CHECK(store_batch_sample(b, sa, &edge) == 0);
		svec_add(app, &edge);
	}
	/* another host whose own newest is older: the store's newest counts */
	for (int64_t t = T0US + 10 * US; t < T0US + 60 * 60 * US; t += 600 * US) {
		struct store_sample smp = {t, node, 20, 20, 2};

		CHECK(store_batch_sample(b, s2, &smp) == 0);
		svec_add(app2, &smp);
	}
	/* perf's clock has its own newest */
	for (int64_t t = 100 * US; t <= boot_newest; t += 250 * US) {
		struct store_sample smp = {t, node, 1, 1, 1};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	{
		struct store_sample smp = {boot_newest, node, 1, 1, 1};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	ids[0] = sa;
	ids[1] = s2;
	ids[2] = sboot;
}

/* What a roll-up with the default window keeps of each of sv[] (sorted
 * in place) into kept[]; *gone and *slices: the samples and (series,
 * bucket) slices it forgets, those of buckets that end at or before
 * newest - keep on their clock. */
static void rollup_expect(struct svec *sv[3], struct svec kept[3], uint64_t *gone, uint64_t *slices)
{
	int64_t cut = ROLL_NEWEST / US - STORE_DEFAULT_KEEP_SAMPLES;
	int64_t boot_cut = ROLL_BOOT_NEWEST / US - STORE_DEFAULT_KEEP_SAMPLES;

	*gone = *slices = 0;
	for (int i = 0; i < 3; i++) {
		int64_t c = i == 2 ? boot_cut : cut, last_bucket = INT64_MIN;

		svec_sort(sv[i]);
		for (size_t k = 0; k < sv[i]->n; k++) {
			int64_t bucket = sv[i]->v[k].time_us / US / 60 * 60;

			if (bucket + 60 > c) {
				svec_add(&kept[i], &sv[i]->v[k]);
				continue;
			}
			(*gone)++;
			*slices += bucket != last_bucket;
			last_bucket = bucket;
		}
	}
}

/* A reader opened after the roll-up: the detail kept[] of each series,
 * counts as before[] (dumps), and the totals of "app" (app_n samples). */
static void rollup_check_reader(const uint32_t ids[3], struct svec kept[3], char before[3][4096],
                                size_t app_n)
{
	struct store *r = open_ok("c_roll", STORE_READONLY);
	struct store_series e;
	struct svec got;

	if (!r)
		return;
	for (int i = 0; i < 3; i++) {
		got = walk(r, ids[i], INT64_MIN, INT64_MAX);
		CHECK(same_detail(&got, &kept[i], "after the roll-up"));
		free(got.v);
		CHECK_STR(dump(r, ids[i], INT64_MIN, INT64_MAX), before[i]);
	}
	find_series(r, "h", "app", &e);
	CHECK(e.recent_samples == kept[0].n && e.samples == app_n);
	store_close(r);
}

/* A shorter window (10 minutes), kept in the store: the next roll-up
 * forgets more of "app" (sa), whose detail was kept[0], and old sees it
 * once refreshed. */
static void rollup_shorter_window(struct store *w, struct store *old, uint32_t sa,
                                  const struct svec kept[3])
{
	struct store_rollup_stats st;
	struct svec got, k2 = {0};

	CHECK(store_set_keep_samples(w, 600) == 0);
	CHECK(store_refresh(old) == 0 && store_keep_samples(old) == 600);
	CHECK(store_rollup(w, &st) == 0);
	for (size_t k = 0; k < kept[0].n; k++)
		if (kept[0].v[k].time_us / US / 60 * 60 + 60 > ROLL_NEWEST / US - 600)
			svec_add(&k2, &kept[0].v[k]);
	CHECK(st.samples > 0 && st.samples + k2.n + kept[2].n >= kept[0].n);
	CHECK(store_refresh(old) == 1);
	got = walk(old, sa, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &k2, "ten minutes kept"));
	free(got.v);
	free(k2.v);
}

/* The roll-up forgets exactly the detail of the buckets that end at or
 * before the newest moment on their clock minus the window; counts stay. */
static void test_samples_rollup(void)
{
	struct store *w, *old;
	struct store_batch *b;
	struct store_rollup_stats st;
	struct svec app = {0}, app2 = {0}, boot = {0}, got;
	struct svec *sv[3] = {&app, &app2, &boot}, kept[3] = {{0}};
	uint32_t ids[3];
	uint64_t gone, slices;
	char before[3][4096];

	fresh_db("c_roll");
	w = open_ok("c_roll", STORE_CREATE);
	if (!w)
		return;
	rollup_fill(w, ids, &app, &app2, &boot);
	old = open_ok("c_roll", STORE_READONLY);
	if (!old)
		goto out;
	for (int i = 0; i < 3; i++)
		snprintf(before[i], sizeof(before[i]), "%s",
		         dump(old, ids[i], INT64_MIN, INT64_MAX));
	CHECK(store_rollup(old, &st) == -EROFS);
	b = store_batch_new(w);
	CHECK(store_rollup(w, &st) == -EBUSY);
	store_batch_free(b);
	CHECK(store_rollup(w, &st) == 0);
	rollup_expect(sv, kept, &gone, &slices);
	CHECK(st.samples == gone && st.slices == slices && st.bytes > 0);
	/* app: 7 buckets of 3; app2: 4 of 1; boot: 20 of 1 */
	CHECK(gone == 45 && slices == 31);
	/* the bucket of T0 + 30 min went, the next one stayed */
	CHECK(kept[0].n && kept[0].v[0].time_us == T0US + (30 * 60 + 65) * US);
	CHECK(kept[1].n == 2 && kept[1].v[0].time_us == T0US + 2410 * US);
	rollup_check_reader(ids, kept, before, app.n);
	/* a reader's snapshot from before still sees all of it */
	got = walk(old, ids[0], INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &app, "the snapshot from before"));
	free(got.v);
	CHECK(store_refresh(old) == 1);
	got = walk(old, ids[0], INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &kept[0], "refreshed"));
	free(got.v);
	CHECK(store_rollup(w, &st) == 0 && st.slices == 0 && st.samples == 0);
	rollup_shorter_window(w, old, ids[0], kept);
	for (int i = 0; i < 3; i++)
		free(kept[i].v);
	store_close(old);
out:
	free(app.v);
	free(app2.v);
	free(boot.v);
	store_close(w);
}

/* A reader's snapshot sees a commit's detail whole or not at all. */
static void test_samples_snapshot(void)
{
	const char *src = "0123456789abcdef0123456789abcdef";
	struct store *w, *r;
	struct store_batch *b;
	uint32_t s = 0, s2 = 0, node;

	fresh_db("c_ssnap");
	w = open_ok("c_ssnap", STORE_CREATE);
	r = w ? open_ok("c_ssnap", STORE_READONLY) : NULL;
	if (!w || !r)
		goto out;
	for (uint64_t k = 1; k <= 20; k++) {
		struct store_sample v[20];
		struct store_series e;
		struct svec got;

		/* the reader lists in its snapshot ... */
		CHECK(store_refresh(r) == (k > 1));
		s = find_series(r, "far", "db", &e);
		/* ... a copy replaces the bucket's detail of two series (one
		 * by batch_detail, one by batch_sample: in a copy, both
		 * replace what the source gave before), in one commit ... */
		b = store_batch_new(w);
		CHECK(w->ops->batch_source(b, src, k - 1, k) == 0);
		node = stack(b, "q;r");
		for (uint64_t i = 0; i < k; i++)
			v[i] = (struct store_sample){T0US + (int64_t)i, node, 1, 1, k};
		CHECK(store_batch_add(b, series(b, "far", "db"), T0, node, k, k * k) == 0);
		CHECK(w->ops->batch_detail(b, series(b, "far", "db"), T0, v, k) == 0);
		CHECK(store_batch_sample(b, series(b, "near", "db"), &v[0]) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		/* ... and the reader still sees the state it listed */
		if (k > 1) {
			got = walk(r, s, INT64_MIN, INT64_MAX);
			CHECK(got.n == k - 1 && e.recent_samples == k - 1);
			for (size_t i = 0; i < got.n; i++)
				CHECK(got.v[i].weight == k - 1);
			free(got.v);
			s2 = find_series(r, "near", "db", &e);
			got = walk(r, s2, INT64_MIN, INT64_MAX);
			CHECK(got.n == 1 && e.recent_samples == 1 && got.v[0].weight == k - 1);
			free(got.v);
		}
		if (test_failed)
			break;
	}
out:
	store_close(r);
	store_close(w);
}

/* A schema 2 database (no recent tier): read as it is, upgraded by the
 * first writer, read again by a reader that was open meanwhile. */
static void test_samples_upgrade(void)
{
	struct store *w, *r2;
	struct store_batch *b;
	struct store_series e;
	struct store_footprint fp;
	struct svec got;
	uint32_t s, node;
	char counts[4096];

	fresh_db("c_up");
	w = open_ok("c_up", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	s = series(b, "h", "app");
	node = stack(b, "main;old");
	CHECK(store_batch_add(b, s, T0 + 7, node, 3, 30) == 0);
	CHECK(store_batch_add(b, s, T0 + 65, node, 1, 10) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	/* as schema 2 left it */
	CHECK(sql("c_up", "DROP VIEW sample_entries; DROP FUNCTION flamefs_samples(int8, bytea);"
	                  " DROP TABLE samples; DROP TABLE series_recent;"
	                  " DELETE FROM flamefs_meta WHERE key = 'oldest_reader';"
	                  " UPDATE flamefs_meta SET value = '2' WHERE key = 'schema'") != NULL);
	r2 = open_ok("c_up", STORE_READONLY);
	if (!r2)
		return;
	s = find_series(r2, "h", "app", &e);
	CHECK(e.first_us == (T0 + 7) * US && e.last_us == (T0 + 65) * US && e.recent_samples == 0);
	snprintf(counts, sizeof(counts), "%s", dump(r2, s, INT64_MIN, INT64_MAX));
	CHECK_STR(counts, "1700000040 main;old 3 30\n1700000100 main;old 1 10\n");
	got = walk(r2, s, INT64_MIN, INT64_MAX);
	CHECK(got.n == 0);
	free(got.v);
	CHECK(store_samples_prefetch(r2, &s, 1, INT64_MIN, INT64_MAX) == 0);
	CHECK(store_footprint(r2, &fp) == 0 && fp.samples_bytes == 0 && fp.samples == 0);
	CHECK(store_keep_samples(r2) == STORE_DEFAULT_KEEP_SAMPLES);
	CHECK_STR(sql("c_up", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "2");
	/* the first writer upgrades it, in one step */
	w = open_ok("c_up", 0);
	if (!w) {
		store_close(r2);
		return;
	}
	CHECK_STR(sql("c_up", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "3");
	CHECK_STR(sql("c_up", "SELECT value FROM flamefs_meta WHERE key = 'oldest_reader'"), "3");
	CHECK_STR(sql("c_up", "SELECT first_us || ' ' || last_us || ' ' || samples"
	                      " FROM series_recent"),
	          "1700000047000000 1700000105000000 0");
	b = store_batch_new(w);
	{
		struct store_sample smp = {(T0 + 65) * US + 250000, node, 5, 6, 7};

		CHECK(store_batch_sample(b, series(b, "h", "app"), &smp) == 0);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	/* the reader that was open on schema 2 reads the detail once it
	 * refreshes */
	CHECK(store_refresh(r2) == 1);
	got = walk(r2, s, INT64_MIN, INT64_MAX);
	CHECK(got.n == 1 && got.n && got.v[0].time_us == (T0 + 65) * US + 250000 &&
	      got.v[0].pid == 5 && got.v[0].tid == 6 && got.v[0].weight == 7);
	free(got.v);
	find_series(r2, "h", "app", &e);
	CHECK(e.first_us == (T0 + 7) * US && e.last_us == (T0 + 65) * US + 250000 &&
	      e.recent_samples == 1 && e.samples == 5);
	CHECK_STR(dump(r2, s, INT64_MIN, INT64_MAX),
	          "1700000040 main;old 3 30\n1700000100 main;old 2 17\n");
	store_close(r2);
	/* a writer refuses to commit into a schema another flamefs moved */
	sql("c_up", "UPDATE flamefs_meta SET value = '4' WHERE key = 'schema'");
	b = store_batch_new(w);
	CHECK(store_batch_add(b, series(b, "h", "app"), T0, node, 1, 1) == 0);
	CHECK(store_batch_commit(b) < 0);
	CHECK(strstr(store_errmsg(w), "schema version 4 is not the one this flamefs writes (3)") !=
	      NULL);
	store_batch_free(b);
	store_close(w);
	/* readers read it while it says readers of 3 do */
	store_close(open_ok("c_up", STORE_READONLY));
	sql("c_up", "UPDATE flamefs_meta SET value = '4' WHERE key = 'oldest_reader'");
	expect_open_error(uri("c_up"), STORE_READONLY, -EPROTONOSUPPORT,
	                  "schema version 4 is newer than this flamefs understands (3)", NULL);
	sql("c_up", "UPDATE flamefs_meta SET value = '3' WHERE key = 'oldest_reader'");
	/* bad keep_samples */
	sql("c_up", "UPDATE flamefs_meta SET value = '3' WHERE key = 'schema'");
	sql("c_up", "INSERT INTO flamefs_meta VALUES ('keep_samples', '-5')");
	expect_open_error(uri("c_up"), STORE_READONLY, -EIO,
	                  "store is damaged: flamefs_meta's keep_samples", NULL);
}

/* Lines of the server's log (when the socket directory holds it, as
 * tests/lib-pg.sh starts the server) that hold `needle`; -1 when there
 * is no log to read. */
static long log_count(const char *needle)
{
	char path[600], line[8192];
	FILE *f;
	long n = 0;

	snprintf(path, sizeof(path), "%s/server.log", pghost);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* store_samples_prefetch(): many series' detail in one query, the same
 * detail as one by one, whatever the order of the reads. */
static void test_samples_prefetch(void)
{
	struct store *w, *r;
	struct store_batch *b;
	uint32_t ids[3], node;
	struct svec one[3] = {{0}};
	uint64_t x = 12345;
	const int64_t from = T0US + 30 * US, to = T0US + 150 * US;

	fresh_db("c_spf");
	w = open_ok("c_spf", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	node = stack(b, "a;b");
	for (int i = 0; i < 3; i++) {
		char host[8];

		snprintf(host, sizeof(host), "h%d", i);
		ids[i] = series(b, host, "app");
		for (int k = 0; k < 50 + 10 * i; k++) {
			struct store_sample smp = gen_sample(&x, T0US, 180 * US, &node, 1);

			CHECK(store_batch_sample(b, ids[i], &smp) == 0);
		}
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	sql("postgres", "ALTER DATABASE c_spf SET log_statement = 'all'");
	r = open_ok("c_spf", STORE_READONLY);
	if (!r)
		return;
	for (int i = 0; i < 3; i++)
		one[i] = walk(r, ids[i], from, to);
	CHECK(one[0].n > 10 && one[1].n > 10 && one[2].n > 10);
	{
		long q0 = log_count("JOIN samples d ON"),
		     q1 = log_count("FROM samples WHERE series");

		CHECK(store_samples_prefetch(r, ids, 3, from, to) == 0);
		for (int i = 0; i < 3; i++) {
			struct svec got = walk(r, ids[i], from, to);

			CHECK(same_detail(&got, &one[i], "prefetched"));
			free(got.v);
		}
		if (q0 < 0) {
			printf("  (no server log in %s: the number of queries is not checked)\n",
			       pghost);
		} else {
			usleep(200000);
			CHECK(log_count("JOIN samples d ON") == q0 + 1);
			CHECK(log_count("FROM samples WHERE series") == q1);
		}
	}
	/* out of order, another window, counts in between: right, one by one */
	CHECK(store_samples_prefetch(r, ids, 3, from, to) == 0);
	{
		struct svec got = walk(r, ids[2], from, to);

		CHECK(same_detail(&got, &one[2], "out of order"));
		free(got.v);
		got = walk(r, ids[0], from, to);
		CHECK(same_detail(&got, &one[0], "after one out of order"));
		free(got.v);
	}
	CHECK(store_samples_prefetch(r, ids, 3, from, to) == 0);
	{
		struct svec got = walk(r, ids[0], from, to);

		CHECK(same_detail(&got, &one[0], "first"));
		free(got.v);
		dump(r, ids[1], INT64_MIN, INT64_MAX);
		got = walk(r, ids[1], from, to);
		CHECK(same_detail(&got, &one[1], "after counts"));
		free(got.v);
		CHECK(store_series_prefetch(r, ids, 3, INT64_MIN, INT64_MAX) == 0);
		got = walk(r, ids[2], from, to);
		CHECK(same_detail(&got, &one[2], "during a counts prefetch"));
		free(got.v);
		got = walk(r, ids[2], from + 1, to);
		CHECK(got.n == one[2].n - (one[2].v[0].time_us == from));
		free(got.v);
	}
	for (int i = 0; i < 3; i++)
		free(one[i].v);
	store_close(r);
}

/* A damaged block is an error naming it, in C and in SQL. */
static void test_samples_damaged(void)
{
	struct store *w, *r;
	struct store_batch *b;
	uint32_t s;

	fresh_db("c_sbad");
	w = open_ok("c_sbad", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	s = series(b, "h", "app");
	{
		struct store_sample smp = {T0US + 5, stack(b, "a"), 1, 2, 3};

		CHECK(store_batch_sample(b, s, &smp) == 0);
		smp.time_us += 2;
		CHECK(store_batch_sample(b, s, &smp) == 0);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	CHECK_STR(sql("c_sbad", "SELECT string_agg(time_us || ':' || node || ':' || pid || ':' ||"
	                        " tid || ':' || weight, ' ') FROM sample_entries"),
	          "1700000040000005:1:1:2:3 1700000040000007:1:1:2:3");
	/* a byte too many */
	sql("c_sbad", "UPDATE samples SET block = block || '\\x00'::bytea");
	r = open_ok("c_sbad", STORE_READONLY);
	if (r) {
		struct svec got = {0};

		CHECK(store_series_samples(r, s, INT64_MIN, INT64_MAX, svec_fn, &got) == -EIO);
		CHECK(strstr(store_errmsg(r), "store is damaged: the samples of series") != NULL);
		free(got.v);
		store_close(r);
	}
	CHECK(sql("c_sbad", "SELECT count(*) FROM sample_entries") == NULL);
	/* the second time delta made past the bucket's end */
	sql("c_sbad", "UPDATE samples SET block = overlay(block PLACING '\\xffffff7f'::bytea"
	              " FROM length(block) - 1 FOR 2)");
	r = open_ok("c_sbad", STORE_READONLY);
	if (r) {
		struct svec got = {0};
		char want[128];

		CHECK(store_series_samples(r, s, INT64_MIN, INT64_MAX, svec_fn, &got) == -EIO);
		snprintf(want, sizeof(want), "store is damaged: the samples of series %u at %d", s,
		         T0);
		CHECK(strstr(store_errmsg(r), want) != NULL);
		free(got.v);
		store_close(r);
	}
	sql("c_sbad", "DROP VIEW sample_entries; ALTER TABLE samples ALTER bucket TYPE int4");
	r = open_ok("c_sbad", STORE_READONLY);
	if (r) {
		struct svec got = {0};

		CHECK(store_series_samples(r, s, INT64_MIN, INT64_MAX, svec_fn, &got) == -EIO);
		CHECKF(strstr(store_errmsg(r), "unexpected reply from the server: a bucket") !=
		               NULL,
		       "%s", store_errmsg(r));
		free(got.v);
		store_close(r);
	}
}

/* Every series' detail and counts of two stores, by content, as one
 * string per series: "host/binary: <n> samples <checksum>; counts". */
static void store_digest(struct store *s, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0, o = 0;

	out[0] = '\0';
	CHECK(store_series_list(s, &l, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		struct svec got = walk(s, l[i].id, INT64_MIN, INT64_MAX);
		uint64_t sum = 0;
		char names[2][512];

		for (size_t k = 0; k < got.n; k++) {
			node_name(s, got.v[k].node, names[0], sizeof(names[0]));
			sum = sum * 1000003 + (uint64_t)got.v[k].time_us + got.v[k].pid * 7u +
			      got.v[k].tid * 13u + got.v[k].weight * 31u + strlen(names[0]);
			for (const char *p = names[0]; *p; p++)
				sum = sum * 131 + (uint8_t)*p;
		}
		o += (size_t)snprintf(out + o, len - o,
		                      "%s/%s: %zu %" PRIu64 " %" PRIu64 " first %" PRId64
		                      " last %" PRId64 " %" PRIu64 " %" PRIu64 "\n",
		                      l[i].host, l[i].binary, got.n, l[i].recent_samples, sum,
		                      l[i].first_us, l[i].last_us, l[i].samples, l[i].weight);
		snprintf(names[1], sizeof(names[1]), "%s", dump(s, l[i].id, INT64_MIN, INT64_MAX));
		o += (size_t)snprintf(out + o, len - o, "%s", names[1]);
		free(got.v);
		if (o >= len)
			break;
	}
	store_series_free(l, n);
}

/* Push (store_copy with samples) from a directory into the database, and
 * merge back from the database into a fresh directory: the same detail
 * everywhere. */
static void test_samples_push(void)
{
	char dir[] = "/tmp/test-central-push-XXXXXX", back[600], err[512];
	struct store *d = NULL, *w = NULL, *b2 = NULL;
	struct store_copy_opts o = {.incremental = true, .samples = true};
	struct store_copy_stats st;
	static char want[16384], got[16384];
	uint64_t x = 99991;

	fresh_db("c_spush");
	if (!mkdtemp(dir)) {
		check_failures++;
		return;
	}
	snprintf(back, sizeof(back), "%s/back", dir);
	{
		char path[600];

		snprintf(path, sizeof(path), "%s/host", dir);
		CHECK(store_open(path, STORE_CREATE, &d, err, sizeof(err)) == 0);
	}
	w = open_ok("c_spush", STORE_CREATE);
	if (!d || !w)
		goto out;
	for (int round = 0; round < 2; round++) {
		struct store_batch *b = store_batch_new(d);
		uint32_t nodes[3], s[2];

		s[0] = series(b, "h", "app");
		s[1] = series(b, "h", "db");
		nodes[0] = stack(b, "main;a");
		nodes[1] = stack(b, "main;b;c");
		nodes[2] = stack(b, "main;b");
		for (int i = 0; i < 400; i++) {
			struct store_sample smp =
			        gen_sample(&x, T0US + round * 90 * US, 150 * US, nodes, 3);

			CHECK(store_batch_sample(b, s[i % 2], &smp) == 0);
		}
		/* counts without detail, at their bucket's start (a copy
		 * carries a bucket, so its start is the moment it gives) */
		CHECK(store_batch_add(b, s[1], T0 + 360, nodes[0], 5, 50) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		CHECK(store_copy(w, d, &o, &st, err, sizeof(err)) == 0);
		if (test_failed) {
			fprintf(stderr, "  push: %s\n", err);
			goto out;
		}
		store_digest(d, want, sizeof(want));
		store_digest(w, got, sizeof(got));
		CHECK_STR(got, want);
		CHECK(strstr(want, "h/app: 200 200 ") || round);
	}
	/* and back, from the database into a fresh directory */
	CHECK(store_open(back, STORE_CREATE, &b2, err, sizeof(err)) == 0);
	if (b2) {
		struct store_copy_opts m = {.samples = true};

		CHECK(store_copy(b2, w, &m, &st, err, sizeof(err)) == 0);
		store_digest(b2, got, sizeof(got));
		CHECK_STR(got, want);
	}
out:
	store_close(b2);
	store_close(d);
	store_close(w);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			check_failures++;
	}
}

/* Adds samples at the n moments `at` to series (h, app) of store d. */
static void put_moments(struct store *d, const int64_t *at, int n)
{
	struct store_batch *b = store_batch_new(d);
	uint32_t s, node;

	if (!b) {
		check_failures++;
		return;
	}
	s = series(b, "h", "app");
	node = stack(b, "main;a");
	for (int i = 0; i < n; i++) {
		struct store_sample smp = {at[i], node, 7, 7, 1000};

		CHECK(store_batch_sample(b, s, &smp) == 0);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
}

/* (h, app)'s first and last moment in the database, read afresh. */
static void db_moments(const char *db, int64_t *first, int64_t *last)
{
	struct store *r = open_ok(db, STORE_READONLY);
	struct store_series e = {0};

	*first = *last = 0;
	if (!r)
		return;
	CHECK(find_series(r, "h", "app", &e) != 0);
	*first = e.first_us;
	*last = e.last_us;
	store_close(r);
}

/* Push without samples: the database takes each series' exact first and
 * last moment from the source, not its buckets' starts; two sources of
 * one series widen them (the earliest first, the latest last), and a
 * push whose moments lie inside narrows nothing. */
static void test_push_moments(void)
{
	char dir[] = "/tmp/test-central-moments-XXXXXX", path[600], err[512] = "";
	struct store *a = NULL, *b = NULL, *w = NULL;
	struct store_copy_opts o = {.incremental = true, .samples = false};
	struct store_copy_stats st;
	/* none a bucket's start; b's first is the earlier, a's last the later */
	const int64_t at_a[] = {T0US + 10 * US + 250000, T0US + 70 * US + 1, T0US + 130 * US + 777};
	const int64_t at_b[] = {T0US + 3 * US + 500, T0US + 65 * US};
	const int64_t more_a = T0US + 200 * US + 5;
	int64_t first, last;

	fresh_db("c_pmoments");
	if (!mkdtemp(dir)) {
		check_failures++;
		return;
	}
	snprintf(path, sizeof(path), "%s/a", dir);
	CHECK(store_open(path, STORE_CREATE, &a, err, sizeof(err)) == 0);
	snprintf(path, sizeof(path), "%s/b", dir);
	CHECK(store_open(path, STORE_CREATE, &b, err, sizeof(err)) == 0);
	w = open_ok("c_pmoments", STORE_CREATE);
	if (!a || !b || !w)
		goto out;
	put_moments(a, at_a, 3);
	put_moments(b, at_b, 2);
	CHECKF(store_copy(w, a, &o, &st, err, sizeof(err)) == 0, "%s", err);
	db_moments("c_pmoments", &first, &last);
	CHECKF(first == at_a[0] && last == at_a[2], "one source: %lld..%lld", (long long)first,
	       (long long)last);
	CHECKF(store_copy(w, b, &o, &st, err, sizeof(err)) == 0, "%s", err);
	db_moments("c_pmoments", &first, &last);
	CHECKF(first == at_b[0] && last == at_a[2], "two sources: %lld..%lld", (long long)first,
	       (long long)last);
	/* a's next push replaces its buckets and carries its later last */
	put_moments(a, &more_a, 1);
	CHECKF(store_copy(w, a, &o, &st, err, sizeof(err)) == 0, "%s", err);
	db_moments("c_pmoments", &first, &last);
	CHECKF(first == at_b[0] && last == more_a, "a pushed again: %lld..%lld", (long long)first,
	       (long long)last);
	/* and b's again, whole, narrows nothing */
	o.incremental = false;
	CHECKF(store_copy(w, b, &o, &st, err, sizeof(err)) == 0, "%s", err);
	db_moments("c_pmoments", &first, &last);
	CHECKF(first == at_b[0] && last == more_a, "b pushed again: %lld..%lld", (long long)first,
	       (long long)last);
out:
	store_close(a);
	store_close(b);
	store_close(w);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			check_failures++;
	}
}

/* Every row of a query, "a b c" per line; NULL on failure. */
static char *sql_rows(const char *db, const char *q)
{
	PGconn *c = PQconnectdb(uri(db));
	PGresult *res;
	char *out = NULL;
	size_t len = 0, cap = 0;

	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexec(c, q);
	if (PQresultStatus(res) == PGRES_TUPLES_OK) {
		cap = 64;
		out = calloc(1, cap);
		for (int i = 0; out && i < PQntuples(res); i++)
			for (int k = 0; k < PQnfields(res); k++) {
				const char *v = PQgetvalue(res, i, k);

				while (len + strlen(v) + 2 >= cap)
					out = realloc(out, cap *= 2);
				len += (size_t)sprintf(out + len, "%s%c", v,
				                       k + 1 < PQnfields(res) ? ' ' : '\n');
			}
	} else {
		fprintf(stderr, "  %s", PQerrorMessage(c));
	}
	PQclear(res);
	PQfinish(c);
	return out;
}

/* store/README.md's recent-tier SQL (the block ```sql NAME), exactly as
 * written, against known detail: two hosts of `app` and another binary,
 * twelve minutes of samples. */
static void test_readme_sql(void)
{
	const char *readme = getenv("FLAMEFS_TEST_README");
	char line[1024], *q = NULL, *got, *want = NULL;
	size_t qlen = 0, wlen = 0;
	bool on = false;
	FILE *f;
	struct store *w;
	struct store_batch *b;
	uint64_t x = 4242;
	int64_t last = INT64_MIN, per[720] = {0};
	struct svec app = {0};

	if (!readme || !(f = fopen(readme, "re"))) {
		printf("  SKIP readme_sql: $FLAMEFS_TEST_README names no readable "
		       "store/README.md\n");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "```sql samples-per-second", 25)) {
			on = true;
			continue;
		}
		if (on && !strncmp(line, "```", 3))
			break;
		if (on) {
			q = realloc(q, qlen + strlen(line) + 1);
			strcpy(q + qlen, line);
			qlen += strlen(line);
		}
	}
	fclose(f);
	CHECK(q != NULL);
	if (!q)
		return;
	fresh_db("c_readme");
	w = open_ok("c_readme", STORE_CREATE);
	if (!w) {
		free(q);
		return;
	}
	b = store_batch_new(w);
	{
		uint32_t node = stack(b, "main;work"), s[3];

		s[0] = series(b, "h1", "app");
		s[1] = series(b, "h2", "app");
		s[2] = series(b, "h1", "other");
		for (int i = 0; i < 3000; i++) {
			struct store_sample smp = gen_sample(&x, T0US, 720 * US, &node, 1);

			CHECK(store_batch_sample(b, s[i % 3], &smp) == 0);
			if (i % 3 < 2)
				svec_add(&app, &smp);
		}
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	/* per second, the samples of app in (newest - 600 s, newest] */
	for (size_t i = 0; i < app.n; i++)
		last = app.v[i].time_us > last ? app.v[i].time_us : last;
	for (size_t i = 0; i < app.n; i++)
		if (app.v[i].time_us > last - 600 * US)
			per[(app.v[i].time_us - T0US) / US]++;
	for (int sec = 0; sec < 720; sec++) {
		char ts[64];
		time_t t = (time_t)(T0 + sec);
		struct tm tm;

		if (!per[sec])
			continue;
		gmtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		want = realloc(want, wlen + 96);
		wlen += (size_t)sprintf(want + wlen, "%s %" PRId64 "\n", ts, per[sec]);
	}
	CHECK(wlen > 1000);
	got = sql_rows("c_readme", q);
	CHECK(got != NULL && want != NULL);
	if (got && want && strcmp(got, want)) {
		fprintf(stderr, "  README samples-per-second: got\n%.400s...\nwant\n%.400s...\n",
		        got, want);
		check_failures++;
	}
	free(got);
	free(want);
	free(app.v);
	free(q);
}

/* Prune takes the detail of the buckets it deletes, and nothing else. */
static void test_samples_prune(void)
{
	struct store *w, *r;
	struct store_batch *b;
	struct store_prune_stats st;
	struct store_prune_opts o = {.before = T0 + 120, .dry_run = true};
	struct svec all = {0}, got;
	struct store_series e;
	uint32_t s, node;

	fresh_db("c_sprune");
	w = open_ok("c_sprune", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	s = series(b, "h", "app");
	node = stack(b, "main;x");
	for (int k = 0; k < 9; k++) {
		struct store_sample smp = {T0US + (k / 3) * 60 * US + k * 1000 + 7, node, 5, 5, 1};

		CHECK(store_batch_sample(b, s, &smp) == 0);
		svec_add(&all, &smp);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK(store_prune(w, &o, &st) == 0 && st.buckets == 2 && st.samples == 6);
	CHECK_STR(sql("c_sprune", "SELECT sum(n) FROM samples"), "9");
	o.dry_run = false;
	CHECK(store_prune(w, &o, &st) == 0 && st.buckets == 2 && st.samples == 6);
	r = open_ok("c_sprune", STORE_READONLY);
	if (r) {
		struct svec want = svec_window(&all, (T0 + 120) * US, INT64_MAX);

		s = find_series(r, "h", "app", &e);
		CHECK(e.samples == 3 && e.recent_samples == 3);
		/* the first moment moves to the first bucket left, as first_seen does */
		CHECK(e.first_us == (T0 + 120) * US && e.last_us == (T0 + 120) * US + 8007);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		CHECK(same_detail(&got, &want, "after the prune"));
		free(got.v);
		free(want.v);
		store_close(r);
	}
	free(all.v);
	store_close(w);
}

/* Two writers: the second's stacks are renumbered after the first's at
 * its commit, and its detail names the renumbered nodes. */
static void test_samples_two_writers(void)
{
	struct store *w1, *w2, *r;
	struct store_batch *b1, *b2;
	uint32_t s1, s2;

	fresh_db("c_s2w");
	w1 = open_ok("c_s2w", STORE_CREATE);
	w2 = w1 ? open_ok("c_s2w", 0) : NULL;
	if (!w1 || !w2)
		goto out;
	b1 = store_batch_new(w1);
	b2 = store_batch_new(w2);
	{
		struct store_sample a = {T0US + 1, stack(b1, "one;two"), 1, 1, 1};
		struct store_sample c = {T0US + 2, stack(b2, "three;four"), 2, 2, 2};
		struct store_sample d = {T0US + 3, stack(b2, "one;two"), 2, 2, 2};

		/* the same provisional ids in both batches */
		CHECK(a.node == c.node && d.node != c.node);
		CHECK(store_batch_sample(b1, series(b1, "h1", "app"), &a) == 0);
		CHECK(store_batch_sample(b2, series(b2, "h2", "app"), &c) == 0);
		CHECK(store_batch_sample(b2, series(b2, "h2", "app"), &d) == 0);
	}
	CHECK(store_batch_commit(b1) == 0);
	CHECK(store_batch_commit(b2) == 0);
	store_batch_free(b1);
	store_batch_free(b2);
	r = open_ok("c_s2w", STORE_READONLY);
	if (r) {
		struct svec got;
		char name[256];

		s1 = find_series(r, "h1", "app", NULL);
		s2 = find_series(r, "h2", "app", NULL);
		got = walk(r, s1, INT64_MIN, INT64_MAX);
		CHECK(got.n == 1);
		if (got.n == 1) {
			node_name(r, got.v[0].node, name, sizeof(name));
			CHECK_STR(name, "one;two");
		}
		free(got.v);
		got = walk(r, s2, INT64_MIN, INT64_MAX);
		CHECK(got.n == 2);
		if (got.n == 2) {
			node_name(r, got.v[0].node, name, sizeof(name));
			CHECK_STR(name, "three;four");
			node_name(r, got.v[1].node, name, sizeof(name));
			CHECK_STR(name, "one;two");
		}
		free(got.v);
		store_close(r);
	}
out:
	store_close(w2);
	store_close(w1);
}

/* The samples block alone: random detail round-trips; every block with
 * bytes changed, cut or added decodes to valid detail or to -EIO, never
 * out of bounds (CI runs this under AddressSanitizer). */
static void test_samples_block(void)
{
	uint64_t x = 777;
	const int64_t start = T0US, span = 60 * US;
	int bad = 0, good = 0;

	for (int round = 0; round < 300; round++) {
		size_t n = 1 + rnd(&x) % (round % 10 ? 40 : 2000), len, dn = 0, dcap = 0;
		struct store_sample *v = calloc(n, sizeof(*v)), *d = NULL;
		uint32_t nodes[7] = {0, 1, 2, 99, 100000, 4000000000u, UINT32_MAX};
		uint8_t *blk = NULL;

		for (size_t i = 0; i < n; i++) {
			v[i] = gen_sample(&x, start, span, nodes, 1 + round % 7);
			if (round % 3 == 0)
				v[i].weight = 5;
			if (round % 5 == 0)
				v[i].pid = v[i].tid = 0;
			if (round % 11 == 0)
				v[i].weight = rnd(&x);
		}
		if (round % 13 == 0)
			v[0].time_us = start + span - 1;
		qsort(v, n, sizeof(*v), smp_cmp);
		CHECK(samples_block_encode(v, n, start, span, &blk, &len) == 0);
		CHECK(samples_block_decode(blk, len, start, span, &d, &dn, &dcap) == 0);
		CHECK(dn == n);
		for (size_t i = 0; i < n && dn == n; i++)
			CHECK(smp_cmp(&d[i], &v[i]) == 0);
		/* a sample out of order, or outside the bucket, is refused */
		{
			uint8_t *b2 = NULL;
			size_t l2;
			struct store_sample t = v[0];

			v[0] = v[n - 1];
			v[n - 1] = t;
			if (smp_cmp(&v[0], &v[n - 1]))
				CHECK(samples_block_encode(v, n, start, span, &b2, &l2) == -EINVAL);
			v[n - 1] = v[0];
			v[0] = t;
			v[0].time_us = start - 1;
			CHECK(samples_block_encode(v, n, start, span, &b2, &l2) == -EINVAL);
			CHECK(b2 == NULL);
		}
		for (int m = 0; m < 60 && blk; m++) {
			uint8_t buf[65536];
			size_t l = len < sizeof(buf) - 8 ? len : sizeof(buf) - 8, at;
			int r;

			memcpy(buf, blk, l);
			at = rnd(&x) % l;
			switch (m % 4) {
			case 0: buf[at] ^= (uint8_t)(1 + rnd(&x) % 255); break;
			case 1: l = at; break;
			case 2: buf[l++] = (uint8_t)rnd(&x); break;
			default: buf[at] = 0xff; break;
			}
			dn = 0;
			r = samples_block_decode(buf, l, start, span, &d, &dn, &dcap);
			CHECK(r == 0 || r == -EIO);
			if (r == 0) {
				good++;
				for (size_t i = 0; i < dn; i++)
					CHECK(d[i].time_us >= start &&
					      d[i].time_us < start + span &&
					      (!i || smp_cmp(&d[i - 1], &d[i]) <= 0));
			} else {
				bad++;
				CHECK(dn == 0);
			}
		}
		free(blk);
		free(d);
		free(v);
		if (test_failed)
			break;
	}
	CHECK(bad > 1000);
	printf("  samples block: %d damaged blocks refused, %d still valid detail\n", bad, good);
}

static void run(const char *name, void (*fn)(void))
{
	const char *only = getenv("FLAMEFS_TEST_ONLY");

	if (only && *only && strcmp(only, name))
		return;
	checks_before = check_failures;
	fn();
	printf("%s %s\n", test_failed ? "FAIL" : "PASS", name);
	fflush(stdout);
	failures += test_failed;
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
		return failures ? 1 : 0;
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
	return failures ? 1 : 0;
}
