/* SPDX-License-Identifier: MIT */
/* The cpu backend's native graphs (plugins/cpu/graph.c), driven through
 * its ops table with a test host table (no libdevq), as
 * test_cpu_plugin.c drives the rest: launches run in order from the
 * prebuilt records; a graph and its kernels outlive graph_destroy and
 * kernel_destroy while launches are queued; an update reaches only the
 * launches queued after it (in place with none queued, on a copy with
 * some); a failing kernel latches its error with its message and skips
 * the rest; bad entries and updates are refused with a message. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../helpers/cpu_test_host.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

static const struct devq_backend_ops *ops;
static devq_pl_device *dev;
static devq_pl_kernel *k_mad, *k_fail;
static const devq_launch one = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };

/* x = x * 10 + v: the order and the value of every launch show as digits */
static int mad(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint64_t *)args[0] = *(uint64_t *)args[0] * 10 + *(const uint32_t *)args[1];
    return 0;
}

static int fails(void *const *args, const devq_cpu_group *g)
{
    (void)args;
    (void)g;
    return -EDOM;
}

static void setup(void)
{
    ops = cpu_test_ops();
    ck_assert_ptr_nonnull(ops);
    ck_assert_ptr_nonnull(ops->graph_create);
    ck_assert_int_eq(ops->device_open(0, &dev), 0);
    ck_assert_int_eq(ops->kernel_load_fn(dev, mad, NULL, "mad", &k_mad), 0);
    ck_assert_int_eq(ops->kernel_load_fn(dev, fails, NULL, "fails", &k_fail), 0);
}

static void teardown(void)
{
    if (k_mad)
        ops->kernel_destroy(k_mad);
    if (k_fail)
        ops->kernel_destroy(k_fail);
    k_mad = k_fail = NULL;
    ops->device_close(dev);
    dev = NULL;
}

static devq_pl_stream *stream_new(void)
{
    devq_queue_desc d = { DEVQ_QUEUE_COMPUTE, 0 };
    devq_pl_stream *s = NULL;
    ck_assert_int_eq(ops->stream_create(dev, &d, &s), 0);
    return s;
}

static void stream_sync(devq_pl_stream *s)
{
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    ck_assert_int_eq(ops->event_wait(e, 30 * SEC), 0);
    ops->event_destroy(e);
}

static uint64_t *cell(void)
{
    uint64_t *x;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, sizeof *x, (void **)&x, &h), 0);
    *x = 0;
    return x;
}

/* ---- a gate a host callback blocks on: launches queue behind it ---- */
struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open;
};

static int cb_gate(void *arg, int status)
{
    (void)status;
    struct gate *g = arg;
    pthread_mutex_lock(&g->m);
    while (!g->open)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
    return 0;
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    g->open = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

struct status_log {
    int n;
    int status[4];
    char msg[4][256];
};

static int cb_status(void *arg, int status)
{
    struct status_log *l = arg;
    l->status[l->n] = status;
    snprintf(l->msg[l->n++], sizeof l->msg[0], "%s", status ? cpu_test_errmsg() : "");
    return 0;
}

/* n launches of mad on x with values vals[i] (args built in a[2n]). */
static devq_pl_graph *mad_graph(uint64_t *x, const uint32_t *vals, size_t n, struct devq_pl_arg *a,
                                struct devq_pl_launch_entry *e)
{
    for (size_t i = 0; i < n; i++) {
        a[2 * i] = (struct devq_pl_arg){ .is_buffer = 1, .device_ptr = x };
        a[2 * i + 1] = (struct devq_pl_arg){ .value = &vals[i], .size = sizeof vals[i] };
        e[i] = (struct devq_pl_launch_entry){ k_mad, &a[2 * i], 2, one };
    }
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, e, n, &g), 0);
    return g;
}

/* The records run in order, and create copied the values: changing the
 * caller's after create changes nothing.  Destroying the graph and its
 * kernel with launches queued: they still run (ASan: no use after free). */
START_TEST(test_graph_runs_in_order_and_outlives_destroy)
{
    devq_pl_stream *s = stream_new();
    uint64_t *x = cell();
    uint32_t vals[3] = { 1, 2, 3 };
    struct devq_pl_arg a[6];
    struct devq_pl_launch_entry e[3];
    devq_pl_graph *g = mad_graph(x, vals, 3, a, e);
    vals[0] = 9; /* read during create only */
    struct gate gt = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &gt), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ops->graph_destroy(g);
    ops->kernel_destroy(k_mad);
    k_mad = NULL;
    gate_open(&gt);
    stream_sync(s);
    ck_assert_uint_eq(*x, 123123);
    ops->mem_free(dev, x);
    ops->stream_destroy(s);
}
END_TEST

/* An update with a launch queued changes a copy: the queued launch runs
 * the old value, the next the new; with none queued, in place.  A
 * buffer argument is rebound the same way. */
