/*
 * test-store-open.c — the store library's unit tests (run by test-store.c) of
 * opening: the schema version and the development layout, readers and
 * their directories, creation and the staging directory, one writer at a
 * time, the default directory, the footprint.
 */
#include "store-fixture.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void test_schema(void)
{
	struct sf_raw w;
	char *dir = sf_empty_store_raw(&w), *rerr = NULL;
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
	sf_raw_close(&w);

	s = NULL;
	CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EPROTONOSUPPORT);
	CHECK(s == NULL);
	CHECK(strstr(err, "schema version 9") != NULL);
	CHECK(strstr(err, "(6)") != NULL);
	CHECK(strstr(err, dir) != NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0);
	CHECK(strstr(err, "schema version 9") != NULL);
}

/* A fixed-size meta value of another size (or a store id that is gone)
 * is named as damage, by the writer and by a reader, never read. */
void test_damaged_meta(void)
{
	static const struct {
		const char *key; /* with the meta prefix 'm' */
		size_t len;      /* the damaged value's size; 0: the key deleted */
		const char *said;
	} cases[] = {
	        {"mschema", 3, "meta schema"},
	        {"mschema", 5, "meta schema"},
	        {"mbucket_seconds", 8, "meta bucket_seconds"},
	        {"mstore_id", 15, "meta store_id"},
	        {"mstore_id", 0, "meta store_id"},
	        {"mcommits", 4, "meta commits"},
	};
	const char zeros[16] = {0};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sf_raw w;
		char *dir = sf_empty_store_raw(&w), *rerr = NULL;
		struct store *s = NULL;
		char err[512] = "";

		if (!dir)
			return;
		if (cases[i].len)
			sf_raw_put(&w, cases[i].key, strlen(cases[i].key), zeros, cases[i].len);
		else
			rocksdb_delete_cf(w.db, w.wo, w.cf[0], cases[i].key, strlen(cases[i].key),
			                  &rerr);
		CHECK(rerr == NULL);
		rocksdb_free(rerr);
		sf_raw_close(&w);
		for (int ro = 0; ro < 2; ro++) {
			int r = store_open(dir, ro ? STORE_READONLY : 0, &s, err, sizeof(err));
			CHECK(r == -EIO || !fprintf(stderr, "  %s (%zu bytes): %d\n", cases[i].key,
			                            cases[i].len, r));
			CHECK(s == NULL);
			CHECK((strstr(err, "store is damaged") && strstr(err, cases[i].said) &&
			       strstr(err, dir)) ||
			      !fprintf(stderr, "  %s: %s\n", cases[i].key, err));
			store_close(s);
			s = NULL;
		}
	}
}

/* A frame or node record far past the others (its id a billion) is a gap
 * in the ids: the open says the store is damaged, by the writer and by a
 * reader, and does not fail for want of memory for arrays sized to it. */
