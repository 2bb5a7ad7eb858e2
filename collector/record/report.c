/*
 * report.c — the summary `flamefs-collect record` prints on
 * stderr at the end.  By default at most two lines (three with --push):
 * what was recorded into which store and what --retention deleted, and
 * what the user should act on (samples dropped, stacks lost, names
 * missing: from 20% of the cpu weight without function names, where
 * they are and which debug package holds them).  With
 * --verbose, instead, every counter of the sampler, the symbolizer, the
 * unwinder and the JIT and Python namers, one dense line each, in a
 * format tests and benchmarks parse.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <bpf/bpf.h>

#include "record-internal.h"
#include "symbolize.h"
#include "unwinder.h"

double record_cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Appends "; " (after the first item) and a formatted item to buf,
 * which holds *n bytes; stops quietly where the buffer ends. */
static void __attribute__((format(printf, 4, 5)))
add_item(char *buf, size_t size, int *n, const char *fmt, ...)
{
	va_list ap;

	if (*n >= (int)size)
		return;
	if (*n > 0)
		*n += snprintf(buf + *n, size - (size_t)*n, "; ");
	if (*n >= (int)size)
		return;
	va_start(ap, fmt);
	*n += vsnprintf(buf + *n, size - (size_t)*n, fmt, ap);
	va_end(ap);
}

/* A leaf without a function name: "[unknown]", a bare module name
 * "[libfoo.so]" or a frame of kind unknown, as the view's quality file
 * counts it. */
static bool unnamed_leaf(const struct store_frame *f)
{
	return f->kind == STORE_FRAME_UNKNOWN ||
	       (f->name_len >= 2 && f->name[0] == '[' && f->name[f->name_len - 1] == ']');
}

static uint64_t unnamed_hash(const char *m, size_t ml, const uint8_t *id, size_t il)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < ml; i++)
		h = (h ^ (unsigned char)m[i]) * 1099511628211ULL;
	for (size_t i = 0; i < il; i++)
		h = (h ^ id[i]) * 1099511628211ULL;
	return h;
}

static struct record_unnamed *unnamed_slot(struct record_unnamed *t, size_t slots, const char *m,
                                           size_t ml, const uint8_t *id, size_t il)
{
	size_t j = (size_t)unnamed_hash(m, ml, id, il) & (slots - 1);

	for (;; j = (j + 1) & (slots - 1)) {
		struct record_unnamed *u = &t[j];
		if (!u->module ||
		    (strlen(u->module) == ml && (!ml || memcmp(u->module, m, ml) == 0) &&
		     u->build_id_len == il && (!il || memcmp(u->build_id, id, il) == 0)))
			return u;
	}
}

int record_unnamed_add(struct recorder *r, const struct store_frame *f, uint64_t weight)
{
	if (!unnamed_leaf(f))
		return 0;
	const char *m = f->module_len ? f->module : f->name;
	size_t ml = f->module_len ? f->module_len : f->name_len;
	size_t il = f->build_id_len <= sizeof(r->unnamed->build_id) ? f->build_id_len : 0;
	if ((r->unnamed_used + 1) * 2 > r->unnamed_slots) {
		size_t ns = r->unnamed_slots ? r->unnamed_slots * 2 : 64;
		struct record_unnamed *nt = calloc(ns, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < r->unnamed_slots; i++) {
			const struct record_unnamed *o = &r->unnamed[i];
			if (o->module)
				*unnamed_slot(nt, ns, o->module, strlen(o->module), o->build_id,
				              o->build_id_len) = *o;
		}
		free(r->unnamed);
		r->unnamed = nt;
		r->unnamed_slots = ns;
	}
	struct record_unnamed *u =
	        unnamed_slot(r->unnamed, r->unnamed_slots, m, ml, f->build_id, il);
	if (!u->module) {
		if (!(u->module = strndup(m ? m : "", ml)))
			return -ENOMEM;
		if (il)
			memcpy(u->build_id, f->build_id, il);
		u->build_id_len = (uint8_t)il;
		r->unnamed_used++;
	}
	u->weight += weight;
	r->unnamed_weight += weight;
	return 0;
}

