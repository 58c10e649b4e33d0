/* SPDX-License-Identifier: MIT */
/* lib's side of native graph runs (lib/queue/graph_native.h), against an
 * instrumented backend: the cpu device's ops table with the four graph
 * ops replaced by a spy that counts every call, records each handle's
 * arguments, and runs a launch of a handle as one launch_list of a
 * snapshot of it (so an update never reaches a launch already queued,
 * as the contract says).  It also counts the launch and launch_list
 * calls lib makes itself, and injects faults: graph_create refusing
 * (-ENOTSUP) and graph_launch refusing synchronously.
 *
 * Asserted: one create per run at instantiate; one graph_launch per run
 * per submission and no launch or launch_list from lib for it; an
 * update in place with no submission pending, a new handle (copy on
 * write) with one deferred; graph_destroy only after the last reference
 * (exec and pending submissions); -ENOTSUP falls back to launch_list
 * with devq_errmsg untouched; a failed native launch fails what the run
 * writes and the batch's signals with the cause.  Links lib's internals
 * (struct devq_device's ops). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include <devq/devq_plugin.h>
#include "device.h"
#include "error.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

/* ---- the spy backend ---- */

struct devq_pl_graph {
    size_t n;
    struct devq_pl_launch_entry *e; /* entries, then their args, then value bytes: one block */
    struct devq_pl_graph *next;     /* every handle and snapshot, freed at teardown */
};

static const struct devq_backend_ops *real;
static struct devq_backend_ops spy;
static _Atomic int n_create_calls, n_creates, n_updates, n_launches, n_destroys, n_lib_lists, n_lib_launches;
static int fail_create, fail_launch, fail_update;
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct devq_pl_graph *kept;

/* A copy of e[0..n) in one block, values included. */
static struct devq_pl_graph *clone(const struct devq_pl_launch_entry *e, size_t n)
{
    size_t nargs = 0, nbytes = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t a = 0; a < e[i].nargs; a++) {
            nargs++;
            nbytes += e[i].args[a].is_buffer ? 0 : e[i].args[a].size;
        }
    struct devq_pl_graph *g =
        calloc(1, sizeof *g + n * sizeof *g->e + nargs * sizeof(struct devq_pl_arg) + nbytes);
    ck_assert_ptr_nonnull(g);
    g->n = n;
    g->e = (struct devq_pl_launch_entry *)(g + 1);
    struct devq_pl_arg *args = (struct devq_pl_arg *)(g->e + n);
    unsigned char *bytes = (unsigned char *)(args + nargs);
    for (size_t i = 0; i < n; i++) {
        g->e[i] = e[i];
        g->e[i].args = args;
        for (uint32_t a = 0; a < e[i].nargs; a++, args++) {
            *args = e[i].args[a];
            if (!args->is_buffer) {
                memcpy(bytes, e[i].args[a].value, args->size);
                args->value = bytes;
                bytes += args->size;
            }
        }
    }
    pthread_mutex_lock(&keep_lock);
    g->next = kept;
    kept = g;
    pthread_mutex_unlock(&keep_lock);
    return g;
}

static int spy_create(devq_pl_device *d, const struct devq_pl_launch_entry *e, size_t n, devq_pl_graph **out)
{
    (void)d;
    atomic_fetch_add(&n_create_calls, 1);
    if (fail_create)
        return devq__err(-ENOTSUP, "spy: graph_create refused (fault injected)");
    *out = clone(e, n);
    atomic_fetch_add(&n_creates, 1);
    return 0;
}

static int spy_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e)
{
    if (fail_update)
        return devq__err(-ENOTSUP, "spy: graph_update refused (fault injected)");
    ck_assert_uint_lt(i, g->n);
    ck_assert_ptr_eq(e->k, g->e[i].k);
    ck_assert_uint_eq(e->nargs, g->e[i].nargs);
    for (uint32_t a = 0; a < e->nargs; a++) {
        struct devq_pl_arg *d = (struct devq_pl_arg *)&g->e[i].args[a];
        if (d->is_buffer)
            d->device_ptr = e->args[a].device_ptr;
        else
            memcpy((void *)d->value, e->args[a].value, d->size);
    }
    atomic_fetch_add(&n_updates, 1);
    return 0;
}

/* The last value argument of g's entry i (the tests' kernels take one). */
static uint32_t value_of(const devq_pl_graph *g, size_t i)
{
    uint32_t v = 0;
    for (uint32_t a = 0; a < g->e[i].nargs; a++)
        if (!g->e[i].args[a].is_buffer)
            memcpy(&v, g->e[i].args[a].value, sizeof v);
    return v;
}

