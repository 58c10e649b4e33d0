/* SPDX-License-Identifier: MIT */
/* devq_signal_notify, devq_notify_cancel/release and devq_signal_wait_fd.
 * Links the internal core for devq__notifier_is_current. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devq/devq.h>
#include "notifier.h"
#include "signal_int.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

/* A completion count the test waits on without polling: `done` is raised
 * to the number of callbacks that ran. */
struct tally {
    devq_signal *done;
    _Atomic uint64_t ran;
};

static void tally_init(struct tally *t)
{
    ck_assert_int_eq(devq_signal_create(0, &t->done), 0);
    atomic_init(&t->ran, 0);
}

static void tally_bump(struct tally *t)
{
    uint64_t n = atomic_fetch_add(&t->ran, 1) + 1;
    devq__signal_advance(t->done, n);
}

static void tally_wait(struct tally *t, uint64_t n)
{
    ck_assert_msg(devq_signal_wait(t->done, n, 20 * SEC) == 0, "%s", devq_errmsg());
}

struct rec {
    struct tally *t;
    _Atomic int calls;
    int status;
    int on_notifier;
};

static void rec_cb(void *arg, int status)
{
    struct rec *r = arg;
    r->status = status;
    r->on_notifier = devq__notifier_is_current();
    atomic_fetch_add(&r->calls, 1);
    tally_bump(r->t);
}

START_TEST(reached_failed_cancelled)
{
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(5, &s), 0);
    struct rec a = { .t = &t }, b = { .t = &t }, c = { .t = &t }, d = { .t = &t };
    /* Already reached: still delivered on the notifier thread. */
    ck_assert_int_eq(devq_signal_notify(s, 3, rec_cb, &a, NULL), 0);
    tally_wait(&t, 1);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.on_notifier, 1);
    /* Reached later. */
    ck_assert_int_eq(devq_signal_notify(s, 8, rec_cb, &b, NULL), 0);
    devq_notify *hc, *hd;
    ck_assert_int_eq(devq_signal_notify(s, 50, rec_cb, &c, &hc), 0);
    ck_assert_int_eq(devq_signal_notify(s, 60, rec_cb, &d, &hd), 0);
    ck_assert_int_eq(devq_signal_set(s, 7), 0);
    ck_assert_int_eq(devq_signal_wait(t.done, 2, 0), -ETIMEDOUT); /* 8 not reached */
    ck_assert_int_eq(devq_signal_set(s, 8), 0);
    tally_wait(&t, 2);
    ck_assert_int_eq(b.status, 0);
    /* Cancelled before it ran. */
    ck_assert_int_eq(devq_notify_cancel(hc), 0);
    tally_wait(&t, 3);
    ck_assert_int_eq(c.status, -ECANCELED);
    /* Failed. */
    ck_assert_int_eq(devq_signal_fail(s, -EPIPE), 0);
    tally_wait(&t, 4);
    ck_assert_int_eq(d.status, -EPIPE);
    ck_assert_int_eq(devq_notify_cancel(hd), -EALREADY);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "already ran"));
    /* On a failed signal: delivered with the failure. */
    struct rec e = { .t = &t };
    ck_assert_int_eq(devq_signal_notify(s, 1, rec_cb, &e, NULL), 0);
    tally_wait(&t, 5);
    ck_assert_int_eq(e.status, -EPIPE);
    ck_assert_int_eq(a.calls + b.calls + c.calls + d.calls + e.calls, 5);
    ck_assert_int_eq(devq_signal_notify(s, 1, NULL, NULL, NULL), -EINVAL);
    devq_signal_destroy(s);
    devq_signal_destroy(t.done);
}
END_TEST

START_TEST(notify_at_uint64_max)
{
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(UINT64_MAX - 1, &s), 0);
    struct rec a = { .t = &t }, b = { .t = &t };
    ck_assert_int_eq(devq_signal_notify(s, UINT64_MAX, rec_cb, &a, NULL), 0);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX), 0);
    tally_wait(&t, 1);
    ck_assert_int_eq(devq_signal_notify(s, UINT64_MAX, rec_cb, &b, NULL), 0); /* reached */
    tally_wait(&t, 2);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(b.status, 0);
    devq_signal_destroy(s);
    devq_signal_destroy(t.done);
}
END_TEST

START_TEST(destroy_cancels_pending)
{
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct rec r[3] = { { .t = &t }, { .t = &t }, { .t = &t } };
    devq_notify *h;
    ck_assert_int_eq(devq_signal_notify(s, 10, rec_cb, &r[0], NULL), 0);
    ck_assert_int_eq(devq_signal_notify(s, 20, rec_cb, &r[1], &h), 0);
    ck_assert_int_eq(devq_signal_notify(s, 30, rec_cb, &r[2], NULL), 0);
    devq_signal_destroy(s);
    tally_wait(&t, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(r[i].status, -ECANCELED);
        ck_assert_int_eq(r[i].calls, 1);
    }
    /* The handle outlives the signal until given back. */
    ck_assert_int_eq(devq_notify_cancel(h), -EALREADY);
    devq_signal_destroy(t.done);
}
END_TEST

