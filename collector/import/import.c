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
#include <unistd.h>

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
	return import_series_labels(ctx, binary, version, event, unit, NULL, id);
}

int import_series_labels(struct import_ctx *ctx, const char *binary, const char *version,
                         const char *event, const char *unit, const char *labels, uint32_t *id)
{
	const struct import_options *o = ctx->opt;
	char *joined = NULL;
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
	/* An event or unit is cleaned of control bytes before it is
	 * stored: each becomes U+FFFD, as the renderers show one. */
	const char **label[2] = {&k.event, &k.unit}, *what[2] = {"event", "unit"};
	char *clean[2] = {NULL, NULL};
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		const char *l = *label[i];
		if (!l)
			continue;
		size_t len = strlen(l), ctl = 0;
		if (len > IMPORT_MAX_LABEL) {
			rc = import_fail(ctx, ctx->line,
			                 "%s name of %zu bytes; expected at most %zu", what[i], len,
			                 IMPORT_MAX_LABEL);
			break;
		}
		for (size_t j = 0; j < len; j++)
			ctl += (unsigned char)l[j] < 0x20 || l[j] == 0x7f;
		if (!ctl)
			continue;
		char *c = malloc(len + 2 * ctl + 1), *o = c;
		if (!c) {
			rc = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < len; j++) {
			if ((unsigned char)l[j] < 0x20 || l[j] == 0x7f) {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			} else {
				*o++ = l[j];
			}
		}
		*o = '\0';
		clean[i] = c;
		*label[i] = c;
		ctx->cleaned_labels++;
	}
	if (rc == 0)
		rc = import_labels_join(ctx, labels, &joined);
	k.labels = joined;
	if (rc == 0)
		rc = store_batch_series(ctx->batch, &k, id);
	/* The store refuses a key only when it holds the series already
	 * with another unit (the fields are all set here). */
	if (rc == -EINVAL && !ctx->err[0])
		rc = import_fail(ctx, ctx->line,
		                 "series %s/%s/%s has another unit in this store; expected "
		                 "\"%s\" to match it (use --event to name it apart)",
		                 k.binary, k.version, k.event, k.unit);
	free(clean[0]);
	free(clean[1]);
	free(joined);
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

/* Adds a sample's counts to its series' sums; an overflow is the line's
 * error. */
static int add_sums(struct import_ctx *ctx, struct import_sums *sums, uint64_t line,
                    uint32_t series, uint64_t samples, uint64_t weight)
{
	int rc = import_sums_add(sums, series, samples, weight);
	if (rc == -EOVERFLOW)
		return import_fail(ctx, line,
		                   "expected counts that add up to less than 2^64 in one series, "
		                   "got a sum over 18446744073709551615");
	return rc;
}

/* The store's -ERANGE for a time of `secs` seconds, as the line's error. */
static int time_range_fail(struct import_ctx *ctx, uint64_t line, long long secs)
{
	return import_fail(ctx, line,
	                   "sample time %lld s is out of range; expected a time within "
	                   "2^31 of the store's time buckets from 1970",
	                   secs);
}

int import_add(struct import_ctx *ctx, struct import_sums *sums, uint64_t line, uint32_t series,
               int64_t when, uint32_t node, uint64_t samples, uint64_t weight)
{
	int rc = add_sums(ctx, sums, line, series, samples, weight);
	if (rc < 0)
		return rc;
	rc = store_batch_add(ctx->batch, series, when, node, samples, weight);
	return rc == -ERANGE ? time_range_fail(ctx, line, (long long)when) : rc;
}

int import_sample(struct import_ctx *ctx, struct import_sums *sums, uint64_t line, uint32_t series,
                  const struct store_sample *smp)
{
	int rc = add_sums(ctx, sums, line, series, 1, smp->weight);
	if (rc < 0)
		return rc;
	rc = store_batch_sample(ctx->batch, series, smp);
	if (rc == -ERANGE)
		return time_range_fail(
		        ctx, line,
		        (long long)(smp->time_us / 1000000 - (smp->time_us % 1000000 < 0)));
	return rc;
}

/* A copy of s[0..*n) cut to IMPORT_MAX_NAME bytes ending in
 * IMPORT_CUT_MARK, into *buf (malloc'd, the caller frees it); *n becomes
 * its length.  Returns the copy, or NULL on ENOMEM. */
