/*
 * stats.c — footprint figures (du of the directory, SST bytes per kind
 * of record), compaction, and keeping a store small right after each
 * write (settle).
 */
#include "embedded-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- footprint ------------------------------------------------------------------ */

/* Adds st_blocks * 512 of everything under the directory fd, like du. */
static int du_fd(int dfd, uint64_t *total)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	int r = 0;

	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	if (fstat(dirfd(d), &st) == 0)
		*total += (uint64_t)st.st_blocks * 512;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile (compaction) */
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (sub >= 0)
				du_fd(sub, total);
			continue;
		}
		*total += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return r;
}

/* The uncompressed bytes (keys and values) of the default column family's
 * frames, nodes, detail blocks and other records, and the samples the
 * detail blocks hold, by one scan. */
struct raw_split {
	uint64_t frames, nodes, detail, other;
	uint64_t samples;
};

static int raw_bytes(struct rdb *s, struct raw_split *o)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	char *rerr = NULL;

	memset(o, 0, sizeof(*o));
	if (!it) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		char p = klen ? k[0] : 0;
		uint64_t *to = p == KEY_FRAME                    ? &o->frames
		               : p == KEY_NODE || p == KEY_NODES ? &o->nodes
		               : p == KEY_DETAIL                 ? &o->detail
		                                                 : &o->other;
		uint64_t n;

		*to += klen + vlen;
		if (p == KEY_DETAIL && detail_count(v, vlen, &n) == 0)
			o->samples += n;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return rdb_fail(s, rerr, "scan");
	return 0;
}

/* The compressed bytes of the column family's data blocks (its SST files
 * without their index, filter and properties blocks), from RocksDB's
 * aggregated table properties; 0 when they are not reported. */
static uint64_t data_block_bytes(struct rdb *s, int cf)
{
	static const char field[] = "; data block size=";
	char *props =
	        rocksdb_property_value_cf(s->db, s->cf[cf], "rocksdb.aggregated-table-properties");
	uint64_t v = 0;

	if (props) {
		const char *at = strstr(props, field);
		if (at)
			v = strtoull(at + sizeof(field) - 1, NULL, 10);
		rocksdb_free(props);
	}
	return v;
}

/* part of total in proportion part_raw / all_raw, without overflow */
static uint64_t share(uint64_t total, uint64_t part_raw, uint64_t all_raw)
{
	return all_raw ? (uint64_t)((long double)total * part_raw / all_raw) : 0;
}

/* RocksDB's estimate of the SST bytes of the detail keys. */
static uint64_t detail_sst_bytes(struct rdb *s)
{
	const char start[1] = {KEY_DETAIL}, limit[1] = {KEY_DETAIL + 1};
	const char *starts[1] = {start}, *limits[1] = {limit};
	size_t slen[1] = {1}, llen[1] = {1};
	uint64_t bytes = 0;
	char *rerr = NULL;

	rocksdb_approximate_sizes_cf(s->db, s->cf[CF_DEFAULT], 1, starts, slen, limits, llen,
	                             &bytes, &rerr);
	if (rerr) {
		rocksdb_free(rerr);
		return 0;
	}
	return bytes;
}

