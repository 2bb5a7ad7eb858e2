/*
 * debpkg.c — on Debian, the package that would hold a module's debug
 * info, for the messages that say why frames have no function name.
 *
 * The module's owner comes from dpkg's file lists (/var/lib/dpkg/info/
 * *.list), read once per process and kept, so that asking for many
 * modules costs one read, not one `dpkg -S` each.  The owner is named only
 * when the file on this machine is the one recorded: same build id where
 * one was recorded.  Debian's debug packages are named after a binary
 * package: PKG-dbgsym (made by debhelper, in the debug archive) or, for a
 * few, PKG-dbg or SRC-dbg (in the main archive: libc6-dbg, python3.11-dbg
 * for python3.11-minimal's interpreter).  Which of them this machine has
 * installed or can install is asked of `apt-cache policy` once per call,
 * for every name still unknown, and kept.  The quick budget (the end line
 * of an import or a recording) asks only when apt answers from its binary
 * cache: without one (Docker's images turn it off) apt-cache parses every
 * package list at each run, which can cost more than the import itself.
 *
 * Process-wide caches without a lock: call from one thread at a time.
 */
#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <libelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize.h"

extern char **environ;

#define DPKG_INFO   "/var/lib/dpkg/info"
#define DPKG_STATUS "/var/lib/dpkg/status"

/* One package's file list, "\n" + the file + "\n" when it did not end in
 * one, so that "\n/path\n" finds a whole line. */
struct plist {
	char *pkg; /* without ":arch" */
	char *text;
	size_t len;
};

/* What apt says of one debug package name. */
enum { APT_ABSENT = 0, APT_AVAILABLE = 1, APT_INSTALLED = 2 };
struct aptname {
	char *name;
	int state;
};

static struct {
	bool loaded; /* lists and status read (or found missing) */
	struct plist *lists;
	size_t nlists;
	char *status; /* dpkg's status file, "\n"-prefixed; NULL when none */
	size_t status_len;
	bool no_apt; /* apt-cache could not be run */
	struct aptname *apt;
	size_t napt, apt_cap;
} db;

/* Reads a whole file into a malloc'd buffer that starts with '\n' and
 * ends with '\n'. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t n = 1;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 30))
		goto out;
	buf = malloc((size_t)st.st_size + 3);
	if (!buf)
		goto out;
	buf[0] = '\n';
	while (n < (size_t)st.st_size + 1) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (buf[n - 1] != '\n')
		buf[n++] = '\n';
	buf[n] = '\0';
	*len = n;
out:
	close(fd);
	return buf;
}

static void load_db(void)
{
	DIR *d;
	struct dirent *e;

	if (db.loaded)
		return;
	db.loaded = true;
	db.status = slurp(DPKG_STATUS, &db.status_len);
	if (!(d = opendir(DPKG_INFO)))
		return;
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		if (nl <= 5 || strcmp(e->d_name + nl - 5, ".list") != 0)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), DPKG_INFO "/%s", e->d_name) >= (int)sizeof(path))
			continue;
		struct plist *nlp = realloc(db.lists, (db.nlists + 1) * sizeof(*nlp));
		if (!nlp)
			break;
		db.lists = nlp;
		struct plist *p = &db.lists[db.nlists];
		p->text = slurp(path, &p->len);
		p->pkg = strndup(e->d_name, nl - 5);
		if (!p->text || !p->pkg) {
			free(p->text);
			free(p->pkg);
			continue;
		}
		char *colon = strchr(p->pkg, ':');
		if (colon)
			*colon = '\0';
		db.nlists++;
	}
	closedir(d);
}

/* The package whose list holds `path`, or NULL. */
static const char *list_owner(const char *path)
{
	size_t pl = strlen(path);
	char *needle = malloc(pl + 3);
	const char *owner = NULL;

	if (!needle)
		return NULL;
	needle[0] = '\n';
	memcpy(needle + 1, path, pl);
	needle[pl + 1] = '\n';
	for (size_t i = 0; i < db.nlists && !owner; i++)
		if (memmem(db.lists[i].text, db.lists[i].len, needle, pl + 2))
			owner = db.lists[i].pkg;
	free(needle);
	return owner;
}

