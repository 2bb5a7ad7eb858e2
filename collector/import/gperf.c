/*
 * gperf.c — the gperftools CPU profile importer (CPUPROFILE=..., the
 * "legacy" binary format pprof reads).
 *
 * The file is a run of machine words (4 or 8 bytes, either byte order,
 * told apart by the header as pprof does): the header {0, 3, 0, period in
 * microseconds, 0}, then samples {count, depth, pc[depth]} with the
 * interrupted pc first and return addresses after it, an end marker {0,
 * 1, 0}, and then the text of the process's /proc/self/maps.  Every pc but
 * the first is looked up one byte before (a call, not what follows it).
 * As pprof does, a second pc equal to the first (the profiler's signal
 * handler saw it twice) is dropped, and so is a second pc shared by
 * nearly all samples (the signal frame).
 *
 * The executable mappings of the maps text are handed to the symbolizer
 * (ctx->sym; --binary-path finds files of a profile taken elsewhere) as
 * one process.  The series is --binary, else the base name of the first
 * mapping (the executable, as pprof takes it); version --version, else
 * the first 12 hex digits of its build id; event "cpu", unit
 * "nanoseconds"; each sample adds count samples and count x period x 1000
 * ns of weight, at --time or the import's wall clock (the file has no
 * time).  Errors name the byte offset: "FILE: offset N: expected ...".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"

#define GPERF_MAX_BYTES ((size_t)1 << 30)
#define GPERF_PID       0u
#define FRAMES_PER_PC   16 /* a pc and the functions inlined at it */

struct words {
	const uint8_t *p;
	size_t len;
	unsigned size; /* 4 or 8 */
	bool big;      /* big-endian */
};

static uint64_t word_at(const struct words *w, size_t off)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < w->size; i++) {
		unsigned k = w->big ? i : w->size - 1 - i;
		v = v << 8 | w->p[off + k];
	}
	return v;
}

/* Finds the word size and order whose header reads {0, 3, 0, period > 0,
 * 0}, in pprof's order of trying. */
static bool header(const uint8_t *p, size_t len, struct words *w, uint64_t *period)
{
	static const struct {
		unsigned size;
		bool big;
	} kinds[] = {{4, false}, {4, true}, {8, false}, {8, true}};

	for (size_t k = 0; k < 4; k++) {
		*w = (struct words){p, len, kinds[k].size, kinds[k].big};
		if (len < 5 * w->size)
			continue;
		if (word_at(w, 0) == 0 && word_at(w, w->size) == 3 &&
		    word_at(w, 2 * w->size) == 0 && word_at(w, 3 * w->size) > 0 &&
		    word_at(w, 4 * w->size) == 0) {
			*period = word_at(w, 3 * w->size);
			return true;
		}
	}
	return false;
}

bool import_gperf_cpu_sniff(const uint8_t *buf, size_t len)
{
	struct words w;
	uint64_t period;

	return header(buf, len, &w, &period);
}

struct sample {
	uint64_t count;
	size_t first, n; /* pcs[first .. first + n) */
};

struct gperf {
	struct import_ctx *ctx;
	struct import_maps maps;
	struct sample *samples;
	size_t nsamples, samples_cap;
	uint64_t *pcs;
	size_t npcs, pcs_cap;
	struct store_frame *stack;
	size_t stack_cap;
	struct import_sums sums;
};

