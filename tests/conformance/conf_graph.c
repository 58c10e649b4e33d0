/* SPDX-License-Identifier: MIT */
/* Graphs (devq_graph_instantiate(3)) on every backend: a replayed graph
 * gives what the one-shot path gives, parameter changes reach exactly
 * the next submission, graphs and batches of other queues are ordered
 * by the tracker with no explicit waits, a failed submission fails its
 * own signals and buffers only, and an exec may go with submissions in
 * flight. */
#include "conf.h"

#define N 64

struct fixture {
    devq_device *dev;
    devq_queue *q1, *q2;
    devq_kernel *add_u32, *step;
};

static struct fixture fx;

static void fx_setup(void)
{
    fx.dev = conf_open();
    fx.q1 = conf_queue(fx.dev);
    fx.q2 = conf_queue(fx.dev);
    fx.add_u32 = conf_kernel(fx.dev, "add_u32");
    fx.step = conf_kernel(fx.dev, "step");
}

static void fx_teardown(void)
{
    devq_queue_finish(fx.q1, 10 * SEC);
    devq_queue_finish(fx.q2, 10 * SEC);
    devq_kernel_destroy(fx.add_u32);
    devq_kernel_destroy(fx.step);
    devq_queue_destroy(fx.q1);
    devq_queue_destroy(fx.q2);
    devq_device_close(fx.dev);
}

static void upload_u32(devq_buffer *b, uint32_t v)
{
    uint32_t h[N];
    for (int i = 0; i < N; i++)
        h[i] = v;
    conf_upload(fx.q1, b, h, sizeof h);
}

static void assert_all_u32(devq_buffer *b, uint32_t v, const char *what)
{
    uint32_t h[N];
    conf_download(fx.q1, h, b, sizeof h);
    for (int i = 0; i < N; i++)
        ck_assert_msg(h[i] == v, "%s[%d] = %u, want %u", what, i, h[i], v);
}

/* q: v[i] += n (op of the capture numbered by the caller). */
static void rec_add(devq_queue *q, devq_buffer *v, uint32_t n)
{
    devq_arg args[2] = { DEVQ_ARG_BUF(v, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n) };
    devq_launch l = conf_launch1(N, 16);
    ck_assert_int_eq(devq_queue_exec(q, fx.add_u32, args, 2, &l), 0);
}

static void rec_step(devq_queue *q, devq_buffer *v, uint32_t expect)
{
    devq_arg args[2] = { DEVQ_ARG_BUF(v, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&expect) };
    devq_launch l = conf_launch1(1, 1);
    ck_assert_int_eq(devq_queue_exec(q, fx.step, args, 2, &l), 0);
}

static devq_graph_exec *instantiate(devq_queue *q)
{
    devq_graph *g = NULL;
    devq_graph_exec *ge = NULL;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(g); /* the exec stays valid */
    return ge;
}

/* a += 1; b = a; b += 2 -- as a graph 1000 times, and one-shot. */
START_TEST(replay_matches_one_shot)
{
    devq_buffer *a = conf_buffer(fx.dev, N * 4), *b = conf_buffer(fx.dev, N * 4);
    devq_buffer *c = conf_buffer(fx.dev, N * 4), *d = conf_buffer(fx.dev, N * 4);
    upload_u32(a, 0);
    upload_u32(c, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_add(fx.q1, a, 1);
    ck_assert_int_eq(devq_queue_copy(fx.q1, b, 0, a, 0, N * 4), 0);
    rec_add(fx.q1, b, 2);
    devq_graph_exec *ge = instantiate(fx.q1);
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
        rec_add(fx.q2, c, 1);
        ck_assert_int_eq(devq_queue_copy(fx.q2, d, 0, c, 0, N * 4), 0);
        rec_add(fx.q2, d, 2);
        ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    }
    ck_assert_int_eq(devq_queue_finish(fx.q1, 60 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 60 * SEC), 0);
    assert_all_u32(a, 1000, "graph a");
    assert_all_u32(b, 1002, "graph b");
    assert_all_u32(c, 1000, "one-shot c");
    assert_all_u32(d, 1002, "one-shot d");
    devq_graph_exec_destroy(ge);
    devq_buffer *all[] = { a, b, c, d };
    for (int i = 0; i < 4; i++)
        devq_buffer_free(all[i], NULL);
}
END_TEST

/* Captured on one queue, submitted to both (any queue of the device):
 * the tracker orders the two queues' submissions through x. */
