/*
 * modules.c — the symbolizer's ELF files ("modules"): opened once per file (device
 * and inode of the file open, never its build id, which its owner writes), read
 * through libdwfl; their function symbols in a sorted array, PLT entries
 * named NAME@plt, resolved addresses cached, inline frames from DWARF; and
 * freed by sym_modules_sweep(), which symbolize_sweep() runs (mark what
 * snapshots, layouts and caches hold, keep what was used within the grace
 * period, free the rest).  The bottom of the wing above its leaves: it calls
 * only names.c, trust.c and fdes.c, and a new module's ELF file is probed
 * through s->module_probe.  See symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

/* ---- modules ------------------------------------------------------------ */

static void symres_free_inl(struct symres *r)
{
	for (size_t i = 0; i < r->ninl; i++) {
		free(r->inl[i].name);
		free(r->inl[i].file);
	}
	free(r->inl);
	r->inl = NULL;
	r->ninl = 0;
}

void sym_module_cache_clear(struct module *m)
{
	for (size_t i = 0; i < m->cache_cap; i++) {
		free(m->cache[i].file);
		symres_free_inl(&m->cache[i]);
	}
	free(m->cache);
	m->cache = NULL;
	m->cache_cap = m->cache_used = 0;
}

void sym_module_free(struct module *m)
{
	if (!m)
		return;
	sym_module_cache_clear(m);
	for (size_t i = 0; i < m->ntidy; i++)
		free(m->tidy[i]);
	free(m->tidy);
	free(m->syms);
	free(m->fdes);
	free(m->plt_names);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	if (m->fd >= 0)
		close(m->fd);
	free(m->segs);
	free(m->layout);
	free(m->python);
	sym_names_put(m->names);
	sym_root_put(m->root);
	free(m->build_id);
	free(m->unknown_name);
	free(m->path);
	free(m);
}

const char *sym_base_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Reads the build id and PT_LOAD headers of the ELF file open on fd,
 * through `given` (a descriptor of it, which this ends) or one of its
 * own.  A file that is not ELF is kept as a module without symbols. */
static int module_read_elf(const struct symbolize *s, struct module *m, Elf *given)
{
	Elf *elf = given ? given : elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	size_t phnum;
	int rc = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out; /* not ELF: no symbols, not an error */
	m->is_elf = true;
	GElf_Ehdr eh;
	if (gelf_getehdr(elf, &eh)) {
		m->entry = eh.e_entry;
		m->e_type = eh.e_type;
	}

	const void *bid;
	ssize_t blen = dwelf_elf_gnu_build_id(elf, &bid);
	if (blen > 0) {
		m->build_id = malloc((size_t)blen);
		if (!m->build_id) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(m->build_id, bid, (size_t)blen);
		m->build_id_len = (size_t)blen;
	}

	m->segs = calloc(phnum ? phnum : 1, sizeof(*m->segs));
	if (!m->segs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		m->segs[m->nsegs++] = (struct segment){
		        .offset = ph.p_offset,
		        .filesz = ph.p_filesz,
		        .vaddr = ph.p_vaddr,
		};
	}
	if (s->module_probe)
		rc = s->module_probe(m, elf);
out:
	if (elf)
		elf_end(elf);
	return rc;
}

void sym_module_register(struct symbolize *s, struct module *m)
{
	m->used = true; /* kept at least until the sweep after the next */
	m->next = s->modules;
	s->modules = m;
	s->stats.modules++;
	if (m->python && !m->python->layout) {
		s->py_stats.unknown++;
		s->py_stats.unknown_major = m->python->major;
		s->py_stats.unknown_minor = m->python->minor;
	}
	if (s->hooks.module && m->is_elf)
		s->hooks.module(s->hooks.ctx, m, m->fd, m->path, m->build_id, m->build_id_len);
}

int sym_file_add(struct symbolize *s, struct module *m, unsigned long long dev,
                 unsigned long long ino)
{
	size_t b = (size_t)((dev * 31u + ino) % FILE_BUCKETS);
	struct file_ent *fe = calloc(1, sizeof(*fe));

	if (!fe)
		return -ENOMEM;
	fe->dev = dev;
	fe->ino = ino;
	fe->mod = m;
	fe->next = s->files[b];
	s->files[b] = fe;
	return 0;
}

int sym_module_new_elf(const struct symbolize *s, const char *path, int fd, Elf *elf,
                       struct module **out)
{
	struct module *m = calloc(1, sizeof(*m));
	int rc = -ENOMEM;

