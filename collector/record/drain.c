/*
 * drain.c — the drains of `flamefs-collect record`: the process
 * events that keep the symbolizer's snapshots current, then, each second,
 * the counts of the map set the BPF side just left, their stacks
 * symbolized, stored as one atomic batch, and the set emptied.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "import.h"
#include "record-internal.h"

/* ---- process events ----------------------------------------------------- */

static int note_exit(struct recorder *r, pid_t pid)
{
	if (r->ndead == r->dead_cap) {
		size_t ncap = r->dead_cap ? r->dead_cap * 2 : 256;
		struct dead_pid *n = realloc(r->dead, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->dead = n;
		r->dead_cap = ncap;
	}
	symbolize_exited(r->sym, pid);
	r->dead[r->ndead++] = (struct dead_pid){.pid = pid, .seq = r->drain_seq};
	return 0;
}

/* Frees the snapshots of processes that exited REAP_DRAINS drains ago: a
 * recording of -a on a busy machine would otherwise keep every process it
 * ever saw (~1.7 KB each, a thousand a second under a build). */
static void reap_exited(struct recorder *r)
{
	size_t keep = 0;
	for (size_t i = 0; i < r->ndead; i++) {
		if (r->dead[i].seq + REAP_DRAINS <= r->drain_seq) {
			symbolize_reap(r->sym, r->dead[i].pid);
			record_labels_forget(r->labels, r->dead[i].pid);
		} else
			r->dead[keep++] = r->dead[i];
	}
	r->ndead = keep;
}

/* Frees the ELF files nothing holds any more (symbolize_sweep) every
 * SWEEP_DRAINS drains (or every --module-grace, when shorter), and at once
 * when twice as many are open as after the last sweep: a build host
 * running new binaries fast.  After the commit: the frames stored name
 * the modules' strings. */
static void sweep_modules(struct recorder *r)
{
	struct symbolize_stats ss;
	uint64_t every = SWEEP_DRAINS;

	if (r->opt->module_grace / DRAIN_SECONDS < (int64_t)every)
		every = r->opt->module_grace > DRAIN_SECONDS
		                ? (uint64_t)(r->opt->module_grace / DRAIN_SECONDS)
		                : 1;
	symbolize_get_stats(r->sym, &ss);
	uint64_t live = ss.modules - ss.modules_freed;
	if (r->drain_seq - r->swept_seq < every &&
	    (live < SWEEP_MIN_LIVE || live < 2 * r->swept_live))
		return;
	symbolize_sweep(r->sym, r->opt->module_grace * 1000000000ll);
	/* Give back what the sweep and the minute's caches left free: glibc
	 * keeps freed pages inside its heaps (and the top past its
	 * threshold), so the RSS would keep every peak of the run (a burst of
	 * new programs, a table built for a big file) and creep with
	 * fragmentation.  It walks the free chunks of every arena, so it
	 * runs with the sweep, not at every drain. */
	malloc_trim(0);
	symbolize_get_stats(r->sym, &ss);
	r->swept_seq = r->drain_seq;
	r->swept_live = ss.modules - ss.modules_freed;
}

/* Writes the template of pid's program, the file (dev, ino), from pid
 * as just read: with the loader's list (lm_addr/dyn[0 .. nlm), at the
 * loader's hook) the libraries too, else the exec part.  A program not
 * started by the hooked loader gets none (it is read at each exec).
 * Returns 0 or -ENOMEM. */
static int write_template(struct recorder *r, pid_t pid, unsigned long long dev,
                          unsigned long long ino, const uint64_t *lm_addr, const uint64_t *dyn,
                          size_t nlm)
{
	const void *exe = symbolize_maps_file(r->sym, pid, dev, ino);
	const void *loader = symbolize_maps_file(r->sym, pid, r->ldso_dev, r->ldso_ino);
	struct profile_file f = {.dev = dev, .ino = ino};
	struct unwind_exec t;
	const struct symbolize_layout *l;
	size_t n;
	int rc;

	if (!exe || !loader || exe == loader)
		return 0;
	rc = symbolize_keep_layout(r->sym, pid, exe, loader, lm_addr, nlm);
	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;
	l = symbolize_get_layout(r->sym, exe, &n);
	memset(&t, 0, sizeof(t));
	t.entry = symbolize_module_entry(exe);
	if (r->unwinder)
		rc = unwinder_exec_template(r->unwinder, l, n, t.entry, dyn, nlm, &t);
	if (rc == 0 && bpf_map_update_elem(r->templates_fd, &f, &t, BPF_ANY) == 0)
		r->templates++;
	return 0;
}

/* An exec.  A program with a template (exe_templates) got its walker list
 * in BPF and is named from its file; any other is read now, and then
 * gets a template, so that its next execs wake no one. */
static int on_exec(struct recorder *r, const struct profile_event *e)
{
	pid_t pid = (pid_t)e->pid;
	int rc = -ENOENT;

	if (e->flags & PROFILE_EXEC_KNOWN) {
		const uint64_t bias[3] = {e->bias[0], e->bias[1], e->bias[2]};
		rc = symbolize_exec_file(r->sym, pid, e->gen, e->check, e->addr,
		                         e->flags & PROFILE_EXEC_PLACED ? bias : NULL);
	}
	if (rc != -ENOENT)
		return rc;
	r->execs_read++;
	rc = symbolize_exec(r->sym, pid, e->gen);
	if (rc < 0 || !e->addr || r->templates_fd < 0)
		return rc;
	return write_template(r, pid, e->check, e->addr, NULL, NULL, 0);
}

/* The loader has mapped pid's libraries (or a dlopen'ed one).  Placed
 * whole in BPF from its program's template: named from the layout, not
 * read.  A dlopen in a process the walker lists: read at its next walk
 * (PROFILE_EVENT_STALE), if it is sampled again.  Else read now; the
 * first time since the exec, the program's template then gets the
 * libraries. */
static int on_loaded(struct recorder *r, const struct profile_loaded_event *e)
{
	pid_t pid = (pid_t)e->pid;
	uint64_t addr[UNWIND_EXEC_LM];
	size_t nlm = e->nlm < UNWIND_EXEC_LM ? e->nlm : UNWIND_EXEC_LM;
	int rc = -ENOENT;

	for (size_t k = 0; k < nlm; k++)
		addr[k] = e->addr[k];
	if (e->flags & PROFILE_LOADED_PLACED) {
		const uint64_t bias[3] = {e->bias[0], e->bias[1], e->bias[2]};
		rc = symbolize_loaded_file(r->sym, pid, e->exe_dev, e->exe_ino, bias, addr, nlm);
	}
	if (rc != -ENOENT)
		return rc;
	if ((e->flags & PROFILE_LOADED_REREAD) && r->unwinder) {
		r->loaded_later++;
		return 0;
	}
	r->loaded_read++;
	if ((e->flags & PROFILE_LOADED_FIRST) && !(e->flags & PROFILE_LOADED_EXEC_PLACED))
		r->loaded_read_new++;
	else if (e->flags & PROFILE_LOADED_FIRST)
		r->loaded_read_unfit++;
	rc = symbolize_snapshot(r->sym, pid, 0);
	if (rc < 0 || !(e->flags & PROFILE_LOADED_FIRST) || !nlm || r->templates_fd < 0)
		return rc;
	unsigned long long dev, ino;
	uint64_t dyn[UNWIND_EXEC_LM];
	for (size_t k = 0; k < nlm; k++)
		dyn[k] = e->dyn[k];
	if (!symbolize_exe_module(r->sym, pid, &dev, &ino))
		return 0;
	return write_template(r, pid, dev, ino, addr, dyn, nlm);
}

int record_on_event(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;
	const struct profile_event *e = data;
	int rc;

	if (len < sizeof(*e))
		return 0;
	if (e->kind == PROFILE_EVENT_LOADED) {
		rc = len < sizeof(struct profile_loaded_event) ? 0 : on_loaded(r, data);
		if (rc == -ENOMEM)
			record_fail(r, rc, "out of memory");
		return rc == -ENOMEM ? rc : 0;
	}
	if (e->kind == PROFILE_EVENT_WANT) {
		/* The walker needs the table of the file holding this pc. */
		rc = r->unwinder ? unwinder_want(r->unwinder, r->sym, (pid_t)e->pid, e->addr) : 0;
	} else if (e->kind == PROFILE_EVENT_STALE) {
		/* The walker met a pc outside the process's known mappings. */
		rc = r->unwinder ? unwinder_stale(r->unwinder, (pid_t)e->pid) : 0;
	} else if (e->kind == PROFILE_EVENT_EXIT) {
		rc = note_exit(r, (pid_t)e->pid);
	} else if (e->kind == PROFILE_EVENT_PYCODE) {
		/* Named (and cached) now, while the process lives. */
		rc = symbolize_python_frame(r->sym, (pid_t)e->pid, e->gen, e->addr, e->check, 0,
		                            NULL);
	} else if (e->kind == PROFILE_EVENT_FORK) {
		if (e->parent && !symbolize_known(r->sym, (pid_t)e->parent))
			symbolize_snapshot(r->sym, (pid_t)e->parent, 0);
		rc = e->flags & PROFILE_FORK_LISTED
		             ? symbolize_inherit_listed(r->sym, (pid_t)e->pid, (pid_t)e->parent)
		             : symbolize_inherit(r->sym, (pid_t)e->pid, (pid_t)e->parent);
	} else {
		rc = on_exec(r, e);
	}
	if (rc == -ENOMEM) {
		record_fail(r, rc, "out of memory");
		return rc;
	}
	return 0; /* a process already gone is resolved at the drain */
}

/* ---- samples with their moments ----------------------------------------- */

int64_t record_clock_offset(void)
{
	int64_t best = 0, gap = INT64_MAX;

	for (int i = 0; i < 3; i++) {
		struct timespec a, w, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &w);
		clock_gettime(CLOCK_MONOTONIC, &b);
		int64_t ma = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
		int64_t mb = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
		int64_t wall = (int64_t)w.tv_sec * 1000000000 + w.tv_nsec;
		if (mb - ma < gap) {
			gap = mb - ma;
			best = wall - (ma + (mb - ma) / 2);
		}
	}
	return best;
}

