/*
 * fuzz-cfi.c — libFuzzer target for the CFI-table compiler
 * (collector/unwind/cfi.c), which reads the ELF files of any process on the
 * machine.  The input is an ELF file, given as the file and as its own
 * debug file (so .debug_frame in either place is reached).  It must
 * compile or be refused with a message, without a crash, hang, leak or
 * sanitizer report, and a table it returns must keep the walker's
 * contract: rows in strictly increasing pc order, each rule a known one,
 * at most UNWIND_MAX_TABLE_ROWS of them.
 */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct cfi_table *t = NULL;
	void *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* elf_memory may write (decompression) */
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory(copy, size);
	int rc = cfi_compile(elf, elf, &t, err, sizeof(err));
	if (rc == 0) {
		if (!t || !t->nrows || t->nrows > UNWIND_MAX_TABLE_ROWS)
			abort();
		for (size_t i = 0; i < t->nrows; i++) {
			if (i && t->rows[i].pc <= t->rows[i - 1].pc)
				abort();
			unsigned rule = UNWIND_ROW_RULE(&t->rows[i]);
			bool cfa = rule == UNWIND_RULE_RSP || rule == UNWIND_RULE_RBP ||
			           rule == UNWIND_RULE_RBX;
			if (rule > UNWIND_RULE_RA_RDI || (!cfa && t->rows[i].rule != rule))
				abort(); /* a known rule; register codes on CFA rows only */
		}
		if (UNWIND_ROW_RULE(&t->rows[t->nrows - 1]) != UNWIND_RULE_NONE)
			abort(); /* the last row closes the table */
	} else if (rc != -ENOMEM && (t || !err[0])) {
		abort(); /* an error always says what was wrong */
	}
	cfi_table_free(t);
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
