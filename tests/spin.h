/*
 * spin.h — the work the sampled test targets do: spin(n), n rounds of a
 * hash the compiler cannot fold, inlined into the function the test
 * expects the samples in, and publish(), a frame of its own that keeps
 * the result.
 */
#ifndef FLAMEFS_TESTS_SPIN_H
#define FLAMEFS_TESTS_SPIN_H

#include <stdint.h>

static volatile uint64_t sink;

static __attribute__((noinline)) void publish(uint64_t h)
{
	sink += h;
}

static inline __attribute__((always_inline)) uint64_t spin(uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ i) * 1099511628211ull;
	return h;
}

#endif
