/* SPDX-License-Identifier: MIT */
/* The graph_* ops of devq-cuda.so and devq-hip.so (gpu_common/graph.c)
 * over the emulated drivers' graphs (tests/emu/emu_graph.c): a run of
 * launches made once into a driver graph, launched as one stream op that
 * runs the launches in order; arguments copied at create and update; an
 * update reaches only later launches; destroy with launches queued; a
 * kernel failing inside a launch; each injected fault; a driver without
 * graphs.  Built once, run per backend (gpu_test.h). */
#include "gpu_test.h"
#include <stdbool.h>
#include <stdint.h>

/* Appends its tag to log: log[0] counts, log[1..] the tags in run order. */
int devq_test_graph_log(void **p, const devq_cpu_group *g);
int devq_test_graph_log(void **p, const devq_cpu_group *g)
{
    (void)g;
    uint32_t *log = *(uint32_t *const *)p[0];
    uint32_t tag = *(const uint32_t *)p[1];
    uint32_t i = __atomic_fetch_add(&log[0], 1, __ATOMIC_RELAXED);
    log[1 + i] = tag;
    return 0;
}

/* A kernel that faults: a launch failure, sticky like a real one. */
int devq_test_graph_fail(void **p, const devq_cpu_group *g);
int devq_test_graph_fail(void **p, const devq_cpu_group *g)
{
    (void)p, (void)g;
    return 1;
}

static const char module[] = "devq-emu-module\n"
                             "devq_test_graph_log ptr 4\n"
                             "devq_test_graph_fail\n";

#define MAXN 8
#define LOG_MAX 64

static uint32_t logbuf[1 + LOG_MAX];

/* The entries of a graph: entry i logs tags[i] (fail[i]: faults). */
struct run {
    size_t n;
    uint32_t tags[MAXN];
    struct devq_pl_arg args[MAXN][2];
    struct devq_pl_launch_entry e[MAXN];
};

static devq_pl_kernel *klog, *kfail;

static const char *graph_call(const char *cuda, const char *hip)
{
    return face->kind == GPU_CUDA ? cuda : hip;
}

static void load_kernels(void)
{
    ck_assert_msg(ops->kernel_load(dev, module, strlen(module), "devq_test_graph_log", &klog) == 0, "%s",
                  test_errmsg());
    ck_assert_msg(ops->kernel_load(dev, module, strlen(module), "devq_test_graph_fail", &kfail) == 0, "%s",
                  test_errmsg());
}

static void run_set(struct run *r, size_t i, uint32_t tag, bool fail)
{
    r->tags[i] = tag;
    r->args[i][0] = (struct devq_pl_arg){ .is_buffer = 1, .device_ptr = logbuf };
    r->args[i][1] = (struct devq_pl_arg){ .size = 4, .value = &r->tags[i] };
    r->e[i] = (struct devq_pl_launch_entry){ .k = fail ? kfail : klog,
                                             .args = fail ? NULL : r->args[i],
                                             .nargs = fail ? 0 : 2,
                                             .l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } } };
}

/* n entries tagged first, first + 1, ... (fail_at: 1-based entry that
 * faults, 0 none). */
static void run_make(struct run *r, size_t n, uint32_t first, size_t fail_at)
{
    r->n = n;
    for (size_t i = 0; i < n; i++)
        run_set(r, i, first + (uint32_t)i, i + 1 == fail_at);
}

static devq_pl_graph *graph_of(struct run *r)
{
    devq_pl_graph *g = NULL;
    ck_assert_msg(ops->graph_create(dev, r->e, r->n, &g) == 0, "graph_create: %s", test_errmsg());
    ck_assert_ptr_nonnull(g);
    return g;
}

/* log[1..] must be want[0..n). */
static void assert_log(const uint32_t *want, uint32_t n)
{
    ck_assert_uint_eq(__atomic_load_n(&logbuf[0], __ATOMIC_ACQUIRE), n);
    for (uint32_t i = 0; i < n; i++)
        ck_assert_msg(logbuf[1 + i] == want[i], "run %u: tag %u, want %u", i, logbuf[1 + i], want[i]);
}

