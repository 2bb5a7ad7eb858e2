/*
 * profile.bpf.c — the kernel side of `flamefs-collect record`.
 *
 * A perf_event program runs on every cpu-clock sample of every CPU.  For
 * processes being followed it takes the user and kernel stack ids from a
 * stack-trace map and adds one to (tgid, user stack, kernel stack) in a
 * hash map, so only aggregated counts cross into user space.  There are
 * two sets of maps; user space flips `active` before each drain and reads
 * the set no longer written, so nothing arriving during a drain is lost.
 * Fork and exec tracepoints grow the followed set with the children of
 * followed processes and tell user space, which snapshots the new
 * process's mappings while it still exists; the exit tracepoint takes a
 * process out of the set and tells user space, which frees its snapshot
 * once its last samples are drained.  Everything that cannot be
 * kept is counted in `stats`.
 *
 * Nothing here needs the kernel's BTF at load time (no CO-RE relocation,
 * no tp_btf): the tracepoints are raw ones, and the kernel fields read
 * are at offsets user space finds (kbtf.c), since having libbpf load and
 * index the whole vmlinux BTF cost more CPU than the rest of a short
 * recording's start-up.  Raw tracepoints are attached by name, with no
 * tracefs mounted; only rss_stat is a classic tracepoint (see on_rss).
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "profile.h"
#include "unwind.h"

#define E2BIG  7
#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile bool filter_pids = false;              /* only processes in `pids` */
const volatile bool skip_idle = true;                 /* without a filter: skip pid 0 */
const volatile __u32 tgid_offset = 0;                 /* of tgid in struct task_struct */
const volatile __u32 unwind_mode = PROFILE_UNWIND_FP; /* enum profile_unwind */
const volatile bool python_on = false;                /* walk Python frames (py_procs) */
/* Per event (enum profile_ev): PROFILE_EV_* flags, and N of EVENT:...:N
 * (a stack for every Nth event, its weight times N). */
const volatile __u32 ev_flags[PROFILE_NEVENTS] = {};
const volatile __u32 ev_every[PROFILE_NEVENTS] = {};
const volatile __u64 cpu_period_ns = 0;     /* weight of a cpu sample */
const volatile __u64 offcpu_min_ns = 1000;  /* shorter blocks are dropped */
const volatile bool offcpu_preempt = false; /* offcpu:all */
/* Byte offsets found in the kernel's BTF by user space (kbtf.c). */
const volatile __u32 pid_offset = 0; /* task_struct.pid */
/* The path from an exec's linux_binprm to its program file's identity:
 * linux_binprm.file, file.f_inode, inode.i_ino, inode.i_sb and
 * super_block.s_dev; exe_known is false when one was not found (every exec
 * is then read at once). */
const volatile __u32 bprm_file = 0, file_inode = 0, inode_ino = 0, inode_sb = 0, sb_dev = 0;
const volatile bool exe_known = false;
/* task_struct.mm and mm_struct.saved_auxv: where on_exec finds the load
 * biases of a new program and its loader (0: not found, no list). */
const volatile __u32 task_mm = 0, mm_auxv = 0;
/* Of the kmem/rss_stat tracepoint's record (trace_event_raw_rss_stat). */
const volatile __u32 rss_curr = 0, rss_member = 0, rss_size = 0, rss_mm = 0;
/* Of the kernel structs the block and sock tracepoints' arguments point
 * to: bio.bi_bdev, block_device.bd_disk, bio.bi_iter.bi_sector,
 * bio.bi_iter.bi_size, bio.bi_opf; request.q, request_queue.disk,
 * request.__sector; sock's skc_family and sk_protocol. */
const volatile __u32 bio_bdev = 0, bdev_disk = 0, bio_sector = 0, bio_size = 0, bio_opf = 0;
const volatile __u32 rq_q = 0, q_disk = 0, rq_sector = 0;
const volatile __u32 sk_family = 0, sk_protocol = 0;

/* Written by user space through the mmap'd .bss. */
__u32 active = 0; /* which map set samples go to */
__u64 stats[PROFILE_NSTATS] = {};
__u64 ev_seen[PROFILE_NEVENTS] = {}; /* events that took a stack, per event */

/* Sizes are set by user space from frequency x drain interval. */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, struct profile_value);
	__uint(max_entries, 1024);
};
/* Kernel stacks, keyed by a hash of their pcs (profile.h). */
struct kstacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct profile_kstack);
	__uint(max_entries, 1024);
};

/* User stacks walked with CFI, keyed by a hash of their pcs. */
struct ustacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct profile_ustack);
	__uint(max_entries, 1024);
};

/* User stacks with Python frames, keyed by a hash of their slots: a
 * bigger value, in maps of their own. */
struct pystacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct profile_pystack);
	__uint(max_entries, 1);
};

struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");
struct kstacks_map kstacks0 SEC(".maps");
struct kstacks_map kstacks1 SEC(".maps");
struct ustacks_map ustacks0 SEC(".maps");
struct ustacks_map ustacks1 SEC(".maps");
struct pystacks_map pystacks0 SEC(".maps");
struct pystacks_map pystacks1 SEC(".maps");

/* Processes running a known CPython (unwind.h), written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct unwind_python);
	__uint(max_entries, 1024);
} py_procs SEC(".maps");

/* The unwinder's tables (unwind.h), written by user space: each known
 * process's executable mappings, the tables, and all their rows.  Sizes
 * are set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct unwind_proc);
	__uint(max_entries, 1024);
} unwind_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_table);
	__uint(max_entries, 1024);
} unwind_tables SEC(".maps");

/* Mappable: user space writes a table's rows through a window of memory
 * rather than one bpf(2) element at a time (5x the build itself). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_row);
	__uint(max_entries, 1);
} unwind_rows SEC(".maps");

/* Per-CPU scratch space comes in two slots: SLOT_PERF for the sampler,
 * SLOT_TP for the tracepoint programs, which a sample's interrupt can
 * preempt on the same CPU (a raw tracepoint program does not hold off a
 * perf_event one) and would otherwise overwrite. */
#define SLOT_PERF 0
#define SLOT_TP   1

/* A kernel stack being taken, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_kstack);
	__uint(max_entries, 2);
} kscratch SEC(".maps");

/* One walk in progress per CPU (the stack is too big for the BPF stack). */
struct walk {
	struct profile_pystack st;
	__u64 pc, sp, bp, bx, di;
	__u32 bx_ok; /* bx holds this frame's rbx (an RBX row needs it) */
	__u32 di_ok; /* di holds this frame's rdi: the sampled frame only */
	__u64 hash;
	__u32 tgid;
	__u32 gen; /* the key's */
	__u32 flags;
	__u32 after_signal; /* pc is an interrupted pc, not a return address */
	__u32 nnative;      /* native frames pushed */
	__u32 native_steps; /* native pcs met, pushed or replaced */
	/* Python (see py_step): the process's interpreter, when it has one */
	struct unwind_python py;
	__u64 py_frame;                   /* the next interpreter frame to push, 0: none */
	__u32 has_py;                     /* py is set */
	__u32 py_looked;                  /* the thread's state was looked for */
	__u32 py_dead;                    /* none found, or the walk was cut: natives only */
	__u32 py_mode;                    /* pushing an evaluation's frames */
	__u32 skip_push;                  /* the native pc was replaced by Python frames */
	__u32 npy;                        /* Python frames pushed */
	__u64 last_code, last_check;      /* the last code object checked */
	__u8 buf[UNWIND_PY_READ_MAX + 8]; /* a frame or code object read */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct walk);
	__uint(max_entries, 2);
} walks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 8192);
} pids SEC(".maps");

/* How many execs each process has made since it was first seen. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 16384);
} execs SEC(".maps");

/* Programs user space has read once and that run under the loader's
 * hook, with their walker lists just after an exec (unwind.h): an exec
 * of one of them gets its list at once and is named from what is known
 * of the file; its maps are read once, when the loader has mapped its
 * libraries (on_ldso_state), not also at the exec.  Written by user
 * space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct profile_file);
	__type(value, struct unwind_exec);
	__uint(max_entries, 1024);
} exe_templates SEC(".maps");

/* The list being placed by on_exec, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_proc);
	__uint(max_entries, 1);
} exec_list SEC(".maps");

/* The loader's-hook event being filled, per CPU (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_loaded_event);
	__uint(max_entries, 1);
} loaded_scratch SEC(".maps");

/* The exec count + 1 of each process whose loader's hook has run since
 * its exec: the first run lists the libraries it was linked with; later
 * ones are dlopens. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 65536);
} loaded_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

static __always_inline void count(enum profile_stat s)
{
	__sync_fetch_and_add(&stats[s], 1);
}

/* ---- user stacks by CFI ------------------------------------------------
 *
 * The walk starts from the user registers of the sample (the interrupted
 * ones, or those saved at kernel entry when the sample hit the kernel).
 * Each step records pc, finds its mapping in the process's list and its
 * row in the mapping's table by binary search, and applies the row: the
 * CFA from rsp or rbp, the return address at CFA-8, rbp restored when the
 * frame saved it.  Where a pc has no CFI, --unwind=auto takes one step by
 * frame pointers.  The walk ends cleanly at an undefined return address
 * (the outermost frame), a zero return address, or a zero rbp under frame
 * pointers; anything else that stops it marks the stack truncated.  The
 * step is a bpf_loop callback, so the verifier checks it once. */

