/*
 * symbolize.c — user and kernel address symbolization for the live
 * collector (see symbolize.h for the contract).
 *
 * Four caches make it cheap: ELF files ("modules", opened once at their
 * first sighting, shared by every process that maps them and keyed by
 * the file: device and inode, never the build id its owner writes), each module's function symbols copied into a sorted array at
 * its first lookup (libdwfl's own lookup scans the whole table each time),
 * resolved addresses per module, and kernel names per address.  Kernel
 * addresses are named by the kernel itself through a small BPF program
 * (ksym-internal.h), a batch per stack, and only when /proc/kallsyms cannot be
 * avoided (no BPF lookup) is that read, once.  Source
 * lines are looked up only on request (symbolize_set_lines).  A process's
 * maps are read at its first sighting and exec, and again only when an
 * address falls outside them.  A process is a snapshot of its executable mappings, each
 * pointing at a module; a mapping's address becomes a file offset, then an
 * ELF virtual address through the module's PT_LOAD headers, and libdwfl
 * resolves that address in a session that holds only that one module.
 */
#include "symbolize-internal.h"

/* ---- lookups ------------------------------------------------------------ */

/* /proc/PID/maps lists mappings in address order, without overlaps, so
 * a binary search finds the one holding a. */
static const struct mapping *find_mapping(const struct proc *p, uint64_t a)
{
	size_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || a >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

/* An address fell outside every known mapping of *pp, pid's current
 * snapshot: the process may have mapped new code (dlopen, a JIT's code
 * cache) since.  Reads its maps again (the caller keeps this to once a
 * second), keeping the old ones if it is gone, and points *pp at the
 * snapshot that stands for what it ran.  0 or -ENOMEM. */
static int reread_maps(struct symbolize *s, struct proc **pp, pid_t pid)
{
	struct proc *p = *pp, *np = NULL;
	int rc = sym_proc_snapshot(s, pid, &np);
	if (rc == -ENOMEM)
		return rc;
	if (rc == 0 && np->nmaps) {
		sym_jit_move(np, p);
		np->jit_version = ++s->jit_versions;
		*pp = sym_proc_reread(s, p, np);
	} else {
		sym_proc_free(np);
		p->maps_read = mono_ns();
		p->miss_unread = false; /* gone: what is outside stays so */
		p->jit_version = ++s->jit_versions;
	}
	return 0;
}

static int user_lookup(struct symbolize *s, struct proc *p, pid_t pid, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room);

int symbolize_user(struct symbolize *s, pid_t pid, uint64_t addr, bool caller,
                   struct store_frame *f, size_t room)
{
	return user_lookup(s, sym_proc_find(s, pid), pid, addr, caller, f, room);
}

void symbolize_user_files(const struct symbolize *s, pid_t pid, const uint64_t *addrs, size_t n,
                          const void **mods, uint64_t *offs)
{
	const struct proc *p = sym_proc_find(s, pid);
	const struct mapping *mp = NULL;
	int no_jit = -1; /* whether p is known to have no perf map: once asked */

	for (size_t i = 0; i < n; i++) {
		uint64_t a = addrs[i];
		offs[i] = 0;
		if (!p) {
			mods[i] = sym_unknown_name; /* user_lookup's "[unknown]" */
			continue;
		}
		if (!(mp && mp->start <= a && a < mp->end))
			mp = find_mapping(p, a);
		if (mp && mp->mod) {
			mods[i] = mp->mod;
			offs[i] = a - mp->start + mp->pgoff;
			continue;
		}
		/* Outside the file mappings: "[unknown]" whatever the address
		 * while the perf map is known to be missing and sym_jit_load()
		 * would not look again, and while a miss would not read the
		 * maps again. */
		if (no_jit < 0) {
			int64_t now = mono_ns();
			no_jit = p->jit_checked && !p->jit_exists &&
			         now - p->jit_checked < JIT_RECHECK_NS &&
			         now - p->maps_read < MAPS_RECHECK_NS;
		}
		mods[i] = !(mp && mp->special) && no_jit ? sym_unknown_name : NULL;
	}
}

int symbolize_user_gen(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room)
{
	return user_lookup(s, sym_proc_find_gen(s, pid, gen), pid, addr, caller, f, room);
}

/* Resolves addr in snapshot p of pid (the current one, or the one before
 * an exec). */
static int user_lookup(struct symbolize *s, struct proc *p, pid_t pid, uint64_t addr, bool caller,
                       struct store_frame *f, size_t room)
{
	uint64_t a = caller && addr ? addr - 1 : addr;
	int rc;

	memset(f, 0, sizeof(*f));
	f->name = sym_unknown_name;
	f->name_len = sizeof(sym_unknown_name) - 1;
	f->module = sym_unknown_name;
	f->module_len = sizeof(sym_unknown_name) - 1;
	f->kind = STORE_FRAME_UNKNOWN;
	if (!p)
		return 1;

	const struct mapping *mp = find_mapping(p, a);
	if (!mp && p == sym_proc_find(s, pid)) {
		if (mono_ns() - p->maps_read < MAPS_RECHECK_NS) {
			p->miss_unread = true; /* for symbolize_jit_late() */
		} else {
			rc = reread_maps(s, &p, pid);
			if (rc < 0)
				return rc;
			mp = find_mapping(p, a);
		}
	}

	if (mp && mp->mod) {
		struct module *m = mp->mod;
		uint64_t vaddr;
		f->module = m->path;
		f->module_len = strlen(m->path);
		f->build_id = m->build_id;
		f->build_id_len = m->build_id_len;
		/* the file offset of the byte looked up: where an unnamed
		 * frame is, when no function start is known */
		uint64_t off = a - mp->start + mp->pgoff;
		if (!sym_module_vaddr(m, off, &vaddr) || !vaddr) {
			f->name = m->unknown_name;
			f->name_len = strlen(m->unknown_name);
			f->offset = off;
			return 1;
		}
		struct symres *r;
		rc = sym_module_lookup(s, m, vaddr, &r);
		if (rc < 0)
			return rc;
		if (r->kind == STORE_FRAME_UNKNOWN && a != addr) {
			/* No function holds the byte before the return address:
			 * a signal frame's "return address" is the trampoline's
			 * own first byte (glibc's __restore_rt, behind a nop that
			 * belongs to no symbol). */
			rc = sym_module_lookup(s, m, vaddr + 1, &r);
			if (rc < 0)
				return rc;
		}
		f->name = r->name;
		f->name_len = strlen(r->name);
		f->file = r->file;
		f->file_len = r->file ? strlen(r->file) : 0;
		f->line = r->line;
		f->kind = r->kind;
		/* Unnamed: the function's start, at the same distance before
		 * the byte looked up in the file as in memory (one segment). */
		if (r->kind == STORE_FRAME_UNKNOWN)
			f->offset = r->start ? off - (vaddr - r->start) : off + (r->addr - vaddr);
		size_t n = 1;
		for (size_t k = 0; k < r->ninl && n < room; k++, n++) {
			f[n] = f[0];
			f[n].name = r->inl[k].name;
			f[n].name_len = strlen(r->inl[k].name);
			f[n].file = r->inl[k].file;
			f[n].file_len = r->inl[k].file ? strlen(r->inl[k].file) : 0;
			f[n].line = r->inl[k].line;
			f[n].kind = STORE_FRAME_INLINE;
		}
		return (int)n;
	}
	if (mp && mp->special) {
		f->name = mp->special;
		f->name_len = strlen(mp->special);
		return 1;
	}

	/* Anonymous or unmapped code: a JIT's perf map may name it. */
	const struct jit_sym *j = sym_jit_find(p, a);
	if (!j) {
		rc = sym_jit_load(s, p);
		if (rc < 0)
			return rc;
		j = sym_jit_find(p, a);
	}
	if (p->jit_exists) {
		f->module = p->jit_path;
		f->module_len = strlen(p->jit_path);
		if (j) {
			f->name = j->name;
			f->name_len = strlen(j->name);
			f->kind = STORE_FRAME_JIT;
		} else {
			f->name = p->jit_unknown;
			f->name_len = strlen(p->jit_unknown);
		}
	}
	return 1;
}

/* ---- JIT code named late ------------------------------------------------ */

bool symbolize_jit_late(struct symbolize *s, pid_t pid, uint32_t gen, uint64_t addr, bool caller)
{
	const struct proc *p = sym_proc_find_gen(s, pid, gen);
	uint64_t a = caller && addr ? addr - 1 : addr;

	if (!p)
		return false;
	const struct mapping *mp = find_mapping(p, a);
	if (!mp)
		/* Outside a snapshot read a moment ago, too recent to read
		 * again: code mapped since (a JIT's code cache) may hold it.
		 * A later lookup reads the maps again and knows.  The perf
		 * map may name it already, as symbolize_user() does then (a
		 * process that exited before its maps were read again). */
		return p->miss_unread && !sym_jit_find(p, a);
	return !mp->mod && !mp->special && !sym_jit_find(p, a);
}

int symbolize_jit_refresh(struct symbolize *s, pid_t pid, uint32_t gen, bool final)
{
	struct proc *p = sym_proc_find_gen(s, pid, gen);
	int rc;

	if (!p)
		return 0;
	if (p->miss_unread && p == sym_proc_find(s, pid) &&
	    mono_ns() - p->maps_read >= MAPS_RECHECK_NS) {
		rc = reread_maps(s, &p, pid);
		if (rc < 0)
			return rc;
	}
	rc = sym_jit_read(s, p, final);
	if (rc > 0)
		p->jit_version = ++s->jit_versions;
	return rc;
}

uint64_t symbolize_jit_version(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	const struct proc *p = sym_proc_find_gen(s, pid, gen);
	return p ? p->jit_version : 0;
}

bool symbolize_gone(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	const struct proc *p = sym_proc_find(s, pid);
	return !p || p->exited || p->gen != gen;
}

/* ---- lifetime ----------------------------------------------------------- */

struct symbolize *symbolize_new(void)
{
	elf_version(EV_CURRENT);
	struct symbolize *s = calloc(1, sizeof(struct symbolize));
	if (s)
		s->module_probe = sym_python_probe;
	return s;
}

size_t symbolize_sweep(struct symbolize *s, int64_t grace_ns)
{
	size_t freed = sym_modules_sweep(s, grace_ns);
	sym_python_prune(s);
	return freed;
}

void symbolize_free(struct symbolize *s)
{
	if (!s)
		return;
	sym_python_free(s);
	for (size_t i = 0; s->offline_tab && i <= s->offline_mask; i++)
		free(s->offline_tab[i].key);
	free(s->offline_tab);
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct proc *p = s->procs[b];
		while (p) {
			struct proc *n = p->next;
			sym_proc_free(p);
			p = n;
		}
	}
	for (size_t b = 0; b < FILE_BUCKETS; b++) {
		struct file_ent *e = s->files[b];
		while (e) {
			struct file_ent *n = e->next;
			free(e);
			e = n;
		}
	}
	struct module *m = s->modules;
	while (m) {
		struct module *n = m->next;
		sym_module_free(m);
		m = n;
	}
	ksym_free(s->ksym);
	free(s->kcache);
	while (s->kchunks) {
		struct kchunk *n = s->kchunks->next;
		free(s->kchunks);
		s->kchunks = n;
	}
	free(s->ksyms);
	free(s->knames);
	sym_roots_prune(s, true);
	free(s->refused_first);
	free(s);
}

