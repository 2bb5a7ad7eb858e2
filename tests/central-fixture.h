/*
 * central-fixture.h — what the central store's unit tests share
 * (central-fixture.c): the check counters, the server, SQL, stores and
 * series by name, counts and samples as text or vectors.  Test code: it
 * prints.
 */
#ifndef FLAMEFS_CENTRAL_FIXTURE_H
#define FLAMEFS_CENTRAL_FIXTURE_H

#include "samples-block-internal.h"
#include "store-internal.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "check.h"

#define T0   1700000040 /* a bucket start: 28333334 * 60 */
#define US   1000000LL
#define T0US ((int64_t)T0 * US)

extern int central_failures;      /* tests that failed */
extern int central_checks_before; /* check_failures when the running test began */
#define test_failed (check_failures != central_checks_before)
/* The server: its socket directory, user and port (NULL: the default). */
extern const char *pghost, *pguser, *pgport;

/* The connection string of database db (a static buffer). */
char *uri(const char *db);
/* A notice processor that says nothing. */
void quiet(void *arg, const char *message);
/* Runs SQL on db; the first value of the last result (a static buffer),
 * "" when none, NULL on failure (counted). */
const char *sql(const char *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Every row of a query, "a b c" per line (malloc'd); NULL on failure. */
char *sql_rows(const char *db, const char *q);
/* Drops and creates database db; run() drops it again when the test ends. */
void fresh_db(const char *db);
/* The store of database db opened with flags, or NULL (counted). */
struct store *open_ok(const char *db, int flags);
uint32_t frame(struct store_batch *b, const char *name);
/* Interns a folded stack ("a;b;c") and returns its leaf node. */
uint32_t stack(struct store_batch *b, const char *folded);
/* The series (host, binary, "1", "cpu-clock", "nanoseconds"). */
uint32_t series(struct store_batch *b, const char *host, const char *binary);
/* The folded name of node, root first. */
void node_name(struct store *s, uint32_t node, char *out, size_t len);

struct dump {
	struct store *s;
	char buf[4096];
	size_t len;
	int64_t last_bucket;
	uint32_t last_node;
	bool ordered;
};

int dump_fn(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight);
/* The counts of series id in [from, to) as "bucket stack samples weight"
 * lines (a static buffer). */
const char *dump(struct store *s, uint32_t id, int64_t from, int64_t to);
/* The id of the listed series of (host, binary), or 0; *out (when not
 * NULL) gets its numbers. */
uint32_t find_series(struct store *s, const char *host, const char *binary,
                     struct store_series *out);
/* Opening conn with flags fails with want and a message holding needle
 * and not `never` (when not NULL). */
void expect_open_error(const char *conn, int flags, int want, const char *needle,
                       const char *never);

/* ---- the recent tier ---- */
struct svec {
	struct store_sample *v;
	size_t n, cap;
	int stop_after; /* > 0: the callback returns 7 after that many */
};

void svec_add(struct svec *a, const struct store_sample *smp);
int svec_fn(void *ctx, const struct store_sample *smp);
int smp_cmp(const void *pa, const void *pb);
void svec_sort(struct svec *a);
struct svec svec_window(const struct svec *a, int64_t from, int64_t to);
/* The samples of series id in [from, to), as store_series_samples() gives them. */
struct svec walk(struct store *s, uint32_t id, int64_t from, int64_t to);
bool same_detail(const struct svec *got, struct svec *want, const char *what);
/* xorshift64 */
uint64_t rnd(uint64_t *x);
/* A sample in [from_us, from_us + span_us) on one of the nodes. */
struct store_sample gen_sample(uint64_t *x, int64_t from_us, int64_t span_us, const uint32_t *nodes,
                               int nnodes);

/* Runs one test (unless $FLAMEFS_TEST_ONLY names another) and prints
 * "PASS name" or "FAIL name". */
void run(const char *name, void (*fn)(void));

/* A test of a program that runs fixture_main(). */
struct fixture_test {
	const char *name;
	void (*fn)(void);
};

/* The main of a unit test with directory tests and database tests:
 * makes `tmpdir` (a mkdtemp() template), runs dir_tests (a NULL name
 * ends them) when argv holds no server, else db_tests on the server
 * argv names (SOCKET_DIR USER [PORT]; a visible SKIP, 77, when it does
 * not answer), and removes tmpdir.  Returns the exit status. */
int fixture_main(int argc, char **argv, char *tmpdir, const struct fixture_test *dir_tests,
                 const struct fixture_test *db_tests);

/* The tests, by file. */
void test_write_read(void);
void test_two_writers(void);
void test_collision(void);
void test_copy_entries(void);
void test_copy_cache(void);
void test_prune(void);
void test_refusals(void);
void test_reconnect(void);
void test_hostile(void);
/* test-central-samples.c */
void test_samples(void);
void test_samples_copy(void);
void test_samples_rollup(void);
void test_samples_snapshot(void);
/* test-central-tier.c */
void test_samples_upgrade(void);
void test_samples_prefetch(void);
void test_samples_damaged(void);
void test_samples_push(void);
void test_push_moments(void);
void test_readme_sql(void);
void test_samples_prune(void);
void test_samples_two_writers(void);
void test_samples_block(void);
/* test-central-labels.c */
void test_labels(void);
void test_labels_upgrade(void);
void test_labels_push(void);
void test_labels_push_fold(void);

#endif
