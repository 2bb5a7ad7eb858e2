/*
 * cfi.c — compiles DWARF call-frame information into unwind tables.
 *
 * The FDEs of the section are listed with dwarf_next_cfi (decoding each
 * one's pc range by its CIE's pointer encoding), kept when they lie in an
 * executable segment, sorted, and cut where they overlap.  Each FDE's
 * rows are then asked of libdw's CFI interpreter, one
 * dwarf_cfi_addrframe() per row (it gives the row's pc range, so the next
 * call starts where the row ends), and each row's rules are turned into
 * the compact form of unwind.h: the CFA as rsp or rbp plus an offset, the
 * return address at CFA-8, rbp unchanged or saved at CFA plus an offset.
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

#include "cfi.h"

/* x86-64 DWARF register numbers. */
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
#define MAX_CIES     4096
#define MAX_FDES     (1u << 21)
#define MAX_FDE_ROWS 4096 /* rows asked of libdw per FDE */

struct cie {
	uint64_t off;
	uint8_t enc; /* pointer encoding of FDE addresses */
	bool usable; /* augmentation understood */
	bool signal; /* 'S': the signal trampoline */
};

struct fde {
	uint64_t start, end;
	bool signal;
};

struct segment {
	uint64_t start, end; /* an executable PT_LOAD's ELF addresses */
};

struct compiler {
	Elf *elf;
	Dwarf_CFI *cfi;
	Dwarf *dwarf; /* owner of cfi for .debug_frame */
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
	unsigned rule = r->rule & 15, rbp = r->rule >> 4;
	char rbps[24] = "";

	if (rbp == UNWIND_RBP_AT)
		snprintf(rbps, sizeof(rbps), ",rbp=c%+d", r->rbp * 8);
	switch (rule) {
	case UNWIND_RULE_NONE: snprintf(buf, len, "none"); break;
	case UNWIND_RULE_RSP: snprintf(buf, len, "rsp+%u%s", r->cfa * 8u, rbps); break;
	case UNWIND_RULE_RBP: snprintf(buf, len, "rbp+%u%s", r->cfa * 8u, rbps); break;
	case UNWIND_RULE_PLT: snprintf(buf, len, "plt(%d)", r->rbp); break;
	case UNWIND_RULE_SIGNAL: snprintf(buf, len, "signal"); break;
	case UNWIND_RULE_END: snprintf(buf, len, "end"); break;
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

static int add_fde(struct compiler *c, uint64_t start, uint64_t end, bool signal)
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
	c->fdes[c->nfdes++] = (struct fde){start, end, signal};
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
			if (!ci || !ci->usable || !read_encoded(&p, end, ci->enc, here, &start) ||
			    !read_encoded(&p, end, ci->enc & PE_FORMAT, 0, &range) || start == 0 ||
			    range == 0 || start + range < start ||
			    !in_exec_segment(c, start, start + range)) {
				c->t->fdes_skipped++;
			} else if ((rc = add_fde(c, start, start + range, ci->signal)) < 0) {
				return rc;
			}
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

/* ---- rules -------------------------------------------------------------- */

static struct unwind_row rule_row(unsigned rule)
{
	return (struct unwind_row){.rule = (__u8)rule};
}

/* A register saved at CFA + off, as libdw spells it. */
static bool at_cfa_plus(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* A register saved at rsp + off (an expression rule; libdw puts the CFA
 * first, which the expression ignores). */
static bool at_rsp_plus(const Dwarf_Op *ops, size_t n, int64_t off)
{
	return n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_breg7 &&
	       (int64_t)ops[1].number == off;
}

/* The PLT's CFA: rsp + 8 + ((rip & 15) >= N) << 3, as binutils writes it.
 * Returns N, or -1. */
static int plt_threshold(const Dwarf_Op *o, size_t n)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 || o[1].atom != DW_OP_breg16 ||
	    o[1].number != 0 || o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
	    o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge ||
	    o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return -1;
	return o[4].atom - DW_OP_lit0;
}

/* The compact form of the rules in one frame state. */
static struct unwind_row frame_row(Dwarf_Frame *f, bool signal)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	int ra = dwarf_frame_info(f, NULL, NULL, NULL);
	if (ra != REG_RIP)
		return rule_row(UNWIND_RULE_BAD);
	if (dwarf_frame_register(f, ra, mem, &ops, &n) < 0)
		return rule_row(UNWIND_RULE_BAD);
	if (n == 0 && ops == mem)
		return rule_row(UNWIND_RULE_END); /* undefined: outermost */

	if (signal) {
		Dwarf_Op bmem[3], *bops;
		size_t bn;
		Dwarf_Op *cops;
		size_t cn;
		if (at_rsp_plus(ops, n, UNWIND_SIGNAL_RIP) && dwarf_frame_cfa(f, &cops, &cn) == 0 &&
		    cn == 2 && cops[0].atom == DW_OP_breg7 && cops[0].number == UNWIND_SIGNAL_RSP &&
		    cops[1].atom == DW_OP_deref &&
		    dwarf_frame_register(f, REG_RBP, bmem, &bops, &bn) == 0 &&
		    at_rsp_plus(bops, bn, UNWIND_SIGNAL_RBP))
			return rule_row(UNWIND_RULE_SIGNAL);
		return rule_row(UNWIND_RULE_BAD);
	}
	if (!at_cfa_plus(ops, n, &off) || off != -8)
		return rule_row(UNWIND_RULE_BAD);

	struct unwind_row r = {0};
	if (dwarf_frame_cfa(f, &ops, &n) < 0)
		return rule_row(UNWIND_RULE_BAD);
	if (n == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == REG_RSP || ops[0].number == REG_RBP)) {
		int64_t cfa = (int64_t)ops[0].number2;
		if (cfa <= 0 || cfa % 8 || cfa / 8 > UINT16_MAX)
			return rule_row(UNWIND_RULE_BAD);
		r.rule = ops[0].number == REG_RSP ? UNWIND_RULE_RSP : UNWIND_RULE_RBP;
		r.cfa = (__u16)(cfa / 8);
	} else {
		int thr = plt_threshold(ops, n);
		if (thr < 0)
			return rule_row(UNWIND_RULE_BAD);
		r.rule = UNWIND_RULE_PLT;
		r.rbp = (__s8)thr;
		return r; /* a PLT entry saves no register */
	}

	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n) < 0)
		return rule_row(UNWIND_RULE_BAD);
	if (n == 0)
		return r; /* same value, or undefined: left as it is */
	if (!at_cfa_plus(ops, n, &off) || off % 8 || off / 8 < INT8_MIN || off / 8 > INT8_MAX)
		return rule_row(UNWIND_RULE_BAD);
	r.rule |= UNWIND_RBP_AT << 4;
	r.rbp = (__s8)(off / 8);
	return r;
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
	if ((r.rule & 15) == UNWIND_RULE_BAD)
		t->bad_rows++;
	if (!t->nrows)
		t->base = pc;
	if (pc - t->base > UINT32_MAX)
		return fail(c, -E2BIG, "the CFI spans more than 4 GiB");
	r.pc = (__u32)(pc - t->base);
	t->rows[t->nrows++] = r;
	return 0;
}

