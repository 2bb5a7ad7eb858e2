/*
 * store.h — the public API of the flamefs store.
 *
 * A store holds deduplicated profiler stacks.  It is either a directory
 * (the embedded backend, RocksDB: one host, the default) or a PostgreSQL
 * database named by a connection string that starts with "postgresql:"
 * or "postgres:" (the central backend: many hosts); see store/README.md.
 * Frames are interned once and get small sequential ids.  Stacks form one
 * prefix tree of (parent node, frame) pairs shared by every series.  A
 * series is one host x binary x version x event; its counts are kept per time
 * bucket and per tree node, as {samples, weight}, and merged by addition.
 * A series may also carry labels (cgroup, thread name, ...): see below.
 *
 * The writer (flamefs-collect) opens the store read-write, builds one
 * batch per import or drain, and commits it atomically.  Readers (flamefs)
 * open it as a RocksDB secondary and call store_refresh() to catch up.
 *
 * Every function returns 0 (or a count) on success and -errno on failure,
 * unless it says otherwise.  Functions that can fail for a reason worth
 * telling a person also leave a one-line message that store_errmsg()
 * returns.  Nothing here prints or exits.
 */
#ifndef FLAMEFS_STORE_H
#define FLAMEFS_STORE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define STORE_SCHEMA_VERSION         6
#define STORE_SCHEMA_OLDEST          1 /* the oldest one still read */
#define STORE_DEFAULT_BUCKET_SECONDS 60

/* The root of the stack tree.  It has no frame; every stack's first frame
 * is a child of it. */
#define STORE_ROOT_NODE 0u

enum store_open_flags {
	STORE_CREATE = 1 << 0,   /* create the directory (mode 0700) if missing */
	STORE_READONLY = 1 << 1, /* open as a secondary reader; no batches */
};

enum store_frame_kind {
	STORE_FRAME_USER = 0,    /* user-space function */
	STORE_FRAME_KERNEL = 1,  /* kernel function */
	STORE_FRAME_INLINE = 2,  /* inlined into its parent frame */
	STORE_FRAME_UNKNOWN = 3, /* unsymbolized: "[unknown]" or "[libfoo.so]" */
	STORE_FRAME_JIT = 4,     /* named from a perf map */
	STORE_FRAME_PYTHON = 5,  /* a Python function: "qualname (file)" */
	STORE_FRAME_SPAN = 6,    /* a span's name (STORE_EVENT_SPANS series) */
};

/* A frame as the importers describe it.  Strings are (pointer, length) and
 * need not be NUL-terminated; a NULL pointer means empty.  `name` is the
 * frame exactly as it is shown in folded output.  The other fields are
 * attributes kept for pprof output.  Two frames are the same frame when
 * every field is equal.
 *
 * A frame that could not be named (STORE_FRAME_UNKNOWN) keeps where it
 * was: its module's path and build id, and `offset`, the byte offset in
 * the module's file of the start of the function the pc was in (from the
 * file's .eh_frame), or of the pc itself where no unwind entry covers it.
 * So unnamed code keeps one frame per function, as named code does, and
 * `flamefs-collect symbolize` can name it later
 * (store_batch_frame_rename()).  `offset` is 0 in every other kind, and
 * in an unnamed frame whose place is not known. */
struct store_frame {
	const char *name;
	size_t name_len;
	const char *module; /* mapping / DSO path, e.g. /usr/lib/libc.so.6 */
	size_t module_len;
	const uint8_t *build_id; /* raw bytes, not hex */
	size_t build_id_len;
	const char *file; /* source file */
	size_t file_len;
	uint32_t line;   /* 0 when unknown */
	uint8_t kind;    /* enum store_frame_kind */
	uint64_t offset; /* STORE_FRAME_UNKNOWN only: the function's file offset */
};

/* What identifies a series.  NUL-terminated strings. */
struct store_series_key {
	const char *host;    /* NULL or "": the store's host, store_host() */
	const char *binary;  /* e.g. "nginx" */
	const char *version; /* e.g. "1.25.3", or a short build id */
	const char *event;   /* e.g. "cpu-clock", "cpu", "samples" */
	const char *unit;    /* unit of the weight, e.g. "nanoseconds", "count" */
	/* NULL or "": none; else canonical labels (store_labels_make()).
	 * Part of the key: two label sets are two series. */
	const char *labels;
};

