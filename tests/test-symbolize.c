/*
 * test-symbolize.c — unit tests for the symbolizer's name handling
 * (collector/symbolize/names.c): C++ Itanium names, Rust legacy names (hash
 * dropped) and Rust v0 names are demangled, then tidied the way
 * stackcollapse-perf prints them; names that are not mangled, or are
 * mangled wrongly, are kept as they are.  The mangled names were taken
 * with nm from binaries built on this machine by g++ 12 and rustc 1.95
 * (-C symbol-mangling-version=v0).
 *
 * Kernel addresses: as root, text symbols taken from /proc/kallsyms (one
 * in 50, each alone at its address) must be named alike by
 * symbolize_kernel(), which asks the kernel through BPF (ksym-internal.h), at the
 * symbol's first byte + 1, as an innermost frame and as a return address
 * (looked up at the first byte).
 *
 * An exec the symbolizer meets before its event: a child of this test is
 * snapshotted, then execs sleep(1).  A lookup that misses reads its maps
 * again and finds the new program; what ran before must still be named
 * from its own snapshot (binary and functions), the new program must be
 * the next generation, and the exec event that comes late must keep both.
 *
 * Function starts of unnamed code (fdes.c): in libc, for addresses all
 * over its segments, .eh_frame_hdr's search table answers as the list of
 * every FDE does.
 *
 * ELF symbols (symbolize_symbol): symbol versions ("@@GLIBC_2.34",
 * "@GLIBC_2.2.5") are dropped, "@plt" is kept, in both naming modes; in
 * this very process, every PLT entry of its executable is named
 * "NAME@plt" after the relocation its stub jumps through (read here with
 * libelf and the stub's own jmp), and libc functions whose symbols carry
 * versions are named without them.
 *
 * Freeing modules (symbolize_sweep): a child running sleep(1) is
 * snapshotted beside this process; sweeps free nothing while it lives,
 * its program's module alone (the libraries are this process's too)
 * once it is reaped and unused since the last sweep, with the forget hook
 * told its file, and not before --module-grace has passed; this process is
 * still named after, and a new sleep opens its file again.  A file that
 * only a kept program's layout names (libanl, preloaded by one sleep) is
 * kept while that program is, and freed with it.  Resolved addresses:
 * two in one function share one copy of its name; more than
 * SYMBOLIZE_CACHE_MAX in one file (bytes of libc from qsort on) are
 * emptied by the next sweep, that file's cache only, and resolve to the
 * same names after; a cache below the bound is kept.  A python3's cached
 * code objects stay while it lives and go at the first sweep after it is
 * reaped.
 *
 * Opening files other users control (trust.c): a regular file opens
 * non-blocking; a FIFO, a symlink, a device and a file over the size bound
 * are refused without blocking; under a root, ".." stops at the root and
 * a symlink on the way is refused.  Debug-link names with '/' or that
 * are "." or ".." are not plain; paths with a ".." component are seen.
 * Perf maps parsed within a budget keep what fits of entries and bytes
 * of names, and say they were cut.
 *
 * Python code objects (python.c): a 3.11 location table taken
 * from python3.11 gives, for every instruction, the line CPython's own
 * co_lines() gives; a code object laid out in memory here is read with
 * its names in each string kind (ASCII, Latin-1, UCS-2, UCS-4), and
 * refused when its type, a string's state, a length or a read is wrong.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "symbolize-internal.h"
#include "symbolize.h"

static int failures;

static void expect(const char *raw, const char *want)
{
	char *got = symbolize_name(raw);
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "FAIL %s\n  want %s\n  got  %s\n", raw, want, got ? got : "(NULL)");
		failures++;
	}
	free(got);
}

static void expect_sym(const char *raw, bool perf, const char *want)
{
	char *got = symbolize_symbol(raw, perf);
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "FAIL symbol %s (perf %d)\n  want %s\n  got  %s\n", raw, perf, want,
		        got ? got : "(NULL)");
		failures++;
	}
	free(got);
}

struct ksym_line {
	uint64_t addr;
	char type;
	char name[128];
};

/* Compares symbolize_kernel() with /proc/kallsyms; returns the number of
 * addresses checked (0: not root, or addresses hidden). */
static int check_kernel(void)
{
	FILE *f = geteuid() == 0 ? fopen("/proc/kallsyms", "re") : NULL;
	struct ksym_line *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];
	int checked = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		struct ksym_line l;
		if (sscanf(line, "%" SCNx64 " %c %127s", &l.addr, &l.type, l.name) != 3)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n++] = l;
	}
	fclose(f);
	struct symbolize *s = symbolize_new();
	if (!s)
		abort();
	for (size_t i = 1; i + 1 < n; i += 50) {
		const struct ksym_line *l = &v[i];
		if (!l->addr || (l->type != 't' && l->type != 'T'))
			continue;
		if (v[i - 1].addr >= l->addr || v[i + 1].addr <= l->addr + 1)
			continue; /* an alias, or out of order (modules) */
		for (int caller = 0; caller < 2; caller++) {
			struct store_frame fr;
			uint64_t a = l->addr + 1; /* looked up at l->addr as a caller */
			if (symbolize_kernel(s, a, caller, &fr) < 0 ||
			    fr.name_len != strlen(l->name) ||
			    memcmp(fr.name, l->name, fr.name_len) != 0) {
				fprintf(stderr,
				        "FAIL kernel %" PRIx64
				        " (caller %d)\n  want %s\n  got  %.*s\n",
				        a, caller, l->name, (int)fr.name_len, fr.name);
				failures++;
			}
			checked++;
		}
	}
	symbolize_free(s);
	free(v);
	return checked;
}

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok)
		failures++;
}

/* dl_iterate_phdr(): the path of libc.so.6 into arg (PATH_MAX bytes). */
static int libc_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	(void)size;
	if (!base || strcmp(base, "/libc.so.6") != 0)
		return 0;
	snprintf(arg, PATH_MAX, "%s", info->dlpi_name);
	return 1;
}

/* A module of path with its libdwfl session open (by one lookup), or
 * NULL.  list: its function starts from the list of every FDE, never
 * from .eh_frame_hdr's table. */
static struct module *fde_module(struct symbolize *s, const char *path, bool list)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct module *m;
	struct symres *r;

	if (fd < 0 || sym_module_new(s, path, fd, &m) < 0 || !m->nsegs)
		return NULL;
	m->fde_hdr_tried = list;
	if (sym_module_lookup(s, m, m->segs[0].vaddr + 1, &r) < 0 || !m->dmod) {
		sym_module_free(m);
		return NULL;
	}
	return m;
}

