/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "batch.h"
#include "device.h"
#include "error.h"
#include "grow.h"
#include "log.h"
#include "notifier.h"
#include "object.h"
#include "queue.h"
#include "signal_int.h"
#include "tracker.h"
#include "value_wait.h"

#define DEVQ_MAGIC_VALUE_SLOT 0x56534c54u /* "VSLT" */

struct devq_value_slot {
    _Alignas(64) uint64_t word; /* the device waits for word >= 1 */
    devq_pl_value *pv;
    struct devq_object obj; /* refs: the batch's and the notify callback's */
    _Atomic int cancelled;
    struct devq_device *dev;
    struct devq_queue *q;
    devq_signal *sig;             /* what it waits for, for messages and cycles */
    uint64_t value, seq, cursor;  /* batch number, tracker unit */
    struct devq_value_slot *next; /* free list, or the device's active list */
    struct devq_value_slot *prev;
};

/* Slots move between lists from host callbacks and the notifier, where
 * the device lock may not be taken: they have a lock of their own. */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

static void unlink_active(struct devq_value_slot *s)
{
    struct devq_device *dev = s->dev;
    if (s->prev)
        s->prev->next = s->next;
    else
        dev->qs->value_slots_active = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

/* The last reference gives the slot back to its device's free list
 * (or frees it once the device is gone): no backend call, so it runs on
 * the releasing thread, a host callback or the notifier (object.h). */
static void slot_recycle(struct devq_object *o)
{
    struct devq_value_slot *s = DEVQ_OBJECT_OWNER(o, struct devq_value_slot, obj);
    pthread_mutex_lock(&slot_lock);
    if (!s->dev) {
        /* Its device closed while a notify was pending; the backend's
         * registration went with the device. */
        pthread_mutex_unlock(&slot_lock);
        if (s->sig)
            devq__signal_release(s->sig);
        free(s);
        return;
    }
    unlink_active(s);
    if (s->sig)
        devq__signal_release(s->sig);
    s->sig = NULL;
    s->next = s->dev->qs->value_slots_free;
    s->dev->qs->value_slots_free = s;
    pthread_mutex_unlock(&slot_lock);
}

static void slot_put(struct devq_value_slot *s)
{
    devq__object_release_here(&s->obj);
}

static struct devq_value_slot *slot_get(struct devq_device *dev)
{
    pthread_mutex_lock(&slot_lock);
    struct devq_value_slot *s = dev->qs->value_slots_free;
    if (s)
        dev->qs->value_slots_free = s->next;
    pthread_mutex_unlock(&slot_lock);
    if (!s) {
        if (posix_memalign((void **)&s, 64, sizeof *s))
            return NULL;
        *s = (struct devq_value_slot){ .dev = dev };
        devq__object_init(&s->obj, DEVQ_MAGIC_VALUE_SLOT, slot_recycle);
        if (dev->ops->value_attach(dev->pl, &s->word, &s->pv) < 0) {
            free(s);
            return NULL;
        }
    }
    return s;
}

static void release_device(struct devq_value_slot *s)
{
    __atomic_store_n(&s->word, 1, __ATOMIC_RELEASE);
}

static void slot_notify_cb(void *arg, int status)
{
    struct devq_value_slot *s = arg;
    (void)status; /* a failure is seen by the batch's gate */
    release_device(s);
    slot_put(s);
}

static int push_slot(struct batch *b, struct devq_value_slot *s)
{
    if (b->vw.nslots == b->vw.capslots && DEVQ_GROW(b->vw.slots, b->vw.capslots, 2) < 0)
        return -ENOMEM;
    b->vw.slots[b->vw.nslots++] = s;
    return 0;
}

int devq__value_wait_issue(struct devq_queue *q, struct batch *b, devq_signal *sig, uint64_t v)
{
    struct devq_device *dev = q->dev;
    if (!(dev->info.caps & DEVQ_CAP_WAIT_VALUE) || !dev->ops->value_attach || !dev->ops->stream_wait_value)
        return 0;
    /* The notifier writes the word: without its thread the device would
     * wait forever.  Deferral then reports the failed start (defer.c). */
    if (devq__notifier_start(NULL) < 0)
        return 0;
    struct devq_value_slot *s = slot_get(dev);
    if (!s)
        return 0; /* fall back to deferral */
    if (push_slot(b, s) < 0) {
        pthread_mutex_lock(&slot_lock);
        s->next = dev->qs->value_slots_free;
        dev->qs->value_slots_free = s;
        pthread_mutex_unlock(&slot_lock);
        return 0;
    }
    s->word = 0;
    s->q = q;
    s->sig = sig;
    devq__signal_retain(sig);
    s->value = v;
    s->seq = b->seq;
    s->cursor = devq__tracker_cursor(dev->tracker, q->stream.id);
    atomic_store(&s->cancelled, 0);
    atomic_store(&s->obj.refs, 2); /* the batch's and the notify callback's */
    pthread_mutex_lock(&slot_lock);
    s->prev = NULL;
    s->next = dev->qs->value_slots_active;
    if (s->next)
        s->next->prev = s;
    dev->qs->value_slots_active = s;
    pthread_mutex_unlock(&slot_lock);
    devq__checkpoint(dev, &q->stream);
    int r = dev->ops->stream_wait_value(q->stream.pl, s->pv, 1);
    if (r < 0) {
        b->vw.nslots--;
        slot_put(s);
        slot_put(s);
        return r;
    }
    /* From here the device waits: the word must be written whatever
     * happens, so a failed registration releases it at once (the gate
     * then sees why). */
    if (devq_signal_notify(sig, v, slot_notify_cb, s, NULL) < 0) {
        atomic_store(&s->cancelled, 1);
        release_device(s);
        slot_put(s);
    }
    if (DEVQ_LOG_ON(DEVQ_LOG_BASIC))
        devq__log(DEVQ_LOG_BASIC, "%s:%d: %s batch %llu waits for %s >= %llu on the device",
                  dev->info.backend, dev->info.ordinal, devq__queue_label(q).s, (unsigned long long)b->seq,
                  devq__signal_label(sig).s, (unsigned long long)v);
    return 1;
}

int devq__value_wait_slot_cancelled(const struct devq_value_slot *s)
{
    return atomic_load(&s->cancelled) ? -ECANCELED : 0;
}

devq_signal *devq__value_wait_slot_signal(const struct devq_value_slot *s)
{
    return s->sig;
}

uint64_t devq__value_wait_slot_value(const struct devq_value_slot *s)
{
    return s->value;
}

void devq__value_wait_batch_done(struct batch *b)
{
    for (uint32_t i = 0; i < b->vw.nslots; i++)
        slot_put(b->vw.slots[i]);
    b->vw.nslots = 0;
}

void devq__value_wait_cancel_queue(struct devq_queue *q)
{
    pthread_mutex_lock(&slot_lock);
    /* Batches issued behind the earliest wait still held never ran:
     * they are cancelled like deferred ones (batch_walk.c), not run. */
    uint64_t first = UINT64_MAX;
    for (struct devq_value_slot *s = q->dev->qs->value_slots_active; s; s = s->next)
        if (s->q == q && !atomic_load(&s->cancelled) && !__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) &&
            s->seq < first)
            first = s->seq;
    atomic_store(&q->cancel_after, first);
    for (struct devq_value_slot *s = q->dev->qs->value_slots_active; s; s = s->next)
        if (s->q == q && !atomic_load(&s->cancelled)) {
            atomic_store(&s->cancelled, 1);
            release_device(s);
        }
    pthread_mutex_unlock(&slot_lock);
}

