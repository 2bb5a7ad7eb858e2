/*
 * cmdline.c — `flamefs-collect record`'s command line: the
 * options, their values (durations, sizes, short durations) checked and
 * refused with the option's name and examples, and the combinations
 * that exclude each other.  Like record.c it is CLI code and prints its
 * errors as "flamefs-collect: ...".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record-internal.h"
#include "record.h"
#include "store.h"

int record_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG " record: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; try '" PROG " record --help'\n", stderr);
	return 2;
}

/* The option getopt_long() refused (c is '?' or ':'), in one line. */
static int bad_option(int c, char **argv)
{
	const char *arg = argv[optind - 1];
	int n = (int)strcspn(arg, "=");

	if (c == ':')
		return record_usage_error("option %.*s needs a value", n, arg);
	if (strncmp(arg, "--", 2) == 0)
		return record_usage_error(optopt && arg[n] ? "option %.*s takes no value"
		                                           : "unknown option %.*s",
		                          n, arg);
	return record_usage_error("unknown option -%c", optopt);
}

/* The value of --NAME, a duration of up to a year (0 allowed), in
 * seconds; reports a bad one, with examples, and returns -EINVAL. */
static int parse_seconds(const char *name, const char *examples, const char *arg, int64_t *out)
{
	if (record_parse_duration(arg, out) < 0 || *out > 365 * 86400) {
		record_usage_error("--%s: expected a duration such as %s or 0, got \"%s\"", name,
		                   examples, arg);
		return -EINVAL;
	}
	return 0;
}

/* "16M", "512K", "1G" or a number of bytes (binary units). */
static int parse_size(const char *arg, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (errno || end == arg || arg[0] == '-')
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case '\0': break;
	case 'k':
	case 'K': shift = 10; break;
	case 'm':
	case 'M': shift = 20; break;
	case 'g':
	case 'G': shift = 30; break;
	default: return -EINVAL;
	}
	if (*end && end[1] && !(end[1] == 'i' && end[2] == 'B' && !end[3]) &&
	    !(end[1] == 'B' && !end[2]))
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "500us", "2ms", "1s", "10ns"; a bare number is microseconds. */
static int parse_short_duration(const char *arg, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end), mult;
	if (errno || end == arg || !(v >= 0) || arg[0] == '-')
		return -EINVAL;
	if (strcmp(end, "ns") == 0)
		mult = 1;
	else if (strcmp(end, "us") == 0 || *end == '\0')
		mult = 1e3;
	else if (strcmp(end, "ms") == 0)
		mult = 1e6;
	else if (strcmp(end, "s") == 0)
		mult = 1e9;
	else
		return -EINVAL;
	if (v * mult > 1e18)
		return -ERANGE;
	*ns = (uint64_t)(v * mult + 0.5);
	return 0;
}

/* -F, -d, --offcpu-min and --samples-memory: how, how long and into how
 * large a ring to sample. */
static int parse_sampling_option(int c, char *optarg, struct options *o)
{
	char *end;

	switch (c) {
	case 'O':
		if (parse_short_duration(optarg, &o->offcpu_min_ns) < 0) {
			return record_usage_error(
			        "--offcpu-min: expected a duration such as 1us, 500us "
			        "or 2ms, got \"%s\"",
			        optarg);
		}
		break;
	case 'S':
		if (parse_size(optarg, &o->samples_memory) < 0 || o->samples_memory < 4096 ||
		    o->samples_memory > (256ull << 20)) {
			return record_usage_error(
			        "--samples-memory: expected a size from 4K to 256M (such "
			        "as 1M), got \"%s\"",
			        optarg);
		}
		break;
	case 'F': {
		errno = 0;
		unsigned long f = strtoul(optarg, &end, 10);
		if (errno || end == optarg || *end || f < 1 || f > MAX_FREQ) {
			return record_usage_error("-F: expected a frequency "
			                          "from 1 to %d Hz, got \"%s\"",
			                          MAX_FREQ, optarg);
		}
		o->freq = (unsigned)f;
		break;
	}
	case 'd': {
		errno = 0;
		double d = strtod(optarg, &end);
		if (errno || end == optarg || *end || !(d > 0) || d > 1e9) {
			return record_usage_error("-d: expected seconds "
			                          "> 0, got \"%s\"",
			                          optarg);
		}
		o->duration = d;
		break;
	}
	default: return 1;
	}
	return 0;
}

