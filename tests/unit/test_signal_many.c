/* SPDX-License-Identifier: MIT */
/* devq_signal_wait_many, ALL and ANY, with futex_waitv and with the
 * fallback forced (loop index 1), and above the futex_waitv limit. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>
#include "signal_impl.h"
#include "../helpers/check_main.h"

#define MS 1000000ull
#define SEC 1000000000ull

struct later {
    devq_signal *s;
    uint64_t value;
    int fail; /* fail with this instead of set */
    long delay_ms;
};

static void *do_later(void *p)
{
    struct later *l = p;
    check_nap_ms(l->delay_ms);
    if (l->fail)
        devq__signal_fail_cause(l->s, l->fail, "producer crashed");
    else
        devq_signal_set(l->s, l->value);
    return NULL;
}

static void make(devq_signal **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(devq_signal_create(0, &s[i]), 0);
}

static void unmake(devq_signal **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        devq_signal_destroy(s[i]);
}

START_TEST(all_mode)
{
    devq__signal_force_no_waitv(_i);
    devq_signal *s[3];
    make(s, 3);
    uint64_t v[3] = { 1, 2, 3 };
    ck_assert_int_eq(devq_signal_set(s[0], 1), 0);
    ck_assert_int_eq(devq_signal_set(s[2], 3), 0);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 3, DEVQ_WAIT_ALL, 0, NULL), -ETIMEDOUT);
    char want[DEVQ_LABEL_MAX + 96]; /* a label and the fixed text */
    snprintf(want, sizeof want,
             "devq_signal_wait_many: timed out (ALL of 3): %s "
             "(index 1) is at 0, waiting for 2",
             devq__signal_label(s[1]).s);
    ck_assert_str_eq(devq_errmsg(), want);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 3, DEVQ_WAIT_ALL, 10 * MS, NULL), -ETIMEDOUT);
    /* Woken when the last one arrives. */
    struct later l = { s[1], 2, 0, 30 };
    pthread_t t;
    pthread_create(&t, NULL, do_later, &l);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 3, DEVQ_WAIT_ALL, 20 * SEC, NULL), 0);
    pthread_join(t, NULL);
    ck_assert_uint_ge(devq_signal_value(s[1]), 2);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 0, DEVQ_WAIT_ALL, 0, NULL), 0);
    unmake(s, 3);
}
END_TEST

START_TEST(any_mode)
{
    devq__signal_force_no_waitv(_i);
    devq_signal *s[4];
    make(s, 4);
    uint64_t v[4] = { 5, 5, 5, 5 };
    size_t first = 99;
    ck_assert_int_eq(devq_signal_wait_many(s, v, 4, DEVQ_WAIT_ANY, 0, &first), -ETIMEDOUT);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "timed out (ANY of 4)"));
    ck_assert_uint_eq(first, 99);
    struct later l = { s[2], 5, 0, 30 };
    pthread_t t;
    pthread_create(&t, NULL, do_later, &l);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 4, DEVQ_WAIT_ANY, 20 * SEC, &first), 0);
    pthread_join(t, NULL);
    ck_assert_uint_eq(first, 2);
    /* A lower value elsewhere does not count. */
    ck_assert_int_eq(devq_signal_set(s[3], 4), 0);
    first = 99;
    ck_assert_int_eq(devq_signal_wait_many(s, v, 4, DEVQ_WAIT_ANY, 0, &first), 0);
    ck_assert_uint_eq(first, 2);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 0, DEVQ_WAIT_ANY, 0, NULL), -EINVAL);
    ck_assert_int_eq(devq_signal_wait_many(s, v, 4, (enum devq_wait_mode)7, 0, NULL), -EINVAL);
    ck_assert_int_eq(devq_signal_wait_many(NULL, v, 4, DEVQ_WAIT_ANY, 0, NULL), -EINVAL);
    devq_signal *bad[2] = { s[0], NULL };
    ck_assert_int_eq(devq_signal_wait_many(bad, v, 2, DEVQ_WAIT_ANY, 0, NULL), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "s[1]"));
    unmake(s, 4);
}
END_TEST

