/* SPDX-License-Identifier: MIT */
/* devq-hip.so: entry point and ops table.  See devq-hip(7). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include "hip_plugin.h"

static void hip_fini(void)
{
    /* The runtime stays loaded: it keeps threads of its own. */
}

static const struct devq_backend_ops hip_ops_table = {
    GPU_DRIVER_OPS,
    GPU_OPS_CHANNELS,
    .name = "hip",
    .fini = hip_fini,
};

GPU_PLUGIN_ENTRY("hip", hip_ops_table, gpu_host)
