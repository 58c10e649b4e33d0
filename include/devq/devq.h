/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq: one small interface to drive accelerators.
 *
 * Timeline signals, command queues, stream-ordered device memory and
 * automatic cross-stream ordering, over backends loaded at run time.
 * Every function returns 0 or a negative errno unless its type says
 * otherwise, and on failure sets the calling thread's devq_errmsg().
 * See devq(7). */
#ifndef DEVQ_H
#define DEVQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DEVQ_API __attribute__((visibility("default")))
#else
#define DEVQ_API
#endif

#define DEVQ_VERSION_MAJOR 0
#define DEVQ_VERSION_MINOR 1
#define DEVQ_VERSION_PATCH 0

#define DEVQ_TIMEOUT_INFINITE UINT64_MAX      /* 0 = poll */

typedef struct devq_device  devq_device;
typedef struct devq_queue   devq_queue;
typedef struct devq_signal  devq_signal;
typedef struct devq_buffer  devq_buffer;
typedef struct devq_kernel  devq_kernel;
typedef struct devq_notify  devq_notify;

DEVQ_API const char *devq_errmsg(void);        /* thread's last failure detail, never NULL */
DEVQ_API const char *devq_version(void);

/* ---- devices ---- */

/* Capability bits in devq_device_info.caps. */
#define DEVQ_CAP_KERNELS        (1ull << 0)  /* devq_kernel_load / devq_queue_exec work */
#define DEVQ_CAP_TIMING         (1ull << 1)  /* device timestamps (devq_queue_timestamp) */
#define DEVQ_CAP_ASYNC_ALLOC    (1ull << 2)  /* native stream-ordered allocator */
#define DEVQ_CAP_WAIT_VALUE     (1ull << 3)  /* device-side wait on a signal value */
#define DEVQ_CAP_WRITE_VALUE    (1ull << 4)  /* device-side write of a signal value */
#define DEVQ_CAP_HOST_VISIBLE   (1ull << 5)  /* buffers have host pointers */
#define DEVQ_CAP_COPY_ENGINE    (1ull << 6)  /* COPY queues get their own engine/stream */
#define DEVQ_CAP_PRIORITIES     (1ull << 7)  /* queue priorities are honoured */
#define DEVQ_CAP_SKIP_ON_ERROR  (1ull << 8)  /* ops after a failed op in a batch do not run */
#define DEVQ_CAP_SOFTWARE       (1ull << 9)  /* emulated on the host CPU (e.g. lavapipe): devq_device_open(NULL) tries it after cpu */
#define DEVQ_CAP_CHANNELS       (1ull << 10) /* devq_channel_* and the collective queue ops work (an engine is installed) */
#define DEVQ_CAP_KERNEL_CHECK (1ull << 11) /* devq_queue_exec checks arguments against the kernel's declared interface */
#define DEVQ_CAP_GRAPH_NATIVE (1ull << 12) /* the backend replays an instantiated graph natively (one stream hand-off per run of ops) */

typedef struct devq_device_info {
    char     backend[16];        /* "cpu", "cuda", "hip" */
    int      ordinal;
    char     name[128];
    uint64_t total_memory;
    uint64_t caps;               /* DEVQ_CAP_* bits */
    uint32_t compute_units;      /* cores / SMs / CUs; 0 if unknown */
} devq_device_info;

DEVQ_API int  devq_device_open(const char *spec, devq_device **out);   /* "cpu", "cuda:1", NULL = $DEVQ_BACKEND / first available */
DEVQ_API void devq_device_close(devq_device *dev);                     /* drops one reference */
DEVQ_API int  devq_device_info_get(devq_device *dev, devq_device_info *info);
DEVQ_API int  devq_device_synchronize(devq_device *dev, uint64_t timeout_ns);

/* ---- backends (introspection, as devq-info shows it) ---- */
typedef struct devq_backend_report {
    char     name[16];           /* backend name, or "" when the file was not loaded */
    char     path[256];          /* file tried, or "(built in)" */
    uint32_t abi_version;        /* ops table version the plugin declared, 0 if unknown */
    int      status;             /* 0 loaded; negative errno: skipped */
    uint32_t devices;            /* devices the backend reports (0 when skipped) */
    char     reason[256];        /* why skipped, or why it has no device; "" otherwise */
} devq_backend_report;
/* Fills up to cap reports (every plugin file tried, in search order) and
 * stores the total in *n. out may be NULL with cap 0 to count. */
DEVQ_API int devq_backends_report(devq_backend_report *out, size_t cap, size_t *n);