void record_unnamed_named(struct recorder *r, const struct store_frame *f)
{
	size_t il = f->build_id_len <= sizeof(r->unnamed->build_id) ? f->build_id_len : 0;

	if (!r->unnamed_slots || !f->module_len)
		return;
	struct record_unnamed *u = unnamed_slot(r->unnamed, r->unnamed_slots, f->module,
	                                        f->module_len, f->build_id, il);
	if (!u->module)
		return;
	r->unnamed_weight -= u->weight;
	u->weight = 0;
}

void record_unnamed_free(struct recorder *r)
{
	for (size_t i = 0; i < r->unnamed_slots; i++)
		free(r->unnamed[i].module);
	free(r->unnamed);
	r->unnamed = NULL;
	r->unnamed_slots = r->unnamed_used = 0;
}

/* When at least RECORD_UNNAMED_WARN_PERCENT of the cpu weight has no
 * function name: the item of the warning line naming the share, the two
 * modules with the most of it and their debug packages (Debian). */
static void unnamed_item(struct recorder *r, char *line, size_t size, int *n)
{
	__extension__ typedef unsigned __int128 u128;
	uint64_t total = r->ev_weight[PROFILE_EV_CPU];
	const struct record_unnamed *top[2] = {NULL, NULL};

	if (!total || (u128)r->unnamed_weight * 100 < (u128)RECORD_UNNAMED_WARN_PERCENT * total)
		return;
	for (size_t i = 0; i < r->unnamed_slots; i++) {
		const struct record_unnamed *u = &r->unnamed[i];
		if (!u->module)
			continue;
		if (!top[0] || u->weight > top[0]->weight ||
		    (u->weight == top[0]->weight && strcmp(u->module, top[0]->module) < 0)) {
			top[1] = top[0];
			top[0] = u;
		} else if (!top[1] || u->weight > top[1]->weight ||
		           (u->weight == top[1]->weight && strcmp(u->module, top[1]->module) < 0)) {
			top[1] = u;
		}
	}
	struct symbolize_debpkg q[2] = {0};
	uint64_t w[2] = {0, 0};
	size_t nt = 0;
	for (; nt < 2 && top[nt]; nt++) {
		q[nt] = (struct symbolize_debpkg){.module = top[nt]->module,
		                                  .build_id = top[nt]->build_id,
		                                  .build_id_len = top[nt]->build_id_len};
		w[nt] = top[nt]->weight;
	}
	symbolize_debpkg_find(
	        q, nt, SYMBOLIZE_DEBPKG_QUICK_MS); /* the recorded modules are this machine's */
	char advice[768];
	symbolize_debpkg_advice(advice, sizeof(advice), q, w, nt, total);
	add_item(line, size, n,
	         "%.1f%% of the CPU weight ends in code without function names, %s: install "
	         "debug packages or set DEBUGINFOD_URLS, and run flamefs-collect symbolize",
	         100.0 * (double)r->unnamed_weight / (double)total, advice);
}

/* The default summary: one line of what was recorded (and what
 * --retention deleted), one of what went wrong (only when something
 * did); with --push, record_push_stop() adds the pushes' line. */
