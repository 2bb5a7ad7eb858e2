/*
 * profile.h — what the sampler's BPF side (profile.bpf.c) and its user
 * side (record.c) share: the aggregation key, the counters of everything
 * the kernel side could not keep, and the process events it reports.
 * Include it after vmlinux.h (BPF) or <linux/types.h> (user space).
 */
#ifndef FLAMEFS_PROFILE_H
#define FLAMEFS_PROFILE_H

#include "unwind.h" /* the templates' sizes */

/* Frames kept per stack: the kernel's default perf_event_max_stack. */
#define PROFILE_MAX_DEPTH 127

/* A stack id that holds no stack: none was asked for, or the task had
 * none (a kernel thread's user stack, a user-mode sample's kernel stack). */
#define PROFILE_NO_STACK (-1)
/* The stack existed but could not be kept (hash collision or error); the
 * sample still counts, under an "[unknown]" frame. */
#define PROFILE_LOST_STACK (-2)
/* A user stack, walked with CFI tables (unwind.h) or by frame pointers:
 * the `ustacks` entry keyed by the key's user_hash. */
#define PROFILE_USTACK (-3)
/* A kernel stack: the `kstacks` entry keyed by the key's kernel_hash. */
#define PROFILE_KSTACK (-5)

/* What `record -e` can record, each its own series. */
enum profile_ev {
	PROFILE_EV_CPU = 0,    /* cpu-clock samples, weight: nanoseconds */
	PROFILE_EV_OFFCPU,     /* blocked time, from switch-out to switch-in */
	PROFILE_EV_RSS,        /* resident memory gained: bytes */
	PROFILE_EV_BLOCK,      /* block I/O issued: bytes */
	PROFILE_EV_BLOCK_TIME, /* block I/O from issue to completion: ns */
	PROFILE_EV_NET,        /* TCP and UDP bytes sent and received */
	PROFILE_EV_VFS_READ,   /* bytes read through the VFS: a stack per N */
	PROFILE_EV_VFS_WRITE,  /* bytes written through the VFS: a stack per N */
	PROFILE_NEVENTS,
};

/* ev_flags[] bits, per event. */
#define PROFILE_EV_ON     1u /* recorded */
#define PROFILE_EV_USER   2u /* with user stacks */
#define PROFILE_EV_KERNEL 4u /* with kernel stacks */

/* One aggregation slot: events of process `pid` (a tgid) with these two
 * stacks, in this cgroup and thread name.  The value is a struct
 * profile_value. */
struct profile_key {
	__u32 pid;
	__s32 user_stack;
	__s32 kernel_stack;
	__u32 gen;         /* the process's execs seen so far: samples taken
	                    * before an exec are resolved against the program
	                    * that ran then */
	__u64 user_hash;   /* with PROFILE_USTACK or PROFILE_PY_STACK, else 0 */
	__u32 event;       /* enum profile_ev */
	__u32 fs;          /* vfs-read, vfs-write: the file's file system
	                    * type, a key of `fs_names` (0: unknown);
	                    * other events 0 */
	__u64 kernel_hash; /* with PROFILE_KSTACK, else 0 */
	/* What decides the sample's labels besides its process (record
	 * --labels), so that counts split exactly by label set: */
	__u64 cgroup;  /* the task's cgroup v2 id (the kernfs node id of its
	                * directory), 0 without the cgroup and container labels */
	char comm[16]; /* the thread's name, zero-padded; all zero without the
	                * thread label */
	__u64 span;    /* record --span: the innermost open span of the thread,
	             * a key of `span_names` (a hash of its name), 0 outside
	             * spans or without --span */
};

struct profile_value {
	__u64 samples; /* events that took a stack (every Nth) */
	__u64 weight;  /* in the event's unit, scaled by N */
};

/* One sample with its moment: a record of the `samples0`/`samples1` ring
 * buffers (one per map set, like the counts maps), written instead of a
 * count when there is room.  A sample is in exactly one of the two: its
 * set's ring, or (the ring full, or moments off) its set's counts map.
 * Its stacks are those the key names, in the same set's stack maps. */
