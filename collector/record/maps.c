/*
 * maps.c — what a drain of `flamefs-collect record` takes out of the map
 * set the BPF side just left: its counts (in one batch call where the
 * kernel has them, else by walking the map), its samples with their
 * moments joined to their keys, its stacks (copied a batch at a time, or
 * looked up one by one), and, once stored, the set emptied of what was
 * read.  It names nothing but the code objects of Python frames, which
 * must be read while their process lives.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "record-internal.h"

int record_key_series_cmp(const struct profile_key *x, const struct profile_key *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->cgroup != y->cgroup)
		return x->cgroup < y->cgroup ? -1 : 1;
	int c = memcmp(x->comm, y->comm, sizeof(x->comm));
	if (c)
		return c;
	return x->span < y->span ? -1 : x->span > y->span;
}

/* Keys by their series first (record_key_series_cmp()), so that a
 * series' keys are together, then by the rest of their bytes (padding is
 * zeroed on both sides). */
static int key_cmp(const struct profile_key *x, const struct profile_key *y)
{
	int c = record_key_series_cmp(x, y);
	return c ? c : memcmp(x, y, sizeof(*x));
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct entry *)a)->key, &((const struct entry *)b)->key);
}

/* Records by key, then time. */
static int smp_cmp(const void *a, const void *b)
{
	const struct ring_sample *x = a, *y = b;
	int c = key_cmp(&x->key, &y->key);
	if (c)
		return c;
	return x->m.time_us < y->m.time_us ? -1 : x->m.time_us > y->m.time_us;
}

/* Notes a stack to delete once stored (duplicates are harmless: a second
 * delete fails quietly). */
static int hash_list_add(struct hash_list *l, uint64_t h)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		uint64_t *n = realloc(l->v, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = ncap;
	}
	l->v[l->n++] = h;
	return 0;
}

/* Notes the stacks key refers to, to delete once stored. */
static int add_key_hashes(struct recorder *r, const struct profile_key *k)
{
	int rc = 0;

	if (k->user_stack == PROFILE_USTACK)
		rc = hash_list_add(&r->hashes, k->user_hash);
	if (rc == 0 && k->user_stack == PROFILE_PY_STACK)
		rc = hash_list_add(&r->pyhashes, k->user_hash);
	if (rc == 0 && k->kernel_stack == PROFILE_KSTACK)
		rc = hash_list_add(&r->khashes, k->kernel_hash);
	return rc;
}

/* Takes every count of one map set into r->ents and deletes it, with
 * BPF_MAP_LOOKUP_AND_DELETE_BATCH: one or two bpf(2) calls in all, where
 * a walk costs three per entry.  Returns 0, -ENOTSUP when the kernel has
 * no batch operations (nothing was taken), or -errno. */
