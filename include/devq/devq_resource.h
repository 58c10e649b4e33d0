/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq memory resources.  See devq_resource(3).
 *
 * A resource is a small vtable plus state that hands out device memory.
 * Bases get memory from the backend (direct, the devq pool, the backend's
 * native async pool); decorators wrap another resource and add a policy
 * (budget, stats, logging, guard).  Each device owns one stack, built
 * from the environment when the device opens, replaceable with
 * devq_device_set_resource().  devq_buffer_alloc/free go through it.
 *
 * Streams.  Resources see the backend stream an allocation is ordered on
 * as an opaque devq_stream_ref (lib's per-device stream; each queue owns
 * one).  NULL means "no stream": the allocation or free is synchronous
 * and the memory is idle when the call returns.  devq_stream_ref_id()
 * gives the stream's dense per-device id (for tables and logs); ids are
 * reused after a queue is destroyed, which resources learn through the
 * stream_gone hook.
 *
 * Every function returns 0 or a negative errno unless its type says
 * otherwise, and sets devq_errmsg() on failure.  Resources are
 * thread-safe: every built-in resource may be called from any thread. */
#ifndef DEVQ_RESOURCE_H
#define DEVQ_RESOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct devq_resource devq_resource;
typedef struct devq_stream devq_stream_ref;   /* opaque; NULL: synchronous */

#define DEVQ_STREAM_NONE UINT32_MAX
/* Dense per-device id of a stream, DEVQ_STREAM_NONE for NULL. */
DEVQ_API uint32_t devq_stream_ref_id(const devq_stream_ref *s);

/* ---- writing a resource ----
 * Fill a static devq_resource_ops and call devq_resource_create().  Every
 * entry receives the `state` pointer given to devq_resource_create.
 * allocate and deallocate are required; the rest may be NULL (lib then
 * supplies the documented default).  abi_version and size let newer
 * libdevq versions append entries: lib reads only the first `size` bytes. */
#define DEVQ_RESOURCE_ABI_VERSION 1

struct devq_resource_ops {
    uint32_t    abi_version;     /* DEVQ_RESOURCE_ABI_VERSION */
    uint32_t    size;            /* sizeof(struct devq_resource_ops) */
    const char *name;            /* short, for logs and messages */

    /* Hand out `bytes` (> 0) usable in the order of `stream`.  *host_ptr:
     * host address of the same memory, or NULL when not host-visible. */
    int  (*allocate)(void *state, size_t bytes, devq_stream_ref *stream, uint32_t tag,
                     void **device_ptr, void **host_ptr);
    /* Give back memory from allocate, with the same bytes.  With a stream,
     * the memory may still be in use by work queued on it: it may be reused
     * on that stream at once, elsewhere only once the stream reaches this
     * point.  NULL stream: the memory is idle now. */
    int  (*deallocate)(void *state, void *device_ptr, size_t bytes, devq_stream_ref *stream,
                       uint32_t tag);
    /* Bytes handed out and not given back.  NULL: lib counts them. */
    uint64_t (*bytes_outstanding)(void *state);
    /* Complete stream-ordered frees whose stream has reached them.  NULL: nothing pending. */
    int  (*reap_pending)(void *state);
    /* Nonzero when prepare_use/finish_use really order cross-stream uses.  NULL: 0. */
    int  (*supports_use_tracking)(void *state);
    /* Before work on `stream` touches the memory: make the stream wait for
     * earlier conflicting uses.  After it is queued: record this use.
     * A resource that cannot track uses must return -ENOTSUP with a
     * message, never 0 (a silent success would let a stream reuse memory
     * another still reads).  NULL: lib returns -ENOTSUP. */
    int  (*prepare_use)(void *state, void *device_ptr, devq_stream_ref *stream,
                        enum devq_access access);
    int  (*finish_use)(void *state, void *device_ptr, devq_stream_ref *stream,
                       enum devq_access access);
    /* Release cached memory that nothing uses back to the backend.  NULL: nothing cached. */
    int  (*trim)(void *state);
    /* `stream` is about to be destroyed (its id will be reused): settle
     * what is pending on it.  NULL: nothing to do. */
    void (*stream_gone)(void *state, devq_stream_ref *stream);
    /* Fill the fields of *st this resource knows; st arrives zeroed or
     * filled by the layer below.  NULL: lib fills bytes_outstanding. */
    int  (*stats)(void *state, devq_mem_stats *st);
    /* Release the state (and any resource it wraps). */
    void (*destroy)(void *state);
};