	if (!m) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOMEM;
	}
	m->fd = fd;
	m->path = strdup(path);
	if (!m->path)
		goto fail;
	if (asprintf(&m->unknown_name, "[%s]", sym_base_of(path)) < 0) {
		m->unknown_name = NULL;
		goto fail;
	}
	rc = module_read_elf(s, m, elf);
	elf = NULL; /* ended */
	if (rc < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	if (elf)
		elf_end(elf);
	sym_module_free(m);
	return rc;
}

int sym_module_new(const struct symbolize *s, const char *path, int fd, struct module **out)
{
	return sym_module_new_elf(s, path, fd, NULL, out);
}

/* Finds or opens the module for a file mapping of `pid`. */
struct module *sym_module_by_file(const struct symbolize *s, unsigned long long dev,
                                  unsigned long long ino)
{
	for (const struct file_ent *fe = s->files[(dev * 31u + ino) % FILE_BUCKETS]; fe;
	     fe = fe->next)
		if (fe->dev == dev && fe->ino == ino)
			return fe->mod;
	return NULL;
}

int sym_module_get(struct symbolize *s, struct proc *p, uint64_t start, uint64_t end,
                   const char *path, unsigned long long dev, unsigned long long ino,
                   struct module **out)
{
	struct stat st;
	char mf[96];
	int fd, rc;

	*out = sym_module_by_file(s, dev, ino);
	if (*out) {
		/* A module keeps its file open, so (device, inode) cannot
		 * have been given to another file meanwhile. */
		sym_module_touch(*out);
		return 0;
	}

	/* map_files reaches the very file mapped, even when deleted or in
	 * another mount namespace.  The fallback is the path as the process
	 * sees it, resolved inside its root, never our own view of the path,
	 * which a file replaced after the exec (or another mount namespace)
	 * would redirect; and only when it is the file the maps line names. */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)p->pid, start,
	         end);
	fd = sym_open_checked(AT_FDCWD, mf, SYM_OPEN_FOLLOW, SYM_FILE_MAX, &st);
	bool by_path = false;
	if (fd < 0 && fd != -EINVAL && fd != -EFBIG && p->root) {
		fd = sym_open_checked(p->root->fd, path, SYM_OPEN_IN_ROOT, SYM_FILE_MAX, &st);
		by_path = true;
	}
	if (fd < 0) {
		if (fd == -EINVAL || fd == -EFBIG)
			s->stats.files_refused++;
		return fd;
	}
	unsigned long long fdev = sym_kdev(st.st_dev), fino = (unsigned long long)st.st_ino;
	if (fdev != dev || fino != ino) {
		/* Not the file the line names.  Through the path: another
		 * file now has its name; refused.  Through map_files: the
		 * file the kernel maps there now (the mapping changed since
		 * the line was read, or a stacked file system shows its own
		 * inode in the line), keyed by what it is, never by what
		 * the line said, so that no other process's file of that
		 * (device, inode) is named from it. */
		if (by_path) {
			close(fd);
			s->stats.files_refused++;
			return -ESTALE;
		}
		*out = sym_module_by_file(s, fdev, fino);
		if (*out) {
			close(fd);
			sym_module_touch(*out);
			return 0;
		}
	}

	struct module *m;
	rc = sym_module_new(s, path, fd, &m);
	if (rc < 0)
		return rc;
	m->dev = fdev;
	m->ino = fino;
	m->root = sym_root_get(p->root);
	rc = sym_file_add(s, m, fdev, fino);
	if (rc < 0) {
		sym_module_free(m);
		return rc;
	}
	sym_module_register(s, m);
	*out = m;
	return 0;
}

/* The vDSO is the same image in every process: symbolize it from our own
 * copy, written to a memfd so libdwfl can read it as a file. */
struct module *sym_vdso_module(struct symbolize *s)
{
	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;

	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t size = 0;
	char line[512];
	if (!base || !f) {
		if (f)
			fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, e;
		if (sscanf(line, "%lx-%lx", &a, &e) == 2 && a == base) {
			size = e - a;
			break;
		}
	}
	fclose(f);
	if (!size)
		return NULL;

	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)base, size) != (ssize_t)size) {
		close(fd);
		return NULL;
	}
	struct module *m;
	if (sym_module_new(s, "[vdso]", fd, &m) < 0)
		return NULL;
	m->next = s->modules;
	s->modules = m;
	s->vdso = m;
	if (s->hooks.module && m->is_elf)
		s->hooks.module(s->hooks.ctx, m, m->fd, m->path, m->build_id, m->build_id_len);
	return m;
}

/* Whether the debug file open on fd (st: its fstat) belongs to mod: the
 * same GNU build id when mod has one, else the CRC-32 that .gnu_debuglink
 * names (read whole: only up to SYM_CRC_FILE_MAX bytes). */