static void report_short(struct recorder *r, double wall)
{
	const __u64 *st = r->skel->bss->stats;
	char line[2048];
	int n = 0;

	line[0] = '\0';
	if (r->opt->ev_flags[PROFILE_EV_CPU])
		add_item(line, sizeof(line), &n, "recorded %" PRIu64 " samples (%.3f s of CPU)",
		         r->ev_samples[PROFILE_EV_CPU], (double)r->ev_weight[PROFILE_EV_CPU] / 1e9);
	for (int i = 1; i < PROFILE_NEVENTS; i++) {
		if (!r->opt->ev_flags[i])
			continue;
		bool ns = strcmp(record_events[i].unit, "nanoseconds") == 0;
		add_item(line, sizeof(line), &n, "%s%s %" PRIu64 " events (%.3f %s)%s",
		         n ? "" : "recorded ", record_events[i].series,
		         (uint64_t)r->skel->bss->ev_seen[i],
		         ns ? (double)r->ev_weight[i] / 1e9 : (double)r->ev_weight[i] / 1048576.0,
		         ns ? "s" : "MiB", r->ev_attached[i] ? "" : ", not attached");
	}
	fprintf(stderr, PROG ": %s over %.2f s into %s", line, wall,
	        r->store ? store_where(r->store) : "the store");
	if (r->opt->retention)
		fprintf(stderr,
		        "; retention %" PRId64 " s: deleted %" PRIu64 " time buckets (%" PRIu64
		        " samples) older than that",
		        r->opt->retention, r->pruned_buckets, r->pruned_samples);
	fputc('\n', stderr);

	/* What the user should know: each counter here means samples or
	 * names are missing from the store. */
	n = 0;
	uint64_t dropped = st[PROFILE_STAT_COUNTS_FULL];
	uint64_t lost = st[PROFILE_STAT_KERNEL_COLLISION] + st[PROFILE_STAT_STACK_ERROR] +
	                st[PROFILE_STAT_KSTACKS_FULL] + st[PROFILE_STAT_USTACKS_FULL] +
	                st[PROFILE_STAT_PYSTACKS_FULL];
	if (dropped)
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " samples dropped (counts map full: a lower -F keeps them)",
		         dropped);
	if (st[PROFILE_STAT_RING_FULL])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " samples counted without their moment (the samples ring was "
		         "full)",
		         (uint64_t)st[PROFILE_STAT_RING_FULL]);
	if (lost)
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " stacks lost, their weight kept under [unknown]", lost);
	if (st[PROFILE_STAT_SPAN_NAME_LOST])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " span names not read or not kept (span=[unknown])",
		         (uint64_t)st[PROFILE_STAT_SPAN_NAME_LOST]);
	if (st[PROFILE_STAT_SPAN_UNMATCHED])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " span ends without a start (begun before they were followed)",
		         (uint64_t)st[PROFILE_STAT_SPAN_UNMATCHED]);
	if (st[PROFILE_STAT_SPAN_RING_FULL])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " spans not recorded (the spans ring was full)",
		         (uint64_t)st[PROFILE_STAT_SPAN_RING_FULL]);
	if (st[PROFILE_STAT_SPAN_DEEP])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " spans nested deeper than %d (their samples go to the "
		         "deepest kept span)",
		         (uint64_t)st[PROFILE_STAT_SPAN_DEEP], PROFILE_SPAN_DEPTH);
	if (st[PROFILE_STAT_EVENTS_LOST])
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " process events lost (some processes may be unnamed)",
		         (uint64_t)st[PROFILE_STAT_EVENTS_LOST]);
	if (r->unsymbolized_pids)
		add_item(line, sizeof(line), &n, "%" PRIu64 " processes without symbols",
		         r->unsymbolized_pids);
	struct symbolize_stats ss;
	symbolize_get_stats(r->sym, &ss);
	uint64_t untrusted = ss.files_refused + ss.debuglinks_refused + ss.jit_maps_refused;
	if (untrusted)
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " files not trusted (mapped files, debug links, perf maps), "
		         "their frames left unnamed",
		         untrusted);
	if (ss.jit_capped)
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " perf maps cut short (at most %u JIT names held)",
		         ss.jit_capped, SYMBOLIZE_JIT_TOTAL_ENTRIES);
	const struct late_stats *ls = &r->late_stats;
	if (ls->over_memory + ls->over_time)
		add_item(line, sizeof(line), &n,
		         "%" PRIu64 " JIT samples stored unnamed past --jit-memory or --jit-wait",
		         ls->over_memory + ls->over_time);
	if (python_walks(r->opt)) {
		struct symbolize_python_stats ps;
		symbolize_python_get_stats(r->sym, &ps);
		if (ps.unknown)
			add_item(line, sizeof(line), &n,
			         "Python %u.%u is not known (3.11 is): its processes show native "
			         "frames only",
			         ps.unknown_major, ps.unknown_minor);
	}
	if (r->opt->ev_flags[PROFILE_EV_CPU])
		unnamed_item(r, line, sizeof(line), &n);
	if (n)
		fprintf(stderr, PROG ": warning: %s (--verbose shows every counter)\n", line);
}

/* The vfs events: the bytes every call moved against the bytes charged to
 * stacks (profile-events.bpf.h: the rest is what each thread moved since
 * its last stack), exact. */
