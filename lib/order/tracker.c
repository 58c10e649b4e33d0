/* SPDX-License-Identifier: MIT */
/* See tracker.h.  Streams are dense ids so last_synced is a square matrix
 * that grows by doubling; devices rarely have more than a few dozen
 * streams, and the matrix keeps a hazard check to two loads. */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "grow.h"
#include "signal_int.h"
#include "tracker.h"

struct stream_slot {
    int live;
    uint32_t gen;
    uint64_t cursor;
};

/* A producer record keeps its signal alive, but a run of records of one
 * signal (a queue signalling the same timeline batch after batch) shares
 * one reference: `held` marks the records that own one.  Invariant: a
 * record that owns none has an owner of the same signal before it, so
 * its signal is alive; a dropped owner hands its reference to the next
 * record of that signal. */
struct producer {
    devq_signal *s;
    uint64_t value;
    struct devq_use use;
    int held;
};

struct devq_tracker {
    const struct devq_tracker_ops *ops;
    void *ctx;
    struct stream_slot *streams;
    uint64_t *synced; /* synced[dst * cap + src] */
    uint32_t n, cap;
    struct producer *prod;
    size_t nprod, capprod, prune_at;
    struct devq_tracker_counts counts;
};

int devq__tracker_create(const struct devq_tracker_ops *ops, void *ctx, struct devq_tracker **out)
{
    struct devq_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return devq__err(-ENOMEM, "tracker: out of memory");
    t->ops = ops;
    t->ctx = ctx;
    t->prune_at = 16;
    *out = t;
    return 0;
}

void devq__tracker_destroy(struct devq_tracker *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nprod; i++)
        if (t->prod[i].held)
            devq__signal_release(t->prod[i].s);
    free(t->prod);
    free(t->streams);
    free(t->synced);
    free(t);
}

static int grow(struct devq_tracker *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 8;
    struct stream_slot *st = calloc(cap, sizeof *st);
    uint64_t *sy = calloc((size_t)cap * cap, sizeof *sy);
    if (!st || !sy) {
        free(st);
        free(sy);
        return devq__err(-ENOMEM, "tracker: out of memory for %u streams", cap);
    }
    if (t->cap) {
        memcpy(st, t->streams, t->cap * sizeof *st);
        for (uint32_t d = 0; d < t->cap; d++)
            memcpy(&sy[(size_t)d * cap], &t->synced[(size_t)d * t->cap], t->cap * sizeof *sy);
    }
    free(t->streams);
    free(t->synced);
    t->streams = st;
    t->synced = sy;
    t->cap = cap;
    return 0;
}

static uint64_t *synced(const struct devq_tracker *t, uint32_t dst, uint32_t src)
{
    return &t->synced[(size_t)dst * t->cap + src];
}

int devq__tracker_stream_add(struct devq_tracker *t, uint32_t *id)
{
    uint32_t i = 0;
    while (i < t->n && t->streams[i].live)
        i++;
    if (i == t->n) {
        if (t->n == t->cap) {
            int r = grow(t);
            if (r < 0)
                return r;
        }
        t->n++;
    }
    struct stream_slot *s = &t->streams[i];
    s->live = 1;
    s->gen++;
    s->cursor = 0;
    /* A reused id starts with no history in either direction. */
    for (uint32_t k = 0; k < t->n; k++) {
        *synced(t, i, k) = 0;
        *synced(t, k, i) = 0;
    }
    *id = i;
    return 0;
}

void devq__tracker_stream_remove(struct devq_tracker *t, uint32_t id)
{
    if (id < t->n)
        t->streams[id].live = 0;
}

uint32_t devq__tracker_stream_gen(const struct devq_tracker *t, uint32_t id)
{
    return id < t->n ? t->streams[id].gen : 0;
}

uint64_t devq__tracker_cursor(const struct devq_tracker *t, uint32_t id)
{
    return id < t->n ? t->streams[id].cursor : 0;
}

uint64_t devq__tracker_last_synced(const struct devq_tracker *t, uint32_t dst, uint32_t src)
{
    return dst < t->n && src < t->n ? *synced(t, dst, src) : 0;
}

uint64_t devq__tracker_begin(struct devq_tracker *t, uint32_t stream)
{
    return ++t->streams[stream].cursor;
}

struct devq_use devq__tracker_here(const struct devq_tracker *t, uint32_t stream)
{
    return (struct devq_use){ .stream = stream,
                              .gen = t->streams[stream].gen,
                              .cursor = t->streams[stream].cursor };
}

