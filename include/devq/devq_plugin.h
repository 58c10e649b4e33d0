/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq backend plugin ABI.  See devq-plugin(7).
 *
 * A backend is a shared object exporting one symbol, devq_plugin_init.
 * libdevq calls it once with its host table; the plugin answers with a
 * pointer to a static ops table.  The table starts with abi_version, size
 * and name so that libdevq can refuse tables it does not understand
 * without touching anything else.
 *
 * Policy lives in libdevq, mechanism in the plugin: a plugin makes
 * streams, records and waits events, runs host callbacks in stream order,
 * allocates and copies memory and launches kernels.  It never decides
 * when to wait, what to free or which stream depends on which.
 *
 * Rules every plugin keeps:
 *  - Every op returns 0 or a negative errno; on failure it reports a
 *    one-line detail through host->error() (which returns its err).
 *  - Stream ops are asynchronous: they enqueue and return.
 *  - libdevq serialises calls on one stream; different streams may be
 *    driven from different threads at once.
 *  - libdevq never calls an op from inside a host callback, so a plugin
 *    may run callbacks on a driver thread where driver calls are banned.
 *  - Pointers passed to an op (args, launch, value bytes) are valid only
 *    during the call: copy what is needed later.
 */
#ifndef DEVQ_PLUGIN_H
#define DEVQ_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of struct devq_backend_ops.  Bumped only when a field changes
 * meaning; new ops are appended and found through `size`. */
#define DEVQ_PLUGIN_ABI_VERSION 1
/* Version of struct devq_host. */
#define DEVQ_HOST_ABI_VERSION 1

/* Levels for host->log. */
enum devq_log_level { DEVQ_LOG_OFF = 0, DEVQ_LOG_BASIC = 1, DEVQ_LOG_FULL = 2 };

