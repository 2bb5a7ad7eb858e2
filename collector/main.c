/*
 * main.c — the flamefs-collect command line: import, stats and export.
 *
 * This is the only place in the collector that prints or exits.  Every
 * error is reported once, as "flamefs-collect: <what>: <why>".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "import.h"
#include "offline.h"
#include "record.h"
#include "store.h"
#include "view.h"

#define PROG "flamefs-collect"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage_main(FILE *f)
{
	fputs("Usage: " PROG " COMMAND [OPTIONS]\n"
	      "\n"
	      "Stores profiler stacks, deduplicated, in a flamefs store.\n"
	      "\n"
	      "Commands:\n"
	      "  import   import perf.data, perf script text, folded stacks, pprof,\n"
	      "           gperftools or legacy text profiles\n"
	      "  record   sample CPU stacks live with eBPF and store them\n"
	      "  stats    list each series with its samples, stacks and footprint\n"
	      "  export   print the stored stacks as folded text or pprof\n"
	      "  compact  flush and compact the store to its smallest size\n"
	      "  prune    delete time buckets older than a retention period\n"
	      "  unwind-table  print the CFI table record walks a file's stacks with\n"
	      "\n"
	      "Options for every command:\n"
	      "  --store DIR   the store (default: $FLAMEFS_STORE, else\n"
	      "                $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  -h, --help    show help for a command\n"
	      "  -V, --version print the version\n"
	      "\n"
	      "EXAMPLES\n"
	      "  perf record -g -a -- sleep 10 && perf script > out.perf\n"
	      "  " PROG " import --store ~/prof out.perf\n"
	      "  " PROG " record --store ~/prof -d 10 -- ./myprog --its-args\n"
	      "  " PROG " stats --store ~/prof\n"
	      "  " PROG " export --store ~/prof --binary nginx | flamegraph.pl > nginx.svg\n"
	      "\n"
	      "Run '" PROG " COMMAND --help' for a command's options.\n",
	      f);
}

static void usage_import(FILE *f)
{
	fputs("Usage: " PROG " import [--store DIR] [--format FORMAT]\n"
	      "           [--binary NAME] [--version LABEL] [--event EVENT | --all-events]\n"
	      "           [--time SECONDS] [--binary-path DIR[:DIR...]]\n"
	      "           [--clock-offset SECONDS|boot] [--one-batch | --keep-going]\n"
	      "           [--timings] FILE|- [FILE...]\n"
	      "\n"
	      "Imports profiles (files, or - for standard input).  Each file is one\n"
	      "atomic batch: either every sample of it is stored or, on any error,\n"
	      "nothing of it is.  On a failure the files before it stay imported and\n"
	      "the command stops there (exit status 1).\n"
	      "\n"
	      "  --store DIR     the store (default: $FLAMEFS_STORE, else\n"
	      "                  $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --format F      perf.data (perf record), perf (perf script text), folded\n"
	      "                  (\"a;b;c 42\" lines), pprof (profile.proto, gzipped or\n"
	      "                  not), gperftools-cpu (CPUPROFILE), legacy (heap, growth,\n"
	      "                  contention, thread text: HEAPPROFILE, Go debug=1);\n"
	      "                  default: detect, for each file\n"
	      "  --binary NAME   store every sample under this binary instead of the\n"
	      "                  process name (perf), first frame (folded) or main\n"
	      "                  mapping (pprof, gperftools, legacy)\n"
	      "  --version LABEL version label (default: \"" IMPORT_DEFAULT_VERSION
	      "\"; for pprof,\n"
	      "                  gperftools and legacy text the main mapping's build\n"
	      "                  id, first 12 hex digits)\n"
	      "  --event EVENT   perf: keep only this event (default: the first seen)\n"
	      "  --all-events    perf: keep every event, each as its own series\n"
	      "  --time SECONDS  unix time for samples that carry none (folded input,\n"
	      "                  pprof without time_nanos, gperftools, legacy);\n"
	      "                  default: the file's modification time (now for a pipe),\n"
	      "                  so that a series of dumps becomes a time series\n"
	      "  --binary-path DIRS  colon-separated directories where the files a\n"
	      "                  profile mapped are looked for first (perf.data,\n"
	      "                  gperftools, legacy), like pprof's PPROF_BINARY_PATH\n"
	      "  --clock-offset S perf script, perf.data without clock data: add S\n"
	      "                  seconds to every sample time, to turn\n"
	      "                  perf's clock (seconds since boot) into Unix time;\n"
	      "                  \"boot\": this machine's boot time, for a recording made\n"
	      "                  here since it booted (not needed when perf recorded\n"
	      "                  with the realtime clock, perf record -k realtime)\n"
	      "  --one-batch     all the files as one atomic batch: all or nothing\n"
	      "  --keep-going    after a file fails, go on with the next ones (the\n"
	      "                  exit status is still 1)\n"
	      "  --timings       print where the time went: open, parse, commit, settle\n"
	      "\n"
	      "EXAMPLES\n"
	      "  perf record -g -a -- sleep 20 && " PROG " import --store ~/prof perf.data\n"
	      "  perf script | " PROG " import --store ~/prof -\n"
	      "  " PROG " import --store ~/prof --binary nginx --version 1.25.3 out.folded\n"
	      "  " PROG " import --store ~/prof cpu.pb.gz\n"
	      "  " PROG " import --store ~/prof --binary-path ./bin cpu.prof\n"
	      "  " PROG " import --store ~/prof /tmp/app.*.heap      # a time series of dumps\n"
	      "  " PROG " import --store ~/prof --keep-going dumps/*.pb.gz\n",
	      f);
}

static void usage_stats(FILE *f)
{
	fputs("Usage: " PROG " stats [--store DIR]\n"
	      "\n"
	      "  --store DIR   the store (default: $FLAMEFS_STORE, else\n"
	      "                $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "\n"
	      "Lists every series (binary, version, event) with its samples, weight,\n"
	      "unique stacks, the bytes of input imported into it and the bytes its\n"
	      "counts take on disk, then the store's whole footprint against all\n"
	      "input bytes (the capacity savings).\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " stats --store ~/prof\n"
	      "  " PROG " stats | sort -k4 -n\n",
	      f);
}

static void usage_export(FILE *f)
{
	fputs("Usage: " PROG " export [--store DIR] [--format FORMAT] [--binary NAME]\n"
	      "           [--version LABEL] [--event EVENT] [--base LABEL]\n"
	      "           [--last DURATION | --from TIME --to TIME]\n"
	      "           [--functions | --callers FUNCTION | --callees FUNCTION] [-o FILE]\n"
	      "\n"
	      "Prints the stored stacks of every matching series: folded lines\n"
	      "\"binary;frame;...;leaf WEIGHT\" sorted bytewise, a gzipped pprof, an\n"
	      "interactive flame graph or a callgrind profile: the files the view\n"
	      "shows.  Only one event is exported at a time: without --event, the\n"
	      "event with the most samples among the matching series.\n"
	      "\n"
	      "  --store DIR        the store (default: $FLAMEFS_STORE, else\n"
	      "                     $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --format F         folded (default), pprof (gzipped profile.proto),\n"
	      "                     svg (flame.svg), callgrind, or with --base also\n"
	      "                     regressions\n"
	      "  --binary NAME      only the series of this binary\n"
	      "  --version LABEL    only the series with this version label\n"
	      "  --event EVENT      only this event\n"
	      "  --base LABEL       a diff: the --version series (B) against those of\n"
	      "                     version LABEL (A); folded lines are \"stack A B\"\n"
	      "  --last DURATION    only the counts of the last DURATION (5m, 1h, 1d12h):\n"
	      "                     the bucket holding now and those before it\n"
	      "  --from TIME, --to TIME  only the counts in [FROM, TO): Unix seconds or\n"
	      "                     ISO 8601 UTC (2026-11-24T14:02:00Z); the buckets that\n"
	      "                     overlap the window\n"
	      "  --functions        list every function: self, total and name\n"
	      "  --callers F        the inverted tree of the callers of function F\n"
	      "  --callees F        the tree below function F, its occurrences merged\n"
	      "  -o, --output FILE  write to FILE instead of standard output\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " export --store ~/prof --binary nginx --format svg -o nginx.svg\n"
	      "  " PROG " export --store ~/prof --format pprof -o cpu.pb.gz && go tool pprof -top "
	      "cpu.pb.gz\n"
	      "  " PROG
	      " export --binary nginx --version 1.25.4 --base 1.25.3 --format svg -o d.svg\n"
	      "  " PROG " export --last 15m --callers malloc --format callgrind -o malloc.cg\n",
	      f);
}

static const char *resolve_store(const char *arg, char **owned)
{
	*owned = NULL;
	if (arg)
		return arg;
	*owned = store_default_dir();
	if (!*owned)
		die("no store given: use --store DIR or set FLAMEFS_STORE");
	return *owned;
}

/* ---- import ------------------------------------------------------------ */