static uint32_t launched_values[16];

static int spy_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed)
{
    (void)failed; /* like a driver's graph: names no launch */
    if (fail_launch)
        return devq__err(-EIO, "spy: graph_launch refused (fault injected)");
    int k = atomic_fetch_add(&n_launches, 1);
    if (k < 16)
        launched_values[k] = value_of(g, 0);
    devq_pl_graph *snap = clone(g->e, g->n);
    return real->launch_list(s, snap->e, snap->n, NULL); /* the failed launch is not named */
}

static void spy_destroy(devq_pl_graph *g)
{
    (void)g; /* freed at teardown: a launch of it may still be queued */
    atomic_fetch_add(&n_destroys, 1);
}

static int spy_lib_list(devq_pl_stream *s, const struct devq_pl_launch_entry *e, size_t n,
                        const struct devq_pl_launch_entry **failed)
{
    atomic_fetch_add(&n_lib_lists, 1);
    return real->launch_list(s, e, n, failed);
}

static int spy_lib_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                          const struct devq_pl_arg *a, size_t n)
{
    atomic_fetch_add(&n_lib_launches, 1);
    return real->launch(s, k, l, a, n);
}

static int got(_Atomic int *count)
{
    return atomic_load(count);
}

/* ---- fixture: a cpu device whose ops are the spy ---- */

static devq_device *dev;
static devq_queue *q;
static devq_kernel *k_add, *k_step, *k_mad;
static const devq_launch one = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };

/* x += v */
static int add(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[0] += *(const uint32_t *)args[1];
    return 0;
}

/* x = x * 10 + v: each submission's value shows in its own digit */
static int mad(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[0] = *(uint32_t *)args[0] * 10 + *(const uint32_t *)args[1];
    return 0;
}

/* x must be `expect`: else the launch fails (-EILSEQ); then x += 1 */
static int step(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    uint32_t *x = args[0];
    if (*x != *(const uint32_t *)args[1])
        return -EILSEQ;
    *x += 1;
    return 0;
}

/* x = v (declares all of x new) */
static int set(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[0] = *(const uint32_t *)args[1];
    return 0;
}

/* y += x */
static int accumulate(void *const *args, const devq_cpu_group *g)
{
    (void)g;
    *(uint32_t *)args[0] += *(const uint32_t *)args[1];
    return 0;
}

static void setup(void)
{
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    real = dev->ops;
    ck_assert_ptr_nonnull(real->launch_list);
    spy = *real;
    spy.graph_create = spy_create;
    spy.graph_update = spy_update;
    spy.graph_launch = spy_launch;
    spy.graph_destroy = spy_destroy;
    spy.launch_list = spy_lib_list;
    spy.launch = spy_lib_launch;
    dev->ops = &spy;
    n_create_calls = n_creates = n_updates = n_launches = n_destroys = n_lib_lists = n_lib_launches = 0;
    fail_create = fail_launch = fail_update = 0;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, add, NULL, "add", &k_add), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, mad, NULL, "mad", &k_mad), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, step, NULL, "step_kernel", &k_step), 0);
}

static void teardown(void)
{
    devq_kernel_destroy(k_add);
    devq_kernel_destroy(k_mad);
    devq_kernel_destroy(k_step);
    devq_queue_destroy(q);
    dev->ops = real;
    devq_device_close(dev);
    pthread_mutex_lock(&keep_lock);
    while (kept) {
        struct devq_pl_graph *n = kept->next;
        free(kept);
        kept = n;
    }
    pthread_mutex_unlock(&keep_lock);
}

static devq_buffer *buffer_of(uint32_t v)
{
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_queue_write(q, b, 0, &v, 4), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    return b;
}

