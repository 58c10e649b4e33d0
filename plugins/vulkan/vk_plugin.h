/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* devq-vulkan.so: shared declarations.  See devq-vulkan(7).
 *
 * A stream is a queue of the device plus its own timeline semaphore; an
 * event is a (stream, value) pair on that timeline.  Ops are recorded into
 * a command buffer that is closed into a submission when lib records an
 * event, queues a host callback or waits on another stream.  Submissions
 * are *held* in the plugin, in stream order, until they are safe to hand
 * to the queue: every earlier host callback of the stream has returned and
 * every timeline value they wait on has already been submitted.  A wait on
 * a value nobody has submitted yet would stall the whole queue (and on a
 * single-queue device, like lavapipe, every stream), so none is ever
 * submitted.  Each stream's host callbacks run on a thread of its own. */
#ifndef DEVQ_VK_PLUGIN_H
#define DEVQ_VK_PLUGIN_H

#define VK_NO_PROTOTYPES
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>
#include <devq/devq_plugin.h>
#include "../plugin_ref.h"
#include "../analyzer.h"

#define VK_HIDDEN __attribute__((visibility("hidden")))

extern const struct devq_host *vk_host VK_HIDDEN;

/* ---- loader.c: libvulkan, the instance and the entry points ---- */
#define VK_GLOBAL_FNS(X) X(vkCreateInstance) X(vkEnumerateInstanceVersion) \
    X(vkEnumerateInstanceExtensionProperties) X(vkEnumerateInstanceLayerProperties)
#define VK_INSTANCE_FNS(X) X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) \
    X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceProperties2) \
    X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties) \
    X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties) \
    X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define VK_DEVICE_FNS(X) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkQueueSubmit2) \
    X(vkDeviceWaitIdle) X(vkCreateSemaphore) X(vkDestroySemaphore) \
    X(vkGetSemaphoreCounterValue) X(vkWaitSemaphores) X(vkSignalSemaphore) \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) \
    X(vkFreeCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) \
    X(vkResetCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkCmdPipelineBarrier2) \
    X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatchBase) X(vkCmdWriteTimestamp2) \
    X(vkCmdResetQueryPool) X(vkCreateQueryPool) X(vkDestroyQueryPool) \
    X(vkGetQueryPoolResults) X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkBindBufferMemory) \
    X(vkGetBufferMemoryRequirements) X(vkCreateShaderModule) X(vkDestroyShaderModule) \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) \
    X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) \
    X(vkDestroyPipeline) X(vkCmdExecuteCommands)

#define VK_DECLARE(f) extern PFN_##f vk_##f VK_HIDDEN;
VK_GLOBAL_FNS(VK_DECLARE)
VK_INSTANCE_FNS(VK_DECLARE)
VK_DEVICE_FNS(VK_DECLARE)
extern PFN_vkCmdPushDescriptorSetKHR vk_vkCmdPushDescriptorSetKHR VK_HIDDEN;
extern PFN_vkGetMemoryHostPointerPropertiesEXT vk_vkGetMemoryHostPointerPropertiesEXT VK_HIDDEN;

extern VkInstance vk_instance VK_HIDDEN;

/* Load libvulkan.so.1 ($DEVQ_VULKAN_LIBRARY) once, and take a reference
 * on the instance (made when there is none); vk_release drops it. */
int  vk_load(void);
void vk_release(void);
/* A device opened; around its teardown: false once the process is in
 * exit(), when the teardown must be skipped (see loader.c). */
void vk_device_opened(struct devq_pl_device *d);
bool vk_teardown_begin(struct devq_pl_device *d);
void vk_teardown_end(void);
/* Device-level entry points (loader trampolines: any device). */
int  vk_load_device(void);
/* "VK_ERROR_DEVICE_LOST" etc. */
const char *vk_result_str(VkResult r);
/* Validation messages seen so far (DEVQ_VULKAN_VALIDATION). */
uint64_t vk_validation_messages(void);

