/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq-cuda.so internals: the driver's entry points, and what only cuda
 * has (primary contexts, kernel parameter info).  Streams, events, memory
 * and values are gpu_common's, over the table in calls.c.  See devq-cuda(7). */
#ifndef DEVQ_CUDA_PLUGIN_H
#define DEVQ_CUDA_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "cuda_decls.h"    /* our own CUDA declarations: no toolkit needed */
#include <devq/devq_plugin.h>
#include "../gpu_common/driver.h"

#define CU_HIDDEN __attribute__((visibility("hidden")))

/* The entry points resolved with cuGetProcAddress, each named once:
 * X(name, abi, group, newer) is the field cu_drv.name, of type
 * PFN_cu<name>_v<abi>, looked up as "cu<name>" at ABI version abi, or at
 * newer (same signature) when the driver has it (0: no newer one);
 * group is enum gpu_entry_group. */
#define CU_ENTRY_POINTS(X) \
    X(DeviceGetCount,            2000,  GPU_REQUIRED,   0) \
    X(DeviceGet,                 2000,  GPU_REQUIRED,   0) \
    X(DeviceGetName,             2000,  GPU_REQUIRED,   0) \
    X(DeviceTotalMem,            3020,  GPU_REQUIRED,   0) \
    X(DeviceGetAttribute,        2000,  GPU_REQUIRED,   0) \
    X(DevicePrimaryCtxRetain,    7000,  GPU_REQUIRED,   0) \
    X(DevicePrimaryCtxRelease,   11000, GPU_REQUIRED,   0) \
    X(CtxSetCurrent,             4000,  GPU_REQUIRED,   0) \
    X(CtxGetStreamPriorityRange, 5050,  GPU_REQUIRED,   0) \
    X(StreamCreateWithPriority,  5050,  GPU_REQUIRED,   0) \
    X(StreamDestroy,             4000,  GPU_REQUIRED,   0) \
    X(StreamWaitEvent,           3020,  GPU_REQUIRED,   0) \
    X(StreamAddCallback,         5000,  GPU_REQUIRED,   0) \
    X(EventCreate,               2000,  GPU_REQUIRED,   0) \
    X(EventDestroy,              4000,  GPU_REQUIRED,   0) \
    X(EventRecord,               2000,  GPU_REQUIRED,   0) \
    X(EventQuery,                2000,  GPU_REQUIRED,   0) \
    X(EventElapsedTime,          2000,  GPU_REQUIRED,   12080) \
    X(MemAlloc,                  3020,  GPU_REQUIRED,   0) \
    X(MemFree,                   3020,  GPU_REQUIRED,   0) \
    X(MemcpyHtoDAsync,           3020,  GPU_REQUIRED,   0) \
    X(MemcpyDtoHAsync,           3020,  GPU_REQUIRED,   0) \
    X(MemcpyDtoDAsync,           3020,  GPU_REQUIRED,   0) \
    X(MemsetD8Async,             3020,  GPU_REQUIRED,   0) \
    X(ModuleLoadData,            2000,  GPU_REQUIRED,   0) \
    X(ModuleUnload,              2000,  GPU_REQUIRED,   0) \
    X(ModuleGetFunction,         2000,  GPU_REQUIRED,   0) \
    X(LaunchKernel,              4000,  GPU_REQUIRED,   0) \
    X(MemAllocAsync,             11020, GPU_OPT_ASYNC,  0) \
    X(MemFreeAsync,              11020, GPU_OPT_ASYNC,  0) \
    X(MemHostRegister,           6050,  GPU_OPT_MEMOPS, 0) \
    X(MemHostUnregister,         4000,  GPU_OPT_MEMOPS, 0) \
    X(MemHostGetDevicePointer,   3020,  GPU_OPT_MEMOPS, 0) \
    X(StreamWaitValue64,         9000,  GPU_OPT_MEMOPS, 11070) \
    X(StreamWriteValue64,        9000,  GPU_OPT_MEMOPS, 11070) \
    X(FuncGetParamInfo,          12040, GPU_OPT_PARAMS, 0) \
    X(GraphCreate,               10000, GPU_OPT_GRAPH,  0) \
    X(GraphAddKernelNode,        12000, GPU_OPT_GRAPH,  0) \
    X(GraphInstantiateWithFlags, 11040, GPU_OPT_GRAPH,  0) \
    X(GraphLaunch,               10000, GPU_OPT_GRAPH,  0) \
    X(GraphExecKernelNodeSetParams, 12000, GPU_OPT_GRAPH, 0) \
    X(GraphExecDestroy,          10000, GPU_OPT_GRAPH,  0) \
    X(GraphDestroy,              10000, GPU_OPT_GRAPH,  0)

struct cu_driver {
    int version;                               /* cuDriverGetVersion */
    bool memops_v2;                            /* stream memops from CUDA 11.7 */
    /* dlsym'd at load, usable before cuInit: not in the list */
    PFN_cuGetErrorName_v6000 GetErrorName;
    PFN_cuGetErrorString_v6000 GetErrorString;
#define CU_FIELD(name, abi, group, newer) PFN_cu##name##_v##abi name;
    CU_ENTRY_POINTS(CU_FIELD)
#undef CU_FIELD
};

extern struct cu_driver cu_drv CU_HIDDEN;

/* driver.c */
/* The table's load (gpu_common/load.c): dlopen, cuInit, the entry points. */
int  cu_driver_load(void);
void cu_driver_fini(void);
const char *cu_err_name(CUresult r);
const char *cu_err_text(CUresult r);
/* "NAME (text)" in buf. */
const char *cu_err_desc(CUresult r, char *buf, size_t n);

/* device.c: the table's device hooks (gpu_common/open.c) */
int  cu_attrs(struct devq_pl_device *d, struct gpu_attrs *a, int *sms);
int  cu_first_open(struct devq_pl_device *d);
void cu_undo_open(struct devq_pl_device *d);
void cu_last_close(struct devq_pl_device *d);

/* kernel.c */
int  cu_kernel_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *out);
void cu_kernel_read_params(struct devq_pl_kernel *k, const char *entry);
bool cu_kernel_is_binary(const void *image, size_t size);

#endif
