/* SPDX-License-Identifier: MIT */
/* The resource vtable plumbing: the wrapper every resource lives in, the
 * public devq_resource_* calls, and the devq__mem_* entry points that
 * buffers use (they go through the device's installed stack). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "event_pool.h"
#include "error.h"
#include "log.h"
#include "mem.h"
#include "mem_resource.h"
#include "notifier.h"
#include "trace.h"

static void flush_caches(struct devq_device *dev, int locked);

/* ---- the wrapper ---- */

int devq__resource_new(struct devq_device *dev, const struct devq_resource_ops *ops, void *state,
                       enum devq_resource_kind kind, devq_resource *inner, devq_resource **out)
{
    devq_resource *r = calloc(1, sizeof *r);
    if (!r)
        return devq__err(-ENOMEM, "devq_resource: out of host memory");
    size_t n = ops->size < sizeof r->ops ? ops->size : sizeof r->ops;
    memcpy(&r->ops, ops, n);
    r->ops.size = sizeof r->ops;
    r->magic = DEVQ_MAGIC_RESOURCE;
    r->kind = kind;
    r->dev = dev;
    r->state = state;
    r->inner = inner;
    r->lib_counts = r->ops.bytes_outstanding == NULL;
    if (inner)
        atomic_store(&inner->owned, 1);
    *out = r;
    return 0;
}

void devq__resource_free(devq_resource *r)
{
    if (!r)
        return;
    if (r->ops.destroy)
        r->ops.destroy(r->state);
    r->magic = 0;
    free(r);
}

int devq__resource_check(const devq_resource *r, const char *fn)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE)
        return devq__err(-EINVAL, "%s: not a devq_resource (NULL or destroyed)", fn);
    return 0;
}

int devq__resource_check_inner(const devq_resource *inner, const char *fn)
{
    int r = devq__resource_check(inner, fn);
    if (r < 0)
        return r;
    if (atomic_load(&inner->owned))
        return devq__err(-EBUSY,
                         "%s: resource '%s' already belongs to a stack or a device; "
                         "build a new one",
                         fn, inner->ops.name);
    return 0;
}

devq_resource *devq__resource_find(devq_resource *r, enum devq_resource_kind kind)
{
    for (; r; r = r->inner)
        if (r->kind == kind)
            return r;
    return NULL;
}

void devq__resource_describe(devq_resource *r, char *buf, size_t cap)
{
    /* Printed base first, the way the stack is built. */
    devq_resource *layers[32];
    size_t n = 0;
    for (; r && n < 32; r = r->inner)
        layers[n++] = r;
    size_t used = 0;
    buf[0] = 0;
    while (n--) {
        char one[96];
        if (layers[n]->kind == DEVQ_RES_BUDGET)
            devq__budget_describe(layers[n], one, sizeof one);
        else
            snprintf(one, sizeof one, "%s", layers[n]->ops.name ? layers[n]->ops.name : "?");
        int w = snprintf(buf + used, cap - used, "%s%s", used ? " -> " : "", one);
        if (w < 0 || (size_t)w >= cap - used)
            break;
        used += (size_t)w;
    }
}

DEVQ_API uint32_t devq_stream_ref_id(const devq_stream_ref *s)
{
    return devq__sid(s);
}

int devq__mem_dev_check(const struct devq_device *dev, const char *fn)
{
    /* magic 0: the registry is attaching the device (devq__mem_create). */
    if (!dev || (dev->obj.magic != DEVQ_MAGIC_DEVICE && dev->obj.magic != 0))
        return devq__err(-EINVAL, "%s: not a devq_device (NULL or closed)", fn);
    return 0;
}

/* ---- fences ---- */

int devq__fence_record(struct devq_device *dev, struct devq_stream *st, devq_pl_event **e)
{
    int r;
    if (!*e && (r = devq__event_get(dev, 0, e)) < 0)
        return r;
    r = dev->ops->event_record(*e, st->pl);
    if (r < 0)
        devq__fence_put(dev, e);
    return r;
}