START_TEST(submitted_to_any_queue_of_the_device)
{
    devq_buffer *x = conf_buffer(fx.dev, N * 4);
    upload_u32(x, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_step(fx.q1, x, 0);
    devq_graph_exec *ge = instantiate(fx.q1);
    for (uint32_t i = 0; i < 20; i++) {
        devq_arg e = DEVQ_ARG_VAL(&i);
        ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &e), 0);
        ck_assert_int_eq(devq_graph_submit(i % 2 ? fx.q2 : fx.q1, ge), 0);
    }
    ck_assert_int_eq(devq_queue_finish(fx.q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 30 * SEC), 0);
    uint32_t h[N];
    conf_download(fx.q1, h, x, sizeof h);
    ck_assert_uint_eq(h[0], 20);
    devq_graph_exec_destroy(ge);
    devq_buffer_free(x, NULL);
}
END_TEST

/* Each change lands on the next submission, not on one already made. */
START_TEST(updates_reach_exactly_the_next_submission)
{
    devq_buffer *x = conf_buffer(fx.dev, N * 4), *y = conf_buffer(fx.dev, N * 4);
    devq_signal *gate = conf_signal(0);
    upload_u32(x, 0);
    upload_u32(y, 100);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, gate, 1), 0); /* op 0 */
    rec_add(fx.q1, x, 1);                                 /* op 1 */
    devq_graph_exec *ge = instantiate(fx.q1);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* held at the gate */
    uint32_t ten = 10;
    devq_arg v = DEVQ_ARG_VAL(&ten);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &v), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* x += 10 */
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, y), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* y += 10 */
    devq_arg xb = DEVQ_ARG_BUF(x, DEVQ_READ_WRITE);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 0, &xb), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* x += 10 */
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    assert_all_u32(x, 21, "x");
    assert_all_u32(y, 110, "y");
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(gate);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
}
END_TEST

/* Wait N, signal N+1, with N advancing by one per submission. */
START_TEST(values_advance_per_submission)
{
    devq_signal *in = conf_signal(0), *out = conf_signal(0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, in, 1), 0);    /* op 0 */
    ck_assert_int_eq(devq_queue_signal(fx.q1, out, 1), 0); /* op 1 */
    devq_graph_exec *ge = instantiate(fx.q1);
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 0, 1, 1), 0);
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 1, 2, 1), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    ck_assert_int_eq(devq_signal_set(in, 1), 0);
    ck_assert_int_eq(devq_signal_wait(out, 2, 10 * SEC), 0);
    /* Submission 2 waits for in >= 2, which nobody set yet. */
    ck_assert_uint_eq(devq_signal_value(out), 2);
    ck_assert_int_eq(devq_signal_set(in, 3), 0);
    ck_assert_int_eq(devq_signal_wait(out, 4, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    ck_assert_uint_eq(devq_signal_value(out), 4);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(in);
    devq_signal_destroy(out);
}
END_TEST

/* A chain v = 0, 1, 2, ... whose even steps are a graph on q1 and odd
 * steps one-shot batches on q2: any misordering breaks the chain (the
 * step kernel fails) -- no explicit wait anywhere. */
START_TEST(graph_and_batches_of_another_queue_are_ordered)
{
    devq_buffer *v = conf_buffer(fx.dev, N * 4);
    upload_u32(v, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_step(fx.q1, v, 0);
    devq_graph_exec *ge = instantiate(fx.q1);
    for (uint32_t i = 0; i < 50; i++) {
        uint32_t e = 2 * i;
        devq_arg a = DEVQ_ARG_VAL(&e);
        ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &a), 0);
        ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
        rec_step(fx.q2, v, 2 * i + 1);
        ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    }
    ck_assert_int_eq(devq_queue_finish(fx.q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 30 * SEC), 0);
    uint32_t h[N];
    conf_download(fx.q1, h, v, sizeof h);
    ck_assert_uint_eq(h[0], 100);
    devq_graph_exec_destroy(ge);
    devq_buffer_free(v, NULL);
}
END_TEST

/* The same with runs of launches (one launch list on cpu, bound once
 * per buffer): each graph submission steps v twice around a launch on
 * another buffer, the other queue steps it once in between. */
