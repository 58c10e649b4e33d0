/* SPDX-License-Identifier: MIT */
/* The devq pool: lib's own stream-ordered allocator over backend chunks.
 *
 * Requests are rounded up to a size class: every multiple of 256 B up to
 * 2 KiB, then four classes per power of two up to 32 MiB (at most 25% is
 * lost to rounding there).  Every class is a multiple of 256 B, so blocks
 * carved from a backend chunk (itself at least 256-byte aligned, as the
 * plugin contract says) keep that alignment, the same as the native
 * allocators give: switching DEVQ_MEM_POOL never loses alignment.  Each
 * class carves blocks from its own chunks (64 KiB to 2 MiB of backend
 * memory).  Larger requests bypass the bins and go to the backend.
 *
 * The ordering rule.  A block freed on stream A may still be in use by
 * work queued on A before the free.  So it goes on A's free list for its
 * class, and a later request on A takes it at once (stream order makes
 * that safe): the common alloc/free pair on one stream records nothing.
 * Every other stream (and synchronous requests) may take it only once a
 * fence recorded on A after the free is reached.
 *
 * Lazy, batched fences.  A free records no fence.  Only when a block is
 * about to cross to another stream (a request elsewhere that missed its
 * own lists), or the pool reaps, trims or settles for the backend, does
 * the pool "seal" A: it records ONE event at A's tail, covering every
 * block freed on A since the last seal.  Recording later in A than the
 * free is conservative, so this is safe.  Each seal is its own batch with
 * its own fence, so one slow fence never holds back the others: a request
 * that misses its lists looks at a bounded number of the oldest blocks of
 * its class on each other stream and asks each batch it meets once.
 *
 * Sealing records on a stream other than the one the call names.  That is
 * safe because lib makes every backend call on a stream, and every call
 * into the device's resource stack, under the device lock; a stream is
 * recorded on only until its stream_gone, after which nothing of it stays.
 *
 * A synchronous free makes the block idle (usable anywhere) at once.
 *
 * The per-stream fast path.  libdevq never makes two calls naming the
 * same stream at once (devq_resource.h), so each stream keeps state that
 * only calls naming it touch, without the pool lock: a table of the
 * blocks it handed out (pointer -> block, to recognise a free without the
 * shared hash), and one cached block per size class.  A free on stream S
 * of a block handed out on S puts it in S's slot for its class with a
 * plain store; the next request on S for that class takes it back with
 * one atomic exchange.  Other calls may take a slot too (exchange under
 * the pool lock): a request on another stream that misses, a reap, a
 * trim or running out of memory moves the cached block onto S's shared
 * list as an unfenced free of S, so nothing is stranded and the fence
 * rules above apply unchanged.  Block bookkeeping is never freed while
 * the pool lives (a released chunk's is kept for the next chunk of its
 * class), so a stale table entry is only ever a wrong guess, caught by
 * the block's `fast` word, never a dangling pointer.
 *
 * Running out.  When the backend refuses a chunk, the pool seals every
 * stream, reaps every reached fence and retries, then releases every
 * unused chunk (trim) and retries, and only then fails with -ENOMEM and a
 * report of what it holds.
 *
 * Everything but the fast path is under one lock (mem_lock.h: a compare-
 * and-swap to take, an exchange to give back): the expensive part of an
 * allocator on a device is the backend call, which this avoids; the
 * locked path is a list pop or push and a hash lookup. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "error.h"
#include "log.h"
#include "mem_lock.h"
#include "mem_resource.h"

#define MIN_CLASS 256u            /* also the alignment every class keeps */
#define LINEAR_CLASSES 8u         /* 256 B .. 2 KiB in steps of 256 B */
#define NCLASSES 64u              /* 256 B .. 32 MiB */
#define LARGE_BYTES (32ull << 20) /* above: straight to the backend */
#define CHUNK_MIN (64ull << 10)
#define CHUNK_MAX (2ull << 20)
#define SCAN_ON_MISS 32u  /* blocks looked at per stream per missed request */
#define FAST_STREAMS 256u /* stream ids with a fast path */
#define SEEN_SLOTS 1024u  /* handed-out table per stream (power of two) */

