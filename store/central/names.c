/*
 * names.c — names found later in the database (store_batch_frame_rename(),
 * schema 7): a batch's renames, the rows of `frame_names` its commit
 * writes, loading the names other commits wrote, and the renames a copy
 * from this store carries.
 *
 * A frame keeps the content it was committed with (frame_runs) as its
 * identity for good: its content hash, and with it the hash of every
 * stack node under it, never changes, so a name can neither make two
 * frames or two nodes collide nor make a host's unnamed frame (pushed
 * again, or by another host) a new frame: it is found by the old
 * content and shows the name.  What a frame shows is its row of
 * `frame_names` when it has one (kind, line, name and file; its module
 * and build id stay), kept in memory in s->shown.  One row per frame:
 * the first commit to name a frame names it, a later one leaves it.
 */
#include "central-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A frame as shown: one malloc'd block, the struct then its name and
 * file; module and build id point into the frame's own blob. */
static struct store_frame *shown_new(const struct store_frame *orig, const struct store_frame *f)
{
	struct store_frame *d = malloc(sizeof(*d) + f->name_len + f->file_len + 2);
	char *p;

	if (!d)
		return NULL;
	*d = *orig;
	p = (char *)(d + 1);
	memcpy(p, f->name_len ? f->name : "", f->name_len);
	p[f->name_len] = '\0';
	d->name = p;
	d->name_len = f->name_len;
	p += f->name_len + 1;
	memcpy(p, f->file_len ? f->file : "", f->file_len);
	p[f->file_len] = '\0';
	d->file = p;
	d->file_len = f->file_len;
	d->kind = f->kind;
	d->line = f->line;
	d->offset = 0;
	return d;
}

const struct store_frame *central_frame_shown(const struct pg *s, uint32_t id)
{
	if (id < s->nshown && s->shown[id])
		return s->shown[id];
	return &s->frames[id];
}

/* Makes frame id show f (a frame named already keeps its name). */
static int shown_set(struct pg *s, uint32_t id, const struct store_frame *f)
{
	if (id >= s->nshown) {
		uint32_t n = s->nframes > id ? s->nframes : id + 1;
		struct store_frame **g = realloc(s->shown, (size_t)n * sizeof(*g));

		if (!g)
			return -ENOMEM;
		memset(g + s->nshown, 0, (size_t)(n - s->nshown) * sizeof(*g));
		s->shown = g;
		s->nshown = n;
	}
	if (s->shown[id])
		return 0;
	s->shown[id] = shown_new(&s->frames[id], f);
	return s->shown[id] ? 0 : -ENOMEM;
}

void central_names_free(struct pg *s)
{
	for (uint32_t i = 0; i < s->nshown; i++)
		free(s->shown[i]);
	free(s->shown);
	s->shown = NULL;
	s->nshown = 0;
}

int central_batch_frame_rename(struct store_batch *bbase, uint32_t frame,
                               const struct store_frame *named)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	const struct store_frame *old;
	struct central_rename *fr = NULL;
	struct store_frame *f;
	int rc;

	if (s->schema < 7) {
		central_seterr(s, "%s: names found later need schema 7", s->base.where);
		return -EOPNOTSUPP;
	}
	old = frame && frame < b->frame_base ? central_frame_shown(s, frame) : NULL;
	rc = store_rename_check(frame, old, named, s->errmsg, sizeof(s->errmsg));
	if (rc)
		return rc;
	for (size_t i = 0; i < b->nrenames; i++)
		if (b->renames[i].id == frame)
			fr = &b->renames[i];
	if (!fr && b->nrenames == b->renames_cap) {
		size_t cap = b->renames_cap ? b->renames_cap * 2 : 64;
		struct central_rename *n = realloc(b->renames, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->renames = n;
		b->renames_cap = cap;
	}
	f = shown_new(&s->frames[frame], named);
	if (!f)
		return -ENOMEM;
	if (fr)
		free(fr->f);
	else
		fr = &b->renames[b->nrenames++];
	fr->id = frame;
	fr->f = f;
	return 0;
}

