/* SPDX-License-Identifier: MIT */
/* Devices: selection with hipSetDevice, capabilities, and device loss. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hip_plugin.h"

int hip_device_count(uint32_t *count)
{
    return gpu_device_count(count, hip_runtime_load, hip_device_total);
}

static int attr(struct devq_pl_device *d, hipDeviceAttribute_t a, const char *what, int *out)
{
    *out = 0;
    hipError_t r = hip_rt.DeviceGetAttribute(out, a, (int)d->ordinal);
    if (r == hipSuccess)
        return 0;
    char call[96];
    snprintf(call, sizeof call, "hipDeviceGetAttribute(%s)", what);
    return gpu_drv_fail(d, call, r);
}

/* Read what the device can do; the device is current. */
static int probe(struct devq_pl_device *d)
{
    hipError_t r = hip_rt.DeviceGetName(d->name, sizeof d->name, d->dev);
    if (r != hipSuccess)
        return gpu_drv_fail(d, "hipDeviceGetName", r);
    size_t total = 0;
    if ((r = hip_rt.DeviceTotalMem(&total, d->dev)) != hipSuccess)
        return gpu_drv_fail(d, "hipDeviceTotalMem", r);
    d->total_memory = total;
    if ((r = hip_rt.DeviceGetStreamPriorityRange(&d->prio_least, &d->prio_greatest)) != hipSuccess)
        return gpu_drv_fail(d, "hipDeviceGetStreamPriorityRange", r);

    int cus, engines = 0, pools = 0, waitvalue = 0, maphost = 0, err;
    if ((err = attr(d, hipDeviceAttributeMultiprocessorCount, "MultiprocessorCount", &cus)) ||
        (err = attr(d, hipDeviceAttributeCanMapHostMemory, "CanMapHostMemory", &maphost)))
        return err;
    /* "Cuda only" in the 5.2 headers: ROCm answers 0 or an error, and a
     * missing answer only costs DEVQ_CAP_COPY_ENGINE. */
    if (hip_rt.DeviceGetAttribute(&engines, hipDeviceAttributeAsyncEngineCount, (int)d->ordinal) != hipSuccess)
        engines = 0;
    if (hip_rt.MallocAsync &&
        (err = attr(d, hipDeviceAttributeMemoryPoolsSupported, "MemoryPoolsSupported", &pools)))
        return err;
    if (hip_rt.StreamWaitValue64 &&
        (err = attr(d, hipDeviceAttributeCanUseStreamWaitValue, "CanUseStreamWaitValue", &waitvalue)))
        return err;

    d->compute_units = (uint32_t)cus;
    /* One attribute covers hipStreamWaitValue64 and
     * hipStreamWriteValue64; both need the word mapped for the device. */
    d->caps = gpu_caps(&(struct gpu_attrs){ .prio_least = d->prio_least,
                                            .prio_greatest = d->prio_greatest,
                                            .copy_engines = engines, .pools = pools,
                                            .value_ops = waitvalue, .map_host = maphost });
    hip_host->log(DEVQ_LOG_FULL, "hip:%u: %s, %u CUs, %d copy engines, pools %d, stream wait value %d",
                  d->ordinal, d->name, d->compute_units, engines, pools, waitvalue);
    return 0;
}

int hip_device_open(uint32_t ordinal, devq_pl_device **out)
{
    int err = hip_runtime_load();
    if (err)
        return err;
    struct devq_pl_device *d = hip_device_get(ordinal);
    if (!d)
        return hip_host->error(-ENODEV, "hip: no device %u (this runtime has %u)", ordinal,
                               hip_device_total());
    pthread_mutex_lock(&d->mu);
    if (d->refs == 0) {
        hipError_t r = hip_rt.SetDevice((int)ordinal);
        err = r != hipSuccess ? gpu_drv_fail(d, "hipSetDevice", r) : probe(d);
    }
    if (!err)
        d->refs++;
    pthread_mutex_unlock(&d->mu);
    if (!err)
        *out = d;
    return err;
}

void hip_device_close(devq_pl_device *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->refs > 0 && --d->refs == 0) {
        bool lost = gpu_lost(&d->loss);
        gpu_evwait_release(&d->waits, lost);  /* the reset below destroys the busy ones */
        /* A device lost to a sticky error stays broken for the whole
         * process until it is reset.  lib has freed everything of ours,
         * so reset it then, and the next open starts clean.  A healthy
         * device is left alone: the application may share it. */
        if (lost) {
            hip_rt.SetDevice((int)d->ordinal);
            hipError_t r = hip_rt.DeviceReset();
            char desc[160];
            if (r != hipSuccess) {
                /* Still lost: every op keeps saying why. */
                hip_host->log(DEVQ_LOG_BASIC, "hip:%u: hipDeviceReset after loss: %s", d->ordinal,
                              hip_err_desc(r, desc, sizeof desc));
            } else {
                gpu_loss_clear(&d->loss);
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
}

int hip_device_info(devq_pl_device *d, devq_device_info *info)
{
    gpu_device_info(info, d->name, d->total_memory, d->compute_units, d->caps);
    return 0;
}
