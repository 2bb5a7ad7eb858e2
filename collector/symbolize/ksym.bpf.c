/*
 * ksym.bpf.c — names kernel addresses for `flamefs-collect record`
 * without reading /proc/kallsyms.
 *
 * User space writes up to KSYM_BATCH addresses into `addrs` (the .bss is
 * mmap'd), sets `nr` and runs `lookup` with BPF_PROG_TEST_RUN.  The
 * program prints each address with bpf_snprintf's "%pB", which looks the
 * symbol up in the kernel's own kallsyms tables (a binary search) at
 * address - 1, as for a return address in a backtrace, and writes
 * "name+0xoff/0xsize [module]", or "0xADDR" when no symbol holds it, into
 * `names`.  Reading all of /proc/kallsyms instead makes the kernel format
 * 120 000 lines, which cost the collector more CPU than a whole minute of
 * sampling at 99 Hz.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "ksym-internal.h"

char LICENSE[] SEC("license") = "GPL";

__u32 nr = 0;
__u64 addrs[KSYM_BATCH] = {};
char names[KSYM_BATCH][KSYM_TEXT_LEN] = {};
/* In .rodata (a frozen map), as bpf_snprintf requires. */
const char name_fmt[] = "%pB";

static long name_one(__u32 i, void *ctx)
{
	if (i >= KSYM_BATCH)
		return 1;
	__u64 a = addrs[i];
	bpf_snprintf(names[i], KSYM_TEXT_LEN, name_fmt, &a, sizeof(a));
	return 0;
}

SEC("syscall")
int lookup(void *ctx)
{
	bpf_loop(nr, name_one, NULL, 0);
	return 0;
}
