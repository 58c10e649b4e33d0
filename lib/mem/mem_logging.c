/* SPDX-License-Identifier: MIT */
/* The logging decorator: one CSV line per memory event.
 *
 *   time_ns,op,bytes,address,stream,tag
 *
 * op is alloc, free, alloc_failed or reap.  stream is the stream id, -1
 * for synchronous calls.  For reap lines, bytes is the number of pending
 * frees the reap completed and address is 0x0.  The file is line
 * buffered so that it is complete up to the last event even if the
 * program dies. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "futex.h"
#include "mem_resource.h"

struct logging {
    devq_resource *inner; /* first: see struct devq_decorator */
    FILE *f;
};

static void line(struct logging *l, const char *op, uint64_t bytes, const void *ptr, devq_stream_ref *st,
                 uint32_t tag)
{
    long long sid = st ? (long long)st->id : -1;
    /* One fprintf per line: stdio locks the stream per call, so lines from
     * different threads never interleave. */
    fprintf(l->f, "%llu,%s,%llu,0x%" PRIxPTR ",%lld,%u\n", (unsigned long long)devq__now_ns(), op,
            (unsigned long long)bytes, (uintptr_t)ptr, sid, tag);
}

static int logging_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                            void **hptr)
{
    struct logging *l = state;
    int r = devq_resource_allocate(l->inner, bytes, st, tag, dptr, hptr);
    line(l, r < 0 ? "alloc_failed" : "alloc", bytes, r < 0 ? NULL : *dptr, st, tag);
    return r;
}

static int logging_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct logging *l = state;
    int r = devq_resource_deallocate(l->inner, ptr, bytes, st, tag);
    if (r == 0 || r == -EFAULT)
        line(l, "free", bytes, ptr, st, tag);
    return r;
}

static int logging_reap(void *state)
{
    struct logging *l = state;
    devq_mem_stats before = { 0 }, after = { 0 };
    devq_resource_stats_get(l->inner, &before);
    int r = devq_resource_reap(l->inner);
    devq_resource_stats_get(l->inner, &after);
    uint64_t done =
        before.pending_frees > after.pending_frees ? before.pending_frees - after.pending_frees : 0;
    line(l, "reap", done, NULL, NULL, 0);
    return r;
}

static uint64_t logging_outstanding(void *state)
{
    return devq_resource_bytes_outstanding(((struct logging *)state)->inner);
}

static void logging_destroy(void *state)
{
    struct logging *l = state;
    devq__resource_free(l->inner);
    fclose(l->f);
    free(l);
}

static const struct devq_resource_ops logging_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "logging",
    .allocate = logging_allocate,
    .deallocate = logging_deallocate,
    .bytes_outstanding = logging_outstanding,
    .reap_pending = logging_reap,
    .supports_use_tracking = devq__fwd_supports,
    .prepare_use = devq__fwd_prepare,
    .finish_use = devq__fwd_finish,
    .trim = devq__fwd_trim,
    .stream_gone = devq__fwd_stream_gone,
    .stats = devq__fwd_stats,
    .destroy = logging_destroy,
};

DEVQ_API int devq_resource_logging(devq_resource *inner, const char *csv_path, devq_resource **out)
{
    int r = devq__resource_check_inner(inner, "devq_resource_logging");
    if (r < 0)
        return r;
    if (!out || !csv_path || !*csv_path)
        return devq__err(-EINVAL, "devq_resource_logging: %s", !out ? "out is NULL" : "no file name given");
    struct logging *l = calloc(1, sizeof *l);
    if (!l)
        return devq__err(-ENOMEM, "devq_resource_logging: out of host memory");
    l->f = fopen(csv_path, "we");
    if (!l->f) {
        int e = errno;
        free(l);
        return devq__err(-e, "devq_resource_logging: cannot open '%.200s': %s", csv_path, strerror(e));
    }
    setvbuf(l->f, NULL, _IOLBF, 0);
    fputs("time_ns,op,bytes,address,stream,tag\n", l->f);
    l->inner = inner;
    r = devq__resource_new(inner->dev, &logging_ops, l, DEVQ_RES_LOGGING, inner, out);
    if (r < 0) {
        fclose(l->f);
        free(l);
    }
    return r;
}
