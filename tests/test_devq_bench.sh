#!/bin/sh
# SPDX-License-Identifier: MIT
# devq-bench output: one convention ("x better", >1: devq wins) in the
# table, the JSON and the plot, with a header that says so; the table's
# columns line up whatever the names; nothing refers to files that are not
# installed; --compare puts two --json runs side by side.
set -u
b=${top_builddir:-.}
bench="$b/tools/devq-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$bench" --quick --plot "$tmp/p.svg" > "$tmp/table" || fail "devq-bench --quick exited $?"
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

[ "$failures" = 0 ] && echo "PASS: devq-bench output" && exit 0
exit 1
