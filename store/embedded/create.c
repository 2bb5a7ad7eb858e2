/*
 * create.c — making a store so that a kill at any moment leaves either no
 * store or a whole, empty one.
 *
 * A new store is built in a staging directory beside it, ".NAME.new-XXXXXX"
 * (RocksDB's files, both column families and the meta records, all
 * synced), and renamed to NAME only then; rename(2) also replaces an
 * existing empty directory, whose mode (and, for root, owner) the store
 * takes over.  A staging directory holds "creator.lock", flock'd by its
 * creator (created under another name and renamed once locked); one whose
 * lock no one holds, or that has no lock file and is empty or more than
 * STAGE_ORPHAN_SECONDS old, was left by a killed creator and is removed by
 * the next one.  The lock file moves into the store with the rename and is
 * removed then (or, after a kill, by the next writer).
 *
 * Directories half made by an older flamefs, which created stores in
 * place, are taken over: a directory that holds nothing but RocksDB's own
 * files, no table file and only empty write-ahead logs, holds no data, so a
 * writer empties it and creates the store again (a reader is told that the
 * next import or record will).  Where the rename cannot be done (the
 * directory is a mount point), the store is created in place as before.
 */
#include "embedded-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STAGE_INFIX          ".new-"
#define CREATOR_LOCK         "creator.lock"
#define STAGE_ORPHAN_SECONDS 10

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);

	return n >= m && strcmp(s + n - m, x) == 0;
}

/* 1 when the directory holds only files RocksDB makes while creating a
 * database (or CREATOR_LOCK), no table file and no write-ahead log with
 * anything in it: it holds no data.  0 when not, -errno on failure. */
static int half_made(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = 1, n = 0;

	if (!d)
		return -errno;
	while (r == 1 && (e = readdir(d))) {
		const char *name = e->d_name;
		struct stat st;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		n++;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			r = 0;
		else if (has_suffix(name, ".log"))
			r = st.st_size == 0;
		else if (!strcmp(name, "LOCK") || !strcmp(name, "IDENTITY") ||
		         !strcmp(name, "CURRENT") || !strcmp(name, "LOG") ||
		         !strcmp(name, CREATOR_LOCK) || has_prefix(name, "LOG.old.") ||
		         has_prefix(name, "MANIFEST-") || has_prefix(name, "OPTIONS-") ||
		         has_suffix(name, ".dbtmp"))
			r = 1;
		else
			r = 0;
	}
	closedir(d);
	return r == 1 && n > 0;
}

/* Removes every entry of a directory that half_made() accepted. */
static int empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	}
	closedir(d);
	return r;
}

/* Splits dir into its parent and its last component (trailing slashes
 * dropped).  Returns -EINVAL when the last component is "." or "..". */
static int split_path(const char *dir, char **parent, char **base)
{
	char *p = strdup(dir), *slash;
	size_t n;

	if (!p)
		return -ENOMEM;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	slash = strrchr(p, '/');
	if (!slash) {
		*base = strdup(p);
		*parent = strdup(".");
	} else {
		*base = strdup(slash + 1);
		*slash = '\0';
		*parent = strdup(slash == p ? "/" : p);
	}
	free(p);
	if (!*base || !*parent) {
		free(*base);
		free(*parent);
		return -ENOMEM;
	}
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, "..")) {
		free(*base);
		free(*parent);
		return -EINVAL;
	}
	return 0;
}

/* Removes the staging directories of `base` under `parent` that a killed
 * creator left; returns how many. */
