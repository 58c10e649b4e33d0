/* SPDX-License-Identifier: MIT */
/* The guard decorator: catch memory misuse and report it, never crash.
 *
 * Each allocation gets a front and a back canary (bytes of 0xCA) around
 * the user's bytes; the memory must be host-visible so that lib can read
 * them.  At free the canaries are checked and the user's bytes poisoned
 * (0xDD), so a later read of freed memory sees an obvious pattern.
 *
 * Stream order.  A free on a stream happens before the work queued on it
 * has run, so the host cannot look at the memory yet.  The check and the
 * poisoning run in a host callback queued on that stream at the free:
 * when the stream gets there, nothing before it still touches the block
 * and nothing after it can start until the callback returned.  When the
 * stream was idle the callback has run before the free returns and the
 * free reports an overrun itself; otherwise the next reap reports it.
 * Canaries of a stream allocation are written with a stream-ordered fill
 * for the same reason.
 *
 * Double and foreign frees.  Freed blocks stay in a quarantine (per
 * stream, the last QUARANTINE of them) before the inner resource may hand
 * their address out again, and the last HISTORY releases are remembered,
 * so a second free names the stream and tag of the first one.  A block
 * whose poison changed while quarantined was written after its free: that
 * use after free is reported (both streams named) by the next reap.  Blocks
 * leave a stream's quarantine from a later free on that stream (the only
 * place lib may queue work on it) or when the stream goes away. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "device.h"
#include "error.h"
#include "log.h"
#include "mem_resource.h"

#define FRONT 256u /* keeps the user pointer as aligned as the inner one */
#define BACK 64u
#define CANARY 0xCA
#define POISON 0xDD
#define QUARANTINE 64u
#define HISTORY 1024u

enum { R_LIVE, R_QUARANTINED };

struct rec {
    struct rec *hnext, *qnext;
    char *inner_ptr, *host; /* the inner allocation (with canaries) */
    size_t bytes;           /* the user's bytes */
    uint32_t tag, alloc_sid, free_sid, free_tag;
    int state;
    _Atomic int check_done; /* the stream-ordered check ran */
    int check_err;
    char check_msg[200];
    struct guard *g;
};

struct quarantine {
    struct rec *head, *tail;
    size_t n;
};

struct history {
    void *user;
    size_t bytes;
    uint32_t sid, tag;
};

struct guard {
    devq_resource *inner; /* first: see struct devq_decorator */
    struct devq_device *dev;
    pthread_mutex_t lock;
    pthread_cond_t cv; /* stream checks finishing */
    struct rec **buckets;
    size_t nbuckets, nrecs;
    struct quarantine *q; /* [0] synchronous, [1 + id] */
    size_t nq;
    struct history hist[HISTORY];
    size_t hpos;
    int report_err; /* found by a stream check, for the next reap */
    char report[256];
    int inflight; /* stream checks queued and not yet run */
};

static void *user_of(const struct rec *r)
{
    return r->inner_ptr + FRONT;
}

/* ---- pointer -> record ---- */

static size_t hash_of(const struct guard *g, const void *p)
{
    return (size_t)((((uint64_t)(uintptr_t)p >> 6) * 0x9E3779B97F4A7C15ull) >> 32) & (g->nbuckets - 1);
}

static int rec_insert(struct guard *g, struct rec *r)
{
    if (g->nrecs >= g->nbuckets) {
        size_t n = g->nbuckets ? g->nbuckets * 2 : 256;
        struct rec **nb = calloc(n, sizeof *nb);
        if (!nb && !g->nbuckets)
            return -ENOMEM;
        if (nb) {
            struct rec **old = g->buckets;
            size_t oldn = g->nbuckets;
            g->buckets = nb;
            g->nbuckets = n;
            for (size_t i = 0; i < oldn; i++)
                for (struct rec *x = old[i], *nx; x; x = nx) {
                    nx = x->hnext;
                    size_t h = hash_of(g, user_of(x));
                    x->hnext = nb[h];
                    nb[h] = x;
                }
            free(old);
        }
    }
    size_t h = hash_of(g, user_of(r));
    r->hnext = g->buckets[h];
    g->buckets[h] = r;
    g->nrecs++;
    return 0;
}

