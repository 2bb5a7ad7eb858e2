/*
 * cmd-stats.c — `flamefs-collect stats`: one line per stored series with
 * its samples, unique stacks, input bytes, disk footprint and host, then
 * the store's totals; with --by-host, one line per host instead; with
 * --quality, one line per series with its time span and how good its
 * stacks are, then the modules their unnamed weight falls in (also the
 * warnings import prints at its end).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "symbolize.h"
#include "view.h"

#include "cli.h"

static void usage_stats(FILE *f)
{
	fputs("Usage: " PROG " stats [--store DIR] [--by-host | --by LABEL | --quality]\n"
	      "\n"
	      "Lists every series (binary, version, event, host) with its samples,\n"
	      "weight, unique stacks, the bytes of input imported into it and the\n"
	      "bytes its counts take on disk, then the store's whole footprint\n"
	      "against all input bytes (how many times smaller, where it is), and\n"
	      "its two tiers: history (counts per time bucket) and the recent tier\n"
	      "(the samples it still keeps whole, with their moments and threads).\n"
	      "IMPORTED shows \u2014 where no input was attributed to the series\n"
	      "(recorded series), DISK where RocksDB's estimate cannot see its\n"
	      "counts yet (a small store before compact; the footprint then gives\n"
	      "no parts).  HOST is the last column.\n"
	      "\n"
	      "  --store DIR   the store (default: $FLAMEFS_STORE, else\n"
	      "                $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --by-host     one line per host instead: its series, samples,\n"
	      "                weight, input bytes (exact; \u2014 where its series\n"
	      "                were recorded) and the moments of its first and\n"
	      "                last sample (unix seconds, or seconds since boot\n"
	      "                for perf's clock, to the millisecond; .000 where\n"
	      "                a sample came without its own moment)\n"
	      "  --by LABEL    one line per value of LABEL instead (cgroup,\n"
	      "                container, thread, exe, cmdline, or an import's):\n"
	      "                its series, samples, weight and first and last\n"
	      "                sample, as --by-host; series without it under\n"
	      "                \u2014\n"
	      "  --quality     one line per series instead: its weight, the moments\n"
	      "                of its first and last sample, the share of its\n"
	      "                weight whose stacks reach an entry point (_start,\n"
	      "                start_thread, clone, ret_from_fork...: ROOTED%)\n"
	      "                and the share whose leaf is [unknown] or a bare\n"
	      "                module name (UNKNOWN%); HOST last.  Then, after an\n"
	      "                empty line, per series each module of that unknown\n"
	      "                weight, largest first: its weight and share, the\n"
	      "                build id kept with its frames (- when none), and on\n"
	      "                Debian the package with its debug info\n"
	      "                (PKG-dbg (installed|available), PKG-dbgsym (not in\n"
	      "                this archive); - when it cannot be known)\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " stats --store ~/prof\n"
	      "  " PROG " stats | sort -k4 -n\n"
	      "  " PROG " stats --by-host --store /srv/fleet\n"
	      "  " PROG " stats --by thread --store ~/prof\n"
	      "  " PROG " stats --quality | awk 'NF == 0 { exit } NR > 1 && $7 < 50'\n",
	      f);
}

/* ---- stats ------------------------------------------------------------- */

struct uniq {
	uint8_t *seen; /* one bit per node */
	uint64_t count;
};

static int count_unique(void *p, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct uniq *u = p;
	uint8_t bit = (uint8_t)(1u << (node & 7));
	if (!(u->seen[node >> 3] & bit)) {
		u->seen[node >> 3] |= bit;
		u->count++;
	}
	return 0;
}

/* What a column shows where it does not apply or was not measured. */
#define NOT_APPLICABLE "\u2014"

/* v as human() writes it, or NOT_APPLICABLE for 0: a series' IMPORTED is
 * 0 when no input bytes were attributed to it (recorded series, the
 * other sample types of a pprof), and DISK is 0 when RocksDB's estimate
 * cannot see its counts (still only in the write-ahead log, or inside
 * one block shared with other series). */
static void human(char *buf, size_t len, uint64_t v);
static void human_or_dash(char *buf, size_t len, uint64_t v)
{
	if (v == 0)
		snprintf(buf, len, "%s", NOT_APPLICABLE);
	else
		human(buf, len, v);
}