static int take_counts_batch(struct recorder *r, int set)
{
	uint32_t token = 0;
	bool first = true;

	if (!r->bcap) {
		r->bcap = bpf_map__max_entries(set ? r->skel->maps.counts1 : r->skel->maps.counts0);
		r->bkeys = calloc(r->bcap, sizeof(*r->bkeys));
		r->bvals = calloc(r->bcap, sizeof(*r->bvals));
		if (!r->bkeys || !r->bvals)
			return -ENOMEM;
	}
	uint32_t n = 0;
	for (;;) {
		uint32_t got = r->bcap - n;
		int rc = bpf_map_lookup_and_delete_batch(r->counts_fd[set], first ? NULL : &token,
		                                         &token, r->bkeys + n, r->bvals + n, &got,
		                                         NULL);
		int e = rc < 0 ? errno : 0;
		if (rc < 0 && e != ENOENT && first && n == 0 && got == 0 &&
		    (e == EINVAL || e == EOPNOTSUPP || e == 524 /* the kernel's ENOTSUPP */))
			return -ENOTSUP;
		n += got;
		first = false;
		if (rc < 0 && e == ENOENT)
			break; /* the map is empty now */
		if (rc < 0)
			return -e;
		if (n == r->bcap)
			break; /* cannot hold more than a whole map */
	}
	if (r->ents_cap < n) {
		struct entry *e = realloc(r->ents, n * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->ents = e;
		r->ents_cap = n;
	}
	for (uint32_t i = 0; i < n; i++)
		r->ents[i] = (struct entry){.key = r->bkeys[i], .v = r->bvals[i]};
	r->nents = n;
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	const struct stack_ref *x = a, *y = b;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int hash_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

_Static_assert(sizeof(struct profile_kstack) == sizeof(struct profile_ustack),
               "take_stacks() reads kernel stacks into user stacks' room");
_Static_assert(offsetof(struct profile_pystack, pcs) == offsetof(struct profile_ustack, pcs) &&
                       offsetof(struct profile_pystack, flags) ==
                               offsetof(struct profile_ustack, flags),
               "take_stacks() reads the three kinds of stack alike");

/* Copies the stacks of stack map `fd` (a set's CFI, kernel or, with
 * `python`, Python stacks) into *b, a batch at a time, leaving them in
 * the map (a count added later to this set may still refer to one:
 * off-CPU and block time).  Returns 0, also when the kernel cannot
 * (r->no_ubatch: fetch_stack() then looks each one up), or -ENOMEM. */
static int take_stacks(struct recorder *r, int fd, struct stack_batch *b, bool python)
{
	uint32_t batch = python ? PYBATCH : UBATCH;
	size_t stride = python ? sizeof(struct profile_pystack) : sizeof(struct profile_ustack);
	uint32_t cap = python ? PROFILE_PY_SLOTS : PROFILE_MAX_DEPTH;
	uint64_t token = 0;
	bool first = true;

	b->nref = 0;
	b->npcs = 0;
	if (r->no_ubatch)
		return 0;
	if (!r->ubatch_keys) {
		r->ubatch_keys = calloc(UBATCH, sizeof(*r->ubatch_keys));
		r->ubatch_vals = calloc(UBATCH, sizeof(*r->ubatch_vals));
		if (!r->ubatch_keys || !r->ubatch_vals)
			return -ENOMEM;
	}
	if (python && !r->pybatch_vals && !(r->pybatch_vals = calloc(PYBATCH, stride)))
		return -ENOMEM;
	const char *vals = python ? (const char *)r->pybatch_vals : (const char *)r->ubatch_vals;
	for (;;) {
		uint32_t got = batch;
		int rc = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, r->ubatch_keys,
		                              (void *)vals, &got, NULL);
		int e = rc < 0 ? errno : 0;
		if (rc < 0 && e != ENOENT) {
			/* No batch reads (EINVAL, ENOTSUPP), or a bucket larger
			 * than a batch (ENOSPC): one lookup per stack. */
			if (e != ENOSPC)
				r->no_ubatch = true;
			b->nref = 0;
			return 0;
		}
		first = false;
		for (uint32_t i = 0; i < got; i++) {
			const char *v = vals + i * stride;
			const struct profile_ustack *head = (const struct profile_ustack *)v;
			const char *pcs = v + offsetof(struct profile_ustack, pcs);
			uint32_t len = head->len < cap ? head->len : cap;
			if (b->nref == b->ref_cap) {
				size_t ncap = b->ref_cap ? b->ref_cap * 2 : 1024;
				struct stack_ref *n = realloc(b->ref, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				b->ref = n;
				b->ref_cap = ncap;
			}
			/* pcs is never NULL once a stack is in, even of no pc. */
			if (!b->pcs || b->npcs + len > b->pcs_cap) {
				size_t ncap = b->pcs_cap ? b->pcs_cap * 2 : 16384;
				while (ncap < b->npcs + len)
					ncap *= 2;
				__u64 *n = realloc(b->pcs, ncap * sizeof(*n));
				if (!n)
					return -ENOMEM;
				b->pcs = n;
				b->pcs_cap = ncap;
			}
			memcpy(b->pcs + b->npcs, pcs, len * sizeof(*b->pcs));
			b->ref[b->nref++] = (struct stack_ref){.hash = r->ubatch_keys[i],
			                                       .at = b->npcs,
			                                       .len = len,
			                                       .flags = head->flags};
			b->npcs += len;
		}
		if (rc < 0)
			break; /* ENOENT: that was the last batch */
	}
	if (b->nref > 1)
		qsort(b->ref, b->nref, sizeof(*b->ref), ref_cmp);
	return 0;
}

/* The stack with `hash` in what take_stacks() read into b, or NULL. */
static const struct stack_ref *batch_find(const struct stack_batch *b, uint64_t hash)
{
	const struct stack_ref want = {.hash = hash};

	return b->nref ? bsearch(&want, b->ref, b->nref, sizeof(*b->ref), ref_cmp) : NULL;
}

/* A new entry at the end of r->ents, its contents unset; NULL on ENOMEM. */
static struct entry *push_entry(struct recorder *r)
{
	if (r->nents == r->ents_cap) {
		size_t ncap = r->ents_cap ? r->ents_cap * 2 : 1024;
		struct entry *n = realloc(r->ents, ncap * sizeof(*n));
		if (!n)
			return NULL;
		r->ents = n;
		r->ents_cap = ncap;
	}
	return &r->ents[r->nents++];
}

/* Without batch reads (r->no_batch), the counts of `set` into r->ents;
 * and the hashes of every stack of the set, to delete once stored. */
static int list_set(struct recorder *r, int set)
{
	struct profile_key key, next;
	void *prev = NULL;
	int rc;

	while (r->no_batch && bpf_map_get_next_key(r->counts_fd[set], prev, &next) == 0) {
		struct profile_value v;
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->counts_fd[set], &key, &v) < 0)
			continue;
		struct entry *e = push_entry(r);
		if (!e)
			return -ENOMEM;
		*e = (struct entry){.key = key, .v = v};
	}

	uint64_t h, nh;
	prev = NULL;
	while (bpf_map_get_next_key(r->ustacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->hashes, h)) < 0)
			return rc;
	}
	prev = NULL;
	while (bpf_map_get_next_key(r->kstacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->khashes, h)) < 0)
			return rc;
	}
	prev = NULL;
	while (r->unwinder && bpf_map_get_next_key(r->pystacks_fd[set], prev, &nh) == 0) {
		h = nh;
		prev = &h;
		if ((rc = hash_list_add(&r->pyhashes, h)) < 0)
			return rc;
	}
	return 0;
}

