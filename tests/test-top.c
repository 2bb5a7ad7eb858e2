/*
 * test-top.c — unit tests for the `top` renderer (fs/view/top.c): on
 * random trees over a few names (so recursion, direct and indirect, is
 * everywhere, and one name is `top` itself), at every call-tree node:
 *   - every function's self and total equal a brute-force reading of the
 *     folded lines below that node (self = weight of the stacks it ends,
 *     total = weight of the stacks that contain it, once per stack), and
 *     every function is listed once;
 *   - at the binary, every line equals the function view's
 *     (view_functions_counts());
 *   - lines are ranked by self, then total, then name, the percentages
 *     are the weights over the node's total, rounded half up to two
 *     decimals, and the kind column is the frame's kind;
 *   - the header names the unit and the total, in seconds for a clock
 *     unit;
 *   - samples without frames (a binary alone) are one row "[no frames]"
 *     of kind "-" at the root and at their binary, and the self column
 *     sums to the node's total at every node.
 * Then trees of 16,384 nodes and more (view_tree_finish() finds the recursive
 * nodes on a second thread there): every 37th node, and at the binary
 * the function view's numbers.  Then trees of 200 functions with weights
 * of 1 and 2, so that many tie on self and total and rank by name (the
 * ranking's quicksort partitions there, not only its insertion sort).
 */
#include "view-fixture.h"

#define MAX_FUNCS 256

struct top_line {
	uint64_t self, total;
	char self_pct[16], total_pct[16];
	char kind[16];
	char name[128];
};

/* Parses a top rendering; returns the number of lines, -1 on a bad line. */
static int parse_top(const char *text, struct top_line *out, int max, char *header, size_t hlen)
{
	int n = 0, hdr = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		if (!nl)
			return -1;
		size_t len = (size_t)(nl - p);
		char line[512];
		if (len >= sizeof(line))
			return -1;
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl + 1;
		if (line[0] == '#') {
			if (hdr++ == 0)
				snprintf(header, hlen, "%s", line);
			continue;
		}
		if (n == max)
			return -1;
		struct top_line *l = &out[n++];
		int off = 0;
		if (sscanf(line, "%" SCNu64 " %15s %" SCNu64 " %15s %15s %n", &l->self, l->self_pct,
		           &l->total, l->total_pct, l->kind, &off) != 5 ||
		    off == 0)
			return -1;
		snprintf(l->name, sizeof(l->name), "%s", line + off);
	}
	return hdr == 2 ? n : -1;
}

static void want_pct(char out[32], uint64_t part, uint64_t whole)
{
	/* Half up, in integers: floor((part * 10000 + whole / 2) / whole)
	 * computed without rounding through doubles. */
	uint64_t v = whole ? (part * 20000 + whole) / (2 * whole) : 0;
	snprintf(out, 32, "%" PRIu64 ".%02" PRIu64, v / 100, v % 100);
}

/* Adds folded lines with frame kinds: a name that ends with ".py)" is a
 * Python frame (as the recorder names them, "qualname (file)"); a name
 * that begins with 'k' is a
 * kernel frame, 'i' inline, else user. */
