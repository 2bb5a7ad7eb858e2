/*
 * pprof-scan.c — the pprof importer's pre-scan: one streaming pass over a
 * profile.proto message that counts its elements and string bytes and
 * estimates the memory unpacking it would take, before any of it is kept.
 *
 * protobuf-c allocates per element: a sample of two bytes on the wire
 * ("\x12\x00") becomes a pointer, a struct and a scan record, some fifty
 * times its size, and a field it does not know is kept as a copy.  So the
 * estimate follows protobuf-c's unpacking: for every field, its scan
 * record; for every message element, a pointer and the struct; for every
 * packed or repeated number, its slot; for every string, its bytes; for
 * every unknown field, its record and its bytes; and then what pprof.c
 * builds per location, line, function, mapping and string.  The walk
 * descends into samples, locations and the other messages of the profile
 * (whose fields are numbers), so nested elements count too.  It checks
 * only what it must to walk (keys, lengths within their message); whether
 * the fields make a valid profile is protobuf-c's and pprof.c's to say.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "pprof-internal.h"
#include "profile-codec.h"

enum { T_PROFILE, T_SAMPLE, T_LOCATION, T_LEAF /* only numbers inside */ };
enum { M_KEY, M_VARINT, M_LEN, M_SKIP, M_PACKED };

/* What a field is, as protobuf-c unpacks it. */
enum { F_UNKNOWN, F_NUMBER, F_REPEATED_NUMBER, F_MESSAGE, F_STRING };

/* protobuf-c's per-field scan record, and what pprof.c keeps per
 * element: an id map's slots (idmap_init: twice the elements, rounded
 * up to a power of two, of a key and a value), a location's frames
 * (struct locframes and one store_frame per line, or one without
 * lines), and per string the derived names it may build. */
#define SCAN_RECORD    32u
#define IDMAP_SLOTS    (4u * (sizeof(uint64_t) + sizeof(uint32_t)))
#define LOCATION_EXTRA (4u * sizeof(void *) + sizeof(struct store_frame))

/* What malloc(n) takes: n rounded up to 16 and a header, 32 at least. */
static uint64_t alloc_cost(uint64_t n)
{
	uint64_t c = ((n + 15) & ~(uint64_t)15) + 16;
	return c < 32 ? 32 : c;
}

/* The kind of field `field` of a message of type `type`, and for a
 * message field its type and struct size. */
static int field_kind(uint8_t type, uint64_t field, uint8_t *sub, size_t *size)
{
	switch (type) {
	case T_PROFILE:
		switch (field) {
		case 1:
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__ValueType);
			return F_MESSAGE;
		case 2:
			*sub = T_SAMPLE;
			*size = sizeof(Perftools__Profiles__Sample);
			return F_MESSAGE;
		case 3:
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__Mapping);
			return F_MESSAGE;
		case 4:
			*sub = T_LOCATION;
			*size = sizeof(Perftools__Profiles__Location);
			return F_MESSAGE;
		case 5:
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__Function);
			return F_MESSAGE;
		case 6: return F_STRING;
		case 11:
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__ValueType);
			return F_MESSAGE;
		case 13: return F_REPEATED_NUMBER;
		case 7:
		case 8:
		case 9:
		case 10:
		case 12:
		case 14: return F_NUMBER;
		}
		return F_UNKNOWN;
	case T_SAMPLE:
		if (field == 1 || field == 2)
			return F_REPEATED_NUMBER;
		if (field == 3) {
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__Label);
			return F_MESSAGE;
		}
		return F_UNKNOWN;
	case T_LOCATION:
		if (field == 4) {
			*sub = T_LEAF;
			*size = sizeof(Perftools__Profiles__Line);
			return F_MESSAGE;
		}
		return field >= 1 && field <= 5 ? F_NUMBER : F_UNKNOWN;
	}
	/* The leaf messages' known fields are all numbers (1 to 10 covers
	 * the largest, Mapping); a length-delimited one is unknown. */
	return field >= 1 && field <= 10 ? F_NUMBER : F_UNKNOWN;
}

static int bad(struct pprof_scan *s, const char *why)
{
	s->why = why;
	s->at = s->pos;
	return -EINVAL;
}

/* Counts the element a message field of type sub adds to the profile. */
static void count_element(struct pprof_scan *s, uint8_t type, uint64_t field)
{
	if (type == T_PROFILE) {
		s->samples += field == 2;
		s->mappings += field == 3;
		s->locations += field == 4;
		s->functions += field == 5;
		if (field == 4)
			s->memory += LOCATION_EXTRA + IDMAP_SLOTS;
		if (field == 3 || field == 5)
			s->memory += IDMAP_SLOTS;
	} else if (type == T_LOCATION && field == 4) {
		s->lines++;
		s->memory += sizeof(struct store_frame);
	}
}

