/*
 * kbtf.c — finds one struct member's offset in the kernel's BTF without
 * parsing all of it.
 *
 * The collector's fork hook reads the child's tgid from its task_struct.
 * A tp_btf program or a CO-RE read would have libbpf load and index the
 * whole of /sys/kernel/btf/vmlinux (megabytes, over 100,000 types) at
 * every start, a cost a short recording feels.  This streams
 * the file once through a small buffer instead: the string section for
 * the two names, then the type section up to the struct.
 */
#include "kbtf-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK        (64 * 1024)
#define NAME_MAX_LEN 64 /* names looked for are shorter than this */

struct reader {
	int fd;
	uint64_t pos, end; /* file offsets: next byte, end of the section */
	uint8_t buf[CHUNK];
	size_t have, at; /* bytes in buf, next byte in buf */
};

static void reader_start(struct reader *r, uint64_t from, uint64_t len)
{
	r->pos = from;
	r->end = from + len;
	r->have = r->at = 0;
}

/* Reads the next chunk of the section when the buffer is used up: 1 with
 * bytes in it, 0 at the section's end, -errno. */
static int reader_fill(struct reader *r)
{
	if (r->at < r->have)
		return 1;
	uint64_t left = r->end - r->pos;
	if (left == 0)
		return 0;
	ssize_t got = pread(r->fd, r->buf, left < CHUNK ? left : CHUNK, (off_t)r->pos);
	if (got < 0)
		return -errno;
	if (got == 0)
		return -EIO; /* shorter than its header says */
	r->pos += (uint64_t)got;
	r->have = (size_t)got;
	r->at = 0;
	return 1;
}

/* Copies the next n bytes of the section to out: 1, 0 at its end, -errno. */
static int reader_get(struct reader *r, void *out, size_t n)
{
	uint8_t *o = out;

	while (n > 0) {
		int rc = reader_fill(r);
		if (rc <= 0)
			return rc;
		size_t take = r->have - r->at < n ? r->have - r->at : n;
		memcpy(o, r->buf + r->at, take);
		r->at += take;
		o += take;
		n -= take;
	}
	return 1;
}

/* Bytes that follow a type's struct btf_type, by kind. */
static int extra_bytes(uint32_t info, size_t *n)
{
	uint32_t vlen = BTF_INFO_VLEN(info);

	switch (BTF_INFO_KIND(info)) {
	case BTF_KIND_INT: *n = 4; return 0;
	case BTF_KIND_ARRAY: *n = sizeof(struct btf_array); return 0;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: *n = (size_t)vlen * sizeof(struct btf_member); return 0;
	case BTF_KIND_ENUM: *n = (size_t)vlen * sizeof(struct btf_enum); return 0;
	case BTF_KIND_FUNC_PROTO: *n = (size_t)vlen * sizeof(struct btf_param); return 0;
	case BTF_KIND_VAR: *n = sizeof(struct btf_var); return 0;
	case BTF_KIND_DATASEC: *n = (size_t)vlen * sizeof(struct btf_var_secinfo); return 0;
	case 17: /* BTF_KIND_DECL_TAG: struct btf_decl_tag */ *n = 4; return 0;
	case 19: /* BTF_KIND_ENUM64: struct btf_enum64 */ *n = (size_t)vlen * 12; return 0;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case 18: /* BTF_KIND_TYPE_TAG */ *n = 0; return 0;
	default: return -1;
	}
}

/* Offsets in the string section of the two names (0 when absent).  The
 * section is NUL-separated names; each is compared in at most two pieces
 * when it straddles a chunk. */
static int find_names(struct reader *r, const char *a, const char *b, uint32_t *oa, uint32_t *ob)
{
	char cur[NAME_MAX_LEN];
	size_t len = 0, la = strlen(a), lb = strlen(b);
	bool too_long = false;
	uint64_t start = 0, off = 0; /* offsets of the name and of buf[at] */
	int rc;

	*oa = *ob = 0;
	while ((rc = reader_fill(r)) > 0) {
		const uint8_t *p = r->buf + r->at;
		size_t n = r->have - r->at;
		const uint8_t *nul = memchr(p, '\0', n);
		size_t piece = nul ? (size_t)(nul - p) : n;

		if (!too_long && len + piece <= sizeof(cur)) {
			memcpy(cur + len, p, piece);
			len += piece;
		} else {
			too_long = true;
		}
		r->at += piece;
		off += piece;
		if (!nul)
			continue;
		if (!too_long && start <= UINT32_MAX) {
			if (!*oa && len == la && !memcmp(cur, a, la))
				*oa = (uint32_t)start;
			else if (!*ob && len == lb && !memcmp(cur, b, lb))
				*ob = (uint32_t)start;
			if (*oa && *ob)
				return 1;
		}
		r->at++; /* the NUL */
		off++;
		start = off;
		len = 0;
		too_long = false;
	}
	return rc;
}

