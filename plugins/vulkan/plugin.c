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
    .graph_create = vk_graph_create,
    .graph_update = vk_graph_update,
    .graph_launch = vk_graph_launch,
    .graph_destroy = vk_graph_destroy,
};

GPU_PLUGIN_ENTRY("vulkan", vk_ops_table, vk_host)
