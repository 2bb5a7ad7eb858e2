/*
 * pprof.c — imports a pprof profile (profile.proto, raw or gzipped) into
 * one store batch.  Every sample type becomes a series whose event and unit
 * are the type's strings, e.g. Go's CPU profile gives "samples"/"count"
 * and "cpu"/"nanoseconds".  The series binary is --binary, else the base
 * name of the first mapping's file, else the input's base name up to its
 * first dot ("cpu.pb.gz" -> "cpu"; "pprof" for stdin).  The version is
 * --version, else the first 12 hex digits (lower case) of the first
 * mapping's build id when that build id is hex, else the default label.
 * Stacks are stored root first; a location with several lines yields
 * several frames, the inlined ones (every line but the last) named
 * "NAME_[i]" with kind INLINE, as stackcollapse does; a location without
 * lines is "[base name of its mapping]" or "[unknown]".  A frame's build id
 * is the mapping's, hex-decoded when it is hex, else its raw bytes.  Each
 * series' weight is its value; samples is the magnitude of the first
 * "count" sample type's value (1 where there is none, or it is 0); zero
 * values are not stored.  A sample type with an empty name (pprof reads
 * such profiles) is named "sample<i>", i its position from 0.  Negative
 * values (delta profiles, such as Go's /debug/pprof/allocs?seconds=N) go,
 * as magnitudes, to a series of their own named "-TYPE"
 * (IMPORT_NEGATIVE_PREFIX), so TYPE holds what grew and -TYPE what
 * shrank, and TYPE's total minus -TYPE's is pprof's net total.
 * A sample's string labels make its series' labels (see "labels" below);
 * its numeric labels are summed away.
 * The input's bytes are counted for the default sample type
 * (default_sample_type, else the last type, as pprof picks it), which
 * makes it the version's primary event in the view.  The whole input is
 * checked before anything is added, so a bad index is reported instead of
 * half-imported.  Before that, nothing is unpacked that the pre-scan
 * (pprof-scan.c) has not measured within the limits of pprof-internal.h:
 * a gzipped input is inflated once to measure it, keeping nothing, and
 * only then into a buffer of its size.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "parsers-internal.h"
#include "pprof-internal.h"
#include "profile-codec.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Function pb_function;

/* ---- id lookup -------------------------------------------------------- */

/* Maps a non-zero pprof id to its index in the profile's array. */
struct idmap {
	uint64_t *keys; /* 0 = empty slot */
	uint32_t *vals;
	size_t mask;
};

static uint64_t id_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
}

static int idmap_init(struct idmap *m, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	m->mask = cap - 1;
	if (!m->keys || !m->vals) {
		idmap_free(m);
		return -ENOMEM;
	}
	return 0;
}

/* Returns 0, or -EEXIST when the id is already present. */
static int idmap_put(struct idmap *m, uint64_t id, uint32_t val)
{
	size_t i = id_hash(id) & m->mask;
	while (m->keys[i]) {
		if (m->keys[i] == id)
			return -EEXIST;
		i = (i + 1) & m->mask;
	}
	m->keys[i] = id;
	m->vals[i] = val;
	return 0;
}

static bool idmap_get(const struct idmap *m, uint64_t id, uint32_t *val)
{
	if (id == 0)
		return false;
	size_t i = id_hash(id) & m->mask;
	while (m->keys[i]) {
		if (m->keys[i] == id) {
			*val = m->vals[i];
			return true;
		}
		i = (i + 1) & m->mask;
	}
	return false;
}

/* ---- the parsed profile ------------------------------------------------ */

/* The frames of one location, root first.  Their strings are the string
 * table's, or a string's derived names (struct derived). */
struct locframes {
	struct store_frame *frames;
	size_t n;
};

/* What is built from one string of the string table, once, however many
 * functions, mappings and locations use it: so a location costs its
 * frames whatever the length of the names it points to. */
struct derived {
	char *inl;           /* "NAME_[i]": an inlined function's name */
	char *bracket;       /* "[base name]": a location without lines */
	uint8_t *bid;        /* a hex build id, decoded */
	uint8_t bid_checked; /* bid is set, or the string is not hex */
	char *label_key;     /* the label key a Label.key string is stored under */
};

/* A label set of the file's samples (canonical, before --label's are
 * joined) and its series: ids[j] of sample type j, ids[n + j] of its
 * negative values ("-TYPE"), UINT32_MAX until a sample needs it. */
struct labelset {
	char *labels;
	uint64_t hash;
	uint32_t *ids;
};

/* An open-addressing table of label sets; cap is a power of two.  It
 * keeps at most LABELSETS_MAX sets: a sample of a set past them goes
 * through `spare`, its series asked of the store (which counts it under
 * the set's own series or, past the store's bound, its (other) set)
 * sample by sample, so that a profile with a label per sample costs no
 * memory per sample. */
#define LABELSETS_MAX 4096
struct labelsets {
	struct labelset *e;
	size_t n, cap;
	struct labelset spare;
};

