/*
 * symbolize.c — user and kernel address symbolization for the live
 * collector (see symbolize.h for the contract).
 *
 * Four caches make it cheap: ELF files ("modules", opened once at their
 * first sighting, shared by every process that maps them and keyed by
 * build id), each module's function symbols copied into a sorted array at
 * its first lookup (libdwfl's own lookup scans the whole table each time),
 * resolved addresses per module, and kernel names per address.  Kernel
 * addresses are named by the kernel itself through a small BPF program
 * (ksym.h), a batch per stack, and only when /proc/kallsyms cannot be
 * avoided (no BPF lookup) is that read, once.  Source
 * lines are looked up only on request (symbolize_set_lines).  A process's
 * maps are read at its first sighting and exec, and again only when an
 * address falls outside them.  A process is a snapshot of its executable mappings, each
 * pointing at a module; a mapping's address becomes a file offset, then an
 * ELF virtual address through the module's PT_LOAD headers, and libdwfl
 * resolves that address in a session that holds only that one module.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>

#include "import.h"
#include "ksym.h"
#include "symbolize.h"

/* From libstdc++ (the Itanium C++ ABI); libdw has no demangler.  Rust's
 * v0 names ("_R…") go through libiberty's rust_demangle. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define PROC_BUCKETS  1024u
#define FILE_BUCKETS  256u
#define KERNEL_MODULE "[kernel.kallsyms]"
/* How often, at most, a missing /tmp/perf-PID.map is looked for again,
 * and a process whose code address fell outside its known mappings has
 * its /proc/PID/maps read again. */
#define JIT_RECHECK_NS  (3ll * 1000000000ll)
#define MAPS_RECHECK_NS (1ll * 1000000000ll)

/* One function inlined at an address (symbolize_set_inline). */
struct inl {
	char *name; /* tidied name with "_[i]", owned */
	char *file; /* where this frame is at the address, or NULL; owned */
	uint32_t line;
};

/* One resolved address of a module. */
struct symres {
	uint64_t addr; /* ELF virtual address; 0 marks a free slot */
	char *name;    /* tidied name, owned */
	char *file;    /* source file or NULL, owned */
	uint32_t line;
	uint8_t kind;
	uint16_t ninl;   /* inlined functions at addr, outermost first */
	struct inl *inl; /* owned; NULL when ninl is 0 */
};

/* One function symbol of a module, from its symbol table. */
struct msym {
	uint64_t addr, size;
	const char *name; /* owned by the module's libdwfl session */
	uint8_t rank;     /* binding preference, as perf's: global 2, local 1, weak 0 */
};

struct segment {
	uint64_t offset, filesz, vaddr;
};

/* One ELF file, shared by every process mapping it. */
struct module {
	char *path;         /* path as the first process mapped it */
	char *unknown_name; /* "[basename]", for addresses without symbol */
	uint8_t *build_id;
	size_t build_id_len;
	struct segment *segs;
	size_t nsegs;
	int fd; /* until handed to libdwfl; -1 after */
	bool is_elf;
	bool dwfl_tried;
	Dwfl *dwfl;
	Dwfl_Module *dmod;
	struct msym *syms; /* sorted by addr; built at the first lookup */
	size_t nsyms;
	char *plt_names;      /* "NAME@plt" strings of the PLT entries in syms */
	struct symres *cache; /* open addressing on addr, power-of-two size */
	size_t cache_cap, cache_used;
	struct module *next; /* every module, for the build-id search */
};

/* (device, inode) of a mapped file -> its module. */
struct file_ent {
	unsigned long long dev, ino;
	struct module *mod;
	struct file_ent *next;
};

struct mapping {
	uint64_t start, end, pgoff;
	struct module *mod;  /* NULL: anonymous or not a file */
	const char *special; /* "[unknown]" name for non-file mappings */
};

struct jit_sym {
	uint64_t start, size;
	char *name;
};

struct proc {
	pid_t pid;
	char *binary;
	char *build_id_hex;
	char *jit_path;    /* "/tmp/perf-PID.map" */
	char *jit_unknown; /* "[perf-PID.map]" */
	struct mapping *maps;
	size_t nmaps;
	struct jit_sym *jit;
	size_t njit;
	off_t jit_size; /* size of the perf map when last read */
	bool jit_exists;
	int64_t jit_checked; /* monotonic ns of the last look, 0: never */
	int64_t maps_read;   /* monotonic ns of the maps snapshot */
	bool at_exec;        /* taken at exec: the loader had not mapped the
	                      * libraries yet */
	uint32_t gen;        /* exec count (symbolize_exec) */
	struct proc *before; /* the snapshot before the last exec, or NULL */
	struct proc *next;
};

struct kallsym {
	uint64_t addr;
	size_t name; /* offset into names */
};

/* A kernel address named through ksym (name NULL: no symbol holds it). */
struct kname {
	uint64_t addr; /* the lookup address; 0: empty slot */
	const char *name;
	size_t len;
};

/* Storage for kernel names, never moved (frames point into it). */
struct kchunk {
	struct kchunk *next;
	size_t used, cap;
	char data[];
};

struct offline_ent {
	uint64_t h; /* hash of (path, build id); 0 marks an empty slot */
	char *key;  /* path, NUL, build id bytes; malloc'd */
	size_t key_len;
	struct module *mod;
};

struct symbolize {
	struct proc *procs[PROC_BUCKETS];
	struct file_ent *files[FILE_BUCKETS];
	struct module *modules;
	struct module *vdso; /* our own vDSO, the same in every process */
	bool vdso_tried;
	/* Kernel names: from ksym while it works, cached per address... */
	struct ksym *ksym;
	bool ksym_tried;
	struct kname *kcache; /* open addressing, kcache_cap a power of two */
	size_t kcache_cap, kcache_n;
	struct kchunk *kchunks;
	/* ...else from /proc/kallsyms, read whole at the first need. */
	struct kallsym *ksyms;
	size_t nksyms;
	char *knames;
	bool kernel_tried;
	bool lines;      /* look up file:line too */
	bool inlines;    /* expand inlined functions from DWARF */
	bool perf_names; /* symbolize_set_perf_names() */
	/* offline: (path, build id) -> module (or stub), so a file that many
	 * recorded processes map is looked for once */
	struct offline_ent *offline_tab;
	size_t offline_mask, offline_n;
	struct symbolize_hooks hooks;
	struct symbolize_stats stats;
};

static const char unknown_name[] = "[unknown]";

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Parses lowercase or uppercase hex digits at *p into *v and moves *p
 * past them.  Returns false when there is no digit. */
static bool scan_hex(const char **p, uint64_t *v)
{
	const char *c = *p;
	uint64_t x = 0;

	for (;; c++) {
		unsigned d;
		if (*c >= '0' && *c <= '9')
			d = (unsigned)(*c - '0');
		else if (*c >= 'a' && *c <= 'f')
			d = (unsigned)(*c - 'a' + 10);
		else if (*c >= 'A' && *c <= 'F')
			d = (unsigned)(*c - 'A' + 10);
		else
			break;
		x = (x << 4) | d;
	}
	if (c == *p)
		return false;
	*v = x;
	*p = c;
	return true;
}

static bool scan_dec(const char **p, uint64_t *v)
{
	const char *c = *p;
	uint64_t x = 0;

	for (; *c >= '0' && *c <= '9'; c++)
		x = x * 10 + (uint64_t)(*c - '0');
	if (c == *p)
		return false;
	*v = x;
	*p = c;
	return true;
}

static bool scan_char(const char **p, char want)
{
	if (**p != want)
		return false;
	(*p)++;
	return true;
}

