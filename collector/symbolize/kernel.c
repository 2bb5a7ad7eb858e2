/*
 * kernel.c — the symbolizer's kernel addresses, named by the kernel through ksym.bpf.c, or
 * from /proc/kallsyms.  See
 * symbolize-internal.h for how the parts fit.
 */
#include "symbolize-internal.h"

static int ksym_cmp(const void *a, const void *b)
{
	const struct kallsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int kernel_load(struct symbolize *s)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t cap = 0, ncap = 0, nlen = 0;
	char *line = NULL;
	size_t lcap = 0;
	int rc = 0;

	s->kernel_tried = true;
	if (!f)
		return 0; /* no kallsyms: kernel frames stay unknown */
	while (getline(&line, &lcap, f) > 0) {
		/* "ffffffff81000000 T name\t[module]": text symbols only. */
		uint64_t addr;
		const char *c = line;
		if (!scan_hex(&c, &addr) || !addr || !scan_char(&c, ' '))
			continue;
		char type = *c;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		c++;
		if (!scan_char(&c, ' '))
			continue;
		const char *name = c;
		size_t len = strcspn(name, "\t\n ");
		if (s->nksyms == cap) {
			cap = cap ? cap * 2 : 65536;
			struct kallsym *n = realloc(s->ksyms, cap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			s->ksyms = n;
		}
		if (nlen + len + 1 > ncap) {
			ncap = ncap ? ncap * 2 : (1u << 22);
			while (ncap < nlen + len + 1)
				ncap *= 2;
			char *n = realloc(s->knames, ncap);
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			s->knames = n;
		}
		memcpy(s->knames + nlen, name, len);
		s->knames[nlen + len] = '\0';
		s->ksyms[s->nksyms++] = (struct kallsym){addr, nlen};
		nlen += len + 1;
	}
	free(line);
	fclose(f);
	if (rc < 0) {
		s->nksyms = 0;
		return rc;
	}
	/* The core kernel's symbols come sorted; modules' may not. */
	for (size_t i = 1; i < s->nksyms; i++) {
		if (s->ksyms[i].addr < s->ksyms[i - 1].addr) {
			qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
			break;
		}
	}
	return 0;
}

static size_t kcache_slot(const struct symbolize *s, uint64_t a)
{
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 40) & (s->kcache_cap - 1);
	while (s->kcache[i].addr && s->kcache[i].addr != a)
		i = (i + 1) & (s->kcache_cap - 1);
	return i;
}

static const struct kname *kcache_find(const struct symbolize *s, uint64_t a)
{
	if (!s->kcache_cap)
		return NULL;
	const struct kname *e = &s->kcache[kcache_slot(s, a)];
	return e->addr ? e : NULL;
}

/* Copies a name into the never-moving chunks. */
static const char *kname_copy(struct symbolize *s, const char *name, size_t len)
{
	struct kchunk *c = s->kchunks;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = s->kchunks;
		s->kchunks = c;
	}
	char *d = c->data + c->used;
	memcpy(d, name, len);
	d[len] = '\0';
	c->used += len + 1;
	return d;
}

static int kcache_add(struct symbolize *s, uint64_t a, const char *name, size_t len)
{
	if ((s->kcache_n + 1) * 2 > s->kcache_cap) {
		size_t ocap = s->kcache_cap, ncap = ocap ? ocap * 2 : 4096;
		struct kname *old = s->kcache, *n = calloc(ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->kcache = n;
		s->kcache_cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].addr)
				s->kcache[kcache_slot(s, old[i].addr)] = old[i];
		free(old);
	}
	struct kname *e = &s->kcache[kcache_slot(s, a)];
	if (e->addr)
		return 0;
	e->name = NULL;
	e->len = 0;
	if (name) {
		e->name = kname_copy(s, name, len);
		if (!e->name)
			return -ENOMEM;
		e->len = len;
	}
	e->addr = a;
	s->kcache_n++;
	return 0;
}

/* Names lookup addresses as[0..n) (n <= KSYM_BATCH) through ksym and
 * caches them.  When the BPF lookup fails, ksym is given up for good and
 * /proc/kallsyms takes over. */
static int kernel_resolve(struct symbolize *s, const uint64_t *as, size_t n)
{
	int rc = ksym_lookup(s->ksym, as, n);

	if (rc < 0) {
		ksym_free(s->ksym);
		s->ksym = NULL;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		const char *name = ksym_name(s->ksym, i, &len);
		rc = kcache_add(s, as[i], name, len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void kernel_open(struct symbolize *s)
{
	s->ksym_tried = true;
	if (ksym_open(&s->ksym) < 0)
		s->ksym = NULL; /* /proc/kallsyms then */
}

/* The address a kernel frame is looked up at: a return address's call
 * instruction. */
static uint64_t kernel_lookup_addr(uint64_t addr, bool caller)
{
	return caller && addr ? addr - 1 : addr;
}

/* symbolize_kernel_prefetch() with ips[1..n) looked up as return
 * addresses when `callers`, else as they are. */
static int kernel_prefetch(struct symbolize *s, const uint64_t *ips, size_t n, bool callers)
{
	uint64_t q[KSYM_BATCH];
	size_t nq = 0;
	int rc;

	if (!s->ksym_tried)
		kernel_open(s);
	for (size_t i = 0; i < n && s->ksym; i++) {
		uint64_t a = kernel_lookup_addr(ips[i], callers && i > 0);
		bool dup = !a || kcache_find(s, a);
		for (size_t j = 0; j < nq && !dup; j++)
			dup = q[j] == a;
		if (dup)
			continue;
		q[nq++] = a;
		if (nq == KSYM_BATCH) {
			rc = kernel_resolve(s, q, nq);
			if (rc < 0)
				return rc;
			nq = 0;
		}
	}
	if (nq && s->ksym)
		return kernel_resolve(s, q, nq);
	return 0;
}

int symbolize_kernel_prefetch(struct symbolize *s, const uint64_t *ips, size_t n)
{
	return kernel_prefetch(s, ips, n, true);
}

int symbolize_kernel_prefetch_as_is(struct symbolize *s, const uint64_t *ips, size_t n)
{
	return kernel_prefetch(s, ips, n, false);
}

int symbolize_kernel(struct symbolize *s, uint64_t addr, bool caller, struct store_frame *f)
{
	static const char unknown_kernel[] = "[" KERNEL_MODULE "]";
	uint64_t a = kernel_lookup_addr(addr, caller);
	int rc;

	memset(f, 0, sizeof(*f));
	f->module = KERNEL_MODULE;
	f->module_len = sizeof(KERNEL_MODULE) - 1;
	f->kind = STORE_FRAME_KERNEL;
	f->name = unknown_kernel;
	f->name_len = sizeof(unknown_kernel) - 1;
	if (!s->ksym_tried)
		kernel_open(s);
	if (s->ksym && a) {
		const struct kname *e = kcache_find(s, a);
		if (!e) {
			rc = kernel_resolve(s, &a, 1);
			if (rc < 0)
				return rc;
			e = kcache_find(s, a);
		}
		if (e) {
			if (e->name) {
				f->name = e->name;
				f->name_len = e->len;
			}
			return 0;
		}
		/* ksym failed just now: /proc/kallsyms below. */
	}
	if (!s->kernel_tried) {
		rc = kernel_load(s);
		if (rc < 0)
			return rc;
	}
	size_t lo = 0, hi = s->nksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ksyms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		f->name = s->knames + s->ksyms[lo - 1].name;
		f->name_len = strlen(f->name);
	}
	return 0;
}
