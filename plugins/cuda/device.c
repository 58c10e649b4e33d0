/* SPDX-License-Identifier: MIT */
/* Devices: primary context per ordinal, capabilities, and device loss. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cuda_plugin.h"

int cu_device_count(uint32_t *count)
{
    return gpu_device_count(count, cu_driver_load, cu_device_total);
}

static int attr(struct devq_pl_device *d, CUdevice_attribute a, int *out)
{
    *out = 0;
    CUresult r = cu_drv.DeviceGetAttribute(out, a, d->dev);
    return r == CUDA_SUCCESS ? 0 : gpu_drv_fail(d, "cuDeviceGetAttribute", r);
}

/* Read what the device can do; the context is current. */
static int probe(struct devq_pl_device *d)
{
    CUresult r = cu_drv.DeviceGetName(d->name, sizeof d->name, d->dev);
    if (r != CUDA_SUCCESS)
        return gpu_drv_fail(d, "cuDeviceGetName", r);
    size_t total = 0;
    if ((r = cu_drv.DeviceTotalMem(&total, d->dev)) != CUDA_SUCCESS)
        return gpu_drv_fail(d, "cuDeviceTotalMem", r);
    d->total_memory = total;
    if ((r = cu_drv.CtxGetStreamPriorityRange(&d->prio_least, &d->prio_greatest)) != CUDA_SUCCESS)
        return gpu_drv_fail(d, "cuCtxGetStreamPriorityRange", r);

    int sms, engines, pools = 0, memops = 0, maphost = 0, err;
    if ((err = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms)) ||
        (err = attr(d, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, &engines)) ||
        (err = attr(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, &maphost)))
        return err;
    if (cu_drv.MemAllocAsync && (err = attr(d, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &pools)))
        return err;
    /* 64-bit waits/writes: the core attribute from 11.7, the opt-in V1
     * attribute before. */
    if (cu_drv.StreamWaitValue64 &&
        (err = attr(d, cu_drv.memops_v2 ? CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
                                        : CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
                    &memops)))
        return err;

    d->compute_units = (uint32_t)sms;
    d->caps = gpu_caps(&(struct gpu_attrs){ .prio_least = d->prio_least,
                                            .prio_greatest = d->prio_greatest,
                                            .copy_engines = engines, .pools = pools,
                                            .value_ops = memops, .map_host = maphost,
                                            .param_info = cu_drv.FuncGetParamInfo != NULL });
    cu_host->log(DEVQ_LOG_FULL, "cuda:%u: %s, %u SMs, %d copy engines, pools %d, memops %d",
                 d->ordinal, d->name, d->compute_units, engines, pools, memops);
    return 0;
}

int cu_device_open(uint32_t ordinal, devq_pl_device **out)
{
    int err = cu_driver_load();
    if (err)
        return err;
    struct devq_pl_device *d = cu_device_get(ordinal);
    if (!d)
        return cu_host->error(-ENODEV, "cuda: no device %u (this driver has %u)", ordinal,
                              cu_device_total());
    pthread_mutex_lock(&d->mu);
    if (d->refs == 0) {
        CUcontext ctx = NULL;
        CUresult r = cu_drv.DevicePrimaryCtxRetain(&ctx, d->dev);
        if (r != CUDA_SUCCESS) {
            err = gpu_drv_fail(d, "cuDevicePrimaryCtxRetain", r);
        } else {
            d->ctx = ctx;
            r = cu_drv.CtxSetCurrent(ctx);
            err = r != CUDA_SUCCESS ? gpu_drv_fail(d, "cuCtxSetCurrent", r) : probe(d);
            if (err) {
                cu_drv.DevicePrimaryCtxRelease(d->dev);
                d->ctx = NULL;
            }
        }
    }
    if (!err)
        d->refs++;
    pthread_mutex_unlock(&d->mu);
    if (!err)
        *out = d;
    return err;
}

void cu_device_close(devq_pl_device *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->refs > 0 && --d->refs == 0) {
        gpu_evwait_release(&d->waits, true);
        cu_drv.DevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
        /* The last release destroys the primary context, and with it a
         * sticky error: the next open starts clean. */
        gpu_loss_clear(&d->loss);
    }
    pthread_mutex_unlock(&d->mu);
}

int cu_device_info(devq_pl_device *d, devq_device_info *info)
{
    gpu_device_info(info, d->name, d->total_memory, d->compute_units, d->caps);
    return 0;
}
