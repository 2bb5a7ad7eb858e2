/*
 * perf.c — the `perf script` text importer.
 *
 * Reads the text any perf version prints for `perf script` and stores, for
 * every process, exactly the stacks Brendan Gregg's stackcollapse-perf.pl
 * (default options) would print: the same header and stack-line matching
 * (including Perl's backtracking quirks), the same symbol tidying and the
 * same "first event only" filtering.  The process name (comm, spaces as
 * '_') becomes the series binary and is not stored as a frame.
 *
 * Where this importer deliberately differs from stackcollapse-perf.pl:
 *  - a header line also ends the previous sample, so output without blank
 *    lines between samples is not merged into one giant stack;
 *  - a last sample without a trailing blank line still counts;
 *  - a process named "0" is kept (Perl treats the name "0" as false);
 *  - whitespace-only lines are ignored silently; any other line that is
 *    neither a comment, a header nor a stack line, a line holding a NUL
 *    byte, or a stack line outside a sample, is an error rather than a
 *    warning;
 *  - events are told apart (first event only, --event) by their names as
 *    perf prints them, modifiers included ("cpu-clock:ppp"), as
 *    stackcollapse compares them; --event EV keeps EV and, when EV has no
 *    ':', also EV with any modifiers.  The series is named by the event
 *    without its modifiers (import_event_base: "cpu-clock:ppp" and
 *    "cpu-clock:u" are "cpu-clock"), so the view's pprof calls cpu-clock
 *    "cpu/nanoseconds" in any spelling.  The unit is "nanoseconds" for
 *    cpu-clock and task-clock, "count" otherwise.  A header that names
 *    no event gives the series event "samples".
 *  - --all-events stores every event as its own series; events that
 *    differ only in modifiers ("cycles:u", "cycles:k") share one.
 *  - output of a recording without callchains (`perf record` without -g)
 *    has one line per sample: the process name right-aligned, the event
 *    followed by the pc, symbol and module.  Such a line is a sample of
 *    one frame (stackcollapse-perf.pl misreads it as a stack line).  It
 *    is recognized only where a sample may start (after a blank line, a
 *    one-line sample, or at the start) and only when the pc after the
 *    event is hex and a stack line follows it.
 * Frame kinds: inline pieces (after the first "->") INLINE, modules
 * "[kernel.*" KERNEL, unsymbolized "[unknown]" UNKNOWN, "/tmp/perf-*.map"
 * JIT, else USER; the module attribute is perf's module field verbatim.
 *
 * Speed comes from two observations: most samples repeat a stack, and in
 * perf's output every stack line but the first (the leaf) is the same text
 * each time a stack repeats, since a caller's pc and "+0x" offset are those
 * of its call site; only the leaf's vary.  So a sample is taken straight
 * from the line reader's buffer once all of it is there (fast_sample):
 * the non-leaf lines are hashed raw, as one block, with XXH3-128, only the
 * leaf line is split (function without its offset, module), and the
 * stack cache maps (block, leaf) to the sample's node.  A repeated stack
 * costs a memchr per line, one pass of hashing, one probe and a
 * store_batch_add: no tidying, no frame interning.  The keys are seeded
 * only by whether the process is java (the one thing besides the text
 * that changes the frames), so processes share entries, as they share
 * the store's tree.  On a miss, the prefix cache maps the block to the
 * leaf's parent; failing that, parse_block hashes each line once, chains
 * the hashes from the root to name every root-side part of the stack and
 * finds the longest part seen before in the path cache, so only the
 * lines below it are interned, and a line cache keeps the frame of every
 * one-frame line, so a line is checked and tidied only the first time its
 * text is seen.  A sample holding anything unusual (whitespace-only,
 * comment or unindented lines, CR line ends, a sample above FAST_MAX
 * bytes or one cut short by the end of the input) goes line by line
 * instead: each stack line is split and its parts are copied into one
 * block (blk) that is hashed and cached as a whole.  So does a stack that
 * the limits (import.h) may cut, by a bound taken on a cache miss
 * (struct bound): the line-by-line way splits it from the leaf until it
 * is past them and leaves the cut to import_path.  Memory is bounded by
 * the caches (stackcache-internal.h), the reader's buffer and the largest
 * sample.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Inlined: most keys are short, and a call into the library costs more
 * than hashing them. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#include "perf-internal.h"

/* Caches: at most 2^N slots each (see the struct perf fields). */
#define PREFIX_SLOTS_LOG2 17
#define STACK_SLOTS_LOG2  18
#define PARTS_SLOTS_LOG2  17
#define PATH_SLOTS_LOG2   18
#define FRAME_SLOTS_LOG2  17
#define SAMPLE_SLOTS_LOG2 16
#define FAST_MAX          ((size_t)16 << 20) /* larger samples go line by line */
#define SEED_OTHER        0x6f74686572ull    /* hash seeds for the stack keys */
#define SEED_JAVA         0x6a617661ull
#define SEED_LINE         1u    /* xor'd in: a raw stack line */
#define SEED_PARTS        2u    /* xor'd in: a line's function, module */
#define SERIES_SLOTS      4096u /* (process, event) -> series id map */
#define SERIES_MAX        (SERIES_SLOTS / 2)
#define SAMPLE_MAX        ((size_t)256 << 20) /* bytes of stack lines per sample */
#define NO_EVENT_NAME     "samples"           /* series event when perf printed none */

struct series_ent {
	char *key; /* "process\0event", malloc'd; NULL marks an empty slot */
	size_t key_len;
	uint64_t hash; /* XXH3_64bits of key */
	uint32_t id;
};

/* A raw stack line of a block being interned. */
struct raw_line {
	size_t off, len;            /* in the block */
	struct stackcache_key line; /* hash of its bytes */
	struct stackcache_key path; /* hash of the path from the root to it */
	uint32_t frame;             /* its frame when known, or UINT32_MAX */
	struct stack_line sl;       /* offsets relative to the line */
};

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

