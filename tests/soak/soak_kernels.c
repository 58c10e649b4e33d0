/* SPDX-License-Identifier: MIT */
/* The soak's kernels, one C function each for both backends: the cpu
 * backend calls them as devq_cpu_kernel_fn, the emulated CUDA driver
 * through a "cpu-args" module (buffer parameters passed as the pointer
 * itself, values as a pointer to the value), found with dlsym: the
 * binary is linked with -export-dynamic.
 *
 * Each kernel is order-sensitive (not commutative), so work that runs
 * out of order changes the checksum the host predicts. */
#include <errno.h>
#include "soak.h"

int soak_mix(void *const *a, const devq_cpu_group *g);
int soak_combine(void *const *a, const devq_cpu_group *g);
int soak_gen(void *const *a, const devq_cpu_group *g);
int soak_fail_kernel(void *const *a, const devq_cpu_group *g);

/* soak_mix(v, n, k): v[i] = v[i] * 2654435761 + k + i */
int soak_mix(void *const *a, const devq_cpu_group *g)
{
    uint32_t *v = a[0];
    uint32_t n = *(const uint32_t *)a[1], k = *(const uint32_t *)a[2];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = g->group_id[0] * g->local_size[0] + i;
        if (j < n)
            v[j] = v[j] * 2654435761u + k + j;
    }
    return 0;
}

/* soak_combine(dst, src, n): dst[i] = dst[i] * 31 + (src[i] ^ 0x5bd1e995) */
int soak_combine(void *const *a, const devq_cpu_group *g)
{
    uint32_t *dst = a[0];
    const uint32_t *src = a[1];
    uint32_t n = *(const uint32_t *)a[2];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = g->group_id[0] * g->local_size[0] + i;
        if (j < n)
            dst[j] = dst[j] * 31u + (src[j] ^ 0x5bd1e995u);
    }
    return 0;
}

/* soak_gen(v, n, k): v[i] = k ^ (i * 0x9e3779b9), reading nothing: an
 * exec with DEVQ_WRITE access, which clears a failed buffer. */
int soak_gen(void *const *a, const devq_cpu_group *g)
{
    uint32_t *v = a[0];
    uint32_t n = *(const uint32_t *)a[1], k = *(const uint32_t *)a[2];
    for (uint32_t i = 0; i < g->local_size[0]; i++) {
        uint32_t j = g->group_id[0] * g->local_size[0] + i;
        if (j < n)
            v[j] = k ^ (j * 0x9e3779b9u);
    }
    return 0;
}

/* soak_fail_kernel(code): fails with code (cpu only: a failing kernel
 * is recoverable there, DEVQ_CAP_SKIP_ON_ERROR). */
int soak_fail_kernel(void *const *a, const devq_cpu_group *g)
{
    (void)g;
    return *(const int32_t *)a[0];
}

const char soak_emu_module[] = "devq-emu-module cpu-args\n"
                               "soak_mix ptr 4 4\n"
                               "soak_combine ptr ptr 4\n"
                               "soak_gen ptr 4 4\n";
