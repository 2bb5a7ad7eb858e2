/*
 * perfdata.c — the perf.data importer: reads what `perf record` writes,
 * without perf, and stores what `perf script | stackcollapse-perf.pl`
 * would print for it.
 *
 * The file (tools/perf/Documentation/perf.data-file-format.txt): a header
 * with the attrs section (one perf_event_attr and its sample ids per
 * event), the data section (records) and a bitmap of feature sections
 * that follow the data.  The features read are BUILD_ID (the build id of
 * every file samples hit, so files are found in perf's build-id cache and
 * /usr/lib/debug), EVENT_DESC (the events' names), CMDLINE (kept for
 * messages) and CLOCK_DATA (with `perf record -k`, an anchor that turns
 * sample times into wall-clock seconds; without it samples carry perf's
 * clock, seconds since boot, as perf script text does).  Pipe-mode files
 * (`perf record -o -`) carry their attrs as HEADER_ATTR records instead.
 *
 * Records: MMAP and MMAP2 (executable mappings, with MMAP2's build id when
 * there is one), COMM (a thread's name; with the exec flag, a new
 * program), FORK (a child starts with its parent's name and mappings),
 * EXIT, and SAMPLE, decoded by its event's sample_type.  A sample's stack
 * is its callchain (`-g`): entries between PERF_CONTEXT_* markers are
 * kernel or user addresses, leaf first, looked up as they are (as perf
 * does; a return address is not stepped back into its call); a callchain
 * holding a context perf does not know is dropped whole, as perf drops
 * it; without a callchain, the sample's ip alone.  With `--call-graph
 * dwarf` the user part is unwound from the copied stack and registers
 * (ctx->sym->unwind, libdw's unwinder); where that fails, it is the
 * callchain's user entries (the sample ip), as a recording without -g.
 * Addresses are named by ctx->sym, as the live collector names them.
 *
 * Series: binary = the thread's comm (with --by-thread the process's, its
 * main thread's, and the thread's comm the label thread=), version --version
 * or "default", event = the event's name without perf's modifiers, unit
 * nanoseconds for cpu-clock and task-clock, else count; weight = the
 * sample's period (1 without one).  Only one event is kept unless --event
 * or --all-events: the first of the file's events that has samples
 * (first_sampled; in pipe mode, the first event sampled).  Errors name
 * the byte offset: "FILE: offset N: expected ...".  The file is read
 * mapped whole (a pipe is read whole).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#include "perfdata-internal.h"

/* ---- threads ---------------------------------------------------------------- */

static struct thread *thread_slot(struct pd *p, uint32_t tid, bool add)
{
	if (add && (p->threads_used + 1) * 2 > p->threads_mask + 1) {
		size_t ncap = (p->threads_mask + 1) * 2;
		struct thread *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return NULL;
		for (size_t i = 0; i <= p->threads_mask; i++) {
			if (!p->threads[i].name)
				continue;
			size_t s = perfdata_mix(p->threads[i].tid) & (ncap - 1);
			while (nt[s].name)
				s = (s + 1) & (ncap - 1);
			nt[s] = p->threads[i];
		}
		free(p->threads);
		p->threads = nt;
		p->threads_mask = ncap - 1;
	}
	size_t s = perfdata_mix(tid) & p->threads_mask;
	while (p->threads[s].name && p->threads[s].tid != tid)
		s = (s + 1) & p->threads_mask;
	if (!p->threads[s].name && !add)
		return NULL;
	return &p->threads[s];
}

static int thread_set(struct pd *p, uint32_t tid, const char *name, size_t n)
{
	struct thread *t = thread_slot(p, tid, true);
	if (!t)
		return -ENOMEM;
	char *c = strndup(name, n);
	if (!c)
		return -ENOMEM;
	for (char *q = c; *q; q++)
		if (*q == ' ')
			*q = '_';
	if (!t->name)
		p->threads_used++;
	free(t->name);
	t->name = c;
	t->tid = tid;
	return 0;
}

static uint32_t *gen_of(struct pd *p, uint32_t pid)
{
	return &p->gen[perfdata_mix(pid) & 4095];
}

/* ---- records -------------------------------------------------------------- */

/* The attr a record belongs to: by its sample id when there are several
 * events, else the only one.  rec/size: the record after its header; for
 * a SAMPLE the id is first (IDENTIFIER) or at its place in the layout,
 * for other records at the end of their sample_id trailer. */
static int record_attr(const struct pd *p, const uint8_t *rec, size_t size, bool sample)
{
	if (p->nattrs == 1)
		return 0;
	uint64_t st = p->attrs[0].sample_type;
	if (st & S_IDENTIFIER) {
		if (size < 8)
			return -1;
		return perfdata_attr_of_id(p, sample ? rd64(rec) : rd64(rec + size - 8));
	}
	if (!(st & S_ID))
		return 0;
	if (sample) {
		size_t o = 8 * !!(st & S_IP) + 8 * !!(st & S_TID) + 8 * !!(st & S_TIME) +
		           8 * !!(st & S_ADDR);
		return o + 8 <= size ? perfdata_attr_of_id(p, rd64(rec + o)) : -1;
	}
	size_t o = 8 * !!(st & S_CPU) + 8 * !!(st & S_STREAM_ID) + 8; /* from the end */
	return o <= size ? perfdata_attr_of_id(p, rd64(rec + size - o)) : -1;
}

