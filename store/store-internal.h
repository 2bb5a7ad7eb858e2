/*
 * store-internal.h — the seam between store.h and the store's two backends.
 *
 * Every `struct store` begins with a pointer to its backend's table of
 * functions, and every `struct store_batch` with the store it belongs to;
 * a backend's own structs embed these as their first member and convert
 * back with the helpers its header defines.  store.c dispatches each
 * function of store.h through the table, so nothing outside store/ (and
 * nothing in store.c) learns which backend it talks to, the way libfuse's
 * fuse_lowlevel_ops or SQLite's sqlite3_io_methods do it.
 *
 * The embedded backend (store/embedded/) keeps a RocksDB directory; the
 * central one (store/central/) a PostgreSQL database.  Each entry has the
 * contract of the store.h function of the same name.
 */
#ifndef FLAMEFS_STORE_BACKEND_H
#define FLAMEFS_STORE_BACKEND_H

#include "store.h"

/* A destination's record of one source (source_records below). */
struct source_record {
	char key[64];  /* the identity copies are recorded under */
	uint64_t upto; /* how far they reached: the source's commit number */
	bool has_nonce;
	uint64_t nonce;  /* the nonce of the source's commit `upto` */
	uint64_t resync; /* the destination's commit of the last resync under key; 0: none */
};

/* What a copy's commit records with its source's record (batch_lineage). */
struct source_mark {
	bool has_nonce;
	uint64_t nonce; /* of the source's commit `upto` */
	bool resync;    /* this copy sends everything again under an existing key */
	/* A clone leaving key split_from (not NULL): that key's rows written
	 * before its resync (commit split_before) came from this clone's
	 * history, which it now sends under its own key: they go. */
	const char *split_from;
	uint64_t split_before;
};

/* Whether `named` may name frame `frame` (store_batch_frame_rename()'s
 * rules): `old` is that frame as the batch shows it, NULL when `frame`
 * is not a committed frame; old must be unnamed and `named` a named kind
 * but inline, no offset, a name, old's module and build id. 0, or
 * -EINVAL with the reason written to err (errlen bytes); the backends
 * check it at once. */
int store_rename_check(uint32_t frame, const struct store_frame *old,
                       const struct store_frame *named, char *err, size_t errlen);

struct store_ops {
	const char *name; /* "embedded", "central" */
	void (*close)(struct store *s);
	const char *(*errmsg)(const struct store *s);
	const char *(*notice)(const struct store *s);
	uint32_t (*bucket_seconds)(const struct store *s);

	struct store_batch *(*batch_new)(struct store *s);
	void (*batch_free)(struct store_batch *b);
	int (*batch_series)(struct store_batch *b, const struct store_series_key *k, uint32_t *id);
	int (*batch_frame)(struct store_batch *b, const struct store_frame *f, uint32_t *id);
	int (*batch_node)(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id);
	int (*batch_frame_rename)(struct store_batch *b, uint32_t frame,
	                          const struct store_frame *named);
	int (*batch_add)(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
	                 uint64_t samples, uint64_t weight);
	int (*batch_sample)(struct store_batch *b, uint32_t series, const struct store_sample *smp);
	int (*batch_input_bytes)(struct store_batch *b, uint32_t series, uint64_t bytes);
	int (*batch_commit)(struct store_batch *b);

	int (*refresh)(struct store *s);
	uint64_t (*sequence)(const struct store *s);
	uint64_t (*renames)(const struct store *s); /* NULL: never renames */
	int (*series_list)(struct store *s, struct store_series **out, size_t *n);
	uint32_t (*node_count)(const struct store *s);
	int (*node_get)(const struct store *s, uint32_t node, uint32_t *parent, uint32_t *frame);
	uint32_t (*frame_count)(const struct store *s);
	int (*frame_get)(const struct store *s, uint32_t frame, struct store_frame *f);
	int (*series_counts)(struct store *s, uint32_t series, int64_t from, int64_t to,
	                     store_count_fn fn, void *ctx);
	/* Optional: store_series_prefetch(). */
	int (*series_prefetch)(struct store *s, const uint32_t *ids, size_t n, int64_t from,
	                       int64_t to);

	int (*series_samples)(struct store *s, uint32_t series, int64_t from_us, int64_t to_us,
	                      store_sample_fn fn, void *ctx);
	/* Optional: store_samples_prefetch(). */
	int (*samples_prefetch)(struct store *s, const uint32_t *ids, size_t n, int64_t from_us,
	                        int64_t to_us);
	int64_t (*keep_samples)(const struct store *s);
	int (*set_keep_samples)(struct store *s, int64_t seconds);
	int (*rollup)(struct store *s, struct store_rollup_stats *st);

	int (*footprint)(struct store *s, struct store_footprint *out);
	int (*series_disk_bytes)(struct store *s, uint32_t series, uint64_t *bytes);
	int (*compact)(struct store *s);
	int (*prune)(struct store *s, const struct store_prune_opts *o,
	             struct store_prune_stats *st);

