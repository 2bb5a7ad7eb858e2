/*
 * events.c — the events of `flamefs-collect record -e`: their
 * names, series and units, the parsing of EVENT[:STACKS][:N], and the
 * set-up of their BPF programs (the kernel offsets they read, which
 * programs load, attaching each, with no tracefs mounted, and leaving out
 * what cannot be attached, saying what is missing), and the vfs events'
 * duty cycle: with no N given, their system-call hook is attached only
 * part of each drain interval and the drain scales their weights by the
 * inverse of the share of time it was attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "kbtf-internal.h"
#include "record-internal.h"

/* The events of -e: their names on the command line, as series, and
 * their units; default N of EVENT:STACKS:N. */
const struct record_event record_events[PROFILE_NEVENTS] = {
        [PROFILE_EV_CPU] = {"cpu", "cpu-clock", "nanoseconds", 1},
        [PROFILE_EV_OFFCPU] = {"offcpu", "off-cpu", "nanoseconds", 1},
        [PROFILE_EV_RSS] = {"rss", "rss", "bytes", 16},
        [PROFILE_EV_BLOCK] = {"block", "block", "bytes", 1},
        [PROFILE_EV_BLOCK_TIME] = {"block-time", "block-time", "nanoseconds", 1},
        [PROFILE_EV_NET] = {"net", "net", "bytes", 1},
        [PROFILE_EV_VFS_READ] = {"vfs-read", "vfs-read", "bytes", RECORD_VFS_EVERY},
        [PROFILE_EV_VFS_WRITE] = {"vfs-write", "vfs-write", "bytes", RECORD_VFS_EVERY},
};

/* Whether ev is sampled by bytes (N of EVENT:N is bytes, not events). */
static bool by_bytes(int ev)
{
	return ev == PROFILE_EV_VFS_READ || ev == PROFILE_EV_VFS_WRITE;
}

/* Parses a byte count of vfs:N: 1 to 1G, with an optional K, M or G
 * (powers of 1024).  Returns 0 or -EINVAL. */
