/*
 * folded.c — the folded-stack importer ("a;b;c 42" per line).
 *
 * Reads the output of stackcollapse-*.pl, bcc's `profile -f` and
 * async-profiler's collapsed format.  The count follows the LAST space of
 * a line, so frames may contain spaces.  Without --binary the first frame
 * names the series binary and is not stored as a frame; with --binary every
 * frame is part of the stack.  Each line adds count to both samples and
 * weight, in a series whose event is --event (default "samples") and whose
 * unit is "count", at the import's wall-clock time.  Empty (or
 * whitespace-only) lines are skipped, and so are lines that begin with '#'
 * wherever they are (metadata such as "# samples: 100", which some
 * samplers write; a stack whose first frame begins with '#' cannot be
 * imported without --binary); a trailing CR is ignored.
 *
 * As in perf.c, repeated stacks skip frame splitting: the frame text is
 * hashed with XXH3-128 and a stackcache maps it to (series, leaf node).
 *
 * flamefs's own `folded` files escape a name's control bytes, backslashes
 * and ';' as \xNN (fs/view/README.md, "Names in files"): a frame's \xNN
 * that stands for such a byte is decoded, so export and import give the
 * names back exactly.  Any other backslash is kept as it is.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#define CACHE_SLOTS_LOG2 18
#define DEFAULT_EVENT    "samples"

struct folded {
	struct import_ctx *ctx;
	struct linereader lr;
	struct stackcache *cache; /* frame text -> (series, leaf node) */
	struct store_frame *frames;
	size_t frames_cap;
	char *unesc; /* the decoded names of one line (decode_frame()) */
	size_t unesc_cap;
	uint64_t *series_bytes; /* input bytes per series id */
	size_t series_bytes_cap;
	struct import_sums sums;
	/* the last series looked up, by binary name */
	char *last_binary;
	size_t last_binary_len;
	uint32_t last_series;
	bool have_last;
};

static inline bool is_ws(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static int fail(struct folded *f, const char *what, const char *s, size_t n)
{
	char ex[256];

	import_excerpt(ex, sizeof(ex), s, n);
	return import_fail(f->ctx, f->lr.line, "%s, got \"%s\"", what, ex);
}

static uint8_t frame_kind(const char *s, size_t n)
{
	if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']') {
		switch (s[n - 2]) {
		case 'k': return STORE_FRAME_KERNEL;
		case 'i': return STORE_FRAME_INLINE;
		case 'j': return STORE_FRAME_JIT;
		}
	}
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		return STORE_FRAME_UNKNOWN; /* "[unknown]", "[libc.so.6]" */
	return STORE_FRAME_USER;
}

static int series_for(struct folded *f, const char *bin, size_t len, uint32_t *id)
{
	const struct import_options *o = f->ctx->opt;
	int rc;

	if (f->have_last && f->last_binary_len == len && memcmp(f->last_binary, bin, len) == 0) {
		*id = f->last_series;
		return 0;
	}
	char *copy = strndup(bin, len);
	if (!copy)
		return -ENOMEM;
	rc = import_series(f->ctx, copy, NULL, (o && o->event) ? o->event : DEFAULT_EVENT, "count",
	                   id);
	if (rc < 0) {
		free(copy);
		return rc;
	}
	free(f->last_binary);
	f->last_binary = copy;
	f->last_binary_len = len;
	f->last_series = *id;
	f->have_last = true;
	return 0;
}

/* The byte of the \xNN at s[i..n), or -1 when there is none there. */
static int escaped_byte(const char *s, size_t i, size_t n)
{
	if (n - i < 4 || s[i] != '\\' || s[i + 1] != 'x' || import_hexval(s[i + 2]) < 0 ||
	    import_hexval(s[i + 3]) < 0)
		return -1;
	return import_hexval(s[i + 2]) << 4 | import_hexval(s[i + 3]);
}

/* Decodes, into o, the escapes flamefs's folded files write in s[0..n):
 * \xNN for a byte 0x01-0x1f, 0x7f, ';' or '\\', and \xc2\xNN for
 * U+0080..U+009F.  Returns the decoded length (at most n). */
