/*
 * test-timeline.c — unit tests for `timeline` and `timeline.svg`
 * (fs/view/timeline.c): random folded lines added at random times (in
 * and between 60 s buckets, several batches per bucket, two series of
 * one binary), then at every node of the tree: timeline's lines are the
 * buckets that hold counts of the subtree, oldest first, with the
 * samples and weight a brute-force reading of the added lines gives,
 * each covering its whole bucket (counts without a moment: flagged
 * untimed, never spread); the weights add up to the node's total; the
 * header names the resolution and the clock; timeline.svg has one bar
 * per line.  A window
 * tree's timeline holds only its buckets; a derived tree's is empty.
 * Timelines are read from the store when rendered, so also: a second
 * binary whose frames have the same names (the whole-machine tree of
 * both, and each binary's own), names that extend a sibling's ("a",
 * "ab"), and stacks the store gains after a tree was built (left out).
 * Samples kept with their moments (store_batch_sample) beside counts
 * without one: 1 s intervals place each sample by its moment, the first
 * and last scaled to the time they cover, what a bucket holds without a
 * moment one untimed line over its bucket; in an exact window too; and
 * 2 min intervals over a 5 h span sum whole buckets.  All against brute
 * force, at a leaf and at the root.
 */
#include "view-fixture.h"
#include "view-internal.h" /* view_time_rows_max, a tree's time index */

#define NADD 24

struct added {
	const char *binary;
	int64_t bucket;
	char *lines;
};

/* Samples and weight of the lines below `path` ("bin;a;b") in the
 * added batches of bucket `bucket` (each line is one sample). */
static void brute(const struct added *ad, int nad, const char *path, int64_t bucket,
                  uint64_t *samples, uint64_t *weight)
{
	size_t plen = strlen(path);

	*samples = *weight = 0;
	for (int i = 0; i < nad; i++) {
		if (ad[i].bucket != bucket)
			continue;
		for (const char *p = ad[i].lines; *p;) {
			const char *nl = strchr(p, '\n');
			const char *sp = nl;
			while (sp[-1] != ' ')
				sp--;
			char full[512];
			snprintf(full, sizeof(full), "%s;%.*s", ad[i].binary, (int)(sp - 1 - p), p);
			if (plen == 0 || /* the top root: every line */
			    (strncmp(full, path, plen) == 0 &&
			     (full[plen] == '\0' || full[plen] == ';'))) {
				*samples += 1;
				*weight += strtoull(sp, NULL, 10);
			}
			p = nl + 1;
		}
	}
}

static void node_path(const struct view_tree *t, uint32_t n, char *out, size_t cap)
{
	uint32_t chain[64];
	int k = 0;

	for (; n != VIEW_ROOT; n = view_node_parent(t, n))
		chain[k++] = n;
	out[0] = '\0';
	for (int i = k - 1; i >= 0; i--) {
		size_t len;
		const char *p = view_node_name(t, chain[i], &len);
		size_t o = strlen(out);
		snprintf(out + o, cap - o, "%s%.*s", i == k - 1 ? "" : ";", (int)len, p);
	}
}

