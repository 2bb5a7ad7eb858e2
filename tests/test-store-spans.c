/*
 * test-store-spans.c — the recent tier keeps spans (store.h, "spans"):
 * what store_batch_sample() is given, span and parent ids included, is
 * what store_series_samples() gives back, in a directory and in a
 * database, through pieces and their sealing, the roll-up (which forgets
 * span ids with the rest of the detail), prune and copies both ways; the
 * samples block's span and parent columns (samples-block-internal.h): a
 * block without spans keeps its bytes, the columns' exact bytes, round
 * trips of ids of every shape, and damage refused; and the database's SQL
 * decoder flamefs_samples() gives what the C decoder gives.
 *
 * Usage: test-store-spans            the directory and block tests
 *        test-store-spans SOCKET_DIR USER [PORT]
 *                                    the database tests on that server
 *                                    (tests/test-store-spans.sh starts one)
 * Test code: it prints.
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a recording with spans, and what the store must give back ---------------- */

/* The series of the recording: three span names (span records) and the
 * CPU samples the spans hold. */
enum { S_REQUEST, S_PLAN, S_EXECUTE, S_CPU, NSERIES };
static const char *const series_labels[NSERIES] = {"span=request", "span=plan", "span=execute",
                                                   "thread=worker"};
static const char *const series_event[NSERIES] = {STORE_EVENT_SPANS, STORE_EVENT_SPANS,
                                                  STORE_EVENT_SPANS, "cpu-clock"};

/* One sample as given: its series, its stack as text ("K:name;K:name",
 * K the frame kind) and the sample (node filled in when written). */
struct given {
	int series;
	char stack[96];
	struct store_sample smp;
};

struct recording {
	struct given *v;
	size_t n, cap;
	int64_t newest_us;
};

static void rec_add(struct recording *r, int series, const char *stack,
                    const struct store_sample *smp)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		if (!r->v)
			abort();
	}
	r->v[r->n].series = series;
	snprintf(r->v[r->n].stack, sizeof(r->v[r->n].stack), "%s", stack);
	r->v[r->n].smp = *smp;
	if (smp->time_us > r->newest_us)
		r->newest_us = smp->time_us;
	r->n++;
}

/* Threads, and how each numbers its spans: a process-wide counter (as
 * spans-demo does), per thread (tid << 32 | sequence), or ids past 2^63. */
static const struct {
	uint32_t pid, tid;
	int ids; /* 0 global, 1 per thread, 2 high */
} threads[] = {{4242, 4242, 0}, {4242, 4243, 0}, {4242, 4250, 1}, {7000, 7001, 2}};
#define NTHREADS (sizeof(threads) / sizeof(threads[0]))

/* Six minutes of requests on four threads, one every 0.2-0.6 s: each
 * request (top level) holds a plan and an execute; the last request of
 * thread 4250 never ends (its execute is closed at exit: "[unended]").
 * CPU samples every 7 ms of each thread, from a request's start to 20 ms
 * after its end, carry the innermost open span (0 after it). */
