/*
 * record.c — `flamefs-collect record`, the live collector.
 *
 * Loads profile.bpf.c through its generated skeleton (open, set rodata
 * and map sizes, load, attach), opens one cpu-clock perf event per CPU in
 * frequency mode and attaches the sampler to each, then loops: ring-buffer
 * events (fork, exec) make the symbolizer snapshot new processes while
 * they exist, and every second a drain flips the BPF side to its other
 * map set, reads the idle set, symbolizes each (pid, user stack, kernel
 * stack) count and commits it to the store as one atomic batch.  On
 * SIGINT, SIGTERM, the end of -d or the exit of the command, sampling
 * stops first and a last drain takes both map sets, so every sample the
 * BPF side saw is either stored or counted as dropped.  This file is CLI
 * code: it alone prints, always as "flamefs-collect: ...".
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

#define PROG "flamefs-collect"

void record_usage(FILE *f)
{
	fputs("Usage: " PROG " record [--store DIR] [-p PID[,PID...] | -a | -- COMMAND [ARGS...]]\n"
	      "           [-F HZ] [-d SECONDS] [--user-only | --kernel-only]\n"
	      "           [--host NAME] [--binary NAME] [--version LABEL] [--lines] [--inline]\n"
	      "           [--retention DURATION] [--keep-samples DURATION] [--log-drains FILE]\n"
	      "           [--samples-memory SIZE]\n"
	      "           [--push DATABASE [--push-every DURATION]]\n"
	      "           [--unwind auto|dwarf|fp] [--unwind-memory SIZE] [--python=off]\n"
	      "           [--jit-wait DURATION] [--jit-memory SIZE]\n"
	      "           [--module-grace DURATION]\n"
	      "           [-e EVENT[:STACKS][:N][,EVENT...]] [--offcpu-min DURATION]\n"
	      "\n"
	      "Samples the CPU stacks of running processes with eBPF (one cpu-clock\n"
	      "event per CPU), symbolizes them and stores them: one atomic batch per\n"
	      "second, so a mounted view shows them as they come.  Stops at the end of\n"
	      "-d, when COMMAND exits, or on Ctrl-C / SIGTERM, after a last drain.\n"
	      "Needs CAP_BPF and CAP_PERFMON, or root.\n"
	      "\n"
	      "  -p, --pid PID[,PID...]  follow these processes and their children\n"
	      "  -a, --all-cpus          every process on the system (idle excluded)\n"
	      "  -- COMMAND [ARGS...]    start COMMAND and follow it, its threads and\n"
	      "                          its children\n"
	      "  -F, --freq HZ           samples per second per CPU (default 99)\n"
	      "  -d, --duration SECONDS  stop after this long (default: until stopped)\n"
	      "      --user-only         keep only user-space frames\n"
	      "      --kernel-only       keep only kernel frames\n"
	      "      --host NAME         the host the series belong to (default: this\n"
	      "                          machine's hostname)\n"
	      "      --binary NAME       store every sample under this binary name\n"
	      "                          (default: basename of the executable)\n"
	      "      --version LABEL     version label (default: the first 12 hex\n"
	      "                          digits of the executable's GNU build id,\n"
	      "                          \"default\" when it has none)\n"
	      "      --lines             also store each frame's source file:line\n"
	      "                          (reads DWARF: more CPU and memory)\n"
	      "      --inline            give each function inlined at a sampled\n"
	      "                          address a frame of its own, NAME_[i]\n"
	      "                          (reads DWARF, like --lines)\n"
	      "      --retention DURATION  every minute, delete the store's time\n"
	      "                          buckets older than DURATION (30d, 12h, ...;\n"
	      "                          see prune --help): wall-clock series only\n"
	      "      --keep-samples DURATION  keep each sample whole (its time to the\n"
	      "                          microsecond, pid, tid, weight) for this long,\n"
	      "                          counted back from the newest sample, and\n"
	      "                          only its count after that (30m, 6h, 1d; 0:\n"
	      "                          counts only).  Kept in the store; default 2h\n"
	      "                          (or what the store was given last)\n"
	      "      --samples-memory SIZE  kernel memory for each of the two rings that\n"
	      "                          carry samples with their moments (default: two\n"
	      "                          seconds' worth, 64K to 32M; rounded up to a\n"
	      "                          power of two); a sample that finds its ring\n"
	      "                          full is counted without its moment\n"
	      "      --push DATABASE     also copy the store into this central database\n"
	      "                          (postgresql://...) in the background, as\n"
	      "                          `push` does: at start, every --push-every and\n"
	      "                          after the last drain.  While it cannot be\n"
	      "                          reached the data waits in the local store\n"
	      "      --push-every DURATION  between pushes (default 60s)\n"
	      "  -e, --event LIST        what to record, each its own series\n"
	      "                          (<version>@<event>/ in the view):\n"
	      "                            cpu         CPU time (default)\n"
	      "                            offcpu      time blocked, from switch-out to\n"
	      "                                        switch-in (offcpu:all: preempted\n"
	      "                                        time too); series off-cpu\n"
	      "                            rss         resident memory gained (bytes)\n"
	      "                            block       block I/O issued (bytes)\n"
	      "                            block-time  block I/O, issue to completion (ns)\n"
	      "                            net         TCP and UDP bytes sent and received\n"
	      "                            vfs         vfs-read and vfs-write: bytes read\n"
	      "                                        and written by system calls (read,\n"
	      "                                        write, their p/v kin, sendfile,\n"
	      "                                        splice, copy_file_range), the file\n"
	      "                                        system as the last frame [fs:NAME]\n"
	      "                          EVENT:STACKS:N: STACKS u, k or uk (default; u\n"
	      "                          for vfs); N: a stack for every Nth event,\n"
	      "                          weights times N; for vfs, a stack per N bytes\n"
	      "                          a thread moves (default 1M; K, M, G), weighing\n"
	      "                          the bytes since its last stack\n"
	      "      --offcpu-min DURATION  drop shorter blocks (default 1us; units\n"
	      "                          ns, us, ms, s; a bare number is us)\n"
	      "      --unwind MODE       how user stacks are walked: auto (default)\n"
	      "                          by each file's DWARF CFI (.eh_frame or\n"
	      "                          .debug_frame), by frame pointers where a\n"
	      "                          file has none; dwarf: CFI only; fp: frame\n"
	      "                          pointers only, as before\n"
	      "      --unwind-memory SIZE  kernel memory for CFI tables (default\n"
	      "                          16M, 8 bytes a row: libc needs 0.2M);\n"
	      "                          files past it are walked by frame pointers\n"
	      "      --jit-wait DURATION  hold a stack with JIT frames that no\n"
	      "                          /tmp/perf-PID.map entry names yet until one\n"
	      "                          does, its process exits (a JVM with\n"
	      "                          DumpPerfMapAtExit writes it then) or this\n"
	      "                          long (default 60s; 0: never hold)\n"
	      "      --jit-memory SIZE   memory for such held stacks (default 16M);\n"
	      "                          past it they are stored at once, unnamed\n"
	      "      --module-grace DURATION  free an ELF file (its symbols and\n"
	      "                          unwind table) no process has mapped for\n"
	      "                          this long (default 5m; files are swept\n"
	      "                          every minute, or every DURATION if shorter)\n"
	      "      --python=on|off     name Python functions (CPython 3.11, the\n"
	      "                          interpreter or libpython embedded), walked\n"
	      "                          in the BPF program; on by default with\n"
	      "                          CFI walks (not with --unwind fp)\n"
	      "      --log-drains FILE   write \"drain N committing samples S weight W\"\n"
	      "                          before each drain's commit and \"... committed\n"
	      "                          ...\" after it (FILE is truncated first)\n"
	      "  -v, --verbose           the whole summary at the end (every counter of\n"
	      "                          the sampler, symbolizer, unwinder, JIT and\n"
	      "                          Python namers) and notes on what is not used;\n"
	      "                          twice (-vv): libbpf's messages and the BPF\n"
	      "                          program's verifier and run statistics too\n"
	      "\n"
	      "Series events and units: cpu-clock (each sample weighs 1e9/HZ ns),\n"
	      "off-cpu and block-time (nanoseconds), rss, block, net, vfs-read and\n"
	      "vfs-write (bytes).\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " record --store ~/prof -- ./server --port 8080\n"
	      "  " PROG " record --store ~/prof -p $(pidof nginx | tr ' ' ,) -d 30\n"
	      "  " PROG " record --store ~/prof -a -F 49 --user-only\n"
	      "  " PROG " record --store ~/prof --host web-3 -a -d 60\n"
	      "  " PROG " record --store ~/prof --keep-samples 6h -a -d 90 && \\\n"
	      "      " PROG " samples --store ~/prof --from 2026-11-24T14:02:03.250Z\n"
	      "  " PROG " record --store ~/prof --unwind fp -- python3 app.py\n"
	      "  " PROG " record --store ~/prof -e cpu,offcpu,rss,block,net -a -d 30\n"
	      "  " PROG " record --store ~/prof -e offcpu:all,rss:u:29 -p $(pidof myd)\n"
	      "  " PROG " record --store /var/lib/flamefs -a --retention 7d \\\n"
	      "      --push postgresql://flamefs@db.example/flamefs --push-every 60s\n",
	      f);
}

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

static char libbpf_last[512];
static bool libbpf_verbose;

/* libbpf's messages: shown with -vv, else the last warning is kept for
 * the error message. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_verbose) {
		fputs(PROG ": libbpf: ", stderr);
		return vfprintf(stderr, fmt, ap);
	}
	if (level != LIBBPF_DEBUG) {
		vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
		libbpf_last[strcspn(libbpf_last, "\n")] = '\0';
	}
	return 0;
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

/* ---- sizing ------------------------------------------------------------- */

