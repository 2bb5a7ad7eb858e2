/*
 * kbtf-internal.h — one struct member's byte offset from the kernel's BTF
 * (kbtf.c), for BPF programs that read kernel memory without CO-RE.
 */
#ifndef FLAMEFS_KBTF_H
#define FLAMEFS_KBTF_H

#include <stddef.h>
#include <stdint.h>

#define KBTF_VMLINUX "/sys/kernel/btf/vmlinux"

/* Sets *offset to the byte offset of member in struct strct, as the BTF
 * file at path describes it.  Returns 0, or -errno with a one-line
 * message naming path in err. */
int kbtf_member_offset(const char *path, const char *strct, const char *member, uint32_t *offset,
                       char *err, size_t errlen);

#endif
