/*
 * symbolize.h — turns the addresses of a sampled stack into frames named
 * the way `perf script | stackcollapse-perf.pl` names them.
 *
 * User addresses are resolved against a snapshot of the process's
 * executable mappings taken while it ran (so a process that has exited
 * since is still resolved), through elfutils libdwfl: symbol tables, then
 * debug info found by build id, .gnu_debuglink or under /usr/lib/debug.
 * Each ELF file is opened once at its first sighting and cached by build
 * id (by device and inode when it has none), until symbolize_sweep()
 * finds it unused; each resolved address is cached with it.  Kernel addresses are named by the kernel's own kallsyms
 * lookup through a BPF program (or from /proc/kallsyms, read once).  JIT
 * code is named from /tmp/perf-PID.map.  C++ and Rust legacy names are
 * demangled, then tidied like stackcollapse-perf (arguments dropped, ';'
 * turned to ':', quotes removed).  Nothing here prints or exits.
 */
#ifndef FLAMEFS_SYMBOLIZE_H
#define FLAMEFS_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "store.h"

struct import_symbols; /* import.h */

struct symbolize;

/* Creates an empty symbolizer.  Returns NULL on ENOMEM.  The caller owns
 * it and frees it with symbolize_free(). */
struct symbolize *symbolize_new(void);
void symbolize_free(struct symbolize *s); /* accepts NULL */

/* Snapshots process `pid`: its executable mappings (opening every ELF
 * file they name), its binary name and the build id of its executable.
 * Called again for a known pid it replaces the snapshot, so call it after
 * an exec and whenever the process may have mapped new code.  When the
 * process is already gone and `parent` is non-zero and known, the child
 * inherits the parent's snapshot (a fork shares its parent's mappings).
 * Returns 0, -ESRCH when neither is possible, or another -errno. */
int symbolize_snapshot(struct symbolize *s, pid_t pid, pid_t parent);

/* An exec, the process's `gen`th: symbolize_snapshot(s, pid, 0), with the
 * snapshot marked as taken before the loader mapped the libraries, so
 * that the first fork of the process reads its maps again before the
 * child copies them.  The snapshot it replaces is kept as generation
 * gen - 1 for symbolize_user_gen(), until the next exec.  Returns 0 or
 * -errno. */
int symbolize_exec(struct symbolize *s, pid_t pid, uint32_t gen);

/* Where a program's objects lie in a process, relative to each object's
 * load bias: the program, its loader, the vDSO, and the libraries the
 * loader mapped (by their place in the loader's list), in the address
 * order of the process it was taken from.  A template for the program's
 * next processes (symbolize_exec_file, symbolize_loaded_file). */
struct symbolize_python;

enum symbolize_layout_kind {
	SYMBOLIZE_LAYOUT_PROGRAM = 0,
	SYMBOLIZE_LAYOUT_LOADER,
	SYMBOLIZE_LAYOUT_VDSO,
	SYMBOLIZE_LAYOUT_LIBRARY,
};

struct symbolize_layout {
	uint64_t start, end, pgoff; /* start and end: - the object's load bias */
	const void *module;         /* a symbolize_map.module */
	/* the interpreter whose _PyEval_EvalFrameDefault this mapping holds,
	 * as symbolize_map.python */
	const struct symbolize_python *python;
	uint8_t kind; /* enum symbolize_layout_kind */
	uint8_t lm;   /* LIBRARY: its place in the loader's list */
};

/* Keeps, for the program module `exe`, the layout of pid, which runs it
 * under the loader module `loader`: with lm_addr[0 .. nlm), the load
 * biases (l_addr) of the loader's list, the libraries too; with nlm 0,
 * the program, the loader and the vDSO (just after the exec).  Mappings
 * of other files are left out.  Returns 0, -ENOENT when pid is not known
 * or maps neither file, or -ENOMEM. */
int symbolize_keep_layout(struct symbolize *s, pid_t pid, const void *exe, const void *loader,
                          const uint64_t *lm_addr, size_t nlm);

/* The layout kept for exe, *n entries (NULL, 0 when none); owned by s. */
const struct symbolize_layout *symbolize_get_layout(const struct symbolize *s, const void *exe,
                                                    size_t *n);

/* An exec, the process's `gen`th, of the ELF file (dev, ino) (dev in the
 * kernel's encoding, major << 20 | minor), without reading the process:
 * when that file was opened before, the new snapshot is named after it
 * (binary and build id).  With the program's, the loader's and the
 * vDSO's load biases (bias[], by enum symbolize_layout_kind; NULL when
 * not known) and a layout kept for the program, it holds their
 * mappings (and the process hook is not told: the walker's list is the
 * BPF side's); else none.  Either way the next symbolize_snapshot() or
 * symbolize_loaded_file() (the loader's hook, once the libraries are
 * mapped), or the first address outside them, completes it.  The program
 * before is kept as by symbolize_exec().  Returns 0, -ENOENT when the
 * file is not known (call symbolize_exec()), or -ENOMEM. */