/* A use still matters if its stream is the same incarnation; a destroyed
 * stream finished all of its work before its id was released. */
static int use_pending(const struct devq_tracker *t, const struct devq_use *u)
{
    return u->cursor && u->stream < t->n && t->streams[u->stream].live && t->streams[u->stream].gen == u->gen;
}

int devq__tracker_require(struct devq_tracker *t, uint32_t stream, const struct devq_use *u)
{
    return devq__tracker_require_why(t, stream, u, NULL);
}

int devq__tracker_require_why(struct devq_tracker *t, uint32_t stream, const struct devq_use *u,
                              const char *why)
{
    if (!use_pending(t, u) || u->stream == stream)
        return 0;
    if (*synced(t, stream, u->stream) >= u->cursor) {
        t->counts.waits_elided++;
        return 0;
    }
    uint32_t src = u->stream;
    uint64_t got = t->streams[src].cursor;
    int r = t->ops->align(t->ctx, stream, src, u->cursor, &got, why);
    if (r < 0)
        return r;
    t->counts.waits_inserted++;
    if (got < t->streams[src].cursor) {
        /* A checkpoint before src's tail: only that much is known. */
        if (got > *synced(t, stream, src))
            *synced(t, stream, src) = got;
        return 1;
    }
    /* stream now follows src's tail, and so everything src followed. */
    *synced(t, stream, src) = t->streams[src].cursor;
    for (uint32_t k = 0; k < t->n; k++)
        if (k != stream && *synced(t, src, k) > *synced(t, stream, k))
            *synced(t, stream, k) = *synced(t, src, k);
    return 1;
}

static int add_read(struct devq_buffer_track *b, struct devq_use u)
{
    for (uint32_t i = 0; i < b->nreads; i++)
        if (b->reads[i].stream == u.stream) {
            b->reads[i] = u;
            return 0;
        }
    if (b->nreads == b->capreads && DEVQ_GROW(b->reads, b->capreads, 2) < 0)
        return devq__err(-ENOMEM, "tracker: out of memory recording a read");
    b->reads[b->nreads++] = u;
    return 0;
}

int devq__tracker_bind(struct devq_tracker *t, uint32_t stream, struct devq_buffer_track *b,
                       enum devq_access access)
{
    return devq__tracker_bind_why(t, stream, b, access, NULL);
}

/* require's answer for the common case without the call: a use on the
 * same stream, or none, needs no wait (the same test require makes). */
static inline int require_use(struct devq_tracker *t, uint32_t stream, const struct devq_use *u,
                              const char *why)
{
    if (u->stream == stream || !u->cursor)
        return 0;
    return devq__tracker_require_why(t, stream, u, why);
}

int devq__tracker_bind_why(struct devq_tracker *t, uint32_t stream, struct devq_buffer_track *b,
                           enum devq_access access, const char *why)
{
    int inserted = 0, r;
    /* Every access orders after the last write (RAW, WAW). */
    r = require_use(t, stream, &b->write, why);
    if (r < 0)
        return r;
    inserted += r;
    if (access & DEVQ_WRITE) {
        /* WAR: a write waits for every read since the last write. */
        for (uint32_t i = 0; i < b->nreads; i++) {
            r = require_use(t, stream, &b->reads[i], why);
            if (r < 0)
                return r;
            inserted += r;
        }
        b->write = devq__tracker_here(t, stream);
        b->nreads = 0;
    } else {
        r = add_read(b, devq__tracker_here(t, stream));
        if (r < 0)
            return r;
    }
    return inserted;
}

size_t devq__tracker_buffer_uses(const struct devq_tracker *t, const struct devq_buffer_track *b,
                                 struct devq_use *out, size_t cap)
{
    size_t n = 0;
    if (use_pending(t, &b->write) && n < cap)
        out[n++] = b->write;
    for (uint32_t i = 0; i < b->nreads && n < cap; i++)
        if (use_pending(t, &b->reads[i])) {
            size_t j = 0;
            while (j < n && out[j].stream != b->reads[i].stream)
                j++;
            if (j == n)
                out[n++] = b->reads[i];
            else if (out[j].cursor < b->reads[i].cursor)
                out[j] = b->reads[i];
        }
    return n;
}

void devq__tracker_buffer_init(struct devq_buffer_track *b)
{
    memset(b, 0, sizeof *b);
}

void devq__tracker_buffer_fini(struct devq_buffer_track *b)
{
    free(b->reads);
    memset(b, 0, sizeof *b);
}

