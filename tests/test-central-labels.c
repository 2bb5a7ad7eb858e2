/*
 * test-central-labels.c — the central store's unit tests (run by
 * test-central.c) of labels: the checks both backends share
 * (labels-checks.c) against a database, the documented SQL that groups by
 * a label, a schema-3 database upgraded, and push and merge carrying
 * label sets between a directory and a database.
 */
#include "central-fixture.h"
#include "labels-checks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The SQL of store/README.md's block "```sql name" (malloc'd), or NULL. */
static char *readme_block(const char *name)
{
	const char *readme = getenv("FLAMEFS_TEST_README");
	char line[1024], open[64], *q = NULL;
	size_t qlen = 0;
	bool on = false;
	FILE *f;

	if (!readme || !(f = fopen(readme, "re")))
		return NULL;
	snprintf(open, sizeof(open), "```sql %s\n", name);
	while (fgets(line, sizeof(line), f)) {
		if (!on) {
			on = !strcmp(line, open);
			continue;
		}
		if (!strncmp(line, "```", 3))
			break;
		char *nq = realloc(q, qlen + strlen(line) + 1);
		if (!nq)
			break;
		q = nq;
		strcpy(q + qlen, line);
		qlen += strlen(line);
	}
	fclose(f);
	return q;
}

void test_labels(void)
{
	struct store *w, *r;
	uint32_t ids[3] = {0};

	fresh_db("c_lab");
	w = open_ok("c_lab", STORE_CREATE);
	r = open_ok("c_lab", STORE_READONLY);
	if (!w || !r) {
		store_close(w);
		store_close(r);
		return;
	}
	labels_check_roundtrip(w, r, "app", ids);
	store_close(w);
	w = open_ok("c_lab", 0);
	if (w)
		labels_check_reopen(w, "app", ids);
	if (w)
		labels_check_bound(w, "bomb");
	store_close(w);
	store_close(r);
	/* store/README.md's samples-per-thread, exactly as written */
	char *q = readme_block("samples-per-thread");
	if (!getenv("FLAMEFS_TEST_README")) {
		printf("  SKIP labels' README SQL: no $FLAMEFS_TEST_README\n");
	} else if (!q) {
		CHECKF(q != NULL, "no ```sql samples-per-thread in %s",
		       getenv("FLAMEFS_TEST_README"));
	} else {
		char *got = sql_rows("c_lab", q);
		CHECK_STR(got, "b 4\na 2\n");
		free(got);
		free(q);
	}
	/* 256 label sets, thread=(other), and cgroup=(other)+thread=(other) */
	CHECK_STR(sql("c_lab", "SELECT count(*) FROM series WHERE binary_name = 'bomb'::bytea"),
	          "258");
	CHECK_STR(sql("c_lab", "SELECT sum(samples) FROM series WHERE binary_name = 'bomb'::bytea"),
	          "45157"); /* 1 + ... + 300, and 7 */
	/* what the standby later copies whole stays small */
	sql("postgres", "DROP DATABASE c_lab WITH (FORCE)");
}

/* A database of schema 3 (no labels): a reader lists its series with
 * none; the first writer upgrades it to 4 in one step, after which label
 * sets split its series and schema-3 readers are refused. */
