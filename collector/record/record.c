/*
 * record.c — `flamefs-collect record`, the live collector: its main
 * function and loop.
 *
 * Sets the recorder up (its state, the store, the BPF side through
 * setup.c, what it follows through target.c), then loops: ring-buffer
 * events (fork, exec) make the symbolizer snapshot new processes while
 * they exist, and every second a drain (drain.c) flips the BPF side to
 * its other map set, reads the idle set, symbolizes each (pid, user
 * stack, kernel stack) count and commits it to the store as one atomic
 * batch.  On SIGINT, SIGTERM, the end of -d or the exit of the command,
 * sampling stops first and a last drain takes both map sets, so every
 * sample the BPF side saw is either stored or counted as dropped.  This
 * file is CLI code: it prints the error that ended the recording and the
 * store's notices, always as "flamefs-collect: ...".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <linux/types.h>

#include "record.h"
#include "store.h"
#include "usage-internal.h"

#define PROG "flamefs-collect"

#ifdef FLAMEFS_RECORD_NO_BPF

int record_main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		record_usage(stdout);
		return 0;
	}
	fprintf(stderr, PROG ": record: this build has no BPF sampler (bpftool, "
	                     "clang or /sys/kernel/btf/vmlinux was missing at build time)\n");
	return 1;
}

#else

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elfutils/libdwelf.h>

#include "import.h"
#include "kbtf-internal.h"
#include "ldso-internal.h"
#include "profile.h"
#include "profile.skel.h"
#include "symbolize.h"
#include "unwinder.h"

#include "record-internal.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void record_fail(struct recorder *r, int err, const char *fmt, ...)
{
	if (r->err)
		return;
	r->err = err < 0 ? err : -EIO;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
}

/* ---- privileges --------------------------------------------------------- */

/* Returns the names of the missing capabilities ("" when none is). */
static void missing_caps(char *out, size_t len)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	out[0] = '\0';
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &eff) == 1)
				break;
		fclose(f);
	}
	const unsigned long long sys_admin = 1ull << 21, perfmon = 1ull << 38, bpf = 1ull << 39;
	if (eff & sys_admin)
		return;
	if (!(eff & bpf) && !(eff & perfmon))
		snprintf(out, len, "CAP_BPF and CAP_PERFMON");
	else if (!(eff & bpf))
		snprintf(out, len, "CAP_BPF");
	else if (!(eff & perfmon))
		snprintf(out, len, "CAP_PERFMON");
}

/* What woke the recording loop (epoll data). */
enum { WAKE_RING, WAKE_TABLES, WAKE_CHILD };