/* Services libdevq gives plugins. */
struct devq_host {
    uint32_t abi_version;        /* DEVQ_HOST_ABI_VERSION */
    uint32_t size;               /* sizeof(struct devq_host) */
    /* Set the calling thread's devq_errmsg() and return err (negative). */
    int  (*error)(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /* Write a log line when DEVQ_LOG is at least level. */
    void (*log)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /* The log level in force, to skip building costly messages. */
    int  (*log_level)(void);
    /* Futex helpers: wait while *word == expected, until an absolute
     * CLOCK_MONOTONIC deadline in ns (UINT64_MAX: none).  Returns 0 when
     * woken or the word changed, -ETIMEDOUT at the deadline. */
    int  (*futex_wait)(const uint32_t *word, uint32_t expected, uint64_t deadline_ns);
    void (*futex_wake)(const uint32_t *word, int nwaiters);
    /* CLOCK_MONOTONIC now, ns. */
    uint64_t (*now_ns)(void);
    /* getenv that ignores the environment in setuid programs. */
    const char *(*getenv)(const char *name);
};

/* Opaque plugin objects: each plugin defines its own structs. */
typedef struct devq_pl_device devq_pl_device;
typedef struct devq_pl_stream devq_pl_stream;
typedef struct devq_pl_event  devq_pl_event;
typedef struct devq_pl_kernel devq_pl_kernel;
struct devq_cpu_signature;       /* <devq/devq_cpu.h> */
typedef struct devq_pl_value  devq_pl_value;
typedef struct devq_pl_chan   devq_pl_chan;    /* one rank of a channel (NCCL/RCCL communicator) */
typedef struct devq_pl_graph  devq_pl_graph;   /* a run of launches in the driver's reusable form */

enum devq_copy_dir { DEVQ_COPY_D2D = 0, DEVQ_COPY_H2D = 1, DEVQ_COPY_D2H = 2 };

/* event_create flags */
#define DEVQ_EVENT_TIMING 1u     /* the event can measure elapsed time */

/* A kernel argument as libdevq hands it to launch. */
struct devq_pl_arg {
    uint32_t    is_buffer;       /* 1: device_ptr is set; 0: value/size are set */
    void       *device_ptr;      /* buffer's device address */
    const void *value;           /* value bytes (valid only during launch) */
    size_t      size;            /* value size */
};

/* One launch of a launch list (launch_list, below).  args are built as
 * for launch, but a value's bytes stay valid until the list has run. */
struct devq_pl_launch_entry {
    devq_pl_kernel           *k;
    const struct devq_pl_arg *args;
    uint32_t                  nargs;   /* at most DEVQ_PL_LIST_ARGS_MAX */
    devq_launch               l;       /* no zero size: unused dimensions are 1 */
};
#define DEVQ_PL_LIST_ARGS_MAX 32

/* One declared parameter of a kernel (kernel_iface). */
enum devq_pl_param_kind {
    DEVQ_PL_PARAM_BUFFER = 1,    /* a buffer argument */
    DEVQ_PL_PARAM_VALUE  = 2,    /* a value argument of `size` bytes */
    DEVQ_PL_PARAM_BYTES  = 3,    /* `size` bytes, kind unknown (cuFuncGetParamInfo): a buffer
                                  * when size == sizeof(void *), else a value of that size */
};
struct devq_pl_param {
    uint32_t kind;               /* enum devq_pl_param_kind */
    uint32_t size;               /* value bytes; 0 for a buffer */
    uint32_t offset;             /* byte offset in the backend's value block, or UINT32_MAX */
    uint32_t reserved;           /* 0 */
};
/* kernel_iface flags */
#define DEVQ_PL_IFACE_POSITIONAL 1u  /* params[i] is argument i (cpu, cuda).  Without it,
                                      * buffers and values are matched as two sequences,
                                      * each in argument order (vulkan: bindings 0.., and
                                      * push-constant members by offset). */
struct devq_pl_kernel_iface {
    uint32_t flags;              /* DEVQ_PL_IFACE_* */
    uint32_t nparams;
    const struct devq_pl_param *params;
    uint32_t value_block;        /* bytes of value block the kernel reads (vulkan: push-constant
                                  * block size), 0 when it has none or it does not apply */
    uint32_t reserved;           /* 0 */
};

/* A host callback.  `status` is the first error of an op on this stream
 * since the previous host callback ran (0 if none); the stream's error is
 * then cleared.  A callback that returns a negative errno latches it as
 * the stream's error: with DEVQ_CAP_SKIP_ON_ERROR, ops after a latched
 * error are skipped (not run) until the next host callback, which
 * receives that error as its status.  libdevq uses this to gate batches
 * and to fail exactly the signals downstream of a failure.  When status is
 * nonzero the plugin reports the failed op's detail with host->error() on
 * the thread that runs the callback, just before calling it, so that
 * devq_errmsg() there names the root cause (e.g. which kernel failed). */
typedef int (*devq_pl_host_fn)(void *arg, int status);

/* What a stream calls inline when it reaches a signal_tail op (below):
 * fn(arg, value), on the stream's own thread, between two ops. */
typedef void (*devq_pl_tail_fn)(void *arg, uint64_t value);

/* A channel op, as lib checked it (shared with devq_engine.h): counts
 * are in elements, the ranges are in range. */
enum devq_eng_op_kind {
    DEVQ_ENG_ALL_REDUCE, DEVQ_ENG_ALL_GATHER, DEVQ_ENG_REDUCE_SCATTER,
    DEVQ_ENG_BROADCAST, DEVQ_ENG_SEND, DEVQ_ENG_RECV,
};

struct devq_eng_op {
    enum devq_eng_op_kind kind;
    void *dst;                   /* NULL for send */
    const void *src;             /* NULL for recv; == dst for broadcast and in-place ops */
    size_t count;
    enum devq_dtype type;
    enum devq_reduce op;         /* reductions; AVG is the engine's to do */
    int peer;                    /* send/recv: the other rank; broadcast: the root */
};

struct devq_backend_ops {
    uint32_t    abi_version;     /* DEVQ_PLUGIN_ABI_VERSION */
    uint32_t    size;            /* sizeof(struct devq_backend_ops) the plugin was built with */
    const char *name;            /* backend name: [a-z0-9_]{1,15} */

    /* Optional: called once before unload/exit. */
    void (*fini)(void);

