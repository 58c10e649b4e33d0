/* SPDX-License-Identifier: MIT */
/* Signal storage: lib's 64-bit host word, registered and mapped so that
 * a stream can wait on it (>=) or write it without a host round trip.
 *
 * CUDA's >= is cyclic, HIP's a plain unsigned compare of the whole word;
 * lib's signal values only grow, so both mean "reached". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "driver.h"

struct devq_pl_value {
    struct devq_pl_device *dev;
    uint64_t *host_word;
    void *dptr;
    bool registered; /* we registered it (else someone else had) */
};

static int no_memops(devq_pl_device *dev)
{
    if (*gpu_missing.memops)
        return gpu_host->error(-ENOTSUP, "%s: value wait/write: %s", gpu_backend, gpu_missing.memops);
    return gpu_host->error(-ENOTSUP, "%s: device %u cannot wait on or write host memory (%s is 0)",
                           gpu_backend, dev->ordinal, gpu_drv.memops_attr);
}

int gpu_value_attach(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out)
{
    if (!(dev->caps & DEVQ_CAP_WAIT_VALUE))
        return no_memops(dev);
    int err = gpu_enter(dev);
    if (err)
        return err;
    if (!host_word || ((uintptr_t)host_word & 7))
        return gpu_host->error(-EINVAL, "%s: value_attach: word %p is not 8-byte aligned", gpu_backend,
                               (void *)host_word);
    struct devq_pl_value *v = gpu_zalloc(sizeof *v, "a value");
    if (!v)
        return -ENOMEM;
    v->dev = dev;
    v->host_word = host_word;
    int r = gpu_drv.host_register(host_word, sizeof *host_word);
    if (r == 0)
        v->registered = true;
    else if (r != gpu_drv.already_registered) {
        free(v);
        return gpu_drv_fail(dev, gpu_drv.call.host_register, r);
    }
    r = gpu_drv.host_device_pointer(&v->dptr, host_word);
    if (r) {
        if (v->registered)
            gpu_drv.host_unregister(host_word);
        free(v);
        return gpu_drv_fail(dev, gpu_drv.call.host_device_pointer, r);
    }
    *out = v;
    return 0;
}

void gpu_value_detach(devq_pl_value *v)
{
    if (!v)
        return;
    if (v->registered) {
        gpu_drv.make_current(v->dev);
        gpu_drv.host_unregister(v->host_word);
    }
    free(v);
}

/* Stream-ordered wait (>= value) or write of v's word. */
static int value_op(devq_pl_stream *s, devq_pl_value *v, uint64_t value, bool write)
{
    int err = gpu_enter(s->dev);
    if (err)
        return err;
    int r = write ? gpu_drv.write_value(s->stream, v->dptr, value)
                  : gpu_drv.wait_value(s->stream, v->dptr, value);
    return gpu_drv_check(s->dev, write ? gpu_drv.call.write_value : gpu_drv.call.wait_value, r);
}

int gpu_stream_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, false);
}

int gpu_stream_write_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, true);
}
