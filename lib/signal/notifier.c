/* SPDX-License-Identifier: MIT */
/* The notifier thread: one per process, started on first use.
 *
 * It runs posted functions in FIFO order with no devq lock held, so a
 * callback may call anything in devq (notify again, destroy the signal,
 * post).  It sleeps on a private futex word that every post bumps (the
 * wake syscall only when it is actually asleep), and, through
 * futex_waitv, on the futex words of process-shared signals that have
 * pending registrations in this process: a `set` made by another process
 * wakes it, and it delivers what became due.  No sleep-polling. */
#include "config.h"
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include "error.h"
#include "futex.h"
#include "log.h"
#include "notifier.h"
#include "signal_impl.h"

#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#define MAX_WATCH 127   /* futex_waitv takes 128 words, one is our own */

static struct {
    pthread_mutex_t lock;
    struct devq_notifier_node *head, **tail;
    _Atomic uint32_t word;
    int sleeping;
    int started;
    struct devq_signal *watch;   /* watched shared signals (watch_next) */
    unsigned nwatch;
} N = { .lock = PTHREAD_MUTEX_INITIALIZER, .tail = &N.head };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local int on_notifier;

int devq__notifier_is_current(void)
{
    return on_notifier;
}

/* After fork only the forking thread exists: the child starts its own
 * notifier on its next post.  Posts queued in the parent stay the
 * parent's (their memory is the child's copy, never run twice). */
static void atfork_child(void)
{
    pthread_mutex_init(&N.lock, NULL);
    N.head = NULL;
    N.tail = &N.head;
    N.sleeping = 0;
    N.started = 0;
    for (struct devq_signal *s = N.watch; s; s = s->watch_next)
        s->watched = 0;
    N.watch = NULL;
    N.nwatch = 0;
}

static void init_once(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

static void run_list(struct devq_notifier_node *n)
{
    while (n) {
        struct devq_notifier_node *next = n->next;
        int owned = n->owned;
        void *self = n;
        n->fn(n->arg);          /* may free n (a notify frees itself) */
        if (owned)
            free(self);
        n = next;
    }
}

/* Deliver what became due on watched shared signals, drop the ones that
 * have nothing pending any more, and fill the futex_waitv vector. */
static unsigned scan_watched(struct futex_waitv *w)
{
    struct devq_signal *snap[MAX_WATCH];
    unsigned n = 0;
    pthread_mutex_lock(&N.lock);
    for (struct devq_signal *s = N.watch; s && n < MAX_WATCH; s = s->watch_next) {
        devq__signal_retain(s);
        snap[n++] = s;
    }
    pthread_mutex_unlock(&N.lock);

    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        struct devq_signal *s = snap[i];
        /* Read the word before looking, so a change after the look makes
         * the sleep return at once. */
        uint32_t seq = atomic_load(&s->tl->seq);
        devq__signal_fire_ready(s);
        int drop = 0;
        pthread_mutex_lock(&s->lock);
        if (!s->nheap) {
            pthread_mutex_lock(&N.lock);
            struct devq_signal **pp = &N.watch;
            while (*pp && *pp != s)
                pp = &(*pp)->watch_next;
            if (*pp) {
                *pp = s->watch_next;
                N.nwatch--;
                drop = 1;
            }
            pthread_mutex_unlock(&N.lock);
            s->watched = 0;
            atomic_fetch_sub(&s->tl->waiters, 1);
        } else {
            w[k++] = (struct futex_waitv){ .val = seq, .uaddr = (uintptr_t)&s->tl->seq,
                                           .flags = FUTEX_32 };
        }
        pthread_mutex_unlock(&s->lock);
        if (drop)
            devq__signal_release(s);   /* the watch list's reference */
        devq__signal_release(s);       /* the snapshot's */
    }
    return k;
}

