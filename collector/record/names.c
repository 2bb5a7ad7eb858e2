/*
 * names.c — frames `flamefs-collect record` names later by itself (issue
 * 42): code stored without function names (a stripped file: the frame
 * keeps its module, build id and offset) is named while the recording goes
 * on, once debug information for it appears (a debug package installed,
 * a file put in /usr/lib/debug or a --debug-dir, or a debuginfod server
 * that has it), with the pass `flamefs-collect symbolize` runs
 * (symbolize_later_plan/run, ../symbolize/later.c; the renames made as
 * symbolize_later_apply makes them).
 *
 * The modules met unnamed are noted as their frames are stored (frames.c).
 * At a quiet moment (after a drain that stored few stacks, at most every
 * RECORD_NAMES_EVERY_S) the modules worth a try are chosen: never tried,
 * a search place changed since the last try (symbolize_later_stamp), a
 * module already found with new unnamed frames, or, with DEBUGINFOD_URLS
 * set, one not tried for RECORD_NAMES_DEBUGINFOD_S.  Their frames are
 * copied out of the store and named on a thread of this file's own, so a
 * drain never waits for a search; the next drain adds the renames to its
 * batch, and once that commits, the names found are given to the same
 * frames as they are stored again (record_names_frame), so a stack keeps
 * one node per function.  Into a database the frames met again are stored
 * as they were met instead: there a frame keeps the content it was first
 * stored with as its identity and shows its name, so the same content
 * gives the same frame, named (store_batch_frame_rename()).  A frame
 * another writer of the database named since the pass began keeps that
 * name: the pass leaves it out.  At the end a last pass runs for what is
 * left, waited for at most RECORD_NAMES_END_WAIT_S.  It prints only with
 * -v: what it named.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record-internal.h"

/* One module met with unnamed frames. */
struct nmod {
	char *path;
	uint8_t bid[64];
	size_t bid_len;
	uint64_t stamp;  /* symbolize_later_stamp() at the last try */
	double tried_at; /* CLOCK_MONOTONIC of the last try; 0: never */
	bool found;      /* the last try found symbols that name its code */
	bool fresh;      /* unnamed frames of it stored since the last try */
	bool planned;    /* in the pass now running */
};

/* A name found: module `mod`'s frame at `offset` is `name` (NULL: the
 * symbols found for the module do not name it). */
struct found {
	uint32_t mod; /* index + 1; 0: a free slot */
	uint64_t offset;
	char *name;
};

enum pass_state { PASS_IDLE, PASS_RUNNING, PASS_DONE, PASS_APPLIED };

struct record_names {
	struct symbolize_later_opts lo; /* its dirs: `dirs` */
	char **dirs;
	bool debuginfod; /* DEBUGINFOD_URLS set */
	bool database;   /* the store keeps a frame's first content as its identity */
	unsigned verbose;

	struct nmod *mods;
	size_t nmods, mods_cap;
	uint32_t *mod_tab; /* index + 1 by hash of (path, build id); 0: free */
	size_t mod_slots;
	struct found *found;
	size_t nfound, found_slots;

	/* The pass: `state` and `rc` guarded by mu once the thread runs. */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	bool sync_made;
	enum pass_state state;
	int rc;
	struct symbolize_later_pass *pass;
	double started; /* CLOCK_MONOTONIC of the last pass's start */
	double loud_at; /* the last drain that was not quiet began a stretch here */
	bool joined;    /* the thread of the pass done was joined */
	bool abandoned; /* a pass still running at the end, left to exit with us */

	uint64_t passes, named, named_modules;
	double cpu_s; /* the passes' CPU time on their thread (guarded by mu) */
};

static double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ULL;
	return h;
}

static uint64_t mod_hash(const char *path, size_t plen, const uint8_t *bid, size_t blen)
{
	return fnv(fnv(1469598103934665603ULL, path, plen), bid, blen);
}

static uint64_t found_hash(uint32_t mod, uint64_t offset)
{
	return fnv(fnv(1469598103934665603ULL, &mod, sizeof(mod)), &offset, sizeof(offset));
}

static bool pass_done(struct record_names *n);