    /* ---- device (required) ---- */
    /* Number of devices.  A backend whose driver is missing returns 0
     * devices and reports why through host->error() before returning
     * a negative errno (-ENODEV); libdevq shows that reason. */
    int  (*device_count)(uint32_t *count);
    int  (*device_open)(uint32_t ordinal, devq_pl_device **out);
    void (*device_close)(devq_pl_device *dev);
    /* Fill name, total_memory, caps, compute_units; libdevq fills backend
     * and ordinal. */
    int  (*device_info)(devq_pl_device *dev, devq_device_info *info);

    /* ---- stream (required) ---- */
    int  (*stream_create)(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out);
    /* Called only when everything enqueued has completed. */
    void (*stream_destroy)(devq_pl_stream *s);

    /* ---- event (required) ---- */
    int  (*event_create)(devq_pl_device *dev, uint32_t flags, devq_pl_event **out);
    void (*event_destroy)(devq_pl_event *e);
    /* Capture the stream's current tail; an event may be re-recorded. */
    int  (*event_record)(devq_pl_event *e, devq_pl_stream *s);
    /* 0: reached (or never recorded), -EAGAIN: not yet, other: error. */
    int  (*event_query)(devq_pl_event *e);
    /* Block the host until reached; -ETIMEDOUT after timeout_ns. */
    int  (*event_wait)(devq_pl_event *e, uint64_t timeout_ns);
    /* Later ops on s wait until e is reached, without blocking the host.
     * The event's recorded position is captured at call time (as in CUDA):
     * e may be re-recorded or destroyed right after this returns. */
    int  (*stream_wait_event)(devq_pl_stream *s, devq_pl_event *e);
    /* Optional (DEVQ_CAP_TIMING): device ns between two reached timing events. */
    int  (*event_elapsed)(devq_pl_event *start, devq_pl_event *end, uint64_t *ns);

    /* ---- host callback (required) ---- */
    /* Run fn(arg, status) on some host thread once every earlier op on s
     * has completed; later ops on s start only after fn returned. */
    int  (*host_fn)(devq_pl_stream *s, devq_pl_host_fn fn, void *arg);

    /* ---- signal storage (optional: DEVQ_CAP_WAIT_VALUE / DEVQ_CAP_WRITE_VALUE) ----
     * A lib signal's 64-bit value lives in host memory; a backend that can
     * wait on or write host-mapped memory from the device attaches it. */
    int  (*value_attach)(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out);
    void (*value_detach)(devq_pl_value *v);
    /* Later ops on s wait until *host_word >= value. */
    int  (*stream_wait_value)(devq_pl_stream *s, devq_pl_value *v, uint64_t value);
    /* Write value to *host_word once earlier ops on s completed. */
    int  (*stream_write_value)(devq_pl_stream *s, devq_pl_value *v, uint64_t value);

    /* ---- memory ---- */
    /* Required: synchronous allocation; *host_ptr is set when the memory
     * is host-visible (else NULL). */
    int  (*mem_alloc)(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr);
    void (*mem_free)(devq_pl_device *dev, void *device_ptr);
    /* Optional (DEVQ_CAP_ASYNC_ALLOC): stream-ordered native pool. */
    int  (*mem_alloc_async)(devq_pl_stream *s, size_t bytes, void **device_ptr);
    int  (*mem_free_async)(devq_pl_stream *s, void *device_ptr);
    /* Required: stream-ordered copy and fill.  Host pointers stay valid
     * until the op completes (libdevq guarantees it). */
    int  (*copy)(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir);
    int  (*fill)(devq_pl_stream *s, void *dst, uint8_t byte, size_t n);

    /* ---- kernel (optional: DEVQ_CAP_KERNELS) ---- */
    int  (*kernel_load)(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                        devq_pl_kernel **out);
    void (*kernel_destroy)(devq_pl_kernel *k);
    int  (*launch)(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                   const struct devq_pl_arg *args, size_t nargs);

