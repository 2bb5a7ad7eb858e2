/*
 * legacy.c — the legacy text profile importer: what gperftools'
 * HEAPPROFILE and Go's runtime/pprof (debug=1) write, read the way pprof's
 * legacy_profile.go reads it.
 *
 *   heap profile: I: IB [A: AB] @ heapprofile|heap_v2/RATE|heap/2RATE
 *       alloc_objects, alloc_space, inuse_objects, inuse_space when the
 *       header's allocation columns differ from its in-use ones, else
 *       objects, space.  Sampled profiles (heap_v2/R; heap/2R) are
 *       unsampled as pprof does: count and size are scaled by
 *       1 / (1 - exp(-(size / count) / R)).
 *   heap profile: ... @ growthz | fragmentationz   objects, space.
 *   --- contentionz / --- contention: / --- mutex:   then "key = value"
 *       lines (cycles/second, sampling period, ms since reset); samples
 *       "CYCLES COUNT @ pcs" give contentions = COUNT x period and delay =
 *       CYCLES x period / (cycles/second / 1e9) nanoseconds.
 *   --- threadz N --- / --- Thread ID (name: N/T) stack: ---   thread.
 *   TYPE profile: total N   (goroutine, threadcreate)   TYPE.  A sample
 *       "N @" without pcs (Go's threadcreate writes one; pprof refuses
 *       the file) is N on one "[unknown]" frame.
 *
 * Each sample type is a series named as pprof names it, in the unit pprof
 * gives it (count, bytes, nanoseconds).  Its samples are the matching
 * object count (alloc_objects for alloc_space, inuse_objects for
 * inuse_space, contentions for delay; a count type is its own).  A
 * negative value (Go's delta heap profiles) goes, as a magnitude, to the
 * series "-TYPE" (IMPORT_NEGATIVE_PREFIX).  Lines starting with '#' give a
 * sample's frames when Go wrote them ("#\t0xPC\tNAME+0xOFF\tFILE:LINE",
 * leaf first); otherwise its pcs are symbolized (ctx->sym) against the
 * executable mappings listed after "MAPPED_LIBRARIES:" or "--- Memory map:
 * ---", every pc as a return address but a thread profile's first, as
 * pprof does.  Binary: --binary, else the first mapping's base name, else
 * the input's base name up to its first dot; version: --version, else
 * the executable's build id.  The whole file is read before anything is
 * added, so an error at any line leaves the batch untouched.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"

#define LEGACY_PID    0u
#define MAX_TYPES     4
#define FRAMES_PER_PC 16

enum kind { K_HEAP, K_CONTENTION, K_THREAD, K_COUNT };

struct vtype {
	char name[64];
	const char *unit;
	unsigned samples_of; /* the type whose value counts the samples */
};

struct lsample {
	int64_t v[MAX_TYPES];
	size_t first_pc, npc;
	size_t first_sym, nsym; /* frames from '#' lines */
	uint64_t line;
};

struct lsym {
	size_t name, name_len; /* in names */
	size_t file, file_len;
	uint32_t line;
};

struct legacy {
	struct import_ctx *ctx;
	struct linereader lr;
	enum kind kind;
	struct vtype types[MAX_TYPES];
	unsigned ntypes;
	/* heap */
	bool v2, has_alloc;
	int64_t rate;
	/* contention */
	int64_t cpu_hz, period;
	bool attrs; /* still reading "key = value" lines */
	/* thread */
	bool in_thread;

	bool in_maps; /* past the memory map sentinel */
	struct import_maps maps;
	struct lsample *s;
	size_t ns, s_cap;
	uint64_t *pcs;
	size_t npcs, pcs_cap;
	struct lsym *syms;
	size_t nsyms, syms_cap;
	char *names;
	size_t names_len, names_cap;
	struct store_frame *stack;
	size_t stack_cap;
	struct import_sums sums;
};

static int fail(struct legacy *g, const char *what, const char *l, size_t n)
{
	char ex[256];

	import_excerpt(ex, sizeof(ex), l, n);
	return import_fail(g->ctx, g->lr.line, "expected %s, got \"%s\"", what, ex);
}

