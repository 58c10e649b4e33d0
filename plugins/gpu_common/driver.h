/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* The table of driver calls the GPU plugins' shared ops run on, and the
 * plugin objects those ops own.  Each plugin (cuda, hip) defines one
 * struct gpu_driver, gpu_drv, whose entries are thin adapters over its
 * driver's entry points; everything above them (devq's ops, messages,
 * device loss, callbacks) is written once in gpu_common, the way
 * libfabric's prov/util serves its providers.  An entry returns the
 * driver's own status as an int: 0 is success in both CUDA and HIP. */
#ifndef DEVQ_GPU_DRIVER_H
#define DEVQ_GPU_DRIVER_H

#include "gpu_common.h"
#include "stage.h"

/* The driver's names for its calls, quoted in messages. */
struct gpu_call_names {
    const char *make_current, *stream_create, *stream_add_callback, *stream_wait_event;
    const char *event_create, *event_record, *event_query, *event_elapsed;
    const char *mem_alloc, *mem_free, *mem_alloc_async, *mem_free_async;
    const char *copy_h2d, *copy_d2h, *copy_d2d, *fill;
    const char *host_register, *host_device_pointer, *wait_value, *write_value;
    const char *module_load, *module_get_function, *launch;
    const char *graph_create, *graph_add_kernel, *graph_instantiate, *graph_set_kernel, *graph_launch;
    const char *device_name, *total_mem, *priority_range;
};

struct gpu_attrs;

struct devq_pl_kernel;

struct gpu_driver {
    int  not_ready;                  /* the status of work not finished yet */
    int  already_registered;         /* host_register's "someone else did" */
    /* ROCm passes success to every stream callback; the event itself
     * carries a failure, so event_wait queries it once after its callback. */
    bool callback_status_unreliable;
    const char *pools_attr;          /* the attribute that turns pools on, for messages */
    const char *memops_attr;         /* the same for value waits and writes */
    const char *driver_word;         /* "driver", "runtime" */
    const char *units;               /* compute units, for the log ("SMs") */
    const char *value_ops_word;      /* value waits and writes, for the log */
    const char *text_image;          /* what a text kernel image is, for messages ("PTX image") */
    struct gpu_call_names call;
    struct gpu_nccl_glue nccl;       /* the collective library (nccl.c) */

    /* "NAME (text)" in buf. */
    const char *(*desc)(int r, char *buf, size_t n);
    /* The cause quoted when queued work failed. */
    const char *(*work_desc)(int r, char *buf, size_t n);
    int  (*to_errno)(int r);
    bool (*sticky)(int r);           /* the device is unusable until reset */
    /* The driver priority for devq's (higher runs first, 0 normal), before clamping. */
    long (*priority)(const struct devq_pl_device *dev, int devq_priority);

    /* Load the driver (called once, load.c): 0 after gpu_load_devices, or
     * the errno given to gpu_load_fail. */
    int  (*load)(void);
    /* Device ordinal's handle, or the errno given to gpu_load_fail. */
    int  (*device_handle)(int *dev, int ordinal, const char *ver);
    /* At the first open: make the device usable and current (0 or a
     * reported errno); undo_open (may be NULL) when probing it failed. */
    int  (*first_open)(struct devq_pl_device *dev);
    void (*undo_open)(struct devq_pl_device *dev);
    /* At the last close, under dev->mu. */
    void (*last_close)(struct devq_pl_device *dev);
    int  (*device_name)(char *buf, int n, int dev);
    int  (*total_mem)(size_t *bytes, int dev);
    int  (*priority_range)(int *least, int *greatest);
    /* What gpu_caps reads besides the priorities, and the compute units
     * (0 or a reported errno; the device is current). */
    int  (*attrs)(struct devq_pl_device *dev, struct gpu_attrs *a, int *units);

