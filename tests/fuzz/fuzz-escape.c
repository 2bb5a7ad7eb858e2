/*
 * fuzz-escape.c — libFuzzer target for the name escaping (fs/view/escape.c).
 * The first byte of the input picks the flags, the rest is a frame name.
 * Checks the rule of fs/README.md "Name escaping": the directory name is
 * 1..255 bytes, holds no '/', NUL or other control byte (nor '@' for
 * versions), is never ".", "..", a hidden name or a view file name, and
 * decodes back to the name exactly; a shortened name is at most 237 kept
 * bytes that decode to a prefix of the name, cut neither inside a %XX nor
 * inside a UTF-8 sequence, then "%~" and the 16 lower-case hex digits of
 * XXH64 of the whole name.  Then the same input is decoded as a directory
 * name: view_unescape() must not crash, and what it accepts as a full name
 * must escape to something that decodes to the same bytes.
 *
 * The name is also written as text files write names (view_text_put(),
 * with and without ';'): no control byte, C1 control or (in a folded
 * frame) ';' is left, every backslash starts \xNN, the length is
 * view_text_len()'s, and view_text_unescape() gives the name back; and as
 * SVG text (view_xml_append(), whole and cut to the first byte's number
 * of characters): no '<', '>', quote or control byte but tab, every '&'
 * one of the five entities, valid UTF-8, and the cut keeps at most that
 * many characters plus "..".  The input is also decoded as text:
 * view_text_unescape() must not crash, and what it decodes must escape
 * back to bytes that decode the same.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "view.h"

#define KEPT_MAX (VIEW_NAME_MAX - 18) /* bytes before "%~" + 16 hex digits */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *esc)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz-escape: %s (escaped \"%s\")\n", what, esc ? esc : "");
	abort();
}

/* True when a well-formed UTF-8 sequence of name[0..len) starts before
 * `at` and ends after it, i.e. cutting at `at` would split it. */
static bool splits_utf8(const unsigned char *name, size_t len, size_t at)
{
	for (size_t back = 1; back <= 3 && back <= at; back++) {
		size_t q = at - back;
		unsigned char c = name[q];
		size_t seq = (c & 0xe0) == 0xc0   ? 2
		             : (c & 0xf0) == 0xe0 ? 3
		             : (c & 0xf8) == 0xf0 ? 4
		                                  : 0;
		if (seq == 0 || q + seq <= at || q + seq > len)
			continue;
		bool whole = true;
		for (size_t k = q + 1; k < q + seq; k++)
			whole &= (name[k] & 0xc0) == 0x80;
		if (whole)
			return true;
	}
	return false;
}

static void check_escape(const char *name, size_t len, int flags)
{
	static const char *const reserved[] = {"folded", "self", "total", "pprof", "name"};
	char esc[VIEW_NAME_MAX + 1], again[VIEW_NAME_MAX + 1];
	size_t n = view_escape(name, len, flags, esc);

	check(n >= 1 && n <= VIEW_NAME_MAX, "length outside 1..255", esc);
	check(strlen(esc) == n, "returned length differs from the string's", esc);
	check(!memchr(esc, '/', n), "holds '/'", esc);
	for (size_t i = 0; i < n; i++)
		check((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f, "holds a control byte", esc);
	check(esc[0] != '.', "starts with '.'", esc);
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		check(strcmp(esc, reserved[i]) != 0, "is a view file name", esc);
	if (flags & VIEW_ESCAPE_AT)
		check(!memchr(esc, '@', n), "holds '@' in a version", esc);
	check(view_escape(name, len, flags, again) == n && strcmp(again, esc) == 0,
	      "not deterministic", esc);

	struct view_buf raw = {0};
	int r = view_unescape(esc, n, &raw);
	if (r == 0) {
		check(raw.len == len && (len == 0 || memcmp(raw.data, name, len) == 0),
		      "does not decode to the name", esc);
	} else {
		check(r == 1, "the escaped name does not decode", esc);
		/* Shortened: "<kept>%~<16 hex>", the kept part a prefix of the
		 * name cut at a clean place, the hash the documented one. */
		check(n >= 18 && esc[n - 18] == '%' && esc[n - 17] == '~', "no %~ suffix", esc);
		check(n - 18 <= KEPT_MAX, "kept part over 237 bytes", esc);
		char hex[17];
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)XXH64(name, len, 0));
		check(memcmp(esc + n - 16, hex, 16) == 0, "suffix is not XXH64 of the name", esc);
		check(raw.len < len && (raw.len == 0 || memcmp(raw.data, name, raw.len) == 0),
		      "kept part is not a prefix of the name", esc);
		check(!splits_utf8((const unsigned char *)name, len, raw.len),
		      "cut inside a UTF-8 sequence", esc);
		/* Only a name that cannot be written in full is shortened:
		 * each byte takes 1 or 3 bytes, so under 86 bytes always fit. */
		check(len > VIEW_NAME_MAX / 3, "a short name was shortened", esc);
	}
	view_buf_free(&raw);
}

