/*
 * gen-samples.c — writes a synthetic system-wide recording into a store
 * the way the recorder would: 99 Hz on each of N CPUs, one commit per
 * second of recording (a drain), every sample with its moment, process,
 * thread and weight (store_batch_sample), or with --counts-only as counts
 * alone (store_batch_add, today's per-bucket store).  Then compacts the
 * store and prints its footprint as "key=value" lines.
 *
 * The shape: a few hundred series (one per program), of which a handful
 * are busy (a Zipf law over programs), idle time as the kernel's swapper
 * (pid 0) on about half the ticks, each program with 1 to 8 threads and
 * 20 to 200 stacks of depth 8 to 30 (a Zipf law over its stacks), and
 * cpu-clock's constant weight (the period in nanoseconds).  Each CPU's
 * timer ticks every 10101 us with a few microseconds of jitter, CPUs out
 * of phase.  Deterministic: the same arguments give the same store.
 *
 *   usage: gen-samples DIR SECONDS [--cpus N] [--series N] [--counts-only]
 *                      [--keep SECONDS]
 * --keep sets the store's keep window first (test-crash.sh kills it while
 * it rolls up).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "store.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unif(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* A Zipf law over n items: cumulative weights, sampled by bisection. */
struct zipf {
	double *cum;
	size_t n;
};

static void zipf_init(struct zipf *z, size_t n, double s)
{
	double sum = 0;

	z->n = n;
	z->cum = malloc(n * sizeof(*z->cum));
	if (!z->cum) {
		perror("malloc");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), s);
		z->cum[i] = sum;
	}
	for (size_t i = 0; i < n; i++)
		z->cum[i] /= sum;
}