int record_on_sample(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;
	const struct profile_sample *s = data;

	if (len < sizeof(*s))
		return 0;
	if (r->nsmp == r->smp_cap) {
		size_t ncap = r->smp_cap ? r->smp_cap * 2 : 4096;
		struct ring_sample *n = realloc(r->smp, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->smp = n;
		r->smp_cap = ncap;
	}
	int64_t ns = (int64_t)s->time + r->clock_off_ns;
	r->smp[r->nsmp++] = (struct ring_sample){
	        .key = s->key,
	        .m = {.time_us = ns / 1000 - (ns % 1000 < 0),
	              .weight = s->weight,
	              .span = s->span,
	              .tid = s->tid},
	};
	return 0;
}

/* ---- draining ----------------------------------------------------------- */

/* Keys by (pid, gen, event, cgroup, thread name, span) first, so that a
 * series' keys are together,
 * then by the rest of their bytes (padding is zeroed on both sides). */
static int key_cmp(const struct profile_key *x, const struct profile_key *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	int c = memcmp(x->comm, y->comm, sizeof(x->comm));
	if (c)
		return c;
	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	return memcmp(x, y, sizeof(*x));
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct entry *)a)->key, &((const struct entry *)b)->key);
}

/* Records by key, then time. */
static int smp_cmp(const void *a, const void *b)
{
	const struct ring_sample *x = a, *y = b;
	int c = key_cmp(&x->key, &y->key);
	if (c)
		return c;
	return x->m.time_us < y->m.time_us ? -1 : x->m.time_us > y->m.time_us;
}

/* Notes a stack to delete once stored (duplicates are harmless: a second
 * delete fails quietly). */
static int hash_list_add(struct hash_list *l, uint64_t h)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		uint64_t *n = realloc(l->v, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = ncap;
	}
	l->v[l->n++] = h;
	return 0;
}

