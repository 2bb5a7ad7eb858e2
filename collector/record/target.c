/*
 * target.c — what `flamefs-collect record` follows: -p's processes, a
 * COMMAND started held until it is followed, or (-a) every process, read
 * once sampling runs; and the start of sampling itself.  Failures go to
 * record_fail(); the start line is printed here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "record-internal.h"

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

void record_reap_child(struct recorder *r)
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

/* What to follow: -p's processes, or COMMAND, started held (*go_fd
 * releases it). */
int record_start_target(struct recorder *r, const struct options *o, int *go_fd)
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
int record_start_sampling(struct recorder *r, const struct options *o, int go_fd)
{
	int rc;

	rc = record_attach_events(r);
	if (rc >= 0 && o->ev_flags[PROFILE_EV_CPU])
		rc = record_open_cpu_events(r);
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
