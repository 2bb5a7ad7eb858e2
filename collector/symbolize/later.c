/*
 * later.c — names for frames stored without one (symbolize.h, "naming
 * later"): a module is found by its build id, and a file offset in it is
 * named by the function holding it.  The symbols come, in this order,
 * from: the module's own file, when it is where the frame says and has
 * that build id (its .symtab, or what libdwfl finds for it: a debug file
 * by build id under /usr/lib/debug and each debug directory, its
 * .gnu_debuglink, its .gnu_debugdata, and a debuginfod server when
 * DEBUGINFOD_URLS is set); else a debug file found by build id
 * (DIR/.build-id/xx/rest.debug or DIR/xx/rest.debug under
 * /usr/lib/debug and each debug directory, or a file directly in a debug
 * directory whose build id it is).  Names are made as the symbolizer
 * makes them from symbols (symbolize_symbol()).  A pass over a store
 * (symbolize_later_plan/run/apply) is what `flamefs-collect symbolize`
 * and `record` on its own do: the store's unnamed frames copied out, named
 * without the store (on any thread), and renamed in a batch the caller
 * commits; symbolize_later_stamp() tells the recorder when a search may
 * now find more.  Nothing here prints or commits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize.h"

/* CLOCK_MONOTONIC in seconds: the debuginfod budget's clock. */
static double later_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#ifdef FLAMEFS_RECORD_NO_BPF

int symbolize_later_open(const struct symbolize_later_opts *o, const char *path,
                         const uint8_t *build_id, size_t build_id_len, struct symbolize_later **out)
{
	(void)o, (void)path, (void)build_id, (void)build_id_len;
	*out = NULL;
	return -ENOTSUP;
}

int symbolize_later_name(struct symbolize_later *m, uint64_t offset, char **name)
{
	(void)m, (void)offset;
	*name = NULL;
	return -ENOTSUP;
}

const char *symbolize_later_source(const struct symbolize_later *m)
{
	(void)m;
	return NULL;
}

void symbolize_later_free(struct symbolize_later *m)
{
	(void)m;
}

static bool later_partial(const struct symbolize_later *m)
{
	(void)m;
	return false;
}

static int debuginfod_ask(const uint8_t *bid, size_t len, double deadline)
{
	(void)bid, (void)len, (void)deadline;
	return -ENOSYS;
}

#else

#include <dlfcn.h>
#include <pthread.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

struct symbolize_later {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	char *debuginfo_path; /* libdwfl's search path; referenced by dwfl */
	Dwfl_Callbacks cb;
	char *source; /* the file the symbols came from */
	bool partial; /* only the module's .dynsym: a debug file may name more */
	/* the module's loadable segments, for file offset -> ELF address */
	GElf_Phdr *loads;
	size_t nloads;
};

/* Whether the ELF file at path has this build id. */
static bool file_has_build_id(const char *path, const uint8_t *bid, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	const void *got = NULL;
	ssize_t n = -1;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		n = dwelf_elf_gnu_build_id(elf, &got);
	bool same = n > 0 && (size_t)n == len && !memcmp(got, bid, len);
	elf_end(elf);
	close(fd);
	return same;
}

/* The PT_LOAD headers of elf into m. */
static int read_loads(struct symbolize_later *m, Elf *elf)
{
	size_t n;

	if (!elf || elf_getphdrnum(elf, &n) != 0)
		return -EINVAL;
	m->loads = calloc(n ? n : 1, sizeof(*m->loads));
	if (!m->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->nloads++] = ph;
	}
	return 0;
}

/* Whether the symbols libdwfl found for mod are only its .dynsym (what
 * it exports, or nothing but imports): its file has no .symtab and no
 * .gnu_debugdata, and no more symbols than its .dynsym holds. */
static bool dynsym_only(Dwfl_Module *mod, int nsyms)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	size_t shstrndx, ndyn = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return true;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			return false;
		if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize)
			ndyn += sh.sh_size / sh.sh_entsize;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".gnu_debugdata"))
			return false;
	}
	return (size_t)nsyms <= ndyn;
}

/* Reports `file` as the module of m's session: 0 when libdwfl found its
 * symbol table, 1 when only its .dynsym, -errno else. */
static int report(struct symbolize_later *m, const char *file)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	dwfl_report_begin(m->dwfl);
	m->mod = dwfl_report_elf(m->dwfl, file, file, fd, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		close(fd);
		return -EINVAL;
	}
	int n = dwfl_module_getsymtab(m->mod);
	if (n <= 0)
		return -ENOENT;
	return dynsym_only(m->mod, n) ? 1 : 0;
}

