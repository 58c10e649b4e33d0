/* SPDX-License-Identifier: MIT */
/* Internals of the emulated NCCL/RCCL (emu_nccl.c): element types and
 * reductions (emu_nccl_reduce.c, also used by tests/unit/test_nccl_emu.c for
 * its fp16/bf16 conversions). */
#ifndef DEVQ_EMU_NCCL_H
#define DEVQ_EMU_NCCL_H

#include <stddef.h>
#include <stdint.h>

/* Bytes per element of an ncclDataType_t, 0 when not a valid type. */
size_t emu_nccl_dtype_size(int dtype);
/* acc[i] = acc[i] op in[i] for n elements; ncclAvg sums (divide after). */
void emu_nccl_reduce(void *acc, const void *in, size_t n, int dtype, int op);
/* acc[i] /= by: the end of ncclAvg (integer division for integer types). */
void emu_nccl_divide(void *acc, size_t n, int dtype, int by);

float emu_nccl_half_to_float(uint16_t h);
uint16_t emu_nccl_float_to_half(float f); /* round to nearest even */
float emu_nccl_bf16_to_float(uint16_t h);
uint16_t emu_nccl_float_to_bf16(float f); /* round to nearest even */

#endif
