/*
 * python-embed.c — a C program that embeds libpython3.11, for
 * tests/test-record-python.sh: main → run_script → PyRun_SimpleString runs
 * Python whose time goes to embed_work → embed_hot for SECONDS.  The
 * walker must find the interpreter in libpython3.11.so (not in the
 * executable) and interleave its frames with this program's.
 *
 * Usage: python-embed [SECONDS]   (default 2)
 */
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) int run_script(double seconds)
{
	char code[1024];
	snprintf(code, sizeof(code),
	         "import time\n"
	         "def embed_hot():\n"
	         "    x = 0\n"
	         "    for i in range(2000):\n"
	         "        x += i * i\n"
	         "    return x\n"
	         "def embed_work():\n"
	         "    end = time.time() + %g\n"
	         "    while time.time() < end:\n"
	         "        embed_hot()\n"
	         "embed_work()\n",
	         seconds);
	return PyRun_SimpleString(code);
}

/* Under AddressSanitizer (tests/run.sh's asan stage), what libpython keeps
 * until exit would be reported as leaks of this program: it is not ours to
 * fix, so leak checking is off here (the other checks stay). */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;

	Py_Initialize();
	int rc = run_script(seconds);
	if (Py_FinalizeEx() < 0)
		rc = 1;
	return rc ? 1 : 0;
}