/* ---- labels ---------------------------------------------------------
 * A series may carry labels of bounded cardinality: who ran its stacks
 * (cgroup, container, thread name, executable path, command line) or
 * what an import said of them (pprof's string labels, --label).  Ids
 * (pid, tid) are not labels: the recent tier keeps them per sample.
 *
 * Canonical form, one string: "key=value" pairs sorted by key (bytewise),
 * each key once, joined by '\n', no trailing newline:
 *     "cgroup=system.slice/nginx.service\nthread=worker"
 * A key is 1..STORE_LABEL_KEY_MAX bytes of [a-z0-9_], starting with a
 * letter.  A value is 1..STORE_LABEL_VALUE_MAX bytes and holds no control
 * byte (below 0x20, or 0x7f); store_label_value_clean() makes one of any
 * bytes.
 *
 * The bound: a (host, binary, version, event) takes at most
 * STORE_LABEL_SETS_MAX label sets.  Past it, store_batch_series() gives a
 * new label set's samples to the series whose labels have the same keys,
 * each valued STORE_LABEL_OTHER (store_labels_other()): a fork bomb of
 * 100,000 thread names makes at most that many series and one more per
 * key set, and every sample is still counted. */
#define STORE_LABEL_KEY_MAX   32
#define STORE_LABEL_VALUE_MAX 1024
#define STORE_LABEL_SETS_MAX  256
#define STORE_LABEL_OTHER     "(other)"

/* The well-known keys. */
#define STORE_LABEL_CGROUP    "cgroup" /* cgroup v2 path, without the leading '/' ("/" for the root) */
#define STORE_LABEL_CONTAINER "container" /* a container runtime's id, from the cgroup path */
#define STORE_LABEL_THREAD    "thread"    /* the thread's name (its comm) */
#define STORE_LABEL_EXE       "exe"       /* the executable's path */
#define STORE_LABEL_CMDLINE   "cmdline"   /* the command line (record --cmdline only) */

struct store_label {
	const char *key;   /* NUL-terminated */
	const char *value; /* NUL-terminated */
};

/* Makes the canonical labels of the n pairs (any order) into *out, a
 * malloc'd string the caller frees ("" for n = 0).  0, -EINVAL (a key
 * or value that is not valid, or a key twice) or -ENOMEM. */
int store_labels_make(const struct store_label *l, size_t n, char **out);
/* True when `labels` (NULL: none) is canonical. */
bool store_labels_valid(const char *labels);
/* The value of `key` in canonical `labels`: a pointer into labels and its
 * length in *len (not NUL-terminated), or NULL when absent. */
const char *store_labels_get(const char *labels, const char *key, size_t *len);
/* Calls fn for each pair of canonical `labels`, in order, with pointers
 * into it and lengths.  A non-zero return stops the walk and is returned. */
typedef int (*store_label_fn)(void *ctx, const char *key, size_t key_len, const char *value,
                              size_t value_len);
int store_labels_each(const char *labels, store_label_fn fn, void *ctx);
/* The labels past the bound stand for: `labels`' keys, each valued
 * STORE_LABEL_OTHER, into *out (malloc'd).  0 or -ENOMEM. */
int store_labels_other(const char *labels, char **out);
/* A valid label value made of any `len` bytes, into *out (malloc'd): a
 * control byte or a backslash becomes "\xNN", the result is cut at a
 * whole character to STORE_LABEL_VALUE_MAX bytes, and an empty input
 * becomes "-".  0 or -ENOMEM. */
int store_label_value_clean(const char *v, size_t len, char **out);

/* A series as listed.  Strings are owned by the array they come in. */
struct store_series {
	uint32_t id;
	char *host;
	char *binary;
	char *version;
	char *event;
	char *unit;
	int64_t first_seen; /* unix seconds (or perf clock seconds), inclusive */
	int64_t last_seen;
	uint64_t samples; /* sum over all counts */
	uint64_t weight;
	uint64_t input_bytes; /* bytes of importer input attributed to it */
	/* The first and last moment the series holds, in microseconds, as
	 * exact as its input was: a sample's own time (store_batch_sample),
	 * else the `when` store_batch_add() was given, else (a series an
	 * older flamefs wrote) its first and last bucket's start. */
	int64_t first_us;
	int64_t last_us;
	uint64_t recent_samples; /* samples whose detail the recent tier holds */
	char *labels;            /* canonical labels, "" for none */
};