static size_t zipf_pick(const struct zipf *z)
{
	double u = unif();
	size_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;

		if (z->cum[m] < u)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

struct program {
	char name[32];
	uint32_t series;
	uint32_t pid;
	uint32_t nthreads;
	uint32_t *stacks; /* leaf nodes */
	struct zipf stack_law;
	size_t nstacks;
};

static void die(struct store *s, const char *what, int r)
{
	fprintf(stderr, "gen-samples: %s: %s (%s)\n", what, strerror(-r), s ? store_errmsg(s) : "");
	exit(1);
}

/* Bytes this process has had written to storage (/proc/self/io): the
 * write-ahead log, flushes and compactions; 0 when unknown. */
static uint64_t io_written(void)
{
	FILE *f = fopen("/proc/self/io", "re");
	char line[128];
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "write_bytes: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

struct args {
	const char *dir;
	long seconds, cpus, nprog, keep;
	bool counts_only;
};

/* The command line into *a: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.cpus = 2, .nprog = 300, .keep = -1};
	if (argc < 3) {
		fprintf(stderr, "usage: gen-samples DIR SECONDS [--cpus N] [--series N] "
		                "[--counts-only]\n");
		return 2;
	}
	a->dir = argv[1];
	a->seconds = strtol(argv[2], NULL, 10);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--cpus") && i + 1 < argc)
			a->cpus = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--series") && i + 1 < argc)
			a->nprog = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			a->keep = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--counts-only"))
			a->counts_only = true;
		else {
			fprintf(stderr, "gen-samples: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (a->seconds <= 0 || a->cpus <= 0 || a->nprog < 2) {
		fprintf(stderr, "gen-samples: SECONDS, --cpus and --series must be positive\n");
		return 2;
	}
	return -1;
}

/* One stack of g's, 8 to 30 frames deep, whose first frames repeat
 * across its stacks: its leaf node. */
static uint32_t make_stack(struct store *s, struct store_batch *b, const struct program *g)
{
	uint32_t node = STORE_ROOT_NODE, depth = 8 + (uint32_t)(rnd() % 23);
	char fname[96];
	int r;

	for (uint32_t d = 0; d < depth; d++) {
		struct store_frame f = {0};
		uint32_t fid;

		/* shared prefixes: the first frames repeat across stacks */
		snprintf(fname, sizeof(fname), "%s_f%u_%u", g->name, d,
		         d < 4 ? d : (unsigned)(rnd() % (d * 3)));
		f.name = fname;
		f.name_len = strlen(fname);
		r = store_batch_frame(b, &f, &fid);
		if (r == 0)
			r = store_batch_node(b, node, fid, &node);
		if (r < 0)
			die(s, "stack", r);
	}
	return node;
}

/* Programs 0..nprog-1 (program 0 is the idle task), each a series with
 * its threads and stacks, in one commit; prog_law picks the busy ones. */
static struct program *make_programs(struct store *s, long nprog, struct zipf *prog_law)
{
	struct program *prog = calloc((size_t)nprog, sizeof(*prog));
	struct store_batch *b = store_batch_new(s);
	int r;

	if (!prog || !b)
		die(s, "setup", -ENOMEM);
	zipf_init(prog_law, (size_t)nprog - 1, 1.1);
	for (long p = 0; p < nprog; p++) {
		struct program *g = &prog[p];
		struct store_series_key k = {NULL, g->name, "1", "cpu-clock", "nanoseconds", NULL};

		snprintf(g->name, sizeof(g->name), p ? "prog%03ld" : "swapper", p);
		k.binary = g->name;
		r = store_batch_series(b, &k, &g->series);
		if (r < 0)
			die(s, "series", r);
		g->pid = p ? 1000 + (uint32_t)p * 7 : 0;
		g->nthreads = p ? 1 + (uint32_t)(rnd() % 8) : 1;
		g->nstacks = p ? 20 + rnd() % 181 : 4;
		g->stacks = malloc(g->nstacks * sizeof(*g->stacks));
		if (!g->stacks)
			die(s, "stacks", -ENOMEM);
		zipf_init(&g->stack_law, g->nstacks, 1.0);
		for (size_t st = 0; st < g->nstacks; st++)
			g->stacks[st] = make_stack(s, b, g);
	}
	r = store_batch_commit(b);
	if (r < 0)
		die(s, "commit", r);
	store_batch_free(b);
	return prog;
}

/* The recording: each CPU ticks every 10101 us (a few us of jitter, CPUs
 * out of phase), half the ticks idle; one commit per second.  Returns
 * the samples written. */
static uint64_t record_seconds(struct store *s, const struct args *a, const struct program *prog,
                               const struct zipf *prog_law)
{
	/* each CPU's next tick, in microseconds */
	const int64_t start = 1764000000LL * 1000000;
	int64_t *tick = malloc((size_t)a->cpus * sizeof(*tick));
	uint64_t samples = 0;
	int r;

	if (!tick)
		die(s, "ticks", -ENOMEM);
	for (long c = 0; c < a->cpus; c++)
		tick[c] = start + (int64_t)(rnd() % 10101);
	for (long sec = 0; sec < a->seconds; sec++) {
		int64_t end = start + (sec + 1) * 1000000;
		struct store_batch *b = store_batch_new(s);

		if (!b)
			die(s, "batch", -EIO);
		for (long c = 0; c < a->cpus; c++) {
			for (; tick[c] < end; tick[c] += 10101) {
				const struct program *g =
				        unif() < 0.5 ? &prog[0] : &prog[1 + zipf_pick(prog_law)];
				struct store_sample smp = {
				        .time_us = tick[c] + (int64_t)(rnd() % 7),
				        .node = g->stacks[zipf_pick(&g->stack_law)],
				        .pid = g->pid,
				        .tid = g->pid ? g->pid + (uint32_t)(rnd() % g->nthreads)
				                      : 0,
				        .weight = 10101010,
				};

				if (a->counts_only) {
					r = store_batch_add(b, g->series, smp.time_us / 1000000,
					                    smp.node, 1, smp.weight);
				} else {
					r = store_batch_sample(b, g->series, &smp);
				}
				if (r < 0)
					die(s, "sample", r);
				samples++;
			}
		}
		r = store_batch_commit(b);
		if (r < 0)
			die(s, "commit", r);
		store_batch_free(b);
	}
	free(tick);
	return samples;
}

/* The writer's CPU time and bytes written since cpu0 and io0, the
 * footprint as the writer leaves it and after a compaction, as
 * "key=value" lines. */
static void report(struct store *s, uint64_t samples, double cpu0, uint64_t io0)
{
	double cpu_write = cpu_seconds() - cpu0;
	struct store_footprint before, fp;
	uint64_t io_write;
	int r;

	r = store_footprint(s, &before); /* as the writer leaves it, settled */
	if (r < 0)
		die(s, "footprint", r);
	io_write = io_written() - io0;
	r = store_compact(s);
	if (r < 0)
		die(s, "compact", r);
	r = store_footprint(s, &fp);
	if (r < 0)
		die(s, "footprint", r);
	printf("samples=%" PRIu64 "\n", samples);
	printf("write_cpu_s=%.3f\n", cpu_write);
	printf("written_bytes=%" PRIu64 "\n", io_write);
	printf("settled_dir_bytes=%" PRIu64 "\n", before.dir_bytes);
	printf("dir_bytes=%" PRIu64 "\n", fp.dir_bytes);
	printf("counts_bytes=%" PRIu64 "\n", fp.counts_bytes);
	printf("frames_bytes=%" PRIu64 "\n", fp.frames_bytes);
	printf("nodes_bytes=%" PRIu64 "\n", fp.nodes_bytes);
	printf("other_bytes=%" PRIu64 "\n", fp.other_bytes);
	printf("recent_bytes=%" PRIu64 "\n", fp.samples_bytes);
	printf("recent_samples=%" PRIu64 "\n", fp.samples);
}

int main(int argc, char **argv)
{
	struct args a;
	struct store *s = NULL;
	struct program *prog;
	struct zipf prog_law;
	char err[512];
	uint64_t samples, io0;
	double cpu0;
	int r;

	r = parse_args(argc, argv, &a);
	if (r >= 0)
		return r;
	r = store_open(a.dir, STORE_CREATE, &s, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "gen-samples: %s\n", err);
		return 1;
	}
	if (a.keep >= 0 && (r = store_set_keep_samples(s, a.keep)) < 0)
		die(s, "keep", r);
	prog = make_programs(s, a.nprog, &prog_law);
	io0 = io_written();
	cpu0 = cpu_seconds();
	samples = record_seconds(s, &a, prog, &prog_law);
	report(s, samples, cpu0, io0);
	store_close(s);
	for (long p = 0; p < a.nprog; p++) {
		free(prog[p].stacks);
		free(prog[p].stack_law.cum);
	}
	free(prog);
	free(prog_law.cum);
	return 0;
}
