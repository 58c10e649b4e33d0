/* SPDX-License-Identifier: MIT */
/* Kernels for tests/unit/test_cpu_plugin.c, built as a loadable module to
 * exercise kernel_load from a shared object. */
#include <stdint.h>
#include <stddef.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>

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
/* Declared: the cpu backend hands this to lib as the kernel's interface. */
DEVQ_CPU_KERNEL_SIGNATURE(cpu_test_saxpy, DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER, DEVQ_CPU_VALUE(float),
                          DEVQ_CPU_VALUE(uint32_t));

/* A kernel that takes nothing, declared so. */
int cpu_test_noargs(void *const *args, const devq_cpu_group *g);
int cpu_test_noargs(void *const *args, const devq_cpu_group *g)
{
    (void)args, (void)g;
    return 0;
}
DEVQ_CPU_KERNEL_NO_ARGS(cpu_test_noargs);

/* A signature under this kernel's name that describes another function
 * (written by hand: the macro cannot get it wrong): refused at load. */
int cpu_test_misdeclared(void *const *args, const devq_cpu_group *g);
int cpu_test_misdeclared(void *const *args, const devq_cpu_group *g)
{
    (void)args, (void)g;
    return 0;
}
extern const devq_cpu_signature devq_cpu_signature_cpu_test_misdeclared;
__attribute__((visibility("default")))
const devq_cpu_signature devq_cpu_signature_cpu_test_misdeclared = { DEVQ_CPU_SIGNATURE_MAGIC, 0, NULL,
                                                                     cpu_test_saxpy };
