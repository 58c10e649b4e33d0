/* SPDX-License-Identifier: MIT */
/* Channel ops as queue ops (DESIGN §11): each is recorded as an OP_WORK
 * op holding the channel, with src READ and dst WRITE (READ_WRITE when
 * they are one buffer), so the tracker orders it against every other
 * use and the batch walk fails it and what it writes like any op.
 *
 * Running on a host engine (cpu: MPI; GPU channels run on the device
 * stream instead, stream.c): a group (consecutive ops of one channel in
 * one batch) takes the channel, starts each op on the engine, and the last member waits
 * for all of them.  One group at a time per channel: the ops of a
 * channel run in the order they reach it, as MPI and NCCL require.
 * Waiting is bounded spinning on the engine's test (~50 us, which keeps
 * small collectives at MPI's own latency), then yielding between tests
 * up to 1 ms (plus the time the op's bytes take at 1 GB/s: shared-memory
 * MPI copies only inside MPI calls), then back-off sleeps (100 us at
 * most), never a
 * blocking engine wait (Open MPI's blocking wait starves other traffic),
 * and never past the channel's timeout.  A skipped op (its batch failed
 * before it) leaves this rank out of step with its peers, so the channel
 * fails every later op with that cause rather than pairing them wrongly.
 *
 * At submit (DEVQ_WORK_INLINE, lib/queue/inline.c: an idle queue runs
 * the batch on the submitting thread) the same steps run, but nothing
 * waits there beyond the spin: a channel held by another queue, a
 * dependent op whose group is still running, or a group not done
 * within the spin returns DEVQ_WORK_PENDING, and the stream callback
 * that then gets the op picks up what was started (chan_op.started). */
#include "config.h"
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "channel.h"
#include "error.h"
#include "futex.h"
#include "log.h"
#include "batch.h"
#include "buffer.h"
#include "buffer_fail.h"
#include "queue.h"
#include "record.h"

#define SPIN_NS 50000ull       /* test in a loop this long, */
#define YIELD_NS 1000000ull    /* then yield between tests up to this, then sleep */
#define SLEEP_MAX_NS 100000ull /* back-off ceiling */
#define SPIN_CLOCK_EVERY 8u    /* rounds of tests per clock read while spinning */

static int overlap(uintptr_t a0, uintptr_t a1, uintptr_t b0, uintptr_t b1)
{
    return a0 < b1 && b0 < a1;
}

/* Whether op s depends on a started op of the group (read after write,
 * write after read or write): the engine may run a group's ops at once,
 * so such an op waits for the group so far before it starts. */
static int conflicts(const devq_channel *ch, const struct devq_chan_span *s)
{
    for (size_t i = 0; i < ch->nreqs; i++) {
        const struct devq_chan_span *p = &ch->spans[i];
        if (overlap(s->wr_lo, s->wr_hi, p->rd_lo, p->rd_hi) ||
            overlap(s->wr_lo, s->wr_hi, p->wr_lo, p->wr_hi) ||
            overlap(s->rd_lo, s->rd_hi, p->wr_lo, p->wr_hi))
            return 1;
    }
    return 0;
}

static size_t dtype_size(enum devq_dtype t)
{
    switch (t) {
    case DEVQ_I8:
    case DEVQ_U8:
        return 1;
    case DEVQ_F16:
    case DEVQ_BF16:
        return 2;
    case DEVQ_I32:
    case DEVQ_U32:
    case DEVQ_F32:
        return 4;
    case DEVQ_I64:
    case DEVQ_U64:
    case DEVQ_F64:
        return 8;
    }
    return 0;
}

/* Whether the channel's engine has peer notices (devq_engine.h). */
static int has_notices(const devq_channel *ch)
{
    return ch->eng && ch->eng->size >= DEVQ_ENGINE_OPS_NOTICE_SIZE && ch->eng->notice_send &&
           ch->eng->notice_poll;
}

/* The first cause wins.  Under the lock: a queue that gave up waiting
 * for the channel breaks it while another group holds it.  A rank that
 * breaks on its own tells its peers why (once), so their matching ops
 * fail with this cause at once instead of at their timeout; a break
 * that is a peer's notice is not passed on (every peer got it). */