static struct rec *rec_find(struct guard *g, const void *user)
{
    if (!g->nbuckets)
        return NULL;
    for (struct rec *r = g->buckets[hash_of(g, user)]; r; r = r->hnext)
        if (user_of(r) == user)
            return r;
    return NULL;
}

static void rec_remove(struct guard *g, struct rec *r)
{
    struct rec **pp = &g->buckets[hash_of(g, user_of(r))];
    while (*pp && *pp != r)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = r->hnext;
        g->nrecs--;
    }
}

/* ---- canaries ---- */

static long first_bad(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != CANARY)
            return (long)i;
    return -1;
}

/* Check both canaries and poison the user's bytes; host access only. */
static int check_and_poison(struct rec *r, char *msg, size_t cap)
{
    const unsigned char *h = (const unsigned char *)r->host;
    long front = first_bad(h, FRONT), back = first_bad(h + FRONT + r->bytes, BACK);
    memset(r->host + FRONT, POISON, r->bytes);
    if (front < 0 && back < 0)
        return 0;
    if (back >= 0)
        snprintf(msg, cap,
                 "guard: buffer overrun at %p (%zu bytes, tag %u, allocated on "
                 "stream %d): back canary overwritten at byte %zu past the end",
                 user_of(r), r->bytes, r->tag, (int)r->alloc_sid, (size_t)back);
    else
        snprintf(msg, cap,
                 "guard: buffer underrun at %p (%zu bytes, tag %u, allocated on "
                 "stream %d): front canary overwritten %ld bytes before the start",
                 user_of(r), r->bytes, r->tag, (int)r->alloc_sid, (long)FRONT - front);
    return -EFAULT;
}

static int stream_check(void *arg, int status)
{
    struct rec *r = arg;
    struct guard *g = r->g;
    r->check_err = check_and_poison(r, r->check_msg, sizeof r->check_msg);
    pthread_mutex_lock(&g->lock);
    if (r->check_err && !g->report_err) {
        g->report_err = r->check_err;
        snprintf(g->report, sizeof g->report, "%s", r->check_msg);
    }
    if (r->check_err)
        devq__log(DEVQ_LOG_BASIC, "%s", r->check_msg);
    atomic_store(&r->check_done, 1);
    g->inflight--;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->lock);
    return 0; /* the user's stream carries on: a report is not a stream failure */
}

/* ---- quarantine ---- */

static struct quarantine *quarantine_of(struct guard *g, uint32_t sid, int create)
{
    size_t i = sid == DEVQ_STREAM_NONE ? 0 : (size_t)sid + 1;
    if (i >= g->nq) {
        if (!create)
            return NULL;
        size_t n = g->nq ? g->nq : 8;
        while (n <= i)
            n *= 2;
        struct quarantine *nq = realloc(g->q, n * sizeof *nq);
        if (!nq)
            return NULL;
        memset(nq + g->nq, 0, (n - g->nq) * sizeof *nq);
        g->q = nq;
        g->nq = n;
    }
    return &g->q[i];
}

/* A block leaving the quarantine must still be all poison: a changed
 * byte means something wrote to it after its free.  Large blocks are
 * sampled at both ends to keep the check cheap. */
#define UAF_SAMPLE 4096u

static long poison_changed(const unsigned char *p, size_t n)
{
    size_t head = n <= 2 * UAF_SAMPLE ? n : UAF_SAMPLE;
    for (size_t i = 0; i < head; i++)
        if (p[i] != POISON)
            return (long)i;
    for (size_t i = n - (n - head < UAF_SAMPLE ? n - head : UAF_SAMPLE); i < n; i++)
        if (p[i] != POISON)
            return (long)i;
    return -1;
}

