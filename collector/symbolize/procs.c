/*
 * procs.c — the symbolizer's process snapshots: executable mappings read with PROCMAP_QUERY
 * (or /proc/PID/maps), forks and execs, the unwinder hooks, JIT perf maps.  See
 * symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

/* ---- processes ---------------------------------------------------------- */

static void proc_clear_jit(struct proc *p)
{
	for (size_t i = 0; i < p->njit; i++)
		free(p->jit[i].name);
	free(p->jit);
	if (p->budget) {
		p->budget->entries -= p->njit;
		p->budget->bytes -= p->jit_bytes;
	}
	p->jit = NULL;
	p->njit = 0;
	p->jit_bytes = 0;
}

void sym_proc_free(struct proc *p)
{
	if (!p)
		return;
	sym_proc_free(p->before);
	proc_clear_jit(p);
	free(p->maps);
	sym_names_put(p->names);
	sym_root_put(p->root);
	free(p);
}

struct proc **sym_proc_slot(const struct symbolize *s, pid_t pid)
{
	struct proc *const *pp = &s->procs[(unsigned)pid % PROC_BUCKETS];
	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return (struct proc **)pp;
}

struct proc *sym_proc_find(const struct symbolize *s, pid_t pid)
{
	return *sym_proc_slot(s, pid);
}

/* p's mappings as the unwinder sees them, into out[0..p->nmaps). */
static void proc_export(const struct proc *p, struct symbolize_map *out)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mapping *mp = &p->maps[i];
		uint64_t vaddr;
		out[i] = (struct symbolize_map){.start = mp->start, .end = mp->end};
		if (mp->mod && mp->mod->is_elf && sym_module_vaddr(mp->mod, mp->pgoff, &vaddr)) {
			out[i].module = mp->mod;
			out[i].bias = mp->start - vaddr;
			const struct symbolize_python *py = mp->mod->python;
			if (py && py->eval >= vaddr && py->eval - vaddr < mp->end - mp->start)
				out[i].python = py;
		}
	}
}

int symbolize_maps(const struct symbolize *s, pid_t pid, struct symbolize_map **maps, size_t *n)
{
	const struct proc *p = sym_proc_find(s, pid);
	if (!p)
		return -ESRCH;
	*maps = calloc(p->nmaps ? p->nmaps : 1, sizeof(**maps));
	if (!*maps)
		return -ENOMEM;
	proc_export(p, *maps);
	*n = p->nmaps;
	return 0;
}

void symbolize_set_hooks(struct symbolize *s, const struct symbolize_hooks *h)
{
	if (h)
		s->hooks = *h;
	else
		memset(&s->hooks, 0, sizeof(s->hooks));
}

/* Whether p maps a CPython interpreter of a known layout (the unwinder
 * then has an entry for it). */
static bool proc_has_python(const struct proc *p)
{
	for (size_t i = 0; p && i < p->nmaps; i++)
		if (p->maps[i].mod && p->maps[i].mod->python && p->maps[i].mod->python->layout)
			return true;
	return false;
}

/* Tells the process hook of p; had_python: the snapshot it replaces
 * mapped a Python interpreter. */
static void notify_process(struct symbolize *s, const struct proc *p, bool had_python)
{
	struct symbolize_map small[64], *maps = small;

	if (!s->hooks.process || p->placed)
		return;
	if (p->nmaps > sizeof(small) / sizeof(small[0])) {
		maps = calloc(p->nmaps, sizeof(*maps));
		if (!maps)
			return; /* the unwinder falls back to frame pointers */
	}
	proc_export(p, maps);
	s->hooks.process(s->hooks.ctx, p->pid, maps, p->nmaps,
	                 (had_python ? SYMBOLIZE_PROCESS_HAD_PYTHON : 0) |
	                         (p->inherited ? SYMBOLIZE_PROCESS_INHERITED : 0));
	if (maps != small)
		free(maps);
}

