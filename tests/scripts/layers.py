#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer rule of lib/ (DESIGN §10), checked on the built objects.

Each object of libdevq_core is named by its folder (its layer) and file.
A file may call (link against) files of its own layer and of layers
below it; a call upward fails, naming both files and the symbols.  Files
that call each other in a circle form one knot; a knot larger than
MAX_KNOT files fails too.

With SRC_DIR, the sources are read too: a file (foo.c with its foo.h) that
includes another's header, or names a struct, union or enum defined in a
header it reaches through its includes, depends on that file; files that
depend on each other in a circle form an include/type knot, and one
larger than MAX_KNOT fails like a call knot.  (A type named only behind a
forward declaration, without the defining header in reach, is no
dependency.)  `layers.py --self-test` checks that check on made-up trees.
Usage: layers.py BUILD_DIR [SRC_DIR] (the objects under
BUILD_DIR/lib/*/.libs and BUILD_DIR/lib/.libs, the sources under
SRC_DIR/lib)."""
import collections, glob, os, re, subprocess, sys

ORDER = ['base', 'signal', 'loader', 'device', 'order', 'mem', 'queue', 'channel', 'root']
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

def knots_of(nodes, edges):
    """Strongly connected components of more than one node (Tarjan),
    largest first."""
    sys.setrecursionlimit(10000)
    index, low, stack, on, knots, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in sorted(edges.get(v, ())):
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
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted((k for k in knots if len(k) > 1), key=lambda k: (-len(k), k))

def source_deps(src):
    """The include/type dependencies among lib/'s files: {unit: {unit: why}},
    a unit being layer/stem (foo.c and foo.h together).  Headers are found
    by name as the build finds them (DEVQ_LIB_INCLUDES): the includer's
    folder first, then every folder of lib/."""
    root = os.path.join(src, 'lib')
    files = sorted(glob.glob(os.path.join(root, '*.[ch]')) + glob.glob(os.path.join(root, '*', '*.[ch]')))
    unit, byname = {}, collections.defaultdict(list)
    for f in files:
        d, b = os.path.split(os.path.relpath(f, root))
        unit[f] = f'{d or "root"}/{b[:-2]}'
        byname[b].append(f)
    code = {}
    for f in files:
        with open(f, errors='replace') as fh:
            code[f] = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', ' ', fh.read(), flags=re.S)
    incs = {}
    for f in files:
        with open(f, errors='replace') as fh:
            names = re.findall(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', fh.read(), re.M)
        found = []
        for name in names:
            same = os.path.normpath(os.path.join(os.path.dirname(f), name))
            tgt = same if same in unit else (byname.get(os.path.basename(name)) or [None])[0]
            if tgt:
                found.append((name, tgt))
        incs[f] = found
    defined = collections.defaultdict(set)      # header -> tags it defines with a body
    for f in files:
        if f.endswith('.h'):
            for kind, tag in re.findall(r'\b(struct|union|enum)\s+(\w+)\s*\{', code[f]):
                defined[f].add(f'{kind} {tag}')
    deps = collections.defaultdict(dict)
    for f in files:
        reach, todo = set(), [t for _, t in incs[f]]
        while todo:
            h = todo.pop()
            if h not in reach:
                reach.add(h)
                todo.extend(t for _, t in incs[h])
        for name, t in incs[f]:
            if unit[t] != unit[f]:
                deps[unit[f]].setdefault(unit[t], f'{os.path.relpath(f, root)} includes "{name}"')
        used = {re.sub(r'\s+', ' ', m) for m in re.findall(r'\b(?:struct|union|enum)\s+\w+', code[f])}
        for h in sorted(reach):
            if unit[h] == unit[f]:
                continue
            for tag in sorted(used & defined[h]):
                deps[unit[f]].setdefault(unit[h], f'{os.path.relpath(f, root)} uses {tag} ({os.path.relpath(h, root)})')
    return set(unit.values()), deps

def include_failures(src):
    nodes, deps = source_deps(src)
    failures = 0
    for k in knots_of(nodes, deps):
        bad = len(k) > MAX_KNOT
        failures += bad
        print(f'{"FAIL: " if bad else ""}include/type knot of {len(k)} files (limit {MAX_KNOT}): ' + ' '.join(k))
        if bad:
            for a in k:
                for b in sorted(deps[a]):
                    if b in k:
                        print(f'  {a} -> {b}: {deps[a][b]}')
    print(f'layers: {len(nodes)} source files, {sum(len(d) for d in deps.values())} include/type dependencies, '
          f'{failures} failure(s)')
    return failures

def self_test():
    """The include/type check fails on a knot of MAX_KNOT + 1 files and
    passes one of MAX_KNOT, a forward-declared type being no dependency."""
    import tempfile
    def tree(n, forward_only):
        d = tempfile.mkdtemp(prefix='layers-self-')
        os.makedirs(os.path.join(d, 'lib', 'queue'))
        for i in range(n):
            j = (i + 1) % n
            use = f'struct t{j};\nstruct t{j} *p;\n' if forward_only and j == 0 else \
                  f'#include "f{j}.h"\nstruct t{j} v;\n'
            with open(os.path.join(d, 'lib', 'queue', f'f{i}.h'), 'w') as fh:
                fh.write(f'struct t{i} {{ int x; }};\n')
            with open(os.path.join(d, 'lib', 'queue', f'f{i}.c'), 'w') as fh:
                fh.write(f'#include "f{i}.h"\n' + use)
        return d
    import contextlib, io, shutil
    ok = True
    for n, forward_only, want in ((MAX_KNOT + 1, False, 1), (MAX_KNOT, False, 0), (MAX_KNOT + 1, True, 0)):
        d = tree(n, forward_only)
        with contextlib.redirect_stdout(io.StringIO()):
            got = include_failures(d)
        shutil.rmtree(d)
        if got != want:
            print(f'FAIL: self-test: a circle of {n} files{" (one link forward-declared)" if forward_only else ""}: '
                  f'{got} failure(s), expected {want}')
            ok = False
    print('layers: self-test ' + ('passed' if ok else 'FAILED'))
    return 0 if ok else 1

def main():
    if sys.argv[1:2] == ['--self-test']:
        return self_test()
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
    if len(sys.argv) > 2:
        failures += include_failures(sys.argv[2])
    return 1 if failures else 0

if __name__ == '__main__':
    sys.exit(main())
