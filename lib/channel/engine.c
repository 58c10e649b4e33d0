/* SPDX-License-Identifier: MIT */
/* Loading a channel engine: dlopen'd on the first channel, never at
 * device open, so libdevq never links libmpi (DESIGN §11).  The module
 * is found at $DEVQ_MPI_ENGINE, else in the engines/ folder beside the
 * backend plugins (outside the folder the backend loader scans, which
 * would otherwise load libmpi into every devq program). */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "channel.h"
#include "device.h"
#include "env.h"
#include "error.h"
#include "host.h"
#include "log.h"
#include "plugin_dir.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct devq_engine_ops *mpi_ops;
static int mpi_err;
static char mpi_msg[DEVQ_ERRMSG_MAX];

static void engine_path(char *out, size_t len)
{
    const char *env = devq__getenv("DEVQ_MPI_ENGINE");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    char dir[4096];
    devq__plugin_install_dir((const void *)engine_path, dir, sizeof dir);
    snprintf(out, len, "%s/engines/devq-mpi.so", dir);
}

static void load_mpi(void)
{
    char path[4200];
    engine_path(path, sizeof path);
    dlerror();
    /* RTLD_GLOBAL: Open MPI's own components (dlopen'd by libmpi)
     * resolve symbols of libmpi through the global scope. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!dl) {
        const char *e = dlerror();
        mpi_err = -ENOTSUP;
        snprintf(mpi_msg, sizeof mpi_msg,
                 "channels: cannot load the MPI engine %.300s: %s (install devq's MPI "
                 "engine, built when configure finds Open MPI or MPICH, or set DEVQ_MPI_ENGINE)",
                 path, e ? e : "dlopen failed");
        return;
    }
    void *sym = dlsym(dl, DEVQ_ENGINE_INIT_SYMBOL);
    devq_engine_init_fn init;
    if (!sym) {
        mpi_err = -ENOTSUP;
        snprintf(mpi_msg, sizeof mpi_msg, "channels: %.300s has no '%s' symbol: not a devq engine", path,
                 DEVQ_ENGINE_INIT_SYMBOL);
        return;
    }
    memcpy(&init, &sym, sizeof init);
    const struct devq_engine_ops *ops = NULL;
    int r = init(&devq__host, DEVQ_HOST_ABI_VERSION, &ops);
    if (r < 0 || !ops) {
        mpi_err = r < 0 ? r : -ENOTSUP;
        snprintf(mpi_msg, sizeof mpi_msg, "channels: engine %.300s refused to start: %s", path,
                 devq__errmsg_peek());
        return;
    }
    if (ops->abi_version != DEVQ_ENGINE_ABI_VERSION || ops->size < DEVQ_ENGINE_OPS_MIN_SIZE || !ops->start ||
        !ops->test || !ops->abandon || !ops->comm_create || !ops->comm_destroy || !ops->comm_rank ||
        !ops->comm_size) {
        mpi_err = -ENOTSUP;
        snprintf(mpi_msg, sizeof mpi_msg,
                 "channels: engine %.300s has ABI %u (size %u); this libdevq needs ABI %u "
                 "(size >= %zu) with every entry",
                 path, ops->abi_version, ops->size, (unsigned)DEVQ_ENGINE_ABI_VERSION,
                 (size_t)DEVQ_ENGINE_OPS_MIN_SIZE);
        return;
    }
    mpi_ops = ops;
    devq__log(DEVQ_LOG_FULL, "channels: loaded engine '%s' from %s", ops->name ? ops->name : "?", path);
}

/* Only host-addressable device memory can be handed to MPI. */
static int is_host_backend(const struct devq_device *dev)
{
    return !strcmp(dev->info.backend, "cpu");
}

/* Whether dev's plugin runs channels itself, on its streams (cuda:
 * NCCL, hip: RCCL; devq_plugin.h's chan_* entries). */
static int has_stream_channels(const struct devq_device *dev)
{
    return dev->ops->chan_create != NULL;
}

int devq__channel_engine(struct devq_device *dev, const struct devq_engine_ops **out, const char *fn)
{
    *out = NULL;
    if (has_stream_channels(dev))
        return 0; /* the plugin loads its library at chan_id/chan_create */
    if (!is_host_backend(dev))
        return devq__err(-ENOTSUP,
                         "%s: %s:%d has no channels: its plugin has no channel entries (channels run "
                         "on the cpu backend over MPI, on cuda over NCCL and on hip over RCCL)",
                         fn, dev->info.backend, dev->info.ordinal);
    pthread_once(&once, load_mpi);
    if (!mpi_ops)
        return devq__err(mpi_err, "%s: %s", fn, mpi_msg);
    *out = mpi_ops;
    return 0;
}

int devq__channel_mpi_engine(const struct devq_engine_ops **out, const char *fn)
{
    pthread_once(&once, load_mpi);
    if (!mpi_ops)
        return devq__err(mpi_err, "%s: %s", fn, mpi_msg);
    *out = mpi_ops;
    return 0;
}

int devq__channel_engine_present(const struct devq_device *dev)
{
    if (has_stream_channels(dev))
        return (dev->info.caps & DEVQ_CAP_CHANNELS) != 0;
    if (!is_host_backend(dev))
        return 0;
    char path[4200];
    engine_path(path, sizeof path);
    return access(path, R_OK) == 0;
}

void devq__channel_attach(struct devq_device *dev)
{
    /* A stream-channel plugin sets the bit itself when its library can
     * be found; no other backend may claim it. */
    if (has_stream_channels(dev))
        return;
    if (devq__channel_engine_present(dev))
        dev->info.caps |= DEVQ_CAP_CHANNELS;
    else
        dev->info.caps &= ~DEVQ_CAP_CHANNELS;
}
