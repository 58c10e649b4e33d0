/* SPDX-License-Identifier: MIT */
/* A failed driver call, reported through the plugin's table: its
 * description, errno and whether it loses the device; and the checks at
 * the top of every op. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

/* A cause fits the 256 bytes the loss keeps. */
#define DESC_MAX 256

void gpu_drv_mark_lost(struct devq_pl_device *dev, const char *call, int r)
{
    char d[DESC_MAX];
    gpu_loss_mark(&dev->loss, dev->ordinal, call, gpu_drv.desc(r, d, sizeof d));
}

int gpu_drv_fail(struct devq_pl_device *dev, const char *call, int r)
{
    char d[DESC_MAX];
    return gpu_fail(&dev->loss, dev->ordinal, call, gpu_drv.desc(r, d, sizeof d), gpu_drv.sticky(r),
                    gpu_drv.to_errno(r));
}

int gpu_drv_check(struct devq_pl_device *dev, const char *call, int r)
{
    return r == 0 ? 0 : gpu_drv_fail(dev, call, r);
}

void *gpu_zalloc(size_t size, const char *what)
{
    void *p = calloc(1, size);
    if (!p)
        gpu_host->error(-ENOMEM, "%s: out of memory for %s", gpu_backend, what);
    return p;
}

int gpu_enter(struct devq_pl_device *dev)
{
    if (gpu_lost(&dev->loss))
        return gpu_loss_error(&dev->loss, dev->ordinal, -ENODEV);
    /* Cheap in both drivers (a thread-local store), and right even when
     * the application switched this thread's context or device behind
     * our back. */
    int r = gpu_drv.make_current(dev);
    return gpu_drv_check(dev, gpu_drv.call.make_current, r);
}
