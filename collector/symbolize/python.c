/*
 * python.c — CPython: where each known minor version keeps what
 * `record`'s walker reads (the one table of layouts), how an interpreter
 * is recognised in an ELF file (its exported symbols), and the names of
 * the code objects the walker sampled, read from the live process with
 * process_vm_readv and cached by (pid, code object, check).
 *
 * A code object can be freed and another allocated at its address before
 * the drain reads it, often with its strings at their old addresses too
 * (pymalloc hands the same blocks out in the same order).  The walker
 * therefore sends, with the address, a check mixed from what identifies
 * the object: its first line, the addresses of its qualified name, file
 * name and line table, and the contents of the two names (length, and
 * for ASCII ones their first and last 32 bytes; symbolize.h).  The name
 * is used only when the object read here gives the same check, and the
 * cache is keyed by the check too, so a new object at an old address is
 * read afresh.  Every read is bounded: a header of fixed size, names of 1024
 * characters, line tables of 64 KiB.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbolize-internal.h"

#define NAME_MAX_CHARS 1024
#define LINETABLE_MAX  65536
#define CACHE_MAX      (1u << 15) /* entries: the cache is pruned past it, */
#define CACHE_BYTES    (8u << 20) /* or past this much of line tables */

/* x86-64 byte offsets.  3.11 was read from the 3.11.2 headers
 * (python3.11-dev, Py_BUILD_CORE) with offsetof() and checked against
 * Debian's python3.11 by tests/test-record-python.sh.  To add a version:
 * a row here with its offsets (the same offsetof() program against its
 * headers), and the walker's assumptions checked (profile.bpf.c: a frame
 * chain through `previous` with an is_entry mark per C-level evaluation;
 * 3.12 changed that, with frames owned by the C stack). */
static const struct symbolize_python_layout layouts[] = {
        {
                .major = 3,
                .minor = 11,
                .runtime_interp_head = 40,
                .runtime_tstate_current = 576,
                .interp_threads_head = 16,
                .tstate_next = 8,
                .tstate_cframe = 56,
                .tstate_native_thread_id = 160,
                .cframe_current_frame = 8,
                .frame_code = 32,
                .frame_previous = 48,
                .frame_prev_instr = 56,
                .frame_is_entry = 68,
                .object_type = 8,
                .var_size = 16,
                .code_firstlineno = 72,
                .code_filename = 112,
                .code_qualname = 128,
                .code_linetable = 136,
                .code_adaptive = 184,
                .bytes_data = 32,
                .str_length = 16,
                .str_state = 32,
                .str_ascii_data = 48,
                .str_compact_data = 72,
        },
};

const struct symbolize_python_layout *symbolize_python_layout(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* ---- recognising an interpreter ----------------------------------------- */

/* "python3.11", "libpython3.11.so.1.0": the version in a file's name. */
static bool version_from_name(const char *path, unsigned *major, unsigned *minor)
{
	const char *p = strstr(sym_base_of(path), "python");
	unsigned a, b;

	if (!p || sscanf(p + 6, "%u.%u", &a, &b) != 2)
		return false;
	*major = a;
	*minor = b;
	return true;
}

/* Reads 8 bytes at ELF address addr from the file, through its segments. */
static bool read_file_u64(const struct module *m, uint64_t addr, uint64_t *v)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		const struct segment *g = &m->segs[i];
		if (addr < g->vaddr || addr + 8 > g->vaddr + g->filesz)
			continue;
		return pread(m->fd, v, 8, (off_t)(g->offset + addr - g->vaddr)) == 8;
	}
	return false;
}

/* The names sym_python_probe() looks for; _PyRuntime first. */
static const char *const python_names[] = {"_PyRuntime", "_PyEval_EvalFrameDefault", "PyCode_Type",
                                           "Py_Version"};

/* Whether string table `strndx` can hold the name of one of
 * python_names[first, first + count): a name ends a NUL-terminated
 * string of the table (a symbol may point into the middle of another's
 * name, so only the end is sure).  True unless the table is plain text
 * that holds none of them.  A table without any of them spares the probe
 * a walk through every symbol of the section, which libraries of tens
 * of thousands of symbols make long. */
