/*
 * pprof-input.c — a pprof input's bytes before protobuf-c unpacks them:
 * reading the whole input, telling pprof from text (import_pprof_sniff),
 * inflating a gzipped one only once the pre-scan (pprof-scan.c) has
 * measured it within the limits of pprof-internal.h, and refusing a
 * string-table entry that holds a NUL.  pprof.c does the rest.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "import.h"
#include "parsers-internal.h"
#include "pprof-internal.h"

/* ---- input ------------------------------------------------------------ */

/* Grows *buf so that it holds at least `need` bytes. */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 64 * 1024;
	while (ncap < need)
		ncap *= 2;
	uint8_t *n = realloc(*buf, ncap);
	if (!n)
		return -ENOMEM;
	*buf = n;
	*cap = ncap;
	return 0;
}

/* Reads the prefix and then ctx->fd to its end into a malloc'd buffer that
 * the caller frees. */
int pprof_read_all(struct import_ctx *ctx, uint8_t **out, size_t *out_len)
{
	size_t plen = ctx->prefix ? ctx->prefix_len : 0;
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;
	int rc;

	if (plen > PPROF_MAX_BYTES) {
		rc = -E2BIG;
		goto fail;
	}
	rc = grow(&buf, &cap, plen + 1);
	if (rc < 0)
		goto fail;
	if (plen)
		memcpy(buf, ctx->prefix, plen);
	len = plen;

	for (;;) {
		if (len > PPROF_MAX_BYTES) {
			rc = import_fail(
			        ctx, 0,
			        "input is larger than %llu MiB; expected a smaller pprof profile",
			        (unsigned long long)(PPROF_MAX_BYTES >> 20));
			goto fail;
		}
		rc = grow(&buf, &cap, len + 64 * 1024);
		if (rc < 0)
			goto fail;
		ssize_t n = read(ctx->fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			import_fail(ctx, 0, "read error: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	return 0;

fail:
	free(buf);
	return rc;
}

bool pprof_is_gzip(const uint8_t *p, size_t len)
{
	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* A protobuf field key that can open a profile.proto Profile: messages
 * and strings (fields 1-6, 11) are length-delimited, numbers (7-10, 12,
 * 14) varints, comments (13) either, packed or not. */
static bool pprof_first_key(uint8_t k)
{
	unsigned field = k >> 3, wire = k & 7;

	if ((field >= 1 && field <= 6) || field == 11)
		return wire == 2;
	if ((field >= 7 && field <= 10) || field == 12 || field == 14)
		return wire == 0;
	return field == 13 && (wire == 0 || wire == 2);
}

bool import_pprof_sniff(const uint8_t *buf, size_t len)
{
	if (pprof_is_gzip(buf, len))
		return true;
	/* Text formats hold no control bytes other than tab, CR and LF, and
	 * a protobuf's first bytes are a field key (0x0a, 0x12, ...) and a
	 * length, so a control byte in the first non-empty line means
	 * pprof when the first byte is a Profile's field key.  One further
	 * down (a NUL in a frame name) is left to the text importer, which
	 * reports it with its line. */
	return !import_text_start(buf, len) && pprof_first_key(buf[0]);
}

/* Checks what the pre-scan found so far against the limits. */
int pprof_check_scan(struct import_ctx *ctx, const struct pprof_scan *sc, bool gz)
{
	if (sc->why)
		return import_fail(ctx, 0,
		                   "expected a pprof profile (protobuf%s), got malformed or "
		                   "truncated data: at byte %llu of the protobuf, expected %s",
		                   gz ? " inside gzip" : ", optionally gzipped",
		                   (unsigned long long)sc->at, sc->why);
	if (sc->pos > PPROF_MAX_BYTES)
		return import_fail(ctx, 0,
		                   "decompresses past %llu bytes (limit %llu MiB of protobuf); "
		                   "expected a smaller pprof profile",
		                   (unsigned long long)PPROF_MAX_BYTES,
		                   (unsigned long long)(PPROF_MAX_BYTES >> 20));
	if (sc->memory > PPROF_MAX_MEMORY)
		return import_fail(
		        ctx, 0,
		        "unpacking would take over %llu MiB (limit %llu MiB) by byte %llu of the "
		        "protobuf: %llu samples, %llu locations, %llu lines, %llu functions, "
		        "%llu mappings, %llu strings, %llu fields so far; expected a smaller "
		        "pprof profile",
		        (unsigned long long)(sc->memory >> 20),
		        (unsigned long long)(PPROF_MAX_MEMORY >> 20), (unsigned long long)sc->pos,
		        (unsigned long long)sc->samples, (unsigned long long)sc->locations,
		        (unsigned long long)sc->lines, (unsigned long long)sc->functions,
		        (unsigned long long)sc->mappings, (unsigned long long)sc->strings,
		        (unsigned long long)sc->fields);
	return 0;
}

/* Inflates one or more concatenated gzip members.  With out NULL, it
 * measures: the output goes through a small window into the pre-scan sc,
 * and the limits are checked after every piece, so an input past them is
 * refused before anything is kept; *total is then the protobuf's size.
 * With out, it writes the (already measured) *total bytes there. */
static int inflate_all(struct import_ctx *ctx, const uint8_t *in, size_t in_len,
                       struct pprof_scan *sc, uint8_t *out, size_t *total)
{
	enum { WINDOW = 256 << 10 };
	z_stream z;
	uint8_t *window = NULL;
	size_t len = 0, in_pos = 0;
	int rc, zrc;

	memset(&z, 0, sizeof(z));
	if (!out && !(window = malloc(WINDOW)))
		return -ENOMEM;
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (z.avail_in == 0 && in_pos < in_len) {
			size_t chunk = in_len - in_pos;
			if (chunk > (1u << 30))
				chunk = 1u << 30;
			z.next_in = (Bytef *)(uintptr_t)(in + in_pos);
			z.avail_in = (uInt)chunk;
			in_pos += chunk;
		}
		/* out has one spare byte, so it never runs out of room
		 * before the stream's end: a byte more than measured is an
		 * error below. */
		size_t room = out ? *total + 1 - len : WINDOW;
		if (room > (1u << 30))
			room = 1u << 30;
		uint8_t *to = out ? out + len : window;
		z.next_out = to;
		z.avail_out = (uInt)room;
		zrc = inflate(&z, Z_NO_FLUSH);
		size_t got = room - z.avail_out;
		len += got;
		if (!out) {
			(void)pprof_scan_feed(sc, to, got);
			rc = pprof_check_scan(ctx, sc, true);
			if (rc < 0)
				goto end;
		} else if (len > *total) {
			rc = -EIO; /* the same input inflated twice differently */
			goto end;
		}
		if (zrc == Z_STREAM_END) {
			/* Another gzip member may follow. */
			size_t left = z.avail_in + (in_len - in_pos);
			const uint8_t *next = in + (in_len - left);
			if (left == 0)
				break;
			if (!pprof_is_gzip(next, left)) {
				rc = import_fail(ctx, 0,
				                 "expected end of file or another gzip member "
				                 "after %zu compressed bytes, got other data",
				                 in_len - left);
				goto end;
			}
			if (inflateReset(&z) != Z_OK) {
				rc = -ENOMEM;
				goto end;
			}
			continue;
		}
		if (zrc == Z_MEM_ERROR) {
			rc = -ENOMEM;
			goto end;
		}
		if (zrc == Z_DATA_ERROR || zrc == Z_NEED_DICT) {
			rc = import_fail(ctx, 0, "expected gzip data, got a corrupt stream (%s)",
			                 z.msg ? z.msg : "bad data");
			goto end;
		}
		if (zrc == Z_BUF_ERROR && z.avail_in == 0 && in_pos == in_len) {
			rc = import_fail(ctx, 0,
			                 "gzip data is truncated: expected more after %zu bytes",
			                 in_len);
			goto end;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			rc = import_fail(ctx, 0,
			                 "expected gzip data, got a corrupt stream (zlib error %d)",
			                 zrc);
			goto end;
		}
	}
	if (out && len != *total) {
		rc = -EIO; /* the same input inflated twice differently */
		goto end;
	}
	*total = len;
	rc = 0;
end:
	inflateEnd(&z);
out:
	free(window);
	return rc;
}

/* Decompresses a gzipped profile into a malloc'd buffer that the caller
 * frees, once it has measured it within the limits (sc). */
int pprof_gunzip(struct import_ctx *ctx, const uint8_t *in, size_t in_len, struct pprof_scan *sc,
                 uint8_t **out, size_t *out_len)
{
	size_t total = 0;
	int rc = inflate_all(ctx, in, in_len, sc, NULL, &total);

	if (rc < 0)
		return rc;
	if (pprof_scan_end(sc) < 0)
		return pprof_check_scan(ctx, sc, true);
	uint8_t *buf = malloc(total + 1);
	if (!buf)
		return -ENOMEM;
	rc = inflate_all(ctx, in, in_len, NULL, buf, &total);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*out_len = total;
	return 0;
}

/* ---- strings --------------------------------------------------------- */

/* Reads a varint at *pos; false when it runs past len or 10 bytes. */
static bool read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 70 && *pos < len; shift += 7) {
		uint8_t b = p[(*pos)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* protobuf-c hands strings over NUL-terminated, so a NUL inside one would
 * silently cut a name short.  Walks the profile's top-level fields (the
 * data has already been unpacked, so it is well-formed) and refuses a
 * string-table entry (field 6) that holds a NUL. */
int pprof_check_string_nuls(struct import_ctx *ctx, const uint8_t *p, size_t len)
{
	size_t pos = 0, index = 0;

	while (pos < len) {
		uint64_t key, n;
		if (!read_varint(p, len, &pos, &key))
			return 0;
		switch (key & 7) {
		case 0:
			if (!read_varint(p, len, &pos, &n))
				return 0;
			break;
		case 1: pos += 8; break;
		case 5: pos += 4; break;
		case 2:
			if (!read_varint(p, len, &pos, &n) || n > len - pos)
				return 0;
			if (key >> 3 == 6 && memchr(p + pos, '\0', (size_t)n))
				return import_fail(
				        ctx, 0,
				        "string %zu (at byte %zu of the protobuf) holds a "
				        "NUL byte; expected names without NUL bytes",
				        index, pos);
			index += key >> 3 == 6;
			pos += (size_t)n;
			break;
		default: return 0; /* groups: protobuf-c has checked them */
		}
	}
	return 0;
}
