/* Events.
 *
 * event_wait needs a timeout, which cuEventSynchronize lacks.  Rather
 * than poll cuEventQuery, a helper stream waits on the event
 * (cuStreamWaitEvent) and then runs a callback that stores 1 into a
 * futex word and wakes it; the host sleeps on that word until the
 * deadline.  The wait costs nothing until the event is reached, reacts at
 * once, and the callback also runs (with the error) if the device is
 * lost.  Helper streams are pooled per device; a wait that timed out
 * leaves its stream busy until the event is reached, and the callback
 * puts it back in the pool.  Each wait has its own helper stream so a
 * slow event never delays another wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "cuda_plugin.h"

int cu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    int err = cu_enter(dev);
    if (err)
        return err;
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return cu_host->error(-ENOMEM, "cuda: out of memory for an event");
    e->dev = dev;
    e->timing = flags & DEVQ_EVENT_TIMING;
    CUresult r = cu_drv.EventCreate(&e->event, e->timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cu_fail(dev, "cuEventCreate", r);
    }
    *out = e;
    return 0;
}

void cu_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    cu_drv.CtxSetCurrent(e->dev->ctx);
    cu_drv.EventDestroy(e->event);
    free(e);
}

int cu_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = cu_drv.EventRecord(e->event, s->stream);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuEventRecord", r);
}

int cu_event_query(devq_pl_event *e)
{
    int err = cu_enter(e->dev);
    if (err)
        return err;
    CUresult r = cu_drv.EventQuery(e->event);
    if (r == CUDA_SUCCESS)
        return 0;
    if (r == CUDA_ERROR_NOT_READY)
        return -EAGAIN;
    return cu_fail(e->dev, "cuEventQuery", r);
}

int cu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = cu_drv.StreamWaitEvent(s->stream, e->event, 0);
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuStreamWaitEvent", r);
}

int cu_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns)
{
    int err = cu_enter(a->dev);
    if (err)
        return err;
    if (!a->timing || !b->timing)
        return cu_host->error(-EINVAL, "cuda: event_elapsed: both events need DEVQ_EVENT_TIMING");
    float ms = 0;
    CUresult r = cu_drv.EventElapsedTime(&ms, a->event, b->event);
    if (r == CUDA_ERROR_NOT_READY)
        return cu_host->error(-EAGAIN, "cuda: cuEventElapsedTime: an event is not reached yet");
    if (r != CUDA_SUCCESS)
        return cu_fail(a->dev, "cuEventElapsedTime", r);
    /* The driver's resolution is about 0.5 us; a negative span is skew. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

/* ---- event_wait ---- */

struct waiter {
    uint32_t word;                   /* 0 until the callback ran */
    atomic_int refs;                 /* the waiting thread and the callback */
    CUresult status;
    struct devq_pl_device *dev;
    struct cu_waiter_stream *ws;
};

static void waiter_unref(struct waiter *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1)
        free(w);
}

static void waiter_stream_put(struct devq_pl_device *dev, struct cu_waiter_stream *ws)
{
    pthread_mutex_lock(&dev->waiters_mu);
    ws->next = dev->idle_waiters;
    dev->idle_waiters = ws;
    pthread_mutex_unlock(&dev->waiters_mu);
}

static int waiter_stream_get(struct devq_pl_device *dev, struct cu_waiter_stream **out)
{
    pthread_mutex_lock(&dev->waiters_mu);
    struct cu_waiter_stream *ws;
    while ((ws = dev->idle_waiters) && ws->contexts != dev->contexts) {
        /* busy at a last close, returned since: its stream died with
         * the context it was made in */
        dev->idle_waiters = ws->next;
        free(ws);
    }
    if (ws)
        dev->idle_waiters = ws->next;
    uint32_t contexts = dev->contexts;
    pthread_mutex_unlock(&dev->waiters_mu);
    if (!ws) {
        ws = calloc(1, sizeof *ws);
        if (!ws)
            return cu_host->error(-ENOMEM, "cuda: out of memory for an event waiter");
        ws->contexts = contexts;
        CUresult r = cu_drv.StreamCreateWithPriority(&ws->stream, CU_STREAM_NON_BLOCKING,
                                                     dev->prio_greatest);
        if (r != CUDA_SUCCESS) {
            free(ws);
            return cu_fail(dev, "cuStreamCreateWithPriority", r);
        }
    }
    *out = ws;
    return 0;
}

/* Destroy the idle helper streams; called at the last close, before the
 * primary context is released.  A helper still busy (a timed-out wait on
 * an event that never came) keeps a stream that the release destroys:
 * counting the release marks it, and it is dropped when its callback
 * brings it back.  (If the application holds the primary context too, the
 * release does not destroy it and that one stream leaks: destroying a
 * stream of a context that may be gone is worse.) */
void cu_waiters_release(struct devq_pl_device *dev)
{
    pthread_mutex_lock(&dev->waiters_mu);
    struct cu_waiter_stream *ws = dev->idle_waiters;
    dev->idle_waiters = NULL;
    uint32_t current = dev->contexts++;
    pthread_mutex_unlock(&dev->waiters_mu);
    while (ws) {
        struct cu_waiter_stream *next = ws->next;
        if (ws->contexts == current) {      /* else an earlier release destroyed it */
            cu_drv.CtxSetCurrent(dev->ctx);
            cu_drv.StreamDestroy(ws->stream);
        }
        free(ws);
        ws = next;
    }
}

static void CUDA_CB waiter_done(CUstream hs, CUresult status, void *userData)
{
    (void)hs;
    struct waiter *w = userData;
    w->status = status;
    waiter_stream_put(w->dev, w->ws);
    __atomic_store_n(&w->word, 1, __ATOMIC_RELEASE);
    cu_host->futex_wake(&w->word, 1);
    waiter_unref(w);
}

int cu_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    struct devq_pl_device *dev = e->dev;
    int err = cu_event_query(e);
    if (err != -EAGAIN)
        return err;
    if (timeout_ns == 0)
        return cu_host->error(-ETIMEDOUT, "cuda: event not reached (poll)");
    uint64_t now = cu_host->now_ns();
    uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;

    struct waiter *w = calloc(1, sizeof *w);
    if (!w)
        return cu_host->error(-ENOMEM, "cuda: out of memory for an event waiter");
    w->dev = dev;
    atomic_init(&w->refs, 2);
    if ((err = waiter_stream_get(dev, &w->ws))) {
        free(w);
        return err;
    }
    const char *call = "cuStreamWaitEvent";
    CUresult r = cu_drv.StreamWaitEvent(w->ws->stream, e->event, 0);
    if (r == CUDA_SUCCESS) {
        call = "cuStreamAddCallback";
        r = cu_drv.StreamAddCallback(w->ws->stream, waiter_done, w, 0);
    }
    if (r != CUDA_SUCCESS) {
        /* The helper may hold a wait that never ends: do not reuse it. */
        cu_drv.StreamDestroy(w->ws->stream);
        free(w->ws);
        free(w);
        return cu_fail(dev, call, r);
    }
    while (!__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
        if (cu_host->futex_wait(&w->word, 0, deadline) == -ETIMEDOUT &&
            !__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
            waiter_unref(w);
            return cu_host->error(-ETIMEDOUT, "cuda: event not reached within %llu ns",
                                  (unsigned long long)timeout_ns);
        }
    }
    r = w->status;
    waiter_unref(w);
    if (r != CUDA_SUCCESS)
        return cu_fail(dev, "event wait", r);
    return 0;
}
