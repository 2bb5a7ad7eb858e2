/*
 * spans-demo.c — a program that marks its work with USDT span probes, so
 * that `flamefs-collect record --span` can be shown and tested without a
 * database.
 *
 * Probes (provider flamefs_demo, in the binary's .note.stapsdt; no
 * semaphores: each site is a nop, and its arguments always computed):
 *
 *   flamefs_demo:span__enter(u64 id, u64 parent, const char *name)
 *       a span starts on this thread.  id is unique in the process and never
 *       0; parent is the id of the span it is nested in, 0 for a top-level
 *       span; name points at a NUL-terminated string in the process (one of
 *       "request", "plan", "execute").
 *   flamefs_demo:span__exit(u64 id)
 *       the span id ends; it is always the innermost open span of the thread.
 *
 * Each probe has one site (the enter and exit functions are not inlined) and
 * every argument is an 8-byte register operand, "8@%reg" in the note
 * (readelf -n shows them); a recorder reads the name's string from the traced
 * process at enter.
 *
 * The work: each thread runs requests.  A request is a span "request" with
 * two spans nested inside it, "plan" then "execute".  The CPU is split by
 * loop iterations, so the shares hold on a loaded machine: of each request,
 * 10% is the request's own work (half before plan, half after execute), 30%
 * plan and 60% execute.  A sample taken inside a span belongs to the
 * innermost one, so by name the CPU splits 0.10 / 0.30 / 0.60.
 *
 * At exit (after -n requests, -d seconds, or SIGINT/SIGTERM, which finish
 * the request under way) it prints its own accounting on stdout, one line a
 * span name, from the threads' CPU clocks read at every span boundary:
 *
 *   span name=execute spans=N iterations=I cpu_ns=C cpu_share=0.6012 design=0.60
 *        wall_ns=W max_wall_ns=M sleep_ns=S
 *
 * (one line) and one "total" line.  cpu_ns is the thread CPU time spent
 * with that name as the innermost span, so cpu_share is what a profiler
 * should find.  wall_ns sums the spans' durations (CLOCK_MONOTONIC from
 * just after the enter probe to just before the exit probe; a request's
 * includes its plan and execute), max_wall_ns is the longest, sleep_ns the
 * time asleep inside spans of that name with -s (off-CPU time a recorder
 * with off-CPU events should give to execute).
 *
 * The rate mode (-r SPANS_PER_SECOND) measures what a span costs: each
 * thread enters and exits flat spans (cycling through the three names, -u
 * iterations of work inside each, default 0) paced to the rate with
 * absolute sleeps, and prints
 *
 *   rate spans=N seconds=S spans_per_second=R cpu_ns=C cpu_ns_per_span=P
 *
 * Run it with and without the probes attached: the difference in
 * cpu_ns_per_span is what an enter/exit pair costs the traced thread
 * (the uprobe traps run on the thread's CPU clock).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>

enum { NAME_REQUEST, NAME_PLAN, NAME_EXECUTE, NAMES };

static const char *const names[NAMES] = {"request", "plan", "execute"};
/* Work of a request, in units: request's own 10 (5 + 5), plan 30, execute 60. */
static const unsigned units[NAMES] = {10, 30, 60};

static volatile sig_atomic_t stop;
static atomic_uint_fast64_t next_id = 1;
static volatile uint64_t sink;

struct opts {
	uint64_t requests;   /* 0 = no limit */
	double seconds;      /* 0 = no limit */
	uint64_t unit_iters; /* loop iterations of one work unit */
	unsigned threads;
	double rate;       /* spans a second in rate mode, 0 = request mode */
	uint64_t sleep_us; /* off-CPU time inside each execute span */
};

struct worker {
	pthread_t thread;
	const struct opts *o;
	struct timespec deadline; /* CLOCK_MONOTONIC; tv_sec 0 = none */
	uint64_t spans[NAMES];
	uint64_t iterations[NAMES];
	uint64_t cpu_ns[NAMES];
	uint64_t wall_ns[NAMES];     /* durations summed, enter to exit */
	uint64_t max_wall_ns[NAMES]; /* the longest span */
	uint64_t sleep_ns[NAMES];    /* time asleep inside the span itself */
	uint64_t requests;
	uint64_t rate_spans;
	uint64_t rate_cpu_ns;
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void publish(uint64_t h)
{
	sink += h;
}

/* Not a leaf (it calls publish), so a frame-pointer unwind sees its caller. */
static __attribute__((noinline)) void spin(uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ i) * 1099511628211ull;
	publish(h);
}

/* One probe site each (noinline), every argument in a register ("8@%reg"):
 * the empty asm makes the compiler materialise the name's pointer rather
 * than hand the probe a memory operand. */
static __attribute__((noinline)) uint64_t span_enter(uint64_t parent, int name)
{
	uint64_t id = atomic_fetch_add(&next_id, 1);
	const char *n = names[name];
	__asm__ volatile("" : "+r"(n));
	DTRACE_PROBE3(flamefs_demo, span__enter, id, parent, n);
	return id;
}