struct status_rec {
    uint32_t n;
    uint32_t logged[8]; /* log[0] when the callback ran */
    int status[8];
    char msg[8][256];
};

static int record_cb(void *arg, int status)
{
    struct status_rec *r = arg;
    uint32_t i = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE);
    r->status[i] = status;
    r->logged[i] = __atomic_load_n(&logbuf[0], __ATOMIC_ACQUIRE);
    snprintf(r->msg[i], sizeof r->msg[i], "%s", status ? test_errmsg() : "");
    __atomic_store_n(&r->n, i + 1, __ATOMIC_RELEASE);
    test_host.futex_wake(&r->n, 1);
    return 0;
}

static void wait_calls(struct status_rec *r, uint32_t n)
{
    uint64_t deadline = test_host.now_ns() + 5 * SEC;
    uint32_t seen;
    while ((seen = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE)) < n)
        ck_assert_msg(test_host.futex_wait(&r->n, seen, deadline) == 0 ||
                          __atomic_load_n(&r->n, __ATOMIC_ACQUIRE) >= n,
                      "only %u of %u callbacks ran", __atomic_load_n(&r->n, __ATOMIC_ACQUIRE), n);
}

static void teardown_all(devq_pl_stream *s)
{
    ops->kernel_destroy(klog);
    ops->kernel_destroy(kfail);
    ops->stream_destroy(s);
    ops->device_close(dev);
}

/* The chain runs in entry order, once per launch, in stream order with
 * the stream's other work; the values were copied at create. */
START_TEST(test_graph_runs_in_order_in_stream_order)
{
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert_msg(info.caps & DEVQ_CAP_GRAPH_NATIVE, "caps %#llx", (unsigned long long)info.caps);
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 4, 1, 0);
    devq_pl_graph *g = graph_of(&r);
    for (size_t i = 0; i < 4; i++)
        r.tags[i] = 99; /* read during graph_create only */
    struct status_rec rec = { 0 };
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    wait_calls(&rec, 2);
    ck_assert_int_eq(rec.status[0], 0);
    ck_assert_int_eq(rec.status[1], 0);
    ck_assert_uint_eq(rec.logged[0], 4); /* the first launch whole, before the callback */
    ck_assert_uint_eq(rec.logged[1], 8);
    const uint32_t want[] = { 1, 2, 3, 4, 1, 2, 3, 4 };
    assert_log(want, 8);
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* An update reaches the launches queued after it, not one already
 * queued (held behind a gate here). */
START_TEST(test_graph_update_reaches_only_later_launches)
{
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 2, 1, 0);
    devq_pl_graph *g = graph_of(&r);
    struct gate gate = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &gate), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* 1, 2 */
    run_set(&r, 1, 20, false);
    ck_assert_msg(ops->graph_update(g, 1, &r.e[1]) == 0, "graph_update: %s", test_errmsg());
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* 1, 20 */
    run_set(&r, 0, 10, false);
    ck_assert_int_eq(ops->graph_update(g, 0, &r.e[0]), 0);
    run_set(&r, 1, 30, false);
    ck_assert_int_eq(ops->graph_update(g, 1, &r.e[1]), 0);
    r.tags[0] = r.tags[1] = 77;                         /* read during graph_update only */
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* 10, 30 */
    gate_open(&gate);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    const uint32_t want[] = { 1, 2, 1, 20, 10, 30 };
    assert_log(want, 6);
    /* Bad indices and entries are refused, the graph unchanged. */
    ck_assert_int_eq(ops->graph_update(g, 2, &r.e[0]), -EINVAL);
    ck_assert_msg(strstr(test_errmsg(), "launch 2 of a graph of 2"), "%s", test_errmsg());
    struct devq_pl_launch_entry bad = r.e[0];
    bad.k = NULL;
    ck_assert_int_eq(ops->graph_update(g, 0, &bad), -EINVAL);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    const uint32_t want2[] = { 1, 2, 1, 20, 10, 30, 10, 30 };
    assert_log(want2, 8);
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* Destroyed with launches queued (the stream held at a gate): they all
 * run, with their arguments, after the destroy returned. */
