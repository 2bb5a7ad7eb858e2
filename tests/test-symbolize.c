/*
 * test-symbolize.c — unit tests for the symbolizer's name handling
 * (collector/symbolize.c): C++ Itanium names, Rust legacy names (hash
 * dropped) and Rust v0 names are demangled, then tidied the way
 * stackcollapse-perf prints them; names that are not mangled, or are
 * mangled wrongly, are kept as they are.  The mangled names were taken
 * with nm from binaries built on this machine by g++ 12 and rustc 1.95
 * (-C symbol-mangling-version=v0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

static int failures;

static void expect(const char *raw, const char *want)
{
	char *got = symbolize_name(raw);
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "FAIL %s\n  want %s\n  got  %s\n", raw, want, got ? got : "(NULL)");
		failures++;
	}
	free(got);
}

int main(void)
{
	/* Not mangled. */
	expect("main", "main");
	expect("hot_leaf", "hot_leaf");
	/* C++ (g++ 12): arguments are cut as stackcollapse-perf does. */
	expect("_ZN9Container4pushEi", "Container::push");
	expect("_ZNSt6vectorIiSaIiEE9push_backEOi",
	       "std::vector<int, std::allocator<int> >::push_back");
	expect("_ZN12_GLOBAL__N_14workEv", "(anonymous namespace)::work");
	/* Rust legacy: the ::h<16 hex> hash is dropped. */
	expect("_ZN4core3fmt5write17h2f6c0d3e1b2a3c4dE", "core::fmt::write");
	/* Rust v0 (rustc 1.95). */
	expect("_RNvCskK7mfDs1mzF_1m3hot", "m::hot");
	expect("_RNvCskK7mfDs1mzF_1m4main", "m::main");
	expect("_RNvMNtCskK7mfDs1mzF_1m5innerINtB2_3AccyE3addB4_", "<m::inner::Acc<u64>>::add");
	expect("_RINvNtCs9ltgdHTiPiY_4core3ptr13drop_in_placeNtNtCsfzc5zEb2YL5_"
	       "5alloc6string6StringEB6_",
	       "core::ptr::drop_in_place::<alloc::string::String>");
	/* Malformed: kept verbatim rather than guessed at. */
	expect("_RNvC", "_RNvC");
	expect("_ZN3foo", "_ZN3foo");
	/* A ';' would split the folded line: it becomes ':'. */
	expect("a;b", "a:b");

	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
