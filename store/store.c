/*
 * store.c — store.h's functions, dispatched to the backend that opened
 * the store (see store-internal.h).  What both backends share and that needs no
 * backend (the default location, freeing a series list) lives here too.
 */
#include "store-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *store_default_dir(void)
{
	const char *e = getenv("FLAMEFS_STORE");
	char *out = NULL;

	if (e && *e)
		return strdup(e);
	e = getenv("XDG_DATA_HOME");
	if (e && *e) {
		if (asprintf(&out, "%s/flamefs", e) < 0)
			return NULL;
		return out;
	}
	e = getenv("HOME");
	if (e && *e) {
		if (asprintf(&out, "%s/.local/share/flamefs", e) < 0)
			return NULL;
		return out;
	}
	return NULL;
}

bool store_is_database(const char *where)
{
	const char *p = where + strspn(where, " \t");
	size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyz_");

	if (strncmp(where, "postgresql:", 11) == 0 || strncmp(where, "postgres:", 9) == 0)
		return true;
	/* libpq's keyword/value form, "host=db dbname=fleet ...": a first
	 * word of lower-case letters and '_' then '='.  A directory of such
	 * a name is written "./host=x". */
	p += k;
	p += strspn(p, " \t");
	return k > 0 && *p == '=';
}

/* A host name: 1 to 255 bytes, no '/', no control character. */
static bool host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 255)
		return false;
	for (const unsigned char *p = (const unsigned char *)h; *p; p++)
		if (*p == '/' || *p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* The machine's name, or "localhost" when it has none worth keeping. */
static char *machine_host(void)
{
	char name[256] = "";

	if (gethostname(name, sizeof(name) - 1) < 0 || !host_ok(name))
		return strdup("localhost");
	return strdup(name);
}

int store_open(const char *where, int flags, struct store **out, char *err, size_t errlen)
{
	int r;

	*out = NULL;
	if (store_is_database(where))
		r = central_open(where, flags, out, err, errlen);
	else
		r = embedded_open(where, flags, out, err, errlen);
	if (r < 0)
		return r;
	(*out)->host = machine_host();
	if (!(*out)->host) {
		store_close(*out);
		*out = NULL;
		if (errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void (*log_fn)(void *ctx, const char *line);
static void *log_ctx;

void store_log_to(void (*fn)(void *ctx, const char *line), void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void store_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_fn(log_ctx, line);
}

const char *store_where(const struct store *s)
{
	return s->where;
}

const char *store_host(const struct store *s)
{
	return s->host;
}

int store_set_host(struct store *s, const char *host)
{
	char *h;

	if (!host_ok(host))
		return -EINVAL;
	h = strdup(host);
	if (!h)
		return -ENOMEM;
	free(s->host);
	s->host = h;
	return 0;
}

bool store_host_valid(const char *host)
{
	return host_ok(host);
}

const char *store_id(const struct store *s)
{
	return s->ops->id(s);
}

void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

const char *store_errmsg(const struct store *s)
{
	return s->ops->errmsg(s);
}

const char *store_notice(const struct store *s)
{
	return s->ops->notice(s);
}

uint32_t store_bucket_seconds(const struct store *s)
{
	return s->ops->bucket_seconds(s);
}

struct store_batch *store_batch_new(struct store *s)
{
	return s->ops->batch_new(s);
}

void store_batch_free(struct store_batch *b)
{
	if (b)
		b->store->ops->batch_free(b);
}

int store_batch_series(struct store_batch *b, const struct store_series_key *k, uint32_t *id)
{
	return b->store->ops->batch_series(b, k, id);
}

int store_batch_frame(struct store_batch *b, const struct store_frame *f, uint32_t *id)
{
	return b->store->ops->batch_frame(b, f, id);
}

static bool bytes_same(const void *a, size_t al, const void *b, size_t bl)
{
	if (!a)
		al = 0;
	if (!b)
		bl = 0;
	return al == bl && (!al || !memcmp(a, b, al));
}

static int bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : al < bl ? -1 : al > bl;
}

int store_frame_place_cmp(const struct store_frame *a, const struct store_frame *b)
{
	int c = bytes_cmp(a->module, a->module_len, b->module, b->module_len);

	if (!c)
		c = bytes_cmp(a->build_id, a->build_id_len, b->build_id, b->build_id_len);
	return c ? c : a->offset < b->offset ? -1 : a->offset > b->offset;
}

int store_rename_check(uint32_t frame, const struct store_frame *old,
                       const struct store_frame *named, char *err, size_t errlen)
{
	if (!old) {
		snprintf(err, errlen, "frame %u: not a committed frame", frame);
		return -EINVAL;
	}
	if (old->kind != STORE_FRAME_UNKNOWN) {
		snprintf(err, errlen, "frame %u (%.*s): it has a name already", frame,
		         (int)old->name_len, old->name ? old->name : "");
		return -EINVAL;
	}
	if (!(named->kind <= STORE_FRAME_SPAN && named->kind != STORE_FRAME_UNKNOWN &&
	      named->kind != STORE_FRAME_INLINE && !named->offset && named->name_len &&
	      named->name && (named->file || !named->file_len) &&
	      bytes_same(named->module, named->module_len, old->module, old->module_len) &&
	      bytes_same(named->build_id, named->build_id_len, old->build_id, old->build_id_len))) {
		snprintf(err, errlen,
		         "frame %u: invalid new name (a named kind, no offset, the frame's module)",
		         frame);
		return -EINVAL;
	}
	return 0;
}

int store_batch_frame_rename(struct store_batch *b, uint32_t frame, const struct store_frame *named)
{
	if (!b->store->ops->batch_frame_rename)
		return -EOPNOTSUPP;
	return b->store->ops->batch_frame_rename(b, frame, named);
}

int store_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id)
{
	return b->store->ops->batch_node(b, parent, frame, id);
}

int store_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                    uint64_t samples, uint64_t weight)
{
	return b->store->ops->batch_add(b, series, when, node, samples, weight);
}

int store_batch_sample(struct store_batch *b, uint32_t series, const struct store_sample *smp)
{
	if (!b->store->ops->batch_sample)
		return -EOPNOTSUPP;
	return b->store->ops->batch_sample(b, series, smp);
}

int store_batch_input_bytes(struct store_batch *b, uint32_t series, uint64_t bytes)
{
	return b->store->ops->batch_input_bytes(b, series, bytes);
}

int store_batch_commit(struct store_batch *b)
{
	return b->store->ops->batch_commit(b);
}

int store_refresh(struct store *s)
{
	return s->ops->refresh(s);
}

uint64_t store_renames(const struct store *s)
{
	return s->ops->renames ? s->ops->renames(s) : 0;
}

uint64_t store_sequence(const struct store *s)
{
	return s->ops->sequence(s);
}

int store_series_list(struct store *s, struct store_series **out, size_t *n)
{
	return s->ops->series_list(s, out, n);
}

int store_series_cmp(const void *a, const void *b)
{
	const struct store_series *x = a, *y = b;
	int c = strcmp(x->binary, y->binary);

	if (!c)
		c = strcmp(x->version, y->version);
	if (!c)
		c = strcmp(x->event, y->event);
	if (!c)
		c = strcmp(x->host, y->host);
	if (!c)
		c = strcmp(x->labels ? x->labels : "", y->labels ? y->labels : "");
	return c;
}

void store_series_free(struct store_series *list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++) {
		free(list[i].host);
		free(list[i].binary);
		free(list[i].version);
		free(list[i].event);
		free(list[i].unit);
		free(list[i].labels);
	}
	free(list);
}

