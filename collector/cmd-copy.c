/*
 * cmd-copy.c — moving data between stores: `flamefs-collect push` (a
 * local store's news into a database, incremental) and `flamefs-collect
 * merge` (whole stores into another store, of either kind).  Both are
 * store_copy(); this file opens the stores and reports.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#include "cli.h"

/* The store's lines about lost connections and recoveries, on stderr
 * with the command's name (ctx). */
static void log_line(void *ctx, const char *line)
{
	fprintf(stderr, PROG ": %s: %s\n", (const char *)ctx, line);
}

/* Opens a source read-write when it can, to let it remember how far its
 * copies went, else (a recorder holds it) read-only; a database source
 * is only read. */
static struct store *open_source(const char *where, bool remember)
{
	struct store *s;
	char err[512];
	int r = -EBUSY;

	if (remember && !store_is_database(where))
		r = store_open(where, 0, &s, err, sizeof(err));
	if (r == -EBUSY)
		r = store_open(where, STORE_READONLY, &s, err, sizeof(err));
	if (r < 0)
		cli_die("%s", err);
	return s;
}

static void report(const char *verb, struct store *dst, struct store *src,
                   const struct store_copy_stats *st)
{
	if (st->note[0])
		fprintf(stderr, PROG ": %s\n", st->note);
	if (st->nothing_new) {
		printf("%s: nothing new for %s\n", store_where(src), store_where(dst));
		return;
	}
	printf("%s %s -> %s: %" PRIu64 " buckets of %" PRIu64 " series, %" PRIu64
	       " samples, weight %" PRIu64 ", in %" PRIu64 " transaction%s\n",
	       verb, store_where(src), store_where(dst), st->buckets, st->series, st->samples,
	       st->weight, st->commits, st->commits == 1 ? "" : "s");
}

/* Parses a positive count no larger than UINT32_MAX. */
static uint32_t parse_count(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > UINT32_MAX || s[0] == '-')
		cli_die("%s: expected a whole number from 1 to 4294967295, got \"%s\"", opt, s);
	return (uint32_t)v;
}

/* ---- push ---------------------------------------------------------------- */

static void usage_push(FILE *f)
{
	fputs("Usage: " PROG " push [--store DIR] --to DATABASE [--buckets-per-commit N]\n"
	      "           [--full] [--samples]\n"
	      "\n"
	      "Copies into a central database (a PostgreSQL connection string that\n"
	      "starts with postgresql: or postgres:) what the local store holds and the\n"
	      "database lacks: the time buckets that changed since the last push, each\n"
	      "whole.  The database keeps one copy of each bucket per pushing store and\n"
	      "replaces it, so a push that is interrupted or repeated never counts a\n"
	      "sample twice; it records how far the pushes reached in the same\n"
	      "transaction.  Stacks and frames are matched by content: hosts never need\n"
	      "each other's ids.  Every series keeps the host it was recorded on.\n"
	      "\n"
	      "  --store DIR            the local store (default: $FLAMEFS_STORE, else\n"
	      "                         $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs);\n"
	      "                         it may be in use by record meanwhile\n"
	      "  --to DATABASE          the central store; its schema is made on first use\n"
	      "                         when the database is empty.  A password in it is\n"
	      "                         never printed; prefer PGPASSFILE\n"
	      "  --buckets-per-commit N whole transactions of at most N buckets (default:\n"
	      "                         all in one)\n"
	      "  --full                 send every bucket again, not only the changed ones\n"
	      "  --samples              also send the recent tier: every sample the store\n"
	      "                         still keeps whole (its moment, thread, weight),\n"
	      "                         with its bucket; without it only the counts go\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " push --store /var/lib/flamefs \\\n"
	      "      --to 'postgresql://flamefs@db.example/flamefs?sslmode=verify-full'\n"
	      "  PGPASSFILE=/etc/flamefs/pgpass " PROG " push --to postgresql:///flamefs\n",
	      f);
}