static uint32_t pow2_at_least(uint64_t n)
{
	uint32_t p = 1;
	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

/* Distinct ELF files with CFI tables at most. */
#define UNWIND_TABLES 4096

/* Processes now running (for -a's process-list map). */
static unsigned count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			n++;
	closedir(d);
	return n;
}

#define SAMPLE_RING_MIN      (64u << 10)
#define SAMPLE_RING_MAX      (32u << 20)
#define SAMPLE_RING_OTHER_HZ 50000u

/* Map sizes from frequency x drain interval x CPUs: a counts slot per
 * possible sample (each may be unique) with half again as headroom; the
 * stack maps (hash maps keyed by a stack's content) below. */
static int size_maps(struct recorder *r, int ncpu)
{
	uint64_t per_drain = (uint64_t)r->opt->freq * DRAIN_SECONDS * (uint64_t)ncpu;
	uint64_t counts = per_drain + per_drain / 2;
	struct profile_bpf *k = r->skel;
	int rc = 0;

	/* Events other than cpu come as fast as the workload makes them:
	 * room for many more distinct stacks per drain. */
	bool other = false;
	for (int i = 1; i < PROFILE_NEVENTS; i++)
		other |= r->opt->ev_flags[i] != 0;
	if (counts < (other ? 32768u : 1024u))
		counts = other ? 32768u : 1024u;
	if (counts > (1u << 22))
		counts = 1u << 22;
	rc = bpf_map__set_max_entries(k->maps.counts0, (uint32_t)counts);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.counts1, (uint32_t)counts);
	if (rc < 0)
		return rc;

	/* The samples rings (moments on): each holds two drains' worth of
	 * records at -F on every CPU, and SAMPLE_RING_OTHER_HZ for each other
	 * event, within [SAMPLE_RING_MIN, SAMPLE_RING_MAX] (a power of two of
	 * pages).  Past that, samples are counted without their moment. */
	uint64_t ring = SAMPLE_RING_MIN;
	if (r->keep_samples > 0 && r->opt->samples_memory) {
		/* --samples-memory: a power of two of pages, at least one */
		uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
		for (ring = page; ring < r->opt->samples_memory; ring *= 2)
			;
	} else if (r->keep_samples > 0) {
		uint64_t per_s =
		        r->opt->ev_flags[PROFILE_EV_CPU] ? (uint64_t)r->opt->freq * ncpu : 0;
		for (int i = 1; i < PROFILE_NEVENTS; i++)
			per_s += r->opt->ev_flags[i] ? SAMPLE_RING_OTHER_HZ : 0;
		uint64_t want = 2 * DRAIN_SECONDS * per_s * (sizeof(struct profile_sample) + 8);
		while (ring < want && ring < SAMPLE_RING_MAX)
			ring *= 2;
	}
	r->ring_bytes = ring;
	rc = bpf_map__set_max_entries(k->maps.samples0, (uint32_t)ring);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.samples1, (uint32_t)ring);
	if (rc < 0)
		return rc;

	/* User stacks (walked or by frame pointers) and kernel stacks: hash
	 * maps keyed by content (profile.h), a slot per two possible samples
	 * (at most half full when every sample's stack differs), preallocated
	 * at about 1 KiB a slot.  The CFI walker's maps: a process list per
	 * process (LRU: the least recently sampled goes first); the rows
	 * --unwind-memory allows.  With --unwind fp they are left at one
	 * slot. */
	bool cfi = r->opt->unwind != PROFILE_UNWIND_FP;
	uint32_t ustacks = pow2_at_least(per_drain * 2);
	if (ustacks < (other ? 16384u : 1024u))
		ustacks = other ? 16384u : 1024u;
	if (ustacks > (1u << 16))
		ustacks = 1u << 16;
	uint32_t procs = 1, tables = 1, rows = 1;
	if (cfi) {
		procs = r->opt->all ? pow2_at_least(2 * (uint64_t)count_processes()) : 1024;
		if (procs < 1024)
			procs = 1024;
		if (procs > 32768)
			procs = 32768;
		tables = UNWIND_TABLES;
		rows = (uint32_t)(r->opt->unwind_memory / sizeof(struct unwind_row));
	}
	/* Stacks with Python frames are 5 KiB each: as many as ustacks up to
	 * 4096 (20 MiB a set). */
	uint32_t pystacks = python_walks(r->opt) ? (ustacks < 4096u ? ustacks : 4096u) : 1;
	rc = bpf_map__set_max_entries(k->maps.kstacks0, ustacks);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.kstacks1, ustacks);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.ustacks0, ustacks);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.ustacks1, ustacks);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.pystacks0, pystacks);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.pystacks1, pystacks);
	if (rc == 0 && !python_walks(r->opt))
		rc = bpf_map__set_max_entries(k->maps.py_seen, 1);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.py_procs, python_walks(r->opt) ? procs : 1);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.unwind_procs, procs);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.unwind_tables, tables);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.unwind_rows, rows);
	return rc;
}