int rdb_footprint(struct store *sbase, struct store_footprint *out)
{
	struct rdb *s = rdb_of(sbase);
	uint64_t total = 0;
	int fd, r;

	memset(out, 0, sizeof(*out));
	if (need_db(s) < 0)
		return -EIO;
	settle_wait(s); /* the size the store settles at */
	fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		seterr(s, "%s: %s", s->dir, strerror(errno));
		return r;
	}
	r = du_fd(fd, &out->dir_bytes);
	if (r < 0) {
		seterr(s, "%s: %s", s->dir, strerror(-r));
		return r;
	}
	if (rocksdb_property_int_cf(s->db, s->cf[CF_COUNTS], "rocksdb.total-sst-files-size",
	                            &out->counts_bytes) != 0)
		out->counts_bytes = 0;
	if (rocksdb_property_int_cf(s->db, s->cf[CF_DEFAULT], "rocksdb.total-sst-files-size",
	                            &total) != 0)
		total = 0;
	/* Frames, nodes, detail, series and meta share the default column
	 * family, whose data blocks (256 KiB) hold several kinds at once:
	 * frames, nodes and detail get the data blocks' bytes in proportion to their
	 * uncompressed bytes (an estimate; their sum is within the series
	 * records' share of exact).  The rest of the SST bytes, with the
	 * files' index and properties blocks, is "other". */
	struct raw_split raw;
	uint64_t data = data_block_bytes(s, CF_DEFAULT);
	r = raw_bytes(s, &raw);
	if (r < 0)
		return r;
	if (data == 0 || data > total)
		data = total;
	/* Detail blocks are the one kind in a key range of their own that
	 * fills whole data blocks: RocksDB's estimate of that range's SST
	 * bytes is nearer than a share by uncompressed bytes, since they
	 * compress far less than the dictionary's names.  A range inside
	 * one data block has no estimate (0): then the share. */
	out->samples_bytes = detail_sst_bytes(s);
	if (out->samples_bytes == 0 || out->samples_bytes > data || !raw.detail)
		out->samples_bytes =
		        share(data, raw.detail, raw.frames + raw.nodes + raw.detail + raw.other);
	data -= out->samples_bytes;
	uint64_t all = raw.frames + raw.nodes + raw.other;
	out->frames_bytes = share(data, raw.frames, all);
	out->nodes_bytes = share(data, raw.nodes, all);
	out->samples = raw.samples;
	out->other_bytes = total - out->frames_bytes - out->nodes_bytes - out->samples_bytes;
	return 0;
}

int rdb_series_disk_bytes(struct store *sbase, uint32_t series, uint64_t *bytes)
{
	struct rdb *s = rdb_of(sbase);
	uint8_t start[4], limit[8];
	const char *starts[1] = {(const char *)start};
	const char *limits[1] = {(const char *)limit};
	size_t slen[1] = {4}, llen[1];
	char *rerr = NULL;

	if (need_db(s) < 0)
		return -EIO;
	put_be32(start, series);
	if (series == UINT32_MAX) {
		memset(limit, 0xff, sizeof(limit));
		llen[0] = 8;
	} else {
		put_be32(limit, series + 1);
		llen[0] = 4;
	}
	*bytes = 0;
	rocksdb_approximate_sizes_cf(s->db, s->cf[CF_COUNTS], 1, starts, slen, limits, llen, bytes,
	                             &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "approximate sizes");
	return 0;
}

int rdb_compact(struct store *sbase)
{
	struct rdb *s = rdb_of(sbase);
	rocksdb_flushoptions_t *fo;
	rocksdb_compactoptions_t *co;
	char *rerr = NULL;
	int r = 0;

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	settle_wait(s);
	r = detail_seal_all(s);
	if (r == 0)
		r = series_rewrite_all(s);
	if (r < 0)
		return r;
	settle_wait(s);
	fo = rocksdb_flushoptions_create();
	co = rocksdb_compactoptions_create();
	if (!fo || !co) {
		r = -ENOMEM;
		seterr(s, "%s: out of memory", s->dir);
		goto out;
	}
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_compactoptions_set_bottommost_level_compaction(co, ROCKS_BOTTOMMOST_FORCE);
	rocksdb_compactoptions_set_exclusive_manual_compaction(co, 1);
	for (int i = 0; i < CF_COUNT_ALL; i++) {
		rocksdb_flush_cf(s->db, fo, s->cf[i], &rerr);
		if (rerr) {
			r = rdb_fail(s, rerr, "flush");
			goto out;
		}
	}
	for (int i = 0; i < CF_COUNT_ALL; i++)
		rocksdb_compact_range_cf_opt(s->db, s->cf[i], co, NULL, 0, NULL, 0);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out:
	if (fo)
		rocksdb_flushoptions_destroy(fo);
	if (co)
		rocksdb_compactoptions_destroy(co);
	return r;
}

/* ---- small right away -------------------------------------------------------- */