static int parse_bytes(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long n;

	if (s[0] < '1' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	if (shift)
		end++;
	if (*end || n > (1ull << 30) >> shift)
		return -EINVAL;
	*out = (uint32_t)(n << shift);
	return 0;
}

/* Parses one ":"-separated modifier of -e's EVENT spec into flags,
 * every, or o->offcpu_preempt.  Returns 0 or -EINVAL. */
static int parse_event_mod(const char *mod, int ev, struct options *o, uint32_t *flags,
                           uint32_t *every)
{
	char *end;
	unsigned long n;

	if (strcmp(mod, "u") == 0) {
		*flags = PROFILE_EV_ON | PROFILE_EV_USER;
	} else if (strcmp(mod, "k") == 0) {
		*flags = PROFILE_EV_ON | PROFILE_EV_KERNEL;
	} else if (strcmp(mod, "uk") == 0 || strcmp(mod, "ku") == 0) {
		*flags = PROFILE_EV_ON | PROFILE_EV_USER | PROFILE_EV_KERNEL;
	} else if (strcmp(mod, "all") == 0 && ev == PROFILE_EV_OFFCPU) {
		o->offcpu_preempt = true;
	} else if (by_bytes(ev)) {
		return parse_bytes(mod, every);
	} else {
		errno = 0;
		n = strtoul(mod, &end, 10);
		if (errno || end == mod || *end || mod[0] < '1' || mod[0] > '9' || n > 1000000)
			return -EINVAL;
		*every = (uint32_t)n;
	}
	return 0;
}

/* Parses -e's EVENT[:STACKS][:N][,EVENT...] into o->ev_flags and
 * o->ev_every; prints its own error.  Returns 0 or -errno. */
int record_parse_events(const char *list, struct options *o)
{
	char *copy = strdup(list), *save = NULL;
	int rc = 0;

	if (!copy) {
		fprintf(stderr, PROG ": out of memory\n");
		return -ENOMEM;
	}
	bool vfs_n_given = false;
	for (char *spec = strtok_r(copy, ",", &save); spec && rc == 0;
	     spec = strtok_r(NULL, ",", &save)) {
		char *mod = strchr(spec, ':');
		int ev = -1;

		if (mod)
			*mod++ = '\0';
		for (int i = 0; i < PROFILE_NEVENTS; i++)
			if (strcmp(spec, record_events[i].arg) == 0)
				ev = i;
		/* "vfs" is vfs-read and vfs-write, with one STACKS and N */
		bool both = strcmp(spec, "vfs") == 0;
		if (both)
			ev = PROFILE_EV_VFS_READ;
		if (ev < 0) {
			record_usage_error(
			        "-e: unknown event \"%s\"; expected cpu, offcpu, rss, block, "
			        "block-time, net, vfs, vfs-read or vfs-write",
			        spec);
			rc = -EINVAL;
			break;
		}
		if (o->ev_flags[ev] || (both && o->ev_flags[PROFILE_EV_VFS_WRITE])) {
			record_usage_error("-e: %s given twice", spec);
			rc = -EINVAL;
			break;
		}
		/* A vfs event's kernel stack is the system call's way out:
		 * user stacks only, unless asked. */
		uint32_t flags =
		        PROFILE_EV_ON | PROFILE_EV_USER | (by_bytes(ev) ? 0 : PROFILE_EV_KERNEL);
		uint32_t every = record_events[ev].every;
		while (mod && *mod && rc == 0) {
			char *next = strchr(mod, ':');
			if (next)
				*next++ = '\0';
			if (by_bytes(ev) && mod[0] >= '0' && mod[0] <= '9')
				vfs_n_given = true;
			if (parse_event_mod(mod, ev, o, &flags, &every) < 0) {
				record_usage_error(
				        "-e %s: expected STACKS (u, k or uk)%s or N (%s) after "
				        "':', got \"%s\"",
				        spec, ev == PROFILE_EV_OFFCPU ? ", all" : "",
				        by_bytes(ev) ? "bytes, 1 to 1G, with K, M or G"
				                     : "1 to 1000000",
				        mod);
				rc = -EINVAL;
			}
			mod = next;
		}
		if (o->user_only)
			flags &= ~PROFILE_EV_KERNEL;
		if (o->kernel_only)
			flags &= ~PROFILE_EV_USER;
		o->ev_flags[ev] = flags;
		o->ev_every[ev] = every;
		if (both) {
			o->ev_flags[PROFILE_EV_VFS_WRITE] = flags;
			o->ev_every[PROFILE_EV_VFS_WRITE] = every;
		}
	}
	/* An explicit N (vfs:1 too) keeps the hook on: exact totals. */
	o->vfs_duty = (o->ev_flags[PROFILE_EV_VFS_READ] || o->ev_flags[PROFILE_EV_VFS_WRITE]) &&
	              !vfs_n_given;
	if (rc == 0 && !copy[0]) {
		record_usage_error("-e: expected at least one event");
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

/* Byte offsets the BPF side reads kernel data at, from the kernel's BTF:
 * task_struct.pid for offcpu; the fields of rss_stat's tracepoint record
 * (trace_event_raw_rss_stat is the record); the members of the structs
 * the block and sock raw tracepoints' arguments point to.  Entries with
 * one destination add up to a nested member's offset. */
static int event_offsets(struct recorder *r)
{
	const struct options *o = r->opt;
	volatile struct profile_bpf__rodata *ro = r->skel->rodata;
	struct {
		uint32_t ev, ev2;
		const char *strct, *member;
		volatile const uint32_t *dst;
	} need[] = {
	        {PROFILE_EV_OFFCPU, PROFILE_EV_OFFCPU, "task_struct", "pid", &ro->pid_offset},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "curr", &ro->rss_curr},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "member",
	         &ro->rss_member},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "size", &ro->rss_size},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "mm_id", &ro->rss_mm},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "bio", "bi_iter", &ro->bio_size},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "bvec_iter", "bi_size", &ro->bio_size},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "bio", "bi_opf", &ro->bio_opf},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "bio", "bi_iter", &ro->bio_sector},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "bvec_iter", "bi_sector",
	         &ro->bio_sector},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "bio", "bi_bdev", &ro->bio_bdev},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "block_device", "bd_disk",
	         &ro->bdev_disk},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "request", "q", &ro->rq_q},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "request_queue", "disk",
	         &ro->q_disk},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME, "request", "__sector",
	         &ro->rq_sector},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "sock", "__sk_common", &ro->sk_family},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "sock_common", "skc_family", &ro->sk_family},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "sock", "sk_protocol", &ro->sk_protocol},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "pt_regs", "orig_ax", &ro->regs_nr},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "pt_regs", "di", &ro->regs_arg0},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "pt_regs", "si", &ro->regs_arg1},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "pt_regs", "dx", &ro->regs_arg2},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "task_struct", "thread_info",
	         &ro->ti_status},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "thread_info", "status",
	         &ro->ti_status},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "task_struct", "files",
	         &ro->task_files},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "files_struct", "fdt", &ro->files_fdt},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "fdtable", "max_fds", &ro->fdt_max_fds},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "fdtable", "fd", &ro->fdt_fd},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "file", "f_inode", &ro->vfs_f_inode},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "inode", "i_sb", &ro->vfs_i_sb},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "super_block", "s_type", &ro->sb_type},
	        {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE, "file_system_type", "name",
	         &ro->fstype_name},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		uint32_t off;
		if (!o->ev_flags[need[i].ev] && !o->ev_flags[need[i].ev2])
			continue;
		int rc = kbtf_member_offset(KBTF_VMLINUX, need[i].strct, need[i].member, &off, err,
		                            sizeof(err));
		if (rc < 0) {
			record_fail(r, rc, "-e %s: the kernel has no %s.%s: %s",
			            record_events[need[i].ev].arg, need[i].strct, need[i].member,
			            err);
			return rc;
		}
		*(uint32_t *)need[i].dst += off;
	}
	return 0;
}