/* --unwind, --unwind-memory, --jit-wait, --jit-memory, --module-grace and
 * --python: how stacks are walked and named. */
static int parse_unwind_option(int c, char *optarg, struct options *o)
{
	switch (c) {
	case 'U':
		if (strcmp(optarg, "auto") == 0) {
			o->unwind = PROFILE_UNWIND_AUTO;
		} else if (strcmp(optarg, "dwarf") == 0) {
			o->unwind = PROFILE_UNWIND_DWARF;
		} else if (strcmp(optarg, "fp") == 0) {
			o->unwind = PROFILE_UNWIND_FP;
		} else {
			return record_usage_error(
			        "--unwind: expected auto, dwarf or fp, got \"%s\"", optarg);
		}
		break;
	case 'M':
		if (parse_size(optarg, &o->unwind_memory) < 0 || o->unwind_memory < (64u << 10) ||
		    o->unwind_memory > (4ull << 30)) {
			return record_usage_error("--unwind-memory: expected a size from 64K to 4G "
			                          "(such as 16M), got \"%s\"",
			                          optarg);
		}
		break;
	case 'W':
		if (parse_seconds("jit-wait", "60s, 10m", optarg, &o->jit_wait) < 0)
			return 2;
		break;
	case 'G':
		if (parse_seconds("module-grace", "5m, 30s", optarg, &o->module_grace) < 0)
			return 2;
		break;
	case 'J':
		if (parse_size(optarg, &o->jit_memory) < 0 || o->jit_memory > (64ull << 30)) {
			return record_usage_error(
			        "--jit-memory: expected a size up to 64G (such as "
			        "16M, or 0), got \"%s\"",
			        optarg);
		}
		break;
	case 'y':
		if (strcmp(optarg, "on") == 0 || strcmp(optarg, "off") == 0) {
			o->python = strcmp(optarg, "on") == 0;
		} else {
			return record_usage_error("--python: expected on or off, got \"%s\"",
			                          optarg);
		}
		break;
	default: return 1;
	}
	return 0;
}

/* --host, --push, --push-every, --keep-samples and --retention: where
 * the samples go and how long they stay. */
static int parse_store_option(int c, char *optarg, struct options *o)
{
	switch (c) {
	case 'H':
		if (!store_host_valid(optarg)) {
			return record_usage_error(
			        "--host: expected a name of 1 to 255 bytes without "
			        "'/' or control characters, got \"%s\"",
			        optarg);
		}
		o->host = optarg;
		break;
	case 'P':
		if (!store_is_database(optarg)) {
			return record_usage_error(
			        "--push: expected a database (a connection string "
			        "that starts with postgresql: or postgres:)");
		}
		o->push_to = optarg;
		break;
	case 'Y': {
		int r = record_parse_duration(optarg, &o->push_every);
		if (r < 0 || o->push_every == 0) {
			return record_usage_error("--push-every: expected a duration such as 60s, "
			                          "5m or 1h, got \"%s\"",
			                          optarg);
		}
		break;
	}
	case 'K': {
		int r = record_parse_duration(optarg, &o->keep_samples);
		if (r < 0) {
			return record_usage_error(
			        "--keep-samples: expected a duration such as 30m, "
			        "6h or 1d, or 0, got \"%s\"",
			        optarg);
		}
		break;
	}
	case 'R': {
		int r = record_parse_duration(optarg, &o->retention);
		if (r < 0 || o->retention == 0) {
			return record_usage_error("--retention: expected a duration such as 30d, "
			                          "12h or 1d12h, got \"%s\"",
			                          optarg);
		}
		break;
	}
	default: return 1;
	}
	return 0;
}

/* An option whose value is checked: sets it in *o, or says what was
 * expected and returns 2; 1 for an option that is none of these. */
static int parse_checked(int c, char *optarg, struct options *o)
{
	int r = parse_sampling_option(c, optarg, o);

	if (r == 1)
		r = parse_unwind_option(c, optarg, o);
	if (r == 1)
		r = parse_store_option(c, optarg, o);
	return r;
}

/* Refuses options that exclude or need each other; -1 to go on, else the
 * exit status. */