    int (*make_current)(struct devq_pl_device *dev);
    int (*stream_create)(void **stream, int priority);        /* non-blocking */
    int (*stream_destroy)(void *stream);
    int (*stream_add_callback)(void *stream, struct gpu_cb *cb);
    int (*stream_wait_event)(void *stream, void *event);
    int (*event_create)(void **event, bool timing);
    int (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event);
    int (*event_elapsed)(float *ms, void *start, void *end);
    int (*mem_alloc)(void **ptr, size_t bytes);
    int (*mem_free)(void *ptr);
    int (*mem_alloc_async)(void **ptr, size_t bytes, void *stream);
    int (*mem_free_async)(void *ptr, void *stream);
    int (*copy_h2d)(void *dst, const void *src, size_t n, void *stream);
    int (*copy_d2h)(void *dst, const void *src, size_t n, void *stream);
    int (*copy_d2d)(void *dst, const void *src, size_t n, void *stream);
    int (*fill)(void *dst, uint8_t byte, size_t n, void *stream);
    int (*host_register)(void *p, size_t bytes);             /* portable, mapped */
    int (*host_unregister)(void *p);
    int (*host_device_pointer)(void **dptr, void *p);
    int (*wait_value)(void *stream, void *dptr, uint64_t value);  /* until *dptr >= value */
    int (*write_value)(void *stream, void *dptr, uint64_t value);

    /* A binary kernel image, passed as it is; text gets a terminating NUL. */
    bool (*is_binary)(const void *image, size_t size);
    /* Fill k's parameters when the driver can tell them (NULL: it cannot). */
    void (*read_params)(struct devq_pl_kernel *k, const char *entry);
    int (*module_load)(void **module, const void *image);
    int (*module_get_function)(void **function, void *module, const char *entry);
    int (*module_unload)(void *module);
    int (*launch)(void *function, const struct gpu_launch *g, unsigned shared_bytes, void *stream);

    /* Graphs of kernel nodes (graph.c; the driver has them when
     * gpu_missing.graph is ""): a kernel node after dep (NULL: none)
     * with launch's arguments, copied by the driver; an executable
     * graph's node given new ones, for its later launches. */
    int (*graph_create)(void **graph);
    int (*graph_add_kernel)(void **node, void *graph, void *dep, void *function, const struct gpu_launch *g,
                            unsigned shared_bytes);
    int (*graph_instantiate)(void **exec, void *graph);
    int (*graph_set_kernel)(void *exec, void *node, void *function, const struct gpu_launch *g,
                            unsigned shared_bytes);
    int (*graph_launch)(void *exec, void *stream);
    int (*graph_exec_destroy)(void *exec);
    int (*graph_destroy)(void *graph);
};

extern const struct gpu_driver gpu_drv GPU_HIDDEN;

/* The entries every table fills from static adapters named after them
 * (each plugin's calls.c defines desc, to_errno, ..., launch). */
#define GPU_DRIVER_ADAPTERS                                                                 \
    .desc = desc, .to_errno = to_errno, .sticky = sticky, .priority = priority,             \
    .device_name = device_name, .total_mem = total_mem, .priority_range = priority_range,   \
    .make_current = make_current, .stream_create = stream_create,                           \
    .stream_destroy = stream_destroy, .stream_add_callback = add_callback,                  \
    .stream_wait_event = wait_event, .event_create = event_create,                          \
    .event_destroy = event_destroy, .event_record = event_record, .event_query = event_query, \
    .event_elapsed = event_elapsed, .mem_alloc = mem_alloc, .mem_free = mem_free,           \
    .mem_alloc_async = mem_alloc_async, .mem_free_async = mem_free_async,                   \
    .copy_h2d = copy_h2d, .copy_d2h = copy_d2h, .copy_d2d = copy_d2d, .fill = fill,         \
    .host_register = host_register, .host_unregister = host_unregister,                     \
    .host_device_pointer = host_device_pointer, .wait_value = wait_value,                   \
    .write_value = write_value, .module_load = module_load,                                 \
    .module_get_function = module_get_function, .module_unload = module_unload,             \
    .launch = launch, .graph_create = graph_create, .graph_add_kernel = graph_add_kernel,   \
    .graph_instantiate = graph_instantiate, .graph_set_kernel = graph_set_kernel,           \
    .graph_launch = graph_launch, .graph_exec_destroy = graph_exec_destroy,                 \
    .graph_destroy = graph_destroy

