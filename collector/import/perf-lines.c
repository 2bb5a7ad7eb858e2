/*
 * perf-lines.c — the line matchers of the perf script importer: sample
 * headers (comm, pid/tid, time, period, event), stack lines (function and
 * module, with Perl's backtracking), one-line samples of recordings
 * without callchains, and the sniff that recognizes perf script text from
 * its first lines.  Pure functions of a line's bytes; perf.c turns what
 * they match into samples (see its opening comment for the rules).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"

#include "perf-internal.h"

/* ---- header lines ---------------------------------------------------- */

/* A pid or tid of the digits s[0..n): 0 when negative (perf's -1),
 * empty or past 2^32 - 1. */
static uint32_t id_of(const char *s, size_t n, bool negative)
{
	uint64_t v = 0;

	if (negative || n == 0 || n > 10)
		return 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	return v > UINT32_MAX ? 0 : (uint32_t)v;
}

/* Matches stackcollapse-perf's header pattern: the shortest comm of two or
 * more bytes, then whitespace, a pid (or pid/tid: digits, slashes, digits)
 * and whitespace.  A pid or tid may be -1: perf prints ":-1 -1/-1" for a
 * sample it knows no thread of, which must not make the comm run on to
 * the period (and the time be missed).  Linear: each whitespace run is
 * tried once. */
bool perf_match_header(const char *l, size_t n, struct header *h)
{
	if (n < 2 || is_ws((unsigned char)l[0]))
		return false;
	for (size_t k = 2; k < n; k++) {
		if (!is_ws((unsigned char)l[k]))
			continue;
		if (k > 2 && is_ws((unsigned char)l[k - 1]))
			continue; /* same run as k-1: already tried */
		size_t j = k;
		while (j < n && is_ws((unsigned char)l[j]))
			j++;
		if (j + 2 < n && l[j] == '-' && l[j + 1] == '1' &&
		    !is_digit((unsigned char)l[j + 2]))
			j++;
		if (j == n || !is_digit((unsigned char)l[j]))
			continue;
		size_t a = j;
		while (j < n && is_digit((unsigned char)l[j]))
			j++;
		size_t a_end = j, slash = j;
		while (j < n && l[j] == '/')
			j++;
		bool two = j > slash;
		if (j + 2 < n && l[j] == '-' && l[j + 1] == '1' &&
		    !is_digit((unsigned char)l[j + 2]))
			j++;
		size_t b = j;
		while (j < n && is_digit((unsigned char)l[j]))
			j++;
		if (j < n && is_ws((unsigned char)l[j])) {
			h->comm = l;
			h->comm_len = k;
			h->end = j;
			/* a "-1" pid leaves its '1' for the digits */
			uint32_t first = id_of(l + a, a_end - a, a > 0 && l[a - 1] == '-');
			uint32_t second = id_of(l + b, j - b, b > 0 && l[b - 1] == '-');
			h->pid = two ? first : 0;
			h->tid = two ? second : first;
			return true;
		}
	}
	return false;
}

/* Matches /:\s*(\d+)*\s+(\S+):\s*$/ anywhere in the line: the last token
 * ends in ':' and names the event; an optional period sits between it and
 * an earlier ':'. */
void perf_match_event(const char *l, size_t n, struct header *h)
{
	size_t t = n, b, c, d;

	h->event = NULL;
	h->event_len = 0;
	h->period = NULL;
	h->period_len = 0;
	while (t > 0 && is_ws((unsigned char)l[t - 1]))
		t--;
	if (t < 2 || l[t - 1] != ':')
		return;
	b = t - 1;
	while (b > 0 && !is_ws((unsigned char)l[b - 1]))
		b--;
	if (b == t - 1 || b == 0)
		return; /* empty event name, or no whitespace before it */
	c = b;
	while (c > 0 && is_ws((unsigned char)l[c - 1]))
		c--;
	d = c;
	while (d > 0 && is_digit((unsigned char)l[d - 1]))
		d--;
	size_t e = d;
	while (e > 0 && is_ws((unsigned char)l[e - 1]))
		e--;
	if (e == 0 || l[e - 1] != ':')
		return;
	h->event = l + b;
	h->event_len = t - 1 - b;
	if (c > d) {
		h->period = l + d;
		h->period_len = c - d;
	}
}

/* The first "SECONDS.FRACTION:" token after the pid, as seconds and
 * microseconds.  Returns 1 when found, 0 when not, -ERANGE on overflow. */