/* A sticky driver error is -EIO from the call that met it (another
 * thread's work may have poisoned the context just before) and -ENODEV
 * from every later call: ask the backend once more to tell it from a
 * plain I/O failure.  Error paths only; the message is kept. */
static int lost_on_probe(struct devq_device *dev)
{
    if (!dev->event_pool)
        return 0;
    char msg[DEVQ_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", devq__errmsg_peek());
    devq_pl_event *e;
    int r = devq__event_get(dev, 0, &e);
    if (r == 0) {
        r = dev->ops->event_query(e);
        devq__event_put(dev, e, 0);
    }
    if (r == -ENODEV)
        devq__device_set_lost(dev, devq__errmsg_peek());
    devq__err_str(0, msg);
    return r == -ENODEV;
}

int devq__mem_device_lost(struct devq_device *dev, int err)
{
    if (atomic_load(&dev->lost))
        return 1;
    if (err == -ENODEV) {
        devq__device_set_lost(dev, devq__errmsg_peek());
        return 1;
    }
    return err == -EIO && lost_on_probe(dev);
}

/* A lost device runs nothing any more and its memory went with its
 * context: every fence counts as reached, or frees would wait forever. */
int devq__fence_reached(struct devq_device *dev, devq_pl_event *e)
{
    int r = dev->ops->event_query(e);
    return r == 0 || (r != -EAGAIN && devq__mem_device_lost(dev, r));
}

int devq__fence_settle(struct devq_device *dev, devq_pl_event *e, uint64_t timeout_ns)
{
    int r = dev->ops->event_query(e);
    if (r == 0 || (r != -EAGAIN && devq__mem_device_lost(dev, r)))
        return 1;
    r = dev->ops->event_wait(e, timeout_ns);
    return r == 0 || (r != -ETIMEDOUT && devq__mem_device_lost(dev, r));
}

void devq__fence_put(struct devq_device *dev, devq_pl_event **e)
{
    if (*e)
        devq__event_put(dev, *e, 0);
    *e = NULL;
}

/* ---- forwarding for decorators ---- */

static devq_resource *inner_of(void *state)
{
    return ((struct devq_decorator *)state)->inner;
}

int devq__fwd_reap(void *state)
{
    return devq_resource_reap(inner_of(state));
}

int devq__fwd_trim(void *state)
{
    return devq_resource_trim(inner_of(state));
}

int devq__fwd_supports(void *state)
{
    return devq_resource_supports_use_tracking(inner_of(state));
}

int devq__fwd_prepare(void *state, void *ptr, devq_stream_ref *st, enum devq_access a)
{
    return devq_resource_prepare_use(inner_of(state), ptr, st, a);
}

int devq__fwd_finish(void *state, void *ptr, devq_stream_ref *st, enum devq_access a)
{
    return devq_resource_finish_use(inner_of(state), ptr, st, a);
}

void devq__fwd_stream_gone(void *state, devq_stream_ref *st)
{
    devq_resource *in = inner_of(state);
    if (in->ops.stream_gone)
        in->ops.stream_gone(in->state, st);
}

int devq__fwd_stats(void *state, devq_mem_stats *st)
{
    return devq_resource_stats_get(inner_of(state), st);
}

/* ---- user resources ---- */

DEVQ_API int devq_resource_create(devq_device *dev, const struct devq_resource_ops *ops, void *state,
                                  devq_resource **out)
{
    int r = devq__mem_dev_check(dev, "devq_resource_create");
    if (r < 0)
        return r;
    if (!ops || !out)
        return devq__err(-EINVAL, "devq_resource_create: ops and out must not be NULL");
    if (ops->abi_version != DEVQ_RESOURCE_ABI_VERSION)
        return devq__err(-ENOTSUP,
                         "devq_resource_create: ops table version %u; this libdevq "
                         "understands %u",
                         ops->abi_version, DEVQ_RESOURCE_ABI_VERSION);
    size_t need = offsetof(struct devq_resource_ops, deallocate) + sizeof ops->deallocate;
    if (ops->size < need)
        return devq__err(-EINVAL,
                         "devq_resource_create: ops size %u is smaller than the "
                         "mandatory part (%zu); set .size = sizeof(struct devq_resource_ops)",
                         ops->size, need);
    if (!ops->allocate || !ops->deallocate)
        return devq__err(-EINVAL, "devq_resource_create: '%s' lacks allocate or deallocate",
                         ops->name ? ops->name : "(unnamed)");
    return devq__resource_new(dev, ops, state, DEVQ_RES_USER, NULL, out);
}

DEVQ_API void devq_resource_destroy(devq_resource *r)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE)
        return;
    /* A resource inside a stack or a device is destroyed with its owner;
     * freeing it here would leave the owner with a dangling pointer. */
    if (atomic_load(&r->owned))
        return;
    devq__resource_free(r);
}

