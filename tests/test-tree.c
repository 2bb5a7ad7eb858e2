/*
 * test-tree.c — unit tests for building a call tree from the store
 * (fs/view/tree.c) where store frames that differ only in their
 * attributes (module, line) merge into one view node by name.  The build
 * enters a node in its child table only once a lookup could ask for it:
 * when its name gains a second frame, or a second store node maps to its
 * parent.  Random stacks over a few names, each frame in one of three
 * modules (mostly the first, so a name's second frame often first shows
 * up after nodes of its first exist, and a merged node's children repeat
 * its first store node's), in many batches, in two binaries: every tree's
 * folded is the brute-force merge of its lines by name, siblings have
 * distinct names, totals add up, and a rebuild seeded with the tree
 * (every node looked up, none lazy) keeps every node with the same
 * counts.  Then trees large enough (20,000 nodes and more) that a thread
 * populates the build's arrays ahead of it and view_tree_finish()
 * works out paths and folded sizes on a second thread, over 3,000 names
 * that extend one another by digits (f1, f12, f123: sibling order by
 * key), the same checks; the last of them for two binaries that share the
 * store's nodes, so the tree outgrows the arrays the thread populates.
 */
#include "view-fixture.h"

#define ROUNDS  30
#define BATCHES 12

/* Adds "a@m2;b@m1 W" lines to (binary, version) at time `when`: each
 * frame with its module. */
static void add_modules(struct store *s, const char *binary, const char *version, const char *lines,
                        int64_t when)
{
	struct store_batch *b = store_batch_new(s);
	struct store_series_key k = {NULL, binary, version, "cycles", "count", NULL};
	uint32_t series;
	int r;

	if (!b)
		fx_die("store_batch_new", ENOMEM);
	if ((r = store_batch_series(b, &k, &series)) < 0)
		fx_die("store_batch_series", r);
	for (const char *p = lines; *p;) {
		const char *nl = strchr(p, '\n');
		const char *sp = nl;
		while (sp[-1] != ' ')
			sp--;
		sp--; /* the space */
		uint32_t node = STORE_ROOT_NODE;
		for (const char *f = p; f < sp;) {
			const char *semi = memchr(f, ';', (size_t)(sp - f));
			const char *fe = semi ? semi : sp;
			const char *at = memchr(f, '@', (size_t)(fe - f));
			struct store_frame fr = {.name = f,
			                         .name_len = (size_t)(at - f),
			                         .module = at + 1,
			                         .module_len = (size_t)(fe - at - 1)};
			uint32_t frame;
			if ((r = store_batch_frame(b, &fr, &frame)) < 0 ||
			    (r = store_batch_node(b, node, frame, &node)) < 0)
				fx_die("store_batch_node", r);
			f = fe + 1;
		}
		if ((r = store_batch_add(b, series, when, node, 1, strtoull(sp + 1, NULL, 10))) < 0)
			fx_die("store_batch_add", r);
		p = nl + 1;
	}
	if ((r = store_batch_commit(b)) < 0)
		fx_die("store_batch_commit", r);
	store_batch_free(b);
}

/* The folded text the added lines must give: modules dropped, the
 * binary first, equal stacks summed. */
static char *expected(char **lines, const char *const *binaries, uint64_t *w, int n)
{
	char **plain = malloc((size_t)(n ? n : 1) * sizeof(*plain));

	if (!plain)
		fx_die("malloc", ENOMEM);
	for (int i = 0; i < n; i++) {
		struct view_buf b = {0};
		view_buf_append(&b, binaries[i], strlen(binaries[i]));
		for (const char *p = lines[i]; *p;) {
			const char *at = strchr(p, '@');
			if (!at)
				break;
			view_buf_append(&b, ";", 1);
			view_buf_append(&b, p, (size_t)(at - p));
			p = strchr(at, ';');
			p = p ? p + 1 : at + strlen(at);
		}
		plain[i] = b.data;
	}
	char *text = fx_merge_lines(plain, w, n);
	for (int i = 0; i < n; i++)
		free(plain[i]);
	free(plain);
	return text;
}