struct sample {
	uint32_t pid, tid;
	uint64_t ip, time, period;
	const uint64_t *chain; /* unaligned: read with rd64 */
	const uint8_t *chain_p;
	uint64_t nchain;
	const uint8_t *regs; /* regs_user values (abi != 0), nregs of them */
	uint64_t nregs, abi;
	const uint8_t *stack;
	uint64_t stack_size;
};

/* Decodes a SAMPLE body per sample_type.  Returns 0, or -1 when it runs
 * past the record. */
static int decode_sample(const struct attr *a, const uint8_t *r, size_t n, struct sample *s)
{
	uint64_t st = a->sample_type;
	size_t o = 0;
#define NEED(k)                                                                                    \
	do {                                                                                       \
		if ((k) > n - o)                                                                   \
			return -1;                                                                 \
	} while (0)

	memset(s, 0, sizeof(*s));
	s->period = 1;
	if (st & S_IDENTIFIER) {
		NEED(8);
		o += 8;
	}
	if (st & S_IP) {
		NEED(8);
		s->ip = rd64(r + o);
		o += 8;
	}
	if (st & S_TID) {
		NEED(8);
		s->pid = rd32(r + o);
		s->tid = rd32(r + o + 4);
		o += 8;
	}
	if (st & S_TIME) {
		NEED(8);
		s->time = rd64(r + o);
		o += 8;
	}
	if (st & S_ADDR) {
		NEED(8);
		o += 8;
	}
	if (st & S_ID) {
		NEED(8);
		o += 8;
	}
	if (st & S_STREAM_ID) {
		NEED(8);
		o += 8;
	}
	if (st & S_CPU) {
		NEED(8);
		o += 8;
	}
	if (st & S_PERIOD) {
		NEED(8);
		s->period = rd64(r + o);
		o += 8;
	}
	if (st & S_READ) {
		uint64_t rf = a->read_format;
		size_t per = 8 + 8 * !!(rf & READ_ID) + 8 * !!(rf & READ_LOST);
		if (rf & READ_GROUP) {
			NEED(8);
			uint64_t nr = rd64(r + o);
			o += 8;
			size_t head = 8 * !!(rf & READ_TOTAL_TIME_ENABLED) +
			              8 * !!(rf & READ_TOTAL_TIME_RUNNING);
			NEED(head);
			o += head;
			if (nr > (n - o) / per)
				return -1;
			o += (size_t)nr * per;
		} else {
			size_t k = per + 8 * !!(rf & READ_TOTAL_TIME_ENABLED) +
			           8 * !!(rf & READ_TOTAL_TIME_RUNNING);
			NEED(k);
			o += k;
		}
	}
	if (st & S_CALLCHAIN) {
		NEED(8);
		s->nchain = rd64(r + o);
		o += 8;
		if (s->nchain > (n - o) / 8)
			return -1;
		s->chain_p = r + o;
		o += (size_t)s->nchain * 8;
	}
	if (st & S_RAW) {
		NEED(4);
		uint32_t k = rd32(r + o);
		NEED((size_t)4 + k);
		o += 4 + k;
		o = (o + 7) & ~(size_t)7; /* the raw block pads to 8 bytes with its size */
		if (o > n)
			return -1;
	}
	if (st & S_BRANCH_STACK) {
		NEED(8);
		uint64_t nr = rd64(r + o);
		o += 8;
		if (a->branch_sample_type & BRANCH_HW_INDEX) {
			NEED(8);
			o += 8;
		}
		if (nr > (n - o) / 24)
			return -1;
		o += (size_t)nr * 24;
	}
	if (st & S_REGS_USER) {
		NEED(8);
		s->abi = rd64(r + o);
		o += 8;
		if (s->abi) {
			s->nregs = (uint64_t)__builtin_popcountll(a->regs_user_mask);
			NEED((size_t)s->nregs * 8);
			s->regs = r + o;
			o += (size_t)s->nregs * 8;
		}
	}
	if (st & S_STACK_USER) {
		NEED(8);
		uint64_t size = rd64(r + o);
		o += 8;
		if (size > n - o)
			return -1;
		s->stack = r + o;
		o += (size_t)size;
		if (size) {
			NEED(8);
			uint64_t dyn = rd64(r + o);
			s->stack_size = dyn < size ? dyn : size;
		}
	}
#undef NEED
	return 0;
}

/* Whether samples of attr i are kept: the first event sampled unless
 * --event or --all-events say otherwise. */
static int attr_wanted(struct pd *p, int i)
{
	struct attr *a = &p->attrs[i];
	const struct import_options *o = p->ctx->opt;

	if (a->kept >= 0)
		return a->kept;
	if (o && o->all_events) {
		a->kept = 1;
	} else if (o && o->event) {
		size_t wl = strlen(o->event);
		a->kept = strcmp(a->name, o->event) == 0 ||
		          (!strchr(o->event, ':') && strncmp(a->name, o->event, wl) == 0 &&
		           a->name[wl] == ':');
	} else if (p->first_attr < 0) {
		p->first_attr = i;
		a->kept = 1;
	} else {
		a->kept = strcmp(a->name, p->attrs[p->first_attr].name) == 0;
	}
	return a->kept;
}

/* Symbolizes the sample's stack (leaf first in ips[0..n), markers mark
 * kernel and user parts) into p->frames root first; returns the count. */
