/* SPDX-License-Identifier: MIT */
/* Queues: ordering, cross-queue signals, sticky errors, -EBUSY, many
 * queues, destroy, barriers. */
#include <pthread.h>
#include <stdatomic.h>
#include "conf.h"

START_TEST(order_within_queue)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_kernel *k = conf_kernel(dev, "step");
    devq_buffer *v = conf_buffer(dev, 4);
    uint32_t zero = 0, got = 0;
    conf_upload(q, v, &zero, 4);
    devq_launch l = conf_launch1(1, 1);
    for (uint32_t i = 0; i < 500; i++) {
        devq_arg args[2] = { DEVQ_ARG_BUF(v, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&i) };
        ck_assert_int_eq(devq_queue_exec(q, k, args, 2, &l), 0);
        if (i % 7 == 6)
            ck_assert_int_eq(devq_queue_submit(q), 0);
    }
    ck_assert_int_eq(devq_queue_submit(q), 0);
    int r = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(r == 0, "finish: %d %s", r, devq_errmsg());
    conf_download(q, &got, v, 4);
    ck_assert_uint_eq(got, 500);
    devq_buffer_free(v, NULL);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

static atomic_int flag;
static atomic_int seen_flag;
static void slow_set_flag(void *arg)
{
    (void)arg;
    conf_sleep_ms(30);
    atomic_store(&flag, 1);
}
static void check_flag(void *arg)
{
    (void)arg;
    atomic_store(&seen_flag, atomic_load(&flag) ? 1 : -1);
}

START_TEST(cross_queue_signal_orders)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_signal *s = conf_signal(0);
    atomic_store(&flag, 0);
    atomic_store(&seen_flag, 0);
    ck_assert_int_eq(devq_queue_host_fn(q1, slow_set_flag, NULL), 0);
    ck_assert_int_eq(devq_queue_signal(q1, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_wait(q2, s, 1), 0);
    ck_assert_int_eq(devq_queue_host_fn(q2, check_flag, NULL), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_queue_finish(q2, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&seen_flag), 1);
    ck_assert_uint_eq(devq_signal_value(s), 1);
    devq_stats st;
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    /* Same device: the wait became a stream alignment, no host round trip. */
    ck_assert_uint_ge(st.signal_waits_aligned + st.signal_waits_dropped, 1);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_signal_destroy(s);
    devq_device_close(dev);
}
END_TEST

START_TEST(buffer_hazards_order_queues)
{
    /* No signals: the tracker alone orders a consumer after a producer. */
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_kernel *scale = conf_kernel(dev, "scale");
    devq_kernel *add = conf_kernel(dev, "add");
    enum { N = 1 << 16 };
    float *h = malloc(N * sizeof *h), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++)
        h[i] = (float)(i % 1000);
    devq_buffer *x = conf_buffer(dev, N * 4), *y = conf_buffer(dev, N * 4);
    conf_upload(q1, x, h, N * 4);
    conf_upload(q1, y, h, N * 4);
    devq_launch l = conf_launch1(N, 256);
    float two = 2.0f;
    for (int round = 0; round < 3; round++) {
        devq_arg sa[2] = { DEVQ_ARG_BUF(x, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&two) };
        ck_assert_int_eq(devq_queue_exec(q1, scale, sa, 2, &l), 0);
        ck_assert_int_eq(devq_queue_submit(q1), 0);
        devq_arg aa[2] = { DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ_WRITE) };
        ck_assert_int_eq(devq_queue_exec(q2, add, aa, 2, &l), 0);
        ck_assert_int_eq(devq_queue_submit(q2), 0);
    }
    conf_download(q2, out, y, N * 4);
    for (int i = 0; i < N; i++) {
        float x0 = (float)(i % 1000);
        float want = x0 + 2 * x0 + 4 * x0 + 8 * x0;
        ck_assert_msg(out[i] == want, "y[%d] = %g, want %g", i, out[i], want);
    }
    devq_stats st;
    ck_assert_int_eq(devq_stats_get(dev, &st), 0);
    ck_assert_uint_ge(st.waits_inserted, 3);
    free(h);
    free(out);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_kernel_destroy(scale);
    devq_kernel_destroy(add);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

START_TEST(redundant_waits_are_elided)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    devq_buffer *a = conf_buffer(dev, 64), *b = conf_buffer(dev, 64), *c = conf_buffer(dev, 64);
    ck_assert_int_eq(devq_queue_fill(q1, a, 0, 64, 1), 0);
    ck_assert_int_eq(devq_queue_fill(q1, b, 0, 64, 2), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    devq_stats s0, s1;
    ck_assert_int_eq(devq_stats_get(dev, &s0), 0);
    /* Reading a and b on q2: one wait covers both. */
    ck_assert_int_eq(devq_queue_copy(q2, c, 0, a, 0, 32), 0);
    ck_assert_int_eq(devq_queue_copy(q2, c, 32, b, 0, 32), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.waits_inserted - s0.waits_inserted, 1);
    ck_assert_uint_ge(s1.waits_elided - s0.waits_elided, 1);
    unsigned char out[64];
    conf_download(q2, out, c, 64);
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(out[i], i < 32 ? 1 : 2);
    devq_buffer_free(a, NULL);
    devq_buffer_free(b, NULL);
    devq_buffer_free(c, NULL);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

static atomic_int ran_count;
static void count_fn(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran_count, 1);
}

