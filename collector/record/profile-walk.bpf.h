/*
 * profile-walk.bpf.h — the stack walks of profile.bpf.c: user stacks by
 * CFI (with a frame-pointer step where a pc has none), the Python frames
 * met on the way, kernel stacks, and user stacks by frame pointers alone.
 * Not a header of its own: profile.bpf.c includes it once, after its
 * rodata, maps and count(), which it uses, and before the recording of an
 * event, which calls it (one BPF object: its functions inline into the
 * programs, so the verifier sees what it saw in one file).
 */

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
static __always_inline bool file_identity(const char *file, struct profile_file *f);
static __always_inline void report_want(__u32 pid, __u64 addr);
static __always_inline void report_stale_loaded(__u32 pid);
static __always_inline void report_pycode(__u32 pid, __u32 gen, __u64 code, __u32 check);

/* Code objects already reported to user space (PROFILE_EVENT_PYCODE),
 * which reads each at once, while its process lives: the drain after a
 * process's exit could no longer read the code its last second ran, and
 * a short script's samples would end in "[python: code gone]". */
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
 * memory, loading the new program, much of the cut-short weight under a
 * build's process churn). */
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

/* ---- a pc's table by its file -------------------------------------------
 *
 * Where the process's list does not place a pc (no list yet, a pc past
 * it, a table pending when it was written), the walker asks the kernel for
 * the pc's vma (bpf_find_vma) and looks its file up in unwind_files: a
 * file whose table is loaded is walked by CFI in a process user space has
 * not read.  bpf_find_vma takes the mmap lock with a trylock; in an
 * interrupt (the sampler) its release is deferred to a per-CPU irq_work,
 * so a second lookup before that work has run is refused (-EBUSY): one
 * lookup a sample in practice.  The vma found is kept for the rest of the
 * walk, so the frames of one file cost one lookup. */

struct vma_find {
	__u64 start, end, pgoff;
	const char *file;
};

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct vma_find *f = ctx;
	const char *v = (const char *)vma;

	(void)task;
	if (bpf_probe_read_kernel(&f->start, sizeof(f->start), v + vma_start) ||
	    bpf_probe_read_kernel(&f->end, sizeof(f->end), v + vma_end) ||
	    bpf_probe_read_kernel(&f->pgoff, sizeof(f->pgoff), v + vma_pgoff) ||
	    bpf_probe_read_kernel(&f->file, sizeof(f->file), v + vma_file))
		f->file = NULL;
	return 0;
}

/* The table and bias of pc by its vma's file, into *table and *bias;
 * false when there is none (or the lookup was refused). */
