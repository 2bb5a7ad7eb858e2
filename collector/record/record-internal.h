/*
 * record-internal.h — what the parts of `flamefs-collect record` share:
 * the options, the recorder's state, and the functions one part calls in
 * another.  record.c parses the command line, sets up the BPF side and
 * runs the loop; drain.c drains the BPF maps each second (maps.c takes
 * the counts out, frames.c names and stores them, process.c follows the
 * processes); events.c knows the events of -e.
 * Only record.c's callers' header is record.h.
 */
#ifndef FLAMEFS_RECORD_INTERNAL_H
#define FLAMEFS_RECORD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <linux/types.h>

#include <bpf/libbpf.h>

#include "profile.h"
#include "profile.skel.h"
#include "store.h"
#include "symbolize.h"
#include "unwinder.h"

#ifndef PROG
#define PROG "flamefs-collect"
#endif

#define DRAIN_SECONDS 1
/* How long a flip waits for samples already inside the BPF program (it
 * runs in interrupt context, for microseconds) before reading the set. */
#define FLIP_GRACE_NS 5000000L
#define MAX_FREQ      100000

struct options {
	const char *store_dir;
	const char *pid_list;
	bool all;
	char **command;
	unsigned freq;
	double duration; /* 0: until stopped */
	bool user_only, kernel_only;
	const char *host; /* --host, or NULL: the machine's hostname */
	const char *binary;
	const char *version;
	unsigned verbose; /* -v: the whole summary and notes; -vv: libbpf too */
	bool lines;
	bool inlines;
	const char *log_drains; /* --log-drains FILE, or NULL */
	int64_t retention;      /* --retention, seconds; 0: keep everything */
	const char *push_to;    /* --push DATABASE, or NULL */
	int64_t push_every;     /* --push-every, seconds */
	enum profile_unwind unwind;
	bool python;            /* --python: on unless "off" */
	uint64_t unwind_memory; /* bytes of rows */
	int64_t jit_wait;       /* --jit-wait, seconds; 0: JIT stacks never wait */
	int64_t module_grace;   /* --module-grace, seconds */
	uint64_t jit_memory;    /* --jit-memory, bytes of held stacks */
	/* -e: per event (enum profile_ev), PROFILE_EV_* flags and N. */
	uint32_t ev_flags[PROFILE_NEVENTS];
	uint32_t ev_every[PROFILE_NEVENTS];
	bool vfs_duty;           /* vfs events with no N given: hooked part of the time */
	bool offcpu_preempt;     /* offcpu:all */
	uint64_t offcpu_min_ns;  /* --offcpu-min */
	int64_t keep_samples;    /* --keep-samples, seconds; -1: the store's own */
	uint64_t samples_memory; /* --samples-memory, bytes of each ring; 0: sized */
	unsigned labels;         /* --labels, --no-labels, --cmdline: RECORD_LABEL_* */
	/* --span, in order */
	struct record_span_spec *spans;
	size_t nspans;
	/* --debug-dir, in order (naming later: names.c) */
	const char **debug_dirs;
	size_t ndebug_dirs;
};

/* End probes of one span at most (END1|END2|...). */
#define RECORD_SPAN_ENDS 4
/* One --span PROVIDER:START:END[|END...][:FIELD...] (cmdline.c). */
struct record_span_spec {
	const char *arg;        /* as given, for messages */
	char *provider, *start; /* the probes */
	char *end[RECORD_SPAN_ENDS];
	size_t nend;
	char *path;      /* in=PATH, or NULL: the target's program */
	char *fixed;     /* fixed=NAME: every span of it is named NAME; or NULL */
	uint32_t cookie; /* the start probe's (profile.h: PROFILE_SPAN_*), its
	                  * index among the specs at PROFILE_SPAN_SPEC_SHIFT */
};
#define RECORD_SPANS_MAX 16
/* The label every sample inside a span carries: its innermost span's name. */
#define RECORD_SPAN_LABEL "span"
/* The longest span label value kept before store_label_value_clean cuts
 * it: the name read, normalised (SQL). */
