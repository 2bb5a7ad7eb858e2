/*
 * cli.h — what the flamefs-collect command files (flamefs-collect.c, cmd-*.c)
 * share: the program's name in messages, the one way to fail, the store
 * a command works on, and each command's entry point.  Private to
 * collector/'s command line; no wing includes it.
 */
#ifndef FLAMEFS_CLI_H
#define FLAMEFS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROG "flamefs-collect"

/* Prints "flamefs-collect: <fmt>" and a newline to stderr and exits 1. */
void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

struct store;

/* Ends the command after a failed store_open() of an existing store:
 * "flamefs-collect: <err>", and where r is -ENOENT (no store there) how
 * to make one. */
void cli_die_open(int r, const char *err) __attribute__((noreturn));

/* Ends the command with the store's last message: "flamefs-collect:
 * <where>: <message>", where only when the message does not begin with
 * it already (the store's read paths name it, a batch's refusals do
 * not). */
void cli_die_store(const struct store *s) __attribute__((noreturn));

/* The store directory: arg (--store) when given, else the default
 * (store_default_dir()), which *owned then holds (the caller frees it);
 * no default at all ends the command with a message. */
const char *cli_resolve_store(const char *arg, char **owned);

/* Stack quality (cmd-stats.c).  cli_series_quality() measures one series
 * (view_quality() at its binary: rooted and unknown-leaf weight).
 * cli_warn_unrooted() compares the store's series with `before` (the list
 * taken before a command wrote, store_series_list()) and, when a series
 * that changed has fewer than half its weight in rooted stacks, prints one
 * line on stderr naming the worst of them, what usually causes it and
 * what to do.  Import calls it after perf input (CLI_STACKS_PERF); record
 * should call it after its last commit with the list it took at start
 * (CLI_STACKS_RECORD). */
struct view_quality;
struct store_series;
/* Where the stacks came from: the warning's cause and advice differ. */
enum cli_stack_source {
	CLI_STACKS_PERF,   /* perf script or perf.data: frame pointers under -g */
	CLI_STACKS_RECORD, /* flamefs-collect record: its own unwinder */
};
/* A module's unnamed weight in one series (view_quality_unnamed(), owned
 * copies): module path (or "[unknown]"), raw build id. */
struct cli_unnamed {
	char *module;
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t weight;
};
void cli_unnamed_free(struct cli_unnamed *u, size_t n);
/* Also fills *un (the caller frees it with cli_unnamed_free()) with *nun
 * rows, largest first, unless un is NULL. */
int cli_series_quality(struct store *s, const struct store_series *se, struct view_quality *q,
                       struct cli_unnamed **un, size_t *nun);
void cli_warn_unrooted(struct store *s, const struct store_series *before, size_t nbefore,
                       enum cli_stack_source from);
/* When at least VIEW_UNNAMED_WARN_PERCENT of the weight of the series
 * that changed since `before` (those of the event with the most weight
 * among them) ends in frames without a function name, prints one line on
 * stderr naming the share, the top two modules and, on Debian, their
 * debug packages, and what to do before `again` ("import", "record"). */
void cli_warn_unnamed(struct store *s, const struct store_series *before, size_t nbefore,
                      const char *again);
/* Both warnings, in that order, each series measured once for the two:
 * cli_warn_unrooted() when unrooted, cli_warn_unnamed() when again is not
 * NULL (import asks both). */
void cli_warn_after(struct store *s, const struct store_series *before, size_t nbefore,
                    bool unrooted, enum cli_stack_source from, const char *again);

/* A usage error of `flamefs-collect CMD` (cmd NULL: of flamefs-collect
 * itself): prints one line, "flamefs-collect CMD: <fmt>; try
 * 'flamefs-collect CMD --help'", and returns the exit status, 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The option getopt_long() just refused (it returned c, '?' or ':'; the
 * optstring begins with ':' so that a missing value is told apart, and
 * getopt prints nothing itself), as cli_usage_error() reports it. */
int cli_bad_option(const char *cmd, int c, char **argv);

/* The options of a command that takes only --store and --help (stats,
 * compact): sets *store_arg (NULL when not given) and returns -1 to go
 * on, or the exit status when the command ends here (0 after --help, 2
 * after a usage error, usage() having printed to the right stream). */
int cli_store_only_options(int argc, char **argv, void (*usage)(FILE *f), const char **store_arg);

/* The commands: argv[0] is the command's name; each returns the exit
 * status (0, 1 on failure, 2 for a usage error). */
int cmd_import(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_compact(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_unwind_table(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_samples(int argc, char **argv);

#endif
