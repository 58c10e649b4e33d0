/* SPDX-License-Identifier: MIT */
/* IEEE binary16 and bfloat16 <-> float, for the host reductions MPI has
 * no types for (round to nearest even; NaN stays NaN).  Header-only: the
 * channel tests use the same conversions for their reference. */
#ifndef DEVQ_HALF_H
#define DEVQ_HALF_H

#include <stdint.h>
#include <string.h>

/* A float's bits and back (memcpy: no aliasing rules broken). */
static inline uint32_t devq_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float devq_f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float devq_bf16_to_f32(uint16_t h)
{
    return devq_f32_of_bits((uint32_t)h << 16);
}

static inline uint16_t devq_f32_to_bf16(float f)
{
    uint32_t u = devq_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline float devq_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0) {
        if (!m)
            u = s;
        else { /* subnormal: normalise */
            e = 127 - 15 + 1;
            while (!(m & 0x400)) {
                m <<= 1;
                e--;
            }
            u = s | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31)
        u = s | 0x7f800000u | (m << 13);
    else
        u = s | ((e + 127 - 15) << 23) | (m << 13);
    return devq_f32_of_bits(u);
}

static inline uint16_t devq_f32_to_f16(float f)
{
    uint32_t u = devq_f32_bits(f);
    uint32_t s = (u >> 16) & 0x8000;
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t m = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff)
        return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
    if (e >= 31)
        return (uint16_t)(s | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)s;
        m |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = 1u << (shift - 1), rest = m & ((1u << shift) - 1);
        uint32_t r = m >> shift;
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(s | r);
    }
    uint32_t r = (uint32_t)e << 10 | (m >> 13);
    uint32_t rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++; /* may carry into the exponent: still right */
    return (uint16_t)(s | r);
}

#endif