static void check_use_after_free(struct guard *g, struct rec *r)
{
    if (r->check_err)
        return; /* canaries already reported; poison may be partial */
    long off = poison_changed((const unsigned char *)r->host + FRONT, r->bytes);
    if (off < 0)
        return;
    char msg[256];
    snprintf(msg, sizeof msg,
             "guard: use after free of %p (%zu bytes, tag %u): written after "
             "its free on stream %d (allocated on stream %d), first changed byte at +%ld",
             user_of(r), r->bytes, r->tag, (int)r->free_sid, (int)r->alloc_sid, off);
    devq__log(DEVQ_LOG_BASIC, "%s", msg);
    if (!g->report_err) {
        g->report_err = -EFAULT;
        snprintf(g->report, sizeof g->report, "%s", msg);
    }
}

/* Hand the oldest quarantined blocks of q to the inner resource until at
 * most `keep` remain; st is the stream they were freed on (NULL for sync
 * ones).  A block whose stream check has not run yet stops the release. */
static void release(struct guard *g, struct quarantine *q, size_t keep, devq_stream_ref *st)
{
    while (q->n > keep && q->head && atomic_load(&q->head->check_done)) {
        struct rec *r = q->head;
        q->head = r->qnext;
        if (!q->head)
            q->tail = NULL;
        q->n--;
        check_use_after_free(g, r);
        rec_remove(g, r);
        g->hist[g->hpos++ % HISTORY] = (struct history){ user_of(r), r->bytes, r->free_sid, r->free_tag };
        int e = devq_resource_deallocate(g->inner, r->inner_ptr, r->bytes + FRONT + BACK, st, r->free_tag);
        if (e < 0)
            devq__log(DEVQ_LOG_BASIC, "guard: inner resource refused the free of %p: %s", user_of(r),
                      devq__errmsg_peek());
        free(r);
    }
}

/* ---- allocate / deallocate ---- */

static int guard_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                          void **hptr)
{
    struct guard *g = state;
    if (bytes > SIZE_MAX - FRONT - BACK)
        return devq__err(-ENOMEM, "guard: %zu bytes is too large", bytes);
    struct rec *r = calloc(1, sizeof *r);
    if (!r)
        return devq__err(-ENOMEM, "guard: out of host memory");
    void *d, *h;
    int e = devq_resource_allocate(g->inner, bytes + FRONT + BACK, st, tag, &d, &h);
    if (e < 0) {
        free(r);
        return e;
    }
    if (!h) {
        devq_resource_deallocate(g->inner, d, bytes + FRONT + BACK, st, tag);
        free(r);
        return devq__err(-ENOTSUP,
                         "guard: '%s' returned memory that is not host-visible; "
                         "the guard cannot check it",
                         devq_resource_name(g->inner));
    }
    *r = (struct rec){ .inner_ptr = d,
                       .host = h,
                       .bytes = bytes,
                       .tag = tag,
                       .alloc_sid = devq__sid(st),
                       .state = R_LIVE,
                       .g = g };
    atomic_store(&r->check_done, 1);
    if (st) {
        const struct devq_backend_ops *ops = g->dev->ops;
        e = ops->fill(st->pl, d, CANARY, FRONT);
        if (e == 0)
            e = ops->fill(st->pl, (char *)d + FRONT + bytes, CANARY, BACK);
    } else {
        memset(h, CANARY, FRONT);
        memset((char *)h + FRONT + bytes, CANARY, BACK);
        e = 0;
    }
    pthread_mutex_lock(&g->lock);
    if (e == 0)
        e = rec_insert(g, r);
    pthread_mutex_unlock(&g->lock);
    if (e < 0) {
        devq_resource_deallocate(g->inner, d, bytes + FRONT + BACK, st, tag);
        free(r);
        return devq__err(e, "guard: could not set up the canaries of a %zu-byte block", bytes);
    }
    *dptr = (char *)d + FRONT;
    *hptr = (char *)h + FRONT;
    return 0;
}

