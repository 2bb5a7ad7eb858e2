/*
 * pq.c — loading libpq when the first database store is opened
 * (central-internal.h says why it is not linked).
 */
#define CENTRAL_PQ_NO_MACROS
#include "central-internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

/* libpq's soname: its ABI has been 5 since PostgreSQL 8.2. */
#define LIBPQ_SONAME "libpq.so.5"

struct central_pq central_pq;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_err[256];

static void load(void)
{
	/* Kept loaded for the life of the process: nothing unloads it. */
	void *h = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(load_err, sizeof(load_err),
		         "cannot load %s (PostgreSQL's client library): %s", LIBPQ_SONAME,
		         e ? e : "unknown error");
		load_result = -ENOTSUP;
		return;
	}
#define CENTRAL_PQ_RESOLVE(f)                                                                      \
	do {                                                                                       \
		*(void **)&central_pq.f = dlsym(h, #f);                                            \
		if (!central_pq.f) {                                                               \
			snprintf(load_err, sizeof(load_err), "%s has no %s", LIBPQ_SONAME, #f);    \
			load_result = -ENOTSUP;                                                    \
			return;                                                                    \
		}                                                                                  \
	} while (0);
	CENTRAL_PQ_FUNCS(CENTRAL_PQ_RESOLVE)
#undef CENTRAL_PQ_RESOLVE
}

int central_pq_load(char *err, size_t errlen)
{
	pthread_once(&load_once, load);
	if (load_result < 0 && errlen)
		snprintf(err, errlen, "%s", load_err);
	return load_result;
}
