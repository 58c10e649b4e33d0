/* SPDX-License-Identifier: MIT */
/* Timeline signal rules and the futex wait path (see devq_signal(3)).
 * Links the internal core to read the early-wake counter. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>
#include "signal_impl.h"
#include "../helpers/check_main.h"

#define MS 1000000ull

START_TEST(values_only_rise)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(5, &s), 0);
    ck_assert_uint_eq(devq_signal_value(s), 5);
    ck_assert_int_eq(devq_signal_set(s, 5), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "not above the current value 5"));
    ck_assert_int_eq(devq_signal_set(s, 3), -EINVAL);
    ck_assert_uint_eq(devq_signal_value(s), 5);
    ck_assert_int_eq(devq_signal_set(s, 9), 0);
    ck_assert_uint_eq(devq_signal_value(s), 9);
    ck_assert_int_eq(devq_signal_status(s), 0);
    ck_assert_int_eq(devq_signal_wait(s, 9, 0), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 0), 0);
    /* Internal advance ignores lower values instead of failing. */
    ck_assert_int_eq(devq__signal_advance(s, 4), 0);
    ck_assert_uint_eq(devq_signal_value(s), 9);
    ck_assert_int_eq(devq__signal_advance(s, 12), 0);
    ck_assert_uint_eq(devq_signal_value(s), 12);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(bad_handles)
{
    ck_assert_int_eq(devq_signal_create(0, NULL), -EINVAL);
    ck_assert_int_eq(devq_signal_set(NULL, 1), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "devq_signal_set: signal is NULL"));
    ck_assert_uint_eq(devq_signal_value(NULL), 0);
    ck_assert_int_eq(devq_signal_status(NULL), -EINVAL);
    ck_assert_int_eq(devq_signal_wait(NULL, 1, 0), -EINVAL);
    ck_assert_int_eq(devq_signal_fail(NULL, -EIO), -EINVAL);
    devq_signal_destroy(NULL); /* no crash */
    _Alignas(64) uint64_t garbage[64] = { 0 };
    devq_signal *g = (devq_signal *)garbage;
    ck_assert_int_eq(devq_signal_set(g, 1), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "not a live devq_signal"));
    ck_assert_uint_eq(devq_signal_value(g), 0);
    ck_assert_int_eq(devq_signal_wait_fd(g, 1, &(int){ 0 }), -EINVAL);
    ck_assert_int_eq(devq_signal_export_fd(g, &(int){ 0 }), -EINVAL);
    ck_assert_int_eq(devq_notify_cancel(NULL), -EINVAL);
    ck_assert_int_eq(devq_notify_cancel((devq_notify *)garbage), -EINVAL);

    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_fail(s, 5), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "negative errno"));
    ck_assert_int_eq(devq_signal_fail(s, 0), -EINVAL);
    ck_assert_int_eq(devq_signal_status(s), 0);
    /* A queue still holding a reference keeps the memory: the user's
     * handle is then detectably dead. */
    devq__signal_retain(s);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_signal_set(s, 1), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "was destroyed"));
    ck_assert_int_eq(devq__signal_advance(s, 3), 0); /* queues may still */
    devq__signal_release(s);
}
END_TEST

START_TEST(fail_rules)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(7, &s), 0);
    char want[DEVQ_LABEL_MAX + 64]; /* a label and the fixed text */
    snprintf(want, sizeof want, "devq_signal_fail(-EIO) called on %s", devq__signal_label(s).s);
    ck_assert_int_eq(devq_signal_fail(s, -EIO), 0);
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    ck_assert_str_eq(devq__signal_cause(s), want);
    /* First failure wins. */
    ck_assert_int_eq(devq_signal_fail(s, -ENODEV), 0);
    devq__signal_fail_cause(s, -EPIPE, "other cause");
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    ck_assert_str_eq(devq__signal_cause(s), want);
    /* set on a failed signal returns the failure; value unchanged. */
    ck_assert_int_eq(devq_signal_set(s, 100), -EIO);
    ck_assert_str_eq(devq_errmsg(), want);
    ck_assert_uint_eq(devq_signal_value(s), 7);
    ck_assert_int_eq(devq__signal_advance(s, 100), -EIO);
    /* Every future waiter gets it, even for a value already reached. */
    ck_assert_int_eq(devq_signal_wait(s, 3, 0), -EIO);
    ck_assert_str_eq(devq_errmsg(), want);
    ck_assert_int_eq(devq_signal_wait(s, 30, DEVQ_TIMEOUT_INFINITE), -EIO);
    ck_assert_str_eq(devq_errmsg(), want);
    devq_signal_destroy(s);

    /* The internal cause is kept verbatim. */
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    devq__signal_fail_cause(s, -EFAULT, "kernel 'saxpy' on queue q2 failed: -EFAULT");
    ck_assert_int_eq(devq_signal_wait(s, 1, 0), -EFAULT);
    ck_assert_str_eq(devq_errmsg(), "kernel 'saxpy' on queue q2 failed: -EFAULT");
    devq_signal_destroy(s);
}
END_TEST