static bool same_text(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

void sym_proc_keep_before(struct proc *p, struct proc *old)
{
	old->next = NULL;
	p->before = old;
	struct proc *q = p;
	for (int depth = 0; q && depth < SYM_GENERATIONS - 1; depth++)
		q = q->before;
	if (q) {
		sym_proc_free(q->before);
		q->before = NULL;
	}
}

/* Puts p in the table, replacing (and freeing) an older snapshot. */
void sym_proc_install(struct symbolize *s, struct proc *p)
{
	struct proc **pp = sym_proc_slot(s, p->pid);
	bool had_python = false;
	if (*pp) {
		struct proc *old = *pp;
		p->next = old->next;
		if (!p->gen && !p->before && (old->nmaps || old->exe_mod) &&
		    (!same_text(p->binary, old->binary) ||
		     !same_text(p->build_id_hex, old->build_id_hex))) {
			/* A re-read that finds another program: the process
			 * exec'd and its exec event is still queued.  Keep
			 * what it ran as the generation before, as
			 * symbolize_exec() would. */
			p->gen = old->gen + 1;
			p->at_exec = false;
			sym_proc_keep_before(p, old);
			*pp = p;
			s->stats.processes++;
			notify_process(s, p, proc_has_python(old));
			return;
		}
		if (!p->gen && !p->before) {
			/* A re-read of the same program: same generation. */
			p->gen = old->gen;
			p->before = old->before;
			old->before = NULL;
		}
		had_python = proc_has_python(old);
		sym_proc_free(old);
	} else {
		p->next = NULL;
	}
	*pp = p;
	s->stats.processes++;
	notify_process(s, p, had_python);
}

struct proc *sym_proc_reread(struct symbolize *s, struct proc *cur, struct proc *np)
{
	uint32_t gen = cur->gen;
	sym_proc_install(s, np);
	for (struct proc *q = np; q; q = q->before)
		if (q->gen == gen)
			return q;
	return np;
}

char *sym_hex_of(const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *h = malloc(n * 2 + 1);
	if (!h)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		h[2 * i] = digits[b[i] >> 4];
		h[2 * i + 1] = digits[b[i] & 15];
	}
	h[n * 2] = '\0';
	return h;
}

int sym_proc_set_names(struct proc *p, struct proc_names *names)
{
	if (!names)
		return -ENOMEM;
	sym_names_put(p->names);
	p->names = names;
	p->binary = names->binary;
	p->build_id_hex = names->build_id_hex;
	return 0;
}

/* pre, the decimal pid and post into out (a snapshot is made for each
 * process started: no printf). */
static void with_pid(char out[32], const char *pre, pid_t pid, const char *post)
{
	char num[16];
	size_t n = 0, lp = strlen(pre), ls = strlen(post);
	unsigned v = (unsigned)pid;

	do
		num[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(num));
	/* at most 6 + 10 + 5 bytes and the NUL */
	memcpy(out, pre, lp);
	for (size_t i = 0; i < n; i++)
		out[lp + i] = num[n - 1 - i];
	memcpy(out + lp + n, post, ls + 1);
}

void sym_proc_names(struct proc *p)
{
	with_pid(p->jit_path, "/tmp/perf-", p->pid, ".map");
	with_pid(p->jit_unknown, "[perf-", p->pid, ".map]");
}

int sym_proc_copy(const struct proc *from, pid_t pid, struct proc **out)
{
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->inherited = true;
	p->root = sym_root_get(from->root); /* a fork keeps its parent's root */
	p->uid = from->uid;
	sym_proc_set_names(p, sym_names_get(from->names));
	sym_proc_names(p);
	p->maps = calloc(from->nmaps ? from->nmaps : 1, sizeof(*p->maps));
	if (!p->maps) {
		sym_proc_free(p);
		return -ENOMEM;
	}
	if (from->nmaps) /* a parent with no mappings yet has no array */
		memcpy(p->maps, from->maps, from->nmaps * sizeof(*p->maps));
	p->nmaps = from->nmaps;
	p->maps_read = from->maps_read;
	p->exe_mod = from->exe_mod;
	p->exe_start = from->exe_start;
	*out = p;
	return 0;
}

/* Name of a process without an executable: its comm, spaces as '_'. */
static int read_comm(pid_t pid, char **out)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -err : -ESRCH;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == ' ')
			*c = '_';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

/* Adds one executable mapping to p (name: a path, "[vdso]", or "" for
 * anonymous memory). */
