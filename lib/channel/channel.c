/* SPDX-License-Identifier: MIT */
/* Channel life cycle: create (the launcher's world, rank 0's id, or the
 * program's own group from a handle),
 * split, rank/size, destroy.  Creating and splitting are collective:
 * every rank of the group calls them, in the same order. */
#include "config.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "channel.h"
#include "device.h"
#include "error.h"
#include "log.h"

#define DEFAULT_TIMEOUT_NS (60ull * 1000000000ull)

static _Atomic unsigned channel_numbers;

int devq__channel_check(const devq_channel *ch, const char *fn)
{
    if (!ch)
        return devq__err(-EINVAL, "%s: channel is NULL", fn);
    if (ch->obj.magic != DEVQ_MAGIC_CHANNEL)
        return devq__err(-EINVAL, "%s: %p is not a live channel (destroyed, or not a devq_channel)", fn,
                         (const void *)ch);
    return 0;
}

static void channel_free(struct devq_object *o)
{
    devq_channel *ch = (devq_channel *)o;
    ch->obj.magic = DEVQ_MAGIC_DEAD;
    /* A group abandoned on a timeout may still be inside the engine;
     * the engine keeps what it cannot withdraw. */
    if (ch->comm)
        ch->eng->comm_destroy(ch->comm);
    if (ch->pl) {
        devq__chan_stream_fini(ch); /* the watchdog stops first */
        ch->pl->chan_destroy(ch->pc);
    }
    pthread_mutex_destroy(&ch->lock);
    pthread_cond_destroy(&ch->idle);
    pthread_cond_destroy(&ch->wd_cv);
    pthread_cond_destroy(&ch->abort_cv);
    free(ch->pend);
    free(ch->pend_in);
    free(ch->reqs);
    free(ch->req_names);
    free(ch->spans);
    devq_device_close(ch->dev);
    free(ch);
}

/* One of comm (a host engine's) or pc (the backend's) is set. */
static int wrap(struct devq_device *dev, const struct devq_engine_ops *eng, devq_eng_comm *comm,
                devq_pl_chan *pc, devq_channel **out, const char *fn)
{
    devq_channel *ch = calloc(1, sizeof *ch);
    if (!ch) {
        if (eng)
            eng->comm_destroy(comm);
        else
            dev->ops->chan_destroy(pc);
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    }
    devq__object_init(&ch->obj, DEVQ_MAGIC_CHANNEL, channel_free);
    devq__device_retain(dev);
    ch->dev = dev;
    ch->eng = eng;
    ch->comm = comm;
    if (eng) {
        ch->rank = eng->comm_rank(comm);
        ch->size = eng->comm_size(comm);
        ch->engine_name = eng->name ? eng->name : "?";
    } else {
        ch->pl = dev->ops;
        ch->pc = pc;
        ch->rank = ch->pl->chan_rank(pc);
        ch->size = ch->pl->chan_size(pc);
        ch->engine_name = !strcmp(dev->info.backend, "hip") ? "RCCL" : "NCCL";
    }
    ch->number = atomic_fetch_add(&channel_numbers, 1) + 1;
    atomic_init(&ch->timeout_ns, DEFAULT_TIMEOUT_NS);
    pthread_mutex_init(&ch->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ch->idle, &ca);
    pthread_cond_init(&ch->wd_cv, &ca);
    pthread_cond_init(&ch->abort_cv, &ca);
    pthread_condattr_destroy(&ca);
    devq__log(DEVQ_LOG_FULL, "channel #%u: rank %d of %d on %s:%d (%s)", ch->number, ch->rank, ch->size,
              dev->info.backend, dev->info.ordinal, ch->engine_name);
    *out = ch;
    return 0;
}

