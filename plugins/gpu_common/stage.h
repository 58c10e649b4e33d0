/* SPDX-License-Identifier: MIT */
/* The pinned chunks a device stages host copies through (stage.c). */
#ifndef DEVQ_GPU_STAGE_H
#define DEVQ_GPU_STAGE_H

#include <pthread.h>
#include <stddef.h>

/* Two sizes: reads and writes of up to 64 KiB take a small chunk (many
 * may wait behind deferred work at once), larger ones 4 MiB chunks in
 * turn. */
#define GPU_STAGE_SMALL ((size_t)64 << 10)
#define GPU_STAGE_BIG ((size_t)4 << 20)
/* Free chunks kept registered per size; more are given back at the
 * next acquire (never in a callback: no driver calls there). */
#define GPU_STAGE_KEEP 8u

struct gpu_stage_chunk {
    struct gpu_stage_chunk *next;
    unsigned char *mem; /* registered with the driver */
    size_t cap;
};

struct gpu_stage_pool {
    pthread_mutex_t mu; /* free, nfree; taken by driver callbacks too */
    struct gpu_stage_chunk *free[2];
    unsigned nfree[2];
};

#endif
