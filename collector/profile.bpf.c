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
 * process's mappings while it still exists.  Everything that cannot be
 * kept is counted in `stats`.
 *
 * Nothing here needs the kernel's BTF at load time (no CO-RE relocation,
 * no tp_btf): the tracepoints are raw ones and the one kernel field read,
 * task_struct.tgid, is at an offset user space finds (kbtf.c), since
 * having libbpf load and index the whole vmlinux BTF cost more CPU than
 * the rest of a short recording's start-up.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "profile.h"

#define E2BIG  7
#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile bool filter_pids = false; /* only processes in `pids` */
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
const volatile bool skip_idle = true; /* without a filter: skip pid 0 */
const volatile __u32 tgid_offset = 0; /* of tgid in struct task_struct */

/* Written by user space through the mmap'd .bss. */
__u32 active = 0; /* which map set samples go to */
__u64 stats[PROFILE_NSTATS] = {};

/* Sizes are set by user space from frequency x drain interval. */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 1024);
};
struct stacks_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_DEPTH * sizeof(__u64));
	__uint(max_entries, 1024);
};

struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");
struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 8192);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

static __always_inline void count(enum profile_stat s)
{
	__sync_fetch_and_add(&stats[s], 1);
}

static __always_inline __s32 stack_id(void *ctx, void *stacks, __u64 flags,
                                      enum profile_stat collision)
{
	long id = bpf_get_stackid(ctx, stacks, flags);

	if (id >= 0)
		return (__s32)id;
	if (id == -EFAULT)
		return PROFILE_NO_STACK;
	count(id == -EEXIST ? collision : PROFILE_STAT_STACK_ERROR);
	return PROFILE_LOST_STACK;
}

static __always_inline void record(void *ctx, void *counts, void *stacks, __u32 tgid)
{
	struct profile_key key = {
	        .pid = tgid,
	        .user_stack = PROFILE_NO_STACK,
	        .kernel_stack = PROFILE_NO_STACK,
	};
	__u64 one = 1, *v;
	long rc;

	if (user_stacks)
		key.user_stack =
		        stack_id(ctx, stacks, BPF_F_USER_STACK, PROFILE_STAT_USER_COLLISION);
	if (kernel_stacks)
		key.kernel_stack = stack_id(ctx, stacks, 0, PROFILE_STAT_KERNEL_COLLISION);

	v = bpf_map_lookup_elem(counts, &key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	rc = bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST);
	if (rc == -EEXIST) {
		/* Another CPU created the slot in between. */
		v = bpf_map_lookup_elem(counts, &key);
		if (v) {
			__sync_fetch_and_add(v, 1);
			return;
		}
	}
	if (rc)
		count(PROFILE_STAT_COUNTS_FULL);
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (filter_pids) {
		if (!bpf_map_lookup_elem(&pids, &tgid))
			return 0;
	} else if (skip_idle && tgid == 0) {
		return 0;
	}
	count(PROFILE_STAT_SEEN);
	if (*(volatile __u32 *)&active)
		record(ctx, &counts1, &stacks1, tgid);
	else
		record(ctx, &counts0, &stacks0, tgid);
	return 0;
}

static __always_inline void report(__u32 kind, __u32 pid, __u32 parent)
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
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
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
	if (filter_pids) {
		if (!bpf_map_lookup_elem(&pids, &ptgid))
			return 0;
		if (bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY))
			count(PROFILE_STAT_PIDS_FULL);
	}
	report(PROFILE_EVENT_FORK, ctgid, ptgid);
	return 0;
}

/* (struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm); p
 * is the current task */
SEC("raw_tp/sched_process_exec")
int on_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	report(PROFILE_EVENT_EXEC, tgid, 0);
	return 0;
}
