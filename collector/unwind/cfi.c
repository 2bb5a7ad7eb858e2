/*
 * cfi.c — compiles DWARF call-frame information into unwind tables.
 *
 * The CIEs and FDEs of the section are listed with libdw's
 * dwarf_next_cfi (each FDE's pc range decoded by its CIE's pointer
 * encoding); FDEs are kept when they lie in an executable segment,
 * sorted, and cut where they overlap.  Each FDE's call-frame instructions
 * (after its CIE's initial ones) are then run once, start to end, by the
 * small interpreter below, which follows only what the compact form needs
 * (the CFA, rbp, rbx and the return address; other registers' operands
 * are skipped), and each row is turned into the compact form of unwind.h:
 * the CFA as rsp, rbp or rbx plus an offset, the return address at CFA-8,
 * rbp unchanged or saved at CFA plus an offset, rbx unchanged, saved where
 * pushes save it (CFA-16 .. CFA-56) or lost.  (libdw's
 * dwarf_cfi_addrframe() gives one row per call but runs the FDE from its
 * start each time: quadratic in an FDE's rows.)
 * Three shapes that are DWARF expressions are recognised by their exact
 * form: the PLT's CFA (rsp + 8, + 8 more past the push in each entry), the
 * signal trampoline's ucontext (the FDE with the 'S' augmentation), and an
 * undefined return address, which marks the outermost frame.  Anything
 * else becomes a BAD row, where the walker stops.  Identical neighbouring
 * rows are merged and gaps between FDEs get a NONE row.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi-internal.h"

/* x86-64 DWARF register numbers. */
#define REG_RBX 3
#define REG_RDI 5
#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT    0xff
#define PE_FORMAT  0x0f
#define PE_APPLY   0x70
#define PE_ABSPTR  0x00
#define PE_ULEB128 0x01
#define PE_UDATA2  0x02
#define PE_UDATA4  0x03
#define PE_UDATA8  0x04
#define PE_SLEB128 0x09
#define PE_SDATA2  0x0a
#define PE_SDATA4  0x0b
#define PE_SDATA8  0x0c
#define PE_PCREL   0x10

/* Bounds on what one file may ask of us. */
#define MAX_CIES 4096
#define MAX_FDES (1u << 21)

struct cie {
	uint64_t off;
	uint8_t enc; /* pointer encoding of FDE addresses */
	bool usable; /* augmentation understood */
	bool signal; /* 'S': the signal trampoline */
	bool z;      /* 'z': FDEs carry a sized augmentation */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra;                    /* return address register */
	const uint8_t *init, *init_end; /* initial instructions */
};

struct fde {
	uint64_t start, end;
	const uint8_t *ins, *ins_end; /* call-frame instructions */
	uint32_t cie;                 /* index into the compiler's cies */
	bool signal;
};

struct segment {
	uint64_t start, end; /* an executable PT_LOAD's ELF addresses */
};

struct compiler {
	Elf *elf;
	struct segment segs[16];
	size_t nsegs;
	struct cie *cies;
	size_t ncies;
	struct fde *fdes;
	size_t nfdes, fdes_cap;
	struct cfi_table *t;
	size_t rows_cap;
	char *err;
	size_t errlen;
};