/* ---- small scanners ---------------------------------------------------- */

struct cur {
	const char *p, *end;
};

static void blanks(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

static bool lit(struct cur *c, const char *s)
{
	size_t n = strlen(s);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return false;
	c->p += n;
	return true;
}

/* A decimal integer, optionally negative; false on none or overflow. */
static bool num(struct cur *c, bool sign, int64_t *v)
{
	bool neg = false;
	uint64_t x = 0;

	if (sign && c->p < c->end && *c->p == '-') {
		neg = true;
		c->p++;
	}
	const char *start = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (x > (uint64_t)INT64_MAX / 10)
			return false;
		x = x * 10 + (uint64_t)(*c->p - '0');
		if (x > (uint64_t)INT64_MAX)
			return false;
		c->p++;
	}
	if (c->p == start)
		return false;
	*v = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

/* " 0xPC 0xPC ..." to the end of the line; false on anything else. */
static int pcs(struct legacy *g, struct cur *c, size_t *first, size_t *n)
{
	*first = g->npcs;
	*n = 0;
	for (;;) {
		blanks(c);
		if (c->p == c->end)
			return 1;
		if (!lit(c, "0x"))
			return 0;
		uint64_t v = 0;
		const char *start = c->p;
		while (c->p < c->end &&
		       ((*c->p >= '0' && *c->p <= '9') || (*c->p >= 'a' && *c->p <= 'f'))) {
			if (v >> 60)
				return 0;
			v = v << 4 | (uint64_t)(*c->p <= '9' ? *c->p - '0' : *c->p - 'a' + 10);
			c->p++;
		}
		if (c->p == start || (c->p < c->end && *c->p != ' ' && *c->p != '\t'))
			return 0;
		int rc = import_grow((void **)&g->pcs, &g->pcs_cap, g->npcs + 1, sizeof(*g->pcs));
		if (rc < 0)
			return rc;
		g->pcs[g->npcs++] = v;
		(*n)++;
	}
}

static bool is_sentinel(const char *l, size_t n)
{
	return (n >= 17 && memcmp(l, "MAPPED_LIBRARIES:", 17) == 0) ||
	       (n >= 19 && memcmp(l, "--- Memory map: ---", 19) == 0);
}

/* ---- headers ------------------------------------------------------------ */

static void set_type(struct legacy *g, unsigned i, const char *name, const char *unit,
                     unsigned samples_of)
{
	snprintf(g->types[i].name, sizeof(g->types[i].name), "%s", name);
	g->types[i].unit = unit;
	g->types[i].samples_of = samples_of;
	if (i + 1 > g->ntypes)
		g->ntypes = i + 1;
}

/* "heap profile: I: IB [A: AB] @ TAG[/RATE]" */
static int heap_header(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};
	int64_t v[4], rate = 0;

	if (!lit(&c, "heap profile:"))
		return 0;
	for (int i = 0; i < 4; i++) {
		blanks(&c);
		if (i == 2 && !lit(&c, "["))
			return fail(g, "a heap profile header \"heap profile: N: N [N: N] @ TAG\"",
			            l, n);
		blanks(&c);
		if (!num(&c, false, &v[i]) || (i % 2 == 0 && !lit(&c, ":")))
			return fail(g, "a heap profile header \"heap profile: N: N [N: N] @ TAG\"",
			            l, n);
	}
	blanks(&c);
	if (!lit(&c, "]"))
		return fail(g, "a heap profile header \"heap profile: N: N [N: N] @ TAG\"", l, n);
	blanks(&c);
	if (!lit(&c, "@"))
		return fail(g, "a heap profile header \"heap profile: N: N [N: N] @ TAG\"", l, n);
	blanks(&c);
	const char *tag = c.p;
	while (c.p < c.end &&
	       ((*c.p >= 'a' && *c.p <= 'z') || *c.p == '_' || (*c.p >= '0' && *c.p <= '9')))
		c.p++;
	size_t tl = (size_t)(c.p - tag);
	if (lit(&c, "/") && c.p < c.end && !num(&c, false, &rate))
		return fail(g, "a sampling rate after the heap profile's tag", l, n);

	g->kind = K_HEAP;
	g->rate = 1;
	if (tl >= 6 && memcmp(tag, "growth", 6) == 0 && (tl == 6 || (tl == 7 && tag[6] == 'z'))) {
		g->has_alloc = false;
	} else if (tl >= 13 && memcmp(tag, "fragmentation", 13) == 0 &&
	           (tl == 13 || (tl == 14 && tag[13] == 'z'))) {
		g->has_alloc = false;
	} else {
		g->has_alloc = (v[2] != v[0] && v[2] != 0) || (v[3] != v[1] && v[3] != 0);
		if ((tl == 8 && memcmp(tag, "heapz_v2", 8) == 0) ||
		    (tl == 7 && memcmp(tag, "heap_v2", 7) == 0)) {
			g->v2 = true;
			g->rate = rate;
		} else if (tl == 11 && memcmp(tag, "heapprofile", 11) == 0) {
			g->rate = 1;
		} else if (tl == 4 && memcmp(tag, "heap", 4) == 0) {
			g->v2 = true;
			g->rate = rate / 2;
		} else {
			return fail(g,
			            "heapprofile, heap_v2/RATE, heap/RATE, growthz or "
			            "fragmentationz after '@'",
			            l, n);
		}
	}
	if (g->has_alloc) {
		set_type(g, 0, "alloc_objects", "count", 0);
		set_type(g, 1, "alloc_space", "bytes", 0);
		set_type(g, 2, "inuse_objects", "count", 2);
		set_type(g, 3, "inuse_space", "bytes", 2);
	} else {
		set_type(g, 0, "objects", "count", 0);
		set_type(g, 1, "space", "bytes", 0);
	}
	return 1;
}

