/*
 * perf.c — the `perf script` text importer.
 *
 * Reads the text any perf version prints for `perf script` and stores, for
 * every process, exactly the stacks Brendan Gregg's stackcollapse-perf.pl
 * (default options) would print: the same header and stack-line matching
 * (including Perl's backtracking quirks), the same symbol tidying and the
 * same "first event only" filtering.  The process name (comm, spaces as
 * '_') becomes the series binary and is not stored as a frame.
 *
 * Where this importer deliberately differs from stackcollapse-perf.pl:
 *  - a header line also ends the previous sample, so output without blank
 *    lines between samples is not merged into one giant stack;
 *  - a last sample without a trailing blank line still counts;
 *  - a process named "0" is kept (Perl treats the name "0" as false);
 *  - whitespace-only lines are ignored silently; any other line that is
 *    neither a comment, a header nor a stack line, a line holding a NUL
 *    byte, or a stack line outside a sample, is an error rather than a
 *    warning;
 *  - events are told apart (first event only, --event) by their names as
 *    perf prints them, modifiers included ("cpu-clock:ppp"), as
 *    stackcollapse compares them; --event EV keeps EV and, when EV has no
 *    ':', also EV with any modifiers.  The series is named by the event
 *    without its modifiers (import_event_base: "cpu-clock:ppp" and
 *    "cpu-clock:u" are "cpu-clock"), so the view's pprof calls cpu-clock
 *    "cpu/nanoseconds" in any spelling.  The unit is "nanoseconds" for
 *    cpu-clock and task-clock, "count" otherwise.  A header that names
 *    no event gives the series event "samples".
 *  - --all-events stores every event as its own series; events that
 *    differ only in modifiers ("cycles:u", "cycles:k") share one.
 *  - output of a recording without callchains (`perf record` without -g)
 *    has one line per sample: the process name right-aligned, the event
 *    followed by the pc, symbol and module.  Such a line is a sample of
 *    one frame (stackcollapse-perf.pl misreads it as a stack line).  It
 *    is recognized only where a sample may start (after a blank line, a
 *    one-line sample, or at the start) and only when the pc after the
 *    event is hex and a stack line follows it.
 *  - side-band records ("COMM PID TIME: PERF_RECORD_..." lines) are
 *    read: executable
 *    mappings (perf script --show-mmap-events) place the frames perf
 *    printed as "[unknown] (FILE)" in FILE (an offset and build id, so
 *    symbolize can name them later); other records are skipped.
 * With --by-thread each series also gets the label thread=<process name>:
 * the comm perf prints is the thread's, so the name is the thread's too.
 *
 * The work is in three files: this one reads the input line by line,
 * tells samples and events apart and stores each sample; perf-frames.c
 * makes a stack's frames from its stack lines (the tidying); perf-fast.c
 * takes a whole sample straight from the reader's buffer through the stack
 * caches.  perf-lines.c matches the lines.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Inlined: most keys are short, and a call into the library costs more
 * than hashing them. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "import.h"
#include "parsers-internal.h"
#include "stackcache-internal.h"

#include "perf-internal.h"

/* Caches: at most 2^N slots each (see the struct perf fields). */
#define PREFIX_SLOTS_LOG2 17
#define STACK_SLOTS_LOG2  18
#define PARTS_SLOTS_LOG2  17
#define PATH_SLOTS_LOG2   18
#define FRAME_SLOTS_LOG2  17
#define SAMPLE_SLOTS_LOG2 16
#define SERIES_SLOTS      4096u /* (process, event) -> series id map */
#define SERIES_MAX        (SERIES_SLOTS / 2)
#define SAMPLE_MAX        ((size_t)256 << 20) /* bytes of stack lines per sample */
#define NO_EVENT_NAME     "samples"           /* series event when perf printed none */

struct series_ent {
	char *key; /* "process\0event", malloc'd; NULL marks an empty slot */
	size_t key_len;
	uint64_t hash; /* XXH3_64bits of key */
	uint32_t id;
};