int cmd_push(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"to", required_argument, NULL, 't'},
	        {"buckets-per-commit", required_argument, NULL, 'n'},
	        {"full", no_argument, NULL, 'F'},
	        {"samples", no_argument, NULL, 'S'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct store_copy_opts o = {.incremental = true};
	struct store_copy_stats st;
	const char *store_arg = NULL, *to = NULL;
	char *owned, err[1024];
	struct store *src, *dst;
	int c;

	store_log_to(log_line, "push");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 't': to = optarg; break;
		case 'n': o.buckets_per_commit = parse_count("--buckets-per-commit", optarg); break;
		case 'F': o.incremental = false; break;
		case 'S': o.samples = true; break;
		case 'h': usage_push(stdout); return 0;
		default: return cli_bad_option("push", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("push", "unexpected argument %s", argv[optind]);
	if (!to)
		return cli_usage_error("push", "--to DATABASE is required");
	if (!store_is_database(to))
		cli_die("push --to: expected a database (a connection string that starts with "
		        "postgresql: or postgres:); to copy into a directory, use merge");
	src = open_source(cli_resolve_store(store_arg, &owned), true);
	if (store_open(to, STORE_CREATE, &dst, err, sizeof(err)) < 0)
		cli_die("%s", err);
	if (store_copy(dst, src, &o, &st, err, sizeof(err)) < 0)
		cli_die("push %s -> %s: %s", store_where(src), store_where(dst), err);
	report("pushed", dst, src, &st);
	store_close(dst);
	store_close(src);
	free(owned);
	return 0;
}

/* ---- merge --------------------------------------------------------------- */

static void usage_merge(FILE *f)
{
	fputs("Usage: " PROG " merge [--store DEST] [--samples] SOURCE...\n"
	      "\n"
	      "Brings whole stores into another one, by content: frames, stacks and\n"
	      "series (host included) are matched by what they are.  Each store may be\n"
	      "a directory or a database (postgresql:...).  DEST is created when\n"
	      "missing.  A database replaces each source's buckets, so merging a store\n"
	      "again is safe and brings only what it gained.  A directory adds what it\n"
	      "takes: it takes each source store once, and refuses one that changed\n"
	      "since (merge into a fresh directory instead).\n"
	      "\n"
	      "  --store DEST            the store to merge into (default: $FLAMEFS_STORE,\n"
	      "                          else $XDG_DATA_HOME/flamefs, else\n"
	      "                          ~/.local/share/flamefs)\n"
	      "  --buckets-per-commit N  into a database: whole transactions of at most N\n"
	      "                          buckets (default: one per source; a directory\n"
	      "                          always takes a source in one)\n"
	      "  --samples               also bring the recent tier: every sample a source\n"
	      "                          still keeps whole (its moment, thread, weight),\n"
	      "                          with its bucket; without it only the counts come\n"
	      "\n"
	      "EXAMPLES\n"
	      "  scp -r web1:/var/lib/flamefs web1 && " PROG " merge --store ~/fleet web1\n"
	      "  " PROG " merge --store postgresql:///flamefs ./laptop ./ci-runner\n"
	      "  " PROG " merge --store ~/home postgresql://db.example/flamefs\n",
	      f);
}

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"buckets-per-commit", required_argument, NULL, 'n'},
	        {"samples", no_argument, NULL, 'S'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	/* Incremental: a database sends only what a source gained since its
	 * record (the one push keeps: a store merged and pushed is one
	 * source); a directory takes each source once whatever this says. */
	struct store_copy_opts o = {.incremental = true};
	const char *store_arg = NULL;
	char *owned, err[1024];
	struct store *dst;
	int c;

	store_log_to(log_line, "merge");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'n': o.buckets_per_commit = parse_count("--buckets-per-commit", optarg); break;
		case 'S': o.samples = true; break;
		case 'h': usage_merge(stdout); return 0;
		default: return cli_bad_option("merge", c, argv);
		}
	}
	if (optind == argc)
		return cli_usage_error("merge", "no SOURCE store given");
	if (store_open(cli_resolve_store(store_arg, &owned), STORE_CREATE, &dst, err, sizeof(err)) <
	    0)
		cli_die("%s", err);
	if (store_notice(dst))
		fprintf(stderr, PROG ": %s\n", store_notice(dst));
	for (int i = optind; i < argc; i++) {
		struct store *src = open_source(argv[i], false);
		struct store_copy_stats st;

		if (store_copy(dst, src, &o, &st, err, sizeof(err)) < 0)
			cli_die("merge %s -> %s: %s", store_where(src), store_where(dst), err);
		report("merged", dst, src, &st);
		store_close(src);
	}
	store_close(dst);
	free(owned);
	return 0;
}
