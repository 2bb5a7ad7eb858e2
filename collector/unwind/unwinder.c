/*
 * unwinder.c — loads unwind tables and process mappings into the BPF
 * side for the CFI stack walker.
 *
 * Each ELF file the symbolizer opens (the module hook) becomes a table
 * entry in state UNBUILT, holding a descriptor of the file.  Tables are
 * built only for the code samples meet: the first walk that finds a pc in
 * an UNBUILT mapping marks it PENDING in the process's list and sends an
 * event (unwinder_want), and the file becomes a job for the worker
 * thread, which compiles its CFI (cfi.c), appends its rows to the rows
 * array and writes its table entry; the main thread learns of finished
 * jobs through an eventfd and marks the tables READY (or NONE: no CFI,
 * refused, no room).  With -a most mapped files are never sampled, and
 * their tables never cost anything.
 * Tables are keyed by the symbolizer's module, which is one per file
 * (device and inode of the file open, never its build id: two files that
 * claim one build id get two tables), so every process that maps libc
 * shares one.
 * Each process's mappings (the process hook) are written to the procs
 * map with their table ids; a mapping whose table is PENDING is walked by
 * frame pointers, and the process is rewritten when the table is ready.
 * --unwind-memory caps the rows, and a file that no longer fits is
 * walked by frame pointers (and counted).
 *
 * A file the symbolizer frees (symbolize_sweep: no snapshot maps it, not
 * used for --module-grace) is forgotten (the forget hook): a READY table's
 * entry gets count 0 and its id the next generation (unwind.h), then its
 * rows go back to the rows' allocator (rowspace.c: first fit, freed
 * neighbours merged) and its id to the free ids, for the next files.  A
 * table still being built is freed when its job comes back.  A list
 * naming the old generation is walked by frame pointers there; a walk
 * that read the table entry just before it was emptied may take one
 * wrong step on rows reused since, as on any list stale by a moment.
 *
 * Threads: `lock` guards the two job lists, `stopping` and `busy`, and the
 * allocation of rows and table ids (rows, free_ids, next_table, gens): the
 * worker takes a table's id and rows under it, the main thread gives
 * them back under it.  A job belongs to the worker from the queue until
 * it is on the done list; everything else belongs to the main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "rowspace-internal.h"
#include "unwinder.h"

#define TABLE_BUCKETS       1024
#define RECENT_SLOTS        256
#define UPLOAD_CHUNK        65536
#define UPLOAD_WINDOW       (1u << 20)
#define REFRESH_NS          100000000ll
#define ANCESTORS_REWRITTEN 8 /* parents, grandparents… on a want */

enum tstate { T_UNBUILT, T_PENDING, T_READY, T_NONE };

struct utable {
	const void *module;
	enum tstate state;
	bool forgotten;        /* PENDING, its module freed: freed with its job */
	uint32_t id;           /* READY: UNWIND_TABLE(generation, id) */
	uint32_t first, count; /* READY: its rows */
	uint64_t base;
	/* UNBUILT: the file, kept for the job (a dup of the symbolizer's
	 * descriptor), its path and build id. */
	int fd;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	struct utable *next;
};

struct job {
	struct utable *t; /* read by the main thread only */
	int fd;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	/* Results, written by the worker. */
	int rc;
	uint32_t id; /* UNWIND_TABLE(generation, id) */
	uint32_t first;
	uint64_t base;
	size_t rows, bad_rows;
	double seconds;
	/* The file (kernel device encoding) and its table's delta, for
	 * unwind_files; by_file false when its executable segments do not
	 * share one p_vaddr - p_offset (or fstat failed). */
	bool by_file;
	struct unwind_file_key key;
	int64_t delta;
	struct job *next;
};

struct unwinder {
	struct unwinder_maps maps;
	struct utable *tables[TABLE_BUCKETS];

	pthread_t worker;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *queue, *queue_tail; /* lock: jobs not started */
	struct job *done;               /* lock */
	bool stopping;                  /* lock */
	unsigned busy;                  /* lock: jobs not yet serviced */
	int efd;

