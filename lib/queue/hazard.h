/* SPDX-License-Identifier: MIT */
/* Buffer hazards against deferred batches.
 *
 * The tracker orders hazards when a batch is issued to its stream.  A
 * batch parked on its queue's deferred FIFO (waiting for a value the
 * host, another device or later work will set, or queued behind such a
 * batch) is not issued yet, so the tracker knows nothing of its uses.
 * Hazards are defined by submission order (DESIGN.md §3): work submitted
 * after it on another queue must see what it writes and must not
 * overwrite what it reads.  So a parked batch registers its unissued
 * buffer uses here, and an op of a later batch that conflicts with a use
 * submitted earlier on another queue parks its batch too (a hazard wait)
 * until that use is issued; the tracker then orders the two on the
 * device as for any other pair.  Waiting for the *issue*, not the
 * completion, keeps the host out of the ordering.
 *
 * Everything here runs under the device lock.  A device with no parked
 * batch pays one load per op. */
#ifndef DEVQ_LIB_HAZARD_H
#define DEVQ_LIB_HAZARD_H

#include "queue.h"

struct devq_parked_use {
    struct batch *b;
    uint32_t nread, nwrite; /* unissued ops of b reading / writing the buffer */
};

/* What a hazard wait waits for. */
struct batch;
struct op;

struct devq_hazard {
    struct batch *owner; /* the earlier parked batch (on another queue) */
    devq_buffer *buf;
    enum devq_access mine, theirs; /* the conflicting accesses */
};

/* Register b's unissued uses (ops from next_op on), once. */
int devq__hazard_park(struct batch *b);
void devq__hazard_batch_reset(struct batch *b); /* the pool hands b out */
/* One of b's ops went out (or never will): drop its registered uses. */
void devq__hazard_op_done(struct batch *b, const struct op *o);
/* Does op o of b conflict with a use of an earlier batch parked on
 * another queue?  1 and *out if so. */
int devq__hazard_find(const struct batch *b, const struct op *o, struct devq_hazard *out);
/* The hazard a hazard-waiting batch waits for (at its next op). */
int devq__hazard_blocker(const struct batch *b, struct devq_hazard *out);

static inline int devq__hazard_any(const struct devq_device *dev)
{
    return dev->qs->parked_uses != 0;
}

#endif