static bool strtab_may_name(Elf *elf, size_t strndx, size_t first, size_t count)
{
	Elf_Scn *scn = elf_getscn(elf, strndx);
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    (sh.sh_flags & SHF_COMPRESSED))
		return true; /* not plain text here: let the walk decide */
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return true;
	for (size_t i = first; i < first + count; i++)
		if (memmem(d->d_buf, d->d_size, python_names[i], strlen(python_names[i]) + 1))
			return true;
	return false;
}

static bool strtab_may_name_python(Elf *elf, size_t strndx)
{
	return strtab_may_name(elf, strndx, 0, sizeof(python_names) / sizeof(python_names[0]));
}

/* Whether a symbol table of elf may hold _PyRuntime, without which no
 * interpreter is found: one search of each table's strings, where
 * looking for every name would take one per name. */
static bool elf_may_hold_runtime(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) && sh.sh_entsize &&
		    strtab_may_name(elf, sh.sh_link, 0, 1))
			return true;
	}
	return false;
}

int sym_python_probe(struct module *m, Elf *elf)
{
	struct symbolize_python py = {0};
	uint64_t version = 0;
	bool have_version = false;
	Elf_Scn *scn = NULL;

	if (!elf_may_hold_runtime(elf))
		return 0; /* no interpreter here */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !strtab_may_name_python(elf, sh.sh_link))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value)
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (strcmp(name, "_PyEval_EvalFrameDefault") == 0) {
				py.eval = sym.st_value;
				py.eval_size = sym.st_size;
			} else if (strcmp(name, "_PyRuntime") == 0) {
				py.runtime = sym.st_value;
			} else if (strcmp(name, "PyCode_Type") == 0) {
				py.code_type = sym.st_value;
			} else if (strcmp(name, "Py_Version") == 0 && sym.st_size == 8) {
				have_version = read_file_u64(m, sym.st_value, &version);
			}
		}
	}
	if (!py.eval || !py.eval_size || !py.runtime || !py.code_type)
		return 0; /* no interpreter here */
	if (have_version) {
		/* PY_VERSION_HEX: 0xMMmmppRS */
		py.major = (unsigned)(version >> 24) & 0xff;
		py.minor = (unsigned)(version >> 16) & 0xff;
	} else if (!version_from_name(m->path, &py.major, &py.minor)) {
		py.major = py.minor = 0;
	}
	py.layout = symbolize_python_layout(py.major, py.minor);
	m->python = malloc(sizeof(*m->python));
	if (!m->python)
		return -ENOMEM;
	*m->python = py;
	return 0;
}

/* ---- reading code objects ------------------------------------------------- */

void symbolize_pycode_clear(struct symbolize_pycode *c)
{
	free(c->qualname);
	free(c->filename);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

static uint64_t get_u64(const uint8_t *b, size_t off)
{
	uint64_t v;
	memcpy(&v, b + off, 8);
	return v;
}

static uint32_t get_u32(const uint8_t *b, size_t off)
{
	uint32_t v;
	memcpy(&v, b + off, 4);
	return v;
}

/* Appends code point c as UTF-8. */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Reads the str object at addr as UTF-8 into a malloc'd string, and mixes
 * its digest into *h.  Only compact, ready strings (every str a code
 * object holds). */
static int read_str(const struct symbolize_python_layout *l, symbolize_read_fn rd, void *ctx,
                    uint64_t addr, char **out, uint64_t *h)
{
	uint8_t head[128], raw[NAME_MAX_CHARS * 4];
	int rc;

	if (!addr || l->str_compact_data > sizeof(head) || l->str_length + 8u > sizeof(head) ||
	    l->str_state + 4u > sizeof(head))
		return -EINVAL;
	rc = rd(ctx, addr, head, l->str_compact_data);
	if (rc < 0)
		return rc;
	int64_t len = (int64_t)get_u64(head, l->str_length);
	uint32_t state = get_u32(head, l->str_state);
	unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1,
	         ready = state >> 7 & 1;
	if (len < 0 || !compact || !ready || (kind != 1 && kind != 2 && kind != 4) ||
	    (ascii && kind != 1))
		return -EINVAL;
	if (len > NAME_MAX_CHARS)
		return -E2BIG;
	size_t n = (size_t)len * kind;
	if (n) {
		rc = rd(ctx, addr + (ascii ? l->str_ascii_data : l->str_compact_data), raw, n);
		if (rc < 0)
			return rc;
	}
	*h = symbolize_python_str_digest(*h, (uint64_t)len, ascii, raw);
	char *s = malloc((size_t)len * 4 + 1), *p = s;
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < (size_t)len; i++) {
		uint32_t c = kind == 1   ? raw[i]
		             : kind == 2 ? (uint32_t)(raw[2 * i] | raw[2 * i + 1] << 8)
		                         : get_u32(raw, 4 * i);
		if (c == 0 || c > 0x10ffff || (ascii && c > 0x7f) || (c >= 0xd800 && c < 0xe000)) {
			free(s);
			return -EINVAL; /* NUL, or not a code point */
		}
		p += put_utf8(p, c);
	}
	*p = 0;
	*out = s;
	return 0;
}

