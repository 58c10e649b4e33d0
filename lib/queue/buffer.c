/* SPDX-License-Identifier: MIT */
/* Buffers: device memory plus the tracking state the tracker needs.
 *
 * A free is stream-ordered: it is issued on a stream after the tracker
 * made that stream wait for every other stream's last use, so the memory
 * returns to the pool only when nothing may still touch it.  A free of a
 * buffer that recorded-but-unissued batches still use waits until those
 * uses are issued (dev->qs->pending_frees); so does one whose ordering could
 * not be set up anywhere (a driver call failed), to be tried again.  A
 * free is never dropped: its bytes would stay outstanding forever.
 *
 * The queue's cache.  A buffer allocated on queue q, used only on q's
 * stream and freed on q with nothing in flight holding it is not freed:
 * q keeps the handle with its block (up to CACHE_N of them, CACHE_BYTES
 * in all), and the next devq_buffer_alloc on q of the same size and tag
 * takes it back.  That is the pool's own rule (a block freed on a stream
 * is reusable on that stream at once), without the device lock, the
 * tracker or the stack's locks.  The handle keeps its tracking state: a
 * later use on another stream still orders after the last use on q, as
 * if the block had come from q's free list.  It starts clean (not failed,
 * unnamed, a new number).  The stack never saw those pairs: the stats
 * layer is told how many at the next flush, and every cached buffer goes
 * back to the stack (a stream-ordered free on q) when the stats are read,
 * a queue finishes, memory is reaped, an allocation is refused (then
 * retried once), the stack is replaced or the queue is destroyed.  Off
 * when the stack has a guard, logging or user layer (they see every
 * call), when tracing, and on a lost device.
 *
 * The device's idle cache (dev->qs->idle) does the same for buffers
 * allocated with no queue, never used on a stream and freed with no
 * queue: their memory is idle, so the next allocation with no queue of
 * that size and tag may have it at once.  Those hold no device
 * reference while kept (else a program that closed its device with one
 * kept would never see it torn down); the teardown frees them
 * (devq__buffer_idle_drop).  A buffer that was used anywhere takes the
 * stream-ordered free below. */
#include "config.h"
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "buffer_fail.h"
#include "error.h"
#include "event_pool.h"
#include "futex.h"
#include "log.h"
#include "mem.h"
#include "mem_resource.h"
#include "notifier.h"
#include "queue.h"
#include "trace.h"

int devq__buffer_check(const devq_buffer *b, const char *fn)
{
    if (!b)
        return devq__err(-EINVAL, "%s: buffer is NULL", fn);
    if (b->obj.magic != DEVQ_MAGIC_BUFFER)
        return devq__err(-EINVAL, "%s: %p is not a live buffer", fn, (const void *)b);
    if (b->freed)
        return devq__err(-EINVAL, "%s: %s was freed", fn, devq__buffer_label(b).s);
    if (__builtin_expect(b->dev->fork_gen != devq__fork_gen(), 0))
        return devq__forked_err(fn, devq__buffer_label(b).s, b->dev->pid);
    return 0;
}

/* The last reference (object.h): a batch's release hands it to the
 * notifier, since closing the device may call the backend. */
static void buffer_destroy(struct devq_object *o)
{
    devq_buffer *b = (devq_buffer *)o;
    struct devq_device *dev = b->dev;
    b->obj.magic = DEVQ_MAGIC_DEAD;
    devq__buffer_fail_fini(b);
    free(b);
    devq_device_close(dev);
}

void devq__buffer_issued(devq_buffer *b)
{
    b->unissued--;
}

static int do_free(struct devq_device *dev, devq_buffer *b);
static void pend(struct devq_device *dev, devq_buffer *b);

/* ---- the queue's cache ---- */

#define CACHE_N 8u
#define CACHE_TAGS 4u
#define CACHE_BYTES (64ull << 20)

