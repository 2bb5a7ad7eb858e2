/*
 * sqlnorm.c — statement text to the text pg_stat_statements (PostgreSQL 15)
 * shows for it: constants replaced by $1, $2... in order of position, the
 * rest of the text (spacing, case, comments) kept byte for byte.
 *
 * pg_stat_statements works from the parse tree: it replaces every Const
 * node at its token location.  This file has no parser, only a lexer that
 * follows PostgreSQL 15's scan.l (strings with '' and E'' escapes and
 * quote continuation across newlines, $tag$ quoting, nested comments,
 * operators with scan.l's trailing +/- rule, numbers, $N parameters), and
 * decides from the tokens around a literal whether the tree holds a Const
 * for it:
 *   - every string, bit string and number is a constant, and so are TRUE,
 *     FALSE and NULL (not after IS, IS NOT or IS [NOT] DISTINCT FROM: those
 *     are tests, not constants), LIMIT ALL, the field of
 *     extract(FIELD from ...) and the form of normalize()/IS NORMALIZED;
 *   - a unary minus folds into the number after it ("- 1" is one constant,
 *     "-1::int" is not: the cast binds first), also through parentheses and
 *     minus signs; then pg_stat_statements replaces the minus and the one
 *     token after it ("-(6)" becomes "$1" then "6)"), and so does this;
 *   - a type modifier ("numeric(10,2)", "timestamp(2) '...'") is not;
 *   - an integer alone as an item of a query's ORDER BY, GROUP BY or
 *     DISTINCT ON is a column position, not a constant (in a window's or an
 *     aggregate's ORDER BY it is a constant);
 *   - a statement PostgreSQL does not plan (DDL, SET, EXPLAIN, COPY,
 *     SELECT ... INTO, CREATE TABLE AS) is kept as it is.
 * Strings are read as with standard_conforming_strings = on, the default
 * (a backslash escapes only in E'').
 * Known differences (the parse tree would be needed): a semicolon inside a
 * BEGIN ATOMIC function body splits the statement here; GROUPING SETS,
 * ROLLUP and CUBE items are taken as positions like GROUP BY's; a column
 * named nfc/nfd/nfkc/nfkd as normalize()'s second argument is taken for the
 * form; pg_stat_statements' duplicate constant locations (numbers skipped)
 * are not reproduced.  PREPARE and EXECUTE have no entry of their own in
 * pg_stat_statements (track = top); here they are kept as they are.
 */
#include "sqlnorm.h"

#include <stdint.h>
#include <string.h>

enum kind {
	K_END,
	K_IDENT,  /* identifier or keyword */
	K_QIDENT, /* "quoted" or U&"quoted" identifier */
	K_NUM,
	K_STR,   /* '..', E'..', B'..', X'..', $$..$$ */
	K_USTR,  /* U&'..' */
	K_PARAM, /* $N */
	K_OP,    /* an operator, '-' and '+' included */
	K_CAST,  /* :: */
	K_OTHER, /* ( ) [ ] , ; . : and anything else, one char or two */
};

struct tok {
	enum kind kind;
	size_t start, end;
	unsigned long param; /* K_PARAM: N, capped */
	int integer;         /* K_NUM: digits only */
};

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static int is_ident_cont(unsigned char c)
{
	return is_ident_start(c) || is_digit(c) || c == '$';
}

static int is_op_char(unsigned char c)
{
	return c && strchr("~!@#^&|`?+-*/%<>=", c) != NULL;
}

/* Skips whitespace and comments ("--" to the end of the line, nested
 * slash-star comments; an unterminated one runs to the end). */
static size_t skip_blank(const unsigned char *s, size_t n, size_t p)
{
	while (p < n) {
		if (is_space(s[p])) {
			p++;
		} else if (s[p] == '-' && p + 1 < n && s[p + 1] == '-') {
			while (p < n && s[p] != '\n' && s[p] != '\r')
				p++;
		} else if (s[p] == '/' && p + 1 < n && s[p + 1] == '*') {
			size_t depth = 1;
			p += 2;
			while (p < n && depth) {
				if (s[p] == '/' && p + 1 < n && s[p + 1] == '*') {
					depth++;
					p += 2;
				} else if (s[p] == '*' && p + 1 < n && s[p + 1] == '/') {
					depth--;
					p += 2;
				} else {
					p++;
				}
			}
		} else {
			break;
		}
	}
	return p;
}

