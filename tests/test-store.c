/*
 * test-store.c — unit tests for the store library (store/).
 *
 * Each test works in a fresh directory under a private temporary root and
 * prints "PASS name" or "FAIL name"; the program exits non-zero when any
 * check failed.  A few tests write to the RocksDB directory with the C API
 * directly (a bad schema version, damaged counts values, a store of the
 * development layout), so they know parts of the key layout of
 * store/README.md: the "counts" column family and its (series, bucket)
 * keys, and the meta key "mschema" in "default".
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rocksdb/c.h>

static int failures;
static int test_failed;
static char root[256];
static const char *self_path; /* argv[0], to run a second process */

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			test_failed = 1;                                                           \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr)                                                                             \
	do {                                                                                       \
		int r_ = (expr);                                                                   \
		if (r_ < 0) {                                                                      \
			fprintf(stderr, "  %s:%d: %s returned %d (%s)\n", __FILE__, __LINE__,      \
			        #expr, r_, strerror(-r_));                                         \
			test_failed = 1;                                                           \
		}                                                                                  \
	} while (0)

static void run(const char *name, void (*fn)(void))
{
	test_failed = 0;
	fn();
	printf("%s %s\n", test_failed ? "FAIL" : "PASS", name);
	fflush(stdout);
	failures += test_failed;
}

static int counter;

/* A fresh, not yet existing store path. */
static char *fresh_dir(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/s%d", root, ++counter);
	return path;
}

static struct store *open_rw(const char *dir, int flags)
{
	struct store *s = NULL;
	char err[512] = "";
	int r = store_open(dir, flags, &s, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "  store_open(%s): %d: %s\n", dir, r, err);
		test_failed = 1;
		return NULL;
	}
	return s;
}

static struct store_frame mkframe(const char *name)
{
	struct store_frame f = {0};

	f.name = name;
	f.name_len = strlen(name);
	return f;
}

/* Interns a stack of names (root first) and returns its leaf node. */
static uint32_t add_stack(struct store_batch *b, const char *const *names, size_t n)
{
	uint32_t node = STORE_ROOT_NODE;

	for (size_t i = 0; i < n; i++) {
		struct store_frame f = mkframe(names[i]);
		uint32_t fid = 0;

		CHECK_OK(store_batch_frame(b, &f, &fid));
		CHECK_OK(store_batch_node(b, node, fid, &node));
	}
	return node;
}

static const struct store_series_key key_a = {NULL, "app", "1.0", "cpu-clock", "nanoseconds"};

struct collected {
	size_t n;
	int64_t bucket[64];
	uint32_t node[64];
	uint64_t samples[64], weight[64];
};

static int collect(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct collected *c = ctx;

	if (c->n < 64) {
		c->bucket[c->n] = bucket;
		c->node[c->n] = node;
		c->samples[c->n] = samples;
		c->weight[c->n] = weight;
	}
	c->n++;
	return 0;
}

static const char *const stack1[] = {"main", "run", "work"};

/* ---- raw RocksDB access (damaged or foreign stores) ---------------------------- */

static char *fail_full_merge(void *st, const char *key, size_t key_len, const char *existing,
                             size_t existing_len, const char *const *ops, const size_t *op_lens,
                             int nops, unsigned char *success, size_t *len)
{
	*success = 0;
	return NULL;
}

static char *fail_partial_merge(void *st, const char *key, size_t key_len, const char *const *ops,
                                const size_t *op_lens, int nops, unsigned char *success,
                                size_t *len)
{
	*success = 0;
	return NULL;
}

static void noop_delete(void *st, const char *value, size_t len)
{
}

static void noop_destroy(void *st)
{
}

static const char *raw_merge_name(void *st)
{
	return "test.raw";
}

struct raw {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;
	rocksdb_column_family_handle_t *cf[16];
	char **names;
	size_t n;
	int counts; /* index of the counts CF */
};

/* Opens every column family of the store at dir with plain options. */
static bool raw_open(const char *dir, struct raw *w)
{
	const rocksdb_options_t *o[16];
	char *rerr = NULL;

	memset(w, 0, sizeof(*w));
	w->counts = -1;
	w->opts = rocksdb_options_create();
	rocksdb_options_set_merge_operator(
	        w->opts,
	        rocksdb_mergeoperator_create(NULL, noop_destroy, fail_full_merge,
	                                     fail_partial_merge, noop_delete, raw_merge_name));
	w->names = rocksdb_list_column_families(w->opts, dir, &w->n, &rerr);
	if (rerr || w->n > 16) {
		fprintf(stderr, "  list cfs: %s\n", rerr ? rerr : "too many");
		rocksdb_free(rerr);
		test_failed = 1;
		return false;
	}
	for (size_t i = 0; i < w->n; i++) {
		o[i] = w->opts;
		if (!strcmp(w->names[i], "counts"))
			w->counts = (int)i;
	}
	w->db = rocksdb_open_column_families(w->opts, dir, (int)w->n, (const char *const *)w->names,
	                                     o, w->cf, &rerr);
	if (rerr) {
		fprintf(stderr, "  raw open: %s\n", rerr);
		rocksdb_free(rerr);
		test_failed = 1;
		return false;
	}
	CHECK(w->counts >= 0);
	w->wo = rocksdb_writeoptions_create();
	return w->counts >= 0;
}

static void raw_close(struct raw *w)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->cf[i])
			rocksdb_column_family_handle_destroy(w->cf[i]);
	}
	if (w->db)
		rocksdb_close(w->db);
	if (w->names)
		rocksdb_list_column_families_destroy(w->names, w->n);
	if (w->wo)
		rocksdb_writeoptions_destroy(w->wo);
	rocksdb_options_destroy(w->opts);
}

/* Creates an empty store in a fresh directory and opens it raw; returns
 * the directory, or NULL (the failure counted). */
static char *empty_store_raw(struct raw *w)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);

	if (!s)
		return NULL;
	store_close(s);
	if (!raw_open(dir, w)) {
		raw_close(w);
		return NULL;
	}
	return dir;
}

