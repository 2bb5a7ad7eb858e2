/*
 * profile-spans.bpf.h — record --span's kernel side, included once into
 * profile.bpf.c (before take_key, which asks span_now()).
 *
 * A span is a pair of USDT probes, a start and an end, attached by user
 * space to the one program span_enter or span_exit per probe with a BPF
 * cookie that says how the start names its span (profile.h:
 * PROFILE_SPAN_*), among it the span's spec (which --span).  Each
 * followed thread has a stack of its open spans in `span_stacks`: a start
 * pushes its name's key and spec, an end closes the innermost open span of
 * its own spec, whatever its id, and the spans opened above that one move
 * down a place (a PostgreSQL transaction starts inside its BEGIN's query
 * span and ends inside its COMMIT's; spans of one spec, or spans properly
 * nested, just pop).  An end with no span of its spec open (the thread
 * was followed, or the recording began, inside the span) is counted and
 * ignored.  A start of a flat spec (PROFILE_SPAN_FLAT) first closes the
 * open span of its spec, if any, as unended, ended at that start.  Past
 * PROFILE_SPAN_DEPTH open spans the depth still counts, so the ends
 * match, but the deeper names and specs are not kept: samples
 * there go to the deepest kept span, and an end there pops the innermost
 * whatever its spec.  A name is keyed by a 64-bit hash of its bytes and
 * flags (never 0, which is "no span", nor PROFILE_SPAN_UNKNOWN), or, for a
 * fixed name, by the key user space put in `span_fixed`; `span_names`
 * gives a read name's text to user space, which labels each sample with
 * its thread's innermost span (key.span).
 *
 * Each kept span also has an id (START's id=argN, else one made here,
 * never 0), its parent's id (parent=argN, else the span innermost when it
 * started, even if that one ends first) and its start time.  Every sample
 * carries its innermost span's id (struct profile_sample.span).  When a
 * span ends, its record (profile.h: struct profile_span_record) goes to
 * the `span_records` ring, with the names of the spans below it on the
 * stack then through `span_chains`.  A span still open when its thread
 * exits or executes is closed then, marked unended (as is a flat spec's
 * span its next start finds open); at the recording's end the probes stop
 * and user space closes the spans left in `span_stacks` (spans.c).  Spans
 * deeper than PROFILE_SPAN_DEPTH have no record.
 */
#include <bpf/usdt.bpf.h>

/* Set by user space before load: a --span was given (else the programs
 * below are not loaded and span_now() is 0). */
const volatile bool spans_on = false;
/* Set by user space through the mmap'd .bss before it detaches the
 * probes: from then on they do nothing, so that the one detached last
 * cannot meet unmatched starts or ends. */
__u32 spans_stopped = 0;

/* Per thread (tid), its open spans.  LRU: a thread that leaves without
 * its exit seen gives its slot back when room is short. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct profile_span_stack);
	__uint(max_entries, 16384);
} span_stacks SEC(".maps");

/* Each span that ends, one struct profile_span_record; user space reads
 * it between drains (it wakes up when the ring is half full) and at each
 * drain.  Sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} span_records SEC(".maps");

/* The enclosing spans' names of the records, by a hash of them; user
 * space reads each once and deletes it, as `span_names`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct profile_span_chain);
	__uint(max_entries, 16384);
} span_chains SEC(".maps");

/* A chain being written, per CPU (too big for the BPF stack); and a
 * stack's empty value, never written (the first push of a thread). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_span_chain);
	__uint(max_entries, 1);
} span_chain_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_span_stack);
	__uint(max_entries, 1);
} span_empty SEC(".maps");

/* The ids made for spans without id=argN, counted per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} span_ids SEC(".maps");

/* Span names by key; user space reads each once, when a sample first
 * carries it, and deletes it.  The names of spans no sample fell in stay
 * until evicted: LRU, because SQL names are keyed by their text before
 * normalisation (literals and all), so a server makes new keys at its
 * statement rate, and a full map would refuse every later name. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct profile_span_name);
	__uint(max_entries, 16384);
} span_names SEC(".maps");

/* The keys of fixed names (PROFILE_SPAN_FIXED) by spec, written by user
 * space before the probes are attached. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, PROFILE_SPAN_SPECS);
} span_fixed SEC(".maps");

/* The name being read, per CPU (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_span_name);
	__uint(max_entries, 1);
} span_scratch SEC(".maps");

/* The key of the current thread's innermost kept span, 0 outside spans;
 * its id into *id (0 outside spans). */