DEVQ_API void *devq_resource_state(const devq_resource *r)
{
    return r && r->magic == DEVQ_MAGIC_RESOURCE ? r->state : NULL;
}

DEVQ_API const char *devq_resource_name(const devq_resource *r)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE)
        return "(invalid)";
    return r->ops.name ? r->ops.name : "(unnamed)";
}

DEVQ_API devq_resource *devq_resource_inner(const devq_resource *r)
{
    return r && r->magic == DEVQ_MAGIC_RESOURCE ? r->inner : NULL;
}

/* ---- calls ---- */

DEVQ_API int devq_resource_allocate(devq_resource *r, size_t bytes, devq_stream_ref *stream, uint32_t tag,
                                    void **device_ptr, void **host_ptr)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE || !device_ptr)
        return devq__err(-EINVAL, "devq_resource_allocate: NULL or destroyed resource, or NULL device_ptr");
    if (!bytes)
        return devq__err(-EINVAL, "devq_resource_allocate: 0 bytes requested from '%s'",
                         devq_resource_name(r));
    void *h = NULL;
    int ret = r->ops.allocate(r->state, bytes, stream, tag, device_ptr, &h);
    if (host_ptr)
        *host_ptr = ret < 0 ? NULL : h;
    if (ret >= 0 && r->lib_counts)
        atomic_fetch_add_explicit(&r->outstanding, bytes, memory_order_relaxed);
    return ret < 0 ? ret : 0;
}

DEVQ_API int devq_resource_deallocate(devq_resource *r, void *device_ptr, size_t bytes,
                                      devq_stream_ref *stream, uint32_t tag)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE)
        return devq__err(-EINVAL, "devq_resource_deallocate: NULL or destroyed resource");
    if (!device_ptr)
        return devq__err(-EINVAL, "devq_resource_deallocate: NULL pointer given to '%s'",
                         devq_resource_name(r));
    int ret = r->ops.deallocate(r->state, device_ptr, bytes, stream, tag);
    /* -EFAULT (guard) means: freed, but found corrupted. */
    if ((ret >= 0 || ret == -EFAULT) && r->lib_counts)
        atomic_fetch_sub_explicit(&r->outstanding, bytes, memory_order_relaxed);
    return ret < 0 ? ret : 0;
}

DEVQ_API uint64_t devq_resource_bytes_outstanding(devq_resource *r)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE)
        return 0;
    if (r->lib_counts)
        return atomic_load(&r->outstanding);
    return r->ops.bytes_outstanding(r->state);
}

DEVQ_API int devq_resource_reap(devq_resource *r)
{
    int ret = devq__resource_check(r, "devq_resource_reap");
    if (ret < 0)
        return ret;
    return r->ops.reap_pending ? r->ops.reap_pending(r->state) : 0;
}

DEVQ_API int devq_resource_trim(devq_resource *r)
{
    int ret = devq__resource_check(r, "devq_resource_trim");
    if (ret < 0)
        return ret;
    return r->ops.trim ? r->ops.trim(r->state) : 0;
}

DEVQ_API int devq_resource_supports_use_tracking(devq_resource *r)
{
    if (!r || r->magic != DEVQ_MAGIC_RESOURCE || !r->ops.supports_use_tracking)
        return 0;
    return r->ops.supports_use_tracking(r->state) ? 1 : 0;
}

