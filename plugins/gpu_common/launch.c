/* SPDX-License-Identifier: MIT */
/* Kernel launches: devq's global/local sizes as a driver's grid and
 * blocks, and its arguments as kernelParams. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "gpu_common.h"

int gpu_launch_prepare(struct gpu_launch *g, const devq_launch *l, const struct devq_pl_arg *args,
                       size_t nargs)
{
    for (int d = 0; d < 3; d++) {
        if (l->local[d] == 0 || l->global[d] == 0)
            return gpu_host->error(-EINVAL,
                                   "%s: launch: global and local sizes must be > 0 (dimension %d: %u/%u)",
                                   gpu_backend, d, l->global[d], l->local[d]);
        g->block[d] = l->local[d];
        g->grid[d] = l->global[d] / l->local[d] + (l->global[d] % l->local[d] != 0);
    }
    g->params = g->params_small;
    g->ptrs = g->ptrs_small;
    if (nargs > GPU_LAUNCH_SMALL) {
        g->params = malloc(nargs * sizeof *g->params);
        g->ptrs = malloc(nargs * sizeof *g->ptrs);
        if (!g->params || !g->ptrs) {
            free(g->params);
            free(g->ptrs);
            return gpu_host->error(-ENOMEM, "%s: launch: out of memory for %zu arguments", gpu_backend,
                                   nargs);
        }
    }
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer) {
            g->ptrs[i] = args[i].device_ptr;
            g->params[i] = &g->ptrs[i];
        } else {
            g->params[i] = (void *)args[i].value;
        }
    }
    if (!nargs)
        gpu_launch_release(g);
    return 0;
}

void gpu_launch_release(struct gpu_launch *g)
{
    if (g->params && g->params != g->params_small) {
        free(g->params);
        free(g->ptrs);
    }
    g->params = NULL;
    g->ptrs = NULL;
}
