#!/usr/bin/env bash
# make-cfi-corpus.sh — writes the seed inputs of the cfi fuzz target
# (corpus/cfi/): small x86-64 ELF files whose CFI has every shape cfi.c
# knows, built with gcc and the assembler's .cfi directives:
#   eh.so          .eh_frame of ordinary C functions (rsp, rbp saves)
#   debugframe.so  .debug_frame only (-fno-asynchronous-unwind-tables -g)
#   shapes.so      a signal trampoline's expressions, an undefined return
#                  address, the PLT's CFA expression, an rbp-based CFA, a
#                  register rule and a huge frame (BAD rows)
#   plt            a small executable that calls libc through its PLT
#   usage: tests/fuzz/make-cfi-corpus.sh      (run from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus/cfi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

gcc -O2 -shared -fPIC -s -Wl,--build-id=none -o "$out/eh.so" "$here/../unwind-lib.c"
gcc -O2 -shared -fPIC -g -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-Wl,--build-id=none -o "$work/df.so" "$here/../unwind-lib.c"
objcopy -R .debug_info -R .debug_abbrev -R .debug_line -R .debug_str -R .debug_line_str \
	-R .debug_aranges -R .debug_rnglists -R .debug_loclists -R .symtab -R .strtab \
	"$work/df.so" "$out/debugframe.so"

cat >"$work/shapes.s" <<'ASM'
	.text
	.globl sig_tramp
	nop
sig_tramp:
	.cfi_startproc
	.cfi_signal_frame
	/* CFA = *(rsp + 160); rip at rsp + 168; rbp at rsp + 120 */
	.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06
	.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01
	.cfi_escape 0x10, 0x06, 0x03, 0x77, 0xf8, 0x00
	mov $15, %rax
	syscall
	.cfi_endproc

	.globl outermost
outermost:
	.cfi_startproc
	.cfi_undefined rip
	xor %ebp, %ebp
	call with_rbp
	hlt
	.cfi_endproc

	.globl plt_like
	.p2align 4
plt_like:
	.cfi_startproc
	/* rsp + 8 + ((rip & 15) >= 11) << 3 */
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	jmp *0(%rip)
	push $0
	jmp plt_like
	.cfi_endproc

	.globl with_rbp
with_rbp:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register rbp
	push %rbx
	.cfi_offset rbx, -24
	call plt_like
	pop %rbx
	pop %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc

	.globl odd
odd:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_register rip, rbx
	sub $0x100000, %rsp
	.cfi_adjust_cfa_offset 0x100000
	add $0x100000, %rsp
	.cfi_adjust_cfa_offset -0x100000
	pop %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.section .note.GNU-stack,"",@progbits
ASM
gcc -shared -nostdlib -s -Wl,--build-id=none -o "$out/shapes.so" "$work/shapes.s"

cat >"$work/plt.c" <<'C'
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) { return puts(argc > 1 ? argv[1] : "x") + (int)strlen(argv[0]); }
C
gcc -O2 -s -Wl,--build-id=none -o "$out/plt" "$work/plt.c"
ls -l "$out"
