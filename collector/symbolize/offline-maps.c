/*
 * offline-maps.c — the symbolizer's offline processes: mappings described by a profile (perf.data,
 * gperftools) rather than read from /proc.  See
 * symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

/* ---- offline processes (perf.data, gperftools profiles) ---------------- */

/* Opens f read-only (a regular file of at most SYM_FILE_MAX bytes, its
 * last component no symlink, never blocking: a profile names files its
 * importer, often root, then opens); true when it is an ELF file whose
 * GNU build id is bid (any ELF file when bid_len is 0).  *fd is the open
 * file then, and *elfp (when elfp is not NULL) its libelf descriptor,
 * the caller's to end.  A file that exists but is refused sets *refused. */
static bool offline_try(const char *f, const uint8_t *bid, size_t bid_len, int *fd, bool *refused,
                        Elf **elfp)
{
	struct stat st;

	*fd = sym_open_checked(AT_FDCWD, f, 0, SYM_FILE_MAX, &st);
	if (*fd == -EINVAL || *fd == -EFBIG || *fd == -ELOOP)
		*refused = true;
	if (*fd < 0) {
		*fd = -1;
		return false;
	}
	Elf *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	bool ok = elf && elf_kind(elf) == ELF_K_ELF;
	if (ok && bid_len) {
		const void *got;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &got);
		ok = n == (ssize_t)bid_len && memcmp(got, bid, bid_len) == 0;
	}
	if (ok && elfp) {
		*elfp = elf;
		return true;
	}
	if (elf)
		elf_end(elf);
	if (!ok) {
		close(*fd);
		*fd = -1;
	}
	return ok;
}

/* One candidate path made by asprintf() (n: its return, or -2 for no
 * candidate): 1 with *found = cand when it is the file (*fd open on it),
 * 0 when it is not (cand freed), -1 when it could not be made. */
static int offline_candidate(int n, char *cand, const uint8_t *bid, size_t bid_len, int *fd,
                             bool *refused, Elf **elfp, char **found)
{
	if (n == -2)
		return 0;
	if (n < 0)
		return -1;
	if (offline_try(cand, bid, bid_len, fd, refused, elfp)) {
		*found = cand;
		return 1;
	}
	free(cand);
	return 0;
}

/* The file for (path, build id) as symbolize_offline_find() says; *fd is
 * open on it.  Returns the malloc'd path, or NULL.  A path with a ".."
 * component (which DIR/PATH would take out of DIR) is refused whole, and
 * so is each candidate that is not a regular file of a bounded size:
 * *refused is set then. */
static char *offline_open(const char *path, const uint8_t *bid, size_t bid_len,
                          const char *binary_path, int *fd, bool *refused, Elf **elfp)
{
	const char *base = sym_base_of(path), *home = getenv("HOME");
	char *cand = NULL, *hex = NULL, *found = NULL;
	int n;

	*fd = -1;
	if (sym_path_has_dotdot(path) || !sym_plain_name(base)) {
		*refused = true;
		return NULL;
	}
	hex = bid_len ? sym_hex_of(bid, bid_len) : NULL;
	if (bid_len && !hex)
		return NULL;
	for (const char *d = binary_path; d && *d;) {
		size_t dl = strcspn(d, ":");
		for (int k = 0; k < 3; k++) {
			n = k == 0   ? (hex ? asprintf(&cand, "%.*s/%s/%s", (int)dl, d, hex, base)
			                    : -2)
			    : k == 1 ? asprintf(&cand, "%.*s/%s", (int)dl, d, path)
			             : asprintf(&cand, "%.*s/%s", (int)dl, d, base);
			if (offline_candidate(n, cand, bid, bid_len, fd, refused, elfp, &found) !=
			    0)
				goto done;
		}
		d += dl;
		d += *d == ':';
	}
	for (int k = 0; hex && k < 2; k++) {
		n = k == 0 ? (home ? asprintf(&cand, "%s/.debug/.build-id/%.2s/%s/elf", home, hex,
		                              hex + 2)
		                   : -2)
		           : asprintf(&cand, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
		                      hex + 2);
		if (offline_candidate(n, cand, bid, bid_len, fd, refused, elfp, &found) != 0)
			goto done;
	}
	if (path[0] == '/' && offline_try(path, bid, bid_len, fd, refused, elfp)) {
		found = strdup(path);
		if (!found) {
			if (elfp) {
				elf_end(*elfp);
				*elfp = NULL;
			}
			close(*fd);
			*fd = -1;
		}
	}
done:
	free(hex);
	return found;
}

