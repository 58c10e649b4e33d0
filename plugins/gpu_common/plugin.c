/* SPDX-License-Identifier: MIT */
/* The checks every GPU plugin's devq_plugin_init makes of its host. */
#define _GNU_SOURCE
#include <errno.h>
#include "gpu_common.h"

const struct devq_host *gpu_host;
const char *gpu_backend = "gpu";

int gpu_plugin_init(const struct devq_host *host, uint32_t host_abi, const char *backend,
                    const struct devq_backend_ops *table, const struct devq_backend_ops **ops)
{
    if (!host || !ops)
        return -EINVAL;
    if (host_abi < DEVQ_HOST_ABI_VERSION ||
        host->size < offsetof(struct devq_host, getenv) + sizeof host->getenv)
        return host->error ? host->error(-EPROTO,
                                         "%s: host ABI %u (size %u) is older than this "
                                         "plugin's %d",
                                         backend, host_abi, host->size, DEVQ_HOST_ABI_VERSION)
                           : -EPROTO;
    gpu_host = host;
    gpu_backend = backend;
    *ops = table;
    return 0;
}