static void check_siblings(const struct view_tree *t, const char *what)
{
	for (uint32_t n = 0; n < view_tree_node_count(t); n++)
		for (uint32_t i = 1; i < view_node_child_count(t, n); i++) {
			size_t la, lb;
			const char *a = view_node_name(t, view_node_child(t, n, i - 1), &la);
			const char *b = view_node_name(t, view_node_child(t, n, i), &lb);
			size_t m = la < lb ? la : lb;
			int c = memcmp(a, b, m);
			CHECKF(c < 0 || (c == 0 && la < lb),
			       "%s: node %u: children %.*s and %.*s out of order or equal", what, n,
			       (int)la, a, (int)lb, b);
		}
}

/* The tree of series[0..n), against the lines and a seeded rebuild. */
static void check_build(struct store *s, const struct store_series *series, size_t n, char **lines,
                        const char *const *binaries, uint64_t *w, int nlines, const char *what)
{
	struct view_tree *t, *again;

	if (view_tree_build(s, series, n, INT64_MIN, INT64_MAX, &t) < 0)
		fx_die("view_tree_build", EIO);
	char *want = expected(lines, binaries, w, nlines);
	char *got = fx_render(view_render_folded, t, VIEW_ROOT);
	CHECKF(strcmp(got, want) == 0, "%s: folded\n%s\nwant\n%s", what, got, want);
	check_siblings(t, what);
	fx_check_totals(t, what);
	if (view_tree_build_seeded(s, series, n, INT64_MIN, INT64_MAX, t, &again) < 0)
		fx_die("view_tree_build_seeded", EIO);
	CHECKF(view_tree_node_count(again) == view_tree_node_count(t), "%s: %u nodes, again %u",
	       what, view_tree_node_count(t), view_tree_node_count(again));
	for (uint32_t i = 0; i < view_tree_node_count(t) && i < view_tree_node_count(again); i++) {
		struct view_counts a, b;
		view_node_counts(t, i, &a);
		view_node_counts(again, i, &b);
		CHECKF(view_node_visible(again, i) && a.self_weight == b.self_weight &&
		               a.total_weight == b.total_weight,
		       "%s: node %u differs in the seeded rebuild", what, i);
	}
	view_tree_free(again);
	view_tree_free(t);
	free(want);
	free(got);
}

