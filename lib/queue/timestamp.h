/* SPDX-License-Identifier: MIT */
/* Device timestamps: a timing event recorded in stream order
 * (timestamp.c). */
#ifndef DEVQ_LIB_TIMESTAMP_H
#define DEVQ_LIB_TIMESTAMP_H

#include <stdatomic.h>
#include <devq/devq_plugin.h>
#include "device.h"
#include "object.h"

#define DEVQ_MAGIC_TIMESTAMP 0x54494d45u  /* "TIME" */

struct devq_timestamp {
    struct devq_object obj;        /* refs: user + the batch until issued */
    struct devq_device *dev;
    devq_pl_event *ev;
    _Atomic int recorded;          /* the event was recorded on the stream */
};

#endif
