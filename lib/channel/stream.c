/* SPDX-License-Identifier: MIT */
/* Stream channels (DESIGN §11): on a backend whose plugin has channel
 * entries (cuda: NCCL, hip: RCCL; devq_plugin.h), a group of channel ops
 * is enqueued on the queue's device stream when the batch is issued --
 * no host thread waits for the peers -- inside one ncclGroupStart/End.
 * The policy stays here, as for host engines (coll.c):
 *
 *  - grouping: consecutive ops of one channel in one batch; the group's
 *    last member enqueues it, after every member's buffers are bound;
 *  - failures: the completion callback after the group (queue's OP_WORK,
 *    batch.h) asks the communicator for its asynchronous error, and a
 *    failure fails the batch and what the group writes with the
 *    library's text, and breaks the channel: its later ops fail at issue
 *    with the first cause;
 *  - timeouts: a host callback just before the group stamps when the
 *    stream reaches it; a watchdog thread per channel aborts the
 *    communicator when a group has run longer than the channel's
 *    timeout (devq_channel_set_timeout), which ends its blocked ops, and
 *    breaks the channel with a message saying so.  Waiters therefore
 *    never hang on a peer that does not come;
 *  - failed inputs (DESIGN §5a): the tracker orders the group after its
 *    inputs' writers, whose verdict is known when the stamp callback
 *    runs.  A group that would read a failed buffer must not run: the
 *    peers would get a result computed from failed data, unmarked.  The
 *    stamp callback holds the stream there while the watchdog aborts
 *    the communicator (NCCL may not be called from a stream callback),
 *    so the group ends without data and the peers' ops fail; the channel
 *    breaks naming the buffer and its cause. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "channel.h"
#include "device.h"
#include "error.h"
#include "futex.h"
#include "log.h"
#include "batch.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "queue.h"
#include "record.h"
#include "signal_int.h"

/* A group on the stream.  Two references: the stamp callback and the
 * completion (or the issue that failed to queue the completion). */
struct devq_chan_flight {
    devq_channel *ch;
    struct devq_chan_flight *next;
    uint64_t start_ns;       /* 0 until the stream reached it */
    uint64_t first_op, nops; /* op numbers, for messages */
    const char *what;        /* the last member's kind */
    int refs;                /* under ch->lock */
    int done;
    size_t nin;
    struct devq_chan_input in[]; /* what the members read (the batch holds them) */
};

#define WD_POLL_NS 100000000ull /* the watchdog rereads the timeout this often */

