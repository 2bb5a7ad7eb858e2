/*
 * test-escape.c — unit tests for the frame-name escaping (fs/view/escape.c):
 * every escaped name is a valid, non-reserved directory name of at most
 * 255 bytes, escaping round-trips through view_unescape(), distinct names
 * stay distinct (long ones too), and malformed names are rejected.  And
 * the escapings of names inside files (fs/view/README.md, "Names in
 * files"): text files' \xNN (exact bytes, round trip, no control byte or
 * ';' left), SVG's entities (every name a well-formed piece of XML text,
 * cut by characters), and the cap of one rendering (struct view_buf's
 * max, view_parse_size()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "view.h"

/* The descriptions here hold %, so they are never a format. */
#define CHECK_WHAT(cond, what) CHECKF(cond, "%s", what)

struct name {
	const char *p;
	size_t len;
};

static const char *const reserved[] = {"folded",      "self",      "total",     "pprof",
                                       "name",        "flame.svg", "callgrind", "regressions",
                                       "top",         "quality",   "timeline",  "timeline.svg",
                                       "heatmap.svg", "window",    "about"};

/* Checks the text escaping of one name, with and without ';'. */
static void check_text(const char *p, size_t len)
{
	for (int flags = 0; flags <= VIEW_TEXT_FOLDED; flags += VIEW_TEXT_FOLDED) {
		struct view_buf esc = {0}, raw = {0};
		size_t n = view_text_len(p, len, flags);
		CHECK_WHAT(view_text_append(&esc, p, len, flags) == 0 && esc.len == n,
		           "view_text_len is the appended length");
		for (size_t i = 0; i < esc.len; i++) {
			unsigned char c = (unsigned char)esc.data[i];
			CHECK_WHAT(c >= 0x20 && c != 0x7f, "no control byte in a text name");
			CHECK_WHAT(!(c == 0xc2 && i + 1 < esc.len &&
			             (unsigned char)esc.data[i + 1] >= 0x80 &&
			             (unsigned char)esc.data[i + 1] <= 0x9f),
			           "no C1 control in a text name");
			if (flags)
				CHECK_WHAT(c != ';', "no ';' in a folded frame");
			if (c == '\\')
				CHECK_WHAT(i + 3 < esc.len && esc.data[i + 1] == 'x',
				           "a backslash starts \\xNN");
		}
		CHECK_WHAT(view_text_unescape(esc.data ? esc.data : "", esc.len, &raw) == 0 &&
		                   raw.len == len && (len == 0 || memcmp(raw.data, p, len) == 0),
		           "text escaping round-trips");
		view_buf_free(&esc);
		view_buf_free(&raw);
	}
}

/* Checks the XML text of one name: only entities for &<>"', no control
 * byte but tab, valid UTF-8. */
static void check_xml(const char *p, size_t len)
{
	struct view_buf x = {0};

	CHECK_WHAT(view_xml_append(&x, p, len, SIZE_MAX) == 0, "view_xml_append");
	for (size_t i = 0; i < x.len; i++) {
		unsigned char c = (unsigned char)x.data[i];
		CHECK_WHAT(c != '<' && c != '>' && c != '"' && c != '\'', "markup in XML text");
		CHECK_WHAT(c >= 0x20 || c == '\t', "control byte in XML text");
		if (c == '&')
			CHECK_WHAT(!strncmp(x.data + i, "&amp;", 5) ||
			                   !strncmp(x.data + i, "&lt;", 4) ||
			                   !strncmp(x.data + i, "&gt;", 4) ||
			                   !strncmp(x.data + i, "&quot;", 6) ||
			                   !strncmp(x.data + i, "&#39;", 5),
			           "& starts one of the five entities");
		if (c >= 0x80) { /* a whole, valid sequence */
			size_t l = (c & 0xe0) == 0xc0   ? 2
			           : (c & 0xf0) == 0xe0 ? 3
			           : (c & 0xf8) == 0xf0 ? 4
			                                : 0;
			CHECK_WHAT(l && i + l <= x.len, "valid UTF-8 in XML text");
			for (size_t k = 1; l && k < l && i + k < x.len; k++)
				CHECK_WHAT(((unsigned char)x.data[i + k] & 0xc0) == 0x80,
				           "valid UTF-8 in XML text");
			i += l ? l - 1 : 0;
		}
	}
	view_buf_free(&x);
}

