#!/bin/sh
# SPDX-License-Identifier: MIT
# bench-check: a regression guard, not a timed test.  Runs the ratio
# rows briefly (devq-bench --quick: every row against its baseline in
# the same run; bench/bench_vulkan: devq on vulkan:0 against raw Vulkan)
# and compares each row's ratio with the one recorded in
# bench/ratios.ref.  A row whose ratio moved the wrong way by more than
# the file's tolerance is printed as OFF; one that moved the right way by
# as much as IMPROVED (record it).  Always exits 0: on a shared machine a
# ratio moves with the load, so this is information for a person, never
# a verdict (make bench-check, .ci/run).
#
#   bench-check.sh BUILDDIR REF            compare a run with REF
#   bench-check.sh --write BUILDDIR REF    run, then write REF from it
#                                          (and print a markdown table)
write=0
if [ "$1" = --write ]; then
    write=1
    shift
fi
builddir=${1:-.}
ref=${2:-bench/ratios.ref}
tol=$(sed -n 's/^# tolerance: *\([0-9.]*\).*/\1/p' "$ref" 2>/dev/null | head -n1)
tol=${tol:-0.50}
tmp=$(mktemp -d) || exit 0
trap 'rm -rf "$tmp"' EXIT INT TERM

# collect FILE: one line per row: source<TAB>name<TAB>ratio<TAB>higher|lower.
collect() {
    out=$1
    : >"$out"
    if [ -x "$builddir/tools/devq-bench" ]; then
        "$builddir/tools/devq-bench" --quick --json -q >"$tmp/devq.json" 2>"$tmp/devq.err" ||
            { echo "bench-check: devq-bench failed:"; tail -5 "$tmp/devq.err"; }
        # Our own --json: one result per line, keys in a fixed order.
        # A row is its name and its baseline (one name may have several).
        sed -n 's/^,\{0,1\}{"name":"\([^"]*\)".*"baseline_is":"\([^"]*\)".*"better":\([0-9.eE+-]*\).*/devq-bench\t\1 (vs \2)\t\3\thigher/p' \
            "$tmp/devq.json" >"$out"
    else
        echo "bench-check: no $builddir/tools/devq-bench (build first)"
    fi
    if [ -x "$builddir/bench/bench_vulkan" ]; then
        DEVQ_PLUGIN_PATH="$builddir/plugins/vulkan/.libs" "$builddir/bench/bench_vulkan" >"$tmp/vk.out" 2>&1
        case $? in
        0)
            # bench_row: a 44-column name, devq, baseline, unit, devq/base.
            # Rows in us: lower is better.  The empty batch's latency is left
            # out: it completes at submit now (0.1 us, one printed digit).
            awk 'length($0) > 46 && $0 ~ /x  / {
                    name = substr($0, 1, 44); sub(/ +$/, "", name)
                    n = split(substr($0, 46), f, " ")
                    if (n < 4 || f[4] !~ /x$/ || name ~ /^empty batch submit/) next
                    r = f[4]; sub(/x$/, "", r)
                    printf "bench_vulkan\t%s\t%s\t%s\n", name, r, f[3] == "us" ? "lower" : "higher"
                 }' "$tmp/vk.out" >>"$out" ;;
        77) echo "bench-check: bench_vulkan skipped (no Vulkan device)" ;;
        *) echo "bench-check: bench_vulkan failed:"; tail -5 "$tmp/vk.out" ;;
        esac
    fi
}

t0=$(date +%s)
if [ $write = 1 ]; then
    # The reference is the median of three runs of each row.
    for i in 1 2 3; do collect "$tmp/run$i"; done
    awk -F'\t' -v OFS='\t' '
        { k = $1 FS $2; if (!(k in n)) order[++m] = k; n[k]++; v[k, n[k]] = $3 + 0; dir[k] = $4 }
        END {
            for (i = 1; i <= m; i++) {
                k = order[i]; c = n[k]
                for (a = 1; a <= c; a++)
                    for (b = a + 1; b <= c; b++)
                        if (v[k, b] < v[k, a]) { x = v[k, a]; v[k, a] = v[k, b]; v[k, b] = x }
                split(k, f, FS)
                print f[1], f[2], v[k, int((c + 1) / 2)], dir[k]
            }
        }' "$tmp/run1" "$tmp/run2" "$tmp/run3" >"$tmp/rows"
else
    collect "$tmp/rows"
fi
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)
echo "bench-check: $(wc -l <"$tmp/rows") rows in $(($(date +%s) - t0)) s, load average $load;" \
    "tolerance $tol (a ratio this much worse than recorded is OFF)"

if [ $write = 1 ]; then
    {
        echo "# SPDX-License-Identifier: MIT"
        echo "# bench/ratios.ref: the ratio of each row of make bench-check as last"
        echo "# recorded (bench/bench-check.sh --write: the median of three runs), on"
        echo "# $(date -u +%Y-%m-%d), load average $load."
        echo "# source<TAB>row<TAB>ratio<TAB>higher|lower (which way is better)."
        echo "# tolerance: $tol (a row is OFF when its ratio is worse than recorded by more"
        echo "# than this fraction: on the shared 2-core VMs the same binary's --quick"
        echo "# ratios move by 30-40% with the load)"
        cat "$tmp/rows"
    } >"$ref"
    echo "bench-check: wrote $ref; its table for bench/RESULTS.md:"
    echo "| row | limit (baseline) | ratio | date | load |"
    echo "|---|---|---|---|---|"
    date=$(date -u +%Y-%m-%d)
    awk -F'\t' -v d="$date" -v l="$load" '
        $1 == "devq-bench" {
            name = $2; base = $2
            sub(/ \(vs .*$/, "", name); sub(/^.* \(vs /, "", base); sub(/\)$/, "", base)
            printf "| %s | %s | %.2fx better | %s | %s |\n", name, base, $3, d, l
        }
        $1 == "bench_vulkan" {
            printf "| vulkan: %s | raw Vulkan, same work | %.2fx (devq/raw, %s is better) | %s | %s |\n", $2, $3, $4, d, l
        }' "$tmp/rows"
    exit 0
fi

# Compare: every recorded row, found or not.
awk -F'\t' -v tol="$tol" '
    NR == FNR { if ($0 !~ /^#/ && NF >= 4) { now[$1 "\t" $2] = $3 } ; next }
    $0 ~ /^#/ || NF < 4 { next }
    {
        key = $1 "\t" $2
        rows++
        if (!(key in now)) { printf "  %-8s %-100s %8s  (not run)\n", "MISSING", $1 ": " $2, $3; missing++; next }
        r = $3 + 0; n = now[key] + 0
        if (r <= 0 || n <= 0) { verdict = "?" }
        else {
            better = ($4 == "lower") ? r / n : n / r   # above 1: better than recorded
            verdict = better < 1 - tol ? "OFF" : better > 1 + tol ? "IMPROVED" : "ok"
        }
        if (verdict == "OFF") off++
        if (verdict == "IMPROVED") up++
        printf "  %-8s %-100s %8.3f -> %8.3f  (%s is better)\n", verdict, $1 ": " $2, r, n, $4
    }
    END {
        printf "bench-check: %d rows, %d off by more than %d%%, %d improved, %d not run (information only: exit 0)\n",
               rows, off, tol * 100, up, missing
    }' "$tmp/rows" "$ref"
exit 0