static __attribute__((noinline)) void span_exit(uint64_t id)
{
	DTRACE_PROBE1(flamefs_demo, span__exit, id);
}

/* Runs n units as name's own work and charges the thread CPU time since
 * *mark to name; *mark moves to now. */
static void charge(struct worker *w, int name, uint64_t n, uint64_t *mark)
{
	uint64_t iters = n * w->o->unit_iters;
	spin(iters);
	w->iterations[name] += iters;
	uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	w->cpu_ns[name] += now - *mark;
	*mark = now;
}

/* A span's duration, from just after its enter probe to just before its
 * exit probe (CLOCK_MONOTONIC). */
static void timed(struct worker *w, int name, uint64_t start)
{
	uint64_t d = clock_ns(CLOCK_MONOTONIC) - start;
	w->wall_ns[name] += d;
	if (d > w->max_wall_ns[name])
		w->max_wall_ns[name] = d;
}

static __attribute__((noinline)) void plan(struct worker *w, uint64_t parent, uint64_t *mark)
{
	uint64_t id = span_enter(parent, NAME_PLAN);
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	w->spans[NAME_PLAN]++;
	charge(w, NAME_PLAN, units[NAME_PLAN], mark);
	timed(w, NAME_PLAN, start);
	span_exit(id);
}

