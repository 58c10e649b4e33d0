/* SPDX-License-Identifier: MIT */
/* devq-cuda.so and devq-hip.so under failure, injected by their emulated
 * drivers: failed and faulting work, device loss, out of memory, missing
 * entry points, no driver at all.  Nothing may hang: every wait has a
 * deadline.  Built once, run per backend (gpu_test.h); the tests of one
 * driver's own ways come last. */
#include "gpu_test.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

/* A kernel that fails: a launch failure, sticky like a real one. */
int devq_test_fail_kernel(void **p, const devq_cpu_group *g);
int devq_test_fail_kernel(void **p, const devq_cpu_group *g)
{
    return 1;
}

/* A kernel that counts its blocks. */
int devq_test_count_kernel(void **p, const devq_cpu_group *g);
int devq_test_count_kernel(void **p, const devq_cpu_group *g)
{
    __atomic_fetch_add(*(uint32_t *const *)p[0], 1, __ATOMIC_RELAXED);
    return 0;
}

static const char module[] = "devq-emu-module\n"
                             "devq_test_fail_kernel\n"
                             "devq_test_count_kernel 8\n";

static devq_pl_kernel *load_kernel(const char *name)
{
    devq_pl_kernel *k;
    ck_assert_msg(ops->kernel_load(dev, module, strlen(module), name, &k) == 0, "%s", test_errmsg());
    return k;
}

struct status_rec {
    uint32_t n;
    int status[8];
    char msg[8][256];
};

static int record_cb(void *arg, int status)
{
    struct status_rec *r = arg;
    uint32_t i = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE);
    r->status[i] = status;
    snprintf(r->msg[i], sizeof r->msg[i], "%s", status ? test_errmsg() : "");
    __atomic_store_n(&r->n, i + 1, __ATOMIC_RELEASE);
    test_host.futex_wake(&r->n, 1);
    return 0;
}

/* Wait until n callbacks ran, at most 5 s. */
static void wait_calls(struct status_rec *r, uint32_t n)
{
    uint64_t deadline = test_host.now_ns() + 5 * SEC;
    uint32_t seen;
    while ((seen = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE)) < n)
        ck_assert_msg(test_host.futex_wait(&r->n, seen, deadline) == 0 ||
                          __atomic_load_n(&r->n, __ATOMIC_ACQUIRE) >= n,
                      "only %u of %u callbacks ran", __atomic_load_n(&r->n, __ATOMIC_ACQUIRE), n);
}

static void launch(devq_pl_stream *s, devq_pl_kernel *k, uint32_t *counter, int expect)
{
    struct devq_pl_arg arg = { .is_buffer = 1, .device_ptr = counter };
    devq_launch l = { .global = { 4, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(ops->launch(s, k, &l, &arg, counter ? 1 : 0), expect);
}

static void assert_lost(const char *cause)
{
    devq_pl_stream *s;
    devq_queue_desc d = { 0 };
    ck_assert_int_eq(ops->stream_create(dev, &d, &s), -ENODEV);
    ck_assert_msg(strstr(test_errmsg(), "device lost") && strstr(test_errmsg(), cause), "message: %s",
                  test_errmsg());
    void *p;
    ck_assert_int_eq(ops->mem_alloc(dev, 64, &p, NULL), -ENODEV);
}

START_TEST(test_failing_launch_reaches_next_callback)
{
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_kernel *k = load_kernel("devq_test_fail_kernel");
    struct status_rec r = { 0 };
    struct gate g = { 0 };
    /* the gate holds the stream until everything is queued: the failure
     * then surfaces in the callback, not in a later enqueue call */
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    launch(s, k, NULL, 0); /* enqueues fine: fails on the device */
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    gate_open(&g);
    wait_calls(&r, 2);
    ck_assert_int_eq(r.status[0], 0);
    ck_assert_int_eq(r.status[1], -EIO);
    ck_assert_msg(strstr(r.msg[1], face->err_launch_failed), "%s", r.msg[1]);
    assert_lost(face->err_launch_failed);
    /* teardown still works and frees everything */
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
    ops->device_close(dev);
    /* the last close destroyed the context: a new open is healthy */
    ck_assert_int_eq(ops->device_open(0, &dev), 0);
    devq_pl_stream *s2 = new_stream(0);
    ck_assert_int_eq(sync_stream(s2, 5 * SEC), 0);
    ops->stream_destroy(s2);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_illegal_address_mid_pipeline)
{
    emu_fail(face->fn_launch, 2, face->err_illegal_address);
    setenv("DEVQ_EMU_DELAY", "100", 1);
    open_device();
    devq_pl_stream *s = new_stream(0), *other = new_stream(0);
    devq_pl_kernel *k = load_kernel("devq_test_count_kernel");
    static uint32_t counter;
    static uint64_t never __attribute__((aligned(8)));
    devq_pl_value *v;
    ck_assert_int_eq(ops->value_attach(dev, &never, &v), 0);
    struct status_rec r = { 0 }, ro = { 0 };
    /* another stream stuck on a value nobody will write */
    ck_assert_int_eq(ops->stream_wait_value(other, v, 1), 0);
    ck_assert_int_eq(ops->host_fn(other, record_cb, &ro), 0);
    void *buf;
    ck_assert_int_eq(ops->mem_alloc(dev, 256, &buf, NULL), 0);
    static unsigned char host[256];
    struct gate g = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g), 0);
    launch(s, k, &counter, 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    launch(s, k, &counter, 0); /* faults when it runs */
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    ck_assert_int_eq(ops->copy(s, host, buf, sizeof host, DEVQ_COPY_D2H), 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    gate_open(&g);
    wait_calls(&r, 3);
    ck_assert_int_eq(r.status[0], 0);
    ck_assert_int_eq(r.status[1], -EIO);
    ck_assert_int_eq(r.status[2], -EIO);
    ck_assert_msg(strstr(r.msg[1], face->err_illegal_address), "%s", r.msg[1]);
    ck_assert_uint_eq(__atomic_load_n(&counter, __ATOMIC_RELAXED), 4); /* only the first launch ran */
    wait_calls(&ro, 1);                                                /* the stuck stream is released too */
    ck_assert_int_eq(ro.status[0], -EIO);
    assert_lost(face->err_illegal_address);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), -ENODEV);
    ck_assert_int_eq(ops->copy(s, host, buf, 1, DEVQ_COPY_D2H), -ENODEV);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), -ENODEV);
    ops->value_detach(v);
    ops->mem_free(dev, buf);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
    ops->stream_destroy(other);
    ops->device_close(dev);
}
END_TEST