/* Notes the stacks key refers to, to delete once stored. */
static int add_key_hashes(struct recorder *r, const struct profile_key *k)
{
	int rc = 0;

	if (k->user_stack == PROFILE_USTACK)
		rc = hash_list_add(&r->hashes, k->user_hash);
	if (rc == 0 && k->user_stack == PROFILE_PY_STACK)
		rc = hash_list_add(&r->pyhashes, k->user_hash);
	if (rc == 0 && k->kernel_stack == PROFILE_KSTACK)
		rc = hash_list_add(&r->khashes, k->kernel_hash);
	return rc;
}

/* Takes every count of one map set into r->ents and deletes it, with
 * BPF_MAP_LOOKUP_AND_DELETE_BATCH: one or two bpf(2) calls in all, where
 * a walk costs three per entry.  Returns 0, -ENOTSUP when the kernel has
 * no batch operations (nothing was taken), or -errno. */
static int take_counts_batch(struct recorder *r, int set)
{
	uint32_t token = 0;
	bool first = true;

	if (!r->bcap) {
		r->bcap = bpf_map__max_entries(set ? r->skel->maps.counts1 : r->skel->maps.counts0);
		r->bkeys = calloc(r->bcap, sizeof(*r->bkeys));
		r->bvals = calloc(r->bcap, sizeof(*r->bvals));
		if (!r->bkeys || !r->bvals)
			return -ENOMEM;
	}
	uint32_t n = 0;
	for (;;) {
		uint32_t got = r->bcap - n;
		int rc = bpf_map_lookup_and_delete_batch(r->counts_fd[set], first ? NULL : &token,
		                                         &token, r->bkeys + n, r->bvals + n, &got,
		                                         NULL);
		int e = rc < 0 ? errno : 0;
		if (rc < 0 && e != ENOENT && first && n == 0 && got == 0 &&
		    (e == EINVAL || e == EOPNOTSUPP || e == 524 /* the kernel's ENOTSUPP */))
			return -ENOTSUP;
		n += got;
		first = false;
		if (rc < 0 && e == ENOENT)
			break; /* the map is empty now */
		if (rc < 0)
			return -e;
		if (n == r->bcap)
			break; /* cannot hold more than a whole map */
	}
	if (r->ents_cap < n) {
		struct entry *e = realloc(r->ents, n * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->ents = e;
		r->ents_cap = n;
	}
	for (uint32_t i = 0; i < n; i++)
		r->ents[i] = (struct entry){.key = r->bkeys[i], .v = r->bvals[i]};
	r->nents = n;
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int hash_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

_Static_assert(sizeof(struct profile_kstack) == sizeof(struct profile_ustack),
               "take_stacks() reads kernel stacks into user stacks' room");
_Static_assert(offsetof(struct profile_pystack, pcs) == offsetof(struct profile_ustack, pcs) &&
                       offsetof(struct profile_pystack, flags) ==
                               offsetof(struct profile_ustack, flags),
               "take_stacks() reads the three kinds of stack alike");

/* Copies the stacks of stack map `fd` (a set's CFI, kernel or, with
 * `python`, Python stacks) into *b, a batch at a time, leaving them in
 * the map (a count added later to this set may still refer to one:
 * off-CPU and block time).  Returns 0, also when the kernel cannot
 * (r->no_ubatch: fetch_stack() then looks each one up), or -ENOMEM. */
static int take_stacks(struct recorder *r, int fd, struct stack_batch *b, bool python)
{
	uint32_t batch = python ? PYBATCH : UBATCH;
	size_t stride = python ? sizeof(struct profile_pystack) : sizeof(struct profile_ustack);
	uint32_t cap = python ? PROFILE_PY_SLOTS : PROFILE_MAX_DEPTH;
	uint64_t token = 0;
	bool first = true;

	b->nref = 0;
	b->npcs = 0;
	if (r->no_ubatch)
		return 0;
	if (!r->ubatch_keys) {
		r->ubatch_keys = calloc(UBATCH, sizeof(*r->ubatch_keys));
		r->ubatch_vals = calloc(UBATCH, sizeof(*r->ubatch_vals));
		if (!r->ubatch_keys || !r->ubatch_vals)
			return -ENOMEM;
	}
	if (python && !r->pybatch_vals && !(r->pybatch_vals = calloc(PYBATCH, stride)))
		return -ENOMEM;
	const char *vals = python ? (const char *)r->pybatch_vals : (const char *)r->ubatch_vals;
	for (;;) {
		uint32_t got = batch;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, r->ubatch_keys,
		                              (void *)vals, &got, NULL);
		int e = rc < 0 ? errno : 0;
		if (rc < 0 && e != ENOENT) {
			/* No batch reads (EINVAL, ENOTSUPP), or a bucket larger
			 * than a batch (ENOSPC): one lookup per stack. */
			if (e != ENOSPC)
				r->no_ubatch = true;
			b->nref = 0;
			return 0;
		}
		first = false;
		for (uint32_t i = 0; i < got; i++) {
			const char *v = vals + i * stride;
			const struct profile_ustack *head = (const struct profile_ustack *)v;
			const char *pcs = v + offsetof(struct profile_ustack, pcs);
			uint32_t len = head->len < cap ? head->len : cap;
			if (b->nref == b->ref_cap) {
				size_t ncap = b->ref_cap ? b->ref_cap * 2 : 1024;
				struct stack_ref *n = realloc(b->ref, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				b->ref = n;
				b->ref_cap = ncap;
			}
			/* pcs is never NULL once a stack is in, even of no pc. */
			if (!b->pcs || b->npcs + len > b->pcs_cap) {
				size_t ncap = b->pcs_cap ? b->pcs_cap * 2 : 16384;
				while (ncap < b->npcs + len)
					ncap *= 2;
				__u64 *n = realloc(b->pcs, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				b->pcs = n;
				b->pcs_cap = ncap;
			}
			memcpy(b->pcs + b->npcs, pcs, len * sizeof(*b->pcs));
			b->ref[b->nref++] = (struct stack_ref){.hash = r->ubatch_keys[i],
			                                       .at = b->npcs,
			                                       .len = len,
			                                       .flags = head->flags};
			b->npcs += len;
		}
		if (rc < 0)
			break; /* ENOENT: that was the last batch */
	}
	if (b->nref > 1)
		qsort(b->ref, b->nref, sizeof(*b->ref), ref_cmp);
	return 0;
}

/* The stack with `hash` in what take_stacks() read into b, or NULL. */
static const struct stack_ref *batch_find(const struct stack_batch *b, uint64_t hash)
{
	const struct stack_ref want = {.hash = hash};

	return b->nref ? bsearch(&want, b->ref, b->nref, sizeof(*b->ref), ref_cmp) : NULL;
}

/* A new entry at the end of r->ents, its contents unset; NULL on ENOMEM. */
static struct entry *push_entry(struct recorder *r)
{
	if (r->nents == r->ents_cap) {
		size_t ncap = r->ents_cap ? r->ents_cap * 2 : 1024;
		struct entry *n = realloc(r->ents, ncap * sizeof(*n));
		if (!n)
			return NULL;
		r->ents = n;
		r->ents_cap = ncap;
	}
	return &r->ents[r->nents++];
}

/* Reads every count of one map set into r->ents (taking them out of the
 * map when it can do so in a batch) and into r->ids the ids of the
 * stacks to delete once stored. */
static int read_set(struct recorder *r, int set)
{
	struct profile_key key, next;
	void *prev = NULL;
	int rc;

	r->nents = 0;
	r->nsmp = 0;
	r->hashes.n = 0;
	r->pyhashes.n = 0;
	r->khashes.n = 0;
	/* The set's samples with their moments.  A sample is either a
	 * record or a count, so the order of the two reads does not
	 * matter; one written after (an off-CPU sample that ends later)
	 * waits for the set's next drain, as a count does. */
	if (r->srb[set]) {
		rc = ring_buffer__consume(r->srb[set]);
		if (rc < 0)
			return rc;
	}
	/* A sample that got its stacks but no count (counts map full, an
	 * error) leaves stacks no count refers to: the whole stack map of
	 * both sets is then listed, at this drain and the next. */
	const __u64 *st = r->skel->bss->stats;
	uint64_t losses = __atomic_load_n(&st[PROFILE_STAT_COUNTS_FULL], __ATOMIC_RELAXED) +
	                  __atomic_load_n(&st[PROFILE_STAT_STACK_ERROR], __ATOMIC_RELAXED);
	if (losses != r->orphan_losses) {
		r->orphan_losses = losses;
		r->scan_stacks = 2;
	}
	if (!r->no_batch) {
		rc = take_counts_batch(r, set);
		if (rc == -ENOTSUP)
			r->no_batch = true;
		else if (rc < 0)
			return rc;
	}
	rc = take_stacks(r, r->ustacks_fd[set], &r->ustacks, false);
	if (rc == 0)
		rc = take_stacks(r, r->kstacks_fd[set], &r->kstacks, false);
	if (rc == 0 && r->unwinder)
		rc = take_stacks(r, r->pystacks_fd[set], &r->pystacks, true);
	if (rc < 0)
		return rc;
	r->hash_records = false;
	if (!r->no_batch && r->scan_stacks == 0) {
		/* The stacks are those the counts refer to, and those of the
		 * keys only records have (join_samples adds them, once a key). */
		for (size_t i = 0; i < r->nents; i++)
			if ((rc = add_key_hashes(r, &r->ents[i].key)) < 0)
				return rc;
		r->hash_records = true;
		return 0;
	}
	if (r->scan_stacks > 0)
		r->scan_stacks--;

	while (r->no_batch && bpf_map_get_next_key(r->counts_fd[set], prev, &next) == 0) {
		struct profile_value v;
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->counts_fd[set], &key, &v) < 0)
			continue;
		struct entry *e = push_entry(r);
		if (!e)
			return -ENOMEM;
		*e = (struct entry){.key = key, .v = v};
	}

	uint64_t h, nh;
	prev = NULL;
	while (bpf_map_get_next_key(r->ustacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->hashes, h)) < 0)
			return rc;
	}
	prev = NULL;
	while (bpf_map_get_next_key(r->kstacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->khashes, h)) < 0)
			return rc;
	}
	prev = NULL;
	while (r->unwinder && bpf_map_get_next_key(r->pystacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->pyhashes, h)) < 0)
			return rc;
	}
	return 0;
}