/* Opens a fresh libdwfl session. */
static int session(struct symbolize_later *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	m->mod = NULL;
	m->dwfl = dwfl_begin(&m->cb);
	return m->dwfl ? 0 : -ENOMEM;
}

/* A debug file with this build id: DIR/.build-id/xx/rest.debug,
 * DIR/xx/rest.debug, or a regular file directly in DIR whose build id it
 * is.  Returns a malloc'd path or NULL. */
static char *find_in_dir(const char *dir, const uint8_t *bid, size_t len)
{
	char hex[2 * 64 + 1], *p = NULL;
	DIR *d;
	struct dirent *e;

	if (len > 64 || len < 2)
		return NULL;
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	for (int k = 0; k < 2; k++) {
		if (asprintf(&p, "%s%s/%.2s/%s.debug", dir, k ? "" : "/.build-id", hex, hex + 2) <
		    0)
			return NULL;
		if (access(p, R_OK) == 0 && file_has_build_id(p, bid, len))
			return p;
		free(p);
		p = NULL;
	}
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.' || asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			p = NULL;
			continue;
		}
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && file_has_build_id(p, bid, len))
			break;
		free(p);
		p = NULL;
	}
	if (d)
		closedir(d);
	return p;
}

int symbolize_later_open(const struct symbolize_later_opts *o, const char *path,
                         const uint8_t *build_id, size_t build_id_len, struct symbolize_later **out)
{
	struct symbolize_later *m = calloc(1, sizeof(*m));
	size_t len = strlen("+:.debug:/usr/lib/debug") + 1;
	bool own = false;
	int r = -ENOENT;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	elf_version(EV_CURRENT);
	for (size_t i = 0; o && i < o->ndirs; i++)
		len += strlen(o->dirs[i]) + 1;
	m->debuginfo_path = malloc(len);
	if (!m->debuginfo_path) {
		free(m);
		return -ENOMEM;
	}
	strcpy(m->debuginfo_path, "+:.debug:/usr/lib/debug");
	for (size_t i = 0; o && i < o->ndirs; i++) {
		strcat(m->debuginfo_path, ":");
		strcat(m->debuginfo_path, o->dirs[i]);
	}
	m->cb.find_elf = dwfl_build_id_find_elf;
	/* libdwfl asks debuginfod in dwfl_standard_find_debuginfo() */
	m->cb.find_debuginfo =
	        o && o->no_debuginfod ? dwfl_build_id_find_debuginfo : dwfl_standard_find_debuginfo;
	m->cb.debuginfo_path = &m->debuginfo_path;

	/* The module itself, when it is here and is the one recorded: its
	 * segments place the offsets, and libdwfl looks for its symbols
	 * everywhere it knows (build id dirs, debuglink, debugdata,
	 * debuginfod). */
	own = path && *path == '/' && build_id_len &&
	      file_has_build_id(path, build_id, build_id_len);
	if (own) {
		r = session(m);
		if (r == 0)
			r = report(m, path);
		if (r != -ENOMEM && m->mod) {
			Dwarf_Addr bias;
			int lr = read_loads(m, dwfl_module_getelf(m->mod, &bias));
			if (lr == -ENOMEM)
				r = lr;
		}
		if (r == 0) {
			const char *debug = NULL;
			dwfl_module_info(m->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug);
			m->source = strdup(debug ? debug : path);
			goto found;
		}
		if (r == -ENOMEM)
			goto fail;
	}
	/* Else a debug file by build id, named as the module (placed by the
	 * module's own segments when it is here: a debug file's say where
	 * the code was in memory, not in the file). */
	{
		char *file = NULL;
		if (build_id_len)
			file = find_in_dir("/usr/lib/debug", build_id, build_id_len);
		for (size_t i = 0; !file && o && i < o->ndirs; i++)
			file = find_in_dir(o->dirs[i], build_id, build_id_len);
		if (!file && own && r == 1 && m->loads) {
			/* only what it exports: better than nothing */
			m->source = strdup(path);
			m->partial = true;
			goto found;
		}
		if (!file) {
			r = -ENOENT;
			goto fail;
		}
		r = session(m);
		if (r == 0)
			r = report(m, file);
		if (r == 0 && !m->loads) {
			Dwarf_Addr bias;
			r = read_loads(m, dwfl_module_getelf(m->mod, &bias));
		}
		if (r != 0) {
			free(file);
			if (r > 0)
				r = -ENOENT;
			goto fail;
		}
		m->source = file;
	}
found:
	if (!m->source) {
		r = -ENOMEM;
		goto fail;
	}
	*out = m;
	return 0;
fail:
	symbolize_later_free(m);
	return r;
}

