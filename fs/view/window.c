/*
 * window.c — time windows: parsing the durations and times that name
 * them (@last/DURATION, @range/FROM/TO, to the microsecond) and building
 * the tree of one.  The store counts samples per bucket (60 s by
 * default) and keeps the detail of recent samples (their moments); a
 * window takes each bucket wholly inside it from the counts and, for the
 * (at most two) buckets it cuts, the samples inside it by their moment
 * plus what of the bucket has no moment, taken whole and reported in the
 * tree's struct view_window, never silently.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build-internal.h"

const char *const view_last_durations[] = {"1m", "5m", "15m", "1h", "6h", "1d", "7d"};
const size_t view_last_duration_count =
        sizeof(view_last_durations) / sizeof(view_last_durations[0]);

#define MAX_SECONDS (INT64_C(1) << 40) /* about 35,000 years */

int view_parse_duration(const char *s, int64_t *seconds)
{
	int64_t sum = 0;

	if (!*s)
		return -EINVAL;
	while (*s) {
		int64_t v = 0, unit;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			v = v * 10 + (*s - '0');
			if (v > MAX_SECONDS)
				return -ERANGE;
		}
		switch (*s++) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		case 'w': unit = 7 * 86400; break;
		default: return -EINVAL;
		}
		if (v > MAX_SECONDS / unit || sum + v * unit > MAX_SECONDS)
			return -ERANGE;
		sum += v * unit;
	}
	if (sum < 1)
		return -EINVAL;
	*seconds = sum;
	return 0;
}

/* Reads exactly n digits. */
static int digits(const char **s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (**s < '0' || **s > '9')
			return -EINVAL;
		*v = *v * 10 + (**s - '0');
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Reads an optional fraction of a second (a '.' or ',' and 1 to 6
 * digits) into microseconds. */
static int fraction(const char **s, int64_t *us)
{
	int64_t scale = 100000;

	*us = 0;
	if (**s != '.' && **s != ',')
		return 0;
	(*s)++;
	if (**s < '0' || **s > '9')
		return -EINVAL;
	for (; **s >= '0' && **s <= '9'; (*s)++) {
		if (scale == 0)
			return -EINVAL; /* finer than a microsecond */
		*us += (**s - '0') * scale;
		scale /= 10;
	}
	return 0;
}

static int parse_iso(const char *s, int64_t *t)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h = 0, mi = 0, sec = 0;
	int64_t frac = 0;

	if (digits(&s, 4, &y) < 0 || *s++ != '-' || digits(&s, 2, &mo) < 0 || *s++ != '-' ||
	    digits(&s, 2, &d) < 0)
		return -EINVAL;
	if (*s == 'T' || *s == ' ') {
		s++;
		if (digits(&s, 2, &h) < 0 || *s++ != ':' || digits(&s, 2, &mi) < 0)
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &sec) < 0 || fraction(&s, &frac) < 0)
				return -EINVAL;
		}
	}
	if (strcmp(s, "Z") != 0 && strcmp(s, "+00:00") != 0 && strcmp(s, "") != 0)
		return -EINVAL;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
	    h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	*t = (days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) * 1000000 + frac;
	return 0;
}

int view_parse_time_us(const char *s, int64_t *us)
{
	size_t n = strspn(s, "0123456789");

	if (n > 0 && (s[n] == '\0' || s[n] == '.')) {
		const char *p = s + n;
		int64_t frac;
		if (n > 12 || fraction(&p, &frac) < 0 || *p)
			return -EINVAL;
		*us = strtoll(s, NULL, 10) * 1000000 + frac;
		return 0;
	}
	return parse_iso(s, us);
}

int view_parse_time(const char *s, int64_t *t)
{
	int64_t us;
	int r = view_parse_time_us(s, &us);

	if (r < 0)
		return r;
	if (us % 1000000 != 0)
		return -EINVAL; /* a fraction: view_parse_time_us() takes it */
	*t = us / 1000000;
	return 0;
}