void test_labels_upgrade(void)
{
	struct store *w, *r;
	struct store_batch *b;
	struct store_series *l = NULL;
	size_t n = 0;
	uint32_t s, s2, node;

	fresh_db("c_lup");
	w = open_ok("c_lup", STORE_CREATE);
	if (!w)
		return;
	CHECK_STR(sql("c_lup", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "7");
	b = store_batch_new(w);
	s = series(b, "h", "app");
	node = stack(b, "main;work");
	CHECK(store_batch_add(b, s, T0, node, 3, 30) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	/* as schema 3 left it */
	CHECK(sql("c_lup", "DROP VIEW series_labels; DROP FUNCTION flamefs_labels(bytea);"
	                   " DROP TABLE frame_names CASCADE; DROP TABLE frame_offsets CASCADE;"
	                   " ALTER TABLE series DROP CONSTRAINT series_key, DROP COLUMN labels;"
	                   " ALTER TABLE series ADD UNIQUE (host, binary_name, version, event);"
	                   " UPDATE flamefs_meta SET value = '3'"
	                   " WHERE key IN ('schema', 'oldest_reader')") != NULL);
	r = open_ok("c_lup", STORE_READONLY);
	if (!r)
		return;
	CHECK(store_series_list(r, &l, &n) == 0);
	CHECK(n == 1 && l[0].id == s && l[0].labels && !strcmp(l[0].labels, "") &&
	      l[0].samples == 3);
	store_series_free(l, n);
	CHECK_STR(sql("c_lup", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "3");
	/* the upgrade alters `series`: it waits for the readers whose
	 * snapshot read it, until they refresh (a mount: every second) */
	CHECK(store_refresh(r) == 0);
	w = open_ok("c_lup", 0);
	if (!w) {
		store_close(r);
		return;
	}
	CHECK_STR(sql("c_lup", "SELECT value FROM flamefs_meta WHERE key = 'schema'"), "7");
	CHECK_STR(sql("c_lup", "SELECT value FROM flamefs_meta WHERE key = 'oldest_reader'"), "4");
	b = store_batch_new(w);
	struct store_series_key k = {"h", "app", "1", "cpu", "nanoseconds", NULL};
	CHECK(store_batch_series(b, &k, &s2) == 0 && s2 == s);
	k.labels = "thread=x";
	CHECK(store_batch_series(b, &k, &s2) == 0 && s2 != s);
	CHECK(store_batch_add(b, s2, T0, node, 5, 50) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(w);
	CHECK(store_refresh(r) == 1);
	CHECK(store_series_list(r, &l, &n) == 0);
	CHECK(n == 2 && !strcmp(l[0].labels, "") && l[0].samples == 3 &&
	      !strcmp(l[1].labels, "thread=x") && l[1].samples == 5);
	store_series_free(l, n);
	store_close(r);
	/* what a flamefs of schema 3 says of it */
	sql("c_lup",
	    "UPDATE flamefs_meta SET value = '8' WHERE key IN ('schema', 'oldest_reader')");
	expect_open_error(uri("c_lup"), STORE_READONLY, -EPROTONOSUPPORT,
	                  "schema version 8 is newer than this flamefs understands (7)", NULL);
	sql("postgres", "DROP DATABASE c_lup WITH (FORCE)");
}

/* "labels=samples/weight" of every series of binary `binary`, ';'-joined,
 * sorted as listed. */
static void totals(struct store *s, const char *binary, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0, o = 0;

	out[0] = '\0';
	CHECK(store_series_list(s, &l, &n) == 0);
	for (size_t i = 0; i < n && o < len; i++)
		if (!strcmp(l[i].binary, binary))
			o += (size_t)snprintf(out + o, len - o, "%s=%" PRIu64 "/%" PRIu64 ";",
			                      l[i].labels, l[i].samples, l[i].weight);
	store_series_free(l, n);
}

/* A directory with three label sets of one series key (and one without)
 * pushed to a database: per label set the database's totals equal the
 * directory's; a second push sends nothing; more samples pushed arrive
 * once; a merge back into a fresh directory keeps the sets apart. */
void test_labels_push(void)
{
	char top[] = "/tmp/test-central-labels-XXXXXX", dir[600], back[600], err[512] = "";
	char want[4096], got[4096];
	struct store *d = NULL, *w = NULL, *m = NULL;
	struct store_copy_opts o = {.incremental = true, .samples = true};
	struct store_copy_stats st;
	const char *sets[4] = {NULL, "thread=a", "thread=b", "cgroup=x\nthread=a"};

	if (!mkdtemp(top)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(back, sizeof(back), "%s/back", top);
	snprintf(dir, sizeof(dir), "%s/src", top);
	fresh_db("c_lpush");
	CHECK(store_open(dir, STORE_CREATE, &d, err, sizeof(err)) == 0);
	w = open_ok("c_lpush", STORE_CREATE);
	if (!d || !w)
		goto out;
	for (int round = 0; round < 2; round++) {
		struct store_batch *b = store_batch_new(d);
		uint32_t node = stack(b, "main;work");

		for (int i = 0; i < 4; i++) {
			struct store_series_key k = {"h", "app", "1", "cpu", "count", sets[i]};
			uint32_t id;

			CHECK(store_batch_series(b, &k, &id) == 0);
			CHECK(store_batch_add(b, id, T0 + 60 * round, node, (uint64_t)(i + 1) * 10,
			                      (uint64_t)(i + 1) * 100 + (uint64_t)round) == 0);
		}
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		CHECKF(store_copy(w, d, &o, &st, err, sizeof(err)) == 0, "%s", err);
		CHECK(st.series == 4);
		totals(d, "app", want, sizeof(want));
		CHECK(store_refresh(w) >= 0);
		totals(w, "app", got, sizeof(got));
		CHECK_STR(got, want);
		/* again: nothing new, nothing changes */
		CHECKF(store_copy(w, d, &o, &st, err, sizeof(err)) == 0, "%s", err);
		CHECK(st.nothing_new && st.buckets == 0);
		totals(w, "app", got, sizeof(got));
		CHECK_STR(got, want);
	}
	CHECK_STR(want, "=20/201;cgroup=x\nthread=a=80/801;thread=a=40/401;thread=b=60/601;");
	/* merge the database back into a fresh directory */
	CHECK(store_open(back, STORE_CREATE, &m, err, sizeof(err)) == 0);
	if (m) {
		struct store_copy_opts mo = {.samples = true};

		CHECKF(store_copy(m, w, &mo, &st, err, sizeof(err)) == 0, "%s", err);
		totals(m, "app", got, sizeof(got));
		CHECK_STR(got, want);
		store_close(m);
	}
out:
	store_close(d);
	store_close(w);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	CHECK(system(cmd) == 0);
	sql("postgres", "DROP DATABASE c_lpush WITH (FORCE)");
}

/* One commit into directory d: `samples` of label set `labels` at `when`. */
static void commit_set(struct store *d, const char *labels, int64_t when, uint64_t samples)
{
	struct store_batch *b = store_batch_new(d);
	struct store_series_key k = {"h", "app", "1", "cpu", "count", labels};
	uint32_t id;

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(store_batch_series(b, &k, &id) == 0);
	CHECK(store_batch_add(b, id, when, stack(b, "main;work"), samples, samples * 10) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
}

/* Pushes of a recorder's directory, read by a reader open beside its
 * writer (as `push` reads a store a recorder holds), across the folding
 * of its change records: the database's cursor lies inside the run that
 * folds, and the next push still brings every change (per label set the
 * database's totals equal the directory's) under the same source
 * identity (the cursor commit's nonce stays). */
void test_labels_push_fold(void)
{
	char top[] = "/tmp/test-central-fold-XXXXXX", dir[600], err[512] = "";
	char want[4096], got[4096];
	struct store *d = NULL, *r = NULL, *w = NULL;
	struct store_copy_opts o = {.incremental = true, .samples = true};
	struct store_copy_stats st;
	uint64_t upto;

	if (!mkdtemp(top)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/src", top);
	fresh_db("c_lfold");
	CHECK(store_open(dir, STORE_CREATE, &d, err, sizeof(err)) == 0);
	w = open_ok("c_lfold", STORE_CREATE);
	if (!d || !w)
		goto out;
	commit_set(d, "thread=a", T0, 1);     /* commit 2 */
	commit_set(d, "thread=b", T0 + 1, 2); /* commit 3 */
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (!r)
		goto out;
	CHECKF(store_copy(w, r, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECK(st.series == 2 && !st.note[0]);
	commit_set(d, "thread=a", T0 + 2, 4); /* commit 4 */
	commit_set(d, "thread=c", T0 + 3, 8); /* commit 5 */
	/* the next bucket: the run of commits 2 to 5 folds into commit 5 */
	commit_set(d, "thread=b", T0 + 60, 16); /* commit 6 */
	CHECK(store_refresh(r) >= 0);
	CHECK(r->ops->changes(r, UINT64_MAX, &upto, NULL, NULL) == 0 && upto == 6);
	CHECKF(store_copy(w, r, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECKF(!st.note[0], "%s", st.note);
	totals(d, "app", want, sizeof(want));
	CHECK_STR(want, "thread=a=5/50;thread=b=18/180;thread=c=8/80;");
	CHECK(store_refresh(w) >= 0);
	totals(w, "app", got, sizeof(got));
	CHECK_STR(got, want);
	/* the writer's close folds the last run: nothing new for the database */
	commit_set(d, "thread=c", T0 + 61, 32); /* commit 7 */
	CHECK(store_refresh(r) >= 0);
	CHECKF(store_copy(w, r, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECK(st.series == 1 && !st.nothing_new && !st.note[0]);
	store_close(d);
	d = NULL;
	CHECK(store_refresh(r) >= 0);
	CHECKF(store_copy(w, r, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECK(st.nothing_new && !st.note[0]);
	totals(r, "app", want, sizeof(want));
	CHECK_STR(want, "thread=a=5/50;thread=b=18/180;thread=c=40/400;");
	CHECK(store_refresh(w) >= 0);
	totals(w, "app", got, sizeof(got));
	CHECK_STR(got, want);
out:
	store_close(r);
	store_close(d);
	store_close(w);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	CHECK(system(cmd) == 0);
	sql("postgres", "DROP DATABASE c_lfold WITH (FORCE)");
}
