/*
 * profile.h — what the sampler's BPF side (profile.bpf.c) and its user
 * side (record.c) share: the aggregation key, the counters of everything
 * the kernel side could not keep, and the process events it reports.
 * Include it after vmlinux.h (BPF) or <linux/types.h> (user space).
 */
#ifndef FLAMEFS_PROFILE_H
#define FLAMEFS_PROFILE_H

/* Frames kept per stack: the kernel's default perf_event_max_stack. */
#define PROFILE_MAX_DEPTH 127

/* A stack id that holds no stack: none was asked for, or the task had
 * none (a kernel thread's user stack, a user-mode sample's kernel stack). */
#define PROFILE_NO_STACK (-1)
/* The stack existed but could not be kept (hash collision or error); the
 * sample still counts, under an "[unknown]" frame. */
#define PROFILE_LOST_STACK (-2)

/* One aggregation slot: samples of process `pid` (a tgid) with these two
 * stacks.  The value is a __u64 sample count. */
struct profile_key {
	__u32 pid;
	__s32 user_stack;
	__s32 kernel_stack;
	__u32 pad;
};

/* Indices into the `stats` array in the BPF program's .bss. */
enum profile_stat {
	PROFILE_STAT_SEEN = 0,         /* samples of followed processes */
	PROFILE_STAT_USER_COLLISION,   /* user stack lost to a hash collision */
	PROFILE_STAT_KERNEL_COLLISION, /* kernel stack lost to a hash collision */
	PROFILE_STAT_STACK_ERROR,      /* a stack lost for another reason */
	PROFILE_STAT_COUNTS_FULL,      /* sample dropped: counts map full */
	PROFILE_STAT_PIDS_FULL,        /* a child not followed: pid set full */
	PROFILE_STAT_EVENTS_LOST,      /* a fork/exec event not reported */
	PROFILE_NSTATS,
};

enum profile_event_kind {
	PROFILE_EVENT_FORK = 1, /* pid was forked by parent */
	PROFILE_EVENT_EXEC = 2, /* pid executed a new program */
};

/* Sent through the `events` ring buffer. */
struct profile_event {
	__u32 kind;
	__u32 pid;
	__u32 parent;
	__u32 pad;
};

#endif
