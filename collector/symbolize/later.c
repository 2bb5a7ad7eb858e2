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
 * makes them from symbols (symbolize_symbol()).  Nothing here prints.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize.h"

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

#else

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

struct symbolize_later {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	char *debuginfo_path; /* libdwfl's search path; referenced by dwfl */
	Dwfl_Callbacks cb;
	char *source; /* the file the symbols came from */
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
	m->cb.find_debuginfo = dwfl_standard_find_debuginfo;
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