/* The end of a quoted literal whose body starts at p (after the opening
 * quote): '' is a quote, backslash escapes with esc, and a literal continues
 * after whitespace holding a newline ("'a'\n'b'" is one literal). */
static size_t scan_quoted(const unsigned char *s, size_t n, size_t p, int esc)
{
	while (p < n) {
		if (esc && s[p] == '\\') {
			p += p + 1 < n ? 2 : 1;
		} else if (s[p] != '\'') {
			p++;
		} else if (p + 1 < n && s[p + 1] == '\'') {
			p += 2;
		} else {
			size_t k = p + 1;
			int newline = 0;
			while (k < n) {
				if (s[k] == ' ' || s[k] == '\t' || s[k] == '\f') {
					k++;
				} else if (s[k] == '\n' || s[k] == '\r') {
					newline = 1;
					k++;
				} else if (s[k] == '-' && k + 1 < n && s[k + 1] == '-') {
					while (k < n && s[k] != '\n' && s[k] != '\r')
						k++;
				} else {
					break;
				}
			}
			if (newline && k < n && s[k] == '\'') {
				p = k + 1;
				continue;
			}
			return p + 1;
		}
	}
	return n;
}

/* A dollar-quote delimiter ($$ or $tag$) at p: its length, or 0. */
static size_t dollar_delim(const unsigned char *s, size_t n, size_t p)
{
	size_t k = p + 1;
	if (k < n && is_ident_start(s[k])) {
		k++;
		while (k < n && (is_ident_start(s[k]) || is_digit(s[k])))
			k++;
	}
	return k < n && s[k] == '$' ? k + 1 - p : 0;
}

/* The first token at or after p. */
static void lex(const unsigned char *s, size_t n, size_t p, struct tok *t)
{
	p = skip_blank(s, n, p);
	memset(t, 0, sizeof(*t));
	t->start = p;
	if (p >= n) {
		t->kind = K_END;
		t->end = n;
		return;
	}
	unsigned char c = s[p];
	unsigned char c1 = p + 1 < n ? s[p + 1] : 0;
	unsigned char c2 = p + 2 < n ? s[p + 2] : 0;
	if (is_digit(c) || (c == '.' && is_digit(c1))) {
		size_t k = p;
		t->integer = 1;
		while (k < n && is_digit(s[k]))
			k++;
		if (k < n && s[k] == '.' && !(k + 1 < n && s[k + 1] == '.')) {
			t->integer = 0;
			k++;
			while (k < n && is_digit(s[k]))
				k++;
		}
		if (k < n && (s[k] == 'e' || s[k] == 'E')) {
			size_t e = k + 1;
			if (e < n && (s[e] == '+' || s[e] == '-'))
				e++;
			if (e < n && is_digit(s[e])) {
				t->integer = 0;
				k = e;
				while (k < n && is_digit(s[k]))
					k++;
			}
		}
		t->kind = K_NUM;
		t->end = k;
	} else if (c == '\'') {
		t->kind = K_STR;
		t->end = scan_quoted(s, n, p + 1, 0);
	} else if ((c == 'e' || c == 'E') && c1 == '\'') {
		t->kind = K_STR;
		t->end = scan_quoted(s, n, p + 2, 1);
	} else if ((c == 'b' || c == 'B' || c == 'x' || c == 'X') && c1 == '\'') {
		t->kind = K_STR;
		t->end = scan_quoted(s, n, p + 2, 0);
	} else if ((c == 'u' || c == 'U') && c1 == '&' && c2 == '\'') {
		t->kind = K_USTR;
		t->end = scan_quoted(s, n, p + 3, 0);
	} else if (c == '"' || ((c == 'u' || c == 'U') && c1 == '&' && c2 == '"')) {
		size_t k = p + (c == '"' ? 1 : 3);
		while (k < n) {
			if (s[k] == '"') {
				if (k + 1 < n && s[k + 1] == '"') {
					k += 2;
					continue;
				}
				k++;
				break;
			}
			k++;
		}
		t->kind = K_QIDENT;
		t->end = k;
	} else if (c == '$' && is_digit(c1)) {
		size_t k = p + 1;
		unsigned long v = 0;
		while (k < n && is_digit(s[k])) {
			if (v < 1000000)
				v = v * 10 + (unsigned long)(s[k] - '0');
			k++;
		}
		t->kind = K_PARAM;
		t->param = v;
		t->end = k;
	} else if (c == '$' && dollar_delim(s, n, p)) {
		size_t d = dollar_delim(s, n, p);
		size_t k = p + d;
		t->kind = K_STR;
		t->end = n;
		for (; k + d <= n; k++) {
			if (s[k] == '$' && memcmp(s + k, s + p, d) == 0) {
				t->end = k + d;
				break;
			}
		}
	} else if (is_ident_start(c)) {
		size_t k = p + 1;
		while (k < n && is_ident_cont(s[k]))
			k++;
		t->kind = K_IDENT;
		t->end = k;
	} else if (c == ':') {
		t->kind = c1 == ':' ? K_CAST : K_OTHER;
		t->end = p + (c1 == ':' || c1 == '=' ? 2 : 1);
	} else if (is_op_char(c)) {
		/* scan.l's {operator}: the longest run of operator characters,
		 * cut where a comment starts; a trailing + or - is given back
		 * unless the operator holds one of ~!@#^&|`?% (so "=-1" is "="
		 * then "-1"). */
		size_t k = p;
		while (k < n && is_op_char(s[k])) {
			if (k > p && ((s[k] == '-' && k + 1 < n && s[k + 1] == '-') ||
			              (s[k] == '/' && k + 1 < n && s[k + 1] == '*')))
				break;
			k++;
		}
		size_t len = k - p;
		if (len > 1 && (s[p + len - 1] == '+' || s[p + len - 1] == '-')) {
			int special = 0;
			for (size_t i = 0; i + 1 < len; i++)
				if (strchr("~!@#^&|`?%", s[p + i]))
					special = 1;
			if (!special)
				while (len > 1 && (s[p + len - 1] == '+' || s[p + len - 1] == '-'))
					len--;
		}
		t->kind = K_OP;
		t->end = p + len;
	} else {
		t->kind = K_OTHER;
		t->end = p + (c == '.' && c1 == '.' ? 2 : 1);
	}
}

