/*
 * about.c — what a version directory's `about` file says of the series a
 * tree was built from: the binary, version (and the build id when the
 * version is one), event, the first and last moment, and who ran it: the
 * hosts and the values of the labels cgroup, container, thread, exe and
 * cmdline (store.h, "labels").  The text is made once from the series
 * (view_tree_set_about(), given them by whoever built the tree, which
 * knows the series a directory sums) and kept in the tree, so rendering
 * reads nothing.  Names go through view_text_append() as in every text
 * file, one fact per line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view-internal.h"

/* The values of one key across the series: distinct, sorted bytewise. */
struct about_values {
	const char **v;
	size_t *len;
	size_t n, cap;
};

static int values_add(struct about_values *a, const char *v, size_t len)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->len[i] == len && memcmp(a->v[i], v, len) == 0)
			return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		const char **nv = realloc(a->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		a->v = nv;
		size_t *nl = realloc(a->len, cap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		a->len = nl;
		a->cap = cap;
	}
	a->v[a->n] = v;
	a->len[a->n++] = len;
	return 0;
}

static void values_sort(struct about_values *a)
{
	for (size_t i = 1; i < a->n; i++)
		for (size_t j = i; j > 0; j--) {
			size_t l = a->len[j - 1] < a->len[j] ? a->len[j - 1] : a->len[j];
			int c = memcmp(a->v[j - 1], a->v[j], l);
			if (c < 0 || (c == 0 && a->len[j - 1] <= a->len[j]))
				break;
			const char *tv = a->v[j];
			size_t tl = a->len[j];
			a->v[j] = a->v[j - 1], a->len[j] = a->len[j - 1];
			a->v[j - 1] = tv, a->len[j - 1] = tl;
		}
}

/* "<plural> N", then "<key> VALUE" for the first VIEW_ABOUT_LIST of
 * them; nothing when there are none. */
static int put_values(struct view_buf *b, const char *key, const char *plural,
                      struct about_values *a)
{
	int r;

	if (!a->n)
		return 0;
	values_sort(a);
	if ((r = view_buf_printf(b, "%s %zu\n", plural, a->n)) < 0)
		return r;
	for (size_t i = 0; i < a->n && i < VIEW_ABOUT_LIST; i++)
		if ((r = view_buf_printf(b, "%s ", key)) < 0 ||
		    (r = view_text_append(b, a->v[i], a->len[i], 0)) < 0 ||
		    (r = view_buf_append(b, "\n", 1)) < 0)
			return r;
	return 0;
}

/* The version as a build id: the recorder names a version by the first
 * hex digits of the executable's GNU build id (8 to 40 of them). */
static bool version_is_build_id(const char *v)
{
	size_t n = strlen(v);

	if (n < 8 || n > 40)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return false;
	return true;
}

enum { A_HOST, A_EXE, A_CGROUP, A_CONTAINER, A_THREAD, A_CMDLINE, A_KINDS };

static const struct {
	const char *key, *plural;
} about_keys[A_KINDS] = {
        [A_HOST] = {"host", "hosts"},
        [A_EXE] = {STORE_LABEL_EXE, "exes"},
        [A_CGROUP] = {STORE_LABEL_CGROUP, "cgroups"},
        [A_CONTAINER] = {STORE_LABEL_CONTAINER, "containers"},
        [A_THREAD] = {STORE_LABEL_THREAD, "threads"},
        [A_CMDLINE] = {STORE_LABEL_CMDLINE, "cmdlines"},
};

static int make_about(const struct store_series *series, size_t n, struct view_buf *b)
{
	struct about_values vals[A_KINDS] = {0};
	int64_t first = INT64_MAX, last = INT64_MIN;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		const struct store_series *s = &series[i];
		if (s->samples && s->first_us < first)
			first = s->first_us;
		if (s->samples && s->last_us > last)
			last = s->last_us;
		if (s->host && *s->host)
			r = values_add(&vals[A_HOST], s->host, strlen(s->host));
		for (int k = A_EXE; k < A_KINDS && r == 0; k++) {
			size_t len;
			const char *v = store_labels_get(s->labels, about_keys[k].key, &len);
			if (v)
				r = values_add(&vals[k], v, len);
		}
	}
	const struct store_series *f = &series[0];
	if (r == 0 && (r = view_buf_printf(b, "binary ")) == 0 &&
	    (r = view_text_append(b, f->binary, strlen(f->binary), 0)) == 0 &&
	    (r = view_buf_printf(b, "\nversion ")) == 0 &&
	    (r = view_text_append(b, f->version, strlen(f->version), 0)) == 0 &&
	    (r = view_buf_append(b, "\n", 1)) == 0 && version_is_build_id(f->version))
		r = view_buf_printf(b, "build_id %s\n", f->version);
	if (r == 0 && (r = view_buf_printf(b, "event ")) == 0 &&
	    (r = view_text_append(b, f->event, strlen(f->event), 0)) == 0 &&
	    (r = view_buf_printf(b, "\nunit ")) == 0 &&
	    (r = view_text_append(b, f->unit, strlen(f->unit), 0)) == 0)
		r = view_buf_append(b, "\n", 1);
	if (r == 0 && first <= last) {
		char fu[40], ft[40], lu[40], lt[40];
		view_format_us(first, fu);
		view_format_time_us(first, ft);
		view_format_us(last, lu);
		view_format_time_us(last, lt);
		r = view_buf_printf(b, "first %s %s\nlast %s %s\n", fu, ft, lu, lt);
	}
	for (int k = 0; k < A_KINDS && r == 0; k++)
		r = put_values(b, about_keys[k].key, about_keys[k].plural, &vals[k]);
	for (int k = 0; k < A_KINDS; k++) {
		free(vals[k].v);
		free(vals[k].len);
	}
	return r;
}

int view_tree_set_about(struct view_tree *t, const struct store_series *series, size_t n)
{
	struct view_buf b = {0};
	int r;

	if (n == 0)
		return -EINVAL;
	r = make_about(series, n, &b);
	if (r < 0) {
		view_buf_free(&b);
		return r;
	}
	free(t->src.about);
	t->src.about = b.data;
	t->src.about_len = b.len;
	return 0;
}

uint64_t view_about_size(const struct view_tree *t, uint32_t node)
{
	(void)node;
	return t->src.about ? t->src.about_len : 0;
}

int view_render_about(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	(void)node;
	return t->src.about ? view_buf_append(out, t->src.about, t->src.about_len) : 0;
}