/* A commit leaves its data in the write-ahead log, and a flush leaves it
 * in level-0 files that hold merge operands apart and pay their own
 * index and properties: right after an import the store is well above
 * its compacted size.  Settling
 * keeps it within 1/SETTLE_SHARE of that, measured as du measures it:
 * when the logs (zstd-compressed, options.c) pass 1/SETTLE_SHARE of the
 * directory's bytes, the column families with new entries are flushed;
 * a column family whose level 0 (in file system blocks) then passes
 * 1/SETTLE_SHARE of the directory is compacted as store_compact() does.
 *
 * A round also waits for SETTLE_SLACK bytes: a log or a level 0 smaller
 * than that is left for a later round, and a commit starts no round
 * until that many bytes were written since the last (settle()).  A
 * record drain adds a few KB a second, so a new or small store (whose
 * tenth is a few KB) settled every two to three seconds, each round a
 * new table file, its fsyncs and a rewrite of the whole store at zstd's
 * level 9: under process churn, a large share of the recorder's CPU.
 * The store's close settles once more without the slack
 * (settle_final()), so a writer leaves its store within the tenth, as
 * an import did before.
 *
 * It runs in a thread of its own, started by settle() after a commit:
 * flushes and compactions wait for fsync, which is slow on a busy
 * machine, and a record drain (every second) must not wait for them.  The
 * thread uses only s->db and s->cf (RocksDB's handles are thread-safe),
 * never s->errmsg or s->seq; settle_mu guards settle_busy and
 * settle_again.  store_close(), store_compact() and store_footprint()
 * wait for it (settle_wait()). */
#define SETTLE_SHARE 10
#define SETTLE_SLACK (64u * 1024)
/* Bytes a key of a flushed table at least, for settle_once() to leave
 * it uncompacted: a compaction zeroes each key's 7-byte sequence number,
 * a large part of a table of small keys (a frame each). */
#define SETTLE_KEY_BYTES 64u

/* SST bytes per column family: all[i] and level0[i]. */
static void sst_bytes(struct rdb *s, uint64_t all[CF_COUNT_ALL], uint64_t level0[CF_COUNT_ALL])
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(s->db);
	int n;

	memset(all, 0, CF_COUNT_ALL * sizeof(*all));
	memset(level0, 0, CF_COUNT_ALL * sizeof(*level0));
	if (!lf)
		return;
	n = rocksdb_livefiles_count(lf);
	for (int i = 0; i < n; i++) {
		const char *cf = rocksdb_livefiles_column_family_name(lf, i);
		uint64_t size = rocksdb_livefiles_size(lf, i);
		int c = 0;

		while (c < CF_COUNT_ALL - 1 && (!cf || strcmp(cf, cf_names[c]) != 0))
			c++;
		all[c] += size;
		if (rocksdb_livefiles_level(lf, i) == 0) /* in file system blocks, as du */
			level0[c] += (size + 4095) / 4096 * 4096;
	}
	rocksdb_livefiles_destroy(lf);
}

/* The bytes of the write-ahead logs (their length: a log's last block
 * is shared by the next commits). */
static uint64_t wal_bytes(const struct rdb *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *e;
	struct stat st;
	uint64_t total = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".log") &&
		    fstatat(dirfd(d), e->d_name, &st, 0) == 0)
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

/* One round of settling, acting on logs and levels 0 of more than
 * `slack` bytes.  Failures only cost space; they are not reported (a
 * commit's data is durable before it starts).  Only the column families
 * with something new are flushed, and only those whose level 0 has grown
 * are compacted: a record drain adds counts every second but new frames
 * and nodes far less often. */
