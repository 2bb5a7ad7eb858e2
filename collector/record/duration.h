/*
 * duration.h — parses the durations that the command line takes
 * (`prune --older-than`, `record --retention`).
 */
#ifndef FLAMEFS_DURATION_H
#define FLAMEFS_DURATION_H

#include <stdint.h>

/* Parses "90", "45s", "30m", "12h", "7d", "2w" or a sum of those
 * ("1d12h") into seconds.  Returns 0, or -EINVAL for anything else
 * (empty, a sign, an unknown unit, a number without its unit after the
 * first part) and -ERANGE past 2^62 seconds. */
int collect_parse_duration(const char *s, int64_t *seconds);

#endif
