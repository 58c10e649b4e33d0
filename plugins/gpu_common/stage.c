/* SPDX-License-Identifier: MIT */
/* Copies between device memory and the caller's host memory, staged
 * through pinned (registered) chunks.
 *
 * Why: the drivers' async copies synchronize with the stream when the
 * host side is pageable -- a copy to pageable memory returns only once
 * it has run, one from it may wait for the stream to stage it.  Queued
 * behind a wait the host has yet to satisfy (a batch deferred on a
 * signal, or a cross-queue wait on such a batch), the submitting thread
 * then blocks inside the driver forever: the conformance hazard suite
 * hung so on an H200.  Through a pinned chunk the copy is truly
 * asynchronous, and the caller's bytes move in a stream callback, in
 * stream order: for a read after the copy into the chunk, for a write
 * before the copy out of it.  devq has no pinned host memory of its
 * own to hand out, so every host copy takes this path.
 *
 * Callbacks make no driver calls: they only memcpy and put the chunk
 * back on the free list.  Chunks are registered and unregistered from
 * plugin calls (acquire, and the device's last close). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

struct stage_step {
    struct gpu_cb cb; /* first: the callback's argument */
    struct gpu_stage_pool *pool;
    struct gpu_stage_chunk *chunk;
    unsigned char *user; /* the caller's bytes */
    size_t n;
    enum { STEP_TO_USER, STEP_FROM_USER, STEP_RELEASE } what;
};

