/* SPDX-License-Identifier: MIT */
/* Randomized property test of the tracker: 4 queues, 16 buffers, many
 * random ops with random access modes and random delays.  Each buffer
 * holds a version stamp; the sequential order of submission is the
 * reference: every read must see the stamp of the last write before it
 * in that order and must not see it change while it runs (a missed RAW,
 * WAR or WAW makes the op fail with -EILSEQ).  Seeded and reproducible:
 * CONF_SEED=<n> replays a run; CONF_OPS=<n> changes its length.
 *
 * The second variant gates some batches on a host signal set later, in
 * random steps: those batches are deferred (cpu) or wait on the device
 * (cuda, hip) while later ones are submitted, and submission order must
 * still be the reference (lib/hazard.c). */
#include "conf.h"

struct conf_op_args {
    uint32_t modes[3];
    uint32_t expect[3];
    uint32_t me;
    uint32_t delay_us;
};

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void property_run(int host_gates)
{
    enum { NQ = 4, NB = 16 };
    const char *e = getenv("CONF_OPS");
    uint32_t nops = e ? (uint32_t)strtoul(e, NULL, 10) : 10000;
    e = getenv("CONF_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL);
    rng = seed ? seed : 1;
    const char *name = host_gates ? "tracker property test with host gates" : "tracker property test";
    fprintf(stderr, "%s: CONF_SEED=%llu CONF_OPS=%u\n", name, (unsigned long long)seed, nops);
    devq_signal *gate = conf_signal(0);
    uint64_t gate_promised = 0, gate_set = 0;

    devq_device *dev = conf_open();
    devq_kernel *k = conf_kernel(dev, "oracle_op");
    devq_queue *q[NQ];
    devq_buffer *buf[NB], *dummy = conf_buffer(dev, 4);
    uint32_t version[NB] = { 0 }, zero = 0;
    for (int i = 0; i < NQ; i++)
        q[i] = conf_queue(dev);
    for (int i = 0; i < NB; i++) {
        buf[i] = conf_buffer(dev, 4);
        conf_upload(q[0], buf[i], &zero, 4);
    }
    conf_upload(q[0], dummy, &zero, 4);
    devq_stats s0, s1;
    ck_assert_int_eq(devq_stats_get(dev, &s0), 0);
    devq_launch l = conf_launch1(1, 1);
    uint64_t batches = 0;
    /* The reference order is submission order, so a batch of several ops
     * is recorded and submitted on one queue before another queue is used. */
    devq_queue *qq = q[0];
    uint32_t left_in_batch = 0;
    for (uint32_t n = 1; n <= nops; n++) {
        if (left_in_batch == 0) {
            qq = q[rnd(NQ)];
            left_in_batch = rnd(8) == 0 ? 2 + rnd(4) : 1;
            if (host_gates && rnd(6) == 0)
                ck_assert_int_eq(devq_queue_wait(qq, gate, ++gate_promised), 0);
        }
        struct conf_op_args o = { .me = n, .delay_us = rnd(20) == 0 ? rnd(200) : 0 };
        devq_arg a[4];
        int used[NB] = { 0 };
        int nb = 1 + (int)rnd(3);
        for (int s = 0; s < 3; s++) {
            if (s >= nb) {
                a[s] = DEVQ_ARG_BUF(dummy, DEVQ_READ);
                o.modes[s] = 0;
                continue;
            }
            int b;
            do
                b = (int)rnd(NB);
            while (used[b]);
            used[b] = 1;
            enum devq_access acc = (enum devq_access)(1 + rnd(3));
            a[s] = DEVQ_ARG_BUF(buf[b], acc);
            o.modes[s] = acc;
            o.expect[s] = version[b];
            if (acc & DEVQ_WRITE)
                version[b] = n;
        }
        a[3] = DEVQ_ARG_VAL(&o);
        ck_assert_int_eq(devq_queue_exec(qq, k, a, 4, &l), 0);
        if (--left_in_batch == 0 || n == nops) {
            int r = devq_queue_submit(qq);
            ck_assert_msg(r == 0, "submit: %d %s", r, devq_errmsg());
            batches++;
            left_in_batch = 0;
            /* The host lets gated batches go in random steps, later. */
            if (gate_set < gate_promised && rnd(5) == 0) {
                gate_set += 1 + rnd((uint32_t)(gate_promised - gate_set));
                ck_assert_int_eq(devq_signal_set(gate, gate_set), 0);
            }
        }
    }
    if (gate_promised > gate_set)
        ck_assert_int_eq(devq_signal_set(gate, gate_promised), 0);
    for (int i = 0; i < NQ; i++) {
        int r = devq_queue_finish(q[i], 120 * SEC);
        ck_assert_msg(r == 0, "seed %llu: queue %d: %d %s", (unsigned long long)seed, i, r, devq_errmsg());
    }
    ck_assert_int_eq(devq_stats_get(dev, &s1), 0);
    ck_assert_uint_eq(s1.batches_failed, s0.batches_failed);
    for (int i = 0; i < NB; i++) {
        uint32_t got;
        conf_download(q[0], &got, buf[i], 4);
        ck_assert_msg(got == version[i], "seed %llu: buffer %d has stamp %u, want %u",
                      (unsigned long long)seed, i, got, version[i]);
    }
    /* Never more waits than the naive strategy (every other stream, every
     * batch; with gates, a batch held at one op issues in two parts, so
     * the naive strategy is every other stream at every op). */
    uint64_t inserted = s1.waits_inserted - s0.waits_inserted;
    uint64_t naive = (host_gates ? nops : batches) * (NQ - 1);
    ck_assert_uint_le(inserted, naive);
    fprintf(stderr,
            "%s: %u ops, %llu batches (%llu deferred), %llu waits inserted, %llu elided (naive %llu)\n", name,
            nops, (unsigned long long)batches,
            (unsigned long long)(s1.batches_deferred - s0.batches_deferred), (unsigned long long)inserted,
            (unsigned long long)(s1.waits_elided - s0.waits_elided), (unsigned long long)naive);
    devq_signal_destroy(gate);
    for (int i = 0; i < NB; i++)
        devq_buffer_free(buf[i], NULL);
    devq_buffer_free(dummy, NULL);
    for (int i = 0; i < NQ; i++)
        devq_queue_destroy(q[i]);
    devq_kernel_destroy(k);
    devq_device_close(dev);
}

START_TEST(random_ops_match_sequential_reference)
{
    property_run(0);
}
END_TEST

START_TEST(random_gated_ops_match_sequential_reference)
{
    property_run(1);
}
END_TEST

Suite *conf_tracker_suite(void)
{
    Suite *s = suite_create("tracker");
    TCase *tc = tcase_create("tracker");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, random_ops_match_sequential_reference);
    tcase_add_test(tc, random_gated_ops_match_sequential_reference);
    suite_add_tcase(s, tc);
    return s;
}