static uint32_t read_u32(devq_buffer *b)
{
    uint32_t v = 0;
    ck_assert_int_eq(devq_queue_read(q, &v, b, 0, 4), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_queue_finish(q, 10 * SEC);
    return v;
}

static void exec_val(devq_kernel *k, devq_buffer *b, uint32_t v)
{
    devq_arg a[2] = { DEVQ_ARG_BUF(b, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&v) };
    ck_assert_int_eq(devq_queue_exec(q, k, a, 2, &one), 0);
}

static devq_graph_exec *end_capture(void)
{
    devq_graph *g;
    devq_graph_exec *ge;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(g);
    return ge;
}

/* The last release of a batch's references is handed to the notifier
 * thread: wait (bounded) for the spy's destroy count to reach n. */
static void await_destroys(int n)
{
    for (int i = 0; i < 5000 && got(&n_destroys) < n; i++)
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    ck_assert_int_eq(got(&n_destroys), n);
}

/* Two runs (a fill between them): one create each, one graph_launch
 * each per submission, nothing through launch or launch_list. */
START_TEST(one_create_per_run_one_launch_per_run_per_submission)
{
    devq_buffer *x = buffer_of(0), *y = buffer_of(0), *z = buffer_of(7);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    exec_val(k_add, x, 1);                               /* op 0: run 0 */
    exec_val(k_add, y, 1);                               /* op 1: run 0 */
    ck_assert_int_eq(devq_queue_fill(q, z, 0, 4, 0), 0); /* op 2 */
    exec_val(k_add, x, 1);                               /* op 3: run 1 */
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);  /* op 4 */
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 4, 1, 1), 0);
    int before_lists = got(&n_lib_lists), before_launches = got(&n_lib_launches);
    for (int s = 0; s < 3; s++)
        ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_signal_wait(done, 3, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(got(&n_launches), 6);
    ck_assert_int_eq(got(&n_lib_lists), before_lists);
    ck_assert_int_eq(got(&n_lib_launches), before_launches);
    ck_assert_uint_eq(read_u32(x), 6);
    ck_assert_uint_eq(read_u32(y), 3);
    ck_assert_uint_eq(read_u32(z), 0);
    ck_assert_int_eq(got(&n_updates), 0);
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(got(&n_destroys), 0); /* the exec holds both */
    devq_graph_exec_destroy(ge);
    await_destroys(2);
    devq_signal_destroy(done);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_buffer_free(z, NULL);
}
END_TEST

/* set_arg with a submission deferred (behind the graph's wait on a gate
 * not yet set) makes a new handle; with none pending, it updates the
 * handle in place.  Each submission runs with its own value (digits of
 * x), the spy saw them in order, and a handle is destroyed only once the
 * exec and every submission that held it let go. */
START_TEST(update_in_place_or_copy_on_write)
{
    devq_buffer *x = buffer_of(0);
    devq_signal *gate;
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0); /* op 0 */
    exec_val(k_mad, x, 1);                            /* op 1 */
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(got(&n_creates), 1);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* #1: deferred on the gate */
    uint32_t two = 2, three = 3, four = 4;
    devq_arg a = DEVQ_ARG_VAL(&two);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &a), 0);
    ck_assert_int_eq(got(&n_creates), 2); /* copy on write: #1 still holds the first */
    ck_assert_int_eq(got(&n_updates), 0);
    ck_assert_int_eq(got(&n_destroys), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* #2: deferred behind #1 */
    ck_assert_int_eq(got(&n_launches), 0);
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 12);
    await_destroys(1); /* the first handle: #1 ended, the exec let go of it */
    /* Nothing pending: the handle is updated in place. */
    a = DEVQ_ARG_VAL(&three);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &a), 0);
    ck_assert_int_eq(got(&n_updates), 1);
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* #3 */
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 123);
    /* #4 waits for 2; the exec goes while it is deferred: its handle
     * lives until #4 ends. */
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 0, 2, 0), 0);
    a = DEVQ_ARG_VAL(&four);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &a), 0);
    ck_assert_int_eq(got(&n_updates), 2);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    devq_graph_exec_destroy(ge);
    ck_assert_int_eq(got(&n_destroys), 1);
    ck_assert_int_eq(devq_signal_set(gate, 2), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 1234);
    await_destroys(2);
    ck_assert_int_eq(got(&n_launches), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(launched_values[i], (uint32_t)i + 1);
    devq_signal_destroy(gate);
    devq_buffer_free(x, NULL);
}
END_TEST

/* A rebound buffer reaches the handle: in place with nothing pending,
 * as a new handle with a submission deferred. */
START_TEST(set_buffer_updates_or_copies)
{
    devq_buffer *x = buffer_of(0), *y = buffer_of(0);
    devq_signal *gate;
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    exec_val(k_add, x, 1);
    exec_val(k_add, x, 2);
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* deferred, on x */
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, x, y), 0);
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(got(&n_updates), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0); /* on y */
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 3);
    ck_assert_uint_eq(read_u32(y), 3);
    ck_assert_int_eq(devq_graph_exec_set_buffer(ge, y, x), 0); /* nothing pending */
    ck_assert_int_eq(got(&n_updates), 2);                      /* both launches use it */
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 6);
    ck_assert_uint_eq(read_u32(y), 3);
    devq_graph_exec_destroy(ge);
    await_destroys(2);
    devq_signal_destroy(gate);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
}
END_TEST