/* One `import` command: what its files share.  The store is opened at
 * the first file that reads, so that a missing first file creates no
 * store.  With --one-batch every file adds to `batch` and one commit ends
 * the command; otherwise each file has a batch of its own. */
struct import_job {
	struct import_options o; /* the command's options; o.now is set per file */
	enum import_format fmt;  /* --format, or AUTO to detect each file */
	bool have_time, one_batch, keep_going, timings;
	const char *dir;
	struct store *s;
	struct store_batch *batch;           /* --one-batch: the command's one batch */
	size_t index, count;                 /* the file being imported (1-based), of count */
	size_t files_done;                   /* files imported (or, with --one-batch, parsed) */
	uint64_t samples, bytes;             /* totals over the files done */
	double ms_open, ms_parse, ms_commit; /* --timings, summed over files */
};

struct progress_state {
	struct timespec start, last;
	const struct import_job *job;
};
static struct progress_state progress_st;

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static double ms_since(const struct timespec *a)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return since(a, &now) * 1e3;
}

/* The progress line on a terminal: "[3/1000] 12.0 MB read, ..." over
 * the whole command. */
static void show_progress(struct import_ctx *ctx)
{
	const struct import_job *job = progress_st.job;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (since(&progress_st.last, &now) < 0.5)
		return;
	progress_st.last = now;
	double t = since(&progress_st.start, &now);
	uint64_t samples = job->samples + ctx->samples, bytes = job->bytes + ctx->bytes;
	fputs("\r", stderr);
	if (job->count > 1)
		fprintf(stderr, "[%zu/%zu] ", job->index, job->count);
	fprintf(stderr, "%.1f MB read, %" PRIu64 " samples, %.0f samples/s   ", (double)bytes / 1e6,
	        samples, t > 0 ? (double)samples / t : 0.0);
}

