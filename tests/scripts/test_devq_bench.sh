#!/bin/sh
# SPDX-License-Identifier: MIT
# devq-bench output: one convention ("x better", >1: devq wins) in the
# table, the JSON and the plot, with a header that says so; the table's
# columns line up whatever the names; nothing refers to files that are not
# installed; --compare puts two --json runs side by side; --version,
# --list, --filter; progress on stderr only when asked for or on a
# terminal; the plot marks clipped bars and colours by the verdict.
set -u
b=${top_builddir:-.}
bench="$b/tools/devq-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$bench" --quick --plot "$tmp/p.svg" > "$tmp/table" 2> "$tmp/table.err" || fail "devq-bench --quick exited $?"
cat "$tmp/table.err"
# stderr is a file here, not a terminal: no progress by default.
if grep -q "^devq-bench: \[" "$tmp/table.err"; then fail "progress written when stderr is not a terminal"; fi
cat "$tmp/table"
grep -q "x better: how many times better devq did than the baseline (>1: devq wins)" "$tmp/table" ||
    fail "the table does not say which way is better"
# Every row's "x better" value ends in the same column as the header's.
col=$(awk 'NR == 2 { print index($0, "x better") + length("x better") - 1 }' "$tmp/table")
awk -v c="$col" 'NR > 2 && /x  / { if (substr($0, c, 1) != "x") bad = bad "\n" $0 }
    END { if (bad != "") { print "misaligned rows:" bad; exit 1 } }' "$tmp/table" || fail "columns"
grep -q "x better than the baseline (right of 1.0: devq wins)" "$tmp/p.svg" || fail "plot header"
if grep -n "RESULTS.md" "$tmp/table" "$tmp/p.svg"; then fail "refers to RESULTS.md, which is not installed"; fi

# --compare: matched by name and baseline, B/A of "x better".
cat > "$tmp/a.json" <<'J'
{"devq":"0.1.0","backend":"cpu","device":"x","quick":true,"better_is":"x better","results":[
{"name":"ping","unit":"ns","devq":10.000,"baseline":20.000,"baseline_is":"condvar","higher_is_better":false,"better":2.0000,"target":0.00},
{"name":"ping","unit":"ns","devq":10.000,"baseline":5.000,"baseline_is":"futex","higher_is_better":false,"better":0.5000,"target":0.00},
{"name":"gone","unit":"GB/s","devq":1.000,"baseline":1.000,"baseline_is":"loop","higher_is_better":true,"better":1.0000,"target":0.00}
]}
J
sed -e 's/"better":2.0000/"better":3.0000/' -e '/"gone"/d' "$tmp/a.json" > "$tmp/b.json"
"$bench" --compare "$tmp/a.json" "$tmp/b.json" > "$tmp/cmp" || fail "--compare exited $?"
cat "$tmp/cmp"
grep -q "^ping, vs condvar  *2.00x  *3.00x  *1.50x$" "$tmp/cmp" || fail "--compare condvar row"
grep -q "^ping, vs futex  *0.50x  *0.50x  *1.00x$" "$tmp/cmp" || fail "--compare futex row"
grep -q "^gone, vs loop  *1.00x  *-  *-$" "$tmp/cmp" || fail "--compare row missing from B"
echo '{"not":"ours"}' > "$tmp/c.json"
"$bench" --compare "$tmp/a.json" "$tmp/c.json" > /dev/null 2>&1 && fail "--compare accepted a foreign file"
"$bench" --compare "$tmp/a.json" > /dev/null 2>&1
[ $? = 2 ] || fail "--compare with one file should exit 2"

# --version, --list, --filter.
"$bench" --version | grep -q "^devq-bench [0-9][^ ]* (libdevq [0-9]" || fail "--version"
"$bench" --list > "$tmp/list" || fail "--list exited $?"
for c in signals queues launches saxpy compute buffers; do
    grep -q "^$c " "$tmp/list" || fail "--list lacks $c"