static int stack_frames(struct pd *p, uint32_t pid, const uint64_t *ips, size_t n,
                        const uint8_t *kernel, size_t *nf)
{
	struct import_ctx *ctx = p->ctx;
	int rc;

	*nf = 0;
	if (ctx->sym && ctx->sym->kernel_prefetch) {
		/* the kernel part leads the chain: name it in one go */
		size_t nk = 0;
		while (nk < n && kernel[nk])
			nk++;
		if (nk > 1) {
			rc = ctx->sym->kernel_prefetch(ctx->sym->ctx, ips, nk);
			if (rc < 0)
				return rc;
		}
	}
	for (size_t k = n; k-- > 0;) {
		struct store_frame f[FRAMES_PER_PC];
		/* Return addresses are looked up as they are, as perf script
		 * does (it does not step back into the call): a call that
		 * ends a function is charged to the symbol after it, as perf
		 * shows it. */
		bool caller = false;
		if (kernel[k]) {
			if (ctx->sym) {
				rc = ctx->sym->kernel(ctx->sym->ctx, ips[k], caller, f);
			} else {
				memset(f, 0, sizeof(*f));
				f->name = "[kernel.kallsyms]";
				f->name_len = 17;
				f->kind = STORE_FRAME_KERNEL;
				rc = 1;
			}
		} else {
			rc = import_addr_frames(ctx, NULL, pid, ips[k], caller, f, FRAMES_PER_PC);
		}
		if (rc < 0)
			return rc;
		/* f[0] is the function, then those inlined in it, outermost first */
		size_t got = (size_t)(kernel[k] ? 1 : rc);
		rc = import_grow((void **)&p->frames, &p->frames_cap, *nf + got,
		                 sizeof(*p->frames));
		if (rc < 0)
			return rc;
		memcpy(p->frames + *nf, f, got * sizeof(*f));
		*nf += got;
	}
	return 0;
}

enum { KEY_USER_PID, KEY_KERNEL, KEY_USER_FILE };

/* What the frames of the stack p->ips[0..n) (p->kernel marking its kernel
 * entries) of pid depend on, into p->key_words (two per entry) and
 * p->key_kinds: a kernel address itself; a user address that the
 * symbols' user_files() ties to a file and an offset in it (or to the
 * token of addresses named "[unknown]" whatever they are), those, so that
 * any process running the same code shares the key; any other user
 * address, the address with pid and its mappings' generation (JIT code,
 * or no user_files() to tell). */
static void stack_key(struct pd *p, uint32_t pid, size_t n)
{
	const struct import_symbols *sym = p->ctx->sym;
	uint64_t here = (uint64_t)pid << 32 | *gen_of(p, pid);
	uint64_t *w = p->key_words;
	size_t k = 0;

	while (k < n && p->kernel[k]) {
		w[2 * k] = p->ips[k];
		w[2 * k + 1] = 0;
		p->key_kinds[k++] = KEY_KERNEL;
	}
	size_t first_user = k;
	bool files = sym && sym->user_files;
	if (files && n > first_user)
		sym->user_files(sym->ctx, pid, p->ips + first_user, n - first_user,
		                p->key_files + first_user, p->key_offs + first_user);
	for (; k < n; k++) {
		if (p->kernel[k]) {
			w[2 * k] = p->ips[k];
			w[2 * k + 1] = 0;
			p->key_kinds[k] = KEY_KERNEL;
		} else if (files && p->key_files[k]) {
			w[2 * k] = (uint64_t)(uintptr_t)p->key_files[k];
			w[2 * k + 1] = p->key_offs[k];
			p->key_kinds[k] = KEY_USER_FILE;
		} else {
			w[2 * k] = p->ips[k];
			w[2 * k + 1] = here;
			p->key_kinds[k] = KEY_USER_PID;
		}
	}
}

static int64_t sample_when(const struct pd *p, const struct attr *a, const struct sample *s)
{
	if (!(a->sample_type & S_TIME))
		return p->ctx->opt ? p->ctx->opt->now : 0;
	if (p->have_clock) {
		/* wall = anchor's wall time + (sample - anchor) on perf's
		 * clock; a damaged anchor that overflows gives a time the
		 * store refuses with a message */
		int64_t d, ns;
		if (__builtin_sub_overflow((int64_t)s->time, p->clock_perf_ns, &d) ||
		    __builtin_add_overflow(p->clock_wall_ns, d, &ns))
			return INT64_MAX;
		return ns / 1000000000;
	}
	/* perf's own clock; --clock-offset turns it into Unix time */
	return (int64_t)(s->time / 1000000000u) + (p->ctx->opt ? p->ctx->opt->clock_offset : 0);
}

/* The sample's time in microseconds, on the clock sample_when() gives
 * seconds of (the same instant, to the microsecond): 0 and *us set, or
 * -ERANGE when it does not fit. */
static int sample_when_us(const struct pd *p, const struct sample *s, int64_t *us)
{
	int64_t ns;

	if (p->have_clock) {
		int64_t d;
		if (__builtin_sub_overflow((int64_t)s->time, p->clock_perf_ns, &d) ||
		    __builtin_add_overflow(p->clock_wall_ns, d, &ns))
			return -ERANGE;
		*us = ns / 1000 - (ns % 1000 < 0); /* rounded down */
		return 0;
	}
	int64_t off = p->ctx->opt ? p->ctx->opt->clock_offset : 0;
	if (s->time > (uint64_t)INT64_MAX || __builtin_mul_overflow(off, 1000000, &off) ||
	    __builtin_add_overflow((int64_t)(s->time / 1000u), off, us))
		return -ERANGE;
	return 0;
}