struct store;
struct store_batch;

/* The default store directory: $FLAMEFS_STORE if set and non-empty, else
 * $XDG_DATA_HOME/flamefs, else $HOME/.local/share/flamefs.  Returns a
 * malloc'd string the caller frees, or NULL when none can be formed. */
char *store_default_dir(void);

/* True when `where` names a database rather than a directory: a
 * connection string that starts with "postgresql:" or "postgres:", or
 * libpq's keyword/value form (its first word a keyword, then '=':
 * "host=db dbname=fleet"). */
bool store_is_database(const char *where);

/* Opens (and with STORE_CREATE, creates) the store at `dir`.  On success
 * *out owns the store; close it with store_close().  On failure writes a
 * one-line reason into err (if errlen > 0), e.g. "/x: not a flamefs store"
 * or "/x: schema version 9 is newer than this flamefs understands (1)". */
int store_open(const char *dir, int flags, struct store **out, char *err, size_t errlen);
void store_close(struct store *s); /* accepts NULL */

/* The message for the last failure on `s`.  Owned by `s`; valid until the
 * next call on it. */
const char *store_errmsg(const struct store *s);

/* What store_open() did that a person may want to know, or NULL: that it
 * removed what a killed creation of the store left, or made afresh a
 * directory whose creation an older flamefs left unfinished.  Owned by
 * `s`. */
const char *store_notice(const struct store *s);

/* Where stores report what they do on their own while a call runs: a
 * database connection lost and waited for, each try again, and the
 * recovery ("...: reconnected after 1.6 s").  fn gets one line without a
 * newline, on the thread that made the call; fn NULL (the default) says
 * nothing.  For the whole process: set it once, before opening stores. */
void store_log_to(void (*fn)(void *ctx, const char *line), void *ctx);

/* Where the store is, fit to print: the directory, or the connection
 * string with any password replaced by "***".  Owned by `s`. */
const char *store_where(const struct store *s);

/* The host that series belong to when their key names none: the machine's
 * hostname unless store_set_host() said otherwise.  Owned by `s`. */
const char *store_host(const struct store *s);
/* 0, -EINVAL (empty, longer than 255 bytes, or holds '/' or a control
 * character) or -ENOMEM. */
int store_set_host(struct store *s, const char *host);
/* True when store_set_host() takes `host`: a command line checks a name
 * with it before it opens (and maybe creates) a store. */
bool store_host_valid(const char *host);

/* The store's identity: 32 hex digits, random, fixed at its creation.
 * Push and merge remember copies by it.  Owned by `s`. */
const char *store_id(const struct store *s);

/* Seconds per time bucket, fixed when the store was created. */
uint32_t store_bucket_seconds(const struct store *s);

/* ---- writing -------------------------------------------------------- */

/* Starts a batch.  At most one batch exists per store at a time.  The
 * batch owns everything added to it until store_batch_commit() writes it
 * as one atomic RocksDB WriteBatch.  store_batch_free() on an uncommitted
 * batch discards it and every id it handed out.  Returns NULL on a
 * read-only store, when a batch is already open, or on ENOMEM. */
struct store_batch *store_batch_new(struct store *s);
void store_batch_free(struct store_batch *b); /* accepts NULL */

/* Interns a series, frame or tree node, creating it in the batch if it is
 * new.  Ids are small, sequential and stable once committed. */
int store_batch_series(struct store_batch *b, const struct store_series_key *k, uint32_t *id);
int store_batch_frame(struct store_batch *b, const struct store_frame *f, uint32_t *id);
int store_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id);

/* Names an unnamed frame in place: when the batch commits, committed
 * frame `frame` (of kind STORE_FRAME_UNKNOWN) becomes `named` (any other
 * kind but STORE_FRAME_INLINE, offset 0, the same module and build id),
 * under the same id.  So every stack node, count and window that holds
 * it stays exact and shows the name; two sibling nodes whose frames
 * become one function show as one node in a view, which merges siblings
 * of one name.  A reader sees the names at its next store_refresh(), with
 * the rest of the commit.  Renaming one frame twice in a batch keeps the
 * last.  In a database the frame keeps the content it was committed
 * with as its identity: interning that content again gives this frame
 * (showing the name), and interning `named` gives a frame of its own;
 * a frame another writer named first keeps that name.  0, -EINVAL (a
 * frame not committed or not unnamed, a `named` that breaks the rules
 * above; the message says which), -ENOMEM, or -EOPNOTSUPP (a database
 * of a schema before 7). */
