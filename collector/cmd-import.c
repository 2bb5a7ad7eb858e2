/*
 * cmd-import.c — `flamefs-collect import`: reads each file's first bytes,
 * picks its format from the table in import/formats.c (or --format),
 * imports it into the store with one batch per file (or one for all with
 * --one-batch) and reports progress, notices and failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "import.h"
#include "record.h"
#include "symbolize.h"
#include "store.h"

#include "cli.h"

static void usage_import(FILE *f)
{
	fputs("Usage: " PROG " import [--store DIR] [--format FORMAT]\n"
	      "           [--host NAME] [--binary NAME] [--version LABEL]\n"
	      "           [--event EVENT | --all-events]\n"
	      "           [--time SECONDS] [--binary-path DIR[:DIR...]]\n"
	      "           [--clock-offset SECONDS|boot] [--keep-samples DURATION]\n"
	      "           [--label KEY=VALUE]... [--by-thread]\n"
	      "           [--one-batch | --keep-going]\n"
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
	      "  --host NAME     the host the samples belong to (default: this machine's\n"
	      "                  hostname); the view sums hosts and shows each one in\n"
	      "                  @host/NAME/\n"
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
	      "  --keep-samples DURATION  keep each sample whole (its time to the\n"
	      "                  microsecond, pid, tid, weight) for this long, counted\n"
	      "                  back from the store's newest sample, then only its\n"
	      "                  count (30m, 6h, 1d; 0: counts only); kept in the\n"
	      "                  store (default 2h).  Samples with a time of their\n"
	      "                  own (perf script, perf.data) keep it; other formats\n"
	      "                  are counted per time bucket.  Detail past the window\n"
	      "                  is rolled up after each commit\n",
	      f);
	fputs("  --label KEY=VALUE  give every sample of the files this label\n"
	      "                  (repeatable); KEY is 1 to 32 bytes of a-z, 0-9 and _\n"
	      "                  starting with a letter, VALUE 1 to 1024 bytes without\n"
	      "                  control characters.  pprof's string labels are kept\n"
	      "                  as they are; a KEY a file's samples carry is refused\n"
	      "  --by-thread     perf script, perf.data: label each sample with its\n"
	      "                  thread's name (thread=NAME); with perf.data the binary\n"
	      "                  is then the process's name, with perf script text (which\n"
	      "                  prints only the thread's) give --binary\n"
	      "  --one-batch     all the files as one atomic batch: all or nothing\n"
	      "  --keep-going    after a file fails, go on with the next ones (the\n"
	      "                  exit status is still 1)\n"
	      "  --timings       print where the time went: open, parse, commit, settle\n"
	      "\n",
	      f);
	fputs("EXAMPLES\n"
	      "  perf record -g -a -- sleep 20 && " PROG " import --store ~/prof perf.data\n"
	      "  perf script | " PROG " import --store ~/prof -\n"
	      "  " PROG " import --store ~/prof --binary nginx --version 1.25.3 out.folded\n"
	      "  " PROG " import --store ~/prof cpu.pb.gz\n"
	      "  " PROG " import --store ~/prof --binary-path ./bin cpu.prof\n"
	      "  " PROG " import --store ~/prof /tmp/app.*.heap      # a time series of dumps\n"
	      "  " PROG " import --store ~/prof --keep-going dumps/*.pb.gz\n"
	      "  " PROG " import --store ~/prof --host web-3 web-3.perf.data\n"
	      "  " PROG " import --store ~/prof --label env=staging cpu.pb.gz\n"
	      "  " PROG " import --store ~/prof --by-thread perf.data\n"
	      "  " PROG " import --store ~/prof --keep-samples 1d perf.data && \\\n"
	      "      " PROG " samples --store ~/prof --folded | head\n",
	      f);
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
	const char *host;     /* --host, or NULL */
	int64_t keep_samples; /* --keep-samples, seconds; -1: the store's own */
	struct store *s;
	struct store_batch *batch;           /* --one-batch: the command's one batch */
	size_t index, count;                 /* the file being imported (1-based), of count */
	size_t files_done;                   /* files imported (or, with --one-batch, parsed) */
	uint64_t samples, bytes;             /* totals over the files done */
	double ms_open, ms_parse, ms_commit; /* --timings, summed over files */
	/* The series before this command wrote (for the stack quality
	 * warning), and whether a file was perf input (the warning's advice
	 * is perf's). */
	struct store_series *before;
	size_t nbefore;
	bool perf_input;
	char *labels; /* --label's, canonical; o.labels points here */
};