static void record_spans(struct recording *r)
{
	uint64_t global = 1, seq[NTHREADS] = {0}, x = 99;

	memset(r, 0, sizeof(*r));
	for (size_t t = 0; t < NTHREADS; t++) {
		int64_t now = T0US + (int64_t)t * 1111;
		int k = 0;

		while (now < T0US + 6 * 60 * US) {
			uint64_t id[3];
			int64_t start[3], end[3];
			bool unended = threads[t].tid == 4250 && now > T0US + 5 * 60 * US;

			for (int i = 0; i < 3; i++) {
				if (threads[t].ids == 0)
					id[i] = global++;
				else if (threads[t].ids == 1)
					id[i] = (uint64_t)threads[t].tid << 32 | ++seq[t];
				else
					id[i] = UINT64_MAX - 5 - (uint64_t)k * 3 - (uint64_t)i;
			}
			/* request [0], plan [1] inside it, then execute [2] */
			start[0] = now;
			start[1] = now + 300 + (int64_t)(rnd(&x) % 200);
			end[1] = start[1] + 2000 + (int64_t)(rnd(&x) % 3000);
			start[2] = end[1] + 100;
			end[2] = start[2] + 5000 + (int64_t)(rnd(&x) % 40000);
			end[0] = end[2] + 250;
			if (unended)
				end[2] = end[0] = T0US + 6 * 60 * US;
			for (int64_t at = now + 7000 - now % 7000; at < end[0] + 20000;
			     at += 7000) {
				struct store_sample smp = {.time_us = at,
				                           .pid = threads[t].pid,
				                           .tid = threads[t].tid,
				                           .weight = 7000000};
				const char *stack = "U:main;U:idle";

				if (at >= end[0] && !unended) {
					smp.span = 0;
				} else if (at >= start[2] && at < end[2]) {
					smp.span = id[2];
					stack = "U:main;U:execute;U:scan";
				} else if (at >= start[1] && at < end[1]) {
					smp.span = id[1];
					stack = "U:main;U:plan";
				} else if (at < end[0]) {
					smp.span = id[0];
					stack = "U:main;U:request";
				}
				if (at >= T0US + 6 * 60 * US)
					break;
				rec_add(r, S_CPU, stack, &smp);
			}
			for (int i = 0; i < 3; i++) {
				struct store_sample smp = {.time_us = start[i],
				                           .pid = threads[t].pid,
				                           .tid = threads[t].tid,
				                           .weight = (uint64_t)(end[i] - start[i]) *
				                                     1000,
				                           .span = id[i],
				                           .parent = i ? id[0] : 0};
				static const char *const stacks[3] = {
				        "S:request", "S:request;S:plan", "S:request;S:execute"};
				char st[96];

				snprintf(st, sizeof(st), "%s%s", stacks[i],
				         unended && i != 1 ? ";S:" STORE_SPAN_UNENDED_FRAME : "");
				rec_add(r, S_REQUEST + i, st, &smp);
			}
			if (unended)
				break;
			now = end[0] + 200000 + (int64_t)(rnd(&x) % 400000);
			k++;
		}
	}
	/* a span whose parent is itself and one with id 0 and a parent:
	 * the store keeps what it is given */
	{
		struct store_sample a = {.time_us = T0US + 61 * US,
		                         .pid = 1,
		                         .tid = 1,
		                         .weight = 5,
		                         .span = 77,
		                         .parent = 77};
		struct store_sample b = {.time_us = T0US + 62 * US,
		                         .pid = 1,
		                         .tid = 1,
		                         .weight = 6,
		                         .span = 0,
		                         .parent = 78};

		rec_add(r, S_PLAN, "S:request;S:plan", &a);
		rec_add(r, S_PLAN, "S:request;S:plan", &b);
	}
}

static uint32_t series_id(struct store_batch *b, int which)
{
	struct store_series_key k = {.host = "h",
	                             .binary = "spans-demo",
	                             .version = "1",
	                             .event = series_event[which],
	                             .unit = "nanoseconds",
	                             .labels = series_labels[which]};
	uint32_t id = 0;

	CHECK(store_batch_series(b, &k, &id) == 0);
	return id;
}

/* Interns "K:name;K:name" (K: U user, S span) and returns its leaf. */
static uint32_t kind_stack(struct store_batch *b, const char *text)
{
	char buf[128], *save = NULL;
	uint32_t node = STORE_ROOT_NODE;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		struct store_frame f = {.name = t + 2,
		                        .name_len = strlen(t + 2),
		                        .kind = t[0] == 'S' ? STORE_FRAME_SPAN : STORE_FRAME_USER};
		uint32_t fr = 0;

		CHECK(store_batch_frame(b, &f, &fr) == 0);
		CHECK(store_batch_node(b, node, fr, &node) == 0);
	}
	return node;
}

/* Writes the recording in `commits` commits (samples dealt round-robin,
 * so every bucket gets a piece from each). */
static void write_recording(struct store *s, struct recording *r, int commits)
{
	for (int c = 0; c < commits; c++) {
		struct store_batch *b = store_batch_new(s);

		CHECK(b != NULL);
		if (!b)
			return;
		for (size_t i = (size_t)c; i < r->n; i += (size_t)commits) {
			struct store_sample smp = r->v[i].smp;

			smp.node = kind_stack(b, r->v[i].stack);
			CHECK(store_batch_sample(b, series_id(b, r->v[i].series), &smp) == 0);
		}
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
	}
}

/* ---- reading back, by content ------------------------------------------------- */

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = strdup(s);
}

/* The lines sorted and joined by '\n' (malloc'd); frees them. */
static char *lines_join(struct lines *l)
{
	size_t len = 1, o = 0;
	char *out;

	qsort(l->v, l->n, sizeof(*l->v), line_cmp);
	for (size_t i = 0; i < l->n; i++)
		len += strlen(l->v[i]) + 1;
	out = malloc(len);
	if (!out)
		abort();
	for (size_t i = 0; i < l->n; i++) {
		o += (size_t)sprintf(out + o, "%s\n", l->v[i]);
		free(l->v[i]);
	}
	out[o] = 0;
	free(l->v);
	memset(l, 0, sizeof(*l));
	return out;
}

