/*
 * names.c — the symbolizer's demangling and tidying symbol names, as stackcollapse-perf prints
 * them, and (for perf.data import) as perf script prints them; ELF symbols
 * lose their symbol versions here, whichever way they are named; and the
 * strings modules and processes share: the refcounted blocks of a program's
 * name and build id (sym_names_*) and "[unknown]".  A leaf: it calls no
 * other file of the symbolizer.  See
 * symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

const char sym_unknown_name[sizeof("[unknown]")] = "[unknown]";

/* ---- names -------------------------------------------------------------- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Drops Rust's legacy "::h0123456789abcdef" hash suffix, as perf does. */
static void strip_rust_hash(char *s)
{
	size_t n = strlen(s);
	if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
		return;
	for (size_t i = n - 16; i < n; i++)
		if (!is_hex(s[i]))
			return;
	s[n - 19] = '\0';
}

/* The length of raw without its "@plt" mark, if any. */
static size_t plt_base_len(const char *raw)
{
	size_t n = strlen(raw);
	return n > 4 && strcmp(raw + n - 4, "@plt") == 0 ? n - 4 : n;
}

/* Demangles raw[0..n) (C++ and Rust legacy: as perf does with `perf`, else
 * fully; Rust v0: rust_demangle()) and appends `suffix`; the name as is when it
 * is not mangled or does not demangle.  Tidied like stackcollapse-perf.
 * Returns a malloc'd string or NULL on ENOMEM. */
static char *name_join(const char *raw, size_t n, const char *suffix, bool perf)
{
	char *bare = strndup(raw, n), *dem = NULL, *out;

	if (!bare)
		return NULL;
	if (strncmp(bare, "_Z", 2) == 0 && perf) {
		/* perf's demangle_sym: no options, so no parameters and no
		 * return type ("wi::lts_p<...>", not "bool wi::lts_p<...>(...)") */
		dem = cplus_demangle(bare, DMGL_NO_OPTS);
	} else if (strncmp(bare, "_Z", 2) == 0) {
		int status = 0;
		dem = __cxa_demangle(bare, NULL, NULL, &status);
		if (status != 0) {
			free(dem);
			dem = NULL;
		}
	} else if (strncmp(bare, "_R", 2) == 0) {
		/* Options 0: no crate disambiguators, as perf prints them. */
		dem = rust_demangle(bare, 0);
	}
	if (dem && strncmp(bare, "_Z", 2) == 0)
		strip_rust_hash(dem);
	/* tidied before the suffix, which an argument list cut would take */
	char *name = dem ? dem : bare;
	name[import_tidy(name, strlen(name))] = '\0';
	if (asprintf(&out, "%s%s", name, suffix) < 0)
		out = NULL;
	free(dem);
	free(bare);
	return out;
}

char *symbolize_name(const char *raw)
{
	return name_join(raw, strlen(raw), "", false);
}

/* ---- ELF symbols --------------------------------------------------------- */

char *symbolize_symbol(const char *raw, bool perf)
{
	size_t n = import_unversioned_len(raw, strlen(raw));
	if (raw[n]) /* "memcpy@@GLIBC_2.14": the version is not part of the name */
		return name_join(raw, n, "", perf);
	size_t base = plt_base_len(raw); /* "NAME@plt": NAME is demangled */
	return name_join(raw, base, raw + base, perf);
}

void symbolize_set_perf_names(struct symbolize *s, bool on)
{
	s->perf_names = on;
}

void symbolize_set_local_debug(struct symbolize *s, bool on)
{
	s->local_debug = on;
}

/* ---- shared name strings -------------------------------------------------- */

struct proc_names *sym_names_new(const char *binary, size_t blen, const uint8_t *bid, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	struct proc_names *x = malloc(sizeof(*x) + blen + 1 + 2 * n + 1);

	if (!x)
		return NULL;
	x->refs = 1;
	memcpy(x->data, binary, blen);
	x->data[blen] = '\0';
	char *h = x->data + blen + 1;
	for (size_t i = 0; i < n; i++) {
		h[2 * i] = digits[bid[i] >> 4];
		h[2 * i + 1] = digits[bid[i] & 15];
	}
	h[2 * n] = '\0';
	x->binary = x->data;
	x->build_id_hex = h;
	return x;
}

struct proc_names *sym_names_get(struct proc_names *names)
{
	names->refs++;
	return names;
}

void sym_names_put(struct proc_names *names)
{
	if (names && --names->refs == 0)
		free(names);
}
