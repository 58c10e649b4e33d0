/* SPDX-License-Identifier: MIT */
/* Kernels: a backend program entry point (or, on cpu, a host function
 * given by pointer), kept alive by batches that launch it. */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq_cpu.h>
#include "error.h"
#include "fork.h"
#include "kernel.h"
#include "kernel_args.h"
#include "notifier.h"

int devq__kernel_check(const devq_kernel *k, const char *fn)
{
    if (!k)
        return devq__err(-EINVAL, "%s: kernel is NULL", fn);
    if (k->obj.magic != DEVQ_MAGIC_KERNEL)
        return devq__err(-EINVAL, "%s: %p is not a live kernel (destroyed?)", fn, (const void *)k);
    if (__builtin_expect(k->dev->fork_gen != devq__fork_gen(), 0))
        return devq__forked_err(fn, devq__kernel_label(k).s, k->dev->pid);
    return 0;
}

/* The last reference: calls the backend, so a batch's release hands it
 * to the notifier (object.h). */
static void kernel_destroy(struct devq_object *o)
{
    devq_kernel *k = (devq_kernel *)o;
    struct devq_device *dev = k->dev;
    dev->ops->kernel_destroy(k->pl);
    free((void *)k->iface.params);
    free(k);
    devq_device_close(dev);
}

static int kernel_publish(struct devq_device *dev, devq_kernel *k, const char *name, const char *fn,
                          devq_kernel **out);

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
    return kernel_publish(dev, k, entry, fn, out);
}

/* The end of both loads: k->pl is loaded; read its interface and hand it
 * out with the same references and lifetime. */
static int kernel_publish(struct devq_device *dev, devq_kernel *k, const char *name, const char *fn,
                          devq_kernel **out)
{
    k->dev = dev;
    snprintf(k->name, sizeof k->name, "%s", name);
    int r = devq__kernel_iface_load(k, fn);
    if (r < 0) {
        dev->ops->kernel_destroy(k->pl);
        free(k);
        return r;
    }
    devq__object_init(&k->obj, DEVQ_MAGIC_KERNEL, kernel_destroy);
    k->label_name.number = devq__name_number(DEVQ_NAME_KERNEL);
    devq__device_retain(dev);
    *out = k;
    return 0;
}

/* NULL name: the function's own symbol when the dynamic symbol table has
 * it, else its address, so that messages still tell kernels apart. */
static void generated_name(devq_cpu_kernel_fn kfn, char *out, size_t cap)
{
    void *sym;
    memcpy(&sym, &kfn, sizeof sym);
    Dl_info at;
    if (dladdr(sym, &at) && at.dli_sname && at.dli_saddr == sym)
        snprintf(out, cap, "%s", at.dli_sname);
    else
        snprintf(out, cap, "fn@%p", sym);
}

DEVQ_API int devq_kernel_load_fn(devq_device *dev, devq_cpu_kernel_fn kfn, const devq_cpu_signature *sig,
                                 const char *name, devq_kernel **out)
{
    const char *fn = "devq_kernel_load_fn";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    if (!kfn)
        return devq__err(-EINVAL, "%s: kernel function is NULL", fn);
    if (name && !*name)
        return devq__err(-EINVAL, "%s: name is empty; pass NULL for a generated name", fn);
    if (!dev->ops->kernel_load_fn || !(dev->info.caps & DEVQ_CAP_KERNELS))
        return devq__err(-ENOTSUP,
                         "%s: the %s backend cannot run a host function as a kernel "
                         "(cpu only); load a kernel image with devq_kernel_load",
                         fn, dev->info.backend);
    if ((r = devq__device_lost_check(dev)) < 0)
        return r;
    char shown[64];
    if (!name) {
        generated_name(kfn, shown, sizeof shown);
        name = shown;
    }
    devq_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    if ((r = dev->ops->kernel_load_fn(dev->pl, kfn, sig, name, &k->pl)) < 0) {
        free(k);
        return r;
    }
    return kernel_publish(dev, k, name, fn, out);
}

struct devq_label devq__kernel_label(const devq_kernel *k)
{
    char detail[80];
    snprintf(detail, sizeof detail, "entry %s", k->name);
    return devq__name_label(&k->label_name, DEVQ_NAME_KERNEL, detail);
}

void devq__kernel_slice_name(const devq_kernel *k, char *out, size_t cap)
{
    devq__name_get(&k->label_name, out, cap);
    if (!out[0])
        snprintf(out, cap, "%s", k->name);
}

DEVQ_API int devq_kernel_set_name(devq_kernel *k, const char *name)
{
    int r = devq__kernel_check(k, "devq_kernel_set_name");
    if (r < 0)
        return r;
    return devq__name_set(&k->label_name, DEVQ_NAME_KERNEL, "devq_kernel_set_name", name);
}

DEVQ_API void devq_kernel_destroy(devq_kernel *k)
{
    if (devq__kernel_check(k, "devq_kernel_destroy") < 0)
        return;
    k->obj.magic = DEVQ_MAGIC_DEAD; /* no new launches; batches in flight keep it */
    devq__object_release_here(&k->obj);
}