static int fail(struct compiler *c, int rc, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int fail(struct compiler *c, int rc, const char *fmt, ...)
{
	va_list ap;
	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void cfi_table_free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

const char *cfi_rule_name(const struct unwind_row *r, char *buf, size_t len)
{
	unsigned rule = UNWIND_ROW_RULE(r), rbx = UNWIND_ROW_RBX(r);
	char regs[48] = "";
	int n = 0;

	if (r->rule & UNWIND_ROW_RBP_AT)
		n = snprintf(regs, sizeof(regs), ",rbp=c%+d", r->rbp * 8);
	if (rbx == UNWIND_RBX_LOST)
		snprintf(regs + n, sizeof(regs) - (size_t)n, ",rbx=lost");
	else if (rbx != UNWIND_RBX_SAME)
		snprintf(regs + n, sizeof(regs) - (size_t)n, ",rbx=c-%u", 8 * (rbx + 1));
	switch (rule) {
	case UNWIND_RULE_NONE: snprintf(buf, len, "none"); break;
	case UNWIND_RULE_RSP: snprintf(buf, len, "rsp+%u%s", r->cfa * 8u, regs); break;
	case UNWIND_RULE_RBP: snprintf(buf, len, "rbp+%u%s", r->cfa * 8u, regs); break;
	case UNWIND_RULE_RBX: snprintf(buf, len, "rbx+%u%s", r->cfa * 8u, regs); break;
	case UNWIND_RULE_PLT: snprintf(buf, len, "plt(%d)", r->rbp); break;
	case UNWIND_RULE_SIGNAL: snprintf(buf, len, "signal"); break;
	case UNWIND_RULE_END: snprintf(buf, len, "end"); break;
	case UNWIND_RULE_RA_RDI: snprintf(buf, len, "rsp+%u,ra=rdi", r->cfa * 8u); break;
	default: snprintf(buf, len, "bad"); break;
	}
	return buf;
}

/* ---- reading the section ------------------------------------------------ */

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

static bool read_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				r |= ~(uint64_t)0 << shift;
			*v = (int64_t)r;
			return true;
		}
	}
	return false;
}

static bool read_fixed(const uint8_t **p, const uint8_t *end, size_t n, uint64_t *v)
{
	uint64_t r = 0;
	if ((size_t)(end - *p) < n)
		return false;
	for (size_t i = 0; i < n; i++) /* little endian: x86-64 only */
		r |= (uint64_t)(*p)[i] << (8 * i);
	*p += n;
	*v = r;
	return true;
}

/* Reads one pointer in encoding enc; `here` is the ELF address of *p, for
 * pc-relative ones.  Only the absolute and pc-relative applications are
 * understood (what compilers and linkers write on x86-64). */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t here,
                         uint64_t *v)
{
	uint64_t u = 0;
	int64_t s = 0;
	bool ok;

	if (enc == PE_OMIT || (enc & 0x80))
		return false; /* omitted or indirect */
	switch (enc & PE_FORMAT) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8: ok = read_fixed(p, end, 8, &u); break;
	case PE_UDATA4: ok = read_fixed(p, end, 4, &u); break;
	case PE_SDATA4:
		ok = read_fixed(p, end, 4, &u);
		u = (uint64_t)(int64_t)(int32_t)(uint32_t)u;
		break;
	case PE_UDATA2: ok = read_fixed(p, end, 2, &u); break;
	case PE_SDATA2:
		ok = read_fixed(p, end, 2, &u);
		u = (uint64_t)(int64_t)(int16_t)(uint16_t)u;
		break;
	case PE_ULEB128: ok = read_uleb(p, end, &u); break;
	case PE_SLEB128:
		ok = read_sleb(p, end, &s);
		u = (uint64_t)s;
		break;
	default: return false;
	}
	if (!ok)
		return false;
	switch (enc & PE_APPLY) {
	case 0: break;
	case PE_PCREL: u += here; break;
	default: return false;
	}
	*v = u;
	return true;
}

/* Reads a CIE's augmentation: the FDE pointer encoding and 'S'. */
static void parse_cie(const Dwarf_CIE *ci, bool eh_frame, struct cie *out)
{
	const char *a = ci->augmentation;
	const uint8_t *d = ci->augmentation_data;
	const uint8_t *end = d ? d + ci->augmentation_data_size : NULL;

	(void)eh_frame;
	out->enc = PE_ABSPTR;
	out->usable = true;
	out->signal = false;
	out->z = a && a[0] == 'z';
	out->code_align = ci->code_alignment_factor;
	out->data_align = ci->data_alignment_factor;
	out->ra = ci->return_address_register;
	out->init = ci->initial_instructions;
	out->init_end = ci->initial_instructions_end;
	if (!out->init || out->init_end < out->init)
		out->usable = false;
	if (!a || !a[0])
		return;
	if (a[0] != 'z') {
		out->usable = false; /* "eh" and other legacy forms */
		return;
	}
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (!d || d >= end)
				goto bad;
			out->enc = *d++;
			break;
		case 'L':
			if (!d || d >= end)
				goto bad;
			d++;
			break;
		case 'P': {
			if (!d || d >= end)
				goto bad;
			uint8_t penc = *d++;
			uint64_t ignored;
			/* Decoded only to step over it; pcrel base irrelevant. */
			if (!read_encoded(&d, end, penc & PE_FORMAT, 0, &ignored))
				goto bad;
			break;
		}
		case 'S': out->signal = true; break;
		case 'B':
		case 'G': break;
		default: goto bad;
		}
	}
	return;