int symbolize_later_name(struct symbolize_later *m, uint64_t offset, char **name)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *raw = NULL;
	uint64_t vaddr = 0;
	bool placed = false;

	*name = NULL;
	for (size_t i = 0; i < m->nloads && !placed; i++) {
		const GElf_Phdr *ph = &m->loads[i];
		if (offset >= ph->p_offset && offset - ph->p_offset < ph->p_filesz) {
			vaddr = offset - ph->p_offset + ph->p_vaddr;
			placed = true;
		}
	}
	if (!placed)
		return 0;
	raw = dwfl_module_addrinfo(m->mod, vaddr, &off, &sym, NULL, NULL, NULL);
	if (!raw || !*raw || GELF_ST_TYPE(sym.st_info) != STT_FUNC || off >= sym.st_size)
		return 0;
	*name = symbolize_symbol(raw, false);
	return *name ? 1 : -ENOMEM;
}

const char *symbolize_later_source(const struct symbolize_later *m)
{
	return m->source;
}

static bool later_partial(const struct symbolize_later *m)
{
	return m->partial;
}

/* libdebuginfod's client as debuginfod_find_debuginfo(3) documents it,
 * loaded as libdwfl loads it (no build dependency on its headers), once a
 * process and never unloaded: its libraries (curl, TLS) keep state of their
 * own from their first use, which an unload would leave behind.  The
 * progress callback and user data (libdebuginfod 0.179 and later) let a
 * query be cut short at the pass's deadline; without them a query runs to
 * its own end. */
struct debuginfod_client;
typedef int (*debuginfod_progress_fn)(struct debuginfod_client *, long, long);

static struct {
	pthread_once_t once;
	struct debuginfod_client *(*begin)(void);
	int (*find)(struct debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(struct debuginfod_client *);
	void (*set_progress)(struct debuginfod_client *, debuginfod_progress_fn);
	void (*set_user)(struct debuginfod_client *, void *);
	void *(*get_user)(struct debuginfod_client *);
} dfd = {.once = PTHREAD_ONCE_INIT};

static void debuginfod_load(void)
{
	void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;
	*(void **)&dfd.begin = dlsym(lib, "debuginfod_begin");
	*(void **)&dfd.find = dlsym(lib, "debuginfod_find_debuginfo");
	*(void **)&dfd.end = dlsym(lib, "debuginfod_end");
	*(void **)&dfd.set_progress = dlsym(lib, "debuginfod_set_progressfn");
	*(void **)&dfd.set_user = dlsym(lib, "debuginfod_set_user_data");
	*(void **)&dfd.get_user = dlsym(lib, "debuginfod_get_user_data");
	if (!dfd.begin || !dfd.find || !dfd.end) {
		dfd.begin = NULL;
		dlclose(lib);
	}
	if (!dfd.set_progress || !dfd.set_user || !dfd.get_user)
		dfd.set_progress = NULL;
}

/* A query's deadline, and whether it was cut short there. */
struct ask_deadline {
	double at; /* CLOCK_MONOTONIC seconds */
	bool cut;
};

/* libdebuginfod calls this while a query waits (about once a second and at
 * each chunk received); nonzero cancels the query. */
static int debuginfod_progress(struct debuginfod_client *c, long a, long b)
{
	struct ask_deadline *d = dfd.get_user(c);

	(void)a, (void)b;
	if (d && later_now() >= d->at)
		d->cut = true;
	return d && d->cut;
}

/* Asks the servers of DEBUGINFOD_URLS for the debug file of build id bid,
 * which lands in the client's cache (where libdwfl's own query then finds
 * it): 0 found, -ENOENT none has it, -ECANCELED cut short at `deadline`
 * (CLOCK_MONOTONIC seconds), -ENOSYS no client or no servers, -ENOMEM,
 * else the failure (-ECONNREFUSED, -ETIME, ...). */
static int debuginfod_ask(const uint8_t *bid, size_t len, double deadline)
{
	struct ask_deadline d = {deadline, false};
	int fd;

	pthread_once(&dfd.once, debuginfod_load);
	if (!dfd.begin)
		return -ENOSYS;
	struct debuginfod_client *c = dfd.begin();
	if (!c)
		return -ENOMEM;
	if (dfd.set_progress) {
		dfd.set_user(c, &d);
		dfd.set_progress(c, debuginfod_progress);
	}
	fd = dfd.find(c, bid, (int)len, NULL);
	dfd.end(c);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return d.cut ? -ECANCELED : fd;
}

void symbolize_later_free(struct symbolize_later *m)
{
	if (!m)
		return;
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->debuginfo_path);
	free(m->source);
	free(m->loads);
	free(m);
}

