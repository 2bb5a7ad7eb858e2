/*
 * test-store-samples.c — unit tests of the recent tier in a directory
 * store: samples kept whole and walked back exact (time order, every
 * field, half-open windows, times before 1970), counted as
 * store_batch_add() would count them, seen by a reader, rolled up and
 * pruned with their counts untouched, an older store upgraded, copies
 * with and without the detail, and a million samples read back fast.
 * Run by test-store.c; store-fixture.h is what the files share.
 */
#include "store-fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return rng >> 33;
}

struct smp_list {
	struct store_sample *v;
	size_t n, cap;
};

static int smp_push(struct smp_list *l, const struct store_sample *s)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct store_sample *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *s;
	return 0;
}

static int smp_collect(void *ctx, const struct store_sample *s)
{
	return smp_push(ctx, s);
}

static bool smp_equal(const struct store_sample *a, const struct store_sample *b)
{
	return a->time_us == b->time_us && a->node == b->node && a->pid == b->pid &&
	       a->tid == b->tid && a->weight == b->weight;
}

/* Checks that the walk of [from, to) is exactly the samples of `want`
 * (the canonical order: time, pid, tid, node, weight) that lie in it. */
static void check_window(struct store *s, uint32_t series, const struct smp_list *want,
                         int64_t from, int64_t to)
{
	struct smp_list got = {0};
	size_t j = 0;

	CHECK_OK(store_series_samples(s, series, from, to, smp_collect, &got));
	for (size_t i = 0; i < want->n; i++) {
		const struct store_sample *w = &want->v[i];

		if (w->time_us < from || w->time_us >= to)
			continue;
		if (j >= got.n || !smp_equal(w, &got.v[j])) {
			CHECKF(false, "window [%lld, %lld): sample %zu: want %lld/%u/%u/%u/%llu",
			       (long long)from, (long long)to, j, (long long)w->time_us, w->node,
			       w->pid, w->tid, (unsigned long long)w->weight);
			break;
		}
		j++;
	}
	CHECKF(j == got.n, "window [%lld, %lld): got %zu samples, want %zu", (long long)from,
	       (long long)to, got.n, j);
	free(got.v);
}

/* The order a samples block keeps, whatever order the samples came in:
 * (time, pid, tid, node, weight). */
static int smp_canonical_cmp(const void *a, const void *b)
{
	const struct store_sample *x = a, *y = b;

	if (x->time_us != y->time_us)
		return x->time_us < y->time_us ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->weight < y->weight ? -1 : x->weight > y->weight;
}

static void smp_canonical_sort(struct smp_list *l)
{
	qsort(l->v, l->n, sizeof(*l->v), smp_canonical_cmp);
}

/* Text that grows: every count of a store, line by line. */
struct counts_text {
	char *p;
	size_t len, cap;
};

static int text_add(struct counts_text *t, const char *line)
{
	size_t n = strlen(line);

	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *p;

		while (cap < t->len + n + 1)
			cap *= 2;
		p = realloc(t->p, cap);
		if (!p)
			return -ENOMEM;
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, line, n + 1);
	t->len += n;
	return 0;
}

/* The stack of a node as "a;b;c" (by content, since ids differ between
 * stores). */
static void node_path(struct store *s, uint32_t node, char *out, size_t len)
{
	uint32_t chain[64], n = 0, parent, frame;
	size_t at = 0;

	out[0] = 0;
	while (node != STORE_ROOT_NODE && n < 64) {
		chain[n++] = node;
		if (store_node_get(s, node, &parent, &frame) < 0)
			break;
		node = parent;
	}
	while (n-- > 0 && at < len) {
		struct store_frame f = {0};

		store_node_get(s, chain[n], &parent, &frame);
		store_frame_get(s, frame, &f);
		at += (size_t)snprintf(out + at, len - at, "%s%.*s", at ? ";" : "", (int)f.name_len,
		                       f.name ? f.name : "");
	}
}

struct counts_ctx {
	struct store *s;
	struct counts_text t;
};

static int counts_line(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct counts_ctx *c = ctx;
	char line[512], path[256];

	node_path(c->s, node, path, sizeof(path));
	snprintf(line, sizeof(line), "%lld %s %llu %llu\n", (long long)bucket, path,
	         (unsigned long long)samples, (unsigned long long)weight);
	return text_add(&c->t, line);
}

static int sample_line(void *ctx, const struct store_sample *smp)
{
	struct counts_ctx *c = ctx;
	char line[512], path[256];

	node_path(c->s, smp->node, path, sizeof(path));
	snprintf(line, sizeof(line), "%lld %s %u %u %llu\n", (long long)smp->time_us, path,
	         smp->pid, smp->tid, (unsigned long long)smp->weight);
	return text_add(&c->t, line);
}

/* The counts (or the detail) of every series of s, as text by content
 * (free it). */
static char *store_text(struct store *s, bool detail)
{
	struct store_series *list = NULL;
	struct counts_ctx c = {.s = s};
	size_t n = 0;

	CHECK_OK(store_series_list(s, &list, &n));
	CHECK_OK(text_add(&c.t, ""));
	for (size_t i = 0; i < n; i++) {
		char head[512];

		snprintf(head, sizeof(head), "series %s/%s/%s/%s %llu %llu\n", list[i].host,
		         list[i].binary, list[i].version, list[i].event,
		         (unsigned long long)list[i].samples, (unsigned long long)list[i].weight);
		CHECK_OK(text_add(&c.t, head));
		if (detail)
			CHECK_OK(store_series_samples(s, list[i].id, INT64_MIN, INT64_MAX,
			                              sample_line, &c));
		else
			CHECK_OK(store_series_counts(s, list[i].id, INT64_MIN, INT64_MAX,
			                             counts_line, &c));
	}
	store_series_free(list, n);
	return c.t.p;
}

static char *all_counts(struct store *s)
{
	return store_text(s, false);
}

static char *all_detail(struct store *s)
{
	return store_text(s, true);
}

static bool series_get(struct store *s, const char *binary, struct store_series *out)
{
	struct store_series *list = NULL;
	size_t n = 0;
	bool found = false;

	CHECK_OK(store_series_list(s, &list, &n));
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(list[i].binary, binary)) {
			*out = list[i];
			out->host = out->binary = out->version = out->event = out->unit = NULL;
			found = true;
		}
	}
	store_series_free(list, n);
	return found;
}

static const char *const stacks[4][3] = {
        {"main", "run", "work"},
        {"main", "run", "wait"},
        {"main", "idle", NULL},
        {"start", "gc", "mark"},
};