/* Unnamed code's function starts (fdes.c): for addresses all over the
 * loaded segments of path, the search of .eh_frame_hdr's table gives
 * what the list of every FDE gives, and the table (not the list) is what
 * answered.  Returns the number of addresses inside a function. */
static size_t check_fde_table(const char *path)
{
	struct symbolize *s = symbolize_new();
	struct module *t = s ? fde_module(s, path, false) : NULL;
	struct module *l = s ? fde_module(s, path, true) : NULL;
	size_t total = 0, inside = 0, differ = 0;
	char what[PATH_MAX + 96];

	if (!t || !l) {
		snprintf(what, sizeof(what), "fde: %s opened twice", path);
		check(false, what);
		goto out;
	}
	for (size_t i = 0; i < t->nsegs; i++)
		total += t->segs[i].filesz;
	size_t step = total / 400000 + 1;
	for (size_t i = 0; i < t->nsegs; i++) {
		const struct segment *g = &t->segs[i];
		for (uint64_t v = g->vaddr + 1; v < g->vaddr + g->filesz; v += step) {
			uint64_t a = sym_module_function_start(t, v);
			uint64_t b = sym_module_function_start(l, v);
			if (a != b && differ++ < 5)
				printf("  %s at 0x%" PRIx64 ": table 0x%" PRIx64 ", list 0x%" PRIx64
				       "\n",
				       path, v, a, b);
			inside += b != 0;
		}
	}
	snprintf(what, sizeof(what),
	         "fde: %s: .eh_frame_hdr's table answers (%zu FDEs), the list was not built", path,
	         t->fde_table_n);
	check(t->fde_table && !t->fdes_loaded, what);
	snprintf(what, sizeof(what), "fde: %s: the table and the list agree (%zu differ)", path,
	         differ);
	check(differ == 0 && l->fdes_loaded && l->nfdes > 0, what);
	snprintf(what, sizeof(what), "fde: %s: addresses inside a function: %zu", path, inside);
	check(inside > 1000, what);
out:
	sym_module_free(t);
	sym_module_free(l);
	symbolize_free(s);
	return inside;
}

/* The name symbolize_user_gen() gives addr in pid's generation gen. */
static const char *name_at(struct symbolize *s, pid_t pid, uint32_t gen, uintptr_t addr, char *buf,
                           size_t len)
{
	struct store_frame f;
	if (symbolize_user_gen(s, pid, gen, addr, false, &f, 1) < 1)
		return "(error)";
	snprintf(buf, len, "%.*s", (int)f.name_len, f.name);
	return buf;
}

static const char *binary_of(struct symbolize *s, pid_t pid, uint32_t gen)
{
	const char *bin = NULL, *bid = NULL;
	return symbolize_process_gen(s, pid, gen, &bin, &bid) == 0 && bin ? bin : "(none)";
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1; /* the executable comes first */
}

static Elf_Scn *scn_named(Elf *elf, size_t shstrndx, const char *want, GElf_Shdr *sh)
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

/* Every PLT entry of this executable, named by the symbolizer, against
 * the relocation whose GOT slot its stub jumps through.  Returns the
 * number of entries checked. */
static int check_plt(const char *self)
{
	uintptr_t bias = 0;
	dl_iterate_phdr(first_object, &bias);
	elf_version(EV_CURRENT);
	int fd = open(self, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	struct symbolize *s = symbolize_new();
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rscn, *pscn;
	size_t shstrndx;
	int checked = 0;
	char buf[256];

	if (!elf || !s || elf_getshdrstrndx(elf, &shstrndx) < 0 ||
	    !(rscn = scn_named(elf, shstrndx, ".rela.plt", &rsh))) {
		check(false, "plt: this executable has a .rela.plt");
		goto out;
	}
	uint64_t first;
	if ((pscn = scn_named(elf, shstrndx, ".plt.sec", &psh)))
		first = psh.sh_addr;
	else if ((pscn = scn_named(elf, shstrndx, ".plt", &psh)))
		first = psh.sh_addr + 16;
	else
		goto out;
	Elf_Data *rd = elf_getdata(rscn, NULL);
	Elf_Scn *dscn = elf_getscn(elf, rsh.sh_link);
	Elf_Data *dd = dscn && gelf_getshdr(dscn, &dsh) ? elf_getdata(dscn, NULL) : NULL;
	check(symbolize_snapshot(s, getpid(), 0) == 0, "plt: this process is snapshotted");
	for (uint64_t at = first; rd && dd && at + 16 <= psh.sh_addr + psh.sh_size; at += 16) {
		/* the stub's "jmp *disp32(%rip)", after endbr64 and bnd */
		const unsigned char *c = (const unsigned char *)(bias + at);
		if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
			c += 4;
		if (c[0] == 0xf2)
			c++;
		if (c[0] != 0xff || c[1] != 0x25)
			continue;
		int32_t disp;
		memcpy(&disp, c + 2, 4);
		uint64_t slot = (uint64_t)((uintptr_t)c + 6 + (intptr_t)disp - bias);
		const char *want = NULL;
		for (size_t i = 0; i < rsh.sh_size / rsh.sh_entsize && !want; i++) {
			GElf_Rela rel;
			GElf_Sym sym;
			if (gelf_getrela(rd, (int)i, &rel) && rel.r_offset == slot &&
			    gelf_getsym(dd, (int)GELF_R_SYM(rel.r_info), &sym))
				want = elf_strptr(elf, dsh.sh_link, sym.st_name);
		}
		if (!want || !*want)
			continue;
		char exp[256];
		snprintf(exp, sizeof(exp), "%s@plt", want);
		/* every byte of the entry, as an innermost frame */
		for (uint64_t b = 0; b < 16; b += 5) {
			const char *got = name_at(s, getpid(), 0, bias + at + b, buf, sizeof(buf));
			if (strcmp(got, exp) != 0) {
				fprintf(stderr,
				        "FAIL plt entry %#" PRIx64 "+%" PRIu64
				        ": want %s, got %s\n",
				        at, b, exp, got);
				failures++;
			}
		}
		checked++;
	}
	/* libc's versioned symbols, named without their versions */
	const char *fns[] = {"__libc_start_main", "free", "memcpy", "malloc", "fstat"};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, fns[i]);
		const char *got = p ? name_at(s, getpid(), 0, (uintptr_t)p, buf, sizeof(buf)) : "";
		char what[128];
		snprintf(what, sizeof(what), "libc's %s is named without a version (%s)", fns[i],
		         got);
		check(p && *got && !strchr(got, '@') && got[0] != '[', what);
	}
