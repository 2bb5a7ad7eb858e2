/*
 * frames.c — a drained count's stacks made into what the store keeps, for
 * `flamefs-collect record`: the raw pcs named as frames (kernel, native and
 * Python; a vfs event's file system as a frame of its own; the tracing
 * machinery's frames left out), the series of its process with its binary,
 * version and labels, and the frames, count and samples with their moments
 * added to the drain's batch and to the recording's totals.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>

#include "import.h"
#include "record-internal.h"

/* Whether a kernel frame belongs to the tracepoint and BPF machinery that
 * ran the event's program (bpf_trace_run4, perf_trace_*, bpf_prog_*...). */
static bool tracing_frame(const char *name, size_t len)
{
	static const char *const prefixes[] = {
	        "bpf_prog_",      "bpf_trace_run", "__bpf_trace_",           "perf_trace_",
	        "trace_call_bpf", "__traceiter_",  "trace_event_raw_event_", "bpf_tracing_"};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		if (len >= pl && memcmp(name, prefixes[i], pl) == 0)
			return true;
	}
	return false;
}

/* The frame "[fs:NAME]" of fs into f; 0 or -errno. */
static int fs_frame(struct recorder *r, uint32_t fs, struct store_frame *f)
{
	size_t i = 0;

	while (i < r->nfs && r->fs_ids[i] != fs)
		i++;
	if (i == r->nfs) {
		struct profile_fs_name got;
		if (i == PROFILE_FS_MAX)
			return -ENOSPC; /* fs_names holds no more */
		if (bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.fs_names), &fs, &got) < 0)
			return -errno;
		got.name[sizeof(got.name) - 1] = '\0';
		snprintf(r->fs_frames[i], sizeof(r->fs_frames[i]), "[fs:%s]", got.name);
		r->fs_ids[i] = fs;
		r->nfs++;
	}
	memset(f, 0, sizeof(*f));
	f->name = r->fs_frames[i];
	f->name_len = strlen(f->name);
	f->kind = STORE_FRAME_KERNEL;
	f->module = "[kernel.kallsyms]";
	f->module_len = 17;
	return 0;
}

/* Appends the frames of kernel stack ips[0..depth), root first, to
 * r->frames[*n]: a vfs event's file system (its innermost pc,
 * RECORD_FS_PC_TAG) as a frame "[fs:NAME]" in place of the system call's
 * return and the tracing frames. */
static int name_kernel_stack(struct recorder *r, const uint64_t *ips, size_t depth, size_t *n)
{
	uint64_t fs = 0;
	bool vfs = false;
	size_t start = *n;
	int rc;

	if (depth > 0 && (ips[0] & RECORD_FS_PC_MASK) == RECORD_FS_PC_TAG) {
		vfs = true;
		fs = ips[0] & ~RECORD_FS_PC_MASK;
		ips++;
		depth--;
	}
	rc = symbolize_kernel_prefetch(r->sym, ips, depth);
	if (rc < 0)
		return rc;
	for (size_t i = depth; i-- > 0;) {
		rc = symbolize_kernel(r->sym, ips[i], i > 0, &r->frames[*n]);
		if (rc < 0)
			return rc;
		(*n)++;
	}
	while (vfs && *n > start &&
	       (tracing_frame(r->frames[*n - 1].name, r->frames[*n - 1].name_len) ||
	        (r->frames[*n - 1].name_len == 17 &&
	         memcmp(r->frames[*n - 1].name, "syscall_exit_work", 17) == 0)))
		(*n)--;
	if (fs) {
		rc = fs_frame(r, (uint32_t)fs, &r->frames[*n]);
		if (rc < 0)
			return rc;
		(*n)++;
	}
	return 0;
}

/* Appends the frames of user stack ips[0..depth), root first, to
 * r->frames[*n], leaving room for a kernel stack after it. */