START_TEST(timeouts)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(7, &s), 0);
    char want[DEVQ_LABEL_MAX + 64]; /* a label and the fixed text */
    snprintf(want, sizeof want, "%s: timed out waiting for 10, value is 7", devq__signal_label(s).s);
    /* 0 polls. */
    uint64_t t0 = check_now_ns();
    ck_assert_int_eq(devq_signal_wait(s, 10, 0), -ETIMEDOUT);
    ck_assert_str_eq(devq_errmsg(), want);
    /* A short timeout expires roughly on time. */
    t0 = check_now_ns();
    ck_assert_int_eq(devq_signal_wait(s, 10, 20 * MS), -ETIMEDOUT);
    uint64_t took = check_now_ns() - t0;
    ck_assert_uint_ge(took, 20 * MS);
    ck_assert_uint_lt(took, 2000 * MS);
    ck_assert_str_eq(devq_errmsg(), want);
    /* An already-expired (1 ns) deadline returns at once. */
    t0 = check_now_ns();
    ck_assert_int_eq(devq_signal_wait(s, 10, 1), -ETIMEDOUT);
    ck_assert_uint_lt(check_now_ns() - t0, 50 * MS);
    /* A reached value never times out, even with 0. */
    ck_assert_int_eq(devq_signal_set(s, 10), 0);
    ck_assert_int_eq(devq_signal_wait(s, 10, 0), 0);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(near_uint64_max)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(UINT64_MAX - 3, &s), 0);
    ck_assert_int_eq(devq_signal_wait(s, UINT64_MAX, 0), -ETIMEDOUT);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX - 1), 0);
    ck_assert_int_eq(devq_signal_wait(s, UINT64_MAX - 1, 0), 0);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX), 0);
    ck_assert_uint_eq(devq_signal_value(s), UINT64_MAX);
    ck_assert_int_eq(devq_signal_wait(s, UINT64_MAX, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX), -EINVAL);
    devq_signal_destroy(s);
    /* A huge timeout saturates instead of wrapping into the past. */
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_wait(s, 0, UINT64_MAX - 1), 0);
    devq_signal_destroy(s);
}
END_TEST

/* set's CAS guesses the value it replaces (v - 1, a timeline's next
 * step) instead of reading the line first (signal.c raise_value): a
 * wrong guess, a jump, a value below, 0, and 0 on a signal at
 * UINT64_MAX, where v - 1 wraps to the very value found. */
START_TEST(set_from_any_value)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_set(s, 0), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "value 0 is not above the current value 0"));
    ck_assert_int_eq(devq_signal_set(s, 10), 0); /* guessed 9: found 0 */
    ck_assert_uint_eq(devq_signal_value(s), 10);
    ck_assert_int_eq(devq_signal_set(s, 11), 0); /* guessed right */
    ck_assert_uint_eq(devq_signal_value(s), 11);
    ck_assert_int_eq(devq_signal_set(s, 11), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "value 11 is not above the current value 11"));
    ck_assert_int_eq(devq_signal_set(s, 3), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "value 3 is not above the current value 11"));
    ck_assert_int_eq(devq__signal_advance(s, 0), 0);
    ck_assert_int_eq(devq__signal_advance(s, 12), 0);
    ck_assert_int_eq(devq__signal_advance(s, 1000), 0);
    ck_assert_uint_eq(devq_signal_value(s), 1000);
    ck_assert_int_eq(devq_signal_wait(s, 1000, 0), 0);
    devq_signal_destroy(s);

    ck_assert_int_eq(devq_signal_create(UINT64_MAX, &s), 0);
    ck_assert_int_eq(devq_signal_set(s, 0), -EINVAL);
    ck_assert_uint_eq(devq_signal_value(s), UINT64_MAX);
    ck_assert_int_eq(devq__signal_advance(s, 0), 0);
    ck_assert_uint_eq(devq_signal_value(s), UINT64_MAX);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX), -EINVAL);
    ck_assert_uint_eq(devq_signal_value(s), UINT64_MAX);
    devq_signal_destroy(s);
}
END_TEST

