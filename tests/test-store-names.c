/*
 * test-store-names.c — frames that wait for their names (store.h, struct
 * store_frame's `offset`): an unnamed frame's offset is part of its
 * identity and comes back whole from a writer, a reader, a reopened
 * writer and a copy between a directory and a database; a named frame
 * cannot carry one; in a directory the offset costs only the frames that
 * have one (a flag in the record's kind byte and a varint), and a record
 * that misuses the flag is damage; in a database a run whose frames have
 * no offset has no row in frame_offsets, and the view `frames` shows them.
 * Names found later (store_batch_frame_rename()) in both backends, with a
 * reader open across them; in a database also: a host's names carried by
 * its next push, once, a push that never un-names, and two writers whose
 * batches are open across each other's commits.
 *
 * Usage: test-store-names            the directory tests
 *        test-store-names SOCKET_DIR USER [PORT]
 *                                    the database tests on that server
 *                                    (tests/test-store-names.sh starts one)
 * Test code: it prints.
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

static char tmpdir[] = "/tmp/test-store-names-XXXXXX";

static const uint8_t bid_x[20] = {0xde, 0xad, 0xbe, 0xef, 1,  2,  3,  4,  5,  6,
                                  7,    8,    9,    10,   11, 12, 13, 14, 15, 16};

/* An unnamed frame of libx at `offset`. */
static struct store_frame unnamed(uint64_t offset)
{
	struct store_frame f = {.name = "[libx.so.1]",
	                        .name_len = 11,
	                        .module = "/usr/lib/libx.so.1",
	                        .module_len = 18,
	                        .build_id = bid_x,
	                        .build_id_len = sizeof(bid_x),
	                        .kind = STORE_FRAME_UNKNOWN,
	                        .offset = offset};
	return f;
}

static struct store_frame named(const char *name)
{
	struct store_frame f = {.name = name, .name_len = strlen(name), .kind = STORE_FRAME_USER};
	return f;
}

static const uint64_t offsets[] = {0x1040, 0x2230, 0, 0xffffffffffffull};
#define NOFF (sizeof(offsets) / sizeof(offsets[0]))

/* The id of the frame whose fields are f's in s, 0 when none. */
static uint32_t find_frame(struct store *s, const struct store_frame *f)
{
	for (uint32_t id = 1; id < store_frame_count(s); id++) {
		struct store_frame g;

		if (store_frame_get(s, id, &g) < 0)
			continue;
		if (g.kind == f->kind && g.offset == f->offset && g.name_len == f->name_len &&
		    !memcmp(g.name, f->name, f->name_len) && g.module_len == f->module_len &&
		    (!f->module_len || !memcmp(g.module, f->module, f->module_len)) &&
		    g.build_id_len == f->build_id_len &&
		    (!f->build_id_len || !memcmp(g.build_id, f->build_id, f->build_id_len)))
			return id;
	}
	return 0;
}

/* Every unnamed frame of `offsets` is in s, once each, whole. */
static void check_offsets(struct store *s, const char *what)
{
	for (size_t i = 0; i < NOFF; i++) {
		struct store_frame f = unnamed(offsets[i]);
		CHECKF(find_frame(s, &f) != 0, "%s: frame at %#" PRIx64, what, offsets[i]);
	}
	/* frames 1..: main, then the four unnamed ones */
	CHECKF(store_frame_count(s) == 2 + NOFF, "%s: %u frames", what, store_frame_count(s));
}

/* Writes main;[libx]@off for each offset, samples i+1 each; returns the
 * frame ids through ids. */
