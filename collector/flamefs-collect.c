/*
 * flamefs-collect.c — the flamefs-collect command line: picks the command
 * (import, record, stats, export, samples, compact, prune, push, merge,
 * unwind-table, symbolize) and hands it the rest of argv; each long
 * command has its own cmd-*.c, and record lives in record/.  The CLI (this file, cmd-*.c and record's own front end)
 * is the only place in the collector that prints or exits.  Every error
 * is reported once, as "flamefs-collect: <what>: <why>".
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "store.h"
#include "symbolize.h"

#include "cli.h"

void cli_die(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void cli_die_open(int r, const char *err)
{
	if (r == -ENOENT)
		cli_die("%s; make one with `" PROG " import` or `" PROG " record`", err);
	cli_die("%s", err);
}

void cli_die_store(const struct store *s)
{
	const char *where = store_where(s), *msg = store_errmsg(s);
	size_t n = strlen(where);

	if (!strncmp(msg, where, n) && msg[n] == ':')
		cli_die("%s", msg);
	cli_die("%s: %s", where, msg);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG "%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; try '" PROG "%s%s --help'\n", cmd ? " " : "", cmd ? cmd : "");
	return 2;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	size_t n = strcspn(arg, "=");

	if (c == ':')
		return cli_usage_error(cmd, "option %.*s needs a value", (int)n, arg);
	if (strncmp(arg, "--", 2) == 0) {
		if (optopt && arg[n])
			return cli_usage_error(cmd, "option %.*s takes no value", (int)n, arg);
		return cli_usage_error(cmd, "unknown option %.*s", (int)n, arg);
	}
	return cli_usage_error(cmd, "unknown option -%c", optopt);
}

static void usage_main(FILE *f)
{
	fputs("Usage: " PROG " COMMAND [OPTIONS]\n"
	      "\n"
	      "Stores profiler stacks, deduplicated, in a flamefs store.\n"
	      "\n"
	      "Commands:\n"
	      "  import   import perf.data, perf script text, folded stacks, pprof,\n"
	      "           gperftools or legacy text profiles\n"
	      "  record   sample CPU stacks live with eBPF and store them\n"
	      "  stats    list each series with its samples, stacks and footprint\n"
	      "  export   print the stored stacks as folded text or pprof\n"
	      "  samples  print the samples kept whole, each with its moment, pid and tid\n"
	      "  compact  flush and compact the store to its smallest size\n"
	      "  prune    delete time buckets older than a retention period\n"
	      "  push     copy what changed into a central database (PostgreSQL)\n"
	      "  merge    bring whole stores, directories or databases, into one\n"
	      "  unwind-table  print the CFI table record walks a file's stacks with\n"
	      "  symbolize     name the frames stored without names, from debug info\n"
	      "                found later (debug packages, directories, debuginfod)\n"
	      "\n"
	      "Options for every command:\n"
	      "  --store STORE the store: a directory, or a database given as a\n"
	      "                PostgreSQL connection string (postgresql://...)\n"
	      "                (default: $FLAMEFS_STORE, else $XDG_DATA_HOME/flamefs,\n"
	      "                else ~/.local/share/flamefs)\n"
	      "  -h, --help    show help for a command\n"
	      "  -V, --version print the version\n"
	      "\n"
	      "EXAMPLES\n"
	      "  perf record -g -a -- sleep 10 && perf script > out.perf\n"
	      "  " PROG " import --store ~/prof out.perf\n"
	      "  " PROG " record --store ~/prof -d 10 -- ./myprog --its-args\n"
	      "  " PROG " stats --store ~/prof\n"
	      "  " PROG " export --store ~/prof --binary nginx | flamegraph.pl > nginx.svg\n"
	      "\n"
	      "Run '" PROG " COMMAND --help' for a command's options.\n",
	      f);
}

const char *cli_resolve_store(const char *arg, char **owned)
{
	*owned = NULL;
	if (arg)
		return arg;
	*owned = store_default_dir();
	if (!*owned)
		cli_die("no store given: use --store DIR or set FLAMEFS_STORE");
	return *owned;
}

int cli_store_only_options(int argc, char **argv, void (*usage)(FILE *f), const char **store_arg)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c;

	*store_arg = NULL;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': *store_arg = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return cli_bad_option(argv[0], c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(argv[0], "unexpected argument %s", argv[optind]);
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(
		        NULL, "no command given; expected import, record, stats, export, "
		              "samples, compact, prune, push, merge, unwind-table or symbolize");
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
		puts(PROG " " FLAMEFS_VERSION);
		return 0;
	}
	argv++;
	argc--;
	if (strcmp(cmd, "import") == 0)
		return cmd_import(argc, argv);
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc, argv);
	if (strcmp(cmd, "samples") == 0)
		return cmd_samples(argc, argv);
	if (strcmp(cmd, "compact") == 0)
		return cmd_compact(argc, argv);
	if (strcmp(cmd, "prune") == 0)
		return cmd_prune(argc, argv);
	if (strcmp(cmd, "push") == 0)
		return cmd_push(argc, argv);
	if (strcmp(cmd, "merge") == 0)
		return cmd_merge(argc, argv);
	if (strcmp(cmd, "record") == 0) {
		/* its naming pass may ask debuginfod: bounded, set before its threads */
		symbolize_later_debuginfod_defaults();
		return record_main(argc, argv);
	}
	if (strcmp(cmd, "unwind-table") == 0)
		return cmd_unwind_table(argc, argv);
	if (strcmp(cmd, "symbolize") == 0)
		return cmd_symbolize(argc, argv);
	return cli_usage_error(NULL,
	                       "unknown command \"%s\"; expected import, record, stats, export, "
	                       "samples, compact, prune, push, merge, unwind-table or symbolize",
	                       cmd);
}