/* Deletes the stacks of list l from stack map `fd`: in one batch when the
 * kernel has batch operations (each key once, sorted), else, and from a
 * key already gone on, one by one. */
static void delete_stacks(struct recorder *r, int fd, struct hash_list *l)
{
	size_t from = 0;

	if (l->n > 1 && !r->no_ubatch) {
		qsort(l->v, l->n, sizeof(*l->v), hash_cmp);
		size_t u = 0;
		for (size_t i = 0; i < l->n; i++)
			if (u == 0 || l->v[u - 1] != l->v[i])
				l->v[u++] = l->v[i];
		l->n = u;
		uint32_t count = (uint32_t)u;
		if (bpf_map_delete_batch(fd, l->v, &count, NULL) == 0)
			return;
		from = count; /* stopped at a key already gone: the rest one by one */
	}
	for (size_t i = from; i < l->n; i++)
		bpf_map_delete_elem(fd, &l->v[i]);
}

static void clear_set(struct recorder *r, int set)
{
	/* Only keys read from the counts map: a key that had records alone
	 * may get a count (a full ring) after the read, for the next drain. */
	for (size_t i = 0; r->no_batch && i < r->nents; i++)
		if (r->ents[i].v.samples)
			bpf_map_delete_elem(r->counts_fd[set], &r->ents[i].key);
	delete_stacks(r, r->pystacks_fd[set], &r->pyhashes);
	delete_stacks(r, r->kstacks_fd[set], &r->khashes);
	delete_stacks(r, r->ustacks_fd[set], &r->hashes);
}

_Static_assert(sizeof(struct profile_kstack) <= sizeof(struct profile_pystack),
               "fetch_stack() reads a kernel stack into r->pystack");

/* Copies one stack of a count out of `set` (the maps, or what
 * take_stacks() read of them) into *rs.  A user stack with Python frames
 * keeps them as the walker wrote them, two tagged slots each (profile.h). */
static void fetch_stack(struct recorder *r, int set, const struct profile_key *key, bool kernel,
                        struct raw_stack *rs)
{
	int32_t sid = kernel ? key->kernel_stack : key->user_stack;
	struct profile_pystack *us = r->pystack; /* its first fields are a profile_ustack's */