struct devq_buffer_cache {
    _Atomic uint32_t lock; /* cache_lock: a spin lock */
    _Atomic uint32_t n;    /* written under the lock */
    uint64_t bytes;
    devq_buffer *b[CACHE_N];
    /* One bit per size held (size_bit), read without the lock so that a
     * cache with no block of the size asked for costs one load; written
     * under it. */
    _Atomic uint64_t sizes;
    struct {
        uint32_t tag;
        uint64_t pairs;
    } hits[CACHE_TAGS]; /* pairs 0: free */
};

/* Held for a few dozen instructions, never across a call that may
 * block: one exchange to take, a plain store to give back (mem_lock's
 * exchange on unlock, for its sleepers, was a third of the pair's
 * locked instructions).  A waiter spins, then yields the CPU. */
static inline void cache_lock(struct devq_buffer_cache *c)
{
    while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
        for (unsigned i = 0; atomic_load_explicit(&c->lock, memory_order_relaxed); i++) {
            if (i < 64) {
                devq__cpu_relax();
            } else {
                sched_yield();
                i = 0;
            }
        }
}

static inline void cache_unlock(struct devq_buffer_cache *c)
{
    atomic_store_explicit(&c->lock, 0, memory_order_release);
}

static uint64_t size_bit(size_t bytes)
{
    return 1ull << (((uint64_t)bytes * 0x9e3779b97f4a7c15ull) >> 58);
}

/* The bits of what c holds now (c's lock held). */
static void sizes_update(struct devq_buffer_cache *c, uint32_t n)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        m |= size_bit(c->b[i]->size);
    atomic_store_explicit(&c->sizes, m, memory_order_relaxed);
}

static struct devq_buffer_cache *cache_of(struct devq_buffer_cache *_Atomic *slot)
{
    struct devq_buffer_cache *c = atomic_load_explicit(slot, memory_order_acquire);
    if (c)
        return c;
    struct devq_buffer_cache *nc = calloc(1, sizeof *nc);
    if (!nc)
        return NULL;
    if (atomic_compare_exchange_strong(slot, &c, nc))
        return nc;
    free(nc);
    return c;
}

/* What every kept buffer needs: caching allowed, and only its user's
 * reference left: no batch holds it, none is still to be issued, not
 * failed, no deferred use. */
static int cacheable(struct devq_device *dev, const devq_buffer *b)
{
    struct devq_mem *m = dev->mem;
    return m && atomic_load_explicit(&m->cache_ok, memory_order_relaxed) &&
           !atomic_load_explicit(&dev->lost, memory_order_relaxed) && !devq__trace_on() && !b->freed &&
           atomic_load_explicit(&b->obj.refs, memory_order_acquire) == 1 &&
           !atomic_load_explicit(&b->unissued, memory_order_acquire) &&
           !atomic_load_explicit(&b->fail_err, memory_order_relaxed) && !b->fail_cause &&
           !atomic_load_explicit(&b->memory_held, memory_order_relaxed) && !b->nparked &&
           b->size <= CACHE_BYTES;
}

/* Allocated on stream sid (stream-ordered) and used on it only. */
static int only_on(const devq_buffer *b, uint32_t sid)
{
    if (!b->alloc_use.cursor || b->alloc_use.stream != sid)
        return 0;
    if (b->track.write.cursor && b->track.write.stream != sid)
        return 0;
    for (uint32_t i = 0; i < b->track.nreads; i++)
        if (b->track.reads[i].cursor && b->track.reads[i].stream != sid)
            return 0;
    return 1;
}

/* Allocated with no queue and never used on any stream: idle memory. */
static int never_used(const devq_buffer *b)
{
    if (b->alloc_use.cursor || b->track.write.cursor)
        return 0;
    for (uint32_t i = 0; i < b->track.nreads; i++)
        if (b->track.reads[i].cursor)
            return 0;
    return 1;
}

/* Put b in c: 1 kept, 0 full. */
static int cache_insert(struct devq_buffer_cache *c, devq_buffer *b)
{
    cache_lock(c);
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (n == CACHE_N || c->bytes + b->size > CACHE_BYTES) {
        cache_unlock(c);
        return 0;
    }
    b->freed = 1;
    c->b[n] = b;
    atomic_store_explicit(&c->sizes,
                          atomic_load_explicit(&c->sizes, memory_order_relaxed) | size_bit(b->size),
                          memory_order_relaxed);
    c->bytes += b->size;
    atomic_store_explicit(&c->n, n + 1, memory_order_relaxed);
    cache_unlock(c);
    return 1;
}