static bool debug_file_matches(Dwfl_Module *mod, int fd, const struct stat *st, GElf_Word crc)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int blen = dwfl_module_build_id(mod, &bits, &vaddr);
	bool ok = false;

	if (blen > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *dbits;
		ssize_t dlen = elf ? dwelf_elf_gnu_build_id(elf, &dbits) : -1;
		ok = dlen == blen && memcmp(dbits, bits, (size_t)blen) == 0;
		if (elf)
			elf_end(elf);
		return ok;
	}
	if (st->st_size <= 0 || (uint64_t)st->st_size > SYM_CRC_FILE_MAX)
		return false;
	void *map = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return false;
	ok = crc32(0, map, (uInt)st->st_size) == crc;
	munmap(map, (size_t)st->st_size);
	return ok;
}

/* Where a .gnu_debuglink's file is looked for: beside the file and in
 * its .debug/ (inside the root the file was mapped through, or the
 * importer's own view for a profile's file), then under the system's
 * /usr/lib/debug (the collector's own, which root owns). */
enum { LINK_BESIDE, LINK_DOT_DEBUG, LINK_SYSTEM, LINK_FORMS };

static int debuglink_open(const struct module *m, const char *file_name, int dlen,
                          const char *debuglink, int form, char **path, struct stat *st)
{
	static const char *const forms[LINK_FORMS] = {"%.*s/%s", "%.*s/.debug/%s",
	                                              "/usr/lib/debug%.*s/%s"};
	if (asprintf(path, forms[form], dlen, file_name, debuglink) < 0) {
		*path = NULL;
		return -ENOMEM;
	}
	if (strcmp(*path, file_name) == 0)
		return -ENOENT; /* not the file itself */
	if (form != LINK_SYSTEM && m && m->root)
		return sym_open_checked(m->root->fd, *path, SYM_OPEN_IN_ROOT, SYM_FILE_MAX, st);
	if (form != LINK_SYSTEM && m && !m->offline_view)
		return -ENOENT; /* a live process's file whose root is unknown */
	return sym_open_checked(AT_FDCWD, *path, 0, SYM_FILE_MAX, st);
}

/* libdwfl's standard debug-file search, made safe for files that other
 * users own: the build id under /usr/lib/debug/.build-id, then the
 * .gnu_debuglink's file (a plain name: one with '/' or that is "." or
 * ".." is refused, and so is a .gnu_debugaltlink's path) in the places debuglink_open() says, each opened only
 * when it is a regular file of a bounded size, never blocking; and
 * debuginfod only when DEBUGINFOD_URLS is set (its client costs some 25
 * libraries and a start per module otherwise).  *userdata is the module
 * (symbolize's), or NULL (import-symbols.c's unwinding sessions). */
int symbolize_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                             const char *file_name, const char *debuglink, GElf_Word crc,
                             char **debuginfo_file_name)
{
	static int use_debuginfod = -1;
	struct module *m = userdata ? *userdata : NULL;

	if (use_debuginfod < 0) {
		const char *urls = getenv("DEBUGINFOD_URLS");
		use_debuginfod = urls && *urls;
	}
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink,
	                                      crc, debuginfo_file_name);
	if (fd >= 0)
		return fd;
	if (debuglink && *debuglink && !sym_plain_name(debuglink)) {
		/* Not counted with CRC 0: libdw asks for a .gnu_debugaltlink
		 * (dwz's shared file, a path) the same way, and that is found
		 * by its build id above or not at all. */
		if (m && crc)
			m->debuglink_refused = true;
	} else if (debuglink && *debuglink && file_name && file_name[0] == '/') {
		const char *slash = strrchr(file_name, '/');
		int dlen = (int)(slash - file_name);
		for (int form = 0; form < LINK_FORMS; form++) {
			char *path;
			struct stat st;
			fd = debuglink_open(m, file_name, dlen, debuglink, form, &path, &st);
			if (fd == -ENOMEM)
				return -1;
			if (fd == -EINVAL || fd == -EFBIG) {
				if (m)
					m->debuglink_refused = true;
			} else if (fd >= 0 && debug_file_matches(mod, fd, &st, crc)) {
				*debuginfo_file_name = path;
				return fd;
			}
			if (fd >= 0)
				close(fd);
			free(path);
		}
	}
	if (use_debuginfod)
		/* Build id and debuginfod only: no name, so no path is tried. */
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, NULL, NULL, 0,
		                                    debuginfo_file_name);
	errno = ENOENT;
	return -1;
}