static void check_tree(const struct view_tree *t, const struct added *ad, int nad,
                       const int64_t *buckets, int nb, const char *what)
{
	for (uint32_t n = 0; n < view_tree_node_count(t); n++) { /* the top root too */
		char path[512];
		node_path(t, n, path, sizeof(path));
		char *text = fx_render(view_render_timeline, t, n);
		char *svg = fx_render(view_render_timeline_svg, t, n);
		struct view_counts c;
		view_node_counts(t, n, &c);
		/* Expected lines, from brute force over every bucket. */
		struct view_buf want = {0};
		int nwant = 0;
		uint64_t sum = 0;
		for (int i = 0; i < nb; i++) {
			uint64_t s, w;
			brute(ad, nad, path, buckets[i], &s, &w);
			if (!s)
				continue;
			char line[128];
			int len = snprintf(line, sizeof(line),
			                   "%" PRId64 " 60 %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			                   buckets[i], s, w, s);
			view_buf_append(&want, line, (size_t)len);
			nwant++;
			sum += w;
		}
		/* Got: start, seconds, samples, weight and untimed of each line. */
		struct view_buf got = {0};
		int hdr = 0;
		for (const char *p = text; *p;) {
			const char *nl = strchr(p, '\n');
			if (*p == '#') {
				hdr++;
			} else {
				char st[64], secs[64], rate[64];
				unsigned long long sa, we, un;
				if (sscanf(p, "%63s %63s %llu %llu %63s %llu", st, secs, &sa, &we,
				           rate, &un) == 6) {
					char line[256];
					int len = snprintf(line, sizeof(line),
					                   "%s %s %llu %llu %llu\n", st, secs, sa,
					                   we, un);
					view_buf_append(&got, line, (size_t)len);
				}
			}
			p = nl + 1;
		}
		CHECKF(hdr >= 2 && strstr(text, "# start seconds samples weight per_second untimed "
		                                "start_utc\n"),
		       "%s: %s: header lines", what, path);
		CHECKF(strstr(text, " s over [") != NULL && strstr(text, "; clock unix") != NULL,
		       "%s: header: %s", what, text);
		CHECKF(strcmp(got.data ? got.data : "", want.data ? want.data : "") == 0,
		       "%s: %s: got\n%s\nwant\n%s", what, path, got.data, want.data);
		CHECKF(sum == c.total_weight,
		       "%s: %s: buckets add up to %" PRIu64 ", total %" PRIu64, what, path, sum,
		       c.total_weight);
		int bars = 0;
		for (const char *p = svg; (p = strstr(p, "<rect class=\"bar\"")); p++)
			bars++;
		CHECKF(bars == nwant, "%s: %s: %d bars for %d buckets", what, path, bars, nwant);
		view_buf_free(&want);
		view_buf_free(&got);
		free(text);
		free(svg);
	}
}

/* The series of `binary` moved to the front of list[0..n); how many. */
static size_t series_of(struct store_series *list, size_t n, const char *binary)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!binary || strcmp(list[i].binary, binary) == 0) {
			struct store_series tmp = list[k];
			list[k++] = list[i];
			list[i] = tmp;
		}
	return k;
}

/* ---- samples with moments ---------------------------------------------- */

#define M0 ((int64_t)1795000020 * 1000000) /* a bucket start, microseconds */
#define NM 600

struct moment {
	int64_t us;
	int leaf;
	uint64_t weight;
};
static struct moment moments[NM];
struct untimed {
	int64_t when; /* seconds */
	int leaf;
	uint64_t samples, weight;
};
static const struct untimed untimed[] = {
        {1795000020 + 30, 0, 3, 300},         /* bucket 0, beside samples */
        {1795000020 + 200, 1, 2, 20},         /* bucket 3: no samples */
        {1795000020 + 5 * 3600 + 7, 0, 1, 7}, /* far on: a 5 h span */
};

static void add_moments(struct store *s, int nuntimed)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, "mo", "1", "cpu-clock", "nanoseconds", NULL};
	uint32_t series, fr, top, leaf[2];
	int r;

	if (!b || (r = store_batch_series(b, &k, &series)) < 0)
		fx_die("batch", b ? r : ENOMEM);
	struct store_frame f = {.name = "main", .name_len = 4};
	if ((r = store_batch_frame(b, &f, &fr)) < 0 ||
	    (r = store_batch_node(b, STORE_ROOT_NODE, fr, &top)) < 0)
		fx_die("frame", r);
	for (int i = 0; i < 2; i++) {
		f = (struct store_frame){.name = i ? "y" : "x", .name_len = 1};
		if ((r = store_batch_frame(b, &f, &fr)) < 0 ||
		    (r = store_batch_node(b, top, fr, &leaf[i])) < 0)
			fx_die("frame", r);
	}
	srand(3939);
	for (int i = 0; i < NM; i++) {
		/* Moments in [0 s, 180 s), in order, to the microsecond. */
		moments[i] = (struct moment){M0 + (int64_t)i * 300000 + rand() % 300000, rand() % 2,
		                             (uint64_t)(1 + rand() % 1000) * 1000};
		struct store_sample smp = {.time_us = moments[i].us,
		                           .node = leaf[moments[i].leaf],
		                           .weight = moments[i].weight};
		if ((r = store_batch_sample(b, series, &smp)) < 0)
			fx_die("store_batch_sample", r);
	}
	for (int i = 0; i < nuntimed; i++)
		if ((r = store_batch_add(b, series, untimed[i].when, leaf[untimed[i].leaf],
		                         untimed[i].samples, untimed[i].weight)) < 0)
			fx_die("store_batch_add", r);
	if ((r = store_batch_commit(b)) < 0)
		fx_die("commit", r);
	store_batch_free(b);
}