	/* lock: rows and table ids.  Ids below next_table not in free_ids
	 * are in use; gens[id] is each id's generation. */
	struct rowspace rows;
	uint32_t next_table;
	uint32_t *free_ids;
	size_t nfree_ids;
	uint16_t *gens;

	/* The worker's. */
	uint32_t *keys;
	bool no_mmap; /* the rows map cannot be mapped: bpf(2) writes */

	/* The main thread's. */
	pid_t *pending; /* processes waiting for a table */
	size_t npending, pending_cap;
	pid_t *stale; /* processes whose maps are to be read again */
	size_t nstale, stale_cap;
	struct {
		pid_t pid;
		int64_t at;
	} recent[RECENT_SLOTS];
	struct unwind_proc *scratch;
	struct unwinder_stats st;
};

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j->path);
	free(j->build_id);
	free(j);
}

/* ---- the worker --------------------------------------------------------- */

/* The separate debug file of a build id, or NULL. */
static Elf *open_debug(const struct job *j, int *fd)
{
	char path[64 + 2 * 64];
	int n;

	*fd = -1;
	if (j->build_id_len < 2 || j->build_id_len > 64)
		return NULL;
	n = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", j->build_id[0]);
	for (size_t i = 1; i < j->build_id_len; i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x", j->build_id[i]);
	snprintf(path + n, sizeof(path) - (size_t)n, ".debug");
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	return elf_begin(*fd, ELF_C_READ_MMAP, NULL);
}

/* Writes rows [first, first + n) of the rows array through windows of
 * the map's memory, UPLOAD_WINDOW bytes at a time: the pages are the
 * kernel's, and count in our RSS only while mapped.  Returns -errno when
 * the map cannot be mapped (the caller then goes through bpf(2)). */
static int upload_rows_mmap(struct unwinder *u, uint32_t first, const struct unwind_row *rows,
                            size_t n)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from = (size_t)first * sizeof(*rows), to = from + n * sizeof(*rows);

	while (from < to) {
		size_t off = from / page * page;
		size_t end = to - off > UPLOAD_WINDOW ? off + UPLOAD_WINDOW : to;
		size_t len = (end - off + page - 1) / page * page;
		char *w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, u->maps.rows,
		               (off_t)off);
		if (w == MAP_FAILED)
			return -errno;
		memcpy(w + (from - off),
		       (const char *)rows + (from - (size_t)first * sizeof(*rows)), end - from);
		munmap(w, len);
		from = end;
	}
	return 0;
}

/* Writes rows [first, first + n) of the rows array. */
static int upload_rows(struct unwinder *u, uint32_t first, const struct unwind_row *rows, size_t n)
{
	if (!u->no_mmap) {
		int rc = upload_rows_mmap(u, first, rows, n);
		if (rc == 0)
			return 0;
		u->no_mmap = true; /* written by bpf(2) from now on */
	}
	for (size_t done = 0; done < n;) {
		uint32_t count = (uint32_t)(n - done < UPLOAD_CHUNK ? n - done : UPLOAD_CHUNK);
		for (uint32_t i = 0; i < count; i++)
			u->keys[i] = first + (uint32_t)done + i;
		if (bpf_map_update_batch(u->maps.rows, u->keys, rows + done, &count, NULL) < 0) {
			/* A kernel without batch updates of arrays. */
			for (uint32_t i = 0; i < count; i++)
				if (bpf_map_update_elem(u->maps.rows, &u->keys[i], &rows[done + i],
				                        BPF_ANY) < 0)
					return -errno;
		}
		done += count;
	}
	return 0;
}

/* Takes a table id (a freed one first) and rows for a table of n rows.
 * Returns 0, or -ENOSPC when either has run out. */
static int take_table(struct unwinder *u, uint32_t n, uint32_t *id, uint32_t *first, uint32_t *gen)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&u->lock);
	if ((u->nfree_ids || u->next_table < u->maps.max_tables) &&
	    rowspace_alloc(&u->rows, n ? n : 1, first) == 0) {
		*id = u->nfree_ids ? u->free_ids[--u->nfree_ids] : u->next_table++;
		*gen = u->gens[*id];
		rc = 0;
	}
	pthread_mutex_unlock(&u->lock);
	return rc;
}

/* Gives back a table id and its rows (whose entry in the tables map, if
 * any, no longer names them). */
