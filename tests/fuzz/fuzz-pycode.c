/*
 * fuzz-pycode.c — libFuzzer target for the reader of CPython code objects
 * (collector/symbolize/python.c), which reads the memory of any
 * Python process `record` samples, hostile ones included.  The input is
 * that process's memory: its bytes lie at FUZZ_BASE, the code object at
 * FUZZ_BASE, and an address outside them cannot be read (as
 * process_vm_readv would fail).  PyCode_Type is at FUZZ_CODE_TYPE.
 * Every read must stay bounded; a code object read must give NUL-ended
 * names of at most 1024 characters in valid UTF-8, a line table of at
 * most 64 KiB and the check of what was read; the line of any
 * instruction must be found without a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

#define FUZZ_BASE      0x10000ull
#define FUZZ_CODE_TYPE 0x7f0000001000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct image {
	const uint8_t *data;
	size_t size;
	size_t reads; /* bytes asked for */
};

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *m = ctx;

	m->reads += len;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE > m->size || len > m->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - FUZZ_BASE), len);
	return 0;
}

/* Whether s is valid UTF-8 of at most max code points, without NUL. */
static bool utf8_ok(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p) {
		unsigned c = *p, k = c < 0x80    ? 0
		                     : c >= 0xf0 ? 3
		                     : c >= 0xe0 ? 2
		                     : c >= 0xc0 ? 1
		                                 : 9;
		if (k == 9)
			return false;
		for (unsigned i = 1; i <= k; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += k + 1;
		n++;
	}
	return n <= max;
}

/* The digest of the str at addr, read straight from the image (the
 * reader succeeded, so it is there). */
static uint64_t digest_at(const uint8_t *data, uint64_t addr, uint64_t h)
{
	const uint8_t *s = data + (addr - FUZZ_BASE);
	uint64_t len;
	uint32_t state;

	memcpy(&len, s + 16, 8);
	memcpy(&state, s + 32, 4);
	return symbolize_python_str_digest(h, len, state >> 6 & 1, s + 48);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct symbolize_python_layout *l = symbolize_python_layout(3, 11);
	struct image m = {data, size, 0};
	struct symbolize_pycode c;

	if (!l)
		abort();
	int rc = symbolize_python_read_code(l, FUZZ_CODE_TYPE, read_image, &m, FUZZ_BASE, &c);
	/* A header, two names of 1024 characters of 4 bytes, a line table. */
	if (m.reads > 256 + 2 * (128 + 4096) + 64 + 65536)
		abort();
	if (rc == 0) {
		if (!c.qualname || !c.filename || !utf8_ok(c.qualname, 1024) ||
		    !utf8_ok(c.filename, 1024) || c.linetable_len > 65536 || !c.linetable)
			abort();
		uint64_t first, filename, qualname, linetable;
		memcpy(&first, data + l->code_firstlineno, 4);
		first = (uint64_t)(int64_t)(int32_t)first;
		memcpy(&filename, data + l->code_filename, 8);
		memcpy(&qualname, data + l->code_qualname, 8);
		memcpy(&linetable, data + l->code_linetable, 8);
		uint64_t h = symbolize_python_check_head(first, filename, qualname, linetable);
		h = digest_at(data, qualname, h);
		h = digest_at(data, filename, h);
		if (c.check != (uint32_t)h || c.firstlineno != (int)(int32_t)first)
			abort();
		for (uint32_t i = 0; i <= c.linetable_len * 8 + 1 && i < 4096; i++)
			symbolize_python_line(c.linetable, c.linetable_len, c.firstlineno, i);
		symbolize_python_line(c.linetable, c.linetable_len, c.firstlineno, UINT32_MAX);
		symbolize_pycode_clear(&c);
	} else if (rc != -EINVAL && rc != -E2BIG && rc != -EFAULT && rc != -ENOMEM) {
		abort();
	}
	/* The line decoder alone, on the whole input as a table. */
	symbolize_python_line(data, size, 1, size ? data[0] : 0);
	return 0;
}
