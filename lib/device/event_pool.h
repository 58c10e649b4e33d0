/* SPDX-License-Identifier: MIT */
/* Pooled backend events, per device.  Events are reused, never leaked;
 * in-use and pooled counts appear in devq_stats. */
#ifndef DEVQ_LIB_EVENT_POOL_H
#define DEVQ_LIB_EVENT_POOL_H

#include <stdint.h>
#include <devq/devq_plugin.h>

struct devq_device;
struct devq_event_pool;

int devq__event_pool_create(struct devq_device *dev, struct devq_event_pool **out);
/* Destroy every pooled event, then the pool (every event must be back). */
void devq__event_pool_drain(struct devq_device *dev, struct devq_event_pool *p);
void devq__event_pool_destroy(struct devq_event_pool *p);
/* flags: 0 or DEVQ_EVENT_TIMING. */
int devq__event_get(struct devq_device *dev, uint32_t flags, devq_pl_event **out);
void devq__event_put(struct devq_device *dev, devq_pl_event *e, uint32_t flags);
void devq__event_pool_counts(struct devq_device *dev, uint64_t *in_use, uint64_t *pooled);
/* Shrink: destroy pooled events beyond a small reserve. */
void devq__event_pool_trim(struct devq_device *dev);

#endif
