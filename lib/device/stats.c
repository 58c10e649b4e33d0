/* SPDX-License-Identifier: MIT */
/* devq_stats_get: the device's counters and the tracker's (through the
 * order_counts hook: the tracker is in a layer above). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "event_pool.h"
#include "device.h"

/* devq_stats grew batches_run_at_submit in DEVQ_0.4.  A program linked
 * before passes the DEVQ_0.1 struct, which ends at signal_waits_native:
 * it binds devq_stats_get@DEVQ_0.1, which writes no further; programs
 * linked now bind devq_stats_get@@DEVQ_0.4 (the whole struct).  Both
 * names are in lib/libdevq.map; tests/scripts/exports.sh checks that the
 * default is the newest. */
#define DEVQ_STATS_V01_SIZE (offsetof(devq_stats, signal_waits_native) + sizeof(uint64_t))

static int stats_read(devq_device *dev, devq_stats *st);

DEVQ_API int devq__stats_get_v01(devq_device *dev, devq_stats *st);
DEVQ_API int devq__stats_get_v04(devq_device *dev, devq_stats *st);
__asm__(".symver devq__stats_get_v01, devq_stats_get@DEVQ_0.1");
__asm__(".symver devq__stats_get_v04, devq_stats_get@@DEVQ_0.4");

DEVQ_API int devq__stats_get_v01(devq_device *dev, devq_stats *st)
{
    devq_stats all;
    int r = st ? stats_read(dev, &all) : stats_read(dev, NULL);
    if (r == 0)
        memcpy(st, &all, DEVQ_STATS_V01_SIZE);
    return r;
}

DEVQ_API int devq__stats_get_v04(devq_device *dev, devq_stats *st)
{
    return stats_read(dev, st);
}

static int stats_read(devq_device *dev, devq_stats *st)
{
    int r = devq__device_check(dev, "devq_stats_get");
    if (r < 0)
        return r;
    if (!st)
        return devq__err(-EINVAL, "devq_stats_get: st is NULL");
    struct devq_device_stats *s = &dev->stats;
    uint64_t inl = atomic_load(&s->batches_inline);
    st->batches_submitted = atomic_load(&s->batches_submitted) + inl;
    st->batches_completed = atomic_load(&s->batches_completed) + inl;
    st->batches_deferred = atomic_load(&s->batches_deferred);
    st->batches_failed = atomic_load(&s->batches_failed);
    st->wait_cycles = atomic_load(&s->wait_cycles);
    st->signal_waits_aligned = atomic_load(&s->signal_waits_aligned);
    st->signal_waits_dropped = atomic_load(&s->signal_waits_dropped);
    st->signal_waits_native = atomic_load(&s->signal_waits_native);
    st->batches_run_at_submit = atomic_load(&s->batches_run_at_submit);
    pthread_mutex_lock(&dev->lock);
    devq__device_hooks()->order_counts(dev, &st->waits_inserted, &st->waits_elided);
    pthread_mutex_unlock(&dev->lock);
    devq__event_pool_counts(dev, &st->events_in_use, &st->events_pooled);
    return 0;
}