/* printf's %*s pads by bytes; this pads by characters, so that a
 * multibyte NOT_APPLICABLE keeps the columns aligned. */
static int pad(const char *s, int width)
{
	int chars = 0;
	for (const char *p = s; *p; p++)
		chars += ((unsigned char)*p & 0xc0) != 0x80;
	return width + (int)strlen(s) - chars;
}

static void human(char *buf, size_t len, uint64_t v)
{
	if (v >= 10000000000ull)
		snprintf(buf, len, "%.1fG", (double)v / 1e9);
	else if (v >= 10000000ull)
		snprintf(buf, len, "%.1fM", (double)v / 1e6);
	else if (v >= 10000ull)
		snprintf(buf, len, "%.1fk", (double)v / 1e3);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

/* A moment in microseconds as seconds to the millisecond (rounded
 * down), or NOT_APPLICABLE when there is none. */
static void moment(char *buf, size_t len, int64_t us)
{
	if (us == INT64_MAX || us == INT64_MIN) {
		snprintf(buf, len, "%s", NOT_APPLICABLE);
		return;
	}
	int64_t ms = us / 1000 - (us % 1000 < 0);
	int64_t sec = ms / 1000 - (ms % 1000 < 0);

	snprintf(buf, len, "%" PRId64 ".%03" PRId64, sec, ms - sec * 1000);
}

/* --by-host: the series of each host summed, hosts in name order. */
struct host_row {
	const char *host;
	uint64_t series, samples, weight, input;
	int64_t first, last;
};

static int cmp_host_row(const void *a, const void *b)
{
	return strcmp(((const struct host_row *)a)->host, ((const struct host_row *)b)->host);
}

static void print_by_host(const struct store_series *list, size_t n)
{
	struct host_row *rows = calloc(n ? n : 1, sizeof(*rows));
	size_t nrows = 0;

	if (!rows)
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct store_series *se = &list[i];
		struct host_row *h = NULL;
		for (size_t k = 0; k < nrows && !h; k++)
			if (strcmp(rows[k].host, se->host) == 0)
				h = &rows[k];
		if (!h) {
			h = &rows[nrows++];
			*h = (struct host_row){
			        .host = se->host, .first = INT64_MAX, .last = INT64_MIN};
		}
		h->series++;
		if (__builtin_add_overflow(h->samples, se->samples, &h->samples) ||
		    __builtin_add_overflow(h->weight, se->weight, &h->weight) ||
		    __builtin_add_overflow(h->input, se->input_bytes, &h->input))
			cli_die("host %s: its totals pass 2^64 - 1", se->host);
		if (se->first_us < h->first)
			h->first = se->first_us;
		if (se->last_us > h->last)
			h->last = se->last_us;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_host_row);
	printf("%-20s %8s %12s %16s %14s %16s %16s\n", "HOST", "SERIES", "SAMPLES", "WEIGHT",
	       "IMPORTED", "FIRST", "LAST");
	uint64_t series = 0, samples = 0;
	for (size_t k = 0; k < nrows; k++) {
		const struct host_row *h = &rows[k];
		char first[48], last[48], input[32];
		moment(first, sizeof(first), h->first);
		moment(last, sizeof(last), h->last);
		/* exact, or NOT_APPLICABLE for a host whose series were recorded */
		if (h->input)
			snprintf(input, sizeof(input), "%" PRIu64, h->input);
		else
			snprintf(input, sizeof(input), "%s", NOT_APPLICABLE);
		printf("%-20s %8" PRIu64 " %12" PRIu64 " %16" PRIu64 " %*s %*s %*s\n", h->host,
		       h->series, h->samples, h->weight, pad(input, 14), input, pad(first, 16),
		       first, pad(last, 16), last);
		series += h->series;
		if (__builtin_add_overflow(samples, h->samples, &samples))
			cli_die("the samples of all hosts pass 2^64 - 1");
	}
	printf("\n%zu host%s, %" PRIu64 " series, %" PRIu64 " samples\n", nrows,
	       nrows == 1 ? "" : "s", series, samples);
	free(rows);
}

/* --by LABEL: the series of each value of the label summed, values in
 * byte order; series without the label under NOT_APPLICABLE. */
struct label_row {
	char *value; /* malloc'd */
	uint64_t series, samples, weight;
	int64_t first, last;
};