START_TEST(test_graph_update_reaches_only_later_launches)
{
    devq_pl_stream *s = stream_new();
    uint64_t *x = cell(), *y = cell();
    uint32_t vals[1] = { 1 };
    struct devq_pl_arg a[2];
    struct devq_pl_launch_entry e[1];
    devq_pl_graph *g = mad_graph(x, vals, 1, a, e);
    struct gate gt = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    ck_assert_int_eq(ops->host_fn(s, cb_gate, &gt), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* runs 1 */
    uint32_t two = 2;
    a[1].value = &two;
    ck_assert_int_eq(ops->graph_update(g, 0, &e[0]), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* runs 2 */
    uint32_t three = 3;
    a[1].value = &three;
    ck_assert_int_eq(ops->graph_update(g, 0, &e[0]), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0); /* runs 3 */
    gate_open(&gt);
    stream_sync(s);
    ck_assert_uint_eq(*x, 123);
    /* Nothing queued: in place, a buffer and a value. */
    uint32_t four = 4;
    a[0].device_ptr = y;
    a[1].value = &four;
    ck_assert_int_eq(ops->graph_update(g, 0, &e[0]), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    stream_sync(s);
    ck_assert_uint_eq(*x, 123);
    ck_assert_uint_eq(*y, 4);
    ops->graph_destroy(g);
    ops->mem_free(dev, x);
    ops->mem_free(dev, y);
    ops->stream_destroy(s);
}
END_TEST

/* A failing kernel in the middle: the launches before it ran, the rest
 * are skipped, the error latches for the next host callback with the
 * kernel's message, the failed slot names it, and the one after that
 * sees none; the graph runs again later. */
START_TEST(test_graph_failure_skips_the_rest_and_latches)
{
    devq_pl_stream *s = stream_new();
    uint64_t *x = cell();
    uint32_t v1 = 1, v2 = 2;
    struct devq_pl_arg a[4] = {
        { .is_buffer = 1, .device_ptr = x },
        { .value = &v1, .size = sizeof v1 },
        { .is_buffer = 1, .device_ptr = x },
        { .value = &v2, .size = sizeof v2 },
    };
    struct devq_pl_launch_entry e[3] = {
        { k_mad, &a[0], 2, one },
        { k_fail, NULL, 0, one },
        { k_mad, &a[2], 2, one },
    };
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, e, 3, &g), 0);
    struct status_log log = { 0 };
    uint32_t failed = UINT32_MAX;
    ck_assert_int_eq(ops->graph_launch(s, g, &failed), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    stream_sync(s);
    ck_assert_uint_eq(failed, 1); /* named, for lib to fail only launch 1 on */
    ck_assert_int_eq(log.n, 2);
    ck_assert_int_eq(log.status[0], -EDOM);
    ck_assert_msg(strstr(log.msg[0], "'fails'") && strstr(log.msg[0], "launch 1 of a graph of 3"),
                  "message: %s", log.msg[0]);
    ck_assert_int_eq(log.status[1], 0);
    ck_assert_uint_eq(*x, 1); /* the third launch was skipped */
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->host_fn(s, cb_status, &log), 0);
    stream_sync(s);
    ck_assert_int_eq(log.status[2], -EDOM);
    ck_assert_uint_eq(*x, 11);
    ops->graph_destroy(g);
    ops->mem_free(dev, x);
    ops->stream_destroy(s);
}
END_TEST

/* Refusals, each with a message: no entries, too many arguments, an
 * update of another index, kernel, or argument kind or size. */
START_TEST(test_graph_refusals)
{
    uint64_t *x = cell();
    uint32_t v = 1;
    uint64_t wide = 1;
    struct devq_pl_arg a[2];
    struct devq_pl_launch_entry e[1];
    devq_pl_graph *g = NULL;
    cpu_test_errmsg_clear();
    ck_assert_int_eq(ops->graph_create(dev, e, 0, &g), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "graph_create"));
    struct devq_pl_launch_entry big = { k_mad, a, DEVQ_PL_LIST_ARGS_MAX + 1, one };
    ck_assert_int_eq(ops->graph_create(dev, &big, 1, &g), -EINVAL);
    g = mad_graph(x, &v, 1, a, e);
    ck_assert_int_eq(ops->graph_update(g, 1, &e[0]), -EINVAL);
    struct devq_pl_launch_entry other = e[0];
    other.k = k_fail;
    ck_assert_int_eq(ops->graph_update(g, 0, &other), -EINVAL);
    ck_assert_ptr_nonnull(strstr(cpu_test_errmsg(), "make a new graph"));
    struct devq_pl_arg b[2] = { a[0], { .value = &wide, .size = sizeof wide } };
    other = e[0];
    other.args = b;
    ck_assert_int_eq(ops->graph_update(g, 0, &other), -EINVAL);
    b[1] = a[0]; /* a buffer where a value was */
    ck_assert_int_eq(ops->graph_update(g, 0, &other), -EINVAL);
    other = e[0];
    other.l.global[0] = 2;
    ck_assert_int_eq(ops->graph_update(g, 0, &other), -EINVAL);
    ops->graph_destroy(g);
    ops->mem_free(dev, x);
}
END_TEST

