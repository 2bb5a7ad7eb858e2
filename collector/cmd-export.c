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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "import.h"
#include "store.h"
#include "view.h"

#include "cli.h"

static void usage_export(FILE *f)
{
	fputs("Usage: " PROG " export [--store DIR] [--format FORMAT] [--binary NAME]\n"
	      "           [--version LABEL] [--event EVENT] [--label KEY=VALUE]...\n"
	      "           [--base LABEL]\n"
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
	      "  --label KEY=VALUE  only the series labelled KEY=VALUE (cgroup, thread,\n"
	      "                     an import's --label or pprof label...); repeatable:\n"
	      "                     every one must match\n"
	      "  --base LABEL       a diff: the --version series (B) against those of\n"
	      "                     version LABEL (A); folded lines are \"stack A B\"\n"
	      "  --last DURATION    only the counts of the last DURATION (5m, 1h, 1d12h):\n"
	      "                     the bucket holding now and those before it\n"
	      "  --from TIME, --to TIME  only the samples in [FROM, TO): Unix seconds or\n"
	      "                     ISO 8601 UTC, to the microsecond (1795010523.25,\n"
	      "                     2026-11-24T14:02:03.250Z); exact over the recent tier,\n"
	      "                     and what a cut bucket holds without a moment is taken\n"
	      "                     whole and said on stderr\n"
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
	      "  " PROG " export --last 15m --callers malloc --format callgrind -o malloc.cg\n"
	      "  " PROG " export --binary api --label handler=checkout --format top\n",
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

/* The formats, by name: what renders them, and whether they show a diff
 * (--base) or only a diff's regressions. */
struct export_format {
	const char *name, *alias;
	int (*render)(const struct view_tree *t, uint32_t node, struct view_buf *out);
	bool shows_diff, needs_diff;
};

static const struct export_format export_formats[] = {
        {"folded", NULL, view_render_folded, true, false},
        {"pprof", NULL, view_render_pprof, true, false},
        {"svg", "flame.svg", view_render_flame_svg, true, false},
        {"callgrind", NULL, view_render_callgrind, false, false},
        {"top", NULL, view_render_top, false, false},
        {"timeline", NULL, view_render_timeline, false, false},
        {"timeline.svg", "timeline-svg", view_render_timeline_svg, false, false},
        {"quality", NULL, view_render_quality, false, false},
        {"regressions", NULL, view_render_regressions, true, true},
};

static const struct export_format *find_format(const char *name)
{
	for (size_t i = 0; i < sizeof(export_formats) / sizeof(export_formats[0]); i++) {
		const struct export_format *f = &export_formats[i];
		if (strcmp(name, f->name) == 0 || (f->alias && strcmp(name, f->alias) == 0))
			return f;
	}
	return NULL;
}

/* What the command line asked for. */
struct export_opts {
	const char *store, *binary, *version, *event, *output, *base, *last, *from, *to;
	const char *callers, *callees;
	char *labels; /* --label's, canonical; NULL for none */
	bool functions;
	size_t max_render;
	const struct export_format *format;
};

/* store_labels_each() callback: 0 when the series' labels (ctx) hold
 * key=value, else 1. */
static int label_differs(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
	char key[STORE_LABEL_KEY_MAX + 1];
	size_t len;

	if (kl > STORE_LABEL_KEY_MAX)
		return 1;
	memcpy(key, k, kl);
	key[kl] = '\0';
	const char *have = store_labels_get(ctx, key, &len);
	return !have || len != vl || memcmp(have, v, vl) != 0;
}

/* True when a series labelled `have` holds every label of `want`
 * (canonical; NULL: none asked for). */
static bool labels_match(const char *have, const char *want)
{
	return !want || store_labels_each(want, label_differs, (void *)have) == 0;
}

/* Moves the series that match to the front of list[0..n); returns how
 * many.  NULL matches anything. */
static size_t keep_series(struct store_series *list, size_t n, const char *binary,
                          const char *version, const char *event, const char *labels)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		if ((binary && strcmp(se->binary, binary) != 0) ||
		    (version && strcmp(se->version, version) != 0) ||
		    (event && strcmp(se->event, event) != 0) || !labels_match(se->labels, labels))
			continue;
		struct store_series tmp = list[m];
		list[m++] = *se;
		*se = tmp;
	}
	return m;
}

/* A time to the microsecond into *t: -1 to go on, else the exit status
 * of the usage error said. */
