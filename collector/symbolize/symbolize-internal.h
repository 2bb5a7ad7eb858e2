/*
 * symbolize-internal.h — what the parts of the symbolizer share (see
 * symbolize.h for its contract): the structs of modules, processes and
 * kernel names, and the functions one part calls in another.
 *   symbolize.c      user lookups and the symbolizer's lifetime
 *   names.c          demangling and tidying names (and perf's own), shared name blocks
 *   modules.c        ELF files: build ids, libdwfl, symbol tables, PLT
 *   procs.c          process snapshots, their maps, JIT perf maps
 *   kernel.c         kernel addresses
 *   python.c         CPython's code objects
 *   offline-maps.c   processes described by a profile (perf.data...)
 *   import-symbols.c the importers' struct import_symbols over all this
 *   trust.c          opening files another user controls, process roots
 */
#ifndef FLAMEFS_SYMBOLIZE_INTERNAL_H
#define FLAMEFS_SYMBOLIZE_INTERNAL_H

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
#include "ksym-internal.h"
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
/* A perf map is read up to this many bytes (a process could otherwise
 * make the collector read and hold any amount); the rest is ignored. */
#define JIT_MAP_MAX_BYTES (64u << 20)
/* ...and up to this many entries (about 60 bytes each in memory). */
#define JIT_MAP_MAX_ENTRIES (1u << 20)
/* Over all processes' perf maps together, at most this many entries and
 * bytes of names are held: a map read past them keeps what fits (counted
 * in symbolize_stats.jit_capped). */
#define JIT_TOTAL_MAX_ENTRIES SYMBOLIZE_JIT_TOTAL_ENTRIES
#define JIT_TOTAL_MAX_BYTES   SYMBOLIZE_JIT_TOTAL_BYTES
/* The largest ELF or debug file opened for a process (it is mapped, not
 * read whole), and the largest one whose CRC-32 is computed to check a
 * .gnu_debuglink (that reads it whole). */
#define SYM_FILE_MAX     (4ull << 30)
#define SYM_CRC_FILE_MAX (256ull << 20)

/* sym_open_checked() flags.  FOLLOW: the last component may be a link
 * (the kernel's own /proc/PID/map_files entries); IN_ROOT: dirfd is a
 * process's root, the path is resolved inside it without following any
 * symlink. */
#define SYM_OPEN_FOLLOW  1u
#define SYM_OPEN_IN_ROOT 2u

/* A process's root directory as an O_PATH descriptor (/proc/PID/root),
 * shared by the snapshots and modules seen through it; one per (mount
 * namespace, root directory).  refs: its holders, the symbolizer's list
 * being one. */
struct sym_root {
	int fd;
	unsigned long long ns; /* inode of /proc/PID/ns/mnt */
	dev_t dev;
	ino_t ino;
	unsigned refs;
	struct sym_root *next;
};

/* What JIT names all processes hold (JIT_TOTAL_MAX_*). */
struct jit_budget {
	size_t entries, bytes;
};

/* One function inlined at an address (symbolize_set_inline). */
struct inl {
	char *name; /* tidied name with "_[i]", owned */
	char *file; /* where this frame is at the address, or NULL; owned */
	uint32_t line;
};

/* One resolved address of a module. */
struct symres {
	uint64_t addr;    /* ELF virtual address; 0 marks a free slot */
	const char *name; /* tidied name: the module's (its msym's, or unknown_name) */
	char *file;       /* source file or NULL, owned */
	uint32_t line;
	uint8_t kind;
	uint16_t ninl; /* inlined functions at addr, outermost first */
	/* An unnamed address (kind STORE_FRAME_UNKNOWN): the ELF virtual
	 * address where the function holding it starts, from the module's
	 * .eh_frame (the FDE that covers it), or 0 when none does. */
	uint64_t start;
	struct inl *inl; /* owned; NULL when ninl is 0 */
};

/* The addresses one FDE covers, [start, end). */
struct fde_range {
	uint64_t start, end;
};

