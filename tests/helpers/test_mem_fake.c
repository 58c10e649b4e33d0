/* SPDX-License-Identifier: MIT */
/* A fake backend device for the memory tests; see test_mem_fake.h. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "error.h"
#include "event_pool.h"
#include "mem.h"
#include "test_mem_fake.h"

#define NSTREAMS 16
#define ALIGN 256

struct devq_pl_event {
    uint64_t ticket; /* 0: never recorded (reached) */
};
struct devq_pl_stream {
    int id;
};
struct devq_pl_device {
    int unused;
};

struct host_call {
    devq_pl_host_fn fn;
    void *arg;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *done; /* [ticket] */
static uint64_t nticket, capticket;
static size_t backend_bytes, mem_limit;
static uint64_t backend_allocs;
static int defer_host_fn;
static struct host_call *calls;
static size_t ncalls, capcalls;

static struct devq_pl_device the_pl;
static struct devq_pl_stream streams_pl[NSTREAMS];
static struct devq_stream streams[NSTREAMS];

static int f_event_create(devq_pl_device *d, uint32_t flags, devq_pl_event **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

static void f_event_destroy(devq_pl_event *e)
{
    free(e);
}

static int f_event_record(devq_pl_event *e, devq_pl_stream *s)
{
    pthread_mutex_lock(&lock);
    if (nticket + 1 >= capticket) {
        uint64_t cap = capticket ? capticket * 2 : 4096;
        uint8_t *nd = realloc(done, cap);
        if (!nd) {
            pthread_mutex_unlock(&lock);
            return -ENOMEM;
        }
        memset(nd + capticket, 0, cap - capticket);
        done = nd;
        capticket = cap;
    }
    e->ticket = ++nticket;
    done[e->ticket] = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int f_event_query(devq_pl_event *e)
{
    pthread_mutex_lock(&lock);
    int r = (e->ticket == 0 || done[e->ticket]) ? 0 : -EAGAIN;
    pthread_mutex_unlock(&lock);
    return r;
}

static int f_event_wait(devq_pl_event *e, uint64_t timeout_ns)
{
    /* Nothing completes by itself here, so a wait that is not already
     * satisfied times out at once. */
    return f_event_query(e) == 0 ? 0 : -ETIMEDOUT;
}

static int f_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    pthread_mutex_lock(&lock);
    if (defer_host_fn) {
        if (ncalls == capcalls) {
            capcalls = capcalls ? capcalls * 2 : 64;
            calls = realloc(calls, capcalls * sizeof *calls);
        }
        calls[ncalls++] = (struct host_call){ fn, arg };
        pthread_mutex_unlock(&lock);
        return 0;
    }
    pthread_mutex_unlock(&lock);
    fn(arg, 0);
    return 0;
}

static int f_mem_alloc(devq_pl_device *d, size_t bytes, void **dptr, void **hptr)
{
    pthread_mutex_lock(&lock);
    if (mem_limit && backend_bytes + bytes > mem_limit) {
        size_t have = backend_bytes;
        pthread_mutex_unlock(&lock);
        return devq__err(-ENOMEM, "fake: device full (%zu of %zu bytes used, %zu asked)", have, mem_limit,
                         bytes);
    }
    backend_bytes += bytes;
    backend_allocs++;
    pthread_mutex_unlock(&lock);
    void *p;
    if (posix_memalign(&p, ALIGN, ALIGN + bytes)) {
        pthread_mutex_lock(&lock);
        backend_bytes -= bytes;
        pthread_mutex_unlock(&lock);
        return devq__err(-ENOMEM, "fake: host out of memory");
    }
    *(size_t *)p = bytes;
    *dptr = (char *)p + ALIGN;
    if (hptr)
        *hptr = *dptr;
    return 0;
}

static void f_mem_free(devq_pl_device *d, void *ptr)
{
    char *base = (char *)ptr - ALIGN;
    pthread_mutex_lock(&lock);
    backend_bytes -= *(size_t *)base;
    pthread_mutex_unlock(&lock);
    free(base);
}

static int f_mem_alloc_async(devq_pl_stream *s, size_t bytes, void **dptr)
{
    return f_mem_alloc(&the_pl, bytes, dptr, NULL);
}

static int f_mem_free_async(devq_pl_stream *s, void *ptr)
{
    f_mem_free(&the_pl, ptr);
    return 0;
}

static int f_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    memset(dst, byte, n);
    return 0;
}

static int f_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir d)
{
    memcpy(dst, src, n);
    return 0;
}

