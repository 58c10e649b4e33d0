/* SPDX-License-Identifier: MIT */
/* A graph submission counts each buffer's unissued uses exactly as a
 * one-shot batch does (record.c: one count per buffer per batch, held by
 * its last use), on both of issue.c's paths for a replay's launches: a
 * run bound as one that settles the counts at once (few buffers), and
 * op by op (a run over more buffers than it tracks).  A count left
 * behind would hold a stream-ordered free back for ever; one taken
 * twice would free a buffer still in use.  Reads the counts
 * (struct devq_buffer's `unissued`), so it links lib's internals. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include "buffer.h"
#include "../helpers/check_main.h"

#define NB 12 /* more buffers than a run of launches binds at once (8) */

static int touch(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[0] += 1;
    return 0;
}

static uint32_t unissued(devq_buffer *b)
{
    return atomic_load(&b->unissued);
}

/* A graph of `ops` launches over the first `nbufs` buffers (launch i
 * touches buffer i % nbufs), behind a gate: `subs` submissions held
 * deferred hold one count per buffer each; once they run, none, and
 * none after as many more submitted with the gate open. */
static void check_counts(int ops, int nbufs, int subs)
{
    devq_device *dev;
    devq_queue *q;
    devq_kernel *k;
    devq_signal *gate;
    devq_buffer *b[NB];
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, touch, NULL, "touch", &k), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    for (int i = 0; i < nbufs; i++) {
        ck_assert_int_eq(devq_buffer_alloc(dev, 4, NULL, 0, &b[i]), 0);
        ck_assert_int_eq(devq_queue_fill(q, b[i], 0, 4, 0), 0);
    }
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    for (int i = 0; i < ops; i++) {
        devq_arg a = DEVQ_ARG_BUF(b[i % nbufs], DEVQ_READ_WRITE);
        ck_assert_int_eq(devq_queue_exec(q, k, &a, 1, &l), 0);
    }
    devq_graph *g;
    devq_graph_exec *ge;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    for (int i = 0; i < nbufs; i++)
        ck_assert_uint_eq(unissued(b[i]), 0); /* the capture holds none */
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(g);
    for (int s = 0; s < subs; s++)
        ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    for (int i = 0; i < nbufs; i++)
        ck_assert_uint_eq(unissued(b[i]), (uint32_t)subs);
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    /* The gate is open: these are issued at submit, never parked (a
     * parked batch settles op by op, for its hazards). */
    for (int s = 0; s < subs; s++)
        ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    for (int i = 0; i < nbufs; i++) {
        ck_assert_uint_eq(unissued(b[i]), 0);
        uint32_t v = 0;
        ck_assert_int_eq(devq_queue_read(q, &v, b[i], 0, 4), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
        ck_assert_uint_eq(v, (uint32_t)(2 * subs * (ops / nbufs + (i < ops % nbufs))));
    }
    devq_graph_exec_destroy(ge);
    for (int i = 0; i < nbufs; i++)
        ck_assert_int_eq(devq_buffer_free(b[i], q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    devq_signal_destroy(gate);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
}

/* A rebound buffer moves its counts with it: the exec's run plan (which
 * buffers a run binds and settles, graph_plan.c) is made again, so the
 * new buffer is counted and settled and the old one left alone. */
START_TEST(rebound_buffer_settled_in_its_place)
{
    devq_device *dev;
    devq_queue *q;
    devq_kernel *k;
    devq_signal *gate;
    devq_buffer *x, *y, *z;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, touch, NULL, "touch", &k), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4, NULL, 0, &x), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4, NULL, 0, &y), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 4, NULL, 0, &z), 0);
    ck_assert_int_eq(devq_queue_fill(q, x, 0, 4, 0), 0);
    ck_assert_int_eq(devq_queue_fill(q, y, 0, 4, 0), 0);
    ck_assert_int_eq(devq_queue_fill(q, z, 0, 4, 0), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    for (int i = 0; i < 6; i++) {
        devq_arg a = DEVQ_ARG_BUF(i % 2 ? y : x, DEVQ_READ_WRITE);
        ck_assert_int_eq(devq_queue_exec(q, k, &a, 1, &l), 0);
    }
    devq_graph *g;
    devq_graph_exec *ge;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(g);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* x and y, held at the gate */
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, z), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* z and y */
    ck_assert_uint_eq(unissued(x), 1);
    ck_assert_uint_eq(unissued(y), 2);
    ck_assert_uint_eq(unissued(z), 1);
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* issued at submit: settled by the plan */
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_uint_eq(unissued(x), 0);
    ck_assert_uint_eq(unissued(y), 0);
    ck_assert_uint_eq(unissued(z), 0);
    uint32_t vx = 0, vy = 0, vz = 0;
    ck_assert_int_eq(devq_queue_read(q, &vx, x, 0, 4), 0);
    ck_assert_int_eq(devq_queue_read(q, &vy, y, 0, 4), 0);
    ck_assert_int_eq(devq_queue_read(q, &vz, z, 0, 4), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_uint_eq(vx, 3);
    ck_assert_uint_eq(vy, 9);
    ck_assert_uint_eq(vz, 6);
    devq_graph_exec_destroy(ge);
    ck_assert_int_eq(devq_buffer_free(x, q), 0);
    ck_assert_int_eq(devq_buffer_free(y, q), 0);
    ck_assert_int_eq(devq_buffer_free(z, q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    devq_signal_destroy(gate);
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(few_buffers_settled_once_per_run)
{
    check_counts(64, 3, 5);
}
END_TEST

START_TEST(many_buffers_settled_op_by_op)
{
    check_counts(40, NB, 4);
}
END_TEST

START_TEST(one_launch)
{
    check_counts(1, 1, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("graph_counts");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, few_buffers_settled_once_per_run);
    tcase_add_test(tc, many_buffers_settled_op_by_op);
    tcase_add_test(tc, one_launch);
    tcase_add_test(tc, rebound_buffer_settled_in_its_place);
    suite_add_tcase(s, tc);
    return check_run(s);
}
