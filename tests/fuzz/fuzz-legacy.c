/*
 * fuzz-legacy.c — libFuzzer target for the legacy text profile importer (collector/import/legacy.c): any input must import or be
 * refused with a message naming the input, without a crash, leak or
 * sanitizer report.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_import(data, size, IMPORT_FORMAT_LEGACY);
	return 0;
}