#endif

/* ---- a naming pass over a store ---------------------------------------- */

struct symbolize_later_pass {
	int server_error; /* symbolize_later_server_error() */
	char *server_urls;
	/* symbolize_later_budget(): the budget, the server time spent (the
	 * queries' wall time summed), the modules asked and those not asked
	 * (or cut short) once it was spent */
	double budget_s, spent_s;
	size_t asked, unasked;
	struct symbolize_later_result *mods;
	size_t nmods;
	struct symbolize_later_frame *frames;
	size_t nframes;
};

/* A frame of the plan, pointing into the store until copied. */
struct planned {
	uint32_t id;
	struct store_frame f;
};

static int mem_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : al < bl ? -1 : al > bl;
}

static int planned_cmp(const void *pa, const void *pb)
{
	return store_frame_place_cmp(&((const struct planned *)pa)->f,
	                             &((const struct planned *)pb)->f);
}

static bool same_module(const struct store_frame *a, const struct store_frame *b)
{
	return !mem_cmp(a->module, a->module_len, b->module, b->module_len) &&
	       !mem_cmp(a->build_id, a->build_id_len, b->build_id, b->build_id_len);
}

/* Whether frame f is of one of the modules only[0..nonly). */
static bool wanted(const struct store_frame *f, const struct symbolize_later_module *only,
                   size_t nonly)
{
	for (size_t i = 0; i < nonly; i++)
		if (!mem_cmp(f->build_id, f->build_id_len, only[i].build_id,
		             only[i].build_id_len) &&
		    !mem_cmp(f->module, f->module_len, only[i].path,
		             only[i].path ? strlen(only[i].path) : 0))
			return true;
	return false;
}

/* Copies the module of frame f into result r.  0 or -ENOMEM. */
static int copy_module(struct symbolize_later_result *r, const struct store_frame *f)
{
	char *path = strndup(f->module ? f->module : "", f->module_len);
	uint8_t *bid = malloc(f->build_id_len ? f->build_id_len : 1);

	if (!path || !bid) {
		free(path);
		free(bid);
		return -ENOMEM;
	}
	memcpy(bid, f->build_id, f->build_id_len);
	r->m = (struct symbolize_later_module){path, bid, f->build_id_len};
	r->error = -ENOENT;
	return 0;
}

/* The pass of the planned frames u[0..nu), sorted by module. */
static int plan_fill(struct symbolize_later_pass *p, const struct planned *u, size_t nu)
{
	size_t nmods = 0;

	for (size_t i = 0; i < nu; i++)
		nmods += i == 0 || !same_module(&u[i - 1].f, &u[i].f);
	p->mods = calloc(nmods ? nmods : 1, sizeof(*p->mods));
	p->frames = calloc(nu ? nu : 1, sizeof(*p->frames));
	if (!p->mods || !p->frames)
		return -ENOMEM;
	for (size_t i = 0; i < nu; i++) {
		if (i == 0 || !same_module(&u[i - 1].f, &u[i].f)) {
			if (copy_module(&p->mods[p->nmods], &u[i].f) < 0)
				return -ENOMEM;
			p->nmods++;
		}
		p->mods[p->nmods - 1].frames++;
		p->frames[p->nframes++] = (struct symbolize_later_frame){
		        .id = u[i].id, .module = (uint32_t)(p->nmods - 1), .offset = u[i].f.offset};
	}
	return 0;
}

