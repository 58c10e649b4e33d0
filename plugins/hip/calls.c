/* SPDX-License-Identifier: MIT */
/* The hip plugin's table of runtime calls (gpu_common/driver.h): each
 * entry one HIP runtime call, with HIP's handle types.  The adapters that
 * are the same call in CUDA are gpu_common/calls.h's. */
#define _GNU_SOURCE
#include "hip_plugin.h"

#define GPU_PICK(cuda, hip) hip
#define GPU_DRV hip_rt
#define GPU_DPTR(p) ((void *)(p)) /* a device pointer is one */
typedef void *gpu_dptr_t;
#include "../gpu_common/calls.h"

/* HIP: lower number runs first, 0 normal; ROCm's range is 1 (low) to -1 (high). */
static long priority(const struct devq_pl_device *dev, int p)
{
    (void)dev;
    return -(long)p;
}

/* The current device is per thread and the application may switch it
 * behind our back; hipSetDevice is a thread-local store. */
static int make_current(struct devq_pl_device *dev)
{
    return hip_rt.SetDevice((int)dev->ordinal);
}

/* HIP's >= compares (*word & mask): all bits. */
static int wait_value(void *stream, void *addr, uint64_t value)
{
    return hip_rt.StreamWaitValue64(stream, addr, value, hipStreamWaitValueGte, UINT64_MAX);
}

const struct gpu_driver gpu_drv = {
    GPU_DRIVER_WORDS,
    /* ROCm hands stream callbacks hipSuccess whatever happened before them. */
    .callback_status_unreliable = true,
    .work_desc = desc,
    .load = hip_runtime_load,
    .device_handle = device_handle,
    .first_open = hip_first_open,
    .last_close = hip_last_close,
    .attrs = hip_attrs,
    .is_binary = hip_kernel_is_binary,
    GPU_DRIVER_ADAPTERS,
};
