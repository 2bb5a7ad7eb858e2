/*
 * spans-fill.c — writes spanned samples and span records into a store
 * through the store API (store_batch_sample), for the view's tests of
 * @span, `spans` and `trace.json` (test-view-spans.sh), without the
 * recorder.  Each line of standard input is ten tab-separated fields:
 *
 *   S  BINARY  VERSION  LABELS  TIME_US  PID  TID  WEIGHT  SPAN    frame;...;leaf
 *   R  BINARY  VERSION  LABELS  START_US PID  TID  DUR_NS  ID:PARENT span;...;span
 *
 * S is a sample of event cpu-clock (nanoseconds) taken inside span SPAN
 * (0: none); R a span's record, a sample of event STORE_EVENT_SPANS whose
 * node is the chain of span names (frames of kind STORE_FRAME_SPAN; a
 * last frame "[unended]" marks a span closed at exit).  LABELS is "-" for
 * none, else KEY=VALUE pairs joined by '|'.  All lines go in one batch.
 *
 *   spans-fill STORE < lines
 *
 * Test code: it prints and exits on failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static void die(const char *what, int r)
{
	fprintf(stderr, "spans-fill: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

/* The canonical labels of "k=v|k=v" ("-": none) into *out. */
static void make_labels(char *spec, char **out)
{
	struct store_label l[16];
	size_t n = 0;
	int r;

	*out = NULL;
	if (strcmp(spec, "-") == 0)
		return;
	for (char *save = NULL, *p = strtok_r(spec, "|", &save); p;
	     p = strtok_r(NULL, "|", &save)) {
		char *eq = strchr(p, '=');
		if (!eq || n == 16)
			die("labels: KEY=VALUE expected", EINVAL);
		*eq = '\0';
		l[n].key = p;
		l[n].value = eq + 1;
		n++;
	}
	if ((r = store_labels_make(l, n, out)) < 0)
		die("store_labels_make", r);
}

int main(int argc, char **argv)
{
	char err[256], line[8192];
	struct store *s;
	struct store_batch *b;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: spans-fill STORE < lines\n");
		return 2;
	}
	if (store_open(argv[1], STORE_CREATE, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "spans-fill: %s\n", err);
		return 1;
	}
	if (!(b = store_batch_new(s)))
		die("store_batch_new", ENOMEM);
	while (fgets(line, sizeof(line), stdin)) {
		char *f[10], *save = NULL;
		size_t n = 0;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		for (char *p = strtok_r(line, "\t", &save); p && n < 10;
		     p = strtok_r(NULL, "\t", &save))
			f[n++] = p;
		if (n != 10 || (strcmp(f[0], "S") != 0 && strcmp(f[0], "R") != 0))
			die("a line of 10 tab-separated fields, S or R first, expected", EINVAL);
		bool rec = f[0][0] == 'R';
		char *labels;
		make_labels(f[3], &labels);
		struct store_series_key k = {NULL,          f[1],
		                             f[2],          rec ? STORE_EVENT_SPANS : "cpu-clock",
		                             "nanoseconds", labels};
		uint32_t series, node = STORE_ROOT_NODE, frame;
		if ((r = store_batch_series(b, &k, &series)) < 0)
			die("store_batch_series", r);
		for (char *sv = NULL, *fr = strtok_r(f[9], ";", &sv); fr;
		     fr = strtok_r(NULL, ";", &sv)) {
			struct store_frame sf = {.name = fr,
			                         .name_len = strlen(fr),
			                         .kind = rec ? STORE_FRAME_SPAN : STORE_FRAME_USER};
			if ((r = store_batch_frame(b, &sf, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				die("intern", r);
		}
		struct store_sample smp = {.time_us = strtoll(f[4], NULL, 10),
		                           .node = node,
		                           .pid = (uint32_t)strtoul(f[5], NULL, 10),
		                           .tid = (uint32_t)strtoul(f[6], NULL, 10),
		                           .weight = strtoull(f[7], NULL, 10)};
		char *colon = strchr(f[8], ':');
		smp.span = strtoull(f[8], NULL, 10);
		smp.parent = rec && colon ? strtoull(colon + 1, NULL, 10) : 0;
		if ((r = store_batch_sample(b, series, &smp)) < 0)
			die("store_batch_sample", r);
		free(labels);
	}
	if ((r = store_batch_commit(b)) < 0)
		die(store_errmsg(s), r);
	store_batch_free(b);
	store_close(s);
	return 0;
}