/* ---- the plugin objects (the ops table's opaque types) ---- */

struct devq_pl_device {
    uint32_t        ordinal;
    int             dev;           /* CUdevice, hipDevice_t */
    pthread_mutex_t mu;            /* refs, ctx */
    int             refs;
    void           *ctx;           /* cuda: the primary context while refs > 0; hip: unused */
    char            name[128];
    uint64_t        total_memory;
    uint32_t        compute_units;
    uint64_t        caps;
    int             prio_least, prio_greatest;
    /* event_wait's helper streams (see each plugin's device_close for
     * when a release retires them). */
    struct gpu_evwait_pool waits;
    struct gpu_loss loss;
    struct gpu_stage_pool stage;   /* pinned chunks for host copies (stage.c) */
};

struct devq_pl_stream {
    struct devq_pl_device *dev;
    void      *stream;             /* CUstream, hipStream_t */
    struct gpu_callbacks cbs;
};

struct devq_pl_event {
    struct devq_pl_device *dev;
    void      *event;              /* CUevent, hipEvent_t */
    bool       timing;
};

/* The ops table of a plugin on a driver table: the shared ops below. */
#define GPU_DRIVER_OPS                                                                      \
    .abi_version = DEVQ_PLUGIN_ABI_VERSION, .size = sizeof(struct devq_backend_ops),        \
    .device_count = gpu_drv_device_count, .device_open = gpu_device_open,                   \
    .device_close = gpu_device_close, .device_info = gpu_drv_device_info,                   \
    .kernel_load = gpu_kernel_load, .kernel_destroy = gpu_kernel_destroy, .launch = gpu_kernel_launch, \
    .stream_create = gpu_stream_create, .stream_destroy = gpu_stream_destroy,               \
    .event_create = gpu_event_create, .event_destroy = gpu_event_destroy,                   \
    .event_record = gpu_event_record, .event_query = gpu_event_query,                       \
    .event_wait = gpu_event_wait, .stream_wait_event = gpu_stream_wait_event,               \
    .event_elapsed = gpu_event_elapsed, .host_fn = gpu_host_fn,                             \
    .mem_alloc = gpu_mem_alloc, .mem_free = gpu_mem_free, .copy = gpu_copy, .fill = gpu_fill, \
    .value_attach = gpu_value_attach, .value_detach = gpu_value_detach,                     \
    .stream_wait_value = gpu_stream_wait_value, .stream_write_value = gpu_stream_write_value, \
    .mem_alloc_async = gpu_mem_alloc_async, .mem_free_async = gpu_mem_free_async,           \
    .graph_create = gpu_graph_create, .graph_update = gpu_graph_update,                     \
    .graph_launch = gpu_graph_launch, .graph_destroy = gpu_graph_destroy

struct devq_pl_kernel {
    struct devq_pl_device *dev;
    void      *module;             /* CUmodule, hipModule_t */
    void      *function;           /* CUfunction, hipFunction_t */
    bool       known;              /* params read (read_params) */
    uint32_t   nparams;
    struct devq_pl_param *params;
};

/* ---- load.c ---- */

/* Why a feature is off because the driver lacks an entry point ("" when
 * it is not): written by the plugin's load, quoted by the ops. */
struct gpu_missing {
    char async[256];             /* stream-ordered pools (DEVQ_CAP_ASYNC_ALLOC) */
    char memops[256];            /* value waits and writes */
    char graph[256];             /* graphs of kernel nodes (DEVQ_CAP_GRAPH_NATIVE) */
};
extern struct gpu_missing gpu_missing GPU_HIDDEN;

/* In the plugin's load: why it failed (the message every later
 * device_count/device_open gives); returns err. */
