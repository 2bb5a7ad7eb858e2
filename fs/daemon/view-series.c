/*
 * view-series.c — the series list as the view names it (fs.series): the view
 * series made from the store's list, one per (view, binary, version,
 * event), where view 0 sums every host and label set and view v > 0 is
 * one host's (/@host/<name>/) or one label value's (/@cgroup/<value>/,
 * /@container/<value>/, /@thread/<value>/, /@span/<value>/); series of
 * event STORE_EVENT_SPANS are span records, not samples, and are left
 * out of it (fs.raw keeps them: series_spans_locked() finds a scope's);
 * the series by id, its members (the store's series it
 * sums), each version's primary series, the entries of a binary directory
 * ("<version>" and "<version>@<event>"), binaries' ranges, and which
 * series reach into a time window.  refresh.c installs the list.  Call
 * with fs.lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "daemon-internal.h"

/* ---- stable ids ------------------------------------------------------------ */

static uint64_t key_hash(const char *k, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
	return h;
}

/* The id of key[0..len) in m, 0 when it has none. */
static uint32_t idmap_find(const struct idmap *m, const char *key, size_t len)
{
	if (!m->mask)
		return 0;
	for (size_t pos = key_hash(key, len) & m->mask; m->slots[pos]; pos = (pos + 1) & m->mask) {
		uint32_t i = m->slots[pos] - 1;
		if (m->lens[i] == len && memcmp(m->keys[i], key, len) == 0)
			return i + 1;
	}
	return 0;
}

static int idmap_rehash(struct idmap *m, size_t slots)
{
	uint32_t *t = calloc(slots, sizeof(*t));

	if (!t)
		return -ENOMEM;
	free(m->slots);
	m->slots = t;
	m->mask = slots - 1;
	for (uint32_t i = 0; i < m->n; i++) {
		size_t pos = key_hash(m->keys[i], m->lens[i]) & m->mask;
		while (m->slots[pos])
			pos = (pos + 1) & m->mask;
		m->slots[pos] = i + 1;
	}
	return 0;
}