static void channel_break(devq_channel *ch, const char *msg, int tell_peers)
{
    pthread_mutex_lock(&ch->lock);
    int first = !ch->broken;
    if (first) {
        ch->broken = 1;
        snprintf(ch->broken_msg, sizeof ch->broken_msg, "%s", msg);
    }
    pthread_mutex_unlock(&ch->lock);
    if (!first)
        return;
    devq__log(DEVQ_LOG_BASIC, "%s", msg);
    if (tell_peers && has_notices(ch)) {
        char saved[DEVQ_ERRMSG_MAX]; /* a notice's failure is not the caller's */
        snprintf(saved, sizeof saved, "%s", devq__errmsg_peek());
        if (ch->eng->notice_send(ch->comm, msg) < 0)
            devq__log(DEVQ_LOG_BASIC, "channel #%u: peers not told: %s", ch->number, devq__errmsg_peek());
        devq__err_str(0, saved);
    }
}

void devq__channel_set_broken(devq_channel *ch, const char *msg)
{
    channel_break(ch, msg, 1);
}

int devq__channel_broken_err(devq_channel *ch)
{
    /* Every op asks; the lock only once it is broken.  A break racing
     * this read (another queue that gave up waiting for the channel) is
     * seen or not, as it was with the lock taken first. */
    if (!atomic_load_explicit(&ch->broken, memory_order_acquire))
        return 0;
    char msg[DEVQ_CHANNEL_MSG_MAX];
    pthread_mutex_lock(&ch->lock);
    int b = ch->broken;
    if (b) /* (every op asks: the copy only when there is one) */
        snprintf(msg, sizeof msg, "%s", ch->broken_msg);
    pthread_mutex_unlock(&ch->lock);
    if (!b)
        return 0;
    /* Most causes name the channel already. */
    return !strncmp(msg, "channel #", 9) ? devq__err(-EIO, "%s", msg)
                                         : devq__err(-EIO, "channel #%u: %s", ch->number, msg);
}

/* Take the channel for a group: wait (bounded) for another queue's
 * group on it to finish. */
static int acquire(devq_channel *ch, uint64_t deadline, const void *gid)
{
    pthread_mutex_lock(&ch->lock);
    while (ch->busy) {
        if (deadline == UINT64_MAX) {
            pthread_cond_wait(&ch->idle, &ch->lock);
            continue;
        }
        struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
        if (pthread_cond_timedwait(&ch->idle, &ch->lock, &ts) == ETIMEDOUT && ch->busy) {
            pthread_mutex_unlock(&ch->lock);
            return -ETIMEDOUT;
        }
    }
    ch->busy = 1;
    atomic_store_explicit(&ch->holder, gid, memory_order_release);
    pthread_mutex_unlock(&ch->lock);
    return 0;
}

/* Whether the group gid holds the channel: a group whose first member
 * could not take it must neither run nor let go of another's hold. */
static int holds(devq_channel *ch, const void *gid)
{
    /* holder is gid only from gid's own take to its release (both under
     * the lock, busy set with it), and only gid's members ask: no lock. */
    return atomic_load_explicit(&ch->holder, memory_order_acquire) == gid;
}

static void release(devq_channel *ch)
{
    pthread_mutex_lock(&ch->lock);
    ch->busy = 0;
    atomic_store_explicit(&ch->holder, NULL, memory_order_release);
    pthread_cond_broadcast(&ch->idle);
    pthread_mutex_unlock(&ch->lock);
}

