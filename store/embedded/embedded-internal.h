/*
 * store-internal.h — what the store's files share and nothing outside
 * store/ may use.
 *
 * store/ is the only code that knows the on-disk key layout (see
 * store/README.md).  A store keeps every frame and every tree node in
 * memory, in arrays indexed by id, and (for the writer) in open-addressing
 * hash tables so that interning a frame or a (parent, frame) pair is O(1)
 * and allocation-free in the common case.  A batch appends new frames,
 * nodes and series to those arrays, aggregates counts per (series, bucket,
 * node) in its own hash table, and writes everything as one synced RocksDB
 * WriteBatch at commit, the counts as one sorted blob per (series, bucket)
 * that a merge operator adds into the stored blob; freeing an uncommitted
 * batch truncates the arrays back to where the batch started.  Readers
 * open the directory as a RocksDB secondary instance in a private
 * temporary directory and catch up with the writer in store_refresh().
 *
 * One file per seam: codec.c (byte codec), counts.c (counts keys, blobs,
 * merge operator), intern.c (arena, id tables, frames, nodes), series.c,
 * options.c, open.c (directory, lock, meta, open/close), reader.c
 * (secondary readers), batch.c, stats.c (footprint, compaction),
 * prune.c and samples.c (the recent tier: detail blocks, roll-up).  The functions declared here are the ones a file uses from
 * another; everything else is static.
 */
#ifndef FLAMEFS_STORE_INTERNAL_H
#define FLAMEFS_STORE_INTERNAL_H

#include "store-internal.h"
#include "counts-blob-internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <rocksdb/c.h>

/* ---- column families ------------------------------------------------ */

/* Two column families: counts need the merge operator and their own
 * tuning; everything else shares `default`, told apart by a one-byte key
 * prefix.  RocksDB dumps every column family's options into LOG and both
 * OPTIONS files, so each one costs a fixed few KiB per store. */
enum {
	CF_DEFAULT,
	CF_COUNTS,
	CF_COUNT_ALL,
};

extern const char *const cf_names[CF_COUNT_ALL];

/* Key prefixes in the default column family; frames, nodes and series
 * keys are the prefix and a u32 BE id, meta keys the prefix and a name. */
#define KEY_FRAME  'f'
#define KEY_META   'm'
#define KEY_NODE   'n' /* schema 1: one node per record */
#define KEY_NODES  'N' /* schema 2: a run of up to NODE_RUN nodes per record */
#define KEY_SERIES 's'
#define KEY_CHANGE 'c' /* schema 3: u64 BE commit number; see changes.c */
#define KEY_NONCE  'k' /* u64 BE commit number: the commit's 8 random bytes; changes.c */
#define KEY_DETAIL 'd' /* schema 4: u32 BE series, u32 BE bucket, u64 BE piece; samples.c */
#define KEY_RENAME 'r' /* schema 6: u64 BE commit number: the frames it renamed; intern.c */
#define NODE_RUN   4096u

/* The first byte of a series record in the compact form (schema 6; series.c) */
#define SERIES_COMPACT 0

/* In a frame record's kind byte (schema 2): the module and build id are
 * those of an earlier frame, named by its distance back. */
#define FRAME_MODULE_REF 0x80u
/* In a frame record's kind byte (schema 6): the record ends with the
 * frame's offset (a varint, not 0); without it the offset is 0. */
#define FRAME_OFFSET      0x40u
#define MODULE_LAST_SLOTS 4096u

#define META_SCHEMA         "mschema"
#define META_STORE_ID       "mstore_id"
#define META_BUCKET_SECONDS "mbucket_seconds"
#define META_COMMITS        "mcommits" /* u64 BE: the last commit's number */
#define META_SOURCE         "msrc:"    /* + a source store's id: u64 BE */
#define META_DEST           "mdest:"   /* + a destination store's id: u64 BE */
/* Schema 3: u32 BE first series id whose record names its host, then the
 * host of the series below it (written by schema 2 or older). */
#define META_HOST "mhost"
/* Schema 4: i64 BE seconds of detail the recent tier keeps. */
#define META_KEEP_SAMPLES "mkeep_samples"