static void give_back(struct unwinder *u, uint32_t id, uint32_t first, uint32_t n)
{
	pthread_mutex_lock(&u->lock);
	u->free_ids[u->nfree_ids++] = id;
	/* -ENOMEM loses the rows (counted as in use), never hands them out twice */
	rowspace_free(&u->rows, first, n ? n : 1);
	pthread_mutex_unlock(&u->lock);
}

/* Frees a READY table: its entry emptied under the id's next generation
 * first, so that no walk finds its rows from then on, then its id and
 * rows given back. */
static void free_table(struct unwinder *u, uint32_t table, uint32_t first, uint32_t n)
{
	uint32_t id = UNWIND_TABLE_ID(table);
	uint16_t gen = (uint16_t)(UNWIND_TABLE_GEN(table) + 1);
	struct unwind_table te = {.first = 0, .count = 0, .gen = gen};

	/* The id is ours until given back: its generation too. */
	pthread_mutex_lock(&u->lock);
	u->gens[id] = gen;
	pthread_mutex_unlock(&u->lock);
	if (bpf_map_update_elem(u->maps.tables, &id, &te, BPF_ANY) < 0)
		return; /* cannot empty it: the id and rows stay taken */
	give_back(u, id, first, n);
	u->st.tables_freed++;
}

/* The one p_vaddr - p_offset of elf's executable PT_LOAD segments into
 * *d; false when there is none or they differ. */
static bool exec_delta(Elf *elf, int64_t *d)
{
	size_t n;
	bool found = false;

	if (!elf || elf_getphdrnum(elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		int64_t v = (int64_t)(ph.p_vaddr - ph.p_offset);
		if (found && v != *d)
			return false;
		*d = v;
		found = true;
	}
	return found;
}

/* Where the walker finds j's table by its file (unwind_files). */
static void file_key(struct job *j, Elf *elf)
{
	struct stat st;
	int64_t d = 0;

	j->by_file = false;
	if (fstat(j->fd, &st) < 0 || !exec_delta(elf, &d))
		return;
	j->key.dev = ((__u64)major(st.st_dev) << 20) | minor(st.st_dev);
	j->key.ino = (__u64)st.st_ino;
	j->delta = d - (int64_t)j->base;
	j->by_file = true;
}

static void build(struct unwinder *u, struct job *j)
{
	int64_t t0 = mono_ns();
	struct cfi_table *t = NULL;
	Elf *elf = elf_begin(j->fd, ELF_C_READ_MMAP, NULL), *debug = NULL;
	int dfd = -1;
	char err[256];

	j->rc = cfi_compile(elf, NULL, &t, err, sizeof(err));
	if (j->rc == -ENOENT && (debug = open_debug(j, &dfd)))
		j->rc = cfi_compile(elf, debug, &t, err, sizeof(err));
	if (j->rc == 0) {
		uint32_t first, id, gen;
		j->rc = take_table(u, (uint32_t)t->nrows, &id, &first, &gen);
		if (j->rc == 0) {
			struct unwind_table te = {
			        .first = first, .count = (uint32_t)t->nrows, .gen = gen};
			j->rc = upload_rows(u, te.first, t->rows, t->nrows);
			if (j->rc == 0 &&
			    bpf_map_update_elem(u->maps.tables, &id, &te, BPF_ANY) < 0)
				j->rc = -errno;
			if (j->rc == 0) {
				j->id = UNWIND_TABLE(gen, id);
				j->first = first;
				j->base = t->base;
				j->rows = t->nrows;
				j->bad_rows = t->bad_rows;
				file_key(j, elf);
			} else {
				give_back(u, id, first, (uint32_t)t->nrows);
			}
		}
	}
	cfi_table_free(t);
	if (debug)
		elf_end(debug);
	if (dfd >= 0)
		close(dfd);
	if (elf)
		elf_end(elf);
	close(j->fd);
	j->fd = -1;
	j->seconds = (double)(mono_ns() - t0) / 1e9;
}

static void *worker_main(void *arg)
{
	struct unwinder *u = arg;
	uint64_t one = 1;

	for (;;) {
		pthread_mutex_lock(&u->lock);
		while (!u->queue && !u->stopping)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stopping) {
			pthread_mutex_unlock(&u->lock);
			return NULL;
		}
		struct job *j = u->queue;
		u->queue = j->next;
		if (!u->queue)
			u->queue_tail = NULL;
		pthread_mutex_unlock(&u->lock);

		build(u, j);

		pthread_mutex_lock(&u->lock);
		j->next = u->done;
		u->done = j;
		pthread_mutex_unlock(&u->lock);
		if (write(u->efd, &one, sizeof(one)) < 0) {
			/* the counter is full: the main thread is reading it */
		}
	}
}