/* The progress line, on a terminal only.  With several files it stands
 * in for the per-file "imported" lines, and any other message clears it
 * first (progress_clear()). */
struct progress_state {
	struct timespec start, last;
	const struct import_job *job;
	bool tty;   /* stderr is a terminal */
	bool shown; /* a progress line is on it now */
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

/* The progress line on a terminal, at most twice a second: "[3/1000]
 * 12.0 MB read, ..." over the whole command; samples and bytes are the
 * file's so far, added to the files done. */
static void progress_show(const struct import_job *job, uint64_t samples, uint64_t bytes)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (since(&progress_st.last, &now) < 0.5)
		return;
	progress_st.last = now;
	double t = since(&progress_st.start, &now);
	samples += job->samples;
	bytes += job->bytes;
	fputs("\r", stderr);
	if (job->count > 1)
		fprintf(stderr, "[%zu/%zu] ", job->index, job->count);
	fprintf(stderr, "%.1f MB read, %" PRIu64 " samples, %.0f samples/s\033[K",
	        (double)bytes / 1e6, samples, t > 0 ? (double)samples / t : 0.0);
	progress_st.shown = true;
}

static void show_progress(struct import_ctx *ctx)
{
	progress_show(progress_st.job, ctx->samples, ctx->bytes);
}

/* Clears the progress line, if one is shown, before another message. */
static void progress_clear(void)
{
	if (progress_st.shown)
		fputs("\r\033[K", stderr);
	progress_st.shown = false;
}

/* This machine's boot time in Unix seconds (/proc/stat's btime): what
 * perf's default clock (seconds since boot) is counted from. */