int perf_fail_line(struct perf *p, uint64_t line, const char *what, const char *s, size_t n)
{
	char ex[256];

	import_excerpt(ex, sizeof(ex), s, n);
	/* A bad last line without a newline is most likely a cut file. */
	bool cut = p->lr.unterminated && line == p->lr.line;
	return import_fail(p->ctx, line, "expected %s, got \"%s\"%s", what, ex,
	                   cut ? " at the end of the input (is the file truncated?)" : "");
}

/* ---- series ids ------------------------------------------------------- */

static bool event_is_clock(const char *ev, size_t n)
{
	size_t base = n;
	const char *colon = memchr(ev, ':', n);

	if (colon)
		base = (size_t)(colon - ev);
	return (base == 9 && memcmp(ev, "cpu-clock", 9) == 0) ||
	       (base == 10 && memcmp(ev, "task-clock", 10) == 0);
}

static int note_series_bytes(struct perf *p, uint32_t id, uint64_t bytes)
{
	if (id >= p->series_bytes_cap) {
		size_t old = p->series_bytes_cap;
		int rc = import_grow((void **)&p->series_bytes, &p->series_bytes_cap,
		                     (size_t)id + 1, sizeof(uint64_t));
		if (rc < 0)
			return rc;
		memset(p->series_bytes + old, 0, (p->series_bytes_cap - old) * sizeof(uint64_t));
	}
	p->series_bytes[id] += bytes;
	return 0;
}

static int flush_series_bytes(struct perf *p)
{
	for (size_t i = 0; i < p->series_bytes_cap; i++) {
		if (!p->series_bytes[i])
			continue;
		int rc = store_batch_input_bytes(p->ctx->batch, (uint32_t)i, p->series_bytes[i]);
		if (rc < 0)
			return rc;
		p->series_bytes[i] = 0;
	}
	return 0;
}

static void series_clear(struct perf *p)
{
	for (size_t i = 0; i < SERIES_SLOTS; i++) {
		free(p->series[i].key);
		p->series[i].key = NULL;
	}
	p->series_used = 0;
}

/* The series of the current sample: process p->blk, event after it. */
int perf_sample_series(struct perf *p, uint32_t *id)
{
	const char *key = p->blk;
	size_t klen = p->blk_head;
	uint64_t h = XXH3_64bits(key, klen);
	size_t slot = (size_t)h & (SERIES_SLOTS - 1);

	for (;;) {
		struct series_ent *e = &p->series[slot];
		if (!e->key)
			break;
		if (e->hash == h && e->key_len == klen && memcmp(e->key, key, klen) == 0) {
			*id = e->id;
			return 0;
		}
		slot = (slot + 1) & (SERIES_SLOTS - 1);
	}

	const char *ev = p->blk + p->pname_len + 1;
	size_t evlen = import_event_base(ev, p->event_len);
	char *event = evlen ? strndup(ev, evlen) : strdup(NO_EVENT_NAME);
	if (!event)
		return -ENOMEM;
	const char *unit = evlen && event_is_clock(ev, evlen) ? "nanoseconds" : "count";
	char *labels = NULL;
	int rc = 0;
	if (p->ctx->opt && p->ctx->opt->by_thread) {
		char *name;
		/* perf script prints the thread's comm: the process name
		 * (spaces as '_', as perf.data's) is the thread's. */
		rc = store_label_value_clean(p->blk, p->pname_len, &name);
		if (rc == 0) {
			struct store_label l = {STORE_LABEL_THREAD, name};
			rc = store_labels_make(&l, 1, &labels);
			free(name);
		}
	}
	if (rc == 0)
		rc = import_series_labels(p->ctx, p->blk, NULL, event, unit, labels, id);
	free(labels);
	free(event);
	if (rc < 0)
		return rc;

	if (p->series_used >= SERIES_MAX) {
		series_clear(p);
		slot = (size_t)h & (SERIES_SLOTS - 1);
	}
	char *copy = malloc(klen);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, klen);
	struct series_ent *e = &p->series[slot];
	e->key = copy;
	e->key_len = klen;
	e->hash = h;
	e->id = *id;
	p->series_used++;
	return 0;
}

/* ---- samples ---------------------------------------------------------- */

/* Stores the current sample: with its moment when it has a time and the
 * store keeps samples whole, else as a count. */