void symbolize_set_inline(struct symbolize *s, bool inlines)
{
	s->inlines = inlines;
}

void symbolize_set_lines(struct symbolize *s, bool lines)
{
	s->lines = lines;
}

/* Installs p, pid's snapshot just after its `gen`th exec, keeping the
 * programs that ran before. */
static void exec_install(struct symbolize *s, pid_t pid, uint32_t gen, struct proc *p)
{
	struct proc *old = sym_proc_find(s, pid);

	if (old && old->gen == gen && gen) {
		/* A re-read met this program before its exec event (see
		 * sym_proc_install): a re-read of the same generation. */
		sym_proc_install(s, p);
		return;
	}
	p->at_exec = true;
	p->gen = gen;
	if (old) {
		/* Keep the programs that ran before, for samples they left in
		 * the drain still to come: a script's exec is often followed at
		 * once by its interpreter's (#!/usr/bin/env python3: the shell's
		 * child, then env, then python3), and the samples of the first
		 * exec's kernel side are the shell's. */
		struct proc **pp = sym_proc_slot(s, pid);
		*pp = old->next;
		sym_proc_keep_before(p, old);
	}
	sym_proc_install(s, p);
}

int symbolize_exec(struct symbolize *s, pid_t pid, uint32_t gen)
{
	struct proc *p = NULL;
	int rc = sym_proc_snapshot(s, pid, &p);

	if (rc < 0)
		return rc;
	exec_install(s, pid, gen, p);
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* p's mappings from m's layout: with lm NULL, the program's, the
 * loader's and the vDSO's (just after an exec); else all.  bias[] by
 * kind (the vDSO's 0: none), lm[] each library's. */
static int place_layout(struct proc *p, const struct module *m, const uint64_t bias[3],
                        const uint64_t *lm, size_t nlm)
{
	p->maps = calloc(m->nlayout ? m->nlayout : 1, sizeof(*p->maps));
	if (!p->maps)
		return -ENOMEM;
	p->nmaps = 0;
	for (size_t i = 0; i < m->nlayout; i++) {
		const struct symbolize_layout *l = &m->layout[i];
		uint64_t b;
		if (l->kind == SYMBOLIZE_LAYOUT_LIBRARY) {
			if (!lm || l->lm >= nlm)
				continue;
			b = lm[l->lm];
		} else {
			b = bias[l->kind];
			if (!b && l->kind == SYMBOLIZE_LAYOUT_VDSO)
				continue;
		}
		p->maps[p->nmaps++] = (struct mapping){.start = b + l->start,
		                                       .end = b + l->end,
		                                       .pgoff = l->pgoff,
		                                       .mod = (struct module *)l->module};
	}
	qsort(p->maps, p->nmaps, sizeof(*p->maps), map_cmp);
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].mod == m) {
			p->exe_start = p->maps[i].start;
			break;
		}
	return 0;
}