int store_batch_frame_rename(struct store_batch *b, uint32_t frame,
                             const struct store_frame *named);

/* Adds a count for the stack ending at `node`, at time `when` (seconds;
 * bucketed by the store).  Counts for the same (series, bucket, node) are
 * summed in memory and merged into the store by addition. */
int store_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                    uint64_t samples, uint64_t weight);

/* One sample kept whole: the recent tier's record of it. */
struct store_sample {
	int64_t time_us; /* microseconds: Unix time, or perf's clock (before
	                  * STORE_WALL_CLOCK_MIN seconds: time since boot) */
	uint32_t node;   /* the stack's last node */
	uint32_t pid;    /* process (tgid); 0 when unknown */
	uint32_t tid;    /* thread; 0 when unknown */
	uint64_t weight; /* in the series' unit */
	/* Spans (record --span): in a sample of any event, the id of the
	 * innermost span its thread was in (0: none); in a span's own record
	 * (a series of event STORE_EVENT_SPANS, below), the span's id. */
	uint64_t span;
	/* A span's own record only: the id of the span it is nested in (0:
	 * none, or not known); 0 in every other sample. */
	uint64_t parent;
};

/* ---- spans -----------------------------------------------------------
 * A span is a stretch of one thread's time that a program marked (a
 * query, a request; record --span).  Each ended span is one record in
 * a series of event STORE_EVENT_SPANS (unit "nanoseconds") of the
 * process's binary and version, labelled at least span=<name> (the
 * other labels as the thread's samples have them), added with
 * store_batch_sample(): time_us is its start, weight its duration in
 * nanoseconds, pid and tid its thread, span its id, parent its parent's
 * id, and node the chain of span names from the outermost open span
 * down to its own (frames of kind STORE_FRAME_SPAN), with one more frame
 * STORE_SPAN_UNENDED_FRAME under it when the span never ended and was
 * closed at its thread's exit.  So a window's counts of the series are
 * the number of spans that started in it and their total duration, for
 * as long as counts are kept, and the recent tier's detail gives each
 * span's moment, duration and nesting (durations for p50, p99, max;
 * the spans of a trace). */
#define STORE_EVENT_SPANS        "spans"
#define STORE_SPAN_UNENDED_FRAME "[unended]"

/* Adds one sample with its moment.  It is counted at once, like
 * store_batch_add(series, time_us / 1e6, node, 1, weight), in the bucket
 * its time falls in, and its detail (time, pid, tid, weight, node) is
 * kept in the recent tier until store_rollup() forgets it; counts never
 * come from the detail, so a sample is counted exactly once whether its
 * detail is kept or not.  0, -EINVAL (node or series unknown) or
 * -ENOMEM. */
int store_batch_sample(struct store_batch *b, uint32_t series, const struct store_sample *smp);

/* Attributes `bytes` of importer input to a series (for stats). */
int store_batch_input_bytes(struct store_batch *b, uint32_t series, uint64_t bytes);

/* Writes the batch atomically and syncs it.  The batch stays allocated;
 * free it with store_batch_free().  On failure nothing is written. */
int store_batch_commit(struct store_batch *b);

/* ---- reading -------------------------------------------------------- */

/* For a reader: catch up with the writer and load new frames and nodes.
 * Returns 1 when the store changed since the last call, 0 when not. */
int store_refresh(struct store *s);

/* Moves (it is the number of the last commit that renamed frames, 0 when
 * none has) when this handle's frames took names from
 * store_batch_frame_rename(): its own commits, or a reader's refresh.
 * Views built before it moved show the old names. */
uint64_t store_renames(const struct store *s);

/* The latest sequence number seen; it moves whenever something commits. */
uint64_t store_sequence(const struct store *s);

/* Lists every series, sorted by (binary, version, event, host, labels).  *out is a
 * malloc'd array the caller frees with store_series_free(). */
int store_series_list(struct store *s, struct store_series **out, size_t *n);
void store_series_free(struct store_series *list, size_t n);