static const char *cut_name(const char *s, size_t *n, char **buf)
{
	const size_t keep = IMPORT_MAX_NAME - (sizeof(IMPORT_CUT_MARK) - 1);

	*buf = malloc(IMPORT_MAX_NAME);
	if (!*buf)
		return NULL;
	memcpy(*buf, s, keep);
	memcpy(*buf + keep, IMPORT_CUT_MARK, sizeof(IMPORT_CUT_MARK) - 1);
	*n = IMPORT_MAX_NAME;
	return *buf;
}

/* Interns frame f, with any name, module or file past IMPORT_MAX_NAME cut
 * (counted in ctx->cut_names). */
static int intern_frame(struct import_ctx *ctx, const struct store_frame *f, uint32_t *id)
{
	if (f->name_len <= IMPORT_MAX_NAME && f->module_len <= IMPORT_MAX_NAME &&
	    f->file_len <= IMPORT_MAX_NAME)
		return store_batch_frame(ctx->batch, f, id);

	struct store_frame c = *f;
	char *b[3] = {NULL, NULL, NULL};
	int rc = -ENOMEM;

	if (c.name_len > IMPORT_MAX_NAME && !(c.name = cut_name(f->name, &c.name_len, &b[0])))
		goto out;
	if (c.module_len > IMPORT_MAX_NAME &&
	    !(c.module = cut_name(f->module, &c.module_len, &b[1])))
		goto out;
	if (c.file_len > IMPORT_MAX_NAME && !(c.file = cut_name(f->file, &c.file_len, &b[2])))
		goto out;
	ctx->cut_names++;
	rc = store_batch_frame(ctx->batch, &c, id);
out:
	free(b[0]);
	free(b[1]);
	free(b[2]);
	return rc;
}

