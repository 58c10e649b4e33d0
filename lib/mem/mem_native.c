/* SPDX-License-Identifier: MIT */
/* The native base: the backend's own stream-ordered allocator
 * (cuMemAllocAsync / cuMemFreeAsync), for backends that advertise
 * DEVQ_CAP_ASYNC_ALLOC.  The driver keeps the pool, the bins and the
 * cross-stream reuse rules, so this layer only counts bytes.  Synchronous
 * requests (no stream) use the backend's synchronous calls.  Cross-stream
 * uses are not tracked here: the use hooks are refused. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "device.h"
#include "error.h"
#include "mem_resource.h"

struct native {
    struct devq_device *dev;
    _Atomic uint64_t outstanding;
};

static int native_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                           void **hptr)
{
    struct native *n = state;
    const struct devq_backend_ops *ops = n->dev->ops;
    int r;
    *hptr = NULL;
    if (st)
        r = ops->mem_alloc_async(st->pl, bytes, dptr);
    else
        r = ops->mem_alloc(n->dev->pl, bytes, dptr, hptr);
    if (r < 0)
        return devq__err(r,
                         "native: backend could not allocate %zu bytes on stream %d "
                         "(outstanding %llu, budget %llu): %s",
                         bytes, st ? (int)st->id : -1, (unsigned long long)atomic_load(&n->outstanding),
                         (unsigned long long)devq__mem_budget_of(n->dev), devq__errmsg_peek());
    atomic_fetch_add_explicit(&n->outstanding, bytes, memory_order_relaxed);
    return 0;
}

static int native_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct native *n = state;
    if (st) {
        int r = n->dev->ops->mem_free_async(st->pl, ptr);
        if (r < 0 && !devq__mem_device_lost(n->dev, r))
            return r;
        /* Lost: the memory went with the context.  The synchronous free
         * gives the driver its handle back where it still takes it. */
        if (r < 0)
            n->dev->ops->mem_free(n->dev->pl, ptr);
    } else {
        n->dev->ops->mem_free(n->dev->pl, ptr);
    }
    atomic_fetch_sub_explicit(&n->outstanding, bytes, memory_order_relaxed);
    return 0;
}

static uint64_t native_outstanding(void *state)
{
    struct native *n = state;
    return atomic_load(&n->outstanding);
}

static int native_stats(void *state, devq_mem_stats *st)
{
    /* The driver does not say how much it keeps cached; report what we know. */
    st->bytes_outstanding = st->bytes_reserved = native_outstanding(state);
    return 0;
}

static void native_destroy(void *state)
{
    free(state);
}

static const struct devq_resource_ops native_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "native",
    .allocate = native_allocate,
    .deallocate = native_deallocate,
    .bytes_outstanding = native_outstanding,
    .stats = native_stats,
    .destroy = native_destroy,
};

DEVQ_API int devq_resource_native(devq_device *dev, devq_resource **out)
{
    int r = devq__mem_dev_check(dev, "devq_resource_native");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_resource_native: out is NULL");
    if (!(dev->info.caps & DEVQ_CAP_ASYNC_ALLOC) || !dev->ops->mem_alloc_async || !dev->ops->mem_free_async)
        return devq__err(-ENOTSUP,
                         "devq_resource_native: backend '%s' has no native "
                         "stream-ordered allocator; use devq_resource_pool",
                         dev->ops->name ? dev->ops->name : "?");
    struct native *n = calloc(1, sizeof *n);
    if (!n)
        return devq__err(-ENOMEM, "devq_resource_native: out of host memory");
    n->dev = dev;
    r = devq__resource_new(dev, &native_ops, n, DEVQ_RES_NATIVE, NULL, out);
    if (r < 0)
        free(n);
    return r;
}