/* ---- tables and processes (main thread) --------------------------------- */

static struct utable **table_slot(struct unwinder *u, const void *module)
{
	size_t b = ((uintptr_t)module >> 4) % TABLE_BUCKETS;
	struct utable **pp = &u->tables[b];
	while (*pp && (*pp)->module != module)
		pp = &(*pp)->next;
	return pp;
}

static void on_module(void *ctx, const void *module, int fd, const char *path,
                      const uint8_t *build_id, size_t build_id_len)
{
	struct unwinder *u = ctx;
	struct utable **pp = table_slot(u, module);

	if (*pp)
		return;
	struct utable *t = calloc(1, sizeof(*t));
	if (!t)
		return; /* its mappings are walked by frame pointers */
	t->module = module;
	t->state = T_NONE;
	t->fd = -1;
	*pp = t;
	/* The descriptor shares its offset with the symbolizer's; libelf
	 * reads with pread, so neither moves the other. */
	t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	t->path = strdup(path);
	if (build_id_len && (t->build_id = malloc(build_id_len))) {
		memcpy(t->build_id, build_id, build_id_len);
		t->build_id_len = build_id_len;
	}
	if (t->fd >= 0 && t->path)
		t->state = T_UNBUILT;
}

/* Hands an UNBUILT table's file to the worker. */
static void queue_build(struct unwinder *u, struct utable *t)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		t->state = T_NONE;
		return;
	}
	j->t = t;
	j->fd = t->fd;
	j->path = t->path;
	j->build_id = t->build_id;
	j->build_id_len = t->build_id_len;
	t->fd = -1;
	t->path = NULL;
	t->build_id = NULL;
	t->state = T_PENDING;
	pthread_mutex_lock(&u->lock);
	if (u->queue_tail)
		u->queue_tail->next = j;
	else
		u->queue = j;
	u->queue_tail = j;
	u->busy++;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static int pid_list_add(pid_t **list, size_t *n, size_t *cap, pid_t pid)
{
	for (size_t i = *n; i-- > 0 && i + 8 >= *n;)
		if ((*list)[i] == pid)
			return 0; /* just added */
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		pid_t *l = realloc(*list, ncap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		*list = l;
		*cap = ncap;
	}
	(*list)[(*n)++] = pid;
	return 0;
}

/* The process's interpreter, when it runs a CPython of a known version,
 * for the walker; else none (native frames only). */
/* The walker's entry for interpreter py loaded with `bias`; false for a
 * layout the walker cannot read. */
