/*
 * sqlnorm-tool.c — collector/record/sqlnorm.c from the command line, for
 * tests/test-sqlnorm.sh: reads one query string (a file, or stdin with -)
 * and writes each of its statements normalised, every one followed by a
 * NUL byte, in the order they appear.
 *   usage: sqlnorm-tool FILE|-
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlnorm.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sqlnorm-tool FILE|-\n");
		return 2;
	}
	FILE *f = strcmp(argv[1], "-") ? fopen(argv[1], "rbe") : stdin;
	if (!f) {
		fprintf(stderr, "sqlnorm-tool: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size_t cap = 1 << 16, len = 0;
	char *sql = malloc(cap);
	for (size_t r; sql && (r = fread(sql + len, 1, cap - len, f)) > 0;) {
		len += r;
		if (len == cap) {
			char *bigger = realloc(sql, cap * 2);
			if (!bigger) {
				free(sql);
				sql = NULL;
				break;
			}
			sql = bigger;
			cap *= 2;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!sql) {
		fprintf(stderr, "sqlnorm-tool: out of memory\n");
		return 1;
	}
	size_t outsize = len * 2 + 64;
	char *out = malloc(outsize);
	if (!out) {
		free(sql);
		fprintf(stderr, "sqlnorm-tool: out of memory\n");
		return 1;
	}
	size_t pos = 0, start, end;
	while (sqlnorm_next(sql, len, &pos, &start, &end)) {
		size_t w = sqlnorm_statement(sql + start, end - start, out, outsize);
		fwrite(out, 1, w + 1, stdout);
	}
	free(out);
	free(sql);
	return fflush(stdout) ? 1 : 0;
}
