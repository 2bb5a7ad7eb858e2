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
 *
 * An unnamed frame keeps its place in its file (offset and build id, so
 * symbolize can name it later) where the pc column can be read: against
 * the mapping records the text holds (perf_frame_place), or, in text
 * without them, against the file at the module's path itself
 * (perf_line_pc, ctx->sym->place).
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

static uint8_t frame_kind(const char *mod, size_t mlen, size_t index, bool unknown);

/* Files whose pcs are read (file_of), at most. */
#define PERF_FILES_MAX 4096

/* A file of unnamed frames in text without mappings (struct perf.files). */
struct perf_file {
	uint64_t h; /* hash of the path; 0 marks an empty slot */
	char *path; /* NUL-terminated, owned */
	size_t path_len;
	uint8_t state; /* enum file_state */
};

enum file_state {
	FILE_PLACES,    /* its pcs are offsets (or ET_EXEC addresses) in it */
	FILE_NONE,      /* no ELF file with a build id there */
	FILE_ADDRESSES, /* its pcs are addresses in a position-independent file */
};

static uint64_t path_hash(const char *s, size_t n)
{
	uint64_t x = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		x = (x ^ (uint8_t)s[i]) * 1099511628211ull;
	return x ? x : 1;
}

/* The entry of path mod[0..mlen), or NULL. */
static struct perf_file *file_find(const struct perf *p, const char *mod, size_t mlen, uint64_t h)
{
	if (!p->files)
		return NULL;
	for (size_t j = h & p->files_mask; p->files[j].h; j = (j + 1) & p->files_mask) {
		struct perf_file *f = &p->files[j];
		if (f->h == h && f->path_len == mlen && memcmp(f->path, mod, mlen) == 0)
			return f;
	}
	return NULL;
}

/* The entry of path mod[0..mlen), made at its first line, whose pc
 * (hex text) tells ctx->sym->place() apart an ET_DYN file whose pcs are
 * offsets from one whose pcs are addresses: perf prints every pc of a
 * file one way.  NULL for every path past the first PERF_FILES_MAX (each
 * one is a file opened and kept: the text picks how many).  0 or
 * -ENOMEM. */
static int file_of(struct perf *p, const char *mod, size_t mlen, const char *pc, size_t pclen,
                   struct perf_file **out)
{
	const struct import_symbols *sym = p->ctx->sym;
	uint64_t h = path_hash(mod, mlen), v;

	*out = file_find(p, mod, mlen, h);
	if (*out || p->nfiles == PERF_FILES_MAX)
		return 0;
	if ((p->nfiles + 1) * 2 > (p->files ? p->files_mask + 1 : 0)) {
		size_t ncap = p->files ? (p->files_mask + 1) * 2 : 64;
		struct perf_file *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; p->files && i <= p->files_mask; i++) {
			if (!p->files[i].h)
				continue;
			size_t j = p->files[i].h & (ncap - 1);
			while (nt[j].h)
				j = (j + 1) & (ncap - 1);
			nt[j] = p->files[i];
		}
		free(p->files);
		p->files = nt;
		p->files_mask = ncap - 1;
	}
	char *path = strndup(mod, mlen);
	if (!path)
		return -ENOMEM;
	struct store_frame fr;
	int rc = perf_parse_hex(pc, pclen, &v) ? sym->place(sym->ctx, path, v, &fr)
	                                       : IMPORT_PLACE_NO_FILE;
	if (rc < 0 && rc != -ENOMEM)
		rc = IMPORT_PLACE_NO_FILE; /* a file it could not read: as none */
	if (rc < 0) {
		free(path);
		return rc;
	}
	size_t j = h & p->files_mask;
	while (p->files[j].h)
		j = (j + 1) & p->files_mask;
	struct perf_file *f = &p->files[j];
	*f = (struct perf_file){.h = h, .path = path, .path_len = mlen};
	switch (rc) {
	case IMPORT_PLACE_DONE:
	case IMPORT_PLACE_NOT: f->state = FILE_PLACES; break;
	case IMPORT_PLACE_ADDRESS:
		f->state = FILE_ADDRESSES;
		if (!p->addr_files++)
			p->addr_first = path;
		break;
	default: f->state = FILE_NONE; break;
	}
	p->nfiles++;
	*out = f;
	return 0;
}