static int tok_is(const unsigned char *s, const struct tok *t, const char *word)
{
	size_t len = strlen(word);
	if (t->kind != K_IDENT || t->end - t->start != len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[t->start + i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c != (unsigned char)word[i])
			return 0;
	}
	return 1;
}

static int tok_any(const unsigned char *s, const struct tok *t, const char *const *words)
{
	for (; *words; words++)
		if (tok_is(s, t, *words))
			return 1;
	return 0;
}

static int tok_char(const unsigned char *s, const struct tok *t, char c)
{
	return (t->kind == K_OTHER || t->kind == K_OP) && t->end - t->start == 1 &&
	       s[t->start] == (unsigned char)c;
}

int sqlnorm_next(const char *sql, size_t len, size_t *pos, size_t *start, size_t *end)
{
	const unsigned char *s = (const unsigned char *)sql;
	size_t n = sql ? strnlen(sql, len) : 0;
	size_t p = *pos;
	while (p < n) {
		size_t seg = p;
		int significant = 0;
		struct tok t;
		for (;;) {
			lex(s, n, p, &t);
			p = t.end;
			if (t.kind == K_END || tok_char(s, &t, ';'))
				break;
			significant = 1;
		}
		size_t stop = t.kind == K_END ? n : t.start;
		if (!significant)
			continue;
		while (seg < stop && is_space(s[seg]))
			seg++;
		while (stop > seg && is_space(s[stop - 1]))
			stop--;
		*start = seg;
		*end = stop;
		*pos = p;
		return 1;
	}
	*pos = n;
	return 0;
}

/* The output: bytes past size - 1 are dropped and counted as cut. */
struct out {
	char *buf;
	size_t size, used;
	int cut;
};

static void put(struct out *o, const void *src, size_t len)
{
	if (!o->size)
		return;
	size_t room = o->size - 1 - o->used;
	if (len > room) {
		len = room;
		o->cut = 1;
	}
	memcpy(o->buf + o->used, src, len);
	o->used += len;
}

