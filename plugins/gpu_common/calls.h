/* SPDX-License-Identifier: MIT */
/* The adapters of struct gpu_driver (driver.h) that are the same call in
 * CUDA and HIP, written once.  Not a header of gpu_common's own files:
 * plugins/cuda/calls.c and plugins/hip/calls.c include it once each,
 * after their driver's header and these definitions:
 *   GPU_PICK(cuda, hip)  the word of this driver (a name, a type, a flag)
 *   GPU_DRV              the table of resolved entry points (cu_drv, hip_rt)
 *   GPU_DPTR(p)          a host-side void * as the driver's device pointer
 *   gpu_dptr_t           the driver's device pointer type
 * The entry points keep their driver's names (GPU_DRV's members are the
 * driver's names less the cu/hip prefix).  What one driver does
 * differently (make_current, wait_value, the work description, priority
 * order) stays in its calls.c, with its table: GPU_DRIVER_WORDS (below),
 * its own entries, GPU_DRIVER_ADAPTERS (driver.h). */
#ifndef DEVQ_GPU_CALLS_H
#define DEVQ_GPU_CALLS_H

#include <errno.h>
#include <string.h>

#if !defined(GPU_PICK) || !defined(GPU_DRV) || !defined(GPU_DPTR)
#error "define GPU_PICK, GPU_DRV, GPU_DPTR and gpu_dptr_t before including gpu_common/calls.h"
#endif

/* A name of the driver's, as a string: GPU_NAME(cuMemAlloc, hipMalloc). */
#define GPU_NAME(cuda, hip) GPU_PICK(#cuda, #hip)

typedef GPU_PICK(CUresult, hipError_t) gpu_status_t;

static const char *desc(int r, char *buf, size_t n)
{
    return GPU_PICK(cu_err_desc, hip_err_desc)((gpu_status_t)r, buf, n);
}

/* Errors after which the context (HIP: the device's) is unusable until it
 * is destroyed (HIP: reset, hipDeviceReset). */
static bool sticky(int r)
{
    switch ((gpu_status_t)r) {
    case GPU_PICK(CUDA_ERROR_ILLEGAL_ADDRESS, hipErrorIllegalAddress):
    case GPU_PICK(CUDA_ERROR_LAUNCH_FAILED, hipErrorLaunchFailure):
    case GPU_PICK(CUDA_ERROR_LAUNCH_TIMEOUT, hipErrorLaunchTimeOut):
    case GPU_PICK(CUDA_ERROR_ASSERT, hipErrorAssert):
    case GPU_PICK(CUDA_ERROR_ECC_UNCORRECTABLE, hipErrorECCNotCorrectable):
    case GPU_PICK(CUDA_ERROR_CONTEXT_IS_DESTROYED, hipErrorContextIsDestroyed):
#if GPU_PICK(1, 0) /* faults HIP does not tell apart */
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
#endif
        return true;
    default:
        return false;
    }
}

