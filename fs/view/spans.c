/*
 * spans.c — the files made of span records (store.h, "spans"): `spans`,
 * one line per span name of a scope with the count, total, mean, p50,
 * p99 and max duration of its spans and how many never ended, and
 * `trace.json`, the scope's spans and samples in the Chrome Trace Event
 * Format (complete "X" events, "M" events naming processes and threads,
 * "P" sample events whose stacks are in "stackFrames").  The daemon tells
 * a tree which span-record series belong to its scope
 * (view_tree_set_spans()); the renderers read them again from the store
 * the tree was built from, as timelines do, so the caller holds the lock
 * that guards that store.  Counts and totals come from the series' counts
 * (exact for all time); durations for percentiles and the events of a
 * trace come from the recent tier's detail, which may cover less: the
 * files say how much.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

static int put_lit(struct view_buf *b, const char *s)
{
	return view_buf_append(b, s, strlen(s));
}

/* The scope's span-record series and, per series the tree reads
 * (src.series), the labels a trace names its threads by. */
struct view_spans {
	size_t n;
	uint32_t *ids;  /* span-record series */
	char **name;    /* per span series: its span label's value */
	char **thread;  /* per span series: its thread label ("" none) */
	char **binary;  /* per span series */
	size_t ns;      /* src.series entries at view_tree_set_spans() */
	char **sthread; /* per src.series entry: its thread label (NULL: none) */
	char **sbinary; /* per src.series entry (NULL: not in the list) */
};

void view_spans_free(struct view_spans *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < sp->n; i++) {
		free(sp->name[i]);
		free(sp->thread[i]);
		free(sp->binary[i]);
	}
	for (size_t k = 0; k < sp->ns; k++) {
		free(sp->sthread[k]);
		free(sp->sbinary[k]);
	}
	free(sp->ids);
	free(sp->name);
	free(sp->thread);
	free(sp->binary);
	free(sp->sthread);
	free(sp->sbinary);
	free(sp);
}

static char *label_dup(const char *labels, const char *key)
{
	size_t len;
	const char *v = store_labels_get(labels, key, &len);
	char *s = malloc(v ? len + 1 : 1);

	if (!s)
		return NULL;
	if (v)
		memcpy(s, v, len);
	s[v ? len : 0] = '\0';
	return s;
}

int view_tree_set_spans(struct view_tree *t, const struct store_series *spans, size_t n,
                        const struct store_series *all, size_t nall)
{
	struct view_spans *sp = calloc(1, sizeof(*sp));
	size_t ns = t->src.nseries;

	if (!sp)
		return -ENOMEM;
	sp->ids = calloc(n ? n : 1, sizeof(*sp->ids));
	sp->name = calloc(n ? n : 1, sizeof(*sp->name));
	sp->thread = calloc(n ? n : 1, sizeof(*sp->thread));
	sp->binary = calloc(n ? n : 1, sizeof(*sp->binary));
	sp->sthread = calloc(ns ? ns : 1, sizeof(*sp->sthread));
	sp->sbinary = calloc(ns ? ns : 1, sizeof(*sp->sbinary));
	if (!sp->ids || !sp->name || !sp->thread || !sp->binary || !sp->sthread || !sp->sbinary)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		sp->ids[i] = spans[i].id;
		sp->n = i + 1;
		sp->name[i] = label_dup(spans[i].labels, VIEW_SPAN_LABEL);
		sp->thread[i] = label_dup(spans[i].labels, STORE_LABEL_THREAD);
		sp->binary[i] = strdup(spans[i].binary);
		if (!sp->name[i] || !sp->thread[i] || !sp->binary[i])
			goto nomem;
		if (!sp->name[i][0]) {
			free(sp->name[i]);
			if (!(sp->name[i] = strdup("-")))
				goto nomem;
		}
	}
	sp->ns = ns;
	/* all's index by series id (ids are small and sequential). */
	uint32_t maxid = 0;
	for (size_t i = 0; i < nall; i++)
		if (all[i].id > maxid)
			maxid = all[i].id;
	size_t *at = calloc((size_t)maxid + 1, sizeof(*at));
	if (!at)
		goto nomem;
	for (size_t i = 0; i < nall; i++)
		at[all[i].id] = i + 1;
	for (size_t k = 0; k < ns; k++) {
		uint32_t id = t->src.series[k];
		if (id > maxid || !at[id])
			continue;
		const struct store_series *a = &all[at[id] - 1];
		size_t len;
		const char *v = store_labels_get(a->labels, STORE_LABEL_THREAD, &len);
		if ((v && !(sp->sthread[k] = strndup(v, len))) ||
		    !(sp->sbinary[k] = strdup(a->binary))) {
			free(at);
			goto nomem;
		}
	}
	free(at);
	view_spans_free(t->src.spans);
	t->src.spans = sp;
	return 0;
