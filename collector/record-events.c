/*
 * record-events.c — the events of `flamefs-collect record -e`: their
 * names, series and units, the parsing of EVENT[:STACKS][:N], and the
 * set-up of their BPF programs (the kernel offsets they read, which
 * programs load, attaching each and leaving out what the kernel lacks).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kbtf.h"
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
};

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
	for (char *spec = strtok_r(copy, ",", &save); spec && rc == 0;
	     spec = strtok_r(NULL, ",", &save)) {
		char *mod = strchr(spec, ':');
		int ev = -1;

		if (mod)
			*mod++ = '\0';
		for (int i = 0; i < PROFILE_NEVENTS; i++)
			if (strcmp(spec, record_events[i].arg) == 0)
				ev = i;
		if (ev < 0) {
			fprintf(stderr,
			        PROG
			        ": -e: unknown event \"%s\"; expected cpu, offcpu, rss, block, "
			        "block-time or net\n",
			        spec);
			rc = -EINVAL;
			break;
		}
		if (o->ev_flags[ev]) {
			fprintf(stderr, PROG ": -e: %s given twice\n", spec);
			rc = -EINVAL;
			break;
		}
		uint32_t flags = PROFILE_EV_ON | PROFILE_EV_USER | PROFILE_EV_KERNEL;
		uint32_t every = record_events[ev].every;
		while (mod && *mod && rc == 0) {
			char *next = strchr(mod, ':');
			if (next)
				*next++ = '\0';
			if (parse_event_mod(mod, ev, o, &flags, &every) < 0) {
				fprintf(stderr,
				        PROG ": -e %s: expected STACKS (u, k or uk)%s or N (1 to "
				             "1000000) after ':', got \"%s\"\n",
				        spec, ev == PROFILE_EV_OFFCPU ? ", all" : "", mod);
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
	}
	if (rc == 0 && !copy[0]) {
		fprintf(stderr, PROG ": -e: expected at least one event\n");
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

/* Byte offsets the BPF side reads kernel data at: task_struct.pid for
 * offcpu, and the fields of the tracepoint records of the other events,
 * from the kernel's BTF (the trace_event_raw_* structs are the records). */
static int event_offsets(struct recorder *r)
{
	const struct options *o = r->opt;
	struct {
		uint32_t ev, ev2;
		const char *strct, *member;
		volatile const uint32_t *dst;
	} need[] = {
	        {PROFILE_EV_OFFCPU, PROFILE_EV_OFFCPU, "task_struct", "pid",
	         &r->skel->rodata->pid_offset},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "curr",
	         &r->skel->rodata->rss_curr},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "member",
	         &r->skel->rodata->rss_member},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "size",
	         &r->skel->rodata->rss_size},
	        {PROFILE_EV_RSS, PROFILE_EV_RSS, "trace_event_raw_rss_stat", "mm_id",
	         &r->skel->rodata->rss_mm},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "trace_event_raw_block_bio", "dev",
	         &r->skel->rodata->bio_dev},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "trace_event_raw_block_bio", "sector",
	         &r->skel->rodata->bio_sector},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "trace_event_raw_block_bio", "nr_sector",
	         &r->skel->rodata->bio_nr},
	        {PROFILE_EV_BLOCK, PROFILE_EV_BLOCK_TIME, "trace_event_raw_block_bio", "rwbs",
	         &r->skel->rodata->bio_rwbs},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME,
	         "trace_event_raw_block_rq_completion", "dev", &r->skel->rodata->rq_dev},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME,
	         "trace_event_raw_block_rq_completion", "sector", &r->skel->rodata->rq_sector},
	        {PROFILE_EV_BLOCK_TIME, PROFILE_EV_BLOCK_TIME,
	         "trace_event_raw_block_rq_completion", "nr_sector", &r->skel->rodata->rq_nr},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "trace_event_raw_sock_msg_length", "family",
	         &r->skel->rodata->sock_family},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "trace_event_raw_sock_msg_length", "protocol",
	         &r->skel->rodata->sock_protocol},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "trace_event_raw_sock_msg_length", "ret",
	         &r->skel->rodata->sock_ret},
	        {PROFILE_EV_NET, PROFILE_EV_NET, "trace_event_raw_sock_msg_length", "flags",
	         &r->skel->rodata->sock_flags},
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
		*(uint32_t *)need[i].dst = off;
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
	};

	for (int i = 0; i < PROFILE_NEVENTS; i++) {
		k->rodata->ev_flags[i] = o->ev_flags[i];
		k->rodata->ev_every[i] = o->ev_every[i] ? o->ev_every[i] : 1;
	}
	k->rodata->cpu_period_ns = r->period_ns;
	k->rodata->offcpu_min_ns = o->offcpu_min_ns;
	k->rodata->offcpu_preempt = o->offcpu_preempt;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_autoload(progs[i].prog, progs[i].on);
	return event_offsets(r);
}

/* After load: attaches each event's programs.  An event the kernel cannot
 * attach is reported and left out; the others still record.  Returns 0,
 * or -ENODEV when no event could be attached. */
int record_attach_events(struct recorder *r)
{
	const struct options *o = r->opt;
	struct profile_bpf *k = r->skel;
	struct {
		int ev;
		struct bpf_program *prog;
		const char *what;
	} att[] = {
	        {PROFILE_EV_OFFCPU, k->progs.on_switch, "raw tracepoint sched_switch"},
	        {PROFILE_EV_RSS, k->progs.on_rss, "tracepoint kmem/rss_stat"},
	        {PROFILE_EV_BLOCK, k->progs.on_bio, "tracepoint block/block_bio_queue"},
	        {PROFILE_EV_BLOCK_TIME, k->progs.on_bio, "tracepoint block/block_bio_queue"},
	        {PROFILE_EV_BLOCK_TIME, k->progs.on_rq_complete,
	         "tracepoint block/block_rq_complete"},
	        {PROFILE_EV_NET, k->progs.on_send, "tracepoint sock/sock_send_length"},
	        {PROFILE_EV_NET, k->progs.on_recv, "tracepoint sock/sock_recv_length"},
	};
	int attached = o->ev_flags[PROFILE_EV_CPU] ? 1 : 0;

	r->ev_attached[PROFILE_EV_CPU] = o->ev_flags[PROFILE_EV_CPU];
	for (int ev = 1; ev < PROFILE_NEVENTS; ev++)
		r->ev_attached[ev] = o->ev_flags[ev] != 0;
	for (size_t i = 0; i < sizeof(att) / sizeof(att[0]); i++) {
		int ev = att[i].ev;
		if (!o->ev_flags[ev] || !r->ev_attached[ev])
			continue;
		/* block and block-time share on_bio: attach it once. */
		bool again = false;
		for (size_t j = 0; j < i; j++)
			if (att[j].prog == att[i].prog && r->ev_attached[att[j].ev] &&
			    o->ev_flags[att[j].ev])
				again = true;
		if (again)
			continue;
		struct bpf_link *l = bpf_program__attach(att[i].prog);
		if (!l) {
			fprintf(stderr,
			        PROG ": record: event %s left out: cannot attach the %s (%s); "
			             "the kernel may lack it\n",
			        record_events[ev].arg, att[i].what, strerror(errno));
			r->ev_attached[ev] = false;
			continue;
		}
		r->ev_links[r->nev_links++] = l;
	}
	for (int ev = 1; ev < PROFILE_NEVENTS; ev++)
		attached += r->ev_attached[ev];
	if (!attached) {
		record_fail(r, -ENODEV, "no event could be recorded");
		return -ENODEV;
	}
	return 0;
}
