/*
 * view-fixture.h — helpers for the view library's unit tests
 * (test-functions.c, test-diff.c, test-window.c, test-render.c): a
 * scratch store filled from folded lines at given times, trees built from
 * it, and an independent brute-force reading of folded lines to compare
 * the library with.  Test code: it prints, and exits on set-up failures.
 */
#ifndef FLAMEFS_VIEW_FIXTURE_H
#define FLAMEFS_VIEW_FIXTURE_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store.h"
#include "view.h"

static __attribute__((unused)) void fx_die(const char *what, int r)
{
	fprintf(stderr, "test set-up: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(2);
}

static __attribute__((unused)) char fx_dir[64];

static __attribute__((unused)) void fx_cleanup(void)
{
	char cmd[128];

	if (fx_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", fx_dir);
	}
}

/* A new empty store in a scratch directory, removed at exit. */
static __attribute__((unused)) struct store *fx_store(void)
{
	char err[256];
	struct store *s;

	snprintf(fx_dir, sizeof(fx_dir), "/tmp/flamefs-unit.XXXXXX");
	if (!mkdtemp(fx_dir))
		fx_die("mkdtemp", errno);
	atexit(fx_cleanup);
	char path[128];
	snprintf(path, sizeof(path), "%s/store", fx_dir);
	if (store_open(path, STORE_CREATE, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "test set-up: %s\n", err);
		exit(2);
	}
	return s;
}

/* Adds folded lines ("a;b;c W\n"...) to series (binary, version, event)
 * at time `when`, in one batch.  Samples are 1 per line. */
static __attribute__((unused)) void fx_add(struct store *s, const char *binary, const char *version,
                                           const char *event, int64_t when, const char *lines)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, binary, version, event, "count", NULL};
	uint32_t series;
	int r;

	if (!b)
		fx_die("store_batch_new", ENOMEM);
	if ((r = store_batch_series(b, &k, &series)) < 0)
		fx_die("store_batch_series", r);
	for (const char *p = lines; *p;) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		const char *sp = end;
		while (sp > p && sp[-1] != ' ')
			sp--;
		uint64_t w = strtoull(sp, NULL, 10);
		uint32_t node = STORE_ROOT_NODE;
		for (const char *f = p; f < sp - 1;) {
			const char *semi = memchr(f, ';', (size_t)(sp - 1 - f));
			const char *fe = semi ? semi : sp - 1;
			struct store_frame fr = {.name = f, .name_len = (size_t)(fe - f)};
			uint32_t frame;
			if ((r = store_batch_frame(b, &fr, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				fx_die("store_batch_node", r);
			f = fe + 1;
		}
		if ((r = store_batch_add(b, series, when, node, 1, w)) < 0)
			fx_die("store_batch_add", r);
		p = nl ? nl + 1 : end;
	}
	if ((r = store_batch_commit(b)) < 0)
		fx_die("store_batch_commit", r);
	store_batch_free(b);
}

/* The tree of every series of (binary, version), all times. */
static __attribute__((unused)) struct view_tree *fx_tree(struct store *s, const char *binary,
                                                         const char *version)
{
	struct store_series *list;
	size_t n, k = 0;
	struct view_tree *t;
	int r;

	if ((r = store_series_list(s, &list, &n)) < 0)
		fx_die("store_series_list", r);
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].binary, binary) == 0 && strcmp(list[i].version, version) == 0) {
			struct store_series tmp = list[k];
			list[k++] = list[i];
			list[i] = tmp;
		}
	if (k == 0)
		fx_die("no such series", ENOENT);
	if ((r = view_tree_build(s, list, k, INT64_MIN, INT64_MAX, &t)) < 0)
		fx_die("view_tree_build", r);
	store_series_free(list, n);
	return t;
}

/* The child of the top root: the binary node. */
static __attribute__((unused)) uint32_t fx_binary(const struct view_tree *t)
{
	return view_node_child(t, VIEW_ROOT, 0);
}

static __attribute__((unused)) char *fx_render(view_render_fn fn, const struct view_tree *t,
                                               uint32_t node)
{
	struct view_buf b = {0};
	int r = fn(t, node, &b);

	if (r < 0)
		fx_die("render", r);
	if (!b.data) {
		b.data = strdup("");
		if (!b.data)
			fx_die("strdup", ENOMEM);
	}
	return b.data;
}

