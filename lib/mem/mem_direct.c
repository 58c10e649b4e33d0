/* SPDX-License-Identifier: MIT */
/* The direct base: one backend allocation per request, nothing cached.
 *
 * A synchronous free returns memory to the backend at once.  A free on a
 * stream cannot: work queued on that stream may still touch the memory,
 * and the backend's mem_free is not stream-ordered.  Such frees wait in a
 * pending list, each with the fence recorded at the free, and go to the
 * backend when their fence is reached (checked by every later call and by
 * reap).  It tracks no cross-stream uses: the use hooks are refused. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "error.h"
#include "log.h"
#include "mem_resource.h"

struct pending_free {
    void *ptr;
    size_t bytes;
    uint32_t sid;
    devq_pl_event *fence;
};

struct direct {
    struct devq_device *dev;
    pthread_mutex_t lock;
    struct pending_free *pending;
    size_t npending, cap;
    uint64_t pending_bytes;
    uint64_t stuck_bytes; /* fences that never settled: kept out of use */
    _Atomic uint64_t outstanding;
};

/* Free every pending block whose fence is reached.  Caller holds the lock. */
static size_t reap_locked(struct direct *d)
{
    size_t kept = 0, done = 0;
    for (size_t i = 0; i < d->npending; i++) {
        struct pending_free *p = &d->pending[i];
        if (devq__fence_reached(d->dev, p->fence)) {
            d->dev->ops->mem_free(d->dev->pl, p->ptr);
            devq__fence_put(d->dev, &p->fence);
            d->pending_bytes -= p->bytes;
            done++;
        } else {
            d->pending[kept++] = *p;
        }
    }
    d->npending = kept;
    return done;
}

static int direct_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                           void **hptr)
{
    struct direct *d = state;
    struct devq_device *dev = d->dev;
    pthread_mutex_lock(&d->lock);
    if (d->npending)
        reap_locked(d);
    pthread_mutex_unlock(&d->lock);
    int r = dev->ops->mem_alloc(dev->pl, bytes, dptr, hptr);
    if (r == -ENOMEM) {
        char why[256];
        snprintf(why, sizeof why, "%s", devq__errmsg_peek());
        uint64_t pend;
        pthread_mutex_lock(&d->lock);
        reap_locked(d);
        pend = d->pending_bytes;
        pthread_mutex_unlock(&d->lock);
        r = dev->ops->mem_alloc(dev->pl, bytes, dptr, hptr);
        if (r < 0)
            return devq__err(r,
                             "direct: out of device memory for %zu bytes: outstanding %llu, "
                             "pending-free %llu bytes; backend: %s",
                             bytes, (unsigned long long)atomic_load(&d->outstanding),
                             (unsigned long long)pend, why);
    }
    if (r < 0) /* the plugin named the driver error; say what was asked */
        return devq__err(r, "direct: backend could not allocate %zu bytes: %s", bytes, devq__errmsg_peek());
    atomic_fetch_add_explicit(&d->outstanding, bytes, memory_order_relaxed);
    return 0;
}