/* Skips n bytes of the section: 1, or 0 / -errno as reader_get(). */
static int reader_skip(struct reader *r, size_t n)
{
	uint8_t skip[256];
	int rc = 1;

	while (n > 0 && rc > 0) {
		size_t k = n < sizeof(skip) ? n : sizeof(skip);
		rc = reader_get(r, skip, k);
		n -= k;
	}
	return rc;
}

/* A struct or union to search for the member, at a byte offset in the
 * struct asked for: the struct itself (by name), then its anonymous
 * members (by type id), which a kernel struct often wraps its fields in
 * (mm_struct's are all in one). */
#define MAX_NESTED 16
struct search {
	uint32_t name;                            /* the struct's name offset */
	uint32_t ids[MAX_NESTED], at[MAX_NESTED]; /* anonymous members: type id, offset */
	size_t n;
};

/* Reads a struct or union's members after its header t (at byte offset
 * base): 1 with *offset set when the member is there, 0 when not (its
 * anonymous members added to s), or -errno. */
static int scan_members(struct reader *r, const struct btf_type *t, uint32_t base, uint32_t m_name,
                        struct search *s, uint32_t *offset)
{
	bool found = false;

	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++) {
		struct btf_member m;
		int rc = reader_get(r, &m, sizeof(m));
		if (rc <= 0)
			return rc < 0 ? rc : -EINVAL;
		uint32_t bits =
		        BTF_INFO_KFLAG(t->info) ? BTF_MEMBER_BIT_OFFSET(m.offset) : m.offset;
		if (found || bits % 8)
			continue;
		if (m.name_off == m_name) {
			*offset = base + bits / 8;
			found = true;
		} else if (m.name_off == 0 && s->n < MAX_NESTED) {
			s->ids[s->n] = m.type;
			s->at[s->n++] = base + bits / 8;
		}
	}
	return found;
}

int kbtf_member_offset(const char *path, const char *strct, const char *member, uint32_t *offset,
                       char *err, size_t errlen)
{
	static struct reader r; /* 64 KiB: not on the stack */
	struct btf_header h;
	struct search srch = {0};
	uint32_t s_name, m_name;
	size_t next = 0; /* the anonymous member searched next */
	bool found_struct = false;
	int rc;

	r.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r.fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	reader_start(&r, 0, sizeof(h));
	rc = reader_get(&r, &h, sizeof(h));
	if (rc > 0 && (h.magic != BTF_MAGIC || h.hdr_len < sizeof(h)))
		rc = -EINVAL;
	if (rc <= 0)
		goto bad;

	reader_start(&r, (uint64_t)h.hdr_len + h.str_off, h.str_len);
	rc = find_names(&r, strct, member, &s_name, &m_name);
	if (rc < 0)
		goto bad;
	if (!s_name || !m_name) {
		snprintf(err, errlen, "%s: no %s or %s in the kernel's BTF", path, strct, member);
		close(r.fd);
		return -ENOENT;
	}
	srch.name = s_name;

	/* A pass over the types finds the struct by name, and the anonymous
	 * members met so far by type id (ids count from 1 in the order of
	 * the section); one whose type came earlier takes another pass. */
	for (int pass = 0; pass <= MAX_NESTED; pass++) {
		size_t end = srch.n;
		if (pass > 0 && next == end)
			break;
		reader_start(&r, (uint64_t)h.hdr_len + h.type_off, h.type_len);
		for (uint32_t id = 1;; id++) {
			struct btf_type t;
			size_t extra;
			rc = reader_get(&r, &t, sizeof(t));
			if (rc == 0)
				break; /* the section's end */
			if (rc < 0 || extra_bytes(t.info, &extra) < 0) {
				rc = rc < 0 ? rc : -EINVAL;
				goto bad;
			}
			uint32_t kind = BTF_INFO_KIND(t.info), base = 0;
			bool want = pass == 0 && kind == BTF_KIND_STRUCT && t.name_off == s_name &&
			            !found_struct;
			found_struct |= want;
			for (size_t i = next; i < srch.n && !want; i++)
				if (srch.ids[i] == id) {
					want = kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION;
					base = srch.at[i];
				}
			if (!want) {
				rc = reader_skip(&r, extra);
				if (rc <= 0) {
					rc = rc < 0 ? rc : -EINVAL;
					goto bad;
				}
				continue;
			}
			rc = scan_members(&r, &t, base, m_name, &srch, offset);
			if (rc < 0)
				goto bad;
			if (rc > 0) {
				close(r.fd);
				return 0;
			}
		}
		if (!found_struct)
			break;
		next = end; /* those added in this pass were searched from their
		             * place on: the earlier ids, in the next */
	}
	if (found_struct)
		snprintf(err, errlen, "%s: struct %s has no member %s", path, strct, member);
	else
		snprintf(err, errlen, "%s: no struct %s in the kernel's BTF", path, strct);
	close(r.fd);
	return -ENOENT;
bad:
	snprintf(err, errlen, "%s: not readable as BTF (%s)", path,
	         rc < 0 ? strerror(-rc) : "cut short");
	close(r.fd);
	return rc < 0 ? rc : -EINVAL;
}
