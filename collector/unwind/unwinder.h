/*
 * unwinder.h — the user side of `record`'s CFI stack walking: it builds
 * each ELF file's unwind table (cfi-internal.h) in a worker thread at the file's
 * first sighting, loads it into the BPF side's maps (unwind.h) once, for
 * every process that maps the file, and keeps each process's list of
 * mappings there up to date.  It learns of files and processes through
 * the symbolizer's hooks (symbolize.h).  Nothing here prints or exits.
 */
#ifndef FLAMEFS_UNWINDER_H
#define FLAMEFS_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfi-internal.h"
#include "symbolize.h"

struct unwinder;

struct unwinder_maps {
	int procs;  /* LRU hash: tgid -> struct unwind_proc */
	int tables; /* array: table id -> struct unwind_table */
	int files;  /* hash: struct unwind_file_key -> struct unwind_file */
	int rows;   /* array: struct unwind_row */
	int python; /* hash: tgid -> struct unwind_python; -1: no Python walks */
	uint32_t max_tables, max_rows;
};

/* Creates an unwinder that writes into the given maps (fds borrowed;
 * they must outlive it) and starts its worker thread.  Returns 0 or
 * -errno; the caller frees *out with unwinder_free(). */
int unwinder_new(const struct unwinder_maps *maps, struct unwinder **out);

/* Stops the worker (a table being built is finished first) and frees
 * everything.  Accepts NULL. */
void unwinder_free(struct unwinder *u);

/* Hooks to pass to symbolize_set_hooks(): they queue new files for the
 * worker, write each process's mappings to the BPF side, and free the
 * table of a file the symbolizer frees (its rows and id reused by the
 * next files; see unwind.h for the id's generation). */
struct symbolize_hooks unwinder_hooks(struct unwinder *u);

/* A file descriptor that becomes readable when the worker has finished
 * tables; then call unwinder_service(). */
int unwinder_fd(const struct unwinder *u);

/* Takes in the tables the worker has finished and rewrites the mappings
 * of every process that was waiting for one (asking `s` for them).
 * Returns 0 or -ENOMEM. */
int unwinder_service(struct unwinder *u, const struct symbolize *s);

/* The walker met pc `addr` of pid in a mapping whose table is not built:
 * queues the file's table and rewrites the process's list, and those of
 * its known ancestors (a fork copies its parent's list, so a parent that
 * never met the file itself would hand the unbuilt table to every child
 * it forks).  Returns 0 or -ENOMEM. */
int unwinder_want(struct unwinder *u, const struct symbolize *s, pid_t pid, uint64_t addr);

/* The walker met a pc of pid outside its known mappings: its maps are
 * read again at the next unwinder_refresh(), at most every 100 ms per
 * process.  Returns 0 or -ENOMEM. */
int unwinder_stale(struct unwinder *u, pid_t pid);

/* The walker's first walk of pid since a dlopen that was not read
 * (PROFILE_STALE_LOADED): its maps are read again now, once per such
 * dlopen, and its turn of unwinder_stale() starts again.  Returns 0 or
 * -ENOMEM. */
int unwinder_reread(struct unwinder *u, struct symbolize *s, pid_t pid);

/* Reads again the maps of the processes unwinder_stale() named whose
 * turn has come.  Returns 0 or -ENOMEM. */
int unwinder_refresh(struct unwinder *u, struct symbolize *s);

/* Milliseconds until unwinder_refresh() has a process due, or -1 when
 * none waits: the longest the caller should sleep. */
int unwinder_refresh_due_ms(const struct unwinder *u);

struct unwinder_stats {
	uint64_t tables;        /* tables loaded */
	uint64_t rows;          /* their rows (8 bytes each in the kernel) */
	uint64_t tables_freed;  /* with their files (the forget hook) */
	uint64_t rows_reused;   /* rows given to a table that another had before */
	uint64_t rows_in_use;   /* rows held now (or lost to ENOMEM) */
	uint64_t no_cfi;        /* files without CFI: frame pointers */
	uint64_t refused;       /* files whose CFI was refused (corrupt, too big) */
	uint64_t over_cap;      /* tables not loaded: --unwind-memory full */
	uint64_t bad_rows;      /* rows the compact form cannot express */
	uint64_t processes;     /* process mapping lists written */
	uint64_t ancestors;     /* of which a want's ancestors */
	uint64_t rereads;       /* processes read again at a walk's request */
	uint64_t map_overflow;  /* mappings beyond UNWIND_MAX_MAPS, not walked */
	uint64_t python;        /* Python interpreters written for the walker */
	double build_seconds;   /* worker CPU-ish: wall time building tables */
	double slowest_seconds; /* the slowest table */
	char slowest[128];      /* its file */
};
void unwinder_get_stats(struct unwinder *u, struct unwinder_stats *st);

/* The walker's template (unwind.h) for the next processes of a program,
 * from its layout (symbolize_keep_layout: l[0 .. n)), its ELF entry point
 * and the dynamic sections' offsets of the loader's list (dyn[0 .. nlm),
 * l_ld - l_addr; nlm 0: the exec part only).  Returns 0 with *out set;
 * -EAGAIN when a table is not built yet (its build is queued: ask again
 * with the program's next process); -ENOENT when the layout is larger
 * than a template holds. */
int unwinder_exec_template(struct unwinder *u, const struct symbolize_layout *l, size_t n,
                           uint64_t entry, const uint64_t *dyn, size_t nlm,
                           struct unwind_exec *out);

#endif