static void skip_spaces(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* ---- names -------------------------------------------------------------- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Drops Rust's legacy "::h0123456789abcdef" hash suffix, as perf does. */
static void strip_rust_hash(char *s)
{
	size_t n = strlen(s);
	if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
		return;
	for (size_t i = n - 16; i < n; i++)
		if (!is_hex(s[i]))
			return;
	s[n - 19] = '\0';
}

char *symbolize_name(const char *raw)
{
	char *out = NULL;

	if (strncmp(raw, "_Z", 2) == 0) {
		int status = 0;
		out = __cxa_demangle(raw, NULL, NULL, &status);
		if (status != 0) {
			free(out);
			out = NULL;
		} else {
			strip_rust_hash(out);
		}
	} else if (strncmp(raw, "_R", 2) == 0) {
		/* Options 0: no crate disambiguators, as perf prints them. */
		out = rust_demangle(raw, 0);
	}
	if (!out)
		out = strdup(raw);
	if (!out)
		return NULL;
	out[import_tidy(out, strlen(out))] = '\0';
	return out;
}

/* ---- modules ------------------------------------------------------------ */

static void symres_free_inl(struct symres *r)
{
	for (size_t i = 0; i < r->ninl; i++) {
		free(r->inl[i].name);
		free(r->inl[i].file);
	}
	free(r->inl);
	r->inl = NULL;
	r->ninl = 0;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cache_cap; i++) {
		free(m->cache[i].name);
		free(m->cache[i].file);
		symres_free_inl(&m->cache[i]);
	}
	free(m->cache);
	free(m->syms);
	free(m->plt_names);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	if (m->fd >= 0)
		close(m->fd);
	free(m->segs);
	free(m->build_id);
	free(m->unknown_name);
	free(m->path);
	free(m);
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Reads the build id and PT_LOAD headers of the ELF file open on fd.
 * A file that is not ELF is kept as a module without symbols. */
static int module_read_elf(struct module *m)
{
	Elf *elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	size_t phnum;
	int rc = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out; /* not ELF: no symbols, not an error */
	m->is_elf = true;

	const void *bid;
	ssize_t blen = dwelf_elf_gnu_build_id(elf, &bid);
	if (blen > 0) {
		m->build_id = malloc((size_t)blen);
		if (!m->build_id) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(m->build_id, bid, (size_t)blen);
		m->build_id_len = (size_t)blen;
	}

	m->segs = calloc(phnum ? phnum : 1, sizeof(*m->segs));
	if (!m->segs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		m->segs[m->nsegs++] = (struct segment){
		        .offset = ph.p_offset,
		        .filesz = ph.p_filesz,
		        .vaddr = ph.p_vaddr,
		};
	}
out:
	if (elf)
		elf_end(elf);
	return rc;
}

static struct module *module_by_build_id(struct symbolize *s, const uint8_t *id, size_t len)
{
	for (struct module *m = s->modules; m; m = m->next)
		if (m->build_id_len == len && memcmp(m->build_id, id, len) == 0)
			return m;
	return NULL;
}

/* Makes a module from an open fd (taken over, even on failure). */
static int module_new(const char *path, int fd, struct module **out)
{
	struct module *m = calloc(1, sizeof(*m));
	int rc = -ENOMEM;

	if (!m) {
		close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	m->path = strdup(path);
	if (!m->path)
		goto fail;
	if (asprintf(&m->unknown_name, "[%s]", base_of(path)) < 0) {
		m->unknown_name = NULL;
		goto fail;
	}
	rc = module_read_elf(m);
	if (rc < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	module_free(m);
	return rc;
}

/* Finds or opens the module for a file mapping of `pid`. */
static int module_get(struct symbolize *s, pid_t pid, uint64_t start, uint64_t end,
                      const char *path, unsigned long long dev, unsigned long long ino,
                      struct module **out)
{
	size_t b = (size_t)((dev * 31u + ino) % FILE_BUCKETS);
	struct file_ent *fe;
	char mf[96];
	int fd, rc;

	for (fe = s->files[b]; fe; fe = fe->next) {
		if (fe->dev == dev && fe->ino == ino) {
			*out = fe->mod;
			return 0;
		}
	}

	/* map_files reaches the very file mapped, even when deleted or in
	 * another mount namespace.  The fallback is the path as the process
	 * sees it, through its root, never our own view of the path, which a
	 * file replaced after the exec (or another mount namespace) would
	 * redirect. */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		char *rooted;
		if (asprintf(&rooted, "/proc/%d/root%s", (int)pid, path) < 0)
			return -ENOMEM;
		fd = open(rooted, O_RDONLY | O_CLOEXEC);
		free(rooted);
	}
	if (fd < 0)
		return -errno;

	struct module *m;
	rc = module_new(path, fd, &m);
	if (rc < 0)
		return rc;
	struct module *same =
	        m->build_id_len ? module_by_build_id(s, m->build_id, m->build_id_len) : NULL;
	if (same) {
		/* The same file under another path or inode. */
		module_free(m);
		m = same;
	} else {
		m->next = s->modules;
		s->modules = m;
		s->stats.modules++;
		if (s->hooks.module && m->is_elf)
			s->hooks.module(s->hooks.ctx, m, m->fd, m->path, m->build_id,
			                m->build_id_len);
	}

	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	fe->dev = dev;
	fe->ino = ino;
	fe->mod = m;
	fe->next = s->files[b];
	s->files[b] = fe;
	*out = m;
	return 0;
}

/* The vDSO is the same image in every process: symbolize it from our own
 * copy, written to a memfd so libdwfl can read it as a file. */
static struct module *vdso_module(struct symbolize *s)
{
	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;

	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t size = 0;
	char line[512];
	if (!base || !f) {
		if (f)
			fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, e;
		if (sscanf(line, "%lx-%lx", &a, &e) == 2 && a == base) {
			size = e - a;
			break;
		}
	}
	fclose(f);
	if (!size)
		return NULL;

	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)base, size) != (ssize_t)size) {
		close(fd);
		return NULL;
	}
	struct module *m;
	if (module_new("[vdso]", fd, &m) < 0)
		return NULL;
	m->next = s->modules;
	s->modules = m;
	s->vdso = m;
	if (s->hooks.module && m->is_elf)
		s->hooks.module(s->hooks.ctx, m, m->fd, m->path, m->build_id, m->build_id_len);
	return m;
}

/* Whether the debug file open on fd belongs to mod: the same GNU build id
 * when mod has one, else the CRC-32 that .gnu_debuglink names. */
static bool debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int blen = dwfl_module_build_id(mod, &bits, &vaddr);
	bool ok = false;

	if (blen > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *dbits;
		ssize_t dlen = elf ? dwelf_elf_gnu_build_id(elf, &dbits) : -1;
		ok = dlen == blen && memcmp(dbits, bits, (size_t)blen) == 0;
		if (elf)
			elf_end(elf);
		return ok;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0)
		return false;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return false;
	ok = crc32(0, map, (uInt)st.st_size) == crc;
	munmap(map, (size_t)st.st_size);
	return ok;
}

/* libdwfl's standard debug-file search (the build id under
 * /usr/lib/debug/.build-id, then .gnu_debuglink's file in the file's
 * directory, its .debug/ and the same directory under /usr/lib/debug),
 * without its last step, asking debuginfod servers: that step dlopens
 * libdebuginfod and libcurl (some 25 libraries) and starts a client per
 * module even when no server is configured, which cost 10 ms of the
 * collector's start-up.  With DEBUGINFOD_URLS set, the standard search
 * runs, debuginfod included. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                          const char *file_name, const char *debuglink, GElf_Word crc,
                          char **debuginfo_file_name)
{
	static int use_debuginfod = -1;
	if (use_debuginfod < 0) {
		const char *urls = getenv("DEBUGINFOD_URLS");
		use_debuginfod = urls && *urls;
	}
	if (use_debuginfod)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
		                                    debuglink, crc, debuginfo_file_name);

	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink,
	                                      crc, debuginfo_file_name);
	if (fd >= 0 || !debuglink || !*debuglink || !file_name || file_name[0] != '/')
		return fd;
	const char *slash = strrchr(file_name, '/');
	int dlen = (int)(slash - file_name);
	static const char *const forms[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char *path;
		if (asprintf(&path, forms[i], dlen, file_name, debuglink) < 0)
			return -1;
		if (strcmp(path, file_name) != 0) { /* not the file itself */
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && debug_file_matches(mod, fd, crc)) {
				*debuginfo_file_name = path;
				return fd;
			}
			if (fd >= 0)
				close(fd);
		}
		free(path);
	}
	errno = ENOENT;
	return -1;
}

/* Opens the libdwfl session of a module at its first lookup. */
static void module_open_dwfl(struct module *m)
{
	static char *debuginfo_path = NULL; /* the default search path */
	static const Dwfl_Callbacks callbacks = {
	        .find_elf = dwfl_build_id_find_elf,
	        .find_debuginfo = find_debuginfo,
	        .debuginfo_path = &debuginfo_path,
	};

	m->dwfl_tried = true;
	if (!m->is_elf || m->fd < 0)
		return;
	m->dwfl = dwfl_begin(&callbacks);
	if (!m->dwfl)
		return;
	dwfl_report_begin(m->dwfl);
	/* Placed at its own p_vaddr (bias 0): lookups use ELF addresses. */
	m->dmod = dwfl_report_elf(m->dwfl, m->path, m->path, m->fd, 0, true);
	if (m->dmod)
		m->fd = -1; /* consumed by libdwfl */
	dwfl_report_end(m->dwfl, NULL, NULL);
}

static int msym_cmp(const void *a, const void *b)
{
	const struct msym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return (int)y->rank - (int)x->rank; /* preferred binding first */
	/* then, as perf's choose_best_symbol: fewer leading underscores,
	 * then the longer name */
	size_t ux = strspn(x->name, "_"), uy = strspn(y->name, "_");
	if (ux != uy)
		return ux < uy ? -1 : 1;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	return lx > ly ? -1 : lx < ly;
}

/* Copies the function symbols of the module's symbol table (or of the
 * debug file libdwfl found for it) into a sorted array, so that each
 * lookup is a binary search rather than libdwfl's scan of every symbol. */