/* ---- setup -------------------------------------------------------------- */

static int open_cpu_events(struct recorder *r)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		record_fail(r, ncpu, "cannot count CPUs");
		return ncpu < 0 ? ncpu : -EINVAL;
	}
	r->links = calloc((size_t)ncpu, sizeof(*r->links));
	r->pfds = calloc((size_t)ncpu, sizeof(*r->pfds));
	if (!r->links || !r->pfds) {
		record_fail(r, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr attr = {
		        .type = PERF_TYPE_SOFTWARE,
		        .size = sizeof(attr),
		        .config = PERF_COUNT_SW_CPU_CLOCK,
		        .sample_freq = r->opt->freq,
		        .freq = 1,
		};
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1,
		                      PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* CPU offline */
			int e = -errno;
			record_fail(r, e, "perf_event_open (cpu-clock, CPU %d): %s", cpu,
			            strerror(errno));
			return e;
		}
		struct bpf_link *l = bpf_program__attach_perf_event(r->skel->progs.do_sample, fd);
		if (!l) {
			int e = -errno;
			close(fd);
			record_fail(r, e, "cannot attach the sampler to CPU %d: %s", cpu,
			            strerror(-e));
			return e;
		}
		r->pfds[r->nlinks] = fd;
		r->links[r->nlinks++] = l;
	}
	if (!r->nlinks) {
		record_fail(r, -ENODEV, "no CPU could be sampled");
		return -ENODEV;
	}
	return 0;
}

