/*
 * fuzz-sqlnorm.c — libFuzzer target for collector/record/sqlnorm.c.  The
 * first byte of the input picks an output buffer size (0..255), the rest
 * is a query string.  Checks: sqlnorm_text and sqlnorm_statement write a
 * NUL-terminated text within the buffer; a small buffer's output is a
 * prefix of the output into a buffer large enough for everything (8 times
 * the input plus 64: a constant of one byte becomes at most "$" and its
 * number), cut no shorter than 4 bytes before the buffer's end (only a
 * UTF-8 character is dropped); valid UTF-8 in gives valid UTF-8 out; and
 * sqlnorm_next splits the text into statements that are in order, inside
 * it and never empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlnorm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz-sqlnorm: %s\n", what);
	abort();
}

static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k = c < 0x80             ? 1
		           : (c & 0xE0) == 0xC0 ? 2
		           : (c & 0xF0) == 0xE0 ? 3
		           : (c & 0xF8) == 0xF0 ? 4
		                                : 0;
		if (!k || i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xC0) != 0x80)
				return 0;
		i += k;
	}
	return 1;
}

static void one(size_t (*fn)(const char *, size_t, char *, size_t), const char *sql, size_t len,
                size_t small)
{
	size_t big = len * 8 + 64;
	char *full = malloc(big);
	char *cut = malloc(small + 1);
	if (!full || !cut)
		abort();
	size_t wf = fn(sql, len, full, big);
	check(wf < big && full[wf] == '\0', "full output not terminated");
	cut[small] = 0x5a;
	size_t wc = fn(sql, len, cut, small);
	check(cut[small] == 0x5a, "wrote past the buffer");
	if (small) {
		check(wc < small && cut[wc] == '\0', "cut output not terminated");
		check(memcmp(cut, full, wc) == 0, "cut output is not a prefix of the full one");
		size_t want = wf < small - 1 ? wf : small - 1;
		check(wc <= want && wc + 4 > want, "cut output too short");
	} else {
		check(wc == 0, "wrote into no buffer");
	}
	size_t n = strnlen(sql, len);
	if (valid_utf8((const unsigned char *)sql, n))
		check(valid_utf8((const unsigned char *)full, wf) &&
		              (!small || valid_utf8((const unsigned char *)cut, wc)),
		      "valid UTF-8 in, invalid out");
	free(full);
	free(cut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t small = data[0];
	size_t len = size - 1;
	char *sql = malloc(len ? len : 1); /* exact length: no NUL after it */
	if (!sql)
		abort();
	memcpy(sql, data + 1, len);
	one(sqlnorm_text, sql, len, small);
	one(sqlnorm_statement, sql, len, small);
	size_t pos = 0, start, end, last = 0;
	while (sqlnorm_next(sql, len, &pos, &start, &end)) {
		check(start >= last && start < end && end <= len && pos >= end,
		      "statement out of order");
		last = pos;
	}
	free(sql);
	return 0;
}
