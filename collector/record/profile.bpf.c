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
 * One BPF object from this file and the three it includes once each, so
 * that their functions inline into the programs: profile-walk.bpf.h (the
 * stack walks), profile-process.bpf.h (fork, exec, exit, the loader) and
 * profile-events.bpf.h (the events other than the cpu-clock sample) and
 * profile-spans.bpf.h (record --span: each thread's open spans).
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
#define EBUSY  16
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
/* Each sample goes with its moment into its set's samples ring when
 * there is room (profile.h: struct profile_sample), else into its
 * counts map. */
const volatile bool moments_on = false;
/* What the key carries for the labels (record --labels): the cgroup id
 * (cgroup, container) and the thread's name (thread). */
const volatile bool label_cgroup = false;
const volatile bool label_thread = false;
/* Byte offsets found in the kernel's BTF by user space (kbtf.c). */
const volatile __u32 pid_offset = 0; /* task_struct.pid */
/* The path from an exec's linux_binprm to its program file's identity:
 * linux_binprm.file, file.f_inode, inode.i_ino, inode.i_sb and
 * super_block.s_dev; exe_known is false when one was not found (every exec
 * is then read at once). */
const volatile __u32 bprm_file = 0, file_inode = 0, inode_ino = 0, inode_sb = 0, sb_dev = 0;
const volatile bool exe_known = false;
/* task_struct.utask, and uprobe_task's vaddr and xol_vaddr: a thread
 * stopped at a uprobe runs the probed instruction from a slot of the
 * [uprobes] page, xol_vaddr, in place of vaddr (0: not found; such a
 * sample's first pc then falls in no mapping). */
const volatile __u32 task_utask = 0, utask_vaddr = 0, utask_xol_vaddr = 0;
/* vm_area_struct's vm_start, vm_end, vm_pgoff and vm_file: where the
 * walker finds a pc's file by itself (find_vma_table() in
 * profile-walk.bpf.h); vma_known is false without them (or without
 * exe_known's file offsets), and such pcs are walked by frame pointers. */
const volatile __u32 vma_start = 0, vma_end = 0, vma_pgoff = 0, vma_file = 0;
const volatile bool vma_known = false;
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
/* The vfs events': pt_regs' orig_ax (the system call) and di, si, dx (its
 * first three arguments); from a task to an fd's file, task_struct.files,
 * files_struct.fdt, fdtable.max_fds and fdtable.fd; from a file to its
 * file system's name, file.f_inode, inode.i_sb, super_block.s_type and
 * file_system_type.name. */
const volatile __u32 regs_nr = 0, regs_arg0 = 0, regs_arg1 = 0, regs_arg2 = 0;
/* task_struct.thread_info.status (x86: TS_COMPAT marks a 32-bit call) */
const volatile __u32 ti_status = 0;
const volatile __u32 task_files = 0, files_fdt = 0, fdt_max_fds = 0, fdt_fd = 0;
const volatile __u32 vfs_f_inode = 0, vfs_i_sb = 0, sb_type = 0, fstype_name = 0;

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

/* Samples with their moments, one ring per map set: user space reads a
 * set's ring when it drains that set.  Sized by user space. */
struct samples_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};
struct samples_ring samples0 SEC(".maps");
struct samples_ring samples1 SEC(".maps");
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

/* Each file's table by the file (unwind.h), written by user space when
 * the table is loaded, deleted with its file; sized as unwind_tables. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct unwind_file_key);
	__type(value, struct unwind_file);
	__uint(max_entries, 1024);
} unwind_files SEC(".maps");

/* Mappable: user space writes a table's rows through a window of memory
 * rather than one bpf(2) element at a time, which would cost more than
 * building the table. */
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
	__u64 py_frame;              /* the next interpreter frame to push, 0: none */
	__u32 has_py;                /* py is set */
	__u32 py_looked;             /* the thread's state was looked for */
	__u32 py_dead;               /* none found, or the walk was cut: natives only */
	__u32 py_mode;               /* pushing an evaluation's frames */
	__u32 skip_push;             /* the native pc was replaced by Python frames */
	__u32 npy;                   /* Python frames pushed */
	__u64 last_code, last_check; /* the last code object checked */
	/* The last vma looked up (find_vma_table): [vma_lo, vma_hi), its
	 * table (UNWIND_NO_TABLE: none by its file) and bias; vma_busy: a
	 * lookup was refused, none more in this walk. */
	__u64 vma_lo, vma_hi, vma_bias;
	__u32 vma_table, vma_busy;
	__u32 no_list;                    /* the process has no list: every pc by its vma */
	__u32 tabled;                     /* some frame was found in a table */
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