/* A key has been read: sets up the reading of its value. */
static int on_key(struct pprof_scan *s)
{
	uint64_t field = s->key >> 3;
	unsigned wire = (unsigned)(s->key & 7);
	uint8_t type = s->lv[s->depth].type;

	if (field == 0)
		return bad(s, "a field key, got field number 0");
	s->fields++;
	s->memory += SCAN_RECORD;
	uint8_t sub = T_LEAF;
	size_t size = 0;
	int kind = field_kind(type, field, &sub, &size);
	switch (wire) {
	case 0:
		s->mode = M_VARINT;
		s->acc = 0;
		s->shift = 0;
		break;
	case 1:
	case 5:
		s->mode = M_SKIP;
		s->left = wire == 1 ? 8 : 4;
		if (s->left > s->lv[s->depth].end - s->pos)
			return bad(s, "a field that ends inside its message");
		break;
	case 2:
		s->mode = M_LEN;
		s->acc = 0;
		s->shift = 0;
		return 0; /* costed once the length is known */
	default:
		return bad(s,
		           "a field key of wire type 0, 1, 2 or 5 (profile.proto has no groups)");
	}
	if (kind == F_REPEATED_NUMBER)
		s->memory += sizeof(uint64_t);
	else if (kind != F_NUMBER) /* unknown: a record and a copy */
		s->memory += sizeof(ProtobufCMessageUnknownField) + alloc_cost(10);
	return 0;
}

/* A length-delimited field's length has been read. */
static int on_length(struct pprof_scan *s, uint64_t len)
{
	uint64_t field = s->key >> 3;
	uint8_t type = s->lv[s->depth].type;
	uint8_t sub = T_LEAF;
	size_t size = 0;

	if (len > s->lv[s->depth].end - s->pos)
		return bad(s, "a field no longer than what is left of its message");
	switch (field_kind(type, field, &sub, &size)) {
	case F_MESSAGE:
		if (s->depth + 1 >= sizeof(s->lv) / sizeof(s->lv[0]))
			return bad(s, "no message nested deeper than profile.proto's");
		s->memory += sizeof(void *) + alloc_cost(size);
		count_element(s, type, field);
		s->depth++;
		s->lv[s->depth].end = s->pos + len;
		s->lv[s->depth].type = sub;
		s->mode = M_KEY;
		s->acc = 0;
		s->shift = 0;
		return 0;
	case F_REPEATED_NUMBER:
		s->mode = M_PACKED;
		s->left = len;
		return 0;
	case F_STRING: {
		uint64_t kept = len > IMPORT_MAX_NAME ? IMPORT_MAX_NAME : len;
		s->strings++;
		/* the string, its pointer, and pprof.c's length and names
		 * built from it (struct derived: an inlined "NAME_[i]", a
		 * mapping's "[base]", a decoded build id) */
		s->memory += sizeof(char *) + alloc_cost(len + 1) + sizeof(size_t) +
		             4 * sizeof(void *) + 2 * alloc_cost(kept + 8) + alloc_cost(len / 2);
		break;
	}
	default: s->memory += sizeof(ProtobufCMessageUnknownField) + alloc_cost(len); break;
	}
	s->mode = M_SKIP;
	s->left = len;
	return 0;
}

/* Leaves every message that ends at the current offset. */
static void pop_ended(struct pprof_scan *s)
{
	while (s->depth > 0 && s->pos == s->lv[s->depth].end)
		s->depth--;
}

int pprof_scan_feed(struct pprof_scan *s, const uint8_t *buf, size_t n)
{
	size_t i = 0;
	int rc;

	if (s->why)
		return -EINVAL;
	if (s->pos == 0 && s->depth == 0)
		s->lv[0] = (struct pprof_scan_level){UINT64_MAX, T_PROFILE};
	while (i < n) {
		if (s->mode == M_SKIP || s->mode == M_PACKED) {
			size_t take = (uint64_t)(n - i) < s->left ? n - i : (size_t)s->left;
			if (s->mode == M_PACKED) {
				/* each varint ends in one byte below 0x80 */
				for (size_t j = 0; j < take; j++)
					s->memory += buf[i + j] < 0x80 ? sizeof(uint64_t) : 0;
			}
			i += take;
			s->pos += take;
			s->left -= take;
			if (s->left == 0) {
				s->mode = M_KEY;
				s->acc = 0;
				s->shift = 0;
				pop_ended(s);
			}
			continue;
		}
		/* A varint: a key, a number or a length. */
		uint8_t b = buf[i++];
		if (s->shift >= 70)
			return bad(s, "a varint of at most 10 bytes");
		if (s->pos >= s->lv[s->depth].end)
			return bad(s, "a field that ends inside its message");
		s->pos++;
		s->acc |= (uint64_t)(b & 0x7f) << s->shift;
		s->shift += 7;
		if (b & 0x80)
			continue;
		uint64_t v = s->acc;
		s->acc = 0;
		s->shift = 0;
		switch (s->mode) {
		case M_KEY:
			s->key = v;
			rc = on_key(s);
			break;
		case M_VARINT:
			s->mode = M_KEY;
			pop_ended(s);
			rc = 0;
			break;
		default: /* M_LEN */
			rc = on_length(s, v);
			if (rc == 0 && s->mode != M_SKIP && s->mode != M_PACKED)
				pop_ended(s); /* an empty message */
			else if (rc == 0 && s->left == 0) {
				s->mode = M_KEY;
				pop_ended(s);
			}
			break;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int pprof_scan_end(struct pprof_scan *s)
{
	if (s->why)
		return -EINVAL;
	if (s->mode != M_KEY || s->shift || s->depth > 0)
		return bad(s, "more data: the input ends inside a field");
	return 0;
}
