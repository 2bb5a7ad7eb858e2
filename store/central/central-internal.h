/*
 * central-internal.h — what the central backend's files share and nothing outside
 * store/central/ may use.
 *
 * The central backend keeps a store in a PostgreSQL database through
 * libpq (schema and SQL in store/README.md, "Central store").  Like the
 * embedded backend, an open store holds every frame and tree node in
 * memory, in arrays indexed by the database's own ids, which are dense
 * and assigned in commit order; a writer also keeps each one's 128-bit
 * content hash behind an open-addressing table, so that interning is
 * local and a commit only has to reconcile what other writers added
 * since.  A batch appends provisional frames, nodes and series to those
 * arrays and collects counts in a vector; the commit (commit.c) takes
 * the writers' advisory lock, renumbers the batch after whatever other
 * writers committed meanwhile, and writes everything in one transaction.
 *
 * One file per job: conn.c (connection string, password hiding, errors,
 * statements, reconnecting), schema.c (creating, checking and upgrading
 * the schema), hashing.c (content hashes, frames and nodes in memory,
 * loading them), central.c (open, close, refresh, the table of functions),
 * staging.c (building a batch), commit.c (its transaction), write.c (the
 * rows it writes), read.c (listing
 * series, reading counts), samples.c (the recent tier: detail in a batch,
 * reading it, its window and the roll-up), maint.c (prune, compact,
 * footprint) and cursors.c (what store_copy() needs).
 */
#ifndef FLAMEFS_STORE_CENTRAL_H
#define FLAMEFS_STORE_CENTRAL_H

#include "store-internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/* libpq is not linked: pq.c loads it with dlopen() when the first
 * database store is opened, so that the commands that use a directory
 * store (nearly all of them) do not map and relocate libpq and the ~20
 * libraries it needs (TLS, Kerberos, LDAP) at every start.  The files of
 * this backend call PQ functions by their names, which the macros below
 * turn into the pointers central_pq_load() resolved; central_open()
 * calls it before anything else. */
#define CENTRAL_PQ_FUNCS(X)                                                                        \
	X(PQclear)                                                                                 \
	X(PQcmdTuples)                                                                             \
	X(PQconnectdbParams)                                                                       \
	X(PQconninfoFree)                                                                          \
	X(PQconninfoParse)                                                                         \
	X(PQerrorMessage)                                                                          \
	X(PQexec)                                                                                  \
	X(PQexecParams)                                                                            \
	X(PQfformat)                                                                               \
	X(PQfinish)                                                                                \
	X(PQfreemem)                                                                               \
	X(PQgetResult)                                                                             \
	X(PQgetisnull)                                                                             \
	X(PQgetlength)                                                                             \
	X(PQgetvalue)                                                                              \
	X(PQnfields)                                                                               \
	X(PQntuples)                                                                               \
	X(PQputCopyData)                                                                           \
	X(PQputCopyEnd)                                                                            \
	X(PQreset)                                                                                 \
	X(PQresultErrorField)                                                                      \
	X(PQresultErrorMessage)                                                                    \
	X(PQresultStatus)                                                                          \
	X(PQsendQueryParams)                                                                       \
	X(PQsetNoticeProcessor)                                                                    \
	X(PQsetSingleRowMode)                                                                      \
	X(PQstatus)                                                                                \
	X(PQtransactionStatus)                                                                     \
	X(PQunescapeBytea)

struct central_pq {
#define CENTRAL_PQ_FIELD(f) __typeof__(f) *f;
	CENTRAL_PQ_FUNCS(CENTRAL_PQ_FIELD)
#undef CENTRAL_PQ_FIELD
};

/* Set once by central_pq_load(), read-only after. */
extern struct central_pq central_pq;

/* Loads libpq and resolves CENTRAL_PQ_FUNCS, once per process (later
 * calls return the first one's result); 0, or -ENOTSUP with a message
 * in err. Thread-safe. */