static void sample_line(char *out, size_t len, int series, const char *stack,
                        const struct store_sample *s)
{
	snprintf(out, len,
	         "%s %s %" PRId64 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s",
	         series_event[series], series_labels[series], s->time_us, s->pid, s->tid, s->weight,
	         s->span, s->parent, stack);
}

/* The recording's samples whose buckets keep detail (bucket end after
 * cut_us; INT64_MIN: all) and whose bucket starts at or after from_s, as
 * sorted lines. */
static char *want_text(const struct recording *r, int64_t cut_us, int64_t from_s)
{
	struct lines l = {0};
	char buf[512];

	for (size_t i = 0; i < r->n; i++) {
		int64_t bucket = r->v[i].smp.time_us / US / 60 * 60;

		if ((cut_us != INT64_MIN && (bucket + 60) * US <= cut_us) || bucket < from_s)
			continue;
		sample_line(buf, sizeof(buf), r->v[i].series, r->v[i].stack, &r->v[i].smp);
		lines_add(&l, buf);
	}
	return lines_join(&l);
}

/* The stack of node as "K:name;K:name". */
static void node_text(struct store *s, uint32_t node, char *out, size_t len)
{
	char parts[16][64];
	int n = 0;
	size_t o = 0;

	out[0] = 0;
	while (node != STORE_ROOT_NODE && n < 16) {
		uint32_t parent = 0, fr = 0;
		struct store_frame f;

		if (store_node_get(s, node, &parent, &fr) < 0 || store_frame_get(s, fr, &f) < 0) {
			snprintf(out, len, "(bad node %u)", node);
			return;
		}
		snprintf(parts[n++], sizeof(parts[0]), "%c:%.*s",
		         f.kind == STORE_FRAME_SPAN   ? 'S'
		         : f.kind == STORE_FRAME_USER ? 'U'
		                                      : '?',
		         (int)f.name_len, f.name);
		node = parent;
	}
	while (n-- > 0)
		o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ";" : "", parts[n]);
}

struct walking {
	struct store *s;
	int series;
	struct lines *l;
	int64_t last;
};

static int walk_line(void *ctx, const struct store_sample *smp)
{
	struct walking *w = ctx;
	char stack[256], buf[512];

	CHECK(smp->time_us >= w->last);
	w->last = smp->time_us;
	node_text(w->s, smp->node, stack, sizeof(stack));
	sample_line(buf, sizeof(buf), w->series, stack, smp);
	lines_add(w->l, buf);
	return 0;
}

/* Every series' detail in s, as sorted lines; *counts gets
 * "samples/weight" of each series, in the order of series_labels. */
static char *got_text(struct store *s, char *counts, size_t clen)
{
	struct store_series *list = NULL;
	struct lines l = {0};
	size_t n = 0, o = 0;

	counts[0] = 0;
	CHECK(store_series_list(s, &list, &n) == 0);
	for (int k = 0; k < NSERIES; k++)
		for (size_t i = 0; i < n; i++) {
			struct walking w = {s, k, &l, INT64_MIN};

			if (strcmp(list[i].event, series_event[k]) ||
			    strcmp(list[i].labels, series_labels[k]))
				continue;
			o += (size_t)snprintf(counts + o, clen - o, "%" PRIu64 "/%" PRIu64 " ",
			                      list[i].samples, list[i].weight);
			CHECK(store_series_samples(s, list[i].id, INT64_MIN, INT64_MAX, walk_line,
			                           &w) == 0);
		}
	store_series_free(list, n);
	return lines_join(&l);
}

/* "samples/weight " of each series as the recording counts them. */
static void want_counts(const struct recording *r, char *out, size_t len)
{
	size_t o = 0;

	for (int k = 0; k < NSERIES; k++) {
		uint64_t n = 0, w = 0;

		for (size_t i = 0; i < r->n; i++)
			if (r->v[i].series == k) {
				n++;
				w += r->v[i].smp.weight;
			}
		o += (size_t)snprintf(out + o, len - o, "%" PRIu64 "/%" PRIu64 " ", n, w);
	}
}

/* s holds exactly the recording's detail (cut and from as want_text's)
 * and its counts. */
