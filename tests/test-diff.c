/*
 * test-diff.c — unit tests for version diffs (fs/view/diff.c and the diff
 * paths of the renderers): the union tree's folded text equals the
 * brute-force "stack A B" merge of both versions' lines (names that
 * extend one another included, so the keyed line order is exercised), its
 * size is known without rendering, self and total read "A B", both
 * versions' totals add up at every node, and regressions lists the
 * growth sto's rule picks, biggest first.
 */
#include "view-fixture.h"

/* The expected union: "stack A B" for every stack of either side. */
static char *expect_union(const char *bin, const char *a, const char *b)
{
	static struct fx_stack sa[FX_MAX_LINES], sb[FX_MAX_LINES];
	int na = fx_parse(bin, a, sa), nb = fx_parse(bin, b, sb);
	char *keys[2 * FX_MAX_LINES];
	uint64_t wa[2 * FX_MAX_LINES] = {0}, wb[2 * FX_MAX_LINES] = {0};
	int nk = 0;

	for (int side = 0; side < 2; side++) {
		struct fx_stack *st = side ? sb : sa;
		for (int i = 0; i < (side ? nb : na); i++) {
			char *k = fx_join(st[i].frames, 0, st[i].n, 1);
			int j = 0;
			for (; j < nk && strcmp(keys[j], k) != 0; j++)
				;
			if (j == nk)
				keys[nk++] = k;
			else
				free(k);
			(side ? wb : wa)[j] += st[i].w;
		}
	}
	char *lines[2 * FX_MAX_LINES];
	uint64_t ones[2 * FX_MAX_LINES];
	for (int j = 0; j < nk; j++) {
		char buf[1024];
		snprintf(buf, sizeof(buf), "%s %" PRIu64 " %" PRIu64, keys[j], wa[j], wb[j]);
		lines[j] = strdup(buf);
		ones[j] = wa[j] || wb[j];
		free(keys[j]);
	}
	char *merged = fx_merge_lines(lines, ones, nk);
	/* fx_merge_lines appended " 1" to each line: strip it. */
	struct view_buf out = {0};
	for (char *p = merged; *p;) {
		char *nl = strchr(p, '\n');
		char *sp = nl;
		while (sp[-1] != ' ')
			sp--;
		view_buf_append(&out, p, (size_t)(sp - 1 - p));
		view_buf_append(&out, "\n", 1);
		p = nl + 1;
	}
	for (int j = 0; j < nk; j++)
		free(lines[j]);
	free(merged);
	fx_free_stacks(sa, na);
	fx_free_stacks(sb, nb);
	return out.data ? out.data : strdup("");
}

static void check_diff(struct store *s, const char *bin, const char *a, const char *b,
                       const char *what)
{
	fx_add(s, bin, "A", "samples", 1795000000, a);
	fx_add(s, bin, "B", "samples", 1795000060, b);
	struct view_tree *ta = fx_tree(s, bin, "A"), *tb = fx_tree(s, bin, "B"), *d;
	int r = view_diff_build(ta, fx_binary(ta), tb, fx_binary(tb), &d);

	CHECKF(r == 0, "%s: diff build %d", what, r);
	if (r < 0)
		return;
	CHECKF(view_tree_is_diff(d) && !view_tree_is_diff(ta), "%s: is a diff", what);
	char *want = expect_union(bin, a, b);
	char *got = fx_render(view_render_folded, d, VIEW_ROOT);
	CHECKF(strcmp(got, want) == 0, "%s: folded\n%s--- want:\n%s", what, got, want);
	for (uint32_t n = 0; n < view_tree_node_count(d); n++) {
		char *one = fx_render(view_render_folded, d, n);
		CHECKF(view_folded_size(d, n) == strlen(one), "%s: folded size of node %u", what,
		       n);
		free(one);
	}
	fx_check_totals(d, what);
	for (uint32_t n = 0; n < view_tree_node_count(d); n++) {
		struct view_counts c, cc;
		uint64_t sum = 0;
		view_node_base_counts(d, n, &c);
		for (uint32_t i = 0; i < view_node_child_count(d, n); i++) {
			view_node_base_counts(d, view_node_child(d, n, i), &cc);
			sum += cc.total_weight;
		}
		CHECKF(c.total_weight == c.self_weight + sum, "%s: A's totals at node %u", what, n);
	}
	/* The diff root's counts are the two versions' own. */
	struct view_counts ca, cb, da, db;
	uint32_t root = fx_binary(d);
	view_node_counts(ta, fx_binary(ta), &ca);
	view_node_counts(tb, fx_binary(tb), &cb);
	view_node_base_counts(d, root, &da);
	view_node_counts(d, root, &db);
	CHECKF(ca.total_weight == da.total_weight && cb.total_weight == db.total_weight,
	       "%s: the root's counts are A's and B's", what);
	char expect_total[64];
	snprintf(expect_total, sizeof(expect_total), "%" PRIu64 " %" PRIu64 "\n", ca.total_weight,
	         cb.total_weight);
	char *tot = fx_render(view_render_total, d, root);
	CHECKF(strcmp(tot, expect_total) == 0, "%s: total reads \"%s\"", what, tot);
	free(tot);
	free(want);
	free(got);
	view_tree_free(d);
	view_tree_free(ta);
	view_tree_free(tb);
}