int central_pq_load(char *err, size_t errlen);

#ifndef CENTRAL_PQ_NO_MACROS
#define PQclear              (central_pq.PQclear)
#define PQcmdTuples          (central_pq.PQcmdTuples)
#define PQconnectdbParams    (central_pq.PQconnectdbParams)
#define PQconninfoFree       (central_pq.PQconninfoFree)
#define PQconninfoParse      (central_pq.PQconninfoParse)
#define PQerrorMessage       (central_pq.PQerrorMessage)
#define PQexec               (central_pq.PQexec)
#define PQexecParams         (central_pq.PQexecParams)
#define PQfformat            (central_pq.PQfformat)
#define PQfinish             (central_pq.PQfinish)
#define PQfreemem            (central_pq.PQfreemem)
#define PQgetResult          (central_pq.PQgetResult)
#define PQgetisnull          (central_pq.PQgetisnull)
#define PQgetlength          (central_pq.PQgetlength)
#define PQgetvalue           (central_pq.PQgetvalue)
#define PQnfields            (central_pq.PQnfields)
#define PQntuples            (central_pq.PQntuples)
#define PQputCopyData        (central_pq.PQputCopyData)
#define PQputCopyEnd         (central_pq.PQputCopyEnd)
#define PQreset              (central_pq.PQreset)
#define PQresultErrorField   (central_pq.PQresultErrorField)
#define PQresultErrorMessage (central_pq.PQresultErrorMessage)
#define PQresultStatus       (central_pq.PQresultStatus)
#define PQsendQueryParams    (central_pq.PQsendQueryParams)
#define PQsetNoticeProcessor (central_pq.PQsetNoticeProcessor)
#define PQsetSingleRowMode   (central_pq.PQsetSingleRowMode)
#define PQstatus             (central_pq.PQstatus)
#define PQtransactionStatus  (central_pq.PQtransactionStatus)
#define PQunescapeBytea      (central_pq.PQunescapeBytea)
#endif

/* The schema this flamefs writes (and a writer upgrades an older one to),
 * and the oldest its readers read without an upgrade. */
#define CENTRAL_SCHEMA_VERSION    7
#define CENTRAL_SCHEMA_READS_FROM 2

/* pg_advisory_xact_lock() key that serializes writers: "flamefs\0" read
 * as a big-endian integer. */
#define CENTRAL_WRITER_LOCK 0x666c616d65667300LL

/* How long a commit keeps reconnecting to a server that went away, unless
 * FLAMEFS_PG_RETRY_SECONDS says otherwise. */
#define CENTRAL_RETRY_SECONDS 60.0

#define CENTRAL_ERRLEN 1024

/* Frames and nodes per row of frame_runs / node_runs, at most. */
#define CENTRAL_RUN 4096u

/* A 128-bit content hash (XXH3-128 in its canonical, big-endian byte
 * order); writers compute them from what they load, the database keeps
 * none. */
struct hash128 {
	uint8_t b[16];
};

/* An open-addressing table of ids keyed by 64 bits of a content hash:
 * slots hold id + 1 (0: empty), at most half full. */
struct htab {
	uint32_t *slots;
	size_t mask; /* slots - 1; 0 when unallocated */
	size_t count;
};

/* A series the writer knows, by its database id (or, while a batch holds
 * it, a provisional id past every known one). */
struct cseries {
	char *host, *binary, *version, *event, *unit; /* malloc'd */
	char *labels;                                 /* malloc'd canonical labels, "" for none */
	bool counted; /* its labels count against STORE_LABEL_SETS_MAX */
	uint32_t id;
	/* the open batch's additions */
	bool touched;
	int64_t first_seen, last_seen;
	uint64_t samples, weight, input_bytes;
	/* The first and last moment (microseconds) the batch gives it: of
	 * counts (batch_add's `when`; has_add) and exact ones (samples and
	 * detail; has_exact); recent: the samples whose detail the batch
	 * keeps; detailed: a copy replaces its detail somewhere. */
	bool has_add, has_exact, detailed;
	int64_t add_first_us, add_last_us, exact_first_us, exact_last_us;
	/* A copy's source moments (batch_moments; valid when has_moments):
	 * they stand in for the counts' `when`s. */
	bool has_moments;
	int64_t moments_first_us, moments_last_us;
	uint64_t recent;
};