void perf_files_free(struct perf *p)
{
	for (size_t i = 0; p->files && i <= p->files_mask; i++)
		free(p->files[i].path);
	free(p->files);
	p->files = NULL;
	p->nfiles = 0;
	p->addr_first = NULL;
}

/* The length of the pc column that l[0..func) holds: leading whitespace,
 * 1 to 16 lowercase hex digits (at *at), then only whitespace; 0 when it
 * is not that. */
static size_t pc_column(const char *l, size_t func, size_t *at)
{
	size_t s = 0, e;

	while (s < func && is_ws((unsigned char)l[s]))
		s++;
	e = s;
	while (e < func && is_hex_lower((unsigned char)l[e]))
		e++;
	if (e == s || e - s > 16 || e == func)
		return 0;
	for (size_t i = e; i < func; i++)
		if (!is_ws((unsigned char)l[i]))
			return 0;
	*at = s;
	return e - s;
}

int perf_line_pc(struct perf *p, const char *l, struct stack_line *sl)
{
	const struct import_symbols *sym = p->ctx->sym;
	size_t at;

	if (sl->func_len != 9 || memcmp(l + sl->func, "[unknown]", 9) != 0 || sl->mod_len < 2 ||
	    l[sl->mod] != '/' || p->nmaps || !sym || !sym->place)
		return 0;
	if (frame_kind(l + sl->mod, sl->mod_len, 0, false) == STORE_FRAME_JIT)
		return 0; /* a JIT's perf map: text, not ELF */
	size_t pclen = pc_column(l, sl->func, &at);
	if (!pclen)
		return 0;
	struct perf_file *f;
	int rc = file_of(p, l + sl->mod, sl->mod_len, l + at, pclen, &f);
	if (rc < 0)
		return rc;
	if (f && f->state == FILE_PLACES) {
		sl->func_len += sl->func - at;
		sl->func = at;
	}
	return 0;
}

/* When func[0..*flen) is a function perf_line_pc() widened ("PC
 * [unknown]" of a file that places its pcs), its pc in *pc, *func and
 * *flen moved to "[unknown]", and the file; else NULL. */
static const struct perf_file *widened(const struct perf *p, const char **func, size_t *flen,
                                       const char *mod, size_t mlen, uint64_t *pc)
{
	const char *f = *func;
	size_t n = *flen, at;

	if (n < 11 || memcmp(f + n - 9, "[unknown]", 9) != 0 ||
	    !is_hex_lower((unsigned char)f[0]) || !p->files || mlen < 2 || mod[0] != '/')
		return NULL;
	size_t pclen = pc_column(f, n - 9, &at);
	if (!pclen || at != 0 || !perf_parse_hex(f, pclen, pc))
		return NULL;
	const struct perf_file *file = file_find(p, mod, mlen, path_hash(mod, mlen));
	if (!file || file->state != FILE_PLACES)
		return NULL;
	*func = f + n - 9;
	*flen = 9;
	return file;
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
 * and are pointed at by perf_frames_finish().  With depth and bytes (a
 * stack's frames and name bytes so far, import_stack_past), it stops
 * once the stack is past the limits and returns 1; else 0, or -errno. */
int perf_line_frames(struct perf *p, size_t *nf, const char *func, size_t flen, const char *mod,
                     size_t mlen, bool java, size_t *depth, size_t *bytes)
{
	int rc;

	if (flen > 0 && func[0] == '(')
		return 0; /* a process name, not a frame */
	uint64_t pc;
	const struct perf_file *file = widened(p, &func, &flen, mod, mlen, &pc);

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
		if (file) {
			/* "[unknown]" alone: this is the line's one piece */
			const struct import_symbols *sym = p->ctx->sym;
			struct store_frame pf;
			rc = sym->place(sym->ctx, file->path, pc, &pf);
			if (rc < 0)
				return rc;
			if (rc == IMPORT_PLACE_DONE) {
				struct store_frame *fr = &p->frames[*nf - 1];
				fr->offset = pf.offset;
				fr->build_id = pf.build_id;
				fr->build_id_len = pf.build_id_len;
			}
		}
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