static int fail_line(struct perf *p, uint64_t line, const char *what, const char *s, size_t n)
{
	char ex[256];

	import_excerpt(ex, sizeof(ex), s, n);
	/* A bad last line without a newline is most likely a cut file. */
	bool cut = p->lr.unterminated && line == p->lr.line;
	return import_fail(p->ctx, line, "expected %s, got \"%s\"%s", what, ex,
	                   cut ? " at the end of the input (is the file truncated?)" : "");
}

/* ---- series ids ------------------------------------------------------- */

static bool event_is_clock(const char *ev, size_t n)
{
	size_t base = n;
	const char *colon = memchr(ev, ':', n);

	if (colon)
		base = (size_t)(colon - ev);
	return (base == 9 && memcmp(ev, "cpu-clock", 9) == 0) ||
	       (base == 10 && memcmp(ev, "task-clock", 10) == 0);
}

static int note_series_bytes(struct perf *p, uint32_t id, uint64_t bytes)
{
	if (id >= p->series_bytes_cap) {
		size_t old = p->series_bytes_cap;
		int rc = import_grow((void **)&p->series_bytes, &p->series_bytes_cap,
		                     (size_t)id + 1, sizeof(uint64_t));
		if (rc < 0)
			return rc;
		memset(p->series_bytes + old, 0, (p->series_bytes_cap - old) * sizeof(uint64_t));
	}
	p->series_bytes[id] += bytes;
	return 0;
}

static int flush_series_bytes(struct perf *p)
{
	for (size_t i = 0; i < p->series_bytes_cap; i++) {
		if (!p->series_bytes[i])
			continue;
		int rc = store_batch_input_bytes(p->ctx->batch, (uint32_t)i, p->series_bytes[i]);
		if (rc < 0)
			return rc;
		p->series_bytes[i] = 0;
	}
	return 0;
}

static void series_clear(struct perf *p)
{
	for (size_t i = 0; i < SERIES_SLOTS; i++) {
		free(p->series[i].key);
		p->series[i].key = NULL;
	}
	p->series_used = 0;
}

/* The series of the current sample: process p->blk, event after it. */
static int sample_series(struct perf *p, uint32_t *id)
{
	const char *key = p->blk;
	size_t klen = p->blk_head;
	uint64_t h = XXH3_64bits(key, klen);
	size_t slot = (size_t)h & (SERIES_SLOTS - 1);

	for (;;) {
		struct series_ent *e = &p->series[slot];
		if (!e->key)
			break;
		if (e->hash == h && e->key_len == klen && memcmp(e->key, key, klen) == 0) {
			*id = e->id;
			return 0;
		}
		slot = (slot + 1) & (SERIES_SLOTS - 1);
	}

	const char *ev = p->blk + p->pname_len + 1;
	size_t evlen = import_event_base(ev, p->event_len);
	char *event = evlen ? strndup(ev, evlen) : strdup(NO_EVENT_NAME);
	if (!event)
		return -ENOMEM;
	const char *unit = evlen && event_is_clock(ev, evlen) ? "nanoseconds" : "count";
	int rc = import_series(p->ctx, p->blk, NULL, event, unit, id);
	free(event);
	if (rc < 0)
		return rc;

	if (p->series_used >= SERIES_MAX) {
		series_clear(p);
		slot = (size_t)h & (SERIES_SLOTS - 1);
	}
	char *copy = malloc(klen);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, klen);
	struct series_ent *e = &p->series[slot];
	e->key = copy;
	e->key_len = klen;
	e->hash = h;
	e->id = *id;
	p->series_used++;
	return 0;
}

static int names_put(struct perf *p, const char *s, size_t n)
{
	/* +1: the buffer always exists, even for an empty name */
	int rc = import_grow((void **)&p->names, &p->names_cap, p->names_len + n + 1, 1);
	if (rc < 0)
		return rc;
	if (n)
		memcpy(p->names + p->names_len, s, n);
	p->names_len += n;
	return 0;
}

static bool contains(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle)) != NULL;
}

/* Appends the tidied name of one inline piece to p->names, the way
 * stackcollapse-perf does it.  Returns the new name's length. */
static int tidy_piece(struct perf *p, const char *piece, size_t plen, const char *mod, size_t mlen,
                      size_t index, bool java, size_t *outlen)
{
	size_t at = p->names_len;
	int rc;

	if (plen == 9 && memcmp(piece, "[unknown]", 9) == 0 &&
	    !(mlen == 9 && memcmp(mod, "[unknown]", 9) == 0)) {
		const char *slash = memrchr(mod, '/', mlen);
		const char *base = slash ? slash + 1 : mod;
		size_t blen = mlen - (size_t)(base - mod);
		/* import_path cuts a name past IMPORT_MAX_NAME anyway; each
		 * piece of a line may name the module again, so copying no
		 * more than that keeps a line's names within its pieces
		 * times the limit. */
		if (blen > IMPORT_MAX_NAME)
			blen = IMPORT_MAX_NAME;
		rc = names_put(p, "[", 1);
		if (rc >= 0)
			rc = names_put(p, base, blen);
		if (rc >= 0)
			rc = names_put(p, "]", 1);
	} else {
		/* perf prints some symbols with their version ("cfree@GLIBC_2.2.5");
		 * a function has one name whatever the source (import.h).  A JIT
		 * map's names are not ELF symbols and stay as they are. */
		bool jit = mlen > 10 && memcmp(mod, "/tmp/perf-", 10) == 0;
		rc = names_put(p, piece, jit ? plen : import_unversioned_len(piece, plen));
	}
	if (rc < 0)
		return rc;

	char *s = p->names + at;
	size_t n = p->names_len - at;

	/* Most names hold none of the bytes import_tidy() changes. */
	size_t k = 0;
	while (k < n && !(cclass[(unsigned char)s[k]] & C_TIDY))
		k++;
	if (k < n)
		n = import_tidy(s, n);
	if (java && n > 0 && s[0] == 'L' && memchr(s, '/', n)) {
		memmove(s, s + 1, n - 1);
		n--;
	}
	p->names_len = at + n;
	if (index > 0 && !contains(s, n, "_[i]")) {
		rc = names_put(p, "_[i]", 4);
		if (rc < 0)
			return rc;
		n += 4;
	}
	*outlen = n;
	return 0;
}

