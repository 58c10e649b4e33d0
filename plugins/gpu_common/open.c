/* SPDX-License-Identifier: MIT */
/* Devices: the driver loaded at the first count or open, each device
 * made usable at its first open (the plugin's first_open: cuda retains
 * the primary context, hip selects the device) and probed for what it
 * can do, and given back at its last close (the plugin's last_close). */
#define _GNU_SOURCE
#include <errno.h>
#include "driver.h"

int gpu_drv_device_count(uint32_t *count)
{
    return gpu_device_count(count, gpu_drv_load, gpu_drv_device_total);
}

/* Read what the device can do; it is current. */
static int probe(struct devq_pl_device *d)
{
    int r = gpu_drv.device_name(d->name, sizeof d->name, d->dev);
    if (r)
        return gpu_drv_fail(d, gpu_drv.call.device_name, r);
    size_t total = 0;
    if ((r = gpu_drv.total_mem(&total, d->dev)))
        return gpu_drv_fail(d, gpu_drv.call.total_mem, r);
    d->total_memory = total;
    if ((r = gpu_drv.priority_range(&d->prio_least, &d->prio_greatest)))
        return gpu_drv_fail(d, gpu_drv.call.priority_range, r);
    struct gpu_attrs a = { .prio_least = d->prio_least, .prio_greatest = d->prio_greatest };
    int units = 0;
    int err = gpu_drv.attrs(d, &a, &units);
    if (err)
        return err;
    d->compute_units = (uint32_t)units;
    a.graphs = !*gpu_missing.graph;
    d->caps = gpu_caps(&a);
    gpu_host->log(DEVQ_LOG_FULL, "%s:%u: %s, %u %s, %d copy engines, pools %d, %s %d", gpu_backend,
                  d->ordinal, d->name, d->compute_units, gpu_drv.units, a.copy_engines, a.pools,
                  gpu_drv.value_ops_word, a.value_ops);
    return 0;
}

int gpu_device_open(uint32_t ordinal, devq_pl_device **out)
{
    int err = gpu_drv_load();
    if (err)
        return err;
    struct devq_pl_device *d = gpu_drv_device_get(ordinal);
    if (!d)
        return gpu_host->error(-ENODEV, "%s: no device %u (this %s has %u)", gpu_backend, ordinal,
                               gpu_drv.driver_word, gpu_drv_device_total());
    pthread_mutex_lock(&d->mu);
    if (d->refs == 0 && !(err = gpu_drv.first_open(d)) && (err = probe(d)) && gpu_drv.undo_open)
        gpu_drv.undo_open(d);
    if (!err)
        d->refs++;
    pthread_mutex_unlock(&d->mu);
    if (!err)
        *out = d;
    return err;
}

void gpu_device_close(devq_pl_device *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->refs > 0 && --d->refs == 0) {
        /* lib closes a device with its streams idle: every staging
         * chunk is back, and is unregistered while the context lives */
        if (!gpu_drv.make_current(d))
            gpu_stage_drain(d);
        gpu_drv.last_close(d);
    }
    pthread_mutex_unlock(&d->mu);
}

int gpu_drv_device_info(devq_pl_device *d, devq_device_info *info)
{
    gpu_device_info(info, d->name, d->total_memory, d->compute_units, d->caps);
    return 0;
}