/* block.fast: which stream's fast path may take the block back. */
#define FAST_LIVE 1u   /* handed out on the stream */
#define FAST_CACHED 2u /* in the stream's slot */
#define FAST(sid, st) ((((uint32_t)(sid) + 1u) << 2) | (st))

enum block_state { B_IDLE, B_LIVE, B_FREED, B_STUCK };

struct block;
struct list { /* newest at head, oldest at tail */
    struct block *head, *tail;
    size_t n;
};

/* One seal: the fence recorded at a stream's tail for the blocks freed
 * there before it.  Lives while a block points at it. */
struct batch {
    devq_pl_event *ev; /* NULL once reached (given back) */
    uint32_t refs;
    uint8_t reached, settle_failed;
};

struct chunk;
struct block {
    void *ptr, *host;
    struct block *hnext;         /* hash chain */
    struct block *prev, *next;   /* on `on` (a stream list, idle, large, stuck) */
    struct block *uprev, *unext; /* on its stream's unfenced list */
    struct list *on;
    struct chunk *chunk; /* NULL: a large block */
    struct batch *batch; /* the seal covering the last free, or NULL */
    size_t bytes;        /* class size, or the large size */
    uint32_t sid;        /* stream of the last stream-ordered free */
    uint8_t cls, state, unfenced;
    _Atomic uint32_t fast; /* FAST(sid, LIVE|CACHED), or 0 */
};

struct chunk {
    struct chunk *prev, *next;
    char *base, *host;
    size_t bytes, cap, ncarved;
    uint32_t busy; /* carved blocks that are not idle */
    uint8_t cls;
    struct block blocks[];
};

struct stream_lists {
    struct list free[NCLASSES];
    struct block *unfenced; /* freed here since the last seal */
    size_t nunfenced;
    size_t nfree;           /* blocks on free[] */
    struct devq_stream *st; /* to seal on; NULL after stream_gone */
    uint32_t sid;
    /* Fast path: the slots are shared (exchange); `seen` belongs to the
     * calls naming this stream alone. */
    _Atomic(struct block *) slot[NCLASSES];
    struct seen {
        void *ptr;
        struct block *b;
    } seen[SEEN_SLOTS];
};

struct pool {
    struct devq_device *dev;
    struct mem_lock lock;
    struct list idle[NCLASSES];
    struct chunk *chunks[NCLASSES]; /* newest first; only the head may have room */
    struct stream_lists **streams;
    uint32_t nstreams;
    _Atomic(struct stream_lists *) fast[FAST_STREAMS]; /* published streams[] */
    struct chunk *retired;                             /* released chunks' bookkeeping, for reuse */
    struct list large_pending;                         /* large blocks waiting for their fence */
    struct list stuck;                                 /* fences that did not settle in time */
    struct block **buckets;
    size_t nbuckets, nhashed;
    uint64_t reserved, outstanding, pending_bytes, pending_n, stuck_bytes;
};

/* ---- size classes ---- */

static unsigned size_class(size_t n)
{
    if (n <= LINEAR_CLASSES * MIN_CLASS)
        return n ? (unsigned)((n - 1) / MIN_CLASS) : 0;
    /* Above 2 KiB: quarters of a power of two, 512 B or more apart. */
    unsigned p = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    unsigned sub = (unsigned)((n - 1 - ((size_t)1 << p)) >> (p - 2));
    return LINEAR_CLASSES + (p - 11) * 4 + sub;
}

