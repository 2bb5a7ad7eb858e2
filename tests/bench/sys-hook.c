/*
 * sys-hook.c — attaches programs that do nothing to the system-call
 * tracepoints, for tests/bench/vfs.sh: the cost every system call of every
 * process pays while any program is attached there (the kernel's slow
 * system-call path and the program's call), whatever the program does.
 *
 * usage: sys-hook raw|btf TRACEPOINT...   (sys_exit, sys_enter)
 *
 * raw attaches a raw tracepoint program (BPF_RAW_TRACEPOINT_OPEN by name),
 * btf a tp_btf one (as record -e vfs does).  Prints "ready" once attached,
 * then holds the programs until its standard input ends.  Exits 0, or 1
 * with the failing step on standard error.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* r0 = 0; exit */
static const struct bpf_insn nothing[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
};

/* Attaches one program to tracepoint tp; 0, or -errno. */
static int hook(const struct btf *vmlinux, const char *tp)
{
	int fd;

	if (!vmlinux) {
		fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "nothing", "GPL", nothing, 2,
		                   NULL);
		if (fd < 0 || bpf_raw_tracepoint_open(tp, fd) < 0)
			return -errno;
		return 0;
	}
	char name[128];
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	int id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return id;
	/* Not LIBBPF_OPTS(): a GNU statement expression, which -Wpedantic
	 * refuses. */
	struct bpf_prog_load_opts o = {.sz = sizeof(o),
	                               .expected_attach_type = BPF_TRACE_RAW_TP,
	                               .attach_btf_id = (unsigned)id};
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "nothing", "GPL", nothing, 2, &o);
	if (fd < 0 || bpf_link_create(fd, 0, BPF_TRACE_RAW_TP, NULL) < 0)
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	struct btf *vmlinux = NULL;
	char c;

	if (argc < 3 || (strcmp(argv[1], "raw") && strcmp(argv[1], "btf"))) {
		fprintf(stderr, "usage: sys-hook raw|btf TRACEPOINT...\n");
		return 1;
	}
	if (!strcmp(argv[1], "btf") && !(vmlinux = btf__load_vmlinux_btf())) {
		fprintf(stderr, "sys-hook: the kernel's BTF: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		int rc = hook(vmlinux, argv[i]);
		if (rc < 0) {
			fprintf(stderr, "sys-hook: %s %s: %s\n", argv[1], argv[i], strerror(-rc));
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
