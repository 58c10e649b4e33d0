/* SPDX-License-Identifier: MIT */
/* Shared fixture of the cuda and hip plugin tests.  Each test program is
 * built once and run per backend (DEVQ_TEST_DEVICE=cuda or hip, set by the
 * wrappers tests/scripts/gpu-{plugin,faults}-{cuda,hip}-emu): it loads that
 * plugin from the build tree over its emulated driver, opens device 0 and
 * makes streams.  What differs between the two drivers (library names,
 * error and entry-point names the plugins' messages quote) is a face,
 * below; tests assert through it.
 * Check forks every test, so each test sets its DEVQ_EMU_* variables and
 * then loads a fresh plugin and emulator. */
#ifndef DEVQ_GPU_TEST_H
#define DEVQ_GPU_TEST_H
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "test_host.h"
#include "../helpers/check_main.h"

#ifndef TEST_BUILD_DIR
#error "TEST_BUILD_DIR must name the top build directory"
#endif

#define SEC 1000000000ull

enum gpu_kind { GPU_CUDA, GPU_HIP };

struct gpu_face {
    enum gpu_kind kind;
    const char *name;            /* the backend, as ops->name and message prefix */
    const char *library_env;     /* where the plugin is told which driver to load */
    const char *emu_library;     /* the emulated driver in the build tree */
    const char *plugin;          /* the plugin, relative to the build tree */
    const char *missing_library; /* a path that does not exist */
    const char *not_a_library;   /* what the plugin says of a library lacking the API */
    /* the driver's names that the plugin's messages quote */
    const char *attr_mem_pools, *attr_stream_memops;
    const char *err_invalid_image, *err_not_found, *err_launch_failed;
    const char *err_illegal_address, *err_out_of_memory, *err_invalid_handle;
    const char *fn_launch, *fn_alloc, *fn_alloc_async, *fn_stream_wait_event;
    /* the driver's init failing: the rule, what the message then says,
     * and the emulated driver version it names */
    const char *init_fail_rule, *init_fail_text, *driver_version, *driver_version_text;
    /* what the message says when the driver has no device */
    const char *no_devices_text[2];
};

static const struct gpu_face gpu_faces[] = {
    {
        .kind = GPU_CUDA,
        .name = "cuda",
        .library_env = "DEVQ_CUDA_LIBRARY",
        .emu_library = TEST_BUILD_DIR "/tests/emu/.libs/libcuda-emu.so",
        .plugin = "plugins/cuda/.libs/devq-cuda.so",
        .missing_library = "/nonexistent/libcuda.so.1",
        .not_a_library = "not a CUDA driver",
        .attr_mem_pools = "MEMORY_POOLS_SUPPORTED",
        .attr_stream_memops = "STREAM_MEM_OPS",
        .err_invalid_image = "CUDA_ERROR_INVALID_IMAGE",
        .err_not_found = "CUDA_ERROR_NOT_FOUND",
        .err_launch_failed = "CUDA_ERROR_LAUNCH_FAILED",
        .err_illegal_address = "CUDA_ERROR_ILLEGAL_ADDRESS",
        .err_out_of_memory = "CUDA_ERROR_OUT_OF_MEMORY",
        .err_invalid_handle = "CUDA_ERROR_INVALID_HANDLE",
        .fn_launch = "cuLaunchKernel",
        .fn_alloc = "cuMemAlloc",
        .fn_alloc_async = "cuMemAllocAsync",
        .fn_stream_wait_event = "cuStreamWaitEvent",
        .init_fail_rule = "cuInit:1:CUDA_ERROR_NO_DEVICE",
        .init_fail_text = "cuInit: CUDA_ERROR_NO_DEVICE",
        .driver_version = "12040",
        .driver_version_text = "driver 12.4 (12040)",
        .no_devices_text = { "cuDeviceGetCount", "no devices" },
    },
    {
        .kind = GPU_HIP,
        .name = "hip",
        .library_env = "DEVQ_HIP_LIBRARY",
        .emu_library = TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu.so",
        .plugin = "plugins/hip/.libs/devq-hip.so",
        .missing_library = "/nonexistent/libamdhip64.so.5",
        .not_a_library = "not a HIP runtime",
        .attr_mem_pools = "hipDeviceAttributeMemoryPoolsSupported",
        .attr_stream_memops = "hipDeviceAttributeCanUseStreamWaitValue",
        .err_invalid_image = "hipErrorInvalidImage",
        .err_not_found = "hipErrorNotFound",
        .err_launch_failed = "hipErrorLaunchFailure",
        .err_illegal_address = "hipErrorIllegalAddress",
        .err_out_of_memory = "hipErrorOutOfMemory",
        .err_invalid_handle = "hipErrorInvalidHandle",
        .fn_launch = "hipModuleLaunchKernel",
        .fn_alloc = "hipMalloc",
        .fn_alloc_async = "hipMallocAsync",
        .fn_stream_wait_event = "hipStreamWaitEvent",
        .init_fail_rule = "hipInit:1:hipErrorNotInitialized",
        .init_fail_text = "hipInit: hipErrorNotInitialized (initialization error)",
        .driver_version = "50422804",
        .driver_version_text = "runtime 5.4.22804",
        /* what ROCm does on a machine without an AMD GPU, emulated:
         * hipInit says hipErrorInvalidDevice, hipGetDeviceCount
         * hipErrorNoDevice */
        .no_devices_text = { "hipGetDeviceCount: hipErrorNoDevice", "hipInit: hipErrorInvalidDevice" },
    },
};

static const struct gpu_face *face;
static const struct devq_backend_ops *ops;
static devq_pl_device *dev;

/* The face DEVQ_TEST_DEVICE names; NULL (with the reason on stderr) when
 * it names none.  Called by main before the suite forks its tests. */
__attribute__((unused)) static const struct gpu_face *gpu_face_select(void)
{
    const char *want = getenv("DEVQ_TEST_DEVICE");
    for (size_t i = 0; want && i < sizeof gpu_faces / sizeof gpu_faces[0]; i++)
        if (strcmp(want, gpu_faces[i].name) == 0)
            return face = &gpu_faces[i];
    fprintf(stderr,
            "DEVQ_TEST_DEVICE=%s: set it to cuda or hip (the wrappers "
            "tests/scripts/gpu-*-emu do)\n",
            want ? want : "(unset)");
    return NULL;
}

/* snprintf into buf, for the face's names in rules and messages. */
__attribute__((unused, format(printf, 3, 4))) static const char *strf(char *buf, size_t size, const char *fmt,
                                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

/* DEVQ_EMU_FAIL: the nth call of fn fails with err. */
__attribute__((unused)) static void emu_fail(const char *fn, int nth, const char *err)
{
    char rule[160];
    setenv("DEVQ_EMU_FAIL", strf(rule, sizeof rule, "%s:%d:%s", fn, nth, err), 1);
}

__attribute__((unused)) static const struct devq_backend_ops *load_plugin(void)
{
    if (!getenv(face->library_env))
        setenv(face->library_env, face->emu_library, 1);
    ops = test_plugin_load(TEST_BUILD_DIR, face->plugin);
    ck_assert_ptr_nonnull(ops);
    ck_assert_str_eq(ops->name, face->name);
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
struct gate {
    uint32_t open;
};

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

/* Run the suite; the exit status make check expects.  An unknown
 * DEVQ_TEST_DEVICE is a hard error (99), not a pass. */
#endif
