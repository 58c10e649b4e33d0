/* SPDX-License-Identifier: MIT */
/* Element types and reductions of the emulated NCCL: every ncclDataType_t
 * and ncclRedOp_t.  fp16 and bf16 go through float and are rounded back
 * after each step, as a ring reduction on a GPU rounds at each hop.
 * Signed integers wrap (computed as unsigned) like GPU integer math. */
#include <stdbool.h>
#include <string.h>
#include "nccl_abi.h"
#include "emu_nccl.h"

size_t emu_nccl_dtype_size(int dtype)
{
    switch (dtype) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

/* A float's bits and back (memcpy: no aliasing rules broken). */
static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float emu_nccl_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    return float_of(bits);
}

uint16_t emu_nccl_float_to_half(float f)
{
    uint32_t x = bits_of(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff)
        return sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0);
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return sign | 0x7c00;
    if (e <= 0) { /* subnormal or zero */
        if (e < -10)
            return sign;
        man |= 0x800000;
        unsigned shift = (unsigned)(14 - e);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return sign | (uint16_t)h;
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++; /* may carry into the exponent: still right */
    return sign | (uint16_t)h;
}

float emu_nccl_bf16_to_float(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

uint16_t emu_nccl_float_to_bf16(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7f800000) == 0x7f800000 && (x & 0x7fffff))
        return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#define INT_LOOP(T, U)                            \
    do {                                          \
        T *a = acc;                               \
        const T *b = in;                          \
        for (size_t i = 0; i < n; i++)            \
            switch (op) {                         \
            case ncclSum:                         \
            case ncclAvg:                         \
                a[i] = (T)((U)a[i] + (U)b[i]);    \
                break;                            \
            case ncclProd:                        \
                a[i] = (T)((U)a[i] * (U)b[i]);    \
                break;                            \
            case ncclMax:                         \
                a[i] = a[i] > b[i] ? a[i] : b[i]; \
                break;                            \
            case ncclMin:                         \
                a[i] = a[i] < b[i] ? a[i] : b[i]; \
                break;                            \
            }                                     \
    } while (0)

#define FLOAT_OP(x, y)                                        \
    (op == ncclSum || op == ncclAvg ? (x) + (y)               \
     : op == ncclProd               ? (x) * (y)               \
     : op == ncclMax                ? ((x) > (y) ? (x) : (y)) \
                                    : ((x) < (y) ? (x) : (y)))

/* NCCL's integer element types: the enumerator, the C type, and the
 * unsigned type signed math wraps through. */
#define INT_TYPES(X)                  \
    X(ncclInt8, int8_t, uint8_t)      \
    X(ncclUint8, uint8_t, unsigned)   \
    X(ncclInt32, int32_t, uint32_t)   \
    X(ncclUint32, uint32_t, uint32_t) \
    X(ncclInt64, int64_t, uint64_t)   \
    X(ncclUint64, uint64_t, uint64_t)

#define FLOAT_LOOP(T)                    \
    do {                                 \
        T *a = acc;                      \
        const T *b = in;                 \
        for (size_t i = 0; i < n; i++)   \
            a[i] = FLOAT_OP(a[i], b[i]); \
    } while (0)

#define REDUCE_INT(E, T, U) \
    case E:                 \
        INT_LOOP(T, U);     \
        break;

void emu_nccl_reduce(void *acc, const void *in, size_t n, int dtype, int op)
{
    switch (dtype) {
        INT_TYPES(REDUCE_INT)
    case ncclFloat32:
        FLOAT_LOOP(float);
        break;
    case ncclFloat64:
        FLOAT_LOOP(double);
        break;
    case ncclFloat16:
    case ncclBfloat16: {
        uint16_t *a = acc;
        const uint16_t *b = in;
        bool half = dtype == ncclFloat16;
        for (size_t i = 0; i < n; i++) {
            float x = half ? emu_nccl_half_to_float(a[i]) : emu_nccl_bf16_to_float(a[i]);
            float y = half ? emu_nccl_half_to_float(b[i]) : emu_nccl_bf16_to_float(b[i]);
            float r = FLOAT_OP(x, y);
            a[i] = half ? emu_nccl_float_to_half(r) : emu_nccl_float_to_bf16(r);
        }
        break;
    }
    }
}

#define DIV_LOOP(T)                    \
    do {                               \
        T *a = acc;                    \
        for (size_t i = 0; i < n; i++) \
            a[i] = (T)(a[i] / (T)by);  \
    } while (0)

#define DIVIDE_INT(E, T, U) \
    case E:                 \
        DIV_LOOP(T);        \
        break;

void emu_nccl_divide(void *acc, size_t n, int dtype, int by)
{
    switch (dtype) {
        INT_TYPES(DIVIDE_INT)
    case ncclFloat32:
        DIV_LOOP(float);
        break;
    case ncclFloat64:
        DIV_LOOP(double);
        break;
    case ncclFloat16:
    case ncclBfloat16: {
        uint16_t *a = acc;
        bool half = dtype == ncclFloat16;
        for (size_t i = 0; i < n; i++) {
            float x = (half ? emu_nccl_half_to_float(a[i]) : emu_nccl_bf16_to_float(a[i])) / (float)by;
            a[i] = half ? emu_nccl_float_to_half(x) : emu_nccl_float_to_bf16(x);
        }
        break;
    }
    }
}