static __always_inline __u64 span_now(__u32 tid, __u64 *id)
{
	struct profile_span_stack *st;

	*id = 0;
	if (!spans_on)
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st || st->depth == 0)
		return 0;
	__u32 i = st->depth > PROFILE_SPAN_DEPTH ? PROFILE_SPAN_DEPTH - 1 : st->depth - 1;
	if (i >= PROFILE_SPAN_DEPTH)
		return 0;
	*id = st->id[i];
	return st->span[i];
}

/* FNV-1a over the name's bytes, then its flags. */
static __always_inline __u64 span_hash(const struct profile_span_name *n)
{
	__u64 h = 0xcbf29ce484222325ull;

	for (__u32 i = 0; i < PROFILE_SPAN_NAME; i++) {
		if (i >= n->len)
			break;
		h ^= (__u8)n->text[i & (PROFILE_SPAN_NAME - 1)];
		h *= 0x100000001b3ull;
	}
	h ^= n->flags;
	h *= 0x100000001b3ull;
	return h > PROFILE_SPAN_UNKNOWN ? h : h + 2;
}

/* The key of the name the start probe's argument gives, its text in
 * `span_names`, or the spec's fixed key; PROFILE_SPAN_UNKNOWN when it
 * cannot be read or kept. */
static __always_inline __u64 span_name(struct pt_regs *ctx, __u64 cookie)
{
	__u32 zero = 0;
	struct profile_span_name *n;
	long arg, len;
	__u64 h;

	if (cookie & PROFILE_SPAN_FIXED) {
		__u32 spec = (cookie >> PROFILE_SPAN_SPEC_SHIFT) & PROFILE_SPAN_SPEC_MASK;
		__u64 *k = bpf_map_lookup_elem(&span_fixed, &spec);
		if (k && *k)
			return *k;
		goto lost;
	}
	n = bpf_map_lookup_elem(&span_scratch, &zero);
	if (!n || bpf_usdt_arg(ctx, cookie & PROFILE_SPAN_ARG_MASK, &arg) < 0)
		goto lost;
	n->flags = cookie & (PROFILE_SPAN_NUM | PROFILE_SPAN_SQL | PROFILE_SPAN_PGLOCK);
	if (cookie & PROFILE_SPAN_NUM) {
		__builtin_memcpy(n->text, &arg, sizeof(arg));
		n->len = sizeof(arg);
	} else {
		len = bpf_probe_read_user_str(n->text, PROFILE_SPAN_NAME, (const void *)arg);
		if (len <= 0)
			goto lost;
		n->len = len - 1;
	}
	h = span_hash(n);
	if (!bpf_map_lookup_elem(&span_names, &h)) {
		long rc = bpf_map_update_elem(&span_names, &h, n, BPF_NOEXIST);
		if (rc < 0 && rc != -EEXIST)
			goto lost;
	}
	return h;
lost:
	count(PROFILE_STAT_SPAN_NAME_LOST);
	return PROFILE_SPAN_UNKNOWN;
}

/* USDT argument `field` (1-based, from the cookie; 0: not given) of the
 * probe, or `dflt` when not given or unreadable. */
static __always_inline __u64 span_arg(struct pt_regs *ctx, __u64 field, __u64 dflt)
{
	long v;

	field &= PROFILE_SPAN_FIELD_MASK;
	if (!field || bpf_usdt_arg(ctx, field - 1, &v) < 0)
		return dflt;
	return (__u64)v;
}

/* A new span id: the CPU's number + 1 in the top 16 bits, a count of the
 * CPU's ids below, so never 0 and unique in the recording. */
static __always_inline __u64 span_new_id(void)
{
	__u32 zero = 0;
	__u64 *c = bpf_map_lookup_elem(&span_ids, &zero);
	__u64 n = c ? ++*c : 0;

	return ((__u64)(bpf_get_smp_processor_id() + 1) << 48) | (n & 0xffffffffffffull);
}

/* The key of the names of spans 0 .. d-1 of st in `span_chains` (written
 * there if not yet), 0 when d is 0; PROFILE_SPAN_CHAIN_LOST into *flags
 * when it could not be kept. */