/* graph_update -ENOTSUP with nothing pending: the handle is destroyed
 * and made again from the exec, and the next submission runs the new
 * value; set_arg itself succeeds and leaves devq_errmsg as it was. */
START_TEST(update_refused_recreates)
{
    devq_buffer *x = buffer_of(0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    exec_val(k_mad, x, 1);
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    fail_update = 1;
    ck_assert_int_eq(devq_graph_exec_set_value(NULL, 0, 0, 0), -EINVAL); /* a message to keep */
    char before[512];
    snprintf(before, sizeof before, "%s", devq_errmsg());
    uint32_t two = 2;
    devq_arg a = DEVQ_ARG_VAL(&two);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &a), 0);
    ck_assert_str_eq(devq_errmsg(), before);
    ck_assert_int_eq(got(&n_updates), 0);
    ck_assert_int_eq(got(&n_creates), 2);
    ck_assert_int_eq(got(&n_destroys), 1); /* nothing held the old one */
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_uint_eq(read_u32(x), 12);
    ck_assert_int_eq(got(&n_launches), 2);
    devq_graph_exec_destroy(ge);
    await_destroys(2);
    devq_buffer_free(x, NULL);
}
END_TEST

/* graph_create -ENOTSUP: instantiation succeeds, devq_errmsg is as it
 * was, and the run goes out as one launch_list per submission. */
START_TEST(create_refused_falls_back_to_launch_list)
{
    devq_buffer *x = buffer_of(0);
    fail_create = 1;
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    exec_val(k_add, x, 1);
    exec_val(k_add, x, 2);
    devq_graph *g;
    devq_graph_exec *ge;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    ck_assert_int_eq(devq_graph_exec_set_value(NULL, 0, 0, 0), -EINVAL); /* a message to keep */
    char before[512];
    snprintf(before, sizeof before, "%s", devq_errmsg());
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    ck_assert_str_eq(devq_errmsg(), before);
    devq_graph_destroy(g);
    ck_assert_int_eq(got(&n_create_calls), 1);
    ck_assert_int_eq(got(&n_creates), 0);
    int lists = got(&n_lib_lists);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(got(&n_lib_lists), lists + 2);
    ck_assert_int_eq(got(&n_launches), 0);
    ck_assert_uint_eq(read_u32(x), 6);
    /* A set_arg on a run without a handle tries nothing. */
    uint32_t five = 5;
    devq_arg a = DEVQ_ARG_VAL(&five);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 0, 1, &a), 0);
    ck_assert_int_eq(got(&n_create_calls), 1);
    devq_graph_exec_destroy(ge);
    devq_buffer_free(x, NULL);
}
END_TEST

/* A launch of the run fails (the spy does not name which): everything
 * the run writes fails -- the launch before the failing one too -- and
 * so do the batch's signals, with the kernel's cause; rewritten, the
 * next submission runs and clears them. */
