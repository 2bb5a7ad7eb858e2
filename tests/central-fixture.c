/*
 * central-fixture.c — what the central store's unit tests share (the
 * test-central program is built from test-central.c, which runs them,
 * test-central-samples.c, test-central-tier.c and test-central-labels.c):
 * the server and a fresh database per test, SQL on it, stores opened,
 * stacks and series made by name, counts dumped as text, and the recent
 * tier's samples collected and compared.  Test code: it prints.
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int central_failures;
int central_checks_before; /* check_failures when the running test began */
const char *pghost, *pguser, *pgport;

/* ---- the server --------------------------------------------------------------- */

char *uri(const char *db)
{
	static char buf[8][512];
	static int next;
	char *b = buf[next++ % 8];

	snprintf(b, 512, "postgresql:///%s?host=%s&user=%s%s%s", db, pghost, pguser,
	         pgport ? "&port=" : "", pgport ? pgport : "");
	return b;
}

void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Runs SQL on database db; returns the first value of the result (a
 * static buffer) or NULL on failure. */
const char *sql(const char *db, const char *fmt, ...)
{
	static char out[4096];
	char q[4096];
	va_list ap;
	PGconn *c = PQconnectdb(uri(db));
	PGresult *res;
	const char *r = NULL;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "  cannot connect to %s: %s", db, PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexec(c, q);
	if (PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK) {
		snprintf(out, sizeof(out), "%s",
		         PQntuples(res) > 0 && PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
		r = out;
	} else {
		fprintf(stderr, "  %s: %s", q, PQerrorMessage(c));
	}
	PQclear(res);
	PQfinish(c);
	return r;
}

/* The databases fresh_db() made for the running test: run() drops them
 * when the test ends, so that the server's disk holds one test's at a
 * time (a copy of template1's files each). */
static char made[32][64];
static int nmade;

void fresh_db(const char *db)
{
	int i;

	sql("postgres", "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
	sql("postgres", "CREATE DATABASE %s STRATEGY = FILE_COPY", db);
	for (i = 0; i < nmade && strcmp(made[i], db); i++)
		;
	if (i == nmade && nmade < (int)(sizeof(made) / sizeof(made[0])) &&
	    strlen(db) < sizeof(made[0]))
		snprintf(made[nmade++], sizeof(made[0]), "%s", db);
}

/* ---- helpers --------------------------------------------------------------------- */

struct store *open_ok(const char *db, int flags)
{
	struct store *s = NULL;
	char err[512];
	int r = store_open(uri(db), flags, &s, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "  open %s: %s\n", db, err);
		check_failures++;
		return NULL;
	}
	return s;
}

uint32_t frame(struct store_batch *b, const char *name)
{
	struct store_frame f = {.name = name, .name_len = strlen(name), .kind = STORE_FRAME_USER};
	uint32_t id = 0;

	CHECK(store_batch_frame(b, &f, &id) == 0);
	return id;
}

/* Interns the stack "a;b;c" and returns its leaf node. */
uint32_t stack(struct store_batch *b, const char *folded)
{
	char buf[256], *save = NULL;
	uint32_t node = STORE_ROOT_NODE;

	snprintf(buf, sizeof(buf), "%s", folded);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
		CHECK(store_batch_node(b, node, frame(b, t), &node) == 0);
	return node;
}

uint32_t series(struct store_batch *b, const char *host, const char *binary)
{
	struct store_series_key k = {.host = host,
	                             .binary = binary,
	                             .version = "1",
	                             .event = "cpu",
	                             .unit = "nanoseconds"};
	uint32_t id = 0;

	CHECK(store_batch_series(b, &k, &id) == 0);
	return id;
}

/* The folded name of a node ("a;b;c"). */
void node_name(struct store *s, uint32_t node, char *out, size_t len)
{
	char parts[32][64];
	int n = 0;
	size_t o = 0;

	out[0] = '\0';
	while (node != STORE_ROOT_NODE && n < 32) {
		uint32_t parent, fr;
		struct store_frame f;

		if (store_node_get(s, node, &parent, &fr) < 0 || store_frame_get(s, fr, &f) < 0) {
			snprintf(out, len, "?");
			return;
		}
		snprintf(parts[n++], 64, "%.*s", (int)f.name_len, f.name);
		node = parent;
	}
	while (n-- > 0)
		o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ";" : "", parts[n]);
}

