/* Wait cycles among deferred batches: batch A waits for a value that only
 * batch B will signal, and B (or something B waits behind) waits for A.
 * Such a cycle is legal (the host may still signal one of the values, as
 * Vulkan allows), so it is not refused; it is detected as it forms, counted,
 * logged, and named when a finish or synchronize times out. */
#include "config.h"
#include <stdio.h>
#include "log.h"
#include "queue.h"
#include "signal_int.h"

#define MAX_DEPTH 16

struct step {
    struct devq_queue *q;       /* queue whose deferred head is blocked */
    struct batch *producer;     /* batch (on the next step's queue) that would signal it */
};

/* The first batch in x's deferred FIFO that would signal s >= v. */
static struct batch *producer_in(struct devq_queue *x, devq_signal *s, uint64_t v)
{
    for (struct batch *d = x->deferred; d; d = d->next)
        for (uint32_t i = d->next_op; i < d->nops; i++)
            if (d->ops[i].kind == OP_SIGNAL && d->ops[i].u.sig.s == s && d->ops[i].u.sig.v >= v)
                return d;
    return NULL;
}

static int search(struct devq_queue *start, struct step *path, int depth)
{
    struct devq_queue *c = path[depth].q;
    struct batch *h = c->deferred;
    if (!h || !h->blocked_on || depth + 1 >= MAX_DEPTH)
        return 0;
    for (struct devq_queue *x = c->dev->queues; x; x = x->next) {
        struct batch *d = producer_in(x, h->blocked_on, h->blocked_value);
        if (!d)
            continue;
        path[depth].producer = d;
        if (x == start)
            return depth + 1;
        int seen = 0;
        for (int i = 0; i <= depth; i++)
            seen |= path[i].q == x;
        if (seen)
            continue;
        path[depth + 1].q = x;
        int n = search(start, path, depth + 1);
        if (n)
            return n;
    }
    return 0;
}

int devq__cycle_check(struct devq_queue *q, char *msg, size_t cap)
{
    struct step path[MAX_DEPTH] = { { .q = q } };
    int n = search(q, path, 0);
    if (!n)
        return 0;
    size_t off = (size_t)snprintf(msg, cap, "wait cycle:");
    for (int i = 0; i < n && off < cap; i++) {
        struct batch *h = path[i].q->deferred;
        struct batch *p = path[i].producer;
        off += (size_t)snprintf(msg + off, cap - off, "%s queue %u batch %llu waits s%llu>=%llu, signalled by queue %u batch %llu",
                                i ? ", which" : "", path[i].q->number, (unsigned long long)h->seq,
                                (unsigned long long)devq__signal_id(h->blocked_on),
                                (unsigned long long)h->blocked_value, p->q->number,
                                (unsigned long long)p->seq);
    }
    return n;
}

void devq__note_cycle(struct devq_queue *q)
{
    char msg[512];
    if (devq__cycle_check(q, msg, sizeof msg) <= 0)
        return;
    atomic_fetch_add(&q->dev->stats.wait_cycles, 1);
    devq__log(DEVQ_LOG_BASIC, "%s:%d: %s (not refused: the host may still signal one of these values)",
              q->dev->info.backend, q->dev->info.ordinal, msg);
}
