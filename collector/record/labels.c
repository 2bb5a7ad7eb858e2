/*
 * labels.c — who ran a sample: the labels `record` gives each series
 * (record --labels, --cmdline).
 *
 * The BPF side puts in each aggregation key what decides the labels
 * besides the process: the task's cgroup v2 id and its thread name
 * (profile.h), so counts split exactly by label set.  Here a key becomes
 * its canonical labels (store.h):
 *   - cgroup: the cgroup's path under the cgroup2 mount, without the
 *     leading '/' ("/" for the root).  The id is the kernfs node id of
 *     the cgroup's directory, which is also its file handle: the
 *     directory is opened by handle (open_by_handle_at) and its path
 *     read back from /proc/self/fd; where the kernel cannot open it so,
 *     the mount is walked (name_to_handle_at on each directory), at most
 *     once a drain.  Each id is resolved once (cgroup ids are never
 *     reused); one that cannot be (removed before its drain) is
 *     "[unknown]".
 *   - container: the id in the path's last component shaped like a
 *     runtime's: docker `docker-<id>.scope` and `docker/<id>`,
 *     containerd/CRI `cri-containerd-<id>.scope`, podman
 *     `libpod-<id>.scope`, cri-o `crio-<id>.scope` (id: 12 to 64 hex
 *     digits); absent otherwise.
 *   - thread: the thread's name (comm).
 *   - exe: the executable's path, read from /proc/PID/exe while the
 *     process runs the program of the key's generation, else the path
 *     the symbolizer opened the program by; absent for kernel threads.
 *   - cmdline (--cmdline only): /proc/PID/cmdline, its arguments joined
 *     by spaces, while the process runs that program; absent after.
 *   - span (record --span, even with --no-labels): the name of the
 *     thread's innermost open span, from the BPF side's `span_names` by
 *     the key's span (profile-spans.bpf.h): the string read at the start
 *     probe, through sqlnorm_text() with the span's sql field, or a
 *     number in decimal; "[unknown]" for a name that could not be read
 *     or kept, "[empty]" for an empty one.  Absent outside spans.  Each name is read once and its
 *     entry deleted from the map, which so holds only names not seen yet.
 * Every value goes through store_label_value_clean(): thread names and
 * command lines are anyone's bytes.  Nothing here prints.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "record-internal.h"
#include "sqlnorm.h"

#define CG_BUCKETS   1024u
#define PROC_BUCKETS 1024u
#define SPAN_BUCKETS 1024u
/* Span names kept at most (a server's statements, before normalising, may
 * be many): past it the cache starts again. */
#define SPAN_MAX 65536u
/* Cgroups resolved at most (a long-running recorder on a host that makes
 * and removes containers all day): past it the cache starts again. */
#define CG_MAX 65536u

struct cg_ent {
	struct cg_ent *next;
	uint64_t id;
	char *path;      /* cleaned, or NULL: not resolved */
	char *container; /* cleaned, or NULL: none */
};

struct span_ent {
	struct span_ent *next;
	uint64_t key;
	char *name; /* cleaned */
};

struct proc_ent {
	struct proc_ent *next;
	pid_t pid;
	uint32_t gen;
	char *exe;     /* cleaned, or NULL: none */
	char *cmdline; /* cleaned, or NULL: none (or not asked for) */
};

struct record_labels {
	unsigned want;       /* RECORD_LABEL_* */
	int mount_fd;        /* the cgroup2 mount's root, or -1 */
	char *mount;         /* its path */
	int handle_type;     /* kernfs file handles' type (from the root's) */
	bool by_handle;      /* open_by_handle_at works here */
	uint64_t walked_seq; /* the drain of the last walk, + 1 (0: never) */
	struct cg_ent *cg[CG_BUCKETS];
	size_t ncg;
	struct proc_ent *proc[PROC_BUCKETS];
	struct span_ent *span[SPAN_BUCKETS];
	size_t nspan;
	/* The last key's labels (the drain asks for one series at a time). */
	bool have_last;
	struct profile_key last;
	uint32_t last_gen;
	char *labels;
	uint64_t unresolved; /* cgroup ids that found no path */
};

