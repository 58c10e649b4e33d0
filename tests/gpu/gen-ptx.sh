#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate tests/gpu/conf_kernels.ptx from tests/gpu/conf_kernels.cu
# (`make gpu-ptx` runs this).  The .ptx is committed: CI has no nvcc.
#
#   tests/gpu/gen-ptx.sh [SRC.cu [OUT.ptx]]
#
# Environment: NVCC (default: nvcc on PATH, else $CUDA_HOME/bin/nvcc,
# CUDA_HOME default /usr/local/cuda); PTXAS likewise, to check the result.
#
# The PTX must load on any GPU since Pascal (sm_60) and any driver since
# CUDA 9 (PTX ISA 6.0).  Toolkits from CUDA 13 no longer generate for
# compute_60: they are asked for their lowest target, and the header is
# set back to `.version 6.0` / `.target sm_60`.  That is sound only if the
# code uses nothing newer, which ptxas checks (it rejects an instruction
# the declared ISA version or target lacks), so the result is assembled
# before it replaces the committed file.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/conf_kernels.cu}
out=${2:-$here/conf_kernels.ptx}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
ptx_version=6.0
ptx_target=sm_60

find_tool() {     # $1 name, $2 value of its variable
    if [ -n "$2" ]; then
        echo "$2"
    elif command -v "$1" >/dev/null 2>&1; then
        command -v "$1"
    elif [ -x "$cuda_home/bin/$1" ]; then
        echo "$cuda_home/bin/$1"
    fi
}

nvcc=$(find_tool nvcc "${NVCC:-}")
if [ -z "$nvcc" ]; then
    echo "gen-ptx: nvcc not found (set NVCC or CUDA_HOME); $out left as it is" >&2
    exit 1
fi
ptxas=$(find_tool ptxas "${PTXAS:-}")

# The lowest virtual architecture this nvcc offers, compute_60 if it can.
arch=compute_60
if archs=$("$nvcc" --list-gpu-arch 2>/dev/null); then
    if ! echo "$archs" | grep -qx compute_60; then
        arch=$(echo "$archs" | grep '^compute_[0-9]*$' | sort -t_ -k2 -n | head -n 1)
    fi
fi
[ -n "$arch" ] || { echo "gen-ptx: $nvcc lists no compute_ architecture" >&2; exit 1; }

tmp=$(mktemp "${TMPDIR:-/tmp}/conf_kernels.XXXXXX")
trap 'rm -f "$tmp" "$tmp.ptx" "$tmp.err"' EXIT
"$nvcc" -ptx -arch="$arch" -o "$tmp.ptx" "$src"

{
    echo "// Generated from tests/gpu/conf_kernels.cu by tests/gpu/gen-ptx.sh"
    echo "// (make gpu-ptx) with nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') -arch=$arch,"
    echo "// header set to PTX ISA $ptx_version, $ptx_target.  Do not edit: change the .cu."
    sed -e "s/^\.version .*/.version $ptx_version/" \
        -e "s/^\.target sm_[0-9]*\$/.target $ptx_target/" "$tmp.ptx"
} >"$tmp"

grep -qx "\.version $ptx_version" "$tmp" && grep -qx "\.target $ptx_target" "$tmp" || {
    echo "gen-ptx: $nvcc wrote an unexpected .version/.target header" >&2
    exit 1
}

if [ -n "$ptxas" ]; then
    # the lowest sm_ this ptxas knows is enough to check ISA and target
    for sm in sm_60 sm_70 sm_75 sm_80; do
        if "$ptxas" -arch=$sm -o /dev/null "$tmp" 2>"$tmp.err"; then
            checked=$sm
            break
        fi
        grep -q "is not defined for option" "$tmp.err" || { cat "$tmp.err" >&2; rm -f "$tmp.err"; exit 1; }
    done
    rm -f "$tmp.err"
    [ -n "${checked:-}" ] || { echo "gen-ptx: $ptxas assembles none of sm_60..sm_80" >&2; exit 1; }
    echo "gen-ptx: assembled for $checked with $ptxas"
else
    echo "gen-ptx: ptxas not found: $out is not checked (tests/gpu/ptx-assemble will)" >&2
fi
cp "$tmp" "$out"
echo "gen-ptx: wrote $out"
