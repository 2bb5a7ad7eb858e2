/*
 * test-sqlnorm.c — collector/record/sqlnorm.c on hostile input: literals,
 * comments and identifiers left open at the end, NUL bytes, statements of
 * 1 MB and nesting a million deep, invalid UTF-8, output buffers of every
 * small size, and 200,000 random strings of SQL's special characters.
 * Every input is copied into a buffer of exactly its length (no NUL after
 * it), so a read past the end is caught by ASan or valgrind; every output
 * buffer has guard bytes after it.  (Agreement with pg_stat_statements is
 * test-sqlnorm.sh's.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sqlnorm.h"

#define GUARD 16

/* sqlnorm_statement (text = 0) or sqlnorm_text (text = 1) of sql[0..len)
 * held in an exact-length heap copy, into a heap buffer of size bytes with
 * guards; returns a malloc'd copy of the output (the caller frees). */
static char *norm(const char *sql, size_t len, size_t size, int text, size_t *written)
{
	char *in = malloc(len ? len : 1);
	char *out = malloc(size + GUARD);
	if (!in || !out) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	memcpy(in, sql, len);
	memset(out, 0x5a, size + GUARD);
	size_t w = text ? sqlnorm_text(in, len, out, size) : sqlnorm_statement(in, len, out, size);
	for (size_t i = size; i < size + GUARD; i++)
		CHECKF((unsigned char)out[i] == 0x5a, "byte %zu past the buffer of %zu written", i,
		       size);
	if (size) {
		CHECKF(w < size, "wrote %zu into %zu bytes", w, size);
		CHECKF(w < size && out[w] == '\0' && strlen(out) == w, "no NUL at %zu", w);
	} else {
		CHECKF(w == 0, "wrote %zu into no buffer", w);
	}
	char *copy = strndup(size ? out : "", w);
	free(in);
	free(out);
	if (written)
		*written = w;
	return copy;
}

static void expect(const char *sql, size_t len, const char *want)
{
	char *got = norm(sql, len, 4096, 0, NULL);
	CHECKF(strcmp(got, want) == 0, "input \"%.60s\": got \"%s\", want \"%s\"", sql, got, want);
	free(got);
}

#define EXPECT(lit, want) expect(lit, sizeof(lit) - 1, want)

static void test_unterminated(void)
{
	EXPECT("SELECT 'abc", "SELECT $1");
	EXPECT("SELECT E'abc\\", "SELECT $1");
	EXPECT("SELECT E'abc\\'", "SELECT $1");
	EXPECT("SELECT $$abc", "SELECT $1");
	EXPECT("SELECT $tag$abc$ta", "SELECT $1");
	EXPECT("SELECT $", "SELECT $");
	EXPECT("SELECT 1 /* open", "SELECT $1 /* open");
	EXPECT("SELECT 1 /* a /* b */", "SELECT $1 /* a /* b */");
	EXPECT("SELECT \"open, 1", "SELECT \"open, 1");
	EXPECT("SELECT U&'x", "SELECT $1");
	EXPECT("SELECT B'", "SELECT $1");
	EXPECT("SELECT 'a'\n", "SELECT $1\n");
	EXPECT("SELECT 'a'\n  -- c", "SELECT $1\n  -- c");
	EXPECT("SELECT -", "SELECT -");
	EXPECT("SELECT -(", "SELECT -(");
	EXPECT("SELECT -((1)", "SELECT -(($1)");
	EXPECT("SELECT 1e", "SELECT $1e");
	EXPECT("SELECT 1::numeric(", "SELECT $1::numeric(");
	EXPECT("SELECT 1 ORDER BY", "SELECT $1 ORDER BY");
	EXPECT("", "");
	EXPECT("SELECT", "SELECT");
}

static void test_nul(void)
{
	/* PostgreSQL's text ends at a NUL: so does the statement. */
	EXPECT("SELECT 1\0 'x'", "SELECT $1");
	EXPECT("SELECT 'a\0b'", "SELECT $1");
	EXPECT("\0SELECT 1", "");
	char *got = norm("SELECT 1; SELECT 2\0; SELECT 3", 28, 64, 1, NULL);
	CHECK_STR(got, "SELECT $1; SELECT $1");
	free(got);
	size_t pos = 0, start, end;
	CHECK(sqlnorm_next("\0SELECT 1", 9, &pos, &start, &end) == 0);
	CHECK(sqlnorm_next(NULL, 0, &pos, &start, &end) == 0);
	CHECK(sqlnorm_statement(NULL, 0, NULL, 0) == 0);
}

