/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq-hip.so internals: the runtime's entry points, devices and kernels.
 * Streams, events, memory and values are gpu_common's, over the table in
 * calls.c.  See devq-hip(7).
 *
 * The HIP runtime API has no contexts for us to hold: each device has one
 * implicit primary context, selected per thread with hipSetDevice. */
#ifndef DEVQ_HIP_PLUGIN_H
#define DEVQ_HIP_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <hip/hip_runtime_api.h>
#include <devq/devq_plugin.h>
#include "../gpu_common/driver.h"

#define HIP_HIDDEN __attribute__((visibility("hidden")))

/* Entry points, resolved by name with dlsym (HIP has no
 * cuGetProcAddress), each named once: X(name, group) is the field
 * hip_rt.name, looked up as "hip<name>", with the type of the function
 * the libamdhip64-dev headers declare; group is enum gpu_entry_group. */
#define HIP_ENTRY_POINTS(X) \
    X(GetErrorName,                 GPU_REQUIRED) \
    X(GetErrorString,               GPU_REQUIRED) \
    X(RuntimeGetVersion,            GPU_REQUIRED) \
    X(Init,                         GPU_REQUIRED) \
    X(GetDeviceCount,               GPU_REQUIRED) \
    X(DeviceGet,                    GPU_REQUIRED) \
    X(DeviceGetName,                GPU_REQUIRED) \
    X(DeviceTotalMem,               GPU_REQUIRED) \
    X(DeviceGetAttribute,           GPU_REQUIRED) \
    X(SetDevice,                    GPU_REQUIRED) \
    X(DeviceReset,                  GPU_REQUIRED) \
    X(DeviceGetStreamPriorityRange, GPU_REQUIRED) \
    X(StreamCreateWithPriority,     GPU_REQUIRED) \
    X(StreamDestroy,                GPU_REQUIRED) \
    X(StreamWaitEvent,              GPU_REQUIRED) \
    X(StreamAddCallback,            GPU_REQUIRED) \
    X(EventCreateWithFlags,         GPU_REQUIRED) \
    X(EventDestroy,                 GPU_REQUIRED) \
    X(EventRecord,                  GPU_REQUIRED) \
    X(EventQuery,                   GPU_REQUIRED) \
    X(EventElapsedTime,             GPU_REQUIRED) \
    X(Malloc,                       GPU_REQUIRED) \
    X(Free,                         GPU_REQUIRED) \
    X(MemcpyHtoDAsync,              GPU_REQUIRED) \
    X(MemcpyDtoHAsync,              GPU_REQUIRED) \
    X(MemcpyDtoDAsync,              GPU_REQUIRED) \
    X(MemsetD8Async,                GPU_REQUIRED) \
    X(ModuleLoadData,               GPU_REQUIRED) \
    X(ModuleUnload,                 GPU_REQUIRED) \
    X(ModuleGetFunction,            GPU_REQUIRED) \
    X(ModuleLaunchKernel,           GPU_REQUIRED) \
    X(MallocAsync,                  GPU_OPT_ASYNC) \
    X(FreeAsync,                    GPU_OPT_ASYNC) \
    X(HostRegister,                 GPU_OPT_MEMOPS) \
    X(HostUnregister,               GPU_OPT_MEMOPS) \
    X(HostGetDevicePointer,         GPU_OPT_MEMOPS) \
    X(StreamWaitValue64,            GPU_OPT_MEMOPS) \
    X(StreamWriteValue64,           GPU_OPT_MEMOPS) \
    X(GraphCreate,                  GPU_OPT_GRAPH) \
    X(GraphAddKernelNode,           GPU_OPT_GRAPH) \
    X(GraphInstantiateWithFlags,    GPU_OPT_GRAPH) \
    X(GraphLaunch,                  GPU_OPT_GRAPH) \
    X(GraphExecKernelNodeSetParams, GPU_OPT_GRAPH) \
    X(GraphExecDestroy,             GPU_OPT_GRAPH) \
    X(GraphDestroy,                 GPU_OPT_GRAPH)

struct hip_runtime {
    int version;                                /* hipRuntimeGetVersion */
#define HIP_FIELD(name, group) __typeof__(&hip##name) name;
    HIP_ENTRY_POINTS(HIP_FIELD)
#undef HIP_FIELD
};

extern struct hip_runtime hip_rt HIP_HIDDEN;

/* runtime.c */
/* The table's load (gpu_common/load.c): dlopen, the entry points, hipInit. */
int  hip_runtime_load(void);
const char *hip_err_name(hipError_t r);
/* "hipErrorX (text)", or just the name when the runtime's text is the
 * name again (ROCm 5.2 answers hipGetErrorString with the name). */
const char *hip_err_desc(hipError_t r, char *buf, size_t n);
void hip_version_str(int v, char *buf, size_t n);

/* device.c: the table's device hooks (gpu_common/open.c) */
int  hip_attrs(struct devq_pl_device *d, struct gpu_attrs *a, int *cus);
int  hip_first_open(struct devq_pl_device *d);
void hip_last_close(struct devq_pl_device *d);

/* kernel.c */
bool hip_kernel_is_binary(const void *image, size_t size);

#endif
