/*
 * test-store-counts.c — the store library's unit tests (run by test-store.c) of
 * the counts blobs: merges across commits and buckets, partial merges,
 * damaged values refused, counts that would wrap, and a store small
 * right after a commit.
 */
#include "store-fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- counts blobs ---------------------------------------------------------- */

#define XN 300 /* nodes used by the blob tests: 1..XN-1, plus the root */
#define XB 4   /* buckets */

struct expect {
	uint64_t samples[XB][XN], weight[XB][XN];
};

/* Interns XN-1 single-frame stacks "f1".."f299": nodes 1..XN-1. */
static void make_nodes(struct store_batch *b)
{
	char name[16];

	for (int i = 1; i < XN; i++) {
		struct store_frame f;
		uint32_t fid = 0, node = 0;

		snprintf(name, sizeof(name), "f%d", i);
		f = sf_frame(name);
		CHECK_OK(store_batch_frame(b, &f, &fid));
		CHECK_OK(store_batch_node(b, STORE_ROOT_NODE, fid, &node));
		CHECK(node == (uint32_t)i);
	}
}

static void expect_add(struct store_batch *b, struct expect *x, uint32_t series, int bucket,
                       uint32_t node, uint64_t samples, uint64_t weight)
{
	CHECK_OK(store_batch_add(b, series, (int64_t)bucket * 60 + 7, node, samples, weight));
	x->samples[bucket][node] += samples;
	x->weight[bucket][node] += weight;
}

struct walk {
	const struct expect *x;
	size_t n;
	int64_t last_bucket;
	int64_t last_node;
	int bad;
};

static int walk_check(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct walk *w = ctx;
	int bi = (int)(bucket / 60);

	if (bucket % 60 || bi < 0 || bi >= XB || node >= XN) {
		w->bad++;
		return 0;
	}
	/* Strictly increasing (bucket, node). */
	if (bucket < w->last_bucket || (bucket == w->last_bucket && (int64_t)node <= w->last_node))
		w->bad++;
	w->last_bucket = bucket;
	w->last_node = node;
	if (w->x->samples[bi][node] != samples || w->x->weight[bi][node] != weight)
		w->bad++;
	w->n++;
	return 0;
}

/* Checks that the series' counts are exactly x, in order, for buckets
 * [from, to] (bucket indexes). */
static void check_expect(struct store *s, uint32_t series, const struct expect *x, int from, int to)
{
	struct walk w = {x, 0, INT64_MIN, -1, 0};
	size_t want = 0;

	for (int bi = from; bi <= to; bi++)
		for (int n = 0; n < XN; n++)
			want += x->samples[bi][n] || x->weight[bi][n];
	CHECK_OK(store_series_counts(s, series, (int64_t)from * 60, (int64_t)to * 60 + 59,
	                             walk_check, &w));
	CHECK(w.bad == 0);
	CHECK(w.n == want);
	if (w.bad || w.n != want)
		fprintf(stderr, "  counts: %zu of %zu, %d wrong\n", w.n, want, w.bad);
}

/* Several commits, several buckets, node sets that interleave, values that
 * need long varints, weights equal to and different from samples, and the
 * root node: the blobs of one key merge into the sum. */
