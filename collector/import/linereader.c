/*
 * linereader.c — a streaming line reader for the text importers.
 *
 * Reads an fd in large chunks into one buffer and hands out lines in place,
 * so parsing costs one memchr per line and no copies.  The buffer grows only
 * for lines longer than it, up to LINEREADER_MAX_LINE, so memory stays
 * bounded whatever the input size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"

#define CHUNK (1u << 20)

int linereader_init(struct linereader *r, int fd, const void *prefix, size_t prefix_len)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cap = prefix_len > CHUNK ? prefix_len * 2 : CHUNK * 2;
	r->buf = malloc(r->cap);
	if (!r->buf)
		return -ENOMEM;
	if (prefix_len)
		memcpy(r->buf, prefix, prefix_len);
	r->end = prefix_len;
	return 0;
}

void linereader_free(struct linereader *r)
{
	if (!r)
		return;
	free(r->buf);
	r->buf = NULL;
}

int linereader_fill(struct linereader *r)
{
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->cap - r->end < CHUNK) {
		if (r->end >= LINEREADER_MAX_LINE)
			return -E2BIG;
		size_t ncap = r->cap * 2;
		char *nbuf = realloc(r->buf, ncap);
		if (!nbuf)
			return -ENOMEM;
		r->buf = nbuf;
		r->cap = ncap;
	}
	for (;;) {
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			r->eof = true;
		r->end += (size_t)n;
		return (int)(n > 0);
	}
}

int linereader_next(struct linereader *r, const char **line, size_t *len)
{
	size_t scanned = r->start;

	for (;;) {
		char *nl = memchr(r->buf + scanned, '\n', r->end - scanned);
		if (nl) {
			size_t l = (size_t)(nl - (r->buf + r->start));
			if (l > LINEREADER_MAX_LINE)
				return -E2BIG;
			*line = r->buf + r->start;
			*len = l;
			r->start += l + 1;
			r->consumed += l + 1;
			r->line++;
			r->unterminated = false;
			return 1;
		}
		if (r->eof) {
			if (r->end == r->start)
				return 0;
			/* A last line without a newline. */
			size_t l = r->end - r->start;
			if (l > LINEREADER_MAX_LINE)
				return -E2BIG;
			*line = r->buf + r->start;
			*len = l;
			r->start = r->end;
			r->consumed += l;
			r->line++;
			r->unterminated = true;
			return 1;
		}
		scanned = r->end - r->start; /* relative to the new start */
		int rc = linereader_fill(r);
		if (rc < 0)
			return rc;
		scanned += r->start;
	}
}
