/*
 * parsers-internal.h — what each parser exports to the table of formats
 * (formats.c), and to nothing else: its sniff function and its parse
 * function.  Private to import/: callers go through import_formats[]
 * (import.h).
 */
#ifndef FLAMEFS_IMPORT_PARSERS_H
#define FLAMEFS_IMPORT_PARSERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "import.h"

/* perf.data: the "PERFILE2" magic (perfdata.c). */
bool import_perf_data_sniff(const uint8_t *buf, size_t len);
int import_perf_data(struct import_ctx *ctx);

/* pprof: gzip's magic, or a protobuf whose first byte can open a
 * profile.proto Profile and whose first line holds a control byte
 * (pprof.c). */
bool import_pprof_sniff(const uint8_t *buf, size_t len);
int import_pprof(struct import_ctx *ctx);

/* gperftools' binary CPU profile: its header words (gperf.c). */
bool import_gperf_cpu_sniff(const uint8_t *buf, size_t len);
int import_gperf_cpu(struct import_ctx *ctx);

/* Legacy text profiles: heap, growth, contention, thread (legacy.c). */
bool import_legacy_sniff(const uint8_t *buf, size_t len);
int import_legacy(struct import_ctx *ctx);

/* perf script text: the first line not a comment is a sample header that
 * names an event or is followed by an indented stack line, or a sample
 * line of a recording without callchains; or the input ends inside that
 * first header (perf-lines.c, perf.c). */
bool import_perf_sniff(const uint8_t *buf, size_t len);
int import_perf(struct import_ctx *ctx);

/* Folded stacks: every complete line that is not a comment is "stack
 * COUNT" (folded.c). */
bool import_folded_sniff(const uint8_t *buf, size_t len);
int import_folded(struct import_ctx *ctx);

/* The value of hexadecimal digit c (either case), -1 if it is none. */
static inline int import_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
