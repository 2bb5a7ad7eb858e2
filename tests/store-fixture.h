/*
 * store-fixture.h — what the store library's unit tests share (test-store
 * is built from test-store.c, which runs them, and test-store-open.c,
 * test-store-counts.c and test-store-series.c): the count of failed
 * tests (the checks are check.h's), fresh store paths under a private root, a stack
 * interned by names, a collector of count callbacks, and raw RocksDB
 * access to a store's directory (for damaged, old or foreign stores;
 * these know the key layout of store/README.md: the "counts" column
 * family and its (series, bucket) keys, records of a prefix byte and a
 * big-endian id in "default").  Test code: it prints.
 */
#ifndef FLAMEFS_STORE_FIXTURE_H
#define FLAMEFS_STORE_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rocksdb/c.h>

#include "check.h"
#include "store.h"

extern int sf_failures;      /* tests that failed */
extern int sf_checks_before; /* check_failures when the running test began */
/* The running test failed a check (check.h) */
#define sf_failed (check_failures != sf_checks_before)
extern char sf_root[256];   /* the private temporary root */
extern const char *sf_self; /* argv[0], to run a second process */

/* Runs one test and prints "PASS name" or "FAIL name". */
void sf_run(const char *name, void (*fn)(void));

/* A fresh, not yet existing store path (a static buffer: the next call
 * overwrites it). */
char *sf_fresh_dir(void);
/* The store at dir opened with flags, or NULL (the failure counted). */
struct store *sf_open_rw(const char *dir, int flags);
/* A frame of this name and nothing else; it points into name. */
struct store_frame sf_frame(const char *name);
/* Interns a stack of names (root first) and returns its leaf node. */
uint32_t sf_add_stack(struct store_batch *b, const char *const *names, size_t n);
/* The directory's size as store_footprint() counts it. */
uint64_t sf_dir_bytes(struct store *s);

extern const struct store_series_key sf_key_a; /* app 1.0 cpu-clock */
extern const char *const sf_stack1[3];         /* main;run;work */

/* What store_counts_walk() calls back with, the first 64 kept. */
struct sf_collected {
	size_t n;
	int64_t bucket[64];
	uint32_t node[64];
	uint64_t samples[64], weight[64];
};
int sf_collect(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight);

/* ---- raw RocksDB access (damaged or foreign stores) ---- */
struct sf_raw {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;
	rocksdb_column_family_handle_t *cf[16];
	char **names;
	size_t n;
	int counts; /* index of the counts CF */
};

/* Opens every column family of the store at dir with plain options
 * (false: the failure counted; sf_raw_close() it either way). */
bool sf_raw_open(const char *dir, struct sf_raw *w);
/* The same, read-only and without the lock: it sees what a writer open
 * on dir has committed (its write-ahead log replayed). */
bool sf_raw_open_ro(const char *dir, struct sf_raw *w);
void sf_raw_close(struct sf_raw *w);
/* Creates an empty store in a fresh directory and opens it raw; returns
 * the directory, or NULL (the failure counted). */
char *sf_empty_store_raw(struct sf_raw *w);
/* A counts key: u32 BE series, u32 BE offset-binary bucket index. */
void sf_counts_key(uint8_t *k, uint32_t series, int32_t bucket);
/* The value of key in the default column family (rocksdb_free it), or
 * NULL. */
char *sf_raw_get(struct sf_raw *w, const char *key, size_t klen, size_t *vlen);
/* Puts key -> val into the default column family, checked. */
void sf_raw_put(struct sf_raw *w, const char *key, size_t klen, const char *val, size_t vlen);

/* The child side of test_second_writer (test-store-open.c): exits 0 when
 * opening dir for writing is refused with a message containing want. */
int sf_try_writer(const char *dir, const char *want);

/* The check of test-crash.sh's recent-tier part (test-store --check-tier
 * DIR): every bucket's detail equals its counts, or (rolled up, behind
 * the keep window) it has none; each series' recent samples are its
 * detail.  Prints one line; 0 ok, 1 not, 2 no store to open. */
int sf_check_tier(const char *dir);

/* ---- the tests ---- */
/* test-store.c: batches, ids, frames and nodes */
void test_dedup(void);
void test_merge_adds(void);
void test_negative_time(void);
void test_rollback(void);
void test_node_index(void);
void test_reopen_stable(void);
void test_module_refs(void);
void test_node_runs(void);
/* test-store-open.c: schema and layout, readers, creation, one writer */
void test_schema(void);
void test_damaged_meta(void);
void test_far_ids(void);
void test_old_layout(void);
void test_stale_reader_dirs(void);
void test_reader(void);
void test_not_a_store(void);
void test_creation(void);
void test_second_writer(void);
void test_default_dir(void);
void test_footprint(void);
/* test-store-counts.c: counts blobs, their merges and damage, settling */
void test_merge_blobs(void);
void test_partial_merge(void);
void test_corrupt_counts(void);
void test_no_wrap(void);
void test_small_right_away(void);
void test_settled_at_close(void);
/* test-store-series.c: retention and hosts */
void test_prune(void);
void test_hosts(void);
void test_hosts_old_schema(void);
/* test-store-samples.c: the recent tier */
void test_samples_exact(void);
void test_samples_reader(void);
void test_samples_rollup(void);
void test_samples_rollup_auto(void);
void test_samples_prune(void);
void test_samples_old_schema(void);
void test_samples_copy(void);
void test_samples_copy_moments(void);
void test_samples_million(void);
void test_samples_damaged(void);
void test_samples_sealed(void);
/* test-store-labels.c: labels.c and series labels */
void test_labels_api(void);
void test_labels_series(void);
void test_labels_bound(void);
void test_labels_old_schema(void);
void test_labels_merge(void);
/* test-store-changes.c: change records folded */
void test_changes_fold(void);
void test_changes_fold_compact(void);
/* test-store-series.c: series records in the compact form */
void test_series_compact(void);

#endif