/* ---- threads ---- */

struct waiter_arg {
    devq_signal *s;
    _Atomic pid_t tid; /* for /proc/self/task/TID/stat */
    uint64_t want;
    uint64_t seen; /* value right after the wait returned */
    int rc;
    char msg[256];
};

static void *waiter(void *p)
{
    struct waiter_arg *a = p;
    atomic_store(&a->tid, gettid());
    a->rc = devq_signal_wait(a->s, a->want, DEVQ_TIMEOUT_INFINITE);
    a->seen = devq_signal_value(a->s);
    snprintf(a->msg, sizeof a->msg, "%s", devq_errmsg());
    return NULL;
}

static char task_state(pid_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/* Wait until every waiter counted itself and is asleep in the kernel
 * (after counting, the futex is the only place a waiter can sleep), so
 * that a later wake-up is the futex's doing, not a race with the sleep. */
static void wait_sleepers(devq_signal *s, struct waiter_arg *a, int n)
{
    for (int tries = 0; tries < 10000; tries++) {
        int asleep = atomic_load(&s->tl->waiters) >= (uint32_t)n;
        for (int i = 0; asleep && i < n; i++)
            asleep = atomic_load(&a[i].tid) && task_state(atomic_load(&a[i].tid)) == 'S';
        if (asleep)
            return;
        check_nap_ms(1);
    }
    ck_abort_msg("waiters did not all go to sleep within 10 s");
}

START_TEST(distinct_values_no_early_wake)
{
    enum { N = 24 };
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct waiter_arg a[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        a[i] = (struct waiter_arg){ .s = s, .want = (uint64_t)i + 1 };
        pthread_create(&t[i], NULL, waiter, &a[i]);
    }
    wait_sleepers(s, a, N);
    uint64_t early0 = atomic_load(&devq__signal_early_wakes);
    for (int v = 1; v <= N; v++) {
        ck_assert_int_eq(devq_signal_set(s, (uint64_t)v), 0);
        pthread_join(t[v - 1], NULL);
        ck_assert_int_eq(a[v - 1].rc, 0);
        ck_assert_uint_ge(a[v - 1].seen, (uint64_t)v);
        /* The ones still waiting were not woken by this set. */
        ck_assert_uint_eq(atomic_load(&s->tl->waiters), (uint32_t)(N - v));
    }
    ck_assert_uint_eq(atomic_load(&devq__signal_early_wakes) - early0, 0);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(fail_wakes_sleepers)
{
    enum { N = 8 };
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct waiter_arg a[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        a[i] = (struct waiter_arg){ .s = s, .want = 100 + (uint64_t)i * 7 };
        pthread_create(&t[i], NULL, waiter, &a[i]);
    }
    wait_sleepers(s, a, N);
    devq__signal_fail_cause(s, -ENODEV, "device lost: cpu:0 fell off the bus");
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].rc, -ENODEV);
        ck_assert_str_eq(a[i].msg, "device lost: cpu:0 fell off the bus");
    }
    devq_signal_destroy(s);
}
END_TEST

/* set reads the failure from a copy stored before the status
 * (signal_impl.h status_copy): a thread that saw the failure in a wait
 * and then sets is refused, and the value stays. */
struct late_failure {
    devq_signal *s;
};