/* A counts key: u32 BE series, u32 BE offset-binary bucket index. */
static void counts_key(uint8_t *k, uint32_t series, int32_t bucket)
{
	uint32_t v = (uint32_t)bucket ^ 0x80000000u;

	k[0] = (uint8_t)(series >> 24);
	k[1] = (uint8_t)(series >> 16);
	k[2] = (uint8_t)(series >> 8);
	k[3] = (uint8_t)series;
	k[4] = (uint8_t)(v >> 24);
	k[5] = (uint8_t)(v >> 16);
	k[6] = (uint8_t)(v >> 8);
	k[7] = (uint8_t)v;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_dedup(void)
{
	struct store *s = open_rw(fresh_dir(), STORE_CREATE);
	struct store_batch *b;
	uint32_t n1, n2, series;
	struct store_frame f1 = mkframe("x"), f2 = mkframe("x");
	uint32_t fa, fb, fc;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK(b != NULL);
	CHECK(store_batch_new(s) == NULL); /* one batch at a time */
	CHECK_OK(store_batch_series(b, &key_a, &series));
	n1 = add_stack(b, stack1, 3);
	n2 = add_stack(b, stack1, 3);
	CHECK(n1 == n2);
	CHECK(n1 == 3);
	CHECK(store_node_count(s) == 4);  /* root + 3 */
	CHECK(store_frame_count(s) == 4); /* 3 frames + 1 */
	/* Same name, different module: a different frame. */
	f2.module = "/lib/libx.so";
	f2.module_len = strlen(f2.module);
	CHECK_OK(store_batch_frame(b, &f1, &fa));
	CHECK_OK(store_batch_frame(b, &f2, &fb));
	CHECK_OK(store_batch_frame(b, &f1, &fc));
	CHECK(fa != fb);
	CHECK(fa == fc);
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	store_close(s);
}

static void test_merge_adds(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct collected c = {0};
	struct store_series *list = NULL;
	size_t n = 0;
	uint32_t series, node;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	node = add_stack(b, stack1, 3);
	CHECK_OK(store_batch_add(b, series, 1000, node, 1, 10));
	CHECK_OK(store_batch_add(b, series, 1001, node, 2, 20)); /* same bucket */
	CHECK_OK(store_batch_input_bytes(b, series, 100));
	CHECK_OK(store_batch_commit(b));
	/* The same batch may be used again after a commit. */
	CHECK_OK(store_batch_add(b, series, 1010, node, 4, 40));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 1);
	CHECK(c.node[0] == node);
	CHECK(c.samples[0] == 7 && c.weight[0] == 70);
	CHECK(c.bucket[0] == 960); /* 1000 rounded down to 60 s */
	store_close(s);

	/* Across a reopen, and with a third commit on top. */
	s = open_rw(dir, 0);
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	CHECK(series == 1);
	CHECK(add_stack(b, stack1, 3) == node);
	CHECK(store_node_count(s) == 4);
	CHECK_OK(store_batch_add(b, series, 1019, node, 1, 1));
	CHECK_OK(store_batch_add(b, series, 1020, node, 1, 1)); /* next bucket */
	CHECK_OK(store_batch_input_bytes(b, series, 50));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 2);
	CHECK(c.samples[0] == 8 && c.weight[0] == 71 && c.bucket[0] == 960);
	CHECK(c.samples[1] == 1 && c.weight[1] == 1 && c.bucket[1] == 1020);
	/* Range filter on buckets. */
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, 1020, 2000, collect, &c));
	CHECK(c.n == 1 && c.bucket[0] == 1020);
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, 0, 1019, collect, &c));
	CHECK(c.n == 1 && c.bucket[0] == 960);

	CHECK_OK(store_series_list(s, &list, &n));
	CHECK(n == 1);
	if (n == 1) {
		CHECK(!strcmp(list[0].binary, "app"));
		CHECK(!strcmp(list[0].version, "1.0"));
		CHECK(!strcmp(list[0].event, "cpu-clock"));
		CHECK(!strcmp(list[0].unit, "nanoseconds"));
		CHECK(list[0].samples == 9 && list[0].weight == 72);
		CHECK(list[0].first_seen == 1000 && list[0].last_seen == 1020);
		CHECK(list[0].input_bytes == 150);
	}
	store_series_free(list, n);

	/* After a full compaction the merged values survive. */
	CHECK_OK(store_compact(s));
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 2 && c.weight[0] == 71 && c.weight[1] == 1);
	store_close(s);
}

static void test_negative_time(void)
{
	struct store *s = open_rw(fresh_dir(), STORE_CREATE);
	struct store_batch *b;
	struct collected c = {0};
	uint32_t series, node;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	node = add_stack(b, stack1, 1);
	CHECK_OK(store_batch_add(b, series, 5, node, 1, 1));
	CHECK_OK(store_batch_add(b, series, -5, node, 1, 2));
	CHECK_OK(store_batch_add(b, series, -61, node, 1, 3));
	CHECK(store_batch_add(b, series, INT64_MAX, node, 1, 1) == -ERANGE);
	CHECK(store_batch_add(b, 99, 0, node, 1, 1) == -EINVAL);
	CHECK(store_batch_add(b, series, 0, 999, 1, 1) == -EINVAL);
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 3);
	CHECK(c.bucket[0] == -120 && c.weight[0] == 3);
	CHECK(c.bucket[1] == -60 && c.weight[1] == 2);
	CHECK(c.bucket[2] == 0 && c.weight[2] == 1);
	store_close(s);
}