START_TEST(failed_native_launch_fails_what_the_run_writes)
{
    devq_buffer *a = buffer_of(0), *v = buffer_of(5), *after = buffer_of(0);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    exec_val(k_add, a, 1);                                   /* op 0 */
    exec_val(k_step, v, 0);                                  /* op 1: v is 5, fails */
    ck_assert_int_eq(devq_queue_fill(q, after, 0, 4, 9), 0); /* op 2: after the run */
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);      /* op 3 */
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 3, 1, 1), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), -EILSEQ);
    ck_assert_msg(strstr(devq_errmsg(), "step_kernel"), "names the kernel: %s", devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EILSEQ);
    ck_assert_int_eq(devq_buffer_status(a), -EILSEQ);
    ck_assert_int_eq(devq_buffer_status(v), -EILSEQ);
    ck_assert_int_eq(devq_buffer_status(after), -EILSEQ);
    ck_assert_int_eq(got(&n_launches), 1);
    /* Rewritten and expected right: the next submission runs. */
    uint32_t zero = 0, five = 5;
    ck_assert_int_eq(devq_queue_write(q, a, 0, &zero, 4), 0);
    ck_assert_int_eq(devq_queue_write(q, v, 0, &five, 4), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_queue_finish(q, 10 * SEC);
    devq_arg e = DEVQ_ARG_VAL(&five);
    ck_assert_int_eq(devq_graph_exec_set_arg(ge, 1, 1, &e), 0);
    devq_signal *done2;
    ck_assert_int_eq(devq_signal_create(0, &done2), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_queue_signal(q, done2, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(done2, 1, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(a), 0);
    ck_assert_int_eq(devq_buffer_status(v), 0);
    ck_assert_int_eq(devq_buffer_status(after), 0);
    ck_assert_uint_eq(read_u32(a), 1);
    ck_assert_uint_eq(read_u32(v), 6);
    ck_assert_uint_eq(read_u32(after), 0x09090909u);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(done);
    devq_signal_destroy(done2);
    devq_buffer_free(a, NULL);
    devq_buffer_free(v, NULL);
    devq_buffer_free(after, NULL);
}
END_TEST

/* The write generations of a run's uses are taken per buffer when the
 * run is bound (offsets planned at instantiation, graph_plan.c): x,
 * failed before the graph, is rewritten whole by the run's first launch
 * and read by its second, which must see the new generation and run;
 * a third launch after another write of x reads past it too. */
START_TEST(generations_inside_a_run_follow_its_writes)
{
    devq_kernel *k_set, *k_acc;
    ck_assert_int_eq(devq_kernel_load_fn(dev, set, NULL, "set", &k_set), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, accumulate, NULL, "accumulate", &k_acc), 0);
    devq_buffer *x = buffer_of(0), *y = buffer_of(0);
    devq_signal *gate, *done;
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    /* x fails: a write of it behind a wait that fails. */
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(q, x, 0, 4, 0), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_lt(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(x), -EIO);
    uint32_t five = 5, seven = 7;
    devq_arg s1[2] = { DEVQ_ARG_BUF(x, DEVQ_WRITE), DEVQ_ARG_VAL(&five) };
    devq_arg s2[2] = { DEVQ_ARG_BUF(x, DEVQ_WRITE), DEVQ_ARG_VAL(&seven) };
    devq_arg acc[2] = { DEVQ_ARG_BUF(y, DEVQ_READ_WRITE), DEVQ_ARG_BUF(x, DEVQ_READ) };
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_exec(q, k_set, s1, 2, &one), 0);  /* x = 5: clears it */
    ck_assert_int_eq(devq_queue_exec(q, k_acc, acc, 2, &one), 0); /* y += x */
    ck_assert_int_eq(devq_queue_exec(q, k_set, s2, 2, &one), 0);  /* x = 7 */
    ck_assert_int_eq(devq_queue_exec(q, k_acc, acc, 2, &one), 0); /* y += x */
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);
    devq_graph_exec *ge = end_capture();
    ck_assert_int_eq(devq_graph_exec_set_value(ge, 4, 1, 1), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_signal_wait(done, 2, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_buffer_status(x), 0);
    ck_assert_int_eq(devq_buffer_status(y), 0);
    ck_assert_uint_eq(read_u32(y), 24);
    ck_assert_int_eq(got(&n_launches), 2);
    devq_graph_exec_destroy(ge);
    devq_kernel_destroy(k_set);
    devq_kernel_destroy(k_acc);
    devq_signal_destroy(gate);
    devq_signal_destroy(done);
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
}
END_TEST

/* graph_launch refuses at issue: the batch fails from the run on, its
 * signal and the run's buffers with the backend's message. */
START_TEST(refused_native_launch_fails_the_batch)
{
    devq_buffer *a = buffer_of(0);
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    exec_val(k_add, a, 1);
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);
    devq_graph_exec *ge = end_capture();
    fail_launch = 1;
    devq_graph_submit(q, ge); /* the refusal is the batch's: its signal says */
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "spy: graph_launch refused"), "cause: %s", devq_errmsg());
    devq_queue_finish(q, 10 * SEC);
    ck_assert_int_eq(devq_buffer_status(a), -EIO);
    fail_launch = 0;
    devq_graph_exec_destroy(ge);
    await_destroys(1);
    devq_signal_destroy(done);
    devq_buffer_free(a, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("graph_native");
    TCase *tc = tcase_create("spy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_create_per_run_one_launch_per_run_per_submission);
    tcase_add_test(tc, update_in_place_or_copy_on_write);
    tcase_add_test(tc, set_buffer_updates_or_copies);
    tcase_add_test(tc, create_refused_falls_back_to_launch_list);
    tcase_add_test(tc, update_refused_recreates);
    tcase_add_test(tc, failed_native_launch_fails_what_the_run_writes);
    tcase_add_test(tc, refused_native_launch_fails_the_batch);
    tcase_add_test(tc, generations_inside_a_run_follow_its_writes);
    suite_add_tcase(s, tc);
    return check_run(s);
}