/* ---- the cgroup2 mount -------------------------------------------------- */

/* The first cgroup2 mount of /proc/self/mounts, malloc'd, or NULL. */
static char *find_cgroup2(void)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[4096], *found = NULL;

	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[PATH_MAX], type[64];
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) != 3 ||
		    strcmp(type, "cgroup2") != 0)
			continue;
		/* Octal escapes (\040 for a space) in the mount point. */
		char *o = dir;
		for (const char *i = dir; *i; o++) {
			if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' &&
			    i[2] <= '7' && i[3] >= '0' && i[3] <= '7') {
				*o = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
				i += 4;
			} else {
				*o = *i++;
			}
		}
		*o = '\0';
		found = strdup(dir);
	}
	fclose(f);
	return found;
}

/* The kernfs handle of an open directory: its node id, the cgroup id. */
static int handle_of(int dirfd, const char *name, uint64_t *id, int *type)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 64];
	} h;
	int mnt;

	h.fh.handle_bytes = 64;
	if (name_to_handle_at(dirfd, name, &h.fh, &mnt, name[0] ? 0 : AT_EMPTY_PATH) < 0)
		return -errno;
	if (h.fh.handle_bytes != sizeof(uint64_t))
		return -EOPNOTSUPP;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	*type = h.fh.handle_type;
	return 0;
}

int record_labels_new(struct record_labels **out, unsigned want)
{
	struct record_labels *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->want = want;
	l->mount_fd = -1;
	if (want & (RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER)) {
		l->mount = find_cgroup2();
		if (l->mount)
			l->mount_fd = open(l->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		uint64_t root;
		if (l->mount_fd >= 0 && handle_of(l->mount_fd, "", &root, &l->handle_type) == 0) {
			l->by_handle = true;
		} else if (l->mount_fd >= 0) {
			close(l->mount_fd);
			l->mount_fd = -1;
		}
		if (l->mount_fd < 0)
			l->want &= ~(RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER);
	}
	*out = l;
	return 0;
}

unsigned record_labels_want(const struct record_labels *l)
{
	return l ? l->want : 0;
}

const char *record_labels_cgroup_mount(const struct record_labels *l)
{
	return l && l->mount_fd >= 0 ? l->mount : NULL;
}

uint64_t record_labels_unresolved(const struct record_labels *l)
{
	return l ? l->unresolved : 0;
}

static void free_cgroups(struct record_labels *l)
{
	for (unsigned i = 0; i < CG_BUCKETS; i++) {
		for (struct cg_ent *e = l->cg[i], *n; e; e = n) {
			n = e->next;
			free(e->path);
			free(e->container);
			free(e);
		}
		l->cg[i] = NULL;
	}
	l->ncg = 0;
}

static void free_proc(struct proc_ent *e)
{
	free(e->exe);
	free(e->cmdline);
	free(e);
}

static void free_spans(struct record_labels *l)
{
	for (unsigned i = 0; i < SPAN_BUCKETS; i++) {
		for (struct span_ent *e = l->span[i], *n; e; e = n) {
			n = e->next;
			free(e->name);
			free(e);
		}
		l->span[i] = NULL;
	}
	l->nspan = 0;
}

void record_labels_free(struct record_labels *l)
{
	if (!l)
		return;
	free_spans(l);
	free_cgroups(l);
	for (unsigned i = 0; i < PROC_BUCKETS; i++)
		for (struct proc_ent *e = l->proc[i], *n; e; e = n) {
			n = e->next;
			free_proc(e);
		}
	if (l->mount_fd >= 0)
		close(l->mount_fd);
	free(l->mount);
	free(l->labels);
	free(l);
}

/* ---- container ids ------------------------------------------------------ */

static size_t hex_run(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
		i++;
	return i;
}

/* The container id in the path component c (n bytes), given the one
 * before it (p, pn bytes; pn 0: none): its start and length, or 0. */
static size_t container_in(const char *p, size_t pn, const char *c, size_t n, const char **id)
{
	static const char *const scopes[] = {"docker-", "cri-containerd-", "libpod-", "crio-"};
	static const char suffix[] = ".scope";
	const size_t sl = sizeof(suffix) - 1;

	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t pl = strlen(scopes[i]);
		if (n > pl + sl && memcmp(c, scopes[i], pl) == 0 &&
		    memcmp(c + n - sl, suffix, sl) == 0) {
			size_t idn = n - pl - sl;
			if (idn >= 12 && idn <= 64 && hex_run(c + pl, idn) == idn) {
				*id = c + pl;
				return idn;
			}
		}
	}
	/* cgroupfs driver: /docker/<id> */
	if (pn == 6 && memcmp(p, "docker", 6) == 0 && n >= 12 && n <= 64 && hex_run(c, n) == n) {
		*id = c;
		return n;
	}
	return 0;
}