static int check_combination(struct options *o)
{
	int targets = (o->pid_list != NULL) + o->all + (o->command != NULL);
	if (targets != 1) {
		return record_usage_error("give exactly one of -p PID, -a or -- COMMAND");
	}
	for (const char *p = o->pid_list; p && *p;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT32_MAX || (*end && *end != ',') ||
		    (*end == ',' && !end[1]))
			return record_usage_error("-p: expected PID[,PID...], got \"%s\"",
			                          o->pid_list);
		p = *end ? end + 1 : end;
	}
	if (o->user_only && o->kernel_only) {
		return record_usage_error("--user-only and --kernel-only exclude each other");
	}
	for (size_t i = 0; i < o->nspans; i++)
		if (o->all && !o->spans[i].path)
			return record_usage_error(
			        "--span %s: with -a, name the program or library: "
			        ":in=PATH",
			        o->spans[i].arg);
	if (o->push_every && !o->push_to) {
		return record_usage_error("--push-every needs --push DATABASE");
	}
	if (!o->push_every)
		o->push_every = 60;
	if (o->push_to && o->store_dir && store_is_database(o->store_dir)) {
		return record_usage_error(
		        "--push copies a local store; --store already names a database");
	}
	return -1;
}

/* --labels LIST: the labels named, into *out.  0, or 2 (printed). */
static int parse_labels(const char *list, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} known[] = {
	        {STORE_LABEL_CGROUP, RECORD_LABEL_CGROUP},
	        {STORE_LABEL_CONTAINER, RECORD_LABEL_CONTAINER},
	        {STORE_LABEL_THREAD, RECORD_LABEL_THREAD},
	        {STORE_LABEL_EXE, RECORD_LABEL_EXE},
	};
	const char *p = list;

	*out = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t i = 0;
		while (i < sizeof(known) / sizeof(known[0]) &&
		       (strlen(known[i].name) != n || strncmp(known[i].name, p, n) != 0))
			i++;
		if (i == sizeof(known) / sizeof(known[0])) {
			if (n == strlen(STORE_LABEL_CMDLINE) &&
			    strncmp(p, STORE_LABEL_CMDLINE, n) == 0)
				return record_usage_error(
				        "--labels: the command line is recorded only with "
				        "--cmdline (it may hold secrets)");
			return record_usage_error(
			        "--labels: expected a list of cgroup, container, thread "
			        "and exe, got \"%.*s\" in \"%s\"",
			        (int)n, p, list);
		}
		*out |= known[i].bit;
		p += n;
		if (*p == ',' && p[1] == '\0')
			return record_usage_error("--labels: a list ends with a label, got \"%s\"",
			                          list);
		if (*p == ',')
			p++;
	}
	if (!*out)
		return record_usage_error(
		        "--labels: expected a list of cgroup, container, thread and "
		        "exe (or --no-labels), got \"%s\"",
		        list);
	return 0;
}

/* N of a field "argN" (from 1 to 12, as USDT probes have at most 12
 * arguments: sys/sdt.h), or 0 when it is not one. */
static unsigned span_arg_number(const char *num)
{
	char *e;
	errno = 0;
	unsigned long n = strtoul(num, &e, 10);
	if (!*num || *e || errno || n < 1 || n > 12 || num[0] == '0')
		return 0;
	return (unsigned)n;
}

/* The ready-made spans: `--span NAME[:in=PATH]` is `--span SPEC:in=PATH`
 * for each of its specs, PATH by default the program they were written
 * for.  PostgreSQL's probes are those of Debian's postgresql-15
 * (`readelf -n` on its postgres, probes.d for their arguments):
 * query__start(const char *query) fires in exec_simple_query only, so the
 * simple query protocol's statements are spans and the extended
 * protocol's (prepared statements) are not; transaction__start(lxid) in
 * StartTransaction, __commit(lxid) and __abort(lxid) at its two ends;
 * lock__wait__start(tag fields 1-4, tag type, mode) and __done(same)
 * around the sleep of a heavyweight lock's wait (WaitOnLock), named by
 * the tag's type (arg5, a LockTagType: labels.c names it).  All three
 * are flat: a statement that fails leaves exec_simple_query by its error,
 * without query__done, and a wait that fails (a deadlock, lock_timeout)
 * leaves WaitOnLock so, without lock__wait__done. */
#define SPAN_PG_PATH  "/usr/lib/postgresql/15/bin/postgres"
#define SPAN_PG_QUERY "postgresql:query__start:query__done:name=arg1:sql:flat"
#define SPAN_PG_XACT                                                                               \
	"postgresql:transaction__start:transaction__commit|transaction__abort:fixed=transaction:"  \
	"flat"