struct pprof {
	struct import_ctx *ctx;
	pb_profile *p;
	struct idmap maps, funcs, locs;
	struct locframes *lf;   /* one per location */
	char **type;            /* each sample type's event name (type_names) */
	size_t *slen;           /* [string index] its length */
	struct derived *der;    /* [string index], built as needed */
	struct labelsets *sets; /* the label sets of samples with string labels */
};

static const char *str_at(const struct pprof *pp, int64_t i)
{
	return pp->p->string_table[i];
}

/* Checks a string index; `what` and `idx` name the holder in the message. */
static int check_str(struct pprof *pp, int64_t i, const char *what, size_t idx, const char *field)
{
	if (i >= 0 && (uint64_t)i < pp->p->n_string_table)
		return 0;
	return import_fail(
	        pp->ctx, 0,
	        "%s %zu: %s is string index %lld, expected one below %zu (the string table size)",
	        what, idx, field, (long long)i, pp->p->n_string_table);
}

/* The first sample type counted in "count", or SIZE_MAX: its value is
 * every series' samples. */
static size_t count_index(const struct pprof *pp)
{
	for (size_t i = 0; i < pp->p->n_sample_type; i++)
		if (strcmp(str_at(pp, pp->p->sample_type[i]->unit), "count") == 0)
			return i;
	return SIZE_MAX;
}

static uint64_t magnitude(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* The samples a value counts for: the magnitude of the sample's first
 * "count" type, else 1 (also when that is 0 but the value is not). */
static uint64_t sample_count(const Perftools__Profiles__Sample *s, size_t count_idx)
{
	uint64_t c = count_idx == SIZE_MAX ? 1 : magnitude(s->value[count_idx]);
	return c ? c : 1;
}

/* Checks that each sample type's values, and the samples, add up to less
 * than 2^64, the most a series' counts can hold.  Positive and negative
 * values go to series of their own (see import_pprof), so each sign's
 * magnitudes are summed apart. */
static int check_sums(struct pprof *pp)
{
	const pb_profile *p = pp->p;
	size_t count_idx = count_index(pp);
	size_t nt = p->n_sample_type;
	uint64_t(*sum)[2] = calloc(2 * nt + 2, sizeof(*sum)); /* [type][sign] {value, samples} */
	int rc = 0;

	if (!sum)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_sample && rc == 0; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		uint64_t samples = sample_count(s, count_idx);
		for (size_t j = 0; j <= s->n_value; j++) {
			size_t k = j < s->n_value ? 2 * j + (s->value[j] < 0) : 2 * nt;
			if (j < s->n_value && s->value[j] == 0)
				continue;
			uint64_t v = j < s->n_value ? magnitude(s->value[j]) : samples;
			if (!__builtin_add_overflow(sum[k][0], v, &sum[k][0]) &&
			    (j == s->n_value ||
			     !__builtin_add_overflow(sum[k][1], samples, &sum[k][1])))
				continue;
			if (j < s->n_value)
				rc = import_fail(
				        pp->ctx, 0,
				        "sample %zu: the \"%s\" values add up to more than "
				        "2^64 - 1 here; expected a total that fits in 64 bits",
				        i, pp->type[j]);
			else
				rc = import_fail(
				        pp->ctx, 0,
				        "sample %zu: the sample counts add up to more than "
				        "2^64 - 1 here; expected a total that fits in 64 bits",
				        i);
			break;
		}
	}
	free(sum);
	return rc;
}

/* Names each sample type's series: its type string, or "sample<i>" (i
 * counting the sample types from 0) when that is empty, as some writers
 * leave it; pprof reads such profiles too. */
static int type_names(struct pprof *pp)
{
	const pb_profile *p = pp->p;

	pp->type = calloc(p->n_sample_type, sizeof(*pp->type));
	if (!pp->type)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_sample_type; i++) {
		const char *t = str_at(pp, p->sample_type[i]->type);
		if (*t)
			pp->type[i] = strdup(t);
		else if (asprintf(&pp->type[i], "sample%zu", i) < 0)
			pp->type[i] = NULL;
		if (!pp->type[i])
			return -ENOMEM;
	}
	return 0;
}

