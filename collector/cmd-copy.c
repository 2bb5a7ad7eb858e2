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
		cli_die_open(r, err);
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
	if (st->renamed)
		printf("%s %s -> %s: named %" PRIu64 " frame%s with the names %s found later\n",
		       verb, store_where(src), store_where(dst), st->renamed,
		       st->renamed == 1 ? "" : "s", store_where(src));
}

/* A keep window in the largest unit that says it exactly. */
static void format_window(char *buf, size_t len, int64_t seconds)
{
	static const struct {
		int64_t s;
		const char *unit;
	} units[] = {{86400, "d"}, {3600, "h"}, {60, "min"}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (seconds > 0 && seconds % units[i].s == 0) {
			snprintf(buf, len, "%" PRId64 " %s", seconds / units[i].s, units[i].unit);
			return;
		}
	snprintf(buf, len, "%" PRId64 " s", seconds);
}

/* After a copy that carried samples (--samples) into a database, whose
 * `where` names it: the database keeps its own keep window of detail and
 * no writer of it rolls up on its own (a directory does after each
 * commit), so the copy that brought the detail forgets what is older.
 * Only the detail goes; counts stay.  With verbose, says what went.  A
 * failure is the command's: the copy stands, the next one tries again. */
static void rollup_database(const char *verb, const char *where, struct store *dst, bool verbose)
{
	struct store_rollup_stats ru;
	char window[32];

	if (!store_is_database(where))
		return;
	if (store_rollup(dst, &ru) < 0)
		cli_die("%s: copied into %s, but forgetting the detail older than its keep window "
		        "failed: %s",
		        verb, store_where(dst), store_errmsg(dst));
	if (!verbose)
		return;
	format_window(window, sizeof(window), store_keep_samples(dst));
	if (ru.samples == 0 && ru.slices == 0)
		printf("rolled up %s: no detail older than its keep window (%s)\n",
		       store_where(dst), window);
	else
		printf("rolled up %s: forgot the detail of %" PRIu64 " samples in %" PRIu64
		       " buckets (%" PRIu64 " bytes) older than its keep window (%s); their "
		       "counts stay\n",
		       store_where(dst), ru.samples, ru.slices, ru.bytes, window);
}

/* Parses --buckets-per-commit's value of command cmd into *n, a positive
 * count no larger than UINT32_MAX: -1 to go on, else the exit status of
 * the usage error said. */
static int parse_count(const char *cmd, const char *s, uint32_t *n)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > UINT32_MAX || s[0] == '-')
		return cli_usage_error(cmd,
		                       "--buckets-per-commit: expected a whole number from 1 to "
		                       "4294967295, got \"%s\"",
		                       s);
	*n = (uint32_t)v;
	return -1;
}

/* ---- push ---------------------------------------------------------------- */

static void usage_push(FILE *f)
{
	fputs("Usage: " PROG " push [--store DIR] --to DATABASE [--buckets-per-commit N]\n"
	      "           [--full] [--samples [--verbose]]\n"
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
	      "                         with its bucket; without it only the counts go.\n"
	      "                         The database then forgets the detail older than\n"
	      "                         its keep window (counts stay)\n"
	      "  -v, --verbose          say what that roll-up forgot\n"
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
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct store_copy_opts o = {.incremental = true};
	struct store_copy_stats st;
	const char *store_arg = NULL, *to = NULL;
	char *owned, err[1024];
	struct store *src, *dst;
	bool verbose = false;
	int c, r;

	store_log_to(log_line, "push");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 't': to = optarg; break;
		case 'n':
			if ((r = parse_count("push", optarg, &o.buckets_per_commit)) >= 0)
				return r;
			break;
		case 'F': o.incremental = false; break;
		case 'S': o.samples = true; break;
		case 'v': verbose = true; break;
		case 'h': usage_push(stdout); return 0;
		default: return cli_bad_option("push", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("push", "unexpected argument %s", argv[optind]);
	if (!to)
		return cli_usage_error("push", "--to DATABASE is required");
	if (!store_is_database(to))
		return cli_usage_error("push",
		                       "--to: expected a database (a connection string that starts "
		                       "with postgresql: or postgres:); to copy into a directory, "
		                       "use merge");
	src = open_source(cli_resolve_store(store_arg, &owned), true);
	if (store_open(to, STORE_CREATE, &dst, err, sizeof(err)) < 0)
		cli_die("%s", err);
	if (store_copy(dst, src, &o, &st, err, sizeof(err)) < 0)
		cli_die("push %s -> %s: %s", store_where(src), store_where(dst), err);
	report("pushed", dst, src, &st);
	if (o.samples)
		rollup_database("push", to, dst, verbose);
	store_close(dst);
	store_close(src);
	free(owned);
	return 0;
}

/* ---- merge --------------------------------------------------------------- */

static void usage_merge(FILE *f)
{
	fputs("Usage: " PROG " merge [--store DEST] [--no-samples] [--verbose] SOURCE...\n"
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
	      "  --no-samples            bring only the counts, not the recent tier.  By\n"
	      "                          default every sample a source still keeps whole\n"
	      "                          (its moment, thread, weight) comes with its\n"
	      "                          bucket, and a database DEST then forgets the\n"
	      "                          detail older than its keep window (counts stay);\n"
	      "                          a directory does so on its own.  (--samples, as\n"
	      "                          push takes it, is the default here)\n"
	      "  -v, --verbose           say what that roll-up forgot\n"
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
	        {"no-samples", no_argument, NULL, 'N'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	/* Incremental: a database sends only what a source gained since its
	 * record (the one push keeps: a store merged and pushed is one
	 * source); a directory takes each source once whatever this says.
	 * Both tiers come unless --no-samples. */
	struct store_copy_opts o = {.incremental = true, .samples = true};
	const char *store_arg = NULL, *where;
	char *owned, err[1024];
	struct store *dst;
	bool verbose = false;
	int c, r;

	store_log_to(log_line, "merge");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'n':
			if ((r = parse_count("merge", optarg, &o.buckets_per_commit)) >= 0)
				return r;
			break;
		case 'S': o.samples = true; break;
		case 'N': o.samples = false; break;
		case 'v': verbose = true; break;
		case 'h': usage_merge(stdout); return 0;
		default: return cli_bad_option("merge", c, argv);
		}
	}
	if (optind == argc)
		return cli_usage_error("merge", "no SOURCE store given");
	where = cli_resolve_store(store_arg, &owned);
	if (store_open(where, STORE_CREATE, &dst, err, sizeof(err)) < 0)
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
	if (o.samples)
		rollup_database("merge", where, dst, verbose);
	store_close(dst);
	free(owned);
	return 0;
}
