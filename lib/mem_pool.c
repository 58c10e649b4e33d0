/* The devq pool: lib's own stream-ordered allocator over backend chunks.
 *
 * Requests are rounded up to a size class (256 B, then four classes per
 * power of two up to 32 MiB, so at most 25% is lost to rounding).  Each
 * class carves blocks from its own chunks (64 KiB to 2 MiB of backend
 * memory).  Larger requests bypass the bins and go to the backend.
 *
 * The ordering rule.  A block freed on stream A may still be in use by
 * work queued on A before the free.  So it goes on A's free list for its
 * class, and a later request on A takes it at once (stream order makes
 * that safe).  Every other stream (and synchronous requests) may take it
 * only once the fence recorded on A at the free is reached.  Each block
 * has its own fence, so one slow fence never holds back the others: a
 * request that misses its free lists queries a bounded number of fenced
 * blocks of its class, oldest first, rotating the ones not reached yet.
 * A synchronous free makes the block idle (usable anywhere) at once.
 *
 * Running out.  When the backend refuses a chunk, the pool reaps every
 * reached fence and retries, then releases every unused chunk (trim) and
 * retries, and only then fails with -ENOMEM and a report of what it holds.
 *
 * Everything is under one mutex: the expensive part of an allocator on
 * a device is the backend call, which this avoids; the fast path is a
 * list pop or push and a hash lookup. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "error.h"
#include "log.h"
#include "mem_resource.h"

#define MIN_CLASS       256u
#define NCLASSES        69u              /* 256 B .. 32 MiB */
#define LARGE_BYTES     (32ull << 20)    /* above: straight to the backend */
#define CHUNK_MIN       (64ull << 10)
#define CHUNK_MAX       (2ull << 20)
#define SCAN_ON_MISS    32u              /* fences queried per missed request */

enum block_state { B_IDLE, B_LIVE, B_FREED, B_STUCK };

struct block;
struct list {                    /* LIFO of blocks, doubly linked for removal */
    struct block *head;
    size_t n;
};
struct fifo {                    /* fenced blocks of one class, oldest first */
    struct block *head, *tail;
    size_t n;
};

struct chunk;
struct block {
    void *ptr, *host;
    struct block *hnext;                 /* hash chain */
    struct block *prev, *next;           /* on `on` (a stream list or idle) */
    struct block *fprev, *fnext;         /* on the class's fenced fifo */
    struct list *on;
    struct chunk *chunk;                 /* NULL: a large block */
    size_t bytes;                        /* class size, or the large size */
    devq_pl_event *fence;                /* kept for re-recording while it lives */
    uint32_t sid;                        /* stream of the last stream-ordered free */
    uint8_t cls, state, fenced;
};

struct chunk {
    struct chunk *prev, *next;
    char *base, *host;
    size_t bytes, cap, ncarved;
    uint32_t busy;                       /* carved blocks that are not idle */
    uint8_t cls;
    struct block blocks[];
};

struct stream_lists {
    struct list free[NCLASSES];
};

struct pool {
    struct devq_device *dev;
    pthread_mutex_t lock;
    struct list idle[NCLASSES];
    struct fifo fenced[NCLASSES];
    struct chunk *chunks[NCLASSES];      /* newest first; only the head may have room */
    struct stream_lists **streams;
    uint32_t nstreams;
    struct fifo large_pending;           /* large blocks waiting for their fence */
    struct fifo stuck;                   /* fences that did not settle in time */
    struct block **buckets;
    size_t nbuckets, nhashed;
    uint64_t reserved, outstanding, pending_bytes, pending_n, stuck_bytes;
};

/* ---- size classes ---- */

static unsigned size_class(size_t n)
{
    if (n <= MIN_CLASS)
        return 0;
    unsigned p = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    unsigned sub = (unsigned)((n - 1 - ((size_t)1 << p)) >> (p - 2));
    return 1 + (p - 8) * 4 + sub;
}

static size_t class_size(unsigned c)
{
    if (c == 0)
        return MIN_CLASS;
    unsigned p = 8 + (c - 1) / 4, sub = (c - 1) % 4;
    return ((size_t)1 << p) + (size_t)(sub + 1) * ((size_t)1 << (p - 2));
}