	rs->state = RAW_NONE;
	rs->truncated = false;
	rs->depth = 0;
	if (sid == PROFILE_NO_STACK)
		return;
	const struct stack_ref *got = NULL;
	if (!kernel && (sid == PROFILE_USTACK || sid == PROFILE_PY_STACK)) {
		const struct stack_batch *b = sid == PROFILE_USTACK ? &r->ustacks : &r->pystacks;
		got = batch_find(b, key->user_hash);
		if (got) {
			/* Taken in a batch (take_stacks). */
			us->len = got->len;
			us->flags = got->flags;
			memcpy(us->pcs, b->pcs + got->at, got->len * sizeof(*us->pcs));
		}
	}
	if (sid == PROFILE_KSTACK && kernel) {
		struct profile_kstack *ks = (struct profile_kstack *)us; /* as big, and bigger */
		got = batch_find(&r->kstacks, key->kernel_hash);
		if (got) {
			rs->state = RAW_PCS;
			rs->depth = got->len;
			memcpy(rs->pcs, r->kstacks.pcs + got->at, got->len * sizeof(*rs->pcs));
		} else if (bpf_map_lookup_elem(r->kstacks_fd[set], &key->kernel_hash, ks) == 0) {
			rs->state = RAW_PCS;
			rs->depth = ks->len < PROFILE_MAX_DEPTH ? ks->len : PROFILE_MAX_DEPTH;
			memcpy(rs->pcs, ks->pcs, rs->depth * sizeof(*rs->pcs));
		} else {
			rs->state = RAW_LOST;
		}
		return;
	}
	bool walked = false;
	if (sid == PROFILE_USTACK && !kernel)
		walked = got || bpf_map_lookup_elem(r->ustacks_fd[set], &key->user_hash, us) == 0;
	else if (sid == PROFILE_PY_STACK && !kernel)
		walked = got || bpf_map_lookup_elem(r->pystacks_fd[set], &key->user_hash, us) == 0;
	if (walked) {
		size_t cap = sid == PROFILE_PY_STACK ? PROFILE_PY_SLOTS : PROFILE_MAX_DEPTH;
		rs->state = RAW_PCS;
		rs->depth = us->len < cap ? us->len : (uint32_t)cap;
		rs->truncated = us->flags & UNWIND_FLAG_TRUNCATED;
		memcpy(rs->pcs, us->pcs, rs->depth * sizeof(*rs->pcs));
	} else {
		/* Lost (counted by the BPF side): the sample keeps its
		 * weight under an [unknown] frame. */
		rs->state = RAW_LOST;
	}
}

static bool tracing_frame(const char *name, size_t len);

/* A vfs event's file system travels as the innermost pc of its kernel
 * stack, so that it stays with the stack through late.c: FS_PC_TAG | its
 * fs (profile.h; 0: unknown), a value no kernel pc has.  Its kernel stack
 * ends where the system call returns (syscall_exit_work, which runs the
 * tracepoint): that frame goes, as the tracing frames do, and the file
 * system takes its place. */
#define FS_PC_TAG  0xf5f500000000ull
#define FS_PC_MASK 0xffffffff00000000ull

static void add_fs_pc(const struct profile_key *key, struct raw_stack *kernel)
{
	if ((key->event != PROFILE_EV_VFS_READ && key->event != PROFILE_EV_VFS_WRITE) ||
	    kernel->state == RAW_LOST)
		return;
	if (kernel->state == RAW_NONE) {
		kernel->state = RAW_PCS;
		kernel->depth = 0;
	}
	memmove(kernel->pcs + 1, kernel->pcs, kernel->depth * sizeof(*kernel->pcs));
	kernel->pcs[0] = FS_PC_TAG | key->fs;
	kernel->depth++;
}

/* The frame "[fs:NAME]" of fs into f; 0 or -errno. */
static int fs_frame(struct recorder *r, uint32_t fs, struct store_frame *f)
{
	size_t i = 0;

	while (i < r->nfs && r->fs_ids[i] != fs)
		i++;
	if (i == r->nfs) {
		struct profile_fs_name got;
		if (i == PROFILE_FS_MAX)
			return -ENOSPC; /* fs_names holds no more */
		if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.fs_names), &fs, &got) < 0)
			return -errno;
		got.name[sizeof(got.name) - 1] = '\0';
		snprintf(r->fs_frames[i], sizeof(r->fs_frames[i]), "[fs:%s]", got.name);
		r->fs_ids[i] = fs;
		r->nfs++;
	}
	memset(f, 0, sizeof(*f));
	f->name = r->fs_frames[i];
	f->name_len = strlen(f->name);
	f->kind = STORE_FRAME_KERNEL;
	f->module = "[kernel.kallsyms]";
	f->module_len = 17;
	return 0;
}

/* Appends the frames of one stack, root first, to r->frames[*n]; a user
 * stack leaves room for a kernel stack after it. */
