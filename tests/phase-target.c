/*
 * phase-target.c — a program whose phases are known to the microsecond,
 * for tests/test-record-moments.sh: main → phase_a → a_leaf burns CPU for
 * 2.0 s, then main → phase_b → b_leaf for 3.0 s, then phase_a again for
 * 2.0 s.  It writes the wall time (CLOCK_REALTIME, Unix microseconds) of
 * each switch to its output, one "NAME US" line each:
 *
 *   pid PID
 *   start US    (phase A begins)
 *   a2b US      (phase B begins)
 *   b2a US      (phase A again)
 *   end US
 *   cpu PHASE NS  (the CPU time the process spent in each phase: a1, b, a2)
 *
 * Each leaf call burns about 20 µs, so a phase ends within microseconds of
 * its length.  Built with frame pointers; each leaf calls the noinline
 * publish() last, so that gcc keeps its frame.
 *
 * Usage: phase-target [OUT_FILE]   (default: standard output)
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

static __attribute__((noinline)) void a_leaf(void)
{
	publish(spin(20000));
}

static __attribute__((noinline)) void b_leaf(void)
{
	publish(spin(20000) + 1);
}

static int64_t mono_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int64_t wall_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static __attribute__((noinline)) void phase_a(int64_t until)
{
	while (mono_us() < until)
		a_leaf();
	publish(3);
}

static __attribute__((noinline)) void phase_b(int64_t until)
{
	while (mono_us() < until)
		b_leaf();
	publish(4);
}

int main(int argc, char **argv)
{
	FILE *out = stdout;
	int64_t w[4], c[4], t;

	if (argc > 1 && !(out = fopen(argv[1], "we"))) {
		perror(argv[1]);
		return 1;
	}
	c[0] = cpu_ns();
	w[0] = wall_us();
	t = mono_us();
	phase_a(t + 2000000);
	w[1] = wall_us();
	c[1] = cpu_ns();
	t = mono_us();
	phase_b(t + 3000000);
	w[2] = wall_us();
	c[2] = cpu_ns();
	t = mono_us();
	phase_a(t + 2000000);
	w[3] = wall_us();
	c[3] = cpu_ns();
	fprintf(out,
	        "pid %ld\nstart %lld\na2b %lld\nb2a %lld\nend %lld\ncpu a1 %lld\ncpu b %lld\n"
	        "cpu a2 %lld\n",
	        (long)getpid(), (long long)w[0], (long long)w[1], (long long)w[2], (long long)w[3],
	        (long long)(c[1] - c[0]), (long long)(c[2] - c[1]), (long long)(c[3] - c[2]));
	return fclose(out) == 0 ? 0 : 1;
}
