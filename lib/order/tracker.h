/* SPDX-License-Identifier: MIT */
/* lib/order: the one place cross-stream ordering is decided (DESIGN §3).
 *
 * What it decides.  A device runs work on several streams at once: every
 * queue has its own, and stream-ordered allocs and frees run on the
 * buffer's alloc stream.  Users never say which stream waits for which;
 * they say which buffers an op reads and writes, and which signal values
 * a batch waits for and produces.  The tracker turns that into the
 * fewest stream-to-stream waits that keep every hazard ordered:
 * read-after-write, write-after-read and write-after-write on a buffer
 * used from two streams, and a queue wait on a signal value that another
 * stream of the same device produces.
 *
 * How.  Per device it keeps, for every stream, a `cursor` (units of work
 * issued: batches, stream-ordered allocs and frees) and
 * `last_synced[other]` (the cursor of `other` that this stream is
 * already ordered after).  Every buffer remembers the (stream, cursor) of
 * its last write and of the reads since (struct devq_buffer_track).
 * Binding a buffer use on a stream checks the hazards against other
 * streams; a hazard not already covered by last_synced is resolved by
 * `align` (record an event at the other stream's tail, or at a
 * checkpoint, and make this stream wait on it), and covered ones are
 * counted as elided (devq_stats_get: waits_inserted, waits_elided).
 * Alignment is transitive: a stream ordered after B's tail inherits B's
 * last_synced.  A signal value recorded as produced on (stream, cursor)
 * (devq__tracker_producer_add) makes a later wait for it on the same
 * device an alignment too: no host round trip.  A value nobody on this
 * device is known to produce is not the tracker's business: the queue
 * layer bridges it (a native device-side value wait, or a deferred
 * batch the notifier submits).
 *
 * Why here and nowhere else.  Every backend gets the same ordering and
 * the same elision, written once; plugins only record and wait events.
 * Keeping the decisions in one pure module is what makes them testable:
 * the tracker touches streams only through `align` (struct
 * devq_tracker_ops), so tests/test_tracker drives it without a backend
 * and bench/bench_tracker measures it alone.  Callers hold the device
 * lock; nothing here blocks or calls a plugin.
 *
 * Checkpoints (checkpoint.h) serve the same decision: an event recorded
 * on a stream just before a wait that may hold it up (a device-side wait
 * for a host value, or, while any such wait is on the device, a wait for
 * another stream), so that a stream needing only the work before it
 * aligns to the checkpoint rather than to a tail that may wait for the
 * host: waiting for the tail would be a false dependency that deadlocks
 * valid programs (tests/test_held_alignment.c).
 *
 * Layer: order sits above device (a checkpoint is a pooled event of a
 * device stream) and below mem and queue, which call it (DESIGN §10,
 * tests/layers.py).  The device layer reads the tracker's counts through
 * its hooks, never by a call. */
#ifndef DEVQ_LIB_TRACKER_H
#define DEVQ_LIB_TRACKER_H

#include <stdint.h>
#include <devq/devq.h>

struct devq_tracker;

struct devq_tracker_ops {
    /* Make stream `dst` wait for src's work up to cursor `need` at least.
     * Store in *synced the cursor dst now follows: src's current cursor
     * when it waited for src's tail, or an earlier point >= need when it
     * waited for a checkpoint (then nothing is inherited transitively). */
    /* `why` says what the wait is for, for logs ("buffer #3"), or NULL. */
    int (*align)(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced, const char *why);
};

/* A point in one stream's history.  `gen` tells a reused stream id from
 * the stream that had it before (whose work has all completed). */
struct devq_use {
    uint32_t stream, gen;
    uint64_t cursor; /* 0: no use */
};

/* Tracking state embedded in every buffer. */
struct devq_buffer_track {
    struct devq_use write;
    struct devq_use *reads; /* at most one (the latest) per stream */
    uint32_t nreads, capreads;
};

struct devq_tracker_counts {
    uint64_t waits_inserted, waits_elided;
};

int devq__tracker_create(const struct devq_tracker_ops *ops, void *ctx, struct devq_tracker **out);
void devq__tracker_destroy(struct devq_tracker *t);