static void test_rollback(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_series *list = NULL;
	struct collected c = {0};
	uint32_t series, node, id, nframes, nnodes, fid[2000];
	size_t n = 0;
	char name[32];

	if (!s)
		return;
	/* A committed base of many frames and nodes. */
	b = store_batch_new(s);
	for (int i = 0; i < 2000; i++) {
		struct store_frame f;

		snprintf(name, sizeof(name), "keep%d", i);
		f = mkframe(name);
		CHECK_OK(store_batch_frame(b, &f, &fid[i]));
		CHECK_OK(store_batch_node(b, i ? (uint32_t)i : 0, fid[i], &id));
	}
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	nframes = store_frame_count(s);
	nnodes = store_node_count(s);

	/* A big batch that is thrown away (enough to grow the hash tables). */
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	for (int i = 0; i < 20000; i++) {
		struct store_frame f;

		snprintf(name, sizeof(name), "drop%d", i);
		f = mkframe(name);
		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK_OK(store_batch_node(b, (uint32_t)i % 100, id, &node));
		CHECK_OK(store_batch_add(b, series, i, node, 1, 1));
	}
	CHECK(store_frame_count(s) > nframes);
	store_batch_free(b);
	CHECK(store_frame_count(s) == nframes);
	CHECK(store_node_count(s) == nnodes);

	/* Every committed frame and node is still found under its id. */
	b = store_batch_new(s);
	CHECK(b != NULL);
	for (int i = 0; i < 2000; i++) {
		struct store_frame f;

		snprintf(name, sizeof(name), "keep%d", i);
		f = mkframe(name);
		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK(id == fid[i]);
		CHECK_OK(store_batch_node(b, i ? (uint32_t)i : 0, fid[i], &id));
		CHECK(id == (uint32_t)i + 1);
	}
	CHECK(store_frame_count(s) == nframes);
	/* Ids are handed out again from where the dropped batch started. */
	CHECK_OK(store_batch_series(b, &key_a, &series));
	CHECK(series == 1);
	{
		struct store_frame f = mkframe("drop5");

		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK(id == nframes);
		CHECK_OK(store_batch_node(b, 0, id, &node));
		CHECK(node == nnodes);
	}
	store_batch_free(b);
	store_close(s);

	/* Nothing of the dropped batches reached the disk. */
	s = open_rw(dir, 0);
	if (!s)
		return;
	CHECK(store_frame_count(s) == nframes);
	CHECK(store_node_count(s) == nnodes);
	CHECK_OK(store_series_list(s, &list, &n));
	CHECK(n == 0);
	store_series_free(list, n);
	CHECK_OK(store_series_counts(s, 1, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 0);
	store_close(s);
}

/* The writer's node index against a model: rounds of random nodes (many
 * under the same parents, so pairs repeat), every other round thrown
 * away, through tables of 2^10 to 2^19 slots.  After each round every
 * kept node is found under its id, no pair got two ids, and a pair of a
 * dropped round is new again; after a reopen (the index built at open)
 * the same. */
static int cmp_pair(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t node_index_misses(struct store *s, const uint32_t *parent, const uint32_t *frame,
                                uint32_t n)
{
	struct store_batch *b = store_batch_new(s);
	size_t bad = 0;
	uint32_t id;

	if (!b)
		return n;
	for (uint32_t i = 1; i < n; i++)
		if (store_batch_node(b, parent[i], frame[i], &id) < 0 || id != i)
			bad++;
	if (store_node_count(s) != n)
		bad++;
	store_batch_free(b);
	return bad;
}

static void test_node_index(void)
{
	enum { FRAMES = 64, PER_ROUND = 80000, ROUNDS = 12 };
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	uint32_t *parent = malloc(sizeof(*parent) * PER_ROUND * ROUNDS);
	uint32_t *frame = malloc(sizeof(*frame) * PER_ROUND * ROUNDS);
	uint64_t *pairs = malloc(sizeof(*pairs) * PER_ROUND * ROUNDS);
	uint32_t fid[FRAMES], n = 1, id;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	char name[16];

	if (!s || !parent || !frame || !pairs)
		goto out;
	parent[0] = frame[0] = 0;
	b = store_batch_new(s);
	for (int i = 0; b && i < FRAMES; i++) {
		struct store_frame f;

		snprintf(name, sizeof(name), "f%d", i);
		f = mkframe(name);
		CHECK_OK(store_batch_frame(b, &f, &fid[i]));
	}
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t from = n, p, f;
		size_t wrong = 0, dup = 0, fresh = 0;
		bool keep = round % 2 == 0 || round == ROUNDS - 1;

		b = store_batch_new(s);
		if (!b)
			break;
		for (int i = 0; i < PER_ROUND; i++) {
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			/* half under the first nodes, so pairs repeat */
			p = (uint32_t)(rng >> 32) % (rng & 1 ? n : (n < 64 ? n : 64));
			f = fid[(rng >> 8) % FRAMES];
			if (store_batch_node(b, p, f, &id) < 0) {
				wrong++;
			} else if (id < n) {
				wrong += parent[id] != p || frame[id] != f;
			} else if (id == n) {
				parent[n] = p;
				frame[n++] = f;
			} else {
				wrong++;
			}
		}
		if (keep) {
			CHECK_OK(store_batch_commit(b));
		} else {
			/* a dropped round's last new pair under a kept node gets
			 * the first id again */
			uint32_t last = n - 1;

			while (last > from && parent[last] >= from)
				last--;
			p = parent[last];
			f = frame[last];
			store_batch_free(b);
			n = from;
			b = store_batch_new(s);
			if (b && store_batch_node(b, p, f, &id) == 0)
				fresh = id == n;
		}
		store_batch_free(b);
		for (uint32_t i = 1; i < n; i++)
			pairs[i - 1] = (uint64_t)parent[i] << 32 | frame[i];
		qsort(pairs, n - 1, sizeof(*pairs), cmp_pair);
		for (uint32_t i = 1; i + 1 < n; i++)
			dup += pairs[i] == pairs[i - 1];
		wrong += node_index_misses(s, parent, frame, n);
		if (wrong || dup || (!keep && !fresh)) {
			fprintf(stderr, "  round %d (%u nodes, %s): %zu wrong, %zu pairs twice%s\n",
			        round, n, keep ? "kept" : "dropped", wrong, dup,
			        !keep && !fresh ? ", a dropped pair not new" : "");
			CHECK(0);
		}
	}
	CHECK(n > 200000); /* past 2^18 slots at 70% */
	store_close(s);
	s = open_rw(dir, 0);
	if (s)
		CHECK(node_index_misses(s, parent, frame, n) == 0);
out:
	if (s)
		store_close(s);
	free(parent);
	free(frame);
	free(pairs);
}

static void test_reopen_stable(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_frame f = {0}, g;
	static const uint8_t bid[] = {0xde, 0xad, 0x00, 0xef};
	uint32_t series2, series, node, fid, p, fr;
	static const struct store_series_key key_b = {NULL, "app", "2.0", "cpu-clock",
	                                              "nanoseconds"};
	static const struct store_series_key key_bad = {NULL, "app", "2.0", "cpu-clock", "count"};

	if (!s)
		return;
	CHECK(store_bucket_seconds(s) == STORE_DEFAULT_BUCKET_SECONDS);
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	CHECK_OK(store_batch_series(b, &key_b, &series2));
	CHECK(series == 1 && series2 == 2);
	CHECK(store_batch_series(b, &key_bad, &series) == -EINVAL);
	node = add_stack(b, stack1, 3);
	f.name = "inl";
	f.name_len = 3;
	f.module = "/usr/bin/app";
	f.module_len = strlen(f.module);
	f.build_id = bid;
	f.build_id_len = sizeof(bid);
	f.file = "app.c";
	f.file_len = 5;
	f.line = 42;
	f.kind = STORE_FRAME_INLINE;
	CHECK_OK(store_batch_frame(b, &f, &fid));
	CHECK_OK(store_batch_node(b, node, fid, &node));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	store_close(s);

	s = open_rw(dir, 0);
	if (!s)
		return;
	CHECK(store_frame_count(s) == 5);
	CHECK(store_node_count(s) == 5);
	CHECK_OK(store_node_get(s, node, &p, &fr));
	CHECK(p == 3 && fr == fid);
	CHECK_OK(store_node_get(s, 0, &p, &fr));
	CHECK(p == 0 && fr == 0);
	CHECK(store_node_get(s, 5, &p, &fr) == -ENOENT);
	CHECK(store_frame_get(s, 0, &g) == -ENOENT);
	CHECK_OK(store_frame_get(s, fid, &g));
	CHECK(g.name_len == 3 && !memcmp(g.name, "inl", 3));
	CHECK(g.module_len == f.module_len && !memcmp(g.module, f.module, f.module_len));
	CHECK(g.build_id_len == 4 && !memcmp(g.build_id, bid, 4));
	CHECK(g.file_len == 5 && !memcmp(g.file, "app.c", 5));
	CHECK(g.line == 42 && g.kind == STORE_FRAME_INLINE);
	CHECK_OK(store_frame_get(s, 1, &g));
	CHECK(g.name_len == 4 && !memcmp(g.name, "main", 4) && g.module_len == 0);
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_b, &series));
	CHECK(series == 2);
	CHECK_OK(store_batch_frame(b, &f, &series));
	CHECK(series == fid);
	CHECK(add_stack(b, stack1, 3) == 3);
	store_batch_free(b);
	store_close(s);
}

static void test_schema(void)
{
	struct raw w;
	char *dir = empty_store_raw(&w), *rerr = NULL;
	struct store *s;
	char err[512] = "";
	const char v9[4] = {0, 0, 0, 9};

	if (!dir)
		return;
	/* The schema version: key "schema" with the meta prefix 'm' in the
	 * default column family. */
	CHECK(w.n == 2 && !strcmp(w.names[0], "default"));
	rocksdb_put_cf(w.db, w.wo, w.cf[0], "mschema", 7, v9, 4, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
	raw_close(&w);

	s = NULL;
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EPROTONOSUPPORT);
	CHECK(s == NULL);
	CHECK(strstr(err, "schema version 9") != NULL);
	CHECK(strstr(err, "(3)") != NULL);
	CHECK(strstr(err, dir) != NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0);
	CHECK(strstr(err, "schema version 9") != NULL);
}

/* The value of key in the default column family (rocksdb_free it), or
 * NULL. */
static char *raw_get(struct raw *w, const char *key, size_t klen, size_t *vlen)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *rerr = NULL;
	char *v = rocksdb_get_cf(w->db, ro, w->cf[0], key, klen, vlen, &rerr);

	rocksdb_free(rerr);
	rocksdb_readoptions_destroy(ro);
	return v;
}