/* The errno of a driver status; a sticky one is -EIO. */
static int to_errno(int r)
{
    if (sticky(r))
        return -EIO;
    switch ((gpu_status_t)r) {
    case GPU_PICK(CUDA_SUCCESS, hipSuccess):
        return 0;
    case GPU_PICK(CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory):
        return -ENOMEM;
    case GPU_PICK(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue):
    case GPU_PICK(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle):
    case GPU_PICK(CUDA_ERROR_INVALID_CONTEXT, hipErrorInvalidContext):
    case GPU_PICK(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, hipErrorLaunchOutOfResources):
#if !GPU_PICK(1, 0)
    case hipErrorInvalidDevicePointer:
    case hipErrorInvalidConfiguration:
#endif
        return -EINVAL;
    case GPU_PICK(CUDA_ERROR_NOT_READY, hipErrorNotReady):
        return -EAGAIN;
    case GPU_PICK(CUDA_ERROR_NOT_FOUND, hipErrorNotFound):
#if !GPU_PICK(1, 0)
    case hipErrorInvalidDeviceFunction:
#endif
        return -ENOENT;
    case GPU_PICK(CUDA_ERROR_INVALID_IMAGE, hipErrorInvalidImage):
    case GPU_PICK(CUDA_ERROR_NO_BINARY_FOR_GPU, hipErrorNoBinaryForGpu):
#if GPU_PICK(1, 0)
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
#else
    case hipErrorInvalidKernelFile:
#endif
        return -ENOEXEC;
    case GPU_PICK(CUDA_ERROR_NOT_SUPPORTED, hipErrorNotSupported):
        return -ENOTSUP;
    case GPU_PICK(CUDA_ERROR_NOT_PERMITTED, hipErrorIllegalState): /* a call from a callback */
        return -EPERM;
    case GPU_PICK(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, hipErrorHostMemoryAlreadyRegistered):
        return -EEXIST;
#if GPU_PICK(1, 0)
    case CUDA_ERROR_TIMEOUT:
        return -ETIMEDOUT;
#endif
    case GPU_PICK(CUDA_ERROR_NOT_INITIALIZED, hipErrorNotInitialized):
    case GPU_PICK(CUDA_ERROR_DEINITIALIZED, hipErrorDeinitialized):
    case GPU_PICK(CUDA_ERROR_NO_DEVICE, hipErrorNoDevice):
    case GPU_PICK(CUDA_ERROR_INVALID_DEVICE, hipErrorInvalidDevice):
    case GPU_PICK(CUDA_ERROR_STUB_LIBRARY, hipErrorInsufficientDriver):
        return -ENODEV;
    default:
        return -EIO;
    }
}

/* ---- devices ---- */

/* The load's handle of device ordinal (gpu_drv.device_handle). */
static int device_handle(int *dev, int ordinal, const char *ver)
{
    int r = GPU_DRV.DeviceGet(dev, ordinal);
    if (r == 0)
        return 0;
    char what[160];
    return gpu_load_fail(to_errno(r), "%s: %s(%d): %s; %s %s", gpu_backend,
                         GPU_NAME(cuDeviceGet, hipDeviceGet), ordinal, desc(r, what, sizeof what),
                         GPU_PICK("driver", "runtime"), ver);
}

static int device_name(char *buf, int n, int dev)
{
    return GPU_DRV.DeviceGetName(buf, n, dev);
}

static int total_mem(size_t *bytes, int dev)
{
    return GPU_DRV.DeviceTotalMem(bytes, dev);
}

static int priority_range(int *least, int *greatest)
{
    return GPU_DRV.GPU_PICK(CtxGetStreamPriorityRange, DeviceGetStreamPriorityRange)(least, greatest);
}

/* ---- streams and events: the handles are the driver's pointers ---- */

static int stream_create(void **stream, int prio)
{
    GPU_PICK(CUstream, hipStream_t) s = NULL;
    int r =
        GPU_DRV.StreamCreateWithPriority(&s, GPU_PICK(CU_STREAM_NON_BLOCKING, hipStreamNonBlocking), prio);
    *stream = s;
    return r;
}

static int stream_destroy(void *stream)
{
    return GPU_DRV.StreamDestroy(stream);
}

static void trampoline(GPU_PICK(CUstream, hipStream_t) hs, gpu_status_t status, void *cb)
{
    (void)hs;
    ((struct gpu_cb *)cb)->run(cb, (int)status);
}

static int add_callback(void *stream, struct gpu_cb *cb)
{
    return GPU_DRV.StreamAddCallback(stream, trampoline, cb, 0);
}

static int wait_event(void *stream, void *event)
{
    return GPU_DRV.StreamWaitEvent(stream, event, 0);
}

static int event_create(void **event, bool timing)
{
    GPU_PICK(CUevent, hipEvent_t) e = NULL;
    unsigned flags = timing ? GPU_PICK(CU_EVENT_DEFAULT, hipEventDefault)
                            : GPU_PICK(CU_EVENT_DISABLE_TIMING, hipEventDisableTiming);
    int r = GPU_DRV.GPU_PICK(EventCreate, EventCreateWithFlags)(&e, flags);
    *event = e;
    return r;
}