out:
	symbolize_free(s);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return checked;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void exec_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Waits (up to 5 s) until pid's executable's path contains part. */
/* Whether pid maps a file whose path contains `part`. */
static bool maps_file(pid_t pid, const char *part)
{
	char path[64], line[512];
	bool found = false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, part) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* Waits (at most 10 s) until pid runs a program whose path contains
 * `part` and maps it: the exec names the new program (/proc/PID/exe)
 * before it maps its segments, and a snapshot between the two has no
 * module for it (CI met that window, two tests at a time under ASan). */
static void wait_exe(pid_t pid, const char *part)
{
	char exe[PATH_MAX], path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 1000; i++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		if (strstr(exe, part) && maps_file(pid, part))
			return;
		sleep_ms(10);
	}
}

static void check_early_exec(const char *self)
{
	int go[2];
	char buf[256];
	if (pipe(go) < 0) {
		perror("pipe");
		failures++;
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) == 1)
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	struct symbolize *s = symbolize_new();
	uintptr_t marker = (uintptr_t)exec_marker;
	check(s && symbolize_snapshot(s, pid, 0) == 0, "early exec: the child is snapshotted");
	check(strcmp(name_at(s, pid, 0, marker, buf, sizeof(buf)), "exec_marker") == 0,
	      "early exec: before the exec, the child's code is named (exec_marker)");
	if (write(go[1], "g", 1) != 1)
		failures++;
	close(go[1]);
	/* Until the child runs sleep, and a second has passed since the
	 * snapshot (a miss reads the maps again at most once a second). */
	wait_exe(pid, "sleep");
	sleep_ms(1100);
	/* A miss: no mapping at page 1.  The maps are read again. */
	name_at(s, pid, 0, 4096, buf, sizeof(buf));
	const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	check(strcmp(binary_of(s, pid, 0), base) == 0,
	      "early exec: after a re-read finds sleep, generation 0 is still this test");
	check(strcmp(name_at(s, pid, 0, marker, buf, sizeof(buf)), "exec_marker") == 0,
	      "early exec: and its code is still named (exec_marker)");
	check(strcmp(binary_of(s, pid, 1), "sleep") == 0,
	      "early exec: the new program is generation 1 (sleep)");
	/* The exec event arrives late. */
	check(symbolize_exec(s, pid, 1) == 0, "early exec: the late exec event is taken");
	check(strcmp(binary_of(s, pid, 0), base) == 0 &&
	              strcmp(name_at(s, pid, 0, marker, buf, sizeof(buf)), "exec_marker") == 0,
	      "early exec: after it, generation 0 is still named");
	check(strcmp(binary_of(s, pid, 1), "sleep") == 0,
	      "early exec: after it, generation 1 is sleep");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* Exits: a snapshot marked exited is freed by symbolize_reap(),
	 * unless a new process took the pid meanwhile. */
	pid_t me = getpid();
	check(symbolize_snapshot(s, me, 0) == 0, "exit: this process is snapshotted");
	symbolize_exited(s, pid);
	check(symbolize_reap(s, pid) && !symbolize_known(s, pid),
	      "exit: an exited process's snapshot is freed");
	check(!symbolize_reap(s, pid), "exit: a second reap finds nothing");
	check(symbolize_inherit(s, pid, me) == 0, "exit: a fork gives the pid a snapshot");
	symbolize_exited(s, pid);
	check(symbolize_inherit(s, pid, me) == 0 && !symbolize_reap(s, pid) &&
	              symbolize_known(s, pid),
	      "exit: a process that took the pid after the exit keeps its snapshot");
	symbolize_free(s);
}

