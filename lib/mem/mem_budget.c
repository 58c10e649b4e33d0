/* SPDX-License-Identifier: MIT */
/* The budget decorator: one limit on the bytes a device hands out.
 *
 * Bytes are reserved against the limit before the inner resource is asked
 * (a compare-and-swap loop, so concurrent requests can never overshoot
 * together) and given back when a free returns.  A refusal is -ENOMEM
 * with the three numbers a user needs to act on it. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "error.h"
#include "mem_resource.h"

struct budget {
    devq_resource *inner; /* first: see struct devq_decorator */
    uint64_t limit;
    _Atomic uint64_t outstanding;
};

static int budget_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                           void **hptr)
{
    struct budget *b = state;
    uint64_t cur = atomic_load(&b->outstanding);
    do {
        if (bytes > b->limit || cur > b->limit - bytes)
            return devq__err(-ENOMEM, "budget: need %zu, outstanding %llu, limit %llu", bytes,
                             (unsigned long long)cur, (unsigned long long)b->limit);
    } while (!atomic_compare_exchange_weak(&b->outstanding, &cur, cur + bytes));
    int r = devq_resource_allocate(b->inner, bytes, st, tag, dptr, hptr);
    if (r < 0)
        atomic_fetch_sub(&b->outstanding, bytes);
    return r;
}

static int budget_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct budget *b = state;
    int r = devq_resource_deallocate(b->inner, ptr, bytes, st, tag);
    if (r == 0 || r == -EFAULT)
        atomic_fetch_sub(&b->outstanding, bytes);
    return r;
}

static uint64_t budget_outstanding(void *state)
{
    struct budget *b = state;
    return atomic_load(&b->outstanding);
}

static void budget_destroy(void *state)
{
    struct budget *b = state;
    devq__resource_free(b->inner);
    free(b);
}

static const struct devq_resource_ops budget_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "budget",
    .allocate = budget_allocate,
    .deallocate = budget_deallocate,
    .bytes_outstanding = budget_outstanding,
    .reap_pending = devq__fwd_reap,
    .supports_use_tracking = devq__fwd_supports,
    .prepare_use = devq__fwd_prepare,
    .finish_use = devq__fwd_finish,
    .trim = devq__fwd_trim,
    .stream_gone = devq__fwd_stream_gone,
    .stats = devq__fwd_stats,
    .destroy = budget_destroy,
};

DEVQ_API int devq_resource_budget(devq_resource *inner, uint64_t limit, devq_resource **out)
{
    int r = devq__resource_check_inner(inner, "devq_resource_budget");
    if (r < 0)
        return r;
    if (!out || !limit)
        return devq__err(-EINVAL, "devq_resource_budget: %s",
                         !out ? "out is NULL" : "a limit of 0 would refuse everything; give a byte count");
    struct budget *b = calloc(1, sizeof *b);
    if (!b)
        return devq__err(-ENOMEM, "devq_resource_budget: out of host memory");
    b->inner = inner;
    b->limit = limit;
    r = devq__resource_new(inner->dev, &budget_ops, b, DEVQ_RES_BUDGET, inner, out);
    if (r < 0)
        free(b);
    return r;
}

uint64_t devq__budget_limit(devq_resource *r)
{
    devq_resource *b = devq__resource_find(r, DEVQ_RES_BUDGET);
    return b ? ((struct budget *)b->state)->limit : 0;
}

void devq__budget_describe(devq_resource *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "budget(%llu)", (unsigned long long)((struct budget *)r->state)->limit);
}
