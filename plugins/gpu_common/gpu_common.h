/* SPDX-License-Identifier: MIT */
/* What devq-cuda.so and devq-hip.so do the same way, written once over
 * no driver API and compiled into both plugins (hidden symbols, one copy
 * per plugin): the plugin init checks, device loss, capabilities from
 * probed attributes, host-callback records, the helper-stream pool that
 * gives event waits a timeout, and kernel-launch geometry
 * and arguments.  The streams, events, memory and values ops run on each
 * plugin's table of driver calls (driver.h). */
#ifndef DEVQ_GPU_COMMON_H
#define DEVQ_GPU_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <devq/devq_plugin.h>
#include "../plugin_ref.h"
#include "../analyzer.h"

#define GPU_HIDDEN __attribute__((visibility("hidden")))

/* What a driver entry point belongs to, in the plugins' entry-point
 * lists: required (loading fails without it) or an optional feature that
 * is off, with the reason kept, when any of its entries is missing. */
/* GPU_OPT_PARAMS: a kernel's parameter sizes (cuFuncGetParamInfo), for
 * DEVQ_CAP_KERNEL_CHECK; without it launches go unchecked. */
/* GPU_OPT_GRAPH: graphs of kernel nodes (the graph_* ops,
 * DEVQ_CAP_GRAPH_NATIVE); without them libdevq replays launches. */
enum gpu_entry_group { GPU_REQUIRED, GPU_OPT_ASYNC, GPU_OPT_MEMOPS, GPU_OPT_PARAMS, GPU_OPT_GRAPH };

/* ---- plugin.c ---- */

/* The host table and the backend's name ("cuda", "hip"), the prefix of
 * every message the shared code gives; set by gpu_plugin_init. */
extern const struct devq_host *gpu_host GPU_HIDDEN;
extern const char *gpu_backend GPU_HIDDEN;

/* devq_plugin_init's checks of the host; on success *ops = table. */
int gpu_plugin_init(const struct devq_host *host, uint32_t host_abi, const char *backend,
                    const struct devq_backend_ops *table, const struct devq_backend_ops **ops);

/* The ops table entries every GPU plugin fills the same way, each op
 * named <prefix>_<op> (cu_stream_create, hip_stream_create, ...). */
#define GPU_OPS_COMMON(p)                                                                                 \
    .abi_version = DEVQ_PLUGIN_ABI_VERSION, .size = sizeof(struct devq_backend_ops),                      \
    .device_count = p##_device_count, .device_open = p##_device_open, .device_close = p##_device_close,   \
    .device_info = p##_device_info, .stream_create = p##_stream_create,                                   \
    .stream_destroy = p##_stream_destroy, .event_create = p##_event_create,                               \
    .event_destroy = p##_event_destroy, .event_record = p##_event_record, .event_query = p##_event_query, \
    .event_wait = p##_event_wait, .stream_wait_event = p##_stream_wait_event,                             \
    .event_elapsed = p##_event_elapsed, .host_fn = p##_host_fn, .mem_alloc = p##_mem_alloc,               \
    .mem_free = p##_mem_free, .copy = p##_copy, .fill = p##_fill, .kernel_load = p##_kernel_load,         \
    .kernel_destroy = p##_kernel_destroy, .launch = p##_launch
/* The plugin's one exported symbol: gpu_plugin_init over its table, and
 * the host table kept in host_var.  The driver library is loaded at the
 * first device_count/device_open, not here: a machine without one still
 * loads the plugin and reports why. */
#define GPU_PLUGIN_ENTRY(name, table, host_var)                                               \
    __attribute__((visibility("default"))) int devq_plugin_init(                              \
        const struct devq_host *host, uint32_t host_abi, const struct devq_backend_ops **ops) \
    {                                                                                         \
        int err = gpu_plugin_init(host, host_abi, name, &table, ops);                         \
        if (!err)                                                                             \
            host_var = host;                                                                  \
        return err;                                                                           \
    }

/* ---- device.c ---- */

/* A device lost to a sticky driver error: set once, read without the
 * lock, cleared when the plugin has reset the device. */
struct gpu_loss {
    atomic_bool lost;
    pthread_mutex_t mu;
    char cause[256];
};