static size_t decode_frame(const char *s, size_t n, char *o)
{
	size_t k = 0;

	for (size_t i = 0; i < n;) {
		int c = escaped_byte(s, i, n), c2 = c == 0xc2 ? escaped_byte(s, i + 4, n) : -1;
		if (c == 0xc2 && c2 >= 0x80 && c2 <= 0x9f) {
			o[k++] = (char)0xc2;
			o[k++] = (char)c2;
			i += 8;
		} else if ((c > 0 && c < 0x20) || c == 0x7f || c == ';' || c == '\\') {
			o[k++] = (char)c;
			i += 4;
		} else {
			o[k++] = s[i++];
		}
	}
	return k;
}

/* The name s[0..n) as stored: decoded into f->unesc at *used when it
 * holds an escape (decode_frame), else s itself. */
static void frame_name(struct folded *f, bool escaped, const char *s, size_t n, size_t *used,
                       const char **name, size_t *len)
{
	*name = s;
	*len = n;
	if (escaped && memmem(s, n, "\\x", 2)) {
		*name = f->unesc + *used;
		*len = decode_frame(s, n, f->unesc + *used);
		*used += *len;
	}
}

/* Splits the frames of one line and interns the series and path.  The
 * frames are split from the last (the leaf) until the stack is past the
 * limits (import_stack_past): import_path makes the same path of those,
 * so a line of millions of frames costs no more than the limits. */
static int parse_stack(struct folded *f, const char *s, size_t n, uint32_t *series, uint32_t *node)
{
	const struct import_options *o = f->ctx->opt;
	size_t nf = 0, end = n, depth = 0, bytes = 0, used = 0;
	bool escaped = s && memmem(s, n, "\\x", 2) != NULL; /* s: NULL only when n is 0 */
	int rc;

	/* the decoded names, each no longer than its text */
	if (escaped && f->unesc_cap < n) {
		char *nu = realloc(f->unesc, n);
		if (!nu)
			return -ENOMEM;
		f->unesc = nu;
		f->unesc_cap = n;
	}

	/* Without --binary the first frame names the series and is not
	 * part of the stack, which then begins after the first ';' (a
	 * line without one has no frames). */
	const char *semi = memchr(s, ';', n);
	bool any = (o && o->binary) || semi;
	size_t first = (o && o->binary) ? 0 : semi ? (size_t)(semi - s) + 1 : n;
	if (o && o->binary) {
		rc = series_for(f, o->binary, strlen(o->binary), series);
	} else {
		const char *bin;
		size_t blen;
		frame_name(f, escaped, s, semi ? (size_t)(semi - s) : n, &used, &bin, &blen);
		rc = series_for(f, bin, blen, series);
	}
	if (rc < 0)
		return rc;

	while (any) {
		const char *sep = end > first ? memrchr(s + first, ';', end - first) : NULL;
		size_t at = sep ? (size_t)(sep - s) + 1 : first;
		rc = import_grow((void **)&f->frames, &f->frames_cap, nf + 1, sizeof(*f->frames));
		if (rc < 0)
			return rc;
		struct store_frame *fr = &f->frames[nf++];
		memset(fr, 0, sizeof(*fr));
		frame_name(f, escaped, s + at, end - at, &used, &fr->name, &fr->name_len);
		fr->kind = frame_kind(fr->name, fr->name_len);
		if (import_stack_past(&depth, &bytes, fr->name_len) || !sep)
			break;
		end = at - 1;
	}
	/* root first */
	for (size_t i = 0; i < nf / 2; i++) {
		struct store_frame t = f->frames[i];
		f->frames[i] = f->frames[nf - 1 - i];
		f->frames[nf - 1 - i] = t;
	}
	return import_path(f->ctx, f->frames, nf, node);
}