/* Before load: the events' settings in .rodata, and only the programs of
 * the events asked for are loaded. */
int record_setup_events(struct recorder *r, const struct options *o)
{
	struct profile_bpf *k = r->skel;
	struct {
		struct bpf_program *prog;
		bool on;
	} progs[] = {
	        {k->progs.do_sample, o->ev_flags[PROFILE_EV_CPU]},
	        {k->progs.on_switch, o->ev_flags[PROFILE_EV_OFFCPU]},
	        {k->progs.on_rss, o->ev_flags[PROFILE_EV_RSS]},
	        {k->progs.on_bio,
	         o->ev_flags[PROFILE_EV_BLOCK] || o->ev_flags[PROFILE_EV_BLOCK_TIME]},
	        {k->progs.on_rq_complete, o->ev_flags[PROFILE_EV_BLOCK_TIME]},
	        {k->progs.on_send, o->ev_flags[PROFILE_EV_NET]},
	        {k->progs.on_recv, o->ev_flags[PROFILE_EV_NET]},
	        {k->progs.on_sys_exit,
	         o->ev_flags[PROFILE_EV_VFS_READ] || o->ev_flags[PROFILE_EV_VFS_WRITE]},
	};
	bool vfs = o->ev_flags[PROFILE_EV_VFS_READ] || o->ev_flags[PROFILE_EV_VFS_WRITE];

	for (int i = 0; i < PROFILE_NEVENTS; i++) {
		k->rodata->ev_flags[i] = o->ev_flags[i];
		k->rodata->ev_every[i] = o->ev_every[i] ? o->ev_every[i] : 1;
	}
	k->rodata->cpu_period_ns = r->period_ns;
	k->rodata->offcpu_min_ns = o->offcpu_min_ns;
	k->rodata->offcpu_preempt = o->offcpu_preempt;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_autoload(progs[i].prog, progs[i].on);
	/* Only on_sys_exit uses these: a kernel without task storage records
	 * the other events. */
	bpf_map__set_autocreate(k->maps.vfs_threads, vfs);
	bpf_map__set_autocreate(k->maps.vfs_bytes, vfs);
	bpf_map__set_autocreate(k->maps.fs_names, vfs);
	return event_offsets(r);
}

