/* SPDX-License-Identifier: MIT */
/* Buffer hazards against deferred work: submission order defines them.
 *
 * A batch that waits for a value nobody has set yet is submitted but not
 * running; work submitted after it on other queues that touches the same
 * buffers must still see its writes (RAW), must not overwrite what it
 * reads (WAR) and must not be overwritten by it (WAW).  The cpu backend
 * parks such batches on the host; cuda and hip wait on the device: the
 * results must be the same. */
#include "conf.h"

#define N 256

static devq_buffer *filled(devq_device *dev, devq_queue *q, uint8_t byte)
{
    devq_buffer *b = conf_buffer(dev, N);
    ck_assert_int_eq(devq_queue_fill(q, b, 0, N, byte), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    return b;
}

static void assert_all(const uint8_t *p, uint8_t byte, const char *what)
{
    for (size_t i = 0; i < N; i++)
        ck_assert_msg(p[i] == byte, "%s[%zu] = %#x, expected %#x", what, i, p[i], byte);
}

/* Most tests: one device, two queues, a buffer x filled with 0x11. */
struct fx {
    devq_device *dev;
    devq_queue *q1, *q2;
    devq_buffer *x;
};

static void fx_open(struct fx *f)
{
    f->dev = conf_open();
    f->q1 = conf_queue(f->dev);
    f->q2 = conf_queue(f->dev);
    f->x = filled(f->dev, f->q1, 0x11);
}

static void fx_close(struct fx *f)
{
    ck_assert_int_eq(devq_buffer_free(f->x, NULL), 0);
    if (f->q1)
        devq_queue_destroy(f->q1);
    devq_queue_destroy(f->q2);
    devq_device_close(f->dev);
}

START_TEST(read_after_deferred_write)
{
    struct fx f;
    fx_open(&f);
    devq_signal *go = conf_signal(0), *done = conf_signal(0);
    uint8_t host[N];
    memset(host, 0x55, sizeof host);
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xaa), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_read(f.q2, host, f.x, 0, N), 0); /* submitted after the write */
    ck_assert_int_eq(devq_queue_signal(f.q2, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    conf_sleep_ms(20);
    ck_assert_uint_eq(devq_signal_value(done), 0); /* the read waits for the write */
    assert_all(host, 0x55, "host before the write ran");
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    assert_all(host, 0xaa, "host");
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    devq_signal_destroy(go);
    devq_signal_destroy(done);
    fx_close(&f);
}
END_TEST

START_TEST(write_after_deferred_read)
{
    struct fx f;
    fx_open(&f);
    devq_signal *go = conf_signal(0);
    uint8_t seen[N], final[N];
    memset(seen, 0, sizeof seen);
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_read(f.q1, seen, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q2, f.x, 0, N, 0xbb), 0); /* must not overtake the read */
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    conf_sleep_ms(10);
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    assert_all(seen, 0x11, "read by the deferred batch");
    conf_download(f.q1, final, f.x, N);
    assert_all(final, 0xbb, "x");
    devq_signal_destroy(go);
    fx_close(&f);
}
END_TEST

START_TEST(write_after_deferred_write)
{
    struct fx f;
    fx_open(&f);
    devq_signal *go = conf_signal(0);
    uint8_t final[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0x01), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q2, f.x, 0, N, 0x02), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    conf_sleep_ms(10);
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    conf_download(f.q2, final, f.x, N);
    assert_all(final, 0x02, "x (last submitted write wins)");
    devq_signal_destroy(go);
    fx_close(&f);
}
END_TEST

/* q1: [wait go, x = a1] [x = a2]; q2: [y = x]; q3: [host = y].  The
 * copy must see a1 (not 11, not a2), and what q3 reads must be that. */
START_TEST(chain_through_deferred_batches)
{
    struct fx f;
    fx_open(&f);
    devq_queue *q3 = conf_queue(f.dev);
    devq_buffer *y = filled(f.dev, f.q1, 0x22);
    devq_signal *go = conf_signal(0);
    uint8_t host[N], fx[N];
    memset(host, 0, sizeof host);
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_copy(f.q2, y, 0, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    ck_assert_int_eq(devq_queue_read(q3, host, y, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(q3), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa2), 0); /* behind q1's deferred head */
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    conf_sleep_ms(10);
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q3, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    assert_all(host, 0xa1, "y read on q3");
    conf_download(f.q1, fx, f.x, N);
    assert_all(fx, 0xa2, "x");
    ck_assert_int_eq(devq_buffer_free(y, NULL), 0);
    devq_signal_destroy(go);
    devq_queue_destroy(q3);
    fx_close(&f);
}
END_TEST

/* Only the op that conflicts waits: the signal before it in the same
 * batch goes out, so the deferred batch that waits for it can run. */
START_TEST(ops_before_the_conflict_run)
{
    struct fx f;
    fx_open(&f);
    devq_buffer *y = filled(f.dev, f.q1, 0x22);
    devq_signal *mid = conf_signal(0);
    uint8_t host[N], fy[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, mid, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q2, y, 0, N, 0x33), 0);
    ck_assert_int_eq(devq_queue_signal(f.q2, mid, 1), 0);        /* releases q1 */
    ck_assert_int_eq(devq_queue_read(f.q2, host, f.x, 0, N), 0); /* needs q1's write */
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    assert_all(host, 0xa1, "x read on q2");
    conf_download(f.q1, fy, y, N);
    assert_all(fy, 0x33, "y");
    ck_assert_int_eq(devq_buffer_free(y, NULL), 0);
    devq_signal_destroy(mid);
    fx_close(&f);
}
END_TEST

