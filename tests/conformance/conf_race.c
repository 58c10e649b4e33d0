/* SPDX-License-Identifier: MIT */
/* Concurrent misuse of one queue: threads race every kind of recording
 * call (timestamps, devq_barrier, fills, signals, host functions) and
 * submit on the same queue.  A queue records from one thread at a time,
 * so each call must either do its whole job (0) or nothing (-EBUSY);
 * nothing may crash, no error may stick, and every op that a call
 * reported recorded must run exactly as recorded.  Bounded in time and
 * count so it stays short under the sanitizers. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "conf.h"
#include "../helpers/check_main.h"

#define RACE_ROUNDS 4
#define RACE_MS 300              /* each thread stops after this long (CONF_RACE_MS)... */
#define RACE_ITERS_PER_MS 500    /* ...or after this many calls per ms of that */
#define RACE_GRACE_NS (10 * SEC) /* see running() */
#define KEEP_TS 2048             /* timestamps kept to check after the run */

struct race {
    devq_queue *q, *other;
    devq_buffer *buf;
    devq_signal *sig;
    uint64_t deadline;
    int max_iters;
    int timing;
    _Atomic int bad; /* a call returned neither 0 nor -EBUSY */
    char bad_msg[256];
    /* Per thread, read after join. */
    devq_timestamp *ts[KEEP_TS];
    size_t nts;
    uint64_t ok_ts, ok_barrier, ok_host_fn, last_signal;
    _Atomic uint64_t ok_submit; /* two submitting threads */
    int last_fill;              /* byte of the last recorded fill, -1: none */
    _Atomic uint64_t host_fn_runs;
};

/* Until the deadline or max_iters calls; a thread that has not got
 * through once yet (slow sanitizer builds, a preempted role holder) goes
 * on for up to RACE_GRACE_NS more, when the others have mostly stopped. */
static int running(struct race *r, int i, uint64_t ok)
{
    if (atomic_load(&r->bad))
        return 0;
    uint64_t now = check_now_ns();
    return (i < r->max_iters && now < r->deadline) || (ok == 0 && now < r->deadline + RACE_GRACE_NS);
}

/* 0 and -EBUSY are the only answers a racing call may give. */
static int judge(struct race *r, const char *what, int rc)
{
    if (rc == -EBUSY && strcmp(what, "devq_queue_submit"))
        sched_yield(); /* recorders step aside so submit gets through */
    if (rc == 0 || rc == -EBUSY)
        return rc == 0;
    int expected = 0;
    if (atomic_compare_exchange_strong(&r->bad, &expected, 1))
        snprintf(r->bad_msg, sizeof r->bad_msg, "%s returned %d: %s", what, rc, devq_errmsg());
    return 0;
}

static void *race_timestamps(void *arg)
{
    struct race *r = arg;
    for (int i = 0; running(r, i, r->ok_ts); i++) {
        devq_timestamp *ts = NULL;
        if (!judge(r, "devq_queue_timestamp", devq_queue_timestamp(r->q, &ts)))
            continue;
        r->ok_ts++;
        if (r->nts < KEEP_TS)
            r->ts[r->nts++] = ts;
        else
            devq_timestamp_destroy(ts);
    }
    return NULL;
}

static void *race_barriers(void *arg)
{
    struct race *r = arg;
    devq_queue *qs[2] = { r->q, r->other };
    for (int i = 0; running(r, i, r->ok_barrier); i++) {
        r->ok_barrier += judge(r, "devq_barrier", devq_barrier(qs, 2));
        /* The other queue is this thread's alone: keep its batches moving. */
        if (i % 16 == 0)
            judge(r, "devq_queue_submit(other)", devq_queue_submit(r->other));
    }
    return NULL;
}

static void count_host_fn(void *arg)
{
    struct race *r = arg;
    atomic_fetch_add(&r->host_fn_runs, 1);
}

static void *race_recording(void *arg)
{
    struct race *r = arg;
    uint64_t v = 0;
    for (int i = 0; running(r, i, r->ok_host_fn); i++) {
        switch (i % 4) {
        case 0:
            if (judge(r, "devq_queue_fill", devq_queue_fill(r->q, r->buf, 0, 256, (uint8_t)(i / 4))))
                r->last_fill = (uint8_t)(i / 4);
            break;
        case 1:
            if (judge(r, "devq_queue_signal", devq_queue_signal(r->q, r->sig, v + 1)))
                r->last_signal = ++v;
            break;
        case 2:
            r->ok_host_fn += judge(r, "devq_queue_host_fn", devq_queue_host_fn(r->q, count_host_fn, r));
            break;
        default:
            judge(r, "devq_queue_barrier", devq_queue_barrier(r->q));
            break;
        }
    }
    return NULL;
}

