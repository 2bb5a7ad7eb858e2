/*
 * late.c — stacks whose JIT frames wait for their perf map.
 *
 * A user frame in anonymous executable memory that the process's
 * /tmp/perf-PID.map does not cover yet (symbolize_jit_late) may be named
 * later: Java's -XX:+DumpPerfMapAtExit writes the map as the JVM exits,
 * `jcmd PID Compiler.perfmap` whenever it is run, node as it compiles.
 * Such a count is not stored at its drain but held here with its stacks'
 * addresses, merged with the same stack of the same process, event and
 * store time bucket.  At each drain every process with held stacks has
 * its map read again if it changed (symbolize_jit_refresh), and a held
 * stack is named and stored, under its own time bucket, when:
 *   - every one of its late frames is named now;
 *   - its process has exited or exec'd (the map read then, after the
 *     exit event of its main thread, is the last it will write);
 *   - it has waited --jit-wait, counted in drains (one a second), so that
 *     --jit-wait 1 stores at the next drain what is still unnamed then;
 *   - the recording ends.
 * A count that would take the held stacks past --jit-memory is stored at
 * once, as it is named then.  Whatever is stored unnamed keeps its
 * frames as today ("[perf-PID.map]", or "[unknown]" without a map).
 * A held count keeps its samples' moments too (32 bytes each, within
 * --jit-memory), stored with them when it is.
 * Every held sample is stored exactly once, and counted in the summary
 * by how it ended.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record-internal.h"

#define LATE_BUCKETS 4096u

/* One held count: its stacks' addresses (user then kernel, innermost
 * first) and what the BPF side counted for it. */
struct late_rec {
	struct late_rec *next; /* in its hash bucket */
	uint64_t hash;
	pid_t pid;
	uint32_t gen, event;
	uint64_t cgroup;        /* the key's, for its labels */
	char comm[16];          /* the key's */
	uint64_t span;          /* the key's */
	int64_t when;           /* the time of its first drain (seconds) */
	int64_t bucket;         /* when's store time bucket: counts merge within it */
	uint64_t since;         /* the drain that first held it (drain_seq) */
	uint64_t jit_version;   /* symbolize_jit_version when last named */
	struct profile_value v; /* the samples without a moment */
	struct moment *m;       /* the samples with one (malloc'd) */
	size_t nm, mcap;
	uint8_t ustate, kstate;
	bool truncated;
	uint32_t nuser, nkernel;
	uint64_t pcs[];
};

struct record_late {
	struct late_rec *heads[LATE_BUCKETS];
	struct late_rec **recs; /* every record, in no order */
	size_t n, cap;
	uint64_t bytes, max_bytes, peak_bytes;
	uint64_t wait_drains;
	uint32_t bucket_seconds;
};

int record_late_new(struct record_late **out, uint64_t max_bytes, uint64_t wait_drains,
                    uint32_t bucket_seconds)
{
	struct record_late *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->max_bytes = max_bytes;
	l->wait_drains = wait_drains;
	l->bucket_seconds = bucket_seconds ? bucket_seconds : 1;
	*out = l;
	return 0;
}

void record_late_free(struct record_late *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->recs[i]->m);
		free(l->recs[i]);
	}
	free(l->recs);
	free(l);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t rec_hash(const struct profile_key *key, int64_t bucket, const struct raw_stack *u,
                         const struct raw_stack *k)
{
	uint64_t h = mix(mix(mix((uint64_t)key->pid, key->gen), key->event), (uint64_t)bucket);
	uint64_t c[2];
	memcpy(c, key->comm, sizeof(c));
	h = mix(mix(mix(mix(h, key->cgroup), c[0]), c[1]), key->span);
	h = mix(h, ((uint64_t)u->state << 40) | ((uint64_t)k->state << 32) |
	                   ((uint64_t)u->truncated << 48) | u->depth);
	for (uint32_t i = 0; i < u->depth; i++)
		h = mix(h, u->pcs[i]);
	h = mix(h, k->depth);
	for (uint32_t i = 0; i < k->depth; i++)
		h = mix(h, k->pcs[i]);
	return h;
}

/* The key of x's series: its series fields, stacks and hashes 0. */
static struct profile_key rec_key(const struct late_rec *x)
{
	struct profile_key key = {.pid = (__u32)x->pid,
	                          .gen = x->gen,
	                          .event = x->event,
	                          .cgroup = x->cgroup,
	                          .span = x->span};
	memcpy(key.comm, x->comm, sizeof(key.comm));
	return key;
}

static bool rec_same(const struct late_rec *x, const struct profile_key *key, int64_t bucket,
                     const struct raw_stack *u, const struct raw_stack *k)
{
	struct profile_key xk = rec_key(x);
	return record_key_series_cmp(&xk, key) == 0 && x->bucket == bucket &&
	       x->ustate == u->state && x->kstate == k->state && x->truncated == u->truncated &&
	       x->nuser == u->depth && x->nkernel == k->depth &&
	       memcmp(x->pcs, u->pcs, u->depth * sizeof(*u->pcs)) == 0 &&
	       memcmp(x->pcs + u->depth, k->pcs, k->depth * sizeof(*k->pcs)) == 0;
}

