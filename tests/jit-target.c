/*
 * jit-target.c — a program that runs code it generated, named in a perf
 * map (/tmp/perf-PID.map), as a JIT does: test-import-perfdata.sh checks
 * that a perf.data import names it as perf script does, test-jit.sh that
 * `record` names it when the map comes only at exit, as Java's
 * -XX:+DumpPerfMapAtExit writes it.  x86_64 only.
 *   usage: jit-target ROUNDS [now|exit|never]
 * writes the map before running the code (now, the default), after it
 * (exit), or not at, and prints the map's path first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
static int write_map(const char *path, const void *code, size_t size)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;
	fprintf(f, "%lx %zx jitted_spin\n", (unsigned long)code, size);
	return fclose(f);
}
#endif

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* mov rcx, 0x1000000; loop: dec rcx; jnz loop; ret */
	static const unsigned char code[] = {0x48, 0xc7, 0xc1, 0x00, 0x00, 0x00, 0x01,
	                                     0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	const char *when = argc > 2 ? argv[2] : "now";
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
	                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];

	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	printf("%s\n", path);
	fflush(stdout);
	if (strcmp(when, "now") == 0 && write_map(path, p, sizeof(code)) < 0)
		return 1;
	void (*fn)(void);
	memcpy(&fn, &p, sizeof(fn)); /* data to code pointer, as a JIT does */
	for (long i = 0; i < rounds; i++)
		fn();
	if (strcmp(when, "exit") == 0 && write_map(path, p, sizeof(code)) < 0)
		return 1;
	return 0;
#else
	(void)argc;
	(void)argv;
	return 77;
#endif
}
