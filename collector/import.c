/*
 * import.c — what every importer shares: error messages with file and
 * line, series labels (--binary, --version), interning a root-first path
 * of frames into the stack tree, and format detection.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

int import_fail(struct import_ctx *ctx, uint64_t line, const char *fmt, ...)
{
	const char *path = (!ctx->path || strcmp(ctx->path, "-") == 0) ? "<stdin>" : ctx->path;
	int n;

	if (line)
		n = snprintf(ctx->err, sizeof(ctx->err), "%s:%llu: ", path,
		             (unsigned long long)line);
	else
		n = snprintf(ctx->err, sizeof(ctx->err), "%s: ", path);
	if (n < 0 || (size_t)n >= sizeof(ctx->err))
		return -EINVAL;

	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->err + n, sizeof(ctx->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int import_series(struct import_ctx *ctx, const char *binary, const char *version,
                  const char *event, const char *unit, uint32_t *id)
{
	const struct import_options *o = ctx->opt;
	struct store_series_key k = {
	        .binary = (o && o->binary) ? o->binary : binary,
	        .version = (o && o->version) ? o->version
	                   : version         ? version
	                                     : IMPORT_DEFAULT_VERSION,
	        .event = event,
	        .unit = unit,
	};

	if (!k.binary || !*k.binary)
		k.binary = "[unknown]";
	int rc = store_batch_series(ctx->batch, &k, id);
	/* The store refuses a key only when it holds the series already
	 * with another unit (the fields are all set here). */
	if (rc == -EINVAL)
		return import_fail(ctx, ctx->line,
		                   "series %s/%s/%s has another unit in this store; expected "
		                   "\"%s\" to match it (use --event to name it apart)",
		                   k.binary, k.version, k.event, k.unit);
	return rc;
}

int import_sums_add(struct import_sums *s, uint32_t series, uint64_t samples, uint64_t weight)
{
	if (series >= s->cap) {
		size_t ncap = s->cap ? s->cap : 16;
		while (ncap <= series)
			ncap *= 2;
		uint64_t(*n)[2] = realloc(s->sum, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + s->cap, 0, (ncap - s->cap) * sizeof(*n));
		s->sum = n;
		s->cap = ncap;
	}
	uint64_t a, b;
	if (__builtin_add_overflow(s->sum[series][0], samples, &a) ||
	    __builtin_add_overflow(s->sum[series][1], weight, &b))
		return -EOVERFLOW;
	s->sum[series][0] = a;
	s->sum[series][1] = b;
	return 0;
}

void import_sums_free(struct import_sums *s)
{
	free(s->sum);
	s->sum = NULL;
	s->cap = 0;
}

int import_add(struct import_ctx *ctx, struct import_sums *sums, uint64_t line, uint32_t series,
               int64_t when, uint32_t node, uint64_t samples, uint64_t weight)
{
	int rc = import_sums_add(sums, series, samples, weight);
	if (rc == -EOVERFLOW)
		return import_fail(ctx, line,
		                   "expected counts that add up to less than 2^64 in one series, "
		                   "got a sum over 18446744073709551615");
	if (rc < 0)
		return rc;
	rc = store_batch_add(ctx->batch, series, when, node, samples, weight);
	if (rc == -ERANGE)
		return import_fail(ctx, line,
		                   "sample time %lld s is out of range; expected a time within "
		                   "2^31 of the store's time buckets from 1970",
		                   (long long)when);
	return rc;
}

int import_path(struct import_ctx *ctx, const struct store_frame *frames, size_t n, uint32_t *node)
{
	uint32_t parent = STORE_ROOT_NODE;

	for (size_t i = 0; i < n; i++) {
		uint32_t frame;
		int rc = store_batch_frame(ctx->batch, &frames[i], &frame);
		if (rc < 0)
			return rc;
		rc = store_batch_node(ctx->batch, parent, frame, &parent);
		if (rc < 0)
			return rc;
	}
	*node = parent;
	return 0;
}