/* JIT code named late (symbolize_jit_late, symbolize_jit_refresh): a
 * child with an anonymous executable page, its /tmp/perf-PID.map written,
 * half-written, rewritten and replaced under the symbolizer. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		failures++;
	}
}

static void check_trust(void)
{
	char dir[] = "/tmp/flamefs-trust.XXXXXX", path[256];
	struct stat st;
	int fd;

	if (!mkdtemp(dir)) {
		check(false, "trust: a scratch directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/file", dir);
	FILE *f = fopen(path, "we");
	if (f) {
		fputs("0123456789", f);
		fclose(f);
	}
	fd = sym_open_checked(AT_FDCWD, path, 0, 10, &st);
	check(fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK) &&
	              (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY,
	      "trust: a regular file opens read-only and non-blocking");
	if (fd >= 0)
		close(fd);
	check(sym_open_checked(AT_FDCWD, path, 0, 9, &st) == -EFBIG,
	      "trust: a file over the bound is refused (-EFBIG)");
	snprintf(path, sizeof(path), "%s/fifo", dir);
	check(mkfifo(path, 0600) == 0 &&
	              sym_open_checked(AT_FDCWD, path, 0, 1 << 20, &st) == -EINVAL,
	      "trust: a FIFO is refused without blocking (-EINVAL)");
	snprintf(path, sizeof(path), "%s/link", dir);
	check(symlink("file", path) == 0 &&
	              sym_open_checked(AT_FDCWD, path, 0, 1 << 20, &st) == -EINVAL,
	      "trust: a symlink as the last component is refused");
	check(sym_open_checked(AT_FDCWD, "/dev/null", 0, 1 << 20, &st) == -EINVAL,
	      "trust: a device is refused");
	snprintf(path, sizeof(path), "%s/sub", dir);
	int made = mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/dirlink", dir);
	made |= symlink("sub", path);
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	check(made == 0 && root >= 0, "trust: a root directory");
	fd = sym_open_checked(root, "/sub/../file", SYM_OPEN_IN_ROOT, 1 << 20, &st);
	check(fd >= 0, "trust: /sub/../file inside the root is the root's file");
	if (fd >= 0)
		close(fd);
	fd = sym_open_checked(root, "/../../../../../../file", SYM_OPEN_IN_ROOT, 1 << 20, &st);
	check(fd >= 0, "trust: '..' above the root stops at the root");
	if (fd >= 0)
		close(fd);
	check(sym_open_checked(root, "../../../../../../etc/passwd", SYM_OPEN_IN_ROOT, 1 << 20,
	                       &st) == -ENOENT,
	      "trust: '..' never leaves the root (/etc/passwd is not found from it)");
	check(sym_open_checked(root, "dirlink/../file", SYM_OPEN_IN_ROOT, 1 << 20, &st) == -ELOOP,
	      "trust: a symlink on the way is refused inside a root (-ELOOP)");
	if (root >= 0)
		close(root);
	const char *rm[] = {"file", "fifo", "link", "dirlink", "sub"};
	for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rm[i]);
		if (remove(path) < 0)
			check(false, "trust: cleaning up");
	}
	rmdir(dir);

	check(sym_plain_name("x.debug") && !sym_plain_name("a/b") && !sym_plain_name("..") &&
	              !sym_plain_name(".") && !sym_plain_name("") && sym_plain_name("..x"),
	      "trust: plain debug-link names");
	check(sym_path_has_dotdot("/a/../b") && sym_path_has_dotdot("..") &&
	              sym_path_has_dotdot("/x/..") && !sym_path_has_dotdot("/a/..b/c..") &&
	              !sym_path_has_dotdot("/usr/lib/x"),
	      "trust: paths with a '..' component");

	const char map[] = "1000 10 aa\n2000 10 bbbb\n3000 10 cc\n";
	struct jit_sym *jit = NULL;
	bool partial, capped;
	size_t bytes;
	int n = sym_jit_parse_capped(map, sizeof(map) - 1, true, SIZE_MAX, SIZE_MAX, &jit, &partial,
	                             &bytes, &capped);
	check(n == 3 && bytes == 3 + 5 + 3 && !capped, "trust: a perf map within the budget whole");
	for (int i = 0; i < n; i++)
		free(jit[i].name);
	free(jit);
	n = sym_jit_parse_capped(map, sizeof(map) - 1, true, 2, SIZE_MAX, &jit, &partial, &bytes,
	                         &capped);
	check(n == 2 && capped, "trust: a perf map cut at the entries left in the budget");
	for (int i = 0; i < n; i++)
		free(jit[i].name);
	free(jit);
	n = sym_jit_parse_capped(map, sizeof(map) - 1, true, SIZE_MAX, 3 + 4, &jit, &partial,
	                         &bytes, &capped);
	check(n == 1 && bytes == 3 && capped, "trust: a perf map cut at the bytes of names left");
	for (int i = 0; i < n; i++)
		free(jit[i].name);
	free(jit);
}

static void check_late_jit(void)
{
	int to_parent[2];
	char buf[256], path[64], text[256], want[64];
	uintptr_t code = 0;

	if (pipe(to_parent) < 0) {
		perror("pipe");
		failures++;
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uintptr_t a = p == MAP_FAILED ? 0 : (uintptr_t)p;
		if (write(to_parent[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		pause();
		_exit(0);
	}
	close(to_parent[1]);
	if (read(to_parent[0], &code, sizeof(code)) != sizeof(code) || !code) {
		check(false, "late JIT: the child maps an executable page");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	close(to_parent[0]);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	snprintf(want, sizeof(want), "[perf-%d.map]", (int)pid);
	unlink(path);

	struct symbolize *s = symbolize_new();
	check(s && symbolize_snapshot(s, pid, 0) == 0, "late JIT: the child is snapshotted");
	check(strcmp(name_at(s, pid, 0, code, buf, sizeof(buf)), "[unknown]") == 0 &&
	              symbolize_jit_late(s, pid, 0, code, false),
	      "late JIT: no map: [unknown], and late");
	check(!symbolize_jit_late(s, pid, 0, (uintptr_t)check_late_jit, false),
	      "late JIT: code of a file is never late");
	check(symbolize_jit_refresh(s, pid, 0, false) == 0, "late JIT: no map: nothing read");

	/* Half a line: its writer is still at it. */
	snprintf(text, sizeof(text), "%lx 10 late_fn", (unsigned long)code);
	write_file(path, text);
	uint64_t v0 = symbolize_jit_version(s, pid, 0);
	check(symbolize_jit_refresh(s, pid, 0, false) == 1 &&
	              symbolize_jit_late(s, pid, 0, code, false) &&
	              strcmp(name_at(s, pid, 0, code, buf, sizeof(buf)), want) == 0,
	      "late JIT: an unterminated last line is left out while the process runs");
	check(symbolize_jit_version(s, pid, 0) != v0, "late JIT: a read changes the version");
	v0 = symbolize_jit_version(s, pid, 0);
	check(symbolize_jit_refresh(s, pid, 0, false) == 0 &&
	              symbolize_jit_version(s, pid, 0) == v0,
	      "late JIT: an unchanged map is not read again");
	check(symbolize_jit_refresh(s, pid, 0, true) == 1 &&
	              !symbolize_jit_late(s, pid, 0, code, false) &&
	              strcmp(name_at(s, pid, 0, code, buf, sizeof(buf)), "late_fn") == 0,
	      "late JIT: the final read takes the unterminated line (late_fn)");
	check(symbolize_jit_late(s, pid, 0, code + 0x100, false) &&
	              strcmp(name_at(s, pid, 0, code + 0x100, buf, sizeof(buf)), want) == 0,
	      "late JIT: an address of the page that no entry covers stays late ([perf-PID.map])");

	/* Rewritten whole, as jcmd Compiler.perfmap does. */
	snprintf(text, sizeof(text), "0x%016lx 0x0000000000000200 double Work.hot(int)\r\n",
	         (unsigned long)code);
	write_file(path, text);
	check(symbolize_jit_refresh(s, pid, 0, false) == 1 &&
	              !symbolize_jit_late(s, pid, 0, code + 0x100, false) &&
	              strcmp(name_at(s, pid, 0, code + 0x100, buf, sizeof(buf)),
	                     "double Work.hot") == 0,
	      "late JIT: a rewritten map (0x, CRLF) is read again (double Work.hot)");

	/* Hostile files: a symbolic link is not followed, a FIFO not read
	 * (nor waited on); the entries read so far stay. */
	unlink(path);
	if (symlink("/etc/hostname", path) == 0) {
		check(symbolize_jit_refresh(s, pid, 0, true) == 0 &&
		              strcmp(name_at(s, pid, 0, code, buf, sizeof(buf)),
		                     "double Work.hot") == 0,
		      "late JIT: a symbolic link as the map is not followed");
		unlink(path);
	}
	if (mkfifo(path, 0600) == 0) {
		check(symbolize_jit_refresh(s, pid, 0, true) == 0,
		      "late JIT: a FIFO as the map is not read");
		unlink(path);
	}
	/* Lines that do not parse are skipped, the others kept. */
	snprintf(text, sizeof(text),
	         "zz 10 bad\nffffffffffffff00 1000 wraps\n%lx\n%lx 8\n%lx 8 \t\n%lx 8 ok_fn\n",
	         (unsigned long)code, (unsigned long)code, (unsigned long)code,
	         (unsigned long)code);
	write_file(path, text);
	check(symbolize_jit_refresh(s, pid, 0, false) == 1 &&
	              strcmp(name_at(s, pid, 0, code, buf, sizeof(buf)), "ok_fn") == 0 &&
	              symbolize_jit_late(s, pid, 0, code + 8, false),
	      "late JIT: malformed lines are skipped (ok_fn kept, nothing past it)");
	unlink(path);

	check(!symbolize_gone(s, pid, 0) && symbolize_gone(s, pid, 1),
	      "late JIT: a running process at its generation is not gone, at another it is");
	symbolize_exited(s, pid);
	check(symbolize_gone(s, pid, 0), "late JIT: after its exit event it is gone");
	symbolize_free(s);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- Python code objects ---- */

