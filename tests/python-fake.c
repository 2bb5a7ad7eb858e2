/*
 * python-fake.c — a program that looks like a CPython interpreter to
 * `record` (it exports _PyEval_EvalFrameDefault, _PyRuntime, PyCode_Type
 * and Py_Version) but whose interpreter state is hostile, for
 * tests/test-record-python.sh.
 *
 * Built twice: as python-fake-3.99 (Py_Version 3.99: a version the
 * collector does not know, so it must record native stacks only and say
 * so), and as python-fake-3.11, whose thread state (at the 3.11 layout)
 * points at frames that, in turn for SECONDS/4 each:
 *   loop     chain to themselves forever (previous = self, never an entry);
 *   notcode  hold a code pointer to something that is no code object;
 *   chain    end (previous = NULL) before any entry frame;
 *   wild     point at an unmapped address.
 * The walker must cut each one short, marked, and never loop.  The fake
 * code object's names are real compact ASCII strings, so the looping
 * frames are named "spin (fake.py)".
 *
 * Usage: python-fake-3.xx [SECONDS]   (default 2)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 0x030b02f0ul
#endif

#define EXPORT __attribute__((visibility("default"), used))

EXPORT const unsigned long Py_Version = FAKE_VERSION;
EXPORT char PyCode_Type[408];
EXPORT _Alignas(64) unsigned char _PyRuntime[4096];

/* 3.11 offsets (collector/symbolize/python.c). */
static _Alignas(16) unsigned char tstate[256], cframe[32], frame[80], code[192], notcode[192];
static _Alignas(16) unsigned char qualname[64], filename[64], linetable[40];

static void put64(unsigned char *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, 8);
}

static void ascii(unsigned char *s, const char *text)
{
	size_t n = strlen(text);
	put64(s, 8, 1);                                         /* ob_type: not checked */
	put64(s, 16, n);                                        /* length */
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7; /* kind 1, compact, ascii, ready */
	memcpy(s + 32, &state, 4);
	memcpy(s + 48, text, n + 1);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile uint64_t sink;

/* The "interpreter": the native frame the walker replaces. */
EXPORT __attribute__((noinline)) void _PyEval_EvalFrameDefault(double until)
{
	while (now() < until)
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * (uint64_t)i;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;

	ascii(qualname, "spin");
	ascii(filename, "fake.py");
	put64(linetable, 16, 0); /* an empty line table */
	put64(code, 8, (uint64_t)(uintptr_t)PyCode_Type);
	put64(code, 112, (uint64_t)(uintptr_t)filename);
	put64(code, 120, (uint64_t)(uintptr_t)qualname);
	put64(code, 128, (uint64_t)(uintptr_t)qualname);
	put64(code, 136, (uint64_t)(uintptr_t)linetable);
	put64(notcode, 8, 12345);
	put64(tstate, 160, (uint64_t)syscall(SYS_gettid));   /* native_thread_id */
	put64(tstate, 56, (uint64_t)(uintptr_t)cframe);      /* cframe */
	put64(cframe, 8, (uint64_t)(uintptr_t)frame);        /* current_frame */
	put64(_PyRuntime, 576, (uint64_t)(uintptr_t)tstate); /* tstate_current */

	double t0 = now(), q = seconds / 4;
	for (int mode = 0; mode < 4; mode++) {
		memset(frame, 0, sizeof(frame));
		switch (mode) {
		case 0: /* loop */
			put64(frame, 32, (uint64_t)(uintptr_t)code);
			put64(frame, 48, (uint64_t)(uintptr_t)frame);
			break;
		case 1: /* notcode */ put64(frame, 32, (uint64_t)(uintptr_t)notcode); break;
		case 2: /* chain */ put64(frame, 32, (uint64_t)(uintptr_t)code); break;
		case 3: /* wild */ put64(cframe, 8, 0x10); break;
		}
		_PyEval_EvalFrameDefault(t0 + q * (mode + 1));
	}
	return 0;
}
