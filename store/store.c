/*
 * store.c — store.h's functions, dispatched to the backend that opened
 * the store (see backend.h).  What both backends share and that needs no
 * backend (the default location, freeing a series list) lives here too.
 */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int store_open(const char *where, int flags, struct store **out, char *err, size_t errlen)
{
	*out = NULL;
	return embedded_open(where, flags, out, err, errlen);
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

int store_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id)
{
	return b->store->ops->batch_node(b, parent, frame, id);
}

int store_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                    uint64_t samples, uint64_t weight)
{
	return b->store->ops->batch_add(b, series, when, node, samples, weight);
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

uint64_t store_sequence(const struct store *s)
{
	return s->ops->sequence(s);
}

int store_series_list(struct store *s, struct store_series **out, size_t *n)
{
	return s->ops->series_list(s, out, n);
}

void store_series_free(struct store_series *list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++) {
		free(list[i].binary);
		free(list[i].version);
		free(list[i].event);
		free(list[i].unit);
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