static int parse_time_opt(const char *opt, const char *arg, int64_t *t)
{
	if (view_parse_time_us(arg, t) < 0)
		return cli_usage_error("export",
		                       "%s: expected Unix seconds or an ISO 8601 UTC time, to the "
		                       "microsecond at most (1795010523.25, "
		                       "2026-11-24T14:02:03.250Z), got \"%s\"",
		                       opt, arg);
	return -1;
}

/* Says on stderr what a window could not cut exactly: never silently. */
static void report_window(const struct view_tree *t, const char *which)
{
	const struct view_window *w = view_tree_window(t);
	char a[40], z[40];
	unsigned nb;

	if (!w || view_window_exact(w))
		return;
	uint64_t whole = view_window_whole_samples(w, &nb);
	view_format_time_us(w->from_us, a);
	view_format_time_us(w->to_us, z);
	fprintf(stderr,
	        PROG ": export: %swindow [%s, %s) is not exact: %" PRIu64
	             " samples of %u bucket%s of %" PRIu32
	             " s it cuts have no moment and are taken "
	             "whole:",
	        which, a, z, whole, nb, nb == 1 ? "" : "s", w->bucket_seconds);
	for (unsigned i = 0; i < w->ncut; i++) {
		char b[40];
		if (!w->cut[i].whole_samples && !w->cut[i].whole_weight)
			continue;
		view_format_time_us(w->cut[i].bucket * 1000000, b);
		fprintf(stderr, " %s (%" PRIu64 ")", b, w->cut[i].whole_samples);
	}
	fputc('\n', stderr);
}

/* Parses argv into *o; returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, struct export_opts *o)
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
	        {"label", required_argument, NULL, 'A'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c;

	*o = (struct export_opts){.max_render = VIEW_RENDER_MAX, .format = &export_formats[0]};
	while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->store = optarg; break;
		case 'b': o->binary = optarg; break;
		case 'v': o->version = optarg; break;
		case 'e': o->event = optarg; break;
		case 'o': o->output = optarg; break;
		case 'B': o->base = optarg; break;
		case 'L': o->last = optarg; break;
		case 'F': o->from = optarg; break;
		case 'T': o->to = optarg; break;
		case 'U': o->functions = true; break;
		case 'C': o->callers = optarg; break;
		case 'E': o->callees = optarg; break;
		case 'A': {
			char err[256];
			int rc = import_label_arg(&o->labels, optarg, err, sizeof(err));
			if (rc == -ENOMEM)
				cli_die("out of memory");
			if (rc < 0)
				return cli_usage_error("export", "%s", err);
			break;
		}
		case 'M':
			if (view_parse_size(optarg, &o->max_render) < 0)
				return cli_usage_error(
				        "export",
				        "--max-render: expected a size in bytes with an optional "
				        "K, M "
				        "or G suffix (256M), got \"%s\"",
				        optarg);
			break;
		case 'f':
			if (!(o->format = find_format(optarg)))
				return cli_usage_error(
				        "export",
				        "--format: expected folded, pprof, svg, callgrind, top, "
				        "timeline, timeline.svg, quality or regressions, got "
				        "\"%s\"",
				        optarg);
			break;
		case 'h': usage_export(stdout); return 0;
		default: return cli_bad_option("export", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("export", "unexpected argument %s", argv[optind]);
	return -1;
}

/* Refuses the combinations that mean nothing, with the reason, as a
 * usage error: 2, or -1 when they are fine. */
static int check_options(const struct export_opts *o)
{
	bool fn = o->functions || o->callers || o->callees;

	if ((o->functions ? 1 : 0) + (o->callers ? 1 : 0) + (o->callees ? 1 : 0) > 1)
		return cli_usage_error("export",
		                       "--functions, --callers and --callees exclude each other");
	if (o->base && fn)
		return cli_usage_error(
		        "export",
		        "--base makes a diff; it does not go with --functions, --callers or "
		        "--callees");
	if (o->base && !o->version)
		return cli_usage_error("export",
		                       "--base needs --version: the version to compare with it");
	if (o->format->needs_diff && !o->base)
		return cli_usage_error("export", "--format %s needs --base", o->format->name);
	if (o->base && !o->format->shows_diff)
		return cli_usage_error("export", "--format %s does not show a diff",
		                       o->format->name);
	if (o->last && (o->from || o->to))
		return cli_usage_error("export", "--last and --from/--to exclude each other");
	return -1;
}