static size_t class_size(unsigned c)
{
    if (c < LINEAR_CLASSES)
        return (size_t)(c + 1) * MIN_CLASS;
    unsigned p = 11 + (c - LINEAR_CLASSES) / 4, sub = (c - LINEAR_CLASSES) % 4;
    return ((size_t)1 << p) + (size_t)(sub + 1) * ((size_t)1 << (p - 2));
}

_Static_assert(LINEAR_CLASSES *MIN_CLASS == 2048, "the quarter classes start at 2^11");

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
    else
        l->tail = b;
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
    else
        l->tail = b->prev;
    b->prev = b->next = NULL;
    b->on = NULL;
    l->n--;
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

/* ---- streams and their seals ---- */

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
    if (!p->streams[sid] && (p->streams[sid] = calloc(1, sizeof **p->streams))) {
        p->streams[sid]->sid = sid;
        if (sid < FAST_STREAMS)
            atomic_store_explicit(&p->fast[sid], p->streams[sid], memory_order_release);
    }
    return p->streams[sid];
}

static struct stream_lists *lists_of(struct pool *p, uint32_t sid)
{
    return sid < p->nstreams ? p->streams[sid] : NULL;
}

static void unfenced_push(struct stream_lists *sl, struct block *b)
{
    b->uprev = NULL;
    b->unext = sl->unfenced;
    if (sl->unfenced)
        sl->unfenced->uprev = b;
    sl->unfenced = b;
    sl->nunfenced++;
    b->unfenced = 1;
}

static void unfenced_remove(struct pool *p, struct block *b)
{
    if (!b->unfenced)
        return;
    struct stream_lists *sl = lists_of(p, b->sid);
    if (b->uprev)
        b->uprev->unext = b->unext;
    else
        sl->unfenced = b->unext;
    if (b->unext)
        b->unext->uprev = b->uprev;
    b->uprev = b->unext = NULL;
    b->unfenced = 0;
    sl->nunfenced--;
}

static void batch_drop(struct pool *p, struct block *b)
{
    struct batch *bt = b->batch;
    b->batch = NULL;
    if (bt && --bt->refs == 0) {
        devq__fence_put(p->dev, &bt->ev);
        free(bt);
    }
}

/* Reached fences stay reached: ask the backend once, then remember (and
 * give the event back to the device's pool at once). */
static bool batch_reached(struct pool *p, struct batch *bt)
{
    if (!bt->reached && devq__fence_reached(p->dev, bt->ev)) {
        bt->reached = 1;
        devq__fence_put(p->dev, &bt->ev);
    }
    return bt->reached;
}

/* Record one fence at the stream's tail for every block freed there since
 * the last seal.  On failure the blocks stay unfenced (asked again later). */
static int seal(struct pool *p, struct stream_lists *sl)
{
    if (!sl || !sl->nunfenced || !sl->st)
        return 0;
    struct batch *bt = calloc(1, sizeof *bt);
    if (!bt)
        return devq__err(-ENOMEM, "pool: out of host memory for a fence");
    int r = devq__fence_record(p->dev, sl->st, &bt->ev);
    if (r < 0 && devq__mem_device_lost(p->dev, r))
        bt->reached = 1; /* nothing runs on a lost device */
    else if (r < 0) {
        free(bt);
        return r;
    }
    for (struct block *b = sl->unfenced, *nx; b; b = nx) {
        nx = b->unext;
        b->uprev = b->unext = NULL;
        b->unfenced = 0;
        b->batch = bt;
        bt->refs++;
    }
    sl->unfenced = NULL;
    sl->nunfenced = 0;
    return 0;
}

/* ---- state changes ---- */

/* Book a stream-ordered free of chunk block b on sl's stream. */
static void freed_on(struct pool *p, struct stream_lists *sl, struct block *b)
{
    b->state = B_FREED;
    b->sid = sl->sid;
    p->pending_bytes += b->bytes;
    p->pending_n++;
    unfenced_push(sl, b);
    list_push(&sl->free[b->cls], b);
    sl->nfree++;
}

