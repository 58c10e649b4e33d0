/* SPDX-License-Identifier: MIT */
/* What the shared NCCL code (gpu_common/nccl.c) needs from devq-cuda.so:
 * NCCL's names, and the CUDA context and stream to enqueue on. */
#define _GNU_SOURCE
#include "cuda_plugin.h"

static void *stream_handle(devq_pl_stream *s)
{
    return s->stream;
}

const struct gpu_nccl_glue gpu_nccl_glue = {
    .name = "NCCL",
    .soname = "libnccl.so.2",
    .env = "DEVQ_NCCL_LIBRARY",
    .install = "install NCCL 2 (libnccl2, from NVIDIA's repository)",
    .enter = gpu_enter,
    .stream_handle = stream_handle,
};