START_TEST(failure_wakes)
{
    devq__signal_force_no_waitv(_i);
    for (int mode = 0; mode < 2; mode++) {
        devq_signal *s[3];
        make(s, 3);
        uint64_t v[3] = { 10, 10, 10 };
        struct later l = { s[1], 0, -ENODEV, 30 };
        pthread_t t;
        pthread_create(&t, NULL, do_later, &l);
        size_t first = 99;
        ck_assert_int_eq(devq_signal_wait_many(s, v, 3, (enum devq_wait_mode)mode, 20 * SEC, &first),
                         -ENODEV);
        pthread_join(t, NULL);
        ck_assert_str_eq(devq_errmsg(), "producer crashed");
        ck_assert_uint_eq(first, 1);
        /* Even with another one reached, ANY reports the failure. */
        ck_assert_int_eq(devq_signal_set(s[0], 10), 0);
        ck_assert_int_eq(devq_signal_wait_many(s, v, 3, DEVQ_WAIT_ANY, 0, NULL), -ENODEV);
        unmake(s, 3);
    }
}
END_TEST

START_TEST(duplicates)
{
    devq__signal_force_no_waitv(_i);
    devq_signal *s[1];
    make(s, 1);
    devq_signal *dup[3] = { s[0], s[0], s[0] };
    uint64_t v[3] = { 3, 1, 2 };
    struct later l = { s[0], 3, 0, 20 };
    pthread_t t;
    pthread_create(&t, NULL, do_later, &l);
    ck_assert_int_eq(devq_signal_wait_many(dup, v, 3, DEVQ_WAIT_ALL, 20 * SEC, NULL), 0);
    pthread_join(t, NULL);
    unmake(s, 1);
}
END_TEST

START_TEST(above_waitv_limit)
{
    enum { N = 200 };
    devq__signal_force_no_waitv(_i);
    devq_signal *s[N];
    uint64_t v[N];
    make(s, N);
    for (size_t i = 0; i < N; i++)
        v[i] = 1;
    struct later l = { s[150], 1, 0, 30 };
    pthread_t t;
    pthread_create(&t, NULL, do_later, &l);
    size_t first = 0;
    ck_assert_int_eq(devq_signal_wait_many(s, v, N, DEVQ_WAIT_ANY, 20 * SEC, &first), 0);
    pthread_join(t, NULL);
    ck_assert_uint_eq(first, 150);
    /* Wakers are unregistered afterwards: nothing pending is left. */
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(s[i]->nheap, 0);
    unmake(s, N);
}
END_TEST

/* ANY over 16 signals, one set per round from another thread: never a
 * lost wakeup, first_ready always names a reached one. */
START_TEST(any_churn)
{
    enum { N = 16 };
    devq__signal_force_no_waitv(_i);
    devq_signal *s[N];
    make(s, N);
    for (int r = 1; r <= 2000; r++) {
        uint64_t v[N];
        for (size_t i = 0; i < N; i++)
            v[i] = devq_signal_value(s[i]) + 1;
        size_t k = (size_t)r % N;
        struct later l = { s[k], v[k], 0, 0 };
        pthread_t t;
        pthread_create(&t, NULL, do_later, &l);
        size_t first = 99;
        ck_assert_int_eq(devq_signal_wait_many(s, v, N, DEVQ_WAIT_ANY, 20 * SEC, &first), 0);
        ck_assert_uint_lt(first, N);
        ck_assert_uint_ge(devq_signal_value(s[first]), v[first]);
        pthread_join(t, NULL);
    }
    unmake(s, N);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("signal_many");
    TCase *tc = tcase_create("wait_many");
    tcase_set_timeout(tc, 120);
    /* _i = 0: futex_waitv; _i = 1: the fallback, forced. */
    tcase_add_loop_test(tc, all_mode, 0, 2);
    tcase_add_loop_test(tc, any_mode, 0, 2);
    tcase_add_loop_test(tc, failure_wakes, 0, 2);
    tcase_add_loop_test(tc, duplicates, 0, 2);
    tcase_add_loop_test(tc, above_waitv_limit, 0, 2);
    tcase_add_loop_test(tc, any_churn, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
