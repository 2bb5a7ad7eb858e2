/*
 * process.c — the process events of `flamefs-collect record`: the ring
 * buffer's fork, exec, exit, loader and walker events that keep the
 * symbolizer's snapshots of the followed processes current (and write the
 * programs' templates the BPF side places new processes with), and, after
 * each drain's commit, the freeing of what exited processes and unused ELF
 * files held.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "record-internal.h"

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
 * ever saw, and a build starts processes by the thousand. */
void record_reap_exited(struct recorder *r)
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
void record_sweep_modules(struct recorder *r)
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
 * read.  A dlopen in a process the walker lists and has not sampled
 * since the list was written: read at its next walk (PROFILE_EVENT_STALE,
 * PROFILE_STALE_LOADED), if it is sampled again.  Else read now; the
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
		/* The walker met a pc outside the process's known mappings,
		 * or its first walk since a dlopen. */
		if (!r->unwinder)
			rc = 0;
		else if (e->flags & PROFILE_STALE_LOADED)
			rc = unwinder_reread(r->unwinder, r->sym, (pid_t)e->pid);
		else
			rc = unwinder_stale(r->unwinder, (pid_t)e->pid);
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