/* NUL-terminates, first dropping a UTF-8 character the cut left partial. */
static size_t finish(struct out *o)
{
	if (!o->size)
		return 0;
	if (o->cut && o->used) {
		size_t p = o->used;
		size_t back = 0;
		while (p > 0 && back < 4 && ((unsigned char)o->buf[p - 1] & 0xC0) == 0x80) {
			p--;
			back++;
		}
		if (p > 0) {
			unsigned char lead = (unsigned char)o->buf[p - 1];
			size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
			if (lead >= 0xC0 && need > back + 1)
				o->used = p - 1;
		}
	}
	o->buf[o->used] = '\0';
	return o->used;
}

static const char *const planned[] = {"select", "insert", "update", "delete", "merge",
                                      "values", "table",  "with",   NULL};

/* Keywords after which a minus is unary. */
static const char *const unary_after[] = {
        "select", "where",     "and",        "or",        "not",    "when", "then",     "else",
        "case",   "limit",     "offset",     "returning", "having", "on",   "between",  "like",
        "ilike",  "similar",   "from",       "in",        "by",     "to",   "for",      "using",
        "all",    "any",       "some",       "escape",    "return", "do",   "distinct", "first",
        "next",   "symmetric", "asymmetric", "zone",      NULL};

/* Keywords that end an ORDER BY / GROUP BY list at its depth. */
static const char *const list_end[] = {"limit",  "offset", "fetch",     "for",
                                       "having", "window", "union",     "intersect",
                                       "except", "order",  "returning", NULL};

static const char *const forms[] = {"nfc", "nfd", "nfkc", "nfkd", NULL};

/* Whether the statement is one PostgreSQL plans (and pg_stat_statements
 * normalises); *maxparam gets its highest $N. */
static int is_planned(const unsigned char *s, size_t n, unsigned long *maxparam)
{
	struct tok t, prev = {.kind = K_END};
	size_t p = 0;
	int first = 1, planned_kw = 0, depth = 0, into = 0;
	*maxparam = 0;
	for (;;) {
		lex(s, n, p, &t);
		if (t.kind == K_END)
			break;
		p = t.end;
		if (t.kind == K_PARAM && t.param > *maxparam)
			*maxparam = t.param;
		if (first && !tok_char(s, &t, '(')) {
			first = 0;
			planned_kw = tok_any(s, &t, planned);
		}
		if (tok_char(s, &t, '('))
			depth++;
		else if (tok_char(s, &t, ')') && depth > 0)
			depth--;
		else if (depth == 0 && tok_is(s, &t, "into") && !tok_is(s, &prev, "insert") &&
		         !tok_is(s, &prev, "merge"))
			into = 1;
		prev = t;
	}
	return planned_kw && !into;
}

/* At a '(' (t): whether "( NUM [, NUM]... )" follows; *close gets the end
 * of the ')'. */
static int modifier_list(const unsigned char *s, size_t n, const struct tok *open, size_t *close)
{
	struct tok t;
	size_t p = open->end;
	for (int i = 0; i < 16; i++) {
		lex(s, n, p, &t);
		if (t.kind != K_NUM || !t.integer)
			return 0;
		lex(s, n, t.end, &t);
		if (tok_char(s, &t, ')')) {
			*close = t.end;
			return 1;
		}
		if (!tok_char(s, &t, ','))
			return 0;
		p = t.end;
	}
	return 0;
}

/* After "::" or AS at p: type name words, then a modifier list?  *close
 * gets the end of its ')'. */
static int type_modifier_after(const unsigned char *s, size_t n, size_t p, size_t *close)
{
	struct tok t;
	int words = 0;
	for (int i = 0; i < 8; i++) {
		lex(s, n, p, &t);
		if (t.kind == K_IDENT || t.kind == K_QIDENT || tok_char(s, &t, '.')) {
			words += t.kind != K_OTHER;
			p = t.end;
			continue;
		}
		return words && tok_char(s, &t, '(') && modifier_list(s, n, &t, close);
	}
	return 0;
}