int symbolize_exec_file(struct symbolize *s, pid_t pid, uint32_t gen, unsigned long long dev,
                        unsigned long long ino, const uint64_t bias[3]);

/* The loader has mapped pid's libraries, and the BPF side placed its
 * program's whole layout with bias[] (as symbolize_exec_file()) and the
 * loader's list lm_addr[0 .. nlm): a snapshot of the same generation
 * from the layout, without reading the process.  Returns 0, -ENOENT when
 * the program (dev, ino) has no layout with libraries (read the process:
 * symbolize_snapshot), or -ENOMEM. */
int symbolize_loaded_file(struct symbolize *s, pid_t pid, unsigned long long dev,
                          unsigned long long ino, const uint64_t bias[3], const uint64_t *lm_addr,
                          size_t nlm);

/* The module of pid's program in its current snapshot, and its file
 * (dev, ino); NULL when not known. */
const void *symbolize_exe_module(const struct symbolize *s, pid_t pid, unsigned long long *dev,
                                 unsigned long long *ino);

/* The module (symbolize_map.module) of the ELF file (dev, ino) when pid's
 * current snapshot maps it, else NULL. */
const void *symbolize_maps_file(const struct symbolize *s, pid_t pid, unsigned long long dev,
                                unsigned long long ino);

/* The ELF entry point (e_entry) of a module of symbolize_map.module. */
uint64_t symbolize_module_entry(const void *module);

/* A fork: gives child `pid` a copy of `parent`'s snapshot (a fork shares
 * its parent's mappings) without reading /proc; when the parent is not
 * known it falls back to symbolize_snapshot(s, pid, parent).  An exec
 * afterwards needs symbolize_snapshot().  Returns 0 or -errno. */
int symbolize_inherit(struct symbolize *s, pid_t pid, pid_t parent);

/* As symbolize_inherit(), where the BPF side copied the parent's walker
 * list to the child at the fork: a plain copy of the parent's snapshot is
 * not told to the process hook (the list is there). */
int symbolize_inherit_listed(struct symbolize *s, pid_t pid, pid_t parent);

/* The process pid was forked from, as symbolize_inherit() was told, or 0
 * when it is not known (a process found otherwise, or pid unknown). */
pid_t symbolize_parent(const struct symbolize *s, pid_t pid);

/* An exit: marks pid's snapshot as its last.  It stays, for samples
 * still to be drained, until symbolize_reap(). */
void symbolize_exited(struct symbolize *s, pid_t pid);

/* Frees pid's snapshot when it is still the one symbolize_exited()
 * marked; a process that took the pid since (fork) keeps its own.
 * Returns true when one was freed. */
bool symbolize_reap(struct symbolize *s, pid_t pid);

/* True when `pid` has a snapshot. */
bool symbolize_known(const struct symbolize *s, pid_t pid);

/* The basename of pid's executable (for a kernel thread its comm) and
 * the GNU build id of the executable as lowercase hex ("" when it has
 * none).  Pointers are owned by `s` and valid until the pid is
 * snapshotted again or `s` is freed.  Returns -ESRCH for an unknown pid. */
int symbolize_process(const struct symbolize *s, pid_t pid, const char **binary,
                      const char **build_id_hex);

/* Resolves one user address of `pid`.  `caller` is true for every frame
 * but the innermost: a return address, looked up one byte earlier so that
 * a call at the end of a function is charged to that function.  Fills
 * f[0] with the function, then, with symbolize_set_inline(), one frame per
 * function inlined at the address (outermost first, named "NAME_[i]",
 * kind STORE_FRAME_INLINE), at most `room` (>= 1) frames in all.  The
 * strings are owned by `s` and valid until the next symbolize_sweep() or
 * until `s` is freed.  Unknown
 * addresses still give a frame ("[unknown]" or "[module basename]").
 * Returns the number of frames filled (>= 1) or -errno (-ENOMEM). */
int symbolize_user(struct symbolize *s, pid_t pid, uint64_t addr, bool caller,
                   struct store_frame *f, size_t room);

/* For each user address addrs[i] of pid's current snapshot, the module
 * of the file mapping that holds it as mods[i] (an opaque token) and the
 * address's offset in that file as offs[i]; for an address named
 * "[unknown]" whatever it is (an unknown pid, or outside the file mappings
 * of a process whose JIT perf map was found missing a moment ago), one
 * token shared by all such addresses and offset 0; else NULL and 0 (the
 * name may depend on the process and the address).  symbolize_user() with
 * the same `caller` gives the same frames for any two addresses of any
 * processes that share (mods[i], offs[i]), until symbolize_sweep() frees
 * the module or a perf map or maps are read again.  Reads nothing. */
void symbolize_user_files(const struct symbolize *s, pid_t pid, const uint64_t *addrs, size_t n,
                          const void **mods, uint64_t *offs);

/* symbolize_process() and symbolize_user() for what pid ran at
 * generation `gen` (its exec count): the snapshot from before its last
 * exec when gen is older than the current one, else the current one. */
int symbolize_process_gen(const struct symbolize *s, pid_t pid, uint32_t gen, const char **binary,
                          const char **build_id_hex);