/* Opens the libdwfl session of a module at its first lookup. */
static void module_open_dwfl(struct module *m)
{
	static char *debuginfo_path = NULL; /* the default search path */
	static const Dwfl_Callbacks callbacks = {
	        .find_elf = dwfl_build_id_find_elf,
	        .find_debuginfo = symbolize_find_debuginfo,
	        .debuginfo_path = &debuginfo_path,
	};

	m->dwfl_tried = true;
	if (!m->is_elf || m->fd < 0)
		return;
	m->dwfl = dwfl_begin(&callbacks);
	if (!m->dwfl)
		return;
	dwfl_report_begin(m->dwfl);
	/* Placed at its own p_vaddr (bias 0): lookups use ELF addresses. */
	m->dmod = dwfl_report_elf(m->dwfl, m->path, m->path, m->fd, 0, true);
	if (m->dmod) {
		void **ud = NULL;
		m->fd = -1; /* consumed by libdwfl */
		/* The debug-file search learns where to look from it. */
		if (dwfl_module_info(m->dmod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) && ud)
			*ud = m;
	}
	dwfl_report_end(m->dwfl, NULL, NULL);
}

/* Whether y sorts strictly before x: by address, then the preferred
 * binding first, then, as perf's choose_best_symbol, fewer leading
 * underscores, then the longer name. */
static inline bool msym_before(const struct msym *y, const struct msym *x)
{
	if (x->addr != y->addr)
		return y->addr < x->addr;
	if (x->rank != y->rank)
		return y->rank > x->rank;
	size_t ux = strspn(x->name, "_"), uy = strspn(y->name, "_");
	if (ux != uy)
		return uy < ux;
	return strlen(y->name) > strlen(x->name);
}

/* Sorts symbols by msym_before(), stably: a merge sort with the
 * comparison inlined, runs of 16 sorted by insertion first.  0 or
 * -ENOMEM. */
static int msym_merge_sort(struct msym *a, size_t n)
{
	enum { RUN = 16 };
	struct msym *tmp, *src = a, *dst;

	for (size_t lo = 0; lo < n; lo += RUN) {
		size_t hi = lo + RUN < n ? lo + RUN : n;
		for (size_t i = lo + 1; i < hi; i++) {
			struct msym v = a[i];
			size_t j = i;
			for (; j > lo && msym_before(&v, &a[j - 1]); j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
	}
	if (n <= RUN)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (size_t width = RUN; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n;
			size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t i = lo, j = mid, k = lo;
			/* the left run's element first on ties: stable */
			if (mid == hi || !msym_before(&src[mid], &src[mid - 1])) {
				memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*src));
				continue;
			}
			while (i < mid && j < hi)
				dst[k++] = msym_before(&src[j], &src[i]) ? src[j++] : src[i++];
			memcpy(dst + k, src + i, (mid - i) * sizeof(*src));
			k += mid - i;
			memcpy(dst + k, src + j, (hi - j) * sizeof(*src));
		}
		struct msym *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	return 0;
}

/* Sorts a module's symbols by msym_before(), stably: symbols alike in
 * every key keep their symbol table order, so that the name chosen for an
 * address does not change.  A stable radix sort on the address bits that
 * differ between the symbols (11 at a time), then each run of one address
 * sorted on the other keys (by insertion, or msym_merge_sort() for a
 * long run): the same order as a stable
 * comparison sort, without a comparison per pair on the way.  0 or
 * -ENOMEM. */