/* ---- attaching ---------------------------------------------------------
 * Every event but rss attaches to a raw tracepoint, which the kernel finds
 * by name (BPF_RAW_TRACEPOINT_OPEN): no tracefs is needed.  rss_stat is a
 * classic tracepoint (profile.bpf.c's on_rss says why): its program is
 * attached to a perf event of type PERF_TYPE_TRACEPOINT, whose config is
 * the tracepoint's id, which only tracefs shows.  When tracefs is not
 * mounted at /sys/kernel/tracing, a child process mounts it there in a
 * mount namespace of its own, reads the id and exits, which unmounts it:
 * nothing is left mounted, unlike perf, which mounts tracefs for good. */

#define TRACEFS       "/sys/kernel/tracing"
#define TRACEFS_MAGIC 0x74726163

/* Reads tracefs's events/TP/id (TP is "system/name") into *id.  Only
 * async-signal-safe calls: the forked child of a threaded process runs it.
 * Returns 0 or -errno. */
static int read_tp_id(const char *tp, int *id)
{
	char path[160], buf[32];
	size_t n = 0;
	ssize_t got;
	int fd, v = 0;

	const char *parts[] = {TRACEFS "/events/", tp, "/id"};
	for (size_t i = 0; i < 3; i++)
		for (const char *c = parts[i]; *c && n < sizeof(path) - 1; c++)
			path[n++] = *c;
	path[n] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, sizeof(buf) - 1);
	if (got < 0)
		got = -errno;
	close(fd);
	if (got < 0)
		return (int)got;
	if (got == 0 || buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	for (ssize_t i = 0; i < got && buf[i] >= '0' && buf[i] <= '9' && v < 100000000; i++)
		v = v * 10 + (buf[i] - '0');
	*id = v;
	return 0;
}

/* What the child of tracepoint_id() reports through its pipe. */
struct tp_reply {
	int step; /* enum below: the step that failed, or TP_OK */
	int err;  /* its errno */
	int id;
};
enum { TP_OK = 0, TP_UNSHARE, TP_PRIVATE, TP_MOUNT, TP_READ };

