/*
 * test-store-labels.c — the store library's unit tests (run by
 * test-store.c) of labels: store/labels.c's functions, and the embedded
 * backend keeping a series' labels as part of its key (labels-checks.c),
 * across a reopen, in a reader, under the bound, and in a store of the
 * schema before labels.
 */
#include "store-fixture.h"
#include "labels-checks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

static void make_is(const struct store_label *l, size_t n, const char *want)
{
	char *out = (char *)"unset";
	int r = store_labels_make(l, n, &out);

	if (!want) {
		CHECKF(r == -EINVAL && out == NULL, "make gave %d", r);
		return;
	}
	CHECK_OK(r);
	CHECK_STR(out, want);
	CHECK(store_labels_valid(out));
	free(out);
}

static int each_join(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	char *s = ctx;
	size_t n = strlen(s);

	snprintf(s + n, 256 - n, "<%.*s|%.*s>", (int)kl, k, (int)vl, v);
	return 0;
}

static int each_stop(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	(void)v;
	(void)vl;
	++*(int *)ctx;
	return kl == 1 && k[0] == 'b' ? 42 : 0;
}

static void clean_is(const char *v, size_t len, const char *want)
{
	char *out = NULL;

	CHECK_OK(store_label_value_clean(v, len, &out));
	CHECK_STR(out, want);
	free(out);
}