static Elf_Scn *section_named(Elf *elf, size_t shstrndx, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, sh) && (name = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/* Names the PLT entries "NAME@plt", as perf does, from .rela.plt: on
 * x86-64 entry i of .plt.sec (with IBT), else entry i + 1 of .plt, calls
 * the function of relocation i.  Appends to m->syms, which has room for
 * `room` more.  The PLT has no symbols of its own, so without these its
 * addresses took the name of whatever sizeless symbol came before. */
static int module_plt_syms(struct module *m, size_t room)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->dmod, &bias);
	GElf_Shdr rsh, psh, ssh, dsh;
	size_t shstrndx;
	Elf_Scn *rscn, *pscn, *dscn;
	Elf_Data *rd, *dd;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0 ||
	    !(rscn = section_named(elf, shstrndx, ".rela.plt", &rsh)) || rsh.sh_type != SHT_RELA ||
	    !rsh.sh_entsize)
		return 0;
	uint64_t plt;
	if (section_named(elf, shstrndx, ".plt.sec", &ssh))
		plt = ssh.sh_addr;
	else if ((pscn = section_named(elf, shstrndx, ".plt", &psh)))
		plt = psh.sh_addr + 16;
	else
		return 0;
	if (!(dscn = elf_getscn(elf, rsh.sh_link)) || !gelf_getshdr(dscn, &dsh) ||
	    !(rd = elf_getdata(rscn, NULL)) || !(dd = elf_getdata(dscn, NULL)))
		return 0;
	size_t n = rsh.sh_size / rsh.sh_entsize, len = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t at = 0, k = 0;
		for (size_t i = 0; i < n && k < room; i++) {
			GElf_Rela rel;
			GElf_Sym sym;
			const char *name;
			if (!gelf_getrela(rd, (int)i, &rel) || !GELF_R_SYM(rel.r_info) ||
			    !gelf_getsym(dd, (int)GELF_R_SYM(rel.r_info), &sym) ||
			    !(name = elf_strptr(elf, dsh.sh_link, sym.st_name)) || !*name)
				continue;
			if (pass == 0) {
				len += strlen(name) + sizeof("@plt");
				continue;
			}
			char *dst = m->plt_names + at;
			at += (size_t)sprintf(dst, "%s@plt", name) + 1;
			m->syms[m->nsyms++] = (struct msym){
			        .addr = plt + 16 * i + bias, .size = 16, .name = dst, .rank = 0};
			k++;
		}
		if (pass == 0 && (!len || !(m->plt_names = malloc(len))))
			return len ? -ENOMEM : 0;
	}
	return 0;
}

static int module_load_syms(struct module *m)
{
	int n = dwfl_module_getsymtab(m->dmod);
	size_t plt_room = 4096;
	if (n < 1)
		n = 1;
	m->syms = calloc((size_t)n + plt_room, sizeof(*m->syms));
	if (!m->syms)
		return -ENOMEM;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		        dwfl_module_getsym_info(m->dmod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || !addr)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		int bind = GELF_ST_BIND(sym.st_info);
		m->syms[m->nsyms++] = (struct msym){
		        .addr = addr,
		        .size = sym.st_size,
		        .name = name,
		        .rank = bind == STB_GLOBAL ? 2
		                : bind == STB_WEAK ? 0
		                                   : 1,
		};
	}
	int rc = module_plt_syms(m, plt_room);
	if (rc < 0)
		return rc;
	qsort(m->syms, m->nsyms, sizeof(*m->syms), msym_cmp);
	return 0;
}

/* The symbol holding vaddr: the nearest one at or below it whose size
 * covers it (a few below are looked at, for enclosing symbols), else the
 * nearest sizeless one.  NULL when none. */
static const char *module_find_sym(const struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* Start at the first entry of the run at that address: entries of
	 * one address are sorted by preferred binding. */
	size_t i = lo - 1;
	while (i > 0 && m->syms[i - 1].addr == m->syms[i].addr)
		i--;
	const char *sizeless = NULL;
	for (size_t k = i, seen = 0; k < lo && seen < 16; k++, seen++) {
		const struct msym *y = &m->syms[k];
		if (y->size && vaddr < y->addr + y->size)
			return y->name;
		if (!y->size && !sizeless)
			sizeless = y->name;
	}
	for (size_t k = i, seen = 0; k-- > 0 && seen < 16; seen++) {
		const struct msym *y = &m->syms[k];
		if (y->size && vaddr < y->addr + y->size)
			return y->name;
		if (!y->size && !sizeless)
			sizeless = y->name;
	}
	return sizeless;
}

static int cache_grow(struct module *m)
{
	size_t ncap = m->cache_cap ? m->cache_cap * 2 : 256;
	struct symres *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cache_cap; i++) {
		struct symres *r = &m->cache[i];
		if (!r->addr)
			continue;
		size_t j = (size_t)(r->addr * 0x9e3779b97f4a7c15ull) & (ncap - 1);
		while (n[j].addr)
			j = (j + 1) & (ncap - 1);
		n[j] = *r;
	}
	free(m->cache);
	m->cache = n;
	m->cache_cap = ncap;
	return 0;
}

static int module_inlines(struct symbolize *s, struct module *m, struct symres *r);

/* Resolves a non-zero ELF virtual address of a module, through its
 * cache (0 marks free slots). */
static int module_lookup(struct symbolize *s, struct module *m, uint64_t vaddr, struct symres **out)
{
	int rc;

	if (m->cache_used * 2 >= m->cache_cap) {
		rc = cache_grow(m);
		if (rc < 0)
			return rc;
	}
	size_t j = (size_t)(vaddr * 0x9e3779b97f4a7c15ull) & (m->cache_cap - 1);
	while (m->cache[j].addr) {
		if (m->cache[j].addr == vaddr) {
			*out = &m->cache[j];
			return 0;
		}
		j = (j + 1) & (m->cache_cap - 1);
	}
	s->stats.lookups++;

	struct symres r = {.addr = vaddr, .kind = STORE_FRAME_USER};
	const char *name = NULL;
	if (!m->dwfl_tried) {
		module_open_dwfl(m);
		if (m->dmod) {
			rc = module_load_syms(m);
			if (rc < 0)
				return rc;
		}
	}
	if (m->dmod) {
		name = module_find_sym(m, vaddr);
		/* file:line needs the DWARF (often compressed): only on
		 * request, it costs more than the symbol itself. */
		Dwfl_Line *l = s->lines ? dwfl_module_getsrc(m->dmod, vaddr) : NULL;
		int lineno = 0;
		const char *file = l ? dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL) : NULL;
		if (file) {
			r.file = strdup(file);
			if (!r.file)
				return -ENOMEM;
			r.line = lineno > 0 ? (uint32_t)lineno : 0;
		}
	}
	if (name && *name && s->perf_names) {
		r.name = symbolize_name_perf(name);
	} else if (name && *name) {
		/* "memcpy@@GLIBC_2.14": the symbol version is not part of
		 * the function's name. */
		char *at = strchr(name, '@');
		if (at && at != name && strcmp(at, "@plt") != 0) {
			char *bare = strndup(name, (size_t)(at - name));
			r.name = bare ? symbolize_name(bare) : NULL;
			free(bare);
		} else {
			r.name = symbolize_name(name);
		}
	} else {
		r.name = strdup(m->unknown_name);
		r.kind = STORE_FRAME_UNKNOWN;
	}
	if (!r.name) {
		free(r.file);
		return -ENOMEM;
	}
	if (s->inlines && m->dmod && r.kind == STORE_FRAME_USER) {
		rc = module_inlines(s, m, &r);
		if (rc < 0) {
			free(r.name);
			free(r.file);
			symres_free_inl(&r);
			return rc;
		}
	}
	m->cache[j] = r;
	m->cache_used++;
	*out = &m->cache[j];
	return 0;
}

/* The source file of a DW_AT_call_file index of cu, or NULL. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &idx) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;
	if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line) != 0)
		return 0;
	return line <= UINT32_MAX ? (uint32_t)line : 0;
}

/* "NAME_[i]" for an inlined subroutine: its linkage name demangled when
 * it has one (C++'s qualified names), else its DW_AT_name, through
 * DW_AT_abstract_origin.  Returns a malloc'd string or NULL (ENOMEM, or
 * a DIE without a name, which is then "[unknown]_[i]"). */
static char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *raw = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		raw = dwarf_formstring(&attr);
	if (!raw)
		raw = dwarf_diename(die);
	char *name = symbolize_name(raw ? raw : unknown_name);
	if (!name)
		return NULL;
	size_t n = strlen(name);
	char *out = realloc(name, n + sizeof("_[i]"));
	if (!out) {
		free(name);
		return NULL;
	}
	memcpy(out + n, "_[i]", sizeof("_[i]"));
	return out;
}

