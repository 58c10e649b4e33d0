/* SPDX-License-Identifier: MIT */
/* The device's resource stack: built from the environment when a device
 * is attached, replaceable by the user with devq_device_set_resource.
 *
 * Default order, bottom up:  base -> budget -> guard -> stats -> logging
 *   base:    DEVQ_MEM_POOL=native|devq|direct (default: native where the
 *            backend has a stream-ordered allocator, else devq)
 *   budget:  DEVQ_MEM_BUDGET=64M (unset: none)
 *   guard:   DEVQ_MEM_GUARD=1 (host-visible memory only)
 *   stats:   always (devq_mem_stats_get reads it)
 *   logging: DEVQ_MEM_LOG=file.csv
 * The guard sits below stats so that its canaries are not counted as the
 * user's bytes, and above the budget so that they are. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "env.h"
#include "error.h"
#include "log.h"
#include "mem.h"
#include "mem_resource.h"

static int make_base(struct devq_device *dev, devq_resource **out)
{
    const char *v = devq__getenv("DEVQ_MEM_POOL");
    bool native_ok =
        (dev->info.caps & DEVQ_CAP_ASYNC_ALLOC) && dev->ops->mem_alloc_async && dev->ops->mem_free_async;
    if (!v || !*v)
        return native_ok ? devq_resource_native(dev, out) : devq_resource_pool(dev, out);
    if (!strcmp(v, "devq") || !strcmp(v, "pool"))
        return devq_resource_pool(dev, out);
    if (!strcmp(v, "direct"))
        return devq_resource_direct(dev, out);
    if (!strcmp(v, "native")) {
        int r = devq_resource_native(dev, out);
        if (r == -ENOTSUP)
            return devq__err(r,
                             "DEVQ_MEM_POOL=native: backend '%s' has no native "
                             "stream-ordered allocator; use devq or direct",
                             dev->ops->name ? dev->ops->name : "?");
        return r;
    }
    return devq__err(-EINVAL, "DEVQ_MEM_POOL='%.64s': unknown pool; use native, devq or direct", v);
}

static int build_default(struct devq_device *dev, devq_resource **out)
{
    uint64_t budget = 0;
    int guard = 0;
    const char *v = devq__getenv("DEVQ_MEM_BUDGET");
    int r = 0;
    if (v && (r = devq__parse_size("DEVQ_MEM_BUDGET", v, &budget)) < 0)
        return r;
    if (v && !budget)
        return devq__err(-EINVAL,
                         "DEVQ_MEM_BUDGET='%.64s': a budget of 0 refuses every "
                         "allocation; unset it for no limit",
                         v);
    if ((r = devq__parse_flag("DEVQ_MEM_GUARD", devq__getenv("DEVQ_MEM_GUARD"), &guard)) < 0)
        return r;
    const char *log = devq__getenv("DEVQ_MEM_LOG");

    devq_resource *top = NULL, *next = NULL;
    if ((r = make_base(dev, &top)) < 0)
        return r;
    /* Each decorator takes over `top` only when it was built. */
    if (budget) {
        if ((r = devq_resource_budget(top, budget, &next)) < 0)
            goto fail;
        top = next;
    }
    if (guard) {
        if ((r = devq_resource_guard(top, &next)) < 0)
            goto fail;
        top = next;
    }
    if ((r = devq_resource_stats(top, &next)) < 0)
        goto fail;
    top = next;
    if (log && *log) {
        if ((r = devq_resource_logging(top, log, &next)) < 0) {
            char msg[DEVQ_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "DEVQ_MEM_LOG: %s", devq__errmsg_peek());
            devq__err_str(r, msg);
            goto fail;
        }
        top = next;
    }
    *out = top;
    return 0;
fail:
    devq__resource_free(top);
    return r;
}

