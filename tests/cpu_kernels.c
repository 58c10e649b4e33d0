/* SPDX-License-Identifier: MIT */
/* Kernels for tests/test_cpu_plugin.c, built as a loadable module to
 * exercise kernel_load from a shared object. */
#include <stdint.h>
#include <devq/devq.h>

/* y[i] = a * x[i] + y[i] over n elements; args: x, y, &a, &n */
int cpu_test_saxpy(void *const *args, const devq_cpu_group *g);
int cpu_test_saxpy(void *const *args, const devq_cpu_group *g)
{
    const float *x = args[0];
    float *y = args[1];
    float a = *(const float *)args[2];
    uint32_t n = *(const uint32_t *)args[3];
    uint32_t begin = g->group_id[0] * g->local_size[0];
    uint32_t end = begin + g->local_size[0];
    if (end > n)
        end = n;
    for (uint32_t i = begin; i < end; i++)
        y[i] = a * x[i] + y[i];
    return 0;
}