static int msym_sort(struct msym *a, size_t n)
{
	enum { BITS = 11, BUCKETS = 1 << BITS };
	uint64_t differ = 0;
	struct msym *tmp, *src = a, *dst;

	for (size_t i = 1; i < n; i++)
		differ |= a[i].addr ^ a[0].addr;
	if (differ) {
		size_t *count = malloc(BUCKETS * sizeof(*count));
		tmp = malloc(n * sizeof(*tmp));
		if (!count || !tmp) {
			free(count);
			free(tmp);
			return -ENOMEM;
		}
		unsigned lo = (unsigned)__builtin_ctzll(differ);
		unsigned hi = 64 - (unsigned)__builtin_clzll(differ);
		dst = tmp;
		for (unsigned shift = lo; shift < hi; shift += BITS) {
			memset(count, 0, BUCKETS * sizeof(*count));
			for (size_t i = 0; i < n; i++)
				count[(src[i].addr >> shift) & (BUCKETS - 1)]++;
			for (size_t b = 0, sum = 0; b < BUCKETS; b++) {
				size_t c = count[b];
				count[b] = sum;
				sum += c;
			}
			for (size_t i = 0; i < n; i++)
				dst[count[(src[i].addr >> shift) & (BUCKETS - 1)]++] = src[i];
			struct msym *t = src;
			src = dst;
			dst = t;
		}
		if (src != a)
			memcpy(a, src, n * sizeof(*a));
		free(tmp);
		free(count);
	}
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		for (hi = lo + 1; hi < n && a[hi].addr == a[lo].addr; hi++)
			;
		if (hi - lo > 16) {
			if (msym_merge_sort(a + lo, hi - lo) < 0)
				return -ENOMEM;
			continue;
		}
		for (size_t i = lo + 1; i < hi; i++) {
			struct msym v = a[i];
			size_t j = i;
			for (; j > lo && msym_before(&v, &a[j - 1]); j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
	}
	return 0;
}

/* Copies the function symbols of the module's symbol table (or of the
 * debug file libdwfl found for it) into a sorted array, so that each
 * lookup is a binary search rather than libdwfl's scan of every symbol. */
static Elf_Scn *section_named(Elf *elf, size_t shstrndx, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, sh) && (name = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/* Names the PLT entries "NAME@plt", as perf does, from .rela.plt: on
 * x86-64 entry i of .plt.sec (with IBT), else entry i + 1 of .plt, calls
 * the function of relocation i.  Appends to m->syms, which has room for
 * `room` more.  The PLT has no symbols of its own, so without these its
 * addresses took the name of whatever sizeless symbol came before.
 *
 * What perf 6.1 prints, found by sampling code made to spin in each part
 * (test-names.sh): entry i + 1 of .plt is named after relocation i even
 * where the entries are not in relocation order (libc's), and "@plt"
 * where the relocation has no symbol; so are they here.  Where perf 6.1
 * answers by accident, this does not follow it: it puts no symbols on
 * .plt.sec (its addresses are "[unknown]"), and it extends a sizeless
 * _init over the whole PLT, so that its red-black tree lookup names the
 * header and some entries (often the first) "_init" and .plt.got entries
 * "_init" or "[unknown]" depending on the tree's shape.  Here the header
 * is named after the nearest sizeless symbol below it (_init), as perf
 * named it in every binary tried, and .plt.got is unnamed ("[unknown]",
 * an empty name here), as perf named it in gcc 12's executables. */
static int module_plt_syms(struct module *m, size_t room)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->dmod, &bias);
	GElf_Shdr rsh, psh, ssh, dsh;
	size_t shstrndx;
	Elf_Scn *rscn, *pscn, *dscn;
	Elf_Data *rd, *dd;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0 ||
	    !(rscn = section_named(elf, shstrndx, ".rela.plt", &rsh)) || rsh.sh_type != SHT_RELA ||
	    !rsh.sh_entsize)
		return 0;
	uint64_t plt;
	if (section_named(elf, shstrndx, ".plt.sec", &ssh))
		plt = ssh.sh_addr;
	else if ((pscn = section_named(elf, shstrndx, ".plt", &psh)))
		plt = psh.sh_addr + 16;
	else
		return 0;
	if (!(dscn = elf_getscn(elf, rsh.sh_link)) || !gelf_getshdr(dscn, &dsh) ||
	    !(rd = elf_getdata(rscn, NULL)) || !(dd = elf_getdata(dscn, NULL)))
		return 0;
	GElf_Shdr gsh;
	if (room > 0 && section_named(elf, shstrndx, ".plt.got", &gsh) && gsh.sh_size) {
		/* perf 6.1's "[unknown]" for .plt.got: an empty name */
		m->syms[m->nsyms++] = (struct msym){
		        .addr = gsh.sh_addr + bias, .size = gsh.sh_size, .name = "", .rank = 0};
		room--;
	}
	size_t n = rsh.sh_size / rsh.sh_entsize, len = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t at = 0, k = 0;
		for (size_t i = 0; i < n && k < room; i++) {
			GElf_Rela rel;
			GElf_Sym sym;
			const char *name;
			if (!gelf_getrela(rd, (int)i, &rel))
				continue;
			/* A relocation without a symbol (R_X86_64_IRELATIVE,
			 * libc's calls to its own memcpy, strlen...) names its
			 * entry "@plt", as perf 6.1 does. */
			name = "";
			if (GELF_R_SYM(rel.r_info) &&
			    (!gelf_getsym(dd, (int)GELF_R_SYM(rel.r_info), &sym) ||
			     !(name = elf_strptr(elf, dsh.sh_link, sym.st_name))))
				continue;
			if (pass == 0) {
				len += strlen(name) + sizeof("@plt");
				continue;
			}
			char *dst = m->plt_names + at;
			at += (size_t)sprintf(dst, "%s@plt", name) + 1;
			m->syms[m->nsyms++] = (struct msym){
			        .addr = plt + 16 * i + bias, .size = 16, .name = dst, .rank = 0};
			k++;
		}
		if (pass == 0 && (!len || !(m->plt_names = malloc(len))))
			return len ? -ENOMEM : 0;
	}
	return 0;
}

