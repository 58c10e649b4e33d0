/* SPDX-License-Identifier: MIT */
/* Events: a (stream, value) pair on the stream's timeline.  Recording
 * closes the stream's open command buffer, so the value covers every op
 * recorded before.  Timing events also write a timestamp query. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "vk_plugin.h"

int vk_event_create(struct devq_pl_device *d, uint32_t flags, struct devq_pl_event **out)
{
    struct devq_pl_event *e = calloc(1, sizeof *e);
    if (!e)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory creating an event", d->ordinal);
    e->dev = d;
    if (flags & DEVQ_EVENT_TIMING) {
        VkQueryPoolCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                     .queryCount = 1 };
        VkResult r = vk_vkCreateQueryPool(d->dev, &qi, NULL, &e->query);
        if (r != VK_SUCCESS) {
            free(e);
            return vk_fail(d, "vkCreateQueryPool", r, -ENOMEM);
        }
    }
    *out = e;
    return 0;
}

void vk_event_destroy(struct devq_pl_event *e)
{
    struct devq_pl_device *d = e->dev;
    pthread_mutex_lock(&d->mu);
    if (e->s)
        vk_stream_unref(e->s);
    pthread_mutex_unlock(&d->mu);
    if (e->query)
        vk_vkDestroyQueryPool(d->dev, e->query, NULL);
    free(e);
}

int vk_event_record(struct devq_pl_event *e, struct devq_pl_stream *s)
{
    struct devq_pl_device *d = e->dev;
    int err = 0;
    pthread_mutex_lock(&d->mu);
    if (e->query) {
        VkCommandBuffer cb = vk_stream_cmd(s);
        if (!cb) {
            pthread_mutex_unlock(&d->mu);
            return -EIO;
        }
        vk_vkCmdResetQueryPool(cb, e->query, 0, 1);
        vk_vkCmdWriteTimestamp2(cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, e->query, 0);
    }
    uint64_t v = vk_stream_flush(s, &err);
    if (!err) {
        pl_ref_get(&s->refs);
        if (e->s)
            vk_stream_unref(e->s);
        e->s = s;
        e->value = v;
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}

int vk_event_query(struct devq_pl_event *e)
{
    struct devq_pl_device *d = e->dev;
    pthread_mutex_lock(&d->mu);
    int r = !e->s || vk_stream_reached(e->s) >= e->value ? 0 : -EAGAIN;
    pthread_mutex_unlock(&d->mu);
    if (r && atomic_load(&d->lost))
        return vk_lost_error(d);
    return r;
}

int vk_event_wait(struct devq_pl_event *e, uint64_t timeout_ns)
{
    struct devq_pl_device *d = e->dev;
    if (!e->s)
        return 0;
    uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : vk_host->now_ns() + timeout_ns;
    VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                               .semaphoreCount = 1,
                               .pSemaphores = &e->s->sem,
                               .pValues = &e->value };
    for (;;) {
        if (atomic_load(&d->lost))
            return vk_lost_error(d);
        /* In slices, so that a loss the plugin marks itself (a refused
         * submission: the value may never come) ends the wait too. */
        uint64_t now = vk_host->now_ns(), slice = 100 * 1000000ull;
        if (deadline != UINT64_MAX && deadline - now < slice)
            slice = deadline > now ? deadline - now : 0;
        VkResult r = vk_vkWaitSemaphores(d->dev, &wi, slice);
        if (r == VK_SUCCESS)
            return 0;
        if (r != VK_TIMEOUT)
            return vk_fail(d, "vkWaitSemaphores", r, -EIO);
        if (deadline != UINT64_MAX && vk_host->now_ns() >= deadline)
            return vk_host->error(-ETIMEDOUT, "vulkan:%u: event not reached within %llu ns", d->ordinal,
                                  (unsigned long long)timeout_ns);
    }
}

int vk_event_elapsed(struct devq_pl_event *a, struct devq_pl_event *b, uint64_t *ns)
{
    struct devq_pl_device *d = a->dev;
    if (!a->query || !b->query)
        return vk_host->error(-EINVAL, "vulkan:%u: event_elapsed needs two timing events", d->ordinal);
    uint64_t t[2];
    VkResult r = vk_vkGetQueryPoolResults(d->dev, a->query, 0, 1, 8, &t[0], 8, VK_QUERY_RESULT_64_BIT);
    if (r == VK_SUCCESS)
        r = vk_vkGetQueryPoolResults(d->dev, b->query, 0, 1, 8, &t[1], 8, VK_QUERY_RESULT_64_BIT);
    if (r == VK_NOT_READY)
        return vk_host->error(-EAGAIN, "vulkan:%u: event_elapsed: an event is not reached", d->ordinal);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkGetQueryPoolResults", r, -EIO);
    double ticks = t[1] >= t[0] ? (double)(t[1] - t[0]) : 0;
    *ns = (uint64_t)(ticks * d->props.limits.timestampPeriod);
    return 0;
}
