/*
 * cmd-unwind-table.c — `flamefs-collect unwind-table`: compiles one ELF
 * file's DWARF call-frame information with unwind/'s CFI compiler (the
 * table record walks stacks with) and prints it row by row, or only its
 * summary line.  Without the unwinder (a build without libdw or BPF) it
 * says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void usage_unwind_table(FILE *f)
{
	fputs("Usage: " PROG " unwind-table [--summary] FILE\n"
	      "\n"
	      "Compiles the DWARF call-frame information of an x86-64 ELF file\n"
	      "(.eh_frame, else .debug_frame, else that of its debug file under\n"
	      "/usr/lib/debug/.build-id) into the table `record` walks stacks with,\n"
	      "and prints it: one row per line, \"ADDRESS RULE\" (16 hex digits, as\n"
	      "readelf -wF prints them), where RULE is\n"
	      "rsp+N or rbp+N (the CFA; \",rbp=c-M\" when rbp is saved at CFA-M),\n"
	      "plt(N), signal, end (outermost frame), bad (not expressible: the\n"
	      "walk stops there) or none (no CFI).  --summary prints only the\n"
	      "first line: source, rows, FDEs and the time it took.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " unwind-table --summary /lib/x86_64-linux-gnu/libc.so.6\n"
	      "  " PROG " unwind-table ./myprog | grep -c bad\n",
	      f);
}

#ifdef FLAMEFS_RECORD_NO_BPF

int cmd_unwind_table(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage_unwind_table(stdout);
		return 0;
	}
	fprintf(stderr, PROG ": unwind-table: this build has no unwinder (libdw was missing)\n");
	return 1;
}

#else

#include <elfutils/libdwelf.h>
#include <libelf.h>

#include "unwinder.h"

static double now_mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int cmd_unwind_table(int argc, char **argv)
{
	bool summary = false;
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage_unwind_table(stdout);
			return 0;
		} else if (strcmp(argv[i], "--summary") == 0) {
			summary = true;
		} else if (!path && argv[i][0] != '-') {
			path = argv[i];
		} else if (argv[i][0] == '-') {
			return cli_usage_error("unwind-table", "unknown option %s", argv[i]);
		} else {
			return cli_usage_error("unwind-table", "unexpected argument %s", argv[i]);
		}
	}
	if (!path)
		return cli_usage_error("unwind-table", "no FILE given");
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": unwind-table: %s: %s\n", path, strerror(errno));
		return 1;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct cfi_table *t = NULL;
	char err[256];
	double t0 = now_mono();
	int rc = cfi_compile(elf, NULL, &t, err, sizeof(err));
	if (rc == -ENOENT && elf) {
		/* As record does: the debug file of its build id. */
		const void *bid;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &bid);
		char dpath[256];
		int len = 0, dfd = -1;
		Elf *debug = NULL;
		if (n >= 2 && n <= 64) {
			len = snprintf(dpath, sizeof(dpath), "/usr/lib/debug/.build-id/%02x/",
			               ((const uint8_t *)bid)[0]);
			for (ssize_t i = 1; i < n; i++)
				len += snprintf(dpath + len, sizeof(dpath) - (size_t)len, "%02x",
				                ((const uint8_t *)bid)[i]);
			snprintf(dpath + len, sizeof(dpath) - (size_t)len, ".debug");
			dfd = open(dpath, O_RDONLY | O_CLOEXEC);
			debug = dfd >= 0 ? elf_begin(dfd, ELF_C_READ_MMAP, NULL) : NULL;
		}
		if (debug)
			rc = cfi_compile(elf, debug, &t, err, sizeof(err));
		if (debug)
			elf_end(debug);
		if (dfd >= 0)
			close(dfd);
	}
	double secs = now_mono() - t0;
	if (elf)
		elf_end(elf);
	close(fd);
	if (rc < 0) {
		fprintf(stderr, PROG ": unwind-table: %s: %s\n", path,
		        rc == -ENOMEM ? "out of memory" : err);
		return 1;
	}
	printf("# %s: %s, %zu rows (%zu bytes), %zu FDEs (%zu skipped), %zu bad rows, %.1f ms\n",
	       path, t->source, t->nrows, t->nrows * sizeof(struct unwind_row), t->fdes,
	       t->fdes_skipped, t->bad_rows, secs * 1e3);
	for (size_t i = 0; !summary && i < t->nrows; i++) {
		char rule[48];
		printf("%016" PRIx64 " %s\n", t->base + t->rows[i].pc,
		       cfi_rule_name(&t->rows[i], rule, sizeof(rule)));
	}
	cfi_table_free(t);
	return fflush(stdout) == 0 ? 0 : 1;
}

#endif
