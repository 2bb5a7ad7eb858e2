/*
 * record-target.c — a program with known call chains for
 * tests/test-record.sh.
 *
 * main → work → hot_leaf takes three units of CPU for every one unit of
 * main → side → side_leaf; main → sys_branch → raw_read spends its time
 * in the kernel reading /dev/zero.  Every second (and at once) it forks a
 * child, main → spawn_child → child_leaf, that burns about 100 ms and
 * exits.  It measures the thread CPU time of each branch and, when given
 * a file name, writes "hot NS", "side NS" and "sys NS" there at the end,
 * the truth the sampled shares are checked against.
 *
 * Built with frame pointers; gcc still omits them in leaf functions, so
 * every hot function calls the noinline publish() last.
 *
 * Usage: record-target [SECONDS [TRUTH_FILE]]   (default 3 seconds)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jitter.h"
#include "spin.h"

static __attribute__((noinline)) void hot_leaf(void)
{
	publish(spin(jittered(3 * 200000)));
}

static __attribute__((noinline)) void side_leaf(void)
{
	publish(spin(jittered(200000)));
}

static __attribute__((noinline)) void child_leaf(void)
{
	publish(spin(100000) + 7);
}

static __attribute__((noinline)) void work(void)
{
	hot_leaf();
	publish(1);
}

static __attribute__((noinline)) void side(void)
{
	side_leaf();
	publish(2);
}

/* The read system call issued from here, so that a frame-pointer walk
 * from the user registers sees sys_branch (libc's wrapper keeps none). */
static __attribute__((noinline)) long raw_read(int fd, void *buf, size_t n)
{
	long ret;
#if defined(__x86_64__)
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(n)
	                 : "rcx", "r11", "memory");
#else
	ret = read(fd, buf, n);
#endif
	publish((uint64_t)ret);
	return ret;
}

static __attribute__((noinline)) void sys_branch(int fd)
{
	static char buf[1 << 16];
	for (int i = 0; i < 40; i++)
		raw_read(fd, buf, sizeof(buf));
	publish(3);
}

static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static __attribute__((noinline)) void spawn_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		double end = mono() + 0.1;
		while (mono() < end)
			child_leaf();
		_exit(0);
	}
	publish((uint64_t)pid);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int64_t hot = 0, cool = 0, sys = 0;

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	double start = mono(), next_child = start;
	for (;;) {
		double now = mono();
		if (now - start >= seconds)
			break;
		if (now >= next_child) {
			spawn_child();
			next_child += 1.0;
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		for (int i = 0; i < 4; i++) {
			int64_t a = cpu_ns();
			work();
			int64_t b = cpu_ns();
			side();
			int64_t c = cpu_ns();
			sys_branch(fd);
			int64_t d = cpu_ns();
			hot += b - a;
			cool += c - b;
			sys += d - c;
		}
	}
	while (wait(NULL) > 0)
		;
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");
		if (!f) {
			perror(argv[2]);
			return 1;
		}
		fprintf(f, "hot %lld\nside %lld\nsys %lld\n", (long long)hot, (long long)cool,
		        (long long)sys);
		fclose(f);
	}
	printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
