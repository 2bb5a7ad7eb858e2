/*
 * cmd-symbolize.c — `flamefs-collect symbolize`: names the frames a store
 * keeps without a function name (an unnamed frame keeps its module's
 * path, build id and file offset, store.h) from debug information found
 * later (symbolize.h, "naming later"), in one commit
 * (store_batch_frame_rename()): every count, total and window stays as
 * it was, and a mounted view shows the names at its next refresh.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store.h"
#include "symbolize.h"

#include "cli.h"

static void usage(FILE *f)
{
	fputs("Usage: " PROG " symbolize [--store STORE] [--debug-dir DIR]... [--dry-run]\n"
	      "                          [--debuginfod-budget SECONDS]\n"
	      "\n"
	      "Names the frames stored without a function name (\"[libfoo.so]\": code\n"
	      "recorded or imported while its file had no symbols) once debug\n"
	      "information for them is at hand, in one commit.  Each such frame kept\n"
	      "its module's build id and the file offset of its function; the\n"
	      "symbols are looked for, in order, in the module's own file (when it\n"
	      "is still there with the same build id) and what elfutils finds for it\n"
	      "(/usr/lib/debug/.build-id, each --debug-dir's .build-id, its\n"
	      ".gnu_debuglink and .gnu_debugdata, and a debuginfod server when\n"
	      "DEBUGINFOD_URLS is set: DEBUGINFOD_TIMEOUT, default 5 s a transfer,\n"
	      "DEBUGINFOD_RETRY_LIMIT, default 1, DEBUGINFOD_CACHE_PATH, default\n"
	      "~/.cache/debuginfod_client; servers that fail or time out are said so\n"
	      "and not asked again in the run; once the run has spent its budget of\n"
	      "server time, slow \"not found\" answers included, the modules left\n"
	      "are not asked and one line says how many),\n"
	      "then a debug file of that build id: DIR/.build-id/xx/rest.debug,\n"
	      "DIR/xx/rest.debug or any file directly in DIR.  Counts, totals and\n"
	      "time windows stay exact; stacks whose frames become one function show\n"
	      "as one in the view, and a mounted view shows the names at its next\n"
	      "refresh.  It ends with one line: the frames named, the modules still\n"
	      "without names.\n"
	      "\n"
	      "  --store STORE    the store: a directory or a database, postgresql://...\n"
	      "                   (default: $FLAMEFS_STORE, else $XDG_DATA_HOME/flamefs,\n"
	      "                   else ~/.local/share/flamefs); a database is named from\n"
	      "                   the debug info of the machine that runs symbolize, so\n"
	      "                   its hosts need none\n"
	      "  --debug-dir DIR  also look for debug files here (repeatable)\n"
	      "  --dry-run        say what would be named, change nothing\n"
	      "  --debuginfod-budget SECONDS\n"
	      "                   the debuginfod server time the run may spend, its\n"
	      "                   queries' wall time summed (default: "
	      "$" SYMBOLIZE_DEBUGINFOD_BUDGET_ENV ", else 30); a query still\n"
	      "                   running when it is spent is cut short\n"
	      "\n"
	      "EXAMPLES\n"
	      "  apt install python3.11-dbg && " PROG " symbolize --store ~/prof\n"
	      "  " PROG " symbolize --store ~/prof --debug-dir ./build/debug\n"
	      "  " PROG " symbolize --store postgresql://db/fleet --debug-dir /srv/debug\n"
	      "  DEBUGINFOD_URLS=https://debuginfod.debian.net " PROG " symbolize\n",
	      f);
}

/* Appends "PATH (BUILD ID HEX)" of module m to the list *l (of *len bytes). */
static void list_module(char **l, size_t *len, const struct symbolize_later_module *m)
{
	char hex[2 * 64 + 1] = "";

	for (size_t k = 0; k < m->build_id_len && k < 64; k++)
		snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
	size_t add = strlen(m->path) + strlen(hex) + 8;
	char *nl = realloc(*l, *len + add);
	if (!nl)
		cli_die("out of memory");
	*l = nl;
	*len += (size_t)snprintf(*l + *len, add, "%s%s (%s)", *len ? ", " : "", m->path, hex);
}