int  gpu_load_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* In the plugin's load: dlopen the library $env names, else dflt, into
 * *lib (*path: the name tried); 0, or gpu_load_fail's -ENODEV saying
 * what to install ("install the NVIDIA driver") or set. */
int  gpu_load_library(const char *env, const char *dflt, const char *install, const char **path, void **lib);
/* At the end of the plugin's load: count devices, their handles from
 * gpu_drv.device_handle; path and ver for the log. */
int  gpu_load_devices(int count, const char *path, const char *ver);
/* Load once; 0 or the load's error, reported. */
int  gpu_drv_load(void);
uint32_t gpu_drv_device_total(void);
struct devq_pl_device *gpu_drv_device_get(uint32_t ordinal);

/* ---- fail.c ---- */

/* Report a failed driver call on dev: sticky errors mark the device lost
 * and give -EIO; others give their errno.  Returns the negative errno. */
int  gpu_drv_fail(struct devq_pl_device *dev, const char *call, int r);
void gpu_drv_mark_lost(struct devq_pl_device *dev, const char *call, int r);
/* 0 when the driver call's status r is success, else gpu_drv_fail. */
int  gpu_drv_check(struct devq_pl_device *dev, const char *call, int r);
/* At the top of each op: -ENODEV if lost, else make dev current. */
int  gpu_enter(struct devq_pl_device *dev);
/* A zeroed object, or NULL with "backend: out of memory for <what>" reported. */
void *gpu_zalloc(size_t size, const char *what);

/* ---- the shared ops (open.c, event.c, stream.c, mem.c, value.c, kernel.c) ---- */

int  gpu_drv_device_count(uint32_t *count);
int  gpu_device_open(uint32_t ordinal, devq_pl_device **out);
void gpu_device_close(devq_pl_device *dev);
int  gpu_drv_device_info(devq_pl_device *dev, devq_device_info *info);

/* The helper-stream pool's driver calls (gpu_evwait_init at driver load). */
extern const struct gpu_evwait_driver gpu_evwait_drv GPU_HIDDEN;

/* ---- stage.c: host copies through pinned chunks ---- */

void gpu_stage_init(struct gpu_stage_pool *p);
/* Unregister and free every free chunk; dev is current (its last close). */
void gpu_stage_drain(struct devq_pl_device *dev);
/* Queue a copy between device memory and the caller's host memory
 * (dir H2D or D2H) that never blocks the caller, whatever the stream
 * waits for.  dev is current. */
int  gpu_stage_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, int dir);

int  gpu_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out);
void gpu_stream_destroy(devq_pl_stream *s);
int  gpu_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg);

int  gpu_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out);
void gpu_event_destroy(devq_pl_event *e);
int  gpu_event_record(devq_pl_event *e, devq_pl_stream *s);
int  gpu_event_query(devq_pl_event *e);
int  gpu_event_wait(devq_pl_event *e, uint64_t timeout_ns);
int  gpu_stream_wait_event(devq_pl_stream *s, devq_pl_event *e);
int  gpu_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns);

int  gpu_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr);
void gpu_mem_free(devq_pl_device *dev, void *device_ptr);
int  gpu_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **device_ptr);
int  gpu_mem_free_async(devq_pl_stream *s, void *device_ptr);
int  gpu_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir);
int  gpu_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n);

int  gpu_value_attach(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out);
void gpu_value_detach(devq_pl_value *v);
int  gpu_stream_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value);
int  gpu_stream_write_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value);

int  gpu_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                     devq_pl_kernel **out);
void gpu_kernel_destroy(devq_pl_kernel *k);
int  gpu_kernel_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                       const struct devq_pl_arg *args, size_t nargs);

/* graph.c: a run of launches as a driver graph, a chain of kernel nodes
 * each after the one before; -ENOTSUP (reported) without the driver's
 * graph calls. */
int  gpu_graph_create(devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t n,
                      devq_pl_graph **out);
int  gpu_graph_update(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e);
int  gpu_graph_launch(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed);
void gpu_graph_destroy(devq_pl_graph *g);

#endif
