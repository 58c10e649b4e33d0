/* SPDX-License-Identifier: MIT */
/* Signal storage: lib's 64-bit host word, registered and mapped so that
 * a stream can wait on it (cuStreamWaitValue64, cyclic >=) or write it
 * (cuStreamWriteValue64) without a host round trip. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "cuda_plugin.h"

struct devq_pl_value {
    struct devq_pl_device *dev;
    uint64_t   *host_word;
    CUdeviceptr dptr;
    bool        registered;      /* we registered it (else someone else had) */
};

static int no_memops(devq_pl_device *dev)
{
    if (*cu_drv.missing_memops)
        return cu_host->error(-ENOTSUP, "cuda: value wait/write: %s", cu_drv.missing_memops);
    return cu_host->error(-ENOTSUP, "cuda: device %u cannot wait on or write host memory "
                          "(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS is 0)", dev->ordinal);
}

int cu_value_attach(devq_pl_device *dev, uint64_t *host_word, devq_pl_value **out)
{
    if (!(dev->caps & DEVQ_CAP_WAIT_VALUE))
        return no_memops(dev);
    int err = cu_enter(dev);
    if (err)
        return err;
    if (!host_word || ((uintptr_t)host_word & 7))
        return cu_host->error(-EINVAL, "cuda: value_attach: word %p is not 8-byte aligned", (void *)host_word);
    struct devq_pl_value *v = calloc(1, sizeof *v);
    if (!v)
        return cu_host->error(-ENOMEM, "cuda: out of memory for a value");
    v->dev = dev;
    v->host_word = host_word;
    CUresult r = cu_drv.MemHostRegister(host_word, sizeof *host_word,
                                        CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (r == CUDA_SUCCESS)
        v->registered = true;
    else if (r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
        free(v);
        return cu_fail(dev, "cuMemHostRegister", r);
    }
    r = cu_drv.MemHostGetDevicePointer(&v->dptr, host_word, 0);
    if (r != CUDA_SUCCESS) {
        if (v->registered)
            cu_drv.MemHostUnregister(host_word);
        free(v);
        return cu_fail(dev, "cuMemHostGetDevicePointer", r);
    }
    *out = v;
    return 0;
}

void cu_value_detach(devq_pl_value *v)
{
    if (!v)
        return;
    if (v->registered) {
        cu_drv.CtxSetCurrent(v->dev->ctx);
        cu_drv.MemHostUnregister(v->host_word);
    }
    free(v);
}

/* Stream-ordered wait (>= value) or write of v's word. */
static int value_op(devq_pl_stream *s, devq_pl_value *v, uint64_t value, bool write)
{
    int err = cu_enter(s->dev);
    if (err)
        return err;
    CUresult r = write ? cu_drv.StreamWriteValue64(s->stream, v->dptr, value, CU_STREAM_WRITE_VALUE_DEFAULT)
                       : cu_drv.StreamWaitValue64(s->stream, v->dptr, value, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS)
        return 0;
    return cu_fail(s->dev, write ? "cuStreamWriteValue64" : "cuStreamWaitValue64", r);
}

int cu_stream_wait_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, false);
}

int cu_stream_write_value(devq_pl_stream *s, devq_pl_value *v, uint64_t value)
{
    return value_op(s, v, value, true);
}
