/*
 * import-symbols.c — struct import_symbols (import.h) over the collector's
 * symbolizer: processes and mappings come from the profile
 * (symbolize_offline_process/map), addresses are resolved by
 * symbolize_user/symbolize_kernel as for a live recording.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "symbolize.h"

#ifdef FLAMEFS_RECORD_NO_BPF

int offline_symbols_new(const char *binary_path, struct import_symbols *out)
{
	(void)binary_path;
	memset(out, 0, sizeof(*out));
	return -ENOTSUP;
}

size_t offline_symbols_refused(const struct import_symbols *sym, const char **first)
{
	(void)sym;
	*first = NULL;
	return 0;
}

void offline_symbols_free(struct import_symbols *sym)
{
	(void)sym;
}

#else

#include <elfutils/libdwfl.h>
#include <unistd.h>

#include "symbolize.h"

#define DWFL_CACHE 64 /* processes whose unwinding sessions are kept */

/* An ELF file the symbolizer opened: what libdwfl needs to report it. */
struct file {
	const void *module; /* the symbolizer's identity for it */
	int fd;             /* our dup, or -1 */
	char *path;
};

/* One process's unwinding session: its files reported at their biases. */
struct session {
	uint32_t pid;
	Dwfl *dwfl; /* NULL: nothing to unwind with */
};

/* What the thread callbacks see of the sample being unwound. */
struct unwind_arg {
	uint32_t tid;
	uint64_t regs[17]; /* DWARF x86_64 order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
	const uint8_t *stack;
	size_t stack_len;
	uint64_t sp;
	uint64_t *ips;
	size_t room, n;
};

struct offline {
	struct symbolize *s;
	char *binary_path;
	struct file *files;
	size_t nfiles;
	struct session sessions[DWFL_CACHE];
	size_t nsessions;
	struct unwind_arg cur;
};

static void session_drop(struct offline *o, uint32_t pid)
{
	for (size_t i = 0; i < o->nsessions; i++) {
		if (o->sessions[i].pid != pid)
			continue;
		if (o->sessions[i].dwfl)
			dwfl_end(o->sessions[i].dwfl);
		o->sessions[i] = o->sessions[--o->nsessions];
		return;
	}
}

static void on_module(void *ctx, const void *module, int fd, const char *path,
                      const uint8_t *build_id, size_t build_id_len)
{
	struct offline *o = ctx;
	(void)build_id;
	(void)build_id_len;
	struct file *nf = realloc(o->files, (o->nfiles + 1) * sizeof(*nf));
	if (!nf)
		return; /* that file is not unwound through: not an error */
	o->files = nf;
	int d = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	char *p = strdup(path);
	if (!p) {
		if (d >= 0)
			close(d);
		return;
	}
	o->files[o->nfiles++] = (struct file){module, d, p};
}

static int o_process(void *ctx, uint32_t pid, const char *name)
{
	struct offline *o = ctx;
	session_drop(o, pid);
	return symbolize_offline_process(o->s, (pid_t)pid, name);
}

static int o_fork(void *ctx, uint32_t pid, uint32_t child)
{
	struct offline *o = ctx;
	struct symbolize_map *maps;
	size_t n;
	const char *bin, *bid;

	session_drop(o, child);
	if (symbolize_maps(o->s, (pid_t)pid, &maps, &n) < 0)
		return 0; /* an unknown parent: the child's mappings will come */
	free(maps);
	/* symbolize_inherit() would read a parent without mappings from
	 * /proc, which here is another machine's or another time's */
	if (!n) {
		if (symbolize_process(o->s, (pid_t)pid, &bin, &bid) < 0)
			bin = "[unknown]";
		return symbolize_offline_process(o->s, (pid_t)child, bin);
	}
	return symbolize_inherit(o->s, (pid_t)child, (pid_t)pid);
}

static int o_map(void *ctx, uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
                 const char *path, const uint8_t *build_id, size_t build_id_len)
{
	struct offline *o = ctx;
	session_drop(o, pid);
	return symbolize_offline_map(o->s, (pid_t)pid, start, end, pgoff, path, build_id,
	                             build_id_len, o->binary_path);
}

/* ---- --call-graph dwarf: libdw's unwinder on the copied stack ---------- */

static pid_t t_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return (pid_t)((struct offline *)arg)->cur.tid;
}

static bool t_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct unwind_arg *u = &((struct offline *)arg)->cur;
	(void)dwfl;
	if (addr < u->sp || addr - u->sp > u->stack_len || u->stack_len - (addr - u->sp) < 8)
		return false;
	memcpy(result, u->stack + (addr - u->sp), 8);
	return true;
}

