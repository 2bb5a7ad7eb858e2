/*
 * labels.c — a series' labels as one canonical string (store.h, "labels"):
 * making it from pairs, checking it, reading a value, walking the pairs,
 * the label set past the cardinality bound stands for, and making a
 * valid value of any bytes.  Both backends keep labels as this string, so
 * equal label sets are equal bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store-internal.h"

static bool key_valid(const char *k, size_t len)
{
	if (len == 0 || len > STORE_LABEL_KEY_MAX || k[0] < 'a' || k[0] > 'z')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

static bool value_valid(const char *v, size_t len)
{
	if (len == 0 || len > STORE_LABEL_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct store_label *)a)->key, ((const struct store_label *)b)->key);
}

int store_labels_make(const struct store_label *l, size_t n, char **out)
{
	struct store_label *sorted;
	size_t len = 0;
	char *s, *p;

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!l[i].key || !l[i].value || !key_valid(l[i].key, strlen(l[i].key)) ||
		    !value_valid(l[i].value, strlen(l[i].value)))
			return -EINVAL;
		len += strlen(l[i].key) + 1 + strlen(l[i].value) + 1;
	}
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	s = malloc(len + 1);
	if (!sorted || !s) {
		free(sorted);
		free(s);
		return -ENOMEM;
	}
	if (n > 0) { /* l may be NULL for none */
		memcpy(sorted, l, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_label);
	}
	p = s;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(sorted[i - 1].key, sorted[i].key) == 0) {
			free(sorted);
			free(s);
			return -EINVAL;
		}
		size_t kl = strlen(sorted[i].key), vl = strlen(sorted[i].value);
		if (i > 0)
			*p++ = '\n';
		memcpy(p, sorted[i].key, kl);
		p += kl;
		*p++ = '=';
		memcpy(p, sorted[i].value, vl);
		p += vl;
	}
	*p = '\0';
	free(sorted);
	*out = s;
	return 0;
}

int store_labels_each(const char *labels, store_label_fn fn, void *ctx)
{
	const char *p = labels;

	if (!p || !*p)
		return 0;
	for (;;) {
		const char *eq = strchr(p, '=');
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end)
			return -EINVAL;
		int r = fn(ctx, p, (size_t)(eq - p), eq + 1, (size_t)(end - eq - 1));
		if (r)
			return r;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

struct check {
	const char *prev;
	size_t prev_len;
};

static int check_pair(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	struct check *c = ctx;

	if (!key_valid(k, kl) || !value_valid(v, vl))
		return -EINVAL;
	if (c->prev) {
		/* strictly after the previous key, bytewise */
		size_t m = c->prev_len < kl ? c->prev_len : kl;
		int d = memcmp(c->prev, k, m);
		if (d > 0 || (d == 0 && c->prev_len >= kl))
			return -EINVAL;
	}
	c->prev = k;
	c->prev_len = kl;
	return 0;
}

bool store_labels_valid(const char *labels)
{
	struct check c = {0};

	if (!labels || !*labels)
		return true;
	/* a trailing or doubled newline leaves an empty pair, refused */
	return store_labels_each(labels, check_pair, &c) == 0;
}

struct get {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

static int get_pair(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	struct get *g = ctx;

	if (kl != g->key_len || memcmp(k, g->key, kl) != 0)
		return 0;
	g->value = v;
	g->value_len = vl;
	return 1;
}

const char *store_labels_get(const char *labels, const char *key, size_t *len)
{
	struct get g = {.key = key, .key_len = strlen(key)};

	if (store_labels_each(labels, get_pair, &g) != 1)
		return NULL;
	if (len)
		*len = g.value_len;
	return g.value;
}

struct other {
	char *p;
	bool first;
};

static int other_pair(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	struct other *o = ctx;

	(void)v;
	(void)vl;
	if (!o->first)
		*o->p++ = '\n';
	o->first = false;
	memcpy(o->p, k, kl);
	o->p += kl;
	*o->p++ = '=';
	memcpy(o->p, STORE_LABEL_OTHER, strlen(STORE_LABEL_OTHER));
	o->p += strlen(STORE_LABEL_OTHER);
	return 0;
}

int store_labels_other(const char *labels, char **out)
{
	size_t n = labels ? strlen(labels) : 0, pairs = 0;

	for (size_t i = 0; i < n; i++)
		pairs += labels[i] == '\n';
	if (n)
		pairs++;
	/* each pair: its key, '=', the other value and a separator; a key
	 * is shorter than its pair */
	char *s = malloc(n + pairs * (strlen(STORE_LABEL_OTHER) + 2) + 1);
	if (!s)
		return -ENOMEM;
	struct other o = {.p = s, .first = true};
	store_labels_each(labels, other_pair, &o);
	*o.p = '\0';
	*out = s;
	return 0;
}

int store_label_value_clean(const char *v, size_t len, char **out)
{
	static const char hex[] = "0123456789abcdef";
	char *s = malloc(STORE_LABEL_VALUE_MAX + 1);
	size_t n = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		bool esc = c < 0x20 || c == 0x7f || c == '\\';
		size_t need = esc ? 4 : 1;
		if (!esc && c >= 0x80) {
			/* a UTF-8 lead byte and its continuation bytes stay whole */
			size_t k = 1;
			while (i + k < len && ((unsigned char)v[i + k] & 0xc0) == 0x80 && k < 4)
				k++;
			need = k;
		}
		if (n + need > STORE_LABEL_VALUE_MAX)
			break;
		if (esc) {
			s[n++] = '\\';
			s[n++] = 'x';
			s[n++] = hex[c >> 4];
			s[n++] = hex[c & 15];
		} else {
			memcpy(s + n, v + i, need);
			n += need;
			i += need - 1;
		}
	}
	if (n == 0)
		s[n++] = '-';
	s[n] = '\0';
	*out = s;
	return 0;
}

static int other_value(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	(void)ctx;
	(void)k;
	(void)kl;
	return vl != strlen(STORE_LABEL_OTHER) || memcmp(v, STORE_LABEL_OTHER, vl) != 0;
}

bool store_labels_counted(const char *labels)
{
	return labels && *labels && store_labels_each(labels, other_value, NULL) != 0;
}