static size_t chunk_bytes_for(unsigned c)
{
    size_t cs = class_size(c), want = cs * 16;
    if (want < CHUNK_MIN)
        want = CHUNK_MIN;
    if (want > CHUNK_MAX)
        want = CHUNK_MAX;
    size_t n = want / cs;
    return (n ? n : 1) * cs;
}

/* ---- lists ---- */

static void list_push(struct list *l, struct block *b)
{
    b->prev = NULL;
    b->next = l->head;
    if (l->head)
        l->head->prev = b;
    l->head = b;
    b->on = l;
    l->n++;
}

static void list_remove(struct block *b)
{
    struct list *l = b->on;
    if (!l)
        return;
    if (b->prev)
        b->prev->next = b->next;
    else
        l->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    b->on = NULL;
    l->n--;
}

static void fifo_append(struct fifo *f, struct block *b)
{
    b->fnext = NULL;
    b->fprev = f->tail;
    if (f->tail)
        f->tail->fnext = b;
    else
        f->head = b;
    f->tail = b;
    f->n++;
    b->fenced = 1;
}

static void fifo_remove(struct fifo *f, struct block *b)
{
    if (!b->fenced)
        return;
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        f->head = b->fnext;
    if (b->fnext)
        b->fnext->fprev = b->fprev;
    else
        f->tail = b->fprev;
    b->fprev = b->fnext = NULL;
    b->fenced = 0;
    f->n--;
}

static struct fifo *fifo_of(struct pool *p, struct block *b)
{
    return b->chunk ? &p->fenced[b->cls] : &p->large_pending;
}

static void large_release(struct pool *p, struct block *b);

/* ---- pointer -> block ---- */

static size_t hash_of(const struct pool *p, const void *ptr)
{
    uint64_t h = ((uint64_t)(uintptr_t)ptr >> 6) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (p->nbuckets - 1);
}

static int hash_grow(struct pool *p)
{
    size_t n = p->nbuckets ? p->nbuckets * 2 : 1024;
    struct block **nb = calloc(n, sizeof *nb);
    if (!nb)
        return -ENOMEM;
    struct block **old = p->buckets;
    size_t oldn = p->nbuckets;
    p->buckets = nb;
    p->nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        for (struct block *b = old[i], *nx; b; b = nx) {
            nx = b->hnext;
            size_t h = hash_of(p, b->ptr);
            b->hnext = nb[h];
            nb[h] = b;
        }
    }
    free(old);
    return 0;
}

static int hash_insert(struct pool *p, struct block *b)
{
    if (p->nhashed >= p->nbuckets && hash_grow(p) < 0 && !p->nbuckets)
        return -ENOMEM;
    size_t h = hash_of(p, b->ptr);
    b->hnext = p->buckets[h];
    p->buckets[h] = b;
    p->nhashed++;
    return 0;
}

static struct block *hash_find(const struct pool *p, const void *ptr)
{
    if (!p->nbuckets)
        return NULL;
    for (struct block *b = p->buckets[hash_of(p, ptr)]; b; b = b->hnext)
        if (b->ptr == ptr)
            return b;
    return NULL;
}

static void hash_remove(struct pool *p, struct block *b)
{
    struct block **pp = &p->buckets[hash_of(p, b->ptr)];
    while (*pp && *pp != b)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = b->hnext;
        p->nhashed--;
    }
}

/* ---- state changes ---- */

static struct stream_lists *stream_lists(struct pool *p, uint32_t sid)
{
    if (sid >= p->nstreams) {
        uint32_t n = p->nstreams ? p->nstreams : 8;
        while (n <= sid)
            n *= 2;
        struct stream_lists **ns = realloc(p->streams, n * sizeof *ns);
        if (!ns)
            return NULL;
        memset(ns + p->nstreams, 0, (n - p->nstreams) * sizeof *ns);
        p->streams = ns;
        p->nstreams = n;
    }
    if (!p->streams[sid])
        p->streams[sid] = calloc(1, sizeof **p->streams);
    return p->streams[sid];
}

