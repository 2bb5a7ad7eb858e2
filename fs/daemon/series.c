/*
 * series.c — the series list as the view names it (fs.series, sorted by
 * binary, version and event): the series by id, each version's primary
 * series, the entries of a binary directory ("<version>" and
 * "<version>@<event>"), binaries' ranges, and which series reach into a
 * time window.  Reads the list only; refresh.c installs it.  Call with
 * fs.lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "daemon-internal.h"

const struct store_series *series_by_id_locked(uint32_t id)
{
	if (id >= fs.by_id_len || !fs.by_id[id])
		return NULL;
	return &fs.series[fs.by_id[id] - 1];
}

/* The series of version A to compare with series B: A's series of B's
 * event, else A's primary series. */
const struct store_series *series_diff_base_locked(const struct store_series *b,
                                                   const char *version_a)
{
	const struct store_series *primary = NULL;

	for (size_t i = 0; i < fs.nseries; i++) {
		const struct store_series *s = &fs.series[i];
		if (strcmp(s->binary, b->binary) != 0 || strcmp(s->version, version_a) != 0)
			continue;
		if (strcmp(s->event, b->event) == 0)
			return s;
		if (fs.primary[i])
			primary = s;
	}
	return primary;
}

/* The series to show in /<binary>/<version>/: cpu-clock if the version
 * has it, else the event that the most input bytes were imported into
 * (the importers count a pprof or legacy profile's bytes for its default
 * sample type, so that is the one shown, as pprof shows it), else the
 * event with the most samples.  [lo, hi) are the series of that binary
 * and version (sorted by event). */
size_t series_primary(const struct store_series *list, size_t lo, size_t hi)
{
	size_t best = lo;

	for (size_t i = lo; i < hi; i++)
		if (strcmp(list[i].event, "cpu-clock") == 0)
			return i;
	for (size_t i = lo; i < hi; i++) {
		const struct store_series *a = &list[i], *b = &list[best];
		if (a->input_bytes > b->input_bytes ||
		    (a->input_bytes == b->input_bytes && a->samples > b->samples))
			best = i;
	}
	return best;
}

/* Calls fn for every entry of the binary whose series are list[lo, hi):
 * "<version>" (the primary series, alias) and, for versions with several
 * events, "<version>@<event>".  Stops at fn's first non-zero return. */
int series_each_version(const struct store_series *list, size_t lo, size_t hi, version_fn fn,
                        void *ctx)
{
	int r;

	for (size_t i = lo; i < hi;) {
		const char *v = list[i].version;
		size_t j = i;
		while (j < hi && strcmp(list[j].version, v) == 0)
			j++;
		char vesc[VIEW_NAME_MAX + 1];
		size_t vl = view_escape(v, strlen(v), VIEW_ESCAPE_AT, vesc);
		r = fn(ctx, vesc, vl, list[series_primary(list, i, j)].id, true);
		if (r)
			return r;
		for (size_t k = i; j - i > 1 && k < j; k++) {
			char eesc[VIEW_NAME_MAX + 1], both[2 * VIEW_NAME_MAX + 2];
			const char *e = list[k].event;
			size_t el = view_escape(e, strlen(e), 0, eesc);
			if (vl + 1 + el > VIEW_NAME_MAX)
				continue; /* cannot be named; skip */
			snprintf(both, sizeof(both), "%s@%s", vesc, eesc);
			r = fn(ctx, both, vl + 1 + el, list[k].id, false);
			if (r)
				return r;
		}
		i = j;
	}
	return 0;
}

int series_find_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias)
{
	struct find_version *fv = ctx;

	if (len != fv->len || memcmp(name, fv->name, len) != 0)
		return 0;
	fv->series_id = series_id;
	fv->alias = alias;
	return 1;
}

/* The range of `list` with binary `b` starting at or after `from`. */
size_t series_binary_end(const struct store_series *list, size_t n, size_t lo)
{
	size_t hi = lo;

	while (hi < n && strcmp(list[hi].binary, list[lo].binary) == 0)
		hi++;
	return hi;
}

/* The binary's series range now. */
void series_binary_range(const char *binary, size_t *lo, size_t *hi)
{
	*lo = *hi = 0;
	for (size_t i = 0; i < fs.nseries; i = series_binary_end(fs.series, fs.nseries, i))
		if (strcmp(fs.series[i].binary, binary) == 0) {
			*lo = i;
			*hi = series_binary_end(fs.series, fs.nseries, i);
			return;
		}
}

/* The primary series of a binary's version. */
const struct store_series *series_primary_of(const char *binary, const char *version)
{
	for (size_t i = 0; i < fs.nseries; i++)
		if (fs.primary[i] && strcmp(fs.series[i].binary, binary) == 0 &&
		    strcmp(fs.series[i].version, version) == 0)
			return &fs.series[i];
	return NULL;
}

/* May series `s` have counts in [from, to)?  Its first and last buckets
 * say: a window takes the buckets that overlap it.  (A series with a gap
 * over the whole window is listed, with nothing in it.) */
bool series_in_window(const struct store_series *s, int64_t from, int64_t to)
{
	int64_t bs = store_bucket_seconds(fs.store);

	if (to <= from || s->samples == 0)
		return false;
	int64_t first = s->first_seen / bs * bs - (s->first_seen % bs < 0 ? bs : 0);
	int64_t last = s->last_seen / bs * bs - (s->last_seen % bs < 0 ? bs : 0);
	return first < to && last + bs > from;
}

int series_collect_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id,
                              bool alias)
{
	struct version_list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct find_version *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		char(*nm)[VIEW_NAME_MAX + 1] = realloc(l->names, cap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		l->names = nm;
		l->cap = cap;
	}
	memcpy(l->names[l->n], name, len);
	l->names[l->n][len] = '\0';
	l->v[l->n] = (struct find_version){.series_id = series_id, .alias = alias};
	l->n++;
	return 0;
}