/* Number of tree nodes, including the root; node ids are 0..count-1. */
uint32_t store_node_count(const struct store *s);
/* Parent and frame of a node.  The root has parent 0 and frame 0. */
int store_node_get(const struct store *s, uint32_t node, uint32_t *parent, uint32_t *frame);
/* Number of frames plus one; frame ids are 1..count-1. */
uint32_t store_frame_count(const struct store *s);
/* Fills *f with pointers owned by the store, valid until store_close()
 * or the next store_refresh(). */
int store_frame_get(const struct store *s, uint32_t frame, struct store_frame *f);
/* Orders frames by where they are: module bytes, then build id bytes
 * (each a shorter prefix first), then offset; 0 for one place. */
int store_frame_place_cmp(const struct store_frame *a, const struct store_frame *b);

/* Calls fn for every count of `series` whose bucket lies in [from, to]
 * (seconds; use INT64_MIN/INT64_MAX for all), in (bucket, node) order.
 * A non-zero return from fn stops the walk and is returned. */
typedef int (*store_count_fn)(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                              uint64_t weight);
int store_series_counts(struct store *s, uint32_t series, int64_t from, int64_t to,
                        store_count_fn fn, void *ctx);
/* A hint before reading the counts of the n series `ids` over [from, to]
 * with store_series_counts(), one after the other in this order: a
 * database sends them all for one query, and each of those calls takes
 * its series' rows from that one reply; any other call on the store
 * first reads what is left of it.  A directory does nothing.  0, or
 * -ENOMEM (the reads then go one by one). */
int store_series_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from, int64_t to);

/* Calls fn for every sample of `series` whose detail the recent tier
 * holds and whose time lies in [from_us, to_us), in time order.  A
 * non-zero return from fn stops the walk and is returned.  Samples of a
 * bucket whose detail was forgotten, and counts added without a time
 * (store_batch_add), are not walked: store_series_counts() has them.
 * Together: for a bucket, counts minus the detail of its samples, per
 * node, is what it holds without a moment. */
typedef int (*store_sample_fn)(void *ctx, const struct store_sample *smp);
int store_series_samples(struct store *s, uint32_t series, int64_t from_us, int64_t to_us,
                         store_sample_fn fn, void *ctx);
/* A hint before reading the detail of the n series `ids` over [from_us,
 * to_us) with store_series_samples(), one after the other in this order:
 * as store_series_prefetch() does for counts, a database sends them all
 * for one query.  Read all the counts, then all the detail (or the other
 * way round): a read of the other kind in between ends the hint, and the
 * reads after it go one by one.  0, or -ENOMEM. */
int store_samples_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from_us,
                           int64_t to_us);

/* ---- the recent tier's window --------------------------------------- */

/* Seconds of detail the recent tier keeps, counted back from the newest
 * sample the store holds on the same clock (Unix time, or perf's clock):
 * the last two hours unless store_set_keep_samples() said otherwise. */
#define STORE_DEFAULT_KEEP_SAMPLES (2 * 3600)
int64_t store_keep_samples(const struct store *s);
/* Writer only; kept in the store.  0 keeps no detail from then on. */
int store_set_keep_samples(struct store *s, int64_t seconds);

struct store_rollup_stats {
	uint64_t slices;  /* (series, bucket) detail records forgotten */
	uint64_t samples; /* samples whose detail went */
	uint64_t bytes;   /* their encoded size */
};

/* Forgets, in one atomic write, the detail of every bucket that ends at
 * or before (newest sample on its clock) - store_keep_samples(): its
 * counts stay as they are.  Writer only, with no batch open.  0, -EROFS,
 * -EBUSY, -ENOMEM or -EIO. */
int store_rollup(struct store *s, struct store_rollup_stats *st);

/* ---- footprint ------------------------------------------------------ */

struct store_footprint {
	uint64_t dir_bytes;    /* every file in the directory, as du sees it */
	uint64_t frames_bytes; /* SST bytes per column family */
	uint64_t nodes_bytes;
	uint64_t counts_bytes;
	uint64_t other_bytes;   /* meta, series */
	uint64_t samples_bytes; /* the recent tier: samples kept whole */
	uint64_t samples;       /* how many samples it holds */
};
int store_footprint(struct store *s, struct store_footprint *out);
/* On-disk bytes of one series' counts (approximate). */
int store_series_disk_bytes(struct store *s, uint32_t series, uint64_t *bytes);
/* Flushes and compacts every column family (writer only). */
int store_compact(struct store *s);