int perf_count_sample(struct perf *p, uint32_t series, uint32_t node)
{
	const struct import_options *o = p->ctx->opt;
	int64_t off = o ? o->clock_offset : 0;
	int rc;

	if (p->has_time && o && o->samples) {
		struct store_sample smp = {
		        .node = node, .pid = p->pid, .tid = p->tid, .weight = p->weight};
		int64_t sec;
		if (__builtin_add_overflow(p->when, off, &sec))
			return import_fail(
			        p->ctx, p->header_line,
			        "sample time plus --clock-offset does not fit in 64 bits");
		if (__builtin_mul_overflow(sec, 1000000, &smp.time_us) ||
		    __builtin_add_overflow(smp.time_us, p->frac_us, &smp.time_us))
			return import_fail(p->ctx, p->header_line,
			                   "sample time %lld s is out of range; expected a time "
			                   "within 2^31 of the store's time buckets from 1970",
			                   (long long)sec);
		rc = import_sample(p->ctx, &p->sums, p->header_line, series, &smp);
	} else {
		int64_t when = p->when;
		if (__builtin_add_overflow(when, off, &when))
			return import_fail(
			        p->ctx, p->header_line,
			        "sample time plus --clock-offset does not fit in 64 bits");
		rc = import_add(p->ctx, &p->sums, p->header_line, series, when, node, 1, p->weight);
	}
	if (rc < 0)
		return rc;
	rc = note_series_bytes(p, series, p->sample_bytes);
	if (rc < 0)
		return rc;
	p->ctx->samples++;
	return 0;
}

/* Ends the current line-by-line sample, if any, and stores it. */
static int end_sample(struct perf *p)
{
	enum sample_state st = p->state;
	uint32_t series, node;
	int rc;

	p->state = NO_SAMPLE;
	if (st != KEEP_SAMPLE)
		return 0;

	XXH128_hash_t hh = XXH3_128bits(p->blk, p->blk_len);
	struct stackcache_key key = {hh.low64, hh.high64};
	if (!stackcache_get(p->sample, key, &series, &node)) {
		rc = perf_sample_series(p, &series);
		if (rc < 0)
			return rc;
		rc = perf_parse_sample(p, &node);
		if (rc < 0)
			return rc;
		stackcache_put(p->sample, key, series, node);
	}
	return perf_count_sample(p, series, node);
}

static int event_wanted(struct perf *p, const char *ev, size_t n)
{
	const struct import_options *o = p->ctx->opt;

	if (o && o->all_events)
		return 1;
	if (o && o->event) {
		size_t wl = strlen(o->event);
		if (wl == n && memcmp(ev, o->event, n) == 0)
			return 1;
		/* "--event cpu-clock" also takes "cpu-clock:u" */
		const char *colon = memchr(ev, ':', n);
		return colon && !strchr(o->event, ':') && (size_t)(colon - ev) == wl &&
		       memcmp(ev, o->event, wl) == 0;
	}
	/* Without --event, the first event seen in any spelling: cpu-clock,
	 * cpu-clock:u and cpu-clock:ppp are one event, as they are one
	 * series (and stackcollapse-perf.pl keeps them all too). */
	size_t base = import_event_base(ev, n);
	if (!p->first_event) {
		p->first_event = strndup(ev, base);
		return p->first_event ? 1 : -ENOMEM;
	}
	return strlen(p->first_event) == base && memcmp(p->first_event, ev, base) == 0;
}

static int blk_reserve(struct perf *p, size_t more)
{
	if (p->blk_len + more > SAMPLE_MAX)
		return -E2BIG;
	return import_grow((void **)&p->blk, &p->blk_cap, p->blk_len + more, 1);
}