static int use_refused(devq_resource *r, const char *hook)
{
    return devq__err(-ENOTSUP,
                     "%s: resource '%s' cannot track cross-stream uses; order them "
                     "with queue waits (the device tracker does) or use a resource whose "
                     "supports_use_tracking is 1",
                     hook, devq_resource_name(r));
}

DEVQ_API int devq_resource_prepare_use(devq_resource *r, void *device_ptr, devq_stream_ref *stream,
                                       enum devq_access access)
{
    int ret = devq__resource_check(r, "devq_resource_prepare_use");
    if (ret < 0)
        return ret;
    if (!r->ops.prepare_use)
        return use_refused(r, "devq_resource_prepare_use");
    return r->ops.prepare_use(r->state, device_ptr, stream, access);
}

DEVQ_API int devq_resource_finish_use(devq_resource *r, void *device_ptr, devq_stream_ref *stream,
                                      enum devq_access access)
{
    int ret = devq__resource_check(r, "devq_resource_finish_use");
    if (ret < 0)
        return ret;
    if (!r->ops.finish_use)
        return use_refused(r, "devq_resource_finish_use");
    return r->ops.finish_use(r->state, device_ptr, stream, access);
}

DEVQ_API int devq_resource_stats_get(devq_resource *r, devq_mem_stats *st)
{
    int ret = devq__resource_check(r, "devq_resource_stats_get");
    if (ret < 0)
        return ret;
    if (!st)
        return devq__err(-EINVAL, "devq_resource_stats_get: st is NULL");
    memset(st, 0, sizeof *st);
    if (r->ops.stats)
        return r->ops.stats(r->state, st);
    st->bytes_outstanding = devq_resource_bytes_outstanding(r);
    return 0;
}

/* The stats layer of r, with the device's buffer caches settled first
 * when r is a device's stack (so usage counts what is really held). */
static int usage_layer(devq_resource *r, const char *fn, devq_resource **out)
{
    int ret = devq__resource_check(r, fn);
    if (ret < 0)
        return ret;
    if (r->dev && r->dev->mem && r->dev->mem->stack == r)
        flush_caches(r->dev, 0);
    *out = devq__resource_find(r, DEVQ_RES_STATS);
    if (!*out)
        return devq__err(-ENOENT, "%s: '%s' has no stats layer", fn, devq_resource_name(r));
    return 0;
}

DEVQ_API int devq_resource_usage_by_tag(devq_resource *r, uint32_t tag, devq_mem_usage *u)
{
    devq_resource *s;
    int ret = usage_layer(r, "devq_resource_usage_by_tag", &s);
    return ret < 0 ? ret : devq__stats_usage_tag(s, tag, u);
}

DEVQ_API int devq_resource_usage_by_stream(devq_resource *r, uint32_t stream_id, devq_mem_usage *u)
{
    devq_resource *s;
    int ret = usage_layer(r, "devq_resource_usage_by_stream", &s);
    return ret < 0 ? ret : devq__stats_usage_stream(s, stream_id, u);
}

/* ---- the device's stack, as buffers use it ---- */

int devq__stack_cacheable(devq_resource *r)
{
    int stats = 0;
    for (; r; r = r->inner) {
        switch (r->kind) {
        case DEVQ_RES_STATS:
            stats = 1;
            break;
        case DEVQ_RES_POOL:
        case DEVQ_RES_NATIVE:
        case DEVQ_RES_DIRECT:
        case DEVQ_RES_BUDGET:
            break;
        default:
            return 0; /* guard, logging, a user's layer: they see every call */
        }
    }
    return stats;
}

/* Queues' buffer caches (buffer.c) back to the stack, so that what is
 * read next is true.  locked: the caller holds the device lock; else it
 * is taken only when free (a host function must not wait for it). */
static void flush_caches(struct devq_device *dev, int locked)
{
    struct devq_mem *m = dev->mem;
    const struct devq_device_hooks *h;
    if (!m || !atomic_load_explicit(&m->cached, memory_order_acquire) || !(h = devq__device_hooks()) ||
        !h->buffer_caches_flush)
        return;
    if (locked) {
        h->buffer_caches_flush(dev);
    } else if (pthread_mutex_trylock(&dev->lock) == 0) {
        h->buffer_caches_flush(dev);
        pthread_mutex_unlock(&dev->lock);
    }
}