#define SPAN_PG_LOCK "postgresql:lock__wait__start:lock__wait__done:number=arg5:pglock:flat"
static const struct {
	const char *name, *spec[3], *path;
} span_shortcuts[] = {
        {"pg-query", {SPAN_PG_QUERY}, SPAN_PG_PATH},
        {"pg-xact", {SPAN_PG_XACT}, SPAN_PG_PATH},
        {"pg-lock", {SPAN_PG_LOCK}, SPAN_PG_PATH},
        {"pg", {SPAN_PG_QUERY, SPAN_PG_XACT, SPAN_PG_LOCK}, SPAN_PG_PATH},
};

static int parse_span_spec(const char *arg, char *copy, struct options *o);
/* A spec's index goes in its cookie and keys `span_fixed`. */
_Static_assert(RECORD_SPANS_MAX <= PROFILE_SPAN_SPECS &&
                       RECORD_SPANS_MAX - 1 <= PROFILE_SPAN_SPEC_MASK,
               "--span's specs do not fit the BPF side's");

/* --span PROVIDER:START:END[|END...][:FIELD...], the fields name=argN,
 * number=argN, fixed=NAME, id=argN, parent=argN, sql, pglock, flat and in=PATH (last:
 * it takes the rest, colons too), or a ready-made span's NAME[:in=PATH].
 * Appended to o->spans (a ready-made span may be several); 0, or 2
 * (printed). */
static int parse_span(const char *arg, struct options *o)
{
	for (size_t i = 0; i < sizeof(span_shortcuts) / sizeof(span_shortcuts[0]); i++) {
		size_t n = strlen(span_shortcuts[i].name);
		if (strncmp(arg, span_shortcuts[i].name, n) != 0 || (arg[n] && arg[n] != ':'))
			continue;
		if (arg[n] && (strncmp(arg + n, ":in=", 4) != 0 || !arg[n + 4]))
			return record_usage_error(
			        "--span %s: a ready-made span takes only :in=PATH, the "
			        "file with its probes (default %s)",
			        arg, span_shortcuts[i].path);
		for (size_t j = 0; j < 3 && span_shortcuts[i].spec[j]; j++) {
			char *spec;
			if (asprintf(&spec, "%s:in=%s", span_shortcuts[i].spec[j],
			             arg[n] ? arg + n + 4 : span_shortcuts[i].path) < 0)
				return record_usage_error("out of memory");
			int r = parse_span_spec(arg, spec, o);
			if (r)
				return r;
		}
		return 0;
	}
	char *copy = strdup(arg);
	if (!copy)
		return record_usage_error("out of memory");
	return parse_span_spec(arg, copy, o);
}

/* One span's PROVIDER:START:END[|END...][:FIELD...] in `copy` (taken: its
 * pieces become the spec's), given as `arg`. */