static void *fail_late(void *p)
{
    struct late_failure *f = p;
    check_nap_ms(5);
    devq__signal_fail_cause(f->s, -ENOLINK, "link to cpu:1 lost");
    return NULL;
}

START_TEST(set_after_a_seen_failure)
{
    for (int round = 0; round < 20; round++) {
        struct late_failure f;
        ck_assert_int_eq(devq_signal_create(4, &f.s), 0);
        pthread_t t;
        pthread_create(&t, NULL, fail_late, &f);
        ck_assert_int_eq(devq_signal_wait(f.s, 5, 10000 * MS), -ENOLINK);
        ck_assert_int_eq(devq_signal_set(f.s, 5), -ENOLINK);
        ck_assert_str_eq(devq_errmsg(), "link to cpu:1 lost");
        ck_assert_int_eq(devq__signal_advance(f.s, 6), -ENOLINK);
        ck_assert_uint_eq(devq_signal_value(f.s), 4);
        pthread_join(t, NULL);
        devq_signal_destroy(f.s);
    }
}
END_TEST

struct pingpong {
    devq_signal *ping, *pong;
    long rounds;
    int errors;
};

static void *pong_thread(void *p)
{
    struct pingpong *pp = p;
    for (long i = 1; i <= pp->rounds; i++) {
        if (devq_signal_wait(pp->ping, (uint64_t)i, 10000 * MS))
            pp->errors++;
        if (devq_signal_set(pp->pong, (uint64_t)i))
            pp->errors++;
    }
    return NULL;
}

START_TEST(ping_pong)
{
    struct pingpong pp = { .rounds = 100000 / SCALE };
    ck_assert_int_eq(devq_signal_create(0, &pp.ping), 0);
    ck_assert_int_eq(devq_signal_create(0, &pp.pong), 0);
    pthread_t t;
    pthread_create(&t, NULL, pong_thread, &pp);
    int errors = 0;
    for (long i = 1; i <= pp.rounds; i++) {
        errors += devq_signal_set(pp.ping, (uint64_t)i) != 0;
        errors += devq_signal_wait(pp.pong, (uint64_t)i, 10000 * MS) != 0;
    }
    pthread_join(t, NULL);
    ck_assert_int_eq(errors, 0);
    ck_assert_int_eq(pp.errors, 0);
    ck_assert_uint_eq(devq_signal_value(pp.pong), (uint64_t)pp.rounds);
    devq_signal_destroy(pp.ping);
    devq_signal_destroy(pp.pong);
}
END_TEST

/* 4 producers raise one signal with set (losing races is -EINVAL, never
 * a lost value); 4 consumers wait for ever higher values. */
struct mpmc {
    devq_signal *s;
    _Atomic uint64_t next;
    uint64_t last;
    _Atomic int bad;
};

static void *producer(void *p)
{
    struct mpmc *m = p;
    for (;;) {
        uint64_t v = atomic_fetch_add(&m->next, 1);
        if (v > m->last)
            return NULL;
        int r = devq_signal_set(m->s, v);
        if (r && r != -EINVAL)
            atomic_store(&m->bad, 1);
        if (r == 0 && devq_signal_value(m->s) < v)
            atomic_store(&m->bad, 2);
    }
}

static void *consumer(void *p)
{
    struct mpmc *m = p;
    unsigned seed = (unsigned)(uintptr_t)&seed;
    uint64_t want = 0;
    while (want < m->last) {
        want += 1 + (uint64_t)(rand_r(&seed) % 50);
        if (want > m->last)
            want = m->last;
        if (devq_signal_wait(m->s, want, 10000 * MS))
            atomic_store(&m->bad, 3);
        if (devq_signal_value(m->s) < want)
            atomic_store(&m->bad, 4);
    }
    return NULL;
}

START_TEST(producers_consumers)
{
    struct mpmc m = { .next = 1, .last = 200000 / SCALE };
    ck_assert_int_eq(devq_signal_create(0, &m.s), 0);
    pthread_t t[8];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, consumer, &m);
    for (int i = 4; i < 8; i++)
        pthread_create(&t[i], NULL, producer, &m);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&m.bad), 0);
    /* The highest value always lands: a producer only loses to a higher one. */
    ck_assert_uint_eq(devq_signal_value(m.s), m.last);
    devq_signal_destroy(m.s);
}
END_TEST