static void *notifier_main(void *unused)
{
    struct futex_waitv w[MAX_WATCH + 1];
    on_notifier = 1;
    pthread_mutex_lock(&N.lock);
    for (;;) {
        if (N.head) {
            struct devq_notifier_node *list = N.head;
            N.head = NULL;
            N.tail = &N.head;
            pthread_mutex_unlock(&N.lock);
            run_list(list);
            pthread_mutex_lock(&N.lock);
            continue;
        }
        unsigned k = 0;
        if (N.watch) {
            pthread_mutex_unlock(&N.lock);
            k = scan_watched(w + 1);
            pthread_mutex_lock(&N.lock);
            if (N.head)
                continue;
        }
        uint32_t seen = atomic_load(&N.word);
        N.sleeping = 1;
        pthread_mutex_unlock(&N.lock);
        if (k) {
            w[0] = (struct futex_waitv){ .val = seen, .uaddr = (uintptr_t)&N.word,
                                         .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
            /* Watched pages are shared: another process may change one
             * without waking us, so look again now and then. */
            devq__futex_waitv(w, k + 1, devq__shared_slice(DEVQ_NO_DEADLINE));
        } else {
            devq__futex_wait((const uint32_t *)&N.word, seen, DEVQ_NO_DEADLINE, 0);
        }
        pthread_mutex_lock(&N.lock);
        N.sleeping = 0;
    }
    return unused;
}

/* Caller holds N.lock. */
static int start_locked(void)
{
    if (N.started)
        return 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int r = pthread_create(&t, &attr, notifier_main, NULL);
    pthread_attr_destroy(&attr);
    if (r)
        return devq__err(-r, "devq notifier: cannot start its thread: pthread_create "
                         "returned %d", r);
    N.started = 1;
    return 0;
}

/* Caller holds N.lock; returns whether the thread must be woken. */
static int poke_locked(void)
{
    atomic_fetch_add(&N.word, 1);
    return N.sleeping;
}

/* `must_queue`: queue n even when the thread cannot be started (a notify
 * being delivered has nowhere else to go: the next post retries starting
 * the thread, which then runs everything in order).  Otherwise a failed
 * start queues nothing and returns the error, so the caller may fall back
 * without the function ever running twice. */
static int post_node(struct devq_notifier_node *n, int must_queue)
{
    pthread_once(&once, init_once);
    n->next = NULL;
    pthread_mutex_lock(&N.lock);
    int r = start_locked();
    int wake = 0;
    if (!r || must_queue) {
        *N.tail = n;
        N.tail = &n->next;
        wake = poke_locked();
    }
    pthread_mutex_unlock(&N.lock);
    if (wake)
        devq__futex_wake((const uint32_t *)&N.word, 1, 0);
    return r;
}

void devq__notifier_post_node(struct devq_notifier_node *n)
{
    if (post_node(n, 1))
        devq__log(DEVQ_LOG_BASIC, "%s", devq__errmsg_peek());
}

int devq__notifier_post(void (*fn)(void *arg), void *arg)
{
    struct devq_notifier_node *n = malloc(sizeof *n);
    if (!n)
        return devq__err(-ENOMEM, "devq notifier: out of memory posting a callback");
    n->fn = fn;
    n->arg = arg;
    n->owned = 1;
    int r = post_node(n, 0);
    if (r)
        free(n);
    return r;
}

void devq__notifier_poke(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&N.lock);
    int wake = N.started && poke_locked();
    pthread_mutex_unlock(&N.lock);
    if (wake)
        devq__futex_wake((const uint32_t *)&N.word, 1, 0);
}

int devq__notifier_watch(struct devq_signal *s)
{
    if (s->watched)
        return 0;
    if (!devq__signal_have_waitv_kernel())
        return devq__err(-ENOTSUP, "%s: notify, wait_fd and many-signal waits on a "
                         "process-shared signal need futex_waitv (Linux 5.16 or later)",
                         devq__signal_label(s).s);
    pthread_once(&once, init_once);
    pthread_mutex_lock(&N.lock);
    int r = start_locked();
    if (!r && N.nwatch >= MAX_WATCH)
        r = devq__err(-ENOTSUP, "%s: more than %d process-shared signals have "
                      "pending notifies or wait_fds in this process", devq__signal_label(s).s,
                      MAX_WATCH);
    int wake = 0;
    if (!r) {
        devq__signal_retain(s);
        /* Count the notifier as a waiter before it reads the word, so a
         * `set` in another process makes the wake syscall. */
        atomic_fetch_add(&s->tl->waiters, 1);
        s->watched = 1;
        s->watch_next = N.watch;
        N.watch = s;
        N.nwatch++;
        wake = poke_locked();
    }
    pthread_mutex_unlock(&N.lock);
    if (wake)
        devq__futex_wake((const uint32_t *)&N.word, 1, 0);
    return r;
}