/* Checks every string index and id, and builds the id maps. */
static int validate(struct pprof *pp)
{
	struct import_ctx *ctx = pp->ctx;
	pb_profile *p = pp->p;
	int rc;

	if (p->n_string_table == 0 || p->string_table[0][0] != '\0')
		return import_fail(
		        ctx, 0,
		        "expected a pprof profile whose string table starts with \"\", got %s",
		        p->n_string_table ? "a non-empty first string" : "no string table");
	if (p->n_sample_type == 0)
		return import_fail(
		        ctx, 0, "expected a pprof profile with at least one sample type, got none");
	if (p->n_sample_type > PPROF_MAX_SAMPLE_TYPES)
		return import_fail(ctx, 0,
		                   "has %zu sample types; expected at most %u (each is a series)",
		                   p->n_sample_type, PPROF_MAX_SAMPLE_TYPES);

	pp->slen = malloc(p->n_string_table * sizeof(*pp->slen));
	pp->der = calloc(p->n_string_table, sizeof(*pp->der));
	if (!pp->slen || !pp->der)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_string_table; i++)
		pp->slen[i] = strlen(p->string_table[i]);

	for (size_t i = 0; i < p->n_sample_type; i++) {
		if ((rc = check_str(pp, p->sample_type[i]->type, "sample type", i, "type")) < 0 ||
		    (rc = check_str(pp, p->sample_type[i]->unit, "sample type", i, "unit")) < 0)
			return rc;
		size_t tl = pp->slen[p->sample_type[i]->type],
		       ul = pp->slen[p->sample_type[i]->unit];
		if (tl > IMPORT_MAX_LABEL || ul > IMPORT_MAX_LABEL)
			return import_fail(ctx, 0,
			                   "sample type %zu: its %s is %zu bytes long; expected at "
			                   "most %zu",
			                   i, tl > IMPORT_MAX_LABEL ? "type" : "unit",
			                   tl > IMPORT_MAX_LABEL ? tl : ul, IMPORT_MAX_LABEL);
	}
	if ((rc = type_names(pp)) < 0)
		return rc;
	for (size_t i = 0; i < p->n_sample_type; i++) {
		const char *t = pp->type[i];
		for (size_t j = 0; j < i; j++)
			if (strcmp(t, pp->type[j]) == 0)
				return import_fail(ctx, 0,
				                   "sample types %zu and %zu are both \"%s\"; "
				                   "expected distinct names",
				                   j, i, t);
	}
	if (p->period_type &&
	    ((rc = check_str(pp, p->period_type->type, "period type", 0, "type")) < 0 ||
	     (rc = check_str(pp, p->period_type->unit, "period type", 0, "unit")) < 0))
		return rc;
	if ((rc = check_str(pp, p->drop_frames, "profile", 0, "drop_frames")) < 0 ||
	    (rc = check_str(pp, p->keep_frames, "profile", 0, "keep_frames")) < 0 ||
	    (rc = check_str(pp, p->default_sample_type, "profile", 0, "default_sample_type")) < 0)
		return rc;
	for (size_t i = 0; i < p->n_comment; i++)
		if ((rc = check_str(pp, p->comment[i], "comment", i, "text")) < 0)
			return rc;

	if (p->n_mapping > UINT32_MAX || p->n_function > UINT32_MAX || p->n_location > UINT32_MAX)
		return import_fail(ctx, 0,
		                   "expected fewer than 2^32 mappings, functions and locations");
	if ((rc = idmap_init(&pp->maps, p->n_mapping)) < 0 ||
	    (rc = idmap_init(&pp->funcs, p->n_function)) < 0 ||
	    (rc = idmap_init(&pp->locs, p->n_location)) < 0)
		return rc;

	for (size_t i = 0; i < p->n_mapping; i++) {
		const pb_mapping *m = p->mapping[i];
		if ((rc = check_str(pp, m->filename, "mapping", i, "filename")) < 0 ||
		    (rc = check_str(pp, m->build_id, "mapping", i, "build_id")) < 0)
			return rc;
		if (m->id == 0)
			return import_fail(ctx, 0, "mapping %zu: expected a non-zero id", i);
		if (idmap_put(&pp->maps, m->id, (uint32_t)i) < 0)
			return import_fail(
			        ctx, 0, "mapping %zu: id %llu is used twice; expected unique ids",
			        i, (unsigned long long)m->id);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		const pb_function *f = p->function[i];
		if ((rc = check_str(pp, f->name, "function", i, "name")) < 0 ||
		    (rc = check_str(pp, f->system_name, "function", i, "system_name")) < 0 ||
		    (rc = check_str(pp, f->filename, "function", i, "filename")) < 0)
			return rc;
		if (f->id == 0)
			return import_fail(ctx, 0, "function %zu: expected a non-zero id", i);
		if (idmap_put(&pp->funcs, f->id, (uint32_t)i) < 0)
			return import_fail(
			        ctx, 0, "function %zu: id %llu is used twice; expected unique ids",
			        i, (unsigned long long)f->id);
	}
	for (size_t i = 0; i < p->n_location; i++) {
		const pb_location *l = p->location[i];
		uint32_t x;
		if (l->id == 0)
			return import_fail(ctx, 0, "location %zu: expected a non-zero id", i);
		if (idmap_put(&pp->locs, l->id, (uint32_t)i) < 0)
			return import_fail(
			        ctx, 0, "location %zu: id %llu is used twice; expected unique ids",
			        i, (unsigned long long)l->id);
		if (l->mapping_id && !idmap_get(&pp->maps, l->mapping_id, &x))
			return import_fail(ctx, 0,
			                   "location %zu (id %llu): mapping id %llu does not "
			                   "exist; expected an id from the mapping table",
			                   i, (unsigned long long)l->id,
			                   (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++) {
			uint64_t fid = l->line[j]->function_id;
			if (fid && !idmap_get(&pp->funcs, fid, &x))
				return import_fail(
				        ctx, 0,
				        "location %zu (id %llu), line %zu: function id %llu does "
				        "not exist; expected an id from the function table",
				        i, (unsigned long long)l->id, j, (unsigned long long)fid);
		}
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		uint32_t x;
		if (s->n_value != p->n_sample_type)
			return import_fail(
			        ctx, 0,
			        "sample %zu: has %zu values, expected %zu (one per sample type)", i,
			        s->n_value, p->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!idmap_get(&pp->locs, s->location_id[j], &x))
				return import_fail(ctx, 0,
				                   "sample %zu: location id %llu does not exist; "
				                   "expected an id from the location table",
				                   i, (unsigned long long)s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *lb = s->label[j];
			if ((rc = check_str(pp, lb->key, "label of sample", i, "key")) < 0 ||
			    (rc = check_str(pp, lb->str, "label of sample", i, "str")) < 0 ||
			    (rc = check_str(pp, lb->num_unit, "label of sample", i, "num_unit")) <
			            0)
				return rc;
		}
	}
	return check_sums(pp);
}