static uint8_t frame_kind(const char *mod, size_t mlen, size_t index, bool unknown)
{
	if (index > 0)
		return STORE_FRAME_INLINE;
	if (mlen >= 8 && memcmp(mod, "[kernel.", 8) == 0)
		return STORE_FRAME_KERNEL;
	if (unknown)
		return STORE_FRAME_UNKNOWN;
	if (mlen > 10 && memcmp(mod, "/tmp/perf-", 10) == 0 &&
	    memcmp(mod + mlen - 4, ".map", 4) == 0)
		return STORE_FRAME_JIT;
	return STORE_FRAME_USER;
}

static int add_frame(struct perf *p, size_t *nf, size_t name_off, size_t name_len, const char *mod,
                     size_t mlen, uint8_t kind)
{
	if (*nf == p->frames_cap) {
		size_t ncap = p->frames_cap ? p->frames_cap * 2 : 64;
		struct store_frame *nfr = realloc(p->frames, ncap * sizeof(*p->frames));
		if (!nfr)
			return -ENOMEM;
		p->frames = nfr;
		size_t *noff = realloc(p->name_off, ncap * sizeof(size_t));
		if (!noff)
			return -ENOMEM;
		p->name_off = noff;
		p->frames_cap = ncap;
	}
	struct store_frame *fr = &p->frames[*nf];
	memset(fr, 0, sizeof(*fr));
	p->name_off[*nf] = name_off;
	fr->name_len = name_len;
	fr->module = mod;
	fr->module_len = mlen;
	fr->kind = kind;
	(*nf)++;
	return 0;
}

/* The last "->" in s[0..n), or NULL.  "->" cannot overlap itself, so
 * these are the arrows perf_find_arrow() finds from the front. */
static const char *last_arrow(const char *s, size_t n)
{
	while (n >= 2) {
		const char *d = memrchr(s, '>', n);
		if (!d || d == s)
			return NULL;
		if (d[-1] == '-')
			return d - 1;
		n = (size_t)(d - s);
	}
	return NULL;
}

/* Appends the frames of one stack line (function without its offset, and
 * module) to p->frames, innermost first: the line's function split on
 * "->" into inline pieces, its last piece first.  Names go to p->names
 * and are pointed at by frames_finish().  With depth and bytes (a
 * stack's frames and name bytes so far, import_stack_past), it stops
 * once the stack is past the limits and returns 1; else 0, or -errno. */
static int line_frames(struct perf *p, size_t *nf, const char *func, size_t flen, const char *mod,
                       size_t mlen, bool java, size_t *depth, size_t *bytes)
{
	int rc;

	if (flen > 0 && func[0] == '(')
		return 0; /* a process name, not a frame */

	/* split on "->", dropping trailing empty pieces like Perl */
	size_t end = flen;
	while (end >= 2 && func[end - 2] == '-' && func[end - 1] == '>')
		end -= 2;
	if (end == 0)
		return 0;
	for (;;) {
		const char *arrow = last_arrow(func, end);
		size_t at = arrow ? (size_t)(arrow - func) + 2 : 0;
		size_t plen = end - at;
		size_t off = p->names_len, nlen;
		size_t index = arrow ? 1 : 0; /* only the first piece is not inlined */
		bool unknown = plen == 9 && memcmp(func + at, "[unknown]", 9) == 0;
		rc = tidy_piece(p, func + at, plen, mod, mlen, index, java, &nlen);
		if (rc < 0)
			return rc;
		rc = add_frame(p, nf, off, nlen, mod, mlen, frame_kind(mod, mlen, index, unknown));
		if (rc < 0)
			return rc;
		if (depth && import_stack_past(depth, bytes, nlen))
			return 1;
		if (!arrow)
			break;
		end = at - 2;
	}
	return 0;
}

static void frames_finish(struct perf *p, size_t nf)
{
	for (size_t i = 0; i < nf; i++)
		p->frames[i].name = p->names + p->name_off[i];
}

static bool is_java(const struct perf *p)
{
	return p->pname_len >= 4 && memcmp(p->blk, "java", 4) == 0;
}

/* Parses the current line-by-line sample's stack lines (in p->blk) into a
 * root-first path and interns it.  Lines are callee first, so they are
 * walked backwards. */
static int parse_sample(struct perf *p, uint32_t *node)
{
	const char *rec = p->blk + p->blk_head;
	size_t len = p->blk_len - p->blk_head;
	size_t nsl = 0, pos = 0, nf = 0;
	bool java = is_java(p);
	int rc;

	/* Records are [u32 len][function][u32 len][module][u32 len][tail]. */
	while (pos < len) {
		uint32_t fl, ml, tl;
		rc = import_grow((void **)&p->sl, &p->sl_cap, nsl + 1, sizeof(*p->sl));
		if (rc < 0)
			return rc;
		memcpy(&fl, rec + pos, 4);
		p->sl[nsl].func = pos + 4;
		p->sl[nsl].func_len = fl;
		pos += 4 + fl;
		memcpy(&ml, rec + pos, 4);
		p->sl[nsl].mod = pos + 4;
		p->sl[nsl].mod_len = ml;
		pos += 4 + ml;
		memcpy(&tl, rec + pos, 4);
		pos += 4 + tl;
		nsl++;
	}

	/* Innermost first, until the stack is past the limits: import_path
	 * makes the same path of those frames as of all of them. */
	size_t depth = 0, bytes = 0;
	p->names_len = 0;
	for (size_t i = 0; i < nsl; i++) {
		rc = line_frames(p, &nf, rec + p->sl[i].func, p->sl[i].func_len, rec + p->sl[i].mod,
		                 p->sl[i].mod_len, java, &depth, &bytes);
		if (rc < 0)
			return rc;
		if (rc > 0)
			break;
	}
	frames_finish(p, nf);
	for (size_t i = 0; i < nf / 2; i++) {
		struct store_frame t = p->frames[i];
		p->frames[i] = p->frames[nf - 1 - i];
		p->frames[nf - 1 - i] = t;
	}
	return import_path(p->ctx, p->frames, nf, node);
}

