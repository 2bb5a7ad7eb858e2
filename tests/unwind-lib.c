/*
 * unwind-lib.c — the shared library of tests/unwind-target.c, built
 * twice: as libunwind-plt.so, linked to the target and called through
 * its PLT (lib_tiny), and as unwind-dl.so, which the target dlopen()s
 * after it started (lib_spin → lib_inner).  No frame pointers.
 */
#include <stdint.h>

unsigned lib_tiny(unsigned x)
{
	return x * 3 + 1; /* unsigned: wraps, no undefined overflow */
}

__attribute__((noinline)) uint64_t lib_inner(uint64_t n)
{
	uint64_t h = 7;
	for (uint64_t i = 0; i < n; i++) {
		h = (h ^ i) * 1099511628211ull;
		__asm__ volatile("" : "+r"(h));
	}
	return h;
}

__attribute__((noinline)) uint64_t lib_spin(uint64_t n)
{
	return lib_inner(n) + 1;
}