static void check_text(const char *name, size_t len)
{
	for (int flags = 0; flags <= VIEW_TEXT_FOLDED; flags += VIEW_TEXT_FOLDED) {
		struct view_buf esc = {0}, raw = {0};
		check(view_text_append(&esc, name, len, flags) == 0, "view_text_append failed",
		      NULL);
		check(esc.len == view_text_len(name, len, flags), "view_text_len is not the length",
		      esc.data);
		for (size_t i = 0; i < esc.len; i++) {
			unsigned char c = (unsigned char)esc.data[i];
			check(c >= 0x20 && c != 0x7f, "a control byte in a text name", esc.data);
			check(!(flags && c == ';'), "';' in a folded frame", esc.data);
			check(!(c == 0xc2 && i + 1 < esc.len &&
			        (unsigned char)esc.data[i + 1] >= 0x80 &&
			        (unsigned char)esc.data[i + 1] <= 0x9f),
			      "a C1 control in a text name", esc.data);
			check(c != '\\' || (i + 3 < esc.len && esc.data[i + 1] == 'x'),
			      "a backslash that starts no \\xNN", esc.data);
		}
		check(view_text_unescape(esc.data ? esc.data : "", esc.len, &raw) == 0 &&
		              raw.len == len && (len == 0 || memcmp(raw.data, name, len) == 0),
		      "a text name does not decode to the name", esc.data);
		view_buf_free(&esc);
		view_buf_free(&raw);
	}
}

/* Characters of XML text: bytes that do not continue a UTF-8 sequence. */
/* The characters of s as XML text gets them: a well-formed UTF-8
 * sequence of a Unicode scalar value other than U+FFFE and U+FFFF (no
 * overlong form, no surrogate) is one, and so is every byte of none (it
 * becomes U+FFFD), a stray continuation byte included. */
static size_t xml_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; n++) {
		const unsigned char *p = (const unsigned char *)s + i;
		size_t l = p[0] < 0x80             ? 1
		           : (p[0] & 0xe0) == 0xc0 ? 2
		           : (p[0] & 0xf0) == 0xe0 ? 3
		           : (p[0] & 0xf8) == 0xf0 ? 4
		                                   : 0;
		unsigned long cp = l == 1   ? p[0]
		                   : l == 2 ? p[0] & 0x1fu
		                   : l == 3 ? p[0] & 0x0fu
		                            : p[0] & 0x07u;
		bool whole = l && i + l <= len;
		for (size_t k = 1; whole && k < l; k++) {
			whole = (p[k] & 0xc0) == 0x80;
			cp = cp << 6 | (p[k] & 0x3fu);
		}
		if (whole && l > 1)
			whole = !((l == 2 && cp < 0x80) || (l == 3 && cp < 0x800) ||
			          (l == 4 && cp < 0x10000) || cp > 0x10ffff ||
			          (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff);
		i += whole ? l : 1;
	}
	return n;
}