static __always_inline bool find_vma_table(struct walk *w, __u64 pc, __u32 *table, __u64 *bias)
{
	if (!vma_known)
		return false;
	if (pc - w->vma_lo >= w->vma_hi - w->vma_lo) {
		struct vma_find f = {};
		struct profile_file id = {};
		if (w->vma_busy)
			return false;
		long rc = bpf_find_vma(bpf_get_current_task_btf(), pc, vma_found, &f, 0);
		if (rc == -EBUSY) {
			w->vma_busy = 1;
			count(PROFILE_STAT_VMA_BUSY);
			return false;
		}
		if (rc || f.end <= f.start)
			return false;
		w->vma_lo = f.start;
		w->vma_hi = f.end;
		w->vma_table = UNWIND_NO_TABLE;
		if (!file_identity(f.file, &id))
			return false;
		struct unwind_file_key k = {.dev = id.dev, .ino = id.ino};
		struct unwind_file *e = bpf_map_lookup_elem(&unwind_files, &k);
		if (!e)
			return false;
		w->vma_table = e->table;
		w->vma_bias = f.start - (f.pgoff << 12) - (__u64)e->delta;
	}
	if (w->vma_table == UNWIND_NO_TABLE)
		return false;
	*table = w->vma_table;
	*bias = w->vma_bias;
	count(PROFILE_STAT_VMA_FOUND);
	return true;
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

	__u32 table = UNWIND_NO_TABLE;
	__u64 bias = 0;
	bool pending = false;
	p = w->no_list ? NULL : bpf_map_lookup_elem(&unwind_procs, &w->tgid);
	if (!p) {
		/* No list: the process is not read yet, or its exec dropped
		 * it; its pcs are found by their files alone. */
		w->no_list = 1;
		if (!find_vma_table(w, lookup, &table, &bias))
			return fp_step(w);
	} else {
		if (!p->sampled)
			p->sampled = 1;
		if (p->reread && !p->stale) {
			/* A dlopen since user space read the list: read it
			 * now that the process is sampled, while it lives. */
			p->stale = 1;
			count(PROFILE_STAT_STALE_MAPS);
			report_stale_loaded(w->tgid);
		}
		struct search ms = {.hi = p->nmaps, .key = lookup, .proc = p};
		if (ms.hi > UNWIND_MAX_MAPS)
			ms.hi = UNWIND_MAX_MAPS;
		bpf_loop(9, search_maps_step, &ms, 0);
		__u32 lo = ms.lo;
		struct unwind_mapping *m = lo ? &p->maps[(lo - 1) & (UNWIND_MAX_MAPS - 1)] : NULL;
		if (!m || lookup - m->start >= m->size) {
			/* Code mapped since user space last read the maps
			 * (dlopen): ask for a new list, once.  Not while the
			 * exec's list holds only the program and the loader
			 * (UNWIND_PLACED_EXEC): the loader is relocating the
			 * libraries (their IFUNC resolvers run), and its
			 * hook, next, lists them (placed, or read by user
			 * space); a read now would be one more, and would
			 * undo the placing. */
			if (!p->stale && p->placed != UNWIND_PLACED_EXEC) {
				p->stale = 1;
				count(PROFILE_STAT_STALE_MAPS);
				report(PROFILE_EVENT_STALE, w->tgid, 0);
			}
			if (!find_vma_table(w, lookup, &table, &bias))
				return fp_step(w);
		} else {
			if (m->table == UNWIND_UNBUILT) {
				/* Tables are built for the code samples meet:
				 * ask once. */
				m->table = UNWIND_PENDING;
				report_want(w->tgid, lookup);
			}
			table = m->table;
			bias = m->bias;
			if (table == UNWIND_PENDING) {
				/* Built since the list was written, perhaps. */
				if (!find_vma_table(w, lookup, &table, &bias))
					pending = true;
			}
		}
	}
	if (pending)
		w->flags |= UNWIND_FLAG_PENDING;
	if (table >= UNWIND_PENDING)
		return fp_step(w);
	__u32 tid = UNWIND_TABLE_ID(table);
	struct unwind_table *t = bpf_map_lookup_elem(&unwind_tables, &tid);
	__u64 rel = lookup - bias;
	struct unwind_row *r = NULL;
	/* Not a table freed since the list was written: its id's
	 * generation would have moved on (unwind.h). */
	if (t && t->gen == UNWIND_TABLE_GEN(table) && rel <= 0xffffffffull)
		r = find_row(t, rel);
	if (!r)
		return fp_step(w);
	w->tabled = 1;

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

/* The bytes of one slot of the [uprobes] page (the kernel's
 * UPROBE_XOL_SLOT_BYTES). */
#define XOL_SLOT_BYTES 128

/* A thread stopped at a uprobe (ours on the loader, or anyone's) steps
 * the probed instruction in a slot of the [uprobes] page: a sample there
 * has its pc in no mapping, which cut its stack short and took the
 * process for one that mapped new code (a read of its maps).  The pc it
 * stands for is the probed instruction's, where the stack is as the
 * probe found it.  Any other pc is returned as it is. */
static __always_inline __u64 out_of_line(__u64 ip)
{
	const char *task = (const char *)bpf_get_current_task_btf(), *utask = NULL;
	__u64 xol = 0, vaddr = 0;

	if (!task_utask || bpf_probe_read_kernel(&utask, sizeof(utask), task + task_utask) ||
	    !utask || bpf_probe_read_kernel(&xol, sizeof(xol), utask + utask_xol_vaddr) || !xol ||
	    ip - xol >= XOL_SLOT_BYTES ||
	    bpf_probe_read_kernel(&vaddr, sizeof(vaddr), utask + utask_vaddr) || !vaddr)
		return ip;
	count(PROFILE_STAT_UPROBE_STEP);
	return vaddr + (ip - xol);
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
	w->pc = out_of_line(ip);
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
	w->vma_lo = w->vma_hi = w->vma_bias = 0;
	w->vma_table = UNWIND_NO_TABLE;
	w->vma_busy = 0;
	w->no_list = 0;
	w->tabled = 0;
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
	if (w->no_list)
		count(PROFILE_STAT_UNWIND_NO_LIST);
	if (!w->tabled && (flags & UNWIND_FLAG_FP) && w->no_list)
		count(PROFILE_STAT_UNWIND_FP); /* no table found: as before the vma lookup */
	else
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