START_TEST(sticky_error_discards_batch)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_buffer *b = conf_buffer(dev, 64);
    atomic_store(&ran_count, 0);
    devq_signal *promised = conf_signal(0);
    ck_assert_int_eq(devq_queue_host_fn(q, count_fn, NULL), 0);
    ck_assert_int_eq(devq_queue_signal(q, promised, 1), 0);
    int r = devq_queue_fill(q, b, 60, 8, 0); /* past the end */
    ck_assert_int_eq(r, -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "outside"));
    ck_assert_int_eq(devq_queue_host_fn(q, count_fn, NULL), -EINVAL); /* sticky */
    ck_assert_int_eq(devq_queue_exec(q, NULL, NULL, 0, NULL), -EINVAL);
    r = devq_queue_submit(q);
    ck_assert_int_eq(r, -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "discarded"));
    /* What the discarded batch would have signalled fails, naming why. */
    ck_assert_int_eq(devq_signal_wait(promised, 1, 0), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "discarded"));
    devq_signal_destroy(promised);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EINVAL); /* the discard, reported once */
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "discarded"));
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&ran_count), 0); /* nothing of it ran */
    /* The next batch records and runs normally. */
    ck_assert_int_eq(devq_queue_host_fn(q, count_fn, NULL), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&ran_count), 1);
    devq_buffer_free(b, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(bad_arguments_are_errors)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    devq_buffer *b = conf_buffer(dev, 64);
    ck_assert_int_eq(devq_queue_copy(q, b, 0, b, 16, 32), -EINVAL); /* overlap */
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    ck_assert_int_eq(devq_queue_copy(q, b, SIZE_MAX, b, 0, 2), -EINVAL);
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    ck_assert_int_eq(devq_queue_read(q, NULL, b, 0, 4), -EINVAL);
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    ck_assert_int_eq(devq_queue_write(NULL, b, 0, "x", 1), -EINVAL);
    ck_assert_int_eq(devq_queue_wait(q, NULL, 1), -EINVAL);
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    devq_queue_desc bad = { .kind = 7 };
    devq_queue *q2;
    ck_assert_int_eq(devq_queue_create(dev, &bad, &q2), -EINVAL);
    ck_assert_int_eq(devq_buffer_alloc(dev, 0, NULL, 0, &(devq_buffer *){ 0 }), -EINVAL);
    devq_buffer_free(b, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

struct racer {
    devq_queue *q;
    int ok, busy;
};

static void *race_recorder(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < 20000; i++) {
        int e = devq_queue_host_fn(r->q, count_fn, NULL);
        if (e == 0)
            r->ok++;
        else if (e == -EBUSY)
            r->busy++;
    }
    return NULL;
}

START_TEST(concurrent_recorders_get_ebusy)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    atomic_store(&ran_count, 0);
    struct racer a = { .q = q }, b = { .q = q };
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race_recorder, &a);
    pthread_create(&tb, NULL, race_recorder, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.ok + a.busy, 20000);
    ck_assert_int_eq(b.ok + b.busy, 20000);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 30 * SEC), 0);
    /* Every accepted op ran exactly once: nothing lost, nothing doubled. */
    ck_assert_int_eq(atomic_load(&ran_count), a.ok + b.ok);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(many_queues_many_batches)
{
    enum { NQ = 8, NB = 150, N = 1024 };
    devq_device *dev = conf_open();
    devq_kernel *k = conf_kernel(dev, "add_u32");
    devq_queue *q[NQ];
    devq_buffer *buf[NQ];
    devq_signal *done = conf_signal(0);
    uint32_t zeros[N] = { 0 };
    for (int i = 0; i < NQ; i++) {
        q[i] = conf_queue(dev);
        buf[i] = conf_buffer(dev, N * 4);
        conf_upload(q[i], buf[i], zeros, sizeof zeros);
    }
    devq_launch l = conf_launch1(N, 64);
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < NQ; i++) {
            uint32_t inc = (uint32_t)(i + 1);
            devq_arg args[2] = { DEVQ_ARG_BUF(buf[i], DEVQ_READ_WRITE), DEVQ_ARG_VAL(&inc) };
            ck_assert_int_eq(devq_queue_exec(q[i], k, args, 2, &l), 0);
            ck_assert_int_eq(devq_queue_submit(q[i]), 0);
        }
    uint64_t sum = 0;
    uint32_t out[N];
    for (int i = 0; i < NQ; i++) {
        conf_download(q[i], out, buf[i], sizeof out);
        for (int j = 0; j < N; j++)
            sum += out[j];
    }
    ck_assert_uint_eq(sum, (uint64_t)N * NB * (NQ * (NQ + 1) / 2));
    for (int i = 0; i < NQ; i++) {
        devq_buffer_free(buf[i], NULL);
        devq_queue_destroy(q[i]);
    }
    devq_signal_destroy(done);
    devq_kernel_destroy(k);
    devq_device_close(dev);
}
END_TEST