/* Many launches of one graph on two streams at once, with updates in
 * between (bounded): every launch runs exactly once with a value the
 * graph had when it was queued. */
static int add(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    __atomic_fetch_add((uint64_t *)args[0], *(const uint32_t *)args[1], __ATOMIC_RELAXED);
    return 0;
}

START_TEST(test_graph_two_streams_with_updates)
{
    enum { ROUNDS = 2000 };
    devq_pl_kernel *k_add;
    ck_assert_int_eq(ops->kernel_load_fn(dev, add, NULL, "add", &k_add), 0);
    devq_pl_stream *s[2] = { stream_new(), stream_new() };
    uint64_t *x = cell();
    uint32_t v = 1;
    struct devq_pl_arg a[2] = { { .is_buffer = 1, .device_ptr = x }, { .value = &v, .size = sizeof v } };
    struct devq_pl_launch_entry e = { k_add, a, 2, one };
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, &e, 1, &g), 0);
    uint64_t expect = 0;
    for (uint32_t r = 0; r < ROUNDS; r++) {
        ck_assert_int_eq(ops->graph_launch(s[r % 2], g, NULL), 0);
        expect += v;
        if (r % 7 == 0) {
            v = r % 5 + 1;
            ck_assert_int_eq(ops->graph_update(g, 0, &e), 0);
        }
    }
    ops->graph_destroy(g);
    stream_sync(s[0]);
    stream_sync(s[1]);
    ck_assert_uint_eq(*x, expect);
    ops->kernel_destroy(k_add);
    ops->mem_free(dev, x);
    ops->stream_destroy(s[0]);
    ops->stream_destroy(s[1]);
}
END_TEST

/* out[0] += 1 + group x + 10 * group y (every group once); out[1] =
 * the geometry the group saw, as digits. */
static int groups(void *const *args, const devq_cpu_group *g)
{
    uint64_t *out = args[0];
    __atomic_fetch_add(&out[0], 1 + g->group_id[0] + 10 * g->group_id[1], __ATOMIC_RELAXED);
    /* every group stores the same value, from several pool threads: atomically */
    __atomic_store_n(
        &out[1], g->global_size[0] * 1000 + g->local_size[0] * 100 + g->num_groups[0] * 10 + g->num_groups[1],
        __ATOMIC_RELAXED);
    return 0;
}

/* A launch of many groups (the pool's path) and one of a single group
 * (called with its prebuilt group) in one graph: every group runs once
 * and sees its geometry. */
START_TEST(test_graph_groups)
{
    devq_pl_kernel *k;
    ck_assert_int_eq(ops->kernel_load_fn(dev, groups, NULL, "groups", &k), 0);
    devq_pl_stream *s = stream_new();
    uint64_t *a, *b;
    void *h;
    ck_assert_int_eq(ops->mem_alloc(dev, 2 * sizeof *a, (void **)&a, &h), 0);
    ck_assert_int_eq(ops->mem_alloc(dev, 2 * sizeof *b, (void **)&b, &h), 0);
    a[0] = a[1] = b[0] = b[1] = 0;
    struct devq_pl_arg aa = { .is_buffer = 1, .device_ptr = a }, ab = { .is_buffer = 1, .device_ptr = b };
    struct devq_pl_launch_entry e[2] = {
        { k, &aa, 1, { { 8, 2, 1 }, { 2, 1, 1 }, 0 } }, /* 4 x 2 groups */
        { k, &ab, 1, { { 5, 1, 1 }, { 5, 1, 1 }, 0 } }, /* one group */
    };
    devq_pl_graph *g = NULL;
    ck_assert_int_eq(ops->graph_create(dev, e, 2, &g), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    ck_assert_int_eq(ops->graph_launch(s, g, NULL), 0);
    stream_sync(s);
    /* per launch: 8 groups, sum of (1 + x + 10 y) over x < 4, y < 2 = 8 + 12 + 40 */
    ck_assert_uint_eq(a[0], 2 * 60);
    ck_assert_uint_eq(a[1], 8 * 1000 + 2 * 100 + 4 * 10 + 2);
    ck_assert_uint_eq(b[0], 2 * 1);
    ck_assert_uint_eq(b[1], 5 * 1000 + 5 * 100 + 1 * 10 + 1);
    ops->graph_destroy(g);
    ops->kernel_destroy(k);
    ops->mem_free(dev, a);
    ops->mem_free(dev, b);
    ops->stream_destroy(s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("cpu_graph");
    TCase *t = tcase_create("graph");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_graph_runs_in_order_and_outlives_destroy);
    tcase_add_test(t, test_graph_update_reaches_only_later_launches);
    tcase_add_test(t, test_graph_failure_skips_the_rest_and_latches);
    tcase_add_test(t, test_graph_refusals);
    tcase_add_test(t, test_graph_two_streams_with_updates);
    tcase_add_test(t, test_graph_groups);
    suite_add_tcase(su, t);
    return check_run(su);
}
