/*
 * window.c — time windows: parsing the durations and times that name
 * them (@last/DURATION, @range/FROM/TO) and building a tree of the counts
 * that fall in one.  The store keeps counts per bucket (60 s by default),
 * so a window is served as the buckets that overlap it.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

const char *const view_last_durations[] = {"1m", "5m", "15m", "1h", "6h", "1d", "7d"};
const size_t view_last_duration_count =
        sizeof(view_last_durations) / sizeof(view_last_durations[0]);

#define MAX_SECONDS (INT64_C(1) << 40) /* about 35,000 years */

int view_parse_duration(const char *s, int64_t *seconds)
{
	int64_t sum = 0;

	if (!*s)
		return -EINVAL;
	while (*s) {
		int64_t v = 0, unit;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			v = v * 10 + (*s - '0');
			if (v > MAX_SECONDS)
				return -ERANGE;
		}
		switch (*s++) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		case 'w': unit = 7 * 86400; break;
		default: return -EINVAL;
		}
		if (v > MAX_SECONDS / unit || sum + v * unit > MAX_SECONDS)
			return -ERANGE;
		sum += v * unit;
	}
	if (sum < 1)
		return -EINVAL;
	*seconds = sum;
	return 0;
}

/* Reads exactly n digits. */
static int digits(const char **s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (**s < '0' || **s > '9')
			return -EINVAL;
		*v = *v * 10 + (**s - '0');
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int parse_iso(const char *s, int64_t *t)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h = 0, mi = 0, sec = 0;

	if (digits(&s, 4, &y) < 0 || *s++ != '-' || digits(&s, 2, &mo) < 0 || *s++ != '-' ||
	    digits(&s, 2, &d) < 0)
		return -EINVAL;
	if (*s == 'T' || *s == ' ') {
		s++;
		if (digits(&s, 2, &h) < 0 || *s++ != ':' || digits(&s, 2, &mi) < 0)
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &sec) < 0)
				return -EINVAL;
		}
	}
	if (strcmp(s, "Z") != 0 && strcmp(s, "+00:00") != 0 && strcmp(s, "") != 0)
		return -EINVAL;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
	    h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	*t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

int view_parse_time(const char *s, int64_t *t)
{
	size_t n = strspn(s, "0123456789");

	if (n > 0 && s[n] == '\0') {
		if (n > 15)
			return -EINVAL;
		*t = strtoll(s, NULL, 10);
		return 0;
	}
	return parse_iso(s, t);
}

void view_window_last(int64_t now, int64_t seconds, uint32_t bucket_seconds, int64_t *from,
                      int64_t *to)
{
	int64_t bs = bucket_seconds ? bucket_seconds : 1;
	int64_t start = now / bs * bs - (now % bs < 0 ? bs : 0);

	*to = start + bs;
	*from = *to - seconds;
}

int view_tree_build_window(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, struct view_tree **out)
{
	/* store_series_counts() takes the buckets that hold any second of a
	 * closed interval: [from, to - 1] gives those that overlap [from, to).
	 * An empty window asks for from > to, which yields no counts. */
	if (to <= from)
		return view_tree_build(s, series, n, 1, 0, out);
	return view_tree_build(s, series, n, from, to - 1, out);
}