/* ---- timeline signals ---- */
DEVQ_API int      devq_signal_create(uint64_t initial, devq_signal **out);
DEVQ_API void     devq_signal_destroy(devq_signal *s);
DEVQ_API uint64_t devq_signal_value(const devq_signal *s);
DEVQ_API int      devq_signal_set(devq_signal *s, uint64_t value);      /* -EINVAL if value <= current */
DEVQ_API int      devq_signal_fail(devq_signal *s, int error);          /* error < 0; waiters get it */
DEVQ_API int      devq_signal_status(const devq_signal *s);             /* 0 or the failure */
DEVQ_API int      devq_signal_wait(devq_signal *s, uint64_t value, uint64_t timeout_ns);
enum devq_wait_mode { DEVQ_WAIT_ALL = 0, DEVQ_WAIT_ANY = 1 };
DEVQ_API int      devq_signal_wait_many(devq_signal *const *s, const uint64_t *values, size_t n,
                                        enum devq_wait_mode mode, uint64_t timeout_ns, size_t *first_ready);
typedef void (*devq_notify_fn)(void *arg, int status);         /* status 0, failure, or -ECANCELED */
DEVQ_API int      devq_signal_notify(devq_signal *s, uint64_t value, devq_notify_fn fn, void *arg,
                                     devq_notify **handle);    /* handle may be NULL */
DEVQ_API int      devq_notify_cancel(devq_notify *h);          /* 0: fn will run with -ECANCELED; -EALREADY: it ran/runs */
/* A handle taken with devq_signal_notify(..., &h) is given back exactly
 * once, by devq_notify_cancel(h) or, to keep the callback,
 * devq_notify_release(h). */
DEVQ_API int      devq_notify_release(devq_notify *h);
DEVQ_API int      devq_signal_wait_fd(devq_signal *s, uint64_t value, int *fd); /* readable when reached or failed */
DEVQ_API int      devq_signal_create_shared(uint64_t initial, devq_signal **out);
DEVQ_API int      devq_signal_export_fd(devq_signal *s, int *fd);       /* shared signals only */
DEVQ_API int      devq_signal_import_fd(int fd, devq_signal **out);
/* The calling process produces values of shared signal s: once every
 * registered producer died with a waited-for value not reached, waiters
 * fail with -EOWNERDEAD (devq_signal_create_shared(3) PRODUCERS). */
DEVQ_API int      devq_signal_add_producer(devq_signal *s);
DEVQ_API int      devq_signal_remove_producer(devq_signal *s);

/* ---- names (devq(7) NAMES) ----
 * Every message, DEVQ_LOG line and DEVQ_TRACE track names an object as
 * `signal #3` (numbered per process in creation order of the caller's
 * objects) or, once named, `signal "grads" (#3)`.  The name is copied;
 * NULL or "" clears it; longer than DEVQ_NAME_MAX bytes or holding a
 * control character is -EINVAL.  Safe while other threads use the object. */
#define DEVQ_NAME_MAX 63
DEVQ_API int devq_signal_set_name(devq_signal *s, const char *name);
DEVQ_API int devq_queue_set_name(devq_queue *q, const char *name);
DEVQ_API int devq_buffer_set_name(devq_buffer *b, const char *name);
DEVQ_API int devq_kernel_set_name(devq_kernel *k, const char *name);

/* ---- memory ---- */
enum devq_access { DEVQ_READ = 1, DEVQ_WRITE = 2, DEVQ_READ_WRITE = 3 };
DEVQ_API int    devq_buffer_alloc(devq_device *dev, size_t bytes, devq_queue *q /* NULL: synchronous */,
                                  uint32_t tag, devq_buffer **out);
DEVQ_API int    devq_buffer_free(devq_buffer *b, devq_queue *q /* NULL: the alloc queue, or synchronous */);
DEVQ_API size_t devq_buffer_size(const devq_buffer *b);
DEVQ_API void  *devq_buffer_device_ptr(const devq_buffer *b);
DEVQ_API void  *devq_buffer_host_ptr(const devq_buffer *b);             /* NULL when not host-visible */
/* 0, or the failure its last writer left (devq(7) FAILURES); the cause is in devq_errmsg() */
DEVQ_API int    devq_buffer_status(const devq_buffer *b);

typedef struct devq_mem_stats {
    uint64_t bytes_outstanding, bytes_peak, bytes_reserved, allocations, frees, pending_frees;
} devq_mem_stats;
DEVQ_API int devq_mem_stats_get(devq_device *dev, devq_mem_stats *st);
DEVQ_API int devq_mem_reap(devq_device *dev);                           /* process completed stream-ordered frees */

/* ---- kernels ---- */
DEVQ_API int  devq_kernel_load(devq_device *dev, const void *image, size_t size, const char *entry,
                               devq_kernel **out);  /* cpu: image = path of a shared object or NULL (this process) */
DEVQ_API void devq_kernel_destroy(devq_kernel *k);