bad:
	out->usable = false;
}

static const struct cie *find_cie(const struct compiler *c, uint64_t off)
{
	size_t lo = 0, hi = c->ncies;
	while (lo < hi) { /* cies are appended in section order */
		size_t mid = lo + (hi - lo) / 2;
		if (c->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ncies && c->cies[lo].off == off ? &c->cies[lo] : NULL;
}

static bool in_exec_segment(const struct compiler *c, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < c->nsegs; i++)
		if (start >= c->segs[i].start && end <= c->segs[i].end)
			return true;
	return false;
}

static int add_fde(struct compiler *c, const struct fde *d)
{
	if (c->nfdes == c->fdes_cap) {
		size_t ncap = c->fdes_cap ? c->fdes_cap * 2 : 1024;
		if (ncap > MAX_FDES)
			return fail(c, -E2BIG, "more than %u FDEs", MAX_FDES);
		struct fde *n = realloc(c->fdes, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->fdes = n;
		c->fdes_cap = ncap;
	}
	c->fdes[c->nfdes++] = *d;
	return 0;
}

/* Lists the FDEs of one CFI section into c->fdes. */
static int list_fdes(struct compiler *c, Elf *elf, Elf_Data *data, uint64_t sh_addr, bool eh_frame,
                     const char *name)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int rc;

	if (!ident)
		return fail(c, -EINVAL, "%s: no ELF identification", name);
	for (;;) {
		rc = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e);
		if (rc > 0)
			break; /* the end */
		if (rc < 0)
			return fail(c, -EINVAL, "%s at offset %llu: %s", name,
			            (unsigned long long)off, dwarf_errmsg(-1));
		if (next <= off)
			return fail(c, -EINVAL, "%s at offset %llu: entry does not advance", name,
			            (unsigned long long)off);
		if (e.cie.CIE_id == LIBDW_CIE_ID) {
			if (c->ncies == MAX_CIES)
				return fail(c, -EINVAL, "%s: more than %d CIEs", name, MAX_CIES);
			if (c->ncies && c->cies[c->ncies - 1].off >= off)
				return fail(c, -EINVAL, "%s: CIEs out of order", name);
			struct cie *ci = &c->cies[c->ncies++];
			ci->off = off;
			parse_cie(&e.cie, eh_frame, ci);
		} else {
			const struct cie *ci = find_cie(c, e.fde.CIE_pointer);
			const uint8_t *p = e.fde.start, *end = e.fde.end;
			uint64_t start, range;
			uint64_t here = sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);
			uint64_t aug = 0;
			if (!ci || !ci->usable || !read_encoded(&p, end, ci->enc, here, &start) ||
			    !read_encoded(&p, end, ci->enc & PE_FORMAT, 0, &range) || start == 0 ||
			    range == 0 || start + range < start ||
			    !in_exec_segment(c, start, start + range) ||
			    (ci->z && (!read_uleb(&p, end, &aug) || aug > (uint64_t)(end - p)))) {
				c->t->fdes_skipped++;
				off = next;
				continue;
			}
			struct fde d = {.start = start,
			                .end = start + range,
			                .ins = p + aug,
			                .ins_end = end,
			                .cie = (uint32_t)(ci - c->cies),
			                .signal = ci->signal};
			if ((rc = add_fde(c, &d)) < 0)
				return rc;
		}
		off = next;
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* ---- the interpreter ----------------------------------------------------- */

/* How a register is recovered (DWARF's register rules, those we keep). */
enum how { H_SAME = 0, H_UNDEF, H_OFFSET, H_OTHER, H_EXPR, H_REGISTER };

struct rule {
	uint8_t how;
	int64_t off;         /* H_OFFSET: saved at CFA + off; H_REGISTER: in
	                      * that register */
	const uint8_t *expr; /* H_EXPR: the DWARF expression */
	size_t len;
};

/* The state of one row: the CFA and the two registers the walker needs. */
struct state {
	bool cfa_expr; /* CFA by expression (cfa_e, cfa_len) */
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_e;
	size_t cfa_len;
	struct rule rbp, rbx, ra;
};

#define MAX_REMEMBER 16

/* A DWARF expression that is exactly "DW_OP_breg7 N" (and, with `deref`,
 * then DW_OP_deref): rsp + N. */
static bool is_rsp_plus(const uint8_t *e, size_t len, int64_t n, bool deref)
{
	const uint8_t *p = e, *end = e + len;
	int64_t v;
	if (p >= end || *p++ != DW_OP_breg7 || !read_sleb(&p, end, &v) || v != n)
		return false;
	if (deref && (p >= end || *p++ != DW_OP_deref))
		return false;
	return p == end;
}

/* The PLT's CFA: DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
 * DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus, as binutils
 * writes it: rsp + 8, + 8 more once (rip & 15) >= N.  Returns N, or -1. */
static int plt_threshold(const uint8_t *e, size_t len)
{
	static const uint8_t head[] = {DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and};
	static const uint8_t tail[] = {DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus};
	if (len != sizeof(head) + 1 + sizeof(tail) || memcmp(e, head, sizeof(head)) != 0 ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)) != 0)
		return -1;
	uint8_t lit = e[sizeof(head)];
	return lit >= DW_OP_lit0 && lit <= DW_OP_lit15 ? lit - DW_OP_lit0 : -1;
}

