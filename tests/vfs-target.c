/*
 * vfs-target.c — a program whose VFS traffic is known exactly, for
 * test-vfs.sh: `vfs-target FILE CALLS SIZE` first waits for a line (or
 * the end) on stdin, so that a recorder can attach to it loaded; then a
 * thread of its own writes 16 MiB to /dev/null (warm_up), 1 MiB each 50
 * ms, so that a recorder attached with -p, which builds a file's unwind
 * table when a stack first meets it (libc's, then, its walks reaching
 * further, this program's), has both when the main thread, 1 s later,
 * writes CALLS blocks of SIZE bytes to FILE from write_all(), one write(2)
 * each, reads them back from read_all(), one read(2) of SIZE each until
 * end of file, and prints "written BYTES" and "read BYTES", the totals the
 * calls returned.  Its main thread moves nothing else through read(2)
 * or write(2) but that line and stdout, written once, at the end.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char buf[1 << 20];

__attribute__((noinline)) static void *warm_up(void *unused)
{
	static char zero[1 << 20];
	struct timespec pause = {0, 50 * 1000 * 1000};
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)unused;
	for (int i = 0; fd >= 0 && i < 16; i++) {
		if (write(fd, zero, sizeof(zero)) < 0)
			break;
		nanosleep(&pause, NULL);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

__attribute__((noinline)) static long long write_all(int fd, long calls, size_t size)
{
	long long done = 0;

	for (long i = 0; i < calls; i++) {
		ssize_t n = write(fd, buf, size);
		if (n != (ssize_t)size) {
			perror("vfs-target: write");
			exit(1);
		}
		done += n;
	}
	return done;
}

__attribute__((noinline)) static long long read_all(int fd, size_t size)
{
	long long done = 0;
	ssize_t n;

	while ((n = read(fd, buf, size)) > 0)
		done += n;
	if (n < 0) {
		perror("vfs-target: read");
		exit(1);
	}
	return done;
}

int main(int argc, char **argv)
{
	char *end;
	long calls;
	unsigned long size;

	if (argc != 4) {
		fprintf(stderr, "usage: vfs-target FILE CALLS SIZE\n");
		return 2;
	}
	calls = strtol(argv[2], &end, 10);
	if (*end || calls < 0) {
		fprintf(stderr, "vfs-target: CALLS: not a count: %s\n", argv[2]);
		return 2;
	}
	size = strtoul(argv[3], &end, 10);
	if (*end || size < 1 || size > sizeof(buf)) {
		fprintf(stderr, "vfs-target: SIZE: 1 to %zu bytes, got %s\n", sizeof(buf), argv[3]);
		return 2;
	}
	char line[64];
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin)) {
		perror("vfs-target: stdin");
		return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, warm_up, NULL) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "vfs-target: cannot run the warm-up thread\n");
		return 1;
	}
	sleep(1);
	memset(buf, 'x', sizeof(buf));
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	long long w = write_all(fd, calls, size);
	if (lseek(fd, 0, SEEK_SET) < 0) {
		perror("vfs-target: lseek");
		return 1;
	}
	long long r = read_all(fd, size);
	close(fd);
	printf("written %lld\nread %lld\n", w, r);
	return 0;
}