/* ---- the fast path's state ---- */

static size_t seen_of(const void *ptr)
{
    uint64_t h = ((uint64_t)(uintptr_t)ptr >> 8) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40) & (SEEN_SLOTS - 1);
}

/* b is handed out on sl's stream: a free there may take the fast path. */
static void note_handout(struct stream_lists *sl, struct block *b)
{
    atomic_store_explicit(&b->fast, FAST(sl->sid, FAST_LIVE), memory_order_release);
    struct seen *e = &sl->seen[seen_of(b->ptr)];
    e->ptr = b->ptr;
    e->b = b;
}

/* Move the block cached in sl's slot for class c (if any) onto sl's
 * shared list, as the unfenced free it is.  Pool lock held. */
static void unslot(struct pool *p, struct stream_lists *sl, unsigned c)
{
    if (!atomic_load_explicit(&sl->slot[c], memory_order_relaxed))
        return;
    struct block *b = atomic_exchange_explicit(&sl->slot[c], NULL, memory_order_acquire);
    if (!b)
        return;
    atomic_store_explicit(&b->fast, 0, memory_order_relaxed);
    p->outstanding -= b->bytes;
    freed_on(p, sl, b);
}

static void unslot_all(struct pool *p, struct stream_lists *sl)
{
    for (unsigned c = 0; c < NCLASSES; c++)
        unslot(p, sl, c);
}

/* Blocks sitting in slots: counted as freed-but-pending in reports. */
static void slotted(struct pool *p, uint64_t *bytes, uint64_t *n)
{
    *bytes = *n = 0;
    for (uint32_t s = 0; s < p->nstreams && s < FAST_STREAMS; s++) {
        struct stream_lists *sl = p->streams[s];
        for (unsigned c = 0; sl && c < NCLASSES; c++) {
            if (atomic_load_explicit(&sl->slot[c], memory_order_relaxed)) {
                *bytes += class_size(c);
                (*n)++;
            }
        }
    }
}

/* A freed block leaves the pending accounting (reused, idle or stuck). */
static void unpend(struct pool *p, struct block *b)
{
    if (b->state != B_FREED)
        return;
    unfenced_remove(p, b);
    if (b->chunk) /* on its stream's free list */
        lists_of(p, b->sid)->nfree--;
    list_remove(b);
    p->pending_bytes -= b->bytes;
    p->pending_n--;
}

static void make_idle(struct pool *p, struct block *b)
{
    unpend(p, b);
    list_remove(b);
    batch_drop(p, b);
    b->state = B_IDLE;
    b->chunk->busy--;
    list_push(&p->idle[b->cls], b);
}

/* A fence that did not settle when it had to (stream going away, pool
 * destroyed): keep the block out of use.  When the fence exists it is
 * asked again by every full reap: the block comes back once reached. */
static void make_stuck(struct pool *p, struct block *b)
{
    unpend(p, b);
    list_remove(b);
    b->state = B_STUCK;
    p->stuck_bytes += b->bytes;
    list_push(&p->stuck, b);
    devq__log(DEVQ_LOG_BASIC,
              "pool: free of %p (%zu bytes) on stream %u has not completed; "
              "the block stays out of use until it does",
              b->ptr, b->bytes, b->sid);
}

static void unstick(struct pool *p, struct block *b)
{
    list_remove(b);
    p->stuck_bytes -= b->bytes;
    if (!b->chunk) {
        large_release(p, b);
        return;
    }
    batch_drop(p, b);
    b->state = B_IDLE;
    b->chunk->busy--;
    list_push(&p->idle[b->cls], b);
}

static void large_release(struct pool *p, struct block *b)
{
    unpend(p, b);
    list_remove(b);
    batch_drop(p, b);
    hash_remove(p, b);
    p->dev->ops->mem_free(p->dev->pl, b->ptr);
    p->reserved -= b->bytes;
    free(b);
}