static int64_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long bt = -1;

	if (!f)
		cli_die("--clock-offset boot: /proc/stat: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	fclose(f);
	if (bt < 0)
		cli_die("--clock-offset boot: no btime in /proc/stat");
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
		cli_die("%s", err);
	job->dir = store_where(job->s); /* a database: without its password */
	if (store_notice(job->s))
		fprintf(stderr, PROG ": %s\n", store_notice(job->s));
	if (job->host && store_set_host(job->s, job->host) < 0)
		cli_die("--host: out of memory");
	if (job->keep_samples >= 0) {
		int rc = store_set_keep_samples(job->s, job->keep_samples);
		if (rc == -EOPNOTSUPP)
			cli_die("--keep-samples: %s keeps no samples with their moments", job->dir);
		if (rc < 0)
			cli_die_store(job->s);
	}
	job->o.samples = store_keep_samples(job->s) > 0;
	if (store_series_list(job->s, &job->before, &job->nbefore) < 0)
		cli_die_store(job->s);
	if (job->one_batch) {
		job->batch = store_batch_new(job->s);
		if (!job->batch)
			cli_die("%s: cannot start a batch: %s", job->dir, store_errmsg(job->s));
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
/* Opens path (- for standard input) and checks it is not a directory;
 * the fd and *st, or -1 after saying why. */
static int open_input(const char *path, bool is_stdin, const char *shown, struct stat *st)
{
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		progress_clear();
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	int err = fstat(fd, st) < 0 ? errno : 0;
	if (err || S_ISDIR(st->st_mode)) {
		progress_clear();
		if (err)
			fprintf(stderr, PROG ": %s: %s\n", shown, strerror(err));
		else
			fprintf(stderr, PROG ": %s: is a directory, expected a file\n", path);
		if (!is_stdin)
			close(fd);
		return -1;
	}
	return fd;
}

/* Reads the prefix that detection looks at (the importer consumes it
 * first) into prefix[0..*plen) and finds the importer of *fmt (detected
 * when auto); NULL after saying why. */
static const struct import_format_ops *pick_format(int fd, const char *shown, uint8_t *prefix,
                                                   size_t cap, ssize_t *plen,
                                                   enum import_format *fmt)
{
	const struct import_format_ops *ops;

	*plen = read_prefix(fd, prefix, cap);
	if (*plen < 0) {
		progress_clear();
		fprintf(stderr, PROG ": %s: %s\n", shown, strerror((int)-*plen));
		return NULL;
	}
	if (*plen == 0) {
		progress_clear();
		fprintf(stderr,
		        PROG ": %s: empty input, expected a profile: " IMPORT_FORMATS_TRIED "\n",
		        shown);
		return NULL;
	}
	if (*fmt == IMPORT_FORMAT_AUTO)
		*fmt = import_detect(prefix, (size_t)*plen);
	ops = import_format_find(*fmt);
	if (!ops) {
		progress_clear();
		fprintf(stderr,
		        PROG ": %s: expected a profile in a format flamefs reads, got none it "
		             "recognizes; tried " IMPORT_FORMATS_TRIED "; --format picks one\n",
		        shown);
	}
	return ops;
}

/* What an import that succeeded must still say: the importer's warning,
 * files its profile named that were not opened, and what the limits cut
 * or cleaned. */
static void report_notices(const struct import_ctx *ctx, struct import_symbols *sym,
                           const char *shown)
{
	if (ctx->warning[0]) {
		progress_clear();
		fprintf(stderr, PROG ": %s: %s\n", shown, ctx->warning);
	}
	const char *refused;
	size_t nrefused = offline_symbols_refused(sym, &refused);
	if (nrefused) {
		progress_clear();
		fprintf(stderr,
		        PROG
		        ": %s: %zu file%s the profile names not opened (a path with \"..\", or "
		        "not a regular file of at most 4 GiB), first %s: its frames are named "
		        "[basename]\n",
		        shown, nrefused, nrefused == 1 ? "" : "s", refused);
	}
	if (ctx->cut_stacks) {
		progress_clear();
		fprintf(stderr,
		        PROG
		        ": %s: stacks deeper than %zu frames or with more than %zu MiB of "
		        "frame names were cut to their innermost frames under " IMPORT_TRUNCATED
		        "\n",
		        shown, IMPORT_MAX_DEPTH, IMPORT_MAX_STACK_BYTES >> 20);
	}
	if (ctx->cleaned_labels) {
		progress_clear();
		fprintf(stderr,
		        PROG ": %s: event or unit names held control bytes; each was stored as "
		             "U+FFFD\n",
		        shown);
	}
	if (ctx->cut_names) {
		progress_clear();
		fprintf(stderr,
		        PROG ": %s: names longer than %zu KiB were cut to that length, ending "
		             "in " IMPORT_CUT_MARK "\n",
		        shown, IMPORT_MAX_NAME >> 10);
	}
}

/* After a commit: forgets the detail of samples past the store's keep
 * window (store_rollup).  A failure leaves the detail for the next
 * writer's roll-up; it is said, and the import stands. */
static void rollup(struct import_job *job)
{
	struct store_rollup_stats st;

	if (!job->o.samples)
		return;
	if (store_rollup(job->s, &st) < 0) {
		progress_clear();
		fprintf(stderr, PROG ": warning: %s: roll-up of the recent samples: %s\n", job->dir,
		        store_errmsg(job->s));
	}
}

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
	const struct import_format_ops *ops;
	struct stat st;
	ssize_t plen;
	int rc, ret = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int fd = open_input(path, is_stdin, shown, &st);
	if (fd < 0)
		return 1;
	/* Samples that carry no time of their own are placed at --time, else
	 * at the file's modification time (a series of heap dumps becomes a
	 * time series), else, for a pipe, now. */
	if (!job->have_time)
		o.now = S_ISREG(st.st_mode) ? (int64_t)st.st_mtime : (int64_t)time(NULL);
	if (!(ops = pick_format(fd, shown, prefix, sizeof(prefix), &plen, &fmt)))
		goto out_fd;
	/* Profiles of addresses are symbolized against the files they name. */
	if (ops->needs_symbols) {
		if (offline_symbols_new(o.binary_path, &sym) == -ENOMEM)
			cli_die("out of memory");
	}

	import_job_store(job);
	o.samples = job->o.samples;
	b = job->batch ? job->batch : store_batch_new(job->s);
	if (!b)
		cli_die("%s: cannot start a batch: %s", job->dir, store_errmsg(job->s));
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
	if (progress_st.tty) {
		ctx.progress = show_progress;
		progress_st.job = job;
	}
	rc = ops->parse(&ctx);
	job->ms_parse += ms_since(&t1);
	const char *nothing =
	        job->one_batch ? "nothing was imported" : "nothing of it was imported";
	if (rc < 0) {
		if (!ctx.err[0])
			import_fail(&ctx, ctx.line, "%s",
			            rc == -ENOMEM ? "out of memory" : strerror(-rc));
		progress_clear();
		fprintf(stderr, PROG ": %s\n" PROG ": %s\n", ctx.err, nothing);
		goto out;
	}
	if (ctx.samples == 0) {
		progress_clear();
		fprintf(stderr, PROG ": %s: no samples found in %s input; %s\n", shown,
		        import_format_name(fmt), nothing);
		goto out;
	}
	if (!job->one_batch) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (store_batch_commit(b) < 0) {
			progress_clear();
			fprintf(stderr, PROG ": %s: commit failed: %s; %s\n", job->dir,
			        store_errmsg(job->s), nothing);
			goto out;
		}
		job->ms_commit += ms_since(&t1);
		store_batch_free(b); /* no batch may be open for a roll-up */
		b = NULL;
		rollup(job);
	}
	report_notices(&ctx, &sym, shown);
	if (job->o.by_thread && fmt != IMPORT_FORMAT_PERF && fmt != IMPORT_FORMAT_PERF_DATA) {
		progress_clear();
		fprintf(stderr,
		        PROG ": %s: --by-thread: %s input names no threads; its samples have no "
		             "thread label\n",
		        shown, import_format_name(fmt));
	}
	job->samples += ctx.samples;
	job->bytes += ctx.bytes;
	job->files_done++;
	job->perf_input |= fmt == IMPORT_FORMAT_PERF || fmt == IMPORT_FORMAT_PERF_DATA;
	ret = 0;
	if (progress_st.tty && job->count > 1) { /* the progress line stands in */
		progress_show(job, 0, 0);
		goto out;
	}
	progress_clear();
	fprintf(stderr, PROG ": %s %" PRIu64 " samples (%.1f MB of %s) from %s into %s\n",
	        job->one_batch ? "read" : "imported", ctx.samples, (double)ctx.bytes / 1e6,
	        import_format_name(fmt), shown, job->dir);
out:
	offline_symbols_free(&sym);
	if (b != job->batch)
		store_batch_free(b);
out_fd:
	if (!is_stdin)
		close(fd);
	return ret;
}

