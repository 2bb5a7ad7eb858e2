/*
 * unwind.h — what the BPF stack walker (unwind.bpf.h, inside
 * profile.bpf.c) and its user side (cfi.c, which compiles tables, and
 * unwinder.c, which loads them) share: the compact form of a file's
 * DWARF call-frame information, and the per-process list of mappings
 * that turns a pc into a table.  x86-64 only: the rules name rsp, rbp,
 * rbx and the return address at CFA-8.  Include it after vmlinux.h (BPF) or
 * <linux/types.h> (user space).
 *
 * A table is a pc-sorted array of rows; a row's rule holds from its pc up
 * to the next row's pc.  The pcs are ELF virtual addresses minus the
 * table's base (its lowest pc), so a table covers at most 4 GiB.
 */
#ifndef FLAMEFS_UNWIND_H
#define FLAMEFS_UNWIND_H

/* What a row says about the caller's frame. */
enum unwind_rule {
	UNWIND_RULE_NONE = 0, /* no CFI covers the pc */
	UNWIND_RULE_RSP,      /* CFA = rsp + cfa */
	UNWIND_RULE_RBP,      /* CFA = rbp + cfa */
	UNWIND_RULE_PLT,      /* a PLT entry: CFA = rsp + 8, +8 more when
	                       * (pc & 15) >= the row's rbp field */
	UNWIND_RULE_SIGNAL,   /* the kernel's signal frame (__restore_rt): the
	                       * interrupted rip, rsp and rbp are in the
	                       * ucontext at rsp */
	UNWIND_RULE_END,      /* the return address is undefined: the
	                       * outermost frame (_start, a thread's start) */
	UNWIND_RULE_BAD,      /* CFI the compact form cannot express: a DWARF
	                       * expression, a register rule, an offset out of
	                       * range; the walk stops there as [truncated] */
	UNWIND_RULE_RBX,      /* CFA = rbx + cfa: the value rbx has in this
	                       * frame, followed through the callees' saves
	                       * (ld.so's lazy binder, _dl_runtime_resolve*,
	                       * aligns its stack and keeps the CFA in rbx) */
	UNWIND_RULE_RA_RDI,   /* CFA = rsp + cfa (which may be 0), the return
	                       * address in rdi, not on the stack: glibc's
	                       * __vfork pops it there, where the child cannot
	                       * overwrite it.  Only the sampled frame's rdi is
	                       * known: elsewhere the walk stops there. */
};

/* One row, 8 bytes. */
struct unwind_row {
	__u32 pc;  /* ELF address - the table's base */
	__u16 cfa; /* CFA offset / 8 (RSP, RBP, RBX, RA_RDI) */
	__u8 rule; /* enum unwind_rule in bits 0-3; UNWIND_ROW_RBP_AT; the
	               * rbx code in bits 5-7 (UNWIND_ROW_RBX) */
	__s8 rbp;  /* rbp's slot: CFA + rbp * 8; for PLT, the threshold */
};

#define UNWIND_ROW_RULE(r)   ((r)->rule & 15)
#define UNWIND_ROW_RBP_AT    0x10u /* rbp saved at CFA + rbp * 8, else unchanged */
#define UNWIND_ROW_RBX(r)    ((unsigned)(r)->rule >> 5)
#define UNWIND_ROW_RBX_SHIFT 5
/* Where the caller's rbx is (RSP, RBP and RBX rows), the rbx code:
 * 0 unchanged (the callee did not save it), 1..6 saved at CFA - 8 * (code
 * + 1) (CFA-16 .. CFA-56, where push-saved registers go), 7 lost (saved
 * elsewhere or by a rule the compact form cannot hold).  The walker only
 * needs rbx for an RBX row's CFA; a lost rbx stops the walk there. */
#define UNWIND_RBX_SAME 0u
#define UNWIND_RBX_LOST 7u

/* ucontext offsets of the saved registers in a signal frame (x86-64
 * kernel ABI: uc_mcontext at 40, gregs REG_RBP 10, REG_RBX 11, REG_RSP 15,
 * REG_RIP 16). */