START_TEST(test_graph_destroy_with_launches_queued)
{
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 3, 5, 0);
    devq_pl_graph *g = graph_of(&r);
    struct gate gate = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &gate), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    run_set(&r, 2, 9, false);
    ck_assert_int_eq(ops->graph_update(g, 2, &r.e[2]), 0); /* the last launch queued had 7 */
    ops->graph_destroy(g);
    gate_open(&gate);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    const uint32_t want[] = { 5, 6, 7, 5, 6, 7, 5, 6, 7 };
    assert_log(want, 9);
    teardown_all(s);
}
END_TEST

/* A kernel faulting inside a launched graph: the nodes before it ran,
 * those after did not, and the stream's next callback gets the sticky
 * launch error, as after a faulting launch. */
START_TEST(test_graph_kernel_fault_is_the_launch_error)
{
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 3, 1, 2);
    devq_pl_graph *g = graph_of(&r);
    struct status_rec rec = { 0 };
    /* the gate holds the stream until everything is queued: the fault
     * then surfaces in the callback, not in a later enqueue call */
    struct gate gate = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &gate), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    gate_open(&gate);
    wait_calls(&rec, 1);
    ck_assert_int_eq(rec.status[0], -EIO);
    ck_assert_msg(strstr(rec.msg[0], face->err_launch_failed), "%s", rec.msg[0]);
    const uint32_t want[] = { 1 };
    assert_log(want, 1);
    /* the device is lost, as after any sticky fault */
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), -ENODEV);
    ck_assert_msg(strstr(test_errmsg(), "device lost"), "%s", test_errmsg());
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* DEVQ_EMU_GRAPH_KERNEL_FAIL=2:2: the second launch faults in its second
 * node; the first launch ran whole. */
START_TEST(test_graph_injected_kernel_fault_in_nth_launch)
{
    setenv("DEVQ_EMU_GRAPH_KERNEL_FAIL", "2:2", 1);
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 3, 1, 0);
    devq_pl_graph *g = graph_of(&r);
    struct status_rec rec = { 0 };
    struct gate gate = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &gate), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    gate_open(&gate);
    wait_calls(&rec, 2);
    ck_assert_int_eq(rec.status[0], 0);
    ck_assert_int_eq(rec.status[1], -EIO);
    ck_assert_msg(strstr(rec.msg[1], face->err_launch_failed), "%s", rec.msg[1]);
    const uint32_t want[] = { 1, 2, 3, 1 };
    assert_log(want, 4);
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* The instantiate call failing: graph_create fails with the driver's
 * error and call named, leaves nothing behind, and the next one works. */
START_TEST(test_graph_instantiate_failure)
{
    emu_fail(graph_call("cuGraphInstantiateWithFlags", "hipGraphInstantiateWithFlags"), 1,
             face->err_out_of_memory);
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 2, 1, 0);
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, r.e, r.n, &g), -ENOMEM);
    ck_assert_ptr_null(g);
    ck_assert_msg(
        strstr(test_errmsg(), graph_call("cuGraphInstantiateWithFlags", "hipGraphInstantiateWithFlags")) &&
            strstr(test_errmsg(), face->err_out_of_memory),
        "%s", test_errmsg());
    g = graph_of(&r);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    const uint32_t want[] = { 1, 2 };
    assert_log(want, 2);
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* The launch call failing: a non-sticky error is graph_launch's return
 * (nothing queued, the stream still good); a sticky one surfaces when
 * the launch runs, in the next callback. */
START_TEST(test_graph_launch_failure)
{
    const char *fn = graph_call("cuGraphLaunch", "hipGraphLaunch");
    char rule[160];
    /* The first rule takes call 1; the second counts only the calls the
     * first does not take (emu_fault_take): its 2nd is call 3. */
    setenv(
        "DEVQ_EMU_FAIL",
        strf(rule, sizeof rule, "%s:1:%s,%s:2:%s", fn, face->err_invalid_handle, fn, face->err_launch_failed),
        1);
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 2, 1, 0);
    devq_pl_graph *g = graph_of(&r);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), -EINVAL);
    ck_assert_msg(strstr(test_errmsg(), fn) && strstr(test_errmsg(), face->err_invalid_handle), "%s",
                  test_errmsg());
    struct status_rec rec = { 0 };
    struct gate gate = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &gate), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* runs */
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* faults when it runs */
    ck_assert_int_eq(ops->host_fn(s, record_cb, &rec), 0);
    gate_open(&gate);
    wait_calls(&rec, 2);
    ck_assert_int_eq(rec.status[0], 0);
    ck_assert_int_eq(rec.status[1], -EIO);
    ck_assert_msg(strstr(rec.msg[1], face->err_launch_failed), "%s", rec.msg[1]);
    const uint32_t want[] = { 1, 2 };
    assert_log(want, 2);
    ops->graph_destroy(g);
    teardown_all(s);
}
END_TEST