static void settle_once(struct rdb *s, uint64_t slack)
{
	uint64_t all[CF_COUNT_ALL], level0[CF_COUNT_ALL], before[CF_COUNT_ALL], du = 0, wal;
	uint64_t keys = 0;
	bool flushed[CF_COUNT_ALL] = {false};
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
	char *rerr = NULL;

	if (!fo || !co)
		goto out;
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_compactoptions_set_bottommost_level_compaction(co, ROCKS_BOTTOMMOST_FORCE);
	rocksdb_compactoptions_set_exclusive_manual_compaction(co, 1);
	int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || du_fd(dfd, &du) < 0)
		goto out;
	wal = wal_bytes(s);
	sst_bytes(s, all, level0);
	memcpy(before, all, sizeof(before));
	if (wal * SETTLE_SHARE > du && wal > slack) {
		for (int i = 0; i < CF_COUNT_ALL && !rerr; i++) {
			uint64_t entries = 0;
			if (rocksdb_property_int_cf(s->db, s->cf[i],
			                            "rocksdb.num-entries-active-mem-table",
			                            &entries) == 0 &&
			    entries) {
				rocksdb_flush_cf(s->db, fo, s->cf[i], &rerr);
				flushed[i] = true;
			}
		}
		if (rerr)
			goto out;
		sst_bytes(s, all, level0);
	}
	for (int i = 0; i < CF_COUNT_ALL; i++) {
		/* The default column family, when it holds SETTLE_SLACK bytes
		 * or more, less than a tenth of them from before this round's
		 * flush (a new store's first import) and at least
		 * SETTLE_KEY_BYTES a key, is left as flushed: the flush wrote
		 * it at the bottom level's zstd level, and a compaction would
		 * only rewrite it whole to zero its keys' sequence numbers and
		 * fold in the small files before it (each at most one file
		 * system block more than its bytes), within the tenth with
		 * keys that big.  Later rounds leave it too, until its next
		 * flush.  Counts (small keys, merge operands) are compacted
		 * as before. */
		if (flushed[i])
			s->settle_left[i] =
			        i == CF_DEFAULT && all[i] >= SETTLE_SLACK &&
			        (before[i] + 4096) * SETTLE_SHARE <= all[i] &&
			        rocksdb_property_int_cf(s->db, s->cf[i],
			                                "rocksdb.estimate-num-keys", &keys) == 0 &&
			        keys * SETTLE_KEY_BYTES <= all[i];
		if (s->settle_left[i])
			continue;
		if (level0[i] > slack && level0[i] * SETTLE_SHARE > du)
			rocksdb_compact_range_cf_opt(s->db, s->cf[i], co, NULL, 0, NULL, 0);
	}
out:
	rocksdb_free(rerr);
	if (fo)
		rocksdb_flushoptions_destroy(fo);
	if (co)
		rocksdb_compactoptions_destroy(co);
}

static void *settle_main(void *arg)
{
	struct rdb *s = arg;

	for (;;) {
		settle_once(s, SETTLE_SLACK);
		pthread_mutex_lock(&s->settle_mu);
		if (!s->settle_again) {
			s->settle_busy = false;
			pthread_mutex_unlock(&s->settle_mu);
			return NULL;
		}
		s->settle_again = false;
		pthread_mutex_unlock(&s->settle_mu);
	}
}

static bool settle_off(const struct rdb *s)
{
	const char *env = getenv("FLAMEFS_STORE_SETTLE");

	return s->readonly || (env && !strcmp(env, "0"));
}

void settle(struct rdb *s, size_t written)
{
	if (settle_off(s))
		return;
	s->settle_owed = true;
	/* Until SETTLE_SLACK bytes were written since the last round, a
	 * round would find nothing to do: no thread, no listing of the
	 * directory (a record drain commits a few KB every second). */
	if (written != SETTLE_NOW) {
		s->settle_written += written;
		if (s->settle_written < SETTLE_SLACK)
			return;
	}
	s->settle_written = 0;
	pthread_mutex_lock(&s->settle_mu);
	if (s->settle_busy) {
		s->settle_again = true; /* the running thread goes round again */
		pthread_mutex_unlock(&s->settle_mu);
		return;
	}
	s->settle_busy = true;
	pthread_mutex_unlock(&s->settle_mu);
	if (s->settler_started)
		pthread_join(s->settler, NULL); /* finished: settle_busy was false */
	s->settler_started = pthread_create(&s->settler, NULL, settle_main, s) == 0;
	if (!s->settler_started) {
		settle_once(s, SETTLE_SLACK); /* no thread: settle here */
		pthread_mutex_lock(&s->settle_mu);
		s->settle_busy = false;
		pthread_mutex_unlock(&s->settle_mu);
	}
}

void settle_wait(struct rdb *s)
{
	if (s->settler_started) {
		pthread_join(s->settler, NULL);
		s->settler_started = false;
	}
}

void settle_final(struct rdb *s)
{
	settle_wait(s);
	if (!s->settle_owed || settle_off(s))
		return;
	settle_once(s, 0);
	s->settle_owed = false;
}