/* One expected line: start seconds samples weight untimed. */
static void want_line(struct view_buf *want, int64_t a, int64_t z, uint64_t n, uint64_t w,
                      uint64_t un)
{
	char st[40], secs[40], line[160];
	view_format_us(a, st);
	view_format_us(z - a, secs);
	int len = snprintf(line, sizeof(line), "%s %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", st,
	                   secs, n, w, un);
	view_buf_append(want, line, (size_t)len);
}

/* Brute force of the timeline of leaf (-1: both) of the series over the
 * span [S, E) at interval r (microseconds), the window [wf, wt) (whole
 * time: wf > wt), with the first nuntimed counts. */
static void brute_moments(struct view_buf *want, int leaf, int64_t S, int64_t E, int64_t r,
                          int64_t wf, int64_t wt, int nuntimed)
{
	const int64_t bsu = 60000000;
	bool fine = r < bsu, window = wf <= wt;

	for (int64_t k = S / r * r; k < E; k += r) {
		uint64_t n = 0, w = 0, un = 0;
		for (int i = 0; i < NM; i++) {
			int64_t t = moments[i].us, b = t / bsu * bsu;
			if (leaf >= 0 && moments[i].leaf != leaf)
				continue;
			if (fine || (window && (b < wf || b + bsu > wt))) {
				if (t >= k && t < k + r && t >= S && t < E)
					n++, w += moments[i].weight;
			} else if (b >= k && b < k + r) {
				n++, w += moments[i].weight;
			}
		}
		for (int i = 0; !fine && i < nuntimed; i++) {
			int64_t b = untimed[i].when * 1000000 / bsu * bsu;
			int64_t at = b > S ? b : S;
			if ((leaf < 0 || untimed[i].leaf == leaf) && at >= k && at < k + r &&
			    (!window || (b + bsu > wf && b < wt))) {
				n += untimed[i].samples, w += untimed[i].weight;
				if (window && (b < wf || b + bsu > wt))
					un += untimed[i].samples;
			}
		}
		/* Fine: a bucket's counts without a moment are a line over
		 * the bucket (in the window, from the span's start), before the interval's line when it
		 * starts before it. */
		for (int pass = 0; pass < 3; pass++) {
			if (pass == 1 && n)
				want_line(want, k > S ? k : S, k + r < E ? k + r : E, n, w, un);
			for (int i = 0; fine && pass != 1 && i < nuntimed; i++) {
				int64_t b = untimed[i].when * 1000000 / bsu * bsu;
				int64_t a = window && wf > b ? wf : b;
				int64_t z = window && wt < b + bsu ? wt : b + bsu;
				a = a > S ? a : S; /* no sample lies before the span */
				if ((leaf >= 0 && untimed[i].leaf != leaf) || a < k || a >= k + r ||
				    (window && (b + bsu <= wf || b >= wt)) ||
				    (pass == 0) != (n && a < (k > S ? k : S)))
					continue;
				want_line(want, a, z, untimed[i].samples, untimed[i].weight,
				          untimed[i].samples);
			}
		}
	}
}

/* Got: start seconds samples weight untimed of each line. */
static char *got_lines(const char *text)
{
	struct view_buf got = {0};

	view_buf_append(&got, "", 0);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		char st[64], secs[64], rate[64], line[256];
		unsigned long long sa, we, un;
		if (*p != '#' && sscanf(p, "%63s %63s %llu %llu %63s %llu", st, secs, &sa, &we,
		                        rate, &un) == 6) {
			int len = snprintf(line, sizeof(line), "%s %s %llu %llu %llu\n", st, secs,
			                   sa, we, un);
			view_buf_append(&got, line, (size_t)len);
		}
		p = nl + 1;
	}
	return got.data;
}