#define RECORD_SPAN_TEXT 1024

/* The labels record gives each series (labels.c). */
#define RECORD_LABEL_CGROUP    1u
#define RECORD_LABEL_CONTAINER 2u
#define RECORD_LABEL_THREAD    4u
#define RECORD_LABEL_EXE       8u
#define RECORD_LABEL_CMDLINE   16u
#define RECORD_LABELS_DEFAULT                                                                      \
	(RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER | RECORD_LABEL_THREAD | RECORD_LABEL_EXE)

/* The events of -e: their names on the command line, as series, and
 * their units; default N of EVENT:STACKS:N (events.c). */
struct record_event {
	const char *arg, *series, *unit;
	uint32_t every;
};
extern const struct record_event record_events[PROFILE_NEVENTS];
/* The default N of vfs-read and vfs-write: a stack per MiB a thread
 * moves, on average. */
#define RECORD_VFS_EVERY (1u << 20)
/* The vfs events' duty cycle (-e vfs with no N): on_sys_exit is attached
 * RECORD_VFS_DUTY_ON seconds in each drain interval (DRAIN_SECONDS), at a
 * random phase drawn per interval (a window that runs past the interval's
 * end wraps to its start, so every moment has the same chance of being
 * hooked); the weights a drain takes are multiplied by the interval's
 * length over its hooked time, both measured on CLOCK_MONOTONIC. */
#define RECORD_VFS_DUTY_ON 0.125

struct record_duty {
	bool on;      /* the duty cycle is in use */
	bool stopped; /* record_duty_stop() ran, at stop_at: no more windows */
	double stop_at;
	struct bpf_link *link; /* on_sys_exit's link while attached, else NULL */
	double set_start;      /* when the current map set began taking samples */
	double hooked;         /* seconds hooked in the current set, closed windows */
	double since;          /* attached since (CLOCK_MONOTONIC s) */
	double win[2][2];      /* this interval's windows [from, to) */
	int nwin;
	double scale;           /* the set being drained: its length / hooked time */
	double all, all_hooked; /* the whole recording, for --verbose */
	uint64_t attaches;
	double attach_s; /* time spent in attach and detach calls */
	uint64_t rand;   /* xorshift64 state of the phases */
};

/* A sample's moment, as the drain stores it (store_batch_sample). */
struct moment {
	int64_t time_us; /* Unix time */
	uint64_t weight;
	uint64_t span; /* the innermost span's id, 0: none */
	uint32_t tid;
};

/* A record of a samples ring, its time converted. */
struct ring_sample {
	struct profile_key key;
	struct moment m;
};

/* One aggregation key of a drained set: what its counts map held for it
 * (v: the samples without a moment, maybe none) and its records in the
 * set's ring, r->smp[first .. first + nsmp). */
struct entry {
	struct profile_key key;
	struct profile_value v;
	size_t first, nsmp;
};

#define REAP_DRAINS 3
/* Modules are swept (symbolize_sweep) every SWEEP_DRAINS drains, or every
 * --module-grace when shorter, and after a drain that finds twice as many
 * open as after the last sweep (at least SWEEP_MIN_LIVE). */
#define SWEEP_DRAINS   60
#define SWEEP_MIN_LIVE 64
#define UBATCH         256
#define PYBATCH        32 /* stacks with Python frames: 5 KB each */

/* The stacks of one stack map, as a batch read took them: their hashes
 * in order, and their pcs in one arena. */
struct stack_batch {
	struct stack_ref {
		uint64_t hash;
		size_t at; /* into pcs */
		uint32_t len, flags;
	} * ref;
	size_t nref, ref_cap;
	__u64 *pcs; /* as in the maps' values */
	size_t npcs, pcs_cap;
};

/* One stack of a count as the BPF side left it, before naming. */
struct raw_stack {
	enum {
		RAW_NONE,
		RAW_LOST,
		RAW_PCS
	} state;        /* none asked for or none
	                                             * there; lost ([unknown]);
	                                             * the addresses */
	bool truncated; /* a user walk cut short ([truncated]) */
	uint32_t depth;
	/* Innermost first; a user stack's Python frames take two tagged slots
	 * each (profile.h: PROFILE_PY_TAG). */
	uint64_t pcs[PROFILE_PY_SLOTS];
};