static int refuse_free(struct guard *g, void *ptr, struct rec *r)
{
    if (r)
        return devq__err(-EINVAL,
                         "guard: double free of %p (%zu bytes, tag %u): first freed "
                         "on stream %d with tag %u",
                         ptr, r->bytes, r->tag, (int)r->free_sid, r->free_tag);
    for (size_t i = 0; i < HISTORY && i < g->hpos; i++) {
        struct history *h = &g->hist[(g->hpos - 1 - i) % HISTORY];
        if (h->user == ptr)
            return devq__err(-EINVAL,
                             "guard: double free of %p (%zu bytes): first freed on "
                             "stream %d with tag %u",
                             ptr, h->bytes, (int)h->sid, h->tag);
    }
    return devq__err(-EINVAL,
                     "guard: free of %p, which this resource never allocated "
                     "(foreign pointer) or freed long ago",
                     ptr);
}

static int guard_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct guard *g = state;
    pthread_mutex_lock(&g->lock);
    struct rec *r = rec_find(g, ptr);
    if (!r || r->state != R_LIVE) {
        int e = refuse_free(g, ptr, r);
        pthread_mutex_unlock(&g->lock);
        return e;
    }
    if (bytes != r->bytes) {
        pthread_mutex_unlock(&g->lock);
        return devq__err(-EINVAL,
                         "guard: free of %p with %zu bytes, but it was allocated "
                         "with %zu",
                         ptr, bytes, r->bytes);
    }
    struct quarantine *q = quarantine_of(g, devq__sid(st), 1);
    if (!q) {
        pthread_mutex_unlock(&g->lock);
        return devq__err(-ENOMEM, "guard: out of host memory");
    }
    r->state = R_QUARANTINED;
    r->free_sid = devq__sid(st);
    r->free_tag = tag;
    int e = 0;
    char msg[200];
    if (!st) {
        e = check_and_poison(r, msg, sizeof msg);
    } else {
        atomic_store(&r->check_done, 0);
        g->inflight++;
        pthread_mutex_unlock(&g->lock);
        int he = g->dev->ops->host_fn(st->pl, stream_check, r);
        pthread_mutex_lock(&g->lock);
        if (he < 0) {
            /* No callback: the block can never be known idle, keep it out. */
            g->inflight--;
            r->qnext = NULL;
            pthread_mutex_unlock(&g->lock);
            return devq__err(he,
                             "guard: could not queue the check of %p on stream %u; "
                             "the block stays out of use",
                             ptr, st->id);
        }
        if (atomic_load(&r->check_done) && r->check_err) {
            /* The stream was idle: report now, not at the next reap. */
            e = r->check_err;
            snprintf(msg, sizeof msg, "%s", r->check_msg);
            if (g->report_err && !strcmp(g->report, r->check_msg))
                g->report_err = 0;
        }
    }
    r->qnext = NULL;
    if (q->tail)
        q->tail->qnext = r;
    else
        q->head = r;
    q->tail = r;
    q->n++;
    release(g, q, QUARANTINE, st);
    pthread_mutex_unlock(&g->lock);
    if (e < 0) {
        devq__log(DEVQ_LOG_BASIC, "%s", msg);
        return devq__err_str(e, msg);
    }
    return 0;
}

/* ---- the rest ---- */

static int guard_reap(void *state)
{
    struct guard *g = state;
    pthread_mutex_lock(&g->lock);
    int e = g->report_err;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", g->report);
    g->report_err = 0;
    pthread_mutex_unlock(&g->lock);
    int r = devq__fwd_reap(state);
    if (e < 0)
        return devq__err_str(e, msg);
    return r;
}