static void check_moments(const struct view_tree *t, int64_t S, int64_t E, int64_t r, int64_t wf,
                          int64_t wt, int nuntimed, const char *what)
{
	uint32_t bin = view_node_find_child(t, VIEW_ROOT, "mo", 2);
	uint32_t m = view_node_find_child(t, bin, "main", 4);
	uint32_t nodes[] = {VIEW_ROOT, view_node_find_child(t, m, "x", 1),
	                    view_node_find_child(t, m, "y", 1)};

	for (int i = 0; i < 3; i++) {
		struct view_buf want = {0};
		view_buf_append(&want, "", 0);
		brute_moments(&want, i - 1, S, E, r, wf, wt, nuntimed);
		char *text = fx_render(view_render_timeline, t, nodes[i]);
		char *got = got_lines(text);
		CHECKF(strcmp(got, want.data) == 0, "%s, node %d: got\n%s\nwant\n%s\n%s", what, i,
		       got, want.data, text);
		char hdr[64];
		snprintf(hdr, sizeof(hdr), " intervals of %" PRId64 " s over [", r / 1000000);
		CHECKF(strstr(text, hdr) != NULL, "%s: header: %s", what, text);
		free(got);
		free(text);
		view_buf_free(&want);
	}
}

/* How to build a tree again: the whole time, or a window [from_us, to_us). */
struct rebuild {
	struct store *s;
	const struct store_series *list;
	size_t n;
	bool window;
	int64_t from_us, to_us;
};

static struct view_tree *rebuild(const struct rebuild *b)
{
	struct view_tree *t;
	int r = b->window ? view_tree_build_window_us(b->s, b->list, b->n, b->from_us, b->to_us,
	                                              NULL, &t)
	                  : view_tree_build(b->s, b->list, b->n, INT64_MIN, INT64_MAX, &t);
	if (r < 0)
		fx_die("rebuild", -r);
	return t;
}

/* Every node's timeline, timeline.svg and heatmap.svg rendered from the
 * tree's index (its rows read from the store once) are byte for byte
 * those read from the store at each rendering: with no index
 * (view_time_rows_max 0), and with a bound its rows pass (3: none). */
static void check_index(const struct rebuild *b, const char *what)
{
	static const view_render_fn fns[] = {view_render_timeline, view_render_timeline_svg,
	                                     view_render_heatmap_svg};
	static const char *const fnames[] = {"timeline", "timeline.svg", "heatmap.svg"};
	static const size_t bounds[] = {0, 3, (size_t)1 << 21};
	size_t saved = view_time_rows_max;
	char **want = NULL;
	uint32_t nn = 0;

	for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
		view_time_rows_max = bounds[k];
		struct view_tree *t = rebuild(b);
		if (k == 0) {
			nn = view_tree_node_count(t);
			want = calloc((size_t)nn * 3, sizeof(*want));
			if (!want)
				fx_die("calloc", ENOMEM);
		}
		CHECKF(view_tree_node_count(t) == nn, "%s: %u nodes, then %u", what, nn,
		       view_tree_node_count(t));
		for (uint32_t v = 0; v < nn && v < view_tree_node_count(t); v++) {
			if (!view_node_visible(t, v))
				continue;
			for (int f = 0; f < 3; f++) {
				char *got = fx_render(fns[f], t, v);
				if (k == 0)
					want[v * 3 + f] = got;
				else {
					CHECKF(strcmp(got, want[v * 3 + f]) == 0,
					       "%s: node %u's %s with rows bound %zu differs from "
					       "the "
					       "store's:\n%s\nagainst\n%s",
					       what, v, fnames[f], bounds[k], got, want[v * 3 + f]);
					free(got);
				}
			}
		}
		/* The bound decides whether the index was made. */
		bool indexed = t->time_index && t->time_index != VIEW_TIME_NONE;
		CHECKF(indexed == (bounds[k] > 3), "%s: rows bound %zu: indexed %d", what,
		       bounds[k], indexed);
		view_tree_free(t);
	}
	for (size_t i = 0; i < (size_t)nn * 3; i++)
		free(want[i]);
	free(want);
	view_time_rows_max = saved;
}