int import_path(struct import_ctx *ctx, const struct store_frame *frames, size_t n, uint32_t *node)
{
	uint32_t parent = STORE_ROOT_NODE;
	size_t from = 0, bytes = 0;

	for (size_t i = 0; i < n; i++)
		bytes += import_stored_len(frames[i].name_len);
	if (n > IMPORT_MAX_DEPTH || bytes > IMPORT_MAX_STACK_BYTES) {
		/* Keep the innermost frames that fit beside the marker. */
		const size_t mark = sizeof(IMPORT_TRUNCATED) - 1;
		size_t kept = 0;
		bytes = mark;
		from = n;
		while (from > 0 && kept + 1 < IMPORT_MAX_DEPTH &&
		       bytes + import_stored_len(frames[from - 1].name_len) <=
		               IMPORT_MAX_STACK_BYTES) {
			from--;
			kept++;
			bytes += import_stored_len(frames[from].name_len);
		}
		const struct store_frame t = {
		        .name = IMPORT_TRUNCATED,
		        .name_len = mark,
		        .kind = STORE_FRAME_UNKNOWN,
		};
		uint32_t frame;
		int rc = store_batch_frame(ctx->batch, &t, &frame);
		if (rc < 0)
			return rc;
		rc = store_batch_node(ctx->batch, parent, frame, &parent);
		if (rc < 0)
			return rc;
		ctx->cut_stacks++;
	}
	for (size_t i = from; i < n; i++) {
		uint32_t frame;
		int rc = intern_frame(ctx, &frames[i], &frame);
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

bool import_text_start(const uint8_t *buf, size_t len)
{
	/* Text formats hold no control bytes other than tab, CR and LF. */
	size_t i = 0;
	while (i < len && (buf[i] == '\n' || buf[i] == '\r'))
		i++;
	for (size_t j = i; j < len && j < i + 4096 && buf[j] != '\n'; j++) {
		uint8_t c = buf[j];
		if (c < 0x20 && c != '\t' && c != '\r')
			return false;
	}
	return true;
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

int import_fail_at(struct import_ctx *ctx, uint64_t off, const char *fmt, ...)
{
	const char *path = (!ctx->path || strcmp(ctx->path, "-") == 0) ? "<stdin>" : ctx->path;
	int n = snprintf(ctx->err, sizeof(ctx->err), "%s: offset %llu: ", path,
	                 (unsigned long long)off);

	if (n < 0 || (size_t)n >= sizeof(ctx->err))
		return -EINVAL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->err + n, sizeof(ctx->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int import_read_all(struct import_ctx *ctx, size_t max, uint8_t **out, size_t *len)
{
	size_t plen = ctx->prefix ? ctx->prefix_len : 0;
	size_t cap = plen + (256u << 10), n = plen;
	uint8_t *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	if (plen)
		memcpy(buf, ctx->prefix, plen);
	for (;;) {
		if (n > max) {
			free(buf);
			return import_fail(
			        ctx, 0, "input is larger than %zu MiB; expected a smaller profile",
			        max >> 20);
		}
		if (cap - n < (64u << 10)) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(ctx->fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			import_fail(ctx, 0, "read error: %s", strerror(e));
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	ctx->bytes = n;
	return 0;
}

static bool scan_hex64(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	const char *start = s;
	for (; s < end; s++) {
		int d = (*s >= '0' && *s <= '9')   ? *s - '0'
		        : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10
		        : (*s >= 'A' && *s <= 'F') ? *s - 'A' + 10
		                                   : -1;
		if (d < 0)
			break;
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	if (s == start)
		return false;
	*p = s;
	*v = x;
	return true;
}

static void skip_blank(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

int import_maps_line(struct import_maps *maps, const char *l, size_t n)
{
	const char *p = l, *end = l + n;
	uint64_t start, lim, pgoff = 0, x;

	while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	skip_blank(&p, end);
	if (!scan_hex64(&p, end, &start) || p == end || *p != '-')
		return 0;
	p++;
	if (!scan_hex64(&p, end, &lim) || lim <= start)
		return 0;
	skip_blank(&p, end);
	/* "perms offset dev inode" when the permissions column is there */
	const char *perms = p;
	while (p < end && strchr("rwxps-", *p))
		p++;
	if (p > perms && p < end && (*p == ' ' || *p == '\t')) {
		if (!memchr(perms, 'x', (size_t)(p - perms)))
			return 0;
		skip_blank(&p, end);
		if (!scan_hex64(&p, end, &pgoff))
			return 0;
		skip_blank(&p, end);
		if (!scan_hex64(&p, end, &x) || p == end || *p != ':')
			return 0;
		p++;
		if (!scan_hex64(&p, end, &x))
			return 0;
		skip_blank(&p, end);
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		skip_blank(&p, end);
	} else {
		p = perms;
	}
	if (p == end || (*p != '/' && *p != '['))
		return 0;
	size_t plen = (size_t)(end - p);
	/* "(deleted)" and gperftools' later columns are not part of it */
	const char *sp = memchr(p, ' ', plen);
	if (sp && *p == '/')
		plen = (size_t)(sp - p);
	if (maps->n == maps->cap) {
		size_t ncap = maps->cap ? maps->cap * 2 : 16;
		struct import_map *nm = realloc(maps->m, ncap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		maps->m = nm;
		maps->cap = ncap;
	}
	char *path = strndup(p, plen), *bracket = NULL;
	const char *b = path ? strrchr(path, '/') : NULL;
	if (!path || asprintf(&bracket, "[%s]", b ? b + 1 : path) < 0) {
		free(path);
		return -ENOMEM;
	}
	maps->m[maps->n++] = (struct import_map){start, lim, pgoff, path, bracket};
	return 1;
}

const struct import_map *import_maps_find(const struct import_maps *maps, uint64_t addr)
{
	/* Later lines win, as a later mapping replaces an earlier one. */
	for (size_t i = maps->n; i-- > 0;)
		if (addr >= maps->m[i].start && addr < maps->m[i].end)
			return &maps->m[i];
	return NULL;
}

void import_maps_free(struct import_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		free(maps->m[i].path);
		free(maps->m[i].bracket);
	}
	free(maps->m);
	memset(maps, 0, sizeof(*maps));
}

int import_addr_frames(struct import_ctx *ctx, const struct import_maps *maps, uint32_t pid,
                       uint64_t addr, bool caller, struct store_frame *f, size_t room)
{
	static const char unknown[] = "[unknown]";

	if (ctx->sym)
		return ctx->sym->user(ctx->sym->ctx, pid, addr, caller, f, room);
	const struct import_map *m =
	        maps ? import_maps_find(maps, caller && addr ? addr - 1 : addr) : NULL;
	memset(f, 0, sizeof(*f));
	f->kind = STORE_FRAME_UNKNOWN;
	f->name = m ? m->bracket : unknown;
	f->name_len = strlen(f->name);
	if (m) {
		f->module = m->path;
		f->module_len = strlen(m->path);
	}
	return 1;
}