/* A sample whose detail a batch keeps; its bucket follows from its
 * time. */
struct detail_ent {
	uint32_t series;
	struct store_sample smp;
};

/* A (series, bucket) whose detail a copy's batch replaces (batch_detail,
 * also with no samples). */
struct detail_key {
	uint32_t series;
	int64_t bucket;
};

struct count_ent {
	uint32_t series, node;
	int64_t bucket; /* bucket start, seconds */
	uint64_t samples, weight;
};

/* One prefetch stream: a single-row-mode query over a list of series
 * whose rows come in list order, handed out one series per call. */
struct pg_stream {
	bool on, done;
	uint32_t *ids;    /* owned; the listed series */
	size_t n, pos;    /* pos: the next series to hand out */
	int64_t from, to; /* the window the stream was opened for */
	PGresult *next;   /* a row read ahead: the next series' first */
};

struct pg {
	struct store base; /* first: ops is &central_ops */
	PGconn *conn;
	char *conninfo; /* as given: it may hold the password; never shown */
	bool readonly;
	/* A REPEATABLE READ READ ONLY transaction is open: a reader's, from
	 * its open or last refresh to the next (every read in between sees
	 * one state of the database: a commit whole or not at all), or a
	 * copy's (store_copy(), central_snapshot()).  snapshot_read: a read
	 * other than the catch-up has used the reader's snapshot. */
	bool snapshot, snapshot_copy, snapshot_read;
	char errmsg[CENTRAL_ERRLEN];
	char store_id[33];
	uint32_t bucket_seconds;
	uint64_t seq;       /* the commit counter loaded */
	char writer_id[33]; /* random, this handle's row in `writers` */

	/* Frames 0..nframes-1 (0 is "no frame"); each one's strings live in
	 * one malloc'd block, blob[id]. */
	struct store_frame *frames;
	char **blob;
	struct hash128 *fhash; /* writer only */
	uint32_t nframes, frames_cap;
	struct htab frame_tab; /* writer only */

	/* Nodes 0..nnodes-1; node 0 is the root. */
	uint32_t *node_parent, *node_frame;
	struct hash128 *nhash; /* writer only */
	uint32_t nnodes, nodes_cap;
	struct htab node_tab; /* writer only */

	/* Series the writer knows (writer only), and by id. */
	struct cseries *series;
	uint32_t nseries, series_cap;
	struct htab series_tab; /* keyed by a hash of host, binary, version, event, labels */
	uint32_t *series_by_id; /* id -> index + 1 */
	/* The last (host, binary, version, event) found at the bound on label
	 * sets, as the index of one of its series + 1 (0: none); a batch's
	 * rollback forgets it. */
	uint32_t full_base;
	uint32_t series_by_id_len; /* ids below it */

	struct pg_batch *batch; /* the open batch, if any */
	/* Names found later (frame_names, schema 7; names.c): shown[id] is
	 * what frame id shows when it was named (malloc'd), else NULL, for
	 * ids below nshown; frames[id] keeps the content it was committed
	 * with, its identity for good.  renames_upto: the last commit whose
	 * names are loaded (store_renames()). */
	struct store_frame **shown;
	uint32_t nshown;
	uint64_t renames_upto;

	/* The schema read at open (and by a reader at each catch-up):
	 * below 3 the database has no recent tier, and reads of it find no
	 * detail. */
	long schema;
	/* store_keep_samples(): flamefs_meta's keep_samples, read with the
	 * commit counter. */
	int64_t keep_samples;