/* ---- samples ---------------------------------------------------------- */

/* Stores the current sample: with its moment when it has a time and the
 * store keeps samples whole, else as a count. */
static int count_sample(struct perf *p, uint32_t series, uint32_t node)
{
	const struct import_options *o = p->ctx->opt;
	int64_t off = o ? o->clock_offset : 0;
	int rc;

	if (p->has_time && o && o->samples) {
		struct store_sample smp = {
		        .node = node, .pid = p->pid, .tid = p->tid, .weight = p->weight};
		int64_t sec;
		if (__builtin_add_overflow(p->when, off, &sec))
			return import_fail(
			        p->ctx, p->header_line,
			        "sample time plus --clock-offset does not fit in 64 bits");
		if (__builtin_mul_overflow(sec, 1000000, &smp.time_us) ||
		    __builtin_add_overflow(smp.time_us, p->frac_us, &smp.time_us))
			return import_fail(p->ctx, p->header_line,
			                   "sample time %lld s is out of range; expected a time "
			                   "within 2^31 of the store's time buckets from 1970",
			                   (long long)sec);
		rc = import_sample(p->ctx, &p->sums, p->header_line, series, &smp);
	} else {
		int64_t when = p->when;
		if (__builtin_add_overflow(when, off, &when))
			return import_fail(
			        p->ctx, p->header_line,
			        "sample time plus --clock-offset does not fit in 64 bits");
		rc = import_add(p->ctx, &p->sums, p->header_line, series, when, node, 1, p->weight);
	}
	if (rc < 0)
		return rc;
	rc = note_series_bytes(p, series, p->sample_bytes);
	if (rc < 0)
		return rc;
	p->ctx->samples++;
	return 0;
}

/* Ends the current line-by-line sample, if any, and stores it. */
static int end_sample(struct perf *p)
{
	enum sample_state st = p->state;
	uint32_t series, node;
	int rc;

	p->state = NO_SAMPLE;
	if (st != KEEP_SAMPLE)
		return 0;

	XXH128_hash_t hh = XXH3_128bits(p->blk, p->blk_len);
	struct stackcache_key key = {hh.low64, hh.high64};
	if (!stackcache_get(p->sample, key, &series, &node)) {
		rc = sample_series(p, &series);
		if (rc < 0)
			return rc;
		rc = parse_sample(p, &node);
		if (rc < 0)
			return rc;
		stackcache_put(p->sample, key, series, node);
	}
	return count_sample(p, series, node);
}

/* ---- samples taken whole from the reader's buffer --------------------- */

/* Interns the frames of one stack line's parts below *node and moves
 * *node to the last of them.  A line that gives one frame is remembered
 * under fkey (a hash of the text its frames come from), so it is split
 * and its frame interned only once. */
static int extend_line(struct perf *p, const char *func, size_t flen, const char *mod, size_t mlen,
                       struct stackcache_key fkey, uint32_t *node, uint32_t *single)
{
	uint32_t parent = *node, frame = 0, unused;
	size_t nf = 0;
	int rc;

	if (single)
		*single = UINT32_MAX;
	if (stackcache_get(p->frame, fkey, &frame, &unused)) {
		if (single)
			*single = frame;
		return store_batch_node(p->ctx->batch, parent, frame, node);
	}
	p->names_len = 0;
	rc = line_frames(p, &nf, func, flen, mod, mlen, is_java(p), NULL, NULL);
	if (rc < 0)
		return rc;
	frames_finish(p, nf);
	for (size_t i = nf; i-- > 0;) { /* root-most first */
		rc = store_batch_frame(p->ctx->batch, &p->frames[i], &frame);
		if (rc < 0)
			return rc;
		rc = store_batch_node(p->ctx->batch, parent, frame, &parent);
		if (rc < 0)
			return rc;
	}
	if (nf == 1 && frame != UINT32_MAX) {
		stackcache_put(p->frame, fkey, frame, 0);
		if (single)
			*single = frame;
	}
	*node = parent;
	return 0;
}

static struct stackcache_key hash_key(const void *s, size_t n, uint64_t seed)
{
	XXH128_hash_t h = XXH3_128bits_withSeed(s, n, seed);
	struct stackcache_key k = {h.low64, h.high64};
	return k;
}

/* The frame cache's key for a line's parts, the text its frames come
 * from: [u32 length][function without offset][module], as the leaf's
 * key in fast_sample has them, hashed with seed ^ SEED_PARTS. */
static int parts_key(struct perf *p, const char *func, size_t flen, const char *mod, size_t mlen,
                     uint64_t seed, struct stackcache_key *key)
{
	size_t klen = 4 + flen + mlen;
	uint32_t fl32 = (uint32_t)flen;
	int rc = import_grow((void **)&p->partkey, &p->partkey_cap, klen, 1);

	if (rc < 0)
		return rc;
	memcpy(p->partkey, &fl32, 4);
	memcpy(p->partkey + 4, func, flen);
	memcpy(p->partkey + 4 + flen, mod, mlen);
	*key = hash_key(p->partkey, klen, seed ^ SEED_PARTS);
	return 0;
}

/* An upper bound on what a stack's lines give line_frames(), for the
 * fast path, which interns lines itself and so must leave to import_path
 * (the line-by-line way) every stack a limit may cut. */
struct bound {
	size_t frames, bytes;
	bool long_name; /* a name or module may pass IMPORT_MAX_NAME */
};

/* Adds one line (function without its offset, flen bytes; a module of
 * mlen bytes) to b: a frame per "->" piece at most, each named by at most
 * its piece or "[" module base "]", and a 4-byte suffix. */
