/* SPDX-License-Identifier: MIT */
/* devq_signal_wait: check, spin briefly, then sleep on the futex word.
 *
 * No lost wakeups: a waiter counts itself in tl->waiters, then reads the
 * futex word, then the value; `set` writes the value, then reads
 * tl->waiters, and only when it counts someone bumps the word and wakes
 * (all seq_cst; a shared signal's `set` bumps the word always).  Either
 * `set` sees the waiter and wakes it, or the waiter sees the new value;
 * a wake that races the sleep makes FUTEX_WAIT return EAGAIN because the
 * word changed.
 *
 * No thundering herd: the waiter sleeps with the bitset bucket of its
 * wanted value, and `set` wakes only the buckets of the values it passed. */
#include "config.h"
#include <errno.h>
#include "error.h"
#include "futex.h"
#include "signal_impl.h"

/* Waits that came back from the futex and found their value not reached
 * (a bucket shared with another value, or a race with a `set`): tests
 * assert it stays 0 when waiters wait for distinct values. */
_Atomic uint64_t devq__signal_early_wakes;

/* The spin budget is time, in ns, per signal, up to SPIN_MAX_NS.  A wait
 * that spun in vain but was satisfied soon after it went to sleep raises
 * the budget to cover that delay: a hot hand-off (ping-pong, a queue
 * completing batches back to back) then settles into spinning and skips a
 * wake syscall and a wake-up per hand-off.  But when
 * spins keep failing even so (SPIN_GIVE_UP in a row) the budget halves on
 * every further failure: that is the setter needing this very CPU (more
 * runnable threads than cores, where spinning only delays it) or a signal
 * that is usually slow (a GPU batch), and then a wait costs almost no CPU
 * before it sleeps.  Every SPIN_RETRY failures it tries again with at
 * least SPIN_RETRY_NS, in case the machine got quieter (a few wasted
 * microseconds per SPIN_RETRY waits when it did not). */
#define SPIN_MAX_NS 30000
#define SPIN_FLOOR_NS 100
#define SPIN_CHECK 32      /* pauses between clock reads */
#define SPIN_GIVE_UP 3     /* failed spins in a row before shrinking */
#define SPIN_RETRY 256     /* failed spins in a row before trying again */
#define SPIN_RETRY_NS 8000 /* the budget a retry starts with */

/* 1 reached, a negative failure, 0 not yet.  A shared page is validated
 * (signal_page.c): corruption is a failure like any other here. */
static inline __attribute__((always_inline)) int probe(const struct devq_signal *s, uint64_t want)
{
    if (__builtin_expect(s->shared, 0))
        return devq__shared_probe(s, want);
    int st = atomic_load_explicit(&s->tl->status, memory_order_acquire);
    if (st)
        return st;
    return atomic_load_explicit(&s->tl->value, memory_order_acquire) >= want;
}

static int spin(struct devq_signal *s, uint64_t want, uint64_t start, uint64_t deadline)
{
    uint64_t budget = (uint64_t)atomic_load_explicit(&s->spin_budget, memory_order_relaxed);
    if (!budget)
        return 0;
    uint64_t end = start + budget < deadline ? start + budget : deadline;
    for (;;) {
        for (int i = 0; i < SPIN_CHECK; i++) {
            int r = probe(s, want);
            if (r)
                return r;
            devq__cpu_relax();
        }
        if (devq__now_ns() >= end)
            return 0;
    }
}

/* Whether this wait needs the clock: to spin, or because adapt may grow
 * the budget from how long the wait took.  A signal that gave up spinning
 * pays for no clock read until its next retry. */
static int timed(struct devq_signal *s)
{
    int fails = atomic_load_explicit(&s->spin_fails, memory_order_relaxed);
    return atomic_load_explicit(&s->spin_budget, memory_order_relaxed) > 0 || fails < SPIN_GIVE_UP ||
           (fails + 1) % SPIN_RETRY == 0;
}