/* x86-64 struct pt_regs, as the kernel's user ABI lays it out (declared
 * here so that reading it is no CO-RE relocation). */
struct x86_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

static __always_inline __u64 mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

static __always_inline bool read_user(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
}

/* One step by frame pointers. Returns 0 to go on, 1 to stop. */
static __always_inline long fp_step(struct walk *w)
{
	__u64 ra, bp;

	if (unwind_mode != PROFILE_UNWIND_AUTO) {
		w->flags |= UNWIND_FLAG_TRUNCATED;
		return 1;
	}
	w->flags |= UNWIND_FLAG_FP;
	w->bx_ok = 0; /* where the callee saved it is not known */
	if (w->bp == 0)
		return 1; /* the outermost frame of frame-pointer code */
	if (w->bp < w->sp || !read_user(&ra, w->bp + 8) || !read_user(&bp, w->bp)) {
		w->flags |= UNWIND_FLAG_TRUNCATED;
		return 1;
	}
	w->sp = w->bp + 16;
	w->bp = bp;
	w->pc = ra;
	return ra == 0;
}

/* A binary search, as a bpf_loop callback so that the verifier checks
 * one step instead of every path through all of them: finds in
 * [lo, hi) the first element above `key`. */
struct search {
	__u32 lo, hi;
	__u32 first; /* rows: the table's first row */
	__u32 pad;
	__u64 key;
	struct unwind_proc *proc; /* maps: the process */
};

static long search_rows_step(__u32 i, void *ctx)
{
	struct search *s = ctx;
	if (s->lo >= s->hi)
		return 1;
	__u32 mid = s->lo + (s->hi - s->lo) / 2, idx = s->first + mid;
	struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r) {
		s->lo = 0; /* not found */
		return 1;
	}
	if (r->pc <= s->key)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

static long search_maps_step(__u32 i, void *ctx)
{
	struct search *s = ctx;
	if (s->lo >= s->hi || !s->proc)
		return 1;
	__u32 mid = s->lo + (s->hi - s->lo) / 2;
	if (s->proc->maps[mid & (UNWIND_MAX_MAPS - 1)].start <= s->key)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* Finds the last row of table t at or below rel, or NULL. */
static __always_inline struct unwind_row *find_row(const struct unwind_table *t, __u64 rel)
{
	struct search s = {.hi = t->count, .first = t->first, .key = rel};

	if (s.hi > UNWIND_MAX_TABLE_ROWS)
		s.hi = UNWIND_MAX_TABLE_ROWS;
	bpf_loop(UNWIND_SEARCH_STEPS + 1, search_rows_step, &s, 0);
	if (s.lo == 0)
		return NULL;
	__u32 idx = s.first + s.lo - 1;
	return bpf_map_lookup_elem(&unwind_rows, &idx);
}

static __always_inline void report(__u32 kind, __u32 pid, __u32 parent);
static __always_inline void report_want(__u32 pid, __u64 addr);
static __always_inline void report_pycode(__u32 pid, __u32 gen, __u64 code, __u32 check);

/* Code objects already reported to user space (PROFILE_EVENT_PYCODE),
 * which reads each at once, while its process lives: the drain after a
 * process's exit could no longer read the code its last second ran (a
 * 1.6 s script had 36% of its weight "[python: code gone]"). */
struct py_code_key {
	__u32 tgid;
	__u32 check;
	__u64 code;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct py_code_key);
	__type(value, __u8);
	__uint(max_entries, 16384);
} py_seen SEC(".maps");

/* The user stack of a process in an exec, walked at begin_new_exec while
 * its memory is still the old program's (on_exec_begin), until the exec
 * is done.  Samples in between are charged to it: after exec_mmap() a
 * walk would read the new program's memory with the old registers, and
 * was cut short (the whole kernel side of an exec: tearing down the old
 * memory, loading the new program; a third of the cut-short weight of a
 * build machine's churn). */
struct exec_stack {
	struct profile_ustack st;
	__u64 hash;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct exec_stack);
	__uint(max_entries, 1024);
} exec_stacks SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct exec_stack);
	__uint(max_entries, 1);
} exec_scratch SEC(".maps");

/* ---- Python frames -------------------------------------------------------
 *
 * CPython 3.11 runs nested Python calls inside one C call of
 * _PyEval_EvalFrameDefault; each C call of it starts at an "entry" frame
 * (is_entry).  The thread's state (PyThreadState) points, through its
 * _PyCFrame, at the innermost interpreter frame, and each frame at its
 * caller (`previous`).  So when the native walk meets a pc in
 * _PyEval_EvalFrameDefault, it pushes, in place of that pc, the frames
 * from the next one not pushed yet up to and including an entry frame;
 * the next such native frame continues from there.  Each frame pushes its
 * code object's address and a check with its instruction index
 * (profile.h); user space names them.  The thread's state is the one
 * holding the GIL when its native_thread_id is the sampled thread's, else
 * it is searched for in the interpreter's list of threads.  Whatever
 * cannot be read, or is not what it should be, cuts the Python walk short
 * with a marker, and the rest of the stack is native. */

static __always_inline __u64 buf_u64(const struct walk *w, __u32 off)
{
	__u64 v = 0;
	off &= 0xff;
	if (off <= UNWIND_PY_READ_MAX)
		__builtin_memcpy(&v, &w->buf[off], 8);
	return v;
}

static __always_inline __u32 buf_u32(const struct walk *w, __u32 off)
{
	__u32 v = 0;
	off &= 0xff;
	if (off <= UNWIND_PY_READ_MAX)
		__builtin_memcpy(&v, &w->buf[off], 4);
	return v;
}

static __always_inline bool read_buf(struct walk *w, __u64 addr, __u32 len)
{
	len &= 0xff;
	if (len > UNWIND_PY_READ_MAX)
		return false;
	return bpf_probe_read_user(w->buf, len, (const void *)addr) == 0;
}

/* symbolize_python_str_digest() of the compact str at addr, into *h. */
static __always_inline bool py_str_digest(struct walk *w, __u64 addr, __u64 *h)
{
	const struct unwind_python *py = &w->py;
	__u32 data = py->str_ascii_data;

	if (!read_buf(w, addr, data + 32))
		return false;
	__u64 len = buf_u64(w, py->str_length), hh = *h;
	__u64 ascii = buf_u32(w, py->str_state) >> 6 & 1;
	hh = mix(hh, len);
	hh = mix(hh, ascii);
	if (ascii) {
		__u64 n = len < 32 ? len : 32;
		for (__u32 i = 0; i < 32; i += 8) {
			__u64 v = buf_u64(w, data + i);
			if (n <= i)
				v = 0;
			else if (n < i + 8)
				v &= (1ull << ((n - i) * 8)) - 1;
			hh = mix(hh, v);
		}
		/* The last 32 bytes of a longer one (a name longer than the
		 * namer reads is never named: its check does not matter). */
		if (len > 32 && len <= 4096) {
			if (!read_buf(w, addr + data + len - 32, 32))
				return false;
			for (__u32 i = 0; i < 32; i += 8)
				hh = mix(hh, buf_u64(w, i));
		}
	}
	*h = hh;
	return true;
}

/* Pushes the marker of a Python walk cut short and gives up Python for
 * the rest of the walk.  The native pc in hand is replaced by it. */
static __always_inline long py_cut(struct walk *w, __u32 why)
{
	__u32 n = w->st.len;

	if (n < PROFILE_PY_SLOTS - 1) {
		w->st.pcs[n] = PROFILE_PY_TAG;
		w->st.pcs[n + 1] = why;
		w->st.len = n + 2;
		w->hash = mix(mix(w->hash, PROFILE_PY_TAG), why);
	}
	w->flags |= UNWIND_FLAG_PY_CUT;
	count(PROFILE_STAT_PY_CUT_DEPTH + why - PROFILE_PY_CUT_DEPTH);
	w->py_mode = 0;
	w->py_dead = 1;
	w->skip_push = 1;
	return 0;
}

struct thread_search {
	__u64 t, tid, found;
	__u32 next_off, tid_off;
};

