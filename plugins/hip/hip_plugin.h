/* SPDX-License-Identifier: MIT */
/* devq-hip.so internals: the runtime table, devices and the helpers every
 * op uses.  See devq-hip(7).
 *
 * The HIP runtime API has no contexts for us to hold: each device has one
 * implicit primary context, selected per thread with hipSetDevice. */
#ifndef DEVQ_HIP_PLUGIN_H
#define DEVQ_HIP_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <hip/hip_runtime_api.h>
#include <devq/devq_plugin.h>
#include "../gpu_common/gpu_common.h"

#define HIP_HIDDEN __attribute__((visibility("hidden")))

/* Entry points, resolved by name with dlsym (HIP has no
 * cuGetProcAddress), each named once: X(name, group) is the field
 * hip_rt.name, looked up as "hip<name>", with the type of the function
 * the libamdhip64-dev headers declare; group is enum gpu_entry_group. */
#define HIP_ENTRY_POINTS(X) \
    X(GetErrorName,                 GPU_REQUIRED) \
    X(GetErrorString,               GPU_REQUIRED) \
    X(RuntimeGetVersion,            GPU_REQUIRED) \
    X(Init,                         GPU_REQUIRED) \
    X(GetDeviceCount,               GPU_REQUIRED) \
    X(DeviceGet,                    GPU_REQUIRED) \
    X(DeviceGetName,                GPU_REQUIRED) \
    X(DeviceTotalMem,               GPU_REQUIRED) \
    X(DeviceGetAttribute,           GPU_REQUIRED) \
    X(SetDevice,                    GPU_REQUIRED) \
    X(DeviceReset,                  GPU_REQUIRED) \
    X(DeviceGetStreamPriorityRange, GPU_REQUIRED) \
    X(StreamCreateWithPriority,     GPU_REQUIRED) \
    X(StreamDestroy,                GPU_REQUIRED) \
    X(StreamWaitEvent,              GPU_REQUIRED) \
    X(StreamAddCallback,            GPU_REQUIRED) \
    X(EventCreateWithFlags,         GPU_REQUIRED) \
    X(EventDestroy,                 GPU_REQUIRED) \
    X(EventRecord,                  GPU_REQUIRED) \
    X(EventQuery,                   GPU_REQUIRED) \
    X(EventElapsedTime,             GPU_REQUIRED) \
    X(Malloc,                       GPU_REQUIRED) \
    X(Free,                         GPU_REQUIRED) \
    X(MemcpyHtoDAsync,              GPU_REQUIRED) \
    X(MemcpyDtoHAsync,              GPU_REQUIRED) \
    X(MemcpyDtoDAsync,              GPU_REQUIRED) \
    X(MemsetD8Async,                GPU_REQUIRED) \
    X(ModuleLoadData,               GPU_REQUIRED) \
    X(ModuleUnload,                 GPU_REQUIRED) \
    X(ModuleGetFunction,            GPU_REQUIRED) \
    X(ModuleLaunchKernel,           GPU_REQUIRED) \
    X(MallocAsync,                  GPU_OPT_ASYNC) \
    X(FreeAsync,                    GPU_OPT_ASYNC) \
    X(HostRegister,                 GPU_OPT_MEMOPS) \
    X(HostUnregister,               GPU_OPT_MEMOPS) \
    X(HostGetDevicePointer,         GPU_OPT_MEMOPS) \
    X(StreamWaitValue64,            GPU_OPT_MEMOPS) \
    X(StreamWriteValue64,           GPU_OPT_MEMOPS)

struct hip_runtime {
    int version;                                /* hipRuntimeGetVersion */
#define HIP_FIELD(name, group) __typeof__(&hip##name) name;
    HIP_ENTRY_POINTS(HIP_FIELD)
#undef HIP_FIELD
    char missing_async[256];                    /* why ASYNC_ALLOC is off, "" if not off by a missing entry */
    char missing_memops[256];                   /* same for WAIT/WRITE_VALUE */
};