/* Process events (fork, exec, exit, the loader's hook, wants).  4 MiB
 * holds 65,536 of them: a fork loop of 20,000 processes beside a
 * recorder slowed by ASan overflowed 256 KiB by 16,000 events, and a
 * short process whose exec event is lost and that exits before a drain
 * can be named by nothing (its samples go to [unknown]). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

static __always_inline void count(enum profile_stat s)
{
	__sync_fetch_and_add(&stats[s], 1);
}

/* The current task has user memory to walk by its vmas (not a kernel
 * thread), and the walker can find its files (vma_known). */
static __always_inline bool has_user_memory(void)
{
	const char *mm = NULL;

	return vma_known &&
	       bpf_probe_read_kernel(&mm, sizeof(mm),
	                             (const char *)bpf_get_current_task() + task_mm) == 0 &&
	       mm;
}

#include "profile-walk.bpf.h"

static __always_inline bool followed(__u32 tgid)
{
	if (filter_pids)
		return bpf_map_lookup_elem(&pids, &tgid) != NULL;
	return !(skip_idle && tgid == 0);
}

#include "profile-spans.bpf.h"

/* ---- recording an event ------------------------------------------------ */

/* Fills key with the current task's stacks for event ev, kept in one map
 * set (stacks, ustacks).  Returns the id of the thread's innermost span
 * (record --span), 0 outside spans. */
static __always_inline __u64 take_key(void *ctx, bool from_perf, void *kstacks, void *ustacks,
                                      void *pystacks, __u32 ev, __u32 tgid, struct profile_key *key)
{
	__u32 *gen = bpf_map_lookup_elem(&execs, &tgid);

	key->pid = tgid;
	key->user_stack = PROFILE_NO_STACK;
	key->kernel_stack = PROFILE_NO_STACK;
	key->gen = gen ? *gen : 0;
	key->user_hash = 0;
	key->event = ev;
	key->fs = 0;
	key->kernel_hash = 0;
	key->cgroup = label_cgroup ? bpf_get_current_cgroup_id() : 0;
	if (!label_thread || bpf_get_current_comm(key->comm, sizeof(key->comm)) < 0)
		__builtin_memset(key->comm, 0, sizeof(key->comm));
	__u64 span_id;
	key->span = span_now((__u32)bpf_get_current_pid_tgid(), &span_id);
	if (ev_flags[ev] & PROFILE_EV_USER) {
		if (unwind_mode != PROFILE_UNWIND_FP &&
		    (bpf_map_lookup_elem(&unwind_procs, &tgid) || has_user_memory())) {
			walk_user(ctx, from_perf, ustacks, pystacks, key, tgid, true);
		} else {
			fp_user_stack(ctx, from_perf, ustacks, key);
		}
	}
	if (ev_flags[ev] & PROFILE_EV_KERNEL)
		kernel_stack(ctx, from_perf, kstacks, key);
	return span_id;
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

/* Adds one sample taken at `ts` by thread `tid` inside span `span_id`
 * (0: none): as a record of `ring` when moments are on and it has room,
 * else as a count of `counts`.  A sample is in one of the two, never
 * both. */
static __always_inline void add_sample(void *ring, void *counts, const struct profile_key *key,
                                       __u64 weight, __u64 ts, __u32 tid, __u64 span_id)
{
	if (moments_on) {
		struct profile_sample *s = bpf_ringbuf_reserve(ring, sizeof(*s), 0);
		if (s) {
			s->time = ts;
			s->weight = weight;
			s->span = span_id;
			s->tid = tid;
			s->pad = 0;
			s->key = *key;
			/* No wakeup: user space reads the ring at each drain. */
			bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
			return;
		}
		count(PROFILE_STAT_RING_FULL);
	}
	add_count(counts, key, weight);
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
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ts = bpf_ktime_get_ns();

	count(PROFILE_STAT_SEEN);
	__sync_fetch_and_add(&ev_seen[ev], 1);
	if (*(volatile __u32 *)&active) {
		__u64 sid =
		        take_key(ctx, from_perf, &kstacks1, &ustacks1, &pystacks1, ev, tgid, &key);
		add_sample(&samples1, &counts1, &key, weight, ts, tid, sid);
	} else {
		__u64 sid =
		        take_key(ctx, from_perf, &kstacks0, &ustacks0, &pystacks0, ev, tgid, &key);
		add_sample(&samples0, &counts0, &key, weight, ts, tid, sid);
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

#include "profile-process.bpf.h"

#include "profile-events.bpf.h"