/* Wrap ops+state into a resource for dev.  On success the resource owns
 * state (ops->destroy runs at devq_resource_destroy).  The entries must be
 * thread-safe; calls naming the same stream are never concurrent, so an
 * entry may queue work on that stream.  Destroy a resource before closing
 * its device. */
DEVQ_API int  devq_resource_create(devq_device *dev, const struct devq_resource_ops *ops,
                                   void *state, devq_resource **out);
DEVQ_API void devq_resource_destroy(devq_resource *r);   /* NULL is a no-op */
DEVQ_API void *devq_resource_state(const devq_resource *r);
DEVQ_API const char *devq_resource_name(const devq_resource *r);
/* The resource a decorator wraps (NULL for a base or a user resource). */
DEVQ_API devq_resource *devq_resource_inner(const devq_resource *r);

/* ---- bases ---- */
/* Synchronous backend allocation per call; stream frees wait for their
 * stream in a pending list (reaped by later calls). */
DEVQ_API int devq_resource_direct(devq_device *dev, devq_resource **out);
/* devq's stream-ordered pool: size-class bins, per-stream free lists,
 * cross-stream reuse only once the free's fence is reached. */
DEVQ_API int devq_resource_pool(devq_device *dev, devq_resource **out);
/* The backend's own stream-ordered allocator (-ENOTSUP without
 * DEVQ_CAP_ASYNC_ALLOC). */
DEVQ_API int devq_resource_native(devq_device *dev, devq_resource **out);

/* ---- decorators: on success they own `inner` ---- */
DEVQ_API int devq_resource_budget(devq_resource *inner, uint64_t limit, devq_resource **out);
DEVQ_API int devq_resource_stats(devq_resource *inner, devq_resource **out);
DEVQ_API int devq_resource_logging(devq_resource *inner, const char *csv_path, devq_resource **out);
DEVQ_API int devq_resource_guard(devq_resource *inner, devq_resource **out);

/* ---- using a resource ---- */
DEVQ_API int devq_resource_allocate(devq_resource *r, size_t bytes, devq_stream_ref *stream,
                                    uint32_t tag, void **device_ptr, void **host_ptr);
DEVQ_API int devq_resource_deallocate(devq_resource *r, void *device_ptr, size_t bytes,
                                      devq_stream_ref *stream, uint32_t tag);
DEVQ_API uint64_t devq_resource_bytes_outstanding(devq_resource *r);
DEVQ_API int devq_resource_reap(devq_resource *r);
DEVQ_API int devq_resource_trim(devq_resource *r);
DEVQ_API int devq_resource_supports_use_tracking(devq_resource *r);  /* 1 or 0 */
DEVQ_API int devq_resource_prepare_use(devq_resource *r, void *device_ptr, devq_stream_ref *stream,
                                       enum devq_access access);
DEVQ_API int devq_resource_finish_use(devq_resource *r, void *device_ptr, devq_stream_ref *stream,
                                      enum devq_access access);
DEVQ_API int devq_resource_stats_get(devq_resource *r, devq_mem_stats *st);

/* Usage by tag and by stream, from the first stats decorator in r's chain
 * (-ENOENT when r has none).  stream_id DEVQ_STREAM_NONE: synchronous use. */
typedef struct devq_mem_usage {
    uint64_t current, peak, count;   /* bytes now, highest bytes, allocations */
} devq_mem_usage;
DEVQ_API int devq_resource_usage_by_tag(devq_resource *r, uint32_t tag, devq_mem_usage *u);
DEVQ_API int devq_resource_usage_by_stream(devq_resource *r, uint32_t stream_id, devq_mem_usage *u);

/* ---- the device's stack ---- */
/* Install r (built for dev) as dev's stack; dev owns it from then on and
 * destroys the previous one.  -EBUSY while allocations are outstanding or
 * stream-ordered frees are pending on the current stack. */
DEVQ_API int devq_device_set_resource(devq_device *dev, devq_resource *r);
/* The top of dev's stack (borrowed: valid until the next set_resource or close). */
DEVQ_API devq_resource *devq_device_resource(devq_device *dev);

#ifdef __cplusplus
}
#endif
#endif /* DEVQ_RESOURCE_H */
