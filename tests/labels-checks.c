/*
 * labels-checks.c — the checks of labels-checks.h, through store.h only.
 */
#include "labels-checks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint32_t series_of(struct store_batch *b, const char *binary, const char *labels)
{
	struct store_series_key k = {NULL, binary, "1", "cpu", "count", labels};
	uint32_t id = 0;

	CHECK_OK(store_batch_series(b, &k, &id));
	return id;
}

/* The listing of `binary`'s series as "labels=samples" joined by ';'
 * (labels' '\n' shown as ','). */
static void list_of(struct store *s, const char *binary, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0, used = 0;

	out[0] = '\0';
	CHECK_OK(store_series_list(s, &l, &n));
	for (size_t i = 0; i < n && used < len; i++) {
		if (strcmp(l[i].binary, binary))
			continue;
		CHECK(l[i].labels != NULL);
		used += (size_t)snprintf(out + used, len - used, "%s[", used ? ";" : "");
		for (const char *p = l[i].labels; p && *p && used < len; p++)
			out[used++] = *p == '\n' ? ',' : *p;
		if (used < len)
			used += (size_t)snprintf(out + used, len - used, "]=%" PRIu64,
			                         l[i].samples);
	}
	if (used >= len)
		out[len - 1] = '\0';
	store_series_free(l, n);
}

static const char want_roundtrip[] = "[]=1;[cgroup=system.slice/x.service,thread=b]=4;[thread=a]=2";

void labels_check_roundtrip(struct store *w, struct store *r, const char *binary, uint32_t ids[3])
{
	const char *both = "cgroup=system.slice/x.service\nthread=b";
	struct store_batch *b = store_batch_new(w);
	char got[1024];
	uint32_t id;

	CHECK(b != NULL);
	if (!b)
		return;
	ids[0] = series_of(b, binary, NULL);
	CHECK(series_of(b, binary, "") == ids[0]);
	ids[1] = series_of(b, binary, "thread=a");
	ids[2] = series_of(b, binary, both);
	CHECK(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	CHECK(series_of(b, binary, "thread=a") == ids[1]);
	/* not canonical: out of order, a trailing newline, a bad key */
	struct store_series_key k = {NULL,  binary,  "1",
	                             "cpu", "count", "thread=b\ncgroup=system.slice/x.service"};
	CHECK(store_batch_series(b, &k, &id) == -EINVAL);
	k.labels = "thread=a\n";
	CHECK(store_batch_series(b, &k, &id) == -EINVAL);
	k.labels = "Thread=a";
	CHECK(store_batch_series(b, &k, &id) == -EINVAL);
	CHECK(strstr(store_errmsg(w), "labels") != NULL);
	CHECK_OK(store_batch_add(b, ids[0], 60, STORE_ROOT_NODE, 1, 1));
	CHECK_OK(store_batch_add(b, ids[1], 60, STORE_ROOT_NODE, 2, 2));
	CHECK_OK(store_batch_add(b, ids[2], 60, STORE_ROOT_NODE, 4, 4));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	/* sorted by labels within (binary, version, event, host) */
	list_of(w, binary, got, sizeof(got));
	CHECKF(!strcmp(got, want_roundtrip), "writer lists %s", got);
	if (r) {
		CHECK(store_refresh(r) >= 0);
		list_of(r, binary, got, sizeof(got));
		CHECKF(!strcmp(got, want_roundtrip), "reader lists %s", got);
	}
}

void labels_check_reopen(struct store *w, const char *binary, const uint32_t ids[3])
{
	struct store_batch *b = store_batch_new(w);
	char got[1024];

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(series_of(b, binary, NULL) == ids[0]);
	CHECK(series_of(b, binary, "thread=a") == ids[1]);
	CHECK(series_of(b, binary, "cgroup=system.slice/x.service\nthread=b") == ids[2]);
	store_batch_free(b);
	list_of(w, binary, got, sizeof(got));
	CHECKF(!strcmp(got, want_roundtrip), "after reopen: %s", got);
}

static int add_names(struct store *w, const char *binary, int from, int to, bool commit)
{
	struct store_batch *b = store_batch_new(w);
	char labels[64];

	CHECK(b != NULL);
	if (!b)
		return -1;
	for (int i = from; i < to; i++) {
		snprintf(labels, sizeof(labels), "thread=t%03d", i);
		uint32_t id = series_of(b, binary, labels);
		CHECK_OK(store_batch_add(b, id, 60, STORE_ROOT_NODE, (uint64_t)i + 1, 1));
	}
	if (commit)
		CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	return 0;
}

void labels_check_bound(struct store *w, const char *binary)
{
	struct store_series *l = NULL;
	size_t n = 0, labelled = 0, other = 0;
	uint64_t sum = 0, other_sum = 0, want_other = 0;

	add_names(w, binary, 0, 200, true);
	/* a batch thrown away takes no place under the bound */
	add_names(w, binary, 1000, 1100, false);
	add_names(w, binary, 200, 300, true);
	struct store_batch *b = store_batch_new(w);
	CHECK(b != NULL);
	if (b) {
		uint32_t o = series_of(b, binary, "cgroup=c\nthread=t999");
		CHECK(o && o == series_of(b, binary, "cgroup=(other)\nthread=(other)"));
		CHECK_OK(store_batch_add(b, o, 60, STORE_ROOT_NODE, 7, 7));
		CHECK_OK(store_batch_commit(b));
		store_batch_free(b);
	}
	CHECK_OK(store_series_list(w, &l, &n));
	for (size_t i = 0; i < n; i++) {
		if (strcmp(l[i].binary, binary))
			continue;
		if (!strcmp(l[i].labels, "cgroup=(other)\nthread=(other)")) {
			CHECK(l[i].samples == 7);
			continue;
		}
		sum += l[i].samples;
		if (!strcmp(l[i].labels, "thread=" STORE_LABEL_OTHER)) {
			other++;
			other_sum += l[i].samples;
		} else {
			int t = -1;
			CHECKF(sscanf(l[i].labels, "thread=t%d", &t) == 1 && t >= 0 &&
			               t < STORE_LABEL_SETS_MAX && l[i].samples == (uint64_t)t + 1,
			       "series %s with %" PRIu64, l[i].labels, l[i].samples);
			labelled++;
		}
	}
	store_series_free(l, n);
	for (int i = STORE_LABEL_SETS_MAX; i < 300; i++)
		want_other += (uint64_t)i + 1;
	CHECKF(labelled == STORE_LABEL_SETS_MAX && other == 1, "%zu labelled, %zu (other)",
	       labelled, other);
	CHECKF(sum == 300 * 301 / 2 && other_sum == want_other,
	       "sum %" PRIu64 ", (other) %" PRIu64 " (want %" PRIu64 ")", sum, other_sum,
	       want_other);
}