/* ---- device.c ---- */
struct vk_alloc {
    uint64_t       addr;          /* devq device address (see mem.c) */
    VkDeviceSize   size;
    VkDeviceMemory mem;
    VkBuffer       buf;
    void          *map;           /* host mapping, NULL when not host-visible */
};

struct devq_pl_device {
    uint32_t          ordinal;
    VkPhysicalDevice  phys;
    VkDevice          dev;
    VkQueue          *queues;
    uint32_t          nqueues, next_queue, family;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    uint32_t          mem_type;      /* the type buffers are allocated from */
    bool              host_visible;
    /* Host copies (mem.c): import the user's pages (VK_EXT_external_memory_host,
     * unless DEVQ_VULKAN_NO_HOST_IMPORT=1), else through the mapping, else
     * through a staging buffer of staging_type (DEVQ_VULKAN_FORCE_STAGING=1
     * forces this path and leaves buffers unmapped). */
    bool              host_import, force_staging, has_staging;
    VkDeviceSize      import_align;
    uint32_t          staging_type;
    /* DEVQ_VULKAN_INJECT_DEVICE_LOST=N: the Nth submission fails with
     * VK_ERROR_DEVICE_LOST (a test switch: lavapipe never loses a device). */
    atomic_uint       submissions;
    uint32_t          inject_lost_at;
    bool              push_descriptors;
    uint32_t          features;      /* features.c: bit i = table entry i enabled */
    uint64_t          total_memory;
    char              name[128];
    /* Everything below: under mu (the queues too: vkQueueSubmit2 is
     * externally synchronised). */
    pthread_mutex_t   mu;
    struct devq_pl_stream *streams;  /* every live stream, for the pump */
    struct vk_alloc  *allocs;        /* sorted by addr */
    size_t            nallocs, cap_allocs;
    uint64_t          next_addr;
    VkBuffer          pattern;       /* 4 bytes of each byte value: fill edges */
    VkDeviceMemory    pattern_mem;
    atomic_bool       lost;
    char              lost_cause[256];
};

/* A failed Vulkan call: marks the device lost on VK_ERROR_DEVICE_LOST
 * and returns err (-ENODEV when lost) with "vulkan:N: call: VK_..." */
int  vk_fail(struct devq_pl_device *d, const char *call, VkResult r, int err);
int  vk_lost_error(struct devq_pl_device *d);
/* Under mu or not: mark the device lost with cause `why`. */
void vk_mark_lost(struct devq_pl_device *d, const char *why);

int  vk_device_count(uint32_t *count);
int  vk_device_open(uint32_t ordinal, struct devq_pl_device **out);
void vk_device_close(struct devq_pl_device *d);
int  vk_device_info(struct devq_pl_device *d, devq_device_info *info);
/* Why physical device p cannot be a devq device, "" when it can. */
void vk_device_unusable(VkPhysicalDevice p, char *why, size_t n);

/* ---- features.c: shader features, enabled at device creation ---- */
struct vk_feature_chain {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceVulkan13Features v13;
    VkPhysicalDeviceShaderClockFeaturesKHR clock;
};
struct vk_iface;
/* Fill c (pNext chain from c->f2) with what devq needs and every shader
 * feature of the table the device has; sets d->features.  clock: the
 * device has VK_KHR_shader_clock and it will be enabled. */
void vk_features_init(struct devq_pl_device *d, struct vk_feature_chain *c, bool clock);
/* 0, or -ENOTSUP naming the feature a capability of k needs. */
int  vk_features_check(struct devq_pl_device *d, const struct vk_iface *k);