START_TEST(destroy_waits_for_pending_work)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    atomic_store(&flag, 0);
    ck_assert_int_eq(devq_queue_host_fn(q, slow_set_flag, NULL), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_queue_destroy(q);
    ck_assert_int_eq(atomic_load(&flag), 1);
    devq_device_close(dev);
}
END_TEST

START_TEST(destroy_discards_open_batch)
{
    devq_device *dev = conf_open();
    devq_queue *q = conf_queue(dev);
    atomic_store(&ran_count, 0);
    ck_assert_int_eq(devq_queue_host_fn(q, count_fn, NULL), 0);
    devq_queue_destroy(q);
    conf_sleep_ms(10);
    ck_assert_int_eq(atomic_load(&ran_count), 0);
    devq_device_close(dev);
}
END_TEST

static void sleep_fn(void *arg)
{
    conf_sleep_ms((unsigned)(intptr_t)arg);
}

static atomic_int order_log[16];
static atomic_int order_n;
static void log_arg(void *arg)
{
    int n = atomic_fetch_add(&order_n, 1);
    if (n < 16)
        atomic_store(&order_log[n], (int)(intptr_t)arg);
}

START_TEST(barrier_orders_queues)
{
    enum { NQ = 4 };
    devq_device *dev = conf_open();
    devq_queue *q[NQ];
    atomic_store(&order_n, 0);
    for (int i = 0; i < NQ; i++)
        q[i] = conf_queue(dev);
    /* Queue i sleeps 15*(NQ-i) ms then logs i: without the barrier the
     * fast queues' second round would log before the slow first rounds. */
    for (int i = 0; i < NQ; i++) {
        ck_assert_int_eq(devq_queue_host_fn(q[i], sleep_fn, (void *)(intptr_t)(15 * (NQ - i))), 0);
        ck_assert_int_eq(devq_queue_host_fn(q[i], log_arg, (void *)(intptr_t)i), 0);
        ck_assert_int_eq(devq_queue_submit(q[i]), 0);
    }
    ck_assert_int_eq(devq_barrier(q, NQ), 0);
    for (int i = 0; i < NQ; i++) {
        ck_assert_int_eq(devq_queue_host_fn(q[i], log_arg, (void *)(intptr_t)(100 + i)), 0);
        ck_assert_int_eq(devq_queue_submit(q[i]), 0);
    }
    for (int i = 0; i < NQ; i++)
        ck_assert_int_eq(devq_queue_finish(q[i], 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&order_n), 2 * NQ);
    for (int n = 0; n < NQ; n++)
        ck_assert_int_lt(atomic_load(&order_log[n]), 100);
    for (int n = NQ; n < 2 * NQ; n++)
        ck_assert_int_ge(atomic_load(&order_log[n]), 100);
    for (int i = 0; i < NQ; i++)
        devq_queue_destroy(q[i]);
    devq_device_close(dev);
}
END_TEST

START_TEST(synchronize_device)
{
    devq_device *dev = conf_open();
    devq_queue *q1 = conf_queue(dev), *q2 = conf_queue(dev);
    atomic_store(&flag, 0);
    ck_assert_int_eq(devq_queue_host_fn(q2, slow_set_flag, NULL), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_int_eq(devq_device_synchronize(dev, 10 * SEC), 0);
    ck_assert_int_eq(atomic_load(&flag), 1);
    /* A stuck queue is named on timeout. */
    devq_signal *never = conf_signal(0);
    ck_assert_int_eq(devq_queue_wait(q1, never, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_device_synchronize(dev, 20 * MS), -ETIMEDOUT);
    ck_assert_msg(strstr(devq_errmsg(), "queue") && strstr(devq_errmsg(), "waits for signal #"), "errmsg: %s",
                  devq_errmsg());
    ck_assert_int_eq(devq_signal_set(never, 1), 0);
    ck_assert_int_eq(devq_device_synchronize(dev, 10 * SEC), 0);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_signal_destroy(never);
    devq_device_close(dev);
}
END_TEST

Suite *conf_queue_suite(void)
{
    Suite *s = suite_create("queue");
    TCase *tc = tcase_create("queue");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, order_within_queue);
    tcase_add_test(tc, cross_queue_signal_orders);
    tcase_add_test(tc, buffer_hazards_order_queues);
    tcase_add_test(tc, redundant_waits_are_elided);
    tcase_add_test(tc, sticky_error_discards_batch);
    tcase_add_test(tc, bad_arguments_are_errors);
    tcase_add_test(tc, concurrent_recorders_get_ebusy);
    tcase_add_test(tc, many_queues_many_batches);
    tcase_add_test(tc, destroy_waits_for_pending_work);
    tcase_add_test(tc, destroy_discards_open_batch);
    tcase_add_test(tc, barrier_orders_queues);
    tcase_add_test(tc, synchronize_device);
    suite_add_tcase(s, tc);
    return s;
}