static void test_moments(void)
{
	struct store *s = fx_store();
	struct store_series *list;
	size_t n;
	struct view_tree *t;

	/* Samples and two buckets' counts without a moment: a 1 s timeline
	 * from the first sample to the last count. */
	add_moments(s, 2);
	if (store_series_list(s, &list, &n) < 0 || n != 1)
		fx_die("series", EIO);
	int64_t S = moments[0].us, E = list[0].last_us + 1;
	if (view_tree_build(s, list, n, INT64_MIN, INT64_MAX, &t) < 0)
		fx_die("build", EIO);
	check_moments(t, S, E, 1000000, 1, 0, 2, "1 s, whole time");
	view_tree_free(t);
	check_index(&(struct rebuild){s, list, n, false, 0, 0}, "1 s, whole time");
	/* An exact window cutting buckets 0 and 1. */
	int64_t wf = M0 + 10500000, wt = M0 + 70250000;
	if (view_tree_build_window_us(s, list, n, wf, wt, NULL, &t) < 0)
		fx_die("window", EIO);
	check_moments(t, wf, wt, 1000000, wf, wt, 2, "1 s, window");
	view_tree_free(t);
	check_index(&(struct rebuild){s, list, n, true, wf, wt}, "1 s, window");
	store_series_free(list, n);
	store_close(s);
	fx_cleanup();

	/* A third count 5 h on: 2 min intervals of whole buckets.  The
	 * samples' detail kept a day (the default 2 h before the newest
	 * moment would roll it up at the commit). */
	s = fx_store();
	if (store_set_keep_samples(s, 86400) < 0)
		fx_die("store_set_keep_samples", EIO);
	add_moments(s, 3);
	if (store_series_list(s, &list, &n) < 0 || n != 1)
		fx_die("series", EIO);
	S = moments[0].us, E = list[0].last_us + 1;
	if (view_tree_build(s, list, n, INT64_MIN, INT64_MAX, &t) < 0)
		fx_die("build", EIO);
	check_moments(t, S, E, 120000000, 1, 0, 3, "2 min, whole time");
	view_tree_free(t);
	check_index(&(struct rebuild){s, list, n, false, 0, 0}, "2 min, whole time");
	/* A window over all of it that cuts bucket 0 and the last. */
	wf = M0 + 10500000, wt = M0 + (int64_t)(5 * 3600 + 30) * 1000000;
	if (view_tree_build_window_us(s, list, n, wf, wt, NULL, &t) < 0)
		fx_die("window", EIO);
	check_moments(t, wf, E < wt ? E : wt, 120000000, wf, wt, 3, "2 min, window");
	view_tree_free(t);
	check_index(&(struct rebuild){s, list, n, true, wf, wt}, "2 min, window");
	store_series_free(list, n);
	store_close(s);
	fx_cleanup();
	fx_dir[0] = '\0';
}