int symbolize_python_read_code(const struct symbolize_python_layout *l, uint64_t code_type,
                               symbolize_read_fn rd, void *ctx, uint64_t addr,
                               struct symbolize_pycode *out)
{
	uint8_t head[256], lhead[64];
	int rc;

	memset(out, 0, sizeof(*out));
	if (l->code_adaptive > sizeof(head) || l->code_linetable + 8 > l->code_adaptive ||
	    l->code_filename + 8 > l->code_adaptive || l->code_qualname + 8 > l->code_adaptive ||
	    l->code_firstlineno + 4 > l->code_adaptive || l->object_type + 8 > l->code_adaptive ||
	    l->bytes_data > sizeof(lhead) || l->var_size + 8u > sizeof(lhead))
		return -EINVAL;
	rc = rd(ctx, addr, head, l->code_adaptive);
	if (rc < 0)
		return rc;
	if (get_u64(head, l->object_type) != code_type)
		return -EINVAL;
	uint64_t filename = get_u64(head, l->code_filename);
	uint64_t qualname = get_u64(head, l->code_qualname);
	uint64_t linetable = get_u64(head, l->code_linetable);
	int32_t first = (int32_t)get_u32(head, l->code_firstlineno);
	out->firstlineno = first;
	uint64_t h = symbolize_python_check_head((uint64_t)(int64_t)first, filename, qualname,
	                                         linetable);

	if ((rc = read_str(l, rd, ctx, qualname, &out->qualname, &h)) < 0 ||
	    (rc = read_str(l, rd, ctx, filename, &out->filename, &h)) < 0)
		goto fail;
	out->check = (uint32_t)h;
	if (!linetable) {
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = rd(ctx, linetable, lhead, l->bytes_data)) < 0)
		goto fail;
	int64_t n = (int64_t)get_u64(lhead, l->var_size);
	if (n < 0 || n > LINETABLE_MAX) {
		rc = n < 0 ? -EINVAL : -E2BIG;
		goto fail;
	}
	out->linetable = malloc(n ? (size_t)n : 1);
	if (!out->linetable) {
		rc = -ENOMEM;
		goto fail;
	}
	out->linetable_len = (size_t)n;
	if (n && (rc = rd(ctx, linetable + l->bytes_data, out->linetable, (size_t)n)) < 0)
		goto fail;
	return 0;
fail:
	symbolize_pycode_clear(out);
	return rc;
}

/* ---- line numbers ------------------------------------------------------- */

