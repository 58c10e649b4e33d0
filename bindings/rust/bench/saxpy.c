/* SPDX-License-Identifier: MIT */
/* The C side of `make rust-bench`: the SAXPY loop of the Rust example
 * saxpy_bench as a devq cpu kernel (y[i] += a * x[i] over this
 * work-group's items), built into a shared object the example loads. */
#include <stdint.h>
#include <devq/devq.h>

int saxpy_c(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0];
    float *y = args[1];
    float a = *(const float *)args[2];
    uint32_t start = g->group_id[0] * g->local_size[0];
    uint32_t end = start + g->local_size[0];
    if (end > g->global_size[0])
        end = g->global_size[0];
    for (uint32_t i = start; i < end; i++)
        y[i] += a * x[i];
    return 0;
}