/* At p: the end of an operand the grammar folds a unary minus into (a
 * number, "- operand" or "( operand )", not followed by a cast or a
 * subscript), or 0. */
static size_t foldable(const unsigned char *s, size_t n, size_t p, int depth)
{
	struct tok t, after;
	size_t end;
	if (depth > 32)
		return 0;
	lex(s, n, p, &t);
	if (t.kind == K_NUM) {
		end = t.end;
	} else if (tok_char(s, &t, '-')) {
		end = foldable(s, n, t.end, depth + 1);
	} else if (tok_char(s, &t, '(')) {
		end = foldable(s, n, t.end, depth + 1);
		if (end) {
			lex(s, n, end, &after);
			end = tok_char(s, &after, ')') ? after.end : 0;
		}
	} else {
		return 0;
	}
	if (!end)
		return 0;
	lex(s, n, end, &after);
	return after.kind == K_CAST || tok_char(s, &after, '[') ? 0 : end;
}

#define DEPTH_BITS 64

/* Appends the statement s[0..n) (no NUL inside), normalised, to o. */
static void normalise(const unsigned char *s, size_t n, struct out *o)
{
	unsigned long maxparam;
	if (!is_planned(s, n, &maxparam)) {
		put(o, s, n);
		return;
	}

	struct tok t, prev = {.kind = K_END}, prev2 = {.kind = K_END};
	size_t p = 0, copied = 0;
	size_t typmod_until = 0, skip_until = 0;
	unsigned long number = maxparam;
	int depth = 0;
	/* Bit d: the '(' that opened depth d starts a query / is normalize()'s. */
	uint64_t query_paren = 0, normalize_paren = 0;
	/* An item of a position list starts at depth list_depth + item_open
	 * ("ORDER BY ((1))" is position 1). */
	int list_depth = -1, item_start = 0, item_open = 0, just_opened = 0;
	for (;;) {
		lex(s, n, p, &t);
		if (t.kind == K_END)
			break;
		p = t.end;
		size_t cstart = t.start, cend = t.end;
		int constant = 0;

		if (just_opened) {
			just_opened = 0;
			if (depth < DEPTH_BITS && tok_any(s, &t, planned))
				query_paren |= 1ull << depth;
		}
		int query_level = depth == 0 || (depth < DEPTH_BITS && (query_paren >> depth & 1));

		switch (t.kind) {
		case K_STR: constant = !tok_is(s, &prev, "uescape"); break;
		case K_USTR: constant = 1; break;
		case K_NUM: {
			constant = t.start >= typmod_until && t.start >= skip_until;
			if (constant && t.integer && item_start &&
			    depth == list_depth + item_open) {
				struct tok next = t;
				int closed = 1;
				for (int i = 0; i < item_open && closed; i++) {
					lex(s, n, next.end, &next);
					closed = tok_char(s, &next, ')');
				}
				lex(s, n, next.end, &next);
				if (closed && (next.kind == K_END || next.kind == K_IDENT ||
				               tok_char(s, &next, ',') || tok_char(s, &next, ')')))
					constant = 0;
			}
			break;
		}
		case K_IDENT: {
			struct tok next;
			if (tok_is(s, &t, "true") || tok_is(s, &t, "false") ||
			    tok_is(s, &t, "null"))
				constant = !tok_is(s, &prev, "is") &&
				           !(tok_is(s, &prev, "not") && tok_is(s, &prev2, "is")) &&
				           !(tok_is(s, &t, "null") && tok_is(s, &prev, "from") &&
				             tok_is(s, &prev2, "distinct"));
			else if (tok_is(s, &t, "all"))
				constant = tok_is(s, &prev, "limit");
			else if (tok_char(s, &prev, '(') && tok_is(s, &prev2, "extract"))
				constant = 1;
			else if (tok_any(s, &t, forms)) {
				lex(s, n, t.end, &next);
				constant = tok_is(s, &next, "normalized") ||
				           (tok_char(s, &prev, ',') && tok_char(s, &next, ')') &&
				            depth > 0 && depth < DEPTH_BITS &&
				            (normalize_paren >> depth & 1));
			}
			break;
		}
		case K_OP:
			if (tok_char(s, &t, '-') && t.start >= skip_until &&
			    (prev.kind == K_END || prev.kind == K_OP || prev.kind == K_CAST ||
			     tok_char(s, &prev, '(') || tok_char(s, &prev, ',') ||
			     tok_char(s, &prev, '[') || tok_char(s, &prev, ':') ||
			     tok_any(s, &prev, unary_after))) {
				/* The grammar folds a minus into the number it negates,
				 * through parentheses and other minus signs ("-(-1)" is
				 * one constant), unless a cast or a subscript binds
				 * first; pg_stat_statements then replaces the minus and
				 * the token after it: "- 1" whole, "-(-1)" as "$1-1)". */
				struct tok next;
				size_t fold_end = foldable(s, n, t.end, 0);
				if (fold_end) {
					lex(s, n, t.end, &next);
					constant = 1;
					cend = next.end;
					skip_until = fold_end;
					if (next.kind == K_NUM) {
						p = next.end;
						t = next;
					}
				}
			}
			break;
		default: break;
		}

		/* Type modifiers: after "::" or AS, and in "type(N) 'literal'". */
		size_t close;
		if ((t.kind == K_CAST || tok_is(s, &t, "as")) &&
		    type_modifier_after(s, n, t.end, &close))
			typmod_until = close;
		if (t.kind == K_IDENT) {
			struct tok next, after;
			lex(s, n, t.end, &next);
			if (tok_char(s, &next, '(') && modifier_list(s, n, &next, &close)) {
				lex(s, n, close, &after);
				if (after.kind == K_STR)
					typmod_until = close;
			}
		}

		/* Parentheses, and the lists whose integers are positions. */
		if (tok_char(s, &t, '(')) {
			depth++;
			if (depth < DEPTH_BITS) {
				uint64_t bit = 1ull << depth;
				query_paren &= ~bit;
				normalize_paren &= ~bit;
				if (tok_is(s, &prev, "normalize"))
					normalize_paren |= bit;
			}
			just_opened = 1;
			if (tok_is(s, &prev, "on") && tok_is(s, &prev2, "distinct") &&
			    query_level) {
				list_depth = depth;
				item_start = 1;
				item_open = 0;
				goto emitted;
			}
			if (item_start && depth - 1 == list_depth + item_open) {
				item_open++;
				goto emitted;
			}
		} else if (tok_char(s, &t, ')')) {
			if (depth > 0)
				depth--;
			if (depth < list_depth)
				list_depth = -1;
		} else if (tok_is(s, &t, "by") &&
		           (tok_is(s, &prev, "order") || tok_is(s, &prev, "group")) &&
		           query_level) {
			list_depth = depth;
			item_start = 1;
			item_open = 0;
			goto emitted;
		} else if (depth == list_depth &&
		           (tok_char(s, &t, ';') || tok_any(s, &t, list_end))) {
			list_depth = -1;
		}
		item_start = depth == list_depth && tok_char(s, &t, ',');
		item_open = 0;
	emitted:
		if (constant) {
			char num[24];
			int k = 0;
			unsigned long v = ++number;
			char rev[24];
			do {
				rev[k++] = (char)('0' + v % 10);
				v /= 10;
			} while (v);
			num[0] = '$';
			for (int i = 0; i < k; i++)
				num[1 + i] = rev[k - 1 - i];
			put(o, s + copied, cstart - copied);
			put(o, num, (size_t)k + 1);
			copied = cend;
		}
		prev2 = prev;
		prev = t;
	}
	put(o, s + copied, n - copied);
}

size_t sqlnorm_statement(const char *sql, size_t len, char *out, size_t size)
{
	struct out o = {.buf = out, .size = size};
	normalise((const unsigned char *)sql, sql ? strnlen(sql, len) : 0, &o);
	return finish(&o);
}

size_t sqlnorm_text(const char *sql, size_t len, char *out, size_t size)
{
	struct out o = {.buf = out, .size = size};
	size_t n = sql ? strnlen(sql, len) : 0;
	size_t pos = 0, start, end;
	int first = 1;
	while (!o.cut && sqlnorm_next(sql, n, &pos, &start, &end)) {
		if (!first)
			put(&o, "; ", 2);
		first = 0;
		normalise((const unsigned char *)sql + start, end - start, &o);
	}
	return finish(&o);
}