/* RocksDB's InfoLogLevel: DEBUG, INFO, WARN, ERROR, ... */
#define ROCKS_LOG_WARN 2
/* BottommostLevelCompaction::kForce */
#define ROCKS_BOTTOMMOST_FORCE 2

#define ERRLEN 512

/* ---- small encoders --------------------------------------------------- */

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A key of the default column family: prefix, then u32 BE id. */
static inline void id_key(uint8_t *k, uint8_t prefix, uint32_t id)
{
	k[0] = prefix;
	put_be32(k + 1, id);
}

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A growable byte buffer for encoding records. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

static inline void buf_varint(struct buf *b, uint64_t v)
{
	b->len += put_varint(b->p + b->len, v);
}

static inline void buf_bytes(struct buf *b, const void *p, size_t n)
{
	b->len += put_varint(b->p + b->len, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

struct arena_chunk {
	struct arena_chunk *prev;
	size_t size, used;
	uint8_t data[];
};

struct arena {
	struct arena_chunk *top;
};

struct arena_mark {
	struct arena_chunk *top;
	size_t used;
};

struct slot {
	uint32_t id;
	uint32_t h;
};

struct idtab {
	struct slot *slots;
	size_t mask; /* slots - 1; 0 when unallocated */
	size_t count;
};

/* intern.c: doubles the table (1024 slots at first). */
int idtab_grow(struct idtab *t);
/* Makes the table big enough for `entries` entries at once (it never
 * shrinks); 0 or -ENOMEM. */
int idtab_presize(struct idtab *t, size_t entries);

/* Makes room for one more entry; call before probing for an insert. */
static inline int idtab_reserve(struct idtab *t)
{
	if (!t->slots || (t->count + 1) * 10 > (t->mask + 1) * 7)
		return idtab_grow(t);
	return 0;
}

static inline void idtab_put(struct idtab *t, size_t pos, uint32_t id, uint32_t h)
{
	t->slots[pos].id = id;
	t->slots[pos].h = h;
	t->count++;
}

/* The writer's index of nodes by (parent, frame): linear probing over
 * 4-byte slots, at most 70% full.  A table of 2^bits slots only ever
 * holds ids below 2^bits (ids are dense and every node has a slot), so a
 * slot keeps the id in its low `bits` bits and, above them, the bits of
 * the node's hash that did not choose its place: a probe compares those
 * before it reads the node arrays, as an {id, hash} slot would, at half
 * the size.  0 is an empty slot (node 0, the root, is never indexed).
 * The dictionary is what grows in a long recording, a slot per distinct
 * stack node, so the slot is kept at 4 bytes. */
struct nodetab {
	uint32_t *slots;
	unsigned bits; /* log2 of the slots; 0 when unallocated */
	size_t count;
};

static inline uint32_t nodetab_mask(const struct nodetab *t)
{
	return (uint32_t)((1ull << t->bits) - 1);
}

/* ---- the store ---------------------------------------------------------- */

struct series_rec {
	char *host, *binary, *version, *event, *unit; /* malloc'd */
	char *labels; /* malloc'd canonical labels, "" for none (schema 5) */
	bool legacy;  /* written before schema 3: its record names no host */
	uint32_t h;   /* hash of the whole key, labels included */
	/* Writer: the bound on label sets (store.h).  `base` is the first
	 * series with this one's (host, binary, version, event), which holds
	 * in `sets` how many of them carry labels that count against
	 * STORE_LABEL_SETS_MAX (not "" nor an (other) set); base_h is the
	 * hash of those four fields. */
	uint32_t base, sets, base_h;
	int64_t first_seen, last_seen; /* INT64_MAX / INT64_MIN when unseen */
	uint64_t samples, weight, input_bytes;
	/* Schema 4: the first and last moment in microseconds (INT64_MAX /
	 * INT64_MIN when unseen) and the samples whose detail is kept. */
	int64_t first_us, last_us;
	uint64_t recent;
};

struct rdb {
	struct store base; /* first: ops is &embedded_ops */
	rocksdb_t *db;
	rocksdb_options_t *dbopts;
	rocksdb_options_t *cfopts;
	rocksdb_options_t *countopts;
	rocksdb_block_based_table_options_t *bbto;
	rocksdb_column_family_handle_t *cf[CF_COUNT_ALL];
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;

	bool readonly;
	char *dir;
	char *secdir;    /* reader's private secondary dir, or NULL */
	char *logdir;    /* writer's RocksDB info log directory, or NULL */
	int secdir_lock; /* fd of its OWNER_LOCK, flock'd while open; -1 */
	uint32_t bucket_seconds;
	uint32_t schema; /* as found at open, or as upgraded since */
	/* Series ids below host_from have schema 2 records (no host); they
	 * belong to legacy_host (malloc'd; NULL until known: see series.c). */
	uint32_t host_from;
	char *legacy_host;
	uint64_t seq;
	uint64_t live_sig; /* reader: live_files_sig() at last open */
	char errmsg[ERRLEN];
	char notice[ERRLEN]; /* store_notice(); empty when none */
	char id_hex[33];     /* store_id() */
	uint64_t commits;    /* the last commit's number (changes.c) */
	/* reader: the last rename record (KEY_RENAME) applied or loaded
	 * with the frames */
	uint64_t renames_upto;
	int64_t keep_samples; /* store_keep_samples(), from META_KEEP_SAMPLES */
	/* writer: per clock (perf's, Unix), the bucket index below which the
	 * last roll-up left no detail; INT64_MIN: not rolled up yet */
	int64_t rolled_cut[2];
	/* writer: per clock, the bucket index below which every bucket the
	 * writer has looked at is sealed (one block); INT64_MIN at first */
	int64_t sealed_cut[2];
	/* writer: the commits of this handle that wrote pieces of detail
	 * (detail_write); from two on, its close seals the open buckets'
	 * pieces (one commit's pieces are one block per bucket already, and
	 * an import's write stays the one record its WAL ends with) */
	unsigned piece_commits;
	/* writer: the commits of this handle that wrote a change record;
	 * from two on, its roll-ups and its close fold them (changes_fold) */
	unsigned change_commits;
	/* writer: the commit number from which change records may still be
	 * folded (those before it are); 0 after the open */
	uint64_t fold_from;

	/* Frames 1..nframes-1; slot 0 is unused.  Strings live in `arena`. */
	struct store_frame *frames;
	uint32_t nframes, frames_cap;
	struct idtab frame_tab; /* writer only */
	struct arena arena;
	/* writer: per hash of (module, build id), the last frame with it */
	uint32_t module_last[MODULE_LAST_SLOTS];

	/* Nodes 0..nnodes-1; node 0 is the root. */
	uint32_t *node_parent, *node_frame;
	uint32_t nnodes, nodes_cap;
	struct nodetab node_tab; /* writer only */

	/* Series 1..nseries-1 (writer only; readers list from disk). */
	struct series_rec *series;
	uint32_t nseries, series_cap;
	struct idtab series_tab;
	struct idtab base_tab; /* the `base` series of each (host, binary, version, event) */

	struct rdb_batch *batch; /* the open batch, if any */

	/* The settling thread (stats.c).  settle_mu guards settle_busy and
	 * settle_again; settler and settler_started belong to the thread
	 * that calls the store. */
	pthread_mutex_t settle_mu;
	bool settle_busy, settle_again;
	bool settler_started;
	/* The writer's thread only: settle() ran since the open; bytes
	 * written since the last round. */
	bool settle_owed;
	size_t settle_written;
	/* settle_once() only (one round at a time): the column families
	 * whose level 0 a round left as flushed, until the next flush of
	 * each. */
	bool settle_left[CF_COUNT_ALL];
	pthread_t settler;
};

/* A batch aggregates counts per (group, node), where a group is one
 * (series, bucket): one RocksDB key of the counts column family.  Entries
 * are kept small (24 bytes) since an import can hold millions. */
struct count_group {
	uint32_t series, bucket;
	uint32_t n; /* entries in this group */
	uint32_t h; /* hash of (series, bucket) */
};

struct count_ent {
	uint32_t group, node;
	uint64_t samples, weight;
};

struct series_delta {
	bool touched;
	int64_t first_seen, last_seen;
	uint64_t samples, weight, input_bytes;
	/* Microseconds: of counts given a `when` (seconds * 1e6) and of
	 * samples given their own moment (batch_sample, batch_detail);
	 * valid when has_add_us / has_exact_us. */
	bool has_add_us, has_exact_us;
	int64_t add_first_us, add_last_us, exact_first_us, exact_last_us;
	/* A copy's source moments (batch_moments; valid when has_moments):
	 * they stand in for the counts' `when`s. */
	bool has_moments;
	int64_t moments_first_us, moments_last_us;
	uint64_t recent; /* samples whose detail the batch keeps */
};

/* One sample's detail held by a batch until its commit (samples.c). */
struct detail_ent {
	uint32_t series, bucket;
	struct store_sample smp; /* its moment inside the bucket */
};

struct rdb_batch {
	struct store_batch base; /* first */
	struct rdb *s;
	/* Where the store's arrays stood when the batch started (or last
	 * committed); everything at or above is the batch's. */
	uint32_t frame_base, node_base, series_base;
	struct arena_mark mark;

	struct count_group *groups; /* ids 0..ngroups-1 */
	uint32_t ngroups, groups_cap;
	struct idtab group_tab; /* slot ids are group id + 1 */
	uint32_t last_group;    /* cache for time-ordered input */
	bool have_last;

	struct count_ent *counts;
	size_t ncounts, counts_cap;
	/* Index over counts: linear probing over 4-byte slots holding entry
	 * index + 1 (0: empty), at most half full.  Keys are compared in the
	 * entries themselves, so a slot costs half what an idtab slot does;
	 * with millions of entries that is most of an import's memory after
	 * the entries.  Commit frees it to make room for the WriteBatch; it
	 * is rebuilt on the next add. */
	uint32_t *count_slots;
	size_t count_mask; /* slots - 1; 0 when unallocated */
	bool count_tab_stale;

	struct series_delta *delta; /* indexed by series id */
	uint32_t ndelta;

	/* Detail kept by batch_sample() and batch_detail(), in the order
	 * given; sorted and encoded at commit (samples.c). */
	struct detail_ent *detail;
	size_t ndetail, detail_cap;

	/* batch_source(): the store whose copy this is ("" when none) and
	 * how far the copy reaches once committed. */
	char source[33];
	uint64_t source_upto;

	/* store_batch_frame_rename(): frames named at commit (intern.c). */
	struct frame_rename *renames;
	size_t nrenames, renames_cap;
};

/* A frame to be renamed: its id and new fields, whose name and file
 * point into `blob` (owned); module and build id are the frame's own. */
struct frame_rename {
	uint32_t id;
	struct store_frame f;
	char *blob;
};

/* From store.h's handles to ours: each embeds the other first. */
static inline struct rdb *rdb_of(struct store *s)
{
	return (struct rdb *)s;
}

static inline const struct rdb *rdb_cof(const struct store *s)
{
	return (const struct rdb *)s;
}

static inline struct rdb_batch *rdb_batch_of(struct store_batch *b)
{
	return (struct rdb_batch *)b;
}

/* The entries of embedded_ops (open.c), with store.h's contracts. */
extern const struct store_ops embedded_ops;
void rdb_close(struct store *s);
const char *rdb_errmsg(const struct store *s);
const char *rdb_notice(const struct store *s);
uint32_t rdb_bucket_seconds(const struct store *s);
struct store_batch *rdb_batch_new(struct store *s);
void rdb_batch_free(struct store_batch *b);
int rdb_batch_series(struct store_batch *b, const struct store_series_key *k, uint32_t *id);
int rdb_batch_frame(struct store_batch *b, const struct store_frame *f, uint32_t *id);
int rdb_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id);
int rdb_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                  uint64_t samples, uint64_t weight);
int rdb_batch_input_bytes(struct store_batch *b, uint32_t series, uint64_t bytes);
int rdb_batch_commit(struct store_batch *b);
int rdb_refresh(struct store *s);
uint64_t rdb_sequence(const struct store *s);
int rdb_series_list(struct store *s, struct store_series **out, size_t *n);
uint32_t rdb_node_count(const struct store *s);
int rdb_node_get(const struct store *s, uint32_t node, uint32_t *parent, uint32_t *frame);
uint32_t rdb_frame_count(const struct store *s);
int rdb_frame_get(const struct store *s, uint32_t frame, struct store_frame *f);
int rdb_series_counts(struct store *s, uint32_t series, int64_t from, int64_t to, store_count_fn fn,
                      void *ctx);