/* A fenced block leaves the pending accounting (reused, idle or stuck). */
static void unfence(struct pool *p, struct block *b)
{
    if (!b->fenced)
        return;
    fifo_remove(fifo_of(p, b), b);
    p->pending_bytes -= b->bytes;
    p->pending_n--;
}

static void make_idle(struct pool *p, struct block *b)
{
    unfence(p, b);
    list_remove(b);
    devq__fence_put(p->dev, &b->fence);
    b->state = B_IDLE;
    b->chunk->busy--;
    list_push(&p->idle[b->cls], b);
}

/* A fence that did not settle when it had to (stream going away, pool
 * destroyed): keep the block out of use.  When the fence exists it is
 * asked again by every full reap: the block comes back once reached. */
static void make_stuck(struct pool *p, struct block *b)
{
    unfence(p, b);
    list_remove(b);
    b->state = B_STUCK;
    p->stuck_bytes += b->bytes;
    if (b->fence)
        fifo_append(&p->stuck, b);
    devq__log(DEVQ_LOG_BASIC, "pool: free of %p (%zu bytes) on stream %u has not completed; "
              "the block stays out of use until it does", b->ptr, b->bytes, b->sid);
}

static void unstick(struct pool *p, struct block *b)
{
    fifo_remove(&p->stuck, b);
    p->stuck_bytes -= b->bytes;
    if (!b->chunk) {
        large_release(p, b);
        return;
    }
    devq__fence_put(p->dev, &b->fence);
    b->state = B_IDLE;
    b->chunk->busy--;
    list_push(&p->idle[b->cls], b);
}

static void large_release(struct pool *p, struct block *b)
{
    unfence(p, b);
    devq__fence_put(p->dev, &b->fence);
    hash_remove(p, b);
    p->dev->ops->mem_free(p->dev->pl, b->ptr);
    p->reserved -= b->bytes;
    free(b);
}

/* ---- reaping ---- */

/* Complete every reached fence.  Returns how many frees completed. */
static size_t reap_all(struct pool *p)
{
    size_t done = 0;
    for (unsigned c = 0; c < NCLASSES; c++) {
        for (struct block *b = p->fenced[c].head, *nx; b; b = nx) {
            nx = b->fnext;
            if (devq__fence_reached(p->dev, b->fence)) {
                make_idle(p, b);
                done++;
            }
        }
    }
    for (struct block *b = p->large_pending.head, *nx; b; b = nx) {
        nx = b->fnext;
        if (devq__fence_reached(p->dev, b->fence)) {
            large_release(p, b);
            done++;
        }
    }
    for (struct block *b = p->stuck.head, *nx; b; b = nx) {
        nx = b->fnext;
        if (devq__fence_reached(p->dev, b->fence))
            unstick(p, b);
    }
    return done;
}

/* A request missed its lists: look at a few fenced blocks of the class,
 * oldest first; the ones not reached go to the back so that a stuck fence
 * is not asked again before the others. */
static struct block *reap_one(struct pool *p, unsigned c)
{
    struct fifo *f = &p->fenced[c];
    size_t scan = f->n < SCAN_ON_MISS ? f->n : SCAN_ON_MISS;
    for (size_t i = 0; i < scan; i++) {
        struct block *b = f->head;
        if (devq__fence_reached(p->dev, b->fence)) {
            unfence(p, b);
            list_remove(b);
            devq__fence_put(p->dev, &b->fence);
            return b;                   /* still counted busy in its chunk */
        }
        fifo_remove(f, b);
        fifo_append(f, b);
    }
    return NULL;
}

/* ---- chunks ---- */

static void chunk_release(struct pool *p, struct chunk *ch)
{
    for (size_t i = 0; i < ch->ncarved; i++) {
        struct block *b = &ch->blocks[i];
        list_remove(b);
        devq__fence_put(p->dev, &b->fence);
        hash_remove(p, b);
    }
    if (ch->prev)
        ch->prev->next = ch->next;
    else
        p->chunks[ch->cls] = ch->next;
    if (ch->next)
        ch->next->prev = ch->prev;
    p->dev->ops->mem_free(p->dev->pl, ch->base);
    p->reserved -= ch->bytes;
    free(ch);
}