/* A signal whose waits always take long stops spinning: waiting on it
 * then costs no CPU before the futex. */
struct slow_setter {
    devq_signal *s;
    int n;
};

static void *slow_set(void *p)
{
    struct slow_setter *a = p;
    for (int i = 1; i <= a->n; i++) {
        check_nap_ms(5);
        devq_signal_set(a->s, (uint64_t)i);
    }
    return NULL;
}

START_TEST(slow_signal_stops_spinning)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_gt(atomic_load(&s->spin_budget), 0);
    struct slow_setter a = { s, 8 };
    pthread_t t;
    pthread_create(&t, NULL, slow_set, &a);
    for (int i = 1; i <= a.n; i++)
        ck_assert_int_eq(devq_signal_wait(s, (uint64_t)i, 10000 * MS), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&s->spin_budget), 0);
    devq_signal_destroy(s);
}
END_TEST

/* A set keeps the signal alive past its value store without taking a
 * reference (s->setting): the last release, on a waiter that saw the
 * value, waits until the setter is done with it.  Here the "setter" is
 * the test itself, holding s->setting by hand. */
struct destroyer {
    devq_signal *s;
    _Atomic int done;
};

static void *destroy_thread(void *p)
{
    struct destroyer *d = p;
    devq_signal_destroy(d->s); /* the last reference */
    atomic_store(&d->done, 1);
    return NULL;
}

START_TEST(destroy_waits_for_a_setter)
{
    struct destroyer d = { 0 };
    ck_assert_int_eq(devq_signal_create(0, &d.s), 0);
    struct devq_signal *s = d.s;
    atomic_fetch_add(&s->setting, 1); /* a set past its value store */
    pthread_t t;
    pthread_create(&t, NULL, destroy_thread, &d);
    usleep(50000);
    ck_assert_int_eq(atomic_load(&d.done), 0); /* s is still there */
    atomic_fetch_sub(&s->setting, 1);          /* the set's last touch */
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&d.done), 1);
}
END_TEST

/* The race it is for, bounded: a waiter destroys each signal as soon as
 * it sees the value while the setter may still be waking it (a
 * use-after-free here is what ASan and TSan look for). */
struct handoff {
    devq_signal *s[64];
    int errors;
};

static void *wait_destroy(void *p)
{
    struct handoff *h = p;
    for (int i = 0; i < 64; i++) {
        if (devq_signal_wait(h->s[i], 1, 10000 * MS))
            h->errors++;
        devq_signal_destroy(h->s[i]);
    }
    return NULL;
}

START_TEST(waiter_destroys_while_setter_wakes)
{
    for (int round = 0; round < 200 / SCALE + 1; round++) {
        struct handoff h = { .errors = 0 };
        for (int i = 0; i < 64; i++)
            ck_assert_int_eq(devq_signal_create(0, &h.s[i]), 0);
        devq_signal *mine[64];
        memcpy(mine, h.s, sizeof mine);
        pthread_t t;
        pthread_create(&t, NULL, wait_destroy, &h);
        for (int i = 0; i < 64; i++)
            ck_assert_int_eq(devq_signal_set(mine[i], 1), 0); /* mine[i] may be gone after */
        pthread_join(t, NULL);
        ck_assert_int_eq(h.errors, 0);
    }
}
END_TEST

/* The same race where it is widest, with several pairs at once: every
 * waiter sleeps (spin budget 0) before its setter sets, so each set
 * bumps the futex word and wakes after the value is out, and the woken
 * waiter destroys the signal at once.  Only s->setting keeps it alive
 * until the setter's last touch (ASan, TSan and valgrind watch). */
enum { PAIRS = 4, PER_PAIR = 32 };

struct sleeper_pair {
    devq_signal *s[PER_PAIR];
    int errors;
};

static void *sleep_then_destroy(void *p)
{
    struct sleeper_pair *h = p;
    for (int i = 0; i < PER_PAIR; i++) {
        if (devq_signal_wait(h->s[i], 1, 10000 * MS))
            h->errors++;
        devq_signal_destroy(h->s[i]);
    }
    return NULL;
}