	/* ---- for store_copy() (copy.c) ---- */
	/* True when a batch_source() batch replaces each (series, bucket) of
	 * the source with the value it carries; false when it adds. */
	bool replaces_sources;
	const char *(*id)(const struct store *s);
	/* Calls fn for every (series, bucket start) that commits after
	 * commit number `since` wrote to (possibly more than once each; all
	 * of them when since is 0) and sets *upto to the last commit
	 * number.  A non-zero return from fn stops the walk and is
	 * returned. */
	int (*changes)(struct store *s, uint64_t since, uint64_t *upto,
	               int (*fn)(void *ctx, uint32_t series, int64_t bucket_start), void *ctx);
	/* Calls fn for every frame that a commit after `since` and up to
	 * `upto` named (store_batch_frame_rename()), with the file offset it
	 * had while unnamed (0 when the store did not keep it), so that a
	 * copy can name the same frames in its destination.  Optional (NULL:
	 * the store never renames).  A non-zero return from fn stops the walk
	 * and is returned. */
	int (*renames_since)(struct store *s, uint64_t since, uint64_t upto,
	                     int (*fn)(void *ctx, uint32_t frame, uint64_t old_offset), void *ctx);
	/* Marks `b` as carrying copies from store `source` (32 hex digits),
	 * which the commit records as copied up to its commit number `upto`
	 * (see replaces_sources).  A store that replaces refuses the commit
	 * (-EAGAIN) when the source's record is no longer `expect`: another
	 * copy of the same source committed meanwhile; and in such a batch,
	 * store_batch_input_bytes() gives the source's total for the series,
	 * which replaces the total the same source gave before. */
	int (*batch_source)(struct store_batch *b, const char *source, uint64_t expect,
	                    uint64_t upto);
	/* How far copies from `source` reached this store: 0 when never. */
	int (*source_cursor)(struct store *s, const char *source, uint64_t *upto);
	/* This store's memory of how far its copies to store `dest` reached
	 * (0 when never), and setting it (a writer; no batch open). */
	int (*dest_cursor)(struct store *s, const char *dest, uint64_t *upto);
	int (*set_dest_cursor)(struct store *s, const char *dest, uint64_t upto);
	/* ---- a source's identity across copies of it (copy.c, "Source
	 * identity"); each optional ---- */
	/* The source side: the 8 random bytes commit number `commit` wrote
	 * (its nonce); -ENOENT when it wrote none (an older flamefs's
	 * commit, or one pruned with its change record). */
	int (*commit_nonce)(struct store *s, uint64_t commit, uint64_t *nonce);
	/* The destination side (one that replaces): calls fn for each record
	 * of a source whose key is `base` (a store id) or a clone's
	 * `base~<16 hex digits>`. */
	int (*source_records)(struct store *s, const char *base,
	                      int (*fn)(void *ctx, const struct source_record *r), void *ctx);
	/* For a copy with store_copy_opts.samples: keeps the detail of the n
	 * samples `v` (time order) of (series, bucket), without counting
	 * them (the copy sends the bucket's counts with batch_add).  In a
	 * batch_source() batch of a store that replaces, it replaces the
	 * detail that source gave that (series, bucket) before (n may be 0:
	 * none now); a store that adds adds it. */
	int (*batch_detail)(struct store_batch *b, uint32_t series, int64_t bucket_start,
	                    const struct store_sample *v, size_t n);
	/* Optional, for a copy: the source's first and last moment of
	 * `series` (microseconds, first <= last), which widen the series'
	 * [first, last] after the commit to include them (min, max: never
	 * narrowing).  In a batch that gives them, the `when`s of the
	 * series' counts (bucket starts) are not moments. */
	int (*batch_moments)(struct store_batch *b, uint32_t series, int64_t first_us,
	                     int64_t last_us);
	/* What a batch_source() batch records with the source's record. */
	int (*batch_lineage)(struct store_batch *b, const struct source_mark *m);

	/* Optional (NULL: the store's reads already see one state between
	 * refreshes, as an embedded reader's do).  begin: catch up, then
	 * let every read until the end call see that one state, however
	 * writers change the store meanwhile; a copy reads its source that
	 * way, so that a bucket replaced during the copy is read whole,
	 * as it was.  No writing in between. */
	int (*snapshot)(struct store *s, bool begin);
};

/* store.c: one line to store_log_to()'s function, if any. */
void store_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* store.c sets host after the backend's open; the backend sets where,
 * and frees both in its close. */
struct store {
	const struct store_ops *ops;
	char *where; /* store_where(): fit to print (no password) */
	char *host;  /* store_host() */
};

struct store_batch {
	struct store *store;
};

/* store.c: the order of store_series_list() for qsort(): (binary,
 * version, event, host, labels), bytewise; both backends sort with it. */
int store_series_cmp(const void *a, const void *b);

/* labels.c: whether canonical `labels` count against STORE_LABEL_SETS_MAX:
 * not none, and not a set past the bound (every value STORE_LABEL_OTHER). */
bool store_labels_counted(const char *labels);

/* embedded/open.c: opens the RocksDB store in directory `dir`. */
int embedded_open(const char *dir, int flags, struct store **out, char *err, size_t errlen);
/* central/: opens the PostgreSQL store named by connection string `conn`;
 * err never receives the password. */
int central_open(const char *conn, int flags, struct store **out, char *err, size_t errlen);

#endif
