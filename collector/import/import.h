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

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define IMPORT_DEFAULT_VERSION "default"

/* Makes *p (an array of *cap elements of elem bytes) hold at least need
 * elements, doubling from 64; *p and *cap change only on success.
 * Returns 0 or -ENOMEM.  Inline: the parsers call it on their hot paths,
 * where it almost always returns at once. */
static inline int import_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	void *np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

struct import_ctx;

/* ---- limits ----
 * What one import accepts, whatever its format (README.md, "Limits").
 * A hostile or broken file must not turn a few bytes of input into
 * gigabytes of stack text for the view to render, so import_path()
 * enforces these on every stack of every format:
 *  - a frame name (and a module or file name) longer than
 *    IMPORT_MAX_NAME bytes keeps its first IMPORT_MAX_NAME -
 *    strlen(IMPORT_CUT_MARK) bytes followed by IMPORT_CUT_MARK;
 *  - a stack deeper than IMPORT_MAX_DEPTH frames, or whose frame names
 *    (as cut above) add up to more than IMPORT_MAX_STACK_BYTES, keeps
 *    its innermost frames that fit in IMPORT_MAX_DEPTH - 1 frames and
 *    IMPORT_MAX_STACK_BYTES - strlen(IMPORT_TRUNCATED) bytes, under an
 *    IMPORT_TRUNCATED root frame, as the recorder marks a walk it cut.
 * Real names reach a few KiB (C++ templates) and real stacks a few
 * thousand frames (deep recursion), well inside these. */
#define IMPORT_MAX_NAME        ((size_t)64 << 10)
#define IMPORT_MAX_DEPTH       ((size_t)16384)
#define IMPORT_MAX_STACK_BYTES ((size_t)1 << 20)
#define IMPORT_MAX_LABEL       ((size_t)1024) /* an event or unit name */
#define IMPORT_CUT_MARK        "[cut]"
#define IMPORT_TRUNCATED       "[truncated]"

/* The length a name of n bytes has once stored (cut at IMPORT_MAX_NAME). */
static inline size_t import_stored_len(size_t n)
{
	return n > IMPORT_MAX_NAME ? IMPORT_MAX_NAME : n;
}

/* For parsers that gather a stack's frames leaf first: counts one more
 * frame whose name is name_len bytes into *frames and *bytes, and
 * returns true once the stack is past IMPORT_MAX_DEPTH or
 * IMPORT_MAX_STACK_BYTES.  From then on import_path() makes the same
 * path of the frames gathered so far as of the whole stack, so the
 * parser may stop gathering there and so bound its own memory. */
static inline bool import_stack_past(size_t *frames, size_t *bytes, size_t name_len)
{
	*frames += 1;
	*bytes += import_stored_len(name_len);
	return *frames > IMPORT_MAX_DEPTH || *bytes > IMPORT_MAX_STACK_BYTES;
}

enum import_format {
	IMPORT_FORMAT_AUTO = 0,
	IMPORT_FORMAT_PERF,
	IMPORT_FORMAT_FOLDED,
	IMPORT_FORMAT_PPROF,
	IMPORT_FORMAT_PERF_DATA, /* perf record's perf.data */
	IMPORT_FORMAT_GPERF_CPU, /* gperftools' binary CPU profile (CPUPROFILE) */
	IMPORT_FORMAT_LEGACY,    /* legacy text: heap, growth, contention, thread */
	IMPORT_FORMAT_UNKNOWN,   /* none of the above (import_detect only) */
};

/* What import_detect tries, in order, for a message on IMPORT_FORMAT_UNKNOWN. */
#define IMPORT_FORMATS_TRIED                                                                       \
	"perf.data, gperftools CPU profile, pprof (gzipped or raw protobuf), legacy text "         \
	"profile (heap, growth, contention, thread, goroutine), perf script (a \"COMM PID ... "    \
	"EVENT:\" header with stack lines, or one line per sample), folded stacks (\"a;b;c "       \
	"COUNT\" lines)"

struct import_options {
	const char *binary;      /* --binary: overrides the process name; NULL if unset */
	const char *version;     /* --version label; NULL means the importer's default */
	const char *event;       /* --event: keep only this perf event; NULL = first seen */
	bool all_events;         /* --all-events: every perf event as its own series */
	int64_t now;             /* wall-clock seconds used for samples without a time */
	const char *binary_path; /* --binary-path: colon-separated directories
	                          * where the files a profile mapped are looked
	                          * for first (pprof's PPROF_BINARY_PATH); NULL */
	int64_t clock_offset;    /* --clock-offset: added to perf script sample times */
	/* The store keeps samples whole (store_keep_samples() > 0): a
	 * format whose samples carry their own time (perf script, perf.data)
	 * stores each with import_sample(); else, and for every other
	 * format, counts with import_add(). */
	bool samples;
	/* --label: canonical labels (store.h) given to every series of the
	 * input, NULL for none; see import_label_arg().  A label the input
	 * itself gives a sample (pprof's) under the same key is refused. */
	const char *labels;
	/* --by-thread: each sample of perf script text or perf.data gets
	 * the label thread=<its thread's name> (docs/formats.md, "Labels"). */
	bool by_thread;
};

