/* SPDX-License-Identifier: MIT */
/* Streams: recording into command buffers, held submissions, the pump.
 *
 * Every op of a stream is in one order: command buffers are closed into
 * *items* (a submission, a host callback or a host copy) and kept in the
 * stream's held list until the pump hands them out.  A submission goes to
 * the queue only when every earlier item of its stream has been handed out
 * and returned (host items) and every value it waits on has been
 * submitted; so no submission ever waits on a value that nobody has
 * submitted, which on a one-queue device would stall every stream.  A
 * host item goes to the completion thread, and the stream's later items
 * stay held until it has run: a host callback that returns an error makes
 * the items up to the next callback skipped (their values are signalled
 * from the host, nothing runs), which is DEVQ_CAP_SKIP_ON_ERROR.
 *
 * Everything here runs under the device mutex. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

int vk_stream_create(struct devq_pl_device *d, const devq_queue_desc *desc, struct devq_pl_stream **out)
{
    (void)desc; /* one kind of queue; no priorities (no caps claimed) */
    if (atomic_load(&d->lost))
        return vk_lost_error(d);
    struct devq_pl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory creating a stream", d->ordinal);
    s->dev = d;
    pl_ref_init(&s->refs, 1);
    pthread_cond_init(&s->cond, NULL);
    VkSemaphoreTypeCreateInfo ti = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE };
    VkSemaphoreCreateInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti };
    VkResult r = vk_vkCreateSemaphore(d->dev, &si, NULL, &s->sem);
    if (r != VK_SUCCESS) {
        free(s);
        return vk_fail(d, "vkCreateSemaphore", r, -ENOMEM);
    }
    VkCommandPoolCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->family };
    if ((r = vk_vkCreateCommandPool(d->dev, &pi, NULL, &s->pool)) != VK_SUCCESS) {
        vk_vkDestroySemaphore(d->dev, s->sem, NULL);
        free(s);
        return vk_fail(d, "vkCreateCommandPool", r, -ENOMEM);
    }
    int rc = vk_completion_start(s);
    if (rc < 0) {
        vk_vkDestroyCommandPool(d->dev, s->pool, NULL);
        vk_vkDestroySemaphore(d->dev, s->sem, NULL);
        pthread_cond_destroy(&s->cond);
        free(s);
        return rc;
    }
    pthread_mutex_lock(&d->mu);
    s->queue = d->queues[d->next_queue++ % d->nqueues];
    s->next = d->streams;
    d->streams = s;
    pthread_mutex_unlock(&d->mu);
    *out = s;
    return 0;
}

static void release_waits(struct vk_wait *w, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        vk_stream_unref(w[i].src);
    free(w);
}

void vk_stream_unref(struct devq_pl_stream *s)
{
    if (!pl_ref_put(&s->refs))
        return;
    struct devq_pl_device *d = s->dev;
    for (size_t i = 0; i < s->ninflight; i++) {
        release_waits(s->inflight[i].waits, s->inflight[i].nwaits);
        vk_graph_uses_release(s->inflight[i].guses, s->inflight[i].nguses);
    }
    release_waits(s->waits, s->nwaits);
    vk_graph_uses_release(s->guses, s->nguses);
    /* Freed with the pool: every command buffer of the stream. */
    vk_vkDestroyCommandPool(d->dev, s->pool, NULL);
    vk_vkDestroySemaphore(d->dev, s->sem, NULL);
    free(s->inflight);
    free(s->spare);
    pthread_cond_destroy(&s->cond);
    free(s);
}