static int name_stack(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *rs,
                      bool kernel, size_t *n)
{
	const uint64_t *ips = rs->pcs;
	size_t depth = rs->depth;
	int rc;

	if (rs->state == RAW_NONE)
		return 0;
	if (rs->state == RAW_LOST) {
		struct store_frame *f = &r->frames[(*n)++];
		memset(f, 0, sizeof(*f));
		f->name = "[unknown]";
		f->name_len = 9;
		f->kind = STORE_FRAME_UNKNOWN;
		if (kernel) {
			f->module = "[kernel.kallsyms]";
			f->module_len = 17;
		}
		return 0;
	}
	if (rs->truncated) {
		/* The walk gave up: the frames above are unknown. */
		struct store_frame *f = &r->frames[(*n)++];
		memset(f, 0, sizeof(*f));
		f->name = "[truncated]";
		f->name_len = 11;
		f->kind = STORE_FRAME_UNKNOWN;
	}
	if (kernel) {
		uint64_t fs = 0;
		bool vfs = false;
		size_t start = *n;
		if (depth > 0 && (ips[0] & FS_PC_MASK) == FS_PC_TAG) {
			vfs = true;
			fs = ips[0] & ~FS_PC_MASK;
			ips++;
			depth--;
		}
		rc = symbolize_kernel_prefetch(r->sym, ips, depth);
		if (rc < 0)
			return rc;
		for (size_t i = depth; i-- > 0;) {
			rc = symbolize_kernel(r->sym, ips[i], i > 0, &r->frames[*n]);
			if (rc < 0)
				return rc;
			(*n)++;
		}
		while (vfs && *n > start &&
		       (tracing_frame(r->frames[*n - 1].name, r->frames[*n - 1].name_len) ||
		        (r->frames[*n - 1].name_len == 17 &&
		         memcmp(r->frames[*n - 1].name, "syscall_exit_work", 17) == 0)))
			(*n)--;
		if (fs) {
			rc = fs_frame(r, (uint32_t)fs, &r->frames[*n]);
			if (rc < 0)
				return rc;
			(*n)++;
		}
		return 0;
	}
	/* The user stack's frames, innermost first: a native pc takes one
	 * slot, a Python frame (or a cut marker) two (profile.h). */
	uint16_t *at = r->pyslots;
	size_t items = 0;
	for (size_t j = 0; j < depth; items++) {
		at[items] = (uint16_t)j;
		j += (ips[j] & PROFILE_PY_TAG) && j + 1 < depth ? 2 : 1;
	}
	for (size_t k = items; k-- > 0;) {
		size_t i = at[k];
		struct store_frame *f = &r->frames[*n];
		if (ips[i] & PROFILE_PY_TAG) {
			uint64_t code = ips[i] & ~PROFILE_PY_TAG,
			         v = i + 1 < depth ? ips[i + 1] : 0;
			if (!code) {
				/* Where the Python walk was cut short. */
				memset(f, 0, sizeof(*f));
				f->name = "[python: cut short]";
				f->name_len = strlen(f->name);
				f->kind = STORE_FRAME_UNKNOWN;
				(*n)++;
				continue;
			}
			rc = symbolize_python_frame(r->sym, pid, gen, code, (uint32_t)(v >> 32),
			                            (uint32_t)v, f);
			if (rc < 0)
				return rc;
			(*n)++;
			continue;
		}
		/* One frame at least for each frame still to come. */
		size_t room = FRAMES_CAP - PROFILE_MAX_DEPTH - 1 - *n - k;
		rc = symbolize_user_gen(r->sym, pid, gen, ips[i], i > 0, f, room);
		if (rc < 0)
			return rc;
		*n += (size_t)rc;
	}
	return 0;
}

int record_name_stacks(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user,
                       const struct raw_stack *kernel, size_t *n)
{
	*n = 0;
	int rc = name_stack(r, pid, gen, user, false, n);
	if (rc >= 0)
		rc = name_stack(r, pid, gen, kernel, true, n);
	return rc;
}

bool record_stack_late(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user)
{
	if (user->state != RAW_PCS)
		return false;
	for (size_t i = 0; i < user->depth; i++) {
		if (user->pcs[i] & PROFILE_PY_TAG) {
			i++; /* a Python frame's two slots: no address */
			continue;
		}
		if (symbolize_jit_late(r->sym, pid, gen, user->pcs[i], i > 0))
			return true;
	}
	return false;
}

/* Whether a kernel frame belongs to the tracepoint and BPF machinery that
 * ran the event's program (bpf_trace_run4, perf_trace_*, bpf_prog_*...). */
static bool tracing_frame(const char *name, size_t len)
{
	static const char *const prefixes[] = {
	        "bpf_prog_",      "bpf_trace_run", "__bpf_trace_",           "perf_trace_",
	        "trace_call_bpf", "__traceiter_",  "trace_event_raw_event_", "bpf_tracing_"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		if (len >= pl && memcmp(name, prefixes[i], pl) == 0)
			return true;
	}
	return false;
}

/* At the first drain and then every RETAIN_EVERY_S, each in a write of
 * its own: --retention deletes the time buckets wholly older than the
 * retention period from every wall-clock series of the store, and, when
 * the recorder keeps moments, store_rollup() forgets the detail of the
 * buckets past the keep window (their counts stay).  `final`: the
 * roll-up runs whatever the time. */
#define RETAIN_EVERY_S 60

static int retain(struct recorder *r, int64_t now, bool final)
{
	struct store_prune_opts o = {.before = now - r->opt->retention, .wall_clock_only = true};
	struct store_prune_stats st;
	int rc;

	if (r->opt->retention && (!r->pruned_at || now - r->pruned_at >= RETAIN_EVERY_S)) {
		rc = store_prune(r->store, &o, &st);
		if (rc < 0) {
			record_fail(r, rc, "store: retention: %s", store_errmsg(r->store));
			return rc;
		}
		r->pruned_at = now;
		r->pruned_buckets += st.buckets;
		r->pruned_samples += st.samples;
	}
	if (r->keep_samples > 0 &&
	    (final || !r->rolled_at || now - r->rolled_at >= RETAIN_EVERY_S)) {
		struct store_rollup_stats rs = {0};
		rc = store_rollup(r->store, &rs);
		if (rc < 0) {
			record_fail(r, rc, "store: roll-up of the recent samples: %s",
			            store_errmsg(r->store));
			return rc;
		}
		r->rolled_at = now;
		r->rolled_samples += rs.samples;
		r->rollups++;
	}
	return 0;
}

int record_series(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                  uint32_t ev, uint32_t *series)
{
	return record_series_event(r, b, key, record_events[ev].series, record_events[ev].unit,
	                           series);
}

int record_series_event(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                        const char *event, const char *unit, uint32_t *series)
{
	pid_t pid = (pid_t)key->pid;
	uint32_t gen = key->gen;

	/* A process is snapshotted once (at start, fork or exec);
	 * symbolize_user() reads its maps again when an address falls
	 * outside them. */
	if (!symbolize_known(r->sym, pid)) {
		int rc = symbolize_snapshot(r->sym, pid, 0);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			r->unsymbolized_pids++;
	}

	const char *bin = NULL, *bid = NULL;
	char version[13];
	symbolize_process_gen(r->sym, pid, gen, &bin, &bid);
	if (bid && *bid) {
		snprintf(version, sizeof(version), "%s", bid);
	} else {
		snprintf(version, sizeof(version), "%s", IMPORT_DEFAULT_VERSION);
	}
	struct store_series_key k = {
	        .binary = r->opt->binary ? r->opt->binary
	                  : bin && *bin  ? bin
	                                 : "[unknown]",
	        .version = r->opt->version ? r->opt->version : version,
	        .event = event,
	        .unit = unit,
	};
	int rc = record_labels_of(r, key, &k.labels);
	if (rc < 0)
		return rc;
	return store_batch_series(b, &k, series);
}