/* Puts key -> val into the default column family, checked. */
static void raw_put(struct raw *w, const char *key, size_t klen, const char *val, size_t vlen)
{
	char *rerr = NULL;

	rocksdb_put_cf(w->db, w->wo, w->cf[0], key, klen, val, vlen, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
}

/* Puts a damaged record (key: prefix + be32 id) into the store at dir
 * through w, closes w, and checks that a writer refuses the store with
 * msg. */
static void expect_damage(struct raw *w, const char *dir, char prefix, uint32_t id, const char *val,
                          size_t vlen, const char *msg)
{
	char key[5] = {prefix, (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	char err[512] = "";
	struct store *s = NULL;

	raw_put(w, key, 5, val, vlen);
	raw_close(w);
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EIO);
	CHECK(strstr(err, msg) != NULL);
	if (s)
		store_close(s);
}

/* Frames that share a module and build id store a reference to an earlier
 * one (schema 2); the frames read back whole, across commits, through a
 * writer and a reader, and from a store still marked schema 1. */
static struct store_frame modframe(const char *name, const char *module, const char *bid)
{
	struct store_frame f = mkframe(name);

	f.module = module;
	f.module_len = strlen(module);
	f.build_id = (const uint8_t *)bid;
	f.build_id_len = bid ? 20 : 0;
	return f;
}

static void check_frames(struct store *s, const struct store_frame *want, size_t n)
{
	CHECK(store_frame_count(s) == n + 1);
	for (uint32_t id = 1; id <= n && id < store_frame_count(s); id++) {
		struct store_frame f;
		const struct store_frame *w = &want[id - 1];
		CHECK_OK(store_frame_get(s, id, &f));
		CHECK(f.name_len == w->name_len && !memcmp(f.name, w->name, w->name_len));
		CHECK(f.module_len == w->module_len &&
		      (!w->module_len || !memcmp(f.module, w->module, w->module_len)));
		CHECK(f.build_id_len == w->build_id_len &&
		      (!w->build_id_len || !memcmp(f.build_id, w->build_id, w->build_id_len)));
	}
}

/* The kind byte of frame id's record, or -1. */
static int raw_frame_kind(struct raw *w, uint32_t id)
{
	char key[5] = {'f', (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	size_t vlen = 0;
	char *v = raw_get(w, key, 5, &vlen);
	int kind = v && vlen ? (uint8_t)v[0] : -1;

	rocksdb_free(v);
	return kind;
}

static void test_module_refs(void)
{
	static const char b1[21] = "0123456789abcdefghij", b2[21] = "ABCDEFGHIJ0123456789";
	const struct store_frame want[] = {
	        modframe("a", "/usr/bin/app", b1),   modframe("b", "[kernel.kallsyms]", NULL),
	        modframe("c", "/usr/bin/app", b1),   modframe("d", "/usr/bin/app", b2),
	        modframe("e", "/usr/bin/app", NULL), modframe("f", "[kernel.kallsyms]", NULL),
	        modframe("g", "/usr/bin/app", b2),   modframe("h", "/usr/bin/app", b1),
	};
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE), *r = NULL;
	struct raw w;
	char err[512] = "";
	const char v1[4] = {0, 0, 0, 1};
	uint32_t id;

	if (!s)
		return;
	/* two commits: references reach back into the first */
	for (size_t part = 0; part < 2; part++) {
		struct store_batch *b = store_batch_new(s);
		CHECK(b != NULL);
		if (!b)
			break;
		for (size_t i = part * 5; i < (part ? 8 : 5); i++) {
			CHECK_OK(store_batch_frame(b, &want[i], &id));
			CHECK(id == i + 1);
		}
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	check_frames(s, want, 8);
	store_close(s);

	if (!raw_open(dir, &w)) {
		raw_close(&w);
		return;
	}
	/* a, b, d and e are the first of their (module, build id); the rest
	 * refer back */
	for (uint32_t i = 1; i <= 8; i++) {
		int kind = raw_frame_kind(&w, i);
		bool ref = i == 3 || i == 6 || i == 7 || i == 8;
		CHECK(kind >= 0 && ((kind & 0x80) != 0) == ref);
	}
	/* mark it schema 1: it still reads (no writer has said otherwise) */
	raw_put(&w, "mschema", 7, v1, 4);
	raw_close(&w);
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		check_frames(r, want, 8);
		store_close(r);
	}
	/* a writer reads it and marks it schema 2 */
	s = open_rw(dir, 0);
	if (s) {
		check_frames(s, want, 8);
		store_close(s);
	}
	if (!raw_open(dir, &w)) {
		raw_close(&w);
		return;
	}
	size_t vlen = 0;
	char *v = raw_get(&w, "mschema", 7, &vlen);
	CHECK(v && vlen == 4 && v[3] == 2);
	rocksdb_free(v);

	/* a reference that points at itself or past the first frame is damage */
	const char bad[] = {(char)0x80, 0, 1, 'c', 3};
	expect_damage(&w, dir, 'f', 3, bad, sizeof(bad), "store is damaged: frame 3");
}

/* Nodes are stored in runs of up to 4096 per record (schema 2), after any
 * schema 1 records of one node each; both load back in id order, through
 * a writer and a reader, and a damaged run is refused. */
static bool raw_has(struct raw *w, char prefix, uint32_t id)
{
	char key[5] = {prefix, (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	size_t vlen = 0;
	char *v = raw_get(w, key, 5, &vlen);
	bool has = v != NULL;

	rocksdb_free(v);
	return has;
}

/* node i's parent and frame in the tree test_node_runs builds */
static void run_shape(uint32_t i, uint32_t *parent, uint32_t *frame)
{
	*parent = i <= 3 ? STORE_ROOT_NODE + i - 1 : i / 3; /* a chain, then a fan */
	*frame = 1 + i % 7;
}

static void check_run_shape(struct store *s, uint32_t first, uint32_t n)
{
	CHECK(store_node_count(s) == first + n);
	for (uint32_t i = first; i < first + n && i < store_node_count(s); i++) {
		uint32_t p, f, wp, wf;
		run_shape(i, &wp, &wf);
		CHECK_OK(store_node_get(s, i, &p, &f));
		CHECK(p == wp && f == wf);
	}
}

static void test_node_runs(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE), *r = NULL;
	struct raw w;
	char err[512] = "";
	const uint32_t total = 5000;
	uint32_t id;

	if (!s)
		return;
	struct store_batch *b = store_batch_new(s);
	for (int i = 0; i < 7 && b; i++) {
		struct store_frame f =
		        mkframe((const char *[]){"a", "b", "c", "d", "e", "f", "g"}[i]);
		CHECK_OK(store_batch_frame(b, &f, &id));
	}
	/* one commit of 4990 nodes (two runs), one of 10 (a third) */
	for (uint32_t i = 1; i < total + 1 && b; i++) {
		uint32_t p, f;
		run_shape(i, &p, &f);
		CHECK_OK(store_batch_node(b, p, f, &id));
		CHECK(id == i);
		if (i == total - 10) {
			CHECK_OK(store_batch_commit(b));
			store_batch_free(b);
			b = store_batch_new(s);
		}
	}
	CHECK(b != NULL);
	if (b) {
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	store_close(s);

	s = open_rw(dir, 0);
	if (s) {
		check_run_shape(s, 1, total);
		store_close(s);
	}
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		check_run_shape(r, 1, total);
		store_close(r);
	}
	if (!raw_open(dir, &w)) {
		raw_close(&w);
		return;
	}
	CHECK(raw_has(&w, 'N', 1) && raw_has(&w, 'N', 4097) && raw_has(&w, 'N', 4991));
	CHECK(!raw_has(&w, 'N', 2) && !raw_has(&w, 'n', 1));
	/* a run after the last that claims more nodes than it holds is damage */
	const char bad[] = {10, 1, 1, 2};
	expect_damage(&w, dir, 'N', total + 1, bad, sizeof(bad),
	              "store is damaged: nodes from 5001");

	/* schema 1 records, then runs from a schema 2 writer after them */
	dir = empty_store_raw(&w);
	if (!dir)
		return;
	const char v1[4] = {0, 0, 0, 1}, frame1[] = {0, 0, 1, 'x', 0, 0, 0};
	raw_put(&w, "mschema", 7, v1, 4);
	raw_put(&w, (char[]){'f', 0, 0, 0, 1}, 5, frame1, sizeof(frame1));
	/* node 1 under the root, node 2 under node 1: (id - parent, frame) */
	raw_put(&w, (char[]){'n', 0, 0, 0, 1}, 5, (char[]){1, 1}, 2);
	raw_put(&w, (char[]){'n', 0, 0, 0, 2}, 5, (char[]){1, 1}, 2);
	raw_close(&w);
	s = open_rw(dir, 0);
	if (!s)
		return;
	CHECK(store_node_count(s) == 3);
	b = store_batch_new(s);
	if (b) {
		CHECK_OK(store_batch_node(b, 2, 1, &id));
		CHECK(id == 3);
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	store_close(s);
	r = NULL;
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	for (uint32_t i = 1; r && i <= 3; i++) {
		uint32_t p = 99, f = 99;
		CHECK_OK(store_node_get(r, i, &p, &f));
		CHECK(p == i - 1 && f == 1);
	}
	if (r) {
		CHECK(store_node_count(r) == 4);
		store_close(r);
	}
}

/* Reader directories left by readers that died without store_close are
 * removed by the next reader; live readers' directories are not. */
static int reader_dirs(const char *base, char names[][NAME_MAX + 1], int max)
{
	DIR *d = opendir(base);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (!strncmp(e->d_name, "flamefs-reader-", 15) && n < max)
			snprintf(names[n++], NAME_MAX + 1, "%s", e->d_name);
	closedir(d);
	return n;
}

static void test_stale_reader_dirs(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE), *r1 = NULL, *r2 = NULL;
	char base[PATH_MAX], err[512] = "", names[8][NAME_MAX + 1], after[8][NAME_MAX + 1];
	const char *saved = getenv("XDG_RUNTIME_DIR");
	char *saved_copy = saved ? strdup(saved) : NULL;
	int status = 0;

	if (!s)
		return;
	store_close(s);
	snprintf(base, sizeof(base), "%s/runtime", root);
	CHECK(mkdir(base, 0700) == 0);
	setenv("XDG_RUNTIME_DIR", base, 1);

	CHECK(store_open(dir, STORE_READONLY, &r1, err, sizeof(err)) == 0);
	CHECK(reader_dirs(base, names, 8) == 1);
	char live[NAME_MAX + 1];
	snprintf(live, sizeof(live), "%s", names[0]);
	pid_t pid = fork();
	if (pid == 0) { /* a reader that dies without closing */
		struct store *r = NULL;
		_exit(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(reader_dirs(base, names, 8) == 2);

	CHECK(store_open(dir, STORE_READONLY, &r2, err, sizeof(err)) == 0);
	/* the dead one's is gone, the live one's is still there */
	CHECK(reader_dirs(base, after, 8) == 2);
	CHECK(!strcmp(after[0], live) || !strcmp(after[1], live));
	store_close(r1);
	store_close(r2);
	CHECK(reader_dirs(base, names, 8) == 0);

	if (saved_copy)
		setenv("XDG_RUNTIME_DIR", saved_copy, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(saved_copy);
}

/* A store of the development layout (a column family per record kind) is
 * refused with a clear message, not misread. */
static void test_old_layout(void)
{
	char *dir = fresh_dir();
	const char *names[6] = {"default", "meta", "frames", "nodes", "series", "counts"};
	const char v1[4] = {0, 0, 0, 1};
	rocksdb_options_t *o[6];
	rocksdb_column_family_handle_t *cf[6];
	rocksdb_options_t *opts = rocksdb_options_create();
	rocksdb_writeoptions_t *wo;
	rocksdb_t *db;
	struct store *s = NULL;
	char *rerr = NULL;
	char err[512] = "";

	rocksdb_options_set_create_if_missing(opts, 1);
	rocksdb_options_set_create_missing_column_families(opts, 1);
	for (int i = 0; i < 6; i++)
		o[i] = opts;
	db = rocksdb_open_column_families(opts, dir, 6, names, (const rocksdb_options_t *const *)o,
	                                  cf, &rerr);
	CHECK(rerr == NULL);
	if (rerr) {
		fprintf(stderr, "  %s\n", rerr);
		rocksdb_free(rerr);
		rocksdb_options_destroy(opts);
		return;
	}
	wo = rocksdb_writeoptions_create();
	rocksdb_put_cf(db, wo, cf[1], "schema", 6, v1, 4, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
	rocksdb_writeoptions_destroy(wo);
	for (int i = 0; i < 6; i++)
		rocksdb_column_family_handle_destroy(cf[i]);
	rocksdb_close(db);
	rocksdb_options_destroy(opts);

	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EPROTONOSUPPORT);
	CHECK(s == NULL);
	CHECK(strstr(err, dir) != NULL && strstr(err, "pre-release") != NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0);
	CHECK(strstr(err, "pre-release") != NULL);
}

static void test_reader(void)
{
	char *dir = fresh_dir();
	struct store *w = open_rw(dir, STORE_CREATE);
	struct store *r = NULL;
	struct store_batch *b;
	struct store_series *list = NULL;
	struct collected c = {0};
	struct store_frame f;
	size_t n = 0;
	uint32_t series, node;
	uint64_t seq;

	if (!w)
		return;
	b = store_batch_new(w);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	node = add_stack(b, stack1, 2);
	CHECK_OK(store_batch_add(b, series, 100, node, 1, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	r = open_rw(dir, STORE_READONLY);
	if (!r)
		goto out;
	CHECK(store_batch_new(r) == NULL);
	CHECK(store_compact(r) == -EROFS);
	CHECK(store_node_count(r) == 3);
	CHECK_OK(store_frame_get(r, 2, &f));
	CHECK(f.name_len == 3 && !memcmp(f.name, "run", 3));
	CHECK(store_refresh(r) == 0);
	seq = store_sequence(r);

	/* Commit more while the reader is open. */
	b = store_batch_new(w);
	node = add_stack(b, stack1, 3);
	CHECK_OK(store_batch_add(b, series, 100, node, 2, 6));
	CHECK_OK(store_batch_add(b, series, 100, 2, 1, 1));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	CHECK(store_node_count(r) == 3);
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 1 && c.weight[0] == 5);
	CHECK(store_sequence(r) == seq);

	CHECK(store_refresh(r) == 1);
	CHECK(store_sequence(r) > seq);
	CHECK(store_node_count(r) == 4);
	CHECK(store_frame_count(r) == 4);
	CHECK_OK(store_frame_get(r, 3, &f));
	CHECK(f.name_len == 4 && !memcmp(f.name, "work", 4));
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, collect, &c));
	CHECK(c.n == 2);
	CHECK(c.node[0] == 2 && c.weight[0] == 6 && c.samples[0] == 2);
	CHECK(c.node[1] == 3 && c.weight[1] == 6 && c.samples[1] == 2);
	CHECK_OK(store_series_list(r, &list, &n));
	CHECK(n == 1 && list[0].weight == 12 && list[0].samples == 4);
	store_series_free(list, n);
	CHECK(store_refresh(r) == 0);

	/* After the writer compacts, the reader still reads the same. */
	CHECK_OK(store_compact(w));
	CHECK(store_refresh(r) >= 0);
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, collect, &c));
	/* (RocksDB 7.8 secondaries would count merge operands twice here
	 * without the reopen in store_refresh.) */
	CHECK(c.n == 2 && c.weight[0] == 6 && c.weight[1] == 6);
	for (size_t i = 0; test_failed && i < c.n && i < 64; i++)
		fprintf(stderr, "  count node %u samples %" PRIu64 " weight %" PRIu64 "\n",
		        c.node[i], c.samples[i], c.weight[i]);
out:
	store_close(r);
	store_close(w);
}

static void test_not_a_store(void)
{
	char err[512] = "";
	struct store *s = NULL;
	char *dir = fresh_dir();
	char path[PATH_MAX + 16];
	FILE *fp;
	struct stat st;

	/* Missing, without STORE_CREATE. */
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -ENOENT);
	CHECK(!strcmp(strstr(err, dir) ? strstr(err, dir) + strlen(dir) : "", ": no such store"));
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "no such store") != NULL);
	CHECK(stat(dir, &st) < 0);

	/* A directory holding something else. */
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	fp = fopen(path, "we");
	CHECK(fp != NULL);
	if (fp) {
		fputs("hello\n", fp);
		fclose(fp);
	}
	snprintf(path, sizeof(path), "%s: not a flamefs store", dir);
	CHECK(store_open(dir, STORE_CREATE, &s, err, sizeof(err)) < 0);
	CHECK(!strcmp(err, path));
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0);
	CHECK(!strcmp(err, path));
	CHECK(s == NULL);

	/* A regular file. */
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	CHECK(store_open(path, STORE_CREATE, &s, err, sizeof(err)) < 0);
	CHECK(strstr(err, "not a flamefs store") != NULL);

	/* Created directories get mode 0700, parents included. */
	snprintf(path, sizeof(path), "%s/a/b", dir);
	s = open_rw(path, STORE_CREATE);
	store_close(s);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* An empty existing directory becomes a store with STORE_CREATE. */
	snprintf(path, sizeof(path), "%s/empty", dir);
	CHECK(mkdir(path, 0755) == 0);
	CHECK(store_open(path, 0, &s, err, sizeof(err)) < 0);
	s = open_rw(path, STORE_CREATE);
	CHECK(s != NULL);
	store_close(s);
}

