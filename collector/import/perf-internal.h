/*
 * perf-internal.h — what the parts of the perf script importer share:
 * perf-lines.c recognizes the lines (sample headers, stack lines,
 * one-line samples) the way stackcollapse-perf.pl's patterns do; perf.c
 * reads the input and builds series and samples from what they match,
 * perf-frames.c a stack's frames, perf-fast.c whole samples through the
 * caches; struct perf is the state they share.  The byte-class table and
 * the newline finder are the inner loops of all of them.
 * Private to import/.
 */
#ifndef FLAMEFS_IMPORT_PERF_INTERNAL_H
#define FLAMEFS_IMPORT_PERF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "import.h"

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

/* An executable file mapping perf script printed (--show-mmap-events). */
struct perf_mmap {
	uint32_t pid;
	uint64_t start, len, pgoff;
	size_t path, path_len; /* the file's path, as an offset into the line */
};

/* Side-band records (perf-lines.c, spelled out there): -1 not one, 0 one
 * without an executable mapping, 1 an executable mapping in *m. */
int perf_match_record(const char *l, size_t n, struct perf_mmap *m);
/* Hex digits (an optional "0x" first) into *v: false when not. */
bool perf_parse_hex(const char *s, size_t n, uint64_t *v);

/* ---- the importer's state, shared by perf.c, perf-frames.c and
 * perf-fast.c ---- */

/* A mapping kept from a side-band record, its path owned. */
struct perf_map {
	uint32_t pid;
	uint64_t start, len, pgoff;
	char *path;
	size_t path_len;
};

struct series_ent; /* perf.c */
struct raw_line;   /* perf-fast.c */
struct stackcache;

enum sample_state {
	NO_SAMPLE,   /* before the first header or after a blank line */
	KEEP_SAMPLE, /* inside a sample that will be stored */
	SKIP_SAMPLE, /* inside a sample of a filtered-out event */
};

struct perf {
	struct import_ctx *ctx;
	struct linereader lr;

	/* The current sample.  blk holds "process\0event\0" and then one
	 * record per stack line (see add_stack_line); it is the cache key. */
	enum sample_state state;
	char *blk;
	size_t blk_len, blk_cap, blk_head; /* blk_head: end of "p\0e\0" */
	size_t pname_len, event_len;
	uint64_t weight;
	int64_t when;      /* seconds */
	int64_t frac_us;   /* and microseconds, when it has a time */
	bool has_time;     /* the header holds a time */
	uint32_t pid, tid; /* the header's; 0: unknown */
	uint64_t sample_bytes;
	uint64_t header_line; /* the current sample's header, for messages */
	struct import_sums sums;

	/* Event filter: the event kept when neither --event nor
	 * --all-events is given (the first one seen). */
	char *first_event;
	uint64_t skipped_other;

	/* Caches; keys are XXH3-128 hashes of the text named. */
	struct stackcache *stack;  /* (non-leaf lines, leaf parts) -> node */
	struct stackcache *parts;  /* every line's parts -> node */
	struct stackcache *prefix; /* non-leaf lines -> the leaf's parent */
	struct stackcache *path;   /* chain of line hashes -> node */
	struct stackcache *frame;  /* one-frame line or leaf parts -> frame */
	struct stackcache *sample; /* blk -> (series, node), line by line */
	struct series_ent *series;
	size_t series_used;
	uint64_t *series_bytes; /* input bytes per series id */
	size_t series_bytes_cap;

	/* Executable mappings of side-band records (perf script
	 * --show-mmap-events), in input order; with any, stack lines of
	 * unnamed code keep their pc and their frames are placed in their
	 * files (perf_frame_place), and samples go line by line. */
	struct perf_map *maps;
	size_t nmaps, maps_cap;
	uint32_t *map_pids; /* the processes told to ctx->sym */
	size_t nmap_pids, map_pids_cap;

	/* The files of "[unknown] (/path)" stack lines while there are no
	 * mappings (perf-frames.c, perf_line_pc): by path, whether their pcs
	 * place frames in them (ctx->sym->place).  Open addressing on a hash
	 * of the path; files_mask + 1 slots, a power of two, or none. */
	struct perf_file *files;
	size_t files_mask, nfiles;
	uint64_t addr_files; /* files whose pcs were addresses */
	char *addr_first;    /* the first of them (a path in files) */

	/* Scratch space for parsing a sample on a cache miss. */
	struct stack_line *sl;
	size_t sl_cap;
	struct raw_line *rl;
	size_t rl_cap;
	struct store_frame *frames;
	size_t *name_off;
	size_t frames_cap;
	char *names;
	size_t names_len, names_cap;
	char *leafkey; /* the leaf's cache key text */
	size_t leafkey_cap;
	char *partkey; /* a line's parts, as parts_key() hashes them */
	size_t partkey_cap;
	char *stackkey; /* a stack's parts, as stack_parts_key() hashes them */
	size_t stackkey_cap;
};

/* Records "expected WHAT, got "s[0..n)"" at line `line` (noting a cut
 * input) and returns -EINVAL (perf.c). */
int perf_fail_line(struct perf *p, uint64_t line, const char *what, const char *s, size_t n);
/* The series of the current sample: process p->blk, event after it
 * (perf.c). */
int perf_sample_series(struct perf *p, uint32_t *id);
/* Stores the current sample at node of series (perf.c). */
int perf_count_sample(struct perf *p, uint32_t series, uint32_t node);
/* Takes the sample whose header was just read whole from the reader's
 * buffer: 1 when it did, 0 when it must go line by line (nothing
 * consumed), -errno (perf-fast.c). */
int perf_fast_sample(struct perf *p);
/* Appends the frames of one stack line to p->frames, innermost first;
 * with depth and bytes, stops past the limits and returns 1
 * (perf-frames.c). */
int perf_line_frames(struct perf *p, size_t *nf, const char *func, size_t flen, const char *mod,
                     size_t mlen, bool java, size_t *depth, size_t *bytes);
/* Points p->frames[0..nf) at their names in p->names (perf-frames.c). */
void perf_frames_finish(struct perf *p, size_t nf);
/* Gives fr, an unnamed frame of module mod whose stack line printed the
 * pc pc (hex text), its file offset and build id through ctx->sym and
 * the mappings seen (perf-frames.c); caller: not the innermost line.
 * Leaves it as it is where no mapping of mod places the pc. */
int perf_frame_place(struct perf *p, struct store_frame *fr, const char *pc, size_t pclen,
                     bool caller);
/* For a stack line l matched as sl: when it is "PC [unknown] (/path)",
 * the text holds no mappings (p->nmaps 0) and the file at path places
 * its pcs (ctx->sym->place, asked once per path), widens sl's function
 * back over the pc column, so that every cache keyed by a line's
 * function and module keeps the pc of such a line and perf_line_frames()
 * places its frame.  Call it after each perf_match_stack_line() of a
 * stack line, before the function is used.  0 or -ENOMEM
 * (perf-frames.c). */
int perf_line_pc(struct perf *p, const char *l, struct stack_line *sl);
/* Frees what perf_line_pc() keeps (perf-frames.c). */
void perf_files_free(struct perf *p);
/* Interns the current line-by-line sample's stack (perf-frames.c). */
int perf_parse_sample(struct perf *p, uint32_t *node);

static inline bool perf_is_java(const struct perf *p)
{
	return p->pname_len >= 4 && memcmp(p->blk, "java", 4) == 0;
}

#endif