/* Room for one more started op (before it is started). */
static int reserve_req(devq_channel *ch)
{
    if (ch->nreqs == ch->capreqs) {
        size_t cap = ch->capreqs ? ch->capreqs * 2 : 4;
        devq_eng_req **r = realloc(ch->reqs, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        ch->reqs = r;
        const char **n = realloc(ch->req_names, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        ch->req_names = n;
        struct devq_chan_span *sp = realloc(ch->spans, cap * sizeof *sp);
        if (!sp)
            return -ENOMEM;
        ch->spans = sp;
        ch->capreqs = cap;
    }
    return 0;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    nanosleep(&ts, NULL);
}

/* After a timeout: which peers are still there?  This rank tells every
 * peer it timed out (its notice, sent now rather than at the break), then
 * listens for theirs for a grace of a quarter of the timeout, at most
 * 1 s: the peers waiting in the same op time out within that of each
 * other and answer; a rank that died (a crashed host: it sends nothing)
 * or never reached the op stays silent, and the cause names it.  Returns
 * 1: the notice is sent (channel_break must not send another). */
#define ROLL_CALL_MAX_NS 1000000000ull
/* In every timeout's cause: a peer's notice that holds it starts the
 * receiver's own roll call (its peers are waiting in the same op). */
#define TIMED_OUT "for its peers and timed out"

static int roll_call(devq_channel *ch, uint64_t timeout, char *msg, int from)
{
    char saved[DEVQ_ERRMSG_MAX];
    snprintf(saved, sizeof saved, "%s", devq__errmsg_peek());
    if (ch->eng->notice_send(ch->comm, msg) < 0)
        devq__log(DEVQ_LOG_BASIC, "channel #%u: peers not told: %s", ch->number, devq__errmsg_peek());
    devq__err_str(0, saved);
    unsigned char *heard = calloc((size_t)ch->size, 1);
    if (!heard)
        return 1;
    int left = ch->size - 1;
    if (from >= 0 && from < ch->size && from != ch->rank) {
        heard[from] = 1; /* the peer whose notice started it */
        left--;
    }
    uint64_t grace = timeout / 4 < ROLL_CALL_MAX_NS ? timeout / 4 : ROLL_CALL_MAX_NS;
    uint64_t end = devq__now_ns() + grace;
    char why[DEVQ_CHANNEL_MSG_MAX];
    while (left > 0 && devq__now_ns() < end) {
        int peer = -1;
        if (ch->eng->notice_poll(ch->comm, &peer, why, sizeof why) == 1) {
            if (peer >= 0 && peer < ch->size && peer != ch->rank && !heard[peer]) {
                heard[peer] = 1;
                left--;
            }
            continue;
        }
        sleep_ns(100000);
    }
    if (left > 0) {
        char list[128] = "";
        size_t at = 0;
        int shown = 0;
        for (int p = 0; p < ch->size && at < sizeof list - 16; p++) {
            if (p == ch->rank || heard[p])
                continue;
            at += (size_t)snprintf(list + at, sizeof list - at, "%srank %d", shown++ ? ", " : "", p);
        }
        if (shown < left)
            snprintf(list + at, sizeof list - at, ", ...");
        char m[2 * DEVQ_CHANNEL_MSG_MAX];
        snprintf(m, sizeof m,
                 "channel #%u (rank %d of %d): %s %s did not answer within %.3f s of the "
                 "timeout (dead, or not at this op); %s",
                 ch->number, ch->rank, ch->size, left == 1 ? "peer" : "peers", list, (double)grace / 1e9,
                 msg);
        size_t len = strnlen(m, DEVQ_CHANNEL_MSG_MAX - 1);
        memcpy(msg, m, len);
        msg[len] = '\0';
    }
    free(heard);
    return 1;
}

/* Progress every started op of the group to its end.  Returns 0, the
 * first engine failure, or -ETIMEDOUT; the channel is broken after a
 * failure (the group's other ops are abandoned). */
/* The group's ops still running when it failed: withdrawn from the
 * engine as far as it can.  Then the verdict (the channel broken on a
 * failure). */
static int end_group(devq_channel *ch, int err, const char *msg, int from_peer)
{
    for (size_t i = 0; i < ch->nreqs; i++) {
        if (!ch->reqs[i])
            continue;
        ch->eng->abandon(ch->reqs[i]);
        /* A late peer can still complete it inside the engine, which then
         * reads and writes these buffers: their memory must never go to
         * another buffer. */
        for (int k = 0; k < 2; k++)
            if (ch->spans[i].bufs[k])
                devq__buffer_hold_memory(ch->spans[i].bufs[k]);
    }
    ch->nreqs = 0;
    if (err) {
        channel_break(ch, msg, !from_peer);
        return devq__err(err, "%s", msg);
    }
    return 0;
}

/* One round of tests over the group's running ops: a done or failed
 * one is cleared from reqs (the engine freed it).  Returns how many of
 * left still run; *err and msg (DEVQ_CHANNEL_MSG_MAX): the failure. */
static size_t test_round(devq_channel *ch, size_t left, int *err, char *msg)
{
    for (size_t i = 0; i < ch->nreqs && !*err; i++) {
        if (!ch->reqs[i])
            continue;
        int done = 0;
        int r = ch->eng->test(ch->reqs[i], &done);
        if (r < 0) {
            ch->reqs[i] = NULL;
            left--;
            *err = r;
            snprintf(msg, DEVQ_CHANNEL_MSG_MAX, "channel #%u (rank %d of %d): %s failed: %s", ch->number,
                     ch->rank, ch->size, ch->req_names[i], devq__errmsg_peek());
        } else if (done) {
            ch->reqs[i] = NULL;
            left--;
        }
    }
    return left;
}

int devq__channel_wait_group(devq_channel *ch, const char *what, uint64_t op_no)
{
    return devq__channel_wait_group_for(ch, what, op_no, 0);
}

int devq__channel_wait_group_for(devq_channel *ch, const char *what, uint64_t op_no, uint64_t budget_ns)
{
    /* The clock, the limits and the message are set up only once
     * SPIN_CLOCK_EVERY rounds of tests left an op running: in a run of
     * dependent small ops the one waited for is usually done by then,
     * and a clock read stands between its end and the next op's start.
     * (The spin and the timeout then start that many rounds late, well
     * under a millisecond.) */
    uint64_t timeout = 0, start = 0, deadline = 0, yield_ns = 0, nap = 1000;
    int err = 0, first_round = 1, spinning = 1;
    unsigned rounds = 0;
    char msg[DEVQ_CHANNEL_MSG_MAX];
    msg[0] = '\0';
    int from_peer = 0, notices = 0;
    size_t left = 0; /* a wait given up at submit leaves done ops NULL */
    for (size_t i = 0; i < ch->nreqs; i++)
        left += ch->reqs[i] != NULL;
    while (left && !err) {
        left = test_round(ch, left, &err, msg);
        if (!left || err)
            break;
        /* While spinning, the clock every SPIN_CLOCK_EVERY rounds: a read
         * costs about what a round of tests does, and it stands between a
         * peer's message arriving and this rank seeing it. */
        if (spinning && ++rounds % SPIN_CLOCK_EVERY)
            continue;
        uint64_t t = devq__now_ns();
        if (first_round) {
            first_round = 0;
            timeout = atomic_load(&ch->timeout_ns);
            start = t;
            deadline = timeout == UINT64_MAX || start + timeout < start ? UINT64_MAX : start + timeout;
            /* Shared-memory MPI moves bytes only inside MPI calls (the
             * receiver copies fragments when it progresses), so a big op
             * must keep being tested: yield, not sleep, for as long as
             * its bytes take at 1 GB/s. */
            yield_ns = YIELD_NS;
            for (size_t i = 0; i < ch->nreqs; i++)
                yield_ns +=
                    (ch->spans[i].rd_hi - ch->spans[i].rd_lo) + (ch->spans[i].wr_hi - ch->spans[i].wr_lo);
            notices = has_notices(ch);
        }
        if (budget_ns && t - start >= budget_ns)
            return DEVQ_WORK_PENDING; /* the caller hands the rest to the stream */
        if (t >= deadline) {
            err = -ETIMEDOUT;
            snprintf(
                msg, sizeof msg,
                "channel #%u (rank %d of %d): op %llu (%s) waited %.3f s " TIMED_OUT
                ": a peer's op failed or was skipped, or the ranks record this channel's ops in different "
                "orders (devq_channel_set_timeout sets the limit)",
                ch->number, ch->rank, ch->size, (unsigned long long)op_no, what, (double)(t - start) / 1e9);
            if (notices)
                from_peer = roll_call(ch, timeout, msg, -1);
            break;
        }
        if (t - start < SPIN_NS)
            continue;
        spinning = 0;
        /* Past the spin, a peer that dropped out says so (its notice). */
        char why[DEVQ_CHANNEL_MSG_MAX];
        int peer = -1;
        if (notices && ch->eng->notice_poll(ch->comm, &peer, why, sizeof why) == 1) {
            err = -EIO;
            from_peer = 1;
            char m[2 * DEVQ_CHANNEL_MSG_MAX];
            snprintf(m, sizeof m,
                     "channel #%u (rank %d of %d): op %llu (%s) cannot complete: rank %d dropped out: %s",
                     ch->number, ch->rank, ch->size, (unsigned long long)op_no, what, peer, why);
            /* Cut at the end, not compacted: the peer's own hop ("rank R
             * dropped out: ...") is what the caller's chain must keep. */
            size_t len = strnlen(m, sizeof msg - 1);
            memcpy(msg, m, len);
            msg[len] = '\0';
            /* A peer that timed out is waiting in this op too: answer
             * its roll call, and name the ranks neither of us heard. */
            if (strstr(why, TIMED_OUT))
                roll_call(ch, timeout, msg, peer);
            break;
        }
        /* A sleep is never shorter than the timer slack (~50 us): while
         * the peer may be about to run (2 ranks on 2 busy cores), let it
         * have the core instead. */
        if (t - start < yield_ns) {
            sched_yield();
            continue;
        }
        uint64_t d = deadline - t < nap ? deadline - t : nap;
        sleep_ns(d);
        if (nap < SLEEP_MAX_NS)
            nap *= 2;
    }
    return end_group(ch, err, msg, from_peer);
}

/* Take the channel for a group without waiting: 1 taken, 0 held by
 * another queue's group (the op is then run from the stream, which
 * waits its turn). */
static int try_acquire(devq_channel *ch, const void *gid)
{
    pthread_mutex_lock(&ch->lock);
    int free_now = !ch->busy;
    if (free_now) {
        ch->busy = 1;
        atomic_store_explicit(&ch->holder, gid, memory_order_release);
    }
    pthread_mutex_unlock(&ch->lock);
    return free_now;
}

/* The group's first member takes the channel (bounded); the others
 * check that it did.  0, DEVQ_WORK_PENDING (at submit, held by another
 * queue), NOT_TAKEN (a skipped member whose group never got it: nothing
 * to run or say), or the failure with its message. */
#define NOT_TAKEN 2
static int take_channel(struct chan_op *co, int status, unsigned group, const void *gid)
{
    devq_channel *ch = co->ch;
    if (group & DEVQ_WORK_CONT) {
        if (holds(ch, gid))
            return 0;
        return status ? NOT_TAKEN
                      : devq__err(-EIO, "channel #%u: %s: its group never got the channel", ch->number,
                                  co->what);
    }
    if (group & DEVQ_WORK_INLINE)
        return try_acquire(ch, gid) ? 0 : DEVQ_WORK_PENDING;
    uint64_t timeout = atomic_load(&ch->timeout_ns);
    uint64_t t = devq__now_ns();
    uint64_t deadline = timeout == UINT64_MAX || t + timeout < t ? UINT64_MAX : t + timeout;
    if (acquire(ch, deadline, gid) == 0)
        return 0;
    /* Never taken: no group of ours to finish.  The op did not run, so
     * this rank is out of step. */
    char msg[DEVQ_CHANNEL_MSG_MAX];
    snprintf(msg, sizeof msg,
             "channel #%u (rank %d of %d): %s waited past the channel's timeout for "
             "another queue's op on the channel and did not run",
             ch->number, ch->rank, ch->size, co->what);
    devq__channel_set_broken(ch, msg);
    return devq__err(-ETIMEDOUT, "%s", msg);
}

/* Start op co of the group on the engine (the channel held): 0 or the
 * failure, the channel broken with its cause. */
static int start_op(struct chan_op *co, int status, uint64_t op_no)
{
    devq_channel *ch = co->ch;
    int r = 0;
    if (status) {
        /* devq_errmsg() holds the batch's cause (batch.h): the peers
         * are told it with the skip. */
        char msg[DEVQ_CHANNEL_MSG_MAX];
        snprintf(
            msg, sizeof msg,
            "channel #%u (rank %d of %d): op %llu (%s) was skipped because its batch "
            "failed before it (%.200s); this rank is out of step with its peers, so the channel fails its "
            "later ops",
            ch->number, ch->rank, ch->size, (unsigned long long)op_no, co->what, devq__errmsg_peek());
        devq__channel_set_broken(ch, msg);
    } else if ((r = devq__channel_broken_err(ch)) < 0) {
        /* r and the message are set */
    } else if (reserve_req(ch) < 0) {
        devq__channel_set_broken(ch, "channel: out of memory for a running op");
        r = devq__err(-ENOMEM, "channel #%u: out of memory for a running op", ch->number);
    } else if (conflicts(ch, &co->span) && (r = devq__channel_wait_group(ch, co->what, op_no)) < 0) {
        /* the group so far failed: the channel is broken, r says why */
    } else {
        devq_eng_req *rq = NULL;
        r = ch->eng->start(ch->comm, &co->op, &rq);
        if (r < 0) {
            char msg[DEVQ_CHANNEL_MSG_MAX];
            snprintf(msg, sizeof msg, "channel #%u (rank %d of %d): op %llu (%s) could not start: %s",
                     ch->number, ch->rank, ch->size, (unsigned long long)op_no, co->what,
                     devq__errmsg_peek());
            devq__channel_set_broken(ch, msg);
            r = devq__err(r, "%s", msg);
        } else {
            ch->reqs[ch->nreqs] = rq;
            ch->req_names[ch->nreqs] = co->what;
            ch->spans[ch->nreqs++] = co->span;
        }
    }
    return r;
}

/* The group's last member: wait for it all, let the channel go. */
static int finish_group(struct chan_op *co, int status, int r, uint64_t op_no)
{
    int w = devq__channel_wait_group(co->ch, co->what, op_no);
    release(co->ch);
    if (r < 0)
        return r;
    return status ? 0 : w;
}

static int run_op(void *data, int status, unsigned group, const void *gid)
{
    struct chan_op *co = data;
    devq_channel *ch = co->ch;
    int at_submit = (group & DEVQ_WORK_INLINE) != 0;
    if (co->started) {   /* started at submit, the stream takes the wait over */
        co->started = 0; /* (the op's bytes may be run again: a replayed batch) */
        return finish_group(co, status, co->start_err, co->op_no);
    }
    int r = take_channel(co, status, group, gid);
    if (r)
        return r == NOT_TAKEN ? 0 : r;
    /* At submit, an op that depends on the group so far waits for it
     * only briefly: the stream waits the rest, before this op starts. */
    if (at_submit && !status && ch->nreqs && conflicts(ch, &co->span) &&
        (r = devq__channel_wait_group_for(ch, co->what, ch->ops_run + 1, SPIN_NS)) == DEVQ_WORK_PENDING)
        return r;
    uint64_t op_no = ++ch->ops_run;
    if (r == 0)
        r = start_op(co, status, op_no);
    if (group & DEVQ_WORK_MORE)
        return r; /* the group's last member waits and lets go */
    if (at_submit) {
        int w = devq__channel_wait_group_for(ch, co->what, op_no, SPIN_NS);
        if (w == DEVQ_WORK_PENDING) {
            co->started = 1;
            co->start_err = r;
            co->op_no = op_no;
            return w;
        }
        release(ch);
        return r < 0 ? r : w;
    }
    return finish_group(co, status, r, op_no);
}

/* Recording: checks, then one OP_WORK op. */
static int check_type(enum devq_dtype type, const char *fn)
{
    if ((unsigned)type > DEVQ_F64)
        return devq__err(-EINVAL, "%s: dtype %d is not a devq_dtype (DEVQ_I8 .. DEVQ_F64)", fn, (int)type);
    return 0;
}

static int check_reduce(enum devq_reduce op, const char *fn)
{
    if ((unsigned)op > DEVQ_AVG)
        return devq__err(-EINVAL, "%s: reduction %d is not a devq_reduce (DEVQ_SUM .. DEVQ_AVG)", fn,
                         (int)op);
    return 0;
}

static int check_range(devq_queue *q, devq_channel *ch, devq_buffer *b, size_t off, size_t count, size_t mult,
                       enum devq_dtype type, const char *fn, const char *what)
{
    int r = devq__buffer_check(b, fn);
    if (r < 0)
        return r;
    if (b->dev != q->dev)
        return devq__err(-EINVAL, "%s: %s %s belongs to %s:%d but %s is on %s:%d", fn, what,
                         devq__buffer_label(b).s, b->dev->info.backend, b->dev->info.ordinal,
                         devq__queue_label(q).s, q->dev->info.backend, q->dev->info.ordinal);
    (void)ch;
    size_t esz = dtype_size(type), bytes;
    if (count == 0)
        return devq__err(-EINVAL, "%s: count is 0; give the number of elements", fn);
    if (__builtin_mul_overflow(count, esz, &bytes) || __builtin_mul_overflow(bytes, mult, &bytes) ||
        off > b->size || bytes > b->size - off)
        return devq__err(-EINVAL,
                         "%s: %s range at offset %zu of %zu x %zu elements of %zu bytes does not fit "
                         "%s, which has %zu bytes",
                         fn, what, off, mult, count, esz, devq__buffer_label(b).s, b->size);
    return 0;
}

static int check_peer(devq_channel *ch, int peer, const char *fn, const char *what)
{
    if (peer < 0 || peer >= ch->size)
        return devq__err(-EINVAL, "%s: %s %d is not a rank of channel #%u (0 .. %d)", fn, what, peer,
                         ch->number, ch->size - 1);
    return 0;
}

static int record(devq_queue *q, devq_channel *ch, const char *fn, const char *what, struct devq_eng_op *op,
                  devq_buffer *dst, size_t dst_off, devq_buffer *src, size_t src_off)
{
    int r = devq__record_begin(q, fn);
    if (r < 0)
        return r;
    if ((r = devq__channel_check(ch, fn)) < 0)
        return devq__record_commit(q, r);
    if (ch->pl && (r = devq__chan_stream_start(ch, fn)) < 0)
        return devq__record_commit(q, r);
    int need_src = op->kind != DEVQ_ENG_BROADCAST && op->kind != DEVQ_ENG_RECV;
    int need_dst = op->kind != DEVQ_ENG_SEND;
    if ((need_dst && !dst) || (need_src && !src))
        return devq__record_commit(
            q, devq__err(-EINVAL, "%s: %s is NULL", fn,
                         need_dst && !dst ? (op->kind == DEVQ_ENG_BROADCAST ? "buf" : "dst") : "src"));
    size_t dst_mult = op->kind == DEVQ_ENG_ALL_GATHER ? (size_t)ch->size : 1;
    size_t src_mult = op->kind == DEVQ_ENG_REDUCE_SCATTER ? (size_t)ch->size : 1;
    int check_op = op->kind == DEVQ_ENG_ALL_REDUCE || op->kind == DEVQ_ENG_REDUCE_SCATTER;
    int peer_what = op->kind == DEVQ_ENG_BROADCAST                           ? 1
                    : op->kind == DEVQ_ENG_SEND || op->kind == DEVQ_ENG_RECV ? 2
                                                                             : 0;
    if (ch->dev != q->dev)
        return devq__record_commit(q, devq__err(-EINVAL,
                                                "%s: channel #%u was created on %s:%d but %s is on "
                                                "%s:%d; create a channel per device",
                                                fn, ch->number, ch->dev->info.backend, ch->dev->info.ordinal,
                                                devq__queue_label(q).s, q->dev->info.backend,
                                                q->dev->info.ordinal));
    if ((r = check_type(op->type, fn)) < 0 || (check_op && (r = check_reduce(op->op, fn)) < 0))
        return devq__record_commit(q, r);
    if (peer_what && (r = check_peer(ch, op->peer, fn, peer_what == 1 ? "root" : "peer")) < 0)
        return devq__record_commit(q, r);
    if (peer_what == 2 && op->peer == ch->rank)
        return devq__record_commit(q, devq__err(-EINVAL,
                                                "%s: peer %d is this rank; send and receive between "
                                                "different ranks (copy within one)",
                                                fn, op->peer));
    if (dst && (r = check_range(q, ch, dst, dst_off, op->count, dst_mult, op->type, fn, "dst")) < 0)
        return devq__record_commit(q, r);
    /* In place (the common all_reduce): the range just checked. */
    int same_range = src == dst && src_off == dst_off && src_mult == dst_mult;
    if (src && !same_range &&
        (r = check_range(q, ch, src, src_off, op->count, src_mult, op->type, fn, "src")) < 0)
        return devq__record_commit(q, r);
    size_t esz = dtype_size(op->type);
    if (dst && src && dst == src && dst_off != src_off) {
        size_t a0 = dst_off, a1 = dst_off + op->count * esz * dst_mult;
        size_t b0 = src_off, b1 = src_off + op->count * esz * src_mult;
        int in_place_gather =
            op->kind == DEVQ_ENG_ALL_GATHER && src_off == dst_off + (size_t)ch->rank * op->count * esz;
        if (a0 < b1 && b0 < a1 && !in_place_gather)
            return devq__record_commit(q, devq__err(-EINVAL,
                                                    "%s: src and dst overlap in one buffer; use the "
                                                    "same offset (in place) or ranges apart",
                                                    fn));
    }
    if (dst)
        op->dst = (char *)dst->dptr + dst_off;
    if (src)
        op->src = (const char *)src->dptr + src_off;
    if (op->kind == DEVQ_ENG_BROADCAST)
        op->src = op->dst;
    struct buffer_use uses[2];
    uint32_t n = 0;
    if (dst && dst == src)
        uses[n++] = (struct buffer_use){ .buf = dst, .access = DEVQ_READ_WRITE };
    else {
        if (src)
            uses[n++] = (struct buffer_use){ .buf = src, .access = DEVQ_READ };
        if (dst)
            uses[n++] = (struct buffer_use){ .buf = dst,
                                             .access = op->kind == DEVQ_ENG_BROADCAST && ch->rank == op->peer
                                                           ? DEVQ_READ
                                                           : DEVQ_WRITE };
    }
    struct chan_op co = { .ch = ch, .op = *op, .what = what };
    co.span.bufs[0] = src;
    co.span.bufs[1] = dst != src ? dst : NULL;
    if (src) {
        co.span.rd_lo = (uintptr_t)op->src;
        co.span.rd_hi = co.span.rd_lo + op->count * esz * src_mult;
    }
    if (dst) {
        co.span.wr_lo = (uintptr_t)op->dst;
        co.span.wr_hi = co.span.wr_lo + op->count * esz * dst_mult;
        if (op->kind == DEVQ_ENG_BROADCAST) { /* the root reads it, the others write it */
            co.span.rd_lo = co.span.wr_lo;
            co.span.rd_hi = co.span.wr_hi;
        }
    }
    /* Only a write of the whole buffer clears a failure it holds (devq(7) FAILURES). */
    int whole = dst && dst != src && dst_off == 0 && co.span.wr_hi - co.span.wr_lo >= dst->size;
    /* A stream channel enqueues on the device stream at issue time (stream.c). */
    devq_work_fn run = ch->pl ? devq__chan_stream_run : run_op;
    devq_work_issue_fn issue = ch->pl ? devq__chan_stream_issue : NULL;
    return devq__record_commit(
        q, devq__record_work(q, run, issue, ch, &co, sizeof co, uses, n, &ch->obj, whole, fn));
}

DEVQ_API int devq_queue_all_reduce(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                   devq_buffer *src, size_t src_off, size_t count, enum devq_dtype type,
                                   enum devq_reduce op)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_ALL_REDUCE, .count = count, .type = type, .op = op };
    return record(q, ch, "devq_queue_all_reduce", "all_reduce", &e, dst, dst_off, src, src_off);
}