static int handle_sample(struct pd *p, size_t off, uint16_t misc, const uint8_t *r, size_t n)
{
	struct import_ctx *ctx = p->ctx;
	int ai = record_attr(p, r, n, true);
	if (ai < 0)
		return import_fail_at(ctx, off,
		                      "expected a sample whose id names one of the %zu events",
		                      p->nattrs);
	struct attr *a = &p->attrs[ai];
	int want = attr_wanted(p, ai);
	if (want < 0)
		return want;
	if (!want) {
		ctx->skipped++;
		p->skipped_other++;
		return 0;
	}
	struct sample s;
	if (decode_sample(a, r, n, &s) < 0)
		return import_fail_at(ctx, off,
		                      "expected a sample of the fields its event's sample_type "
		                      "names, got a record of %zu bytes",
		                      n + 8);

	/* ips, leaf first, with their context */
	uint8_t *kernel = p->kernel;
	size_t nips = 0;
	int rc = import_grow((void **)&p->ips, &p->ips_cap, MAX_STACK, sizeof(*p->ips));
	if (rc < 0)
		return rc;
	if (s.nchain) {
		int mode = (misc & MISC_CPUMODE_MASK) == MISC_KERNEL ? 1 : 0, skip = 0;
		for (uint64_t i = 0; i < s.nchain && nips < MAX_STACK; i++) {
			uint64_t ip = rd64(s.chain_p + 8 * i);
			if (ip >= CONTEXT_MAX) {
				/* perf drops a whole callchain that holds a
				 * context it does not know (garbage such as -1
				 * from a frame-pointer walk): the sample keeps
				 * no frames, as perf script prints it */
				if (ip != CONTEXT_KERNEL && ip != CONTEXT_USER &&
				    ip != CONTEXT_HV && ip != CONTEXT_GUEST &&
				    ip != CONTEXT_GUEST_KERNEL && ip != CONTEXT_GUEST_USER) {
					nips = 0;
					break;
				}
				mode = ip == CONTEXT_KERNEL ? 1 : 0;
				skip = ip != CONTEXT_KERNEL && ip != CONTEXT_USER;
				continue;
			}
			if (skip)
				continue;
			p->ips[nips] = ip;
			kernel[nips] = (uint8_t)mode;
			nips++;
		}
	} else if (a->sample_type & S_IP) {
		p->ips[0] = s.ip;
		kernel[0] = (misc & MISC_CPUMODE_MASK) == MISC_KERNEL;
		nips = 1;
	}
	/* --call-graph dwarf: the user part from the copied stack */
	if (s.stack && s.regs && ctx->sym && ctx->sym->unwind) {
		/* the kernel entries lead the chain and stay; the user ones
		 * after them (the sampled pc) are replaced when unwinding
		 * succeeds, and kept when it does not */
		size_t k = 0;
		while (k < nips && kernel[k])
			k++;
		size_t first_user = k, room = MAX_STACK - k;
		uint64_t regs[32];
		size_t nr = s.nregs < 32 ? (size_t)s.nregs : 32;
		for (size_t i = 0; i < nr; i++)
			regs[i] = rd64(s.regs + 8 * i);
		int got =
		        ctx->sym->unwind(ctx->sym->ctx, s.pid, s.tid, a->regs_user_mask, regs, nr,
		                         s.stack, (size_t)s.stack_size, p->ips + first_user, room);
		if (got > 0) {
			for (size_t i = 0; i < (size_t)got; i++)
				kernel[first_user + i] = 0;
			nips = first_user + (size_t)got;
			p->unwound++;
		} else {
			p->unwind_failed++;
		}
	}

	const struct thread *t = thread_slot(p, s.tid, false);
	if (!t)
		t = thread_slot(p, s.pid, false);
	const char *comm = t ? t->name : "[unknown]";
	size_t clen = strlen(comm);
	/* --by-thread: the binary is the process's name (its main thread's
	 * comm), the thread's name a label. */
	const char *binary = comm;
	bool by_thread = ctx->opt && ctx->opt->by_thread;
	if (by_thread) {
		const struct thread *pt = thread_slot(p, s.pid, false);
		if (pt)
			binary = pt->name;
	}

	/* the stack cache: (comm, event, the stack as stack_key has it) ->
	 * (series, node) */
	XXH3_state_t st;
	XXH3_128bits_reset(&st);
	uint32_t head = (uint32_t)ai;
	XXH3_128bits_update(&st, &head, sizeof(head));
	XXH3_128bits_update(&st, comm, clen + 1);
	if (by_thread)
		XXH3_128bits_update(&st, binary, strlen(binary) + 1);
	stack_key(p, s.pid, nips);
	XXH3_128bits_update(&st, p->key_words, 2 * nips * sizeof(*p->key_words));
	XXH3_128bits_update(&st, p->key_kinds, nips);
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	struct stackcache_key key = {h.low64, h.high64};
	uint32_t series, node;
	if (!stackcache_get(p->stacks, key, &series, &node)) {
		size_t nf;
		rc = stack_frames(p, s.pid, p->ips, nips, kernel, &nf);
		if (rc < 0)
			return rc;
		rc = import_path(ctx, p->frames, nf, &node);
		if (rc < 0)
			return rc;
		const char *unit =
		        a->base == 9 && strncmp(a->name, "cpu-clock", 9) == 0      ? "nanoseconds"
		        : a->base == 10 && strncmp(a->name, "task-clock", 10) == 0 ? "nanoseconds"
		                                                                   : "count";
		char *ev = strndup(a->name, a->base);
		if (!ev)
			return -ENOMEM;
		char *labels = NULL, *name = NULL;
		if (by_thread) {
			rc = store_label_value_clean(comm, clen, &name);
			if (rc == 0) {
				struct store_label l = {STORE_LABEL_THREAD, name};
				rc = store_labels_make(&l, 1, &labels);
			}
		}
		if (rc == 0)
			rc = import_series_labels(ctx, binary, NULL, *ev ? ev : NO_EVENT_NAME, unit,
			                          labels, &series);
		free(labels);
		free(name);
		free(ev);
		if (rc < 0)
			return rc;
		stackcache_put(p->stacks, key, series, node);
	}
	if ((a->sample_type & S_TIME) && ctx->opt && ctx->opt->samples) {
		struct store_sample smp = {
		        .node = node,
		        .pid = (a->sample_type & S_TID) && s.pid != UINT32_MAX ? s.pid : 0,
		        .tid = (a->sample_type & S_TID) && s.tid != UINT32_MAX ? s.tid : 0,
		        .weight = s.period ? s.period : 1,
		};
		if (sample_when_us(p, &s, &smp.time_us) < 0)
			return import_fail_at(ctx, off,
			                      "sample time %llu ns does not fit in 64 bits of "
			                      "microseconds on the wall clock",
			                      (unsigned long long)s.time);
		rc = import_sample(ctx, &p->sums, 0, series, &smp);
	} else {
		rc = import_add(ctx, &p->sums, 0, series, sample_when(p, a, &s), node, 1,
		                s.period ? s.period : 1);
	}
	if (rc < 0)
		return rc;
	ctx->samples++;
	return 0;
}