/* Adds one --label argument "KEY=VALUE" to *labels, canonical labels
 * (NULL: none yet; malloc'd, replaced, the caller frees).  KEY is 1 to
 * STORE_LABEL_KEY_MAX bytes of [a-z0-9_] starting with a letter, VALUE 1
 * to STORE_LABEL_VALUE_MAX bytes without control bytes, and a KEY once.
 * Returns 0, -ENOMEM, or -EINVAL with a one-line message naming what is
 * wrong and what is allowed in err[0..errlen). */
int import_label_arg(char **labels, const char *arg, char *err, size_t errlen);

/* Symbolization of the addresses that perf.data, gperftools and legacy
 * text profiles hold, provided by the caller (flamefs-collect wires it to
 * the collector's symbolizer, symbolize.h).  An importer given none
 * (ctx->sym NULL) names a frame "[basename]" of the mapping holding its
 * address, or "[unknown]".  Every function returns 0 (user: the number of
 * frames filled, >= 1) or -errno; strings they hand back are owned by
 * the provider and live as long as it. */
struct import_symbols {
	void *ctx;
	/* Process pid (a profile of one process uses pid 0) is `name`, with no
	 * mappings yet (a new process, or an exec). */
	int (*process)(void *ctx, uint32_t pid, const char *name);
	/* pid's child `child` starts with a copy of pid's mappings. */
	int (*fork)(void *ctx, uint32_t pid, uint32_t child);
	/* An executable mapping of pid; build_id may be NULL. */
	int (*map)(void *ctx, uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
	           const char *path, const uint8_t *build_id, size_t build_id_len);
	/* Frames of a user address, innermost first: f[0] the function, then
	 * inlined ones, at most room; caller: a return address (looked up
	 * one byte before). */
	int (*user)(void *ctx, uint32_t pid, uint64_t addr, bool caller, struct store_frame *f,
	            size_t room);
	/* Optional (may be NULL): for each user address addrs[i] of pid, a
	 * token of the file that maps it as mods[i] and the address's offset
	 * in that file as offs[i], such that user() gives the same frames for
	 * any two addresses, of any processes, that share (token, offset),
	 * for the provider's life; mods[i] NULL when no file maps it (its
	 * frames may depend on the process). */
	void (*user_files)(void *ctx, uint32_t pid, const uint64_t *addrs, size_t n,
	                   const void **mods, uint64_t *offs);
	/* The frame of a kernel address. */
	int (*kernel)(void *ctx, uint64_t addr, bool caller, struct store_frame *f);
	/* Optional: names the kernel addresses ips[0..n) in one go, each as
	 * kernel() with caller false looks it up, so that those calls find
	 * them ready.  May be NULL. */
	int (*kernel_prefetch)(void *ctx, const uint64_t *ips, size_t n);
	/* pid's executable's GNU build id as lowercase hex, "" when unknown. */
	const char *(*build_id)(void *ctx, uint32_t pid);
	/* Unwinds thread tid of pid from a copy of its user stack (stack[0..
	 * stack_len) starting at the stack pointer among regs) and its user
	 * registers regs[0..nregs) (perf's sample_regs_user order, the bits
	 * of regs_mask).  Fills ips[0..room) leaf first and returns how many,
	 * 0 when nothing could be unwound, or -errno.  May be NULL. */
	int (*unwind)(void *ctx, uint32_t pid, uint32_t tid, uint64_t regs_mask,
	              const uint64_t *regs, size_t nregs, const uint8_t *stack, size_t stack_len,
	              uint64_t *ips, size_t room);
	/* Optional (may be NULL): places an unnamed frame of the file at
	 * `path` (absolute, NUL-terminated) whose pc perf script text
	 * printed with no mapping to read it against: the pc is read as an
	 * offset in the file, or, in a fixed-position executable (ET_EXEC),
	 * as an address inside one of its PT_LOAD segments (docs/formats.md,
	 * perf script).  Returns an enum import_place; on IMPORT_PLACE_DONE
	 * f->offset is the file offset of the start of the function holding
	 * the pc, f->build_id the file's (owned by the provider) and the rest
	 * of f as user() fills an unnamed frame.  Or -errno. */
	int (*place)(void *ctx, const char *path, uint64_t pc, struct store_frame *f);
};