/* The innermost container id of cgroup path `path` (no leading '/'),
 * cleaned into *out, or *out NULL when none.  0 or -ENOMEM. */
static int container_of(const char *path, char **out)
{
	const char *id = NULL, *prev = NULL, *c = path;
	size_t idn = 0, pn = 0;

	*out = NULL;
	while (*c) {
		size_t n = strcspn(c, "/");
		const char *got;
		size_t gn = container_in(prev, pn, c, n, &got);
		if (gn) {
			id = got;
			idn = gn;
		}
		prev = c;
		pn = n;
		c += n;
		if (*c == '/')
			c++;
	}
	return id ? store_label_value_clean(id, idn, out) : 0;
}

/* ---- cgroup paths ------------------------------------------------------- */

static struct cg_ent *cg_find(struct record_labels *l, uint64_t id)
{
	for (struct cg_ent *e = l->cg[id % CG_BUCKETS]; e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

/* Adds id's entry with the path `rel` under the mount ("" for the root;
 * NULL: unresolved).  0 or -ENOMEM. */
static int cg_add(struct record_labels *l, uint64_t id, const char *rel, struct cg_ent **out)
{
	if (l->ncg >= CG_MAX)
		free_cgroups(l);
	struct cg_ent *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->id = id;
	if (rel) {
		const char *p = rel[0] ? rel : "/";
		if (store_label_value_clean(p, strlen(p), &e->path) < 0 ||
		    container_of(rel, &e->container) < 0) {
			free(e->path);
			free(e);
			return -ENOMEM;
		}
	}
	e->next = l->cg[id % CG_BUCKETS];
	l->cg[id % CG_BUCKETS] = e;
	l->ncg++;
	*out = e;
	return 0;
}

/* The path of cgroup id under the mount, by its handle: into rel (no
 * leading '/'; "" for the root).  0, or -errno when the kernel cannot
 * open it so (-ESTALE: gone). */
static int path_by_handle(struct record_labels *l, uint64_t id, char *rel, size_t len)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	char link[64], got[PATH_MAX];

	h.fh.handle_bytes = sizeof(uint64_t);
	h.fh.handle_type = l->handle_type;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	int fd = open_by_handle_at(l->mount_fd, &h.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, got, sizeof(got) - 1);
	int e = n < 0 ? -errno : 0;
	close(fd);
	if (e)
		return e;
	got[n] = '\0';
	size_t ml = strlen(l->mount);
	while (ml > 1 && l->mount[ml - 1] == '/')
		ml--;
	if (ml == 1)
		ml = 0; /* mounted at / */
	if (strncmp(got, l->mount, ml) != 0 || (got[ml] != '/' && got[ml] != '\0'))
		return -EXDEV; /* a path outside the mount: not trusted */
	const char *p = got + ml;
	while (*p == '/')
		p++;
	if (strlen(p) >= len)
		return -ENAMETOOLONG;
	strcpy(rel, p);
	return 0;
}

/* Adds every directory under dir (path rel) not known yet, by its
 * handle.  Directories that vanish meanwhile are skipped. */
static int walk(struct record_labels *l, int dirfd, char *rel, size_t rlen, int depth)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dirfd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		size_t nl = strlen(de->d_name);
		if (rlen + 1 + nl + 1 > PATH_MAX)
			continue;
		uint64_t id;
		int type;
		if (handle_of(dirfd, de->d_name, &id, &type) < 0)
			continue;
		size_t was = rlen;
		if (rlen)
			rel[rlen++] = '/';
		memcpy(rel + rlen, de->d_name, nl + 1);
		rlen += nl;
		struct cg_ent *e = cg_find(l, id);
		if (!e)
			rc = cg_add(l, id, rel, &e);
		if (rc == 0 && depth < 64) {
			int sub = openat(dirfd, de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0)
				rc = walk(l, sub, rel, rlen, depth + 1);
		}
		rlen = was;
		rel[rlen] = '\0';
	}
	closedir(d);
	return rc;
}