done
"$bench" --filter no-such-case > /dev/null 2> "$tmp/err"
[ $? = 2 ] || fail "--filter matching nothing should exit 2"
grep -q "matches no benchmark" "$tmp/err" || fail "--filter matching nothing: $(cat "$tmp/err")"

# Progress on stderr: forced with --progress (stderr is a file here: one
# line per case), none by default when stderr is not a terminal, none with -q.
"$bench" --quick --filter 'buf*' --progress > "$tmp/f.table" 2> "$tmp/f.err" || fail "--filter exited $?"
cat "$tmp/f.err"
grep -q "^devq-bench: \[1/1\] buffers (0\.[0-9] s elapsed when it started)$" "$tmp/f.err" ||
    fail "no progress line for the one case"
grep -q "^devq-bench: 1 case done in [0-9.]* s$" "$tmp/f.err" || fail "no closing progress line"
grep -q "^alloc/free pairs" "$tmp/f.table" || fail "--filter buf* ran no buffer row"
if grep -q "ping-pong" "$tmp/f.table"; then fail "--filter buf* ran the signal rows"; fi
"$bench" --quick --filter buffers --progress -q > /dev/null 2> "$tmp/q.err" || fail "-q exited $?"
[ -s "$tmp/q.err" ] && fail "progress written with -q"

# The plot of a saved run: bars past 8x are cut and say so with their
# value (151x and 63x differ); colours follow the table's verdict, not
# 1.0: 1.00x against a 1.0 target is met (green), 1.54x against 2.0 is
# missed (red), a row without target is neither.
cat > "$tmp/run.json" <<'J'
{"devq":"0.1.0","backend":"cpu","device":"x","quick":true,"better_is":"x better","results":[
{"name":"huge","unit":"pairs/s","devq":151.000,"baseline":1.000,"baseline_is":"malloc","higher_is_better":true,"better":151.0000,"target":2.00},
{"name":"large","unit":"ns","devq":1.000,"baseline":63.000,"baseline_is":"futex","higher_is_better":false,"better":63.0000,"target":0.00},
{"name":"even","unit":"ns","devq":10.000,"baseline":10.000,"baseline_is":"condvar","higher_is_better":false,"better":1.0000,"target":1.00},
{"name":"short","unit":"batch/s","devq":154.000,"baseline":100.000,"baseline_is":"queue","higher_is_better":true,"better":1.5400,"target":2.00}
]}
J
"$bench" --plot "$tmp/saved.svg" --from "$tmp/run.json" || fail "--plot --from exited $?"
bar() {   # name -> the class of its bar
    awk -v n=">$1</text>" 'index($0, n) { f = 1; next } f && /<rect class="bar/ {
        sub(/.*<rect class="bar /, ""); sub(/".*/, ""); print; exit }' "$tmp/saved.svg"
}
[ "$(bar huge)" = met ] || fail "151x over a 2x target is not drawn met: $(bar huge)"
[ "$(bar large)" = none ] || fail "63x without target: $(bar large)"
[ "$(bar even)" = met ] || fail "1.00x against a 1.00x target is not drawn met: $(bar even)"
[ "$(bar short)" = missed ] || fail "1.54x against a 2.00x target is not drawn missed: $(bar short)"
grep -q ">151.00x (clipped)</text>" "$tmp/saved.svg" || fail "151x bar not marked clipped"
grep -q ">63.00x (clipped)</text>" "$tmp/saved.svg" || fail "63x bar not marked clipped"
[ "$(grep -c 'class="clip"' "$tmp/saved.svg")" = 2 ] || fail "two clipped bars should end in a cut"
grep -q ">1.54x</text>" "$tmp/saved.svg" || fail "an unclipped value is not printed plain"
"$bench" --from "$tmp/run.json" > /dev/null 2>&1
[ $? = 2 ] || fail "--from without --plot should exit 2"

[ "$failures" = 0 ] && echo "PASS: devq-bench output" && exit 0
exit 1