/* One function symbol of a module, from its symbol table. */
struct msym {
	uint64_t addr, size;
	const char *name; /* owned by the module's libdwfl session */
	/* symbolize_symbol(name), made at its first lookup: 1 + its index in
	 * the module's tidy[], 0 before (an index, not a pointer: it fits
	 * the padding, and a module has tens of thousands of symbols and
	 * meets a few thousand functions). */
	uint32_t tidy;
	uint8_t rank; /* binding preference, as perf's: global 2, local 1, weak 0 */
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
	uint64_t entry;  /* e_entry */
	uint16_t e_type; /* ET_EXEC, ET_DYN...; 0 when not ELF */
	/* Where a program's objects lie in a process (symbolize_keep_layout),
	 * or NULL; nlm: the loader's list it was taken with (0: just after
	 * the exec) */
	struct symbolize_layout *layout;
	size_t nlayout, layout_nlm;
	/* The file open, as fstat says (device in the kernel's encoding):
	 * the module's identity.  A module is one file, never shared with
	 * another that claims the same build id. */
	unsigned long long dev, ino;
	struct sym_root *root; /* where its debug link is looked for, or NULL
	                        * (offline: the importer's own view); a ref */
	struct segment *segs;
	size_t nsegs;
	int fd; /* until handed to libdwfl; -1 after */
	bool is_elf;
	bool dwfl_tried;
	bool offline_view;      /* a profile's file: its debug link is looked for
	                         * in the importer's own view (no process root) */
	bool debuglink_refused; /* its debug link's name or file was refused */
	Dwfl *dwfl;
	Dwfl_Module *dmod;
	struct msym *syms; /* sorted by addr; built at the first lookup */
	size_t nsyms;
	char *plt_names; /* "NAME@plt" strings of the PLT entries in syms */
	char **tidy;     /* the functions' names made (msym.tidy), owned */
	size_t ntidy, tidy_cap;
	struct fde_range *fdes; /* its .eh_frame's FDEs by start (fdes.c) */
	size_t nfdes;
	bool fdes_loaded;
	/* Or, when .eh_frame_hdr holds a usable search table (fdes.c):
	 * its entries, and the sections they point into; all owned by
	 * the module's Elf.  fde_table NULL: the list above serves. */
	const uint8_t *fde_table;
	size_t fde_table_n;
	uint64_t fde_hdr_addr, eh_addr;
	Elf_Data *eh_data;
	bool fde_hdr_tried;
	struct symres *cache; /* open addressing on addr, power-of-two size */
	size_t cache_cap, cache_used;
	struct symbolize_python *python; /* the interpreter in it, or NULL; owned */
	struct proc_names *names;        /* of snapshots named from it, or NULL; a reference */
	/* symbolize_sweep(): set by each use (sym_module_touch) and by the
	 * sweep's mark; the sweep's time when it last found it set; the
	 * sweep's state (SWEEP_*). */
	bool used;
	int64_t last_used;
	uint8_t sweep;
	struct module *next; /* every module, for the build-id search */
};

/* A module that a snapshot maps, that an exec or the loader's hook is
 * named from, or that a lookup resolves in is used: kept at the next
 * symbolize_sweep() and for the grace period after it. */
static inline void sym_module_touch(const struct module *m)
{
	((struct module *)m)->used = true;
}

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

/* A process's binary name and build id (hex, "" when none) in one block,
 * shared by the snapshots of a program named from its module (which keeps
 * a reference), by a fork's copies and by re-reads of the same program:
 * under churn a snapshot is made for every fork, exec and loader hook,
 * and two string copies each would be many of the collector's malloc
 * calls.  refs: the holders; sym_names_put() frees at the last. */
struct proc_names {
	unsigned refs;
	const char *binary, *build_id_hex; /* in data */
	char data[];
};

/* A new block of binary (blen bytes) and the hex of build id bid (n bytes,
 * 0: none), with one reference; NULL when out of memory. */
struct proc_names *sym_names_new(const char *binary, size_t blen, const uint8_t *bid, size_t n);
/* Another reference to names (not NULL). */
struct proc_names *sym_names_get(struct proc_names *names);
/* Drops a reference (accepts NULL). */
void sym_names_put(struct proc_names *names);