int rdb_footprint(struct store *s, struct store_footprint *out);
int rdb_series_disk_bytes(struct store *s, uint32_t series, uint64_t *bytes);
int rdb_compact(struct store *s);
int rdb_prune(struct store *s, const struct store_prune_opts *o, struct store_prune_stats *st);
const char *rdb_id(const struct store *s);
int rdb_changes(struct store *s, uint64_t since, uint64_t *upto,
                int (*fn)(void *ctx, uint32_t series, int64_t bucket_start), void *ctx);
int rdb_batch_source(struct store_batch *b, const char *source, uint64_t expect, uint64_t upto);
int rdb_source_cursor(struct store *s, const char *source, uint64_t *upto);
int rdb_commit_nonce(struct store *s, uint64_t commit, uint64_t *nonce);
int rdb_dest_cursor(struct store *s, const char *dest, uint64_t *upto);
int rdb_set_dest_cursor(struct store *s, const char *dest, uint64_t upto);
int rdb_batch_sample(struct store_batch *b, uint32_t series, const struct store_sample *smp);
int rdb_batch_moments(struct store_batch *b, uint32_t series, int64_t first_us, int64_t last_us);
int rdb_batch_detail(struct store_batch *b, uint32_t series, int64_t bucket_start,
                     const struct store_sample *v, size_t n);