int perf_header_time(const char *l, size_t n, size_t from, int64_t *sec, int64_t *frac_us)
{
	/* Tokens are tried in order by walking the ':' bytes that end one;
	 * l[from] is whitespace, so no token starts before from + 1. */
	for (size_t c = from; c < n;) {
		const char *col = memchr(l + c, ':', n - c);
		if (!col)
			return 0;
		size_t k = (size_t)(col - l);
		c = k + 1;
		if (k + 1 < n && !is_ws((unsigned char)l[k + 1]))
			continue;
		size_t s = k;
		while (s > from && !is_ws((unsigned char)l[s - 1]))
			s--;
		/* token l[s..k] must be DIGITS.DIGITS: */
		size_t j = s;
		while (j < k && is_digit((unsigned char)l[j]))
			j++;
		if (j == s || j >= k || l[j] != '.')
			continue;
		size_t f = j + 1;
		while (f < k && is_digit((unsigned char)l[f]))
			f++;
		if (f == j + 1 || f != k)
			continue;
		int64_t v = 0, us = 0;
		for (size_t q = s; q < j; q++) {
			if (v > (INT64_MAX - 9) / 10)
				return -ERANGE;
			v = v * 10 + (l[q] - '0');
		}
		for (size_t q = j + 1; q < j + 7; q++)
			us = us * 10 + (q < k ? l[q] - '0' : 0);
		*sec = v;
		*frac_us = us;
		return 1;
	}
	return 0;
}

/* The decimal digits s[0..n) into *out: 0, or -ERANGE past 2^64 - 1. */
int perf_parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n <= 19) { /* 19 digits cannot pass 2^64 - 1 */
		for (size_t i = 0; i < n; i++)
			v = v * 10 + (unsigned)(s[i] - '0');
		*out = v;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
			return -ERANGE;
	}
	*out = v;
	return 0;
}

/* ---- stack lines ------------------------------------------------------ */

/* Matches /^\s*(\w+)\s*(.+) \((.*)\)/ with Perl's backtracking: the
 * function runs to the last " (" that has a ")" after it, the module from
 * there to the last ")".  Offsets are relative to l. */
bool perf_match_stack_line(const char *l, size_t n, struct stack_line *sl)
{
	size_t s = 0, e, f, start, L, q;

	while (s < n && is_ws((unsigned char)l[s]))
		s++;
	if (s == n || !is_word((unsigned char)l[s]))
		return false;
	e = s;
	while (e < n && is_word((unsigned char)l[e]))
		e++;
	f = e;
	while (f < n && is_ws((unsigned char)l[f]))
		f++;

	const char *rp = memrchr(l, ')', n);
	if (!rp)
		return false;
	L = (size_t)(rp - l);
	if (L < 2)
		return false;
	/* the last " (" at q with q + 2 <= L */
	size_t lim = L; /* look for '(' in l[1..lim) */
	for (;;) {
		const char *op = lim > 1 ? memrchr(l + 1, '(', lim - 1) : NULL;
		if (!op)
			return false;
		q = (size_t)(op - l) - 1;
		if (l[q] == ' ')
			break;
		lim = q + 1;
	}

	if (q >= f + 1) {
		start = f;
	} else if (q >= 1 && q - 1 >= e) {
		start = q - 1; /* \s* gives back whitespace */
	} else if (q == e && e - s >= 2) {
		start = e - 1; /* \w+ gives back its last byte */
	} else {
		return false;
	}
	if (start >= q)
		return false;
	sl->func = start;
	sl->func_len = q - start;
	sl->mod = q + 2;
	sl->mod_len = L - (q + 2);
	return true;
}

/* The length of func without a trailing "+0x<lowercase hex>" offset. */
size_t perf_strip_offset(const char *func, size_t flen)
{
	size_t h = flen;

	while (h > 0 && is_hex_lower((unsigned char)func[h - 1]))
		h--;
	if (h < flen && h >= 3 && memcmp(func + h - 3, "+0x", 3) == 0)
		return h - 3;
	return flen;
}

/* The first "->" in s[0..n), or NULL. */
const char *perf_find_arrow(const char *s, size_t n)
{
	const char *end = s + n;

	while (n >= 2) {
		const char *d = memchr(s, '-', n - 1);
		if (!d)
			return NULL;
		if (d[1] == '>')
			return d;
		s = d + 1;
		n = (size_t)(end - s);
	}
	return NULL;
}

/* The token at l[j..) (up to whitespace or n): its end. */
static size_t token_end(const char *l, size_t n, size_t j)
{
	while (j < n && !is_ws((unsigned char)l[j]))
		j++;
	return j;
}

