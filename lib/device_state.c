/* SPDX-License-Identifier: MIT */
/* The composition root: the one file that knows every subsystem.  It
 * sets up a device's per-subsystem state when the device is first
 * opened and tears it down when its last reference goes, and wires the
 * layers through hooks (struct devq_device_hooks), so that no lower
 * layer calls an upper one (DESIGN §10; tests/layers.sh checks it). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "channel.h"
#include "device.h"
#include "error.h"
#include "event_pool.h"
#include "log.h"
#include "mem.h"
#include "align.h"
#include "buffer.h"
#include "notifier.h"
#include "object.h"
#include "queue.h"
#include "queue_life.h"
#include "tracker.h"
#include "trace.h"
#include "value_wait.h"

static const struct devq_tracker_ops tracker_ops = { .align = devq__align_streams };

static int attach(struct devq_device *dev)
{
    int r = devq__trace_config_error();
    if (r < 0)
        return r;
    pthread_mutex_init(&dev->lock, NULL);
    r = devq__event_pool_create(dev, &dev->event_pool);
    if (r < 0)
        goto fail_lock;
    if ((r = devq__tracker_create(&tracker_ops, dev, &dev->tracker)) < 0)
        goto fail_pool;
    if ((r = devq__mem_create(dev)) < 0)
        goto fail_tracker;
    if ((r = devq__queue_state_create(dev)) < 0)
        goto fail_mem;
    devq__channel_attach(dev);
    devq__trace_device(dev);
    return 0;
fail_mem:
    devq__mem_destroy(dev);
fail_tracker:
    devq__tracker_destroy(dev->tracker);
fail_pool:
    devq__event_pool_destroy(dev->event_pool);
fail_lock:
    pthread_mutex_destroy(&dev->lock);
    return r;
}

static void log_summary(struct devq_device *dev)
{
    devq_stats st;
    if (!DEVQ_LOG_ON(DEVQ_LOG_BASIC) || devq_stats_get(dev, &st) < 0)
        return;
    devq__log(DEVQ_LOG_BASIC,
              "%s:%d: closed: batches %llu submitted, %llu completed, %llu failed, %llu deferred; "
              "waits %llu inserted, %llu elided; signal waits %llu aligned, %llu dropped; "
              "wait cycles %llu; events %llu in use, %llu pooled",
              dev->info.backend, dev->info.ordinal, (unsigned long long)st.batches_submitted,
              (unsigned long long)st.batches_completed, (unsigned long long)st.batches_failed,
              (unsigned long long)st.batches_deferred, (unsigned long long)st.waits_inserted,
              (unsigned long long)st.waits_elided, (unsigned long long)st.signal_waits_aligned,
              (unsigned long long)st.signal_waits_dropped, (unsigned long long)st.wait_cycles,
              (unsigned long long)st.events_in_use, (unsigned long long)st.events_pooled);
}

static void detach(struct devq_device *dev)
{
    log_summary(dev);
    devq__queue_state_destroy(dev);
    devq__mem_destroy(dev);
    devq__tracker_destroy(dev->tracker);
    dev->tracker = NULL;
    devq__event_pool_drain(dev, dev->event_pool);
    devq__event_pool_destroy(dev->event_pool);
    dev->event_pool = NULL;
    free(dev->streams);
    dev->streams = NULL;
    pthread_mutex_destroy(&dev->lock);
    devq__trace_flush();
}

static void order_counts(struct devq_device *dev, uint64_t *waits_inserted, uint64_t *waits_elided)
{
    struct devq_tracker_counts c;
    devq__tracker_counts(dev->tracker, &c);
    *waits_inserted = c.waits_inserted;
    *waits_elided = c.waits_elided;
}

static const struct devq_device_hooks hooks = {
    .attach = attach,
    .detach = detach,
    .pending_frees = devq__process_pending_frees,
    .buffer_caches_flush = devq__buffer_caches_flush,
    .order_counts = order_counts,
};

DEVQ_API int devq_device_open(const char *spec, devq_device **out)
{
    devq__device_set_hooks(&hooks);
    /* Objects' last releases on callback threads go to the notifier. */
    devq__object_set_deferrer(devq__notifier_post);
    return devq__registry_open(spec, out);
}
