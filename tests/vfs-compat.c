/*
 * vfs-compat.c — a 32-bit x86 program without libc, for test-vfs.sh: it
 * makes 1000 getpid calls (number 20, which is writev for a 64-bit task)
 * and writes 100 blocks of 4096 bytes to stdout (number 4), all through
 * int $0x80.  The vfs events must count none of it as a 64-bit call.
 * Built by the test itself: cc -m32 -nostdlib -static -ffreestanding.
 */
static int sys3(int nr, int a, int b, int c)
{
	int r;

	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return r;
}

static char buf[4096];

void _start(void)
{
	for (int i = 0; i < 1000; i++)
		sys3(20, 0, 0, 0); /* getpid */
	for (int i = 0; i < 100; i++)
		sys3(4, 1, (int)buf, sizeof(buf)); /* write(1, buf, 4096) */
	sys3(1, 0, 0, 0);                          /* exit(0) */
}