/* ---- labels ------------------------------------------------------------
 * A sample's string labels (Label.str set) become its series' labels:
 * each key as import_label_key() maps it, each value cleaned by
 * store_label_value_clean(); a key a sample gives twice has its values
 * joined with ',' in the sample's order.  Two key strings of one file
 * that map to one label key are refused.  Numeric labels (Label.num:
 * Go's "bytes", a "pid" or "tid") are not labels: pprof samples carry
 * no moment for the recent tier to keep them with, so they are summed
 * away, as the view sums over them. */

struct rawlabel {
	const char *key; /* the mapped key */
	size_t pos;      /* its place in the sample, for a stable sort */
	int64_t str;     /* the value's string index */
};

static int cmp_rawlabel(const void *a, const void *b)
{
	const struct rawlabel *x = a, *y = b;
	int d = strcmp(x->key, y->key);
	return d ? d : (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_key_index(const void *a, const void *b, void *arg)
{
	const struct pprof *pp = arg;
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	int d = strcmp(pp->der[x].label_key, pp->der[y].label_key);
	return d ? d : strcmp(str_at(pp, x), str_at(pp, y));
}

/* Maps every key string a string label uses, and refuses two that map
 * to one label key. */
static int label_keys(struct pprof *pp)
{
	pb_profile *p = pp->p;
	int64_t *keys = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n_sample && rc == 0; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		for (size_t j = 0; j < s->n_label && rc == 0; j++) {
			const Perftools__Profiles__Label *lb = s->label[j];
			struct derived *d = &pp->der[lb->key];
			if (lb->str == 0 || d->label_key)
				continue;
			char k[IMPORT_LABEL_KEY_SIZE];
			import_label_key(str_at(pp, lb->key), pp->slen[lb->key], k);
			d->label_key = strdup(k);
			rc = d->label_key ? import_grow((void **)&keys, &cap, n + 1, sizeof(*keys))
			                  : -ENOMEM;
			if (rc == 0)
				keys[n++] = lb->key;
		}
	}
	if (rc == 0 && n > 1)
		qsort_r(keys, n, sizeof(*keys), cmp_key_index, pp);
	for (size_t i = 1; rc == 0 && i < n; i++) {
		const char *a = str_at(pp, keys[i - 1]), *b = str_at(pp, keys[i]);
		if (strcmp(pp->der[keys[i - 1]].label_key, pp->der[keys[i]].label_key) != 0 ||
		    strcmp(a, b) == 0)
			continue;
		char ea[64], eb[64];
		import_excerpt(ea, sizeof(ea), a, strlen(a));
		import_excerpt(eb, sizeof(eb), b, strlen(b));
		rc = import_fail(pp->ctx, 0,
		                 "label keys \"%s\" and \"%s\" both become label key %s; expected "
		                 "keys that differ in more than case, punctuation or past byte %d",
		                 ea, eb, pp->der[keys[i]].label_key, STORE_LABEL_KEY_MAX);
	}
	free(keys);
	return rc;
}

/* The canonical labels of sample s's string labels into *out (malloc'd;
 * NULL when it has none). */
static int sample_labels(struct pprof *pp, const Perftools__Profiles__Sample *s, char **out)
{
	struct rawlabel *rl = NULL;
	struct store_label *l = NULL;
	char **vals = NULL;
	size_t n = 0, nl = 0;
	int rc = 0;

	*out = NULL;
	for (size_t j = 0; j < s->n_label; j++)
		n += s->label[j]->str != 0;
	if (n == 0)
		return 0;
	rl = malloc(n * sizeof(*rl));
	l = malloc(n * sizeof(*l));
	vals = calloc(n, sizeof(*vals));
	if (!rl || !l || !vals) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	for (size_t j = 0; j < s->n_label; j++) {
		const Perftools__Profiles__Label *lb = s->label[j];
		if (lb->str == 0)
			continue;
		rl[n] = (struct rawlabel){pp->der[lb->key].label_key, j, lb->str};
		n++;
	}
	qsort(rl, n, sizeof(*rl), cmp_rawlabel);
	for (size_t i = 0; i < n;) {
		size_t e = i + 1, len = pp->slen[rl[i].str];
		while (e < n && strcmp(rl[e].key, rl[i].key) == 0)
			len += 1 + pp->slen[rl[e++].str];
		char *raw = malloc(len + 1), *o = raw;
		if (!raw) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t k = i; k < e; k++) {
			if (k > i)
				*o++ = ',';
			memcpy(o, str_at(pp, rl[k].str), pp->slen[rl[k].str]);
			o += pp->slen[rl[k].str];
		}
		rc = store_label_value_clean(raw, len, &vals[nl]);
		free(raw);
		if (rc < 0)
			goto out;
		l[nl].key = rl[i].key;
		l[nl].value = vals[nl];
		nl++;
		i = e;
	}
	rc = store_labels_make(l, nl, out);
out:
	for (size_t i = 0; vals && i < nl; i++)
		free(vals[i]);
	free(vals);
	free(l);
	free(rl);
	return rc;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The set of `labels` in pp->sets, added (taking labels) when new; *out
 * points into the table until the next call.  0 or -ENOMEM (labels is
 * freed then). */
static int labelset_get(struct pprof *pp, char *labels, struct labelset **out)
{
	struct labelsets *t = pp->sets;
	uint64_t h = hash_str(labels);
	size_t types = pp->p->n_sample_type;

	if (t->n >= LABELSETS_MAX) {
		for (size_t k = h & (t->cap - 1); t->e[k].labels; k = (k + 1) & (t->cap - 1)) {
			if (t->e[k].hash == h && strcmp(t->e[k].labels, labels) == 0) {
				free(labels);
				*out = &t->e[k];
				return 0;
			}
		}
		if (!t->spare.ids && !(t->spare.ids = malloc(2 * types * sizeof(uint32_t)))) {
			free(labels);
			return -ENOMEM;
		}
		free(t->spare.labels);
		t->spare.labels = labels;
		t->spare.hash = h;
		memset(t->spare.ids, 0xff, 2 * types * sizeof(uint32_t));
		*out = &t->spare;
		return 0;
	}

	if ((t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct labelset *ne = calloc(ncap, sizeof(*ne));
		if (!ne) {
			free(labels);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->e[i].labels)
				continue;
			size_t k = t->e[i].hash & (ncap - 1);
			while (ne[k].labels)
				k = (k + 1) & (ncap - 1);
			ne[k] = t->e[i];
		}
		free(t->e);
		t->e = ne;
		t->cap = ncap;
	}
	size_t k = h & (t->cap - 1);
	for (; t->e[k].labels; k = (k + 1) & (t->cap - 1)) {
		if (t->e[k].hash == h && strcmp(t->e[k].labels, labels) == 0) {
			free(labels);
			*out = &t->e[k];
			return 0;
		}
	}
	uint32_t *ids = malloc(2 * types * sizeof(*ids));
	if (!ids) {
		free(labels);
		return -ENOMEM;
	}
	memset(ids, 0xff, 2 * types * sizeof(*ids));
	t->e[k] = (struct labelset){labels, h, ids};
	t->n++;
	*out = &t->e[k];
	return 0;
}

static void labelsets_free(struct labelsets *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		free(t->e[i].labels);
		free(t->e[i].ids);
	}
	free(t->e);
	free(t->spare.labels);
	free(t->spare.ids);
}