int record_names_new(struct record_names **out, const struct options *o, bool database)
{
	struct record_names *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return -ENOMEM;
	/* The thread's own copy: it may outlive the options (abandoned). */
	n->dirs = calloc(o->ndebug_dirs ? o->ndebug_dirs : 1, sizeof(*n->dirs));
	if (!n->dirs) {
		free(n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->ndebug_dirs; i++)
		if (!(n->dirs[n->lo.ndirs++] = strdup(o->debug_dirs[i]))) {
			record_names_free(n);
			return -ENOMEM;
		}
	n->lo.dirs = (const char *const *)n->dirs;
	const char *urls = getenv("DEBUGINFOD_URLS");
	n->debuginfod = urls && *urls;
	n->verbose = o->verbose;
	n->database = database;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, &ca);
	pthread_condattr_destroy(&ca);
	n->sync_made = true;
	*out = n;
	return 0;
}

void record_names_free(struct record_names *n)
{
	if (!n)
		return;
	/* A pass still running (a recording that failed) is not waited for. */
	if ((n->state == PASS_RUNNING || n->state == PASS_DONE) && !n->abandoned && !pass_done(n))
		n->abandoned = true;
	if (n->abandoned)
		return; /* the thread still uses the pass and n: the process ends */
	symbolize_later_pass_free(n->pass);
	if (n->sync_made) {
		pthread_cond_destroy(&n->cv);
		pthread_mutex_destroy(&n->mu);
	}
	for (size_t i = 0; i < n->lo.ndirs; i++)
		free(n->dirs[i]);
	free(n->dirs);
	for (size_t i = 0; i < n->nmods; i++)
		free(n->mods[i].path);
	for (size_t i = 0; i < n->found_slots; i++)
		free(n->found[i].name);
	free(n->mods);
	free(n->mod_tab);
	free(n->found);
	free(n);
}

/* The slot of module (path, bid) in tab (a power of two of slots): its
 * own, or the free one it would take. */
static uint32_t *mod_slot(const struct record_names *n, uint32_t *tab, size_t slots,
                          const char *path, size_t plen, const uint8_t *bid, size_t blen)
{
	size_t j = (size_t)mod_hash(path, plen, bid, blen) & (slots - 1);

	for (;; j = (j + 1) & (slots - 1)) {
		const struct nmod *m = tab[j] ? &n->mods[tab[j] - 1] : NULL;
		if (!m || (m->bid_len == blen && !memcmp(m->bid, bid, blen) &&
		           strlen(m->path) == plen && !memcmp(m->path, path, plen)))
			return &tab[j];
	}
}

/* The index of frame f's module, added when new; -ENOMEM. */
static long mod_of(struct record_names *n, const struct store_frame *f)
{
	const char *path = f->module ? f->module : "";
	size_t plen = f->module_len;

	if ((n->nmods + 1) * 2 > n->mod_slots) {
		size_t ns = n->mod_slots ? n->mod_slots * 2 : 64;
		uint32_t *nt = calloc(ns, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < n->nmods; i++) {
			const struct nmod *m = &n->mods[i];
			*mod_slot(n, nt, ns, m->path, strlen(m->path), m->bid, m->bid_len) =
			        (uint32_t)i + 1;
		}
		free(n->mod_tab);
		n->mod_tab = nt;
		n->mod_slots = ns;
	}
	uint32_t *s =
	        mod_slot(n, n->mod_tab, n->mod_slots, path, plen, f->build_id, f->build_id_len);
	if (*s)
		return (long)*s - 1;
	if (n->nmods == n->mods_cap) {
		size_t nc = n->mods_cap ? n->mods_cap * 2 : 16;
		struct nmod *nm = realloc(n->mods, nc * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		n->mods = nm;
		n->mods_cap = nc;
	}
	struct nmod *m = &n->mods[n->nmods];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strndup(path, plen)))
		return -ENOMEM;
	memcpy(m->bid, f->build_id, f->build_id_len);
	m->bid_len = f->build_id_len;
	*s = (uint32_t)++n->nmods;
	return (long)n->nmods - 1;
}

