/* SPDX-License-Identifier: MIT */
/* Why a queue is not running: the one answer that cycle detection
 * (cycle.c) and the timeout messages of finish and synchronize
 * (queue.c) both use.  Device lock held. */
#ifndef DEVQ_LIB_BLOCKER_H
#define DEVQ_LIB_BLOCKER_H

#include <stddef.h>
#include "hazard.h"

/* A queue is blocked by its deferred head (a signal wait bridged
 * through the host, or a buffer hazard against another queue's parked
 * batch), by its earliest device-side wait, or by being ordered (by the
 * tracker) after a unit of another queue that waits on the device. */
struct devq_blocker {
    devq_signal *s; /* NULL: ordered behind another queue's blocked unit */
    uint64_t v, seq, cursor;
    int on_device;
    struct devq_queue *behind;
    struct devq_hazard hz; /* behind, by a buffer hazard (hz.owner set) */
};

/* 1 and *out when q is blocked, else 0. */
int devq__queue_blocker(struct devq_queue *q, struct devq_blocker *out);
/* "batch 3 waits s5>=1 (value 0)", "... on the device ...", "batch 3
 * writes buffer #2 (...) after queue 1 batch 4, which is deferred",
 * "it is ordered after queue 1, which waits on the device". */
void devq__blocker_describe(const struct devq_blocker *b, char *buf, size_t cap);

#endif