/* ---- reaping ---- */

/* Seal every stream, then complete every reached fence.  Returns how many
 * frees completed. */
static size_t reap_all(struct pool *p)
{
    size_t done = 0;
    for (uint32_t s = 0; s < p->nstreams; s++) {
        struct stream_lists *sl = p->streams[s];
        if (!sl)
            continue;
        unslot_all(p, sl);
        seal(p, sl);
        if (!sl->nfree)
            continue;
        for (unsigned c = 0; c < NCLASSES; c++) {
            for (struct block *b = sl->free[c].head, *nx; b; b = nx) {
                nx = b->next;
                if (b->batch && batch_reached(p, b->batch)) {
                    make_idle(p, b);
                    done++;
                }
            }
        }
    }
    for (struct block *b = p->large_pending.head, *nx; b; b = nx) {
        nx = b->next;
        if (b->batch && batch_reached(p, b->batch)) {
            large_release(p, b);
            done++;
        }
    }
    for (struct block *b = p->stuck.head, *nx; b; b = nx) {
        nx = b->next;
        if (b->batch && batch_reached(p, b->batch))
            unstick(p, b);
    }
    return done;
}

/* A request for class c on stream `sid` missed its own list and the idle
 * list: look at the oldest few blocks of class c that other streams freed.
 * A block nobody sealed yet gets its stream sealed now (one fence for all
 * that stream's unfenced frees), so it can cross once that is reached;
 * each batch met is asked once. */
static struct block *steal(struct pool *p, unsigned c, uint32_t sid)
{
    for (uint32_t s = 0; s < p->nstreams; s++) {
        struct stream_lists *sl = p->streams[s];
        if (s == sid || !sl)
            continue;
        unslot(p, sl, c);
        if (!sl->free[c].n)
            continue;
        struct batch *not_yet = NULL;
        size_t scanned = 0;
        for (struct block *b = sl->free[c].tail; b && scanned < SCAN_ON_MISS; b = b->prev, scanned++) {
            if (b->unfenced && (seal(p, sl) < 0 || !b->batch))
                break; /* newer blocks are unfenced too */
            if (b->batch == not_yet)
                continue;
            if (batch_reached(p, b->batch)) {
                unpend(p, b);
                batch_drop(p, b);
                return b; /* still counted busy in its chunk */
            }
            not_yet = b->batch;
        }
    }
    return NULL;
}

/* ---- chunks ---- */

