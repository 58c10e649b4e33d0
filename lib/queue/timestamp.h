/* SPDX-License-Identifier: MIT */
/* Device timestamps: a timing event recorded in stream order
 * (timestamp.c). */
#ifndef DEVQ_LIB_TIMESTAMP_H
#define DEVQ_LIB_TIMESTAMP_H

#include <stdatomic.h>
#include <devq/devq_plugin.h>
#include "device.h"
#include "object.h"

#define DEVQ_MAGIC_TIMESTAMP 0x54494d45u /* "TIME" */

struct devq_timestamp {
    struct devq_object obj; /* refs: user + the batch until issued */
    struct devq_device *dev;
    devq_pl_event *ev;
    _Atomic int recorded; /* the event was recorded on the stream */
};

/* timestamp.c: a new timestamp of dev with its event and two references
 * (the user's and the recording batch's); discard one never recorded. */
int devq__timestamp_new(struct devq_device *dev, const char *fn, struct devq_timestamp **out);
void devq__timestamp_discard(struct devq_timestamp *ts);

#endif