void test_far_ids(void)
{
	static const struct {
		char prefix; /* KEY_FRAME 'f', KEY_NODES 'N' (a run of 4096) */
		const char *val;
		size_t vlen;
		const char *said;
	} cases[] = {
	        {'f', "\0\0\1x\0\0\0", 7, "frame id 2 missing"},
	        {'N', "\x80\x20", 2, "node id 2 missing"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = sf_fresh_dir();
		struct store *s = sf_open_rw(dir, STORE_CREATE);
		const char *stack[] = {"main"};
		char key[5] = {cases[i].prefix, 0x3b, (char)0x9a, (char)0xca, 0}; /* 1e9 */
		struct store_batch *b;
		struct sf_raw w;

		if (!s)
			return;
		b = store_batch_new(s);
		CHECK(b != NULL);
		if (b) { /* frame 1 and node 1 */
			CHECK(sf_add_stack(b, stack, 1) == 1);
			CHECK_OK(store_batch_commit(b));
			store_batch_free(b);
		}
		store_close(s);
		if (!sf_raw_open(dir, &w)) {
			sf_raw_close(&w);
			return;
		}
		sf_raw_put(&w, key, sizeof(key), cases[i].val, cases[i].vlen);
		sf_raw_close(&w);
		for (int ro = 0; ro < 2; ro++) {
			char err[512] = "";
			int r;

			s = NULL;
			r = store_open(dir, ro ? STORE_READONLY : 0, &s, err, sizeof(err));
			CHECKF(r == -EIO, "%c %s: %d %s", cases[i].prefix, ro ? "reader" : "writer",
			       r, err);
			CHECK(s == NULL);
			CHECKF(strstr(err, "store is damaged") && strstr(err, cases[i].said), "%s",
			       err);
			store_close(s);
		}
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

void test_stale_reader_dirs(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE), *r1 = NULL, *r2 = NULL;
	char base[PATH_MAX], err[512] = "", names[8][NAME_MAX + 1], after[8][NAME_MAX + 1];
	const char *saved = getenv("XDG_RUNTIME_DIR");
	char *saved_copy = saved ? strdup(saved) : NULL;
	int status = 0;

	if (!s)
		return;
	store_close(s);
	snprintf(base, sizeof(base), "%s/runtime", sf_root);
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
void test_old_layout(void)
{
	char *dir = sf_fresh_dir();
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

void test_reader(void)
{
	char *dir = sf_fresh_dir();
	struct store *w = sf_open_rw(dir, STORE_CREATE);
	struct store *r = NULL;
	struct store_batch *b;
	struct store_series *list = NULL;
	struct sf_collected c = {0};
	struct store_frame f;
	size_t n = 0;
	uint32_t series, node;
	uint64_t seq;

	if (!w)
		return;
	b = store_batch_new(w);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	node = sf_add_stack(b, sf_stack1, 2);
	CHECK_OK(store_batch_add(b, series, 100, node, 1, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	r = sf_open_rw(dir, STORE_READONLY);
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
	node = sf_add_stack(b, sf_stack1, 3);
	CHECK_OK(store_batch_add(b, series, 100, node, 2, 6));
	CHECK_OK(store_batch_add(b, series, 100, 2, 1, 1));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	CHECK(store_node_count(r) == 3);
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	CHECK(c.n == 1 && c.weight[0] == 5);
	CHECK(store_sequence(r) == seq);

	CHECK(store_refresh(r) == 1);
	CHECK(store_sequence(r) > seq);
	CHECK(store_node_count(r) == 4);
	CHECK(store_frame_count(r) == 4);
	CHECK_OK(store_frame_get(r, 3, &f));
	CHECK(f.name_len == 4 && !memcmp(f.name, "work", 4));
	memset(&c, 0, sizeof(c));
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, sf_collect, &c));
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
	CHECK_OK(store_series_counts(r, series, INT64_MIN, INT64_MAX, sf_collect, &c));
	/* (RocksDB 7.8 secondaries would count merge operands twice here
	 * without the reopen in store_refresh.) */
	CHECK(c.n == 2 && c.weight[0] == 6 && c.weight[1] == 6);
	for (size_t i = 0; sf_failed && i < c.n && i < 64; i++)
		fprintf(stderr, "  count node %u samples %" PRIu64 " weight %" PRIu64 "\n",
		        c.node[i], c.samples[i], c.weight[i]);
out:
	store_close(r);
	store_close(w);
}

void test_not_a_store(void)
{
	char err[512] = "";
	struct store *s = NULL;
	char *dir = sf_fresh_dir();
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
	s = sf_open_rw(path, STORE_CREATE);
	store_close(s);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
	/* An empty existing directory becomes a store with STORE_CREATE. */
	snprintf(path, sizeof(path), "%s/empty", dir);
	CHECK(mkdir(path, 0755) == 0);
	CHECK(store_open(path, 0, &s, err, sizeof(err)) < 0);
	s = sf_open_rw(path, STORE_CREATE);
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
	CHECK(b && store_batch_series(b, &sf_key_a, &id) == 0 && store_batch_commit(b) == 0);
	store_batch_free(b);
	store_close(s);
	s = sf_open_rw(dir, 0);
	CHECK(s && store_notice(s) == NULL);
	store_close(s);
}

/* Creation is atomic (a staging directory renamed into place), and what
 * a creation killed by an older flamefs left in place is taken over. */
void test_creation(void)
{
	char err[512] = "";
	struct store *s = NULL;
	char *dir, path[PATH_MAX + 64];
	struct stat st;

	/* A store made on a new path leaves nothing beside it. */
	dir = sf_fresh_dir();
	snprintf(path, sizeof(path), "%s/sub/store", dir);
	s = sf_open_rw(path, STORE_CREATE);
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
	s = sf_open_rw(path, STORE_CREATE);
	CHECK(s && store_notice(s) && strstr(store_notice(s), "interrupted creation"));
	store_close(s);
	snprintf(path, sizeof(path), "%s/sub/.new.new-AbCdEf", dir);
	CHECK(stat(path, &st) < 0 && errno == ENOENT);

	/* An existing empty directory keeps its mode. */
	snprintf(path, sizeof(path), "%s/sub/mode", dir);
	CHECK(mkdir(path, 0750) == 0);
	s = sf_open_rw(path, STORE_CREATE);
	store_close(s);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0750);

	/* Left in place by an older flamefs: RocksDB's first files only. */
	dir = sf_fresh_dir();
	CHECK(mkdir(dir, 0700) == 0);
	touch(dir, "LOCK");
	touch(dir, "IDENTITY");
	touch(dir, "LOG");
	touch(dir, "000003.log");
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted; the next import or record finishes it"));
	expect_taken_over(dir, 0, "made it afresh");

	/* ... the database without its counts column family. */
	dir = sf_fresh_dir();
	raw_make(dir, false, NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted"));
	expect_taken_over(dir, STORE_CREATE, "made it afresh");

	/* ... both column families, no meta records. */
	dir = sf_fresh_dir();
	raw_make(dir, true, NULL);
	CHECK(store_open(dir, STORE_READONLY, &s, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "creation was interrupted"));
	expect_taken_over(dir, STORE_CREATE, "finished it");

	/* A database that holds data is never taken. */
	for (int counts = 0; counts < 2; counts++) {
		dir = sf_fresh_dir();
		raw_make(dir, counts, "somebody's");
		snprintf(path, sizeof(path), "%s: not a flamefs store", dir);
		CHECK(store_open(dir, STORE_CREATE, &s, err, sizeof(err)) == -EINVAL);
		CHECK(!strcmp(err, path));
		CHECK(store_open(dir, 0, &s, err, sizeof(err)) == -EINVAL);
		CHECK(!strcmp(err, path));
	}
	/* Nor a directory with anything else in it. */
	dir = sf_fresh_dir();
	CHECK(mkdir(dir, 0700) == 0);
	touch(dir, "LOCK");
	touch(dir, "notes.txt");
	CHECK(store_open(dir, STORE_CREATE, &s, err, sizeof(err)) == -EINVAL);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	CHECK(access(path, F_OK) == 0);
}

void test_second_writer(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
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
		execl(sf_self, sf_self, "--try-writer", dir, want, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Readers are welcome. */
	r = sf_open_rw(dir, STORE_READONLY);
	CHECK(r != NULL);
	store_close(r);
	store_close(s);
	/* Once closed, a new writer may open. */
	s = sf_open_rw(dir, 0);
	CHECK(s != NULL);
	store_close(s);
}

void test_default_dir(void)
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

void test_footprint(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);
	struct store_batch *b;
	struct store_footprint fp;
	uint32_t series, node;
	uint64_t sb = 0;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &sf_key_a, &series));
	/* Frames and nodes share a column family and are sized per key range
	 * at data-block granularity: make each span several blocks. */
	node = STORE_ROOT_NODE;
	for (int i = 0; i < 8000; i++) {
		char name[64];
		struct store_frame f;
		uint32_t fid = 0;

		snprintf(name, sizeof(name), "namespace::function_number_%d", i);
		f = sf_frame(name);
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

/* The child side of test_second_writer: exits 0 when opening `dir` for
 * writing is refused with a message containing `want`. */
int sf_try_writer(const char *dir, const char *want)
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
