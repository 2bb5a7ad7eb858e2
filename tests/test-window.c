/*
 * test-window.c — unit tests for time windows (fs/view/window.c): durations
 * and times parse as documented and bad ones are refused, @last ends
 * where the current bucket ends, and a window's tree holds exactly the
 * buckets that overlap [from, to) — checked against brute force for
 * hand-picked edges and 500 random windows, with each bucket weighing a
 * distinct power of two so a sum names its buckets.  Exact windows over
 * the recent tier: samples kept with their moment (store_batch_sample)
 * beside counts without one (store_batch_add) in the same buckets; the
 * edges are half-open to the microsecond, a cut bucket's samples without
 * a moment are taken whole and reported (struct view_window, the window
 * file), buckets wholly inside come from counts, and 400 random windows
 * to the millisecond agree with brute force over the samples.
 */
#include <time.h>

#include "view-fixture.h"

#define T0 1795000020 /* a bucket start (a multiple of 60) */

static void check_duration(const char *s, int64_t want)
{
	int64_t got = -1;
	int r = view_parse_duration(s, &got);

	if (want < 0)
		CHECKF(r < 0, "duration \"%s\" refused", s);
	else
		CHECKF(r == 0 && got == want, "duration \"%s\": %d %" PRId64, s, r, got);
}

static void check_time(const char *s, int64_t want)
{
	int64_t got = -1;
	int r = view_parse_time(s, &got);

	if (want < 0)
		CHECKF(r < 0, "time \"%s\" refused", s);
	else
		CHECKF(r == 0 && got == want, "time \"%s\": %d %" PRId64 " want %" PRId64, s, r,
		       got, want);
}

static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900,
	                .tm_mon = mo - 1,
	                .tm_mday = d,
	                .tm_hour = h,
	                .tm_min = mi,
	                .tm_sec = s};
	return (int64_t)timegm(&tm);
}

/* The weight of the window's tree. */
static uint64_t window_weight(struct store *s, int64_t from, int64_t to)
{
	struct store_series *list;
	size_t n;
	struct view_tree *t;
	struct view_counts c;

	if (store_series_list(s, &list, &n) < 0 || n != 1)
		fx_die("series", EIO);
	int r = view_tree_build_window(s, list, n, from, to, &t);
	if (r < 0)
		fx_die("view_tree_build_window", r);
	view_node_counts(t, VIEW_ROOT, &c);
	fx_check_totals(t, "window");
	view_tree_free(t);
	store_series_free(list, n);
	return c.total_weight;
}

/* Brute force: buckets [T0 + 60 i, T0 + 60 (i + 1)) of weight 2^i that
 * overlap [from, to). */
static uint64_t expect_weight(int64_t from, int64_t to)
{
	uint64_t w = 0;

	for (int i = 0; i < 10; i++) {
		int64_t b = T0 + 60 * i;
		if (b < to && b + 60 > from && from < to)
			w += UINT64_C(1) << i;
	}
	return w;
}

/* ---- exact windows over the recent tier --------------------------------- */

#define E0 ((int64_t)1795000020 * 1000000) /* a bucket start, microseconds */

/* What went into the exact store: samples with moments, counts without. */
struct added_sample {
	int64_t us;
	int leaf; /* 0: main;a, 1: main;b */
	uint64_t weight;
};
static struct added_sample timed[512];
static int ntimed;
struct added_count {
	int64_t bucket; /* seconds: a moment in the bucket */
	int leaf;
	uint64_t samples, weight;
};
static struct added_count untimed[16];
static int nuntimed;