int symbolize_later_plan(const struct store *s, const struct symbolize_later_module *only,
                         size_t nonly, struct symbolize_later_pass **out)
{
	struct symbolize_later_pass *p = calloc(1, sizeof(*p));
	struct planned *u = NULL;
	size_t nu = 0, cap = 0;
	int rc = -ENOMEM;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	for (uint32_t id = 1; id < store_frame_count(s); id++) {
		struct store_frame f;
		if (store_frame_get(s, id, &f) < 0 || f.kind != STORE_FRAME_UNKNOWN || !f.offset ||
		    !f.build_id_len || (only && !wanted(&f, only, nonly)))
			continue;
		if (nu == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct planned *n = realloc(u, ncap * sizeof(*n));
			if (!n)
				goto out;
			u = n;
			cap = ncap;
		}
		u[nu++] = (struct planned){id, f};
	}
	if (nu > 1)
		qsort(u, nu, sizeof(*u), planned_cmp);
	rc = plan_fill(p, u, nu);
out:
	free(u);
	if (rc < 0) {
		symbolize_later_pass_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Opens module r of a pass: first without debuginfod; then, when that
 * found no symbols or only the module's .dynsym and servers are set and
 * have not failed, asks them while the pass's budget lasts (a query running
 * when it runs out is cut short) and, when one had the debug file, opens
 * the module again (libdwfl finds the file in the cache). */
static int open_module(struct symbolize_later_pass *p, struct symbolize_later_opts *lo,
                       const struct symbolize_later_result *r, struct symbolize_later **out)
{
	struct symbolize_later_opts local = *lo;
	const char *urls = getenv("DEBUGINFOD_URLS");
	int rc, asked;

	local.no_debuginfod = true;
	rc = symbolize_later_open(&local, r->m.path, r->m.build_id, r->m.build_id_len, out);
	if ((rc != 0 && rc != -ENOENT) || (rc == 0 && !later_partial(*out)) || lo->no_debuginfod ||
	    !urls || !*urls || !r->m.build_id_len)
		return rc;
	if (p->spent_s >= p->budget_s) {
		p->unasked++;
		return rc;
	}
	double t0 = later_now();
	asked = debuginfod_ask(r->m.build_id, r->m.build_id_len, t0 + p->budget_s - p->spent_s);
	p->spent_s += later_now() - t0;
	if (asked == -ECANCELED) {
		p->unasked++;
		return rc;
	}
	if (asked != -ENOSYS)
		p->asked++;
	if (asked == -ENOMEM)
		goto nomem;
	if (asked < 0 && asked != -ENOENT && asked != -ENOSYS) {
		p->server_error = asked;
		if (!(p->server_urls = strdup(urls)))
			goto nomem;
		lo->no_debuginfod = true;
	}
	if (asked != 0)
		return rc;
	symbolize_later_free(*out);
	*out = NULL;
	return symbolize_later_open(lo, r->m.path, r->m.build_id, r->m.build_id_len, out);
nomem:
	symbolize_later_free(*out);
	*out = NULL;
	return -ENOMEM;
}

int symbolize_later_run(struct symbolize_later_pass *p, const struct symbolize_later_opts *o)
{
	struct symbolize_later_opts lo = o ? *o : (struct symbolize_later_opts){0};
	size_t i = 0;

	p->budget_s =
	        lo.debuginfod_budget_s > 0 ? lo.debuginfod_budget_s : SYMBOLIZE_DEBUGINFOD_BUDGET_S;

	for (size_t k = 0; k < p->nmods; k++) {
		struct symbolize_later_result *r = &p->mods[k];
		struct symbolize_later *m = NULL;
		size_t end = i + r->frames;

		r->error = open_module(p, &lo, r, &m);
		if (r->error == -ENOMEM || r->error == -ENOTSUP)
			return r->error;
		for (; r->error == 0 && i < end; i++) {
			struct symbolize_later_frame *f = &p->frames[i];
			free(f->name);
			f->name = NULL;
			int nr = symbolize_later_name(m, f->offset, &f->name);
			if (nr < 0) {
				symbolize_later_free(m);
				return nr;
			}
			r->named += nr > 0;
		}
		i = end;
		if (r->error == 0 && !(r->source = strdup(symbolize_later_source(m)))) {
			symbolize_later_free(m);
			return -ENOMEM;
		}
		symbolize_later_free(m);
	}
	return 0;
}

int symbolize_later_server_error(const struct symbolize_later_pass *p, const char **urls)
{
	*urls = p->server_urls;
	return p->server_error;
}

size_t symbolize_later_budget(const struct symbolize_later_pass *p, double *budget_s,
                              double *spent_s, size_t *asked)
{
	*budget_s = p->budget_s;
	*spent_s = p->spent_s;
	*asked = p->asked;
	return p->unasked;
}

int symbolize_later_debuginfod_budget(const char *text, double *s)
{
	const char *v = text ? text : getenv(SYMBOLIZE_DEBUGINFOD_BUDGET_ENV);
	char *end;
	double d;

	if (!v) {
		*s = SYMBOLIZE_DEBUGINFOD_BUDGET_S;
		return 0;
	}
	errno = 0;
	d = strtod(v, &end);
	/* written as d > 0 so that a NaN fails too */
	if (errno || end == v || *end || !(d > 0) || d > SYMBOLIZE_DEBUGINFOD_BUDGET_MAX_S)
		return -EINVAL;
	*s = d;
	return 0;
}

void symbolize_later_debuginfod_defaults(void)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", SYMBOLIZE_DEBUGINFOD_TIMEOUT_S);
	setenv("DEBUGINFOD_TIMEOUT", v, 0);
	snprintf(v, sizeof(v), "%d", SYMBOLIZE_DEBUGINFOD_RETRIES);
	setenv("DEBUGINFOD_RETRY_LIMIT", v, 0);
}