void vk_stream_destroy(struct devq_pl_stream *s)
{
    struct devq_pl_device *d = s->dev;
    /* The last callback may still be returning on the stream's thread. */
    vk_completion_stop(s);
    pthread_mutex_lock(&d->mu);
    for (struct devq_pl_stream **p = &d->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    s->destroyed = true;
    /* Everything enqueued has completed (lib's contract): drop the
     * references on other streams now, or two streams that waited on
     * each other would keep each other alive. */
    for (size_t i = 0; i < s->ninflight; i++) {
        release_waits(s->inflight[i].waits, s->inflight[i].nwaits);
        s->inflight[i].waits = NULL;
        s->inflight[i].nwaits = 0;
        vk_graph_uses_release(s->inflight[i].guses, s->inflight[i].nguses);
        s->inflight[i].guses = NULL;
        s->inflight[i].nguses = 0;
    }
    release_waits(s->waits, s->nwaits);
    s->waits = NULL;
    s->nwaits = 0;
    vk_graph_uses_release(s->guses, s->nguses);
    s->guses = NULL;
    s->nguses = s->cap_guses = 0;
    /* Nothing is held unless the device was lost. */
    if (s->active) {
        vk_transient_free(d, s->active->release);
        free(s->active);
        s->active = NULL;
    }
    while (s->head) {
        struct vk_item *it = s->head;
        s->head = it->next;
        release_waits(it->waits, it->nwaits);
        vk_graph_uses_release(it->guses, it->nguses);
        vk_transient_free(d, it->release);
        free(it);
    }
    vk_stream_unref(s);
    pthread_mutex_unlock(&d->mu);
}

uint64_t vk_stream_reached(struct devq_pl_stream *s)
{
    uint64_t v = 0;
    VkResult r = vk_vkGetSemaphoreCounterValue(s->dev->dev, s->sem, &v);
    if (r != VK_SUCCESS)
        vk_fail(s->dev, "vkGetSemaphoreCounterValue", r, -EIO);
    return r == VK_SUCCESS ? v : 0;
}

/* Command buffers whose submission completed go back to the spares. */
static void retire(struct devq_pl_stream *s)
{
    if (!s->ninflight)
        return;
    uint64_t reached = vk_stream_reached(s);
    size_t done = 0;
    while (done < s->ninflight && s->inflight[done].value <= reached) {
        struct vk_inflight *f = &s->inflight[done++];
        release_waits(f->waits, f->nwaits);
        VkResult r = vk_vkResetCommandBuffer(f->cb, 0);
        /* After the reset: the graph may re-record or free what it ran. */
        vk_graph_uses_release(f->guses, f->nguses);
        if (r != VK_SUCCESS)
            continue; /* leaks one buffer into the pool; freed with it */
        if (s->nspare == s->cap_spare) {
            size_t cap = s->cap_spare ? 2 * s->cap_spare : 8;
            VkCommandBuffer *n = realloc(s->spare, cap * sizeof *n);
            if (!n)
                continue;
            s->spare = n;
            s->cap_spare = cap;
        }
        s->spare[s->nspare++] = f->cb;
    }
    memmove(s->inflight, s->inflight + done, (s->ninflight - done) * sizeof *s->inflight);
    s->ninflight -= done;
}

static VkCommandBuffer acquire(struct devq_pl_stream *s)
{
    struct devq_pl_device *d = s->dev;
    retire(s);
    VkCommandBuffer cb;
    if (s->nspare)
        cb = s->spare[--s->nspare];
    else {
        VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                           .commandPool = s->pool,
                                           .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           .commandBufferCount = 1 };
        VkResult r = vk_vkAllocateCommandBuffers(d->dev, &ai, &cb);
        if (r != VK_SUCCESS) {
            vk_fail(d, "vkAllocateCommandBuffers", r, -ENOMEM);
            return VK_NULL_HANDLE;
        }
    }
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    VkResult r = vk_vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS) {
        vk_fail(d, "vkBeginCommandBuffer", r, -EIO);
        return VK_NULL_HANDLE;
    }
    return cb;
}

/* Ops of a stream run one after the other, as on every devq backend:
 * each op waits for every earlier op's memory accesses.  The final one
 * makes the device's writes visible to the host (host copies, mapped
 * buffers) once the submission's value is reached. */
static void barrier(VkCommandBuffer cb, VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access)
{
    VkMemoryBarrier2 mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                            .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                            .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
                            .dstStageMask = dst_stage,
                            .dstAccessMask = dst_access };
    VkDependencyInfo di = { .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                            .memoryBarrierCount = 1,
                            .pMemoryBarriers = &mb };
    vk_vkCmdPipelineBarrier2(cb, &di);
}

void vk_cmd_op_barrier(VkCommandBuffer cb)
{
    barrier(cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
            VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);
}

VkCommandBuffer vk_stream_cmd(struct devq_pl_stream *s)
{
    if (atomic_load(&s->dev->lost)) {
        vk_lost_error(s->dev);
        return VK_NULL_HANDLE;
    }
    if (!s->open) {
        if (!(s->open = acquire(s)))
            return VK_NULL_HANDLE;
        s->open_ops = 0;
    } else if (s->open_ops) {
        vk_cmd_op_barrier(s->open);
    }
    s->open_ops++;
    vk_stream_queued(s);
    return s->open;
}