static int remove_stale_stages(const char *parent, const char *base)
{
	DIR *d = opendir(parent);
	struct dirent *e;
	char stem[NAME_MAX + 2];
	int n = 0;

	if (!d)
		return 0;
	snprintf(stem, sizeof(stem), ".%s" STAGE_INFIX, base);
	while ((e = readdir(d))) {
		char path[PATH_MAX], lock[PATH_MAX];
		struct stat st;
		bool stale = false;
		int fd;

		if (!has_prefix(e->d_name, stem) ||
		    snprintf(path, sizeof(path), "%s/%s", parent, e->d_name) >= (int)sizeof(path) ||
		    snprintf(lock, sizeof(lock), "%s/" CREATOR_LOCK, path) >= (int)sizeof(lock) ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			stale = flock(fd, LOCK_EX | LOCK_NB) == 0;
			close(fd);
		} else if (errno == ENOENT) {
			/* killed before the lock file was renamed in: empty, only
			 * the lock file being made (whose flock its creator held,
			 * if alive), or old */
			char tmp[PATH_MAX];
			int tfd = -1;
			if (snprintf(tmp, sizeof(tmp), "%s/." CREATOR_LOCK, path) <
			    (int)sizeof(tmp))
				tfd = open(tmp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
			if (tfd >= 0) {
				stale = flock(tfd, LOCK_EX | LOCK_NB) == 0;
				close(tfd);
			} else {
				stale = dir_is_empty(path) == 1 ||
				        st.st_mtime + STAGE_ORPHAN_SECONDS < time(NULL);
			}
		}
		if (stale) {
			remove_tree(path);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* Locks a new CREATOR_LOCK in stage; returns its fd or -errno. */
static int lock_stage(const char *stage)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s/." CREATOR_LOCK, stage) >= (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/" CREATOR_LOCK, stage) >= (int)sizeof(final))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, final) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The writer's info log is kept outside the store (options.c): removes
 * LOG and LOG.old.* from the store, which a creation or an older flamefs
 * left there. */
static void remove_info_logs(struct rdb *s)
{
	DIR *d;
	struct dirent *e;

	if (!s->logdir || !(d = opendir(s->dir)))
		return;
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, "LOG") || has_prefix(e->d_name, "LOG.old."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Builds a store in a staging directory and renames it to s->dir (which
 * is missing, or an empty directory when `replace` is set).  Returns 0
 * when s->dir now holds a store (this one, or one another process made
 * meanwhile), 1 when the store must be created in place instead (the
 * rename cannot replace s->dir: a mount point), or -errno. */
static int create_staged(struct rdb *s, bool replace)
{
	char *parent = NULL, *base = NULL, *stage = NULL, *dir = s->dir;
	char lock[PATH_MAX];
	struct stat st;
	int lock_fd = -1, r;

	r = split_path(dir, &parent, &base);
	if (r == -EINVAL)
		return 1; /* "x/." and the like: in place */
	if (r < 0)
		goto nomem;
	r = mkdir_p(parent);
	if (r < 0) {
		seterr(s, "%s: cannot create: %s", dir, strerror(-r));
		goto out;
	}
	if (remove_stale_stages(parent, base) > 0)
		snprintf(s->notice, sizeof(s->notice),
		         "%s: removed what an interrupted creation of this store left behind", dir);
	/* A stage stays without its lock file only for a moment, but one that
	 * is empty then is taken for stale: try again if that happened. */
	for (int tries = 0; lock_fd < 0 && tries < 3; tries++) {
		free(stage);
		if (asprintf(&stage, "%s/.%s" STAGE_INFIX "XXXXXX", parent, base) < 0) {
			stage = NULL;
			goto nomem;
		}
		if (!mkdtemp(stage)) {
			r = -errno;
			seterr(s, "%s: cannot create: %s", dir, strerror(errno));
			goto out;
		}
		lock_fd = lock_stage(stage);
		if (lock_fd < 0 && lock_fd != -ENOENT) {
			r = lock_fd;
			seterr(s, "%s: cannot lock %s: %s", dir, stage, strerror(-r));
			goto out_stage;
		}
	}
	if (lock_fd < 0) {
		r = lock_fd;
		seterr(s, "%s: cannot lock %s: %s", dir, stage, strerror(-r));
		goto out;
	}
	/* RocksDB's files and the meta records, synced, in the stage (its
	 * info log too: it is removed after the rename). */
	s->dir = stage;
	if (s->logdir)
		rocksdb_options_set_db_log_dir(s->dbopts, "");
	r = open_db(s, true);
	if (r == 0)
		r = meta_init(s);
	close_db(s);
	if (s->logdir)
		rocksdb_options_set_db_log_dir(s->dbopts, s->logdir);
	s->dir = dir;
	if (r < 0)
		goto out_stage;
	if (replace && stat(dir, &st) == 0) {
		chmod(stage, st.st_mode & 07777);
		/* root keeps the owner; for anyone else chown fails, harmlessly */
		if (geteuid() == 0)
			(void)!chown(stage, st.st_uid, st.st_gid);
	}
	fsync_dir(stage);
	if (rename(stage, dir) < 0) {
		r = -errno;
		if (r == -ENOTEMPTY || r == -EEXIST) {
			r = 0; /* another creator won; open what it made */
		} else if (replace && (r == -EBUSY || r == -EXDEV || r == -EPERM)) {
			r = 1;
		} else {
			seterr(s, "%s: cannot create: rename from %s: %s", dir, stage,
			       strerror(-r));
		}
		goto out_stage;
	}
	fsync_dir(parent);
	/* The lock file came along; a kill before this unlink leaves it in
	 * the store, where the next writer removes it (and the info log). */
	snprintf(lock, sizeof(lock), "%s/" CREATOR_LOCK, dir);
	unlink(lock);
	remove_info_logs(s);
	r = 0;
	goto out;

nomem:
	r = -ENOMEM;
	seterr(s, "%s: out of memory", dir);
	goto out;
out_stage:
	remove_tree(stage);
out:
	if (lock_fd >= 0)
		close(lock_fd);
	free(stage);
	free(parent);
	free(base);
	return r;
}

int prepare_dir(struct rdb *s, int flags)
{
	const char *dir = s->dir;
	bool writer = !s->readonly, create = writer && (flags & STORE_CREATE);
	char path[PATH_MAX];
	struct stat st;
	int r;

	if (stat(dir, &st) < 0) {
		r = -errno;
		if (errno != ENOENT || !create) {
			if (errno == ENOENT)
				seterr(s, "%s: no such store", dir);
			else
				seterr(s, "%s: %s", dir, strerror(errno));
			return r;
		}
		return create_staged(s, false);
	}
	if (!S_ISDIR(st.st_mode)) {
		seterr(s, "%s: not a flamefs store", dir);
		return -ENOTDIR;
	}
	if (snprintf(path, sizeof(path), "%s/CURRENT", dir) >= (int)sizeof(path)) {
		seterr(s, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (access(path, F_OK) == 0) {
		if (writer &&
		    snprintf(path, sizeof(path), "%s/" CREATOR_LOCK, dir) < (int)sizeof(path))
			unlink(path); /* left by a creator killed right after its rename */
		if (writer)
			remove_info_logs(s);
		r = check_cfs(s);
		if (r != -EINVAL)
			return r;
	} else {
		r = dir_is_empty(dir);
		if (r < 0) {
			seterr(s, "%s: %s", dir, strerror(-r));
			return r;
		}
		if (r == 1 && create)
			return create_staged(s, true);
		seterr(s, "%s: not a flamefs store", dir);
		if (r == 1)
			return -EINVAL;
	}
	/* Not a store (the message is set): is it one half made? */
	r = half_made(dir);
	if (r <= 0)
		return -EINVAL;
	if (!writer) {
		seterr(s,
		       "%s: not a flamefs store yet: its creation was interrupted; the next "
		       "import or record finishes it",
		       dir);
		return -EINVAL;
	}
	r = empty_dir(dir);
	if (r < 0) {
		seterr(s, "%s: cannot remove an interrupted creation: %s", dir, strerror(-r));
		return r;
	}
	r = create_staged(s, true);
	if (r >= 0)
		snprintf(s->notice, sizeof(s->notice),
		         "%s: its creation had been interrupted; made it afresh (it held no data)",
		         dir);
	return r;
}