static void *race_submits(void *arg)
{
    struct race *r = arg;
    /* Counted by successes: a recorder preempted while it holds the
     * role turns many attempts in a row into -EBUSY. */
    while (atomic_load(&r->ok_submit) < (uint64_t)r->max_iters && running(r, 0, atomic_load(&r->ok_submit)))
        atomic_fetch_add(&r->ok_submit, (uint64_t)judge(r, "devq_queue_submit", devq_queue_submit(r->q)));
    return NULL;
}

/* One round on fresh queues; returns how many racing submits succeeded. */
static uint64_t race_round(devq_device *dev)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    struct race *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    r->q = conf_queue(dev);
    r->other = conf_queue(dev);
    r->buf = conf_buffer(dev, 256);
    r->sig = conf_signal(0);
    r->timing = (info.caps & DEVQ_CAP_TIMING) != 0;
    r->last_fill = -1;
    /* CONF_RACE_MS=5000 runs each round longer (to hunt a rare interleaving). */
    const char *env = getenv("CONF_RACE_MS");
    long ms = env && atol(env) > 0 && atol(env) < 600000 ? atol(env) : RACE_MS;
    r->deadline = check_now_ns() + (uint64_t)ms * MS;
    r->max_iters = (int)ms * RACE_ITERS_PER_MS;
    void *(*fns[5])(void *) = { race_timestamps, race_barriers, race_recording, race_submits, race_submits };
    pthread_t th[5];
    int started = 0;
    for (int i = 0; i < 5; i++) {
        if (fns[i] == race_timestamps && !r->timing)
            continue;
        ck_assert_int_eq(pthread_create(&th[started++], NULL, fns[i], r), 0);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    ck_assert_msg(!atomic_load(&r->bad), "%s", r->bad_msg);

    /* Whatever was recorded last goes out now; nothing may have stuck. */
    ck_assert_int_eq(devq_queue_submit(r->q), 0);
    ck_assert_int_eq(devq_queue_submit(r->other), 0);
    ck_assert_msg(devq_queue_finish(r->q, 30 * SEC) == 0, "finish: %s", devq_errmsg());
    ck_assert_msg(devq_queue_finish(r->other, 30 * SEC) == 0, "finish other: %s", devq_errmsg());
    ck_assert_uint_gt(r->ok_barrier, 0);

    /* Every recorded op ran, once, as what it was recorded as. */
    ck_assert_uint_eq(atomic_load(&r->host_fn_runs), r->ok_host_fn);
    ck_assert_uint_eq(devq_signal_value(r->sig), r->last_signal);
    if (r->last_fill >= 0) {
        unsigned char out[256];
        conf_download(r->q, out, r->buf, sizeof out);
        for (size_t i = 0; i < sizeof out; i++)
            ck_assert_int_eq(out[i], r->last_fill);
    }
    for (size_t i = 0; i < r->nts; i++) {
        uint64_t ns = 0;
        ck_assert_msg(devq_timestamp_elapsed(r->ts[0], r->ts[i], &ns) == 0, "timestamp %zu of %zu: %s", i,
                      r->nts, devq_errmsg());
    }
    for (size_t i = 0; i < r->nts; i++)
        devq_timestamp_destroy(r->ts[i]);
    if (r->timing)
        ck_assert_uint_gt(r->ok_ts, 0);

    ck_assert_int_eq(devq_buffer_free(r->buf, NULL), 0);
    devq_signal_destroy(r->sig);
    devq_queue_destroy(r->q);
    devq_queue_destroy(r->other);
    uint64_t ok_submit = atomic_load(&r->ok_submit);
    free(r);
    return ok_submit;
}

START_TEST(racing_recorders_get_ebusy_and_corrupt_nothing)
{
    devq_device *dev = conf_open();
    /* Each round is short; several fresh ones catch more interleavings. */
    uint64_t submits = 0;
    for (int round = 0; round < RACE_ROUNDS; round++)
        submits += race_round(dev);
    ck_assert_uint_gt(submits, 0); /* submit did race the recorders */
    devq_device_close(dev);
}
END_TEST

Suite *conf_race_suite(void)
{
    Suite *s = suite_create("race");
    TCase *tc = tcase_create("race");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, racing_recorders_get_ebusy_and_corrupt_nothing);
    suite_add_tcase(s, tc);
    return s;
}
