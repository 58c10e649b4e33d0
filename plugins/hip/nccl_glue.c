/* SPDX-License-Identifier: MIT */
/* What the shared NCCL code (gpu_common/nccl.c) needs from devq-hip.so:
 * RCCL's names, and the HIP device and stream to enqueue on. */
#define _GNU_SOURCE
#include "hip_plugin.h"

static void *stream_handle(devq_pl_stream *s)
{
    return s->stream;
}

const struct gpu_nccl_glue gpu_nccl_glue = {
    .name = "RCCL",
    .soname = "librccl.so.1",
    .env = "DEVQ_RCCL_LIBRARY",
    .install = "install RCCL (ROCm's rccl package)",
    .enter = gpu_enter,
    .stream_handle = stream_handle,
};
