/*
 * perfdata-header.c — the perf.data importer's header half: the attrs
 * section (one perf_event_attr and its sample ids per event, and the
 * sample-id lookup the records use), the events' default names, and the
 * feature sections that follow the data (BUILD_ID, EVENT_DESC, CMDLINE,
 * CLOCK_DATA).  perfdata.c reads the records with what this finds.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#include "perfdata-internal.h"

/* ---- names -------------------------------------------------------------- */

static const char *const hw_names[] = {"cycles",
                                       "instructions",
                                       "cache-references",
                                       "cache-misses",
                                       "branch-instructions",
                                       "branch-misses",
                                       "bus-cycles",
                                       "stalled-cycles-frontend",
                                       "stalled-cycles-backend",
                                       "ref-cycles"};
static const char *const sw_names[] = {
        "cpu-clock",        "task-clock",   "page-faults",  "context-switches",
        "cpu-migrations",   "minor-faults", "major-faults", "alignment-faults",
        "emulation-faults", "dummy",        "bpf-output",   "cgroup-switches"};

int perfdata_attr_default_name(struct attr *a)
{
	char tmp[64];

	if (a->type == 0 && a->config < sizeof(hw_names) / sizeof(hw_names[0]))
		snprintf(tmp, sizeof(tmp), "%s", hw_names[a->config]);
	else if (a->type == 1 && a->config < sizeof(sw_names) / sizeof(sw_names[0]))
		snprintf(tmp, sizeof(tmp), "%s", sw_names[a->config]);
	else
		snprintf(tmp, sizeof(tmp), "raw-%u-0x%llx", a->type, (unsigned long long)a->config);
	a->name = strdup(tmp);
	return a->name ? 0 : -ENOMEM;
}

/* ---- sample ids ----------------------------------------------------------- */

int perfdata_ids_build(struct pd *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nattrs; i++)
		n += p->attrs[i].nids;
	size_t cap = 16;
	while (cap < 2 * n + 2)
		cap *= 2;
	free(p->id_keys);
	free(p->id_vals);
	p->id_keys = calloc(cap, sizeof(*p->id_keys));
	p->id_vals = calloc(cap, sizeof(*p->id_vals));
	if (!p->id_keys || !p->id_vals)
		return -ENOMEM;
	p->id_mask = cap - 1;
	for (size_t i = 0; i < p->nattrs; i++) {
		for (size_t j = 0; j < p->attrs[i].nids; j++) {
			uint64_t id = p->attrs[i].ids[j] + 1; /* 0 marks empty */
			size_t s = perfdata_mix(id) & p->id_mask;
			while (p->id_keys[s] && p->id_keys[s] != id)
				s = (s + 1) & p->id_mask;
			p->id_keys[s] = id;
			p->id_vals[s] = (uint32_t)i;
		}
	}
	return 0;
}

int perfdata_attr_of_id(const struct pd *p, uint64_t id)
{
	if (!p->id_keys)
		return -1;
	id += 1;
	for (size_t s = perfdata_mix(id) & p->id_mask; p->id_keys[s]; s = (s + 1) & p->id_mask)
		if (p->id_keys[s] == id)
			return (int)p->id_vals[s];
	return -1;
}

/* ---- header, attrs, features ------------------------------------------------ */

/* Reads one perf_event_attr of attr_size bytes at off into attrs[nattrs]. */
int perfdata_read_attr(struct pd *p, size_t off, size_t attr_size)
{
	if (p->nattrs == MAX_ATTRS)
		return import_fail_at(p->ctx, off, "expected at most %d events, got more",
		                      MAX_ATTRS);
	if (attr_size < 64 || off > p->len || attr_size > p->len - off)
		return import_fail_at(p->ctx, off,
		                      "expected a perf_event_attr of %zu bytes inside the file",
		                      attr_size);
	const uint8_t *a = p->buf + off;
	struct attr *t = &p->attrs[p->nattrs];
	memset(t, 0, sizeof(*t));
	t->type = rd32(a);
	t->config = rd64(a + 8);
	t->sample_type = rd64(a + 24);
	t->read_format = rd64(a + 32);
	uint64_t flags = rd64(a + 40);
	t->sample_id_all = flags & (1ull << 18);
	t->branch_sample_type = attr_size >= 80 ? rd64(a + 72) : 0;
	t->regs_user_mask = attr_size >= 88 ? rd64(a + 80) : 0;
	t->kept = -1;
	p->nattrs++;
	return 0;
}

