/*
 * profile-process.bpf.h — the processes' side of profile.bpf.c: reports
 * to user space (fork, exec, exit, an address wanted, a code object),
 * reading an exec's auxiliary vector, placing a known program's list of
 * mappings at an exec, and the fork, exec, exit and loader programs.
 * Included once by profile.bpf.c, after the recording of an event (see
 * profile-walk.bpf.h).
 */

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

/* The walk's first since a dlopen left to it (unwind_proc.reread). */
static __always_inline void report_stale_loaded(__u32 pid)
{
	struct profile_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(PROFILE_STAT_EVENTS_LOST);
		return;
	}
	e->kind = PROFILE_EVENT_STALE;
	e->pid = pid;
	e->parent = 0;
	e->gen = 0;
	e->addr = 0;
	e->check = 0;
	e->flags = PROFILE_STALE_LOADED;
	e->bias[0] = e->bias[1] = e->bias[2] = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
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
	l->reread = 0;
	l->sampled = 0;
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
	/* The old program's open spans end with it, closed before the exec
	 * count moves (their records name the old program).  The thread
	 * that executed is the process's only one now (tid = tgid); its
	 * spans are under its old tid, old_pid. */
	span_close_thread((__u32)((const __u64 *)ctx)[1]);
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
 * (exec_stacks); a process with no list yet by its vmas' files. */
SEC("raw_tp/sched_prepare_exec")
int on_exec_begin(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0, slot = SLOT_TP;
	struct profile_key key = {};

	if (!followed(tgid) || unwind_mode == PROFILE_UNWIND_FP ||
	    (!bpf_map_lookup_elem(&unwind_procs, &tgid) && !has_user_memory()))
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

/* (struct task_struct *p, ...); p is the current task.  Every thread's
 * exit closes its open spans (record --span); the rest is for a process's
 * main thread only: a process whose other threads outlive it is known
 * again at the next drain. */
SEC("raw_tp/sched_process_exit")
int on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;

	span_close_thread(tid); /* spans left open end with it, unended */
	if (tid != tgid)
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
 * mapped (at the start, also relocated: their IFUNC resolvers and libc's
 * early initialisation have run): user space reads the maps again now,
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
		if (up && up->placed == UNWIND_PLACED_EXEC)
			e->flags |= PROFILE_LOADED_EXEC_PLACED;
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
	} else {
		/* A dlopen (or dlclose): a process with a walker's list,
		 * not sampled since it was written, is read only if it is
		 * sampled again (walk_step asks at its next walk), not now;
		 * one sampled since is read now, as its next samples may
		 * well be in the new library. */
		struct unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &tgid);
		if (up && !up->sampled) {
			up->reread = 1;
			e->flags |= PROFILE_LOADED_REREAD;
		}
	}
	/* A process placed whole, or left to its next walk, wakes no one:
	 * user space names it from the template, at its next wake. */
	if (bpf_ringbuf_output(&events, e, sizeof(*e),
	                       e->flags & (PROFILE_LOADED_PLACED | PROFILE_LOADED_REREAD)
	                               ? BPF_RB_NO_WAKEUP
	                               : BPF_RB_FORCE_WAKEUP)) {
		count(PROFILE_STAT_EVENTS_LOST);
		/* Not told: a list the exec placed must not wait for the
		 * libraries (the walker asks for them, as after a dlopen). */
		struct unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &tgid);
		if (up && up->placed == UNWIND_PLACED_EXEC)
			up->placed = 0;
	}
	return 0;
}
