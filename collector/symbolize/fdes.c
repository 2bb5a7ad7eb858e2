/*
 * fdes.c — where the functions of a module start when it has no symbols:
 * the ranges of the FDEs of its .eh_frame, which a stripped file keeps
 * (the unwinder needs them), listed once per module with libdw's
 * dwarf_next_cfi and searched by address.  An unnamed frame is kept at
 * its function's start, so that a stripped function's addresses make one
 * frame, as a named function's do, and the name found later for that
 * start names all of them.  Only the pointer encodings compilers and
 * linkers write on x86-64 are read (absolute and pc-relative, fixed
 * sizes); an FDE in any other is left out, and its addresses are kept as
 * they are.
 */
#include "symbolize-internal.h"

#define MAX_CIES_SEEN 256

#define PE_OMIT   0xff
#define PE_FORMAT 0x0f
#define PE_APPLY  0x70
#define PE_PCREL  0x10

/* One pointer of encoding enc at *p (ELF address `here`); false when the
 * encoding is not understood or the bytes run out. */
static bool read_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t here, uint64_t *v)
{
	size_t n;
	bool sign = false;
	uint64_t u = 0;

	if (enc == PE_OMIT || (enc & 0x80))
		return false;
	switch (enc & PE_FORMAT) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: n = 8; break;
	case 0x03: n = 4; break;
	case 0x0b: n = 4, sign = true; break;
	case 0x02: n = 2; break;
	case 0x0a: n = 2, sign = true; break;
	default: return false;
	}
	if ((size_t)(end - *p) < n)
		return false;
	for (size_t i = 0; i < n; i++)
		u |= (uint64_t)(*p)[i] << (8 * i);
	*p += n;
	if (sign && n < 8 && (u >> (8 * n - 1)) & 1)
		u |= ~0ull << (8 * n);
	switch (enc & PE_APPLY) {
	case 0: break;
	case PE_PCREL: u += here; break;
	default: return false;
	}
	*v = u;
	return true;
}

/* The FDE pointer encoding a CIE's augmentation names (absptr without
 * one); false for an augmentation not understood. */
static bool cie_encoding(const Dwarf_CIE *ci, uint8_t *enc)
{
	const char *a = ci->augmentation;
	const uint8_t *d = ci->augmentation_data;
	const uint8_t *end = d ? d + ci->augmentation_data_size : NULL;

	*enc = 0;
	if (!a || !a[0])
		return true;
	if (a[0] != 'z')
		return false;
	for (a++; *a; a++) {
		uint64_t ignored;
		switch (*a) {
		case 'R':
			if (!d || d >= end)
				return false;
			*enc = *d++;
			break;
		case 'L':
			if (!d || d >= end)
				return false;
			d++;
			break;
		case 'P':
			if (!d || d >= end)
				return false;
			uint8_t penc = *d++;
			if (!read_ptr(&d, end, penc & PE_FORMAT, 0, &ignored))
				return false;
			break;
		case 'S':
		case 'B':
		case 'G': break;
		default: return false;
		}
	}
	return true;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Lists the FDEs of m's .eh_frame into m->fdes (sorted by start). */
static void fdes_load(struct module *m)
{
	Dwarf_Addr bias = 0;
	Elf *elf = m->dmod ? dwfl_module_getelf(m->dmod, &bias) : NULL;
	const unsigned char *ident = elf ? (const unsigned char *)elf_getident(elf, NULL) : NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf_Data *data = NULL;
	GElf_Shdr sh;
	struct {
		Dwarf_Off off;
		uint8_t enc;
		bool ok;
	} cies[MAX_CIES_SEEN];
	size_t ncies = 0, cap = 0;

	m->fdes_loaded = true;
	if (!ident || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			data = elf_getdata(scn, NULL);
			break;
		}
	}
	if (!data || !data->d_buf)
		return;
	for (Dwarf_Off off = 0, next;; off = next) {
		Dwarf_CFI_Entry e;
		int rc = dwarf_next_cfi(ident, data, true, off, &next, &e);
		if (rc != 0 || next <= off)
			break; /* the end, or damage: what was listed stays */
		if (e.cie.CIE_id == LIBDW_CIE_ID) {
			if (ncies < MAX_CIES_SEEN) {
				cies[ncies].off = off;
				cies[ncies].ok = cie_encoding(&e.cie, &cies[ncies].enc);
				ncies++;
			}
			continue;
		}
		size_t k = 0;
		while (k < ncies && cies[k].off != e.fde.CIE_pointer)
			k++;
		const uint8_t *p = e.fde.start, *end = e.fde.end;
		uint64_t here = sh.sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);
		uint64_t start, range;
		if (k == ncies || !cies[k].ok || !read_ptr(&p, end, cies[k].enc, here, &start) ||
		    !read_ptr(&p, end, cies[k].enc & PE_FORMAT, 0, &range) || !start || !range ||
		    start + range < start)
			continue;
		if (m->nfdes == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct fde_range *n =
			        ncap < (1u << 24) ? realloc(m->fdes, ncap * sizeof(*n)) : NULL;
			if (!n)
				break; /* the ones listed still serve */
			m->fdes = n;
			cap = ncap;
		}
		m->fdes[m->nfdes++] = (struct fde_range){start, start + range};
	}
	qsort(m->fdes, m->nfdes, sizeof(*m->fdes), range_cmp);
}

uint64_t sym_module_function_start(struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!m->fdes_loaded)
		fdes_load(m);
	hi = m->nfdes;
	while (lo < hi) { /* the first FDE starting after vaddr */
		size_t mid = lo + (hi - lo) / 2;
		if (m->fdes[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* FDEs do not overlap in a sane file; in another, the one that
	 * starts last before vaddr and covers it */
	return lo && vaddr < m->fdes[lo - 1].end ? m->fdes[lo - 1].start : 0;
}