static int parse_span_spec(const char *arg, char *copy, struct options *o)
{
	if (o->nspans == RECORD_SPANS_MAX) {
		free(copy);
		return record_usage_error("--span: at most %d spans", RECORD_SPANS_MAX);
	}
	struct record_span_spec *sp = realloc(o->spans, (o->nspans + 1) * sizeof(*sp));
	if (!sp) {
		free(copy);
		return record_usage_error("out of memory");
	}
	o->spans = sp;
	sp = &o->spans[o->nspans];
	*sp = (struct record_span_spec){.arg = arg};
	char *rest = copy, *f[3];
	for (int i = 0; i < 3; i++) {
		f[i] = rest;
		rest = rest ? strchr(rest, ':') : NULL;
		if (rest)
			*rest++ = '\0';
		if (!f[i] || !*f[i]) {
			free(copy);
			return record_usage_error("--span: expected PROVIDER:START:END[|END...]"
			                          "[:name=argN|:number=argN|:fixed=NAME]"
			                          "[:id=argN][:parent=argN][:sql][:pglock][:flat]"
			                          "[:in=PATH] or pg-query, pg-xact, pg-lock, "
			                          "pg[:in=PATH], got \"%s\"",
			                          arg);
		}
	}
	sp->provider = f[0];
	sp->start = f[1];
	for (char *e = f[2], *bar; e; e = bar) {
		if ((bar = strchr(e, '|')))
			*bar++ = '\0';
		if (!*e || sp->nend == RECORD_SPAN_ENDS) {
			free(copy);
			return record_usage_error(
			        "--span %s: expected END or END|END..., at most %d end "
			        "probes, none empty",
			        arg, RECORD_SPAN_ENDS);
		}
		sp->end[sp->nend++] = e;
	}
	sp->cookie = (uint32_t)o->nspans << PROFILE_SPAN_SPEC_SHIFT;
	bool named = false;
	while (rest) {
		char *field = rest;
		if (strncmp(field, "in=", 3) == 0) {
			sp->path = field + 3;
			if (!*sp->path) {
				free(copy);
				return record_usage_error("--span %s: in= needs a file", arg);
			}
			break;
		}
		rest = strchr(rest, ':');
		if (rest)
			*rest++ = '\0';
		const char *num = NULL;
		uint32_t flags = 0;
		if (strncmp(field, "name=arg", 8) == 0)
			num = field + 8;
		else if (strncmp(field, "number=arg", 10) == 0)
			num = field + 10, flags = PROFILE_SPAN_NUM;
		int shift = strncmp(field, "id=arg", 6) == 0        ? PROFILE_SPAN_ID_SHIFT
		            : strncmp(field, "parent=arg", 10) == 0 ? PROFILE_SPAN_PARENT_SHIFT
		                                                    : 0;
		if (shift) {
			unsigned n =
			        span_arg_number(field + (shift == PROFILE_SPAN_ID_SHIFT ? 6 : 10));
			if (!n || (sp->cookie >> shift) & PROFILE_SPAN_FIELD_MASK) {
				int r = record_usage_error(
				        "--span %s: %s: expected one id=argN and one "
				        "parent=argN at most, N from 1 to 12",
				        arg, field);
				free(copy);
				return r;
			}
			sp->cookie |= (uint32_t)n << shift;
		} else if (num) {
			unsigned long n = span_arg_number(num);
			if (named || !n) {
				/* field points into copy: said before it is freed */
				int r = record_usage_error(
				        "--span %s: %s: expected one name=argN, "
				        "number=argN or fixed=NAME, N from 1 to 12",
				        arg, field);
				free(copy);
				return r;
			}
			sp->cookie |= (uint32_t)(n - 1) | flags;
			named = true;
		} else if (strncmp(field, "fixed=", 6) == 0) {
			if (named || !field[6] || strlen(field + 6) >= PROFILE_SPAN_NAME) {
				int r = record_usage_error(
				        "--span %s: %s: expected one name=argN, "
				        "number=argN or fixed=NAME, NAME of 1 to %d bytes",
				        arg, field, PROFILE_SPAN_NAME - 1);
				free(copy);
				return r;
			}
			sp->fixed = field + 6;
			sp->cookie |= PROFILE_SPAN_FIXED;
			named = true;
		} else if (strcmp(field, "pglock") == 0) {
			sp->cookie |= PROFILE_SPAN_PGLOCK;
		} else if (strcmp(field, "flat") == 0) {
			sp->cookie |= PROFILE_SPAN_FLAT;
		} else if (strcmp(field, "sql") == 0) {
			sp->cookie |= PROFILE_SPAN_SQL;
		} else {
			int r = record_usage_error(
			        "--span %s: unknown field \"%s\" (expected name=argN, "
			        "number=argN, fixed=NAME, id=argN, parent=argN, sql, pglock, "
			        "flat or in=PATH)",
			        arg, field);
			free(copy);
			return r;
		}
	}
	if (!named) {
		free(copy);
		return record_usage_error(
		        "--span %s: name the span: add :name=argN (a string argument), "
		        ":number=argN or :fixed=NAME",
		        arg);
	}
	if ((sp->cookie & PROFILE_SPAN_PGLOCK) && !(sp->cookie & PROFILE_SPAN_NUM)) {
		free(copy);
		return record_usage_error("--span %s: pglock names a number: give number=argN",
		                          arg);
	}
	if ((sp->cookie & (PROFILE_SPAN_NUM | PROFILE_SPAN_FIXED)) &&
	    (sp->cookie & PROFILE_SPAN_SQL)) {
		free(copy);
		return record_usage_error(
		        "--span %s: sql normalises a string read, not a number or a "
		        "fixed name",
		        arg);
	}
	o->nspans++;
	return 0;
}