/* Makes a RocksDB database at dir with the given column families and,
 * when key is set, one key in "default"; no flamefs meta. */
static void raw_make(const char *dir, bool counts, const char *key)
{
	const char *names[2] = {"default", "counts"};
	rocksdb_options_t *o = rocksdb_options_create();
	const rocksdb_options_t *opts[2] = {o, o};
	rocksdb_column_family_handle_t *cf[2] = {0};
	char *rerr = NULL;
	rocksdb_t *db;

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_create_missing_column_families(o, 1);
	db = rocksdb_open_column_families(o, dir, counts ? 2 : 1, names, opts, cf, &rerr);
	CHECK(rerr == NULL);
	if (db && key) {
		rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();

		rocksdb_put_cf(db, wo, cf[0], key, strlen(key), "x", 1, &rerr);
		CHECK(rerr == NULL);
		rocksdb_writeoptions_destroy(wo);
	}
	rocksdb_free(rerr);
	for (int i = 0; i < 2; i++)
		if (cf[i])
			rocksdb_column_family_handle_destroy(cf[i]);
	if (db)
		rocksdb_close(db);
	rocksdb_options_destroy(o);
}

static void touch(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "we");
	CHECK(fp != NULL);
	if (fp)
		fclose(fp);
}

/* A store opens as the writer with a notice, holds nothing, and takes a
 * commit. */
