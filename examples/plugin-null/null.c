/* SPDX-License-Identifier: MIT */
/* devq-null: the smallest complete devq backend, written only against the
 * installed <devq/devq_plugin.h>.  Start a new backend from this file.
 *
 * One device ("null:0") whose memory is ordinary host memory.  Streams are
 * synchronous: every op runs to completion before it returns, so an
 * event only needs to remember how far its stream had got (a counter),
 * and it is always reached by the time anyone asks.  Errors follow the
 * latch rules of devq_plugin.h: a failed op latches its error on the
 * stream, later copies and fills are skipped, and the next host callback
 * receives the error as its status.
 *
 * Build and try:
 *   cc -std=gnu11 -shared -fPIC $(pkg-config --cflags devq) -o devq-null.so null.c
 *   DEVQ_PLUGIN_PATH=$PWD devq-info
 * See devq-plugin(7). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq_plugin.h>

static const struct devq_host *host; /* libdevq's services: error, log, getenv */

/* The plugin's own types behind the opaque handles of the ABI. */
struct devq_pl_device {
    uint32_t ordinal;
};
struct devq_pl_stream {
    struct devq_pl_device *dev;
    uint64_t ops_done; /* ops completed on this stream */
    int error;         /* latched error, cleared by the next host callback */
};
struct devq_pl_event {
    struct devq_pl_stream *stream; /* NULL until recorded */
    uint64_t position;             /* stream's ops_done when recorded */
};

/* ---- device ---- */

static int null_device_count(uint32_t *count)
{
    *count = 1;
    return 0;
}

static int null_device_open(uint32_t ordinal, devq_pl_device **out)
{
    if (ordinal != 0)
        return host->error(-ENODEV, "null: no device %u (there is only null:0)", ordinal);
    struct devq_pl_device *d = calloc(1, sizeof *d);
    if (!d)
        return host->error(-ENOMEM, "null: out of memory opening the device");
    *out = d;
    return 0;
}

static void null_device_close(devq_pl_device *d)
{
    free(d);
}

static int null_device_info(devq_pl_device *d, devq_device_info *info)
{
    (void)d;
    /* libdevq fills backend and ordinal. */
    strcpy(info->name, "null device (host memory, synchronous)");
    info->total_memory = 0; /* unknown / unlimited */
    info->caps = DEVQ_CAP_HOST_VISIBLE | DEVQ_CAP_SKIP_ON_ERROR;
    info->compute_units = 1;
    return 0;
}

/* ---- streams ---- */

static int null_stream_create(devq_pl_device *d, const devq_queue_desc *desc, devq_pl_stream **out)
{
    (void)desc; /* no priorities, no copy engine */
    struct devq_pl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return host->error(-ENOMEM, "null: out of memory creating a stream");
    s->dev = d;
    *out = s;
    return 0;
}

static void null_stream_destroy(devq_pl_stream *s)
{
    free(s);
}

/* ---- events: counters ---- */

static int null_event_create(devq_pl_device *d, uint32_t flags, devq_pl_event **out)
{
    (void)d;
    (void)flags; /* no timing: event_elapsed is NULL */
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return host->error(-ENOMEM, "null: out of memory creating an event");
    *out = e;
    return 0;
}

static void null_event_destroy(devq_pl_event *e)
{
    free(e);
}

static int null_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    e->stream = s;
    e->position = s->ops_done;
    return 0;
}

/* Synchronous streams: the recorded position has always been passed. */
static int null_event_query(devq_pl_event *e)
{
    return (!e->stream || e->stream->ops_done >= e->position) ? 0 : -EAGAIN;
}

static int null_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    (void)timeout_ns;
    return null_event_query(e) == 0 ? 0 : host->error(-ETIMEDOUT, "null: event not reached (cannot happen)");
}

static int null_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    (void)s;
    return null_event_query(e) == 0 ? 0 : host->error(-EIO, "null: event never reached");
}

/* ---- host callbacks ---- */

static int null_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    int status = s->error;
    s->error = 0;
    int r = fn(arg, status); /* everything earlier has completed */
    if (r < 0)
        s->error = r; /* latched: later ops are skipped */
    s->ops_done++;
    return 0;
}

/* ---- memory: host memory, device pointer == host pointer ---- */

static int null_mem_alloc(devq_pl_device *d, size_t bytes, void **device_ptr, void **host_ptr)
{
    (void)d;
    /* devq-plugin(7): every allocation 256-byte aligned, as on a GPU. */
    size_t n = bytes ? (bytes + 255) & ~(size_t)255 : 256; /* C11: a multiple of 256 */
    void *p = n >= bytes ? aligned_alloc(256, n) : NULL;
    if (!p)
        return host->error(-ENOMEM, "null: cannot allocate %zu bytes", bytes);
    *device_ptr = p;
    *host_ptr = p;
    return 0;
}

static void null_mem_free(devq_pl_device *d, void *device_ptr)
{
    (void)d;
    free(device_ptr);
}

static int null_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    (void)dir; /* one address space: every direction is memmove */
    if (!s->error)
        memmove(dst, src, n);
    s->ops_done++;
    return 0;
}

static int null_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    if (!s->error)
        memset(dst, byte, n);
    s->ops_done++;
    return 0;
}

/* ---- the table and the entry point ---- */

static const struct devq_backend_ops null_ops = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "null",
    .device_count = null_device_count,
    .device_open = null_device_open,
    .device_close = null_device_close,
    .device_info = null_device_info,
    .stream_create = null_stream_create,
    .stream_destroy = null_stream_destroy,
    .event_create = null_event_create,
    .event_destroy = null_event_destroy,
    .event_record = null_event_record,
    .event_query = null_event_query,
    .event_wait = null_event_wait,
    .stream_wait_event = null_stream_wait_event,
    .host_fn = null_host_fn,
    .mem_alloc = null_mem_alloc,
    .mem_free = null_mem_free,
    .copy = null_copy,
    .fill = null_fill,
    /* Optional ops (fini, event_elapsed, value_*, stream_*_value,
     * mem_*_async, kernel_*) stay NULL: the caps above do not claim them. */
};

int devq_plugin_init(const struct devq_host *h, uint32_t host_abi, const struct devq_backend_ops **ops)
{
    /* Host tables only grow: a newer libdevq is fine, an older one lacks
     * services we call. */
    if (host_abi < 1 || h->size < sizeof(struct devq_host))
        return h->error(-ENOTSUP, "null: libdevq host ABI %u is too old (need 1)", host_abi);
    host = h;
    *ops = &null_ops;
    return 0;
}