static bool fill_python(const struct symbolize_python *py, uint64_t bias, struct unwind_python *e)
{
	const struct symbolize_python_layout *l = py->layout;
	*e = (struct unwind_python){
	        .eval_start = py->eval + bias,
	        .eval_end = py->eval + py->eval_size + bias,
	        .runtime = py->runtime + bias,
	        .code_type = py->code_type + bias,
	        .runtime_interp_head = l->runtime_interp_head,
	        .runtime_tstate_current = l->runtime_tstate_current,
	        .interp_threads_head = l->interp_threads_head,
	        .tstate_next = l->tstate_next,
	        .tstate_cframe = l->tstate_cframe,
	        .tstate_native_thread_id = l->tstate_native_thread_id,
	        .cframe_current_frame = l->cframe_current_frame,
	        .frame_code = l->frame_code,
	        .frame_previous = l->frame_previous,
	        .frame_prev_instr = l->frame_prev_instr,
	        .frame_is_entry = l->frame_is_entry,
	        .object_type = l->object_type,
	        .code_firstlineno = l->code_firstlineno,
	        .code_filename = l->code_filename,
	        .code_qualname = l->code_qualname,
	        .code_linetable = l->code_linetable,
	        .code_adaptive = l->code_adaptive,
	        .str_length = l->str_length,
	        .str_state = l->str_state,
	        .str_ascii_data = l->str_ascii_data,
	};
	/* Bytes to read: past the last field the walker takes. */
	uint16_t fr = l->frame_code + 8;
	if (l->frame_previous + 8 > fr)
		fr = l->frame_previous + 8;
	if (l->frame_prev_instr + 8 > fr)
		fr = l->frame_prev_instr + 8;
	if (l->frame_is_entry + 1 > fr)
		fr = l->frame_is_entry + 1;
	uint16_t cr = l->object_type + 8;
	const uint16_t cf[] = {l->code_firstlineno + 4, l->code_filename + 8, l->code_qualname + 8,
	                       l->code_linetable + 8};
	for (size_t i = 0; i < sizeof(cf) / sizeof(cf[0]); i++)
		if (cf[i] > cr)
			cr = cf[i];
	if (fr > UNWIND_PY_READ_MAX || cr > UNWIND_PY_READ_MAX ||
	    l->str_ascii_data + 32 > UNWIND_PY_READ_MAX || l->str_length + 8 > l->str_ascii_data ||
	    l->str_state + 4 > l->str_ascii_data)
		return false; /* a layout the walker cannot read */
	e->frame_read = fr;
	e->code_read = cr;
	return true;
}

/* The process's interpreter, when it runs a CPython of a known version,
 * for the walker; else none (native frames only). */
static void write_python(struct unwinder *u, __u32 key, const struct symbolize_map *maps, size_t n,
                         unsigned flags)
{
	const struct symbolize_map *m = NULL;
	struct unwind_python e;

	if (u->maps.python < 0)
		return;
	for (size_t i = 0; i < n && !m; i++)
		if (maps[i].python && maps[i].python->layout)
			m = &maps[i];
	if (!m) {
		/* An entry exists only where one was written, or copied from
		 * the parent at a fork (the same maps), until the exec or exit
		 * that removes it in BPF. */
		if ((flags & SYMBOLIZE_PROCESS_HAD_PYTHON) &&
		    !(flags & SYMBOLIZE_PROCESS_INHERITED))
			bpf_map_delete_elem(u->maps.python, &key);
		return;
	}
	if (fill_python(m->python, m->bias, &e) &&
	    bpf_map_update_elem(u->maps.python, &key, &e,
	                        flags & SYMBOLIZE_PROCESS_INHERITED ? BPF_NOEXIST : BPF_ANY) == 0)
		u->st.python++;
}

static void write_proc(struct unwinder *u, pid_t pid, const struct symbolize_map *maps, size_t n,
                       unsigned flags)
{
	struct unwind_proc *e = u->scratch;
	bool pending = false;
	size_t k = 0;

	e->stale = 0;
	e->placed = 0;
	e->reread = 0;
	e->sampled = 0;
	e->exe_dev = e->exe_ino = 0;
	for (size_t i = 0; i < n; i++) {
		if (k == UNWIND_MAX_MAPS) {
			u->st.map_overflow += n - i;
			e->stale = 1; /* asking again would not help */
			break;
		}
		struct unwind_mapping *m = &e->maps[k++];
		uint64_t size = maps[i].end - maps[i].start;
		m->start = maps[i].start;
		m->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
		m->bias = 0;
		m->table = UNWIND_NO_TABLE;
		struct utable *t = maps[i].module ? *table_slot(u, maps[i].module) : NULL;
		if (!t)
			continue;
		if (t->state == T_READY) {
			m->table = t->id;
			m->bias = maps[i].bias + t->base;
		} else if (t->state == T_PENDING) {
			m->table = UNWIND_PENDING;
			pending = true;
		} else if (t->state == T_UNBUILT) {
			m->table = UNWIND_UNBUILT;
		}
	}
	e->nmaps = (uint32_t)k;
	if (!k)
		return; /* a kernel thread: no user stack to walk */
	__u32 key = (__u32)pid;
	write_python(u, key, maps, n, flags);
	/* A child's list was copied from its parent's at the fork; one there
	 * now is as new or newer (the child's exec), so it stays. */
	if (bpf_map_update_elem(u->maps.procs, &key, e,
	                        flags & SYMBOLIZE_PROCESS_INHERITED ? BPF_NOEXIST : BPF_ANY) == 0)
		u->st.processes++;
	if (pending)
		pid_list_add(&u->pending, &u->npending, &u->pending_cap, pid);
}