static void close_cpu_events(struct recorder *r)
{
	for (int i = 0; i < r->nlinks; i++) {
		bpf_link__destroy(r->links[i]);
		close(r->pfds[i]);
	}
	r->nlinks = 0;
}

static int follow_pid(struct recorder *r, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;
	if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.pids), &key, &one, BPF_ANY) < 0)
		return -errno;
	return 0;
}

/* Parses "PID[,PID...]" into the pid set and snapshots each process. */
static int follow_pid_list(struct recorder *r, const char *list)
{
	const char *p = list;
	while (*p) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT32_MAX || (*end && *end != ',')) {
			record_fail(r, -EINVAL, "-p: expected PID[,PID...], got \"%s\"", list);
			return -EINVAL;
		}
		int rc = symbolize_snapshot(r->sym, (pid_t)v, 0);
		if (rc < 0) {
			record_fail(r, rc, "-p %ld: %s", v,
			            rc == -ESRCH || rc == -ENOENT ? "no such process"
			                                          : strerror(-rc));
			return rc;
		}
		rc = follow_pid(r, (pid_t)v);
		if (rc < 0) {
			record_fail(r, rc, "-p %ld: cannot follow: %s", v, strerror(-rc));
			return rc;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* Forks COMMAND held at a pipe until the pid is followed. */
static int start_command(struct recorder *r, char **cmd, int *go_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		char c;
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(127); /* the recorder gave up */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(cmd[0], cmd);
		fprintf(stderr, PROG ": %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	r->child = pid;
	*go_fd = p[1];
	return 0;
}

static void reap_child(struct recorder *r)
{
	int st;
	if (r->child && !r->child_exited && waitpid(r->child, &st, WNOHANG) == r->child) {
		r->child_exited = true;
		r->child_status = st;
	}
}

/* Snapshots every process already running (for -a).  Processes that
 * vanish meanwhile, or cannot be read, are skipped.  Returns 0 or
 * -ENOMEM. */
static int snapshot_all(struct recorder *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return 0; /* no /proc: resolved at the drains, if at all */
	while ((de = readdir(d))) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);
		if (end == de->d_name || *end || v == 0 || v > INT32_MAX)
			continue;
		if (symbolize_known(r->sym, (pid_t)v))
			continue; /* a fork or exec event came first */
		if (symbolize_snapshot(r->sym, (pid_t)v, 0) == -ENOMEM) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	return 0;
}

/* ---- the command -------------------------------------------------------- */

/* The offsets that take an exec's linux_binprm to its program file's
 * device and inode (on_exec): without them every exec is read at once,
 * as before there were known programs. */
static void exe_offsets(struct recorder *r)
{
	volatile struct profile_bpf__rodata *ro = r->skel->rodata;
	struct {
		const char *strct, *member;
		volatile const uint32_t *dst;
	} need[] = {
	        {"linux_binprm", "file", &ro->bprm_file}, {"file", "f_inode", &ro->file_inode},
	        {"inode", "i_ino", &ro->inode_ino},       {"inode", "i_sb", &ro->inode_sb},
	        {"super_block", "s_dev", &ro->sb_dev},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		uint32_t off;
		if (kbtf_member_offset(KBTF_VMLINUX, need[i].strct, need[i].member, &off, err,
		                       sizeof(err)) < 0) {
			if (r->opt->verbose)
				fprintf(stderr, PROG ": every exec is read at once: %s\n", err);
			return;
		}
		*(volatile uint32_t *)need[i].dst = off;
	}
	ro->exe_known = true;
	/* Where the new program's load biases are, for its first walker
	 * list (without them, the list waits for user space). */
	uint32_t mm, auxv;
	if (r->opt->unwind != PROFILE_UNWIND_FP &&
	    kbtf_member_offset(KBTF_VMLINUX, "task_struct", "mm", &mm, err, sizeof(err)) == 0 &&
	    kbtf_member_offset(KBTF_VMLINUX, "mm_struct", "saved_auxv", &auxv, err, sizeof(err)) ==
	            0) {
		ro->task_mm = mm;
		ro->mm_auxv = auxv;
	}
}

/* The offsets that take a thread to its uprobe's probed and out-of-line
 * addresses (out_of_line() in profile-walk.bpf.h): without them a sample
 * in a uprobe's step keeps a pc in no mapping. */
static void uprobe_offsets(struct recorder *r)
{
	volatile struct profile_bpf__rodata *ro = r->skel->rodata;
	struct {
		const char *strct, *member;
		uint32_t off;
	} need[] = {{"task_struct", "utask", 0},
	            {"uprobe_task", "vaddr", 0},
	            {"uprobe_task", "xol_vaddr", 0}};
	char err[256];

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (kbtf_member_offset(KBTF_VMLINUX, need[i].strct, need[i].member, &need[i].off,
		                       err, sizeof(err)) < 0) {
			if (r->opt->verbose)
				fprintf(stderr,
				        PROG ": samples in a uprobe's step keep their pc: %s\n",
				        err);
			return;
		}
	ro->task_utask = need[0].off;
	ro->utask_vaddr = need[1].off;
	ro->utask_xol_vaddr = need[2].off;
}

/* What woke the recording loop (epoll data). */
enum { WAKE_RING, WAKE_TABLES, WAKE_CHILD };

/* The symbolizer's hooks: the unwinder's, and the record side's part of
 * forgetting a file: its program template (exe_templates, keyed by the
 * file) goes before the unwinder frees the tables the template names. */
static void hook_module(void *ctx, const void *module, int fd, const char *path,
                        const uint8_t *build_id, size_t build_id_len)
{
	struct recorder *r = ctx;
	r->uhooks.module(r->uhooks.ctx, module, fd, path, build_id, build_id_len);
}

static void hook_process(void *ctx, pid_t pid, const struct symbolize_map *maps, size_t n,
                         unsigned flags)
{
	struct recorder *r = ctx;
	r->uhooks.process(r->uhooks.ctx, pid, maps, n, flags);
}

static void hook_forget(void *ctx, const void *module, unsigned long long dev,
                        unsigned long long ino)
{
	struct recorder *r = ctx;
	struct profile_file f = {.dev = dev, .ino = ino};

	if (r->templates_fd >= 0 && (dev || ino) && bpf_map_delete_elem(r->templates_fd, &f) == 0)
		r->templates_deleted++;
	if (r->uhooks.forget)
		r->uhooks.forget(r->uhooks.ctx, module, dev, ino);
}

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

/* The BPF program: opened, its read-only settings and map sizes set
 * (the events, the kernel's offsets, the unwinder's mode, the loader's
 * hook in *ldso if there is one: *have_ldso), loaded. */
static int open_bpf(struct recorder *r, const struct options *o, struct ldso_probe *ldso,
                    bool *have_ldso)
{
	int rc;

	libbpf_verbose = o->verbose >= 2;
	libbpf_set_print(libbpf_print);
	r->skel = profile_bpf__open();
	if (!r->skel) {
		rc = -errno;
		record_fail(r, rc, "cannot open the BPF program: %s", strerror(-rc));
		return rc;
	}
	r->skel->rodata->filter_pids = !o->all;
	rc = record_setup_events(r, o);
	if (rc < 0)
		return rc;
	uint32_t tgid_offset;
	char berr[256];
	rc = kbtf_member_offset(KBTF_VMLINUX, "task_struct", "tgid", &tgid_offset, berr,
	                        sizeof(berr));
	if (rc < 0) {
		record_fail(r, rc, "cannot follow forks without the kernel's BTF: %s", berr);
		return rc;
	}
	r->skel->rodata->tgid_offset = tgid_offset;
	exe_offsets(r);
	uprobe_offsets(r);
	r->skel->rodata->unwind_mode = o->unwind;
	r->skel->rodata->python_on = python_walks(o);
	r->skel->rodata->moments_on = r->keep_samples > 0;
	char lerr[PATH_MAX + 128];
	*have_ldso = ldso_find(LDSO_INTERP, ldso, lerr, sizeof(lerr)) == 0;
	if (*have_ldso)
		r->skel->rodata->ldso_rdebug_delta = ldso->rdebug_delta;
	else if (o->verbose)
		fprintf(stderr, PROG ": the loader's hook is not used: %s\n", lerr);
	rc = size_maps(r, libbpf_num_possible_cpus());
	if (rc < 0) {
		record_fail(r, rc, "cannot size the BPF maps: %s", strerror(-rc));
		return rc;
	}
	rc = profile_bpf__load(r->skel);
	if (rc < 0) {
		record_fail(r, rc, "cannot load the BPF program: %s%s%s", strerror(-rc),
		            libbpf_last[0] ? " (libbpf: " : "", libbpf_last[0] ? libbpf_last : "");
		if (libbpf_last[0])
			strncat(r->errmsg, ")", sizeof(r->errmsg) - strlen(r->errmsg) - 1);
		return rc;
	}
	if (o->verbose >= 2) {
		/* What the verifier walked, the measure of the kernel's limits
		 * (one million instructions per program). */
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		/* And, while the recording runs, what its runs cost (the
		 * kernel counts them while this fd is open). */
		r->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(r->skel->progs.do_sample), &info,
		                           &len) == 0)
			fprintf(stderr, PROG ": do_sample: %u instructions verified, %u loaded\n",
			        info.verified_insns, info.xlated_prog_len / 8);
	}
	return 0;
}