/* Drop producers whose value was reached (or whose signal failed, or
 * whose stream is gone): nobody needs to align with them any more.  Out
 * of line: inlined, its loops gave every producer_add (once per batch
 * that signals) a frame of saved registers. */
static __attribute__((noinline)) void prune(struct devq_tracker *t)
{
    size_t j = 0;
    for (size_t i = 0; i < t->nprod; i++) {
        struct producer *p = &t->prod[i];
        if (!devq__signal_settled(p->s, p->value) && use_pending(t, &p->use)) {
            t->prod[j++] = *p;
            continue;
        }
        if (!p->held)
            continue;
        size_t k = i + 1; /* not compacted yet: j <= i */
        while (k < t->nprod && (t->prod[k].s != p->s || t->prod[k].held))
            k++;
        if (k < t->nprod)
            t->prod[k].held = 1; /* the reference moves on */
        else
            devq__signal_release(p->s);
    }
    t->nprod = j;
    t->prune_at = j * 2 > 16 ? j * 2 : 16;
}

int devq__tracker_producer_add(struct devq_tracker *t, devq_signal *s, uint64_t v, uint32_t stream)
{
    /* The last record names s and s reached (or failed) its value: prune
     * would drop it and hand its reference to this record of s, so this
     * one takes its place, holding what it held.  A queue that signals
     * one timeline batch after batch, each waited for, keeps one record
     * instead of pruning a run of them every 16 batches.  No caller can
     * miss the dropped record: a wait for a value it covered is reached
     * (or failed) and resolved before any producer is looked up. */
#ifdef __clang_analyzer__
    if (t->nprod && !t->prod) /* never: nprod counts what prod holds */
        return -EFAULT;
#endif
    struct producer *last = t->nprod ? &t->prod[t->nprod - 1] : NULL;
    if (last && last->s == s && devq__signal_settled(s, last->value)) {
        *last =
            (struct producer){ .s = s, .value = v, .use = devq__tracker_here(t, stream), .held = last->held };
        return 0;
    }
    if (t->nprod >= t->prune_at)
        prune(t);
    if (t->nprod == t->capprod && DEVQ_GROW(t->prod, t->capprod, 16) < 0)
        return devq__err(-ENOMEM, "tracker: out of memory recording a signal producer");
    int held = !t->nprod || t->prod[t->nprod - 1].s != s;
    if (held)
        devq__signal_retain(s);
    t->prod[t->nprod++] =
        (struct producer){ .s = s, .value = v, .use = devq__tracker_here(t, stream), .held = held };
    return 0;
}

static __attribute__((noinline, cold)) int producer_grow(struct devq_tracker *t, size_t n)
{
    size_t cap = t->capprod ? t->capprod : 16;
    while (cap - t->nprod < n) {
        if (cap > SIZE_MAX / 2 / sizeof *t->prod)
            return devq__err(-ENOMEM, "tracker: out of memory recording %zu signal producers", n);
        cap *= 2;
    }
    struct producer *p = realloc(t->prod, cap * sizeof *p);
    if (!p)
        return devq__err(-ENOMEM, "tracker: out of memory recording %zu signal producers", n);
    t->prod = p;
    t->capprod = cap;
    return 0;
}

int devq__tracker_producer_reserve(struct devq_tracker *t, size_t n)
{
    /* prune only shrinks nprod, and add grows only at nprod == capprod */
    return n <= t->capprod - t->nprod ? 0 : producer_grow(t, n);
}

int devq__tracker_producer_find(struct devq_tracker *t, devq_signal *s, uint64_t v, struct devq_use *out)
{
    const struct producer *best = NULL;
    for (size_t i = 0; i < t->nprod; i++) {
        const struct producer *p = &t->prod[i];
        if (p->s == s && p->value >= v && use_pending(t, &p->use) && (!best || p->value < best->value))
            best = p;
    }
    if (!best)
        return 0;
    *out = best->use;
    return 1;
}

int devq__tracker_producer_on(struct devq_tracker *t, devq_signal *s, uint64_t v, uint32_t stream,
                              uint64_t min_cursor)
{
    for (size_t i = 0; i < t->nprod; i++) {
        const struct producer *p = &t->prod[i];
        if (p->s == s && p->value >= v && p->use.stream == stream && p->use.cursor >= min_cursor &&
            use_pending(t, &p->use) && devq_signal_value(s) < p->value && !devq_signal_status(s))
            return 1;
    }
    return 0;
}

void devq__tracker_counts(const struct devq_tracker *t, struct devq_tracker_counts *out)
{
    *out = t->counts;
}
