/* SPDX-License-Identifier: MIT */
/* Wait cycles: queue A is blocked on a value that only queue B will
 * signal, and B (or something B waits behind) waits for A.  A queue is
 * blocked by its deferred head (bridged through the host) or by its
 * earliest device-side value wait still pending.  Such a cycle is legal
 * (the host may still signal one of the values, as Vulkan allows), so it
 * is not refused; it is detected as it forms, counted, logged, and named
 * when a finish or synchronize times out. */
#include "config.h"
#include <stdio.h>
#include "batch.h"
#include "blocker.h"
#include "buffer_fail.h"
#include "cycle.h"
#include "hazard.h"
#include "log.h"
#include "queue.h"
#include "signal_int.h"
#include "value_wait.h"

#define MAX_DEPTH 16

struct step {
    struct devq_queue *q;
    struct devq_blocker why;
    uint64_t producer_seq; /* 0: an issued batch (known by stream position) */
};

/* Would queue x signal s >= v only after what blocks x?  Deferred
 * batches (behind x's deferred head) first, their number is known; then
 * issued batches (via the tracker), which are held only by a device-side
 * wait issued before them: an issued producer ahead of x's blocker runs
 * regardless, and is no part of a cycle. */
static int produces(struct devq_queue *x, devq_signal *s, uint64_t v, uint64_t *seq)
{
    for (struct batch *d = x->deferred; d; d = d->next)
        for (uint32_t i = d->issue.next_op; i < d->rec.nops; i++)
            if (d->rec.ops[i].kind == OP_SIGNAL && d->rec.ops[i].u.sig.s == s && d->rec.ops[i].u.sig.v >= v) {
                *seq = d->seq;
                return 1;
            }
    *seq = 0;
    devq_signal *ws;
    uint64_t wv, wseq, from = 0;
    if (devq__value_wait_blocker(x, &ws, &wv, &wseq, &from))
        ; /* producers issued from the wait's unit on */
    else if (x->deferred)
        return 0; /* only its deferred head blocks x */
    return devq__tracker_producer_on(x->dev->tracker, s, v, x->stream.id, from);
}

/* Depth-first along the blockers from path[0]; a queue met again closes
 * a cycle: the start itself, or one that path[0] is stuck behind
 * (*loop_at: where the cycle starts on the path).  Returns the steps. */
static int search(struct step *path, int depth, int *loop_at)
{
    struct devq_queue *c = path[depth].q;
    if (depth + 1 >= MAX_DEPTH || !devq__queue_blocker(c, &path[depth].why))
        return 0;
    for (struct devq_queue *x = c->dev->qs->queues; x; x = x->next) {
        if (x == c)
            continue;
        if (path[depth].why.behind
                ? x != path[depth].why.behind
                : !produces(x, path[depth].why.s, path[depth].why.v, &path[depth].producer_seq))
            continue;
        path[depth + 1].q = x;
        for (int i = 0; i <= depth; i++)
            if (path[i].q == x) {
                *loop_at = i;
                return depth + 1;
            }
        int n = search(path, depth + 1, loop_at);
        if (n)
            return n;
    }
    return 0;
}

/* The same cycle, found again from a later submit or from another of its
 * queues, must not count twice: its identity is the set of blocked units
 * (queue, batch) on it, in any rotation. */
static uint64_t cycle_id(const struct step *path, int from, int n)
{
    uint64_t id = (uint64_t)(n - from);
    for (int i = from; i < n; i++) {
        uint64_t h = ((uint64_t)path[i].q->name.number << 40) ^ path[i].why.seq ^ (path[i].why.cursor << 20);
        h *= 0x9e3779b97f4a7c15ull;
        id ^= h ^ (h >> 29);
    }
    return id;
}

static int find_cycle(struct devq_queue *q, struct step *path, int *loop_at)
{
    path[0] = (struct step){ .q = q };
    *loop_at = 0;
    return search(path, 0, loop_at);
}

int devq__cycle_check(struct devq_queue *q, char *msg, size_t cap)
{
    struct step path[MAX_DEPTH];
    int loop_at, n = find_cycle(q, path, &loop_at);
    if (!n)
        return 0;
    /* A queue stuck behind a cycle it is not on names the way in too. */
    size_t off = (size_t)snprintf(msg, cap, loop_at ? "stuck behind a wait cycle:" : "wait cycle:");
    for (int i = 0; i < n && off < cap; i++) {
        const struct step *st = &path[i];
        char by[DEVQ_LABEL_MAX + 32];
        if (st->why.hz.owner) {
            off += (size_t)snprintf(
                msg + off, cap - off, "%s %s batch %llu %s %s after %s batch %llu", i ? ", which" : "",
                devq__queue_label(st->q).s, (unsigned long long)st->why.seq,
                st->why.hz.mine & DEVQ_WRITE ? "writes" : "reads", devq__buffer_label(st->why.hz.buf).s,
                devq__queue_label(st->why.hz.owner->q).s, (unsigned long long)st->why.hz.owner->seq);
            continue;
        }
        if (st->why.behind) {
            off += (size_t)snprintf(msg + off, cap - off, "%s %s is ordered after %s", i ? ", which" : "",
                                    devq__queue_label(st->q).s, devq__queue_label(st->why.behind).s);
            continue;
        }
        if (st->producer_seq)
            snprintf(by, sizeof by, "%s batch %llu", devq__queue_label(path[i + 1].q).s,
                     (unsigned long long)st->producer_seq);
        else
            snprintf(by, sizeof by, "%s", devq__queue_label(path[i + 1].q).s);
        off +=
            (size_t)snprintf(msg + off, cap - off, "%s %s batch %llu waits for %s >= %llu%s, signalled by %s",
                             i ? ", which" : "", devq__queue_label(st->q).s, (unsigned long long)st->why.seq,
                             devq__signal_label(st->why.s).s, (unsigned long long)st->why.v,
                             st->why.on_device ? " (on the device)" : "", by);
    }
    return n;
}

void devq__note_cycle(struct devq_queue *q)
{
    struct step path[MAX_DEPTH];
    int loop_at, n = find_cycle(q, path, &loop_at);
    if (!n)
        return;
    uint64_t id = cycle_id(path, loop_at, n);
    if (id == q->dev->qs->last_cycle)
        return; /* already counted and logged */
    q->dev->qs->last_cycle = id;
    char msg[512];
    if (devq__cycle_check(q, msg, sizeof msg) <= 0)
        return;
    atomic_fetch_add(&q->dev->stats.wait_cycles, 1);
    devq__log(DEVQ_LOG_BASIC, "%s:%d: %s (not refused: the host may still signal one of these values)",
              q->dev->info.backend, q->dev->info.ordinal, msg);
}