/* The maps the drain reads, and the unwinder over its maps. */
static int wire_maps(struct recorder *r, const struct options *o)
{
	int rc;

	r->counts_fd[0] = bpf_map__fd(r->skel->maps.counts0);
	r->counts_fd[1] = bpf_map__fd(r->skel->maps.counts1);
	r->kstacks_fd[0] = bpf_map__fd(r->skel->maps.kstacks0);
	r->kstacks_fd[1] = bpf_map__fd(r->skel->maps.kstacks1);
	r->ustacks_fd[0] = bpf_map__fd(r->skel->maps.ustacks0);
	r->ustacks_fd[1] = bpf_map__fd(r->skel->maps.ustacks1);
	r->pystacks_fd[0] = bpf_map__fd(r->skel->maps.pystacks0);
	r->pystacks_fd[1] = bpf_map__fd(r->skel->maps.pystacks1);
	if (o->unwind != PROFILE_UNWIND_FP) {
		struct unwinder_maps um = {
		        .procs = bpf_map__fd(r->skel->maps.unwind_procs),
		        .tables = bpf_map__fd(r->skel->maps.unwind_tables),
		        .rows = bpf_map__fd(r->skel->maps.unwind_rows),
		        .max_tables = bpf_map__max_entries(r->skel->maps.unwind_tables),
		        .max_rows = bpf_map__max_entries(r->skel->maps.unwind_rows),
		        .python = python_walks(o) ? bpf_map__fd(r->skel->maps.py_procs) : -1,
		};
		rc = unwinder_new(&um, &r->unwinder);
		if (rc < 0) {
			record_fail(r, rc, "cannot start the unwinder: %s", strerror(-rc));
			return rc;
		}
		r->uhooks = unwinder_hooks(r->unwinder);
	}
	struct symbolize_hooks h = {
	        .module = r->uhooks.module ? hook_module : NULL,
	        .process = r->uhooks.process ? hook_process : NULL,
	        .forget = hook_forget,
	        .ctx = r,
	};
	symbolize_set_hooks(r->sym, &h);

	return 0;
}