int main(void)
{
	struct store *s = fx_store();
	static const char *const names[] = {"main", "a", "ab", "b", "timeline", "c"};
	const int nnames = (int)(sizeof(names) / sizeof(names[0]));
	struct added ad[NADD];
	int64_t buckets[8];
	const int64_t base = 1795000020; /* a bucket start */

	for (int i = 0; i < 8; i++)
		buckets[i] = base + 60 * (i + i / 3); /* gaps too */
	srand(2424);
	for (int i = 0; i < NADD; i++) {
		struct view_buf lines = {0};
		int nl = 1 + rand() % 6;
		for (int l = 0; l < nl; l++) {
			char line[256];
			size_t o = 0;
			int depth = 1 + rand() % 5;
			for (int d = 0; d < depth; d++)
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
				                      d ? ";" : "", names[rand() % nnames]);
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %d\n",
			                      1 + rand() % 500);
			view_buf_append(&lines, line, o);
		}
		ad[i].bucket = buckets[rand() % 8];
		ad[i].lines = lines.data;
		/* Two series of one binary (versions 1 and 2), at a time inside
		 * the bucket; every fourth batch to a second binary. */
		ad[i].binary = i % 4 == 3 ? "oth" : "rnd";
		fx_add(s, ad[i].binary,
		       i % 4 == 3   ? "1"
		       : rand() % 2 ? "1"
		                    : "2",
		       "samples", ad[i].bucket + rand() % 60, ad[i].lines);
	}
	struct added rnd[NADD];
	int nrnd = 0;
	for (int i = 0; i < NADD; i++)
		if (strcmp(ad[i].binary, "rnd") == 0)
			rnd[nrnd++] = ad[i];
	struct store_series *list;
	size_t n;
	struct view_tree *t;
	if (store_series_list(s, &list, &n) < 0 || n != 3)
		fx_die("store_series_list", EIO);
	/* Both binaries (the whole machine), then rnd's two series alone. */
	if (view_tree_build(s, list, n, INT64_MIN, INT64_MAX, &t) < 0)
		fx_die("view_tree_build", EIO);
	check_tree(t, ad, NADD, buckets, 8, "machine");
	fx_check_totals(t, "machine");
	view_tree_free(t);
	check_index(&(struct rebuild){s, list, n, false, 0, 0}, "machine");
	size_t nr = series_of(list, n, "rnd");
	if (nr != 2)
		fx_die("series_of", EIO);
	if (view_tree_build(s, list, nr, INT64_MIN, INT64_MAX, &t) < 0)
		fx_die("view_tree_build", EIO);
	check_tree(t, rnd, nrnd, buckets, 8, "whole");
	fx_check_totals(t, "whole");

	/* Stacks the store gains after the build are not the tree's: a
	 * new frame below an existing stack, and a new top frame, in every
	 * bucket.  Each node's timeline stays what it was. */
	struct view_tree *before = t;
	for (int i = 0; i < 8; i++) {
		char late[600];
		const char *nl = strchr(rnd[0].lines, '\n');
		const char *sp = nl;
		while (sp[-1] != ' ')
			sp--;
		snprintf(late, sizeof(late), "%.*s;late 7\nlate;x 5\n",
		         (int)(sp - 1 - rnd[0].lines), rnd[0].lines);
		fx_add(s, "rnd", "1", "samples", buckets[i], late);
	}
	check_tree(before, rnd, nrnd, buckets, 8, "after the store grew");
	view_tree_free(before);

	/* A window of buckets 2..4: only those. */
	if (view_tree_build_window(s, list, nr, buckets[2], buckets[4] + 60, &t) < 0)
		fx_die("view_tree_build_window", EIO);
	struct added win[NADD];
	int nwin = 0;
	for (int i = 0; i < nrnd; i++)
		if (rnd[i].bucket >= buckets[2] && rnd[i].bucket <= buckets[4])
			win[nwin++] = rnd[i];
	/* The late stacks are in this tree: brute force over them too. */
	char lates[8][600];
	for (int i = 2; i <= 4; i++) {
		const char *nl = strchr(rnd[0].lines, '\n');
		const char *sp = nl;
		while (sp[-1] != ' ')
			sp--;
		snprintf(lates[i], sizeof(lates[i]), "%.*s;late 7\nlate;x 5\n",
		         (int)(sp - 1 - rnd[0].lines), rnd[0].lines);
		win[nwin++] = (struct added){"rnd", buckets[i], lates[i]};
	}
	check_tree(t, win, nwin, buckets, 8, "window");
	view_tree_free(t);

	/* A derived tree (a function's callees) has no buckets. */
	t = fx_tree(s, "rnd", "1");
	struct view_functions *fx;
	struct view_tree *callees;
	if (view_functions_build(t, fx_binary(t), &fx) == 0 &&
	    view_functions_callees(fx, 0, &callees) == 0) {
		char *text = fx_render(view_render_timeline, callees, VIEW_ROOT);
		CHECKF(strncmp(text, "# 0 intervals", 13) == 0, "callees: %s", text);
		free(text);
		view_tree_free(callees);
		view_functions_free(fx);
	}
	view_tree_free(t);
	store_series_free(list, n);
	for (int i = 0; i < NADD; i++)
		free(ad[i].lines);
	store_close(s);
	fx_cleanup();
	fx_dir[0] = '\0';
	test_moments();
	if (check_failures) {
		fprintf(stderr, "%d check_failures\n", check_failures);
		return 1;
	}
	printf("ok: timeline of every node of a random tree (two binaries, and one), after the "
	       "store grew, a window and a derived tree\n");
	return 0;
}