#define UNWIND_SIGNAL_RBX 128
#define UNWIND_SIGNAL_RBP 120
#define UNWIND_SIGNAL_RSP 160
#define UNWIND_SIGNAL_RIP 168

/* A table is rows[first .. first + count) of the rows array.  gen: the
 * generation of its id (below). */
struct unwind_table {
	__u32 first;
	__u32 count;
	__u32 gen;
};

/* A mapping's table field names a table by id (the low 16 bits) and
 * generation (the high 16).  A table freed with its file (unwinder.c)
 * gets count 0 and the next generation, and its id is given to another
 * file at that generation: a list written before (a process whose events
 * were lost, a template being placed as it was deleted) names the old
 * generation, which the walker finds different from the table's, and
 * walks that mapping by frame pointers.  Ids stay below UNWIND_MAX_TABLES,
 * so no (generation, id) is one of the special values below. */
#define UNWIND_TABLE_ID(t)    ((t)&0xffffu)
#define UNWIND_TABLE_GEN(t)   ((t) >> 16)
#define UNWIND_TABLE(gen, id) ((__u32)(gen) << 16 | (id))
#define UNWIND_MAX_TABLES     0xfff0u

/* Rows searched per lookup: a table holds at most 2^UNWIND_SEARCH_STEPS. */
#define UNWIND_SEARCH_STEPS   22
#define UNWIND_MAX_TABLE_ROWS (1u << UNWIND_SEARCH_STEPS)

/* A mapping's table field when it has no table. */
#define UNWIND_NO_TABLE 0xffffffffu /* no CFI: frame pointers */
#define UNWIND_PENDING  0xfffffffeu /* being built: frame pointers meanwhile */
#define UNWIND_UNBUILT                                                                             \
	0xfffffffdu /* not built: the walker asks for it (an
                                     * event) and marks it PENDING */

/* One executable mapping of a process: pc - bias is the pc of a row of
 * `table` (bias folds the load bias and the table's base). */
struct unwind_mapping {
	__u64 start;
	__u64 bias;
	__u32 size; /* the mapping is [start, start + size) */
	__u32 table;
};

/* A file's table, for the walker to find by the file itself (the device,
 * in the kernel's encoding, and inode of a mapping's vm_file) where a
 * process's list does not place the pc: no list yet (a process not read),
 * a pc past the list (a library mapped since), a mapping whose table was
 * pending when the list was written.  The table's row pc of a byte at file
 * offset `off` is off + delta (delta folds the executable segments' p_vaddr
 * - p_offset, which must be one for the whole file, and the table's base). */
struct unwind_file_key {
	__u64 dev, ino;
};
struct unwind_file {
	__u32 table; /* UNWIND_TABLE(generation, id) */
	__u32 pad;
	__s64 delta;
};

/* Mappings per process the walker sees (a power of two). */
#define UNWIND_MAX_MAPS 128

/* A process's executable mappings, sorted by start. */
struct unwind_proc {
	__u32 nmaps;
	/* Set by the walker when a pc fell in no mapping, so that user space
	 * reads the process's maps again (a dlopen); cleared by the next
	 * update from user space. */
	__u32 stale;
	/* Placed in BPF from a template (unwind_exec): 0 written by user
	 * space, UNWIND_PLACED_EXEC at the exec (the program and its loader
	 * only), UNWIND_PLACED_ALL at the loader's hook. */
	__u32 placed;
	/* Set at a loader's hook after the first (a dlopen or dlclose) in a
	 * process not sampled since its list was written: the list may be
	 * out of date, and the process's next walk asks user space to read
	 * it at once (PROFILE_STALE_LOADED), so that such a process is read
	 * only if it is sampled after a dlopen.  A process sampled since is
	 * read at the hook.  Both cleared by the next update from user
	 * space; sampled is set by each walk of the process. */
	__u16 reread;
	__u16 sampled;
	__u64 exe_dev, exe_ino; /* the program's file, when placed */
	struct unwind_mapping maps[UNWIND_MAX_MAPS];
};

#define UNWIND_PLACED_EXEC 1
#define UNWIND_PLACED_ALL  2