static void add_kinds(struct store *s, const char *binary, const char *version, const char *unit,
                      const char *lines)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, binary, version, "cpu-clock", unit, NULL};
	uint32_t series;
	int r;

	if (!b)
		fx_die("store_batch_new", ENOMEM);
	if ((r = store_batch_series(b, &k, &series)) < 0)
		fx_die("store_batch_series", r);
	for (const char *p = lines; *p;) {
		const char *nl = strchr(p, '\n');
		const char *sp = nl;
		while (sp > p && sp[-1] != ' ')
			sp--;
		sp--; /* the space before the weight */
		uint64_t w = strtoull(sp + 1, NULL, 10);
		uint32_t node = STORE_ROOT_NODE;
		for (const char *f = p; f < sp;) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			const char *fe = semi ? semi : sp;
			struct store_frame fr = {.name = f,
			                         .name_len = (size_t)(fe - f),
			                         .kind = fe - f > 4 && memcmp(fe - 4, ".py)", 4) ==
			                                                         0
			                                         ? STORE_FRAME_PYTHON
			                                 : f[0] == 'k' ? STORE_FRAME_KERNEL
			                                 : f[0] == 'i' ? STORE_FRAME_INLINE
			                                               : STORE_FRAME_USER};
			uint32_t frame;
			if ((r = store_batch_frame(b, &fr, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				fx_die("store_batch_node", r);
			f = fe + 1;
		}
		if ((r = store_batch_add(b, series, 1795000000, node, 1, w)) < 0)
			fx_die("store_batch_add", r);
		p = nl + 1;
	}
	if ((r = store_batch_commit(b)) < 0)
		fx_die("store_batch_commit", r);
	store_batch_free(b);
}

/* The frames of node n from the binary down: out[0] is the binary.
 * Returns how many. */
static int node_path(const struct view_tree *t, uint32_t n, char out[][128])
{
	uint32_t chain[FX_MAX_FRAMES];
	int k = 0;

	for (; n != VIEW_ROOT; n = view_node_parent(t, n))
		chain[k++] = n;
	for (int i = 0; i < k; i++) {
		size_t len;
		const char *p = view_node_name(t, chain[k - 1 - i], &len);
		snprintf(out[i], 128, "%.*s", (int)len, p);
	}
	return k;
}

/* Checks top of node `n` against the stacks (binary first). */
static void check_node(const struct view_tree *t, uint32_t n, struct fx_stack *st, int nst,
                       const char *what)
{
	char path[FX_MAX_FRAMES][128];
	int plen = node_path(t, n, path);
	/* Functions start at the node itself when it is a frame, else
	 * below the binary. */
	int from = plen >= 2 ? plen - 1 : 1;
	char names[MAX_FUNCS][128];
	uint64_t self[MAX_FUNCS] = {0}, total[MAX_FUNCS] = {0};
	int nf = 0;

	for (int s = 0; s < nst; s++) {
		bool under = st[s].n >= plen;
		for (int j = 0; under && j < plen; j++)
			under = strcmp(st[s].frames[j], path[j]) == 0;
		if (!under)
			continue;
		bool seen[MAX_FUNCS] = {false};
		for (int j = from; j < st[s].n; j++) {
			int f = 0;
			while (f < nf && strcmp(names[f], st[s].frames[j]) != 0)
				f++;
			if (f == nf)
				snprintf(names[nf++], 128, "%s", st[s].frames[j]);
			if (!seen[f])
				total[f] += st[s].w;
			seen[f] = true;
			if (j == st[s].n - 1)
				self[f] += st[s].w;
		}
	}

	/* Samples of no frame (the binary alone), at the root and at the
	 * binary: the row "[no frames]". */
	uint64_t frameless = 0;
	for (int s = 0; plen <= 1 && s < nst; s++)
		if (st[s].n == 1 && (plen == 0 || strcmp(st[s].frames[0], path[0]) == 0))
			frameless += st[s].w;
	if (frameless) {
		snprintf(names[nf], 128, "[no frames]");
		self[nf] = total[nf] = frameless;
		nf++;
	}

	char *text = fx_render(view_render_top, t, n);
	struct top_line lines[MAX_FUNCS + 1];
	char header[512];
	int nl = parse_top(text, lines, MAX_FUNCS + 1, header, sizeof(header));
	struct view_counts c;
	view_node_counts(t, n, &c);
	CHECKF(nl == nf, "%s: node %u: %d lines, want %d rows:\n%s", what, n, nl, nf, text);
	uint64_t self_sum = 0;
	for (int i = 0; i < nl; i++)
		self_sum += lines[i].self;
	CHECKF(self_sum == c.total_weight,
	       "%s: node %u: self column sums to %" PRIu64 ", total %" PRIu64, what, n, self_sum,
	       c.total_weight);
	char nfuncs[64];
	snprintf(nfuncs, sizeof(nfuncs), "# %d functions ", nf - (frameless ? 1 : 0));
	CHECKF(strncmp(header, nfuncs, strlen(nfuncs)) == 0, "%s: node %u: header %s, want %s",
	       what, n, header, nfuncs);
	for (int i = 0; i < nl && nl == nf; i++) {
		struct top_line *l = &lines[i];
		int f = 0;
		while (f < nf && strcmp(names[f], l->name) != 0)
			f++;
		CHECKF(f < nf, "%s: node %u: %s is a function", what, n, l->name);
		if (f == nf)
			continue;
		CHECKF(l->self == self[f] && l->total == total[f],
		       "%s: node %u: %s: self %" PRIu64 " total %" PRIu64 ", want %" PRIu64
		       " %" PRIu64,
		       what, n, l->name, l->self, l->total, self[f], total[f]);
		char sp[32], tp[32];
		want_pct(sp, l->self, c.total_weight);
		want_pct(tp, l->total, c.total_weight);
		CHECKF(strcmp(sp, l->self_pct) == 0 && strcmp(tp, l->total_pct) == 0,
		       "%s: node %u: %s: %s%% %s%%, want %s%% %s%%", what, n, l->name, l->self_pct,
		       l->total_pct, sp, tp);
		const char *kind = strcmp(l->name, "[no frames]") == 0 ? "-"
		                   : l->name[0] == 'k'                 ? "kernel"
		                   : l->name[0] == 'i'                 ? "inline"
		                                                       : "user";
		CHECKF(strcmp(l->kind, kind) == 0, "%s: %s is %s, want %s", what, l->name, l->kind,
		       kind);
		names[f][0] = '\0'; /* listed once */
		if (i > 0) {
			struct top_line *p = &lines[i - 1];
			CHECKF(p->self > l->self ||
			               (p->self == l->self &&
			                (p->total > l->total ||
			                 (p->total == l->total && strcmp(p->name, l->name) < 0))),
			       "%s: node %u: %s ranked after %s", what, n, l->name, p->name);
		}
	}
	char want[128];
	snprintf(want, sizeof(want), "total %" PRIu64, c.total_weight);
	CHECKF(strstr(header, want) != NULL, "%s: header %s has %s", what, header, want);
	free(text);
}

/* At the binary, top's numbers are the function view's. */
static void check_functions(const struct view_tree *t, const char *what)
{
	struct view_functions *fx;
	uint32_t bin = fx_binary(t);

	if (view_functions_build(t, bin, &fx) < 0) {
		CHECKF(0, "%s: view_functions_build", what);
		return;
	}
	char *text = fx_render(view_render_top, t, bin);
	struct top_line lines[MAX_FUNCS + 1];
	char header[512];
	int nl = parse_top(text, lines, MAX_FUNCS + 1, header, sizeof(header));
	int frameless = 0;
	for (int i = 0; i < nl; i++)
		frameless += strcmp(lines[i].kind, "-") == 0;
	CHECKF(nl - frameless == (int)view_functions_count(fx), "%s: %d lines for %u functions",
	       what, nl, view_functions_count(fx));
	for (int i = 0; i < nl; i++) {
		if (strcmp(lines[i].kind, "-") == 0)
			continue;
		uint32_t f = view_functions_find(fx, lines[i].name, strlen(lines[i].name));
		struct view_counts c;
		CHECKF(f != VIEW_NONE, "%s: %s in @functions", what, lines[i].name);
		if (f == VIEW_NONE)
			continue;
		view_functions_counts(fx, f, &c);
		CHECKF(c.self_weight == lines[i].self && c.total_weight == lines[i].total,
		       "%s: %s: top %" PRIu64 " %" PRIu64 ", @functions %" PRIu64 " %" PRIu64, what,
		       lines[i].name, lines[i].self, lines[i].total, c.self_weight, c.total_weight);
	}
	free(text);
	view_functions_free(fx);
}

static const char *const alphabet[] = {"main", "top", "kread", "iinl", "f", "g"};

/* A hand-made tree with the numbers worked out: f's total counts
 * main;f;g;f once (10), g's self is 10 + 2. */
static void check_hand(struct store *s, struct fx_stack *st)
{
	const char *hand = "main;f;g;f 10\n"
	                   "main;f;kread 5\n"
	                   "main;g 2\n"
	                   "main 1\n";
	add_kinds(s, "app", "1", "nanoseconds", hand);
	struct view_tree *t = fx_tree(s, "app", "1");
	char *text = fx_render(view_render_top, t, fx_binary(t));
	const char *want = "# 4 functions by self weight; unit nanoseconds (cpu-clock), total 18 = "
	                   "0.000000018 s\n"
	                   "#self   self% total  total% kind    name\n"
	                   "  10   55.56   15   83.33 user    f\n"
	                   "   5   27.78    5   27.78 kernel  kread\n"
	                   "   2   11.11   12   66.67 user    g\n"
	                   "   1    5.56   18  100.00 user    main\n";
	CHECKF(strcmp(text, want) == 0, "hand: got\n%s\nwant\n%s", text, want);
	free(text);
	int n = fx_parse("app", hand, st);
	for (uint32_t i = 1; i < view_tree_node_count(t); i++)
		check_node(t, i, st, n, "hand");
	check_functions(t, "hand");
	fx_free_stacks(st, n);
	view_tree_free(t);
}

/* Python frames have their own kind, beside the interpreter's C
 * functions and the kernel's. */
static void check_python(struct store *s)
{
	add_kinds(s, "python3.11", "1", "nanoseconds",
	          "Py_RunMain;<module> (app.py);hot (app.py) 6\n"
	          "Py_RunMain;<module> (app.py);hot (app.py);kwrite 3\n"
	          "Py_RunMain;_PyEval_EvalFrameDefault 1\n");
	struct view_tree *t = fx_tree(s, "python3.11", "1");
	char *text = fx_render(view_render_top, t, fx_binary(t));
	const char *want = "# 5 functions by self weight; unit nanoseconds (cpu-clock), total 10 = "
	                   "0.000000010 s\n"
	                   "#self   self% total  total% kind    name\n"
	                   "   6   60.00    9   90.00 python  hot (app.py)\n"
	                   "   3   30.00    3   30.00 kernel  kwrite\n"
	                   "   1   10.00    1   10.00 user    _PyEval_EvalFrameDefault\n"
	                   "   0    0.00   10  100.00 user    Py_RunMain\n"
	                   "   0    0.00    9   90.00 python  <module> (app.py)\n";
	CHECKF(strcmp(text, want) == 0, "python: got\n%s\nwant\n%s", text, want);
	free(text);
	view_tree_free(t);
}

/* Samples without frames (a process name only) are a row of their
 * own, at the binary and at the root, and the self column still sums
 * to the total. */
static void check_no_frames(struct store *s, struct fx_stack *st)
{
	add_kinds(s, "bare", "1", "nanoseconds", "main;f 4\n 3\n");
	struct view_tree *t = fx_tree(s, "bare", "1");
	const char *want = "# 2 functions by self weight; unit nanoseconds (cpu-clock), total 7 = "
	                   "0.000000007 s\n"
	                   "#self   self% total  total% kind    name\n"
	                   "   4   57.14    4   57.14 user    f\n"
	                   "   3   42.86    3   42.86 -       [no frames]\n"
	                   "   0    0.00    4   57.14 user    main\n";
	for (int at = 0; at < 2; at++) {
		char *text = fx_render(view_render_top, t, at ? VIEW_ROOT : fx_binary(t));
		CHECKF(strcmp(text, want) == 0, "no frames (%s): got\n%s\nwant\n%s",
		       at ? "root" : "binary", text, want);
		free(text);
	}
	int n = fx_parse("bare", "main;f 4\n 3\n", st);
	for (uint32_t i = 0; i < view_tree_node_count(t); i++)
		check_node(t, i, st, n, "no frames");
	check_functions(t, "no frames");
	fx_free_stacks(st, n);
	view_tree_free(t);
}

/* A unit that is not a clock: no seconds. */
static void check_count_unit(struct store *s)
{
	fx_add(s, "cnt", "1", "samples", 1795000000, "a;b 3\n");
	struct view_tree *t = fx_tree(s, "cnt", "1");
	char *text = fx_render(view_render_top, t, fx_binary(t));
	const char *count_header = "# 2 functions by self weight; unit count (samples), total 3\n";
	CHECKF(strncmp(text, count_header, strlen(count_header)) == 0, "count header: %s", text);
	free(text);
	view_tree_free(t);
}

/* Random trees: every node of each. */
static int check_random(struct store *s, struct fx_stack *st)
{
	int trees = 0;

	for (int round = 0; round < 20; round++) {
		struct view_buf lines = {0};
		int nlines = 1 + rand() % 60;
		for (int i = 0; i < nlines; i++) {
			char line[256];
			size_t o = 0;
			/* depth 0 (one line in 9): a sample without frames */
			int depth = rand() % 9;
			for (int d = 0; d < depth; d++)
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
				                      d ? ";" : "", alphabet[rand() % 6]);
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %d\n",
			                      rand() % 4 ? 1 + rand() % 1000 : 1);
			view_buf_append(&lines, line, o);
		}
		char version[16];
		snprintf(version, sizeof(version), "%d", round);
		add_kinds(s, "rnd", version, "nanoseconds", lines.data);
		struct view_tree *t = fx_tree(s, "rnd", version);
		int n = fx_parse("rnd", lines.data, st);
		for (uint32_t i = 1; i < view_tree_node_count(t); i++)
			check_node(t, i, st, n, "random");
		check_functions(t, "random");
		fx_free_stacks(st, n);
		view_tree_free(t);
		view_buf_free(&lines);
		trees++;
	}
	return trees;
}