static void adapt(struct devq_signal *s, uint64_t waited)
{
    int budget = atomic_load_explicit(&s->spin_budget, memory_order_relaxed);
    /* A heuristic: a lost update between two waiters does no harm, so a
     * plain load and store (no locked instruction) is enough. */
    int fails = atomic_load_explicit(&s->spin_fails, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->spin_fails, fails, memory_order_relaxed);
    uint64_t next;
    if (fails % SPIN_RETRY == 0) {
        /* Try again, long enough to cover a sleeping partner's wake-up:
         * two threads handing off both need to spin for either to win. */
        next = waited + waited / 4 > SPIN_RETRY_NS ? waited + waited / 4 : SPIN_RETRY_NS;
        atomic_store_explicit(&s->spin_fails, 0, memory_order_relaxed);
    } else if (waited <= SPIN_MAX_NS && fails <= SPIN_GIVE_UP) {
        next = waited + waited / 4 > (uint64_t)budget ? waited + waited / 4 : (uint64_t)budget;
    } else {
        next = (uint64_t)budget / 2;
    }
    if (next > SPIN_MAX_NS)
        next = SPIN_MAX_NS;
    if (next < SPIN_FLOOR_NS)
        next = 0; /* too short to catch anything: skip the clock reads too */
    if ((int)next != budget)
        atomic_store_explicit(&s->spin_budget, (int)next, memory_order_relaxed);
}

/* 1 reached, a negative failure, 0 timed out.  On a shared signal the
 * sleep is cut into slices: another process may change the page (or
 * zero the waiter count) without waking anyone. */
static int sleep_until(struct devq_signal *s, uint64_t want, uint64_t deadline)
{
    struct devq_timeline *tl = s->tl;
    int r;
    atomic_fetch_add(&tl->waiters, 1);
    for (;;) {
        uint32_t seq = atomic_load(&tl->seq);
        r = probe(s, want);
        if (r)
            break;
        uint64_t until = s->shared ? devq__shared_slice(deadline) : deadline;
        if (devq__futex_wait_bits((const uint32_t *)&tl->seq, seq, devq__signal_bucket(want), until,
                                  s->shared) == -ETIMEDOUT) {
            if (until != deadline) {              /* a re-check of the page */
                devq__signal_peer_check(s, want); /* and of its producers */
                continue;
            }
            r = probe(s, want); /* 0: timed out */
            break;
        }
        if (atomic_load(&tl->seq) != seq && !probe(s, want))
            atomic_fetch_add_explicit(&devq__signal_early_wakes, 1, memory_order_relaxed);
    }
    atomic_fetch_sub(&tl->waiters, 1);
    return r;
}

DEVQ_API int devq_signal_wait(devq_signal *s, uint64_t value, uint64_t timeout_ns)
{
    int r = devq__signal_check_fast(s, "devq_signal_wait");
    if (r)
        return r;
    r = probe(s, value);
    if (!r && timeout_ns) {
        uint64_t deadline = devq__deadline(timeout_ns);
        /* A waiter confined to one CPU would only keep its setter off
         * that CPU: it sleeps at once and leaves the budget alone. */
        if (!devq__spin_can_help()) {
            r = sleep_until(s, value, deadline);
            goto out;
        }
        uint64_t start = timed(s) ? devq__now_ns() : 0;
        r = spin(s, value, start, deadline);
        if (r > 0 && atomic_load_explicit(&s->spin_fails, memory_order_relaxed))
            atomic_store_explicit(&s->spin_fails, 0, memory_order_relaxed);
        if (!r) {
            r = sleep_until(s, value, deadline);
            if (r > 0 && start)
                adapt(s, devq__now_ns() - start);
            else if (r > 0) /* not spinning: only count towards a retry */
                atomic_store_explicit(&s->spin_fails,
                                      atomic_load_explicit(&s->spin_fails, memory_order_relaxed) + 1,
                                      memory_order_relaxed);
        }
    }
out:
    if (r > 0)
        return 0;
    if (r == 0)
        return devq__signal_timeout_err(s, value);
    return devq__signal_fail_err(s, r);
}