/* This machine's boot time in Unix seconds (/proc/stat's btime): what
 * perf's default clock (seconds since boot) is counted from. */
static int64_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long bt = -1;

	if (!f)
		die("--clock-offset boot: /proc/stat: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	fclose(f);
	if (bt < 0)
		die("--clock-offset boot: no btime in /proc/stat");
	return bt;
}

/* Opens the job's store once; a store that cannot be opened ends the
 * command. */
static void import_job_store(struct import_job *job)
{
	char err[512];

	if (job->s)
		return;
	if (store_open(job->dir, STORE_CREATE, &job->s, err, sizeof(err)) < 0)
		die("%s", err);
	if (store_notice(job->s))
		fprintf(stderr, PROG ": %s\n", store_notice(job->s));
	if (job->one_batch) {
		job->batch = store_batch_new(job->s);
		if (!job->batch)
			die("%s: cannot start a batch: %s", job->dir, store_errmsg(job->s));
	}
}

/* Reads up to `room` bytes of fd into buf; returns the count or -errno. */
static ssize_t read_prefix(int fd, uint8_t *buf, size_t room)
{
	size_t len = 0;
	while (len < room) {
		ssize_t n = read(fd, buf + len, room - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return (ssize_t)len;
}

/* Imports one file (path "-": standard input) into the job's store: as
 * a batch of its own that it commits, or into the --one-batch batch.
 * Reports what it did or why it failed, once, on stderr.  Returns 0, or
 * 1 when nothing of the file was imported. */
static int import_file(struct import_job *job, const char *path)
{
	static uint8_t prefix[64 << 10];
	const bool is_stdin = strcmp(path, "-") == 0;
	const char *shown = is_stdin ? "<stdin>" : path;
	struct import_options o = job->o;
	struct import_symbols sym = {0};
	struct store_batch *b = NULL;
	struct timespec t0, t1;
	enum import_format fmt = job->fmt;
	struct stat st;
	int rc, ret = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", shown, strerror(errno));
		goto out_fd;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": %s: is a directory, expected a file\n", path);
		goto out_fd;
	}
	/* Samples that carry no time of their own are placed at --time, else
	 * at the file's modification time (a series of heap dumps becomes a
	 * time series), else, for a pipe, now. */
	if (!job->have_time)
		o.now = S_ISREG(st.st_mode) ? (int64_t)st.st_mtime : (int64_t)time(NULL);

	/* Read a prefix for format detection; the importer consumes it first. */
	ssize_t plen = read_prefix(fd, prefix, sizeof(prefix));
	if (plen < 0) {
		fprintf(stderr, PROG ": %s: %s\n", shown, strerror((int)-plen));
		goto out_fd;
	}
	if (plen == 0) {
		fprintf(stderr,
		        PROG ": %s: empty input, expected a profile: " IMPORT_FORMATS_TRIED "\n",
		        shown);
		goto out_fd;
	}
	if (fmt == IMPORT_FORMAT_AUTO)
		fmt = import_detect(prefix, (size_t)plen);
	if (fmt == IMPORT_FORMAT_UNKNOWN) {
		fprintf(stderr,
		        PROG ": %s: expected a profile in a format flamefs reads, got none it "
		             "recognizes; tried " IMPORT_FORMATS_TRIED "; --format picks one\n",
		        shown);
		goto out_fd;
	}
	/* Profiles of addresses are symbolized against the files they name. */
	if (fmt == IMPORT_FORMAT_GPERF_CPU || fmt == IMPORT_FORMAT_LEGACY ||
	    fmt == IMPORT_FORMAT_PERF_DATA) {
		if (offline_symbols_new(o.binary_path, &sym) == -ENOMEM)
			die("out of memory");
	}

	import_job_store(job);
	b = job->batch ? job->batch : store_batch_new(job->s);
	if (!b)
		die("%s: cannot start a batch: %s", job->dir, store_errmsg(job->s));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	job->ms_open += since(&t0, &t1) * 1e3;

	struct import_ctx ctx = {
	        .batch = b,
	        .opt = &o,
	        .path = path,
	        .fd = fd,
	        .prefix = prefix,
	        .prefix_len = (size_t)plen,
	        .sym = sym.user ? &sym : NULL,
	};
	if (isatty(STDERR_FILENO)) {
		ctx.progress = show_progress;
		progress_st.job = job;
	}
	switch (fmt) {
	case IMPORT_FORMAT_PERF: rc = import_perf(&ctx); break;
	case IMPORT_FORMAT_FOLDED: rc = import_folded(&ctx); break;
	case IMPORT_FORMAT_GPERF_CPU: rc = import_gperf_cpu(&ctx); break;
	case IMPORT_FORMAT_LEGACY: rc = import_legacy(&ctx); break;
	case IMPORT_FORMAT_PERF_DATA: rc = import_perf_data(&ctx); break;
	default: rc = import_pprof(&ctx); break;
	}
	job->ms_parse += ms_since(&t1);
	if (ctx.progress)
		fputs("\r\033[K", stderr);
	const char *nothing =
	        job->one_batch ? "nothing was imported" : "nothing of it was imported";
	if (rc < 0) {
		if (!ctx.err[0])
			import_fail(&ctx, ctx.line, "%s",
			            rc == -ENOMEM ? "out of memory" : strerror(-rc));
		fprintf(stderr, PROG ": %s\n" PROG ": %s\n", ctx.err, nothing);
		goto out;
	}
	if (ctx.samples == 0) {
		fprintf(stderr, PROG ": %s: no samples found in %s input; %s\n", shown,
		        import_format_name(fmt), nothing);
		goto out;
	}
	if (!job->one_batch) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (store_batch_commit(b) < 0) {
			fprintf(stderr, PROG ": %s: commit failed: %s; %s\n", job->dir,
			        store_errmsg(job->s), nothing);
			goto out;
		}
		job->ms_commit += ms_since(&t1);
	}
	if (ctx.warning[0])
		fprintf(stderr, PROG ": %s: %s\n", shown, ctx.warning);
	fprintf(stderr, PROG ": %s %" PRIu64 " samples (%.1f MB of %s) from %s into %s\n",
	        job->one_batch ? "read" : "imported", ctx.samples, (double)ctx.bytes / 1e6,
	        import_format_name(fmt), shown, job->dir);
	job->samples += ctx.samples;
	job->bytes += ctx.bytes;
	job->files_done++;
	ret = 0;