/* ---- spirv.c: validation (SPIRV-Tools) and reflection (SPIRV-Cross) ---- */
#define VK_MAX_BUFFERS 64
#define VK_MAX_VALUES  64
#define VK_MAX_CAPS    64
struct vk_member { uint32_t offset, size; };
/* A kernel's interface in devq's ABI (kernel.c). */
struct vk_iface {
    uint32_t nbuf;                      /* storage buffers: bindings 0..nbuf-1 of set 0 */
    uint32_t pc_size;                   /* push-constant block bytes (0: none) */
    uint32_t nvalues;                   /* its members, by offset */
    struct vk_member values[VK_MAX_VALUES];
    uint32_t local[3];                  /* LocalSize (1 where absent) */
    uint32_t local_spec_id[3];          /* its specialization constant, or UINT32_MAX: literal */
    uint32_t ncaps;
    uint32_t caps[VK_MAX_CAPS];         /* OpCapability operands */
};
/* Validate image for Vulkan 1.3 and read its interface for entry:
 * -EINVAL with the validator's message, -ENOENT (no such entry point),
 * -EINVAL (outside devq's ABI), -ENOTSUP (a feature the device lacks). */
int  vk_spirv_check(struct devq_pl_device *d, const void *image, size_t size, const char *entry,
                    struct vk_iface *out);

/* spirv_local.c: the entry point's local size (out->local,
 * out->local_spec_id) from the words of a validated module. */
int  vk_spirv_local_size(struct devq_pl_device *d, const uint32_t *w, size_t nw, const char *entry,
                         struct vk_iface *out);

/* ---- stream.c ---- */
struct vk_wait { struct devq_pl_stream *src; uint64_t value; };

/* A command buffer handed to the queue, reusable once value is reached;
 * it holds references on the streams it waits on. */
struct vk_inflight {
    VkCommandBuffer cb;
    uint64_t value;
    struct vk_wait *waits;
    uint32_t nwaits;
    uint32_t nguses;
    struct vk_graph_use *guses;   /* graph command buffers cb executes */
};

enum vk_item_kind { VK_ITEM_SUBMIT, VK_ITEM_HOST, VK_ITEM_MEMCPY, VK_ITEM_RELEASE };

/* Work held in the plugin, in stream order. */
struct vk_item {
    struct vk_item *next;
    enum vk_item_kind kind;
    uint64_t signal;              /* the stream value this item reaches */
    /* VK_ITEM_SUBMIT */
    VkCommandBuffer cb;           /* VK_NULL_HANDLE: only waits and signals */
    struct vk_wait *waits;
    uint32_t nwaits;
    uint32_t nguses;
    struct vk_graph_use *guses;   /* graph command buffers cb executes */
    /* VK_ITEM_HOST / VK_ITEM_MEMCPY: run after `after` is reached */
    uint64_t after;
    devq_pl_host_fn fn;
    void *arg;
    void *dst;
    const void *src;
    size_t n;
    /* Any kind: freed once the item is done, run or dropped. */
    struct vk_transient *release;
};

struct devq_pl_stream {
    struct devq_pl_device *dev;
    struct devq_pl_stream *next;  /* in dev->streams */
    struct pl_ref refs;           /* lib's handle + waits of other streams (changed under mu) */
    bool destroyed;
    VkQueue queue;
    VkSemaphore sem;
    uint64_t next_value;          /* last value given out */
    uint64_t submitted;           /* values up to this are on the queue or signalled */
    VkCommandPool pool;
    VkCommandBuffer open;         /* recording, or VK_NULL_HANDLE */
    uint32_t open_ops;
    struct vk_wait *waits;        /* for the next submission */
    uint32_t nwaits, cap_waits;
    struct vk_graph_use *guses;   /* graph command buffers `open` executes */
    uint32_t nguses, cap_guses;
    struct vk_item *head, *tail;  /* held */
    bool busy;                    /* a host item is with the completion thread */
    struct vk_item *active;       /* that item, until the thread takes it */
    pthread_t thread;             /* the stream's completion thread */
    pthread_cond_t cond;          /* wakes it (with the device mutex) */
    bool thread_started, thread_failed, stopping;
    int latched;                  /* error latched by a host callback: skip */
    int status;                   /* first op error since the last callback */
    char status_msg[256];
    struct vk_inflight *inflight; /* ring, oldest first */
    size_t ninflight, cap_inflight;
    VkCommandBuffer *spare;       /* reset command buffers */
    size_t nspare, cap_spare;
    /* vk_stream_idle, read without mu: `queued` counts what was put on
     * the stream (ops, host items, waits), `clean` is `queued` as the
     * completion thread last saw it with all of it run and no error
     * latched.  Both written under mu. */
    _Atomic uint64_t queued, clean;
};