static long thread_step(__u32 i, void *ctx)
{
	struct thread_search *s = ctx;
	__u64 v;

	if (!s->t)
		return 1;
	if (!read_user(&v, s->t + s->tid_off))
		return 1;
	if (v == s->tid) {
		s->found = s->t;
		return 1;
	}
	if (!read_user(&v, s->t + s->next_off))
		return 1;
	s->t = v;
	return 0;
}

/* The innermost interpreter frame of the current thread, or 0. */
static __always_inline __u64 py_first_frame(struct walk *w)
{
	const struct unwind_python *py = &w->py;
	struct thread_search s = {.tid = (__u32)bpf_get_current_pid_tgid(),
	                          .next_off = py->tstate_next,
	                          .tid_off = py->tstate_native_thread_id};
	__u64 t = 0, v = 0, interp = 0;

	if (read_user(&t, py->runtime + py->runtime_tstate_current) && t &&
	    read_user(&v, t + py->tstate_native_thread_id) && v == s.tid) {
		s.found = t;
	} else if (read_user(&interp, py->runtime + py->runtime_interp_head) && interp &&
	           read_user(&s.t, interp + py->interp_threads_head)) {
		bpf_loop(UNWIND_PY_MAX_THREADS, thread_step, &s, 0);
	}
	if (!s.found || !read_user(&v, s.found + py->tstate_cframe) || !v ||
	    !read_user(&t, v + py->cframe_current_frame))
		return 0;
	return t;
}

/* The native walk met _PyEval_EvalFrameDefault: returns true when its
 * Python frames are to be pushed now (py_mode). */
static __always_inline bool py_begin(struct walk *w)
{
	if (!w->py_looked) {
		w->py_looked = 1;
		w->py_frame = py_first_frame(w);
		if (!w->py_frame) {
			/* A thread with no Python state (or none readable). */
			count(PROFILE_STAT_PY_NO_THREAD);
			w->py_dead = 1;
			return false;
		}
	}
	w->py_mode = 1;
	return true;
}

/* Pushes one interpreter frame.  Returns 0 (bpf_loop goes on). */
static long py_step(struct walk *w)
{
	const struct unwind_python *py = &w->py;
	__u32 n = w->st.len;
	__u64 f = w->py_frame;

	if (w->npy >= PROFILE_PY_MAX_FRAMES || n >= PROFILE_PY_SLOTS - 3)
		return py_cut(w, PROFILE_PY_CUT_DEPTH);
	if (!f)
		return py_cut(w, PROFILE_PY_CUT_CHAIN);
	if (!read_buf(w, f, py->frame_read))
		return py_cut(w, PROFILE_PY_CUT_READ);
	__u64 code = buf_u64(w, py->frame_code);
	__u64 prev = buf_u64(w, py->frame_previous);
	__u64 instr = buf_u64(w, py->frame_prev_instr);
	__u8 entry = w->buf[py->frame_is_entry & 0xff];
	__u64 h = w->last_check;
	if (code != w->last_code || !code) {
		/* (a recursion meets the same code object again and again) */
		if (!code || !read_buf(w, code, py->code_read))
			return py_cut(w, PROFILE_PY_CUT_READ);
		if (buf_u64(w, py->object_type) != py->code_type)
			return py_cut(w, PROFILE_PY_CUT_NOT_CODE);
		/* symbolize_python_check_head(), then the two names' digests */
		__u64 filename = buf_u64(w, py->code_filename);
		__u64 qualname = buf_u64(w, py->code_qualname);
		h = 0x9e3779b97f4a7c15ull;
		h = mix(h, (__u64)(__s64)(__s32)buf_u32(w, py->code_firstlineno));
		h = mix(h, filename);
		h = mix(h, qualname);
		h = mix(h, buf_u64(w, py->code_linetable));
		if (!py_str_digest(w, qualname, &h) || !py_str_digest(w, filename, &h))
			return py_cut(w, PROFILE_PY_CUT_READ);
		w->last_code = code;
		w->last_check = h;
		struct py_code_key k = {.tgid = w->tgid, .check = (__u32)h, .code = code};
		if (!bpf_map_lookup_elem(&py_seen, &k)) {
			__u8 one = 1;
			bpf_map_update_elem(&py_seen, &k, &one, BPF_ANY);
			report_pycode(w->tgid, w->gen, code, (__u32)h);
		}
	}
	__u64 first = code + py->code_adaptive, lasti = 0;
	if (instr >= first)
		lasti = (instr - first) / 2;
	if (lasti > 0xffffffffull)
		lasti = 0xffffffffull;
	__u64 s0 = PROFILE_PY_TAG | code, s1 = (h & 0xffffffffull) << 32 | lasti;
	if (n < PROFILE_PY_SLOTS - 3) {
		w->st.pcs[n] = s0;
		w->st.pcs[n + 1] = s1;
		w->st.len = n + 2;
	}
	w->hash = mix(mix(w->hash, s0), s1);
	w->npy++;
	w->py_frame = prev;
	if (entry) {
		/* This evaluation's frames are all in: its native frame's
		 * step comes next, without its pc. */
		w->py_mode = 0;
		w->skip_push = 1;
	}
	return 0;
}

static long walk_step(__u32 i, void *ctx)
{
	__u32 n;
	struct walk *w = bpf_map_lookup_elem(&walks, ctx); /* ctx: the slot */
	struct unwind_proc *p;
	__u64 pc, lookup, cfa, ra, v;

	if (!w)
		return 1;
	if (w->py_mode)
		return py_step(w);
	n = w->st.len;
	pc = w->pc;
	/* A return address is looked up one byte back, inside the call:
	 * every native pc but the first (Python frames may stand for that
	 * one). */
	lookup = w->native_steps > 0 && !w->after_signal ? pc - 1 : pc;
	if (w->skip_push) {
		w->skip_push = 0; /* its Python frames stand for it */
	} else {
		if (w->has_py && !w->py_dead && lookup >= w->py.eval_start &&
		    lookup < w->py.eval_end && py_begin(w))
			return 0; /* its Python frames first, then this step again */
		if (w->nnative >= PROFILE_MAX_DEPTH || n >= PROFILE_PY_SLOTS) {
			w->flags |= UNWIND_FLAG_TRUNCATED; /* deeper than we keep */
			return 1;
		}
		w->st.pcs[n] = pc;
		w->st.len = n + 1;
		w->nnative++;
		w->hash = mix(w->hash, pc);
	}
	w->native_steps++;
	w->after_signal = 0;

	p = bpf_map_lookup_elem(&unwind_procs, &w->tgid);
	if (!p) {
		w->flags |= UNWIND_FLAG_TRUNCATED;
		return 1;
	}

	struct search ms = {.hi = p->nmaps, .key = lookup, .proc = p};
	if (ms.hi > UNWIND_MAX_MAPS)
		ms.hi = UNWIND_MAX_MAPS;
	bpf_loop(9, search_maps_step, &ms, 0);
	__u32 lo = ms.lo;
	struct unwind_mapping *m = lo ? &p->maps[(lo - 1) & (UNWIND_MAX_MAPS - 1)] : NULL;
	if (!m || lookup - m->start >= m->size) {
		/* Code mapped since user space last read the maps (dlopen):
		 * ask for a new list, once. */
		if (!p->stale) {
			p->stale = 1;
			count(PROFILE_STAT_STALE_MAPS);
			report(PROFILE_EVENT_STALE, w->tgid, 0);
		}
		return fp_step(w);
	}
	if (m->table == UNWIND_UNBUILT) {
		/* Tables are built for the code samples meet: ask once. */
		m->table = UNWIND_PENDING;
		report_want(w->tgid, lookup);
	}
	if (m->table == UNWIND_PENDING)
		w->flags |= UNWIND_FLAG_PENDING;
	if (m->table >= UNWIND_PENDING)
		return fp_step(w);
	__u32 tid = UNWIND_TABLE_ID(m->table);
	struct unwind_table *t = bpf_map_lookup_elem(&unwind_tables, &tid);
	__u64 rel = lookup - m->bias;
	struct unwind_row *r = NULL;
	/* Not a table freed since the list was written: its id's
	 * generation would have moved on (unwind.h). */
	if (t && t->gen == UNWIND_TABLE_GEN(m->table) && rel <= 0xffffffffull)
		r = find_row(t, rel);
	if (!r)
		return fp_step(w);

	__u32 rule = UNWIND_ROW_RULE(r), bx = UNWIND_ROW_RBX(r), di_ok = w->di_ok;
	w->di_ok = 0; /* rdi is known in the sampled frame only */
	switch (rule) {
	case UNWIND_RULE_RSP:
	case UNWIND_RULE_RBP:
	case UNWIND_RULE_RBX:
		if (rule == UNWIND_RULE_RBX && !w->bx_ok)
			goto truncated;
		cfa = rule == UNWIND_RULE_RSP ? w->sp : rule == UNWIND_RULE_RBP ? w->bp : w->bx;
		cfa += (__u64)r->cfa * 8;
		if (r->rule & UNWIND_ROW_RBP_AT) {
			if (!read_user(&v, cfa + (__s64)r->rbp * 8))
				goto truncated;
			w->bp = v;
		}
		/* The caller's rbx: a save that cannot be read only matters
		 * to a later RBX row, which then stops the walk. */
		if (bx == UNWIND_RBX_LOST)
			w->bx_ok = 0;
		else if (bx != UNWIND_RBX_SAME && !read_user(&w->bx, cfa - 8 * ((__u64)bx + 1)))
			w->bx_ok = 0;
		break;
	case UNWIND_RULE_PLT: cfa = w->sp + 8 + ((pc & 15) >= (__u64)(__s64)r->rbp ? 8 : 0); break;
	case UNWIND_RULE_SIGNAL:
		if (!read_user(&ra, w->sp + UNWIND_SIGNAL_RIP) ||
		    !read_user(&cfa, w->sp + UNWIND_SIGNAL_RSP) ||
		    !read_user(&v, w->sp + UNWIND_SIGNAL_RBP))
			goto truncated;
		w->bp = v;
		w->bx_ok = read_user(&w->bx, w->sp + UNWIND_SIGNAL_RBX);
		w->sp = cfa;
		w->pc = ra;
		w->after_signal = 1;
		return ra == 0;
	case UNWIND_RULE_END: return 1;
	case UNWIND_RULE_NONE: return fp_step(w);
	case UNWIND_RULE_RA_RDI:
		if (!di_ok)
			goto truncated;
		w->sp += (__u64)r->cfa * 8;
		w->pc = w->di;
		return w->pc == 0;
	default: goto truncated;
	}
	/* The stack grows down: a caller's frame is above its callee's. */
	if (cfa <= w->sp || !read_user(&ra, cfa - 8))
		goto truncated;
	w->sp = cfa;
	w->pc = ra;
	return ra == 0;
truncated:
	w->flags |= UNWIND_FLAG_TRUNCATED;
	return 1;
}

