#!/bin/sh
# SPDX-License-Identifier: MIT
# plugins/cuda/cuda_decls.h, devq's own declarations of the CUDA driver
# API, against a CUDA toolkit's cuda.h and cudaTypedefs.h: every typedef
# (handles, scalars, enums, structures member by member, callbacks, the
# PFN_cu*_v* entry points), every
# enumerator and flag value, and every prototype the emulated driver
# defines, with the symbol name cuda.h's macros give it.
#
# How: one C++ file includes the toolkit's headers, then ours inside
# namespace ours (C++ linkage, so the two sets of declarations can live
# side by side); static_asserts compare each name declared in ours with
# the global one of the same name: values equal, types structurally
# equal (two enums match when their underlying types do, since ours is
# its own enum type; pointers, qualifiers and function types compared
# part by part; handles are the very same struct tags).  The list of
# names is read from cuda_decls.h itself, so a new declaration there is
# checked without editing this script.
#
# Run by 'make check' (mk/cuda.mk): CUDA_TOOLKIT_DIR is configure's
# --with-cuda (default /usr/local/cuda).  Skipped (77) without a toolkit
# or a C++ compiler.  By hand: CUDA_TOOLKIT_DIR=/usr/local/cuda
# top_srcdir=. tests/scripts/cuda-decls.sh
set -u
top_srcdir=${top_srcdir:-.}
top_srcdir=$(cd "$top_srcdir" 2>/dev/null && pwd) || { echo "cuda-decls: top_srcdir does not exist"; exit 99; }
decls="$top_srcdir/plugins/cuda/cuda_decls.h"
[ -f "$decls" ] || { echo "cuda-decls: $decls not found (is top_srcdir set?)"; exit 99; }
# Unset: the default; empty: configure --with-cuda=no (no toolkit wanted).
toolkit=${CUDA_TOOLKIT_DIR-/usr/local/cuda}
[ -n "$toolkit" ] || { echo "cuda-decls: SKIP: configured --with-cuda=no"; exit 77; }
if [ ! -f "$toolkit/include/cuda.h" ] || [ ! -f "$toolkit/include/cudaTypedefs.h" ]; then
    echo "cuda-decls: SKIP: no CUDA toolkit at '$toolkit' (configure --with-cuda=DIR to check plugins/cuda/cuda_decls.h against its cuda.h)"
    exit 77
fi
CXX=${CXX:-c++}
if ! command -v "$CXX" >/dev/null 2>&1; then
    echo "cuda-decls: SKIP: no C++ compiler ($CXX; install g++)"
    exit 77
fi
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT

# The names cuda_decls.h declares (its own layout: one declaration a line).
# The non-prototype part and the prototype part are read apart, so a name
# is compared in the form the header gives it.
typedefs=$(sed -n -e 's/^typedef .*(CUDA[A-Z]* \*\([A-Za-z0-9_]*\)).*/\1/p' \
                  -e 's/^typedef [^(]* \**\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' \
                  -e 's/^} \([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$decls")
# A '} NAME;' closes an enum, or a structure opened by 'typedef struct
# TAG {' (members one a line, 'TYPE NAME;').  A structure is its own type
# in namespace ours: compared by size, and each member's offset and type.
enums=$(awk '/^typedef struct [A-Za-z0-9_]* \{/ { s = 1; next }
             /^} [A-Za-z_][A-Za-z0-9_]*;/ { if (!s) { sub(/^} /, ""); sub(/;.*/, ""); print } s = 0 }' "$decls")
structs=$(awk '/^typedef struct [A-Za-z0-9_]* \{/ { s = 1; next }
               /^} [A-Za-z_][A-Za-z0-9_]*;/ { if (s) { sub(/^} /, ""); sub(/;.*/, ""); print } s = 0 }' "$decls")
# STRUCT.MEMBER, one a line
members=$(awk '/^typedef struct [A-Za-z0-9_]* \{/ { s = 1; n = 0; next }
               s && /^} / { name = $2; sub(/;.*/, "", name); for (i = 1; i <= n; i++) print name "." m[i]; s = 0; next }
               s && /;/ { x = $0; sub(/;.*/, "", x); sub(/.*[ *]/, "", x); m[++n] = x }' "$decls")
enumerators=$(sed -n 's/^ *\(CU[A-Z0-9_]*\) = .*/\1/p' "$decls")
flag_macros=$(sed -n 's/^#define \(CU_[A-Z0-9_]*\) .*/\1/p' "$decls")
renames=$(sed -n 's/^#define \(cu[A-Za-z0-9]*\) *\(cu[A-Za-z0-9_]*\)$/\1/p' "$decls")
functions=$(sed -n 's/^CUresult CUDAAPI \(cu[A-Za-z0-9_]*\)(.*/\1/p' "$decls")
n=$(printf '%s\n' $typedefs $enumerators $flag_macros $functions | wc -l)
[ "$n" -gt 50 ] || { echo "cuda-decls: only $n names read from $decls: has its layout changed?"; exit 99; }