START_TEST(runs_of_launches_are_ordered_against_another_queue)
{
    devq_buffer *v = conf_buffer(fx.dev, N * 4), *w = conf_buffer(fx.dev, N * 4);
    upload_u32(v, 0);
    upload_u32(w, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_step(fx.q1, v, 0); /* op 0 */
    rec_add(fx.q1, w, 1);  /* op 1 */
    rec_step(fx.q1, v, 1); /* op 2 */
    devq_graph_exec *ge = instantiate(fx.q1);
    for (uint32_t i = 0; i < 30; i++) {
        uint32_t e0 = 3 * i, e1 = 3 * i + 1;
        devq_arg a0 = DEVQ_ARG_VAL(&e0), a1 = DEVQ_ARG_VAL(&e1);
        ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &a0), 0);
        ck_assert_int_eq(devq_graph_exec_set_arg(ge, 2, 1, &a1), 0);
        ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
        rec_step(fx.q2, v, 3 * i + 2);
        ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    }
    ck_assert_int_eq(devq_queue_finish(fx.q1, 30 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q2, 30 * SEC), 0);
    uint32_t h[N];
    conf_download(fx.q1, h, v, sizeof h);
    ck_assert_uint_eq(h[0], 90);
    assert_all_u32(w, 30, "w");
    devq_graph_exec_destroy(ge);
    devq_buffer_free(v, NULL);
    devq_buffer_free(w, NULL);
}
END_TEST

/* Submission k reads a buffer whose writer failed: k's signal and what
 * k writes fail with the root cause; once the input is rewritten,
 * submission k+1 runs. */
START_TEST(failed_input_fails_only_its_submission)
{
    devq_buffer *in = conf_buffer(fx.dev, N * 4), *out = conf_buffer(fx.dev, N * 4);
    devq_signal *gate = conf_signal(0), *done = conf_signal(0);
    upload_u32(in, 5);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_copy(fx.q1, out, 0, in, 0, N * 4), 0); /* op 0 */
    rec_add(fx.q1, out, 1);                                            /* op 1 */
    ck_assert_int_eq(devq_queue_signal(fx.q1, done, 1), 0);            /* op 2 */
    devq_graph_exec *ge = instantiate(fx.q1);
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 2, 1, 1), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* k = 1 runs */
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0);
    /* q2 rewrites in after a gate that fails. */
    ck_assert_int_eq(devq_queue_wait(fx.q2, gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q2, in, 0, N * 4, 0), 0);
    ck_assert_int_eq(devq_queue_submit(fx.q2), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* k = 2: after q2's fill */
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_eq(devq_signal_wait(done, 2, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "devq_signal_fail(-EIO)"), "root cause: %s", devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_buffer_status(out), -EIO);
    ck_assert_int_lt(devq_queue_finish(fx.q2, 10 * SEC), 0);
    /* Rewritten: k = 3 runs and clears what it writes. */
    upload_u32(in, 7);
    ck_assert_int_eq(devq_buffer_status(in), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    devq_queue_finish(fx.q1, 10 * SEC); /* its signal op targets a failed signal */
    assert_all_u32(out, 8, "out after k+1");
    ck_assert_int_eq(devq_buffer_status(out), 0);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(gate);
    devq_signal_destroy(done);
    devq_buffer_free(in, NULL);
    devq_buffer_free(out, NULL);
}
END_TEST

static int recoverable_kernel_failures(void)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(fx.dev, &info), 0);
    if (!strcmp(info.backend, "vulkan") || !(info.caps & DEVQ_CAP_SKIP_ON_ERROR)) {
        fprintf(stderr, "skipped on %s: needs a kernel failure the device recovers from\n", info.backend);
        return 0;
    }
    return 1;
}

/* A failing kernel in submission k (step sees the wrong value) fails
 * k's signal and what it writes; the buffer rewritten, k+1 runs. */
START_TEST(failing_kernel_fails_its_submission)
{
    if (!recoverable_kernel_failures())
        return;
    devq_buffer *v = conf_buffer(fx.dev, N * 4);
    devq_signal *done = conf_signal(0);
    upload_u32(v, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_step(fx.q1, v, 0);                                  /* op 0 */
    ck_assert_int_eq(devq_queue_signal(fx.q1, done, 1), 0); /* op 1 */
    devq_graph_exec *ge = instantiate(fx.q1);
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 1, 1, 1), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* v: 0 -> 1 */
    /* Seen before the next fails it: a failed signal fails every wait. */
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0); /* expects 0 again: fails */
    ck_assert_int_eq(devq_signal_wait(done, 2, 10 * SEC), -EILSEQ);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), -EILSEQ);
    ck_assert_int_eq(devq_buffer_status(v), -EILSEQ);
    upload_u32(v, 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    devq_queue_finish(fx.q1, 10 * SEC);
    uint32_t h[N];
    conf_download(fx.q1, h, v, sizeof h);
    ck_assert_uint_eq(h[0], 1);
    ck_assert_int_eq(devq_buffer_status(v), 0);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(done);
    devq_buffer_free(v, NULL);
}
END_TEST

/* Launches back to back (one launch list on backends with
 * DEVQ_CAP_GRAPH_NATIVE): a failure in the middle skips the launches
 * after it and fails what it and they write, not what the launches
 * before it wrote; the next submission runs all. */
