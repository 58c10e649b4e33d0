/* SPDX-License-Identifier: MIT */
/* The notifier thread: one per process, started on first use.
 *
 * It runs posted functions in FIFO order with no devq lock held, so a
 * callback may call anything in devq (notify again, destroy the signal,
 * post).  It sleeps on a private futex word that every post bumps (the
 * wake syscall only when it is actually asleep), and, through
 * futex_waitv, on the futex words of process-shared signals that have
 * pending registrations in this process: a `set` made by another process
 * wakes it, and it delivers what became due.  No sleep-polling.
 *
 * futex_waitv takes 128 words, so one thread watches at most 127 pages
 * (one word is its own).  The watched signals are kept in groups of 127:
 * group 0 is the notifier's, each further group has a watcher thread of
 * its own, started when a registration needs the room (and, like the
 * notifier, that registration's error when it cannot start).  A watcher
 * only delivers what became due on its pages (devq__signal_fire_ready):
 * callbacks still go to the notifier, fds and wakers are done inline. */
#include "config.h"
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "futex.h"
#include "log.h"
#include "notifier.h"
#include "signal_impl.h"

#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#define MAX_WATCH 127 /* futex_waitv takes 128 words, one is our own */

/* Shared signals watched by one thread (all fields under N.lock). */
struct watch_group {
    struct devq_signal *watch; /* watched shared signals (watch_next) */
    unsigned nwatch;
    _Atomic uint32_t *word;    /* the thread's own futex word */
    _Atomic uint32_t own_word; /* a watcher's (group 0 uses N.word) */
};

static struct {
    pthread_mutex_t lock;
    struct devq_notifier_node *head, **tail;
    _Atomic uint32_t word;
    int sleeping;
    int started;
    struct watch_group g0;     /* the notifier's own */
    struct watch_group **more; /* watchers' groups, each with its thread */
    unsigned nmore, capmore;
} N = { .lock = PTHREAD_MUTEX_INITIALIZER, .tail = &N.head, .g0 = { .word = &N.word } };

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
    for (unsigned i = 0; i <= N.nmore; i++) {
        struct watch_group *g = i ? N.more[i - 1] : &N.g0;
        for (struct devq_signal *s = g->watch; s; s = s->watch_next)
            s->watched = 0;
        g->watch = NULL;
        g->nwatch = 0;
    }
    N.nmore = 0; /* the parent's watchers: leaked in the child */
    N.more = NULL;
    N.capmore = 0;
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
        n->fn(n->arg); /* may free n (a notify frees itself) */
        if (owned)
            free(self);
        n = next;
    }
}

/* Deliver what became due on g's shared signals, drop the ones that
 * have nothing pending any more, and fill the futex_waitv vector. */