/* An event recorded on `stuck` behind a device-side wait for a value
 * nobody writes: waiting for it only ends by a timeout or a device loss. */
static devq_pl_event *event_behind_unset_value(devq_pl_stream *stuck, devq_pl_value **v)
{
    static uint64_t never __attribute__((aligned(8)));
    devq_pl_event *e;
    ck_assert_int_eq(ops->value_attach(dev, &never, v), 0);
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->stream_wait_value(stuck, *v, 1), 0);
    ck_assert_int_eq(ops->event_record(e, stuck), 0);
    return e;
}

static void *wait_event_thread(void *arg)
{
    devq_pl_event *e = arg;
    return (void *)(intptr_t)ops->event_wait(e, DEVQ_TIMEOUT_INFINITE);
}

START_TEST(test_event_wait_ends_on_device_loss)
{
    open_device();
    devq_pl_stream *stuck = new_stream(0), *s = new_stream(0);
    devq_pl_value *v;
    devq_pl_event *e = event_behind_unset_value(stuck, &v);
    pthread_t t;
    pthread_create(&t, NULL, wait_event_thread, e);
    sleep_ms(20);
    devq_pl_kernel *k = load_kernel("devq_test_fail_kernel");
    launch(s, k, NULL, 0);
    void *ret;
    pthread_join(t, &ret); /* returns: the test would time out otherwise */
    int err = (int)(intptr_t)ret;
    ck_assert_msg(err == -EIO || err == -ENODEV, "event_wait gave %d", err);
    ops->event_destroy(e);
    ops->kernel_destroy(k);
    ops->value_detach(v);
    ops->stream_destroy(stuck);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_async_alloc_out_of_memory)
{
    emu_fail(face->fn_alloc_async, 2, face->err_out_of_memory);
    open_device();
    devq_pl_stream *s = new_stream(0);
    void *p = NULL, *q = NULL;
    ck_assert_int_eq(ops->mem_alloc_async(s, 128, &p), 0);
    ck_assert_int_eq(ops->mem_alloc_async(s, 128, &q), -ENOMEM);
    char want[160];
    ck_assert_str_eq(test_errmsg(), strf(want, sizeof want, "%s: %s: %s (out of memory)", face->name,
                                         face->fn_alloc_async, face->err_out_of_memory));
    struct status_rec r = { 0 };
    /* the call reported it: the stream's next callback is not failed again */
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    wait_calls(&r, 1);
    ck_assert_int_eq(r.status[0], 0);
    /* not sticky: the device carries on */
    ck_assert_int_eq(ops->mem_alloc_async(s, 128, &q), 0);
    ck_assert_int_eq(ops->mem_free_async(s, p), 0);
    ck_assert_int_eq(ops->mem_free_async(s, q), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_sync_alloc_out_of_memory)
{
    setenv("DEVQ_EMU_MEMORY", "1048576", 1);
    open_device();
    void *p;
    ck_assert_int_eq(ops->mem_alloc(dev, 2 << 20, &p, NULL), -ENOMEM);
    char want[160];
    ck_assert_ptr_nonnull(
        strstr(test_errmsg(), strf(want, sizeof want, "%s: %s", face->fn_alloc, face->err_out_of_memory)));
    ck_assert_int_eq(ops->mem_alloc(dev, 1 << 20, &p, NULL), 0);
    ops->mem_free(dev, p);
    ck_assert_int_eq(ops->mem_alloc(dev, 1 << 20, &p, NULL), 0); /* given back */
    ops->mem_free(dev, p);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_enqueue_error_is_reported_not_sticky)
{
    emu_fail(face->fn_stream_wait_event, 1, face->err_invalid_handle);
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->stream_wait_event(s, e), -EINVAL);
    char want[160];
    ck_assert_str_eq(test_errmsg(), strf(want, sizeof want, "%s: %s: %s (invalid resource handle)",
                                         face->name, face->fn_stream_wait_event, face->err_invalid_handle));
    ck_assert_int_eq(ops->stream_wait_event(s, e), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_no_driver)
{
    setenv(face->library_env, face->missing_library, 1);
    load_plugin(); /* init succeeds without a driver */
    uint32_t n = 3;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    char want[160];
    ck_assert_msg(strstr(test_errmsg(), strf(want, sizeof want, "%s not found", face->missing_library)) &&
                      strstr(test_errmsg(), "No such file") && strstr(test_errmsg(), face->library_env),
                  "message: %s", test_errmsg());
    devq_pl_device *d;
    ck_assert_int_eq(ops->device_open(0, &d), -ENODEV);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "not found"));
}
END_TEST