static void exact_add(struct store *s, const struct added_sample *v, int nv,
                      const struct added_count *c, int nc)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, "app", "1", "cpu-clock", "nanoseconds", NULL};
	const char *const a[] = {"main", "a"}, *const bb[] = {"main", "b"};
	uint32_t series, leaf[2], fr, main_node;
	struct store_frame f;
	int r;

	if (!b || (r = store_batch_series(b, &k, &series)) < 0)
		fx_die("batch", b ? r : ENOMEM);
	f = (struct store_frame){.name = a[0], .name_len = 4};
	if ((r = store_batch_frame(b, &f, &fr)) < 0 ||
	    (r = store_batch_node(b, STORE_ROOT_NODE, fr, &main_node)) < 0)
		fx_die("frame", r);
	f = (struct store_frame){.name = a[1], .name_len = 1};
	if ((r = store_batch_frame(b, &f, &fr)) < 0 ||
	    (r = store_batch_node(b, main_node, fr, &leaf[0])) < 0)
		fx_die("frame", r);
	f = (struct store_frame){.name = bb[1], .name_len = 1};
	if ((r = store_batch_frame(b, &f, &fr)) < 0 ||
	    (r = store_batch_node(b, main_node, fr, &leaf[1])) < 0)
		fx_die("frame", r);
	for (int i = 0; i < nv; i++) {
		struct store_sample smp = {.time_us = v[i].us,
		                           .node = leaf[v[i].leaf],
		                           .pid = 7,
		                           .tid = 7,
		                           .weight = v[i].weight};
		if ((r = store_batch_sample(b, series, &smp)) < 0)
			fx_die("store_batch_sample", r);
	}
	for (int i = 0; i < nc; i++)
		if ((r = store_batch_add(b, series, c[i].bucket, leaf[c[i].leaf], c[i].samples,
		                         c[i].weight)) < 0)
			fx_die("store_batch_add", r);
	if ((r = store_batch_commit(b)) < 0)
		fx_die("commit", r);
	store_batch_free(b);
}

/* The exact window's tree of the store's one series. */
static struct view_tree *exact_tree(struct store *s, int64_t from, int64_t to)
{
	struct store_series *list;
	size_t n;
	struct view_tree *t;
	int r;

	if (store_series_list(s, &list, &n) < 0 || n != 1)
		fx_die("series", EIO);
	if ((r = view_tree_build_window_us(s, list, n, from, to, NULL, &t)) < 0)
		fx_die("view_tree_build_window_us", r);
	store_series_free(list, n);
	fx_check_totals(t, "exact window");
	return t;
}

/* Brute force: the weight of leaf (or both, -1) in [from, to): samples by
 * their moment, buckets wholly inside by all they hold, a cut bucket's
 * counts without a moment whole; and those taken whole. */
static uint64_t exact_expect(int64_t from, int64_t to, int leaf, uint64_t *whole)
{
	uint64_t w = 0;
	const int64_t bsu = 60000000;

	*whole = 0;
	if (to <= from)
		return 0;
	for (int i = 0; i < ntimed; i++) {
		int64_t b = timed[i].us / bsu * bsu;
		bool inside_whole = b >= from && b + bsu <= to;
		if ((leaf < 0 || timed[i].leaf == leaf) &&
		    (inside_whole || (timed[i].us >= from && timed[i].us < to)))
			w += timed[i].weight;
	}
	for (int i = 0; i < nuntimed; i++) {
		int64_t b = untimed[i].bucket * 1000000 / bsu * bsu; /* its bucket's start */
		if (b + bsu <= from || b >= to || (leaf >= 0 && untimed[i].leaf != leaf))
			continue;
		w += untimed[i].weight;
		if (!(b >= from && b + bsu <= to))
			*whole += untimed[i].weight;
	}
	return w;
}

static uint64_t leaf_weight(const struct view_tree *t, const char *leaf)
{
	uint32_t bin = view_node_find_child(t, VIEW_ROOT, "app", 3);
	uint32_t m = bin == VIEW_NONE ? VIEW_NONE : view_node_find_child(t, bin, "main", 4);
	uint32_t l = m == VIEW_NONE ? VIEW_NONE : view_node_find_child(t, m, leaf, 1);
	struct view_counts c = {0};

	if (l != VIEW_NONE)
		view_node_counts(t, l, &c);
	return c.total_weight;
}