struct profile_sample {
	__u64 time;   /* bpf_ktime_get_ns() when the stack was taken (an
	               * off-CPU or block-time sample: when it began) */
	__u64 weight; /* in the event's unit, scaled by N */
	__u64 span;   /* record --span: the id of the thread's innermost kept
	               * span when the stack was taken, 0 outside spans */
	__u32 tid;
	__u32 pad;
	struct profile_key key; /* key.pid is the process (tgid) */
};

/* record --span.  A span start probe's BPF cookie: the argument naming
 * the span (0-based) in its low byte, PROFILE_SPAN_* flags above it, the
 * span's spec (its --span's index) at PROFILE_SPAN_SPEC_SHIFT.  An end
 * probe's: PROFILE_SPAN_END and its spec. */
#define PROFILE_SPAN_ARG_MASK 0xffu
#define PROFILE_SPAN_NUM      0x100u /* the name is the argument's number */
#define PROFILE_SPAN_SQL      0x200u /* a SQL text: normalised in user space */
#define PROFILE_SPAN_END      0x400u /* the cookie of an end probe */
/* The name is fixed: its key is `span_fixed`'s entry of the spec, its text
 * known to user space; no argument is read. */
#define PROFILE_SPAN_FIXED 0x800u
/* The name is a number, a PostgreSQL lock tag type (LockTagType): named
 * as pg_locks' locktype column in user space. */
#define PROFILE_SPAN_PGLOCK 0x2000u
/* The spec's spans never nest: a start closes the open span of its spec,
 * if any, as unended (its end probe was missed). */
#define PROFILE_SPAN_FLAT       0x1000u
#define PROFILE_SPAN_SPEC_SHIFT 24
#define PROFILE_SPAN_SPEC_MASK  0xffu
/* Specs (--span) at most: `span_fixed`'s size. */
#define PROFILE_SPAN_SPECS 16
/* id=argN and parent=argN of a start probe: N (1 to 12) in four bits
 * each at these shifts, 0 when not given.  Without id= the BPF side makes
 * each span's id; without parent= a span's parent is the span it is
 * nested in on its thread. */
#define PROFILE_SPAN_ID_SHIFT     16
#define PROFILE_SPAN_PARENT_SHIFT 20
#define PROFILE_SPAN_FIELD_MASK   0xfu
/* Open spans kept per thread; deeper ones are counted (SPAN_DEEP), and the
 * depth still follows them so that their ends pop nothing kept. */
#define PROFILE_SPAN_DEPTH 16
/* The key of a span whose name could not be read or kept: "[unknown]".
 * A key is otherwise a hash of its name, never 0 (no span) nor this. */
#define PROFILE_SPAN_UNKNOWN 1
/* Bytes of a span name read from the traced process, with its NUL. */
#define PROFILE_SPAN_NAME 256

/* A value of `span_names`, keyed by a key's span: what names it.  A
 * string name is text[0..len) (cut at PROFILE_SPAN_NAME - 1 bytes); a
 * number's is its 8 bytes in text (len 8). */
struct profile_span_name {
	__u32 flags; /* PROFILE_SPAN_NUM, PROFILE_SPAN_SQL, PROFILE_SPAN_PGLOCK */
	__u32 len;
	char text[PROFILE_SPAN_NAME];
};

/* A value of `span_stacks`: one thread's open spans (record --span). */
struct profile_span_stack {
	__u32 depth; /* spans open, kept or not */
	__u32 tgid;  /* the thread's process */
	/* What decides the labels of its spans' records (as profile_key's),
	 * taken at the push onto an empty stack: the recording's end closes
	 * the spans still open from user space, away from the thread. */
	__u64 cgroup;
	char comm[16];
	/* The open spans kept, outermost first: each one's name key, id,
	 * parent id and start (bpf_ktime_get_ns). */
	__u64 span[PROFILE_SPAN_DEPTH];
	__u64 id[PROFILE_SPAN_DEPTH];
	__u64 parent[PROFILE_SPAN_DEPTH];
	__u64 start[PROFILE_SPAN_DEPTH];
	/* each one's spec (PROFILE_SPAN_SPEC_SHIFT): an end closes the
	 * innermost span of its own spec */
	__u8 spec[PROFILE_SPAN_DEPTH];
};