struct record_late; /* late.c */

/* Stack keys (hashes) to delete from a map once their counts are stored. */
struct hash_list {
	uint64_t *v;
	size_t n, cap;
};

/* One module's cpu weight whose leaf frame has no function name. */
struct record_unnamed {
	char *module; /* NULL: a free slot */
	uint8_t build_id[64];
	uint8_t build_id_len;
	uint64_t weight;
};

struct recorder {
	const struct options *opt;
	struct profile_bpf *skel;
	struct store *store;
	struct record_pusher *pusher; /* --push */
	struct symbolize *sym;
	struct ring_buffer *rb;
	/* The samples rings of the two map sets (NULL: moments off) and
	 * what the drain took from the one it reads. */
	struct ring_buffer *srb[2];
	struct ring_sample *smp;
	size_t nsmp, smp_cap;
	struct moment *mscratch; /* one entry's moments, contiguous */
	size_t mscratch_cap;
	uint64_t ring_bytes;     /* each ring's size */
	int64_t clock_off_ns;    /* CLOCK_REALTIME - CLOCK_MONOTONIC, at the last drain */
	int64_t keep_samples;    /* the store's keep window (s); 0: moments off */
	struct bpf_link **links; /* one per CPU event */
	int *pfds;
	int nlinks;
	struct bpf_link *fork_link, *exec_link, *exit_link;
	struct bpf_link *exec_begin_link; /* NULL: no sched_prepare_exec */
	struct bpf_link *ldso_link;       /* NULL when the loader has no hook */
	/* The hooked loader's file (kernel device encoding), for exe_templates:
	 * a program mapping it reports PROFILE_EVENT_LOADED. */
	unsigned long long ldso_dev, ldso_ino;
	int templates_fd;              /* exe_templates, or -1 */
	uint64_t templates_deleted;    /* with their program's module (symbolize_sweep) */
	struct symbolize_hooks uhooks; /* the unwinder's, chained (record.c) */
	/* symbolize_sweep(): the drain of the last one and the modules
	 * open after it. */
	uint64_t swept_seq, swept_live;
	uint64_t execs_read;        /* exec events whose process was read at once */
	uint64_t templates;         /* programs written to exe_templates */
	uint64_t loaded_later;      /* dlopen hooks left to the process's next walk */
	uint64_t loaded_read;       /* loader's-hook events whose process was read: */
	uint64_t loaded_read_new;   /* ... the first since an exec not placed */
	uint64_t loaded_read_unfit; /* ... the first, the exec placed, the template's
	                             * libraries not (another list, or none yet) */
	int counts_fd[2], kstacks_fd[2], ustacks_fd[2], pystacks_fd[2];
	struct unwinder *unwinder; /* NULL with --unwind fp */
	uint64_t period_ns;
	pid_t child; /* -- COMMAND, or 0 */
	int child_status;
	bool child_exited;

	struct entry *ents;
	size_t nents, ents_cap;
	struct hash_list hashes;         /* the CFI stacks the counts refer to */
	struct hash_list pyhashes;       /* the stacks with Python frames they refer to */
	struct hash_list khashes;        /* the kernel stacks they refer to */
	bool hash_records;               /* join_samples adds the stacks of keys
	                                  * only records have to the lists */
	struct profile_pystack *pystack; /* fetch_stack()'s: one user stack */
	uint16_t *pyslots;               /* name_stack()'s: where each frame is */
	struct store_frame *frames;

