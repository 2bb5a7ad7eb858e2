#!/usr/bin/env bash
# test-render-tools.sh — the new renderers and views (issue #13) read by
# other people's tools, through `flamefs-collect export`:
#   - callgrind_annotate (valgrind) reads `--format callgrind` of a real
#     perf recording with recursion and of a many-binary system recording,
#     and its inclusive (--inclusive=yes) and self costs equal the function
#     view's totals and selfs, function by function;
#   - xmllint finds every flame.svg well-formed (plain, diff, callers,
#     callees, names with markup, controls and invalid UTF-8);
#   - headless Chromium renders one (a screenshot), zooms when a frame is
#     clicked where it is drawn (hit-tested), and its search reports the
#     share the function view gives;
#   - xmllint finds timeline.svg well-formed, with a bar per timeline line,
#     and Chromium draws its bars (a pixel of their colour);
#   - go tool pprof reads the pprof of callers/, callees/ and a diff with
#     the totals they must have;
#   - --from/--to/--last hold exactly the buckets that overlap the window,
#     and --base gives difffolded's "stack A B" lines.
#   usage: test-render-tools.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-import.sh"

missing=
for tool in callgrind_annotate xmllint chromium perl python3; do
	command -v "$tool" >/dev/null || missing="$missing $tool"
done
if [ -n "$missing" ]; then
	echo "SKIP: not installed:$missing (contrib/install-deps.sh installs them)"
	exit 77
fi

export_() { "$collect" export --store "$tmp/store" "$@"; }

"$collect" import --store "$tmp/store" --format perf "$here/data/perf/loop.perf" >/dev/null 2>&1 ||
	bad "import loop.perf"
"$collect" import --store "$tmp/store" --format perf "$here/data/perf/system.perf" >/dev/null 2>&1 ||
	bad "import system.perf"

