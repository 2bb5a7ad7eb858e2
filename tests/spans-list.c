/*
 * spans-list.c — a store's spans record, one line a span, for the
 * span-records test: every sample of every series of event
 * STORE_EVENT_SPANS ("spans") whose detail the recent tier holds,
 *     LABELS<TAB>BINARY<TAB>TIME_US<TAB>PID<TAB>TID<TAB>WEIGHT<TAB>SPAN<TAB>PARENT<TAB>CHAIN
 * where LABELS is the series' canonical labels with '\n' written as '|'
 * ("-" for none), WEIGHT the span's duration in ns, SPAN and PARENT the
 * ids, and CHAIN its node's frame names root first, joined by ';'.
 * Then one line per series of the counts,
 *     #COUNTS<TAB>LABELS<TAB>BINARY<TAB>SAMPLES<TAB>WEIGHT
 * summed over its buckets.  With EVENT, the series of that event instead
 * (e.g. cpu-clock: each sample's SPAN is its innermost span's id).
 *   usage: spans-list STORE [EVENT]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

struct ctx {
	struct store *s;
	const struct store_series *se;
	const char *labels;
	uint64_t samples, weight;
};

static void print_chain(struct store *s, uint32_t node)
{
	uint32_t path[512];
	size_t n = 0;

	while (node != STORE_ROOT_NODE && n < 512) {
		uint32_t parent, frame;
		if (store_node_get(s, node, &parent, &frame) < 0)
			break;
		path[n++] = frame;
		node = parent;
	}
	for (size_t i = n; i-- > 0;) {
		struct store_frame f;
		if (store_frame_get(s, path[i], &f) < 0)
			continue;
		printf("%s%.*s", i + 1 < n ? ";" : "", (int)f.name_len, f.name);
	}
}

static int on_sample(void *arg, const struct store_sample *smp)
{
	struct ctx *c = arg;

	printf("%s\t%s\t%" PRId64 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	       "\t",
	       c->labels, c->se->binary, smp->time_us, smp->pid, smp->tid, smp->weight, smp->span,
	       smp->parent);
	print_chain(c->s, smp->node);
	putchar('\n');
	return 0;
}

static int on_count(void *arg, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct ctx *c = arg;
	(void)bucket;
	(void)node;
	c->samples += samples;
	c->weight += weight;
	return 0;
}

int main(int argc, char **argv)
{
	struct store *s;
	struct store_series *list;
	size_t n;
	char err[512];
	int rc = 0;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: spans-list STORE [EVENT]\n");
		return 2;
	}
	if (store_open(argv[1], STORE_READONLY, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "spans-list: %s\n", err);
		return 1;
	}
	if (store_series_list(s, &list, &n) < 0) {
		fprintf(stderr, "spans-list: %s\n", store_errmsg(s));
		store_close(s);
		return 1;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (strcmp(list[i].event, argc == 3 ? argv[2] : STORE_EVENT_SPANS) != 0)
			continue;
		char *labels = strdup(list[i].labels[0] ? list[i].labels : "-");
		if (!labels) {
			rc = 1;
			break;
		}
		for (char *p = labels; *p; p++)
			if (*p == '\n')
				*p = '|';
		struct ctx c = {.s = s, .se = &list[i], .labels = labels};
		if (store_series_samples(s, list[i].id, INT64_MIN, INT64_MAX, on_sample, &c) < 0 ||
		    store_series_counts(s, list[i].id, INT64_MIN, INT64_MAX, on_count, &c) < 0)
			rc = 1;
		else
			printf("#COUNTS\t%s\t%s\t%" PRIu64 "\t%" PRIu64 "\n", labels,
			       list[i].binary, c.samples, c.weight);
		free(labels);
	}
	store_series_free(list, n);
	store_close(s);
	if (rc)
		fprintf(stderr, "spans-list: failed\n");
	return rc;
}