/* Keeps the series that match the options at the front of list[0..n),
 * of one event: the one asked for, else the one with the most samples.
 * Returns how many, and that event in *chosen. */
static size_t pick_series(const char *dir, const struct export_opts *o, struct store_series *list,
                          size_t n, const char **chosen)
{
	size_t m = keep_series(list, n, o->binary, o->version, o->event, o->labels);

	*chosen = o->event;
	if (!*chosen) {
		uint64_t best = 0;
		for (size_t i = 0; i < m; i++) {
			uint64_t sum = 0;
			for (size_t j = 0; j < m; j++)
				if (strcmp(list[j].event, list[i].event) == 0)
					sum += list[j].samples;
			if (!*chosen || sum > best) {
				*chosen = list[i].event;
				best = sum;
			}
		}
	}
	size_t k = *chosen ? keep_series(list, m, NULL, NULL, *chosen, NULL) : 0;
	if (k == 0 && (o->binary || o->version || o->event || o->labels)) {
		char *shown = NULL;
		if (o->labels) { /* "k=v\nk=v" as " --label k=v --label k=v" */
			shown = malloc(strlen(o->labels) * 2 + 16);
			if (!shown)
				cli_die("out of memory");
			char *w = stpcpy(shown, " --label ");
			for (const char *c = o->labels; *c; c++)
				w = *c == '\n' ? stpcpy(w, " --label ") : (*w = *c, w + 1);
			*w = '\0';
		}
		cli_die("%s: no series matches%s%s%s%s%s%s%s", dir, o->binary ? " --binary " : "",
		        o->binary ? o->binary : "", o->version ? " --version " : "",
		        o->version ? o->version : "", o->event ? " --event " : "",
		        o->event ? o->event : "", shown ? shown : "");
	}
	return k;
}

/* The base version's series, for a diff: a copy of the entries of
 * list[0..n) (the strings stay owned by `list`), malloc'd, in *out. */
static size_t base_series(const char *dir, const struct export_opts *o,
                          const struct store_series *list, size_t n, const char *event,
                          struct store_series **out)
{
	size_t ak = 0;

	*out = malloc(n * sizeof(**out));
	if (!*out)
		cli_die("out of memory");
	for (size_t i = 0; i < n; i++)
		if ((!o->binary || strcmp(list[i].binary, o->binary) == 0) &&
		    strcmp(list[i].version, o->base) == 0 && strcmp(list[i].event, event) == 0 &&
		    labels_match(list[i].labels, o->labels))
			(*out)[ak++] = list[i];
	if (ak == 0)
		cli_die("%s: no series matches%s%s --version %s --event %s", dir,
		        o->binary ? " --binary " : "", o->binary ? o->binary : "", o->base, event);
	return ak;
}

/* The tree of series list[0..k), in the window if there is one. */
static struct view_tree *build_tree(struct store *s, const char *dir,
                                    const struct store_series *list, size_t k, bool window,
                                    int64_t from, int64_t to)
{
	struct view_tree *t;
	int rc = window ? view_tree_build_window_us(s, list, k, from, to, NULL, &t)
	                : view_tree_build(s, list, k, INT64_MIN, INT64_MAX, &t);

	if (rc == -EOVERFLOW)
		cli_die("%s: the counts of these %zu series add up to more than 2^64 - 1; "
		        "export "
		        "fewer at a time (--binary, --version)",
		        dir, k);
	if (rc == -EIO)
		cli_die_store(s); /* the store says why */
	if (rc < 0)
		cli_die("%s: cannot build the call tree: %s", dir, strerror(-rc));
	return t;
}

/* A function's callers or callees tree, or (with --functions) the list
 * of functions rendered into *out (then NULL). */
static struct view_tree *function_tree(const char *dir, const struct export_opts *o,
                                       const struct view_tree *t, struct view_buf *out)
{
	struct view_functions *fx;
	struct view_tree *ft = NULL;
	int rc = view_functions_build(t, VIEW_ROOT, &fx);

	if (rc < 0)
		cli_die("%s: cannot index the functions: %s", dir, strerror(-rc));
	if (o->functions) {
		rc = view_render_functions(fx, out);
		if (rc == -EFBIG)
			cli_die("%s: the function list passes the limit of %zu bytes "
			        "(--max-render); refused",
			        dir, o->max_render);
		if (rc < 0)
			cli_die("%s: cannot list the functions: %s", dir, strerror(-rc));
	} else {
		const char *fname = o->callers ? o->callers : o->callees;
		uint32_t fi = view_functions_find(fx, fname, strlen(fname));
		if (fi == VIEW_NONE)
			cli_die("%s: no function named \"%s\"", dir, fname);
		rc = o->callers ? view_functions_callers(fx, fi, &ft)
		                : view_functions_callees(fx, fi, &ft);
		if (rc < 0)
			cli_die("%s: cannot build the tree of %s: %s", dir, fname, strerror(-rc));
	}
	view_functions_free(fx);
	return ft;
}

