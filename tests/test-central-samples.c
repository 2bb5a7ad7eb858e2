/*
 * test-central-samples.c — the central store's unit tests (run by
 * test-central.c) of the recent tier: samples written in rounds and read
 * back whole and by window, copied, rolled up, read in one snapshot.
 */
#include "central-fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One round of test_samples: 1500 samples over three buckets of "app"
 * (with its edges, and in round 1 a sample taken twice), their counts
 * in "ref" by batch_add, 4 on perf's clock in "boot", and samples
 * refused, in one commit.  nodes[] gets the five stacks. */
static void samples_write_round(struct store *w, int round, uint64_t *x, uint32_t nodes[5],
                                struct svec *all, struct svec *boot)
{
	static const char *stacks[] = {"main;a", "main;a;b", "main;c", "main;c;d;e", "idle"};
	struct store_batch *b = store_batch_new(w);
	uint32_t sa = series(b, "h", "app"), sb = series(b, "h", "ref"),
	         sboot = series(b, "h", "boot");

	for (int i = 0; i < 5; i++)
		nodes[i] = stack(b, stacks[i]);
	/* three buckets, two commits (two rows a bucket), with its edges
	 * and a sample taken twice */
	for (int i = 0; i < 1500; i++) {
		struct store_sample smp = gen_sample(x, T0US, 180 * US, nodes, 5);

		if (i == 0)
			smp.time_us = T0US + round * 60 * US;
		if (i == 1)
			smp.time_us = T0US + (round + 1) * 60 * US - 1;
		if (i == 2 && round)
			smp = all->v[17];
		CHECK(store_batch_sample(b, sa, &smp) == 0);
		CHECK(store_batch_add(b, sb, (smp.time_us / US), smp.node, 1, smp.weight) == 0);
		svec_add(all, &smp);
	}
	/* perf's clock, below 1970 too */
	for (int i = 0; i < 4; i++) {
		struct store_sample smp = {.time_us = round ? -1 - i : 5 * US + i * 70 * US,
		                           .node = nodes[i],
		                           .pid = 1,
		                           .tid = 1,
		                           .weight = 1};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	{
		struct store_sample bad = {.time_us = T0US, .node = 1u << 30};

		CHECK(store_batch_sample(b, sa, &bad) == -EINVAL);
		bad.node = nodes[0];
		CHECK(store_batch_sample(b, 999, &bad) == -EINVAL);
		bad.time_us = INT64_MIN;
		CHECK(store_batch_sample(b, sa, &bad) == -ERANGE);
		bad.time_us = INT64_MAX;
		CHECK(store_batch_sample(b, sa, &bad) == -ERANGE);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
}

/* The "app" series' totals and moments, and the same detail through the
 * documented SQL decoder: its id. */
static uint32_t samples_check_app(struct store *r, const struct svec *all)
{
	struct store_series e;
	uint32_t sa = find_series(r, "h", "app", &e);
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	uint64_t wsum = 0;
	__uint128_t sum = 0;
	char want[64], chk[64];

	CHECK(e.samples == 3000 && e.recent_samples == 3000);
	for (size_t i = 0; i < all->n; i++) {
		lo = all->v[i].time_us < lo ? all->v[i].time_us : lo;
		hi = all->v[i].time_us > hi ? all->v[i].time_us : hi;
		wsum += all->v[i].weight;
	}
	CHECK(e.first_us == lo && e.last_us == hi);
	CHECK(lo == T0US && hi < T0US + 180 * US);
	CHECK(e.weight == wsum);
	/* the documented decoder gives the same detail in SQL */
	snprintf(want, sizeof(want), "3000 %" PRIu64, wsum);
	CHECK_STR(sql("c_smp",
	              "SELECT count(*) || ' ' || sum(weight) FROM sample_entries"
	              " WHERE series = %u",
	              sa),
	          want);
	for (size_t i = 0; i < all->n; i++)
		sum += (__uint128_t)((uint64_t)all->v[i].time_us % 1000003) * 7 +
		       all->v[i].node * 131u + all->v[i].pid * 17u + all->v[i].tid;
	snprintf(chk, sizeof(chk), "%" PRIu64, (uint64_t)sum);
	CHECK_STR(sql("c_smp",
	              "SELECT sum((time_us %% 1000003) * 7 + node * 131 + pid * 17"
	              " + tid) FROM sample_entries WHERE series = %u",
	              sa),
	          chk);
	return sa;
}

/* Walks of "app": its counts equal "ref"'s, the whole series and
 * windows with edges exact, and a walk that stops where its callback
 * says. */
static void samples_check_walks(struct store *r, uint32_t sa, struct svec *all)
{
	static const int64_t win[][2] = {{T0US + 12345678, T0US + 100000000},
	                                 {T0US + 60 * US, T0US + 120 * US},
	                                 {T0US + 60 * US - 1, T0US + 60 * US + 1},
	                                 {T0US - 1, T0US + 1},
	                                 {T0US + 5, T0US + 5},
	                                 {T0US + 200 * US, INT64_MAX}};
	struct store_series e;
	uint32_t sb = find_series(r, "h", "ref", &e);
	struct svec got, st = {.stop_after = 10};
	char a[4096];

	CHECK(e.recent_samples == 0 && e.first_us == T0US);
	snprintf(a, sizeof(a), "%s", dump(r, sa, INT64_MIN, INT64_MAX));
	CHECK_STR(dump(r, sb, INT64_MIN, INT64_MAX), a);
	CHECK(strlen(a) > 100);
	got = walk(r, sa, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, all, "the whole series"));
	free(got.v);
	for (size_t i = 0; i < sizeof(win) / sizeof(win[0]); i++) {
		struct svec wnt = svec_window(all, win[i][0], win[i][1]);
		char what[64];

		snprintf(what, sizeof(what), "window %zu", i);
		got = walk(r, sa, win[i][0], win[i][1]);
		CHECK(same_detail(&got, &wnt, what));
		if (i == 3)
			CHECK(got.n >= 1 && got.v[0].time_us == T0US);
		free(got.v);
		free(wnt.v);
	}
	/* a walk stops where its callback says */
	CHECK(store_series_samples(r, sa, INT64_MIN, INT64_MAX, svec_fn, &st) == 7);
	CHECK(st.n == 10);
	free(st.v);
}

/* keep 0: counted, no detail kept, from then on; then the default again. */
static void samples_keep_zero(struct store *w, uint32_t node)
{
	struct store_batch *b;
	struct store *r;
	struct store_series e;
	struct store_sample smp = {.time_us = T0US + 3, .node = node, .weight = 5};

	CHECK(store_set_keep_samples(w, 0) == 0 && store_keep_samples(w) == 0);
	b = store_batch_new(w);
	CHECK(store_batch_sample(b, series(b, "h", "app"), &smp) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_smp", STORE_READONLY);
	if (r) {
		CHECK(store_keep_samples(r) == 0);
		find_series(r, "h", "app", &e);
		CHECK(e.samples == 3001 && e.recent_samples == 3000 && e.first_us == T0US);
		store_close(r);
	}
	CHECK(store_set_keep_samples(w, -1) == -EINVAL);
	CHECK(store_set_keep_samples(w, STORE_DEFAULT_KEEP_SAMPLES) == 0);
}

/* Samples in, walked back exact; counts equal to batch_add's. */
void test_samples(void)
{
	struct store *w, *r;
	struct svec all = {0}, boot = {0}, got, wnt;
	struct store_series e;
	uint32_t sa, sboot, nodes[5];
	uint64_t x = 88172645463325252ull;

	fresh_db("c_smp");
	w = open_ok("c_smp", STORE_CREATE);
	if (!w)
		return;
	CHECK(store_keep_samples(w) == STORE_DEFAULT_KEEP_SAMPLES);
	for (int round = 0; round < 2; round++)
		samples_write_round(w, round, &x, nodes, &all, &boot);
	r = open_ok("c_smp", STORE_READONLY);
	if (!r)
		goto out;
	sa = samples_check_app(r, &all);
	samples_check_walks(r, sa, &all);
	sboot = find_series(r, "h", "boot", &e);
	CHECK(e.first_us == -4 && e.last_us == 5 * US + 210 * US && e.recent_samples == 8);
	got = walk(r, sboot, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &boot, "perf's clock"));
	free(got.v);
	/* the writer reads its own detail too */
	got = walk(w, sa, T0US, T0US + 60 * US);
	wnt = svec_window(&all, T0US, T0US + 60 * US);
	CHECK(same_detail(&got, &wnt, "the writer's walk"));
	free(wnt.v);
	free(got.v);
	store_close(r);
	samples_keep_zero(w, nodes[0]);
out:
	free(all.v);
	free(boot.v);
	store_close(w);
}

/* A copy's detail: batch_detail replaces what the same source gave a
 * (series, bucket) before, beside other sources' and direct writes. */
void test_samples_copy(void)
{
	const char *src = "0123456789abcdef0123456789abcdef",
	           *src2 = "fedcba9876543210fedcba9876543210";
	struct store *w, *r;
	struct store_batch *b;
	struct store_series e;
	struct svec want = {0}, got;
	uint32_t s, n, m;
	struct store_sample v1[3], v2[2], v3[1], d1;

	fresh_db("c_scopy");
	w = open_ok("c_scopy", STORE_CREATE);
	if (!w)
		return;
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 0, 1) == 0);
	s = series(b, "far", "db");
	n = stack(b, "q;r");
	m = stack(b, "q;s");
	for (int i = 0; i < 3; i++)
		v1[i] = (struct store_sample){T0US + 1000 * i,   i ? n : m, 7, 8,
		                              100 + (uint64_t)i, 0,         0};
	CHECK(store_batch_add(b, s, T0, n, 2, 201) == 0);
	CHECK(store_batch_add(b, s, T0, m, 1, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v1, 3) == 0);
	/* bad input */
	CHECK(w->ops->batch_detail(b, s, T0 + 1, v1, 3) == -EINVAL);
	CHECK(w->ops->batch_detail(b, s, T0 + 60, v1, 3) == -EINVAL);
	CHECK(w->ops->batch_detail(b, 77, T0, v1, 3) == -EINVAL);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 3 && e.recent_samples == 3);
		CHECK(e.first_us == T0US && e.last_us == T0US + 2000);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		for (int i = 0; i < 3; i++)
			svec_add(&want, &v1[i]);
		CHECK(same_detail(&got, &want, "the first copy"));
		free(got.v);
		store_close(r);
	}
	/* the same source again: its detail of that bucket is replaced */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 1, 2) == 0);
	s = series(b, "far", "db");
	for (int i = 0; i < 2; i++)
		v2[i] = (struct store_sample){T0US + 5000 + i, n, 9, 9, 50, 0, 0};
	CHECK(store_batch_add(b, s, T0, n, 2, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v2, 2) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	/* another source, and a direct write, beside it */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src2, 0, 1) == 0);
	s = series(b, "far", "db");
	v3[0] = (struct store_sample){T0US + 5000, n, 1, 1, 1, 0, 0};
	CHECK(store_batch_add(b, s, T0, n, 1, 1) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, v3, 1) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	b = store_batch_new(w);
	s = series(b, "far", "db");
	d1 = (struct store_sample){T0US + 59 * US, m, 3, 4, 5, 0, 0};
	CHECK(store_batch_sample(b, s, &d1) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 4 && e.recent_samples == 4);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		svec_add(&want, &v2[0]);
		svec_add(&want, &v2[1]);
		svec_add(&want, &v3[0]);
		svec_add(&want, &d1);
		CHECK(same_detail(&got, &want, "replaced, beside another source and a write"));
		free(got.v);
		CHECK_STR(dump(r, s, INT64_MIN, INT64_MAX), "1700000040 q;r 3 101\n"
		                                            "1700000040 q;s 1 5\n");
		store_close(r);
	}
	/* the source now has no detail of the bucket (rolled up there) */
	b = store_batch_new(w);
	CHECK(w->ops->batch_source(b, src, 2, 3) == 0);
	s = series(b, "far", "db");
	CHECK(store_batch_add(b, s, T0, n, 2, 100) == 0);
	CHECK(w->ops->batch_detail(b, s, T0, NULL, 0) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	r = open_ok("c_scopy", STORE_READONLY);
	if (r) {
		s = find_series(r, "far", "db", &e);
		CHECK(e.samples == 4 && e.recent_samples == 2);
		got = walk(r, s, INT64_MIN, INT64_MAX);
		want.n = 0;
		svec_add(&want, &v3[0]);
		svec_add(&want, &d1);
		CHECK(same_detail(&got, &want, "a source's detail gone"));
		free(got.v);
		CHECK_STR(sql("c_scopy", "SELECT count(*) || ' ' || sum(n) FROM samples"), "2 2");
		store_close(r);
	}
	/* a batch that is no copy adds the detail it is given */
	b = store_batch_new(w);
	s = series(b, "far", "db");
	CHECK(w->ops->batch_detail(b, s, T0, v2, 2) == 0);
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	CHECK_STR(sql("c_scopy", "SELECT samples FROM series_recent"), "4");
	free(want.v);
	store_close(w);
}