int symbolize_keep_layout(struct symbolize *s, pid_t pid, const void *exe, const void *loader,
                          const uint64_t *lm_addr, size_t nlm)
{
	const struct proc *p = sym_proc_find(s, pid);
	struct module *m = (struct module *)exe, *vdso = s->vdso_tried ? s->vdso : NULL;
	struct symbolize_layout *l;
	size_t n = 0;
	bool found = false;

	if (!p || !p->nmaps)
		return -ENOENT;
	l = calloc(p->nmaps, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mapping *mp = &p->maps[i];
		uint64_t vaddr;
		if (!mp->mod || !sym_module_vaddr(mp->mod, mp->pgoff, &vaddr))
			continue;
		uint64_t bias = mp->start - vaddr;
		struct symbolize_layout e = {.start = mp->start - bias,
		                             .end = mp->end - bias,
		                             .pgoff = mp->pgoff,
		                             .module = mp->mod};
		const struct symbolize_python *py = mp->mod->python;
		if (py && py->eval >= vaddr && py->eval - vaddr < mp->end - mp->start)
			e.python = py;
		if (mp->mod == exe) {
			e.kind = SYMBOLIZE_LAYOUT_PROGRAM;
			found = true;
		} else if (mp->mod == loader) {
			e.kind = SYMBOLIZE_LAYOUT_LOADER;
		} else if (mp->mod == vdso) {
			e.kind = SYMBOLIZE_LAYOUT_VDSO;
		} else {
			size_t k = 0;
			while (k < nlm && lm_addr[k] != bias)
				k++;
			if (k == nlm || k > UINT8_MAX)
				continue; /* not the loader's: a file mapped by hand */
			e.kind = SYMBOLIZE_LAYOUT_LIBRARY;
			e.lm = (uint8_t)k;
		}
		l[n++] = e;
	}
	if (!found) {
		free(l);
		return -ENOENT;
	}
	free(m->layout);
	m->layout = l;
	m->nlayout = n;
	m->layout_nlm = nlm;
	return 0;
}