/* Fills r->inl with the functions inlined at r->addr, outermost first,
 * from the module's DWARF (none without it).  With s->lines, each frame
 * gets the line it is at: the concrete function and every inlined one
 * but the innermost are at the call site of the next one in, and the
 * innermost keeps the line table's answer, already in r->file/line.
 * Returns 0 or -ENOMEM. */
static int module_inlines(struct symbolize *s, struct module *m, struct symres *r)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m->dmod, r->addr, &bias);
	Dwarf_Die *scopes = NULL;
	int nscopes, rc = 0;

	if (!cu || (nscopes = dwarf_getscopes(cu, r->addr - bias, &scopes)) <= 0)
		return 0;
	/* scopes[0] is the innermost; the inlined ones end at the concrete
	 * function (DW_TAG_subprogram). */
	int k = 0;
	while (k < nscopes && k < UINT16_MAX && dwarf_tag(&scopes[k]) != DW_TAG_subprogram)
		k++;
	int ninl = 0;
	for (int i = 0; i < k; i++)
		ninl += dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine;
	if (ninl == 0)
		goto out;
	r->inl = calloc((size_t)ninl, sizeof(*r->inl));
	if (!r->inl) {
		rc = -ENOMEM;
		goto out;
	}
	char *inner_file = r->file;
	uint32_t inner_line = r->line;
	struct inl *outer = NULL; /* the frame whose line a call site gives */
	r->file = NULL;
	r->line = 0;
	for (int i = k; i-- > 0;) {
		Dwarf_Die *die = &scopes[i];
		if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
			continue;
		struct inl *in = &r->inl[r->ninl++];
		in->name = inline_name(die);
		if (!in->name) {
			rc = -ENOMEM;
			break;
		}
		if (!s->lines)
			continue;
		const char *file = call_file(cu, die);
		char **dst = outer ? &outer->file : &r->file;
		*dst = file ? strdup(file) : NULL;
		if (file && !*dst) {
			rc = -ENOMEM;
			break;
		}
		if (outer)
			outer->line = call_line(die);
		else
			r->line = call_line(die);
		outer = in;
	}
	if (rc == 0 && outer) {
		outer->file = inner_file;
		outer->line = inner_line;
	} else {
		free(inner_file);
	}
out:
	free(scopes);
	return rc;
}

/* File offset -> ELF virtual address through the PT_LOAD headers. */
static bool module_vaddr(const struct module *m, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		const struct segment *g = &m->segs[i];
		if (off >= g->offset && off < g->offset + g->filesz) {
			*vaddr = off - g->offset + g->vaddr;
			return true;
		}
	}
	return false;
}

/* ---- processes ---------------------------------------------------------- */

static void proc_clear_jit(struct proc *p)
{
	for (size_t i = 0; i < p->njit; i++)
		free(p->jit[i].name);
	free(p->jit);
	p->jit = NULL;
	p->njit = 0;
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
	proc_free(p->before);
	proc_clear_jit(p);
	free(p->maps);
	free(p->binary);
	free(p->build_id_hex);
	free(p->jit_path);
	free(p->jit_unknown);
	free(p);
}

static struct proc **proc_slot(const struct symbolize *s, pid_t pid)
{
	struct proc *const *pp = &s->procs[(unsigned)pid % PROC_BUCKETS];
	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return (struct proc **)pp;
}

static struct proc *proc_find(const struct symbolize *s, pid_t pid)
{
	return *proc_slot(s, pid);
}

/* p's mappings as the unwinder sees them, into out[0..p->nmaps). */
static void proc_export(const struct proc *p, struct symbolize_map *out)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mapping *mp = &p->maps[i];
		uint64_t vaddr;
		out[i] = (struct symbolize_map){.start = mp->start, .end = mp->end};
		if (mp->mod && mp->mod->is_elf && module_vaddr(mp->mod, mp->pgoff, &vaddr)) {
			out[i].module = mp->mod;
			out[i].bias = mp->start - vaddr;
		}
	}
}

int symbolize_maps(const struct symbolize *s, pid_t pid, struct symbolize_map **maps, size_t *n)
{
	const struct proc *p = proc_find(s, pid);
	if (!p)
		return -ESRCH;
	*maps = calloc(p->nmaps ? p->nmaps : 1, sizeof(**maps));
	if (!*maps)
		return -ENOMEM;
	proc_export(p, *maps);
	*n = p->nmaps;
	return 0;
}

void symbolize_set_hooks(struct symbolize *s, const struct symbolize_hooks *h)
{
	if (h)
		s->hooks = *h;
	else
		memset(&s->hooks, 0, sizeof(s->hooks));
}

static void notify_process(struct symbolize *s, const struct proc *p)
{
	struct symbolize_map small[64], *maps = small;

	if (!s->hooks.process)
		return;
	if (p->nmaps > sizeof(small) / sizeof(small[0])) {
		maps = calloc(p->nmaps, sizeof(*maps));
		if (!maps)
			return; /* the unwinder falls back to frame pointers */
	}
	proc_export(p, maps);
	s->hooks.process(s->hooks.ctx, p->pid, maps, p->nmaps);
	if (maps != small)
		free(maps);
}

/* Puts p in the table, replacing (and freeing) an older snapshot. */
static void proc_install(struct symbolize *s, struct proc *p)
{
	struct proc **pp = proc_slot(s, p->pid);
	if (*pp) {
		p->next = (*pp)->next;
		if (!p->gen && !p->before) {
			/* A re-read of the same program: same generation. */
			p->gen = (*pp)->gen;
			p->before = (*pp)->before;
			(*pp)->before = NULL;
		}
		proc_free(*pp);
	} else {
		p->next = NULL;
	}
	*pp = p;
	s->stats.processes++;
	notify_process(s, p);
}

static char *hex_of(const uint8_t *b, size_t n)
{
	char *h = malloc(n * 2 + 1);
	if (!h)
		return NULL;
	for (size_t i = 0; i < n; i++)
		snprintf(h + i * 2, 3, "%02x", b[i]);
	h[n * 2] = '\0';
	return h;
}

