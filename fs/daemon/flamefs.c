/*
 * flamefs.c — flamefs's command line and main: parses the options (fstab's
 * too), checks the store and the mount point while errors still reach the
 * terminal, mounts, daemonizes, runs the invalidator thread and libfuse's
 * loop, and frees everything at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon-internal.h"

/* ---- command line ------------------------------------------------------- */

enum { KEY_HELP, KEY_VERSION, KEY_RW, KEY_NONEMPTY };

struct cli {
	char *store, *mountpoint;
	char *max_render;  /* -o max_render=SIZE */
	char *bad;         /* the first option or argument refused, for the message */
	bool bad_argument; /* bad is an argument past MOUNTPOINT, not an option */
	bool help, version, rw, nonempty;
};

static const struct fuse_opt cli_opts[] = {
        FUSE_OPT_KEY("-h", KEY_HELP),
        FUSE_OPT_KEY("--help", KEY_HELP),
        FUSE_OPT_KEY("-V", KEY_VERSION),
        FUSE_OPT_KEY("--version", KEY_VERSION),
        FUSE_OPT_KEY("rw", KEY_RW),
        /* libfuse 3 dropped it; the check is ours (check_mountpoint()). */
        FUSE_OPT_KEY("nonempty", KEY_NONEMPTY),
        {"max_render=%s", offsetof(struct cli, max_render), 0},
        /* fstab and mount(8) options that mean nothing to a FUSE mount. */
        FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("x-%s", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("comment=%s", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_END,
};

/* Keeps the first thing refused; later ones are not reported. */
static int cli_refuse(struct cli *c, const char *arg, bool argument)
{
	if (c->bad)
		return 0;
	c->bad_argument = argument;
	c->bad = strdup(arg);
	return c->bad ? 0 : -1;
}

/* STORE and MOUNTPOINT are kept here, not handed to libfuse, so that
 * their errors are flamefs's own (fuse_parse_cmdline() would report a
 * missing mount point in its words).  The options fuse_parse_cmdline()
 * knows (-f, -d, -s) go on to it; any other dash option is refused
 * here; -o options go on to fuse_session_new(), which check_options()
 * asks first. */
static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;

	(void)outargs;
	switch (key) {
	case KEY_HELP: c->help = true; return 0;
	case KEY_VERSION: c->version = true; return 0;
	case KEY_RW: c->rw = true; return 0;
	case KEY_NONEMPTY: c->nonempty = true; return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (!c->store) {
			c->store = strdup(arg);
			return c->store ? 0 : -1;
		}
		if (!c->mountpoint) {
			c->mountpoint = strdup(arg);
			return c->mountpoint ? 0 : -1;
		}
		return cli_refuse(c, arg, true);
	default:
		if (arg[0] == '-' && strcmp(arg, "-f") != 0 && strcmp(arg, "-d") != 0 &&
		    strcmp(arg, "-s") != 0)
			return cli_refuse(c, arg, false);
		return 1;
	}
}

/* A usage error: one line, a pointer to --help, exit status 2. */
static int usage_error(const char *fmt, const char *what)
{
	fputs("flamefs: ", stderr);
	fprintf(stderr, fmt, what);
	fputs("; try flamefs --help\n", stderr);
	return 2;
}

/* libfuse's messages go through fuse_message() (fuse_set_log_func()),
 * some in pieces (fuse_opt's "unknown option(s): `", each option, "'\n"):
 * .line gathers them up to the newline.  While .on, the first whole line
 * is kept in .msg instead of printed.  .on and .msg are set and read by
 * the main thread before the daemon's threads start; .line is guarded by
 * .lock. */
static struct {
	pthread_mutex_t lock;
	char line[512];
	size_t len;
	bool on;
	char msg[512];
} fuse_captured = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* What to do after a libfuse message that says only what went wrong,
 * "" when it says both already or is not known here. */
static const char *fuse_hint(const char *msg)
{
	if (strstr(msg, "/dev/fuse") &&
	    (strstr(msg, "Permission denied") || strstr(msg, "Operation not permitted")))
		return "; run as root, or let your user read and write /dev/fuse (Debian makes "
		       "it mode 0666)";
	if (strstr(msg, "Permission denied") || strstr(msg, "Operation not permitted"))
		return "; run as root, or mount on a directory you own";
	return "";
}

/* Says a libfuse message ("fuse: failed to open /dev/fuse: Permission
 * denied") as flamefs's own: one line that starts "flamefs:", with what
 * to do where fuse_hint() knows it. */
static void fuse_message(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char piece[sizeof(fuse_captured.line)];
	char *msg = fuse_captured.line, *m;
	size_t *len = &fuse_captured.len;

	(void)level;
	vsnprintf(piece, sizeof(piece), fmt, ap);
	pthread_mutex_lock(&fuse_captured.lock);
	for (const char *p = piece; *p; p++) {
		if (*p != '\n') {
			if (*len + 1 < sizeof(fuse_captured.line))
				msg[(*len)++] = *p;
			continue;
		}
		msg[*len] = '\0';
		*len = 0;
		if (!msg[0])
			continue;
		if (fuse_captured.on) {
			if (!fuse_captured.msg[0])
				memcpy(fuse_captured.msg, msg, sizeof(fuse_captured.msg));
			continue;
		}
		m = strncmp(msg, "fuse: ", 6) == 0 ? msg + 6 : msg;
		fprintf(stderr, "flamefs: %s%s\n", m, fuse_hint(m));
	}
	pthread_mutex_unlock(&fuse_captured.lock);
}

/* Asks libfuse whether it takes the -o options, before anything is
 * opened: fuse_session_new() on a copy of the arguments, its message
 * ("fuse: unknown option(s): `-o bogus'") caught and said in flamefs's
 * words.  Returns 0, or the exit status. */
static int check_options(const struct fuse_args *args)
{
	struct fuse_args copy = FUSE_ARGS_INIT(0, NULL);
	char *msg = fuse_captured.msg;
	int ret = 1;

	for (int i = 0; i < args->argc; i++)
		if (fuse_opt_add_arg(&copy, args->argv[i]) < 0)
			goto out;
	fuse_captured.on = true;
	msg[0] = '\0';
	struct fuse_session *se =
	        fuse_session_new(&copy, &ops_lowlevel, sizeof(ops_lowlevel), NULL);
	fuse_captured.on = false;
	if (se) {
		fuse_session_destroy(se);
		ret = 0;
		goto out;
	}
	/* "fuse: unknown option(s): `-o a,b'": name them. */
	char *lq = strchr(msg, '`'), *rq = lq ? strrchr(lq, '\'') : NULL;
	if (strstr(msg, "unknown option") && lq && rq) {
		*rq = '\0';
		char *opt = lq + 1;
		if (strncmp(opt, "-o ", 3) == 0)
			opt += 3;
		ret = usage_error("unknown mount option %s", opt);
	} else {
		fprintf(stderr, "flamefs: %s\n",
		        strncmp(msg, "fuse: ", 6) == 0 ? msg + 6
		        : msg[0]                       ? msg
		                                       : "cannot set up FUSE");
	}
out:
	fuse_opt_free_args(&copy);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: flamefs [options] STORE MOUNTPOINT\n"
	             "\n"
	             "Mounts a flamefs store read-only as a filesystem of call trees:\n"
	             "  MOUNTPOINT/<binary>/<version>/<frame>/<frame>/...\n"
	             "with the files folded, self, total, pprof, name, flame.svg, callgrind, top,\n"
	             "timeline, timeline.svg and heatmap.svg "
	             "in every directory below a version,\n"
	             "about in a version directory (who ran it), and the views\n"
	             "  MOUNTPOINT/@last/<duration>/...  MOUNTPOINT/@range/<from>/<to>/...\n"
	             "  MOUNTPOINT/@range/<from>/<to>/@diff/<from2>/<to2>/...\n"
	             "  MOUNTPOINT/<binary>/@diff/<A>/<B>/...\n"
	             "  MOUNTPOINT/<binary>/<version>/@functions/<function>/...\n"
	             "  MOUNTPOINT/@host/<name>/...  MOUNTPOINT/@cgroup/<path>/...\n"
	             "  MOUNTPOINT/@container/<id>/...  MOUNTPOINT/@thread/<name>/...\n"
	             "  MOUNTPOINT/@span/<name>/...\n"
	             "STORE is a store directory, or a PostgreSQL database given as a connection\n"
	             "string that starts with postgresql: or postgres: (a central store that many\n"
	             "hosts push into; the view sums the hosts and needs only SELECT rights).\n"
	             "Data imported while mounted shows up within 2 s.\n"
	             "\n"
	             "options:\n"
	             "  -h, --help        print this help and exit\n"
	             "  -V, --version     print the version and exit\n"
	             "  -f                stay in the foreground\n"
	             "  -d                debug: foreground, print every FUSE request\n"
	             "  -s                single-threaded\n"
	             "  -o opt[,opt...]   mount options, passed to FUSE (allow_other,\n"
	             "                    default_permissions, ...); ro, noauto, user, users,\n"
	             "                    _netdev, nofail, defaults and x-* are accepted for\n"
	             "                    /etc/fstab; rw is refused; nonempty mounts\n"
	             "                    over a directory that holds files\n"
	             "  -o max_render=SIZE  the most bytes one file's rendering may take\n"
	             "                    (K, M, G suffixes; default 256M): a larger one is\n"
	             "                    refused with EFBIG (\"File too large\")\n"
	             "\n"
	             "EXAMPLES\n"
	             "  flamefs ~/.local/share/flamefs /mnt/prof\n"
	             "  PGPASSFILE=~/.pgpass flamefs postgresql://reader@db/flamefs /mnt/fleet\n"
	             "  cat /mnt/prof/nginx/1.25.3/total\n"
	             "  ls /mnt/prof/nginx/1.25.3/main/\n"
	             "  go tool pprof -top /mnt/prof/nginx/1.25.3/pprof\n"
	             "  firefox /mnt/prof/nginx/1.25.3/flame.svg\n"
	             "  cat /mnt/prof/@last/5m/nginx/1.25.3/total\n"
	             "  cat /mnt/prof/nginx/@diff/1.25.2/1.25.3/regressions\n"
	             "  cat /mnt/prof/nginx/1.25.3/about\n"
	             "  head /mnt/prof/@cgroup/system.slice%%2Fnginx.service/top\n"
	             "  ls /mnt/prof/@thread/\n"
	             "  ls /mnt/prof/nginx/1.25.3/@functions/malloc/callers/\n"
	             "  fusermount3 -u /mnt/prof\n"
	             "\n"
	             "  /etc/fstab:  /var/lib/flamefs  /mnt/prof  fuse.flamefs  "
	             "ro,allow_other,noauto  0 0\n");
}