/* Walks the current task's user stack with CFI into `ustacks` and sets
 * the key's user stack. */
static __always_inline void walk_user(void *ctx, bool from_perf, void *ustacks, void *pystacks,
                                      struct profile_key *key, __u32 tgid, bool keep)
{
	__u32 slot = from_perf ? SLOT_PERF : SLOT_TP;
	struct walk *w = bpf_map_lookup_elem(&walks, &slot);
	const struct x86_regs *cr = ctx;
	struct x86_regs regs;
	__u64 ip = 0, sp = 0, bp = 0, bx = 0, di = 0, cs = 0;

	if (!w)
		return;
	/* A perf_event context holds the interrupted registers; each field
	 * is read as such, before any branch, since the verifier allows no
	 * access through a computed context pointer.  Tracepoints run in the
	 * kernel: the user registers are those saved at kernel entry. */
	if (from_perf) {
		ip = cr->ip;
		sp = cr->sp;
		bp = cr->bp;
		bx = cr->bx;
		di = cr->di;
		cs = cr->cs;
	}
	if ((cs & 3) != 3 && keep) {
		/* In an exec, past the start of begin_new_exec: the memory may
		 * be the new program's already, the registers are the old
		 * one's.  The stack walked then stands for it. */
		struct exec_stack *es = bpf_map_lookup_elem(&exec_stacks, &tgid);
		if (es) {
			long rc = bpf_map_update_elem(ustacks, &es->hash, &es->st, BPF_NOEXIST);
			if (rc && rc != -EEXIST) {
				count(PROFILE_STAT_USTACKS_FULL);
				key->user_stack = PROFILE_LOST_STACK;
				return;
			}
			count(PROFILE_STAT_EXEC_STACK);
			key->user_stack = PROFILE_USTACK;
			key->user_hash = es->hash;
			return;
		}
	}
	if ((cs & 3) != 3) {
		/* In the kernel: the user registers saved at entry. */
		void *task = bpf_get_current_task_btf();
		if (bpf_probe_read_kernel(&regs, sizeof(regs), (void *)bpf_task_pt_regs(task)))
			return;
		ip = regs.ip;
		sp = regs.sp;
		bp = regs.bp;
		bx = regs.bx;
		di = regs.di;
	}
	w->pc = ip;
	w->sp = sp;
	w->bp = bp;
	w->bx = bx;
	w->bx_ok = 1;
	w->di = di;
	w->di_ok = 1;
	w->st.len = 0;
	w->flags = 0;
	w->after_signal = 0;
	w->nnative = 0;
	w->native_steps = 0;
	w->tgid = tgid;
	w->gen = key->gen;
	w->hash = 0x9e3779b97f4a7c15ull;
	w->has_py = 0;
	w->py_looked = 0;
	w->py_dead = 0;
	w->py_mode = 0;
	w->skip_push = 0;
	w->npy = 0;
	w->py_frame = 0;
	w->last_code = 0;
	w->last_check = 0;
	if (python_on) {
		struct unwind_python *py = bpf_map_lookup_elem(&py_procs, &tgid);
		if (py) {
			w->py = *py;
			w->has_py = 1;
		}
	}
	/* Every step pushes a frame, or is the native step after an
	 * evaluation's Python frames (at most one per two frames). */
	bpf_loop(2 * PROFILE_PY_SLOTS, walk_step, &slot, 0);

	__u32 flags = w->flags;
	w->st.flags = flags;
	__u64 h = mix(w->hash, ((__u64)flags << 32) | w->st.len);
	bool python = w->npy || (flags & UNWIND_FLAG_PY_CUT);
	if (!keep) {
		/* Only walked (on_exec_begin): the caller keeps it. */
		key->user_stack = python ? PROFILE_PY_STACK : PROFILE_USTACK;
		key->user_hash = h;
		return;
	}
	if (flags & UNWIND_FLAG_TRUNCATED)
		count(PROFILE_STAT_UNWIND_TRUNCATED);
	if (flags & UNWIND_FLAG_PENDING)
		count(PROFILE_STAT_UNWIND_PENDING);
	count(flags & UNWIND_FLAG_FP ? PROFILE_STAT_UNWIND_MIXED : PROFILE_STAT_UNWIND_CFI);
	long rc;
	if (python) {
		count(PROFILE_STAT_PY_WALKS);
		rc = bpf_map_update_elem(pystacks, &h, &w->st, BPF_NOEXIST);
	} else {
		/* No more than PROFILE_MAX_DEPTH slots: the first fields
		 * are a struct profile_ustack. */
		rc = bpf_map_update_elem(ustacks, &h, &w->st, BPF_NOEXIST);
	}
	if (rc && rc != -EEXIST) {
		count(python ? PROFILE_STAT_PYSTACKS_FULL : PROFILE_STAT_USTACKS_FULL);
		key->user_stack = PROFILE_LOST_STACK;
		return;
	}
	key->user_stack = python ? PROFILE_PY_STACK : PROFILE_USTACK;
	key->user_hash = h;
}

/* Stacks the kernel walks (bpf_get_stack), kept by their content: the
 * kernel's stack-trace map keeps one stack per bucket and lost one
 * whenever two met in a bucket (28 kernel stacks in a 4-second fork loop).
 * takes the current kernel stack (flags 0) or the user stack by frame
 * pointers (BPF_F_USER_STACK) into the scratch slot: returns its depth, 0
 * when there is none (a user-mode sample's kernel stack), or -1 when it
 * could not be taken (counted). */
static __always_inline long take_stack(void *ctx, bool from_perf, __u64 flags,
                                       struct profile_kstack **out)
{
	__u32 slot = from_perf ? SLOT_PERF : SLOT_TP;
	struct profile_kstack *ks = bpf_map_lookup_elem(&kscratch, &slot);

	*out = ks;
	if (!ks) {
		count(PROFILE_STAT_STACK_ERROR);
		return -1;
	}
	long n = bpf_get_stack(ctx, ks->pcs, sizeof(ks->pcs), flags);
	if (n == 0 || n == -EFAULT)
		return 0;
	if (n < 0) {
		count(PROFILE_STAT_STACK_ERROR);
		return -1;
	}
	return n / 8;
}

/* The current kernel stack, in `kstacks`. */
static __always_inline void kernel_stack(void *ctx, bool from_perf, void *kstacks,
                                         struct profile_key *key)
{
	struct profile_kstack *ks;
	long n = take_stack(ctx, from_perf, 0, &ks);