int symbolize_user_gen(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room);
/* The path the program pid ran at generation gen was opened by (its
 * first process's), owned by s as symbolize_user()'s strings; NULL when
 * unknown (a kernel thread, a snapshot without its executable). */
const char *symbolize_process_exe(const struct symbolize *s, pid_t pid, uint32_t gen);
/* True when gen is pid's latest known generation and its exit has not
 * been seen: what /proc/PID tells is then about that program. */
bool symbolize_current_gen(const struct symbolize *s, pid_t pid, uint32_t gen);

/* JIT code whose perf map comes late (record holds such stacks back).
 * Whether addr of pid at generation gen (looked up as symbolize_user_gen
 * does) may be named later: it lies in anonymous executable memory that
 * the process's /tmp/perf-PID.map does not cover (yet), or outside every
 * mapping of a snapshot that was not read again since an address fell
 * outside it (the reads are a second apart; code mapped since may hold
 * it). */
bool symbolize_jit_late(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t addr, bool caller);

/* Reads pid's perf map again now, whatever the time since the last look,
 * when it changed since the last read (size, mtime or inode).  A read
 * that is not `final` leaves out an unterminated last line, which its
 * writer may still be writing; `final` (the process has exited) takes it
 * too, reading the map again for it.  At most the first 64 MiB of a map
 * are read, and its first 1 048 576 entries kept.  When an address fell
 * outside pid's mappings too soon after they were read (see
 * symbolize_jit_late), the mappings are read again too, once a second at
 * most.  Returns 1 when the map was read, 0 when
 * not (unchanged, missing, not a regular file), or -ENOMEM. */
int symbolize_jit_refresh(struct symbolize *s, pid_t pid, uint32_t gen, bool final);

/* A number that changes whenever what names pid's JIT code at
 * generation gen may have changed (its perf map read, its mappings read
 * again), so that a stack found late once need be looked at again only
 * then.  0 for an unknown pid. */
uint64_t symbolize_jit_version(const struct symbolize *s, pid_t pid, uint32_t gen);

/* Whether what pid ran at generation gen has ended: its snapshot was
 * marked by symbolize_exited(), it exec'd since, or it is unknown. */
bool symbolize_gone(const struct symbolize *s, pid_t pid, uint32_t gen);

/* Resolves one kernel address.  Names come from the kernel's own kallsyms
 * lookup through a BPF program (ksym-internal.h), cached per address for the life
 * of `s`; where that program cannot be loaded, from /proc/kallsyms, read
 * whole at the first call.  Same ownership as symbolize_user(). */
int symbolize_kernel(struct symbolize *s, uint64_t addr, bool caller, struct store_frame *f);

/* Names, in one BPF program run, every address of a kernel stack ips[0..n)
 * (innermost first, so ips[0] is looked up as is and the rest as return
 * addresses) not named yet, so that the symbolize_kernel() calls that
 * follow find them cached.  Optional: does nothing when names come from
 * /proc/kallsyms.  Returns 0 or -errno (-ENOMEM). */
int symbolize_kernel_prefetch(struct symbolize *s, const uint64_t *ips, size_t n);
/* The same for addresses that symbolize_kernel() will be asked with
 * caller false, each looked up as it is (perf.data, as perf looks them
 * up). */
int symbolize_kernel_prefetch_as_is(struct symbolize *s, const uint64_t *ips, size_t n);

/* Demangles (C++ Itanium, Rust legacy and v0) and tidies a symbol name the way
 * stackcollapse-perf prints it.  Returns a malloc'd string the caller
 * frees, or NULL on ENOMEM. */
char *symbolize_name(const char *raw);

/* Whether symbolize_user() also fills file and line from DWARF (off by
 * default: it needs the debug sections, often compressed, and costs more
 * CPU and memory than the symbol lookup itself). */
void symbolize_set_lines(struct symbolize *s, bool lines);

/* Whether symbolize_user() expands the functions inlined at an address
 * into frames of their own, from DWARF (off by default, for the same
 * cost; a module without DWARF gives none). */
void symbolize_set_inline(struct symbolize *s, bool inlines);

/* ---- Python (CPython) -----------------------------------------------
 * `record` walks CPython's interpreter frames in its BPF program and
 * names their code objects here.  Where the interpreter keeps what the
 * walk and the names need is one row per Python minor version of
 * symbolize_python_layouts (python.c), x86-64 byte offsets. */
struct symbolize_python_layout {
	unsigned major, minor;
	/* _PyRuntimeState: interpreters.head, gilstate.tstate_current */
	uint16_t runtime_interp_head, runtime_tstate_current;
	uint16_t interp_threads_head; /* PyInterpreterState.threads.head */
	/* PyThreadState */
	uint16_t tstate_next, tstate_cframe, tstate_native_thread_id;
	uint16_t cframe_current_frame; /* _PyCFrame */
	/* _PyInterpreterFrame */
	uint16_t frame_code, frame_previous, frame_prev_instr, frame_is_entry;
	/* PyObject, PyVarObject */
	uint16_t object_type, var_size;
	/* PyCodeObject: the fields named, and where its bytecode begins */
	uint16_t code_firstlineno, code_filename, code_qualname, code_linetable, code_adaptive;
	/* PyBytesObject.ob_sval */
	uint16_t bytes_data;
	/* PyASCIIObject.length, .state; where a compact ASCII string's
	 * characters begin, and a compact non-ASCII one's */
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
};