/* True when the directory holds an entry besides . and ..; false when
 * it cannot be listed (the mount itself then decides). */
static bool dir_has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

/* Refuses a mount point that does not exist, is not a directory, that a
 * user other than root may not write to, is already a mount point, or
 * holds files (unless -o nonempty: a mount
 * hides what is below it until it is unmounted), with one line that
 * says so and what to do. */
static int check_mountpoint(const char *mp, bool nonempty)
{
	struct stat st, pst;
	char *parent;
	int r = 0;

	if (stat(mp, &st) < 0) {
		r = errno;
		if (r == ENOTCONN)
			fprintf(stderr, "flamefs: %s: stale mount; run fusermount3 -u %s\n", mp,
			        mp);
		else if (r == ENOENT)
			fprintf(stderr, "flamefs: %s: no such directory; mkdir it first\n", mp);
		else if (r == EACCES)
			fprintf(stderr,
			        "flamefs: %s: %s; mount on a directory you may reach, or run as "
			        "root\n",
			        mp, strerror(r));
		else
			fprintf(stderr, "flamefs: %s: %s\n", mp, strerror(r));
		return -r;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "flamefs: %s: not a directory; mount on an empty directory\n", mp);
		return -ENOTDIR;
	}
	/* fusermount3, which mounts for a user other than root, refuses a
	 * directory that user may not write to, in its own words. */
	if (geteuid() != 0 && access(mp, W_OK) < 0 && errno == EACCES) {
		fprintf(stderr,
		        "flamefs: %s: you may not write to it, and FUSE mounts only where its "
		        "user may; mount on a directory you own, or run as root\n",
		        mp);
		return -EACCES;
	}
	if (asprintf(&parent, "%s/..", mp) < 0)
		return -ENOMEM;
	if (stat(parent, &pst) == 0 && (pst.st_dev != st.st_dev || pst.st_ino == st.st_ino)) {
		fprintf(stderr,
		        "flamefs: %s: busy: something is already mounted there; "
		        "unmount it first (fusermount3 -u %s)\n",
		        mp, mp);
		r = -EBUSY;
	} else if (!nonempty && dir_has_entries(mp)) {
		fprintf(stderr,
		        "flamefs: %s: not empty: the mount would hide its files; use an empty "
		        "directory, or -o nonempty to mount over them\n",
		        mp);
		r = -ENOTEMPTY;
	}
	free(parent);
	return r;
}