void test_merge_blobs(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	static struct expect x;
	uint32_t series, other;
	static const struct store_series_key key_o = {NULL,        "other",       "1",
	                                              "cpu-clock", "nanoseconds", NULL};

	memset(&x, 0, sizeof(x));
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	CHECK_OK(store_batch_series(b, &key_o, &other));
	make_nodes(b);
	/* Commit 1: even nodes in buckets 0 and 2, added in descending order. */
	for (uint32_t n = XN - 1; n >= 1; n--) {
		if (n % 2 == 0) {
			expect_add(b, &x, series, 0, n, 1, 1);
			expect_add(b, &x, series, 2, n, 3, 1000000007ULL * n);
		}
	}
	CHECK_OK(store_batch_add(b, other, 7, 5, 1, 1));
	CHECK_OK(store_batch_commit(b));
	/* Commit 2: odd nodes and multiples of 3 (overlapping the evens),
	 * in buckets 0, 1 and 2, and the root. */
	for (uint32_t n = 1; n < XN; n++) {
		if (n % 2 == 1 || n % 3 == 0) {
			expect_add(b, &x, series, 0, n, 2, 5);
			expect_add(b, &x, series, 1, n, 1ULL << 40, (1ULL << 40) + n);
			expect_add(b, &x, series, 2, n, 7, 7);
		}
	}
	expect_add(b, &x, series, 1, STORE_ROOT_NODE, 4, 4);
	CHECK_OK(store_batch_commit(b));
	/* Commit 3: a sparse scattering across all buckets, twice per node
	 * within the batch. */
	for (uint32_t n = 0; n < XN; n += 37) {
		for (int bi = 0; bi < XB; bi++) {
			expect_add(b, &x, series, bi, n, 1, 2);
			expect_add(b, &x, series, bi, n, 1, UINT32_MAX);
		}
	}
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	check_expect(s, series, &x, 0, XB - 1);
	check_expect(s, series, &x, 1, 2); /* bucket range filter */
	check_expect(s, series, &x, 3, 3);
	CHECK_OK(store_compact(s));
	check_expect(s, series, &x, 0, XB - 1);
	store_close(s);

	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	check_expect(s, series, &x, 0, XB - 1);
	{
		struct sf_collected c = {0};

		CHECK_OK(store_series_counts(s, other, INT64_MIN, INT64_MAX, sf_collect, &c));
		CHECK(c.n == 1 && c.node[0] == 5 && c.bucket[0] == 0);
	}
	store_close(s);
}

/* Many operands on the same keys: flushing them goes through the partial
 * merge, compaction through the full merge, and further commits on top of
 * a compacted value through the full merge with an existing value. */
void test_partial_merge(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	static struct expect x;
	uint32_t series;

	memset(&x, 0, sizeof(x));
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	make_nodes(b);
	CHECK_OK(store_batch_commit(b));
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 40; i++) {
			for (uint32_t n = 1; n < XN; n++) {
				if (n % 7 != (uint32_t)i % 7 && n != (uint32_t)i + 1)
					continue;
				expect_add(b, &x, series, i % 2, n, 1,
				           n % 5 ? (uint64_t)i * 1000 + n : 1);
			}
			CHECK_OK(store_batch_commit(b));
		}
		/* Read while all operands are unmerged, then flush + compact. */
		check_expect(s, series, &x, 0, XB - 1);
		CHECK_OK(store_compact(s));
		check_expect(s, series, &x, 0, XB - 1);
	}
	store_batch_free(b);
	store_close(s);
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	check_expect(s, series, &x, 0, XB - 1);
	store_close(s);
}

static int count_calls(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	++*(size_t *)ctx;
	return 0;
}

/* Damaged counts values and keys give -EIO and a message, never a crash
 * or a read past the value (valgrind watches this test). */
