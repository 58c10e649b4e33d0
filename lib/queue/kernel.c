/* Kernels: a backend program entry point, kept alive by batches that
 * launch it. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "error.h"
#include "notifier.h"
#include "queue.h"

int devq__kernel_check(const devq_kernel *k, const char *fn)
{
    if (!k)
        return devq__err(-EINVAL, "%s: kernel is NULL", fn);
    if (k->magic != DEVQ_MAGIC_KERNEL)
        return devq__err(-EINVAL, "%s: %p is not a live kernel (destroyed?)", fn, (const void *)k);
    return 0;
}

static void kernel_free(devq_kernel *k)
{
    struct devq_device *dev = k->dev;
    dev->ops->kernel_destroy(k->pl);
    free(k);
    devq_device_close(dev);
}

static void kernel_free_cb(void *arg)
{
    kernel_free(arg);
}

/* From a batch, possibly inside a host callback: the backend may not be
 * called there, so the last reference hands the kernel to the notifier. */
void devq__kernel_release(devq_kernel *k)
{
    if (atomic_fetch_sub(&k->refs, 1) == 1 && devq__notifier_post(kernel_free_cb, k) < 0)
        kernel_free(k);
}

DEVQ_API int devq_kernel_load(devq_device *dev, const void *image, size_t size, const char *entry,
                              devq_kernel **out)
{
    const char *fn = "devq_kernel_load";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    if (!entry || !*entry)
        return devq__err(-EINVAL, "%s: entry point name is NULL or empty", fn);
    if (!dev->ops->kernel_load || !(dev->info.caps & DEVQ_CAP_KERNELS))
        return devq__err(-ENOTSUP, "%s: the %s backend cannot load kernels (no DEVQ_CAP_KERNELS)", fn,
                         dev->info.backend);
    if ((r = devq__device_lost_check(dev)) < 0)
        return r;
    devq_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    if ((r = dev->ops->kernel_load(dev->pl, image, size, entry, &k->pl)) < 0) {
        free(k);
        return r;
    }
    k->magic = DEVQ_MAGIC_KERNEL;
    atomic_init(&k->refs, 1);
    k->dev = dev;
    snprintf(k->name, sizeof k->name, "%s", entry);
    devq__device_retain(dev);
    *out = k;
    return 0;
}

DEVQ_API void devq_kernel_destroy(devq_kernel *k)
{
    if (devq__kernel_check(k, "devq_kernel_destroy") < 0)
        return;
    k->magic = DEVQ_MAGIC_DEAD;   /* no new launches; batches in flight keep it */
    if (atomic_fetch_sub(&k->refs, 1) == 1)
        kernel_free(k);
}