nomem:
	view_spans_free(sp);
	return -ENOMEM;
}

bool view_tree_has_spans(const struct view_tree *t)
{
	return t->src.spans && t->src.spans->n;
}

/* The window a tree's files cover, [*from, *to) in microseconds. */
static void tree_window(const struct view_tree *t, int64_t *from, int64_t *to)
{
	*from = t->src.window ? t->src.window->from_us : INT64_MIN;
	*to = t->src.window ? t->src.window->to_us : INT64_MAX;
}

/* Whether store node `node` is a span record's [unended] frame. */
static bool node_unended(struct store *s, uint32_t node)
{
	uint32_t parent, frame;
	struct store_frame f;

	if (store_node_get(s, node, &parent, &frame) < 0 || store_frame_get(s, frame, &f) < 0)
		return false;
	return f.name_len == strlen(STORE_SPAN_UNENDED_FRAME) &&
	       memcmp(f.name, STORE_SPAN_UNENDED_FRAME, f.name_len) == 0;
}

/* ---- spans -------------------------------------------------------------- */

struct name_stats {
	const char *name;
	uint64_t count, total, unended;
	uint64_t *dur; /* the detail's durations */
	size_t ndur, cap;
};

struct stats_walk {
	struct store *s;
	struct name_stats *ns;
	uint8_t *memo; /* per store node: 0 unknown, 1 ended, 2 unended */
	uint32_t nodes;
};

static bool walk_unended(struct stats_walk *w, uint32_t node)
{
	if (node >= w->nodes)
		return node_unended(w->s, node);
	if (!w->memo[node])
		w->memo[node] = node_unended(w->s, node) ? 2 : 1;
	return w->memo[node] == 2;
}

static int add_count(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct stats_walk *w = ctx;

	(void)bucket;
	w->ns->count += samples;
	w->ns->total += weight;
	if (walk_unended(w, node))
		w->ns->unended += samples;
	return 0;
}

