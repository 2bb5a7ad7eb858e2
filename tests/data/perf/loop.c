/*
 * loop.c — a small CPU-bound program for the perf-script importer
 * fixtures: a few call chains of different depth so the recorded stacks
 * differ.  Build with -O1 -fno-omit-frame-pointer and record with
 * `perf record -e cpu-clock -g`.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) static void leaf_a(void)
{
	spin(300000);
}
__attribute__((noinline)) static void leaf_b(void)
{
	spin(100000);
}

__attribute__((noinline)) static void middle(int k)
{
	if (k % 3 == 0)
		leaf_b();
	else
		leaf_a();
}

__attribute__((noinline)) static void recurse(int depth)
{
	if (depth == 0) {
		middle(depth);
		return;
	}
	recurse(depth - 1);
	sink++;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;

	for (int r = 0; r < rounds; r++) {
		middle(r);
		recurse(r % 4);
	}
	printf("%lu\n", sink);
	return 0;
}