struct storm {
    struct tally t;
    _Atomic unsigned char *calls;
    _Atomic int bad_status;
};

static struct storm *the_storm;

static void storm_cb(void *arg, int status)
{
    struct storm *st = the_storm;
    size_t i = (size_t)(uintptr_t)arg;
    atomic_fetch_add(&st->calls[i], 1);
    if (status)
        atomic_store(&st->bad_status, status);
    tally_bump(&st->t);
}

START_TEST(notify_storm)
{
    const size_t n = 100000 / SCALE;
    struct storm st = { .calls = calloc(n, 1) };
    the_storm = &st;
    tally_init(&st.t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    /* Registered in a scrambled order, delivered as the value climbs. */
    for (size_t k = 0; k < n; k++) {
        size_t i = (k * 7919) % n;
        ck_assert_int_eq(devq_signal_notify(s, i + 1, storm_cb, (void *)(uintptr_t)i, NULL), 0);
    }
    for (uint64_t v = 1000; v < n; v += 1000)
        ck_assert_int_eq(devq_signal_set(s, v), 0);
    ck_assert_int_eq(devq_signal_set(s, n), 0);
    tally_wait(&st.t, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(st.calls[i], 1);
    ck_assert_int_eq(st.bad_status, 0);
    devq_signal_destroy(s);
    devq_signal_destroy(st.t.done);
    free((void *)st.calls);
}
END_TEST

/* Cancels race with a setter: each callback runs exactly once, and its
 * status agrees with what cancel returned. */
struct race_item {
    struct tally *t;
    _Atomic int calls;
    _Atomic int status;
};

static void race_cb(void *arg, int status)
{
    struct race_item *it = arg;
    atomic_store(&it->status, status);
    atomic_fetch_add(&it->calls, 1);
    tally_bump(it->t);
}

struct setter_arg {
    devq_signal *s;
    uint64_t n;
    pthread_barrier_t *go;
};

static void *setter(void *p)
{
    struct setter_arg *a = p;
    if (a->go)
        pthread_barrier_wait(a->go);
    for (uint64_t v = 1; v <= a->n; v++)
        devq_signal_set(a->s, v);
    return NULL;
}

/* One race: 0 done, with the counts of each outcome. */
static void race_round(size_t n, size_t *cancelled, size_t *already)
{
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct race_item *items = calloc(n, sizeof *items);
    devq_notify **h = calloc(n, sizeof *h);
    int *cancel_rc = calloc(n, sizeof *cancel_rc);
    for (size_t i = 0; i < n; i++) {
        items[i].t = &t;
        ck_assert_int_eq(devq_signal_notify(s, i + 1, race_cb, &items[i], &h[i]), 0);
    }
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    struct setter_arg sa = { s, n, &go };
    pthread_t th;
    pthread_create(&th, NULL, setter, &sa);
    pthread_barrier_wait(&go);
    /* The setter climbs from the bottom, cancels come down from the top:
     * they meet somewhere in the middle, racing there. */
    for (size_t k = 0; k < n; k++) {
        size_t i = n - 1 - k;
        cancel_rc[i] = devq_notify_cancel(h[i]);
    }
    pthread_join(th, NULL);
    pthread_barrier_destroy(&go);
    tally_wait(&t, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(items[i].calls, 1);
        if (cancel_rc[i] == 0) {
            ck_assert_int_eq(items[i].status, -ECANCELED);
            ++*cancelled;
        } else {
            ck_assert_int_eq(cancel_rc[i], -EALREADY);
            ck_assert_int_eq(items[i].status, 0);
            ++*already;
        }
    }
    devq_signal_destroy(s);
    devq_signal_destroy(t.done);
    free(items);
    free(h);
    free(cancel_rc);
}

START_TEST(cancel_races_set)
{
    /* Every round checks exactly-once and the cancel/status agreement;
     * rounds repeat (a few at most) until both outcomes were seen, so the
     * test really exercised the race. */
    size_t cancelled = 0, already = 0;
    for (int round = 0; round < 10 && !(cancelled && already); round++) {
        cancelled = already = 0;
        race_round(20000 / SCALE, &cancelled, &already);
    }
    ck_assert_uint_gt(cancelled, 0);
    ck_assert_uint_gt(already, 0);
}
END_TEST

/* Callbacks may call devq: register and cancel more notifies, set other
 * signals, destroy the very signal they were registered on. */
struct reentrant {
    struct tally t;
    devq_signal *s, *other;
    int inner_cancel_rc, inner_status, inner_calls;
    int set_rc;
};

static void inner_cb(void *arg, int status)
{
    struct reentrant *r = arg;
    r->inner_status = status;
    r->inner_calls++;
    tally_bump(&r->t);
}

static void outer_cb(void *arg, int status)
{
    struct reentrant *r = arg;
    devq_notify *h;
    if (devq_signal_notify(r->s, 1000, inner_cb, r, &h) == 0)
        r->inner_cancel_rc = devq_notify_cancel(h);
    r->set_rc = devq_signal_set(r->other, 5);
    devq_signal_destroy(r->s);
    tally_bump(&r->t);
}

START_TEST(callbacks_call_devq)
{
    struct reentrant r = { 0 };
    tally_init(&r.t);
    ck_assert_int_eq(devq_signal_create(0, &r.s), 0);
    ck_assert_int_eq(devq_signal_create(0, &r.other), 0);
    ck_assert_int_eq(devq_signal_notify(r.s, 1, outer_cb, &r, NULL), 0);
    ck_assert_int_eq(devq_signal_set(r.s, 1), 0);
    ck_assert_int_eq(devq_signal_wait(r.other, 5, 20 * SEC), 0);
    tally_wait(&r.t, 2);
    ck_assert_int_eq(r.inner_cancel_rc, 0);
    ck_assert_int_eq(r.inner_status, -ECANCELED);
    ck_assert_int_eq(r.inner_calls, 1);
    ck_assert_int_eq(r.set_rc, 0);
    devq_signal_destroy(r.other);
    devq_signal_destroy(r.t.done);
}
END_TEST

START_TEST(release_keeps_callback)
{
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct rec a = { .t = &t };
    devq_notify *h;
    ck_assert_int_eq(devq_signal_notify(s, 2, rec_cb, &a, &h), 0);
    ck_assert_int_eq(devq_notify_release(h), 0);
    ck_assert_int_eq(devq_signal_set(s, 2), 0);
    tally_wait(&t, 1);
    ck_assert_int_eq(a.status, 0);
    ck_assert_int_eq(a.calls, 1);
    devq_signal_destroy(s);
    devq_signal_destroy(t.done);
}
END_TEST

/* After fork the child has no notifier thread: its first notify starts
 * a new one. */
START_TEST(notify_after_fork)
{
#if defined(DEVQ_TSAN)
    return; /* TSan cannot start threads after a multi-threaded fork */
#endif
    struct tally t;
    tally_init(&t);
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    struct rec a = { .t = &t };
    ck_assert_int_eq(devq_signal_notify(s, 1, rec_cb, &a, NULL), 0); /* parent's notifier */
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    tally_wait(&t, 1);
    pid_t pid = fork();
    if (pid == 0) {
        struct rec b = { .t = &t };
        int ok = devq_signal_notify(s, 2, rec_cb, &b, NULL) == 0 && devq_signal_set(s, 2) == 0 &&
                 devq_signal_wait(t.done, 2, 10 * SEC) == 0 && b.status == 0 && b.on_notifier;
        _exit(ok ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    devq_signal_destroy(s);
    devq_signal_destroy(t.done);
}
END_TEST

/* ---- wait_fd ---- */

static int readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

START_TEST(wait_fd_poll)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    int fd, fd_done, fd_fail;
    ck_assert_int_eq(devq_signal_wait_fd(s, 3, &fd), 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(devq_signal_wait_fd(s, 0, &fd_done), 0);
    ck_assert(readable(fd_done, 1000)); /* already reached */
    ck_assert(!readable(fd, 0));
    ck_assert_int_eq(devq_signal_set(s, 2), 0);
    ck_assert(!readable(fd, 20));
    ck_assert_int_eq(devq_signal_set(s, 3), 0);
    ck_assert(readable(fd, 5000));
    ck_assert_int_eq(devq_signal_wait_fd(s, 100, &fd_fail), 0);
    ck_assert(!readable(fd_fail, 0));
    ck_assert_int_eq(devq_signal_fail(s, -EIO), 0);
    ck_assert(readable(fd_fail, 5000));
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    close(fd);
    close(fd_done);
    close(fd_fail);
    ck_assert_int_eq(devq_signal_wait_fd(s, 1, NULL), -EINVAL);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(wait_fd_closed_early)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    int fd;
    ck_assert_int_eq(devq_signal_wait_fd(s, 4, &fd), 0);
    close(fd);
    /* The number is likely reused now: lib must not write into it. */
    int other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ck_assert_int_ge(other, 0);
    ck_assert_int_eq(devq_signal_set(s, 4), 0);
    uint64_t c;
    ck_assert_int_eq(read(other, &c, sizeof c), -1);
    ck_assert_int_eq(errno, EAGAIN);
    close(other);
    /* One left pending at destroy: still no leak, no stray write. */
    ck_assert_int_eq(devq_signal_wait_fd(s, 9, &fd), 0);
    close(fd);
    devq_signal_destroy(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("signal_notify");
    TCase *tc = tcase_create("notify");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reached_failed_cancelled);
    tcase_add_test(tc, destroy_cancels_pending);
    tcase_add_test(tc, notify_at_uint64_max);
    tcase_add_test(tc, notify_storm);
    tcase_add_test(tc, cancel_races_set);
    tcase_add_test(tc, callbacks_call_devq);
    tcase_add_test(tc, release_keeps_callback);
    tcase_add_test(tc, notify_after_fork);
    suite_add_tcase(s, tc);
    tc = tcase_create("wait_fd");
    tcase_add_test(tc, wait_fd_poll);
    tcase_add_test(tc, wait_fd_closed_early);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
