/* SPDX-License-Identifier: MIT */
/* Bridging a wait through the device: when the backend can wait on
 * host-mapped memory (DEVQ_CAP_WAIT_VALUE), a queue wait on a value that
 * nothing on this device produces is issued at once as a device-side wait
 * on a small "slot" word, and the notifier thread writes the slot when
 * the signal reaches the value (or fails, or the queue goes away).  The
 * batch keeps its place in the stream; nothing is resubmitted. */
#ifndef DEVQ_LIB_VALUE_WAIT_H
#define DEVQ_LIB_VALUE_WAIT_H

#include <stdint.h>
#include <devq/devq.h>

struct devq_device;
struct devq_queue;
struct batch;
struct devq_value_slot;

/* Device lock held.  1: issued as a device wait; 0: not possible here
 * (caller defers instead); negative: error. */
int devq__value_wait_issue(struct devq_queue *q, struct batch *b, devq_signal *s, uint64_t v);
/* End of a batch (host callback context): drop its slots. */
void devq__value_wait_batch_done(struct batch *b);
void devq__value_wait_batch_reset(struct batch *b); /* the pool hands b out */
/* Queue destroy: release every device wait of q (its batches then fail
 * with -ECANCELED at their gate). */
void devq__value_wait_cancel_queue(struct devq_queue *q);
/* Device detach: free idle slots. */
void devq__value_wait_fini(struct devq_device *dev);
/* The earliest device-side wait of q not yet released: 1 and its signal,
 * value, batch number and tracker unit, or 0. */
int devq__value_wait_blocker(struct devq_queue *q, devq_signal **sig, uint64_t *value, uint64_t *seq,
                             uint64_t *cursor);
/* Is any device-side wait of dev active? */
int devq__value_wait_any(struct devq_device *dev);
/* The gate: -ECANCELED when the slot was released by a destroy. */
int devq__value_wait_slot_cancelled(const struct devq_value_slot *s);
/* What the slot waits for (valid while its batch holds it). */
devq_signal *devq__value_wait_slot_signal(const struct devq_value_slot *s);
uint64_t devq__value_wait_slot_value(const struct devq_value_slot *s);

#endif