/* test_samples_rollup's newest moment: exactly 2 h after the end of the
 * bucket at T0 + 30 min, so that bucket is the last one forgotten; and
 * the newest on perf's clock, which has its own. */
#define ROLL_NEWEST      (T0US + (30 * 60 + 60 + STORE_DEFAULT_KEEP_SAMPLES) * US)
#define ROLL_BOOT_NEWEST ((5000 + 60 + STORE_DEFAULT_KEEP_SAMPLES) * US + 999999)

/* test_samples_rollup's store, in one commit: "app" of h with a bucket
 * every 5 minutes up to the newest and one sample in the first bucket
 * that stays, "app" of h2 whose own newest is older, and "boot" on perf's
 * clock.  ids[] gets the three series. */
static void rollup_fill(struct store *w, uint32_t ids[3], struct svec *app, struct svec *app2,
                        struct svec *boot)
{
	const int64_t newest = ROLL_NEWEST, boot_newest = ROLL_BOOT_NEWEST;
	struct store_batch *b = store_batch_new(w);
	uint32_t sa, s2, sboot, node;

	sa = series(b, "h", "app");
	s2 = series(b, "h2", "app");
	sboot = series(b, "h", "boot");
	node = stack(b, "main;work");
	/* a bucket every 5 minutes, 3 samples each, up to the newest */
	for (int64_t t = T0US; t <= newest; t += 300 * US)
		for (int k = 0; k < 3; k++) {
			struct store_sample smp = {t + k * 17 * US, node, 10, 11,
			                           1 + (uint64_t)k, 0,    0};

			if (smp.time_us > newest)
				smp.time_us = newest;
			CHECK(store_batch_sample(b, sa, &smp) == 0);
			svec_add(app, &smp);
		}
	{
		struct store_sample last = {newest, node, 10, 11, 9, 0, 0};
		/* in the first bucket that stays: it ends a minute after
		 * newest - keep */
		struct store_sample edge = {T0US + (30 * 60 + 65) * US, node, 10, 11, 9, 0, 0};

		CHECK(store_batch_sample(b, sa, &last) == 0);
		svec_add(app, &last);
		CHECK(store_batch_sample(b, sa, &edge) == 0);
		svec_add(app, &edge);
	}
	/* another host whose own newest is older: the store's newest counts */
	for (int64_t t = T0US + 10 * US; t < T0US + 60 * 60 * US; t += 600 * US) {
		struct store_sample smp = {t, node, 20, 20, 2, 0, 0};

		CHECK(store_batch_sample(b, s2, &smp) == 0);
		svec_add(app2, &smp);
	}
	/* perf's clock has its own newest */
	for (int64_t t = 100 * US; t <= boot_newest; t += 250 * US) {
		struct store_sample smp = {t, node, 1, 1, 1, 0, 0};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	{
		struct store_sample smp = {boot_newest, node, 1, 1, 1, 0, 0};

		CHECK(store_batch_sample(b, sboot, &smp) == 0);
		svec_add(boot, &smp);
	}
	CHECK(store_batch_commit(b) == 0);
	store_batch_free(b);
	ids[0] = sa;
	ids[1] = s2;
	ids[2] = sboot;
}

/* What a roll-up with the default window keeps of each of sv[] (sorted
 * in place) into kept[]; *gone and *slices: the samples and (series,
 * bucket) slices it forgets, those of buckets that end at or before
 * newest - keep on their clock. */
static void rollup_expect(struct svec *sv[3], struct svec kept[3], uint64_t *gone, uint64_t *slices)
{
	int64_t cut = ROLL_NEWEST / US - STORE_DEFAULT_KEEP_SAMPLES;
	int64_t boot_cut = ROLL_BOOT_NEWEST / US - STORE_DEFAULT_KEEP_SAMPLES;

	*gone = *slices = 0;
	for (int i = 0; i < 3; i++) {
		int64_t c = i == 2 ? boot_cut : cut, last_bucket = INT64_MIN;

		svec_sort(sv[i]);
		for (size_t k = 0; k < sv[i]->n; k++) {
			int64_t bucket = sv[i]->v[k].time_us / US / 60 * 60;

			if (bucket + 60 > c) {
				svec_add(&kept[i], &sv[i]->v[k]);
				continue;
			}
			(*gone)++;
			*slices += bucket != last_bucket;
			last_bucket = bucket;
		}
	}
}

/* A reader opened after the roll-up: the detail kept[] of each series,
 * counts as before[] (dumps), and the totals of "app" (app_n samples). */
static void rollup_check_reader(const uint32_t ids[3], struct svec kept[3], char before[3][4096],
                                size_t app_n)
{
	struct store *r = open_ok("c_roll", STORE_READONLY);
	struct store_series e;
	struct svec got;

	if (!r)
		return;
	for (int i = 0; i < 3; i++) {
		got = walk(r, ids[i], INT64_MIN, INT64_MAX);
		CHECK(same_detail(&got, &kept[i], "after the roll-up"));
		free(got.v);
		CHECK_STR(dump(r, ids[i], INT64_MIN, INT64_MAX), before[i]);
	}
	find_series(r, "h", "app", &e);
	CHECK(e.recent_samples == kept[0].n && e.samples == app_n);
	store_close(r);
}

/* A shorter window (10 minutes), kept in the store: the next roll-up
 * forgets more of "app" (sa), whose detail was kept[0], and old sees it
 * once refreshed. */
static void rollup_shorter_window(struct store *w, struct store *old, uint32_t sa,
                                  const struct svec kept[3])
{
	struct store_rollup_stats st;
	struct svec got, k2 = {0};

	CHECK(store_set_keep_samples(w, 600) == 0);
	CHECK(store_refresh(old) == 0 && store_keep_samples(old) == 600);
	CHECK(store_rollup(w, &st) == 0);
	for (size_t k = 0; k < kept[0].n; k++)
		if (kept[0].v[k].time_us / US / 60 * 60 + 60 > ROLL_NEWEST / US - 600)
			svec_add(&k2, &kept[0].v[k]);
	CHECK(st.samples > 0 && st.samples + k2.n + kept[2].n >= kept[0].n);
	CHECK(store_refresh(old) == 1);
	got = walk(old, sa, INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &k2, "ten minutes kept"));
	free(got.v);
	free(k2.v);
}

