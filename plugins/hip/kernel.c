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
    int err = hip_enter(dev);
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
        return hip_fail(dev, "hipModuleLoadData", r);
    }
    r = hip_rt.ModuleGetFunction(&k->function, k->module, entry);
    if (r != hipSuccess) {
        hip_rt.ModuleUnload(k->module);
        free(k);
        if (hip_sticky(r))
            return hip_fail(dev, "hipModuleGetFunction", r);
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
    int err = hip_enter(s->dev);
    if (err)
        return err;
    unsigned grid[3], block[3];
    for (int d = 0; d < 3; d++) {
        if (l->local[d] == 0 || l->global[d] == 0)
            return hip_host->error(-EINVAL,
                "hip: launch: global and local sizes must be > 0 (dimension %d: %u/%u)",
                d, l->global[d], l->local[d]);
        block[d] = l->local[d];
        grid[d] = l->global[d] / l->local[d] + (l->global[d] % l->local[d] != 0);
    }
    /* kernelParams[i] points at argument i's value: the device pointer
     * for buffers, lib's bytes for values.  The runtime copies them. */
    void *params_small[16];
    void *ptrs_small[16];
    void **params = params_small;
    void **ptrs = ptrs_small;
    if (nargs > 16) {
        params = malloc(nargs * sizeof *params);
        ptrs = malloc(nargs * sizeof *ptrs);
        if (!params || !ptrs) {
            free(params);
            free(ptrs);
            return hip_host->error(-ENOMEM, "hip: launch: out of memory for %zu arguments", nargs);
        }
    }
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer) {
            ptrs[i] = args[i].device_ptr;
            params[i] = &ptrs[i];
        } else {
            params[i] = (void *)args[i].value;
        }
    }
    hipError_t r = hip_rt.ModuleLaunchKernel(k->function, grid[0], grid[1], grid[2], block[0],
                                             block[1], block[2], l->shared_bytes, s->stream,
                                             nargs ? params : NULL, NULL);
    if (params != params_small) {
        free(params);
        free(ptrs);
    }
    return r == hipSuccess ? 0 : hip_fail(s->dev, "hipModuleLaunchKernel", r);
}
