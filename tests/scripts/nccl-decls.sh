#!/bin/sh
# SPDX-License-Identifier: MIT
# plugins/gpu_common/nccl_abi.h, devq's own declarations of the NCCL API
# (RCCL has the same names and values), against a real nccl.h: every
# enumerator and macro value, the unique-id and handle types, the version
# formula, and each entry point's ncclX_fn type against ncclX's
# prototype.  Two differences are by design and accepted: ours passes
# streams as void * (cudaStream_t and hipStream_t are both pointers, one
# declaration serves NCCL and RCCL), and ncclConfig_t is opaque (devq
# passes NULL).  Same method as tests/scripts/cuda-decls.sh: one C++ file, ours
# in namespace ours, static_asserts, names read from nccl_abi.h.
# Run by 'make check' (mk/cuda.mk);
# NCCL_INCLUDE_DIR, else the CUDA toolkit's include folder
# (CUDA_TOOLKIT_DIR, configure's --with-cuda), must hold nccl.h and the
# CUDA runtime headers it includes; skipped (77) otherwise or without a
# C++ compiler.
set -u
top_srcdir=${top_srcdir:-.}
top_srcdir=$(cd "$top_srcdir" 2>/dev/null && pwd) || { echo "nccl-decls: top_srcdir does not exist"; exit 99; }
decls="$top_srcdir/plugins/gpu_common/nccl_abi.h"
[ -f "$decls" ] || { echo "nccl-decls: $decls not found (is top_srcdir set?)"; exit 99; }
toolkit=${CUDA_TOOLKIT_DIR-/usr/local/cuda}   # empty: configure --with-cuda=no
[ -n "${NCCL_INCLUDE_DIR:-}$toolkit" ] || { echo "nccl-decls: SKIP: configured --with-cuda=no and no NCCL_INCLUDE_DIR"; exit 77; }
inc=${NCCL_INCLUDE_DIR:-$toolkit/include}
if [ ! -f "$inc/nccl.h" ] || [ ! -f "$inc/cuda_runtime.h" ]; then
    echo "nccl-decls: SKIP: no nccl.h with the CUDA runtime headers in '$inc' (set NCCL_INCLUDE_DIR, or configure --with-cuda=DIR)"
    exit 77
fi
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || { echo "nccl-decls: SKIP: no C++ compiler ($CXX; install g++)"; exit 77; }
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT

enums=$(sed -n 's/^} \(nccl[A-Za-z_]*_t\);.*/\1/p' "$decls")
# Enumerators: "ncclX = N" anywhere on a line (several a line in places).
enumerators=$(grep -o 'nccl[A-Z][A-Za-z0-9]* = ' "$decls" | sed 's/ = //' | sort -u)
entries=$(sed -n 's/^typedef .*(\*\(nccl[A-Za-z]*\)_fn).*/\1/p' "$decls")
n=$(printf '%s\n' $enums $enumerators $entries | wc -l)
[ "$n" -gt 30 ] || { echo "nccl-decls: only $n names read from $decls: has its layout changed?"; exit 99; }