/* Reads the first line that is not blank or a comment; 1 when it is a
 * header this importer knows, or an error. */
static int first_line(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};
	int rc = heap_header(g, l, n);
	if (rc != 0)
		return rc;
	if (lit(&c, "--- contentionz ") || lit(&c, "--- mutex:") || lit(&c, "--- contention:")) {
		g->kind = K_CONTENTION;
		g->period = 1;
		g->attrs = true;
		set_type(g, 0, "contentions", "count", 0);
		set_type(g, 1, "delay", "nanoseconds", 0);
		return 1;
	}
	if (lit(&c, "--- threadz ") || lit(&c, "--- Thread ")) {
		g->kind = K_THREAD;
		set_type(g, 0, "thread", "count", 0);
		return 1;
	}
	/* "TYPE profile: total N" */
	const char *sp = memchr(l, ' ', n);
	if (sp && sp > l) {
		c.p = sp;
		int64_t total;
		if (lit(&c, " profile: total ") && num(&c, false, &total) && c.p == c.end &&
		    !memchr(l, '\t', (size_t)(sp - l))) {
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)(sp - l), l);
			g->kind = K_COUNT;
			set_type(g, 0, name, "count", 0);
			return 1;
		}
	}
	return fail(g,
	            "a legacy profile header (\"heap profile: ...\", \"--- contention:\", "
	            "\"--- threadz\", \"TYPE profile: total N\")",
	            l, n);
}

