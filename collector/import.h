/*
 * import.h — the importers' shared contract.
 *
 * An importer reads one input (perf script text, folded stacks, or a pprof
 * profile) and feeds normalized samples into one store batch through the
 * helpers below.  It never touches RocksDB and never prints: on bad input
 * it fills ctx->err with "FILE:LINE: expected X, got Y" (via import_fail)
 * and returns -EINVAL, and the caller discards the batch.
 */
#ifndef FLAMEFS_IMPORT_H
#define FLAMEFS_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define IMPORT_DEFAULT_VERSION "default"

enum import_format {
	IMPORT_FORMAT_AUTO = 0,
	IMPORT_FORMAT_PERF,
	IMPORT_FORMAT_FOLDED,
	IMPORT_FORMAT_PPROF,
};

struct import_options {
	const char *binary;  /* --binary: overrides the process name; NULL if unset */
	const char *version; /* --version label; NULL means the importer's default */
	const char *event;   /* --event: keep only this perf event; NULL = first seen */
	bool all_events;     /* --all-events: every perf event as its own series */
	int64_t now;         /* wall-clock seconds used for samples without a time */
};

struct import_ctx {
	struct store_batch *batch;
	const struct import_options *opt;
	const char *path;      /* shown in messages; "-" is shown as "<stdin>" */
	int fd;                /* input */
	const uint8_t *prefix; /* bytes already read from fd (for format */
	size_t prefix_len;     /* detection); an importer consumes them first */

	/* Filled in by the importer as it goes. */
	uint64_t line;     /* current line (1-based) for text formats */
	uint64_t bytes;    /* input bytes consumed so far */
	uint64_t samples;  /* samples accepted */
	uint64_t skipped;  /* samples skipped (other events) */
	char warning[256]; /* one notice for the user, e.g. event filtering; "" if none */

	/* Progress callback, called now and then with ctx; may be NULL. */
	void (*progress)(struct import_ctx *ctx);

	char err[512];
};

/* Records "PATH:LINE: <fmt...>" (or "PATH: ..." when line is 0) in ctx->err
 * and returns -EINVAL. */
int import_fail(struct import_ctx *ctx, uint64_t line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Interns the series (binary, version, event, unit), applying --binary and
 * --version from ctx->opt: `binary` is used only when --binary is unset,
 * `version` only when --version is unset (NULL there means
 * IMPORT_DEFAULT_VERSION). */
int import_series(struct import_ctx *ctx, const char *binary, const char *version,
                  const char *event, const char *unit, uint32_t *id);

/* Interns frames[0..n) (root first) as a path in the stack tree and
 * returns its leaf node in *node.  n == 0 gives STORE_ROOT_NODE. */
int import_path(struct import_ctx *ctx, const struct store_frame *frames, size_t n, uint32_t *node);

/* Per-series running sums of what one import adds, so that a sum that
 * would not fit in 64 bits is refused instead of wrapping in the store.
 * Every count the store keeps for one import (a node's, a bucket's) is
 * at most its series' sum, so checking the series' sums is enough.  A
 * zeroed struct is empty; free it with import_sums_free(). */
struct import_sums {
	uint64_t (*sum)[2]; /* [series id] -> {samples, weight} */
	size_t cap;
};

/* Adds (samples, weight) to series' sums.  Returns 0, -EOVERFLOW when
 * either sum would pass UINT64_MAX (nothing is added then), or -ENOMEM. */
int import_sums_add(struct import_sums *s, uint32_t series, uint64_t samples, uint64_t weight);
void import_sums_free(struct import_sums *s); /* accepts an empty struct */

/* store_batch_add() for the importers: checks the series' sums first and
 * turns the store's refusals into messages at input line `line` (0: none):
 * a sum over 2^64 - 1, or a time the store cannot bucket.  Returns 0,
 * import_fail's -EINVAL, or -ENOMEM. */
int import_add(struct import_ctx *ctx, struct import_sums *sums, uint64_t line, uint32_t series,
               int64_t when, uint32_t node, uint64_t samples, uint64_t weight);

/* stackcollapse-perf's name tidying: ';' becomes ':', an argument list is
 * cut at the first '(' (except in Go method names like
 * "net/http.(*Client).Do" and in "(anonymous namespace)"), quotes go.
 * Works in place on s[0..n) and returns the new length. */
size_t import_tidy(char *s, size_t n);

/* Writes up to 40 bytes of s[0..n) into out (NUL-terminated), printable
 * ASCII as is and every other byte as \xNN, for error messages. */
void import_excerpt(char *out, size_t outlen, const char *s, size_t n);

/* The length of perf event name ev[0..n) without perf's modifiers: a last
 * ":MODS" where MODS is one or more of perf's modifier letters
 * (u k h H G I p P S D W e b) is cut, so "cpu-clock:ppp" and
 * "cpu-clock:u" give "cpu-clock"; "sched:sched_switch" stays whole. */
size_t import_event_base(const char *ev, size_t n);

/* Guesses the format from the first bytes of an input. */
enum import_format import_detect(const uint8_t *buf, size_t len);
const char *import_format_name(enum import_format f);

/* The importers.  Each reads ctx->fd to its end. */
int import_perf(struct import_ctx *ctx);
int import_folded(struct import_ctx *ctx);
int import_pprof(struct import_ctx *ctx);

/* ---- a streaming line reader shared by the text importers ---------- */

#define IMPORT_PROGRESS_EVERY ((uint64_t)64 << 20) /* bytes between progress calls */

struct linereader;

/* Feeds every line of lr to handle(state, line, len), keeping ctx->line and
 * ctx->bytes current and calling ctx->progress every
 * IMPORT_PROGRESS_EVERY bytes.  Returns 0 at end of input, the first
 * negative value handle returns, -errno on a read error, or import_fail's
 * -EINVAL for a line over LINEREADER_MAX_LINE. */
int import_lines(struct import_ctx *ctx, struct linereader *lr,
                 int (*handle)(void *state, const char *line, size_t len), void *state);

#define LINEREADER_MAX_LINE (64u << 20) /* longer lines are an error */

struct linereader {
	int fd;
	char *buf;
	size_t cap, start, end;
	bool eof;
	uint64_t line;     /* number of the line last returned */
	uint64_t consumed; /* bytes of input returned so far, newlines included */
	bool unterminated; /* the line last returned ended the input without a
	                      newline: the input may have been cut there */
};

/* Takes the fd (not owned) and an optional prefix already read from it
 * (copied).  Returns -ENOMEM on failure. */
int linereader_init(struct linereader *r, int fd, const void *prefix, size_t prefix_len);
void linereader_free(struct linereader *r);
/* Returns 1 and sets *line and *len (no newline; valid until the next call), 0
 * at end of input, -errno on a read error, -E2BIG on a line longer than
 * LINEREADER_MAX_LINE. */
int linereader_next(struct linereader *r, const char **line, size_t *len);
/* For importers that scan the buffer themselves: moves the unread bytes
 * [start, end) to the front, grows the buffer when less than a read's
 * worth is free, and reads more.  linereader_next() carries on from
 * there.  Returns 1 when it read something, 0 at end of input, -errno,
 * -E2BIG when the unread bytes already exceed LINEREADER_MAX_LINE. */
int linereader_fill(struct linereader *r);

#endif