/* Checks one name; returns its escaped form (malloc'd). */
static char *check_name(const char *p, size_t len, int flags)
{
	char esc[VIEW_NAME_MAX + 1], again[VIEW_NAME_MAX + 1];
	struct view_buf raw = {0};
	size_t n = view_escape(p, len, flags, esc);
	char what[64];

	snprintf(what, sizeof(what), "name of %zu bytes", len);
	CHECK_WHAT(n == strlen(esc), what);
	CHECK_WHAT(n >= 1 && n <= VIEW_NAME_MAX, what);
	CHECK_WHAT(!memchr(esc, '/', n), what);
	CHECK_WHAT(esc[0] != '.', what);
	CHECK_WHAT(esc[0] != '@', what); /* the view's @last, @range, @diff, @functions */
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		CHECK_WHAT(strcmp(esc, reserved[i]) != 0, what);
	for (size_t i = 0; i < n; i++)
		CHECK_WHAT((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f, what);
	if (flags & VIEW_ESCAPE_AT)
		CHECK_WHAT(!memchr(esc, '@', n), what);
	/* Deterministic. */
	CHECK_WHAT(view_escape(p, len, flags, again) == n && strcmp(again, esc) == 0, what);

	int r = view_unescape(esc, n, &raw);
	if (r == 0) {
		CHECK_WHAT(raw.len == len && (len == 0 || memcmp(raw.data, p, len) == 0), what);
	} else {
		/* Shortened: only for long names; the prefix is the name's. */
		CHECK_WHAT(r == 1, what);
		CHECK_WHAT(len > 80, what);
		CHECK_WHAT(raw.len < len && memcmp(raw.data, p, raw.len) == 0, what);
		CHECK_WHAT(n >= 200, what);
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

/* Fills names[] (room for 128) with the hostile names every check runs
 * over, and *longest with the 1000-byte template name among them; returns
 * how many. */
static size_t fill_names(struct name *names, struct name *longest)
{
	static char tmpl[1000], tmpl2[1000], longpct[600], longutf8[900];
	static char many[64][400];
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
	*longest = names[n - 1];
	names[n++] = (struct name){tmpl2, sizeof(tmpl2)};
	names[n++] = (struct name){longpct, sizeof(longpct)};
	names[n++] = (struct name){longutf8, sizeof(longutf8)};
	/* Names sharing a long prefix, each also longer than 255 bytes. */
	for (size_t i = 0; i < 64; i++) {
		memset(many[i], 'x', sizeof(many[i]));
		snprintf(many[i] + sizeof(many[i]) - 8, 8, "%07zu", i);
		names[n++] = (struct name){many[i], sizeof(many[i]) - 1};
	}
	return n;
}

/* Every name through every escaper: names, text, XML, versions. */
static void check_all_names(const struct name *names, size_t n)
{
	char *esc[128];
	for (size_t i = 0; i < n; i++)
		esc[i] = check_name(names[i].p, names[i].len, 0);
	/* Distinct names give distinct directory names. */
	qsort(esc, n, sizeof(esc[0]), cmp_str);
	for (size_t i = 1; i < n; i++)
		CHECK_WHAT(strcmp(esc[i - 1], esc[i]) != 0, "escaped names are unique");
	for (size_t i = 0; i < n; i++)
		free(esc[i]);

	for (size_t i = 0; i < n; i++) {
		check_text(names[i].p, names[i].len);
		check_xml(names[i].p, names[i].len);
	}

	/* Versions escape '@' so "<version>@<event>" splits unambiguously. */
	for (size_t i = 0; i < n; i++)
		free(check_name(names[i].p, names[i].len, VIEW_ESCAPE_AT));
}

/* The spellings documented in fs/README.md; tmpl is a name too long for
 * one directory entry. */
static void check_spellings(const char *tmpl, size_t tmpl_len)
{
	/* Specific spellings documented in fs/README.md. */
	char out[VIEW_NAME_MAX + 1];
	view_escape("operator/", 9, 0, out);
	CHECK_WHAT(strcmp(out, "operator%2F") == 0, "operator/");
	view_escape("..", 2, 0, out);
	CHECK_WHAT(strcmp(out, "%2E.") == 0, "..");
	view_escape("total", 5, 0, out);
	CHECK_WHAT(strcmp(out, "%74otal") == 0, "total");
	view_escape("", 0, 0, out);
	CHECK_WHAT(strcmp(out, "%") == 0, "empty");
	view_escape("a@b", 3, VIEW_ESCAPE_AT, out);
	CHECK_WHAT(strcmp(out, "a%40b") == 0, "@ in versions");
	view_escape("a@b", 3, 0, out);
	CHECK_WHAT(strcmp(out, "a@b") == 0, "@ in frames");
	view_escape("@last", 5, 0, out);
	CHECK_WHAT(strcmp(out, "%40last") == 0, "a leading @ in frames and binaries");
	view_escape("@@x", 3, VIEW_ESCAPE_AT, out);
	CHECK_WHAT(strcmp(out, "%40%40x") == 0, "@ in versions");
	view_escape("flame.svg", 9, 0, out);
	CHECK_WHAT(strcmp(out, "%66lame.svg") == 0, "flame.svg");
	view_escape("callgrind", 9, 0, out);
	CHECK_WHAT(strcmp(out, "%63allgrind") == 0, "callgrind");
	size_t len = view_escape(tmpl, tmpl_len, 0, out);
	CHECK_WHAT(len <= VIEW_NAME_MAX && strstr(out, "%~") == out + len - 18,
	           "long names end in %~ and 16 hex digits");
}

static void check_malformed(void)
{
	/* Malformed directory names are rejected. */
	const char *bad[] = {"%", "%4", "%zz", "a%", "%~12", "a%~0123456789abcdefX"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct view_buf raw = {0};
		int r = view_unescape(bad[i], strlen(bad[i]), &raw);
		if (i == 0)
			CHECK_WHAT(r == 0 && raw.len == 0, "lone % is the empty name");
		else
			CHECK_WHAT(r == -EINVAL, bad[i]);
		view_buf_free(&raw);
	}
}

static void check_text_files(void)
{
	/* Text files: the documented spellings. */
	struct view_buf b = {0};
	const char hostile[] = "a\nb\rc;d\x1b[31m\\e\x7f\xc2\x9b"
	                       "f\xc2\xa0g\th";
	view_text_append(&b, hostile, sizeof(hostile) - 1, VIEW_TEXT_FOLDED);
	CHECK_WHAT(b.data && strcmp(b.data, "a\\x0ab\\x0dc\\x3bd\\x1b["
	                                    "31m\\x5ce\\x7f\\xc2\\x9bf\xc2\xa0g\\x09h") == 0,
	           "folded escaping of newline, CR, ';', ESC, backslash, DEL, C1 (not NBSP), tab");
	view_buf_free(&b);
	view_text_append(&b, "a;b", 3, 0);
	CHECK_WHAT(b.data && strcmp(b.data, "a;b") == 0, "';' is kept outside folded paths");
	view_buf_free(&b);
	const char *bad_text[] = {"a\\", "\\x4", "\\xzz", "\\n", "a\\y00"};
	for (size_t i = 0; i < sizeof(bad_text) / sizeof(bad_text[0]); i++) {
		CHECK_WHAT(view_text_unescape(bad_text[i], strlen(bad_text[i]), &b) == -EINVAL,
		           bad_text[i]);
		view_buf_free(&b);
	}
	CHECK_WHAT(view_text_unescape("\\x41\\x3B", 8, &b) == 0 && b.len == 2 &&
	                   !strcmp(b.data, "A;"),
	           "\\xNN decodes in either case");
	view_buf_free(&b);
}

static void check_svg(void)
{
	struct view_buf b = {0};

	/* SVG: entities, U+FFFD, cut by characters. */
	view_xml_append(&b, "</title><script>&'\"\x01\xff", 21, SIZE_MAX);
	CHECK_WHAT(
	        b.data &&
	                strcmp(b.data,
	                       "&lt;/"
	                       "title&gt;&lt;script&gt;&amp;&#39;&quot;\xef\xbf\xbd\xef\xbf\xbd") ==
	                        0,
	        "XML entities and U+FFFD");
	view_buf_free(&b);
	view_xml_append(&b, "caf\xc3\xa9 au lait", 14, 6);
	CHECK_WHAT(b.data && strcmp(b.data, "caf\xc3\xa9..") == 0, "cut at 6 characters: 4 and ..");
	view_buf_free(&b);
	view_xml_append(&b, "caf\xc3\xa9!", 6, 5);
	CHECK_WHAT(b.data && strcmp(b.data, "caf\xc3\xa9!") == 0, "5 characters fit in 5");
	view_buf_free(&b);
}

/* The cap of one rendering, and the sizes -o max_render takes. */
static void check_cap(void)
{
	struct view_buf b = {0};

	b.max = 10;
	CHECK_WHAT(view_buf_append(&b, "0123456789", 10) == 0, "up to the cap");
	CHECK_WHAT(view_buf_append(&b, "x", 1) == -EFBIG && b.len == 10,
	           "past the cap: -EFBIG, unchanged");
	view_buf_free(&b);
	CHECK_WHAT(b.max == 10, "view_buf_free keeps the cap");
	CHECK_WHAT(view_buf_reserve(&b, 11) == -EFBIG && !b.data,
	           "a reserve past the cap allocates nothing");
	struct view_buf z = {0};
	CHECK_WHAT(view_buf_max(&z) == VIEW_RENDER_MAX && VIEW_RENDER_MAX == (size_t)256 << 20,
	           "the default cap is 256 MiB");
	size_t sz = 0;
	CHECK_WHAT(view_parse_size("256M", &sz) == 0 && sz == (size_t)256 << 20, "256M");
	CHECK_WHAT(view_parse_size("4k", &sz) == 0 && sz == 4096, "4k");
	CHECK_WHAT(view_parse_size("1G", &sz) == 0 && sz == (size_t)1 << 30, "1G");
	CHECK_WHAT(view_parse_size("123", &sz) == 0 && sz == 123, "123");
	CHECK_WHAT(view_parse_size("0", &sz) == -ERANGE, "0");
	CHECK_WHAT(view_parse_size("99999999999999999999", &sz) == -ERANGE, "past 2^64");
	CHECK_WHAT(view_parse_size("", &sz) == -EINVAL && view_parse_size("1T", &sz) == -EINVAL &&
	                   view_parse_size("M", &sz) == -EINVAL &&
	                   view_parse_size("1MB", &sz) == -EINVAL,
	           "malformed sizes");
}

int main(void)
{
	struct name names[128], longest;
	size_t n = fill_names(names, &longest);

	check_all_names(names, n);
	check_spellings(longest.p, longest.len);
	check_malformed();
	check_text_files();
	check_svg();
	check_cap();
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("PASS escape (%zu names)\n", n);
	return 0;
}