const struct symbolize_layout *symbolize_get_layout(const struct symbolize *s, const void *exe,
                                                    size_t *n)
{
	const struct module *m = exe;
	(void)s;
	*n = m->nlayout;
	return m->layout;
}

const void *symbolize_exe_module(const struct symbolize *s, pid_t pid, unsigned long long *dev,
                                 unsigned long long *ino)
{
	const struct proc *p = sym_proc_find(s, pid);
	if (!p || !p->exe_mod)
		return NULL;
	*dev = p->exe_mod->dev;
	*ino = p->exe_mod->ino;
	return p->exe_mod;
}

/* A snapshot named after module m, for pid; its maps placed from m's
 * layout when bias[] says where (non-NULL). */
static int named_snapshot(struct symbolize *s, struct module *m, pid_t pid, const uint64_t bias[3],
                          const uint64_t *lm, size_t nlm, struct proc **out)
{
	struct proc *p = calloc(1, sizeof(*p));
	(void)s;
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->maps_read = 0; /* never: the first address outside reads them */
	if (!m->names) {
		const char *base = sym_base_of(m->path);
		m->names = sym_names_new(base, strlen(base), m->build_id, m->build_id_len);
	}
	p->exe_mod = m;
	p->exe_start = 0; /* placed by the layout or the first read */
	sym_module_touch(m);
	for (size_t i = 0; i < m->nlayout; i++)
		sym_module_touch(m->layout[i].module);
	sym_proc_names(p);
	if (!m->names || sym_proc_set_names(p, sym_names_get(m->names)) < 0 ||
	    (bias && m->nlayout && place_layout(p, m, bias, lm, nlm) < 0)) {
		sym_proc_free(p);
		return -ENOMEM;
	}
	p->placed = bias && m->nlayout;
	*out = p;
	return 0;
}