/* Two binaries in one tree (the whole machine's): every node, the
 * top root and each binary's node too, whose functions are read in
 * id order (top.c) rather than walked. */
static int check_two_binaries(struct store *s, struct fx_stack *st)
{
	int trees = 0;

	for (int round = 0; round < 5; round++) {
		struct view_buf lines[2] = {{0}, {0}};
		for (int b = 0; b < 2; b++) {
			int nlines = 1 + rand() % 40;
			for (int i = 0; i < nlines; i++) {
				char line[256];
				size_t o = 0;
				int depth = rand() % 9;
				for (int d = 0; d < depth; d++)
					o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
					                      d ? ";" : "", alphabet[rand() % 6]);
				o += (size_t)snprintf(line + o, sizeof(line) - o, " %d\n",
				                      1 + rand() % 1000);
				view_buf_append(&lines[b], line, o);
			}
		}
		char version[16];
		snprintf(version, sizeof(version), "m%d", round);
		add_kinds(s, "one", version, "nanoseconds", lines[0].data);
		add_kinds(s, "two", version, "nanoseconds", lines[1].data);
		struct store_series *list;
		size_t nl, k = 0;
		if (store_series_list(s, &list, &nl) < 0)
			fx_die("store_series_list", EIO);
		for (size_t i = 0; i < nl; i++)
			if (strcmp(list[i].version, version) == 0) {
				struct store_series tmp = list[k];
				list[k++] = list[i];
				list[i] = tmp;
			}
		struct view_tree *t;
		if (k != 2 || view_tree_build(s, list, k, INT64_MIN, INT64_MAX, &t) < 0)
			fx_die("view_tree_build", EIO);
		int n = fx_parse("one", lines[0].data, st);
		n += fx_parse("two", lines[1].data, st + n);
		for (uint32_t i = 0; i < view_tree_node_count(t); i++)
			check_node(t, i, st, n, "two binaries");
		fx_free_stacks(st, n);
		view_tree_free(t);
		store_series_free(list, nl);
		view_buf_free(&lines[0]);
		view_buf_free(&lines[1]);
		trees++;
	}
	return trees;
}