static void report_vfs(const struct recorder *r)
{
	static const int evs[2] = {PROFILE_EV_VFS_READ, PROFILE_EV_VFS_WRITE};
	int ncpu = libbpf_num_possible_cpus();

	if (ncpu <= 0)
		return;
	__u64 *v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return;
	for (__u32 dir = 0; dir < 2; dir++) {
		int ev = evs[dir];
		uint64_t moved = 0;
		if (!r->opt->ev_flags[ev] || !r->ev_attached[ev] ||
		    bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.vfs_bytes), &dir, v) < 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			moved += v[c];
		fprintf(stderr,
		        PROG ": %s: %" PRIu64 " bytes moved, %" PRIu64 " charged to %" PRIu64
		             " stacks (N %" PRIu32 "); the rest was moved by threads since their "
		             "last stack\n",
		        record_events[ev].series, moved, r->ev_weight[ev],
		        (uint64_t)r->skel->bss->ev_seen[ev], r->opt->ev_every[ev]);
	}
	free(v);
	const struct record_duty *d = &r->duty;
	if (d->on)
		fprintf(stderr,
		        PROG
		        ": vfs: sys_exit hooked %.6f s of %.6f s recorded (share %.6f; "
		        "bytes moved are the hooked time's, weights each drain's bytes over its "
		        "share), %" PRIu64 " attaches, %.1f us per attach and detach\n",
		        d->all_hooked, d->all, d->all > 0 ? d->all_hooked / d->all : 0, d->attaches,
		        d->attaches ? d->attach_s / (double)d->attaches * 1e6 : 0);
}

/* The events of -e: each one's count and weight, on one line. */
static void report_events(const struct recorder *r)
{
	char line[512];
	int n = 0;
	for (int i = 1; i < PROFILE_NEVENTS; i++) {
		if (!r->opt->ev_flags[i])
			continue;
		bool ns = strcmp(record_events[i].unit, "nanoseconds") == 0;
		n += snprintf(
		        line + n, sizeof(line) - (size_t)n, "%s%s %" PRIu64 " events, %.3f %s%s",
		        n ? "; " : "", record_events[i].series, (uint64_t)r->skel->bss->ev_seen[i],
		        ns ? (double)r->ev_weight[i] / 1e9 : (double)r->ev_weight[i] / 1048576.0,
		        ns ? "s" : "MiB", r->ev_attached[i] ? "" : " (not attached)");
		if (n >= (int)sizeof(line))
			break;
	}
	if (n)
		fprintf(stderr, PROG ": %s\n", line);
	report_vfs(r);
}

/* The samples recorded, seen and dropped, and the stacks lost. */
static void report_samples(const struct recorder *r, double wall)
{
	const __u64 *st = r->skel->bss->stats;

	fprintf(stderr,
	        PROG ": recorded %" PRIu64 " samples (%.3f s of CPU) in %" PRIu64
	             " drains over %.2f s; seen %" PRIu64 ", dropped %" PRIu64
	             " (counts map full)\n",
	        r->ev_samples[PROFILE_EV_CPU], (double)r->ev_weight[PROFILE_EV_CPU] / 1e9,
	        r->drains, wall, (uint64_t)st[PROFILE_STAT_SEEN],
	        (uint64_t)st[PROFILE_STAT_COUNTS_FULL]);
	fprintf(stderr,
	        PROG ": stacks lost: %" PRIu64 " kernel to hash collisions, %" PRIu64
	             " to errors, %" PRIu64 " kernel to a full map; "
	             "children not followed: %" PRIu64 "; process events lost: %" PRIu64
	             "; processes without symbols: %" PRIu64 "\n",
	        (uint64_t)st[PROFILE_STAT_KERNEL_COLLISION], (uint64_t)st[PROFILE_STAT_STACK_ERROR],
	        (uint64_t)st[PROFILE_STAT_KSTACKS_FULL], (uint64_t)st[PROFILE_STAT_PIDS_FULL],
	        (uint64_t)st[PROFILE_STAT_EVENTS_LOST], r->unsymbolized_pids);
	fprintf(stderr,
	        PROG ": moments: %" PRIu64 " samples stored with their moment, %" PRIu64
	             " without a moment (%" PRIu64 " for a full samples ring); ring %" PRIu64
	             " KiB a set; keep window %" PRId64 " s; %" PRIu64 " roll-ups forgot the "
	             "detail of %" PRIu64 " samples\n",
	        r->with_moment, r->without_moment, (uint64_t)st[PROFILE_STAT_RING_FULL],
	        r->keep_samples > 0 ? r->ring_bytes >> 10 : 0, r->keep_samples, r->rollups,
	        r->rolled_samples);
	if (r->opt->nspans)
		fprintf(stderr,
		        PROG ": spans: %zu spans attached; %" PRIu64
		             " ends without a start, %" PRIu64 " spans deeper than %d, %" PRIu64
		             " names not read or kept; %" PRIu64 " spans stored (%" PRIu64
		             " unended), %" PRIu64 " ns in all, %" PRIu64
		             " lost to a full ring, %" PRIu64 " with their enclosing names lost\n",
		        r->opt->nspans, (uint64_t)st[PROFILE_STAT_SPAN_UNMATCHED],
		        (uint64_t)st[PROFILE_STAT_SPAN_DEEP], PROFILE_SPAN_DEPTH,
		        (uint64_t)st[PROFILE_STAT_SPAN_NAME_LOST], r->span_stored, r->span_unended,
		        r->span_weight, (uint64_t)st[PROFILE_STAT_SPAN_RING_FULL],
		        (uint64_t)st[PROFILE_STAT_SPAN_CHAIN_LOST] + r->span_chains_unread);
}

