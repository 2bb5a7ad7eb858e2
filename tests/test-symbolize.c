/*
 * test-symbolize.c — unit tests for the symbolizer's name handling
 * (collector/symbolize.c): C++ Itanium names, Rust legacy names (hash
 * dropped) and Rust v0 names are demangled, then tidied the way
 * stackcollapse-perf prints them; names that are not mangled, or are
 * mangled wrongly, are kept as they are.  The mangled names were taken
 * with nm from binaries built on this machine by g++ 12 and rustc 1.95
 * (-C symbol-mangling-version=v0).
 *
 * Kernel addresses: as root, text symbols taken from /proc/kallsyms (one
 * in 50, each alone at its address) must be named alike by
 * symbolize_kernel(), which asks the kernel through BPF (ksym.h), at the
 * symbol's first byte + 1, as an innermost frame and as a return address
 * (looked up at the first byte).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct ksym_line {
	uint64_t addr;
	char type;
	char name[128];
};

/* Compares symbolize_kernel() with /proc/kallsyms; returns the number of
 * addresses checked (0: not root, or addresses hidden). */
static int check_kernel(void)
{
	FILE *f = geteuid() == 0 ? fopen("/proc/kallsyms", "re") : NULL;
	struct ksym_line *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];
	int checked = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		struct ksym_line l;
		if (sscanf(line, "%" SCNx64 " %c %127s", &l.addr, &l.type, l.name) != 3)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n++] = l;
	}
	fclose(f);
	struct symbolize *s = symbolize_new();
	if (!s)
		abort();
	for (size_t i = 1; i + 1 < n; i += 50) {
		const struct ksym_line *l = &v[i];
		if (!l->addr || (l->type != 't' && l->type != 'T'))
			continue;
		if (v[i - 1].addr >= l->addr || v[i + 1].addr <= l->addr + 1)
			continue; /* an alias, or out of order (modules) */
		for (int caller = 0; caller < 2; caller++) {
			struct store_frame fr;
			uint64_t a = l->addr + 1; /* looked up at l->addr as a caller */
			if (symbolize_kernel(s, a, caller, &fr) < 0 ||
			    fr.name_len != strlen(l->name) ||
			    memcmp(fr.name, l->name, fr.name_len) != 0) {
				fprintf(stderr,
				        "FAIL kernel %" PRIx64
				        " (caller %d)\n  want %s\n  got  %.*s\n",
				        a, caller, l->name, (int)fr.name_len, fr.name);
				failures++;
			}
			checked++;
		}
	}
	symbolize_free(s);
	free(v);
	return checked;
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

	int nk = check_kernel();
	printf("kernel addresses checked: %d\n", nk);

	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