static int module_load_syms(struct module *m)
{
	int n = dwfl_module_getsymtab(m->dmod);
	size_t plt_room = 4096;
	if (n < 1)
		n = 1;
	m->syms = malloc(((size_t)n + plt_room) * sizeof(*m->syms));
	if (!m->syms)
		return -ENOMEM;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name =
		        dwfl_module_getsym_info(m->dmod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || !addr)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		int bind = GELF_ST_BIND(sym.st_info);
		m->syms[m->nsyms++] = (struct msym){
		        .addr = addr,
		        .size = sym.st_size,
		        .name = name,
		        .rank = bind == STB_GLOBAL ? 2
		                : bind == STB_WEAK ? 0
		                                   : 1,
		};
	}
	int rc = module_plt_syms(m, plt_room);
	if (rc < 0)
		return rc;
	return msym_sort(m->syms, m->nsyms);
}

/* The symbol holding vaddr: the nearest one at or below it whose size
 * covers it (a few below are looked at, for enclosing symbols), else the
 * nearest sizeless one.  NULL when none. */
static struct msym *module_find_sym(const struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* Start at the first entry of the run at that address: entries of
	 * one address are sorted by preferred binding. */
	size_t i = lo - 1;
	while (i > 0 && m->syms[i - 1].addr == m->syms[i].addr)
		i--;
	struct msym *sizeless = NULL;
	for (size_t k = i, seen = 0; k < lo && seen < 16; k++, seen++) {
		struct msym *y = &m->syms[k];
		if (y->size && vaddr < y->addr + y->size)
			return y;
		if (!y->size && !sizeless)
			sizeless = y;
	}
	for (size_t k = i, seen = 0; k-- > 0 && seen < 16; seen++) {
		struct msym *y = &m->syms[k];
		if (y->size && vaddr < y->addr + y->size)
			return y;
		if (!y->size && !sizeless)
			sizeless = y;
	}
	return sizeless;
}

static int cache_grow(struct module *m)
{
	size_t ncap = m->cache_cap ? m->cache_cap * 2 : 256;
	struct symres *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cache_cap; i++) {
		struct symres *r = &m->cache[i];
		if (!r->addr)
			continue;
		size_t j = (size_t)(r->addr * 0x9e3779b97f4a7c15ull) & (ncap - 1);
		while (n[j].addr)
			j = (j + 1) & (ncap - 1);
		n[j] = *r;
	}
	free(m->cache);
	m->cache = n;
	m->cache_cap = ncap;
	return 0;
}

static int module_inlines(struct symbolize *s, struct module *m, struct symres *r);

_Static_assert(sizeof(struct msym) == 32, "msym: its tidy index fits the padding");

/* sym's name as a frame, made at its first use and kept by m; NULL on
 * ENOMEM. */
static const char *module_tidy_name(const struct symbolize *s, struct module *m, struct msym *sym)
{
	if (sym->tidy)
		return m->tidy[sym->tidy - 1];
	if (m->ntidy == m->tidy_cap) {
		size_t ncap = m->tidy_cap ? m->tidy_cap * 2 : 64;
		char **n = ncap < UINT32_MAX ? realloc(m->tidy, ncap * sizeof(*n)) : NULL;
		if (!n)
			return NULL;
		m->tidy = n;
		m->tidy_cap = ncap;
	}
	char *name = symbolize_symbol(sym->name, s->perf_names);
	if (!name)
		return NULL;
	m->tidy[m->ntidy++] = name;
	sym->tidy = (uint32_t)m->ntidy;
	return name;
}

/* Resolves a non-zero ELF virtual address of a module, through its
 * cache (0 marks free slots). */
