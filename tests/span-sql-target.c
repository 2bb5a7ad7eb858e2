/*
 * span-sql-target.c — a program that marks SQL statements with USDT span
 * probes guarded by a semaphore, as PostgreSQL's query__start/query__done
 * are, for test-record-span.sh: record --span ...:sql must give one name a
 * statement shape however many literals it ran with, and must set the
 * semaphore (the kernel's uprobe reference counter) for the probes to fire.
 *
 * Probes (provider flamefs_test): query__start(const char *sql), with a
 * semaphore; query__done(), with one the program does not read (with
 * semaphores every probe of the file has one).  The statement text is built only
 * while the semaphore is set, as a server skips the work when nobody
 * listens.
 *
 *   usage: span-sql-target QUERIES ITERATIONS [DEPTH]
 * Runs QUERIES statements, alternately a SELECT and an UPDATE each with
 * its own literals, spinning ITERATIONS rounds inside each, then prints
 *   queries=Q semaphore_on=S
 * S being the statements during which the semaphore was set.  With DEPTH,
 * each of the QUERIES is instead DEPTH spans nested in one another, named
 * "level 1" (outermost) to "level DEPTH", the spinning in the innermost
 * (a second site of each probe).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

#include "spin.h"

unsigned short flamefs_test_query__start_semaphore __attribute__((unused))
__attribute__((section(".probes")));
unsigned short flamefs_test_query__done_semaphore __attribute__((unused))
__attribute__((section(".probes")));

static __attribute__((noinline)) void run_query(unsigned i, uint64_t iters, unsigned *on)
{
	char sql[160];
	const char *text = "";

	if (flamefs_test_query__start_semaphore) {
		if (i % 2)
			snprintf(sql, sizeof(sql),
			         "UPDATE pgbench_accounts SET abalance = abalance + %u WHERE aid = "
			         "%u",
			         i * 7, i);
		else
			snprintf(sql, sizeof(sql),
			         "SELECT abalance FROM pgbench_accounts WHERE aid = %u", i);
		text = sql;
		++*on;
	}
	STAP_PROBE1(flamefs_test, query__start, text);
	publish(spin(iters));
	STAP_PROBE(flamefs_test, query__done);
}

static __attribute__((noinline)) void nested(unsigned level, unsigned depth, uint64_t iters,
                                             unsigned *on)
{
	char name[32];
	const char *text = "";

	if (level > depth) {
		publish(spin(iters));
		return;
	}
	if (flamefs_test_query__start_semaphore) {
		snprintf(name, sizeof(name), "level %u", level);
		text = name;
		*on += level == 1;
	}
	STAP_PROBE1(flamefs_test, query__start, text);
	nested(level + 1, depth, iters, on);
	STAP_PROBE(flamefs_test, query__done);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: span-sql-target QUERIES ITERATIONS [DEPTH]\n");
		return 2;
	}
	unsigned n = (unsigned)strtoul(argv[1], NULL, 10), on = 0;
	uint64_t iters = strtoull(argv[2], NULL, 10);
	unsigned depth = argc == 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 0;
	for (unsigned i = 0; i < n; i++) {
		if (depth)
			nested(1, depth, iters, &on);
		else
			run_query(i, iters, &on);
	}
	printf("queries=%u semaphore_on=%u\n", n, on);
	return 0;
}