int rdb_series_samples(struct store *s, uint32_t series, int64_t from_us, int64_t to_us,
                       store_sample_fn fn, void *ctx);
int64_t rdb_keep_samples(const struct store *s);
int rdb_set_keep_samples(struct store *s, int64_t seconds);
int rdb_rollup(struct store *s, struct store_rollup_stats *st);

/* ---- functions shared between the files ---------------------------------- */

/* codec.c */
int buf_reserve(struct buf *b, size_t more);
int get_bytes(const uint8_t **p, const uint8_t *end, const void **out, size_t *len);
char *dup_bytes(const void *p, size_t n);

/* counts.c */
rocksdb_mergeoperator_t *counts_merge_operator(void);
/* batch.c: counts one sample (or `samples` of them) as store_batch_add
 * does, with its moment `when_us` in microseconds, exact (batch_sample)
 * or `when` * 1e6; sets *group to its (series, bucket). */
int batch_count(struct rdb_batch *b, uint32_t series, int64_t when, int64_t when_us, bool exact,
                uint32_t node, uint64_t samples, uint64_t weight, uint32_t *group);
int bucket_of(const struct rdb *s, int64_t when, uint32_t *bucket);
int64_t bucket_start(const struct rdb *s, uint32_t bucket);
uint32_t bucket_clamped(const struct rdb *s, int64_t t);
int counts_sum(const void *v, size_t len, uint64_t *samples, uint64_t *weight);

