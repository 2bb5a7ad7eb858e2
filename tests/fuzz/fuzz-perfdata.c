/*
 * fuzz-perfdata.c — libFuzzer target for the perf.data importer
 * (collector/import/perfdata.c): any input must import or be refused with a
 * message naming the input, without a crash, leak or sanitizer report.
 * Without a symbolizer (none is given here), addresses become
 * "[unknown]" frames, so the parser is what is fuzzed.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_import(data, size, IMPORT_FORMAT_PERF_DATA);
	return 0;
}