/* The rbx code of a row (unwind.h): only rbx+N rows read it, so a save
 * the compact form cannot hold is not worth a BAD row. */
static unsigned rbx_code(const struct rule *rbx)
{
	switch (rbx->how) {
	case H_SAME: return UNWIND_RBX_SAME;
	case H_OFFSET:
		if (rbx->off % 8 == 0 && rbx->off <= -16 && rbx->off >= -56)
			return (unsigned)(-rbx->off / 8 - 1);
		return UNWIND_RBX_LOST;
	default: return UNWIND_RBX_LOST;
	}
}

static struct unwind_row rule_row(unsigned rule)
{
	return (struct unwind_row){.rule = (__u8)rule};
}

/* The compact form of one row's state. */
static struct unwind_row state_row(const struct state *st, bool signal)
{
	struct unwind_row r = {0};

	if (st->ra.how == H_UNDEF)
		return rule_row(UNWIND_RULE_END); /* the outermost frame */
	if (signal) {
		/* The kernel's sigreturn frame: registers in the ucontext. */
		if (st->cfa_expr && is_rsp_plus(st->cfa_e, st->cfa_len, UNWIND_SIGNAL_RSP, true) &&
		    st->ra.how == H_EXPR &&
		    is_rsp_plus(st->ra.expr, st->ra.len, UNWIND_SIGNAL_RIP, false) &&
		    st->rbp.how == H_EXPR &&
		    is_rsp_plus(st->rbp.expr, st->rbp.len, UNWIND_SIGNAL_RBP, false))
			return rule_row(UNWIND_RULE_SIGNAL);
		return rule_row(UNWIND_RULE_BAD);
	}
	if (st->ra.how == H_REGISTER && st->ra.off == REG_RDI && !st->cfa_expr &&
	    st->cfa_reg == REG_RSP && st->cfa_off >= 0 && st->cfa_off % 8 == 0 &&
	    st->cfa_off / 8 <= UINT16_MAX && (st->rbp.how == H_SAME || st->rbp.how == H_UNDEF)) {
		/* glibc's __vfork: the return address popped into rdi */
		r.rule = UNWIND_RULE_RA_RDI;
		r.cfa = (__u16)(st->cfa_off / 8);
		return r;
	}
	if (st->ra.how != H_OFFSET || st->ra.off != -8)
		return rule_row(UNWIND_RULE_BAD);
	if (st->cfa_expr) {
		int thr = plt_threshold(st->cfa_e, st->cfa_len);
		if (thr < 0)
			return rule_row(UNWIND_RULE_BAD);
		r.rule = UNWIND_RULE_PLT;
		r.rbp = (__s8)thr;
		return r; /* a PLT entry saves no register */
	}
	if ((st->cfa_reg != REG_RSP && st->cfa_reg != REG_RBP && st->cfa_reg != REG_RBX) ||
	    st->cfa_off <= 0 || st->cfa_off % 8 || st->cfa_off / 8 > UINT16_MAX)
		return rule_row(UNWIND_RULE_BAD);
	r.rule = st->cfa_reg == REG_RSP   ? UNWIND_RULE_RSP
	         : st->cfa_reg == REG_RBP ? UNWIND_RULE_RBP
	                                  : UNWIND_RULE_RBX;
	r.cfa = (__u16)(st->cfa_off / 8);
	r.rule |= (__u8)(rbx_code(&st->rbx) << UNWIND_ROW_RBX_SHIFT);
	switch (st->rbp.how) {
	case H_SAME:
	case H_UNDEF: return r; /* left as it is */
	case H_OFFSET:
		if (st->rbp.off % 8 || st->rbp.off / 8 < INT8_MIN || st->rbp.off / 8 > INT8_MAX)
			return rule_row(UNWIND_RULE_BAD);
		r.rule |= UNWIND_ROW_RBP_AT;
		r.rbp = (__s8)(st->rbp.off / 8);
		return r;
	default: return rule_row(UNWIND_RULE_BAD);
	}
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->rule == b->rule && a->cfa == b->cfa && a->rbp == b->rbp;
}