/* The 3.11 location table (Objects/locations.md in CPython): entries of
 * one header byte (bit 7 set; code in bits 3-6; length - 1 code units in
 * bits 0-2) and what the code says follows: 15 no location; 14 the long
 * form (line delta as a signed varint, then end line, column, end column
 * as varints); 13 no column (line delta); 10-12 one line (delta code -
 * 10, then two column bytes); 0-9 the short form (delta 0, one byte).
 * Varints are 6 bits a byte, bit 6 saying another byte follows. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;

	for (;;) {
		if (*p >= end || shift > 60)
			return false;
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*v = x;
	return true;
}

static bool svarint(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	if (!varint(p, end, &u))
		return false;
	*v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

uint32_t symbolize_python_line(const uint8_t *table, size_t len, int firstlineno, uint32_t lasti)
{
	const uint8_t *p = table, *end = table + len;
	int64_t line = firstlineno, d;
	uint64_t at = 0, skip;

	while (p < end) {
		uint8_t b = *p++;
		if (!(b & 0x80))
			return 0; /* not an entry's first byte */
		unsigned code = b >> 3 & 15, n = (b & 7) + 1;
		d = 0;
		switch (code) {
		case 15: break;
		case 14:
			if (!svarint(&p, end, &d) || !varint(&p, end, &skip) ||
			    !varint(&p, end, &skip) || !varint(&p, end, &skip))
				return 0;
			break;
		case 13:
			if (!svarint(&p, end, &d))
				return 0;
			break;
		case 10:
		case 11:
		case 12: d = code - 10; break;
		default: d = 0; break;
		}
		/* Lines stay within int: a table that says otherwise is
		 * malformed. */
		if (code != 15) {
			if (d > INT32_MAX || d < -(int64_t)INT32_MAX)
				return 0;
			line += d;
			if (line > INT32_MAX || line < -(int64_t)INT32_MAX)
				return 0;
		}
		/* The column bytes of the one-line and short forms. */
		size_t cols = code >= 10 && code <= 12 ? 2 : code < 10 ? 1 : 0;
		if (cols > (size_t)(end - p))
			return 0;
		p += cols;
		if (lasti < at + n)
			return code == 15 || line <= 0 ? 0 : (uint32_t)line;
		at += n;
	}
	return 0;
}

/* ---- naming frames ---------------------------------------------------------- */

static int read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = *(const pid_t *)ctx;
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* A copy of s that lives as long as the symbolizer (frames point into
 * it), shared by every equal string. */
static const char *intern(struct symbolize *s, const char *str)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *c = str; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	if (s->py_strs_n * 2 >= s->py_strs_cap) {
		size_t ncap = s->py_strs_cap ? s->py_strs_cap * 2 : 1024;
		char **n = calloc(ncap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < s->py_strs_cap; i++) {
			if (!s->py_strs[i])
				continue;
			uint64_t g = 1469598103934665603ull;
			for (const char *c = s->py_strs[i]; *c; c++)
				g = (g ^ (uint8_t)*c) * 1099511628211ull;
			size_t j = g & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = s->py_strs[i];
		}
		free(s->py_strs);
		s->py_strs = n;
		s->py_strs_cap = ncap;
	}
	size_t j = h & (s->py_strs_cap - 1);
	for (; s->py_strs[j]; j = (j + 1) & (s->py_strs_cap - 1))
		if (strcmp(s->py_strs[j], str) == 0)
			return s->py_strs[j];
	s->py_strs[j] = strdup(str);
	if (!s->py_strs[j])
		return NULL;
	s->py_strs_n++;
	return s->py_strs[j];
}

static uint64_t ent_hash(pid_t pid, uint64_t code, uint32_t check)
{
	uint64_t h = code * 0x9e3779b97f4a7c15ull;
	/* (the module of a pid 0 entry is left out: equal keys with two
	 * modules only share a chain) */
	h ^= ((uint64_t)(uint32_t)pid << 32 | check) * 0xff51afd7ed558ccdull;
	return h ^ h >> 29;
}

static void cache_clear(struct symbolize *s)
{
	for (size_t i = 0; i < s->py_cache_cap; i++)
		free(s->py_cache[i].linetable);
	free(s->py_cache);
	s->py_cache = NULL;
	s->py_cache_cap = s->py_cache_n = s->py_cache_bytes = 0;
}