out:
	offline_symbols_free(&sym);
	if (b != job->batch)
		store_batch_free(b);
out_fd:
	if (!is_stdin)
		close(fd);
	return ret;
}

static int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"format", required_argument, NULL, 'f'},
	        {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'v'},
	        {"event", required_argument, NULL, 'e'},
	        {"all-events", no_argument, NULL, 'a'},
	        {"time", required_argument, NULL, 't'},
	        {"binary-path", required_argument, NULL, 'p'},
	        {"clock-offset", required_argument, NULL, 'C'},
	        {"one-batch", no_argument, NULL, '1'},
	        {"keep-going", no_argument, NULL, 'k'},
	        {"timings", no_argument, NULL, 'T'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct import_job job = {.fmt = IMPORT_FORMAT_AUTO};
	struct import_options *o = &job.o;
	const char *store_arg = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'b': o->binary = optarg; break;
		case 'v': o->version = optarg; break;
		case 'e': o->event = optarg; break;
		case 'a': o->all_events = true; break;
		case 't': {
			char *end;
			errno = 0;
			long long t = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end)
				die("--time: expected unix seconds, got \"%s\"", optarg);
			o->now = t;
			job.have_time = true;
			break;
		}
		case 'C': {
			if (strcmp(optarg, "boot") == 0) {
				o->clock_offset = boot_time();
				break;
			}
			char *end;
			errno = 0;
			long long t = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end)
				die("--clock-offset: expected seconds or \"boot\", got \"%s\"",
				    optarg);
			o->clock_offset = t;
			break;
		}
		case 'f': {
			int f = import_format_parse(optarg);
			if (f < 0)
				die("--format: expected perf, perf.data, folded, pprof, "
				    "gperftools-cpu, "
				    "legacy or auto, got \"%s\"",
				    optarg);
			job.fmt = (enum import_format)f;
			break;
		}
		case 'p': o->binary_path = optarg; break;
		case '1': job.one_batch = true; break;
		case 'k': job.keep_going = true; break;
		case 'T': job.timings = true; break;
		case 'h': usage_import(stdout); return 0;
		default: usage_import(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage_import(stderr);
		return 2;
	}
	if (o->event && o->all_events)
		die("--event and --all-events exclude each other");
	if ((o->binary && !*o->binary) || (o->version && !*o->version))
		die("--binary and --version need a non-empty value");
	if (job.one_batch && job.keep_going)
		die("--one-batch and --keep-going exclude each other: one batch is "
		    "imported whole or not at all");
	for (int i = optind + 1; i < argc; i++)
		for (int j = optind; j < i; j++)
			if (strcmp(argv[i], "-") == 0 && strcmp(argv[j], "-") == 0)
				die("standard input (-) can be imported once per command");

	char *owned;
	job.dir = resolve_store(store_arg, &owned);
	job.count = (size_t)(argc - optind);
	clock_gettime(CLOCK_MONOTONIC, &progress_st.start);
	progress_st.last = progress_st.start;

	size_t failed = 0;
	for (int i = optind; i < argc; i++) {
		job.index = (size_t)(i - optind) + 1;
		if (import_file(&job, argv[i]) == 0)
			continue;
		failed++;
		if (job.one_batch || !job.keep_going) {
			if (i + 1 < argc)
				fprintf(stderr,
				        PROG ": stopped at %s; %zu file(s) after it not read%s\n",
				        argv[i], (size_t)(argc - i - 1),
				        job.one_batch ? "" : " (--keep-going goes on)");
			break;
		}
	}

	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = failed ? 1 : 0;
	if (job.one_batch) {
		if (failed) {
			if (job.files_done)
				fprintf(stderr, PROG ": --one-batch: nothing was imported\n");
		} else if (store_batch_commit(job.batch) < 0) {
			fprintf(stderr, PROG ": %s: commit failed: %s; nothing was imported\n",
			        job.dir, store_errmsg(job.s));
			status = 1;
		} else {
			job.ms_commit += ms_since(&t0);
		}
		store_batch_free(job.batch);
	}
	if (job.count > 1 && !status)
		fprintf(stderr,
		        PROG ": imported %" PRIu64 " samples (%.1f MB) from %zu files into %s\n",
		        job.samples, (double)job.bytes / 1e6, job.files_done, job.dir);
	else if (job.count > 1 && job.keep_going && job.files_done)
		fprintf(stderr,
		        PROG ": imported %" PRIu64 " samples (%.1f MB) from %zu of %zu files into "
		             "%s; %zu failed\n",
		        job.samples, (double)job.bytes / 1e6, job.files_done, job.count, job.dir,
		        failed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	store_close(job.s);
	if (job.timings)
		fprintf(stderr,
		        PROG
		        ": timings: open %.1f ms, parse %.1f ms, commit %.1f ms, settle %.1f ms "
		        "(%zu file(s))\n",
		        job.ms_open, job.ms_parse, job.ms_commit, ms_since(&t0), job.count);
	free(owned);
	return status;
}