/* The owner of `path` under its own name, its real path, or the other
 * name of a merged /usr (dpkg lists /lib/x86_64-linux-gnu/libc.so.6; a
 * process maps /usr/lib/x86_64-linux-gnu/libc.so.6). */
static const char *owner_of(const char *path)
{
	static const char *const merged[] = {"/lib/",    "/lib32/", "/lib64/",
	                                     "/libx32/", "/bin/",   "/sbin/"};
	char real[PATH_MAX], other[PATH_MAX];
	const char *names[2] = {path, realpath(path, real) ? real : NULL};

	for (int k = 0; k < 2; k++) {
		const char *p = names[k], *o;
		if (!p)
			continue;
		if ((o = list_owner(p)))
			return o;
		for (size_t i = 0; i < sizeof(merged) / sizeof(merged[0]); i++) {
			size_t ml = strlen(merged[i]);
			if (strncmp(p, merged[i], ml) == 0)
				snprintf(other, sizeof(other), "/usr%s", p);
			else if (strncmp(p, "/usr", 4) == 0 && strncmp(p + 4, merged[i], ml) == 0)
				snprintf(other, sizeof(other), "%s", p + 4);
			else
				continue;
			if ((o = list_owner(other)))
				return o;
		}
	}
	return NULL;
}

/* The Source: of binary package `pkg` in dpkg's status (without its
 * version) into out, or pkg itself when it has none. */
static void source_of(const char *pkg, char *out, size_t size)
{
	snprintf(out, size, "%s", pkg);
	if (!db.status)
		return;
	char needle[256];
	int nl = snprintf(needle, sizeof(needle), "\nPackage: %s\n", pkg);
	if (nl < 0 || nl >= (int)sizeof(needle))
		return;
	const char *st = memmem(db.status, db.status_len, needle, (size_t)nl);
	if (!st)
		return;
	const char *end = memmem(st + 1, db.status_len - (size_t)(st + 1 - db.status), "\n\n", 2);
	size_t left = end ? (size_t)(end - st) : db.status_len - (size_t)(st - db.status);
	const char *src = memmem(st, left, "\nSource: ", 9);
	if (!src)
		return;
	src += 9;
	size_t sl = strcspn(src, " \n");
	if (sl > 0 && sl < size)
		snprintf(out, size, "%.*s", (int)sl, src);
}

/* The GNU build id of the ELF file at path into id (at most 64 bytes);
 * its length, or 0 when it has none or is not a readable ELF file. */