/* MMAP, MMAP2: an executable mapping of a process. */
static int handle_mmap(struct pd *p, size_t off, uint32_t type, uint16_t misc, const uint8_t *r,
                       size_t n, const struct bids *bids)
{
	struct import_ctx *ctx = p->ctx;
	size_t fixed = type == R_MMAP ? 32 : 32 + 24 + 8;
	if (n < fixed + 1)
		return import_fail_at(ctx, off,
		                      "expected an mmap record of more than %zu bytes, got %zu",
		                      fixed + 8, n + 8);
	uint32_t pid = rd32(r);
	uint64_t start = rd64(r + 8), len = rd64(r + 16), pgoff = rd64(r + 24);
	const uint8_t *bid = NULL;
	size_t bid_len = 0;
	if (type == R_MMAP2) {
		uint32_t prot = rd32(r + 56);
		if (!(prot & 4)) /* PROT_EXEC */
			return 0;
		if (misc & MISC_MMAP_BUILDID) {
			bid_len = r[32] <= 20 ? r[32] : 20;
			bid = r + 36;
		}
	} else if (misc & MISC_MMAP_DATA) {
		return 0;
	}
	if ((misc & MISC_CPUMODE_MASK) == MISC_KERNEL || pid == UINT32_MAX)
		return 0; /* the kernel and its modules: named by kallsyms */
	const char *path = (const char *)r + fixed;
	size_t pl = strnlen(path, n - fixed);
	if (pl == n - fixed)
		return import_fail_at(ctx, off,
		                      "expected a NUL-terminated file name in an mmap record");
	if (!bid && bids) {
		const struct bid *b = perfdata_bids_find(bids, path);
		if (b) {
			bid = b->id;
			bid_len = b->len;
		}
	}
	(*gen_of(p, pid))++;
	if (!ctx->sym || len == 0 || start + len < start)
		return 0;
	/* anonymous memory, as perf's is_anon_memory() tells it: JIT code,
	 * named from /tmp/perf-PID.map when there is one */
	if (strcmp(path, "//anon") == 0 || strncmp(path, "/anon_hugepage", 14) == 0 ||
	    strncmp(path, "/dev/zero", 9) == 0 || strncmp(path, "/SYSV", 5) == 0 ||
	    strncmp(path, "[anon", 5) == 0)
		path = "";
	return ctx->sym->map(ctx->sym->ctx, pid, start, start + len, pgoff, path, bid, bid_len);
}

static int handle_comm(struct pd *p, size_t off, uint16_t misc, const uint8_t *r, size_t n)
{
	if (n < 9)
		return import_fail_at(p->ctx, off, "expected a comm record with a name");
	uint32_t pid = rd32(r), tid = rd32(r + 4);
	const char *name = (const char *)r + 8;
	size_t nl = strnlen(name, n - 8);
	int rc = thread_set(p, tid, name, nl);
	if (rc < 0)
		return rc;
	if ((misc & MISC_COMM_EXEC) && p->ctx->sym) {
		/* a new program: its old mappings are gone */
		(*gen_of(p, pid))++;
		struct thread *t = thread_slot(p, tid, false);
		return p->ctx->sym->process(p->ctx->sym->ctx, pid, t->name);
	}
	return 0;
}