/* The recorder's own state: the symbolizer and the drain's buffers. */
static int alloc_state(struct recorder *r, const struct options *o)
{
	r->period_ns = 1000000000ull / o->freq;
	r->counts_fd[0] = r->counts_fd[1] = -1;
	r->ustacks_fd[0] = r->ustacks_fd[1] = -1;
	r->pystacks_fd[0] = r->pystacks_fd[1] = -1;
	r->templates_fd = -1;

	r->sym = symbolize_new();
	r->frames = calloc(FRAMES_CAP, sizeof(*r->frames));
	r->pystack = calloc(1, sizeof(*r->pystack));
	r->pyslots = calloc(PROFILE_PY_SLOTS, sizeof(*r->pyslots));
	if (!r->sym || !r->frames || !r->pystack || !r->pyslots) {
		record_fail(r, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	/* --span labels samples even with --no-labels. */
	if ((o->labels || o->nspans) && record_labels_new(&r->labels, o->labels) < 0) {
		record_fail(r, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	unsigned lost = o->labels & ~record_labels_want(r->labels);
	if (lost)
		fprintf(stderr,
		        PROG ": no cgroup2 mount can be read (/proc/self/mounts): samples are "
		             "recorded without the %s label%s\n",
		        lost == (RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER)
		                ? "cgroup and container"
		        : lost == RECORD_LABEL_CGROUP ? "cgroup"
		                                      : "container",
		        lost == (RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER) ? "s" : "");
	symbolize_set_lines(r->sym, o->lines);
	symbolize_set_inline(r->sym, o->inlines);
	return 0;
}

/* The store (made if new), the --push thread, the JIT frames' waiting
 * room, --host and --log-drains. */
static int open_store(struct recorder *r, const struct options *o)
{
	char err[512];
	int rc;

	const char *dir = o->store_dir;
	char *owned = NULL;
	if (!dir) {
		dir = owned = store_default_dir();
		if (!dir) {
			record_fail(r, -EINVAL,
			            "no store given: use --store DIR or set "
			            "FLAMEFS_STORE");
			return -EINVAL;
		}
	}
	rc = store_open(dir, STORE_CREATE, &r->store, err, sizeof(err));
	if (rc == 0 && o->push_to) {
		rc = record_push_start(&r->pusher, dir, o->push_to, o->push_every);
		if (rc < 0)
			snprintf(err, sizeof(err), "--push: cannot start: %s", strerror(-rc));
	}
	free(owned);
	if (rc < 0) {
		record_fail(r, rc, "%s", err);
		return rc;
	}
	if (store_notice(r->store))
		fprintf(stderr, PROG ": %s\n", store_notice(r->store));
	if (o->jit_wait > 0 &&
	    (rc = record_late_new(&r->late, o->jit_memory,
	                          (uint64_t)(o->jit_wait + DRAIN_SECONDS - 1) / DRAIN_SECONDS,
	                          store_bucket_seconds(r->store))) < 0) {
		record_fail(r, rc, "out of memory");
		return rc;
	}
	if ((rc = record_names_new(&r->names, o, store_is_database(store_where(r->store)))) < 0) {
		record_fail(r, rc, "out of memory");
		return rc;
	}
	if (o->host && (rc = store_set_host(r->store, o->host)) < 0) {
		record_fail(r, rc, "--host: out of memory");
		return rc;
	}
	if (o->keep_samples >= 0 && (rc = store_set_keep_samples(r->store, o->keep_samples)) < 0) {
		if (rc == -EOPNOTSUPP)
			record_fail(r, rc, "--keep-samples: %s keeps no samples with their moments",
			            store_where(r->store));
		else
			record_fail(r, rc, "--keep-samples: %s", store_errmsg(r->store));
		return rc;
	}
	/* Samples keep their moments while the store keeps any (a store
	 * that cannot, or --keep-samples 0: counts only). */
	r->keep_samples = store_keep_samples(r->store);
	if (o->log_drains) {
		r->log_fd = open(o->log_drains, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		                 0644);
		if (r->log_fd < 0) {
			rc = -errno;
			record_fail(r, rc, "--log-drains: %s: %s", o->log_drains, strerror(-rc));
			return rc;
		}
	}

	return 0;
}

/* Drains every DRAIN_SECONDS, and serves the ring buffer and the
 * unwinder's built tables as they come, until SIGINT/SIGTERM, the end of
 * -d, COMMAND's exit or an error.  *start and *cpu_start: when it began. */
static void event_loop(struct recorder *r, const struct options *o, double *start,
                       double *cpu_start)
{
	int rc;

	double next = (*start = now_mono()) + DRAIN_SECONDS;
	double deadline = o->duration > 0 ? *start + o->duration : INFINITY;

	*cpu_start = record_cpu_seconds();
	/* One wait for both the ring buffer and COMMAND's exit (a pidfd is
	 * readable once the process has exited). */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		rc = -errno;
		record_fail(r, rc, "epoll: %s", strerror(-rc));
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = WAKE_RING};
	if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &ev) < 0) {
		rc = -errno;
		record_fail(r, rc, "epoll: %s", strerror(-rc));
	}
	ev.data.u32 = WAKE_TABLES;
	if (ep >= 0 && r->unwinder &&
	    epoll_ctl(ep, EPOLL_CTL_ADD, unwinder_fd(r->unwinder), &ev) < 0) {
		rc = -errno;
		record_fail(r, rc, "epoll: %s", strerror(-rc));
	}
	int pidfd = r->child ? (int)syscall(SYS_pidfd_open, r->child, 0) : -1;
	ev.data.u32 = WAKE_CHILD;
	if (pidfd >= 0 && (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev) < 0)) {
		close(pidfd); /* COMMAND's exit is then looked for by polling */
		pidfd = -1;
	}
	while (!stop_requested && !r->err) {
		double t = now_mono();
		double until = next < deadline ? next : deadline;
		double duty = record_duty_tick(r);
		if (duty < until)
			until = duty;
		int ms = until > t ? (int)ceil((until - t) * 1000) : 0;
		if (r->child && pidfd < 0 && ms > 100)
			ms = 100; /* no pidfd: look for COMMAND's exit 10 times a second */
		int due = r->unwinder ? unwinder_refresh_due_ms(r->unwinder) : -1;
		if (due >= 0 && due < ms)
			ms = due; /* a process's maps to read again */
		struct epoll_event got[3];
		int ngot = epoll_wait(ep, got, 3, ms);
		if (ngot < 0 && errno != EINTR) {
			rc = -errno;
			record_fail(r, rc, "epoll_wait: %s", strerror(-rc));
			break;
		}
		bool tables = false; /* a table built: its processes' lists to write */
		for (int i = 0; i < ngot; i++)
			tables |= got[i].data.u32 == WAKE_TABLES;
		rc = ring_buffer__consume(r->rb);
		if (rc < 0 && rc != -EINTR) {
			record_fail(r, rc, "ring buffer: %s", strerror(-rc));
			break;
		}
		if (r->unwinder && (unwinder_refresh(r->unwinder, r->sym) < 0 ||
		                    (tables && unwinder_service(r->unwinder, r->sym) < 0))) {
			record_fail(r, -ENOMEM, "out of memory");
			break;
		}
		record_reap_child(r);
		if (r->child_exited)
			break;
		t = now_mono();
		if (t >= deadline)
			break;
		if (t >= next) {
			if (record_drain(r, false) >= 0)
				record_names_step(r, r->drain_stacks);
			next += DRAIN_SECONDS;
			if (next < t)
				next = t + DRAIN_SECONDS;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (ep >= 0)
		close(ep);
}

/* Stops sampling, takes in the last process events, stores both sets,
 * and reports. */
static void stop_and_report(struct recorder *r, double start, double cpu_start)
{
	/* Stop sampling, take in the last process events, store both sets. */
	record_close_cpu_events(r);
	record_duty_stop(r);
	for (int i = 0; i < r->nev_links; i++)
		bpf_link__destroy(r->ev_links[i]);
	if (r->nspan_links)
		*(volatile __u32 *)&r->skel->bss->spans_stopped = 1;
	for (int i = 0; i < r->nspan_links; i++)
		bpf_link__destroy(r->span_links[i]);
	r->nev_links = 0;
	ring_buffer__consume(r->rb);
	/* The probes are gone: the spans still open end now, unended. */
	if (r->nspan_links && !r->err) {
		int rc = record_spans_close(r);
		if (rc < 0)
			record_fail(r, rc, "--span: closing the open spans: %s", strerror(-rc));
	}
	r->nspan_links = 0;
	if (!r->err)
		record_drain(r, true);
	if (!r->err)
		record_names_finish(r);
	record_report(r, now_mono() - start, record_cpu_seconds() - cpu_start);
	record_push_stop(r->pusher);
	r->pusher = NULL;
}

static int run(struct recorder *r, const struct options *o)
{
	struct ldso_probe ldso;
	bool have_ldso = false;
	double start, cpu_start;
	int go_fd = -1, rc;

	if ((rc = alloc_state(r, o)) < 0 || (rc = open_store(r, o)) < 0 ||
	    (rc = record_open_bpf(r, o, &ldso, &have_ldso)) < 0 ||
	    (rc = record_wire_maps(r, o)) < 0 ||
	    (rc = record_attach_process_events(r, o, &ldso, have_ldso)) < 0 ||
	    (rc = record_attach_spans(r, o)) < 0 || (rc = record_start_target(r, o, &go_fd)) < 0 ||
	    (rc = record_start_sampling(r, o, go_fd)) < 0)
		return rc;
	event_loop(r, o, &start, &cpu_start);
	stop_and_report(r, start, cpu_start);
	return r->err;
}

static void cleanup(struct recorder *r)
{
	if (r->log_fd >= 0)
		close(r->log_fd);
	if (r->stats_fd >= 0)
		close(r->stats_fd);
	record_close_cpu_events(r);
	/* Before the maps it writes to are closed. */
	unwinder_free(r->unwinder);
	for (int i = 0; i < r->nev_links; i++)
		bpf_link__destroy(r->ev_links[i]);
	for (int i = 0; i < r->nspan_links; i++)
		bpf_link__destroy(r->span_links[i]);
	bpf_link__destroy(r->fork_link);
	bpf_link__destroy(r->exec_link);
	bpf_link__destroy(r->exit_link);
	bpf_link__destroy(r->exec_begin_link);
	bpf_link__destroy(r->ldso_link);
	ring_buffer__free(r->rb);
	ring_buffer__free(r->srb[0]);
	ring_buffer__free(r->srb[1]);
	profile_bpf__destroy(r->skel);
	record_late_free(r->late);
	record_spans_free(r);
	record_labels_free(r->labels);
	record_names_free(r->names);
	record_unnamed_free(r);
	symbolize_free(r->sym);
	record_push_stop(r->pusher);
	store_close(r->store);
	free(r->links);
	free(r->pfds);
	free(r->ents);
	free(r->smp);
	free(r->mscratch);
	free(r->hashes.v);
	free(r->pyhashes.v);
	free(r->khashes.v);
	free(r->pystack);
	free(r->pyslots);
	free(r->dead);
	free(r->ustacks.ref);
	free(r->ustacks.pcs);
	free(r->kstacks.ref);
	free(r->kstacks.pcs);
	free(r->pystacks.ref);
	free(r->pystacks.pcs);
	free(r->pybatch_vals);
	free(r->ubatch_keys);
	free(r->ubatch_vals);
	free(r->bkeys);
	free(r->bvals);
	free(r->frames);
}

/* What the options allocated: --span (the spec's fields share one copy), --debug-dir. */
static void free_options(struct options *o)
{
	for (size_t i = 0; i < o->nspans; i++)
		free(o->spans[i].provider);
	free(o->spans);
	free(o->debug_dirs);
}

int record_main(int argc, char **argv)
{
	struct options o = {0};
	struct recorder r = {.opt = &o, .log_fd = -1, .stats_fd = -1, .span_names_fd = -1};
	char missing[64];
	int rc;

	rc = record_parse_options(argc, argv, &o);
	if (rc >= 0) {
		free_options(&o);
		return rc;
	}

	missing_caps(missing, sizeof(missing));
	if (missing[0]) {
		/* the file to give the capabilities to, as the command to run */
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
		fprintf(stderr,
		        PROG ": record needs CAP_BPF and CAP_PERFMON; this process lacks %s: "
		             "run as root, or setcap cap_bpf,cap_perfmon+ep %s\n",
		        missing, n > 0 ? self : PROG);
		free_options(&o);
		return 1;
	}
	if (o.command) {
		char prog[PATH_MAX];
		int fr = record_find_program(o.command[0], prog, sizeof(prog));
		if (fr < 0) {
			fprintf(stderr,
			        PROG ": record: cannot run %s: %s; give its path, or a program on "
			             "PATH\n",
			        o.command[0],
			        fr == -ENOENT && !strchr(o.command[0], '/') ? "not found on PATH"
			                                                    : strerror(-fr));
			free_options(&o);
			return 1;
		}
	}

	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max; /* one fd per ELF file */
		setrlimit(RLIMIT_NOFILE, &nofile);
	}

	/* A recorder runs for weeks, so glibc's heap must follow what is
	 * live.  By default its mmap threshold rises to the size of each
	 * big block freed (up to 32 MiB); after that a file's symbol or
	 * unwind table is carved out of the heap among small long-lived
	 * blocks, and when it is freed most of its pages stay.  A fixed
	 * threshold keeps every block of 128 KiB or more in a mapping of
	 * its own, returned whole when freed. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	run(&r, &o);
	if (r.child && !r.child_exited) {
		/* Stopped before the command ended: leave it running, as
		 * perf record does, but do not leave a zombie behind us. */
		record_reap_child(&r);
	}
	cleanup(&r);
	free_options(&o);
	if (r.err) {
		fprintf(stderr, PROG ": record: %s\n", r.errmsg);
		return 1;
	}
	return 0;
}

#endif