static void tp_child(const char *tp, int fd)
{
	struct tp_reply rep = {TP_OK, 0, 0};

	if (unshare(CLONE_NEWNS) < 0)
		rep = (struct tp_reply){TP_UNSHARE, errno, 0};
	else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		rep = (struct tp_reply){TP_PRIVATE, errno, 0};
	else if (mount("tracefs", TRACEFS, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		rep = (struct tp_reply){TP_MOUNT, errno, 0};
	else if ((rep.err = -read_tp_id(tp, &rep.id)) != 0)
		rep.step = TP_READ;
	if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(1);
	_exit(0);
}

/* Finds the id of tracepoint TP ("system/name") in tracefs, mounted at
 * /sys/kernel/tracing or, when it is not, in a private mount namespace.
 * Returns 0, or -errno with what exactly is missing in why. */
static int tracepoint_id(const char *tp, int *id, char *why, size_t whylen)
{
	struct statfs sf;
	struct tp_reply rep;
	int pfd[2], rc, status;
	pid_t pid;

	if (statfs(TRACEFS, &sf) == 0 && sf.f_type == TRACEFS_MAGIC) {
		rc = read_tp_id(tp, id);
		if (rc == -ENOENT)
			snprintf(why, whylen,
			         "tracefs at " TRACEFS " has no events/%s: the kernel lacks the "
			         "tracepoint or CONFIG_EVENT_TRACING",
			         tp);
		else if (rc < 0)
			snprintf(why, whylen, "reading " TRACEFS "/events/%s/id: %s", tp,
			         strerror(-rc));
		return rc;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return rc;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(why, whylen, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		close(pfd[0]);
		tp_child(tp, pfd[1]);
	}
	close(pfd[1]);
	ssize_t got;
	do
		got = read(pfd[0], &rep, sizeof(rep));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != (ssize_t)sizeof(rep)) {
		snprintf(why, whylen, "the child reading the tracepoint's id from tracefs died");
		return -EIO;
	}
	if (rep.step == TP_OK) {
		*id = rep.id;
		return 0;
	}
	const char *e = strerror(rep.err);
	switch (rep.step) {
	case TP_UNSHARE:
	case TP_PRIVATE:
		snprintf(why, whylen,
		         "tracefs is not mounted at " TRACEFS
		         " (its events/%s/id is the tracepoint's id) and no private mount "
		         "namespace to mount it in could be made (%s: %s; needs CAP_SYS_ADMIN)",
		         tp,
		         rep.step == TP_UNSHARE ? "unshare(CLONE_NEWNS)"
		                                : "mount --make-rprivate /",
		         e);
		break;
	case TP_MOUNT:
		snprintf(why, whylen,
		         "tracefs is not mounted at " TRACEFS
		         " (its events/%s/id is the tracepoint's id) and mounting it there in a "
		         "private mount namespace failed (%s%s)",
		         tp, e,
		         rep.err == ENODEV || rep.err == ENOENT
		                 ? "; the kernel has no tracefs: CONFIG_TRACING"
		         : rep.err == EPERM ? "; needs CAP_SYS_ADMIN"
		                            : "");
		break;
	default:
		snprintf(why, whylen,
		         rep.err == ENOENT
		                 ? "tracefs, mounted privately, has no events/%s: the "
		                   "kernel lacks the tracepoint or CONFIG_EVENT_TRACING%s"
		                 : "reading events/%s/id from tracefs, mounted privately: %s",
		         tp, rep.err == ENOENT ? "" : e);
		break;
	}
	return -rep.err;
}

/* Attaches prog to the classic tracepoint TP ("system/name") through a perf
 * event, the way libbpf's bpf_program__attach_tracepoint() does but with
 * the id found by tracepoint_id().  Returns the link, or NULL with what is
 * missing in why. */
static struct bpf_link *attach_tracepoint(struct bpf_program *prog, const char *tp, char *why,
                                          size_t whylen)
{
	struct perf_event_attr a = {.type = PERF_TYPE_TRACEPOINT,
	                            .size = sizeof(a),
	                            .sample_period = 1,
	                            .wakeup_events = 1};
	struct bpf_link *l;
	int id = 0, fd;

	if (tracepoint_id(tp, &id, why, whylen) < 0)
		return NULL;
	a.config = (uint64_t)id;
	fd = (int)syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "perf_event_open of tracepoint %s (id %d): %s%s", tp, id,
		         strerror(errno),
		         errno == ENOENT || errno == EINVAL ? "; needs CONFIG_EVENT_TRACING" : "");
		return NULL;
	}
	l = bpf_program__attach_perf_event(prog, fd);
	if (!l) {
		snprintf(why, whylen,
		         "attaching the BPF program to the perf event of tracepoint %s: %s; needs "
		         "CONFIG_BPF_EVENTS",
		         tp, strerror(errno));
		close(fd);
	}
	return l; /* the link closes fd */
}

static double mono_now(void);
static void plan_windows(struct record_duty *d, double now);

/* Attaches prog to the raw tracepoint NAME.  Returns the link, or NULL with
 * what is missing in why; needs says what provides the tracepoint. */
static struct bpf_link *attach_raw(struct bpf_program *prog, const char *name, const char *needs,
                                   char *why, size_t whylen)
{
	/* A tp_btf program (on_sys_exit) names its tracepoint in its section
	 * and was matched to it at load. */
	bool btf = bpf_program__type(prog) == BPF_PROG_TYPE_TRACING;
	const char *how = btf ? "BPF_LINK_CREATE (tp_btf)" : "BPF_RAW_TRACEPOINT_OPEN";
	struct bpf_link *l = btf ? bpf_program__attach_trace(prog)
	                         : bpf_program__attach_raw_tracepoint(prog, name);

	if (l)
		return l;
	if (errno == ENOENT)
		snprintf(why, whylen, "the kernel has no tracepoint %s (%s: %s); it comes with %s",
		         name, how, strerror(errno), needs);
	else
		snprintf(why, whylen, "%s %s: %s%s", how, name, strerror(errno),
		         errno == EPERM ? "; needs CAP_BPF and CAP_PERFMON" : "");
	return NULL;
}

/* After load: attaches each event's programs.  An event that cannot be
 * attached is reported, naming what is missing, and left out; the others
 * still record.  Returns 0, or -ENODEV when no event could be attached. */