int dump_fn(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct dump *d = ctx;
	char name[512];

	if (d->len &&
	    (bucket < d->last_bucket || (bucket == d->last_bucket && node <= d->last_node)))
		d->ordered = false;
	d->last_bucket = bucket;
	d->last_node = node;
	node_name(d->s, node, name, sizeof(name));
	d->len += (size_t)snprintf(d->buf + d->len, sizeof(d->buf) - d->len,
	                           "%" PRId64 " %s %" PRIu64 " %" PRIu64 "\n", bucket, name,
	                           samples, weight);
	return 0;
}

/* "bucket stack samples weight" lines of a series, in store order. */
const char *dump(struct store *s, uint32_t id, int64_t from, int64_t to)
{
	static struct dump d;

	memset(&d, 0, sizeof(d));
	d.s = s;
	d.ordered = true;
	CHECK(store_series_counts(s, id, from, to, dump_fn, &d) == 0);
	CHECK(d.ordered);
	return d.buf;
}

/* The id of the listed series of (host, binary), or 0. */
uint32_t find_series(struct store *s, const char *host, const char *binary,
                     struct store_series *out)
{
	struct store_series *l = NULL;
	size_t n = 0;
	uint32_t id = 0;

	CHECK(store_series_list(s, &l, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].host, host) && !strcmp(l[i].binary, binary)) {
			id = l[i].id;
			if (out) {
				*out = l[i];
				out->host = out->binary = out->version = out->event = out->unit =
				        NULL;
			}
		}
	store_series_free(l, n);
	return id;
}

void expect_open_error(const char *conn, int flags, int want, const char *needle, const char *never)
{
	struct store *s = NULL;
	char err[512] = "";
	int r = store_open(conn, flags, &s, err, sizeof(err));

	CHECK(r == want);
	CHECK(s == NULL);
	if (!strstr(err, needle)) {
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err, needle);
		check_failures++;
	}
	if (never && strstr(err, never)) {
		fprintf(stderr, "  message \"%s\" shows \"%s\"\n", err, never);
		check_failures++;
	}
	store_close(s);
}

/* ---- the recent tier ------------------------------------------------------------- */

void svec_add(struct svec *a, const struct store_sample *smp)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 256;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = *smp;
}

int svec_fn(void *ctx, const struct store_sample *smp)
{
	struct svec *a = ctx;

	svec_add(a, smp);
	return a->stop_after && a->n == (size_t)a->stop_after ? 7 : 0;
}

/* The order a walk must keep: the samples block's canonical order
 * (time, then pid, tid, node, weight, span, parent), so that a walk is
 * one sequence whatever the rows. */
int smp_cmp(const void *pa, const void *pb)
{
	return samples_block_cmp(pa, pb);
}

void svec_sort(struct svec *a)
{
	if (a->n > 1)
		qsort(a->v, a->n, sizeof(*a->v), smp_cmp);
}

/* The samples of a in [from, to), in order. */
struct svec svec_window(const struct svec *a, int64_t from, int64_t to)
{
	struct svec o = {0};

	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].time_us >= from && a->v[i].time_us < to)
			svec_add(&o, &a->v[i]);
	svec_sort(&o);
	return o;
}

/* The detail of a series over [from, to) as walked; the walk returns 0. */
struct svec walk(struct store *s, uint32_t id, int64_t from, int64_t to)
{
	struct svec o = {0};

	CHECK(store_series_samples(s, id, from, to, svec_fn, &o) == 0);
	return o;
}