void test_corrupt_counts(void)
{
	static const struct {
		const char *what;
		const char *v;
		size_t len;
	} bad[] = {
	        {"truncated varint", "\x80", 1},
	        {"weight flag without a weight", "\x0b\x01", 2},
	        {"entry without samples", "\x0a", 1},
	        {"node not increasing", "\x0a\x01\x00\x01", 4},
	        {"node past 32 bits", "\xfe\xff\xff\xff\x1f\x01\x02\x01", 8},
	        {"varint too long", "\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12},
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct sf_raw w;
	uint8_t key[8];
	char *rerr = NULL;
	uint32_t series, id;

	if (!s)
		return;
	/* Series 1 holds good counts; series 2..nbad+1 get one bad value
	 * each, series nbad+2 a bad key. */
	b = store_batch_new(s);
	for (size_t i = 0; i < nbad + 2; i++) {
		char version[16];
		struct store_series_key k = sf_key_a;

		snprintf(version, sizeof(version), "v%zu", i);
		k.version = version;
		CHECK_OK(store_batch_series(b, &k, &id));
	}
	series = 1;
	make_nodes(b);
	CHECK_OK(store_batch_add(b, series, 0, 7, 1, 1));
	CHECK_OK(store_batch_add(b, series, 0, 9, 2, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	CHECK_OK(store_compact(s));
	store_close(s);

	if (!sf_raw_open(dir, &w)) {
		sf_raw_close(&w);
		return;
	}
	for (size_t i = 0; i < nbad; i++) {
		sf_counts_key(key, (uint32_t)i + 2, 0);
		rocksdb_put_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, bad[i].v, bad[i].len,
		               &rerr);
		CHECK(rerr == NULL);
	}
	/* A key of the wrong length inside series nbad+2. */
	sf_counts_key(key, (uint32_t)nbad + 2, 0);
	rocksdb_put_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 5, "\x02\x01", 2, &rerr);
	CHECK(rerr == NULL);
	/* A damaged merge operand on top of series 1's good value. */
	sf_counts_key(key, series, 0);
	rocksdb_merge_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, "\x0a\x80", 2, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
	sf_raw_close(&w);

	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	for (size_t i = 0; i < nbad + 2; i++) {
		size_t calls = 0;
		uint32_t sid = i < nbad + 1 ? (uint32_t)i + 2 : series;
		int r = store_series_counts(s, sid, INT64_MIN, INT64_MAX, count_calls, &calls);

		CHECK(r == -EIO);
		CHECK(strstr(store_errmsg(s), dir) != NULL);
		/* Damaged values and keys are named as such; the operand
		 * surfaces as RocksDB's failed-merge Corruption status. */
		CHECK(i == nbad + 1 ? strstr(store_errmsg(s), "orruption") != NULL
		                    : strstr(store_errmsg(s), "damaged") != NULL);
		if (r != -EIO || sf_failed)
			fprintf(stderr, "  series %u (%s): %d, %zu calls: %s\n", sid,
			        i < nbad ? bad[i].what : "bad key or operand", r, calls,
			        store_errmsg(s));
	}
	{
		size_t calls = 0;

		/* A bad value damages only its own (series, bucket). */
		for (size_t i = 0; i < nbad; i++)
			CHECK(store_series_counts(s, (uint32_t)i + 2, 60, 120, count_calls,
			                          &calls) == 0);
		CHECK(calls == 0);
	}
	store_close(s);
}

/* One counts entry of node 1 with `samples` (weight the same): the counts
 * blob of store/README.md. */
static size_t one_entry(uint8_t *p, uint64_t samples)
{
	size_t n = 0;

	p[n++] = 1 << 1;
	while (samples >= 0x80) {
		p[n++] = (uint8_t)(samples | 0x80);
		samples >>= 7;
	}
	p[n++] = (uint8_t)samples;
	return n;
}

struct sum {
	uint64_t samples, weight;
};

static int sum_counts(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct sum *t = ctx;

	t->samples += samples;
	t->weight += weight;
	return 0;
}

/* No sum wraps past 2^64: a batch or a commit that would is refused
 * whole, and the merge operator fails rather than wrap. */
void test_no_wrap(void)
{
	const uint64_t half = UINT64_C(1) << 63;
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_series *list = NULL;
	struct sum t = {0};
	size_t n = 0;
	uint32_t id, n1, n2;
	struct sf_raw w;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &id));
	n1 = sf_add_stack(b, sf_stack1, 2);
	n2 = sf_add_stack(b, sf_stack1, 3);
	CHECK_OK(store_batch_add(b, id, 0, n1, UINT64_MAX - 1, 3));
	/* In one batch: the entry's sum, then the series' sum. */
	CHECK(store_batch_add(b, id, 0, n1, 2, 0) == -EOVERFLOW);
	CHECK(strstr(store_errmsg(s), "more than 2^64 - 1") != NULL);
	CHECK(store_batch_add(b, id, 0, n2, 2, 0) == -EOVERFLOW);
	CHECK_OK(store_batch_add(b, id, 0, n2, 1, 0));
	CHECK_OK(store_batch_commit(b));
	/* Across commits: the series' stored total is the limit. */
	CHECK_OK(store_batch_add(b, id, 60, n2, 1, 1));
	CHECK(store_batch_commit(b) == -EOVERFLOW);
	CHECK(strstr(store_errmsg(s),
	             "series app/1.0/cpu-clock: its total samples would pass 2^64 - 1") != NULL);
	store_batch_free(b);
	b = store_batch_new(s);
	CHECK_OK(store_batch_add(b, id, 60, n2, 0, UINT64_MAX - 2));
	CHECK(store_batch_commit(b) == -EOVERFLOW);
	CHECK(strstr(store_errmsg(s), "its total weight would pass") != NULL);
	store_batch_free(b);
	store_close(s);
	/* Nothing of the refused commits was written. */
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	CHECK_OK(store_series_list(s, &list, &n));
	CHECK(n == 1 && list[0].samples == UINT64_MAX && list[0].weight == 3);
	store_series_free(list, n);
	CHECK_OK(store_series_counts(s, id, INT64_MIN, INT64_MAX, sum_counts, &t));
	CHECK(t.samples == UINT64_MAX && t.weight == 3);
	store_close(s);

	/* The merge operator, fed by hand: operands adding up to 2^64 - 1
	 * merge; one more sample past it fails the read (like damage). */
	if (!sf_raw_open(dir, &w)) {
		sf_raw_close(&w);
		return;
	}
	for (int i = 0; i < 3; i++) {
		uint8_t key[8], v[16];
		uint64_t part = i == 0 ? half : i == 1 ? half - 1 : 1;
		char *rerr = NULL;

		/* (the failing key first: a read past a key merges it) */
		sf_counts_key(key, i == 2 ? 7 : 8, 0);
		for (int j = 0; j < (i == 2 ? 2 : 1); j++) {
			size_t len = one_entry(v, j ? UINT64_MAX : part);
			rocksdb_merge_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, (char *)v, len,
			                 &rerr);
			CHECK(rerr == NULL);
			rocksdb_free(rerr);
			rerr = NULL;
		}
	}
	sf_raw_close(&w);
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	memset(&t, 0, sizeof(t));
	CHECK_OK(store_series_counts(s, 8, INT64_MIN, INT64_MAX, sum_counts, &t));
	CHECK(t.samples == UINT64_MAX && t.weight == UINT64_MAX);
	memset(&t, 0, sizeof(t));
	CHECK(store_series_counts(s, 7, INT64_MIN, INT64_MAX, sum_counts, &t) == -EIO);
	CHECK(t.samples == 0 && strstr(store_errmsg(s), "orruption") != NULL);
	store_close(s);
}

