#!/usr/bin/env python3
# sqlnorm-gen.py — statements for tests/test-sqlnorm.sh (c): SEED COUNT
# prints COUNT statements, each followed by a NUL byte, built at random from SEED (the same lines for the same seed) out of
# the literals, operators and clauses whose normalisation depends on the
# tokens around them: negative numbers through parentheses, typed literals,
# type modifiers, IS [NOT] tests, ORDER BY positions, LIMIT ALL/NULL, IN
# lists.  Some do not type-check (text + int): PostgreSQL refuses them and
# the test skips them.
import random
import sys

r = random.Random(int(sys.argv[1]))
lits = ["1", "-1", "- 2", "1.5", "-1.5e3", ".5", "'a'", "E'a\\'b'", "$$x$$", "$t$y$t$", "B'10'", "X'ff'",
        "true", "false", "NULL", "'2020-01-01'::date", "date '2020-01-01'", "1::int", "-1::int", "(-1)", "-(1)",
        "-(-1)", "'x'::varchar(3)", "interval '1 day'", "U&'\\0061'", "'é'", "'a'\n 'b'",
        "CAST(1 AS numeric(5,1))", "ARRAY[1,-2]", "'{1}'::int[]", "1::numeric(4,2)"]


def lit():
    return r.choice(lits)


def expr(d=0):
    k = r.random()
    if d > 2 or k < 0.4:
        return r.choice([lit(), "a", "c"]) if r.random() < 0.7 else lit()
    if k < 0.6:
        return "(" + expr(d + 1) + ")"
    if k < 0.8:
        return "coalesce(" + expr(d + 1) + ", " + expr(d + 1) + ")"
    return expr(d + 1) + " " + r.choice(["+", "-"]) + " " + expr(d + 1)


def stmt():
    k = r.random()
    cols = ", ".join(expr() for _ in range(r.randint(1, 3)))
    if k < 0.5:
        s = "SELECT " + cols + " FROM t"
        if r.random() < 0.5:
            s += " WHERE a " + r.choice(["=", "<", ">", "<>"]) + " " + \
                r.choice(["1", "-1", "- 3", "(2)", "a - 1", "a-1", "a+-1", "-(-4)"])
        if r.random() < 0.3:
            s += " AND c IS " + r.choice(["NULL", "NOT NULL"])
        if r.random() < 0.3:
            s += " AND b IS " + r.choice(["TRUE", "NOT FALSE", "DISTINCT FROM NULL", "NOT DISTINCT FROM true"])
        if r.random() < 0.4:
            s += " ORDER BY " + r.choice(["1", "1 DESC", "(1)", "a", "1, a", "a, 1"])
        if r.random() < 0.4:
            s += " LIMIT " + r.choice(["1", "ALL", "NULL", "-(-1)"])
        return s
    if k < 0.7:
        return "SELECT a FROM t WHERE a IN (" + \
            ", ".join(r.choice(["1", "-2", "3.0", "'4'"]) for _ in range(r.randint(1, 4))) + ")"
    if k < 0.85:
        return "UPDATE t SET a = a " + r.choice(["+", "-"]) + " " + r.choice(["1", "-1", "- 1", "+1"]) + \
            " WHERE c = " + r.choice(["'x'", "E'\\\\'", "$$y$$"])
    return "INSERT INTO t (a, c) VALUES (" + r.choice(["1", "-1", "NULL", "(1)"]) + ", " + \
        r.choice(["'x'", "NULL", "'é'", "U&'\\00e9'"]) + ")"


for _ in range(int(sys.argv[2])):
    sys.stdout.write(stmt() + "\0")