static int start_sample(struct perf *p, const char *l, size_t n, const struct header *h)
{
	int rc;

	if (h->event) {
		rc = event_wanted(p, h->event, h->event_len);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			p->state = SKIP_SAMPLE;
			p->ctx->skipped++;
			p->skipped_other++;
			return 0;
		}
	}

	p->header_line = p->lr.line;
	p->weight = 1;
	if (h->period) {
		uint64_t v;
		if (perf_parse_u64(h->period, h->period_len, &v) < 0)
			return import_fail(
			        p->ctx, p->lr.line, "period %.*s does not fit in 64 bits",
			        (int)(h->period_len > 40 ? 40 : h->period_len), h->period);
		if (v)
			p->weight = v;
	}
	rc = perf_header_time(l, n, h->end, &p->when, &p->frac_us);
	if (rc < 0)
		return import_fail(p->ctx, p->lr.line, "sample time does not fit in 64 bits");
	p->has_time = rc > 0;
	if (rc == 0)
		p->when = p->ctx->opt ? p->ctx->opt->now : 0;
	p->pid = h->pid;
	p->tid = h->tid;

	/* "process\0event\0": the process name is comm with ' ' -> '_' */
	p->blk_len = 0;
	rc = blk_reserve(p, h->comm_len + h->event_len + 2);
	if (rc < 0)
		return rc == -E2BIG ? import_fail(p->ctx, p->lr.line,
		                                  "expected a sample of at most 256 MiB")
		                    : rc;
	for (size_t i = 0; i < h->comm_len; i++)
		p->blk[i] = h->comm[i] == ' ' ? '_' : h->comm[i];
	p->blk[h->comm_len] = '\0';
	if (h->event_len)
		memcpy(p->blk + h->comm_len + 1, h->event, h->event_len);
	p->blk[h->comm_len + 1 + h->event_len] = '\0';
	p->pname_len = h->comm_len;
	p->event_len = h->event_len;
	p->blk_len = p->blk_head = p->pname_len + p->event_len + 2;
	p->state = KEEP_SAMPLE;
	return 0;
}

/* A side-band record (perf_match_record): an executable mapping is kept
 * and told to ctx->sym, if any (its process first, when new).  Returns 1 when
 * l was a record, 0 when not, -errno. */
static int record_line(struct perf *p, const char *l, size_t n)
{
	struct perf_mmap m;
	int rc = perf_match_record(l, n, &m);
	if (rc <= 0)
		return rc == 0 ? 1 : 0;
	const struct import_symbols *sym = p->ctx->sym;
	rc = import_grow((void **)&p->maps, &p->maps_cap, p->nmaps + 1, sizeof(*p->maps));
	if (rc < 0)
		return rc;
	char *path = strndup(l + m.path, m.path_len);
	if (!path)
		return -ENOMEM;
	p->maps[p->nmaps++] = (struct perf_map){.pid = m.pid,
	                                        .start = m.start,
	                                        .len = m.len,
	                                        .pgoff = m.pgoff,
	                                        .path = path,
	                                        .path_len = m.path_len};
	if (!sym)
		return 1; /* kept all the same: the same samples the same way */
	size_t i = 0;
	while (i < p->nmap_pids && p->map_pids[i] != m.pid)
		i++;
	if (i == p->nmap_pids) {
		rc = import_grow((void **)&p->map_pids, &p->map_pids_cap, i + 1,
		                 sizeof(*p->map_pids));
		if (rc < 0)
			return rc;
		p->map_pids[p->nmap_pids++] = m.pid;
		rc = sym->process(sym->ctx, m.pid, path);
		if (rc < 0)
			return rc;
	}
	rc = sym->map(sym->ctx, m.pid, m.start, m.start + m.len, m.pgoff, path, NULL, 0);
	return rc < 0 ? rc : 1;
}

/* Appends one stack line to the sample as its parts that matter to the
 * result: the function with any "+0x<hex>" offset stripped, the module
 * and whatever follows the module's ")".  The pc column and the offset
 * are left out, so samples that differ only there share a cache entry;
 * but once mappings are known (p->nmaps), an unnamed function's pc is
 * kept after the tail and a '\0' (no line holds one). */