{
    cat <<'HEAD'
#include <type_traits>
#include <tuple>
#include <nccl.h>

template <class E> struct enum_pair { typedef void type; };
template <class A, class B, class = void> struct same_leaf : std::is_same<A, B> {};
template <class A, class B>
struct same_leaf<A, B, typename std::enable_if<std::is_enum<A>::value && std::is_enum<B>::value>::type>
    : std::integral_constant<bool, std::is_same<typename enum_pair<A>::type, B>::value &&
                                   sizeof(A) == sizeof(B)> {};
template <class A, class B> struct same : same_leaf<A, B> {};
template <class A, class B> struct same<A *, B *> : same<A, B> {};
template <class A, class B> struct same<const A, const B> : same<A, B> {};
/* By design: a stream is void * in ours (NCCL and RCCL alike). */
template <> struct same<void *, cudaStream_t> : std::true_type {};
template <class A, class B> struct same_list : std::false_type {};
template <> struct same_list<std::tuple<>, std::tuple<>> : std::true_type {};
template <class A, class... As, class B, class... Bs>
struct same_list<std::tuple<A, As...>, std::tuple<B, Bs...>>
    : std::integral_constant<bool, same<A, B>::value &&
                                   same_list<std::tuple<As...>, std::tuple<Bs...>>::value> {};
template <class R, class... A, class S, class... B>
struct same<R(A...), S(B...)>
    : std::integral_constant<bool, same<R, S>::value &&
                                   same_list<std::tuple<A...>, std::tuple<B...>>::value> {};
static const long long real_NCCL_UNIQUE_ID_BYTES = NCCL_UNIQUE_ID_BYTES;
static const long long real_NCCL_SPLIT_NOCOLOR = NCCL_SPLIT_NOCOLOR;
#undef NCCL_UNIQUE_ID_BYTES
#undef NCCL_SPLIT_NOCOLOR
#undef DEVQ_NCCL_ABI_H
namespace ours {
HEAD
    printf '#include "%s"\n}\n' "$decls"
    for t in $enums; do
        printf 'template <> struct enum_pair<ours::%s> { typedef ::%s type; };\n' "$t" "$t"
    done
    cat <<'MID'
/* By design: ncclConfig_t is opaque in ours (devq passes NULL). */
template <> struct same<ours::ncclConfig_t, ::ncclConfig_t> : std::true_type {};
/* The unique id travels by value: same size and alignment. */
template <> struct same<ours::ncclUniqueId, ::ncclUniqueId>
    : std::integral_constant<bool, sizeof(ours::ncclUniqueId) == sizeof(::ncclUniqueId) &&
                                   alignof(ours::ncclUniqueId) == alignof(::ncclUniqueId)> {};
static_assert(NCCL_UNIQUE_ID_BYTES == real_NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES differs from nccl.h's");
static_assert(NCCL_SPLIT_NOCOLOR == real_NCCL_SPLIT_NOCOLOR, "NCCL_SPLIT_NOCOLOR differs from nccl.h's");
static_assert(DEVQ_NCCL_VERSION(2, 8, 4) == NCCL_VERSION(2, 8, 4) &&
              DEVQ_NCCL_VERSION(2, 9, 6) == NCCL_VERSION(2, 9, 6) &&
              DEVQ_NCCL_VERSION(2, 18, 1) == NCCL_VERSION(2, 18, 1), "DEVQ_NCCL_VERSION differs from NCCL_VERSION");
static_assert(same<ours::ncclComm_t, ::ncclComm_t>::value, "ncclComm_t differs from nccl.h's");
static_assert(same<ours::ncclUniqueId, ::ncclUniqueId>::value, "ncclUniqueId differs from nccl.h's");
MID
    for e in $enumerators; do
        printf 'static_assert((long long)ours::%s == (long long)::%s, "enumerator %s differs from nccl.h'"'"'s");\n' "$e" "$e" "$e"
    done
    for f in $entries; do
        printf 'static_assert(same<std::remove_pointer<ours::%s_fn>::type, decltype(::%s)>::value, "ncclX_fn of %s differs from nccl.h'"'"'s prototype");\n' "$f" "$f" "$f"
    done
} > "$work/check.cc"

if ! "$CXX" -std=c++11 -fsyntax-only -Wall -I"$inc" "$work/check.cc" > "$work/out" 2>&1; then
    grep -E 'error|static assertion' "$work/out" | head -40
    echo "FAIL: plugins/gpu_common/nccl_abi.h disagrees with $inc/nccl.h (above)"
    exit 1
fi
[ -s "$work/out" ] && { cat "$work/out"; echo "FAIL: warnings comparing nccl_abi.h with $inc/nccl.h"; exit 1; }
v=$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$inc/nccl.h")
echo "PASS: nccl_abi.h matches $inc/nccl.h (NCCL_VERSION_CODE $v): $(printf '%s\n' $enums | wc -l) enums," \
     "$(printf '%s\n' $enumerators | wc -l) enumerators, $(printf '%s\n' $entries | wc -l) entry points"