/* The id of key[0..len) in m, given one (the next) if it has none. */
static int idmap_get(struct idmap *m, const char *key, size_t len, uint32_t *id)
{
	*id = idmap_find(m, key, len);
	if (*id)
		return 0;
	if (m->n >= UINT32_MAX / 4)
		return -ENOSPC;
	if ((size_t)(m->n + 1) * 2 > m->mask + 1) {
		int r = idmap_rehash(m, m->mask ? (m->mask + 1) * 2 : 64);
		if (r < 0)
			return r;
	}
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 32;
		char **k = realloc(m->keys, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		m->keys = k;
		size_t *l = realloc(m->lens, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		m->lens = l;
		m->cap = cap;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, len);
	copy[len] = '\0';
	m->keys[m->n] = copy;
	m->lens[m->n] = len;
	size_t pos = key_hash(key, len) & m->mask;
	while (m->slots[pos])
		pos = (pos + 1) & m->mask;
	m->slots[pos] = ++m->n;
	*id = m->n;
	return 0;
}

static void idmap_free(struct idmap *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->lens);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- views ------------------------------------------------------------------ */

/* The kinds of view past view 0, by what selects their series: the host,
 * or the value of one label (view_kind_names[k] is both the label's key
 * and the directory's name after '@').  A view's key in fs.viewid is
 * "<kind name>=<value>", and a view series of view v > 0 holds that key
 * in its `host` field (view 0's hold NULL). */
const char *const view_kind_names[VIEW_KINDS] = {
        [VIEW_KIND_HOST] = "host",
        [VIEW_KIND_CGROUP] = STORE_LABEL_CGROUP,
        [VIEW_KIND_CONTAINER] = STORE_LABEL_CONTAINER,
        [VIEW_KIND_THREAD] = STORE_LABEL_THREAD,
        [VIEW_KIND_SPAN] = VIEW_LABEL_SPAN,
};

/* The view `s` (of fs.series, or of a list it replaced) belongs to. */
uint32_t series_view_locked(const struct store_series *s)
{
	return s->host ? idmap_find(&fs.viewid, s->host, strlen(s->host)) : 0;
}

/* The kind of view v > 0, or -1 for view 0 and past the views. */
int series_view_kind(uint32_t view)
{
	if (!view || view > fs.viewid.n)
		return -1;
	const char *k = fs.viewid.keys[view - 1];
	const char *eq = strchr(k, '=');
	for (int kind = 0; eq && kind < VIEW_KINDS; kind++)
		if (strlen(view_kind_names[kind]) == (size_t)(eq - k) &&
		    memcmp(view_kind_names[kind], k, (size_t)(eq - k)) == 0)
			return kind;
	return -1;
}

/* The host or label value that selects view v > 0 (NULL for view 0 and
 * past the views). */
const char *series_view_value(uint32_t view)
{
	if (!view || view > fs.viewid.n)
		return NULL;
	const char *eq = strchr(fs.viewid.keys[view - 1], '=');
	return eq ? eq + 1 : NULL;
}

/* The range of fs.series of view `view`: empty for a view with no series
 * now. */
void series_view_range(uint32_t view, size_t *lo, size_t *hi)
{
	*lo = *hi = 0;
	if (fs.view_lo && view <= fs.viewid.n) {
		*lo = fs.view_lo[view];
		*hi = fs.view_hi[view];
	}
}

/* Whether some series of the store now carries the label of view kind
 * `kind` (always for hosts): its @<kind> directory exists. */
bool series_kind_present(int kind)
{
	for (uint32_t v = 1; v <= fs.viewid.n; v++) {
		size_t lo, hi;
		series_view_range(v, &lo, &hi);
		if (lo < hi && series_view_kind(v) == kind)
			return true;
	}
	return false;
}

/* The store's series that series `id` sums: borrowed from fs.mraw. */
void series_members_locked(uint32_t id, const struct store_series **m, size_t *n)
{
	const struct store_series *s = series_by_id_locked(id);
	const struct members *mb = s ? &fs.members[s - fs.series] : NULL;

	*m = mb ? &fs.mraw[mb->lo] : NULL;
	*n = mb ? mb->hi - mb->lo : 0;
}

/* Sets e to the view series of raw[lo, hi) (one key) in `view`: an id
 * from fs.ids, its own strings, the members' totals summed (saturating:
 * they only tell changes and primaries apart; trees sum with checks). */
static int view_entry(const struct store_series *raw, size_t lo, size_t hi, uint32_t view,
                      struct store_series *e)
{
	const struct store_series *f = &raw[lo];
	char vkey[16];
	int vl = snprintf(vkey, sizeof(vkey), "%u", view);
	size_t lb = strlen(f->binary), lv = strlen(f->version), le = strlen(f->event);
	size_t klen = (size_t)vl + 1 + lb + 1 + lv + 1 + le;
	char *key = malloc(klen + 1);
	int r;

	memset(e, 0, sizeof(*e));
	if (!key)
		return -ENOMEM;
	snprintf(key, klen + 1, "%s/%s%c%s%c%s", vkey, f->binary, 0, f->version, 0, f->event);
	r = idmap_get(&fs.ids, key, klen, &e->id);
	free(key);
	if (r < 0)
		return r;
	e->host = view ? strdup(fs.viewid.keys[view - 1]) : NULL;
	e->binary = strdup(f->binary);
	e->version = strdup(f->version);
	e->event = strdup(f->event);
	e->unit = strdup(f->unit);
	e->labels = strdup("");
	if ((view && !e->host) || !e->binary || !e->version || !e->event || !e->unit || !e->labels)
		return -ENOMEM;
	e->first_seen = e->first_us = INT64_MAX;
	e->last_seen = e->last_us = INT64_MIN;
	for (size_t i = lo; i < hi; i++) {
		const struct store_series *m = &raw[i];
		if (__builtin_add_overflow(e->samples, m->samples, &e->samples))
			e->samples = UINT64_MAX;
		if (__builtin_add_overflow(e->weight, m->weight, &e->weight))
			e->weight = UINT64_MAX;
		if (__builtin_add_overflow(e->input_bytes, m->input_bytes, &e->input_bytes))
			e->input_bytes = UINT64_MAX;
		if (m->first_seen < e->first_seen)
			e->first_seen = m->first_seen;
		if (m->last_seen > e->last_seen)
			e->last_seen = m->last_seen;
		if (__builtin_add_overflow(e->recent_samples, m->recent_samples,
		                           &e->recent_samples))
			e->recent_samples = UINT64_MAX;
		if (m->samples && m->first_us < e->first_us)
			e->first_us = m->first_us;
		if (m->samples && m->last_us > e->last_us)
			e->last_us = m->last_us;
	}
	return 0;
}

static bool same_key(const struct store_series *a, const struct store_series *b)
{
	return strcmp(a->binary, b->binary) == 0 && strcmp(a->version, b->version) == 0 &&
	       strcmp(a->event, b->event) == 0;
}

struct by_view {
	uint32_t view;
	size_t i; /* index in raw */
};

static int cmp_by_view(const void *a, const void *b)
{
	const struct by_view *x = a, *y = b;

	if (x->view != y->view)
		return x->view < y->view ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The view of kind `kind` whose value is value[0..len), in *view. */
static int view_of(int kind, const char *value, size_t len, uint32_t *view)
{
	size_t kl = strlen(view_kind_names[kind]);
	char *key = malloc(kl + 1 + len + 1);
	int r;

	if (!key)
		return -ENOMEM;
	memcpy(key, view_kind_names[kind], kl);
	key[kl] = '=';
	memcpy(key + kl + 1, value, len);
	r = idmap_get(&fs.viewid, key, kl + 1 + len, view);
	free(key);
	return r;
}

/* Makes the view series of the store's list `raw` (sorted by binary,
 * version, event, host and labels): view 0 first, one series per
 * (binary, version, event) summing its hosts and label sets, then each
 * other view's own in view order, one per (binary, version, event) of
 * the raw series it selects: a host's, and, for each label kind some
 * series carries, the series with one value of it (VIEW_LABEL_NONE for
 * those without the label, so a kind's values partition the series).
 * *out (free with store_series_free), *mraw (shallow copies of raw's
 * entries, each view series' members side by side: free() only),
 * *members (ranges of *mraw), *view_lo and *view_hi (one per view,
 * 0..fs.viewid.n, which this may grow) are the caller's. */
int series_make_views_locked(struct store_series *all, size_t nall, struct store_series **out,
                             size_t *n, struct store_series **mraw_out, struct members **members,
                             size_t **view_lo, size_t **view_hi)
{
	bool present[VIEW_KINDS] = {[VIEW_KIND_HOST] = true};
	size_t nkinds = 1, nraw = 0;
	/* The samples' series: span records (series_is_spans) are no view's. */
	struct store_series *raw = malloc((nall ? nall : 1) * sizeof(*raw));

	if (!raw)
		return -ENOMEM;
	for (size_t i = 0; i < nall; i++)
		if (!series_is_spans(&all[i]))
			raw[nraw++] = all[i];

	for (int k = 1; k < VIEW_KINDS; k++) {
		for (size_t i = 0; i < nraw && !present[k]; i++) {
			size_t len;
			present[k] = store_labels_get(raw[i].labels, view_kind_names[k], &len);
		}
		nkinds += present[k];
	}
	size_t npairs = nraw * nkinds, cap = nraw + npairs;
	struct by_view *bv = calloc(npairs ? npairs : 1, sizeof(*bv));
	struct store_series *list = calloc(cap + 1, sizeof(*list));
	struct store_series *mraw = calloc(cap + 1, sizeof(*mraw));
	struct members *mb = calloc(cap + 1, sizeof(*mb));
	size_t len = 0, nm = 0, np = 0, *lo = NULL, *hi = NULL;
	int r = -ENOMEM;

	if (!bv || !list || !mraw || !mb)
		goto fail;
	for (size_t i = 0; i < nraw; i++) {
		r = view_of(VIEW_KIND_HOST, raw[i].host, strlen(raw[i].host), &bv[np].view);
		if (r < 0)
			goto fail;
		bv[np++].i = i;
		for (int k = 1; k < VIEW_KINDS; k++) {
			if (!present[k])
				continue;
			size_t vl;
			const char *v = store_labels_get(raw[i].labels, view_kind_names[k], &vl);
			if (!v)
				v = VIEW_LABEL_NONE, vl = strlen(VIEW_LABEL_NONE);
			r = view_of(k, v, vl, &bv[np].view);
			if (r < 0)
				goto fail;
			bv[np++].i = i;
		}
	}
	r = -ENOMEM;
	lo = calloc((size_t)fs.viewid.n + 1, sizeof(*lo));
	hi = calloc((size_t)fs.viewid.n + 1, sizeof(*hi));
	if (!lo || !hi)
		goto fail;
	for (size_t i = 0; i < nraw;) {
		size_t j = i + 1;
		while (j < nraw && same_key(&raw[i], &raw[j]))
			j++;
		mb[len] = (struct members){nm, nm + (j - i)};
		for (size_t k = i; k < j; k++)
			mraw[nm++] = raw[k];
		r = view_entry(mraw, mb[len].lo, mb[len].hi, 0, &list[len]);
		len++;
		if (r < 0)
			goto fail;
		i = j;
	}
	hi[0] = len;
	qsort(bv, np, sizeof(*bv), cmp_by_view);
	for (size_t k = 0; k < np;) {
		uint32_t v = bv[k].view;
		size_t e = k + 1;
		while (e < np && bv[e].view == v && same_key(&raw[bv[k].i], &raw[bv[e].i]))
			e++;
		if (k == 0 || bv[k - 1].view != v)
			lo[v] = len;
		mb[len] = (struct members){nm, nm + (e - k)};
		for (size_t x = k; x < e; x++)
			mraw[nm++] = raw[bv[x].i];
		r = view_entry(mraw, mb[len].lo, mb[len].hi, v, &list[len]);
		len++;
		if (r < 0)
			goto fail;
		hi[v] = len;
		k = e;
	}
	free(bv);
	free(raw);
	*out = list;
	*n = len;
	*mraw_out = mraw;
	*members = mb;
	*view_lo = lo;
	*view_hi = hi;
	return 0;
fail:
	if (list)
		store_series_free(list, len + 1);
	free(raw);
	free(bv);
	free(mraw);
	free(mb);
	free(lo);
	free(hi);
	return r;
}

/* Frees the series lists (not the ids, which outlive them). */
void series_free_locked(void)
{
	store_series_free(fs.series, fs.nseries);
	store_series_free(fs.raw, fs.nraw);
	free(fs.mraw);
	free(fs.members);
	free(fs.view_lo);
	free(fs.view_hi);
	fs.series = fs.raw = fs.mraw = NULL;
	fs.nseries = fs.nraw = fs.nraw_spans = 0;
	fs.members = NULL;
	fs.view_lo = fs.view_hi = NULL;
}

void series_forget_ids_locked(void)
{
	idmap_free(&fs.ids);
	idmap_free(&fs.viewid);
}

/* ---- naming ----------------------------------------------------------------- */

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
	size_t lo, hi;

	series_view_range(series_view_locked(b), &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
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

/* Where the run of `list` from `lo` with its binary and view ends. */
size_t series_binary_end(const struct store_series *list, size_t n, size_t lo)
{
	size_t hi = lo;
	const char *h = list[lo].host;

	while (hi < n && strcmp(list[hi].binary, list[lo].binary) == 0 && !list[hi].host == !h &&
	       (!h || strcmp(list[hi].host, h) == 0))
		hi++;
	return hi;
}

/* The binary's series range in a view now. */
void series_binary_range(uint32_t view, const char *binary, size_t *lo, size_t *hi)
{
	size_t vlo, vhi;

	series_view_range(view, &vlo, &vhi);
	*lo = *hi = 0;
	for (size_t i = vlo; i < vhi; i = series_binary_end(fs.series, vhi, i))
		if (strcmp(fs.series[i].binary, binary) == 0) {
			*lo = i;
			*hi = series_binary_end(fs.series, vhi, i);
			return;
		}
}

/* The primary series of a binary's version in a view. */
const struct store_series *series_primary_of(uint32_t view, const char *binary, const char *version)
{
	size_t lo, hi;

	series_view_range(view, &lo, &hi);
	for (size_t i = lo; i < hi; i++)
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
	return first * 1000000 < to && (last + bs) * 1000000 > from;
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

/* ---- span records ----------------------------------------------------------- */

/* Whether store series `s` holds span records (store.h, "spans"), which
 * no event listing, tree or sum of the view shows: only the `spans` and
 * `trace.json` files read them. */
bool series_is_spans(const struct store_series *s)
{
	return strcmp(s->event, STORE_EVENT_SPANS) == 0;
}

/* Whether store series `s` belongs to view `view` (0: every one). */
static bool raw_in_view(const struct store_series *s, uint32_t view)
{
	int kind = series_view_kind(view);
	const char *want = series_view_value(view);
	const char *v;
	size_t len;

	if (!view)
		return true;
	if (kind < 0 || !want)
		return false;
	if (kind == VIEW_KIND_HOST)
		return strcmp(s->host, want) == 0;
	v = store_labels_get(s->labels, view_kind_names[kind], &len);
	if (!v)
		v = VIEW_LABEL_NONE, len = strlen(VIEW_LABEL_NONE);
	return strlen(want) == len && memcmp(want, v, len) == 0;
}

/* The store's span-record series of a scope: of view `view`, of binary
 * `binary` and version `version` (NULL: any), with samples.  *out is a
 * malloc'd array of shallow copies of fs.raw's entries (free() it only;
 * valid while fs.raw is), NULL when there are none; out NULL: only *n. */
int series_spans_locked(uint32_t view, const char *binary, const char *version,
                        struct store_series **out, size_t *n)
{
	size_t k = 0;

	if (out)
		*out = NULL;
	*n = 0;
	for (size_t i = 0; fs.nraw_spans && i < fs.nraw; i++) {
		const struct store_series *s = &fs.raw[i];
		if (!series_is_spans(s) || !s->samples || (binary && strcmp(s->binary, binary)) ||
		    (version && strcmp(s->version, version)) || !raw_in_view(s, view))
			continue;
		if (out && !*out && !(*out = malloc((fs.nraw - i) * sizeof(**out))))
			return -ENOMEM;
		if (out)
			(*out)[k] = *s;
		k++;
	}
	*n = k;
	return 0;
}