static int add_stack_line(struct perf *p, const char *l, size_t n)
{
	struct stack_line sl;
	int rc;

	if (memchr(l, '\0', n) || !perf_match_stack_line(l, n, &sl))
		return perf_fail_line(p, p->lr.line, "a sample header or a stack line", l, n);
	rc = perf_line_pc(p, l, &sl);
	if (rc < 0)
		return rc;
	const char *func = l + sl.func;
	size_t flen = perf_strip_offset(func, sl.func_len);
	size_t tail = sl.mod + sl.mod_len + 1;
	size_t pc = 0, pclen = 0;
	if (p->nmaps && flen == 9 && memcmp(func, "[unknown]", 9) == 0 && sl.mod_len > 0 &&
	    l[sl.mod] != '[') {
		while (pc < n && is_ws((unsigned char)l[pc]))
			pc++;
		while (pc + pclen < n && is_word((unsigned char)l[pc + pclen]))
			pclen++;
	}
	size_t tlen = n - tail + (pclen ? pclen + 1 : 0);
	uint32_t lens[3] = {(uint32_t)flen, (uint32_t)sl.mod_len, (uint32_t)tlen};

	rc = blk_reserve(p, flen + sl.mod_len + tlen + 12);
	if (rc < 0)
		return rc == -E2BIG ? import_fail(p->ctx, p->lr.line,
		                                  "expected a sample of at most 256 MiB")
		                    : rc;
	char *o = p->blk + p->blk_len;
	memcpy(o, &lens[0], 4);
	memcpy(o + 4, func, flen);
	o += 4 + flen;
	memcpy(o, &lens[1], 4);
	memcpy(o + 4, l + sl.mod, sl.mod_len);
	o += 4 + sl.mod_len;
	memcpy(o, &lens[2], 4);
	memcpy(o + 4, l + tail, n - tail);
	if (pclen) {
		o[4 + n - tail] = '\0';
		memcpy(o + 4 + n - tail + 1, l + pc, pclen);
	}
	o += 4 + tlen;
	p->blk_len = (size_t)(o - p->blk);
	return 0;
}

/* A sample line of a recording without callchains, where a sample may
 * start: stored as a one-frame stack.  Returns 1 when l was one, 0 when
 * not (nothing done), -errno. */
static int one_line_sample(struct perf *p, const char *l, size_t n)
{
	struct header h;
	size_t skip = 0, tail;
	int rc;

	while (skip < n && is_ws((unsigned char)l[skip]))
		skip++;
	if (!perf_match_one_line(l + skip, n - skip, &h, &tail))
		return 0;
	p->sample_bytes = n + 1;
	rc = start_sample(p, l + skip, n - skip, &h);
	if (rc < 0)
		return rc;
	if (p->state == KEEP_SAMPLE) {
		rc = add_stack_line(p, l + skip + tail, n - skip - tail);
		if (rc < 0)
			return rc;
	}
	rc = end_sample(p);
	return rc < 0 ? rc : 1;
}