/* What import_symbols.place() made of a pc. */
enum import_place {
	/* No ELF file with a GNU build id at that path: none of its pcs
	 * can be placed. */
	IMPORT_PLACE_NO_FILE = 0,
	IMPORT_PLACE_DONE = 1,
	/* The pc is past the file's loaded bytes in a position-independent
	 * file (ET_DYN): an address, which only a mapping record places. */
	IMPORT_PLACE_ADDRESS = 2,
	/* This pc is not placed: it lies in no loaded part of the file, or in
	 * a function the file's symbols name (perf's "[unknown]" is kept). */
	IMPORT_PLACE_NOT = 3,
};

/* The executable mappings of a profile that names them as text
 * (/proc/PID/maps lines), for naming frames without a symbolizer and for
 * handing to one.  A zeroed struct is empty; free with import_maps_free. */
struct import_map {
	uint64_t start, end, pgoff;
	char *path;    /* malloc'd */
	char *bracket; /* "[basename]", malloc'd */
};
struct import_maps {
	struct import_map *m;
	size_t n, cap;
};
/* Adds the mapping a /proc/PID/maps line describes ("START-END PERMS
 * OFFSET DEV INODE PATH", or the brief "START-END PATH"), when it is
 * executable (or has no permissions column) and names a file.  Returns
 * 1 when added, 0 when the line is not such a mapping, -ENOMEM. */
int import_maps_line(struct import_maps *maps, const char *l, size_t n);
/* The mapping holding addr, or NULL. */
const struct import_map *import_maps_find(const struct import_maps *maps, uint64_t addr);
void import_maps_free(struct import_maps *maps);
/* Frames for one address of pid, innermost first, into f[0..room): through
 * ctx->sym when set, else "[basename]" of the mapping holding it in maps
 * (which may be NULL; the frame's strings are then owned by maps) or
 * "[unknown]".  Returns the number of frames (>= 1) or -errno. */
int import_addr_frames(struct import_ctx *ctx, const struct import_maps *maps, uint32_t pid,
                       uint64_t addr, bool caller, struct store_frame *f, size_t room);

/* Reads the prefix and then ctx->fd to its end into a malloc'd buffer the
 * caller frees (with one spare byte after len).  Inputs over `max` bytes
 * are refused with a message.  Returns 0, -ENOMEM, -EINVAL (message) or
 * -errno. */
int import_read_all(struct import_ctx *ctx, size_t max, uint8_t **out, size_t *len);

/* Records "PATH: offset OFF: <fmt...>" in ctx->err and returns -EINVAL:
 * the binary formats' error, at byte offset off of the input. */
