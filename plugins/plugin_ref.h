/* SPDX-License-Identifier: MIT */
/* The one reference count of plugins' own objects: the cpu backend's
 * streams, events and kernels, and gpu_common's callback sets and event
 * waiters.  Plugins see lib only through the plugin ABI, never lib's
 * internals, so they do not share lib/base/object.h; this is its
 * counting half.  A kind keeps its own destroy and runs it when
 * pl_ref_put says the last reference went.
 *
 * Memory order as lib's object header: taking a reference needs none
 * (the taker holds one already); dropping one is acq_rel, so every
 * holder's writes happen before the destroy. */
#ifndef DEVQ_PLUGIN_REF_H
#define DEVQ_PLUGIN_REF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct pl_ref {
    _Atomic uint32_t n;
};

static inline void pl_ref_init(struct pl_ref *r, uint32_t n)
{
    atomic_init(&r->n, n);
}

static inline void pl_ref_get(struct pl_ref *r)
{
    atomic_fetch_add_explicit(&r->n, 1, memory_order_relaxed);
}

/* Drop one: true when it was the last (the caller destroys). */
static inline bool pl_ref_put(struct pl_ref *r)
{
    return atomic_fetch_sub_explicit(&r->n, 1, memory_order_acq_rel) == 1;
}

#endif