static void expect_store(struct store *s, const struct recording *r, int64_t cut_us, int64_t from_s,
                         const char *what)
{
	char gc[512], wc[512];
	char *got = got_text(s, gc, sizeof(gc)), *want = want_text(r, cut_us, from_s);

	if (from_s == INT64_MIN) {
		want_counts(r, wc, sizeof(wc));
		CHECKF(!strcmp(gc, wc), "%s: counts %s, want %s", what, gc, wc);
	}
	if (strcmp(got, want)) {
		size_t i = 0;

		while (got[i] && got[i] == want[i])
			i++;
		while (i && got[i - 1] != '\n')
			i--;
		CHECKF(0,
		       "%s: the detail differs (%zu vs %zu bytes) at\n  got  %.160s\n  want %.160s",
		       what, strlen(got), strlen(want), got + i, want + i);
	}
	free(got);
	free(want);
}

/* ---- the block ------------------------------------------------------------------ */

static const int64_t BSTART = T0US, BSPAN = 60 * US;

static int decode(const uint8_t *p, size_t len, struct store_sample **v, size_t *n)
{
	size_t cap = 0;

	*v = NULL;
	*n = 0;
	return samples_block_decode(p, len, BSTART, BSPAN, v, n, &cap);
}

static void expect_bytes(const struct store_sample *v, size_t n, const uint8_t *want, size_t wlen,
                         const char *what)
{
	uint8_t *b = NULL;
	size_t len = 0;
	struct store_sample *d;
	size_t dn;

	CHECK(samples_block_encode(v, n, BSTART, BSPAN, &b, &len) == 0);
	CHECKF(len == wlen && b && !memcmp(b, want, wlen), "%s: %zu bytes, want %zu", what, len,
	       wlen);
	CHECK(decode(want, wlen, &d, &dn) == 0);
	CHECK(dn == n);
	for (size_t i = 0; i < n && dn == n; i++)
		CHECKF(!smp_cmp(&d[i], &v[i]), "%s: sample %zu", what, i);
	free(d);
	free(b);
}

static void expect_damaged(const uint8_t *p, size_t len, const char *what)
{
	struct store_sample *d;
	size_t dn;

	CHECKF(decode(p, len, &d, &dn) == -EIO && dn == 0, "%s: not refused", what);
	free(d);
}

/* Sets the two samples' spans and parents. */
static void ids(struct store_sample *v, uint64_t s0, uint64_t p0, uint64_t s1, uint64_t p1)
{
	v[0].span = s0;
	v[0].parent = p0;
	v[1].span = s1;
	v[1].parent = p1;
}

