/* SPDX-License-Identifier: MIT */
/* DEVQ_TRACE=file.json: a Chrome trace-event file (opens in Perfetto and
 * chrome://tracing).  One process per device, one thread (track) per
 * queue, a slice per op timed on the stream (host callbacks around each
 * op: exact on the cpu backend, host-observed on GPUs), a flow arrow for
 * every wait the tracker inserted, counters for bytes outstanding.  Kept
 * in memory up to DEVQ_TRACE_MAX bytes and written whole (temp file +
 * rename) when the last device closes and at exit, so the file is always
 * valid JSON. */
#ifndef DEVQ_LIB_TRACE_H
#define DEVQ_LIB_TRACE_H

#include <stdint.h>

struct devq_device;
struct devq_queue;

/* 0 when tracing is off (cheap: one load after the first call). */
int devq__trace_on(void);
/* Malformed DEVQ_TRACE_MAX: -EINVAL with detail (reported at device open). */
int devq__trace_config_error(void);
uint64_t devq__trace_now(void);

void devq__trace_device(struct devq_device *dev);
/* Name a queue's track; again after a rename (the last name wins in
 * Perfetto, chrome://tracing and devq-trace-svg). */
void devq__trace_track(const struct devq_device *dev, uint32_t track, const char *name);
/* A slice on a queue's track (the queue's name number) of dev,
 * [begin, end) in devq__trace_now() units.  Given the device and track,
 * not the queue, so base/ never includes the queue layer's headers. */
void devq__trace_slice(const struct devq_device *dev, uint32_t track, const char *name, const char *arg_name,
                       uint64_t arg, uint64_t begin, uint64_t end);
/* Flow arrow halves: id from devq__trace_flow_id(). */
uint64_t devq__trace_flow_id(void);
void devq__trace_flow(const struct devq_device *dev, uint32_t stream_track, uint64_t id, int start,
                      uint64_t ts);
void devq__trace_counter(const struct devq_device *dev, const char *name, uint64_t value, uint64_t ts);
/* Write the file now (last device close; atexit). */
void devq__trace_flush(void);

#endif
