/* SPDX-License-Identifier: MIT */
/* Buffers as lib keeps them: device memory, the tracking state the
 * tracker needs (tracker.h), the failure its last writer left
 * (buffer_fail.c), and the stream-ordered free (buffer.c). */
#ifndef DEVQ_LIB_BUFFER_H
#define DEVQ_LIB_BUFFER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include "device.h"
#include "object.h"
#include "tracker.h"
#include "name.h"

#define DEVQ_MAGIC_BUFFER 0x42554646u /* "BUFF" */

struct devq_queue;
struct devq_parked_use;

struct devq_buffer {
    struct devq_object obj; /* refs: user + batches in flight */
    struct devq_device *dev;
    size_t size;
    void *dptr, *hptr;
    uint32_t tag;
    /* The failure its last writer left (buffer_fail.c): 0 or a negative
     * errno; the cause under a striped lock, only while failed. */
    _Atomic int fail_err;
    char *fail_cause;
    /* Under the stripe lock: the newest failed write (its cause is
     * fail_cause) and the oldest failed write not yet overwritten. */
    uint32_t fail_gen, fail_lo;
    uint32_t wgen;             /* writes bound so far (device lock; issue.c) */
    _Atomic int memory_held;   /* devq__buffer_hold_memory: never freed */
    struct devq_use alloc_use; /* stream-ordered alloc point (cursor 0: sync) */
    /* Under the device lock: */
    struct devq_buffer_track track;
    _Atomic uint32_t unissued; /* nonzero while a use of it is recorded but not
                                    * issued; counted per batch, not per use (record.c:
                                    * a count is held by the batch's latest use of it);
                                    * recorders add without the device lock, the rest
                                    * is under it */
    int freed;                 /* devq_buffer_free called */
    int free_pending;          /* free waits for unissued uses */
    struct devq_queue *free_q; /* where the pending free goes (NULL: sync) */
    struct devq_buffer *next_pending;
    struct devq_parked_use *parked; /* uses by deferred batches (hazard.c) */
    uint32_t nparked, capparked;
    struct devq_name name; /* "buffer #7": per process, creation order (cold) */
};

/* buffer.c */
/* An engine may still touch b's memory (an op it could not withdraw):
 * freeing b then never gives the memory back (it stays outstanding). */
void devq__buffer_hold_memory(devq_buffer *b);
int devq__buffer_check(const devq_buffer *b, const char *fn);
void devq__buffer_issued(devq_buffer *b); /* one unissued use went out (device lock) */
/* Run frees that waited for their buffer's last use to be issued (device lock). */
void devq__process_pending_frees(struct devq_device *dev);
void devq__buffer_queue_gone(struct devq_device *dev, struct devq_queue *q);
/* Queues' caches of freed buffers (buffer.c): give them back to the
 * memory stack, settling their counts (device lock held); drop q's. */
void devq__buffer_caches_flush(struct devq_device *dev);
void devq__buffer_cache_drop(struct devq_device *dev, struct devq_queue *q);
/* The device's cache of idle buffers (freed with no queue, never used),
 * which hold no device reference: freed at the device's teardown. */
void devq__buffer_idle_drop(struct devq_device *dev);

/* buffer_fail.c: the failure a buffer's last writer left.  Writes are
 * numbered in the order they are bound (the order the tracker runs
 * them in): a failure is that of write `gen`, and a use that reads
 * generation `gen` (batch.h) sees only failures of writes up to it --
 * not the failure of a later write that was marked early (a batch that
 * failed while being issued marks what it writes at once, while earlier
 * readers may still be running). */

#endif