/* Appends a row at ELF address pc (kept absolute until the end). */
static int add_row(struct compiler *c, uint64_t pc, struct unwind_row r)
{
	struct cfi_table *t = c->t;
	if (t->nrows && same_rule(&t->rows[t->nrows - 1], &r))
		return 0;
	if (t->nrows && pc <= t->base + t->rows[t->nrows - 1].pc) {
		/* A second row at the same pc (an advance of 0): it wins. */
		if (pc == t->base + t->rows[t->nrows - 1].pc) {
			if (UNWIND_ROW_RULE(&t->rows[t->nrows - 1]) == UNWIND_RULE_BAD)
				t->bad_rows--;
			t->nrows--;
			if (t->nrows && same_rule(&t->rows[t->nrows - 1], &r))
				return 0;
		} else {
			return fail(c, -EINVAL, "CFI rows out of order at 0x%llx",
			            (unsigned long long)pc);
		}
	}
	if (t->nrows == c->rows_cap) {
		size_t ncap = c->rows_cap ? c->rows_cap * 2 : 4096;
		if (ncap > UNWIND_MAX_TABLE_ROWS)
			ncap = UNWIND_MAX_TABLE_ROWS;
		if (t->nrows == ncap)
			return fail(c, -E2BIG, "more than %u rows", UNWIND_MAX_TABLE_ROWS);
		struct unwind_row *n = realloc(t->rows, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		c->rows_cap = ncap;
	}
	if (UNWIND_ROW_RULE(&r) == UNWIND_RULE_BAD)
		t->bad_rows++;
	if (!t->nrows)
		t->base = pc;
	if (pc - t->base > UINT32_MAX)
		return fail(c, -E2BIG, "the CFI spans more than 4 GiB");
	r.pc = (__u32)(pc - t->base);
	t->rows[t->nrows++] = r;
	return 0;
}

static struct rule *tracked(struct state *st, const struct cie *ci, uint64_t reg)
{
	if (reg == ci->ra)
		return &st->ra;
	if (reg == REG_RBP)
		return &st->rbp;
	if (reg == REG_RBX)
		return &st->rbx;
	return NULL; /* a register the walker does not restore */
}

static bool read_block(const uint8_t **p, const uint8_t *end, const uint8_t **b, size_t *len)
{
	uint64_t n;
	if (!read_uleb(p, end, &n) || n > (uint64_t)(end - *p))
		return false;
	*b = *p;
	*len = (size_t)n;
	*p += n;
	return true;
}

/* v × the CIE's data alignment factor, for an offset rule: false when
 * it does not fit in 64 bits, which no real frame's offset needs (the
 * CFI is then refused as malformed). */
static bool scaled(int64_t v, const struct cie *ci, int64_t *out)
{
	return !__builtin_mul_overflow(v, ci->data_align, out);
}

/* Runs call-frame instructions [p, end) from state st.  With emit, rows
 * are appended as the location advances (those before `from` are not),
 * `loc` is the location and `init` the CIE's state (for DW_CFA_restore).
 * Returns 0, 1 when the instructions cannot be followed (the rest of the
 * FDE is then one BAD row), or -errno. */
static int run(struct compiler *c, const struct cie *ci, const uint8_t *p, const uint8_t *end,
               struct state *st, const struct state *init, uint64_t *loc, uint64_t fde_end,
               uint64_t from, bool emit)
{
	struct state saved[MAX_REMEMBER];
	unsigned nsaved = 0;
	int rc;

	while (p < end) {
		uint8_t op = *p++, low = op & 0x3f;
		uint64_t reg = 0, u = 0, adv = 0;
		int64_t sv = 0, off = 0;
		const uint8_t *blk;
		size_t blen;
		struct rule *rr;
		bool advance = false;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			adv = low;
			advance = true;
			break;
		case 2: /* DW_CFA_offset */
			if (!read_uleb(&p, end, &u) || !scaled((int64_t)u, ci, &off))
				return 1;
			if ((rr = tracked(st, ci, low)))
				*rr = (struct rule){.how = H_OFFSET, .off = off};
			continue;
		case 3: /* DW_CFA_restore */
			if ((rr = tracked(st, ci, low)))
				*rr = *tracked((struct state *)init, ci, low);
			continue;
		}
		switch (advance ? DW_CFA_nop + 0x100 : op) {
		case DW_CFA_nop: continue;
		case DW_CFA_nop + 0x100: break; /* DW_CFA_advance_loc, above */
		case DW_CFA_advance_loc1:
			if (!read_fixed(&p, end, 1, &adv))
				return 1;
			advance = true;
			break;
		case DW_CFA_advance_loc2:
			if (!read_fixed(&p, end, 2, &adv))
				return 1;
			advance = true;
			break;
		case DW_CFA_advance_loc4:
			if (!read_fixed(&p, end, 4, &adv))
				return 1;
			advance = true;
			break;
		case DW_CFA_set_loc: return 1; /* rare; not followed */
		case DW_CFA_offset_extended:
		case DW_CFA_val_offset:
			if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u) ||
			    !scaled((int64_t)u, ci, &off))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = op == DW_CFA_val_offset ? H_OTHER
				                                                   : H_OFFSET,
				                    .off = off};
			continue;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			if (!read_uleb(&p, end, &reg) || !read_sleb(&p, end, &sv) ||
			    !scaled(sv, ci, &off))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = op == DW_CFA_val_offset_sf ? H_OTHER
				                                                      : H_OFFSET,
				                    .off = off};
			continue;
		case DW_CFA_restore_extended:
			if (!read_uleb(&p, end, &reg))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = *tracked((struct state *)init, ci, reg);
			continue;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			if (!read_uleb(&p, end, &reg))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = op == DW_CFA_undefined ? H_UNDEF
				                                                  : H_SAME};
			continue;
		case DW_CFA_register:
			if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = H_REGISTER, .off = (int64_t)u};
			continue;
		case DW_CFA_remember_state:
			if (nsaved == MAX_REMEMBER)
				return 1;
			saved[nsaved++] = *st;
			continue;
		case DW_CFA_restore_state:
			if (!nsaved)
				return 1;
			*st = saved[--nsaved];
			continue;
		case DW_CFA_def_cfa:
			if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
				return 1;
			st->cfa_expr = false;
			st->cfa_reg = reg;
			st->cfa_off = (int64_t)u;
			continue;
		case DW_CFA_def_cfa_sf:
			if (!read_uleb(&p, end, &reg) || !read_sleb(&p, end, &sv) ||
			    !scaled(sv, ci, &st->cfa_off))
				return 1;
			st->cfa_expr = false;
			st->cfa_reg = reg;
			continue;
		case DW_CFA_def_cfa_register:
			if (!read_uleb(&p, end, &reg))
				return 1;
			st->cfa_expr = false;
			st->cfa_reg = reg;
			continue;
		case DW_CFA_def_cfa_offset:
			if (!read_uleb(&p, end, &u))
				return 1;
			st->cfa_off = (int64_t)u;
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (!read_sleb(&p, end, &sv) || !scaled(sv, ci, &st->cfa_off))
				return 1;
			continue;
		case DW_CFA_def_cfa_expression:
			if (!read_block(&p, end, &blk, &blen))
				return 1;
			st->cfa_expr = true;
			st->cfa_e = blk;
			st->cfa_len = blen;
			continue;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (!read_uleb(&p, end, &reg) || !read_block(&p, end, &blk, &blen))
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = op == DW_CFA_expression ? H_EXPR
				                                                   : H_OTHER,
				                    .expr = blk,
				                    .len = blen};
			continue;
		case DW_CFA_GNU_args_size:
			if (!read_uleb(&p, end, &u))
				return 1;
			continue;
		case DW_CFA_GNU_negative_offset_extended:
			if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u) ||
			    !scaled((int64_t)u, ci, &off) || off == INT64_MIN)
				return 1;
			if ((rr = tracked(st, ci, reg)))
				*rr = (struct rule){.how = H_OFFSET, .off = -off};
			continue;
		default: return 1; /* an instruction we do not know */
		}
		if (!advance)
			continue;
		uint64_t next = *loc + adv * ci->code_align;
		if (next < *loc || next > fde_end)
			next = fde_end; /* corrupt: clamp to the FDE */
		if (emit && next > from && next > *loc) {
			uint64_t at = *loc > from ? *loc : from;
			if ((rc = add_row(c, at, state_row(st, false))) < 0)
				return rc;
		}
		*loc = next;
	}
	return 0;
}