/* Reads every count of one map set into r->ents (taking them out of the
 * map when it can do so in a batch) and into r->hashes, r->khashes and
 * r->pyhashes the hashes of the stacks to delete once stored. */
static int read_set(struct recorder *r, int set)
{
	int rc;

	r->nents = 0;
	r->nsmp = 0;
	r->hashes.n = 0;
	r->pyhashes.n = 0;
	r->khashes.n = 0;
	/* The set's samples with their moments.  A sample is either a
	 * record or a count, so the order of the two reads does not
	 * matter; one written after (an off-CPU sample that ends later)
	 * waits for the set's next drain, as a count does. */
	if (r->srb[set]) {
		rc = ring_buffer__consume(r->srb[set]);
		if (rc < 0)
			return rc;
	}
	/* A sample that got its stacks but no count (counts map full, an
	 * error) leaves stacks no count refers to: the whole stack map of
	 * both sets is then listed, at this drain and the next. */
	const __u64 *st = r->skel->bss->stats;
	uint64_t losses = __atomic_load_n(&st[PROFILE_STAT_COUNTS_FULL], __ATOMIC_RELAXED) +
	                  __atomic_load_n(&st[PROFILE_STAT_STACK_ERROR], __ATOMIC_RELAXED);
	if (losses != r->orphan_losses) {
		r->orphan_losses = losses;
		r->scan_stacks = 2;
	}
	if (!r->no_batch) {
		rc = take_counts_batch(r, set);
		if (rc == -ENOTSUP)
			r->no_batch = true;
		else if (rc < 0)
			return rc;
	}
	rc = take_stacks(r, r->ustacks_fd[set], &r->ustacks, false);
	if (rc == 0)
		rc = take_stacks(r, r->kstacks_fd[set], &r->kstacks, false);
	if (rc == 0 && r->unwinder)
		rc = take_stacks(r, r->pystacks_fd[set], &r->pystacks, true);
	if (rc < 0)
		return rc;
	r->hash_records = false;
	if (!r->no_batch && r->scan_stacks == 0) {
		/* The stacks are those the counts refer to, and those of the
		 * keys only records have (join_samples adds them, once a key). */
		for (size_t i = 0; i < r->nents; i++)
			if ((rc = add_key_hashes(r, &r->ents[i].key)) < 0)
				return rc;
		r->hash_records = true;
		return 0;
	}
	if (r->scan_stacks > 0)
		r->scan_stacks--;
	return list_set(r, set);
}

/* Deletes the stacks of list l from stack map `fd`: in one batch when the
 * kernel has batch operations (each key once, sorted), else, and from a
 * key already gone on, one by one. */