/* Small right away: straight after a commit, the store is within 10% of
 * what compaction makes of it, for one big commit and after each of many
 * small ones (record's drains); no info log in the store. */
void test_small_right_away(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	char path[PATH_MAX + 16];
	uint32_t id;

	if (!s)
		return;
	for (int commit = 0; commit < 40; commit++) {
		struct store_batch *b = store_batch_new(s);
		/* the first commit holds 20000 stacks, later ones 50 each */
		int nstacks = commit ? 50 : 20000;

		CHECK_OK(store_batch_series(b, &sf_key_a, &id));
		for (int i = 0; i < nstacks; i++) {
			char n1[32], n2[32];
			int k = commit ? (commit * 7919 + i * 104729) % 20000 : i;
			snprintf(n1, sizeof(n1), "mod%d::f%d", k % 97, k / 7);
			snprintf(n2, sizeof(n2), "leaf_%d", k);
			const char *stack[] = {"main", n1, n2};
			uint32_t node = sf_add_stack(b, stack, 3);
			CHECK_OK(store_batch_add(b, id, 60 * (commit / 10), node,
			                         1 + (uint64_t)k % 5,
			                         1000003ull * (1 + (uint64_t)k % 13)));
		}
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
		if (commit == 0 || commit == 9 || commit == 39) {
			/* The store settles in a thread of its own, which a commit
			 * does not wait for (a record drain must not): measure once
			 * its size has held still for 0.3 s (at most 10 s; slow
			 * under the sanitizers). */
			uint64_t after = sf_dir_bytes(s), compacted;
			for (int still = 0, polls = 0; still < 3 && polls < 100; polls++) {
				usleep(100000);
				uint64_t now = sf_dir_bytes(s);
				still = now == after ? still + 1 : 0;
				after = now;
			}

			CHECK_OK(store_compact(s));
			compacted = sf_dir_bytes(s);
			CHECK(after * 10 <= compacted * 11);
			if (after * 10 > compacted * 11)
				fprintf(stderr,
				        "  after commit %d: %" PRIu64 " bytes, compacted %" PRIu64
				        "\n",
				        commit, after, compacted);
		}
	}
	store_close(s);
	snprintf(path, sizeof(path), "%s/LOG", dir);
	CHECK(access(path, F_OK) < 0);
}