static int proc_names(struct proc *p)
{
	if (asprintf(&p->jit_path, "/tmp/perf-%d.map", (int)p->pid) < 0) {
		p->jit_path = NULL;
		return -ENOMEM;
	}
	if (asprintf(&p->jit_unknown, "[perf-%d.map]", (int)p->pid) < 0) {
		p->jit_unknown = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int proc_copy(const struct proc *from, pid_t pid, struct proc **out)
{
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->binary = strdup(from->binary);
	p->build_id_hex = strdup(from->build_id_hex);
	p->maps = calloc(from->nmaps ? from->nmaps : 1, sizeof(*p->maps));
	if (!p->binary || !p->build_id_hex || !p->maps || proc_names(p) < 0) {
		proc_free(p);
		return -ENOMEM;
	}
	memcpy(p->maps, from->maps, from->nmaps * sizeof(*p->maps));
	p->nmaps = from->nmaps;
	p->maps_read = from->maps_read;
	*out = p;
	return 0;
}

/* Name of a process without an executable: its comm, spaces as '_'. */
static int read_comm(pid_t pid, char **out)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -err : -ESRCH;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == ' ')
			*c = '_';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

/* Adds one executable mapping to p (name: a path, "[vdso]", or "" for
 * anonymous memory). */
static int proc_add_map(struct symbolize *s, struct proc *p, size_t *cap, uint64_t start,
                        uint64_t end, uint64_t pgoff, unsigned long long dev,
                        unsigned long long ino, char *name)
{
	char *del = strstr(name, " (deleted)");
	if (del && del[10] == '\0')
		*del = '\0';
	if (p->nmaps == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct mapping *n = realloc(p->maps, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->maps = n;
		*cap = ncap;
	}
	struct mapping *mp = &p->maps[p->nmaps];
	*mp = (struct mapping){.start = start, .end = end, .pgoff = pgoff};
	if (name[0] == '/' && ino != 0) {
		int rc = module_get(s, p->pid, start, end, name, dev, ino, &mp->mod);
		if (rc == -ENOMEM)
			return rc;
		/* unreadable file: shown as [unknown] */
		if (!mp->mod)
			mp->special = unknown_name;
	} else if (strcmp(name, "[vdso]") == 0) {
		mp->mod = vdso_module(s);
		if (!mp->mod)
			mp->special = "[[vdso]]";
	} else {
		mp->special = NULL; /* anonymous: JIT code or unknown */
	}
	p->nmaps++;
	return 0;
}

/* PROCMAP_QUERY (Linux 6.11, <linux/fs.h>), declared here for older
 * headers. */
struct flamefs_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define FLAMEFS_PROCMAP_QUERY          _IOWR('f', 17, struct flamefs_procmap_query)
#define FLAMEFS_PROCMAP_QUERY_VMA_EXEC 0x04
#define FLAMEFS_PROCMAP_QUERY_OR_NEXT  0x10

/* Reads p's executable mappings with the PROCMAP_QUERY ioctl: the kernel
 * walks to each executable mapping and names only those, where reading
 * /proc/PID/maps formats every mapping (four times as many) as text.
 * Returns -ENOTTY (or -EINVAL) when the kernel lacks it, before touching
 * p. */
static int proc_query_maps(struct symbolize *s, struct proc *p, int fd)
{
	static char name[PATH_MAX];
	uint64_t addr = 0;
	size_t cap = 0;

	for (;;) {
		struct flamefs_procmap_query q = {
		        .size = sizeof(q),
		        .query_flags =
		                FLAMEFS_PROCMAP_QUERY_VMA_EXEC | FLAMEFS_PROCMAP_QUERY_OR_NEXT,
		        .query_addr = addr,
		        .vma_name_addr = (uint64_t)(uintptr_t)name,
		        .vma_name_size = sizeof(name),
		};
		/* ENOENT: no more; ESRCH: no mappings left (a zombie), as the
		 * text would be empty. */
		if (ioctl(fd, FLAMEFS_PROCMAP_QUERY, &q) < 0)
			return errno == ENOENT || errno == ESRCH ? 0 : -errno;
		if (!q.vma_name_size)
			name[0] = '\0';
		unsigned long long dev = ((unsigned long long)q.dev_major << 20) | q.dev_minor;
		int rc = proc_add_map(s, p, &cap, q.vma_start, q.vma_end, q.vma_offset, dev,
		                      q.inode, name);
		if (rc < 0)
			return rc;
		if (q.vma_end <= addr)
			return -EINVAL; /* no progress: give up on the ioctl */
		addr = q.vma_end;
	}
}

static int proc_read_maps(struct symbolize *s, struct proc *p)
{
	static bool no_query; /* PROCMAP_QUERY failed once: text only */
	char path[64], line[4096 + 128];
	size_t cap = 0;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	if (!no_query) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		rc = proc_query_maps(s, p, fd);
		close(fd);
		if (rc != -ENOTTY && rc != -EINVAL && rc != -EOPNOTSUPP)
			return rc;
		no_query = true; /* older kernel: the text below from now on */
		p->nmaps = 0;
		rc = 0;
	}
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "start-end perms pgoff major:minor inode   name" */
		uint64_t start, end, pgoff, major, minor, ino;
		const char *c = line;
		if (!scan_hex(&c, &start) || !scan_char(&c, '-') || !scan_hex(&c, &end) ||
		    !scan_char(&c, ' '))
			continue;
		const char *perms = c;
		while (*c && *c != ' ')
			c++;
		if (!memchr(perms, 'x', (size_t)(c - perms)))
			continue;
		skip_spaces(&c);
		if (!scan_hex(&c, &pgoff) || !scan_char(&c, ' ') || !scan_hex(&c, &major) ||
		    !scan_char(&c, ':') || !scan_hex(&c, &minor) || !scan_char(&c, ' ') ||
		    !scan_dec(&c, &ino))
			continue;
		skip_spaces(&c);
		char *name = line + (c - line);
		name[strcspn(name, "\n")] = '\0';
		unsigned long long dev = ((unsigned long long)major << 20) | minor;
		rc = proc_add_map(s, p, &cap, start, end, pgoff, dev, ino, name);
		if (rc < 0)
			break;
	}
	fclose(f);
	return rc;
}

static int proc_snapshot(struct symbolize *s, pid_t pid, struct proc **out)
{
	char path[64], exe[PATH_MAX];
	struct proc *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->maps_read = mono_ns();
	rc = proc_names(p);
	if (rc < 0)
		goto fail;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			goto fail;
		/* A kernel thread (no executable), or gone. */
		rc = read_comm(pid, &p->binary);
		if (rc < 0)
			goto fail;
		exe[0] = '\0';
	} else {
		exe[n] = '\0';
		char *del = strstr(exe, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		p->binary = strdup(base_of(exe));
		if (!p->binary) {
			rc = -ENOMEM;
			goto fail;
		}
	}

	rc = proc_read_maps(s, p);
	if (rc < 0)
		goto fail;

	/* The version is the executable's build id. */
	const struct module *em = NULL;
	for (size_t i = 0; exe[0] && i < p->nmaps; i++)
		if (p->maps[i].mod && strcmp(p->maps[i].mod->path, exe) == 0)
			em = p->maps[i].mod;
	if (!em && exe[0]) {
		for (size_t i = 0; i < p->nmaps; i++)
			if (p->maps[i].mod && strcmp(base_of(p->maps[i].mod->path), p->binary) == 0)
				em = p->maps[i].mod;
	}
	p->build_id_hex = em ? hex_of(em->build_id, em->build_id_len) : strdup("");
	if (!p->build_id_hex) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = p;
	return 0;
fail:
	proc_free(p);
	return rc;
}

int symbolize_snapshot(struct symbolize *s, pid_t pid, pid_t parent)
{
	struct proc *p = NULL;
	int rc = proc_snapshot(s, pid, &p);

	if (rc == -ENOENT || rc == -ESRCH) {
		const struct proc *pp = parent ? proc_find(s, parent) : NULL;
		if (!pp)
			return -ESRCH;
		rc = proc_copy(pp, pid, &p);
		if (rc < 0)
			return rc;
		s->stats.inherited++;
	} else if (rc < 0) {
		return rc;
	} else if (p->nmaps == 0) {
		/* A zombie has no mappings left: keep what was seen alive. */
		const struct proc *old = proc_find(s, pid);
		if (old && old->nmaps) {
			proc_free(p);
			return 0;
		}
	}
	proc_install(s, p);
	return 0;
}

bool symbolize_known(const struct symbolize *s, pid_t pid)
{
	return proc_find(s, pid) != NULL;
}

/* The snapshot of pid at generation gen (see symbolize_user_gen). */
static struct proc *proc_find_gen(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	struct proc *p = proc_find(s, pid);
	if (p && p->gen != gen && p->before && p->before->gen == gen)
		return p->before;
	return p;
}

int symbolize_process_gen(const struct symbolize *s, pid_t pid, uint32_t gen, const char **binary,
                          const char **build_id_hex)
{
	const struct proc *p = proc_find_gen(s, pid, gen);
	if (!p)
		return -ESRCH;
	*binary = p->binary;
	*build_id_hex = p->build_id_hex;
	return 0;
}

int symbolize_process(const struct symbolize *s, pid_t pid, const char **binary,
                      const char **build_id_hex)
{
	const struct proc *p = proc_find(s, pid);
	if (!p)
		return -ESRCH;
	*binary = p->binary;
	*build_id_hex = p->build_id_hex;
	return 0;
}

/* ---- JIT perf maps ------------------------------------------------------ */

static int jit_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* (Re)reads /tmp/perf-PID.map when it grew since the last read.  JIT
 * runtimes append to it, and it outlives the process. */
