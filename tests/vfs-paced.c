/*
 * vfs-paced.c — a steady writer for test-vfs.sh's duty-cycle check:
 * `vfs-paced CALLS SIZE PERIOD_US` writes CALLS blocks of SIZE bytes to
 * /dev/null from paced_write(), one write(2) every PERIOD_US microseconds
 * on absolute CLOCK_MONOTONIC deadlines (a late block is written at once,
 * so the rate over a second stays CALLS' share of the run even when the
 * machine is busy), then prints "written BYTES", the total the calls
 * returned, to stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char buf[1 << 20];

__attribute__((noinline)) static long long paced_write(int fd, long calls, size_t size,
                                                       long period_us)
{
	struct timespec at;
	long long total = 0;

	clock_gettime(CLOCK_MONOTONIC, &at);
	for (long i = 0; i < calls; i++) {
		ssize_t n = write(fd, buf, size);
		if (n < 0)
			return -errno;
		total += n;
		at.tv_nsec += period_us * 1000;
		while (at.tv_nsec >= 1000000000) {
			at.tv_nsec -= 1000000000;
			at.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
	}
	return total;
}

int main(int argc, char **argv)
{
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: vfs-paced CALLS SIZE PERIOD_US\n");
		return 2;
	}
	long calls = strtol(argv[1], &end, 10);
	long size = strtol(argv[2], &end, 10);
	long period = strtol(argv[3], &end, 10);
	if (calls < 1 || size < 1 || size > (long)sizeof(buf) || period < 1) {
		fprintf(stderr, "vfs-paced: CALLS >= 1, SIZE in 1..%zu, PERIOD_US >= 1\n",
		        sizeof(buf));
		return 2;
	}
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vfs-paced: /dev/null: %s\n", strerror(errno));
		return 1;
	}
	long long total = paced_write(fd, calls, (size_t)size, period);
	if (total < 0) {
		fprintf(stderr, "vfs-paced: write: %s\n", strerror((int)-total));
		return 1;
	}
	printf("written %lld\n", total);
	return 0;
}
