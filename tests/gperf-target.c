/*
 * gperf-target.c — a program with a known call tree and known allocation
 * sites, profiled by gperftools' libprofiler.so and libtcmalloc.so in
 * test-import-legacy.sh.
 *
 * CPU: main -> work_a -> burn(3 units) and main -> work_b -> work_c ->
 * burn(1 unit), so work_a holds 3/4 of the time.  Heap, at exit: site_x
 * holds 1024 blocks of 4096 bytes (4 MiB); site_y allocated 512 blocks
 * of 8192 bytes and freed them, then 256 blocks of 16384 bytes that it
 * holds (4 MiB in use, 8 MiB and 768 blocks allocated).
 *   usage: gperf-target [ROUNDS]
 */
#include <stdlib.h>
#include <string.h>

static volatile double sink;

__attribute__((noinline)) static void burn(long n)
{
	volatile double s = 0;
	for (long i = 0; i < n; i++)
		s += (double)i * 0.5;
	sink = s;
}

__attribute__((noinline)) static void work_a(void)
{
	burn(3000000);
	sink += 1;
}

__attribute__((noinline)) static void work_c(void)
{
	burn(1000000);
	sink += 1;
}

__attribute__((noinline)) static void work_b(void)
{
	work_c();
	sink += 1;
}

__attribute__((noinline)) static void *site_x(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

__attribute__((noinline)) static void *site_y(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 2, n);
	return p;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	static void *keep[1024 + 256];

	for (long i = 0; i < rounds; i++) {
		work_a();
		work_b();
	}
	for (int i = 0; i < 1024; i++)
		keep[i] = site_x(4096);
	for (int i = 0; i < 512; i++)
		free(site_y(8192));
	for (int i = 0; i < 256; i++)
		keep[1024 + i] = site_y(16384);
	return keep[0] == NULL;
}