void test_labels_api(void)
{
	/* make: any order in, sorted out; empty; duplicate and bad pairs */
	make_is((struct store_label[]){{"thread", "w"}, {"cgroup", "a/b"}, {"exe", "/x y"}}, 3,
	        "cgroup=a/b\nexe=/x y\nthread=w");
	make_is(NULL, 0, "");
	make_is((struct store_label[]){{"a", "1"}, {"a", "2"}}, 2, NULL);
	make_is((struct store_label[]){{"A", "1"}}, 1, NULL);
	make_is((struct store_label[]){{"1a", "1"}}, 1, NULL);
	make_is((struct store_label[]){{"a-b", "1"}}, 1, NULL);
	make_is((struct store_label[]){{"", "1"}}, 1, NULL);
	make_is((struct store_label[]){{"a", ""}}, 1, NULL);
	make_is((struct store_label[]){{"a", "x\ny"}}, 1, NULL);
	make_is((struct store_label[]){{"a", "x\x7f"}}, 1, NULL);
	make_is((struct store_label[]){{"a", NULL}}, 1, NULL);
	make_is((struct store_label[]){{"a_1", "v=w"}}, 1, "a_1=v=w");
	char key[STORE_LABEL_KEY_MAX + 2], val[STORE_LABEL_VALUE_MAX + 2];
	memset(key, 'k', sizeof(key));
	key[STORE_LABEL_KEY_MAX] = '\0';
	memset(val, 'v', sizeof(val));
	val[STORE_LABEL_VALUE_MAX] = '\0';
	char *out = NULL;
	CHECK_OK(store_labels_make((struct store_label[]){{key, val}}, 1, &out));
	free(out);
	key[STORE_LABEL_KEY_MAX] = 'k';
	key[STORE_LABEL_KEY_MAX + 1] = '\0';
	make_is((struct store_label[]){{key, "v"}}, 1, NULL);
	key[STORE_LABEL_KEY_MAX] = '\0';
	val[STORE_LABEL_VALUE_MAX] = 'v';
	val[STORE_LABEL_VALUE_MAX + 1] = '\0';
	make_is((struct store_label[]){{key, val}}, 1, NULL);

	/* valid */
	CHECK(store_labels_valid(NULL) && store_labels_valid(""));
	CHECK(store_labels_valid("a=1\nb=2"));
	CHECK(!store_labels_valid("b=1\na=2"));
	CHECK(!store_labels_valid("a=1\na=2"));
	CHECK(!store_labels_valid("a=1\n"));
	CHECK(!store_labels_valid("\na=1"));
	CHECK(!store_labels_valid("a=1\n\nb=2"));
	CHECK(!store_labels_valid("a"));
	CHECK(!store_labels_valid("a="));
	CHECK(!store_labels_valid("=1"));
	CHECK(!store_labels_valid("a=\t"));
	CHECK(store_labels_valid("ab=1\nb=2") && !store_labels_valid("b=1\nab=2"));
	CHECK(store_labels_valid("a=1\nab=2") && !store_labels_valid("ab=1\na=2"));

	/* get */
	size_t len = 99;
	const char *l = "cgroup=a/b\nexe=/x\nthread=w";
	const char *v = store_labels_get(l, "exe", &len);
	CHECK(v == l + 15 && len == 2);
	CHECK(store_labels_get(l, "ex", &len) == NULL);
	CHECK(store_labels_get(l, "thread", &len) == l + 25 && len == 1);
	CHECK(store_labels_get("", "exe", &len) == NULL &&
	      store_labels_get(NULL, "a", NULL) == NULL);

	/* each: in order, stopping at a non-zero return */
	char joined[256] = "";
	CHECK(store_labels_each(l, each_join, joined) == 0);
	CHECK_STR(joined, "<cgroup|a/b><exe|/x><thread|w>");
	int calls = 0;
	CHECK(store_labels_each("a=1\nb=2\nc=3", each_stop, &calls) == 42 && calls == 2);
	calls = 0;
	CHECK(store_labels_each("", each_stop, &calls) == 0 && calls == 0);

	/* other */
	out = NULL;
	CHECK_OK(store_labels_other(l, &out));
	CHECK_STR(out, "cgroup=(other)\nexe=(other)\nthread=(other)");
	CHECK(store_labels_valid(out));
	free(out);
	out = NULL;
	CHECK_OK(store_labels_other("a=1234567890", &out));
	CHECK_STR(out, "a=(other)");
	free(out);
	out = NULL;
	CHECK_OK(store_labels_other("", &out));
	CHECK_STR(out, "");
	free(out);

	/* value_clean: control bytes and '\' escaped; UTF-8 kept whole */
	clean_is("a\tb\\c\x7f", 6, "a\\x09b\\x5cc\\x7f");
	clean_is("", 0, "-");
	clean_is("x\0y", 3, "x\\x00y");
	clean_is("h\xc3\xa9", 3, "h\xc3\xa9");
	char big[2048];
	/* 1023 'a's then a 2-byte character: it does not fit, so 1023 */
	memset(big, 'a', 1023);
	memcpy(big + 1023, "\xc3\xa9zz", 4);
	out = NULL;
	CHECK_OK(store_label_value_clean(big, 1027, &out));
	CHECK(out && strlen(out) == 1023 && strspn(out, "a") == 1023);
	free(out);
	/* 1022 'a's then the 2-byte character: exactly 1024 */
	out = NULL;
	CHECK_OK(store_label_value_clean(big + 1, 1026, &out));
	CHECK(out && strlen(out) == 1024 && !memcmp(out + 1022, "\xc3\xa9", 2));
	free(out);
	/* an escape that does not fit whole is left out */
	memset(big, 'a', 1022);
	big[1022] = '\n';
	out = NULL;
	CHECK_OK(store_label_value_clean(big, 1023, &out));
	CHECK(out && strlen(out) == 1022);
	CHECK(out && store_labels_valid("a=x"));
	free(out);
}

void test_labels_series(void)
{
	char *dir = sf_fresh_dir();
	struct store *w = sf_open_rw(dir, STORE_CREATE), *r = NULL;
	uint32_t ids[3] = {0};

	if (!w)
		return;
	r = sf_open_rw(dir, STORE_READONLY);
	labels_check_roundtrip(w, r, "lab", ids);
	store_close(w);
	w = sf_open_rw(dir, 0);
	if (w)
		labels_check_reopen(w, "lab", ids);
	store_close(w);
	store_close(r);
}