static int event_destroy(void *event)
{
    return GPU_DRV.EventDestroy(event);
}

static int event_record(void *event, void *stream)
{
    return GPU_DRV.EventRecord(event, stream);
}

static int event_query(void *event)
{
    return GPU_DRV.EventQuery(event);
}

static int event_elapsed(float *ms, void *a, void *b)
{
    return GPU_DRV.EventElapsedTime(ms, a, b);
}

/* ---- memory ---- */

static int mem_alloc(void **ptr, size_t bytes)
{
    gpu_dptr_t d = 0;
    int r = GPU_DRV.GPU_PICK(MemAlloc, Malloc)(&d, bytes);
    *ptr = (void *)(uintptr_t)d;
    return r;
}

static int mem_free(void *ptr)
{
    return GPU_DRV.GPU_PICK(MemFree, Free)(GPU_DPTR(ptr));
}

static int mem_alloc_async(void **ptr, size_t bytes, void *stream)
{
    gpu_dptr_t d = 0;
    int r = GPU_DRV.GPU_PICK(MemAllocAsync, MallocAsync)(&d, bytes, stream);
    *ptr = (void *)(uintptr_t)d;
    return r;
}

static int mem_free_async(void *ptr, void *stream)
{
    return GPU_DRV.GPU_PICK(MemFreeAsync, FreeAsync)(GPU_DPTR(ptr), stream);
}

/* HIP's HtoD and DtoD take a non-const source in the 5.2 headers; they
 * only read it. */
static int copy_h2d(void *dst, const void *src, size_t n, void *stream)
{
    return GPU_DRV.MemcpyHtoDAsync(GPU_DPTR(dst), (void *)src, n, stream);
}

static int copy_d2h(void *dst, const void *src, size_t n, void *stream)
{
    return GPU_DRV.MemcpyDtoHAsync(dst, GPU_DPTR(src), n, stream);
}

static int copy_d2d(void *dst, const void *src, size_t n, void *stream)
{
    return GPU_DRV.MemcpyDtoDAsync(GPU_DPTR(dst), GPU_DPTR(src), n, stream);
}

static int fill(void *dst, uint8_t byte, size_t n, void *stream)
{
    return GPU_DRV.MemsetD8Async(GPU_DPTR(dst), byte, n, stream);
}

static int host_register(void *p, size_t bytes)
{
    unsigned flags = GPU_PICK(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP,
                              hipHostRegisterPortable | hipHostRegisterMapped);
    return GPU_DRV.GPU_PICK(MemHostRegister, HostRegister)(p, bytes, flags);
}

static int host_unregister(void *p)
{
    return GPU_DRV.GPU_PICK(MemHostUnregister, HostUnregister)(p);
}

static int host_device_pointer(void **dev_ptr, void *p)
{
    gpu_dptr_t d = 0;
    int r = GPU_DRV.GPU_PICK(MemHostGetDevicePointer, HostGetDevicePointer)(&d, p, 0);
    *dev_ptr = (void *)(uintptr_t)d;
    return r;
}

static int write_value(void *stream, void *addr, uint64_t value)
{
    return GPU_DRV.StreamWriteValue64(stream, GPU_DPTR(addr), value,
                                      GPU_PICK(CU_STREAM_WRITE_VALUE_DEFAULT, 0));
}

/* ---- modules and launches ---- */

static int module_load(void **module, const void *image)
{
    GPU_PICK(CUmodule, hipModule_t) m = NULL;
    int r = GPU_DRV.ModuleLoadData(&m, image);
    *module = m;
    return r;
}

static int module_get_function(void **function, void *module, const char *entry)
{
    GPU_PICK(CUfunction, hipFunction_t) f = NULL;
    int r = GPU_DRV.ModuleGetFunction(&f, module, entry);
    *function = f;
    return r;
}

static int module_unload(void *module)
{
    return GPU_DRV.ModuleUnload(module);
}