void devq__mem_settle_pairs(struct devq_device *dev, uint32_t tag, struct devq_stream *st, uint64_t pairs)
{
    devq_resource *s = dev->mem ? devq__resource_find(dev->mem->stack, DEVQ_RES_STATS) : NULL;
    if (s && pairs)
        devq__stats_settle(s, tag, devq__sid(st), pairs);
}

static int mem_ready(struct devq_device *dev, const char *fn)
{
    if (!dev->mem)
        return devq__err(-ENODEV, "%s: device memory is not set up (device not attached)", fn);
    return 0;
}

int devq__mem_alloc(struct devq_device *dev, size_t bytes, struct devq_stream *st, uint32_t tag,
                    void **device_ptr, void **host_ptr)
{
    int r = mem_ready(dev, "devq__mem_alloc");
    if (r < 0)
        return r;
    /* No m->lock: the caller holds the device lock, which
     * devq_device_set_resource also takes around its swap of the stack. */
    struct devq_mem *m = dev->mem;
    r = devq_resource_allocate(m->stack, bytes, st, tag, device_ptr, host_ptr);
    if (r == 0) /* every writer holds the device lock: no locked add needed */
        atomic_store_explicit(&m->live, atomic_load_explicit(&m->live, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    /* A refusal (budget) or an out-of-memory is what a user tuning memory
     * needs to see first; the caller still gets the error. */
    if (r == -ENOMEM && DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        devq__log(DEVQ_LOG_BASIC, "mem: %s:%d: allocation of %zu bytes (tag %u%s) refused: %s",
                  dev->info.backend, dev->info.ordinal, bytes, tag, st ? ", stream-ordered" : "",
                  devq__errmsg_peek());
    return r;
}

int devq__mem_free(struct devq_device *dev, void *device_ptr, size_t bytes, struct devq_stream *st,
                   uint32_t tag)
{
    int r = mem_ready(dev, "devq__mem_free");
    if (r < 0)
        return r;
    struct devq_mem *m = dev->mem; /* device lock held: see devq__mem_alloc */
    r = devq_resource_deallocate(m->stack, device_ptr, bytes, st, tag);
    if (r == 0 || r == -EFAULT)
        atomic_store_explicit(&m->live, atomic_load_explicit(&m->live, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    if (r == 0 && st && !atomic_load_explicit(&m->reap_wanted, memory_order_relaxed))
        atomic_store(&m->reap_wanted, 1);
    return r;
}

void devq__mem_reap_quiet(struct devq_device *dev)
{
    struct devq_mem *m = dev->mem;
    /* Another reap in progress may have taken the request just before
     * this one's fences were reached: reap again rather than leave the
     * stats stale until the next finish. */
    if (!m || (!atomic_exchange(&m->reap_wanted, 0) && !atomic_load(&m->reaping) &&
               !atomic_load_explicit(&m->cached, memory_order_relaxed)))
        return;
    atomic_fetch_add(&m->reaping, 1);
    char saved[DEVQ_ERRMSG_MAX]; /* a reap's failure is not the caller's */
    snprintf(saved, sizeof saved, "%s", devq__errmsg_peek());
    /* A reap may record fences on streams: backend stream calls are made
     * under the device lock (TSan caught the notifier's reap racing a
     * submit on the cpu plugin's stream).  Callers (finish, the notifier)
     * never hold it; the order is the device lock, then the stack's. */
    pthread_mutex_lock(&dev->lock);
    flush_caches(dev, 1); /* a finish leaves the stats true */
    pthread_rwlock_rdlock(&m->lock);
    devq_resource *base = m->stack;
    while (base->inner)
        base = base->inner;
    if (devq_resource_reap(base) < 0)
        devq__log(DEVQ_LOG_FULL, "mem: %s:%d: reaping after a finish: %s", dev->info.backend,
                  dev->info.ordinal, devq__errmsg_peek());
    devq_mem_stats st;
    if (devq_resource_stats_get(m->stack, &st) == 0) {
        if (st.pending_frees)
            atomic_store(&m->reap_wanted, 1); /* fences not reached yet: next time */
        if (devq__trace_on())
            devq__trace_counter(dev, "bytes outstanding", st.bytes_outstanding, devq__trace_now());
    }
    pthread_rwlock_unlock(&m->lock);
    pthread_mutex_unlock(&dev->lock);
    atomic_fetch_sub(&m->reaping, 1);
    devq__err_str(0, saved);
}

static void reap_job(void *arg)
{
    struct devq_device *dev = arg;
    atomic_store(&dev->mem->reap_posted, 0);
    devq__mem_reap_quiet(dev);
    devq_device_close(dev);
}

void devq__mem_reap_soon(struct devq_device *dev)
{
    struct devq_mem *m = dev->mem;
    if (!m || !atomic_load_explicit(&m->reap_wanted, memory_order_relaxed) ||
        atomic_exchange(&m->reap_posted, 1))
        return;
    devq__device_retain(dev);
    if (devq__notifier_post(reap_job, dev) < 0) {
        atomic_store(&m->reap_posted, 0);
        devq_device_close(dev); /* not the last reference: the caller's batch holds one */
    }
}

void devq__mem_stream_gone(struct devq_device *dev, struct devq_stream *st)
{
    if (!dev->mem || !st)
        return;
    struct devq_mem *m = dev->mem;
    pthread_rwlock_rdlock(&m->lock);
    devq_resource *top = m->stack;
    if (top && top->ops.stream_gone)
        top->ops.stream_gone(top->state, st);
    pthread_rwlock_unlock(&m->lock);
}

DEVQ_API int devq_mem_stats_get(devq_device *dev, devq_mem_stats *st)
{
    int r = devq__mem_dev_check(dev, "devq_mem_stats_get");
    if (r < 0)
        return r;
    if (!st)
        return devq__err(-EINVAL, "devq_mem_stats_get: st is NULL");
    if ((r = mem_ready(dev, "devq_mem_stats_get")) < 0)
        return r;
    flush_caches(dev, 0);
    pthread_rwlock_rdlock(&dev->mem->lock);
    r = devq_resource_stats_get(dev->mem->stack, st);
    pthread_rwlock_unlock(&dev->mem->lock);
    return r;
}

DEVQ_API int devq_mem_reap(devq_device *dev)
{
    int r = devq__mem_dev_check(dev, "devq_mem_reap");
    if (r < 0)
        return r;
    if ((r = mem_ready(dev, "devq_mem_reap")) < 0)
        return r;
    if (devq__in_host_fn()) {
        /* A host function runs on a stream's callback thread: a reap
         * records fences and queries events (backend stream calls, which
         * need the device lock, whose holder may be waiting for this very
         * stream, and which CUDA refuses in a stream callback).  The
         * notifier thread reaps instead, at once; the guard's reports
         * wait for the next call made elsewhere. */
        atomic_store(&dev->mem->reap_wanted, 1);
        devq__mem_reap_soon(dev);
        return 0;
    }
    /* Under the device lock, as every backend stream call: the reap's
     * fences, and the frees whose ordering failed (the device's pending
     * list), tried again. */
    const struct devq_device_hooks *h = devq__device_hooks();
    pthread_mutex_lock(&dev->lock);
    if (h && h->pending_frees)
        h->pending_frees(dev); /* none installed: a device of the unit tests */
    flush_caches(dev, 1);
    pthread_rwlock_rdlock(&dev->mem->lock);
    r = devq_resource_reap(dev->mem->stack);
    pthread_rwlock_unlock(&dev->mem->lock);
    pthread_mutex_unlock(&dev->lock);
    return r < 0 ? r : 0;
}

uint64_t devq__mem_budget_of(struct devq_device *dev)
{
    return dev && dev->mem ? atomic_load(&dev->mem->budget_limit) : 0;
}