void vk_stream_queued(struct devq_pl_stream *s)
{
    atomic_store_explicit(&s->queued, atomic_load_explicit(&s->queued, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* What lib needs to complete a batch of only signals at submit, with no
 * host callback (lib/queue/inline.c): an empty batch then costs no item,
 * no completion-thread hand-off and no semaphore signal.  `queued` is
 * read first: a later put only makes the answer true at an earlier
 * moment of the call, which the op's contract allows. */
int vk_stream_idle(struct devq_pl_stream *s)
{
    if (atomic_load_explicit(&s->dev->lost, memory_order_relaxed))
        return 0; /* the end callback reports the loss */
    uint64_t n = atomic_load_explicit(&s->queued, memory_order_acquire);
    return atomic_load_explicit(&s->clean, memory_order_acquire) == n;
}

static void append(struct devq_pl_stream *s, struct vk_item *it)
{
    if (s->tail)
        s->tail->next = it;
    else
        s->head = it;
    s->tail = it;
}

uint64_t vk_stream_flush(struct devq_pl_stream *s, int *err)
{
    struct devq_pl_device *d = s->dev;
    *err = 0;
    if (!s->open && !s->nwaits)
        return s->next_value;
    struct vk_item *it = calloc(1, sizeof *it);
    if (!it) {
        *err = vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
        return 0;
    }
    if (s->open) {
        barrier(s->open, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
        VkResult r = vk_vkEndCommandBuffer(s->open);
        if (r != VK_SUCCESS) {
            free(it);
            *err = vk_fail(d, "vkEndCommandBuffer", r, -EIO);
            return 0;
        }
    }
    it->kind = VK_ITEM_SUBMIT;
    it->cb = s->open;
    it->waits = s->waits;
    it->nwaits = s->nwaits;
    it->guses = s->guses;
    it->nguses = s->nguses;
    it->signal = ++s->next_value;
    s->open = VK_NULL_HANDLE;
    s->waits = NULL;
    s->nwaits = s->cap_waits = 0;
    s->guses = NULL;
    s->nguses = s->cap_guses = 0;
    append(s, it);
    vk_pump(d);
    return s->next_value;
}

static int host_item(struct devq_pl_stream *s, enum vk_item_kind kind, devq_pl_host_fn fn, void *arg,
                     void *dst, const void *src, size_t n, struct vk_transient *release)
{
    /* Allocated first: once the work before is flushed, the item that
     * frees its transient buffer must not fail to exist. */
    struct vk_item *it = calloc(1, sizeof *it);
    if (!it)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", s->dev->ordinal);
    int err;
    uint64_t after = vk_stream_flush(s, &err);
    if (err) {
        free(it);
        return err;
    }
    *it = (struct vk_item){ .kind = kind,
                            .after = after,
                            .signal = ++s->next_value,
                            .fn = fn,
                            .arg = arg,
                            .dst = dst,
                            .src = src,
                            .n = n,
                            .release = release };
    append(s, it);
    vk_stream_queued(s);
    vk_pump(s->dev);
    return 0;
}

int vk_stream_host_item(struct devq_pl_stream *s, enum vk_item_kind kind, devq_pl_host_fn fn, void *arg,
                        void *dst, const void *src, size_t n)
{
    return host_item(s, kind, fn, arg, dst, src, n, NULL);
}

int vk_stream_release_item(struct devq_pl_stream *s, enum vk_item_kind kind, void *dst, const void *src,
                           size_t n, struct vk_transient *t)
{
    return host_item(s, kind, NULL, NULL, dst, src, n, t);
}

int vk_host_fn(struct devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    if (!fn)
        return vk_host->error(-EINVAL, "vulkan: host_fn: NULL callback");
    pthread_mutex_lock(&s->dev->mu);
    int err = vk_stream_host_item(s, VK_ITEM_HOST, fn, arg, NULL, NULL, 0);
    pthread_mutex_unlock(&s->dev->mu);
    return err;
}

int vk_stream_wait_event(struct devq_pl_stream *s, struct devq_pl_event *e)
{
    struct devq_pl_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    struct devq_pl_stream *src = e->s;
    uint64_t v = e->value;
    int err = 0;
    /* Same stream: already ordered.  Reached: nothing to wait for. */
    if (!src || src == s || v == 0 || vk_stream_reached(src) >= v)
        goto out;
    /* The wait holds only ops recorded after it. */
    if (s->open && s->open_ops)
        vk_stream_flush(s, &err);
    if (err)
        goto out;
    for (uint32_t i = 0; i < s->nwaits; i++)
        if (s->waits[i].src == src) {
            if (s->waits[i].value < v)
                s->waits[i].value = v;
            goto out;
        }
    if (s->nwaits == s->cap_waits) {
        uint32_t cap = s->cap_waits ? 2 * s->cap_waits : 4;
        struct vk_wait *n = realloc(s->waits, cap * sizeof *n);
        if (!n) {
            err = vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
            goto out;
        }
        s->waits = n;
        s->cap_waits = cap;
    }
    pl_ref_get(&src->refs);
    s->waits[s->nwaits++] = (struct vk_wait){ src, v };
    vk_stream_queued(s);
out:
    pthread_mutex_unlock(&d->mu);
    return err;
}

/* Skipped (after an error) or unsubmittable (device lost): the value is
 * reached from the host; nothing of the stream is pending on the device,
 * since the item before was a host item. */
static void skip(struct devq_pl_stream *s, struct vk_item *it)
{
    struct devq_pl_device *d = s->dev;
    if (it->cb) {
        vk_vkResetCommandBuffer(it->cb, 0);
        if (s->nspare < s->cap_spare)
            s->spare[s->nspare++] = it->cb;
    }
    vk_graph_uses_release(it->guses, it->nguses);
    it->guses = NULL;
    release_waits(it->waits, it->nwaits);
    VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                 .semaphore = s->sem,
                                 .value = it->signal };
    if (!atomic_load(&d->lost))
        vk_vkSignalSemaphore(d->dev, &si);
    s->submitted = it->signal;
}

static bool ready(struct vk_item *it)
{
    for (uint32_t i = 0; i < it->nwaits; i++)
        if (it->waits[i].src->submitted < it->waits[i].value)
            return false;
    return true;
}

static int submit(struct devq_pl_stream *s, struct vk_item *it)
{
    struct devq_pl_device *d = s->dev;
    if (s->ninflight == s->cap_inflight) {
        size_t cap = s->cap_inflight ? 2 * s->cap_inflight : 8;
        struct vk_inflight *n = realloc(s->inflight, cap * sizeof *n);
        if (!n)
            return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
        s->inflight = n;
        s->cap_inflight = cap;
    }
    VkSemaphoreSubmitInfo waits[9], *w = waits;
    VkSemaphoreSubmitInfo *heap = NULL;
    uint32_t nw = 0;
    if (it->nwaits + 1 > 9 && !(w = heap = calloc(it->nwaits + 1, sizeof *w)))
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
    /* After the stream's previous item, whatever ran it. */
    w[nw++] = (VkSemaphoreSubmitInfo){ .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                       .semaphore = s->sem,
                                       .value = s->submitted,
                                       .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT };
    for (uint32_t i = 0; i < it->nwaits; i++)
        w[nw++] = (VkSemaphoreSubmitInfo){ .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                           .semaphore = it->waits[i].src->sem,
                                           .value = it->waits[i].value,
                                           .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT };
    VkSemaphoreSubmitInfo sig = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                  .semaphore = s->sem,
                                  .value = it->signal,
                                  .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT };
    VkCommandBufferSubmitInfo cbi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                      .commandBuffer = it->cb };
    VkSubmitInfo2 si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                         .waitSemaphoreInfoCount = nw,
                         .pWaitSemaphoreInfos = w,
                         .commandBufferInfoCount = it->cb ? 1 : 0,
                         .pCommandBufferInfos = &cbi,
                         .signalSemaphoreInfoCount = 1,
                         .pSignalSemaphoreInfos = &sig };
    VkResult r = d->inject_lost_at && atomic_fetch_add(&d->submissions, 1) + 1 == d->inject_lost_at
                     ? VK_ERROR_DEVICE_LOST
                     : vk_vkQueueSubmit2(s->queue, 1, &si, VK_NULL_HANDLE);
    free(heap);
    if (r != VK_SUCCESS) {
        /* The stream's timeline can no longer be trusted: treat it as the
         * device's loss, so waiters get an error rather than a hang. */
        return vk_fail(d, "vkQueueSubmit2", VK_ERROR_DEVICE_LOST, -ENODEV);
    }
    if (it->cb)
        s->inflight[s->ninflight++] =
            (struct vk_inflight){ it->cb, it->signal, it->waits, it->nwaits, it->nguses, it->guses };
    else
        release_waits(it->waits, it->nwaits);
    s->submitted = it->signal;
    return 0;
}

void vk_pump(struct devq_pl_device *d)
{
    bool progress = true;
    while (progress) {
        progress = false;
        for (struct devq_pl_stream *s = d->streams; s; s = s->next) {
            while (s->head && !s->busy) {
                struct vk_item *it = s->head;
                if (it->kind != VK_ITEM_SUBMIT) {
                    s->head = it->next;
                    if (!s->head)
                        s->tail = NULL;
                    s->busy = true;
                    vk_completion_push(s, it);
                    progress = true;
                    break;
                }
                bool lost = atomic_load(&d->lost);
                if (!lost && !s->latched && !ready(it))
                    break;
                s->head = it->next;
                if (!s->head)
                    s->tail = NULL;
                if (lost || s->latched || submit(s, it) < 0)
                    skip(s, it);
                free(it);
                progress = true;
            }
        }
    }
}