/* Interns the four stacks; nodes[i] their leaves. */
static void four_stacks(struct store_batch *b, uint32_t nodes[4])
{
	for (int i = 0; i < 4; i++)
		nodes[i] = sf_add_stack(b, stacks[i], stacks[i][2] ? 3 : 2);
}

/* n samples from `start` on, steps of 0..max_step µs (ties included),
 * nodes, pids, tids and weights of a realistic shape. */
static void gen_samples(struct smp_list *l, size_t n, int64_t start, int64_t max_step,
                        const uint32_t nodes[4])
{
	int64_t t = start;

	for (size_t i = 0; i < n; i++) {
		struct store_sample s = {0};
		uint64_t r = rnd();

		s.time_us = t;
		s.node = nodes[r % 4];
		s.pid = 100 + (uint32_t)(r >> 8) % 3;
		s.tid = (r >> 12) % 4 == 0 ? s.pid : s.pid * 10 + (uint32_t)(r >> 16) % 5;
		s.weight = (r >> 20) % 16 == 0 ? 1 + (r >> 24) % 50000 : 10101010;
		CHECK_OK(smp_push(l, &s));
		t += (int64_t)(rnd() % (uint64_t)(max_step + 1));
	}
}

/* Adds the samples of `l` to series `key` of s, in the order given, in
 * `commits` commits; with counts_only, as store_batch_add() would. */
static uint32_t put_samples(struct store *s, const struct store_series_key *key,
                            const struct smp_list *l, int commits, bool counts_only,
                            uint32_t nodes[4])
{
	uint32_t series = 0;
	size_t per = (l->n + (size_t)commits - 1) / (size_t)commits;

	for (size_t at = 0; at < l->n || at == 0; at += per) {
		struct store_batch *b = store_batch_new(s);

		if (!b) {
			CHECK(b != NULL);
			return 0;
		}
		CHECK_OK(store_batch_series(b, key, &series));
		four_stacks(b, nodes);
		for (size_t i = at; i < at + per && i < l->n; i++) {
			const struct store_sample *x = &l->v[i];

			if (counts_only) {
				int64_t sec = x->time_us / 1000000 - (x->time_us % 1000000 < 0);

				CHECK_OK(store_batch_add(b, series, sec, x->node, 1, x->weight));
			} else {
				CHECK_OK(store_batch_sample(b, series, x));
			}
		}
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
		if (!l->n)
			break;
	}
	return series;
}

/* Shuffles l in place. */
static void shuffle(struct smp_list *l)
{
	for (size_t i = l->n; i > 1; i--) {
		size_t j = rnd() % i;
		struct store_sample t = l->v[i - 1];

		l->v[i - 1] = l->v[j];
		l->v[j] = t;
	}
}

/* ---- tests ----------------------------------------------------------------- */

static const struct store_series_key key_wall = {NULL,        "wall",        "1",
                                                 "cpu-clock", "nanoseconds", NULL};
static const struct store_series_key key_neg = {NULL, "old", "1", "cpu-clock", "nanoseconds", NULL};

/* Samples in, in shuffled order over several commits (so a bucket's
 * detail is merged from pieces out of time order), walked back exact;
 * their counts equal store_batch_add()'s; windows are half-open. */
void test_samples_exact(void)
{
	char dir[PATH_MAX];
	struct store *a = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE), *c = NULL;
	struct smp_list wall = {0}, neg = {0};
	uint32_t nodes[4] = {0}, sw, sn;
	char *ca = NULL, *cc = NULL;

	if (!a)
		return;
	c = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	if (!c)
		goto out;
	rng = 42;
	/* 3000 samples over ~75 s, starting 0.5 s before a bucket boundary
	 * (1700000040 is a multiple of 60), and two exactly on it */
	gen_samples(&wall, 3000, 1700000039500000LL, 50000, (uint32_t[4]){1, 2, 3, 4});
	wall.v[10].time_us = 1700000040000000LL;
	wall.v[11].time_us = 1700000040000000LL;
	for (size_t i = 12; i < wall.n; i++)
		if (wall.v[i].time_us < 1700000040000000LL)
			wall.v[i].time_us = 1700000040000000LL;
	/* times around 1970: negative ones floor into earlier buckets */
	gen_samples(&neg, 500, -90000001LL, 400000, (uint32_t[4]){1, 2, 3, 4});
	neg.v[0].time_us = -60000000LL; /* exactly a bucket's start */
	neg.v[1].time_us = -1;
	neg.v[2].time_us = -60000001LL;

	/* The nodes of stacks[] are 1..? in a fresh store: intern first
	 * and rewrite the samples' nodes to the real ids. */
	{
		struct store_batch *b = store_batch_new(a);

		four_stacks(b, nodes);
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
		b = store_batch_new(c);
		uint32_t nc[4];
		four_stacks(b, nc);
		CHECK(!memcmp(nodes, nc, sizeof(nc)));
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	for (size_t i = 0; i < wall.n; i++)
		wall.v[i].node = nodes[wall.v[i].node - 1];
	for (size_t i = 0; i < neg.n; i++)
		neg.v[i].node = nodes[neg.v[i].node - 1];

	/* the order they come in: shuffled */
	shuffle(&wall);
	shuffle(&neg);
	sw = put_samples(a, &key_wall, &wall, 7, false, nodes);
	sn = put_samples(a, &key_neg, &neg, 3, false, nodes);
	put_samples(c, &key_wall, &wall, 1, true, nodes);
	put_samples(c, &key_neg, &neg, 1, true, nodes);

	/* counts: exactly what store_batch_add gives */
	ca = all_counts(a);
	cc = all_counts(c);
	CHECKF(ca && cc && !strcmp(ca, cc), "counts differ:\n%s\nvs\n%s", ca, cc);

	/* the detail: in the canonical order, ties in time included */
	smp_canonical_sort(&wall);
	smp_canonical_sort(&neg);
	check_window(a, sw, &wall, INT64_MIN, INT64_MAX);
	check_window(a, sn, &neg, INT64_MIN, INT64_MAX);
	/* half-open windows whose edges are samples' own times */
	check_window(a, sw, &wall, wall.v[100].time_us, wall.v[2000].time_us);
	check_window(a, sw, &wall, 1700000040000000LL, 1700000040000001LL);
	check_window(a, sw, &wall, 1700000039999999LL, 1700000040000000LL);
	check_window(a, sw, &wall, wall.v[5].time_us, wall.v[5].time_us);
	check_window(a, sn, &neg, -60000000LL, 0);
	check_window(a, sn, &neg, -60000001LL, -60000000LL);
	/* a window cut inside a bucket on both sides */
	check_window(a, sw, &wall, 1700000041234567LL, 1700000099876543LL);
	/* another series' window holds none of these */
	check_window(a, sn, &(struct smp_list){0}, wall.v[0].time_us, INT64_MAX);

	/* the series' moments, exact */
	struct store_series r;
	if (series_get(a, "wall", &r)) {
		CHECK(r.first_us == wall.v[0].time_us);
		CHECK(r.last_us == wall.v[wall.n - 1].time_us);
		CHECK(r.recent_samples == wall.n);
		CHECK(r.samples == wall.n);
		CHECK(r.first_seen == wall.v[0].time_us / 1000000);
	} else {
		CHECK(!"series wall listed");
	}
	if (series_get(a, "old", &r)) {
		CHECK(r.first_us == neg.v[0].time_us);
		CHECK(r.last_us == neg.v[neg.n - 1].time_us);
		CHECK(r.recent_samples == neg.n);
	}
	/* store_batch_add's moments: its `when`s */
	if (series_get(c, "wall", &r)) {
		CHECK(r.first_us == wall.v[0].time_us / 1000000 * 1000000);
		CHECK(r.recent_samples == 0);
	}
	/* the same after a reopen, from the records on disk */
	store_close(a);
	a = sf_open_rw(dir, 0);
	if (a && series_get(a, "wall", &r)) {
		CHECK(r.first_us == wall.v[0].time_us);
		CHECK(r.last_us == wall.v[wall.n - 1].time_us);
		CHECK(r.recent_samples == wall.n);
		check_window(a, sw, &wall, INT64_MIN, INT64_MAX);
	}
out:
	free(ca);
	free(cc);
	free(wall.v);
	free(neg.v);
	store_close(a);
	store_close(c);
}

