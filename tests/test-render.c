/*
 * test-render.c — unit tests for the flame.svg and callgrind renderers
 * (fs/view/flame.c, fs/view/callgrind.c).
 *
 * flame.svg: every frame's fg:x/fg:w are its offset and total weight,
 * its rect's x and width are those scaled to 1180 pixels, exactly the
 * nodes of at least 0.1% of the total are drawn (with "all" and the
 * ancestors below a subtree's graph), names are escaped for XML (markup
 * characters, controls, invalid UTF-8), and a diff is coloured red where
 * a frame's share grew and blue where it shrank.
 *
 * callgrind: read back the way callgrind_annotate --inclusive=yes reads
 * it, every function's self cost and inclusive cost (the sum of its
 * incoming calls) equal the function view's self and total, on stacks
 * full of recursion; the binary's self plus outgoing calls is the total.
 */
#include "view-fixture.h"

/* ---- flame.svg ------------------------------------------------------------ */

struct svgframe {
	uint64_t x, w;
	double px, pw;
	char name[256];
	char fill[32];
	bool seen;
};

static const char *attr(const char *p, const char *name, char *out, size_t cap)
{
	char key[32];
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *a = strstr(p, key);
	if (!a)
		return NULL;
	a += strlen(key);
	const char *e = strchr(a, '"');
	snprintf(out, cap, "%.*s", (int)(e - a), a);
	return out;
}

static int parse_svg(const char *svg, struct svgframe *fr, int cap)
{
	int n = 0;
	const char *p = strstr(svg, "<g id=\"frames\">");

	while (p && (p = strstr(p, "<g><title>")) && n < cap) {
		struct svgframe *f = &fr[n++];
		char v[64];
		p += 10;
		const char *end = strstr(p, "</title>");
		const char *paren = end;
		while (paren > p && !(paren[0] == ' ' && paren[1] == '('))
			paren--;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(paren - p), p);
		const char *rect = strstr(end, "<rect");
		f->x = strtoull(attr(rect, "fg:x", v, sizeof(v)), NULL, 10);
		f->w = strtoull(attr(rect, "fg:w", v, sizeof(v)), NULL, 10);
		f->px = strtod(attr(rect, "x", v, sizeof(v)), NULL);
		f->pw = strtod(attr(rect, "width", v, sizeof(v)), NULL);
		attr(rect, "fill", f->fill, sizeof(f->fill));
		f->seen = false;
	}
	return n;
}

/* XML text of a name, by a rule of its own: markup characters as
 * entities, controls and bytes that are not UTF-8 as U+FFFD (the test's
 * names hold no multi-byte sequence but valid two-byte ones). */
