#!/bin/sh
# SPDX-License-Identifier: MIT
# devq-trace-svg on a known trace (tests/trace-svg/known.json: two queues
# and a memory counter, 7 ops, 2 tracker waits, then 9 s idle before the
# exit's frees): the SVG must parse as XML and hold exactly those lanes,
# ops and arrows; the idle tail is drawn as one break; tick labels follow
# a 1-2-5 step and are all different; the legend names every op colour.
# Options are never file names: --version, --help, an unknown option (an
# error and the usage, exit 2).
set -u
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
svg=$(cd "$top_builddir/tools" && pwd)/devq-trace-svg
py=${PYTHON3:-python3}
command -v "$py" > /dev/null 2>&1 || { echo "SKIP: no python3 to parse the SVG"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/devq-trace-svg-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$svg" "$top_srcdir/tests/trace-svg/known.json" "$tmp/known.svg" "known trace" ||
    fail "devq-trace-svg exited $?"
"$py" - "$tmp/known.svg" <<'PY' || fail "the SVG of the known trace"
import re, sys
import xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
def cls(tag, c):
    return [e for e in root.iter("{http://www.w3.org/2000/svg}" + tag) if e.get("class") == c]
def check(ok, what):
    if not ok:
        print("FAIL:", what)
        sys.exit(1)
lanes = [e.text for e in cls("text", "lane")]
check(lanes == ["queue #1 (copy, stream 0)", "queue #2 (compute, stream 1)",
                "bytes outstanding (peak 4.0 KiB)"], "lanes: %r" % lanes)
ops = cls("rect", "op")
check(len(ops) == 7, "%d ops, want 7" % len(ops))
titles = sorted(o.find("s:title", ns).text for o in ops)
check(titles.count("scale (0.500 ms)") == 1 and titles.count("free (0.001 ms)") == 2,
      "op titles: %r" % titles)
waits = cls("line", "wait")
check(len(waits) == 2 and all(w.get("marker-end") == "url(#arrow)" for w in waits),
      "%d wait arrows, want 2" % len(waits))
breaks = cls("g", "break")
check(len(breaks) == 1, "%d breaks, want 1 (the idle tail)" % len(breaks))
label = "".join(breaks[0].itertext())
check(label == "9 s idle", "break label %r" % label)
# The work (1.25 ms) fills the plot: the last op before the break ends
# close to the break, far right of the middle.
xs = [float(o.get("x")) + float(o.get("width")) for o in ops]
bx = float(breaks[0].find("s:rect", ns).get("x"))
work_end = max(x for x in xs if x < bx)
check(work_end > 900, "the work ends at x=%.0f: squeezed" % work_end)
ticks = [e.text for e in cls("text", "tick")]
check(len(ticks) == len(set(ticks)) and len(ticks) >= 5, "tick labels %r" % ticks)
# Ticks before the break (the work) are evenly spaced; one after it may
# mark where the frees at exit are.
bx0 = float(breaks[0].find("s:rect", ns).get("x"))
vals = [float(e.text.split()[0]) for e in cls("text", "tick") if float(e.get("x")) < bx0]
check(len(vals) >= 5, "ticks before the break %r" % ticks)
steps = {round(b - a, 9) for a, b in zip(vals, vals[1:])}
check(len(steps) == 1, "uneven ticks %r" % ticks)
step = steps.pop()
mant = step / 10 ** __import__("math").floor(__import__("math").log10(step))
check(min(abs(mant - m) for m in (1, 2, 5)) < 1e-6, "tick step %g is not 1-2-5" % step)
legend = ["".join(g.itertext()) for g in cls("g", "legend")]
for name in ("write (host to device)", "scale", "fill", "read (device to host)", "free",
             "wait the tracker inserted", "device memory outstanding"):
    check(name in legend, "legend lacks %r (has %r)" % (name, legend))
check(len(legend) == 7, "legend %r" % legend)
sub = [e.text for e in root.iter("{http://www.w3.org/2000/svg}text") if e.text and "of work" in e.text]
check(sub and sub[0].startswith("1.25 ms of work (9 s idle not drawn: 1 break)"), "subtitle %r" % sub)
PY

# Options.
v=$("$svg" --version) || fail "--version exited $?"
case "$v" in "devq-trace-svg "[0-9]*) ;; *) fail "--version printed '$v'" ;; esac
"$svg" -V | grep -q "^devq-trace-svg " || fail "-V"
"$svg" --help | grep -q "^Usage: devq-trace-svg" || fail "--help"
err=$("$svg" --bogus "$top_srcdir/tests/trace-svg/known.json" 2>&1 >/dev/null)
st=$?
[ "$st" = 2 ] || fail "an unknown option exited $st, want 2"
case "$err" in
    *"unknown option '--bogus'"*Usage:*) ;;
    *) fail "an unknown option said '$err'" ;;
esac
case "$err" in *"No such file"*) fail "an option was taken as a file name: $err" ;; esac
"$svg" > /dev/null 2>&1
[ $? = 2 ] || fail "no argument should exit 2"
"$svg" -t "by option" -o "$tmp/o.svg" "$top_srcdir/tests/trace-svg/known.json" || fail "-t/-o exited $?"
grep -q ">by option</text>" "$tmp/o.svg" || fail "-t title not drawn"
# A file whose name starts with '-', after --.
cp "$top_srcdir/tests/trace-svg/known.json" "$tmp/-dash.json"
(cd "$tmp" && "$svg" -- -dash.json dash.svg) || fail "-- before a file name"
[ -s "$tmp/dash.svg" ] || fail "-- file not drawn"

[ "$failures" = 0 ] && echo "PASS: devq-trace-svg" && exit 0
exit 1