int perfdata_read_ids(struct pd *p, struct attr *t, uint64_t off, uint64_t size)
{
	if (off > p->len || size > p->len - off || size % 8)
		return import_fail_at(p->ctx, off,
		                      "expected the event's sample ids inside the file");
	t->nids = (size_t)(size / 8);
	t->ids = malloc((t->nids ? t->nids : 1) * sizeof(*t->ids));
	if (!t->ids)
		return -ENOMEM;
	for (size_t i = 0; i < t->nids; i++)
		t->ids[i] = rd64(p->buf + off + 8 * i);
	return 0;
}

/* A perf_header_string at *off: u32 len, then len bytes (NUL-padded). */
static int header_string(struct pd *p, size_t *off, size_t end, const char **s, size_t *n)
{
	if (end - *off < 4)
		return -1;
	uint32_t l = rd32(p->buf + *off);
	if (l > end - *off - 4)
		return -1;
	*s = (const char *)p->buf + *off + 4;
	*n = strnlen(*s, l);
	*off += 4 + (size_t)l;
	return 0;
}

void perfdata_bids_free(struct bids *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->b[i].path);
	free(b->b);
	memset(b, 0, sizeof(*b));
}

const struct bid *perfdata_bids_find(const struct bids *b, const char *path)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->b[i].path, path) == 0)
			return &b->b[i];
	return NULL;
}

static int feat_build_ids(struct pd *p, struct bids *out, size_t off, size_t end)
{
	while (end - off >= 8 + 4 + 24) {
		uint16_t misc = rd16(p->buf + off + 4), size = rd16(p->buf + off + 6);
		if (size < 8 + 4 + 24 || size > end - off)
			return import_fail_at(p->ctx, off,
			                      "expected a build id record inside its section");
		const uint8_t *id = p->buf + off + 12;
		uint8_t len = (misc & MISC_BUILDID_SIZE) ? id[20] : 20;
		if (len > 20)
			len = 20;
		const char *name = (const char *)p->buf + off + 36;
		size_t nl = strnlen(name, size - 36);
		struct bid *nb = realloc(out->b, (out->n + 1) * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		out->b = nb;
		struct bid *b = &out->b[out->n];
		b->path = strndup(name, nl);
		if (!b->path)
			return -ENOMEM;
		memcpy(b->id, id, 20);
		b->len = len;
		out->n++;
		off += size;
	}
	return 0;
}

static int feat_event_desc(struct pd *p, size_t off, size_t end)
{
	if (end - off < 8)
		return 0;
	uint32_t nr = rd32(p->buf + off), asz = rd32(p->buf + off + 4);
	off += 8;
	for (uint32_t i = 0; i < nr; i++) {
		if (asz > end - off)
			return 0;
		off += asz;
		if (end - off < 4)
			return 0;
		uint32_t nids = rd32(p->buf + off);
		off += 4;
		const char *s;
		size_t n;
		if (header_string(p, &off, end, &s, &n) < 0)
			return 0;
		if ((uint64_t)nids * 8 > end - off)
			return 0;
		off += (size_t)nids * 8;
		if (i < p->nattrs && n) {
			char *name = strndup(s, n);
			if (!name)
				return -ENOMEM;
			free(p->attrs[i].name);
			p->attrs[i].name = name;
		}
	}
	return 0;
}

int perfdata_read_features(struct pd *p, const uint8_t *bits, size_t after_data, struct bids *bids)
{
	size_t off = after_data;
	for (unsigned f = 0; f < 256; f++) {
		if (!(bits[f / 8] & (1u << (f % 8))))
			continue;
		if (off > p->len || p->len - off < 16)
			return import_fail_at(
			        p->ctx, off,
			        "expected the section table of feature %u, got the end of "
			        "the file (is it truncated?)",
			        f);
		uint64_t so = rd64(p->buf + off), ss = rd64(p->buf + off + 8);
		off += 16;
		if (so > p->len || ss > p->len - so)
			return import_fail_at(
			        p->ctx, off - 16,
			        "feature %u's section (%llu bytes at %llu) runs past the "
			        "end of the file",
			        f, (unsigned long long)ss, (unsigned long long)so);
		int rc = 0;
		size_t end = (size_t)(so + ss);
		switch (f) {
		case F_BUILD_ID: rc = feat_build_ids(p, bids, (size_t)so, end); break;
		case F_EVENT_DESC: rc = feat_event_desc(p, (size_t)so, end); break;
		case F_CLOCK_DATA:
			if (ss >= 24 && rd32(p->buf + so) >= 1) {
				p->have_clock = true;
				p->clock_wall_ns = (int64_t)rd64(p->buf + so + 8);
				p->clock_perf_ns = (int64_t)rd64(p->buf + so + 16);
			}
			break;
		default: break;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}