static void *set_each_sleeper(void *p)
{
    struct sleeper_pair *h = p;
    devq_signal *mine[PER_PAIR];
    memcpy(mine, h->s, sizeof mine);
    for (int i = 0; i < PER_PAIR; i++) {
        struct devq_signal *s = mine[i];
        /* Until its waiter counted itself a sleeper (bounded: 10 s). */
        for (int tries = 0; !atomic_load(&s->tl->waiters) && tries < 1000000; tries++)
            usleep(10);
        if (devq_signal_set(s, 1)) /* s may be gone once it returns */
            h->errors++;
    }
    return NULL;
}

START_TEST(destroy_races_sleepers_wakes)
{
    for (int round = 0; round < 40 / SCALE + 1; round++) {
        struct sleeper_pair h[PAIRS];
        pthread_t t[2 * PAIRS];
        for (int k = 0; k < PAIRS; k++) {
            h[k].errors = 0;
            for (int i = 0; i < PER_PAIR; i++) {
                ck_assert_int_eq(devq_signal_create(0, &h[k].s[i]), 0);
                atomic_store(&h[k].s[i]->spin_budget, 0); /* sleep at once */
            }
        }
        for (int k = 0; k < PAIRS; k++) {
            pthread_create(&t[2 * k], NULL, sleep_then_destroy, &h[k]);
            pthread_create(&t[2 * k + 1], NULL, set_each_sleeper, &h[k]);
        }
        for (int i = 0; i < 2 * PAIRS; i++)
            pthread_join(t[i], NULL);
        for (int k = 0; k < PAIRS; k++)
            ck_assert_int_eq(h[k].errors, 0);
    }
}
END_TEST

/* A set with nobody asleep makes no futex call and leaves the word
 * alone (a spinning waiter reads that line); one with a sleeper bumps
 * it and wakes it. */
struct sleeper {
    devq_signal *s;
    int r;
};

static void *sleep_for_101(void *p)
{
    struct sleeper *z = p;
    z->r = devq_signal_wait(z->s, 101, 10000 * MS);
    return NULL;
}

START_TEST(set_wakes_only_sleepers)
{
    struct sleeper z = { .r = 1 };
    ck_assert_int_eq(devq_signal_create(0, &z.s), 0);
    struct devq_signal *s = z.s;
    uint32_t seq0 = atomic_load(&s->tl->seq);
    for (uint64_t v = 1; v <= 100; v++)
        ck_assert_int_eq(devq_signal_set(z.s, v), 0);
    ck_assert_uint_eq(atomic_load(&s->tl->seq), seq0);
    pthread_t t;
    pthread_create(&t, NULL, sleep_for_101, &z);
    for (int i = 0; i < 10000 && !atomic_load(&s->tl->waiters); i++)
        usleep(1000); /* it spins its budget, then counts itself and sleeps */
    ck_assert_uint_eq(atomic_load(&s->tl->waiters), 1);
    ck_assert_int_eq(devq_signal_set(z.s, 101), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(z.r, 0);
    ck_assert_uint_eq(atomic_load(&s->tl->seq), seq0 + 1);
    ck_assert_uint_eq(atomic_load(&s->tl->waiters), 0);
    devq_signal_destroy(z.s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("signal");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, values_only_rise);
    tcase_add_test(tc, bad_handles);
    tcase_add_test(tc, fail_rules);
    tcase_add_test(tc, timeouts);
    tcase_add_test(tc, near_uint64_max);
    tcase_add_test(tc, set_from_any_value);
    suite_add_tcase(s, tc);
    tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, distinct_values_no_early_wake);
    tcase_add_test(tc, fail_wakes_sleepers);
    tcase_add_test(tc, set_after_a_seen_failure);
    tcase_add_test(tc, ping_pong);
    tcase_add_test(tc, producers_consumers);
    tcase_add_test(tc, slow_signal_stops_spinning);
    tcase_add_test(tc, destroy_waits_for_a_setter);
    tcase_add_test(tc, waiter_destroys_while_setter_wakes);
    tcase_add_test(tc, destroy_races_sleepers_wakes);
    tcase_add_test(tc, set_wakes_only_sleepers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