int import_fail_at(struct import_ctx *ctx, uint64_t off, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The series of a signed value: values below zero (delta profiles) go to
 * a series of their own whose event is "-EVENT" and whose counts are the
 * values' magnitudes; see docs/formats.md, "Negative values". */
#define IMPORT_NEGATIVE_PREFIX "-"

struct import_ctx {
	struct store_batch *batch;
	const struct import_options *opt;
	const char *path;                 /* shown in messages; "-" is shown as "<stdin>" */
	int fd;                           /* input */
	const uint8_t *prefix;            /* bytes already read from fd (for format */
	size_t prefix_len;                /* detection); an importer consumes them first */
	const struct import_symbols *sym; /* may be NULL (see above) */

	/* Filled in by the importer as it goes. */
	uint64_t line;           /* current line (1-based) for text formats */
	uint64_t bytes;          /* input bytes consumed so far */
	uint64_t samples;        /* samples accepted */
	uint64_t skipped;        /* samples skipped (other events) */
	char warning[1024];      /* notices for the user, "; " between; "" if none */
	uint64_t cut_stacks;     /* import_path() calls that cut a stack (Limits) */
	uint64_t cut_names;      /* names, modules and files import_path() cut */
	uint64_t cleaned_labels; /* events and units whose control bytes became U+FFFD */

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
 * IMPORT_DEFAULT_VERSION).  An event or unit longer than
 * IMPORT_MAX_LABEL is refused with a message; one holding control bytes
 * (below 0x20, or 0x7f) is stored with each of them replaced by U+FFFD
 * (counted in ctx->cleaned_labels): they are shown as file names and in
 * rendered text, where such bytes would act on the reader's terminal. */
int import_series(struct import_ctx *ctx, const char *binary, const char *version,
                  const char *event, const char *unit, uint32_t *id);
/* import_series() for a series whose samples the input labels: `labels`
 * (canonical, NULL or "" for none) joined with --label's.  A key in
 * both is refused with a message (--label names the whole file; a
 * label of the file's own is not overridden silently). */
int import_series_labels(struct import_ctx *ctx, const char *binary, const char *version,
                         const char *event, const char *unit, const char *labels, uint32_t *id);
/* `file`'s labels (canonical, NULL: none) joined with --label's into
 * *out (malloc'd, "" for none).  0, -ENOMEM, or a message and -EINVAL
 * when a key is in both (labels.c). */
int import_labels_join(struct import_ctx *ctx, const char *file, char **out);

/* The label key a free-form label name (pprof's Label.key) is stored
 * under: ASCII letters lower-cased, every byte outside [a-z0-9_] as
 * '_', IMPORT_LABEL_KEY_PREFIX before a name that does not start with a
 * letter (or is empty), cut at STORE_LABEL_KEY_MAX bytes.  A valid key
 * stays as it is.  Writes it NUL-terminated into out and returns its
 * length (labels.c). */
#define IMPORT_LABEL_KEY_SIZE   (STORE_LABEL_KEY_MAX + 1)
#define IMPORT_LABEL_KEY_PREFIX "k_"
size_t import_label_key(const char *name, size_t n, char out[IMPORT_LABEL_KEY_SIZE]);

/* Interns frames[0..n) (root first) as a path in the stack tree and
 * returns its leaf node in *node.  n == 0 gives STORE_ROOT_NODE.  Names
 * and stacks past the limits above are cut as described there, counted
 * in ctx->cut_names and ctx->cut_stacks. */
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

/* store_batch_sample() for the importers: one sample with its moment,
 * checked and reported as import_add() does.  Returns 0, import_fail's
 * -EINVAL, or -ENOMEM. */
int import_sample(struct import_ctx *ctx, struct import_sums *sums, uint64_t line, uint32_t series,
                  const struct store_sample *smp);

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

/* ---- the formats (formats.c) ----
 * The registry of formats is one table of data, import_formats[], in
 * detection order: the CLI and the fuzz targets pick a format from it and
 * call its parse function; nothing else names a parser. */

struct import_format_ops {
	enum import_format id;
	const char *name; /* the --format name ("perf", "perf.data", ...) */
	/* True when buf[0..len) (the input's first bytes) begins like this
	 * format.  Binary formats are tried first, in table order; text
	 * formats (text) only when the first non-empty line holds no control
	 * byte other than tab and CR. */
	bool (*sniff)(const uint8_t *buf, size_t len);
	bool text;
	/* The format names code addresses, which struct import_symbols (the
	 * offline symbolizer) turns into frames. */
	bool needs_symbols;
	/* Reads ctx->fd to its end into ctx->batch. */
	int (*parse)(struct import_ctx *ctx);
};

extern const struct import_format_ops import_formats[];
extern const size_t import_formats_count;

/* The table entry of format f, or NULL for AUTO and UNKNOWN. */
const struct import_format_ops *import_format_find(enum import_format f);
/* The format of an input from its first bytes (buf[0..len)), strictly:
 * IMPORT_FORMAT_UNKNOWN when it is none of them. */
enum import_format import_detect(const uint8_t *buf, size_t len);
/* The --format name of f ("perf", "perf.data", "folded", "pprof",
 * "gperftools-cpu", "legacy"; "auto" for AUTO and UNKNOWN). */
const char *import_format_name(enum import_format f);
/* The format named name (as import_format_name gives it, or "auto"), or
 * -1 when there is none. */
int import_format_parse(const char *name);

/* True when the first non-empty line of buf[0..len) (its first 4096
 * bytes) holds no control byte other than tab and CR: a text format may
 * begin there (import.c). */
bool import_text_start(const uint8_t *buf, size_t len);

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

/* ---- function names from ELF symbols ----
 * What every part of the collector that names a function from an ELF
 * symbol agrees on: a symbol version ("memcpy@@GLIBC_2.14",
 * "cfree@GLIBC_2.2.5") is not part of a function's name, while perf's PLT
 * mark ("malloc@plt") is.  The perf script importer and the symbolizer
 * (record, perf.data, gperftools and legacy imports) both use it, so that
 * one function has one name whatever the source. */

/* The length of name[0..n) without a trailing symbol version: "@VER" or
 * "@@VER" after a non-empty name, where VER is one or more of
 * [A-Za-z0-9_.] and is not "plt".  n when there is none. */
static inline size_t import_unversioned_len(const char *name, size_t n)
{
	const char *at = n ? memchr(name, '@', n) : NULL;
	if (!at || at == name)
		return n;
	const char *v = at + 1, *end = name + n;
	if (v < end && *v == '@')
		v++;
	if (v == end || (end - v == 3 && memcmp(v, "plt", 3) == 0 && v == at + 1))
		return n;
	for (const char *c = v; c < end; c++) {
		bool ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		          (*c >= '0' && *c <= '9') || *c == '_' || *c == '.';
		if (!ok)
			return n;
	}
	return (size_t)(at - name);
}

#endif