/* A reader sees the samples after a refresh, and the same ones once the
 * writer's close has flushed them into table files (a secondary that
 * kept its memtable would walk them twice). */
void test_samples_reader(void)
{
	char dir[PATH_MAX];
	struct store *w = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE), *r = NULL;
	struct smp_list l = {0};
	uint32_t nodes[4], series = 0;

	if (!w)
		return;
	put_samples(w, &key_wall, &l, 1, false, nodes); /* the series, no samples */
	r = sf_open_rw(dir, STORE_READONLY);
	if (!r)
		goto out;
	rng = 7;
	gen_samples(&l, 800, 1700000100000000LL, 200000, nodes);
	series = put_samples(w, &key_wall, &l, 4, false, nodes);
	CHECK(store_refresh(r) == 1);
	check_window(r, series, &l, INT64_MIN, INT64_MAX);
	check_window(r, series, &l, l.v[100].time_us, l.v[700].time_us);
	CHECK(store_keep_samples(r) == STORE_DEFAULT_KEEP_SAMPLES);
	CHECK_OK(store_set_keep_samples(w, 3600 * 24));
	store_close(w);
	w = NULL;
	CHECK_OK(store_refresh(r));
	check_window(r, series, &l, INT64_MIN, INT64_MAX);
	CHECK(store_keep_samples(r) == 3600 * 24);
	struct store_series e;
	if (series_get(r, "wall", &e)) {
		CHECK(e.recent_samples == l.n);
		CHECK(e.first_us == l.v[0].time_us && e.last_us == l.v[l.n - 1].time_us);
	}
	/* a reader writes nothing */
	CHECK(store_set_keep_samples(r, 60) == -EROFS);
	CHECK(store_rollup(r, NULL) == -EROFS);
out:
	free(l.v);
	store_close(r);
	store_close(w);
}

/* The bucket end of a sample's bucket, in µs. */
static int64_t bucket_end_us(int64_t t)
{
	int64_t b = t / 60000000 - (t % 60000000 < 0);

	return (b + 1) * 60000000;
}

/* Roll-up forgets exactly the detail of the buckets that end at or
 * before (newest on the clock) - keep, on each clock, in one write, and
 * leaves every count as it was; keep 0 keeps no detail at all. */
void test_samples_rollup(void)
{
	char dir[PATH_MAX];
	struct store *s = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE);
	struct smp_list wall = {0}, boot = {0}, kw = {0}, kb = {0};
	struct store_rollup_stats st;
	uint32_t nodes[4], sw, sb;
	char *before = NULL, *after = NULL;
	uint64_t want_samples = 0, want_slices = 0;

	if (!s)
		return;
	put_samples(s, &key_wall, &wall, 1, false, nodes);
	rng = 99;
	/* 10 minutes of Unix time, and 10 minutes of perf's clock */
	gen_samples(&wall, 3000, 1700000010000000LL, 400000, nodes);
	gen_samples(&boot, 2000, 5000000000LL, 600000, nodes);
	/* the newest on each clock at a bucket's start, so that a bucket
	 * ends exactly at newest - keep (and goes) */
	wall.v[wall.n - 1].time_us = bucket_end_us(wall.v[wall.n - 1].time_us);
	boot.v[boot.n - 1].time_us = bucket_end_us(boot.v[boot.n - 1].time_us);
	sw = put_samples(s, &key_wall, &wall, 3, false, nodes);
	sb = put_samples(s, &key_neg, &boot, 2, false, nodes);
	CHECK_OK(store_set_keep_samples(s, 120));
	CHECK(store_keep_samples(s) == 120);
	before = all_counts(s);

	int64_t nw = wall.v[wall.n - 1].time_us, nb = boot.v[boot.n - 1].time_us;
	int64_t last_b = INT64_MIN;
	for (size_t i = 0; i < wall.n; i++) {
		bool gone = bucket_end_us(wall.v[i].time_us) <= nw - 120000000;

		if (!gone)
			CHECK_OK(smp_push(&kw, &wall.v[i]));
		else {
			want_samples++;
			want_slices += bucket_end_us(wall.v[i].time_us) != last_b;
			last_b = bucket_end_us(wall.v[i].time_us);
		}
	}
	last_b = INT64_MIN;
	for (size_t i = 0; i < boot.n; i++) {
		bool gone = bucket_end_us(boot.v[i].time_us) <= nb - 120000000;

		if (!gone)
			CHECK_OK(smp_push(&kb, &boot.v[i]));
		else {
			want_samples++;
			want_slices += bucket_end_us(boot.v[i].time_us) != last_b;
			last_b = bucket_end_us(boot.v[i].time_us);
		}
	}
	CHECK(kw.n > 0 && kw.n < wall.n && kb.n > 0 && kb.n < boot.n);

	CHECK(store_rollup(s, &st) == 0);
	CHECKF(st.samples == want_samples && st.slices == want_slices,
	       "rolled up %llu samples in %llu slices, want %llu in %llu",
	       (unsigned long long)st.samples, (unsigned long long)st.slices,
	       (unsigned long long)want_samples, (unsigned long long)want_slices);
	CHECK(st.bytes > 0);
	after = all_counts(s);
	CHECKF(before && after && !strcmp(before, after), "counts changed by the roll-up");
	check_window(s, sw, &kw, INT64_MIN, INT64_MAX);
	check_window(s, sb, &kb, INT64_MIN, INT64_MAX);
	struct store_series e;
	if (series_get(s, "wall", &e))
		CHECK(e.recent_samples == kw.n && e.samples == wall.n);
	/* again: nothing more to forget */
	CHECK(store_rollup(s, &st) == 0);
	CHECK(st.samples == 0 && st.slices == 0);

	/* after a reopen: the same, from disk */
	store_close(s);
	s = sf_open_rw(dir, 0);
	if (!s)
		goto out;
	CHECK(store_keep_samples(s) == 120);
	check_window(s, sw, &kw, INT64_MIN, INT64_MAX);
	if (series_get(s, "old", &e))
		CHECK(e.recent_samples == kb.n);

	/* keep 0: no detail at all, from now on too; counts stay */
	CHECK_OK(store_set_keep_samples(s, 0));
	CHECK(store_rollup(s, &st) == 0);
	CHECK(st.samples == kw.n + kb.n);
	check_window(s, sw, &(struct smp_list){0}, INT64_MIN, INT64_MAX);
	free(after);
	after = all_counts(s);
	CHECKF(before && after && !strcmp(before, after), "counts changed by the roll-up");
	struct smp_list more = {0};
	gen_samples(&more, 10, nw + 1000000, 1000, nodes);
	put_samples(s, &key_wall, &more, 1, false, nodes);
	check_window(s, sw, &(struct smp_list){0}, INT64_MIN, INT64_MAX);
	if (series_get(s, "wall", &e))
		CHECK(e.recent_samples == 0 && e.samples == wall.n + 10 &&
		      e.last_us == more.v[9].time_us);
	free(more.v);
	/* a batch open: refused */
	struct store_batch *b = store_batch_new(s);
	CHECK(store_rollup(s, &st) == -EBUSY);
	store_batch_free(b);
	CHECK(store_set_keep_samples(s, -1) == -EINVAL);
