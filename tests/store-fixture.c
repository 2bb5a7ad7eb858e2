/*
 * store-fixture.c — the store unit tests' shared helpers (store-fixture.h).
 */
#include "store-fixture.h"

#include <errno.h>
#include <stdlib.h>

int sf_failures;
int sf_checks_before;
char sf_root[256];
const char *sf_self;

void sf_run(const char *name, void (*fn)(void))
{
	sf_checks_before = check_failures;
	fn();
	printf("%s %s\n", sf_failed ? "FAIL" : "PASS", name);
	fflush(stdout);
	sf_failures += sf_failed;
}

static int counter;

/* A fresh, not yet existing store path. */
char *sf_fresh_dir(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/s%d", sf_root, ++counter);
	return path;
}

struct store *sf_open_rw(const char *dir, int flags)
{
	struct store *s = NULL;
	char err[512] = "";
	int r = store_open(dir, flags, &s, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "  store_open(%s): %d: %s\n", dir, r, err);
		check_failures++;
		return NULL;
	}
	return s;
}

struct store_frame sf_frame(const char *name)
{
	struct store_frame f = {0};

	f.name = name;
	f.name_len = strlen(name);
	return f;
}

/* Interns a stack of names (root first) and returns its leaf node. */
uint32_t sf_add_stack(struct store_batch *b, const char *const *names, size_t n)
{
	uint32_t node = STORE_ROOT_NODE;

	for (size_t i = 0; i < n; i++) {
		struct store_frame f = sf_frame(names[i]);
		uint32_t fid = 0;

		CHECK_OK(store_batch_frame(b, &f, &fid));
		CHECK_OK(store_batch_node(b, node, fid, &node));
	}
	return node;
}

const struct store_series_key sf_key_a = {NULL, "app", "1.0", "cpu-clock", "nanoseconds", NULL};
const char *const sf_stack1[3] = {"main", "run", "work"};

int sf_collect(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct sf_collected *c = ctx;

	if (c->n < 64) {
		c->bucket[c->n] = bucket;
		c->node[c->n] = node;
		c->samples[c->n] = samples;
		c->weight[c->n] = weight;
	}
	c->n++;
	return 0;
}

/* ---- raw RocksDB access (damaged or foreign stores) ---------------------------- */

static char *fail_full_merge(void *st, const char *key, size_t key_len, const char *existing,
                             size_t existing_len, const char *const *ops, const size_t *op_lens,
                             int nops, unsigned char *success, size_t *len)
{
	*success = 0;
	*len = 0; /* RocksDB 7.8's C wrapper copies (NULL, *len) even on failure */
	return NULL;
}

static char *fail_partial_merge(void *st, const char *key, size_t key_len, const char *const *ops,
                                const size_t *op_lens, int nops, unsigned char *success,
                                size_t *len)
{
	*success = 0;
	*len = 0;
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

/* Opens every column family of the store at dir with plain options. */
static bool raw_open(const char *dir, struct sf_raw *w, bool ro)
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
	/* no compaction of its own: it would merge counts with the failing
	 * operator above */
	rocksdb_options_set_disable_auto_compactions(w->opts, 1);
	w->names = rocksdb_list_column_families(w->opts, dir, &w->n, &rerr);
	if (rerr || w->n > 16) {
		fprintf(stderr, "  list cfs: %s\n", rerr ? rerr : "too many");
		rocksdb_free(rerr);
		check_failures++;
		return false;
	}
	for (size_t i = 0; i < w->n; i++) {
		o[i] = w->opts;
		if (!strcmp(w->names[i], "counts"))
			w->counts = (int)i;
	}
	if (ro)
		w->db = rocksdb_open_for_read_only_column_families(
		        w->opts, dir, (int)w->n, (const char *const *)w->names, o, w->cf, 0, &rerr);
	else
		w->db = rocksdb_open_column_families(
		        w->opts, dir, (int)w->n, (const char *const *)w->names, o, w->cf, &rerr);
	if (rerr) {
		fprintf(stderr, "  raw open: %s\n", rerr);
		rocksdb_free(rerr);
		check_failures++;
		return false;
	}
	CHECK(w->counts >= 0);
	w->wo = rocksdb_writeoptions_create();
	return w->counts >= 0;
}

bool sf_raw_open(const char *dir, struct sf_raw *w)
{
	return raw_open(dir, w, false);
}

bool sf_raw_open_ro(const char *dir, struct sf_raw *w)
{
	return raw_open(dir, w, true);
}

void sf_raw_close(struct sf_raw *w)
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
char *sf_empty_store_raw(struct sf_raw *w)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE);

	if (!s)
		return NULL;
	store_close(s);
	if (!sf_raw_open(dir, w)) {
		sf_raw_close(w);
		return NULL;
	}
	return dir;
}

/* A counts key: u32 BE series, u32 BE offset-binary bucket index. */
void sf_counts_key(uint8_t *k, uint32_t series, int32_t bucket)
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

/* The value of key in the default column family (rocksdb_free it), or
 * NULL. */
char *sf_raw_get(struct sf_raw *w, const char *key, size_t klen, size_t *vlen)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *rerr = NULL;
	char *v = rocksdb_get_cf(w->db, ro, w->cf[0], key, klen, vlen, &rerr);

	rocksdb_free(rerr);
	rocksdb_readoptions_destroy(ro);
	return v;
}

/* Puts key -> val into the default column family, checked. */
void sf_raw_put(struct sf_raw *w, const char *key, size_t klen, const char *val, size_t vlen)
{
	char *rerr = NULL;

	rocksdb_put_cf(w->db, w->wo, w->cf[0], key, klen, val, vlen, &rerr);
	CHECK(rerr == NULL);
	rocksdb_free(rerr);
}

uint64_t sf_dir_bytes(struct store *s)
{
	struct store_footprint fp;

	CHECK_OK(store_footprint(s, &fp));
	return fp.dir_bytes;
}
