/* SPDX-License-Identifier: MIT */
/* Per-device pool of backend events.  Creating a driver event costs a
 * system call or more; the tracker needs one per cross-stream wait and
 * per signal produced, so they are recycled.  Two free lists: plain and
 * timing events (timing ones are slower to record on real GPUs). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "device.h"
#include "event_pool.h"

#define KEEP_WHEN_TRIMMED 8

struct free_list {
    devq_pl_event **ev;
    size_t n, cap;
};

struct devq_event_pool {
    pthread_mutex_t lock;
    struct free_list lists[2]; /* [0] plain, [1] timing */
    uint64_t in_use;
};

static struct free_list *list_for(struct devq_event_pool *p, uint32_t flags)
{
    return &p->lists[(flags & DEVQ_EVENT_TIMING) ? 1 : 0];
}

int devq__event_pool_create(struct devq_device *dev, struct devq_event_pool **out)
{
    struct devq_event_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    (void)dev;
    return 0;
}

static void drain(struct devq_device *dev, struct free_list *l, size_t keep)
{
    while (l->n > keep)
        dev->ops->event_destroy(l->ev[--l->n]);
}

void devq__event_pool_destroy(struct devq_event_pool *p)
{
    if (!p)
        return;
    free(p->lists[0].ev);
    free(p->lists[1].ev);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void devq__event_pool_drain(struct devq_device *dev, struct devq_event_pool *p)
{
    pthread_mutex_lock(&p->lock);
    drain(dev, &p->lists[0], 0);
    drain(dev, &p->lists[1], 0);
    pthread_mutex_unlock(&p->lock);
}

int devq__event_get(struct devq_device *dev, uint32_t flags, devq_pl_event **out)
{
    struct devq_event_pool *p = dev->event_pool;
    pthread_mutex_lock(&p->lock);
    struct free_list *l = list_for(p, flags);
    if (l->n) {
        *out = l->ev[--l->n];
        p->in_use++;
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    p->in_use++;
    pthread_mutex_unlock(&p->lock);
    int r = dev->ops->event_create(dev->pl, flags & DEVQ_EVENT_TIMING, out);
    if (r < 0) {
        pthread_mutex_lock(&p->lock);
        p->in_use--;
        pthread_mutex_unlock(&p->lock);
    }
    return r;
}

void devq__event_put(struct devq_device *dev, devq_pl_event *e, uint32_t flags)
{
    struct devq_event_pool *p = dev->event_pool;
    pthread_mutex_lock(&p->lock);
    struct free_list *l = list_for(p, flags);
    p->in_use--;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        devq_pl_event **ev = realloc(l->ev, cap * sizeof *ev);
        if (!ev) {
            pthread_mutex_unlock(&p->lock);
            dev->ops->event_destroy(e);
            return;
        }
        l->ev = ev;
        l->cap = cap;
    }
    l->ev[l->n++] = e;
    pthread_mutex_unlock(&p->lock);
}

void devq__event_pool_counts(struct devq_device *dev, uint64_t *in_use, uint64_t *pooled)
{
    struct devq_event_pool *p = dev->event_pool;
    pthread_mutex_lock(&p->lock);
    *in_use = p->in_use;
    *pooled = p->lists[0].n + p->lists[1].n;
    pthread_mutex_unlock(&p->lock);
}

void devq__event_pool_trim(struct devq_device *dev)
{
    struct devq_event_pool *p = dev->event_pool;
    pthread_mutex_lock(&p->lock);
    drain(dev, &p->lists[0], KEEP_WHEN_TRIMMED);
    drain(dev, &p->lists[1], KEEP_WHEN_TRIMMED);
    pthread_mutex_unlock(&p->lock);
}
