/* SPDX-License-Identifier: MIT */
/* cpu backend: entry point and ops table.
 *
 * Built into libdevq as the embedded default, but bound to lib only by
 * this table and the host table, exactly like a dlopen'd plugin. */
#include "config.h"
#include <errno.h>
#include "cpu.h"

const struct devq_host *cpu_host;

static void cpu_fini(void)
{
    cpu_pool_shutdown();
}

static const struct devq_backend_ops cpu_ops = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "cpu",
    .fini = cpu_fini,

    .device_count = cpu_device_count,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .device_info = cpu_device_info,

    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,

    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_query = cpu_event_query,
    .event_wait = cpu_event_wait,
    .stream_wait_event = cpu_stream_wait_event,
    .event_elapsed = cpu_event_elapsed,

    .host_fn = cpu_host_fn,

    /* No device-side value wait/write: lib bridges signals with host
     * callbacks, which on this backend are as cheap as anything else. */
    .value_attach = NULL,
    .value_detach = NULL,
    .stream_wait_value = NULL,
    .stream_write_value = NULL,

    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_alloc_async = NULL,
    .mem_free_async = NULL,
    .copy = cpu_copy,
    .fill = cpu_fill,

    .kernel_load = cpu_kernel_load,
    .kernel_destroy = cpu_kernel_destroy,
    .launch = cpu_launch,

    .stream_idle = cpu_stream_idle,
    .kernel_iface = cpu_kernel_iface,
    .kernel_load_fn = cpu_kernel_load_fn,
    .launch_list = cpu_launch_list,
    .graph_create = cpu_graph_create,
    .graph_update = cpu_graph_update,
    .graph_launch = cpu_graph_launch,
    .graph_destroy = cpu_graph_destroy,
    .signal_tail = cpu_signal_tail,
};

int devq__cpu_plugin_init(const struct devq_host *host, uint32_t host_abi,
                          const struct devq_backend_ops **ops)
{
    if (!host || !ops)
        return -EINVAL;
    /* The host table only grows: any version-1 table that is at least as
     * large as ours has every service we call. */
    if (host_abi < 1 || host->abi_version < 1 || host->size < sizeof(struct devq_host))
        return host->error(-ENOTSUP,
                           "cpu: host table version %u size %u is older than "
                           "this backend needs (version %u size %zu); rebuild the backend",
                           host->abi_version, host->size, DEVQ_HOST_ABI_VERSION, sizeof(struct devq_host));
    cpu_host = host;
    *ops = &cpu_ops;
    return 0;
}