int  vk_stream_create(struct devq_pl_device *d, const devq_queue_desc *desc, struct devq_pl_stream **out);
void vk_stream_destroy(struct devq_pl_stream *s);
/* Under mu: the stream's open command buffer, begun, with a barrier
 * after the previous op; NULL (reported) on failure. */
VkCommandBuffer vk_stream_cmd(struct devq_pl_stream *s);
/* Under mu: close the open command buffer and pending waits into a held
 * submission; returns the value the stream reaches after it, or 0 with
 * *err set on failure. */
uint64_t vk_stream_flush(struct devq_pl_stream *s, int *err);
/* Under mu: queue a host item (callback or host copy) after the work
 * recorded so far. */
int  vk_stream_host_item(struct devq_pl_stream *s, enum vk_item_kind kind, devq_pl_host_fn fn, void *arg,
                         void *dst, const void *src, size_t n);
/* Under mu: a host item (VK_ITEM_MEMCPY or VK_ITEM_RELEASE) that frees t
 * once done.  On failure t is the caller's. */
int  vk_stream_release_item(struct devq_pl_stream *s, enum vk_item_kind kind, void *dst, const void *src,
                            size_t n, struct vk_transient *t);
/* Under mu: hand every held item that is now safe to the queue or the
 * completion thread. */
void vk_pump(struct devq_pl_device *d);
void vk_stream_unref(struct devq_pl_stream *s);
/* Under mu: value reached on s's timeline (0 when the device is lost). */
uint64_t vk_stream_reached(struct devq_pl_stream *s);
int  vk_stream_wait_event(struct devq_pl_stream *s, struct devq_pl_event *e);
int  vk_host_fn(struct devq_pl_stream *s, devq_pl_host_fn fn, void *arg);
/* The stream_idle op: everything queued on s ran, no error latched.
 * Any thread, lock-free. */
int  vk_stream_idle(struct devq_pl_stream *s);
/* Under mu: something more was put on s (not idle until it ran). */
void vk_stream_queued(struct devq_pl_stream *s);
/* The barrier between two consecutive ops of a stream (each op waits for
 * every earlier op's memory accesses); graphs put it between launches. */
void vk_cmd_op_barrier(VkCommandBuffer cb);

/* ---- completion.c ---- */
/* Under mu: give item (just off the head of s) to s's thread. */
/* Start s's completion thread (stream creation): 0, -EAGAIN or -ENOMEM. */
int  vk_completion_start(struct devq_pl_stream *s);
void vk_completion_push(struct devq_pl_stream *s, struct vk_item *item);
/* Without mu: stop and join s's thread; every stream's of d. */
void vk_completion_stop(struct devq_pl_stream *s);
void vk_completion_stop_all(struct devq_pl_device *d);

/* ---- event.c ---- */
struct devq_pl_event {
    struct devq_pl_device *dev;
    struct devq_pl_stream *s;     /* referenced while recorded */
    uint64_t value;
    VkQueryPool query;            /* timing events */
};
int  vk_event_create(struct devq_pl_device *d, uint32_t flags, struct devq_pl_event **out);
void vk_event_destroy(struct devq_pl_event *e);
int  vk_event_record(struct devq_pl_event *e, struct devq_pl_stream *s);
int  vk_event_query(struct devq_pl_event *e);
int  vk_event_wait(struct devq_pl_event *e, uint64_t timeout_ns);
int  vk_event_elapsed(struct devq_pl_event *a, struct devq_pl_event *b, uint64_t *ns);