int sym_module_lookup(struct symbolize *s, struct module *m, uint64_t vaddr, struct symres **out)
{
	int rc;

	sym_module_touch(m);
	if (m->cache_used * 2 >= m->cache_cap) {
		rc = cache_grow(m);
		if (rc < 0)
			return rc;
	}
	size_t j = (size_t)(vaddr * 0x9e3779b97f4a7c15ull) & (m->cache_cap - 1);
	while (m->cache[j].addr) {
		if (m->cache[j].addr == vaddr) {
			*out = &m->cache[j];
			return 0;
		}
		j = (j + 1) & (m->cache_cap - 1);
	}
	s->stats.lookups++;

	struct symres r = {.addr = vaddr, .kind = STORE_FRAME_USER};
	struct msym *sym = NULL;
	if (!m->dwfl_tried) {
		module_open_dwfl(m);
		if (m->dmod) {
			rc = module_load_syms(m);
			if (rc < 0)
				return rc;
		}
		s->stats.debuglinks_refused += m->debuglink_refused;
	}
	if (m->dmod) {
		sym = module_find_sym(m, vaddr);
		/* file:line needs the DWARF (often compressed): only on
		 * request, it costs more than the symbol itself. */
		Dwfl_Line *l = s->lines ? dwfl_module_getsrc(m->dmod, vaddr) : NULL;
		int lineno = 0;
		const char *file = l ? dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL) : NULL;
		if (file) {
			r.file = strdup(file);
			if (!r.file)
				return -ENOMEM;
			r.line = lineno > 0 ? (uint32_t)lineno : 0;
		}
	}
	if (sym && sym->name && *sym->name) {
		/* One copy of a function's name, for all its addresses. */
		r.name = module_tidy_name(s, m, sym);
		if (!r.name) {
			free(r.file);
			return -ENOMEM;
		}
	} else {
		r.name = m->unknown_name;
		r.kind = STORE_FRAME_UNKNOWN;
		r.start = sym_module_function_start(m, vaddr);
	}
	if (s->inlines && m->dmod && r.kind == STORE_FRAME_USER) {
		rc = module_inlines(s, m, &r);
		if (rc < 0) {
			free(r.file);
			symres_free_inl(&r);
			return rc;
		}
	}
	m->cache[j] = r;
	m->cache_used++;
	*out = &m->cache[j];
	return 0;
}

/* The source file of a DW_AT_call_file index of cu, or NULL. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &idx) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;
	if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line) != 0)
		return 0;
	return line <= UINT32_MAX ? (uint32_t)line : 0;
}

/* "NAME_[i]" for an inlined subroutine: its linkage name demangled when
 * it has one (C++'s qualified names), else its DW_AT_name, through
 * DW_AT_abstract_origin.  Returns a malloc'd string or NULL (ENOMEM, or
 * a DIE without a name, which is then "[unknown]_[i]"). */
static char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *raw = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		raw = dwarf_formstring(&attr);
	if (!raw)
		raw = dwarf_diename(die);
	char *name = symbolize_name(raw ? raw : sym_unknown_name);
	if (!name)
		return NULL;
	size_t n = strlen(name);
	char *out = realloc(name, n + sizeof("_[i]"));
	if (!out) {
		free(name);
		return NULL;
	}
	memcpy(out + n, "_[i]", sizeof("_[i]"));
	return out;
}

/* Fills r->inl with the functions inlined at r->addr, outermost first,
 * from the module's DWARF (none without it).  With s->lines, each frame
 * gets the line it is at: the concrete function and every inlined one
 * but the innermost are at the call site of the next one in, and the
 * innermost keeps the line table's answer, already in r->file/line.
 * Returns 0 or -ENOMEM. */
static int module_inlines(struct symbolize *s, struct module *m, struct symres *r)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m->dmod, r->addr, &bias);
	Dwarf_Die *scopes = NULL;
	int nscopes, rc = 0;

	if (!cu || (nscopes = dwarf_getscopes(cu, r->addr - bias, &scopes)) <= 0)
		return 0;
	/* scopes[0] is the innermost; the inlined ones end at the concrete
	 * function (DW_TAG_subprogram). */
	int k = 0;
	while (k < nscopes && k < UINT16_MAX && dwarf_tag(&scopes[k]) != DW_TAG_subprogram)
		k++;
	int ninl = 0;
	for (int i = 0; i < k; i++)
		ninl += dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine;
	if (ninl == 0)
		goto out;
	r->inl = calloc((size_t)ninl, sizeof(*r->inl));
	if (!r->inl) {
		rc = -ENOMEM;
		goto out;
	}
	char *inner_file = r->file;
	uint32_t inner_line = r->line;
	struct inl *outer = NULL; /* the frame whose line a call site gives */
	r->file = NULL;
	r->line = 0;
	for (int i = k; i-- > 0;) {
		Dwarf_Die *die = &scopes[i];
		if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
			continue;
		struct inl *in = &r->inl[r->ninl++];
		in->name = inline_name(die);
		if (!in->name) {
			rc = -ENOMEM;
			break;
		}
		if (!s->lines)
			continue;
		const char *file = call_file(cu, die);
		char **dst = outer ? &outer->file : &r->file;
		*dst = file ? strdup(file) : NULL;
		if (file && !*dst) {
			rc = -ENOMEM;
			break;
		}
		if (outer)
			outer->line = call_line(die);
		else
			r->line = call_line(die);
		outer = in;
	}
	if (rc == 0 && outer) {
		outer->file = inner_file;
		outer->line = inner_line;
	} else {
		free(inner_file);
	}