void test_labels_bound(void)
{
	char *dir = sf_fresh_dir();
	struct store *w = sf_open_rw(dir, STORE_CREATE);

	if (!w)
		return;
	labels_check_bound(w, "bomb");
	/* the bound holds across a reopen: a new name still goes to (other) */
	store_close(w);
	w = sf_open_rw(dir, 0);
	if (!w)
		return;
	struct store_batch *b = store_batch_new(w);
	struct store_series_key k = {NULL, "bomb", "1", "cpu", "count", "thread=new"};
	struct store_series *l = NULL;
	size_t n = 0;
	uint32_t id = 0;
	CHECK_OK(store_batch_series(b, &k, &id));
	CHECK_OK(store_batch_add(b, id, 60, STORE_ROOT_NODE, 1, 1));
	/* another event of the same binary has a bound of its own */
	k.event = "other-event";
	uint32_t id2 = 0;
	CHECK_OK(store_batch_series(b, &k, &id2));
	CHECK_OK(store_batch_add(b, id2, 60, STORE_ROOT_NODE, 1, 1));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	CHECK_OK(store_series_list(w, &l, &n));
	for (size_t i = 0; i < n; i++) {
		if (l[i].id == id)
			CHECK_STR(l[i].labels, "thread=(other)");
		if (l[i].id == id2)
			CHECK_STR(l[i].labels, "thread=new");
	}
	store_series_free(l, n);
	store_close(w);
}

static size_t put_uv(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void set_schema(const char *dir, uint8_t v)
{
	struct sf_raw w;
	const char val[4] = {0, 0, 0, (char)v};

	if (sf_raw_open(dir, &w))
		sf_raw_put(&w, "mschema", 7, val, 4);
	sf_raw_close(&w);
}

static int get_schema(const char *dir)
{
	struct sf_raw w;
	size_t vlen = 0;
	int got = -1;

	if (sf_raw_open(dir, &w)) {
		char *v = sf_raw_get(&w, "mschema", 7, &vlen);
		if (v && vlen == 4)
			got = v[3];
		rocksdb_free(v);
	}
	sf_raw_close(&w);
	return got;
}

/* A store of schema 4 (series records without labels) reads with no
 * labels, and its first write marks it 5; a schema-6 store is refused with
 * the schema message; a record whose labels are not canonical is
 * damage. */
void test_labels_old_schema(void)
{
	char *dir = sf_fresh_dir();
	struct store *s = sf_open_rw(dir, STORE_CREATE), *r = NULL;
	struct store_series_key k = {NULL, "old", "1", "cpu", "count", NULL};
	struct store_series *l = NULL;
	char err[512] = "";
	size_t n = 0;
	uint32_t id = 0, id2 = 0;

	if (!s)
		return;
	struct store_batch *b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &k, &id));
	CHECK_OK(store_batch_add(b, id, 60, STORE_ROOT_NODE, 3, 3));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	store_close(s);
	set_schema(dir, 4);

	CHECK(store_open(dir, STORE_READONLY, &r, err, sizeof(err)) == 0);
	if (r) {
		CHECK_OK(store_series_list(r, &l, &n));
		CHECK(n == 1 && l[0].id == id && !strcmp(l[0].labels, "") && l[0].samples == 3);
		store_series_free(l, n);
	}
	s = sf_open_rw(dir, 0);
	store_close(s);
	CHECK(get_schema(dir) == 4); /* opening alone changes nothing */
	s = sf_open_rw(dir, 0);
	if (!s)
		goto out;
	b = store_batch_new(s);
	CHECK_OK(store_batch_series(b, &k, &id2));
	CHECK(id2 == id);
	k.labels = "thread=x";
	CHECK_OK(store_batch_series(b, &k, &id2));
	CHECK(id2 != id);
	CHECK_OK(store_batch_add(b, id2, 60, STORE_ROOT_NODE, 5, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	store_close(s);
	CHECK(get_schema(dir) == STORE_SCHEMA_VERSION && STORE_SCHEMA_VERSION == 6);
	if (r) {
		CHECK(store_refresh(r) == 1);
		CHECK_OK(store_series_list(r, &l, &n));
		CHECK(n == 2 && !strcmp(l[0].labels, "") && !strcmp(l[1].labels, "thread=x"));
		store_series_free(l, n);
	}

	/* a newer schema: refused with its message */
	set_schema(dir, 7);
	struct store *x = NULL;
	CHECK(store_open(dir, 0, &x, err, sizeof(err)) == -EPROTONOSUPPORT);
	CHECKF(strstr(err, "schema version 7 is newer than this flamefs understands (6)") != NULL,
	       "%s", err);
	store_close(x);
	set_schema(dir, 6);

	/* labels that are not canonical in a record: damage */
	struct sf_raw w;
	uint8_t key[5] = {'s', 0, 0, 0, (uint8_t)id2};
	if (sf_raw_open(dir, &w)) {
		size_t vlen = 0;
		char *v = sf_raw_get(&w, (char *)key, 5, &vlen);
		CHECK(v && vlen > 9 && !memcmp(v + vlen - 8, "thread=x", 8));
		if (v && vlen > 9) {
			uint8_t rec[512];
			memcpy(rec, v, vlen - 9);
			size_t m = vlen - 9;
			m += put_uv(rec + m, 8);
			memcpy(rec + m, "Thread=x", 8);
			sf_raw_put(&w, (char *)key, 5, (char *)rec, m + 8);
		}
		rocksdb_free(v);
	}
	sf_raw_close(&w);
	CHECK(store_open(dir, 0, &x, err, sizeof(err)) == -EIO);
	CHECKF(strstr(err, "store is damaged: series") != NULL, "%s", err);
	store_close(x);
out:
	store_close(r);
}

/* "labels=samples/weight;" of every series, as listed. */
static void totals(struct store *s, char *out, size_t len)
{
	struct store_series *l = NULL;
	size_t n = 0, o = 0;

	out[0] = '\0';
	CHECK_OK(store_series_list(s, &l, &n));
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s=%" PRIu64 "/%" PRIu64 ";", l[i].labels,
		                      l[i].samples, l[i].weight);
	store_series_free(l, n);
}

