/*
 * test-central-tier.c — the central store's unit tests (run by
 * test-central.c) of the recent tier across the schema upgrade, prefetch,
 * damaged blocks, pushes and their moments, the documented SQL, prune,
 * two writers, and the samples block codec.
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void test_samples_upgrade(void)
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
	CHECK(sql("c_up", "DROP VIEW series_labels; DROP FUNCTION flamefs_labels(bytea);"
	                  " DROP TABLE frame_names CASCADE; DROP TABLE frame_offsets CASCADE;"
	                  " ALTER TABLE series DROP CONSTRAINT series_key, DROP COLUMN labels;"
	                  " ALTER TABLE series ADD UNIQUE (host, binary_name, version, event);"
	                  " DROP VIEW sample_entries; DROP FUNCTION flamefs_samples(int8, bytea);"
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
	/* the step to 4 alters `series`: it waits for the readers whose
	 * snapshot read it, until they refresh */
	CHECK(store_refresh(r2) == 0);
	/* the first writer upgrades it, step by step */
	w = open_ok("c_up", 0);
	if (!w) {
		store_close(r2);
		return;
	}
	CHECK_STR(sql("c_up", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "7");
	CHECK_STR(sql("c_up", "SELECT value FROM flamefs_meta WHERE key = 'oldest_reader'"), "4");
	CHECK_STR(sql("c_up", "SELECT first_us || ' ' || last_us || ' ' || samples"
	                      " FROM series_recent"),
	          "1700000047000000 1700000105000000 0");
	b = store_batch_new(w);
	{
		struct store_sample smp = {(T0 + 65) * US + 250000, node, 5, 6, 7, 0, 0};

		CHECK(store_batch_sample(b, series(b, "h", "app"), &smp) == 0);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	/* the step to 5 gave the SQL decoder its span and parent columns */
	CHECK_STR(sql("c_up", "SELECT count(*) FROM sample_entries WHERE span = 0 AND parent = 0"),
	          "1");
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
	sql("c_up", "UPDATE flamefs_meta SET value = '8' WHERE key = 'schema'");
	b = store_batch_new(w);
	CHECK(store_batch_add(b, series(b, "h", "app"), T0, node, 1, 1) == 0);
	CHECK(store_batch_commit(b) < 0);
	CHECK(strstr(store_errmsg(w), "schema version 8 is not the one this flamefs writes (7)") !=
	      NULL);
	store_batch_free(b);
	store_close(w);
	/* readers read it while it says readers of 4 do */
	store_close(open_ok("c_up", STORE_READONLY));
	sql("c_up", "UPDATE flamefs_meta SET value = '8' WHERE key = 'oldest_reader'");
	expect_open_error(uri("c_up"), STORE_READONLY, -EPROTONOSUPPORT,
	                  "schema version 8 is newer than this flamefs understands (7)", NULL);
	sql("c_up", "UPDATE flamefs_meta SET value = '4' WHERE key = 'oldest_reader'");
	/* bad keep_samples */
	sql("c_up", "UPDATE flamefs_meta SET value = '7' WHERE key = 'schema'");
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
void test_samples_prefetch(void)
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
void test_samples_damaged(void)
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
		struct store_sample smp = {T0US + 5, stack(b, "a"), 1, 2, 3, 0, 0};

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
void test_samples_push(void)
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
		struct store_sample smp = {at[i], node, 7, 7, 1000, 0, 0};

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
void test_push_moments(void)
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

/* store/README.md's recent-tier SQL (the block ```sql NAME), exactly as
 * written, against known detail: two hosts of `app` and another binary,
 * twelve minutes of samples. */
void test_readme_sql(void)
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
void test_samples_prune(void)
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
		struct store_sample smp = {
		        T0US + (k / 3) * 60 * US + k * 1000 + 7, node, 5, 5, 1, 0, 0};

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
void test_samples_two_writers(void)
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
		struct store_sample a = {T0US + 1, stack(b1, "one;two"), 1, 1, 1, 0, 0};
		struct store_sample c = {T0US + 2, stack(b2, "three;four"), 2, 2, 2, 0, 0};
		struct store_sample d = {T0US + 3, stack(b2, "one;two"), 2, 2, 2, 0, 0};

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
void test_samples_block(void)
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
