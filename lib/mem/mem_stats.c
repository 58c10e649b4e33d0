/* SPDX-License-Identifier: MIT */
/* The stats decorator: bytes now, highest bytes and allocation counts,
 * for the whole resource, per tag and per stream.  It is always in the
 * default stack because devq_mem_stats_get reads it. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "mem_lock.h"
#include "mem_resource.h"

struct tag_slot {
    uint32_t tag;
    uint32_t used;
    devq_mem_usage u;
};

struct stats {
    devq_resource *inner; /* first: see struct devq_decorator */
    struct mem_lock lock; /* cheaper than a pthread mutex: taken twice a pair */
    devq_mem_usage total;
    uint64_t frees;
    struct tag_slot *tags; /* open addressing, power-of-two size */
    size_t ntags, tagcap;
    devq_mem_usage *streams; /* [0] synchronous, [1 + id] stream id */
    size_t nstreams;
};

static size_t tag_hash(uint32_t tag, size_t cap)
{
    return (size_t)((tag * 2654435761u) & (cap - 1));
}

static struct tag_slot *tag_find(struct stats *s, uint32_t tag, int create)
{
    if (create && (s->ntags + 1) * 2 > s->tagcap) {
        size_t cap = s->tagcap ? s->tagcap * 2 : 16;
        struct tag_slot *nt = calloc(cap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < s->tagcap; i++) {
            if (!s->tags[i].used)
                continue;
            size_t h = tag_hash(s->tags[i].tag, cap);
            while (nt[h].used)
                h = (h + 1) & (cap - 1);
            nt[h] = s->tags[i];
        }
        free(s->tags);
        s->tags = nt;
        s->tagcap = cap;
    }
    if (!s->tagcap)
        return NULL;
    size_t h = tag_hash(tag, s->tagcap);
    while (s->tags[h].used) {
        if (s->tags[h].tag == tag)
            return &s->tags[h];
        h = (h + 1) & (s->tagcap - 1);
    }
    if (!create)
        return NULL;
    s->tags[h].used = 1;
    s->tags[h].tag = tag;
    s->ntags++;
    return &s->tags[h];
}

static devq_mem_usage *stream_slot(struct stats *s, uint32_t sid, int create)
{
    size_t i = sid == DEVQ_STREAM_NONE ? 0 : (size_t)sid + 1;
    if (i >= s->nstreams) {
        if (!create)
            return NULL;
        size_t n = s->nstreams ? s->nstreams : 8;
        while (n <= i)
            n *= 2;
        devq_mem_usage *ns = realloc(s->streams, n * sizeof *ns);
        if (!ns)
            return NULL;
        memset(ns + s->nstreams, 0, (n - s->nstreams) * sizeof *ns);
        s->streams = ns;
        s->nstreams = n;
    }
    return &s->streams[i];
}

static void usage_add(devq_mem_usage *u, size_t bytes)
{
    if (!u)
        return;
    u->current += bytes;
    u->count++;
    if (u->current > u->peak)
        u->peak = u->current;
}

static void usage_sub(devq_mem_usage *u, size_t bytes)
{
    if (u)
        u->current = u->current >= bytes ? u->current - bytes : 0;
}

static int stats_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                          void **hptr)
{
    struct stats *s = state;
    int r = devq_resource_allocate(s->inner, bytes, st, tag, dptr, hptr);
    if (r < 0)
        return r;
    mem_lock(&s->lock);
    usage_add(&s->total, bytes);
    struct tag_slot *t = tag_find(s, tag, 1);
    usage_add(t ? &t->u : NULL, bytes);
    usage_add(stream_slot(s, devq__sid(st), 1), bytes);
    mem_unlock(&s->lock);
    return 0;
}

/* Counted against the stream and tag the free names: the stream a block
 * is freed on is where its bytes stop being in use. */
static int stats_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct stats *s = state;
    int r = devq_resource_deallocate(s->inner, ptr, bytes, st, tag);
    if (r < 0 && r != -EFAULT)
        return r;
    mem_lock(&s->lock);
    usage_sub(&s->total, bytes);
    s->frees++;
    struct tag_slot *t = tag_find(s, tag, 0);
    usage_sub(t ? &t->u : NULL, bytes);
    usage_sub(stream_slot(s, devq__sid(st), 0), bytes);
    mem_unlock(&s->lock);
    return r;
}