int record_attach_events(struct recorder *r)
{
	const struct options *o = r->opt;
	struct profile_bpf *k = r->skel;
	/* where: a raw tracepoint's name, or "system/name" of the classic
	 * tracepoint (with needs NULL). */
	struct {
		int ev;
		struct bpf_program *prog;
		const char *where, *needs;
	} att[] = {
	        {PROFILE_EV_OFFCPU, k->progs.on_switch, "sched_switch", "every kernel"},
	        {PROFILE_EV_RSS, k->progs.on_rss, "kmem/rss_stat", NULL},
	        {PROFILE_EV_BLOCK, k->progs.on_bio, "block_bio_queue", "CONFIG_BLOCK"},
	        {PROFILE_EV_BLOCK_TIME, k->progs.on_bio, "block_bio_queue", "CONFIG_BLOCK"},
	        {PROFILE_EV_BLOCK_TIME, k->progs.on_rq_complete, "block_rq_complete",
	         "CONFIG_BLOCK"},
	        {PROFILE_EV_NET, k->progs.on_send, "sock_send_length",
	         "Linux 6.3 and later, with CONFIG_NET"},
	        {PROFILE_EV_NET, k->progs.on_recv, "sock_recv_length",
	         "Linux 6.3 and later, with CONFIG_NET"},
	        {PROFILE_EV_VFS_READ, k->progs.on_sys_exit, "sys_exit",
	         "CONFIG_HAVE_SYSCALL_TRACEPOINTS"},
	        {PROFILE_EV_VFS_WRITE, k->progs.on_sys_exit, "sys_exit",
	         "CONFIG_HAVE_SYSCALL_TRACEPOINTS"},
	};
	int attached = o->ev_flags[PROFILE_EV_CPU] ? 1 : 0;
	char why[512];

	r->ev_attached[PROFILE_EV_CPU] = o->ev_flags[PROFILE_EV_CPU];
	for (int ev = 1; ev < PROFILE_NEVENTS; ev++)
		r->ev_attached[ev] = o->ev_flags[ev] != 0;
	for (size_t i = 0; i < sizeof(att) / sizeof(att[0]); i++) {
		int ev = att[i].ev;
		if (!o->ev_flags[ev] || !r->ev_attached[ev])
			continue;
		/* block and block-time share on_bio, vfs-read and vfs-write
		 * on_sys_exit: attach it once. */
		bool again = false;
		for (size_t j = 0; j < i; j++)
			if (att[j].prog == att[i].prog && r->ev_attached[att[j].ev] &&
			    o->ev_flags[att[j].ev])
				again = true;
		if (again)
			continue;
		struct bpf_link *l = att[i].needs ? attach_raw(att[i].prog, att[i].where,
		                                               att[i].needs, why, sizeof(why))
		                                  : attach_tracepoint(att[i].prog, att[i].where,
		                                                      why, sizeof(why));
		if (!l) {
			fprintf(stderr,
			        PROG ": record: event %s left out: cannot attach the %s %s: %s\n",
			        record_events[ev].arg,
			        !att[i].needs ? "tracepoint"
			        : bpf_program__type(att[i].prog) == BPF_PROG_TYPE_TRACING
			                ? "BTF tracepoint"
			                : "raw tracepoint",
			        att[i].where, why);
			r->ev_attached[ev] = false;
			continue;
		}
		if (o->vfs_duty && att[i].prog == k->progs.on_sys_exit)
			r->duty.link = l; /* the duty cycle's to detach and attach */
		else
			r->ev_links[r->nev_links++] = l;
	}
	for (int ev = 1; ev < PROFILE_NEVENTS; ev++)
		attached += r->ev_attached[ev];
	if (!attached) {
		record_fail(r, -ENODEV, "no event could be recorded");
		return -ENODEV;
	}
	if (r->duty.link) {
		/* Attached once above to find what is missing; now the windows
		 * decide. */
		double now = mono_now();
		bpf_link__destroy(r->duty.link);
		r->duty.link = NULL;
		r->duty.on = true;
		r->duty.rand =
		        (uint64_t)(now * 1e9) ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15u;
		r->duty.set_start = now;
		r->duty.scale = 1;
		plan_windows(&r->duty, now);
	}
	return 0;
}

/* ---- the vfs duty cycle ---------------------------------------------- */

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A uniform draw in [0, 1) (xorshift64). */
static double duty_uniform(struct record_duty *d)
{
	uint64_t x = d->rand ? d->rand : 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	d->rand = x;
	return (double)(x >> 11) / 9007199254740992.0;
}