	/* Batch reads of the counts maps: room for a whole map, and whether
	 * the kernel has BPF_MAP_LOOKUP_AND_DELETE_BATCH. */
	struct profile_key *bkeys;
	struct profile_value *bvals;
	uint32_t bcap;
	bool no_batch;
	/* The CFI, kernel and Python stacks of the set being drained, read
	 * in batches of UBATCH (PYBATCH) stacks, a bpf(2) call each, where a
	 * lookup and a delete per stack were two; the first two through one
	 * scratch array (a kernel stack's value is a user stack's size). */
	struct stack_batch ustacks, kstacks, pystacks;
	uint64_t *ubatch_keys;
	struct profile_ustack *ubatch_vals;
	struct profile_pystack *pybatch_vals;
	bool no_ubatch; /* the kernel has no batch reads of hash maps */
	/* Whole stack-map listings still due: set to 2 (both sets) when a
	 * sample may have left a stack that no count refers to, and the
	 * losses counted so far. */
	int scan_stacks;
	uint64_t orphan_losses;

	/* --log-drains: the file (or -1) and the number of the last drain
	 * that reached its commit. */
	int log_fd;
	uint64_t drain_seq;
	int stats_fd; /* -v: BPF run-time statistics on while open, or -1 */

	/* Processes that exited, each with drain_seq at its exit event: the
	 * snapshot is freed REAP_DRAINS drains later, once its last samples
	 * (in the set active at the exit, or, for a block I/O completed
	 * later, the one after) are stored. */
	struct dead_pid {
		pid_t pid;
		uint64_t seq;
	} * dead;
	size_t ndead, dead_cap;

	/* --retention: when the store was last pruned (unix seconds, 0:
	 * never) and what went. */
	int64_t pruned_at;
	uint64_t pruned_buckets, pruned_samples;
	/* store_rollup(), in the same step: when, and what it forgot. */
	int64_t rolled_at;
	uint64_t rolled_samples, rollups;

	/* Totals for the final report. */
	uint64_t drains, samples, weight, lost_user, lost_kernel;
	/* Of r->samples: stored with their moment (store_batch_sample),
	 * and without one (a count at the drain's time). */
	uint64_t with_moment, without_moment;
	uint64_t ev_samples[PROFILE_NEVENTS], ev_weight[PROFILE_NEVENTS];
	bool ev_attached[PROFILE_NEVENTS];
	struct bpf_link *ev_links[16];
	/* "[fs:NAME]" of the vfs events' file systems met (profile.h:
	 * fs_names), fs_ids[i] naming fs_frames[i] */
	uint32_t fs_ids[PROFILE_FS_MAX];
	char fs_frames[PROFILE_FS_MAX][PROFILE_FS_NAME + 8];
	size_t nfs;
	int nev_links;
	struct record_duty duty;
	/* --span: the links of each span's probes (its ends, then its start:
	 * attached and destroyed so), and the names' map */
	struct bpf_link *span_links[(1 + RECORD_SPAN_ENDS) * RECORD_SPANS_MAX];
	int nspan_links;
	int span_names_fd; /* -1 without --span */
	/* The spans record (spans.c): the records read from `span_records`
	 * since the last drain, the enclosing names' cache, and totals. */
	struct profile_span_record *spans;
	size_t nspan_recs, span_recs_cap;
	struct record_span_chains *span_chains;
	uint64_t span_stored, span_weight, span_unended, span_chains_unread;
	uint64_t truncated; /* samples stored with a [truncated] user stack */
	/* Stacks whose JIT frames wait for a perf map (late.c;
	 * NULL with --jit-wait 0), and what became of them, in samples. */
	struct record_late *late;
	struct record_labels *labels; /* labels.c; NULL with --no-labels */
	struct record_names *names;   /* names.c */
	size_t drain_stacks;          /* the stacks the last drain stored */
	struct late_stats {
		uint64_t seen;        /* with a late frame when first named */
		uint64_t held;        /* of which held back */
		uint64_t named;       /* stored with every frame named */
		uint64_t unnamed;     /* stored unnamed: exit or recording end */
		uint64_t over_memory; /* stored at once: --jit-memory reached */
		uint64_t over_time;   /* stored unnamed after --jit-wait */
		uint64_t peak_bytes;  /* of held stacks */
	} late_stats;
	struct raw_stack raw[2]; /* a user and a kernel stack being named */
	uint64_t unsymbolized_pids;
	/* The cpu event's weight whose leaf frame has no function name, by
	 * module (report.c): an open-addressed table of 2^k slots. */
	struct record_unnamed *unnamed;
	size_t unnamed_slots, unnamed_used;
	uint64_t unnamed_weight;
	int err; /* first fatal error, -errno */
	char errmsg[512];
};