int main(void)
{
	static const char *const names[] = {"a", "b", "ab", "main", "c"};
	static const char *const modules[] = {"m1", "m1", "m1", "m1", "m2", "m3"};
	char *lines[ROUNDS * BATCHES * 8];
	const char *binaries[ROUNDS * BATCHES * 8];
	uint64_t w[ROUNDS * BATCHES * 8];
	int trees = 0;

	srand(2525);
	for (int round = 0; round < ROUNDS; round++) {
		struct store *s = fx_store();
		int nlines = 0;
		for (int batch = 0; batch < BATCHES; batch++) {
			const char *binary = batch % 3 == 2 ? "y" : "x";
			struct view_buf text = {0};
			int nl = 1 + rand() % 8;
			for (int l = 0; l < nl; l++) {
				char line[256];
				size_t o = 0;
				int depth = 1 + rand() % 7;
				for (int d = 0; d < depth; d++)
					o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s@%s",
					                      d ? ";" : "", names[rand() % 5],
					                      modules[rand() % 6]);
				lines[nlines] = strndup(line, o);
				binaries[nlines] = binary;
				w[nlines] = 1 + (uint64_t)(rand() % 100);
				o += (size_t)snprintf(line + o, sizeof(line) - o, " %" PRIu64 "\n",
				                      w[nlines]);
				view_buf_append(&text, line, o);
				nlines++;
			}
			add_modules(s, binary, batch % 2 ? "1" : "2", text.data,
			            1795000000 + batch);
			view_buf_free(&text);
		}
		struct store_series *list;
		size_t n;
		if (store_series_list(s, &list, &n) < 0)
			fx_die("store_series_list", EIO);
		char what[64];
		snprintf(what, sizeof(what), "round %d, both binaries", round);
		check_build(s, list, n, lines, binaries, w, nlines, what);
		/* Binary x alone (its series first; list is sorted by binary). */
		size_t nx = 0;
		while (nx < n && strcmp(list[nx].binary, "x") == 0)
			nx++;
		char *xlines[ROUNDS * BATCHES * 8];
		const char *xbin[ROUNDS * BATCHES * 8];
		uint64_t xw[ROUNDS * BATCHES * 8];
		int nxl = 0;
		for (int i = 0; i < nlines; i++)
			if (strcmp(binaries[i], "x") == 0) {
				xlines[nxl] = lines[i];
				xbin[nxl] = "x";
				xw[nxl++] = w[i];
			}
		snprintf(what, sizeof(what), "round %d, binary x", round);
		check_build(s, list, nx, xlines, xbin, xw, nxl, what);
		store_series_free(list, n);
		for (int i = 0; i < nlines; i++)
			free(lines[i]);
		store_close(s);
		fx_cleanup();
		trees += 2;
	}
	/* Large trees: a second thread in view_tree_finish(), and one that
	 * populates the build's arrays ahead of it (tree.c's prefault).  The
	 * last round imports its lines for two binaries, which share the
	 * store's nodes, so the tree has more nodes than the store and its
	 * arrays grow past what the thread populates. */
	enum { WIDE_LINES = 4000, WIDE_ROUNDS = 4 };
	char **wlines = calloc(2 * WIDE_LINES, sizeof(*wlines));
	const char **wbin = calloc(2 * WIDE_LINES, sizeof(*wbin));
	uint64_t *ww = calloc(2 * WIDE_LINES, sizeof(*ww));
	if (!wlines || !wbin || !ww)
		fx_die("calloc", ENOMEM);
	for (int round = 0; round < WIDE_ROUNDS; round++) {
		struct store *s = fx_store();
		struct view_buf text = {0};
		bool two = round == WIDE_ROUNDS - 1;
		for (int l = 0; l < WIDE_LINES; l++) {
			char line[512];
			size_t o = 0;
			int depth = 1 + rand() % 10;
			for (int d = 0; d < depth; d++)
				o += (size_t)snprintf(line + o, sizeof(line) - o, "%sf%d@%s",
				                      d ? ";" : "", rand() % 3000,
				                      modules[rand() % 6]);
			wlines[l] = strndup(line, o);
			wbin[l] = "w";
			ww[l] = 1 + (uint64_t)(rand() % 100);
			if (two) {
				wlines[WIDE_LINES + l] = wlines[l];
				wbin[WIDE_LINES + l] = "v";
				ww[WIDE_LINES + l] = ww[l];
			}
			o += (size_t)snprintf(line + o, sizeof(line) - o, " %" PRIu64 "\n", ww[l]);
			view_buf_append(&text, line, o);
		}
		add_modules(s, "w", "1", text.data, 1795000000);
		if (two)
			add_modules(s, "v", "1", text.data, 1795000000);
		view_buf_free(&text);
		struct store_series *list;
		size_t n;
		struct view_tree *t = NULL;
		if (store_series_list(s, &list, &n) < 0 ||
		    view_tree_build(s, list, n, INT64_MIN, INT64_MAX, &t) < 0)
			fx_die("view_tree_build", EIO);
		CHECKF(view_tree_node_count(t) >= 20000, "large round %d: only %u nodes", round,
		       view_tree_node_count(t));
		CHECKF(!two || view_tree_node_count(t) > store_node_count(s) + 2,
		       "large round %d: %u nodes, not more than the store's %u", round,
		       view_tree_node_count(t), store_node_count(s));
		view_tree_free(t);
		char what[64];
		snprintf(what, sizeof(what), "large round %d%s", round,
		         two ? ", two binaries" : "");
		check_build(s, list, n, wlines, wbin, ww, two ? 2 * WIDE_LINES : WIDE_LINES, what);
		store_series_free(list, n);
		for (int l = 0; l < WIDE_LINES; l++)
			free(wlines[l]);
		store_close(s);
		fx_cleanup();
		trees++;
	}
	free(wlines);
	free(wbin);
	free(ww);
	if (check_failures) {
		fprintf(stderr, "%d check_failures\n", check_failures);
		return 1;
	}
	printf("ok: %d trees of frames that merge by name (4 of 20,000 nodes and more, one of "
	       "two binaries sharing store nodes), against "
	       "brute force and a seeded rebuild\n",
	       trees);
	return 0;
}
