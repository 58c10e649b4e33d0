/* SPDX-License-Identifier: MIT */
/* The emulated HIP runtime itself (tests/emu/libamdhip64-emu.so), called
 * the way the real one is: dlopen, dlsym by name, hipError_t codes.  The
 * plugin tests rely on these behaviours, so they are pinned here. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hip/hip_runtime_api.h>
#include "../helpers/check_main.h"

#ifndef TEST_BUILD_DIR
#error "TEST_BUILD_DIR must name the top build directory"
#endif
#define EMU TEST_BUILD_DIR "/tests/emu/.libs/libamdhip64-emu"

static void *lib;

static void *sym(const char *name)
{
    void *fn = dlsym(lib, name);
    ck_assert_msg(fn != NULL, "%s not exported", name);
    return fn;
}

/* A runtime function through dlsym, with the headers' type. */
#define H(name) ((__typeof__(&name))sym(#name))

static void load(const char *variant)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s.so", EMU, variant);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "%s", dlerror());
}

static void init(void)
{
    load("");
    ck_assert_int_eq(H(hipInit)(0), hipSuccess);
}

static void *get_device_thread(void *arg)
{
    int *out = arg;
    if (H(hipGetDevice)(out) != hipSuccess)
        *out = -1;
    return NULL;
}

START_TEST(test_current_device_is_per_thread)
{
    setenv("DEVQ_EMU_DEVICES", "2", 1);
    init();
    int n = 0, d = -1;
    ck_assert_int_eq(H(hipGetDeviceCount)(&n), hipSuccess);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(H(hipSetDevice)(1), hipSuccess);
    ck_assert_int_eq(H(hipGetDevice)(&d), hipSuccess);
    ck_assert_int_eq(d, 1);
    pthread_t t;
    int other = -2;
    pthread_create(&t, NULL, get_device_thread, &other);
    pthread_join(t, NULL);
    ck_assert_int_eq(other, 0); /* device 0 until set */
    ck_assert_int_eq(H(hipSetDevice)(2), hipErrorInvalidDevice);
    char name[64];
    ck_assert_int_eq(H(hipDeviceGetName)(name, sizeof name, 1), hipSuccess);
    ck_assert_str_eq(name, "devq emulated hip device 1");
    int least = 0, greatest = 0;
    ck_assert_int_eq(H(hipDeviceGetStreamPriorityRange)(&least, &greatest), hipSuccess);
    ck_assert_int_eq(least, 1);
    ck_assert_int_eq(greatest, -1);
}
END_TEST

START_TEST(test_no_gpu_answers_like_rocm)
{
    setenv("DEVQ_EMU_DEVICES", "0", 1);
    load("");
    ck_assert_int_eq(H(hipInit)(0), hipErrorInvalidDevice);
    int n = 5;
    ck_assert_int_eq(H(hipGetDeviceCount)(&n), hipErrorNoDevice);
    ck_assert_int_eq(n, 0);
    void *p;
    ck_assert_int_eq(H(hipMalloc)(&p, 16), hipErrorNoDevice);
    ck_assert_str_eq(H(hipGetErrorName)(hipErrorNoDevice), "hipErrorNoDevice");
}
END_TEST

struct cb_probe {
    uint32_t done;
    hipError_t status, inner;
    sem_t ran;
};

static void probe_cb(hipStream_t s, hipError_t status, void *arg)
{
    struct cb_probe *p = arg;
    void *mem = NULL;
    p->status = status;
    p->inner = H(hipMalloc)(&mem, 16); /* forbidden in a callback */
    __atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
    sem_post(&p->ran);
}

/* A synchronize returns as soon as the device is poisoned, maybe before
 * the callbacks behind the failure ran: wait for the probe itself. */
static void probe_wait(struct cb_probe *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    ck_assert_msg(sem_timedwait(&p->ran, &ts) == 0, "the callback did not run within 5 s");
}