static int add_duration(void *ctx, const struct store_sample *smp)
{
	struct stats_walk *w = ctx;
	struct name_stats *ns = w->ns;

	if (ns->ndur == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		uint64_t *d = realloc(ns->dur, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		ns->dur = d;
		ns->cap = cap;
	}
	ns->dur[ns->ndur++] = smp->weight;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_stats(const void *a, const void *b)
{
	return strcmp(((const struct name_stats *)a)->name, ((const struct name_stats *)b)->name);
}

/* Nanoseconds as milliseconds with six decimals: exact. */
static int put_ms(struct view_buf *b, uint64_t ns)
{
	return view_buf_printf(b, " %" PRIu64 ".%06" PRIu64, ns / 1000000, ns % 1000000);
}

/* The value of nearest rank ceil(p * n / 100) of sorted d[0..n), n > 0. */
static uint64_t percentile(const uint64_t *d, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100; /* n is an array length: n * 100 fits */

	return d[rank ? rank - 1 : 0];
}

int view_render_spans(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	const struct view_spans *sp = t->src.spans;
	struct name_stats *st = NULL;
	size_t nst = 0;
	struct stats_walk w = {.s = t->src.store};
	int r = 0;

	(void)node;
	r = view_buf_printf(out, "# count total_ms mean_ms p50_ms p99_ms max_ms unended detailed "
	                         "name\n");
	if (r < 0 || !sp || !sp->n || !w.s)
		return r < 0 ? r : 0;
	w.nodes = store_node_count(w.s);
	w.memo = calloc(w.nodes ? w.nodes : 1, 1);
	st = calloc(sp->n, sizeof(*st));
	if (!w.memo || !st) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sp->n && r == 0; i++) {
		size_t k = 0;
		while (k < nst && strcmp(st[k].name, sp->name[i]) != 0)
			k++;
		if (k == nst)
			st[nst++].name = sp->name[i];
		w.ns = &st[k];
		r = store_series_counts(w.s, sp->ids[i], INT64_MIN, INT64_MAX, add_count, &w);
		if (r == 0)
			r = store_series_samples(w.s, sp->ids[i], INT64_MIN, INT64_MAX,
			                         add_duration, &w);
	}
	if (r < 0)
		goto out;
	qsort(st, nst, sizeof(*st), cmp_stats);
	for (size_t k = 0; k < nst && r == 0; k++) {
		struct name_stats *n = &st[k];
		qsort(n->dur, n->ndur, sizeof(*n->dur), cmp_u64);
		r = view_buf_printf(out, "%" PRIu64, n->count);
		if (r == 0)
			r = put_ms(out, n->total);
		if (r == 0)
			r = n->count ? put_ms(out, n->total / n->count)
			             : view_buf_printf(out, " -");
		if (r == 0 && n->ndur) {
			r = put_ms(out, percentile(n->dur, n->ndur, 50));
			if (r == 0)
				r = put_ms(out, percentile(n->dur, n->ndur, 99));
			if (r == 0)
				r = put_ms(out, n->dur[n->ndur - 1]);
		} else if (r == 0) {
			r = view_buf_printf(out, " - - -");
		}
		if (r == 0)
			r = view_buf_printf(out, " %" PRIu64 " %zu ", n->unended, n->ndur);
		if (r == 0)
			r = view_text_append(out, n->name, strlen(n->name), 0);
		if (r == 0)
			r = put_lit(out, "\n");
	}
out:
	for (size_t k = 0; st && k < sp->n; k++)
		free(st[k].dur);
	free(st);
	free(w.memo);
	return r;
}

/* ---- trace.json --------------------------------------------------------- */

/* Appends s[0..len) as a JSON string: quotes, backslashes and control
 * bytes escaped, and every byte that does not begin a valid UTF-8
 * sequence replaced by U+FFFD, so the file always parses. */
static int json_str(struct view_buf *b, const char *s, size_t len)
{
	int r = put_lit(b, "\"");

	for (size_t i = 0; i < len && r == 0;) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80         ? 1
		           : (c >> 5) == 6  ? 2
		           : (c >> 4) == 14 ? 3
		           : (c >> 3) == 30 ? 4
		                            : 0;
		unsigned char c1 = i + 1 < len ? (unsigned char)s[i + 1] : 0;
		/* No overlong form, no surrogate, nothing past U+10FFFF. */
		bool ok = n && i + n <= len && !(n == 2 && c < 0xc2) && !(c == 0xe0 && c1 < 0xa0) &&
		          !(c == 0xed && c1 >= 0xa0) && !(c == 0xf0 && c1 < 0x90) &&
		          !(c == 0xf4 && c1 >= 0x90) && c <= 0xf4;
		for (size_t k = 1; ok && k < n; k++)
			ok = ((unsigned char)s[i + k] >> 6) == 2;
		if (!ok) {
			r = put_lit(b, "\\ufffd");
			i++;
		} else if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			r = view_buf_append(b, e, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			r = view_buf_printf(b, "\\u%04x", c);
			i++;
		} else {
			r = view_buf_append(b, s + i, n);
			i += n;
		}
	}
	return r ? r : put_lit(b, "\"");
}

static int json_cstr(struct view_buf *b, const char *s)
{
	return json_str(b, s ? s : "", s ? strlen(s) : 0);
}

/* A thread or process a trace names in its "M" events. */
struct who {
	uint32_t pid, tid;
	const char *thread, *binary;
};