/* ---- mem.c ---- */
/* A buffer over host memory for one host copy: the user's pages imported
 * or a staging allocation, freed by a host item after the copy. */
struct vk_transient {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;                    /* staging: its mapping */
};
void vk_transient_free(struct devq_pl_device *d, struct vk_transient *t);
/* device.c, after picking the memory type: the import alignment (when
 * d->host_import), the staging memory type, the test switches. */
int  vk_mem_paths_init(struct devq_pl_device *d);
int  vk_mem_alloc(struct devq_pl_device *d, size_t bytes, void **device_ptr, void **host_ptr);
void vk_mem_free(struct devq_pl_device *d, void *device_ptr);
/* Under mu: the allocation holding [addr, addr+n), NULL if none. */
struct vk_alloc *vk_mem_find(struct devq_pl_device *d, uint64_t addr, size_t n);
int  vk_mem_pattern_init(struct devq_pl_device *d);
void vk_mem_release_all(struct devq_pl_device *d);
int  vk_copy(struct devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir);
int  vk_fill(struct devq_pl_stream *s, void *dst, uint8_t byte, size_t n);

/* ---- kernel.c ---- */
int  vk_kernel_load(struct devq_pl_device *d, const void *image, size_t size, const char *entry,
                    struct devq_pl_kernel **out);
void vk_kernel_destroy(struct devq_pl_kernel *k);
int  vk_kernel_iface(struct devq_pl_kernel *k, struct devq_pl_kernel_iface *out);
int  vk_launch(struct devq_pl_stream *s, struct devq_pl_kernel *k, const devq_launch *l,
               const struct devq_pl_arg *args, size_t nargs);
/* A launch checked, its buffers resolved and its values packed, ready to
 * record (vk_launch records it once; a graph keeps it and records it
 * into each of its command buffers). */
#define VK_PC_MAX 4096                  /* the most push-constant bytes devq packs */
struct vk_pipeline;
struct vk_dispatch {
    struct vk_pipeline *p;              /* the kernel's, for this local size */
    uint32_t groups[3];
    uint32_t nbuf, pc;                  /* pc: the block's bytes, a multiple of 4 */
    VkDescriptorBufferInfo *bufs;       /* nbuf (room for VK_MAX_BUFFERS when preparing) */
    uint8_t *pcbuf;                     /* pc (room for VK_PC_MAX when preparing) */
};
/* Under mu: check k's launch l with args (as vk_launch does) into x. */
int  vk_dispatch_prepare(struct devq_pl_kernel *k, const devq_launch *l, const struct devq_pl_arg *args,
                         size_t nargs, struct vk_dispatch *x);
/* Bind, push and dispatch x into cb (any level). */
void vk_dispatch_record(VkCommandBuffer cb, struct devq_pl_device *d, const struct vk_dispatch *x);

/* ---- graph.c: native graph runs (the graph_* ops) ---- */
/* One launch of a graph's command buffer by a stream's primary: held by
 * the primary (open, held, in flight) until it completed and was reset
 * or dropped; then vk_graph_uses_release. */
struct vk_graph_use { struct devq_pl_graph *g; uint32_t cb; };
int  vk_graph_create(struct devq_pl_device *d, const struct devq_pl_launch_entry *e, size_t n,
                     struct devq_pl_graph **out);
int  vk_graph_update(struct devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e);
int  vk_graph_launch(struct devq_pl_stream *s, struct devq_pl_graph *g, uint32_t *failed);
void vk_graph_destroy(struct devq_pl_graph *g);
/* Under mu: the primary holding u[0..n) is done with them; frees u. */
void vk_graph_uses_release(struct vk_graph_use *u, uint32_t n);

#endif
