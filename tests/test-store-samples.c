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
 * (time order, ties in arrival order) that lie in it. */
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

/* Stable sort by time (insertion sort over an index: the lists are small
 * enough, and stability is the point). */
static int smp_time_cmp(const void *a, const void *b)
{
	const struct store_sample *x = a, *y = b;

	return x->time_us < y->time_us ? -1 : x->time_us > y->time_us;
}

struct idx_smp {
	struct store_sample s;
	size_t i;
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx_smp *x = a, *y = b;
	int c = smp_time_cmp(&x->s, &y->s);

	return c ? c : x->i < y->i ? -1 : x->i > y->i;
}

static void smp_stable_sort(struct smp_list *l)
{
	struct idx_smp *t = malloc((l->n ? l->n : 1) * sizeof(*t));

	if (!t) {
		CHECK(t != NULL);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		t[i].s = l->v[i];
		t[i].i = i;
	}
	qsort(t, l->n, sizeof(*t), idx_cmp);
	for (size_t i = 0; i < l->n; i++)
		l->v[i] = t[i].s;
	free(t);
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

static int counts_line(void *ctx, int64_t bucket, uint32_t node, uint64_t samples,
                       uint64_t weight)
{
	char line[128];

	snprintf(line, sizeof(line), "%lld %u %llu %llu\n", (long long)bucket, node,
	         (unsigned long long)samples, (unsigned long long)weight);
	return text_add(ctx, line);
}

/* The counts of every series of s, as text (free it). */
static char *all_counts(struct store *s)
{
	struct store_series *list = NULL;
	struct counts_text t = {0};
	size_t n = 0;

	CHECK_OK(store_series_list(s, &list, &n));
	CHECK_OK(text_add(&t, ""));
	for (size_t i = 0; i < n; i++) {
		char head[512];

		snprintf(head, sizeof(head), "series %s/%s/%s/%s %llu %llu\n", list[i].host,
		         list[i].binary, list[i].version, list[i].event,
		         (unsigned long long)list[i].samples, (unsigned long long)list[i].weight);
		CHECK_OK(text_add(&t, head));
		CHECK_OK(store_series_counts(s, list[i].id, INT64_MIN, INT64_MAX, counts_line, &t));
	}
	store_series_free(list, n);
	return t.p;
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
		struct store_sample s;
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

static const struct store_series_key key_wall = {NULL, "wall", "1", "cpu-clock", "nanoseconds"};
static const struct store_series_key key_neg = {NULL, "old", "1", "cpu-clock", "nanoseconds"};

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

	/* the detail: time order, ties in arrival order */
	smp_stable_sort(&wall);
	smp_stable_sort(&neg);
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