static void delete_stacks(struct recorder *r, int fd, struct hash_list *l)
{
	size_t from = 0;

	if (l->n > 1 && !r->no_ubatch) {
		qsort(l->v, l->n, sizeof(*l->v), hash_cmp);
		size_t u = 0;
		for (size_t i = 0; i < l->n; i++)
			if (u == 0 || l->v[u - 1] != l->v[i])
				l->v[u++] = l->v[i];
		l->n = u;
		uint32_t count = (uint32_t)u;
		if (bpf_map_delete_batch(fd, l->v, &count, NULL) == 0)
			return;
		from = count; /* stopped at a key already gone: the rest one by one */
	}
	for (size_t i = from; i < l->n; i++)
		bpf_map_delete_elem(fd, &l->v[i]);
}

void record_clear_set(struct recorder *r, int set)
{
	/* Only keys read from the counts map: a key that had records alone
	 * may get a count (a full ring) after the read, for the next drain. */
	for (size_t i = 0; r->no_batch && i < r->nents; i++)
		if (r->ents[i].v.samples)
			bpf_map_delete_elem(r->counts_fd[set], &r->ents[i].key);
	delete_stacks(r, r->pystacks_fd[set], &r->pyhashes);
	delete_stacks(r, r->kstacks_fd[set], &r->khashes);
	delete_stacks(r, r->ustacks_fd[set], &r->hashes);
}

_Static_assert(sizeof(struct profile_kstack) <= sizeof(struct profile_pystack),
               "fetch_stack() reads a kernel stack into r->pystack");

/* Copies one stack of a count out of `set` (the maps, or what
 * take_stacks() read of them) into *rs.  A user stack with Python frames
 * keeps them as the walker wrote them, two tagged slots each (profile.h). */
static void fetch_stack(struct recorder *r, int set, const struct profile_key *key, bool kernel,
                        struct raw_stack *rs)
{
	int32_t sid = kernel ? key->kernel_stack : key->user_stack;
	struct profile_pystack *us = r->pystack; /* its first fields are a profile_ustack's */

	rs->state = RAW_NONE;
	rs->truncated = false;
	rs->depth = 0;
	if (sid == PROFILE_NO_STACK)
		return;
	const struct stack_ref *got = NULL;
	if (!kernel && (sid == PROFILE_USTACK || sid == PROFILE_PY_STACK)) {
		const struct stack_batch *b = sid == PROFILE_USTACK ? &r->ustacks : &r->pystacks;
		got = batch_find(b, key->user_hash);
		if (got) {
			/* Taken in a batch (take_stacks). */
			us->len = got->len;
			us->flags = got->flags;
			memcpy(us->pcs, b->pcs + got->at, got->len * sizeof(*us->pcs));
		}
	}
	if (sid == PROFILE_KSTACK && kernel) {
		struct profile_kstack *ks = (struct profile_kstack *)us; /* as big, and bigger */
		got = batch_find(&r->kstacks, key->kernel_hash);
		if (got) {
			rs->state = RAW_PCS;
			rs->depth = got->len;
			memcpy(rs->pcs, r->kstacks.pcs + got->at, got->len * sizeof(*rs->pcs));
		} else if (bpf_map_lookup_elem(r->kstacks_fd[set], &key->kernel_hash, ks) == 0) {
			rs->state = RAW_PCS;
			rs->depth = ks->len < PROFILE_MAX_DEPTH ? ks->len : PROFILE_MAX_DEPTH;
			memcpy(rs->pcs, ks->pcs, rs->depth * sizeof(*rs->pcs));
		} else {
			rs->state = RAW_LOST;
		}
		return;
	}
	bool walked = false;
	if (sid == PROFILE_USTACK && !kernel)
		walked = got || bpf_map_lookup_elem(r->ustacks_fd[set], &key->user_hash, us) == 0;
	else if (sid == PROFILE_PY_STACK && !kernel)
		walked = got || bpf_map_lookup_elem(r->pystacks_fd[set], &key->user_hash, us) == 0;
	if (walked) {
		size_t cap = sid == PROFILE_PY_STACK ? PROFILE_PY_SLOTS : PROFILE_MAX_DEPTH;
		rs->state = RAW_PCS;
		rs->depth = us->len < cap ? us->len : (uint32_t)cap;
		rs->truncated = us->flags & UNWIND_FLAG_TRUNCATED;
		memcpy(rs->pcs, us->pcs, rs->depth * sizeof(*rs->pcs));
	} else {
		/* Lost (counted by the BPF side): the sample keeps its
		 * weight under an [unknown] frame. */
		rs->state = RAW_LOST;
	}
}

