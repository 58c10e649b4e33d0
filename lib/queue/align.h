/* SPDX-License-Identifier: MIT */
/* align.c: the tracker's align op (tracker.h). */
#ifndef DEVQ_LIB_ALIGN_H
#define DEVQ_LIB_ALIGN_H

#include <stdint.h>

int devq__align_streams(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                        const char *why);

#endif
