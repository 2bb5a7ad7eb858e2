/*
 * test-escape.c — unit tests for the frame-name escaping (fs/view/escape.c):
 * every escaped name is a valid, non-reserved directory name of at most
 * 255 bytes, escaping round-trips through view_unescape(), distinct names
 * stay distinct (long ones too), and malformed names are rejected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

static int failures;

#define CHECK(cond, what)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, what, #cond);  \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct name {
	const char *p;
	size_t len;
};

static const char *const reserved[] = {"folded", "self",      "total",     "pprof",
                                       "name",   "flame.svg", "callgrind", "regressions",
                                       "top",    "quality",   "timeline",  "timeline.svg"};

/* Checks one name; returns its escaped form (malloc'd). */
static char *check_name(const char *p, size_t len, int flags)
{
	char esc[VIEW_NAME_MAX + 1], again[VIEW_NAME_MAX + 1];
	struct view_buf raw = {0};
	size_t n = view_escape(p, len, flags, esc);
	char what[64];

	snprintf(what, sizeof(what), "name of %zu bytes", len);
	CHECK(n == strlen(esc), what);
	CHECK(n >= 1 && n <= VIEW_NAME_MAX, what);
	CHECK(!memchr(esc, '/', n), what);
	CHECK(esc[0] != '.', what);
	CHECK(esc[0] != '@', what); /* the view's @last, @range, @diff, @functions */
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		CHECK(strcmp(esc, reserved[i]) != 0, what);
	for (size_t i = 0; i < n; i++)
		CHECK((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f, what);
	if (flags & VIEW_ESCAPE_AT)
		CHECK(!memchr(esc, '@', n), what);
	/* Deterministic. */
	CHECK(view_escape(p, len, flags, again) == n && strcmp(again, esc) == 0, what);

	int r = view_unescape(esc, n, &raw);
	if (r == 0) {
		CHECK(raw.len == len && (len == 0 || memcmp(raw.data, p, len) == 0), what);
	} else {
		/* Shortened: only for long names; the prefix is the name's. */
		CHECK(r == 1, what);
		CHECK(len > 80, what);
		CHECK(raw.len < len && memcmp(raw.data, p, raw.len) == 0, what);
		CHECK(n >= 200, what);
	}
	view_buf_free(&raw);
	char *dup = strdup(esc);
	if (!dup) {
		perror("strdup");
		exit(1);
	}
	return dup;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	static char tmpl[1000], tmpl2[1000], longpct[600], longutf8[900];
	static char many[64][400];
	struct name names[128];
	size_t n = 0;

	/* A 1000-byte C++ template name, and one differing in its last byte. */
	const char *part = "std::map<std::basic_string<char>, std::vector<int> >::";
	for (size_t i = 0; i < sizeof(tmpl); i++)
		tmpl[i] = part[i % strlen(part)];
	memcpy(tmpl2, tmpl, sizeof(tmpl));
	tmpl2[sizeof(tmpl2) - 1] ^= 1;
	memset(longpct, '%', sizeof(longpct));
	for (size_t i = 0; i + 1 < sizeof(longutf8); i += 2) {
		longutf8[i] = (char)0xc3; /* é */
		longutf8[i + 1] = (char)0xa9;
	}

#define ADD(s) names[n++] = (struct name){s, sizeof(s) - 1}
	ADD("main");
	ADD("operator/");
	ADD("std::operator/(int, int)");
	ADD("a/b/c");
	ADD("/");
	ADD(".");
	ADD("..");
	ADD("...");
	ADD(".hidden");
	ADD("");
	ADD("total");
	ADD("folded");
	ADD("self");
	ADD("pprof");
	ADD("name");
	ADD("totals");
	ADD("%");
	ADD("%2E");
	ADD("100%");
	ADD("%41");
	ADD("%~0123456789abcdef");
	ADD("a\0b");
	ADD("\0");
	ADD("line\nbreak");
	ADD("tab\there");
	ADD("\x7f");
	ADD("\xff\xfe\x80");
	ADD("caf\xc3\xa9");
	ADD("memcpy@plt");
	ADD("@");
	ADD("@last");
	ADD("@functions");
	ADD("@@x");
	ADD("%40last");
	ADD("flame.svg");
	ADD("callgrind");
	ADD("regressions");
	ADD("top");
	ADD("quality");
	ADD("topx");
	ADD("[unknown]");
	ADD("func_[i]");
	ADD("a;b");
	ADD("with space");
#undef ADD
	names[n++] = (struct name){tmpl, sizeof(tmpl)};
	names[n++] = (struct name){tmpl2, sizeof(tmpl2)};
	names[n++] = (struct name){longpct, sizeof(longpct)};
	names[n++] = (struct name){longutf8, sizeof(longutf8)};
	/* Names sharing a long prefix, each also longer than 255 bytes. */
	for (size_t i = 0; i < 64; i++) {
		memset(many[i], 'x', sizeof(many[i]));
		snprintf(many[i] + sizeof(many[i]) - 8, 8, "%07zu", i);
		names[n++] = (struct name){many[i], sizeof(many[i]) - 1};
	}

	char *esc[128];
	for (size_t i = 0; i < n; i++)
		esc[i] = check_name(names[i].p, names[i].len, 0);
	/* Distinct names give distinct directory names. */
	qsort(esc, n, sizeof(esc[0]), cmp_str);
	for (size_t i = 1; i < n; i++)
		CHECK(strcmp(esc[i - 1], esc[i]) != 0, "escaped names are unique");
	for (size_t i = 0; i < n; i++)
		free(esc[i]);

	/* Versions escape '@' so "<version>@<event>" splits unambiguously. */
	for (size_t i = 0; i < n; i++)
		free(check_name(names[i].p, names[i].len, VIEW_ESCAPE_AT));

	/* Specific spellings documented in fs/README.md. */
	char out[VIEW_NAME_MAX + 1];
	view_escape("operator/", 9, 0, out);
	CHECK(strcmp(out, "operator%2F") == 0, "operator/");
	view_escape("..", 2, 0, out);
	CHECK(strcmp(out, "%2E.") == 0, "..");
	view_escape("total", 5, 0, out);
	CHECK(strcmp(out, "%74otal") == 0, "total");
	view_escape("", 0, 0, out);
	CHECK(strcmp(out, "%") == 0, "empty");
	view_escape("a@b", 3, VIEW_ESCAPE_AT, out);
	CHECK(strcmp(out, "a%40b") == 0, "@ in versions");
	view_escape("a@b", 3, 0, out);
	CHECK(strcmp(out, "a@b") == 0, "@ in frames");
	view_escape("@last", 5, 0, out);
	CHECK(strcmp(out, "%40last") == 0, "a leading @ in frames and binaries");
	view_escape("@@x", 3, VIEW_ESCAPE_AT, out);
	CHECK(strcmp(out, "%40%40x") == 0, "@ in versions");
	view_escape("flame.svg", 9, 0, out);
	CHECK(strcmp(out, "%66lame.svg") == 0, "flame.svg");
	view_escape("callgrind", 9, 0, out);
	CHECK(strcmp(out, "%63allgrind") == 0, "callgrind");
	size_t len = view_escape(tmpl, sizeof(tmpl), 0, out);
	CHECK(len <= VIEW_NAME_MAX && strstr(out, "%~") == out + len - 18,
	      "long names end in %~ and 16 hex digits");

	/* Malformed directory names are rejected. */
	const char *bad[] = {"%", "%4", "%zz", "a%", "%~12", "a%~0123456789abcdefX"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct view_buf raw = {0};
		int r = view_unescape(bad[i], strlen(bad[i]), &raw);
		if (i == 0)
			CHECK(r == 0 && raw.len == 0, "lone % is the empty name");
		else
			CHECK(r == -EINVAL, bad[i]);
		view_buf_free(&raw);
	}

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("PASS escape (%zu names)\n", n);
	return 0;
}
