/*
 * cmd-prune.c — store upkeep: `flamefs-collect compact` (flush and compact
 * the store to its smallest size) and `flamefs-collect prune` (delete the
 * time buckets older than a retention period).
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

#include "record.h"
#include "store.h"

#include "cli.h"

/* ---- compact ----------------------------------------------------------- */

static void usage_compact(FILE *f)
{
	fputs("Usage: " PROG " compact [--store DIR]\n"
	      "\n"
	      "Flushes and compacts the store so it takes the least space.  It needs\n"
	      "the store's write lock: it fails while import or record writes to it.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " compact --store ~/prof && du -sh ~/prof\n",
	      f);
}

int cmd_compact(int argc, char **argv)
{
	const char *store_arg;
	int st = cli_store_only_options(argc, argv, usage_compact, &store_arg);
	if (st >= 0)
		return st;
	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	int opened = store_open(dir, 0, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	dir = store_where(s); /* a database: without its password */
	if (store_notice(s))
		fprintf(stderr, PROG ": %s\n", store_notice(s));
	if (store_compact(s) < 0)
		cli_die("%s: compaction failed: %s", dir, store_errmsg(s));
	store_close(s);
	free(owned);
	return 0;
}

/* ---- prune ------------------------------------------------------------- */

static void usage_prune(FILE *f)
{
	fputs("Usage: " PROG
	      " prune [--store DIR] (--older-than DURATION | --before SECONDS | --all)\n"
	      "           [--binary NAME] [--version LABEL] [--dry-run]\n"
	      "\n"
	      "Deletes stored counts by age, as one atomic write.  Time is kept in\n"
	      "buckets (60 s); only buckets that lie wholly before the cut-off go.  A\n"
	      "series left with nothing disappears from stats, export and the view.\n"
	      "Frames and stacks stay in the store's dictionary.\n"
	      "\n"
	      "  --store DIR            the store (default: $FLAMEFS_STORE, else\n"
	      "                         $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "  --older-than DURATION  cut-off = now - DURATION: 90 (seconds), 45s, 30m,\n"
	      "                         12h, 7d, 2w, or a sum such as 1d12h.  Series\n"
	      "                         imported from perf script carry perf's clock\n"
	      "                         (seconds since boot), not wall-clock time: they\n"
	      "                         are left alone (use --before or --all)\n"
	      "  --before SECONDS       cut-off as a time in the series' own clock (unix\n"
	      "                         seconds, or perf's clock), for every series\n"
	      "  --all                  everything of the selected series; needs --binary\n"
	      "  --binary NAME          only this binary's series\n"
	      "  --version LABEL        only this version's series\n"
	      "  --dry-run              say what would go, delete nothing\n"
	      "\n"
	      "It needs the store's write lock: it fails while import or record writes\n"
	      "to it (record --retention prunes as it goes).  Run compact afterwards to\n"
	      "give the space back at once.\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " prune --store /var/lib/flamefs --older-than 30d\n"
	      "  " PROG " prune --store ~/prof --all --binary cc1 --version default\n"
	      "  " PROG " prune --store ~/prof --older-than 1w --dry-run\n",
	      f);
}

/* Parses a whole signed decimal number; false when s is not one. */
static bool parse_seconds(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*out = v;
	return true;
}

/* The store's lines about lost connections and recoveries. */
static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, PROG ": prune: %s\n", line);
}

int cmd_prune(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"older-than", required_argument, NULL, 'o'},
	        {"before", required_argument, NULL, 'b'},
	        {"all", no_argument, NULL, 'a'},
	        {"binary", required_argument, NULL, 'B'},
	        {"version", required_argument, NULL, 'V'},
	        {"dry-run", no_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	struct store_prune_opts o = {0};
	const char *store_arg = NULL;
	int cutoffs = 0, c, r;
	int64_t age;

	store_log_to(log_line, NULL);
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's': store_arg = optarg; break;
		case 'o':
			r = record_parse_duration(optarg, &age);
			if (r < 0)
				return cli_usage_error(
				        "prune",
				        "--older-than \"%s\": %s; expected a duration "
				        "such as 90, 30m, 12h, 7d or 1d12h",
				        optarg, r == -ERANGE ? "too long" : "not a duration");
			o.before = (int64_t)time(NULL) - age;
			o.wall_clock_only = true;
			cutoffs++;
			break;
		case 'b':
			if (!parse_seconds(optarg, &o.before))
				return cli_usage_error(
				        "prune", "--before \"%s\": expected a time in seconds",
				        optarg);
			cutoffs++;
			break;
		case 'a':
			o.before = INT64_MAX;
			cutoffs++;
			break;
		case 'B': o.binary = optarg; break;
		case 'V': o.version = optarg; break;
		case 'n': o.dry_run = true; break;
		case 'h': usage_prune(stdout); return 0;
		default: return cli_bad_option("prune", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("prune", "unexpected argument %s", argv[optind]);
	if (cutoffs != 1)
		return cli_usage_error("prune",
		                       "give exactly one of --older-than, --before and --all");
	if (o.before == INT64_MAX && !o.binary)
		return cli_usage_error("prune", "--all needs --binary (to empty the whole store, "
		                                "remove its directory)");

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	struct store_prune_stats st;
	int opened = store_open(dir, 0, &s, err, sizeof(err));
	if (opened < 0)
		cli_die_open(opened, err);
	dir = store_where(s); /* a database: without its password */
	if (store_notice(s))
		fprintf(stderr, PROG ": %s\n", store_notice(s));
	if (store_prune(s, &o, &st) < 0)
		cli_die("%s: prune failed: %s", dir, store_errmsg(s));
	printf("%s %" PRIu64 " time buckets of %" PRIu64 " series (%" PRIu64 " emptied): %" PRIu64
	       " samples, weight %" PRIu64 "\n",
	       o.dry_run ? "would delete" : "deleted", st.buckets, st.series, st.series_emptied,
	       st.samples, st.weight);
	if (st.other_clock)
		printf("left alone: %" PRIu64 " series on perf's clock (prune them with --before "
		       "or --all)\n",
		       st.other_clock);
	store_close(s);
	free(owned);
	return 0;
}
