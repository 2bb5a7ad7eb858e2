/*
 * perfdata-internal.h — what the two halves of the perf.data importer
 * share: perfdata-header.c reads the file's header (the attrs and their
 * sample ids, the events' names, the feature sections), perfdata.c its
 * records (samples, mmaps, comms, forks) in time order.  The constants
 * and layouts are perf's (tools/perf/Documentation/perf.data-file-format.txt,
 * linux/perf_event.h).  Private to import/.
 */
#ifndef FLAMEFS_IMPORT_PERFDATA_INTERNAL_H
#define FLAMEFS_IMPORT_PERFDATA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "import.h"
#include "stackcache-internal.h"

#define PERFDATA_MAX_BYTES ((size_t)64 << 30)
#define MAX_ATTRS          256
#define MAX_STACK          1024 /* frames kept per sample (perf's own limit is 127 by default) */
#define FRAMES_PER_PC      16
#define STACK_SLOTS_LOG2   18
#define NO_EVENT_NAME      "samples"

/* perf_event_attr.sample_type bits */
enum {
	S_IP = 1u << 0,
	S_TID = 1u << 1,
	S_TIME = 1u << 2,
	S_ADDR = 1u << 3,
	S_READ = 1u << 4,
	S_CALLCHAIN = 1u << 5,
	S_ID = 1u << 6,
	S_CPU = 1u << 7,
	S_PERIOD = 1u << 8,
	S_STREAM_ID = 1u << 9,
	S_RAW = 1u << 10,
	S_BRANCH_STACK = 1u << 11,
	S_REGS_USER = 1u << 12,
	S_STACK_USER = 1u << 13,
	S_IDENTIFIER = 1u << 16,
};

/* record types */
enum {
	R_MMAP = 1,
	R_COMM = 3,
	R_EXIT = 4,
	R_FORK = 7,
	R_SAMPLE = 9,
	R_MMAP2 = 10,
	R_HEADER_ATTR = 64,
	R_FINISHED_ROUND = 68,
	R_COMPRESSED = 81,
};

/* feature bits */
enum {
	F_BUILD_ID = 2,
	F_CMDLINE = 11,
	F_EVENT_DESC = 12,
	F_CLOCK_DATA = 29,
};

#define MISC_CPUMODE_MASK 7u
#define MISC_KERNEL       1u
#define MISC_USER         2u
#define MISC_MMAP_DATA    (1u << 13)
#define MISC_COMM_EXEC    (1u << 13)
#define MISC_MMAP_BUILDID (1u << 14)
#define MISC_BUILDID_SIZE (1u << 15)

#define CONTEXT_HV           ((uint64_t)-32)
#define CONTEXT_KERNEL       ((uint64_t)-128)
#define CONTEXT_USER         ((uint64_t)-512)
#define CONTEXT_MAX          ((uint64_t)-4095)
#define CONTEXT_GUEST        ((uint64_t)-2048)
#define CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define CONTEXT_GUEST_USER   ((uint64_t)-2560)

#define READ_TOTAL_TIME_ENABLED (1u << 0)
#define READ_TOTAL_TIME_RUNNING (1u << 1)
#define READ_ID                 (1u << 2)
#define READ_GROUP              (1u << 3)
#define READ_LOST               (1u << 4)

#define BRANCH_HW_INDEX (1u << 17)

struct attr {
	uint32_t type;
	uint64_t config, sample_type, read_format, branch_sample_type;
	uint64_t regs_user_mask;
	bool sample_id_all;
	char *name;    /* as perf names it, e.g. "cpu-clock:ppp"; malloc'd */
	size_t base;   /* length without modifiers */
	int kept;      /* -1 unknown, 0 skipped, 1 kept */
	uint64_t *ids; /* sample ids of this event */
	size_t nids;
};

/* A thread's name (comm) by tid. */
struct thread {
	uint32_t tid; /* 0 and slot empty when name is NULL */
	char *name;
};

struct pd {
	struct import_ctx *ctx;
	const uint8_t *buf;
	size_t len;
	bool swap; /* file written on the other byte order: refused */

	struct attr attrs[MAX_ATTRS];
	size_t nattrs;
	uint64_t *id_keys; /* sample id -> attr index, open addressing */
	uint32_t *id_vals;
	size_t id_mask;

	bool have_clock;
	int64_t clock_wall_ns, clock_perf_ns;

	struct thread *threads;
	size_t threads_mask, threads_used;
	uint32_t *gen; /* per pid slot: bumped on exec/mmap, part of cache keys */

	struct stackcache *stacks; /* (comm, event, stack_key's entries) -> series, node */
	uint64_t *ips;
	size_t ips_cap;
	/* stack_key's room: per entry of ips, two key words and the file
	 * user_files names (MAX_STACK each) */
	uint64_t *key_words;
	const void **key_files;
	uint64_t *key_offs;
	uint8_t key_kinds[MAX_STACK];
	struct store_frame *frames;
	size_t frames_cap;
	struct import_sums sums;
	int first_attr; /* the event kept by default, -1 before the first sample */
	uint64_t skipped_other;
	uint64_t unwound, unwind_failed;
	uint8_t kernel[MAX_STACK]; /* per entry of ips: 1 kernel, 0 user */
};

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline uint64_t perfdata_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* Build ids of the files hit, handed to the symbolizer with their
 * mappings later: kept as (path -> build id) in a small list. */
struct bid {
	char *path;
	uint8_t id[20];
	uint8_t len;
};

struct bids {
	struct bid *b;
	size_t n;
};

/* perfdata-header.c: the header's parts, each checked against the file's
 * bounds; failures are import_fail() messages naming the offset. */
int perfdata_attr_default_name(struct attr *a);
int perfdata_ids_build(struct pd *p);
int perfdata_attr_of_id(const struct pd *p, uint64_t id);
int perfdata_read_attr(struct pd *p, size_t off, size_t attr_size);
int perfdata_read_ids(struct pd *p, struct attr *t, uint64_t off, uint64_t size);
void perfdata_bids_free(struct bids *b);
const struct bid *perfdata_bids_find(const struct bids *b, const char *path);
int perfdata_read_features(struct pd *p, const uint8_t *bits, size_t after_data, struct bids *bids);

#endif
