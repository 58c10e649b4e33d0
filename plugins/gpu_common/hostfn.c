/* SPDX-License-Identifier: MIT */
/* Host callbacks in stream order: the record each queued function
 * travels in, and what the drivers' stream callbacks do with it besides
 * reading the driver's status (that is in stream.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "gpu_common.h"

void gpu_callbacks_init(struct gpu_callbacks *cbs)
{
    atomic_init(&cbs->latch, 0);
    pl_ref_init(&cbs->refs, 1);
}

bool gpu_callbacks_unref(struct gpu_callbacks *cbs)
{
    return pl_ref_put(&cbs->refs);
}

struct gpu_host_call *gpu_host_call_new(struct gpu_callbacks *cbs, void *stream, devq_pl_host_fn fn,
                                        void *arg)
{
    struct gpu_host_call *c = malloc(sizeof *c);
    if (!c) {
        gpu_host->error(-ENOMEM, "%s: out of memory for a host callback", gpu_backend);
        return NULL;
    }
    *c = (struct gpu_host_call){ .cbs = cbs, .stream = stream, .fn = fn, .arg = arg };
    pl_ref_get(&cbs->refs);
    return c;
}

void gpu_host_call_cancel(struct gpu_host_call *c)
{
    /* never the last reference: lib's handle holds one */
    (void)pl_ref_put(&c->cbs->refs);
    free(c);
}

int gpu_host_call_latched(struct gpu_host_call *c)
{
    return atomic_exchange(&c->cbs->latch, 0);
}

bool gpu_host_call_finish(struct gpu_host_call *c, int status)
{
    struct gpu_callbacks *cbs = c->cbs;
    int ret = c->fn(c->arg, status);
    free(c);
    if (ret < 0)
        atomic_store(&cbs->latch, ret);
    return gpu_callbacks_unref(cbs);
}
