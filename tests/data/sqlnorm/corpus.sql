SELECT 1
----8<----
SELECT true, false, NULL
----8<----
SELECT * FROM t WHERE b = true AND c IS NULL AND b IS NOT TRUE AND c IS NOT NULL AND b IS NOT false
----8<----
SELECT -1, - 2, 3-4, -5::int, -(6), -2^2, +7, 8--9
----8<----
SELECT a FROM t WHERE a=-1 OR a<-2 OR a*-3 > 0 OR @ -1 > a OR -a = -((4))
----8<----
SELECT date '2020-01-01', interval '1 day', timestamp(2) '2020-01-01', time '10:00'
----8<----
SELECT 1::numeric(10,2), CAST(2 AS varchar(3)), 'x'::char(3), '1'::bit varying(5), 2.5::double precision
----8<----
SELECT a, count(*) FROM t GROUP BY 1 ORDER BY 1 DESC, 2
----8<----
SELECT a, c FROM t ORDER BY 2 NULLS FIRST, 1 + 1, a LIMIT 3
----8<----
SELECT sum(a) OVER (ORDER BY 1) FROM t
----8<----
SELECT array_agg(a ORDER BY 1), string_agg(c, ',' ORDER BY 1) FROM t
----8<----
SELECT * FROM (SELECT a FROM t ORDER BY 1) s, (SELECT 5) u
----8<----
SELECT extract(year from now()), substring('abc' from 1 for 2), trim(both 'x' from 'xax'), extract(epoch FROM now())
----8<----
SELECT U&'d\0061t\+000061', U&'d!0061t' UESCAPE '!', N'abc', E'a\'b\\', B'101', X'1F', $$x$$, $q$y'$$z$q$
----8<----
SELECT 'a'
  'b', 'c' -- comment
  'd', E'\n'
	'e'
----8<----
SELECT 1; SELECT 2 ;  /* c */ SELECT 'x' -- end
----8<----
/* lead */ SELECT 1 -- trail
----8<----
SELECT /* nested /* comment */ 1 */ 2, 3 -- 4
----8<----
SELECT a FROM t WHERE a IN (1, 2, 3) LIMIT 5 OFFSET 2
----8<----
SELECT a FROM t LIMIT ALL
----8<----
SELECT 1 FROM t FETCH FIRST 3 ROWS ONLY
----8<----
SELECT f[1], f[1:2], f[-1] FROM t
----8<----
SELECT 'é' || 'ü', 1.5e3, .5, 1., 1e-3, 12e+2 AS "ÿ", 'ü€😀'
----8<----
INSERT INTO t (a, c) VALUES (1, 'x'), (2, NULL), (-3, 'it''s')
----8<----
UPDATE t SET a = a - 1, c = 'y' WHERE a = -3
----8<----
DELETE FROM t WHERE c LIKE 'a%' ESCAPE '\' RETURNING a + 1
----8<----
CREATE TABLE u (a int DEFAULT 5, b varchar(10) DEFAULT 'x')
----8<----
CREATE TEMP TABLE v AS SELECT 1 AS one
----8<----
SELECT 2 AS two INTO TEMP w
----8<----
EXPLAIN SELECT 1
----8<----
SET work_mem = '64MB'
----8<----
WITH x AS (SELECT 1 AS y) SELECT y + 2 FROM x
----8<----
WITH x AS (SELECT a FROM t ORDER BY 1) SELECT * FROM x
----8<----
SELECT DISTINCT ON (1) a FROM t
----8<----
SELECT a AS "1", a AS "a""b" FROM t WHERE c = 'it''s'
----8<----
SELECT normalize('a', NFC), 'a' IS NFC NORMALIZED, now() AT TIME ZONE 'UTC', position('a' in 'bab')
----8<----
SELECT 1::int8 - -1, ARRAY[1,2], '{1,2}'::int[]
----8<----
SELECT interval '1' day, cast('1' as interval hour to minute), 'x' COLLATE "C"
----8<----
VALUES (1, 'a'), (2, 'b')
----8<----
TABLE t
----8<----
(SELECT 1) UNION ALL (SELECT 2 ORDER BY 1)
----8<----
select CASE WHEN a > 1 THEN -1 ELSE 0 END from t where a between -1 and 2
----8<----
SELECT a FROM t WHERE a = ANY('{1,2}') AND c ~ '^x' AND a IS DISTINCT FROM NULL
----8<----
SELECT 1 AS x, 'a$b' AS "$y", $$ $1 'q' $$ AS z
----8<----
SELECT 1;;; SELECT 2;
----8<----
SELECT coalesce(NULL::int, -1), nullif(1, 1), greatest(1, 2.5)
----8<----
INSERT INTO t (a) SELECT g FROM generate_series(1, 3) g ON CONFLICT DO NOTHING
----8<----
SELECT a FROM t t1 JOIN t t2 USING (a) WHERE t1.a > 0 GROUP BY t1.a HAVING count(*) > 1
----8<----
SELECT 0.0, 00012, 1.5
----8<----
SELECT - /* c */ 1, -- x
  - 2, 3 - -- y
  4
----8<----
SELECT $a$ $b$ x $b$ $a$, $_$'$_$, E'\\', E'\'', E'\\''', 'a\', 'b''c'
----8<----
SELECT 'x' --c
  -- d
  'y'
----8<----
SELECT a FROM t WHERE c = 'Ünïcödé ✓ 日本語' AND c <> E'\u00e9' AND c <> U&'\00e9'
----8<----
SELECT CAST(1.5 AS numeric(4, 1)), '2020-01-01'::timestamp(3) with time zone, 5::float(24)
----8<----
SELECT a FROM t GROUP BY a, 1 + 0 ORDER BY a DESC NULLS LAST, 1
----8<----
SELECT a, c FROM t ORDER BY (1), ((2)), (1 + 0), (a)
----8<----
SELECT 1 FROM t LIMIT 1 OFFSET -0
----8<----
SELECT a FROM t WHERE a NOT IN (-1, +2) AND NOT a = 3 AND a >= -4.5e2
----8<----
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r ORDER BY 1 DESC
----8<----
MERGE INTO t USING (SELECT 1 AS a) s ON t.a = s.a WHEN MATCHED THEN UPDATE SET c = 'm' WHEN NOT MATCHED THEN INSERT (a, c) VALUES (s.a, 'n')
----8<----
DO $$BEGIN PERFORM 1; END$$
----8<----
COPY (SELECT 1, 'a') TO STDOUT
----8<----
BEGIN; SELECT 1; COMMIT
----8<----
SELECT pg_sleep(0), 'tab	inside', 'cr
newline'
----8<----
select x.* from (values (1, 'one'), (2, 'two')) as x(n, name) where n <> 3 order by 2
----8<----
SELECT a FROM t LIMIT -(-1) OFFSET - - 0
----8<----
SELECT -(-(2)), -((-3)), (-4), -(-5)::int, - -6 + 1, -(ARRAY[7])[1]