/* ---- stats ------------------------------------------------------------- */

struct uniq {
	uint8_t *seen; /* one bit per node */
	uint64_t count;
};

static int count_unique(void *p, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct uniq *u = p;
	uint8_t bit = (uint8_t)(1u << (node & 7));
	if (!(u->seen[node >> 3] & bit)) {
		u->seen[node >> 3] |= bit;
		u->count++;
	}
	return 0;
}

static void human(char *buf, size_t len, uint64_t v)
{
	if (v >= 10000000000ull)
		snprintf(buf, len, "%.1fG", (double)v / 1e9);
	else if (v >= 10000000ull)
		snprintf(buf, len, "%.1fM", (double)v / 1e6);
	else if (v >= 10000ull)
		snprintf(buf, len, "%.1fk", (double)v / 1e3);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'h': usage_stats(stdout); return 0;
		default: usage_stats(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_stats(stderr);
		return 2;
	}

	char *owned, err[512];
	const char *dir = resolve_store(store_arg, &owned);
	struct store *s;
	if (store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0)
		die("%s", err);

	struct store_series *list;
	size_t n;
	if (store_series_list(s, &list, &n) < 0)
		die("%s: %s", dir, store_errmsg(s));

	struct uniq u = {.seen = calloc(store_node_count(s) / 8 + 1, 1)};
	if (!u.seen)
		die("out of memory");

	printf("%-20s %-14s %-12s %12s %16s %10s %12s %12s\n", "BINARY", "VERSION", "EVENT",
	       "SAMPLES", "WEIGHT", "STACKS", "IMPORTED", "DISK");
	uint64_t input = 0;
	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		memset(u.seen, 0, store_node_count(s) / 8 + 1);
		u.count = 0;
		if (store_series_counts(s, se->id, INT64_MIN, INT64_MAX, count_unique, &u) < 0)
			die("%s: %s", dir, store_errmsg(s));
		uint64_t disk = 0;
		store_series_disk_bytes(s, se->id, &disk);
		char in[32], dk[32];
		human(in, sizeof(in), se->input_bytes);
		human(dk, sizeof(dk), disk);
		printf("%-20s %-14s %-12s %12" PRIu64 " %16" PRIu64 " %10" PRIu64 " %12s %12s\n",
		       se->binary, se->version, se->event, se->samples, se->weight, u.count, in,
		       dk);
		input += se->input_bytes;
	}
	free(u.seen);

	struct store_footprint fp;
	if (store_footprint(s, &fp) < 0)
		die("%s: %s", dir, store_errmsg(s));
	char a[32], b[32], f[32], nd[32], cn[32];
	human(a, sizeof(a), fp.dir_bytes);
	human(b, sizeof(b), input);
	human(f, sizeof(f), fp.frames_bytes);
	human(nd, sizeof(nd), fp.nodes_bytes);
	human(cn, sizeof(cn), fp.counts_bytes);
	printf("\n%zu series, %u frames, %u stack nodes\n", n, store_frame_count(s) - 1,
	       store_node_count(s) - 1);
	printf("store on disk: %s bytes (frames %s, nodes %s, counts %s); imported: %s bytes", a, f,
	       nd, cn, b);
	if (fp.dir_bytes > 0 && input > 0)
		printf("; %.1fx smaller\n", (double)input / (double)fp.dir_bytes);
	else
		printf("\n");
	printf("bytes: dir=%" PRIu64 " frames=%" PRIu64 " nodes=%" PRIu64 " counts=%" PRIu64
	       " other=%" PRIu64 " input=%" PRIu64 "\n",
	       fp.dir_bytes, fp.frames_bytes, fp.nodes_bytes, fp.counts_bytes, fp.other_bytes,
	       input);
	store_series_free(list, n);
	store_close(s);
	free(owned);
	return 0;
}

/* ---- export ------------------------------------------------------------ */

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

enum export_format {
	EXPORT_FOLDED,
	EXPORT_PPROF,
	EXPORT_SVG,
	EXPORT_CALLGRIND,
	EXPORT_REGRESSIONS
};

/* Moves the series that match to the front of list[0..n); returns how
 * many.  NULL matches anything. */
static size_t keep_series(struct store_series *list, size_t n, const char *binary,
                          const char *version, const char *event)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		if ((binary && strcmp(se->binary, binary) != 0) ||
		    (version && strcmp(se->version, version) != 0) ||
		    (event && strcmp(se->event, event) != 0))
			continue;
		struct store_series tmp = list[m];
		list[m++] = *se;
		*se = tmp;
	}
	return m;
}