{
    cat <<'HEAD'
#include <type_traits>
#include <tuple>
#include <cstddef>
#include <cuda.h>
#include <cudaTypedefs.h>

/* same<A, B>: A and B are the same type, but for enums: ours are enum
 * types of their own, so ours::E matches the cuda.h enum that
 * enum_pair<ours::E> names (the one of the same typedef name), if their
 * underlying types are the same too (the values are compared one by one). */
template <class E> struct enum_pair { typedef void type; };
/* struct_pair<ours::S>::type is ::S for the structures ours defines;
 * every other type stands for itself (handles are the same tags). */
template <class S> struct struct_pair { typedef S type; };
template <class A, class B, class = void> struct same_leaf : std::is_same<typename struct_pair<A>::type, B> {};
template <class A, class B>
struct same_leaf<A, B, typename std::enable_if<std::is_enum<A>::value && std::is_enum<B>::value>::type>
    : std::integral_constant<bool, std::is_same<typename enum_pair<A>::type, B>::value &&
                                   std::is_same<typename std::underlying_type<A>::type,
                                                typename std::underlying_type<B>::type>::value &&
                                   sizeof(A) == sizeof(B)> {};
template <class A, class B> struct same : same_leaf<A, B> {};
template <class A, class B> struct same<A *, B *> : same<A, B> {};
template <class A, class B> struct same<const A, const B> : same<A, B> {};
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
HEAD
    # The toolkit's flag macros, kept by value before ours redefine them.
    for m in $flag_macros; do
        printf 'static const long long real_%s = %s;\n#undef %s\n' "$m" "$m" "$m"
    done
    # cuda.h's renaming macros (some through __CUDA_API_PTSZ): ours give
    # the plain name; the comparison below then finds ours' target in cuda.h.
    for f in $renames; do printf '#undef %s\n' "$f"; done
    cat <<'MID'
#define DEVQ_CUDA_DECLS_NO_EXTERN_C
#define DEVQ_CUDA_DECLS_PROTOTYPES
#undef CUDAAPI
#undef CUDA_CB
namespace ours {
MID
    printf '#include "%s"\n}\n' "$decls"
    for t in $enums; do
        printf 'template <> struct enum_pair<ours::%s> { typedef ::%s type; };\n' "$t" "$t"
    done
    for t in $structs; do
        printf 'template <> struct struct_pair<ours::%s> { typedef ::%s type; };\n' "$t" "$t"
        printf 'static_assert(sizeof(ours::%s) == sizeof(::%s), "struct %s: size differs from cuda.h'"'"'s");\n' "$t" "$t" "$t"
    done
    for sm in $members; do
        t=${sm%%.*} m=${sm#*.}
        printf 'static_assert(offsetof(ours::%s, %s) == offsetof(::%s, %s), "struct %s: member %s is not where cuda.h has it");\n' "$t" "$m" "$t" "$m" "$t" "$m"
        printf 'static_assert(same<decltype(ours::%s::%s), decltype(::%s::%s)>::value, "struct %s: member %s has another type in cuda.h");\n' "$t" "$m" "$t" "$m" "$t" "$m"
    done
    for t in $typedefs; do
        printf 'static_assert(same<ours::%s, ::%s>::value, "typedef %s differs from cuda.h'"'"'s");\n' "$t" "$t" "$t"
    done
    for e in $enumerators; do
        printf 'static_assert((long long)ours::%s == (long long)::%s, "enumerator %s differs from cuda.h'"'"'s");\n' "$e" "$e" "$e"
    done
    for m in $flag_macros; do
        printf 'static_assert((long long)(%s) == real_%s, "%s differs from cuda.h'"'"'s");\n' "$m" "$m" "$m"
    done
    for f in $functions; do
        # After ours' macros, f is the versioned symbol a libcuda.so.1
        # exports (cuMemAlloc -> cuMemAlloc_v2); cuda.h must declare it.
        printf 'static_assert(same<decltype(ours::%s), decltype(::%s)>::value, "prototype of %s differs from cuda.h'"'"'s");\n' "$f" "$f" "$f"
    done
} > "$work/check.cc"

if ! "$CXX" -std=c++11 -fsyntax-only -Wall -I"$toolkit/include" "$work/check.cc" > "$work/out" 2>&1; then
    grep -E 'error|static assertion|static_assert' "$work/out" | head -40
    echo "FAIL: plugins/cuda/cuda_decls.h disagrees with $toolkit/include/cuda.h (above); fix cuda_decls.h from cudaTypedefs.h/cuda.h"
    exit 1
fi
if [ -s "$work/out" ]; then
    cat "$work/out"
    echo "FAIL: warnings comparing plugins/cuda/cuda_decls.h with $toolkit/include/cuda.h"
    exit 1
fi
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$toolkit/include/cuda.h")
echo "PASS: cuda_decls.h matches $toolkit (CUDA_VERSION $version): $(printf '%s\n' $typedefs | wc -l) typedefs," \
     "$(printf '%s\n' $structs | wc -l) structures ($(printf '%s\n' $members | wc -l) members)," \
     "$(printf '%s\n' $enumerators $flag_macros | wc -l) values, $(printf '%s\n' $functions | wc -l) prototypes"
exit 0
