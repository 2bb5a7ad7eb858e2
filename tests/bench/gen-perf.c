/*
 * gen-perf.c — writes synthetic `perf script` text for benchmarks.
 *
 * usage: gen-perf BYTES [UNIQUE_STACKS] [SEED] > out.perf
 *
 * The stream looks like `perf record -g` output of a few processes: a fixed
 * set of unique call stacks (sharing prefixes, like real call trees), picked
 * with a skewed distribution, with tid, cpu, time and period varying per
 * sample.  As in real recordings, a caller's address and `+0x` offset are
 * those of its call site (fixed per caller/callee pair), while the leaf's
 * vary from sample to sample.  The same arguments always give the same
 * bytes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define NFUNCS   20000
#define MAXDEPTH 48

static const char *comms[] = {"nginx",        "postgres",        "java",        "node",
                              "redis-server", "V8 WorkerThread", "kworker/0:1", "cc1"};
static const char *modules[] = {"/usr/sbin/nginx",
                                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                "/usr/lib/x86_64-linux-gnu/libssl.so.3",
                                "[kernel.kallsyms]",
                                "/usr/lib/postgresql/15/bin/postgres",
                                "/usr/bin/node"};

struct stack {
	int comm;
	int depth;
	uint32_t frames[MAXDEPTH]; /* root first */
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gen-perf BYTES [UNIQUE_STACKS] [SEED]\n");
		return 2;
	}
	uint64_t want = strtoull(argv[1], NULL, 0);
	uint32_t nstacks = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 50000;
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 0) : 42;
	if (nstacks == 0)
		nstacks = 1;

	static char names[NFUNCS][96];
	for (int i = 0; i < NFUNCS; i++) {
		switch (i % 4) {
		case 0: snprintf(names[i], sizeof(names[i]), "ngx_http_handler_%d", i); break;
		case 1:
			snprintf(names[i], sizeof(names[i]),
			         "std::vector<int, std::allocator<int> >::push_back_%d", i);
			break;
		case 2: snprintf(names[i], sizeof(names[i]), "ExecProcNode_%d", i); break;
		default: snprintf(names[i], sizeof(names[i]), "do_syscall_%d", i); break;
		}
	}

	/* Each stack extends a random earlier stack's prefix, so stacks share
	 * prefixes the way real call trees do. */
	struct stack *st = calloc(nstacks, sizeof(*st));
	if (!st)
		return 1;
	for (uint32_t i = 0; i < nstacks; i++) {
		struct stack *s = &st[i];
		if (i < 8) {
			s->comm = (int)i;
			s->depth = 4;
			for (int d = 0; d < 4; d++)
				s->frames[d] = (uint32_t)(rng() % NFUNCS);
		} else {
			const struct stack *p = &st[rng() % i];
			int keep = 1 + (int)(rng() % (uint64_t)p->depth);
			*s = *p;
			s->depth = keep;
			int add = 1 + (int)(rng() % 8);
			for (int d = 0; d < add && s->depth < MAXDEPTH; d++)
				s->frames[s->depth++] = (uint32_t)(rng() % NFUNCS);
		}
	}

	static char out[1 << 16];
	setvbuf(stdout, out, _IOFBF, sizeof(out));
	uint64_t written = 0, t_us = 100000000000ull;
	while (written < want) {
		/* Skewed pick: squaring a uniform favours low indexes. */
		double u = (double)(rng() >> 11) / 9007199254740992.0;
		const struct stack *s = &st[(uint32_t)(u * u * nstacks)];
		t_us += 1 + rng() % 2000;
		int n = printf("%s %d/%d [%03d] %" PRIu64 ".%06" PRIu64 ": %d cpu-clock:pppH: \n",
		               comms[s->comm], 1000 + s->comm, 1000 + s->comm + (int)(rng() % 4),
		               (int)(rng() % 2), t_us / 1000000, t_us % 1000000,
		               10101010 + (int)(rng() % 1000));
		if (n < 0)
			return 1;
		written += (uint64_t)n;
		for (int d = s->depth - 1; d >= 0; d--) {
			uint32_t f = s->frames[d];
			uint32_t callee = d + 1 < s->depth ? s->frames[d + 1] : 0;
			unsigned off =
			        d == s->depth - 1
			                ? (unsigned)(rng() % 512)
			                : (unsigned)((f * 2654435761u ^ callee * 40503u) % 512);
			n = printf("\t    %012" PRIx64 " %s+0x%x (%s)\n",
			           (uint64_t)(0x7f0000000000ull + f * 1024ull + off), names[f], off,
			           modules[f % 6]);
			if (n < 0)
				return 1;
			written += (uint64_t)n;
		}
		putchar('\n');
		written++;
	}
	free(st);
	return 0;
}