static void write_offsets(struct store *s, uint32_t *ids)
{
	struct store_batch *b = store_batch_new(s);
	struct store_frame m = named("main"), bad = named("work");
	uint32_t series, mid, node, again;

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_OK(store_batch_series(
	        b, &(struct store_series_key){"h", "app", "1", "cpu-clock", "nanoseconds", NULL},
	        &series));
	CHECK_OK(store_batch_frame(b, &m, &mid));
	CHECK_OK(store_batch_node(b, STORE_ROOT_NODE, mid, &node));
	for (size_t i = 0; i < NOFF; i++) {
		struct store_frame f = unnamed(offsets[i]);
		uint32_t leaf;

		CHECK_OK(store_batch_frame(b, &f, &ids[i]));
		CHECK_OK(store_batch_node(b, node, ids[i], &leaf));
		CHECK_OK(store_batch_add(b, series, T0, leaf, i + 1, 10 * (i + 1)));
		for (size_t j = 0; j < i; j++)
			CHECK(ids[j] != ids[i]);
	}
	/* the same frame again is the same id */
	struct store_frame f0 = unnamed(offsets[0]);
	CHECK_OK(store_batch_frame(b, &f0, &again));
	CHECK(again == ids[0]);
	/* a named frame has no offset */
	bad.offset = 16;
	CHECK(store_batch_frame(b, &bad, &again) == -EINVAL);
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
}

/* The offsets through a writer, a reader, a reopened writer, and a copy
 * into `other` (of the other backend). */
static void offsets_in(const char *where, const char *other)
{
	struct store *w = NULL, *r = NULL, *o = NULL;
	char err[512] = "";
	uint32_t ids[NOFF];

	CHECKF(store_open(where, STORE_CREATE, &w, err, sizeof(err)) == 0, "%s", err);
	if (!w)
		return;
	CHECKF(store_open(where, STORE_READONLY, &r, err, sizeof(err)) == 0, "%s", err);
	write_offsets(w, ids);
	check_offsets(w, "writer");
	if (r) {
		store_refresh(r);
		check_offsets(r, "reader");
	}
	store_close(w);
	w = NULL;
	/* a reopened writer finds each frame under its id */
	CHECKF(store_open(where, 0, &w, err, sizeof(err)) == 0, "%s", err);
	if (w) {
		struct store_batch *b = store_batch_new(w);
		for (size_t i = 0; b && i < NOFF; i++) {
			struct store_frame f = unnamed(offsets[i]);
			uint32_t id;
			CHECK_OK(store_batch_frame(b, &f, &id));
			CHECK(id == ids[i]);
		}
		CHECK(store_frame_count(w) == 2 + NOFF);
		store_batch_free(b);
		check_offsets(w, "reopened writer");
	}
	/* a copy by content keeps them */
	CHECKF(store_open(other, STORE_CREATE, &o, err, sizeof(err)) == 0, "%s", err);
	if (o && r) {
		struct store_copy_opts opts = {0};
		struct store_copy_stats st;
		struct store_series *l = NULL;
		size_t n = 0;

		CHECKF(store_copy(o, r, &opts, &st, err, sizeof(err)) == 0, "%s", err);
		check_offsets(o, "copy");
		CHECK_OK(store_series_list(o, &l, &n));
		CHECK(n == 1 && l[0].samples == 1 + 2 + 3 + 4 && l[0].weight == 100);
		store_series_free(l, n);
	}
	store_close(o);
	store_close(r);
	store_close(w);
}

/* ---- the directory ------------------------------------------------------------ */

/* The directory's RocksDB opened with plain options, every column
 * family (the first is "default"); NULL on failure (counted). */
struct raw {
	rocksdb_t *db;
	rocksdb_options_t *opt;
	rocksdb_column_family_handle_t *cf[8];
	size_t n;
};

