/*
 * perf-internal.h — what the two halves of the perf script importer
 * share: perf-lines.c recognizes the lines (sample headers, stack lines,
 * one-line samples) the way stackcollapse-perf.pl's patterns do, and
 * perf.c builds series, frames and stacks from what they match.  The
 * byte-class table and the newline finder are the inner loops of both.
 * Private to import/.
 */
#ifndef FLAMEFS_IMPORT_PERF_INTERNAL_H
#define FLAMEFS_IMPORT_PERF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Byte classes, one table lookup each (the parsers' inner loops). */
enum {
	C_WS = 1,    /* Perl's \s: space, \t, \n, \v, \f, \r */
	C_DIGIT = 2, /* 0-9 */
	C_WORD = 4,  /* Perl's \w on a byte string: [A-Za-z0-9_] */
	C_HEXL = 8,  /* [0-9a-f] */
	C_TIDY = 16, /* the bytes import_tidy() changes: ; ( " ' */
};

/* clang-format off */
static const uint8_t cclass[256] = {
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  1,  1,  1,  1,  1,  0,  0, /* 0x00 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0x10 */
	 1,  0, 16,  0,  0,  0,  0, 16, 16,  0,  0,  0,  0,  0,  0,  0, /* 0x20 */
	14, 14, 14, 14, 14, 14, 14, 14, 14, 14,  0, 16,  0,  0,  0,  0, /* 0x30 */
	 0,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4, /* 0x40 */
	 4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  0,  0,  0,  0,  4, /* 0x50 */
	 0, 12, 12, 12, 12, 12, 12,  4,  4,  4,  4,  4,  4,  4,  4,  4, /* 0x60 */
	 4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  0,  0,  0,  0,  0, /* 0x70 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0x80 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0x90 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xa0 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xb0 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xc0 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xd0 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xe0 */
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, /* 0xf0 */
};
/* clang-format on */

static inline bool is_ws(unsigned char c)
{
	return cclass[c] & C_WS;
}

static inline bool is_digit(unsigned char c)
{
	return cclass[c] & C_DIGIT;
}

static inline bool is_word(unsigned char c)
{
	return cclass[c] & C_WORD;
}

static inline bool is_hex_lower(unsigned char c)
{
	return cclass[c] & C_HEXL;
}

/* The first '\n' in [p, end), or NULL.  memchr for perf's short lines
 * (tens of bytes) without a library call per line. */
static inline const char *find_nl(const char *p, const char *end)
{
#ifdef __SSE2__
	const __m128i nl = _mm_set1_epi8('\n');

	for (; end - p >= 32; p += 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(a, nl)) |
		             (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, nl)) << 16;

		if (m)
			return p + __builtin_ctz(m);
	}
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl));

		if (m)
			return p + __builtin_ctz(m);
	}
#endif
	return memchr(p, '\n', (size_t)(end - p));
}

/* One stack line split into its parts (offsets into the sample block). */
struct stack_line {
	size_t func, func_len;
	size_t mod, mod_len;
};

struct header {
	const char *comm;
	size_t comm_len;
	size_t end;        /* just past the pid[/tid] */
	uint32_t pid, tid; /* "PID/TID", or "TID" alone (perf's default): pid 0;
	                    * -1 or past 2^32 - 1: 0 (unknown) */
	const char *event; /* NULL when the header names no event */
	size_t event_len;
	const char *period; /* digits, or NULL */
	size_t period_len;
};

/* The matchers (perf-lines.c, where each one's pattern is spelled out).
 * A sample header's comm and pid[/tid]: */
bool perf_match_header(const char *l, size_t n, struct header *h);
/* Fills h->event and h->period from the header's tail, when it has them. */
void perf_match_event(const char *l, size_t n, struct header *h);
/* The first "SECONDS.FRACTION:" token after l[from]: its whole seconds in
 * *sec and its fraction in microseconds in *frac_us (digits past the
 * sixth dropped, as perf rounds nanoseconds down to print microseconds):
 * 1 when found, 0 when not, -ERANGE when the seconds pass 2^63 - 1. */
int perf_header_time(const char *l, size_t n, size_t from, int64_t *sec, int64_t *frac_us);
/* The decimal digits s[0..n) (already checked to be digits) into *out:
 * 0, or -ERANGE past 2^64 - 1. */
int perf_parse_u64(const char *s, size_t n, uint64_t *out);
/* A stack line, split into function and module (offsets into l). */
bool perf_match_stack_line(const char *l, size_t n, struct stack_line *sl);
/* The length of func without a trailing "+0x<lowercase hex>" offset. */
size_t perf_strip_offset(const char *func, size_t flen);
/* The first "->" in s[0..n), or NULL. */
const char *perf_find_arrow(const char *s, size_t n);
/* A one-line sample of a recording without callchains: its header in *h
 * and, in *tail, where its "pc symbol (module)" part begins. */
bool perf_match_one_line(const char *l, size_t n, struct header *h, size_t *tail);

#endif