int record_parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_LABELS = 0x100, OPT_NO_LABELS, OPT_CMDLINE, OPT_SPAN, OPT_DEBUG_DIR };
	static const struct option opts[] = {
	        {"store", required_argument, NULL, 's'},
	        {"pid", required_argument, NULL, 'p'},
	        {"all-cpus", no_argument, NULL, 'a'},
	        {"freq", required_argument, NULL, 'F'},
	        {"duration", required_argument, NULL, 'd'},
	        {"user-only", no_argument, NULL, 'u'},
	        {"kernel-only", no_argument, NULL, 'k'},
	        {"host", required_argument, NULL, 'H'},
	        {"binary", required_argument, NULL, 'b'},
	        {"version", required_argument, NULL, 'V'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"lines", no_argument, NULL, 'L'},
	        {"inline", no_argument, NULL, 'I'},
	        {"unwind", required_argument, NULL, 'U'},
	        {"event", required_argument, NULL, 'e'},
	        {"offcpu-min", required_argument, NULL, 'O'},
	        {"unwind-memory", required_argument, NULL, 'M'},
	        {"jit-wait", required_argument, NULL, 'W'},
	        {"jit-memory", required_argument, NULL, 'J'},
	        {"module-grace", required_argument, NULL, 'G'},
	        {"python", required_argument, NULL, 'y'},
	        {"log-drains", required_argument, NULL, 'D'},
	        {"retention", required_argument, NULL, 'R'},
	        {"keep-samples", required_argument, NULL, 'K'},
	        {"samples-memory", required_argument, NULL, 'S'},
	        {"push", required_argument, NULL, 'P'},
	        {"push-every", required_argument, NULL, 'Y'},
	        {"labels", required_argument, NULL, OPT_LABELS},
	        {"no-labels", no_argument, NULL, OPT_NO_LABELS},
	        {"cmdline", no_argument, NULL, OPT_CMDLINE},
	        {"span", required_argument, NULL, OPT_SPAN},
	        {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c, r;

	o->freq = 99;
	o->unwind = PROFILE_UNWIND_AUTO;
	o->offcpu_min_ns = 1000;
	const char *event_list = "cpu";
	o->unwind_memory = 16ull << 20;
	o->jit_wait = 60;
	o->module_grace = 300;
	o->jit_memory = 16ull << 20;
	o->python = true;
	o->keep_samples = -1;
	unsigned labels = RECORD_LABELS_DEFAULT;
	bool no_labels = false, cmdline = false;
	while ((c = getopt_long(argc, argv, "+:hp:aF:d:ve:", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->store_dir = optarg; break;
		case 'p': o->pid_list = optarg; break;
		case 'a': o->all = true; break;
		case 'u': o->user_only = true; break;
		case 'k': o->kernel_only = true; break;
		case 'b': o->binary = optarg; break;
		case 'V': o->version = optarg; break;
		case 'v': o->verbose++; break;
		case 'L': o->lines = true; break;
		case 'I': o->inlines = true; break;
		case 'e': event_list = optarg; break;
		case 'D': o->log_drains = optarg; break;
		case 'h': record_usage(stdout); return 0;
		case OPT_LABELS:
			if ((r = parse_labels(optarg, &labels)) != 0)
				return r;
			break;
		case OPT_NO_LABELS: no_labels = true; break;
		case OPT_CMDLINE: cmdline = true; break;
		case OPT_SPAN:
			if ((r = parse_span(optarg, o)) != 0)
				return r;
			break;
		case OPT_DEBUG_DIR: {
			const char **n = realloc(o->debug_dirs, (o->ndebug_dirs + 1) * sizeof(*n));
			if (!n)
				return record_usage_error("out of memory");
			o->debug_dirs = n;
			o->debug_dirs[o->ndebug_dirs++] = optarg;
			break;
		}
		default:
			if ((r = parse_checked(c, optarg, o)) == 1)
				return bad_option(c, argv);
			if (r)
				return r;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	if (no_labels && (labels != RECORD_LABELS_DEFAULT || cmdline))
		return record_usage_error(
		        "--no-labels records no labels: it goes with neither --labels "
		        "nor --cmdline");
	o->labels = no_labels ? 0 : labels | (cmdline ? RECORD_LABEL_CMDLINE : 0);
	for (size_t i = 0; i < o->ndebug_dirs; i++) {
		struct stat st;
		int sr = stat(o->debug_dirs[i], &st);
		if (sr < 0 || !S_ISDIR(st.st_mode))
			return record_usage_error(
			        "--debug-dir %s: %s; give a directory of debug files",
			        o->debug_dirs[i], sr < 0 ? strerror(errno) : "not a directory");
	}
	if ((r = check_combination(o)) >= 0)
		return r;
	if (record_parse_events(event_list, o) < 0)
		return 2;
	return -1;
}
