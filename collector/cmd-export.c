/*
 * cmd-export.c — `flamefs-collect export`: renders the stored stacks of
 * one binary (a version, a diff of two, a time window, a function's
 * callers or callees) with fs/'s view library, as folded text, pprof,
 * SVG, callgrind or regressions.
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
#include "view.h"

#include "cli.h"

static void usage_export(FILE *f)
{
	fputs("Usage: " PROG " export [--store DIR] [--format FORMAT] [--binary NAME]\n"
	      "           [--version LABEL] [--event EVENT] [--base LABEL]\n"
	      "           [--last DURATION | --from TIME --to TIME]\n"
	      "           [--functions | --callers FUNCTION | --callees FUNCTION]\n"
	      "           [--max-render SIZE] [-o FILE]\n"
	      "\n"
	      "Prints the stored stacks of every matching series: folded lines\n"
	      "\"binary;frame;...;leaf WEIGHT\" sorted bytewise, a gzipped pprof, an\n"
	      "interactive flame graph or a callgrind profile: the files the view\n"
	      "shows.  Only one event is exported at a time: without --event, the\n"
	      "event with the most samples among the matching series.\n"
	      "\n"
	      "  --store DIR        the store (default: $FLAMEFS_STORE, else\n"
	      "                     $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --format F         folded (default), pprof (gzipped profile.proto),\n"
	      "                     svg (flame.svg), callgrind, top (functions by\n"
	      "                     self weight), timeline, timeline.svg, quality\n"
	      "                     (rooted and unknown-leaf shares), or with --base\n"
	      "                     also regressions\n"
	      "  --binary NAME      only the series of this binary\n"
	      "  --version LABEL    only the series with this version label\n"
	      "  --event EVENT      only this event\n"
	      "  --base LABEL       a diff: the --version series (B) against those of\n"
	      "                     version LABEL (A); folded lines are \"stack A B\"\n"
	      "  --last DURATION    only the counts of the last DURATION (5m, 1h, 1d12h):\n"
	      "                     the bucket holding now and those before it\n"
	      "  --from TIME, --to TIME  only the counts in [FROM, TO): Unix seconds or\n"
	      "                     ISO 8601 UTC (2026-11-24T14:02:00Z); the buckets that\n"
	      "                     overlap the window\n"
	      "  --functions        list every function: self, total and name\n"
	      "  --callers F        the inverted tree of the callers of function F\n"
	      "  --callees F        the tree below function F, its occurrences merged\n"
	      "  --max-render SIZE  refuse a rendering larger than SIZE bytes (K, M, G\n"
	      "                     suffixes; default 256M) instead of making it\n"
	      "  -o, --output FILE  write to FILE instead of standard output\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " export --store ~/prof --binary nginx --format svg -o nginx.svg\n"
	      "  " PROG " export --store ~/prof --format pprof -o cpu.pb.gz && go tool pprof -top "
	      "cpu.pb.gz\n"
	      "  " PROG
	      " export --binary nginx --version 1.25.4 --base 1.25.3 --format svg -o d.svg\n"
	      "  " PROG " export --last 15m --callers malloc --format callgrind -o malloc.cg\n",
	      f);
}

/* ---- export ------------------------------------------------------------ */

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

enum export_format {
	EXPORT_FOLDED,
	EXPORT_PPROF,
	EXPORT_SVG,
	EXPORT_CALLGRIND,
	EXPORT_REGRESSIONS,
	EXPORT_TOP,
	EXPORT_TIMELINE,
	EXPORT_TIMELINE_SVG,
	EXPORT_QUALITY,
};

/* Moves the series that match to the front of list[0..n); returns how
 * many.  NULL matches anything. */
static size_t keep_series(struct store_series *list, size_t n, const char *binary,
                          const char *version, const char *event)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		if ((binary && strcmp(se->binary, binary) != 0) ||
		    (version && strcmp(se->version, version) != 0) ||
		    (event && strcmp(se->event, event) != 0))
			continue;
		struct store_series tmp = list[m];
		list[m++] = *se;
		*se = tmp;
	}
	return m;
}