void devq__value_wait_fini(struct devq_device *dev)
{
    pthread_mutex_lock(&slot_lock);
    struct devq_value_slot *s = dev->qs->value_slots_free;
    dev->qs->value_slots_free = NULL;
    /* Active slots wait for a notify that may still come (a signal that
     * is never set): their memory stays, so the late write lands safely,
     * but the backend's attachment goes now, while the device is open. */
    for (struct devq_value_slot *a = dev->qs->value_slots_active; a; a = a->next) {
        /* Under the lock: a late callback frees a slot with no device. */
        dev->ops->value_detach(a->pv);
        a->pv = NULL;
        a->dev = NULL;
        a->q = NULL;
    }
    dev->qs->value_slots_active = NULL;
    pthread_mutex_unlock(&slot_lock);
    while (s) {
        struct devq_value_slot *n = s->next;
        dev->ops->value_detach(s->pv);
        free(s);
        s = n;
    }
}

int devq__value_wait_blocker(struct devq_queue *q, devq_signal **sig, uint64_t *value, uint64_t *seq,
                             uint64_t *cursor)
{
    int found = 0;
    pthread_mutex_lock(&slot_lock);
    for (struct devq_value_slot *s = q->dev->qs->value_slots_active; s; s = s->next)
        if (s->q == q && !atomic_load(&s->cancelled) && !__atomic_load_n(&s->word, __ATOMIC_ACQUIRE) &&
            (!found || s->seq < *seq)) {
            *sig = s->sig;
            *value = s->value;
            *seq = s->seq;
            *cursor = s->cursor;
            found = 1;
        }
    pthread_mutex_unlock(&slot_lock);
    return found;
}

int devq__value_wait_any(struct devq_device *dev)
{
    pthread_mutex_lock(&slot_lock);
    int any = dev->qs->value_slots_active != NULL;
    pthread_mutex_unlock(&slot_lock);
    return any;
}

/* A batch the pool hands out holds no slot (batch_life.c calls this; a
 * batch's slots are written here only). */
void devq__value_wait_batch_reset(struct batch *b)
{
    b->vw.nslots = 0;
}