uint32_t store_node_count(const struct store *s)
{
	return s->ops->node_count(s);
}

int store_node_get(const struct store *s, uint32_t node, uint32_t *parent, uint32_t *frame)
{
	return s->ops->node_get(s, node, parent, frame);
}

uint32_t store_frame_count(const struct store *s)
{
	return s->ops->frame_count(s);
}

int store_frame_get(const struct store *s, uint32_t frame, struct store_frame *f)
{
	return s->ops->frame_get(s, frame, f);
}

int store_series_counts(struct store *s, uint32_t series, int64_t from, int64_t to,
                        store_count_fn fn, void *ctx)
{
	return s->ops->series_counts(s, series, from, to, fn, ctx);
}

int store_series_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from, int64_t to)
{
	return s->ops->series_prefetch ? s->ops->series_prefetch(s, ids, n, from, to) : 0;
}

int store_series_samples(struct store *s, uint32_t series, int64_t from_us, int64_t to_us,
                         store_sample_fn fn, void *ctx)
{
	if (!s->ops->series_samples)
		return 0;
	return s->ops->series_samples(s, series, from_us, to_us, fn, ctx);
}

int store_samples_prefetch(struct store *s, const uint32_t *ids, size_t n, int64_t from_us,
                           int64_t to_us)
{
	return s->ops->samples_prefetch ? s->ops->samples_prefetch(s, ids, n, from_us, to_us) : 0;
}

int64_t store_keep_samples(const struct store *s)
{
	return s->ops->keep_samples ? s->ops->keep_samples(s) : 0;
}

int store_set_keep_samples(struct store *s, int64_t seconds)
{
	if (seconds < 0)
		return -EINVAL;
	return s->ops->set_keep_samples ? s->ops->set_keep_samples(s, seconds) : -EOPNOTSUPP;
}

int store_rollup(struct store *s, struct store_rollup_stats *st)
{
	if (!s->ops->rollup)
		return -EOPNOTSUPP;
	return s->ops->rollup(s, st);
}

int store_footprint(struct store *s, struct store_footprint *out)
{
	return s->ops->footprint(s, out);
}

int store_series_disk_bytes(struct store *s, uint32_t series, uint64_t *bytes)
{
	return s->ops->series_disk_bytes(s, series, bytes);
}

int store_compact(struct store *s)
{
	return s->ops->compact(s);
}

int store_prune(struct store *s, const struct store_prune_opts *o, struct store_prune_stats *st)
{
	return s->ops->prune(s, o, st);
}