static int cmp_label_row(const void *a, const void *b)
{
	return strcmp(((const struct label_row *)a)->value, ((const struct label_row *)b)->value);
}

static void print_by_label(const struct store_series *list, size_t n, const char *key)
{
	struct label_row *rows = calloc(n ? n : 1, sizeof(*rows));
	size_t nrows = 0;
	int width = 20;

	if (!rows)
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct store_series *se = &list[i];
		size_t len;
		const char *v = store_labels_get(se->labels, key, &len);
		if (!v) {
			v = NOT_APPLICABLE;
			len = strlen(v);
		}
		struct label_row *h = NULL;
		for (size_t k = 0; k < nrows && !h; k++)
			if (strlen(rows[k].value) == len && memcmp(rows[k].value, v, len) == 0)
				h = &rows[k];
		if (!h) {
			h = &rows[nrows++];
			*h = (struct label_row){
			        .value = strndup(v, len), .first = INT64_MAX, .last = INT64_MIN};
			if (!h->value)
				cli_die("out of memory");
			if ((int)len > width)
				width = len > 200 ? 200 : (int)len;
		}
		h->series++;
		if (__builtin_add_overflow(h->samples, se->samples, &h->samples) ||
		    __builtin_add_overflow(h->weight, se->weight, &h->weight))
			cli_die("%s %s: its totals pass 2^64 - 1", key, h->value);
		if (se->first_us < h->first)
			h->first = se->first_us;
		if (se->last_us > h->last)
			h->last = se->last_us;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_label_row);
	/* The label's name, upper-cased, heads the first column. */
	char head[STORE_LABEL_KEY_MAX + 1];
	size_t kl = strlen(key);
	for (size_t i = 0; i <= kl && i < sizeof(head); i++)
		head[i] = key[i] >= 'a' && key[i] <= 'z' ? (char)(key[i] - 'a' + 'A') : key[i];
	head[sizeof(head) - 1] = '\0';
	printf("%-*s %8s %12s %16s %16s %16s\n", width, head, "SERIES", "SAMPLES", "WEIGHT",
	       "FIRST", "LAST");
	uint64_t series = 0, samples = 0;
	for (size_t k = 0; k < nrows; k++) {
		const struct label_row *h = &rows[k];
		char first[48], last[48];
		moment(first, sizeof(first), h->first);
		moment(last, sizeof(last), h->last);
		printf("%-*s %8" PRIu64 " %12" PRIu64 " %16" PRIu64 " %*s %*s\n",
		       pad(h->value, width), h->value, h->series, h->samples, h->weight,
		       pad(first, 16), first, pad(last, 16), last);
		series += h->series;
		if (__builtin_add_overflow(samples, h->samples, &samples))
			cli_die("the samples of all values pass 2^64 - 1");
		free(h->value);
	}
	printf("\n%zu value%s of %s, %" PRIu64 " series, %" PRIu64 " samples\n", nrows,
	       nrows == 1 ? "" : "s", key, series, samples);
	free(rows);
}

void cli_unnamed_free(struct cli_unnamed *u, size_t n)
{
	for (size_t i = 0; u && i < n; i++) {
		free(u[i].module);
		free(u[i].build_id);
	}
	free(u);
}

/* Copies the rows of view_quality_unnamed(), which point into the tree. */
static int copy_unnamed(const struct view_unnamed *v, size_t n, struct cli_unnamed **out)
{
	struct cli_unnamed *u = calloc(n ? n : 1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		u[i].module = strndup(v[i].module, v[i].module_len);
		u[i].build_id = malloc(v[i].build_id_len ? v[i].build_id_len : 1);
		if (!u[i].module || !u[i].build_id) {
			cli_unnamed_free(u, i + 1);
			return -ENOMEM;
		}
		if (v[i].build_id_len)
			memcpy(u[i].build_id, v[i].build_id, v[i].build_id_len);
		u[i].build_id_len = v[i].build_id_len;
		u[i].weight = v[i].weight;
	}
	*out = u;
	return 0;
}

int cli_series_quality(struct store *s, const struct store_series *se, struct view_quality *q,
                       struct cli_unnamed **un, size_t *nun)
{
	struct view_tree *t;
	int r = view_tree_build(s, se, 1, INT64_MIN, INT64_MAX, &t);

