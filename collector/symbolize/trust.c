/*
 * trust.c — how the symbolizer opens files that another user controls:
 * the files a process maps, the debug files its files name, its perf
 * map, and the files a profile names.  The recorder runs as root, and
 * what a path names can change under it (a FIFO that blocks an open or a
 * read, a device with side effects on open, a symlink to a private file,
 * a sparse file to checksum), so every such open goes through
 * sym_open_checked(): the path is resolved to an O_PATH descriptor first
 * (nothing is opened for reading yet), it must be a regular file of at
 * most the given size, and only then is it reopened read-only and
 * non-blocking through /proc/self/fd.  Paths inside a process's view are
 * resolved under its own root (struct sym_root: /proc/PID/root taken as a
 * directory descriptor, shared by the snapshots and modules of one mount
 * namespace and root) with openat2's RESOLVE_IN_ROOT, so that neither ".."
 * nor a symlink leads out of it.
 */
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <linux/openat2.h>

#include "symbolize-internal.h"

int sym_open_checked(int dirfd, const char *path, unsigned flags, uint64_t max, struct stat *st)
{
	char self[40];
	int pfd, fd;

	if (flags & SYM_OPEN_IN_ROOT) {
		struct open_how how = {
		        .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		while (*path == '/')
			path++; /* relative to the root descriptor */
		pfd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	} else {
		pfd = openat(dirfd, path,
		             O_PATH | O_CLOEXEC | ((flags & SYM_OPEN_FOLLOW) ? 0 : O_NOFOLLOW));
	}
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) < 0) {
		fd = -errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		fd = -EINVAL; /* a FIFO, device, directory or symlink: never opened */
		goto out;
	}
	if ((uint64_t)st->st_size > max) {
		fd = -EFBIG;
		goto out;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	struct stat again;
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino ||
	    !S_ISREG(again.st_mode)) {
		close(fd);
		fd = -ESTALE;
	}
out:
	close(pfd);
	return fd;
}

unsigned long long sym_kdev(dev_t d)
{
	/* The kernel's own encoding, as /proc/PID/maps, PROCMAP_QUERY and
	 * the BPF side give a device. */
	return ((unsigned long long)major(d) << 20) | minor(d);
}

bool sym_plain_name(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

bool sym_path_has_dotdot(const char *path)
{
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += n;
		c += *c == '/';
	}
	return false;
}

/* ---- process roots ------------------------------------------------------ */

struct sym_root *sym_root_get(struct sym_root *r)
{
	if (r)
		r->refs++;
	return r;
}

void sym_root_put(struct sym_root *r)
{
	/* The symbolizer's list holds one reference of its own: the last is
	 * dropped by sym_roots_prune() or symbolize_free(). */
	if (r && r->refs > 0)
		r->refs--;
}

int sym_root_of(struct symbolize *s, pid_t pid, struct sym_root **out)
{
	char path[48];
	struct stat ns, st;
	int fd, rc;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &ns) < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	for (struct sym_root *r = s->roots; r; r = r->next) {
		if (r->ns == (unsigned long long)ns.st_ino && r->dev == st.st_dev &&
		    r->ino == st.st_ino) {
			close(fd);
			*out = sym_root_get(r);
			return 0;
		}
	}
	struct sym_root *r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->fd = fd;
	r->ns = (unsigned long long)ns.st_ino;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	r->refs = 2; /* the list's and the caller's */
	r->next = s->roots;
	s->roots = r;
	*out = r;
	return 0;
}

void sym_roots_prune(struct symbolize *s, bool all)
{
	for (struct sym_root **pp = &s->roots; *pp;) {
		struct sym_root *r = *pp;
		if (!all && r->refs > 1) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		close(r->fd);
		free(r);
	}
}