/* The roll-up forgets exactly the detail of the buckets that end at or
 * before the newest moment on their clock minus the window; counts stay. */
void test_samples_rollup(void)
{
	struct store *w, *old;
	struct store_batch *b;
	struct store_rollup_stats st;
	struct svec app = {0}, app2 = {0}, boot = {0}, got;
	struct svec *sv[3] = {&app, &app2, &boot}, kept[3] = {{0}};
	uint32_t ids[3];
	uint64_t gone, slices;
	char before[3][4096];

	fresh_db("c_roll");
	w = open_ok("c_roll", STORE_CREATE);
	if (!w)
		return;
	rollup_fill(w, ids, &app, &app2, &boot);
	old = open_ok("c_roll", STORE_READONLY);
	if (!old)
		goto out;
	for (int i = 0; i < 3; i++)
		snprintf(before[i], sizeof(before[i]), "%s",
		         dump(old, ids[i], INT64_MIN, INT64_MAX));
	CHECK(store_rollup(old, &st) == -EROFS);
	b = store_batch_new(w);
	CHECK(store_rollup(w, &st) == -EBUSY);
	store_batch_free(b);
	CHECK(store_rollup(w, &st) == 0);
	rollup_expect(sv, kept, &gone, &slices);
	CHECK(st.samples == gone && st.slices == slices && st.bytes > 0);
	/* app: 7 buckets of 3; app2: 4 of 1; boot: 20 of 1 */
	CHECK(gone == 45 && slices == 31);
	/* the bucket of T0 + 30 min went, the next one stayed */
	CHECK(kept[0].n && kept[0].v[0].time_us == T0US + (30 * 60 + 65) * US);
	CHECK(kept[1].n == 2 && kept[1].v[0].time_us == T0US + 2410 * US);
	rollup_check_reader(ids, kept, before, app.n);
	/* a reader's snapshot from before still sees all of it */
	got = walk(old, ids[0], INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &app, "the snapshot from before"));
	free(got.v);
	CHECK(store_refresh(old) == 1);
	got = walk(old, ids[0], INT64_MIN, INT64_MAX);
	CHECK(same_detail(&got, &kept[0], "refreshed"));
	free(got.v);
	CHECK(store_rollup(w, &st) == 0 && st.slices == 0 && st.samples == 0);
	rollup_shorter_window(w, old, ids[0], kept);
	for (int i = 0; i < 3; i++)
		free(kept[i].v);
	store_close(old);
