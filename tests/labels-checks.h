/*
 * labels-checks.h — checks of series labels through store.h alone, so
 * that test-store (the embedded backend) and test-central (the central
 * one) run the same ones: the key's labels round trip and split series,
 * the listing's order, and the bound on label sets.  Test code: it prints
 * (check.h).
 */
#ifndef FLAMEFS_LABELS_CHECKS_H
#define FLAMEFS_LABELS_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Writes into w (a writer) series of binary `binary` with no labels, two
 * label sets and an invalid one; checks ids, -EINVAL, and the listing of
 * w and (when not NULL) of reader r after a refresh.  The series' ids are
 * returned in ids[3] (none, thread=a, thread=b+cgroup) for a later
 * reopen_check. */
void labels_check_roundtrip(struct store *w, struct store *r, const char *binary, uint32_t ids[3]);
/* After a reopen: the same keys give the same ids and the listing is
 * unchanged. */
void labels_check_reopen(struct store *w, const char *binary, const uint32_t ids[3]);
/* Adds 300 thread names to binary `binary` in two committed batches (200,
 * then 100), name i with i + 1 samples, then checks the listing:
 * STORE_LABEL_SETS_MAX labelled series and one "thread=(other)" holding
 * the rest, the sum of all equal to what was added; a rolled back batch
 * takes no place under the bound; past it, a set of other keys goes to
 * its own (other) set. */
void labels_check_bound(struct store *w, const char *binary);

#endif
