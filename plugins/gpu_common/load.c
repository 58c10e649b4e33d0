/* SPDX-License-Identifier: MIT */
/* The driver loaded once, at the first device_count or device_open (a
 * machine without one still loads the plugin and says why), and the
 * devices it has.  The plugin's load (gpu_drv.load) opens the library
 * and resolves its entry points, reporting failures with gpu_load_fail,
 * and ends with gpu_load_devices. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "driver.h"

struct gpu_missing gpu_missing;

static struct {
    pthread_once_t once;
    int err;   /* 0 or negative errno */
    pid_t pid; /* the process that loaded it */
    char reason[768];
    uint32_t ndevices;
    struct devq_pl_device *devices;
} loaded = { .once = PTHREAD_ONCE_INIT };

int gpu_load_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(loaded.reason, sizeof loaded.reason, fmt, ap);
    va_end(ap);
    loaded.err = err;
    return err;
}

int gpu_load_library(const char *env, const char *dflt, const char *install, const char **path, void **lib)
{
    const char *p = gpu_host->getenv(env);
    if (!p || !*p)
        p = dflt;
    *path = p;
    /* Never unloaded: the driver keeps threads of its own. */
    *lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (*lib)
        return 0;
    const char *e = dlerror();
    return gpu_load_fail(-ENODEV, "%s: %s not found (%s); %s or set %s", gpu_backend, p,
                         e ? e : "dlopen failed", install, env);
}

int gpu_load_devices(int count, const char *path, const char *ver)
{
    struct devq_pl_device *devices = calloc((size_t)count, sizeof *devices);
    if (!devices)
        return gpu_load_fail(-ENOMEM, "%s: out of memory for %d devices", gpu_backend, count);
    for (int i = 0; i < count; i++) {
        struct devq_pl_device *d = &devices[i];
        d->ordinal = (uint32_t)i;
        pthread_mutex_init(&d->mu, NULL);
        gpu_evwait_init(&d->waits, &gpu_evwait_drv, d);
        gpu_loss_init(&d->loss);
        gpu_stage_init(&d->stage);
        int err = gpu_drv.device_handle(&d->dev, i, ver);
        if (err) {
            free(devices);
            return err;
        }
    }
    /* Never freed: lib closed every device before fini, and driver
     * threads may still deliver a late callback into them. */
    loaded.devices = devices;
    loaded.ndevices = (uint32_t)count;
    gpu_host->log(DEVQ_LOG_BASIC, "%s: %s: %s %s, %d device(s)", gpu_backend, path, gpu_drv.driver_word, ver,
                  count);
    return 0;
}

static void load_once(void)
{
    loaded.pid = getpid();
    gpu_drv.load();
}

int gpu_drv_load(void)
{
    pthread_once(&loaded.once, load_once);
    if (loaded.err)
        return gpu_host->error(loaded.err, "%s", loaded.reason);
    /* Neither CUDA nor HIP survives fork(): in a child forked after the
     * driver's init every call fails (CUDA_ERROR_NOT_INITIALIZED), so
     * say why here rather than at a primary-context call. */
    pid_t self = getpid();
    if (self != loaded.pid)
        return gpu_host->error(-ENODEV,
                               "%s: the %s was initialized in process %d and this process (%d) was forked "
                               "from it: it cannot be used across fork(); open devq devices only in the "
                               "process that uses them (after fork), or exec",
                               gpu_backend, gpu_drv.driver_word, (int)loaded.pid, (int)self);
    return 0;
}

uint32_t gpu_drv_device_total(void)
{
    return loaded.ndevices;
}

struct devq_pl_device *gpu_drv_device_get(uint32_t ordinal)
{
    return ordinal < loaded.ndevices ? &loaded.devices[ordinal] : NULL;
}