/* ---- brute force over folded lines ------------------------------------- */

#define FX_MAX_LINES  4096
#define FX_MAX_FRAMES 64

/* One stack as frames. */
struct fx_stack {
	char *frames[FX_MAX_FRAMES];
	int n;
	uint64_t w;
};

/* Splits "a;b;c W" lines (with a prefix frame, e.g. the binary). */
static __attribute__((unused)) int fx_parse(const char *prefix, const char *lines,
                                            struct fx_stack *out)
{
	int n = 0;
	char *copy = strdup(lines), *save = NULL;

	if (!copy)
		fx_die("strdup", ENOMEM);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');
		struct fx_stack *st = &out[n++];
		*sp = '\0';
		st->w = strtoull(sp + 1, NULL, 10);
		st->n = 0;
		if (prefix)
			st->frames[st->n++] = strdup(prefix);
		char *s2 = NULL;
		for (char *f = strtok_r(l, ";", &s2); f; f = strtok_r(NULL, ";", &s2))
			st->frames[st->n++] = strdup(f);
	}
	free(copy);
	return n;
}

static __attribute__((unused)) void fx_free_stacks(struct fx_stack *st, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < st[i].n; j++)
			free(st[i].frames[j]);
}

static __attribute__((unused)) int fx_cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Merges "stack W" lines (summing equal stacks, dropping zeros) and sorts
 * them bytewise: what a folded file of them must read. */
static __attribute__((unused)) char *fx_merge_lines(char **lines, uint64_t *w, int n)
{
	struct view_buf out = {0};
	size_t cap = n > 0 ? (size_t)n : 1;
	int *order = malloc(cap * sizeof(*order));
	char **sorted = malloc(cap * sizeof(*sorted));

	if (!order || !sorted)
		fx_die("malloc", ENOMEM);
	for (int i = 0; i < n; i++)
		sorted[i] = lines[i];
	qsort(sorted, (size_t)n, sizeof(*sorted), fx_cmp_line);
	for (int i = 0; i < n;) {
		uint64_t sum = 0;
		int j = i;
		for (; j < n && strcmp(sorted[j], sorted[i]) == 0; j++)
			for (int k = 0; k < n; k++)
				if (lines[k] == sorted[j])
					sum += w[k];
		if (sum) {
			char num[32];
			snprintf(num, sizeof(num), " %" PRIu64 "\n", sum);
			view_buf_append(&out, sorted[i], strlen(sorted[i]));
			view_buf_append(&out, num, strlen(num));
		}
		i = j;
	}
	free(order);
	free(sorted);
	if (!out.data)
		out.data = strdup("");
	return out.data;
}

/* Joins frames[from..to) (step +1 or -1) with ';'. */
static __attribute__((unused)) char *fx_join(char *const *frames, int from, int to, int step)
{
	struct view_buf b = {0};

	for (int i = from; i != to; i += step) {
		if (b.len)
			view_buf_append(&b, ";", 1);
		view_buf_append(&b, frames[i], strlen(frames[i]));
	}
	if (!b.data)
		b.data = strdup("");
	return b.data;
}

/* Checks total = self + the children's totals at every node. */
static __attribute__((unused)) void fx_check_totals(const struct view_tree *t, const char *what)
{
	for (uint32_t n = 0; n < view_tree_node_count(t); n++) {
		struct view_counts c;
		uint64_t sum = 0;
		view_node_counts(t, n, &c);
		for (uint32_t i = 0; i < view_node_child_count(t, n); i++) {
			struct view_counts cc;
			view_node_counts(t, view_node_child(t, n, i), &cc);
			sum += cc.total_weight;
		}
		CHECKF(c.total_weight == c.self_weight + sum, "%s: node %u", what, n);
	}
}

/* The sum of the counts in a folded text (the last field of each line). */
static __attribute__((unused)) uint64_t fx_folded_sum(const char *folded)
{
	uint64_t sum = 0;

	for (const char *p = folded; *p;) {
		const char *nl = strchr(p, '\n');
		const char *sp = nl;
		while (sp > p && sp[-1] != ' ')
			sp--;
		sum += strtoull(sp, NULL, 10);
		p = nl + 1;
	}
	return sum;
}

#endif