	key->kernel_stack = n < 0 ? PROFILE_LOST_STACK : PROFILE_NO_STACK;
	if (n <= 0 || !ks)
		return;
	key->kernel_stack = PROFILE_LOST_STACK;
	__u32 len = (__u32)n;
	__u64 h = 0x6a09e667f3bcc909ull, c = 0xbb67ae8584caa73bull;
	for (__u32 i = 0; i < PROFILE_MAX_DEPTH; i++) {
		if (i >= len)
			break;
		__u64 pc = ks->pcs[i];
		h = mix(h, pc);
		c = (c ^ pc) * 0xc2b2ae3d27d4eb4full;
		c ^= c >> 31;
	}
	h = mix(h, len);
	ks->len = len;
	ks->check = (__u32)(c ^ (c >> 32));
	struct profile_kstack *old = bpf_map_lookup_elem(kstacks, &h);
	if (old) {
		if (old->len != ks->len || old->check != ks->check) {
			count(PROFILE_STAT_KERNEL_COLLISION);
			return;
		}
	} else {
		long rc = bpf_map_update_elem(kstacks, &h, ks, BPF_NOEXIST);
		if (rc && rc != -EEXIST) {
			count(PROFILE_STAT_KSTACKS_FULL);
			return;
		}
		/* -EEXIST: another CPU kept it (or one of its length and
		 * check) in between */
	}
	key->kernel_stack = PROFILE_KSTACK;
	key->kernel_hash = h;
}

/* The current user stack by frame pointers (--unwind fp, or a process the
 * CFI walker does not know yet), in `ustacks` as a walked stack would be,
 * flagged UNWIND_FLAG_FP. */
static __always_inline void fp_user_stack(void *ctx, bool from_perf, void *ustacks,
                                          struct profile_key *key)
{
	struct profile_kstack *ks; /* laid out as a struct profile_ustack */
	long n = take_stack(ctx, from_perf, BPF_F_USER_STACK, &ks);

	key->user_stack = n < 0 ? PROFILE_LOST_STACK : PROFILE_NO_STACK;
	if (n <= 0 || !ks)
		return;
	__u32 len = (__u32)n;
	__u64 h = 0x9e3779b97f4a7c15ull;
	for (__u32 i = 0; i < PROFILE_MAX_DEPTH; i++) {
		if (i >= len)
			break;
		h = mix(h, ks->pcs[i]);
	}
	h = mix(h, ((__u64)UNWIND_FLAG_FP << 32) | len);
	ks->len = len;
	ks->check = UNWIND_FLAG_FP; /* the flags of a struct profile_ustack */
	long rc = bpf_map_update_elem(ustacks, &h, ks, BPF_NOEXIST);
	if (rc && rc != -EEXIST) {
		count(PROFILE_STAT_USTACKS_FULL);
		key->user_stack = PROFILE_LOST_STACK;
		return;
	}
	count(PROFILE_STAT_UNWIND_FP);
	key->user_stack = PROFILE_USTACK;
	key->user_hash = h;
}

/* ---- recording an event ------------------------------------------------ */

/* Fills key with the current task's stacks for event ev, kept in one map
 * set (stacks, ustacks). */
static __always_inline void take_key(void *ctx, bool from_perf, void *kstacks, void *ustacks,
                                     void *pystacks, __u32 ev, __u32 tgid, struct profile_key *key)
{
	__u32 *gen = bpf_map_lookup_elem(&execs, &tgid);

	key->pid = tgid;
	key->user_stack = PROFILE_NO_STACK;
	key->kernel_stack = PROFILE_NO_STACK;
	key->gen = gen ? *gen : 0;
	key->user_hash = 0;
	key->event = ev;
	key->pad = 0;
	key->kernel_hash = 0;
	if (ev_flags[ev] & PROFILE_EV_USER) {
		if (unwind_mode != PROFILE_UNWIND_FP && bpf_map_lookup_elem(&unwind_procs, &tgid)) {
			walk_user(ctx, from_perf, ustacks, pystacks, key, tgid, true);
		} else {
			fp_user_stack(ctx, from_perf, ustacks, key);
		}
	}
	if (ev_flags[ev] & PROFILE_EV_KERNEL)
		kernel_stack(ctx, from_perf, kstacks, key);
}