size_t import_event_base(const char *ev, size_t n)
{
	const char *colon = memrchr(ev, ':', n);

	if (!colon || colon == ev || (size_t)(colon - ev) + 1 == n)
		return n;
	for (const char *c = colon + 1; c < ev + n; c++)
		if (!strchr("ukhHGIpPSDWeb", *c) || !*c)
			return n;
	return (size_t)(colon - ev);
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

enum import_format import_detect(const uint8_t *buf, size_t len)
{
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b)
		return IMPORT_FORMAT_PPROF;
	/* Text formats hold no control bytes other than tab, CR and LF, and
	 * a protobuf's first bytes are a field key (0x0a, 0x12, ...) and a
	 * length, so a control byte in the first non-empty line means
	 * pprof.  One further down (a NUL in a frame name) is left to the
	 * text importer, which reports it with its line. */
	size_t i = 0;
	while (i < len && (buf[i] == '\n' || buf[i] == '\r'))
		i++;
	for (; i < len && i < 4096 && buf[i] != '\n'; i++) {
		uint8_t c = buf[i];
		if (c < 0x20 && c != '\t' && c != '\r')
			return IMPORT_FORMAT_PPROF;
	}

	/* perf script has indented stack lines below each header; folded has
	 * one "stack count" per line and no indentation. */
	size_t lines = 0, folded = 0;
	const uint8_t *p = buf, *end = buf + len;
	while (p < end && lines < 64) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* ignore a possibly cut last line */
		size_t l = (size_t)(nl - p);
		if (l > 0 && p[0] != '#') {
			if (p[0] == ' ' || p[0] == '\t')
				return IMPORT_FORMAT_PERF;
			lines++;
			folded += folded_line(p, l);
		}
		p = nl + 1;
	}
	/* One line, maybe longer than buf: folded when it has a count or
	 * a ';' (perf's header, its first line, has neither). */
	if (lines == 0 && p < end &&
	    (folded_line(p, (size_t)(end - p)) || memchr(p, ';', (size_t)(end - p))))
		return IMPORT_FORMAT_FOLDED;
	if (lines > 0 && folded == lines)
		return IMPORT_FORMAT_FOLDED;
	return IMPORT_FORMAT_PERF;
}

const char *import_format_name(enum import_format f)
{
	switch (f) {
	case IMPORT_FORMAT_PERF: return "perf";
	case IMPORT_FORMAT_FOLDED: return "folded";
	case IMPORT_FORMAT_PPROF: return "pprof";
	default: return "auto";
	}
}

int import_lines(struct import_ctx *ctx, struct linereader *lr,
                 int (*handle)(void *state, const char *line, size_t len), void *state)
{
	uint64_t next_progress = IMPORT_PROGRESS_EVERY;
	const char *l;
	size_t n;
	int rc;

	while ((rc = linereader_next(lr, &l, &n)) > 0) {
		ctx->line = lr->line;
		rc = handle(state, l, n);
		if (rc < 0)
			return rc;
		ctx->bytes = lr->consumed;
		if (ctx->bytes >= next_progress) {
			next_progress = ctx->bytes + IMPORT_PROGRESS_EVERY;
			if (ctx->progress)
				ctx->progress(ctx);
		}
	}
	if (rc == -E2BIG)
		return import_fail(ctx, lr->line + 1, "expected a line shorter than %u bytes",
		                   LINEREADER_MAX_LINE);
	return rc;
}

/* The tidying steps for a name holding ';', '(' or quotes: ';' becomes
 * ':', an argument list is cut (except in Go method names and "(anonymous
 * namespace)"), quotes go.  Works in place; returns the new length. */
size_t import_tidy(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == ';')
			s[i] = ':';

	/* A Go method name ("net/http.(*Client).Do") keeps its parens. */
	const char *open = memmem(s, n, ".(", 2);
	bool go = false;
	if (open) {
		size_t from = (size_t)(open - s) + 2;
		for (size_t j = n; j-- > from + 1;) {
			if (s[j] == '.' && s[j - 1] == ')' && j - 1 >= from) {
				go = true;
				break;
			}
		}
	}
	if (!go) {
		static const char anon[] = "anonymous namespace)";
		for (size_t i = 0; i < n; i++) {
			if (s[i] != '(')
				continue;
			if (n - i - 1 >= sizeof(anon) - 1 &&
			    memcmp(s + i + 1, anon, sizeof(anon) - 1) == 0)
				continue;
			n = i;
			break;
		}
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '"' && s[i] != '\'')
			s[o++] = s[i];
	return o;
}

void import_excerpt(char *out, size_t outlen, const char *s, size_t n)
{
	size_t o = 0;

	if (n > 40)
		n = 40;
	for (size_t i = 0; i < n && o + 5 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	out[o] = '\0';
}
