/*
 * gen-folded.c — writes a synthetic folded-stack profile for benchmarks.
 *
 * usage: gen-folded UNIQUE_STACKS SAMPLES [BINARY] [SEED] > out.folded
 *
 * Prints UNIQUE_STACKS lines "BINARY;f1;f2;...;fn COUNT" whose counts add up
 * to exactly SAMPLES (SAMPLES must be >= UNIQUE_STACKS, every line has a
 * count of at least 1).  Stacks are grown the way real call trees are:
 * each new stack keeps a random-length prefix of a random earlier stack and
 * appends 1 to 8 new frames, so the tree has long shared prefixes, a wide
 * fan-out near the leaves and depths up to 64.  Counts are skewed (a few hot
 * stacks, a long tail).  Frame names mix C, C++ template and kernel styles.
 * The same arguments always give the same bytes.  Duplicate lines are
 * possible in principle but rare; the consumer counts what it gets.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFUNCS       30000
#define MAXDEPTH     64
#define NAME_MAX_LEN 112

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static double unit(void)
{
	return (double)((rng() >> 11) + 1) / 9007199254740992.0;
}

struct stack {
	uint8_t depth;
	uint16_t frames[MAXDEPTH]; /* root first */
};

static void make_name(char *out, size_t cap, uint32_t i)
{
	switch (i % 6) {
	case 0: snprintf(out, cap, "ngx_http_process_request_%u", i); break;
	case 1:
		snprintf(out, cap,
		         "std::vector<std::string, std::allocator<std::string> >::emplace_back_%u",
		         i);
		break;
	case 2: snprintf(out, cap, "ExecProcNode_%u", i); break;
	case 3: snprintf(out, cap, "__x64_sys_call_%u", i); break;
	case 4: snprintf(out, cap, "v8::internal::Runtime_%u_[i]", i); break;
	default: snprintf(out, cap, "memcpy_avx_unaligned_%u", i); break;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen-folded UNIQUE_STACKS SAMPLES [BINARY] [SEED]\n");
		return 2;
	}
	uint64_t nstacks = strtoull(argv[1], NULL, 0);
	uint64_t samples = strtoull(argv[2], NULL, 0);
	const char *binary = argc > 3 ? argv[3] : "genapp";
	rng_state = argc > 4 ? strtoull(argv[4], NULL, 0) : 42;
	if (nstacks == 0 || samples < nstacks) {
		fprintf(stderr,
		        "gen-folded: need UNIQUE_STACKS >= 1 and SAMPLES >= UNIQUE_STACKS\n");
		return 2;
	}

	static char names[NFUNCS][NAME_MAX_LEN];
	for (uint32_t i = 0; i < NFUNCS; i++)
		make_name(names[i], sizeof(names[i]), i);

	struct stack *st = calloc(nstacks, sizeof(*st));
	double *w = calloc(nstacks, sizeof(*w));
	if (!st || !w) {
		fprintf(stderr, "gen-folded: out of memory\n");
		return 1;
	}
	/* A handful of roots (main, thread entry points, interrupts), then every
	 * stack extends a prefix of an earlier one. */
	for (uint64_t i = 0; i < nstacks; i++) {
		struct stack *s = &st[i];
		if (i < 6) {
			s->depth = 3;
			for (int d = 0; d < 3; d++)
				s->frames[d] = (uint16_t)(rng() % NFUNCS);
		} else {
			const struct stack *p = &st[rng() % i];
			*s = *p;
			s->depth = (uint8_t)(1 + rng() % p->depth);
			int add = 1 + (int)(rng() % 8);
			for (int d = 0; d < add && s->depth < MAXDEPTH; d++)
				s->frames[s->depth++] = (uint16_t)(rng() % NFUNCS);
		}
	}

	/* Skewed counts: weight u^-0.7 (a Pareto tail), then scaled so that every
	 * line gets 1 plus its share of the rest; what rounding down left over is
	 * handed out one by one from the first line on. */
	double wsum = 0;
	for (uint64_t i = 0; i < nstacks; i++) {
		w[i] = pow(unit(), -0.7);
		wsum += w[i];
	}
	uint64_t extra = samples - nstacks, given = 0;
	uint64_t *cnt = calloc(nstacks, sizeof(*cnt));
	if (!cnt) {
		fprintf(stderr, "gen-folded: out of memory\n");
		return 1;
	}
	for (uint64_t i = 0; i < nstacks; i++) {
		cnt[i] = 1 + (uint64_t)((double)extra * w[i] / wsum);
		given += cnt[i] - 1;
	}
	for (uint64_t i = 0; given < extra; i = (i + 1) % nstacks, given++)
		cnt[i]++;

	static char out[1 << 16];
	setvbuf(stdout, out, _IOFBF, sizeof(out));
	for (uint64_t i = 0; i < nstacks; i++) {
		const struct stack *s = &st[i];
		fputs(binary, stdout);
		for (int d = 0; d < s->depth; d++) {
			putchar(';');
			fputs(names[s->frames[d]], stdout);
		}
		printf(" %" PRIu64 "\n", cnt[i]);
	}
	if (fflush(stdout) != 0) {
		perror("gen-folded");
		return 1;
	}
	free(cnt);
	free(w);
	free(st);
	return 0;
}
