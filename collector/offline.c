/*
 * offline.c — struct import_symbols (import.h) over the collector's
 * symbolizer: processes and mappings come from the profile
 * (symbolize_offline_process/map), addresses are resolved by
 * symbolize_user/symbolize_kernel as for a live recording.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "offline.h"

#ifdef FLAMEFS_RECORD_NO_BPF

int offline_symbols_new(const char *binary_path, struct import_symbols *out)
{
	(void)binary_path;
	memset(out, 0, sizeof(*out));
	return -ENOTSUP;
}

void offline_symbols_free(struct import_symbols *sym)
{
	(void)sym;
}

#else

#include "symbolize.h"

struct offline {
	struct symbolize *s;
	char *binary_path;
};

static int o_process(void *ctx, uint32_t pid, const char *name)
{
	struct offline *o = ctx;
	return symbolize_offline_process(o->s, (pid_t)pid, name);
}

static int o_fork(void *ctx, uint32_t pid, uint32_t child)
{
	struct offline *o = ctx;
	if (!symbolize_known(o->s, (pid_t)pid))
		return 0;
	return symbolize_inherit(o->s, (pid_t)child, (pid_t)pid);
}

static int o_map(void *ctx, uint32_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
                 const char *path, const uint8_t *build_id, size_t build_id_len)
{
	struct offline *o = ctx;
	return symbolize_offline_map(o->s, (pid_t)pid, start, end, pgoff, path, build_id,
	                             build_id_len, o->binary_path);
}

static int o_user(void *ctx, uint32_t pid, uint64_t addr, bool caller, struct store_frame *f,
                  size_t room)
{
	struct offline *o = ctx;
	return symbolize_user(o->s, (pid_t)pid, addr, caller, f, room);
}

static int o_kernel(void *ctx, uint64_t addr, bool caller, struct store_frame *f)
{
	struct offline *o = ctx;
	return symbolize_kernel(o->s, addr, caller, f);
}

static const char *o_build_id(void *ctx, uint32_t pid)
{
	struct offline *o = ctx;
	const char *bin, *bid;
	if (symbolize_process(o->s, (pid_t)pid, &bin, &bid) < 0)
		return "";
	return bid;
}

int offline_symbols_new(const char *binary_path, struct import_symbols *out)
{
	struct offline *o = calloc(1, sizeof(*o));

	memset(out, 0, sizeof(*out));
	if (!o)
		return -ENOMEM;
	o->s = symbolize_new();
	o->binary_path = binary_path ? strdup(binary_path) : NULL;
	if (!o->s || (binary_path && !o->binary_path)) {
		symbolize_free(o->s);
		free(o->binary_path);
		free(o);
		return -ENOMEM;
	}
	*out = (struct import_symbols){
	        .ctx = o,
	        .process = o_process,
	        .fork = o_fork,
	        .map = o_map,
	        .user = o_user,
	        .kernel = o_kernel,
	        .build_id = o_build_id,
	};
	return 0;
}

void offline_symbols_free(struct import_symbols *sym)
{
	struct offline *o = sym->ctx;
	if (o) {
		symbolize_free(o->s);
		free(o->binary_path);
		free(o);
	}
	memset(sym, 0, sizeof(*sym));
}

#endif