static void chunk_release(struct pool *p, struct chunk *ch)
{
    for (size_t i = 0; i < ch->ncarved; i++) {
        struct block *b = &ch->blocks[i];
        list_remove(b);
        batch_drop(p, b);
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
    /* Kept, not freed: a stream's handed-out table may still name its
     * blocks (see the fast path). */
    ch->next = p->retired;
    p->retired = ch;
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
        struct chunk **rp = &p->retired;
        while (*rp && (*rp)->cls != c)
            rp = &(*rp)->next;
        if ((ch = *rp))
            *rp = ch->next; /* sized for the class's full cap */
        else if (!(ch = calloc(1, sizeof *ch + cap * sizeof(struct block))))
            return devq__err(-ENOMEM, "pool: out of host memory for chunk metadata");
        ch->prev = ch->next = NULL;
        ch->ncarved = 0;
        ch->busy = 0;
        ch->cls = (uint8_t)c;
        void *d = NULL, *h = NULL;
        int r = p->dev->ops->mem_alloc(p->dev->pl, bytes, &d, &h);
        if (r == -ENOMEM && cap > 1) {
            /* A full chunk does not fit: one block may. */
            bytes = cs;
            cap = 1;
            r = p->dev->ops->mem_alloc(p->dev->pl, bytes, &d, &h);
        }
        if (r < 0) {
            ch->next = p->retired;
            p->retired = ch;
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
    b->state = B_IDLE;
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
    return devq__err(-ENOMEM,
                     "pool: out of device memory: requested %zu, reserved %llu, "
                     "outstanding %llu, largest free block %zu, pending-free %llu bytes, "
                     "budget %s (after reap and trim); backend: %s",
                     bytes, (unsigned long long)p->reserved, (unsigned long long)p->outstanding,
                     largest_free(p), (unsigned long long)p->pending_bytes, btxt, why);
}

/* ---- allocate ---- */

static struct block *take(struct pool *p, unsigned c, uint32_t sid)
{
    struct stream_lists *sl = lists_of(p, sid);
    struct block *b;
    if (sl && (b = sl->free[c].head)) {
        /* Freed on this very stream: stream order makes reuse safe now. */
        unpend(p, b);
        batch_drop(p, b);
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
        b = steal(p, c, sid);
    if (b) {
        *out = b;
        return 0;
    }
    int r = carve(p, c, out);
    if (r != -ENOMEM)
        return r;
    char why[256];
    snprintf(why, sizeof why, "%s", devq__errmsg_peek());
    reap_all(p); /* also gives large blocks back */
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

static int pool_allocate(void *state, size_t bytes, devq_stream_ref *st, uint32_t tag, void **dptr,
                         void **hptr)
{
    struct pool *p = state;
    struct block *b = NULL;
    uint32_t sid = devq__sid(st);
    if (sid < FAST_STREAMS && bytes <= LARGE_BYTES) {
        /* Fast path: this stream's cached block of the class, if any. */
        struct stream_lists *sl = atomic_load_explicit(&p->fast[sid], memory_order_acquire);
        unsigned c = size_class(bytes);
        if (sl && atomic_load_explicit(&sl->slot[c], memory_order_relaxed) &&
            (b = atomic_exchange_explicit(&sl->slot[c], NULL, memory_order_acquire))) {
            note_handout(sl, b);
            *dptr = b->ptr;
            *hptr = b->host;
            return 0;
        }
    }
    mem_lock(&p->lock);
    int r = bytes > LARGE_BYTES ? pool_alloc_large(p, bytes, &b) : pool_alloc_binned(p, bytes, sid, &b);
    if (r == 0) {
        b->state = B_LIVE;
        p->outstanding += b->bytes;
        struct stream_lists *sl = b->chunk && st ? stream_lists(p, sid) : NULL;
        if (sl && sid < FAST_STREAMS) {
            sl->st = st;
            note_handout(sl, b);
        } else {
            atomic_store_explicit(&b->fast, 0, memory_order_relaxed);
        }
        *dptr = b->ptr;
        *hptr = b->host;
    } else if (r != -ENOMEM) {
        /* Out of memory has its own report; anything else is the plugin's
         * detail (the driver error), which does not say what was asked. */
        devq__err(r, "pool: backend could not allocate %zu bytes: %s", bytes, devq__errmsg_peek());
    }
    mem_unlock(&p->lock);
    return r;
}

/* ---- deallocate ---- */

static int pool_deallocate(void *state, void *ptr, size_t bytes, devq_stream_ref *st, uint32_t tag)
{
    struct pool *p = state;
    uint32_t sid = devq__sid(st);
    if (sid < FAST_STREAMS) {
        /* Fast path: a block this stream handed out goes to its slot. */
        struct stream_lists *sl = atomic_load_explicit(&p->fast[sid], memory_order_acquire);
        struct seen *e = sl ? &sl->seen[seen_of(ptr)] : NULL;
        struct block *b = e && e->ptr == ptr ? e->b : NULL;
        if (b && atomic_load_explicit(&b->fast, memory_order_acquire) == FAST(sid, FAST_LIVE) &&
            b->ptr == ptr && bytes <= b->bytes && (!bytes || size_class(bytes) == b->cls) &&
            !atomic_load_explicit(&sl->slot[b->cls], memory_order_relaxed)) {
            e->ptr = NULL;
            atomic_store_explicit(&b->fast, FAST(sid, FAST_CACHED), memory_order_relaxed);
            atomic_store_explicit(&sl->slot[b->cls], b, memory_order_release);
            return 0;
        }
    }
    mem_lock(&p->lock);
    struct block *b = hash_find(p, ptr);
    if (b && (atomic_load_explicit(&b->fast, memory_order_relaxed) & 3u) == FAST_CACHED) {
        mem_unlock(&p->lock);
        return devq__err(-EINVAL,
                         "pool: double free of %p (%zu bytes): the block is not "
                         "allocated",
                         ptr, b->bytes);
    }
    if (!b || b->state != B_LIVE) {
        mem_unlock(&p->lock);
        if (!b)
            return devq__err(-EINVAL,
                             "pool: free of %p, which this pool never handed out "
                             "(foreign pointer)",
                             ptr);
        return devq__err(-EINVAL,
                         "pool: double free of %p (%zu bytes): the block is not "
                         "allocated",
                         ptr, b->bytes);
    }
    if (bytes > b->bytes || (b->chunk && bytes && size_class(bytes) != b->cls)) {
        mem_unlock(&p->lock);
        return devq__err(-EINVAL,
                         "pool: free of %p with %zu bytes, but it was allocated "
                         "as %zu",
                         ptr, bytes, b->bytes);
    }
    p->outstanding -= b->bytes;
    atomic_store_explicit(&b->fast, 0, memory_order_relaxed);
    if (!st) {
        if (b->chunk)
            make_idle(p, b);
        else
            large_release(p, b);
        mem_unlock(&p->lock);
        return 0;
    }
    struct stream_lists *sl = stream_lists(p, st->id);
    if (!sl) {
        /* Without lists the free cannot be ordered: never reuse it. */
        b->sid = st->id;
        make_stuck(p, b);
        mem_unlock(&p->lock);
        return devq__err(-ENOMEM,
                         "pool: out of host memory ordering the free of %p on "
                         "stream %u; the block stays out of use",
                         ptr, st->id);
    }
    sl->st = st;
    if (b->chunk) {
        freed_on(p, sl, b);
        mem_unlock(&p->lock);
        return 0;
    }
    b->state = B_FREED;
    b->sid = st->id;
    p->pending_bytes += b->bytes;
    p->pending_n++;
    unfenced_push(sl, b);
    /* A large block is never reused, only given back: fence it now (one
     * event is nothing next to a backend free of this size). */
    list_push(&p->large_pending, b);
    int r = seal(p, sl);
    mem_unlock(&p->lock);
    if (r < 0)
        return devq__err(r,
                         "pool: could not order the free of %p on stream %u; the block "
                         "waits for a later fence: %s",
                         ptr, st->id, devq__errmsg_peek());
    return 0;
}

/* ---- the rest of the vtable ---- */

static uint64_t pool_outstanding(void *state)
{
    struct pool *p = state;
    mem_lock(&p->lock);
    uint64_t cached, n;
    slotted(p, &cached, &n);
    uint64_t v = p->outstanding - (cached < p->outstanding ? cached : p->outstanding);
    mem_unlock(&p->lock);
    return v;
}

static int pool_reap(void *state)
{
    struct pool *p = state;
    mem_lock(&p->lock);
    reap_all(p);
    mem_unlock(&p->lock);
    return 0;
}

static int pool_trim(void *state)
{
    struct pool *p = state;
    mem_lock(&p->lock);
    reap_all(p);
    size_t n = trim_locked(p);
    mem_unlock(&p->lock);
    devq__log(DEVQ_LOG_FULL, "pool: trim released %zu bytes", n);
    return 0;
}

/* Settle one freed block: wait for its fence (bounded, once per batch),
 * else keep it out. */
static void settle(struct pool *p, struct block *b)
{
    struct batch *bt = b->batch;
    bool ok = false;
    if (bt && !bt->settle_failed) {
        ok = bt->reached || devq__fence_settle(p->dev, bt->ev, DEVQ_FENCE_SETTLE_NS);
        if (ok && !bt->reached) {
            bt->reached = 1;
            devq__fence_put(p->dev, &bt->ev);
        }
        bt->settle_failed = !ok;
    }
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
    mem_lock(&p->lock);
    /* The id will name another stream: nothing may stay on its lists. */
    struct stream_lists *sl = lists_of(p, st->id);
    if (sl) {
        sl->st = st;
        unslot_all(p, sl);
        memset(sl->seen, 0, sizeof sl->seen); /* the id will name another stream */
        seal(p, sl);                          /* a failure leaves blocks unfenced: stuck below */
        for (unsigned c = 0; c < NCLASSES; c++)
            while (sl->free[c].head)
                settle(p, sl->free[c].head);
    }
    for (struct block *b = p->large_pending.head, *nx; b; b = nx) {
        nx = b->next;
        if (b->sid == st->id)
            settle(p, b);
    }
    if (sl)
        sl->st = NULL;
    mem_unlock(&p->lock);
}

static int pool_stats(void *state, devq_mem_stats *st)
{
    struct pool *p = state;
    mem_lock(&p->lock);
    uint64_t cached, n;
    slotted(p, &cached, &n);
    st->bytes_outstanding = p->outstanding - (cached < p->outstanding ? cached : p->outstanding);
    st->bytes_reserved = p->reserved;
    st->pending_frees = p->pending_n + n;
    mem_unlock(&p->lock);
    return 0;
}

static void pool_destroy(void *state)
{
    struct pool *p = state;
    reap_all(p); /* seals, and stuck blocks whose fence got there */
    for (uint32_t s = 0; s < p->nstreams; s++) {
        struct stream_lists *sl = p->streams[s];
        for (unsigned c = 0; sl && c < NCLASSES; c++)
            while (sl->free[c].head)
                // NOLINTNEXTLINE(clang-analyzer-unix.Malloc): b leaves this list (list_remove via b->on) before any free
                settle(p, sl->free[c].head);
    }
    while (p->large_pending.head)
        // NOLINTNEXTLINE(clang-analyzer-unix.Malloc): b leaves this list (list_remove via b->on) before any free
        settle(p, p->large_pending.head);
    trim_locked(p);
    /* What is left is live or stuck: its memory may still be in use, so
     * it is not handed back to the backend, only its bookkeeping goes. */
    uint64_t kept = 0;
    for (size_t i = 0; i < p->nbuckets; i++) {
        for (struct block *b = p->buckets[i], *nx; b; b = nx) {
            nx = b->hnext;
            if (!b->chunk) {
                batch_drop(p, b);
                kept += b->bytes;
                free(b);
            }
        }
    }
    for (unsigned c = 0; c < NCLASSES; c++) {
        for (struct chunk *ch = p->chunks[c], *nx; ch; ch = nx) {
            nx = ch->next;
            for (size_t i = 0; i < ch->ncarved; i++)
                batch_drop(p, &ch->blocks[i]);
            kept += ch->bytes;
            free(ch);
        }
    }
    if (kept)
        devq__log(DEVQ_LOG_BASIC,
                  "pool: destroyed with %llu bytes still allocated or "
                  "pending; that memory was not returned to the backend",
                  (unsigned long long)kept);
    while (p->retired) {
        struct chunk *ch = p->retired;
        p->retired = ch->next;
        free(ch);
    }
    for (uint32_t i = 0; i < p->nstreams; i++)
        free(p->streams[i]);
    free(p->streams);
    free(p->buckets);
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
    mem_lock_init(&p->lock);
    r = devq__resource_new(dev, &pool_ops, p, DEVQ_RES_POOL, NULL, out);
    if (r < 0) {
        free(p);
    }
    return r;
}