static int64_t parse_time_opt(const char *opt, const char *arg)
{
	int64_t t;

	if (view_parse_time(arg, &t) < 0)
		die("%s: expected Unix seconds or an ISO 8601 UTC time (2026-11-24T14:02:00Z), got "
		    "\"%s\"",
		    opt, arg);
	return t;
}

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"format", required_argument, NULL, 'f'},
	        {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'v'},
	        {"event", required_argument, NULL, 'e'},
	        {"output", required_argument, NULL, 'o'},
	        {"base", required_argument, NULL, 'B'},
	        {"last", required_argument, NULL, 'L'},
	        {"from", required_argument, NULL, 'F'},
	        {"to", required_argument, NULL, 'T'},
	        {"functions", no_argument, NULL, 'U'},
	        {"callers", required_argument, NULL, 'C'},
	        {"callees", required_argument, NULL, 'E'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL, *binary = NULL, *version = NULL, *event = NULL;
	const char *output = NULL, *base = NULL, *last = NULL, *from_arg = NULL, *to_arg = NULL;
	const char *callers = NULL, *callees = NULL;
	bool functions = false;
	enum export_format format = EXPORT_FOLDED;
	int c;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'b': binary = optarg; break;
		case 'v': version = optarg; break;
		case 'e': event = optarg; break;
		case 'o': output = optarg; break;
		case 'B': base = optarg; break;
		case 'L': last = optarg; break;
		case 'F': from_arg = optarg; break;
		case 'T': to_arg = optarg; break;
		case 'U': functions = true; break;
		case 'C': callers = optarg; break;
		case 'E': callees = optarg; break;
		case 'f':
			if (strcmp(optarg, "pprof") == 0)
				format = EXPORT_PPROF;
			else if (strcmp(optarg, "svg") == 0 || strcmp(optarg, "flame.svg") == 0)
				format = EXPORT_SVG;
			else if (strcmp(optarg, "callgrind") == 0)
				format = EXPORT_CALLGRIND;
			else if (strcmp(optarg, "regressions") == 0)
				format = EXPORT_REGRESSIONS;
			else if (strcmp(optarg, "folded") == 0)
				format = EXPORT_FOLDED;
			else
				die("--format: expected folded, pprof, svg, callgrind or "
				    "regressions, got "
				    "\"%s\"",
				    optarg);
			break;
		case 'h': usage_export(stdout); return 0;
		default: usage_export(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_export(stderr);
		return 2;
	}
	if ((functions ? 1 : 0) + (callers ? 1 : 0) + (callees ? 1 : 0) > 1)
		die("--functions, --callers and --callees exclude each other");
	if (base && (functions || callers || callees))
		die("--base makes a diff; it does not go with --functions, --callers or --callees");
	if (base && !version)
		die("--base needs --version: the version to compare with it");
	if (format == EXPORT_REGRESSIONS && !base)
		die("--format regressions needs --base");
	if (base && format == EXPORT_CALLGRIND)
		die("--format callgrind does not show a diff");
	if (last && (from_arg || to_arg))
		die("--last and --from/--to exclude each other");

	int64_t from = INT64_MIN, to = INT64_MAX;
	bool window = last || from_arg || to_arg;
	if (from_arg)
		from = parse_time_opt("--from", from_arg);
	if (to_arg)
		to = parse_time_opt("--to", to_arg);

	char *owned, err[512];
	const char *dir = resolve_store(store_arg, &owned);
	struct store *s;
	if (store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0)
		die("%s", err);
	if (last) {
		int64_t secs;
		if (view_parse_duration(last, &secs) < 0)
			die("--last: expected a duration such as 90s, 5m, 1h or 1d12h, got \"%s\"",
			    last);
		view_window_last(time(NULL), secs, store_bucket_seconds(s), &from, &to);
	}
	struct store_series *list;
	size_t n;
	if (store_series_list(s, &list, &n) < 0)
		die("%s: %s", dir, store_errmsg(s));

	/* Keep the matching series, then only one event: the one asked for,
	 * else the one with the most samples. */
	size_t m = keep_series(list, n, binary, version, event);
	const char *chosen = event;
	if (!chosen) {
		uint64_t best = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t sum = 0;
			for (size_t j = 0; j < m; j++)
				if (strcmp(list[j].event, list[i].event) == 0)
					sum += list[j].samples;
			if (!chosen || sum > best) {
				chosen = list[i].event;
				best = sum;
			}
		}
	}
	size_t k = chosen ? keep_series(list, m, NULL, NULL, chosen) : 0;
	if (k == 0 && (binary || version || event))
		die("%s: no series matches%s%s%s%s%s%s", dir, binary ? " --binary " : "",
		    binary ? binary : "", version ? " --version " : "", version ? version : "",
		    event ? " --event " : "", event ? event : "");

	/* The base version's series, for a diff: a copy of the entries (the
	 * strings stay owned by `list`). */
	struct store_series *alist = NULL;
	size_t ak = 0;
	if (base && k > 0) {
		alist = malloc(n * sizeof(*alist));
		if (!alist)
			die("out of memory");
		for (size_t i = 0; i < n; i++)
			if ((!binary || strcmp(list[i].binary, binary) == 0) &&
			    strcmp(list[i].version, base) == 0 &&
			    strcmp(list[i].event, chosen) == 0)
				alist[ak++] = list[i];
		if (ak == 0)
			die("%s: no series matches%s%s --version %s --event %s", dir,
			    binary ? " --binary " : "", binary ? binary : "", base, chosen);
	}

	struct view_buf out = {0};
	if (k > 0) {
		struct view_tree *t, *a = NULL, *d = NULL, *ft = NULL;
		int rc = window ? view_tree_build_window(s, list, k, from, to, &t)
		                : view_tree_build(s, list, k, INT64_MIN, INT64_MAX, &t);
		if (rc == 0 && base)
			rc = window ? view_tree_build_window(s, alist, ak, from, to, &a)
			            : view_tree_build(s, alist, ak, INT64_MIN, INT64_MAX, &a);
		if (rc == -EOVERFLOW)
			die("%s: the counts of these %zu series add up to more than 2^64 - 1; "
			    "export "
			    "fewer at a time (--binary, --version)",
			    dir, k);
		if (rc < 0)
			die("%s: cannot build the call tree: %s", dir, strerror(-rc));
		const struct view_tree *show = t;
		if (base) {
			rc = view_diff_build(a, VIEW_ROOT, t, VIEW_ROOT, &d);
			if (rc < 0)
				die("%s: cannot build the diff: %s", dir, strerror(-rc));
			show = d;
		}
		if (functions || callers || callees) {
			struct view_functions *fx;
			rc = view_functions_build(t, VIEW_ROOT, &fx);
			if (rc < 0)
				die("%s: cannot index the functions: %s", dir, strerror(-rc));
			if (functions) {
				for (uint32_t i = 0; i < view_functions_count(fx) && rc == 0; i++) {
					struct view_counts fc;
					size_t len;
					const char *name = view_functions_name(fx, i, &len);
					char num[64];
					view_functions_counts(fx, i, &fc);
					int nl = snprintf(num, sizeof(num),
					                  "%" PRIu64 " %" PRIu64 " ",
					                  fc.self_weight, fc.total_weight);
					if ((rc = view_buf_append(&out, num, (size_t)nl)) == 0 &&
					    (rc = view_buf_append(&out, name, len)) == 0)
						rc = view_buf_append(&out, "\n", 1);
				}
				if (rc < 0)
					die("%s: cannot list the functions: %s", dir,
					    strerror(-rc));
				view_functions_free(fx);
				goto write;
			}
			const char *fname = callers ? callers : callees;
			uint32_t fi = view_functions_find(fx, fname, strlen(fname));
			if (fi == VIEW_NONE)
				die("%s: no function named \"%s\"", dir, fname);
			rc = callers ? view_functions_callers(fx, fi, &ft)
			             : view_functions_callees(fx, fi, &ft);
			if (rc < 0)
				die("%s: cannot build the tree of %s: %s", dir, fname,
				    strerror(-rc));
			view_functions_free(fx);
			show = ft;
		}
		switch (format) {
		case EXPORT_PPROF: rc = view_render_pprof(show, VIEW_ROOT, &out); break;
		case EXPORT_SVG: rc = view_render_flame_svg(show, VIEW_ROOT, &out); break;
		case EXPORT_CALLGRIND: rc = view_render_callgrind(show, VIEW_ROOT, &out); break;
		case EXPORT_REGRESSIONS: rc = view_render_regressions(show, VIEW_ROOT, &out); break;
		case EXPORT_FOLDED: rc = view_render_folded(show, VIEW_ROOT, &out); break;
		}
		if (rc < 0)
			die("%s: cannot render: %s", dir, strerror(-rc));
	write:
		view_tree_free(ft);
		view_tree_free(d);
		view_tree_free(a);
		view_tree_free(t);
	}

	int fd = STDOUT_FILENO;
	if (output) {
		fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die("%s: %s", output, strerror(errno));
	}
	int rc = write_all(fd, out.data ? out.data : "", out.len);
	if (rc < 0 || (output && close(fd) < 0))
		die("%s: %s", output ? output : "<stdout>", strerror(rc < 0 ? -rc : errno));
	view_buf_free(&out);
	free(alist);
	store_series_free(list, n);
	store_close(s);
	free(owned);
	return 0;
}