/* Adds one event of `weight` to key's slot of a counts map. */
static __always_inline void add_count(void *counts, const struct profile_key *key, __u64 weight)
{
	struct profile_value one = {1, weight}, *v;
	long rc;

	v = bpf_map_lookup_elem(counts, key);
	if (!v) {
		rc = bpf_map_update_elem(counts, key, &one, BPF_NOEXIST);
		if (rc == 0)
			return;
		/* -EEXIST: another CPU created the slot in between */
		v = rc == -EEXIST ? bpf_map_lookup_elem(counts, key) : NULL;
		if (!v) {
			count(PROFILE_STAT_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->samples, 1);
	__sync_fetch_and_add(&v->weight, weight);
}

static __always_inline bool followed(__u32 tgid)
{
	if (filter_pids)
		return bpf_map_lookup_elem(&pids, &tgid) != NULL;
	return !(skip_idle && tgid == 0);
}

/* Every Nth event of ev (counted per CPU) takes a stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, PROFILE_NEVENTS);
} nth SEC(".maps");

static __always_inline bool take_nth(__u32 ev)
{
	__u32 every = ev_every[ev];
	__u64 *c;

	if (every <= 1)
		return true;
	c = bpf_map_lookup_elem(&nth, &ev);
	if (!c)
		return true;
	*c += 1;
	return *c % every == 0;
}

/* An event's weight, scaled for the events that took no stack. */
static __always_inline __u64 scaled(__u32 ev, __u64 weight)
{
	__u32 every = ev_every[ev];
	return every > 1 ? weight * every : weight;
}

/* Records one event of the current task, with its stacks now. */
static __always_inline void record(void *ctx, bool from_perf, __u32 ev, __u32 tgid, __u64 weight)
{
	struct profile_key key;

	count(PROFILE_STAT_SEEN);
	__sync_fetch_and_add(&ev_seen[ev], 1);
	if (*(volatile __u32 *)&active) {
		take_key(ctx, from_perf, &kstacks1, &ustacks1, &pystacks1, ev, tgid, &key);
		add_count(&counts1, &key, weight);
	} else {
		take_key(ctx, from_perf, &kstacks0, &ustacks0, &pystacks0, ev, tgid, &key);
		add_count(&counts0, &key, weight);
	}
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!followed(tgid))
		return 0;
	record(ctx, true, PROFILE_EV_CPU, tgid, cpu_period_ns);
	return 0;
}

static __always_inline void report_gen(__u32 kind, __u32 pid, __u32 parent, __u32 gen)
{
	struct profile_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->parent = parent;
	e->gen = gen;
	e->addr = 0;
	e->check = 0;
	e->flags = 0;
	e->bias[0] = e->bias[1] = e->bias[2] = 0;
	/* Exits wait for the next event that wakes user space (an exec of a
	 * program without a template, a table wanted, or the drain each
	 * second), as forks and placed execs do: they are taken in order,
	 * and nothing about them is lost by waiting, where a wakeup each
	 * costs user space a context switch.  The others wake it by force:
	 * the ring's own rule wakes only a reader that has caught up, and
	 * one waiting behind an event that did not wake it has not. */
	bpf_ringbuf_submit(e, kind == PROFILE_EVENT_FORK || kind == PROFILE_EVENT_EXIT
	                              ? BPF_RB_NO_WAKEUP
	                              : BPF_RB_FORCE_WAKEUP);
}

static __always_inline void report(__u32 kind, __u32 pid, __u32 parent)
{
	report_gen(kind, pid, parent, 0);
}

static __always_inline void report_want(__u32 pid, __u64 addr)
{
	struct profile_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return;
	}
	e->kind = PROFILE_EVENT_WANT;
	e->pid = pid;
	e->parent = 0;
	e->gen = 0;
	e->addr = addr;
	e->check = 0;
	e->flags = 0;
	e->bias[0] = e->bias[1] = e->bias[2] = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

static __always_inline void report_pycode(__u32 pid, __u32 gen, __u64 code, __u32 check)
{
	struct profile_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return; /* read at the drain, if still there */
	}
	e->kind = PROFILE_EVENT_PYCODE;
	e->pid = pid;
	e->parent = 0;
	e->gen = gen;
	e->addr = code;
	e->check = check;
	e->flags = 0;
	e->bias[0] = e->bias[1] = e->bias[2] = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

#define AUXV_AT_SYSINFO_EHDR 33 /* the vDSO's address */
#define AUXV_AT_BASE         7  /* the loader's load address */
#define AUXV_AT_ENTRY        9  /* the program's entry point */
#define AUXV_PAIRS           32

/* The current process's auxiliary vector: the program's entry point,
 * the loader's and the vDSO's addresses.  Returns false without them. */
static __always_inline bool read_auxv(__u64 *entry, __u64 *base, __u64 *vdso)
{
	const char *mm = NULL;
	__u64 pair[2];

	*entry = *base = *vdso = 0;
	if (!task_mm || !mm_auxv ||
	    bpf_probe_read_kernel(&mm, sizeof(mm),
	                          (const char *)bpf_get_current_task() + task_mm) ||
	    !mm)
		return false;
	for (int i = 0; i < AUXV_PAIRS; i++) {
		if (bpf_probe_read_kernel(pair, sizeof(pair), mm + mm_auxv + 16 * i) || !pair[0])
			break;
		if (pair[0] == AUXV_AT_BASE)
			*base = pair[1];
		else if (pair[0] == AUXV_AT_ENTRY)
			*entry = pair[1];
		else if (pair[0] == AUXV_AT_SYSINFO_EHDR)
			*vdso = pair[1];
	}
	return *base && *entry;
}

/* The state of one placement (place_list), for its bpf_loop steps. */
struct placing {
	const struct unwind_exec *t;
	struct unwind_proc *l;
	const __u64 *bias, *lm;
	__u32 level, k;
	int bad;
};

/* One step of a bubble sort of the placed list by start (step i compares
 * mappings i % (k - 1) and the next; k - 1 passes of k - 1 steps): the
 * libraries need not lie in the order they had where the template was
 * taken (the loader fills holes). */
static long sort_step(__u64 i, void *arg)
{
	struct placing *pl = arg;
	__u32 n = pl->k - 1;

	if (pl->k < 2 || n > UNWIND_EXEC_MAPS)
		return 1;
	__u32 j = (__u32)(i % n);
	/* the compiler knows j < n; the verifier must be told */
	asm volatile("" : "+r"(j));
	if (j >= UNWIND_EXEC_MAPS - 1)
		return 1;
	struct unwind_mapping *a = &pl->l->maps[j];
	struct unwind_mapping *b = a + 1;
	if (a->start > b->start) {
		struct unwind_mapping t = *a;
		*a = *b;
		*b = t;
	}
	return 0;
}

/* Places the template's mapping i into the list.  Returns 0 to go on, 1
 * to stop. */
static long place_step(__u64 i, void *arg)
{
	struct placing *pl = arg;
	const struct unwind_exec *t = pl->t;
	__u64 b;

	if (i >= UNWIND_EXEC_MAPS || i >= t->nmaps)
		return 1;
	const struct unwind_exec_mapping *m = &t->maps[i];
	__u32 kind = m->kind, lm = m->lm;
	if (kind == UNWIND_EXEC_LIBRARY) {
		if (pl->level != UNWIND_PLACED_ALL || !pl->lm)
			return 0;
		if (lm >= UNWIND_EXEC_LM) {
			pl->bad = 1;
			return 1;
		}
		b = pl->lm[lm];
	} else if (kind <= UNWIND_EXEC_VDSO) {
		b = pl->bias[kind];
	} else {
		pl->bad = 1;
		return 1;
	}
	if (!b && kind == UNWIND_EXEC_VDSO)
		return 0; /* no vDSO */
	struct unwind_mapping *d = &pl->l->maps[pl->k & (UNWIND_MAX_MAPS - 1)];
	d->start = b + m->start;
	d->bias = b + m->bias;
	d->size = m->size;
	d->table = m->table;
	pl->k++;
	return 0;
}

/* Places template t and writes it as tgid's walker list (level: which
 * mappings, UNWIND_PLACED_EXEC or _ALL), sorted by start.  bias[]: the
 * program's, the loader's and the vDSO's load biases (by enum
 * unwind_exec_kind); lm[]: each object's l_addr, for the libraries
 * (level ALL).  Returns true when written. */
static __always_inline bool place_list(__u32 tgid, const struct unwind_exec *t, const __u64 *bias,
                                       const __u64 *lm, __u32 level, const struct profile_file *f)
{
	__u32 zero = 0;
	struct unwind_proc *l = bpf_map_lookup_elem(&exec_list, &zero);

	if (!l || !t->nmaps)
		return false;
	struct placing pl = {.t = t, .l = l, .bias = bias, .lm = lm, .level = level};
	bpf_loop(UNWIND_EXEC_MAPS, place_step, &pl, 0);
	if (pl.bad || !pl.k)
		return false;
	if (pl.k > 1)
		bpf_loop((pl.k - 1) * (pl.k - 1), sort_step, &pl, 0);
	l->nmaps = pl.k;
	l->stale = 0;
	l->placed = level;
	l->exe_dev = f->dev;
	l->exe_ino = f->ino;
	if (bpf_map_update_elem(&unwind_procs, &tgid, l, BPF_ANY))
		return false;
	/* The interpreter, once the object holding it is placed. */
	__u32 pk = t->python_kind, plm = t->python_lm;
	if (python_on && t->has_python && (pk != UNWIND_EXEC_LIBRARY || lm) &&
	    plm < UNWIND_EXEC_LM && pk <= UNWIND_EXEC_LIBRARY) {
		__u64 b = pk == UNWIND_EXEC_LIBRARY ? lm[plm] : bias[pk < 3 ? pk : 0];
		struct unwind_python py = t->python;
		py.eval_start += b;
		py.eval_end += b;
		py.runtime += b;
		py.code_type += b;
		bpf_map_update_elem(&py_procs, &tgid, &py, BPF_ANY);
	}
	return true;
}

/* The identity of the file at `file` (a struct file *), into f. */
static __always_inline bool file_identity(const char *file, struct profile_file *f)
{
	const char *inode = NULL, *sb = NULL;
	__u32 dev = 0;

	if (!exe_known || !file ||
	    bpf_probe_read_kernel(&inode, sizeof(inode), file + file_inode) || !inode ||
	    bpf_probe_read_kernel(&f->ino, sizeof(f->ino), inode + inode_ino) ||
	    bpf_probe_read_kernel(&sb, sizeof(sb), inode + inode_sb) || !sb ||
	    bpf_probe_read_kernel(&dev, sizeof(dev), sb + sb_dev))
		return false;
	f->dev = dev;
	return true;
}

/* The exec event: the program file's identity (the raw tracepoint's third
 * argument, struct linux_binprm *), and whether user space knows it
 * (exe_templates).  An exec of a known program gets its walker list here
 * and wakes no one: the loader's hook, next, lists the libraries. */
static __always_inline void report_exec(void *ctx, __u32 pid, __u32 gen)
{
	const char *bprm = (const char *)((const __u64 *)ctx)[2];
	const char *file = NULL;
	struct profile_file f = {};
	__u64 bias[3] = {0, 0, 0}, entry = 0;
	__u32 flags = 0;
	struct profile_event *e;

	if (!bpf_probe_read_kernel(&file, sizeof(file), bprm + bprm_file) &&
	    file_identity(file, &f)) {
		const struct unwind_exec *t = bpf_map_lookup_elem(&exe_templates, &f);
		if (t) {
			flags = PROFILE_EXEC_KNOWN;
			if (read_auxv(&entry, &bias[UNWIND_EXEC_LOADER], &bias[UNWIND_EXEC_VDSO])) {
				bias[UNWIND_EXEC_PROGRAM] = entry - t->entry;
				if (place_list(pid, t, bias, NULL, UNWIND_PLACED_EXEC, &f))
					flags |= PROFILE_EXEC_PLACED;
			}
		}
	} else {
		f.dev = f.ino = 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return;
	}
	e->kind = PROFILE_EVENT_EXEC;
	e->pid = pid;
	e->parent = 0;
	e->gen = gen;
	e->addr = f.ino;
	e->check = (__u32)f.dev;
	e->flags = flags;
	e->bias[0] = bias[0];
	e->bias[1] = bias[1];
	e->bias[2] = bias[2];
	bpf_ringbuf_submit(e, flags ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

/* A raw tracepoint's context is its arguments as an array of u64, read
 * through a plain pointer: the vmlinux.h struct for it would make the
 * access a CO-RE relocation. */
SEC("raw_tp/sched_process_fork")
int on_fork(void *ctx)
{
	/* (struct task_struct *parent, struct task_struct *child); the
	 * parent is the current task */
	const void *child = (const void *)((const __u64 *)ctx)[1];
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32, ctgid = 0;
	__u8 one = 1;

	if (bpf_probe_read_kernel(&ctgid, sizeof(ctgid), (const char *)child + tgid_offset))
		return 0;

	if (ptgid == ctgid)
		return 0; /* a new thread: already followed through its tgid */
	/* A new process starts at exec count 0, whatever an earlier holder
	 * of the pid did. */
	bpf_map_delete_elem(&execs, &ctgid);
	if (filter_pids) {
		if (!bpf_map_lookup_elem(&pids, &ptgid))
			return 0;
		if (bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY))
			count(PROFILE_STAT_PIDS_FULL);
	}
	/* The child has its parent's mappings: the walker can use the
	 * parent's list at once, before user space (woken by a later event)
	 * writes the child's own. */
	struct unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &ptgid);
	bool listed = up && bpf_map_update_elem(&unwind_procs, &ctgid, up, BPF_ANY) == 0;
	struct unwind_python *py = bpf_map_lookup_elem(&py_procs, &ptgid);
	if (py)
		bpf_map_update_elem(&py_procs, &ctgid, py, BPF_ANY);
	struct profile_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return 0;
	}
	e->kind = PROFILE_EVENT_FORK;
	e->pid = ctgid;
	e->parent = ptgid;
	e->gen = 0;
	e->addr = 0;
	e->check = 0;
	e->flags = listed ? PROFILE_FORK_LISTED : 0;
	e->bias[0] = e->bias[1] = e->bias[2] = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP); /* taken in order at the next wake */
	return 0;
}