/* Bytes under a flat directory as du counts them (st_blocks); with
 * `suffix`, only of the files whose names end in it, and their lengths
 * (st_size) when `lengths`. */
static uint64_t dir_bytes(const char *dir, const char *suffix, bool lengths)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	uint64_t total = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name), k = suffix ? strlen(suffix) : 0;
		if (e->d_name[0] == '.' || n < k || (suffix && strcmp(e->d_name + n - k, suffix)))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			total += lengths ? (uint64_t)st.st_size : (uint64_t)st.st_blocks * 512;
	}
	if (d)
		closedir(d);
	return total;
}

/* A writer's small commits (record's drains: a few KB each, under the
 * settling's slack) stay in the write-ahead log while it runs, and its
 * close settles them: after a big first commit (settled at once), small
 * ones until the log holds more than 15% of the store's bytes; closed,
 * the store's log holds no commit and the store is within 10% of what
 * compaction makes of it. */
void test_settled_at_close(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	uint64_t logged = 0, left, closed, compacted;
	uint32_t id;

	if (!s)
		return;
	for (int commit = 0; commit < 200 && logged * 100 <= dir_bytes(dir, NULL, false) * 15;
	     commit++) {
		struct store_batch *b = store_batch_new(s);
		int nstacks = commit ? 100 : 20000;

		CHECK_OK(store_batch_series(b, &sf_key_a, &id));
		for (int i = 0; i < nstacks; i++) {
			char n1[32], n2[32];
			int k = commit ? 20000 + commit * 100 + i : i;
			snprintf(n1, sizeof(n1), "mod%d::f%d", k % 97, k / 7);
			snprintf(n2, sizeof(n2), "leaf_%d", k);
			const char *stack[] = {"main", n1, n2};
			uint32_t node = sf_add_stack(b, stack, 3);
			CHECK_OK(store_batch_add(b, id, 60 * commit, node, 1, 1000));
		}
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
		/* the first commit's settling is done before the next */
		if (commit == 0)
			sf_dir_bytes(s);
		logged = dir_bytes(dir, ".log", false);
	}
	store_close(s);
	closed = dir_bytes(dir, NULL, false);
	left = dir_bytes(dir, ".log", true);
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	CHECK_OK(store_compact(s));
	store_close(s);
	compacted = dir_bytes(dir, NULL, false);
	/* A new log's first record only names its compression (11 bytes). */
	CHECK(logged * 100 > compacted * 15 && left <= 32 && closed * 10 <= compacted * 11);
	if (logged * 100 <= compacted * 15 || left > 32 || closed * 10 > compacted * 11)
		fprintf(stderr,
		        "  log %" PRIu64 " bytes before the close, %" PRIu64
		        " after; closed %" PRIu64 ", compacted %" PRIu64 "\n",
		        logged, left, closed, compacted);
}