static const struct devq_backend_ops fake_ops = {
    .abi_version = DEVQ_PLUGIN_ABI_VERSION,
    .size = sizeof(struct devq_backend_ops),
    .name = "fake",
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_query = f_event_query,
    .event_wait = f_event_wait,
    .host_fn = f_host_fn,
    .mem_alloc = f_mem_alloc,
    .mem_free = f_mem_free,
    .mem_alloc_async = f_mem_alloc_async,
    .mem_free_async = f_mem_free_async,
    .copy = f_copy,
    .fill = f_fill,
};

static struct devq_device *make(const struct fake_config *cfg)
{
    struct devq_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return NULL;
    pthread_mutex_lock(&lock);
    mem_limit = cfg->mem_limit;
    defer_host_fn = cfg->defer_host_fn;
    pthread_mutex_unlock(&lock);
    dev->obj.magic = DEVQ_MAGIC_DEVICE;
    atomic_store(&dev->obj.refs, 1);
    dev->ops = &fake_ops;
    dev->pl = &the_pl;
    strcpy(dev->info.backend, "fake");
    strcpy(dev->info.name, "fake device");
    dev->info.caps = cfg->caps;
    pthread_mutex_init(&dev->lock, NULL);
    if (devq__event_pool_create(dev, &dev->event_pool) < 0) {
        free(dev);
        return NULL;
    }
    for (uint32_t i = 0; i < NSTREAMS; i++) {
        streams_pl[i].id = (int)i;
        streams[i] = (struct devq_stream){ .dev = dev, .pl = &streams_pl[i], .id = i };
    }
    return dev;
}

int fake_device_open_mem(const struct fake_config *cfg, struct devq_device **out)
{
    struct devq_device *dev = make(cfg);
    if (!dev)
        return -ENOMEM;
    int r = devq__mem_create(dev);
    if (r < 0) {
        devq__event_pool_drain(dev, dev->event_pool);
        devq__event_pool_destroy(dev->event_pool);
        free(dev);
        return r;
    }
    *out = dev;
    return 0;
}

struct devq_device *fake_device_open(const struct fake_config *cfg)
{
    if (cfg->attach_mem) {
        struct devq_device *dev = NULL;
        return fake_device_open_mem(cfg, &dev) == 0 ? dev : NULL;
    }
    return make(cfg);
}

void fake_device_close(struct devq_device *dev)
{
    devq__mem_destroy(dev);
    devq__event_pool_drain(dev, dev->event_pool);
    devq__event_pool_destroy(dev->event_pool);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    pthread_mutex_lock(&lock);
    free(calls);
    calls = NULL;
    ncalls = capcalls = 0;
    pthread_mutex_unlock(&lock);
}

struct devq_stream *fake_stream(struct devq_device *dev, uint32_t id)
{
    return id < NSTREAMS ? &streams[id] : NULL;
}

uint64_t fake_last_ticket(void)
{
    pthread_mutex_lock(&lock);
    uint64_t t = nticket;
    pthread_mutex_unlock(&lock);
    return t;
}

void fake_complete(uint64_t ticket)
{
    pthread_mutex_lock(&lock);
    if (ticket && ticket <= nticket)
        done[ticket] = 1;
    pthread_mutex_unlock(&lock);
}

void fake_complete_all_but(uint64_t ticket)
{
    pthread_mutex_lock(&lock);
    for (uint64_t t = 1; t <= nticket; t++)
        if (t != ticket)
            done[t] = 1;
    pthread_mutex_unlock(&lock);
}

void fake_complete_all(void)
{
    fake_complete_all_but(0);
}

void fake_run_host_fns(void)
{
    pthread_mutex_lock(&lock);
    struct host_call *c = calls;
    size_t n = ncalls;
    calls = NULL;
    ncalls = capcalls = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++)
        c[i].fn(c[i].arg, 0);
    free(c);
}

size_t fake_backend_bytes(void)
{
    pthread_mutex_lock(&lock);
    size_t b = backend_bytes;
    pthread_mutex_unlock(&lock);
    return b;
}

uint64_t fake_backend_allocs(void)
{
    pthread_mutex_lock(&lock);
    uint64_t n = backend_allocs;
    pthread_mutex_unlock(&lock);
    return n;
}