out:
	free(before);
	free(after);
	free(wall.v);
	free(boot.v);
	free(kw.v);
	free(kb.v);
	store_close(s);
}

/* Prune deletes the detail of the buckets it deletes, in the same write. */
void test_samples_prune(void)
{
	struct store *s = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct smp_list l = {0}, kept = {0};
	struct store_prune_stats pst;
	uint32_t nodes[4], series;
	int64_t cut = 1700000160; /* a bucket boundary (multiple of 60) */

	if (!s)
		return;
	put_samples(s, &key_wall, &l, 1, false, nodes);
	rng = 5;
	gen_samples(&l, 1500, 1700000000000000LL, 400000, nodes);
	series = put_samples(s, &key_wall, &l, 2, false, nodes);
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].time_us >= cut * 1000000)
			CHECK_OK(smp_push(&kept, &l.v[i]));
	CHECK(kept.n > 0 && kept.n < l.n);
	struct store_prune_opts o = {.before = cut};
	CHECK_OK(store_prune(s, &o, &pst));
	CHECK(pst.samples == l.n - kept.n);
	check_window(s, series, &kept, INT64_MIN, INT64_MAX);
	struct store_series e;
	if (series_get(s, "wall", &e)) {
		CHECK(e.recent_samples == kept.n);
		CHECK(e.samples == kept.n);
		CHECK(e.first_us == cut * 1000000);
	}
	/* everything: the series goes, and its detail */
	o.before = INT64_MAX;
	CHECK_OK(store_prune(s, &o, &pst));
	check_window(s, series, &(struct smp_list){0}, INT64_MIN, INT64_MAX);
	struct store_footprint fp;
	CHECK_OK(store_footprint(s, &fp));
	CHECK(fp.samples == 0);
	free(l.v);
	free(kept.v);
	store_close(s);
}

/* Appends a varint to p. */
static size_t put_uv(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t put_str(uint8_t *p, const char *s)
{
	size_t n = put_uv(p, strlen(s));

	memcpy(p + n, s, strlen(s));
	return n + strlen(s);
}

/* A store a schema 3 flamefs wrote (series records without moments):
 * read as it is (moments from the `when`s, no detail), left at 3 by a
 * reader and by a writer that writes nothing, upgraded to 4 by the first
 * write; an older flamefs then refuses it by its version. */
void test_samples_old_schema(void)
{
	char dir[PATH_MAX];
	struct store *s = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE);
	struct store_batch *b;
	struct sf_raw w;
	uint32_t series = 0, node = 0;
	uint8_t rec[256], key[5] = {'s', 0, 0, 0, 1};
	size_t n = 0, vlen;
	char *v;

	if (!s)
		return;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &key_wall, &series));
	node = sf_add_stack(b, sf_stack1, 3);
	CHECK_OK(store_batch_add(b, series, 1700000000, node, 5, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	char host[256];
	snprintf(host, sizeof(host), "%s", store_host(s));
	store_close(s);
	CHECK(series == 1);

	/* what schema 3 wrote */
	n += put_str(rec + n, host);
	n += put_str(rec + n, "wall");
	n += put_str(rec + n, "1");
	n += put_str(rec + n, "cpu-clock");
	n += put_str(rec + n, "nanoseconds");
	n += put_uv(rec + n, (uint64_t)1700000000 << 1);
	n += put_uv(rec + n, (uint64_t)1700000000 << 1);
	n += put_uv(rec + n, 5);
	n += put_uv(rec + n, 5);
	n += put_uv(rec + n, 0);
	if (sf_raw_open(dir, &w)) {
		sf_raw_put(&w, "mschema", 7, "\0\0\0\003", 4);
		sf_raw_put(&w, (char *)key, 5, (char *)rec, n);
	}
	sf_raw_close(&w);

	struct store *r = sf_open_rw(dir, STORE_READONLY);
	struct store_series e;
	if (r && series_get(r, "wall", &e)) {
		CHECK(e.first_us == 1700000000000000LL && e.last_us == 1700000000000000LL);
		CHECK(e.recent_samples == 0 && e.samples == 5);
		check_window(r, e.id, &(struct smp_list){0}, INT64_MIN, INT64_MAX);
	}
	store_close(r);
	s = sf_open_rw(dir, 0);
	store_close(s);
	if (sf_raw_open(dir, &w)) {
		v = sf_raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == 3);
		rocksdb_free(v);
	}
	sf_raw_close(&w);

	/* the first write upgrades it */
	s = sf_open_rw(dir, 0);
	if (!s)
		return;
	b = store_batch_new(s);
	struct store_sample smp = {1700000061500000LL, node, 10, 11, 7, 0, 0};
	CHECK_OK(store_batch_series(b, &key_wall, &series));
	CHECK_OK(store_batch_sample(b, series, &smp));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	if (series_get(s, "wall", &e)) {
		CHECK(e.first_us == 1700000000000000LL && e.last_us == smp.time_us);
		CHECK(e.recent_samples == 1 && e.samples == 6);
	}
	struct smp_list one = {&smp, 1, 1};
	check_window(s, series, &one, INT64_MIN, INT64_MAX);
	store_close(s);
	if (sf_raw_open(dir, &w)) {
		v = sf_raw_get(&w, "mschema", 7, &vlen);
		CHECK(v && vlen == 4 && v[3] == STORE_SCHEMA_VERSION);
		rocksdb_free(v);
	}
	sf_raw_close(&w);
}

