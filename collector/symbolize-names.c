/*
 * symbolize-names.c — the symbolizer's demangling and tidying symbol names, as stackcollapse-perf prints
 * them, and (for perf.data import) as perf script prints them.  See
 * symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

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

char *symbolize_name(const char *raw)
{
	char *out = NULL;

	if (strncmp(raw, "_Z", 2) == 0) {
		int status = 0;
		out = __cxa_demangle(raw, NULL, NULL, &status);
		if (status != 0) {
			free(out);
			out = NULL;
		} else {
			strip_rust_hash(out);
		}
	} else if (strncmp(raw, "_R", 2) == 0) {
		/* Options 0: no crate disambiguators, as perf prints them. */
		out = rust_demangle(raw, 0);
	}
	if (!out)
		out = strdup(raw);
	if (!out)
		return NULL;
	out[import_tidy(out, strlen(out))] = '\0';
	return out;
}

/* ---- names exactly as perf prints them ---------------------------------- */

char *symbolize_name_perf(const char *raw)
{
	const char *at = strchr(raw, '@');
	size_t base = at && at != raw ? (size_t)(at - raw) : strlen(raw);
	char *bare = strndup(raw, base), *dem = NULL, *out;

	if (!bare)
		return NULL;
	if (strncmp(bare, "_Z", 2) == 0) {
		/* perf's demangle_sym: no options, so no parameters and no
		 * return type ("wi::lts_p<...>", not "bool wi::lts_p<...>(...)") */
		dem = cplus_demangle(bare, DMGL_NO_OPTS);
		if (dem)
			strip_rust_hash(dem);
	} else if (strncmp(bare, "_R", 2) == 0) {
		dem = rust_demangle(bare, 0);
	}
	const char *name = dem ? dem : bare;
	if (asprintf(&out, "%s%s", name, raw + base) < 0)
		out = NULL;
	free(dem);
	free(bare);
	if (out)
		out[import_tidy(out, strlen(out))] = '\0';
	return out;
}

void symbolize_set_perf_names(struct symbolize *s, bool on)
{
	s->perf_names = on;
}