/* def f(a):       # line 2 (co_firstlineno)
 *     x = a
 *     for i in range(3):
 *         x += i
 *     return x
 * f.__code__.co_linetable from python3.11, and co_lines() as (first code
 * unit, line) for each range (bytes / 2). */
static const uint8_t py_linetable[] = {
        0x80, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xdd, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58, 0x8c,
        0x58, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0x88, 0x01, 0xd8, 0x08,
        0x09, 0x88, 0x51, 0x89, 0x06, 0x88, 0x01, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x80, 0x48};
static const struct {
	uint32_t from, to, line;
} py_lines[] = {{0, 1, 2}, {1, 3, 3}, {3, 20, 4}, {20, 26, 5}, {26, 28, 6}};

struct py_image {
	uint8_t mem[2048];
	uint64_t base;
};

static int py_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct py_image *m = ctx;
	if (addr < m->base || addr - m->base > sizeof(m->mem) ||
	    len > sizeof(m->mem) - (addr - m->base))
		return -EFAULT;
	memcpy(buf, m->mem + (addr - m->base), len);
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A compact str at off: kind 1 (ascii or Latin-1), 2 or 4. */
static void py_str(struct py_image *m, size_t off, const void *chars, size_t n, unsigned kind,
                   bool ascii)
{
	uint8_t *s = m->mem + off;
	uint32_t state = kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0) | 1u << 7;
	put64(s + 16, n);
	memcpy(s + 32, &state, 4);
	memcpy(s + (ascii ? 48 : 72), chars, n * kind);
}

#define PY_TYPE 0x7f0000abc000ull

static void py_code(struct py_image *m)
{
	memset(m->mem, 0, sizeof(m->mem));
	m->base = 0x500000;
	put64(m->mem + 8, PY_TYPE);
	int32_t first = 2;
	memcpy(m->mem + 72, &first, 4);
	put64(m->mem + 112, m->base + 256);
	put64(m->mem + 128, m->base + 512);
	put64(m->mem + 136, m->base + 1024);
	py_str(m, 256, "/usr/lib/python3.11/json/decoder.py", 35, 1, true);
	py_str(m, 512, "JSONDecoder.raw_decode", 22, 1, true);
	put64(m->mem + 1024 + 16, sizeof(py_linetable));
	memcpy(m->mem + 1024 + 32, py_linetable, sizeof(py_linetable));
}

static void check_python(void)
{
	const struct symbolize_python_layout *l = symbolize_python_layout(3, 11);
	struct symbolize_pycode c;
	struct py_image m;
	int rc;

	check(l && !symbolize_python_layout(3, 12) && !symbolize_python_layout(2, 7),
	      "python: a layout for 3.11 only");
	if (!l)
		return;
	int bad = 0;
	for (size_t r = 0; r < sizeof(py_lines) / sizeof(py_lines[0]); r++)
		for (uint32_t i = py_lines[r].from; i < py_lines[r].to; i++)
			bad += symbolize_python_line(py_linetable, sizeof(py_linetable), 2, i) !=
			       py_lines[r].line;
	check(bad == 0, "python: every instruction's line is co_lines()'s");
	check(symbolize_python_line(py_linetable, sizeof(py_linetable), 2, 28) == 0 &&
	              symbolize_python_line(py_linetable, 5, 2, 27) == 0,
	      "python: no line past the table, or in a table cut short");

	py_code(&m);
	rc = symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c);
	uint64_t h = symbolize_python_check_head(2, m.base + 256, m.base + 512, m.base + 1024);
	h = symbolize_python_str_digest(h, 22, true, (const uint8_t *)"JSONDecoder.raw_decode");
	h = symbolize_python_str_digest(h, 35, true,
	                                (const uint8_t *)"/usr/lib/python3.11/json/decoder.py");
	check(rc == 0 && strcmp(c.qualname, "JSONDecoder.raw_decode") == 0 &&
	              strcmp(c.filename, "/usr/lib/python3.11/json/decoder.py") == 0 &&
	              c.firstlineno == 2 && c.linetable_len == sizeof(py_linetable) &&
	              c.check == (uint32_t)h,
	      "python: a code object's names, first line, line table and check");
	uint32_t first_check = rc == 0 ? c.check : 0;
	if (rc == 0)
		symbolize_pycode_clear(&c);
	/* Another code object at the same address, its strings at the same
	 * addresses (as pymalloc reuses them): the names differ, so does the
	 * check. */
	const char *other[][2] = {{"JSONDecoder.raw_decodf", "/usr/lib/python3.11/json/decoder.py"},
	                          {"JSONDecoder.raw_decode", "/usr/lib/python3.11/json/encoder.py"},
	                          {"g_5", "/usr/lib/python3.11/json/decoder.py"}};
	int same = 0;
	for (int k = 0; k < 3; k++) {
		py_code(&m);
		memset(m.mem + 256, 0, 256);
		memset(m.mem + 512, 0, 256);
		py_str(&m, 256, other[k][1], strlen(other[k][1]), 1, true);
		py_str(&m, 512, other[k][0], strlen(other[k][0]), 1, true);
		if (symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == 0) {
			same += c.check == first_check;
			symbolize_pycode_clear(&c);
		} else {
			same++;
		}
	}
	check(same == 0, "python: a code object reusing another's address and strings' addresses "
	                 "gets another check when a name's first or last 32 bytes differ");

	const uint8_t latin1[] = {'c', 'a', 'f', 0xe9};
	const uint16_t ucs2[] = {0x394, 'x'};
	const uint32_t ucs4[] = {0x1f600, 'y'};
	const char *want[] = {"caf\xc3\xa9", "\xce\x94x", "\xf0\x9f\x98\x80y"};
	const void *chars[] = {latin1, ucs2, ucs4};
	const size_t lens[] = {4, 2, 2};
	const unsigned kinds[] = {1, 2, 4};
	for (int k = 0; k < 3; k++) {
		py_code(&m);
		memset(m.mem + 512, 0, 256);
		py_str(&m, 512, chars[k], lens[k], kinds[k], false);
		rc = symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c);
		char what[64];
		snprintf(what, sizeof(what), "python: a name of kind %u becomes UTF-8", kinds[k]);
		check(rc == 0 && strcmp(c.qualname, want[k]) == 0, what);
		if (rc == 0)
			symbolize_pycode_clear(&c);
	}

	py_code(&m);
	check(symbolize_python_read_code(l, PY_TYPE + 8, py_read, &m, m.base, &c) == -EINVAL,
	      "python: refused: not of PyCode_Type");
	py_code(&m);
	m.mem[512 + 32] &= (uint8_t) ~(1u << 5);
	check(symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == -EINVAL,
	      "python: refused: a name not compact");
	py_code(&m);
	put64(m.mem + 512 + 16, 100000);
	check(symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == -E2BIG,
	      "python: refused: a name over 1024 characters");
	py_code(&m);
	put64(m.mem + 1024 + 16, 1u << 20);
	check(symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == -E2BIG,
	      "python: refused: a line table over 64 KiB");
	py_code(&m);
	put64(m.mem + 112, 0x10);
	check(symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == -EFAULT,
	      "python: refused: a name that cannot be read");
	py_code(&m);
	py_str(&m, 512, "a\0b", 3, 1, true);
	check(symbolize_python_read_code(l, PY_TYPE, py_read, &m, m.base, &c) == -EINVAL,
	      "python: refused: a NUL inside a name");
}

