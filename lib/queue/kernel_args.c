/* SPDX-License-Identifier: MIT */
/* Checked launches (issue 26): a kernel's declared interface, read once
 * from the backend (kernel_iface), and devq_queue_exec's comparison of
 * the arguments against it, so a launch that does not match its kernel
 * is -EINVAL on every backend instead of undefined results on the
 * device.  Every refusal has one shape, whatever the backend:
 *   devq_queue_exec: kernel 'saxpy' argument 2: the kernel declares a
 *   4-byte value, a buffer was passed */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "error.h"
#include "kernel.h"
#include "kernel_args.h"

#define MAX_PARAMS 4096u /* devq_queue_exec's own limit on nargs */
#define MAX_VALUE 4096u  /* and on a value's size */

int devq__kernel_iface_load(devq_kernel *k, const char *fn)
{
    const struct devq_backend_ops *ops = k->dev->ops;
    if (!ops->kernel_iface)
        return 0;
    struct devq_pl_kernel_iface in;
    memset(&in, 0, sizeof in);
    int r = ops->kernel_iface(k->pl, &in);
    if (r == -ENOTSUP)
        return 0; /* this kernel's interface is unknown: unchecked */
    if (r < 0)
        return devq__err(r, "%s: kernel '%s': the %s backend could not read its parameters: %s", fn, k->name,
                         k->dev->info.backend, devq_errmsg());
    /* The plugin's answer is outside input: a malformed one refuses the
     * load rather than checking launches against nonsense. */
    if (in.nparams > MAX_PARAMS || (in.nparams && !in.params) || in.value_block > 65536)
        return devq__err(-EINVAL,
                         "%s: kernel '%s': the %s backend declared %u parameters at %p "
                         "(block %u bytes); a plugin bug: report it",
                         fn, k->name, k->dev->info.backend, in.nparams, (const void *)in.params,
                         in.value_block);
    for (uint32_t i = 0; i < in.nparams; i++) {
        const struct devq_pl_param *p = &in.params[i];
        int ok = (p->kind == DEVQ_PL_PARAM_BUFFER) ||
                 ((p->kind == DEVQ_PL_PARAM_VALUE || p->kind == DEVQ_PL_PARAM_BYTES) && p->size >= 1 &&
                  p->size <= MAX_VALUE);
        if (!ok)
            return devq__err(-EINVAL,
                             "%s: kernel '%s': the %s backend declared parameter %u as "
                             "kind %u of %u bytes; a plugin bug: report it",
                             fn, k->name, k->dev->info.backend, i, p->kind, p->size);
    }
    struct devq_pl_param *copy = NULL;
    if (in.nparams && !(copy = malloc(in.nparams * sizeof *copy)))
        return devq__err(-ENOMEM, "%s: out of memory for kernel '%s''s %u parameters", fn, k->name,
                         in.nparams);
    if (in.nparams)
        memcpy(copy, in.params, in.nparams * sizeof *copy);
    k->iface = in;
    k->iface.params = copy;
    k->checked = 1;
    return 0;
}

/* "a 4-byte value", "an 8-byte value": the article of the spoken number. */
static const char *article(size_t n)
{
    while (n >= 1000)
        n /= 1000;
    return (n == 8 || n == 11 || n == 18 || (n >= 80 && n <= 89) || (n >= 800 && n <= 899)) ? "an" : "a";
}

/* What argument a is, for messages: "a buffer", "a 2-byte value". */
static void passed(const devq_arg *a, char *out, size_t cap)
{
    if (a->buf)
        snprintf(out, cap, "a buffer");
    else
        snprintf(out, cap, "%s %zu-byte value", article(a->size), a->size);
}

/* What parameter p declares. */
static void declared(const struct devq_pl_param *p, char *out, size_t cap)
{
    if (p->kind == DEVQ_PL_PARAM_BUFFER)
        snprintf(out, cap, "a buffer");
    else if (p->kind == DEVQ_PL_PARAM_VALUE)
        snprintf(out, cap, "%s %u-byte value", article(p->size), p->size);
    else if (p->size == sizeof(void *))
        snprintf(out, cap, "%s %u-byte parameter (a buffer or %s %u-byte value)", article(p->size), p->size,
                 article(p->size), p->size);
    else
        snprintf(out, cap, "%s %u-byte value", article(p->size), p->size);
}

static int mismatch(const devq_kernel *k, size_t i, const struct devq_pl_param *p, const devq_arg *a,
                    const char *fn)
{
    char want[96], got[48];
    declared(p, want, sizeof want);
    passed(a, got, sizeof got);
    return devq__err(-EINVAL, "%s: kernel '%s' argument %zu: the kernel declares %s, %s was passed", fn,
                     k->name, i, want, got);
}

