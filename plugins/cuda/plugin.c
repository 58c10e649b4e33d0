/* devq-cuda.so: entry point and ops table.  See devq-cuda(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "cuda_plugin.h"

const struct devq_host *cu_host;

static void cu_fini(void)
{
    cu_driver_fini();
}

static const struct devq_backend_ops cuda_ops = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "cuda",
    .fini = cu_fini,
    .device_count = cu_device_count,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .device_info = cu_device_info,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_wait = cu_event_wait,
    .stream_wait_event = cu_stream_wait_event,
    .event_elapsed = cu_event_elapsed,
    .host_fn = cu_host_fn,
    .value_attach = cu_value_attach,
    .value_detach = cu_value_detach,
    .stream_wait_value = cu_stream_wait_value,
    .stream_write_value = cu_stream_write_value,
    .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free,
    .mem_alloc_async = cu_mem_alloc_async,
    .mem_free_async = cu_mem_free_async,
    .copy = cu_copy,
    .fill = cu_fill,
    .kernel_load = cu_kernel_load,
    .kernel_destroy = cu_kernel_destroy,
    .launch = cu_launch,
};

/* The driver is loaded at the first device_count/device_open, not here:
 * a machine without one still loads the plugin and reports why. */
__attribute__((visibility("default")))
int devq_plugin_init(const struct devq_host *host, uint32_t host_abi,
                     const struct devq_backend_ops **ops)
{
    int err = gpu_plugin_init(host, host_abi, "cuda", &cuda_ops, ops);
    if (!err)
        cu_host = host;
    return err;
}