static void expect_taken_over(const char *dir, int flags, const char *notice)
{
	char err[512] = "";
	struct store *s = NULL;
	struct store_series *list = NULL;
	size_t n = 9;

	CHECK(store_open(dir, flags, &s, err, sizeof(err)) == 0);
	if (!s) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK(store_notice(s) && strstr(store_notice(s), notice));
	CHECK_OK(store_series_list(s, &list, &n));
	CHECK(n == 0);
	store_series_free(list, n);
	struct store_batch *b = store_batch_new(s);
	uint32_t id;
	CHECK(b && store_batch_series(b, &key_a, &id) == 0 && store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(s);
	s = open_rw(dir, 0);
	CHECK(s && store_notice(s) == NULL);
	store_close(s);
}

/* Creation is atomic (a staging directory renamed into place), and what
 * a creation killed by an older flamefs left in place is taken over. */
static void test_creation(void)
{
	char err[512] = "";
	struct store *s = NULL;
	char *dir, path[PATH_MAX + 64];
	struct stat st;

	/* A store made on a new path leaves nothing beside it. */
	dir = fresh_dir();
	snprintf(path, sizeof(path), "%s/sub/store", dir);
	s = open_rw(path, STORE_CREATE);
	CHECK(s && store_notice(s) == NULL);
	store_close(s);
	snprintf(path, sizeof(path), "%s/sub", dir);
	{
		char names[8][NAME_MAX + 1];
		DIR *d = opendir(path);
		struct dirent *e;
		int n = 0;

		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n < 8)
				snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
		if (d)
			closedir(d);
		CHECK(n == 1 && !strcmp(names[0], "store"));
	}
	snprintf(path, sizeof(path), "%s/sub/store/creator.lock", dir);
	CHECK(access(path, F_OK) < 0);

	/* A killed creator's staging directory: its lock is free. */
	snprintf(path, sizeof(path), "%s/sub/.new.new-AbCdEf", dir);
	CHECK(mkdir(path, 0700) == 0);
	touch(path, "creator.lock");
	touch(path, "LOCK");
	snprintf(path, sizeof(path), "%s/sub/new", dir);
	s = open_rw(path, STORE_CREATE);
	CHECK(s && store_notice(s) && strstr(store_notice(s), "interrupted creation"));
	store_close(s);
	snprintf(path, sizeof(path), "%s/sub/.new.new-AbCdEf", dir);
	CHECK(stat(path, &st) < 0 && errno == ENOENT);

	/* An existing empty directory keeps its mode. */
	snprintf(path, sizeof(path), "%s/sub/mode", dir);
	CHECK(mkdir(path, 0750) == 0);
	s = open_rw(path, STORE_CREATE);
	store_close(s);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0750);

	/* Left in place by an older flamefs: RocksDB's first files only. */
	dir = fresh_dir();
	CHECK(mkdir(dir, 0700) == 0);
	touch(dir, "LOCK");
	touch(dir, "IDENTITY");
	touch(dir, "LOG");
	touch(dir, "000003.log");
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted; the next import or record finishes it"));
	expect_taken_over(dir, 0, "made it afresh");

	/* ... the database without its counts column family. */
	dir = fresh_dir();
	raw_make(dir, false, NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted"));
	expect_taken_over(dir, STORE_CREATE, "made it afresh");

	/* ... both column families, no meta records. */
	dir = fresh_dir();
	raw_make(dir, true, NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted"));
	expect_taken_over(dir, STORE_CREATE, "finished it");

	/* A database that holds data is never taken. */
	for (int counts = 0; counts < 2; counts++) {
		dir = fresh_dir();
		raw_make(dir, counts, "somebody's");
		snprintf(path, sizeof(path), "%s: not a flamefs store", dir);
		CHECK(store_open(dir, STORE_CREATE, &s, err, sizeof(err)) == -EINVAL);
		CHECK(!strcmp(err, path));
		CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EINVAL);
		CHECK(!strcmp(err, path));
	}
	/* Nor a directory with anything else in it. */
	dir = fresh_dir();
	CHECK(mkdir(dir, 0700) == 0);
	touch(dir, "LOCK");
	touch(dir, "notes.txt");
	CHECK(store_open(dir, STORE_CREATE, &s, err, sizeof(err)) == -EINVAL);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	CHECK(access(path, F_OK) == 0);
}