int main(void)
{
	struct store *s = fx_store();

	check_diff(s, "app",
	           "main;a;f;f;g 10\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;c;g;f;g 2\n",
	           "main;a;f;f;g 20\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;d 9\n", "hand-made");
	/* Names that extend one another by a byte below ';'. */
	check_diff(s, "ext", "m;foo 1\nm;foo.part.0 2\nm;foo;x 3\nm;a b 4\nm;a 5\n",
	           "m;foo 6\nm;foo.part.0;y 7\nm;a;b 8\nm;a b 9\n", "keyed order");
	/* A is empty below the root. */
	check_diff(s, "new", "x 0\n", "x;y 5\n", "empty A");

	/* regressions of the hand-made pair: d went 0% -> 9/44, g under
	 * a;f;f 10/27 -> 20/44; a;f;f's growth is all g's, so only g shows. */
	struct view_tree *ta = fx_tree(s, "app", "A"), *tb = fx_tree(s, "app", "B"), *d;
	if (view_diff_build(ta, fx_binary(ta), tb, fx_binary(tb), &d) == 0) {
		char *reg = fx_render(view_render_regressions, d, fx_binary(d));
		CHECKF(strcmp(reg, "+20.5% app;main;d\n+8.4% app;main;a;f;f;g\n") == 0,
		       "regressions:\n%s", reg);
		free(reg);
		char *self = fx_render(view_render_self, d,
		                       view_node_find_child(d, fx_binary(d), "main", 4));
		CHECKF(strcmp(self, "0 0\n") == 0, "self of main: %s", self);
		free(self);
		view_tree_free(d);
	}
	char *none = fx_render(view_render_regressions, ta, fx_binary(ta));
	CHECKF(strcmp(none, "") == 0, "regressions of a plain tree");
	free(none);
	/* Seeded: a diff rebuilt after B grew keeps every node's id, new
	 * nodes come after, and it reads as an unseeded build does. */
	if (view_diff_build(ta, fx_binary(ta), tb, fx_binary(tb), &d) == 0) {
		struct view_tree *tb2, *d2, *d3;
		fx_add(s, "app", "B", "samples", 1795000120, "main;a;f;new 4\nmain;z 1\n");
		tb2 = fx_tree(s, "app", "B");
		CHECKF(view_diff_build_seeded(ta, fx_binary(ta), tb2, fx_binary(tb2), d, &d2) ==
		                       0 &&
		               view_diff_build(ta, fx_binary(ta), tb2, fx_binary(tb2), &d3) == 0,
		       "seeded diff");
		for (uint32_t n = 1; n < view_tree_node_count(d); n++) {
			size_t l1, l2;
			const char *a1 = view_node_name(d, n, &l1),
			           *a2 = view_node_name(d2, n, &l2);
			CHECKF(view_node_visible(d2, n) && l1 == l2 && memcmp(a1, a2, l1) == 0 &&
			               view_node_parent(d, n) == view_node_parent(d2, n),
			       "seeded diff keeps node %u", n);
		}
		CHECKF(view_tree_node_count(d2) == view_tree_node_count(d) + 2, "two new nodes");
		char *f2 = fx_render(view_render_folded, d2, VIEW_ROOT);
		char *f3 = fx_render(view_render_folded, d3, VIEW_ROOT);
		CHECKF(strcmp(f2, f3) == 0, "seeded and unseeded diffs read the same");
		free(f2);
		free(f3);
		view_tree_free(d3);
		view_tree_free(d2);
		view_tree_free(tb2);
		view_tree_free(d);
	}
	/* Root against root merges binaries. */
	CHECKF(view_diff_build(ta, VIEW_ROOT, tb, fx_binary(tb), &d) == -EINVAL, "mixed levels");
	view_tree_free(ta);
	view_tree_free(tb);

	store_close(s);
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	printf("PASS diff\n");
	return 0;
}