	/* store_series_prefetch(): the stream of the listed series' counts
	 * (read.c), its window in buckets; while on, the connection is busy
	 * with it, and every other statement ends it first
	 * (central_prefetch_end). */
	struct pg_stream pf;
	/* store_samples_prefetch(): the same for the listed series'
	 * detail (samples.c), its window in µs; at most one of pf and spf
	 * is on. */
	struct pg_stream spf;
};

/* A frame a batch names (store_batch_frame_rename()): f is what it will
 * show, malloc'd as names.c's shown frames are. */
struct central_rename {
	uint32_t id;
	struct store_frame *f;
};

struct pg_batch {
	struct store_batch base; /* first */
	struct pg *s;
	struct central_rename *renames;
	size_t nrenames, renames_cap;
	/* Where the store's arrays stood when the batch started (or last
	 * committed); everything at or above is the batch's. */
	uint32_t frame_base, node_base, series_base;
	uint32_t next_series_id; /* provisional ids for new series */
	struct count_ent *counts;
	size_t ncounts, counts_cap;
	/* The recent tier's detail, and in a copy the (series, bucket)s
	 * whose detail it replaces. */
	struct detail_ent *detail;
	size_t ndetail, detail_cap;
	struct detail_key *dkeys;
	size_t ndkeys, dkeys_cap;
	/* batch_source(): the batch's counts replace the source's */
	bool replace;
	/* A commit failed half way through renumbering it: it holds none of
	 * its frames and nodes any more, so it is refused (commit.c). */
	bool broken;
	char source[64]; /* its key: a store id, or a clone's "id~16 hex digits" */
	uint64_t upto;
	/* batch_lineage(): recorded in flamefs_meta's "lineage:<source row>" */
	struct {
		bool has_nonce, resync;
		uint64_t nonce;
		char split_from[64]; /* "": none */
		uint64_t split_before;
	} mark;
	uint64_t expect; /* the source's record the commit expects to find */
	char token[33];  /* random, recorded with the commit */
};

static inline struct pg *pg_of(struct store *s)
{
	return (struct pg *)s;
}

static inline const struct pg *pg_cof(const struct store *s)
{
	return (const struct pg *)s;
}

static inline struct pg_batch *pg_batch_of(struct store_batch *b)
{
	return (struct pg_batch *)b;
}

extern const struct store_ops central_ops;
void central_close_store(struct store *s);

/* ---- conn.c ---------------------------------------------------------- */

/* The connection string fit to print: any password replaced by "***".
 * malloc'd, or NULL on ENOMEM. */