/* q1 waits for what q2 signals after a read of what q1 writes: a cycle
 * through a buffer, named on timeout, broken by the host. */
START_TEST(cycle_through_a_buffer)
{
    struct fx f;
    fx_open(&f);
    devq_signal *s = conf_signal(0);
    uint8_t host[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, s, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_read(f.q2, host, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    ck_assert_int_eq(devq_queue_signal(f.q2, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 20 * MS), -ETIMEDOUT);
    ck_assert_msg(strstr(devq_errmsg(), "wait cycle"), "errmsg: %s", devq_errmsg());
    devq_stats st;
    ck_assert_int_eq(devq_stats_get(f.dev, &st), 0);
    ck_assert_uint_eq(st.wait_cycles, 1);       /* counted once */
    ck_assert_int_eq(devq_signal_set(s, 1), 0); /* the host breaks it */
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0);
    assert_all(host, 0xa1, "x read on q2");
    devq_signal_destroy(s);
    fx_close(&f);
}
END_TEST

/* The deferred batch fails (its wait fails): work ordered behind it by
 * a buffer is released, never hangs, and fails in turn, since what it
 * reads was never written (devq(7) FAILURES): no silent stale data. */
START_TEST(failed_deferred_batch_releases_later_work)
{
    struct fx f;
    fx_open(&f);
    devq_signal *go = conf_signal(0), *done = conf_signal(0);
    uint8_t host[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_read(f.q2, host, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_signal(f.q2, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    conf_sleep_ms(10);
    ck_assert_uint_eq(devq_signal_value(done), 0);
    ck_assert_int_eq(devq_signal_fail(go, -EIO), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "reads buffer"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_buffer_status(f.x), -EIO);
    (void)host;
    devq_signal_destroy(go);
    devq_signal_destroy(done);
    fx_close(&f);
}
END_TEST

/* Destroying the queue of the deferred batch cancels it; what waited
 * for it on another queue is released and fails (it reads what the
 * cancelled batch never wrote). */
START_TEST(destroy_releases_later_work)
{
    struct fx f;
    fx_open(&f);
    devq_signal *never = conf_signal(0), *out = conf_signal(0), *done = conf_signal(0);
    uint8_t host[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, never, 1), 0);
    ck_assert_int_eq(devq_queue_fill(f.q1, f.x, 0, N, 0xa1), 0);
    ck_assert_int_eq(devq_queue_signal(f.q1, out, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_read(f.q2, host, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_signal(f.q2, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    devq_queue_destroy(f.q1); /* must not hang */
    f.q1 = NULL;
    ck_assert_int_eq(devq_signal_wait(out, 1, 10 * SEC), -ECANCELED);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), -ECANCELED);
    ck_assert_msg(strstr(devq_errmsg(), "destroyed"), "%s", devq_errmsg());
    (void)host;
    devq_signal_destroy(never);
    devq_signal_destroy(out);
    devq_signal_destroy(done);
    fx_close(&f);
}
END_TEST

/* Reads after a deferred read do not wait for it; ops on other buffers
 * do not wait at all. */
START_TEST(no_false_waits)
{
    struct fx f;
    fx_open(&f);
    devq_buffer *y = filled(f.dev, f.q1, 0x22);
    devq_signal *go = conf_signal(0);
    uint8_t h1[N], h2[N], h3[N];
    ck_assert_int_eq(devq_queue_wait(f.q1, go, 1), 0);
    ck_assert_int_eq(devq_queue_read(f.q1, h1, f.x, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(f.q1), 0);
    ck_assert_int_eq(devq_queue_read(f.q2, h2, f.x, 0, N), 0); /* read after read */
    ck_assert_int_eq(devq_queue_fill(f.q2, y, 0, N, 0x44), 0); /* another buffer */
    ck_assert_int_eq(devq_queue_read(f.q2, h3, y, 0, N), 0);
    ck_assert_int_eq(devq_queue_submit(f.q2), 0);
    ck_assert_int_eq(devq_queue_finish(f.q2, 10 * SEC), 0); /* before the host sets go */
    assert_all(h2, 0x11, "x read on q2");
    assert_all(h3, 0x44, "y read on q2");
    ck_assert_int_eq(devq_signal_set(go, 1), 0);
    ck_assert_int_eq(devq_queue_finish(f.q1, 10 * SEC), 0);
    assert_all(h1, 0x11, "x read on q1");
    ck_assert_int_eq(devq_buffer_free(y, NULL), 0);
    devq_signal_destroy(go);
    fx_close(&f);
}
END_TEST

Suite *conf_hazards_suite(void)
{
    Suite *s = suite_create("hazards");
    TCase *tc = tcase_create("deferred");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, read_after_deferred_write);
    tcase_add_test(tc, write_after_deferred_read);
    tcase_add_test(tc, write_after_deferred_write);
    tcase_add_test(tc, chain_through_deferred_batches);
    tcase_add_test(tc, ops_before_the_conflict_run);
    tcase_add_test(tc, cycle_through_a_buffer);
    tcase_add_test(tc, failed_deferred_batch_releases_later_work);
    tcase_add_test(tc, destroy_releases_later_work);
    tcase_add_test(tc, no_false_waits);
    suite_add_tcase(s, tc);
    return s;
}