/* Renders what the options show of series list[0..k) (alist[0..ak), the
 * base, for a diff) into *out. */
static void render(struct store *s, const char *dir, const struct export_opts *o,
                   const struct store_series *list, size_t k, const struct store_series *alist,
                   size_t ak, bool window, int64_t from, int64_t to, struct view_buf *out)
{
	struct view_tree *t = build_tree(s, dir, list, k, window, from, to), *a = NULL, *d = NULL;
	struct view_tree *ft = NULL;
	const struct view_tree *show = t;
	int rc = 0;

	report_window(t, o->base ? "--version's " : "");
	if (o->base) {
		a = build_tree(s, dir, alist, ak, window, from, to);
		report_window(a, "--base's ");
		if ((rc = view_diff_build(a, VIEW_ROOT, t, VIEW_ROOT, &d)) < 0)
			cli_die("%s: cannot build the diff: %s", dir, strerror(-rc));
		show = d;
	}
	if (o->functions || o->callers || o->callees) {
		ft = function_tree(dir, o, t, out);
		show = ft;
	}
	if (show)
		rc = o->format->render(show, VIEW_ROOT, out);
	if (rc == -EFBIG)
		cli_die("%s: the rendering passes the limit of %zu bytes (--max-render); "
		        "refused",
		        dir, o->max_render);
	if (rc < 0)
		cli_die("%s: cannot render: %s", dir, strerror(-rc));
	view_tree_free(ft);
	view_tree_free(d);
	view_tree_free(a);
	view_tree_free(t);
}

static void write_output(const char *output, const struct view_buf *out)
{
	int fd = STDOUT_FILENO;

	if (output) {
		fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			cli_die("%s: %s", output, strerror(errno));
	}
	int rc = write_all(fd, out->data ? out->data : "", out->len);
	if (rc < 0 || (output && close(fd) < 0))
		cli_die("%s: %s", output ? output : "<stdout>", strerror(rc < 0 ? -rc : errno));
}

int cmd_export(int argc, char **argv)
{
	struct export_opts o;
	int status = parse_options(argc, argv, &o);
	if (status < 0)
		status = check_options(&o);
	if (status >= 0) {
		free(o.labels);
		return status;
	}

	int64_t from = INT64_MIN, to = INT64_MAX, last = 0;
	bool window = o.last || o.from || o.to;
	if ((o.from && (status = parse_time_opt("--from", o.from, &from)) >= 0) ||
	    (o.to && (status = parse_time_opt("--to", o.to, &to)) >= 0)) {
		free(o.labels);
		return status;
	}
	if (o.last && view_parse_duration(o.last, &last) < 0) {
		free(o.labels);
		return cli_usage_error("export",
		                       "--last: expected a duration such as 90s, 5m, 1h or 1d12h, "
		                       "got \"%s\"",
		                       o.last);
	}
	if (from > to) {
		free(o.labels);
		return cli_usage_error("export", "--from must not come after --to");
	}

	char *owned, err[512];
	const char *dir = cli_resolve_store(o.store, &owned);
	struct store *s;
	int opened = store_open(dir, STORE_READONLY, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	dir = store_where(s); /* a database: without its password */
	if (o.last) {
		view_window_last(time(NULL), last, store_bucket_seconds(s), &from, &to);
		from *= 1000000;
		to *= 1000000;
	}
	struct store_series *list, *alist = NULL;
	size_t n, ak = 0;
	if (store_series_list(s, &list, &n) < 0)
		cli_die_store(s);
	const char *event;
	size_t k = pick_series(dir, &o, list, n, &event);

	struct view_buf out = {.max = o.max_render};
	if (k > 0) {
		if (o.base)
			ak = base_series(dir, &o, list, n, event, &alist);
		render(s, dir, &o, list, k, alist, ak, window, from, to, &out);
	}
	write_output(o.output, &out);
	view_buf_free(&out);
	free(alist);
	store_series_free(list, n);
	store_close(s);
	free(o.labels);
	free(owned);
	return 0;
}