static void xml(const char *name, char *out, size_t cap)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p && o + 8 < cap; p++) {
		const char *rep = *p == '<'   ? "&lt;"
		                  : *p == '>' ? "&gt;"
		                  : *p == '&' ? "&amp;"
		                  : *p == '"' ? "&quot;"
		                              : NULL;
		bool two = (*p & 0xe0) == 0xc0 && (p[1] & 0xc0) == 0x80;
		if (rep) {
			o += (size_t)snprintf(out + o, cap - o, "%s", rep);
		} else if (two) {
			out[o++] = (char)p[0];
			out[o++] = (char)p[1];
			p++;
		} else if (*p < 0x20 || *p >= 0x80) {
			o += (size_t)snprintf(out + o, cap - o, "\xef\xbf\xbd");
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
}

/* Marks the drawn frame (name, x, w); fails if there is none. */
static void expect_frame(struct svgframe *fr, int n, const char *raw, uint64_t x, uint64_t w,
                         const char *what)
{
	char name[768];

	xml(raw, name, sizeof(name));
	for (int i = 0; i < n; i++)
		if (!fr[i].seen && fr[i].x == x && fr[i].w == w && strcmp(fr[i].name, name) == 0) {
			fr[i].seen = true;
			return;
		}
	CHECKF(0, "%s: no frame %s at %" PRIu64 " width %" PRIu64, what, name, x, w);
}

/* Walks the subtree as the graph should draw it. */
static void expect_subtree(const struct view_tree *t, uint32_t node, uint64_t x, uint64_t total,
                           struct svgframe *fr, int n, const char *what)
{
	struct view_counts c;
	size_t len;
	char name[256];

	view_node_counts(t, node, &c);
	if (node != VIEW_ROOT) {
		const char *p = view_node_name(t, node, &len);
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		expect_frame(fr, n, name, x, c.total_weight, what);
	}
	for (uint32_t i = 0; i < view_node_child_count(t, node); i++) {
		uint32_t k = view_node_child(t, node, i);
		view_node_counts(t, k, &c);
		if (c.total_weight > 0 && (double)c.total_weight >= 0.001 * (double)total)
			expect_subtree(t, k, x, total, fr, n, what);
		x += c.total_weight;
	}
}

static void check_svg(const struct view_tree *t, uint32_t node, const char *what)
{
	static struct svgframe fr[8192];
	char *svg = fx_render(view_render_flame_svg, t, node);
	int n = parse_svg(svg, fr, 8192);
	struct view_counts c;

	view_node_counts(t, node, &c);
	CHECKF(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "</svg>\n"), "%s: an SVG", what);
	expect_frame(fr, n, "all", 0, c.total_weight, what);
	uint32_t chain[256], depth = 0;
	for (uint32_t a = node; a != VIEW_ROOT; a = view_node_parent(t, a))
		chain[depth++] = a;
	for (uint32_t d = depth; d-- > 1;) {
		size_t len;
		const char *p = view_node_name(t, chain[d], &len);
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		expect_frame(fr, n, name, 0, c.total_weight, what);
	}
	expect_subtree(t, node, 0, c.total_weight, fr, n, what);
	for (int i = 0; i < n; i++) {
		CHECKF(fr[i].seen, "%s: frame %s drawn but not in the tree", what, fr[i].name);
		double px = 10 + (double)fr[i].x / (double)c.total_weight * 1180;
		double pw = (double)fr[i].w / (double)c.total_weight * 1180;
		CHECKF(fr[i].px > px - 0.051 && fr[i].px < px + 0.051 && fr[i].pw > pw - 0.051 &&
		               fr[i].pw < pw + 0.051,
		       "%s: %s at %.1f width %.1f, want %.2f %.2f", what, fr[i].name, fr[i].px,
		       fr[i].pw, px, pw);
	}
	free(svg);
}

/* ---- callgrind ------------------------------------------------------------- */

#define MAXF 4096

struct cgread {
	char names[MAXF][128];
	uint64_t self[MAXF], in[MAXF], out[MAXF];
	bool called[MAXF];
	uint64_t summary, totals;
};

static void read_callgrind(const char *text, struct cgread *g)
{
	char *copy = strdup(text), *save = NULL;
	int fn = -1, cfn = -1;
	bool call = false;

	memset(g, 0, sizeof(*g));
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int id;
		if ((sscanf(l, "fn=(%d)", &id) == 1 || sscanf(l, "cfn=(%d)", &id) == 1) && id > 0 &&
		    id < MAXF) {
			char *name = strchr(l, ')') + 1;
			/* Names are escaped as text files escape them: the
			 * function view's name is what they decode to. */
			struct view_buf raw = {0};
			if (*name == ' ') {
				CHECKF(!strpbrk(name, "\x01\x7f\x1b\r"), "raw control byte in %s",
				       name);
				CHECKF(view_text_unescape(name + 1, strlen(name + 1), &raw) == 0,
				       "callgrind name %s does not decode", name + 1);
				snprintf(g->names[id], sizeof(g->names[id]), "%s",
				         raw.data ? raw.data : "");
			}
			view_buf_free(&raw);
			if (l[0] == 'f')
				fn = id;
			else
				cfn = id;
		} else if (strncmp(l, "calls=", 6) == 0) {
			call = true;
		} else if (l[0] >= '0' && l[0] <= '9') {
			unsigned long long line, w, s;
			CHECKF(sscanf(l, "%llu %llu %llu", &line, &w, &s) == 3, "cost line %s", l);
			if (call) {
				g->in[cfn] += w;
				g->out[fn] += w;
				g->called[cfn] = true;
				call = false;
			} else {
				g->self[fn] += w;
			}
		} else if (strncmp(l, "summary: ", 9) == 0) {
			g->summary = strtoull(l + 9, NULL, 10);
		} else if (strncmp(l, "totals: ", 8) == 0) {
			g->totals = strtoull(l + 8, NULL, 10);
		}
	}
	free(copy);
}

