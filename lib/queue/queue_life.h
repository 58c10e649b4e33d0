/* SPDX-License-Identifier: MIT */
/* queue_life.c: a queue's life cycle (devq_queue_create/destroy/finish
 * are public, devq.h) and the queue layer's state of a device. */
#ifndef DEVQ_LIB_QUEUE_LIFE_H
#define DEVQ_LIB_QUEUE_LIFE_H

#include <stdint.h>

struct devq_device;
struct devq_queue;

int devq__queue_state_create(struct devq_device *dev);
void devq__queue_state_destroy(struct devq_device *dev);
/* DEVQ_TRACE: (re)name q's track after its label. */
void devq__queue_trace_track(const struct devq_queue *q);
/* Wait until every submitted batch completed, or an absolute deadline. */
int devq__queue_finish_until(struct devq_queue *q, uint64_t deadline);

#endif