/* ---- compact ----------------------------------------------------------- */

static void usage_compact(FILE *f)
{
	fputs("Usage: " PROG " compact [--store DIR]\n"
	      "\n"
	      "Flushes and compacts the store so it takes the least space.  It needs\n"
	      "the store's write lock: it fails while import or record writes to it.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " compact --store ~/prof && du -sh ~/prof\n",
	      f);
}

static int cmd_compact(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'h': usage_compact(stdout); return 0;
		default: usage_compact(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_compact(stderr);
		return 2;
	}
	char *owned, err[512];
	const char *dir = resolve_store(store_arg, &owned);
	struct store *s;
	if (store_open(dir, 0, &s, err, sizeof(err)) < 0)
		die("%s", err);
	if (store_notice(s))
		fprintf(stderr, PROG ": %s\n", store_notice(s));
	if (store_compact(s) < 0)
		die("%s: compaction failed: %s", dir, store_errmsg(s));
	store_close(s);
	free(owned);
	return 0;
}

/* ---- prune ------------------------------------------------------------- */

static void usage_prune(FILE *f)
{
	fputs("Usage: " PROG
	      " prune [--store DIR] (--older-than DURATION | --before SECONDS | --all)\n"
	      "           [--binary NAME] [--version LABEL] [--dry-run]\n"
	      "\n"
	      "Deletes stored counts by age, as one atomic write.  Time is kept in\n"
	      "buckets (60 s); only buckets that lie wholly before the cut-off go.  A\n"
	      "series left with nothing disappears from stats, export and the view.\n"
	      "Frames and stacks stay in the store's dictionary.\n"
	      "\n"
	      "  --store DIR            the store (default: $FLAMEFS_STORE, else\n"
	      "                         $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --older-than DURATION  cut-off = now - DURATION: 90 (seconds), 45s, 30m,\n"
	      "                         12h, 7d, 2w, or a sum such as 1d12h.  Series\n"
	      "                         imported from perf script carry perf's clock\n"
	      "                         (seconds since boot), not wall-clock time: they\n"
	      "                         are left alone (use --before or --all)\n"
	      "  --before SECONDS       cut-off as a time in the series' own clock (unix\n"
	      "                         seconds, or perf's clock), for every series\n"
	      "  --all                  everything of the selected series; needs --binary\n"
	      "  --binary NAME          only this binary's series\n"
	      "  --version LABEL        only this version's series\n"
	      "  --dry-run              say what would go, delete nothing\n"
	      "\n"
	      "It needs the store's write lock: it fails while import or record writes\n"
	      "to it (record --retention prunes as it goes).  Run compact afterwards to\n"
	      "give the space back at once.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " prune --store /var/lib/flamefs --older-than 30d\n"
	      "  " PROG " prune --store ~/prof --all --binary cc1 --version default\n"
	      "  " PROG " prune --store ~/prof --older-than 1w --dry-run\n",
	      f);
}