static void log_stack(struct devq_device *dev, const char *what, devq_resource *top)
{
    if (!DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        return;
    char desc[256];
    devq__resource_describe(top, desc, sizeof desc);
    devq__log(DEVQ_LOG_BASIC, "mem: %s:%u %s: %s",
              dev->info.backend[0] ? dev->info.backend : (dev->ops->name ? dev->ops->name : "?"),
              dev->ordinal, what, desc);
}

int devq__mem_create(struct devq_device *dev)
{
    struct devq_mem *m = calloc(1, sizeof *m);
    if (!m)
        return devq__err(-ENOMEM, "device memory: out of host memory");
    /* Built before dev->mem is set: a failure leaves nothing behind. */
    int r = build_default(dev, &m->stack);
    if (r < 0) {
        free(m);
        return r;
    }
    pthread_rwlock_init(&m->lock, NULL);
    atomic_store(&m->stack->owned, 1);
    atomic_store(&m->budget_limit, devq__budget_limit(m->stack));
    atomic_store(&m->cache_ok, devq__stack_cacheable(m->stack));
    dev->mem = m;
    log_stack(dev, "memory stack", m->stack);
    return 0;
}

void devq__mem_destroy(struct devq_device *dev)
{
    struct devq_mem *m = dev->mem;
    if (!m)
        return;
    devq_resource_reap(m->stack);
    uint64_t live = atomic_load(&m->live);
    if (live)
        devq__log(DEVQ_LOG_BASIC,
                  "mem: device closed with %llu allocations still "
                  "outstanding",
                  (unsigned long long)live);
    devq__resource_free(m->stack);
    pthread_rwlock_destroy(&m->lock);
    dev->mem = NULL;
    free(m);
}

DEVQ_API int devq_device_set_resource(devq_device *dev, devq_resource *r)
{
    int e = devq__mem_dev_check(dev, "devq_device_set_resource");
    if (e < 0)
        return e;
    if ((e = devq__resource_check_inner(r, "devq_device_set_resource")) < 0)
        return e;
    if (r->dev != dev)
        return devq__err(-EINVAL,
                         "devq_device_set_resource: resource '%s' was built for "
                         "another device",
                         devq_resource_name(r));
    struct devq_mem *m = dev->mem;
    if (!m)
        return devq__err(-ENODEV, "devq_device_set_resource: device memory is not set up");
    /* The device lock too: buffers allocate and free through m->stack
     * under it alone (devq__mem_alloc).  Order: device lock, then m->lock. */
    pthread_mutex_lock(&dev->lock);
    const struct devq_device_hooks *h = devq__device_hooks();
    if (h && h->buffer_caches_flush)
        h->buffer_caches_flush(dev); /* cached buffers are live: give them back */
    pthread_rwlock_wrlock(&m->lock);
    char desc[256];
    devq__resource_describe(m->stack, desc, sizeof desc);
    uint64_t live = atomic_load(&m->live);
    if (live) {
        pthread_rwlock_unlock(&m->lock);
        pthread_mutex_unlock(&dev->lock);
        return devq__err(-EBUSY,
                         "devq_device_set_resource: %llu allocations are outstanding "
                         "on the current stack (%s); free them first",
                         (unsigned long long)live, desc);
    }
    devq_resource_reap(m->stack);
    devq_mem_stats st;
    if (devq_resource_stats_get(m->stack, &st) == 0 && st.pending_frees) {
        pthread_rwlock_unlock(&m->lock);
        pthread_mutex_unlock(&dev->lock);
        return devq__err(-EBUSY,
                         "devq_device_set_resource: %llu stream-ordered frees are "
                         "still pending on the current stack (%s); finish the queues, then "
                         "devq_mem_reap",
                         (unsigned long long)st.pending_frees, desc);
    }
    devq_resource *old = m->stack;
    atomic_store(&r->owned, 1);
    m->stack = r;
    atomic_store(&m->budget_limit, devq__budget_limit(r));
    atomic_store(&m->cache_ok, devq__stack_cacheable(r));
    pthread_rwlock_unlock(&m->lock);
    pthread_mutex_unlock(&dev->lock);
    devq__resource_free(old);
    log_stack(dev, "memory stack replaced", r);
    return 0;
}

DEVQ_API devq_resource *devq_device_resource(devq_device *dev)
{
    if (devq__mem_dev_check(dev, "devq_device_resource") < 0 || !dev->mem)
        return NULL;
    pthread_rwlock_rdlock(&dev->mem->lock);
    devq_resource *r = dev->mem->stack;
    pthread_rwlock_unlock(&dev->mem->lock);
    return r;
}