static int name_user_stack(struct recorder *r, pid_t pid, uint32_t gen, const uint64_t *ips,
                           size_t depth, size_t *n)
{
	int rc;

	/* The frames, innermost first: a native pc takes one slot, a
	 * Python frame (or a cut marker) two (profile.h). */
	uint16_t *at = r->pyslots;
	size_t items = 0;
	for (size_t j = 0; j < depth; items++) {
		at[items] = (uint16_t)j;
		j += (ips[j] & PROFILE_PY_TAG) && j + 1 < depth ? 2 : 1;
	}
	for (size_t k = items; k-- > 0;) {
		size_t i = at[k];
		struct store_frame *f = &r->frames[*n];
		if (ips[i] & PROFILE_PY_TAG) {
			uint64_t code = ips[i] & ~PROFILE_PY_TAG,
			         v = i + 1 < depth ? ips[i + 1] : 0;
			if (!code) {
				/* Where the Python walk was cut short. */
				memset(f, 0, sizeof(*f));
				f->name = "[python: cut short]";
				f->name_len = strlen(f->name);
				f->kind = STORE_FRAME_UNKNOWN;
				(*n)++;
				continue;
			}
			rc = symbolize_python_frame(r->sym, pid, gen, code, (uint32_t)(v >> 32),
			                            (uint32_t)v, f);
			if (rc < 0)
				return rc;
			(*n)++;
			continue;
		}
		/* One frame at least for each frame still to come. */
		size_t room = FRAMES_CAP - PROFILE_MAX_DEPTH - 1 - *n - k;
		rc = symbolize_user_gen(r->sym, pid, gen, ips[i], i > 0, f, room);
		if (rc < 0)
			return rc;
		*n += (size_t)rc;
	}
	return 0;
}

/* Appends the frames of one stack, root first, to r->frames[*n]; a user
 * stack leaves room for a kernel stack after it. */
static int name_stack(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *rs,
                      bool kernel, size_t *n)
{
	if (rs->state == RAW_NONE)
		return 0;
	if (rs->state == RAW_LOST) {
		struct store_frame *f = &r->frames[(*n)++];
		memset(f, 0, sizeof(*f));
		f->name = "[unknown]";
		f->name_len = 9;
		f->kind = STORE_FRAME_UNKNOWN;
		if (kernel) {
			f->module = "[kernel.kallsyms]";
			f->module_len = 17;
		}
		return 0;
	}
	if (rs->truncated) {
		/* The walk gave up: the frames above are unknown. */
		struct store_frame *f = &r->frames[(*n)++];
		memset(f, 0, sizeof(*f));
		f->name = "[truncated]";
		f->name_len = 11;
		f->kind = STORE_FRAME_UNKNOWN;
	}
	if (kernel)
		return name_kernel_stack(r, rs->pcs, rs->depth, n);
	return name_user_stack(r, pid, gen, rs->pcs, rs->depth, n);
}

int record_name_stacks(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user,
                       const struct raw_stack *kernel, size_t *n)
{
	*n = 0;
	int rc = name_stack(r, pid, gen, user, false, n);
	if (rc >= 0)
		rc = name_stack(r, pid, gen, kernel, true, n);
	return rc;
}

bool record_stack_late(struct recorder *r, pid_t pid, uint32_t gen, const struct raw_stack *user)
{
	if (user->state != RAW_PCS)
		return false;
	for (size_t i = 0; i < user->depth; i++) {
		if (user->pcs[i] & PROFILE_PY_TAG) {
			i++; /* a Python frame's two slots: no address */
			continue;
		}
		if (symbolize_jit_late(r->sym, pid, gen, user->pcs[i], i > 0))
			return true;
	}
	return false;
}

int record_series(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                  uint32_t ev, uint32_t *series)
{
	return record_series_event(r, b, key, record_events[ev].series, record_events[ev].unit,
	                           series);
}