typedef struct devq_arg {
    devq_buffer *buf;            /* NULL for a value argument */
    enum devq_access access;     /* for buffers */
    const void *value;           /* for values: pointer to the bytes */
    size_t size;                 /* for values */
} devq_arg;
#define DEVQ_ARG_BUF(b, acc)  ((devq_arg){ .buf = (b), .access = (acc) })
#define DEVQ_ARG_VAL(p)       ((devq_arg){ .value = (p), .size = sizeof *(p) })

typedef struct devq_launch { uint32_t global[3]; uint32_t local[3]; uint32_t shared_bytes; } devq_launch;

/* cpu kernels: called once per work-group; return 0 or a negative errno */
typedef struct devq_cpu_group {
    uint32_t group_id[3], local_size[3], global_size[3], num_groups[3];
} devq_cpu_group;
typedef int (*devq_cpu_kernel_fn)(void *const *args, const devq_cpu_group *g);
/* args[i] is the buffer's device pointer for buffers, a pointer to the value for values */

/* A cpu kernel may declare its parameters: <devq/devq_cpu.h>. */

/* ---- queues ---- */
enum devq_queue_kind { DEVQ_QUEUE_COMPUTE = 0, DEVQ_QUEUE_COPY = 1 };
typedef struct devq_queue_desc { enum devq_queue_kind kind; int priority; /* higher runs first */ } devq_queue_desc;

DEVQ_API int  devq_queue_create(devq_device *dev, const devq_queue_desc *desc /* NULL: compute, 0 */, devq_queue **out);
DEVQ_API void devq_queue_destroy(devq_queue *q);     /* waits for submitted work, then frees */
DEVQ_API int  devq_queue_wait(devq_queue *q, devq_signal *s, uint64_t value);
DEVQ_API int  devq_queue_signal(devq_queue *q, devq_signal *s, uint64_t value);
DEVQ_API int  devq_queue_exec(devq_queue *q, devq_kernel *k, const devq_arg *args, size_t nargs, const devq_launch *l);
DEVQ_API int  devq_queue_copy(devq_queue *q, devq_buffer *dst, size_t dst_off, devq_buffer *src, size_t src_off, size_t n);
DEVQ_API int  devq_queue_fill(devq_queue *q, devq_buffer *dst, size_t off, size_t n, uint8_t byte);
DEVQ_API int  devq_queue_write(devq_queue *q, devq_buffer *dst, size_t off, const void *src, size_t n); /* src read at execution */
DEVQ_API int  devq_queue_read(devq_queue *q, void *dst, devq_buffer *src, size_t off, size_t n);
DEVQ_API int  devq_queue_barrier(devq_queue *q);
DEVQ_API int  devq_queue_host_fn(devq_queue *q, void (*fn)(void *arg), void *arg);
DEVQ_API int  devq_queue_submit(devq_queue *q);      /* non-blocking; returns the batch's sticky error */
DEVQ_API int  devq_queue_finish(devq_queue *q, uint64_t timeout_ns);
DEVQ_API int  devq_barrier(devq_queue *const *queues, size_t n);        /* each waits for every other's tail */

/* ---- timing ---- */
typedef struct devq_timestamp devq_timestamp;
/* Record a device timing point in q's open batch (needs DEVQ_CAP_TIMING). */
DEVQ_API int  devq_queue_timestamp(devq_queue *q, devq_timestamp **out);
/* Device time from a to b in ns once both were reached; -EAGAIN before. */
DEVQ_API int  devq_timestamp_elapsed(const devq_timestamp *a, const devq_timestamp *b, uint64_t *ns);
DEVQ_API void devq_timestamp_destroy(devq_timestamp *ts);

/* ---- observability ---- */
typedef struct devq_stats {
    uint64_t batches_submitted, batches_completed, batches_deferred;
    uint64_t waits_inserted, waits_elided;
    uint64_t events_in_use, events_pooled;
    /* later additions, appended so the layout of the fields above stays: */
    uint64_t batches_failed;
    uint64_t wait_cycles;
    uint64_t signal_waits_aligned;   /* queue waits turned into stream waits */
    uint64_t signal_waits_dropped;   /* queue waits on values already reached */
    uint64_t signal_waits_native;    /* queue waits bridged by a device-side value wait */
    uint64_t batches_run_at_submit;  /* channel work run by the submitting thread (devq-channels(7)) */
} devq_stats;
DEVQ_API int devq_stats_get(devq_device *dev, devq_stats *st);

/* ---- channels: collectives and point-to-point across processes and machines ----
 * (API.md "Additions, v2"; DESIGN §11; devq-channels(7)) */
typedef struct devq_channel devq_channel;
typedef struct devq_channel_desc {
    int rank;                    /* -1: from the launcher (mpirun, or the backend's engine) */
    int size;                    /* -1: from the launcher */
    const void *id;              /* rendezvous id from devq_channel_id() on rank 0; NULL: the launcher's world */
    size_t id_size;
} devq_channel_desc;
DEVQ_API int  devq_channel_id(devq_device *dev, void *id, size_t *size);   /* in: capacity, out: bytes */
DEVQ_API int  devq_channel_create(devq_device *dev, const devq_channel_desc *desc /* NULL: launcher's world */,
                                  devq_channel **out);
