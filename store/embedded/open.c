/*
 * open.c — opening and closing a store: the directory, the writer's
 * lock, the meta records (schema, bucket size), the column family check,
 * loading what is stored, and the error messages every part leaves.
 */
#include "embedded-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

const char *const cf_names[CF_COUNT_ALL] = {
        "default",
        "counts",
};

void seterr(struct rdb *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
}

/* Turns a RocksDB error string into a message and -EIO; frees it. */
int rdb_fail(struct rdb *s, char *rerr, const char *what)
{
	seterr(s, "%s: %s: %s", s->dir, what, rerr ? rerr : "unknown error");
	rocksdb_free(rerr);
	return -EIO;
}

/* A reader whose secondary instance could not be reopened has no db until
 * the next successful store_refresh(). */
int need_db(struct rdb *s)
{
	if (s->db)
		return 0;
	seterr(s, "%s: store is not open (a refresh failed)", s->dir);
	return -EIO;
}

/* ---- open / close ------------------------------------------------------------- */

/* mkdir -p with mode 0700 for every directory it creates. */
int mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	int r = 0;

	if (!p)
		return -ENOMEM;
	for (char *c = p + 1;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char save = *c;

		*c = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			r = -errno;
			goto out;
		}
		*c = save;
		if (!save)
			break;
	}
out:
	free(p);
	return r;
}

/* 1 when dir has no entries, 0 when it has some, -errno on failure. */
int dir_is_empty(const char *dir)
{
	DIR *d;
	struct dirent *e;
	int r = 1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			r = 0;
			break;
		}
	}
	closedir(d);
	return r;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

void remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Who holds RocksDB's LOCK file: a pid, or 0 when unknown. */
static long lock_holder(const char *dir, const char *rerr)
{
	char path[PATH_MAX];
	struct flock fl;
	int fd;
	long pid = 0;

	/* When this process holds the lock, opening and closing LOCK here
	 * would drop that fcntl lock: never touch the file then. */
	if (strstr(rerr, "lock hold by current process"))
		return (long)getpid();
	if (snprintf(path, sizeof(path), "%s/LOCK", dir) < (int)sizeof(path)) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			memset(&fl, 0, sizeof(fl));
			fl.l_type = F_WRLCK;
			fl.l_whence = SEEK_SET;
			if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
				pid = (long)fl.l_pid;
			close(fd);
		}
	}
	return pid;
}

int meta_get_fixed(struct rdb *s, const char *key, void *out, size_t size, bool *found)
{
	char *rerr = NULL;
	size_t len = 0;
	char *val =
	        rocksdb_get_cf(s->db, s->ropts, s->cf[CF_DEFAULT], key, strlen(key), &len, &rerr);

	if (rerr)
		return rdb_fail(s, rerr, "reading meta");
	*found = val != NULL;
	if (!val)
		return 0;
	if (len != size) {
		rocksdb_free(val);
		seterr(s, "%s: store is damaged: meta %s", s->dir, key + 1);
		return -EIO;
	}
	memcpy(out, val, size);
	rocksdb_free(val);
	return 0;
}

static int meta_get_u32(struct rdb *s, const char *key, uint32_t *v, bool *found)
{
	uint8_t be[4];
	int r = meta_get_fixed(s, key, be, sizeof(be), found);

	if (r == 0 && *found)
		*v = get_be32(be);
	return r;
}

int meta_init(struct rdb *s)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	uint8_t schema[4], bucket[4], id[16];
	char *rerr = NULL;
	int r = 0;

	if (!wb)
		return -ENOMEM;
	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
		r = -errno;
		seterr(s, "%s: getrandom: %s", s->dir, strerror(errno));
		goto out_wb;
	}
	put_be32(schema, STORE_SCHEMA_VERSION);
	put_be32(bucket, STORE_DEFAULT_BUCKET_SECONDS);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_SCHEMA, strlen(META_SCHEMA),
	                          (char *)schema, 4);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_STORE_ID, strlen(META_STORE_ID),
	                          (char *)id, 16);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_BUCKET_SECONDS,
	                          strlen(META_BUCKET_SECONDS), (char *)bucket, 4);
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "writing meta");
out_wb:
	rocksdb_writebatch_destroy(wb);
	return r;
}

