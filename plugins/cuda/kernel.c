/* Kernels: PTX or cubin through cuModuleLoadData, launched with
 * cuLaunchKernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_plugin.h"

struct devq_pl_kernel {
    struct devq_pl_device *dev;
    CUmodule   module;
    CUfunction function;
};

/* PTX is text that must end in a NUL, which a size-delimited image may
 * lack; binary images (cubin ELF, fatbin) are passed as they are. */
static bool is_binary(const void *image, size_t size)
{
    const unsigned char *p = image;
    static const unsigned char elf[4] = { 0x7f, 'E', 'L', 'F' };
    static const unsigned char fatbin[4] = { 0x50, 0xed, 0x55, 0xba };
    return size >= 4 && (memcmp(p, elf, 4) == 0 || memcmp(p, fatbin, 4) == 0);
}

int cu_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                   devq_pl_kernel **out)
{
    if (!image || !size || !entry)
        return cu_host->error(-EINVAL, "cuda: kernel_load: need an image and an entry name");
    int err = cu_enter(dev);
    if (err)
        return err;
    char *text = NULL;
    if (!is_binary(image, size)) {
        if (!(text = malloc(size + 1)))
            return cu_host->error(-ENOMEM, "cuda: out of memory for a %zu-byte PTX image", size);
        memcpy(text, image, size);
        text[size] = '\0';
    }
    struct devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        free(text);
        return cu_host->error(-ENOMEM, "cuda: out of memory for a kernel");
    }
    k->dev = dev;
    CUresult r = cu_drv.ModuleLoadData(&k->module, text ? text : image);
    free(text);
    if (r != CUDA_SUCCESS) {
        free(k);
        return cu_fail(dev, "cuModuleLoadData", r);
    }
    r = cu_drv.ModuleGetFunction(&k->function, k->module, entry);
    if (r != CUDA_SUCCESS) {
        cu_drv.ModuleUnload(k->module);
        free(k);
        if (cu_sticky(r))
            return cu_fail(dev, "cuModuleGetFunction", r);
        return cu_host->error(cu_errno(r), "cuda: cuModuleGetFunction '%s': %s (%s)", entry,
                              cu_err_name(r), cu_err_text(r));
    }
    *out = k;
    return 0;
}

void cu_kernel_destroy(devq_pl_kernel *k)
{
    if (!k)
        return;
    cu_drv.CtxSetCurrent(k->dev->ctx);
    cu_drv.ModuleUnload(k->module);
    free(k);
}

int cu_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
              const struct devq_pl_arg *args, size_t nargs)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    unsigned grid[3], block[3];
    for (int d = 0; d < 3; d++) {
        if (l->local[d] == 0 || l->global[d] == 0)
            return cu_host->error(-EINVAL,
                "cuda: launch: global and local sizes must be > 0 (dimension %d: %u/%u)",
                d, l->global[d], l->local[d]);
        block[d] = l->local[d];
        grid[d] = l->global[d] / l->local[d] + (l->global[d] % l->local[d] != 0);
    }
    /* kernelParams[i] points at argument i's value: the device pointer
     * for buffers, lib's bytes for values.  The driver copies them. */
    void *params_small[16];
    CUdeviceptr ptrs_small[16];
    void **params = params_small;
    CUdeviceptr *ptrs = ptrs_small;
    if (nargs > 16) {
        params = malloc(nargs * sizeof *params);
        ptrs = malloc(nargs * sizeof *ptrs);
        if (!params || !ptrs) {
            free(params);
            free(ptrs);
            return cu_host->error(-ENOMEM, "cuda: launch: out of memory for %zu arguments", nargs);
        }
    }
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer) {
            ptrs[i] = (CUdeviceptr)(uintptr_t)args[i].device_ptr;
            params[i] = &ptrs[i];
        } else {
            params[i] = (void *)args[i].value;
        }
    }
    CUresult r = cu_drv.LaunchKernel(k->function, grid[0], grid[1], grid[2], block[0], block[1],
                                     block[2], l->shared_bytes, s->stream,
                                     nargs ? params : NULL, NULL);
    if (params != params_small) {
        free(params);
        free(ptrs);
    }
    return r == CUDA_SUCCESS ? 0 : cu_fail(s->dev, "cuLaunchKernel", r);
}