static void bound_line(struct bound *b, const char *func, size_t flen, size_t mlen)
{
	size_t pieces = 1;

	for (const char *a = func, *end = func + flen; (a = perf_find_arrow(a, (size_t)(end - a)));
	     a += 2)
		pieces++;
	b->frames += pieces;
	b->bytes += flen + pieces * (mlen + 6);
	if (flen + 4 > IMPORT_MAX_NAME || mlen + 6 > IMPORT_MAX_NAME)
		b->long_name = true;
}

/* True when a limit may cut the stack b bounds. */
static bool bound_past(const struct bound *b)
{
	return b->frames > IMPORT_MAX_DEPTH || b->bytes > IMPORT_MAX_STACK_BYTES || b->long_name;
}

/* The key of a stack without its pcs, offsets and what follows the
 * modules: the leaf's parts (leaf, leaf_len: as fast_sample's key has
 * them) and then, callee first, every other line's function and module,
 * which is all its frames depend on besides the seed.  Samples of one
 * call path often differ in those columns alone (a return address in
 * another instruction, a frame perf could not name), and would each be
 * interned afresh by their raw text.  Adds every line of block to *b.
 * Returns 1 with the key, 0 when a line has a NUL or does not parse (the
 * caller's slow path reports it), -errno. */
static int stack_parts_key(struct perf *p, const char *block, size_t blen, const char *leaf,
                           size_t leaf_len, uint64_t seed, struct stackcache_key *key,
                           struct bound *b)
{
	size_t pos = 0, at;
	int rc;

	if (memchr(block, '\0', blen))
		return 0;
	rc = import_grow((void **)&p->stackkey, &p->stackkey_cap, leaf_len + blen + 8, 1);
	if (rc < 0)
		return rc;
	memcpy(p->stackkey, leaf, leaf_len);
	at = leaf_len;
	while (pos < blen) {
		const char *l = block + pos;
		const char *nl = find_nl(l, block + blen);
		size_t n = nl ? (size_t)(nl - l) : blen - pos;
		struct stack_line sl;
		if (!perf_match_stack_line(l, n, &sl))
			return 0;
		uint32_t lens[2] = {(uint32_t)perf_strip_offset(l + sl.func, sl.func_len),
		                    (uint32_t)sl.mod_len};
		/* the parts and their lengths are never longer than the line
		 * with its newline, whose room the buffer already has */
		bound_line(b, l + sl.func, lens[0], lens[1]);
		memcpy(p->stackkey + at, lens, 8);
		memcpy(p->stackkey + at + 8, l + sl.func, lens[0]);
		memcpy(p->stackkey + at + 8 + lens[0], l + sl.mod, lens[1]);
		at += 8 + lens[0] + lens[1];
		pos += n + 1;
	}
	*key = hash_key(p->stackkey, at, seed);
	return 1;
}

/* Interns the raw stack lines of block (each ending in '\n', callee
 * first; the first is input line first_line) as a path and returns its
 * last node in *node.  Each line's raw bytes are hashed once; a chain of
 * those hashes from the root names every root-side part of the path, and
 * p->path maps the parts seen before to their nodes, so only the lines
 * below the longest known part are interned, and of those only lines
 * never seen anywhere before are checked and split. */
static int parse_block(struct perf *p, const char *block, size_t len, uint64_t first_line,
                       uint64_t seed, uint32_t *node)
{
	size_t nl_count = 0, pos = 0;
	int rc;

	while (pos < len) {
		const char *l = block + pos;
		const char *nl = find_nl(l, block + len);
		size_t n = nl ? (size_t)(nl - l) : len - pos;
		rc = import_grow((void **)&p->rl, &p->rl_cap, nl_count + 1, sizeof(*p->rl));
		if (rc < 0)
			return rc;
		p->rl[nl_count].off = pos;
		p->rl[nl_count].len = n;
		p->rl[nl_count].line = hash_key(l, n, seed ^ SEED_LINE);
		nl_count++;
		pos += n + 1;
	}

	/* Path keys from the root (the last line) down. */
	struct stackcache_key up = {seed, ~seed};
	for (size_t i = nl_count; i-- > 0;) {
		uint64_t two[4] = {up.lo, up.hi, p->rl[i].line.lo, p->rl[i].line.hi};
		p->rl[i].path = hash_key(two, sizeof(two), seed);
		up = p->rl[i].path;
		/* The search below and the puts after it probe these
		 * slots; their cache misses overlap when issued now. */
		stackcache_prefetch(p->path, p->rl[i].path);
		stackcache_prefetch(p->frame, p->rl[i].line);
	}

	/* The deepest cached part: depth d covers the last d lines.  A
	 * cleared cache can leave gaps; any hit is still right. */
	size_t lo = 0, hi = nl_count;
	uint32_t at = STORE_ROOT_NODE, unused;
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;
		uint32_t got;
		if (stackcache_get(p->path, p->rl[nl_count - mid].path, &got, &unused)) {
			lo = mid;
			at = got;
		} else {
			hi = mid - 1;
		}
	}
	size_t fresh = nl_count - lo; /* lines 0..fresh-1 are new */

	/* Check the new lines never seen before in input order, so the
	 * first bad one is reported, then intern all new lines root first. */
	for (size_t i = 0; i < fresh; i++) {
		const char *l = block + p->rl[i].off;
		size_t n = p->rl[i].len;
		if (stackcache_get(p->frame, p->rl[i].line, &p->rl[i].frame, &unused))
			continue;
		p->rl[i].frame = UINT32_MAX;
		if (memchr(l, '\0', n) || !perf_match_stack_line(l, n, &p->rl[i].sl))
			return fail_line(p, first_line + i, "a sample header or a stack line", l,
			                 n);
	}
	for (size_t i = fresh; i-- > 0;) {
		const char *l = block + p->rl[i].off;
		struct stack_line *sl = &p->rl[i].sl; /* set when no frame */
		if (p->rl[i].frame != UINT32_MAX) {
			rc = store_batch_node(p->ctx->batch, at, p->rl[i].frame, &at);
		} else {
			/* A new line text is mostly a known function
			 * called from another place: its parts, which
			 * leave the pc and offset out, find its frame
			 * without splitting and tidying it again. */
			const char *func = l + sl->func;
			size_t flen = perf_strip_offset(func, sl->func_len);
			struct stackcache_key pkey;
			uint32_t single;
			rc = parts_key(p, func, flen, l + sl->mod, sl->mod_len, seed, &pkey);
			if (rc < 0)
				return rc;
			rc = extend_line(p, func, flen, l + sl->mod, sl->mod_len, pkey, &at,
			                 &single);
			if (rc == 0 && single != UINT32_MAX)
				stackcache_put(p->frame, p->rl[i].line, single, 0);
		}
		if (rc < 0)
			return rc;
		if (at != UINT32_MAX)
			stackcache_put(p->path, p->rl[i].path, at, 0);
	}
	*node = at;
	return 0;
}

