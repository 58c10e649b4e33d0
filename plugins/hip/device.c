/* SPDX-License-Identifier: MIT */
/* Devices: selected with hipSetDevice, reset at the last close after a
 * loss, and the attributes their capabilities come from.  Opening,
 * probing and closing are gpu_common's (open.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hip_plugin.h"

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

int hip_attrs(struct devq_pl_device *d, struct gpu_attrs *a, int *cus)
{
    int err;
    if ((err = attr(d, hipDeviceAttributeMultiprocessorCount, "MultiprocessorCount", cus)) ||
        (err = attr(d, hipDeviceAttributeCanMapHostMemory, "CanMapHostMemory", &a->map_host)))
        return err;
    /* "Cuda only" in the 5.2 headers: ROCm answers 0 or an error, and a
     * missing answer only costs DEVQ_CAP_COPY_ENGINE. */
    if (hip_rt.DeviceGetAttribute(&a->copy_engines, hipDeviceAttributeAsyncEngineCount, (int)d->ordinal) !=
        hipSuccess)
        a->copy_engines = 0;
    if (hip_rt.MallocAsync &&
        (err = attr(d, hipDeviceAttributeMemoryPoolsSupported, "MemoryPoolsSupported", &a->pools)))
        return err;
    /* One attribute covers hipStreamWaitValue64 and
     * hipStreamWriteValue64; both need the word mapped for the device. */
    if (hip_rt.StreamWaitValue64 &&
        (err = attr(d, hipDeviceAttributeCanUseStreamWaitValue, "CanUseStreamWaitValue", &a->value_ops)))
        return err;
    return 0;
}

int hip_first_open(struct devq_pl_device *d)
{
    hipError_t r = hip_rt.SetDevice((int)d->ordinal);
    return r == hipSuccess ? 0 : gpu_drv_fail(d, "hipSetDevice", r);
}

void hip_last_close(struct devq_pl_device *d)
{
    bool lost = gpu_lost(&d->loss);
    gpu_evwait_release(&d->waits, lost); /* the reset below destroys the busy ones */
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
            gpu_host->log(DEVQ_LOG_BASIC, "hip:%u: hipDeviceReset after loss: %s", d->ordinal,
                          hip_err_desc(r, desc, sizeof desc));
        } else {
            gpu_loss_clear(&d->loss);
        }
    }
}