int devq__tracker_stream_add(struct devq_tracker *t, uint32_t *id);
void devq__tracker_stream_remove(struct devq_tracker *t, uint32_t id);
uint32_t devq__tracker_stream_gen(const struct devq_tracker *t, uint32_t id);
uint64_t devq__tracker_cursor(const struct devq_tracker *t, uint32_t id);
uint64_t devq__tracker_last_synced(const struct devq_tracker *t, uint32_t dst, uint32_t src);

/* Start a unit of work on a stream; returns its cursor. */
uint64_t devq__tracker_begin(struct devq_tracker *t, uint32_t stream);
/* The use a stream's current unit stands for. */
struct devq_use devq__tracker_here(const struct devq_tracker *t, uint32_t stream);

/* Order the current unit on `stream` after use `u`; 1 if a wait was
 * inserted, 0 if elided or not needed, negative errno from align. */
int devq__tracker_require(struct devq_tracker *t, uint32_t stream, const struct devq_use *u);
/* The same, saying what the wait is for (handed to align, for logs). */
int devq__tracker_require_why(struct devq_tracker *t, uint32_t stream, const struct devq_use *u,
                              const char *why);

/* Bind a buffer use in the current unit on `stream`: resolve hazards,
 * then record the use.  Returns the waits inserted (>= 0) or an error. */
int devq__tracker_bind(struct devq_tracker *t, uint32_t stream, struct devq_buffer_track *b,
                       enum devq_access access);
int devq__tracker_bind_why(struct devq_tracker *t, uint32_t stream, struct devq_buffer_track *b,
                           enum devq_access access, const char *why);

/* bind's common case without a call: when b's last write and (for a
 * write) its reads since are on `here`'s stream or none, bind inserts no
 * wait and counts nothing, only records the use; this does exactly that
 * and returns 1.  0: nothing was done, call bind (another stream's use to
 * order after, or a first read on this stream, which may need memory).
 * `here` is devq__tracker_here() of the stream's current unit. */
static inline int devq__tracker_bind_local(struct devq_buffer_track *b, const struct devq_use *here,
                                           enum devq_access access)
{
    if (b->write.cursor && b->write.stream != here->stream)
        return 0;
    if (access & DEVQ_WRITE) {
        for (uint32_t i = 0; i < b->nreads; i++)
            if (b->reads[i].cursor && b->reads[i].stream != here->stream)
                return 0;
        b->write = *here;
        b->nreads = 0;
        return 1;
    }
    for (uint32_t i = 0; i < b->nreads; i++)
        if (b->reads[i].stream == here->stream) {
            b->reads[i] = *here;
            return 1;
        }
    return 0;
}

/* Streams whose uses of b may still be running, for a synchronous free:
 * fills up to cap uses (one per stream, latest) and returns the count. */
size_t devq__tracker_buffer_uses(const struct devq_tracker *t, const struct devq_buffer_track *b,
                                 struct devq_use *out, size_t cap);

void devq__tracker_buffer_init(struct devq_buffer_track *b);
void devq__tracker_buffer_fini(struct devq_buffer_track *b);

/* Signal producers: value v of s is produced by the current unit on
 * `stream`.  find returns 1 and the use of the earliest known producer of
 * a value >= v, or 0 when none is known (host, another device, or not yet
 * submitted).  Entries are dropped once the signal reaches their value. */
int devq__tracker_producer_add(struct devq_tracker *t, devq_signal *s, uint64_t v, uint32_t stream);
/* Room for n more producer records: after a 0, the next n producer_add
 * calls cannot fail (they prune, but never allocate), so a caller can
 * check for memory before it sends work and record the producers after
 * (straight.c: after the signal tails).  0, or -ENOMEM with the message
 * and nothing changed. */
int devq__tracker_producer_reserve(struct devq_tracker *t, size_t n);
int devq__tracker_producer_find(struct devq_tracker *t, devq_signal *s, uint64_t v, struct devq_use *out);

/* A known producer of a value >= v of s on one stream, at or after
 * cursor min_cursor (1, or 0). */
int devq__tracker_producer_on(struct devq_tracker *t, devq_signal *s, uint64_t v, uint32_t stream,
                              uint64_t min_cursor);

void devq__tracker_counts(const struct devq_tracker *t, struct devq_tracker_counts *out);

#endif