/* A value of `span_chains`: the name keys of the spans a span was nested
 * in when it ended, outermost first (its own is not among them). */
struct profile_span_chain {
	__u32 depth; /* keys in name[] */
	__u32 pad;
	__u64 name[PROFILE_SPAN_DEPTH];
};

/* One span that ended (or was closed: PROFILE_SPAN_UNENDED), a record of
 * the `span_records` ring buffer (record --span).  Times are
 * bpf_ktime_get_ns()'s, the samples rings' clock. */
struct profile_span_record {
	__u64 id;     /* never 0 */
	__u64 parent; /* the enclosing span's id, or parent=argN's; 0: none */
	__u64 start, end;
	__u64 name;   /* its name's key in `span_names` */
	__u64 chain;  /* the enclosing spans' names: a key of `span_chains`,
	               * 0 for a span nested in none (or, with
	               * PROFILE_SPAN_CHAIN_LOST, in spans not kept) */
	__u64 cgroup; /* as profile_key's: what decides its labels */
	char comm[16];
	__u32 pid; /* the process (tgid) */
	__u32 tid;
	__u32 gen; /* the process's execs, as profile_key's */
	__u32 flags;
};
/* The span did not end: its thread exited or executed a new program, or
 * the recording ended, inside it; `end` is that moment. */
#define PROFILE_SPAN_UNENDED 1u
/* `span_chains` had no room for its enclosing spans' names. */
#define PROFILE_SPAN_CHAIN_LOST 2u

/* The file system types the vfs events met: `fs_names`, keyed by a key's
 * fs (a 32-bit digest of the file_system_type's address, never 0), holds
 * the type's address and name (file_system_type.name), written before any
 * key carries that fs.  Two types with one digest: the second gets fs 0. */
#define PROFILE_FS_MAX  128
#define PROFILE_FS_NAME 32
struct profile_fs_name {
	__u64 type;
	char name[PROFILE_FS_NAME];
};

/* A kernel stack, innermost pc first: the value of the `kstacks` maps,
 * keyed by a 64-bit hash of pcs[0..len).  `check` is a second, independent
 * hash of them: a stack whose key is taken by one with another length or
 * check is lost and counted as a collision, never mixed with it (two
 * stacks that agree on all 96 bits: about 1 in 4e28 for a pair). */
struct profile_kstack {
	__u32 len;
	__u32 check;
	__u64 pcs[PROFILE_MAX_DEPTH];
};

/* A user stack, innermost pc first: the value of the `ustacks` maps, keyed
 * by a hash of pcs[0..len) and flags (a 64-bit hash: two stacks that share
 * one are taken as the same, about 1 in 3e19 for a pair). */
struct profile_ustack {
	__u32 len;
	__u32 flags; /* UNWIND_FLAG_* */
	__u64 pcs[PROFILE_MAX_DEPTH];
};

/* A user stack with Python frames: a `pystacks` entry keyed by the key's
 * user_hash.  Each Python frame takes two slots: PROFILE_PY_TAG | the code
 * object's address, then (check << 32) | the index of its current
 * instruction (symbolize_python_check()).  A walk cut short leaves a
 * marker pair, PROFILE_PY_TAG | 0 then enum profile_py_cut, where it
 * stopped.  Its first fields are a struct profile_ustack's. */
#define PROFILE_PY_STACK      (-4)
#define PROFILE_PY_TAG        (1ull << 63)
#define PROFILE_PY_MAX_FRAMES 256 /* Python frames kept per stack */
#define PROFILE_PY_SLOTS      (PROFILE_MAX_DEPTH + 2 * PROFILE_PY_MAX_FRAMES + 2)
struct profile_pystack {
	__u32 len;
	__u32 flags;
	__u64 pcs[PROFILE_PY_SLOTS];
};

/* Why a Python walk was cut short (the marker's second slot). */
enum profile_py_cut {
	PROFILE_PY_CUT_DEPTH = 1, /* more than PROFILE_PY_MAX_FRAMES frames */
	PROFILE_PY_CUT_READ,      /* a frame or code object could not be read
	                           * (freed, a thread exiting) */
	PROFILE_PY_CUT_NOT_CODE,  /* a frame's code is no code object */
	PROFILE_PY_CUT_CHAIN,     /* the frames ended before the evaluation's
	                           * entry frame */
};