static int jit_load(struct proc *p)
{
	struct stat st;
	int64_t now = mono_ns();

	/* Looked at a moment ago: a missing map stays missing for a while,
	 * and an existing one is looked at again only on a miss. */
	if (p->jit_checked &&
	    now - p->jit_checked < (p->jit_exists ? JIT_RECHECK_NS / 3 : JIT_RECHECK_NS))
		return 0;
	p->jit_checked = now;
	int fd = open(p->jit_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (p->jit_exists && st.st_size == p->jit_size)) {
		close(fd);
		return 0;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	proc_clear_jit(p);
	p->jit_exists = true;
	p->jit_size = st.st_size;

	char *line = NULL;
	size_t lcap = 0, cap = 0;
	int rc = 0;
	while (getline(&line, &lcap, f) > 0) {
		unsigned long long start, size;
		int at = 0;
		if (sscanf(line, "%llx %llx %n", &start, &size, &at) < 2 || !at)
			continue;
		char *name = line + at;
		name[strcspn(name, "\n")] = '\0';
		if (p->njit == cap) {
			cap = cap ? cap * 2 : 256;
			struct jit_sym *n = realloc(p->jit, cap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			p->jit = n;
		}
		char *nm = symbolize_name(name);
		if (!nm) {
			rc = -ENOMEM;
			break;
		}
		p->jit[p->njit++] = (struct jit_sym){start, size, nm};
	}
	free(line);
	fclose(f);
	if (p->njit)
		qsort(p->jit, p->njit, sizeof(*p->jit), jit_cmp);
	return rc;
}

static const struct jit_sym *jit_find(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->njit;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->jit[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct jit_sym *j = &p->jit[lo - 1];
	return addr < j->start + j->size ? j : NULL;
}

/* ---- lookups ------------------------------------------------------------ */

/* /proc/PID/maps lists mappings in address order, without overlaps, so
 * a binary search finds the one holding a. */
static const struct mapping *find_mapping(const struct proc *p, uint64_t a)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

static int user_lookup(struct symbolize *s, struct proc *p, pid_t pid, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room);

int symbolize_user(struct symbolize *s, pid_t pid, uint64_t addr, bool caller,
                   struct store_frame *f, size_t room)
{
	return user_lookup(s, proc_find(s, pid), pid, addr, caller, f, room);
}

int symbolize_user_gen(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room)
{
	return user_lookup(s, proc_find_gen(s, pid, gen), pid, addr, caller, f, room);
}

/* Resolves addr in snapshot p of pid (the current one, or the one before
 * an exec). */
static int user_lookup(struct symbolize *s, struct proc *p, pid_t pid, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room)
{
	uint64_t a = caller && addr ? addr - 1 : addr;
	int rc;

	memset(f, 0, sizeof(*f));
	f->name = unknown_name;
	f->name_len = sizeof(unknown_name) - 1;
	f->module = unknown_name;
	f->module_len = sizeof(unknown_name) - 1;
	f->kind = STORE_FRAME_UNKNOWN;
	if (!p)
		return 1;

	const struct mapping *mp = find_mapping(p, a);
	if (!mp && p == proc_find(s, pid) && mono_ns() - p->maps_read >= MAPS_RECHECK_NS) {
		/* Outside every known mapping: the process may have mapped
		 * new code (dlopen) since its snapshot.  Read its maps again,
		 * at most once a second, and keep the old ones if it is gone. */
		struct proc *np = NULL;
		rc = proc_snapshot(s, pid, &np);
		if (rc == -ENOMEM)
			return rc;
		if (rc == 0 && np->nmaps) {
			np->jit = p->jit;
			np->njit = p->njit;
			np->jit_size = p->jit_size;
			np->jit_exists = p->jit_exists;
			np->jit_checked = p->jit_checked;
			p->jit = NULL;
			p->njit = 0;
			proc_install(s, np);
			p = np;
			mp = find_mapping(p, a);
		} else {
			proc_free(np);
			p->maps_read = mono_ns();
		}
	}

	if (mp && mp->mod) {
		struct module *m = mp->mod;
		uint64_t vaddr;
		f->module = m->path;
		f->module_len = strlen(m->path);
		f->build_id = m->build_id;
		f->build_id_len = m->build_id_len;
		if (!module_vaddr(m, a - mp->start + mp->pgoff, &vaddr) || !vaddr) {
			f->name = m->unknown_name;
			f->name_len = strlen(m->unknown_name);
			return 1;
		}
		struct symres *r;
		rc = module_lookup(s, m, vaddr, &r);
		if (rc < 0)
			return rc;
		if (r->kind == STORE_FRAME_UNKNOWN && a != addr) {
			/* No function holds the byte before the return address:
			 * a signal frame's "return address" is the trampoline's
			 * own first byte (glibc's __restore_rt, behind a nop that
			 * belongs to no symbol). */
			rc = module_lookup(s, m, vaddr + 1, &r);
			if (rc < 0)
				return rc;
		}
		f->name = r->name;
		f->name_len = strlen(r->name);
		f->file = r->file;
		f->file_len = r->file ? strlen(r->file) : 0;
		f->line = r->line;
		f->kind = r->kind;
		size_t n = 1;
		for (size_t k = 0; k < r->ninl && n < room; k++, n++) {
			f[n] = f[0];
			f[n].name = r->inl[k].name;
			f[n].name_len = strlen(r->inl[k].name);
			f[n].file = r->inl[k].file;
			f[n].file_len = r->inl[k].file ? strlen(r->inl[k].file) : 0;
			f[n].line = r->inl[k].line;
			f[n].kind = STORE_FRAME_INLINE;
		}
		return (int)n;
	}
	if (mp && mp->special) {
		f->name = mp->special;
		f->name_len = strlen(mp->special);
		return 1;
	}

	/* Anonymous or unmapped code: a JIT's perf map may name it. */
	const struct jit_sym *j = jit_find(p, a);
	if (!j) {
		rc = jit_load(p);
		if (rc < 0)
			return rc;
		j = jit_find(p, a);
	}
	if (p->jit_exists) {
		f->module = p->jit_path;
		f->module_len = strlen(p->jit_path);
		if (j) {
			f->name = j->name;
			f->name_len = strlen(j->name);
			f->kind = STORE_FRAME_JIT;
		} else {
			f->name = p->jit_unknown;
			f->name_len = strlen(p->jit_unknown);
		}
	}
	return 1;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct kallsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int kernel_load(struct symbolize *s)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t cap = 0, ncap = 0, nlen = 0;
	char *line = NULL;
	size_t lcap = 0;
	int rc = 0;

	s->kernel_tried = true;
	if (!f)
		return 0; /* no kallsyms: kernel frames stay unknown */
	while (getline(&line, &lcap, f) > 0) {
		/* "ffffffff81000000 T name\t[module]": text symbols only. */
		uint64_t addr;
		const char *c = line;
		if (!scan_hex(&c, &addr) || !addr || !scan_char(&c, ' '))
			continue;
		char type = *c;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		c++;
		if (!scan_char(&c, ' '))
			continue;
		const char *name = c;
		size_t len = strcspn(name, "\t\n ");
		if (s->nksyms == cap) {
			cap = cap ? cap * 2 : 65536;
			struct kallsym *n = realloc(s->ksyms, cap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			s->ksyms = n;
		}
		if (nlen + len + 1 > ncap) {
			ncap = ncap ? ncap * 2 : (1u << 22);
			while (ncap < nlen + len + 1)
				ncap *= 2;
			char *n = realloc(s->knames, ncap);
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			s->knames = n;
		}
		memcpy(s->knames + nlen, name, len);
		s->knames[nlen + len] = '\0';
		s->ksyms[s->nksyms++] = (struct kallsym){addr, nlen};
		nlen += len + 1;
	}
	free(line);
	fclose(f);
	if (rc < 0) {
		s->nksyms = 0;
		return rc;
	}
	/* The core kernel's symbols come sorted; modules' may not. */
	for (size_t i = 1; i < s->nksyms; i++) {
		if (s->ksyms[i].addr < s->ksyms[i - 1].addr) {
			qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
			break;
		}
	}
	return 0;
}

static size_t kcache_slot(const struct symbolize *s, uint64_t a)
{
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 40) & (s->kcache_cap - 1);
	while (s->kcache[i].addr && s->kcache[i].addr != a)
		i = (i + 1) & (s->kcache_cap - 1);
	return i;
}

static const struct kname *kcache_find(const struct symbolize *s, uint64_t a)
{
	if (!s->kcache_cap)
		return NULL;
	const struct kname *e = &s->kcache[kcache_slot(s, a)];
	return e->addr ? e : NULL;
}

/* Copies a name into the never-moving chunks. */
static const char *kname_copy(struct symbolize *s, const char *name, size_t len)
{
	struct kchunk *c = s->kchunks;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = s->kchunks;
		s->kchunks = c;
	}
	char *d = c->data + c->used;
	memcpy(d, name, len);
	d[len] = '\0';
	c->used += len + 1;
	return d;
}

static int kcache_add(struct symbolize *s, uint64_t a, const char *name, size_t len)
{
	if ((s->kcache_n + 1) * 2 > s->kcache_cap) {
		size_t ocap = s->kcache_cap, ncap = ocap ? ocap * 2 : 4096;
		struct kname *old = s->kcache, *n = calloc(ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->kcache = n;
		s->kcache_cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].addr)
				s->kcache[kcache_slot(s, old[i].addr)] = old[i];
		free(old);
	}
	struct kname *e = &s->kcache[kcache_slot(s, a)];
	if (e->addr)
		return 0;
	e->name = NULL;
	e->len = 0;
	if (name) {
		e->name = kname_copy(s, name, len);
		if (!e->name)
			return -ENOMEM;
		e->len = len;
	}
	e->addr = a;
	s->kcache_n++;
	return 0;
}

/* Names lookup addresses as[0..n) (n <= KSYM_BATCH) through ksym and
 * caches them.  When the BPF lookup fails, ksym is given up for good and
 * /proc/kallsyms takes over. */
static int kernel_resolve(struct symbolize *s, const uint64_t *as, size_t n)
{
	int rc = ksym_lookup(s->ksym, as, n);

	if (rc < 0) {
		ksym_free(s->ksym);
		s->ksym = NULL;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		const char *name = ksym_name(s->ksym, i, &len);
		rc = kcache_add(s, as[i], name, len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void kernel_open(struct symbolize *s)
{
	s->ksym_tried = true;
	if (ksym_open(&s->ksym) < 0)
		s->ksym = NULL; /* /proc/kallsyms then */
}

/* The address a kernel frame is looked up at: a return address's call
 * instruction. */
static uint64_t kernel_lookup_addr(uint64_t addr, bool caller)
{
	return caller && addr ? addr - 1 : addr;
}

int symbolize_kernel_prefetch(struct symbolize *s, const uint64_t *ips, size_t n)
{
	uint64_t q[KSYM_BATCH];
	size_t nq = 0;
	int rc;

	if (!s->ksym_tried)
		kernel_open(s);
	for (size_t i = 0; i < n && s->ksym; i++) {
		uint64_t a = kernel_lookup_addr(ips[i], i > 0);
		bool dup = !a || kcache_find(s, a);
		for (size_t j = 0; j < nq && !dup; j++)
			dup = q[j] == a;
		if (dup)
			continue;
		q[nq++] = a;
		if (nq == KSYM_BATCH) {
			rc = kernel_resolve(s, q, nq);
			if (rc < 0)
				return rc;
			nq = 0;
		}
	}
	if (nq && s->ksym)
		return kernel_resolve(s, q, nq);
	return 0;
}

int symbolize_kernel(struct symbolize *s, uint64_t addr, bool caller, struct store_frame *f)
{
	static const char unknown_kernel[] = "[" KERNEL_MODULE "]";
	uint64_t a = kernel_lookup_addr(addr, caller);
	int rc;

	memset(f, 0, sizeof(*f));
	f->module = KERNEL_MODULE;
	f->module_len = sizeof(KERNEL_MODULE) - 1;
	f->kind = STORE_FRAME_KERNEL;
	f->name = unknown_kernel;
	f->name_len = sizeof(unknown_kernel) - 1;
	if (!s->ksym_tried)
		kernel_open(s);
	if (s->ksym && a) {
		const struct kname *e = kcache_find(s, a);
		if (!e) {
			rc = kernel_resolve(s, &a, 1);
			if (rc < 0)
				return rc;
			e = kcache_find(s, a);
		}
		if (e) {
			if (e->name) {
				f->name = e->name;
				f->name_len = e->len;
			}
			return 0;
		}
		/* ksym failed just now: /proc/kallsyms below. */
	}
	if (!s->kernel_tried) {
		rc = kernel_load(s);
		if (rc < 0)
			return rc;
	}
	size_t lo = 0, hi = s->nksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ksyms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		f->name = s->knames + s->ksyms[lo - 1].name;
		f->name_len = strlen(f->name);
	}
	return 0;
}

/* ---- lifetime ----------------------------------------------------------- */

struct symbolize *symbolize_new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct symbolize));
}