/* Off-CPU inside the span: a sleep, after its work. */
static void snooze(struct worker *w, int name)
{
	if (!w->o->sleep_us)
		return;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	struct timespec ts = {.tv_sec = (time_t)(w->o->sleep_us / 1000000),
	                      .tv_nsec = (long)(w->o->sleep_us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop)
		;
	w->sleep_ns[name] += clock_ns(CLOCK_MONOTONIC) - t0;
}

static __attribute__((noinline)) void execute(struct worker *w, uint64_t parent, uint64_t *mark)
{
	uint64_t id = span_enter(parent, NAME_EXECUTE);
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	w->spans[NAME_EXECUTE]++;
	charge(w, NAME_EXECUTE, units[NAME_EXECUTE], mark);
	snooze(w, NAME_EXECUTE);
	timed(w, NAME_EXECUTE, start);
	span_exit(id);
}

static __attribute__((noinline)) void request(struct worker *w, uint64_t *mark)
{
	uint64_t id = span_enter(0, NAME_REQUEST);
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	w->spans[NAME_REQUEST]++;
	charge(w, NAME_REQUEST, units[NAME_REQUEST] / 2, mark);
	plan(w, id, mark);
	execute(w, id, mark);
	charge(w, NAME_REQUEST, units[NAME_REQUEST] - units[NAME_REQUEST] / 2, mark);
	timed(w, NAME_REQUEST, start);
	span_exit(id);
}

static int past(const struct timespec *deadline)
{
	if (!deadline->tv_sec)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static void run_requests(struct worker *w)
{
	uint64_t mark = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	while (!stop && !past(&w->deadline) && (!w->o->requests || w->requests < w->o->requests)) {
		request(w, &mark);
		w->requests++;
	}
}

/* Flat spans paced to o->rate / threads a second: after every batch the
 * thread sleeps until the batch's due time (absolute, so lateness does not
 * accumulate). */
static void run_rate(struct worker *w)
{
	const double per_thread = w->o->rate / w->o->threads;
	const uint64_t batch = per_thread >= 1000 ? (uint64_t)(per_thread / 100) : 1;
	const uint64_t start = clock_ns(CLOCK_MONOTONIC);
	const uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t n = 0;
	while (!stop && !past(&w->deadline) && (!w->o->requests || n < w->o->requests)) {
		for (uint64_t i = 0; i < batch; i++, n++) {
			int name = (int)(n % NAMES);
			uint64_t id = span_enter(0, name);
			if (w->o->unit_iters)
				spin(w->o->unit_iters);
			span_exit(id);
			w->spans[name]++;
			w->iterations[name] += w->o->unit_iters;
		}
		uint64_t due = start + (uint64_t)((double)n * 1e9 / per_thread);
		struct timespec ts = {.tv_sec = (time_t)(due / 1000000000u),
		                      .tv_nsec = (long)(due % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
			;
	}
	w->rate_spans = n;
	w->rate_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	if (w->o->rate > 0)
		run_rate(w);
	else
		run_requests(w);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fputs("usage: spans-demo [-d SECONDS] [-n COUNT] [-t THREADS] [-u ITERATIONS]\n"
	      "                  [-r SPANS_PER_SECOND] [-s MICROSECONDS]\n"
	      "  -d SECONDS       run this long (default 5 unless -n is given)\n"
	      "  -n COUNT         requests per thread (rate mode: spans per thread)\n"
	      "  -t THREADS       worker threads (default 1)\n"
	      "  -u ITERATIONS    loop iterations of one work unit (default 20000; a\n"
	      "                   request is 100 units; rate mode: the work inside each\n"
	      "                   span, default 0)\n"
	      "  -r RATE          rate mode: RATE flat spans a second in all, to measure\n"
	      "                   what a span costs\n"
	      "  -s MICROSECONDS  sleep this long inside each execute span, after its\n"
	      "                   work (off-CPU time in a span)\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return -EINVAL;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_pos_double(const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || !(x > 0) || x > 1e9)
		return -EINVAL;
	*v = x;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.unit_iters = 20000, .threads = 1};
	int have_u = 0;
	uint64_t t = 1;
	int c;
	while ((c = getopt(argc, argv, "d:n:t:u:r:s:h")) != -1) {
		int bad = 0;
		switch (c) {
		case 'd': bad = parse_pos_double(optarg, &o.seconds); break;
		case 'n': bad = parse_u64(optarg, &o.requests) || !o.requests; break;
		case 't': bad = parse_u64(optarg, &t) || t < 1 || t > 1024; break;
		case 'u':
			bad = parse_u64(optarg, &o.unit_iters);
			have_u = 1;
			break;
		case 'r': bad = parse_pos_double(optarg, &o.rate); break;
		case 's': bad = parse_u64(optarg, &o.sleep_us) || o.sleep_us > 10000000; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "spans-demo: -%c %s: not a valid value\n", c, optarg);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "spans-demo: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	o.threads = (unsigned)t;
	if (o.rate > 0 && !have_u)
		o.unit_iters = 0;
	if (!o.seconds && !o.requests)
		o.seconds = 5;

	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct worker *w = calloc(o.threads, sizeof(*w));
	if (!w) {
		fprintf(stderr, "spans-demo: out of memory\n");
		return 1;
	}
	struct timespec deadline = {0};
	if (o.seconds) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		uint64_t ns = (uint64_t)(o.seconds * 1e9) + (uint64_t)deadline.tv_nsec;
		deadline.tv_sec += (time_t)(ns / 1000000000u);
		deadline.tv_nsec = (long)(ns % 1000000000u);
	}
	uint64_t wall0 = clock_ns(CLOCK_MONOTONIC);
	unsigned started = 0;
	for (; started < o.threads; started++) {
		w[started].o = &o;
		w[started].deadline = deadline;
		int err = started ? pthread_create(&w[started].thread, NULL, work, &w[started]) : 0;
		if (err) {
			fprintf(stderr, "spans-demo: starting thread %u: %s\n", started,
			        strerror(err));
			stop = 1;
			break;
		}
	}
	if (started)
		work(&w[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(w[i].thread, NULL);
	double wall = (double)(clock_ns(CLOCK_MONOTONIC) - wall0) / 1e9;

	if (o.rate > 0) {
		uint64_t spans = 0, cpu = 0;
		for (unsigned i = 0; i < started; i++) {
			spans += w[i].rate_spans;
			cpu += w[i].rate_cpu_ns;
		}
		printf("rate spans=%llu seconds=%.3f spans_per_second=%.0f cpu_ns=%llu "
		       "cpu_ns_per_span=%.1f\n",
		       (unsigned long long)spans, wall, spans / wall, (unsigned long long)cpu,
		       spans ? (double)cpu / (double)spans : 0.0);
	} else {
		uint64_t spans[NAMES] = {0}, iters[NAMES] = {0}, cpu[NAMES] = {0}, total = 0,
		         req = 0, wall_ns[NAMES] = {0}, max_wall[NAMES] = {0}, slept[NAMES] = {0};
		for (unsigned i = 0; i < started; i++) {
			req += w[i].requests;
			for (int k = 0; k < NAMES; k++) {
				spans[k] += w[i].spans[k];
				iters[k] += w[i].iterations[k];
				cpu[k] += w[i].cpu_ns[k];
				total += w[i].cpu_ns[k];
				wall_ns[k] += w[i].wall_ns[k];
				slept[k] += w[i].sleep_ns[k];
				if (w[i].max_wall_ns[k] > max_wall[k])
					max_wall[k] = w[i].max_wall_ns[k];
			}
		}
		for (int k = 0; k < NAMES; k++)
			printf("span name=%s spans=%llu iterations=%llu cpu_ns=%llu cpu_share=%.4f "
			       "design=%.2f wall_ns=%llu max_wall_ns=%llu sleep_ns=%llu\n",
			       names[k], (unsigned long long)spans[k], (unsigned long long)iters[k],
			       (unsigned long long)cpu[k],
			       total ? (double)cpu[k] / (double)total : 0.0, units[k] / 100.0,
			       (unsigned long long)wall_ns[k], (unsigned long long)max_wall[k],
			       (unsigned long long)slept[k]);
		printf("total requests=%llu threads=%u seconds=%.3f cpu_ns=%llu\n",
		       (unsigned long long)req, started, wall, (unsigned long long)total);
	}
	free(w);
	return started == o.threads ? 0 : 1;
}