/* How user stacks are walked (record --unwind). */
enum profile_unwind {
	PROFILE_UNWIND_FP = 0, /* frame pointers, by the kernel */
	PROFILE_UNWIND_DWARF,  /* CFI tables; code without CFI stops the walk */
	PROFILE_UNWIND_AUTO,   /* CFI tables, frame pointers where there are none */
};

/* Indices into the `stats` array in the BPF program's .bss. */
enum profile_stat {
	PROFILE_STAT_SEEN = 0,         /* samples of followed processes */
	PROFILE_STAT_KERNEL_COLLISION, /* kernel stack lost to a hash collision */
	PROFILE_STAT_STACK_ERROR,      /* a stack lost for another reason */
	PROFILE_STAT_COUNTS_FULL,      /* sample dropped: counts map full */
	PROFILE_STAT_PIDS_FULL,        /* a child not followed: pid set full */
	PROFILE_STAT_EVENTS_LOST,      /* a fork/exec event not reported */
	PROFILE_STAT_UNWIND_CFI,       /* user stacks walked by CFI alone */
	PROFILE_STAT_UNWIND_MIXED,     /* ... by CFI and frame pointers */
	PROFILE_STAT_UNWIND_FP,        /* ... by frame pointers alone: --unwind=fp,
	                                * or a process not yet known to the
	                                * unwinder */
	PROFILE_STAT_UNWIND_PENDING,   /* walks that met a table still being
	                                * built (frame pointers there) */
	PROFILE_STAT_UNWIND_TRUNCATED, /* walks that gave up: [truncated] */
	PROFILE_STAT_USTACKS_FULL,     /* a walked stack not kept: map full */
	PROFILE_STAT_STALE_MAPS,       /* processes whose maps went stale */
	PROFILE_STAT_PY_WALKS,         /* user stacks with Python frames */
	PROFILE_STAT_PY_NO_THREAD,     /* an evaluation met, the thread's state
	                                * not found: native frames there */
	PROFILE_STAT_PY_CUT_DEPTH,     /* Python walks cut short, by enum
	                                * profile_py_cut */
	PROFILE_STAT_PY_CUT_READ,
	PROFILE_STAT_PY_CUT_NOT_CODE,
	PROFILE_STAT_PY_CUT_CHAIN,
	PROFILE_STAT_PYSTACKS_FULL, /* a stack with Python frames not kept */
	PROFILE_STAT_KSTACKS_FULL,  /* a kernel stack not kept: map full */
	PROFILE_STAT_EXEC_STACK,    /* samples in an exec, charged to the user
	                             * stack walked at its start */
	PROFILE_STAT_UPROBE_STEP,   /* samples in a uprobe's out-of-line step,
	                             * walked from the probed instruction */
	PROFILE_STAT_RING_FULL,     /* samples counted without their moment:
	                             * the samples ring had no room */
	/* record --span: span ends met with no span open on the thread
	 * (ignored); spans opened deeper than PROFILE_SPAN_DEPTH (their
	 * samples go to the deepest kept one); span names not read or not
	 * kept (a fault, or `span_names` full: "[unknown]"). */
	PROFILE_STAT_SPAN_UNMATCHED,
	PROFILE_STAT_SPAN_DEEP,
	PROFILE_STAT_SPAN_NAME_LOST,
	/* Span records lost to a full `span_records` ring; span records
	 * whose enclosing names `span_chains` had no room for. */
	PROFILE_STAT_SPAN_RING_FULL,
	PROFILE_STAT_SPAN_CHAIN_LOST,
	/* Walks of a process with no list of mappings (user space has not
	 * read it); frames whose table the walker found through their vma
	 * (bpf_find_vma, unwind_files); vma lookups refused (the mmap lock
	 * taken, or a lookup already made in this interrupt: the lock's
	 * release waits for an irq_work, and one lookup per CPU can wait). */
	PROFILE_STAT_UNWIND_NO_LIST,
	PROFILE_STAT_VMA_FOUND,
	PROFILE_STAT_VMA_BUSY,
	PROFILE_NSTATS,
};