bool import_legacy_sniff(const uint8_t *buf, size_t len)
{
	const char *p = (const char *)buf, *end = p + len;

	/* pprof skips leading blank and '#' lines only for count profiles,
	 * but none of these headers can be mistaken for anything else */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *q = p;
		while (q < p + n && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == p + n || *q == '#') {
			if (!nl)
				return false;
			p = nl + 1;
			continue;
		}
		static const char *const heads[] = {"heap profile:", "--- contentionz ",
		                                    "--- mutex:",    "--- contention:",
		                                    "--- threadz ",  "--- Thread "};
		for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
			if (n >= strlen(heads[i]) && memcmp(p, heads[i], strlen(heads[i])) == 0)
				return true;
		const char *sp = memchr(p, ' ', n);
		const char *m =
		        sp ? memmem(sp, n - (size_t)(sp - p), " profile: total ", 16) : NULL;
		if (m == sp && sp && sp > p) {
			const char *d = sp + 16;
			if (d == p + n)
				return false;
			while (d < p + n && *d >= '0' && *d <= '9')
				d++;
			while (d < p + n && *d == '\r')
				d++;
			return d == p + n && d > sp + 16;
		}
		return false;
	}
	return false;
}

/* ---- samples ------------------------------------------------------------ */

static int new_sample(struct legacy *g, struct lsample **out)
{
	int rc = import_grow((void **)&g->s, &g->s_cap, g->ns + 1, sizeof(*g->s));
	if (rc < 0)
		return rc;
	*out = &g->s[g->ns++];
	memset(*out, 0, sizeof(**out));
	(*out)->line = g->lr.line;
	(*out)->first_sym = g->nsyms;
	return 0;
}

/* pprof's scaleHeapSample.  Returns false when a scaled value does not
 * fit in 64 bits (a conversion out of range is undefined). */
static bool unsample(int64_t *count, int64_t *size, int64_t rate)
{
	if (*count == 0 || *size == 0) {
		*count = *size = 0;
		return true;
	}
	if (rate <= 1)
		return true;
	double avg = (double)*size / (double)*count;
	double scale = 1 / (1 - exp(-avg / (double)rate));
	double c = (double)*count * scale, z = (double)*size * scale;
	if (!(c >= 0 && c < 0x1p63 && z >= 0 && z < 0x1p63))
		return false;
	*count = (int64_t)c;
	*size = (int64_t)z;
	return true;
}

/* "I: IB [A: AB] @ pcs" */
static int heap_sample(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};
	int64_t v[4];
	static const char what[] = "a heap sample \"N: N [N: N] @ 0xPC ...\"";

	for (int i = 0; i < 4; i++) {
		blanks(&c);
		if (i == 2 && !lit(&c, "["))
			return fail(g, what, l, n);
		blanks(&c);
		if (!num(&c, i < 2, &v[i]) || (i % 2 == 0 && !lit(&c, ":")))
			return fail(g, what, l, n);
	}
	blanks(&c);
	if (!lit(&c, "]"))
		return fail(g, what, l, n);
	blanks(&c);
	if (!lit(&c, "@"))
		return fail(g, what, l, n);
	struct lsample *s;
	int rc = new_sample(g, &s);
	if (rc < 0)
		return rc;
	rc = pcs(g, &c, &s->first_pc, &s->npc);
	if (rc <= 0)
		return rc < 0 ? rc : fail(g, what, l, n);
	/* in-use, then allocated; pprof puts allocated first */
	for (int k = 0; k < 2; k++) {
		int64_t *cnt = &v[2 * k], *sz = &v[2 * k + 1];
		if (*cnt == 0 && *sz != 0)
			return import_fail(
			        g->ctx, g->lr.line,
			        "expected a size of 0 where the count is 0, got %lld bytes",
			        (long long)*sz);
		if (g->v2 && !unsample(cnt, sz, g->rate))
			return import_fail(g->ctx, g->lr.line,
			                   "expected a count and size that fit in 64 bits once "
			                   "scaled by the sampling rate");
	}
	if (g->has_alloc) {
		s->v[0] = v[2];
		s->v[1] = v[3];
		s->v[2] = v[0];
		s->v[3] = v[1];
	} else {
		s->v[0] = v[0];
		s->v[1] = v[1];
	}
	return 0;
}