/* The cgroup entry of id (resolved now if new).  0 or -ENOMEM. */
static int cgroup_of(struct recorder *r, uint64_t id, struct cg_ent **out)
{
	struct record_labels *l = r->labels;
	char rel[PATH_MAX];
	int rc;

	if ((*out = cg_find(l, id)))
		return 0;
	rc = l->by_handle ? path_by_handle(l, id, rel, sizeof(rel)) : -EOPNOTSUPP;
	if (rc == 0)
		return cg_add(l, id, rel, out);
	if (rc != -ESTALE && rc != -ENOENT && l->walked_seq != r->drain_seq + 1) {
		/* No way by handle: walk the whole mount, once a drain. */
		l->walked_seq = r->drain_seq + 1;
		uint64_t root;
		int type;
		if (handle_of(l->mount_fd, "", &root, &type) == 0 && !cg_find(l, root)) {
			struct cg_ent *e;
			if ((rc = cg_add(l, root, "", &e)) < 0)
				return rc;
		}
		int fd = openat(l->mount_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rel[0] = '\0';
		if (fd >= 0 && (rc = walk(l, fd, rel, 0, 0)) < 0)
			return rc;
		if ((*out = cg_find(l, id)))
			return 0;
	}
	/* Gone before its drain: "[unknown]", once. */
	l->unresolved++;
	if ((rc = cg_add(l, id, NULL, out)) < 0)
		return rc;
	return 0;
}

/* ---- process labels ----------------------------------------------------- */

/* A /proc/PID file read whole into buf (at most len - 1 bytes, NUL
 * added): its length, or -errno. */
static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t got = read(fd, buf + n, len - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* pid's exe and command line as of generation gen (looked up once a
 * generation).  0 or -ENOMEM. */
static int proc_of(struct recorder *r, pid_t pid, uint32_t gen, struct proc_ent **out)
{
	struct record_labels *l = r->labels;
	unsigned b = (unsigned)pid % PROC_BUCKETS;
	struct proc_ent *e;
	int rc = 0;

	for (e = l->proc[b]; e; e = e->next)
		if (e->pid == pid && e->gen == gen) {
			*out = e;
			return 0;
		}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->pid = pid;
	e->gen = gen;
	/* The process runs the key's program still when no later exec is
	 * known: then /proc tells its path (the one it was started by, a
	 * hard link's too) and its command line. */
	bool current = symbolize_current_gen(r->sym, pid, gen);
	char buf[STORE_LABEL_VALUE_MAX + 64];
	if (l->want & RECORD_LABEL_EXE) {
		char path[64], exe[PATH_MAX];
		ssize_t n = -1;
		if (current) {
			snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
			n = readlink(path, exe, sizeof(exe) - 1);
		}
		const char *p = NULL;
		size_t pl = 0;
		if (n > 0) {
			exe[n] = '\0';
			char *del = strstr(exe, " (deleted)");
			if (del && del[10] == '\0')
				*del = '\0';
			p = exe;
			pl = strlen(exe);
		} else if ((p = symbolize_process_exe(r->sym, pid, gen))) {
			pl = strlen(p);
		}
		if (p && pl)
			rc = store_label_value_clean(p, pl, &e->exe);
	}
	if (rc == 0 && (l->want & RECORD_LABEL_CMDLINE) && current) {
		ssize_t n = read_proc(pid, "cmdline", buf, sizeof(buf));
		while (n > 0 && buf[n - 1] == '\0')
			n--;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		if (n > 0)
			rc = store_label_value_clean(buf, (size_t)n, &e->cmdline);
	}
	if (rc < 0) {
		free_proc(e);
		return rc;
	}
	e->next = l->proc[b];
	l->proc[b] = e;
	*out = e;
	return 0;
}

void record_labels_forget(struct record_labels *l, pid_t pid)
{
	if (!l)
		return;
	struct proc_ent **pp = &l->proc[(unsigned)pid % PROC_BUCKETS];
	while (*pp) {
		struct proc_ent *e = *pp;
		if (e->pid == pid) {
			*pp = e->next;
			free_proc(e);
		} else {
			pp = &e->next;
		}
	}
	l->have_last = false;
}

/* ---- a key's labels ----------------------------------------------------- */

/* PostgreSQL's lock tag types (LockTagType, lock.h; PostgreSQL 13 to
 * 17) as pg_locks' locktype column names them (LockTagTypeNames). */
static const char *const pg_locktags[] = {
        "relation",   "extend",    "frozenid", "page",     "tuple",    "transactionid",
        "virtualxid", "spectoken", "object",   "userlock", "advisory",
};

/* The text a span_names value names, normalised, into out (size
 * RECORD_SPAN_TEXT); its length. */
static size_t span_text(const struct profile_span_name *v, char *out)
{
	size_t len = v->len < sizeof(v->text) ? v->len : sizeof(v->text) - 1;
	if (v->flags & PROFILE_SPAN_NUM) {
		uint64_t n;
		memcpy(&n, v->text, sizeof(n));
		if ((v->flags & PROFILE_SPAN_PGLOCK) &&
		    n < sizeof(pg_locktags) / sizeof(pg_locktags[0]))
			return (size_t)snprintf(out, RECORD_SPAN_TEXT, "lock-wait %s",
			                        pg_locktags[n]);
		if (v->flags & PROFILE_SPAN_PGLOCK)
			return (size_t)snprintf(out, RECORD_SPAN_TEXT, "lock-wait %llu",
			                        (unsigned long long)n);
		return (size_t)snprintf(out, RECORD_SPAN_TEXT, "%llu", (unsigned long long)n);
	}
	if (v->flags & PROFILE_SPAN_SQL)
		return sqlnorm_text(v->text, len, out, RECORD_SPAN_TEXT);
	memcpy(out, v->text, len);
	out[len] = '\0';
	return len;
}

/* The span label's value for a key's span into *name (owned by l). */
static int span_of(struct recorder *r, uint64_t key, const char **name)
{
	struct record_labels *l = r->labels;
	unsigned b = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) % SPAN_BUCKETS;

	*name = "[unknown]";
	for (struct span_ent *e = l->span[b]; e; e = e->next)
		if (e->key == key) {
			*name = e->name;
			return 0;
		}
	/* A fixed name's text is the spec's; a read one's in `span_names`. */
	const char *fixed = NULL;
	for (size_t i = 0; i < r->opt->nspans && !fixed; i++)
		if (r->opt->spans[i].fixed && record_span_fixed_key(r->opt->spans[i].fixed) == key)
			fixed = r->opt->spans[i].fixed;
	struct profile_span_name v;
	if (!fixed && (key == PROFILE_SPAN_UNKNOWN || r->span_names_fd < 0 ||
	               bpf_map_lookup_elem(r->span_names_fd, &key, &v) < 0))
		return 0; /* not cached: it may yet be read */
	char text[RECORD_SPAN_TEXT];
	size_t len =
	        fixed ? (size_t)snprintf(text, sizeof(text), "%s", fixed) : span_text(&v, text);
	if (len == 0) /* a label value is never empty */
		len = (size_t)snprintf(text, sizeof(text), "[empty]");
	if (l->nspan >= SPAN_MAX)
		free_spans(l);
	struct span_ent *e = calloc(1, sizeof(*e));
	int rc = e ? store_label_value_clean(text, len, &e->name) : -ENOMEM;
	if (rc < 0) {
		free(e);
		return rc;
	}
	e->key = key;
	e->next = l->span[b];
	l->span[b] = e;
	l->nspan++;
	if (!fixed)
		bpf_map_delete_elem(r->span_names_fd, &key);
	*name = e->name;
	return 0;
}

