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
	      "\n"
	      "Names the frames stored without a function name (\"[libfoo.so]\": code\n"
	      "recorded or imported while its file had no symbols) once debug\n"
	      "information for them is at hand, in one commit.  Each such frame kept\n"
	      "its module's build id and the file offset of its function; the\n"
	      "symbols are looked for, in order, in the module's own file (when it\n"
	      "is still there with the same build id) and what elfutils finds for it\n"
	      "(/usr/lib/debug/.build-id, each --debug-dir's .build-id, its\n"
	      ".gnu_debuglink and .gnu_debugdata, and a debuginfod server when\n"
	      "DEBUGINFOD_URLS is set: DEBUGINFOD_TIMEOUT, DEBUGINFOD_CACHE_PATH),\n"
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
	      "\n"
	      "EXAMPLES\n"
	      "  apt install python3.11-dbg && " PROG " symbolize --store ~/prof\n"
	      "  " PROG " symbolize --store ~/prof --debug-dir ./build/debug\n"
	      "  " PROG " symbolize --store postgresql://db/fleet --debug-dir /srv/debug\n"
	      "  DEBUGINFOD_URLS=https://debuginfod.debian.net " PROG " symbolize\n",
	      f);
}

struct unnamed {
	uint32_t id;
	struct store_frame f;
};

static int unnamed_cmp(const void *pa, const void *pb)
{
	const struct store_frame *a = &((const struct unnamed *)pa)->f;
	const struct store_frame *b = &((const struct unnamed *)pb)->f;
	size_t n = a->module_len < b->module_len ? a->module_len : b->module_len;
	int c = n ? memcmp(a->module, b->module, n) : 0;

	if (c || a->module_len != b->module_len)
		return c ? c : a->module_len < b->module_len ? -1 : 1;
	n = a->build_id_len < b->build_id_len ? a->build_id_len : b->build_id_len;
	c = n ? memcmp(a->build_id, b->build_id, n) : 0;
	if (c || a->build_id_len != b->build_id_len)
		return c ? c : a->build_id_len < b->build_id_len ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static bool same_module(const struct store_frame *a, const struct store_frame *b)
{
	return a->module_len == b->module_len && a->build_id_len == b->build_id_len &&
	       (!a->module_len || !memcmp(a->module, b->module, a->module_len)) &&
	       (!a->build_id_len || !memcmp(a->build_id, b->build_id, a->build_id_len));
}

int cmd_symbolize(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"debug-dir", required_argument, NULL, 'd'},
	        {"dry-run", no_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *store_arg = NULL;
	const char **dirs = NULL;
	size_t ndirs = 0;
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
		case 'h': usage(stdout); return 0;
		default: return cli_bad_option(argv[0], c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(argv[0], "unexpected argument %s", argv[optind]);
	for (size_t i = 0; i < ndirs; i++) {
		struct stat st;
		int sr = stat(dirs[i], &st);
		if (sr < 0 || !S_ISDIR(st.st_mode))
			cli_die("symbolize: --debug-dir %s: %s; give a directory of debug files",
			        dirs[i], sr < 0 ? strerror(errno) : "not a directory");
	}

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	int opened = store_open(dir, dry ? STORE_READONLY : 0, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	if (dry && store_refresh(s) < 0)
		cli_die_store(s);

	/* the unnamed frames that know where they are */
	struct unnamed *u = NULL;
	size_t nu = 0, cap = 0;
	for (uint32_t id = 1; id < store_frame_count(s); id++) {
		struct store_frame f;
		if (store_frame_get(s, id, &f) < 0 || f.kind != STORE_FRAME_UNKNOWN || !f.offset ||
		    !f.build_id_len)
			continue;
		if (nu == cap) {
			cap = cap ? cap * 2 : 256;
			struct unnamed *n = realloc(u, cap * sizeof(*n));
			if (!n)
				cli_die("out of memory");
			u = n;
		}
		u[nu++] = (struct unnamed){id, f};
	}
	if (nu)
		qsort(u, nu, sizeof(*u), unnamed_cmp);

	struct symbolize_later_opts lo = {dirs, ndirs};
	struct store_batch *b = dry ? NULL : store_batch_new(s);
	if (!dry && !b)
		cli_die_store(s);
	size_t named = 0, modules = 0, modules_named = 0, left = 0;
	char *left_list = NULL;
	size_t left_len = 0;
	for (size_t i = 0, j; i < nu; i = j) {
		char path[4096];
		struct symbolize_later *m = NULL;
		size_t here = 0;

		for (j = i; j < nu && same_module(&u[i].f, &u[j].f); j++)
			;
		modules++;
		snprintf(path, sizeof(path), "%.*s", (int)u[i].f.module_len, u[i].f.module);
		int r = symbolize_later_open(&lo, path, u[i].f.build_id, u[i].f.build_id_len, &m);
		if (r == -ENOMEM)
			cli_die("out of memory");
		if (r == -ENOTSUP)
			cli_die("symbolize: this flamefs-collect was built without elfutils");
		for (size_t k = i; r == 0 && k < j; k++) {
			char *name = NULL;
			int nr = symbolize_later_name(m, u[k].f.offset, &name);
			if (nr < 0)
				cli_die("out of memory");
			if (nr == 0)
				continue;
			struct store_frame f = u[k].f;
			f.name = name;
			f.name_len = strlen(name);
			f.kind = STORE_FRAME_USER;
			f.offset = 0;
			f.file = NULL;
			f.file_len = 0;
			f.line = 0;
			if (b && store_batch_frame_rename(b, u[k].id, &f) < 0)
				cli_die_store(s);
			free(name);
			here++;
		}
		if (here) {
			modules_named++;
			named += here;
			if (dry)
				printf("%s: %zu of %zu frames, from %s\n", path, here, j - i,
				       symbolize_later_source(m));
		} else {
			left++;
			if (left <= 3) {
				char hex[2 * 64 + 1] = "";
				for (size_t k = 0; k < u[i].f.build_id_len && k < 64; k++)
					snprintf(hex + 2 * k, 3, "%02x", u[i].f.build_id[k]);
				size_t add = strlen(path) + strlen(hex) + 8;
				char *nl = realloc(left_list, left_len + add);
				if (!nl)
					cli_die("out of memory");
				left_list = nl;
				left_len += (size_t)snprintf(left_list + left_len, add, "%s%s (%s)",
				                             left_len ? ", " : "", path, hex);
			}
		}
		symbolize_later_free(m);
	}
	if (b && named && store_batch_commit(b) < 0)
		cli_die_store(s);
	fprintf(stderr,
	        PROG ": symbolize: %s %zu of %zu unnamed frames in %zu of %zu modules;"
	             " %zu modules still without names%s%s%s\n",
	        dry ? "would name" : "named", named, nu, modules_named, modules, left,
	        left ? ": " : "", left ? left_list : "", left > 3 ? ", ..." : "");
	if (left)
		fprintf(stderr,
		        PROG ": symbolize: install their debug packages, give --debug-dir, or set "
		             "DEBUGINFOD_URLS, and run symbolize again\n");
	free(left_list);
	free(u);
	free(dirs);
	store_batch_free(b);
	store_close(s);
	free(owned);
	return 0;
}