int record_store_frames(struct recorder *r, struct store_batch *b, uint32_t series, uint32_t ev,
                        int64_t when, size_t n, const struct profile_value *v, bool truncated,
                        pid_t pid, const struct moment *m, size_t nm)
{
	uint64_t mweight = 0;
	int rc;
	/* The vfs duty cycle: weights times the drained set's length over
	 * its hooked time (record_duty_flip). */
	double scale = r->duty.on && (ev == PROFILE_EV_VFS_READ || ev == PROFILE_EV_VFS_WRITE)
	                       ? r->duty.scale
	                       : 1;
	struct profile_value sv = *v;
	if (scale != 1)
		sv.weight = (uint64_t)llround((double)v->weight * scale);
	v = &sv;

	/* A tracepoint's kernel stack ends in the tracing machinery and our
	 * own program: not the workload's. */
	while (n > 0 && r->frames[n - 1].kind == STORE_FRAME_KERNEL &&
	       tracing_frame(r->frames[n - 1].name, r->frames[n - 1].name_len))
		n--;

	uint32_t node = STORE_ROOT_NODE;
	for (size_t j = 0; j < n; j++) {
		uint32_t frame;
		rc = store_batch_frame(b, &r->frames[j], &frame);
		if (rc >= 0)
			rc = store_batch_node(b, node, frame, &node);
		if (rc < 0)
			return rc;
	}
	for (size_t j = 0; j < nm; j++) {
		struct store_sample smp = {
		        .time_us = m[j].time_us,
		        .node = node,
		        .pid = (uint32_t)pid,
		        .tid = m[j].tid,
		        .weight = scale != 1 ? (uint64_t)llround((double)m[j].weight * scale)
		                             : m[j].weight,
		        .span = m[j].span,
		};
		rc = store_batch_sample(b, series, &smp);
		if (rc < 0)
			return rc;
		mweight += smp.weight;
	}
	if (v->samples) {
		rc = store_batch_add(b, series, when, node, v->samples, v->weight);
		if (rc < 0)
			return rc;
	}
	if (ev == PROFILE_EV_CPU && n > 0 &&
	    (rc = record_unnamed_add(r, &r->frames[n - 1], v->weight + mweight)) < 0)
		return rc;
	if (truncated)
		r->truncated += v->samples + nm;
	r->with_moment += nm;
	r->without_moment += v->samples;
	r->samples += v->samples + nm;
	r->weight += v->weight + mweight;
	r->ev_samples[ev] += v->samples + nm;
	r->ev_weight[ev] += v->weight + mweight;
	return 0;
}

/* Names the code objects of every stack with Python frames in r->ents
 * first, before the native frames' symbols and DWARF are read: a code
 * object can only be read while its process lives, and a short one may
 * exit while a first file's debug information loads. */
static int prefetch_python(struct recorder *r, int set)
{
	struct profile_pystack *us = r->pystack;

	for (size_t i = 0; i < r->nents; i++) {
		const struct profile_key *k = &r->ents[i].key;
		if (k->user_stack != PROFILE_PY_STACK)
			continue;
		/* (a process first seen now: as store_set() would) */
		if (!symbolize_known(r->sym, (pid_t)k->pid) &&
		    symbolize_snapshot(r->sym, (pid_t)k->pid, 0) == -ENOMEM)
			return -ENOMEM;
		const struct stack_ref *got = batch_find(&r->pystacks, k->user_hash);
		const __u64 *pcs = us->pcs;
		size_t depth;
		if (got) {
			pcs = r->pystacks.pcs + got->at;
			depth = got->len;
		} else if (bpf_map_lookup_elem(r->pystacks_fd[set], &k->user_hash, us) == 0) {
			depth = us->len < PROFILE_PY_SLOTS ? us->len : PROFILE_PY_SLOTS;
		} else {
			continue;
		}
		for (size_t j = 0; j + 1 < depth; j++) {
			if (!(pcs[j] & PROFILE_PY_TAG))
				continue;
			uint64_t code = pcs[j] & ~PROFILE_PY_TAG, v = pcs[j + 1];
			int rc = code ? symbolize_python_frame(r->sym, (pid_t)k->pid, k->gen, code,
			                                       (uint32_t)(v >> 32), (uint32_t)v,
			                                       NULL)
			              : 0;
			if (rc < 0)
				return rc;
			j++;
		}
	}
	return 0;
}

/* Gives each key of r->ents its records of r->smp (both then in key
 * order): a key that has records but no count gets an entry of its own
 * with no samples without a moment.  0 or -ENOMEM. */
static int join_samples(struct recorder *r)
{
	size_t nents = r->nents;

	if (nents > 1) /* qsort takes no NULL array, even empty */
		qsort(r->ents, nents, sizeof(*r->ents), entry_cmp);
	if (r->nsmp > 1)
		qsort(r->smp, r->nsmp, sizeof(*r->smp), smp_cmp);
	for (size_t i = 0; i < r->nsmp;) {
		size_t j = i + 1;
		while (j < r->nsmp && key_cmp(&r->smp[j].key, &r->smp[i].key) == 0)
			j++;
		struct entry want = {.key = r->smp[i].key}, *e = NULL;
		if (nents)
			e = bsearch(&want, r->ents, nents, sizeof(*r->ents), entry_cmp);
		if (!e) {
			e = push_entry(r);
			if (!e)
				return -ENOMEM;
			*e = want;
			if (r->hash_records && add_key_hashes(r, &want.key) < 0)
				return -ENOMEM;
		}
		e->first = i;
		e->nsmp = j - i;
		i = j;
	}
	if (r->nents > nents)
		qsort(r->ents, r->nents, sizeof(*r->ents), entry_cmp);
	return 0;
}