/* Compiles one FDE's rows from `from` (an earlier FDE may cover its start). */
static int compile_fde(struct compiler *c, const struct fde *d, uint64_t from)
{
	const struct cie *ci = &c->cies[d->cie];
	struct state init = {.ra = {.how = H_UNDEF}}, st;
	uint64_t loc = d->start;
	int rc;

	/* The signal trampoline's rows all take the signal shape. */
	if (d->signal) {
		rc = run(c, ci, ci->init, ci->init_end, &init, &init, &loc, d->end, from, false);
		st = init;
		if (rc == 0)
			rc = run(c, ci, d->ins, d->ins_end, &st, &init, &loc, d->end, d->end,
			         false);
		if (rc < 0)
			return rc;
		return add_row(c, from, rc ? rule_row(UNWIND_RULE_BAD) : state_row(&st, true));
	}
	rc = run(c, ci, ci->init, ci->init_end, &init, &init, &loc, d->end, from, false);
	if (rc < 0)
		return rc;
	if (rc > 0 || loc != d->start)
		return add_row(c, from, rule_row(UNWIND_RULE_BAD)); /* a CIE that advances */
	st = init;
	rc = run(c, ci, d->ins, d->ins_end, &st, &init, &loc, d->end, from, true);
	if (rc < 0)
		return rc;
	if (rc > 0)
		return add_row(c, loc > from ? loc : from, rule_row(UNWIND_RULE_BAD));
	if (loc < d->end)
		return add_row(c, loc > from ? loc : from, state_row(&st, false));
	return 0;
}

