/*
 * import-threads-target.c — a program with two named threads for
 * test-import-labels.sh: "worker-a" spins in spin_a() for three times the
 * CPU time "worker-b" spins in spin_b() (by each thread's own CPU clock,
 * so the shares hold on a loaded machine), while the main thread waits.
 *   usage: import-threads-target [MILLISECONDS_OF_A]     (default 600)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_a(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * 7;
}

__attribute__((noinline)) static void spin_b(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * 11;
}

static double ms_a = 600;

static void *worker_a(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-a");
	spin_a(ms_a / 1000);
	return NULL;
}

static void *worker_b(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker-b");
	spin_b(ms_a / 3000);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	if (argc > 1)
		ms_a = atof(argv[1]);
	if (pthread_create(&a, NULL, worker_a, NULL) || pthread_create(&b, NULL, worker_b, NULL)) {
		fprintf(stderr, "import-threads-target: pthread_create failed\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