/* ---- frames ----------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool is_hex(const char *s, size_t len)
{
	if (len == 0 || len % 2)
		return false;
	for (size_t i = 0; i < len; i++)
		if (import_hexval(s[i]) < 0)
			return false;
	return true;
}

static void locframes_free(struct locframes *lf)
{
	free(lf->frames);
}

/* "NAME_[i]" for string si, built once.  A name past IMPORT_MAX_NAME is
 * copied only that far: import_path cuts the result to the same bytes. */
static const char *inline_name(struct pprof *pp, int64_t si, size_t *len)
{
	struct derived *d = &pp->der[si];
	size_t n = import_stored_len(pp->slen[si]);

	if (!d->inl) {
		d->inl = malloc(n + sizeof("_[i]"));
		if (!d->inl)
			return NULL;
		memcpy(d->inl, str_at(pp, si), n);
		memcpy(d->inl + n, "_[i]", sizeof("_[i]"));
	}
	*len = n + 4;
	return d->inl;
}

/* "[base name]" of file name string si, built once (the base name copied
 * at most IMPORT_MAX_NAME bytes, as in inline_name). */
static const char *bracket_name(struct pprof *pp, int64_t si, size_t *len)
{
	struct derived *d = &pp->der[si];
	const char *path = str_at(pp, si);
	const char *b = base_name(path);
	size_t n = import_stored_len(pp->slen[si] - (size_t)(b - path));

	if (!d->bracket) {
		d->bracket = malloc(n + 3);
		if (!d->bracket)
			return NULL;
		d->bracket[0] = '[';
		memcpy(d->bracket + 1, b, n);
		memcpy(d->bracket + 1 + n, "]", 2);
	}
	*len = n + 2;
	return d->bracket;
}

