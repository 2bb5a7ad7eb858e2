/*
 * escape.c — the reversible mapping between frame names and directory
 * names.  Frame names may hold any byte, including '/', NUL and newlines,
 * may be "." or "..", may collide with the view's own file names, and may
 * be longer than NAME_MAX.  view_escape() percent-encodes the bytes a
 * directory name cannot or should not hold, encodes the first byte of
 * names that would be hidden, reserved or taken for the view's own '@'
 * directories, and shortens long names with a
 * stable hash suffix.  view_unescape() reverses it.  See fs/README.md for
 * the rule as users see it.
 *
 * It also holds the two escapings of names inside files: view_text_put()
 * for the text files (a `\xNN` for every byte that could break a line or
 * drive a terminal, and for ';' inside a folded path), reversible by
 * view_text_unescape(); and view_xml_append(), the one function every SVG
 * renderer writes a string through, so that no name, unit or event can
 * close an element or open one (fs/view/README.md, "Names in files").
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "view.h"

/* Length of the "%~" + 16 hex digits suffix of a shortened name. */
#define HASH_SUFFIX_LEN 18

static const char hexdigits[] = "0123456789ABCDEF";

/* Names a frame must not take verbatim because the view uses them (the
 * files of call-tree and diff directories, @diff's regressions, a
 * window's window and a version's about). */
static const char *const reserved[] = {
        "folded",    "self",         "total",       "pprof",  "name",
        "flame.svg", "callgrind",    "regressions", "top",    "quality",
        "timeline",  "timeline.svg", "heatmap.svg", "window", "about",
};

static bool is_reserved(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strlen(reserved[i]) == len && memcmp(reserved[i], name, len) == 0)
			return true;
	return false;
}