static void check_exact(struct store *s, int64_t from, int64_t to, const char *what)
{
	struct view_tree *t = exact_tree(s, from, to);
	const struct view_window *w = view_tree_window(t);
	struct view_counts c;
	uint64_t whole, want = exact_expect(from, to, -1, &whole), wa, wb, dummy;

	view_node_counts(t, VIEW_ROOT, &c);
	wa = exact_expect(from, to, 0, &dummy);
	wb = exact_expect(from, to, 1, &dummy);
	CHECKF(c.total_weight == want,
	       "%s [%" PRId64 ", %" PRId64 "): weight %" PRIu64 " want %" PRIu64, what, from - E0,
	       to - E0, c.total_weight, want);
	CHECKF(leaf_weight(t, "a") == wa && leaf_weight(t, "b") == wb,
	       "%s: a %" PRIu64 " want %" PRIu64 ", b %" PRIu64 " want %" PRIu64, what,
	       leaf_weight(t, "a"), wa, leaf_weight(t, "b"), wb);
	uint64_t got_whole = 0;
	for (unsigned i = 0; w && i < w->ncut; i++)
		got_whole += w->cut[i].whole_weight;
	CHECKF(w && got_whole == whole && view_window_exact(w) == (whole == 0),
	       "%s: taken whole %" PRIu64 " want %" PRIu64, what, got_whole, whole);
	view_tree_free(t);
}

static char *window_file(struct store *s, int64_t from, int64_t to)
{
	struct view_tree *t = exact_tree(s, from, to);
	char *text = fx_render(view_render_window, t, VIEW_ROOT);
	view_tree_free(t);
	return text;
}

