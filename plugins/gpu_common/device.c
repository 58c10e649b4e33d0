/* SPDX-License-Identifier: MIT */
/* Device loss, failed calls and capabilities, the same on every GPU
 * driver: the plugins turn their driver's answers into these. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include "gpu_common.h"

void gpu_loss_init(struct gpu_loss *l)
{
    pthread_mutex_init(&l->mu, NULL);
    atomic_init(&l->lost, false);
    l->cause[0] = '\0';
}

bool gpu_lost(struct gpu_loss *l)
{
    return atomic_load_explicit(&l->lost, memory_order_acquire);
}

void gpu_loss_mark(struct gpu_loss *l, uint32_t ordinal, const char *call, const char *desc)
{
    pthread_mutex_lock(&l->mu);
    if (!atomic_load(&l->lost)) {
        snprintf(l->cause, sizeof l->cause, "%s: %s", call, desc);
        atomic_store_explicit(&l->lost, true, memory_order_release);
        gpu_host->log(DEVQ_LOG_BASIC, "%s:%u: device lost: %s", gpu_backend, ordinal, l->cause);
    }
    pthread_mutex_unlock(&l->mu);
}

void gpu_loss_clear(struct gpu_loss *l)
{
    pthread_mutex_lock(&l->mu);
    atomic_store(&l->lost, false);
    l->cause[0] = '\0';
    pthread_mutex_unlock(&l->mu);
}

int gpu_loss_error(struct gpu_loss *l, uint32_t ordinal, int err)
{
    return gpu_host->error(err, "%s:%u: device lost: %s", gpu_backend, ordinal, l->cause);
}

int gpu_fail(struct gpu_loss *l, uint32_t ordinal, const char *call, const char *desc, bool sticky, int err)
{
    if (sticky) {
        gpu_loss_mark(l, ordinal, call, desc);
        return gpu_host->error(-EIO, "%s: %s: %s: device %u lost", gpu_backend, call, desc, ordinal);
    }
    return gpu_host->error(err, "%s: %s: %s", gpu_backend, call, desc);
}

int gpu_device_count(uint32_t *count, int (*load)(void), uint32_t (*total)(void))
{
    *count = 0;
    int err = load();
    if (err)
        return err;
    *count = total();
    return 0;
}

uint64_t gpu_caps(const struct gpu_attrs *a)
{
    uint64_t caps = DEVQ_CAP_KERNELS | DEVQ_CAP_TIMING;
    if (a->prio_greatest < a->prio_least)
        caps |= DEVQ_CAP_PRIORITIES;
    if (a->copy_engines > 0)
        caps |= DEVQ_CAP_COPY_ENGINE;
    if (a->pools)
        caps |= DEVQ_CAP_ASYNC_ALLOC;
    /* the device reads and writes the host-mapped word (value.c) */
    if (a->value_ops && a->map_host)
        caps |= DEVQ_CAP_WAIT_VALUE | DEVQ_CAP_WRITE_VALUE;
    /* devq_queue_exec checks every launch against the kernel_iface the
     * plugin builds from it (devq-cuda(7)) */
    if (a->param_info)
        caps |= DEVQ_CAP_KERNEL_CHECK;
    /* a replayed run of launches is one driver graph launch (graph.c) */
    if (a->graphs)
        caps |= DEVQ_CAP_GRAPH_NATIVE;
    return caps;
}

void gpu_device_info(devq_device_info *info, const char *name, uint64_t total_memory, uint32_t compute_units,
                     uint64_t caps)
{
    snprintf(info->name, sizeof info->name, "%s", name);
    info->total_memory = total_memory;
    /* Channels when NCCL/RCCL can be found (not loaded here). */
    info->caps = caps | (gpu_nccl_available() ? DEVQ_CAP_CHANNELS : 0);
    info->compute_units = compute_units;
}

int gpu_clamp_priority(long prio, int least, int greatest)
{
    if (prio > least)
        prio = least;
    if (prio < greatest)
        prio = greatest;
    return (int)prio;
}