/* 1 when no column family holds a key, 0 when one does, -errno. */
static int db_is_empty(struct rdb *s)
{
	int r = 1;

	for (int i = 0; i < CF_COUNT_ALL && r == 1; i++) {
		rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[i]);
		char *rerr = NULL;

		if (!it)
			return -ENOMEM;
		rocksdb_iter_seek_to_first(it);
		if (rocksdb_iter_valid(it))
			r = 0;
		rocksdb_iter_get_error(it, &rerr);
		rocksdb_iter_destroy(it);
		if (rerr)
			return rdb_fail(s, rerr, "reading");
	}
	return r;
}

static int meta_check(struct rdb *s)
{
	uint32_t schema = 0, bucket = 0;
	bool found;
	int r = meta_get_u32(s, META_SCHEMA, &schema, &found);

	if (r < 0)
		return r;
	if (!found) {
		/* Both column families and no key at all: an older flamefs,
		 * killed before the meta records of a store it was creating
		 * in place were written.  The writer finishes it. */
		r = db_is_empty(s);
		if (r < 0)
			return r;
		if (r == 1 && !s->readonly) {
			r = meta_init(s);
			if (r < 0)
				return r;
			snprintf(s->notice, sizeof(s->notice),
			         "%s: its creation had been interrupted; finished it (it held no "
			         "data)",
			         s->dir);
			return meta_check(s);
		}
		if (r == 1)
			seterr(s,
			       "%s: not a flamefs store yet: its creation was interrupted; the "
			       "next "
			       "import or record finishes it",
			       s->dir);
		else
			seterr(s, "%s: not a flamefs store", s->dir);
		return -EINVAL;
	}
	if (schema > STORE_SCHEMA_VERSION) {
		seterr(s, "%s: schema version %u is newer than this flamefs understands (%u)",
		       s->dir, schema, STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (schema < STORE_SCHEMA_OLDEST) {
		seterr(s, "%s: schema version %u is not supported by this flamefs (%u)", s->dir,
		       schema, STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* Schema 1 differs only in having no module references in frame
	 * records: this flamefs reads it as it is, and a writer marks the
	 * store 2 before it can write one.  Schema 2's series records name no
	 * host: a writer marks the store 3 before its first write
	 * (schema_upgrade(), series.c), when it knows the host. */
	if (schema < 2 && !s->readonly) {
		uint8_t v[4];
		char *rerr = NULL;

		put_be32(v, 2);
		rocksdb_put_cf(s->db, s->wopts, s->cf[CF_DEFAULT], META_SCHEMA, strlen(META_SCHEMA),
		               (char *)v, 4, &rerr);
		if (rerr)
			return rdb_fail(s, rerr, "writing meta");
		schema = 2;
	}
	s->schema = schema;
	s->host_from = schema < 3 ? UINT32_MAX : 0;
	r = host_meta_load(s);
	if (r < 0)
		return r;
	r = meta_get_u32(s, META_BUCKET_SECONDS, &bucket, &found);
	if (r < 0)
		return r;
	if (!found || bucket == 0) {
		seterr(s, "%s: store is damaged: no bucket_seconds", s->dir);
		return -EIO;
	}
	s->bucket_seconds = bucket;
	return 0;
}

/* Checks the column families of an existing RocksDB directory. */
int check_cfs(struct rdb *s)
{
	char *rerr = NULL;
	size_t n = 0;
	char **names = rocksdb_list_column_families(s->dbopts, s->dir, &n, &rerr);
	int found = 0;
	bool old = false;

	if (rerr) {
		seterr(s, "%s: not a flamefs store (%s)", s->dir, rerr);
		rocksdb_free(rerr);
		return -EINVAL;
	}
	/* Development builds kept meta, frames, nodes and series in column
	 * families of their own, and counts one per (series, bucket, node). */
	for (size_t i = 0; i < n; i++)
		old |= !strcmp(names[i], "meta");
	for (int c = 0; c < CF_COUNT_ALL; c++) {
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(names[i], cf_names[c])) {
				found++;
				break;
			}
		}
	}
	rocksdb_list_column_families_destroy(names, n);
	if (old) {
		seterr(s,
		       "%s: store has the layout of a pre-release flamefs; import its data again "
		       "into a new store",
		       s->dir);
		return -EPROTONOSUPPORT;
	}
	if (found != CF_COUNT_ALL || n != CF_COUNT_ALL) {
		seterr(s, "%s: not a flamefs store", s->dir);
		return -EINVAL;
	}
	return 0;
}

void close_db(struct rdb *s)
{
	for (int i = 0; i < CF_COUNT_ALL; i++) {
		if (s->cf[i])
			rocksdb_column_family_handle_destroy(s->cf[i]);
		s->cf[i] = NULL;
	}
	if (s->db)
		rocksdb_close(s->db);
	s->db = NULL;
}

int open_db(struct rdb *s, bool creating)
{
	const rocksdb_options_t *opts[CF_COUNT_ALL];
	char *rerr = NULL;

	for (int i = 0; i < CF_COUNT_ALL; i++)
		opts[i] = i == CF_COUNTS ? s->countopts : s->cfopts;
	if (s->readonly) {
		int r = make_secdir(s);

		if (r < 0)
			return r;
		return open_secondary(s);
	} else {
		rocksdb_options_set_create_if_missing(s->dbopts, creating);
		rocksdb_options_set_create_missing_column_families(s->dbopts, creating);
		s->db = rocksdb_open_column_families(s->dbopts, s->dir, CF_COUNT_ALL, cf_names,
		                                     opts, s->cf, &rerr);
	}
	if (rerr) {
		if (!s->readonly && strstr(rerr, "LOCK")) {
			long pid = lock_holder(s->dir, rerr);

			if (pid > 0)
				seterr(s, "%s: store is in use by another writer (pid %ld)", s->dir,
				       pid);
			else
				seterr(s, "%s: store is in use by another writer", s->dir);
			rocksdb_free(rerr);
			return -EBUSY;
		}
		seterr(s, "%s: cannot open store: %s", s->dir, rerr);
		rocksdb_free(rerr);
		return -EIO;
	}
	return 0;
}

/* ---- loading from RocksDB -------------------------------------------------- */

/* Walks the records whose keys are prefix + be32 id, starting at `from`,
 * and calls fn for each; fn returns how many ids the record holds (a run
 * of nodes holds many) or -errno.  Ids must be dense: a gap means damage. */
static int load_ids(struct rdb *s, uint8_t prefix, const char *what, uint32_t from,
                    int (*fn)(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen))
{
	rocksdb_iterator_t *it;
	uint8_t key[5];
	uint32_t want = from;
	char *rerr = NULL;
	int r = 0;

	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it) {
		seterr(s, "%s: cannot create an iterator", s->dir);
		return -ENOMEM;
	}
	id_key(key, prefix, from);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);

		if (klen && k[0] != prefix)
			break;
		if (klen != 5 || get_be32(k + 1) != want) {
			seterr(s, "%s: store is damaged: %s id %u missing", s->dir, what, want);
			r = -EIO;
			goto out_iter;
		}
		r = fn(s, want, v, vlen);
		if (r < 0)
			goto out_iter;
		want += (uint32_t)r;
		r = 0;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "reading");