static int matches(const struct devq_pl_param *p, const devq_arg *a)
{
    switch (p->kind) {
    case DEVQ_PL_PARAM_BUFFER:
        return a->buf != NULL;
    case DEVQ_PL_PARAM_VALUE:
        return !a->buf && a->size == p->size;
    default:
        return a->buf ? p->size == sizeof(void *) : a->size == p->size;
    }
}

/* cpu, cuda: params[i] is argument i. */
static int check_positional(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    for (size_t i = 0; i < nargs; i++)
        if (!matches(&k->iface.params[i], &args[i]))
            return mismatch(k, i, &k->iface.params[i], &args[i], fn);
    return 0;
}

/* The i-th declared parameter of `kind` (buffers or values), or NULL. */
static const struct devq_pl_param *nth_of(const devq_kernel *k, int buffers, uint32_t nth)
{
    for (uint32_t j = 0; j < k->iface.nparams; j++) {
        const struct devq_pl_param *p = &k->iface.params[j];
        if ((p->kind == DEVQ_PL_PARAM_BUFFER) == !!buffers && nth-- == 0)
            return p;
    }
    return NULL;
}

static int count_mismatch(const devq_kernel *k, size_t nargs, const char *fn)
{
    uint32_t n = k->iface.nparams;
    const char *s = n == 1 ? "" : "s", *were = nargs == 1 ? "was" : "were";
    if (nargs > n)
        return devq__err(-EINVAL,
                         "%s: kernel '%s' takes %u argument%s, %zu %s passed: argument %u "
                         "is one too many",
                         fn, k->name, n, s, nargs, were, n);
    const struct devq_pl_param *p = &k->iface.params[nargs]; /* positional: the next one */
    char want[96] = "a parameter";
    if (p)
        declared(p, want, sizeof want);
    return devq__err(-EINVAL,
                     "%s: kernel '%s' takes %u argument%s, %zu %s passed: argument %zu "
                     "(%s) is missing",
                     fn, k->name, n, s, nargs, were, nargs, want);
}

/* The declared value member that starts at push-constant byte `at`,
 * or NULL. */
static const struct devq_pl_param *member_at(const devq_kernel *k, uint32_t at)
{
    for (uint32_t j = 0; j < k->iface.nparams; j++) {
        const struct devq_pl_param *p = &k->iface.params[j];
        if (p->kind != DEVQ_PL_PARAM_BUFFER && p->offset == at)
            return p;
    }
    return NULL;
}

/* A value packed at byte `at` must start a member and end one (it may
 * span several: one C struct for the whole block), or touch no member:
 * padding before an 8-byte member, which std430 aligns to 8 while
 * values pack at multiples of 4.  The same rule as the vulkan plugin's
 * own launch check. */
static int on_member_edges(const devq_kernel *k, uint32_t at, size_t size)
{
    int starts = 0, ends = 0, touches = 0;
    uint64_t end = at + (uint64_t)size;
    for (uint32_t j = 0; j < k->iface.nparams; j++) {
        const struct devq_pl_param *p = &k->iface.params[j];
        if (p->kind == DEVQ_PL_PARAM_BUFFER || p->offset == UINT32_MAX)
            continue;
        uint64_t m0 = p->offset, m1 = m0 + p->size;
        starts |= m0 == at;
        ends |= m1 == end;
        touches |= m0 < end && at < m1;
    }
    return (starts && ends) || !touches;
}

/* Whether every value member has an offset (the vulkan plugin gives
 * them; a plugin may leave them UINT32_MAX). */
static int offsets_known(const devq_kernel *k)
{
    for (uint32_t j = 0; j < k->iface.nparams; j++)
        if (k->iface.params[j].kind != DEVQ_PL_PARAM_BUFFER && k->iface.params[j].offset == UINT32_MAX)
            return 0;
    return 1;
}

/* A declared member starting in [from, to): one the 4-byte packing
 * steps over. */
static const struct devq_pl_param *first_member_in(const devq_kernel *k, uint32_t from, uint32_t to)
{
    for (uint32_t j = 0; j < k->iface.nparams; j++) {
        const struct devq_pl_param *p = &k->iface.params[j];
        if (p->kind != DEVQ_PL_PARAM_BUFFER && p->offset != UINT32_MAX && p->offset >= from && p->offset < to)
            return p;
    }
    return NULL;
}

/* Declared parameters not yet covered: buffers past the nbuf-th and
 * members at or after push-constant byte `packed`. */
static uint32_t left_over(const devq_kernel *k, uint32_t nbuf, uint32_t packed)
{
    uint32_t n = 0, b = 0;
    for (uint32_t j = 0; j < k->iface.nparams; j++) {
        const struct devq_pl_param *p = &k->iface.params[j];
        if (p->kind == DEVQ_PL_PARAM_BUFFER)
            n += b++ >= nbuf;
        else
            n += p->offset == UINT32_MAX || p->offset >= packed;
    }
    return n;
}

/* An argument of the wrong sequence at position i: name what the other
 * sequence still lacks there, or that nothing more is taken. */
