/* SPDX-License-Identifier: MIT */
/* Inside a devq_resource: the wrapper every resource (built-in or user)
 * lives in, and the per-device memory state.  See devq_resource(3). */
#ifndef DEVQ_LIB_MEM_RESOURCE_H
#define DEVQ_LIB_MEM_RESOURCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <devq/devq_resource.h>
#include <devq/devq_plugin.h>
#include "stream.h"

#define DEVQ_MAGIC_RESOURCE 0x4d454d31u /* "MEM1" */

enum devq_resource_kind {
    DEVQ_RES_USER = 0,
    DEVQ_RES_DIRECT,
    DEVQ_RES_POOL,
    DEVQ_RES_NATIVE,
    DEVQ_RES_BUDGET,
    DEVQ_RES_STATS,
    DEVQ_RES_LOGGING,
    DEVQ_RES_GUARD,
};

struct devq_resource {
    uint32_t magic;
    enum devq_resource_kind kind;
    struct devq_device *dev;
    /* A private copy, zero beyond what the creator's `size` covered, so
     * an older user table reads as NULL entries instead of garbage. */
    struct devq_resource_ops ops;
    void *state;
    devq_resource *inner;         /* decorators: the wrapped resource */
    _Atomic int owned;            /* wrapped by a decorator or installed */
    bool lib_counts;              /* ops.bytes_outstanding is NULL */
    _Atomic uint64_t outstanding; /* only when lib_counts */
};

/* Per-device memory state (dev->mem). */
struct devq_mem {
    pthread_rwlock_t lock;         /* writers: stack replacement */
    devq_resource *stack;          /* top of the installed stack */
    _Atomic uint64_t live;         /* allocations handed out via devq__mem_alloc */
    _Atomic uint64_t budget_limit; /* of the installed stack, 0 = none (for reports) */
    _Atomic int reap_wanted;       /* stream-ordered frees may be waiting for their fence */
    _Atomic int reap_posted;       /* a notifier reap is queued */
    _Atomic int reaping;           /* reaps in progress (a finish then reaps too) */
    /* Queues' buffer caches (lib/queue/buffer.c): whether the stack lets
     * a freed buffer be kept for its queue without telling the stack (no
     * guard, logging or user layer: nobody needs to see each call), and
     * whether any buffer may be cached now (a flush settles them). */
    _Atomic int cache_ok;
    _Atomic int cached;
};

/* Wrap built-in ops; `inner` (may be NULL) becomes owned by the result. */
int devq__resource_new(struct devq_device *dev, const struct devq_resource_ops *ops, void *state,
                       enum devq_resource_kind kind, devq_resource *inner, devq_resource **out);
/* Destroy regardless of ownership (decorators destroying their inner). */
void devq__resource_free(devq_resource *r);
/* Validate a public handle. */
int devq__resource_check(const devq_resource *r, const char *fn);
/* Check that `inner` may be wrapped (valid, not already owned). */
int devq__resource_check_inner(const devq_resource *inner, const char *fn);
/* First layer of the given kind in r's chain, or NULL. */
devq_resource *devq__resource_find(devq_resource *r, enum devq_resource_kind kind);
/* Limit of the first budget layer in r's chain, 0 when none. */
uint64_t devq__budget_limit(devq_resource *r);
/* Budget of the device's installed stack, for out-of-memory reports. */
uint64_t devq__mem_budget_of(struct devq_device *dev);
/* "pool -> budget(64M) -> stats" for logs. */
void devq__resource_describe(devq_resource *r, char *buf, size_t cap);
/* How a layer shows itself in a description (budget adds its limit). */
void devq__budget_describe(devq_resource *r, char *buf, size_t cap);

/* Whether buffers may be cached in front of stack r (see struct devq_mem). */
int devq__stack_cacheable(devq_resource *r);
/* Stats decorator queries (mem_stats.c). */
/* Count `pairs` alloc/free pairs of tag on stream sid that a queue's
 * buffer cache served without the stack (bytes in use did not change). */
void devq__stats_settle(devq_resource *stats, uint32_t tag, uint32_t sid, uint64_t pairs);
int devq__stats_usage_tag(devq_resource *stats, uint32_t tag, devq_mem_usage *u);
int devq__stats_usage_stream(devq_resource *stats, uint32_t sid, devq_mem_usage *u);

/* Validate a public device handle (kept here so the memory code does not
 * depend on the registry's object file). */
int devq__mem_dev_check(const struct devq_device *dev, const char *fn);

/* Whether the device is lost, given a backend call's result: -ENODEV
 * from the backend marks it lost.  A lost device's memory went with its
 * context, so frees complete (and are counted) without the backend. */
int devq__mem_device_lost(struct devq_device *dev, int err);

/* Fences: an event recorded where a stream-ordered free happened.
 * record: take an event from the pool when *e is NULL (else re-record
 * it) and capture st's tail.  reached: 1 reached, 0 not yet (a query
 * error also counts as "not yet": memory is never reused on doubt; but on
 * a lost device every fence counts as reached).
 * settle: wait up to timeout_ns, for streams going away.  put: return it. */
int devq__fence_record(struct devq_device *dev, struct devq_stream *st, devq_pl_event **e);
int devq__fence_reached(struct devq_device *dev, devq_pl_event *e);
int devq__fence_settle(struct devq_device *dev, devq_pl_event *e, uint64_t timeout_ns);
void devq__fence_put(struct devq_device *dev, devq_pl_event **e);
/* How long a stream going away (or a resource being destroyed) waits for
 * each pending fence before it keeps the memory out of circulation. */
#define DEVQ_FENCE_SETTLE_NS (2ull * 1000 * 1000 * 1000)

/* Decorators keep their inner resource as the first member of their
 * state; these entries forward to it, for the hooks a decorator does not
 * change. */
struct devq_decorator {
    devq_resource *inner;
};
int devq__fwd_reap(void *state);
int devq__fwd_trim(void *state);
int devq__fwd_supports(void *state);
int devq__fwd_prepare(void *state, void *ptr, devq_stream_ref *st, enum devq_access a);
int devq__fwd_finish(void *state, void *ptr, devq_stream_ref *st, enum devq_access a);
void devq__fwd_stream_gone(void *state, devq_stream_ref *st);
int devq__fwd_stats(void *state, devq_mem_stats *st);

/* A stream's dense id, DEVQ_STREAM_NONE for synchronous calls. */
static inline uint32_t devq__sid(const struct devq_stream *s)
{
    return s ? s->id : DEVQ_STREAM_NONE;
}

#endif