void gpu_stage_init(struct gpu_stage_pool *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

static void chunk_destroy(struct gpu_stage_chunk *c)
{
    gpu_drv.host_unregister(c->mem);
    free(c->mem);
    free(c);
}

static void release(struct gpu_stage_pool *p, struct gpu_stage_chunk *c)
{
    int cls = c->cap > GPU_STAGE_SMALL;
    pthread_mutex_lock(&p->mu);
    c->next = p->free[cls];
    p->free[cls] = c;
    p->nfree[cls]++;
    pthread_mutex_unlock(&p->mu);
}

/* Take a chunk for n bytes (at most GPU_STAGE_BIG), giving back what
 * callbacks returned beyond GPU_STAGE_KEEP; NULL with *err on failure.
 * dev is current. */
static struct gpu_stage_chunk *acquire(struct devq_pl_device *dev, size_t n, int *err)
{
    struct gpu_stage_pool *p = &dev->stage;
    int cls = n > GPU_STAGE_SMALL;
    struct gpu_stage_chunk *c, *extra = NULL;
    pthread_mutex_lock(&p->mu);
    if ((c = p->free[cls])) {
        p->free[cls] = c->next;
        p->nfree[cls]--;
    }
    if (p->nfree[cls] > GPU_STAGE_KEEP && (extra = p->free[cls])) {
        p->free[cls] = extra->next;
        p->nfree[cls]--;
    }
    pthread_mutex_unlock(&p->mu);
    if (extra)
        chunk_destroy(extra);
    if (c)
        return c;
    size_t cap = cls ? GPU_STAGE_BIG : GPU_STAGE_SMALL;
    if (!(c = gpu_zalloc(sizeof *c, "a staging chunk"))) {
        *err = -ENOMEM;
        return NULL;
    }
    c->cap = cap;
    if (!(c->mem = aligned_alloc(4096, cap))) {
        free(c);
        *err = gpu_host->error(-ENOMEM, "%s: out of memory for a %zu-byte staging chunk of a host copy",
                               gpu_backend, cap);
        return NULL;
    }
    int r = gpu_drv.host_register(c->mem, cap);
    if (r) {
        free(c->mem);
        free(c);
        *err = gpu_drv_fail(dev, gpu_drv.call.host_register, r);
        return NULL;
    }
    return c;
}

void gpu_stage_drain(struct devq_pl_device *dev)
{
    struct gpu_stage_pool *p = &dev->stage;
    for (int cls = 0; cls < 2; cls++) {
        pthread_mutex_lock(&p->mu);
        struct gpu_stage_chunk *c = p->free[cls];
        p->free[cls] = NULL;
        p->nfree[cls] = 0;
        pthread_mutex_unlock(&p->mu);
        while (c) {
            struct gpu_stage_chunk *next = c->next;
            chunk_destroy(c);
            c = next;
        }
    }
}

static void step_run(struct gpu_cb *cb, int status)
{
    struct stage_step *st = (struct stage_step *)cb;
    /* On a failed stream the bytes are not moved: a read leaves the
     * caller's memory as it was (lib fails the read), a write's chunk
     * is never copied out. */
    if (status == 0 && st->what == STEP_TO_USER)
        memcpy(st->user, st->chunk->mem, st->n);
    else if (status == 0 && st->what == STEP_FROM_USER)
        memcpy(st->chunk->mem, st->user, st->n);
    if (st->what != STEP_FROM_USER)
        release(st->pool, st->chunk);
    free(st);
}

static struct stage_step *step_new(struct devq_pl_device *dev, struct gpu_stage_chunk *c, void *user,
                                   size_t n, int what)
{
    struct stage_step *st = gpu_zalloc(sizeof *st, "a staged copy");
    if (st)
        *st = (struct stage_step){
            .cb.run = step_run, .pool = &dev->stage, .chunk = c, .user = user, .n = n, .what = what
        };
    return st;
}

/* One chunk's worth of a read: device -> chunk, then chunk -> caller in
 * a callback that gives the chunk back.  A chunk the stream may still
 * write is never given back on an error path: it is leaked. */
static int stage_read(devq_pl_stream *s, struct gpu_stage_chunk *c, void *dst, const void *src, size_t n)
{
    struct devq_pl_device *dev = s->dev;
    struct stage_step *st = step_new(dev, c, dst, n, STEP_TO_USER);
    if (!st) {
        release(&dev->stage, c);
        return -ENOMEM;
    }
    int r = gpu_drv.copy_d2h(c->mem, src, n, s->stream);
    if (r) {
        free(st);
        release(&dev->stage, c);
        return gpu_drv_fail(dev, gpu_drv.call.copy_d2h, r);
    }
    if ((r = gpu_drv.stream_add_callback(s->stream, &st->cb))) {
        free(st); /* c: leaked, see above */
        return gpu_drv_fail(dev, gpu_drv.call.stream_add_callback, r);
    }
    return 0;
}

/* One chunk's worth of a write: caller -> chunk in a callback, chunk ->
 * device, then a callback that gives the chunk back. */
static int stage_write(devq_pl_stream *s, struct gpu_stage_chunk *c, void *dst, const void *src, size_t n)
{
    struct devq_pl_device *dev = s->dev;
    struct stage_step *fill = step_new(dev, c, (void *)src, n, STEP_FROM_USER);
    struct stage_step *back = fill ? step_new(dev, c, NULL, 0, STEP_RELEASE) : NULL;
    if (!back) {
        free(fill);
        release(&dev->stage, c);
        return -ENOMEM;
    }
    int r = gpu_drv.stream_add_callback(s->stream, &fill->cb);
    if (r) {
        free(fill);
        free(back);
        release(&dev->stage, c);
        return gpu_drv_fail(dev, gpu_drv.call.stream_add_callback, r);
    }
    const char *call = gpu_drv.call.copy_h2d;
    r = gpu_drv.copy_h2d(dst, c->mem, n, s->stream);
    if (r) {
        /* the fill callback is queued: give the chunk back after it */
        int err = gpu_drv_fail(dev, call, r);
        if (gpu_drv.stream_add_callback(s->stream, &back->cb))
            free(back); /* c: leaked */
        return err;
    }
    if ((r = gpu_drv.stream_add_callback(s->stream, &back->cb))) {
        free(back); /* c: leaked */
        return gpu_drv_fail(dev, gpu_drv.call.stream_add_callback, r);
    }
    return 0;
}

int gpu_stage_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, int dir)
{
    for (size_t off = 0; off < n;) {
        size_t len = n - off < GPU_STAGE_BIG ? n - off : GPU_STAGE_BIG;
        int err = -ENOMEM;
        struct gpu_stage_chunk *c = acquire(s->dev, len, &err);
        if (!c)
            return err;
        err = dir == DEVQ_COPY_D2H
                  ? stage_read(s, c, (unsigned char *)dst + off, (const unsigned char *)src + off, len)
                  : stage_write(s, c, (unsigned char *)dst + off, (const unsigned char *)src + off, len);
        if (err)
            return err;
        off += len;
    }
    return 0;
}