/* Drops the entries of processes reaped (exited, and their last samples
 * drained; on a build machine, nearly all: each python3 started leaves
 * its code objects behind), or everything when the live ones alone are
 * past half of the bounds; the table shrinks to fit what is left.  Done
 * past a bound, and at each sweep (sym_python_prune): kept to the bound,
 * the reaped ones filled it over half an hour under churn, a creep of
 * ~0.3 MiB a minute (and keeping them to 2^18 entries and 64 MiB of line
 * tables grew the collector by 120 MiB in a 10-minute soak).  Frames
 * point at interned strings only. */
static void cache_prune(struct symbolize *s)
{
	size_t live = 0, bytes = 0;
	for (size_t i = 0; i < s->py_cache_cap; i++) {
		struct pyent *e = &s->py_cache[i];
		if (e->used && e->pid && !sym_proc_find(s, e->pid)) {
			free(e->linetable);
			*e = (struct pyent){0};
		} else if (e->used) {
			live++;
			bytes += e->linetable_len;
		}
	}
	s->py_cache_n = live;
	s->py_cache_bytes = bytes;
	if (live * 2 >= CACHE_MAX || bytes * 2 >= CACHE_BYTES) {
		cache_clear(s);
		return;
	}
	/* Rehash what is left (open addressing: the holes broke its chains),
	 * at most a quarter full. */
	struct pyent *old = s->py_cache;
	size_t ocap = s->py_cache_cap, cap = 1024;
	while (cap < 4 * live && cap < ocap)
		cap *= 2;
	struct pyent *n = calloc(cap, sizeof(*n));
	if (!n) {
		cache_clear(s);
		return;
	}
	for (size_t i = 0; i < ocap; i++) {
		if (!old[i].used)
			continue;
		size_t j = ent_hash(old[i].pid, old[i].code, old[i].check) & (cap - 1);
		while (n[j].used)
			j = (j + 1) & (cap - 1);
		n[j] = old[i];
	}
	free(old);
	s->py_cache = n;
	s->py_cache_cap = cap;
}

void sym_python_prune(struct symbolize *s)
{
	if (s->py_cache_n)
		cache_prune(s);
}

/* The cache's slot for the key: its entry, or the empty slot to fill. */
static struct pyent *cache_slot(struct symbolize *s, pid_t pid, uint64_t code, uint32_t check,
                                const struct module *mod)
{
	if (s->py_cache_n >= CACHE_MAX || s->py_cache_bytes >= CACHE_BYTES)
		cache_prune(s);
	if (s->py_cache_n * 2 >= s->py_cache_cap) {
		size_t ncap = s->py_cache_cap ? s->py_cache_cap * 2 : 1024;
		struct pyent *n = calloc(ncap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < s->py_cache_cap; i++) {
			struct pyent *e = &s->py_cache[i];
			if (!e->used)
				continue;
			size_t j = ent_hash(e->pid, e->code, e->check) & (ncap - 1);
			while (n[j].used)
				j = (j + 1) & (ncap - 1);
			n[j] = *e;
		}
		free(s->py_cache);
		s->py_cache = n;
		s->py_cache_cap = ncap;
	}
	size_t j = ent_hash(pid, code, check) & (s->py_cache_cap - 1);
	for (;; j = (j + 1) & (s->py_cache_cap - 1)) {
		struct pyent *e = &s->py_cache[j];
		if (!e->used ||
		    (e->pid == pid && e->code == code && e->check == check && e->mod == mod))
			return e;
	}
}

/* The interpreter of process p, its layout known, the module that holds
 * it and that module's bias. */
static const struct symbolize_python *proc_python(const struct proc *p, uint64_t *bias,
                                                  const struct module **mod)
{
	for (size_t i = 0; p && i < p->nmaps; i++) {
		const struct mapping *mp = &p->maps[i];
		uint64_t vaddr;
		if (mp->mod && mp->mod->python && mp->mod->python->layout &&
		    sym_module_vaddr(mp->mod, mp->pgoff, &vaddr)) {
			*bias = mp->start - vaddr;
			*mod = mp->mod;
			return mp->mod->python;
		}
	}
	return NULL;
}

/* Whether ELF address a lies in what module m's file initializes: a code
 * object there (CPython 3.11 deep-freezes its startup modules' code into
 * the interpreter's data) is the same in every process of the file, and
 * read once for all of them. */