static int64_t parse_time_opt(const char *opt, const char *arg)
{
	int64_t t;

	if (view_parse_time(arg, &t) < 0)
		cli_die("%s: expected Unix seconds or an ISO 8601 UTC time (2026-11-24T14:02:00Z), "
		        "got "
		        "\"%s\"",
		        opt, arg);
	return t;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"format", required_argument, NULL, 'f'},
	        {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'v'},
	        {"event", required_argument, NULL, 'e'},
	        {"output", required_argument, NULL, 'o'},
	        {"base", required_argument, NULL, 'B'},
	        {"last", required_argument, NULL, 'L'},
	        {"from", required_argument, NULL, 'F'},
	        {"to", required_argument, NULL, 'T'},
	        {"functions", no_argument, NULL, 'U'},
	        {"callers", required_argument, NULL, 'C'},
	        {"callees", required_argument, NULL, 'E'},
	        {"max-render", required_argument, NULL, 'M'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL, *binary = NULL, *version = NULL, *event = NULL;
	const char *output = NULL, *base = NULL, *last = NULL, *from_arg = NULL, *to_arg = NULL;
	const char *callers = NULL, *callees = NULL;
	bool functions = false;
	size_t max_render = VIEW_RENDER_MAX;
	enum export_format format = EXPORT_FOLDED;
	int c;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'b': binary = optarg; break;
		case 'v': version = optarg; break;
		case 'e': event = optarg; break;
		case 'o': output = optarg; break;
		case 'B': base = optarg; break;
		case 'L': last = optarg; break;
		case 'F': from_arg = optarg; break;
		case 'T': to_arg = optarg; break;
		case 'U': functions = true; break;
		case 'C': callers = optarg; break;
		case 'E': callees = optarg; break;
		case 'M':
			if (view_parse_size(optarg, &max_render) < 0)
				cli_die("--max-render: expected a size in bytes with an optional "
				        "K, M "
				        "or G suffix (256M), got \"%s\"",
				        optarg);
			break;
		case 'f':
			if (strcmp(optarg, "pprof") == 0)
				format = EXPORT_PPROF;
			else if (strcmp(optarg, "svg") == 0 || strcmp(optarg, "flame.svg") == 0)
				format = EXPORT_SVG;
			else if (strcmp(optarg, "callgrind") == 0)
				format = EXPORT_CALLGRIND;
			else if (strcmp(optarg, "regressions") == 0)
				format = EXPORT_REGRESSIONS;
			else if (strcmp(optarg, "folded") == 0)
				format = EXPORT_FOLDED;
			else if (strcmp(optarg, "top") == 0)
				format = EXPORT_TOP;
			else if (strcmp(optarg, "timeline") == 0)
				format = EXPORT_TIMELINE;
			else if (strcmp(optarg, "timeline.svg") == 0 ||
			         strcmp(optarg, "timeline-svg") == 0)
				format = EXPORT_TIMELINE_SVG;
			else if (strcmp(optarg, "quality") == 0)
				format = EXPORT_QUALITY;
			else
				cli_die("--format: expected folded, pprof, svg, callgrind, top, "
				        "timeline, timeline.svg, quality or regressions, got "
				        "\"%s\"",
				        optarg);
			break;
		case 'h': usage_export(stdout); return 0;
		default: usage_export(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_export(stderr);
		return 2;
	}
	if ((functions ? 1 : 0) + (callers ? 1 : 0) + (callees ? 1 : 0) > 1)
		cli_die("--functions, --callers and --callees exclude each other");
	if (base && (functions || callers || callees))
		cli_die("--base makes a diff; it does not go with --functions, --callers or "
		        "--callees");
	if (base && !version)
		cli_die("--base needs --version: the version to compare with it");
	if (format == EXPORT_REGRESSIONS && !base)
		cli_die("--format regressions needs --base");
	if (base && format == EXPORT_CALLGRIND)
		cli_die("--format callgrind does not show a diff");
	if (base && (format == EXPORT_TOP || format == EXPORT_TIMELINE ||
	             format == EXPORT_TIMELINE_SVG || format == EXPORT_QUALITY))
		cli_die("--format top, timeline, timeline.svg and quality do not show a diff");
	if (last && (from_arg || to_arg))
		cli_die("--last and --from/--to exclude each other");

	int64_t from = INT64_MIN, to = INT64_MAX;
	bool window = last || from_arg || to_arg;
	if (from_arg)
		from = parse_time_opt("--from", from_arg);
	if (to_arg)
		to = parse_time_opt("--to", to_arg);

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	if (store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0)
		cli_die("%s", err);
	dir = store_where(s); /* a database: without its password */
	if (last) {
		int64_t secs;
		if (view_parse_duration(last, &secs) < 0)
			cli_die("--last: expected a duration such as 90s, 5m, 1h or 1d12h, got "
			        "\"%s\"",
			        last);
		view_window_last(time(NULL), secs, store_bucket_seconds(s), &from, &to);
	}
	struct store_series *list;
	size_t n;
	if (store_series_list(s, &list, &n) < 0)
		cli_die_store(s);

	/* Keep the matching series, then only one event: the one asked for,
	 * else the one with the most samples. */
	size_t m = keep_series(list, n, binary, version, event);
	const char *chosen = event;
	if (!chosen) {
		uint64_t best = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t sum = 0;
			for (size_t j = 0; j < m; j++)
				if (strcmp(list[j].event, list[i].event) == 0)
					sum += list[j].samples;
			if (!chosen || sum > best) {
				chosen = list[i].event;
				best = sum;
			}
		}
	}
	size_t k = chosen ? keep_series(list, m, NULL, NULL, chosen) : 0;
	if (k == 0 && (binary || version || event))
		cli_die("%s: no series matches%s%s%s%s%s%s", dir, binary ? " --binary " : "",
		        binary ? binary : "", version ? " --version " : "", version ? version : "",
		        event ? " --event " : "", event ? event : "");

	/* The base version's series, for a diff: a copy of the entries (the
	 * strings stay owned by `list`). */
	struct store_series *alist = NULL;
	size_t ak = 0;
	if (base && k > 0) {
		alist = malloc(n * sizeof(*alist));
		if (!alist)
			cli_die("out of memory");
		for (size_t i = 0; i < n; i++)
			if ((!binary || strcmp(list[i].binary, binary) == 0) &&
			    strcmp(list[i].version, base) == 0 &&
			    strcmp(list[i].event, chosen) == 0)
				alist[ak++] = list[i];
		if (ak == 0)
			cli_die("%s: no series matches%s%s --version %s --event %s", dir,
			        binary ? " --binary " : "", binary ? binary : "", base, chosen);
	}

	struct view_buf out = {.max = max_render};
	if (k > 0) {
		struct view_tree *t, *a = NULL, *d = NULL, *ft = NULL;
		int rc = window ? view_tree_build_window(s, list, k, from, to, &t)
		                : view_tree_build(s, list, k, INT64_MIN, INT64_MAX, &t);
		if (rc == 0 && base)
			rc = window ? view_tree_build_window(s, alist, ak, from, to, &a)
			            : view_tree_build(s, alist, ak, INT64_MIN, INT64_MAX, &a);
		if (rc == -EOVERFLOW)
			cli_die("%s: the counts of these %zu series add up to more than 2^64 - 1; "
			        "export "
			        "fewer at a time (--binary, --version)",
			        dir, k);
		if (rc == -EIO)
			cli_die_store(s); /* the store says why */
		if (rc < 0)
			cli_die("%s: cannot build the call tree: %s", dir, strerror(-rc));
		const struct view_tree *show = t;
		if (base) {
			rc = view_diff_build(a, VIEW_ROOT, t, VIEW_ROOT, &d);
			if (rc < 0)
				cli_die("%s: cannot build the diff: %s", dir, strerror(-rc));
			show = d;
		}
		if (functions || callers || callees) {
			struct view_functions *fx;
			rc = view_functions_build(t, VIEW_ROOT, &fx);
			if (rc < 0)
				cli_die("%s: cannot index the functions: %s", dir, strerror(-rc));
			if (functions) {
				for (uint32_t i = 0; i < view_functions_count(fx) && rc == 0; i++) {
					struct view_counts fc;
					size_t len;
					const char *name = view_functions_name(fx, i, &len);
					char num[64];
					view_functions_counts(fx, i, &fc);
					int nl = snprintf(num, sizeof(num),
					                  "%" PRIu64 " %" PRIu64 " ",
					                  fc.self_weight, fc.total_weight);
					if ((rc = view_buf_append(&out, num, (size_t)nl)) == 0 &&
					    (rc = view_text_append(&out, name, len, 0)) == 0)
						rc = view_buf_append(&out, "\n", 1);
				}
				if (rc == -EFBIG)
					cli_die("%s: the function list passes the limit of %zu "
					        "bytes (--max-render); refused",
					        dir, max_render);
				if (rc < 0)
					cli_die("%s: cannot list the functions: %s", dir,
					        strerror(-rc));
				view_functions_free(fx);
				goto write;
			}
			const char *fname = callers ? callers : callees;
			uint32_t fi = view_functions_find(fx, fname, strlen(fname));
			if (fi == VIEW_NONE)
				cli_die("%s: no function named \"%s\"", dir, fname);
			rc = callers ? view_functions_callers(fx, fi, &ft)
			             : view_functions_callees(fx, fi, &ft);
			if (rc < 0)
				cli_die("%s: cannot build the tree of %s: %s", dir, fname,
				        strerror(-rc));
			view_functions_free(fx);
			show = ft;
		}
		switch (format) {
		case EXPORT_PPROF: rc = view_render_pprof(show, VIEW_ROOT, &out); break;
		case EXPORT_SVG: rc = view_render_flame_svg(show, VIEW_ROOT, &out); break;
		case EXPORT_CALLGRIND: rc = view_render_callgrind(show, VIEW_ROOT, &out); break;
		case EXPORT_REGRESSIONS: rc = view_render_regressions(show, VIEW_ROOT, &out); break;
		case EXPORT_FOLDED: rc = view_render_folded(show, VIEW_ROOT, &out); break;
		case EXPORT_TOP: rc = view_render_top(show, VIEW_ROOT, &out); break;
		case EXPORT_TIMELINE: rc = view_render_timeline(show, VIEW_ROOT, &out); break;
		case EXPORT_TIMELINE_SVG:
			rc = view_render_timeline_svg(show, VIEW_ROOT, &out);
			break;
		case EXPORT_QUALITY: rc = view_render_quality(show, VIEW_ROOT, &out); break;
		}
		if (rc == -EFBIG)
			cli_die("%s: the rendering passes the limit of %zu bytes (--max-render); "
			        "refused",
			        dir, max_render);
		if (rc < 0)
			cli_die("%s: cannot render: %s", dir, strerror(-rc));
	write:
		view_tree_free(ft);
		view_tree_free(d);
		view_tree_free(a);
		view_tree_free(t);
	}

	int fd = STDOUT_FILENO;
	if (output) {
		fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			cli_die("%s: %s", output, strerror(errno));
	}
	int rc = write_all(fd, out.data ? out.data : "", out.len);
	if (rc < 0 || (output && close(fd) < 0))
		cli_die("%s: %s", output ? output : "<stdout>", strerror(rc < 0 ? -rc : errno));
	view_buf_free(&out);
	free(alist);
	store_series_free(list, n);
	store_close(s);
	free(owned);
	return 0;
}