/* The layout of Python major.minor, or NULL when it is not known. */
const struct symbolize_python_layout *symbolize_python_layout(unsigned major, unsigned minor);

/* A CPython interpreter found in an ELF file (python3.11, or a
 * libpython3.11.so that a program embeds), from its exported symbols.
 * Addresses are ELF virtual addresses. */
struct symbolize_python {
	uint64_t eval, eval_size;                     /* _PyEval_EvalFrameDefault */
	uint64_t runtime;                             /* _PyRuntime */
	uint64_t code_type;                           /* PyCode_Type */
	unsigned major, minor;                        /* Py_Version, else the file's name */
	const struct symbolize_python_layout *layout; /* NULL: a version not known */
};

/* What a Python frame of the walker holds besides the code object's
 * address: a check that the object read later is the one sampled, and the
 * index of its current instruction.  The check mixes the code object's
 * first line, the addresses of its file name, qualified name and line
 * table, and a digest of each of the two names' contents (a freed code
 * object's strings are often freed with it and reallocated, at the same
 * addresses, for the next one).  profile.bpf.c computes the same. */
static inline uint64_t symbolize_python_mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* The digest of a str of `len` characters: its length and whether it is
 * ASCII, and for an ASCII one its first 32 bytes and (when longer) its
 * last 32, as little-endian words, bytes past the end zero.  `chars` is
 * its characters (ASCII only). */
static inline uint64_t symbolize_python_str_digest(uint64_t h, uint64_t len, bool ascii,
                                                   const uint8_t *chars)
{
	h = symbolize_python_mix(h, len);
	h = symbolize_python_mix(h, ascii);
	if (!ascii)
		return h;
	for (int part = 0; part < 2; part++) {
		if (part == 1 && len <= 32)
			break;
		const uint8_t *from = part ? chars + len - 32 : chars;
		uint64_t n = part ? 32 : (len < 32 ? len : 32);
		for (uint64_t i = 0; i < 32; i += 8) {
			uint8_t b[8] = {0};
			for (uint64_t j = 0; j < 8 && i + j < n; j++)
				b[j] = from[i + j];
			uint64_t w = 0;
			for (int j = 7; j >= 0; j--)
				w = w << 8 | b[j];
			h = symbolize_python_mix(h, w);
		}
	}
	return h;
}

/* The check: h0 = symbolize_python_check_head(...), then the digests of
 * the qualified name and of the file name, in that order, then the low
 * 32 bits. */
static inline uint64_t symbolize_python_check_head(uint64_t firstlineno, uint64_t filename,
                                                   uint64_t qualname, uint64_t linetable)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	h = symbolize_python_mix(h, firstlineno);
	h = symbolize_python_mix(h, filename);
	h = symbolize_python_mix(h, qualname);
	return symbolize_python_mix(h, linetable);
}

/* What symbolize_python_read_code() reads: owned by the struct, freed
 * with symbolize_pycode_clear(). */
struct symbolize_pycode {
	char *qualname, *filename; /* UTF-8, NUL-terminated */
	uint8_t *linetable;
	size_t linetable_len;
	int firstlineno;
	uint32_t check; /* the check (above) of what was read */
};
void symbolize_pycode_clear(struct symbolize_pycode *c);

