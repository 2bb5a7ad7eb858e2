/*
 * test-import-labels.c — unit tests of collector/import/labels.c: the
 * label key a pprof label name is stored under, --label's checks and
 * their messages, and a file's labels joined with --label's.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "import.h"

static void key_is(const char *name, const char *want)
{
	char out[IMPORT_LABEL_KEY_SIZE];
	size_t n = import_label_key(name, strlen(name), out);

	CHECK_STR(out, want);
	CHECKF(n == strlen(want), "import_label_key(\"%s\") = %zu bytes", name, n);
	/* whatever the name, a valid key */
	struct store_label l = {out, "v"};
	char *s = NULL;
	CHECKF(store_labels_make(&l, 1, &s) == 0, "\"%s\" is not a valid key", out);
	free(s);
}

static void test_keys(void)
{
	key_is("handler", "handler");
	key_is("Http.Route", "http_route");
	key_is("HANDLER", "handler");
	key_is("2xx", "k_2xx");
	key_is("", "k_");
	key_is("_x", "k__x");
	key_is("a b\tc\xc3\xa9", "a_b_c__");
	key_is("abcdefghijabcdefghijabcdefghijabcdef", "abcdefghijabcdefghijabcdefghijab");
	key_is("9abcdefghijabcdefghijabcdefghijabc", "k_9abcdefghijabcdefghijabcdefghi");
}

/* arg's message, or "" when accepted; *labels as it is after. */
static const char *arg(char **labels, const char *a)
{
	static char err[256];
	err[0] = '\0';
	int rc = import_label_arg(labels, a, err, sizeof(err));
	CHECKF(rc == 0 ? !err[0] : rc == -EINVAL && err[0], "import_label_arg(%s) = %d", a, rc);
	return err;
}

static void test_args(void)
{
	char *l = NULL;

	CHECK_STR(arg(&l, "team=db"), "");
	CHECK_STR(arg(&l, "env=prod=1"), "");
	CHECK_STR(arg(&l, "zone=eu west"), "");
	CHECK_STR(l, "env=prod=1\nteam=db\nzone=eu west");
	CHECK_STR(arg(&l, "team=x"), "--label team: given twice; expected each key once");
	CHECK_STR(arg(&l, "Team=x"), "--label: key \"Team\" is not a label key; expected 1 to 32 "
	                             "bytes of a-z, 0-9 and _, starting with a letter");
	CHECK_STR(arg(&l, "team"), "--label: expected KEY=VALUE, got \"team\"");
	CHECK_STR(
	        arg(&l, "x="),
	        "--label x: value of 0 bytes; expected 1 to 1024 bytes without control characters");
	CHECK_STR(arg(&l, "x=a\nb"), "--label x: value holds control byte 0x0a at byte 1; expected "
	                             "1 to 1024 bytes without control characters");
	CHECK_STR(arg(&l, "x=\x7f"), "--label x: value holds control byte 0x7f at byte 0; expected "
	                             "1 to 1024 bytes without control characters");
	/* a refused argument leaves the set as it was */
	CHECK_STR(l, "env=prod=1\nteam=db\nzone=eu west");
	free(l);
}

static void test_join(void)
{
	struct import_options o = {.labels = "env=prod\nteam=db"};
	struct import_ctx ctx = {.opt = &o, .path = "p.pb.gz"};
	char *out = NULL;

	CHECK_OK(import_labels_join(&ctx, "handler=a\nzone=x", &out));
	CHECK_STR(out, "env=prod\nhandler=a\nteam=db\nzone=x");
	free(out);
	CHECK_OK(import_labels_join(&ctx, NULL, &out));
	CHECK_STR(out, "env=prod\nteam=db");
	free(out);
	CHECK(import_labels_join(&ctx, "handler=a\nteam=web", &out) == -EINVAL);
	CHECK(out == NULL);
	CHECK_STR(ctx.err, "p.pb.gz: --label team=db names a label the input gives its samples too "
	                   "(team=web); expected --label keys the input does not use");
	o.labels = NULL;
	CHECK_OK(import_labels_join(&ctx, "handler=a", &out));
	CHECK_STR(out, "handler=a");
	free(out);
	CHECK_OK(import_labels_join(&ctx, NULL, &out));
	CHECK_STR(out, "");
	free(out);
}

int main(void)
{
	test_keys();
	test_args();
	test_join();
	return check_failures != 0;
}
