/* SPDX-License-Identifier: MIT */
/* Objects: every refcounted thing of lib/ starts with one header
 * {magic, refs, destroy}, so there is one way to check a handle, to take
 * and drop a reference, and one release path, as IREE's
 * iree_hal_resource_t destroys through its vtable.  It lives in the base
 * layer so that every layer above (signal, device, queue, channel) can
 * put its objects on it.  And the reference set a batch keeps of the
 * objects its ops use (IREE's resource_set is the model). */
#ifndef DEVQ_LIB_OBJECT_H
#define DEVQ_LIB_OBJECT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DEVQ_MAGIC_DEAD 0xdeadbeefu

struct devq_object {
    uint32_t magic;                         /* the kind's DEVQ_MAGIC_*; DEAD once destroyed */
    _Atomic int refs;                       /* the user's + one per holder */
    void (*destroy)(struct devq_object *o); /* frees it; may call the backend */
};

/* The object that embeds header o as `member` (the header need not be
 * first: a signal keeps its own on a cache line of its own). */
#define DEVQ_OBJECT_OWNER(o, type, member) ((type *)((char *)(o)-offsetof(type, member)))

static inline void devq__object_init(struct devq_object *o, uint32_t magic,
                                     void (*destroy)(struct devq_object *))
{
    o->magic = magic;
    atomic_init(&o->refs, 1);
    o->destroy = destroy;
}

static inline void devq__object_retain(struct devq_object *o)
{
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

/* Drop a reference without destroying: 1 when it was the last, and then
 * the caller runs o->destroy itself.  For a kind whose last release
 * must be ordered against a lookup that may take a new reference (the
 * device registry: an open may find the device in its slot), under
 * that lookup's lock. */
static inline int devq__object_unref(struct devq_object *o)
{
    return atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1;
}

/* Drop a reference if it is not the last, without a lock: 1 if dropped,
 * 0 when o holds only this one (then take the lock and unref). */
static inline int devq__object_release_unless_last(struct devq_object *o)
{
    int refs = atomic_load_explicit(&o->refs, memory_order_relaxed);
    while (refs > 1)
        if (atomic_compare_exchange_weak_explicit(&o->refs, &refs, refs - 1, memory_order_release,
                                                  memory_order_relaxed))
            return 1;
    return 0;
}

/* Drop a reference from anywhere, a host callback included: the backend
 * may not be called there, so the last one hands the object to the
 * deferrer (the notifier thread), which destroys it (or destroys it here
 * if it cannot, or none was installed). */
void devq__object_release(struct devq_object *o);
/* The one place a last release is handed on: post(fn, arg) runs fn(arg)
 * later on a thread where destroying is safe, 0 or negative when it
 * cannot.  The base layer cannot call the notifier (lib/signal, above
 * it), so the composition root (lib/device_state.c) installs
 * devq__notifier_post here before it opens any device (DESIGN §10). */
typedef int (*devq_object_deferrer)(void (*fn)(void *arg), void *arg);
void devq__object_set_deferrer(devq_object_deferrer post);
/* Drop a reference where the backend may be called (an API call), or
 * from anywhere for a kind whose destroy never calls a backend nor
 * takes a lock a callback thread may hold (signal, notify handle,
 * value-wait slot): those never defer. */
void devq__object_release_here(struct devq_object *o);

/* The objects a batch holds, each once: add never fails once room was
 * reserved, so a recording call that fails leaves the set unchanged. */
#define DEVQ_REF_MEMO 8u
struct devq_ref_set {
    struct devq_object **items;
    uint32_t n, cap;
    struct devq_object *memo[DEVQ_REF_MEMO]; /* recently added, direct-mapped */
};
int devq__ref_set_grow(struct devq_ref_set *s, uint32_t more);                 /* 0 or -ENOMEM */
static inline int devq__ref_set_reserve(struct devq_ref_set *s, uint32_t more) /* 0 or -ENOMEM */
{
    return s->n + more <= s->cap ? 0 : devq__ref_set_grow(s, more);
}
/* Take a reference for the set unless the memo says it holds o (the
 * memo probe is inline: a batch adds its kernel at every launch). */
void devq__ref_set_insert(struct devq_ref_set *s, struct devq_object *o);
static inline void devq__ref_set_add(struct devq_ref_set *s, struct devq_object *o)
{
    if (s->memo[(unsigned)((uintptr_t)o >> 6) % DEVQ_REF_MEMO] != o)
        devq__ref_set_insert(s, o);
}
/* Drop every reference and empty the set (it keeps its memory). */
void devq__ref_set_release(struct devq_ref_set *s);
void devq__ref_set_fini(struct devq_ref_set *s);

#endif