/* "key = value" lines of a contention profile; 0 when l is not one. */
static int contention_attr(struct legacy *g, const char *l, size_t n)
{
	const char *eq = memchr(l, '=', n);
	if (!eq)
		return 0;
	size_t kl = (size_t)(eq - l);
	while (kl && (l[kl - 1] == ' ' || l[kl - 1] == '\t'))
		kl--;
	struct cur c = {eq + 1, l + n};
	int64_t v = 0;
	blanks(&c);
	bool ok = num(&c, false, &v);
	blanks(&c);
	ok = ok && c.p == c.end;
#define KEY(s) (kl == sizeof(s) - 1 && memcmp(l, s, kl) == 0)
	if (KEY("discarded samples"))
		return 1;
	if (!ok || !(KEY("cycles/second") || KEY("sampling period") || KEY("ms since reset")))
		return fail(g, "cycles/second, sampling period or ms since reset = NUMBER", l, n);
	if (KEY("cycles/second"))
		g->cpu_hz = v;
	else if (KEY("sampling period"))
		g->period = v;
#undef KEY
	return 1;
}

/* "CYCLES COUNT @ pcs" */
static int contention_sample(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};
	int64_t cycles, count;
	static const char what[] = "a contention sample \"CYCLES COUNT @ 0xPC ...\"";

	if (!num(&c, false, &cycles))
		return fail(g, what, l, n);
	blanks(&c);
	if (!num(&c, false, &count))
		return fail(g, what, l, n);
	blanks(&c);
	if (!lit(&c, "@"))
		return fail(g, what, l, n);
	struct lsample *s;
	int rc = new_sample(g, &s);
	if (rc < 0)
		return rc;
	rc = pcs(g, &c, &s->first_pc, &s->npc);
	if (rc <= 0)
		return rc < 0 ? rc : fail(g, what, l, n);
	if (g->period > 0) {
		if (g->cpu_hz > 0) {
			double ns = (double)cycles * (double)g->period / ((double)g->cpu_hz / 1e9);
			/* a conversion out of range is undefined: refuse it */
			if (!(ns >= 0 && ns < 0x1p63))
				return import_fail(g->ctx, g->lr.line,
				                   "expected a delay that fits in 64 bits of "
				                   "nanoseconds once scaled by the sampling period "
				                   "and cycles/second");
			cycles = (int64_t)ns;
		}
		if (__builtin_mul_overflow(count, g->period, &count))
			return import_fail(
			        g->ctx, g->lr.line,
			        "expected a count that fits in 64 bits once multiplied by "
			        "the sampling period");
	}
	s->v[0] = count;
	s->v[1] = cycles;
	return 0;
}

/* "N @ 0xPC ..." */
static int count_sample(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};
	int64_t v;
	static const char what[] = "a sample \"N @ 0xPC ...\"";

	if (!num(&c, false, &v) || !lit(&c, " @"))
		return fail(g, what, l, n);
	struct lsample *s;
	int rc = new_sample(g, &s);
	if (rc < 0)
		return rc;
	rc = pcs(g, &c, &s->first_pc, &s->npc);
	if (rc <= 0)
		return rc < 0 ? rc : fail(g, what, l, n);
	s->v[0] = v;
	return 0;
}

/* A thread profile's lines: "--- Thread ..." starts a thread, then lines
 * of pcs; "same as previous thread" counts the previous one again. */
static int thread_line(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l, l + n};

	if (lit(&c, "--- threadz "))
		return 0;
	if (lit(&c, "---- no stack trace for")) {
		g->in_maps = true; /* pprof stops reading threads here */
		return 0;
	}
	if (lit(&c, "--- Thread ")) {
		struct lsample *s;
		int rc = new_sample(g, &s);
		if (rc < 0)
			return rc;
		s->v[0] = 1;
		s->first_pc = g->npcs;
		g->in_thread = true;
		return 0;
	}
	if (!g->in_thread || !g->ns)
		return fail(g, "\"--- Thread ID (name: NAME/N) stack: ---\"", l, n);
	struct lsample *s = &g->s[g->ns - 1];
	if (memmem(l, n, "same as previous thread", 23)) {
		g->ns--;
		if (g->ns)
			g->s[g->ns - 1].v[0]++;
		g->in_thread = false;
		return 0;
	}
	/* every 0x number of the line, wherever it is, as pprof takes them */
	for (const char *q = l; q + 2 < l + n; q++) {
		if (q[0] != '0' || q[1] != 'x' || (q > l && q[-1] != ' ' && q[-1] != '\t'))
			continue;
		struct cur d = {q, l + n};
		const char *e = q + 2;
		while (e < l + n && *e != ' ' && *e != '\t')
			e++;
		d.end = e;
		size_t first, cnt;
		int rc = pcs(g, &d, &first, &cnt);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return fail(g, "addresses of at most 64 bits", l, n);
		s->npc += cnt;
		q = e - 1;
	}
	return 0;
}