static bool t_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwind_arg *u = &((struct offline *)arg)->cur;
	return dwfl_thread_state_registers(thread, 0, 17, u->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = t_next_thread,
        .memory_read = t_memory_read,
        .set_initial_registers = t_set_initial_registers,
};

static const Dwfl_Callbacks offline_dwfl_callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = symbolize_find_debuginfo,
};

static const struct file *file_of(const struct offline *o, const void *module)
{
	for (size_t i = o->nfiles; i-- > 0;)
		if (o->files[i].module == module)
			return &o->files[i];
	return NULL;
}

/* pid's session: its mapped files reported at their biases and the
 * thread callbacks attached; NULL dwfl when there is nothing to use. */
static struct session *session_of(struct offline *o, uint32_t pid)
{
	for (size_t i = 0; i < o->nsessions; i++)
		if (o->sessions[i].pid == pid)
			return &o->sessions[i];
	if (o->nsessions == DWFL_CACHE)
		session_drop(o, o->sessions[0].pid);
	struct session *se = &o->sessions[o->nsessions++];
	se->pid = pid;
	se->dwfl = NULL;

	struct symbolize_map *maps;
	size_t n;
	if (symbolize_maps(o->s, (pid_t)pid, &maps, &n) < 0)
		return se;
	Dwfl *d = dwfl_begin(&offline_dwfl_callbacks);
	if (!d)
		goto out;
	dwfl_report_begin(d);
	size_t reported = 0;
	for (size_t i = 0; i < n; i++) {
		const struct file *f = maps[i].module ? file_of(o, maps[i].module) : NULL;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = maps[j].module == maps[i].module;
		if (!f || f->fd < 0 || seen)
			continue;
		int fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			continue;
		/* libdwfl takes the fd */
		if (dwfl_report_elf(d, f->path, f->path, fd, maps[i].bias, false))
			reported++;
		else
			close(fd);
	}
	dwfl_report_end(d, NULL, NULL);
	if (!reported || !dwfl_attach_state(d, NULL, (pid_t)pid, &thread_callbacks, o)) {
		dwfl_end(d);
		goto out;
	}
	se->dwfl = d;
out:
	free(maps);
	return se;
}

static int t_frame(Dwfl_Frame *frame, void *arg)
{
	struct unwind_arg *u = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(frame, &pc, &activation) || u->n == u->room)
		return DWARF_CB_ABORT;
	u->ips[u->n++] = pc;
	return DWARF_CB_OK;
}

/* perf's x86_64 register numbers (PERF_REG_X86_*) -> DWARF's. */
static const int8_t x86_64_dwarf[24] = {
        [0] = 0,  /* ax */
        [1] = 3,  /* bx */
        [2] = 2,  /* cx */
        [3] = 1,  /* dx */
        [4] = 4,  /* si */
        [5] = 5,  /* di */
        [6] = 6,  /* bp */
        [7] = 7,  /* sp */
        [8] = 16, /* ip */
        [9] = -1, [10] = -1, [11] = -1, [12] = -1, [13] = -1, [14] = -1, [15] = -1, [16] = 8,
        [17] = 9, [18] = 10, [19] = 11, [20] = 12, [21] = 13, [22] = 14, [23] = 15,
};

static int o_unwind(void *ctx, uint32_t pid, uint32_t tid, uint64_t regs_mask, const uint64_t *regs,
                    size_t nregs, const uint8_t *stack, size_t stack_len, uint64_t *ips,
                    size_t room)
{
#if defined(__x86_64__)
	struct offline *o = ctx;
	struct unwind_arg *u = &o->cur;
	uint64_t have = 0;
	size_t k = 0;

	memset(u, 0, sizeof(*u));
	for (unsigned bit = 0; bit < 64 && k < nregs; bit++) {
		if (!(regs_mask & (1ull << bit)))
			continue;
		if (bit < 24 && x86_64_dwarf[bit] >= 0) {
			u->regs[x86_64_dwarf[bit]] = regs[k];
			have |= 1ull << x86_64_dwarf[bit];
		}
		k++;
	}
	if (!(have & (1ull << 16)) || !(have & (1ull << 7)))
		return 0; /* no ip or sp: nothing to start from */
	u->tid = tid;
	u->stack = stack;
	u->stack_len = stack_len;
	u->sp = u->regs[7];
	u->ips = ips;
	u->room = room;
	struct session *se = session_of(o, pid);
	if (!se->dwfl)
		return 0;
	dwfl_getthread_frames(se->dwfl, (pid_t)tid, t_frame, u);
	return (int)u->n;
#else
	(void)ctx, (void)pid, (void)tid, (void)regs_mask, (void)regs, (void)nregs;
	(void)stack, (void)stack_len, (void)ips, (void)room;
	return 0; /* only x86_64's registers are mapped */
#endif
}