START_TEST(test_not_a_driver)
{
    setenv(face->library_env, "libm.so.6", 1);
    load_plugin();
    uint32_t n = 3;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(test_errmsg(), face->not_a_library), "message: %s", test_errmsg());
}
END_TEST

START_TEST(test_init_fails)
{
    setenv("DEVQ_EMU_FAIL", face->init_fail_rule, 1);
    setenv("DEVQ_EMU_DRIVER_VERSION", face->driver_version, 1);
    load_plugin();
    uint32_t n = 3;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(test_errmsg(), face->init_fail_text) &&
                      strstr(test_errmsg(), face->driver_version_text),
                  "message: %s", test_errmsg());
}
END_TEST

START_TEST(test_no_devices)
{
    setenv("DEVQ_EMU_DEVICES", "0", 1);
    load_plugin();
    uint32_t n = 3;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(test_errmsg(), face->no_devices_text[0]) &&
                      strstr(test_errmsg(), face->no_devices_text[1]),
                  "message: %s", test_errmsg());
}
END_TEST

/* After a loss the last close resets the device (cuda: the primary
 * context's last release; hip: hipDeviceReset): what the lost context
 * held, memory included, comes back. */
START_TEST(test_device_reset_after_loss_frees_memory)
{
    setenv("DEVQ_EMU_MEMORY", "1048576", 1);
    open_device();
    void *p;
    ck_assert_int_eq(ops->mem_alloc(dev, 1 << 20, &p, NULL), 0);
    devq_pl_stream *s = new_stream(0);
    devq_pl_kernel *k = load_kernel("devq_test_fail_kernel");
    launch(s, k, NULL, 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), -EIO);
    assert_lost(face->err_launch_failed);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
    /* lib frees before the last close; freeing a lost device's memory
     * must not complain or crash */
    ops->mem_free(dev, p);
    ops->device_close(dev);
    /* the reset made the device whole: all its memory is back */
    ck_assert_int_eq(ops->device_open(0, &dev), 0);
    ck_assert_msg(ops->mem_alloc(dev, 1 << 20, &p, NULL) == 0, "%s", test_errmsg());
    ops->mem_free(dev, p);
    ops->device_close(dev);
}
END_TEST

/* A wait that timed out leaves its helper stream busy; the device is then
 * lost and reset at the last close, which destroys that stream.  The
 * next open's waits must not pick the dead helper. */
