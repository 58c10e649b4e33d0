/* SPDX-License-Identifier: MIT */
/* Checkpoints on a stream (see checkpoint.c).  Device lock held. */
#ifndef DEVQ_LIB_CHECKPOINT_H
#define DEVQ_LIB_CHECKPOINT_H

struct devq_device;
struct devq_stream;

/* Record a checkpoint on st before a wait that may hold it up. */
void devq__checkpoint(struct devq_device *dev, struct devq_stream *st);
/* Give back every checkpoint of a stream that is going away. */
void devq__checkpoints_drop(struct devq_device *dev, struct devq_stream *st);

#endif