static void test_block_format(void)
{
	struct store_sample v[2] = {
	        {.time_us = T0US + 5, .node = 3, .pid = 10, .tid = 10, .weight = 7},
	        {.time_us = T0US + 9, .node = 3, .pid = 10, .tid = 10, .weight = 7}};
	/* n, flags, k, node, m, pid, zigzag(tid - pid), w0, dt, dt: the
	 * bytes a block had before spans */
	static const uint8_t plain[] = {2, 0, 1, 3, 1, 10, 0, 7, 5, 4};
	/* spans 100, 101 (zigzag of the difference to the thread's previous
	 * span: 200, 2) and parents none, 100 (0; zigzag(100 - 101) = 1) */
	static const uint8_t spans[] = {2, 6, 1, 3, 1, 10, 0, 7, 5, 4, 0xc8, 0x01, 2, 0, 1};
	uint8_t buf[64];

	expect_bytes(v, 2, plain, sizeof(plain), "no spans");
	ids(v, 100, 0, 101, 100);
	expect_bytes(v, 2, spans, sizeof(spans), "spans");
	/* a parent without a span: zigzag(5 - 0) */
	ids(v, 0, 5, 0, 0);
	expect_bytes(v, 2, (const uint8_t[]){2, 4, 1, 3, 1, 10, 0, 7, 5, 4, 10, 0}, 12,
	             "a parent without a span");
	/* a parent equal to its span: zigzag(-span), where 0 would be */
	ids(v, 5, 5, 0, 0);
	expect_bytes(v, 2, (const uint8_t[]){2, 6, 1, 3, 1, 10, 0, 7, 5, 4, 10, 9, 9, 0}, 14,
	             "a parent equal to its span");
	/* spans only: no parent column */
	ids(v, 1, 0, 0, 0);
	expect_bytes(v, 2, (const uint8_t[]){2, 2, 1, 3, 1, 10, 0, 7, 5, 4, 2, 1}, 12,
	             "a span, then none");
	ids(v, 0, 0, 1, 0);
	expect_bytes(v, 2, (const uint8_t[]){2, 2, 1, 3, 1, 10, 0, 7, 5, 4, 0, 2}, 12,
	             "none, then a span");
	/* two threads: each one's spans from its own previous one */
	ids(v, 1000, 0, 7, 0);
	v[1].tid = 11;
	expect_bytes(v, 2,
	             (const uint8_t[]){2, 2, 1, 3, 2, 10, 0, 0, 2, 7, 5, 4, 0, 1, 0xd0, 0x0f, 14},
	             17, "two threads");
	v[1].tid = 10;

	/* damage: an unknown flag; a column of zeros (an encoder never
	 * writes one: the same detail would have two encodings); a column
	 * cut short, without its flag or followed by a byte */
	memcpy(buf, plain, sizeof(plain));
	buf[1] = 8;
	expect_damaged(buf, sizeof(plain), "flag bit 3");
	buf[1] = 2;
	buf[10] = buf[11] = 0;
	expect_damaged(buf, 12, "a span column of zeros");
	buf[1] = 4;
	expect_damaged(buf, 12, "a parent column of zeros");
	buf[1] = 6;
	buf[12] = 3;
	buf[13] = 5;
	expect_damaged(buf, 14, "a span column of zeros, with parents");
	for (size_t cut = 10; cut < sizeof(spans); cut++)
		expect_damaged(spans, cut, "a span or parent column cut short");
	memcpy(buf, spans, sizeof(spans));
	buf[sizeof(spans)] = 1;
	expect_damaged(buf, sizeof(spans) + 1, "a byte after the parent column");
	buf[1] = 2;
	expect_damaged(buf, sizeof(spans), "a parent column without its flag");
	/* equal but for their spans, out of order (9, then 5) */
	{
		static const uint8_t order[] = {2, 2, 1, 3, 1, 10, 0, 7, 5, 0, 18, 7};
		static const uint8_t right[] = {2, 2, 1, 3, 1, 10, 0, 7, 5, 0, 10, 8};
		struct store_sample w[2] = {v[0], v[0]}, *d;
		uint8_t *b = NULL;
		size_t dn, len;

		expect_damaged(order, sizeof(order), "spans out of order");
		CHECK(decode(right, sizeof(right), &d, &dn) == 0 && dn == 2 && d[0].span == 5 &&
		      d[1].span == 9);
		free(d);
		ids(w, 9, 0, 5, 0);
		CHECK(samples_block_encode(w, 2, BSTART, BSPAN, &b, &len) == -EINVAL && !b);
	}
}

/* Random blocks with span ids of every shape round-trip exactly; a block
 * without spans has no span bytes; mutations decode or are refused. */
static void test_block_random(void)
{
	uint64_t x = 4141;
	uint32_t nodes[5] = {0, 1, 7, 300, UINT32_MAX};
	int damaged = 0;

	for (int round = 0; round < 400; round++) {
		size_t n = 1 + rnd(&x) % (round % 8 ? 50 : 1500), len, plen, dn;
		struct store_sample *v = calloc(n, sizeof(*v)), *d = NULL;
		uint8_t *b = NULL, *pb = NULL;
		uint64_t last[8] = {0};

		for (size_t i = 0; i < n; i++) {
			v[i] = gen_sample(&x, BSTART, BSPAN, nodes, 1 + round % 5);
			switch (round % 6) {
			case 0: break; /* no spans */
			case 1:        /* sequential per thread, parents near */
				v[i].span = ++last[v[i].tid % 8] + ((uint64_t)v[i].tid << 32);
				v[i].parent = rnd(&x) % 3 ? v[i].span - 1 - rnd(&x) % 3 : 0;
				break;
			case 2: /* any 64-bit value, wrapping differences */
				v[i].span = rnd(&x) % 4 ? rnd(&x) : 0;
				v[i].parent = rnd(&x) % 4 ? rnd(&x) : rnd(&x) % 2 ? v[i].span : 0;
				break;
			case 3: /* near 2^64 and 0 */
				v[i].span = rnd(&x) % 2 ? UINT64_MAX - rnd(&x) % 4 : rnd(&x) % 4;
				v[i].parent = rnd(&x) % 2 ? 0 - v[i].span : v[i].span;
				break;
			case 4: /* parents only */ v[i].parent = rnd(&x) % 5; break;
			default: /* spans only, a few */
				v[i].span = rnd(&x) % 7 ? 0 : 1 + rnd(&x) % 1000;
				break;
			}
		}
		samples_block_sort(v, n);
		CHECK(samples_block_encode(v, n, BSTART, BSPAN, &b, &len) == 0);
		CHECK(decode(b, len, &d, &dn) == 0 && dn == n);
		for (size_t i = 0; i < n && dn == n; i++)
			CHECKF(!smp_cmp(&d[i], &v[i]), "round %d, sample %zu", round, i);
		free(d);
		/* the same samples without spans: the block without columns,
		 * which is a prefix of this one with the flag byte cleared */
		for (size_t i = 0; i < n; i++)
			v[i].span = v[i].parent = 0;
		samples_block_sort(v, n);
		CHECK(samples_block_encode(v, n, BSTART, BSPAN, &pb, &plen) == 0);
		CHECK(pb && pb[n < 128 ? 1 : n < 16384 ? 2 : 3] <= 1);
		if (round % 6 == 0)
			CHECK(plen == len && !memcmp(pb, b, len));
		for (int m = 0; m < 40 && b; m++) {
			uint8_t buf[1 << 16];
			size_t l = len < sizeof(buf) - 4 ? len : sizeof(buf) - 4, at = rnd(&x) % l;
			int r;

			memcpy(buf, b, l);
			switch (m % 3) {
			case 0: buf[at] ^= (uint8_t)(1 + rnd(&x) % 255); break;
			case 1: l = at; break;
			default: buf[l++] = (uint8_t)rnd(&x); break;
			}
			r = decode(buf, l, &d, &dn);
			CHECK(r == 0 || r == -EIO);
			damaged += r == -EIO;
			free(d);
		}
		free(v);
		free(b);
		free(pb);
	}
	CHECK(damaged > 4000);
}

