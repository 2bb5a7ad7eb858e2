/*
 * jitter.h — varying lengths of work for the test targets whose sampled
 * shares are checked against the CPU time they measure.
 *
 * A loop of fixed period can lock into phase with the sampling timer
 * (2.004 ms at 499 Hz), so that one branch is sampled more than its share
 * run after run: record-target's hot_leaf came out at 0.54–0.59 against a
 * measured 0.70 in two runs of six.  jittered(n) is n varied by up to half
 * either way (xorshift, the same sequence every run), which keeps the
 * ratio between branches on average and leaves the loop no period.
 */
#ifndef FLAMEFS_TESTS_JITTER_H
#define FLAMEFS_TESTS_JITTER_H

#include <stdint.h>

static inline uint64_t jittered(uint64_t n)
{
	static uint64_t state = 88172645463325252ull;

	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return n / 2 + state % n;
}

#endif