DEVQ_API int devq_channel_id(devq_device *dev, void *id, size_t *size)
{
    const char *fn = "devq_channel_id";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!id || !size)
        return devq__err(-EINVAL, "%s: %s is NULL", fn, id ? "size" : "id");
    const struct devq_engine_ops *eng;
    if ((r = devq__channel_engine(dev, &eng, fn)) < 0)
        return r;
    if (!eng) {
        r = dev->ops->chan_id(dev->pl, id, size);
        return r < 0 ? devq__err(r, "%s: %s", fn, devq__errmsg_peek()) : 0;
    }
    if (!eng->comm_id)
        return devq__err(-ENOTSUP,
                         "%s: engine '%s' has no rendezvous ids; use the launcher's world "
                         "(desc NULL)",
                         fn, eng->name);
    return eng->comm_id(id, size);
}

/* cuda/hip under a launcher: the launcher's world is MPI's, and the MPI
 * engine carries rank 0's NCCL/RCCL id (bootstrap.c). */
static int gpu_world(struct devq_device *dev, int rank, int size, devq_pl_chan **pc, const char *fn)
{
    const char *lib = !strcmp(dev->info.backend, "hip") ? "RCCL" : "NCCL";
    if (rank >= 0)
        return devq__err(-EINVAL,
                         "%s: desc gives rank %d of %d but no id: %s needs rank 0's "
                         "devq_channel_id() bytes (or desc NULL under mpirun for the launcher's world)",
                         fn, rank, size, lib);
    if (!devq__channel_under_launcher())
        return devq__err(-ENOTSUP,
                         "%s: no launcher's world: this process was not started by mpirun, mpiexec "
                         "or srun; give desc with this rank, the size and rank 0's devq_channel_id() bytes",
                         fn);
    const struct devq_engine_ops *mpi;
    int r = devq__channel_mpi_engine(&mpi, fn);
    if (r < 0)
        return devq__err(r, "%s: the launcher's world of %s:%d (%s) is joined over MPI: %s", fn,
                         dev->info.backend, dev->info.ordinal, lib, devq__errmsg_peek());
    devq_eng_comm *boot = NULL;
    if ((r = mpi->comm_create(-1, -1, NULL, 0, &boot)) < 0)
        return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
    return devq__channel_over_mpi(dev, mpi, boot, pc, fn);
}

DEVQ_API int devq_channel_create(devq_device *dev, const devq_channel_desc *desc, devq_channel **out)
{
    const char *fn = "devq_channel_create";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    int rank = -1, size = -1;
    const void *id = NULL;
    size_t id_size = 0;
    if (desc) {
        rank = desc->rank;
        size = desc->size;
        id = desc->id;
        id_size = desc->id_size;
        if ((rank < 0) != (size < 0) || (rank >= 0 && rank >= size) || size == 0 || rank < -1 || size < -1)
            return devq__err(-EINVAL,
                             "%s: desc rank %d / size %d: give both as -1 (the launcher's world) or "
                             "0 <= rank < size",
                             fn, rank, size);
        if (id && !id_size)
            return devq__err(-EINVAL, "%s: desc id without id_size; pass the bytes devq_channel_id() gave",
                             fn);
        if (id && rank < 0)
            return devq__err(-EINVAL, "%s: desc id given with rank -1; give this process's rank and the size",
                             fn);
    }
    const struct devq_engine_ops *eng;
    if ((r = devq__channel_engine(dev, &eng, fn)) < 0)
        return r;
    if (!eng) {
        devq_pl_chan *pc = NULL;
        if (!id)
            r = gpu_world(dev, rank, size, &pc, fn);
        else if ((r = dev->ops->chan_create(dev->pl, rank, size, id, id_size, &pc)) < 0)
            r = devq__err(r, "%s: %s", fn, devq__errmsg_peek());
        return r < 0 ? r : wrap(dev, NULL, NULL, pc, out, fn);
    }
    devq_eng_comm *comm = NULL;
    if ((r = eng->comm_create(rank, size, id, id_size, &comm)) < 0)
        return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
    return wrap(dev, eng, comm, NULL, out, fn);
}

/* The program's own group (an MPI communicator, devq_mpi.h): the
 * engine makes a group of its own from it, so devq's traffic never
 * matches the program's.  The handle's layout is the engine's. */