static int note_bytes(struct folded *f, uint32_t id, uint64_t bytes)
{
	if (id >= f->series_bytes_cap) {
		size_t ncap = f->series_bytes_cap ? f->series_bytes_cap : 16;
		while (ncap <= id)
			ncap *= 2;
		uint64_t *nb = realloc(f->series_bytes, ncap * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		memset(nb + f->series_bytes_cap, 0, (ncap - f->series_bytes_cap) * sizeof(*nb));
		f->series_bytes = nb;
		f->series_bytes_cap = ncap;
	}
	f->series_bytes[id] += bytes;
	return 0;
}

static int handle_line(struct folded *f, const char *l, size_t n)
{
	size_t end = n, sp;
	uint64_t count = 0;
	int rc;

	while (end > 0 && is_ws((unsigned char)l[end - 1]))
		end--;
	if (end == 0 || l[0] == '#')
		return 0;
	if (memchr(l, '\0', n))
		return fail(f, "expected \"frame;frame;... COUNT\"", l, n);

	const char *last = memrchr(l, ' ', end);
	if (!last)
		return fail(f, "expected \"frame;frame;... COUNT\"", l, n);
	sp = (size_t)(last - l);
	if (sp + 1 == end)
		return fail(f, "expected a count after the last space", l, n);
	for (size_t i = sp + 1; i < end; i++) {
		unsigned d = (unsigned)((unsigned char)l[i] - '0');
		if (d > 9)
			return fail(f, "expected a whole-number count", l + sp + 1, end - sp - 1);
		if (count > (UINT64_MAX - d) / 10)
			return fail(f, "expected a count below 2^64", l + sp + 1, end - sp - 1);
		count = count * 10 + d;
	}
	if (sp == 0)
		return fail(f, "expected frames before the count", l, n);

	XXH128_hash_t h = XXH3_128bits(l, sp);
	struct stackcache_key key = {h.low64, h.high64};
	uint32_t series, node;
	if (!stackcache_get(f->cache, key, &series, &node)) {
		rc = parse_stack(f, l, sp, &series, &node);
		if (rc < 0)
			return rc;
		stackcache_put(f->cache, key, series, node);
	}
	if (count) {
		int64_t now = f->ctx->opt ? f->ctx->opt->now : 0;
		rc = import_add(f->ctx, &f->sums, f->lr.line, series, now, node, count, count);
		if (rc < 0)
			return rc;
	}
	if (__builtin_add_overflow(f->ctx->samples, count, &f->ctx->samples))
		f->ctx->samples = UINT64_MAX; /* a shown total only */
	return note_bytes(f, series, n + 1);
}

/* import_lines() callback. */
static int handle_line_cb(void *state, const char *l, size_t n)
{
	return handle_line(state, l, n);
}

/* True when the line looks like folded output: "frames COUNT". */
static bool folded_line(const uint8_t *p, size_t len)
{
	while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
		len--;
	size_t digits = 0;
	while (digits < len && p[len - 1 - digits] >= '0' && p[len - 1 - digits] <= '9')
		digits++;
	return digits > 0 && digits < len && p[len - 1 - digits] == ' ';
}

bool import_folded_sniff(const uint8_t *buf, size_t len)
{
	/* Folded: every complete line that is not a comment is "stack
	 * COUNT", and there is at least one. */
	size_t lines = 0, folded = 0;
	const uint8_t *p = buf, *end = buf + len;
	while (p < end && lines < 64) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* ignore a possibly cut last line */
		size_t l = (size_t)(nl - p);
		while (l && (p[l - 1] == '\r' || p[l - 1] == ' ' || p[l - 1] == '\t'))
			l--;
		if (l > 0 && p[0] != '#') {
			lines++;
			folded += folded_line(p, l);
		}
		p = nl + 1;
	}
	/* One line, maybe longer than buf: folded when it has a count or
	 * a ';'. */
	if (lines == 0 && p < end &&
	    (folded_line(p, (size_t)(end - p)) || memchr(p, ';', (size_t)(end - p))))
		return true;
	return lines > 0 && folded == lines;
}

int import_folded(struct import_ctx *ctx)
{
	struct folded f = {.ctx = ctx};
	int rc;

	rc = linereader_init(&f.lr, ctx->fd, ctx->prefix, ctx->prefix_len);
	if (rc < 0)
		return rc;
	f.cache = stackcache_new(CACHE_SLOTS_LOG2);
	if (!f.cache) {
		rc = -ENOMEM;
		goto out;
	}

	rc = import_lines(ctx, &f.lr, handle_line_cb, &f);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < f.series_bytes_cap; i++) {
		if (!f.series_bytes[i])
			continue;
		rc = store_batch_input_bytes(ctx->batch, (uint32_t)i, f.series_bytes[i]);
		if (rc < 0)
			goto out;
	}
	ctx->bytes = f.lr.consumed;
	rc = 0;
out:
	linereader_free(&f.lr);
	stackcache_free(f.cache);
	free(f.frames);
	free(f.unesc);
	free(f.series_bytes);
	free(f.last_binary);
	import_sums_free(&f.sums);
	return rc;
}