/* Interns a sample that no stack cache knew: its non-leaf lines (block,
 * the first being input line first_line) through the prefix cache or
 * parse_block, then the leaf below them, whose parts fast_sample put in
 * p->leafkey: the block's 16-byte hash, u32 function length, function,
 * module (klen bytes in all). */
static int intern_sample(struct perf *p, const char *block, size_t blen, uint64_t first_line,
                         uint64_t seed, struct stackcache_key bkey, size_t nlines, size_t klen,
                         uint32_t *node)
{
	uint32_t parent = STORE_ROOT_NODE, unused, flen;
	int rc;

	if (nlines > 1 && !stackcache_get(p->prefix, bkey, &parent, &unused)) {
		rc = parse_block(p, block, blen, first_line, seed, &parent);
		if (rc < 0)
			return rc;
		if (parent != UINT32_MAX)
			stackcache_put(p->prefix, bkey, parent, 0);
	}
	*node = parent;
	memcpy(&flen, p->leafkey + 16, 4);
	return extend_line(p, p->leafkey + 20, flen, p->leafkey + 20 + flen, klen - 20 - flen,
	                   hash_key(p->leafkey + 16, klen - 16, seed ^ SEED_PARTS), node, NULL);
}

/* Stores the sample whose header the reader returned last when all of it
 * is in the buffer (reading more as needed) and it holds only indented
 * stack lines, then consumes its lines and the blank line that ends it.
 * Returns 1 when it did, 0 when the sample must go line by line (nothing
 * consumed), -errno on an error. */
static int fast_sample(struct perf *p)
{
	struct linereader *r = &p->lr;
	size_t off = 0, leaf_len = 0, nlines = 0, blank;
	const char *base;
	struct header h;

	for (;;) {
		base = r->buf + r->start;
		size_t avail = r->end - r->start;
		const char *l = base + off;
		const char *nl = find_nl(l, base + avail);
		if (!nl) {
			if (r->eof || avail > FAST_MAX)
				return 0;
			int rc = linereader_fill(r);
			if (rc < 0)
				return rc;
			continue;
		}
		size_t n = (size_t)(nl - l);
		if (n == 0) {
			blank = 1;
			break;
		}
		unsigned char c = (unsigned char)l[0];
		if (c == ' ' || c == '\t') {
			/* a stack line; whitespace-only lines and CR line
			 * ends go the general way */
			if (is_ws((unsigned char)l[n - 1]))
				return 0;
			if (nlines++ == 0)
				leaf_len = n;
			off += n + 1;
			continue;
		}
		if (c != '#' && !is_ws(c) && perf_match_header(l, n, &h)) {
			blank = 0;
			break;
		}
		return 0;
	}
	if (nlines == 0)
		return 0;

	uint64_t line = r->line + 1; /* the leaf's */
	struct stack_line sl;
	if (memchr(base, '\0', leaf_len) || !perf_match_stack_line(base, leaf_len, &sl))
		return fail_line(p, line, "a sample header or a stack line", base, leaf_len);
	const char *func = base + sl.func;
	size_t flen = perf_strip_offset(func, sl.func_len);
	const char *mod = base + sl.mod;

	uint32_t series, node, unused;
	int rc = sample_series(p, &series);
	if (rc < 0)
		return rc;
	/* A stack's frames depend on its lines and, through the tidying,
	 * on whether the process is java; the tree is shared by every
	 * series, so the keys name nothing else. */
	uint64_t seed = is_java(p) ? SEED_JAVA : SEED_OTHER;

	/* The block of non-leaf lines (empty for a one-line stack) is hashed
	 * raw; the sample's key is that hash and the leaf's parts.  When it
	 * misses, every line's parts make a second key (stack_parts_key). */
	const char *block = base + leaf_len + 1;
	size_t blen = off - (leaf_len + 1);
	XXH128_hash_t bh = XXH3_128bits_withSeed(block, blen, seed);
	struct stackcache_key bkey = {bh.low64, bh.high64};
	if (nlines > 1) /* looked up below on a stack miss */
		stackcache_prefetch(p->prefix, bkey);
	size_t klen = 16 + 4 + flen + sl.mod_len;
	uint32_t fl32 = (uint32_t)flen;
	rc = import_grow((void **)&p->leafkey, &p->leafkey_cap, klen, 1);
	if (rc < 0)
		return rc;
	memcpy(p->leafkey, &bh.low64, 8);
	memcpy(p->leafkey + 8, &bh.high64, 8);
	memcpy(p->leafkey + 16, &fl32, 4);
	memcpy(p->leafkey + 20, func, flen);
	memcpy(p->leafkey + 20 + flen, mod, sl.mod_len);
	XXH128_hash_t sh = XXH3_128bits(p->leafkey, klen);
	struct stackcache_key skey = {sh.low64, sh.high64};
	if (!stackcache_get(p->stack, skey, &node, &unused)) {
		struct stackcache_key akey;
		struct bound b = {0};
		bound_line(&b, func, flen, sl.mod_len);
		int parsed = stack_parts_key(p, block, blen, p->leafkey + 16, klen - 16, seed,
		                             &akey, &b);
		if (parsed < 0)
			return parsed;
		/* Only stacks within the limits are cached here, so a hit
		 * above needs no bound. */
		if (parsed && bound_past(&b))
			return 0;
		if (parsed && stackcache_get(p->parts, akey, &node, &unused)) {
			stackcache_put(p->stack, skey, node, 0);
		} else {
			rc = intern_sample(p, block, blen, line + 1, seed, bkey, nlines, klen,
			                   &node);
			if (rc < 0)
				return rc;
			if (node != UINT32_MAX) {
				stackcache_put(p->stack, skey, node, 0);
				if (parsed)
					stackcache_put(p->parts, akey, node, 0);
			}
		}
	}

	p->sample_bytes += off + blank;
	rc = count_sample(p, series, node);
	if (rc < 0)
		return rc;
	p->state = NO_SAMPLE;
	r->start += off + blank;
	r->consumed += off + blank;
	r->line += nlines + blank;
	return 1;
}

