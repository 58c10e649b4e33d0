/* devq-vulkan.so: entry point and ops table.  See devq-vulkan(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "vk_plugin.h"
#include "../gpu_common/gpu_common.h"

const struct devq_host *vk_host;

static const struct devq_backend_ops vk_ops_table = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "vulkan",
    .device_count = vk_device_count,
    .device_open = vk_device_open,
    .device_close = vk_device_close,
    .device_info = vk_device_info,
    .stream_create = vk_stream_create,
    .stream_destroy = vk_stream_destroy,
    .event_create = vk_event_create,
    .event_destroy = vk_event_destroy,
    .event_record = vk_event_record,
    .event_query = vk_event_query,
    .event_wait = vk_event_wait,
    .stream_wait_event = vk_stream_wait_event,
    .event_elapsed = vk_event_elapsed,
    .host_fn = vk_host_fn,
    .mem_alloc = vk_mem_alloc,
    .mem_free = vk_mem_free,
    .copy = vk_copy,
    .fill = vk_fill,
    .kernel_load = vk_kernel_load,
    .kernel_destroy = vk_kernel_destroy,
    .launch = vk_launch,
};

/* libvulkan is loaded at the first device_count/device_open, not here: a
 * machine without it still loads the plugin, and devq-info says why. */
__attribute__((visibility("default")))
int devq_plugin_init(const struct devq_host *host, uint32_t host_abi,
                     const struct devq_backend_ops **ops)
{
    int err = gpu_plugin_init(host, host_abi, "vulkan", &vk_ops_table, ops);
    if (!err)
        vk_host = host;
    return err;
}