enum profile_event_kind {
	PROFILE_EVENT_FORK = 1,   /* pid was forked by parent */
	PROFILE_EVENT_EXEC = 2,   /* pid executed a new program */
	PROFILE_EVENT_STALE = 3,  /* a pc of pid fell in no mapping known to
	                          * the unwinder (a dlopen since) */
	PROFILE_EVENT_WANT = 4,   /* a pc of pid, addr, fell in a mapping whose
	                          * table is not built yet */
	PROFILE_EVENT_EXIT = 5,   /* pid's main thread exited */
	PROFILE_EVENT_LOADED = 6, /* the loader has mapped pid's libraries
	                           * (or a dlopen'ed one) */
	PROFILE_EVENT_PYCODE = 7, /* a walk met code object addr (check,
	                           * gen) of pid for the first time: read it
	                           * while the process lives */
};

/* Sent through the `events` ring buffer. */
struct profile_event {
	__u32 kind;
	__u32 pid;
	__u32 parent;
	__u32 gen;   /* EXEC, PYCODE: the process's exec count, as in profile_key */
	__u64 addr;  /* WANT: the pc; PYCODE: the code object */
	__u32 check; /* PYCODE: its check (profile_pystack); EXEC: the
	              * program file's device (the kernel's encoding, major
	              * << 20 | minor), addr its inode, 0 when unread */
	__u32 flags; /* EXEC: PROFILE_EXEC_*; FORK: PROFILE_FORK_LISTED;
	              * STALE: PROFILE_STALE_LOADED */
	/* EXEC of a known program: the program's, the loader's and the
	 * vDSO's load biases (enum unwind_exec_kind), as its first walker
	 * list was placed (all 0: not placed) */
	__u64 bias[3];
};

/* PROFILE_EVENT_LOADED, its own size: the loader has mapped the
 * libraries (or a dlopen'ed one). */
struct profile_loaded_event {
	__u32 kind; /* PROFILE_EVENT_LOADED */
	__u32 pid;
	__u32 nlm;                  /* objects in the loader's list (FIRST only; 0: more than
	              * a template holds, or unread) */
	__u32 flags;                /* PROFILE_LOADED_* */
	__u64 exe_dev, exe_ino;     /* PLACED: the program's file */
	__u64 bias[3];              /* PLACED: as profile_event's */
	__u64 addr[UNWIND_EXEC_LM]; /* each object's l_addr, in the loader's order */
	__u64 dyn[UNWIND_EXEC_LM];  /* its l_ld - l_addr (0: none) */
};

/* The first hook since the exec: the libraries the program was linked
 * with (later ones are dlopens). */
#define PROFILE_LOADED_FIRST 1u
/* The walker's list was placed whole from the program's template: user
 * space names the process from it, without reading it. */
#define PROFILE_LOADED_PLACED 2u
/* FIRST: the exec had placed the program's and the loader's lists from
 * the template (so only the libraries were left to place here). */
#define PROFILE_LOADED_EXEC_PLACED 4u
/* Not the first (a dlopen or dlclose), in a process not sampled since
 * its walker list was written: the list was marked (unwind_proc.reread),
 * and its next walk asks for it to be read (PROFILE_EVENT_STALE); user
 * space does not read it now. */
#define PROFILE_LOADED_REREAD 8u

/* STALE: the walk's first since a dlopen left to it
 * (PROFILE_LOADED_REREAD): read at once, not at most every 100 ms. */
#define PROFILE_STALE_LOADED 1u

/* EXEC: the program has a template (exe_templates): user space names the
 * process from it, and the event wakes no one. */
#define PROFILE_EXEC_KNOWN 1u
/* EXEC of a known program whose first walker list was placed (bias[]). */
#define PROFILE_EXEC_PLACED 2u

/* FORK: the child got its parent's walker list in BPF at the fork. */
#define PROFILE_FORK_LISTED 1u

/* A program file, as exe_templates keys it. */
struct profile_file {
	__u64 dev;
	__u64 ino;
};

#endif