START_TEST(failure_inside_a_run_of_launches_skips_the_rest)
{
    if (!recoverable_kernel_failures())
        return;
    devq_buffer *a = conf_buffer(fx.dev, N * 4), *v = conf_buffer(fx.dev, N * 4),
                *b = conf_buffer(fx.dev, N * 4);
    upload_u32(a, 0);
    upload_u32(v, 5);
    upload_u32(b, 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    rec_add(fx.q1, a, 1);  /* op 0 */
    rec_step(fx.q1, v, 0); /* op 1: v is 5, fails */
    rec_add(fx.q1, b, 1);  /* op 2: skipped */
    devq_graph_exec *ge = instantiate(fx.q1);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), -EILSEQ);
    ck_assert_msg(strstr(devq_errmsg(), "conf_"), "names the kernel: %s", devq_errmsg());
    ck_assert_int_eq(devq_buffer_status(b), -EILSEQ);
    ck_assert_int_eq(devq_buffer_status(v), -EILSEQ);
    /* The launch before the failing one ran.  Where the backend names
     * the launch that failed (launch_list, and cpu's graph_launch), what
     * it wrote is good; a driver's graph (cuda, hip, vulkan) does not
     * name it (devq_plugin.h), and then everything the run writes fails,
     * with the same root cause. */
    int status_a = devq_buffer_status(a);
    if (!strncmp(conf_backend(), "cpu", 3))
        ck_assert_msg(status_a == 0, "cpu names the failed launch: a, written before it, is good (%d)",
                      status_a);
    if (status_a == 0)
        assert_all_u32(a, 1, "a after the failed submission");
    else {
        ck_assert_int_eq(status_a, -EILSEQ);
        ck_assert_msg(strstr(devq_errmsg(), "conf_"), "a's cause names the kernel: %s", devq_errmsg());
    }
    upload_u32(b, 0);
    uint32_t h[N];
    conf_download(fx.q1, h, b, sizeof h);
    ck_assert_uint_eq(h[0], 0); /* the skipped launch did not run */
    uint32_t five = 5;
    devq_arg e = DEVQ_ARG_VAL(&five);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &e), 0);
    upload_u32(a, 0);
    upload_u32(v, 5);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    assert_all_u32(a, 1, "a");
    assert_all_u32(b, 1, "b");
    conf_download(fx.q1, h, v, sizeof h);
    ck_assert_uint_eq(h[0], 6);
    devq_graph_exec_destroy(ge);
    devq_buffer_free(a, NULL);
    devq_buffer_free(v, NULL);
    devq_buffer_free(b, NULL);
}
END_TEST

/* Destroying the exec, the graph and a buffer (stream-ordered) with
 * submissions in flight: they finish, with their results, and the free
 * goes through once their last uses are issued. */
START_TEST(destroy_with_submissions_in_flight)
{
    devq_buffer *x = conf_buffer(fx.dev, N * 4);
    devq_signal *gate = conf_signal(0);
    upload_u32(x, 0);
    devq_buffer *y = conf_buffer(fx.dev, N * 4);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_wait(fx.q1, gate, 1), 0);
    rec_add(fx.q1, x, 3);
    rec_add(fx.q1, y, 1);
    devq_graph *g = NULL;
    devq_graph_exec *ge = NULL;
    ck_assert_int_eq(devq_queue_end_capture(fx.q1, &g), 0);
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    devq_graph_exec_destroy(ge);
    devq_graph_destroy(g);
    /* y's free waits for the uses the held submissions have not issued
     * (tests/unit/test_graph_counts checks the counts themselves). */
    ck_assert_int_eq(devq_buffer_free(y, fx.q1), 0);
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    assert_all_u32(x, 30, "x");
    devq_signal_destroy(gate);
    devq_buffer_free(x, NULL);
}
END_TEST

/* What a capture cannot hold and what an exec cannot change: -EINVAL or
 * -EBUSY with a message naming the op and the fix. */