static __always_inline __u64 span_chain(const struct profile_span_stack *st, __u32 d, __u32 *flags)
{
	__u64 h = 0xcbf29ce484222325ull;
	__u32 zero = 0;

	if (d == 0)
		return 0;
	for (__u32 i = 0; i < PROFILE_SPAN_DEPTH; i++) {
		if (i >= d)
			break;
		h ^= st->span[i];
		h *= 0x100000001b3ull;
	}
	h ^= d;
	h *= 0x100000001b3ull;
	h = h ? h : 1;
	if (!bpf_map_lookup_elem(&span_chains, &h)) {
		struct profile_span_chain *c = bpf_map_lookup_elem(&span_chain_scratch, &zero);
		long rc = -ENOMEM;
		if (c) {
			for (__u32 i = 0; i < PROFILE_SPAN_DEPTH; i++)
				c->name[i] = i < d ? st->span[i] : 0;
			c->depth = d;
			c->pad = 0;
			rc = bpf_map_update_elem(&span_chains, &h, c, BPF_NOEXIST);
		}
		if (rc < 0 && rc != -EEXIST) {
			count(PROFILE_STAT_SPAN_CHAIN_LOST);
			*flags |= PROFILE_SPAN_CHAIN_LOST;
			return 0;
		}
	}
	return h;
}

/* Writes the record of span d of thread tid's stack st, ended at `end`
 * (`flags`: PROFILE_SPAN_UNENDED); `current`: the thread is the one
 * running (its labels are read now, else those kept in st). */