/* Large trees: deep stacks over the six names, 4,000 of them. */
static int check_large(struct store *s, struct fx_stack *st)
{
	int trees = 0;

	for (int round = 0; round < 2; round++) {
		struct view_buf lines = {0};
		for (int i = 0; i < FX_MAX_LINES - 96; i++) {
			char line[256];
			size_t o = 0;
			int depth = 4 + rand() % 12;
			for (int d = 0; d < depth; d++)
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s",
				                      d ? ";" : "", alphabet[rand() % 6]);
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %d\n",
			                      1 + rand() % 1000);
			view_buf_append(&lines, line, o);
		}
		char version[16];
		snprintf(version, sizeof(version), "big%d", round);
		add_kinds(s, "big", version, "nanoseconds", lines.data);
		struct view_tree *t = fx_tree(s, "big", version);
		CHECKF(view_tree_node_count(t) >= 16384, "large: only %u nodes",
		       view_tree_node_count(t));
		int n = fx_parse("big", lines.data, st);
		for (uint32_t i = 1; i < view_tree_node_count(t); i += 37)
			check_node(t, i, st, n, "large");
		check_functions(t, "large");
		fx_free_stacks(st, n);
		view_tree_free(t);
		view_buf_free(&lines);
		trees++;
	}
	return trees;
}

