/* SPDX-License-Identifier: MIT */
/* Device memory as lib's queues and buffers see it: the resource stack
 * (lib/mem_*.c).  See devq_resource(3) for the public resource interface. */
#ifndef DEVQ_LIB_MEM_H
#define DEVQ_LIB_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>

struct devq_device;
struct devq_stream;

/* Build the default stack from the environment (DEVQ_MEM_BUDGET,
 * DEVQ_MEM_LOG, DEVQ_MEM_GUARD) for a device being attached. */
int devq__mem_create(struct devq_device *dev);
/* Release everything (all frees must have been reaped or be reapable). */
void devq__mem_destroy(struct devq_device *dev);

/* Allocate for use on stream st (NULL: synchronous, usable on any stream).
 * The caller holds the device lock (so does devq__mem_free's): that is
 * what keeps devq_device_set_resource from swapping the stack under them. */
int devq__mem_alloc(struct devq_device *dev, size_t bytes, struct devq_stream *st, uint32_t tag,
                    void **device_ptr, void **host_ptr);
/* Free in stream order on st: the caller (the tracker) has already made
 * st wait for every other stream's last use, so the memory may be reused
 * on st at once and elsewhere once st reaches this point.  st NULL:
 * the memory is idle now (synchronous free). */
int devq__mem_free(struct devq_device *dev, void *device_ptr, size_t bytes, struct devq_stream *st,
                   uint32_t tag);
/* Complete the stream-ordered frees whose fences were reached, so that
 * devq_mem_stats_get is true when the queues are idle without a call to
 * devq_mem_reap.  Reaps the base only: a decorator's report (the guard's
 * use-after-free) stays for the user's devq_mem_reap.  Cheap when no
 * stream-ordered free was issued since the last reap.  Called when a
 * queue finishes (device lock not held). */
void devq__mem_reap_quiet(struct devq_device *dev);
/* The same from the notifier thread, soon: for host callbacks (a batch's
 * end), which must not call the backend themselves. */
void devq__mem_reap_soon(struct devq_device *dev);
/* A queue's buffer cache served `pairs` alloc/free pairs of tag on st
 * without the stack: count them in the stats layer (device lock held). */
void devq__mem_settle_pairs(struct devq_device *dev, uint32_t tag, struct devq_stream *st, uint64_t pairs);
/* A stream is going away: its pending frees must stay safe. */
void devq__mem_stream_gone(struct devq_device *dev, struct devq_stream *st);

#endif