/* "#\t0xPC\tNAME+0xOFF\tFILE:LINE" (Go's debug=1 symbols) after a sample. */
static int symbol_line(struct legacy *g, const char *l, size_t n)
{
	struct cur c = {l + 1, l + n};
	uint64_t pc;

	if (!g->ns || g->in_maps)
		return 0;
	blanks(&c);
	if (!lit(&c, "0x"))
		return 0;
	const char *h = c.p;
	while (c.p < c.end && ((*c.p >= '0' && *c.p <= '9') || (*c.p >= 'a' && *c.p <= 'f')))
		c.p++;
	if (c.p == h)
		return 0;
	(void)pc;
	blanks(&c);
	struct lsample *s = &g->s[g->ns - 1];
	if (s->first_sym + s->nsym != g->nsyms)
		return 0; /* not right after its sample's lines */
	const char *name = c.p;
	while (c.p < c.end && *c.p != '\t' && *c.p != ' ')
		c.p++;
	size_t nl = (size_t)(c.p - name);
	if (nl == 0)
		return 0; /* "#\t0xPC" alone: Go hid the frame (runtime.goexit) */
	const char *plus = memmem(name, nl, "+0x", 3);
	if (plus)
		nl = (size_t)(plus - name);
	blanks(&c);
	const char *file = c.p, *colon = NULL;
	for (const char *q = c.end; q > file; q--)
		if (q[-1] == ':') {
			colon = q - 1;
			break;
		}
	uint32_t line = 0;
	size_t fl = 0;
	if (colon) {
		struct cur d = {colon + 1, c.end};
		int64_t ln;
		if (num(&d, false, &ln) && ln <= UINT32_MAX) {
			line = (uint32_t)ln;
			fl = (size_t)(colon - file);
		}
	}
	int rc = import_grow((void **)&g->syms, &g->syms_cap, g->nsyms + 1, sizeof(*g->syms));
	if (rc >= 0)
		rc = import_grow((void **)&g->names, &g->names_cap, g->names_len + nl + fl + 1, 1);
	if (rc < 0)
		return rc;
	struct lsym *y = &g->syms[g->nsyms++];
	memcpy(g->names + g->names_len, name, nl);
	y->name = g->names_len;
	y->name_len = import_tidy(g->names + g->names_len, nl);
	g->names_len += y->name_len;
	memcpy(g->names + g->names_len, file, fl);
	y->file = g->names_len;
	y->file_len = fl;
	g->names_len += fl;
	y->line = line;
	s->nsym++;
	return 0;
}

