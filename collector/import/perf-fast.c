/*
 * perf-fast.c — perf script samples taken whole from the line reader's
 * buffer, through the stack caches.
 *
 * Speed comes from two observations: most samples repeat a stack, and in
 * perf's output every stack line but the first (the leaf) is the same text
 * each time a stack repeats, since a caller's pc and "+0x" offset are those
 * of its call site; only the leaf's vary.  So a sample is taken straight
 * from the line reader's buffer once all of it is there (perf_fast_sample):
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
#include <stdlib.h>
#include <string.h>

/* Inlined: most keys are short, and a call into the library costs more
 * than hashing them. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#include "perf-internal.h"

#define FAST_MAX   ((size_t)16 << 20) /* larger samples go line by line */
#define SEED_OTHER 0x6f74686572ull    /* hash seeds for the stack keys */
#define SEED_JAVA  0x6a617661ull
#define SEED_LINE  1u /* xor'd in: a raw stack line */
#define SEED_PARTS 2u /* xor'd in: a line's function, module */

/* A raw stack line of a block being interned. */
struct raw_line {
	size_t off, len;            /* in the block */
	struct stackcache_key line; /* hash of its bytes */
	struct stackcache_key path; /* hash of the path from the root to it */
	uint32_t frame;             /* its frame when known, or UINT32_MAX */
	struct stack_line sl;       /* offsets relative to the line */
};

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
	rc = perf_line_frames(p, &nf, func, flen, mod, mlen, perf_is_java(p), NULL, NULL);
	if (rc < 0)
		return rc;
	perf_frames_finish(p, nf);
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
 * key in perf_fast_sample has them, hashed with seed ^ SEED_PARTS. */
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

/* An upper bound on what a stack's lines give perf_line_frames(), for the
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
 * modules: the leaf's parts (leaf, leaf_len: as perf_fast_sample's key has
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
		rc = perf_line_pc(p, l, &sl);
		if (rc < 0)
			return rc;
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
			return perf_fail_line(p, first_line + i, "a sample header or a stack line",
			                      l, n);
		rc = perf_line_pc(p, l, &p->rl[i].sl);
		if (rc < 0)
			return rc;
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
 * parse_block, then the leaf below them, whose parts perf_fast_sample put in
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
int perf_fast_sample(struct perf *p)
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
		return perf_fail_line(p, line, "a sample header or a stack line", base, leaf_len);
	int rc = perf_line_pc(p, base, &sl);
	if (rc < 0)
		return rc;
	const char *func = base + sl.func;
	size_t flen = perf_strip_offset(func, sl.func_len);
	const char *mod = base + sl.mod;

	uint32_t series, node, unused;
	rc = perf_sample_series(p, &series);
	if (rc < 0)
		return rc;
	/* A stack's frames depend on its lines and, through the tidying,
	 * on whether the process is java; the tree is shared by every
	 * series, so the keys name nothing else. */
	uint64_t seed = perf_is_java(p) ? SEED_JAVA : SEED_OTHER;

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
	rc = perf_count_sample(p, series, node);
	if (rc < 0)
		return rc;
	p->state = NO_SAMPLE;
	r->start += off + blank;
	r->consumed += off + blank;
	r->line += nlines + blank;
	return 1;
}