out:
	free(app.v);
	free(app2.v);
	free(boot.v);
	store_close(w);
}

/* A reader's snapshot sees a commit's detail whole or not at all. */
void test_samples_snapshot(void)
{
	const char *src = "0123456789abcdef0123456789abcdef";
	struct store *w, *r;
	struct store_batch *b;
	uint32_t s = 0, s2 = 0, node;

	fresh_db("c_ssnap");
	w = open_ok("c_ssnap", STORE_CREATE);
	r = w ? open_ok("c_ssnap", STORE_READONLY) : NULL;
	if (!w || !r)
		goto out;
	for (uint64_t k = 1; k <= 20; k++) {
		struct store_sample v[20];
		struct store_series e;
		struct svec got;

		/* the reader lists in its snapshot ... */
		CHECK(store_refresh(r) == (k > 1));
		s = find_series(r, "far", "db", &e);
		/* ... a copy replaces the bucket's detail of two series (one
		 * by batch_detail, one by batch_sample: in a copy, both
		 * replace what the source gave before), in one commit ... */
		b = store_batch_new(w);
		CHECK(w->ops->batch_source(b, src, k - 1, k) == 0);
		node = stack(b, "q;r");
		for (uint64_t i = 0; i < k; i++)
			v[i] = (struct store_sample){T0US + (int64_t)i, node, 1, 1, k, 0, 0};
		CHECK(store_batch_add(b, series(b, "far", "db"), T0, node, k, k * k) == 0);
		CHECK(w->ops->batch_detail(b, series(b, "far", "db"), T0, v, k) == 0);
		CHECK(store_batch_sample(b, series(b, "near", "db"), &v[0]) == 0);
		CHECK(store_batch_commit(b) == 0);
		store_batch_free(b);
		/* ... and the reader still sees the state it listed */
		if (k > 1) {
			got = walk(r, s, INT64_MIN, INT64_MAX);
			CHECK(got.n == k - 1 && e.recent_samples == k - 1);
			for (size_t i = 0; i < got.n; i++)
				CHECK(got.v[i].weight == k - 1);
			free(got.v);
			s2 = find_series(r, "near", "db", &e);
			got = walk(r, s2, INT64_MIN, INT64_MAX);
			CHECK(got.n == 1 && e.recent_samples == 1 && got.v[0].weight == k - 1);
			free(got.v);
		}
		if (test_failed)
			break;
	}
out:
	store_close(r);
	store_close(w);
}

/* A schema 2 database (no recent tier): read as it is, upgraded by the
 * first writer, read again by a reader that was open meanwhile. */