static int push_sample(struct gperf *g, uint64_t count, const struct words *w, size_t off,
                       uint64_t depth)
{
	if (g->nsamples == g->samples_cap) {
		size_t ncap = g->samples_cap ? g->samples_cap * 2 : 256;
		struct sample *ns = realloc(g->samples, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		g->samples = ns;
		g->samples_cap = ncap;
	}
	if (g->npcs + depth > g->pcs_cap) {
		size_t ncap = g->pcs_cap ? g->pcs_cap : 1024;
		while (ncap < g->npcs + depth)
			ncap *= 2;
		uint64_t *np = realloc(g->pcs, ncap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		g->pcs = np;
		g->pcs_cap = ncap;
	}
	struct sample *s = &g->samples[g->nsamples++];
	s->count = count;
	s->first = g->npcs;
	s->n = (size_t)depth;
	for (size_t i = 0; i < depth; i++)
		g->pcs[g->npcs++] = word_at(w, off + i * w->size);
	/* the signal handler's duplicate of the leaf */
	if (s->n > 1 && g->pcs[s->first] == g->pcs[s->first + 1]) {
		memmove(&g->pcs[s->first + 1], &g->pcs[s->first + 2],
		        (s->n - 2) * sizeof(uint64_t));
		s->n--;
		g->npcs--;
	}
	return 0;
}

/* pprof's cpuProfile: up to twice, a second pc that all samples but a
 * 1/32 margin share is the signal frame, and is dropped from them. */
static void drop_signal_frame(struct gperf *g)
{
	size_t margin = g->nsamples / 32;

	for (int iter = 0; iter < 2; iter++) {
		/* a majority candidate (Boyer-Moore), then its count */
		uint64_t cand = 0;
		size_t votes = 0, with = 0;
		for (size_t i = 0; i < g->nsamples; i++) {
			const struct sample *s = &g->samples[i];
			if (s->n < 2)
				continue;
			uint64_t a = g->pcs[s->first + 1];
			if (votes == 0) {
				cand = a;
				votes = 1;
			} else {
				votes += a == cand ? 1 : (size_t)-1;
			}
		}
		for (size_t i = 0; i < g->nsamples; i++) {
			const struct sample *s = &g->samples[i];
			with += s->n > 1 && g->pcs[s->first + 1] == cand;
		}
		if (votes == 0 || with < g->nsamples - margin)
			return;
		for (size_t i = 0; i < g->nsamples; i++) {
			struct sample *s = &g->samples[i];
			if (s->n > 1 && g->pcs[s->first + 1] == cand) {
				memmove(&g->pcs[s->first + 1], &g->pcs[s->first + 2],
				        (s->n - 2) * sizeof(uint64_t));
				s->n--;
			}
		}
	}
}

static int parse_maps(struct gperf *g, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int rc = import_maps_line(&g->maps, p, n);
		if (rc < 0)
			return rc;
		p += n + 1;
	}
	return 0;
}

static int add_samples(struct gperf *g, uint32_t series, uint64_t period_ns, int64_t when)
{
	struct import_ctx *ctx = g->ctx;

	for (size_t i = 0; i < g->nsamples; i++) {
		const struct sample *s = &g->samples[i];
		size_t n = 0;
		int rc;
		if (s->count == 0)
			continue;
		/* Leaf first in the file, root first in the store.  The
		 * frames are gathered leaf first until the stack is past the
		 * limits (import_stack_past), then turned root first. */
		size_t depth = 0, bytes = 0;
		bool past = false;
		for (size_t k = 0; k < s->n && !past; k++) {
			struct store_frame f[FRAMES_PER_PC];
			rc = import_addr_frames(ctx, &g->maps, GPERF_PID, g->pcs[s->first + k],
			                        k > 0, f, FRAMES_PER_PC);
			if (rc < 0)
				return rc;
			size_t got = (size_t)rc;
			rc = import_grow((void **)&g->stack, &g->stack_cap, n + got,
			                 sizeof(*g->stack));
			if (rc < 0)
				return rc;
			/* the function, then the ones inlined in it: the
			 * innermost is last */
			for (size_t j = got; j-- > 0 && !past;) {
				g->stack[n++] = f[j];
				past = import_stack_past(&depth, &bytes, f[j].name_len);
			}
		}
		for (size_t k = 0; k < n / 2; k++) {
			struct store_frame t = g->stack[k];
			g->stack[k] = g->stack[n - 1 - k];
			g->stack[n - 1 - k] = t;
		}
		uint32_t node;
		rc = import_path(ctx, g->stack, n, &node);
		if (rc < 0)
			return rc;
		uint64_t weight;
		if (__builtin_mul_overflow(s->count, period_ns, &weight))
			return import_fail(ctx, 0,
			                   "sample %zu: %llu samples of %llu ns each; expected a "
			                   "weight that fits in 64 bits",
			                   i, (unsigned long long)s->count,
			                   (unsigned long long)period_ns);
		rc = import_add(ctx, &g->sums, 0, series, when, node, s->count, weight);
		if (rc < 0)
			return rc;
		ctx->samples += s->count;
	}
	return 0;
}

static void gperf_free(struct gperf *g)
{
	import_maps_free(&g->maps);
	free(g->samples);
	free(g->pcs);
	free(g->stack);
	import_sums_free(&g->sums);
}

/* The series binary: the first mapping's base name, else the input's. */
static void default_binary(const struct gperf *g, char *out, size_t outlen)
{
	const char *path = g->maps.n ? g->maps.m[0].path : g->ctx->path;
	if (!path || strcmp(path, "-") == 0)
		path = "gperftools";
	const char *b = strrchr(path, '/');
	snprintf(out, outlen, "%s", b ? b + 1 : path);
	if (!g->maps.n) {
		char *dot = strchr(out, '.');
		if (dot && dot != out)
			*dot = '\0';
	}
}

int import_gperf_cpu(struct import_ctx *ctx)
{
	struct gperf g = {.ctx = ctx};
	uint8_t *buf = NULL;
	size_t len;
	struct words w;
	uint64_t period;
	int rc;

	rc = import_read_all(ctx, GPERF_MAX_BYTES, &buf, &len);
	if (rc < 0)
		return rc;
	if (!header(buf, len, &w, &period)) {
		rc = import_fail_at(ctx, 0,
		                    "expected a gperftools CPU profile header (words 0, 3, 0, "
		                    "period, 0), got %s",
		                    len < 20 ? "a shorter file" : "other data");
		goto out;
	}
	if (period > UINT64_MAX / 1000) {
		rc = import_fail_at(ctx, 3 * w.size,
		                    "expected a sampling period in microseconds, got %llu",
		                    (unsigned long long)period);
		goto out;
	}

	/* Samples up to the end marker {0, 1, 0}. */
	size_t off = 5 * w.size;
	bool ended = false;
	while (len - off >= 2 * (size_t)w.size) {
		uint64_t count = word_at(&w, off), depth = word_at(&w, off + w.size);
		size_t at = off;
		off += 2 * w.size;
		if (depth > (len - off) / w.size) {
			rc = import_fail_at(
			        ctx, at,
			        "expected a sample of %llu pcs, got %zu bytes to the end "
			        "of the file (is it truncated?)",
			        (unsigned long long)depth, len - off);
			goto out;
		}
		if (count == 0 && depth == 1 && word_at(&w, off) == 0) {
			off += w.size;
			ended = true;
			break;
		}
		if (depth == 0) {
			rc = import_fail_at(ctx, at,
			                    "expected a sample with at least one pc, got none");
			goto out;
		}
		rc = push_sample(&g, count, &w, off, depth);
		if (rc < 0)
			goto out;
		off += (size_t)depth * w.size;
	}
	if (!ended) {
		rc = import_fail_at(ctx, off,
		                    "expected the end-of-samples marker (0, 1, 0), got the end of "
		                    "the file (is it truncated?)");
		goto out;
	}
	drop_signal_frame(&g);

	const char *text = (const char *)buf + off;
	if (memchr(text, '\0', len - off)) {
		size_t nul = (size_t)((const char *)memchr(text, '\0', len - off) - text);
		rc = import_fail_at(ctx, off + nul,
		                    "expected the text of /proc/self/maps after the samples, got a "
		                    "NUL byte");
		goto out;
	}
	rc = parse_maps(&g, text, len - off);
	if (rc < 0)
		goto out;
	if (ctx->sym) {
		char bin[256];
		default_binary(&g, bin, sizeof(bin));
		rc = ctx->sym->process(ctx->sym->ctx, GPERF_PID, bin);
		for (size_t i = 0; rc >= 0 && i < g.maps.n; i++)
			rc = ctx->sym->map(ctx->sym->ctx, GPERF_PID, g.maps.m[i].start,
			                   g.maps.m[i].end, g.maps.m[i].pgoff, g.maps.m[i].path,
			                   NULL, 0);
		if (rc < 0)
			goto out;
	}

	char binary[256];
	default_binary(&g, binary, sizeof(binary));
	const char *bid = ctx->sym ? ctx->sym->build_id(ctx->sym->ctx, GPERF_PID) : "";
	char version[16];
	snprintf(version, sizeof(version), "%.12s", bid);
	uint32_t series;
	rc = import_series(ctx, binary, *version ? version : NULL, "cpu", "nanoseconds", &series);
	if (rc < 0)
		goto out;
	rc = add_samples(&g, series, period * 1000, ctx->opt ? ctx->opt->now : 0);
	if (rc < 0)
		goto out;
	rc = store_batch_input_bytes(ctx->batch, series, len);
out:
	gperf_free(&g);
	free(buf);
	return rc;
}