static int handle_fork(struct pd *p, size_t off, const uint8_t *r, size_t n)
{
	if (n < 16)
		return import_fail_at(p->ctx, off, "expected a fork record of 24 bytes or more");
	uint32_t pid = rd32(r), ppid = rd32(r + 4), tid = rd32(r + 8), ptid = rd32(r + 12);
	const struct thread *parent = thread_slot(p, ptid, false);
	if (!parent)
		parent = thread_slot(p, ppid, false);
	if (parent) {
		char *name = strdup(parent->name);
		if (!name)
			return -ENOMEM;
		int rc = thread_set(p, tid, name, strlen(name));
		free(name);
		if (rc < 0)
			return rc;
	}
	if (pid != ppid && p->ctx->sym) {
		(*gen_of(p, pid))++;
		return p->ctx->sym->fork(p->ctx->sym->ctx, ppid, pid);
	}
	return 0;
}

/* One record's handler, as the record was found at off. */
static int handle_record(struct pd *p, size_t off, const struct bids *bids)
{
	uint32_t type = rd32(p->buf + off);
	uint16_t misc = rd16(p->buf + off + 4), size = rd16(p->buf + off + 6);
	const uint8_t *r = p->buf + off + 8;
	size_t n = size - 8u;

	switch (type) {
	case R_SAMPLE: return handle_sample(p, off, misc, r, n);
	case R_MMAP:
	case R_MMAP2: return handle_mmap(p, off, type, misc, r, n, bids);
	case R_COMM: return handle_comm(p, off, misc, r, n);
	case R_FORK: return handle_fork(p, off, r, n);
	default: return 0;
	}
}

/* The time of a kernel record: a sample's TIME field, another record's in
 * its sample_id trailer (sample_id_all).  Returns false when it has none. */
static bool record_time(const struct pd *p, uint32_t type, const uint8_t *r, size_t n, uint64_t *t)
{
	int ai = record_attr(p, r, n, type == R_SAMPLE);
	if (ai < 0)
		ai = 0;
	const struct attr *a = &p->attrs[ai];
	uint64_t st = a->sample_type;
	if (!(st & S_TIME))
		return false;
	if (type == R_SAMPLE) {
		size_t o = 8 * !!(st & S_IDENTIFIER) + 8 * !!(st & S_IP) + 8 * !!(st & S_TID);
		if (o + 8 > n)
			return false;
		*t = rd64(r + o);
		return true;
	}
	if (!a->sample_id_all)
		return false;
	size_t trailer = 8 * (!!(st & S_TID) + 1 + !!(st & S_ID) + !!(st & S_STREAM_ID) +
	                      !!(st & S_CPU) + !!(st & S_IDENTIFIER));
	if (trailer > n)
		return false;
	*t = rd64(r + n - trailer + 8 * !!(st & S_TID));
	return true;
}

struct pending {
	uint64_t time, seq;
	size_t off;
};