static void check_callgrind(const struct view_tree *t, const char *what)
{
	static struct cgread g;
	struct view_functions *fx;
	char *text = fx_render(view_render_callgrind, t, fx_binary(t));
	struct view_counts c;

	read_callgrind(text, &g);
	view_node_counts(t, fx_binary(t), &c);
	CHECKF(g.summary == c.total_weight && g.totals == c.total_weight, "%s: summary", what);
	if (view_functions_build(t, fx_binary(t), &fx) < 0)
		fx_die("functions", ENOMEM);
	int seen = 0;
	for (int id = 1; id < MAXF; id++) {
		if (!g.names[id][0])
			continue;
		seen++;
		uint32_t i = view_functions_find(fx, g.names[id], strlen(g.names[id]));
		if (i == VIEW_NONE) { /* the binary */
			CHECKF(!g.called[id] && g.self[id] + g.out[id] == c.total_weight,
			       "%s: %s is the root", what, g.names[id]);
			continue;
		}
		struct view_counts fc;
		view_functions_counts(fx, i, &fc);
		CHECKF(g.self[id] == fc.self_weight, "%s: self of %s %" PRIu64 " want %" PRIu64,
		       what, g.names[id], g.self[id], fc.self_weight);
		CHECKF(g.in[id] == fc.total_weight, "%s: inclusive of %s %" PRIu64 " want %" PRIu64,
		       what, g.names[id], g.in[id], fc.total_weight);
	}
	CHECKF((uint32_t)seen == view_functions_count(fx) + 1, "%s: %d functions", what, seen);
	view_functions_free(fx);
	free(text);
}

/* Adds lines of flamefs's own escaped folded form ("a;b\\x3bc W"): each
 * frame is decoded (view_text_unescape()), so names may hold any byte. */