static bool raw_open(const char *dir, struct raw *w, bool ro)
{
	char *rerr = NULL, **names;
	const rocksdb_options_t *cfo[8];

	memset(w, 0, sizeof(*w));
	w->opt = rocksdb_options_create();
	names = rocksdb_list_column_families(w->opt, dir, &w->n, &rerr);
	if (!names || w->n > 8 || strcmp(names[0], "default")) {
		CHECKF(false, "rocksdb: %s", rerr ? rerr : "column families");
		free(rerr);
		return false;
	}
	for (size_t i = 0; i < w->n; i++)
		cfo[i] = w->opt;
	w->db = ro ? rocksdb_open_for_read_only_column_families(w->opt, dir, (int)w->n,
	                                                        (const char *const *)names, cfo,
	                                                        w->cf, 0, &rerr)
	           : rocksdb_open_column_families(w->opt, dir, (int)w->n,
	                                          (const char *const *)names, cfo, w->cf, &rerr);
	rocksdb_list_column_families_destroy(names, w->n);
	CHECKF(w->db != NULL, "rocksdb: %s", rerr ? rerr : "?");
	free(rerr);
	return w->db != NULL;
}

static void raw_close(struct raw *w)
{
	for (size_t i = 0; w->db && i < w->n; i++)
		rocksdb_column_family_handle_destroy(w->cf[i]);
	if (w->db)
		rocksdb_close(w->db);
	rocksdb_options_destroy(w->opt);
}

/* The record of frame `id` in the directory (malloc'd), NULL when none. */
static char *raw_frame(const char *dir, uint32_t id, size_t *len)
{
	char key[5] = {'f', (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *rerr = NULL, *v = NULL;
	struct raw w;

	if (raw_open(dir, &w, true))
		v = rocksdb_get_cf(w.db, ro, w.cf[0], key, 5, len, &rerr);
	free(rerr);
	raw_close(&w);
	rocksdb_readoptions_destroy(ro);
	return v;
}

/* Writes `val` as frame id's record (the store closed). */
static void raw_put_frame(const char *dir, uint32_t id, const char *val, size_t len)
{
	char key[5] = {'f', (char)(id >> 24), (char)(id >> 16), (char)(id >> 8), (char)id};
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	char *rerr = NULL;
	struct raw w;

	if (raw_open(dir, &w, false)) {
		rocksdb_put_cf(w.db, wo, w.cf[0], key, 5, val, len, &rerr);
		CHECK(rerr == NULL);
		free(rerr);
	}
	raw_close(&w);
	rocksdb_writeoptions_destroy(wo);
}

static void test_dir(void)
{
	char dir[256], copy[256];
	struct store *s = NULL;
	char err[512] = "";

	snprintf(dir, sizeof(dir), "%s/names", tmpdir);
	snprintf(copy, sizeof(copy), "%s/copy", tmpdir);
	offsets_in(dir, copy);

	/* the record: kind byte 3 | 0x40 (offset), the offset last as a
	 * varint; a frame without one has neither */
	CHECKF(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == 0, "%s", err);
	if (!s)
		return;
	struct store_frame f1 = unnamed(0x1040), f0 = unnamed(0);
	uint32_t id1 = find_frame(s, &f1), id0 = find_frame(s, &f0);
	store_close(s);
	size_t len = 0;
	char *v = raw_frame(dir, id1, &len);
	CHECK(v && len > 3 && ((uint8_t)v[0] & 0x7f) == (0x40 | STORE_FRAME_UNKNOWN) &&
	      (uint8_t)v[len - 2] == 0xc0 && (uint8_t)v[len - 1] == 0x20);
	char rec[256];
	size_t reclen = v && len < sizeof(rec) ? len : 0;
	if (reclen)
		memcpy(rec, v, len);
	free(v);
	v = raw_frame(dir, id0, &len);
	CHECK(v && len > 1 && ((uint8_t)v[0] & 0x7f) == STORE_FRAME_UNKNOWN);
	free(v);
	if (!reclen)
		return;

	/* an offset flag in a named frame's record, or an offset of 0, is damage */
	char bad[256];
	memcpy(bad, rec, reclen);
	bad[0] = (char)(((uint8_t)bad[0] & 0x80) | 0x40 | STORE_FRAME_USER);
	raw_put_frame(dir, id1, bad, reclen);
	s = NULL;
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EIO);
	CHECKF(strstr(err, "store is damaged: frame") != NULL, "%s", err);
	store_close(s);
	memcpy(bad, rec, reclen);
	bad[reclen - 2] = 0; /* varint 0, then a byte too many */
	raw_put_frame(dir, id1, bad, reclen - 1);
	s = NULL;
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EIO);
	store_close(s);
	/* the record as written reads again */
	raw_put_frame(dir, id1, rec, reclen);
	s = NULL;
	CHECKF(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == 0, "%s", err);
	if (s)
		check_offsets(s, "restored");
	store_close(s);
}