START_TEST(test_timed_out_wait_then_loss_then_reopen)
{
    open_device();
    devq_pl_stream *stuck = new_stream(0), *s = new_stream(0);
    devq_pl_value *v;
    devq_pl_event *e = event_behind_unset_value(stuck, &v);
    ck_assert_int_eq(ops->event_wait(e, 10 * 1000000ull), -ETIMEDOUT);
    devq_pl_kernel *k = load_kernel("devq_test_fail_kernel");
    launch(s, k, NULL, 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), -EIO);
    ops->event_destroy(e);
    ops->kernel_destroy(k);
    ops->value_detach(v);
    ops->stream_destroy(stuck);
    ops->stream_destroy(s);
    ops->device_close(dev);
    ck_assert_int_eq(ops->device_open(0, &dev), 0);
    s = new_stream(0);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(sync_stream(s, 5 * SEC) == 0, "wait %d: %s", i, test_errmsg());
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- the CUDA driver's own ways ---- */

/* The plugin takes entry points through cuGetProcAddress, so the
 * emulator's DEVQ_EMU_MISSING can hide one. */
START_TEST(test_cuda_missing_optional_entry_point)
{
    setenv("DEVQ_EMU_MISSING", "cuMemAllocAsync", 1);
    setenv("DEVQ_EMU_DRIVER_VERSION", "12040", 1);
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(!(info.caps & DEVQ_CAP_ASYNC_ALLOC));
    ck_assert(info.caps & DEVQ_CAP_WAIT_VALUE);
    devq_pl_stream *s = new_stream(0);
    void *p;
    ck_assert_int_eq(ops->mem_alloc_async(s, 64, &p), -ENOTSUP);
    ck_assert_msg(strstr(test_errmsg(), "cuMemAllocAsync") && strstr(test_errmsg(), "12.4 (12040)"),
                  "message: %s", test_errmsg());
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_cuda_missing_required_entry_point)
{
    setenv("DEVQ_EMU_MISSING", "cuStreamCreateWithPriority", 1);
    load_plugin();
    uint32_t n = 7;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(test_errmsg(), "cuStreamCreateWithPriority") &&
                      strstr(test_errmsg(), "13.0 (13000)"),
                  "message: %s", test_errmsg());
    devq_pl_device *d;
    ck_assert_int_eq(ops->device_open(0, &d), -ENODEV);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "cuStreamCreateWithPriority"));
}
END_TEST