int record_labels_span_name(struct recorder *r, uint64_t key, const char **name)
{
	*name = "[unknown]";
	return r->labels ? span_of(r, key, name) : 0;
}

int record_labels_of(struct recorder *r, const struct profile_key *key, const char **labels)
{
	struct record_labels *l = r->labels;
	struct store_label set[6];
	size_t n = 0;
	char *thread = NULL;
	int rc;

	*labels = NULL;
	if (!l || (!l->want && !key->span))
		return 0;
	if (l->have_last && l->last.pid == key->pid && l->last_gen == key->gen &&
	    l->last.cgroup == key->cgroup && l->last.span == key->span &&
	    memcmp(l->last.comm, key->comm, sizeof(key->comm)) == 0) {
		*labels = l->labels;
		return 0;
	}
	if (l->want & (RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER)) {
		struct cg_ent *cg;
		if ((rc = cgroup_of(r, key->cgroup, &cg)) < 0)
			return rc;
		if (l->want & RECORD_LABEL_CGROUP)
			set[n++] = (struct store_label){STORE_LABEL_CGROUP,
			                                cg->path ? cg->path : "[unknown]"};
		if ((l->want & RECORD_LABEL_CONTAINER) && cg->container)
			set[n++] = (struct store_label){STORE_LABEL_CONTAINER, cg->container};
	}
	if ((l->want & RECORD_LABEL_THREAD) && key->comm[0]) {
		if ((rc = store_label_value_clean(key->comm, strnlen(key->comm, sizeof(key->comm)),
		                                  &thread)) < 0)
			return rc;
		set[n++] = (struct store_label){STORE_LABEL_THREAD, thread};
	}
	if (l->want & (RECORD_LABEL_EXE | RECORD_LABEL_CMDLINE)) {
		struct proc_ent *p;
		if ((rc = proc_of(r, (pid_t)key->pid, key->gen, &p)) < 0) {
			free(thread);
			return rc;
		}
		if (p->exe)
			set[n++] = (struct store_label){STORE_LABEL_EXE, p->exe};
		if (p->cmdline)
			set[n++] = (struct store_label){STORE_LABEL_CMDLINE, p->cmdline};
	}
	if (key->span) {
		const char *name;
		if ((rc = span_of(r, key->span, &name)) < 0) {
			free(thread);
			return rc;
		}
		set[n++] = (struct store_label){RECORD_SPAN_LABEL, name};
	}
	char *made;
	rc = store_labels_make(set, n, &made);
	free(thread);
	if (rc < 0)
		return rc;
	free(l->labels);
	l->labels = made;
	l->last = *key;
	l->last_gen = key->gen;
	l->have_last = true;
	*labels = made;
	return 0;
}
