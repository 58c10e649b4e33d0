/* SPDX-License-Identifier: MIT */
/* devq-cuda.so: entry point and ops table.  See devq-cuda(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "cuda_plugin.h"

static void cu_fini(void)
{
    cu_driver_fini();
}

static const struct devq_backend_ops cuda_ops = {
    GPU_DRIVER_OPS, GPU_OPS_CHANNELS, .name = "cuda", .fini = cu_fini, .kernel_iface = cu_kernel_iface,
};

GPU_PLUGIN_ENTRY("cuda", cuda_ops, gpu_host)