int record_series_event(struct recorder *r, struct store_batch *b, const struct profile_key *key,
                        const char *event, const char *unit, uint32_t *series)
{
	pid_t pid = (pid_t)key->pid;
	uint32_t gen = key->gen;

	/* A process is snapshotted once (at start, fork or exec);
	 * symbolize_user() reads its maps again when an address falls
	 * outside them. */
	if (!symbolize_known(r->sym, pid)) {
		int rc = symbolize_snapshot(r->sym, pid, 0);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			r->unsymbolized_pids++;
	}

	const char *bin = NULL, *bid = NULL;
	char version[13];
	symbolize_process_gen(r->sym, pid, gen, &bin, &bid);
	if (bid && *bid) {
		snprintf(version, sizeof(version), "%s", bid);
	} else {
		snprintf(version, sizeof(version), "%s", IMPORT_DEFAULT_VERSION);
	}
	struct store_series_key k = {
	        .binary = r->opt->binary ? r->opt->binary
	                  : bin && *bin  ? bin
	                                 : "[unknown]",
	        .version = r->opt->version ? r->opt->version : version,
	        .event = event,
	        .unit = unit,
	};
	int rc = record_labels_of(r, key, &k.labels);
	if (rc < 0)
		return rc;
	return store_batch_series(b, &k, series);
}

int record_store_frames(struct recorder *r, struct store_batch *b, uint32_t series, uint32_t ev,
                        int64_t when, size_t n, const struct profile_value *v, bool truncated,
                        pid_t pid, const struct moment *m, size_t nm)
{
	uint64_t mweight = 0;
	int rc;
	/* The vfs duty cycle: weights times the drained set's length over
	 * its hooked time (record_duty_flip). */
	double scale = record_duty_scale(r, ev);
	struct profile_value sv = *v;
	if (scale != 1)
		sv.weight = (uint64_t)llround((double)v->weight * scale);
	v = &sv;

	/* A tracepoint's kernel stack ends in the tracing machinery and our
	 * own program: not the workload's. */
	while (n > 0 && r->frames[n - 1].kind == STORE_FRAME_KERNEL &&
	       tracing_frame(r->frames[n - 1].name, r->frames[n - 1].name_len))
		n--;

	uint32_t node = STORE_ROOT_NODE;
	bool leaf_named = false; /* stored unnamed, shown with a name found later */
	for (size_t j = 0; j < n; j++) {
		uint32_t frame;
		rc = record_names_frame(r, &r->frames[j]);
		leaf_named = rc > 0;
		if (rc >= 0)
			rc = store_batch_frame(b, &r->frames[j], &frame);
		if (rc >= 0)
			rc = store_batch_node(b, node, frame, &node);
		if (rc < 0)
			return rc;
	}
	for (size_t j = 0; j < nm; j++) {
		struct store_sample smp = {
		        .time_us = m[j].time_us,
		        .node = node,
		        .pid = (uint32_t)pid,
		        .tid = m[j].tid,
		        .weight = scale != 1 ? (uint64_t)llround((double)m[j].weight * scale)
		                             : m[j].weight,
		        .span = m[j].span,
		};
		rc = store_batch_sample(b, series, &smp);
		if (rc < 0)
			return rc;
		mweight += smp.weight;
	}
	if (v->samples) {
		rc = store_batch_add(b, series, when, node, v->samples, v->weight);
		if (rc < 0)
			return rc;
	}
	if (ev == PROFILE_EV_CPU && n > 0 && !leaf_named &&
	    (rc = record_unnamed_add(r, &r->frames[n - 1], v->weight + mweight)) < 0)
		return rc;
	if (truncated)
		r->truncated += v->samples + nm;
	r->with_moment += nm;
	r->without_moment += v->samples;
	r->samples += v->samples + nm;
	r->weight += v->weight + mweight;
	r->ev_samples[ev] += v->samples + nm;
	r->ev_weight[ev] += v->weight + mweight;
	return 0;
}
