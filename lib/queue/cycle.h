/* SPDX-License-Identifier: MIT */
/* cycle.c: wait-cycle detection among deferred batches (device lock). */
#ifndef DEVQ_LIB_CYCLE_H
#define DEVQ_LIB_CYCLE_H

#include <stddef.h>

struct devq_queue;

int devq__cycle_check(struct devq_queue *q, char *msg, size_t cap);
/* A head was just deferred: detect, count and log a cycle it closes. */
void devq__note_cycle(struct devq_queue *q);

#endif