/* Many functions, many ties. */
static int check_ties(struct store *s, struct fx_stack *st)
{
	int trees = 0;

	for (int round = 0; round < 3; round++) {
		struct view_buf lines = {0};
		for (int i = 0; i < 800; i++) {
			char line[256];
			size_t o = 0;
			int depth = 1 + rand() % 5;
			for (int d = 0; d < depth; d++)
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%sf%d",
				                      d ? ";" : "", rand() % 200);
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %d\n", 1 + rand() % 2);
			view_buf_append(&lines, line, o);
		}
		char version[16];
		snprintf(version, sizeof(version), "ties%d", round);
		add_kinds(s, "ties", version, "nanoseconds", lines.data);
		struct view_tree *t = fx_tree(s, "ties", version);
		int n = fx_parse("ties", lines.data, st);
		check_node(t, fx_binary(t), st, n, "ties");
		for (uint32_t i = 1; i < view_tree_node_count(t); i += 97)
			check_node(t, i, st, n, "ties");
		check_functions(t, "ties");
		fx_free_stacks(st, n);
		view_tree_free(t);
		view_buf_free(&lines);
		trees++;
	}
	return trees;
}

int main(void)
{
	struct store *s = fx_store();
	static struct fx_stack st[FX_MAX_LINES];
	int trees = 0;

	check_hand(s, st);
	check_python(s);
	check_no_frames(s, st);
	check_count_unit(s);
	srand(4242);
	trees += check_random(s, st);
	trees += check_two_binaries(s, st);
	trees += check_large(s, st);
	trees += check_ties(s, st);
	store_close(s);
	if (check_failures) {
		fprintf(stderr, "%d check_failures\n", check_failures);
		return 1;
	}
	printf("ok: top over %d random trees (5 of two binaries, 2 of 16,384 nodes and more, 3 of "
	       "200 functions with ties) and a hand-made one\n",
	       trees);
	return 0;
}