char *symbolize_offline_find(const char *path, const uint8_t *build_id, size_t build_id_len,
                             const char *binary_path)
{
	int fd;
	bool refused = false;
	char *f = offline_open(path, build_id, build_id_len, binary_path, &fd, &refused, NULL);

	if (fd >= 0)
		close(fd);
	return f;
}

/* The module of (path, build id): the file found now, or the module
 * already open on that very file (device and inode; never one that only
 * claims the same build id); NULL when none can be found.  Returns 0 or
 * -ENOMEM. */
static int offline_module_find(struct symbolize *s, const char *path, const uint8_t *bid,
                               size_t bid_len, const char *binary_path, struct module **out);
static int offline_missing(struct symbolize *s, const char *path, const uint8_t *bid,
                           size_t bid_len, struct module **out);

/* The (path, build id) key of offline_tab, in a malloc'd buffer. */
static char *offline_key(const char *path, const uint8_t *bid, size_t bid_len, size_t *len,
                         uint64_t *h)
{
	size_t pl = strlen(path);
	char *k = malloc(pl + 1 + bid_len);
	if (!k)
		return NULL;
	memcpy(k, path, pl + 1);
	if (bid_len)
		memcpy(k + pl + 1, bid, bid_len);
	*len = pl + 1 + bid_len;
	uint64_t x = 1469598103934665603ull;
	for (size_t i = 0; i < *len; i++)
		x = (x ^ (uint8_t)k[i]) * 1099511628211ull;
	*h = x ? x : 1;
	return k;
}

/* The module (or the stand-in for a missing file) for (path, build id), found once and then kept in
 * offline_tab.  Returns 0 or -ENOMEM. */
static int offline_module(struct symbolize *s, const char *path, const uint8_t *bid, size_t bid_len,
                          const char *binary_path, struct module **out)
{
	size_t klen;
	uint64_t h;
	char *key = offline_key(path, bid, bid_len, &klen, &h);
	int rc;

	if (!key)
		return -ENOMEM;
	if ((s->offline_n + 1) * 2 > s->offline_mask + 1) {
		size_t ncap = s->offline_tab ? (s->offline_mask + 1) * 2 : 256;
		struct offline_ent *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			free(key);
			return -ENOMEM;
		}
		for (size_t i = 0; s->offline_tab && i <= s->offline_mask; i++) {
			if (!s->offline_tab[i].h)
				continue;
			size_t j = s->offline_tab[i].h & (ncap - 1);
			while (nt[j].h)
				j = (j + 1) & (ncap - 1);
			nt[j] = s->offline_tab[i];
		}
		free(s->offline_tab);
		s->offline_tab = nt;
		s->offline_mask = ncap - 1;
	}
	size_t j = h & s->offline_mask;
	for (; s->offline_tab[j].h; j = (j + 1) & s->offline_mask) {
		struct offline_ent *e = &s->offline_tab[j];
		if (e->h == h && e->key_len == klen && memcmp(e->key, key, klen) == 0) {
			free(key);
			*out = e->mod;
			return 0;
		}
	}
	rc = offline_module_find(s, path, bid, bid_len, binary_path, out);
	if (rc == 0 && !*out)
		rc = offline_missing(s, path, bid, bid_len, out);
	if (rc < 0) {
		free(key);
		return rc;
	}
	s->offline_tab[j] = (struct offline_ent){h, key, klen, *out};
	s->offline_n++;
	return 0;
}

