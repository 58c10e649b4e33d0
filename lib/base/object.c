/* SPDX-License-Identifier: MIT */
/* See object.h. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "object.h"

static void destroy_cb(void *arg)
{
    struct devq_object *o = arg;
    o->destroy(o);
}

static _Atomic(devq_object_deferrer) deferrer;

void devq__object_set_deferrer(devq_object_deferrer post)
{
    atomic_store_explicit(&deferrer, post, memory_order_release);
}

void devq__object_release(struct devq_object *o)
{
    if (!devq__object_unref(o))
        return;
    devq_object_deferrer post = atomic_load_explicit(&deferrer, memory_order_acquire);
    if (!post || post(destroy_cb, o) < 0)
        o->destroy(o);
}

void devq__object_release_here(struct devq_object *o)
{
    if (devq__object_unref(o))
        o->destroy(o);
}

int devq__ref_set_grow(struct devq_ref_set *s, uint32_t more)
{
    uint32_t cap = s->cap ? s->cap : 8;
    while (cap < s->n + more)
        cap *= 2;
    struct devq_object **items = realloc(s->items, cap * sizeof *items);
    if (!items)
        return -ENOMEM;
    s->items = items;
    s->cap = cap;
    return 0;
}

/* A batch uses the same few objects over and over: devq__ref_set_add
 * asked the memo first. */
void devq__ref_set_insert(struct devq_ref_set *s, struct devq_object *o)
{
    unsigned slot = (unsigned)((uintptr_t)o >> 6) % DEVQ_REF_MEMO;
    devq__object_retain(o);
    s->items[s->n++] = o;
    s->memo[slot] = o;
}

void devq__ref_set_release(struct devq_ref_set *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        devq__object_release(s->items[i]);
    s->n = 0;
    memset(s->memo, 0, sizeof s->memo);
}

void devq__ref_set_fini(struct devq_ref_set *s)
{
    free(s->items);
    s->items = NULL;
    s->n = s->cap = 0;
}