/* Floor division by a positive d. */
size_t view_format_us(int64_t us, char out[40])
{
	int64_t sec = view_floor_div(us, 1000000), frac = us - sec * 1000000;
	int n = snprintf(out, 40, "%" PRId64, sec);

	if (frac) {
		n += snprintf(out + n, (size_t)(40 - n), ".%06" PRId64, frac);
		while (out[n - 1] == '0')
			out[--n] = '\0';
	}
	return (size_t)n;
}

size_t view_format_iso_us(int64_t us, char out[40])
{
	int64_t sec = view_floor_div(us, 1000000), frac = us - sec * 1000000;
	time_t tt = (time_t)sec;
	struct tm tm;
	size_t n;

	if (sec < STORE_WALL_CLOCK_MIN || !gmtime_r(&tt, &tm) ||
	    (n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm)) == 0)
		return (size_t)snprintf(out, 40, "-");
	if (frac) {
		n += (size_t)snprintf(out + n, 40 - n, ".%06" PRId64, frac);
		while (out[n - 1] == '0')
			out[--n] = '\0';
	}
	out[n++] = 'Z';
	out[n] = '\0';
	return n;
}

size_t view_format_time_us(int64_t us, char out[40])
{
	if (view_floor_div(us, 1000000) < STORE_WALL_CLOCK_MIN)
		return view_format_us(us, out);
	return view_format_iso_us(us, out);
}

void view_window_last(int64_t now, int64_t seconds, uint32_t bucket_seconds, int64_t *from,
                      int64_t *to)
{
	int64_t bs = bucket_seconds ? bucket_seconds : 1;
	int64_t start = now / bs * bs - (now % bs < 0 ? bs : 0);

	*to = start + bs;
	*from = *to - seconds;
}

/* ---- exact windows ---------------------------------------------------- */

/* What one series holds of one cut bucket, per store node: its counts,
 * the detail of its samples, and the detail inside the window.  Open
 * addressing on the node. */
struct cut_entry {
	uint32_t node, used;
	uint64_t count_samples, count_weight;
	uint64_t detail_samples, detail_weight;
	uint64_t in_samples, in_weight;
};

struct cut_map {
	struct cut_entry *e;
	size_t mask, n;
	int64_t from_us, to_us; /* the window's part of the bucket */
	uint32_t store_nodes;
	bool wanted; /* its detail is read */
	bool walked; /* some sample's detail came */
};

static int cut_grow(struct cut_map *m)
{
	size_t size = m->e ? (m->mask + 1) * 2 : 64;
	struct cut_entry *ne = calloc(size, sizeof(*ne));

	if (!ne)
		return -ENOMEM;
	for (size_t i = 0; m->e && i <= m->mask; i++) {
		if (!m->e[i].used)
			continue;
		size_t j = (m->e[i].node * 2654435761u) & (size - 1);
		while (ne[j].used)
			j = (j + 1) & (size - 1);
		ne[j] = m->e[i];
	}
	free(m->e);
	m->e = ne;
	m->mask = size - 1;
	return 0;
}

/* The entry of `node`, made if new (NULL: out of memory). */
static struct cut_entry *cut_get(struct cut_map *m, uint32_t node)
{
	if ((!m->e || (m->n + 1) * 2 > m->mask + 1) && cut_grow(m) < 0)
		return NULL;
	size_t j = (node * 2654435761u) & m->mask;
	while (m->e[j].used && m->e[j].node != node)
		j = (j + 1) & m->mask;
	if (!m->e[j].used) {
		m->e[j] = (struct cut_entry){.node = node, .used = 1};
		m->n++;
	}
	return &m->e[j];
}

static int cut_count(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	struct cut_entry *e = cut_get(ctx, node);

	(void)bucket_start;
	if (!e)
		return -ENOMEM;
	if (__builtin_add_overflow(e->count_samples, samples, &e->count_samples) ||
	    __builtin_add_overflow(e->count_weight, weight, &e->count_weight))
		return -EOVERFLOW;
	return 0;
}