DEVQ_API int devq_queue_all_gather(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                   devq_buffer *src, size_t src_off, size_t count, enum devq_dtype type)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_ALL_GATHER, .count = count, .type = type };
    return record(q, ch, "devq_queue_all_gather", "all_gather", &e, dst, dst_off, src, src_off);
}

DEVQ_API int devq_queue_reduce_scatter(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                       devq_buffer *src, size_t src_off, size_t count, enum devq_dtype type,
                                       enum devq_reduce op)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_REDUCE_SCATTER, .count = count, .type = type, .op = op };
    return record(q, ch, "devq_queue_reduce_scatter", "reduce_scatter", &e, dst, dst_off, src, src_off);
}

/* The root's buffer is read, every other rank's written. */
DEVQ_API int devq_queue_broadcast(devq_queue *q, devq_channel *ch, devq_buffer *buf, size_t off, size_t count,
                                  enum devq_dtype type, int root)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_BROADCAST, .count = count, .type = type, .peer = root };
    return record(q, ch, "devq_queue_broadcast", "broadcast", &e, buf, off, NULL, 0);
}

DEVQ_API int devq_queue_send(devq_queue *q, devq_channel *ch, devq_buffer *src, size_t off, size_t count,
                             enum devq_dtype type, int peer)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_SEND, .count = count, .type = type, .peer = peer };
    return record(q, ch, "devq_queue_send", "send", &e, NULL, 0, src, off);
}

DEVQ_API int devq_queue_recv(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t off, size_t count,
                             enum devq_dtype type, int peer)
{
    struct devq_eng_op e = { .kind = DEVQ_ENG_RECV, .count = count, .type = type, .peer = peer };
    return record(q, ch, "devq_queue_recv", "recv", &e, dst, off, NULL, 0);
}