/* intern.c */
struct arena_mark arena_mark(const struct arena *a);
void arena_release(struct arena *a, struct arena_mark m);
void arena_free(struct arena *a);
void idtab_remove(struct idtab *t, uint32_t id, uint32_t h);
void idtab_free(struct idtab *t);
uint32_t frame_hash(const struct store_frame *f);
int frame_append(struct rdb *s, const struct store_frame *f);
int frame_encode(struct buf *b, const struct store_frame *f, uint32_t ref);
uint32_t module_ref(struct rdb *s, uint32_t id);
uint32_t node_hash(uint32_t parent, uint32_t frame);
/* Takes node `id` out of the writer's index (a batch's rollback). */
void node_unindex(struct rdb *s, uint32_t id);
int node_append(struct rdb *s, uint32_t parent, uint32_t frame);
/* Room for ids below n in the frame / node arrays, mapped at once, so
 * that a load of a known count neither copies, grows nor faults them in
 * page by page (nothing past 1 GiB: intern.c); 0 or -ENOMEM. */
int frames_reserve(struct rdb *s, uint32_t n);
int nodes_reserve(struct rdb *s, uint32_t n);
int load_frame(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen);
int load_node(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen);
int load_node_run(struct rdb *s, uint32_t first, const uint8_t *v, size_t vlen);