struct proc {
	pid_t pid;
	struct proc_names *names; /* a reference; binary and build_id_hex are in it */
	const char *binary;
	const char *build_id_hex;
	char jit_path[32];    /* "/tmp/perf-PID.map" */
	char jit_unknown[32]; /* "[perf-PID.map]" */
	struct mapping *maps;
	size_t nmaps;
	struct jit_sym *jit;
	size_t njit;
	size_t jit_bytes;          /* of names, counted in budget */
	struct jit_budget *budget; /* the symbolizer's, once a map was read */
	struct sym_root *root;     /* the process's root (its /tmp), a ref, or NULL */
	uid_t uid;                 /* its effective user when root was taken */
	bool offline;              /* described by a profile: no live process */
	bool jit_refused;          /* its perf map was refused (counted once) */
	off_t jit_size;            /* size of the perf map when last read */
	int64_t jit_mtime;         /* its mtime then (ns) */
	uint64_t jit_ino;          /* its inode then */
	bool jit_exists;
	bool jit_partial;             /* that read left out an unterminated last line */
	uint64_t jit_version;         /* symbolize_jit_version() */
	int64_t jit_checked;          /* monotonic ns of the last look, 0: never */
	int64_t maps_read;            /* monotonic ns of the maps snapshot */
	bool miss_unread;             /* an address fell outside these maps too soon
	                      * after they were read to read them again */
	bool at_exec;                 /* taken at exec: the loader had not mapped the
	                      * libraries yet */
	uint32_t gen;                 /* exec count (symbolize_exec) */
	pid_t parent;                 /* forked from (symbolize_inherit), 0: unknown */
	const struct module *exe_mod; /* the executable's module, or NULL, */
	uint64_t exe_start;           /* mapped first here */
	bool exited;                  /* symbolize_exited(): freed at symbolize_reap() */
	bool inherited;               /* copied from its parent (sym_proc_copy) */
	bool placed;                  /* its maps placed from a layout, as the BPF side placed
	              * the walker's list: the process hook is not told */
	struct proc *before;          /* the snapshot before the last exec (whose own
	                       * before goes on, SYM_GENERATIONS in all), or NULL */
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

/* A named Python code object (python.c): keyed by (pid, code,
 * check); name NULL when it could not be named. */
struct pyent {
	bool used;
	bool denied; /* not named: process_vm_readv was refused (EPERM) */
	pid_t pid;   /* 0: a code object in an interpreter's file (mod) */
	uint32_t check;
	uint64_t code;            /* its address; pid 0: - the load bias */
	const struct module *mod; /* pid 0: the interpreter's module */
	const char *name, *file;  /* interned */
	int firstlineno;
	uint8_t *linetable; /* owned */
	size_t linetable_len;
};

struct symbolize {
	struct proc *procs[PROC_BUCKETS];
	struct sym_root *roots; /* every root held (trust.c) */
	char *refused_first;    /* offline: the first file refused, or NULL */
	struct jit_budget jit_budget;
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
	/* offline: (path, build id) -> module (or the stand-in for a missing file), so a file that many
	 * recorded processes map is looked for once */
	struct offline_ent *offline_tab;
	size_t offline_mask, offline_n;
	struct symbolize_hooks hooks;
	struct symbolize_stats stats;
	uint64_t jit_versions; /* the last proc.jit_version given */
	/* Python: names by code object, open addressing; the strings frames
	 * point to, interned, freed with s. */
	struct pyent *py_cache;
	size_t py_cache_cap, py_cache_n, py_cache_bytes;
	char **py_strs;
	size_t py_strs_cap, py_strs_n;
	struct symbolize_python_stats py_stats;
	/* Run on the ELF file of each module made (open as elf; m->segs
	 * read) to fill what an upper part keeps in it: symbolize_new()
	 * installs python.c's sym_python_probe, so that modules.c never
	 * calls up.  0 or -ENOMEM; NULL: none. */
	int (*module_probe)(struct module *m, Elf *elf);
};

/* names.c: "[unknown]", the name and module of a frame nothing names. */
extern const char sym_unknown_name[sizeof("[unknown]")];

static inline int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Parses lowercase or uppercase hex digits at *p into *v and moves *p
 * past them.  Returns false when there is no digit. */
static inline bool scan_hex(const char **p, uint64_t *v)
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

static inline bool scan_dec(const char **p, uint64_t *v)
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

static inline bool scan_char(const char **p, char want)
{
	if (**p != want)
		return false;
	(*p)++;
	return true;
}

static inline void skip_spaces(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

const char *sym_base_of(const char *path);

/* python.c: finds an interpreter in the ELF file of m (open as
 * elf; m->segs read) and sets m->python.  0 or -ENOMEM. */
int sym_python_probe(struct module *m, Elf *elf);
/* Frees the Python names and cache. */
void sym_python_free(struct symbolize *s);
/* Drops the cached code objects of processes reaped since (at a sweep). */
void sym_python_prune(struct symbolize *s);
char *sym_hex_of(const uint8_t *b, size_t n);
const struct jit_sym *sym_jit_find(const struct proc *p, uint64_t addr);
/* The entry of jit[0..n) (sorted by start) that holds addr, or NULL. */
const struct jit_sym *sym_jit_lookup(const struct jit_sym *jit, size_t n, uint64_t addr);
/* Rate-limited sym_jit_read(p, false): a missing map is looked for again
 * after JIT_RECHECK_NS, an existing one after a third of that. */
int sym_jit_load(struct symbolize *s, struct proc *p);
/* Reads p's perf map (as jit_open() in procs.c says: inside
 * its root, owned by its user or root) again now when it changed (size, mtime or inode)
 * since the last read, or when that read left out an unterminated last
 * line and `final` is set.  Returns 1 when it read the map, 0 when it
 * did not (unchanged, missing, not a regular file), or -ENOMEM. */
int sym_jit_read(struct symbolize *s, struct proc *p, bool final);
/* Parses perf map text data[0..len) ("START SIZE NAME" lines, START and
 * SIZE in hex with or without 0x) into a malloc'd array sorted by start
 * (*out, NULL when empty; the caller frees each name and the array),
 * names tidied by symbolize_name().  Lines that do not parse, have an
 * empty name or wrap around the address space are skipped; entries past
 * JIT_MAP_MAX_ENTRIES are left out.  Without
 * `final` an unterminated last line is left out (its writer may still
 * be at it) and *partial set.  Returns the number of entries or
 * -ENOMEM. */
int sym_jit_parse(const char *data, size_t len, bool final, struct jit_sym **out, bool *partial);
/* sym_jit_parse() within a budget: at most max_entries entries and
 * max_bytes bytes of names (*capped set when one stopped it); *bytes is
 * the bytes of names kept. */
int sym_jit_parse_capped(const char *data, size_t len, bool final, size_t max_entries,
                         size_t max_bytes, struct jit_sym **out, bool *partial, size_t *bytes,
                         bool *capped);
/* Moves from's JIT state (entries and what was read) to to, a fresh
 * snapshot of the same process. */
void sym_jit_move(struct proc *to, struct proc *from);
void sym_module_free(struct module *m);
/* The module of the file (dev, ino), when one was opened, or NULL. */
struct module *sym_module_by_file(const struct symbolize *s, unsigned long long dev,
                                  unsigned long long ino);
/* The module of the file p maps at [start, end), which the maps line
 * names (path, dev, ino): known, or opened now (map_files, else the path
 * inside p's root when it is still that file).  Returns 0 (*out NULL
 * never), -ENOMEM, or another -errno when the file cannot be opened or
 * is refused (counted in stats.files_refused). */
int sym_module_get(struct symbolize *s, struct proc *p, uint64_t start, uint64_t end,
                   const char *path, unsigned long long dev, unsigned long long ino,
                   struct module **out);
/* Files m under (dev, ino) for sym_module_by_file().  0 or -ENOMEM. */
int sym_file_add(struct symbolize *s, struct module *m, unsigned long long dev,
                 unsigned long long ino);
int sym_module_lookup(struct symbolize *s, struct module *m, uint64_t vaddr, struct symres **out);
/* fdes.c: the ELF virtual address where the function holding vaddr
 * starts, from the FDEs of m's .eh_frame (listed at the first call), or 0
 * when none covers it or m has no libdwfl session. */
uint64_t sym_module_function_start(struct module *m, uint64_t vaddr);
/* Empties m's cache of resolved addresses (its functions' names stay:
 * the msyms own them).  Only where no frame from it is still held. */
void sym_module_cache_clear(struct module *m);
/* A module of the file open on fd at path (the module takes fd),
 * probed by s->module_probe.  0 or -errno. */
int sym_module_new(const struct symbolize *s, const char *path, int fd, struct module **out);
/* sym_module_new() reading the file through elf, a libelf descriptor of
 * fd (ELF_C_READ_MMAP) or NULL; the module takes fd and ends elf,
 * whatever it returns. */
int sym_module_new_elf(const struct symbolize *s, const char *path, int fd, Elf *elf,
                       struct module **out);
/* Adds m, just opened, to s's modules and tells the module hook.  A
 * module is never shared by two files that claim one build id. */
void sym_module_register(struct symbolize *s, struct module *m);
/* symbolize_sweep() without the Python prune (which symbolize.c runs
 * after it): marks, tells the forget hook, frees; the number freed. */
size_t sym_modules_sweep(struct symbolize *s, int64_t grace_ns);
bool sym_module_vaddr(const struct module *m, uint64_t off, uint64_t *vaddr);
int sym_proc_copy(const struct proc *from, pid_t pid, struct proc **out);
struct proc *sym_proc_find(const struct symbolize *s, pid_t pid);
struct proc *sym_proc_find_gen(const struct symbolize *s, pid_t pid, uint32_t gen);
void sym_proc_free(struct proc *p);
/* Programs kept per process: the current one and those before its last
 * execs, for samples still to be drained. */
#define SYM_GENERATIONS 8
/* Makes old (and its own earlier ones) the programs before p, keeping
 * SYM_GENERATIONS in all and freeing the rest. */
void sym_proc_keep_before(struct proc *p, struct proc *old);
void sym_proc_install(struct symbolize *s, struct proc *p);
/* Installs np, a fresh read of cur's process (cur is its current
 * snapshot), and returns the snapshot that stands for what cur ran: np,
 * or cur itself, kept as np's generation before, when np found another
 * program (an exec whose event is still queued). */
struct proc *sym_proc_reread(struct symbolize *s, struct proc *cur, struct proc *np);
void sym_proc_names(struct proc *p);
/* Gives p the reference `names` (NULL: out of memory, -ENOMEM). */
int sym_proc_set_names(struct proc *p, struct proc_names *names);
struct proc **sym_proc_slot(const struct symbolize *s, pid_t pid);
int sym_proc_snapshot(struct symbolize *s, pid_t pid, struct proc **out);
/* Takes p's root and effective user from /proc/PID (a live process).
 * 0, or -errno (gone: p->root stays NULL). */
int sym_proc_take_root(struct symbolize *s, struct proc *p);
struct module *sym_vdso_module(struct symbolize *s);

/* trust.c.  Opens path (relative to dirfd, or under the root dirfd with
 * SYM_OPEN_IN_ROOT) for reading, non-blocking, when it is a regular file
 * of at most max bytes, without opening anything else on the way (see
 * trust.c); *st is the file's.  Returns the descriptor or -errno
 * (-EINVAL: not a regular file, -EFBIG: larger than max). */
int sym_open_checked(int dirfd, const char *path, unsigned flags, uint64_t max, struct stat *st);
/* A device number in the kernel's encoding (major << 20 | minor). */
unsigned long long sym_kdev(dev_t d);
/* Whether name is one path component: not empty, no '/', not "." or "..". */
bool sym_plain_name(const char *name);
/* Whether path has a ".." component. */
bool sym_path_has_dotdot(const char *path);
/* pid's root (a new reference, or one shared with the snapshots in the
 * same mount namespace and root), or -errno when the process is gone. */
int sym_root_of(struct symbolize *s, pid_t pid, struct sym_root **out);
/* Another reference to r (accepts NULL). */
struct sym_root *sym_root_get(struct sym_root *r);
/* Drops a reference (accepts NULL); the root is closed by
 * sym_roots_prune() once only the list holds it. */
void sym_root_put(struct sym_root *r);
/* Closes the roots nothing else holds (all: every root, at the end). */
void sym_roots_prune(struct symbolize *s, bool all);

#endif
