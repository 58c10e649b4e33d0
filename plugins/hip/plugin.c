/* devq-hip.so: entry point and ops table.  See devq-hip(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "hip_plugin.h"

const struct devq_host *hip_host;

static void hip_fini(void)
{
    /* The runtime stays loaded: it keeps threads of its own. */
}

static const struct devq_backend_ops hip_ops_table = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "hip",
    .fini = hip_fini,
    .device_count = hip_device_count,
    .device_open = hip_device_open,
    .device_close = hip_device_close,
    .device_info = hip_device_info,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_query = hip_event_query,
    .event_wait = hip_event_wait,
    .stream_wait_event = hip_stream_wait_event,
    .event_elapsed = hip_event_elapsed,
    .host_fn = hip_host_fn,
    .value_attach = hip_value_attach,
    .value_detach = hip_value_detach,
    .stream_wait_value = hip_stream_wait_value,
    .stream_write_value = hip_stream_write_value,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .mem_alloc_async = hip_mem_alloc_async,
    .mem_free_async = hip_mem_free_async,
    .copy = hip_copy,
    .fill = hip_fill,
    .kernel_load = hip_kernel_load,
    .kernel_destroy = hip_kernel_destroy,
    .launch = hip_launch,
};

/* The runtime is loaded at the first device_count/device_open, not here:
 * a machine without one (or without an AMD GPU) still loads the plugin and reports why. */
__attribute__((visibility("default")))
int devq_plugin_init(const struct devq_host *host, uint32_t host_abi,
                     const struct devq_backend_ops **ops)
{
    int err = gpu_plugin_init(host, host_abi, "hip", &hip_ops_table, ops);
    if (!err)
        hip_host = host;
    return err;
}
