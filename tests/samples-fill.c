/*
 * samples-fill.c — writes samples with their moments into a store through
 * the store API (store_batch_sample), for the view's end-to-end tests and
 * benchmarks of exact windows, timelines and heatmaps: each line of
 * standard input is "TIME_US WEIGHT frame;frame;...;leaf" (a sample kept
 * with its moment) or "- SECONDS SAMPLES WEIGHT frame;...;leaf" (counts
 * without a moment, store_batch_add).  With --gen SECONDS HZ CPUS START_US
 * [STACKS] it makes a recording instead: HZ samples a second on each of
 * CPUS CPUs from START_US on for SECONDS, over STACKS (default 64) stacks
 * of 6 to 12 frames, weight 10101010 (cpu-clock at 99 Hz).  One batch per
 * 100,000 samples.
 *
 *   samples-fill STORE BINARY VERSION [--gen SECONDS HZ CPUS START_US [STACKS]] < lines
 *   samples-fill STORE --rollup KEEP_SECONDS   sets the keep window and rolls up
 *
 * Test code: it prints and exits on failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static void die(const char *what, int r)
{
	fprintf(stderr, "samples-fill: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

/* The leaf node of a folded stack (frames by name), interned. */
static uint32_t stack_node(struct store_batch *b, char *stack)
{
	uint32_t node = STORE_ROOT_NODE, frame;
	int r;

	for (char *save = NULL, *f = strtok_r(stack, ";", &save); f;
	     f = strtok_r(NULL, ";", &save)) {
		struct store_frame sf = {.name = f, .name_len = strlen(f)};
		if ((r = store_batch_frame(b, &sf, &frame)) < 0 ||
		    (r = store_batch_node(b, node, frame, &node)) < 0)
			die("intern", r);
	}
	return node;
}

struct writer {
	struct store *s;
	struct store_batch *b;
	const char *binary, *version;
	uint32_t series;
	size_t pending;
};

static void begin(struct writer *w)
{
	struct store_series_key k = {NULL, w->binary, w->version, "cpu-clock", "nanoseconds", NULL};
	int r;

	if (!(w->b = store_batch_new(w->s)))
		die("store_batch_new", ENOMEM);
	if ((r = store_batch_series(w->b, &k, &w->series)) < 0)
		die("store_batch_series", r);
	w->pending = 0;
}

static void commit(struct writer *w)
{
	int r = store_batch_commit(w->b);

	if (r < 0)
		die(store_errmsg(w->s), r);
	store_batch_free(w->b);
	w->b = NULL;
}

static void sample(struct writer *w, int64_t us, uint64_t weight, uint32_t node)
{
	struct store_sample smp = {
	        .time_us = us, .node = node, .pid = 42, .tid = 42, .weight = weight};
	int r = store_batch_sample(w->b, w->series, &smp);

	if (r < 0)
		die("store_batch_sample", r);
	if (++w->pending == 100000) {
		commit(w);
		begin(w);
	}
}

static void generate(struct writer *w, int64_t seconds, int hz, int cpus, int64_t start,
                     uint32_t nstacks)
{
	uint32_t *nodes = malloc(nstacks * sizeof(*nodes));
	uint64_t x = 88172645463325252ull;

	if (!nodes)
		die("malloc", ENOMEM);
	for (uint32_t i = 0; i < nstacks; i++) {
		char stack[512];
		int o = snprintf(stack, sizeof(stack), "main");
		int depth = 6 + (int)(i % 7);
		for (int d = 1; d < depth; d++)
			o += snprintf(stack + o, sizeof(stack) - (size_t)o, ";f%d_%u", d,
			              (i / (uint32_t)(d * d) * 7 + (uint32_t)d * 3) %
			                      (uint32_t)(d * 40 + 5));
		nodes[i] = stack_node(w->b, stack);
	}
	int64_t period = 1000000 / hz;
	for (int64_t t = 0; t < seconds * hz; t++)
		for (int c = 0; c < cpus; c++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			sample(w, start + t * period + c * 7 + (int64_t)(x % 97), 10101010,
			       nodes[x % nstacks]);
		}
	free(nodes);
}

int main(int argc, char **argv)
{
	struct writer w = {0};
	char err[256], line[8192];
	int r;

	if (argc == 4 && strcmp(argv[2], "--rollup") == 0) {
		struct store_rollup_stats st;
		if (store_open(argv[1], 0, &w.s, err, sizeof(err)) < 0) {
			fprintf(stderr, "samples-fill: %s\n", err);
			return 1;
		}
		if ((r = store_set_keep_samples(w.s, strtoll(argv[3], NULL, 10))) < 0 ||
		    (r = store_rollup(w.s, &st)) < 0)
			die(store_errmsg(w.s), r);
		printf("%" PRIu64 " samples rolled up\n", st.samples);
		store_close(w.s);
		return 0;
	}
	if (argc != 4 && argc != 9 && argc != 10) {
		fprintf(stderr, "usage: samples-fill STORE BINARY VERSION [--gen SECONDS HZ CPUS "
		                "START_US [STACKS]]\n");
		return 2;
	}
	if (store_open(argv[1], STORE_CREATE, &w.s, err, sizeof(err)) < 0) {
		fprintf(stderr, "samples-fill: %s\n", err);
		return 1;
	}
	w.binary = argv[2];
	w.version = argv[3];
	begin(&w);
	if (argc >= 9) {
		long stacks = argc == 10 ? strtol(argv[9], NULL, 10) : 64;
		if (stacks < 1 || stacks > 1000000)
			die("STACKS: 1 to 1,000,000", EINVAL);
		generate(&w, strtoll(argv[5], NULL, 10), atoi(argv[6]), atoi(argv[7]),
		         strtoll(argv[8], NULL, 10), (uint32_t)stacks);
	} else {
		while (fgets(line, sizeof(line), stdin)) {
			char *nl = strchr(line, '\n'), *p;
			if (nl)
				*nl = '\0';
			if (!*line)
				continue;
			if (line[0] == '-') {
				int64_t when = strtoll(line + 1, &p, 10);
				uint64_t n = strtoull(p, &p, 10), wt = strtoull(p, &p, 10);
				uint32_t node = stack_node(w.b, p + 1);
				if ((r = store_batch_add(w.b, w.series, when, node, n, wt)) < 0)
					die("store_batch_add", r);
				continue;
			}
			int64_t us = strtoll(line, &p, 10);
			uint64_t wt = strtoull(p, &p, 10);
			sample(&w, us, wt, stack_node(w.b, p + 1));
		}
	}
	commit(&w);
	store_close(w.s);
	return 0;
}