int symbolize_loaded_file(struct symbolize *s, pid_t pid, unsigned long long dev,
                          unsigned long long ino, const uint64_t bias[3], const uint64_t *lm_addr,
                          size_t nlm)
{
	struct module *m = sym_module_by_file(s, dev, ino);
	struct proc *p = NULL;
	int rc;

	if (!m || !m->is_elf || !m->layout_nlm || m->layout_nlm != nlm)
		return -ENOENT;
	rc = named_snapshot(s, m, pid, bias, lm_addr, nlm, &p);
	if (rc < 0)
		return rc;
	s->stats.loaded_named++;
	sym_proc_install(s, p); /* the same program: the same generation */
	return 0;
}

int symbolize_exec_file(struct symbolize *s, pid_t pid, uint32_t gen, unsigned long long dev,
                        unsigned long long ino, const uint64_t bias[3])
{
	struct module *m = sym_module_by_file(s, dev, ino);
	struct proc *p = NULL;
	int rc;

	if (!m || !m->is_elf)
		return -ENOENT;
	rc = named_snapshot(s, m, pid, bias, NULL, 0, &p);
	if (rc < 0)
		return rc;
	s->stats.execs_named++;
	exec_install(s, pid, gen, p);
	return 0;
}

const void *symbolize_maps_file(const struct symbolize *s, pid_t pid, unsigned long long dev,
                                unsigned long long ino)
{
	const struct module *m = sym_module_by_file(s, dev, ino);
	const struct proc *p = sym_proc_find(s, pid);

	for (size_t i = 0; m && m->is_elf && p && i < p->nmaps; i++)
		if (p->maps[i].mod == m)
			return m;
	return NULL;
}

uint64_t symbolize_module_entry(const void *module)
{
	return ((const struct module *)module)->entry;
}

static int inherit(struct symbolize *s, pid_t pid, pid_t parent, bool listed)
{
	struct proc *pp = sym_proc_find(s, parent);
	struct proc *p = NULL;
	int rc;

	if (pp && pp->at_exec) {
		listed = false; /* the list copied at the fork predates this */
		/* Its snapshot predates its libraries: read it again once
		 * (kept as it was if the parent is gone). */
		rc = sym_proc_snapshot(s, parent, &p);
		if (rc == -ENOMEM)
			return rc;
		if (rc == 0 && p->nmaps) {
			pp = sym_proc_reread(s, pp, p);
		} else {
			sym_proc_free(p);
			pp->at_exec = false;
		}
		p = NULL;
	}
	if (!pp || !pp->nmaps) {
		rc = symbolize_snapshot(s, pid, parent);
	} else {
		rc = sym_proc_copy(pp, pid, &p);
		if (rc < 0)
			return rc;
		p->placed = listed;
		sym_proc_install(s, p);
		s->stats.inherited++;
	}
	/* A new process: exec count 0, whatever an earlier holder of the
	 * pid did (the BPF side forgets it too). */
	p = rc == 0 ? sym_proc_find(s, pid) : NULL;
	if (p) {
		p->gen = 0;
		p->parent = parent;
		sym_proc_free(p->before);
		p->before = NULL;
	}
	return rc;
}

int symbolize_inherit(struct symbolize *s, pid_t pid, pid_t parent)
{
	return inherit(s, pid, parent, false);
}

int symbolize_inherit_listed(struct symbolize *s, pid_t pid, pid_t parent)
{
	return inherit(s, pid, parent, true);
}

pid_t symbolize_parent(const struct symbolize *s, pid_t pid)
{
	const struct proc *p = sym_proc_find((struct symbolize *)s, pid);
	return p ? p->parent : 0;
}

void symbolize_get_stats(const struct symbolize *s, struct symbolize_stats *st)
{
	*st = s->stats;
}

const char *symbolize_refused_first(const struct symbolize *s)
{
	return s->refused_first;
}