static int proc_add_map(struct symbolize *s, struct proc *p, size_t *cap, uint64_t start,
                        uint64_t end, uint64_t pgoff, unsigned long long dev,
                        unsigned long long ino, char *name)
{
	char *del = strstr(name, " (deleted)");
	if (del && del[10] == '\0')
		*del = '\0';
	if (p->nmaps == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct mapping *n = realloc(p->maps, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->maps = n;
		*cap = ncap;
	}
	struct mapping *mp = &p->maps[p->nmaps];
	*mp = (struct mapping){.start = start, .end = end, .pgoff = pgoff};
	if (name[0] == '/' && ino != 0) {
		int rc = sym_module_get(s, p, start, end, name, dev, ino, &mp->mod);
		if (rc == -ENOMEM)
			return rc;
		/* unreadable or refused file: shown as [unknown] */
		if (rc < 0) {
			mp->mod = NULL;
			mp->special = sym_unknown_name;
		}
	} else if (strcmp(name, "[vdso]") == 0) {
		mp->mod = sym_vdso_module(s);
		if (!mp->mod)
			mp->special = "[[vdso]]";
	} else {
		mp->special = NULL; /* anonymous: JIT code or unknown */
	}
	p->nmaps++;
	return 0;
}

/* PROCMAP_QUERY (Linux 6.11, <linux/fs.h>), declared here for older
 * headers. */
struct flamefs_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define FLAMEFS_PROCMAP_QUERY          _IOWR('f', 17, struct flamefs_procmap_query)
#define FLAMEFS_PROCMAP_QUERY_VMA_EXEC 0x04
#define FLAMEFS_PROCMAP_QUERY_OR_NEXT  0x10

/* Reads p's executable mappings with the PROCMAP_QUERY ioctl: the kernel
 * walks to each executable mapping and names only those, where reading
 * /proc/PID/maps formats every mapping (four times as many) as text.
 * Returns -ENOTTY (or -EINVAL) when the kernel lacks it, before touching
 * p. */
static int proc_query_maps(struct symbolize *s, struct proc *p, int fd)
{
	static char name[PATH_MAX];
	uint64_t addr = 0;
	size_t cap = 0;

	for (;;) {
		struct flamefs_procmap_query q = {
		        .size = sizeof(q),
		        .query_flags =
		                FLAMEFS_PROCMAP_QUERY_VMA_EXEC | FLAMEFS_PROCMAP_QUERY_OR_NEXT,
		        .query_addr = addr,
		        .vma_name_addr = (uint64_t)(uintptr_t)name,
		        .vma_name_size = sizeof(name),
		};
		/* ENOENT: no more; ESRCH: no mappings left (a zombie), as the
		 * text would be empty. */
		if (ioctl(fd, FLAMEFS_PROCMAP_QUERY, &q) < 0)
			return errno == ENOENT || errno == ESRCH ? 0 : -errno;
		if (!q.vma_name_size)
			name[0] = '\0';
		unsigned long long dev = ((unsigned long long)q.dev_major << 20) | q.dev_minor;
		int rc = proc_add_map(s, p, &cap, q.vma_start, q.vma_end, q.vma_offset, dev,
		                      q.inode, name);
		if (rc < 0)
			return rc;
		if (q.vma_end <= addr)
			return -EINVAL; /* no progress: give up on the ioctl */
		addr = q.vma_end;
	}
}

static int proc_read_maps(struct symbolize *s, struct proc *p)
{
	static bool no_query; /* PROCMAP_QUERY failed once: text only */
	char path[64], line[4096 + 128];
	size_t cap = 0;
	int rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	if (!no_query) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		rc = proc_query_maps(s, p, fd);
		close(fd);
		if (rc != -ENOTTY && rc != -EINVAL && rc != -EOPNOTSUPP)
			return rc;
		no_query = true; /* older kernel: the text below from now on */
		p->nmaps = 0;
		rc = 0;
	}
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "start-end perms pgoff major:minor inode   name" */
		uint64_t start, end, pgoff, major, minor, ino;
		const char *c = line;
		if (!scan_hex(&c, &start) || !scan_char(&c, '-') || !scan_hex(&c, &end) ||
		    !scan_char(&c, ' '))
			continue;
		const char *perms = c;
		while (*c && *c != ' ')
			c++;
		if (!memchr(perms, 'x', (size_t)(c - perms)))
			continue;
		skip_spaces(&c);
		if (!scan_hex(&c, &pgoff) || !scan_char(&c, ' ') || !scan_hex(&c, &major) ||
		    !scan_char(&c, ':') || !scan_hex(&c, &minor) || !scan_char(&c, ' ') ||
		    !scan_dec(&c, &ino))
			continue;
		skip_spaces(&c);
		char *name = line + (c - line);
		name[strcspn(name, "\n")] = '\0';
		unsigned long long dev = ((unsigned long long)major << 20) | minor;
		rc = proc_add_map(s, p, &cap, start, end, pgoff, dev, ino, name);
		if (rc < 0)
			break;
	}
	fclose(f);
	return rc;
}