static uint64_t stats_outstanding(void *state)
{
    struct stats *s = state;
    mem_lock(&s->lock);
    uint64_t v = s->total.current;
    mem_unlock(&s->lock);
    return v;
}

static int stats_stats(void *state, devq_mem_stats *st)
{
    struct stats *s = state;
    int r = devq_resource_stats_get(s->inner, st);
    if (r < 0)
        return r;
    mem_lock(&s->lock);
    st->bytes_outstanding = s->total.current;
    st->bytes_peak = s->total.peak;
    st->allocations = s->total.count;
    st->frees = s->frees;
    mem_unlock(&s->lock);
    return 0;
}

int devq__stats_usage_tag(devq_resource *res, uint32_t tag, devq_mem_usage *u)
{
    struct stats *s = res->state;
    if (!u)
        return devq__err(-EINVAL, "devq_resource_usage_by_tag: u is NULL");
    mem_lock(&s->lock);
    struct tag_slot *t = tag_find(s, tag, 0);
    *u = t ? t->u : (devq_mem_usage){ 0 };
    mem_unlock(&s->lock);
    return 0;
}

int devq__stats_usage_stream(devq_resource *res, uint32_t sid, devq_mem_usage *u)
{
    struct stats *s = res->state;
    if (!u)
        return devq__err(-EINVAL, "devq_resource_usage_by_stream: u is NULL");
    mem_lock(&s->lock);
    devq_mem_usage *x = stream_slot(s, sid, 0);
    *u = x ? *x : (devq_mem_usage){ 0 };
    mem_unlock(&s->lock);
    return 0;
}

void devq__stats_settle(devq_resource *res, uint32_t tag, uint32_t sid, uint64_t pairs)
{
    struct stats *s = res->state;
    mem_lock(&s->lock);
    s->total.count += pairs;
    s->frees += pairs;
    struct tag_slot *t = tag_find(s, tag, 1);
    if (t)
        t->u.count += pairs;
    devq_mem_usage *x = stream_slot(s, sid, 1);
    if (x)
        x->count += pairs;
    mem_unlock(&s->lock);
}

static void stats_stream_gone(void *state, devq_stream_ref *st)
{
    struct stats *s = state;
    devq__fwd_stream_gone(state, st);
    /* The id will be reused by a new stream: start its numbers afresh. */
    mem_lock(&s->lock);
    devq_mem_usage *x = stream_slot(s, st->id, 0);
    if (x)
        *x = (devq_mem_usage){ 0 };
    mem_unlock(&s->lock);
}

static void stats_destroy(void *state)
{
    struct stats *s = state;
    devq__resource_free(s->inner);
    free(s->tags);
    free(s->streams);
    free(s);
}

static const struct devq_resource_ops stats_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "stats",
    .allocate = stats_allocate,
    .deallocate = stats_deallocate,
    .bytes_outstanding = stats_outstanding,
    .reap_pending = devq__fwd_reap,
    .supports_use_tracking = devq__fwd_supports,
    .prepare_use = devq__fwd_prepare,
    .finish_use = devq__fwd_finish,
    .trim = devq__fwd_trim,
    .stream_gone = stats_stream_gone,
    .stats = stats_stats,
    .destroy = stats_destroy,
};

DEVQ_API int devq_resource_stats(devq_resource *inner, devq_resource **out)
{
    int r = devq__resource_check_inner(inner, "devq_resource_stats");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_resource_stats: out is NULL");
    struct stats *s = calloc(1, sizeof *s);
    if (!s)
        return devq__err(-ENOMEM, "devq_resource_stats: out of host memory");
    s->inner = inner;
    mem_lock_init(&s->lock);
    r = devq__resource_new(inner->dev, &stats_ops, s, DEVQ_RES_STATS, inner, out);
    if (r < 0) {
        free(s);
    }
    return r;
}
