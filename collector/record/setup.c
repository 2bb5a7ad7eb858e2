/*
 * setup.c — the BPF side of `flamefs-collect record`, made ready: the
 * map sizes from -F, the CPUs and the events; the kernel offsets the
 * program reads (kbtf.c); open, read-only settings, load; the maps the
 * drain reads and the unwinder over its own; the process events' ring
 * and hooks; one cpu-clock perf event per CPU with the sampler attached.
 * Its failures go to record_fail(); it prints only the -v notes on what
 * is not used and, with -vv, libbpf's messages.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kbtf-internal.h"
#include "ldso-internal.h"
#include "record-internal.h"

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
#define SPAN_RING            (8u << 20)

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
	/* The spans record's ring (record --span): user space is woken when
	 * it is half full, so it holds SPAN_RING / 2 of records, 96 bytes
	 * each, between two reads. */
	rc = bpf_map__set_max_entries(k->maps.span_records,
	                              r->opt->nspans ? SPAN_RING : (uint32_t)sysconf(_SC_PAGESIZE));
	if (rc < 0)
		return rc;
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
		rc = bpf_map__set_max_entries(k->maps.unwind_files, tables);
	if (rc == 0)
		rc = bpf_map__set_max_entries(k->maps.unwind_rows, rows);
	return rc;
}

/* ---- setup -------------------------------------------------------------- */

int record_open_cpu_events(struct recorder *r)
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

void record_close_cpu_events(struct recorder *r)
{
	for (int i = 0; i < r->nlinks; i++) {
		bpf_link__destroy(r->links[i]);
		close(r->pfds[i]);
	}
	r->nlinks = 0;
}

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
	/* Where a pc's vma names its file, for the walker to find a table by
	 * the file where the process's list does not place the pc. */
	struct {
		const char *member;
		volatile const uint32_t *dst;
	} vma[] = {{"vm_start", &ro->vma_start},
	           {"vm_end", &ro->vma_end},
	           {"vm_pgoff", &ro->vma_pgoff},
	           {"vm_file", &ro->vma_file}};
	if (r->opt->unwind == PROFILE_UNWIND_FP || !ro->task_mm)
		return;
	for (size_t i = 0; i < sizeof(vma) / sizeof(vma[0]); i++) {
		uint32_t off;
		if (kbtf_member_offset(KBTF_VMLINUX, "vm_area_struct", vma[i].member, &off, err,
		                       sizeof(err)) < 0) {
			if (r->opt->verbose)
				fprintf(stderr,
				        PROG ": processes not read yet are walked by frame "
				             "pointers: %s\n",
				        err);
			return;
		}
		*(volatile uint32_t *)vma[i].dst = off;
	}
	ro->vma_known = true;
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

/* The BPF program: opened, its read-only settings and map sizes set
 * (the events, the kernel's offsets, the unwinder's mode, the loader's
 * hook in *ldso if there is one: *have_ldso), loaded. */
int record_open_bpf(struct recorder *r, const struct options *o, struct ldso_probe *ldso,
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
	unsigned labels = record_labels_want(r->labels);
	r->skel->rodata->label_cgroup = labels & (RECORD_LABEL_CGROUP | RECORD_LABEL_CONTAINER);
	r->skel->rodata->label_thread = labels & RECORD_LABEL_THREAD;
	r->skel->rodata->spans_on = o->nspans > 0;
	if (!o->nspans) {
		bpf_program__set_autoload(r->skel->progs.span_enter, false);
		bpf_program__set_autoload(r->skel->progs.span_exit, false);
	}
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
int record_wire_maps(struct recorder *r, const struct options *o)
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
		        .files = bpf_map__fd(r->skel->maps.unwind_files),
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

int record_find_program(const char *cmd, char *buf, size_t size)
{
	if (strchr(cmd, '/')) {
		snprintf(buf, size, "%s", cmd);
		return access(buf, X_OK) == 0 ? 0 : -errno;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, size, "%.*s%s%s", (int)n, p, n ? "/" : "", cmd);
		if (access(buf, X_OK) == 0)
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* The file a span's probes are in without in=PATH: -- COMMAND's program
 * (found as execvp finds it) or the first -p process's, into buf. */
static int span_program(const struct options *o, char *buf, size_t size)
{
	if (o->command)
		return record_find_program(o->command[0], buf, size);
	char link[64];
	snprintf(link, sizeof(link), "/proc/%ld/exe", strtol(o->pid_list, NULL, 10));
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int record_attach_spans(struct recorder *r, const struct options *o)
{
	r->span_names_fd = o->nspans ? bpf_map__fd(r->skel->maps.span_names) : -1;
	for (size_t i = 0; i < o->nspans; i++) {
		const struct record_span_spec *sp = &o->spans[i];
		char prog[PATH_MAX];
		const char *path = sp->path;
		int rc;
		if (!path) {
			if ((rc = span_program(o, prog, sizeof(prog))) < 0) {
				record_fail(r, rc, "--span %s: cannot find the program's file: %s",
				            sp->arg, strerror(-rc));
				return rc;
			}
			path = prog;
		}
		if (sp->fixed) {
			uint32_t spec = i;
			uint64_t key = record_span_fixed_key(sp->fixed);
			if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.span_fixed), &spec, &key,
			                        BPF_ANY) < 0) {
				rc = -errno;
				record_fail(r, rc, "--span %s: cannot set its name: %s", sp->arg,
				            strerror(-rc));
				return rc;
			}
		}
		/* The ends first: a start attached alone would push spans
		 * nothing pops, and the thread's stack would stay off by them;
		 * an end attached alone only meets ends of nothing (ignored).
		 * The links are destroyed in this order too. */
		for (size_t e = 0; e <= sp->nend; e++) {
			bool end = e < sp->nend;
			const char *probe = end ? sp->end[e] : sp->start;
			/* Not LIBBPF_OPTS(): a GNU statement expression, which
			 * clang -Wpedantic (the fuzz build) refuses. */
			struct bpf_usdt_opts uo = {
			        .sz = sizeof(uo),
			        .usdt_cookie =
			                end ? PROFILE_SPAN_END | (uint64_t)i
			                                                 << PROFILE_SPAN_SPEC_SHIFT
			                    : sp->cookie,
			};
			libbpf_last[0] = '\0';
			struct bpf_link *l = bpf_program__attach_usdt(
			        end ? r->skel->progs.span_exit : r->skel->progs.span_enter, -1,
			        path, sp->provider, probe, &uo);
			if (!l) {
				rc = -errno;
				record_fail(r, rc, "--span %s: cannot attach %s:%s in %s: %s%s%s%s",
				            sp->arg, sp->provider, probe, path, strerror(-rc),
				            libbpf_last[0] ? " (libbpf: " : "",
				            libbpf_last[0] ? libbpf_last : "",
				            libbpf_last[0] ? ")" : "");
				return rc;
			}
			r->span_links[r->nspan_links++] = l;
		}
	}
	return 0;
}

/* The event ring buffer and the process events: fork, exec, exit (all
 * three needed), the exec's beginning and the loader's hook (optional). */
int record_attach_process_events(struct recorder *r, const struct options *o,
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
	/* The spans record's ring, served with the process events'. */
	if (o->nspans && ring_buffer__add(r->rb, bpf_map__fd(r->skel->maps.span_records),
	                                  record_on_span, r) < 0) {
		rc = -errno;
		record_fail(r, rc, "cannot open the spans ring buffer: %s", strerror(-rc));
		return rc;
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