static int cut_sample(void *ctx, const struct store_sample *smp)
{
	struct cut_map *m = ctx;
	struct cut_entry *e;

	m->walked = true;
	if (smp->node >= m->store_nodes)
		return 0; /* a stack newer than the build's dictionary */
	if (!(e = cut_get(m, smp->node)))
		return -ENOMEM;
	e->detail_samples++;
	if (__builtin_add_overflow(e->detail_weight, smp->weight, &e->detail_weight))
		return -EOVERFLOW;
	if (smp->time_us >= m->from_us && smp->time_us < m->to_us) {
		e->in_samples++;
		e->in_weight += smp->weight; /* at most detail_weight */
	}
	return 0;
}

/* A series' counts to add: grown as cut buckets are read. */
struct extra_list {
	struct build_count *v;
	size_t n, cap;
};

static int extra_push(struct extra_list *l, uint32_t node, uint64_t samples, uint64_t weight)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct build_count *nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = (struct build_count){node, samples, weight};
	return 0;
}

/* Reads what series[0..n) hold of cut bucket c->bucket (bsu microseconds
 * long): its counts (one set-based read for all), then the detail of its
 * samples, series by series, streamed into per-node sums; and adds to
 * each series' list the samples inside the window plus what has no
 * moment, summing the report into *c. */
static int read_cut(struct store *s, const struct store_series *series, size_t n,
                    const uint32_t *ids, int64_t bsu, struct view_window_cut *c,
                    struct extra_list *extra)
{
	struct cut_map *maps = calloc(n, sizeof(*maps));
	uint32_t nodes = store_node_count(s);
	int r = 0;

	if (!maps)
		return -ENOMEM;
	if (n > 1 && (r = store_series_prefetch(s, ids, n, c->bucket, c->bucket)) < 0)
		goto out;
	for (size_t i = 0; i < n && r == 0; i++) {
		r = store_series_counts(s, ids[i], c->bucket, c->bucket, cut_count, &maps[i]);
		if (r > 0)
			r = -EIO;
	}
	/* Detail only where the series has some and counts in the bucket:
	 * those series' detail, asked for in one read. */
	uint32_t *dids = malloc(n * sizeof(*dids));
	size_t nd = 0;
	if (r == 0 && !dids)
		r = -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct cut_map *m = &maps[i];
		m->from_us = c->from_us;
		m->to_us = c->to_us;
		m->store_nodes = nodes;
		m->wanted = m->n > 0 && series[i].recent_samples > 0 &&
		            series[i].last_us >= c->bucket * 1000000 &&
		            series[i].first_us < c->bucket * 1000000 + bsu;
		if (m->wanted)
			dids[nd++] = ids[i];
	}
	if (r == 0 && nd > 1)
		r = store_samples_prefetch(s, dids, nd, c->bucket * 1000000,
		                           c->bucket * 1000000 + bsu);
	free(dids);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct cut_map *m = &maps[i];
		if (!m->wanted)
			continue;
		r = store_series_samples(s, ids[i], c->bucket * 1000000, c->bucket * 1000000 + bsu,
		                         cut_sample, m);
		if (r == -EOPNOTSUPP || r == -ENOSYS)
			r = 0; /* a store without a recent tier: all of it without a moment */
		else if (r > 0)
			r = -EIO;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		struct cut_map *m = &maps[i];
		c->detail |= m->walked;
		for (size_t j = 0; m->e && j <= m->mask && r == 0; j++) {
			const struct cut_entry *e = &m->e[j];
			if (!e->used)
				continue;
			/* Detail beyond the counts (never written so) is ignored. */
			uint64_t ws = e->count_samples > e->detail_samples
			                      ? e->count_samples - e->detail_samples
			                      : 0;
			uint64_t ww = e->count_weight > e->detail_weight
			                      ? e->count_weight - e->detail_weight
			                      : 0;
			if (ws + e->in_samples == 0 && ww + e->in_weight == 0)
				continue;
			c->timed_samples += e->in_samples;
			c->timed_weight += e->in_weight;
			c->whole_samples += ws;
			c->whole_weight += ww;
			r = extra_push(&extra[i], e->node, e->in_samples + ws, e->in_weight + ww);
		}
	}
