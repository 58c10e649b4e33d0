/* SPDX-License-Identifier: MIT */
/* Kernels: code objects (an AMDGPU ELF, or a clang offload bundle)
 * through hipModuleLoadData, launched with hipModuleLaunchKernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hip_plugin.h"

struct devq_pl_kernel {
    struct devq_pl_device *dev;
    hipModule_t   module;
    hipFunction_t function;
};

/* Binary images are passed as they are.  Anything else is taken for
 * text (the emulator's modules) and given a terminating NUL, which a
 * size-delimited image may lack. */
static bool is_binary(const void *image, size_t size)
{
    static const unsigned char elf[4] = { 0x7f, 'E', 'L', 'F' };
    static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
    return (size >= 4 && memcmp(image, elf, 4) == 0) ||
           (size >= sizeof bundle - 1 && memcmp(image, bundle, sizeof bundle - 1) == 0);
}

int hip_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                    devq_pl_kernel **out)
{
    if (!image || !size || !entry)
        return hip_host->error(-EINVAL, "hip: kernel_load: need an image and an entry name");
    int err = gpu_enter(dev);
    if (err)
        return err;
    char *text = NULL;
    if (!is_binary(image, size)) {
        if (!(text = malloc(size + 1)))
            return hip_host->error(-ENOMEM, "hip: out of memory for a %zu-byte image", size);
        memcpy(text, image, size);
        text[size] = '\0';
    }
    struct devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        free(text);
        return hip_host->error(-ENOMEM, "hip: out of memory for a kernel");
    }
    k->dev = dev;
    hipError_t r = hip_rt.ModuleLoadData(&k->module, text ? text : image);
    free(text);
    if (r != hipSuccess) {
        free(k);
        return gpu_drv_fail(dev, "hipModuleLoadData", r);
    }
    r = hip_rt.ModuleGetFunction(&k->function, k->module, entry);
    if (r != hipSuccess) {
        hip_rt.ModuleUnload(k->module);
        free(k);
        if (hip_sticky(r))
            return gpu_drv_fail(dev, "hipModuleGetFunction", r);
        char d[160];
        return hip_host->error(hip_errno(r), "hip: hipModuleGetFunction '%s': %s", entry,
                               hip_err_desc(r, d, sizeof d));
    }
    *out = k;
    return 0;
}

void hip_kernel_destroy(devq_pl_kernel *k)
{
    if (!k)
        return;
    hip_rt.SetDevice((int)k->dev->ordinal);
    hip_rt.ModuleUnload(k->module);
    free(k);
}

int hip_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
               const struct devq_pl_arg *args, size_t nargs)
{
    int err = gpu_enter(s->dev);
    if (err)
        return err;
    struct gpu_launch g;
    if ((err = gpu_launch_prepare(&g, l, args, nargs)))
        return err;
    hipError_t r = hip_rt.ModuleLaunchKernel(k->function, g.grid[0], g.grid[1], g.grid[2], g.block[0],
                                             g.block[1], g.block[2], l->shared_bytes, s->stream,
                                             g.params, NULL);
    gpu_launch_release(&g);
    return r == hipSuccess ? 0 : gpu_drv_fail(s->dev, "hipModuleLaunchKernel", r);
}