/* Parses argv into *job (and the store's argument into *store_arg);
 * returns -1 to go on with the files from optind, else the exit status. */
static int parse_options(int argc, char **argv, struct import_job *job, const char **store_arg)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"host", required_argument, NULL, 'H'},
	        {"format", required_argument, NULL, 'f'},
	        {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'v'},
	        {"event", required_argument, NULL, 'e'},
	        {"all-events", no_argument, NULL, 'a'},
	        {"time", required_argument, NULL, 't'},
	        {"binary-path", required_argument, NULL, 'p'},
	        {"clock-offset", required_argument, NULL, 'C'},
	        {"keep-samples", required_argument, NULL, 'K'},
	        {"one-batch", no_argument, NULL, '1'},
	        {"keep-going", no_argument, NULL, 'k'},
	        {"timings", no_argument, NULL, 'T'},
	        {"label", required_argument, NULL, 'L'},
	        {"by-thread", no_argument, NULL, 'B'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct import_options *o = &job->o;
	int c;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': *store_arg = optarg; break;
		case 'H': job->host = optarg; break;
		case 'b': o->binary = optarg; break;
		case 'v': o->version = optarg; break;
		case 'e': o->event = optarg; break;
		case 'a': o->all_events = true; break;
		case 't': {
			char *end;
			errno = 0;
			long long t = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end)
				return cli_usage_error("import",
				                       "--time: expected unix seconds, got \"%s\"",
				                       optarg);
			o->now = t;
			job->have_time = true;
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
				return cli_usage_error(
				        "import",
				        "--clock-offset: expected seconds or \"boot\", got \"%s\"",
				        optarg);
			o->clock_offset = t;
			break;
		}
		case 'K':
			if (record_parse_duration(optarg, &job->keep_samples) < 0)
				return cli_usage_error(
				        "import",
				        "--keep-samples: expected a duration such as 30m, 6h or "
				        "1d, "
				        "or 0, got \"%s\"",
				        optarg);
			break;
		case 'f': {
			int f = import_format_parse(optarg);
			if (f < 0)
				return cli_usage_error(
				        "import",
				        "--format: expected perf, perf.data, folded, pprof, "
				        "gperftools-cpu, "
				        "legacy or auto, got \"%s\"",
				        optarg);
			job->fmt = (enum import_format)f;
			break;
		}
		case 'p': o->binary_path = optarg; break;
		case '1': job->one_batch = true; break;
		case 'k': job->keep_going = true; break;
		case 'T': job->timings = true; break;
		case 'L': {
			char err[256];
			int rc = import_label_arg(&job->labels, optarg, err, sizeof(err));
			if (rc == -ENOMEM)
				cli_die("out of memory");
			if (rc < 0)
				return cli_usage_error("import", "%s", err);
			o->labels = job->labels;
			break;
		}
		case 'B': o->by_thread = true; break;
		case 'h': usage_import(stdout); return 0;
		default: return cli_bad_option("import", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("import", "no input FILE given (- reads standard input)");
	return -1;
}

/* Refuses the options and files that mean nothing together, as a usage
 * error: 2, or -1 when they are fine. */