/* Wait (bounded) for the stream checks of q to run. */
static void wait_checks(struct guard *g, struct quarantine *q)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)(DEVQ_FENCE_SETTLE_NS / 1000000000ull);
    for (struct rec *r = q->head; r; r = r->qnext)
        while (!atomic_load(&r->check_done))
            if (pthread_cond_timedwait(&g->cv, &g->lock, &dl) == ETIMEDOUT)
                return;
}

static void guard_stream_gone(void *state, devq_stream_ref *st)
{
    struct guard *g = state;
    pthread_mutex_lock(&g->lock);
    struct quarantine *q = quarantine_of(g, st->id, 0);
    if (q) {
        wait_checks(g, q);
        release(g, q, 0, st);
        /* Checks that never ran keep their blocks out of circulation. */
        if (q->n)
            devq__log(DEVQ_LOG_BASIC,
                      "guard: %zu blocks freed on stream %u were never "
                      "checked; they stay out of use",
                      q->n, st->id);
        q->head = q->tail = NULL;
        q->n = 0;
    }
    pthread_mutex_unlock(&g->lock);
    devq__fwd_stream_gone(state, st);
}

static void guard_destroy(void *state)
{
    struct guard *g = state;
    pthread_mutex_lock(&g->lock);
    /* Streams are gone: what is left of their quarantines is idle. */
    for (size_t i = 0; i < g->nq; i++) {
        wait_checks(g, &g->q[i]);
        release(g, &g->q[i], 0, NULL);
    }
    int busy = g->inflight;
    pthread_mutex_unlock(&g->lock);
    if (busy) {
        /* A callback may still run and touch this state: leak it rather
         * than let it write into freed memory. */
        devq__log(DEVQ_LOG_BASIC,
                  "guard: %d stream checks never ran; keeping the guard's "
                  "state",
                  busy);
        return;
    }
    for (size_t i = 0; i < g->nbuckets; i++)
        for (struct rec *r = g->buckets[i], *nx; r; r = nx) {
            nx = r->hnext;
            free(r);
        }
    devq__resource_free(g->inner);
    free(g->buckets);
    free(g->q);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

static uint64_t guard_outstanding(void *state)
{
    struct guard *g = state;
    pthread_mutex_lock(&g->lock);
    uint64_t n = 0;
    for (size_t i = 0; i < g->nbuckets; i++)
        for (struct rec *r = g->buckets[i]; r; r = r->hnext)
            if (r->state == R_LIVE)
                n += r->bytes;
    pthread_mutex_unlock(&g->lock);
    return n;
}

static const struct devq_resource_ops guard_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "guard",
    .allocate = guard_allocate,
    .deallocate = guard_deallocate,
    .bytes_outstanding = guard_outstanding,
    .reap_pending = guard_reap,
    .supports_use_tracking = devq__fwd_supports,
    .prepare_use = devq__fwd_prepare,
    .finish_use = devq__fwd_finish,
    .trim = devq__fwd_trim,
    .stream_gone = guard_stream_gone,
    .stats = devq__fwd_stats,
    .destroy = guard_destroy,
};

DEVQ_API int devq_resource_guard(devq_resource *inner, devq_resource **out)
{
    int r = devq__resource_check_inner(inner, "devq_resource_guard");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_resource_guard: out is NULL");
    struct devq_device *dev = inner->dev;
    if (!(dev->info.caps & DEVQ_CAP_HOST_VISIBLE))
        return devq__err(-ENOTSUP,
                         "devq_resource_guard: backend '%s' memory is not "
                         "host-visible, so canaries cannot be checked; unset DEVQ_MEM_GUARD",
                         dev->ops->name ? dev->ops->name : "?");
    struct guard *g = calloc(1, sizeof *g);
    if (!g)
        return devq__err(-ENOMEM, "devq_resource_guard: out of host memory");
    g->inner = inner;
    g->dev = dev;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cv, NULL);
    r = devq__resource_new(dev, &guard_ops, g, DEVQ_RES_GUARD, inner, out);
    if (r < 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->lock);
        free(g);
    }
    return r;
}
