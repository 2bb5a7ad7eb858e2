/*
 * vfs-target.c — a program whose VFS traffic is known exactly, for
 * test-vfs.sh: `vfs-target FILE CALLS SIZE` writes CALLS blocks of SIZE
 * bytes to FILE from write_all(), one write(2) each, then reads them back
 * from read_all(), one read(2) of SIZE each until end of file, and prints
 * "written BYTES" and "read BYTES", the totals the calls returned.  It
 * moves nothing else through read(2) or write(2) on FILE: stdout is
 * written once, at the end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char buf[1 << 20];

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
