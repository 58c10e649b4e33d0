/* Events.
 *
 * event_wait needs a timeout, which hipEventSynchronize lacks.  Rather
 * than poll hipEventQuery, a helper stream waits on the event
 * (hipStreamWaitEvent) and then runs a callback that stores 1 into a
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
#include "hip_plugin.h"

int hip_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out)
{
    int err = hip_enter(dev);
    if (err)
        return err;
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return hip_host->error(-ENOMEM, "hip: out of memory for an event");
    e->dev = dev;
    e->timing = flags & DEVQ_EVENT_TIMING;
    hipError_t r = hip_rt.EventCreateWithFlags(&e->event, e->timing ? hipEventDefault : hipEventDisableTiming);
    if (r != hipSuccess) {
        free(e);
        return hip_fail(dev, "hipEventCreateWithFlags", r);
    }
    *out = e;
    return 0;
}

void hip_event_destroy(devq_pl_event *e)
{
    if (!e)
        return;
    hip_rt.SetDevice((int)e->dev->ordinal);
    hip_rt.EventDestroy(e->event);
    free(e);
}

int hip_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.EventRecord(e->event, s->stream);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipEventRecord", r);
}

int hip_event_query(devq_pl_event *e)
{
    int err = hip_enter(e->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.EventQuery(e->event);
    if (r == hipSuccess)
        return 0;
    if (r == hipErrorNotReady)
        return -EAGAIN;
    return hip_fail(e->dev, "hipEventQuery", r);
}

int hip_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = hip_rt.StreamWaitEvent(s->stream, e->event, 0);
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipStreamWaitEvent", r);
}

int hip_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns)
{
    int err = hip_enter(a->dev);
    if (err)
        return err;
    if (!a->timing || !b->timing)
        return hip_host->error(-EINVAL, "hip: event_elapsed: both events need DEVQ_EVENT_TIMING");
    float ms = 0;
    hipError_t r = hip_rt.EventElapsedTime(&ms, a->event, b->event);
    if (r == hipErrorNotReady)
        return hip_host->error(-EAGAIN, "hip: hipEventElapsedTime: an event is not reached yet");
    if (r != hipSuccess)
        return hip_fail(a->dev, "hipEventElapsedTime", r);
    /* The runtime reports ms as a float; a negative span is skew. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

/* ---- event_wait ---- */

struct waiter {
    uint32_t word;                   /* 0 until the callback ran */
    atomic_int refs;                 /* the waiting thread and the callback */
    hipError_t status;
    struct devq_pl_device *dev;
    struct hip_waiter_stream *ws;
};

static void waiter_unref(struct waiter *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1)
        free(w);
}

static void waiter_stream_put(struct devq_pl_device *dev, struct hip_waiter_stream *ws)
{
    pthread_mutex_lock(&dev->waiters_mu);
    ws->next = dev->idle_waiters;
    dev->idle_waiters = ws;
    pthread_mutex_unlock(&dev->waiters_mu);
}

static int waiter_stream_get(struct devq_pl_device *dev, struct hip_waiter_stream **out)
{
    pthread_mutex_lock(&dev->waiters_mu);
    struct hip_waiter_stream *ws;
    while ((ws = dev->idle_waiters) && ws->resets != dev->resets) {
        /* busy at a reset, returned since: its stream is gone */
        dev->idle_waiters = ws->next;
        free(ws);
    }
    if (ws)
        dev->idle_waiters = ws->next;
    uint32_t resets = dev->resets;
    pthread_mutex_unlock(&dev->waiters_mu);
    if (!ws) {
        ws = calloc(1, sizeof *ws);
        if (!ws)
            return hip_host->error(-ENOMEM, "hip: out of memory for an event waiter");
        ws->resets = resets;
        hipError_t r = hip_rt.StreamCreateWithPriority(&ws->stream, hipStreamNonBlocking,
                                                     dev->prio_greatest);
        if (r != hipSuccess) {
            free(ws);
            return hip_fail(dev, "hipStreamCreateWithPriority", r);
        }
    }
    *out = ws;
    return 0;
}

/* Destroy the idle helper streams; called at the last close.  A helper
 * still busy (a timed-out wait on an event that never came) is returned
 * by its callback later and destroyed at the next last close; with
 * reset, the device is about to be reset, which destroys the busy ones'
 * streams: they are dropped when they come back. */
void hip_waiters_release(struct devq_pl_device *dev, bool reset)
{
    pthread_mutex_lock(&dev->waiters_mu);
    struct hip_waiter_stream *ws = dev->idle_waiters;
    dev->idle_waiters = NULL;
    uint32_t current = dev->resets;
    if (reset)
        dev->resets++;
    pthread_mutex_unlock(&dev->waiters_mu);
    while (ws) {
        struct hip_waiter_stream *next = ws->next;
        if (ws->resets == current) {        /* else a reset destroyed it */
            hip_rt.SetDevice((int)dev->ordinal);
            hip_rt.StreamDestroy(ws->stream);
        }
        free(ws);
        ws = next;
    }
}

static void waiter_done(hipStream_t hs, hipError_t status, void *userData)
{
    (void)hs;
    struct waiter *w = userData;
    w->status = status;
    waiter_stream_put(w->dev, w->ws);
    __atomic_store_n(&w->word, 1, __ATOMIC_RELEASE);
    hip_host->futex_wake(&w->word, 1);
    waiter_unref(w);
}

int hip_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    struct devq_pl_device *dev = e->dev;
    int err = hip_event_query(e);
    if (err != -EAGAIN)
        return err;
    if (timeout_ns == 0)
        return hip_host->error(-ETIMEDOUT, "hip: event not reached (poll)");
    uint64_t now = hip_host->now_ns();
    uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;

    struct waiter *w = calloc(1, sizeof *w);
    if (!w)
        return hip_host->error(-ENOMEM, "hip: out of memory for an event waiter");
    w->dev = dev;
    atomic_init(&w->refs, 2);
    if ((err = waiter_stream_get(dev, &w->ws))) {
        free(w);
        return err;
    }
    const char *call = "hipStreamWaitEvent";
    hipError_t r = hip_rt.StreamWaitEvent(w->ws->stream, e->event, 0);
    if (r == hipSuccess) {
        call = "hipStreamAddCallback";
        r = hip_rt.StreamAddCallback(w->ws->stream, waiter_done, w, 0);
    }
    if (r != hipSuccess) {
        /* The helper may hold a wait that never ends: do not reuse it. */
        hip_rt.StreamDestroy(w->ws->stream);
        free(w->ws);
        free(w);
        return hip_fail(dev, call, r);
    }
    while (!__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
        if (hip_host->futex_wait(&w->word, 0, deadline) == -ETIMEDOUT &&
            !__atomic_load_n(&w->word, __ATOMIC_ACQUIRE)) {
            waiter_unref(w);
            return hip_host->error(-ETIMEDOUT, "hip: event not reached within %llu ns",
                                  (unsigned long long)timeout_ns);
        }
    }
    r = w->status;
    waiter_unref(w);
    if (r != hipSuccess)
        return hip_fail(dev, "event wait", r);
    /* ROCm hands stream callbacks hipSuccess whatever happened before
     * them; the event itself carries a failure.  One query, not a poll. */
    r = hip_rt.EventQuery(e->event);
    if (r != hipSuccess && r != hipErrorNotReady)
        return hip_fail(dev, "hipEventQuery", r);
    return 0;
}
