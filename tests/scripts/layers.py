#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer rule of lib/ (DESIGN §10), checked on the built objects.

Each object of libdevq_core is named by its folder (its layer) and file.
A file may call (link against) files of its own layer and of layers
below it; a call upward fails, naming both files and the symbols.  Files
that call each other in a circle form one knot; a knot larger than
MAX_KNOT files fails too.  Usage: layers.py BUILD_DIR (the objects under
BUILD_DIR/lib/*/.libs and BUILD_DIR/lib/.libs)."""
import collections, glob, os, re, subprocess, sys

ORDER = ['base', 'signal', 'loader', 'device', 'mem', 'queue', 'channel', 'root']
MAX_KNOT = 5

def objects(build):
    """The objects of libdevq_core's sources: from DEVQ_CORE_SOURCES (the
    Makefile's list, so stale objects of moved files never count), else
    every object found under lib/."""
    out = {}
    sources = os.environ.get('DEVQ_CORE_SOURCES', '').split()
    if sources:
        found = []
        for src in sources:
            if not src.endswith('.c') or not src.startswith('lib/'):
                continue
            d, f = os.path.split(src)
            found.append(os.path.join(build, d, '.libs', 'libdevq_core_la-' + f[:-2] + '.o'))
    else:
        found = glob.glob(os.path.join(build, 'lib', '*', '.libs', '*.o')) + \
                glob.glob(os.path.join(build, 'lib', '.libs', '*.o'))
    for o in found:
        layer = os.path.basename(os.path.dirname(os.path.dirname(o)))
        layer = 'root' if layer == 'lib' else layer
        name = re.sub(r'^libdevq_core_la-', '', os.path.basename(o))[:-2]
        out[f'{layer}/{name}'] = o
    return out

def main():
    build = sys.argv[1] if len(sys.argv) > 1 else '.'
    objs = objects(build)
    missing = [o for o in objs.values() if not os.path.exists(o)]
    if missing:
        print('layers: not built: ' + ' '.join(missing))
        return 99
    if not objs:
        print(f'layers: no objects under {build}/lib (build first)')
        return 99
    defs, undef = {}, collections.defaultdict(set)
    for f, o in objs.items():
        nm = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in nm.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBRCV':
                defs[p[2]] = f
            elif len(p) == 2 and p[0] == 'U':
                undef[f].add(p[1])
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for f, syms in undef.items():
        for s in syms:
            g = defs.get(s)
            if g and g != f:
                edges[f][g].add(s)
    failures = 0
    for f in sorted(edges):
        lf = ORDER.index(f.split('/')[0])
        for g in sorted(edges[f]):
            lg = ORDER.index(g.split('/')[0])
            if lg > lf:
                failures += 1
                print(f'FAIL: upward call: lib/{f}.c ({ORDER[lf]}) calls lib/{g}.c ({ORDER[lg]}): '
                      + ', '.join(sorted(edges[f][g])) + '; give the lower layer a hook instead')
    # Knots: strongly connected components (Tarjan, iterative enough for ~60 files).
    sys.setrecursionlimit(10000)
    index, low, stack, on, knots, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            k = []
            while True:
                w = stack.pop(); on.discard(w); k.append(w)
                if w == v:
                    break
            knots.append(sorted(k))
    for v in sorted(objs):
        if v not in index:
            visit(v)
    for k in sorted(knots, key=len, reverse=True):
        if len(k) > 1:
            bad = len(k) > MAX_KNOT
            failures += bad
            print(f'{"FAIL: " if bad else ""}knot of {len(k)} files (limit {MAX_KNOT}): ' + ' '.join(k))
    print(f'layers: {len(objs)} files, {sum(len(e) for e in edges.values())} file-to-file calls, '
          f'{failures} failure(s)')
    return 1 if failures else 0

if __name__ == '__main__':
    sys.exit(main())