/* ---- renames ------------------------------------------------------------------ */

/* leaf_a, named: what symbolize makes of the unnamed frames of libx. */
static struct store_frame leaf(const char *name)
{
	struct store_frame f = unnamed(0);

	f.name = name;
	f.name_len = strlen(name);
	f.kind = STORE_FRAME_USER;
	return f;
}

/* Frames 0x1040 and 0x2230 become leaf_a, 0xffffffffffff leaf_b, in one
 * commit, with a reader open across it; counts, nodes and totals stay;
 * a copy merges the two leaf_a nodes.  In a database (db) a frame keeps
 * the content it was committed with as its identity: the unnamed frame
 * at the old place is the named frame, and the name interned anew is a
 * frame of its own (the view merges it with the renamed one by name). */
static void renames_in(const char *where, const char *other, bool db)
{
	struct store *w = NULL, *r = NULL, *o = NULL;
	char err[512] = "", before[4096];
	uint32_t ids[NOFF], series, nodes, id;

	CHECKF(store_open(where, STORE_CREATE, &w, err, sizeof(err)) == 0, "%s", err);
	if (!w)
		return;
	write_offsets(w, ids);
	CHECKF(store_open(where, STORE_READONLY, &r, err, sizeof(err)) == 0, "%s", err);
	if (!r) {
		store_close(w);
		return;
	}
	series = find_series(r, "h", "app", NULL);
	snprintf(before, sizeof(before), "%s", dump(r, series, INT64_MIN, INT64_MAX));
	CHECK_STR(before, "1700000040 main;[libx.so.1] 1 10\n1700000040 main;[libx.so.1] 2 20\n"
	                  "1700000040 main;[libx.so.1] 3 30\n1700000040 main;[libx.so.1] 4 40\n");
	nodes = store_node_count(r);

	struct store_batch *b = store_batch_new(w);
	struct store_frame a = leaf("leaf_a"), bb = leaf("leaf_b"), bad;
	CHECK_OK(store_batch_frame_rename(b, ids[0], &a));
	CHECK_OK(store_batch_frame_rename(b, ids[1], &bb));
	CHECK_OK(store_batch_frame_rename(b, ids[1], &a)); /* the last wins */
	CHECK_OK(store_batch_frame_rename(b, ids[3], &bb));
	/* refused: a frame that has a name, a frame not committed, another
	 * module, an offset, an unnamed kind */
	CHECK(store_batch_frame_rename(b, 1, &a) == -EINVAL);
	CHECK(store_batch_frame_rename(b, store_frame_count(w), &a) == -EINVAL);
	bad = a;
	bad.module = "/usr/lib/liby.so";
	bad.module_len = 16;
	CHECK(store_batch_frame_rename(b, ids[2], &bad) == -EINVAL);
	bad = a;
	bad.offset = 0x1040;
	CHECK(store_batch_frame_rename(b, ids[2], &bad) == -EINVAL);
	bad = a;
	bad.kind = STORE_FRAME_UNKNOWN;
	CHECK(store_batch_frame_rename(b, ids[2], &bad) == -EINVAL);
	/* not yet: the reader and the writer see the old frames */
	struct store_frame got;
	CHECK_OK(store_frame_get(w, ids[0], &got));
	CHECK(got.kind == STORE_FRAME_UNKNOWN);
	CHECK_OK(store_batch_commit(b));
	CHECK_OK(store_frame_get(w, ids[0], &got));
	CHECK(got.kind == STORE_FRAME_USER && got.name_len == 6 && !memcmp(got.name, "leaf_a", 6) &&
	      got.offset == 0 && got.module_len == 18);
	/* the writer finds the named frame, and a new unnamed one at the old
	 * place is a new frame */
	CHECK_OK(store_batch_frame(b, &a, &id));
	if (db)
		CHECK(id == store_frame_count(w) - 1 && id > ids[NOFF - 1]);
	else
		CHECK(id == ids[0] || id == ids[1]);
	struct store_frame u0 = unnamed(offsets[0]);
	CHECK_OK(store_batch_frame(b, &u0, &id));
	if (db)
		CHECK(id == ids[0]);
	else
		CHECK(id == store_frame_count(w) - 1 && id > ids[NOFF - 1]);
	store_batch_free(b); /* the new one is dropped */

	CHECK(store_refresh(r) == 1);
	CHECK(store_node_count(r) == nodes);
	CHECK_STR(dump(r, series, INT64_MIN, INT64_MAX),
	          "1700000040 main;leaf_a 1 10\n1700000040 main;leaf_a 2 20\n"
	          "1700000040 main;[libx.so.1] 3 30\n1700000040 main;leaf_b 4 40\n");
	store_close(w);
	w = NULL;
	/* a reopened writer reads the new records */
	CHECKF(store_open(where, 0, &w, err, sizeof(err)) == 0, "%s", err);
	if (w) {
		CHECK_OK(store_frame_get(w, ids[3], &got));
		CHECK(got.kind == STORE_FRAME_USER && got.name_len == 6 &&
		      !memcmp(got.name, "leaf_b", 6));
		b = store_batch_new(w);
		CHECK_OK(store_batch_frame(b, &bb, &id));
		CHECK(db ? id == store_frame_count(w) - 1 : id == ids[3]);
		store_batch_free(b);
	}
	/* a copy by content: the two leaf_a nodes are one */
	CHECKF(store_open(other, STORE_CREATE, &o, err, sizeof(err)) == 0, "%s", err);
	if (o) {
		struct store_copy_opts opts = {0};
		struct store_copy_stats st;
		CHECKF(store_copy(o, r, &opts, &st, err, sizeof(err)) == 0, "%s", err);
		CHECK_STR(dump(o, find_series(o, "h", "app", NULL), INT64_MIN, INT64_MAX),
		          "1700000040 main;leaf_a 3 30\n1700000040 main;[libx.so.1] 3 30\n"
		          "1700000040 main;leaf_b 4 40\n");
	}
	store_close(o);
	store_close(r);
	store_close(w);
}

