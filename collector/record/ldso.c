/*
 * ldso.c — finds where a uprobe on the dynamic loader tells that a
 * program's libraries are mapped.
 *
 * glibc's loader calls _dl_debug_state() (the "r_brk" hook debuggers
 * break on) after each change to the list of loaded objects, with
 * _r_debug.r_state RT_ADD or RT_DELETE before the change and
 * RT_CONSISTENT after it: once when a program's libraries are all mapped
 * and relocated (IFUNC resolvers and libc's early initialisation have run
 * in them; their constructors have not), and again around each dlopen
 * (before its relocation) and dlclose.  Both symbols are exported (.dynsym), so they are
 * found in Debian's stripped loader.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldso-internal.h"

/* The file offset of vaddr, through the PT_LOAD segment holding it. */
static int vaddr_to_offset(Elf *e, uint64_t vaddr, uint64_t *off)
{
	size_t n;
	if (elf_getphdrnum(e, &n) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int ldso_find(const char *interp, struct ldso_probe *p, char *err, size_t errlen)
{
	uint64_t state_at = 0, rdebug_at = 0;
	int rc = -ENOENT, fd;
	Elf *e = NULL;

	memset(p, 0, sizeof(*p));
	if (!realpath(interp, p->path)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", interp, strerror(-rc));
		return rc;
	}
	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", p->path, strerror(-rc));
		return rc;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && !strcmp(name, "_dl_debug_state"))
				state_at = sym.st_value;
			else if (name && !strcmp(name, "_r_debug"))
				rdebug_at = sym.st_value;
		}
	}
	if (!state_at || !rdebug_at) {
		snprintf(err, errlen, "%s: no _dl_debug_state or _r_debug in .dynsym", p->path);
	} else if (state_at % 16) {
		/* The probe finds the function from its pc rounded down to
		 * 16 bytes, whichever side of the breakpoint it reports. */
		snprintf(err, errlen, "%s: _dl_debug_state at %#llx is not 16-byte aligned",
		         p->path, (unsigned long long)state_at);
	} else if (vaddr_to_offset(e, state_at, &p->func_offset) < 0) {
		snprintf(err, errlen, "%s: _dl_debug_state at %#llx is in no loaded segment",
		         p->path, (unsigned long long)state_at);
	} else {
		p->rdebug_delta = (int64_t)(rdebug_at - state_at);
		rc = 0;
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}
