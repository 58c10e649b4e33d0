/* SPDX-License-Identifier: MIT */
/* "fake": a small, honest in-memory backend for the loader and registry
 * tests.  Streams run each op at once on the caller's thread, memory is
 * host memory, events are always reached.  What it adds is observability
 * and fault injection, through exported variables that a test reaches
 * with dlopen(RTLD_NOLOAD) + dlsym:
 *   devq_fake_open_calls / devq_fake_close_calls   plugin calls counted
 *   devq_fake_fail_opens     the next N device_open calls fail (-EIO)
 *   devq_fake_open_delay_us  device_open sleeps this long (widens races)
 * and through the environment, read at device_count:
 *   DEVQ_FAKE_DEVICES=N            device count (default 2)
 *   DEVQ_FAKE_DRIVER_MISSING=1     behave like a backend without driver
 * and at device_info:
 *   DEVQ_FAKE_CAPS=0xN             extra caps bits, e.g. 0x200 for a software
 *                                  device (lavapipe's kind) or bits devq-info
 *                                  has no name for */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq_plugin.h>

_Atomic int devq_fake_open_calls;
_Atomic int devq_fake_close_calls;
_Atomic int devq_fake_fail_opens;
_Atomic int devq_fake_open_delay_us;

static const struct devq_host *host;

struct devq_pl_device {
    uint32_t ordinal;
};
struct devq_pl_stream {
    struct devq_pl_device *dev;
    int error;
};
struct devq_pl_event {
    int unused;
};

static int fake_device_count(uint32_t *count)
{
    const char *missing = host->getenv("DEVQ_FAKE_DRIVER_MISSING");
    if (missing && *missing == '1') {
        *count = 0;
        return host->error(-ENODEV, "fake: libfake.so.1 not found (DEVQ_FAKE_DRIVER_MISSING=1)");
    }
    const char *n = host->getenv("DEVQ_FAKE_DEVICES");
    *count = n && *n ? (uint32_t)strtoul(n, NULL, 10) : 2;
    return 0;
}

static int fake_device_open(uint32_t ordinal, devq_pl_device **out)
{
    atomic_fetch_add(&devq_fake_open_calls, 1);
    int delay = atomic_load(&devq_fake_open_delay_us);
    if (delay > 0) {
        struct timespec ts = { delay / 1000000, (long)(delay % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
    int fail = atomic_load(&devq_fake_fail_opens);
    while (fail > 0 && !atomic_compare_exchange_weak(&devq_fake_fail_opens, &fail, fail - 1))
        ;
    if (fail > 0)
        return host->error(-EIO, "fake:%u: device_open failed on request (devq_fake_fail_opens)", ordinal);
    struct devq_pl_device *d = calloc(1, sizeof *d);
    if (!d)
        return host->error(-ENOMEM, "fake: out of memory");
    d->ordinal = ordinal;
    *out = d;
    return 0;
}

static void fake_device_close(devq_pl_device *d)
{
    atomic_fetch_add(&devq_fake_close_calls, 1);
    free(d);
}

static int fake_device_info(devq_pl_device *d, devq_device_info *info)
{
    static const char *const names[] = { "fake device zero", "fake device one" };
    strcpy(info->name, d->ordinal < 2 ? names[d->ordinal] : "fake device");
    info->total_memory = 1ull << 30;
    info->caps = DEVQ_CAP_HOST_VISIBLE;
    const char *extra = host->getenv("DEVQ_FAKE_CAPS");
    if (extra && *extra)
        info->caps |= strtoull(extra, NULL, 0);
    info->compute_units = 1;
    return 0;
}

static int fake_stream_create(devq_pl_device *d, const devq_queue_desc *desc, devq_pl_stream **out)
{
    (void)desc;
    struct devq_pl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return host->error(-ENOMEM, "fake: out of memory");
    s->dev = d;
    *out = s;
    return 0;
}

static void fake_stream_destroy(devq_pl_stream *s)
{
    free(s);
}

static int fake_event_create(devq_pl_device *d, uint32_t flags, devq_pl_event **out)
{
    (void)d;
    (void)flags;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : host->error(-ENOMEM, "fake: out of memory");
}

static void fake_event_destroy(devq_pl_event *e)
{
    free(e);
}
/* Every op has completed when it returns, so every event is reached. */
static int fake_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    (void)e;
    (void)s;
    return 0;
}
static int fake_event_query(devq_pl_event *e)
{
    (void)e;
    return 0;
}
static int fake_event_wait(devq_pl_event *e, uint64_t t)
{
    (void)e;
    (void)t;
    return 0;
}
static int fake_stream_wait_event(devq_pl_stream *s, devq_pl_event *e)
{
    (void)s;
    (void)e;
    return 0;
}

static int fake_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    int status = s->error;
    s->error = 0;
    int r = fn(arg, status);
    if (r < 0)
        s->error = r;
    return 0;
}

static int fake_mem_alloc(devq_pl_device *d, size_t bytes, void **dptr, void **hptr)
{
    (void)d;
    /* 256-byte aligned, as devq-plugin(7) asks. */
    size_t n = bytes ? (bytes + 255) & ~(size_t)255 : 256; /* C11: a multiple of 256 */
    void *p = n >= bytes ? aligned_alloc(256, n) : NULL;
    if (!p)
        return host->error(-ENOMEM, "fake: cannot allocate %zu bytes", bytes);
    memset(p, 0, n);
    *dptr = p;
    *hptr = p;
    return 0;
}

static void fake_mem_free(devq_pl_device *d, void *p)
{
    (void)d;
    free(p);
}

static int fake_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    (void)dir;
    if (!s->error)
        memmove(dst, src, n);
    return 0;
}

static int fake_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    if (!s->error)
        memset(dst, byte, n);
    return 0;
}

static const struct devq_backend_ops fake_ops = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "fake",
    .device_count = fake_device_count,
    .device_open = fake_device_open,
    .device_close = fake_device_close,
    .device_info = fake_device_info,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .event_query = fake_event_query,
    .event_wait = fake_event_wait,
    .stream_wait_event = fake_stream_wait_event,
    .host_fn = fake_host_fn,
    .mem_alloc = fake_mem_alloc,
    .mem_free = fake_mem_free,
    .copy = fake_copy,
    .fill = fake_fill,
};

int devq_plugin_init(const struct devq_host *h, uint32_t host_abi, const struct devq_backend_ops **out)
{
    (void)host_abi;
    host = h;
    *out = &fake_ops;
    return 0;
}
