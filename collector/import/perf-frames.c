/*
 * perf-frames.c — the frames of a perf script stack, as stackcollapse-perf.pl
 * names them: a stack line's function split on "->" into inline pieces,
 * each tidied (import_tidy, java's leading 'L', "_[i]" on inlined
 * pieces, "[module]" for "[unknown]", symbol versions dropped), and a
 * line-by-line sample's whole stack made into a path.
 *
 * Frame kinds: inline pieces (after the first "->") INLINE, modules
 * "[kernel.*" KERNEL, unsymbolized "[unknown]" UNKNOWN, "/tmp/perf-*.map"
 * JIT, else USER; the module attribute is perf's module field verbatim.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#include "perf-internal.h"

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
 * and are pointed at by perf_frames_finish().  With depth and bytes (a
 * stack's frames and name bytes so far, import_stack_past), it stops
 * once the stack is past the limits and returns 1; else 0, or -errno. */
int perf_line_frames(struct perf *p, size_t *nf, const char *func, size_t flen, const char *mod,
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

/* The mapping of path mod[0..mlen) that holds pc: first one of pid that
 * holds it as an address (older perf prints the pc itself), then one
 * of any process, then one that holds it as a file offset (perf 5.1 and
 * later print a file's pcs as offsets in it: pc - start + pgoff).  Sets
 * *addr to the address in that mapping. */
static const struct perf_map *map_of(const struct perf *p, uint32_t pid, const char *mod,
                                     size_t mlen, uint64_t pc, uint64_t *addr)
{
	const struct perf_map *any = NULL, *as_off = NULL;

	for (size_t i = p->nmaps; i-- > 0;) { /* the latest mapping first */
		const struct perf_map *m = &p->maps[i];
		if (m->path_len != mlen || memcmp(m->path, mod, mlen) != 0)
			continue;
		if (pc >= m->start && pc - m->start < m->len) {
			if (m->pid == pid) {
				*addr = pc;
				return m;
			}
			if (!any)
				any = m;
		} else if (!as_off && pc >= m->pgoff && pc - m->pgoff < m->len) {
			as_off = m;
		}
	}
	if (any) {
		*addr = pc;
		return any;
	}
	if (as_off)
		*addr = pc - as_off->pgoff + as_off->start;
	return as_off;
}

int perf_frame_place(struct perf *p, struct store_frame *fr, const char *pc, size_t pclen,
                     bool caller)
{
	const struct import_symbols *sym = p->ctx->sym;
	uint64_t v, addr;
	struct store_frame f[8];

	if (!sym || !perf_parse_hex(pc, pclen, &v))
		return 0;
	const struct perf_map *m =
	        map_of(p, p->pid ? p->pid : p->tid, fr->module, fr->module_len, v, &addr);
	if (!m)
		return 0;
	memset(f, 0, sizeof(f));
	int n = sym->user(sym->ctx, m->pid, addr, caller, f, 8);
	if (n < 0)
		return n;
	/* only where the symbolizer finds no name either: a frame perf named
	 * [unknown] keeps perf's name */
	if (n > 0 && f[0].kind == STORE_FRAME_UNKNOWN && f[0].offset) {
		fr->offset = f[0].offset;
		fr->build_id = f[0].build_id;
		fr->build_id_len = f[0].build_id_len;
	}
	return 0;
}

void perf_frames_finish(struct perf *p, size_t nf)
{
	for (size_t i = 0; i < nf; i++)
		p->frames[i].name = p->names + p->name_off[i];
}

/* Parses the current line-by-line sample's stack lines (in p->blk) into a
 * root-first path and interns it.  Lines are callee first, so they are
 * walked backwards. */
int perf_parse_sample(struct perf *p, uint32_t *node)
{
	const char *rec = p->blk + p->blk_head;
	size_t len = p->blk_len - p->blk_head;
	size_t nsl = 0, pos = 0, nf = 0;
	bool java = perf_is_java(p);
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
		size_t first = nf;
		rc = perf_line_frames(p, &nf, rec + p->sl[i].func, p->sl[i].func_len,
		                      rec + p->sl[i].mod, p->sl[i].mod_len, java, &depth, &bytes);
		if (rc < 0)
			return rc;
		if (p->nmaps && nf == first + 1 && p->frames[first].kind == STORE_FRAME_UNKNOWN) {
			/* a pc kept after the tail and a '\0' (add_stack_line) */
			const char *t = rec + p->sl[i].mod + p->sl[i].mod_len;
			uint32_t tl;
			memcpy(&tl, t, 4);
			const char *z = tl ? memchr(t + 4, '\0', tl) : NULL;
			if (z) {
				int prc = perf_frame_place(p, &p->frames[first], z + 1,
				                           (size_t)(t + 4 + tl - (z + 1)), i > 0);
				if (prc < 0)
					return prc;
			}
		}
		if (rc > 0)
			break;
	}
	perf_frames_finish(p, nf);
	for (size_t i = 0; i < nf / 2; i++) {
		struct store_frame t = p->frames[i];
		p->frames[i] = p->frames[nf - 1 - i];
		p->frames[nf - 1 - i] = t;
	}
	return import_path(p->ctx, p->frames, nf, node);
}
