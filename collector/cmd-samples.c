/*
 * cmd-samples.c — `flamefs-collect samples`: prints the samples the
 * store's recent tier keeps whole, one at a time in time order, each
 * with its moment, process, thread, weight and stack: in a form close to
 * `perf script`'s, or one folded line each.  It is how a person or a test
 * sees when each sample happened.  Samples whose detail was rolled up,
 * and counts stored without a moment, are not printed (export has them).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"

#include "cli.h"

static void usage_samples(FILE *f)
{
	fputs("Usage: " PROG " samples [--store STORE] [--from TIME] [--to TIME]\n"
	      "           [--binary NAME] [--version LABEL] [--event EVENT] [--host NAME]\n"
	      "           [--folded]\n"
	      "\n"
	      "Prints every sample the store keeps whole (its recent tier: see\n"
	      "record --keep-samples), in time order, as perf script does, so that\n"
	      "import reads it back:\n"
	      "\n"
	      "  BINARY PID/TID SECONDS.MICROSECONDS: WEIGHT EVENT:\n"
	      "  \\t0 LEAF_FUNCTION (MODULE)\n"
	      "  \\t...\n"
	      "  \\t0 ROOT_FUNCTION (MODULE)\n"
	      "  (a blank line)\n"
	      "\n"
	      "The store keeps no program counter: the pc column is 0, and a frame\n"
	      "without a module shows [unknown].\n"
	      "\n"
	      "or, with --folded, one line a sample:\n"
	      "\n"
	      "  SECONDS.MICROSECONDS PID TID WEIGHT ROOT;...;LEAF\n"
	      "\n"
	      "A PID or TID of 0 is unknown (perf script text that printed only a\n"
	      "thread id).  Times are Unix time, or perf's clock (seconds since boot)\n"
	      "for an import that had no wall clock.  Samples whose detail was rolled\n"
	      "up, and samples counted without a moment, are not printed: `export`\n"
	      "counts them.\n"
	      "\n"
	      "  --store STORE    the store (default: $FLAMEFS_STORE, else\n"
	      "                   $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --from TIME      only samples at or after TIME: Unix seconds with an\n"
	      "                   optional fraction (1764000000.25) or ISO 8601 UTC\n"
	      "                   to the microsecond (2026-11-24T14:02:03.250Z)\n"
	      "  --to TIME        only samples before TIME\n"
	      "  --binary NAME    only the series of this binary\n"
	      "  --version LABEL  only the series with this version label\n"
	      "  --event EVENT    only this event (cpu-clock, off-cpu, ...)\n"
	      "  --host NAME      only the series of this host\n"
	      "  --folded         one line a sample, its stack root first\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " samples --store ~/prof --binary nginx | less\n"
	      "  " PROG " samples --store ~/prof --from 2026-11-24T14:02:03.250Z \\\n"
	      "      --to 2026-11-24T14:02:13.250Z --folded\n"
	      "  " PROG " samples --folded --event off-cpu | awk '{w[$3] += $4} END {for (t in w) "
	      "print t, w[t]}'\n",
	      f);
}

/* Parses "SECONDS[.FRACTION]" or "YYYY-MM-DDTHH:MM:SS[.FRACTION][Z]"
 * (UTC) into microseconds; digits of the fraction past the sixth are
 * dropped.  0, or -EINVAL. */
static int parse_time_us(const char *s, int64_t *out)
{
	int64_t sec = 0, usec = 0;
	const char *p = s;

	if (!*s)
		return -EINVAL;
	int y, mo, d, h, mi, se, n = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) == 6 && n == 19) {
		if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
		    y < 1970)
			return -EINVAL;
		struct tm tm = {.tm_year = y - 1900,
		                .tm_mon = mo - 1,
		                .tm_mday = d,
		                .tm_hour = h,
		                .tm_min = mi,
		                .tm_sec = se};
		time_t t = timegm(&tm);
		if (t == (time_t)-1)
			return -EINVAL;
		sec = (int64_t)t;
		p = s + n;
	} else {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (sec > (INT64_MAX / 1000000 - 9) / 10)
				return -EINVAL;
			sec = sec * 10 + (*p - '0');
		}
	}
	if (*p == '.') {
		int digits = 0;
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 6)
				usec = usec * 10 + (*p - '0');
		for (; digits < 6; digits++)
			usec *= 10;
	}
	if (p > s && *p == 'Z' && n == 19)
		p++;
	if (*p)
		return -EINVAL;
	*out = sec * 1000000 + usec;
	return 0;
}