START_TEST(test_callbacks_may_not_call_the_runtime)
{
    init();
    hipStream_t s;
    ck_assert_int_eq(H(hipStreamCreateWithPriority)(&s, hipStreamNonBlocking, 0), hipSuccess);
    struct cb_probe p = { 0 };
    sem_init(&p.ran, 0, 0);
    ck_assert_int_eq(H(hipStreamAddCallback)(s, probe_cb, &p, 0), hipSuccess);
    ck_assert_int_eq(H(hipStreamSynchronize)(s), hipSuccess);
    probe_wait(&p);
    ck_assert_uint_eq(__atomic_load_n(&p.done, __ATOMIC_ACQUIRE), 1);
    ck_assert_int_eq(p.status, hipSuccess);
    ck_assert_int_eq(p.inner, hipErrorIllegalState);
    ck_assert_int_eq(H(hipStreamAddCallback)(s, probe_cb, &p, 1), hipErrorInvalidValue);
    ck_assert_int_eq(H(hipStreamDestroy)(s), hipSuccess);
}
END_TEST

static sem_t gate;

static void gate_cb(hipStream_t s, hipError_t status, void *arg)
{
    sem_wait(&gate);
}

START_TEST(test_sticky_error_until_reset)
{
    setenv("DEVQ_EMU_FAIL", "hipMemsetD8Async:1:hipErrorIllegalAddress", 1);
    init();
    hipStream_t s;
    void *d;
    ck_assert_int_eq(H(hipStreamCreateWithPriority)(&s, hipStreamNonBlocking, 0), hipSuccess);
    ck_assert_int_eq(H(hipMalloc)(&d, 64), hipSuccess);
    /* the gate holds the stream until all is queued: the fault cannot
     * surface in an enqueue call */
    sem_init(&gate, 0, 0);
    ck_assert_int_eq(H(hipStreamAddCallback)(s, gate_cb, NULL, 0), hipSuccess);
    /* the call succeeds; the fault happens when the work runs */
    ck_assert_int_eq(H(hipMemsetD8Async)(d, 1, 64, s), hipSuccess);
    struct cb_probe p = { 0 };
    sem_init(&p.ran, 0, 0);
    ck_assert_int_eq(H(hipStreamAddCallback)(s, probe_cb, &p, 0), hipSuccess);
    sem_post(&gate);
    probe_wait(&p);
    ck_assert_int_eq(H(hipStreamSynchronize)(s), hipErrorIllegalAddress);
    ck_assert_int_eq(p.status, hipErrorIllegalAddress); /* callbacks still run */
    void *q;
    ck_assert_int_eq(H(hipMalloc)(&q, 64), hipErrorIllegalAddress);
    ck_assert_int_eq(H(hipDeviceReset)(), hipSuccess);
    ck_assert_int_eq(H(hipMalloc)(&q, 64), hipSuccess);
    hipStream_t s2;
    ck_assert_int_eq(H(hipStreamCreateWithPriority)(&s2, hipStreamNonBlocking, -1), hipSuccess);
    ck_assert_int_eq(H(hipMemsetD8Async)(q, 7, 64, s2), hipSuccess);
    unsigned char host[64];
    ck_assert_int_eq(H(hipMemcpyDtoHAsync)(host, q, sizeof host, s2), hipSuccess);
    ck_assert_int_eq(H(hipStreamSynchronize)(s2), hipSuccess);
    ck_assert_uint_eq(host[63], 7);
    ck_assert_int_eq(H(hipFree)(q), hipSuccess);
    ck_assert_int_eq(H(hipStreamDestroy)(s2), hipSuccess);
}
END_TEST

