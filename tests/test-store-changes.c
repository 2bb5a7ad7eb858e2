/*
 * test-store-changes.c — the store library's unit tests (run by
 * test-store.c) of the embedded store's change records (what an
 * incremental push reads): a writer folds a run of records into one once
 * its bucket has closed and at its close; a reader open across the fold,
 * whose cursor lies inside the folded run, still reads every change after
 * its cursor; the nonces of folded commits stay until a prune takes their
 * record; and a store compacted by this build folds what an older one
 * left.
 */
#include "store-fixture.h"
#include "store-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define T0 1700000040 /* the start of a bucket */

static int change_line(void *ctx, uint32_t series, int64_t bucket)
{
	char *s = ctx;
	size_t n = strlen(s);

	snprintf(s + n, 512 - n, "%" PRIu32 "@%" PRId64 " ", series, bucket);
	return 0;
}

/* The changes r lists after commit `since`, as "series@bucket " each. */
static const char *changes_after(struct store *r, uint64_t since, uint64_t *upto)
{
	static char out[512];

	out[0] = '\0';
	CHECK_OK(r->ops->changes(r, since, upto, change_line, out));
	return out;
}

/* One commit of one sample of series `name` at `when`; the series id. */
static uint32_t commit_one(struct store *w, const char *name, int64_t when)
{
	struct store_series_key k = {
	        .binary = name, .version = "1", .event = "cpu-clock", .unit = "samples"};
	struct store_batch *b = store_batch_new(w);
	uint32_t id = 0;

	CHECK(b != NULL);
	if (!b)
		return 0;
	CHECK_OK(store_batch_series(b, &k, &id));
	CHECK_OK(store_batch_add(b, id, when, sf_add_stack(b, sf_stack1, 3), 1, 1));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	return id;
}

/* The commit numbers of the change records at dir, as "N " each. */
static const char *records(const char *dir)
{
	static char out[256];
	struct sf_raw w;

	out[0] = '\0';
	if (sf_raw_open_ro(dir, &w)) {
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_iterator_t *it = rocksdb_create_iterator_cf(w.db, ro, w.cf[0]);

		for (rocksdb_iter_seek(it, "c", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			size_t klen, n = strlen(out);
			const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
			uint64_t c = 0;

			if (klen < 1 || k[0] != 'c')
				break;
			CHECK(klen == 9);
			for (size_t i = 1; i < 9 && i < klen; i++)
				c = c << 8 | k[i];
			snprintf(out + n, sizeof(out) - n, "%" PRIu64 " ", c);
		}
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
	}
	sf_raw_close(&w);
	return out;
}

static bool has_nonce(struct store *s, uint64_t commit)
{
	uint64_t nonce;
	int r = s->ops->commit_nonce(s, commit, &nonce);

	CHECK(r == 0 || r == -ENOENT);
	return r == 0;
}

/* A recorder's commits: four into one bucket, then the next bucket, with
 * a reader open across the fold that follows. */
void test_changes_fold(void)
{
	char dir[PATH_MAX];
	struct store *w = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE), *r;
	uint32_t a, b, c;
	uint64_t upto;

	if (!w)
		return;
	/* commits 2 to 5, all in bucket T0 */
	a = commit_one(w, "a", T0);
	b = commit_one(w, "b", T0 + 1);
	CHECK(commit_one(w, "a", T0 + 2) == a);
	c = commit_one(w, "c", T0 + 3);
	CHECK(a == 1 && b == 2 && c == 3);
	CHECK_STR(records(dir), "2 3 4 5 "); /* bucket T0 is open: no fold */
	r = sf_open_rw(dir, STORE_READONLY);
	if (!r) {
		store_close(w);
		return;
	}
	/* A push whose cursor is commit 3 reads commits 4 and 5. */
	CHECK_STR(changes_after(r, 3, &upto), "1@1700000040 3@1700000040 ");
	CHECK(upto == 5);
	/* Commit 6 is in the next bucket: T0's has closed, and its run of
	 * four records becomes one, under commit 5, naming the union. */
	CHECK(commit_one(w, "b", T0 + 60) == b);
	CHECK_STR(records(dir), "5 6 ");
	/* The reader catches up across the fold: from its cursor inside the
	 * run it reads every change after it (and the run's earlier ones,
	 * which a push sends again whole); past the run, only what followed. */
	CHECK(store_refresh(r) >= 0);
	CHECK_STR(changes_after(r, 3, &upto),
	          "1@1700000040 2@1700000040 3@1700000040 2@1700000100 ");
	CHECK(upto == 6);
	CHECK_STR(changes_after(r, 5, &upto), "2@1700000100 ");
	CHECK_STR(changes_after(r, 6, &upto), "");
	/* The nonces stay: a database may hold any commit's. */
	for (uint64_t i = 2; i <= 6; i++)
		CHECKF(has_nonce(r, i), "commit %" PRIu64 " lost its nonce", i);
	/* A writer's close folds the open bucket's run too. */
	CHECK(commit_one(w, "a", T0 + 61) == a);
	CHECK_STR(records(dir), "5 6 7 ");
	store_close(w);
	CHECK_STR(records(dir), "5 7 ");
	CHECK(store_refresh(r) >= 0);
	CHECK_STR(changes_after(r, 6, &upto), "1@1700000100 2@1700000100 ");
	CHECK(upto == 7);
	store_close(r);

	/* A reopened writer adds to the closed run's bucket: its own two
	 * commits fold into the record the last writer left. */
	w = sf_open_rw(dir, 0);
	if (!w)
		return;
	CHECK(commit_one(w, "c", T0 + 62) == c);
	CHECK(commit_one(w, "c", T0 + 63) == c);
	store_close(w);
	CHECK_STR(records(dir), "5 9 ");
	w = sf_open_rw(dir, 0);
	if (!w)
		return;
	CHECK_STR(changes_after(w, 7, &upto), "1@1700000100 2@1700000100 3@1700000100 ");
	/* A prune of bucket T0 takes its record and the nonces of every
	 * commit it stood for; the later ones stay. */
	struct store_prune_opts po = {.before = T0 + 60};
	struct store_prune_stats ps;
	CHECK_OK(store_prune(w, &po, &ps));
	CHECK(ps.buckets == 3);
	CHECK_STR(records(dir), "9 ");
	for (uint64_t i = 2; i <= 5; i++)
		CHECKF(!has_nonce(w, i), "commit %" PRIu64 " kept its nonce", i);
	for (uint64_t i = 6; i <= 9; i++)
		CHECKF(has_nonce(w, i), "commit %" PRIu64 " lost its nonce", i);
	store_close(w);
}

/* An import (one commit) leaves its record as it is, and a store left
 * unfolded (by an older flamefs) is folded by a compaction. */
void test_changes_fold_compact(void)
{
	char dir[PATH_MAX];
	struct store *w = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE);
	uint64_t upto;

	if (!w)
		return;
	commit_one(w, "a", T0);
	store_close(w);
	w = sf_open_rw(dir, 0);
	if (!w)
		return;
	commit_one(w, "b", T0 + 1);
	store_close(w);
	CHECK_STR(records(dir), "2 3 "); /* one commit each: no fold */
	w = sf_open_rw(dir, 0);
	if (!w)
		return;
	CHECK_OK(store_compact(w));
	CHECK_STR(records(dir), "3 ");
	CHECK_STR(changes_after(w, 2, &upto), "1@1700000040 2@1700000040 ");
	CHECK(upto == 3);
	store_close(w);
}
