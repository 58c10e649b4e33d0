/* Devices: primary context per ordinal, capabilities, and device loss. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cuda_plugin.h"

void cu_mark_lost(struct devq_pl_device *dev, const char *call, CUresult r)
{
    pthread_mutex_lock(&dev->lost_mu);
    if (!atomic_load(&dev->lost)) {
        snprintf(dev->lost_cause, sizeof dev->lost_cause, "%s: %s (%s)", call, cu_err_name(r),
                 cu_err_text(r));
        atomic_store_explicit(&dev->lost, true, memory_order_release);
        cu_host->log(DEVQ_LOG_BASIC, "cuda:%u: device lost: %s", dev->ordinal, dev->lost_cause);
    }
    pthread_mutex_unlock(&dev->lost_mu);
}

int cu_fail(struct devq_pl_device *dev, const char *call, CUresult r)
{
    if (cu_sticky(r)) {
        cu_mark_lost(dev, call, r);
        return cu_host->error(-EIO, "cuda: %s: %s (%s): device %u lost", call, cu_err_name(r),
                              cu_err_text(r), dev->ordinal);
    }
    return cu_host->error(cu_errno(r), "cuda: %s: %s (%s)", call, cu_err_name(r), cu_err_text(r));
}

int cu_enter(struct devq_pl_device *dev)
{
    if (atomic_load_explicit(&dev->lost, memory_order_acquire))
        return cu_host->error(-ENODEV, "cuda:%u: device lost: %s", dev->ordinal, dev->lost_cause);
    /* Cheap in the driver, and right even when the application switched
     * this thread to another context behind our back. */
    CUresult r = cu_drv.CtxSetCurrent(dev->ctx);
    return r == CUDA_SUCCESS ? 0 : cu_fail(dev, "cuCtxSetCurrent", r);
}

int cu_device_count(uint32_t *count)
{
    *count = 0;
    int err = cu_driver_load();
    if (err)
        return err;
    *count = cu_device_total();
    return 0;
}

static int attr(struct devq_pl_device *d, CUdevice_attribute a, int *out)
{
    *out = 0;
    CUresult r = cu_drv.DeviceGetAttribute(out, a, d->dev);
    return r == CUDA_SUCCESS ? 0 : cu_fail(d, "cuDeviceGetAttribute", r);
}

/* Read what the device can do; the context is current. */
static int probe(struct devq_pl_device *d)
{
    CUresult r = cu_drv.DeviceGetName(d->name, sizeof d->name, d->dev);
    if (r != CUDA_SUCCESS)
        return cu_fail(d, "cuDeviceGetName", r);
    size_t total = 0;
    if ((r = cu_drv.DeviceTotalMem(&total, d->dev)) != CUDA_SUCCESS)
        return cu_fail(d, "cuDeviceTotalMem", r);
    d->total_memory = total;
    if ((r = cu_drv.CtxGetStreamPriorityRange(&d->prio_least, &d->prio_greatest)) != CUDA_SUCCESS)
        return cu_fail(d, "cuCtxGetStreamPriorityRange", r);

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
    d->caps = DEVQ_CAP_KERNELS | DEVQ_CAP_TIMING;
    if (d->prio_greatest < d->prio_least)
        d->caps |= DEVQ_CAP_PRIORITIES;
    if (engines > 0)
        d->caps |= DEVQ_CAP_COPY_ENGINE;
    if (pools)
        d->caps |= DEVQ_CAP_ASYNC_ALLOC;
    if (memops && maphost)
        d->caps |= DEVQ_CAP_WAIT_VALUE | DEVQ_CAP_WRITE_VALUE;
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
            err = cu_fail(d, "cuDevicePrimaryCtxRetain", r);
        } else {
            d->ctx = ctx;
            r = cu_drv.CtxSetCurrent(ctx);
            err = r != CUDA_SUCCESS ? cu_fail(d, "cuCtxSetCurrent", r) : probe(d);
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
        cu_waiters_release(d);
        cu_drv.DevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
        /* The last release destroys the primary context, and with it a
         * sticky error: the next open starts clean. */
        pthread_mutex_lock(&d->lost_mu);
        atomic_store(&d->lost, false);
        d->lost_cause[0] = '\0';
        pthread_mutex_unlock(&d->lost_mu);
    }
    pthread_mutex_unlock(&d->mu);
}

int cu_device_info(devq_pl_device *d, devq_device_info *info)
{
    snprintf(info->name, sizeof info->name, "%s", d->name);
    info->total_memory = d->total_memory;
    info->caps = d->caps;
    info->compute_units = d->compute_units;
    return 0;
}