/* The symbolizer: snapshots, files (and those not trusted), templates;
 * and the collector's CPU. */
static void report_symbolizer(const struct recorder *r, double wall, double loop_cpu)
{
	struct symbolize_stats ss;
	double cpu = record_cpu_seconds();

	symbolize_get_stats(r->sym, &ss);
	fprintf(stderr,
	        PROG ": symbolized %" PRIu64 " process snapshots (%" PRIu64
	             " inherited from a parent; %" PRIu64 " freed after their exit), %" PRIu64
	             " ELF files (modules freed %" PRIu64 ", unused for --module-grace); "
	             "addresses cached %" PRIu64 " (at most %" PRIu64 " in one file at a sweep, "
	             "%" PRIu64 " caches emptied past %u); "
	             "collector CPU %.3f s in all, %.2f%% of one core while recording\n",
	        ss.processes, ss.inherited, ss.reaped, ss.modules, ss.modules_freed,
	        ss.addrs_cached, ss.addrs_cached_max, ss.caches_emptied, SYMBOLIZE_CACHE_MAX, cpu,
	        wall > 0 ? 100.0 * loop_cpu / wall : 0.0);
	fprintf(stderr,
	        PROG ": files not trusted: %" PRIu64
	             " mapped files not opened (not a regular file, "
	             "over 4 GiB, or not the file its maps line names), %" PRIu64
	             " debug links refused, %" PRIu64 " perf maps ignored (owner or type), %" PRIu64
	             " perf maps cut short (JIT names held: at most %u entries, %u MiB)\n",
	        ss.files_refused, ss.debuglinks_refused, ss.jit_maps_refused, ss.jit_capped,
	        SYMBOLIZE_JIT_TOTAL_ENTRIES, SYMBOLIZE_JIT_TOTAL_BYTES >> 20);
	fprintf(stderr,
	        PROG ": execs: %" PRIu64 " of programs with a template (%" PRIu64
	             " templates written), listed for the walker in BPF, %" PRIu64
	             " read at once; loader's hooks: %" PRIu64
	             " placed whole from the template, %" PRIu64 " read (%" PRIu64
	             " after an exec not placed, %" PRIu64
	             " whose template's libraries did not fit, %" PRIu64 " dlopens), %" PRIu64
	             " dlopens left to the process's next walk; %" PRIu64
	             " templates deleted with their program's file\n",
	        ss.execs_named, r->templates, r->execs_read, ss.loaded_named, r->loaded_read,
	        r->loaded_read_new, r->loaded_read_unfit,
	        r->loaded_read - r->loaded_read_new - r->loaded_read_unfit, r->loaded_later,
	        r->templates_deleted);
}