/* The hint after a store that cannot be opened because there is none. */
#define MAKE_ONE "make one with `flamefs-collect import` or `record`"
/* The hint after a store the user may not read. */
#define MAY_READ "run as a user who may read the store (its owner, or root)"

static int open_store(const char *dir)
{
	char err[512] = "";
	int r = store_open(dir, STORE_READONLY, &fs.store, err, sizeof(err));

	if (r < 0) {
		const char *hint = strstr(err, "not a flamefs store") && !strstr(err, ";")
		                           ? "; " MAKE_ONE
		                   : r == -EACCES && !strstr(err, ";") ? "; " MAY_READ
		                                                       : "";
		fprintf(stderr, "flamefs: %s%s\n", err[0] ? err : strerror(-r), hint);
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &fs.last_refresh);
	fs.mtime = time(NULL);
	fs.last_bucket_end = refresh_bucket_end_now();
	fs.last_renames = store_renames(fs.store);
	r = refresh_load_series_locked();
	if (r < 0) {
		fprintf(stderr, "flamefs: %s: cannot list series: %s\n", store_where(fs.store),
		        store_errmsg(fs.store));
		store_close(fs.store);
		fs.store = NULL;
		return r;
	}
	return 0;
}

/* Frees everything the daemon holds (the mount is gone). */
static void teardown(void)
{
	pthread_mutex_lock(&fs.lock);
	while (fs.open_files)
		ops_close_file_locked(fs.open_files);
	for (uint32_t i = 1; i < fs.max_space; i++)
		if (fs.spaces[i])
			space_free_locked(fs.spaces[i]);
	rendercache_drop_locked();
	while (fs.inval_head) {
		struct inval *next = fs.inval_head->next;
		free(fs.inval_head);
		fs.inval_head = next;
	}
	fs.inval_tail = &fs.inval_head;
	series_free_locked();
	series_forget_ids_locked();
	free(fs.by_id);
	free(fs.primary);
	free(fs.space_of);
	fs.by_id = NULL;
	fs.primary = NULL;
	fs.space_of = NULL;
	fs.by_id_len = fs.space_of_len = 0;
	for (size_t i = 0; i < fs.nsdirs; i++) {
		free(fs.sdirs[i].name);
		free(fs.sdirs[i].version);
	}
	free(fs.sdirs);
	fs.sdirs = NULL;
	free(fs.sdir_hash);
	fs.sdir_hash = NULL;
	for (unsigned i = 0; i < sizeof(fs.fxc) / sizeof(fs.fxc[0]); i++) {
		view_functions_free(fs.fxc[i].fx);
		space_put_tree_locked(fs.fxc[i].tree);
		memset(&fs.fxc[i], 0, sizeof(fs.fxc[i]));
	}
	fs.nsdirs = fs.sdirs_cap = 0;
	store_close(fs.store);
	fs.store = NULL;
	pthread_mutex_unlock(&fs.lock);
}