struct trace_walk {
	struct store *s;
	struct view_buf *out;
	bool first;
	uint64_t left; /* room for more events of the current kind */
	uint64_t events, left_out;
	const char *name, *thread, *binary;
	struct who *who;
	size_t nwho, capwho;
	uint8_t *mark; /* per store node: in a sample's stack */
	uint32_t nodes;
	int err;
};

static int note_who(struct trace_walk *w, uint32_t pid, uint32_t tid)
{
	if (w->nwho && w->who[w->nwho - 1].pid == pid && w->who[w->nwho - 1].tid == tid)
		return 0;
	if (w->nwho == w->capwho) {
		size_t cap = w->capwho ? w->capwho * 2 : 64;
		struct who *nw = realloc(w->who, cap * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		w->who = nw;
		w->capwho = cap;
	}
	w->who[w->nwho++] = (struct who){pid, tid, w->thread, w->binary};
	return 0;
}

static int sep(struct trace_walk *w)
{
	int r = w->first ? 0 : view_buf_append(w->out, ",\n", 2);

	w->first = false;
	return r;
}

/* Takes one event of the budget: false (counted as left out) when it is
 * spent. */
static bool take_budget(struct trace_walk *w)
{
	if (!w->left) {
		w->left_out++;
		return false;
	}
	w->left--;
	w->events++;
	return true;
}

static int put_span(void *ctx, const struct store_sample *smp)
{
	struct trace_walk *w = ctx;
	struct view_buf *b = w->out;
	int r;

	if (!take_budget(w))
		return 0;
	if ((r = sep(w)) < 0 || (r = put_lit(b, "{\"ph\":\"X\",\"cat\":\"span\",\"name\":")) < 0 ||
	    (r = json_cstr(b, w->name)) < 0 ||
	    (r = view_buf_printf(b,
	                         ",\"ts\":%" PRId64 ",\"dur\":%" PRIu64 ".%03" PRIu64
	                         ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
	                         ",\"args\":{\"id\":%" PRIu64 ",\"parent\":%" PRIu64
	                         ",\"dur_ns\":%" PRIu64 "%s}}",
	                         smp->time_us, smp->weight / 1000, smp->weight % 1000, smp->pid,
	                         smp->tid, smp->span, smp->parent, smp->weight,
	                         node_unended(w->s, smp->node) ? ",\"unended\":true" : "")) < 0)
		return r;
	return note_who(w, smp->pid, smp->tid);
}

static int put_sample(void *ctx, const struct store_sample *smp)
{
	struct trace_walk *w = ctx;
	struct view_buf *b = w->out;
	int r;

	if (!take_budget(w))
		return 0;
	for (uint32_t n = smp->node; n != STORE_ROOT_NODE && n < w->nodes && !w->mark[n];) {
		uint32_t parent, frame;
		w->mark[n] = 1;
		if (store_node_get(w->s, n, &parent, &frame) < 0)
			break;
		n = parent;
	}
	if ((r = sep(w)) < 0 ||
	    (r = put_lit(b, "{\"ph\":\"P\",\"cat\":\"sample\",\"name\":")) < 0 ||
	    (r = json_cstr(b, w->name)) < 0 ||
	    (r = view_buf_printf(
	             b,
	             ",\"ts\":%" PRId64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"sf\":\"%" PRIu32
	             "\",\"args\":{\"weight\":%" PRIu64 ",\"span\":%" PRIu64 "}}",
	             smp->time_us, smp->pid, smp->tid, smp->node, smp->weight, smp->span)) < 0)
		return r;
	return note_who(w, smp->pid, smp->tid);
}

static int cmp_who(const void *a, const void *b)
{
	const struct who *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	/* A named thread first: it is the one kept. */
	return (y->thread && *y->thread) - (x->thread && *x->thread);
}

/* The "M" events: one process_name per pid (its binary) and one
 * thread_name per (pid, tid) whose series had a thread label. */
static int put_names(struct trace_walk *w)
{
	struct view_buf *b = w->out;
	int r = 0;

	qsort(w->who, w->nwho, sizeof(*w->who), cmp_who);
	for (size_t i = 0; i < w->nwho && r == 0; i++) {
		const struct who *x = &w->who[i];
		if (i && x->pid == w->who[i - 1].pid && x->tid == w->who[i - 1].tid)
			continue;
		if ((!i || x->pid != w->who[i - 1].pid) &&
		    ((r = sep(w)) < 0 ||
		     (r = view_buf_printf(b,
		                          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
		                          ",\"tid\":0,\"args\":{\"name\":",
		                          x->pid)) < 0 ||
		     (r = json_cstr(b, x->binary)) < 0 || (r = put_lit(b, "}}")) < 0))
			break;
		if (x->thread && *x->thread &&
		    ((r = sep(w)) < 0 ||
		     (r = view_buf_printf(b,
		                          "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32
		                          ",\"tid\":%" PRIu32 ",\"args\":{\"name\":",
		                          x->pid, x->tid)) < 0 ||
		     (r = json_cstr(b, x->thread)) < 0 || (r = put_lit(b, "}}")) < 0))
			break;
	}
	return r;
}

/* The stack frames of the samples written: each marked store node. */
static int put_frames(struct trace_walk *w)
{
	struct view_buf *b = w->out;
	bool first = true;
	int r = put_lit(b, "\"stackFrames\":{");

	for (uint32_t n = 1; n < w->nodes && r == 0; n++) {
		uint32_t parent, frame;
		struct store_frame f;
		if (!w->mark[n])
			continue;
		if ((r = store_node_get(w->s, n, &parent, &frame)) < 0 ||
		    (r = store_frame_get(w->s, frame, &f)) < 0)
			break;
		if ((r = view_buf_printf(b, "%s\n\"%" PRIu32 "\":{\"category\":\"stack\",\"name\":",
		                         first ? "" : ",", n)) < 0 ||
		    (r = json_str(b, f.name ? f.name : "", f.name ? f.name_len : 0)) < 0)
			break;
		r = parent != STORE_ROOT_NODE
		            ? view_buf_printf(b, ",\"parent\":\"%" PRIu32 "\"}", parent)
		            : put_lit(b, "}");
		first = false;
	}
	return r ? r : put_lit(b, "},\n");
}

int view_render_trace(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	const struct view_spans *sp = t->src.spans;
	struct trace_walk w = {.s = t->src.store, .out = out, .first = true};
	uint64_t spans = 0, spans_out = 0;
	int64_t from, to;
	int r;

	(void)node;
	tree_window(t, &from, &to);
	if ((r = put_lit(out, "{\"traceEvents\":[\n")) < 0)
		return r;
	if (w.s) {
		w.nodes = store_node_count(w.s);
		w.mark = calloc(w.nodes ? w.nodes : 1, 1);
		if (!w.mark)
			return -ENOMEM;
	}
	w.left = VIEW_TRACE_MAX_EVENTS;
	for (size_t i = 0; w.s && sp && i < sp->n && r == 0; i++) {
		w.name = sp->name[i];
		w.thread = sp->thread[i];
		w.binary = sp->binary[i];
		r = store_series_samples(w.s, sp->ids[i], from, to, put_span, &w);
	}
	spans = w.events, spans_out = w.left_out;
	w.events = w.left_out = 0;
	w.left = VIEW_TRACE_MAX_EVENTS;
	for (size_t i = 0; w.s && i < t->src.nseries && r == 0; i++) {
		w.name = t->event;
		w.thread = sp ? sp->sthread[i] : NULL;
		w.binary = sp ? sp->sbinary[i] : NULL;
		r = store_series_samples(w.s, t->src.series[i], from, to, put_sample, &w);
	}
	if (r == 0)
		r = put_names(&w);
	if (r == 0)
		r = put_lit(out, "],\n");
	if (r == 0 && w.s)
		r = put_frames(&w);
	if (r == 0)
		r = view_buf_printf(out,
		                    "\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"spans\":%" PRIu64
		                    ",\"spans_left_out\":%" PRIu64 ",\"samples\":%" PRIu64
		                    ",\"samples_left_out\":%" PRIu64 ",\"events_max\":%u}}\n",
		                    spans, spans_out, w.events, w.left_out, VIEW_TRACE_MAX_EVENTS);
	free(w.who);
	free(w.mark);
	return r;
}