/* Reads `len` bytes at `addr` of the process into buf: 0 or -errno. */
typedef int (*symbolize_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Reads the code object at `addr` through `rd` with layout l: it must be
 * of type `code_type` (the process's PyCode_Type); names are at most 1024
 * bytes, the line table 64 KiB.  Returns 0, -EINVAL when what is there
 * is no code object (or a string in it is malformed), -E2BIG over a
 * bound, -ENOMEM, or rd's error. */
int symbolize_python_read_code(const struct symbolize_python_layout *l, uint64_t code_type,
                               symbolize_read_fn rd, void *ctx, uint64_t addr,
                               struct symbolize_pycode *out);

/* The line of instruction `lasti` (in code units) from a 3.11 location
 * table, or 0 when the table gives none. */
uint32_t symbolize_python_line(const uint8_t *table, size_t len, int firstlineno, uint32_t lasti);

/* Names one Python frame of pid at generation gen: the code object at
 * `code` with the walker's check and instruction index.  f is named
 * "qualname (file)", kind STORE_FRAME_PYTHON, with its file, and with
 * symbolize_set_lines() its line.  A code object that cannot be read, or
 * whose check differs (freed, and something else at its address since),
 * gives "[python: code gone]", kind UNKNOWN; one whose process's memory
 * may not be read (another user's, without CAP_SYS_PTRACE) "[python: no
 * access]".  Names are cached by (pid,
 * code, check); strings are owned by s until it is freed.  f NULL only
 * reads the code object into the cache (a drain names every code object
 * first, while the processes still live).  Returns 1 or -ENOMEM. */
int symbolize_python_frame(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t code,
                           uint32_t check, uint32_t lasti, struct store_frame *f);

/* Counts of symbolize_python_frame(), for the final report. */
struct symbolize_python_stats {
	uint64_t reads;                        /* code objects read */
	uint64_t cached;                       /* code objects cached now */
	uint64_t gone;                         /* frames whose code object could not be named */
	uint64_t unknown;                      /* interpreters found whose version is not known */
	unsigned unknown_major, unknown_minor; /* the last of them */
};
void symbolize_python_get_stats(const struct symbolize *s, struct symbolize_python_stats *st);

/* One executable mapping of a process, for the unwinder. */
struct symbolize_map {
	uint64_t start, end;
	uint64_t bias;      /* process address - ELF address, with a module */
	const void *module; /* the ELF file mapped (an identity shared by every
	                     * process mapping it), or NULL: anonymous memory
	                     * or a file that could not be read */
	/* The interpreter in the module, when this mapping holds its
	 * _PyEval_EvalFrameDefault; owned by s. */
	const struct symbolize_python *python;
};

/* The snapshot replaced mapped a Python interpreter (symbolize_map.python):
 * one that is gone is to be forgotten. */
#define SYMBOLIZE_PROCESS_HAD_PYTHON 1u
/* Copied from the parent at a fork: the BPF side copied the parent's
 * list when the fork happened, and the child may have executed another
 * program since; what exists is newer. */
#define SYMBOLIZE_PROCESS_INHERITED 2u

/* Calls made as the symbolizer learns of files and processes. */
struct symbolize_hooks {
	/* A new ELF file: fd is open on it, borrowed for the call (dup it to
	 * keep it); build_id may be NULL. */
	void (*module)(void *ctx, const void *module, int fd, const char *path,
	               const uint8_t *build_id, size_t build_id_len);
	/* pid's executable mappings, in address order, as just read or
	 * inherited (maps is borrowed for the call); flags:
	 * SYMBOLIZE_PROCESS_*. */
	void (*process)(void *ctx, pid_t pid, const struct symbolize_map *maps, size_t n,
	                unsigned flags);
	/* symbolize_sweep() is about to free `module`: called once for each
	 * file (dev, ino) it was known by (dev in the kernel's encoding), or
	 * once with dev = ino = 0 when it was known by none.  After the
	 * sweep, the pointer may name another file. */
	void (*forget)(void *ctx, const void *module, unsigned long long dev,
	               unsigned long long ino);
	void *ctx;
};

/* Sets the hooks (a copy is kept); NULL removes them. */
void symbolize_set_hooks(struct symbolize *s, const struct symbolize_hooks *h);

/* pid's executable mappings, as the process hook gets them, in a malloc'd
 * array the caller frees.  Returns 0, -ESRCH for an unknown pid, or
 * -ENOMEM. */
int symbolize_maps(const struct symbolize *s, pid_t pid, struct symbolize_map **maps, size_t *n);

/* Frees the ELF files ("modules") nothing holds any more, with their
 * symbol tables and lookup caches: a module is kept while a snapshot maps
 * it (a live process's, an exited one's until symbolize_reap(), or a
 * program one of them ran before its last exec), while it is the vDSO,
 * holds an interpreter whose code objects are cached by file, backs an
 * offline process, or is named by the layout (symbolize_keep_layout) of a
 * module kept; and for grace_ns after the last sweep that found it so, or
 * found it used since the sweep before (mapped by a snapshot, an exec or
 * the loader's hook named from it, an address resolved in it).  So a
 * program run every few seconds is not opened again each time.  The
 * forget hook hears of each module first.  Kept modules' address caches
 * past SYMBOLIZE_CACHE_MAX are emptied.  Frames returned before name
 * strings of the freed modules and the emptied caches' file and inline
 * names: store them before sweeping.  Returns the
 * number of modules freed. */
size_t symbolize_sweep(struct symbolize *s, int64_t grace_ns);

/* A module kept by symbolize_sweep() whose cache of resolved addresses
 * holds more than this many is emptied there (its functions' names stay):
 * the cache follows the addresses met since, not every address ever met.
 * About 100 bytes an address (more with file:line or inline frames). */
#define SYMBOLIZE_CACHE_MAX 4096u

/* Numbers for the final report. */
struct symbolize_stats {
	uint64_t processes;     /* snapshots taken */
	uint64_t inherited;     /* of which taken from a parent */
	uint64_t execs_named;   /* execs named from their file, not read
	                       * (symbolize_exec_file) */
	uint64_t loaded_named;  /* processes named whole from their program's
	                        * layout (symbolize_loaded_file) */
	uint64_t modules;       /* distinct ELF files opened */
	uint64_t lookups;       /* user lookups not answered by the cache */
	uint64_t reaped;        /* snapshots freed after their process exited */
	uint64_t modules_freed; /* by symbolize_sweep() */
	/* Resolved addresses: cached in all modules at the last sweep, the
	 * most one module held at a sweep, and the caches emptied there for
	 * holding more than SYMBOLIZE_CACHE_MAX. */
	uint64_t addrs_cached, addrs_cached_max, caches_emptied;
	/* Files of other users not trusted: mapped files not opened (not a
	 * regular file, over 4 GiB, or no longer the file the maps line
	 * names), modules whose .gnu_debuglink was refused (a name with '/'
	 * or "..", or its file not a regular file of a bounded size), perf
	 * maps ignored (owned by neither the process's user nor root, or
	 * not a regular file), and perf maps cut short by the bound over
	 * all processes' JIT names. */
	uint64_t files_refused, debuglinks_refused, jit_maps_refused, jit_capped;
};
/* The bound over all processes' perf maps: entries, and bytes of names. */
#define SYMBOLIZE_JIT_TOTAL_ENTRIES (1u << 21)
#define SYMBOLIZE_JIT_TOTAL_BYTES   (128u << 20)
void symbolize_get_stats(const struct symbolize *s, struct symbolize_stats *st);
/* The first file an offline process named that was refused (owned by s),
 * or NULL. */
const char *symbolize_refused_first(const struct symbolize *s);

/* libdwfl's find_debuginfo callback as the symbolizer uses it (build id
 * under /usr/lib/debug, then a .gnu_debuglink that is a plain name, its
 * file opened only when regular and bounded, then debuginfod when
 * DEBUGINFOD_URLS is set), for other libdwfl sessions over the same
 * files (import-symbols.c's unwinding).  The types are libdwfl's
 * (Dwfl_Module, GElf_Addr, GElf_Word). */
struct Dwfl_Module;
int symbolize_find_debuginfo(struct Dwfl_Module *mod, void **userdata, const char *modname,
                             uint64_t base, const char *file_name, const char *debuglink,
                             uint32_t crc, char **debuginfo_file_name);

/* ---- offline: processes known only from a recording -------------------
 * perf.data and gperftools profiles name the files a process had mapped;
 * these calls build a process from them instead of from /proc, and
 * symbolize_user() then resolves its addresses as for a live one (the
 * process is never looked up in /proc).  Files are found, in order:
 * under each directory of `binary_path` (colon-separated, may be NULL) as
 * DIR/BUILDID/BASENAME, DIR/FULL/PATH and DIR/BASENAME, like pprof's
 * PPROF_BINARY_PATH; by build id in perf's cache
 * ($HOME/.debug/.build-id/xx/rest/elf) and in /usr/lib/debug/.build-id
 * (xx/rest.debug, for its symbols); then at the path itself.  A file
 * whose build id differs from the recorded one is not used. */

/* Creates (or, after an exec, replaces) offline process pid named
 * `binary` (its comm or executable base name), with no mappings yet.
 * Returns 0 or -ENOMEM. */
int symbolize_offline_process(struct symbolize *s, pid_t pid, const char *binary);

/* Adds an executable mapping [start, end) of `path` at file offset pgoff
 * to offline process pid (created, named by path's base name, if
 * unknown), replacing any mapping it overlaps.  build_id (raw bytes, may
 * be NULL) picks the file.  A file that cannot be found still names its
 * frames "[basename]".  The first mapping sets the process's build id
 * when it is the executable's (binary == base name).  Returns 0 or
 * -ENOMEM. */
int symbolize_offline_map(struct symbolize *s, pid_t pid, uint64_t start, uint64_t end,
                          uint64_t pgoff, const char *path, const uint8_t *build_id,
                          size_t build_id_len, const char *binary_path);

/* What symbolize_offline_place() made of a pc (import.h's enum
 * import_place has the same values and meanings). */
enum symbolize_place {
	SYMBOLIZE_PLACE_NO_FILE = 0, /* no ELF file with a build id at path */
	SYMBOLIZE_PLACE_DONE = 1,    /* placed: f->offset and f->build_id set */
	SYMBOLIZE_PLACE_ADDRESS = 2, /* past an ET_DYN file's loaded bytes: an address */
	SYMBOLIZE_PLACE_NOT = 3,     /* in no loaded part, or in a named function */
};

/* Places pc, which perf script text printed for an unnamed frame of the
 * file at path (absolute) with no mapping record to read it against, in
 * that file: in an ET_EXEC file a pc inside a PT_LOAD segment's
 * [p_vaddr, p_vaddr + p_filesz) is an address in it, and one below the
 * lowest p_vaddr and below the end of the loaded bytes (the largest
 * p_offset + p_filesz) an offset; in an ET_DYN file (PIE, shared library)
 * a pc below that end is an offset and a larger one an address, which
 * cannot be placed.  The pc is looked up as itself (a return address is
 * not moved back a byte: the text does not say which pcs are).  The file
 * is found as symbolize_offline_map() finds it (binary_path first),
 * opened once per path for the symbolizer's life, and must be an ELF file
 * with a GNU build id.  On SYMBOLIZE_PLACE_DONE f is the unnamed frame
 * symbolize_user() would give: module path, build id (owned by s),
 * "[basename]", and the file offset of the start of the function (its
 * .eh_frame FDE; the pc's own offset where none covers it).  Returns an
 * enum symbolize_place, or -ENOMEM. */
int symbolize_offline_place(struct symbolize *s, const char *path, uint64_t pc,
                            const char *binary_path, struct store_frame *f);

/* The path of the file symbolize_offline_map() would open for (path,
 * build_id), in a malloc'd string the caller frees, or NULL when none is
 * found (or on ENOMEM). */
char *symbolize_offline_find(const char *path, const uint8_t *build_id, size_t build_id_len,
                             const char *binary_path);

/* The name of an ELF symbol `raw` as a frame: without its symbol version
 * ("memcpy@@GLIBC_2.14" and "cfree@GLIBC_2.2.5" name "memcpy" and
 * "cfree": a version is not part of the function's name, and perf prints
 * it or not depending on which alias of an address it meets first), with
 * perf's "@plt" mark of a PLT entry kept ("malloc@plt"); demangled (only
 * the part before "@plt") and tidied like symbolize_name().  With `perf`,
 * C++ names are demangled as perf script demangles them, without
 * parameters or return type.  Every importer and the live collector name
 * ELF symbols through this.  Returns a malloc'd string, or NULL on ENOMEM. */
char *symbolize_symbol(const char *raw, bool perf);

/* Whether symbolize_user() names symbols as perf script does,
 * symbolize_symbol(raw, true) (off by default: the live collector
 * demangles fully before tidying). */
void symbolize_set_perf_names(struct symbolize *s, bool on);

/* ---- naming later (later.c) ----
 * Frames stored without a name keep their module's path, build id and a
 * file offset (store.h); these name such an offset afterwards, from the
 * module's own file or debug files found by build id (later.c says
 * where it looks, in order). */
struct symbolize_later_opts {
	const char *const *dirs; /* debug directories, searched after /usr/lib/debug */
	size_t ndirs;
	bool no_debuginfod; /* ask no debuginfod server (symbolize_later_run() sets it
	                       for the rest of a pass once the servers failed) */
};
struct symbolize_later;
/* Finds symbols for the module (path, build id).  *out is the caller's,
 * freed with symbolize_later_free().  0, -ENOENT (no symbols found),
 * -ENOMEM, -ENOTSUP (built without elfutils) or another -errno. */
int symbolize_later_open(const struct symbolize_later_opts *o, const char *path,
                         const uint8_t *build_id, size_t build_id_len,
                         struct symbolize_later **out);
/* The name of the function holding file offset `offset`: 1 with *name
 * (malloc'd, the caller's), 0 when no function symbol holds it, -ENOMEM. */
int symbolize_later_name(struct symbolize_later *m, uint64_t offset, char **name);
/* The file the symbols came from (owned by m). */
const char *symbolize_later_source(const struct symbolize_later *m);
void symbolize_later_free(struct symbolize_later *m); /* accepts NULL */

/* A naming pass over a store: what `flamefs-collect symbolize` does, and
 * `record` on its own while it records.  symbolize_later_plan() copies
 * the store's unnamed frames (those that keep a build id and an offset)
 * out of it; symbolize_later_run() names them, touching no store, so that
 * it may run on another thread while the store is written;
 * symbolize_later_apply() adds the renames to a batch the caller commits.
 * Results stay in the pass, readable after the run. */
struct symbolize_later_module {
	const char *path; /* as its frames keep it */
	const uint8_t *build_id;
	size_t build_id_len;
};
struct symbolize_later_result {
	struct symbolize_later_module m; /* owned by the pass */
	size_t frames;                   /* its unnamed frames in the pass */
	size_t named;                    /* of which symbolize_later_run() named */
	const char *source; /* where the symbols came from (owned by the pass), or NULL */
	int error;          /* symbolize_later_open()'s: 0, -ENOENT (no symbols found)... */
};
struct symbolize_later_frame {
	uint32_t id;     /* the store's frame id */
	uint32_t module; /* the index of its module's result */
	uint64_t offset; /* the frame's file offset */
	char *name;      /* NULL until named; owned by the pass */
};
struct symbolize_later_pass;
/* The unnamed frames of store s, of the modules only[0..nonly) (all when
 * only is NULL), sorted by module and offset, into a new pass *out (the
 * caller's, freed with symbolize_later_pass_free()).  0 or -ENOMEM. */
int symbolize_later_plan(const struct store *s, const struct symbolize_later_module *only,
                         size_t nonly, struct symbolize_later_pass **out);
/* Looks for each module's symbols (symbolize_later_open()) and names its
 * frames.  0, -ENOMEM or -ENOTSUP (built without elfutils); a module
 * without symbols is a result with `error` set, not a failure. */
int symbolize_later_run(struct symbolize_later_pass *p, const struct symbolize_later_opts *o);
/* Renames the named frames of p in batch b (store_batch_frame_rename()):
 * 0 or its -errno. */
int symbolize_later_apply(const struct symbolize_later_pass *p, struct store_batch *b);
/* The pass's modules and frames (owned by p). */
const struct symbolize_later_result *symbolize_later_results(const struct symbolize_later_pass *p,
                                                             size_t *n);
const struct symbolize_later_frame *symbolize_later_frames(const struct symbolize_later_pass *p,
                                                           size_t *n);
void symbolize_later_pass_free(struct symbolize_later_pass *p); /* accepts NULL */
/* A fingerprint of the places symbolize_later_open() looks in for module
 * m (the file itself, the build-id directories, debug directories, where
 * a debuglink would point): it changes when a debug file appears there
 * (an install, a move into a debug directory), not when nothing did.
 * debuginfod is not covered. */
/* Whether the debuginfod servers (DEBUGINFOD_URLS) failed in the pass:
 * 0, or the -errno of the first failure (-ECONNREFUSED, -ETIME when a
 * transfer timed out, ...), with *urls the servers asked (owned by the
 * pass).  symbolize_later_run() asks the servers itself, through
 * libdebuginfod (the client libdwfl uses: the same environment and cache),
 * before libdwfl looks for a module's debug info; after a failure it asks
 * no server for the rest of the pass, so that dead or silent servers cost
 * one query (DEBUGINFOD_TIMEOUT times 1 + DEBUGINFOD_RETRY_LIMIT at most),
 * not one per module.  A 404 is no failure. */
int symbolize_later_server_error(const struct symbolize_later_pass *p, const char **urls);
/* Gives DEBUGINFOD_TIMEOUT and DEBUGINFOD_RETRY_LIMIT the defaults of
 * SYMBOLIZE_DEBUGINFOD_TIMEOUT_S and SYMBOLIZE_DEBUGINFOD_RETRIES when
 * they are unset (libdebuginfod's own are 90 s per transfer and 2 retries,
 * too long for a command line).  Changes the environment: call it before
 * any thread starts. */
#define SYMBOLIZE_DEBUGINFOD_TIMEOUT_S 5
#define SYMBOLIZE_DEBUGINFOD_RETRIES   1
void symbolize_later_debuginfod_defaults(void);
uint64_t symbolize_later_stamp(const struct symbolize_later_opts *o,
                               const struct symbolize_later_module *m);

/* ---- offline symbolization (import-symbols.c) ---- */

/* The importers' address symbolization (import.h's struct import_symbols)
 * wired to this symbolizer, for profiles whose processes are known only
 * from the file: perf.data, gperftools and legacy text profiles.  Fills
 * *out with a fresh symbolizer that finds files under binary_path
 * (colon-separated directories, may be NULL; copied) first.  Returns 0,
 * -ENOMEM, or -ENOTSUP in a build without the symbolizer.  Free with
 * offline_symbols_free(). */
int offline_symbols_new(const char *binary_path, struct import_symbols *out);
void offline_symbols_free(struct import_symbols *sym); /* accepts a zeroed struct */
/* How many files the profile named were refused (a path with "..", or
 * not a regular file of at most 4 GiB: a FIFO, a device, a symlink) and
 * the first of them (owned by sym; NULL when none).  Their frames are
 * named "[basename]", as a missing file's. */
size_t offline_symbols_refused(const struct import_symbols *sym, const char **first);

/* ---- debug packages (debpkg.c) ---------------------------------------- */

/* On Debian, the package that would hold the debug info of a module (an
 * executable or library path), for the messages about unnamed frames.
 * In: module (NULL or a path not starting with '/': no hint) and the
 * build id recorded with its frames (raw bytes; length 0 when none).  Out:
 * hint, "PKG-dbg (installed)", "SRC-dbg (available)" or "PKG-dbgsym (not in
 * this archive)", or "" when it cannot be known truthfully: no dpkg, no
 * package owns the path here, the file here has another build id than
 * the one recorded (without one: the file now at the path is taken), or
 * apt-cache cannot be run or has not answered within budget_ms (it
 * rebuilds its cache when it has none, which can take seconds; it is
 * then killed).  The owner comes from dpkg's file lists, read once per
 * process; the state of the names from one `apt-cache policy` run per
 * call for the names not asked before.  Not thread-safe: call from one
 * thread at a time. */
struct symbolize_debpkg {
	const char *module;
	const uint8_t *build_id;
	size_t build_id_len;
	char hint[200];
};
void symbolize_debpkg_find(struct symbolize_debpkg *q, size_t n, unsigned budget_ms);
/* budget_ms for the end line of record and import, and for stats
 * --quality, which a user asked for.  Within the quick budget apt is
 * asked only when its binary cache is current (else no hint: apt-cache
 * would parse every package list, longer than the import it ends). */
#define SYMBOLIZE_DEBPKG_QUICK_MS 10000u
#define SYMBOLIZE_DEBPKG_ASKED_MS 60000u
/* The advice of the one line record and import end with when much weight
 * has no function name: "most in M (P%; install PKG-dbg) and M2 (P2%;
 * installed: PKG2-dbg)", for q[0..n) (largest first, their hints found)
 * whose unnamed weights are weight[0..n) out of total; into buf, cut
 * to size. */
void symbolize_debpkg_advice(char *buf, size_t size, const struct symbolize_debpkg *q,
                             const uint64_t *weight, size_t n, uint64_t total);

#endif