static void test_split(void)
{
	const char *q = "  SELECT 1 ; ; /* only a comment */ ;\n-- c\nSELECT 'a;b' -- x;\n";
	size_t pos = 0, start, end;
	CHECK(sqlnorm_next(q, strlen(q), &pos, &start, &end) == 1);
	CHECKF(start == 2 && end == 10, "first statement [%zu, %zu)", start, end);
	CHECK(sqlnorm_next(q, strlen(q), &pos, &start, &end) == 1);
	CHECKF(strncmp(q + start, "-- c\nSELECT 'a;b' -- x;", end - start) == 0 &&
	               end - start == 23,
	       "second statement \"%.*s\"", (int)(end - start), q + start);
	CHECK(sqlnorm_next(q, strlen(q), &pos, &start, &end) == 0);
	char *got = norm(q, strlen(q), 256, 1, NULL);
	CHECK_STR(got, "SELECT $1; -- c\nSELECT $1 -- x;");
	free(got);
}

static void test_big(void)
{
	const size_t mb = 1 << 20;
	char *q = malloc(mb);
	if (!q)
		exit(1);
	/* A 1 MB string literal: one constant. */
	memcpy(q, "SELECT '", 8);
	memset(q + 8, 'a', mb - 9);
	q[mb - 1] = '\'';
	char *got = norm(q, mb, 4096, 0, NULL);
	CHECK_STR(got, "SELECT $1");
	free(got);
	/* 1 MB of "1," : 349,523 constants; the output is cut at the buffer. */
	memcpy(q, "SELECT ", 7);
	for (size_t i = 7; i < mb; i++)
		q[i] = (i - 7) % 3 == 2 ? ',' : '1';
	size_t w;
	got = norm(q, mb, 4096, 0, &w);
	CHECKF(w == 4095, "wrote %zu", w);
	CHECK(strncmp(got, "SELECT $1,$2,$3,$4", 18) == 0);
	free(got);
	got = norm(q, mb, 8 << 20, 0, &w);
	CHECKF(strstr(got, "$349523") != NULL && strstr(got, "$349524") == NULL,
	       "constants numbered to %s", strrchr(got, '$'));
	free(got);
	/* A million open parentheses, then a number: no recursion to overflow. */
	memcpy(q, "SELECT ", 7);
	memset(q + 7, '(', mb - 8);
	q[mb - 1] = '1';
	got = norm(q, mb, 16, 0, &w);
	CHECK(w == 15 && strncmp(got, "SELECT ((((((((", 15) == 0);
	free(got);
	/* A million unary minus signs before a number. */
	memcpy(q, "SELECT ", 7);
	memset(q + 7, '-', mb - 8);
	q[mb - 1] = '1';
	got = norm(q, mb, 4096, 0, NULL);
	CHECKF(strcmp(got, "SELECT ") == 0 || strncmp(got, "SELECT -", 8) == 0, "got %.20s", got);
	free(got);
	free(q);
}

static void test_utf8(void)
{
	EXPECT("SELECT '\xff\xfe' AS \xc3\x28, 1", "SELECT $1 AS \xc3\x28, $2");
	EXPECT("SELECT \xe2\x82 1", "SELECT \xe2\x82 $1");
	/* A cut never splits a character: "SELECT 'x' AS é€😀" into sizes
	 * around each character's bytes. */
	const char *q = "SELECT 1 AS \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"";
	const char *full = "SELECT $1 AS \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"";
	size_t fl = strlen(full);
	for (size_t size = 0; size <= fl + 2; size++) {
		size_t w;
		char *got = norm(q, strlen(q), size, 0, &w);
		size_t want = size ? (size - 1 < fl ? size - 1 : fl) : 0;
		/* back off to the start of a character the cut would split */
		while (want < fl && want > 0 && ((unsigned char)full[want] & 0xC0) == 0x80)
			want--;
		CHECKF(w == want && memcmp(got, full, w) == 0, "size %zu: wrote %zu, want %zu",
		       size, w, want);
		free(got);
	}
}

/* Random strings over SQL's special characters: only the invariants that
 * norm() checks (bounds, guards, NUL) and that the output of a statement
 * without literals is its input. */
static void test_random(void)
{
	static const char alphabet[] = "'\"$-/*();,:.eEbBxXuU&0123456789 \n\tab\\+=<>[]\xc3\xff";
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char q[64];
	for (int i = 0; i < 200000; i++) {
		size_t len = 1 + (size_t)(x % sizeof(q));
		for (size_t k = 0; k < len; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			q[k] = alphabet[x % (sizeof(alphabet) - 1)];
		}
		size_t size = (size_t)(x >> 40) % 96;
		free(norm(q, len, size, i & 1, NULL));
		if (check_failures)
			break;
	}
	EXPECT("CREATE TABLE x (a int DEFAULT 1)", "CREATE TABLE x (a int DEFAULT 1)");
}

int main(void)
{
	test_unterminated();
	test_nul();
	test_split();
	test_big();
	test_utf8();
	test_random();
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}
