/* SPDX-License-Identifier: MIT */
/* The cuda plugin's table of driver calls (gpu_common/driver.h): each
 * entry one CUDA driver call, with CUDA's handle and pointer types.  The
 * adapters that are the same call in HIP are gpu_common/calls.h's. */
#define _GNU_SOURCE
#include <stdio.h>
#include "cuda_plugin.h"

static CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

#define GPU_PICK(cuda, hip) cuda
#define GPU_DRV cu_drv
#define GPU_DPTR(p) dptr(p)
typedef CUdeviceptr gpu_dptr_t;
#include "../gpu_common/calls.h"

static const char *work_desc(int r, char *buf, size_t n)
{
    snprintf(buf, n, "%s (%s, CUresult %d)", cu_err_name((CUresult)r), cu_err_text((CUresult)r), r);
    return buf;
}

/* CUDA: lower number runs first, from prio_least (normal) down to
 * prio_greatest. */
static long priority(const struct devq_pl_device *dev, int p)
{
    return (long)dev->prio_least - p;
}

static int make_current(struct devq_pl_device *dev)
{
    return cu_drv.CtxSetCurrent(dev->ctx);
}

static int wait_value(void *stream, void *addr, uint64_t value)
{
    return cu_drv.StreamWaitValue64(stream, dptr(addr), value, CU_STREAM_WAIT_VALUE_GEQ);
}

const struct gpu_driver gpu_drv = {
    GPU_DRIVER_WORDS,
    .work_desc = work_desc,
    .load = cu_driver_load,
    .device_handle = device_handle,
    .first_open = cu_first_open,
    .undo_open = cu_undo_open,
    .last_close = cu_last_close,
    .attrs = cu_attrs,
    .is_binary = cu_kernel_is_binary,
    .read_params = cu_kernel_read_params,
    GPU_DRIVER_ADAPTERS,
};
