/*
 * cmd-stats.c — `flamefs-collect stats`: one line per stored series with
 * its samples, unique stacks, input bytes and disk footprint, then the
 * store's totals.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#include "cli.h"

static void usage_stats(FILE *f)
{
	fputs("Usage: " PROG " stats [--store DIR]\n"
	      "\n"
	      "  --store DIR   the store (default: $FLAMEFS_STORE, else\n"
	      "                $XDG_DATA_HOME/flamefs, else ~/.local/share/flamefs)\n"
	      "\n"
	      "Lists every series (binary, version, event) with its samples, weight,\n"
	      "unique stacks, the bytes of input imported into it and the bytes its\n"
	      "counts take on disk, then the store's whole footprint against all\n"
	      "input bytes (the capacity savings).\n"
	      "\n"
	      "EXAMPLES\n"
	      "  " PROG " stats --store ~/prof\n"
	      "  " PROG " stats | sort -k4 -n\n",
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

int cmd_stats(int argc, char **argv)
{
	const char *store_arg;
	int st = cli_store_only_options(argc, argv, usage_stats, &store_arg);
	if (st >= 0)
		return st;

	char *owned, err[512];
	const char *dir = cli_resolve_store(store_arg, &owned);
	struct store *s;
	if (store_open(dir, STORE_READONLY, &s, err, sizeof(err)) < 0)
		cli_die("%s", err);
	dir = store_where(s); /* a database: without its password */

	struct store_series *list;
	size_t n;
	if (store_series_list(s, &list, &n) < 0)
		cli_die("%s: %s", dir, store_errmsg(s));

	struct uniq u = {.seen = calloc(store_node_count(s) / 8 + 1, 1)};
	if (!u.seen)
		cli_die("out of memory");

	printf("%-20s %-14s %-12s %12s %16s %10s %12s %12s\n", "BINARY", "VERSION", "EVENT",
	       "SAMPLES", "WEIGHT", "STACKS", "IMPORTED", "DISK");
	uint64_t input = 0;
	for (size_t i = 0; i < n; i++) {
		struct store_series *se = &list[i];
		memset(u.seen, 0, store_node_count(s) / 8 + 1);
		u.count = 0;
		if (store_series_counts(s, se->id, INT64_MIN, INT64_MAX, count_unique, &u) < 0)
			cli_die("%s: %s", dir, store_errmsg(s));
		uint64_t disk = 0;
		store_series_disk_bytes(s, se->id, &disk);
		char in[32], dk[32];
		human(in, sizeof(in), se->input_bytes);
		human(dk, sizeof(dk), disk);
		printf("%-20s %-14s %-12s %12" PRIu64 " %16" PRIu64 " %10" PRIu64 " %12s %12s\n",
		       se->binary, se->version, se->event, se->samples, se->weight, u.count, in,
		       dk);
		input += se->input_bytes;
	}
	free(u.seen);

	struct store_footprint fp;
	if (store_footprint(s, &fp) < 0)
		cli_die("%s: %s", dir, store_errmsg(s));
	char a[32], b[32], f[32], nd[32], cn[32];
	human(a, sizeof(a), fp.dir_bytes);
	human(b, sizeof(b), input);
	human(f, sizeof(f), fp.frames_bytes);
	human(nd, sizeof(nd), fp.nodes_bytes);
	human(cn, sizeof(cn), fp.counts_bytes);
	printf("\n%zu series, %u frames, %u stack nodes\n", n, store_frame_count(s) - 1,
	       store_node_count(s) - 1);
	printf("store on disk: %s bytes (frames %s, nodes %s, counts %s); imported: %s bytes", a, f,
	       nd, cn, b);
	if (fp.dir_bytes > 0 && input > 0)
		printf("; %.1fx smaller\n", (double)input / (double)fp.dir_bytes);
	else
		printf("\n");
	printf("bytes: dir=%" PRIu64 " frames=%" PRIu64 " nodes=%" PRIu64 " counts=%" PRIu64
	       " other=%" PRIu64 " input=%" PRIu64 "\n",
	       fp.dir_bytes, fp.frames_bytes, fp.nodes_bytes, fp.counts_bytes, fp.other_bytes,
	       input);
	store_series_free(list, n);
	store_close(s);
	free(owned);
	return 0;
}