	if (un) {
		*un = NULL;
		*nun = 0;
	}
	if (r < 0)
		return r;
	uint32_t node =
	        view_node_child_count(t, VIEW_ROOT) ? view_node_child(t, VIEW_ROOT, 0) : VIEW_ROOT;
	r = view_quality(t, node, q);
	if (r >= 0 && un) {
		struct view_unnamed *v;
		size_t n;
		if ((r = view_quality_unnamed(t, node, &v, &n)) >= 0) {
			r = copy_unnamed(v, n, un);
			if (r >= 0)
				*nun = n;
			free(v);
		}
	}
	view_tree_free(t);
	return r;
}

/* Is `se` in `list` with the same samples and weight? */
static bool series_unchanged(const struct store_series *list, size_t n,
                             const struct store_series *se)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].id == se->id)
			return list[i].samples == se->samples && list[i].weight == se->weight;
	return false;
}

/* One series' quality for the warnings after a command wrote: measured
 * (a tree built) at most once, however many warnings ask. */
struct quality_memo {
	bool done;
	int r; /* cli_series_quality's result */
	struct view_quality q;
	struct cli_unnamed *un; /* NULL once a warning took the rows */
	size_t nun;
};

static int memo_quality(struct store *s, const struct store_series *se, struct quality_memo *m)
{
	if (!m->done) {
		m->r = cli_series_quality(s, se, &m->q, &m->un, &m->nun);
		m->done = true;
	}
	return m->r;
}

static void memo_free(struct quality_memo *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++)
		cli_unnamed_free(m[i].un, m[i].nun);
	free(m);
}

static void warn_unrooted(struct store *s, const struct store_series *list, size_t n,
                          const struct store_series *before, size_t nbefore,
                          enum cli_stack_source from, struct quality_memo *memo)
{
	size_t worst = SIZE_MAX;
	struct view_quality wq = {0};

	for (size_t i = 0; i < n; i++) {
		if (series_unchanged(before, nbefore, &list[i]) ||
		    memo_quality(s, &list[i], &memo[i]) < 0)
			continue;
		struct view_quality q = memo[i].q;
		if (q.total == 0 || q.rooted * 2 >= q.total)
			continue;
		/* The one that matters most: the most weight cut short (a tiny
		 * series at 0% would hide a large one at 1%). */
		if (worst == SIZE_MAX || q.total - q.rooted > wq.total - wq.rooted) {
			worst = i;
			wq = q;
		}
	}
	if (worst != SIZE_MAX) {
		char share[32];
		view_quality_share(wq.rooted, wq.total, share);
		const char *why =
		        from == CLI_STACKS_PERF
		                ? "usually because frame pointers are missing under perf record "
		                  "-g; "
		                  "record with --call-graph dwarf, or with " PROG " record"
		                : "code without unwind tables or frame pointers, or JIT code not "
		                  "named yet; see " PROG " record's --help";
		fprintf(stderr,
		        PROG
		        ": warning: only %s%% of %s %s (%s) has stacks that reach an entry "
		        "point (_start, start_thread, ...): they were cut short, %s (see stats "
		        "--quality)\n",
		        share, list[worst].binary, list[worst].version, list[worst].event, why);
	}
}

/* Whether a series' host is this machine (its hostname): only then can
 * dpkg here say which package holds a module. */
static bool host_is_here(const char *host)
{
	char name[256];

	if (gethostname(name, sizeof(name)) < 0)
		return false;
	name[sizeof(name) - 1] = '\0';
	return strcmp(host, name) == 0;
}

static int unnamed_key_cmp(const struct cli_unnamed *x, const struct cli_unnamed *y)
{
	int c = strcmp(x->module, y->module);
	if (c)
		return c;
	if (x->build_id_len != y->build_id_len)
		return x->build_id_len < y->build_id_len ? -1 : 1;
	return x->build_id_len ? memcmp(x->build_id, y->build_id, x->build_id_len) : 0;
}

static int unnamed_weight_cmp(const void *a, const void *b)
{
	const struct cli_unnamed *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return unnamed_key_cmp(x, y);
}

static void warn_unnamed(struct store *s, const struct store_series *list, size_t n,
                         const struct store_series *before, size_t nbefore, const char *again,
                         struct quality_memo *memo)
{
	size_t best = SIZE_MAX;

