/*
 * pprof-internal.h — what pprof.c shares with its pre-scan (pprof-scan.c):
 * the limits a pprof input must keep before it is unpacked, and a
 * streaming walk over profile.proto's wire format that estimates the
 * memory protobuf-c and the importer would take to unpack it.  Private to
 * import/.
 */
#ifndef FLAMEFS_IMPORT_PPROF_INTERNAL_H
#define FLAMEFS_IMPORT_PPROF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The protobuf, raw or once decompressed, may be at most this long: it
 * must be whole in memory for protobuf-c.  A gzipped input is inflated
 * once without keeping its output to measure it, so a gzip bomb is
 * refused when it passes this, before any of it is kept. */
#define PPROF_MAX_BYTES ((uint64_t)1 << 30)
/* The memory unpacking may take, as pprof_scan estimates it from the
 * element counts and string lengths, before anything is unpacked. */
#define PPROF_MAX_MEMORY ((uint64_t)2 << 30)

/* Each sample type is a series; more are refused. */
#define PPROF_MAX_SAMPLE_TYPES 256u

/* What the walk knows of one message it is inside. */
struct pprof_scan_level {
	uint64_t end; /* offset just past its last byte */
	uint8_t type; /* enum in pprof-scan.c */
};

/* A zeroed struct starts a walk; feed it the protobuf in order, in
 * pieces of any size. */
struct pprof_scan {
	uint64_t pos; /* bytes fed so far */
	/* The field being read: its key, a varint under way, or bytes
	 * left to skip (or to count as packed varints). */
	uint8_t mode;
	uint64_t acc;
	unsigned shift;
	uint64_t key;
	uint64_t left;
	struct pprof_scan_level lv[4]; /* lv[0] the profile; depth levels in use */
	unsigned depth;

	/* What the profile holds, and what unpacking it would take. */
	uint64_t memory;
	uint64_t samples, locations, lines, functions, mappings, strings, fields;

	/* On malformed data: what was expected, at which offset. */
	const char *why;
	uint64_t at;
};

/* Walks buf[0..n).  Returns 0, or -EINVAL when the data cannot be a
 * profile (s->why and s->at say where); the walk stops there. */
int pprof_scan_feed(struct pprof_scan *s, const uint8_t *buf, size_t n);
/* After the last piece: -EINVAL (s->why, s->at) when the data ends
 * inside a field or message, else 0. */
int pprof_scan_end(struct pprof_scan *s);

#endif