static bool in_file(const struct module *m, uint64_t a)
{
	for (size_t i = 0; i < m->nsegs; i++)
		if (a >= m->segs[i].vaddr && a - m->segs[i].vaddr < m->segs[i].filesz)
			return true;
	return false;
}

static const char gone_name[] = "[python: code gone]";
static const char denied_name[] = "[python: no access]";

/* Fills f with the name of a frame that could not be named. */
static int not_named(struct symbolize *s, bool denied, struct store_frame *f)
{
	if (!f)
		return 1;
	s->py_stats.gone++;
	f->name = denied ? denied_name : gone_name;
	f->name_len = strlen(f->name);
	f->kind = STORE_FRAME_UNKNOWN;
	return 1;
}

int symbolize_python_frame(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t code,
                           uint32_t check, uint32_t lasti, struct store_frame *f)
{
	if (f)
		memset(f, 0, sizeof(*f));
	struct proc *p = sym_proc_find_gen(s, pid, gen);
	uint64_t bias = 0;
	const struct module *mod = NULL;
	const struct symbolize_python *py = proc_python(p, &bias, &mod);
	bool shared = py && in_file(mod, code - bias);
	struct pyent *e = shared ? cache_slot(s, 0, code - bias, check, mod)
	                         : cache_slot(s, pid, code, check, NULL);
	if (!e)
		return -ENOMEM;
	if (!e->used) {
		struct symbolize_pycode c;

		if (!py)
			return not_named(s, false, f); /* no snapshot yet: not cached */
		*e = shared ? (struct pyent){.used = true,
		                             .code = code - bias,
		                             .check = check,
		                             .mod = mod}
		            : (struct pyent){
		                      .used = true, .pid = pid, .code = code, .check = check};
		s->py_cache_n++;
		s->py_stats.reads++;
		int rc = symbolize_python_read_code(py->layout, py->code_type + bias, read_process,
		                                    &pid, code, &c);
		if (rc == -ENOMEM)
			return rc;
		if (rc == 0 && c.check == check) {
			size_t n = strlen(c.qualname) + strlen(c.filename) + 4;
			char *name = malloc(n);
			if (!name) {
				symbolize_pycode_clear(&c);
				return -ENOMEM;
			}
			snprintf(name, n, "%s (%s)", c.qualname, c.filename);
			e->name = intern(s, name);
			e->file = intern(s, c.filename);
			free(name);
			if (!e->name || !e->file) {
				symbolize_pycode_clear(&c);
				return -ENOMEM;
			}
			e->firstlineno = c.firstlineno;
			e->linetable = c.linetable;
			e->linetable_len = c.linetable_len;
			s->py_cache_bytes += c.linetable_len;
			c.linetable = NULL;
		}
		if (rc == 0)
			symbolize_pycode_clear(&c);
		e->denied = rc == -EPERM;
		if (shared && !e->name) {
			/* This process could not be read (gone, another user's):
			 * the next one may be; the slot was empty, the end of
			 * its chain. */
			bool denied = e->denied;
			*e = (struct pyent){0};
			s->py_cache_n--;
			return not_named(s, denied, f);
		}
	}
	if (!e->name)
		return not_named(s, e->denied, f); /* gone, or another user's process */
	if (!f)
		return 1;
	f->name = e->name;
	f->name_len = strlen(e->name);
	f->file = e->file;
	f->file_len = strlen(e->file);
	f->kind = STORE_FRAME_PYTHON;
	if (s->lines)
		f->line = symbolize_python_line(e->linetable, e->linetable_len, e->firstlineno,
		                                lasti);
	return 1;
}

void symbolize_python_get_stats(const struct symbolize *s, struct symbolize_python_stats *st)
{
	*st = s->py_stats;
	st->cached = s->py_cache_n;
}

void sym_python_free(struct symbolize *s)
{
	cache_clear(s);
	for (size_t i = 0; i < s->py_strs_cap; i++)
		free(s->py_strs[i]);
	free(s->py_strs);
}