/* ---- retention ------------------------------------------------------ */

/* Times before 2000-01-01 are not wall-clock times: perf's own clock
 * (seconds since boot) gives them. */
#define STORE_WALL_CLOCK_MIN 946684800

struct store_prune_opts {
	int64_t before;       /* drop buckets that end at or before this (seconds) */
	const char *binary;   /* only this binary; NULL: every one */
	const char *version;  /* only this version; NULL: every one */
	bool wall_clock_only; /* leave series on perf's clock alone */
	bool dry_run;         /* count, write nothing */
};

struct store_prune_stats {
	uint64_t series;         /* series that lost buckets */
	uint64_t series_emptied; /* of which nothing is left: no longer listed */
	uint64_t buckets;        /* (series, bucket) count records deleted */
	uint64_t other_clock;    /* series left alone for wall_clock_only */
	uint64_t samples, weight;
};

/* Deletes, in one atomic write, every time bucket of the selected series
 * that lies wholly before o->before, and lowers their totals; a bucket
 * that straddles o->before stays.  A series left with no samples keeps
 * its id (ids stay dense) but is no longer listed; its frames and stack
 * nodes stay in the dictionary.  Writer only, with no batch open.  Fills
 * *st (what was, or with dry_run would be, deleted).  Returns 0, -EROFS,
 * -EBUSY, -ENOMEM or -EIO (store_errmsg() says why). */
int store_prune(struct store *s, const struct store_prune_opts *o, struct store_prune_stats *st);

/* ---- copying between stores: push and merge --------------------------- */

struct store_copy_opts {
	/* Copy only what changed in `src` since the last copy to `dst`
	 * (push); false: everything `src` holds (merge).  Either way the copy
	 * is by content and never counts a sample twice, see store_copy(). */
	bool incremental;
	/* Buckets per transaction; 0: all in one. */
	uint32_t buckets_per_commit;
	/* Called after each commit, when not NULL. */
	void (*progress)(void *ctx, uint64_t buckets_done, uint64_t buckets_total);
	void *ctx;
	/* Optional: what one copy learned of which source frame and node is
	 * which destination one, for the next copy between the same two
	 * stores (a recorder's pushes); without it each copy interns every
	 * frame and node it sends again. */
	struct store_copy_cache *cache;
	/* Also copy the recent tier: each bucket's detail goes with its
	 * counts (and replaces or adds as they do).  Without it only counts
	 * go, which is what a fleet's database wants from 1,000 hosts. */
	bool samples;
};

/* A cache for store_copy_opts.cache (NULL when out of memory); free it
 * with store_copy_cache_free() (NULL does nothing).  It holds only ids a
 * destination has committed, which never change, and applies to the pair
 * of stores (by store id) it was last used with. */
struct store_copy_cache *store_copy_cache_new(void);
void store_copy_cache_free(struct store_copy_cache *cache);

struct store_copy_stats {
	uint64_t series, buckets, commits;
	uint64_t samples, weight; /* summed over the buckets copied */
	uint64_t frames, nodes;   /* offered to dst (it keeps the new ones) */
	uint64_t renamed;         /* dst's frames named by names src found later */
	bool nothing_new;         /* src had nothing dst lacked */
	/* What the copy did about the source's identity, as one line for
	 * the user ("" when nothing was unusual): a restored copy sent
	 * whole again, or a clone given an identity of its own. */
	char note[512];
};

/* Copies `src` into `dst` (either backend each) by content: frames, stack
 * nodes and series keys (host included) are matched by what they are, not
 * by id.  A database replaces, per source store, each (series, bucket) it
 * receives with the source's whole value, so a copy interrupted at any
 * point, or repeated, never counts a sample twice; it records per source
 * how far the copies reached, in the same transaction.  A directory adds
 * counts instead: it refuses a source it already took whose contents have
 * changed since (-EEXIST), and does nothing for an unchanged one.  `src`
 * remembers, per destination store id, where the last copy ended, so that
 * an incremental copy reads only the buckets changed since.  `dst` must be
 * writable with no batch open.  Fills *st.  0 or -errno; on failure err
 * (if errlen > 0) says why, naming the store at fault. */
int store_copy(struct store *dst, struct store *src, const struct store_copy_opts *o,
               struct store_copy_stats *st, char *err, size_t errlen);

#endif
