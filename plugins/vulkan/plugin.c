/* SPDX-License-Identifier: MIT */
/* devq-vulkan.so: entry point and ops table.  See devq-vulkan(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "vk_plugin.h"
#include "../gpu_common/gpu_common.h"

const struct devq_host *vk_host;

static const struct devq_backend_ops vk_ops_table = {
    GPU_OPS_COMMON(vk),
    .name = "vulkan",
    .kernel_iface = vk_kernel_iface,
    .stream_idle = vk_stream_idle,
};

GPU_PLUGIN_ENTRY("vulkan", vk_ops_table, vk_host)
