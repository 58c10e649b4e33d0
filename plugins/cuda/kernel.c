/* SPDX-License-Identifier: MIT */
/* Kernels: PTX or cubin through cuModuleLoadData, launched with
 * cuLaunchKernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_plugin.h"

/* gpu_launch keeps a buffer's device pointer as a void *, which the
 * driver reads as the CUdeviceptr it is. */
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "CUdeviceptr is not pointer-sized");

struct devq_pl_kernel {
    struct devq_pl_device *dev;
    CUmodule   module;
    CUfunction function;
    bool       known;              /* params read with cuFuncGetParamInfo */
    uint32_t   nparams;
    struct devq_pl_param *params;
};

/* A parameter count no kernel reaches: CUDA's parameter space is 32 KiB
 * (4 KiB before 12.1), at least a byte per parameter. */
#define CU_MAX_PARAMS 4096u

/* Each parameter's offset and size, asked once at load (driver 12.4+):
 * devq_queue_exec checks launches against them (kernel_iface).  The
 * driver reports sizes only, not whether a parameter is a pointer, so
 * each is DEVQ_PL_PARAM_BYTES.  A driver error leaves the kernel
 * unchecked rather than failing a load that worked. */
static void read_params(struct devq_pl_kernel *k, const char *entry)
{
    if (!cu_drv.FuncGetParamInfo)
        return;
    uint32_t n = 0, cap = 0;
    struct devq_pl_param *p = NULL;
    for (;;) {
        size_t off = 0, size = 0;
        CUresult r = cu_drv.FuncGetParamInfo(k->function, n, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;                 /* past the last parameter */
        if (r != CUDA_SUCCESS || n == CU_MAX_PARAMS || size == 0 || size > 4096 || off > UINT32_MAX) {
            cu_host->log(DEVQ_LOG_BASIC, "cuda: cuFuncGetParamInfo '%s' parameter %u: %s (size "
                         "%zu): its launches are not checked", entry, n,
                         r ? cu_err_name(r) : "out of range", size);
            free(p);
            return;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            struct devq_pl_param *np = realloc(p, cap * sizeof *np);
            if (!np) {
                free(p);
                return;
            }
            p = np;
        }
        p[n++] = (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_BYTES, .size = (uint32_t)size,
                                         .offset = (uint32_t)off };
    }
    k->params = p;
    k->nparams = n;
    k->known = true;
}

int cu_kernel_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *out)
{
    if (!k->known)
        return -ENOTSUP;
    *out = (struct devq_pl_kernel_iface){ .flags = DEVQ_PL_IFACE_POSITIONAL, .nparams = k->nparams,
                                          .params = k->params };
    return 0;
}

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
    int err = gpu_enter(dev);
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
        return gpu_drv_fail(dev, "cuModuleLoadData", r);
    }
    r = cu_drv.ModuleGetFunction(&k->function, k->module, entry);
    if (r != CUDA_SUCCESS) {
        cu_drv.ModuleUnload(k->module);
        free(k);
        if (cu_sticky(r))
            return gpu_drv_fail(dev, "cuModuleGetFunction", r);
        return cu_host->error(cu_errno(r), "cuda: cuModuleGetFunction '%s': %s (%s)", entry,
                              cu_err_name(r), cu_err_text(r));
    }
    read_params(k, entry);
    *out = k;
    return 0;
}

void cu_kernel_destroy(devq_pl_kernel *k)
{
    if (!k)
        return;
    cu_drv.CtxSetCurrent(k->dev->ctx);
    cu_drv.ModuleUnload(k->module);
    free(k->params);
    free(k);
}

int cu_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
              const struct devq_pl_arg *args, size_t nargs)
{
    int err = gpu_enter(s->dev);
    if (err)
        return err;
    struct gpu_launch g;
    if ((err = gpu_launch_prepare(&g, l, args, nargs)))
        return err;
    CUresult r = cu_drv.LaunchKernel(k->function, g.grid[0], g.grid[1], g.grid[2], g.block[0],
                                     g.block[1], g.block[2], l->shared_bytes, s->stream, g.params,
                                     NULL);
    gpu_launch_release(&g);
    return r == CUDA_SUCCESS ? 0 : gpu_drv_fail(s->dev, "cuLaunchKernel", r);
}