static size_t rec_bytes(const struct late_rec *x)
{
	return sizeof(*x) + (x->nuser + x->nkernel) * sizeof(x->pcs[0]) + sizeof(x) +
	       x->nm * sizeof(*x->m);
}

/* Appends m[0..nm) to x's moments.  0 or -ENOMEM. */
static int add_moments(struct late_rec *x, const struct moment *m, size_t nm)
{
	if (!nm)
		return 0;
	if (x->nm + nm > x->mcap) {
		size_t ncap = x->mcap ? x->mcap : 16;
		while (ncap < x->nm + nm)
			ncap *= 2;
		struct moment *n = realloc(x->m, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->m = n;
		x->mcap = ncap;
	}
	memcpy(x->m + x->nm, m, nm * sizeof(*m));
	x->nm += nm;
	return 0;
}

/* The raw stacks of x, for naming. */
static void rec_unpack(const struct late_rec *x, struct raw_stack *u, struct raw_stack *k)
{
	u->state = x->ustate;
	u->truncated = x->truncated;
	u->depth = x->nuser;
	memcpy(u->pcs, x->pcs, x->nuser * sizeof(*u->pcs));
	k->state = x->kstate;
	k->truncated = false;
	k->depth = x->nkernel;
	memcpy(k->pcs, x->pcs + x->nuser, x->nkernel * sizeof(*k->pcs));
}

/* Holds a count and its moments; 1 when held, 0 when it would pass the
 * memory bound. */
static int hold(struct recorder *r, const struct profile_key *key, const struct profile_value *v,
                const struct moment *m, size_t nm, int64_t when, const struct raw_stack *u,
                const struct raw_stack *k)
{
	struct record_late *l = r->late;
	pid_t pid = (pid_t)key->pid;
	uint32_t event = key->event;
	int64_t bucket = when >= 0 ? when / l->bucket_seconds
	                           : -((-when + l->bucket_seconds - 1) / l->bucket_seconds);
	uint64_t h = rec_hash(key, bucket, u, k);

	for (struct late_rec *x = l->heads[h % LATE_BUCKETS]; x; x = x->next) {
		if (x->hash == h && rec_same(x, key, bucket, u, k)) {
			if (l->bytes + nm * sizeof(*m) > l->max_bytes)
				return 0;
			if (add_moments(x, m, nm) < 0)
				return -ENOMEM;
			l->bytes += nm * sizeof(*m);
			if (l->bytes > l->peak_bytes)
				l->peak_bytes = l->bytes;
			x->v.samples += v->samples;
			x->v.weight += v->weight;
			return 1;
		}
	}
	size_t npcs = (size_t)u->depth + k->depth;
	size_t bytes = sizeof(struct late_rec) + npcs * sizeof(uint64_t) + sizeof(void *) +
	               nm * sizeof(*m);
	if (l->bytes + bytes > l->max_bytes)
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		struct late_rec **nr = realloc(l->recs, ncap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		l->recs = nr;
		l->cap = ncap;
	}
	struct late_rec *x = malloc(sizeof(*x) + npcs * sizeof(uint64_t));
	if (!x)
		return -ENOMEM;
	*x = (struct late_rec){
	        .hash = h,
	        .pid = pid,
	        .gen = key->gen,
	        .event = event,
	        .cgroup = key->cgroup,
	        .when = when,
	        .bucket = bucket,
	        .since = r->drain_seq,
	        .jit_version = symbolize_jit_version(r->sym, pid, key->gen),
	        .v = *v,
	        .ustate = (uint8_t)u->state,
	        .kstate = (uint8_t)k->state,
	        .truncated = u->truncated,
	        .nuser = u->depth,
	        .nkernel = k->depth,
	};
	memcpy(x->comm, key->comm, sizeof(x->comm));
	x->span = key->span;
	memcpy(x->pcs, u->pcs, u->depth * sizeof(uint64_t));
	memcpy(x->pcs + u->depth, k->pcs, k->depth * sizeof(uint64_t));
	if (add_moments(x, m, nm) < 0) {
		free(x);
		return -ENOMEM;
	}
	x->next = l->heads[h % LATE_BUCKETS];
	l->heads[h % LATE_BUCKETS] = x;
	l->recs[l->n++] = x;
	l->bytes += rec_bytes(x);
	if (l->bytes > l->peak_bytes)
		l->peak_bytes = l->bytes;
	return 1;
}

int record_late_take(struct recorder *r, const struct profile_key *key,
                     const struct profile_value *v, const struct moment *m, size_t nm, int64_t when,
                     const struct raw_stack *u, const struct raw_stack *k, bool final, size_t *n)
{
	pid_t pid = (pid_t)key->pid;
	uint64_t samples = v->samples + nm;
	int rc;

	r->late_stats.seen += samples;
	bool gone = symbolize_gone(r->sym, pid, key->gen);
	if (!final && !gone && r->late) {
		rc = hold(r, key, v, m, nm, when, u, k);
		if (rc != 0) {
			if (rc > 0)
				r->late_stats.held += samples;
			return rc;
		}
		r->late_stats.over_memory += samples;
		return 0; /* stored as named now */
	}
	/* The process has ended (its map is as complete as it will be), the
	 * recording does, or nothing waits (--jit-wait 0): a last look at
	 * the map, then stored. */
	uint64_t ver = symbolize_jit_version(r->sym, pid, key->gen);
	rc = symbolize_jit_refresh(r->sym, pid, key->gen, gone);
	if (rc < 0)
		return rc;
	if (symbolize_jit_version(r->sym, pid, key->gen) != ver) {
		rc = record_name_stacks(r, pid, key->gen, u, k, n);
		if (rc < 0)
			return rc;
	}
	if (!record_stack_late(r, pid, key->gen, u))
		r->late_stats.named += samples;
	else if (final || gone)
		r->late_stats.unnamed += samples;
	else
		r->late_stats.over_time += samples; /* --jit-wait 0 */
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct late_rec *x = *(struct late_rec *const *)a, *y = *(struct late_rec *const *)b;
	struct profile_key xk = rec_key(x), yk = rec_key(y);
	return record_key_series_cmp(&xk, &yk);
}

/* Names held record x and stores it when it is due; returns 1 when it
 * was stored (the caller frees it), 0 when it waits on, or -errno. */
static int settle(struct recorder *r, struct store_batch *b, struct late_rec *x, bool gone,
                  uint64_t ver, uint32_t *series, bool *have_series)
{
	struct raw_stack *u = &r->raw[0], *k = &r->raw[1];
	bool expired = r->drain_seq - x->since >= r->late->wait_drains;
	size_t n = 0;
	int rc;

	if (!gone && !expired && x->jit_version == ver)
		return 0; /* nothing new names it */
	rec_unpack(x, u, k);
	rc = record_name_stacks(r, x->pid, x->gen, u, k, &n);
	if (rc < 0)
		return rc;
	x->jit_version = ver;
	bool late = record_stack_late(r, x->pid, x->gen, u);
	if (late && !gone && !expired)
		return 0;
	uint32_t ev = x->event < PROFILE_NEVENTS ? x->event : PROFILE_EV_CPU;
	if (!*have_series) {
		struct profile_key key = rec_key(x);
		rc = record_series(r, b, &key, ev, series);
		if (rc < 0)
			return rc;
		*have_series = true;
	}
	rc = record_store_frames(r, b, *series, ev, x->when, n, &x->v, x->truncated, x->pid, x->m,
	                         x->nm);
	if (rc < 0)
		return rc;
	uint64_t samples = x->v.samples + x->nm;
	if (!late)
		r->late_stats.named += samples;
	else if (gone)
		r->late_stats.unnamed += samples;
	else
		r->late_stats.over_time += samples;
	return 1;
}

int record_late_flush(struct recorder *r, struct store_batch *b, bool final)
{
	struct record_late *l = r->late;
	size_t keep = 0, i = 0;
	int rc = 0;

	if (!l || !l->n)
		return 0;
	qsort(l->recs, l->n, sizeof(*l->recs), rec_cmp);
	while (i < l->n) {
		/* One process (and generation) at a time: its map read once. */
		pid_t pid = l->recs[i]->pid;
		uint32_t gen = l->recs[i]->gen;
		bool gone = final || symbolize_gone(r->sym, pid, gen);
		rc = symbolize_jit_refresh(r->sym, pid, gen, gone && !final);
		if (rc < 0)
			break;
		uint64_t ver = symbolize_jit_version(r->sym, pid, gen);
		for (; i < l->n && l->recs[i]->pid == pid && l->recs[i]->gen == gen;) {
			/* One series per event and label set, looked up once. */
			/* (a copy: settle() may free the record) */
			struct late_rec first = *l->recs[i];
			const struct late_rec *fp = &first;
			uint32_t series = 0;
			bool have_series = false;
			for (; i < l->n && rec_cmp(&l->recs[i], &fp) == 0; i++) {
				struct late_rec *x = l->recs[i];
				rc = settle(r, b, x, gone, ver, &series, &have_series);
				if (rc < 0)
					goto out;
				if (rc > 0) {
					l->bytes -= rec_bytes(x);
					free(x->m);
					free(x);
				} else {
					l->recs[keep++] = x;
				}
			}
		}
	}
out:
	/* What was not looked at (an error) stays. */
	while (i < l->n)
		l->recs[keep++] = l->recs[i++];
	l->n = keep;
	memset(l->heads, 0, sizeof(l->heads));
	for (size_t j = 0; j < l->n; j++) {
		struct late_rec *x = l->recs[j];
		x->next = l->heads[x->hash % LATE_BUCKETS];
		l->heads[x->hash % LATE_BUCKETS] = x;
	}
	r->late_stats.peak_bytes = l->peak_bytes;
	return rc < 0 ? rc : 0;
}
