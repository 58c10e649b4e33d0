/* SPDX-License-Identifier: MIT */
/* The emulated CUDA driver itself (tests/emu/libcuda-emu.so), called
 * the way a real driver is: dlopen, cuGetProcAddress, CUresult codes.
 * The plugin tests rely on these behaviours, so they are pinned here. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cuda_decls.h" /* plugins/cuda: no CUDA toolkit needed */
#include <devq/devq.h>
#include "../helpers/check_main.h"

#ifndef TEST_BUILD_DIR
#error "TEST_BUILD_DIR must name the top build directory"
#endif

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static get_proc_fn get_proc;

static void *sym(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(get_proc(name, &fn, version, 0, &st), CUDA_SUCCESS);
    ck_assert_msg(fn && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s not found", name);
    return fn;
}

#define F(name, ver, ...) ((CUresult(*)(__VA_ARGS__))sym(#name, ver))

static CUcontext ctx;

static void load(void)
{
    void *h = dlopen(TEST_BUILD_DIR "/tests/emu/.libs/libcuda-emu.so", RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    get_proc = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
    ck_assert_ptr_nonnull(get_proc);
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    ck_assert_ptr_nonnull(init);
    ck_assert_int_eq(init(0), CUDA_SUCCESS);
}

static void open_ctx(void)
{
    load();
    ck_assert_int_eq(F(cuDevicePrimaryCtxRetain, 7000, CUcontext *, CUdevice)(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuCtxSetCurrent, 4000, CUcontext)(ctx), CUDA_SUCCESS);
}

static CUstream new_stream(void)
{
    CUstream s;
    ck_assert_int_eq(
        F(cuStreamCreateWithPriority, 5050, CUstream *, unsigned, int)(&s, CU_STREAM_NON_BLOCKING, 0),
        CUDA_SUCCESS);
    return s;
}

START_TEST(test_get_proc_address)
{
    setenv("DEVQ_EMU_MISSING", "cuMemFreeAsync", 1);
    setenv("DEVQ_EMU_DRIVER_VERSION", "12080", 1);
    load();
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(get_proc("cuMemAllocAsync", &fn, 11020, 0, &st), CUDA_SUCCESS);
    ck_assert(fn != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
    ck_assert_int_eq(get_proc("cuMemAllocAsync", &fn, 11000, 0, &st), CUDA_SUCCESS);
    ck_assert(fn == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    ck_assert_int_eq(get_proc("cuMemFreeAsync", &fn, 11020, 0, &st), CUDA_SUCCESS);
    ck_assert(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_int_eq(get_proc("cuNoSuchThing", &fn, 11020, 0, &st), CUDA_SUCCESS);
    ck_assert(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* asking for a newer ABI than the driver's is an error */
    ck_assert_int_eq(get_proc("cuMemAllocAsync", &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    int v = 0;
    ck_assert_int_eq(F(cuDriverGetVersion, 2020, int *)(&v), CUDA_SUCCESS);
    ck_assert_int_eq(v, 12080);
}
END_TEST

START_TEST(test_error_names)
{
    load();
    const char *s = NULL;
    ck_assert_int_eq(F(cuGetErrorName, 6000, CUresult, const char **)(CUDA_ERROR_INVALID_HANDLE, &s),
                     CUDA_SUCCESS);
    ck_assert_str_eq(s, "CUDA_ERROR_INVALID_HANDLE");
    ck_assert_int_eq(F(cuGetErrorString, 6000, CUresult, const char **)(CUDA_ERROR_INVALID_HANDLE, &s),
                     CUDA_SUCCESS);
    ck_assert_str_eq(s, "invalid resource handle");
    ck_assert_int_eq(F(cuGetErrorName, 6000, CUresult, const char **)((CUresult)12345, &s),
                     CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(test_fail_nth_call)
{
    setenv("DEVQ_EMU_FAIL", "cuMemAlloc:3:CUDA_ERROR_OUT_OF_MEMORY", 1);
    open_ctx();
    CUresult (*alloc)(CUdeviceptr *, size_t) = F(cuMemAlloc, 3020, CUdeviceptr *, size_t);
    CUresult (*mfree)(CUdeviceptr) = F(cuMemFree, 3020, CUdeviceptr);
    CUdeviceptr p[4];
    ck_assert_int_eq(alloc(&p[0], 16), CUDA_SUCCESS);
    ck_assert_int_eq(alloc(&p[1], 16), CUDA_SUCCESS);
    ck_assert_int_eq(alloc(&p[2], 16), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(alloc(&p[3], 16), CUDA_SUCCESS);
    ck_assert_int_eq(mfree(p[0]), CUDA_SUCCESS);
    ck_assert_int_eq(mfree(p[1]), CUDA_SUCCESS);
    ck_assert_int_eq(mfree(p[3]), CUDA_SUCCESS);
    ck_assert_int_eq(mfree(p[3]), CUDA_ERROR_INVALID_VALUE); /* double free */
}
END_TEST

static int hostfunc_calls;
static void CUDA_CB hostfunc(void *arg)
{
    __atomic_fetch_add(&hostfunc_calls, 1, __ATOMIC_RELAXED);
}

static CUresult callback_status = CUDA_SUCCESS;
static int callback_calls;
static void CUDA_CB callback(CUstream s, CUresult st, void *arg)
{
    callback_status = st;
    __atomic_fetch_add(&callback_calls, 1, __ATOMIC_RELEASE);
}

/* Like the real driver, no driver call is allowed from a callback. */
static CUresult call_from_callback = CUDA_SUCCESS;
static void CUDA_CB alloc_in_callback(CUstream s, CUresult st, void *arg)
{
    CUdeviceptr p;
    call_from_callback = ((CUresult(*)(CUdeviceptr *, size_t))arg)(&p, 16);
}

START_TEST(test_no_driver_calls_in_callbacks)
{
    open_ctx();
    CUstream s = new_stream();
    void *alloc = sym("cuMemAlloc", 3020);
    ck_assert_int_eq(F(cuStreamAddCallback, 5000, CUstream, CUstreamCallback, void *,
                       unsigned)(s, alloc_in_callback, alloc, 0),
                     CUDA_SUCCESS);
    ck_assert_int_eq(F(cuStreamSynchronize, 2000, CUstream)(s), CUDA_SUCCESS);
    ck_assert_int_eq(call_from_callback, CUDA_ERROR_NOT_PERMITTED);
    F(cuStreamDestroy, 4000, CUstream)(s);
}
END_TEST

int devq_emu_test_ok(void **p, const devq_cpu_group *g);
int devq_emu_test_ok(void **p, const devq_cpu_group *g)
{
    __atomic_fetch_add(*(int *const *)p[0], 1, __ATOMIC_RELAXED);
    return 0;
}

START_TEST(test_sticky_error_poisons_context)
{
    setenv("DEVQ_EMU_FAIL", "cuLaunchKernel:2:CUDA_ERROR_ILLEGAL_ADDRESS", 1);
    open_ctx();
    CUstream s = new_stream();
    CUmodule m;
    static const char image[] = "devq-emu-module\ndevq_emu_test_ok 8\n";
    ck_assert_int_eq(F(cuModuleLoadData, 2000, CUmodule *, const void *)(&m, image), CUDA_SUCCESS);
    CUfunction fn;
    ck_assert_int_eq(
        F(cuModuleGetFunction, 2000, CUfunction *, CUmodule, const char *)(&fn, m, "devq_emu_test_ok"),
        CUDA_SUCCESS);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       CUstream, void **, void **) =
        F(cuLaunchKernel, 4000, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
          unsigned, CUstream, void **, void **);
    static int blocks;
    int *pb = &blocks;
    void *params[1] = { &pb };
    ck_assert_int_eq(launch(fn, 3, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(launch(fn, 3, 1, 1, 1, 1, 1, 0, s, params, NULL), CUDA_SUCCESS); /* faults later */
    CUresult (*sync)(CUstream) = F(cuStreamSynchronize, 2000, CUstream);
    CUresult r = sync(s);
    /* the context is poisoned: every call now fails */
    CUresult r1 = F(cuLaunchHostFunc, 10000, CUstream, CUhostFn, void *)(s, hostfunc, NULL);
    CUresult r2 =
        F(cuStreamAddCallback, 5000, CUstream, CUstreamCallback, void *, unsigned)(s, callback, NULL, 0);
    ck_assert_int_eq(r, CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(r1, CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(r2, CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(blocks, 3);
    CUdeviceptr p;
    ck_assert_int_eq(F(cuMemAlloc, 3020, CUdeviceptr *, size_t)(&p, 16), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(F(cuStreamDestroy, 4000, CUstream)(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(F(cuModuleUnload, 2000, CUmodule)(m), CUDA_SUCCESS);
    /* releasing the primary context resets it */
    ck_assert_int_eq(F(cuDevicePrimaryCtxRelease, 11000, CUdevice)(0), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuDevicePrimaryCtxRetain, 7000, CUcontext *, CUdevice)(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuMemAlloc, 3020, CUdeviceptr *, size_t)(&p, 16), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuMemFree, 3020, CUdeviceptr)(p), CUDA_SUCCESS);
}
END_TEST

static void CUDA_CB block_on(void *arg)
{
    uint32_t *gate = arg;
    while (!__atomic_load_n(gate, __ATOMIC_ACQUIRE))
        syscall(SYS_futex, gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

START_TEST(test_queued_hostfunc_dropped_callback_told)
{
    open_ctx();
    CUstream s = new_stream();
    static uint32_t gate;
    CUresult (*hf)(CUstream, CUhostFn, void *) = F(cuLaunchHostFunc, 10000, CUstream, CUhostFn, void *);
    ck_assert_int_eq(hf(s, block_on, &gate), CUDA_SUCCESS);
    CUmodule m;
    static const char image[] = "devq-emu-module\ndevq_emu_test_fail\n";
    ck_assert_int_eq(F(cuModuleLoadData, 2000, CUmodule *, const void *)(&m, image), CUDA_SUCCESS);
    CUfunction fn;
    ck_assert_int_eq(
        F(cuModuleGetFunction, 2000, CUfunction *, CUmodule, const char *)(&fn, m, "devq_emu_test_fail"),
        CUDA_SUCCESS);
    ck_assert_int_eq(F(cuLaunchKernel, 4000, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, unsigned, CUstream, void **,
                       void **)(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
                     CUDA_SUCCESS);
    ck_assert_int_eq(hf(s, hostfunc, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(
        F(cuStreamAddCallback, 5000, CUstream, CUstreamCallback, void *, unsigned)(s, callback, NULL, 0),
        CUDA_SUCCESS);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    ck_assert_int_eq(F(cuStreamSynchronize, 2000, CUstream)(s), CUDA_ERROR_LAUNCH_FAILED);
    /* Synchronize returns once the context is poisoned, maybe before the
     * stream thread got to the callback: wait for it (bounded). */
    for (int t = 0; t < 5000 && __atomic_load_n(&callback_calls, __ATOMIC_ACQUIRE) == 0; t++)
        usleep(1000);
    ck_assert_int_eq(hostfunc_calls, 0); /* like the real driver: dropped */
    ck_assert_int_eq(__atomic_load_n(&callback_calls, __ATOMIC_ACQUIRE), 1);
    ck_assert_int_eq(callback_status, CUDA_ERROR_LAUNCH_FAILED);
    F(cuStreamDestroy, 4000, CUstream)(s);
    F(cuModuleUnload, 2000, CUmodule)(m);
}
END_TEST

int devq_emu_test_fail(void **p, const devq_cpu_group *g);
int devq_emu_test_fail(void **p, const devq_cpu_group *g)
{
    return 1;
}

START_TEST(test_modules)
{
    open_ctx();
    CUresult (*load_data)(CUmodule *, const void *) = F(cuModuleLoadData, 2000, CUmodule *, const void *);
    CUresult (*get_fn)(CUfunction *, CUmodule, const char *) =
        F(cuModuleGetFunction, 2000, CUfunction *, CUmodule, const char *);
    CUmodule m;
    ck_assert_int_eq(load_data(&m, "// PTX\n.version 6.0\n"), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(load_data(&m, "devq-emu-module-x\n"), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(load_data(&m, "devq-emu-module\nk 0\n"), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(load_data(&m, "devq-emu-module\nk 4 pointer\n"), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(load_data(&m, "devq-emu-module cpu-argsx\n"), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(load_data(&m, "devq-emu-module cpu-args\nk ptr 4\n"), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuModuleUnload, 2000, CUmodule)(m), CUDA_SUCCESS);
    ck_assert_int_eq(load_data(&m, "devq-emu-module\ndevq_emu_test_ok 8\nnot_in_this_process 4\n"),
                     CUDA_SUCCESS);
    CUfunction f;
    ck_assert_int_eq(get_fn(&f, m, "devq_emu_test_ok"), CUDA_SUCCESS);
    ck_assert_int_eq(get_fn(&f, m, "not_in_this_process"), CUDA_ERROR_NOT_FOUND); /* no such symbol */
    ck_assert_int_eq(get_fn(&f, m, "devq_emu_test_fail"), CUDA_ERROR_NOT_FOUND);  /* not in the module */
    ck_assert_int_eq(F(cuModuleUnload, 2000, CUmodule)(m), CUDA_SUCCESS);
}
END_TEST

/* cuFuncGetParamInfo (12.4+): each declared parameter's size, at an
 * offset aligned to its size (up to 8); past the last one
 * CUDA_ERROR_INVALID_VALUE; an older driver does not hand it out. */
START_TEST(test_func_param_info)
{
    open_ctx();
    CUmodule m;
    ck_assert_int_eq(F(cuModuleLoadData, 2000, CUmodule *,
                       const void *)(&m, "devq-emu-module\ndevq_emu_test_ok 2 ptr 4 1 16 4\n"),
                     CUDA_SUCCESS);
    CUfunction f;
    ck_assert_int_eq(
        F(cuModuleGetFunction, 2000, CUfunction *, CUmodule, const char *)(&f, m, "devq_emu_test_ok"),
        CUDA_SUCCESS);
    CUresult (*info)(CUfunction, size_t, size_t *, size_t *) =
        F(cuFuncGetParamInfo, 12040, CUfunction, size_t, size_t *, size_t *);
    static const size_t want_off[] = { 0, 8, 16, 20, 24, 40 }, want_size[] = { 2, 8, 4, 1, 16, 4 };
    for (size_t i = 0; i < 6; i++) {
        size_t off = 99, size = 99;
        ck_assert_int_eq(info(f, i, &off, &size), CUDA_SUCCESS);
        ck_assert_uint_eq(off, want_off[i]);
        ck_assert_uint_eq(size, want_size[i]);
    }
    size_t off;
    ck_assert_int_eq(info(f, 6, &off, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(info(f, 1, &off, NULL), CUDA_SUCCESS); /* size optional */
    ck_assert_uint_eq(off, 8);
    ck_assert_int_eq(info(NULL, 0, &off, NULL), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(F(cuModuleUnload, 2000, CUmodule)(m), CUDA_SUCCESS);
}
END_TEST

START_TEST(test_func_param_info_hidden)
{
    setenv("DEVQ_EMU_DRIVER_VERSION", "12030", 1);
    load();
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(get_proc("cuFuncGetParamInfo", &fn, 12030, 0, &st), CUDA_SUCCESS);
    ck_assert_ptr_null(fn);
    /* DEVQ_EMU_MISSING=cuFuncGetParamInfo: tests/unit/test_gpu_plugin's
     * test_kernel_iface_old_driver */
}
END_TEST

/* Graphs: nodes run in dependency order (a diamond: 1 first, 4 last)
 * as one op of the stream; a node of another graph is refused. */
static uint32_t graph_log[16], graph_logged;

int devq_emu_test_graph_tag(void **p, const devq_cpu_group *g);
int devq_emu_test_graph_tag(void **p, const devq_cpu_group *g)
{
    (void)g;
    graph_log[__atomic_fetch_add(&graph_logged, 1, __ATOMIC_RELAXED) % 16] = *(const uint32_t *)p[0];
    return 0;
}

static CUDA_KERNEL_NODE_PARAMS_v2 tag_node(CUfunction f, uint32_t *tag)
{
    static void *params[4][1];
    static int next;
    void **kp = params[next++ % 4];
    kp[0] = tag;
    return (CUDA_KERNEL_NODE_PARAMS_v2){ .func = f,
                                         .gridDimX = 1,
                                         .gridDimY = 1,
                                         .gridDimZ = 1,
                                         .blockDimX = 1,
                                         .blockDimY = 1,
                                         .blockDimZ = 1,
                                         .kernelParams = kp };
}

START_TEST(test_graph_dependency_order)
{
    open_ctx();
    CUmodule m;
    ck_assert_int_eq(F(cuModuleLoadData, 2000, CUmodule *,
                       const void *)(&m, "devq-emu-module\ndevq_emu_test_graph_tag 4\n"),
                     CUDA_SUCCESS);
    CUfunction f;
    ck_assert_int_eq(
        F(cuModuleGetFunction, 2000, CUfunction *, CUmodule, const char *)(&f, m, "devq_emu_test_graph_tag"),
        CUDA_SUCCESS);
    PFN_cuGraphCreate_v10000 create = (PFN_cuGraphCreate_v10000)sym("cuGraphCreate", 10000);
    PFN_cuGraphAddKernelNode_v12000 add = (PFN_cuGraphAddKernelNode_v12000)sym("cuGraphAddKernelNode", 12000);
    PFN_cuGraphInstantiateWithFlags_v11040 inst =
        (PFN_cuGraphInstantiateWithFlags_v11040)sym("cuGraphInstantiateWithFlags", 11040);
    PFN_cuGraphExecKernelNodeSetParams_v12000 set =
        (PFN_cuGraphExecKernelNodeSetParams_v12000)sym("cuGraphExecKernelNodeSetParams", 12000);
    PFN_cuGraphLaunch_v10000 launch = (PFN_cuGraphLaunch_v10000)sym("cuGraphLaunch", 10000);
    CUgraph g, other;
    ck_assert_int_eq(create(&g, 0), CUDA_SUCCESS);
    ck_assert_int_eq(create(&other, 0), CUDA_SUCCESS);
    ck_assert_int_eq(create(&other, 1), CUDA_ERROR_INVALID_VALUE);
    uint32_t tags[4] = { 1, 2, 3, 4 };
    CUDA_KERNEL_NODE_PARAMS_v2 p[4];
    for (int i = 0; i < 4; i++)
        p[i] = tag_node(f, &tags[i]);
    CUgraphNode a, b, c, d, foreign;
    ck_assert_int_eq(add(&a, g, NULL, 0, &p[0]), CUDA_SUCCESS);
    ck_assert_int_eq(add(&b, g, &a, 1, &p[1]), CUDA_SUCCESS);
    ck_assert_int_eq(add(&c, g, &a, 1, &p[2]), CUDA_SUCCESS);
    CUgraphNode bc[2] = { c, b };
    ck_assert_int_eq(add(&d, g, bc, 2, &p[3]), CUDA_SUCCESS);
    ck_assert_int_eq(add(&foreign, other, &a, 1, &p[0]), CUDA_ERROR_INVALID_VALUE); /* a is g's */
    ck_assert_int_eq(add(&foreign, other, NULL, 0, &p[0]), CUDA_SUCCESS);
    CUgraphExec x;
    ck_assert_int_eq(inst(&x, g, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(inst(&x, g, 0), CUDA_SUCCESS);
    tags[0] = 9; /* copied at add */
    ck_assert_int_eq(set(x, foreign, &p[0]), CUDA_ERROR_INVALID_VALUE);
    CUstream s = new_stream();
    ck_assert_int_eq(launch(x, s), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuStreamSynchronize, 2000, CUstream)(s), CUDA_SUCCESS);
    ck_assert_uint_eq(graph_logged, 4);
    ck_assert_uint_eq(graph_log[0], 1);
    ck_assert_uint_eq(graph_log[3], 4);
    ck_assert_uint_eq(graph_log[1] + graph_log[2], 5);
    ck_assert_int_eq(((PFN_cuGraphExecDestroy_v10000)sym("cuGraphExecDestroy", 10000))(x), CUDA_SUCCESS);
    ck_assert_int_eq(((PFN_cuGraphDestroy_v10000)sym("cuGraphDestroy", 10000))(g), CUDA_SUCCESS);
    ck_assert_int_eq(((PFN_cuGraphDestroy_v10000)sym("cuGraphDestroy", 10000))(other), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuModuleUnload, 2000, CUmodule)(m), CUDA_SUCCESS);
}
END_TEST

START_TEST(test_last_release_destroys_context)
{
    open_ctx();
    CUstream s = new_stream();
    CUdeviceptr p;
    ck_assert_int_eq(F(cuMemAlloc, 3020, CUdeviceptr *, size_t)(&p, 64), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuDevicePrimaryCtxRelease, 11000, CUdevice)(0), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuDevicePrimaryCtxRetain, 7000, CUcontext *, CUdevice)(&ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(F(cuCtxSetCurrent, 4000, CUcontext)(ctx), CUDA_SUCCESS);
    /* the old stream and memory died with the old context */
    ck_assert_int_eq(F(cuStreamQuery, 2000, CUstream)(s), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(F(cuMemFree, 3020, CUdeviceptr)(p), CUDA_ERROR_INVALID_VALUE);
    F(cuStreamDestroy, 4000, CUstream)(s);
    CUstream s2 = new_stream();
    ck_assert_int_eq(F(cuStreamSynchronize, 2000, CUstream)(s2), CUDA_SUCCESS);
    F(cuStreamDestroy, 4000, CUstream)(s2);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("driver");
    tcase_add_test(tc, test_get_proc_address);
    tcase_add_test(tc, test_error_names);
    tcase_add_test(tc, test_fail_nth_call);
    tcase_add_test(tc, test_sticky_error_poisons_context);
    tcase_add_test(tc, test_queued_hostfunc_dropped_callback_told);
    tcase_add_test(tc, test_modules);
    tcase_add_test(tc, test_func_param_info);
    tcase_add_test(tc, test_func_param_info_hidden);
    tcase_add_test(tc, test_graph_dependency_order);
    tcase_add_test(tc, test_last_release_destroys_context);
    tcase_add_test(tc, test_no_driver_calls_in_callbacks);
    return check_run(check_suite_of("cuda_emu", tc, 30));
}