static void test_renames(void)
{
	char dir[256], copy[256];

	snprintf(dir, sizeof(dir), "%s/renames", tmpdir);
	snprintf(copy, sizeof(copy), "%s/renames-copy", tmpdir);
	renames_in(dir, copy, false);
}

/* ---- the database ------------------------------------------------------------- */

/* The names of the frames of series (h, app) as its counts show them. */
static const char *names_of(struct store *s, const char *host)
{
	return dump(s, find_series(s, host, "app", NULL), INT64_MIN, INT64_MAX);
}

static void push(struct store *db, struct store *dir, struct store_copy_stats *st)
{
	struct store_copy_opts opts = {.incremental = true};
	char err[512] = "";

	CHECKF(store_copy(db, dir, &opts, st, err, sizeof(err)) == 0, "%s", err);
}

static void rename_to(struct store *s, uint32_t id, const char *name)
{
	struct store_batch *b = store_batch_new(s);
	struct store_frame f = leaf(name);

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_OK(store_batch_frame_rename(b, id, &f));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
}

/* A host pushes unnamed frames, names them in its directory and pushes
 * again: the database's frames take the names in that push, once, and a
 * reader open across it shows them; a second host pushing the same
 * unnamed frames does not un-name them; a name the database found itself
 * stays when the host pushes the frame unnamed again. */
