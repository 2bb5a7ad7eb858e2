/*
 * samples-block-internal.h — the samples block: one (series, bucket)'s
 * detail in the recent tier (store.h, struct store_sample), encoded
 * compactly: the one format of both backends (the directory keeps one
 * per piece and sealed block under its 'd' keys, the database one per
 * row of its `samples` table).  Private to store/.
 *
 * A block holds n >= 1 samples, in the canonical order (time, pid, tid,
 * node, weight, span, parent), all inside the bucket [start_us, start_us +
 * span_us):
 *
 *     varint n, varint flags (bit 0: a weight column follows; bit 1: a
 *                             span column; bit 2: a parent column)
 *     varint k, k x varint node           distinct nodes, ascending: the
 *                                         first as is, then each minus
 *                                         the previous (never 0)
 *     varint m, m x (varint dpid, varint zigzag(tid - pid))
 *                                         distinct (pid, tid), ascending:
 *                                         dpid is the pid minus the
 *                                         previous pair's (the first: the
 *                                         pid)
 *     varint w0                           the first sample's weight
 *     n x varint dt                       time minus the previous sample's
 *                                         (the first: minus start_us)
 *     n x varint node index * m + thread index
 *                                         only when k * m > 1
 *     n x varint zigzag(weight - w0)      only with flag bit 0
 *     n x varint zigzag(span - the span of the previous sample of the
 *                same (pid, tid), 0 for its first)
 *                                         only with flag bit 1
 *     n x varint zigzag(d), d = parent - span, except 0 when parent is 0
 *                and -span when parent equals span
 *                                         only with flag bit 2
 *
 * Varints are LEB128 (counts-blob-internal.h); zigzag maps a signed
 * difference (64-bit, wrapping) to an unsigned one.  The span and parent
 * columns are written only when some sample's span (parent) is not 0,
 * and a column whose values are all 0 is damage, so a block without
 * spans has the bytes it had before spans existed, and equal detail
 * still encodes to equal bytes.  Span ids that a thread hands out in
 * sequence cost a byte a sample, whatever their magnitude, and so does a
 * span's parent when it is near its own id or 0.  Columns, not rows,
 * so that each is one kind of number and a lone thread's and node's or a
 * constant weight's column costs nothing; a sample's node and thread
 * share one index, a byte while the block has fewer than 128 pairs of
 * them.  The decoder checks every varint
 * against the end, that the tables ascend, that indexes, pids, tids and
 * nodes are in range, that every time stays inside the bucket and that
 * the samples come in the canonical order; anything left over is damage
 * too.  store/README.md
 * documents it, and the central store's SQL decoder flamefs_samples()
 * (central/schema.c) reads the same format.
 */
#ifndef FLAMEFS_SAMPLES_BLOCK_H
#define FLAMEFS_SAMPLES_BLOCK_H

#include "store.h"

#include <stddef.h>
#include <stdint.h>

/* Orders samples by (time, pid, tid, node, weight, span, parent): the one order a
 * block holds them in, so that equal detail encodes to equal bytes. */
int samples_block_cmp(const struct store_sample *a, const struct store_sample *b);
void samples_block_sort(struct store_sample *v, size_t n);

/* Encodes the n >= 1 samples v (canonical order, each time in [start_us,
 * start_us + span_us)) into *out, a malloc'd buffer of *len bytes the
 * caller frees.  0, -EINVAL (empty, out of order or outside the bucket)
 * or -ENOMEM. */
int samples_block_encode(const struct store_sample *v, size_t n, int64_t start_us, int64_t span_us,
                         uint8_t **out, size_t *len);

/* Decodes a block of the bucket [start_us, start_us + span_us) and
 * appends its samples to the growable array *v (*n used, *cap
 * allocated; the caller frees *v).  0, -EIO (damaged) or -ENOMEM; on
 * failure *n is as it was. */
int samples_block_decode(const void *p, size_t len, int64_t start_us, int64_t span_us,
                         struct store_sample **v, size_t *n, size_t *cap);

/* The number of samples a block holds (its first varint) in *n, without
 * decoding it: 0, or -EIO when that count is not a block's. */
int samples_block_count(const void *p, size_t len, uint64_t *n);

#endif