/* What graph_create refuses: no launches, a kernel of nothing. */
START_TEST(test_graph_create_refusals)
{
    open_device();
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 2, 1, 0);
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, r.e, 0, &g), -EINVAL);
    ck_assert_msg(strstr(test_errmsg(), "at least one launch"), "%s", test_errmsg());
    r.e[1].k = NULL;
    ck_assert_int_eq(ops->graph_create(dev, r.e, 2, &g), -EINVAL);
    ck_assert_msg(strstr(test_errmsg(), "graph entry 1"), "%s", test_errmsg());
    ck_assert_ptr_null(g);
    teardown_all(s);
}
END_TEST

/* A driver without graphs: DEVQ_CAP_GRAPH_NATIVE is off and graph_create
 * says why (-ENOTSUP: libdevq replays); launches still work. */
static void assert_no_graphs(const char *why)
{
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(!(info.caps & DEVQ_CAP_GRAPH_NATIVE));
    ck_assert(info.caps & DEVQ_CAP_KERNELS);
    load_kernels();
    devq_pl_stream *s = new_stream(0);
    struct run r;
    run_make(&r, 2, 1, 0);
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, r.e, r.n, &g), -ENOTSUP);
    ck_assert_msg(strstr(test_errmsg(), why) && strstr(test_errmsg(), "replays"), "%s", test_errmsg());
    ck_assert_ptr_null(g);
    ck_assert_int_eq(ops->launch(s, klog, &r.e[0].l, r.args[0], 2), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    const uint32_t want[] = { 1 };
    assert_log(want, 1);
    teardown_all(s);
}

START_TEST(test_graph_cuda_driver_without_graphs)
{
    setenv("DEVQ_EMU_MISSING", "cuGraphAddKernelNode", 1);
    assert_no_graphs("lacks cuGraphAddKernelNode");
}
END_TEST

START_TEST(test_graph_cuda_driver_before_12)
{
    setenv("DEVQ_EMU_DRIVER_VERSION", "11080", 1);
    assert_no_graphs("cuGraphAddKernelNode needs CUDA 12.0");
}
END_TEST

START_TEST(test_graph_hip_runtime_without_graphs)
{
    setenv("DEVQ_HIP_LIBRARY", TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu-old.so", 1);
    assert_no_graphs("lacks hipGraphCreate");
}
END_TEST

int main(void)
{
    if (!gpu_face_select())
        return 99;
    char name[32];
    TCase *tc = tcase_create("emulated");
    tcase_add_test(tc, test_graph_runs_in_order_in_stream_order);
    tcase_add_test(tc, test_graph_update_reaches_only_later_launches);
    tcase_add_test(tc, test_graph_destroy_with_launches_queued);
    tcase_add_test(tc, test_graph_kernel_fault_is_the_launch_error);
    tcase_add_test(tc, test_graph_injected_kernel_fault_in_nth_launch);
    tcase_add_test(tc, test_graph_instantiate_failure);
    tcase_add_test(tc, test_graph_launch_failure);
    tcase_add_test(tc, test_graph_create_refusals);
    if (face->kind == GPU_CUDA) {
        tcase_add_test(tc, test_graph_cuda_driver_without_graphs);
        tcase_add_test(tc, test_graph_cuda_driver_before_12);
    } else {
        tcase_add_test(tc, test_graph_hip_runtime_without_graphs);
    }
    return check_run(check_suite_of(strf(name, sizeof name, "%s_graph", face->name), tc, 60));
}