static void test_exact(void)
{
	struct store *s = fx_store();
	const int64_t S = 1000000, MS = 1000;

	/* Bucket 0: four timed samples and 3 without a moment (leaf a, 16);
	 * bucket 1: two timed; bucket 2: counts only. */
	struct added_sample v[] = {
	        {E0 + 10 * S, 0, 1},
	        {E0 + 20 * S + 500 * MS, 1, 2},
	        {E0 + 30 * S + 250 * MS, 0, 4},
	        {E0 + 60 * S - 1, 1, 8},
	        {E0 + 60 * S, 0, 32},
	        {E0 + 90 * S, 1, 64},
	};
	struct added_count c[] = {
	        {E0 / S + 5, 0, 3, 16},
	        {E0 / S + 125, 0, 1, 128},
	};
	ntimed = 6;
	memcpy(timed, v, sizeof(v));
	nuntimed = 2;
	memcpy(untimed, c, sizeof(c));
	exact_add(s, v, 6, c, 2);

	/* Half-open to the microsecond: 10.000 in, 30.250 out. */
	struct view_tree *t = exact_tree(s, E0 + 10 * S, E0 + 30 * S + 250 * MS);
	struct view_counts k;
	view_node_counts(t, VIEW_ROOT, &k);
	CHECKF(k.total_weight == 1 + 2 + 16 && k.total_samples == 2 + 3,
	       "[10.000, 30.250): %" PRIu64 " %" PRIu64, k.total_weight, k.total_samples);
	const struct view_window *w = view_tree_window(t);
	CHECKF(w && w->ncut == 1 && w->cut[0].bucket == E0 / S && w->cut[0].timed_samples == 2 &&
	               w->cut[0].timed_weight == 3 && w->cut[0].whole_samples == 3 &&
	               w->cut[0].whole_weight == 16 && w->cut[0].detail && !view_window_exact(w),
	       "[10.000, 30.250): the cut reported");
	view_tree_free(t);
	t = exact_tree(s, E0 + 10 * S + 1, E0 + 30 * S + 250 * MS + 1);
	view_node_counts(t, VIEW_ROOT, &k);
	CHECKF(k.total_weight == 2 + 4 + 16, "[10.000001, 30.250001): %" PRIu64, k.total_weight);
	view_tree_free(t);

	/* The window file says what was taken whole. */
	char *text = window_file(s, E0 + 10 * S, E0 + 30 * S + 250 * MS);
	CHECKF(strstr(text, "NOT exact: 3 samples of 1 bucket") && strstr(text, "exact no\n") &&
	               strstr(text, "from 1795000030 ") && strstr(text, "to 1795000050.25 ") &&
	               strstr(text, "cut 1795000020 2026-11-18T11:07:00Z timed 2 weight 3 "
	                            "taken_whole 3 weight 16 detail yes\n") &&
	               strstr(text, "samples 5 weight 19\n"),
	       "window file:\n%s", text);
	free(text);
	/* Bucket 1 alone, cut on both sides, holds no sample without a
	 * moment: exact. */
	text = window_file(s, E0 + 60 * S + 500 * MS, E0 + 119 * S);
	CHECKF(strstr(text, "): exact\n") && strstr(text, "exact yes\n") &&
	               strstr(text, "samples 1 weight 64\n") && strstr(text, "whole_buckets 0 "),
	       "exact window file:\n%s", text);
	free(text);
	/* Bucket-aligned: whole buckets from counts, no cut. */
	text = window_file(s, E0 + 60 * S, E0 + 180 * S);
	CHECKF(strstr(text, "exact yes\n") &&
	               strstr(text, "whole_buckets 2 samples 3 weight 224\n") &&
	               !strstr(text, "\ncut "),
	       "aligned window file:\n%s", text);
	free(text);
	/* A bucket without detail, cut: all of it taken whole. */
	text = window_file(s, E0 + 130 * S, E0 + 140 * S);
	CHECKF(strstr(text, "taken_whole 1 weight 128 detail no\n") && strstr(text, "exact no\n"),
	       "no detail:\n%s", text);
	free(text);

	const int64_t edges[][2] = {
	        {E0, E0 + 60 * S},
	        {E0 + 20 * S + 500 * MS, E0 + 90 * S + 1},
	        {E0 + 60 * S - 1, E0 + 60 * S},
	        {E0 + 59 * S, E0 + 61 * S},
	        {E0 + 90 * S, E0 + 90 * S},
	        {E0 + 90 * S, E0 + 89 * S},
	        {E0 - 60 * S, E0 + 300 * S},
	        {E0 + 130 * S, E0 + 140 * S},
	};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		check_exact(s, edges[i][0], edges[i][1], "edge");

	/* Many samples at random moments to the microsecond; random
	 * windows to the millisecond. */
	srand(39);
	struct added_sample more[400];
	for (int i = 0; i < 400; i++) {
		more[i] =
		        (struct added_sample){E0 + (int64_t)(rand() % 180000) * MS + rand() % 1000,
		                              rand() % 2, (uint64_t)(1 + rand() % 1000)};
		timed[ntimed++] = more[i];
	}
	struct added_count more_c[] = {{E0 / S + 70, 1, 2, 5000}};
	untimed[nuntimed++] = more_c[0];
	exact_add(s, more, 400, more_c, 1);
	for (int i = 0; i < 400; i++) {
		int64_t a = E0 + (int64_t)(rand() % 200000 - 10000) * MS;
		int64_t b = a + (int64_t)(rand() % 120000) * MS;
		check_exact(s, a, b, "random");
	}
	store_close(s);
	fx_cleanup();
	fx_dir[0] = '\0';
}

