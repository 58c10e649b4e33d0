/* lib's view of one backend stream.  A queue owns one; the tracker knows
 * every stream of a device by its dense id (0..n-1). */
#ifndef DEVQ_LIB_STREAM_H
#define DEVQ_LIB_STREAM_H

#include <stdint.h>
#include <devq/devq_plugin.h>

struct devq_device;

struct devq_stream {
    struct devq_device *dev;
    devq_pl_stream *pl;
    uint32_t id;          /* dense per-device id, reused after destroy */
    uint64_t cursor;      /* batches submitted on this stream (tracker) */
};

#endif
