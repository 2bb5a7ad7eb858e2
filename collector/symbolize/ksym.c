/*
 * ksym.c — runs ksym.bpf.c (see ksym-internal.h): kernel addresses named by the
 * kernel's kallsyms lookup, one BPF_PROG_TEST_RUN per batch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ksym-internal.h"
#include "ksym.skel.h"

struct ksym {
	struct ksym_bpf *skel;
	int prog_fd;
};

int ksym_open(struct ksym **out)
{
	struct ksym *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return -ENOMEM;
	k->skel = ksym_bpf__open_and_load();
	if (!k->skel || !k->skel->bss) {
		rc = errno ? -errno : -EINVAL;
		ksym_free(k);
		return rc;
	}
	k->prog_fd = bpf_program__fd(k->skel->progs.lookup);
	*out = k;
	return 0;
}

void ksym_free(struct ksym *k)
{
	if (!k)
		return;
	ksym_bpf__destroy(k->skel);
	free(k);
}

int ksym_lookup(struct ksym *k, const uint64_t *addrs, size_t n)
{
	/* Not LIBBPF_OPTS(): clang -Wpedantic rejects its empty variadic use. */
	struct bpf_test_run_opts opts = {.sz = sizeof(opts)};

	if (n > KSYM_BATCH)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		k->skel->bss->addrs[i] = addrs[i] + 1; /* "%pB" looks up at - 1 */
		k->skel->bss->names[i][0] = '\0';
	}
	k->skel->bss->nr = (__u32)n;
	if (bpf_prog_test_run_opts(k->prog_fd, &opts) < 0)
		return -errno;
	return 0;
}

const char *ksym_name(const struct ksym *k, size_t i, size_t *len)
{
	const char *t = k->skel->bss->names[i];
	size_t n = strnlen(t, KSYM_TEXT_LEN);

	/* "name+0xoff/0xsize [module]"; "0xADDR" (or nothing) when no
	 * symbol holds the address. */
	if (n == 0 || (t[0] == '0' && t[1] == 'x'))
		return NULL;
	const char *plus = NULL;
	for (const char *p = t; p + 2 < t + n; p++)
		if (p[0] == '+' && p[1] == '0' && p[2] == 'x')
			plus = p;
	*len = plus ? (size_t)(plus - t) : strcspn(t, " ");
	return *len ? t : NULL;
}
