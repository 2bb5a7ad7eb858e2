// Writes tcmalloc's sampled heap profile (MallocExtension::GetHeapSample,
// header "heap_v2/RATE") to stdout after small, medium and large
// allocations.  Run with TCMALLOC_SAMPLE_PARAMETER=RATE.
#include <gperftools/malloc_extension.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static std::vector<void *> keep;

__attribute__((noinline)) static void alloc_n(int n, size_t size, int keep_every)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(size);
		if (i % keep_every == 0)
			keep.push_back(p);
		else
			free(p);
	}
}

__attribute__((noinline)) static void small(void) { alloc_n(200000, 48, 3); }
__attribute__((noinline)) static void medium(void) { alloc_n(4000, 32 << 10, 2); }
__attribute__((noinline)) static void large(void) { alloc_n(100, 2 << 20, 4); }

int main()
{
	small();
	medium();
	large();
	std::string s;
	MallocExtension::instance()->GetHeapSample(&s);
	fwrite(s.data(), 1, s.size(), stdout);
	return 0;
}