/* r->frames: a user and a kernel stack of PROFILE_MAX_DEPTH addresses
 * each, room for the inline frames that --inline adds to the user part
 * (as many again), the user part's Python frames (one per two slots, the
 * cut marker among them), and a "[truncated]" frame. */
#define FRAMES_CAP (4 * PROFILE_MAX_DEPTH + PROFILE_PY_MAX_FRAMES + 2)

/* Whether Python frames are walked: --python (on by default) needs the
 * CFI walker. */
static inline bool python_walks(const struct options *o)
{
	return o->python && o->unwind != PROFILE_UNWIND_FP;
}

/* Records the first fatal error (later ones are dropped) as -errno and a
 * message; run() stops at it and record_main() prints it. */
void record_fail(struct recorder *r, int err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* process.c: the process events. */
/* The ring buffer's callback: fork, exec, exit, stale-maps and
 * table-wanted events. */
int record_on_event(void *ctx, void *data, size_t len);
/* After a drain's commit: frees the snapshots (and labels) of processes
 * that exited REAP_DRAINS drains ago. */
void record_reap_exited(struct recorder *r);
/* After a drain's commit: frees the ELF files nothing holds any more, every
 * SWEEP_DRAINS drains (or --module-grace, when shorter), or at once when
 * twice as many are open as after the last sweep. */
void record_sweep_modules(struct recorder *r);

/* maps.c: what a drain takes out of a map set. */
/* Orders two keys by what makes their series (pid, gen, event, cgroup,
 * thread name, span): 0 when they are of one series. */
int record_key_series_cmp(const struct profile_key *x, const struct profile_key *y);
/* Takes the counts of map set `set` into r->ents and its samples with a
 * moment into r->smp, joined (each entry its records; a key with records
 * and no count gets an entry of its own), and notes the stacks to delete
 * once stored.  0 or -errno. */
int record_take_set(struct recorder *r, int set);
/* Names the code objects of the Python frames of r->ents' stacks while
 * their processes live.  0 or -ENOMEM. */
int record_prefetch_python(struct recorder *r, int set);
/* The user and kernel stacks of a count of `set` into *user and *kernel
 * (a vfs event's kernel stack with its file system as innermost pc). */
void record_fetch_stacks(struct recorder *r, int set, const struct profile_key *key,
                         struct raw_stack *user, struct raw_stack *kernel);
/* Once stored: deletes from `set` what record_take_set() read. */
void record_clear_set(struct recorder *r, int set);
/* A vfs event's file system travels as the innermost pc of its kernel
 * stack, so that it stays with the stack through late.c: RECORD_FS_PC_TAG
 * | its fs (profile.h; 0: unknown), a value no kernel pc has.  Its kernel
 * stack ends where the system call returns (syscall_exit_work, which runs
 * the tracepoint): that frame goes, as the tracing frames do, and the file
 * system takes its place (frames.c). */
#define RECORD_FS_PC_TAG  0xf5f500000000ull
#define RECORD_FS_PC_MASK 0xffffffff00000000ull

/* drain.c */
/* One drain: flips the BPF side to its other map set and stores the set
 * it left in one atomic batch; `final` (sampling already stopped) stores
 * both.  Returns 0 or -errno (also recorded with record_fail()). */
int record_drain(struct recorder *r, bool final);
/* The share of the cpu weight without function names from which the
 * summary says where the names are and how to get them (the view's
 * quality file says it from the same share: VIEW_UNNAMED_WARN_PERCENT). */
#define RECORD_UNNAMED_WARN_PERCENT 20
/* Counts the weight of a cpu sample whose leaf frame is f (report.c):
 * to its module when f has no function name.  0 or -ENOMEM. */
int record_unnamed_add(struct recorder *r, const struct store_frame *f, uint64_t weight);
/* Every frame of f's module (module and build id) has been named later:
 * its weight no longer counts as unnamed. */
void record_unnamed_named(struct recorder *r, const struct store_frame *f);
void record_unnamed_free(struct recorder *r);

/* frames.c: stacks named and stored. */
/* The frames of a count's stacks, root first, into r->frames[0..*n). */
int record_name_stacks(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user,
                       const struct raw_stack *kernel, size_t *n);
/* Whether a user stack has a frame that may be named later
 * (symbolize_jit_late). */
bool record_stack_late(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user);
/* The series of key's process at its generation, with its labels, for
 * event ev, in batch b. */
int record_series(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                  uint32_t ev, uint32_t *series);
/* The same for a series of `event` in `unit` (the spans record's). */
int record_series_event(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                        const char *event, const char *unit, uint32_t *series);
/* Stores r->frames[0..n) under series: each of the nm samples m[] of
 * process pid with its moment, and count v (samples without one, maybe
 * none) at time `when`; counts them in the totals.  0 or -errno. */
int record_store_frames(struct recorder *r, struct store_batch *b, uint32_t series, uint32_t ev,
                        int64_t when, size_t n, const struct profile_value *v, bool truncated,
                        pid_t pid, const struct moment *m, size_t nm);
/* drain.c */
/* The samples ring's callback: appends a record to r->smp. */
int record_on_sample(void *ctx, void *data, size_t len);
/* CLOCK_REALTIME - CLOCK_MONOTONIC (bpf_ktime_get_ns's clock) in ns,
 * read where the two reads are closest together. */
int64_t record_clock_offset(void);

/* names.c: frames named later, while recording. */
struct record_names;
/* Naming later at a quiet moment: a drain that stored at most this many
 * stacks, at most every RECORD_NAMES_EVERY_S seconds (and once a drain at
 * all after RECORD_NAMES_LOUD_S without a quiet one); a module a debuginfod
 * server did not have is asked again after RECORD_NAMES_DEBUGINFOD_S; the
 * last pass at the end is waited for at most RECORD_NAMES_END_WAIT_S. */
#define RECORD_NAMES_QUIET_STACKS 1024
#define RECORD_NAMES_EVERY_S      10
#define RECORD_NAMES_LOUD_S       300
#define RECORD_NAMES_DEBUGINFOD_S 600
#define RECORD_NAMES_END_WAIT_S   30
/* Naming later with o's --debug-dir, DEBUGINFOD_URLS and -v, into a store
 * that is a database (`database`: a frame keeps the content it was stored
 * with as its identity and shows the name it took) or not (a frame named
 * takes the name as its content).  0 or -ENOMEM. */
int record_names_new(struct record_names **out, const struct options *o, bool database);
void record_names_free(struct record_names *n); /* accepts NULL */
/* For each frame about to be stored (frames.c): an unnamed one whose name
 * was found later takes it (in place: f then names that string, owned by
 * r->names) and 0 is returned; into a database it is left as it is, to be
 * interned as the frame that shows the name, and 1 is returned; else its
 * module is noted (0).  -ENOMEM. */
int record_names_frame(struct recorder *r, struct store_frame *f);
/* In a drain, before its commit: the renames of a pass that has finished,
 * into b.  0 or -errno. */
int record_names_apply(struct recorder *r, struct store_batch *b);
/* After the drain's commit: the names applied are given to the frames
 * stored from now on; with -v, says what was named.  0 or -ENOMEM. */
int record_names_committed(struct recorder *r);
/* After each drain (it stored `stacks` stacks): at a quiet moment, starts
 * a pass on the modules worth a try.  Errors go to record_fail(). */
void record_names_step(struct recorder *r, size_t stacks);
/* At the end, after the last drain: the pass running, then a last one,
 * each committed; not waited for past RECORD_NAMES_END_WAIT_S (said). 0 or
 * -errno (record_fail'd). */
int record_names_finish(struct recorder *r);

/* late.c: stacks whose JIT frames wait for a perf map. */
/* A set that holds at most max_bytes of stacks, each for at most
 * wait_drains drains; counts merge within store time buckets of
 * bucket_seconds. */
int record_late_new(struct record_late **out, uint64_t max_bytes, uint64_t wait_drains,
                    uint32_t bucket_seconds);
void record_late_free(struct record_late *l); /* accepts NULL */
/* A count whose user stack has a late frame (r->frames[0..*n) holds it
 * named as it is now), with its nm samples with a moment m[]: held back
 * (returns 1), or, when the recording
 * ends (`final`), its process has ended, or holding it would pass
 * --jit-memory, left for the caller to store from r->frames[0..*n)
 * (returns 0; the map is read a last time first, and *n updated).  -errno
 * on failure. */
int record_late_take(struct recorder *r, const struct profile_key *key,
                     const struct profile_value *v, const struct moment *m, size_t nm, int64_t when,
                     const struct raw_stack *u, const struct raw_stack *k, bool final, size_t *n);
/* At each drain, after the sets: reads again the maps of the processes
 * with held stacks, and stores into b those now named, those of ended
 * processes, those that waited --jit-wait and, when `final`, all. */
int record_late_flush(struct recorder *r, struct store_batch *b, bool final);

/* labels.c: who ran a sample. */
struct record_labels;
/* A labeller of the labels `want` (RECORD_LABEL_*); the cgroup and
 * container labels are left out where no cgroup2 mount can be read
 * (record_labels_want() tells).  0 or -ENOMEM. */
int record_labels_new(struct record_labels **out, unsigned want);
void record_labels_free(struct record_labels *l); /* accepts NULL */
/* The labels it gives (RECORD_LABEL_*); 0 for NULL. */
unsigned record_labels_want(const struct record_labels *l);
/* The cgroup2 mount read, or NULL (owned by l). */
const char *record_labels_cgroup_mount(const struct record_labels *l);
/* Cgroup ids that found no path (labelled "[unknown]"). */
uint64_t record_labels_unresolved(const struct record_labels *l);
/* The canonical labels of key's samples into *labels (owned by r->labels,
 * valid until the next call; NULL without labels).  0 or -ENOMEM. */
int record_labels_of(struct recorder *r, const struct profile_key *key, const char **labels);
/* Forgets what was read of pid (its exit reaped). */
void record_labels_forget(struct record_labels *l, pid_t pid);
/* The name of span key `key` (profile.h: a key of `span_names`), as its
 * span label gives it, into *name (owned by r->labels; "[unknown]" when
 * it cannot be read).  0 or -ENOMEM. */
int record_labels_span_name(struct recorder *r, uint64_t key, const char **name);

/* spans.c: the spans record. */
struct record_span_chains;
/* The `span_records` ring's callback: appends a record to r->spans. */
int record_on_span(void *ctx, void *data, size_t len);
/* Stores the records of r->spans into b, each a sample of its process's
 * STORE_EVENT_SPANS series, and empties r->spans.  0 or -errno. */
int record_spans_store(struct recorder *r, struct store_batch *b);
/* At the recording's end, the probes stopped: closes every span still
 * open in `span_stacks` now, marked unended, into r->spans.  0 or -errno. */
int record_spans_close(struct recorder *r);
/* The key of a fixed span name `text` (at most PROFILE_SPAN_NAME - 1
 * bytes), as span_hash() in profile-spans.bpf.h keys a string name read
 * from a probe: the same text has the same key either way. */
uint64_t record_span_fixed_key(const char *text);
/* Frees what spans.c holds; again does nothing. */
void record_spans_free(struct recorder *r);

/* push.c: --push.  Starts a thread that copies the store in
 * directory `dir` into database `to` at once and then every `every`
 * seconds (see store_copy()); failures are reported on stderr and the
 * data waits for the next push.  0 or -errno. */
struct record_pusher;
int record_push_start(struct record_pusher **out, const char *dir, const char *to, int64_t every);
/* A last push, then joins the thread, prints what the pushes sent and
 * frees it all.  Accepts NULL. */
void record_push_stop(struct record_pusher *p);

/* cmdline.c */
/* A usage error of record: "flamefs-collect record: <fmt>; try
 * 'flamefs-collect record --help'" on one line; returns the exit status,
 * 2. */
int record_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* events.c */
/* Parses -e's list into o->ev_flags and o->ev_every, printing its own
 * message.  Returns 0 or -errno. */
int record_parse_events(const char *list, struct options *o);
/* Before load: the events' .rodata and which programs load. */
int record_setup_events(struct recorder *r, const struct options *o);
/* After load: attaches each event; one the kernel lacks is left out with
 * a message.  Returns 0, or -ENODEV when none could be. */
int record_attach_events(struct recorder *r);
/* The vfs duty cycle (struct record_duty), all no-ops when it is off:
 * _tick attaches or detaches on_sys_exit as the windows say and returns
 * when it is next due (CLOCK_MONOTONIC seconds; INFINITY: never); _flip,
 * called when the drain flips the map sets (and by the last drain), sets
 * duty.scale for the set now drained and plans the next interval's
 * windows; _stop detaches for good, counting the hooked time. */
double record_duty_tick(struct recorder *r);
void record_duty_flip(struct recorder *r);
void record_duty_stop(struct recorder *r);
/* The factor the weights of event ev's samples in the set now drained are
 * scaled by: the set's length over its hooked time for the vfs events
 * under the duty cycle, else 1. */
double record_duty_scale(const struct recorder *r, uint32_t ev);

/* usage.c */
#include "usage-internal.h"

/* setup.c */
/* The BPF program: opened, its read-only settings and map sizes set
 * (the events, the kernel's offsets, the unwinder's mode, the loader's
 * hook in *ldso if there is one: *have_ldso), loaded.  0 or -errno, also
 * given to record_fail(), as for each below. */
struct ldso_probe;
int record_open_bpf(struct recorder *r, const struct options *o, struct ldso_probe *ldso,
                    bool *have_ldso);
/* The maps the drain reads, and the unwinder over its maps. */
int record_wire_maps(struct recorder *r, const struct options *o);
/* The event ring buffer, the samples rings and the process events:
 * fork, exec, exit (all three needed), the exec's beginning and the
 * loader's hook (optional). */
/* The file COMMAND names, found as execvp finds it (a path as it is, a
 * bare name along $PATH), into buf: 0, or -errno (-ENOENT: not found). */
int record_find_program(const char *cmd, char *buf, size_t size);
/* --span: each span's start and end probes attached, in its in=PATH or
 * the target's program (every process of the file; the BPF side counts
 * only the followed ones).  0, or -errno (record_fail'd). */
int record_attach_spans(struct recorder *r, const struct options *o);
int record_attach_process_events(struct recorder *r, const struct options *o,
                                 const struct ldso_probe *ldso, bool have_ldso);
/* One cpu-clock perf event per online CPU, the sampler attached to each. */
int record_open_cpu_events(struct recorder *r);
/* Detaches and closes them; again does nothing. */
void record_close_cpu_events(struct recorder *r);

/* target.c */
/* What to follow: -p's processes, or COMMAND, started held (*go_fd
 * releases it). */
int record_start_target(struct recorder *r, const struct options *o, int *go_fd);
/* The events of -e and the CPU sampling, attached; then the running
 * processes read (-a) and COMMAND released.  Closes go_fd. */
int record_start_sampling(struct recorder *r, const struct options *o, int go_fd);
/* Notes COMMAND's exit (r->child_exited, r->child_status), not waiting. */
void record_reap_child(struct recorder *r);

/* cmdline.c */
/* Reads record's command line into o, printing its own messages.
 * Returns -1 to go on recording, else the exit status (0 after --help,
 * 2 for a bad command line). */
int record_parse_options(int argc, char **argv, struct options *o);

/* report.c */
/* User and system CPU seconds of the whole process so far. */
double record_cpu_seconds(void);
/* The summary on stderr: `wall` seconds recorded, `loop_cpu` CPU seconds
 * spent meanwhile. */
void record_report(struct recorder *r, double wall, double loop_cpu);

#endif
