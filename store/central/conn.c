/*
 * conn.c — the connection: the connection string as it may be shown
 * (password hidden), connecting and reconnecting with backoff, running
 * statements and COPY through libpq, and turning libpq's errors into one
 * line that names where and what.
 */
#include "central-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- hiding the password ------------------------------------------------ */

/* The passwords a connection string holds, as written in it, for
 * masking them in libpq's messages too. */
struct secrets {
	char *v[8];
	int n;
	bool failed; /* out of memory, or more than 8 */
};

static void secrets_free(struct secrets *sx)
{
	for (int i = 0; i < sx->n; i++)
		free(sx->v[i]);
	sx->n = 0;
}

/* Replaces out[from, to) with "***" (and keeps what it held in sx). */
static char *splice(char *out, size_t from, size_t to, struct secrets *sx)
{
	size_t len = strlen(out), n = len - (to - from) + 3 + 1;
	char *r = malloc(n);

	if (sx && sx->n < 8) {
		sx->v[sx->n] = strndup(out + from, to - from);
		sx->failed = sx->failed || !sx->v[sx->n];
		sx->n += sx->v[sx->n] != NULL;
	} else if (sx) {
		sx->failed = true;
	}
	if (!r) {
		free(out);
		return NULL;
	}
	memcpy(r, out, from);
	memcpy(r + from, "***", 3);
	memcpy(r + from + 3, out + to, len - to + 1);
	free(out);
	return r;
}

/* The value of every "password=" parameter: in a URI's query (up to '&'),
 * or in keyword/value form (up to white space, or a quoted value). */
static char *redact_params(char *out, bool uri, bool *found, struct secrets *sx)
{
	size_t at = 0;

	for (;;) {
		/* "password" and "sslpassword" (a client key's) alike */
		char *p = strstr(out + at, "password");
		size_t from, to;

		if (!p)
			return out;
		from = (size_t)(p - out);
		at = from + 8;
		if (from >= 3 && !strncmp(p - 3, "ssl", 3))
			from -= 3;
		if (from > 0 && !strchr(uri ? "?&" : " \t\n", out[from - 1]))
			continue;
		while (!uri && (out[at] == ' ' || out[at] == '\t'))
			at++;
		if (out[at] != '=')
			continue;
		at++;
		while (!uri && (out[at] == ' ' || out[at] == '\t'))
			at++;
		from = at;
		if (!uri && out[at] == '\'') {
			for (at++; out[at] && out[at] != '\''; at++)
				if (out[at] == '\\' && out[at + 1])
					at++;
			if (out[at])
				at++;
		} else {
			while (out[at] && !strchr(uri ? "&" : " \t\n", out[at]))
				at++;
		}
		to = at;
		if (to == from)
			continue;
		out = splice(out, from, to, sx);
		if (!out)
			return NULL;
		*found = true;
		at = from + 3;
	}
}

/* The string with the passwords our own reading finds replaced by "***";
 * sx (when not NULL) gets them. */
static char *redact_ours(const char *conninfo, bool *found, struct secrets *sx)
{
	char *out = strdup(conninfo);
	const char *scheme = strstr(conninfo, "://");
	bool uri = (strncmp(conninfo, "postgresql://", 13) == 0 ||
	            strncmp(conninfo, "postgres://", 11) == 0);

	*found = false;
	if (!out)
		return NULL;
	if (uri && scheme) {
		size_t auth = (size_t)(scheme - conninfo) + 3;
		size_t end = auth + strcspn(out + auth, "/?");
		size_t at = end;

		/* user:password@host: the last '@' of the authority */
		while (at > auth && out[at - 1] != '@')
			at--;
		if (at > auth) {
			char *colon = memchr(out + auth, ':', at - 1 - auth);

			if (colon && (size_t)(colon - out) + 1 < at - 1) {
				out = splice(out, (size_t)(colon - out) + 1, at - 1, sx);
				if (!out)
					return NULL;
				*found = true;
			}
		}
	}
	return redact_params(out, uri, found, sx);
}