/* Whether got (as walked) is exactly want (sorted here). */
bool same_detail(const struct svec *got, struct svec *want, const char *what)
{
	svec_sort(want);
	if (got->n != want->n) {
		fprintf(stderr, "  %s: %zu samples walked, %zu expected\n", what, got->n, want->n);
		return false;
	}
	for (size_t i = 0; i < got->n; i++)
		if (smp_cmp(&got->v[i], &want->v[i])) {
			fprintf(stderr,
			        "  %s: sample %zu: %" PRId64 " %u %u %u %" PRIu64 " %" PRIu64
			        " %" PRIu64 ", expected %" PRId64 " %u %u %u %" PRIu64 " %" PRIu64
			        " %" PRIu64 "\n",
			        what, i, got->v[i].time_us, got->v[i].node, got->v[i].pid,
			        got->v[i].tid, got->v[i].weight, got->v[i].span, got->v[i].parent,
			        want->v[i].time_us, want->v[i].node, want->v[i].pid, want->v[i].tid,
			        want->v[i].weight, want->v[i].span, want->v[i].parent);
			return false;
		}
	return true;
}

uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A sample in [from_us, from_us + span_us) on one of the nodes. */
struct store_sample gen_sample(uint64_t *x, int64_t from_us, int64_t span_us, const uint32_t *nodes,
                               int nnodes)
{
	static const uint32_t pids[] = {100, 200, 4194303};
	struct store_sample s = {0};
	uint32_t pid = pids[rnd(x) % 3];

	s.time_us = from_us + (int64_t)(rnd(x) % (uint64_t)span_us);
	s.node = nodes[rnd(x) % (uint64_t)nnodes];
	s.pid = pid;
	s.tid = rnd(x) % 4 ? pid + (uint32_t)(rnd(x) % 3) : pid - 1;
	s.weight = rnd(x) % 5 ? 10101010 + rnd(x) % 20000 : 10101010;
	return s;
}

/* Every row of a query, "a b c" per line; NULL on failure. */
char *sql_rows(const char *db, const char *q)
{
	PGconn *c = PQconnectdb(uri(db));
	PGresult *res;
	char *out = NULL;
	size_t len = 0, cap = 0;

	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexec(c, q);
	if (PQresultStatus(res) == PGRES_TUPLES_OK) {
		cap = 64;
		out = calloc(1, cap);
		for (int i = 0; out && i < PQntuples(res); i++)
			for (int k = 0; k < PQnfields(res); k++) {
				const char *v = PQgetvalue(res, i, k);

				while (len + strlen(v) + 2 >= cap)
					out = realloc(out, cap *= 2);
				len += (size_t)sprintf(out + len, "%s%c", v,
				                       k + 1 < PQnfields(res) ? ' ' : '\n');
			}
	} else {
		fprintf(stderr, "  %s", PQerrorMessage(c));
	}
	PQclear(res);
	PQfinish(c);
	return out;
}

void run(const char *name, void (*fn)(void))
{
	const char *only = getenv("FLAMEFS_TEST_ONLY");

	if (only && *only && strcmp(only, name))
		return;
	central_checks_before = check_failures;
	fn();
	for (int i = 0; i < nmade; i++)
		sql("postgres", "DROP DATABASE IF EXISTS %s WITH (FORCE)", made[i]);
	nmade = 0;
	printf("%s %s\n", check_failures != central_checks_before ? "FAIL" : "PASS", name);
	fflush(stdout);
	central_failures += check_failures != central_checks_before;
}

int fixture_main(int argc, char **argv, char *tmpdir, const struct fixture_test *dir_tests,
                 const struct fixture_test *db_tests)
{
	const struct fixture_test *t = dir_tests;
	char cmd[256];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (argc > 2) {
		pghost = argv[1];
		pguser = argv[2];
		pgport = argc > 3 && *argv[3] ? argv[3] : NULL;
		if (!getenv("FLAMEFS_PG_RETRY_SECONDS"))
			setenv("FLAMEFS_PG_RETRY_SECONDS", "10", 1);
		if (!sql("postgres", "SELECT 1")) {
			printf("SKIP: cannot reach the PostgreSQL server at %s\n", pghost);
			return 77;
		}
		t = db_tests;
	}
	for (; t->name; t++)
		run(t->name, t->fn);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return central_failures ? 1 : 0;
}