out:
	for (size_t i = 0; i < n; i++)
		free(maps[i].e);
	free(maps);
	return r;
}

int view_tree_build_window_us(struct store *s, const struct store_series *series, size_t n,
                              int64_t from_us, int64_t to_us, const struct view_tree *seed,
                              struct view_tree **out)
{
	uint32_t bsec = store_bucket_seconds(s);
	int64_t bs = bsec ? bsec : 1, bsu = bs * 1000000;
	struct view_window w = {.from_us = from_us, .to_us = to_us, .bucket_seconds = bsec};
	struct extra_list *extra = NULL;
	struct build_extra *ex = NULL;
	uint32_t *ids = NULL;
	int r = 0;

	*out = NULL;
	if (n == 0)
		return -EINVAL;
	/* Past about 73,000 years either way: open ends, on bucket edges so
	 * that they cut nothing. */
	const int64_t lim = INT64_MAX / 4 / bsu * bsu;
	from_us = from_us < -lim ? -lim : from_us > lim ? lim : from_us;
	to_us = to_us < -lim ? -lim : to_us > lim ? lim : to_us;
	w.from_us = from_us;
	w.to_us = to_us;
	w.whole_from = 1;
	w.whole_to = 0;
	if (to_us > from_us) {
		int64_t bf = view_floor_div(from_us, bsu), bt = view_floor_div(to_us, bsu);
		/* The buckets wholly inside: from the first that starts at or
		 * after from_us to the last that ends at or before to_us. */
		int64_t first = bf + (bf * bsu != from_us), last = bt - 1;
		if (first <= last) {
			w.whole_from = first * bs;
			w.whole_to = last * bs;
		}
		if (bf * bsu != from_us)
			w.cut[w.ncut++] = (struct view_window_cut){
			        .bucket = bf * bs,
			        .from_us = from_us,
			        .to_us = to_us < (bf + 1) * bsu ? to_us : (bf + 1) * bsu};
		if (bt * bsu != to_us && (bt != bf || w.ncut == 0))
			w.cut[w.ncut++] = (struct view_window_cut){
			        .bucket = bt * bs,
			        .from_us = from_us > bt * bsu ? from_us : bt * bsu,
			        .to_us = to_us};
	}
	if (w.ncut) {
		extra = calloc(n, sizeof(*extra));
		ex = calloc(n, sizeof(*ex));
		ids = malloc(n * sizeof(*ids));
		if (!extra || !ex || !ids) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			ids[i] = series[i].id;
		for (unsigned k = 0; k < w.ncut && r == 0; k++)
			r = read_cut(s, series, n, ids, bsu, &w.cut[k], extra);
		if (r < 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			ex[i] = (struct build_extra){extra[i].v, extra[i].n};
	}
	r = builder_build(s, series, n, w.whole_from, w.whole_to, ex, seed, out);
	if (r < 0)
		goto out;
	struct view_tree *t = *out;
	if (!(t->src.window = malloc(sizeof(w)))) {
		view_tree_free(t);
		*out = NULL;
		r = -ENOMEM;
		goto out;
	}
	w.bucket_samples = t->nodes[VIEW_ROOT].total_samples;
	w.bucket_weight = t->nodes[VIEW_ROOT].total_weight;
	for (unsigned k = 0; k < w.ncut; k++) {
		w.bucket_samples -= w.cut[k].timed_samples + w.cut[k].whole_samples;
		w.bucket_weight -= w.cut[k].timed_weight + w.cut[k].whole_weight;
	}
	*t->src.window = w;
	/* A timeline reads again every bucket the window reaches into. */
	if (to_us > from_us) {
		t->src.from = view_floor_div(from_us, bsu) * bs;
		t->src.to = view_floor_div(to_us - 1, bsu) * bs;
	} else {
		t->src.from = 1;
		t->src.to = 0;
	}
out:
	for (size_t i = 0; extra && i < n; i++)
		free(extra[i].v);
	free(extra);
	free(ex);
	free(ids);
	return r;
}

int view_tree_build_window(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, struct view_tree **out)
{
	const int64_t lim = INT64_MAX / 4 / 1000000;

	/* view_tree_build_window_us() takes it from there. */
	from = from < -lim ? -lim : from > lim ? lim : from;
	to = to < -lim ? -lim : to > lim ? lim : to;
	return view_tree_build_window_us(s, series, n, from * 1000000, to * 1000000, NULL, out);
}

const struct view_window *view_tree_window(const struct view_tree *t)
{
	return t->src.window;
}

uint64_t view_window_whole_samples(const struct view_window *w, unsigned *buckets)
{
	uint64_t sum = 0;
	unsigned k = 0;

	for (unsigned i = 0; i < w->ncut; i++) {
		sum += w->cut[i].whole_samples;
		k += w->cut[i].whole_samples > 0 || w->cut[i].whole_weight > 0;
	}
	if (buckets)
		*buckets = k;
	return sum;
}

bool view_window_exact(const struct view_window *w)
{
	for (unsigned i = 0; i < w->ncut; i++)
		if (w->cut[i].whole_samples || w->cut[i].whole_weight)
			return false;
	return true;
}

int view_render_window(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	const struct view_window *w = t->src.window;
	char a[40], b[40], ai[40], bi[40], ha[40], hb[40];
	unsigned nb;
	int r;

	(void)node;
	if (!w)
		return 0;
	view_format_us(w->from_us, a);
	view_format_us(w->to_us, b);
	view_format_iso_us(w->from_us, ai);
	view_format_iso_us(w->to_us, bi);
	view_format_time_us(w->from_us, ha);
	view_format_time_us(w->to_us, hb);
	uint64_t whole = view_window_whole_samples(w, &nb);
	if (view_window_exact(w))
		r = view_buf_printf(out, "# window [%s, %s): exact\n", ha, hb);
	else
		r = view_buf_printf(out,
		                    "# window [%s, %s): NOT exact: %" PRIu64
		                    " samples of %u bucket%s the "
		                    "window cuts have no moment and are taken whole\n",
		                    ha, hb, whole, nb, nb == 1 ? "" : "s");
	if (r == 0)
		r = view_buf_printf(
		        out, "from %s %s\nto %s %s\nexact %s\nbucket_seconds %" PRIu32 "\n", a, ai,
		        b, bi, view_window_exact(w) ? "yes" : "no", w->bucket_seconds);
	if (r == 0) {
		uint64_t nbk =
		        w->whole_from <= w->whole_to && w->bucket_seconds
		                ? (uint64_t)((w->whole_to - w->whole_from) / w->bucket_seconds) + 1
		                : 0;
		r = view_buf_printf(
		        out, "whole_buckets %" PRIu64 " samples %" PRIu64 " weight %" PRIu64 "\n",
		        nbk, w->bucket_samples, w->bucket_weight);
	}
	for (unsigned i = 0; i < w->ncut && r == 0; i++) {
		const struct view_window_cut *c = &w->cut[i];
		char bu[40];
		view_format_iso_us(c->bucket * 1000000, bu);
		r = view_buf_printf(out,
		                    "cut %" PRId64 " %s timed %" PRIu64 " weight %" PRIu64
		                    " taken_whole %" PRIu64 " weight %" PRIu64 " detail %s\n",
		                    c->bucket, bu, c->timed_samples, c->timed_weight,
		                    c->whole_samples, c->whole_weight, c->detail ? "yes" : "no");
	}
	if (r == 0) {
		const struct vnode *root = &t->nodes[VIEW_ROOT];
		r = view_buf_printf(out, "samples %" PRIu64 " weight %" PRIu64 "\n",
		                    root->total_samples, root->total_weight);
	}
	return r;
}
