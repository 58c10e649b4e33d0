/* SPDX-License-Identifier: MIT */
/* Completion threads: one per stream, started when the stream is
 * created, so a thread that cannot start is vk_stream_create's error
 * (-EAGAIN, retried by the next queue create) and never a host item
 * with nobody to run it (devq(7) THREADS).  Each runs its stream's host items (host callbacks and
 * host copies) in order, once the stream work before them is reached,
 * then reaches the item's own value from the host and lets the stream's
 * held work go.  It sleeps in vkWaitSemaphores on its stream's semaphore
 * alone, or on a condition variable when it has nothing to do: Mesa's
 * vkWaitSemaphores with WAIT_ANY over several timeline semaphores polls
 * (a core kept busy; measured), so no thread waits on more than one.
 * A stream has at most one item handed over (the rest are held), so its
 * thread never has to be interrupted in a wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

static void *thread_main(void *arg);

int vk_completion_start(struct devq_pl_stream *s)
{
    struct devq_pl_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    int rc = s->thread_started ? 0 : pthread_create(&s->thread, NULL, thread_main, s);
    if (!rc)
        s->thread_started = true;
    pthread_mutex_unlock(&d->mu);
    if (rc)
        return vk_host->error(rc == ENOMEM ? -ENOMEM : -EAGAIN,
                              "vulkan:%u: cannot start a "
                              "stream's completion thread: pthread_create: %s (raise RLIMIT_NPROC "
                              "or free memory, then create the queue again)",
                              d->ordinal, strerror(rc));
    return 0;
}

void vk_completion_push(struct devq_pl_stream *s, struct vk_item *item)
{
    struct devq_pl_device *d = s->dev;
    s->active = item;
    if (!s->thread_started && !s->thread_failed) {
        int rc = pthread_create(&s->thread, NULL, thread_main, s);
        if (rc) {
            /* Without a thread the item can never run: the stream's
             * waiters get the device's loss instead of a hang. */
            s->thread_failed = true;
            char why[96];
            snprintf(why, sizeof why, "cannot start a completion thread: %s", strerror(rc));
            vk_mark_lost(d, why);
        }
        s->thread_started = !rc;
    }
    pthread_cond_signal(&s->cond);
}

/* Run one item; called and returns with mu held. */
static void run(struct devq_pl_device *d, struct devq_pl_stream *s, struct vk_item *it)
{
    bool lost = atomic_load(&d->lost);
    if (it->kind == VK_ITEM_HOST) {
        int status = lost ? -ENODEV : s->latched;
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
    } else if (it->kind == VK_ITEM_MEMCPY && !lost && !s->latched) {
        pthread_mutex_unlock(&d->mu);
        memcpy(it->dst, it->src, it->n);
        pthread_mutex_lock(&d->mu);
    }
    vk_transient_free(d, it->release);
    if (!lost) {
        VkSemaphoreSignalInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
                                     .semaphore = s->sem,
                                     .value = it->signal };
        VkResult r = vk_vkSignalSemaphore(d->dev, &si);
        if (r != VK_SUCCESS)
            vk_fail(d, "vkSignalSemaphore", r, -EIO);
    }
    s->submitted = it->signal;
    s->busy = false;
    /* The item was the last thing given a value and nothing is recorded
     * or held after it: everything queued so far has run (the item ran
     * only once the work before it was reached). */
    if (!lost && s->next_value == it->signal && !s->open && !s->nwaits && !s->head && !s->latched &&
        !s->status_msg[0])
        atomic_store_explicit(&s->clean, atomic_load_explicit(&s->queued, memory_order_relaxed),
                              memory_order_release);
    free(it);
    vk_pump(d);
}

/* The stream's value `after` is reached, or the device is lost.  The
 * wait is in slices only so that a loss the plugin marks itself (a
 * refused submission, whose value never comes) ends it too. */
static void wait_reached(struct devq_pl_stream *s, uint64_t after)
{
    struct devq_pl_device *d = s->dev;
    VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                               .semaphoreCount = 1,
                               .pSemaphores = &s->sem,
                               .pValues = &after };
    VkResult r = vk_vkWaitSemaphores(d->dev, &wi, 1000000000ull);
    if (r != VK_SUCCESS && r != VK_TIMEOUT)
        vk_fail(d, "vkWaitSemaphores", r, -EIO);
}

static void *thread_main(void *arg)
{
    struct devq_pl_stream *s = arg;
    struct devq_pl_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    while (!s->stopping) {
        struct vk_item *it = s->active;
        if (!it) {
            pthread_cond_wait(&s->cond, &d->mu);
            continue;
        }
        if (!atomic_load(&d->lost) && vk_stream_reached(s) < it->after) {
            /* The semaphore lives as long as the stream, which lib
             * destroys only after this item ran (and joins us first). */
            pthread_mutex_unlock(&d->mu);
            wait_reached(s, it->after);
            pthread_mutex_lock(&d->mu);
            continue;
        }
        s->active = NULL;
        run(d, s, it);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

void vk_completion_stop(struct devq_pl_stream *s)
{
    struct devq_pl_device *d = s->dev;
    pthread_mutex_lock(&d->mu);
    bool started = s->thread_started;
    s->stopping = true;
    s->thread_started = false;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&d->mu);
    if (started)
        pthread_join(s->thread, NULL);
}

void vk_completion_stop_all(struct devq_pl_device *d)
{
    for (;;) {
        struct devq_pl_stream *found = NULL;
        pthread_mutex_lock(&d->mu);
        for (struct devq_pl_stream *s = d->streams; s && !found; s = s->next)
            if (s->thread_started)
                found = s;
        pthread_mutex_unlock(&d->mu);
        if (!found)
            return;
        vk_completion_stop(found);
    }
}
