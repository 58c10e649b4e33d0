/* SPDX-License-Identifier: MIT */
/* The device registry's objects.  One devq_device per (backend, ordinal),
 * shared and refcounted; see device.c (registry) and plugin.c (loader). */
#ifndef DEVQ_LIB_DEVICE_H
#define DEVQ_LIB_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <devq/devq_plugin.h>
#include "object.h"

#define DEVQ_MAGIC_DEVICE 0x44455631u /* "DEV1" */

struct devq_tracker;
struct devq_mem;
struct devq_event_pool;
struct devq_queue_state;

/* A loaded backend (one plugin file, or the built-in cpu backend). */
struct devq_backend {
    const struct devq_backend_ops *ops;
    char name[16];
    char path[256];
    void *dl; /* dlopen handle; NULL for built-in */
    uint32_t ndevices;
    int count_status;           /* device_count's result */
    char count_reason[256];     /* why 0 devices */
    pthread_mutex_t open_lock;  /* serialises first open of each slot */
    struct devq_device **slots; /* [ndevices], published with atomics */
};

struct devq_device_stats {
    /* Counted by submitting threads (under the device lock, mostly). */
    _Atomic uint64_t batches_submitted, batches_deferred;
    _Atomic uint64_t waits_inserted, waits_elided, wait_cycles;
    _Atomic uint64_t signal_waits_aligned, signal_waits_dropped, signal_waits_native;
    /* Batches completed at submit (lib/queue/inline.c): one count for both
     * submitted and completed, which devq_stats_get adds it to. */
    _Atomic uint64_t batches_inline;
    /* Batches of host work (channel ops) the submitting thread ran
     * (inline.c): to the end, or until a peer was late and the stream
     * took the rest; counted in submitted and completed the normal way
     * too. */
    _Atomic uint64_t batches_run_at_submit;
    /* Counted by completion callbacks on the streams' threads: at least a
     * cache line away from the above, which a submit adds to every batch
     * (they shared a line, moving it between the two cores twice a batch),
     * and from what follows (the device's `lost` flag, which every
     * recording call reads, shared their line until 2026-11-28: the first
     * call of each batch waited for it to come back from the core that
     * completed the last one). */
    char apart_[64];
    _Atomic uint64_t batches_completed, batches_failed;
    char apart_after_[64];
};

struct devq_device {
    /* magic: 0 while the registry opens it, DEVQ_MAGIC_DEVICE once open,
     * DEVQ_MAGIC_CLOSED after; refs: the user's + queues', buffers',
     * kernels' (devq_device_close drops one; the last runs destroy). */
    struct devq_object obj;
    struct devq_backend *backend;
    const struct devq_backend_ops *ops; /* == backend->ops */
    devq_pl_device *pl;
    uint32_t ordinal;
    /* The fork generation and process it was opened in (fork.h): in a
     * child the parent's device is refused and the registry opens anew. */
    unsigned fork_gen;
    int pid;
    devq_device_info info;

    /* Set up by the composition root's attach (device_state.c): the
     * device lock, the stream table, and one typed pointer per
     * subsystem, each struct in its owner's header. */
    pthread_mutex_t lock;         /* streams, tracker, queue state */
    struct devq_stream **streams; /* by tracker stream id */
    uint32_t streams_cap;
    struct devq_tracker *tracker;       /* order/tracker.h */
    struct devq_event_pool *event_pool; /* device/event_pool.h */
    struct devq_mem *mem;               /* mem/mem.h */
    struct devq_queue_state *qs;        /* queue/queue.h */
    struct devq_device_stats stats;

    /* Device loss: once set, every call returns -ENODEV with lost_msg. */
    _Atomic int lost;
    char lost_msg[256];
};

/* What the layers above the registry do with a device: the composition
 * root (lib/device_state.c) installs them before it opens any device, so
 * the registry never calls upward (DESIGN §10).  attach runs once after
 * the plugin opened the device and before it is published, detach once
 * when the last reference is dropped (before the plugin's close);
 * pending_frees runs stream-ordered frees that waited (device lock held). */
struct devq_device_hooks {
    int (*attach)(struct devq_device *dev);
    void (*detach)(struct devq_device *dev);
    void (*pending_frees)(struct devq_device *dev);
    /* Give the buffers the queues keep for reuse back to the memory
     * stack and settle their counts (device lock held). */
    void (*buffer_caches_flush)(struct devq_device *dev);
    /* The tracker's counts (lib/order, above this layer), for
     * devq_stats_get (device lock held). */
    void (*order_counts)(struct devq_device *dev, uint64_t *waits_inserted, uint64_t *waits_elided);
};
void devq__device_set_hooks(const struct devq_device_hooks *hooks);
const struct devq_device_hooks *devq__device_hooks(void);
/* The registry's open ("cpu", "cuda:1", NULL = $DEVQ_BACKEND / first
 * available); devq_device_open() installs the hooks and calls it. */
int devq__registry_open(const char *spec, devq_device **out);
/* Make a stream reachable by its tracker id (device lock held). */
struct devq_stream;
int devq__device_stream_register(struct devq_device *dev, struct devq_stream *st);

/* Take another reference (queues and buffers hold one). */
void devq__device_retain(struct devq_device *dev);

/* Validate a public handle: NULL or a bad magic is -EINVAL naming `fn`. */
int devq__device_check(const struct devq_device *dev, const char *fn);

/* Whether the calling thread is running a user's host function on a
 * stream's callback thread (devq_queue_host_fn): there it must not wait
 * for a device lock (its holder may be waiting for that stream) nor make
 * backend stream calls (CUDA forbids driver calls in stream callbacks).
 * Set by the queue layer around the user's function. */
int devq__in_host_fn(void);
void devq__set_in_host_fn(int on);

/* Mark the device lost with a cause (first cause wins). */
void devq__device_set_lost(struct devq_device *dev, const char *cause);
/* 0, or -ENODEV "device lost: <cause>" when the device was lost. */
int devq__device_lost_check(struct devq_device *dev);

/* Loader (plugin.c): load every plugin once; find a backend by name. */
int devq__backends_load(void);
/* Registers the built-in cpu backend if not yet: 0, or a transient error
 * (out of memory) with its message; tried again on the next call. */
int devq__builtin_load(void);
struct devq_backend *devq__backend_find(const char *name);
size_t devq__backend_count(void);
struct devq_backend *devq__backend_at(size_t i);

#endif