static bool needs_escape(unsigned char c, int flags)
{
	if (c < 0x20 || c == 0x7f || c == '%' || c == '/')
		return true;
	return c == '@' && (flags & VIEW_ESCAPE_AT);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

size_t view_escape(const char *name, size_t len, int flags, char out[VIEW_NAME_MAX + 1])
{
	/* Worst case for the part we keep: VIEW_NAME_MAX bytes; anything
	 * longer is shortened, so we stop encoding once past the limit. */
	char tmp[VIEW_NAME_MAX + 4];
	size_t o = 0, i;
	bool first_escaped;

	if (len == 0) {
		out[0] = '%';
		out[1] = '\0';
		return 1;
	}
	/* '.' would hide the name (or be "." or ".."); '@' starts the view's
	 * own directories (@last, @range, @diff, @functions). */
	first_escaped = name[0] == '.' || name[0] == '@' || is_reserved(name, len);
	for (i = 0; i < len && o <= VIEW_NAME_MAX; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((i == 0 && first_escaped) || needs_escape(c, flags)) {
			tmp[o++] = '%';
			tmp[o++] = hexdigits[c >> 4];
			tmp[o++] = hexdigits[c & 15];
		} else {
			tmp[o++] = (char)c;
		}
	}
	if (i == len && o <= VIEW_NAME_MAX) {
		memcpy(out, tmp, o);
		out[o] = '\0';
		return o;
	}

	/* Too long: keep a prefix that does not split a UTF-8 sequence or a
	 * %XX triplet, and add "%~" and a hash of the whole name.  The
	 * UTF-8 step goes first: it only moves over bytes >= 0x80, which
	 * are never part of a triplet, and a triplet starts with '%', which
	 * is never part of a UTF-8 sequence, so neither step undoes the
	 * other. */
	size_t cut = VIEW_NAME_MAX - HASH_SUFFIX_LEN;
	for (size_t back = 1; back <= 3 && back <= cut; back++) {
		unsigned char c = (unsigned char)tmp[cut - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t seq = (c & 0xe0) == 0xc0   ? 2
		             : (c & 0xf0) == 0xe0 ? 3
		             : (c & 0xf8) == 0xf0 ? 4
		                                  : 1;
		if (seq > back)
			cut -= back; /* the sequence starting there runs past the cut */
		break;
	}
	/* Every '%' in tmp starts a triplet. */
	if (cut >= 1 && tmp[cut - 1] == '%')
		cut -= 1;
	else if (cut >= 2 && tmp[cut - 2] == '%')
		cut -= 2;
	memcpy(out, tmp, cut);
	uint64_t h = XXH64(name, len, 0);
	out[cut++] = '%';
	out[cut++] = '~';
	for (int k = 15; k >= 0; k--)
		out[cut++] = "0123456789abcdef"[(h >> (k * 4)) & 15];
	out[cut] = '\0';
	return cut;
}

int view_unescape(const char *dirname, size_t len, struct view_buf *out)
{
	size_t i = 0, run;
	int r;

	if (len == 1 && dirname[0] == '%')
		return view_buf_reserve(out, 0);
	if (len == 0)
		return -EINVAL;
	while (i < len) {
		if (dirname[i] != '%') {
			for (run = i; run < len && dirname[run] != '%'; run++)
				if (dirname[run] == '/' || dirname[run] == '\0')
					return -EINVAL;
			r = view_buf_append(out, dirname + i, run - i);
			if (r < 0)
				return r;
			i = run;
			continue;
		}
		if (i + 1 < len && dirname[i + 1] == '~') {
			if (len - i != HASH_SUFFIX_LEN)
				return -EINVAL;
			for (size_t k = i + 2; k < len; k++)
				if (hexval(dirname[k]) < 0)
					return -EINVAL;
			return 1;
		}
		if (i + 2 >= len)
			return -EINVAL;
		int hi = hexval(dirname[i + 1]), lo = hexval(dirname[i + 2]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		char c = (char)(hi << 4 | lo);
		r = view_buf_append(out, &c, 1);
		if (r < 0)
			return r;
		i += 3;
	}
	return 0;
}

/* ---- names in text files --------------------------------------------- */

/* What view_text_put() does with each byte: keep it, escape it, escape it
 * in a folded path only (';'), or look at the next byte (0xc2 starts the
 * UTF-8 form of U+0080..U+009F, the C1 controls, CSI among them). */
enum { T_KEEP, T_ESC, T_FOLDED, T_C2 };

static unsigned char text_class(unsigned char c)
{
	if (c < 0x20 || c == 0x7f || c == '\\')
		return T_ESC;
	if (c == ';')
		return T_FOLDED;
	if (c == 0xc2)
		return T_C2;
	return T_KEEP;
}

/* How many bytes of s[i..len) from s[i] on are escaped (0, 1 or 2). */
static size_t text_escaped_at(const unsigned char *s, size_t i, size_t len, int flags)
{
	switch (text_class(s[i])) {
	case T_ESC: return 1;
	case T_FOLDED: return (flags & VIEW_TEXT_FOLDED) ? 1 : 0;
	case T_C2: return i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f ? 2 : 0;
	default: return 0;
	}
}

bool view_text_plain(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	/* The common bytes (printable ASCII but ';' and '\\', and the other
	 * bytes of UTF-8) in one test; the rest (0xc2 only when a C1
	 * control's second byte follows) asked the rule. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if ((c > ';' && c != '\\' && c != 0x7f && c != 0xc2) || (c >= 0x20 && c < ';'))
			continue;
		if (text_escaped_at(p, i, len, VIEW_TEXT_FOLDED))
			return false;
	}
	return true;
}

size_t view_text_len(const char *s, size_t len, int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t out = len;

	for (size_t i = 0; i < len; i++) {
		size_t e = text_escaped_at(p, i, len, flags);
		out += 3 * e;
		i += e ? e - 1 : 0;
	}
	return out;
}

char *view_text_put(char *out, const char *s, size_t len, int flags)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		size_t e = text_escaped_at(p, i, len, flags);
		if (e == 0) {
			*out++ = (char)p[i];
			continue;
		}
		for (size_t k = 0; k < e; k++) {
			*out++ = '\\';
			*out++ = 'x';
			*out++ = "0123456789abcdef"[p[i + k] >> 4];
			*out++ = "0123456789abcdef"[p[i + k] & 15];
		}
		i += e - 1;
	}
	return out;
}

int view_text_append(struct view_buf *b, const char *s, size_t len, int flags)
{
	size_t n = view_text_len(s, len, flags);
	int r = view_buf_reserve(b, n);

	if (r < 0)
		return r;
	view_text_put(b->data + b->len, s, len, flags);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int view_text_unescape(const char *s, size_t len, struct view_buf *out)
{
	size_t i = 0;
	int r;

	while (i < len) {
		const char *bs = memchr(s + i, '\\', len - i);
		size_t run = bs ? (size_t)(bs - (s + i)) : len - i;
		if ((r = view_buf_append(out, s + i, run)) < 0)
			return r;
		i += run;
		if (i == len)
			break;
		if (len - i < 4 || s[i + 1] != 'x' || hexval(s[i + 2]) < 0 || hexval(s[i + 3]) < 0)
			return -EINVAL;
		char c = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
		if ((r = view_buf_append(out, &c, 1)) < 0)
			return r;
		i += 4;
	}
	return view_buf_reserve(out, 0);
}

/* ---- text in SVG and HTML -------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		len = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

int view_xml_append(struct view_buf *b, const char *s, size_t len, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0, i, keep = len;
	int r = 0;

	/* Whether, and where, to cut: where limit - 2 characters end, if
	 * more than limit follow (the scan stops there, so a long name costs
	 * what is written of it, not its length).  The limit is at least 2,
	 * the ".." that marks a cut: a cut name never has more characters
	 * than the name. */
	size_t limit = max_chars >= 2 ? max_chars : 2, want = limit - 2, cut = 0;
	for (i = 0; i < len && chars <= limit; chars++) {
		if (chars == want)
			cut = i;
		size_t l = utf8_len(p + i, len - i);
		i += l ? l : 1;
	}
	if (chars > limit)
		keep = cut;
	for (i = 0; i < keep && r == 0;) {
		size_t l = utf8_len(p + i, len - i), run;
		unsigned char c = p[i];
		if (l == 0 || (c < 0x20 && c != '\t') || c == 0x7f) {
			r = view_buf_append(b, "\xef\xbf\xbd", 3); /* U+FFFD */
			i += 1;
			continue;
		}
		switch (c) {
		case '&': r = view_buf_append(b, "&amp;", 5); break;
		case '<': r = view_buf_append(b, "&lt;", 4); break;
		case '>': r = view_buf_append(b, "&gt;", 4); break;
		case '"': r = view_buf_append(b, "&quot;", 6); break;
		case '\'': r = view_buf_append(b, "&#39;", 5); break;
		default:
			/* A run of plain ASCII at once, else the one character. */
			for (run = l; l == 1 && i + run < keep && p[i + run] >= 0x20 &&
			              p[i + run] < 0x7f && !strchr("&<>\"'", p[i + run]);
			     run++)
				;
			r = view_buf_append(b, s + i, run);
			l = run;
		}
		i += l;
	}
	if (r == 0 && keep < len)
		r = view_buf_append(b, "..", 2);
	return r;
}