static void on_process(void *ctx, pid_t pid, const struct symbolize_map *maps, size_t n,
                       unsigned flags)
{
	write_proc(ctx, pid, maps, n, flags);
}

static void utable_free(struct utable *t)
{
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t->build_id);
	free(t);
}

/* The symbolizer frees `module` (called once per file it was known by:
 * the first call does the work). */
static void on_forget(void *ctx, const void *module, unsigned long long dev, unsigned long long ino)
{
	struct unwinder *u = ctx;
	struct utable **pp = table_slot(u, module), *t = *pp;
	struct unwind_file_key k = {.dev = dev, .ino = ino};

	/* A walk that finds the file from now on walks it by frame pointers;
	 * one that found it already names the table's old generation. */
	if (u->maps.files >= 0 && (dev || ino))
		bpf_map_delete_elem(u->maps.files, &k);
	if (!t)
		return;
	*pp = t->next; /* a module made at the same address gets its own */
	t->next = NULL;
	if (t->state == T_PENDING) {
		t->forgotten = true; /* its job holds it: freed when it comes back */
		return;
	}
	if (t->state == T_READY)
		free_table(u, t->id, t->first, t->count);
	utable_free(t);
}

struct symbolize_hooks unwinder_hooks(struct unwinder *u)
{
	return (struct symbolize_hooks){
	        .module = on_module, .process = on_process, .forget = on_forget, .ctx = u};
}

