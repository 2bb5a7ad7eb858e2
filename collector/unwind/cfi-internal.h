/*
 * cfi-internal.h — compiles an ELF file's DWARF call-frame information (.eh_frame,
 * or .debug_frame, also from a separate debug file) into the compact
 * table the BPF stack walker searches (unwind.h).  It reads files that
 * belong to any process on the machine, so it trusts nothing in them:
 * every count is bounded, every bad entry is skipped or turned into a
 * BAD row, and a file it cannot make sense of is refused with a message.
 * Nothing here prints or exits.
 */
#ifndef FLAMEFS_CFI_H
#define FLAMEFS_CFI_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "unwind.h"

struct cfi_table {
	uint64_t base; /* ELF address of rows[0]; every row's pc is relative */
	struct unwind_row *rows;
	size_t nrows;
	const char *source; /* ".eh_frame", ".debug_frame" or
	                     * ".debug_frame (debug file)"; static */
	/* What went into it. */
	size_t fdes;         /* FDEs compiled */
	size_t fdes_skipped; /* outside the executable segments, empty,
	                      * overlapping, or of a CIE not understood */
	size_t bad_rows;     /* rows of UNWIND_RULE_BAD */
};

/* Compiles the CFI of `elf` (an executable or shared object); where it
 * has no .eh_frame, the .debug_frame of `elf` or else of `debug` (its
 * separate debug file, or NULL).  On success *out is a table the caller
 * frees with cfi_table_free().  Returns 0, -ENOENT when neither file has
 * CFI (not an error: the file is walked by frame pointers), -EINVAL for a
 * file that is not an executable ELF object or whose CFI is corrupt,
 * -E2BIG when the table would pass UNWIND_MAX_TABLE_ROWS rows or span
 * 4 GiB, or -ENOMEM; for every error but -ENOMEM, err says what was
 * found. */
int cfi_compile(Elf *elf, Elf *debug, struct cfi_table **out, char *err, size_t errlen);

void cfi_table_free(struct cfi_table *t); /* accepts NULL */

/* The name of a rule, for listings ("rsp+16", "plt", "end"...), written
 * to buf.  Returns buf. */
const char *cfi_rule_name(const struct unwind_row *r, char *buf, size_t len);

#endif