/* The build id of string si: decoded when hex, else its raw bytes. */
static int build_id(struct pprof *pp, int64_t si, const uint8_t **bid, size_t *len)
{
	struct derived *d = &pp->der[si];
	const char *s = str_at(pp, si);
	size_t n = pp->slen[si];

	if (!d->bid_checked) {
		if (is_hex(s, n)) {
			d->bid = malloc(n / 2);
			if (!d->bid)
				return -ENOMEM;
			for (size_t i = 0; i < n / 2; i++)
				d->bid[i] = (uint8_t)(import_hexval(s[2 * i]) << 4 |
				                      import_hexval(s[2 * i + 1]));
		}
		d->bid_checked = 1;
	}
	*bid = d->bid ? d->bid : (const uint8_t *)s;
	*len = d->bid ? n / 2 : n;
	return 0;
}

/* Builds the root-first frames of location `idx`. */
static int build_location(struct pprof *pp, size_t idx)
{
	static const char unknown[] = "[unknown]", unknown_inl[] = "[unknown]_[i]";
	const pb_location *l = pp->p->location[idx];
	struct locframes *lf = &pp->lf[idx];
	int64_t module = 0; /* string 0 is "" */
	const uint8_t *bid = NULL;
	size_t bid_len = 0;
	uint32_t mi;
	int rc;

	if (l->mapping_id && idmap_get(&pp->maps, l->mapping_id, &mi)) {
		module = pp->p->mapping[mi]->filename;
		rc = build_id(pp, pp->p->mapping[mi]->build_id, &bid, &bid_len);
		if (rc < 0)
			return rc;
	}

	size_t nframes = l->n_line ? l->n_line : 1;
	lf->frames = calloc(nframes, sizeof(*lf->frames));
	if (!lf->frames)
		return -ENOMEM;
	lf->n = nframes;

	for (size_t k = 0; k < nframes; k++) {
		struct store_frame *f = &lf->frames[k];
		f->module = str_at(pp, module);
		f->module_len = pp->slen[module];
		f->build_id = bid_len ? bid : NULL;
		f->build_id_len = bid_len;

		if (l->n_line == 0) {
			f->kind = STORE_FRAME_UNKNOWN;
			if (*base_name(f->module)) {
				f->name = bracket_name(pp, module, &f->name_len);
				if (!f->name)
					return -ENOMEM;
			} else {
				f->name = unknown;
				f->name_len = sizeof(unknown) - 1;
			}
			continue;
		}

		/* Root first: frame k is line n-1-k; only the last line of a
		 * location is not inlined. */
		size_t j = l->n_line - 1 - k;
		const Perftools__Profiles__Line *ln = l->line[j];
		bool inl = j + 1 < l->n_line;
		int64_t name = 0;
		uint32_t fi;
		if (idmap_get(&pp->funcs, ln->function_id, &fi)) {
			const pb_function *fn = pp->p->function[fi];
			name = pp->slen[fn->name] ? fn->name : fn->system_name;
			f->file = str_at(pp, fn->filename);
			f->file_len = pp->slen[fn->filename];
		}
		bool unk = pp->slen[name] == 0;
		if (unk) {
			f->name = inl ? unknown_inl : unknown;
			f->name_len = inl ? sizeof(unknown_inl) - 1 : sizeof(unknown) - 1;
		} else if (inl) {
			f->name = inline_name(pp, name, &f->name_len);
			if (!f->name)
				return -ENOMEM;
		} else {
			f->name = str_at(pp, name);
			f->name_len = pp->slen[name];
		}
		f->line = (ln->line > 0 && ln->line <= UINT32_MAX) ? (uint32_t)ln->line : 0;
		f->kind = inl ? STORE_FRAME_INLINE : unk ? STORE_FRAME_UNKNOWN : STORE_FRAME_USER;
	}
	return 0;
}

/* ---- series ----------------------------------------------------------- */

/* The default binary: first mapping's base name, else the input's base
 * name without its extensions.  Writes into out (size outlen). */
