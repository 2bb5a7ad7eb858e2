/*
 * reader.c — readers: a RocksDB secondary instance in a private, locked
 * directory of its own, and catching up with the writer.
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
#include <sys/types.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* A reader's directory holds this file, flock'd for as long as the
 * reader is open (the lock goes with the process, however it ends). */
#define OWNER_LOCK  "owner.lock"
#define READER_STEM "flamefs-reader-"

/* Removes the reader directories under base that this user owns and that
 * no live reader holds: a reader killed before store_close leaves its
 * directory behind.  A directory without the lock file yet is being set
 * up by another reader (the file appears only once locked) and is left. */
static void remove_stale_secdirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, READER_STEM, strlen(READER_STEM)) != 0 ||
		    snprintf(path, sizeof(path), "%s/%s", base, e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (strlen(path) + sizeof("/" OWNER_LOCK) > sizeof(path))
			continue;
		strcat(path, "/" OWNER_LOCK);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			path[strlen(path) - strlen("/" OWNER_LOCK)] = '\0';
			remove_tree(path);
		}
		close(fd);
	}
	closedir(d);
}

/* Locks a new file in s->secdir and gives it the name OWNER_LOCK only
 * then, so no other reader can take the directory for a stale one. */
static int lock_secdir(struct rdb *s)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s", s->secdir, OWNER_LOCK) >= (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%s", s->secdir, OWNER_LOCK) >= (int)sizeof(final))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, final) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	s->secdir_lock = fd;
	return 0;
}

int make_secdir(struct rdb *s)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char *p = NULL;

	if (!base || !*base || access(base, W_OK | X_OK) < 0) {
		base = getenv("TMPDIR");
		if (!base || !*base)
			base = "/tmp";
	}
	remove_stale_secdirs(base);
	if (asprintf(&p, "%s/" READER_STEM "XXXXXX", base) < 0)
		return -ENOMEM;
	if (!mkdtemp(p)) {
		int r = -errno;

		seterr(s, "%s: cannot create a reader directory under %s: %s", s->dir, base,
		       strerror(errno));
		free(p);
		return r;
	}
	s->secdir = p;
	int r = lock_secdir(s);
	if (r < 0)
		seterr(s, "%s: cannot lock the reader directory %s: %s", s->dir, p, strerror(-r));
	return r;
}

/* A signature of the set of live SST files: it changes whenever the
 * writer flushes or compacts. */
static uint64_t live_files_sig(struct rdb *s)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(s->db);
	uint64_t sig = 0;
	int n;

	if (!lf)
		return 0;
	n = rocksdb_livefiles_count(lf);
	for (int i = 0; i < n; i++) {
		const char *name = rocksdb_livefiles_name(lf, i);

		sig += XXH3_64bits(name, strlen(name));
	}
	rocksdb_livefiles_destroy(lf);
	return sig ^ (uint64_t)n;
}

/* Opens the reader's secondary instance in s->secdir. */
int open_secondary(struct rdb *s)
{
	const rocksdb_options_t *opts[CF_COUNT_ALL];
	char *rerr = NULL;

	for (int i = 0; i < CF_COUNT_ALL; i++)
		opts[i] = i == CF_COUNTS ? s->countopts : s->cfopts;
	s->db = rocksdb_open_as_secondary_column_families(
	        s->dbopts, s->dir, s->secdir, CF_COUNT_ALL, cf_names, opts, s->cf, &rerr);
	if (rerr) {
		seterr(s, "%s: cannot open store: %s", s->dir, rerr);
		rocksdb_free(rerr);
		s->db = NULL;
		memset(s->cf, 0, sizeof(s->cf));
		return -EIO;
	}
	s->live_sig = live_files_sig(s);
	return 0;
}

/* ---- reading ------------------------------------------------------------------- */

int rdb_refresh(struct store *sbase)
{
	struct rdb *s = rdb_of(sbase);
	char *rerr = NULL;
	uint64_t seq;
	int r;

	if (s->readonly && !s->db) {
		r = open_secondary(s);
		if (r < 0)
			return r;
	} else if (s->readonly) {
		rocksdb_try_catch_up_with_primary(s->db, &rerr);
		if (rerr)
			return rdb_fail(s, rerr, "catching up with the writer");
		/* RocksDB 7.8's secondary keeps entries it replayed from a WAL
		 * in its memtable after the writer has flushed that WAL, so a
		 * count would be merged twice (memtable + SST).  When the SST
		 * set changed, start a fresh secondary instead, which replays
		 * only the live WALs. */
		if (live_files_sig(s) != s->live_sig) {
			close_db(s);
			r = open_secondary(s);
			if (r < 0)
				return r;
		}
	}
	if (s->readonly) {
		r = load_new(s);
		if (r == 0)
			r = keep_load(s);
		if (r < 0)
			return r;
	}
	seq = rocksdb_get_latest_sequence_number(s->db);
	r = seq != s->seq;
	s->seq = seq;
	return r;
}

uint64_t rdb_sequence(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->seq;
}