static size_t file_build_id(const char *path, uint8_t id[64])
{
	/* The path comes from a store: a FIFO or a device must not block or
	 * be read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && elf_version(EV_CURRENT) != EV_NONE) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *bid;
		ssize_t n =
		        elf && elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &bid) : -1;
		if (n > 0 && n <= 64) {
			memcpy(id, bid, (size_t)n);
			got = (size_t)n;
		}
		if (elf)
			elf_end(elf);
	}
	close(fd);
	return got;
}

static struct aptname *apt_find(const char *name)
{
	for (size_t i = 0; i < db.napt; i++)
		if (strcmp(db.apt[i].name, name) == 0)
			return &db.apt[i];
	return NULL;
}

static struct aptname *apt_add(const char *name)
{
	if (db.napt == db.apt_cap) {
		size_t ncap = db.apt_cap ? db.apt_cap * 2 : 16;
		struct aptname *na = realloc(db.apt, ncap * sizeof(*na));
		if (!na)
			return NULL;
		db.apt = na;
		db.apt_cap = ncap;
	}
	char *copy = strdup(name);
	if (!copy)
		return NULL;
	db.apt[db.napt] = (struct aptname){.name = copy, .state = -1};
	return &db.apt[db.napt++];
}

/* What a line of `apt-cache policy`'s answer for one name says: an
 * installed version (APT_INSTALLED), a candidate (APT_AVAILABLE), or
 * nothing (-1). */
static int apt_line_state(const char *v)
{
	static const char none[] = "(none)";
	size_t vl = strlen(v), nl = sizeof(none) - 1;

	if (vl < 11 || (vl == 11 + nl && memcmp(v + 11, none, nl) == 0))
		return -1;
	if (memcmp(v, "Installed: ", 11) == 0)
		return APT_INSTALLED;
	if (memcmp(v, "Candidate: ", 11) == 0)
		return APT_AVAILABLE;
	return -1;
}

/* Asks `apt-cache policy` about every name in db.apt still unknown
 * (state -1), all in one run.  Names apt does not know stay absent. */
static void apt_ask(long budget_ms)
{
	size_t want = 0;
	for (size_t i = 0; i < db.napt; i++)
		want += db.apt[i].state < 0;
	if (!want || db.no_apt)
		goto settle;
	char **argv = calloc(want + 3, sizeof(*argv));
	size_t envn = 0;
	while (environ[envn])
		envn++;
	char **envp = calloc(envn + 2, sizeof(*envp));
	int pfd[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	if (!argv || !envp || pipe2(pfd, O_CLOEXEC) < 0) {
		free(argv);
		free(envp);
		db.no_apt = true;
		goto settle;
	}
	size_t k = 0;
	argv[k++] = "apt-cache";
	argv[k++] = "policy";
	for (size_t i = 0; i < db.napt; i++)
		if (db.apt[i].state < 0)
			argv[k++] = db.apt[i].name;
	size_t e = 0;
	for (size_t i = 0; i < envn; i++)
		if (strncmp(environ[i], "LC_ALL=", 7) != 0 &&
		    strncmp(environ[i], "LANG=", 5) != 0 &&
		    strncmp(environ[i], "LANGUAGE=", 9) != 0)
			envp[e++] = environ[i];
	envp[e++] = "LC_ALL=C";
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	int rc = posix_spawnp(&pid, "apt-cache", &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	free(argv);
	free(envp);
	if (rc != 0) {
		close(pfd[0]);
		db.no_apt = true;
		goto settle;
	}
	/* apt-cache rebuilds its cache when it has none, which takes seconds
	 * on a busy machine: what it has not said within budget_ms is
	 * not waited for, and no module gets a package then. */
	char *out = NULL;
	size_t olen = 0, ocap = 0;
	bool late = false;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = budget_ms - (long)((t.tv_sec - t0.tv_sec) * 1000 +
		                               (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
		int pr = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			late = true;
			break;
		}
		if (olen + 4096 + 1 > ocap) {
			char *grown = realloc(out, ocap ? ocap * 2 : 16384);
			if (!grown) {
				late = true;
				break;
			}
			out = grown;
			ocap = ocap ? ocap * 2 : 16384;
		}
		ssize_t got = read(pfd[0], out + olen, 4096);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		olen += (size_t)got;
	}
	close(pfd[0]);
	if (late)
		kill(pid, SIGKILL);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (late || !out) {
		free(out);
		db.no_apt = true;
		goto settle;
	}
	out[olen] = '\0';
	struct aptname *cur = NULL;
	for (char *line = out, *next; *line; line = next) {
		size_t ll = strcspn(line, "\n");
		next = line[ll] ? line + ll + 1 : line + ll;
		line[ll] = '\0';
		if (line[0] != ' ' && ll > 1 && line[ll - 1] == ':') {
			line[ll - 1] = '\0';
			char *arch = strchr(line, ':');
			if (arch)
				*arch = '\0';
			cur = apt_find(line);
			if (cur && cur->state < 0)
				cur->state = APT_ABSENT;
			continue;
		}
		const char *v = line + strspn(line, " ");
		if (!cur)
			continue;
		int st = apt_line_state(v);
		if (st > cur->state)
			cur->state = st;
	}
	free(out);
settle:
	for (size_t i = 0; i < db.napt; i++)
		if (db.apt[i].state < 0)
			db.apt[i].state = APT_ABSENT;
}

/* The candidates for one module, best first: PKG-dbg, SRC-dbg, PKG-dbgsym. */
#define NCAND 3
static int candidates(const char *pkg, char cand[NCAND][160])
{
	char src[128];
	int n = 0;

	source_of(pkg, src, sizeof(src));
	snprintf(cand[n++], 160, "%s-dbg", pkg);
	if (strcmp(src, pkg) != 0)
		snprintf(cand[n++], 160, "%s-dbg", src);
	snprintf(cand[n++], 160, "%s-dbgsym", pkg);
	return n;
}

#define APT_PKGCACHE "/var/cache/apt/pkgcache.bin"
#define APT_LISTS    "/var/lib/apt/lists"

/* Whether apt has a binary cache no older than any of its package lists,
 * so that `apt-cache policy` answers from it at once. */
static bool apt_cache_current(void)
{
	struct stat cache, st;
	if (stat(APT_PKGCACHE, &cache) != 0 || !S_ISREG(cache.st_mode))
		return false;
	DIR *d = opendir(APT_LISTS);
	if (!d)
		return true; /* no lists: nothing newer than the cache */
	bool current = true;
	struct dirent *e;
	while (current && (e = readdir(d)) != NULL) {
		if (!strstr(e->d_name, "_Packages"))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_mtime > cache.st_mtime)
			current = false;
	}
	closedir(d);
	return current;
}

void symbolize_debpkg_find(struct symbolize_debpkg *q, size_t n, unsigned budget_ms)
{
	const char **owner = calloc(n ? n : 1, sizeof(*owner));

	for (size_t i = 0; i < n; i++)
		q[i].hint[0] = '\0';
	if (!owner)
		return;
	load_db();
	for (size_t i = 0; i < n; i++) {
		if (!q[i].module || q[i].module[0] != '/' || !db.nlists)
			continue;
		uint8_t id[64];
		size_t il = q[i].build_id_len ? file_build_id(q[i].module, id) : 0;
		if (q[i].build_id_len &&
		    (il != q[i].build_id_len || memcmp(id, q[i].build_id, il) != 0))
			continue; /* not the file recorded, or gone */
		owner[i] = owner_of(q[i].module);
		if (!owner[i])
			continue;
		char cand[NCAND][160];
		int nc = candidates(owner[i], cand);
		for (int c = 0; c < nc; c++)
			if (!apt_find(cand[c]) && !apt_add(cand[c]))
				owner[i] = NULL; /* out of memory: no hint */
	}
	if (budget_ms > SYMBOLIZE_DEBPKG_QUICK_MS || apt_cache_current())
		apt_ask(budget_ms);
	for (size_t i = 0; i < n; i++) {
		if (!owner[i] || db.no_apt)
			continue;
		char cand[NCAND][160];
		int nc = candidates(owner[i], cand), best = -1;
		bool known = true;
		for (int c = 0; c < nc; c++)
			known = known && apt_find(cand[c]) && apt_find(cand[c])->state >= 0;
		if (!known)
			continue; /* apt not asked (quick budget, no cache) */
		for (int c = 0; c < nc; c++) {
			struct aptname *a = apt_find(cand[c]);
			int st = a ? a->state : APT_ABSENT;
			if (st > APT_ABSENT && (best < 0 || st > apt_find(cand[best])->state))
				best = c;
		}
		if (best < 0)
			snprintf(q[i].hint, sizeof(q[i].hint), "%s (not in this archive)",
			         cand[nc - 1]);
		else
			snprintf(q[i].hint, sizeof(q[i].hint), "%s (%s)", cand[best],
			         apt_find(cand[best])->state == APT_INSTALLED ? "installed"
			                                                      : "available");
	}
	free(owner);
}

void symbolize_debpkg_advice(char *buf, size_t size, const struct symbolize_debpkg *q,
                             const uint64_t *weight, size_t n, uint64_t total)
{
	size_t at = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < n && at < size; i++) {
		const char *h = q[i].hint, *paren = strstr(h, " (");
		char pkg[200] = "";
		int pl = paren ? (int)(paren - h) : 0;
		if (paren)
			snprintf(pkg, sizeof(pkg), "%.*s", pl, h);
		const char *how = !paren                               ? ""
		                  : strcmp(paren, " (available)") == 0 ? "install "
		                  : strcmp(paren, " (installed)") == 0 ? "installed: "
		                                                       : "not in this archive: ";
		int k = snprintf(buf + at, size - at, "%s%s (%.1f%%%s%s%s)",
		                 i == 0 ? "most in " : " and ", q[i].module ? q[i].module : "?",
		                 total ? 100.0 * (double)weight[i] / (double)total : 0.0,
		                 paren ? "; " : "", how, pkg);
		if (k < 0)
			break;
		at += (size_t)k;
	}
	if (at >= size)
		buf[size - 1] = '\0';
}
