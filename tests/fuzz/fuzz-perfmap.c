/*
 * fuzz-perfmap.c — libFuzzer target for the JIT perf map parser
 * (collector/symbolize/procs.c, sym_jit_parse), which reads
 * /tmp/perf-PID.map files that any process on the machine may write.  The
 * first byte picks `final` (bit 0: the process has exited, so an
 * unterminated last line is taken too); the rest is the map.  The parse
 * must end without a crash, hang, leak or sanitizer report, and keep the
 * lookup's contract: entries sorted by start, none wrapping around the
 * address space, no more than the input has lines (nor than
 * JIT_MAP_MAX_ENTRIES); an unterminated last
 * line reported as partial exactly when it was left out; and
 * sym_jit_lookup() answering each entry's start with an entry that holds
 * it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jit_sym *jit = NULL;
	bool partial = true;

	if (size < 1)
		return 0;
	bool final = data[0] & 1;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;

	int n = sym_jit_parse(text, len, final, &jit, &partial);
	if (n == -ENOMEM)
		return 0;
	if (n < 0 || (n > 0) != (jit != NULL))
		abort();
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	if ((size_t)n > lines || n > (int)JIT_MAP_MAX_ENTRIES)
		abort();
	bool unterminated = len > 0 && text[len - 1] != '\n';
	if (n < (int)JIT_MAP_MAX_ENTRIES && partial != (!final && unterminated))
		abort();
	for (int i = 0; i < n; i++) {
		if (!jit[i].name || jit[i].start + jit[i].size < jit[i].start)
			abort();
		if (i && jit[i].start < jit[i - 1].start)
			abort();
	}
	for (int i = 0; i < n; i++) {
		if (i + 1 < n && jit[i + 1].start == jit[i].start)
			continue; /* the lookup finds the last of equal starts */
		const struct jit_sym *j = sym_jit_lookup(jit, (size_t)n, jit[i].start);
		if (jit[i].size && j != &jit[i])
			abort();
		if (j && (jit[i].start < j->start || jit[i].start - j->start >= j->size))
			abort();
	}
	for (int i = 0; i < n; i++)
		free(jit[i].name);
	free(jit);
	return 0;
}
