/* Shared fixture of the hip plugin tests: load devq-hip.so from the
 * build tree over the emulated runtime, open device 0, wait for a stream.
 * Check forks every test, so each test sets its DEVQ_EMU_* variables and
 * then loads a fresh plugin and emulator. */
#ifndef DEVQ_HIP_TEST_H
#define DEVQ_HIP_TEST_H
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test_host.h"

#ifndef TEST_BUILD_DIR
#error "TEST_BUILD_DIR must name the top build directory"
#endif

#define EMU_LIBRARY TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu.so"
#define SEC 1000000000ull

static const struct devq_backend_ops *ops;
static devq_pl_device *dev;

__attribute__((unused)) static const struct devq_backend_ops *load_plugin(void)
{
    if (!getenv("DEVQ_HIP_LIBRARY"))
        setenv("DEVQ_HIP_LIBRARY", EMU_LIBRARY, 1);
    ops = test_plugin_load(TEST_BUILD_DIR, "plugins/hip/.libs/devq-hip.so");
    ck_assert_ptr_nonnull(ops);
    ck_assert_str_eq(ops->name, "hip");
    ck_assert_uint_eq(ops->abi_version, DEVQ_PLUGIN_ABI_VERSION);
    return ops;
}

__attribute__((unused)) static devq_pl_device *open_device(void)
{
    load_plugin();
    uint32_t n = 0;
    ck_assert_msg(ops->device_count(&n) == 0, "device_count: %s", test_errmsg());
    ck_assert_uint_ge(n, 1);
    ck_assert_msg(ops->device_open(0, &dev) == 0, "device_open: %s", test_errmsg());
    return dev;
}

__attribute__((unused)) static devq_pl_stream *new_stream(int priority)
{
    devq_queue_desc d = { .kind = DEVQ_QUEUE_COMPUTE, .priority = priority };
    devq_pl_stream *s = NULL;
    ck_assert_msg(ops->stream_create(dev, &d, &s) == 0, "stream_create: %s", test_errmsg());
    return s;
}

/* Record an event on s and wait for it: every earlier op on s is done. */
__attribute__((unused)) static int sync_stream(devq_pl_stream *s, uint64_t timeout_ns)
{
    devq_pl_event *e;
    int err = ops->event_create(dev, 0, &e);
    if (err)
        return err;
    err = ops->event_record(e, s);
    if (!err)
        err = ops->event_wait(e, timeout_ns);
    ops->event_destroy(e);
    return err;
}

__attribute__((unused)) static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A gate a host callback can block a stream on, released by the test. */
struct gate { uint32_t open; };

__attribute__((unused)) static int gate_wait_cb(void *arg, int status)
{
    struct gate *g = arg;
    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE))
        test_host.futex_wait(&g->open, 0, UINT64_MAX);
    return 0;
}

__attribute__((unused)) static void gate_open(struct gate *g)
{
    __atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
    test_host.futex_wake(&g->open, 1);
}
#endif
