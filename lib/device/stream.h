/* SPDX-License-Identifier: MIT */
/* lib's view of one backend stream.  A queue owns one; the tracker knows
 * every stream of a device by its dense id (0..n-1). */
#ifndef DEVQ_LIB_STREAM_H
#define DEVQ_LIB_STREAM_H

#include <stdint.h>
#include <devq/devq_plugin.h>

struct devq_device;

/* An event recorded just before a wait that may hold the stream up: a
 * device-side wait for a host value, or (while any such wait is on the
 * device) a wait for another stream, which may be held up by one.  Work up
 * to `cursor` is done once it is reached, whatever that wait does; other
 * streams that need only that much wait on it instead of the tail. */
struct devq_checkpoint {
    uint64_t cursor;
    devq_pl_event *ev;
};

struct devq_stream {
    struct devq_device *dev;
    devq_pl_stream *pl;
    uint32_t id;                /* dense per-device id, reused after destroy */
    uint64_t cursor;            /* batches submitted on this stream (tracker) */
    struct devq_checkpoint *cp; /* oldest first; device lock */
    uint32_t ncp, capcp;
};

#endif