static __always_inline void span_emit(struct profile_span_stack *st, __u32 d, __u32 tid, __u64 end,
                                      __u32 flags, bool current)
{
	struct profile_span_record *rec;
	__u32 tgid = st->tgid;

	if (d >= PROFILE_SPAN_DEPTH)
		return;
	rec = bpf_ringbuf_reserve(&span_records, sizeof(*rec), 0);
	if (!rec) {
		count(PROFILE_STAT_SPAN_RING_FULL);
		return;
	}
	rec->flags = flags;
	rec->chain = span_chain(st, d, &rec->flags);
	/* d is below PROFILE_SPAN_DEPTH, a power of two; the compiler must
	 * not drop the mask the verifier needs to see it so. */
	__asm__ volatile("" : "+r"(d));
	d &= PROFILE_SPAN_DEPTH - 1;
	rec->id = st->id[d];
	rec->parent = st->parent[d];
	rec->start = st->start[d];
	rec->end = end;
	rec->name = st->span[d];
	rec->pid = tgid;
	rec->tid = tid;
	__u32 *gen = bpf_map_lookup_elem(&execs, &tgid);
	rec->gen = gen ? *gen : 0;
	if (current) {
		rec->cgroup = label_cgroup ? bpf_get_current_cgroup_id() : 0;
		if (!label_thread || bpf_get_current_comm(rec->comm, sizeof(rec->comm)) < 0)
			__builtin_memset(rec->comm, 0, sizeof(rec->comm));
	} else {
		rec->cgroup = st->cgroup;
		__builtin_memcpy(rec->comm, st->comm, sizeof(rec->comm));
	}
	/* No wakeup but past half the ring: user space takes the records
	 * at each drain, and between drains when woken. */
	__u64 size = bpf_ringbuf_query(&span_records, BPF_RB_RING_SIZE);
	__u64 used = bpf_ringbuf_query(&span_records, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(rec, used > size / 2 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Closes every kept span open on thread tid, marked unended, and forgets
 * its stack (its exit, or its exec: the old program's spans end).  While
 * the probes stop at the recording's end the stack stays, for user
 * space's last walk. */
static __always_inline void span_close_thread(__u32 tid)
{
	struct profile_span_stack *st;

	if (!spans_on || *(volatile __u32 *)&spans_stopped)
		return;
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u32 depth = st->depth;
	for (__u32 i = 0; i < PROFILE_SPAN_DEPTH; i++) {
		if (i >= depth)
			break;
		span_emit(st,
		          depth > PROFILE_SPAN_DEPTH ? PROFILE_SPAN_DEPTH - 1 - i : depth - 1 - i,
		          tid, now, PROFILE_SPAN_UNENDED, true);
	}
	bpf_map_delete_elem(&span_stacks, &tid);
}

/* The index of the innermost open span of the cookie's spec in st (kept
 * entirely: depth at most PROFILE_SPAN_DEPTH), or PROFILE_SPAN_DEPTH. */
static __always_inline __u32 span_find(const struct profile_span_stack *st, __u64 cookie)
{
	__u8 spec = (cookie >> PROFILE_SPAN_SPEC_SHIFT) & PROFILE_SPAN_SPEC_MASK;
	__u32 depth = st->depth;

	for (__u32 k = 0; k < PROFILE_SPAN_DEPTH; k++) {
		if (k >= depth)
			break;
		__u32 i = depth - 1 - k;
		if (i < PROFILE_SPAN_DEPTH && st->spec[i] == spec)
			return i;
	}
	return PROFILE_SPAN_DEPTH;
}

/* Takes span d (below st->depth, at most PROFILE_SPAN_DEPTH) out of st:
 * the spans above it move down a place, their ids and parents kept. */
static __always_inline void span_remove(struct profile_span_stack *st, __u32 d)
{
	__u32 depth = st->depth;

	for (__u32 i = 0; i + 1 < PROFILE_SPAN_DEPTH; i++) {
		if (i + 1 >= depth)
			break;
		if (i < d)
			continue;
		st->span[i] = st->span[i + 1];
		st->id[i] = st->id[i + 1];
		st->parent[i] = st->parent[i + 1];
		st->start[i] = st->start[i + 1];
		st->spec[i] = st->spec[i + 1];
	}
	st->depth = depth - 1;
}

SEC("usdt")
int span_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct profile_span_stack *st;

	if (*(volatile __u32 *)&spans_stopped || !followed(id >> 32))
		return 0;
	/* The probe's moment: a span's start, and the end of the flat span
	 * it closes. */
	__u64 now = bpf_ktime_get_ns();
	__u64 cookie = bpf_usdt_cookie(ctx);
	__u64 h = span_name(ctx, cookie);
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st) {
		__u32 zero = 0;
		struct profile_span_stack *empty = bpf_map_lookup_elem(&span_empty, &zero);
		if (!empty)
			return 0;
		bpf_map_update_elem(&span_stacks, &tid, empty, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&span_stacks, &tid);
		if (!st)
			return 0;
	}
	/* A flat spec's spans never nest: one still open lost its end (the
	 * program left it another way: a PostgreSQL statement that failed),
	 * and closes now, unended. */
	if ((cookie & PROFILE_SPAN_FLAT) && st->depth <= PROFILE_SPAN_DEPTH) {
		__u32 old = span_find(st, cookie);
		if (old < PROFILE_SPAN_DEPTH) {
			span_emit(st, old, tid, now, PROFILE_SPAN_UNENDED, true);
			span_remove(st, old);
		}
	}
	__u32 d = st->depth;
	if (d == 0) {
		st->tgid = id >> 32;
		st->cgroup = label_cgroup ? bpf_get_current_cgroup_id() : 0;
		if (!label_thread || bpf_get_current_comm(st->comm, sizeof(st->comm)) < 0)
			__builtin_memset(st->comm, 0, sizeof(st->comm));
	}
	if (d < PROFILE_SPAN_DEPTH) {
		__u64 sid = span_arg(ctx, cookie >> PROFILE_SPAN_ID_SHIFT, 0);
		/* d - 1 masked (as in span_emit) so the verifier sees it
		 * bounded whatever the compiler makes of the test above. */
		__u32 u = d - 1;
		__asm__ volatile("" : "+r"(u));
		u &= PROFILE_SPAN_DEPTH - 1;
		__u64 up = d > 0 ? st->id[u] : 0;
		__asm__ volatile("" : "+r"(d));
		d &= PROFILE_SPAN_DEPTH - 1;
		st->span[d] = h;
		st->id[d] = sid ? sid : span_new_id();
		st->parent[d] = span_arg(ctx, cookie >> PROFILE_SPAN_PARENT_SHIFT, up);
		st->start[d] = now;
		st->spec[d] = (cookie >> PROFILE_SPAN_SPEC_SHIFT) & PROFILE_SPAN_SPEC_MASK;
		st->depth = d + 1;
	} else {
		count(PROFILE_STAT_SPAN_DEEP);
		st->depth = d + 1;
	}
	return 0;
}

SEC("usdt")
int span_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct profile_span_stack *st;
	__u64 now = bpf_ktime_get_ns();

	if (*(volatile __u32 *)&spans_stopped || !followed(id >> 32))
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st || st->depth == 0) {
		count(PROFILE_STAT_SPAN_UNMATCHED);
		return 0;
	}
	if (st->depth > PROFILE_SPAN_DEPTH) { /* the innermost is not kept */
		st->depth--;
		return 0;
	}
	__u32 d = span_find(st, bpf_usdt_cookie(ctx));
	if (d >= PROFILE_SPAN_DEPTH) {
		count(PROFILE_STAT_SPAN_UNMATCHED);
		return 0;
	}
	span_emit(st, d, tid, now, 0, true);
	span_remove(st, d);
	return 0;
}