char *central_redact(const char *conninfo);
void central_seterr(struct pg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* libpq's message for the connection (or a result), on one line, into
 * buf. */
const char *central_pqerr(PGconn *c, const PGresult *res, char *buf, size_t len);
/* Connects s->conn to s->conninfo; "…: cannot connect: reason". */
int central_connect(struct pg *s);
/* Runs `sql` with text parameters (NULL: SQL NULL) and results in
 * `binary` or text format.  On success returns 0 and *out (when out is
 * not NULL; else the result is cleared); on failure sets the message
 * "<where>: <what>: <SQL error>" and returns -ECONNRESET when the
 * connection is gone, else -EIO. */
int central_exec(struct pg *s, const char *what, const char *sql, int n, const char *const *vals,
                 bool binary, PGresult **out);
/* The commit counter of flamefs_meta: `count` adds one (a commit, in the
 * caller's transaction) and gives the new value, else it is read.  0, or
 * -errno with the message set ("store is damaged" when there is none). */
int central_commit_counter(struct pg *s, bool count, uint64_t *value);
/* central_exec for a statement that may run twice (a read outside any
 * transaction): when the connection is lost, waits for the server as a
 * commit does (central_reconnect) and runs it again.  Inside a
 * transaction (a snapshot), a lost connection is an error, as it is for
 * central_exec. */
int central_exec_again(struct pg *s, const char *what, const char *sql, int n,
                       const char *const *vals, bool binary, PGresult **out);
/* Sends a COPY ... FROM STDIN statement and the `len` bytes of `data`
 * (binary COPY format). */
int central_copy_in(struct pg *s, const char *what, const char *sql, const void *data, size_t len);
/* Waits and reconnects until the server answers or the retry time runs
 * out (from *deadline_start, a CLOCK_MONOTONIC time in seconds). */
int central_reconnect(struct pg *s, double start, double *delay);
double central_now(void);
double central_retry_seconds(void);
/* 32 random hex digits. */
int central_random_hex(char out[33]);
/* Series keys are bytea (a key need not be UTF-8): the hex digits of a
 * string for `decode($n, 'hex')` (malloc'd; NULL when out of memory), and
 * a bytea value of a text-format result as a string (malloc'd; NULL when
 * out of memory or when it holds a NUL byte, which no key has). */
char *central_hex_of(const char *str);
char *central_str_of_bytea(const PGresult *res, int row, int col);

/* What the server sent, checked (a damaged or hostile database must not
 * make the reader write out of bounds or believe a wrong number): the
 * text value at (row, col) as a decimal number, all of it digits (an
 * optional '-' for the signed one), within range (at most `max`); a
 * binary value of exactly `len` bytes (NULL otherwise).  On failure the
 * message names `what`: "...: unexpected reply from the server: a series
 * id (row R, column C) is not what a flamefs store holds", -EIO. */
int central_value_u64(struct pg *s, const PGresult *res, int row, int col, uint64_t max,
                      const char *what, uint64_t *out);
int central_value_i64(struct pg *s, const PGresult *res, int row, int col, const char *what,
                      int64_t *out);
const char *central_value_bin(struct pg *s, const PGresult *res, int row, int col, int len,
                              const char *what);

/* Big-endian readers for binary results. */
static inline uint32_t be32(const char *p)
{
	const uint8_t *u = (const uint8_t *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static inline uint64_t be64(const char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* ---- schema.c -------------------------------------------------------- */

/* Checks (and with STORE_CREATE creates, or as a writer upgrades) the
 * schema, and reads the meta rows into s. */
int central_schema(struct pg *s, int flags);
/* A reader's catch-up, in its transaction: the commit counter into *seq,
 * and the meta rows that may move under it (schema, keep_samples).  A
 * schema a reader cannot read any more is an error. */
int central_meta_refresh(struct pg *s, uint64_t *seq);

/* ---- hashing.c -------------------------------------------------------- */

void central_frame_hash(const struct store_frame *f, struct hash128 *h);
void central_node_hash(const struct hash128 *parent, const struct hash128 *frame,
                       struct hash128 *h);
uint64_t central_hash64(const struct hash128 *h);
bool central_frame_equal(const struct store_frame *a, const struct store_frame *b);
/* Table operations; keys are 64-bit hashes.  htab_full(): the next add
 * needs htab_rebuild() first, which re-adds ids 0..n-1 by key(s, id). */
bool htab_full(const struct htab *t);
int htab_rebuild(struct htab *t, uint32_t n, uint64_t (*key)(const struct pg *, uint32_t),
                 const struct pg *s);
void htab_add(struct htab *t, uint64_t key, uint32_t id);
void htab_free(struct htab *t);
/* Appends a frame (copying its strings) / node with the given hash;
 * indexes it when the store is a writer.  0 or -ENOMEM. */
int central_frame_append(struct pg *s, const struct store_frame *f, const struct hash128 *h);
int central_node_append(struct pg *s, uint32_t parent, uint32_t frame, const struct hash128 *h);
/* Looks a frame / node up by hash: its id, or UINT32_MAX. */
uint32_t central_frame_find(const struct pg *s, const struct hash128 *h);
uint32_t central_node_find(const struct pg *s, const struct hash128 *h);
/* Drops frames and nodes from `frames` / `nodes` on (a batch's). */
void central_truncate(struct pg *s, uint32_t frames, uint32_t nodes);
/* Loads the frames and nodes with ids at or past what s holds, inside a
 * transaction the caller opened. */
int central_load_new(struct pg *s);
/* conn.c: whether a connection failure's message says the server is
 * there but restarting (shutting down, starting up, recovering). */
bool central_restarting(const char *msg);
void central_intern_free(struct pg *s);
void central_hex(const struct hash128 *h, char out[33]);

/* ---- write.c: the rows a commit writes, inside its transaction ---------- */
/* A series id the server sent, at (row, col) of res. */
int central_series_id(struct pg *s, const PGresult *res, int row, int col, uint32_t *id);
/* COPYs the batch's new frames and nodes (ids from its bases on). */
int central_copy_frames_nodes(struct pg_batch *b);
/* Writes the batch's counts, detail, input bytes and series totals under
 * commit number `commit`; ids[] are the database ids of the series the
 * batch made (commit.c), `source` the copy's sources.id ("0" when it is
 * no copy). */
int central_write_counts(struct pg_batch *b, const uint32_t *ids, int64_t commit,
                         const char *source);

/* ---- staging.c / commit.c ---------------------------------------------- */

struct cseries *central_series_by_id(struct pg *s, uint32_t id);
int central_series_index(struct pg *s, uint32_t idx);
void central_batch_reset(struct pg_batch *b);
/* Sorts a batch's counts by (series, bucket, node), summing equal keys. */
void central_counts_sum(struct pg_batch *b);
void central_series_clear(struct cseries *r);
int central_load_series(struct pg *s);

/* ---- the entries of central_ops ---------------------------------------- */

struct store_batch *central_batch_new(struct store *s);
void central_batch_free(struct store_batch *b);
int central_batch_series(struct store_batch *b, const struct store_series_key *k, uint32_t *id);
int central_batch_frame(struct store_batch *b, const struct store_frame *f, uint32_t *id);
int central_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id);
int central_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                      uint64_t samples, uint64_t weight);
/* staging.c: batch_add's work, the series' moment given in
 * microseconds: a sample's own time (exact), or batch_add's `when`. */
int central_batch_count(struct pg_batch *b, uint32_t series, int64_t when, uint32_t node,
                        uint64_t samples, uint64_t weight, int64_t at_us, bool exact);
/* staging.c: a series' moment in the batch (see struct cseries). */
void central_series_moment(struct cseries *r, int64_t at_us, bool exact);
int central_batch_input_bytes(struct store_batch *b, uint32_t series, uint64_t bytes);
int central_batch_commit(struct store_batch *b);
int central_batch_source(struct store_batch *b, const char *source, uint64_t expect, uint64_t upto);
int central_refresh(struct store *s);
int central_series_list(struct store *s, struct store_series **out, size_t *n);
int central_series_counts(struct store *s, uint32_t series, int64_t from, int64_t to,
                          store_count_fn fn, void *ctx);
int central_series_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from,
                            int64_t to);
/* read.c: ends a prefetch still streaming (reads what is left of it),
 * of counts or of samples. */
void central_prefetch_end(struct pg *s);
/* read.c: the steps both prefetch streams share. central_stream_open
 * sends `sql` ($1 the ids as an int4[], $2..$4 from w) in single-row
 * mode and turns `st` on; it returns -ENOMEM, or 0 with `st` still off
 * when the query could not be sent (the reads then go one by one).
 * central_stream_take hands each row of `series` (the next listed) to
 * `row`, which returns the reading's error so far; it returns that
 * error, or -EIO naming `what` when the stream fails. central_stream_end
 * reads what is left and frees the list. */
typedef int (*central_stream_row_fn)(struct pg *s, uint32_t series, const PGresult *res, void *arg);
int central_stream_open(struct pg *s, struct pg_stream *st, const uint32_t *ids, size_t n,
                        const char *sql, const char *const w[3]);
int central_stream_take(struct pg *s, struct pg_stream *st, uint32_t series, const char *what,
                        central_stream_row_fn row, void *arg);
void central_stream_end(struct pg *s, struct pg_stream *st);
/* samples.c: the recent tier's entries, and ending its stream. */
int central_batch_sample(struct store_batch *b, uint32_t series, const struct store_sample *smp);
int central_batch_moments(struct store_batch *b, uint32_t series, int64_t first_us,
                          int64_t last_us);
int central_batch_detail(struct store_batch *b, uint32_t series, int64_t bucket_start,
                         const struct store_sample *v, size_t n);
int central_series_samples(struct store *s, uint32_t series, int64_t from_us, int64_t to_us,
                           store_sample_fn fn, void *ctx);
int central_samples_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from_us,
                             int64_t to_us);
