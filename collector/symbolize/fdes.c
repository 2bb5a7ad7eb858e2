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
 *
 * Where the file's .eh_frame_hdr holds the search table linkers write
 * (FDE starts sorted, as 4-byte offsets from the header), that table is
 * searched instead and only the FDE found is read, so a module costs the
 * FDEs its samples hit rather than a walk and a sort of all of them; the
 * answer is the same as the list's (the table is checked sorted, with no
 * start twice, and each FDE read must start where its entry says).
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

#define HDR_TABLE_ENC 0x3b /* datarel | sdata4, the only one linkers write */
#define HDR_SCAN_BACK 16   /* unreadable FDEs skipped before the list serves */

static Elf_Scn *scn_named(Elf *elf, size_t shstrndx, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, sh) && sh->sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh->sh_name)) && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

static int32_t rd_s32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                 (uint32_t)p[3] << 24);
}

/* Sets m->fde_table from elf's .eh_frame_hdr when its table is of the
 * encoding linkers write, sorted with no start twice, and .eh_frame is
 * there to read the FDEs from; else leaves it NULL. */
static void hdr_load(struct module *m, Elf *elf, size_t shstrndx)
{
	GElf_Shdr hsh, esh;
	Elf_Scn *hscn = scn_named(elf, shstrndx, ".eh_frame_hdr", &hsh);
	Elf_Scn *escn = scn_named(elf, shstrndx, ".eh_frame", &esh);
	Elf_Data *hd = hscn ? elf_getdata(hscn, NULL) : NULL;
	Elf_Data *ed = escn ? elf_getdata(escn, NULL) : NULL;

	if (!hd || !hd->d_buf || hd->d_size < 4 || !ed || !ed->d_buf)
		return;
	const uint8_t *h = hd->d_buf, *end = h + hd->d_size, *p = h + 4;
	uint64_t eh_ptr, count;
	if (h[0] != 1 || h[3] != HDR_TABLE_ENC ||
	    !read_ptr(&p, end, h[1], hsh.sh_addr + 4, &eh_ptr) ||
	    !read_ptr(&p, end, h[2], hsh.sh_addr + (uint64_t)(p - h), &count) ||
	    eh_ptr != esh.sh_addr || count > (uint64_t)(end - p) / 8)
		return;
	for (uint64_t i = 1; i < count; i++)
		if (rd_s32(p + 8 * i) <= rd_s32(p + 8 * (i - 1)))
			return;
	m->fde_table = p;
	m->fde_table_n = (size_t)count;
	m->fde_hdr_addr = hsh.sh_addr;
	m->eh_addr = esh.sh_addr;
	m->eh_data = ed;
}

/* Reads table entry i's FDE into [*start, *end): false when it cannot be
 * read or would be left out of the list (fdes_load()'s rules). */
static bool hdr_fde(const struct module *m, const unsigned char *ident, size_t i, uint64_t *start,
                    uint64_t *end)
{
	const uint8_t *t = m->fde_table + 8 * i;
	uint64_t loc = m->fde_hdr_addr + (uint64_t)(int64_t)rd_s32(t);
	uint64_t at = m->fde_hdr_addr + (uint64_t)(int64_t)rd_s32(t + 4);
	Dwarf_CFI_Entry e, c;
	Dwarf_Off next;
	uint8_t enc;

	if (at < m->eh_addr || at - m->eh_addr >= m->eh_data->d_size ||
	    dwarf_next_cfi(ident, m->eh_data, true, at - m->eh_addr, &next, &e) != 0 ||
	    e.cie.CIE_id == LIBDW_CIE_ID ||
	    dwarf_next_cfi(ident, m->eh_data, true, e.fde.CIE_pointer, &next, &c) != 0 ||
	    c.cie.CIE_id != LIBDW_CIE_ID || !cie_encoding(&c.cie, &enc))
		return false;
	const uint8_t *p = e.fde.start, *fend = e.fde.end;
	uint64_t here = m->eh_addr + (uint64_t)(p - (const uint8_t *)m->eh_data->d_buf);
	uint64_t range;
	if (!read_ptr(&p, fend, enc, here, start) ||
	    !read_ptr(&p, fend, enc & PE_FORMAT, 0, &range) || !*start || !range ||
	    *start + range < *start || *start != loc)
		return false;
	*end = *start + range;
	return true;
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
	if (m->nfdes)
		qsort(m->fdes, m->nfdes, sizeof(*m->fdes), range_cmp);
}

/* The table's answer for vaddr as the list's would be; false when the
 * table cannot tell (the list must). */
static bool hdr_function_start(const struct module *m, uint64_t vaddr, uint64_t *out)
{
	Dwarf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(m->dmod, &bias);
	const unsigned char *ident = elf ? (const unsigned char *)elf_getident(elf, NULL) : NULL;
	size_t lo = 0, hi = m->fde_table_n;

	if (!ident)
		return false;
	while (lo < hi) { /* the first entry starting after vaddr */
		size_t mid = lo + (hi - lo) / 2;
		if (m->fde_hdr_addr + (uint64_t)(int64_t)rd_s32(m->fde_table + 8 * mid) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo, tried = 0; k-- > 0 && tried < HDR_SCAN_BACK; tried++) {
		uint64_t start, end;
		if (hdr_fde(m, ident, k, &start, &end)) {
			*out = vaddr < end ? start : 0;
			return true;
		}
	}
	if (lo > HDR_SCAN_BACK)
		return false;
	*out = 0; /* no readable FDE starts at or below vaddr */
	return true;
}

uint64_t sym_module_function_start(struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!m->fdes_loaded) {
		if (!m->fde_hdr_tried) {
			Dwarf_Addr bias = 0;
			Elf *elf = m->dmod ? dwfl_module_getelf(m->dmod, &bias) : NULL;
			size_t shstrndx;
			m->fde_hdr_tried = true;
			if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0)
				hdr_load(m, elf, shstrndx);
		}
		uint64_t start;
		if (m->fde_table && hdr_function_start(m, vaddr, &start))
			return start;
		fdes_load(m); /* the list from now on */
	}
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
