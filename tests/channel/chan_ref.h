/* SPDX-License-Identifier: MIT */
/* What the channel test programs share (chan_suite.c on cpu over MPI,
 * chan_gpu.c on cuda/hip over the emulated NCCL/RCCL, mpi_comm.c): the
 * check macros (they count into `failures` and name `rank`), the two
 * test kernels, and the host reference of every dtype and reduction.
 * Include once per program, after <devq/devq.h>. */
#ifndef DEVQ_TEST_CHAN_REF_H
#define DEVQ_TEST_CHAN_REF_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <devq/devq.h>
#include "../../plugins/mpi/half.h"

static int rank = -1, failures;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fprintf(stderr, " (devq_errmsg: %s)\n", devq_errmsg());                                 \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)
#define OK(call) CHECK((call) == 0, "%s", #call)

/* Kernels: x[i] = x[i] * 2 + 1 over n floats (args: x, &n), and one
 * that fails with -EIO. */
int chan_scale(void *const *args, const devq_cpu_group *g);
int chan_scale(void *const *args, const devq_cpu_group *g)
{
    float *x = args[0];
    uint32_t n = *(const uint32_t *)args[1];
    for (uint32_t i = g->group_id[0] * g->local_size[0]; i < n && i < (g->group_id[0] + 1) * g->local_size[0];
         i++)
        x[i] = x[i] * 2 + 1;
    return 0;
}

int chan_fail(void *const *args, const devq_cpu_group *g);
int chan_fail(void *const *args, const devq_cpu_group *g)
{
    (void)args;
    (void)g;
    return -EIO;
}

static inline size_t esz(enum devq_dtype t)
{
    static const size_t s[] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
    return s[t];
}

static inline const char *tname(enum devq_dtype t)
{
    static const char *n[] = { "I8", "U8", "I32", "U32", "I64", "U64", "F16", "BF16", "F32", "F64" };
    return n[t];
}

static inline const char *oname(enum devq_reduce o)
{
    static const char *n[] = { "SUM", "PROD", "MIN", "MAX", "AVG" };
    return n[o];
}

/* Element i of rank r's input: small, so every result is exact in every type. */
static inline double input(int r, size_t i)
{
    return (double)(i % 5) + r + 1;
}

static inline void store(void *p, size_t i, enum devq_dtype t, double v)
{
    switch (t) {
    case DEVQ_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case DEVQ_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case DEVQ_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case DEVQ_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case DEVQ_I64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case DEVQ_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case DEVQ_F16:
        ((uint16_t *)p)[i] = devq_f32_to_f16((float)v);
        break;
    case DEVQ_BF16:
        ((uint16_t *)p)[i] = devq_f32_to_bf16((float)v);
        break;
    case DEVQ_F32:
        ((float *)p)[i] = (float)v;
        break;
    case DEVQ_F64:
        ((double *)p)[i] = v;
        break;
    }
}

static inline double load(const void *p, size_t i, enum devq_dtype t)
{
    switch (t) {
    case DEVQ_I8:
        return ((const int8_t *)p)[i];
    case DEVQ_U8:
        return ((const uint8_t *)p)[i];
    case DEVQ_I32:
        return ((const int32_t *)p)[i];
    case DEVQ_U32:
        return ((const uint32_t *)p)[i];
    case DEVQ_I64:
        return (double)((const int64_t *)p)[i];
    case DEVQ_U64:
        return (double)((const uint64_t *)p)[i];
    case DEVQ_F16:
        return devq_f16_to_f32(((const uint16_t *)p)[i]);
    case DEVQ_BF16:
        return devq_bf16_to_f32(((const uint16_t *)p)[i]);
    case DEVQ_F32:
        return ((const float *)p)[i];
    case DEVQ_F64:
        return ((const double *)p)[i];
    }
    return 0;
}

static inline int is_int(enum devq_dtype t)
{
    return t <= DEVQ_U64;
}

/* The reference reduction of element i over every rank. */
static inline double reference(enum devq_reduce o, enum devq_dtype t, size_t i, int size)
{
    double acc = input(0, i);
    for (int r = 1; r < size; r++) {
        double x = input(r, i);
        switch (o) {
        case DEVQ_SUM:
        case DEVQ_AVG:
            acc += x;
            break;
        case DEVQ_PROD:
            acc *= x;
            break;
        case DEVQ_MIN:
            acc = x < acc ? x : acc;
            break;
        case DEVQ_MAX:
            acc = x > acc ? x : acc;
            break;
        }
    }
    if (o == DEVQ_AVG)
        acc = is_int(t) ? (double)((long long)acc / size) : acc / size;
    return acc;
}

#endif
