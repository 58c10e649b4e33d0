#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/bench-check.sh (make bench-check), against stand-in programs with
# known ratios: each recorded row is ok, OFF (worse beyond the stated
# tolerance, in either direction of "better"), IMPROVED or MISSING; the
# summary counts them; --write records the median of three runs; and the
# exit status is 0 whatever the rows say (it is information).
set -u
src=${top_srcdir:-.}
check="$src/bench/bench-check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A build folder with a stand-in devq-bench (--json, one result per line)
# whose "better" values come from $tmp/better, and a stand-in bench_vulkan.
mkdir -p "$tmp/b/tools" "$tmp/b/bench"
cat >"$tmp/b/tools/devq-bench" <<EOS
#!/bin/sh
read -r a b <"$tmp/better"
echo '{"devq":"0.1.0","backend":"cpu","device":"x","quick":true,"better_is":"x","results":['
echo '{"name":"row a","unit":"ns","devq":1.000,"baseline":1.000,"baseline_is":"base a","higher_is_better":false,"better":'\$a',"target":0.00}'
echo ',{"name":"row a","unit":"ns","devq":1.000,"baseline":1.000,"baseline_is":"base b","higher_is_better":false,"better":'\$b',"target":0.00}'
echo ']}'
EOS
cat >"$tmp/b/bench/bench_vulkan" <<EOS
#!/bin/sh
read -r lat <"$tmp/lat"
echo
echo "vulkan:0 against raw Vulkan on the same driver"
printf '%-44s %12.1f %12.1f %-8s %6.2fx  %s\n' "trivial dispatch submit -> completion" 1 1 us "\$lat" "<= 1.2x"
printf '%-44s %12.1f %12.1f %-8s %6.2fx  %s\n' "empty batch submit -> completion" 1 1 us 0.01 "<= 1.2x"
EOS
chmod +x "$tmp/b/tools/devq-bench" "$tmp/b/bench/bench_vulkan"

# --write: the median of three runs of each row (each run reads the same
# values here), the tolerance kept from the file, a table for RESULTS.md.
echo "2.0 1.0" >"$tmp/better"
echo "1.00" >"$tmp/lat"
printf '# tolerance: 0.25\n' >"$tmp/ref"
sh "$check" --write "$tmp/b" "$tmp/ref" >"$tmp/w.out" 2>&1 || fail "--write exited $?"
cat "$tmp/w.out"
grep -q "^# tolerance: 0.25" "$tmp/ref" || fail "--write lost the tolerance"
grep -q "$(printf 'devq-bench\trow a (vs base a)\t2\thigher')" "$tmp/ref" || fail "row a (vs base a) not recorded"
grep -q "$(printf 'devq-bench\trow a (vs base b)\t1\thigher')" "$tmp/ref" || fail "a second baseline of one name not kept apart"
grep -q "$(printf 'bench_vulkan\ttrivial dispatch submit -> completion\t1\tlower')" "$tmp/ref" ||
    fail "vulkan row not recorded as lower is better"
if grep -q "empty batch submit" "$tmp/ref"; then fail "the one-digit latency row was recorded"; fi
grep -q "^| row a | base a | 2.00x better |" "$tmp/w.out" || fail "no RESULTS.md table"

# Compare: a worse by half (OFF), b better by half (IMPROVED), the vulkan
# latency 10% worse (ok); then a recorded row that no longer runs.
echo "1.0 1.5" >"$tmp/better"
echo "1.10" >"$tmp/lat"
printf 'devq-bench\tgone row (vs x)\t1.0\thigher\n' >>"$tmp/ref"
sh "$check" "$tmp/b" "$tmp/ref" >"$tmp/c.out" 2>&1 || fail "compare exited $? (must be 0)"
cat "$tmp/c.out"
grep -q "^  OFF .*row a (vs base a)" "$tmp/c.out" || fail "a halved ratio is not OFF"
grep -q "^  IMPROVED .*row a (vs base b)" "$tmp/c.out" || fail "a ratio up by half is not IMPROVED"
grep -q "^  ok .*trivial dispatch" "$tmp/c.out" || fail "10% on a lower-is-better row is not ok"
grep -q "^  MISSING .*gone row" "$tmp/c.out" || fail "a row that did not run is not MISSING"
grep -q "^bench-check: 4 rows, 1 off by more than 25%, 1 improved, 1 not run" "$tmp/c.out" || fail "summary"
# Lower is better: twice the time is OFF.
echo "2.0 1.0" >"$tmp/better"
echo "2.00" >"$tmp/lat"
sh "$check" "$tmp/b" "$tmp/ref" >"$tmp/d.out" 2>&1 || fail "compare exited $? (must be 0)"
grep -q "^  OFF .*trivial dispatch" "$tmp/d.out" || fail "twice the time on a lower-is-better row is not OFF"
# A failing program is reported, still with exit 0.
printf '#!/bin/sh\nexit 3\n' >"$tmp/b/tools/devq-bench"
sh "$check" "$tmp/b" "$tmp/ref" >"$tmp/e.out" 2>&1 || fail "exit $? when devq-bench fails (must be 0)"
grep -q "devq-bench failed" "$tmp/e.out" || fail "a failing devq-bench is not reported"

[ "$failures" = 0 ] && echo "test_bench_check: all passed"
[ "$failures" = 0 ]