/* samples.c: the recent tier.  Puts a block (a piece, keyed by the
 * commit's number) per (series, bucket) of the batch's detail into wb
 * (the batch keeps it until detail_reset(), after the commit). */
int detail_write(struct rdb_batch *b, rocksdb_writebatch_t *wb);
void detail_reset(struct rdb_batch *b);
/* Adds to *samples the samples of the detail blocks of `series` in
 * buckets below `cut`, and puts their deletion into wb (when not NULL).
 * 0 or -errno. */
int detail_prune(struct rdb *s, rocksdb_writebatch_t *wb, uint32_t series, uint32_t cut,
                 uint64_t *samples);
/* The number of samples a detail block (or piece) holds
 * (samples_block_count()); -1 when it is damaged. */
int detail_count(const void *v, size_t len, uint64_t *n);
/* Loads META_KEEP_SAMPLES into s->keep_samples (the default without it). */
int keep_load(struct rdb *s);
/* After a commit: runs store_rollup() when the keep window has moved
 * past a bucket, or a bucket has closed, since the last roll-up (at most
 * once a bucket per clock, and once after the open); it also seals the
 * closed buckets' pieces. */
void rollup_after_commit(struct rdb *s);
/* Seals the pieces of every bucket, closed or open, into one block each
 * (piece 0), and forgets what the keep window no longer holds, in one
 * write: what a writer's close (when it wrote pieces) and store_compact()
 * leave.  A bucket sealed while open takes more pieces and is sealed again
 * later.  0 or -errno with the message set; the detail is unchanged when
 * it fails. */
int detail_seal_all(struct rdb *s);
/* floor(us / (bucket_seconds * 1e6)) as a bucket key, -ERANGE when out of range. */
int bucket_of_us(const struct rdb *s, int64_t us, uint32_t *bucket);

/* series.c */
void series_rec_clear(struct series_rec *r);
/* Takes series `id` out of the writer's indexes and clears its record (a
 * batch's rollback, newest first). */
void series_unindex(struct rdb *s, uint32_t id);
int series_encode(struct buf *b, const struct series_rec *r);
int series_grow(struct rdb *s);
int load_series(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen);
/* Reads the "mhost" meta record into host_from and legacy_host (at open
 * with schema 3, and before each listing of a reader). */
int host_meta_load(struct rdb *s);
/* Before a writer's first write to a store older than STORE_SCHEMA_VERSION:
 * marks it so (and, below 3, writes "mhost"), in one synced write.  0 or
 * -errno. */
int schema_upgrade(struct rdb *s);
/* Writes every series record (but those of before schema 3) in the form
 * this build writes, marking the store STORE_SCHEMA_VERSION first: what
 * store_compact() leaves.  Nothing in a store of schema 1 or 2.  0 or
 * -errno with the message set. */
int series_rewrite_all(struct rdb *s);

/* options.c */
int make_options(struct rdb *s);

