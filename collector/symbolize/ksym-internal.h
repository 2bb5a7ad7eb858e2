/*
 * ksym-internal.h — kernel address → function name through a BPF program that
 * asks the kernel's own kallsyms tables (ksym.bpf.c), batched, so the
 * collector never reads /proc/kallsyms whole.  Needs CAP_BPF and
 * CAP_PERFMON (or root), BPF_PROG_TYPE_SYSCALL, bpf_loop and
 * bpf_snprintf (Linux 5.17).  Included by ksym.bpf.c for the sizes.
 */
#ifndef FLAMEFS_KSYM_H
#define FLAMEFS_KSYM_H

/* Addresses named per program run: a whole stack of PROFILE_MAX_DEPTH. */
#define KSYM_BATCH 128
/* "%pB" text per address: KSYM_NAME_LEN (512) + "+0x…/0x… [module]". */
#define KSYM_TEXT_LEN 640

#ifndef __bpf__
#include <stddef.h>
#include <stdint.h>

struct ksym;

/* Loads the lookup program.  Returns 0 and the handle in *out (the caller
 * frees it with ksym_free()) or -errno (no BPF, too old a kernel). */
int ksym_open(struct ksym **out);
void ksym_free(struct ksym *k); /* accepts NULL */

/* Names addrs[0..n) (n <= KSYM_BATCH), each the very address to look up
 * (for a return address, pass it minus 1).  Returns 0 or -errno. */
int ksym_lookup(struct ksym *k, const uint64_t *addrs, size_t n);

/* The function name of the i-th address of the last ksym_lookup(),
 * without offset or module, and its length in *len; NULL when no symbol
 * holds it.  Owned by k, valid until the next ksym_lookup(). */
const char *ksym_name(const struct ksym *k, size_t i, size_t *len);
#endif

#endif
