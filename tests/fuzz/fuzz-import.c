/*
 * fuzz-import.c — the shared body of the importer fuzz targets (see
 * fuzz-import.h).  The store lives in a fresh directory under $TMPDIR (or
 * /tmp) and is removed at exit; the fuzz tests point TMPDIR at a directory
 * of their own, so a crashed run leaves nothing behind either.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-import.h"

/* What cmd-import.c reads before it picks an importer. */
#define PREFIX_MAX (64u << 10)
#define INPUT_NAME "fuzz-input"

static struct store *store;
static char dir[4096];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	store_close(store);
	store = NULL;
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void open_store(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[4096 + 8], err[512];

	snprintf(dir, sizeof(dir), "%s/flamefs-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "fuzz: mkdtemp %s: %s\n", dir, strerror(errno));
		abort();
	}
	snprintf(path, sizeof(path), "%s/store", dir);
	if (store_open(path, STORE_CREATE, &store, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		abort();
	}
	/* After store_open: exit handlers run in reverse, so the store is
	 * closed before RocksDB's own statics are destroyed. */
	atexit(cleanup);
}

/* An fd reading data[0..size), as a file would. */
static int input_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create(INPUT_NAME, MFD_CLOEXEC);

	if (fd < 0) {
		perror("fuzz: memfd_create");
		abort();
	}
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0) {
			perror("fuzz: write");
			abort();
		}
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		perror("fuzz: lseek");
		abort();
	}
	return fd;
}

int fuzz_import(const uint8_t *data, size_t size, enum import_format fmt)
{
	/* The options vary with the input's length, so every option path is
	 * fuzzed and a given input always runs the same way. */
	struct import_options o = {.now = 1700000000};
	switch (size % 4) {
	case 1: o.all_events = true; break;
	case 2:
		o.binary = "fuzz";
		o.event = "cpu-clock";
		break;
	case 3: o.version = "v1"; break;
	}
	/* Half the inputs keep their samples whole (store_batch_sample),
	 * half are counted per bucket. */
	o.samples = (size / 4) % 2 == 0;

	if (!store)
		open_store();
	struct store_batch *b = store_batch_new(store);
	if (!b) {
		fprintf(stderr, "fuzz: store_batch_new: %s\n", store_errmsg(store));
		abort();
	}

	/* Detection sees what cmd-import.c would give it; its answer is not used,
	 * the target's format is. */
	size_t plen = size < PREFIX_MAX ? size : PREFIX_MAX;
	(void)import_detect(data, plen);

	int fd = input_fd(data + plen, size - plen);
	struct import_ctx ctx = {
	        .batch = b,
	        .opt = &o,
	        .path = INPUT_NAME,
	        .fd = fd,
	        .prefix = data,
	        .prefix_len = plen,
	};
	const struct import_format_ops *ops = import_format_find(fmt);
	if (!ops) {
		fprintf(stderr, "fuzz: no format %d in import_formats[]\n", (int)fmt);
		abort();
	}
	int rc = ops->parse(&ctx);
	close(fd);

	/* The contract: bad input is -EINVAL with "fuzz-input:..." saying
	 * what was expected; only running out of memory may go unexplained. */
	if (rc < 0 && rc != -ENOMEM) {
		if (rc != -EINVAL ||
		    strncmp(ctx.err, INPUT_NAME ":", strlen(INPUT_NAME ":")) != 0) {
			fprintf(stderr, "fuzz: importer returned %d (%s) with message \"%s\"\n", rc,
			        strerror(-rc), ctx.err);
			abort();
		}
	}
	if (rc == 0 && ctx.err[0]) {
		fprintf(stderr, "fuzz: importer succeeded but left message \"%s\"\n", ctx.err);
		abort();
	}
	store_batch_free(b);
	return rc;
}