static bool all_of(const char *s, size_t n, bool (*is)(unsigned char))
{
	for (size_t i = 0; i < n; i++)
		if (!is((unsigned char)s[i]))
			return false;
	return n > 0;
}

/* perf script's fields between the pid and the ip: "[cpu]" and a time
 * "SECONDS.FRACTION:" (returns 1), an event "NAME:" (2), anything else 0. */
static int field_kind(const char *t, size_t n)
{
	if (n >= 3 && t[0] == '[' && t[n - 1] == ']' && all_of(t + 1, n - 2, is_digit))
		return 1;
	if (n < 2 || t[n - 1] != ':')
		return 0;
	const char *dot = memchr(t, '.', n - 1);
	if (dot && all_of(t, (size_t)(dot - t), is_digit) &&
	    all_of(dot + 1, (size_t)(t + n - 1 - dot - 1), is_digit))
		return 1;
	return 2;
}

/* True when l[j..n) is a hex pc, whitespace and a stack line. */
static bool pc_and_stack_line(const char *l, size_t n, size_t j)
{
	size_t e = token_end(l, n, j);
	struct stack_line sl;

	return e < n && all_of(l + j, e - j, is_hex_lower) &&
	       perf_match_stack_line(l + j, n - j, &sl);
}

/* Matches a sample line of a recording without callchains, l[0..n) with
 * the leading whitespace already skipped (perf right-aligns the comm;
 * converters and sed may not): a header (comm pid), any of perf's fields
 * -- "[cpu]", a time "S.F:", a period, the event "NAME:" -- then a stack
 * line (hex pc, symbol, "(module)").  A number is the period when the
 * event or a pc and a stack line follow it, else the pc.  Fills h (event,
 * period) and *tail, the offset of the stack line's part. */
bool perf_match_one_line(const char *l, size_t n, struct header *h, size_t *tail)
{
	if (!perf_match_header(l, n, h))
		return false;
	h->event = h->period = NULL;
	h->event_len = h->period_len = 0;
	for (size_t k = h->end;;) {
		size_t j = k;
		while (j < n && is_ws((unsigned char)l[j]))
			j++;
		size_t e = token_end(l, n, j);
		if (j == k || e == n)
			return false;
		if (!h->event && !h->period && all_of(l + j, e - j, is_digit)) {
			size_t f = e;
			while (f < n && is_ws((unsigned char)l[f]))
				f++;
			size_t g = token_end(l, n, f);
			if (field_kind(l + f, g - f) == 2 || pc_and_stack_line(l, n, f)) {
				h->period = l + j;
				h->period_len = e - j;
				k = e;
				continue;
			}
		}
		int kind = h->event ? 0 : field_kind(l + j, e - j);
		if (kind == 0) {
			if (!pc_and_stack_line(l, n, j))
				return false;
			*tail = j;
			return true;
		}
		if (kind == 2) {
			h->event = l + j;
			h->event_len = e - j - 1;
		}
		k = e;
	}
}

/* Accepts every layout import_perf() reads, after any side-band records
 * (perf_match_record): a header naming an event; a
 * header without one, then a stack line, indented or flush left (older
 * perf and some converters write them so), or a blank line and another
 * such header (a sample without stack lines); a line of a recording
 * without callchains, indented or flush left. */
bool import_perf_sniff(const uint8_t *buf, size_t len)
{
	const char *p = (const char *)buf, *end = p + len;
	struct header h;
	size_t tail;
	bool header = false, blank = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t skip = 0;
		while (skip < n && is_ws((unsigned char)p[skip]))
			skip++;
		if (skip == n || p[0] == '#') {
			if (!nl)
				return header;
			blank |= skip == n && p[0] != '#';
			p = nl + 1;
			continue;
		}
		if (memchr(p, '\0', n))
			return false;
		bool is_header = skip == 0 && perf_match_header(p, n, &h);
		struct perf_mmap m;
		if (!header && skip == 0 && !is_header && perf_match_record(p, n, &m) >= 0) {
			if (!nl)
				return false;
			p = nl + 1; /* a record the header pattern does not take */
			continue;
		}
		if (header && !blank) /* the line after a header without an event */
			return !is_header && perf_match_stack_line(p, n, &(struct stack_line){0});
		if (skip > 0)
			return !header && perf_match_one_line(p + skip, n - skip, &h, &tail);
		if (!is_header)
			return false;
		perf_match_event(p, n, &h);
		if (!h.event && !header && perf_match_record(p, n, &m) >= 0) {
			if (!nl)
				return false;
			p = nl + 1; /* a side-band record (--show-mmap-events) */
			continue;
		}
		if (h.event || !nl)
			return true; /* named an event, or the input ends in it */
		if (!header && perf_match_one_line(p, n, &h, &tail))
			return true;
		header = true;
		blank = false;
		p = nl + 1;
	}
	return header;
}