/* ---- the file ----------------------------------------------------------- */

static Elf_Scn *find_section(Elf *elf, const char *want, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *s = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((s = elf_nextscn(elf, s))) {
		const char *name;
		if (!gelf_getshdr(s, sh) || sh->sh_type != SHT_PROGBITS || sh->sh_size == 0)
			continue;
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && strcmp(name, want) == 0)
			return s;
	}
	return NULL;
}

static int read_segments(struct compiler *c, Elf *elf)
{
	GElf_Ehdr eh;
	size_t phnum;

	if (!gelf_getehdr(elf, &eh))
		return fail(c, -EINVAL, "not an ELF file");
	if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return fail(c, -EINVAL, "not an x86-64 ELF file (machine %u)", eh.e_machine);
	if ((eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(elf, &phnum) < 0)
		return fail(c, -EINVAL, "not an executable or shared object");
	for (size_t i = 0; i < phnum && c->nsegs < sizeof(c->segs) / sizeof(c->segs[0]); i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		c->segs[c->nsegs++] = (struct segment){ph.p_vaddr, ph.p_vaddr + ph.p_memsz};
	}
	if (!c->nsegs)
		return fail(c, -EINVAL, "no executable segment");
	return 0;
}

/* Opens the CFI of one section: libdw's interpreter and the raw data. */
static int open_section(struct compiler *c, Elf *elf, bool eh_frame, Elf_Data **data,
                        uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *s = find_section(elf, eh_frame ? ".eh_frame" : ".debug_frame", &sh);

	if (!s)
		return -ENOENT;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
		return fail(c, -EINVAL, "%s: cannot decompress: %s",
		            eh_frame ? ".eh_frame" : ".debug_frame", elf_errmsg(-1));
	*data = elf_getdata(s, NULL);
	if (!*data || !(*data)->d_buf || (*data)->d_size == 0)
		return -ENOENT;
	*addr = sh.sh_addr;
	return 0;
}

static void close_section(struct compiler *c)
{
	c->ncies = 0;
	c->nfdes = 0;
}

/* Compiles one source into c->t; -ENOENT when it has no FDE. */
static int compile_source(struct compiler *c, Elf *elf, bool eh_frame, const char *source)
{
	Elf_Data *data = NULL;
	uint64_t addr = 0;
	int rc = open_section(c, elf, eh_frame, &data, &addr);

	if (rc < 0)
		goto out;
	c->t->source = source;
	rc = list_fdes(c, elf, data, addr, eh_frame, source);
	if (rc < 0)
		goto out;
	if (!c->nfdes) {
		rc = -ENOENT;
		goto out;
	}
	qsort(c->fdes, c->nfdes, sizeof(*c->fdes), fde_cmp);
	uint64_t covered = 0; /* end of the last FDE compiled */
	for (size_t i = 0; i < c->nfdes; i++) {
		const struct fde *d = &c->fdes[i];
		uint64_t from = d->start;
		if (d->start < covered) {
			if (d->end <= covered) {
				c->t->fdes_skipped++; /* inside the previous one */
				continue;
			}
			from = covered; /* overlapping: the earlier one wins */
		} else if (covered && d->start > covered) {
			rc = add_row(c, covered, rule_row(UNWIND_RULE_NONE));
			if (rc < 0)
				goto out;
		}
		rc = compile_fde(c, d, from);
		if (rc < 0)
			goto out;
		c->t->fdes++;
		covered = d->end;
	}
	rc = add_row(c, covered, rule_row(UNWIND_RULE_NONE));
out:
	close_section(c);
	return rc;
}

int cfi_compile(Elf *elf, Elf *debug, struct cfi_table **out, char *err, size_t errlen)
{
	struct compiler c = {.elf = elf, .err = err, .errlen = errlen};
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return fail(&c, -EINVAL, "not an ELF file");
	rc = read_segments(&c, elf);
	if (rc < 0)
		return rc;
	c.t = calloc(1, sizeof(*c.t));
	c.cies = calloc(MAX_CIES, sizeof(*c.cies));
	if (!c.t || !c.cies) {
		rc = -ENOMEM;
		goto out;
	}
	rc = compile_source(&c, elf, true, ".eh_frame");
	if (rc == -ENOENT)
		rc = compile_source(&c, elf, false, ".debug_frame");
	if (rc == -ENOENT && debug && elf_kind(debug) == ELF_K_ELF)
		rc = compile_source(&c, debug, false, ".debug_frame (debug file)");
	if (rc == -ENOENT)
		fail(&c, rc, "no .eh_frame or .debug_frame");
out:
	free(c.cies);
	free(c.fdes);
	if (rc < 0) {
		cfi_table_free(c.t);
		return rc;
	}
	*out = c.t;
	return 0;
}