/* ---- the directory ---------------------------------------------------------------- */

static char tmpdir[] = "/tmp/test-store-spans-XXXXXX";

static struct store *open_dir(const char *name, int flags)
{
	char path[256], err[512];
	struct store *s = NULL;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	CHECKF(store_open(path, flags, &s, err, sizeof(err)) == 0, "%s: %s", path, err);
	return s;
}

static void test_dir(void)
{
	struct recording r;
	struct store *w, *rd, *m;
	struct store_rollup_stats st = {0};
	struct store_copy_stats cs;
	struct store_copy_opts co = {.samples = true};
	struct store_prune_opts po = {.before = T0 + 120};
	struct store_prune_stats ps;
	char err[512];
	int64_t keep = 150;

	record_spans(&r);
	w = open_dir("a", STORE_CREATE);
	if (!w)
		goto out;
	write_recording(w, &r, 3);
	expect_store(w, &r, INT64_MIN, INT64_MIN, "directory, as written");
	rd = open_dir("a", STORE_READONLY);
	if (rd) {
		expect_store(rd, &r, INT64_MIN, INT64_MIN, "directory, a reader");
		store_close(rd);
	}
	/* a copy with samples (merge) into another directory */
	m = open_dir("m", STORE_CREATE);
	if (m) {
		CHECKF(store_copy(m, w, &co, &cs, err, sizeof(err)) == 0, "%s", err);
		expect_store(m, &r, INT64_MIN, INT64_MIN, "directory merged into a directory");
		/* prune: the detail of the pruned buckets goes with them */
		CHECK(store_prune(m, &po, &ps) == 0 && ps.buckets > 0);
		expect_store(m, &r, INT64_MIN, T0 + 120, "directory, pruned");
		store_close(m);
	}
	/* the roll-up forgets span ids with the rest of the detail */
	CHECK(store_set_keep_samples(w, keep) == 0);
	CHECK(store_rollup(w, &st) == 0);
	CHECK(st.slices > 0 && st.samples > 0);
	expect_store(w, &r, r.newest_us - keep * US, INT64_MIN, "directory, rolled up");
	store_close(w);
	w = open_dir("a", STORE_READONLY);
	if (w)
		expect_store(w, &r, r.newest_us - keep * US, INT64_MIN, "directory, reopened");
out:
	store_close(w);
	free(r.v);
}

/* ---- the database ------------------------------------------------------------------ */

/* flamefs_samples(bucket, block) of one block as "time node pid tid
 * weight span parent" lines, span and parent unsigned; NULL when the
 * server refused it (*err its message). */
