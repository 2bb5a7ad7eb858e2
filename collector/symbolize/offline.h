/*
 * offline.h — the importers' address symbolization (import.h's struct
 * import_symbols) wired to the collector's symbolizer (symbolize.h), for
 * profiles whose processes are known only from the file: perf.data,
 * gperftools and legacy text profiles.
 */
#ifndef FLAMEFS_OFFLINE_H
#define FLAMEFS_OFFLINE_H

#include "import.h"

/* Fills *out with a fresh symbolizer that finds files under binary_path
 * (colon-separated directories, may be NULL; copied) first.  Returns 0,
 * -ENOMEM, or -ENOTSUP in a build without the symbolizer.  Free with
 * offline_symbols_free(). */
int offline_symbols_new(const char *binary_path, struct import_symbols *out);
void offline_symbols_free(struct import_symbols *sym); /* accepts a zeroed struct */

#endif