/* The forget hook's calls. */
static struct {
	const void *module;
	unsigned long long dev, ino;
} forgot[16];
static size_t nforgot;

static void on_forget(void *ctx, const void *module, unsigned long long dev, unsigned long long ino)
{
	(void)ctx;
	if (nforgot < sizeof(forgot) / sizeof(forgot[0]))
		forgot[nforgot] = (__typeof__(forgot[0])){module, dev, ino};
	nforgot++;
}

/* A child running sleep 30 (with LD_PRELOAD=preload unless NULL),
 * snapshotted in s once it runs sleep (and maps preload); its program's
 * module and file in *mod, *dev, *ino.  Returns its pid, or -1. */
static pid_t start_sleep(struct symbolize *s, const char *preload, const void **mod,
                         unsigned long long *dev, unsigned long long *ino)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	wait_exe(pid, "sleep");
	for (int i = 0; i < 500 && preload && !maps_file(pid, preload); i++)
		sleep_ms(10);
	*mod = NULL;
	if (symbolize_snapshot(s, pid, 0) == 0)
		*mod = symbolize_exe_module(s, pid, dev, ino);
	return pid;
}

static void stop(struct symbolize *s, pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	symbolize_exited(s, pid);
	symbolize_reap(s, pid);
}

static void check_sweep(void)
{
	struct symbolize *s = symbolize_new();
	struct symbolize_hooks h = {.forget = on_forget};
	struct symbolize_stats st;
	unsigned long long dev = 0, ino = 0;
	const void *mod;
	char buf[256];
	const int64_t hour = 3600ll * 1000000000ll;

	if (!s) {
		failures++;
		return;
	}
	symbolize_set_hooks(s, &h);
	pid_t me = getpid();
	check(symbolize_snapshot(s, me, 0) == 0, "sweep: this process is snapshotted");
	pid_t pid = start_sleep(s, NULL, &mod, &dev, &ino);
	check(pid > 0 && mod && ino, "sweep: a child running sleep is snapshotted");
	check(symbolize_sweep(s, 0) == 0 && symbolize_sweep(s, 0) == 0 && nforgot == 0,
	      "sweep: nothing is freed while both live (grace 0)");
	stop(s, pid);
	check(symbolize_sweep(s, 0) == 1, "sweep: once sleep is reaped, its module alone is freed");
	check(nforgot == 1 && forgot[0].module == mod && forgot[0].dev == dev &&
	              forgot[0].ino == ino,
	      "sweep: the forget hook is told the module and its file, once");
	check(symbolize_sweep(s, 0) == 0, "sweep: a second sweep finds nothing more");
	check(strcmp(name_at(s, me, 0, (uintptr_t)exec_marker, buf, sizeof(buf)), "exec_marker") ==
	              0,
	      "sweep: this process is still named (exec_marker)");

	/* Grace: kept for an hour after its last use, freed at once with 0. */
	symbolize_get_stats(s, &st);
	uint64_t opened = st.modules;
	pid = start_sleep(s, NULL, &mod, &dev, &ino);
	symbolize_get_stats(s, &st);
	check(pid > 0 && mod && st.modules == opened + 1,
	      "sweep: a new sleep opens its file again");
	stop(s, pid);
	check(symbolize_sweep(s, hour) == 0 && symbolize_sweep(s, hour) == 0,
	      "sweep: within the grace period, an unused module is kept");
	pid = start_sleep(s, NULL, &mod, &dev, &ino);
	symbolize_get_stats(s, &st);
	check(pid > 0 && mod && st.modules == opened + 1,
	      "sweep: a module kept by the grace period is not opened again");
	stop(s, pid);
	check(symbolize_sweep(s, 0) == 0,
	      "sweep: a module mapped since the last sweep is kept by that sweep");
	check(symbolize_sweep(s, 0) == 1 && nforgot == 2 && forgot[1].module == mod,
	      "sweep: and freed by the next, past the grace period");
	symbolize_get_stats(s, &st);
	check(st.modules_freed == 2, "sweep: two modules freed in all");

	/* Layouts: sleep's, taken from a sleep that preloads libanl (named
	 * its loader here: with no loader's list, only the program, loader
	 * and vDSO are kept), keeps libanl, which no other process maps, as
	 * long as sleep's module is kept. */
	const char *anl = "/usr/lib/x86_64-linux-gnu/libanl.so.1";
	struct stat ast;
	if (stat(anl, &ast) < 0) {
		printf("SKIP: sweep: no %s for the layout checks\n", anl);
		symbolize_free(s);
		return;
	}
	const void *mod2;
	unsigned long long adev = ((unsigned long long)major(ast.st_dev) << 20) | minor(ast.st_dev);
	pid = start_sleep(s, anl, &mod, &dev, &ino);
	const void *lib = pid > 0 ? symbolize_maps_file(s, pid, adev, ast.st_ino) : NULL;
	check(pid > 0 && mod && lib && symbolize_keep_layout(s, pid, mod, lib, NULL, 0) == 0,
	      "sweep: a layout of sleep is kept, naming libanl");
	pid_t other = start_sleep(s, NULL, &mod2, &dev, &ino);
	check(other > 0 && mod2 == mod, "sweep: a second sleep, without libanl, shares the module");
	stop(s, pid);
	size_t told = nforgot;
	check(symbolize_sweep(s, 0) == 0 && symbolize_sweep(s, 0) == 0 && nforgot == told,
	      "sweep: while a sleep lives, libanl, which only its layout names, is kept");
	stop(s, other);
	check(symbolize_sweep(s, 0) == 2 && nforgot == told + 2,
	      "sweep: once no sleep lives, sleep and libanl are freed together");
	symbolize_free(s);
}