/* Not in API.md: a channel over the program's own group, given as the
 * engine's handle (for MPI a communicator: use devq_channel_create_mpi
 * from <devq/devq_mpi.h>, which fills the handle).  Collective over it. */
DEVQ_API int  devq_channel_create_from_handle(devq_device *dev, const void *handle, size_t handle_size,
                                              devq_channel **out);
DEVQ_API int  devq_channel_split(devq_channel *ch, int color, int key, devq_channel **out);
DEVQ_API int  devq_channel_rank(const devq_channel *ch);
DEVQ_API int  devq_channel_size(const devq_channel *ch);
DEVQ_API void devq_channel_destroy(devq_channel *ch);

enum devq_dtype  { DEVQ_I8, DEVQ_U8, DEVQ_I32, DEVQ_U32, DEVQ_I64, DEVQ_U64,
                   DEVQ_F16, DEVQ_BF16, DEVQ_F32, DEVQ_F64 };
enum devq_reduce { DEVQ_SUM, DEVQ_PROD, DEVQ_MIN, DEVQ_MAX, DEVQ_AVG };

/* Recorded into the open batch like any op; src is READ, dst is WRITE
 * (READ_WRITE when dst == src), so the tracker orders them. count is in
 * elements; all_gather's dst holds size*count, reduce_scatter's src holds
 * size*count. Every rank records a channel's ops in the same order. */
DEVQ_API int devq_queue_all_reduce(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                   devq_buffer *src, size_t src_off, size_t count,
                                   enum devq_dtype type, enum devq_reduce op);
DEVQ_API int devq_queue_all_gather(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                   devq_buffer *src, size_t src_off, size_t count, enum devq_dtype type);
DEVQ_API int devq_queue_reduce_scatter(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t dst_off,
                                       devq_buffer *src, size_t src_off, size_t count,
                                       enum devq_dtype type, enum devq_reduce op);
DEVQ_API int devq_queue_broadcast(devq_queue *q, devq_channel *ch, devq_buffer *buf, size_t off,
                                  size_t count, enum devq_dtype type, int root);
DEVQ_API int devq_queue_send(devq_queue *q, devq_channel *ch, devq_buffer *src, size_t off,
                             size_t count, enum devq_dtype type, int peer);
DEVQ_API int devq_queue_recv(devq_queue *q, devq_channel *ch, devq_buffer *dst, size_t off,
                             size_t count, enum devq_dtype type, int peer);
/* Not in API.md: how long one channel op (or group) may wait for its
 * peers before it fails with -ETIMEDOUT (default 60 s; DEVQ_TIMEOUT_INFINITE). */
DEVQ_API int  devq_channel_set_timeout(devq_channel *ch, uint64_t timeout_ns);

/* ---- graphs (DEVQ_0.4): record once, submit many (devq_graph_instantiate(3)) ---- */

typedef struct devq_graph      devq_graph;       /* a recording: immutable once captured */
typedef struct devq_graph_exec devq_graph_exec;  /* an instantiated graph: submitted many times */
DEVQ_API int  devq_queue_begin_capture(devq_queue *q);                  /* builder calls on q now record into a graph; q's open batch must be empty (-EBUSY) */
DEVQ_API int  devq_queue_end_capture(devq_queue *q, devq_graph **out);  /* the recording; a sticky error of the capture is returned here and no graph is made */
DEVQ_API void devq_graph_destroy(devq_graph *g);                        /* instantiated execs stay valid */
DEVQ_API int  devq_graph_instantiate(devq_graph *g, devq_graph_exec **out);
DEVQ_API int  devq_graph_submit(devq_queue *q, devq_graph_exec *ge);    /* one batch, non-blocking, like devq_queue_submit; any queue of the graph's device */
DEVQ_API int  devq_graph_exec_set_arg(devq_graph_exec *ge, size_t op, size_t index, const devq_arg *arg);   /* op = 0-based index of the builder call in the capture */
DEVQ_API int  devq_graph_exec_set_buffer(devq_graph_exec *ge, devq_buffer *old_buf, devq_buffer *new_buf); /* rebinds every use; same size or larger, same device */
DEVQ_API int  devq_graph_exec_set_value(devq_graph_exec *ge, size_t op, uint64_t value, int64_t step);     /* a wait/signal op's value for the next submission, and what each later submission adds */
DEVQ_API void devq_graph_exec_destroy(devq_graph_exec *ge);             /* safe with submissions in flight: they finish first (or hold references) */

#ifdef __cplusplus
}
#endif
#endif /* DEVQ_H */
