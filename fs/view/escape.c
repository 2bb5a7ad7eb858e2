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
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "view.h"

/* Length of the "%~" + 16 hex digits suffix of a shortened name. */
#define HASH_SUFFIX_LEN 18

static const char hexdigits[] = "0123456789ABCDEF";

/* Names a frame must not take verbatim because the view uses them (the
 * files of call-tree and diff directories, and @diff's regressions). */
static const char *const reserved[] = {
        "folded",    "self",        "total", "pprof",   "name",     "flame.svg",
        "callgrind", "regressions", "top",   "quality", "timeline", "timeline.svg",
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