/* The cache of resolved addresses: a function's addresses share one copy
 * of its name; a sweep empties a kept module's cache past
 * SYMBOLIZE_CACHE_MAX, and the addresses resolve as before after it. */
static void check_cache_bound(void)
{
	enum { N = SYMBOLIZE_CACHE_MAX + 500 };
	const int64_t hour = 3600ll * 1000000000ll;
	struct symbolize *s = symbolize_new();
	struct symbolize_stats st;
	struct store_frame f, g;
	static char names[N][64];
	pid_t me = getpid();

	if (!s || symbolize_snapshot(s, me, 0) < 0) {
		check(false, "cache: this process is snapshotted");
		symbolize_free(s);
		return;
	}
	uintptr_t at = (uintptr_t)check_cache_bound;
	check(symbolize_user_gen(s, me, 0, at, false, &f, 1) == 1 &&
	              symbolize_user_gen(s, me, 0, at + 4, false, &g, 1) == 1 && f.name == g.name &&
	              f.name_len == strlen("check_cache_bound") &&
	              memcmp(f.name, "check_cache_bound", f.name_len) == 0,
	      "cache: two addresses of one function share its name");
	/* N bytes of libc's text, from qsort on: more addresses than the bound. */
	uintptr_t base = (uintptr_t)qsort;
	bool named = true;
	for (size_t k = 0; k < N; k++) {
		if (symbolize_user_gen(s, me, 0, base + k, false, &f, 1) < 1) {
			named = false;
			break;
		}
		snprintf(names[k], sizeof(names[k]), "%.*s", (int)f.name_len, f.name);
	}
	check(named, "cache: the addresses resolve");
	symbolize_get_stats(s, &st);
	check(st.caches_emptied == 0, "cache: nothing is emptied between sweeps");
	check(symbolize_sweep(s, hour) == 0, "cache: the sweep frees no module (all in use)");
	symbolize_get_stats(s, &st);
	check(st.caches_emptied == 1 && st.addrs_cached_max >= N && st.addrs_cached < 16,
	      "cache: the sweep empties the cache past the bound, and that one only");
	size_t same = 0;
	for (size_t k = 0; k < N; k++) {
		char buf[64];
		if (symbolize_user_gen(s, me, 0, base + k, false, &f, 1) == 1) {
			snprintf(buf, sizeof(buf), "%.*s", (int)f.name_len, f.name);
			same += strcmp(buf, names[k]) == 0;
		}
	}
	check(same == N, "cache: after it, every address gets the name it had");
	/* Resolved again, past the bound again: the next sweep empties it
	 * again, and one below it is left alone. */
	symbolize_sweep(s, hour);
	symbolize_get_stats(s, &st);
	check(st.caches_emptied == 2, "cache: filled again, it is emptied again");
	for (size_t k = 0; k < 100; k++)
		symbolize_user_gen(s, me, 0, base + k, false, &f, 1);
	symbolize_sweep(s, hour);
	symbolize_get_stats(s, &st);
	check(st.caches_emptied == 2 && st.addrs_cached >= 100,
	      "cache: a cache below the bound is kept");
	symbolize_free(s);
}

/* Python code objects of a process are dropped from the cache by the
 * first sweep after it is reaped, not kept until the cache's bound. */
static void check_python_prune(void)
{
	const int64_t hour = 3600ll * 1000000000ll;
	struct symbolize_python_stats ps;

	if (access("/usr/bin/python3", X_OK) != 0) {
		printf("SKIP: python prune: no /usr/bin/python3\n");
		return;
	}
	struct symbolize *s = symbolize_new();
	pid_t pid = s ? fork() : -1;
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", "-c", "import time; time.sleep(30)",
		      (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		check(false, "python prune: a python3 is started");
		symbolize_free(s);
		return;
	}
	wait_exe(pid, "python3");
	/* its libraries mapped (the loader maps libc before python3 runs) */
	for (int i = 0; i < 1000 && !maps_file(pid, "/libc.so"); i++)
		sleep_ms(10);
	sleep_ms(200);
	check(symbolize_snapshot(s, pid, 0) == 0, "python prune: python3 is snapshotted");
	/* A code object at an address it has not mapped: not named, but its
	 * entry (pid, code, check) is cached all the same. */
	check(symbolize_python_frame(s, pid, 0, 0x1000, 7, 0, NULL) == 1,
	      "python prune: a frame of python3 is named");
	symbolize_python_get_stats(s, &ps);
	check(ps.cached == 1 && ps.reads == 1, "python prune: its code object is cached");
	symbolize_sweep(s, hour);
	symbolize_python_get_stats(s, &ps);
	check(ps.cached == 1, "python prune: a sweep keeps it while python3 lives");
	stop(s, pid);
	symbolize_sweep(s, hour);
	symbolize_python_get_stats(s, &ps);
	check(ps.cached == 0, "python prune: the sweep after python3 is reaped drops it");
	symbolize_free(s);
}

/* symbolize_user_files(): one token and the same offset for one file's
 * code in any process at any address, another for another file, the
 * "[unknown]" token for a pid never seen and for an address outside the
 * mappings once the process's perf map was found missing, NULL before. */
