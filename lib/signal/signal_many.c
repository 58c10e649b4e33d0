/* SPDX-License-Identifier: MIT */
/* devq_signal_wait_many: ALL or ANY of n (signal, value) pairs.
 *
 * Where the kernel has futex_waitv (Linux 5.16, syscall 449) the waiter
 * sleeps on every signal's futex word at once.  Otherwise, or for more
 * signals than one futex_waitv call takes, it registers a "waker" in each
 * signal's pending heap: `set` bumps a futex word private to this call
 * when it reaches the value, and the waiter sleeps on that one word. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "error.h"
#include "futex.h"
#include "signal_impl.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#ifndef FUTEX_WAITV_MAX
#define FUTEX_WAITV_MAX 128
#endif

#define NOT_YET 1

static _Atomic int force_no_waitv;
static _Atomic int waitv_missing; /* set once the kernel said ENOSYS */

void devq__signal_force_no_waitv(int on)
{
    atomic_store(&force_no_waitv, on);
}

int devq__signal_have_waitv(void)
{
    return !atomic_load(&force_no_waitv) && !atomic_load(&waitv_missing);
}

/* Probe once: an empty vector is EINVAL where the call exists. */
static void probe_waitv(void)
{
    if (syscall(SYS_futex_waitv, NULL, 0, 0, NULL, CLOCK_MONOTONIC) == -1 && errno == ENOSYS)
        atomic_store(&waitv_missing, 1);
}

int devq__signal_have_waitv_kernel(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, probe_waitv);
    return !atomic_load(&waitv_missing);
}

int devq__futex_waitv(struct futex_waitv *w, unsigned n, uint64_t deadline_ns)
{
    struct timespec ts;
    int passed;
    const struct timespec *tsp = devq__deadline_ts(deadline_ns, &ts, &passed);
    if (passed)
        return -ETIMEDOUT;
    long r = syscall(SYS_futex_waitv, w, n, 0, tsp, CLOCK_MONOTONIC);
    if (r >= 0)
        return (int)r;
    if (errno == ENOSYS)
        atomic_store(&waitv_missing, 1);
    return -errno;
}

struct many {
    devq_signal *const *s;
    const uint64_t *values;
    size_t n;
    enum devq_wait_mode mode;
    size_t *first_ready;
    int shared; /* some signal is process-shared */
};

/* The sleep's deadline: cut into slices when a shared page is involved,
 * since another process can change it without waking anyone. */
static uint64_t sleep_until(const struct many *m, uint64_t deadline)
{
    return m->shared ? devq__shared_slice(deadline) : deadline;
}

static int reached(const struct many *m, size_t i)
{
    return devq__tl_value(m->s[i]) >= m->values[i];
}

/* 0 done, a failure (errmsg set to its root cause), or NOT_YET.
 * Failures are looked at first: a wait_many that includes a failed
 * signal returns its failure, whatever the mode. */
static int scan(const struct many *m)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->s[i]->shared && !reached(m, i))
            devq__signal_peer_check(m->s[i], m->values[i]); /* rate-limited */
        int st = devq__tl_status(m->s[i]);                  /* validates a shared page */
        if (st) {
            if (m->first_ready)
                *m->first_ready = i;
            return devq__signal_fail_err(m->s[i], st);
        }
    }
    size_t ok = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!reached(m, i))
            continue;
        if (m->mode == DEVQ_WAIT_ANY) {
            if (m->first_ready)
                *m->first_ready = i;
            return 0;
        }
        ok++;
    }
    return ok == m->n && m->mode == DEVQ_WAIT_ALL ? 0 : NOT_YET;
}

static int timeout_err(const struct many *m)
{
    for (size_t i = 0; i < m->n; i++) {
        if (reached(m, i))
            continue;
        const struct devq_signal *s = m->s[i];
        return devq__err(-ETIMEDOUT,
                         "devq_signal_wait_many: timed out (%s of %zu): %s"
                         " (index %zu) is at %" PRIu64 ", waiting for %" PRIu64,
                         m->mode == DEVQ_WAIT_ANY ? "ANY" : "ALL", m->n, devq__signal_label(s).s, i,
                         devq__tl_value(s), m->values[i]);
    }
    return devq__err(-ETIMEDOUT, "devq_signal_wait_many: timed out");
}

static void count_waiters(const struct many *m, int delta)
{
    for (size_t i = 0; i < m->n; i++)
        atomic_fetch_add(&m->s[i]->tl->waiters, (uint32_t)delta);
}