extern struct hip_runtime hip_rt HIP_HIDDEN;
extern const struct devq_host *hip_host HIP_HIDDEN;

struct devq_pl_device {
    uint32_t        ordinal;
    hipDevice_t     dev;
    pthread_mutex_t mu;            /* refs */
    int             refs;
    char            name[128];
    uint64_t        total_memory;
    uint32_t        compute_units;
    uint64_t        caps;
    int             prio_least, prio_greatest;
    /* event_wait's helper streams; a release retires them only when
     * hipDeviceReset follows (it destroys the busy ones' streams). */
    struct gpu_evwait_pool waits;
    struct gpu_loss loss;
};

struct devq_pl_stream {
    struct devq_pl_device *dev;
    hipStream_t stream;
    struct gpu_callbacks cbs;
};

struct devq_pl_event {
    struct devq_pl_device *dev;
    hipEvent_t event;
    bool       timing;
};

/* runtime.c */
int  hip_runtime_load(void);                    /* 0 or -ENODEV with the reason reported */
uint32_t hip_device_total(void);
struct devq_pl_device *hip_device_get(uint32_t ordinal);
const char *hip_err_name(hipError_t r);
/* "hipErrorX (text)", or just the name when the runtime's text is the
 * name again (ROCm 5.2 answers hipGetErrorString with the name). */
const char *hip_err_desc(hipError_t r, char *buf, size_t n);
int  hip_errno(hipError_t r);
bool hip_sticky(hipError_t r);
void hip_version_str(int v, char *buf, size_t n);

/* device.c */
/* Report a failed runtime call on dev: sticky errors mark the device lost
 * and give -EIO; others give their errno.  Returns the negative errno. */
int  hip_fail(struct devq_pl_device *dev, const char *call, hipError_t r);
void hip_mark_lost(struct devq_pl_device *dev, const char *call, hipError_t r);
/* At the top of each op: -ENODEV if lost, else make dev current on this
 * thread (hipSetDevice). */
int  hip_enter(struct devq_pl_device *dev);
int  hip_device_count(uint32_t *count);
int  hip_device_open(uint32_t ordinal, devq_pl_device **out);
void hip_device_close(devq_pl_device *dev);
int  hip_device_info(devq_pl_device *dev, devq_device_info *info);

/* stream.c */
int  hip_stream_create(devq_pl_device *dev, const devq_queue_desc *desc, devq_pl_stream **out);
void hip_stream_destroy(devq_pl_stream *s);
int  hip_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg);

/* event.c */
int  hip_event_create(devq_pl_device *dev, uint32_t flags, devq_pl_event **out);
void hip_event_destroy(devq_pl_event *e);
int  hip_event_record(devq_pl_event *e, devq_pl_stream *s);
int  hip_event_query(devq_pl_event *e);
int  hip_event_wait(devq_pl_event *e, uint64_t timeout_ns);
int  hip_stream_wait_event(devq_pl_stream *s, devq_pl_event *e);
int  hip_event_elapsed(devq_pl_event *a, devq_pl_event *b, uint64_t *ns);
/* The helper-stream pool's runtime calls (gpu_evwait_init at load). */
extern const struct gpu_evwait_driver hip_evwait_driver HIP_HIDDEN;

/* mem.c */
int  hip_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr);
void hip_mem_free(devq_pl_device *dev, void *device_ptr);
int  hip_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **device_ptr);
int  hip_mem_free_async(devq_pl_stream *s, void *device_ptr);
int  hip_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir);
int  hip_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n);

/* value.c */
int  hip_value_attach(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out);
void hip_value_detach(devq_pl_value *v);
int  hip_stream_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value);
int  hip_stream_write_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value);

/* kernel.c */
int  hip_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                     devq_pl_kernel **out);
void hip_kernel_destroy(devq_pl_kernel *k);
int  hip_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l,
                const struct devq_pl_arg *args, size_t nargs);

#endif