static int direct_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct direct *d = state;
    struct devq_device *dev = d->dev;
    if (!st) {
        dev->ops->mem_free(dev->pl, ptr);
        atomic_fetch_sub_explicit(&d->outstanding, bytes, memory_order_relaxed);
        return 0;
    }
    struct pending_free p = { .ptr = ptr, .bytes = bytes, .sid = st->id };
    int r = devq__fence_record(dev, st, &p.fence);
    if (r < 0 && devq__mem_device_lost(dev, r)) {
        /* Nothing runs on a lost device: the memory is idle (and gone). */
        dev->ops->mem_free(dev->pl, ptr);
        atomic_fetch_sub_explicit(&d->outstanding, bytes, memory_order_relaxed);
        return 0;
    }
    pthread_mutex_lock(&d->lock);
    atomic_fetch_sub_explicit(&d->outstanding, bytes, memory_order_relaxed);
    if (r < 0) {
        /* Without a fence nobody can tell when the stream is done with the
         * memory: keep it out of circulation rather than risk reuse. */
        d->stuck_bytes += bytes;
        pthread_mutex_unlock(&d->lock);
        return devq__err(r,
                         "direct: could not record the free of %p on stream %u (%s); "
                         "its %zu bytes stay reserved",
                         ptr, st->id, devq__errmsg_peek(), bytes);
    }
    if (d->npending == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct pending_free *np = realloc(d->pending, cap * sizeof *np);
        if (!np) {
            pthread_mutex_unlock(&d->lock);
            /* Last resort: wait for the stream here rather than leak. */
            if (devq__fence_settle(dev, p.fence, DEVQ_FENCE_SETTLE_NS))
                dev->ops->mem_free(dev->pl, ptr);
            devq__fence_put(dev, &p.fence);
            return 0;
        }
        d->pending = np;
        d->cap = cap;
    }
    d->pending[d->npending++] = p;
    d->pending_bytes += bytes;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static uint64_t direct_outstanding(void *state)
{
    struct direct *d = state;
    return atomic_load(&d->outstanding);
}

static int direct_reap(void *state)
{
    struct direct *d = state;
    pthread_mutex_lock(&d->lock);
    reap_locked(d);
    pthread_mutex_unlock(&d->lock);
    return 0;
}

/* Settle pending frees whose fence matches `sid` (any when NONE). */
static void settle(struct direct *d, uint32_t sid)
{
    size_t kept = 0;
    for (size_t i = 0; i < d->npending; i++) {
        struct pending_free *p = &d->pending[i];
        if (sid != DEVQ_STREAM_NONE && p->sid != sid) {
            d->pending[kept++] = *p;
            continue;
        }
        if (devq__fence_settle(d->dev, p->fence, DEVQ_FENCE_SETTLE_NS)) {
            d->dev->ops->mem_free(d->dev->pl, p->ptr);
        } else {
            devq__log(DEVQ_LOG_BASIC,
                      "direct: free of %p (%zu bytes) on stream %u never "
                      "completed; the memory stays reserved",
                      p->ptr, p->bytes, p->sid);
            d->stuck_bytes += p->bytes;
        }
        d->pending_bytes -= p->bytes;
        devq__fence_put(d->dev, &p->fence);
    }
    d->npending = kept;
}

static void direct_stream_gone(void *state, devq_stream_ref *st)
{
    struct direct *d = state;
    pthread_mutex_lock(&d->lock);
    settle(d, st->id);
    pthread_mutex_unlock(&d->lock);
}

static int direct_stats(void *state, devq_mem_stats *st)
{
    struct direct *d = state;
    pthread_mutex_lock(&d->lock);
    st->bytes_outstanding = atomic_load(&d->outstanding);
    st->bytes_reserved = st->bytes_outstanding + d->pending_bytes + d->stuck_bytes;
    st->pending_frees = d->npending;
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static void direct_destroy(void *state)
{
    struct direct *d = state;
    settle(d, DEVQ_STREAM_NONE);
    free(d->pending);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static const struct devq_resource_ops direct_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "direct",
    .allocate = direct_allocate,
    .deallocate = direct_deallocate,
    .bytes_outstanding = direct_outstanding,
    .reap_pending = direct_reap,
    .stream_gone = direct_stream_gone,
    .stats = direct_stats,
    .destroy = direct_destroy,
};

DEVQ_API int devq_resource_direct(devq_device *dev, devq_resource **out)
{
    int r = devq__mem_dev_check(dev, "devq_resource_direct");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_resource_direct: out is NULL");
    struct direct *d = calloc(1, sizeof *d);
    if (!d)
        return devq__err(-ENOMEM, "devq_resource_direct: out of host memory");
    d->dev = dev;
    pthread_mutex_init(&d->lock, NULL);
    r = devq__resource_new(dev, &direct_ops, d, DEVQ_RES_DIRECT, NULL, out);
    if (r < 0) {
        pthread_mutex_destroy(&d->lock);
        free(d);
    }
    return r;
}
