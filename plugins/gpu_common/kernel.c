/* SPDX-License-Identifier: MIT */
/* Kernels: a module loaded from the image, its entry function, and
 * launches with gpu_launch_prepare's geometry and arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

int gpu_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                    devq_pl_kernel **out)
{
    if (!image || !size || !entry)
        return gpu_host->error(-EINVAL, "%s: kernel_load: need an image and an entry name", gpu_backend);
    int err = gpu_enter(dev);
    if (err)
        return err;
    char *text = NULL;
    if (!gpu_drv.is_binary(image, size)) {
        if (!(text = malloc(size + 1)))
            return gpu_host->error(-ENOMEM, "%s: out of memory for a %zu-byte %s", gpu_backend, size,
                                   gpu_drv.text_image);
        memcpy(text, image, size);
        text[size] = '\0';
    }
    struct devq_pl_kernel *k = gpu_zalloc(sizeof *k, "a kernel");
    int r = k ? gpu_drv.module_load(&k->module, text ? text : image) : 0;
    free(text);
    if (!k)
        return -ENOMEM;
    k->dev = dev;
    if ((err = gpu_drv_check(dev, gpu_drv.call.module_load, r))) {
        free(k);
        return err;
    }
    r = gpu_drv.module_get_function(&k->function, k->module, entry);
    if (r) {
        gpu_drv.module_unload(k->module);
        free(k);
        if (gpu_drv.sticky(r))
            return gpu_drv_fail(dev, gpu_drv.call.module_get_function, r);
        char d[256];
        return gpu_host->error(gpu_drv.to_errno(r), "%s: %s '%s': %s", gpu_backend,
                               gpu_drv.call.module_get_function, entry, gpu_drv.desc(r, d, sizeof d));
    }
    if (gpu_drv.read_params)
        gpu_drv.read_params(k, entry);
    *out = k;
    return 0;
}

void gpu_kernel_destroy(devq_pl_kernel *k)
{
    if (!k)
        return;
    gpu_drv.make_current(k->dev);
    gpu_drv.module_unload(k->module);
    free(k->params);
    free(k);
}

int gpu_kernel_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                      const struct devq_pl_arg *args, size_t nargs)
{
    int err = gpu_enter(s->dev);
    if (err)
        return err;
    struct gpu_launch g;
    if ((err = gpu_launch_prepare(&g, l, args, nargs)))
        return err;
    int r = gpu_drv.launch(k->function, &g, l->shared_bytes, s->stream);
    gpu_launch_release(&g);
    return gpu_drv_check(s->dev, gpu_drv.call.launch, r);
}