/* Parses a whole signed decimal number; false when s is not one. */
static bool parse_seconds(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*out = v;
	return true;
}

static int cmd_prune(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"older-than", required_argument, NULL, 'o'},
	        {"before", required_argument, NULL, 'b'},
	        {"all", no_argument, NULL, 'a'},
	        {"binary", required_argument, NULL, 'B'},
	        {"version", required_argument, NULL, 'V'},
	        {"dry-run", no_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct store_prune_opts o = {0};
	const char *store_arg = NULL;
	int cutoffs = 0, c, r;
	int64_t age;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'o':
			r = collect_parse_duration(optarg, &age);
			if (r < 0) {
				fprintf(stderr,
				        PROG ": prune: --older-than \"%s\": %s; expected a "
				             "duration such as 90, 30m, 12h, 7d or 1d12h\n",
				        optarg, r == -ERANGE ? "too long" : "not a duration");
				return 2;
			}
			o.before = (int64_t)time(NULL) - age;
			o.wall_clock_only = true;
			cutoffs++;
			break;
		case 'b':
			if (!parse_seconds(optarg, &o.before)) {
				fprintf(stderr,
				        PROG ": prune: --before \"%s\": expected a time in "
				             "seconds\n",
				        optarg);
				return 2;
			}
			cutoffs++;
			break;
		case 'a':
			o.before = INT64_MAX;
			cutoffs++;
			break;
		case 'B': o.binary = optarg; break;
		case 'V': o.version = optarg; break;
		case 'n': o.dry_run = true; break;
		case 'h': usage_prune(stdout); return 0;
		default: usage_prune(stderr); return 2;
		}
	}
	if (optind != argc || cutoffs != 1) {
		if (optind == argc)
			fprintf(stderr, PROG ": prune: give exactly one of --older-than, --before "
			                     "and --all\n");
		usage_prune(stderr);
		return 2;
	}
	if (o.before == INT64_MAX && !o.binary) {
		fprintf(stderr, PROG ": prune: --all needs --binary (to empty the whole store, "
		                     "remove its directory)\n");
		return 2;
	}

	char *owned, err[512];
	const char *dir = resolve_store(store_arg, &owned);
	struct store *s;
	struct store_prune_stats st;
	if (store_open(dir, 0, &s, err, sizeof(err)) < 0)
		die("%s", err);
	if (store_notice(s))
		fprintf(stderr, PROG ": %s\n", store_notice(s));
	if (store_prune(s, &o, &st) < 0)
		die("%s: prune failed: %s", dir, store_errmsg(s));
	printf("%s %" PRIu64 " time buckets of %" PRIu64 " series (%" PRIu64 " emptied): %" PRIu64
	       " samples, weight %" PRIu64 "\n",
	       o.dry_run ? "would delete" : "deleted", st.buckets, st.series, st.series_emptied,
	       st.samples, st.weight);
	if (st.other_clock)
		printf("left alone: %" PRIu64 " series on perf's clock (prune them with --before "
		       "or --all)\n",
		       st.other_clock);
	store_close(s);
	free(owned);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
		puts(PROG " " FLAMEFS_VERSION);
		return 0;
	}
	argv++;
	argc--;
	if (strcmp(cmd, "import") == 0)
		return cmd_import(argc, argv);
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc, argv);
	if (strcmp(cmd, "compact") == 0)
		return cmd_compact(argc, argv);
	if (strcmp(cmd, "prune") == 0)
		return cmd_prune(argc, argv);
	if (strcmp(cmd, "record") == 0)
		return record_main(argc, argv);
	if (strcmp(cmd, "unwind-table") == 0)
		return unwind_table_main(argc, argv);
	fprintf(stderr,
	        PROG ": unknown command \"%s\"; expected import, record, stats, export, compact, "
	             "prune or unwind-table\n",
	        cmd);
	return 2;
}