void gpu_loss_init(struct gpu_loss *l);
bool gpu_lost(struct gpu_loss *l);
/* The first cause ("call: desc") is kept and logged; later ones dropped. */
void gpu_loss_mark(struct gpu_loss *l, uint32_t ordinal, const char *call, const char *desc);
void gpu_loss_clear(struct gpu_loss *l);
/* err with "backend:N: device lost: cause" as the message. */
int gpu_loss_error(struct gpu_loss *l, uint32_t ordinal, int err);

/* A failed driver call: a sticky error marks the device lost and gives
 * -EIO; others give err.  desc is the driver's "NAME (text)". */
int gpu_fail(struct gpu_loss *l, uint32_t ordinal, const char *call, const char *desc, bool sticky, int err);

/* device_count over a plugin's lazy driver load. */
int gpu_device_count(uint32_t *count, int (*load)(void), uint32_t (*total)(void));

/* What probing found, as DEVQ_CAP_* bits.  Priority numbers follow the
 * drivers' convention: lower runs first, greatest < least when there is
 * more than one level. */
struct gpu_attrs {
    int prio_least, prio_greatest;
    int copy_engines;
    int pools;      /* stream-ordered allocation */
    int value_ops;  /* 64-bit stream waits and writes */
    int map_host;   /* host memory mapped for the device */
    int param_info; /* the driver reports each kernel's parameters */
    int graphs;     /* the driver has the graph calls (graph.c) */
};
uint64_t gpu_caps(const struct gpu_attrs *a);

void gpu_device_info(devq_device_info *info, const char *name, uint64_t total_memory, uint32_t compute_units,
                     uint64_t caps);

/* A driver stream priority clamped to [greatest, least]. */
int gpu_clamp_priority(long prio, int least, int greatest);

/* ---- hostfn.c ---- */

/* What a driver stream callback runs: the plugin's trampoline passes its
 * userData (a struct gpu_cb, first member of the record) and the status. */
struct gpu_cb {
    void (*run)(struct gpu_cb *cb, int status);
};

/* What a stream shares with its queued host callbacks. */
struct gpu_callbacks {
    atomic_int latch; /* the previous callback's error (driver thread) */
    /* lib's handle plus each queued callback: a callback may still be
     * returning when lib, told of its completion, destroys the stream. */
    struct pl_ref refs;
};

void gpu_callbacks_init(struct gpu_callbacks *cbs);
/* Drop a reference; true when it was the last: free the stream. */
bool gpu_callbacks_unref(struct gpu_callbacks *cbs);

/* One host function queued on a stream, holding a reference on it. */
struct gpu_host_call {
    struct gpu_cb cb; /* first: the driver's callback runs it (stream.c) */
    struct gpu_callbacks *cbs;
    void *stream; /* the plugin's stream, for its trampoline */
    devq_pl_host_fn fn;
    void *arg;
};

/* NULL (reported) when out of memory. */
struct gpu_host_call *gpu_host_call_new(struct gpu_callbacks *cbs, void *stream, devq_pl_host_fn fn,
                                        void *arg);
/* The driver refused to queue it. */
void gpu_host_call_cancel(struct gpu_host_call *c);
/* In the driver's callback, first: the previous callback's error, cleared. */
int gpu_host_call_latched(struct gpu_host_call *c);
/* Run the function with status and free c.  Its error is latched for the
 * next callback only: the drivers cannot skip work already queued (no
 * DEVQ_CAP_SKIP_ON_ERROR).  True when the stream's last reference went
 * with it: the caller frees the stream. */
bool gpu_host_call_finish(struct gpu_host_call *c, int status);

/* ---- evwait.c ---- */

/* A pooled helper stream for event_wait. */
struct gpu_helper {
    struct gpu_helper *next;
    void *stream;        /* the driver's stream handle */
    uint32_t generation; /* the pool's generation when it was made */
};

/* The driver calls the event-wait pool needs; each returns 0 or a
 * negative errno it has reported (through the plugin's fail path). */
struct gpu_evwait_driver {
    /* A non-blocking helper stream at the device's greatest priority. */
    int (*stream_create)(struct devq_pl_device *dev, void **stream);
    /* Destroy it (makes the device current first: called at close too). */
    void (*stream_destroy)(struct devq_pl_device *dev, void *stream);
    /* Queue on stream a wait for event, then a stream callback that runs
     * cb with the driver's status. */
    int (*arm)(struct devq_pl_device *dev, void *stream, void *event, struct gpu_cb *cb);
};

