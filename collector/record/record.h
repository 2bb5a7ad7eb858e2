/*
 * record.h — `flamefs-collect record`: samples CPU stacks with eBPF,
 * symbolizes them and commits one store batch per drain.
 */
#ifndef FLAMEFS_RECORD_H
#define FLAMEFS_RECORD_H

#include <stdint.h>

/* Runs the record command.  argv[0] is "record"; options are parsed with
 * getopt_long.  Prints its own messages ("flamefs-collect: ...") and
 * returns the process exit status: 0 on success, 1 on error, 2 on a
 * usage error. */
int record_main(int argc, char **argv);

/* Parses "90", "45s", "30m", "12h", "7d", "2w" or a sum of those
 * ("1d12h") into seconds: the durations of `record --retention` (and of
 * `prune --older-than`, which deletes what retention would).  Returns 0,
 * or -EINVAL for anything else (empty, a sign, an unknown unit, a number
 * without its unit after the first part) and -ERANGE past 2^62 seconds
 * (duration.c). */
int record_parse_duration(const char *s, int64_t *seconds);

#endif
