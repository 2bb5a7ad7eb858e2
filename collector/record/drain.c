/*
 * drain.c — the drains of `flamefs-collect record`: each second, the map
 * sets flipped, the process events read, then the counts and samples of
 * the set the BPF side just left taken (maps.c), their stacks named and
 * stored (frames.c, or held back for their JIT frames: late.c) in one
 * atomic batch, committed, and the set emptied; after the commit, the
 * store's retention and roll-up.  Also the samples ring's callback, which
 * gives each sample its moment on the wall clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record-internal.h"

/* ---- samples with their moments ----------------------------------------- */

int64_t record_clock_offset(void)
{
	int64_t best = 0, gap = INT64_MAX;

	for (int i = 0; i < 3; i++) {
		struct timespec a, w, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &w);
		clock_gettime(CLOCK_MONOTONIC, &b);
		int64_t ma = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
		int64_t mb = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
		int64_t wall = (int64_t)w.tv_sec * 1000000000 + w.tv_nsec;
		if (mb - ma < gap) {
			gap = mb - ma;
			best = wall - (ma + (mb - ma) / 2);
		}
	}
	return best;
}

int record_on_sample(void *ctx, void *data, size_t len)
{
	struct recorder *r = ctx;
	const struct profile_sample *s = data;

	if (len < sizeof(*s))
		return 0;
	if (r->nsmp == r->smp_cap) {
		size_t ncap = r->smp_cap ? r->smp_cap * 2 : 4096;
		struct ring_sample *n = realloc(r->smp, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->smp = n;
		r->smp_cap = ncap;
	}
	int64_t ns = (int64_t)s->time + r->clock_off_ns;
	r->smp[r->nsmp++] = (struct ring_sample){
	        .key = s->key,
	        .m = {.time_us = ns / 1000 - (ns % 1000 < 0),
	              .weight = s->weight,
	              .span = s->span,
	              .tid = s->tid},
	};
	return 0;
}

/* At the first drain and then every RETAIN_EVERY_S, each in a write of
 * its own: --retention deletes the time buckets wholly older than the
 * retention period from every wall-clock series of the store, and, when
 * the recorder keeps moments, store_rollup() forgets the detail of the
 * buckets past the keep window (their counts stay).  `final`: the
 * roll-up runs whatever the time. */
#define RETAIN_EVERY_S 60

static int retain(struct recorder *r, int64_t now, bool final)
{
	struct store_prune_opts o = {.before = now - r->opt->retention, .wall_clock_only = true};
	struct store_prune_stats st;
	int rc;

	if (r->opt->retention && (!r->pruned_at || now - r->pruned_at >= RETAIN_EVERY_S)) {
		rc = store_prune(r->store, &o, &st);
		if (rc < 0) {
			record_fail(r, rc, "store: retention: %s", store_errmsg(r->store));
			return rc;
		}
		r->pruned_at = now;
		r->pruned_buckets += st.buckets;
		r->pruned_samples += st.samples;
	}
	if (r->keep_samples > 0 &&
	    (final || !r->rolled_at || now - r->rolled_at >= RETAIN_EVERY_S)) {
		struct store_rollup_stats rs = {0};
		rc = store_rollup(r->store, &rs);
		if (rc < 0) {
			record_fail(r, rc, "store: roll-up of the recent samples: %s",
			            store_errmsg(r->store));
			return rc;
		}
		r->rolled_at = now;
		r->rolled_samples += rs.samples;
		r->rollups++;
	}
	return 0;
}

/* The moments of entry e's records, contiguous, in r->mscratch. */
static const struct moment *entry_moments(struct recorder *r, const struct entry *e)
{
	if (!e->nsmp)
		return NULL;
	if (e->nsmp > r->mscratch_cap) {
		size_t ncap = r->mscratch_cap ? r->mscratch_cap : 256;
		while (ncap < e->nsmp)
			ncap *= 2;
		struct moment *n = realloc(r->mscratch, ncap * sizeof(*n));
		if (!n)
			return NULL;
		r->mscratch = n;
		r->mscratch_cap = ncap;
	}
	for (size_t j = 0; j < e->nsmp; j++)
		r->mscratch[j] = r->smp[e->first + j].m;
	return r->mscratch;
}

/* Stores the counts and records of r->ents (read from `set`, joined by
 * record_take_set) into batch b, but for those whose JIT frames may be named
 * later (late.c). */
static int store_set(struct recorder *r, struct store_batch *b, int set, int64_t when, bool final)
{
	const struct profile_key *last = NULL;
	uint32_t series = 0;
	struct raw_stack *user = &r->raw[0], *kernel = &r->raw[1];
	int rc;

	for (size_t i = 0; i < r->nents; i++) {
		const struct entry *e = &r->ents[i];
		pid_t pid = (pid_t)e->key.pid;

		uint32_t ev = e->key.event < PROFILE_NEVENTS ? e->key.event : PROFILE_EV_CPU;
		if (!last || pid != (pid_t)last->pid || e->key.gen != last->gen ||
		    e->key.event != last->event || e->key.cgroup != last->cgroup ||
		    memcmp(e->key.comm, last->comm, sizeof(e->key.comm)) != 0 ||
		    e->key.span != last->span) {
			rc = record_series(r, b, &e->key, ev, &series);
			if (rc < 0)
				return rc;
			last = &e->key;
		}

		const struct moment *m = entry_moments(r, e);
		if (e->nsmp && !m)
			return -ENOMEM;
		size_t n = 0;
		record_fetch_stacks(r, set, &e->key, user, kernel);
		rc = record_name_stacks(r, pid, e->key.gen, user, kernel, &n);
		if (rc < 0)
			return rc;
		if (record_stack_late(r, pid, e->key.gen, user)) {
			rc = record_late_take(r, &e->key, &e->v, m, e->nsmp, when, user, kernel,
			                      final, &n);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue; /* held back */
		}
		rc = record_store_frames(r, b, series, ev, when, n, &e->v, user->truncated, pid, m,
		                         e->nsmp);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void sleep_ns(long ns)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = ns};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* --log-drains: one line per state of a drain, written with one write(2)
 * so that a kill leaves whole lines.  "committing" is written before the
 * commit and "committed" only once it returned: after a kill, every drain
 * with a "committed" line is in the store, and at most the last drain,
 * "committing" without "committed", may be there too (whole, never in
 * part). */
static void log_drain(struct recorder *r, const char *what, uint64_t samples, uint64_t weight)
{
	char line[128];
	int n;

	if (r->log_fd < 0)
		return;
	n = snprintf(line, sizeof(line),
	             "drain %" PRIu64 " %s samples %" PRIu64 " weight %" PRIu64 "\n", r->drain_seq,
	             what, samples, weight);
	if (n > 0 && write(r->log_fd, line, (size_t)n) != n)
		record_fail(r, -errno, "--log-drains: %s", strerror(errno));
}

int record_drain(struct recorder *r, bool final)
{
	uint32_t old = __atomic_load_n(&r->skel->bss->active, __ATOMIC_RELAXED);
	int sets[2] = {(int)old, (int)!old};
	int nsets = final ? 2 : 1;
	int64_t when = (int64_t)time(NULL);
	struct store_batch *b = NULL;
	uint64_t samples0 = r->samples, weight0 = r->weight;
	int rc;

	if (!final)
		__atomic_store_n(&r->skel->bss->active, !old, __ATOMIC_SEQ_CST);
	record_duty_flip(r);
	sleep_ns(FLIP_GRACE_NS);
	/* Each drain's records take the clocks' offset as it is now: NTP
	 * moves it slowly, a clock set moves it at once. */
	r->clock_off_ns = record_clock_offset();
	/* The fork and exec events of the samples in the set first: an exec
	 * met by a symbolizer re-read before its event names nothing. */
	ring_buffer__consume(r->rb);

	b = store_batch_new(r->store);
	if (!b) {
		rc = -ENOMEM;
		record_fail(r, rc, "store: cannot start a batch: %s", store_errmsg(r->store));
		return rc;
	}
	rc = record_names_apply(r, b);
	if (rc < 0)
		goto out_fail;
	r->drain_stacks = 0;
	for (int i = 0; i < nsets; i++) {
		rc = record_take_set(r, sets[i]);
		if (rc < 0)
			goto out_fail;
		if (python_walks(r->opt) && (rc = record_prefetch_python(r, sets[i])) < 0)
			goto out_fail;
		rc = store_set(r, b, sets[i], when, final);
		if (rc < 0)
			goto out_fail;
		/* Cleared before the commit: the set is written to again only
		 * after the next flip, and what it held is in the batch. */
		record_clear_set(r, sets[i]);
		r->drain_stacks += r->nents;
	}
	rc = record_late_flush(r, b, final);
	if (rc >= 0)
		rc = record_spans_store(r, b);
	if (rc < 0)
		goto out_fail;
	r->drain_seq++;
	log_drain(r, "committing", r->samples - samples0, r->weight - weight0);
	rc = store_batch_commit(b);
	if (rc < 0) {
		log_drain(r, "failed", r->samples - samples0, r->weight - weight0);
		record_fail(r, rc, "store: commit failed: %s", store_errmsg(r->store));
		goto out;
	}
	r->drains++;
	log_drain(r, "committed", r->samples - samples0, r->weight - weight0);
	rc = record_names_committed(r);
	if (rc < 0) {
		record_fail(r, rc, "naming later: %s", strerror(-rc));
		goto out;
	}
	record_reap_exited(r);
	record_sweep_modules(r);
	goto out;
out_fail:
	record_fail(r, rc, "drain: %s", strerror(-rc));
out:
	store_batch_free(b);
	if (rc >= 0)
		rc = retain(r, when, final);
	return rc;
}