/* Asks libdw for each row of one FDE. */
static int compile_fde(struct compiler *c, const struct fde *d)
{
	uint64_t pc = d->start;
	int rc;

	for (unsigned i = 0; pc < d->end; i++) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr s, e;
		bool signal = false;
		struct unwind_row r;

		if (i == MAX_FDE_ROWS) {
			/* A hostile FDE: what remains is not walked. */
			return add_row(c, pc, rule_row(UNWIND_RULE_BAD));
		}
		if (dwarf_cfi_addrframe(c->cfi, pc, &f) < 0) {
			rc = add_row(c, pc, rule_row(UNWIND_RULE_BAD));
			free(f);
			return rc;
		}
		if (dwarf_frame_info(f, &s, &e, &signal) < 0 || e <= pc) {
			free(f);
			return add_row(c, pc, rule_row(UNWIND_RULE_BAD));
		}
		r = frame_row(f, signal || d->signal);
		free(f);
		if ((rc = add_row(c, pc, r)) < 0)
			return rc;
		pc = e < d->end ? e : d->end;
	}
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
	if (eh_frame) {
		c->cfi = dwarf_getcfi_elf(elf);
	} else {
		c->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		c->cfi = c->dwarf ? dwarf_getcfi(c->dwarf) : NULL;
	}
	if (!c->cfi)
		return fail(c, -EINVAL, "%s: libdw cannot read it: %s",
		            eh_frame ? ".eh_frame" : ".debug_frame", dwarf_errmsg(-1));
	return 0;
}

static void close_section(struct compiler *c, bool eh_frame)
{
	if (c->cfi && eh_frame)
		dwarf_cfi_end(c->cfi);
	if (c->dwarf)
		dwarf_end(c->dwarf); /* owns a .debug_frame cfi */
	c->cfi = NULL;
	c->dwarf = NULL;
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
		struct fde d = c->fdes[i];
		if (d.start < covered) {
			if (d.end <= covered) {
				c->t->fdes_skipped++; /* inside the previous one */
				continue;
			}
			d.start = covered; /* overlapping: the earlier one wins */
		} else if (covered && d.start > covered) {
			rc = add_row(c, covered, rule_row(UNWIND_RULE_NONE));
			if (rc < 0)
				goto out;
		}
		rc = compile_fde(c, &d);
		if (rc < 0)
			goto out;
		c->t->fdes++;
		covered = d.end;
	}
	rc = add_row(c, covered, rule_row(UNWIND_RULE_NONE));
out:
	close_section(c, eh_frame);
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