/* The slot of (mod, offset) in the names found: its own or a free one. */
static struct found *found_slot(struct found *t, size_t slots, uint32_t mod, uint64_t offset)
{
	size_t j = (size_t)found_hash(mod, offset) & (slots - 1);

	for (;; j = (j + 1) & (slots - 1))
		if (!t[j].mod || (t[j].mod == mod && t[j].offset == offset))
			return &t[j];
}

/* Keeps name (taken) for module index mod at offset.  0 or -ENOMEM. */
static int found_add(struct record_names *n, uint32_t mod, uint64_t offset, char *name)
{
	if ((n->nfound + 1) * 2 > n->found_slots) {
		size_t ns = n->found_slots ? n->found_slots * 2 : 256;
		struct found *nt = calloc(ns, sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		for (size_t i = 0; i < n->found_slots; i++)
			if (n->found[i].mod)
				*found_slot(nt, ns, n->found[i].mod, n->found[i].offset) =
				        n->found[i];
		free(n->found);
		n->found = nt;
		n->found_slots = ns;
	}
	struct found *s = found_slot(n->found, n->found_slots, mod + 1, offset);
	if (s->mod) {
		free(s->name);
	} else {
		s->mod = mod + 1;
		s->offset = offset;
		n->nfound++;
	}
	s->name = name;
	return 0;
}

int record_names_frame(struct recorder *r, struct store_frame *f)
{
	struct record_names *n = r->names;

	if (!n || f->kind != STORE_FRAME_UNKNOWN || !f->offset || !f->build_id_len ||
	    f->build_id_len > sizeof(n->mods->bid))
		return 0;
	long mod = mod_of(n, f);
	if (mod < 0)
		return (int)mod;
	if (n->nfound) {
		const struct found *s =
		        found_slot(n->found, n->found_slots, (uint32_t)mod + 1, f->offset);
		if (s->mod && !s->name)
			return 0; /* its module's symbols do not name it */
		if (s->mod && n->database)
			return 1; /* interned as it is: the frame that shows the name */
		if (s->mod) {
			/* as the renamed frame is: symbolize_later_apply() */
			f->name = s->name;
			f->name_len = strlen(s->name);
			f->kind = STORE_FRAME_USER;
			f->offset = 0;
			f->file = NULL;
			f->file_len = 0;
			f->line = 0;
			return 0;
		}
	}
	n->mods[mod].fresh = true;
	return 0;
}

/* The pass's thread: names what was planned. */
static void *pass_main(void *arg)
{
	struct record_names *n = arg;
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	int rc = symbolize_later_run(n->pass, &n->lo);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	pthread_mutex_lock(&n->mu);
	n->cpu_s += (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	n->rc = rc;
	n->state = PASS_DONE;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

/* Whether module m is worth a try now (`now`: CLOCK_MONOTONIC). */
static bool worth_a_try(const struct record_names *n, struct nmod *m, double now)
{
	uint64_t stamp = symbolize_later_stamp(
	        &n->lo, &(struct symbolize_later_module){m->path, m->bid, m->bid_len});
	bool want = !m->tried_at || stamp != m->stamp || (m->found && m->fresh) ||
	            (n->debuginfod && m->fresh && now - m->tried_at >= RECORD_NAMES_DEBUGINFOD_S);

	if (want)
		m->stamp = stamp;
	return want;
}

/* Chooses the modules worth a try, copies their unnamed frames out of the
 * store and starts the thread on them.  0 (also when there is nothing to
 * try) or -errno. */
static int start_pass(struct recorder *r, double now)
{
	struct record_names *n = r->names;
	struct symbolize_later_module *want = calloc(n->nmods ? n->nmods : 1, sizeof(*want));
	size_t nwant = 0, nframes = 0;
	sigset_t all, old;
	int rc = 0;

	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < n->nmods; i++) {
		struct nmod *m = &n->mods[i];
		m->planned = worth_a_try(n, m, now);
		if (!m->planned)
			continue;
		want[nwant++] = (struct symbolize_later_module){m->path, m->bid, m->bid_len};
		m->tried_at = now;
		m->fresh = false;
	}
	n->started = now;
	if (nwant)
		rc = symbolize_later_plan(r->store, want, nwant, &n->pass);
	free(want);
	if (rc < 0 || !n->pass || (symbolize_later_frames(n->pass, &nframes), nframes == 0)) {
		symbolize_later_pass_free(n->pass);
		n->pass = NULL;
		return rc;
	}
	n->passes++;
	n->state = PASS_RUNNING;
	n->joined = false;
	/* Signals stay with the recorder's main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&n->thread, NULL, pass_main, n);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		n->state = PASS_IDLE;
		symbolize_later_pass_free(n->pass);
		n->pass = NULL;
	}
	return rc;
}

/* Whether the pass's thread has finished; joins it then. */
static bool pass_done(struct record_names *n)
{
	pthread_mutex_lock(&n->mu);
	bool done = n->state == PASS_DONE;
	pthread_mutex_unlock(&n->mu);
	if (done && !n->joined) {
		pthread_join(n->thread, NULL);
		n->joined = true;
	}
	return done;
}

/* The renames of the pass done into b, each frame named as
 * symbolize_later_apply() names it, but for a frame that shows a name
 * already (another writer of a database named it since the pass was
 * planned): the first name a frame gets stays.  0 or -errno. */
static int apply_renames(struct recorder *r, struct store_batch *b)
{
	const struct symbolize_later_pass *p = r->names->pass;
	size_t nres, nfr;
	const struct symbolize_later_result *res = symbolize_later_results(p, &nres);
	const struct symbolize_later_frame *fr = symbolize_later_frames(p, &nfr);

	for (size_t i = 0; i < nfr; i++) {
		const struct symbolize_later_module *m = &res[fr[i].module].m;
		struct store_frame now;
		if (!fr[i].name || store_frame_get(r->store, fr[i].id, &now) < 0 ||
		    now.kind != STORE_FRAME_UNKNOWN)
			continue;
		struct store_frame named = {
		        .name = fr[i].name,
		        .name_len = strlen(fr[i].name),
		        .module = m->path,
		        .module_len = strlen(m->path),
		        .build_id = m->build_id,
		        .build_id_len = m->build_id_len,
		        .kind = STORE_FRAME_USER,
		};
		int rc = store_batch_frame_rename(b, fr[i].id, &named);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int record_names_apply(struct recorder *r, struct store_batch *b)
{
	struct record_names *n = r->names;

	if (!n || (n->state != PASS_RUNNING && n->state != PASS_DONE) || !pass_done(n))
		return 0;
	if (n->rc < 0) {
		/* -ENOMEM, or -ENOTSUP (no elfutils): naming later stops */
		n->state = PASS_IDLE;
		return n->rc == -ENOMEM ? n->rc : 0;
	}
	int rc = apply_renames(r, b);
	if (rc < 0)
		return rc;
	n->state = PASS_APPLIED;
	return 0;
}

int record_names_committed(struct recorder *r)
{
	struct record_names *n = r->names;
	size_t nres, nfr;

	if (!n || n->state != PASS_APPLIED)
		return 0;
	const struct symbolize_later_result *res = symbolize_later_results(n->pass, &nres);
	struct symbolize_later_frame *fr =
	        (struct symbolize_later_frame *)symbolize_later_frames(n->pass, &nfr);
	for (size_t i = 0; i < nres; i++) {
		const struct symbolize_later_result *x = &res[i];
		const struct store_frame f = {.module = x->m.path,
		                              .module_len = strlen(x->m.path),
		                              .build_id = x->m.build_id,
		                              .build_id_len = x->m.build_id_len};
		long mod = mod_of(n, &f);
		if (mod < 0)
			return (int)mod;
		/* found: its symbols name some of its code (not its exports alone) */
		n->mods[mod].found = x->error == 0 && x->named > 0;
		if (x->named) {
			n->named += x->named;
			n->named_modules++;
			if (n->verbose)
				fprintf(stderr,
				        PROG
				        ": record: named later %zu of %zu frames of %s, from %s\n",
				        x->named, x->frames, x->m.path, x->source);
		}
		if (x->named == x->frames && x->frames)
			record_unnamed_named(r, &f);
		for (size_t k = 0; k < nfr; k++) {
			/* a frame its symbols do not name is kept too, without a
			 * name, so that it does not make the module fresh again */
			if (fr[k].module != i || (!fr[k].name && !n->mods[mod].found))
				continue;
			int rc = found_add(n, (uint32_t)mod, fr[k].offset, fr[k].name);
			if (rc < 0)
				return rc;
			fr[k].name = NULL; /* the table's now */
		}
	}
	symbolize_later_pass_free(n->pass);
	n->pass = NULL;
	n->state = PASS_IDLE;
	return 0;
}

void record_names_step(struct recorder *r, size_t stacks)
{
	struct record_names *n = r->names;
	double now = mono_now();

	if (!n || r->err)
		return;
	/* Quiet: a drain that stored few stacks; a recording never quiet
	 * is given a moment after RECORD_NAMES_LOUD_S. */
	if (stacks <= RECORD_NAMES_QUIET_STACKS || !n->loud_at)
		n->loud_at = now;
	bool quiet = stacks <= RECORD_NAMES_QUIET_STACKS || now - n->loud_at >= RECORD_NAMES_LOUD_S;
	if (n->state != PASS_IDLE || !quiet || !n->nmods ||
	    (n->started && now - n->started < RECORD_NAMES_EVERY_S))
		return;
	n->loud_at = now;
	int rc = start_pass(r, now);
	if (rc < 0)
		record_fail(r, rc, "naming later: %s", strerror(-rc));
}

/* Waits for the pass's thread until `deadline` (CLOCK_MONOTONIC); false
 * when it is still running then. */
static bool pass_wait(struct record_names *n, double deadline)
{
	struct timespec until = {.tv_sec = (time_t)deadline,
	                         .tv_nsec = (long)((deadline - (double)(time_t)deadline) * 1e9)};

	pthread_mutex_lock(&n->mu);
	while (n->state == PASS_RUNNING)
		if (pthread_cond_timedwait(&n->cv, &n->mu, &until) == ETIMEDOUT)
			break;
	bool done = n->state == PASS_DONE;
	pthread_mutex_unlock(&n->mu);
	return done;
}

/* The pass done: its renames committed in a batch of their own. */
static int commit_pass(struct recorder *r)
{
	struct store_batch *b = store_batch_new(r->store);
	int rc = b ? record_names_apply(r, b) : -ENOMEM;

	if (rc >= 0 && r->names->state == PASS_APPLIED && (rc = store_batch_commit(b)) >= 0)
		rc = record_names_committed(r);
	else if (rc >= 0)
		r->names->state = PASS_IDLE; /* nothing was named */
	if (rc < 0)
		record_fail(r, rc, "naming later: %s",
		            b ? store_errmsg(r->store) : "cannot start a batch");
	store_batch_free(b);
	return rc;
}

int record_names_finish(struct recorder *r)
{
	struct record_names *n = r->names;
	double deadline = mono_now() + RECORD_NAMES_END_WAIT_S;
	int rc = 0;

	if (!n || r->err)
		return 0;
	/* The pass running, if any, then one for what is left. */
	for (int round = 0; round < 2 && rc >= 0; round++) {
		if (round == 1 && (rc = start_pass(r, mono_now())) < 0) {
			record_fail(r, rc, "naming later: %s", strerror(-rc));
			break;
		}
		if (n->state == PASS_IDLE)
			continue;
		if (!pass_wait(n, deadline)) {
			n->abandoned = true;
			fprintf(stderr,
			        PROG
			        ": record: naming later: still looking for debug info after %d s; "
			        "not waiting (flamefs-collect symbolize names the rest)\n",
			        RECORD_NAMES_END_WAIT_S);
			return 0;
		}
		rc = commit_pass(r);
	}
	if (rc >= 0 && n->verbose && n->passes)
		fprintf(stderr,
		        PROG ": record: named later %" PRIu64 " frames of %" PRIu64
		             " modules in %" PRIu64 " passes (%.3f s of CPU on their thread)\n",
		        n->named, n->named_modules, n->passes, n->cpu_s);
	return rc;
}
