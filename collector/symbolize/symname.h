/*
 * symname.h — what every part of the collector that names a function from
 * an ELF symbol agrees on: a symbol version ("memcpy@@GLIBC_2.14",
 * "cfree@GLIBC_2.2.5") is not part of a function's name, while perf's PLT
 * mark ("malloc@plt") is.  The symbolizer (record, perf.data, gperftools
 * and legacy imports) and the perf script importer both use it, so that
 * one function has one name whatever the source.  Header only: it links
 * into neither library.
 */
#ifndef FLAMEFS_SYMNAME_H
#define FLAMEFS_SYMNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The length of name[0..n) without a trailing symbol version: "@VER" or
 * "@@VER" after a non-empty name, where VER is one or more of
 * [A-Za-z0-9_.] and is not "plt".  n when there is none. */
static inline size_t symname_unversioned_len(const char *name, size_t n)
{
	const char *at = n ? memchr(name, '@', n) : NULL;
	if (!at || at == name)
		return n;
	const char *v = at + 1, *end = name + n;
	if (v < end && *v == '@')
		v++;
	if (v == end || (end - v == 3 && memcmp(v, "plt", 3) == 0 && v == at + 1))
		return n;
	for (const char *c = v; c < end; c++) {
		bool ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		          (*c >= '0' && *c <= '9') || *c == '_' || *c == '.';
		if (!ok)
			return n;
	}
	return (size_t)(at - name);
}

#endif
