/*
 * options.c — the RocksDB options of a store (store/README.md, "RocksDB
 * tuning"): compression, block sizes, memtables, logs.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------------ */

/* The directory for a writer's info log: under $XDG_RUNTIME_DIR/flamefs-log
 * when that is usable, else $TMPDIR (or /tmp)/flamefs-log-UID, one
 * directory per store named after its absolute path ('/' as '_'); RocksDB
 * keeps the log and one old one there.  *out is malloc'd, or NULL (the log
 * then stays in the store) when no such directory can be made. */
static int log_dir(const char *dir, char **out)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char cwd[PATH_MAX], *top = NULL, *p = NULL;
	struct stat st;
	int n;

	*out = NULL;
	if (base && *base && access(base, W_OK | X_OK) == 0) {
		n = asprintf(&top, "%s/flamefs-log", base);
	} else {
		base = getenv("TMPDIR");
		n = asprintf(&top, "%s/flamefs-log-%u", base && *base ? base : "/tmp",
		             (unsigned)geteuid());
	}
	if (n < 0)
		return -ENOMEM;
	/* Ours alone: made 0700 here, or already a directory of this user. */
	if ((mkdir(top, 0700) < 0 && errno != EEXIST) || lstat(top, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		goto out;
	if (dir[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		goto out;
	n = asprintf(&p, "%s/%s%s%s", top, dir[0] == '/' ? "" : cwd, dir[0] == '/' ? "" : "/", dir);
	if (n < 0) {
		p = NULL;
		goto out;
	}
	for (char *c = p + strlen(top) + 1; *c; c++)
		if (*c == '/')
			*c = '_';
	if (strlen(p + strlen(top) + 1) > NAME_MAX) {
		free(p);
		p = NULL;
	}
out:
	free(top);
	*out = p;
	return 0;
}

int make_options(struct rdb *s)
{
	rocksdb_mergeoperator_t *mo;
	int levels[7];
	int r;

	s->dbopts = rocksdb_options_create();
	s->cfopts = rocksdb_options_create();
	s->countopts = rocksdb_options_create();
	s->bbto = rocksdb_block_based_options_create();
	s->ropts = rocksdb_readoptions_create();
	s->wopts = rocksdb_writeoptions_create();
	if (!s->dbopts || !s->cfopts || !s->countopts || !s->bbto || !s->ropts || !s->wopts)
		return -ENOMEM;

	/* No fallocate: RocksDB reserves ~1.1 write buffers ahead for each new
	 * write-ahead log (tens of MB), which du counts for as long as the
	 * writer runs, a store of a few hundred KB included.  The C API has
	 * no setter for it but takes an options string. */
	rocksdb_options_t *o = rocksdb_options_create();
	char *rerr = NULL;
	if (!o)
		return -ENOMEM;
	rocksdb_get_options_from_string(s->dbopts, "allow_fallocate=false", o, &rerr);
	if (rerr) {
		rocksdb_free(rerr);
		rocksdb_options_destroy(o);
	} else {
		rocksdb_options_destroy(s->dbopts);
		s->dbopts = o;
	}

	/* The writer's info log lives outside the store (log_dir()), unless
	 * FLAMEFS_ROCKSDB_LOG=store: RocksDB writes its whole options dump
	 * into it at every open, whatever the level, and flamefs
	 * reports RocksDB's errors itself.  RocksDB 7.8 refuses to open
	 * without an info log, and its C API cannot set a silent one. */
	if (!s->readonly) {
		const char *log = getenv("FLAMEFS_ROCKSDB_LOG");

		if (!log || strcmp(log, "store") != 0) {
			r = log_dir(s->dir, &s->logdir);
			if (r < 0)
				return r;
			if (s->logdir)
				rocksdb_options_set_db_log_dir(s->dbopts, s->logdir);
		}
	}
	rocksdb_options_set_info_log_level(s->dbopts, ROCKS_LOG_WARN);
	rocksdb_options_set_keep_log_file_num(s->dbopts, 1);
	rocksdb_options_set_max_log_file_size(s->dbopts, 64 * 1024);
	rocksdb_options_set_max_manifest_file_size(s->dbopts, 64 * 1024);
	rocksdb_options_set_manifest_preallocation_size(s->dbopts, 4 * 1024);
	rocksdb_options_set_max_total_wal_size(s->dbopts, 64 << 20);
	rocksdb_options_set_recycle_log_file_num(s->dbopts, 0);
	/* The write-ahead log holds every commit until a flush, which costs a
	 * new table file and its fsyncs: compressed, the log stays small for
	 * longer and settle() (stats.c) flushes far less often. */
	rocksdb_options_set_wal_compression(s->dbopts, rocksdb_zstd_compression);
	rocksdb_options_set_stats_dump_period_sec(s->dbopts, 0);
	rocksdb_options_set_stats_persist_period_sec(s->dbopts, 0);
	rocksdb_options_set_max_background_jobs(s->dbopts, 2);
	/* An open, and a secondary's catch-up (every store_refresh), load
	 * the table handlers of each column family through a pool of this
	 * many threads, created and joined on every call even when there is
	 * nothing new: 16 by default, ~60 thread creations per refresh and
	 * ~30 per writer's open.  A store holds a handful of table files;
	 * one thread loads them inline. */
	rocksdb_options_set_max_file_opening_threads(s->dbopts, 1);
	/* An open would read the properties block of up to 16 table files to
	 * refresh the deletion statistics that weigh compaction picks; a
	 * store deletes only when it prunes, and compacts on its own terms
	 * (stats.c). */
	rocksdb_options_set_skip_stats_update_on_db_open(s->dbopts, 1);
	if (s->readonly)
		rocksdb_options_set_max_open_files(s->dbopts, -1);
	else /* the vector memtable below takes one writer thread only */
		rocksdb_options_set_allow_concurrent_memtable_write(s->dbopts, 0);

	/* Counts blocks of 32 KiB with a restart every 256 keys: the
	 * smallest counts of the sizes tried (store/README.md, "RocksDB
	 * tuning").  The default column family (frames, nodes) is read whole
	 * at open and almost never by key, so its blocks are as big as
	 * zstd's gain from them (256 KiB, store/README.md). */
	rocksdb_block_based_options_set_block_restart_interval(s->bbto, 256);
	rocksdb_block_based_options_set_format_version(s->bbto, 5);

	for (int i = 0; i < 7; i++)
		levels[i] = rocksdb_zstd_compression;
	for (int i = 0; i < 2; i++) {
		rocksdb_options_t *o = i ? s->countopts : s->cfopts;

		/* the factory copies the table options */
		rocksdb_block_based_options_set_block_size(s->bbto, (i ? 32 : 256) * 1024);
		rocksdb_options_set_block_based_table_factory(o, s->bbto);
		rocksdb_options_set_compression(o, rocksdb_zstd_compression);
		rocksdb_options_set_compression_per_level(o, levels, 7);
		rocksdb_options_set_bottommost_compression(o, rocksdb_zstd_compression);
		/* window_bits, level, strategy, max_dict_bytes: a flush
		 * writes at the bottom level's zstd level, so a new store's
		 * first flush is as small as a compaction would make it
		 * (settle_once, stats.c, leaves it as it is) */
		rocksdb_options_set_compression_options(o, -14, 9, 0, 0);
		rocksdb_options_set_bottommost_compression_options(o, -14, 9, 0, 0, 1);
		rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
		rocksdb_options_set_write_buffer_size(o, i ? 32 << 20 : 8 << 20);
		/* The writer only appends to its memtable (a commit is one
		 * big WriteBatch; reads come from readers, which keep the
		 * skip list): a vector sorted once at flush costs much less
		 * than a skip list's insert of each key, even for keys in
		 * order.  A read through
		 * the writer sorts a copy; the writer reads only at open,
		 * when its memtable is empty or tiny, and in tests. */
		if (!s->readonly)
			rocksdb_options_set_memtable_vector_rep(o);
	}
	mo = counts_merge_operator();
	if (!mo)
		return -ENOMEM;
	rocksdb_options_set_merge_operator(s->countopts, mo);
	rocksdb_writeoptions_set_sync(s->wopts, 1);
	return 0;
}