int symbolize_later_apply(const struct symbolize_later_pass *p, struct store_batch *b)
{
	for (size_t i = 0; i < p->nframes; i++) {
		const struct symbolize_later_frame *f = &p->frames[i];
		const struct symbolize_later_module *m = &p->mods[f->module].m;
		if (!f->name)
			continue;
		struct store_frame named = {
		        .name = f->name,
		        .name_len = strlen(f->name),
		        .module = m->path,
		        .module_len = strlen(m->path),
		        .build_id = m->build_id,
		        .build_id_len = m->build_id_len,
		        .kind = STORE_FRAME_USER,
		};
		int rc = store_batch_frame_rename(b, f->id, &named);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const struct symbolize_later_result *symbolize_later_results(const struct symbolize_later_pass *p,
                                                             size_t *n)
{
	*n = p->nmods;
	return p->mods;
}

const struct symbolize_later_frame *symbolize_later_frames(const struct symbolize_later_pass *p,
                                                           size_t *n)
{
	*n = p->nframes;
	return p->frames;
}

void symbolize_later_pass_free(struct symbolize_later_pass *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nmods; i++) {
		free((char *)p->mods[i].m.path);
		free((uint8_t *)p->mods[i].m.build_id);
		free((char *)p->mods[i].source);
	}
	for (size_t i = 0; i < p->nframes; i++)
		free(p->frames[i].name);
	free(p->mods);
	free(p->frames);
	free(p->server_urls);
	free(p);
}

/* Folds what stat(2) says of path (or that it is not there) into h. */
static uint64_t stamp_path(uint64_t h, const char *path)
{
	struct stat st;
	uint64_t v[4] = {0, 0, 0, 0};

	if (stat(path, &st) == 0)
		v[0] = st.st_ino, v[1] = (uint64_t)st.st_mtim.tv_sec,
		v[2] = (uint64_t)st.st_mtim.tv_nsec, v[3] = (uint64_t)st.st_size;
	for (size_t i = 0; i < 4; i++)
		for (int k = 0; k < 64; k += 8)
			h = (h ^ ((v[i] >> k) & 0xff)) * 1099511628211ULL;
	return h;
}

/* Folds DIR/.build-id/xx and DIR/xx of build id bid into h. */
static uint64_t stamp_build_id(uint64_t h, const char *dir, const uint8_t *bid, size_t len)
{
	char p[4096];

	if (len < 1)
		return h;
	snprintf(p, sizeof(p), "%s/.build-id/%02x", dir, bid[0]);
	h = stamp_path(h, p);
	snprintf(p, sizeof(p), "%s/%02x", dir, bid[0]);
	return stamp_path(h, p);
}

uint64_t symbolize_later_stamp(const struct symbolize_later_opts *o,
                               const struct symbolize_later_module *m)
{
	uint64_t h = 1469598103934665603ULL;
	char dir[4096], p[4096 + 16];
	const char *slash = m->path ? strrchr(m->path, '/') : NULL;

	/* the file itself, and where its .gnu_debuglink may point: beside it,
	 * in its .debug/, and under /usr/lib/debug by its directory */
	if (m->path)
		h = stamp_path(h, m->path);
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - m->path), m->path);
		h = stamp_path(h, *dir ? dir : "/");
		snprintf(p, sizeof(p), "%s/.debug", dir);
		h = stamp_path(h, p);
		snprintf(p, sizeof(p), "/usr/lib/debug%s", dir);
		h = stamp_path(h, p);
	}
	h = stamp_path(h, "/usr/lib/debug");
	h = stamp_build_id(h, "/usr/lib/debug", m->build_id, m->build_id_len);
	for (size_t i = 0; o && i < o->ndirs; i++) {
		h = stamp_path(h, o->dirs[i]);
		h = stamp_build_id(h, o->dirs[i], m->build_id, m->build_id_len);
	}
	return h;
}