void symbolize_free(struct symbolize *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->offline_tab && i <= s->offline_mask; i++)
		free(s->offline_tab[i].key);
	free(s->offline_tab);
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct proc *p = s->procs[b];
		while (p) {
			struct proc *n = p->next;
			proc_free(p);
			p = n;
		}
	}
	for (size_t b = 0; b < FILE_BUCKETS; b++) {
		struct file_ent *e = s->files[b];
		while (e) {
			struct file_ent *n = e->next;
			free(e);
			e = n;
		}
	}
	struct module *m = s->modules;
	while (m) {
		struct module *n = m->next;
		module_free(m);
		m = n;
	}
	ksym_free(s->ksym);
	free(s->kcache);
	while (s->kchunks) {
		struct kchunk *n = s->kchunks->next;
		free(s->kchunks);
		s->kchunks = n;
	}
	free(s->ksyms);
	free(s->knames);
	free(s);
}

void symbolize_set_inline(struct symbolize *s, bool inlines)
{
	s->inlines = inlines;
}

void symbolize_set_lines(struct symbolize *s, bool lines)
{
	s->lines = lines;
}

int symbolize_exec(struct symbolize *s, pid_t pid, uint32_t gen)
{
	struct proc *old = proc_find(s, pid), *p = NULL;
	int rc;

	rc = proc_snapshot(s, pid, &p);
	if (rc < 0)
		return rc;
	p->at_exec = true;
	p->gen = gen;
	if (old) {
		/* Keep the program that ran before, for samples it left in the
		 * drain still to come; one generation back is enough. */
		struct proc **pp = proc_slot(s, pid);
		*pp = old->next;
		proc_free(old->before);
		old->before = NULL;
		old->next = NULL;
		p->before = old;
	}
	proc_install(s, p);
	return 0;
}

int symbolize_inherit(struct symbolize *s, pid_t pid, pid_t parent)
{
	struct proc *pp = proc_find(s, parent);
	struct proc *p = NULL;
	int rc;

	if (pp && pp->at_exec) {
		/* Its snapshot predates its libraries: read it again once
		 * (kept as it was if the parent is gone). */
		rc = proc_snapshot(s, parent, &p);
		if (rc == -ENOMEM)
			return rc;
		if (rc == 0 && p->nmaps) {
			proc_install(s, p);
			pp = p;
		} else {
			proc_free(p);
			pp->at_exec = false;
		}
		p = NULL;
	}
	if (!pp || !pp->nmaps) {
		rc = symbolize_snapshot(s, pid, parent);
	} else {
		rc = proc_copy(pp, pid, &p);
		if (rc < 0)
			return rc;
		proc_install(s, p);
		s->stats.inherited++;
	}
	/* A new process: exec count 0, whatever an earlier holder of the
	 * pid did (the BPF side forgets it too). */
	p = rc == 0 ? proc_find(s, pid) : NULL;
	if (p) {
		p->gen = 0;
		proc_free(p->before);
		p->before = NULL;
	}
	return rc;
}

void symbolize_get_stats(const struct symbolize *s, struct symbolize_stats *st)
{
	*st = s->stats;
}

/* ---- offline processes (perf.data, gperftools profiles) ---------------- */

/* Opens f read-only; true when it is an ELF file whose GNU build id is
 * bid (any ELF file when bid_len is 0).  *fd is the open file then. */
static bool offline_try(const char *f, const uint8_t *bid, size_t bid_len, int *fd)
{
	*fd = open(f, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return false;
	Elf *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	bool ok = elf && elf_kind(elf) == ELF_K_ELF;
	if (ok && bid_len) {
		const void *got;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &got);
		ok = n == (ssize_t)bid_len && memcmp(got, bid, bid_len) == 0;
	}
	if (elf)
		elf_end(elf);
	if (!ok) {
		close(*fd);
		*fd = -1;
	}
	return ok;
}

/* The file for (path, build id) as symbolize_offline_find() says; *fd is
 * open on it.  Returns the malloc'd path, or NULL. */
static char *offline_open(const char *path, const uint8_t *bid, size_t bid_len,
                          const char *binary_path, int *fd)
{
	char *hex = bid_len ? hex_of(bid, bid_len) : NULL;
	const char *base = base_of(path);
	char *cand = NULL;

	*fd = -1;
	if (bid_len && !hex)
		return NULL;
	for (const char *d = binary_path; d && *d;) {
		size_t dl = strcspn(d, ":");
		for (int k = 0; k < 3; k++) {
			int n = k == 0 ? (hex ? asprintf(&cand, "%.*s/%s/%s", (int)dl, d, hex, base)
			                      : -2)
			        : k == 1 ? asprintf(&cand, "%.*s/%s", (int)dl, d, path)
			                 : asprintf(&cand, "%.*s/%s", (int)dl, d, base);
			if (n == -2)
				continue;
			if (n < 0) {
				free(hex);
				return NULL;
			}
			if (offline_try(cand, bid, bid_len, fd))
				goto found;
			free(cand);
			cand = NULL;
		}
		d += dl;
		d += *d == ':';
	}
	if (hex) {
		const char *home = getenv("HOME");
		for (int k = 0; k < 2; k++) {
			int n = k == 0 ? (home ? asprintf(&cand, "%s/.debug/.build-id/%.2s/%s/elf",
			                                  home, hex, hex + 2)
			                       : -2)
			               : asprintf(&cand, "/usr/lib/debug/.build-id/%.2s/%s.debug",
			                          hex, hex + 2);
			if (n == -2)
				continue;
			if (n < 0) {
				free(hex);
				return NULL;
			}
			if (offline_try(cand, bid, bid_len, fd))
				goto found;
			free(cand);
			cand = NULL;
		}
	}
	if (path[0] == '/' && offline_try(path, bid, bid_len, fd)) {
		cand = strdup(path);
		if (cand)
			goto found;
		close(*fd);
		*fd = -1;
	}
	free(hex);
	return NULL;
found:
	free(hex);
	return cand;
}

char *symbolize_offline_find(const char *path, const uint8_t *build_id, size_t build_id_len,
                             const char *binary_path)
{
	int fd;
	char *f = offline_open(path, build_id, build_id_len, binary_path, &fd);

	if (fd >= 0)
		close(fd);
	return f;
}

/* The module of (path, build id): one already open with that build id
 * (or that file), else the file found and opened now; NULL when none
 * can be found.  Returns 0 or -ENOMEM. */
static int offline_module_find(struct symbolize *s, const char *path, const uint8_t *bid,
                               size_t bid_len, const char *binary_path, struct module **out);
static int offline_stub(struct symbolize *s, const char *path, const uint8_t *bid, size_t bid_len,
                        struct module **out);