static size_t trim_locked(struct pool *p)
{
    size_t released = 0;
    for (unsigned c = 0; c < NCLASSES; c++) {
        for (struct chunk *ch = p->chunks[c], *nx; ch; ch = nx) {
            nx = ch->next;
            if (ch->busy == 0) {
                released += ch->bytes;
                chunk_release(p, ch);
            }
        }
    }
    return released;
}

/* Take the next uncarved block of class c, getting a chunk if needed. */
static int carve(struct pool *p, unsigned c, struct block **out)
{
    struct chunk *ch = p->chunks[c];
    if (!ch || ch->ncarved == ch->cap) {
        size_t cs = class_size(c), bytes = chunk_bytes_for(c), cap = bytes / cs;
        ch = calloc(1, sizeof *ch + cap * sizeof(struct block));
        if (!ch)
            return devq__err(-ENOMEM, "pool: out of host memory for chunk metadata");
        void *d = NULL, *h = NULL;
        int r = p->dev->ops->mem_alloc(p->dev->pl, bytes, &d, &h);
        if (r == -ENOMEM && cap > 1) {
            /* A full chunk does not fit: one block may. */
            bytes = cs;
            cap = 1;
            r = p->dev->ops->mem_alloc(p->dev->pl, bytes, &d, &h);
        }
        if (r < 0) {
            free(ch);
            return r;
        }
        ch->base = d;
        ch->host = h;
        ch->bytes = bytes;
        ch->cap = cap;
        ch->cls = (uint8_t)c;
        ch->next = p->chunks[c];
        if (ch->next)
            ch->next->prev = ch;
        p->chunks[c] = ch;
        p->reserved += bytes;
    }
    size_t cs = class_size(c), i = ch->ncarved;
    struct block *b = &ch->blocks[i];
    b->ptr = ch->base + i * cs;
    b->host = ch->host ? ch->host + i * cs : NULL;
    b->chunk = ch;
    b->bytes = cs;
    b->cls = (uint8_t)c;
    if (hash_insert(p, b) < 0)
        return devq__err(-ENOMEM, "pool: out of host memory for the block table");
    ch->ncarved++;
    ch->busy++;
    *out = b;
    return 0;
}

/* ---- out of memory ---- */

static size_t largest_free(struct pool *p)
{
    for (unsigned c = NCLASSES; c-- > 0;) {
        struct chunk *ch = p->chunks[c];
        if (p->idle[c].n || (ch && ch->ncarved < ch->cap))
            return class_size(c);
    }
    return 0;
}

static int oom_report(struct pool *p, size_t bytes, const char *why)
{
    uint64_t budget = devq__mem_budget_of(p->dev);
    char btxt[32];
    if (budget)
        snprintf(btxt, sizeof btxt, "%llu", (unsigned long long)budget);
    else
        snprintf(btxt, sizeof btxt, "none");
    return devq__err(-ENOMEM, "pool: out of device memory: requested %zu, reserved %llu, "
                     "outstanding %llu, largest free block %zu, pending-free %llu bytes, "
                     "budget %s (after reap and trim); backend: %s",
                     bytes, (unsigned long long)p->reserved, (unsigned long long)p->outstanding,
                     largest_free(p), (unsigned long long)p->pending_bytes, btxt, why);
}

/* ---- allocate ---- */

static struct block *take(struct pool *p, unsigned c, uint32_t sid)
{
    struct block *b;
    if (sid < p->nstreams && p->streams[sid] && (b = p->streams[sid]->free[c].head)) {
        /* Freed on this very stream: stream order makes reuse safe now. */
        unfence(p, b);
        list_remove(b);
        return b;
    }
    if ((b = p->idle[c].head)) {
        list_remove(b);
        b->chunk->busy++;
        return b;
    }
    return NULL;
}

static int pool_alloc_binned(struct pool *p, size_t bytes, uint32_t sid, struct block **out)
{
    unsigned c = size_class(bytes);
    struct block *b = take(p, c, sid);
    if (!b)
        b = reap_one(p, c);
    if (b) {
        *out = b;
        return 0;
    }
    int r = carve(p, c, out);
    if (r != -ENOMEM)
        return r;
    char why[256];
    snprintf(why, sizeof why, "%s", devq__errmsg_peek());
    reap_all(p);                         /* also gives large blocks back */
    if ((*out = take(p, c, sid)))
        return 0;
    if ((r = carve(p, c, out)) != -ENOMEM)
        return r;
    trim_locked(p);
    if ((r = carve(p, c, out)) != -ENOMEM)
        return r;
    return oom_report(p, bytes, why);
}