static int check_options(const struct import_job *job, int argc, char **argv)
{
	const struct import_options *o = &job->o;

	if (o->event && o->all_events)
		return cli_usage_error("import", "--event and --all-events exclude each other");
	if (job->host && !store_host_valid(job->host))
		return cli_usage_error(
		        "import",
		        "--host: expected a name of 1 to 255 bytes without '/' or control "
		        "characters, got \"%s\"",
		        job->host);
	if ((o->binary && !*o->binary) || (o->version && !*o->version))
		return cli_usage_error("import", "--binary and --version need a non-empty value");
	if (job->one_batch && job->keep_going)
		return cli_usage_error(
		        "import", "--one-batch and --keep-going exclude each other: one batch is "
		                  "imported whole or not at all");
	for (int i = optind + 1; i < argc; i++)
		for (int j = optind; j < i; j++)
			if (strcmp(argv[i], "-") == 0 && strcmp(argv[j], "-") == 0)
				return cli_usage_error(
				        "import",
				        "standard input (-) can be imported once per command");
	return -1;
}

/* Imports argv[optind..argc) one after another (or in one batch);
 * returns how many failed. */
static size_t import_files(struct import_job *job, int argc, char **argv)
{
	size_t failed = 0;

	for (int i = optind; i < argc; i++) {
		job->index = (size_t)(i - optind) + 1;
		if (import_file(job, argv[i]) == 0)
			continue;
		failed++;
		if (job->one_batch || !job->keep_going) {
			if (i + 1 < argc)
				fprintf(stderr,
				        PROG ": stopped at %s; %zu file(s) after it not read%s\n",
				        argv[i], (size_t)(argc - i - 1),
				        job->one_batch ? "" : " (--keep-going goes on)");
			break;
		}
	}
	progress_clear();
	return failed;
}

/* Commits --one-batch, says what was imported, warns of stacks cut
 * short, closes the store; returns the exit status. */
static int finish(struct import_job *job, size_t failed)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = failed ? 1 : 0;
	if (job->one_batch) {
		if (failed) {
			if (job->files_done)
				fprintf(stderr, PROG ": --one-batch: nothing was imported\n");
		} else if (store_batch_commit(job->batch) < 0) {
			fprintf(stderr, PROG ": %s: commit failed: %s; nothing was imported\n",
			        job->dir, store_errmsg(job->s));
			status = 1;
		} else {
			job->ms_commit += ms_since(&t0);
		}
		store_batch_free(job->batch);
		job->batch = NULL;
		if (!status)
			rollup(job);
	}
	if (job->count > 1 && !status)
		fprintf(stderr,
		        PROG ": imported %" PRIu64 " samples (%.1f MB) from %zu files into %s\n",
		        job->samples, (double)job->bytes / 1e6, job->files_done, job->dir);
	else if (job->count > 1 && !job->one_batch && job->files_done)
		fprintf(stderr,
		        PROG ": imported %" PRIu64 " samples (%.1f MB) from %zu of %zu files into "
		             "%s; %zu failed\n",
		        job->samples, (double)job->bytes / 1e6, job->files_done, job->count,
		        job->dir, failed);
	/* Stacks cut short (fewer than half rooted, perf input): one line
	 * saying so; much weight without function names: one line saying
	 * where and how to get them. */
	if (job->s && job->files_done && !(job->one_batch && status))
		cli_warn_after(job->s, job->before, job->nbefore, job->perf_input, CLI_STACKS_PERF,
		               "import");
	store_series_free(job->before, job->nbefore);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	store_close(job->s);
	if (job->timings)
		fprintf(stderr,
		        PROG
		        ": timings: open %.1f ms, parse %.1f ms, commit %.1f ms, settle %.1f ms "
		        "(%zu file(s))\n",
		        job->ms_open, job->ms_parse, job->ms_commit, ms_since(&t0), job->count);
	return status;
}

int cmd_import(int argc, char **argv)
{
	struct import_job job = {.fmt = IMPORT_FORMAT_AUTO, .keep_samples = -1};
	const char *store_arg = NULL;
	char *owned;
	int status = parse_options(argc, argv, &job, &store_arg);

	if (status < 0)
		status = check_options(&job, argc, argv);
	if (status >= 0) {
		free(job.labels);
		return status;
	}
	job.dir = cli_resolve_store(store_arg, &owned);
	job.count = (size_t)(argc - optind);
	clock_gettime(CLOCK_MONOTONIC, &progress_st.start);
	progress_st.last = progress_st.start;
	progress_st.tty = isatty(STDERR_FILENO);
	status = finish(&job, import_files(&job, argc, argv));
	free(job.labels);
	free(owned);
	return status;
}
