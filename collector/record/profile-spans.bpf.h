/*
 * profile-spans.bpf.h — record --span's kernel side, included once into
 * profile.bpf.c (before take_key, which asks span_now()).
 *
 * A span is a pair of USDT probes, a start and an end, attached by user
 * space to the one program span_enter or span_exit per probe with a BPF
 * cookie that says how the start names its span (profile.h:
 * PROFILE_SPAN_*).  Each followed thread has a stack of its open spans in
 * `span_stacks`: a start pushes its name's key, an end pops the innermost,
 * whatever its id (spans of one thread nest).  An end with nothing open
 * (the thread was followed, or the recording began, inside the span) is
 * counted and ignored.  Past PROFILE_SPAN_DEPTH open spans the depth still
 * counts, so the ends match, but the deeper names are not kept: samples
 * there go to the deepest kept span.  A name is keyed by a 64-bit hash of
 * its bytes and flags (never 0, which is "no span", nor
 * PROFILE_SPAN_UNKNOWN); `span_names` gives its text to user space, which
 * labels each sample with its thread's innermost span (key.span).
 */
#include <bpf/usdt.bpf.h>

/* Set by user space before load: a --span was given (else the programs
 * below are not loaded and span_now() is 0). */
const volatile bool spans_on = false;
/* Set by user space through the mmap'd .bss before it detaches the
 * probes: from then on they do nothing, so that the one detached last
 * cannot meet unmatched starts or ends. */
__u32 spans_stopped = 0;

struct span_stack {
	__u32 depth; /* spans open, kept or not */
	__u32 pad;
	__u64 span[PROFILE_SPAN_DEPTH]; /* the open spans' keys, outermost first */
};

/* Per thread (tid), its open spans.  LRU: a thread that leaves without
 * its exit seen gives its slot back when room is short. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct span_stack);
	__uint(max_entries, 65536);
} span_stacks SEC(".maps");

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

/* The name being read, per CPU (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct profile_span_name);
	__uint(max_entries, 1);
} span_scratch SEC(".maps");

/* The key of the current thread's innermost kept span, 0 outside spans. */
static __always_inline __u64 span_now(__u32 tid)
{
	struct span_stack *st;

	if (!spans_on)
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st || st->depth == 0)
		return 0;
	__u32 i = st->depth > PROFILE_SPAN_DEPTH ? PROFILE_SPAN_DEPTH - 1 : st->depth - 1;
	if (i >= PROFILE_SPAN_DEPTH)
		return 0;
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
 * `span_names`; PROFILE_SPAN_UNKNOWN when it cannot be read or kept. */
static __always_inline __u64 span_name(struct pt_regs *ctx, __u64 cookie)
{
	__u32 zero = 0;
	struct profile_span_name *n = bpf_map_lookup_elem(&span_scratch, &zero);
	long arg, len;
	__u64 h;

	if (!n || bpf_usdt_arg(ctx, cookie & PROFILE_SPAN_ARG_MASK, &arg) < 0)
		goto lost;
	n->flags = cookie & (PROFILE_SPAN_NUM | PROFILE_SPAN_SQL);
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

SEC("usdt")
int span_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct span_stack *st;

	if (*(volatile __u32 *)&spans_stopped || !followed(id >> 32))
		return 0;
	__u64 h = span_name(ctx, bpf_usdt_cookie(ctx));
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st) {
		struct span_stack empty = {};
		bpf_map_update_elem(&span_stacks, &tid, &empty, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&span_stacks, &tid);
		if (!st)
			return 0;
	}
	__u32 d = st->depth;
	if (d < PROFILE_SPAN_DEPTH)
		st->span[d] = h;
	else
		count(PROFILE_STAT_SPAN_DEEP);
	st->depth = d + 1;
	return 0;
}

SEC("usdt")
int span_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct span_stack *st;

	if (*(volatile __u32 *)&spans_stopped || !followed(id >> 32))
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &tid);
	if (!st || st->depth == 0) {
		count(PROFILE_STAT_SPAN_UNMATCHED);
		return 0;
	}
	st->depth--;
	return 0;
}
