/*
 * test-store.c — unit tests for the store library (store/): this file
 * runs them all, and holds those of batches and ids (dedup, merged
 * counts, rollback, the node index, frames' module references, node
 * runs).  The others: test-store-open.c (schema and layout, readers,
 * creation, one writer), test-store-counts.c (counts blobs, settling),
 * test-store-series.c (retention, hosts); store-fixture.h what they share.
 *
 * Each test works in a fresh directory under a private temporary root and
 * prints "PASS name" or "FAIL name"; the program exits non-zero when any
 * check failed.  A few tests write to the RocksDB directory with the C API
 * directly (a bad schema version, damaged counts values, a store of the
 * development layout), so they know parts of the key layout of
 * store/README.md.
 */
#include "store-fixture.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- tests ---------------------------------------------------------------- */

void test_dedup(void)
{
	struct store *s = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct store_batch *b;
	uint32_t n1, n2, series;
	struct store_frame f1 = sf_frame("x"), f2 = sf_frame("x");
	uint32_t fa, fb, fc;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK(b != NULL);
	CHECK(store_batch_new(s) == NULL); /* one batch at a time */
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	n1 = sf_add_stack(b, sf_stack1, 3);
	n2 = sf_add_stack(b, sf_stack1, 3);
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

void test_merge_adds(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct sf_collected c = {0};
	struct store_series *list = NULL;
	size_t n = 0;
	uint32_t series, node;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	node = sf_add_stack(b, sf_stack1, 3);
	CHECK_OK(store_batch_add(b, series, 1000, node, 1, 10));
	CHECK_OK(store_batch_add(b, series, 1001, node, 2, 20)); /* same bucket */
	CHECK_OK(store_batch_input_bytes(b, series, 100));
	CHECK_OK(store_batch_commit(b));
	/* The same batch may be used again after a commit. */
	CHECK_OK(store_batch_add(b, series, 1010, node, 4, 40));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 1);
	CHECK(c.node[0] == node);
	CHECK(c.samples[0] == 7 && c.weight[0] == 70);
	CHECK(c.bucket[0] == 960); /* 1000 rounded down to 60 s */
	store_close(s);

	/* Across a reopen, and with a third commit on top. */
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	CHECK(series == 1);
	CHECK(sf_add_stack(b, sf_stack1, 3) == node);
	CHECK(store_node_count(s) == 4);
	CHECK_OK(store_batch_add(b, series, 1019, node, 1, 1));
	CHECK_OK(store_batch_add(b, series, 1020, node, 1, 1)); /* next bucket */
	CHECK_OK(store_batch_input_bytes(b, series, 50));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 2);
	CHECK(c.samples[0] == 8 && c.weight[0] == 71 && c.bucket[0] == 960);
	CHECK(c.samples[1] == 1 && c.weight[1] == 1 && c.bucket[1] == 1020);
	/* Range filter on buckets. */
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, 1020, 2000, sf_collect, &c));
	CHECK(c.n == 1 && c.bucket[0] == 1020);
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(s, series, 0, 1019, sf_collect, &c));
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
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 2 && c.weight[0] == 71 && c.weight[1] == 1);
	store_close(s);
}