/* 1 when samples of event ev are kept, 0 when skipped, -ENOMEM. */
static int event_wanted(struct perf *p, const char *ev, size_t n)
{
	const struct import_options *o = p->ctx->opt;

	if (o && o->all_events)
		return 1;
	if (o && o->event) {
		size_t wl = strlen(o->event);
		if (wl == n && memcmp(ev, o->event, n) == 0)
			return 1;
		/* "--event cpu-clock" also takes "cpu-clock:u" */
		const char *colon = memchr(ev, ':', n);
		return colon && !strchr(o->event, ':') && (size_t)(colon - ev) == wl &&
		       memcmp(ev, o->event, wl) == 0;
	}
	/* Without --event, the first event seen in any spelling: cpu-clock,
	 * cpu-clock:u and cpu-clock:ppp are one event, as they are one
	 * series (and stackcollapse-perf.pl keeps them all too). */
	size_t base = import_event_base(ev, n);
	if (!p->first_event) {
		p->first_event = strndup(ev, base);
		return p->first_event ? 1 : -ENOMEM;
	}
	return strlen(p->first_event) == base && memcmp(p->first_event, ev, base) == 0;
}

static int blk_reserve(struct perf *p, size_t more)
{
	if (p->blk_len + more > SAMPLE_MAX)
		return -E2BIG;
	return import_grow((void **)&p->blk, &p->blk_cap, p->blk_len + more, 1);
}

static int start_sample(struct perf *p, const char *l, size_t n, const struct header *h)
{
	int rc;

	if (h->event) {
		rc = event_wanted(p, h->event, h->event_len);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			p->state = SKIP_SAMPLE;
			p->ctx->skipped++;
			p->skipped_other++;
			return 0;
		}
	}

	p->header_line = p->lr.line;
	p->weight = 1;
	if (h->period) {
		uint64_t v;
		if (perf_parse_u64(h->period, h->period_len, &v) < 0)
			return import_fail(
			        p->ctx, p->lr.line, "period %.*s does not fit in 64 bits",
			        (int)(h->period_len > 40 ? 40 : h->period_len), h->period);
		if (v)
			p->weight = v;
	}
	rc = perf_header_time(l, n, h->end, &p->when, &p->frac_us);
	if (rc < 0)
		return import_fail(p->ctx, p->lr.line, "sample time does not fit in 64 bits");
	p->has_time = rc > 0;
	if (rc == 0)
		p->when = p->ctx->opt ? p->ctx->opt->now : 0;
	p->pid = h->pid;
	p->tid = h->tid;

	/* "process\0event\0": the process name is comm with ' ' -> '_' */
	p->blk_len = 0;
	rc = blk_reserve(p, h->comm_len + h->event_len + 2);
	if (rc < 0)
		return rc == -E2BIG ? import_fail(p->ctx, p->lr.line,
		                                  "expected a sample of at most 256 MiB")
		                    : rc;
	for (size_t i = 0; i < h->comm_len; i++)
		p->blk[i] = h->comm[i] == ' ' ? '_' : h->comm[i];
	p->blk[h->comm_len] = '\0';
	if (h->event_len)
		memcpy(p->blk + h->comm_len + 1, h->event, h->event_len);
	p->blk[h->comm_len + 1 + h->event_len] = '\0';
	p->pname_len = h->comm_len;
	p->event_len = h->event_len;
	p->blk_len = p->blk_head = p->pname_len + p->event_len + 2;
	p->state = KEEP_SAMPLE;
	return 0;
}

/* Appends one stack line to the sample as its parts that matter to the
 * result: the function with any "+0x<hex>" offset stripped, the module
 * and whatever follows the module's ")".  The pc column and the offset
 * are left out, so samples that differ only there share a cache entry. */
static int add_stack_line(struct perf *p, const char *l, size_t n)
{
	struct stack_line sl;
	int rc;

	if (memchr(l, '\0', n) || !perf_match_stack_line(l, n, &sl))
		return fail_line(p, p->lr.line, "a sample header or a stack line", l, n);
	const char *func = l + sl.func;
	size_t flen = perf_strip_offset(func, sl.func_len);
	size_t tail = sl.mod + sl.mod_len + 1;
	uint32_t lens[3] = {(uint32_t)flen, (uint32_t)sl.mod_len, (uint32_t)(n - tail)};

	rc = blk_reserve(p, flen + sl.mod_len + (n - tail) + 12);
	if (rc < 0)
		return rc == -E2BIG ? import_fail(p->ctx, p->lr.line,
		                                  "expected a sample of at most 256 MiB")
		                    : rc;
	char *o = p->blk + p->blk_len;
	memcpy(o, &lens[0], 4);
	memcpy(o + 4, func, flen);
	o += 4 + flen;
	memcpy(o, &lens[1], 4);
	memcpy(o + 4, l + sl.mod, sl.mod_len);
	o += 4 + sl.mod_len;
	memcpy(o, &lens[2], 4);
	memcpy(o + 4, l + tail, n - tail);
	o += 4 + (n - tail);
	p->blk_len = (size_t)(o - p->blk);
	return 0;
}