static unsigned scan_watched(struct watch_group *g, struct futex_waitv *w)
{
    struct devq_signal *snap[MAX_WATCH];
    unsigned n = 0;
    pthread_mutex_lock(&N.lock);
    for (struct devq_signal *s = g->watch; s && n < MAX_WATCH; s = s->watch_next) {
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
            struct devq_signal **pp = &g->watch;
            while (*pp && *pp != s)
                pp = &(*pp)->watch_next;
            if (*pp) {
                *pp = s->watch_next;
                g->nwatch--;
                drop = 1;
            }
            pthread_mutex_unlock(&N.lock);
            s->watched = 0;
            atomic_fetch_sub(&s->tl->waiters, 1);
        } else {
            w[k++] = (struct futex_waitv){ .val = seq, .uaddr = (uintptr_t)&s->tl->seq, .flags = FUTEX_32 };
        }
        pthread_mutex_unlock(&s->lock);
        if (drop)
            devq__signal_release(s); /* the watch list's reference */
        devq__signal_release(s);     /* the snapshot's */
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
        if (N.g0.watch) {
            pthread_mutex_unlock(&N.lock);
            k = scan_watched(&N.g0, w + 1);
            pthread_mutex_lock(&N.lock);
            if (N.head)
                continue;
        }
        uint32_t seen = atomic_load(&N.word);
        N.sleeping = 1;
        pthread_mutex_unlock(&N.lock);
        if (k) {
            w[0] = (struct futex_waitv){ .val = seen,
                                         .uaddr = (uintptr_t)&N.word,
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

/* A watcher thread: group g's pages, woken by their `set`s and by its
 * own word (bumped when its group changes). */
static void *watcher_main(void *arg)
{
    struct watch_group *g = arg;
    struct futex_waitv w[MAX_WATCH + 1];
    for (;;) {
        /* Read before scanning, so a change meanwhile ends the sleep. */
        uint32_t seen = atomic_load(g->word);
        unsigned k = scan_watched(g, w + 1);
        if (!k) {
            devq__futex_wait((const uint32_t *)g->word, seen, DEVQ_NO_DEADLINE, 0);
            continue;
        }
        w[0] = (struct futex_waitv){ .val = seen,
                                     .uaddr = (uintptr_t)g->word,
                                     .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
        devq__futex_waitv(w, k + 1, devq__shared_slice(DEVQ_NO_DEADLINE));
    }
    return NULL;
}

/* Caller holds N.lock.  *out: a group with room for one more page,
 * starting a watcher thread for a new one when all are full.  0, or
 * -EAGAIN / -ENOMEM (devq(7) THREADS): nothing kept, retried by the next
 * call. */
static int group_with_room_locked(const char *who, struct watch_group **out)
{
    *out = &N.g0;
    if (N.g0.nwatch < MAX_WATCH)
        return 0;
    for (unsigned i = 0; i < N.nmore; i++)
        if ((*out = N.more[i])->nwatch < MAX_WATCH)
            return 0;
    if (N.nmore == N.capmore) {
        unsigned cap = N.capmore ? 2 * N.capmore : 4;
        struct watch_group **more = realloc(N.more, cap * sizeof *more);
        if (!more)
            return devq__err(-ENOMEM, "%s: out of memory for a watcher of process-shared signals", who);
        N.more = more;
        N.capmore = cap;
    }
    struct watch_group *g = calloc(1, sizeof *g);
    if (!g)
        return devq__err(-ENOMEM, "%s: out of memory for a watcher of process-shared signals", who);
    g->word = &g->own_word;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int r = pthread_create(&t, &attr, watcher_main, g);
    pthread_attr_destroy(&attr);
    if (r) {
        free(g);
        return devq__err(r == ENOMEM ? -ENOMEM : -EAGAIN,
                         "%s: cannot start a devq watcher thread for more than %u process-shared signals "
                         "with pending registrations: pthread_create: %s (raise RLIMIT_NPROC or free "
                         "memory, then call again)",
                         who, MAX_WATCH * (N.nmore + 1), strerror(r));
    }
    N.more[N.nmore++] = g;
    *out = g;
    return 0;
}

/* Caller holds N.lock.  A thread that cannot start is the caller's
 * error (devq(7) THREADS): -EAGAIN (RLIMIT_NPROC, threads-max, no room
 * for a stack) or -ENOMEM, naming the thread and the limit; the next
 * call tries again, so lifting the limit is enough to recover. */
static int start_locked(const char *who)
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
        return devq__err(r == ENOMEM ? -ENOMEM : -EAGAIN,
                         "%s: cannot start the devq notifier thread: pthread_create: %s "
                         "(raise RLIMIT_NPROC or free memory, then call again)",
                         who ? who : "devq", strerror(r));
    N.started = 1;
    return 0;
}

int devq__notifier_start(const char *who)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&N.lock);
    int r = start_locked(who);
    pthread_mutex_unlock(&N.lock);
    return r;
}

/* Caller holds N.lock; returns whether the thread must be woken. */
static int poke_locked(void)
{
    atomic_fetch_add(&N.word, 1);
    return N.sleeping;
}

/* `must_queue`: queue n even when the thread cannot be started.  Only
 * a delivery takes this path, and every registration that can lead to
 * one started the thread first (devq__notifier_start), so it happens
 * only in a child after fork whose first notifier start fails: the next
 * post retries, and the thread then runs everything in order.
 * Otherwise a failed start queues nothing and returns the error, so the
 * caller may fall back without the function ever running twice. */
static int post_node(struct devq_notifier_node *n, int must_queue)
{
    pthread_once(&once, init_once);
    n->next = NULL;
    pthread_mutex_lock(&N.lock);
    int r = start_locked(NULL);
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
    for (unsigned i = 0; i < N.nmore; i++) {
        atomic_fetch_add(N.more[i]->word, 1);
        devq__futex_wake((const uint32_t *)N.more[i]->word, 1, 0);
    }
    pthread_mutex_unlock(&N.lock);
    if (wake)
        devq__futex_wake((const uint32_t *)&N.word, 1, 0);
}

int devq__notifier_watch(struct devq_signal *s)
{
    if (s->watched)
        return 0;
    if (!devq__signal_have_waitv_kernel())
        return devq__err(-ENOTSUP,
                         "%s: notify, wait_fd and many-signal waits on a "
                         "process-shared signal need futex_waitv (Linux 5.16 or later)",
                         devq__signal_label(s).s);
    pthread_once(&once, init_once);
    pthread_mutex_lock(&N.lock);
    int r = start_locked(devq__signal_label(s).s);
    struct watch_group *g = NULL;
    if (!r)
        r = group_with_room_locked(devq__signal_label(s).s, &g);
    int wake = 0;
    if (!r) {
        devq__signal_retain(s);
        /* Count the watching thread as a waiter before it reads the word,
         * so a `set` in another process makes the wake syscall. */
        atomic_fetch_add(&s->tl->waiters, 1);
        s->watched = 1;
        s->watch_next = g->watch;
        g->watch = s;
        g->nwatch++;
        if (g == &N.g0) {
            wake = poke_locked();
        } else {
            atomic_fetch_add(g->word, 1);
            devq__futex_wake((const uint32_t *)g->word, 1, 0);
        }
    }
    pthread_mutex_unlock(&N.lock);
    if (wake)
        devq__futex_wake((const uint32_t *)&N.word, 1, 0);
    return r;
}