static void default_binary(const struct pprof *pp, char *out, size_t outlen)
{
	const char *b = "";
	if (pp->p->n_mapping)
		b = base_name(str_at(pp, pp->p->mapping[0]->filename));
	if (*b) {
		snprintf(out, outlen, "%s", b);
		return;
	}
	const char *path = pp->ctx->path;
	if (!path || strcmp(path, "-") == 0) {
		snprintf(out, outlen, "pprof");
		return;
	}
	snprintf(out, outlen, "%s", base_name(path));
	char *dot = strchr(out, '.');
	if (dot && dot != out)
		*dot = '\0';
	if (!*out)
		snprintf(out, outlen, "pprof");
}

/* The default version: the first mapping's hex build id, shortened to 12
 * digits; "" when there is none. */
static void default_version(const struct pprof *pp, char *out, size_t outlen)
{
	out[0] = '\0';
	if (!pp->p->n_mapping)
		return;
	const char *b = str_at(pp, pp->p->mapping[0]->build_id);
	if (!is_hex(b, strlen(b)))
		return;
	snprintf(out, outlen, "%.12s", b);
	for (char *c = out; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
}

/* The default sample type, as pprof picks it: the one default_sample_type
 * names, else the last. */
static size_t default_type(const struct pprof *pp)
{
	const pb_profile *p = pp->p;
	const char *want = p->default_sample_type ? str_at(pp, p->default_sample_type) : "";

	for (size_t i = 0; *want && i < p->n_sample_type; i++)
		if (strcmp(pp->type[i], want) == 0)
			return i;
	return p->n_sample_type - 1;
}

/* ---- import ----------------------------------------------------------- */

static int add_samples(struct pprof *pp, const uint32_t *series, uint32_t *neg_series,
                       const char *binary, const char *version, int64_t when)
{
	struct import_ctx *ctx = pp->ctx;
	pb_profile *p = pp->p;
	struct store_frame *stack = NULL;
	size_t cap = 0;
	int rc = 0;

	/* A sample type counted in "count" gives every series its samples. */
	size_t count_idx = count_index(pp);
	struct import_sums sums = {0};

	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		bool any = false;
		for (size_t j = 0; j < s->n_value; j++)
			any |= s->value[j] != 0;
		if (!any)
			continue;

		/* Leaf first in the sample; root first in the store.  The
		 * frames are gathered leaf first until the stack is past the
		 * limits (import_stack_past), then turned root first. */
		size_t n = 0, depth = 0, bytes = 0;
		bool past = false;
		for (size_t k = 0; k < s->n_location_id && !past; k++) {
			uint32_t li = 0;
			idmap_get(&pp->locs, s->location_id[k], &li);
			const struct locframes *lf = &pp->lf[li];
			for (size_t f = lf->n; f-- > 0 && !past;) {
				rc = import_grow((void **)&stack, &cap, n + 1, sizeof(*stack));
				if (rc < 0)
					goto out;
				stack[n++] = lf->frames[f];
				past = import_stack_past(&depth, &bytes, lf->frames[f].name_len);
			}
		}
		for (size_t k = 0; k < n / 2; k++) {
			struct store_frame t = stack[k];
			stack[k] = stack[n - 1 - k];
			stack[n - 1 - k] = t;
		}

		uint32_t node;
		rc = import_path(ctx, stack, n, &node);
		if (rc < 0)
			goto out;
		uint64_t samples = sample_count(s, count_idx);
		/* The series of a sample with string labels are its set's. */
		const uint32_t *pos = series;
		uint32_t *neg = neg_series;
		const char *labels = NULL;
		char *sl;
		rc = sample_labels(pp, s, &sl);
		if (rc < 0)
			goto out;
		if (sl) {
			struct labelset *ls;
			rc = labelset_get(pp, sl, &ls);
			if (rc < 0)
				goto out;
			labels = ls->labels;
			for (size_t j = 0; j < s->n_value; j++) {
				if (s->value[j] <= 0 || ls->ids[j] != UINT32_MAX)
					continue;
				rc = import_series_labels(ctx, binary, version, pp->type[j],
				                          str_at(pp, p->sample_type[j]->unit),
				                          labels, &ls->ids[j]);
				if (rc < 0)
					goto out;
			}
			pos = ls->ids;
			neg = ls->ids + p->n_sample_type;
		}
		for (size_t j = 0; j < s->n_value; j++) {
			if (s->value[j] == 0)
				continue;
			uint32_t id = pos[j];
			if (s->value[j] < 0) {
				if (neg[j] == UINT32_MAX) {
					const Perftools__Profiles__ValueType *t = p->sample_type[j];
					char *ev;
					if (asprintf(&ev, IMPORT_NEGATIVE_PREFIX "%s",
					             pp->type[j]) < 0) {
						rc = -ENOMEM;
						goto out;
					}
					rc = import_series_labels(ctx, binary, version, ev,
					                          str_at(pp, t->unit), labels,
					                          &neg[j]);
					free(ev);
					if (rc < 0)
						goto out;
				}
				id = neg[j];
			}
			rc = import_add(ctx, &sums, 0, id, when, node, samples,
			                magnitude(s->value[j]));
			if (rc < 0)
				goto out;
		}
		ctx->samples++;
		if (ctx->progress && (i & 4095) == 4095)
			ctx->progress(ctx);
	}
out:
	free(stack);
	import_sums_free(&sums);
	return rc;
}