/* One sample of the slice being printed, with its series. */
struct row {
	struct store_sample s;
	size_t series; /* index into the matched series */
};

struct samples_job {
	struct store *s;
	struct store_series *list; /* every series */
	size_t nlist;
	size_t *match; /* indices into list of the series printed */
	size_t nmatch;
	bool folded;
	struct row *rows;
	size_t nrows, cap;
	size_t cur; /* the matched series being walked */
	uint32_t *path;
	size_t path_cap;
	uint64_t printed;
};

static int collect(void *ctx, const struct store_sample *smp)
{
	struct samples_job *j = ctx;

	if (j->nrows == j->cap) {
		size_t ncap = j->cap ? j->cap * 2 : 4096;
		struct row *n = realloc(j->rows, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		j->rows = n;
		j->cap = ncap;
	}
	j->rows[j->nrows++] = (struct row){.s = *smp, .series = j->cur};
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->s.time_us != y->s.time_us)
		return x->s.time_us < y->s.time_us ? -1 : 1;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->s.tid != y->s.tid)
		return x->s.tid < y->s.tid ? -1 : 1;
	return x->s.node < y->s.node ? -1 : x->s.node > y->s.node;
}

/* "SECONDS.MICROSECONDS", floor division for times before 0. */
static void print_time(FILE *out, int64_t us)
{
	int64_t sec = us / 1000000 - (us % 1000000 < 0);
	fprintf(out, "%" PRId64 ".%06" PRId64, sec, us - sec * 1000000);
}

