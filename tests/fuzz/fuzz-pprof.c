/*
 * fuzz-pprof.c — libFuzzer target for the pprof (profile.proto, raw or gzipped) importer
 * (collector/import/pprof.c): any input must import or be refused with a message
 * naming the input, without a crash, leak or sanitizer report.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_import(data, size, IMPORT_FORMAT_PPROF);
	return 0;
}