/* open.c */
void seterr(struct rdb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rdb_fail(struct rdb *s, char *rerr, const char *what);
int need_db(struct rdb *s);
void remove_tree(const char *dir);
void close_db(struct rdb *s);
int mkdir_p(const char *dir);
int dir_is_empty(const char *dir);
int meta_init(struct rdb *s);
/* Reads the meta value `key` of exactly `size` bytes into `out`: 0 with
 * *found set (out untouched when there is none), or -errno with the
 * store's error set (a value of another size: "store is damaged"). */
int meta_get_fixed(struct rdb *s, const char *key, void *out, size_t size, bool *found);
int check_cfs(struct rdb *s);
int open_db(struct rdb *s, bool creating);
int load_new(struct rdb *s);
/* intern.c: renames.  renames_write() puts a batch's renamed frame
 * records and its rename record into wb; renames_applied() makes them the
 * frames in memory once committed (a failure leaves the old ones: the
 * next open reads the new); renames_reset() drops the batch's.
 * renames_load(): a reader applies the rename records after
 * renames_upto (at open, only notes the last: the frames it loaded are
 * the renamed ones).  0 or -errno with the message set. */
int rdb_batch_frame_rename(struct store_batch *b, uint32_t frame, const struct store_frame *named);
int renames_write(struct rdb_batch *b, rocksdb_writebatch_t *wb);
void renames_applied(struct rdb_batch *b);
void renames_reset(struct rdb_batch *b);
int renames_load(struct rdb *s, bool at_open);
uint64_t rdb_renames(const struct store *s);
int rdb_renames_since(struct store *s, uint64_t since, uint64_t upto,
                      int (*fn)(void *ctx, uint32_t frame, uint64_t old_offset), void *ctx);

/* The writer's id tables: indexes the frames from frames_from and the
 * nodes from nodes_from on (what load_new() just loaded).  0 or -ENOMEM;
 * a reader keeps no tables and gets 0. */
int index_new(struct rdb *s, uint32_t frames_from, uint32_t nodes_from);
/* index_new()'s two halves: each touches only its own tables (frames:
 * frame_tab and module_last; nodes: node_tab), so that the two can run
 * on two threads. */
int index_frames(struct rdb *s, uint32_t frames_from);
int index_nodes(struct rdb *s, uint32_t nodes_from);

/* create.c: readies s->dir for store_open: 0 when it holds a store (one
 * it may just have made), 1 when the store is to be created in place,
 * -errno (message set) when it cannot be opened. */
int prepare_dir(struct rdb *s, int flags);

/* stats.c: after a write of `written` bytes (its WriteBatch), starts the
 * thread that flushes and compacts when the store would otherwise be more
 * than a tenth and SETTLE_SLACK over its compacted size; settle_wait()
 * joins it.  settle_final(), at the writer's close, joins it and settles
 * once more without the slack if anything was written since the store
 * opened.  A `written` of SETTLE_NOW starts a round whatever was written
 * (a prune: what it deleted is freed by a compaction). */
#define SETTLE_NOW SIZE_MAX
void settle(struct rdb *s, size_t written);
void settle_wait(struct rdb *s);
void settle_final(struct rdb *s);

/* changes.c: loads the store id and the commit counter at open; puts a
 * commit's number, change record and source cursor into its WriteBatch
 * (the writer adds one to s->commits once it is written). */
int changes_load(struct rdb *s);
int changes_put(struct rdb_batch *b, rocksdb_writebatch_t *wb);
/* Puts into wb the deletion of the change records, from the oldest on,
 * that name only buckets a prune at bucket `cut` deletes (the records
 * after the first one that names a kept bucket stay).  The count, or
 * -errno. */
int changes_prune(struct rdb *s, rocksdb_writebatch_t *wb, uint32_t cut, bool wall_clock_only);
/* Puts into wb the folding of the change records from s->fold_from on:
 * each run of consecutive records with the same largest bucket becomes
 * one record under the run's last commit, naming the union of its pairs
 * (changes.c, "folded").  The last run is left as it is (its bucket may
 * be open) unless `all`.  A damaged record ends the folding before it.
 * *next is where the next folding starts once wb is written.  The number
 * of records wb deletes, or -errno. */
int changes_fold(struct rdb *s, rocksdb_writebatch_t *wb, bool all, uint64_t *next);

/* reader.c */
int make_secdir(struct rdb *s);
int open_secondary(struct rdb *s);

#endif