/* The windows of the interval [now, now + DRAIN_SECONDS): one of
 * RECORD_VFS_DUTY_ON seconds at a uniform phase, its part past the end
 * wrapped to the start, so that each moment is hooked with the same
 * chance, RECORD_VFS_DUTY_ON / DRAIN_SECONDS. */
static void plan_windows(struct record_duty *d, double now)
{
	double len = DRAIN_SECONDS, from = now + len * duty_uniform(d);
	double to = from + RECORD_VFS_DUTY_ON;

	d->nwin = 0;
	if (to > now + len) {
		d->win[d->nwin][0] = now;
		d->win[d->nwin++][1] = to - len;
		to = now + len;
	}
	d->win[d->nwin][0] = from;
	d->win[d->nwin++][1] = to;
}

/* Detaches on_sys_exit, adding the window's hooked time up to the moment
 * the link is gone. */
static void duty_detach(struct record_duty *d)
{
	double t0 = mono_now();
	bpf_link__destroy(d->link);
	d->link = NULL;
	double t1 = mono_now();
	d->attach_s += t1 - t0;
	d->hooked += t1 - d->since;
}

double record_duty_tick(struct recorder *r)
{
	struct record_duty *d = &r->duty;
	double now = mono_now(), due = INFINITY;
	bool in = false;

	if (!d->on || d->stopped)
		return INFINITY;
	for (int i = 0; i < d->nwin; i++) {
		if (d->win[i][0] <= now && now < d->win[i][1])
			in = true;
		if (d->win[i][0] > now && d->win[i][0] < due)
			due = d->win[i][0];
		if (d->win[i][1] > now && d->win[i][1] < due)
			due = d->win[i][1];
	}
	if (d->link && !in) {
		duty_detach(d);
	} else if (!d->link && in) {
		double t0 = mono_now();
		d->link = bpf_program__attach_trace(r->skel->progs.on_sys_exit);
		double t1 = mono_now();
		if (!d->link) {
			int rc = -errno;
			record_fail(r, rc, "-e vfs: attaching sys_exit again: %s", strerror(-rc));
			return INFINITY;
		}
		d->attach_s += t1 - t0;
		d->attaches++;
		d->since = t0; /* hooked from the call's start, at the latest */
	}
	return due;
}

void record_duty_flip(struct recorder *r)
{
	struct record_duty *d = &r->duty;
	double now = d->stopped ? d->stop_at : mono_now();

	if (!d->on)
		return;
	double hooked = d->hooked + (d->link ? now - d->since : 0);
	double len = now - d->set_start, planned = 0;
	for (int i = 0; i < d->nwin; i++) {
		double from = d->win[i][0], to = d->win[i][1] < now ? d->win[i][1] : now;
		if (to > from)
			planned += to - from;
	}
	/* A whole interval (its windows all passed): its length over its
	 * hooked time.  One cut short (the last) may have ended before its
	 * windows came: each of its moments had the nominal chance, so the
	 * nominal scale, corrected by how much of the planned windows that
	 * passed was hooked.  No hooked time: no vfs sample to scale. */
	if (hooked <= 0 || planned <= 0)
		d->scale = 1;
	else if (len >= DRAIN_SECONDS)
		d->scale = len / hooked;
	else
		d->scale = DRAIN_SECONDS / RECORD_VFS_DUTY_ON * planned / hooked;
	d->all += len;
	d->all_hooked += hooked;
	d->set_start = now;
	d->hooked = 0;
	d->since = now;
	if (!d->stopped)
		plan_windows(d, now);
}

double record_duty_scale(const struct recorder *r, uint32_t ev)
{
	return r->duty.on && (ev == PROFILE_EV_VFS_READ || ev == PROFILE_EV_VFS_WRITE)
	               ? r->duty.scale
	               : 1;
}

void record_duty_stop(struct recorder *r)
{
	struct record_duty *d = &r->duty;

	if (!d->on || d->stopped)
		return;
	if (d->link)
		duty_detach(d);
	d->stopped = true;
	d->stop_at = mono_now();
}
