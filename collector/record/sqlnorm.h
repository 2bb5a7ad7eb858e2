/*
 * sqlnorm.h — SQL statement text to a span name, the way PostgreSQL 15's
 * pg_stat_statements writes pg_stat_statements.query, so that spans named
 * from a server's query__start probe join that view by text.
 *
 * Pure functions: no allocation, no global state; every read stays inside
 * [sql, sql + len) and stops at the first NUL byte (PostgreSQL never sees
 * text past one), and every write stays inside [out, out + size).
 */
#ifndef FLAMEFS_SQLNORM_H
#define FLAMEFS_SQLNORM_H

#include <stddef.h>

/*
 * Finds the next statement of a query string, as PostgreSQL's parser splits
 * a multi-statement string at its semicolons: scanning starts at *pos; the
 * statement's text, with leading and trailing whitespace trimmed (comments
 * stay), is [*start, *end).  *pos moves past it.  Returns 1 when a
 * statement was found, 0 when none is left (a segment holding only
 * whitespace and comments is not a statement).
 */
int sqlnorm_next(const char *sql, size_t len, size_t *pos, size_t *start, size_t *end);

/*
 * Normalises one statement (as split by sqlnorm_next): in a statement that
 * PostgreSQL plans (SELECT, INSERT, UPDATE, DELETE, MERGE, VALUES, TABLE,
 * WITH ... of those) each constant is replaced by $N, numbered in order
 * after the highest parameter the statement already uses; any other
 * statement (DDL, SET, EXPLAIN, SELECT ... INTO, ...) is kept as it is, as
 * pg_stat_statements keeps utility statements.  Writes at most size - 1
 * bytes and a NUL (nothing when size is 0), cut at a UTF-8 character
 * boundary.  Returns the bytes written, without the NUL.
 */
size_t sqlnorm_statement(const char *sql, size_t len, char *out, size_t size);

/*
 * Normalises a whole query string: its statements, each normalised as by
 * sqlnorm_statement, joined by "; ".  Same output bounds and return as
 * sqlnorm_statement.
 */
size_t sqlnorm_text(const char *sql, size_t len, char *out, size_t size);

#endif