int main(void)
{
	check_duration("90s", 90);
	check_duration("5m", 300);
	check_duration("1h", 3600);
	check_duration("2d", 172800);
	check_duration("1d12h", 129600);
	check_duration("1w", 604800);
	check_duration("1m30s", 90);
	const char *bad_dur[] = {"", "5", "m", "5x", "-5m", "0s", "1m-", "5 m", "1.5h"};
	for (size_t i = 0; i < sizeof(bad_dur) / sizeof(bad_dur[0]); i++)
		check_duration(bad_dur[i], -1);
	check_duration("99999999999999999999d", -1);
	for (size_t i = 0; i < view_last_duration_count; i++)
		check_duration(view_last_durations[i],
		               0 + (int64_t[]){60, 300, 900, 3600, 21600, 86400, 604800}[i]);

	check_time("1795010520", 1795010520);
	check_time("0", 0);
	check_time("2026-11-24T14:02:00Z", utc(2026, 11, 24, 14, 2, 0));
	check_time("2026-11-24T14:02:07Z", utc(2026, 11, 24, 14, 2, 7));
	check_time("2026-11-24T14:02Z", utc(2026, 11, 24, 14, 2, 0));
	check_time("2026-11-24 14:02:00", utc(2026, 11, 24, 14, 2, 0));
	check_time("2026-11-24T14:02:00+00:00", utc(2026, 11, 24, 14, 2, 0));
	check_time("2026-11-24", utc(2026, 11, 24, 0, 0, 0));
	check_time("2024-02-29T00:00:00Z", utc(2024, 2, 29, 0, 0, 0));
	int64_t before = 0;
	CHECKF(view_parse_time("1969-12-31T23:59:59Z", &before) == 0 && before == -1, "1969");
	const char *bad_time[] = {"",
	                          "abc",
	                          "2026-13-01",
	                          "2026-02-29",
	                          "2026-11-24T14:02:00+01:00",
	                          "2026-11-24T24:00:00Z",
	                          "2026-11-24T14:60Z",
	                          "2026-11-24T14Z",
	                          "-5",
	                          "12ab",
	                          "2026-1-24"};
	for (size_t i = 0; i < sizeof(bad_time) / sizeof(bad_time[0]); i++)
		check_time(bad_time[i], -1);

	/* @last: ends at the end of the bucket holding now. */
	int64_t from, to;
	view_window_last(T0 + 10, 300, 60, &from, &to);
	CHECKF(to == T0 + 60 && from == T0 - 240, "last 5m: [%" PRId64 ", %" PRId64 ")", from, to);
	view_window_last(T0, 90, 60, &from, &to);
	CHECKF(to == T0 + 60 && from == T0 - 30, "last 90s at a bucket start");
	view_window_last(T0 - 1, 60, 60, &from, &to);
	CHECKF(to == T0 && from == T0 - 60, "last 1m a second before a bucket");

	/* Ten buckets weighing 1, 2, 4, ...; counts at varying seconds
	 * inside each. */
	struct store *s = fx_store();
	for (int i = 0; i < 10; i++) {
		char line[64];
		snprintf(line, sizeof(line), "main;f%d %d\n", i, 1 << i);
		fx_add(s, "app", "1", "samples", T0 + 60 * i + (i * 7) % 60, line);
	}
	int64_t edges[][2] = {
	        {T0, T0 + 60},         {T0 + 30, T0 + 90},  {T0 + 60, T0 + 60},
	        {T0 + 59, T0 + 61},    {T0 + 60, T0 + 120}, {T0 - 600, T0},
	        {T0 + 600, T0 + 9999}, {T0 + 120, T0 + 60}, {INT64_MIN, INT64_MAX},
	        {T0 + 61, T0 + 119},
	};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint64_t got = window_weight(s, edges[i][0], edges[i][1]);
		uint64_t want =
		        edges[i][0] == INT64_MIN ? 1023 : expect_weight(edges[i][0], edges[i][1]);
		CHECKF(got == want, "window %zu: %" PRIu64 " want %" PRIu64, i, got, want);
	}
	srand(77);
	for (int i = 0; i < 500; i++) {
		int64_t a = T0 - 100 + rand() % 800, b = a + rand() % 400 - 50;
		uint64_t got = window_weight(s, a, b), want = expect_weight(a, b);
		CHECKF(got == want,
		       "random window [%" PRId64 ", %" PRId64 "): %" PRIu64 " want %" PRIu64,
		       a - T0, b - T0, got, want);
	}
	store_close(s);
	fx_cleanup();
	fx_dir[0] = '\0';

	test_exact();
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("PASS window\n");
	return 0;
}