/* Keep b instead of freeing it, on q (a stream-ordered free) or, q NULL,
 * in the device's idle cache (an immediate free): 1 kept, 0 not
 * eligible.  A buffer in the idle cache holds no reference to dev: the
 * device can close with buffers kept there (devq__buffer_idle_drop
 * frees them at its teardown), so its reference goes here. */
static int cache_put(struct devq_device *dev, devq_buffer *b, struct devq_queue *q)
{
    struct devq_buffer_cache *_Atomic *slot = q ? &q->buffers : &dev->qs->idle;
    struct devq_buffer_cache *c = atomic_load_explicit(slot, memory_order_acquire);
    if (c && atomic_load_explicit(&c->n, memory_order_relaxed) == CACHE_N)
        return 0; /* full (of other sizes): the stack takes it */
    if (!cacheable(dev, b) || !(q ? only_on(b, q->stream.id) : never_used(b)))
        return 0;
    if (!c && !(c = cache_of(slot)))
        return 0;
    if (!cache_insert(c, b))
        return 0;
    /* After the insert: a flush clears the flag before it empties caches. */
    struct devq_mem *m = dev->mem;
    if (!atomic_load(&m->cached))
        atomic_store(&m->cached, 1);
    if (!q)
        devq_device_close(dev);
    return 1;
}

/* A kept buffer of bytes and tag from c, or NULL. */
static devq_buffer *cache_take(struct devq_buffer_cache *c, size_t bytes, uint32_t tag)
{
    if (!c || !(atomic_load_explicit(&c->sizes, memory_order_relaxed) & size_bit(bytes)))
        return NULL; /* none of that size (a racing put is missed: fine) */
    devq_buffer *b = NULL;
    cache_lock(c);
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    for (uint32_t i = n; i-- > 0;) {
        if (c->b[i]->size != bytes || c->b[i]->tag != tag)
            continue;
        /* The pair is counted at the next flush, in a slot per tag. */
        unsigned h = CACHE_TAGS;
        for (unsigned k = 0; k < CACHE_TAGS; k++) {
            if (c->hits[k].pairs && c->hits[k].tag == tag) {
                h = k;
                break;
            }
            if (!c->hits[k].pairs && h == CACHE_TAGS)
                h = k;
        }
        if (h == CACHE_TAGS)
            break; /* too many tags: the slow path */
        c->hits[h].tag = tag;
        c->hits[h].pairs++;
        b = c->b[i];
        c->b[i] = c->b[n - 1];
        c->bytes -= b->size;
        atomic_store_explicit(&c->n, n - 1, memory_order_relaxed);
        sizes_update(c, n - 1);
        break;
    }
    cache_unlock(c);
    if (!b)
        return NULL;
    b->freed = 0;
    if (b->name.text[0])
        b->name.text[0] = 0;                              /* unnamed: a new buffer */
    b->name.number = devq__name_number(DEVQ_NAME_BUFFER); /* a new buffer to the user */
    return b;
}

/* A buffer of the idle cache goes: its memory back to the stack (idle,
 * so at once), the handle freed; it holds no device reference. */
static void idle_discard(struct devq_device *dev, devq_buffer *b)
{
    devq__mem_free(dev, b->dptr, b->size, NULL, b->tag);
    devq__tracker_buffer_fini(&b->track);
    b->obj.magic = DEVQ_MAGIC_DEAD;
    devq__buffer_fail_fini(b);
    free(b);
}

/* Empty c (q's, or the device's idle cache when q is NULL) into the
 * stack: stream-ordered frees on q, immediate ones for the idle cache
 * (device lock held, or the device being torn down). */