/* The event ring buffer and the process events: fork, exec, exit (all
 * three needed), the exec's beginning and the loader's hook (optional). */
static int attach_process_events(struct recorder *r, const struct options *o,
                                 const struct ldso_probe *ldso, bool have_ldso)
{
	int rc;

	r->rb = ring_buffer__new(bpf_map__fd(r->skel->maps.events), record_on_event, r, NULL);
	if (!r->rb) {
		rc = -errno;
		record_fail(r, rc, "cannot open the event ring buffer: %s", strerror(-rc));
		return rc;
	}
	for (int i = 0; i < 2 && r->keep_samples > 0; i++) {
		struct bpf_map *m = i ? r->skel->maps.samples1 : r->skel->maps.samples0;
		r->srb[i] = ring_buffer__new(bpf_map__fd(m), record_on_sample, r, NULL);
		if (!r->srb[i]) {
			rc = -errno;
			record_fail(r, rc, "cannot open the samples ring buffer: %s",
			            strerror(-rc));
			return rc;
		}
	}
	r->clock_off_ns = record_clock_offset();
	r->fork_link = bpf_program__attach(r->skel->progs.on_fork);
	r->exec_link = r->fork_link ? bpf_program__attach(r->skel->progs.on_exec) : NULL;
	r->exit_link = r->exec_link ? bpf_program__attach(r->skel->progs.on_exit) : NULL;
	/* Optional: without it an exec's kernel side is cut short, as it was. */
	if (r->exit_link && o->unwind != PROFILE_UNWIND_FP)
		r->exec_begin_link = bpf_program__attach(r->skel->progs.on_exec_begin);
	/* Optional: without it a process's first sample in each library is
	 * cut short while its maps are read again. */
	r->ldso_link = have_ldso ? bpf_program__attach_uprobe(r->skel->progs.on_ldso_state, false,
	                                                      -1, ldso->path, ldso->func_offset)
	                         : NULL;
	if (have_ldso && !r->ldso_link && o->verbose)
		fprintf(stderr, PROG ": cannot probe %s: %s\n", ldso->path, strerror(errno));
	struct stat lst;
	if (r->ldso_link && r->skel->rodata->exe_known && stat(ldso->path, &lst) == 0) {
		r->ldso_dev = ((unsigned long long)major(lst.st_dev) << 20) | minor(lst.st_dev);
		r->ldso_ino = (unsigned long long)lst.st_ino;
		r->templates_fd = bpf_map__fd(r->skel->maps.exe_templates);
	}
	if (!r->exit_link) {
		rc = -errno;
		record_fail(r, rc, "cannot attach the fork/exec/exit tracepoints: %s",
		            strerror(-rc));
		return rc;
	}

	return 0;
}

