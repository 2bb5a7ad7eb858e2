/*
 * check.h — the C tests' one way to check a condition: a failed check
 * prints "FAIL file:line: condition[: message]" on stderr and counts in
 * check_failures; the test goes on, so that one run shows every failure.
 * A test program's main returns non-zero when check_failures is (see
 * tests/README.md).  Test code: it prints.
 *
 *   CHECK(cond)              a condition
 *   CHECKF(cond, fmt, ...)   a condition, with a printf-style message
 *   CHECK_OK(expr)           expr, a call returning 0 or more, or -errno
 *   CHECK_STR(got, want)     two strings equal (got may be NULL: a failure)
 */
#ifndef FLAMEFS_TESTS_CHECK_H
#define FLAMEFS_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

/* One counter for the whole test program, however many files include
 * this header (a weak definition: the linker keeps one). */
__attribute__((weak)) int check_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr)                                                                             \
	do {                                                                                       \
		int r_ = (expr);                                                                   \
		if (r_ < 0) {                                                                      \
			fprintf(stderr, "FAIL %s:%d: %s returned %d (%s)\n", __FILE__, __LINE__,   \
			        #expr, r_, strerror(-r_));                                         \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!g_ || strcmp(g_, w_)) {                                                       \
			fprintf(stderr, "FAIL %s:%d: got \"%s\", want \"%s\"\n", __FILE__,         \
			        __LINE__, g_ ? g_ : "(null)", w_);                                 \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#endif