/* NOT_YET with -ENOSYS in *sys means: use the fallback. */
static int wait_waitv(const struct many *m, uint64_t deadline, int *sys)
{
    struct futex_waitv w[FUTEX_WAITV_MAX];
    uint32_t seq[FUTEX_WAITV_MAX];
    int r;
    count_waiters(m, 1);
    for (;;) {
        for (size_t i = 0; i < m->n; i++)
            seq[i] = atomic_load(&m->s[i]->tl->seq);
        r = scan(m);
        if (r != NOT_YET)
            break;
        unsigned k = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (m->mode == DEVQ_WAIT_ALL && reached(m, i))
                continue;
            w[k] = (struct futex_waitv){
                .val = seq[i],
                .uaddr = (uintptr_t)&m->s[i]->tl->seq,
                .flags = FUTEX_32 | (m->s[i]->shared ? 0 : FUTEX_PRIVATE_FLAG),
            };
            k++;
        }
        uint64_t until = sleep_until(m, deadline);
        int rc = devq__futex_waitv(w, k, until);
        if (rc == -ETIMEDOUT && until != deadline)
            continue;
        if (rc == -ETIMEDOUT) {
            r = scan(m);
            if (r == NOT_YET)
                r = timeout_err(m);
            break;
        }
        if (rc == -ENOSYS || rc == -EINVAL) {
            *sys = -ENOSYS;
            break;
        }
    }
    count_waiters(m, -1);
    return r;
}

static void remove_wakers(const struct many *m, struct devq_pending *wk, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        pthread_mutex_lock(&m->s[i]->lock);
        devq__pending_remove(m->s[i], &wk[i]);
        pthread_mutex_unlock(&m->s[i]->lock);
    }
}

static int wait_wakers(const struct many *m, uint64_t deadline)
{
    _Atomic uint32_t word = 0;
    struct devq_pending *wk = calloc(m->n, sizeof *wk);
    if (!wk)
        return devq__err(-ENOMEM, "devq_signal_wait_many: out of memory for %zu wakers", m->n);
    int r = 0;
    size_t i;
    for (i = 0; i < m->n; i++) {
        struct devq_signal *s = m->s[i];
        wk[i] = (struct devq_pending){
            .value = m->values[i], .kind = PENDING_WAKER, .heap_index = SIZE_MAX, .u.waker.word = &word
        };
        pthread_mutex_lock(&s->lock);
        r = devq__pending_push(s, &wk[i]);
        if (!r && s->shared)
            r = devq__notifier_watch(s);
        pthread_mutex_unlock(&s->lock);
        if (r) {
            if (r == -ENOMEM)
                devq__err(r, "devq_signal_wait_many: out of memory registering %s", devq__signal_label(s).s);
            i++;
            goto out;
        }
        devq__signal_recheck(s);
    }
    for (;;) {
        uint32_t w = atomic_load(&word);
        r = scan(m);
        if (r != NOT_YET)
            break;
        uint64_t until = sleep_until(m, deadline);
        if (devq__futex_wait((const uint32_t *)&word, w, until, 0) == -ETIMEDOUT) {
            if (until != deadline)
                continue;
            r = scan(m);
            if (r == NOT_YET)
                r = timeout_err(m);
            break;
        }
    }
out:
    remove_wakers(m, wk, i);
    free(wk);
    return r;
}

DEVQ_API int devq_signal_wait_many(devq_signal *const *s, const uint64_t *values, size_t n,
                                   enum devq_wait_mode mode, uint64_t timeout_ns, size_t *first_ready)
{
    if (n == 0)
        return mode == DEVQ_WAIT_ALL
                   ? 0
                   : devq__err(-EINVAL, "devq_signal_wait_many: ANY of 0 signals can never be reached");
    if (!s || !values)
        return devq__err(-EINVAL, "devq_signal_wait_many: %s is NULL", !s ? "s" : "values");
    if (mode != DEVQ_WAIT_ALL && mode != DEVQ_WAIT_ANY)
        return devq__err(-EINVAL,
                         "devq_signal_wait_many: mode %d is neither DEVQ_WAIT_ALL "
                         "nor DEVQ_WAIT_ANY",
                         (int)mode);
    for (size_t i = 0; i < n; i++) {
        char fn[64];
        snprintf(fn, sizeof fn, "devq_signal_wait_many: s[%zu]", i);
        int r = devq__signal_check_user(s[i], fn);
        if (r)
            return r;
    }
    struct many m = { s, values, n, mode, first_ready, 0 };
    for (size_t i = 0; i < n; i++)
        m.shared |= s[i]->shared;
    int r = scan(&m);
    if (r != NOT_YET)
        return r;
    if (!timeout_ns)
        return timeout_err(&m);
    uint64_t deadline = devq__deadline(timeout_ns);
    if (n <= FUTEX_WAITV_MAX && devq__signal_have_waitv_kernel() && devq__signal_have_waitv()) {
        int sys = 0;
        r = wait_waitv(&m, deadline, &sys);
        if (!sys)
            return r;
    }
    return wait_wakers(&m, deadline);
}
