/* SPDX-License-Identifier: MIT */
/* event_wait with a timeout, over drivers whose event synchronize has
 * none.  Rather than poll the event, a helper stream waits on it and
 * then runs a callback that stores 1 into a futex word and wakes it; the
 * host sleeps on that word until the deadline.  The wait costs nothing
 * until the event is reached, reacts at once, and the callback also runs
 * (with the error) if the device is lost.  Helper streams are pooled per
 * device; a wait that timed out leaves its stream busy until the event
 * is reached, and the callback puts it back in the pool.  Each wait has
 * its own helper stream so a slow event never delays another wait.
 *
 * The driver calls (make and destroy a helper stream, queue the wait and
 * the callback) come through struct gpu_evwait_driver (event.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

/* What the waiting thread and the callback share. */
struct gpu_evwaiter {
    struct gpu_cb cb;   /* first: the driver's callback runs it */
    uint32_t word;      /* 0 until the callback ran */
    struct pl_ref refs; /* the waiting thread and the callback */
    int status;         /* the driver's status, as the callback saw it */
    struct gpu_evwait_pool *pool;
    struct gpu_helper *helper;
};

void gpu_evwait_init(struct gpu_evwait_pool *p, const struct gpu_evwait_driver *drv,
                     struct devq_pl_device *dev)
{
    pthread_mutex_init(&p->mu, NULL);
    p->idle = NULL;
    p->generation = 0;
    p->drv = drv;
    p->dev = dev;
}

static void waiter_unref(struct gpu_evwaiter *w)
{
    if (pl_ref_put(&w->refs))
        free(w);
}

static void helper_put(struct gpu_evwait_pool *p, struct gpu_helper *h)
{
    pthread_mutex_lock(&p->mu);
    h->next = p->idle;
    p->idle = h;
    pthread_mutex_unlock(&p->mu);
}

static int helper_get(struct gpu_evwait_pool *p, struct gpu_helper **out)
{
    pthread_mutex_lock(&p->mu);
    struct gpu_helper *h;
    while ((h = p->idle) && h->generation != p->generation) {
        /* busy at a retiring release, returned since: its stream is gone */
        p->idle = h->next;
        free(h);
    }
    if (h)
        p->idle = h->next;
    uint32_t generation = p->generation;
    pthread_mutex_unlock(&p->mu);
    if (!h) {
        h = calloc(1, sizeof *h);
        if (!h)
            return gpu_host->error(-ENOMEM, "%s: out of memory for an event waiter", gpu_backend);
        h->generation = generation;
        int err = p->drv->stream_create(p->dev, &h->stream);
        if (err) {
            free(h);
            return err;
        }
    }
    *out = h;
    return 0;
}

void gpu_evwait_release(struct gpu_evwait_pool *p, bool retire)
{
    pthread_mutex_lock(&p->mu);
    struct gpu_helper *h = p->idle;
    p->idle = NULL;
    uint32_t current = p->generation;
    if (retire)
        p->generation++;
    pthread_mutex_unlock(&p->mu);
    while (h) {
        struct gpu_helper *next = h->next;
        if (h->generation == current) /* else an earlier retire destroyed it */
            p->drv->stream_destroy(p->dev, h->stream);
        free(h);
        h = next;
    }
}

/* In the driver's stream callback. */
static void evwait_done(struct gpu_cb *cb, int status)
{
    struct gpu_evwaiter *w = (struct gpu_evwaiter *)cb;
    w->status = status;
    helper_put(w->pool, w->helper);
    __atomic_store_n(&w->word, 1, __ATOMIC_RELEASE);
    gpu_host->futex_wake(&w->word, 1);
    waiter_unref(w);
}

int gpu_evwait(struct gpu_evwait_pool *p, void *event, uint64_t timeout_ns, int *status)
{
    if (timeout_ns == 0)
        return gpu_host->error(-ETIMEDOUT, "%s: event not reached (poll)", gpu_backend);
    uint64_t now = gpu_host->now_ns();
    uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;

    struct gpu_evwaiter *w = calloc(1, sizeof *w);
    if (!w)
        return gpu_host->error(-ENOMEM, "%s: out of memory for an event waiter", gpu_backend);
    w->cb.run = evwait_done;
    w->pool = p;
    pl_ref_init(&w->refs, 2);
    int err = helper_get(p, &w->helper);
    if (err) {
        free(w);
        return err;
    }
    if ((err = p->drv->arm(p->dev, w->helper->stream, event, &w->cb))) {
        /* The helper may hold a wait that never ends: do not reuse it. */
        p->drv->stream_destroy(p->dev, w->helper->stream);
        free(w->helper);
        free(w);
        return err;
    }
    while (!__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
        if (gpu_host->futex_wait(&w->word, 0, deadline) == -ETIMEDOUT &&
            !__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
            waiter_unref(w);
            return gpu_host->error(-ETIMEDOUT, "%s: event not reached within %llu ns", gpu_backend,
                                   (unsigned long long)timeout_ns);
        }
    }
    *status = w->status;
    waiter_unref(w);
    return 0;
}
