/*
 * usage-internal.h — record's --help text (usage.c), for the command
 * line (cmdline.c) and for a build without the BPF sampler (record.c).
 */
#ifndef FLAMEFS_USAGE_INTERNAL_H
#define FLAMEFS_USAGE_INTERNAL_H

#include <stdio.h>

/* --help's text, on f. */
void record_usage(FILE *f);

#endif