static void check_xml(const char *name, size_t len, size_t max_chars)
{
	struct view_buf x = {0};

	check(view_xml_append(&x, name, len, max_chars) == 0, "view_xml_append failed", NULL);
	for (size_t i = 0; i < x.len; i++) {
		unsigned char c = (unsigned char)x.data[i];
		check(c != '<' && c != '>' && c != '"' && c != '\'', "markup in XML text", x.data);
		check(c >= 0x20 || c == '\t', "a control byte in XML text", x.data);
		if (c == '&')
			check(!strncmp(x.data + i, "&amp;", 5) || !strncmp(x.data + i, "&lt;", 4) ||
			              !strncmp(x.data + i, "&gt;", 4) ||
			              !strncmp(x.data + i, "&quot;", 6) ||
			              !strncmp(x.data + i, "&#39;", 5),
			      "an '&' that starts no entity", x.data);
		if (c >= 0x80) {
			size_t l = (c & 0xe0) == 0xc0   ? 2
			           : (c & 0xf0) == 0xe0 ? 3
			           : (c & 0xf8) == 0xf0 ? 4
			                                : 0;
			check(l && i + l <= x.len, "invalid UTF-8 in XML text", x.data);
			for (size_t k = 1; k < l; k++)
				check(((unsigned char)x.data[i + k] & 0xc0) == 0x80,
				      "invalid UTF-8 in XML text", x.data);
			i += l - 1;
		}
	}
	if (max_chars != SIZE_MAX) {
		/* Entities count as their character: decode them first. */
		size_t chars = 0;
		for (size_t i = 0; i < x.len; i++) {
			if (x.data[i] == '&')
				i = (size_t)((char *)memchr(x.data + i, ';', x.len - i) - x.data);
			chars += ((unsigned char)x.data[i] & 0xc0) != 0x80;
		}
		check(chars <= (max_chars >= 2 ? max_chars : 2),
		      "a cut name keeps more characters than asked", x.data);
		check(chars < max_chars || xml_chars(name, len) >= chars,
		      "a cut name has more characters than the name", x.data);
	}
	view_buf_free(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int flags = data[0] & 1 ? VIEW_ESCAPE_AT : 0;
	const char *name = (const char *)data + 1;
	size_t len = size - 1;

	check_escape(name, len, flags);
	check_text(name, len);
	check_xml(name, len, SIZE_MAX);
	check_xml(name, len, data[0]);

	/* The input as an escaped text name. */
	struct view_buf dec = {0};
	int rt = view_text_unescape(name, len, &dec);
	check(rt == 0 || rt == -EINVAL, "view_text_unescape returned an unexpected value", NULL);
	if (rt == 0) {
		struct view_buf again = {0}, back = {0};
		check(view_text_append(&again, dec.data ? dec.data : "", dec.len, 0) == 0 &&
		              view_text_unescape(again.data ? again.data : "", again.len, &back) ==
		                      0 &&
		              back.len == dec.len &&
		              (dec.len == 0 || memcmp(back.data, dec.data, dec.len) == 0),
		      "a decoded text name does not escape back", again.data);
		view_buf_free(&again);
		view_buf_free(&back);
	}
	view_buf_free(&dec);

	/* The input as a directory name. */
	struct view_buf raw = {0};
	int r = view_unescape(name, len, &raw);
	check(r == 0 || r == 1 || r == -EINVAL, "view_unescape returned an unexpected value", NULL);
	if (r == 0) {
		char esc[VIEW_NAME_MAX + 1];
		size_t n = view_escape(raw.data ? raw.data : "", raw.len, flags, esc);
		struct view_buf back = {0};
		int r2 = view_unescape(esc, n, &back);
		check(r2 == 1 || (r2 == 0 && back.len == raw.len &&
		                  (raw.len == 0 || memcmp(back.data, raw.data, raw.len) == 0)),
		      "re-escaping a decoded name does not round-trip", esc);
		view_buf_free(&back);
	}
	view_buf_free(&raw);
	return 0;
}