int import_pprof(struct import_ctx *ctx)
{
	uint8_t *raw = NULL, *plain = NULL;
	size_t raw_len = 0, plain_len = 0;
	struct pprof pp = {.ctx = ctx};
	struct labelsets sets = {0};
	uint32_t *series = NULL, *neg = NULL;
	int rc;

	rc = pprof_read_all(ctx, &raw, &raw_len);
	if (rc < 0)
		goto out;
	ctx->bytes = raw_len;
	if (raw_len == 0) {
		rc = import_fail(ctx, 0, "expected a pprof profile, got an empty file");
		goto out;
	}

	/* The pre-scan: what unpacking would take, within the limits,
	 * before anything is unpacked (pprof-scan.c). */
	struct pprof_scan sc = {0};
	const uint8_t *data = raw;
	size_t len = raw_len;
	if (pprof_is_gzip(raw, raw_len)) {
		rc = pprof_gunzip(ctx, raw, raw_len, &sc, &plain, &plain_len);
		if (rc < 0)
			goto out;
		data = plain;
		len = plain_len;
		if (len == 0) {
			rc = import_fail(ctx, 0,
			                 "expected a pprof profile, got an empty gzip stream");
			goto out;
		}
	}

	if (data == raw) {
		(void)pprof_scan_feed(&sc, data, len);
		(void)pprof_scan_end(&sc);
		rc = pprof_check_scan(ctx, &sc, false);
		if (rc < 0)
			goto out;
	}

	pp.p = profile_decode(data, len);
	if (!pp.p) {
		rc = import_fail(
		        ctx, 0,
		        "expected a pprof profile (protobuf%s), got malformed or truncated data",
		        data == raw ? ", optionally gzipped" : " inside gzip");
		goto out;
	}
	rc = pprof_check_string_nuls(ctx, data, len);
	if (rc < 0)
		goto out;
	/* The compressed copies are no longer needed. */
	free(plain);
	plain = NULL;

	rc = validate(&pp);
	if (rc < 0)
		goto out;
	rc = label_keys(&pp);
	if (rc < 0)
		goto out;
	pp.sets = &sets;

	pp.lf = calloc(pp.p->n_location ? pp.p->n_location : 1, sizeof(*pp.lf));
	series = calloc(pp.p->n_sample_type, sizeof(*series));
	if (!pp.lf || !series) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pp.p->n_location; i++) {
		rc = build_location(&pp, i);
		if (rc < 0)
			goto out;
	}

	char binary[256], version[16];
	default_binary(&pp, binary, sizeof(binary));
	default_version(&pp, version, sizeof(version));
	for (size_t i = 0; i < pp.p->n_sample_type; i++) {
		const Perftools__Profiles__ValueType *t = pp.p->sample_type[i];
		rc = import_series(ctx, binary, *version ? version : NULL, pp.type[i],
		                   str_at(&pp, t->unit), &series[i]);
		if (rc < 0)
			goto out;
	}

	int64_t now = ctx->opt ? ctx->opt->now : 0;
	int64_t when = pp.p->time_nanos > 0 ? pp.p->time_nanos / 1000000000 : now;
	neg = malloc(pp.p->n_sample_type * sizeof(*neg));
	if (!neg) {
		rc = -ENOMEM;
		goto out;
	}
	memset(neg, 0xff, pp.p->n_sample_type * sizeof(*neg));
	rc = add_samples(&pp, series, neg, binary, *version ? version : NULL, when);
	if (rc < 0)
		goto out;

	/* The input's bytes count for the default sample type, which makes
	 * it the version's primary event in the view (fs/README.md). */
	rc = store_batch_input_bytes(ctx->batch, series[default_type(&pp)], raw_len);
	if (rc < 0)
		goto out;
	if (ctx->progress)
		ctx->progress(ctx);
	rc = 0;

out:
	if (pp.lf) {
		for (size_t i = 0; i < pp.p->n_location; i++)
			locframes_free(&pp.lf[i]);
		free(pp.lf);
	}
	free(series);
	free(neg);
	labelsets_free(&sets);
	if (pp.type) {
		for (size_t i = 0; i < pp.p->n_sample_type; i++)
			free(pp.type[i]);
		free(pp.type);
	}
	if (pp.der) {
		for (size_t i = 0; i < pp.p->n_string_table; i++) {
			free(pp.der[i].inl);
			free(pp.der[i].bracket);
			free(pp.der[i].bid);
			free(pp.der[i].label_key);
		}
		free(pp.der);
	}
	free(pp.slen);
	idmap_free(&pp.maps);
	idmap_free(&pp.funcs);
	idmap_free(&pp.locs);
	profile_free(pp.p);
	free(plain);
	free(raw);
	return rc;
}