/* Copies between directories: with samples, each bucket's detail comes
 * with its counts, nodes translated by content; without, only counts.
 * Counts are equal either way. */
void test_samples_copy(void)
{
	char sdir[PATH_MAX];
	struct store *src = sf_open_rw(strcpy(sdir, sf_fresh_dir()), STORE_CREATE);
	struct store *with = NULL, *without = NULL;
	struct smp_list l = {0}, m = {0};
	struct store_copy_opts o = {.incremental = false, .samples = true};
	struct store_copy_stats st;
	uint32_t nodes[4];
	char err[512] = "";
	char *cs = NULL, *cw = NULL, *co = NULL, *ds = NULL, *dw = NULL, *dn = NULL;

	if (!src)
		return;
	put_samples(src, &key_wall, &l, 1, false, nodes);
	rng = 11;
	gen_samples(&l, 1200, 1700000030000000LL, 300000, nodes);
	gen_samples(&m, 300, -30000000LL, 400000, nodes);
	put_samples(src, &key_wall, &l, 3, false, nodes);
	put_samples(src, &key_neg, &m, 1, false, nodes);
	/* counts without a moment, too */
	struct store_batch *b = store_batch_new(src);
	uint32_t series;
	CHECK_OK(store_batch_series(b, &key_wall, &series));
	CHECK_OK(store_batch_add(b, series, 1700000100, nodes[2], 3, 3000));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	with = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	without = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	if (!with || !without)
		goto out;
	/* other stacks first, so node ids differ from the source's */
	for (int i = 0; i < 2; i++) {
		struct store *d = i ? without : with;
		static const char *const other[2] = {"other", "stack"};

		b = store_batch_new(d);
		sf_add_stack(b, other, 2);
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	CHECKF(store_copy(with, src, &o, &st, err, sizeof(err)) == 0, "%s", err);
	o.samples = false;
	CHECKF(store_copy(without, src, &o, &st, err, sizeof(err)) == 0, "%s", err);

	cs = all_counts(src);
	cw = all_counts(with);
	co = all_counts(without);
	CHECKF(cs && cw && !strcmp(cs, cw), "counts differ with samples:\n%s\nvs\n%s", cs, cw);
	CHECKF(cs && co && !strcmp(cs, co), "counts differ without samples");
	ds = all_detail(src);
	dw = all_detail(with);
	dn = all_detail(without);
	CHECKF(ds && dw && !strcmp(ds, dw), "detail differs:\n%s\nvs\n%s", ds, dw);
	CHECK(ds && strlen(ds) > 1000);
	/* without: the series and no detail line */
	CHECK(dn && !strchr(strchr(dn, '\n') + 1, ';') && !strstr(dn, " 10101010\n"));
	struct store_series e, f;
	if (series_get(src, "wall", &e) && series_get(with, "wall", &f)) {
		CHECK(f.recent_samples == e.recent_samples && e.recent_samples == l.n);
		CHECKF(f.first_us == e.first_us && f.last_us == e.last_us,
		       "moments %lld..%lld, source %lld..%lld", (long long)f.first_us,
		       (long long)f.last_us, (long long)e.first_us, (long long)e.last_us);
	}
	if (series_get(without, "wall", &f)) {
		CHECK(f.recent_samples == 0 && f.samples == e.samples);
		CHECKF(f.first_us == e.first_us && f.last_us == e.last_us,
		       "moments without samples %lld..%lld, source %lld..%lld",
		       (long long)f.first_us, (long long)f.last_us, (long long)e.first_us,
		       (long long)e.last_us);
	}
out:
	free(cs);
	free(cw);
	free(co);
	free(ds);
	free(dw);
	free(dn);
	free(l.v);
	free(m.v);
	store_close(src);
	store_close(with);
	store_close(without);
}

/* A copy without samples gives each series the source's exact first and
 * last moment, not its buckets' starts; two sources into one directory
 * widen them (the earliest first, the latest last), and a copy whose
 * moments lie inside the destination's narrows nothing. */
void test_samples_copy_moments(void)
{
	char adir[4096], bdir[4096];
	struct store *a = sf_open_rw(strcpy(adir, sf_fresh_dir()), STORE_CREATE);
	struct store *b = sf_open_rw(strcpy(bdir, sf_fresh_dir()), STORE_CREATE);
	struct store *d = NULL, *ab = NULL;
	struct smp_list la = {0}, lb = {0};
	struct store_copy_opts o = {.incremental = false, .samples = false};
	struct store_copy_stats st;
	struct store_series ea, eb, f;
	uint32_t nodes[4];
	char err[512] = "";

	if (!a || !b)
		goto out;
	rng = 23;
	/* a: 1700000100.250 .. about 1700000250, b: 1700000041.500 .. about
	 * 1700000160, so b's first is the earlier and a's last the later;
	 * none of them a bucket's start */
	put_samples(a, &key_wall, &la, 1, false, nodes); /* interns the stacks */
	gen_samples(&la, 500, 1700000100250000LL, 600000, nodes);
	put_samples(a, &key_wall, &la, 2, false, nodes);
	put_samples(b, &key_wall, &lb, 1, false, nodes);
	gen_samples(&lb, 400, 1700000041500000LL, 600000, nodes);
	put_samples(b, &key_wall, &lb, 2, false, nodes);
	if (!series_get(a, "wall", &ea) || !series_get(b, "wall", &eb)) {
		CHECK(!"source series");
		goto out;
	}
	CHECK(ea.first_us == la.v[0].time_us && ea.last_us == la.v[la.n - 1].time_us);
	CHECK(eb.first_us == lb.v[0].time_us && eb.last_us == lb.v[lb.n - 1].time_us);
	CHECK(ea.first_us % 60000000 != 0 && ea.last_us % 60000000 != 0);
	CHECK(eb.first_us < ea.first_us && eb.last_us < ea.last_us && eb.last_us > ea.first_us);

	d = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	ab = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	if (!d || !ab)
		goto out;
	CHECKF(store_copy(d, a, &o, &st, err, sizeof(err)) == 0, "%s", err);
	if (series_get(d, "wall", &f))
		CHECKF(f.first_us == ea.first_us && f.last_us == ea.last_us,
		       "one source: %lld..%lld, source %lld..%lld", (long long)f.first_us,
		       (long long)f.last_us, (long long)ea.first_us, (long long)ea.last_us);
	else
		CHECK(!"copied series");
	/* a second source, reaching earlier and ending before a's last */
	CHECKF(store_copy(d, b, &o, &st, err, sizeof(err)) == 0, "%s", err);
	if (series_get(d, "wall", &f))
		CHECKF(f.first_us == eb.first_us && f.last_us == ea.last_us,
		       "two sources: %lld..%lld, want %lld..%lld", (long long)f.first_us,
		       (long long)f.last_us, (long long)eb.first_us, (long long)ea.last_us);
	else
		CHECK(!"copied series");
	/* the other order, and with --samples, gives the same */
	o.samples = true;
	CHECKF(store_copy(ab, b, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECKF(store_copy(ab, a, &o, &st, err, sizeof(err)) == 0, "%s", err);
	if (series_get(ab, "wall", &f))
		CHECKF(f.first_us == eb.first_us && f.last_us == ea.last_us,
		       "two sources, other order: %lld..%lld, want %lld..%lld",
		       (long long)f.first_us, (long long)f.last_us, (long long)eb.first_us,
		       (long long)ea.last_us);
	else
		CHECK(!"copied series");
out:
	free(la.v);
	free(lb.v);
	store_close(a);
	store_close(b);
	store_close(d);
	store_close(ab);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct million {
	uint64_t n;
	int64_t last;
	bool ordered;
	uint64_t weight;
};

static int million_fn(void *ctx, const struct store_sample *smp)
{
	struct million *m = ctx;

	m->ordered &= smp->time_us >= m->last;
	m->last = smp->time_us;
	m->n++;
	m->weight += smp->weight;
	return 0;
}

/* A million samples (99 Hz on two CPUs for 84 minutes), compacted, are
 * walked back in time order well within a second and a half. */
void test_samples_million(void)
{
	struct store *s = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct smp_list none = {0};
	uint32_t nodes[4], series = 0;
	uint64_t weight = 0;
	const size_t total = 1000000;

	if (!s)
		return;
	series = put_samples(s, &key_wall, &none, 1, false, nodes);
	rng = 3;
	/* one batch a minute of samples, as a recorder's drains would add */
	for (size_t done = 0; done < total;) {
		struct store_batch *b = store_batch_new(s);

		for (size_t i = 0; i < 11880 && done < total; i++, done++) {
			uint64_t r = rnd();
			struct store_sample smp = {
			        .time_us = 1700000000000000LL + (int64_t)done * 5050 +
			                   (int64_t)(r % 50),
			        .node = nodes[r % 4],
			        .pid = 300 + (uint32_t)(r >> 10) % 4,
			        .tid = 300 + (uint32_t)(r >> 10) % 4,
			        .weight = 10101010,
			};

			CHECK_OK(store_batch_sample(b, series, &smp));
			weight += smp.weight;
		}
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	CHECK_OK(store_compact(s));
	struct million m = {.last = INT64_MIN, .ordered = true};
	double t0 = now_s();
	CHECK_OK(store_series_samples(s, series, INT64_MIN, INT64_MAX, million_fn, &m));
	double t = now_s() - t0;
	printf("  %llu samples walked in %.3f s (%.0f ns a sample)\n", (unsigned long long)m.n, t,
	       t * 1e9 / (double)(m.n ? m.n : 1));
	CHECK(m.n == total && m.ordered && m.weight == weight);
	CHECKF(t < 1.5, "%.3f s", t);
	store_close(s);
}

/* The writer rolls up on its own: once a commit moves the keep window
 * past a bucket, the detail of the buckets behind it goes, with no call
 * to store_rollup(); the counts stay those of store_batch_add(). */
void test_samples_rollup_auto(void)
{
	struct store *s = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct store *c = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	struct smp_list l = {0}, kept = {0}, part = {0};
	uint32_t nodes[4], series = 0;
	char *cs = NULL, *cc = NULL;

	if (!s || !c)
		goto out;
	CHECK_OK(store_set_keep_samples(s, 90));
	put_samples(s, &key_wall, &l, 1, false, nodes);
	rng = 17;
	/* ten minutes, drained a minute at a time in time order */
	gen_samples(&l, 3000, 1700000000000000LL, 400000, nodes);
	for (size_t at = 0; at < l.n; at += 300) {
		part.v = l.v + at;
		part.n = part.cap = l.n - at < 300 ? l.n - at : 300;
		series = put_samples(s, &key_wall, &part, 1, false, nodes);
	}
	put_samples(c, &key_wall, &l, 1, true, nodes);
	int64_t newest = l.v[l.n - 1].time_us;
	for (size_t i = 0; i < l.n; i++)
		if (bucket_end_us(l.v[i].time_us) > newest - 90000000)
			CHECK_OK(smp_push(&kept, &l.v[i]));
	CHECK(kept.n > 0 && kept.n < l.n / 2);
	check_window(s, series, &kept, INT64_MIN, INT64_MAX);
	cs = all_counts(s);
	cc = all_counts(c);
	CHECKF(cs && cc && !strcmp(cs, cc), "counts differ from store_batch_add's");
	struct store_series e;
	if (series_get(s, "wall", &e))
		CHECK(e.recent_samples == kept.n && e.samples == l.n);
	struct store_rollup_stats st;
	CHECK(store_rollup(s, &st) == 0 && st.samples == 0);
out:
	free(cs);
	free(cc);
	free(l.v);
	free(kept.v);
	store_close(s);
	store_close(c);
}

/* ---- crash consistency (test-crash.sh) ------------------------------------- */

struct tier_ent {
	int64_t bucket;
	uint32_t node;
	uint64_t samples, weight;
};

struct tier_list {
	struct tier_ent *v;
	size_t n, cap;
};

static int tier_push(struct tier_list *l, int64_t bucket, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct tier_ent *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct tier_ent){bucket, node, samples, weight};
	return 0;
}

static int tier_count(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	return tier_push(ctx, bucket, node, samples, weight);
}

static int tier_sample(void *ctx, const struct store_sample *smp)
{
	int64_t b = smp->time_us / 60000000 - (smp->time_us % 60000000 < 0);

	return tier_push(ctx, b * 60, smp->node, 1, smp->weight);
}

static int tier_cmp(const void *a, const void *b)
{
	const struct tier_ent *x = a, *y = b;

	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Sums entries with the same (bucket, node); l sorted first. */
static void tier_fold(struct tier_list *l)
{
	size_t o = 0;

	qsort(l->v, l->n, sizeof(*l->v), tier_cmp);
	for (size_t i = 0; i < l->n; i++) {
		if (o && !tier_cmp(&l->v[o - 1], &l->v[i])) {
			l->v[o - 1].samples += l->v[i].samples;
			l->v[o - 1].weight += l->v[i].weight;
		} else {
			l->v[o++] = l->v[i];
		}
	}
	l->n = o;
}

int sf_check_tier(const char *dir)
{
	struct store *s = NULL;
	struct store_series *list = NULL;
	char err[512];
	size_t n = 0;
	int bad = 0;

	if (store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0) {
		printf("no store: %s\n", err);
		return 2;
	}
	if (store_series_list(s, &list, &n) < 0) {
		printf("listing: %s\n", store_errmsg(s));
		store_close(s);
		return 1;
	}
	int64_t newest = INT64_MIN, keep = store_keep_samples(s) * 1000000;
	uint64_t whole = 0, gone = 0;
	for (size_t i = 0; i < n; i++)
		if (list[i].last_us > newest)
			newest = list[i].last_us;
	for (size_t i = 0; i < n && !bad; i++) {
		struct tier_list c = {0}, d = {0};
		uint64_t held = 0;

		if (store_series_counts(s, list[i].id, INT64_MIN, INT64_MAX, tier_count, &c) < 0 ||
		    store_series_samples(s, list[i].id, INT64_MIN, INT64_MAX, tier_sample, &d) <
		            0) {
			printf("%s: reading: %s\n", list[i].binary, store_errmsg(s));
			bad = 1;
		}
		tier_fold(&d);
		for (size_t k = 0; k < d.n; k++)
			held += d.v[k].samples;
		if (!bad && held != list[i].recent_samples) {
			printf("%s: %llu samples of detail, the series says %llu\n", list[i].binary,
			       (unsigned long long)held,
			       (unsigned long long)list[i].recent_samples);
			bad = 1;
		}
		/* per bucket: the detail equals the counts (whole), or there
		 * is none (gone, and then only behind the keep window) */
		size_t a = 0, b = 0;
		while (!bad && a < c.n) {
			int64_t bucket = c.v[a].bucket;
			size_t a1 = a, b1;

			while (a1 < c.n && c.v[a1].bucket == bucket)
				a1++;
			while (b < d.n && d.v[b].bucket < bucket) {
				printf("%s: detail in bucket %lld without counts\n", list[i].binary,
				       (long long)d.v[b].bucket);
				bad = 1;
				b++;
			}
			for (b1 = b; b1 < d.n && d.v[b1].bucket == bucket; b1++)
				;
			if (b1 == b) {
				gone++;
				if (keep > 0 && (bucket + 60) * 1000000 > newest - keep) {
					printf("%s: bucket %lld lost its detail inside the keep "
					       "window\n",
					       list[i].binary, (long long)bucket);
					bad = 1;
				}
			} else if (b1 - b != a1 - a) {
				bad = 1;
			} else {
				for (size_t k = 0; k < a1 - a; k++)
					if (tier_cmp(&c.v[a + k], &d.v[b + k]) ||
					    c.v[a + k].samples != d.v[b + k].samples ||
					    c.v[a + k].weight != d.v[b + k].weight)
						bad = 1;
				whole++;
			}
			if (bad && b1 != b)
				printf("%s: bucket %lld: its detail is not its counts\n",
				       list[i].binary, (long long)bucket);
			a = a1;
			b = b1;
		}
		if (!bad && b < d.n) {
			printf("%s: detail after the last counts\n", list[i].binary);
			bad = 1;
		}
		free(c.v);
		free(d.v);
	}
	if (!bad)
		printf("ok: %zu series, %llu buckets with their detail whole, %llu rolled up\n", n,
		       (unsigned long long)whole, (unsigned long long)gone);
	store_series_free(list, n);
	store_close(s);
	return bad;
}

static void put_be32_test(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A damaged detail block fails the walk over it with -EIO and a message
 * naming the series and the bucket; the counts read as before. */
void test_samples_damaged(void)
{
	char dir[PATH_MAX];
	struct store *s = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE);
	struct smp_list l = {0};
	uint32_t nodes[4];
	struct sf_raw w;
	char *before = NULL;
	/* the bucket of 1700000000 s: index 28333333, offset-binary */
	uint32_t bucket = 28333333u ^ 0x80000000u;
	/* a sealed block (piece 0) beside the bucket's pieces */
	uint8_t key[17] = {'d', 0, 0, 0, 1};
	put_be32_test(key + 5, bucket);
	static const struct {
		const char *what;
		const char *v;
		size_t len;
	} bad[] = {
	        /* samples blocks (store/samples-block-internal.h): n, flags, k
	         * nodes, m (pid, tid) pairs, w0, n times, n indexes */
	        {"garbage", "\xff\xff", 2},
	        {"truncated", "\x05\x01\x02", 3},
	        {"a time past the bucket's end", "\x01\x00\x01\x01\x01\x01\x00\x01\x80\x8e\xce\x1c",
	         12},
	        {"a node the store does not have", "\x01\x00\x01\xc0\x84\x3d\x01\x01\x00\x01\x00",
	         11},
	        {"an index past the block's nodes",
	         "\x02\x00\x02\x01\x01\x01\x01\x00\x01\x00\x00\x00\x05", 13},
	        {"unknown flags", "\x01\x02\x01\x01\x01\x01\x00\x01\x00", 9},
	        {"bytes after the columns", "\x01\x00\x01\x01\x01\x01\x00\x01\x00\x00", 10},
	        {"samples out of the canonical order",
	         "\x02\x00\x02\x01\x01\x01\x01\x00\x01\x00\x00\x01\x00", 13},
	};

	if (!s)
		return;
	put_samples(s, &key_wall, &l, 1, false, nodes);
	rng = 1;
	gen_samples(&l, 50, 1700000000000000LL, 100000, nodes);
	put_samples(s, &key_wall, &l, 1, false, nodes);
	before = all_counts(s);
	store_close(s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct smp_list got = {0};

		if (sf_raw_open(dir, &w))
			sf_raw_put(&w, (char *)key, sizeof(key), bad[i].v, bad[i].len);
		sf_raw_close(&w);
		s = sf_open_rw(dir, STORE_READONLY);
		if (!s)
			break;
		int r = store_series_samples(s, 1, INT64_MIN, INT64_MAX, smp_collect, &got);
		CHECKF(r == -EIO, "%s: %d", bad[i].what, r);
		CHECKF(strstr(store_errmsg(s), "store is damaged: the detail of series 1 at "
		                               "1699999980"),
		       "%s: %s", bad[i].what, store_errmsg(s));
		char *now = all_counts(s);
		CHECKF(now && before && !strcmp(now, before), "%s: the counts changed",
		       bad[i].what);
		free(now);
		free(got.v);
		store_close(s);
	}
	/* a prune takes a damaged block with its bucket */
	s = sf_open_rw(dir, 0);
	if (s) {
		struct store_prune_stats pst;
		struct store_prune_opts o = {.before = INT64_MAX};
		struct smp_list got = {0};

		CHECK_OK(store_prune(s, &o, &pst));
		CHECK(store_series_samples(s, 1, INT64_MIN, INT64_MAX, smp_collect, &got) == 0 &&
		      got.n == 0);
		free(got.v);
		store_close(s);
	}
	free(before);
	free(l.v);
}

/* Detail keys of the store at dir: how many, and how many buckets they
 * cover (raw, through RocksDB). */
static void detail_keys(const char *dir, size_t *keys, size_t *buckets)
{
	struct sf_raw w;

	*keys = *buckets = 0;
	if (sf_raw_open(dir, &w)) {
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_iterator_t *it = rocksdb_create_iterator_cf(w.db, ro, w.cf[0]);
		uint8_t last[9] = {0};

		for (rocksdb_iter_seek(it, "d", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			size_t klen;
			const char *k = rocksdb_iter_key(it, &klen);

			if (klen < 1 || k[0] != 'd')
				break;
			CHECK(klen == 17);
			(*keys)++;
			if (klen >= 9 && memcmp(last, k, 9)) {
				(*buckets)++;
				memcpy(last, k, 9);
			}
		}
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
	}
	sf_raw_close(&w);
}

/* A recorder's drains: one commit a second, so a bucket gets a piece a
 * second; once it has closed (a whole bucket behind the newest moment)
 * the writer seals its pieces into one block, and the walk is the same
 * before and after, and after a reopen. */
void test_samples_sealed(void)
{
	char dir[PATH_MAX];
	struct store *s = sf_open_rw(strcpy(dir, sf_fresh_dir()), STORE_CREATE);
	struct smp_list l = {0}, part = {0};
	uint32_t nodes[4], series = 0;
	size_t keys, buckets;

	if (!s)
		return;
	put_samples(s, &key_wall, &l, 1, false, nodes);
	rng = 23;
	/* 5 minutes from the middle of a bucket, about 40 samples a second */
	gen_samples(&l, 12000, 1700000070000000LL, 50000, nodes);
	for (size_t at = 0; at < l.n;) {
		int64_t sec = l.v[at].time_us / 1000000;
		size_t e = at;

		while (e < l.n && l.v[e].time_us / 1000000 == sec)
			e++;
		part.v = l.v + at;
		part.n = part.cap = e - at;
		series = put_samples(s, &key_wall, &part, 1, false, nodes);
		at = e;
	}
	check_window(s, series, &l, INT64_MIN, INT64_MAX);
	check_window(s, series, &l, l.v[3000].time_us, l.v[9000].time_us);
	store_close(s);
	detail_keys(dir, &keys, &buckets);
	/* buckets ending a whole bucket before the newest sample are one
	 * block each; the others still hold a piece a second */
	int64_t newest = l.v[l.n - 1].time_us;
	size_t closed = 0, all = 0;
	int64_t prev = INT64_MIN;
	for (size_t i = 0; i < l.n; i++) {
		int64_t b = l.v[i].time_us / 60000000;

		if (b == prev)
			continue;
		prev = b;
		all++;
		closed += (b + 1) * 60000000 <= newest - 60000000;
	}
	CHECKF(buckets == all && closed >= 3, "%zu buckets, %zu closed of %zu", buckets, closed,
	       all);
	CHECKF(keys <= closed + (all - closed) * 61 && keys > all, "%zu keys, %zu buckets", keys,
	       buckets);
	s = sf_open_rw(dir, STORE_READONLY);
	if (s) {
		check_window(s, series, &l, INT64_MIN, INT64_MAX);
		store_close(s);
	}
	/* a roll-up of buckets still in pieces counts each bucket once: a
	 * copy of the store with a keep window of a second forgets every
	 * bucket but the newest's, the one before it unsealed */
	char copy[PATH_MAX + 64], cmd[2 * PATH_MAX + 128];
	snprintf(copy, sizeof(copy), "%s.copy", dir);
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", dir, copy);
	CHECK(system(cmd) == 0);
	s = sf_open_rw(copy, 0);
	if (s) {
		struct store_rollup_stats st;
		uint64_t want = 0, want_slices = 0;
		int64_t last_end = INT64_MIN;

		for (size_t i = 0; i < l.n; i++) {
			int64_t end = bucket_end_us(l.v[i].time_us);

			if (end > newest - 1000000)
				continue;
			want++;
			want_slices += end != last_end;
			last_end = end;
		}
		/* the last bucket forgotten had not closed: still in pieces */
		CHECK(last_end > newest - 60000000);
		CHECK_OK(store_set_keep_samples(s, 1));
		CHECK_OK(store_rollup(s, &st));
		CHECKF(st.slices == want_slices && st.samples == want,
		       "%llu slices, %llu samples; want %llu, %llu", (unsigned long long)st.slices,
		       (unsigned long long)st.samples, (unsigned long long)want_slices,
		       (unsigned long long)want);
		store_close(s);
	}
	/* one more drain two minutes later: every earlier bucket has closed
	 * and is sealed (a new writer looks at all of them once) */
	s = sf_open_rw(dir, 0);
	if (s) {
		struct store_sample one = {newest + 120000000, nodes[0], 1, 1, 1, 0, 0};
		struct smp_list more = {&one, 1, 1};

		put_samples(s, &key_wall, &more, 1, false, nodes);
		CHECK_OK(smp_push(&l, &one));
		check_window(s, series, &l, INT64_MIN, INT64_MAX);
		store_close(s);
	}
	detail_keys(dir, &keys, &buckets);
	CHECKF(keys == buckets && buckets == all + 1, "%zu keys, %zu buckets", keys, buckets);
	free(l.v);
}