/* What to follow: -p's processes, or COMMAND, started held (*go_fd
 * releases it). */
static int start_target(struct recorder *r, const struct options *o, int *go_fd)
{
	int rc;

	if (o->pid_list) {
		rc = follow_pid_list(r, o->pid_list);
		if (rc < 0)
			return rc;
	} else if (o->command) {
		rc = start_command(r, o->command, go_fd);
		if (rc < 0) {
			record_fail(r, rc, "cannot start %s: %s", o->command[0], strerror(-rc));
			return rc;
		}
		rc = follow_pid(r, r->child);
		if (rc < 0) {
			record_fail(r, rc, "cannot follow %s: %s", o->command[0], strerror(-rc));
			close(*go_fd);
			return rc;
		}
	}

	return 0;
}

/* The events of -e and the CPU sampling, attached; then the running
 * processes read (-a) and COMMAND released.  Closes go_fd. */
static int start_sampling(struct recorder *r, const struct options *o, int go_fd)
{
	int rc;

	rc = record_attach_events(r);
	if (rc >= 0 && o->ev_flags[PROFILE_EV_CPU])
		rc = open_cpu_events(r);
	if (rc < 0) {
		if (go_fd >= 0)
			close(go_fd); /* the held child exits */
		return rc;
	}

	char evs[128] = "";
	for (int i = 0, n = 0; i < PROFILE_NEVENTS; i++)
		if (r->ev_attached[i])
			n += snprintf(evs + n, sizeof(evs) - (size_t)n, "%s%s", n ? "," : "",
			              record_events[i].arg);
	if (o->ev_flags[PROFILE_EV_CPU])
		fprintf(stderr, PROG ": recording at %u Hz on %d CPUs (%s); Ctrl-C stops\n",
		        o->freq, r->nlinks, evs);
	else
		fprintf(stderr, PROG ": recording %s; Ctrl-C stops\n", evs);
	if (o->all) {
		/* Sampling runs already: a process that exits before the
		 * first drain is still resolved from this snapshot. */
		rc = snapshot_all(r);
		if (rc < 0) {
			record_fail(r, rc, "out of memory");
			return rc;
		}
	}
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1) {
			rc = -errno;
			close(go_fd);
			record_fail(r, rc, "cannot start %s: %s", o->command[0], strerror(-rc));
			return rc;
		}
		close(go_fd);
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
		reap_child(r);
		if (r->child_exited)
			break;
		t = now_mono();
		if (t >= deadline)
			break;
		if (t >= next) {
			record_drain(r, false);
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
	close_cpu_events(r);
	for (int i = 0; i < r->nev_links; i++)
		bpf_link__destroy(r->ev_links[i]);
	r->nev_links = 0;
	ring_buffer__consume(r->rb);
	if (!r->err)
		record_drain(r, true);
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
	    (rc = open_bpf(r, o, &ldso, &have_ldso)) < 0 || (rc = wire_maps(r, o)) < 0 ||
	    (rc = attach_process_events(r, o, &ldso, have_ldso)) < 0 ||
	    (rc = start_target(r, o, &go_fd)) < 0 || (rc = start_sampling(r, o, go_fd)) < 0)
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
	close_cpu_events(r);
	/* Before the maps it writes to are closed. */
	unwinder_free(r->unwinder);
	for (int i = 0; i < r->nev_links; i++)
		bpf_link__destroy(r->ev_links[i]);
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

int record_main(int argc, char **argv)
{
	struct options o = {0};
	struct recorder r = {.opt = &o, .log_fd = -1, .stats_fd = -1};
	char missing[64];
	int rc;

	rc = record_parse_options(argc, argv, &o);
	if (rc >= 0)
		return rc;

	missing_caps(missing, sizeof(missing));
	if (missing[0]) {
		fprintf(stderr,
		        PROG ": record needs CAP_BPF and CAP_PERFMON; this process lacks %s: "
		             "run as root, or setcap cap_bpf,cap_perfmon+ep on " PROG "\n",
		        missing);
		return 1;
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
		reap_child(&r);
	}
	cleanup(&r);
	if (r.err) {
		fprintf(stderr, PROG ": record: %s\n", r.errmsg);
		return 1;
	}
	return 0;
}

#endif
