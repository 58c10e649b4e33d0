#!/bin/sh
# SPDX-License-Identifier: MIT
# Compile-fail checks: each compile-fail/*.rs names on its second line the
# rustc error it must fail with (`// expect: E0597`; several when rustc
# versions differ: `E0502 E0503`), or `ok` for a control that must compile.  A snippet that compiles, or fails with another error,
# fails the check.  Runs against the devq rlib `cargo test` built:
#   compile-fail.sh TARGET_DIR
# with RUSTC the rustc cargo used (default rustc).  Prints one
# "test result:" line as cargo does, for check.sh's count.
set -u
cd "$(dirname "$0")" || exit 1
target=$1
rustc=${RUSTC:-rustc}
deps="$target/debug/deps"
# The newest devq rlib: the one the last cargo test built.
# shellcheck disable=SC2012  # cargo's file names are plain
rlib=$(ls -t "$deps"/libdevq-*.rlib 2>/dev/null | head -n 1)
if [ -z "$rlib" ]; then
    echo "compile-fail: no libdevq-*.rlib in $deps (run cargo test first)"
    echo "test result: FAILED. 0 passed; 1 failed; (compile-fail)"
    exit 1
fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
for f in compile-fail/*.rs; do
    want=$(sed -n '2s|^// expect: *||p' "$f")
    name=$(basename "$f" .rs)
    log="$out/$name.log"
    if "$rustc" --edition 2021 --crate-type bin --emit=metadata -o "$out/$name.rmeta" \
        -L "dependency=$deps" --extern "devq=$rlib" "$f" >"$log" 2>&1; then
        got=ok
    else
        got=$(grep -o 'error\[E[0-9]*\]' "$log" | head -n 1 | sed 's/^error\[\(.*\)\]$/\1/')
        got=${got:-other}
    fi
    case " $want " in
    *" $got "*) ok=1 ;;
    *) ok=0 ;;
    esac
    if [ "$ok" -eq 1 ]; then
        pass=$((pass + 1))
        echo "test compile-fail/$name ($want) ... ok"
    else
        fail=$((fail + 1))
        echo "test compile-fail/$name ... FAILED: expected $want, got $got"
        sed -n '1,20p' "$log"
    fi
done
if [ "$fail" -eq 0 ]; then v=ok; else v=FAILED; fi
echo "test result: $v. $pass passed; $fail failed; (compile-fail)"
[ "$fail" -eq 0 ]