    /* ---- channels (optional: DEVQ_CAP_CHANNELS; all nine or none) ----
     * Appended after launch: lib finds them through `size`, and a plugin
     * built before them simply has no channels.  The plugin is the
     * mechanism (the cuda and hip plugins: NCCL / RCCL, dlopen'd at the
     * first chan_id/chan_create); lib keeps the policy: which ops form a
     * group, their order, the timeout and the failure model
     * (devq-channels(7)).  Only lib's channel layer calls these.
     * device_info sets DEVQ_CAP_CHANNELS when the library can be found,
     * without loading it. */
    /* Rank 0's rendezvous id of a new group, at most *size bytes. */
    int  (*chan_id)(devq_pl_device *dev, void *id, size_t *size);
    /* Join the group: blocks until every rank joined (or fails). */
    int  (*chan_create)(devq_pl_device *dev, int rank, int size, const void *id, size_t id_size,
                        devq_pl_chan **out);
    /* Collective: every rank calls it; color >= 0 (lib checks). */
    int  (*chan_split)(devq_pl_chan *c, int color, int key, devq_pl_chan **out);
    int  (*chan_rank)(const devq_pl_chan *c);
    int  (*chan_size)(const devq_pl_chan *c);
    /* Waits for the ops enqueued (after chan_abort: only frees). */
    void (*chan_destroy)(devq_pl_chan *c);
    /* Enqueue ops[0..n) on s as one group (ncclGroupStart/End): they run
     * when s reaches them, after what was queued before.  Never blocks
     * for the peers. */
    int  (*chan_enqueue)(devq_pl_chan *c, devq_pl_stream *s, const struct devq_eng_op *ops, size_t n);
    /* 0, or the communicator's asynchronous error as a negative errno
     * with the library's text reported.  Callable from a host callback
     * (makes no driver call). */
    int  (*chan_error)(devq_pl_chan *c);
    /* Abort the communicator: its blocked ops end (with undefined data)
     * and every later chan_enqueue fails.  From any thread. */
    void (*chan_abort)(devq_pl_chan *c);
    /* ---- appended in ABI 1 (present when `size` covers them) ---- */
    /* Optional: 1 when every op queued on s so far has completed (host
     * callbacks returned) and no error is latched for the next host
     * callback; else 0.  Unlike the other ops it may be called from any
     * thread, concurrently with calls on s and with s's own progress, so
     * it must not lock, block or report: an answer that is right at some
     * moment during the call is enough.  With it, libdevq completes a
     * batch of only signals submitted behind nothing on the host, without
     * a host callback (devq-plugin(7)); without it every batch ends in a
     * host callback. */
    int  (*stream_idle)(devq_pl_stream *s);
    /* Optional: the kernel's declared interface, read from its image at
     * kernel_load (SPIR-V reflection, cuFuncGetParamInfo) or from a cpu
     * declaration.  0 and *out filled (out->params owned by the kernel,
     * valid until kernel_destroy), or -ENOTSUP when this kernel's
     * interface is unknown: libdevq then checks nothing.  libdevq reads
     * it once, after kernel_load, and checks every devq_queue_exec
     * against it (devq_queue_exec(3)), so launch never sees a mismatch. */
    int  (*kernel_iface)(devq_pl_kernel *k, struct devq_pl_kernel_iface *out);
    /* Optional (needs the kernel ops): a kernel that is a host function
     * (devq_cpu_kernel_fn) given by pointer, for devq_kernel_load_fn.
     * sig is NULL or a signature whose fn is fn (its interface is then
     * kernel_iface's answer); name is the kernel's name for messages,
     * never NULL.  The plugin keeps the object that holds fn loaded until
     * kernel_destroy and the last launch of it.  Only a backend that runs
     * kernels on the host (cpu) sets it. */
    int  (*kernel_load_fn)(devq_pl_device *dev, devq_cpu_kernel_fn fn, const struct devq_cpu_signature *sig,
                           const char *name, devq_pl_kernel **out);
    /* Optional (needs the kernel ops; a backend that sets it reports
     * DEVQ_CAP_GRAPH_NATIVE): queue e[0..n) on s as ONE stream op that
     * runs the launches in order, as n calls of launch would, for what a
     * replayed graph issues (consecutive launches with no host-visible
     * point between them).  The entries, their args and value bytes stay
     * valid and unchanged until a host callback queued on s after this
     * call has run (libdevq guarantees it), so the backend keeps
     * pointers, not copies.  A launch that fails latches its error as
     * launch does, and the rest of the list is skipped; failed (may be
     * NULL) then receives that launch's entry, stored before the error
     * reaches the next host callback, so libdevq fails only what it and
     * the skipped launches write. */
    int  (*launch_list)(devq_pl_stream *s, const struct devq_pl_launch_entry *e, size_t n,
                        const struct devq_pl_launch_entry **failed);
    /* Optional, all four or none (needs the kernel ops; a backend that
     * sets them reports DEVQ_CAP_GRAPH_NATIVE): a run of launches made
     * once, at devq_graph_instantiate, into the driver's own reusable form
     * (a CUDA or HIP graph, a Vulkan command buffer recorded for reuse, a
     * prebuilt op list) and queued as one stream op per submission.
     * graph_create: e[0..n) as launch_list's entries (the same kernel
     * limits), read during the call only: the backend copies what it
     * keeps, value bytes included.  -ENOTSUP (with host->error) when
     * this list cannot be made native here: libdevq then replays it
     * with launch_list or launch, as on a backend without these ops.
     * graph_update: entry i takes e's arguments (same kernel, same
     * dimensions: libdevq never changes those), for launches of g queued
     * after the call; launches already queued run with what they had.
     * -ENOTSUP: libdevq destroys g and creates it again.
     * graph_launch: queue g on s as ONE stream op that runs its launches
     * in order, as launch_list would.  A launch that fails latches its
     * error as launch does and the rest are skipped.  failed (may be
     * NULL) is libdevq's slot, UINT32_MAX when the call is made: a
     * backend that knows which launch failed stores its index in e[]
     * there before the error reaches the next host callback, as
     * launch_list does with its entry, so libdevq fails only what it
     * and the skipped launches write; one that does not know (a driver
     * graph) leaves it, and libdevq fails everything the run writes.
     * g stays valid while it is queued (below).
     * graph_destroy: from any thread, also while launches of g are still
     * queued or running: the backend frees g after they have run
     * (cuGraphExecDestroy's rule).  Never with a call on g in progress. */
    int  (*graph_create)(devq_pl_device *dev, const struct devq_pl_launch_entry *e, size_t n,
                         devq_pl_graph **out);
    int  (*graph_update)(devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e);
    int  (*graph_launch)(devq_pl_stream *s, devq_pl_graph *g, uint32_t *failed);
    void (*graph_destroy)(devq_pl_graph *g);
    /* Optional (needs stream_idle): queue on s an op that, when s
     * reaches it with no error latched for the next host callback,
     * calls fn(arg, value) inline, on the thread that runs s's ops, and
     * goes on; with an error latched it skips fn and leaves the error to
     * the next host callback.  It is an op, not a host callback: it
     * takes no status, clears and latches nothing, and completes like
     * any op.  fn returns quickly, never blocks and never calls the
     * backend.  libdevq queues it for the signals that end a batch it
     * knows cannot fail once its ops ran (fn sets the signal: the host
     * waiter sees it one hand-off after the stream got there, with no
     * host callback in between), and queues the batch's end host
     * callback right after it, which does the rest (devq-plugin(7)).
     * Without it every signal at a batch's end is set by that callback. */
    int  (*signal_tail)(devq_pl_stream *s, devq_pl_tail_fn fn, void *arg, uint64_t value);
};

/* The one symbol a plugin exports.  Return 0 and set *ops, or a negative
 * errno (reported with host->error) when the plugin cannot work at all.
 * host_abi is DEVQ_HOST_ABI_VERSION of the loading libdevq. */
typedef int (*devq_plugin_init_fn)(const struct devq_host *host, uint32_t host_abi,
                                   const struct devq_backend_ops **ops);
#define DEVQ_PLUGIN_INIT_SYMBOL "devq_plugin_init"

int devq_plugin_init(const struct devq_host *host, uint32_t host_abi,
                     const struct devq_backend_ops **ops);

#ifdef __cplusplus
}
#endif
#endif /* DEVQ_PLUGIN_H */