static void push_names(void)
{
	char dir[256], dir2[256], err[512] = "";
	const char *unnamed4 =
	        "1700000040 main;[libx.so.1] 1 10\n1700000040 main;[libx.so.1] 2 20\n"
	        "1700000040 main;[libx.so.1] 3 30\n1700000040 main;[libx.so.1] 4 40\n";
	struct store *h = NULL, *h2 = NULL, *db = NULL, *r = NULL;
	struct store_copy_stats st;
	uint32_t ids[NOFF], ids2[NOFF], frames, nodes;

	fresh_db("names_push");
	snprintf(dir, sizeof(dir), "%s/push-host", tmpdir);
	snprintf(dir2, sizeof(dir2), "%s/push-host2", tmpdir);
	CHECKF(store_open(dir, STORE_CREATE, &h, err, sizeof(err)) == 0, "%s", err);
	db = open_ok("names_push", STORE_CREATE);
	if (!h || !db)
		goto out;
	write_offsets(h, ids);
	push(db, h, &st);
	CHECK(st.renamed == 0);
	CHECK_STR(names_of(db, "h"), unnamed4);
	r = open_ok("names_push", STORE_READONLY);
	if (!r)
		goto out;
	frames = store_frame_count(r);
	nodes = store_node_count(r);

	/* the host names two frames; its next push names them centrally */
	rename_to(h, ids[0], "leaf_a");
	rename_to(h, ids[1], "leaf_a");
	push(db, h, &st);
	CHECK(st.renamed == 2 && st.buckets == 0);
	CHECK_STR(names_of(db, "h"), "1700000040 main;leaf_a 1 10\n1700000040 main;leaf_a 2 20\n"
	                             "1700000040 main;[libx.so.1] 3 30\n"
	                             "1700000040 main;[libx.so.1] 4 40\n");
	CHECK(store_refresh(r) == 1);
	CHECK(store_renames(r) > 0);
	CHECK(store_frame_count(r) == frames && store_node_count(r) == nodes);
	CHECK_STR(names_of(r, "h"), "1700000040 main;leaf_a 1 10\n1700000040 main;leaf_a 2 20\n"
	                            "1700000040 main;[libx.so.1] 3 30\n"
	                            "1700000040 main;[libx.so.1] 4 40\n");
	CHECK_STR(sql("names_push",
	              "SELECT string_agg(name::text, ',' ORDER BY id) FROM frame_names"),
	          "\\x6c6561665f61,\\x6c6561665f61");
	CHECK_STR(sql("names_push", "SELECT count(*) FROM frames WHERE name = 'leaf_a'"
	                            " AND file_offset = 0"),
	          "2");
	/* once: nothing new, nothing named again */
	push(db, h, &st);
	CHECK(st.renamed == 0 && st.nothing_new);

	/* the database names the frame at 0xffffffffffff itself */
	{
		struct store_frame u = unnamed(offsets[3]);
		uint32_t id = 0;

		for (uint32_t i = 1; i < store_frame_count(db); i++) {
			struct store_frame g;

			if (store_frame_get(db, i, &g) == 0 && g.offset == u.offset &&
			    g.kind == STORE_FRAME_UNKNOWN)
				id = i;
		}
		CHECK(id != 0);
		if (id)
			rename_to(db, id, "leaf_b");
	}
	/* another store pushes the same unnamed frames (into the same series:
	 * the database sums the two sources): they show the names, and the
	 * database gains no frame and no node */
	CHECKF(store_open(dir2, STORE_CREATE, &h2, err, sizeof(err)) == 0, "%s", err);
	if (!h2)
		goto out;
	write_offsets(h2, ids2);
	push(db, h2, &st);
	CHECK(st.renamed == 0);
	CHECK(store_refresh(r) == 1);
	CHECK(store_frame_count(r) == frames && store_node_count(r) == nodes);
	CHECK_STR(names_of(r, "h"), "1700000040 main;leaf_a 2 20\n1700000040 main;leaf_a 4 40\n"
	                            "1700000040 main;[libx.so.1] 6 60\n"
	                            "1700000040 main;leaf_b 8 80\n");
	/* the first host pushes the frame at 0xffffffffffff, unnamed, again:
	 * it stays leaf_b */
	{
		struct store_batch *b = store_batch_new(h);
		struct store_frame m = named("main"), u = unnamed(offsets[3]);
		uint32_t series, fm, fu, n1, n2;

		CHECK_OK(store_batch_series(b,
		                            &(struct store_series_key){"h", "app", "1", "cpu-clock",
		                                                       "nanoseconds", NULL},
		                            &series));
		CHECK_OK(store_batch_frame(b, &m, &fm));
		CHECK_OK(store_batch_node(b, STORE_ROOT_NODE, fm, &n1));
		CHECK_OK(store_batch_frame(b, &u, &fu));
		CHECK_OK(store_batch_node(b, n1, fu, &n2));
		CHECK_OK(store_batch_add(b, series, T0 + 60, n2, 5, 50));
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	push(db, h, &st);
	CHECK(store_refresh(r) == 1);
	CHECK(store_node_count(r) == nodes);
	CHECK(strstr(names_of(r, "h"), "1700000100 main;leaf_b 5 50\n") != NULL);
out:
	store_close(r);
	store_close(h2);
	store_close(h);
	store_close(db);
}

/* Two writers of one database, each batch open across the other's
 * commit: a push (new frames, nodes and counts) and a rename.  Neither
 * loses anything, in either order. */
static void rename_two_writers(void)
{
	struct store *w1, *w2, *r;
	struct store_batch *b1, *b2;
	uint32_t ids[NOFF], series, n1, n2, fm, fx;
	struct store_frame a = leaf("leaf_a"), bb = leaf("leaf_b"), m = named("main");
	struct store_frame x = named("extra"), u1 = unnamed(offsets[1]);

	fresh_db("names_two");
	w1 = open_ok("names_two", STORE_CREATE);
	if (!w1)
		return;
	write_offsets(w1, ids);
	w2 = open_ok("names_two", 0);
	r = open_ok("names_two", STORE_READONLY);
	if (!w2 || !r)
		goto out;
	/* w1 stages a rename; w2 commits new frames, nodes and counts on the
	 * frame being renamed; then w1 commits */
	b1 = store_batch_new(w1);
	CHECK_OK(store_batch_frame_rename(b1, ids[0], &a));
	b2 = store_batch_new(w2);
	CHECK_OK(store_batch_series(
	        b2, &(struct store_series_key){"h", "app", "1", "cpu-clock", "nanoseconds", NULL},
	        &series));
	CHECK_OK(store_batch_frame(b2, &m, &fm));
	CHECK_OK(store_batch_node(b2, STORE_ROOT_NODE, fm, &n1));
	CHECK_OK(store_batch_frame(b2, &x, &fx));
	CHECK_OK(store_batch_node(b2, n1, fx, &n2));
	CHECK_OK(store_batch_add(b2, series, T0, n2, 7, 70));
	CHECK_OK(store_batch_frame(b2, &u1, &fx));
	CHECK(fx == ids[1]);
	CHECK_OK(store_batch_node(b2, n1, fx, &n2));
	CHECK_OK(store_batch_add(b2, series, T0, n2, 5, 50));
	CHECK_OK(store_batch_commit(b2));
	CHECK_OK(store_batch_commit(b1));
	/* the other way round: w2 stages counts on a frame w1 then names */
	CHECK_OK(store_batch_frame(b2, &u1, &fx));
	CHECK_OK(store_batch_node(b2, n1, fx, &n2));
	CHECK_OK(store_batch_add(b2, series, T0 + 60, n2, 1, 1));
	CHECK_OK(store_batch_frame_rename(b1, ids[1], &bb));
	CHECK_OK(store_batch_commit(b1));
	CHECK_OK(store_batch_commit(b2));
	/* a rename of a frame the other writer named meanwhile keeps the
	 * first name */
	CHECK_OK(store_batch_frame_rename(b2, ids[3], &a));
	CHECK_OK(store_batch_frame_rename(b1, ids[3], &bb));
	CHECK_OK(store_batch_commit(b1));
	CHECK_OK(store_batch_commit(b2));
	store_batch_free(b1);
	store_batch_free(b2);
	CHECK(store_refresh(r) == 1);
	CHECK_STR(names_of(r, "h"), "1700000040 main;leaf_a 1 10\n1700000040 main;leaf_b 7 70\n"
	                            "1700000040 main;[libx.so.1] 3 30\n"
	                            "1700000040 main;leaf_b 4 40\n"
	                            "1700000040 main;extra 7 70\n1700000100 main;leaf_b 1 1\n");
	{
		struct store_series e;

		find_series(r, "h", "app", &e);
		CHECK(e.samples == 10 + 7 + 5 + 1 && e.weight == 100 + 70 + 50 + 1);
	}
	CHECK_STR(sql("names_two", "SELECT count(*) FROM frame_names"), "3");
out:
	store_close(r);
	store_close(w2);
	store_close(w1);
}

static void test_db(void)
{
	char dir[256];

	fresh_db("names_a");
	fresh_db("names_b");
	snprintf(dir, sizeof(dir), "%s/from-db", tmpdir);
	offsets_in(uri("names_a"), dir);
	/* and from a directory into a database */
	snprintf(dir, sizeof(dir), "%s/to-db", tmpdir);
	offsets_in(dir, uri("names_b"));
	/* one run, with an offsets row; SQL sees them */
	CHECK_STR(sql("names_a", "SELECT count(*) FROM frame_offsets"), "1");
	CHECK_STR(sql("names_a", "SELECT string_agg(file_offset::text, ',' ORDER BY id)"
	                         " FROM frames WHERE kind = 3"),
	          "4160,8752,0,281474976710655");
	/* a run of named frames only keeps no array */
	struct store *w = open_ok("names_a", 0);
	if (w) {
		struct store_batch *b = store_batch_new(w);
		uint32_t id;
		struct store_frame f = named("other");
		CHECK_OK(store_batch_frame(b, &f, &id));
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
		store_close(w);
	}
	CHECK_STR(sql("names_a", "SELECT count(*) FROM frame_runs r WHERE NOT EXISTS"
	                         " (SELECT 1 FROM frame_offsets o WHERE o.first = r.first)"),
	          "2");
	/* names found later, in a database; the copy goes to a directory */
	fresh_db("names_c");
	snprintf(dir, sizeof(dir), "%s/renames-from-db", tmpdir);
	renames_in(uri("names_c"), dir, true);
	CHECK_STR(sql("names_c", "SELECT string_agg(convert_from(name, 'UTF8') || ':' ||"
	                         " file_offset, ',' ORDER BY id) FROM frames WHERE id > 1"),
	          "leaf_a:0,leaf_a:0,[libx.so.1]:0,leaf_b:0");
}

int main(int argc, char **argv)
{
	static const struct fixture_test dir_tests[] = {
	        {"dir", test_dir}, {"renames", test_renames}, {NULL, NULL}};
	static const struct fixture_test db_tests[] = {{"db", test_db},
	                                               {"push_names", push_names},
	                                               {"rename_two_writers", rename_two_writers},
	                                               {NULL, NULL}};

	return fixture_main(argc, argv, tmpdir, dir_tests, db_tests);
}