DEVQ_API int devq_channel_create_from_handle(devq_device *dev, const void *handle, size_t handle_size,
                                             devq_channel **out)
{
    const char *fn = "devq_channel_create_from_handle";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    if (!handle || !handle_size)
        return devq__err(-EINVAL,
                         "%s: handle is %s; pass the engine's handle struct and its size (for MPI, "
                         "devq_channel_create_mpi in devq_mpi.h fills one)",
                         fn, handle ? "0 bytes" : "NULL");
    const struct devq_engine_ops *eng;
    if ((r = devq__channel_engine(dev, &eng, fn)) < 0)
        return r;
    /* cuda/hip (NCCL/RCCL): the program's MPI group carries rank 0's id. */
    const struct devq_engine_ops *boot_eng = eng;
    if (!eng && (r = devq__channel_mpi_engine(&boot_eng, fn)) < 0)
        return r;
    eng = boot_eng;
    /* An engine built before the entry was appended has a shorter table. */
    if (eng->size < DEVQ_ENGINE_OPS_MIN_SIZE + sizeof eng->comm_from_handle || !eng->comm_from_handle)
        return devq__err(-ENOTSUP,
                         "%s: engine '%s' cannot take the program's own group; install the devq-mpi "
                         "engine of this libdevq, or use devq_channel_create",
                         fn, eng->name);
    devq_eng_comm *comm = NULL;
    if ((r = eng->comm_from_handle(handle, handle_size, &comm)) < 0)
        return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
    if (dev->ops->chan_create) {
        devq_pl_chan *pc = NULL;
        if ((r = devq__channel_over_mpi(dev, eng, comm, &pc, fn)) < 0)
            return r;
        return wrap(dev, NULL, NULL, pc, out, fn);
    }
    return wrap(dev, eng, comm, NULL, out, fn);
}

DEVQ_API int devq_channel_split(devq_channel *ch, int color, int key, devq_channel **out)
{
    const char *fn = "devq_channel_split";
    int r = devq__channel_check(ch, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    if (color < 0)
        return devq__err(-EINVAL,
                         "%s: color %d is negative; ranks that want no part still call split with a "
                         "color of their own",
                         fn, color);
    if (ch->pl) {
        if ((r = devq__channel_broken_err(ch)) < 0)
            return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
        devq_pl_chan *pc = NULL;
        if ((r = ch->pl->chan_split(ch->pc, color, key, &pc)) < 0)
            return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
        return wrap(ch->dev, NULL, NULL, pc, out, fn);
    }
    if (!ch->eng->comm_split)
        return devq__err(-ENOTSUP, "%s: engine '%s' cannot split", fn, ch->eng->name);
    devq_eng_comm *comm = NULL;
    if ((r = ch->eng->comm_split(ch->comm, color, key, &comm)) < 0)
        return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
    return wrap(ch->dev, ch->eng, comm, NULL, out, fn);
}

DEVQ_API int devq_channel_rank(const devq_channel *ch)
{
    int r = devq__channel_check(ch, "devq_channel_rank");
    return r < 0 ? r : ch->rank;
}

DEVQ_API int devq_channel_size(const devq_channel *ch)
{
    int r = devq__channel_check(ch, "devq_channel_size");
    return r < 0 ? r : ch->size;
}

DEVQ_API int devq_channel_set_timeout(devq_channel *ch, uint64_t timeout_ns)
{
    int r = devq__channel_check(ch, "devq_channel_set_timeout");
    if (r < 0)
        return r;
    atomic_store(&ch->timeout_ns, timeout_ns);
    return 0;
}

/* Batches that still hold the channel keep it alive: the engine's
 * communicator goes with the last of them. */
DEVQ_API void devq_channel_destroy(devq_channel *ch)
{
    if (devq__channel_check(ch, "devq_channel_destroy") < 0)
        return;
    devq__object_release_here(&ch->obj);
}
