/* The completion thread: one per device, runs host items (host callbacks
 * and host copies) once the stream work before them is reached, in stream
 * order, then reaches the item's own value from the host and lets the
 * stream's held work go.  It sleeps in vkWaitSemaphores on every stream
 * it waits for plus a wake semaphore the host signals when it hands over
 * a new item: never a sleep-poll.
 *
 * lib may destroy a stream as soon as its last callback has returned, so
 * each handed-over item holds a reference on its stream. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

void vk_completion_push(struct devq_pl_stream *s, struct vk_item *item)
{
    struct devq_pl_device *d = s->dev;
    s->refs++;
    item->owner = s;
    item->next = NULL;
    struct vk_item **p = &d->active;
    while (*p)
        p = &(*p)->next;
    *p = item;
    /* A thread that is not asleep looks at the list before it sleeps
     * again: waking it costs a driver call per item for nothing. */
    if (d->thread_waiting && !atomic_load(&d->lost)) {
        VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = d->wake,
                                     .value = ++d->wake_value };
        vk_vkSignalSemaphore(d->dev, &si);
        d->thread_waiting = false;
    }
    pthread_cond_signal(&d->cond);
}

/* Run one item; called and returns with mu held. */
static void run(struct devq_pl_device *d, struct devq_pl_stream *s, struct vk_item *it)
{
    bool lost = atomic_load(&d->lost);
    if (it->kind == VK_ITEM_HOST) {
        int status = lost ? -EIO : s->latched;
        char msg[320];
        if (lost)
            snprintf(msg, sizeof msg, "vulkan:%u: device lost: %s", d->ordinal, d->lost_cause);
        else
            snprintf(msg, sizeof msg, "%s", s->status_msg);
        s->latched = 0;
        s->status_msg[0] = 0;
        pthread_mutex_unlock(&d->mu);
        /* The contract: the failed op's detail is this thread's errmsg. */
        if (status && msg[0])
            vk_host->error(status, "%s", msg);
        int r = it->fn(it->arg, status);
        pthread_mutex_lock(&d->mu);
        if (r < 0)
            s->latched = r;
    } else if (!lost && !s->latched) {
        pthread_mutex_unlock(&d->mu);
        memcpy(it->dst, it->src, it->n);
        pthread_mutex_lock(&d->mu);
    }
    if (!lost) {
        VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = s->sem,
                                     .value = it->signal };
        VkResult r = vk_vkSignalSemaphore(d->dev, &si);
        if (r != VK_SUCCESS)
            vk_fail(d, "vkSignalSemaphore", r, -EIO);
    }
    s->submitted = it->signal;
    s->busy = false;
    free(it);
    vk_pump(d);
    vk_stream_unref(s);
}

/* The first handed-over item whose work is reached (or any, when the
 * device is lost), unlinked; NULL if none. */
static struct vk_item *take_ready(struct devq_pl_device *d)
{
    bool lost = atomic_load(&d->lost);
    for (struct vk_item **p = &d->active; *p; p = &(*p)->next) {
        struct vk_item *h = *p;
        if (lost || vk_stream_reached(h->owner) >= h->after) {
            *p = h->next;
            return h;
        }
    }
    return NULL;
}

static void *thread_main(void *arg)
{
    struct devq_pl_device *d = arg;
    uint64_t seen = 0;
    VkSemaphore sems[64];
    uint64_t vals[64];
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        struct vk_item *h;
        while ((h = take_ready(d)))
            run(d, h->owner, h);
        if (d->stopping)
            break;
        /* A lost device answers every wait at once: sleep on the
         * condition variable until the next item or the stop. */
        if (atomic_load(&d->lost)) {
            pthread_cond_wait(&d->cond, &d->mu);
            continue;
        }
        /* Sleep until the wake value moves past what was seen or one of
         * the (first 63) handed-over items' work is reached. */
        uint32_t n = 0;
        sems[n] = d->wake;
        vals[n++] = seen + 1;
        for (struct vk_item *a = d->active; a && n < 64; a = a->next) {
            sems[n] = a->owner->sem;
            vals[n++] = a->after;
        }
        /* A stream's semaphore stays alive while its item holds a ref. */
        d->thread_waiting = true;
        pthread_mutex_unlock(&d->mu);
        VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .flags = VK_SEMAPHORE_WAIT_ANY_BIT, .semaphoreCount = n,
                                   .pSemaphores = sems, .pValues = vals };
        VkResult r = vk_vkWaitSemaphores(d->dev, &wi, UINT64_MAX);
        uint64_t wake = seen;
        VkResult rv = vk_vkGetSemaphoreCounterValue(d->dev, d->wake, &wake);
        pthread_mutex_lock(&d->mu);
        d->thread_waiting = false;
        if (r != VK_SUCCESS && r != VK_TIMEOUT)
            vk_fail(d, "vkWaitSemaphores", r, -EIO);
        if (rv == VK_SUCCESS)
            seen = wake;
        else
            vk_fail(d, "vkGetSemaphoreCounterValue", rv, -EIO);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int vk_completion_start(struct devq_pl_device *d)
{
    VkSemaphoreTypeCreateInfo ti = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE };
    VkSemaphoreCreateInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti };
    VkResult r = vk_vkCreateSemaphore(d->dev, &si, NULL, &d->wake);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateSemaphore", r, -ENOMEM);
    pthread_cond_init(&d->cond, NULL);
    int rc = pthread_create(&d->thread, NULL, thread_main, d);
    if (rc)
        return vk_host->error(-rc, "vulkan:%u: cannot start the completion thread: %s", d->ordinal,
                              strerror(rc));
    d->thread_started = true;
    return 0;
}

void vk_completion_stop(struct devq_pl_device *d)
{
    if (d->thread_started) {
        pthread_mutex_lock(&d->mu);
        d->stopping = true;
        pthread_cond_signal(&d->cond);
        VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, .semaphore = d->wake,
                                     .value = ++d->wake_value };
        vk_vkSignalSemaphore(d->dev, &si);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
        d->thread_started = false;
    }
    if (d->wake)
        vk_vkDestroySemaphore(d->dev, d->wake, NULL);
    d->wake = VK_NULL_HANDLE;
}