/* Where module m is first mapped in p, or 0. */
static uint64_t module_start(const struct proc *p, const struct module *m)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].mod == m)
			return p->maps[i].start;
	return 0;
}

int sym_proc_take_root(struct symbolize *s, struct proc *p)
{
	char path[32];
	struct stat st;

	with_pid(path, "/proc/", p->pid, "");
	/* /proc/PID belongs to the process's effective user (root when it
	 * is not dumpable). */
	if (stat(path, &st) < 0)
		return -errno;
	int rc = sym_root_of(s, p->pid, &p->root);
	if (rc == 0)
		p->uid = st.st_uid;
	return rc;
}

int sym_proc_snapshot(struct symbolize *s, pid_t pid, struct proc **out)
{
	char path[64], exe[PATH_MAX];
	struct proc *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->maps_read = mono_ns();
	sym_proc_names(p);
	/* Its root, taken before its files: the fallback path of a mapped
	 * file, its debug links and its perf map are looked for inside it. */
	rc = sym_proc_take_root(s, p);
	if (rc == -ENOMEM)
		goto fail;
	rc = proc_read_maps(s, p);
	if (rc < 0)
		goto fail;

	/* A re-read of the program known already (the loader has mapped the
	 * libraries, a dlopen): its executable is still mapped where it
	 * was, so its name and build id are as they were, without reading
	 * /proc/PID/exe again (a tenth of the collector's CPU under churn,
	 * where most processes are read twice). */
	const struct proc *old = sym_proc_find(s, pid);
	uint64_t exe_at = old && old->exe_mod ? module_start(p, old->exe_mod) : 0;
	if (exe_at && (exe_at == old->exe_start || !old->exe_start)) {
		/* (exe_start 0: named at its exec from the file alone,
		 * symbolize_exec_file(), and placed now) */
		sym_proc_set_names(p, sym_names_get(old->names));
		p->exe_mod = old->exe_mod;
		p->exe_start = exe_at;
		*out = p;
		return 0;
	}

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	char *comm = NULL;
	const char *binary;
	if (n < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			goto fail;
		/* A kernel thread (no executable), or gone. */
		rc = read_comm(pid, &comm);
		if (rc < 0)
			goto fail;
		binary = comm;
		exe[0] = '\0';
	} else {
		exe[n] = '\0';
		char *del = strstr(exe, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		binary = sym_base_of(exe);
	}

	/* The version is the executable's build id. */
	const struct module *em = NULL;
	for (size_t i = 0; exe[0] && i < p->nmaps; i++)
		if (p->maps[i].mod && strcmp(p->maps[i].mod->path, exe) == 0)
			em = p->maps[i].mod;
	if (!em && exe[0]) {
		for (size_t i = 0; i < p->nmaps; i++)
			if (p->maps[i].mod &&
			    strcmp(sym_base_of(p->maps[i].mod->path), binary) == 0)
				em = p->maps[i].mod;
	}
	rc = sym_proc_set_names(p, sym_names_new(binary, strlen(binary), em ? em->build_id : NULL,
	                                         em ? em->build_id_len : 0));
	free(comm);
	if (rc < 0)
		goto fail;
	if (em) {
		p->exe_mod = em;
		p->exe_start = module_start(p, em);
	}
	*out = p;
	return 0;
fail:
	sym_proc_free(p);
	return rc;
}

int symbolize_snapshot(struct symbolize *s, pid_t pid, pid_t parent)
{
	struct proc *p = NULL;
	int rc = sym_proc_snapshot(s, pid, &p);

	if (rc == -ENOENT || rc == -ESRCH) {
		const struct proc *pp = parent ? sym_proc_find(s, parent) : NULL;
		if (!pp)
			return -ESRCH;
		rc = sym_proc_copy(pp, pid, &p);
		if (rc < 0)
			return rc;
		s->stats.inherited++;
	} else if (rc < 0) {
		return rc;
	} else if (p->nmaps == 0) {
		/* A zombie has no mappings left: keep what was seen alive. */
		const struct proc *old = sym_proc_find(s, pid);
		if (old && old->nmaps) {
			sym_proc_free(p);
			return 0;
		}
	}
	sym_proc_install(s, p);
	return 0;
}

void symbolize_exited(struct symbolize *s, pid_t pid)
{
	struct proc *p = sym_proc_find(s, pid);
	if (p)
		p->exited = true;
}

bool symbolize_reap(struct symbolize *s, pid_t pid)
{
	struct proc **pp = sym_proc_slot(s, pid), *p = *pp;
	if (!p || !p->exited)
		return false;
	*pp = p->next;
	sym_proc_free(p);
	s->stats.reaped++;
	return true;
}

bool symbolize_known(const struct symbolize *s, pid_t pid)
{
	return sym_proc_find(s, pid) != NULL;
}

/* The snapshot of pid at generation gen (see symbolize_user_gen). */
struct proc *sym_proc_find_gen(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	struct proc *p = sym_proc_find(s, pid);
	for (struct proc *q = p; q; q = q->before)
		if (q->gen == gen)
			return q;
	return p;
}

int symbolize_process_gen(const struct symbolize *s, pid_t pid, uint32_t gen, const char **binary,
                          const char **build_id_hex)
{
	const struct proc *p = sym_proc_find_gen(s, pid, gen);
	if (!p)
		return -ESRCH;
	*binary = p->binary;
	*build_id_hex = p->build_id_hex;
	return 0;
}

const char *symbolize_process_exe(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	const struct proc *p = sym_proc_find_gen(s, pid, gen);
	return p && p->exe_mod ? p->exe_mod->path : NULL;
}

bool symbolize_current_gen(const struct symbolize *s, pid_t pid, uint32_t gen)
{
	const struct proc *p = sym_proc_find(s, pid);
	return p && p->gen == gen && !p->exited;
}

int symbolize_process(const struct symbolize *s, pid_t pid, const char **binary,
                      const char **build_id_hex)
{
	const struct proc *p = sym_proc_find(s, pid);
	if (!p)
		return -ESRCH;
	*binary = p->binary;
	*build_id_hex = p->build_id_hex;
	return 0;
}

/* ---- JIT perf maps ------------------------------------------------------ */

static int jit_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* A hex number with an optional 0x, as perf's map reader takes it. */
static bool scan_hex0x(const char **c, const char *end, uint64_t *v)
{
	const char *p = *c;
	uint64_t x = 0;
	int digits = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end; p++, digits++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		if (x >> 60)
			return false; /* more than 64 bits */
		x = (x << 4) | d;
	}
	if (!digits)
		return false;
	*v = x;
	*c = p;
	return true;
}

