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
#include "error.h"
#include "queue.h"

#define MAX_PARAMS 4096u             /* devq_queue_exec's own limit on nargs */
#define MAX_VALUE  4096u             /* and on a value's size */

int devq__kernel_iface_load(devq_kernel *k, const char *fn)
{
    const struct devq_backend_ops *ops = k->dev->ops;
    if (!ops->kernel_iface)
        return 0;
    struct devq_pl_kernel_iface in;
    memset(&in, 0, sizeof in);
    int r = ops->kernel_iface(k->pl, &in);
    if (r == -ENOTSUP)
        return 0;                    /* this kernel's interface is unknown: unchecked */
    if (r < 0)
        return devq__err(r, "%s: kernel '%s': the %s backend could not read its parameters: %s", fn,
                         k->name, k->dev->info.backend, devq_errmsg());
    /* The plugin's answer is outside input: a malformed one refuses the
     * load rather than checking launches against nonsense. */
    if (in.nparams > MAX_PARAMS || (in.nparams && !in.params) || in.value_block > 65536)
        return devq__err(-EINVAL, "%s: kernel '%s': the %s backend declared %u parameters at %p "
                         "(block %u bytes); a plugin bug: report it", fn, k->name,
                         k->dev->info.backend, in.nparams, (const void *)in.params, in.value_block);
    for (uint32_t i = 0; i < in.nparams; i++) {
        const struct devq_pl_param *p = &in.params[i];
        int ok = (p->kind == DEVQ_PL_PARAM_BUFFER) ||
                 ((p->kind == DEVQ_PL_PARAM_VALUE || p->kind == DEVQ_PL_PARAM_BYTES) &&
                  p->size >= 1 && p->size <= MAX_VALUE);
        if (!ok)
            return devq__err(-EINVAL, "%s: kernel '%s': the %s backend declared parameter %u as "
                             "kind %u of %u bytes; a plugin bug: report it", fn, k->name,
                             k->dev->info.backend, i, p->kind, p->size);
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
        snprintf(out, cap, "%s %u-byte parameter (a buffer or %s %u-byte value)", article(p->size),
                 p->size, article(p->size), p->size);
    else
        snprintf(out, cap, "%s %u-byte value", article(p->size), p->size);
}

static int mismatch(const devq_kernel *k, size_t i, const struct devq_pl_param *p,
                    const devq_arg *a, const char *fn)
{
    char want[96], got[48];
    declared(p, want, sizeof want);
    passed(a, got, sizeof got);
    return devq__err(-EINVAL, "%s: kernel '%s' argument %zu: the kernel declares %s, %s was passed",
                     fn, k->name, i, want, got);
}

static int matches(const struct devq_pl_param *p, const devq_arg *a)
{
    switch (p->kind) {
    case DEVQ_PL_PARAM_BUFFER: return a->buf != NULL;
    case DEVQ_PL_PARAM_VALUE:  return !a->buf && a->size == p->size;
    default:                   return a->buf ? p->size == sizeof(void *) : a->size == p->size;
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

/* The first declared parameter a short argument list leaves out:
 * positionally the next one; else the next binding or member of
 * whichever sequence falls short. */
static const struct devq_pl_param *first_missing(const devq_kernel *k, const devq_arg *args, size_t nargs)
{
    if (k->iface.flags & DEVQ_PL_IFACE_POSITIONAL)
        return &k->iface.params[nargs];
    uint32_t nbuf = 0, nval = 0;
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].buf)
            nbuf++;
        else
            nval++;
    }
    const struct devq_pl_param *p = nth_of(k, 1, nbuf);
    return p ? p : nth_of(k, 0, nval);
}

static int count_mismatch(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    uint32_t n = k->iface.nparams;
    const char *s = n == 1 ? "" : "s", *were = nargs == 1 ? "was" : "were";
    if (nargs > n)
        return devq__err(-EINVAL, "%s: kernel '%s' takes %u argument%s, %zu %s passed: argument %u "
                         "is one too many", fn, k->name, n, s, nargs, were, n);
    const struct devq_pl_param *p = first_missing(k, args, nargs);
    char want[96] = "a parameter";
    if (p)
        declared(p, want, sizeof want);
    return devq__err(-EINVAL, "%s: kernel '%s' takes %u argument%s, %zu %s passed: argument %zu "
                     "(%s) is missing", fn, k->name, n, s, nargs, were, nargs, want);
}

/* vulkan: buffers are bindings 0.. in argument order, values the
 * push-constant members in argument order, their bytes packed at 4-byte
 * alignment (devq-vulkan(7)), so each must land on its member's offset,
 * and together they must cover the block the kernel reads. */
static int check_sequences(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    uint32_t nbuf = 0, nval = 0, packed = 0;
    size_t last_value = nargs;
    for (size_t i = 0; i < nargs; i++) {
        const devq_arg *a = &args[i];
        char got[48];
        passed(a, got, sizeof got);
        const struct devq_pl_param *p = nth_of(k, a->buf != NULL, a->buf ? nbuf : nval);
        if (!p) {
            /* The other sequence has a slot left: that is what this
             * position should have carried. */
            const struct devq_pl_param *other = nth_of(k, a->buf == NULL, a->buf ? nval : nbuf);
            char want[96];
            if (other)
                declared(other, want, sizeof want);
            return devq__err(-EINVAL, "%s: kernel '%s' argument %zu: the kernel declares %s%s, "
                             "%s was passed", fn, k->name, i,
                             other ? want : (a->buf ? "no more buffer bindings" : "no more push-constant members"),
                             other ? "" : " here", got);
        }
        if (a->buf) {
            nbuf++;
            continue;
        }
        packed = (packed + 3u) & ~3u;
        if (a->size != p->size)
            return mismatch(k, i, p, a, fn);
        if (p->offset != UINT32_MAX && p->offset != packed)
            return devq__err(-EINVAL, "%s: kernel '%s' argument %zu: the kernel reads this value at "
                             "push-constant byte %u, the arguments before it pack it at byte %u",
                             fn, k->name, i, p->offset, packed);
        packed += (uint32_t)a->size;
        nval++;
        last_value = i;
    }
    if (packed < k->iface.value_block) {
        if (last_value == nargs)
            return devq__err(-EINVAL, "%s: kernel '%s': the kernel reads %u bytes of push constants, "
                             "no value argument was passed", fn, k->name, k->iface.value_block);
        return devq__err(-EINVAL, "%s: kernel '%s' argument %zu: the kernel reads %u bytes of push "
                         "constants, the value arguments end at byte %u", fn, k->name, last_value,
                         k->iface.value_block, packed);
    }
    return 0;
}

int devq__kernel_args_check(const devq_kernel *k, const devq_arg *args, size_t nargs, const char *fn)
{
    if (!k->checked)
        return 0;
    if (nargs != k->iface.nparams)
        return count_mismatch(k, args, nargs, fn);
    if (k->iface.flags & DEVQ_PL_IFACE_POSITIONAL)
        return check_positional(k, args, nargs, fn);   /* value_block does not apply */
    return check_sequences(k, args, nargs, fn);
}