/* The moments of entry e's records, contiguous, in r->mscratch. */
static const struct moment *entry_moments(struct recorder *r, const struct entry *e)
{
	if (!e->nsmp)
		return NULL;
	if (e->nsmp > r->mscratch_cap) {
		size_t ncap = r->mscratch_cap ? r->mscratch_cap : 256;
		while (ncap < e->nsmp)
			ncap *= 2;
		struct moment *n = realloc(r->mscratch, ncap * sizeof(*n));
		if (!n)
			return NULL;
		r->mscratch = n;
		r->mscratch_cap = ncap;
	}
	for (size_t j = 0; j < e->nsmp; j++)
		r->mscratch[j] = r->smp[e->first + j].m;
	return r->mscratch;
}

/* Stores the counts and records of r->ents (read from `set`, joined by
 * join_samples) into batch b, but for those whose JIT frames may be named
 * later (late.c). */
static int store_set(struct recorder *r, struct store_batch *b, int set, int64_t when, bool final)
{
	const struct profile_key *last = NULL;
	uint32_t series = 0;
	struct raw_stack *user = &r->raw[0], *kernel = &r->raw[1];
	int rc;

	for (size_t i = 0; i < r->nents; i++) {
		const struct entry *e = &r->ents[i];
		pid_t pid = (pid_t)e->key.pid;

		uint32_t ev = e->key.event < PROFILE_NEVENTS ? e->key.event : PROFILE_EV_CPU;
		if (!last || pid != (pid_t)last->pid || e->key.gen != last->gen ||
		    e->key.event != last->event || e->key.cgroup != last->cgroup ||
		    memcmp(e->key.comm, last->comm, sizeof(e->key.comm)) != 0 ||
		    e->key.span != last->span) {
			rc = record_series(r, b, &e->key, ev, &series);
			if (rc < 0)
				return rc;
			last = &e->key;
		}

		const struct moment *m = entry_moments(r, e);
		if (e->nsmp && !m)
			return -ENOMEM;
		size_t n = 0;
		fetch_stack(r, set, &e->key, false, user);
		fetch_stack(r, set, &e->key, true, kernel);
		add_fs_pc(&e->key, kernel);
		rc = record_name_stacks(r, pid, e->key.gen, user, kernel, &n);
		if (rc < 0)
			return rc;
		if (record_stack_late(r, pid, e->key.gen, user)) {
			rc = record_late_take(r, &e->key, &e->v, m, e->nsmp, when, user, kernel,
			                      final, &n);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue; /* held back */
		}
		rc = record_store_frames(r, b, series, ev, when, n, &e->v, user->truncated, pid, m,
		                         e->nsmp);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = ns};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* --log-drains: one line per state of a drain, written with one write(2)
 * so that a kill leaves whole lines.  "committing" is written before the
 * commit and "committed" only once it returned: after a kill, every drain
 * with a "committed" line is in the store, and at most the last drain,
 * "committing" without "committed", may be there too (whole, never in
 * part). */
static void log_drain(struct recorder *r, const char *what, uint64_t samples, uint64_t weight)
{
	char line[128];
	int n;

	if (r->log_fd < 0)
		return;
	n = snprintf(line, sizeof(line),
	             "drain %" PRIu64 " %s samples %" PRIu64 " weight %" PRIu64 "\n", r->drain_seq,
	             what, samples, weight);
	if (n > 0 && write(r->log_fd, line, (size_t)n) != n)
		record_fail(r, -errno, "--log-drains: %s", strerror(errno));
}

int record_drain(struct recorder *r, bool final)
{
	uint32_t old = __atomic_load_n(&r->skel->bss->active, __ATOMIC_RELAXED);
	int sets[2] = {(int)old, (int)!old};
	int nsets = final ? 2 : 1;
	int64_t when = (int64_t)time(NULL);
	struct store_batch *b = NULL;
	uint64_t samples0 = r->samples, weight0 = r->weight;
	int rc;

	if (!final)
		__atomic_store_n(&r->skel->bss->active, !old, __ATOMIC_SEQ_CST);
	record_duty_flip(r);
	sleep_ns(FLIP_GRACE_NS);
	/* Each drain's records take the clocks' offset as it is now: NTP
	 * moves it slowly, a clock set moves it at once. */
	r->clock_off_ns = record_clock_offset();
	/* The fork and exec events of the samples in the set first: an exec
	 * met by a symbolizer re-read before its event names nothing. */
	ring_buffer__consume(r->rb);

	b = store_batch_new(r->store);
	if (!b) {
		rc = -ENOMEM;
		record_fail(r, rc, "store: cannot start a batch: %s", store_errmsg(r->store));
		return rc;
	}
	for (int i = 0; i < nsets; i++) {
		rc = read_set(r, sets[i]);
		if (rc >= 0)
			rc = join_samples(r);
		if (rc < 0)
			goto out_fail;
		if (python_walks(r->opt) && (rc = prefetch_python(r, sets[i])) < 0)
			goto out_fail;
		rc = store_set(r, b, sets[i], when, final);
		if (rc < 0)
			goto out_fail;
		/* Cleared before the commit: the set is written to again only
		 * after the next flip, and what it held is in the batch. */
		clear_set(r, sets[i]);
	}
	rc = record_late_flush(r, b, final);
	if (rc >= 0)
		rc = record_spans_store(r, b);
	if (rc < 0)
		goto out_fail;
	r->drain_seq++;
	log_drain(r, "committing", r->samples - samples0, r->weight - weight0);
	rc = store_batch_commit(b);
	if (rc < 0) {
		log_drain(r, "failed", r->samples - samples0, r->weight - weight0);
		record_fail(r, rc, "store: commit failed: %s", store_errmsg(r->store));
		goto out;
	}
	r->drains++;
	log_drain(r, "committed", r->samples - samples0, r->weight - weight0);
	reap_exited(r);
	sweep_modules(r);
	goto out;
out_fail:
	record_fail(r, rc, "drain: %s", strerror(-rc));
out:
	store_batch_free(b);
	if (rc >= 0)
		rc = retain(r, when, final);
	return rc;
}
