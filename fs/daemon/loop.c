/*
 * loop.c — the request loop: up to n threads serve the session, one at a
 * time reading /dev/fuse (the leader) and answering what it reads itself.
 * Most requests are answered from what the daemon holds, in microseconds,
 * and one thread doing them all stays warm; libfuse's own loop wakes its
 * idle threads in turn, each with cold caches, and that cost more than the
 * answers.  Before a request does something long (rendering a file,
 * ops.c), its thread hands the lead to an idle follower (loop_yield()), the
 * most recently idle first, so that a long rendering holds up no other
 * request; when it is done it becomes a follower again, or takes the lead
 * when nobody holds it.  A tree's build holds fs.lock, so it never ran
 * beside other requests anyway and keeps the lead.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "daemon-internal.h"

struct loop_thread {
	pthread_t thread;
	pthread_cond_t wake;
	atomic_bool reading;      /* waiting in fuse_session_receive_buf() */
	bool lead;                /* handed the lead while idle */
	struct loop_thread *next; /* in loop.idle */
};

static struct {
	pthread_mutex_t mu;
	struct loop_thread *idle; /* a stack: the warmest on top */
	bool led;                 /* a thread holds the lead */
	bool stop;
	sem_t finish; /* posted when the session has ended */
	struct fuse_session *se;
} loop = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool leading;

/* The signal that ends a leader's wait for a request once the session has
 * ended (a signal or an error ended it, and no request may come): its
 * handler does nothing, and without SA_RESTART the read fails with EINTR.
 * A thread is never cancelled: cancelling unwinds frames that the address
 * sanitizer (and any cleanup the code may gain) would not see unwound. */
#define LOOP_WAKE_SIGNAL SIGRTMIN

static void loop_wake_handler(int sig)
{
	(void)sig;
}

void loop_yield(void)
{
	if (!leading)
		return;
	leading = false;
	pthread_mutex_lock(&loop.mu);
	struct loop_thread *f = loop.idle;
	if (f) {
		loop.idle = f->next;
		f->lead = true;
		pthread_cond_signal(&f->wake);
	} else {
		loop.led = false; /* the next thread to finish takes it */
	}
	pthread_mutex_unlock(&loop.mu);
}

/* Reads and answers requests for as long as the thread leads. */
static void lead(struct loop_thread *me, struct fuse_buf *buf)
{
	leading = true;
	while (leading && !fuse_session_exited(loop.se)) {
		/* Woken by LOOP_WAKE_SIGNAL only while waiting (loop_run()). */
		atomic_store(&me->reading, true);
		int r = fuse_session_receive_buf(loop.se, buf);
		atomic_store(&me->reading, false);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r <= 0) {
			fuse_session_exit(loop.se);
			break;
		}
		fuse_session_process_buf(loop.se, buf);
	}
}

static void *loop_main(void *arg)
{
	struct loop_thread *me = arg;
	struct fuse_buf buf = {0};
	sigset_t wake;

	sigemptyset(&wake);
	sigaddset(&wake, LOOP_WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	pthread_mutex_lock(&loop.mu);
	while (!loop.stop) {
		if (!me->lead && !loop.led) {
			me->lead = true;
			loop.led = true;
		}
		if (!me->lead) {
			me->next = loop.idle;
			loop.idle = me;
			while (!me->lead && !loop.stop)
				pthread_cond_wait(&me->wake, &loop.mu);
			if (!me->lead) /* stopped while idle: off the stack */
				for (struct loop_thread **p = &loop.idle; *p; p = &(*p)->next)
					if (*p == me) {
						*p = me->next;
						break;
					}
			continue;
		}
		me->lead = false;
		pthread_mutex_unlock(&loop.mu);
		lead(me, &buf);
		pthread_mutex_lock(&loop.mu);
		if (leading || fuse_session_exited(loop.se)) {
			/* The session ended: wake everyone, and loop_run(). */
			leading = false;
			loop.stop = true;
			for (struct loop_thread *f = loop.idle; f; f = f->next)
				pthread_cond_signal(&f->wake);
			sem_post(&loop.finish);
		}
	}
	pthread_mutex_unlock(&loop.mu);
	free(buf.mem);
	return NULL;
}

int loop_run(struct fuse_session *se, unsigned nthreads)
{
	struct loop_thread *ts = calloc(nthreads ? nthreads : 1, sizeof(*ts));
	sigset_t all, old;
	unsigned n = 0;

	if (!ts)
		return -ENOMEM;
	loop.se = se;
	loop.stop = loop.led = false;
	loop.idle = NULL;
	sem_init(&loop.finish, 0, 0);
	struct sigaction sa = {.sa_handler = loop_wake_handler}; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	sigaction(LOOP_WAKE_SIGNAL, &sa, NULL);
	/* Signals go to this thread, whose wait they end (and
	 * fuse_set_signal_handlers()' handler ends the session). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (; n < (nthreads ? nthreads : 1); n++) {
		pthread_cond_init(&ts[n].wake, NULL);
		if (pthread_create(&ts[n].thread, NULL, loop_main, &ts[n]) != 0) {
			pthread_cond_destroy(&ts[n].wake);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n == 0) {
		free(ts);
		sem_destroy(&loop.finish);
		return -EAGAIN;
	}
	while (!fuse_session_exited(se))
		sem_wait(&loop.finish);
	pthread_mutex_lock(&loop.mu);
	loop.stop = true;
	for (unsigned k = 0; k < n; k++)
		pthread_cond_signal(&ts[k].wake);
	pthread_mutex_unlock(&loop.mu);
	/* The leader may be waiting for a request that never comes (a
	 * signal ended the session): it is woken until it has gone, as a
	 * signal sent just before its read would be missed. */
	for (unsigned k = 0; k < n; k++) {
		for (;;) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 20 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			if (atomic_load(&ts[k].reading))
				pthread_kill(ts[k].thread, LOOP_WAKE_SIGNAL);
			if (pthread_timedjoin_np(ts[k].thread, NULL, &until) == 0)
				break;
		}
		pthread_cond_destroy(&ts[k].wake);
	}
	free(ts);
	sem_destroy(&loop.finish);
	return 0;
}