static void add_escaped(struct store *s, const char *binary, const char *version, const char *lines)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, binary, version, "samples", "count", NULL};
	uint32_t series;
	int r;

	if (!b)
		fx_die("store_batch_new", ENOMEM);
	if ((r = store_batch_series(b, &k, &series)) < 0)
		fx_die("store_batch_series", r);
	for (const char *p = lines; *p;) {
		const char *nl = strchr(p, '\n'), *sp = strrchr(p, ' ');
		while (sp > nl)
			sp--;
		while (*sp != ' ')
			sp--;
		uint32_t node = STORE_ROOT_NODE, frame;
		for (const char *f = p; f < sp;) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			const char *fe = semi ? semi : sp;
			struct view_buf raw = {0};
			if (view_text_unescape(f, (size_t)(fe - f), &raw) < 0)
				fx_die("view_text_unescape", EINVAL);
			struct store_frame fr = {.name = raw.data, .name_len = raw.len};
			if ((r = store_batch_frame(b, &fr, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				fx_die("store_batch_node", r);
			view_buf_free(&raw);
			f = fe + 1;
		}
		if ((r = store_batch_add(b, series, 1795000000, node, 1, strtoull(sp, NULL, 10))) <
		    0)
			fx_die("store_batch_add", r);
		p = nl + 1;
	}
	if ((r = store_batch_commit(b)) < 0)
		fx_die("store_batch_commit", r);
	store_batch_free(b);
}

/* Names with newline, CR, ';', ESC, backslash and a C1 control: folded
 * writes them escaped, one line per stack, in bytewise order of the
 * escaped lines (a\\x0ab sorts after a0, a\nb before), of exactly the
 * size view_folded_size() says; top, callgrind and name hold no control
 * byte.  And a rendering past its buffer's cap fails with -EFBIG. */
static void check_escaped_files(struct store *s)
{
	static const char lines[] = "main;evil\\x0aapp\\x3bmain 999999 5\n"
	                            "main;cr\\x0dret 3\n"
	                            "main;semi\\x3bcolon;x 7\n"
	                            "main;semj 2\n"
	                            "main;esc\\x1b[31m 4\n"
	                            "main;back\\x5cslash;a\\x0ab 1\n"
	                            "main;c1\\xc2\\x9b 6\n"
	                            "main;a\\x0ab 8\n"
	                            "main;a0 9\n"
	                            "main;a 10\n"
	                            "main 11\n";
	char *stacks[16];
	uint64_t w[16];
	int n = 0;

	add_escaped(s, "hostile", "1", lines);
	for (const char *p = lines; *p; n++) {
		const char *nl = strchr(p, '\n'), *sp = nl;
		while (*sp != ' ')
			sp--;
		if (asprintf(&stacks[n], "hostile;%.*s", (int)(sp - p), p) < 0)
			fx_die("asprintf", ENOMEM);
		w[n] = strtoull(sp, NULL, 10);
		p = nl + 1;
	}
	char *want = fx_merge_lines(stacks, w, n);
	struct view_tree *t = fx_tree(s, "hostile", "1");
	char *folded = fx_render(view_render_folded, t, VIEW_ROOT);
	CHECKF(strcmp(folded, want) == 0, "escaped folded:\n%s\nwant:\n%s", folded, want);
	CHECKF(view_folded_size(t, VIEW_ROOT) == strlen(folded), "folded size %zu, rendered %zu",
	       (size_t)view_folded_size(t, VIEW_ROOT), strlen(folded));
	struct view_counts c;
	view_node_counts(t, VIEW_ROOT, &c);
	CHECKF(fx_folded_sum(folded) == c.total_weight && c.total_weight == 66,
	       "folded sums to total");
	uint32_t m = view_node_find_child(t, fx_binary(t), "main", 4);
	for (uint32_t i = 0; m != VIEW_NONE && i < view_node_child_count(t, m); i++) {
		uint32_t k = view_node_child(t, m, i);
		char *sub = fx_render(view_render_folded, t, k);
		CHECKF(view_folded_size(t, k) == strlen(sub), "folded size of child %u", i);
		char *name = fx_render(view_render_name, t, k);
		CHECKF(strchr(name, '\n') == name + strlen(name) - 1, "name is one line: %s", name);
		free(name);
		free(sub);
	}
	view_render_fn text[] = {view_render_top, view_render_callgrind, view_render_timeline,
	                         view_render_folded};
	for (size_t f = 0; f < sizeof(text) / sizeof(text[0]); f++) {
		char *out = fx_render(text[f], t, VIEW_ROOT);
		for (const unsigned char *q = (const unsigned char *)out; *q; q++)
			CHECKF((*q >= 0x20 && *q != 0x7f) || *q == '\n',
			       "renderer %zu writes a raw control byte 0x%02x", f, *q);
		CHECKF(!strstr(out, "\xc2\x9b"), "renderer %zu writes a raw C1 control", f);
		free(out);
	}
	char *top = fx_render(view_render_top, t, VIEW_ROOT);
	int top_lines = 0;
	for (const char *q = top; *q; q++)
		top_lines += *q == '\n';
	CHECKF(top_lines == 2 + 12, "top: 2 header lines and 12 functions, got %d lines",
	       top_lines);
	free(top);

	/* The cap: folded refused before a byte is allocated, the others
	 * when they pass it. */
	struct view_buf b = {.max = strlen(folded) - 1};
	CHECKF(view_render_folded(t, VIEW_ROOT, &b) == -EFBIG && !b.data, "folded past the cap");
	b.max = strlen(folded);
	CHECKF(view_render_folded(t, VIEW_ROOT, &b) == 0 && b.len == strlen(folded),
	       "folded at the cap");
	view_buf_free(&b);
	view_render_fn capped[] = {view_render_flame_svg, view_render_pprof, view_render_callgrind,
	                           view_render_top};
	for (size_t f = 0; f < sizeof(capped) / sizeof(capped[0]); f++) {
		b.max = 64;
		CHECKF(capped[f](t, VIEW_ROOT, &b) == -EFBIG && b.len <= 64,
		       "renderer %zu past 64 bytes", f);
		view_buf_free(&b);
	}
	/* The callers and callees trees are derived trees: their folded is
	 * escaped as well. */
	struct view_functions *fx;
	if (view_functions_build(t, fx_binary(t), &fx) == 0) {
		for (uint32_t i = 0; i < view_functions_count(fx); i++) {
			for (int callers = 0; callers < 2; callers++) {
				struct view_tree *ft;
				if ((callers ? view_functions_callers(fx, i, &ft)
				             : view_functions_callees(fx, i, &ft)) < 0) {
					CHECKF(false, "callers/callees of function %u", i);
					continue;
				}
				char *ff = fx_render(view_render_folded, ft, VIEW_ROOT);
				CHECKF(view_folded_size(ft, VIEW_ROOT) == strlen(ff),
				       "folded size of a derived tree");
				for (const unsigned char *q = (const unsigned char *)ff; *q; q++)
					CHECKF((*q >= 0x20 && *q != 0x7f) || *q == '\n',
					       "derived folded: raw byte 0x%02x", *q);
				free(ff);
				view_tree_free(ft);
			}
		}
		view_functions_free(fx);
	}

	/* regressions: version 2 grew the stack below the newline name and
	 * the C1 one; each is one line, its path escaped as folded's. */
	add_escaped(s, "hostile", "2",
	            "main;evil\\x0aapp\\x3bmain 999999 50\nmain;c1\\xc2\\x9b 60\nmain 11\n");
	struct view_tree *t2 = fx_tree(s, "hostile", "2"), *d;
	if (view_diff_build(t, fx_binary(t), t2, fx_binary(t2), &d) == 0) {
		char *reg = fx_render(view_render_regressions, d, VIEW_ROOT);
		CHECKF(strstr(reg, "% hostile;main;evil\\x0aapp\\x3bmain 999999\n") &&
		               strstr(reg, "% hostile;main;c1\\xc2\\x9b\n"),
		       "regressions with escaped paths:\n%s", reg);
		for (const unsigned char *q = (const unsigned char *)reg; *q; q++)
			CHECKF((*q >= 0x20 && *q != 0x7f) || *q == '\n',
			       "regressions: raw byte 0x%02x", *q);
		char *dfold = fx_render(view_render_folded, d, VIEW_ROOT);
		CHECKF(view_folded_size(d, VIEW_ROOT) == strlen(dfold), "diff folded size");
		CHECKF(strstr(dfold, "hostile;main;evil\\x0aapp\\x3bmain 999999 5 50\n") != NULL,
		       "diff folded escaped:\n%s", dfold);
		free(dfold);
		free(reg);
		view_tree_free(d);
	} else {
		CHECKF(false, "view_diff_build");
	}
	view_tree_free(t2);
	free(folded);
	free(want);
	for (int i = 0; i < n; i++)
		free(stacks[i]);
	view_tree_free(t);
}

/* about: counts, the first VIEW_ABOUT_LIST values in bytewise order,
 * escaping, a series without samples left out of first/last, perf's clock. */
static void check_about(struct store *s)
{
	struct view_tree *t = fx_tree(s, "app", "1");
	struct store_series m[13];
	char labels[13][64];

	memset(m, 0, sizeof(m));
	for (int i = 0; i < 12; i++) {
		snprintf(labels[i], sizeof(labels[i]), "cgroup=a\\b.slice\nthread=t%02d", 11 - i);
		m[i] = (struct store_series){.host = "h",
		                             .binary = "app",
		                             .version = "0123456789ab",
		                             .event = "cpu-clock",
		                             .unit = "nanoseconds",
		                             .samples = 1,
		                             .first_us = 5000000 + i,
		                             .last_us = 7250000 + i,
		                             .labels = labels[i]};
	}
	m[12] = m[0];
	m[12].samples = 0, m[12].first_us = 1, m[12].last_us = 99999999; /* no samples */
	m[12].labels = "";
	CHECK(view_tree_set_about(t, m, 0) == -EINVAL);
	CHECK_OK(view_tree_set_about(t, m, 13));
	char *about = fx_render(view_render_about, t, fx_binary(t));
	const char *want = "binary app\nversion 0123456789ab\nbuild_id 0123456789ab\n"
	                   "event cpu-clock\nunit nanoseconds\nfirst 5 5\nlast 7.250011 7.250011\n"
	                   "hosts 1\nhost h\ncgroups 1\ncgroup a\\x5cb.slice\nthreads 12\n"
	                   "thread t00\nthread t01\nthread t02\nthread t03\nthread t04\n"
	                   "thread t05\nthread t06\nthread t07\nthread t08\nthread t09\n";
	CHECK_STR(about, want);
	CHECK(view_about_size(t, fx_binary(t)) == strlen(want));
	free(about);
	view_tree_free(t);
}

int main(void)
{
	struct store *s = fx_store();

	const char *hand = "main;a;f;f;g 10\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\n"
	                   "main;c;g;f;g 2\nmain;g;f;g;f 4\nmain 1\nmain;tiny 0\n";
	fx_add(s, "app", "1", "samples", 1795000000, hand);
	/* 2000 frames of weight 1 beside one of 10^6: below 0.1%. */
	struct view_buf lines = {0};
	view_buf_append(&lines, "main;big 1000000\n", 17);
	for (int i = 0; i < 2000; i++) {
		char l[64];
		int n = snprintf(l, sizeof(l), "main;small%04d;x 1\n", i);
		view_buf_append(&lines, l, (size_t)n);
	}
	fx_add(s, "wide", "1", "samples", 1795000000, lines.data);
	view_buf_free(&lines);
	/* Random recursive stacks. */
	srand(99);
	for (int i = 0; i < 300; i++) {
		char l[256];
		size_t o = 0;
		int depth = 1 + rand() % 8;
		for (int d = 0; d < depth; d++)
			o += (size_t)snprintf(l + o, sizeof(l) - o, "%s%c", d ? ";" : "",
			                      "pqrst"[rand() % 5]);
		o += (size_t)snprintf(l + o, sizeof(l) - o, " %d\n", 1 + rand() % 50);
		view_buf_append(&lines, l, o);
	}
	fx_add(s, "rnd", "1", "samples", 1795000000, lines.data);
	view_buf_free(&lines);
	/* Names XML cannot take as they are. */
	fx_add(s, "esc", "1", "samples", 1795000000,
	       "main;a<b>&\"c\" 5\nmain;ctl\x01x 3\nmain;bad\xff\xfe 2\nmain;caf\xc3\xa9 1\n"
	       "main;std::vector<std::basic_string<char>>::push_back_with_a_long_name 1\n");

	const char *bins[] = {"app", "wide", "rnd", "esc"};
	for (size_t b = 0; b < 4; b++) {
		struct view_tree *t = fx_tree(s, bins[b], "1");
		check_svg(t, VIEW_ROOT, bins[b]);
		check_svg(t, fx_binary(t), bins[b]);
		uint32_t main_node = view_node_find_child(t, fx_binary(t), "main", 4);
		if (main_node != VIEW_NONE && view_node_child_count(t, main_node) > 0)
			check_svg(t, view_node_child(t, main_node, 0), bins[b]);
		check_callgrind(t, bins[b]);
		view_tree_free(t);
	}

	/* Escaping. */
	struct view_tree *t = fx_tree(s, "esc", "1");
	char *svg = fx_render(view_render_flame_svg, t, VIEW_ROOT);
	CHECKF(strstr(svg, "<title>a&lt;b&gt;&amp;&quot;c&quot; (") != NULL, "markup escaped");
	CHECKF(strstr(svg, "<title>ctl\xef\xbf\xbdx (") != NULL, "control character replaced");
	CHECKF(strstr(svg, "<title>bad\xef\xbf\xbd\xef\xbf\xbd (") != NULL,
	       "invalid UTF-8 replaced");
	CHECKF(strstr(svg, "<title>caf\xc3\xa9 (") != NULL, "UTF-8 kept");
	CHECKF(strstr(svg, "\x01") == NULL && strstr(svg, "\xff") == NULL, "no raw bytes");
	free(svg);
	view_tree_free(t);

	check_escaped_files(s);
	check_about(s);

	/* Diff colours: g (under a;f;f) grew, b;f shrank, d is new. */
	fx_add(s, "app", "2", "samples", 1795000060,
	       "main;a;f;f;g 20\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;d 9\n");
	struct view_tree *ta = fx_tree(s, "app", "1"), *tb = fx_tree(s, "app", "2"), *d;
	if (view_diff_build(ta, fx_binary(ta), tb, fx_binary(tb), &d) == 0) {
		static struct svgframe fr[64];
		svg = fx_render(view_render_flame_svg, d, fx_binary(d));
		int n = parse_svg(svg, fr, 64);
		int red = 0, blue = 0;
		for (int i = 0; i < n; i++) {
			if (strcmp(fr[i].name, "d") == 0 || strcmp(fr[i].name, "g") == 0)
				red += strncmp(fr[i].fill, "rgb(255,", 8) == 0;
			if (strcmp(fr[i].name, "b") == 0)
				blue += strstr(fr[i].fill, ",255)") != NULL;
		}
		CHECKF(red == 2 && blue == 1, "diff colours: %d red, %d blue", red, blue);
		CHECKF(strstr(svg, "Differential") != NULL, "a differential graph");
		free(svg);
		view_tree_free(d);
	}
	view_tree_free(ta);
	view_tree_free(tb);

	store_close(s);
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("PASS render\n");
	return 0;
}
