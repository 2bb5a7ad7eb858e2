/*
 * test-window.c — unit tests for time windows (fs/view/window.c): durations
 * and times parse as documented and bad ones are refused, @last ends
 * where the current bucket ends, and a window's tree holds exactly the
 * buckets that overlap [from, to) — checked against brute force for
 * hand-picked edges and 500 random windows, with each bucket weighing a
 * distinct power of two so a sum names its buckets.
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
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("PASS window\n");
	return 0;
}