static int offline_module_find(struct symbolize *s, const char *path, const uint8_t *bid,
                               size_t bid_len, const char *binary_path, struct module **out)
{
	struct stat st;
	int fd;

	*out = NULL;
	bool refused = false;
	Elf *elf = NULL;
	char *found = offline_open(path, bid, bid_len, binary_path, &fd, &refused, &elf);
	if (refused) {
		s->stats.files_refused++;
		if (!s->refused_first && !(s->refused_first = strdup(path)))
			return -ENOMEM;
	}
	if (!found)
		return 0;
	free(found);
	if (fstat(fd, &st) < 0) {
		elf_end(elf);
		close(fd);
		return 0;
	}
	unsigned long long dev = sym_kdev(st.st_dev), ino = (unsigned long long)st.st_ino;
	*out = sym_module_by_file(s, dev, ino);
	if (*out) {
		elf_end(elf);
		close(fd);
		return 0;
	}
	struct module *m;
	int rc = sym_module_new_elf(s, path, fd, elf, &m);
	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;
	m->dev = dev;
	m->ino = ino;
	m->offline_view = true;
	rc = sym_file_add(s, m, dev, ino);
	if (rc < 0) {
		sym_module_free(m);
		return rc;
	}
	sym_module_register(s, m);
	*out = m;
	return 0;
}

/* A module for a file that cannot be found: no symbols, so every address
 * in it is "[basename]", as perf script shows such a file, and its
 * frames keep the path and the recorded build id.  One per (path, build
 * id), on the module list so that symbolize_free() frees it. */
static int offline_missing(struct symbolize *s, const char *path, const uint8_t *bid,
                           size_t bid_len, struct module **out)
{
	for (struct module *m = s->modules; m; m = m->next) {
		if (m->fd < 0 && !m->is_elf && !m->dwfl && strcmp(m->path, path) == 0 &&
		    m->build_id_len == bid_len &&
		    (!bid_len || memcmp(m->build_id, bid, bid_len) == 0)) {
			*out = m;
			return 0;
		}
	}
	struct module *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = -1;
	m->dwfl_tried = true;
	m->path = strdup(path);
	if (asprintf(&m->unknown_name, "[%s]", sym_base_of(path)) < 0)
		m->unknown_name = NULL;
	m->build_id = bid_len ? malloc(bid_len) : NULL;
	if (!m->path || !m->unknown_name || (bid_len && !m->build_id)) {
		sym_module_free(m);
		return -ENOMEM;
	}
	if (bid_len)
		memcpy(m->build_id, bid, bid_len);
	m->build_id_len = bid_len;
	m->next = s->modules;
	s->modules = m;
	*out = m;
	return 0;
}

int symbolize_offline_process(struct symbolize *s, pid_t pid, const char *binary)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	sym_proc_names(p);
	if (sym_proc_set_names(p, sym_names_new(binary, strlen(binary), NULL, 0)) < 0) {
		sym_proc_free(p);
		return -ENOMEM;
	}
	for (char *c = p->names->data; *c; c++)
		if (*c == ' ')
			*c = '_';
	/* Never read again from /proc: the recording is all there is. */
	p->maps_read = INT64_MAX;
	p->offline = true;
	struct proc **pp = sym_proc_slot(s, pid);
	if (*pp) {
		p->next = (*pp)->next;
		sym_proc_free(*pp);
	}
	*pp = p;
	s->stats.processes++;
	return 0;
}

