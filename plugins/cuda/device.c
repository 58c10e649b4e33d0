/* SPDX-License-Identifier: MIT */
/* Devices: the primary context held while a device is open, and the
 * attributes its capabilities come from.  Opening, probing and closing
 * are gpu_common's (open.c). */
#define _GNU_SOURCE
#include <errno.h>
#include "cuda_plugin.h"

static int attr(struct devq_pl_device *d, CUdevice_attribute a, int *out)
{
    *out = 0;
    CUresult r = cu_drv.DeviceGetAttribute(out, a, d->dev);
    return r == CUDA_SUCCESS ? 0 : gpu_drv_fail(d, "cuDeviceGetAttribute", r);
}

int cu_attrs(struct devq_pl_device *d, struct gpu_attrs *a, int *sms)
{
    int err;
    if ((err = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms)) ||
        (err = attr(d, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, &a->copy_engines)) ||
        (err = attr(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, &a->map_host)))
        return err;
    if (cu_drv.MemAllocAsync && (err = attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &a->pools)))
        return err;
    /* 64-bit waits/writes: the core attribute from 11.7, the opt-in V1
     * attribute before. */
    if (cu_drv.StreamWaitValue64 &&
        (err = attr(d,
                    cu_drv.memops_v2 ? CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
                                     : CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
                    &a->value_ops)))
        return err;
    a->param_info = cu_drv.FuncGetParamInfo != NULL;
    return 0;
}

int cu_first_open(struct devq_pl_device *d)
{
    CUcontext ctx = NULL;
    CUresult r = cu_drv.DevicePrimaryCtxRetain(&ctx, d->dev);
    if (r != CUDA_SUCCESS)
        return gpu_drv_fail(d, "cuDevicePrimaryCtxRetain", r);
    d->ctx = ctx;
    r = cu_drv.CtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        int err = gpu_drv_fail(d, "cuCtxSetCurrent", r);
        cu_undo_open(d);
        return err;
    }
    return 0;
}

void cu_undo_open(struct devq_pl_device *d)
{
    cu_drv.DevicePrimaryCtxRelease(d->dev);
    d->ctx = NULL;
}

void cu_last_close(struct devq_pl_device *d)
{
    /* Each last release destroys the primary context, and with it the
     * helper streams, busy ones too: every release retires them. */
    gpu_evwait_release(&d->waits, true);
    cu_undo_open(d);
    /* The last release destroys the primary context, and with it a
     * sticky error: the next open starts clean. */
    gpu_loss_clear(&d->loss);
}