void test_negative_time(void)
{
	struct store *s = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct store_batch *b;
	struct sf_collected c = {0};
	uint32_t series, node;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	node = sf_add_stack(b, sf_stack1, 1);
	CHECK_OK(store_batch_add(b, series, 5, node, 1, 1));
	CHECK_OK(store_batch_add(b, series, -5, node, 1, 2));
	CHECK_OK(store_batch_add(b, series, -61, node, 1, 3));
	CHECK(store_batch_add(b, series, INT64_MAX, node, 1, 1) == -ERANGE);
	CHECK(store_batch_add(b, 99, 0, node, 1, 1) == -EINVAL);
	CHECK(store_batch_add(b, series, 0, 999, 1, 1) == -EINVAL);
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	CHECK_OK(store_series_counts(s, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 3);
	CHECK(c.bucket[0] == -120 && c.weight[0] == 3);
	CHECK(c.bucket[1] == -60 && c.weight[1] == 2);
	CHECK(c.bucket[2] == 0 && c.weight[2] == 1);
	store_close(s);
}

void test_rollback(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_series *list = NULL;
	struct sf_collected c = {0};
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
		f = sf_frame(name);
		CHECK_OK(store_batch_frame(b, &f, &fid[i]));
		CHECK_OK(store_batch_node(b, i ? (uint32_t)i : 0, fid[i], &id));
	}
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	nframes = store_frame_count(s);
	nnodes = store_node_count(s);

	/* A big batch that is thrown away (enough to grow the hash tables). */
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	for (int i = 0; i < 20000; i++) {
		struct store_frame f;

		snprintf(name, sizeof(name), "drop%d", i);
		f = sf_frame(name);
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
		f = sf_frame(name);
		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK(id == fid[i]);
		CHECK_OK(store_batch_node(b, i ? (uint32_t)i : 0, fid[i], &id));
		CHECK(id == (uint32_t)i + 1);
	}
	CHECK(store_frame_count(s) == nframes);
	/* Ids are handed out again from where the dropped batch started. */
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	CHECK(series == 1);
	{
		struct store_frame f = sf_frame("drop5");

		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK(id == nframes);
		CHECK_OK(store_batch_node(b, 0, id, &node));
		CHECK(node == nnodes);
	}
	store_batch_free(b);
	store_close(s);

	/* Nothing of the dropped batches reached the disk. */
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	CHECK(store_frame_count(s) == nframes);
	CHECK(store_node_count(s) == nnodes);
	CHECK_OK(store_series_list(s, &list, &n));
	CHECK(n == 0);
	store_series_free(list, n);
	CHECK_OK(store_series_counts(s, 1, INT64_MIN, INT64_MAX, sf_collect, &c));
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

void test_node_index(void)
{
	enum { FRAMES = 64, PER_ROUND = 80000, ROUNDS = 12 };
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
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
		f = sf_frame(name);
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
	s = sf_open_rw(dir, 0);
	if (s)
		CHECK(node_index_misses(s, parent, frame, n) == 0);
out:
	if (s)
		store_close(s);
	free(parent);
	free(frame);
	free(pairs);
}

void test_reopen_stable(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_frame f = {0}, g;
	static const uint8_t bid[] = {0xde, 0xad, 0x00, 0xef};
	uint32_t series2, series, node, fid, p, fr;
	static const struct store_series_key key_b = {NULL,        "app",         "2.0",
	                                              "cpu-clock", "nanoseconds", NULL};
	static const struct store_series_key key_bad = {NULL,        "app",   "2.0",
	                                                "cpu-clock", "count", NULL};

	if (!s)
		return;
	CHECK(store_bucket_seconds(s) == STORE_DEFAULT_BUCKET_SECONDS);
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	CHECK_OK(store_batch_series(b, &key_b, &series2));
	CHECK(series == 1 && series2 == 2);
	CHECK(store_batch_series(b, &key_bad, &series) == -EINVAL);
	node = sf_add_stack(b, sf_stack1, 3);
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

	s = sf_open_rw(dir, 0);
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
	CHECK(sf_add_stack(b, sf_stack1, 3) == 3);
	store_batch_free(b);
	store_close(s);
}

/* Puts a damaged record (key: prefix + be32 id) into the store at dir
 * through w, closes w, and checks that a writer refuses the store with
 * msg. */
static void expect_damage(struct sf_raw *w, const char *dir, char prefix, uint32_t id,
                          const char *val, size_t vlen, const char *msg)
{
	char key[5] = {prefix, (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	char err[512] = "";
	struct store *s = NULL;

	sf_raw_put(w, key, 5, val, vlen);
	sf_raw_close(w);
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
	struct store_frame f = sf_frame(name);

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
static int raw_frame_kind(struct sf_raw *w, uint32_t id)
{
	char key[5] = {'f', (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	size_t vlen = 0;
	char *v = sf_raw_get(w, key, 5, &vlen);
	int kind = v && vlen ? (uint8_t)v[0] : -1;

	rocksdb_free(v);
	return kind;
}

void test_module_refs(void)
{
	static const char b1[21] = "0123456789abcdefghij", b2[21] = "ABCDEFGHIJ0123456789";
	const struct store_frame want[] = {
	        modframe("a", "/usr/bin/app", b1),   modframe("b", "[kernel.kallsyms]", NULL),
	        modframe("c", "/usr/bin/app", b1),   modframe("d", "/usr/bin/app", b2),
	        modframe("e", "/usr/bin/app", NULL), modframe("f", "[kernel.kallsyms]", NULL),
	        modframe("g", "/usr/bin/app", b2),   modframe("h", "/usr/bin/app", b1),
	};
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE), *r = NULL;
	struct sf_raw w;
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

	if (!sf_raw_open(dir, &w)) {
		sf_raw_close(&w);
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
	sf_raw_put(&w, "mschema", 7, v1, 4);
	sf_raw_close(&w);
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		check_frames(r, want, 8);
		store_close(r);
	}
	/* a writer reads it and marks it schema 2 */
	s = sf_open_rw(dir, 0);
	if (s) {
		check_frames(s, want, 8);
		store_close(s);
	}
	if (!sf_raw_open(dir, &w)) {
		sf_raw_close(&w);
		return;
	}
	size_t vlen = 0;
	char *v = sf_raw_get(&w, "mschema", 7, &vlen);
	CHECK(v && vlen == 4 && v[3] == 2);
	rocksdb_free(v);

	/* a reference that points at itself or past the first frame is damage */
	const char bad[] = {(char)0x80, 0, 1, 'c', 3};
	expect_damage(&w, dir, 'f', 3, bad, sizeof(bad), "store is damaged: frame 3");
}

/* Nodes are stored in runs of up to 4096 per record (schema 2), after any
 * schema 1 records of one node each; both load back in id order, through
 * a writer and a reader, and a damaged run is refused. */
static bool raw_has(struct sf_raw *w, char prefix, uint32_t id)
{
	char key[5] = {prefix, (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	size_t vlen = 0;
	char *v = sf_raw_get(w, key, 5, &vlen);
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

void test_node_runs(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE), *r = NULL;
	struct sf_raw w;
	char err[512] = "";
	const uint32_t total = 5000;
	uint32_t id;

	if (!s)
		return;
	struct store_batch *b = store_batch_new(s);
	for (int i = 0; i < 7 && b; i++) {
		struct store_frame f =
		        sf_frame((const char *[]){"a", "b", "c", "d", "e", "f", "g"}[i]);
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

	s = sf_open_rw(dir, 0);
	if (s) {
		check_run_shape(s, 1, total);
		store_close(s);
	}
	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		check_run_shape(r, 1, total);
		store_close(r);
	}
	if (!sf_raw_open(dir, &w)) {
		sf_raw_close(&w);
		return;
	}
	CHECK(raw_has(&w, 'N', 1) && raw_has(&w, 'N', 4097) && raw_has(&w, 'N', 4991));
	CHECK(!raw_has(&w, 'N', 2) && !raw_has(&w, 'n', 1));
	/* a run after the last that claims more nodes than it holds is damage */
	const char bad[] = {10, 1, 1, 2};
	expect_damage(&w, dir, 'N', total + 1, bad, sizeof(bad),
	              "store is damaged: nodes from 5001");

	/* schema 1 records, then runs from a schema 2 writer after them */
	dir = sf_empty_store_raw(&w);
	if (!dir)
		return;
	const char v1[4] = {0, 0, 0, 1}, frame1[] = {0, 0, 1, 'x', 0, 0, 0};
	sf_raw_put(&w, "mschema", 7, v1, 4);
	sf_raw_put(&w, (char[]){'f', 0, 0, 0, 1}, 5, frame1, sizeof(frame1));
	/* node 1 under the root, node 2 under node 1: (id - parent, frame) */
	sf_raw_put(&w, (char[]){'n', 0, 0, 0, 1}, 5, (char[]){1, 1}, 2);
	sf_raw_put(&w, (char[]){'n', 0, 0, 0, 2}, 5, (char[]){1, 1}, 2);
	sf_raw_close(&w);
	s = sf_open_rw(dir, 0);
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

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	if (argc == 4 && !strcmp(argv[1], "--try-writer"))
		return sf_try_writer(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--check-tier"))
		return sf_check_tier(argv[2]);
	sf_self = argv[0];

	snprintf(sf_root, sizeof(sf_root), "%s/test-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sf_root)) {
		perror("mkdtemp");
		return 1;
	}
	sf_run("dedup", test_dedup);
	sf_run("merge_adds", test_merge_adds);
	sf_run("negative_time", test_negative_time);
	sf_run("rollback", test_rollback);
	sf_run("node_index", test_node_index);
	sf_run("reopen_stable", test_reopen_stable);
	sf_run("schema", test_schema);
	sf_run("damaged meta", test_damaged_meta);
	sf_run("far ids", test_far_ids);
	sf_run("old_layout", test_old_layout);
	sf_run("module_refs", test_module_refs);
	sf_run("node_runs", test_node_runs);
	sf_run("stale_reader_dirs", test_stale_reader_dirs);
	sf_run("reader_refresh", test_reader);
	sf_run("not_a_store", test_not_a_store);
	sf_run("creation", test_creation);
	sf_run("second_writer", test_second_writer);
	sf_run("default_dir", test_default_dir);
	sf_run("footprint", test_footprint);
	sf_run("merge_blobs", test_merge_blobs);
	sf_run("partial_merge", test_partial_merge);
	sf_run("corrupt_counts", test_corrupt_counts);
	sf_run("no_wrap", test_no_wrap);
	sf_run("small_right_away", test_small_right_away);
	sf_run("settled_at_close", test_settled_at_close);
	sf_run("prune", test_prune);
	sf_run("hosts", test_hosts);
	sf_run("hosts_old_schema", test_hosts_old_schema);
	sf_run("samples_exact", test_samples_exact);
	sf_run("samples_reader", test_samples_reader);
	sf_run("samples_rollup", test_samples_rollup);
	sf_run("samples_rollup_auto", test_samples_rollup_auto);
	sf_run("samples_prune", test_samples_prune);
	sf_run("samples_old_schema", test_samples_old_schema);
	sf_run("samples_copy", test_samples_copy);
	sf_run("samples_copy_moments", test_samples_copy_moments);
	sf_run("samples_million", test_samples_million);
	sf_run("samples_damaged", test_samples_damaged);
	sf_run("samples_sealed", test_samples_sealed);
	sf_run("labels_api", test_labels_api);
	sf_run("labels_series", test_labels_series);
	sf_run("labels_bound", test_labels_bound);
	sf_run("labels_old_schema", test_labels_old_schema);
	sf_run("labels_merge", test_labels_merge);
	sf_run("changes_fold", test_changes_fold);
	sf_run("changes_fold_compact", test_changes_fold_compact);
	sf_run("series_compact", test_series_compact);
	nftw(sf_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	printf("%d failed\n", sf_failures);
	return sf_failures ? 1 : 0;
}