static int launch(void *function, const struct gpu_launch *g, unsigned shared_bytes, void *stream)
{
    return GPU_DRV.GPU_PICK(LaunchKernel, ModuleLaunchKernel)(function, g->grid[0], g->grid[1], g->grid[2],
                                                              g->block[0], g->block[1], g->block[2],
                                                              shared_bytes, stream, g->params, NULL);
}

/* ---- graphs: a chain of kernel nodes ---- */

typedef GPU_PICK(CUDA_KERNEL_NODE_PARAMS_v2, hipKernelNodeParams) gpu_kernel_node_params;

/* The driver's kernel-node structure for a launch (the two differ in
 * layout); the driver copies the arguments params points at. */
static void kernel_node(gpu_kernel_node_params *p, void *function, const struct gpu_launch *g,
                        unsigned shared)
{
    memset(p, 0, sizeof *p);
    p->func = function; /* CUfunction; HIP: the hipModuleGetFunction function */
#if GPU_PICK(1, 0)
    p->gridDimX = g->grid[0], p->gridDimY = g->grid[1], p->gridDimZ = g->grid[2];
    p->blockDimX = g->block[0], p->blockDimY = g->block[1], p->blockDimZ = g->block[2];
#else
    p->gridDim = (dim3){ g->grid[0], g->grid[1], g->grid[2] };
    p->blockDim = (dim3){ g->block[0], g->block[1], g->block[2] };
#endif
    p->sharedMemBytes = shared;
    p->kernelParams = g->params;
}

static int graph_create(void **graph)
{
    GPU_PICK(CUgraph, hipGraph_t) h = NULL;
    int r = GPU_DRV.GraphCreate(&h, 0);
    *graph = h;
    return r;
}

static int graph_add_kernel(void **node, void *graph, void *dep, void *function, const struct gpu_launch *g,
                            unsigned shared)
{
    gpu_kernel_node_params p;
    kernel_node(&p, function, g, shared);
    GPU_PICK(CUgraphNode, hipGraphNode_t) n = NULL, d = dep;
    int r = GPU_DRV.GraphAddKernelNode(&n, graph, dep ? &d : NULL, dep ? 1 : 0, &p);
    *node = n;
    return r;
}

static int graph_instantiate(void **exec, void *graph)
{
    GPU_PICK(CUgraphExec, hipGraphExec_t) x = NULL;
    int r = GPU_DRV.GraphInstantiateWithFlags(&x, graph, 0);
    *exec = x;
    return r;
}

static int graph_set_kernel(void *exec, void *node, void *function, const struct gpu_launch *g,
                            unsigned shared)
{
    gpu_kernel_node_params p;
    kernel_node(&p, function, g, shared);
    return GPU_DRV.GraphExecKernelNodeSetParams(exec, node, &p);
}

static int graph_launch(void *exec, void *stream)
{
    return GPU_DRV.GraphLaunch(exec, stream);
}

static int graph_exec_destroy(void *exec)
{
    return GPU_DRV.GraphExecDestroy(exec);
}

static int graph_destroy(void *graph)
{
    return GPU_DRV.GraphDestroy(graph);
}

/* ---- the driver's words, quoted in messages ---- */


/* The fields of struct gpu_driver that say the same thing in each
 * driver's words: calls.c's table starts with them. */
