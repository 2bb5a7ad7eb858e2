/*
 * ldso-internal.h — the dynamic loader's "libraries mapped" hook, for a uprobe.
 */
#ifndef FLAMEFS_LDSO_H
#define FLAMEFS_LDSO_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* The x86-64 program interpreter that Debian's binaries name. */
#define LDSO_INTERP "/lib64/ld-linux-x86-64.so.2"

struct ldso_probe {
	char path[PATH_MAX];  /* the loader, symlinks resolved */
	uint64_t func_offset; /* file offset of _dl_debug_state */
	int64_t rdebug_delta; /* &_r_debug - &_dl_debug_state */
};

/* Finds _dl_debug_state and _r_debug in the loader `interp`.  Returns 0,
 * or -errno with a message naming the file in err. */
int ldso_find(const char *interp, struct ldso_probe *p, char *err, size_t errlen);

#endif