static int pending_cmp(const void *x, const void *y)
{
	const struct pending *a = x, *b = y;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Handles the queued records with a time up to `upto` in time order (as
 * perf's ordered events do), keeping the rest queued. */
static int flush_pending(struct pd *p, struct pending *q, size_t *nq, uint64_t upto,
                         const struct bids *bids)
{
	if (*nq == 0)
		return 0; /* q may still be NULL */
	bool sorted = true;
	for (size_t i = 1; i < *nq && sorted; i++)
		sorted = pending_cmp(&q[i - 1], &q[i]) <= 0;
	if (!sorted)
		qsort(q, *nq, sizeof(*q), pending_cmp);
	size_t i = 0;
	for (; i < *nq && q[i].time <= upto; i++) {
		int rc = handle_record(p, q[i].off, bids);
		if (rc < 0)
			return rc;
	}
	memmove(q, q + i, (*nq - i) * sizeof(*q));
	*nq -= i;
	return 0;
}

/* Reads the records of data[off, end).  Kernel records are handled in
 * time order: perf writes each CPU's buffer in turn, so a process's comm
 * or mappings can follow samples taken after them; like perf, records are
 * sorted within FINISHED_ROUND windows (a round's records are all older
 * than the next round's end).  A record without a time takes the time of
 * the one before it. */
static int read_records(struct pd *p, size_t off, size_t end, const struct bids *bids)
{
	struct import_ctx *ctx = p->ctx;
	uint64_t next_progress = IMPORT_PROGRESS_EVERY, last_time = 0, round_max = 0, seq = 0;
	uint64_t prev_round_max = 0;
	struct pending *q = NULL;
	size_t nq = 0, qcap = 0;
	int rc = 0;

	while (off < end) {
		if (end - off < 8) {
			rc = import_fail_at(
			        ctx, off,
			        "expected a record header, got %zu bytes at the end of the "
			        "data (is the file truncated?)",
			        end - off);
			goto out;
		}
		uint32_t type = rd32(p->buf + off);
		uint16_t size = rd16(p->buf + off + 6);
		if (size < 8 || size > end - off) {
			rc = import_fail_at(
			        ctx, off, "expected a record of 8 to %zu bytes, got a size of %u%s",
			        end - off, size,
			        size > end - off ? " (is the file truncated?)" : "");
			goto out;
		}
		const uint8_t *r = p->buf + off + 8;
		size_t n = size - 8u;
		if (type == R_HEADER_ATTR) {
			uint32_t asz = n >= 8 ? rd32(r + 4) : 0;
			if (asz < 64 || asz > n) {
				rc = import_fail_at(ctx, off,
				                    "expected an attr record holding an attr");
				goto out;
			}
			rc = perfdata_read_attr(p, off + 8, asz);
			if (rc >= 0)
				rc = perfdata_read_ids(p, &p->attrs[p->nattrs - 1], off + 8 + asz,
				                       n - asz);
			if (rc >= 0)
				rc = perfdata_attr_default_name(&p->attrs[p->nattrs - 1]);
			if (rc >= 0) {
				struct attr *a = &p->attrs[p->nattrs - 1];
				a->base = import_event_base(a->name, strlen(a->name));
				rc = perfdata_ids_build(p);
			}
		} else if (type == R_COMPRESSED) {
			rc = import_fail_at(
			        ctx, off,
			        "expected uncompressed records, got a compressed one (perf "
			        "record -z); decompress with `perf inject -i FILE -o OUT`");
		} else if (type == R_FINISHED_ROUND) {
			rc = flush_pending(p, q, &nq, prev_round_max, bids);
			prev_round_max = round_max;
		} else if (type < R_HEADER_ATTR && p->nattrs) {
			uint64_t t;
			if (record_time(p, type, r, n, &t))
				last_time = t;
			if (last_time > round_max)
				round_max = last_time;
			rc = import_grow((void **)&q, &qcap, nq + 1, sizeof(*q));
			if (rc >= 0)
				q[nq++] = (struct pending){last_time, seq++, off};
		} else if (type < R_HEADER_ATTR) {
			rc = import_fail_at(ctx, off,
			                    "expected the events' attrs before the first record");
		}
		if (rc < 0)
			goto out;
		off += size;
		ctx->bytes = off;
		if (off >= next_progress) {
			next_progress = off + IMPORT_PROGRESS_EVERY;
			if (ctx->progress)
				ctx->progress(ctx);
		}
	}
	rc = flush_pending(p, q, &nq, UINT64_MAX, bids);
out:
	free(q);
	return rc;
}

/* Without --event or --all-events, the event kept is the first of the
 * file's events (in the order perf record was given them) that has
 * samples: a quick walk over the record headers finds it, so the choice
 * does not hang on which of two events' samples taken in the same tick
 * comes first.  Bad records are left for read_records to report. */
static void first_sampled(struct pd *p, size_t off, size_t end)
{
	const struct import_options *o = p->ctx->opt;
	int best = -1;

	if (o && (o->event || o->all_events))
		return;
	while (end - off >= 8) {
		uint16_t size = rd16(p->buf + off + 6);
		if (size < 8 || size > end - off)
			break;
		if (rd32(p->buf + off) == R_SAMPLE) {
			int ai = record_attr(p, p->buf + off + 8, size - 8u, true);
			if (ai >= 0 && (best < 0 || ai < best))
				best = ai;
			if (best == 0)
				break;
		}
		off += size;
	}
	if (best < 0)
		return;
	p->first_attr = best;
	for (size_t i = 0; i < p->nattrs; i++)
		p->attrs[i].kept = strcmp(p->attrs[i].name, p->attrs[best].name) == 0;
}

bool import_perf_data_sniff(const uint8_t *buf, size_t len)
{
	return len >= 8 && memcmp(buf, "PERFILE2", 8) == 0;
}

/* The input in p->buf and p->len: a file is mapped (no copy; *map, to
 * unmap), a pipe is read whole (*buf, to free). */
static int pd_input(struct import_ctx *ctx, struct pd *p, uint8_t **buf, void **map)
{
	struct stat st;
	size_t len;
	int rc;

	*map = MAP_FAILED;
	if (fstat(ctx->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size >= ctx->prefix_len && (uint64_t)st.st_size <= PERFDATA_MAX_BYTES) {
		*map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, ctx->fd, 0);
		/* the prefix cmd-import.c read must be the file's start */
		if (*map != MAP_FAILED && ctx->prefix_len &&
		    memcmp(*map, ctx->prefix, ctx->prefix_len) != 0) {
			munmap(*map, (size_t)st.st_size);
			*map = MAP_FAILED;
		}
	}
	if (*map != MAP_FAILED) {
		len = (size_t)st.st_size;
		ctx->bytes = len;
		madvise(*map, len, MADV_SEQUENTIAL);
		p->buf = *map;
	} else {
		rc = import_read_all(ctx, PERFDATA_MAX_BYTES, buf, &len);
		if (rc < 0)
			return rc;
		p->buf = *buf;
	}
	p->len = len;
	return 0;
}

/* The thread and stack tables, with pid 0 named as perf names the idle
 * task of every CPU, "swapper". */
static int pd_tables(struct pd *p)
{
	p->threads = calloc(1024, sizeof(*p->threads));
	p->threads_mask = 1023;
	p->gen = calloc(4096, sizeof(*p->gen));
	p->stacks = stackcache_new(STACK_SLOTS_LOG2);
	p->key_words = malloc(2 * MAX_STACK * sizeof(*p->key_words));
	p->key_files = malloc(MAX_STACK * sizeof(*p->key_files));
	p->key_offs = malloc(MAX_STACK * sizeof(*p->key_offs));
	if (!p->threads || !p->gen || !p->stacks || !p->key_words || !p->key_files || !p->key_offs)
		return -ENOMEM;
	return thread_set(p, 0, "swapper", 7);
}

/* The attrs section: one event per attr_size-byte entry, each with its
 * sample ids and a name. */
static int pd_read_attrs(struct pd *p, uint64_t ao, uint64_t as, uint64_t attr_size)
{
	int rc;

	for (uint64_t o = ao; o < ao + as; o += attr_size) {
		rc = perfdata_read_attr(p, (size_t)o, (size_t)(attr_size - 16));
		if (rc < 0)
			return rc;
		struct attr *a = &p->attrs[p->nattrs - 1];
		rc = perfdata_read_ids(p, a, rd64(p->buf + o + attr_size - 16),
		                       rd64(p->buf + o + attr_size - 8));
		if (rc >= 0)
			rc = perfdata_attr_default_name(a);
		if (rc < 0)
			return rc;
	}
	if (!p->nattrs)
		return import_fail_at(p->ctx, 24,
		                      "expected at least one event in the attrs section");
	return 0;
}

/* A perf.data file (not a pipe): its header, attrs, features (build ids
 * into *bids) and the records of its data section. */
static int pd_read_file(struct pd *p, struct bids *bids)
{
	struct import_ctx *ctx = p->ctx;
	size_t len = p->len;
	int rc;

	if (rd64(p->buf + 8) < 104 || len < 104)
		return import_fail_at(ctx, 8,
		                      "expected a perf.data header of 104 bytes or more, got %s",
		                      len < 104 ? "a shorter file" : "a smaller header size");
	uint64_t attr_size = rd64(p->buf + 16), ao = rd64(p->buf + 24), as = rd64(p->buf + 32);
	uint64_t d_off = rd64(p->buf + 40), d_size = rd64(p->buf + 48);
	if (attr_size < 64 + 16 || ao > len || as > len - ao || as % attr_size)
		return import_fail_at(ctx, 16,
		                      "expected an attrs section of whole %llu-byte entries inside "
		                      "the file",
		                      (unsigned long long)attr_size);
	if (d_off > len || d_size > len - d_off)
		return import_fail_at(ctx, 40,
		                      "the data section (%llu bytes at %llu) runs past the end of "
		                      "the file (%zu bytes); is it truncated?",
		                      (unsigned long long)d_size, (unsigned long long)d_off, len);
	rc = pd_read_attrs(p, ao, as, attr_size);
	if (rc >= 0)
		rc = perfdata_ids_build(p);
	if (rc >= 0)
		rc = perfdata_read_features(p, p->buf + 72, (size_t)(d_off + d_size), bids);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < p->nattrs; i++)
		p->attrs[i].base = import_event_base(p->attrs[i].name, strlen(p->attrs[i].name));
	first_sampled(p, (size_t)d_off, (size_t)(d_off + d_size));
	return read_records(p, (size_t)d_off, (size_t)(d_off + d_size), bids);
}

/* The warning an import that went through gives: events skipped, or
 * user stacks that could not be unwound. */
static void pd_warn(struct pd *p)
{
	struct import_ctx *ctx = p->ctx;

	if (p->skipped_other && p->first_attr >= 0)
		snprintf(ctx->warning, sizeof(ctx->warning),
		         "kept only event %s; skipped %llu samples of other events (use "
		         "--all-events or --event)",
		         p->attrs[p->first_attr].name, (unsigned long long)p->skipped_other);
	else if (p->unwind_failed)
		snprintf(ctx->warning, sizeof(ctx->warning),
		         "%llu of %llu samples' user stacks could not be unwound from their stack "
		         "copies; they keep the sampled pc only",
		         (unsigned long long)p->unwind_failed,
		         (unsigned long long)(p->unwind_failed + p->unwound));
}

/* Every input byte counts for the series of the first sample kept. */
static int pd_input_bytes(struct pd *p)
{
	uint32_t first = 0;

	for (uint32_t id = 0; id < p->sums.cap; id++)
		if (p->sums.sum[id][0]) {
			first = id;
			break;
		}
	return store_batch_input_bytes(p->ctx->batch, first, p->len);
}

/* Frees what the import holds, p itself and bids staying the caller's. */
static void pd_free(struct pd *p, struct bids *bids)
{
	for (size_t i = 0; i < p->nattrs; i++) {
		free(p->attrs[i].name);
		free(p->attrs[i].ids);
	}
	free(p->id_keys);
	free(p->id_vals);
	if (p->threads)
		for (size_t i = 0; i <= p->threads_mask; i++)
			free(p->threads[i].name);
	free(p->threads);
	free(p->gen);
	stackcache_free(p->stacks);
	free(p->key_words);
	free(p->key_files);
	free(p->key_offs);
	free(p->ips);
	free(p->frames);
	import_sums_free(&p->sums);
	perfdata_bids_free(bids);
}

int import_perf_data(struct import_ctx *ctx)
{
	struct pd p = {.ctx = ctx, .first_attr = -1};
	struct bids bids = {0};
	uint8_t *buf = NULL;
	void *map;
	int rc;

	rc = pd_input(ctx, &p, &buf, &map);
	if (rc < 0)
		return rc;
	rc = pd_tables(&p);
	if (rc < 0)
		goto out;
	if (p.len < 16 || memcmp(p.buf, "PERFILE2", 8) != 0) {
		rc = import_fail_at(ctx, 0, "expected perf.data (\"PERFILE2\"), got %s",
		                    p.len >= 8 && memcmp(p.buf, "2ELIFREP", 8) == 0
		                            ? "a file of the other byte order"
		                            : "other data");
		goto out;
	}
	if (rd64(p.buf + 8) == 16) /* pipe mode: attrs and all come as records */
		rc = read_records(&p, 16, p.len, NULL);
	else
		rc = pd_read_file(&p, &bids);
	if (rc < 0)
		goto out;
	pd_warn(&p);
	if (ctx->samples)
		rc = pd_input_bytes(&p);
out:
	pd_free(&p, &bids);
	free(buf);
	if (map != MAP_FAILED)
		munmap(map, p.len);
	return rc;
}