#define GPU_DRIVER_WORDS \
    .not_ready = GPU_PICK(CUDA_ERROR_NOT_READY, hipErrorNotReady),                                       \
    .already_registered = GPU_PICK(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                            \
                                   hipErrorHostMemoryAlreadyRegistered),                                 \
    .pools_attr = GPU_NAME(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, hipDeviceAttributeMemoryPoolsSupported), \
    .memops_attr = GPU_NAME(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,                           \
                            hipDeviceAttributeCanUseStreamWaitValue),                                    \
    .driver_word = GPU_PICK("driver", "runtime"), .units = GPU_PICK("SMs", "CUs"),                      \
    .value_ops_word = GPU_PICK("memops", "stream wait value"), .text_image = GPU_PICK("PTX image", "image"), \
    .call = {                                                                                            \
        .make_current = GPU_NAME(cuCtxSetCurrent, hipSetDevice),                                         \
        .stream_create = GPU_NAME(cuStreamCreateWithPriority, hipStreamCreateWithPriority),              \
        .stream_add_callback = GPU_NAME(cuStreamAddCallback, hipStreamAddCallback),                      \
        .stream_wait_event = GPU_NAME(cuStreamWaitEvent, hipStreamWaitEvent),                            \
        .event_create = GPU_NAME(cuEventCreate, hipEventCreateWithFlags),                                \
        .event_record = GPU_NAME(cuEventRecord, hipEventRecord),                                         \
        .event_query = GPU_NAME(cuEventQuery, hipEventQuery),                                            \
        .event_elapsed = GPU_NAME(cuEventElapsedTime, hipEventElapsedTime),                              \
        .mem_alloc = GPU_NAME(cuMemAlloc, hipMalloc),                                                    \
        .mem_free = GPU_NAME(cuMemFree, hipFree),                                                        \
        .mem_alloc_async = GPU_NAME(cuMemAllocAsync, hipMallocAsync),                                    \
        .mem_free_async = GPU_NAME(cuMemFreeAsync, hipFreeAsync),                                        \
        .copy_h2d = GPU_NAME(cuMemcpyHtoDAsync, hipMemcpyHtoDAsync),                                     \
        .copy_d2h = GPU_NAME(cuMemcpyDtoHAsync, hipMemcpyDtoHAsync),                                     \
        .copy_d2d = GPU_NAME(cuMemcpyDtoDAsync, hipMemcpyDtoDAsync),                                     \
        .fill = GPU_NAME(cuMemsetD8Async, hipMemsetD8Async),                                             \
        .host_register = GPU_NAME(cuMemHostRegister, hipHostRegister),                                   \
        .host_device_pointer = GPU_NAME(cuMemHostGetDevicePointer, hipHostGetDevicePointer),             \
        .wait_value = GPU_NAME(cuStreamWaitValue64, hipStreamWaitValue64),                               \
        .write_value = GPU_NAME(cuStreamWriteValue64, hipStreamWriteValue64),                            \
        .module_load = GPU_NAME(cuModuleLoadData, hipModuleLoadData),                                    \
        .module_get_function = GPU_NAME(cuModuleGetFunction, hipModuleGetFunction),                      \
        .launch = GPU_NAME(cuLaunchKernel, hipModuleLaunchKernel),                                       \
        .graph_create = GPU_NAME(cuGraphCreate, hipGraphCreate),                                         \
        .graph_add_kernel = GPU_NAME(cuGraphAddKernelNode, hipGraphAddKernelNode),                       \
        .graph_instantiate = GPU_NAME(cuGraphInstantiateWithFlags, hipGraphInstantiateWithFlags),        \
        .graph_set_kernel = GPU_NAME(cuGraphExecKernelNodeSetParams, hipGraphExecKernelNodeSetParams),   \
        .graph_launch = GPU_NAME(cuGraphLaunch, hipGraphLaunch),                                         \
        .device_name = GPU_NAME(cuDeviceGetName, hipDeviceGetName),                                      \
        .total_mem = GPU_NAME(cuDeviceTotalMem, hipDeviceTotalMem),                                      \
        .priority_range = GPU_NAME(cuCtxGetStreamPriorityRange, hipDeviceGetStreamPriorityRange),        \
    },                                                                                                   \
    .nccl = {                                                                                            \
        .name = GPU_PICK("NCCL", "RCCL"),                                                                \
        .soname = GPU_PICK("libnccl.so.2", "librccl.so.1"),                                              \
        .env = GPU_PICK("DEVQ_NCCL_LIBRARY", "DEVQ_RCCL_LIBRARY"),                                       \
        .install = GPU_PICK("install NCCL 2 (libnccl2, from NVIDIA's repository)",                       \
                            "install RCCL (ROCm's rccl package)"),                                       \
    }

#endif