static void cache_empty(struct devq_device *dev, struct devq_queue *q, struct devq_buffer_cache *c)
{
    devq_buffer *bs[CACHE_N];
    struct {
        uint32_t tag;
        uint64_t pairs;
    } hits[CACHE_TAGS];
    cache_lock(c);
    uint32_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    memcpy(bs, c->b, n * sizeof *bs);
    memcpy(hits, c->hits, sizeof hits);
    memset(c->hits, 0, sizeof c->hits);
    atomic_store_explicit(&c->sizes, 0, memory_order_relaxed);
    c->bytes = 0;
    atomic_store_explicit(&c->n, 0, memory_order_relaxed);
    cache_unlock(c);
    for (unsigned k = 0; k < CACHE_TAGS; k++)
        if (hits[k].pairs)
            devq__mem_settle_pairs(dev, hits[k].tag, q ? &q->stream : NULL, hits[k].pairs);
    /* Released here, not through the notifier: each holds a reference to
     * dev, never the last one (q holds one, as does the caller). */
    for (uint32_t i = 0; i < n; i++) {
        if (!q) {
            idle_discard(dev, bs[i]);
            continue;
        }
        bs[i]->free_q = q;
        if (bs[i]->unissued || do_free(dev, bs[i]) == 1)
            pend(dev, bs[i]);
        else
            devq__object_release_here(&bs[i]->obj);
    }
}

void devq__buffer_caches_flush(struct devq_device *dev)
{
    if (!dev->mem || !dev->qs)
        return;
    atomic_store(&dev->mem->cached, 0);
    for (struct devq_queue *q = dev->qs->queues; q; q = q->next) {
        struct devq_buffer_cache *c = atomic_load(&q->buffers);
        if (c)
            cache_empty(dev, q, c);
    }
    struct devq_buffer_cache *c = atomic_load(&dev->qs->idle);
    if (c)
        cache_empty(dev, NULL, c);
}

void devq__buffer_cache_drop(struct devq_device *dev, struct devq_queue *q)
{
    struct devq_buffer_cache *c = atomic_exchange(&q->buffers, NULL);
    if (!c)
        return;
    cache_empty(dev, q, c);
    free(c);
}

void devq__buffer_idle_drop(struct devq_device *dev)
{
    struct devq_buffer_cache *c = atomic_exchange(&dev->qs->idle, NULL);
    if (!c)
        return;
    cache_empty(dev, NULL, c);
    free(c);
}

/* DEVQ_TRACE: a counter track of the device's bytes outstanding. */
static void trace_outstanding(struct devq_device *dev)
{
    devq_mem_stats ms;
    if (devq__trace_on() && devq_mem_stats_get(dev, &ms) == 0)
        devq__trace_counter(dev, "bytes outstanding", ms.bytes_outstanding, devq__trace_now());
}

static int alloc_new(devq_device *dev, size_t bytes, devq_queue *q, uint32_t tag, devq_buffer **out);

/* Out of line, as free_wrong_device. */
static __attribute__((noinline, cold)) int alloc_wrong_device(devq_device *dev, devq_queue *q)
{
    return devq__err(-EINVAL, "devq_buffer_alloc: %s is on %s:%d, not on %s:%d", devq__queue_label(q).s,
                     q->dev->info.backend, q->dev->info.ordinal, dev->info.backend, dev->info.ordinal);
}

DEVQ_API int devq_buffer_alloc(devq_device *dev, size_t bytes, devq_queue *q, uint32_t tag, devq_buffer **out)
{
    const char *fn = "devq_buffer_alloc";
    int r = devq__device_check(dev, fn);
    if (r < 0)
        return r;
    if (!out)
        return devq__err(-EINVAL, "%s: out is NULL", fn);
    if (bytes == 0)
        return devq__err(-EINVAL, "%s: size is 0", fn);
    if (q && (r = devq__queue_check(q, fn)) < 0)
        return r;
    if (q && q->dev != dev)
        return alloc_wrong_device(dev, q);
    if ((r = devq__device_lost_check(dev)) < 0)
        return r;
    devq_buffer *b;
    if (q && (b = cache_take(atomic_load_explicit(&q->buffers, memory_order_acquire), bytes, tag))) {
        *out = b;
        return 0;
    }
    if (!q && (b = cache_take(atomic_load_explicit(&dev->qs->idle, memory_order_acquire), bytes, tag))) {
        devq__device_retain(dev); /* the idle cache held none */
        *out = b;
        return 0;
    }
    return alloc_new(dev, bytes, q, tag, out);
}