static char *sql_block(const uint8_t *blk, size_t len, int64_t bucket, char *err, size_t elen)
{
	PGconn *c = PQconnectdb(uri("c_spans"));
	char b[32];
	const char *vals[2] = {b, (const char *)blk};
	int lens[2] = {0, (int)len}, fmts[2] = {0, 1};
	PGresult *res;
	char *out = NULL;

	snprintf(b, sizeof(b), "%" PRId64, bucket);
	PQsetNoticeProcessor(c, quiet, NULL);
	res = PQexecParams(c,
	                   "SELECT coalesce(string_agg(time_us || ' ' || node || ' ' || pid || ' '"
	                   " || tid || ' ' || weight || ' ' || flamefs_u64(span) || ' ' ||"
	                   " flamefs_u64(parent), E'\\n' ORDER BY o), '') FROM"
	                   " flamefs_samples($1::int8, $2::bytea) WITH ORDINALITY AS"
	                   " e(time_us, node, pid, tid, weight, span, parent, o)",
	                   2, NULL, vals, lens, fmts, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		out = strdup(PQgetvalue(res, 0, 0));
	else
		snprintf(err, elen, "%s", PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return out;
}

/* The C decoder's lines for the same block. */
static char *c_block(const uint8_t *blk, size_t len, int64_t bucket)
{
	struct store_sample *v = NULL;
	size_t n = 0, cap = 0, o = 0;
	char *out;

	if (samples_block_decode(blk, len, bucket * US, BSPAN, &v, &n, &cap) < 0) {
		free(v);
		return NULL;
	}
	out = malloc(n * 140 + 1);
	if (!out)
		abort();
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(out + o,
		                     "%s%" PRId64 " %u %u %u %" PRId64 " %" PRIu64 " %" PRIu64,
		                     i ? "\n" : "", v[i].time_us, v[i].node, v[i].pid, v[i].tid,
		                     (int64_t)v[i].weight, v[i].span, v[i].parent);
	free(v);
	return out;
}

static void test_sql_decoder(void)
{
	uint64_t x = 31337;
	uint32_t nodes[3] = {1, 5, 9};
	char err[1024];

	fresh_db("c_spans");
	store_close(open_ok("c_spans", STORE_CREATE));

	/* random blocks with ids of every shape: the SQL decoder's rows are
	 * the C decoder's */
	for (int round = 0; round < 60; round++) {
		size_t n = 1 + rnd(&x) % 300, len;
		struct store_sample *v = calloc(n, sizeof(*v));
		uint8_t *b = NULL;
		char *s, *c;

		for (size_t i = 0; i < n; i++) {
			v[i] = gen_sample(&x, BSTART, BSPAN, nodes, 3);
			v[i].weight = rnd(&x) % 1000000;
			if (round % 3 == 0) {
				v[i].span = rnd(&x);
				v[i].parent = rnd(&x) % 3 ? rnd(&x) : rnd(&x) % 2 ? v[i].span : 0;
			} else if (round % 3 == 1) {
				v[i].span = UINT64_MAX - rnd(&x) % 3;
				v[i].parent = rnd(&x) % 2 ? 0 - v[i].span : v[i].span - 1;
			} else {
				v[i].span = rnd(&x) % 4 ? 1 + rnd(&x) % 100 : 0;
			}
		}
		samples_block_sort(v, n);
		CHECK(samples_block_encode(v, n, BSTART, BSPAN, &b, &len) == 0);
		s = sql_block(b, len, T0, err, sizeof(err));
		c = c_block(b, len, T0);
		CHECKF(s && c && !strcmp(s, c), "round %d: SQL %.200s\n  C %.200s (%s)", round,
		       s ? s : "(refused)", c ? c : "(refused)", s ? "" : err);
		free(s);
		free(c);
		free(b);
		free(v);
	}
	/* damaged span and parent columns are refused as the C decoder
	 * refuses them */
	{
		static const uint8_t zeros[] = {2, 2, 1, 3, 1, 10, 0, 7, 5, 4, 0, 0};
		static const uint8_t pzeros[] = {2, 4, 1, 3, 1, 10, 0, 7, 5, 4, 0, 0};
		static const uint8_t cut[] = {2, 6, 1, 3, 1, 10, 0, 7, 5, 4, 0xc8, 0x01, 2, 0};
		static const uint8_t flag8[] = {2, 8, 1, 3, 1, 10, 0, 7, 5, 4};
		const struct {
			const uint8_t *b;
			size_t len;
			const char *what;
		} bad[] = {{zeros, sizeof(zeros), "a column of zeros"},
		           {pzeros, sizeof(pzeros), "a column of zeros"},
		           {cut, sizeof(cut), "its length"},
		           {flag8, sizeof(flag8), "its header"}};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char *s = sql_block(bad[i].b, bad[i].len, T0, err, sizeof(err));

			CHECKF(!s && strstr(err, "flamefs: damaged samples block") &&
			               strstr(err, bad[i].what),
			       "%s: %s", bad[i].what, s ? s : err);
			CHECK(c_block(bad[i].b, bad[i].len, T0) == NULL);
			free(s);
		}
	}
}

/* Every row of `samples` decoded by the SQL decoder equals the C
 * decoder's reading of its block. */
static void sql_equals_c(const char *db)
{
	char *rows = sql_rows(db, "SELECT bucket, encode(block, 'hex') FROM samples"
	                          " ORDER BY series, bucket, commit, source");
	char *save = NULL;
	int blocks = 0, spanned = 0;

	CHECK(rows != NULL);
	for (char *line = rows ? strtok_r(rows, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		int64_t bucket = strtoll(line, NULL, 10);
		const char *hex = strchr(line, ' ') + 1;
		size_t len = strlen(hex) / 2;
		uint8_t *b = malloc(len + 1);
		char err[1024], *s, *c;

		for (size_t i = 0; i < len; i++)
			sscanf(hex + 2 * i, "%2hhx", &b[i]);
		s = sql_block(b, len, bucket, err, sizeof(err));
		c = c_block(b, len, bucket);
		CHECKF(s && c && !strcmp(s, c), "bucket %" PRId64 ": %s", bucket, s ? "" : err);
		blocks++;
		spanned += len > 1 && (b[1] & 6);
		free(s);
		free(c);
		free(b);
	}
	CHECK(blocks > 20 && spanned > 20);
	free(rows);
}

static void test_db(void)
{
	struct recording r;
	struct store *w = NULL, *d = NULL, *back = NULL;
	struct store_copy_opts co = {.samples = true};
	struct store_copy_stats cs;
	struct store_rollup_stats st = {0};
	char err[512];
	int64_t keep = 150;

	record_spans(&r);
	/* written directly */
	fresh_db("c_spans");
	w = open_ok("c_spans", STORE_CREATE);
	if (!w)
		goto out;
	write_recording(w, &r, 3);
	expect_store(w, &r, INT64_MIN, INT64_MIN, "database, as written");
	{
		struct store *rd = open_ok("c_spans", STORE_READONLY);

		if (rd)
			expect_store(rd, &r, INT64_MIN, INT64_MIN, "database, a reader");
		store_close(rd);
	}
	sql_equals_c("c_spans");
	{
		size_t parents = 0;
		char want[32];

		for (size_t i = 0; i < r.n; i++)
			parents += r.v[i].smp.parent != 0;
		snprintf(want, sizeof(want), "%zu", parents);
		CHECK_STR(sql("c_spans", "SELECT count(*) FROM sample_entries WHERE parent <> 0"),
		          want);
	}
	/* directory -> database (push) -> directory (merge), with samples */
	d = open_dir("push", STORE_CREATE);
	if (!d)
		goto out;
	write_recording(d, &r, 2);
	fresh_db("c_spans_push");
	store_close(w);
	w = open_ok("c_spans_push", STORE_CREATE);
	if (!w)
		goto out;
	co.incremental = true;
	CHECKF(store_copy(w, d, &co, &cs, err, sizeof(err)) == 0, "%s", err);
	expect_store(w, &r, INT64_MIN, INT64_MIN, "directory pushed into a database");
	sql_equals_c("c_spans_push");
	back = open_dir("back", STORE_CREATE);
	if (back) {
		co.incremental = false;
		CHECKF(store_copy(back, w, &co, &cs, err, sizeof(err)) == 0, "%s", err);
		expect_store(back, &r, INT64_MIN, INT64_MIN, "database merged into a directory");
	}
	/* the database's roll-up */
	CHECK(store_set_keep_samples(w, keep) == 0);
	CHECK(store_rollup(w, &st) == 0 && st.slices > 0);
	expect_store(w, &r, r.newest_us - keep * US, INT64_MIN, "database, rolled up");
out:
	store_close(back);
	store_close(d);
	store_close(w);
	free(r.v);
	sql("postgres", "DROP DATABASE IF EXISTS c_spans WITH (FORCE)");
	sql("postgres", "DROP DATABASE IF EXISTS c_spans_push WITH (FORCE)");
}

int main(int argc, char **argv)
{
	static const struct fixture_test dir_tests[] = {{"block_format", test_block_format},
	                                                {"block_random", test_block_random},
	                                                {"dir", test_dir},
	                                                {NULL, NULL}};
	static const struct fixture_test db_tests[] = {
	        {"sql_decoder", test_sql_decoder}, {"db", test_db}, {NULL, NULL}};

	return fixture_main(argc, argv, tmpdir, dir_tests, db_tests);
}