/* Parses the command line into *cli and *opts; returns -1 to go on, else
 * the exit status (after --help, --version or a usage error). */
static int parse_command_line(struct fuse_args *args, struct cli *cli,
                              struct fuse_cmdline_opts *opts)
{
	int r;

	if (fuse_opt_parse(args, cli, cli_opts, cli_proc) < 0)
		return 1;
	if (cli->help) {
		usage(stdout);
		return 0;
	}
	if (cli->version) {
		printf("flamefs %s (libfuse %s)\n", FLAMEFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (cli->bad)
		return usage_error(cli->bad_argument ? "unexpected argument %s"
		                                     : "unknown option %s",
		                   cli->bad);
	if (!cli->store || !cli->mountpoint) {
		fprintf(stderr, "flamefs: expected STORE MOUNTPOINT; try flamefs --help\n");
		return 2;
	}
	if (cli->rw) {
		fprintf(stderr, "flamefs: the view is read-only; drop the rw option\n");
		return 2;
	}
	fs.render_max = VIEW_RENDER_MAX;
	if (cli->max_render && view_parse_size(cli->max_render, &fs.render_max) < 0) {
		return usage_error("-o max_render: expected a size in bytes with an optional K, M "
		                   "or G suffix (256M), got \"%s\"",
		                   cli->max_render);
	}
	if (fuse_parse_cmdline(args, opts) < 0)
		return 1;
	if ((r = check_options(args)) != 0)
		return r;
	return -1;
}

/* A store directory (not a database) exists: *st is its stat, and
 * cli->store becomes its absolute path (fuse_daemonize() changes to
 * "/").  0, or -1 after saying why. */
static int check_store_dir(struct cli *cli, struct stat *st)
{
	if (store_is_database(cli->store))
		return 0;
	if (stat(cli->store, st) < 0) {
		if (errno == ENOENT)
			fprintf(stderr, "flamefs: %s: no store here; " MAKE_ONE "\n", cli->store);
		else if (errno == EACCES)
			fprintf(stderr, "flamefs: %s: %s; " MAY_READ "\n", cli->store,
			        strerror(errno));
		else
			fprintf(stderr, "flamefs: %s: %s\n", cli->store, strerror(errno));
		return -1;
	}
	char *abs = realpath(cli->store, NULL);
	if (!abs) {
		fprintf(stderr, "flamefs: %s: %s\n", cli->store, strerror(errno));
		return -1;
	}
	free(cli->store);
	cli->store = abs;
	return 0;
}

/* Everything checked while errors still reach the terminal: the view's
 * owner and modes, its root (synthetic directory 0), the store opened
 * (and closed again before a fork: RocksDB's threads do not survive
 * fork(); it is opened again after), the name /proc/mounts shows (a
 * database's without its password: *fsname), and the mount point, made
 * absolute in opts->mountpoint (the unmount at the end runs after
 * fuse_daemonize() changed to "/").  0, or -1. */
static int prepare_view(const struct cli *cli, const struct stat *st, struct fuse_args *args,
                        struct fuse_cmdline_opts *opts, char **fsname)
{
	inode_set_access(store_is_database(cli->store) ? NULL : st);
	fs.sdirs = calloc(16, sizeof(*fs.sdirs));
	if (!fs.sdirs)
		return -1;
	fs.sdirs_cap = 16;
	fs.nsdirs = 1;
	fs.sdirs[0].kind = SD_ROOT;
	if (open_store(cli->store) < 0)
		return -1;
	if (!strchr(store_where(fs.store), ',') &&
	    asprintf(fsname, "-ofsname=%s,subtype=flamefs", store_where(fs.store)) >= 0)
		fuse_opt_add_arg(args, *fsname);
	if (!opts->foreground) {
		series_free_locked();
		store_close(fs.store);
		fs.store = NULL;
	}
	if (check_mountpoint(cli->mountpoint, cli->nonempty) < 0)
		return -1;
	opts->mountpoint = realpath(cli->mountpoint, NULL);
	if (!opts->mountpoint) {
		fprintf(stderr, "flamefs: %s: %s\n", cli->mountpoint, strerror(errno));
		return -1;
	}
	return 0;
}

/* Runs the invalidator thread and libfuse's loop until an unmount or a
 * signal; the exit status. */
static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *opts)
{
	pthread_t inval_thread;
	int r;

	fs.se = se;
	if (pthread_create(&inval_thread, NULL, refresh_invalidator, NULL) != 0) {
		fs.se = NULL;
		return 1;
	}
	/* The loops return the number of the signal that ended them (SIGINT,
	 * SIGTERM, SIGHUP): that is a clean unmount, not an error. */
	if (opts->singlethread) {
		r = fuse_session_loop(se);
	} else {
		/* Up to -o max_threads= threads (libfuse's default, 10), one
		 * reading at a time (loop.c). */
		r = loop_run(se, opts->max_threads);
	}
	pthread_mutex_lock(&fs.lock);
	fs.inval_stop = true;
	pthread_cond_signal(&fs.inval_cond);
	pthread_mutex_unlock(&fs.lock);
	pthread_join(inval_thread, NULL);
	fs.se = NULL;
	const char *counts = getenv("FLAMEFS_REQUEST_COUNTS");
	char line[512];
	if (counts && *counts && ops_counts(line, sizeof(line)) == 0)
		fprintf(stderr, "flamefs: requests: %s\n", line);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts = {0};
	struct cli cli = {0};
	struct fuse_session *se = NULL;
	struct stat st;
	char *fsname = NULL;
	int ret;

	/* Big arrays (a tree's nodes, a rendered file) always from mmap: once
	 * one is freed, glibc raises its threshold towards 32 MB, and then a
	 * tree's arrays came from the heap, where calloc zeroes every page
	 * by hand and realloc copies; from mmap the pages are zero for free,
	 * a realloc moves them (mremap) and the huge-page hint applies
	 * (view_hugepages()). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	fuse_set_log_func(fuse_message);
	if ((ret = parse_command_line(&args, &cli, &opts)) >= 0)
		goto out;
	ret = 1;
	if (check_store_dir(&cli, &st) < 0)
		goto out;
	if (prepare_view(&cli, &st, &args, &opts, &fsname) < 0 ||
	    fuse_opt_add_arg(&args, "-oro") < 0)
		goto out_close;
	se = fuse_session_new(&args, &ops_lowlevel, sizeof(ops_lowlevel), NULL);
	if (!se)
		goto out_close;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_destroy;
	if (fuse_daemonize(opts.foreground) != 0 || (!fs.store && open_store(cli.store) < 0) ||
	    fuse_set_signal_handlers(se) != 0)
		goto out_unmount;
	ret = serve(se, &opts);
	fuse_remove_signal_handlers(se);
out_unmount:
	fuse_session_unmount(se);
out_destroy:
	fuse_session_destroy(se);
out_close:
	teardown();
out:
	free(fsname);
	free(opts.mountpoint);
	free(cli.mountpoint);
	free(cli.bad);
	free(cli.store);
	free(cli.max_render);
	fuse_opt_free_args(&args);
	return ret;
}