static int o_user(void *ctx, uint32_t pid, uint64_t addr, bool caller, struct store_frame *f,
                  size_t room)
{
	struct offline *o = ctx;
	return symbolize_user(o->s, (pid_t)pid, addr, caller, f, room);
}

static void o_user_files(void *ctx, uint32_t pid, const uint64_t *addrs, size_t n,
                         const void **mods, uint64_t *offs)
{
	struct offline *o = ctx;
	symbolize_user_files(o->s, (pid_t)pid, addrs, n, mods, offs);
}

static int o_place(void *ctx, const char *path, uint64_t pc, struct store_frame *f)
{
	struct offline *o = ctx;
	int rc = symbolize_offline_place(o->s, path, pc, o->binary_path, f);
	switch (rc) {
	case SYMBOLIZE_PLACE_DONE: return IMPORT_PLACE_DONE;
	case SYMBOLIZE_PLACE_ADDRESS: return IMPORT_PLACE_ADDRESS;
	case SYMBOLIZE_PLACE_NOT: return IMPORT_PLACE_NOT;
	case SYMBOLIZE_PLACE_NO_FILE: return IMPORT_PLACE_NO_FILE;
	default: return rc < 0 ? rc : -EINVAL;
	}
}

static int o_kernel(void *ctx, uint64_t addr, bool caller, struct store_frame *f)
{
	struct offline *o = ctx;
	return symbolize_kernel(o->s, addr, caller, f);
}

static int o_kernel_prefetch(void *ctx, const uint64_t *ips, size_t n)
{
	struct offline *o = ctx;
	return symbolize_kernel_prefetch_as_is(o->s, ips, n);
}

static const char *o_build_id(void *ctx, uint32_t pid)
{
	struct offline *o = ctx;
	const char *bin, *bid;
	if (symbolize_process(o->s, (pid_t)pid, &bin, &bid) < 0)
		return "";
	return bid;
}

int offline_symbols_new(const char *binary_path, struct import_symbols *out)
{
	struct offline *o = calloc(1, sizeof(*o));

	memset(out, 0, sizeof(*out));
	if (!o)
		return -ENOMEM;
	o->s = symbolize_new();
	o->binary_path = binary_path ? strdup(binary_path) : NULL;
	if (!o->s || (binary_path && !o->binary_path)) {
		symbolize_free(o->s);
		free(o->binary_path);
		free(o);
		return -ENOMEM;
	}
	struct symbolize_hooks h = {.module = on_module, .ctx = o};
	symbolize_set_hooks(o->s, &h);
	/* names as perf script prints them, so that a perf.data import
	 * stores what its perf script text would */
	symbolize_set_perf_names(o->s, true);
	*out = (struct import_symbols){
	        .ctx = o,
	        .process = o_process,
	        .fork = o_fork,
	        .map = o_map,
	        .user = o_user,
	        .user_files = o_user_files,
	        .kernel = o_kernel,
	        .kernel_prefetch = o_kernel_prefetch,
	        .build_id = o_build_id,
	        .unwind = o_unwind,
	        .place = o_place,
	};
	return 0;
}

size_t offline_symbols_refused(const struct import_symbols *sym, const char **first)
{
	const struct offline *o = sym->ctx;
	struct symbolize_stats st;

	*first = NULL;
	if (!o)
		return 0;
	symbolize_get_stats(o->s, &st);
	*first = symbolize_refused_first(o->s);
	return (size_t)st.files_refused;
}

void offline_symbols_free(struct import_symbols *sym)
{
	struct offline *o = sym->ctx;
	if (o) {
		while (o->nsessions)
			session_drop(o, o->sessions[0].pid);
		for (size_t i = 0; i < o->nfiles; i++) {
			if (o->files[i].fd >= 0)
				close(o->files[i].fd);
			free(o->files[i].path);
		}
		free(o->files);
		symbolize_free(o->s);
		free(o->binary_path);
		free(o);
	}
	memset(sym, 0, sizeof(*sym));
}

#endif