/* How user stacks were walked, and the unwind tables. */
static void report_unwinding(const struct recorder *r)
{
	const __u64 *st = r->skel->bss->stats;

	if (r->opt->unwind == PROFILE_UNWIND_FP) {
		fprintf(stderr, PROG ": user stacks: by frame pointers (--unwind fp)\n");
	} else {
		struct unwinder_stats us = {0};
		if (r->unwinder)
			unwinder_get_stats(r->unwinder, &us);
		fprintf(stderr,
		        PROG ": user stacks: %" PRIu64 " walked by CFI, %" PRIu64
		             " by CFI and frame pointers (%" PRIu64 " of them while a table was "
		             "being built), %" PRIu64 " by frame pointers alone (process not yet "
		             "known), %" PRIu64 " cut short ([truncated]); %" PRIu64
		             " samples in an exec given the stack that called it%s; %" PRIu64
		             " in a uprobe's step walked from the probed instruction\n",
		        (uint64_t)st[PROFILE_STAT_UNWIND_CFI],
		        (uint64_t)st[PROFILE_STAT_UNWIND_MIXED],
		        (uint64_t)st[PROFILE_STAT_UNWIND_PENDING],
		        (uint64_t)st[PROFILE_STAT_UNWIND_FP],
		        (uint64_t)st[PROFILE_STAT_UNWIND_TRUNCATED],
		        (uint64_t)st[PROFILE_STAT_EXEC_STACK],
		        r->exec_begin_link ? ""
		                           : " (off: no tracepoint sched_prepare_exec, Linux 6.10)",
		        (uint64_t)st[PROFILE_STAT_UPROBE_STEP]);
		fprintf(stderr,
		        PROG ": walks without a list (process not read yet): %" PRIu64
		             "; frames whose table was found by their file (vma): %" PRIu64
		             "; vma lookups refused (busy): %" PRIu64 "%s\n",
		        (uint64_t)st[PROFILE_STAT_UNWIND_NO_LIST],
		        (uint64_t)st[PROFILE_STAT_VMA_FOUND], (uint64_t)st[PROFILE_STAT_VMA_BUSY],
		        r->skel->rodata->vma_known ? "" : " (off: no vm_area_struct offsets)");
		fprintf(stderr,
		        PROG ": unwind tables: %" PRIu64 " files (%" PRIu64
		             " rows; %.1f MiB of %.0f MiB in use at the end;"
		             " tables freed %" PRIu64 ", rows reused %" PRIu64 ")"
		             " built in %.3f s (slowest %.3f s: %s); %" PRIu64
		             " without CFI, %" PRIu64 " refused, %" PRIu64
		             " over --unwind-memory; %" PRIu64
		             " mappings past %d per process; %" PRIu64
		             " walked stacks lost (map full); %" PRIu64
		             " process lists written (%" PRIu64 " of them ancestors'); %" PRIu64
		             " processes read again at a walk's request (a pc in no mapping, or"
		             " a dlopen since)\n",
		        us.tables, us.rows,
		        (double)us.rows_in_use * sizeof(struct unwind_row) / 1048576.0,
		        (double)r->opt->unwind_memory / 1048576.0, us.tables_freed, us.rows_reused,
		        us.build_seconds, us.slowest_seconds, us.slowest[0] ? us.slowest : "-",
		        us.no_cfi, us.refused, us.over_cap, us.map_overflow, UNWIND_MAX_MAPS,
		        (uint64_t)st[PROFILE_STAT_USTACKS_FULL], us.processes, us.ancestors,
		        us.rereads);
	}
}