int central_names_applied(struct pg_batch *b, int64_t commit)
{
	struct pg *s = b->s;
	int r = 0;

	for (size_t i = 0; i < b->nrenames && r == 0; i++)
		r = shown_set(s, b->renames[i].id, b->renames[i].f);
	if (b->nrenames && (uint64_t)commit > s->renames_upto)
		s->renames_upto = (uint64_t)commit;
	if (r < 0)
		central_seterr(s, "%s: out of memory", s->base.where);
	return r;
}

void central_batch_renames_reset(struct pg_batch *b)
{
	for (size_t i = 0; i < b->nrenames; i++)
		free(b->renames[i].f);
	b->nrenames = 0;
}

/* ---- text arrays for unnest() ----------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_num(struct sbuf *b, unsigned long long v)
{
	char num[24];

	sb_put(b, num, (size_t)snprintf(num, sizeof(num), "%llu", v));
}

/* An element of a text[] literal: the bytes in hex, quoted. */
static void sb_hex(struct sbuf *b, const char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char two[2];

	sb_put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		two[0] = digits[(uint8_t)p[i] >> 4];
		two[1] = digits[(uint8_t)p[i] & 15];
		sb_put(b, two, 2);
	}
	sb_put(b, "\"", 1);
}

int central_names_write(struct pg_batch *b, int64_t commit)
{
	struct pg *s = b->s;
	struct sbuf a[5] = {{0}};
	char num[24];
	const char *vals[6];
	int r;

	if (!b->nrenames)
		return 0;
	for (int k = 0; k < 5; k++)
		sb_put(&a[k], "{", 1);
	for (size_t i = 0; i < b->nrenames; i++) {
		const struct store_frame *f = b->renames[i].f;

		for (int k = 0; k < 5 && i; k++)
			sb_put(&a[k], ",", 1);
		sb_num(&a[0], b->renames[i].id);
		sb_num(&a[1], f->kind);
		sb_num(&a[2], f->line);
		sb_hex(&a[3], f->name, f->name_len);
		sb_hex(&a[4], f->file, f->file_len);
	}
	for (int k = 0; k < 5; k++)
		sb_put(&a[k], "}", 1);
	r = 0;
	for (int k = 0; k < 5; k++)
		if (a[k].oom)
			r = -ENOMEM;
	if (r == 0) {
		snprintf(num, sizeof(num), "%lld", (long long)commit);
		vals[0] = num;
		for (int k = 0; k < 5; k++)
			vals[k + 1] = a[k].p;
		/* A frame another commit named first keeps that name. */
		r = central_exec(s, "writing the names found later",
		                 "INSERT INTO frame_names (id, commit, kind, line, name, file)"
		                 " SELECT i, $1::int8, k, l, decode(n, 'hex'), decode(f, 'hex')"
		                 " FROM unnest($2::int4[], $3::int2[], $4::int4[], $5::text[],"
		                 " $6::text[]) AS t(i, k, l, n, f)"
		                 " ON CONFLICT (id) DO NOTHING",
		                 6, vals, false, NULL);
	} else {
		central_seterr(s, "%s: out of memory", s->base.where);
	}
	for (int k = 0; k < 5; k++)
		free(a[k].p);
	return r;
}

/* ---- loading ------------------------------------------------------------ */

static int unhex(const char *h, size_t n, char *out)
{
	for (size_t i = 0; i < n / 2; i++) {
		int v = 0;

		for (int k = 0; k < 2; k++) {
			char c = h[2 * i + k];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else
				return -1;
		}
		out[i] = (char)v;
	}
	return n % 2 ? -1 : 0;
}