/* (struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm); p
 * is the current task */
SEC("raw_tp/sched_process_exec")
int on_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	__u32 one = 1, *gen;

	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	gen = bpf_map_lookup_elem(&execs, &tgid);
	if (gen)
		one = *gen + 1;
	bpf_map_update_elem(&execs, &tgid, &one, BPF_ANY);
	/* The old program's mappings no longer apply: frame pointers until
	 * user space writes the new ones (report_exec writes a known
	 * program's first list itself). */
	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&py_procs, &tgid);
	bpf_map_delete_elem(&exec_stacks, &tgid);
	report_exec(ctx, tgid, one);
	return 0;
}

/* sched_prepare_exec (Linux 6.10), at the start of begin_new_exec: the
 * point of no return of an exec, before the old memory goes.  Walks the
 * user stack that called execve while it can still be read
 * (exec_stacks). */
SEC("raw_tp/sched_prepare_exec")
int on_exec_begin(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0, slot = SLOT_TP;
	struct profile_key key = {};

	if (!followed(tgid) || unwind_mode == PROFILE_UNWIND_FP ||
	    !bpf_map_lookup_elem(&unwind_procs, &tgid))
		return 0;
	walk_user(ctx, false, NULL, NULL, &key, tgid, false);
	struct walk *w = bpf_map_lookup_elem(&walks, &slot);
	struct exec_stack *es = bpf_map_lookup_elem(&exec_scratch, &zero);
	if (!w || !es || key.user_stack != PROFILE_USTACK)
		return 0; /* Python frames, or nothing walked: as before */
	__builtin_memcpy(&es->st, &w->st, sizeof(es->st));
	es->hash = key.user_hash;
	bpf_map_update_elem(&exec_stacks, &tgid, es, BPF_ANY);
	return 0;
}

/* (struct task_struct *p, ...); p is the current task.  Only a process's
 * main thread: a process whose other threads outlive it is known again at
 * the next drain. */
SEC("raw_tp/sched_process_exit")
int on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if ((__u32)id != tgid)
		return 0;
	if (filter_pids) {
		if (!bpf_map_lookup_elem(&pids, &tgid))
			return 0;
		bpf_map_delete_elem(&pids, &tgid);
	}
	bpf_map_delete_elem(&execs, &tgid);
	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&py_procs, &tgid);
	bpf_map_delete_elem(&exec_stacks, &tgid);
	bpf_map_delete_elem(&loaded_gen, &tgid);
	report(PROFILE_EVENT_EXIT, tgid, 0);
	return 0;
}

/* The dynamic loader's _dl_debug_state() (collector/ldso.c), with
 * _r_debug.r_state RT_CONSISTENT (0) once the program's libraries are
 * mapped, before their relocation: user space reads the maps again now,
 * so that the process's first samples in its libraries are walked,
 * where the snapshot taken at the exec holds only the program and the
 * loader.  ldso_rdebug_delta is &_r_debug - &_dl_debug_state; the
 * function is found from the pc rounded down to 16 bytes (ldso.c checks
 * its alignment), whichever side of the breakpoint the pc is. */
const volatile __s64 ldso_rdebug_delta = 0;

SEC("uprobe")
int on_ldso_state(void *ctx)
{
	const struct x86_regs *regs = ctx;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	__s32 state = -1;

	if (!followed(tgid))
		return 0;
	__u64 fn = regs->ip & ~0xfull;
	if (bpf_probe_read_user(&state, sizeof(state), (const void *)(fn + ldso_rdebug_delta + 24)))
		return 0;
	if (state != 0)
		return 0;
	struct profile_loaded_event *e = bpf_map_lookup_elem(&loaded_scratch, &zero);
	if (!e)
		return 0;
	e->kind = PROFILE_EVENT_LOADED;
	e->pid = tgid;
	e->nlm = 0;
	e->flags = 0;
	e->exe_dev = e->exe_ino = 0;
	/* The first time in this program (the libraries it was linked
	 * with, not a dlopen): the loader's list, for its template. */
	__u32 *gen = bpf_map_lookup_elem(&execs, &tgid), g = gen ? *gen : 0;
	__u32 *seen = bpf_map_lookup_elem(&loaded_gen, &tgid);
	if (!seen || *seen != g + 1) {
		__u32 v = g + 1;
		bpf_map_update_elem(&loaded_gen, &tgid, &v, BPF_ANY);
		e->flags |= PROFILE_LOADED_FIRST;
		__u64 lmp = 0, ent[4];
		/* r_debug.r_map; each link_map: l_addr, l_name, l_ld, l_next */
		bpf_probe_read_user(&lmp, sizeof(lmp), (const void *)(fn + ldso_rdebug_delta + 8));
		for (__u32 i = 0; i < UNWIND_EXEC_LM && lmp; i++) {
			if (bpf_probe_read_user(ent, sizeof(ent), (const void *)lmp))
				break;
			e->addr[i] = ent[0];
			e->dyn[i] = ent[2] ? ent[2] - ent[0] : 0;
			e->nlm = i + 1;
			lmp = ent[3];
		}
		if (lmp)
			e->nlm = 0; /* more objects than a template holds */
		struct unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &tgid);
		if (up && up->placed == UNWIND_PLACED_EXEC && e->nlm) {
			struct profile_file f = {.dev = up->exe_dev, .ino = up->exe_ino};
			const struct unwind_exec *t = bpf_map_lookup_elem(&exe_templates, &f);
			__u64 bias[3], entry;
			bool same = t && t->nlm == e->nlm;
			for (__u32 i = 0; i < UNWIND_EXEC_LM && same; i++)
				if (i < e->nlm && t->dyn[i] != e->dyn[i])
					same = false;
			if (same &&
			    read_auxv(&entry, &bias[UNWIND_EXEC_LOADER], &bias[UNWIND_EXEC_VDSO])) {
				bias[UNWIND_EXEC_PROGRAM] = entry - t->entry;
				e->exe_dev = f.dev;
				e->exe_ino = f.ino;
				e->bias[0] = bias[0];
				e->bias[1] = bias[1];
				e->bias[2] = bias[2];
				if (place_list(tgid, t, bias, e->addr, UNWIND_PLACED_ALL, &f))
					e->flags |= PROFILE_LOADED_PLACED;
			}
		}
	}
	/* A process placed whole wakes no one: user space names it from the
	 * template, at its next wake. */
	bpf_ringbuf_output(&events, e, sizeof(*e),
	                   e->flags & PROFILE_LOADED_PLACED ? BPF_RB_NO_WAKEUP
	                                                    : BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* ---- events with a beginning and an end ---------------------------------
 * Off-CPU time and block-I/O time are charged to the stack taken at the
 * beginning (switch-out, submission) by a count added at the end.  The
 * stacks live in the map set active at the beginning, so the count goes
 * to that set too, whichever is active at the end: a count added after
 * that set's drain waits there for its next drain, and its stacks, which
 * no count referred to at the drain, are still there. */
struct pending {
	__u64 ts;
	struct profile_key key;
	__u32 set;
	__u32 left; /* block-time: sectors of the bio not completed yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32); /* thread id */
	__type(value, struct pending);
	__uint(max_entries, 16384);
} offcpu_start SEC(".maps");

struct bio_key {
	__u64 sector;
	__u64 disk; /* the struct gendisk's address */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct bio_key);
	__type(value, struct pending);
	__uint(max_entries, 16384);
} bio_start SEC(".maps");

static __always_inline void begin(void *ctx, __u32 ev, __u32 tgid, struct pending *p)
{
	p->ts = bpf_ktime_get_ns();
	p->set = *(volatile __u32 *)&active;
	p->left = 0;
	if (p->set)
		take_key(ctx, false, &kstacks1, &ustacks1, &pystacks1, ev, tgid, &p->key);
	else
		take_key(ctx, false, &kstacks0, &ustacks0, &pystacks0, ev, tgid, &p->key);
}

