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

/* ---- the input's bytes (pprof-input.c) ---- */
struct import_ctx;

/* Reads the whole input into *out (malloc'd, *out_len bytes). */
int pprof_read_all(struct import_ctx *ctx, uint8_t **out, size_t *out_len);
/* True when p starts with gzip's magic. */
bool pprof_is_gzip(const uint8_t *p, size_t len);
/* Checks what the pre-scan found so far against the limits (gz: the
 * input was gzipped); reports through ctx. */
int pprof_check_scan(struct import_ctx *ctx, const struct pprof_scan *sc, bool gz);
/* Decompresses a gzipped profile into *out (malloc'd, *out_len bytes),
 * once it has measured it within the limits (sc). */
int pprof_gunzip(struct import_ctx *ctx, const uint8_t *in, size_t in_len, struct pprof_scan *sc,
                 uint8_t **out, size_t *out_len);
/* Refuses a string-table entry that holds a NUL (protobuf-c would cut
 * the name short there). */
int pprof_check_string_nuls(struct import_ctx *ctx, const uint8_t *p, size_t len);

#endif