static bool skip_blanks(const char **c, const char *end)
{
	const char *p = *c;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == *c)
		return false;
	*c = p;
	return true;
}

int sym_jit_parse(const char *data, size_t len, bool final, struct jit_sym **out, bool *partial)
{
	size_t bytes;
	bool capped;
	return sym_jit_parse_capped(data, len, final, JIT_MAP_MAX_ENTRIES, SIZE_MAX, out, partial,
	                            &bytes, &capped);
}

int sym_jit_parse_capped(const char *data, size_t len, bool final, size_t max_entries,
                         size_t max_bytes, struct jit_sym **out, bool *partial, size_t *bytes,
                         bool *capped)
{
	struct jit_sym *jit = NULL;
	size_t n = 0, cap = 0, used = 0;
	char *name = NULL;
	size_t name_cap = 0;
	const char *c = data, *end = data + len;

	*out = NULL;
	*partial = false;
	*capped = false;
	if (max_entries > JIT_MAP_MAX_ENTRIES)
		max_entries = JIT_MAP_MAX_ENTRIES;
	while (c < end) {
		if (n >= max_entries) {
			*capped = max_entries < JIT_MAP_MAX_ENTRIES;
			break;
		}
		const char *nl = memchr(c, '\n', (size_t)(end - c));
		const char *eol = nl ? nl : end;
		const char *q = c;
		uint64_t start, size;

		if (!nl && !final) {
			*partial = true; /* its writer may still be at it */
			break;
		}
		c = nl ? nl + 1 : end;
		if (!scan_hex0x(&q, eol, &start) || !skip_blanks(&q, eol) ||
		    !scan_hex0x(&q, eol, &size) || !skip_blanks(&q, eol))
			continue;
		const char *ne = eol;
		if (ne > q && ne[-1] == '\r')
			ne--;
		if (ne == q || memchr(q, '\0', (size_t)(ne - q)) || start + size < start)
			continue;
		size_t nl_len = (size_t)(ne - q);
		if (nl_len + 1 > name_cap) {
			char *nn = realloc(name, nl_len + 1);
			if (!nn)
				goto nomem;
			name = nn;
			name_cap = nl_len + 1;
		}
		memcpy(name, q, nl_len);
		name[nl_len] = '\0';
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct jit_sym *nj = realloc(jit, ncap * sizeof(*nj));
			if (!nj)
				goto nomem;
			jit = nj;
			cap = ncap;
		}
		char *nm = symbolize_name(name);
		if (!nm)
			goto nomem;
		size_t nb = strlen(nm) + 1;
		if (nb > max_bytes - used) {
			free(nm);
			*capped = true;
			break;
		}
		used += nb;
		jit[n++] = (struct jit_sym){start, size, nm};
	}
	free(name);
	*bytes = used;
	if (n > 1)
		qsort(jit, n, sizeof(*jit), jit_cmp);
	if (n > INT_MAX) {
		for (size_t i = 0; i < n; i++)
			free(jit[i].name);
		free(jit);
		return -ENOMEM;
	}
	*out = jit;
	return (int)n;