static __always_inline void end(const struct pending *p, __u32 ev, __u64 weight)
{
	count(PROFILE_STAT_SEEN);
	__sync_fetch_and_add(&ev_seen[ev], 1);
	if (p->set)
		add_count(&counts1, &p->key, weight);
	else
		add_count(&counts0, &p->key, weight);
}

/* (bool preempt, struct task_struct *prev, struct task_struct *next,
 * unsigned int prev_state); prev is the current task. */
SEC("raw_tp/sched_switch")
int on_switch(void *ctx)
{
	const __u64 *args = ctx;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, next_tid = 0;
	bool blocked = !args[0] && (__u32)args[3] != 0; /* not preempted, not runnable */
	struct pending st, *p;

	if (tid && (blocked || offcpu_preempt) && followed(tgid) && take_nth(PROFILE_EV_OFFCPU)) {
		begin(ctx, PROFILE_EV_OFFCPU, tgid, &st);
		if (bpf_map_update_elem(&offcpu_start, &tid, &st, BPF_ANY))
			count(PROFILE_STAT_COUNTS_FULL);
	}
	if (bpf_probe_read_kernel(&next_tid, sizeof(next_tid),
	                          (const char *)args[2] + pid_offset) ||
	    !next_tid)
		return 0;
	p = bpf_map_lookup_elem(&offcpu_start, &next_tid);
	if (p) {
		__u64 d = bpf_ktime_get_ns() - p->ts;
		if (d >= offcpu_min_ns)
			end(p, PROFILE_EV_OFFCPU, scaled(PROFILE_EV_OFFCPU, d));
		bpf_map_delete_elem(&offcpu_start, &next_tid);
	}
	return 0;
}

/* on_rss, a classic tracepoint program, returns 1: 0 would make the
 * kernel drop the event for every other perf user of the tracepoint (perf
 * record -e kmem:rss_stat saw nothing while flamefs recorded rss).  Raw
 * tracepoint programs' return values are ignored. */

/* A tracepoint record's field at a byte offset user space found. */
static __always_inline __u64 field(void *ctx, __u32 off, __u32 size)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, size & 15, (const char *)ctx + off);
	return v;
}

/* A kernel struct's member at a byte offset user space found. */
static __always_inline __u64 kmember(__u64 base, __u32 off, __u32 size)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, size & 15, (const char *)base + off);
	return v;
}

/* The last total of each (mm, counter), to turn rss_stat's totals into
 * gains. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __s64);
	__uint(max_entries, 16384);
} rss_last SEC(".maps");

/* The one classic tracepoint: its record's size is the exact total of
 * the mm's counter, percpu_counter_sum_positive(), summed over every
 * CPU by the kernel as it fills the record.  A raw tracepoint gets only
 * (mm, member), and summing the per-CPU parts here would need each
 * CPU's per-cpu offset, which is neither in kallsyms (without
 * CONFIG_KALLSYMS_ALL) nor reachable without the vmlinux BTF.  User
 * space attaches it by its id, reading that from tracefs, mounted in a
 * private mount namespace when it is not mounted (record-events.c). */
SEC("tracepoint/kmem/rss_stat")
int on_rss(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 member = (__u32)field(ctx, rss_member, 4);
	__s64 size = (__s64)field(ctx, rss_size, 8), *last, gain;
	__u64 key;

	/* MM_FILEPAGES 0, MM_ANONPAGES 1, MM_SHMEMPAGES 3; not MM_SWAPENTS */
	if (!field(ctx, rss_curr, 4) || member > 3 || member == 2 || !followed(tgid))
		return 1;
	key = field(ctx, rss_mm, 4) << 2 | member;
	last = bpf_map_lookup_elem(&rss_last, &key);
	if (!last) {
		bpf_map_update_elem(&rss_last, &key, &size, BPF_ANY);
		return 1; /* the first sight gives the level, not a gain */
	}
	gain = size - *last;
	*last = size;
	if (gain > 0 && take_nth(PROFILE_EV_RSS))
		record(ctx, false, PROFILE_EV_RSS, tgid, scaled(PROFILE_EV_RSS, (__u64)gain));
	return 1;
}

/* The block programs read what the block tracepoints' records hold, from
 * their arguments, as the kernel fills the records: a bio's sector
 * (bi_iter.bi_sector), sectors (bi_iter.bi_size >> 9) and op
 * (bi_opf & REQ_OP_MASK); a request's sector (blk_rq_pos(), __sector)
 * and the sectors completed (nr_bytes >> 9).  The record's dev,
 * disk_devt() of the bio's bi_bdev->bd_disk and of the request's
 * q->disk, only matches a bio to its request: the gendisk itself does
 * that. */
#define REQ_OP_MASK 0xffu /* (1 << REQ_OP_BITS) - 1 */

/* (struct bio *bio) */
SEC("raw_tp/block_bio_queue")
int on_bio(void *ctx)
{
	__u64 bio = ((const __u64 *)ctx)[0];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 nr = (__u32)kmember(bio, bio_size, 4) >> 9;
	__u64 bytes = (__u64)nr << 9;
	__u32 op = (__u32)kmember(bio, bio_opf, 4) & REQ_OP_MASK;
	struct pending st;

	if (!followed(tgid) || !bytes)
		return 0;
	/* Discards and secure erases (the record's rwbs "D", "DE") move no
	 * data. */
	if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE)
		return 0;
	if ((ev_flags[PROFILE_EV_BLOCK] & PROFILE_EV_ON) && take_nth(PROFILE_EV_BLOCK))
		record(ctx, false, PROFILE_EV_BLOCK, tgid, scaled(PROFILE_EV_BLOCK, bytes));
	if ((ev_flags[PROFILE_EV_BLOCK_TIME] & PROFILE_EV_ON) && take_nth(PROFILE_EV_BLOCK_TIME)) {
		struct bio_key k = {.sector = kmember(bio, bio_sector, 8),
		                    .disk = kmember(kmember(bio, bio_bdev, 8), bdev_disk, 8)};
		begin(ctx, PROFILE_EV_BLOCK_TIME, tgid, &st);
		st.left = nr;
		if (bpf_map_update_elem(&bio_start, &k, &st, BPF_ANY))
			count(PROFILE_STAT_COUNTS_FULL);
	}
	return 0;
}

/* (struct request *rq, blk_status_t error, unsigned int nr_bytes).  A bio
 * the block layer split completes piece by piece, in order: the time is
 * charged when the piece holding its last sector completes (the entry
 * moves along to the next piece's first sector meanwhile). */
SEC("raw_tp/block_rq_complete")
int on_rq_complete(void *ctx)
{
	const __u64 *args = ctx;
	__u64 rq = args[0];
	struct bio_key k = {.sector = kmember(rq, rq_sector, 8),
	                    .disk = kmember(kmember(rq, rq_q, 8), q_disk, 8)};
	__u32 done = (__u32)args[2] >> 9;
	struct pending *p = bpf_map_lookup_elem(&bio_start, &k), rest;

	if (!p)
		return 0;
	if (done && p->left > done) {
		rest = *p;
		rest.left -= done;
		bpf_map_delete_elem(&bio_start, &k);
		k.sector += done;
		bpf_map_update_elem(&bio_start, &k, &rest, BPF_ANY);
		return 0;
	}
	end(p, PROFILE_EV_BLOCK_TIME, scaled(PROFILE_EV_BLOCK_TIME, bpf_ktime_get_ns() - p->ts));
	bpf_map_delete_elem(&bio_start, &k);
	return 0;
}

#define AF_INET     2
#define AF_INET6    10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MSG_PEEK    2

/* (struct sock *sk, int ret, int flags): the record's family and
 * protocol are sk->sk_family and sk->sk_protocol. */
static __always_inline int on_sock(void *ctx, bool recv)
{
	const __u64 *args = ctx;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u16 family = (__u16)kmember(args[0], sk_family, 2);
	__u16 proto = (__u16)kmember(args[0], sk_protocol, 2);
	__s32 ret = (__s32)args[1];

	if (ret <= 0 || (family != AF_INET && family != AF_INET6) ||
	    (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return 0;
	if (recv && ((__u32)args[2] & MSG_PEEK))
		return 0;
	if (followed(tgid) && take_nth(PROFILE_EV_NET))
		record(ctx, false, PROFILE_EV_NET, tgid, scaled(PROFILE_EV_NET, (__u64)ret));
	return 0;
}

SEC("raw_tp/sock_send_length")
int on_send(void *ctx)
{
	return on_sock(ctx, false);
}

SEC("raw_tp/sock_recv_length")
int on_recv(void *ctx)
{
	return on_sock(ctx, true);
}
