/*
 * labels-folded.c — a store's stacks with their series' labels, for the
 * record-labels test: one line per stack of every series,
 *     LABELS<TAB>BINARY<TAB>STACK COUNT
 * where LABELS is the series' canonical labels with '\n' written as '|'
 * ("-" for none) and STACK COUNT a folded line of the series (samples).
 * With EVENT, only the series of that event (e.g. off-cpu).
 *   usage: labels-folded STORE [EVENT]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "view.h"

int main(int argc, char **argv)
{
	struct store *s;
	struct store_series *list;
	size_t n;
	char err[512];

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: labels-folded STORE [EVENT]\n");
		return 2;
	}
	if (store_open(argv[1], STORE_READONLY, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "labels-folded: %s\n", err);
		return 1;
	}
	if (store_series_list(s, &list, &n) < 0) {
		fprintf(stderr, "labels-folded: %s\n", store_errmsg(s));
		return 1;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct view_tree *t;
		struct view_buf buf = {0}, *b = &buf;
		if (argc == 3 && strcmp(list[i].event, argv[2]) != 0)
			continue;
		if (view_tree_build(s, &list[i], 1, INT64_MIN, INT64_MAX, &t) < 0) {
			rc = 1;
			break;
		}
		if (view_render_folded(t, view_tree_root(t), b) < 0) {
			rc = 1;
		} else {
			char *labels = strdup(list[i].labels[0] ? list[i].labels : "-");
			for (char *c = labels; c && *c; c++)
				if (*c == '\n')
					*c = '|';
			const char *p = b->data, *end = p ? p + b->len : p;
			while (labels && p < end) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));
				size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
				if (len)
					printf("%s\t%s\t%.*s\n", labels, list[i].binary, (int)len,
					       p);
				p += len + 1;
			}
			if (!labels)
				rc = 1;
			free(labels);
		}
		view_tree_free(t);
		view_buf_free(b);
	}
	store_series_free(list, n);
	store_close(s);
	if (rc)
		fprintf(stderr, "labels-folded: failed\n");
	return rc;
}
