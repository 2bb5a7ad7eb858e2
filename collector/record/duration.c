/*
 * duration.c — durations on the command line: a number with an optional
 * unit (s, m, h, d, w), or a sum of such parts ("1d12h").
 */
#include "record.h"

#include <errno.h>
#include <stdbool.h>

int record_parse_duration(const char *s, int64_t *seconds)
{
	const int64_t limit = (int64_t)1 << 62;
	int64_t total = 0;
	bool first = true;

	if (!*s)
		return -EINVAL;
	while (*s) {
		int64_t n = 0, unit;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (n > (limit - (*s - '0')) / 10)
				return -ERANGE;
			n = n * 10 + (*s - '0');
		}
		switch (*s) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		case 'w': unit = 7 * 86400; break;
		case '\0':
			/* A bare number: seconds, but only on its own. */
			if (!first)
				return -EINVAL;
			unit = 1;
			break;
		default: return -EINVAL;
		}
		if (*s)
			s++;
		if (n > (limit - total) / unit)
			return -ERANGE;
		total += n * unit;
		first = false;
	}
	*seconds = total;
	return 0;
}