nomem:
	free(name);
	for (size_t i = 0; i < n; i++)
		free(jit[i].name);
	free(jit);
	return -ENOMEM;
}

/* Reads up to JIT_MAP_MAX_BYTES of fd into a malloc'd buffer. */
static int read_capped(int fd, off_t size, char **out, size_t *len)
{
	size_t want = size > (off_t)JIT_MAP_MAX_BYTES ? JIT_MAP_MAX_BYTES : (size_t)size;
	char *buf = malloc(want ? want : 1);
	size_t got = 0;

	if (!buf)
		return -ENOMEM;
	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* shorter than fstat said (truncated meanwhile) */
		got += (size_t)r;
	}
	*out = buf;
	*len = got;
	return 0;
}

/* Opens p's perf map as perf reads it: /tmp/perf-PID.map inside the
 * process's own root (its /tmp, whatever mount namespace it has), a
 * regular file (no symlink, never blocking), owned by the process's
 * effective user or root; a profile's process (offline): the importer's
 * own /tmp, owned by the importer or root.  Returns the descriptor, or
 * -errno (-EPERM: refused for its owner). */
static int jit_open(struct symbolize *s, struct proc *p, struct stat *st)
{
	int fd;
	uid_t owner;

	if (p->offline) {
		fd = sym_open_checked(AT_FDCWD, p->jit_path, 0, UINT64_MAX, st);
		owner = getuid();
	} else {
		struct sym_root *root = p->root;
		owner = p->uid;
		if (!root && !p->exited && p == sym_proc_find(s, p->pid)) {
			/* A snapshot named from its file (an exec, the loader's
			 * hook): its root is taken now, while it runs. */
			int rc = sym_proc_take_root(s, p);
			if (rc == -ENOMEM)
				return rc;
			root = p->root;
			owner = p->uid;
		}
		for (const struct proc *q = p->before; !root && q; q = q->before) {
			/* Gone before that: the program it ran before its exec
			 * had the same root, but its user may have changed at
			 * the exec (a set-user-ID program), so only root's map. */
			root = q->root;
			owner = 0;
		}
		if (!root)
			return -ENOENT;
		fd = sym_open_checked(root->fd, p->jit_path, SYM_OPEN_IN_ROOT, UINT64_MAX, st);
	}
	if (fd >= 0 && st->st_uid != 0 && st->st_uid != owner) {
		close(fd);
		fd = -EPERM;
	}
	if ((fd == -EPERM || fd == -EINVAL) && !p->jit_refused) {
		p->jit_refused = true; /* counted once per snapshot */
		s->stats.jit_maps_refused++;
	}
	return fd;
}