/* A process's CPython interpreter, for the walker (written by unwinder.c
 * from the symbolizer's table of layouts, symbolize.h): where its
 * _PyEval_EvalFrameDefault lies, the addresses of _PyRuntime and
 * PyCode_Type, and the byte offsets the walk reads. */
struct unwind_python {
	__u64 eval_start, eval_end; /* process addresses */
	__u64 runtime, code_type;
	__u16 runtime_interp_head, runtime_tstate_current, interp_threads_head;
	__u16 tstate_next, tstate_cframe, tstate_native_thread_id, cframe_current_frame;
	__u16 frame_code, frame_previous, frame_prev_instr, frame_is_entry;
	__u16 object_type, code_firstlineno, code_filename, code_qualname, code_linetable;
	__u16 code_adaptive;
	__u16 str_length, str_state, str_ascii_data; /* of a compact str */
	__u16 frame_read, code_read;                 /* bytes read of a frame and of a code
	                              * object: past every field named, at
	                              * most UNWIND_PY_READ_MAX */
};

/* A program's walker list, as a template for its next processes: its
 * executable mappings and its loader's (placed at the exec, before
 * anything else is mapped), its libraries' and the vDSO's (placed when
 * the loader has mapped the libraries), each at addresses relative to
 * its file's load bias.  The exec hook (on_exec) finds the program's and
 * the loader's biases in the process's auxiliary vector (AT_ENTRY -
 * entry, AT_BASE) and the vDSO's (AT_SYSINFO_EHDR); the loader's hook
 * (on_ldso_state) finds every object's in the loader's list of loaded
 * objects (link_map: l_addr, in the order the loader keeps, checked
 * against each object's dynamic section, l_ld - l_addr).  So the walker
 * has tables from a process's first instruction, and user space reads
 * a known program's processes only when they load more (dlopen). */
#define UNWIND_EXEC_MAPS 24 /* mappings in a template */
#define UNWIND_EXEC_LM   24 /* objects of the loader's list in a template */

enum unwind_exec_kind {
	UNWIND_EXEC_PROGRAM = 0, /* placed at the exec and at the loader's hook */
	UNWIND_EXEC_LOADER,      /* placed at the exec and at the loader's hook */
	UNWIND_EXEC_VDSO,        /* placed at the exec and at the loader's hook */
	UNWIND_EXEC_LIBRARY,     /* placed at the loader's hook */
};

struct unwind_exec_mapping {
	__u64 start; /* - its object's load bias */
	__u64 bias;  /* - its object's load bias */
	__u32 size;
	__u32 table;
	__u8 kind; /* enum unwind_exec_kind */
	__u8 lm;   /* its object's place in the loader's list */
	__u16 pad;
	__u32 pad2;
};

struct unwind_exec {
	__u64 entry;               /* the program's ELF entry point (e_entry) */
	__u32 nmaps;               /* 0: no list (frame pointers only) */
	__u32 nlm;                 /* objects in the loader's list when the libraries are
	              * mapped; 0: the exec part only */
	__u64 dyn[UNWIND_EXEC_LM]; /* each object's l_ld - l_addr */
	/* by start within each object */
	struct unwind_exec_mapping maps[UNWIND_EXEC_MAPS];
	/* The Python interpreter in one of the objects (has_python), its
	 * addresses relative to that object's load bias: placed as the
	 * process's py_procs entry with the object's mappings. */
	__u8 has_python, python_kind, python_lm, pad3;
	__u32 pad4;
	struct unwind_python python;
};

#define UNWIND_PY_READ_MAX 248
/* Threads of an interpreter searched for the sampled thread's state. */
#define UNWIND_PY_MAX_THREADS 256

/* Flags of a walked stack. */
#define UNWIND_FLAG_FP        1u /* some frames were found by frame pointers */
#define UNWIND_FLAG_TRUNCATED 2u /* the walk gave up before the outermost frame */
#define UNWIND_FLAG_PENDING   4u /* a table was still being built */
#define UNWIND_FLAG_PY_CUT                                                                         \
	8u /* a Python walk was cut short (a marker
                                  * frame says where and why) */

#endif
