/*
 * labels.c — the labels an import gives its series (store.h, "labels"):
 * --label KEY=VALUE checked with a message that names what is wrong,
 * the file's own labels joined with --label's (a key in both refused),
 * and the key a format's free-form label name (pprof's) is stored under.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define KEY_RULE "1 to 32 bytes of a-z, 0-9 and _, starting with a letter"

static bool key_ok(const char *k, size_t n)
{
	if (n == 0 || n > STORE_LABEL_KEY_MAX || k[0] < 'a' || k[0] > 'z')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

struct pairs {
	struct store_label *l;
	size_t n, cap;
	char **owned; /* the NUL-terminated copies l points at */
	size_t nowned;
};

static int pairs_add(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	struct pairs *p = ctx;
	int rc = import_grow((void **)&p->l, &p->cap, p->n + 1, sizeof(*p->l));
	if (rc < 0)
		return rc;
	char **no = realloc(p->owned, (p->nowned + 2) * sizeof(*no));
	if (!no)
		return -ENOMEM;
	p->owned = no;
	char *key = strndup(k, kl), *val = strndup(v, vl);
	if (!key || !val) {
		free(key);
		free(val);
		return -ENOMEM;
	}
	p->owned[p->nowned++] = key;
	p->owned[p->nowned++] = val;
	p->l[p->n].key = key;
	p->l[p->n].value = val;
	p->n++;
	return 0;
}

static void pairs_free(struct pairs *p)
{
	for (size_t i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	free(p->l);
}

int import_label_arg(char **labels, const char *arg, char *err, size_t errlen)
{
	char ex[64];
	const char *eq = strchr(arg, '=');
	size_t kl = eq ? (size_t)(eq - arg) : strlen(arg);

	import_excerpt(ex, sizeof(ex), arg, kl);
	if (!eq) {
		snprintf(err, errlen, "--label: expected KEY=VALUE, got \"%s\"", ex);
		return -EINVAL;
	}
	if (!key_ok(arg, kl)) {
		snprintf(err, errlen, "--label: key \"%s\" is not a label key; expected " KEY_RULE,
		         ex);
		return -EINVAL;
	}
	const char *v = eq + 1;
	size_t vl = strlen(v);
	if (vl == 0 || vl > STORE_LABEL_VALUE_MAX) {
		snprintf(err, errlen,
		         "--label %s: value of %zu bytes; expected 1 to %d bytes without control "
		         "characters",
		         ex, vl, STORE_LABEL_VALUE_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < vl; i++) {
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			snprintf(
			        err, errlen,
			        "--label %s: value holds control byte 0x%02x at byte %zu; expected "
			        "1 to %d bytes without control characters",
			        ex, (unsigned char)v[i], i, STORE_LABEL_VALUE_MAX);
			return -EINVAL;
		}
	}
	if (*labels && store_labels_get(*labels, ex, &(size_t){0})) {
		snprintf(err, errlen, "--label %s: given twice; expected each key once", ex);
		return -EINVAL;
	}

	struct pairs p = {0};
	char *key = strndup(arg, kl), *out = NULL;
	int rc = key ? store_labels_each(*labels, pairs_add, &p) : -ENOMEM;
	if (rc == 0)
		rc = pairs_add(&p, key, kl, v, vl);
	if (rc == 0)
		rc = store_labels_make(p.l, p.n, &out);
	free(key);
	pairs_free(&p);
	if (rc < 0) {
		if (rc == -EINVAL)
			snprintf(err, errlen, "--label %s: not a valid label", ex);
		return rc;
	}
	free(*labels);
	*labels = out;
	return 0;
}

int import_labels_join(struct import_ctx *ctx, const char *file, char **out)
{
	const char *opt = ctx->opt ? ctx->opt->labels : NULL;
	struct pairs p = {0};
	int rc;

	*out = NULL;
	if (!opt || !*opt)
		return (*out = strdup(file ? file : "")) ? 0 : -ENOMEM;
	if (!file || !*file)
		return (*out = strdup(opt)) ? 0 : -ENOMEM;
	rc = store_labels_each(opt, pairs_add, &p);
	size_t nopt = p.n;
	if (rc == 0)
		rc = store_labels_each(file, pairs_add, &p);
	for (size_t i = 0; rc == 0 && i < nopt; i++) {
		for (size_t j = nopt; j < p.n; j++) {
			if (strcmp(p.l[i].key, p.l[j].key) != 0)
				continue;
			char fv[64], ov[64];
			import_excerpt(ov, sizeof(ov), p.l[i].value, strlen(p.l[i].value));
			import_excerpt(fv, sizeof(fv), p.l[j].value, strlen(p.l[j].value));
			rc = import_fail(
			        ctx, ctx->line,
			        "--label %s=%s names a label the input gives its samples "
			        "too (%s=%s); expected --label keys the input does not use",
			        p.l[i].key, ov, p.l[j].key, fv);
			break;
		}
	}
	if (rc == 0)
		rc = store_labels_make(p.l, p.n, out);
	pairs_free(&p);
	return rc;
}

size_t import_label_key(const char *name, size_t n, char out[IMPORT_LABEL_KEY_SIZE])
{
	size_t o = 0;

	bool letter =
	        n > 0 && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'));
	if (!letter) {
		memcpy(out, IMPORT_LABEL_KEY_PREFIX, strlen(IMPORT_LABEL_KEY_PREFIX));
		o = strlen(IMPORT_LABEL_KEY_PREFIX);
	}
	for (size_t i = 0; i < n && o < STORE_LABEL_KEY_MAX; i++) {
		char c = name[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			c = '_';
		out[o++] = c;
	}
	out[o] = '\0';
	return o;
}