int symbolize_offline_map(struct symbolize *s, pid_t pid, uint64_t start, uint64_t end,
                          uint64_t pgoff, const char *path, const uint8_t *build_id,
                          size_t build_id_len, const char *binary_path)
{
	struct proc *p = sym_proc_find(s, pid);
	int rc;

	if (end <= start)
		return 0;
	if (!p) {
		rc = symbolize_offline_process(s, pid, sym_base_of(path));
		if (rc < 0)
			return rc;
		p = sym_proc_find(s, pid);
	}
	struct mapping mp = {.start = start, .end = end, .pgoff = pgoff};
	if (path[0] == '/') {
		rc = offline_module(s, path, build_id, build_id_len, binary_path, &mp.mod);
		if (rc < 0)
			return rc;
	} else if (strcmp(path, "[vdso]") == 0) {
		mp.mod = sym_vdso_module(s);
		if (!mp.mod)
			mp.special = "[[vdso]]";
	}
	if (mp.mod && !p->nmaps && mp.mod->build_id_len &&
	    strcmp(sym_base_of(path), p->binary) == 0) {
		rc = sym_proc_set_names(p, sym_names_new(p->binary, strlen(p->binary),
		                                         mp.mod->build_id, mp.mod->build_id_len));
		if (rc < 0)
			return rc;
	}

	/* Drop what the new mapping covers, then insert it in order. */
	size_t o = 0;
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].end <= start || p->maps[i].start >= end)
			p->maps[o++] = p->maps[i];
	p->nmaps = o;
	struct mapping *nm = realloc(p->maps, (p->nmaps + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->maps = nm;
	size_t at = p->nmaps;
	while (at > 0 && p->maps[at - 1].start > start)
		at--;
	memmove(p->maps + at + 1, p->maps + at, (p->nmaps - at) * sizeof(*nm));
	p->maps[at] = mp;
	p->nmaps++;
	return 0;
}

/* The file offset that pc stands for in m (symbolize_offline_place()
 * says how it is read), or SYMBOLIZE_PLACE_ADDRESS / SYMBOLIZE_PLACE_NOT
 * when it stands for none. */
static int offline_pc_offset(const struct module *m, uint64_t pc, uint64_t *off)
{
	uint64_t end = 0, low = UINT64_MAX;

	for (size_t i = 0; i < m->nsegs; i++) {
		const struct segment *g = &m->segs[i];
		if (g->offset + g->filesz > end)
			end = g->offset + g->filesz;
		if (g->vaddr < low)
			low = g->vaddr;
	}
	if (m->e_type == ET_EXEC) {
		for (size_t i = 0; i < m->nsegs; i++) {
			const struct segment *g = &m->segs[i];
			if (pc >= g->vaddr && pc - g->vaddr < g->filesz) {
				*off = pc - g->vaddr + g->offset;
				return SYMBOLIZE_PLACE_DONE;
			}
		}
		if (pc < low && pc < end) {
			*off = pc;
			return SYMBOLIZE_PLACE_DONE;
		}
		return SYMBOLIZE_PLACE_NOT;
	}
	if (pc < end) {
		*off = pc;
		return SYMBOLIZE_PLACE_DONE;
	}
	return SYMBOLIZE_PLACE_ADDRESS;
}

int symbolize_offline_place(struct symbolize *s, const char *path, uint64_t pc,
                            const char *binary_path, struct store_frame *f)
{
	struct module *m;
	uint64_t off, vaddr;
	struct symres *r;

	if (path[0] != '/')
		return SYMBOLIZE_PLACE_NO_FILE;
	int rc = offline_module(s, path, NULL, 0, binary_path, &m);
	if (rc < 0)
		return rc;
	if (!m->is_elf || !m->build_id_len || !m->nsegs ||
	    (m->e_type != ET_EXEC && m->e_type != ET_DYN))
		return SYMBOLIZE_PLACE_NO_FILE;
	sym_module_touch(m);
	rc = offline_pc_offset(m, pc, &off);
	if (rc != SYMBOLIZE_PLACE_DONE)
		return rc;
	/* vaddr 0 is the ELF header of a position-independent file: no code */
	if (!sym_module_vaddr(m, off, &vaddr) || !vaddr)
		return SYMBOLIZE_PLACE_NOT;
	rc = sym_module_lookup(s, m, vaddr, &r);
	if (rc < 0)
		return rc;
	if (r->kind != STORE_FRAME_UNKNOWN)
		return SYMBOLIZE_PLACE_NOT;
	memset(f, 0, sizeof(*f));
	f->name = m->unknown_name;
	f->name_len = strlen(m->unknown_name);
	f->module = m->path;
	f->module_len = strlen(m->path);
	f->build_id = m->build_id;
	f->build_id_len = m->build_id_len;
	f->kind = STORE_FRAME_UNKNOWN;
	/* the function's start, at the same distance before the pc in the
	 * file as in memory (one segment) */
	f->offset = r->start ? off - (vaddr - r->start) : off + (r->addr - vaddr);
	return SYMBOLIZE_PLACE_DONE;
}