char *central_redact(const char *conninfo)
{
	bool uri = (strncmp(conninfo, "postgresql://", 13) == 0 ||
	            strncmp(conninfo, "postgres://", 11) == 0);
	bool found = false;
	PQconninfoOption *opts;
	char *perr = NULL;
	char *out = redact_ours(conninfo, &found, NULL);

	if (!out)
		return NULL;
	/* What libpq reads as the password must not be left: if it found one
	 * that the rules above did not, show nothing of the string. */
	opts = PQconninfoParse(conninfo, &perr);
	PQfreemem(perr);
	if (!opts) {
		/* libpq cannot read it, so neither can we tell where a
		 * password would be: show none of it. */
		free(out);
		return strdup(uri ? "postgresql://***" : "postgresql:***");
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if ((!strcmp(o->keyword, "password") || !strcmp(o->keyword, "sslpassword")) &&
		    o->val && *o->val && (!found || strstr(out, o->val))) {
			free(out);
			out = strdup(uri ? "postgresql://***" : "postgresql:***");
			break;
		}
	PQconninfoFree(opts);
	return out;
}

/* libpq's message about a connection string it cannot read, with every
 * password our own reading of the string finds replaced by "***"; NULL
 * when it may show one we cannot find (or when out of memory). */
static char *masked_complaint(const char *conninfo, const char *perr)
{
	struct secrets sx;
	bool found;
	char *red, *out = NULL;

	memset(&sx, 0, sizeof(sx));
	red = redact_ours(conninfo, &found, &sx);
	free(red);
	if (!red || sx.failed)
		goto done;
	/* A password we did not find would be in a form we cannot read:
	 * say nothing of a message about such a string. */
	if (!sx.n && (strstr(conninfo, "password") || strchr(conninfo, '@')))
		goto done;
	out = strdup(perr);
	for (int i = 0; out && i < sx.n; i++) {
		char *at;

		while (out && sx.v[i][0] && (at = strstr(out, sx.v[i])))
			out = splice(out, (size_t)(at - out), (size_t)(at - out) + strlen(sx.v[i]),
			             NULL);
	}
done:
	secrets_free(&sx);
	return out;
}

/* ---- errors ----------------------------------------------------------------- */

void central_seterr(struct pg *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
}

/* libpq's messages end in a newline and may span lines (a DETAIL, a
 * HINT, "Is the server running..."): one line, tabs and newlines folded
 * to single spaces. */
const char *central_pqerr(PGconn *c, const PGresult *res, char *buf, size_t len)
{
	const char *m = res ? PQresultErrorMessage(res) : NULL;
	size_t o = 0;
	bool space = false;

	if (!m || !*m)
		m = c ? PQerrorMessage(c) : "";
	if (!*m)
		m = "unknown error";
	for (const char *p = m; *p && o + 1 < len; p++) {
		if (*p == '\n' || *p == '\t' || *p == '\r') {
			space = o > 0;
			continue;
		}
		if (space && o + 2 < len)
			buf[o++] = ' ';
		space = false;
		buf[o++] = *p;
	}
	buf[o] = '\0';
	return buf;
}

/* ---- connecting ------------------------------------------------------------- */

/* Notices ("relation already exists, skipping") are not errors, and the
 * store never prints. */
static void no_notices(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

int central_connect(struct pg *s)
{
	/* Defaults the connection string overrides (it comes last): give up
	 * on a server that does not answer in 10 s, and notice a dead peer
	 * within about a minute rather than TCP's two hours. */
	static const char *const keys[] = {"connect_timeout",
	                                   "keepalives",
	                                   "keepalives_idle",
	                                   "keepalives_interval",
	                                   "keepalives_count",
	                                   "dbname",
	                                   NULL};
	const char *vals[] = {"10", "1", "30", "10", "3", s->conninfo, NULL};
	char msg[CENTRAL_ERRLEN / 2];
	char *perr = NULL;
	PQconninfoOption *opts;

	if (s->conn)
		PQfinish(s->conn);
	s->conn = NULL;
	/* libpq echoes the parts of a string it cannot read, a password
	 * among them: say only that it cannot. */
	opts = PQconninfoParse(s->conninfo, &perr);
	if (!opts) {
		char *m = perr ? masked_complaint(s->conninfo, perr) : NULL,
		     one[CENTRAL_ERRLEN / 2];

		if (m) {
			/* one line, as every message */
			size_t o = 0;

			for (const char *q = m; *q && o + 1 < sizeof(one); q++)
				one[o++] = *q == '\n' || *q == '\t' ? ' ' : *q;
			while (o && one[o - 1] == ' ')
				o--;
			one[o] = '\0';
			central_seterr(s, "%s: not a connection string libpq can read: %s",
			               s->base.where, one);
		} else {
			central_seterr(s,
			               "%s: not a connection string libpq can read (see the libpq "
			               "documentation, \"Connection Strings\")",
			               s->base.where);
		}
		free(m);
		PQfreemem(perr);
		return -EINVAL;
	}
	PQfreemem(perr);
	PQconninfoFree(opts);
	s->conn = PQconnectdbParams(keys, vals, 1);
	if (!s->conn) {
		central_seterr(s, "%s: out of memory", s->base.where);
		return -ENOMEM;
	}
	if (PQstatus(s->conn) != CONNECTION_OK) {
		central_seterr(s, "%s: cannot connect: %s", s->base.where,
		               central_pqerr(s->conn, NULL, msg, sizeof(msg)));
		PQfinish(s->conn);
		s->conn = NULL;
		return -ECONNREFUSED;
	}
	PQsetNoticeProcessor(s->conn, no_notices, NULL);
	return 0;
}

double central_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double central_retry_seconds(void)
{
	const char *e = getenv("FLAMEFS_PG_RETRY_SECONDS");
	char *end;
	double v;

	if (!e || !*e)
		return CENTRAL_RETRY_SECONDS;
	v = strtod(e, &end);
	if (*end || v < 0)
		return CENTRAL_RETRY_SECONDS;
	return v;
}

bool central_restarting(const char *msg)
{
	/* The server's own words for SQLSTATE 57P03, cannot_connect_now,
	 * and for 57P01 and 57P02, a backend ended by a fast shutdown or by
	 * another's crash while it was still starting the session (CI met
	 * 57P01 in a restart's window); and libpq's when a server took the
	 * connection and dropped it before it could say anything. */
	return strstr(msg, "server closed the connection unexpectedly") ||
	       strstr(msg, "terminating connection due to administrator command") ||
	       strstr(msg, "terminating connection because of crash of another server process") ||
	       strstr(msg, "the database system is shutting down") ||
	       strstr(msg, "the database system is starting up") ||
	       strstr(msg, "the database system is not yet accepting connections") ||
	       strstr(msg, "the database system is in recovery mode");
}

/* What went wrong, without the "<where>: " every message starts with. */
static const char *reason(const struct pg *s, const char *msg)
{
	size_t wl = strlen(s->base.where);

	if (!strncmp(msg, s->base.where, wl) && !strncmp(msg + wl, ": ", 2))
		msg += wl + 2;
	return *msg ? msg : "connection lost";
}

int central_reconnect(struct pg *s, double start, double *delay)
{
	double limit = central_retry_seconds();
	char msg[CENTRAL_ERRLEN / 2] = "";

	for (;;) {
		double left = start + limit - central_now();
		struct timespec ts;

		if (left <= 0)
			break;
		if (*delay > left)
			*delay = left;
		store_log("%s: %s; trying again in %.1f s", s->base.where,
		          reason(s, msg[0] ? msg : s->errmsg), *delay);
		ts.tv_sec = (time_t)*delay;
		ts.tv_nsec = (long)((*delay - (double)ts.tv_sec) * 1e9);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		*delay *= 2;
		if (s->conn) {
			PQreset(s->conn);
			if (PQstatus(s->conn) == CONNECTION_OK) {
				PQsetNoticeProcessor(s->conn, no_notices, NULL);
				store_log("%s: reconnected after %.1f s", s->base.where,
				          central_now() - start);
				return 0;
			}
			central_pqerr(s->conn, NULL, msg, sizeof(msg));
		} else if (central_connect(s) == 0) {
			store_log("%s: reconnected after %.1f s", s->base.where,
			          central_now() - start);
			return 0;
		} else {
			const char *why = strstr(s->errmsg, "cannot connect: ");
			size_t k;

			why = why ? why + 16 : s->errmsg;
			k = strnlen(why, sizeof(msg) - 1);
			memcpy(msg, why, k);
			msg[k] = '\0';
		}
	}
	if (msg[0])
		central_seterr(s, "%s: the server went away and did not come back within %g s: %s",
		               s->base.where, limit, msg);
	else if (!s->errmsg[0])
		central_seterr(s, "%s: the server went away and did not come back within %g s",
		               s->base.where, limit);
	return -ECONNRESET;
}

int central_random_hex(char out[33])
{
	uint8_t r[16];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -errno;
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

char *central_hex_of(const char *str)
{
	size_t n = strlen(str);
	char *out = malloc(2 * n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", (unsigned char)str[i]);
	out[2 * n] = '\0';
	return out;
}

char *central_str_of_bytea(const PGresult *res, int row, int col)
{
	size_t n;
	unsigned char *v = PQunescapeBytea((const unsigned char *)PQgetvalue(res, row, col), &n);
	char *out = NULL;

	if (v && !memchr(v, 0, n)) {
		out = malloc(n + 1);
		if (out) {
			memcpy(out, v, n);
			out[n] = '\0';
		}
	}
	PQfreemem(v);
	return out;
}

/* ---- values the server sends ---------------------------------------------------- */

/* The server is not trusted to send what the schema promises (a damaged
 * or hostile database, a column altered by hand): every number is parsed
 * whole and checked against its range, every binary value's length
 * against the size the reader needs, before anything uses it. */
static int unexpected(struct pg *s, const char *what, int row, int col)
{
	central_seterr(s,
	               "%s: unexpected reply from the server: %s (row %d, column %d) is not what "
	               "a flamefs store holds",
	               s->base.where, what, row, col);
	return -EIO;
}

/* The text value at (row, col), or NULL when absent, SQL NULL or binary. */
static const char *text_value(const PGresult *res, int row, int col)
{
	if (row < 0 || col < 0 || row >= PQntuples(res) || col >= PQnfields(res) ||
	    PQgetisnull(res, row, col) || PQfformat(res, col) != 0)
		return NULL;
	return PQgetvalue(res, row, col);
}

/* Decimal digits only, at least one, the value at most max. */
static bool digits(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (!v || !*v)
		return false;
	for (; *v; v++) {
		unsigned d = (unsigned)(*v - '0');

		if (d > 9 || x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

int central_value_u64(struct pg *s, const PGresult *res, int row, int col, uint64_t max,
                      const char *what, uint64_t *out)
{
	*out = 0;
	return digits(text_value(res, row, col), max, out) ? 0 : unexpected(s, what, row, col);
}

int central_value_i64(struct pg *s, const PGresult *res, int row, int col, const char *what,
                      int64_t *out)
{
	const char *v = text_value(res, row, col);
	uint64_t x;

	*out = 0;
	if (v && *v == '-') {
		if (!digits(v + 1, (uint64_t)INT64_MAX + 1, &x))
			return unexpected(s, what, row, col);
		*out = x ? -(int64_t)(x - 1) - 1 : 0;
		return 0;
	}
	if (!digits(v, INT64_MAX, &x))
		return unexpected(s, what, row, col);
	*out = (int64_t)x;
	return 0;
}

const char *central_value_bin(struct pg *s, const PGresult *res, int row, int col, int len,
                              const char *what)
{
	if (row < 0 || col < 0 || row >= PQntuples(res) || col >= PQnfields(res) ||
	    PQgetisnull(res, row, col) || PQfformat(res, col) != 1 ||
	    PQgetlength(res, row, col) != len) {
		unexpected(s, what, row, col);
		return NULL;
	}
	return PQgetvalue(res, row, col);
}

/* ---- statements --------------------------------------------------------------- */

/* The server ended the session: the connection is closed, or the error
 * is one a backend sends as it ends (SQLSTATE 57P01 admin_shutdown, a
 * fast shutdown or pg_terminate_backend; 57P02 crash_shutdown; 57P03
 * cannot_connect_now), which libpq reports before it has read the close
 * (CI met 57P01 in the middle of a COPY, the status still OK). */
static bool session_ended(PGconn *conn, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return PQstatus(conn) == CONNECTION_BAD ||
	       (state &&
	        (!strcmp(state, "57P01") || !strcmp(state, "57P02") || !strcmp(state, "57P03")));
}

static int failed(struct pg *s, const char *what, PGresult *res)
{
	char msg[CENTRAL_ERRLEN / 2];
	bool gone = session_ended(s->conn, res);

	central_seterr(s, "%s: %s: %s", s->base.where, what,
	               central_pqerr(s->conn, res, msg, sizeof(msg)));
	PQclear(res);
	return gone ? -ECONNRESET : -EIO;
}

int central_exec(struct pg *s, const char *what, const char *sql, int n, const char *const *vals,
                 bool binary, PGresult **out)
{
	PGresult *res;
	ExecStatusType st;

	if (out)
		*out = NULL;
	central_prefetch_end(s);
	if (!s->conn) {
		central_seterr(s, "%s: %s: not connected", s->base.where, what);
		return -ECONNRESET;
	}
	/* Without parameters, the simple protocol: it runs several
	 * statements in one string (the schema's). */
	if (n == 0 && !binary)
		res = PQexec(s->conn, sql);
	else
		res = PQexecParams(s->conn, sql, n, NULL, vals, NULL, NULL, binary ? 1 : 0);
	st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		return failed(s, what, res);
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}

int central_commit_counter(struct pg *s, bool count, uint64_t *value)
{
	PGresult *res;
	int r = count ? central_exec(s, "counting the commit",
	                             "UPDATE flamefs_meta SET value = (value::int8 + 1)::text"
	                             " WHERE key = 'commits' RETURNING value,"
	                             " (SELECT value FROM flamefs_meta WHERE key = 'schema')",
	                             0, NULL, false, &res)
	              : central_exec(s, "reading the commit counter",
	                             "SELECT value FROM flamefs_meta WHERE key = 'commits'", 0,
	                             NULL, false, &res);

	if (r < 0)
		return r;
	if (PQntuples(res) != 1) {
		PQclear(res);
		central_seterr(s, "%s: store is damaged: flamefs_meta has no commit counter",
		               s->base.where);
		return -EIO;
	}
	r = central_value_u64(s, res, 0, 0, INT64_MAX, "the commit counter", value);
	/* A writer writes only the schema it knows: a newer flamefs may have
	 * upgraded the database since this one opened it. */
	if (r == 0 && count) {
		uint64_t schema;

		r = central_value_u64(s, res, 0, 1, INT32_MAX, "the schema version", &schema);
		if (r == 0 && schema != CENTRAL_SCHEMA_VERSION) {
			central_seterr(s,
			               "%s: schema version %llu is not the one this flamefs "
			               "writes (%d): another flamefs changed it meanwhile",
			               s->base.where, (unsigned long long)schema,
			               CENTRAL_SCHEMA_VERSION);
			r = -EPROTONOSUPPORT;
		}
	}
	PQclear(res);
	return r;
}

int central_exec_again(struct pg *s, const char *what, const char *sql, int n,
                       const char *const *vals, bool binary, PGresult **out)
{
	double start = central_now(), delay = 0.1;
	bool alone = s->conn && PQtransactionStatus(s->conn) == PQTRANS_IDLE;
	int r;

	for (;;) {
		r = central_exec(s, what, sql, n, vals, binary, out);
		if (r != -ECONNRESET || !alone)
			return r;
		if (central_reconnect(s, start, &delay) < 0)
			return r;
	}
}

int central_copy_in(struct pg *s, const char *what, const char *sql, const void *data, size_t len)
{
	PGresult *res = PQexec(s->conn, sql);
	const char *p = data;
	int r = 0;

	if (!res || PQresultStatus(res) != PGRES_COPY_IN)
		return failed(s, what, res);
	PQclear(res);
	while (len) {
		int n = len > (1u << 20) ? 1 << 20 : (int)len;

		if (PQputCopyData(s->conn, p, n) != 1)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (PQputCopyEnd(s->conn, len ? "flamefs: sending failed" : NULL) != 1)
		return failed(s, what, NULL);
	while ((res = PQgetResult(s->conn))) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK && r == 0) {
			r = failed(s, what, res);
			continue;
		}
		PQclear(res);
	}
	if (r == 0 && len)
		r = failed(s, what, NULL);
	return r;
}