/* A merge of a directory into another carries each label set to its own
 * series, with the source's totals; merging the unchanged source again is
 * "nothing new"; a series of the destination with the same key and other
 * labels stays apart. */
void test_labels_merge(void)
{
	char sdir[PATH_MAX], err[512] = "", want[1024], got[1024];
	struct store *src = sf_open_rw(strcpy(sdir, sf_fresh_dir()), STORE_CREATE);
	struct store *dst = sf_open_rw(sf_fresh_dir(), STORE_CREATE);
	const char *sets[4] = {NULL, "thread=a", "thread=b", "cgroup=x\nthread=a"};
	struct store_copy_opts o = {.samples = true};
	struct store_copy_stats st;

	if (!src || !dst)
		goto out;
	struct store_batch *b = store_batch_new(src);
	uint32_t node = sf_add_stack(b, sf_stack1, 3);
	for (int i = 0; i < 4; i++) {
		struct store_series_key k = {"h", "app", "1", "cpu", "count", sets[i]};
		uint32_t id;
		CHECK_OK(store_batch_series(b, &k, &id));
		CHECK_OK(store_batch_add(b, id, 60, node, (uint64_t)(i + 1) * 10,
		                         (uint64_t)(i + 1) * 100));
	}
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);
	/* the destination has its own thread=z of the same key */
	b = store_batch_new(dst);
	struct store_series_key kz = {"h", "app", "1", "cpu", "count", "thread=z"};
	uint32_t z;
	CHECK_OK(store_batch_series(b, &kz, &z));
	CHECK_OK(store_batch_add(b, z, 60, STORE_ROOT_NODE, 5, 5));
	CHECK_OK(store_batch_commit(b));
	store_batch_free(b);

	CHECKF(store_copy(dst, src, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECK(st.series == 4);
	totals(dst, got, sizeof(got));
	CHECK_STR(got, "=10/100;cgroup=x\nthread=a=40/400;thread=a=20/200;thread=b=30/300;"
	               "thread=z=5/5;");
	totals(src, want, sizeof(want));
	CHECK_STR(want, "=10/100;cgroup=x\nthread=a=40/400;thread=a=20/200;thread=b=30/300;");
	CHECKF(store_copy(dst, src, &o, &st, err, sizeof(err)) == 0, "%s", err);
	CHECK(st.nothing_new);
	totals(dst, got, sizeof(got));
	CHECK_STR(got, "=10/100;cgroup=x\nthread=a=40/400;thread=a=20/200;thread=b=30/300;"
	               "thread=z=5/5;");
out:
	store_close(src);
	store_close(dst);
}