out_iter:
	rocksdb_iter_destroy(it);
	return r;
}

/* The id after the last one that records with this prefix (prefix + be32
 * id) hold, from the last such key, without loading them (ids are dense:
 * load_ids() checks that as it loads them); a run of nodes (KEY_NODES)
 * holds as many ids as its leading varint says.  *bound is left at least
 * `at_least`; 0, or -errno. */
static int id_bound(struct rdb *s, uint8_t prefix, uint32_t at_least, uint32_t *bound)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	uint8_t key[5];
	char *rerr = NULL;

	if (!it) {
		seterr(s, "%s: cannot create an iterator", s->dir);
		return -ENOMEM;
	}
	*bound = at_least;
	id_key(key, prefix, UINT32_MAX);
	rocksdb_iter_seek_for_prev(it, (const char *)key, sizeof(key));
	if (rocksdb_iter_valid(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		uint64_t n = 1;

		if (prefix == KEY_NODES && (get_varint(&v, v + vlen, &n) < 0 || n > NODE_RUN))
			n = 1; /* damaged: load_ids() says so */
		if (klen == 5 && k[0] == prefix && get_be32(k + 1) >= at_least &&
		    get_be32(k + 1) < UINT32_MAX - n)
			*bound = get_be32(k + 1) + (uint32_t)n;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	return rerr ? rdb_fail(s, rerr, "reading") : 0;
}

/* The nodes' half of open_dictionary(), on a thread of its own: it loads
 * and indexes the nodes into `own`, a copy of the store whose node arrays
 * and table it alone touches, and whose error message is its own. */
struct node_load {
	struct rdb *own;
	uint32_t from;
	int r;
};

static void *node_load_run(void *arg)
{
	struct node_load *l = arg;
	struct rdb *t = l->own;
	int r = load_ids(t, KEY_NODE, "node", t->nnodes, load_node);

	if (r == 0)
		r = load_ids(t, KEY_NODES, "node", t->nnodes, load_node_run);
	if (r == 0)
		r = index_nodes(t, l->from);
	l->r = r;
	return NULL;
}

/* load_new() at open, when there is the whole dictionary to load: the
 * frames (one record each) and the nodes (runs) are independent once the
 * number of frames is known, which bounds a node's frame, so they load
 * and are indexed on two threads, each into its own arrays and tables.
 * The result is the same as one thread's: same ids, same tables, same
 * module references.  1 when it did the load (r set), 0 when it could
 * not start a thread (nothing done). */
static int load_dictionary_parallel(struct rdb *s, int *r)
{
	struct node_load l = {.from = s->nnodes};
	uint32_t frames_from = s->nframes, bound, nbound;
	pthread_t th;
	int rf;

	*r = id_bound(s, KEY_FRAME, s->nframes, &bound);
	if (*r == 0)
		*r = id_bound(s, KEY_NODE, s->nnodes, &nbound);
	if (*r == 0)
		*r = id_bound(s, KEY_NODES, nbound, &nbound);
	if (*r < 0)
		return 1;
	/* The arrays at their final size: no copies, no growth.  Only a
	 * help: without it (a damaged store's last id can be anything) they
	 * grow as the records come. */
	(void)frames_reserve(s, bound);
	(void)nodes_reserve(s, nbound);
	l.own = malloc(sizeof(*l.own));
	if (!l.own)
		return 0;
	memcpy(l.own, s, sizeof(*s));
	l.own->nframes = bound; /* what load_node* check a node's frame against */
	if (pthread_create(&th, NULL, node_load_run, &l) != 0) {
		free(l.own);
		return 0;
	}
	rf = load_ids(s, KEY_FRAME, "frame", s->nframes, load_frame);
	if (rf == 0)
		rf = index_frames(s, frames_from);
	pthread_join(th, NULL);
	/* the node arrays and table are the copy's now (reallocated) */
	s->node_parent = l.own->node_parent;
	s->node_frame = l.own->node_frame;
	s->nnodes = l.own->nnodes;
	s->nodes_cap = l.own->nodes_cap;
	s->node_tab = l.own->node_tab;
	if (rf == 0 && l.r == 0 && s->nframes != bound) { /* a frame added meanwhile */
		seterr(s, "%s: store is damaged: frame %u missing", s->dir, bound);
		rf = -EIO;
	}
	if (rf == 0 && l.r < 0) {
		memcpy(s->errmsg, l.own->errmsg, sizeof(s->errmsg));
		rf = l.r;
	}
	free(l.own);
	*r = rf;
	return 1;
}

int load_new(struct rdb *s)
{
	uint32_t frames_from = s->nframes, nodes_from = s->nnodes;
	int r;

	/* At open (only the root and frame 0 are there), on two threads. */
	if (frames_from == 1 && nodes_from == 1 && load_dictionary_parallel(s, &r)) {
		if (r == -ENOMEM)
			seterr(s, "%s: out of memory", s->dir);
		if (r == 0 && s->readonly)
			r = renames_load(s, true);
		return r;
	}
	r = load_ids(s, KEY_FRAME, "frame", s->nframes, load_frame);
	if (r == 0 && s->readonly)
		r = renames_load(s, frames_from == 1);

	if (r == 0) /* schema 1's records, then schema 2's runs after them */
		r = load_ids(s, KEY_NODE, "node", s->nnodes, load_node);
	if (r == 0)
		r = load_ids(s, KEY_NODES, "node", s->nnodes, load_node_run);
	if (r == 0)
		r = index_new(s, frames_from, nodes_from);
	if (r == -ENOMEM)
		seterr(s, "%s: out of memory", s->dir);
	return r;
}

int embedded_open(const char *dir, int flags, struct store **out, char *err, size_t errlen)
{
	struct rdb *s;
	bool creating;
	int r;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		if (errlen)
			snprintf(err, errlen, "%s: out of memory", dir);
		return r;
	}
	s->readonly = flags & STORE_READONLY;
	s->secdir_lock = -1;
	s->rolled_cut[0] = s->rolled_cut[1] = INT64_MIN;
	s->sealed_cut[0] = s->sealed_cut[1] = INT64_MIN;
	pthread_mutex_init(&s->settle_mu, NULL);
	s->dir = strdup(dir);
	s->base.where = strdup(dir);
	if (!s->dir || !s->base.where) {
		r = -ENOMEM;
		seterr(s, "%s: out of memory", dir);
		goto fail;
	}
	r = make_options(s);
	if (r < 0) {
		seterr(s, "%s: out of memory", dir);
		goto fail;
	}

	r = prepare_dir(s, flags);
	if (r < 0)
		goto fail;
	creating = r == 1;

	r = open_db(s, creating);
	if (r < 0)
		goto fail;
	if (creating) {
		r = meta_init(s);
		if (r < 0)
			goto fail;
	}
	r = meta_check(s);
	if (r < 0)
		goto fail;
	r = changes_load(s);
	if (r < 0)
		goto fail;
	r = keep_load(s);
	if (r < 0)
		goto fail;

	r = node_append(s, STORE_ROOT_NODE, 0);
	if (r < 0)
		goto fail_nomem;
	/* Frame 0 means "no frame" (the root's). */
	r = frame_append(s, &(struct store_frame){0});
	if (r < 0)
		goto fail_nomem;
	if (!s->readonly) {
		r = series_grow(s);
		if (r < 0)
			goto fail_nomem;
		memset(&s->series[0], 0, sizeof(s->series[0]));
		s->nseries = 1;
		r = load_ids(s, KEY_SERIES, "series", 1, load_series);
		if (r < 0)
			goto fail;
	}
	r = load_new(s);
	if (r < 0)
		goto fail;
	s->seq = rocksdb_get_latest_sequence_number(s->db);
	s->base.ops = &embedded_ops;
	*out = &s->base;
	return 0;

fail_nomem:
	seterr(s, "%s: out of memory", dir);
fail:
	if (errlen)
		snprintf(err, errlen, "%s", s->errmsg);
	rdb_close(&s->base);
	return r;
}

