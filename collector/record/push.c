/*
 * push.c — `record --push DATABASE`: a thread that copies the
 * recorder's store into a central database every --push-every, as
 * `flamefs-collect push` does, while the recording goes on.
 *
 * The thread keeps the local store open as a reader (the recorder holds
 * the writer) and catches it up before each push (store_refresh), so it
 * sees every committed drain without loading the whole store again, and
 * calls store_copy(), which sends each time bucket changed since the
 * database's record of this store, whole.  A copy cache remembers which
 * local frame and node is which database one (ids the database committed
 * never change), so a steady push interns only what is new.  The database replaces its earlier copy of a bucket,
 * so a push that fails half way or runs twice counts nothing twice.
 * While the database cannot be reached the data waits in the local store
 * (whose --retention still applies) and goes with the next push that
 * works.  The connection is kept between pushes and made again after a
 * failure.  A last push follows the recorder's last drain.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record-internal.h"

struct record_pusher {
	pthread_t thread;
	pthread_mutex_t mu; /* guards stop */
	pthread_cond_t cv;
	bool stop;

	/* The thread's own, until it is joined. */
	char *dir, *to;
	int64_t every;
	struct store *src, *dst;
	struct store_copy_cache *cache; /* which source node is which database one */
	bool failing;
	uint64_t pushes, failures, buckets, samples;
	/* The thread's CPU time (CLOCK_THREAD_CPUTIME_ID) of its first push
	 * (which opens both stores) and of the others, in ns. */
	uint64_t first_ns, rest_ns;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One push; reports a failure once per outage, and the recovery. */
static void push_once(struct record_pusher *p)
{
	struct store_copy_opts o = {.incremental = true, .cache = p->cache};
	struct store_copy_stats st;
	uint64_t cpu = thread_cpu_ns();
	bool first = p->pushes + p->failures == 0;
	char err[1024];
	int r = 0;

	if (!p->dst)
		r = store_open(p->to, STORE_CREATE, &p->dst, err, sizeof(err));
	if (r == 0 && !p->src)
		r = store_open(p->dir, STORE_READONLY, &p->src, err, sizeof(err));
	else if (r == 0 && store_refresh(p->src) < 0) {
		snprintf(err, sizeof(err), "%s", store_errmsg(p->src));
		r = -EIO;
	}
	if (r == 0)
		r = store_copy(p->dst, p->src, &o, &st, err, sizeof(err));
	cpu = thread_cpu_ns() - cpu;
	if (first)
		p->first_ns = cpu;
	else
		p->rest_ns += cpu;
	if (r < 0) {
		p->failures++;
		if (!p->failing)
			fprintf(stderr,
			        PROG ": push: %s; the data waits in the local store, next try in "
			             "%" PRId64 " s\n",
			        err, p->every);
		p->failing = true;
		/* Connect afresh next time: the server may be another one; and
		 * open the local store again, in case it was what failed. */
		store_close(p->dst);
		p->dst = NULL;
		store_close(p->src);
		p->src = NULL;
		return;
	}
	if (p->failing)
		fprintf(stderr, PROG ": push: %s reached again\n", store_where(p->dst));
	if (st.note[0])
		fprintf(stderr, PROG ": push: %s\n", st.note);
	p->failing = false;
	p->pushes++;
	p->buckets += st.buckets;
	p->samples += st.samples;
}

static void *push_thread(void *arg)
{
	struct record_pusher *p = arg;
	struct timespec at;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &at);
	for (;;) {
		push_once(p);
		at.tv_sec += p->every;
		pthread_mutex_lock(&p->mu);
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &at) != ETIMEDOUT)
			;
		stop = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
	}
	push_once(p); /* what the last drain committed */
	return NULL;
}

/* The store's lines about a lost connection, each try again and the
 * recovery, from the push thread. */
static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, PROG ": push: %s\n", line);
}

int record_push_start(struct record_pusher **out, const char *dir, const char *to, int64_t every)
{
	struct record_pusher *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	sigset_t all, old;
	int r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	store_log_to(log_line, NULL);
	p->dir = strdup(dir);
	p->to = strdup(to);
	p->cache = store_copy_cache_new();
	p->every = every;
	if (!p->dir || !p->to || !p->cache) {
		r = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals stay with the recorder's main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&p->thread, NULL, push_thread, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	store_copy_cache_free(p->cache);
	free(p->dir);
	free(p->to);
	free(p);
	return r;
}

void record_push_stop(struct record_pusher *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	fprintf(stderr,
	        PROG ": push: %" PRIu64 " pushes sent %" PRIu64 " time buckets (%" PRIu64
	             " samples); CPU %.1f ms for the first, %.1f ms a push after it%s",
	        p->pushes, p->buckets, p->samples, (double)p->first_ns / 1e6,
	        p->pushes + p->failures > 1
	                ? (double)p->rest_ns / 1e6 / (double)(p->pushes + p->failures - 1)
	                : 0.0,
	        p->failures ? "; " : "\n");
	if (p->failures)
		fprintf(stderr, "%" PRIu64 " failed%s\n", p->failures,
		        p->failing ? ": the last one too, so the newest data is only in the local "
		                     "store; `flamefs-collect push` sends it"
		                   : "");
	store_close(p->src);
	store_close(p->dst);
	store_copy_cache_free(p->cache);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->dir);
	free(p->to);
	free(p);
}