static int handle_line(struct perf *p, const char *l, size_t n)
{
	struct header h;
	int rc;

	if (n == 0) {
		p->sample_bytes += 1;
		return end_sample(p);
	}
	if (l[0] == '#')
		return 0;
	if (!is_ws((unsigned char)l[0]) && perf_match_header(l, n, &h)) {
		if (memchr(l, '\0', n))
			return perf_fail_line(p, p->lr.line, "a sample header or a stack line", l,
			                      n);
		/* perf ends every line with a newline and every header with
		 * stack lines or a blank line, so an input that stops inside
		 * a header was cut: refuse it rather than store a sample of
		 * whatever part of the header is left. */
		if (p->lr.unterminated)
			return perf_fail_line(p, p->lr.line,
			                      "a complete sample header followed by a newline", l,
			                      n);
		/* A header also ends a sample that had no blank line. */
		rc = end_sample(p);
		if (rc < 0)
			return rc;
		perf_match_event(l, n, &h);
		/* A header that names no event where it ends may be a line
		 * of a recording without callchains written flush left (by
		 * a converter, or sed): read as when it is indented. */
		if (!h.event) {
			rc = record_line(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
			rc = one_line_sample(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
		}
		p->sample_bytes = n + 1;
		rc = start_sample(p, l, n, &h);
		if (rc < 0 || p->state != KEEP_SAMPLE)
			return rc;
		/* l is invalid from here on: perf_fast_sample may read more;
		 * its caches do not keep pcs */
		if (p->nmaps)
			return 0;
		rc = perf_fast_sample(p);
		return rc < 0 ? rc : 0;
	}
	/* Anything else is a stack line (which need not be indented); it
	 * is checked when its sample is parsed, or ignored in a skipped
	 * sample. */

	/* Whitespace only: ignored, as stackcollapse does.  Stack lines end
	 * in ')', so the last byte settles it without scanning the indent. */
	if (is_ws((unsigned char)l[n - 1])) {
		size_t i = 0;
		while (i < n && is_ws((unsigned char)l[i]))
			i++;
		if (i == n)
			return 0;
	}
	switch (p->state) {
	case NO_SAMPLE:
		if (is_ws((unsigned char)l[0]) && !memchr(l, '\0', n)) {
			rc = one_line_sample(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
		}
		if (!is_ws((unsigned char)l[0])) {
			/* a record whose one-byte comm the header pattern
			 * does not take ("p 1 2.0: PERF_RECORD_COMM ...") */
			rc = memchr(l, '\0', n) ? 0 : record_line(p, l, n);
			if (rc != 0)
				return rc < 0 ? rc : 0;
			return perf_fail_line(p, p->lr.line, "a sample header or a stack line", l,
			                      n);
		}
		return perf_fail_line(p, p->lr.line, "a sample header", l, n);
	case SKIP_SAMPLE: return 0;
	case KEEP_SAMPLE: p->sample_bytes += n + 1; return add_stack_line(p, l, n);
	}
	return 0;
}

/* import_lines() callback. */
static int handle_line_cb(void *state, const char *l, size_t n)
{
	return handle_line(state, l, n);
}

static void perf_free(struct perf *p)
{
	linereader_free(&p->lr);
	if (p->series)
		series_clear(p);
	free(p->series);
	free(p->series_bytes);
	stackcache_free(p->prefix);
	stackcache_free(p->stack);
	stackcache_free(p->parts);
	stackcache_free(p->sample);
	stackcache_free(p->path);
	stackcache_free(p->frame);
	free(p->blk);
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	free(p->map_pids);
	perf_files_free(p);
	free(p->first_event);
	free(p->sl);
	free(p->rl);
	free(p->frames);
	free(p->name_off);
	free(p->names);
	free(p->leafkey);
	free(p->partkey);
	free(p->stackkey);
	import_sums_free(&p->sums);
}

int import_perf(struct import_ctx *ctx)
{
	struct perf p = {.ctx = ctx};
	int rc;

	rc = linereader_init(&p.lr, ctx->fd, ctx->prefix, ctx->prefix_len);
	if (rc < 0)
		return rc;
	p.prefix = stackcache_new(PREFIX_SLOTS_LOG2);
	p.stack = stackcache_new(STACK_SLOTS_LOG2);
	p.parts = stackcache_new(PARTS_SLOTS_LOG2);
	p.sample = stackcache_new(SAMPLE_SLOTS_LOG2);
	p.path = stackcache_new(PATH_SLOTS_LOG2);
	p.frame = stackcache_new(FRAME_SLOTS_LOG2);
	p.series = calloc(SERIES_SLOTS, sizeof(*p.series));
	if (!p.prefix || !p.stack || !p.parts || !p.sample || !p.path || !p.frame || !p.series) {
		rc = -ENOMEM;
		goto out;
	}

	rc = import_lines(ctx, &p.lr, handle_line_cb, &p);
	if (rc < 0)
		goto out;
	/* A last sample without a trailing blank line still counts. */
	rc = end_sample(&p);
	if (rc < 0)
		goto out;
	rc = flush_series_bytes(&p);
	if (rc < 0)
		goto out;
	ctx->bytes = p.lr.consumed;
	if (p.skipped_other && p.first_event)
		snprintf(ctx->warning, sizeof(ctx->warning),
		         "kept only event %s (in every spelling); skipped %llu samples of other "
		         "events (use --all-events or --event)",
		         p.first_event, (unsigned long long)p.skipped_other);
	if (p.addr_files) {
		size_t at = strlen(ctx->warning);
		snprintf(ctx->warning + at, sizeof(ctx->warning) - at,
		         "%spcs of %llu position-independent file%s (first %s) are addresses: "
		         "without mapping records their unnamed frames keep no offset for "
		         "symbolize (print with perf script --show-mmap-events)",
		         at ? "; " : "", (unsigned long long)p.addr_files,
		         p.addr_files == 1 ? "" : "s", p.addr_first);
	}
	rc = 0;
out:
	perf_free(&p);
	return rc;
}