	/* The event with the most weight among the series that changed: the
	 * weights of one event summed in the first series of it. */
	bool *changed = calloc(n ? n : 1, sizeof(*changed));
	size_t *first = calloc(n ? n : 1, sizeof(*first));
	uint64_t *sum = calloc(n ? n : 1, sizeof(*sum));
	if (!changed || !first || !sum) {
		free(changed);
		free(first);
		free(sum);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		changed[i] = !series_unchanged(before, nbefore, &list[i]) &&
		             strcmp(list[i].event, STORE_EVENT_SPANS) != 0;
		if (!changed[i])
			continue;
		size_t f = i;
		for (size_t j = 0; j < i; j++)
			if (changed[j] && first[j] == j &&
			    strcmp(list[j].event, list[i].event) == 0) {
				f = j;
				break;
			}
		first[i] = f;
		sum[f] += list[i].weight;
		if (best == SIZE_MAX || sum[f] > sum[best])
			best = f;
	}
	free(first);
	free(sum);
	struct cli_unnamed *agg = NULL;
	size_t nagg = 0;
	uint64_t total = 0, unnamed = 0;
	bool here = true; /* every series of this machine */
	for (size_t i = 0; best != SIZE_MAX && i < n; i++) {
		struct view_quality q;
		struct cli_unnamed *un;
		size_t nun;
		if (!changed[i] || strcmp(list[i].event, list[best].event) != 0 ||
		    memo_quality(s, &list[i], &memo[i]) < 0)
			continue;
		/* Each series is summed once: its rows move into agg. */
		q = memo[i].q;
		un = memo[i].un;
		nun = memo[i].nun;
		memo[i].un = NULL;
		memo[i].nun = 0;
		total += q.total;
		unnamed += q.unknown_leaf;
		here = here && host_is_here(list[i].host);
		struct cli_unnamed *na = realloc(agg, (nagg + nun + 1) * sizeof(*na));
		if (!na) {
			cli_unnamed_free(un, nun);
			continue;
		}
		agg = na;
		for (size_t j = 0; j < nun; j++) {
			size_t k = 0;
			while (k < nagg && unnamed_key_cmp(&agg[k], &un[j]) != 0)
				k++;
			if (k < nagg) {
				agg[k].weight += un[j].weight;
				free(un[j].module);
				free(un[j].build_id);
			} else {
				agg[nagg++] = un[j];
			}
		}
		free(un);
	}
	if (nagg && view_unnamed_large(unnamed, total)) {
		qsort(agg, nagg, sizeof(*agg), unnamed_weight_cmp);
		struct symbolize_debpkg q[2] = {0};
		uint64_t w[2];
		size_t top = nagg < 2 ? nagg : 2;
		for (size_t i = 0; i < top; i++) {
			q[i] = (struct symbolize_debpkg){.module = agg[i].module,
			                                 .build_id = agg[i].build_id,
			                                 .build_id_len = agg[i].build_id_len};
			w[i] = agg[i].weight;
		}
		if (here)
			symbolize_debpkg_find(q, top, SYMBOLIZE_DEBPKG_QUICK_MS);
		char share[32], advice[1024];
		view_quality_share(unnamed, total, share);
		symbolize_debpkg_advice(advice, sizeof(advice), q, w, top, total);
		fprintf(stderr,
		        PROG
		        ": warning: %s%% of the %s weight ends in code without function names, "
		        "%s: install debug packages or set DEBUGINFOD_URLS, and run "
		        "flamefs-collect symbolize (perf script text keeps offsets only where the "
		        "files it names are here, or when printed with --show-mmap-events: %s it "
		        "again so; stats --quality lists "
		        "every module)\n",
		        share, list[best].event, advice, again);
	}
	cli_unnamed_free(agg, nagg);
	free(changed);
}

void cli_warn_after(struct store *s, const struct store_series *before, size_t nbefore,
                    bool unrooted, enum cli_stack_source from, const char *again)
{
	struct store_series *list;
	size_t n;

	if (store_series_list(s, &list, &n) < 0)
		return; /* a warning only: nothing to report it against */
	struct quality_memo *memo = calloc(n ? n : 1, sizeof(*memo));
	if (memo) {
		if (unrooted)
			warn_unrooted(s, list, n, before, nbefore, from, memo);
		if (again)
			warn_unnamed(s, list, n, before, nbefore, again, memo);
	}
	memo_free(memo, n);
	store_series_free(list, n);
}