static void check_user_files(const char *self)
{
	struct symbolize *s = symbolize_new();
	const pid_t a = 3999901, b = 3999902, c = 3999903, unseen = 3999904;
	const char *other = "/bin/true";
	char path[64];

	if (!s) {
		check(false, "user_files: symbolize_new");
		return;
	}
	for (pid_t p = a; p <= c; p++) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)p);
		unlink(path);
	}
	check(symbolize_offline_map(s, a, 0x400000, 0x500000, 0, self, NULL, 0, NULL) == 0 &&
	              symbolize_offline_map(s, b, 0x7f0000000000, 0x7f0000100000, 0x2000, self,
	                                    NULL, 0, NULL) == 0 &&
	              symbolize_offline_map(s, c, 0x400000, 0x500000, 0, other, NULL, 0, NULL) == 0,
	      "user_files: three offline processes mapped");
	const uint64_t in_a[2] = {0x403456, 0x10}, in_b[1] = {0x7f0000001456}, in_c[1] = {0x403456};
	const void *ma[2], *mb[1], *mc[1], *mu[1];
	uint64_t oa[2], ob[1], oc[1], ou[1];
	symbolize_user_files(s, a, in_a, 2, ma, oa);
	symbolize_user_files(s, b, in_b, 1, mb, ob);
	symbolize_user_files(s, c, in_c, 1, mc, oc);
	symbolize_user_files(s, unseen, in_a, 1, mu, ou);
	check(ma[0] && ma[0] == mb[0] && oa[0] == 0x3456 && ob[0] == 0x3456,
	      "user_files: one file at two addresses of two processes, one token and offset");
	check(mc[0] && mc[0] != ma[0],
	      "user_files: another file at the same address, another token");
	check(!ma[1], "user_files: outside the mappings before the perf map was looked for, NULL");
	check(mu[0] && mu[0] != ma[0], "user_files: a pid never seen, the [unknown] token");
	struct store_frame f, g;
	check(symbolize_user(s, a, 0x403456, false, &f, 1) == 1 &&
	              symbolize_user(s, b, 0x7f0000001456, false, &g, 1) == 1 &&
	              f.name_len == g.name_len && memcmp(f.name, g.name, f.name_len) == 0 &&
	              f.module == g.module,
	      "user_files: the two addresses of one token are named alike");
	check(symbolize_user(s, a, 0x10, false, &f, 1) == 1 && f.name_len == 9 &&
	              memcmp(f.name, "[unknown]", 9) == 0,
	      "user_files: an address outside the mappings is [unknown]");
	symbolize_user_files(s, a, in_a + 1, 1, ma + 1, oa + 1);
	check(ma[1] == mu[0] && oa[1] == 0,
	      "user_files: outside the mappings, no perf map: the [unknown] token");
	symbolize_free(s);
}

int main(int argc, char **argv)
{
	(void)argc;
	/* Not mangled. */
	expect("main", "main");
	expect("hot_leaf", "hot_leaf");
	/* C++ (g++ 12): arguments are cut as stackcollapse-perf does. */
	expect("_ZN9Container4pushEi", "Container::push");
	expect("_ZNSt6vectorIiSaIiEE9push_backEOi",
	       "std::vector<int, std::allocator<int> >::push_back");
	expect("_ZN12_GLOBAL__N_14workEv", "(anonymous namespace)::work");
	/* Rust legacy: the ::h<16 hex> hash is dropped. */
	expect("_ZN4core3fmt5write17h2f6c0d3e1b2a3c4dE", "core::fmt::write");
	/* Rust v0 (rustc 1.95). */
	expect("_RNvCskK7mfDs1mzF_1m3hot", "m::hot");
	expect("_RNvCskK7mfDs1mzF_1m4main", "m::main");
	expect("_RNvMNtCskK7mfDs1mzF_1m5innerINtB2_3AccyE3addB4_", "<m::inner::Acc<u64>>::add");
	expect("_RINvNtCs9ltgdHTiPiY_4core3ptr13drop_in_placeNtNtCsfzc5zEb2YL5_"
	       "5alloc6string6StringEB6_",
	       "core::ptr::drop_in_place::<alloc::string::String>");
	/* Malformed: kept verbatim rather than guessed at. */
	expect("_RNvC", "_RNvC");
	expect("_ZN3foo", "_ZN3foo");
	/* A ';' would split the folded line: it becomes ':'. */
	expect("a;b", "a:b");

	/* ELF symbols: versions dropped, "@plt" kept, in both modes. */
	for (int perf = 0; perf < 2; perf++) {
		expect_sym("__libc_start_main@@GLIBC_2.34", perf, "__libc_start_main");
		expect_sym("__libc_start_main@GLIBC_2.2.5", perf, "__libc_start_main");
		expect_sym("cfree@GLIBC_2.2.5", perf, "cfree");
		expect_sym("fstat@GLIBC_2.33", perf, "fstat");
		expect_sym("_dl_catch_error@GLIBC_PRIVATE", perf, "_dl_catch_error");
		expect_sym("ZSTD_compress@@LIBZSTD_1.0", perf, "ZSTD_compress");
		expect_sym("malloc@plt", perf, "malloc@plt");
		expect_sym("main", perf, "main");
		expect_sym("_ZN9Container4pushEi@plt", perf, "Container::push@plt");
		expect_sym("_ZN9Container4pushEi@@V_1.0", perf, "Container::push");
		/* not a version: kept as it is */
		expect_sym("@weird", perf, "@weird");
		expect_sym("a@b/c", perf, "a@b/c");
		expect_sym("a@", perf, "a@");
		expect_sym("a@@", perf, "a@@");
	}
	/* perf's demangling: no parameters, no return type */
	expect_sym("_ZNSt6vectorIiSaIiEE9push_backEOi@@V1", true,
	           "std::vector<int, std::allocator<int> >::push_back");
	int nplt = check_plt("/proc/self/exe");
	printf("PLT entries checked: %d\n", nplt);
	check(nplt > 0, "plt: at least one PLT entry named");

	char libc_path[PATH_MAX] = "";
	dl_iterate_phdr(libc_object, libc_path);
	if (libc_path[0])
		check_fde_table(libc_path);
	else
		check(false, "fde: libc's path among the loaded objects");

	check_early_exec(argv[0]);
	check_user_files("/proc/self/exe");
	check_sweep();
	check_cache_bound();
	check_late_jit();
	check_trust();
	check_python();
	check_python_prune();

	int nk = check_kernel();
	printf("kernel addresses checked: %d\n", nk);

	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