static void test_second_writer(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store *t = NULL, *r = NULL;
	char err[512] = "", want[64];
	pid_t pid;
	int status = 0;

	if (!s)
		return;
	/* In the same process. */
	CHECK(store_open(dir, 0, &t, err, sizeof(err)) == -EBUSY);
	CHECK(t == NULL);
	CHECK(strstr(err, "store is in use by another writer") != NULL);
	snprintf(want, sizeof(want), "(pid %ld)", (long)getpid());
	CHECK(strstr(err, want) != NULL);

	/* From another process (a fresh exec: a forked child would inherit
	 * RocksDB's in-process lock table): it must name our pid.  This also
	 * checks that the refused in-process open above did not drop the
	 * lock. */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		execl(self_path, self_path, "--try-writer", dir, want, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Readers are welcome. */
	r = open_rw(dir, STORE_READONLY);
	CHECK(r != NULL);
	store_close(r);
	store_close(s);
	/* Once closed, a new writer may open. */
	s = open_rw(dir, 0);
	CHECK(s != NULL);
	store_close(s);
}

static void test_default_dir(void)
{
	char *d;

	setenv("FLAMEFS_STORE", "/x/y", 1);
	d = store_default_dir();
	CHECK(d && !strcmp(d, "/x/y"));
	free(d);
	setenv("FLAMEFS_STORE", "", 1);
	setenv("XDG_DATA_HOME", "/data", 1);
	d = store_default_dir();
	CHECK(d && !strcmp(d, "/data/flamefs"));
	free(d);
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/home/u", 1);
	d = store_default_dir();
	CHECK(d && !strcmp(d, "/home/u/.local/share/flamefs"));
	free(d);
	unsetenv("FLAMEFS_STORE");
}

static void test_footprint(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_footprint fp;
	uint32_t series, node;
	uint64_t sb = 0;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
	/* Frames and nodes share a column family and are sized per key range
	 * at data-block granularity: make each span several blocks. */
	node = STORE_ROOT_NODE;
	for (int i = 0; i < 8000; i++) {
		char name[64];
		struct store_frame f;
		uint32_t fid = 0;

		snprintf(name, sizeof(name), "namespace::function_number_%d", i);
		f = mkframe(name);
		CHECK_OK(store_batch_frame(b, &f, &fid));
		CHECK_OK(store_batch_node(b, node, fid, &node));
	}
	for (int i = 0; i < 100; i++)
		CHECK_OK(store_batch_add(b, series, i * 60, node, 1, 1));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	CHECK_OK(store_compact(s));
	CHECK_OK(store_footprint(s, &fp));
	CHECK(fp.dir_bytes > 0);
	CHECK(fp.counts_bytes > 0 && fp.frames_bytes > 0 && fp.nodes_bytes > 0);
	CHECK(fp.other_bytes > 0);
	CHECK(fp.dir_bytes >= fp.counts_bytes + fp.frames_bytes + fp.nodes_bytes);
	CHECK_OK(store_series_disk_bytes(s, series, &sb));
	CHECK(sb > 0);
	store_close(s);
}

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
		f = mkframe(name);
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
static void test_merge_blobs(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	static struct expect x;
	uint32_t series, other;
	static const struct store_series_key key_o = {NULL, "other", "1", "cpu-clock",
	                                              "nanoseconds"};

	memset(&x, 0, sizeof(x));
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
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

	s = open_rw(dir, 0);
	if (!s)
		return;
	check_expect(s, series, &x, 0, XB - 1);
	{
		struct collected c = {0};

		CHECK_OK(store_series_counts(s, other, INT64_MIN, INT64_MAX, collect, &c));
		CHECK(c.n == 1 && c.node[0] == 5 && c.bucket[0] == 0);
	}
	store_close(s);
}

/* Many operands on the same keys: flushing them goes through the partial
 * merge, compaction through the full merge, and further commits on top of
 * a compacted value through the full merge with an existing value. */
static void test_partial_merge(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	static struct expect x;
	uint32_t series;

	memset(&x, 0, sizeof(x));
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &series));
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
	s = open_rw(dir, 0);
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
static void test_corrupt_counts(void)
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
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct raw w;
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
		struct store_series_key k = key_a;

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

	if (!raw_open(dir, &w)) {
		raw_close(&w);
		return;
	}
	for (size_t i = 0; i < nbad; i++) {
		counts_key(key, (uint32_t)i + 2, 0);
		rocksdb_put_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, bad[i].v, bad[i].len,
		               &rerr);
		CHECK(rerr == NULL);
	}
	/* A key of the wrong length inside series nbad+2. */
	counts_key(key, (uint32_t)nbad + 2, 0);
	rocksdb_put_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 5, "\x02\x01", 2, &rerr);
	CHECK(rerr == NULL);
	/* A damaged merge operand on top of series 1's good value. */
	counts_key(key, series, 0);
	rocksdb_merge_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, "\x0a\x80", 2, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
	raw_close(&w);

	s = open_rw(dir, 0);
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
		if (r != -EIO || test_failed)
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
static void test_no_wrap(void)
{
	const uint64_t half = UINT64_C(1) << 63;
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_series *list = NULL;
	struct sum t = {0};
	size_t n = 0;
	uint32_t id, n1, n2;
	struct raw w;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_a, &id));
	n1 = add_stack(b, stack1, 2);
	n2 = add_stack(b, stack1, 3);
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
	s = open_rw(dir, 0);
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
	if (!raw_open(dir, &w)) {
		raw_close(&w);
		return;
	}
	for (int i = 0; i < 3; i++) {
		uint8_t key[8], v[16];
		uint64_t part = i == 0 ? half : i == 1 ? half - 1 : 1;
		char *rerr = NULL;

		/* (the failing key first: a read past a key merges it) */
		counts_key(key, i == 2 ? 7 : 8, 0);
		for (int j = 0; j < (i == 2 ? 2 : 1); j++) {
			size_t len = one_entry(v, j ? UINT64_MAX : part);
			rocksdb_merge_cf(w.db, w.wo, w.cf[w.counts], (char *)key, 8, (char *)v, len,
			                 &rerr);
			CHECK(rerr == NULL);
			rocksdb_free(rerr);
			rerr = NULL;
		}
	}
	raw_close(&w);
	s = open_rw(dir, 0);
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

static uint64_t dir_bytes(struct store *s)
{
	struct store_footprint fp;

	CHECK_OK(store_footprint(s, &fp));
	return fp.dir_bytes;
}

/* Small right away: straight after a commit, the store is within 10% of
 * what compaction makes of it, for one big commit and after each of many
 * small ones (record's drains); no info log in the store. */