static int large_new(struct pool *p, size_t bytes, struct block **out)
{
    struct block *b = calloc(1, sizeof *b);
    if (!b)
        return devq__err(-ENOMEM, "pool: out of host memory");
    int r = p->dev->ops->mem_alloc(p->dev->pl, bytes, &b->ptr, &b->host);
    if (r < 0 || (r = hash_insert(p, b)) < 0) {
        if (b->ptr && r != -ENOMEM)
            p->dev->ops->mem_free(p->dev->pl, b->ptr);
        free(b);
        return r;
    }
    b->bytes = bytes;
    p->reserved += bytes;
    *out = b;
    return 0;
}

static int pool_alloc_large(struct pool *p, size_t bytes, struct block **out)
{
    int r = large_new(p, bytes, out);
    if (r != -ENOMEM)
        return r;
    char why[256];
    snprintf(why, sizeof why, "%s", devq__errmsg_peek());
    reap_all(p);
    if ((r = large_new(p, bytes, out)) != -ENOMEM)
        return r;
    trim_locked(p);
    if ((r = large_new(p, bytes, out)) != -ENOMEM)
        return r;
    return oom_report(p, bytes, why);
}

static int pool_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag,
                         void **dptr, void **hptr)
{
    struct pool *p = state;
    struct block *b = NULL;
    pthread_mutex_lock(&p->lock);
    int r = bytes > LARGE_BYTES ? pool_alloc_large(p, bytes, &b)
                                : pool_alloc_binned(p, bytes, devq__sid(st), &b);
    if (r == 0) {
        b->state = B_LIVE;
        p->outstanding += b->bytes;
        *dptr = b->ptr;
        *hptr = b->host;
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* ---- deallocate ---- */

static int pool_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st,
                           uint32_t tag)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    struct block *b = hash_find(p, ptr);
    if (!b || b->state != B_LIVE) {
        pthread_mutex_unlock(&p->lock);
        if (!b)
            return devq__err(-EINVAL, "pool: free of %p, which this pool never handed out "
                             "(foreign pointer)", ptr);
        return devq__err(-EINVAL, "pool: double free of %p (%zu bytes): the block is not "
                         "allocated", ptr, b->bytes);
    }
    if (bytes > b->bytes || (b->chunk && bytes && size_class(bytes) != b->cls)) {
        pthread_mutex_unlock(&p->lock);
        return devq__err(-EINVAL, "pool: free of %p with %zu bytes, but it was allocated "
                         "as %zu", ptr, bytes, b->bytes);
    }
    p->outstanding -= b->bytes;
    if (!st) {
        if (b->chunk)
            make_idle(p, b);
        else
            large_release(p, b);
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    struct stream_lists *sl = b->chunk ? stream_lists(p, st->id) : NULL;
    int r = b->chunk && !sl ? -ENOMEM : devq__fence_record(p->dev, st, &b->fence);
    if (r < 0) {
        /* Unknown when the stream is done with it: never reuse it (a fence
         * left from an earlier free predates this use, so it goes too). */
        devq__fence_put(p->dev, &b->fence);
        b->sid = st->id;
        make_stuck(p, b);
        pthread_mutex_unlock(&p->lock);
        return devq__err(r, "pool: could not order the free of %p on stream %u; the block "
                         "stays out of use", ptr, st->id);
    }
    b->state = B_FREED;
    b->sid = st->id;
    if (sl)
        list_push(&sl->free[b->cls], b);
    fifo_append(fifo_of(p, b), b);
    p->pending_bytes += b->bytes;
    p->pending_n++;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* ---- the rest of the vtable ---- */

static uint64_t pool_outstanding(void *state)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    uint64_t v = p->outstanding;
    pthread_mutex_unlock(&p->lock);
    return v;
}

static int pool_reap(void *state)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    reap_all(p);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

static int pool_trim(void *state)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    reap_all(p);
    size_t n = trim_locked(p);
    pthread_mutex_unlock(&p->lock);
    devq__log(DEVQ_LOG_FULL, "pool: trim released %zu bytes", n);
    return 0;
}

