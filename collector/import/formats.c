/*
 * formats.c — the registry of profile formats: one table, in detection
 * order, of each format's name, sniff function and parser.  This is the
 * only file that names a parser; the parsers depend on import.c's shared
 * helpers and never on each other or on this table.  Binary formats are
 * tried first; the text formats only when the input's first line holds no
 * control byte, and folded stacks, the loosest, last.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"

const struct import_format_ops import_formats[] = {
        {IMPORT_FORMAT_PERF_DATA, "perf.data", import_perf_data_sniff, false, true,
         import_perf_data},
        {IMPORT_FORMAT_PPROF, "pprof", import_pprof_sniff, false, false, import_pprof},
        {IMPORT_FORMAT_GPERF_CPU, "gperftools-cpu", import_gperf_cpu_sniff, false, true,
         import_gperf_cpu},
        {IMPORT_FORMAT_LEGACY, "legacy", import_legacy_sniff, true, true, import_legacy},
        {IMPORT_FORMAT_PERF, "perf", import_perf_sniff, true, true, import_perf},
        {IMPORT_FORMAT_FOLDED, "folded", import_folded_sniff, true, false, import_folded},
};

const size_t import_formats_count = sizeof(import_formats) / sizeof(import_formats[0]);

const struct import_format_ops *import_format_find(enum import_format f)
{
	for (size_t i = 0; i < import_formats_count; i++)
		if (import_formats[i].id == f)
			return &import_formats[i];
	return NULL;
}

enum import_format import_detect(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < import_formats_count; i++)
		if (!import_formats[i].text && import_formats[i].sniff(buf, len))
			return import_formats[i].id;
	if (!import_text_start(buf, len))
		return IMPORT_FORMAT_UNKNOWN;
	for (size_t i = 0; i < import_formats_count; i++)
		if (import_formats[i].text && import_formats[i].sniff(buf, len))
			return import_formats[i].id;
	return IMPORT_FORMAT_UNKNOWN;
}

const char *import_format_name(enum import_format f)
{
	const struct import_format_ops *ops = import_format_find(f);
	return ops ? ops->name : "auto";
}

int import_format_parse(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return IMPORT_FORMAT_AUTO;
	for (size_t i = 0; i < import_formats_count; i++)
		if (strcmp(import_formats[i].name, name) == 0)
			return (int)import_formats[i].id;
	return -1;
}