struct gpu_evwait_pool {
    /* Its own lock: a callback returns its helper here, and must not
     * wait for the device lock, which the plugin's close holds across a
     * context release or device reset (which may wait for that callback). */
    pthread_mutex_t mu;
    struct gpu_helper *idle;
    /* Retiring releases so far (a context destroyed, a device reset): a
     * helper made under an earlier generation lost its stream with it. */
    uint32_t generation;
    const struct gpu_evwait_driver *drv;
    struct devq_pl_device *dev;
};

void gpu_evwait_init(struct gpu_evwait_pool *p, const struct gpu_evwait_driver *drv,
                     struct devq_pl_device *dev);
/* Wait up to timeout_ns for event (after the plugin's own query found it
 * not reached): 0 with the driver's status in *status, or -ETIMEDOUT,
 * -ENOMEM or the driver's error, reported. */
int gpu_evwait(struct gpu_evwait_pool *p, void *event, uint64_t timeout_ns, int *status);
/* At the last close: destroy the idle helpers.  retire when the busy
 * ones' streams die too (the context is released, the device reset):
 * they are dropped when their callbacks bring them back; without it they
 * are destroyed at a later release. */
void gpu_evwait_release(struct gpu_evwait_pool *p, bool retire);

/* ---- launch.c ---- */

#define GPU_LAUNCH_SMALL 16

/* Blocks, threads per block and kernelParams for a driver launch. */
struct gpu_launch {
    unsigned grid[3], block[3];
    void **params; /* kernelParams; NULL when there are no arguments */
    void **ptrs;   /* device pointers that params[i] point at */
    void *params_small[GPU_LAUNCH_SMALL];
    void *ptrs_small[GPU_LAUNCH_SMALL];
};

/* Fill g from devq's sizes (global rounded up to whole blocks) and
 * arguments: params[i] points at argument i's value, the device pointer
 * for buffers, lib's bytes for values (the driver copies them).  0, or
 * -EINVAL/-ENOMEM reported.  g must not move until gpu_launch_release. */
int gpu_launch_prepare(struct gpu_launch *g, const devq_launch *l, const struct devq_pl_arg *args,
                       size_t nargs);
void gpu_launch_release(struct gpu_launch *g);

/* ---- nccl.c: channels over NCCL (cuda) / RCCL (hip) ---- */

/* What differs between the two: names, kept in each plugin's driver
 * table (driver.h, gpu_drv.nccl). */
struct gpu_nccl_glue {
    const char *name;    /* "NCCL", "RCCL" */
    const char *soname;  /* "libnccl.so.2", "librccl.so.1" */
    const char *env;     /* "DEVQ_NCCL_LIBRARY", "DEVQ_RCCL_LIBRARY" */
    const char *install; /* how to get it, for messages */
};

/* Whether the library can be found, without running any of it. */
bool gpu_nccl_available(void);
int gpu_nccl_id(devq_pl_device *dev, void *id, size_t *size);
int gpu_nccl_create(devq_pl_device *dev, int rank, int size, const void *id, size_t id_size,
                    devq_pl_chan **out);
int gpu_nccl_split(devq_pl_chan *c, int color, int key, devq_pl_chan **out);
int gpu_nccl_rank(const devq_pl_chan *c);
int gpu_nccl_size(const devq_pl_chan *c);
void gpu_nccl_destroy(devq_pl_chan *c);
int gpu_nccl_enqueue(devq_pl_chan *c, devq_pl_stream *s, const struct devq_eng_op *ops, size_t n);
int gpu_nccl_error(devq_pl_chan *c);
void gpu_nccl_abort(devq_pl_chan *c);

/* The ops table's channel entries (devq_plugin.h). */
#define GPU_OPS_CHANNELS                                                                      \
    .chan_id = gpu_nccl_id, .chan_create = gpu_nccl_create, .chan_split = gpu_nccl_split,     \
    .chan_rank = gpu_nccl_rank, .chan_size = gpu_nccl_size, .chan_destroy = gpu_nccl_destroy, \
    .chan_enqueue = gpu_nccl_enqueue, .chan_error = gpu_nccl_error, .chan_abort = gpu_nccl_abort

#endif