/* Settle one fenced block: wait for its fence (bounded), else keep it out. */
static void settle(struct pool *p, struct block *b)
{
    bool ok = devq__fence_settle(p->dev, b->fence, DEVQ_FENCE_SETTLE_NS);
    if (!b->chunk) {
        if (ok)
            large_release(p, b);
        else
            make_stuck(p, b);
    } else if (ok) {
        make_idle(p, b);
    } else {
        make_stuck(p, b);
    }
}

static void pool_stream_gone(void *state, devq_stream_ref *st)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    /* The id will name another stream: nothing may stay on its lists. */
    if (st->id < p->nstreams && p->streams[st->id]) {
        struct stream_lists *sl = p->streams[st->id];
        for (unsigned c = 0; c < NCLASSES; c++)
            while (sl->free[c].head)
                settle(p, sl->free[c].head);
    }
    for (struct block *b = p->large_pending.head, *nx; b; b = nx) {
        nx = b->fnext;
        if (b->sid == st->id)
            settle(p, b);
    }
    pthread_mutex_unlock(&p->lock);
}

static int pool_stats(void *state, devq_mem_stats *st)
{
    struct pool *p = state;
    pthread_mutex_lock(&p->lock);
    st->bytes_outstanding = p->outstanding;
    st->bytes_reserved = p->reserved;
    st->pending_frees = p->pending_n;
    pthread_mutex_unlock(&p->lock);
    return 0;
}

static void pool_destroy(void *state)
{
    struct pool *p = state;
    reap_all(p);                         /* stuck blocks whose fence got there since */
    for (unsigned c = 0; c < NCLASSES; c++)
        while (p->fenced[c].head)
            settle(p, p->fenced[c].head);
    while (p->large_pending.head)
        settle(p, p->large_pending.head);
    trim_locked(p);
    /* What is left is live or stuck: its memory may still be in use, so
     * it is not handed back to the backend, only its bookkeeping goes. */
    uint64_t kept = 0;
    for (size_t i = 0; i < p->nbuckets; i++) {
        for (struct block *b = p->buckets[i], *nx; b; b = nx) {
            nx = b->hnext;
            if (!b->chunk) {
                devq__fence_put(p->dev, &b->fence);
                kept += b->bytes;
                free(b);
            }
        }
    }
    for (unsigned c = 0; c < NCLASSES; c++) {
        for (struct chunk *ch = p->chunks[c], *nx; ch; ch = nx) {
            nx = ch->next;
            for (size_t i = 0; i < ch->ncarved; i++)
                devq__fence_put(p->dev, &ch->blocks[i].fence);
            kept += ch->bytes;
            free(ch);
        }
    }
    if (kept)
        devq__log(DEVQ_LOG_BASIC, "pool: destroyed with %llu bytes still allocated or "
                  "pending; that memory was not returned to the backend",
                  (unsigned long long)kept);
    for (uint32_t i = 0; i < p->nstreams; i++)
        free(p->streams[i]);
    free(p->streams);
    free(p->buckets);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static const struct devq_resource_ops pool_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "pool",
    .allocate = pool_allocate,
    .deallocate = pool_deallocate,
    .bytes_outstanding = pool_outstanding,
    .reap_pending = pool_reap,
    .trim = pool_trim,
    .stream_gone = pool_stream_gone,
    .stats = pool_stats,
    .destroy = pool_destroy,
};

DEVQ_API int devq_resource_pool(devq_device *dev, devq_resource **out)
{
    int r = devq__mem_dev_check(dev, "devq_resource_pool");
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "devq_resource_pool: out is NULL");
    if (!dev->event_pool)
        return devq__err(-ENODEV, "devq_resource_pool: the device has no event pool yet");
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        return devq__err(-ENOMEM, "devq_resource_pool: out of host memory");
    p->dev = dev;
    pthread_mutex_init(&p->lock, NULL);
    r = devq__resource_new(dev, &pool_ops, p, DEVQ_RES_POOL, NULL, out);
    if (r < 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
    }
    return r;
}