static int handle_line(struct legacy *g, const char *l, size_t n)
{
	while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	while (n && (l[0] == ' ' || l[0] == '\t')) {
		l++;
		n--;
	}
	if (memchr(l, '\0', n))
		return fail(g, "text without NUL bytes", l, n);
	if (n == 0)
		return 0;
	if (g->ntypes == 0) {
		if (l[0] == '#')
			return 0;
		int rc = first_line(g, l, n);
		if (rc < 0)
			return rc;
		if (g->kind == K_THREAD)
			return thread_line(g, l, n);
		return 0;
	}
	if (g->in_maps) {
		int rc = import_maps_line(&g->maps, l, n);
		return rc < 0 ? rc : 0;
	}
	if (is_sentinel(l, n)) {
		g->in_maps = true;
		return 0;
	}
	if (l[0] == '#')
		return symbol_line(g, l, n);
	switch (g->kind) {
	case K_HEAP: return heap_sample(g, l, n);
	case K_CONTENTION:
		if (n >= 3 && memcmp(l, "---", 3) == 0) {
			g->in_maps = true; /* maps only follow, as pprof reads it */
			return 0;
		}
		if (g->attrs) {
			int rc = contention_attr(g, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
			g->attrs = false;
		}
		return contention_sample(g, l, n);
	case K_THREAD: return thread_line(g, l, n);
	case K_COUNT:
		if (n >= 3 && memcmp(l, "---", 3) == 0) {
			g->in_maps = true;
			return 0;
		}
		return count_sample(g, l, n);
	}
	return 0;
}

static int handle_line_cb(void *state, const char *l, size_t n)
{
	return handle_line(state, l, n);
}

/* ---- storing -------------------------------------------------------- */

static void default_binary(const struct legacy *g, char *out, size_t outlen)
{
	const char *path = g->maps.n ? g->maps.m[0].path : g->ctx->path;
	if (!path || strcmp(path, "-") == 0)
		path = "legacy";
	const char *b = strrchr(path, '/');
	snprintf(out, outlen, "%s", b ? b + 1 : path);
	if (!g->maps.n) {
		char *dot = strchr(out, '.');
		if (dot && dot != out)
			*dot = '\0';
	}
}

/* Appends frames f[0..k) (root first) to g->stack, which is gathered
 * leaf first: f[k-1] first.  Returns 1 once the stack is past the limits
 * (import_stack_past, counted in *depth and *bytes), else 0, or -ENOMEM. */
static int push_frames(struct legacy *g, size_t *n, const struct store_frame *f, size_t k,
                       size_t *depth, size_t *bytes)
{
	int rc = import_grow((void **)&g->stack, &g->stack_cap, *n + k, sizeof(*g->stack));
	if (rc < 0)
		return rc;
	for (size_t i = k; i-- > 0;) {
		g->stack[(*n)++] = f[i];
		if (import_stack_past(depth, bytes, f[i].name_len))
			return 1;
	}
	return 0;
}

/* The root-first frames of sample s into g->stack; returns their number.
 * They are gathered from the leaf until the stack is past the limits:
 * import_path makes the same path of those as of all of them. */
static int sample_frames(struct legacy *g, const struct lsample *s, size_t *n)
{
	size_t depth = 0, bytes = 0;
	int rc = 0;

	*n = 0;
	if (s->nsym) {
		for (size_t k = 0; k < s->nsym && rc == 0; k++) {
			const struct lsym *y = &g->syms[s->first_sym + k];
			struct store_frame f = {
			        .name = g->names + y->name,
			        .name_len = y->name_len,
			        .file = y->file_len ? g->names + y->file : NULL,
			        .file_len = y->file_len,
			        .line = y->line,
			        .kind = STORE_FRAME_USER,
			};
			rc = push_frames(g, n, &f, 1, &depth, &bytes);
		}
	} else if (s->npc == 0) {
		/* "N @" alone (Go's threadcreate, for threads made before
		 * profiling began; pprof refuses the file): one unknown frame */
		struct store_frame f = {
		        .name = "[unknown]", .name_len = 9, .kind = STORE_FRAME_UNKNOWN};
		rc = push_frames(g, n, &f, 1, &depth, &bytes);
	} else {
		for (size_t k = 0; k < s->npc && rc == 0; k++) {
			struct store_frame f[FRAMES_PER_PC];
			bool caller = g->kind != K_THREAD || k > 0;
			rc = import_addr_frames(g->ctx, &g->maps, LEGACY_PID,
			                        g->pcs[s->first_pc + k], caller, f, FRAMES_PER_PC);
			if (rc >= 0)
				rc = push_frames(g, n, f, (size_t)rc, &depth, &bytes);
		}
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < *n / 2; i++) {
		struct store_frame t = g->stack[i];
		g->stack[i] = g->stack[*n - 1 - i];
		g->stack[*n - 1 - i] = t;
	}
	return 0;
}

static int store_samples(struct legacy *g)
{
	struct import_ctx *ctx = g->ctx;
	uint32_t pos[MAX_TYPES], neg[MAX_TYPES];
	bool have_neg[MAX_TYPES] = {false};
	char binary[256], version[16];
	int rc;

	default_binary(g, binary, sizeof(binary));
	if (ctx->sym && g->maps.n) {
		rc = ctx->sym->process(ctx->sym->ctx, LEGACY_PID, binary);
		for (size_t i = 0; rc >= 0 && i < g->maps.n; i++)
			rc = ctx->sym->map(ctx->sym->ctx, LEGACY_PID, g->maps.m[i].start,
			                   g->maps.m[i].end, g->maps.m[i].pgoff, g->maps.m[i].path,
			                   NULL, 0);
		if (rc < 0)
			return rc;
	}
	const char *bid =
	        ctx->sym && g->maps.n ? ctx->sym->build_id(ctx->sym->ctx, LEGACY_PID) : "";
	snprintf(version, sizeof(version), "%.12s", bid);
	for (unsigned j = 0; j < g->ntypes; j++) {
		rc = import_series(ctx, binary, *version ? version : NULL, g->types[j].name,
		                   g->types[j].unit, &pos[j]);
		if (rc < 0)
			return rc;
	}

	int64_t when = ctx->opt ? ctx->opt->now : 0;
	for (size_t i = 0; i < g->ns; i++) {
		const struct lsample *s = &g->s[i];
		bool any = false;
		for (unsigned j = 0; j < g->ntypes; j++)
			any |= s->v[j] != 0;
		if (!any)
			continue;
		size_t n;
		uint32_t node;
		rc = sample_frames(g, s, &n);
		if (rc < 0)
			return rc;
		rc = import_path(ctx, g->stack, n, &node);
		if (rc < 0)
			return rc;
		for (unsigned j = 0; j < g->ntypes; j++) {
			int64_t v = s->v[j];
			if (v == 0)
				continue;
			uint32_t series = pos[j];
			if (v < 0) {
				if (!have_neg[j]) {
					char ev[sizeof(g->types[j].name) + 2];
					snprintf(ev, sizeof(ev), IMPORT_NEGATIVE_PREFIX "%s",
					         g->types[j].name);
					rc = import_series(ctx, binary, *version ? version : NULL,
					                   ev, g->types[j].unit, &neg[j]);
					if (rc < 0)
						return rc;
					have_neg[j] = true;
				}
				series = neg[j];
			}
			int64_t c = s->v[g->types[j].samples_of];
			uint64_t samples = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
			uint64_t w = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
			rc = import_add(ctx, &g->sums, s->line, series, when, node,
			                samples ? samples : 1, w);
			if (rc < 0)
				return rc;
		}
		ctx->samples++;
	}
	return store_batch_input_bytes(ctx->batch, pos[g->ntypes - 1], g->lr.consumed);
}

int import_legacy(struct import_ctx *ctx)
{
	struct legacy g = {.ctx = ctx};
	int rc = linereader_init(&g.lr, ctx->fd, ctx->prefix, ctx->prefix_len);

	if (rc < 0)
		return rc;
	rc = import_lines(ctx, &g.lr, handle_line_cb, &g);
	if (rc < 0)
		goto out;
	ctx->bytes = g.lr.consumed;
	if (g.ntypes == 0) {
		rc = import_fail(ctx, 0,
		                 "expected a legacy profile header (\"heap profile: ...\", \"--- "
		                 "contention:\", \"--- threadz\", \"TYPE profile: total N\"), got "
		                 "no header");
		goto out;
	}
	rc = store_samples(&g);
out:
	linereader_free(&g.lr);
	import_maps_free(&g.maps);
	free(g.s);
	free(g.pcs);
	free(g.syms);
	free(g.names);
	free(g.stack);
	import_sums_free(&g.sums);
	return rc;
}
