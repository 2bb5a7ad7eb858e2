/*
 * events-target.c — a program with known costs for tests/test-events.sh
 * (record -e).  Each mode does one thing whose size it knows exactly:
 *   nap           main → napper: 150 naps of 10 ms (1.5 s off CPU; it prints
 *                 "napped NS", the time they took, waits for a CPU included)
 *   touch         main → toucher: writes one byte in every page of 192 MiB
 *                 of fresh anonymous memory (192 MiB of RSS gained)
 *   direct DIR    main → direct_writer: writes 32 MiB to DIR/events-target.tmp
 *                 with O_DIRECT, 1 MiB at a time (32 MiB of block I/O)
 *   net           main → net_send sends 64 MiB over TCP on 127.0.0.1 to a
 *                 thread, net_recv, that reads it all (64 MiB each way)
 *   all DIR       the four in turn
 *   nap-after-input  reads one byte from standard input, then naps as nap
 *                 (so a test can attach a recorder first)
 * Usage: events-target MODE [DIR]
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Prints the time the naps really took ("napped NS"): on a busy machine
 * a thread waits for a CPU after each wake-up, and that is off-CPU time
 * too. */
__attribute__((noinline)) int napper(void)
{
	struct timespec t = {0, 10 * 1000 * 1000};
	int64_t napped = 0;
	for (int i = 0; i < 150; i++) {
		int64_t t0 = mono_ns();
		nanosleep(&t, NULL);
		napped += mono_ns() - t0;
	}
	printf("napped %lld\n", (long long)napped);
	return 0;
}

__attribute__((noinline)) int toucher(void)
{
	size_t len = 192 * (size_t)MiB;
	volatile char *p =
	        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	munmap((void *)p, len);
	return 0;
}

__attribute__((noinline)) int direct_writer(const char *dir)
{
	char path[4096];
	void *buf;
	snprintf(path, sizeof(path), "%s/events-target.tmp", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0 || posix_memalign(&buf, 4096, MiB)) {
		perror(path);
		return 1;
	}
	memset(buf, 7, MiB);
	for (int i = 0; i < 32; i++)
		if (write(fd, buf, MiB) != MiB) {
			perror("write");
			return 1;
		}
	close(fd);
	unlink(path);
	free(buf);
	return 0;
}

__attribute__((noinline)) void *net_recv(void *arg)
{
	int fd = *(int *)arg;
	static char buf[65536];
	size_t got = 0;
	ssize_t n;
	while (got < 64 * (size_t)MiB && (n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	return NULL;
}

__attribute__((noinline)) int net_send(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s;
	static char buf[65536];
	pthread_t t;

	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) || connect(c, (struct sockaddr *)&a, al) ||
	    (s = accept(l, NULL, NULL)) < 0 || pthread_create(&t, NULL, net_recv, &s)) {
		perror("net");
		return 1;
	}
	for (size_t sent = 0; sent < 64 * (size_t)MiB;) {
		ssize_t n = send(c, buf, sizeof(buf), 0);
		if (n <= 0)
			return 1;
		sent += (size_t)n;
	}
	pthread_join(t, NULL);
	close(c);
	close(s);
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int rc = 0;
	if (strcmp(m, "nap-after-input") == 0) {
		char c;
		if (read(0, &c, 1) != 1)
			return 1;
		rc |= napper();
	}
	if (strcmp(m, "nap") == 0 || strcmp(m, "all") == 0)
		rc |= napper();
	if (strcmp(m, "touch") == 0 || strcmp(m, "all") == 0)
		rc |= toucher();
	if ((strcmp(m, "direct") == 0 || strcmp(m, "all") == 0) && argc > 2)
		rc |= direct_writer(argv[2]);
	if (strcmp(m, "net") == 0 || strcmp(m, "all") == 0)
		rc |= net_send();
	if (!*m) {
		fprintf(stderr, "usage: events-target nap|touch|direct DIR|net|all DIR\n");
		return 2;
	}
	return rc;
}