out:
	free(scopes);
	return rc;
}

/* File offset -> ELF virtual address through the PT_LOAD headers. */
bool sym_module_vaddr(const struct module *m, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		const struct segment *g = &m->segs[i];
		if (off >= g->offset && off < g->offset + g->filesz) {
			*vaddr = off - g->offset + g->vaddr;
			return true;
		}
	}
	return false;
}

/* ---- freeing the modules nothing holds ------------------------------------ */

enum { SWEEP_KEEP = 0, SWEEP_DOOMED, SWEEP_TOLD };

static void mark_proc(const struct proc *p)
{
	for (; p; p = p->before) {
		for (size_t i = 0; i < p->nmaps; i++)
			if (p->maps[i].mod)
				sym_module_touch(p->maps[i].mod);
		if (p->exe_mod)
			sym_module_touch(p->exe_mod);
	}
}

static bool kept(const struct module *m, int64_t now, int64_t grace_ns)
{
	return m->used || now - m->last_used < grace_ns;
}

size_t sym_modules_sweep(struct symbolize *s, int64_t grace_ns)
{
	int64_t now = mono_ns();
	size_t freed = 0;

	/* Mark: what every snapshot maps (exited ones too, until reaped:
	 * their samples may still be drained), the programs they ran before,
	 * the vDSO, the interpreters' files whose code objects are cached by
	 * module, and what offline processes were built from. */
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (const struct proc *p = s->procs[b]; p; p = p->next)
			mark_proc(p);
	if (s->vdso)
		sym_module_touch(s->vdso);
	for (size_t i = 0; i < s->py_cache_cap; i++)
		if (s->py_cache[i].used && s->py_cache[i].pid == 0 && s->py_cache[i].mod)
			sym_module_touch(s->py_cache[i].mod);
	for (size_t i = 0; s->offline_tab && i <= s->offline_mask; i++)
		if (s->offline_tab[i].h && s->offline_tab[i].mod)
			sym_module_touch(s->offline_tab[i].mod);
	/* A kept program's layout keeps the objects it names (its BPF
	 * template names their tables), and so on. */
	for (bool more = true; more;) {
		more = false;
		for (const struct module *m = s->modules; m; m = m->next) {
			if (!kept(m, now, grace_ns))
				continue;
			for (size_t i = 0; i < m->nlayout; i++) {
				const struct module *lm = m->layout[i].module;
				if (lm && !kept(lm, now, grace_ns)) {
					sym_module_touch(lm);
					more = true;
				}
			}
		}
	}
	for (struct module *m = s->modules; m; m = m->next) {
		m->sweep = kept(m, now, grace_ns) ? SWEEP_KEEP : SWEEP_DOOMED;
		if (m->used)
			m->last_used = now;
		m->used = false;
	}

	/* Sweep: the hook hears of each file of a doomed module (so that the
	 * record side drops the program's template, keyed by file), then of
	 * the module itself when it had none. */
	for (size_t b = 0; b < FILE_BUCKETS; b++) {
		for (struct file_ent **pp = &s->files[b]; *pp;) {
			struct file_ent *fe = *pp;
			if (fe->mod->sweep == SWEEP_KEEP) {
				pp = &fe->next;
				continue;
			}
			if (s->hooks.forget)
				s->hooks.forget(s->hooks.ctx, fe->mod, fe->dev, fe->ino);
			fe->mod->sweep = SWEEP_TOLD;
			*pp = fe->next;
			free(fe);
		}
	}
	s->stats.addrs_cached = 0;
	for (struct module **pp = &s->modules; *pp;) {
		struct module *m = *pp;
		if (m->sweep == SWEEP_KEEP) {
			if (m->cache_used > s->stats.addrs_cached_max)
				s->stats.addrs_cached_max = m->cache_used;
			if (m->cache_used > SYMBOLIZE_CACHE_MAX) {
				sym_module_cache_clear(m);
				s->stats.caches_emptied++;
			}
			s->stats.addrs_cached += m->cache_used;
			pp = &m->next;
			continue;
		}
		if (m->sweep == SWEEP_DOOMED && s->hooks.forget)
			s->hooks.forget(s->hooks.ctx, m, 0, 0);
		*pp = m->next;
		sym_module_free(m);
		freed++;
	}
	s->stats.modules_freed += freed;
	sym_roots_prune(s, false);
	return freed;
}