void cli_warn_unrooted(struct store *s, const struct store_series *before, size_t nbefore,
                       enum cli_stack_source from)
{
	cli_warn_after(s, before, nbefore, true, from, NULL);
}

void cli_warn_unnamed(struct store *s, const struct store_series *before, size_t nbefore,
                      const char *again)
{
	cli_warn_after(s, before, nbefore, false, CLI_STACKS_PERF, again);
}

/* Writes a module path for a terminal: control bytes, DEL and '\\' as
 * \xNN, as the view's text files write names. */
static void put_module(const char *m)
{
	for (const unsigned char *p = (const unsigned char *)m; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			printf("\\x%02x", *p);
		else
			putchar(*p);
}

static void build_id_hex(const uint8_t *id, size_t len, char out[129])
{
	if (len == 0 || len > 64) {
		strcpy(out, "-");
		return;
	}
	for (size_t i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* One row of --quality's second table: a module's unnamed weight in the
 * series of one (binary, version, event, host), all their label sets
 * summed, out of those series' total. */
struct unnamed_row {
	const struct store_series *se; /* the group's first series */
	uint64_t total;
	struct cli_unnamed u;
};

static bool same_group(const struct store_series *a, const struct store_series *b)
{
	return strcmp(a->binary, b->binary) == 0 && strcmp(a->version, b->version) == 0 &&
	       strcmp(a->event, b->event) == 0 && strcmp(a->host, b->host) == 0;
}

/* Adds u to the rows of the group that starts at rows[from]: summed into
 * the row of the same module and build id, else a new row (taking u's
 * strings; freed here when summed). */
static void group_add(struct unnamed_row **rows, size_t *nrows, size_t *cap, size_t from,
                      const struct store_series *first, struct cli_unnamed *u)
{
	for (size_t k = from; k < *nrows; k++) {
		struct cli_unnamed *r = &(*rows)[k].u;
		if (strcmp(r->module ? r->module : "", u->module ? u->module : "") == 0 &&
		    r->build_id_len == u->build_id_len &&
		    (!u->build_id_len || memcmp(r->build_id, u->build_id, u->build_id_len) == 0)) {
			r->weight += u->weight;
			free(u->module);
			free(u->build_id);
			return;
		}
	}
	if (*nrows == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		struct unnamed_row *nr = realloc(*rows, *cap * sizeof(*nr));
		if (!nr)
			cli_die("out of memory");
		*rows = nr;
	}
	(*rows)[(*nrows)++] = (struct unnamed_row){.se = first, .u = *u};
}

static int unnamed_row_cmp(const void *a, const void *b)
{
	const struct unnamed_row *x = a, *y = b;
	return x->u.weight > y->u.weight ? -1 : x->u.weight < y->u.weight;
}

/* --quality: each series' span and stack quality, then the modules with
 * unnamed weight of each (binary, version, event, host), largest first
 * within it, with the debug package that would name them where this
 * machine can tell (the series of this host only: dpkg here says nothing
 * of another host's files).  Series come sorted by (binary, version,
 * event, host, labels), so a group's label sets are neighbours. */
static void print_quality(struct store *s, const struct store_series *list, size_t n)
{
	struct unnamed_row *rows = NULL;
	size_t nrows = 0, cap = 0, from = 0;
	const struct store_series *first = NULL;
	uint64_t group_total = 0;

	printf("%-20s %-14s %-12s %16s %16s %16s %8s %8s %s\n", "BINARY", "VERSION", "EVENT",
	       "WEIGHT", "FIRST", "LAST", "ROOTED%", "UNKNOWN%", "HOST");
	for (size_t i = 0; i <= n; i++) {
		const struct store_series *se = i < n ? &list[i] : NULL;
		if (first && (!se || !same_group(first, se))) {
			for (size_t k = from; k < nrows; k++)
				rows[k].total = group_total;
			if (nrows > from)
				qsort(rows + from, nrows - from, sizeof(*rows), unnamed_row_cmp);
			first = NULL;
		}
		if (!se)
			break;
		if (!first) {
			first = se;
			from = nrows;
			group_total = 0;
		}
		struct view_quality q;
		struct cli_unnamed *un;
		size_t nun;
		char rs[32], us[32];
		int r = cli_series_quality(s, se, &q, &un, &nun);
		if (r < 0)
			cli_die("%s %s (%s): %s", se->binary, se->version, se->event, strerror(-r));
		view_quality_share(q.rooted, q.total, rs);
		view_quality_share(q.unknown_leaf, q.total, us);
		char first_m[48], last_m[48];
		moment(first_m, sizeof(first_m), se->first_us);
		moment(last_m, sizeof(last_m), se->last_us);
		printf("%-20s %-14s %-12s %16" PRIu64 " %*s %*s %8s %8s %s\n", se->binary,
		       se->version, se->event, se->weight, pad(first_m, 16), first_m,
		       pad(last_m, 16), last_m, rs, us, se->host);
		group_total += q.total;
		if (strcmp(se->event, STORE_EVENT_SPANS) == 0) {
			cli_unnamed_free(un, nun); /* a span's "[unended]" is no code */
			continue;
		}
		for (size_t j = 0; j < nun; j++)
			group_add(&rows, &nrows, &cap, from, first, &un[j]);
		free(un); /* the rows own (or freed) its strings now */
	}
	if (nrows == 0) {
		free(rows);
		return;
	}
	struct symbolize_debpkg *q = calloc(nrows, sizeof(*q));
	if (!q)
		cli_die("out of memory");
	for (size_t i = 0; i < nrows; i++)
		if (host_is_here(rows[i].se->host))
			q[i] = (struct symbolize_debpkg){.module = rows[i].u.module,
			                                 .build_id = rows[i].u.build_id,
			                                 .build_id_len = rows[i].u.build_id_len};
	symbolize_debpkg_find(q, nrows, SYMBOLIZE_DEBPKG_ASKED_MS);
	printf("\n%-20s %-14s %-12s %16s %8s %-40s %s\n", "BINARY", "VERSION", "EVENT", "UNNAMED",
	       "SHARE%", "BUILD_ID", "MODULE DEBUG_PACKAGE");
	for (size_t i = 0; i < nrows; i++) {
		char share[32], hex[129];
		view_quality_share(rows[i].u.weight, rows[i].total, share);
		build_id_hex(rows[i].u.build_id, rows[i].u.build_id_len, hex);
		printf("%-20s %-14s %-12s %16" PRIu64 " %8s %-40s ", rows[i].se->binary,
		       rows[i].se->version, rows[i].se->event, rows[i].u.weight, share, hex);
		put_module(rows[i].u.module);
		printf(" %s\n", q[i].hint[0] ? q[i].hint : "-");
		free(rows[i].u.module);
		free(rows[i].u.build_id);
	}
	free(q);
	free(rows);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'}, {"by-host", no_argument, NULL, 'H'},
	        {"by", required_argument, NULL, 'B'},    {"quality", no_argument, NULL, 'Q'},
	        {"help", no_argument, NULL, 'h'},        {0},
	};
	const char *store_arg = NULL;
	bool by_host = false, quality = false;
	const char *by = NULL;
	int c;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'H': by_host = true; break;
		case 'B': by = optarg; break;
		case 'Q': quality = true; break;
		case 'h': usage_stats(stdout); return 0;
		default: return cli_bad_option("stats", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("stats", "unexpected argument %s", argv[optind]);
	if ((by_host != 0) + (by != NULL) + (quality != 0) > 1)
		return cli_usage_error("stats", "--by-host, --by and --quality exclude each other");
	if (by) {
		/* A key as store.h makes them: [a-z][a-z0-9_]*, at most
		 * STORE_LABEL_KEY_MAX bytes. */
		size_t kl = strlen(by),
		       ok = kl >= 1 && kl <= STORE_LABEL_KEY_MAX && by[0] >= 'a' && by[0] <= 'z';
		for (size_t i = 0; ok && i < kl; i++)
			ok = (by[i] >= 'a' && by[i] <= 'z') || (by[i] >= '0' && by[i] <= '9') ||
			     by[i] == '_';
		if (!ok)
			return cli_usage_error("stats",
			                       "--by: expected a label key (cgroup, container, "
			                       "thread, exe, cmdline...), got \"%s\"",
			                       by);
	}

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	int opened = store_open(dir, STORE_READONLY, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	dir = store_where(s); /* a database: without its password */

	struct store_series *list;
	size_t n;
	if (store_series_list(s, &list, &n) < 0)
		cli_die_store(s);
	if (by_host || by || quality) {
		if (by_host)
			print_by_host(list, n);
		else if (by)
			print_by_label(list, n, by);
		else
			print_quality(s, list, n);
		store_series_free(list, n);
		store_close(s);
		free(owned);
		return 0;
	}

	struct uniq u = {.seen = calloc(store_node_count(s) / 8 + 1, 1)};
	if (!u.seen)
		cli_die("out of memory");

	printf("%-20s %-14s %-12s %12s %16s %10s %12s %12s %s\n", "BINARY", "VERSION", "EVENT",
	       "SAMPLES", "WEIGHT", "STACKS", "IMPORTED", "DISK", "HOST");
	uint64_t input = 0, samples = 0;
	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		samples += se->samples;
		memset(u.seen, 0, store_node_count(s) / 8 + 1);
		u.count = 0;
		if (store_series_counts(s, se->id, INT64_MIN, INT64_MAX, count_unique, &u) < 0)
			cli_die_store(s);
		uint64_t disk = 0;
		store_series_disk_bytes(s, se->id, &disk);
		char in[32], dk[32];
		human_or_dash(in, sizeof(in), se->input_bytes);
		human_or_dash(dk, sizeof(dk), disk);
		printf("%-20s %-14s %-12s %12" PRIu64 " %16" PRIu64 " %10" PRIu64 " %*s %*s %s\n",
		       se->binary, se->version, se->event, se->samples, se->weight, u.count,
		       pad(in, 12), in, pad(dk, 12), dk, se->host);
		input += se->input_bytes;
	}
	free(u.seen);

	struct store_footprint fp;
	if (store_footprint(s, &fp) < 0)
		cli_die_store(s);
	char a[32], b[32], f[32], nd[32], cn[32];
	human(a, sizeof(a), fp.dir_bytes);
	human(b, sizeof(b), input);
	/* A part's 0 is RocksDB's estimate not seeing it yet (still in the
	 * write-ahead log), or nothing there: a dash either way. */
	human_or_dash(f, sizeof(f), fp.frames_bytes);
	human_or_dash(nd, sizeof(nd), fp.nodes_bytes);
	human_or_dash(cn, sizeof(cn), fp.counts_bytes);
	printf("\n%zu series, %u frames, %u stack nodes\n", n, store_frame_count(s) - 1,
	       store_node_count(s) - 1);
	/* The two tiers: history, every count (the recent tier's samples
	 * are counted there too), and the recent tier, their detail. */
	char rb[32], rs[32];
	human_or_dash(rb, sizeof(rb), fp.samples_bytes);
	human(rs, sizeof(rs), fp.samples);
	/* Counts in no table file while the store holds samples: what was
	 * written last is still in the write-ahead log, and the parts' SST
	 * bytes would say a few bytes for all of it. */
	if (fp.counts_bytes == 0 && samples > 0)
		printf("store on disk: %s bytes (its parts are not in table files yet: compact "
		       "puts them there; recent tier: %s samples kept whole)",
		       a, rs);
	else
		printf("store on disk: %s bytes (frames %s, nodes %s, counts %s, recent tier %s: "
		       "%s samples kept whole)",
		       a, f, nd, cn, rb, rs);
	/* The ratio only where the store is smaller than what went into it:
	 * a store's fixed files outweigh a small input, and "0.2x smaller"
	 * says nothing true. */
	if (input == 0)
		printf("; nothing imported (recorded series have no input bytes)\n");
	else if (fp.dir_bytes > 0 && input > fp.dir_bytes)
		printf("; imported: %s bytes, %.1fx smaller\n", b,
		       (double)input / (double)fp.dir_bytes);
	else
		printf("; imported: %s bytes\n", b);
	/* Eight fields: scripts tell the series' rows (nine fields) from
	 * this line by its field count. */
	printf("bytes: dir=%" PRIu64 " frames=%" PRIu64 " nodes=%" PRIu64 " counts=%" PRIu64
	       " other=%" PRIu64 " recent=%" PRIu64 " input=%" PRIu64 "\n",
	       fp.dir_bytes, fp.frames_bytes, fp.nodes_bytes, fp.counts_bytes, fp.other_bytes,
	       fp.samples_bytes, input);
	store_series_free(list, n);
	store_close(s);
	free(owned);
	return 0;
}