void central_samples_prefetch_end(struct pg *s);
int64_t central_keep_samples(const struct store *s);
int central_set_keep_samples(struct store *s, int64_t seconds);
int central_rollup(struct store *s, struct store_rollup_stats *st);
/* The bucket start (seconds) of a time in microseconds, and a time in
 * seconds as microseconds (clamped far from the ends of int64). */
int64_t central_bucket_of_us(const struct pg *s, int64_t time_us);
int64_t central_us_of(int64_t seconds);
int central_footprint(struct store *s, struct store_footprint *out);
int central_series_disk_bytes(struct store *s, uint32_t series, uint64_t *bytes);
int central_compact(struct store *s);
int central_prune(struct store *s, const struct store_prune_opts *o, struct store_prune_stats *st);
int central_changes(struct store *s, uint64_t since, uint64_t *upto,
                    int (*fn)(void *ctx, uint32_t series, int64_t bucket_start), void *ctx);
int central_source_cursor(struct store *s, const char *source, uint64_t *upto);
int central_source_records(struct store *s, const char *base,
                           int (*fn)(void *ctx, const struct source_record *r), void *ctx);
int central_batch_lineage(struct store_batch *b, const struct source_mark *m);
/* Whether `key` is a source key: 32 hex digits, or a clone's 32 + "~" + 16. */
bool central_source_key_ok(const char *key);
int central_dest_cursor(struct store *s, const char *dest, uint64_t *upto);
int central_snapshot(struct store *s, bool begin);
/* central.c: a reader whose snapshot's connection died before anything but
 * the catch-up read in it waits for the server (central_reconnect) and
 * takes a new snapshot: 0, or -errno with the message set. */
int central_reader_recover(struct pg *s);
int central_set_dest_cursor(struct store *s, const char *dest, uint64_t upto);

/* ---- names.c: names found later ------------------------------------------ */

/* What frame id shows: its name when one was found later, else its
 * committed content.  Owned by s. */
const struct store_frame *central_frame_shown(const struct pg *s, uint32_t id);
int central_batch_frame_rename(struct store_batch *b, uint32_t frame,
                               const struct store_frame *named);
/* Drops the batch's renames (a reset or free). */
void central_batch_renames_reset(struct pg_batch *b);
/* Inside the commit's transaction: the batch's renames as rows of
 * frame_names under `commit` (a frame named already keeps its name). */
int central_names_write(struct pg_batch *b, int64_t commit);
/* After the commit: the batch's renames become what its frames show. */
int central_names_applied(struct pg_batch *b, int64_t commit);
/* Loads the names committed after s->renames_upto, inside the caller's
 * transaction (or on its own). */
int central_load_names(struct pg *s);
void central_names_free(struct pg *s);
uint64_t central_renames(const struct store *s);
int central_renames_since(struct store *s, uint64_t since, uint64_t upto,
                          int (*fn)(void *ctx, uint32_t frame, uint64_t old_offset), void *ctx);

#endif