/* Out of line: the cached pair above stays a small function. */
static __attribute__((noinline)) int alloc_new(devq_device *dev, size_t bytes, devq_queue *q, uint32_t tag,
                                               devq_buffer **out)
{
    const char *fn = "devq_buffer_alloc";
    int r;
    devq_buffer *b;
    /* malloc, not calloc: glibc's calloc bypasses the thread cache, and an
     * alloc/free pair would pay for _int_malloc and a heap trim each time. */
    b = malloc(sizeof *b);
    if (b)
        memset(b, 0, sizeof *b);
    if (!b)
        return devq__err(-ENOMEM, "%s: out of memory for a buffer handle", fn);
    devq__object_init(&b->obj, DEVQ_MAGIC_BUFFER, buffer_destroy);
    b->dev = dev;
    b->size = bytes;
    b->tag = tag;
    devq__tracker_buffer_init(&b->track);
    uint64_t t0 = q && devq__trace_on() ? devq__trace_now() : 0; /* a slice on q's track */
    pthread_mutex_lock(&dev->lock);
    struct devq_stream *st = q ? &q->stream : NULL;
    r = devq__mem_alloc(dev, bytes, st, tag, &b->dptr, &b->hptr);
    if (r == -ENOMEM && dev->mem && atomic_load(&dev->mem->cached)) {
        /* Cached buffers are the queues', not the user's: give them back
         * and ask once more, so that a refusal means what it says. */
        devq__buffer_caches_flush(dev);
        r = devq__mem_alloc(dev, bytes, st, tag, &b->dptr, &b->hptr);
    }
    if (r == 0 && st) {
        /* Other streams must order after the stream-ordered alloc. */
        devq__tracker_begin(dev->tracker, st->id);
        b->alloc_use = devq__tracker_here(dev->tracker, st->id);
        b->track.write = b->alloc_use;
    }
    pthread_mutex_unlock(&dev->lock);
    if (r < 0) {
        free(b);
        return r;
    }
    b->name.number = devq__name_number(DEVQ_NAME_BUFFER); /* numbers only what the user got */
    devq__device_retain(dev);
    if (t0)
        devq__trace_slice(q->dev, q->name.number, "alloc", "bytes", bytes, t0, devq__trace_now());
    trace_outstanding(dev);
    *out = b;
    return 0;
}

/* The queue owning a stream use, if that stream still exists. */
static struct devq_queue *queue_of(struct devq_device *dev, const struct devq_use *u)
{
    if (!u->cursor)
        return NULL;
    for (struct devq_queue *q = dev->qs->queues; q; q = q->next)
        if (q->stream.id == u->stream && devq__tracker_stream_gen(dev->tracker, u->stream) == u->gen)
            return q;
    return NULL;
}

/* A queue whose stream may still use b, or NULL when none can. */
static struct devq_queue *a_user_queue(struct devq_device *dev, devq_buffer *b)
{
    struct devq_use uses[64];
    size_t n = devq__tracker_buffer_uses(dev->tracker, &b->track, uses, 64);
    for (size_t i = 0; i < n; i++) {
        struct devq_queue *q = queue_of(dev, &uses[i]);
        if (q)
            return q;
    }
    return NULL;
}

/* Order the free of b after every other stream's use on fq's stream and
 * free it there.  *ordered says whether the ordering was set up (after
 * that, the free itself went to the memory stack, whatever it returned). */
static int free_on(struct devq_device *dev, devq_buffer *b, struct devq_queue *fq, int *ordered)
{
    uint32_t sid = fq->stream.id;
    uint64_t t0 = devq__trace_on() ? devq__trace_now() : 0;
    devq__tracker_begin(dev->tracker, sid);
    char why[DEVQ_LABEL_MAX + 16];
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        snprintf(why, sizeof why, "the free of %s", devq__buffer_label(b).s);
    int r = devq__tracker_bind_why(dev->tracker, sid, &b->track, DEVQ_WRITE,
                                   DEVQ_LOG_ON(DEVQ_LOG_BASIC) ? why : NULL);
    *ordered = r >= 0;
    if (r < 0)
        return r;
    r = devq__mem_free(dev, b->dptr, b->size, &fq->stream, b->tag);
    if (t0 && r == 0)
        devq__trace_slice(fq->dev, fq->name.number, "free", "bytes", b->size, t0, devq__trace_now());
    return r;
}