void rdb_close(struct store *sbase)
{
	struct rdb *s = rdb_of(sbase);
	if (!s)
		return;
	store_batch_free(s->batch ? &s->batch->base : NULL);
	/* A writer that wrote detail or change records in several commits
	 * (a recorder's drains) leaves one block per (series, bucket), the
	 * open buckets' too, and its change records folded: a piece a drain
	 * costs a key and a block's tables each.  A failure leaves the
	 * pieces and records, which read the same. */
	if (s->db && !s->readonly && (s->piece_commits > 1 || s->change_commits > 1))
		(void)detail_seal_all(s);
	settle_final(s);
	close_db(s);
	if (s->secdir) {
		remove_tree(s->secdir);
		free(s->secdir);
	}
	if (s->secdir_lock >= 0)
		close(s->secdir_lock);
	if (s->dbopts)
		rocksdb_options_destroy(s->dbopts);
	if (s->cfopts)
		rocksdb_options_destroy(s->cfopts);
	if (s->countopts)
		rocksdb_options_destroy(s->countopts);
	if (s->bbto)
		rocksdb_block_based_options_destroy(s->bbto);
	if (s->ropts)
		rocksdb_readoptions_destroy(s->ropts);
	if (s->wopts)
		rocksdb_writeoptions_destroy(s->wopts);
	for (uint32_t i = 0; i < s->nseries; i++)
		series_rec_clear(&s->series[i]);
	free(s->series);
	idtab_free(&s->series_tab);
	idtab_free(&s->base_tab);
	free(s->frames);
	idtab_free(&s->frame_tab);
	arena_free(&s->arena);
	free(s->node_parent);
	free(s->node_frame);
	free(s->node_tab.slots);
	free(s->logdir);
	free(s->legacy_host);
	free(s->dir);
	free(s->base.where);
	free(s->base.host);
	pthread_mutex_destroy(&s->settle_mu);
	free(s);
}