/* The frames of node, leaf first, into j->path[0..*n). */
static int node_path(struct samples_job *j, uint32_t node, size_t *n)
{
	*n = 0;
	while (node != STORE_ROOT_NODE) {
		uint32_t parent, frame;
		if (store_node_get(j->s, node, &parent, &frame) < 0)
			return -EIO;
		if (*n == j->path_cap) {
			size_t ncap = j->path_cap ? j->path_cap * 2 : 256;
			uint32_t *p = realloc(j->path, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			j->path = p;
			j->path_cap = ncap;
		}
		j->path[(*n)++] = frame;
		if (*n > store_node_count(j->s))
			return -EIO; /* a loop: a damaged store */
		node = parent;
	}
	return 0;
}

static int print_row(struct samples_job *j, const struct row *r, FILE *out)
{
	const struct store_series *se = &j->list[j->match[r->series]];
	size_t n;
	int rc = node_path(j, r->s.node, &n);
	if (rc < 0)
		return rc;
	if (j->folded) {
		print_time(out, r->s.time_us);
		fprintf(out, " %" PRIu32 " %" PRIu32 " %" PRIu64 " ", r->s.pid, r->s.tid,
		        r->s.weight);
		for (size_t i = n; i-- > 0;) {
			struct store_frame f;
			if (store_frame_get(j->s, j->path[i], &f) < 0)
				return -EIO;
			fwrite(f.name, 1, f.name_len, out);
			if (i)
				fputc(';', out);
		}
		fputc('\n', out);
		return 0;
	}
	fprintf(out, "%s %" PRIu32 "/%" PRIu32 " ", se->binary, r->s.pid, r->s.tid);
	print_time(out, r->s.time_us);
	fprintf(out, ": %" PRIu64 " %s:\n", r->s.weight, se->event);
	for (size_t i = 0; i < n; i++) {
		struct store_frame f;
		if (store_frame_get(j->s, j->path[i], &f) < 0)
			return -EIO;
		/* perf script's stack line: a pc (the store keeps none: 0),
		 * the function, and the module in parentheses. */
		fputs("\t0 ", out);
		fwrite(f.name, 1, f.name_len, out);
		fputs(" (", out);
		if (f.module_len)
			fwrite(f.module, 1, f.module_len, out);
		else
			fputs("[unknown]", out);
		fputs(")\n", out);
	}
	fputc('\n', out);
	return 0;
}

/* Prints the samples in [from, to): a slice of at most one time bucket at
 * a time, gathered from every matched series and sorted, so that memory
 * holds one slice's samples; slices no series covers are skipped. */
static int print_window(struct samples_job *j, int64_t from, int64_t to, FILE *out)
{
	const int64_t slice = (int64_t)store_bucket_seconds(j->s) * 1000000;
	int64_t cur = from;

	for (;;) {
		/* The next moment at or after cur that a series may hold. */
		int64_t next = INT64_MAX;
		for (size_t k = 0; k < j->nmatch; k++) {
			const struct store_series *se = &j->list[j->match[k]];
			if (!se->recent_samples || se->last_us < cur)
				continue;
			int64_t at = se->first_us > cur ? se->first_us : cur;
			if (at < next)
				next = at;
		}
		if (next == INT64_MAX || next >= to)
			return 0;
		int64_t end = next > INT64_MAX - slice ? INT64_MAX : next + slice;
		if (end > to)
			end = to;
		j->nrows = 0;
		for (size_t k = 0; k < j->nmatch; k++) {
			const struct store_series *se = &j->list[j->match[k]];
			if (!se->recent_samples || se->last_us < next || se->first_us >= end)
				continue;
			j->cur = k;
			int rc = store_series_samples(j->s, se->id, next, end, collect, j);
			if (rc < 0)
				return rc;
		}
		if (j->nrows > 1)
			qsort(j->rows, j->nrows, sizeof(*j->rows), row_cmp);
		for (size_t i = 0; i < j->nrows; i++) {
			int rc = print_row(j, &j->rows[i], out);
			if (rc < 0)
				return rc;
		}
		j->printed += j->nrows;
		if (end >= to)
			return 0;
		cur = end;
	}
}

int cmd_samples(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},   {"from", required_argument, NULL, 'f'},
	        {"to", required_argument, NULL, 't'},      {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'v'}, {"event", required_argument, NULL, 'e'},
	        {"host", required_argument, NULL, 'H'},    {"folded", no_argument, NULL, 'F'},
	        {"help", no_argument, NULL, 'h'},          {0},
	};
	const char *store_arg = NULL, *binary = NULL, *version = NULL, *event = NULL, *host = NULL;
	int64_t from = INT64_MIN, to = INT64_MAX;
	struct samples_job j = {0};
	char *owned, err[512];
	int c, rc;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'f':
		case 't':
			if (parse_time_us(optarg, c == 'f' ? &from : &to) < 0)
				return cli_usage_error(
				        "samples",
				        "--%s: expected Unix seconds (1764000000.25) or "
				        "ISO 8601 UTC (2026-11-24T14:02:03.250Z), got "
				        "\"%s\"",
				        c == 'f' ? "from" : "to", optarg);
			break;
		case 'b': binary = optarg; break;
		case 'v': version = optarg; break;
		case 'e': event = optarg; break;
		case 'H': host = optarg; break;
		case 'F': j.folded = true; break;
		case 'h': usage_samples(stdout); return 0;
		default: return cli_bad_option("samples", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("samples", "unexpected argument %s", argv[optind]);
	if (from >= to)
		return cli_usage_error("samples", "--from must come before --to");

	const char *dir = cli_resolve_store(store_arg, &owned);
	int opened = store_open(dir, STORE_READONLY, &j.s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	free(owned);
	if (store_series_list(j.s, &j.list, &j.nlist) < 0)
		cli_die_store(j.s);
	j.match = calloc(j.nlist ? j.nlist : 1, sizeof(*j.match));
	if (!j.match)
		cli_die("out of memory");
	for (size_t i = 0; i < j.nlist; i++) {
		const struct store_series *se = &j.list[i];
		if ((binary && strcmp(se->binary, binary) != 0) ||
		    (version && strcmp(se->version, version) != 0) ||
		    (event && strcmp(se->event, event) != 0) ||
		    (host && strcmp(se->host, host) != 0))
			continue;
		j.match[j.nmatch++] = i;
	}
	if (!j.nmatch && (binary || version || event || host))
		cli_die("%s: no series matches%s%s%s%s%s%s%s%s", store_where(j.s),
		        binary ? " --binary " : "", binary ? binary : "",
		        version ? " --version " : "", version ? version : "",
		        event ? " --event " : "", event ? event : "", host ? " --host " : "",
		        host ? host : "");
	rc = print_window(&j, from, to, stdout);
	if (rc == -ENOMEM)
		cli_die("out of memory");
	if (rc < 0)
		cli_die_store(j.s);
	if (fflush(stdout) != 0 || ferror(stdout))
		cli_die("standard output: %s", strerror(errno));
	free(j.rows);
	free(j.path);
	free(j.match);
	store_series_free(j.list, j.nlist);
	store_close(j.s);
	return 0;
}