/* The free's ordering failed on fq (a driver call of the alignment
 * failed): try again there (a transient failure), then on each stream
 * that used b (the last user needs no wait on itself; a buffer used on
 * one stream needs no driver call at all).  A lost device runs nothing
 * any more, so its memory is freed at once.  1: nothing worked, the
 * free stays pending and is tried again later. */
static int free_fallback(struct devq_device *dev, devq_buffer *b, struct devq_queue *fq, int err)
{
    char why[DEVQ_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", devq_errmsg());
    struct devq_use uses[64];
    size_t n = devq__tracker_buffer_uses(dev->tracker, &b->track, uses, 64);
    int ordered = 0, r = err;
    for (size_t i = 0; i <= n && !ordered; i++) {
        if (devq__mem_device_lost(dev, r))
            return devq__mem_free(dev, b->dptr, b->size, NULL, b->tag);
        struct devq_queue *q = i == 0 ? fq : queue_of(dev, &uses[i - 1]);
        if (q)
            r = free_on(dev, b, q, &ordered);
    }
    if (ordered) {
        devq__log(DEVQ_LOG_BASIC,
                  "%s:%d: the free of %s could not be ordered on %s (%s); "
                  "freed in order on another try",
                  dev->info.backend, dev->info.ordinal, devq__buffer_label(b).s, devq__queue_label(fq).s,
                  why);
        return r;
    }
    if (devq__mem_device_lost(dev, r))
        return devq__mem_free(dev, b->dptr, b->size, NULL, b->tag);
    devq__log(DEVQ_LOG_BASIC,
              "%s:%d: the free of %s could not be ordered after its uses (%s); "
              "it is tried again when more work is issued, or by devq_mem_reap",
              dev->info.backend, dev->info.ordinal, devq__buffer_label(b).s, why);
    return 1;
}

void devq__buffer_hold_memory(devq_buffer *b)
{
    atomic_store_explicit(&b->memory_held, 1, memory_order_release);
}

/* Device lock held.  0 freed, 1 kept pending (to be tried again), or an
 * error from the memory stack. */
static int do_free(struct devq_device *dev, devq_buffer *b)
{
    int r;
    if (atomic_load_explicit(&b->memory_held, memory_order_acquire)) {
        devq__tracker_buffer_fini(&b->track); /* the handle goes; the memory never does */
        return 0;
    }
    /* With no queue named, a buffer still in use is freed in stream order
     * on a stream that used it (the tracker makes that stream wait for the
     * others): waiting on the host instead could block forever on work
     * gated by a value the caller sets later, with the device lock held.
     * A lost device runs nothing: its memory is idle, and gone. */
    struct devq_queue *fq = atomic_load(&dev->lost) ? NULL : b->free_q ? b->free_q : a_user_queue(dev, b);
    if (fq) {
        int ordered;
        r = free_on(dev, b, fq, &ordered);
        if (!ordered)
            r = free_fallback(dev, b, fq, r);
        if (r == 1)
            return 1; /* the tracker still knows b's uses */
    } else {
        r = devq__mem_free(dev, b->dptr, b->size, NULL, b->tag); /* idle: nobody can touch it */
    }
    devq__tracker_buffer_fini(&b->track);
    return r < 0 ? r : 0;
}

static void pend(struct devq_device *dev, devq_buffer *b)
{
    b->free_pending = 1;
    b->next_pending = dev->qs->pending_frees;
    dev->qs->pending_frees = b;
}

void devq__process_pending_frees(struct devq_device *dev)
{
    devq_buffer *list = dev->qs->pending_frees;
    dev->qs->pending_frees = NULL;
    while (list) {
        devq_buffer *b = list;
        list = b->next_pending;
        if (b->unissued || do_free(dev, b) == 1) {
            pend(dev, b);
            continue;
        }
        b->free_pending = 0;
        devq__object_release(&b->obj);
    }
}

/* A queue is going away: pending frees aimed at it become synchronous. */
void devq__buffer_queue_gone(struct devq_device *dev, struct devq_queue *q)
{
    for (devq_buffer *b = dev->qs->pending_frees; b; b = b->next_pending)
        if (b->free_q == q)
            b->free_q = NULL;
}

static int free_now(struct devq_device *dev, devq_buffer *b, devq_queue *q);

/* Out of line, with its label buffers: the pair's path stays a leaf
 * without a large frame. */
static __attribute__((noinline, cold)) int free_wrong_device(struct devq_device *dev, devq_queue *q)
{
    return devq__err(-EINVAL, "devq_buffer_free: buffer belongs to %s:%d but %s is on %s:%d",
                     dev->info.backend, dev->info.ordinal, devq__queue_label(q).s, q->dev->info.backend,
                     q->dev->info.ordinal);
}

DEVQ_API int devq_buffer_free(devq_buffer *b, devq_queue *q)
{
    const char *fn = "devq_buffer_free";
    if (!b)
        return devq__err(-EINVAL, "%s: buffer is NULL", fn);
    if (b->obj.magic != DEVQ_MAGIC_BUFFER)
        return devq__err(-EINVAL, "%s: %p is not a live buffer (freed twice?)", fn, (void *)b);
    int r;
    if (q && (r = devq__queue_check(q, fn)) < 0)
        return r;
    struct devq_device *dev = b->dev;
    if (q && q->dev != dev)
        return free_wrong_device(dev, q);
    if (cache_put(dev, b, q))
        return 0; /* kept for the next allocation of its size on q (or with no queue) */
    return free_now(dev, b, q);
}

static __attribute__((noinline)) int free_now(struct devq_device *dev, devq_buffer *b, devq_queue *q)
{
    const char *fn = "devq_buffer_free";
    int r = 0;
    pthread_mutex_lock(&dev->lock);
    if (b->freed) {
        pthread_mutex_unlock(&dev->lock);
        return devq__err(-EINVAL, "%s: %s was already freed", fn, devq__buffer_label(b).s);
    }
    b->freed = 1;
    b->free_q = q ? q : queue_of(dev, &b->alloc_use);
    if (b->unissued || (r = do_free(dev, b)) == 1) {
        pend(dev, b);
        pthread_mutex_unlock(&dev->lock);
        return 0; /* the last issued use (or a retry) triggers the free */
    }
    pthread_mutex_unlock(&dev->lock);
    trace_outstanding(dev);
    devq__object_release_here(&b->obj);
    return r;
}

DEVQ_API size_t devq_buffer_size(const devq_buffer *b)
{
    return b && b->obj.magic == DEVQ_MAGIC_BUFFER ? b->size : 0;
}

DEVQ_API void *devq_buffer_device_ptr(const devq_buffer *b)
{
    return b && b->obj.magic == DEVQ_MAGIC_BUFFER ? b->dptr : NULL;
}

DEVQ_API void *devq_buffer_host_ptr(const devq_buffer *b)
{
    return b && b->obj.magic == DEVQ_MAGIC_BUFFER ? b->hptr : NULL;
}

DEVQ_API int devq_buffer_status(const devq_buffer *b)
{
    int r = devq__buffer_check(b, "devq_buffer_status");
    if (r < 0)
        return r;
    char cause[DEVQ_CAUSE_MAX];
    int err = devq__buffer_failed(b, cause, sizeof cause);
    if (!err)
        return 0;
    return devq__err(err, "%s failed: %s", devq__buffer_label(b).s, cause);
}

DEVQ_API int devq_buffer_set_name(devq_buffer *b, const char *name)
{
    int r = devq__buffer_check(b, "devq_buffer_set_name");
    if (r < 0)
        return r;
    return devq__name_set(&b->name, DEVQ_NAME_BUFFER, "devq_buffer_set_name", name);
}
