/*
 * labels-fill.c — writes series with labels into a store through the
 * store API (store_batch_series with a key's labels, store_batch_add),
 * for the view's tests of @cgroup, @container, @thread and `about`,
 * without the recorder or an importer.  Each line of standard input is
 * seven tab-separated fields:
 *
 *   HOST  BINARY  VERSION  LABELS  WHEN  SAMPLES  frame;frame;...;leaf
 *
 * LABELS is "-" for none, else KEY=VALUE pairs joined by '|'; a value may
 * write any byte as \xNN, and is made valid with store_label_value_clean()
 * (a control byte becomes the text "\xNN"), as the recorder does.  WHEN is
 * Unix seconds; the event is cpu-clock, the weight SAMPLES x 1,000,000
 * nanoseconds.  One batch per line.
 *
 *   labels-fill STORE < lines
 *
 * Test code: it prints and exits on failure.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static void die(const char *what, int r)
{
	fprintf(stderr, "labels-fill: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

/* Decodes \xNN in s[0..len) in place; returns the new length. */
static size_t unescape(char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' &&
		    isxdigit((unsigned char)s[i + 2]) && isxdigit((unsigned char)s[i + 3])) {
			char hex[3] = {s[i + 2], s[i + 3], '\0'};
			s[o++] = (char)strtoul(hex, NULL, 16);
			i += 3;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

/* The canonical labels of "k=v|k=v" ("-": none) into *out. */
static void make_labels(char *spec, char **out)
{
	struct store_label l[16];
	char *vals[16];
	size_t n = 0;
	int r;

	if (strcmp(spec, "-") == 0) {
		*out = NULL;
		return;
	}
	for (char *save = NULL, *p = strtok_r(spec, "|", &save); p;
	     p = strtok_r(NULL, "|", &save)) {
		char *eq = strchr(p, '=');
		if (!eq || n == 16)
			die("labels: KEY=VALUE expected", EINVAL);
		*eq = '\0';
		size_t vl = unescape(eq + 1, strlen(eq + 1));
		if ((r = store_label_value_clean(eq + 1, vl, &vals[n])) < 0)
			die("store_label_value_clean", r);
		l[n].key = p;
		l[n].value = vals[n];
		n++;
	}
	if ((r = store_labels_make(l, n, out)) < 0)
		die("store_labels_make", r);
	for (size_t i = 0; i < n; i++)
		free(vals[i]);
}

int main(int argc, char **argv)
{
	char err[256], line[8192];
	struct store *s;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: labels-fill STORE < lines\n");
		return 2;
	}
	if (store_open(argv[1], STORE_CREATE, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "labels-fill: %s\n", err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *f[7], *save = NULL;
		size_t n = 0;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		for (char *p = strtok_r(line, "\t", &save); p && n < 7;
		     p = strtok_r(NULL, "\t", &save))
			f[n++] = p;
		if (n != 7)
			die("a line of 7 tab-separated fields expected", EINVAL);
		char *labels;
		make_labels(f[3], &labels);
		struct store_series_key k = {f[0], f[1], f[2], "cpu-clock", "nanoseconds", labels};
		struct store_batch *b = store_batch_new(s);
		uint32_t series, node = STORE_ROOT_NODE, frame;
		if (!b)
			die("store_batch_new", ENOMEM);
		if ((r = store_batch_series(b, &k, &series)) < 0)
			die("store_batch_series", r);
		for (char *sv = NULL, *fr = strtok_r(f[6], ";", &sv); fr;
		     fr = strtok_r(NULL, ";", &sv)) {
			struct store_frame sf = {.name = fr, .name_len = strlen(fr)};
			if ((r = store_batch_frame(b, &sf, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				die("intern", r);
		}
		uint64_t samples = strtoull(f[5], NULL, 10);
		if ((r = store_batch_add(b, series, strtoll(f[4], NULL, 10), node, samples,
		                         samples * 1000000)) < 0)
			die("store_batch_add", r);
		if ((r = store_batch_commit(b)) < 0)
			die(store_errmsg(s), r);
		store_batch_free(b);
		free(labels);
	}
	store_close(s);
	return 0;
}