/* The (path, build id) key of offline_tab, in a malloc'd buffer. */
static char *offline_key(const char *path, const uint8_t *bid, size_t bid_len, size_t *len,
                         uint64_t *h)
{
	size_t pl = strlen(path);
	char *k = malloc(pl + 1 + bid_len);
	if (!k)
		return NULL;
	memcpy(k, path, pl + 1);
	if (bid_len)
		memcpy(k + pl + 1, bid, bid_len);
	*len = pl + 1 + bid_len;
	uint64_t x = 1469598103934665603ull;
	for (size_t i = 0; i < *len; i++)
		x = (x ^ (uint8_t)k[i]) * 1099511628211ull;
	*h = x ? x : 1;
	return k;
}

/* The module (or stub) for (path, build id), found once and then kept in
 * offline_tab.  Returns 0 or -ENOMEM. */
static int offline_module(struct symbolize *s, const char *path, const uint8_t *bid, size_t bid_len,
                          const char *binary_path, struct module **out)
{
	size_t klen;
	uint64_t h;
	char *key = offline_key(path, bid, bid_len, &klen, &h);
	int rc;

	if (!key)
		return -ENOMEM;
	if ((s->offline_n + 1) * 2 > s->offline_mask + 1) {
		size_t ncap = s->offline_tab ? (s->offline_mask + 1) * 2 : 256;
		struct offline_ent *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			free(key);
			return -ENOMEM;
		}
		for (size_t i = 0; s->offline_tab && i <= s->offline_mask; i++) {
			if (!s->offline_tab[i].h)
				continue;
			size_t j = s->offline_tab[i].h & (ncap - 1);
			while (nt[j].h)
				j = (j + 1) & (ncap - 1);
			nt[j] = s->offline_tab[i];
		}
		free(s->offline_tab);
		s->offline_tab = nt;
		s->offline_mask = ncap - 1;
	}
	size_t j = h & s->offline_mask;
	for (; s->offline_tab[j].h; j = (j + 1) & s->offline_mask) {
		struct offline_ent *e = &s->offline_tab[j];
		if (e->h == h && e->key_len == klen && memcmp(e->key, key, klen) == 0) {
			free(key);
			*out = e->mod;
			return 0;
		}
	}
	rc = offline_module_find(s, path, bid, bid_len, binary_path, out);
	if (rc == 0 && !*out)
		rc = offline_stub(s, path, bid, bid_len, out);
	if (rc < 0) {
		free(key);
		return rc;
	}
	s->offline_tab[j] = (struct offline_ent){h, key, klen, *out};
	s->offline_n++;
	return 0;
}

static int offline_module_find(struct symbolize *s, const char *path, const uint8_t *bid,
                               size_t bid_len, const char *binary_path, struct module **out)
{
	struct stat st;
	int fd;

	*out = bid_len ? module_by_build_id(s, bid, bid_len) : NULL;
	if (*out)
		return 0;
	char *found = offline_open(path, bid, bid_len, binary_path, &fd);
	if (!found)
		return 0;
	free(found);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	size_t b = (size_t)(((unsigned long long)st.st_dev * 31u + st.st_ino) % FILE_BUCKETS);
	for (struct file_ent *fe = s->files[b]; fe; fe = fe->next) {
		if (fe->dev == (unsigned long long)st.st_dev &&
		    fe->ino == (unsigned long long)st.st_ino) {
			close(fd);
			*out = fe->mod;
			return 0;
		}
	}
	struct module *m;
	int rc = module_new(path, fd, &m);
	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;
	struct module *same =
	        m->build_id_len ? module_by_build_id(s, m->build_id, m->build_id_len) : NULL;
	if (same) {
		module_free(m);
		m = same;
	} else {
		m->next = s->modules;
		s->modules = m;
		s->stats.modules++;
		if (s->hooks.module && m->is_elf)
			s->hooks.module(s->hooks.ctx, m, m->fd, m->path, m->build_id,
			                m->build_id_len);
	}
	struct file_ent *fe = calloc(1, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	fe->dev = (unsigned long long)st.st_dev;
	fe->ino = (unsigned long long)st.st_ino;
	fe->mod = m;
	fe->next = s->files[b];
	s->files[b] = fe;
	*out = m;
	return 0;
}

/* A module for a file that cannot be found: no symbols, so every address
 * in it is "[basename]", as perf script shows such a file, and its
 * frames keep the path and the recorded build id.  One per (path, build
 * id), on the module list so that symbolize_free() frees it. */
static int offline_stub(struct symbolize *s, const char *path, const uint8_t *bid, size_t bid_len,
                        struct module **out)
{
	for (struct module *m = s->modules; m; m = m->next) {
		if (m->fd < 0 && !m->is_elf && !m->dwfl && strcmp(m->path, path) == 0 &&
		    m->build_id_len == bid_len &&
		    (!bid_len || memcmp(m->build_id, bid, bid_len) == 0)) {
			*out = m;
			return 0;
		}
	}
	struct module *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = -1;
	m->dwfl_tried = true;
	m->path = strdup(path);
	if (asprintf(&m->unknown_name, "[%s]", base_of(path)) < 0)
		m->unknown_name = NULL;
	m->build_id = bid_len ? malloc(bid_len) : NULL;
	if (!m->path || !m->unknown_name || (bid_len && !m->build_id)) {
		module_free(m);
		return -ENOMEM;
	}
	if (bid_len)
		memcpy(m->build_id, bid, bid_len);
	m->build_id_len = bid_len;
	m->next = s->modules;
	s->modules = m;
	*out = m;
	return 0;
}

int symbolize_offline_process(struct symbolize *s, pid_t pid, const char *binary)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->binary = strdup(binary);
	p->build_id_hex = strdup("");
	if (!p->binary || !p->build_id_hex || proc_names(p) < 0) {
		proc_free(p);
		return -ENOMEM;
	}
	for (char *c = p->binary; *c; c++)
		if (*c == ' ')
			*c = '_';
	/* Never read again from /proc: the recording is all there is. */
	p->maps_read = INT64_MAX;
	struct proc **pp = proc_slot(s, pid);
	if (*pp) {
		p->next = (*pp)->next;
		proc_free(*pp);
	}
	*pp = p;
	s->stats.processes++;
	return 0;
}

int symbolize_offline_map(struct symbolize *s, pid_t pid, uint64_t start, uint64_t end,
                          uint64_t pgoff, const char *path, const uint8_t *build_id,
                          size_t build_id_len, const char *binary_path)
{
	struct proc *p = proc_find(s, pid);
	int rc;

	if (end <= start)
		return 0;
	if (!p) {
		rc = symbolize_offline_process(s, pid, base_of(path));
		if (rc < 0)
			return rc;
		p = proc_find(s, pid);
	}
	struct mapping mp = {.start = start, .end = end, .pgoff = pgoff};
	if (path[0] == '/') {
		rc = offline_module(s, path, build_id, build_id_len, binary_path, &mp.mod);
		if (rc < 0)
			return rc;
	} else if (strcmp(path, "[vdso]") == 0) {
		mp.mod = vdso_module(s);
		if (!mp.mod)
			mp.special = "[[vdso]]";
	}
	if (mp.mod && !p->nmaps && mp.mod->build_id_len && strcmp(base_of(path), p->binary) == 0) {
		char *hex = hex_of(mp.mod->build_id, mp.mod->build_id_len);
		if (!hex)
			return -ENOMEM;
		free(p->build_id_hex);
		p->build_id_hex = hex;
	}

	/* Drop what the new mapping covers, then insert it in order. */
	size_t o = 0;
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].end <= start || p->maps[i].start >= end)
			p->maps[o++] = p->maps[i];
	p->nmaps = o;
	struct mapping *nm = realloc(p->maps, (p->nmaps + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->maps = nm;
	size_t at = p->nmaps;
	while (at > 0 && p->maps[at - 1].start > start)
		at--;
	memmove(p->maps + at + 1, p->maps + at, (p->nmaps - at) * sizeof(*nm));
	p->maps[at] = mp;
	p->nmaps++;
	return 0;
}

/* ---- names exactly as perf prints them ---------------------------------- */

char *symbolize_name_perf(const char *raw)
{
	const char *at = strchr(raw, '@');
	size_t base = at && at != raw ? (size_t)(at - raw) : strlen(raw);
	char *bare = strndup(raw, base), *dem = NULL, *out;

	if (!bare)
		return NULL;
	if (strncmp(bare, "_Z", 2) == 0) {
		/* perf's demangle_sym: no options, so no parameters and no
		 * return type ("wi::lts_p<...>", not "bool wi::lts_p<...>(...)") */
		dem = cplus_demangle(bare, DMGL_NO_OPTS);
		if (dem)
			strip_rust_hash(dem);
	} else if (strncmp(bare, "_R", 2) == 0) {
		dem = rust_demangle(bare, 0);
	}
	const char *name = dem ? dem : bare;
	if (asprintf(&out, "%s%s", name, raw + base) < 0)
		out = NULL;
	free(dem);
	free(bare);
	if (out)
		out[import_tidy(out, strlen(out))] = '\0';
	return out;
}

void symbolize_set_perf_names(struct symbolize *s, bool on)
{
	s->perf_names = on;
}