/* A sample line of a recording without callchains, where a sample may
 * start: stored as a one-frame stack.  Returns 1 when l was one, 0 when
 * not (nothing done), -errno. */
static int one_line_sample(struct perf *p, const char *l, size_t n)
{
	struct header h;
	size_t skip = 0, tail;
	int rc;

	while (skip < n && is_ws((unsigned char)l[skip]))
		skip++;
	if (!perf_match_one_line(l + skip, n - skip, &h, &tail))
		return 0;
	p->sample_bytes = n + 1;
	rc = start_sample(p, l + skip, n - skip, &h);
	if (rc < 0)
		return rc;
	if (p->state == KEEP_SAMPLE) {
		rc = add_stack_line(p, l + skip + tail, n - skip - tail);
		if (rc < 0)
			return rc;
	}
	rc = end_sample(p);
	return rc < 0 ? rc : 1;
}

static int handle_line(struct perf *p, const char *l, size_t n)
{
	struct header h;
	int rc;

	if (n == 0) {
		p->sample_bytes += 1;
		return end_sample(p);
	}
	if (l[0] == '#')
		return 0;
	if (!is_ws((unsigned char)l[0]) && perf_match_header(l, n, &h)) {
		if (memchr(l, '\0', n))
			return fail_line(p, p->lr.line, "a sample header or a stack line", l, n);
		/* perf ends every line with a newline and every header with
		 * stack lines or a blank line, so an input that stops inside
		 * a header was cut: refuse it rather than store a sample of
		 * whatever part of the header is left. */
		if (p->lr.unterminated)
			return fail_line(p, p->lr.line,
			                 "a complete sample header followed by a newline", l, n);
		/* A header also ends a sample that had no blank line. */
		rc = end_sample(p);
		if (rc < 0)
			return rc;
		perf_match_event(l, n, &h);
		/* A header that names no event where it ends may be a line
		 * of a recording without callchains written flush left (by
		 * a converter, or sed): read as when it is indented. */
		if (!h.event) {
			rc = one_line_sample(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
		}
		p->sample_bytes = n + 1;
		rc = start_sample(p, l, n, &h);
		if (rc < 0 || p->state != KEEP_SAMPLE)
			return rc;
		/* l is invalid from here on: fast_sample may read more */
		rc = fast_sample(p);
		return rc < 0 ? rc : 0;
	}
	/* Anything else is a stack line (which need not be indented); it
	 * is checked when its sample is parsed, or ignored in a skipped
	 * sample. */

	/* Whitespace only: ignored, as stackcollapse does.  Stack lines end
	 * in ')', so the last byte settles it without scanning the indent. */
	if (is_ws((unsigned char)l[n - 1])) {
		size_t i = 0;
		while (i < n && is_ws((unsigned char)l[i]))
			i++;
		if (i == n)
			return 0;
	}
	switch (p->state) {
	case NO_SAMPLE:
		if (is_ws((unsigned char)l[0]) && !memchr(l, '\0', n)) {
			rc = one_line_sample(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
		}
		if (!is_ws((unsigned char)l[0]))
			return fail_line(p, p->lr.line, "a sample header or a stack line", l, n);
		return fail_line(p, p->lr.line, "a sample header", l, n);
	case SKIP_SAMPLE: return 0;
	case KEEP_SAMPLE: p->sample_bytes += n + 1; return add_stack_line(p, l, n);
	}
	return 0;
}

/* import_lines() callback. */
static int handle_line_cb(void *state, const char *l, size_t n)
{
	return handle_line(state, l, n);
}

static void perf_free(struct perf *p)
{
	linereader_free(&p->lr);
	if (p->series)
		series_clear(p);
	free(p->series);
	free(p->series_bytes);
	stackcache_free(p->prefix);
	stackcache_free(p->stack);
	stackcache_free(p->parts);
	stackcache_free(p->sample);
	stackcache_free(p->path);
	stackcache_free(p->frame);
	free(p->blk);
	free(p->first_event);
	free(p->sl);
	free(p->rl);
	free(p->frames);
	free(p->name_off);
	free(p->names);
	free(p->leafkey);
	free(p->partkey);
	free(p->stackkey);
	import_sums_free(&p->sums);
}

int import_perf(struct import_ctx *ctx)
{
	struct perf p = {.ctx = ctx};
	int rc;

	rc = linereader_init(&p.lr, ctx->fd, ctx->prefix, ctx->prefix_len);
	if (rc < 0)
		return rc;
	p.prefix = stackcache_new(PREFIX_SLOTS_LOG2);
	p.stack = stackcache_new(STACK_SLOTS_LOG2);
	p.parts = stackcache_new(PARTS_SLOTS_LOG2);
	p.sample = stackcache_new(SAMPLE_SLOTS_LOG2);
	p.path = stackcache_new(PATH_SLOTS_LOG2);
	p.frame = stackcache_new(FRAME_SLOTS_LOG2);
	p.series = calloc(SERIES_SLOTS, sizeof(*p.series));
	if (!p.prefix || !p.stack || !p.parts || !p.sample || !p.path || !p.frame || !p.series) {
		rc = -ENOMEM;
		goto out;
	}

	rc = import_lines(ctx, &p.lr, handle_line_cb, &p);
	if (rc < 0)
		goto out;
	/* A last sample without a trailing blank line still counts. */
	rc = end_sample(&p);
	if (rc < 0)
		goto out;
	rc = flush_series_bytes(&p);
	if (rc < 0)
		goto out;
	ctx->bytes = p.lr.consumed;
	if (p.skipped_other && p.first_event)
		snprintf(ctx->warning, sizeof(ctx->warning),
		         "kept only event %s (in every spelling); skipped %llu samples of other "
		         "events (use --all-events or --event)",
		         p.first_event, (unsigned long long)p.skipped_other);
	rc = 0;
out:
	perf_free(&p);
	return rc;
}
