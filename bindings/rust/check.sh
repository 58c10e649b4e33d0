#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds and tests the devq Rust crates, offline, then builds their docs:
#   check.sh
# with PKG_CONFIG_PATH naming the devq to test (a build folder or an
# installed prefix's lib/pkgconfig), CARGO the cargo to use (default
# cargo) and CARGO_TARGET_DIR where to build.  `make rust-check` sets all
# three (and DEVQ_MPI_RUN, MPIRUN, DEVQ_TEST_MPI_ENGINE for the channel
# example under mpirun).  Ends with one line CI counts: "rust: N passed, N failed" (a
# build failure or a cargo doc failure counts as one failure).
set -u
cargo=${CARGO:-cargo}
cd "$(dirname "$0")" || exit 1
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target"
log="$target/rust-check.log"
if ! command -v "$cargo" >/dev/null 2>&1; then
    echo "rust-check: '$cargo' not found (Debian: apt-get install cargo, or set CARGO)"
    echo "rust: 0 passed, 1 failed"
    exit 1
fi
echo "rust-check: $("$cargo" --version), $("${RUSTC:-rustc}" --version 2>/dev/null || echo rustc ?)" >"$log"
# Warnings are errors here (not in a plain `cargo build`), in code and docs.
RUSTFLAGS="${RUSTFLAGS:--D warnings}" "$cargo" test --offline --no-fail-fast >>"$log" 2>&1
test_rc=$?
RUSTFLAGS="${RUSTFLAGS:--D warnings}" RUSTDOCFLAGS="${RUSTDOCFLAGS:--D warnings}" \
    "$cargo" doc --offline --no-deps >>"$log" 2>&1
doc_rc=$?
# The channel example on 2 ranks when DEVQ_MPI_RUN names tests/mpi-run
# (make rust-check does): it skips (77) without a launcher or the
# devq-mpi engine.  Its verdict is logged as one more test result line.
mpi_rc=0
if [ "$test_rc" -eq 0 ] && [ -n "${DEVQ_MPI_RUN:-}" ]; then
    ex="$target/debug/examples/channel_all_reduce"
    # The runner cargo test used (HACKING.md: the ASan runtime preloaded
    # for an ASan libdevq) runs the example's ranks too.
    runner=$(env | sed -n 's/^CARGO_TARGET_[A-Z0-9_]*_RUNNER=//p' | head -n 1)
    # shellcheck disable=SC2086  # the runner is a command line
    out=$("$DEVQ_MPI_RUN" $runner "$ex" 2>&1)
    rc=$?
    printf '%s\n' "$out" >>"$log"
    oks=$(printf '%s\n' "$out" | grep -c 'all_reduce, broadcast and send/recv ok')
    if [ "$rc" -eq 77 ]; then
        echo "rust-check: channel_all_reduce under mpirun skipped: $(printf '%s\n' "$out" | tail -1)"
    elif [ "$rc" -eq 0 ] && [ "$oks" -eq 2 ]; then
        echo "test result: ok. 1 passed; 0 failed; (channel_all_reduce on 2 ranks)" >>"$log"
    else
        echo "rust-check: channel_all_reduce on 2 ranks failed (exit $rc, $oks rank(s) ok):"
        printf '%s\n' "$out" | tail -20
        echo "test result: FAILED. 0 passed; 1 failed; (channel_all_reduce on 2 ranks)" >>"$log"
        mpi_rc=1
    fi
fi
# "test result: ok. 17 passed; 0 failed; 0 ignored; ..." per test binary.
counts=$(awk '/^test result:/ { for (i = 2; i <= NF; i++) {
                  if ($i ~ /^passed;/) p += $(i - 1); if ($i ~ /^failed;/) f += $(i - 1) } }
              END { print p + 0, f + 0 }' "$log")
passed=${counts% *}
failed=${counts#* }
if [ "$test_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi   # did not build
if [ "$doc_rc" -ne 0 ]; then failed=$((failed + 1)); echo "rust-check: cargo doc failed"; fi
if [ "$test_rc" -ne 0 ] || [ "$doc_rc" -ne 0 ]; then
    grep -v '^test .* ok$' "$log" | tail -80
fi
echo "rust: $passed passed, $failed failed"
[ "$test_rc" -eq 0 ] && [ "$doc_rc" -eq 0 ] && [ "$mpi_rc" -eq 0 ]