/* Under ch->lock. */
static void flight_unref_locked(devq_channel *ch, struct devq_chan_flight *f)
{
    if (--f->refs)
        return;
    for (struct devq_chan_flight **p = &ch->flights; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    free(f);
}

static void *watchdog(void *arg)
{
    devq_channel *ch = arg;
    pthread_mutex_lock(&ch->lock);
    while (!ch->wd_stop) {
        uint64_t timeout = atomic_load(&ch->timeout_ns);
        uint64_t t = devq__now_ns(), next = t + WD_POLL_NS;
        struct devq_chan_flight *late = NULL;
        for (struct devq_chan_flight *f = ch->flights; f; f = f->next) {
            if (!f->start_ns || f->done || timeout == UINT64_MAX)
                continue;
            uint64_t dl = f->start_ns + timeout < f->start_ns ? UINT64_MAX : f->start_ns + timeout;
            if (dl <= t && !late)
                late = f;
            else if (dl < next)
                next = dl;
        }
        if (ch->abort_req && !ch->aborted) {
            /* A stamp callback found a failed input and holds the stream
             * until the communicator is aborted (its message is the
             * channel's cause already). */
            ch->aborted = 1;
            pthread_mutex_unlock(&ch->lock);
            devq__log(DEVQ_LOG_BASIC, "%s", ch->broken_msg);
            ch->pl->chan_abort(ch->pc);
            pthread_mutex_lock(&ch->lock);
            ch->abort_done = 1;
            pthread_cond_broadcast(&ch->abort_cv);
            continue;
        }
        if (late && !ch->aborted) {
            char msg[DEVQ_CHANNEL_MSG_MAX];
            snprintf(
                msg, sizeof msg,
                "channel #%u (rank %d of %d): op %llu (%s) ran %.3f s on the device stream "
                "without its peers and timed out; the %s communicator was aborted: a peer's op failed or "
                "was skipped, or the ranks record this channel's ops in different orders "
                "(devq_channel_set_timeout sets the limit)",
                ch->number, ch->rank, ch->size, (unsigned long long)(late->first_op + late->nops - 1),
                late->what, (double)(t - late->start_ns) / 1e9, ch->engine_name);
            ch->aborted = 1;
            if (!ch->broken) {
                ch->broken = 1;
                snprintf(ch->broken_msg, sizeof ch->broken_msg, "%s", msg);
            }
            pthread_mutex_unlock(&ch->lock);
            devq__log(DEVQ_LOG_BASIC, "%s", msg);
            /* Its blocked ops end (undefined data); their completion
             * callbacks find the channel broken with this cause. */
            ch->pl->chan_abort(ch->pc);
            pthread_mutex_lock(&ch->lock);
            ch->abort_done = 1;
            pthread_cond_broadcast(&ch->abort_cv);
            continue;
        }
        struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
        pthread_cond_timedwait(&ch->wd_cv, &ch->lock, &ts);
    }
    pthread_mutex_unlock(&ch->lock);
    return NULL;
}

/* The first of f's inputs that failed: the channel breaks naming it and
 * its cause (under ch->lock; the buffers are alive while the group is
 * not done: its batch holds them until its completion). */
static int failed_input_locked(devq_channel *ch, const struct devq_chan_flight *f)
{
    for (size_t i = 0; i < f->nin; i++) {
        char cause[256];
        if (!devq__buffer_failed_at(f->in[i].buf, f->in[i].gen, cause, sizeof cause))
            continue;
        if (!ch->broken) {
            ch->broken = 1;
            char m[2 * DEVQ_CHANNEL_MSG_MAX];
            snprintf(
                m, sizeof m,
                "channel #%u (rank %d of %d): op %llu (%s) reads %s, "
                "which failed: %.160s; the op was withheld and the %s communicator aborted, so no peer gets a "
                "result from failed data",
                ch->number, ch->rank, ch->size, (unsigned long long)(f->first_op + f->nops - 1), f->what,
                devq__buffer_label(f->in[i].buf).s, cause, ch->engine_name);
            devq__cause_compact(ch->broken_msg, sizeof ch->broken_msg, m); /* the root cause kept */
        }
        return 1;
    }
    return 0;
}

/* Host callback just before a group: the stream reached it.  Passes the
 * stream's status on to the next callback (the group's completion).  A
 * failed input holds the stream here until the watchdog has aborted
 * the communicator. */
static int stamp_cb(void *arg, int status)
{
    struct devq_chan_flight *f = arg;
    devq_channel *ch = f->ch;
    pthread_mutex_lock(&ch->lock);
    f->start_ns = devq__now_ns();
    if (!status && !f->done && !ch->aborted && failed_input_locked(ch, f)) {
        ch->abort_req = 1;
        pthread_cond_signal(&ch->wd_cv);
    }
    if (ch->abort_req)
        while (!ch->abort_done)
            pthread_cond_wait(&ch->abort_cv, &ch->lock);
    flight_unref_locked(ch, f);
    pthread_cond_signal(&ch->wd_cv);
    pthread_mutex_unlock(&ch->lock);
    return status;
}

/* The watchdog starts when the channel's first op is recorded
 * (devq__chan_stream_start), so a thread that cannot start is that
 * call's error, retried by the next; an op never reaches the stream
 * without it (devq(7) THREADS). */
static int start_watchdog(devq_channel *ch)
{
    pthread_mutex_lock(&ch->lock);
    int r = 0;
    if (!ch->wd_started) {
        r = pthread_create(&ch->watchdog, NULL, watchdog, ch);
        ch->wd_started = r == 0;
    }
    pthread_mutex_unlock(&ch->lock);
    return r == 0 ? 0 : r == ENOMEM ? -ENOMEM : -EAGAIN;
}

int devq__chan_stream_start(devq_channel *ch, const char *fn)
{
    int r = start_watchdog(ch);
    if (r < 0)
        return devq__err(r,
                         "%s: channel #%u: cannot start its watchdog thread: pthread_create: %s "
                         "(raise RLIMIT_NPROC or free memory, then record the op again)",
                         fn, ch->number, strerror(-r));
    return 0;
}

/* What op co reads -- its source, or at a broadcast's root the buffer
 * -- and the write generation it reads.  Called right after the op's
 * uses were bound (device lock), so the buffer's count includes the
 * op's own write when it works in place (READ_WRITE). */
static struct devq_chan_input member_input(const struct chan_op *co)
{
    if (co->op.kind == DEVQ_ENG_BROADCAST) {
        devq_buffer *b = co->op.peer == co->ch->rank ? co->span.bufs[1] : NULL;
        return (struct devq_chan_input){ b, b ? b->wgen : 0 };
    }
    devq_buffer *b = co->span.bufs[0];
    int in_place = b && co->span.bufs[1] == NULL && co->op.kind != DEVQ_ENG_SEND;
    return (struct devq_chan_input){ b, b ? b->wgen - (in_place ? 1u : 0u) : 0 };
}

static int push_pending(devq_channel *ch, const struct chan_op *co)
{
    if (ch->npend == ch->cappend) {
        size_t cap = ch->cappend ? ch->cappend * 2 : 4;
        struct devq_eng_op *p = realloc(ch->pend, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        ch->pend = p;
        struct devq_chan_input *in = realloc(ch->pend_in, cap * sizeof *in);
        if (!in)
            return -ENOMEM;
        ch->pend_in = in;
        ch->cappend = cap;
    }
    ch->pend_in[ch->npend] = member_input(co);
    ch->pend[ch->npend++] = co->op;
    return 0;
}

/* Issue (device lock held, in op order).  A failure here fails the
 * batch at this op; the ops of a group not enqueued leave this rank out
 * of step with its peers, so the channel breaks. */
int devq__chan_stream_issue(void *data, devq_pl_stream *s, unsigned group, const void *gid)
{
    struct chan_op *co = data;
    devq_channel *ch = co->ch;
    char msg[DEVQ_CHANNEL_MSG_MAX];
    uint64_t op_no = ++ch->ops_run;
    if (!(group & DEVQ_WORK_CONT)) {
        if (ch->npend) {
            snprintf(msg, sizeof msg,
                     "channel #%u (rank %d of %d): a group of %zu op(s) was never enqueued "
                     "(its batch failed while being issued); this rank is out of step with its peers, so the "
                     "channel fails its later ops",
                     ch->number, ch->rank, ch->size, ch->npend);
            devq__channel_set_broken(ch, msg);
        }
        ch->npend = 0;
        ch->pend_gid = gid;
    } else if (ch->pend_gid != gid) {
        return devq__err(-EIO, "channel #%u: %s: its group was never started", ch->number, co->what);
    }
    int r = devq__channel_broken_err(ch);
    if (r < 0) {
        ch->npend = 0;
        return r;
    }
    if (push_pending(ch, co) < 0) {
        ch->npend = 0;
        devq__channel_set_broken(ch, "channel: out of memory for an op being issued");
        return devq__err(-ENOMEM, "channel #%u: out of memory for an op being issued", ch->number);
    }
    if (group & DEVQ_WORK_MORE)
        return 0;
    size_t n = ch->npend;
    ch->npend = 0;
    struct devq_chan_flight *f = calloc(1, sizeof *f + n * sizeof f->in[0]);
    if (!f || start_watchdog(ch) < 0) {
        free(f);
        devq__channel_set_broken(ch, "channel: out of memory or threads for the watchdog of an op");
        return devq__err(-ENOMEM, "channel #%u: %s: cannot track the op (out of memory or threads)",
                         ch->number, co->what);
    }
    *f = (struct devq_chan_flight){
        .ch = ch, .first_op = op_no + 1 - n, .nops = n, .what = co->what, .refs = 2
    };
    for (size_t i = 0; i < n; i++)
        if (ch->pend_in[i].buf)
            f->in[f->nin++] = ch->pend_in[i];
    pthread_mutex_lock(&ch->lock);
    f->next = ch->flights;
    ch->flights = f;
    pthread_mutex_unlock(&ch->lock);
    if ((r = ch->dev->ops->host_fn(s, stamp_cb, f)) < 0) {
        pthread_mutex_lock(&ch->lock);
        f->refs = 1;
        flight_unref_locked(ch, f);
        pthread_mutex_unlock(&ch->lock);
        snprintf(msg, sizeof msg, "channel #%u (rank %d of %d): op %llu (%s) could not be enqueued: %s",
                 ch->number, ch->rank, ch->size, (unsigned long long)op_no, co->what, devq__errmsg_peek());
        devq__channel_set_broken(ch, msg);
        return devq__err(r, "%s", msg);
    }
    if ((r = ch->pl->chan_enqueue(ch->pc, s, ch->pend, n)) < 0) {
        snprintf(msg, sizeof msg, "channel #%u (rank %d of %d): op %llu (%s) could not be enqueued: %s",
                 ch->number, ch->rank, ch->size, (unsigned long long)op_no, co->what, devq__errmsg_peek());
        pthread_mutex_lock(&ch->lock);
        f->done = 1;
        flight_unref_locked(ch, f); /* no completion will come */
        pthread_mutex_unlock(&ch->lock);
        /* The stamp may have run first and aborted for a failed input:
         * that is the root cause. */
        int pre = devq__channel_broken_err(ch);
        if (pre < 0)
            return pre;
        devq__channel_set_broken(ch, msg);
        return devq__err(r, "%s", msg);
    }
    co->flight = f;
    return 0;
}

/* The group's completion (the last member's callback, stream order):
 * the channel's first cause, else the communicator's asynchronous error,
 * else the stream's status. */
int devq__chan_stream_run(void *data, int status, unsigned group, const void *gid)
{
    (void)gid;
    struct chan_op *co = data;
    devq_channel *ch = co->ch;
    char stream_msg[DEVQ_CHANNEL_MSG_MAX] = "", msg[DEVQ_CHANNEL_MSG_MAX];
    if (group & DEVQ_WORK_SKIPPED) {
        /* Never enqueued: the peers' matching op will wait for it. */
        snprintf(msg, sizeof msg,
                 "channel #%u (rank %d of %d): %s was skipped because its batch failed before it "
                 "was issued; this rank is out of step with its peers, so the channel fails its later ops",
                 ch->number, ch->rank, ch->size, co->what);
        devq__channel_set_broken(ch, msg);
        return 0;
    }
    if (group & DEVQ_WORK_PROBE) {
        /* A later op of the batch could not be queued: the channel's
         * own failure, when it knows one, is the root cause. */
        int r = devq__channel_broken_err(ch);
        if (r < 0)
            return r;
        if ((r = ch->pl->chan_error(ch->pc)) < 0) {
            snprintf(msg, sizeof msg, "channel #%u (rank %d of %d): %s failed: %s", ch->number, ch->rank,
                     ch->size, co->what, devq__errmsg_peek());
            return devq__err(r, "%s", msg);
        }
        return 0;
    }
    if (status)
        snprintf(stream_msg, sizeof stream_msg, "%s", devq__errmsg_peek());
    struct devq_chan_flight *f = co->flight;
    if (f) {
        pthread_mutex_lock(&ch->lock);
        f->done = 1;
        flight_unref_locked(ch, f);
        pthread_mutex_unlock(&ch->lock);
        co->flight = NULL;
    }
    int r = devq__channel_broken_err(ch);
    if (r < 0)
        return r;
    int a = ch->pl->chan_error(ch->pc);
    if (a < 0) {
        /* The engine's verdict, then the stream's failure when there is
         * one (an op before the group, a kernel, may be the root: the
         * engine then says the device failed), each cut to fit a cause. */
        if (status)
            snprintf(msg, sizeof msg,
                     "channel #%u (rank %d of %d): %s failed: %.160s; the device stream: %.110s", ch->number,
                     ch->rank, ch->size, co->what, devq__errmsg_peek(), stream_msg);
        else
            snprintf(msg, sizeof msg, "channel #%u (rank %d of %d): %s failed: %s", ch->number, ch->rank,
                     ch->size, co->what, devq__errmsg_peek());
        devq__channel_set_broken(ch, msg);
        return devq__err(a, "%s", msg);
    }
    if (status) {
        snprintf(msg, sizeof msg,
                 "channel #%u (rank %d of %d): %s did not complete: the device stream failed "
                 "before or in it: %s",
                 ch->number, ch->rank, ch->size, co->what, stream_msg);
        devq__channel_set_broken(ch, msg);
        return devq__err(status, "%s", msg);
    }
    return 0;
}

void devq__chan_stream_fini(devq_channel *ch)
{
    pthread_mutex_lock(&ch->lock);
    ch->wd_stop = 1;
    pthread_cond_signal(&ch->wd_cv);
    int started = ch->wd_started;
    pthread_mutex_unlock(&ch->lock);
    if (started)
        pthread_join(ch->watchdog, NULL);
    /* Every batch that could still call back is done: what is left (an
     * enqueue that failed after its stamp ran) goes. */
    while (ch->flights) {
        struct devq_chan_flight *f = ch->flights;
        ch->flights = f->next;
        free(f);
    }
}