static void test_small_right_away(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	char path[PATH_MAX + 16];
	uint32_t id;

	if (!s)
		return;
	for (int commit = 0; commit < 40; commit++) {
		struct store_batch *b = store_batch_new(s);
		/* the first commit holds 20000 stacks, later ones 50 each */
		int nstacks = commit ? 50 : 20000;

		CHECK_OK(store_batch_series(b, &key_a, &id));
		for (int i = 0; i < nstacks; i++) {
			char n1[32], n2[32];
			int k = commit ? (commit * 7919 + i * 104729) % 20000 : i;
			snprintf(n1, sizeof(n1), "mod%d::f%d", k % 97, k / 7);
			snprintf(n2, sizeof(n2), "leaf_%d", k);
			const char *stack[] = {"main", n1, n2};
			uint32_t node = add_stack(b, stack, 3);
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
			uint64_t after = dir_bytes(s), compacted;
			for (int still = 0, polls = 0; still < 3 && polls < 100; polls++) {
				usleep(100000);
				uint64_t now = dir_bytes(s);
				still = now == after ? still + 1 : 0;
				after = now;
			}

			CHECK_OK(store_compact(s));
			compacted = dir_bytes(s);
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

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

/* The child side of test_second_writer: exits 0 when opening `dir` for
 * writing is refused with a message containing `want`. */
static int try_writer(const char *dir, const char *want)
{
	struct store *s = NULL;
	char err[512] = "";
	int r = store_open(dir, 0, &s, err, sizeof(err));

	if (r == 0) {
		fprintf(stderr, "  child: a second writer was let in\n");
		store_close(s);
		return 1;
	}
	if (r != -EBUSY || !strstr(err, "store is in use by another writer") ||
	    !strstr(err, want)) {
		fprintf(stderr, "  child: %d: %s (want %s)\n", r, err, want);
		return 1;
	}
	return 0;
}

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

static void test_prune(void)
{
	static const struct store_series_key key_b = {NULL, "db", "2.0", "cpu-clock",
	                                              "nanoseconds"};
	static const struct store_series_key key_perf = {NULL, "cc1", "default", "cpu-clock",
	                                                 "nanoseconds"};
	const int64_t t0 = 1700000000 - 1700000000 % 60; /* a bucket start */
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE);
	struct store_prune_stats st;
	struct store_series info;
	struct collected c = {0};
	uint32_t a, b, perf, node;

	if (!s)
		return;
	struct store_batch *batch = store_batch_new(s);
	CHECK_OK(store_batch_series(batch, &key_a, &a));
	CHECK_OK(store_batch_series(batch, &key_b, &b));
	CHECK_OK(store_batch_series(batch, &key_perf, &perf));
	node = add_stack(batch, stack1, 3);
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
	CHECK_OK(store_series_counts(s, a, INT64_MIN, INT64_MAX, collect, &c));
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
	s = open_rw(dir, 0);
	if (!s)
		return;
	CHECK(!listed(s, b, &info));
	CHECK(listed(s, a, &info) && info.samples == 4 && info.first_seen == t0 + 120);
	batch = store_batch_new(s);
	uint32_t b2;
	CHECK_OK(store_batch_series(batch, &key_b, &b2));
	CHECK(b2 == b);
	CHECK_OK(store_batch_add(batch, b2, t0 + 600, add_stack(batch, stack1, 3), 3, 30));
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
static void test_hosts(void)
{
	char *dir = fresh_dir();
	struct store *s = open_rw(dir, STORE_CREATE), *r = NULL;
	char got[1024], err[512] = "", longname[300];
	struct store_series_key k = {"zed", "b", "1", "cpu", "count"};
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
	k = (struct store_series_key){"y", "a", "1", "cpu", "count"};
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
	s = open_rw(dir, 0);
	if (!s)
		goto out;
	CHECK_OK(store_set_host(s, "other"));
	k = (struct store_series_key){"alpha", "b", "1", "cpu", "count"};
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
static void raw_put_series2(struct raw *w, uint32_t id, const char *binary, uint8_t samples)
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
	raw_put(w, key, 5, v, n);
}

/* A schema 2 store: its series name no host.  A reader shows the reading
 * machine's name; the first writer to write marks the store 3 and
 * records that name ("mhost") for them, whatever --host it writes with;
 * they keep their record form (and their ids) when they grow. */
static void test_hosts_old_schema(void)
{
	struct raw w;
	char *dir = empty_store_raw(&w);
	struct store *s = NULL, *r = NULL, *r2 = NULL;
	char err[512] = "", got[1024], want[1024], machine[256] = "";
	const char v2[4] = {0, 0, 0, 2};
	size_t vlen = 0;
	char *v;

	if (!dir)
		return;
	CHECK(gethostname(machine, sizeof(machine) - 1) == 0 && machine[0]);
	raw_put(&w, "mschema", 7, v2, 4);
	raw_put_series2(&w, 1, "old", 3);
	raw_put_series2(&w, 2, "older", 4);
	raw_close(&w);

	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	snprintf(want, sizeof(want), "%s/old/1/cpu=3;%s/older/1/cpu=4", machine, machine);
	if (r) {
		CHECK_OK(store_set_host(r, "reader-set")); /* not the old series' host */
		list_str(r, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}

	/* a writer opening without writing changes nothing */
	s = open_rw(dir, 0);
	store_close(s);
	if (raw_open(dir, &w)) {
		v = raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == 2);
		rocksdb_free(v);
		v = raw_get(&w, "mhost", 5, &vlen);
		CHECK(v == NULL);
		rocksdb_free(v);
	}
	raw_close(&w);

	/* a writer on host "new" */
	s = open_rw(dir, 0);
	if (!s)
		goto out;
	CHECK_OK(store_set_host(s, "new"));
	struct store_series_key k = {NULL, "old", "1", "cpu", "count"};
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
	if (raw_open(dir, &w)) {
		v = raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == 3);
		rocksdb_free(v);
		v = raw_get(&w, "mhost", 5, &vlen);
		CHECK(v && vlen == 4 + strlen(machine) && !memcmp(v, "\0\0\0\003", 4) &&
		      !memcmp(v + 4, machine, vlen - 4));
		rocksdb_free(v);
		/* series 1 kept its form: it starts with the binary */
		v = raw_get(&w, "s\0\0\0\001", 5, &vlen);
		CHECK(v && vlen > 4 && v[0] == 3 && !memcmp(v + 1, "old", 3));
		rocksdb_free(v);
		/* series 3 names its host first */
		v = raw_get(&w, "s\0\0\0\003", 5, &vlen);
		CHECK(v && vlen > 4 && v[0] == 3 && !memcmp(v + 1, "new", 3));
		rocksdb_free(v);
	}
	raw_close(&w);

	/* a fresh reader and writer read it back; mhost's name holds */
	CHECK(store_open(dir, STORE_READONLY, &r2, err, sizeof(err)) == 0);
	if (r2) {
		list_str(r2, got, sizeof(got));
		CHECK(strcmp(got, want) == 0 || !fprintf(stderr, "got %s\nwant %s\n", got, want));
	}
	s = open_rw(dir, 0);
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
	if (raw_open(dir, &w))
		raw_put(&w, "mhost", 5, "\0\0\0", 3);
	raw_close(&w);
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EIO);
	CHECK(strstr(err, "store is damaged: meta host") != NULL);
out:
	store_close(s);
	store_close(r);
	store_close(r2);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	if (argc == 4 && !strcmp(argv[1], "--try-writer"))
		return try_writer(argv[2], argv[3]);
	self_path = argv[0];

	snprintf(root, sizeof(root), "%s/test-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	run("dedup", test_dedup);
	run("merge_adds", test_merge_adds);
	run("negative_time", test_negative_time);
	run("rollback", test_rollback);
	run("node_index", test_node_index);
	run("reopen_stable", test_reopen_stable);
	run("schema", test_schema);
	run("old_layout", test_old_layout);
	run("module_refs", test_module_refs);
	run("node_runs", test_node_runs);
	run("stale_reader_dirs", test_stale_reader_dirs);
	run("reader_refresh", test_reader);
	run("not_a_store", test_not_a_store);
	run("creation", test_creation);
	run("second_writer", test_second_writer);
	run("default_dir", test_default_dir);
	run("footprint", test_footprint);
	run("merge_blobs", test_merge_blobs);
	run("partial_merge", test_partial_merge);
	run("corrupt_counts", test_corrupt_counts);
	run("no_wrap", test_no_wrap);
	run("small_right_away", test_small_right_away);
	run("prune", test_prune);
	run("hosts", test_hosts);
	run("hosts_old_schema", test_hosts_old_schema);
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
