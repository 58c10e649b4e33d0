/* SPDX-License-Identifier: MIT */
/* Signal storage: lib's 64-bit host word, registered and mapped so that
 * a stream can wait on it (hipStreamWaitValue64 with hipStreamWaitValueGte)
 * or write it (hipStreamWriteValue64) without a host round trip.
 *
 * HIP's >= is a plain unsigned compare of (*word & mask), where CUDA's is
 * cyclic; lib's signal values only grow, so both mean "reached". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "hip_plugin.h"

struct devq_pl_value {
    struct devq_pl_device *dev;
    uint64_t *host_word;
    void     *dptr;
    bool      registered;        /* we registered it (else someone else had) */
};

static int no_memops(devq_pl_device *dev)
{
    if (*hip_rt.missing_memops)
        return hip_host->error(-ENOTSUP, "hip: value wait/write: %s", hip_rt.missing_memops);
    return hip_host->error(-ENOTSUP, "hip: device %u cannot wait on or write host memory "
                           "(hipDeviceAttributeCanUseStreamWaitValue is 0)", dev->ordinal);
}

int hip_value_attach(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out)
{
    if (!(dev->caps & DEVQ_CAP_WAIT_VALUE))
        return no_memops(dev);
    int err = hip_enter(dev);
    if (err)
        return err;
    if (!host_word || ((uintptr_t)host_word & 7))
        return hip_host->error(-EINVAL, "hip: value_attach: word %p is not 8-byte aligned",
                               (void *)host_word);
    struct devq_pl_value *v = calloc(1, sizeof *v);
    if (!v)
        return hip_host->error(-ENOMEM, "hip: out of memory for a value");
    v->dev = dev;
    v->host_word = host_word;
    hipError_t r = hip_rt.HostRegister(host_word, sizeof *host_word,
                                       hipHostRegisterPortable | hipHostRegisterMapped);
    if (r == hipSuccess)
        v->registered = true;
    else if (r != hipErrorHostMemoryAlreadyRegistered) {
        free(v);
        return hip_fail(dev, "hipHostRegister", r);
    }
    r = hip_rt.HostGetDevicePointer(&v->dptr, host_word, 0);
    if (r != hipSuccess) {
        if (v->registered)
            hip_rt.HostUnregister(host_word);
        free(v);
        return hip_fail(dev, "hipHostGetDevicePointer", r);
    }
    *out = v;
    return 0;
}

void hip_value_detach(devq_pl_value *v)
{
    if (!v)
        return;
    if (v->registered) {
        hip_rt.SetDevice((int)v->dev->ordinal);
        hip_rt.HostUnregister(v->host_word);
    }
    free(v);
}

/* Stream-ordered wait (>= value, all bits) or write of v's word. */
static int value_op(devq_pl_stream *s, devq_pl_value *v, uint64_t value, bool write)
{
    int err = hip_enter(s->dev);
    if (err)
        return err;
    hipError_t r = write ? hip_rt.StreamWriteValue64(s->stream, v->dptr, value, 0)
                         : hip_rt.StreamWaitValue64(s->stream, v->dptr, value, hipStreamWaitValueGte,
                                                    UINT64_MAX);
    if (r == hipSuccess)
        return 0;
    return hip_fail(s->dev, write ? "hipStreamWriteValue64" : "hipStreamWaitValue64", r);
}

int hip_stream_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, false);
}

int hip_stream_write_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, true);
}