static int out_of_place(const devq_kernel *k, size_t i, size_t nargs, const devq_arg *a, uint32_t nbuf,
                        uint32_t at, const char *fn)
{
    const struct devq_pl_param *other =
        a->buf ? (at < k->iface.value_block ? member_at(k, at) : NULL) : nth_of(k, 1, nbuf);
    if (other)
        return mismatch(k, i, other, a, fn);
    return devq__err(-EINVAL,
                     "%s: kernel '%s' takes %zu argument%s, %zu %s passed: argument %zu "
                     "is one too many",
                     fn, k->name, i, i == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were", i);
}

/* vulkan: buffers are bindings 0.. in argument order; values are packed
 * in argument order at multiples of 4 into the push-constant block
 * (devq-vulkan(7)), each on member edges, and together they must cover
 * the block the kernel reads. */
static int check_sequences(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    uint32_t nbuf = 0, packed = 0, nbufs = 0, nval = 0;
    size_t last_value = nargs;
    for (uint32_t j = 0; j < k->iface.nparams; j++)
        nbufs += k->iface.params[j].kind == DEVQ_PL_PARAM_BUFFER;
    for (size_t i = 0; i < nargs; i++) {
        const devq_arg *a = &args[i];
        uint32_t at = (packed + 3u) & ~3u;
        if (a->buf) {
            if (nbuf == nbufs)
                return out_of_place(k, i, nargs, a, nbuf, at, fn);
            nbuf++;
            continue;
        }
        if (!offsets_known(k)) {
            /* Members without offsets: the n-th value is the n-th member,
             * by size only. */
            const struct devq_pl_param *p = nth_of(k, 0, nval);
            if (!p)
                return out_of_place(k, i, nargs, a, nbuf, UINT32_MAX, fn);
            if (a->size != p->size)
                return mismatch(k, i, p, a, fn);
            nval++;
            continue;
        }
        const struct devq_pl_param *skipped = first_member_in(k, packed, at);
        if (skipped)
            return devq__err(-EINVAL,
                             "%s: kernel '%s' argument %zu: the kernel reads a value at "
                             "push-constant byte %u, the arguments before it pack this one at byte %u "
                             "(values pack at multiples of 4, devq-vulkan(7))",
                             fn, k->name, i, skipped->offset, at);
        if (at >= k->iface.value_block)
            return out_of_place(k, i, nargs, a, nbuf, at, fn);
        if (at + a->size > k->iface.value_block || !on_member_edges(k, at, a->size)) {
            const struct devq_pl_param *p = member_at(k, at);
            if (p)
                return mismatch(k, i, p, a, fn);
            char got[48];
            passed(a, got, sizeof got);
            return devq__err(-EINVAL,
                             "%s: kernel '%s' argument %zu: %s packed at push-constant byte %u "
                             "does not cover whole members of the kernel's %u-byte block (values pack at "
                             "multiples of 4: a 4-byte value before an 8-byte member needs a 4-byte "
                             "padding argument, devq-vulkan(7))",
                             fn, k->name, i, got, at, k->iface.value_block);
        }
        packed = at + (uint32_t)a->size;
        last_value = i;
    }
    uint32_t next = (packed + 3u) & ~3u;
    uint32_t missing = offsets_known(k) ? left_over(k, nbuf, next) : left_over(k, nbuf, 0) - nval;
    if (missing) {
        const struct devq_pl_param *p = nbuf < nbufs       ? nth_of(k, 1, nbuf)
                                        : offsets_known(k) ? member_at(k, next)
                                                           : nth_of(k, 0, nval);
        char want[96] = "a push-constant value";
        if (p)
            declared(p, want, sizeof want);
        size_t n = nargs + missing;
        return devq__err(-EINVAL,
                         "%s: kernel '%s' takes %zu arguments, %zu %s passed: argument %zu "
                         "(%s) is missing",
                         fn, k->name, n, nargs, nargs == 1 ? "was" : "were", nargs, want);
    }
    if (packed < k->iface.value_block) {
        if (last_value == nargs)
            return devq__err(-EINVAL,
                             "%s: kernel '%s': the kernel reads %u bytes of push constants, "
                             "no value argument was passed",
                             fn, k->name, k->iface.value_block);
        return devq__err(-EINVAL,
                         "%s: kernel '%s' argument %zu: the kernel reads %u bytes of push "
                         "constants, the value arguments end at byte %u",
                         fn, k->name, last_value, k->iface.value_block, packed);
    }
    return 0;
}

int devq__kernel_args_check(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    if (!k->checked)
        return 0;
    if (!(k->iface.flags & DEVQ_PL_IFACE_POSITIONAL))
        return check_sequences(k, args, nargs, fn);
    if (nargs != k->iface.nparams)
        return count_mismatch(k, nargs, fn);
    return check_positional(k, args, nargs, fn); /* value_block does not apply */
}