START_TEST(test_cuda_old_driver)
{
    /* 11.0: no cuMemAllocAsync (11.2), stream memops through the V1 names */
    setenv("DEVQ_EMU_DRIVER_VERSION", "11000", 1);
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(!(info.caps & DEVQ_CAP_ASYNC_ALLOC));
    ck_assert(info.caps & DEVQ_CAP_WRITE_VALUE);
    devq_pl_stream *s = new_stream(0);
    void *p;
    ck_assert_int_eq(ops->mem_alloc_async(s, 64, &p), -ENOTSUP);
    ck_assert_msg(strstr(test_errmsg(), "needs CUDA 11.2"), "message: %s", test_errmsg());
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

/* ---- the HIP runtime's own ways ---- */

/* The plugin takes entry points with dlsym: emulator variants built
 * without some of them stand for older or broken runtimes. */
#define EMU_OLD TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu-old.so"
#define EMU_BROKEN TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu-broken.so"

START_TEST(test_hip_missing_optional_entry_points)
{
    /* a runtime without hipMallocAsync/hipFreeAsync and the stream
     * memory operations: the plugin works, those features are off */
    setenv("DEVQ_HIP_LIBRARY", EMU_OLD, 1);
    open_device();
    devq_device_info info;
    ck_assert_int_eq(ops->device_info(dev, &info), 0);
    ck_assert(!(info.caps & DEVQ_CAP_ASYNC_ALLOC));
    ck_assert(!(info.caps & (DEVQ_CAP_WAIT_VALUE | DEVQ_CAP_WRITE_VALUE)));
    ck_assert(info.caps & DEVQ_CAP_KERNELS);
    devq_pl_stream *s = new_stream(0);
    void *p;
    ck_assert_int_eq(ops->mem_alloc_async(s, 64, &p), -ENOTSUP);
    ck_assert_msg(strstr(test_errmsg(), "lacks hipMallocAsync") && strstr(test_errmsg(), "emu-old"),
                  "message: %s", test_errmsg());
    static uint64_t word __attribute__((aligned(8)));
    devq_pl_value *v;
    ck_assert_int_eq(ops->value_attach(dev, &word, &v), -ENOTSUP);
    ck_assert_msg(strstr(test_errmsg(), "lacks hipStreamWaitValue64"), "message: %s", test_errmsg());
    /* the rest still works */
    ck_assert_int_eq(ops->mem_alloc(dev, 64, &p, NULL), 0);
    ck_assert_int_eq(ops->fill(s, p, 7, 64), 0);
    ck_assert_int_eq(sync_stream(s, 5 * SEC), 0);
    ops->mem_free(dev, p);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

START_TEST(test_hip_missing_required_entry_points)
{
    setenv("DEVQ_HIP_LIBRARY", EMU_BROKEN, 1);
    load_plugin();
    uint32_t n = 7;
    ck_assert_int_eq(ops->device_count(&n), -ENODEV);
    ck_assert_uint_eq(n, 0);
    /* every missing one by name */
    ck_assert_msg(strstr(test_errmsg(), "lacks required entry points: hipStreamAddCallback, "
                                        "hipModuleLaunchKernel"),
                  "message: %s", test_errmsg());
    devq_pl_device *d;
    ck_assert_int_eq(ops->device_open(0, &d), -ENODEV);
    ck_assert_ptr_nonnull(strstr(test_errmsg(), "hipModuleLaunchKernel"));
}
END_TEST

/* ROCm hands stream callbacks hipSuccess whatever failed before them
 * (emulated with DEVQ_EMU_HIP_ROCM_CALLBACKS).  An event wait still
 * reports the failure and the device loss, from its one query after the
 * helper's callback. */
START_TEST(test_hip_rocm_callbacks_without_status)
{
    setenv("DEVQ_EMU_HIP_ROCM_CALLBACKS", "1", 1);
    open_device();
    devq_pl_stream *s = new_stream(0);
    devq_pl_kernel *k = load_kernel("devq_test_fail_kernel");
    struct status_rec r = { 0 };
    struct gate g = { 0 };
    ck_assert_int_eq(ops->host_fn(s, gate_wait_cb, &g), 0);
    launch(s, k, NULL, 0);
    ck_assert_int_eq(ops->host_fn(s, record_cb, &r), 0);
    devq_pl_event *e;
    ck_assert_int_eq(ops->event_create(dev, 0, &e), 0);
    ck_assert_int_eq(ops->event_record(e, s), 0);
    /* the wait starts while the stream is held: it goes through the
     * helper stream and its callback, not the first query */
    pthread_t t;
    pthread_create(&t, NULL, wait_event_thread, e);
    sleep_ms(20);
    gate_open(&g);
    void *ret;
    pthread_join(t, &ret);
    ck_assert_int_eq((int)(intptr_t)ret, -EIO);
    wait_calls(&r, 1);
    ck_assert_int_eq(r.status[0], 0); /* the documented ROCm flaw */
    assert_lost(face->err_launch_failed);
    ops->event_destroy(e);
    ops->kernel_destroy(k);
    ops->stream_destroy(s);
    ops->device_close(dev);
}
END_TEST

int main(void)
{
    if (!gpu_face_select())
        return 99;
    char name[32];
    TCase *tc = tcase_create("emulated");
    tcase_add_test(tc, test_failing_launch_reaches_next_callback);
    tcase_add_test(tc, test_illegal_address_mid_pipeline);
    tcase_add_test(tc, test_event_wait_ends_on_device_loss);
    tcase_add_test(tc, test_async_alloc_out_of_memory);
    tcase_add_test(tc, test_sync_alloc_out_of_memory);
    tcase_add_test(tc, test_enqueue_error_is_reported_not_sticky);
    tcase_add_test(tc, test_no_driver);
    tcase_add_test(tc, test_not_a_driver);
    tcase_add_test(tc, test_init_fails);
    tcase_add_test(tc, test_no_devices);
    tcase_add_test(tc, test_device_reset_after_loss_frees_memory);
    tcase_add_test(tc, test_timed_out_wait_then_loss_then_reopen);
    if (face->kind == GPU_CUDA) {
        tcase_add_test(tc, test_cuda_missing_optional_entry_point);
        tcase_add_test(tc, test_cuda_missing_required_entry_point);
        tcase_add_test(tc, test_cuda_old_driver);
    } else {
        tcase_add_test(tc, test_hip_missing_optional_entry_points);
        tcase_add_test(tc, test_hip_missing_required_entry_points);
        tcase_add_test(tc, test_hip_rocm_callbacks_without_status);
    }
    return check_run(check_suite_of(strf(name, sizeof name, "%s_faults", face->name), tc, 60));
}