/* ---- side-band records (perf script --show-mmap-events, ...) ----------- */

/* Hex digits s[0..n) (an optional "0x" first) into *v: false when there
 * are none, another byte, or more than 64 bits. */
static bool hex_u64(const char *s, size_t n, uint64_t *v)
{
	if (n > 2 && s[0] == '0' && s[1] == 'x')
		s += 2, n -= 2;
	if (n == 0 || n > 16)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
		             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a') + 10u
		             : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A') + 10u
		                                    : 16u;
		if (d == 16)
			return false;
		x = x << 4 | d;
	}
	*v = x;
	return true;
}

bool perf_parse_hex(const char *s, size_t n, uint64_t *v)
{
	return hex_u64(s, n, v);
}

/* Matches a side-band record perf script prints among the samples
 * ("COMM PID TIME: PERF_RECORD_NAME ..."), l[0..n) a header that names
 * no event.  Returns -1 when it is not one, 0 for a record that
 * names no executable file mapping, 1 for an executable mapping
 * (PERF_RECORD_MMAP or MMAP2 of a process, prot with 'x'):
 *   PERF_RECORD_MMAP2 PID/TID: [0xSTART(0xLEN) @ PGOFF MAJ:MIN INO GEN]: PROT PATH
 *   PERF_RECORD_MMAP PID/TID: [0xSTART(0xLEN) @ PGOFF]: PROT PATH
 * filling *m (path: offsets into l). */
int perf_match_record(const char *l, size_t n, struct perf_mmap *m)
{
	/* after the comm, pid and time; searched for, as a one-byte comm
	 * makes the header pattern run on past the record's name */
	const char *r = memmem(l, n, ": PERF_RECORD_", 14);
	if (!r)
		return -1;
	size_t j = (size_t)(r - l) + 2;
	size_t e = token_end(l, n, j);
	bool mmap2 = e - j == 17 && memcmp(l + j, "PERF_RECORD_MMAP2", 17) == 0;
	if (!mmap2 && !(e - j == 16 && memcmp(l + j, "PERF_RECORD_MMAP", 16) == 0))
		return 0;
	/* PID/TID: */
	j = e;
	while (j < n && is_ws((unsigned char)l[j]))
		j++;
	size_t d = j;
	while (d < n && is_digit((unsigned char)l[d]))
		d++;
	uint64_t pid;
	if (d == j || d - j > 10 || perf_parse_u64(l + j, d - j, &pid) < 0 || pid > UINT32_MAX ||
	    d == n || l[d] != '/')
		return 0; /* pid -1: the kernel's */
	/* [0xSTART(0xLEN) @ PGOFF ...]: PROT PATH */
	const char *lb = memchr(l + d, '[', n - d);
	if (!lb)
		return 0;
	j = (size_t)(lb - l) + 1;
	const char *lp = memchr(l + j, '(', n - j);
	if (!lp || !hex_u64(l + j, (size_t)(lp - l) - j, &m->start))
		return 0;
	j = (size_t)(lp - l) + 1;
	const char *rp = memchr(l + j, ')', n - j);
	if (!rp || !hex_u64(l + j, (size_t)(rp - l) - j, &m->len))
		return 0;
	j = (size_t)(rp - l) + 1;
	while (j < n && is_ws((unsigned char)l[j]))
		j++;
	if (j == n || l[j] != '@')
		return 0;
	j++;
	while (j < n && is_ws((unsigned char)l[j]))
		j++;
	e = j;
	while (e < n && !is_ws((unsigned char)l[e]) && l[e] != ']')
		e++;
	if (!hex_u64(l + j, e - j, &m->pgoff))
		return 0;
	const char *close = memchr(l + e, ']', n - e);
	if (!close || (size_t)(close - l) + 2 >= n || close[1] != ':')
		return 0;
	j = (size_t)(close - l) + 2;
	while (j < n && is_ws((unsigned char)l[j]))
		j++;
	e = token_end(l, n, j); /* the protection: "r-xp", or "x" */
	if (e == j || e == n || !memchr(l + j, 'x', e - j))
		return 0;
	j = e + 1;
	if (j >= n || m->len == 0 || m->start + m->len < m->start)
		return 0;
	m->pid = (uint32_t)pid;
	m->path = j;
	m->path_len = n - j;
	return 1;
}
