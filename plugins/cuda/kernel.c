/* SPDX-License-Identifier: MIT */
/* What only cuda's kernels have: parameter info for kernel_iface, and
 * which images are PTX text.  Loading and launching are gpu_common's
 * (kernel.c) over cuModuleLoadData and cuLaunchKernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_plugin.h"

/* gpu_launch keeps a buffer's device pointer as a void *, which the
 * driver reads as the CUdeviceptr it is. */
_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "CUdeviceptr is not pointer-sized");

/* A parameter count no kernel reaches: CUDA's parameter space is 32 KiB
 * (4 KiB before 12.1), at least a byte per parameter. */
#define CU_MAX_PARAMS 4096u

/* Each parameter's offset and size, asked once at load (driver 12.4+):
 * devq_queue_exec checks launches against them (kernel_iface).  The
 * driver reports sizes only, not whether a parameter is a pointer, so
 * each is DEVQ_PL_PARAM_BYTES.  A driver error leaves the kernel
 * unchecked rather than failing a load that worked. */
void cu_kernel_read_params(struct devq_pl_kernel *k, const char *entry)
{
    if (!cu_drv.FuncGetParamInfo)
        return;
    uint32_t n = 0, cap = 0;
    struct devq_pl_param *p = NULL;
    for (;;) {
        size_t off = 0, size = 0;
        CUresult r = cu_drv.FuncGetParamInfo(k->function, n, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* past the last parameter */
        if (r != CUDA_SUCCESS || n == CU_MAX_PARAMS || size == 0 || size > 4096 || off > UINT32_MAX) {
            gpu_host->log(DEVQ_LOG_BASIC,
                          "cuda: cuFuncGetParamInfo '%s' parameter %u: %s (size "
                          "%zu): its launches are not checked",
                          entry, n, r ? cu_err_name(r) : "out of range", size);
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
        p[n++] = (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_BYTES,
                                         .size = (uint32_t)size,
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
    *out = (struct devq_pl_kernel_iface){ .flags = DEVQ_PL_IFACE_POSITIONAL,
                                          .nparams = k->nparams,
                                          .params = k->params };
    return 0;
}

/* PTX is text that must end in a NUL, which a size-delimited image may
 * lack; binary images (cubin ELF, fatbin) are passed as they are. */
bool cu_kernel_is_binary(const void *image, size_t size)
{
    const unsigned char *p = image;
    static const unsigned char elf[4] = { 0x7f, 'E', 'L', 'F' };
    static const unsigned char fatbin[4] = { 0x50, 0xed, 0x55, 0xba };
    return size >= 4 && (memcmp(p, elf, 4) == 0 || memcmp(p, fatbin, 4) == 0);
}