START_TEST(test_fault_injection_by_hip_name)
{
    setenv("DEVQ_EMU_FAIL", "hipMalloc:2:hipErrorOutOfMemory", 1);
    init();
    void *a, *b;
    ck_assert_int_eq(H(hipMalloc)(&a, 64), hipSuccess);
    ck_assert_int_eq(H(hipMalloc)(&b, 64), hipErrorOutOfMemory);
    ck_assert_int_eq(H(hipMalloc)(&b, 64), hipSuccess); /* not sticky */
    ck_assert_str_eq(H(hipGetErrorString)(hipErrorOutOfMemory), "out of memory");
    ck_assert_int_eq(H(hipFree)(a), hipSuccess);
    ck_assert_int_eq(H(hipFree)(b), hipSuccess);
    ck_assert_int_eq(H(hipFree)(NULL), hipSuccess);
}
END_TEST

START_TEST(test_value_wait_and_write)
{
    init();
    static uint64_t word __attribute__((aligned(8)));
    ck_assert_int_eq(H(hipHostRegister)(&word, sizeof word, hipHostRegisterMapped), hipSuccess);
    void *dw;
    ck_assert_int_eq(H(hipHostGetDevicePointer)(&dw, &word, 0), hipSuccess);
    hipStream_t s;
    ck_assert_int_eq(H(hipStreamCreateWithPriority)(&s, hipStreamNonBlocking, 0), hipSuccess);
    ck_assert_int_eq(H(hipStreamWaitValue64)(s, dw, 1, hipStreamWaitValueGte, 0xff), hipErrorNotSupported);
    ck_assert_int_eq(H(hipStreamWaitValue64)(s, dw, 1, hipStreamWaitValueEq, UINT64_MAX),
                     hipErrorNotSupported);
    ck_assert_int_eq(H(hipStreamWriteValue64)(s, dw, 5, 0), hipSuccess);
    ck_assert_int_eq(H(hipStreamWaitValue64)(s, dw, 5, hipStreamWaitValueGte, UINT64_MAX), hipSuccess);
    ck_assert_int_eq(H(hipStreamSynchronize)(s), hipSuccess);
    ck_assert_uint_eq(__atomic_load_n(&word, __ATOMIC_ACQUIRE), 5);
    ck_assert_int_eq(H(hipStreamDestroy)(s), hipSuccess);
    ck_assert_int_eq(H(hipHostUnregister)(&word), hipSuccess);
    int attr = 0;
    ck_assert_int_eq(H(hipDeviceGetAttribute)(&attr, hipDeviceAttributeCanUseStreamWaitValue, 0), hipSuccess);
    ck_assert_int_eq(attr, 1);
    ck_assert_int_eq(H(hipDeviceGetAttribute)(&attr, hipDeviceAttributeMemoryPoolsSupported, 0), hipSuccess);
    ck_assert_int_eq(attr, 1);
}
END_TEST

START_TEST(test_variants_lack_entry_points)
{
    load("-old");
    ck_assert_ptr_null(dlsym(lib, "hipMallocAsync"));
    ck_assert_ptr_null(dlsym(lib, "hipFreeAsync"));
    ck_assert_ptr_null(dlsym(lib, "hipStreamWaitValue64"));
    ck_assert_ptr_null(dlsym(lib, "hipStreamWriteValue64"));
    ck_assert_ptr_nonnull(dlsym(lib, "hipModuleLaunchKernel"));
    ck_assert_ptr_nonnull(dlsym(lib, "hipHostRegister"));
    load("-broken");
    ck_assert_ptr_null(dlsym(lib, "hipModuleLaunchKernel"));
    ck_assert_ptr_null(dlsym(lib, "hipStreamAddCallback"));
    ck_assert_ptr_nonnull(dlsym(lib, "hipMallocAsync"));
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("runtime");
    tcase_add_test(tc, test_current_device_is_per_thread);
    tcase_add_test(tc, test_no_gpu_answers_like_rocm);
    tcase_add_test(tc, test_callbacks_may_not_call_the_runtime);
    tcase_add_test(tc, test_sticky_error_until_reset);
    tcase_add_test(tc, test_fault_injection_by_hip_name);
    tcase_add_test(tc, test_value_wait_and_write);
    tcase_add_test(tc, test_variants_lack_entry_points);
    return check_run(check_suite_of("hip_emu", tc, 30));
}