int sym_jit_read(struct symbolize *s, struct proc *p, bool final)
{
	struct stat st;
	int rc;

	p->jit_checked = mono_ns();
	int fd = jit_open(s, p, &st);
	if (fd == -ENOMEM)
		return fd;
	if (fd < 0)
		return 0;
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	if (p->jit_exists && st.st_size == p->jit_size && mtime == p->jit_mtime &&
	    (uint64_t)st.st_ino == p->jit_ino && !(final && p->jit_partial)) {
		close(fd);
		return 0;
	}
	char *buf = NULL;
	size_t len = 0;
	rc = read_capped(fd, st.st_size, &buf, &len);
	close(fd);
	if (rc < 0)
		return rc;
	struct jit_sym *jit = NULL;
	bool partial = false, capped = false;
	size_t bytes = 0;
	/* What all the other maps leave of the bound over all of them. */
	struct jit_budget *b = &s->jit_budget;
	size_t room_n = JIT_TOTAL_MAX_ENTRIES - (b->entries - (p->budget ? p->njit : 0));
	size_t room_b = JIT_TOTAL_MAX_BYTES - (b->bytes - (p->budget ? p->jit_bytes : 0));
	/* A map cut at the cap: its last line is no more final than one
	 * still being written. */
	rc = sym_jit_parse_capped(buf, len, final && len == (size_t)st.st_size, room_n, room_b,
	                          &jit, &partial, &bytes, &capped);
	free(buf);
	if (rc < 0)
		return rc;
	if (capped)
		s->stats.jit_capped++;
	proc_clear_jit(p);
	p->jit = jit;
	p->njit = (size_t)rc;
	p->jit_bytes = bytes;
	p->budget = b;
	b->entries += p->njit;
	b->bytes += bytes;
	p->jit_exists = true;
	p->jit_size = st.st_size;
	p->jit_mtime = mtime;
	p->jit_ino = (uint64_t)st.st_ino;
	p->jit_partial = partial;
	return 1;
}

/* JIT runtimes append to the map, and it outlives the process. */
int sym_jit_load(struct symbolize *s, struct proc *p)
{
	int64_t now = mono_ns();

	/* Looked at a moment ago: a missing map stays missing for a while,
	 * and an existing one is looked at again only on a miss. */
	if (p->jit_checked &&
	    now - p->jit_checked < (p->jit_exists ? JIT_RECHECK_NS / 3 : JIT_RECHECK_NS))
		return 0;
	int rc = sym_jit_read(s, p, false);
	if (rc > 0)
		p->jit_version = ++s->jit_versions;
	return rc < 0 ? rc : 0;
}

void sym_jit_move(struct proc *to, struct proc *from)
{
	proc_clear_jit(to);
	to->jit = from->jit;
	to->njit = from->njit;
	to->jit_bytes = from->jit_bytes;
	to->budget = from->budget;
	to->jit_size = from->jit_size;
	to->jit_mtime = from->jit_mtime;
	to->jit_ino = from->jit_ino;
	to->jit_exists = from->jit_exists;
	to->jit_partial = from->jit_partial;
	to->jit_checked = from->jit_checked;
	to->jit_version = from->jit_version;
	from->jit = NULL;
	from->njit = 0;
	from->jit_bytes = 0;
}

const struct jit_sym *sym_jit_lookup(const struct jit_sym *jit, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (jit[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct jit_sym *j = &jit[lo - 1];
	return addr - j->start < j->size ? j : NULL;
}

const struct jit_sym *sym_jit_find(const struct proc *p, uint64_t addr)
{
	return sym_jit_lookup(p->jit, p->njit, addr);
}