/* JIT frames, and Python's walker and names. */
static void report_runtimes(const struct recorder *r)
{
	const __u64 *st = r->skel->bss->stats;

	const struct late_stats *ls = &r->late_stats;
	fprintf(stderr,
	        PROG ": JIT frames without a perf map entry: %" PRIu64 " samples (%" PRIu64
	             " held, at most %.1f KiB); %" PRIu64 " named later, %" PRIu64
	             " stored unnamed at their process's exit or the end, %" PRIu64
	             " stored unnamed over --jit-memory, %" PRIu64 " over --jit-wait\n",
	        ls->seen, ls->held, (double)ls->peak_bytes / 1024.0, ls->named, ls->unnamed,
	        ls->over_memory, ls->over_time);
	if (python_walks(r->opt)) {
		struct symbolize_python_stats ps;
		struct unwinder_stats pus = {0};
		symbolize_python_get_stats(r->sym, &ps);
		if (r->unwinder)
			unwinder_get_stats(r->unwinder, &pus);
		fprintf(stderr,
		        PROG ": python: %" PRIu64 " interpreter entries written for the walker "
		             "(one per reading of a process's maps); %" PRIu64
		             " user stacks with Python frames; %" PRIu64
		             " Python walks cut short (%" PRIu64 " deeper than %d frames, %" PRIu64
		             " memory unreadable, %" PRIu64 " not a code object, %" PRIu64
		             " frames ended early); %" PRIu64
		             " evaluations in threads without a Python state; %" PRIu64
		             " code objects read (%" PRIu64 " cached at the end), %" PRIu64
		             " frames not named (code gone); %" PRIu64 " stacks lost (map full)\n",
		        pus.python, (uint64_t)st[PROFILE_STAT_PY_WALKS],
		        (uint64_t)(st[PROFILE_STAT_PY_CUT_DEPTH] + st[PROFILE_STAT_PY_CUT_READ] +
		                   st[PROFILE_STAT_PY_CUT_NOT_CODE] +
		                   st[PROFILE_STAT_PY_CUT_CHAIN]),
		        (uint64_t)st[PROFILE_STAT_PY_CUT_DEPTH], PROFILE_PY_MAX_FRAMES,
		        (uint64_t)st[PROFILE_STAT_PY_CUT_READ],
		        (uint64_t)st[PROFILE_STAT_PY_CUT_NOT_CODE],
		        (uint64_t)st[PROFILE_STAT_PY_CUT_CHAIN],
		        (uint64_t)st[PROFILE_STAT_PY_NO_THREAD], ps.reads, ps.cached, ps.gone,
		        (uint64_t)st[PROFILE_STAT_PYSTACKS_FULL]);
		if (ps.unknown)
			fprintf(stderr,
			        PROG ": python: %" PRIu64
			             " interpreter files of a version not known "
			             "(the last %u.%u): their processes show native frames only; "
			             "known: 3.11\n",
			        ps.unknown, ps.unknown_major, ps.unknown_minor);
	}
}

void record_report(struct recorder *r, double wall, double loop_cpu)
{
	if (!r->opt->verbose) {
		report_short(r, wall);
		return;
	}
	char line[1024];
	int n = 0;
	line[0] = '\0';
	if (r->opt->ev_flags[PROFILE_EV_CPU])
		unnamed_item(r, line, sizeof(line), &n);
	if (n)
		fprintf(stderr, PROG ": warning: %s\n", line);
	report_events(r);
	report_samples(r, wall);
	report_symbolizer(r, wall, loop_cpu);
	report_unwinding(r);
	report_runtimes(r);
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	if (r->stats_fd >= 0 &&
	    bpf_obj_get_info_by_fd(bpf_program__fd(r->skel->progs.do_sample), &info, &len) == 0)
		fprintf(stderr,
		        PROG ": do_sample: %llu runs, %.3f s in all, %.1f us each on average\n",
		        (unsigned long long)info.run_cnt, (double)info.run_time_ns / 1e9,
		        info.run_cnt ? (double)info.run_time_ns / 1e3 / (double)info.run_cnt : 0.0);
	unsigned lw = record_labels_want(r->labels);
	if (lw)
		fprintf(stderr,
		        PROG ": labels:%s%s%s%s%s; cgroups under %s, %" PRIu64
		             " ids not resolved ([unknown]: removed before their drain)\n",
		        lw & RECORD_LABEL_CGROUP ? " cgroup" : "",
		        lw & RECORD_LABEL_CONTAINER ? " container" : "",
		        lw & RECORD_LABEL_THREAD ? " thread" : "",
		        lw & RECORD_LABEL_EXE ? " exe" : "",
		        lw & RECORD_LABEL_CMDLINE ? " cmdline" : "",
		        record_labels_cgroup_mount(r->labels)
		                ? record_labels_cgroup_mount(r->labels)
		                : "(none)",
		        record_labels_unresolved(r->labels));
	if (r->opt->retention)
		fprintf(stderr,
		        PROG ": retention %" PRId64 " s: deleted %" PRIu64 " time buckets (%" PRIu64
		             " samples) older than that\n",
		        r->opt->retention, r->pruned_buckets, r->pruned_samples);
}