int central_load_names(struct pg *s)
{
	char since[24];
	const char *vals[1] = {since};
	PGresult *res;
	int r, n;

	if (s->schema < 7)
		return 0;
	snprintf(since, sizeof(since), "%llu", (unsigned long long)s->renames_upto);
	r = central_exec(s, "loading the names found later",
	                 "SELECT id, commit, kind, line, encode(name, 'hex'), encode(file, 'hex')"
	                 " FROM frame_names WHERE commit > $1 ORDER BY commit, id",
	                 1, vals, false, &res);
	if (r < 0)
		return r;
	n = PQntuples(res);
	if (n && PQnfields(res) != 6) {
		central_seterr(s, "%s: unexpected reply from the server: the names found later",
		               s->base.where);
		r = -EIO;
	}
	for (int i = 0; i < n && r == 0; i++) {
		uint64_t id, commit, kind, line;
		struct store_frame f = {0};
		const char *hn = PQgetvalue(res, i, 4), *hf = PQgetvalue(res, i, 5);
		size_t ln = (size_t)PQgetlength(res, i, 4), lf = (size_t)PQgetlength(res, i, 5);
		char *buf;

		r = central_value_u64(s, res, i, 0, UINT32_MAX, "a named frame's id", &id);
		if (r == 0)
			r = central_value_u64(s, res, i, 1, INT64_MAX, "a commit number", &commit);
		if (r == 0)
			r = central_value_u64(s, res, i, 2, STORE_FRAME_SPAN, "a frame kind",
			                      &kind);
		if (r == 0)
			r = central_value_u64(s, res, i, 3, UINT32_MAX, "a line number", &line);
		if (r < 0)
			break;
		if (id == 0 || id >= s->nframes || kind == STORE_FRAME_UNKNOWN ||
		    kind == STORE_FRAME_INLINE) {
			central_seterr(s, "%s: store is damaged: the name of frame %llu",
			               s->base.where, (unsigned long long)id);
			r = -EIO;
			break;
		}
		buf = malloc(ln / 2 + lf / 2 + 1);
		if (!buf) {
			r = -ENOMEM;
			central_seterr(s, "%s: out of memory", s->base.where);
			break;
		}
		if (unhex(hn, ln, buf) < 0 || unhex(hf, lf, buf + ln / 2) < 0) {
			free(buf);
			central_seterr(s, "%s: unexpected reply from the server: a frame's name",
			               s->base.where);
			r = -EIO;
			break;
		}
		f.name = buf;
		f.name_len = ln / 2;
		f.file = buf + ln / 2;
		f.file_len = lf / 2;
		f.kind = (uint8_t)kind;
		f.line = (uint32_t)line;
		r = shown_set(s, (uint32_t)id, &f);
		free(buf);
		if (r < 0) {
			central_seterr(s, "%s: out of memory", s->base.where);
			break;
		}
		if (commit > s->renames_upto)
			s->renames_upto = commit;
	}
	PQclear(res);
	return r;
}

uint64_t central_renames(const struct store *sbase)
{
	return pg_cof(sbase)->renames_upto;
}

int central_renames_since(struct store *sbase, uint64_t since, uint64_t upto,
                          int (*fn)(void *ctx, uint32_t frame, uint64_t old_offset), void *ctx)
{
	struct pg *s = pg_of(sbase);
	char a[24], z[24];
	const char *vals[2] = {a, z};
	PGresult *res;
	int r, n;

	if (s->schema < 7 || since >= upto)
		return 0;
	central_prefetch_end(s);
	snprintf(a, sizeof(a), "%llu", (unsigned long long)since);
	snprintf(z, sizeof(z), "%llu", (unsigned long long)upto);
	r = central_exec(s, "reading the names found later",
	                 "SELECT id FROM frame_names WHERE commit > $1 AND commit <= $2"
	                 " ORDER BY commit, id",
	                 2, vals, false, &res);
	if (r < 0)
		return r;
	n = PQntuples(res);
	for (int i = 0; i < n && r == 0; i++) {
		uint64_t id;

		r = central_value_u64(s, res, i, 0, UINT32_MAX, "a named frame's id", &id);
		if (r == 0 && (id == 0 || id >= s->nframes)) {
			central_seterr(s, "%s: store is damaged: the name of frame %llu",
			               s->base.where, (unsigned long long)id);
			r = -EIO;
		}
		if (r == 0)
			r = fn(ctx, (uint32_t)id, s->frames[id].offset);
	}
	PQclear(res);
	return r;
}