# ---- callgrind_annotate ---------------------------------------------------------------------
# annotate FILE yes|no: "COST NAME" per function, as callgrind_annotate prints them.
annotate() {
	callgrind_annotate --inclusive="$2" --threshold=100 "$1" 2>"$tmp/annotate.err" | perl -ne '
		next unless /^\s*([\d,]+)\s+\([^)]*\)\s+[\d,]+\s+\([^)]*\)\s+(\S.*)$/;
		my ($cost, $rest) = ($1, $2);
		next if $rest eq "PROGRAM TOTALS";
		$cost =~ tr/,//d;
		$rest =~ s/ \[(\[[^\]]*\]|[^\[\]]*)\]$//;   # the object: [path] or [[kernel.kallsyms]]
		$rest =~ s/^[^:]*://;        # the file
		print "$cost $rest\n";' | sort
}
for sel in "--binary loop" "--binary loop --callers spin" ""; do
	what="callgrind of ${sel:-the whole store}"
	# shellcheck disable=SC2086
	export_ $sel --format callgrind -o "$tmp/cg" || bad "$what: export"
	# shellcheck disable=SC2086
	if [ -z "$sel" ] || [ "${sel#*callers}" = "$sel" ]; then
		export_ $sel --functions >"$tmp/functions"
	else
		# The callers tree's own functions: export its folded and index that.
		export_ $sel --format folded | "$collect" import --store "$tmp/cstore" --format folded \
			--binary callers - >/dev/null 2>&1
		"$collect" export --store "$tmp/cstore" --functions >"$tmp/functions"
	fi
	annotate "$tmp/cg" yes >"$tmp/incl"
	annotate "$tmp/cg" no >"$tmp/self"
	check "$what: callgrind_annotate read it" test -s "$tmp/incl" -a ! -s "$tmp/annotate.err"
	# Every function of the view, with its total and self.
	awk '{ t = $2; $1 = $2 = ""; sub(/^  /, ""); print t " " $0 }' "$tmp/functions" | sort >"$tmp/want-incl"
	awk '$1 > 0 { s = $1; $1 = $2 = ""; sub(/^  /, ""); print s " " $0 }' "$tmp/functions" | sort >"$tmp/want-self"
	missing_incl=$(comm -13 "$tmp/incl" "$tmp/want-incl" | wc -l)
	missing_self=$(comm -13 "$tmp/self" "$tmp/want-self" | wc -l)
	check "$what: inclusive costs equal the totals ($(wc -l <"$tmp/want-incl") functions)" \
		test "$missing_incl" = 0
	check "$what: self costs equal the selfs" test "$missing_self" = 0
	[ "$missing_incl" = 0 ] || comm -13 "$tmp/incl" "$tmp/want-incl" | head -5
	total=$(export_ $sel --format folded | awk '{ s += $NF } END { print s + 0 }')
	summary=$(callgrind_annotate "$tmp/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	check "$what: PROGRAM TOTALS = the folded sum ($total)" test "$summary" = "$total"
done
# recursion: loop's `recurse` calls itself; its inclusive cost counts each stack once.
export_ --binary loop --format callgrind -o "$tmp/cg"
recurse_incl=$(annotate "$tmp/cg" yes | awk '$2 == "recurse" { print $1 }')
recurse_total=$(export_ --binary loop --functions | awk '$3 == "recurse" { print $2 }')
check "recursive recurse: inclusive $recurse_incl = total $recurse_total" \
	test -n "$recurse_incl" -a "$recurse_incl" = "$recurse_total"

# ---- xmllint ---------------------------------------------------------------------------------
printf 'main;a<b>&"c" 5\nmain;ctl\001x 3\nmain;bad\377\376 2\nmain;caf\303\251 1\nmain;]]>x 1\n' \
	>"$tmp/weird.folded"
"$collect" import --store "$tmp/store" --format folded --binary weird --version 1 \
	"$tmp/weird.folded" >/dev/null 2>&1 || bad "import weird names"
printf 'main;a;f;f;g 10\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;c;g;f;g 2\n' >"$tmp/v1.folded"
printf 'main;a;f;f;g 20\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;d 9\n' >"$tmp/v2.folded"
"$collect" import --store "$tmp/store" --binary app --version 1 "$tmp/v1.folded" >/dev/null 2>&1
"$collect" import --store "$tmp/store" --binary app --version 2 "$tmp/v2.folded" >/dev/null 2>&1
i=0
for sel in "--binary loop" "" "--binary weird" "--binary app --version 2 --base 1" \
	"--binary loop --callers spin" "--binary loop --callees recurse"; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	export_ $sel --format svg -o "$tmp/$i.svg" || bad "svg export $sel"
	check "xmllint: flame.svg of ${sel:-the whole store} is well-formed" \
		xmllint --noout "$tmp/$i.svg"
done

# ---- Chromium -------------------------------------------------------------------------------
chrome --window-size=1200,420 --screenshot="$tmp/flame.png" "file://$tmp/1.svg" >/dev/null
check "chromium renders flame.svg to a picture" \
	test "$(head -c 8 "$tmp/flame.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a -a \
	"$(stat -c %s "$tmp/flame.png" 2>/dev/null || echo 0)" -gt 5000
export_ --binary loop --format timeline.svg -o "$tmp/timeline.svg" || bad "timeline.svg export"
check "xmllint: timeline.svg is well-formed" xmllint --noout "$tmp/timeline.svg"
check "timeline.svg draws a bar per line of timeline" \
	test "$(grep -c '<rect class="bar"' "$tmp/timeline.svg")" = "$(export_ --binary loop --format timeline | grep -vc '^#')"
chrome --window-size=1200,360 --screenshot="$tmp/timeline.png" "file://$tmp/timeline.svg" >/dev/null
check "chromium renders timeline.svg to a picture with its bar's colour (230,120,30)" \
	python3 "$(dirname "$0")/png-colour.py" "$tmp/timeline.png" 230 120 30
# inject SVG NAME SCRIPT: a copy of SVG with SCRIPT run 10 ms after load;
# the script leaves its findings in the root's data-test attribute.
inject() {
	python3 - "$1" "$2" "$3" <<'PY'
import sys
src, dst, body = sys.argv[1:4]
s = open(src, encoding="utf-8").read()
js = ('<script type="text/ecmascript"><![CDATA[\nwindow.addEventListener("load", function () {'
      ' setTimeout(function () {\n' + body + '\n}, 10); });\n]]></script>\n</svg>\n')
open(dst, "w", encoding="utf-8").write(s.replace("</svg>\n", js))
PY
}
# A click where the frame is drawn (elementFromPoint: hit testing), as a user clicks.
inject "$tmp/1.svg" "$tmp/click.svg" '
	var gs = document.getElementById("frames").children, target = null;
	for (var i = 0; i < gs.length; i++)
		if (gs[i].querySelector("title").textContent.indexOf("middle (") === 0 &&
		    (!target || +gs[i].querySelector("rect").getAttribute("width") <
		                +target.querySelector("rect").getAttribute("width")))
			target = gs[i];
	var before = target.querySelector("rect").getAttribute("width");
	var r = target.querySelector("rect").getBoundingClientRect();
	var el = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
	el.dispatchEvent(new MouseEvent("click", {bubbles: true, view: window}));
	var hidden = 0, parents = 0, kids = 0, y = +target.querySelector("rect").getAttribute("y");
	for (var i = 0; i < gs.length; i++) {
		var c = gs[i].classList, gr = gs[i].querySelector("rect");
		if (c.contains("hide")) hidden++;
		else if (c.contains("parent")) parents++;
		else if (+gr.getAttribute("y") < y && +gr.getAttribute("width") > 0) kids++;
	}
	document.documentElement.setAttribute("data-test", "hit=" + (el.parentNode === target) +
		" before=" + before + " after=" + target.querySelector("rect").getAttribute("width") +
		" hidden=" + hidden + " parents=" + parents + " kids=" + kids +
		" unzoom=" + !document.getElementById("unzoom").classList.contains("hide"));'
result=$(chrome --virtual-time-budget=5000 --dump-dom "file://$tmp/click.svg" | grep -o 'data-test="[^"]*"')
echo "     chromium after the click: $result"
check "a click zooms the clicked frame to the full width" \
	perl -e 'exit !($ARGV[0] =~ /hit=true before=(\S+) after=1180.0 hidden=([1-9]\d*) parents=([1-9]\d*) kids=([1-9]\d*) unzoom=true/ && $1 < 1180)' "$result"
# The search: the share of "spin" it reports is spin's share in the function view.
inject "$tmp/1.svg" "$tmp/search.svg" '
	search(/^spin$/);
	document.documentElement.setAttribute("data-test", document.getElementById("matched").textContent);'
matched=$(chrome --virtual-time-budget=5000 --dump-dom "file://$tmp/search.svg" | grep -o 'data-test="[^"]*"')
want=$(export_ --binary loop --format folded | awk '{ s += $NF; if ($0 ~ /;spin( |;)/) p += $NF }
	END { printf "Matched: %.1f%%\n", 100 * p / s }')
check "search for spin: $matched, the view says $want" test "$matched" = "data-test=\"$want\""

# ---- go tool pprof --------------------------------------------------------------------------
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	pprof_total() {
		go tool pprof -raw "$1" 2>/dev/null |
			awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
			     s && /:/ { split($0, a, ":"); split(a[1], v, " "); t += v[2] }
			     END { printf "%.0f\n", t }'
	}
	spin_total=$(export_ --binary loop --functions | awk '$3 == "spin" { print $2 }')
	for side in callers callees; do
		export_ --binary loop --"$side" spin --format pprof -o "$tmp/$side.pb.gz"
		check "go tool pprof: $side of spin total $spin_total" \
			test "$(pprof_total "$tmp/$side.pb.gz")" = "$spin_total"
	done
	export_ --binary app --version 2 --base 1 --format pprof -o "$tmp/diff.pb.gz"
	check "go tool pprof: the diff's total is B - A (44 - 27)" \
		test "$(pprof_total "$tmp/diff.pb.gz")" = 17
else
	echo "SKIP: go tool pprof checks (go not installed)"
fi

# ---- diff ------------------------------------------------------------------------------------
perl -e '
	my %c;
	for my $i (0, 1) {
		open(my $f, "<", $ARGV[$i]) or die;
		while (<$f>) { /^(.*) (\d+)$/ or next; $c{"app;$1"}[$i] += $2 }
	}
	for (sort keys %c) { printf "%s %d %d\n", $_, $c{$_}[0] // 0, $c{$_}[1] // 0 }
' "$tmp/v1.folded" "$tmp/v2.folded" >"$tmp/diff.want"
export_ --binary app --version 2 --base 1 >"$tmp/diff.got"
same "$tmp/diff.got" "$tmp/diff.want" "--base: difffolded's stack A B lines"
n=$((n + 1))
export_ --binary app --version 2 --base 1 --format regressions >"$tmp/reg"
check "regressions: +20.5% app;main;d first" test "$(head -1 "$tmp/reg")" = "+20.5% app;main;d"

# ---- windows ---------------------------------------------------------------------------------
t0=1795000020 # a bucket start
for i in 0 1 2 3; do
	echo "main;w$i $((1 << i))" >"$tmp/w$i.folded"
	"$collect" import --store "$tmp/store" --binary win --version 1 --time $((t0 + 60 * i + 13)) \
		"$tmp/w$i.folded" >/dev/null 2>&1
done
wsum() { export_ --binary win "$@" | awk '{ s += $NF } END { print s + 0 }'; }
check "--from/--to: one bucket" test "$(wsum --from $t0 --to $((t0 + 60)))" = 1
check "--from/--to: overlapping buckets widen the window" \
	test "$(wsum --from $((t0 + 30)) --to $((t0 + 61)))" = 3
check "--from/--to in ISO 8601" \
	test "$(wsum --from "$(date -u -d @$((t0 + 60)) +%Y-%m-%dT%H:%M:%SZ)" --to "$(date -u -d @$((t0 + 180)) +%Y-%m-%dT%H:%M:%SZ)")" = 6
check "--from/--to: an empty window is empty" test "$(wsum --from $((t0 + 60)) --to $((t0 + 60)))" = 0
if export_ --binary win --from $((t0 + 60)) --to $t0 >"$tmp/rev.out" 2>"$tmp/rev.err"; then
	bad "--from after --to: exits 0 with an empty export"
else
	check "--from after --to: a usage error that says so" grep -q -- "--from must not come after --to" "$tmp/rev.err"
fi
now=$(date +%s)
echo "main;recent 5" >"$tmp/recent.folded"
echo "main;old 7" >"$tmp/old.folded"
"$collect" import --store "$tmp/store" --binary live --version 1 --time $((now - 30)) "$tmp/recent.folded" >/dev/null 2>&1
"$collect" import --store "$tmp/store" --binary live --version 1 --time $((now - 900)) "$tmp/old.folded" >/dev/null 2>&1
lsum() { export_ --binary live "$@" | awk '{ s += $NF } END { print s + 0 }'; }
check "--last 5m holds the recent count only" test "$(lsum --last 5m)" = 5
check "--last 1h holds both" test "$(lsum --last 1h)" = 12

# perf's clock (loop.perf's samples are at 599.4-599.6 s since boot), and
# --clock-offset turning it into Unix time.
"$collect" import --store "$tmp/store" --format perf --binary shifted --clock-offset $((t0 - 540)) \
	"$here/data/perf/loop.perf" >/dev/null 2>&1 || bad "import --clock-offset"
"$collect" import --store "$tmp/store" --format perf --binary perfclock \
	"$here/data/perf/loop.perf" >/dev/null 2>&1 || bad "import loop.perf as perfclock"
all=$(export_ --binary perfclock --format folded | awk '{ s += $NF } END { print s + 0 }')
check "perf's clock: loop.perf is in [540, 600) since boot" \
	test "$(export_ --binary perfclock --from 540 --to 600 | awk '{ s += $NF } END { print s + 0 }')" = "$all"
check "--clock-offset: the shifted copy is in the bucket of t0 + 59" \
	test "$(export_ --binary shifted --from $((t0 + 59)) --to $((t0 + 60)) | awk '{ s += $NF } END { print s + 0 }')" = "$all"
check "--clock-offset: and nowhere else" \
	test "$(export_ --binary shifted --from $((t0 + 60)) --to $((t0 + 9999)) | wc -l)" = 0

echo "$n checks, $failures failures"
[ "$failures" = 0 ]