int unwinder_fd(const struct unwinder *u)
{
	return u->efd;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

int unwinder_service(struct unwinder *u, const struct symbolize *s)
{
	uint64_t v;
	struct job *list;
	unsigned finished = 0;

	if (read(u->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing new */
	}
	pthread_mutex_lock(&u->lock);
	list = u->done;
	u->done = NULL;
	pthread_mutex_unlock(&u->lock);
	while (list) {
		struct job *j = list;
		struct utable *t = j->t;
		list = j->next;
		finished++;
		u->st.build_seconds += j->seconds;
		if (j->seconds > u->st.slowest_seconds) {
			u->st.slowest_seconds = j->seconds;
			snprintf(u->st.slowest, sizeof(u->st.slowest), "%s", j->path);
		}
		if (j->rc == 0) {
			u->st.tables++;
			u->st.rows += j->rows;
			u->st.bad_rows += j->bad_rows;
		}
		if (t->forgotten) {
			/* its module was freed while it was built */
			if (j->rc == 0)
				free_table(u, j->id, j->first, (uint32_t)j->rows);
			free(t);
		} else if (j->rc == 0) {
			t->state = T_READY;
			t->id = j->id;
			t->first = j->first;
			t->count = (uint32_t)j->rows;
			t->base = j->base;
			if (j->by_file && u->maps.files >= 0) {
				struct unwind_file e = {.table = j->id, .delta = j->delta};
				bpf_map_update_elem(u->maps.files, &j->key, &e, BPF_ANY);
			}
		} else {
			t->state = T_NONE;
		}
		if (j->rc < 0) {
			if (j->rc == -ENOENT)
				u->st.no_cfi++;
			else if (j->rc == -ENOSPC)
				u->st.over_cap++;
			else
				u->st.refused++;
		}
		job_free(j);
	}
	if (!finished)
		return 0;
	pthread_mutex_lock(&u->lock);
	u->busy -= finished;
	pthread_mutex_unlock(&u->lock);

	/* Rewrite the processes that waited: they may wait again for a
	 * table still pending, and are then added back. */
	pid_t *pids = u->pending;
	size_t n = u->npending;
	u->pending = NULL;
	u->npending = u->pending_cap = 0;
	if (n > 1)
		qsort(pids, n, sizeof(*pids), pid_cmp);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct symbolize_map *maps;
		size_t nm;
		if (i && pids[i] == pids[i - 1])
			continue;
		int r = symbolize_maps(s, pids[i], &maps, &nm);
		if (r == -ENOMEM)
			rc = r;
		if (r < 0)
			continue;
		write_proc(u, pids[i], maps, nm, 0);
		free(maps);
	}
	free(pids);
	return rc;
}

_Static_assert((int)SYMBOLIZE_LAYOUT_PROGRAM == (int)UNWIND_EXEC_PROGRAM &&
                       (int)SYMBOLIZE_LAYOUT_LOADER == (int)UNWIND_EXEC_LOADER &&
                       (int)SYMBOLIZE_LAYOUT_VDSO == (int)UNWIND_EXEC_VDSO &&
                       (int)SYMBOLIZE_LAYOUT_LIBRARY == (int)UNWIND_EXEC_LIBRARY,
               "a layout's kinds are a template's");

int unwinder_exec_template(struct unwinder *u, const struct symbolize_layout *l, size_t n,
                           uint64_t entry, const uint64_t *dyn, size_t nlm, struct unwind_exec *out)
{
	int rc = 0;

	if (n > UNWIND_EXEC_MAPS || nlm > UNWIND_EXEC_LM)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->entry = entry;
	out->nlm = (uint32_t)nlm;
	for (size_t k = 0; k < nlm; k++)
		out->dyn[k] = dyn[k];
	for (size_t i = 0; i < n; i++) {
		struct unwind_exec_mapping *m = &out->maps[out->nmaps++];
		struct utable *t = *table_slot(u, l[i].module);
		if (l[i].python && l[i].python->layout && !out->has_python &&
		    fill_python(l[i].python, 0, &out->python)) {
			/* placed with this object's bias, as its mappings */
			out->has_python = 1;
			out->python_kind = l[i].kind;
			out->python_lm = l[i].lm;
		}
		uint64_t size = l[i].end - l[i].start;
		m->start = l[i].start;
		m->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
		m->kind = l[i].kind; /* enum symbolize_layout_kind = enum unwind_exec_kind */
		m->lm = l[i].lm;
		m->table = UNWIND_NO_TABLE;
		if (t && t->state == T_READY) {
			m->table = t->id;
			m->bias = t->base;
		} else if (t && (t->state == T_UNBUILT || t->state == T_PENDING)) {
			/* A list that asks for the table in every new process
			 * would cost more than it saves. */
			if (t->state == T_UNBUILT)
				queue_build(u, t);
			rc = -EAGAIN;
		}
	}
	return rc;
}

int unwinder_want(struct unwinder *u, const struct symbolize *s, pid_t pid, uint64_t addr)
{
	struct symbolize_map *maps;
	size_t n;
	int rc = symbolize_maps(s, pid, &maps, &n);

	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;
	for (size_t i = 0; i < n; i++) {
		if (addr < maps[i].start || addr >= maps[i].end || !maps[i].module)
			continue;
		struct utable *t = *table_slot(u, maps[i].module);
		if (t && t->state == T_UNBUILT)
			queue_build(u, t);
		break;
	}
	/* The walker marked the mapping PENDING in its copy of the list: a
	 * pending table rewrites it when ready; one ready (or refused) since
	 * the list was written, now. */
	write_proc(u, pid, maps, n, 0);
	free(maps);

	/* The list came from the parent at the fork (or from further up):
	 * theirs still say UNBUILT, and each child they fork would walk its
	 * first samples in the file by frame pointers and ask again. */
	pid_t up = pid;
	for (int depth = 0; depth < ANCESTORS_REWRITTEN; depth++) {
		up = symbolize_parent(s, up);
		if (up <= 0 || up == pid)
			break;
		rc = symbolize_maps(s, up, &maps, &n);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			break;
		write_proc(u, up, maps, n, 0);
		free(maps);
		u->st.ancestors++;
	}
	return 0;
}

int unwinder_stale(struct unwinder *u, pid_t pid)
{
	return pid_list_add(&u->stale, &u->nstale, &u->stale_cap, pid);
}

int unwinder_reread(struct unwinder *u, struct symbolize *s, pid_t pid)
{
	size_t slot = (unsigned)pid % RECENT_SLOTS;

	u->recent[slot].pid = pid;
	u->recent[slot].at = mono_ns();
	/* Rewrites the process's list through the process hook. */
	int rc = symbolize_snapshot(s, pid, 0);
	if (rc == -ENOMEM)
		return rc;
	if (rc >= 0)
		u->st.rereads++;
	return 0;
}

int unwinder_refresh(struct unwinder *u, struct symbolize *s)
{
	int64_t now = mono_ns();
	size_t keep = 0;

	for (size_t i = 0; i < u->nstale; i++) {
		pid_t pid = u->stale[i];
		size_t slot = (unsigned)pid % RECENT_SLOTS;
		if (u->recent[slot].pid == pid && now - u->recent[slot].at < REFRESH_NS) {
			u->stale[keep++] = pid; /* its turn comes later */
			continue;
		}
		u->recent[slot].pid = pid;
		u->recent[slot].at = now;
		/* Rewrites the process's list through the process hook. */
		int rc = symbolize_snapshot(s, pid, 0);
		if (rc == -ENOMEM)
			return rc;
		if (rc >= 0)
			u->st.rereads++;
	}
	u->nstale = keep;
	return 0;
}

int unwinder_refresh_due_ms(const struct unwinder *u)
{
	int64_t now = mono_ns(), due = -1;

	for (size_t i = 0; i < u->nstale; i++) {
		pid_t pid = u->stale[i];
		size_t slot = (unsigned)pid % RECENT_SLOTS;
		int64_t left = 0;
		if (u->recent[slot].pid == pid)
			left = u->recent[slot].at + REFRESH_NS - now;
		if (left < 0)
			left = 0;
		if (due < 0 || left < due)
			due = left;
	}
	return due < 0 ? -1 : (int)(due / 1000000 + 1);
}

void unwinder_get_stats(struct unwinder *u, struct unwinder_stats *st)
{
	*st = u->st;
	pthread_mutex_lock(&u->lock);
	st->rows_reused = u->rows.reused;
	st->rows_in_use = u->rows.cap - rowspace_free_rows(&u->rows);
	pthread_mutex_unlock(&u->lock);
}

/* ---- lifetime ----------------------------------------------------------- */

int unwinder_new(const struct unwinder_maps *maps, struct unwinder **out)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int rc;

	*out = NULL;
	if (!u)
		return -ENOMEM;
	u->maps = *maps;
	if (u->maps.max_tables > UNWIND_MAX_TABLES)
		u->maps.max_tables = UNWIND_MAX_TABLES; /* ids fit in 16 bits (unwind.h) */
	u->efd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	rowspace_init(&u->rows, u->maps.max_rows);
	u->scratch = calloc(1, sizeof(*u->scratch));
	u->keys = calloc(UPLOAD_CHUNK, sizeof(*u->keys));
	u->free_ids = calloc(u->maps.max_tables ? u->maps.max_tables : 1, sizeof(*u->free_ids));
	u->gens = calloc(u->maps.max_tables ? u->maps.max_tables : 1, sizeof(*u->gens));
	if (!u->scratch || !u->keys || !u->free_ids || !u->gens) {
		rc = -ENOMEM;
		goto fail;
	}
	u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->efd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = -pthread_create(&u->worker, NULL, worker_main, u);
	if (rc < 0)
		goto fail;
	u->started = true;
	*out = u;
	return 0;
fail:
	unwinder_free(u);
	return rc;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		u->stopping = true;
		pthread_cond_signal(&u->cond);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->worker, NULL);
	}
	struct job *lists[] = {u->queue, u->done};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		for (struct job *j = lists[i], *n; j; j = n) {
			n = j->next;
			if (j->t && j->t->forgotten)
				utable_free(j->t);
			job_free(j);
		}
	}
	for (size_t b = 0; b < TABLE_BUCKETS; b++) {
		for (struct utable *t = u->tables[b], *n; t; t = n) {
			n = t->next;
			utable_free(t);
		}
	}
	rowspace_clear(&u->rows);
	free(u->free_ids);
	free(u->gens);
	if (u->efd >= 0)
		close(u->efd);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u->pending);
	free(u->stale);
	free(u->scratch);
	free(u->keys);
	free(u);
}