const char *rdb_errmsg(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->errmsg;
}

const char *rdb_notice(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->notice[0] ? s->notice : NULL;
}

uint32_t rdb_bucket_seconds(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->bucket_seconds;
}

const struct store_ops embedded_ops = {
        .name = "embedded",
        .close = rdb_close,
        .errmsg = rdb_errmsg,
        .notice = rdb_notice,
        .bucket_seconds = rdb_bucket_seconds,
        .batch_new = rdb_batch_new,
        .batch_free = rdb_batch_free,
        .batch_series = rdb_batch_series,
        .batch_frame = rdb_batch_frame,
        .batch_node = rdb_batch_node,
        .batch_frame_rename = rdb_batch_frame_rename,
        .batch_add = rdb_batch_add,
        .batch_input_bytes = rdb_batch_input_bytes,
        .batch_commit = rdb_batch_commit,
        .refresh = rdb_refresh,
        .sequence = rdb_sequence,
        .renames = rdb_renames,
        .series_list = rdb_series_list,
        .node_count = rdb_node_count,
        .node_get = rdb_node_get,
        .frame_count = rdb_frame_count,
        .frame_get = rdb_frame_get,
        .series_counts = rdb_series_counts,
        .footprint = rdb_footprint,
        .series_disk_bytes = rdb_series_disk_bytes,
        .compact = rdb_compact,
        .prune = rdb_prune,
        .replaces_sources = false,
        .id = rdb_id,
        .changes = rdb_changes,
        .renames_since = rdb_renames_since,
        .batch_source = rdb_batch_source,
        .source_cursor = rdb_source_cursor,
        .commit_nonce = rdb_commit_nonce,
        .dest_cursor = rdb_dest_cursor,
        .set_dest_cursor = rdb_set_dest_cursor,
        .batch_sample = rdb_batch_sample,
        .series_samples = rdb_series_samples,
        .keep_samples = rdb_keep_samples,
        .set_keep_samples = rdb_set_keep_samples,
        .rollup = rdb_rollup,
        .batch_detail = rdb_batch_detail,
        .batch_moments = rdb_batch_moments,
};
