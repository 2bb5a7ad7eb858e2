/*
 * unwind-target.c — a program with known call chains for
 * tests/test-unwind.sh, built with -O2 -fomit-frame-pointer
 * -fno-optimize-sibling-calls, so that no frame pointer links its frames
 * (nor libc's): only the CFI in .eh_frame can walk them.
 *
 * Modes (SECONDS of CPU-bound work each):
 *   tree SECONDS TRUTH   main → work → hot_leaf → spin takes three units
 *                        of CPU for every one of main → work → cold_leaf →
 *                        spin; the thread CPU time of each branch is
 *                        written to TRUTH as "hot NS" and "cold NS".
 *   signal SECONDS       main → sig_victim → victim_spin, interrupted every
 *                        5 ms by SIGPROF, whose handler spins for 2 ms.
 *   plt SECONDS          main → plt_loop calls lib_tiny() (libunwind-plt.so)
 *                        through the PLT in a tight loop.
 *   dlopen SECONDS LIB   after 0.3 s, dlopen()s LIB and runs
 *                        main → dl_work → lib_spin → lib_inner in it.
 *   exec SECONDS PROG..  main → pre_exec → spin for SECONDS, then execs
 *                        PROG with the remaining arguments.
 *   deep SECONDS         main → deep → deep → ... (200 levels) → spin.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jitter.h"

unsigned lib_tiny(unsigned x);

static volatile uint64_t sink;

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t spin(uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++) {
		h = (h ^ i) * 1099511628211ull;
		__asm__ volatile("" : "+r"(h));
	}
	return h;
}

__attribute__((noinline)) void hot_leaf(void)
{
	sink += spin(jittered(3 * 300000));
}

__attribute__((noinline)) void cold_leaf(void)
{
	sink += spin(jittered(300000));
}

__attribute__((noinline)) void work(double *hot, double *cold)
{
	double t0 = thread_cpu();
	hot_leaf();
	double t1 = thread_cpu();
	cold_leaf();
	*hot += t1 - t0;
	*cold += thread_cpu() - t1;
}

static int mode_tree(double secs, const char *truth)
{
	double hot = 0, cold = 0, end = now() + secs;
	while (now() < end)
		work(&hot, &cold);
	FILE *f = fopen(truth, "w");
	if (!f)
		return 1;
	fprintf(f, "hot %.0f\ncold %.0f\n", hot * 1e9, cold * 1e9);
	return fclose(f) != 0;
}

__attribute__((noinline)) void sig_spin(void)
{
	sink += spin(400000);
}

static void handler(int sig)
{
	(void)sig;
	sig_spin();
}

__attribute__((noinline)) void victim_spin(void)
{
	sink += spin(100000);
}

__attribute__((noinline)) void sig_victim(double end)
{
	while (now() < end)
		victim_spin();
}

static int mode_signal(double secs)
{
	struct sigaction sa = {.sa_handler = handler};
	struct itimerval it = {{0, 5000}, {0, 5000}};
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) < 0 || setitimer(ITIMER_PROF, &it, NULL) < 0)
		return 1;
	sig_victim(now() + secs);
	return 0;
}

__attribute__((noinline)) void plt_loop(double end)
{
	unsigned x = 0;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = lib_tiny(x);
	sink += (uint64_t)x;
}

__attribute__((noinline)) void dl_work(uint64_t (*fn)(uint64_t), double end)
{
	while (now() < end)
		sink += fn(200000);
}

static int mode_dlopen(double secs, const char *lib)
{
	usleep(300000);
	void *h = dlopen(lib, RTLD_NOW);
	void *sym = h ? dlsym(h, "lib_spin") : NULL;
	uint64_t (*fn)(uint64_t) = NULL;
	memcpy(&fn, &sym, sizeof(fn)); /* POSIX: a function's address */
	if (!fn) {
		fprintf(stderr, "unwind-target: %s\n", dlerror());
		return 1;
	}
	dl_work(fn, now() + secs);
	return 0;
}

__attribute__((noinline)) void pre_exec(double end)
{
	while (now() < end)
		sink += spin(100000);
}

__attribute__((noinline)) void deep(int level, double end)
{
	if (level > 0) {
		deep(level - 1, end);
		sink += (uint64_t)level; /* not a tail call */
		return;
	}
	while (now() < end)
		sink += spin(100000);
}

/* vfork() and _exit() in a loop: glibc's __vfork keeps its return
 * address in rdi during the call (the child shares the stack), so the
 * parent's samples in the kernel's vfork are walked through that rule. */
__attribute__((noinline)) void vfork_loop(double end)
{
	while (now() < end) {
		pid_t pid = vfork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) < 0)
			break;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: unwind-target tree|signal|plt|vfork|deep|dlopen|exec "
		                "SECONDS ...\n");
		return 2;
	}
	double secs = atof(argv[2]);
	if (strcmp(argv[1], "tree") == 0 && argc == 4)
		return mode_tree(secs, argv[3]);
	if (strcmp(argv[1], "signal") == 0)
		return mode_signal(secs);
	if (strcmp(argv[1], "plt") == 0) {
		plt_loop(now() + secs);
		return 0;
	}
	if (strcmp(argv[1], "vfork") == 0) {
		vfork_loop(now() + secs);
		return 0;
	}
	if (strcmp(argv[1], "deep") == 0) {
		deep(200, now() + secs);
		return 0;
	}
	if (strcmp(argv[1], "dlopen") == 0 && argc == 4)
		return mode_dlopen(secs, argv[3]);
	if (strcmp(argv[1], "exec") == 0 && argc >= 4) {
		pre_exec(now() + secs);
		execv(argv[3], argv + 3);
		perror(argv[3]);
		return 127;
	}
	fprintf(stderr, "unwind-target: bad arguments\n");
	return 2;
}