/* The closing line (and, with --dry-run, a line per module named). */
static void say(const struct symbolize_later_pass *p, bool dry)
{
	size_t nr, nf, named = 0, modules_named = 0, left = 0, left_len = 0;
	const struct symbolize_later_result *res = symbolize_later_results(p, &nr);
	char *left_list = NULL;

	symbolize_later_frames(p, &nf);
	for (size_t i = 0; i < nr; i++) {
		if (res[i].named) {
			modules_named++;
			named += res[i].named;
			if (dry)
				printf("%s: %zu of %zu frames, from %s\n", res[i].m.path,
				       res[i].named, res[i].frames, res[i].source);
		} else if (++left <= 3) {
			list_module(&left_list, &left_len, &res[i].m);
		}
	}
	fprintf(stderr,
	        PROG ": symbolize: %s %zu of %zu unnamed frames in %zu of %zu modules;"
	             " %zu modules still without names%s%s%s\n",
	        dry ? "would name" : "named", named, nf, modules_named, nr, left, left ? ": " : "",
	        left ? left_list : "", left > 3 ? ", ..." : "");
	if (left)
		fprintf(stderr,
		        PROG ": symbolize: install their debug packages, give --debug-dir, or set "
		             "DEBUGINFOD_URLS, and run symbolize again\n");
	free(left_list);
	const char *urls;
	int se = symbolize_later_server_error(p, &urls);
	if (se)
		fprintf(stderr,
		        PROG
		        ": symbolize: debuginfod server %s: %s; asked no server for the other "
		        "modules (DEBUGINFOD_TIMEOUT=%s s a transfer, DEBUGINFOD_RETRY_LIMIT=%s)\n",
		        urls, se == -ETIME || se == -ETIMEDOUT ? "timed out" : strerror(-se),
		        getenv("DEBUGINFOD_TIMEOUT"), getenv("DEBUGINFOD_RETRY_LIMIT"));
	double budget, spent;
	size_t asked, unasked = symbolize_later_budget(p, &budget, &spent, &asked);
	if (unasked)
		fprintf(stderr,
		        PROG ": symbolize: debuginfod: the budget of %g s of server time is spent "
		             "(%.1f s on %zu modules); did not ask about %zu modules "
		             "(--debuginfod-budget or " SYMBOLIZE_DEBUGINFOD_BUDGET_ENV
		             " sets the budget)\n",
		        budget, spent, asked, unasked);
}

/* Dies unless each --debug-dir is a directory. */
static void check_dirs(const char **dirs, size_t ndirs)
{
	for (size_t i = 0; i < ndirs; i++) {
		struct stat st;
		int sr = stat(dirs[i], &st);
		if (sr < 0 || !S_ISDIR(st.st_mode))
			cli_die("symbolize: --debug-dir %s: %s; give a directory of debug files",
			        dirs[i], sr < 0 ? strerror(errno) : "not a directory");
	}
}

int cmd_symbolize(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"debug-dir", required_argument, NULL, 'd'},
	        {"dry-run", no_argument, NULL, 'n'},
	        {"debuginfod-budget", required_argument, NULL, 'B'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL;
	const char **dirs = NULL;
	size_t ndirs = 0;
	const char *budget_arg = NULL;
	double budget;
	bool dry = false;
	int c;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'd': {
			const char **n = realloc(dirs, (ndirs + 1) * sizeof(*n));
			if (!n)
				cli_die("out of memory");
			dirs = n;
			dirs[ndirs++] = optarg;
			break;
		}
		case 'n': dry = true; break;
		case 'B': budget_arg = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return cli_bad_option(argv[0], c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(argv[0], "unexpected argument %s", argv[optind]);
	check_dirs(dirs, ndirs);
	if (symbolize_later_debuginfod_budget(budget_arg, &budget) < 0)
		return cli_usage_error(
		        argv[0], "%s%s: not a number of seconds above 0 and at most %d",
		        budget_arg ? "--debuginfod-budget " : SYMBOLIZE_DEBUGINFOD_BUDGET_ENV "=",
		        budget_arg ? budget_arg : getenv(SYMBOLIZE_DEBUGINFOD_BUDGET_ENV),
		        SYMBOLIZE_DEBUGINFOD_BUDGET_MAX_S);
	symbolize_later_debuginfod_defaults();

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	int opened = store_open(dir, dry ? STORE_READONLY : 0, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	if (dry && store_refresh(s) < 0)
		cli_die_store(s);

	/* the unnamed frames that know where they are, named in one commit */
	struct symbolize_later_pass *p;
	struct symbolize_later_opts lo = {dirs, ndirs, false, budget};
	int r = symbolize_later_plan(s, NULL, 0, &p);
	if (r == 0)
		r = symbolize_later_run(p, &lo);
	if (r == -ENOTSUP)
		cli_die("symbolize: this flamefs-collect was built without elfutils");
	if (r < 0)
		cli_die("out of memory");
	struct store_batch *b = NULL;
	size_t nr, named = 0;
	const struct symbolize_later_result *res = symbolize_later_results(p, &nr);
	for (size_t i = 0; i < nr; i++)
		named += res[i].named;
	if (!dry && named) {
		b = store_batch_new(s);
		if (!b || symbolize_later_apply(p, b) < 0 || store_batch_commit(b) < 0)
			cli_die_store(s);
	}
	say(p, dry);
	symbolize_later_pass_free(p);
	free(dirs);
	store_batch_free(b);
	store_close(s);
	free(owned);
	return 0;
}
