/*
 * labels-target.c — work whose split by label is known, for the
 * record-labels test (counted in loop iterations, not seconds, so that
 * the split holds whatever else runs on the machine).
 *   labels-target work-a N | work-b N
 *       N iterations of work_a's (or work_b's) loop, on the main thread;
 *   labels-target threads N
 *       two threads named "lt-big" and "lt-small" run 3N/4 and N/4
 *       iterations of the same loop (spin);
 *   labels-target exec-self N
 *       N iterations of work_a's loop, then 1.5 s asleep, so that the
 *       recorder's drain finds it running (to be run from two paths);
 *   labels-target forks N
 *       N short children one after another, each naming its thread
 *       "lt-f<i>" (a new name each) and running 400,000 iterations.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Each thread sums on its own stack: a shared counter's cache line,
 * bounced between two cores, would make a thread's CPU time no longer
 * follow its iterations. */
__attribute__((noinline)) static void spin(unsigned long n)
{
	volatile unsigned long sink = 0;
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
	__asm__ volatile("" ::"r"(sink) : "memory"); /* read: clang counts it used */
}

__attribute__((noinline)) static void work_a(unsigned long n)
{
	spin(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void work_b(unsigned long n)
{
	spin(n);
	__asm__ volatile("" ::: "memory");
}

struct job {
	const char *name;
	unsigned long n;
	long long cpu_ns; /* the thread's CPU time, as the kernel counted it */
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	struct timespec t;
	pthread_setname_np(pthread_self(), j->name);
	spin(j->n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	j->cpu_ns = (long long)t.tv_sec * 1000000000 + t.tv_nsec;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: labels-target work-a|work-b|threads|exec-self N\n");
		return 2;
	}
	unsigned long n = strtoul(argv[2], NULL, 10);
	if (strcmp(argv[1], "work-a") == 0) {
		work_a(n);
	} else if (strcmp(argv[1], "exec-self") == 0) {
		work_a(n);
		struct timespec t = {1, 500000000};
		nanosleep(&t, NULL);
	} else if (strcmp(argv[1], "forks") == 0) {
		for (unsigned long i = 0; i < n; i++) {
			pid_t pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0) {
				char name[32];
				snprintf(name, sizeof(name), "lt-f%lu", i % 100000000ul);
				name[15] = 0; /* comm holds 15 bytes */
				prctl(PR_SET_NAME, name);
				spin(400000);
				_exit(0);
			}
			if (waitpid(pid, NULL, 0) != pid)
				return 1;
		}
	} else if (strcmp(argv[1], "work-b") == 0) {
		work_b(n);
	} else if (strcmp(argv[1], "threads") == 0) {
		struct job big = {"lt-big", n / 4 * 3, 0}, small = {"lt-small", n / 4, 0};
		pthread_t a, b;
		if (pthread_create(&a, NULL, thread_main, &big) != 0 ||
		    pthread_create(&b, NULL, thread_main, &small) != 0)
			return 1;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		/* On a busy machine an iteration's CPU time varies: the test
		 * compares the label split with what the kernel counted. */
		printf("%s %lld\n%s %lld\n", big.name, big.cpu_ns, small.name, small.cpu_ns);
	} else {
		return 2;
	}
	return 0;
}