START_TEST(misuse_is_refused_with_a_message)
{
    devq_buffer *x = conf_buffer(fx.dev, N * 4), *small = conf_buffer(fx.dev, 4);
    devq_signal *s = conf_signal(0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, x, 0, N * 4, 0), 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), -EBUSY); /* open batch not empty */
    ck_assert_msg(strstr(devq_errmsg(), "devq_queue_submit"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    devq_graph *g = NULL;
    ck_assert_int_eq(devq_queue_end_capture(fx.q1, &g), -EINVAL); /* not capturing */
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), -EBUSY);
    rec_add(fx.q1, x, 1);                                /* op 0 */
    ck_assert_int_eq(devq_queue_signal(fx.q1, s, 1), 0); /* op 1 */
    ck_assert_int_eq(devq_queue_submit(fx.q1), -EBUSY);
    ck_assert_msg(strstr(devq_errmsg(), "devq_queue_end_capture"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(fx.q1, SEC), -EBUSY);
    devq_graph_exec *ge = instantiate(fx.q1);
    uint32_t one = 1;
    uint64_t wide = 1;
    devq_arg val = DEVQ_ARG_VAL(&one), wide_val = DEVQ_ARG_VAL(&wide), buf = DEVQ_ARG_BUF(x, DEVQ_READ_WRITE);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 2, 0, &val), -EINVAL); /* out of range */
    ck_assert_msg(strstr(devq_errmsg(), "op 2"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 0, &val), -EINVAL); /* a signal op */
    ck_assert_msg(strstr(devq_errmsg(), "devq_queue_signal"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 0, &val), -EINVAL); /* buffer -> value */
    ck_assert_msg(strstr(devq_errmsg(), "record a new graph"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &buf), -EINVAL);      /* value -> buffer */
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &wide_val), -EINVAL); /* value size */
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 2, &val), -EINVAL);      /* no such argument */
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 0, 1, 1), -EINVAL);       /* an exec op */
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, small), -EINVAL);     /* smaller */
    ck_assert_msg(strstr(devq_errmsg(), "at least as large"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, small, x), -EINVAL); /* not used */
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, NULL), -EINVAL);
    ck_assert_int_eq(devq_graph_submit(NULL, ge), -EINVAL);
    ck_assert_int_eq(devq_graph_submit(fx.q1, NULL), -EINVAL);
    ck_assert_int_eq(devq_graph_instantiate(NULL, &ge), -EINVAL);
    /* Work recorded but not submitted: a graph submission is its own batch. */
    ck_assert_int_eq(devq_queue_fill(fx.q1, x, 0, 4, 0), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), -EBUSY);
    ck_assert_int_eq(devq_queue_submit(fx.q1), 0);
    /* A sticky error of the capture comes back at the end, no graph. */
    ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
    ck_assert_int_eq(devq_queue_fill(fx.q1, x, 0, 0, 0), -EINVAL);
    ck_assert_int_eq(devq_queue_end_capture(fx.q1, &g), -EINVAL);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(devq_errmsg(), "capture discarded"), "%s", devq_errmsg());
    /* A timestamp cannot be replayed (where the backend has them). */
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(fx.dev, &info), 0);
    if (info.caps & DEVQ_CAP_TIMING) {
        devq_timestamp *ts = NULL;
        ck_assert_int_eq(devq_queue_begin_capture(fx.q1), 0);
        ck_assert_int_eq(devq_queue_timestamp(fx.q1, &ts), 0);
        ck_assert_int_eq(devq_queue_end_capture(fx.q1, &g), -EINVAL);
        ck_assert_msg(strstr(devq_errmsg(), "op 0 (devq_queue_timestamp)"), "%s", devq_errmsg());
        devq_timestamp_destroy(ts);
    }
    /* A freed buffer: refused at submit, rebinding fixes it. */
    devq_buffer *x2 = conf_buffer(fx.dev, N * 4);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    devq_buffer_free(x, NULL);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "devq_graph_exec_set_buffer"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, x2), 0);
    ck_assert_int_eq(devq_graph_submit(fx.q1, ge), 0);
    ck_assert_int_eq(devq_queue_finish(fx.q1, 10 * SEC), 0);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(s);
    devq_buffer_free(x2, NULL);
    devq_buffer_free(small, NULL);
}
END_TEST

Suite *conf_graph_suite(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("replay");
    tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, replay_matches_one_shot);
    tcase_add_test(tc, submitted_to_any_queue_of_the_device);
    tcase_add_test(tc, updates_reach_exactly_the_next_submission);
    tcase_add_test(tc, values_advance_per_submission);
    tcase_add_test(tc, graph_and_batches_of_another_queue_are_ordered);
    tcase_add_test(tc, runs_of_launches_are_ordered_against_another_queue);
    tcase_add_test(tc, failed_input_fails_only_its_submission);
    tcase_add_test(tc, failing_kernel_fails_its_submission);
    tcase_add_test(tc, failure_inside_a_run_of_launches_skips_the_rest);
    tcase_add_test(tc, destroy_with_submissions_in_flight);
    tcase_add_test(tc, misuse_is_refused_with_a_message);
    suite_add_tcase(s, tc);
    return s;
}