/* A vfs event's kernel stack gets its file system as its innermost pc
 * (RECORD_FS_PC_TAG, record-internal.h). */
static void add_fs_pc(const struct profile_key *key, struct raw_stack *kernel)
{
	if ((key->event != PROFILE_EV_VFS_READ && key->event != PROFILE_EV_VFS_WRITE) ||
	    kernel->state == RAW_LOST)
		return;
	if (kernel->state == RAW_NONE) {
		kernel->state = RAW_PCS;
		kernel->depth = 0;
	}
	memmove(kernel->pcs + 1, kernel->pcs, kernel->depth * sizeof(*kernel->pcs));
	kernel->pcs[0] = RECORD_FS_PC_TAG | key->fs;
	kernel->depth++;
}

void record_fetch_stacks(struct recorder *r, int set, const struct profile_key *key,
                         struct raw_stack *user, struct raw_stack *kernel)
{
	fetch_stack(r, set, key, false, user);
	fetch_stack(r, set, key, true, kernel);
	add_fs_pc(key, kernel);
}

/* Names the code objects of every stack with Python frames in r->ents
 * first, before the native frames' symbols and DWARF are read: a code
 * object can only be read while its process lives, and a short one may
 * exit while a first file's debug information loads. */
int record_prefetch_python(struct recorder *r, int set)
{
	struct profile_pystack *us = r->pystack;

	for (size_t i = 0; i < r->nents; i++) {
		const struct profile_key *k = &r->ents[i].key;
		if (k->user_stack != PROFILE_PY_STACK)
			continue;
		/* (a process first seen now: as drain.c's store_set() would) */
		if (!symbolize_known(r->sym, (pid_t)k->pid) &&
		    symbolize_snapshot(r->sym, (pid_t)k->pid, 0) == -ENOMEM)
			return -ENOMEM;
		const struct stack_ref *got = batch_find(&r->pystacks, k->user_hash);
		const __u64 *pcs = us->pcs;
		size_t depth;
		if (got) {
			pcs = r->pystacks.pcs + got->at;
			depth = got->len;
		} else if (bpf_map_lookup_elem(r->pystacks_fd[set], &k->user_hash, us) == 0) {
			depth = us->len < PROFILE_PY_SLOTS ? us->len : PROFILE_PY_SLOTS;
		} else {
			continue;
		}
		for (size_t j = 0; j + 1 < depth; j++) {
			if (!(pcs[j] & PROFILE_PY_TAG))
				continue;
			uint64_t code = pcs[j] & ~PROFILE_PY_TAG, v = pcs[j + 1];
			int rc = code ? symbolize_python_frame(r->sym, (pid_t)k->pid, k->gen, code,
			                                       (uint32_t)(v >> 32), (uint32_t)v,
			                                       NULL)
			              : 0;
			if (rc < 0)
				return rc;
			j++;
		}
	}
	return 0;
}

/* Gives each key of r->ents its records of r->smp (both then in key
 * order): a key that has records but no count gets an entry of its own
 * with no samples without a moment.  0 or -ENOMEM. */
static int join_samples(struct recorder *r)
{
	size_t nents = r->nents;

	if (nents > 1) /* qsort takes no NULL array, even empty */
		qsort(r->ents, nents, sizeof(*r->ents), entry_cmp);
	if (r->nsmp > 1)
		qsort(r->smp, r->nsmp, sizeof(*r->smp), smp_cmp);
	for (size_t i = 0; i < r->nsmp;) {
		size_t j = i + 1;
		while (j < r->nsmp && key_cmp(&r->smp[j].key, &r->smp[i].key) == 0)
			j++;
		struct entry want = {.key = r->smp[i].key}, *e = NULL;
		if (nents)
			e = bsearch(&want, r->ents, nents, sizeof(*r->ents), entry_cmp);
		if (!e) {
			e = push_entry(r);
			if (!e)
				return -ENOMEM;
			*e = want;
			if (r->hash_records && add_key_hashes(r, &want.key) < 0)
				return -ENOMEM;
		}
		e->first = i;
		e->nsmp = j - i;
		i = j;
	}
	if (r->nents > nents)
		qsort(r->ents, r->nents, sizeof(*r->ents), entry_cmp);
	return 0;
}

int record_take_set(struct recorder *r, int set)
{
	int rc = read_set(r, set);

	return rc < 0 ? rc : join_samples(r);
}
