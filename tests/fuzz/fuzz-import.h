/*
 * fuzz-import.h — what the importer fuzz targets share: one store in a
 * temporary directory, opened once per process, and a run of one importer
 * over one input through the same path flamefs-collect import takes (a
 * prefix read for format detection, the rest from an fd), into a batch
 * that is never committed.  The batch is freed after each input, which
 * rolls back every frame, node and series it created, so the store stays
 * empty and each input starts from the same state.
 *
 * Beyond "no crash, no sanitizer report", each run checks the importers'
 * error contract: a failure is -EINVAL with a message that names the
 * input (or -ENOMEM), never a bare errno.
 */
#ifndef FLAMEFS_FUZZ_IMPORT_H
#define FLAMEFS_FUZZ_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "import.h"

/* Runs importer `fmt` over data[0..size).  Aborts when the importer
 * breaks its contract; returns its result otherwise. */
int fuzz_import(const uint8_t *data, size_t size, enum import_format fmt);

#endif
