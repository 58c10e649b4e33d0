/* SPDX-License-Identifier: MIT */
/* The device registry: one shared, refcounted devq_device per (backend,
 * ordinal), opened by spec ("cpu", "cuda:1") or by preference (NULL:
 * DEVQ_BACKEND, else the first accelerator, else cpu).
 *
 * A slot (backend->slots[ordinal]) holds NULL or an opened device.  While
 * one thread opens or tears down a device, the slot is marked busy (a
 * node on busy_slots, on that thread's stack); other openers of the same
 * slot wait for it, then take a reference or open afresh.  All of this
 * changes under registry_lock, which is held only for a few loads and
 * stores: the plugin's device_open/close and the subsystem attach/detach
 * run without it, so a slow driver never blocks other devices, and a
 * completion callback that closes another device cannot deadlock against
 * a teardown.
 *
 * The device carries its magic during attach and detach, because the
 * subsystems set up there may call public functions on it. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "device.h"
#include "device_spec.h"
#include "env.h"
#include "error.h"
#include "fork.h"
#include "log.h"
#include "plugin.h"
#include "stream.h"
#include "plugin_dir.h"

#define DEVQ_MAGIC_CLOSED 0x44454144u /* "DEAD" */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_changed = PTHREAD_COND_INITIALIZER;

struct busy_slot {
    const struct devq_backend *backend;
    uint32_t ordinal;
    struct busy_slot *next;
};
static struct busy_slot *busy_slots; /* under registry_lock */

static int slot_busy(const struct devq_backend *b, uint32_t ordinal)
{
    for (struct busy_slot *n = busy_slots; n; n = n->next)
        if (n->backend == b && n->ordinal == ordinal)
            return 1;
    return 0;
}

static void busy_begin(struct busy_slot *n, const struct devq_backend *b, uint32_t ordinal)
{
    *n = (struct busy_slot){ b, ordinal, busy_slots };
    busy_slots = n;
}

/* Ends the open or teardown and wakes the threads waiting on it. */
static void busy_end(struct busy_slot *n)
{
    for (struct busy_slot **p = &busy_slots; *p; p = &(*p)->next) {
        if (*p == n) {
            *p = n->next;
            break;
        }
    }
    pthread_cond_broadcast(&registry_changed);
}

static void device_destroy(struct devq_object *o);

/* ---- the calling thread ---- */

static _Thread_local int in_host_fn;

int devq__in_host_fn(void)
{
    return in_host_fn;
}

void devq__set_in_host_fn(int on)
{
    in_host_fn = on;
}

/* ---- handles ---- */

void devq__device_retain(struct devq_device *dev)
{
    /* The caller holds a reference, so refs cannot reach 0 meanwhile. */
    devq__object_retain(&dev->obj);
}

int devq__device_check(const struct devq_device *dev, const char *fn)
{
    if (!dev)
        return devq__err(-EINVAL, "%s: device is NULL", fn);
    if (dev->obj.magic != DEVQ_MAGIC_DEVICE)
        return devq__err(-EINVAL, "%s: %p is not an open device (closed, or not a devq_device)", fn,
                         (const void *)dev);
    if (__builtin_expect(dev->fork_gen != devq__fork_gen(), 0)) {
        char what[64];
        snprintf(what, sizeof what, "device %s:%u", dev->backend->name, dev->ordinal);
        return devq__forked_err(fn, what, dev->pid);
    }
    return 0;
}

void devq__device_set_lost(struct devq_device *dev, const char *cause)
{
    int expected = 0;
    /* -1 while the message is written, so a reader never sees half of it. */
    if (!atomic_compare_exchange_strong(&dev->lost, &expected, -1))
        return;
    snprintf(dev->lost_msg, sizeof dev->lost_msg, "%s", cause && *cause ? cause : "unknown cause");
    atomic_store(&dev->lost, 1);
    devq__log(DEVQ_LOG_BASIC, "%s:%u: device lost: %s", dev->info.backend, dev->ordinal, dev->lost_msg);
}

int devq__device_lost_check(struct devq_device *dev)
{
    int v = atomic_load(&dev->lost);
    if (v == 0)
        return 0;
    if (v < 0)
        return devq__err(-ENODEV, "%s:%u: device lost", dev->info.backend, dev->ordinal);
    return devq__err(-ENODEV, "%s:%u: device lost: %s", dev->info.backend, dev->ordinal, dev->lost_msg);
}

/* ---- messages ---- */

static void loaded_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < devq__backend_count() && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", devq__backend_at(i)->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, len, "none");
}

/* Backends devq ships, loaded or not: "cdua" means cuda even on a
 * machine without the cuda plugin, where "cpu" is the only loaded name. */
static const char *const known_backends[] = { "cpu", "cuda", "hip", "vulkan" };

static void consider(const char *name, const char *cand, const char **best, unsigned *best_d)
{
    unsigned d = devq__edit_distance(name, cand);
    if (d < *best_d && d < strlen(cand)) {
        *best_d = d;
        *best = cand;
    }
}

static const char *nearest_backend(const char *name)
{
    const char *best = NULL;
    unsigned best_d = 3; /* suggest only close matches */
    for (size_t i = 0; i < sizeof known_backends / sizeof known_backends[0]; i++)
        consider(name, known_backends[i], &best, &best_d);
    for (size_t i = 0; i < devq__backend_count(); i++)
        consider(name, devq__backend_at(i)->name, &best, &best_d);
    return best;
}

/* Words people use for a kind of device rather than a backend: "gpu" is
 * one edit from "cpu", and suggesting the cpu to someone who asked for a
 * GPU would be wrong. */
static const char *generic_name(const char *name)
{
    static const struct {
        const char *word, *advice;
    } words[] = {
        { "gpu", "for a GPU use cuda (NVIDIA) or hip (AMD)" },
        { "nvidia", "for an NVIDIA GPU use cuda" },
        { "amd", "for an AMD GPU use hip" },
        { "rocm", "for ROCm use hip" },
        { "accelerator", "unset DEVQ_BACKEND to take the first accelerator found" },
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcasecmp(name, words[i].word))
            return words[i].advice;
    return NULL;
}

/* "unknown backend 'cdua'; did you mean 'cuda'? (have: cpu, cuda)", plus
 * why a file of that name was refused, when one was. */
static int unknown_backend(int err, const char *context, const char *name)
{
    char have[256];
    loaded_names(have, sizeof have);
    const char *near = nearest_backend(name);
    const devq_backend_report *skipped = devq__plugin_report_skipped(name);
    char hint[600] = "";
    if (skipped)
        snprintf(hint, sizeof hint, "; %s was skipped: %s", skipped->path, skipped->reason);
    else if (!near) {
        char dir[4096];
        devq__plugin_install_dir((const void *)unknown_backend, dir, sizeof dir);
        snprintf(hint, sizeof hint, "; is devq-%s.so in DEVQ_PLUGIN_PATH or %.256s?", name, dir);
    }
    const char *generic = generic_name(name);
    if (generic)
        return devq__err(err,
                         "%s: unknown backend '%s': backends are named by their driver; "
                         "%s (have: %s)",
                         context, name, generic, have);
    if (near && !skipped && !devq__backend_find_loaded(near)) {
        char dir[4096];
        devq__plugin_install_dir((const void *)unknown_backend, dir, sizeof dir);
        snprintf(hint, sizeof hint, "; no devq-%s.so was found in DEVQ_PLUGIN_PATH or %.256s", near, dir);
    }
    if (near && !strcmp(near, name)) /* a backend devq knows, whose plugin is not here */
        return devq__err(err, "%s: backend '%s' is not installed (have: %s)%s", context, name, have, hint);
    if (near)
        return devq__err(err, "%s: unknown backend '%s'; did you mean '%s'? (have: %s)%s", context, name,
                         near, have, hint);
    return devq__err(err, "%s: unknown backend '%s' (have: %s)%s", context, name, have, hint);
}

static int no_such_device(const char *context, const struct devq_backend *b, uint32_t ordinal)
{
    if (b->ndevices == 0)
        return devq__err(-ENODEV, "%s: %s", context,
                         b->count_reason[0] ? b->count_reason : "backend has no device");
    char list[64];
    if (b->ndevices == 1)
        snprintf(list, sizeof list, "%s:0", b->name);
    else if (b->ndevices == 2)
        snprintf(list, sizeof list, "%s:0, %s:1", b->name, b->name);
    else
        snprintf(list, sizeof list, "%s:0..%s:%u", b->name, b->name, b->ndevices - 1);
    return devq__err(-ENODEV, "%s: no device %s:%u; %s has %u device%s (%s)", context, b->name, ordinal,
                     b->name, b->ndevices, b->ndevices == 1 ? "" : "s", list);
}

/* ---- opening one slot ---- */

/* Plugin open, info, subsystems; on failure everything is undone. */
static int first_open(struct devq_device *d, const char *context)
{
    const struct devq_backend_ops *ops = d->ops;
    devq__err_str(0, "");
    devq_pl_device *pl = NULL;
    int r = ops->device_open(d->ordinal, &pl);
    if (r < 0 || !pl) {
        if (r >= 0)
            r = -EIO;
        const char *m = devq__errmsg_peek();
        if (m && *m) {
            char detail[DEVQ_ERRMSG_MAX];
            snprintf(detail, sizeof detail, "%s", m);
            return devq__err(r, "%s: %s", context, detail);
        }
        return devq__err(r, "%s: %s device_open failed: %s", context, d->backend->name, strerror(-r));
    }
    memset(&d->info, 0, sizeof d->info);
    r = ops->device_info(pl, &d->info);
    if (r < 0) {
        char detail[DEVQ_ERRMSG_MAX];
        snprintf(detail, sizeof detail, "%s", devq__errmsg_peek());
        ops->device_close(pl);
        return devq__err(r, "%s: device_info failed: %s", context, detail[0] ? detail : strerror(-r));
    }
    snprintf(d->info.backend, sizeof d->info.backend, "%s", d->backend->name);
    d->info.ordinal = (int)d->ordinal;
    d->info.name[sizeof d->info.name - 1] = '\0';
    d->pl = pl;
    d->obj.magic = DEVQ_MAGIC_DEVICE; /* attach may call public functions on it */
    r = devq__device_hooks()->attach(d);
    if (r < 0) {
        char detail[DEVQ_ERRMSG_MAX];
        snprintf(detail, sizeof detail, "%s", devq__errmsg_peek());
        d->obj.magic = 0;
        ops->device_close(pl);
        d->pl = NULL;
        return devq__err(r, "%s: setting up the device failed: %s", context,
                         detail[0] ? detail : strerror(-r));
    }
    devq__log(DEVQ_LOG_FULL, "%s:%u: opened \"%s\"", d->backend->name, d->ordinal, d->info.name);
    return 0;
}

static int open_slot(struct devq_backend *b, uint32_t ordinal, const char *context, struct devq_device **out)
{
    if (ordinal >= b->ndevices)
        return no_such_device(context, b, ordinal);
    struct devq_device **slot = &b->slots[ordinal];

    pthread_mutex_lock(&registry_lock);
    for (;;) {
        /* Another thread is opening or tearing down this slot: its plugin
         * call ends, and then it broadcasts. */
        while (slot_busy(b, ordinal))
            pthread_cond_wait(&registry_changed, &registry_lock);
        struct devq_device *d = *slot;
        /* The parent's device, in a forked child: left to the parent
         * (its threads are not here), and a new one made for this one. */
        if (!d || d->fork_gen != devq__fork_gen())
            break;
        devq__object_retain(&d->obj);
        pthread_mutex_unlock(&registry_lock);
        *out = d;
        return 0;
    }
    struct busy_slot me;
    busy_begin(&me, b, ordinal);
    pthread_mutex_unlock(&registry_lock);

    int r = -ENOMEM;
    struct devq_device *d = calloc(1, sizeof *d);
    if (d) {
        /* magic 0 until first_open has the plugin's device. */
        devq__object_init(&d->obj, 0, device_destroy);
        d->backend = b;
        d->ops = b->ops;
        d->ordinal = ordinal;
        d->fork_gen = devq__fork_gen();
        d->pid = (int)getpid();
        r = first_open(d, context);
    } else {
        devq__err(r, "%s: out of memory", context);
    }

    pthread_mutex_lock(&registry_lock);
    if (r == 0)
        __atomic_store_n(slot, d, __ATOMIC_RELEASE);
    busy_end(&me); /* on failure the slot stays empty: retryable */
    pthread_mutex_unlock(&registry_lock);
    if (r < 0) {
        free(d);
        return r;
    }
    *out = d;
    return 0;
}

/* ---- choosing a device ---- */

static int open_spec(const char *spec, devq_device **out)
{
    char context[96];
    snprintf(context, sizeof context, "devq_device_open('%.40s')", spec);
    struct devq_spec s;
    char why[256];
    if (devq__spec_parse(spec, strlen(spec), &s, why, sizeof why) < 0)
        return devq__err(-EINVAL, "%s: %s", context, why);
    /* "cpu" is built in: no plugin file needs loading for it (plugin.c). */
    int r = strcmp(s.name, "cpu") ? devq__backends_load() : devq__builtin_load();
    if (r < 0)
        return r;
    struct devq_backend *b = devq__backend_find(s.name);
    if (!b)
        return unknown_backend(-ENODEV, context, s.name);
    return open_slot(b, s.has_ordinal ? s.ordinal : 0, context, out);
}

/* Tries one candidate; on failure appends why to `why` and returns <0. */
static int try_candidate(struct devq_backend *b, const struct devq_spec *s, char *why, size_t len,
                         devq_device **out)
{
    char context[64];
    uint32_t ordinal = s && s->has_ordinal ? s->ordinal : 0;
    snprintf(context, sizeof context, "%s:%u", b->name, ordinal);
    int r = open_slot(b, ordinal, context, out);
    if (r < 0) {
        size_t used = strlen(why);
        snprintf(why + used, len - used, "%s%s", used ? "; " : "", devq__errmsg_peek());
        devq__log(DEVQ_LOG_BASIC, "devq_device_open(NULL): skipping %s", devq__errmsg_peek());
    }
    return r;
}

/* No DEVQ_BACKEND entries: accelerators in load order first, then the
 * cpu backend, then devices emulated on the host CPU (DEVQ_CAP_SOFTWARE:
 * lavapipe), so that a program asking for "a device" gets the fast one
 * when there is one and still runs everywhere. */
static int open_default_order(const struct devq_backend_pref *pref, const char *env, char *why, size_t len,
                              devq_device **out)
{
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < devq__backend_count(); i++) {
            struct devq_backend *b = devq__backend_at(i);
            int is_cpu = !strcmp(b->name, "cpu");
            if (is_cpu != (pass == 1) || devq__backend_pref_excludes(pref, b->name))
                continue;
            if (b->ndevices == 0)
                continue;
            if (try_candidate(b, NULL, why, len, out) < 0)
                continue;
            int software = !is_cpu && ((*out)->info.caps & DEVQ_CAP_SOFTWARE);
            if (software == (pass == 2) || is_cpu)
                return 0;
            devq_device_close(*out); /* a software device: after cpu */
            *out = NULL;
        }
    }
    if (!why[0])
        snprintf(why, len, "no backend has a device");
    if (env)
        return devq__err(-ENODEV, "devq_device_open(NULL): DEVQ_BACKEND='%.64s': no device: %s", env, why);
    return devq__err(-ENODEV, "devq_device_open(NULL): no device: %s", why);
}

static int open_preferred(devq_device **out)
{
    int r = devq__backends_load();
    if (r < 0)
        return r;
    const char *env = devq__getenv("DEVQ_BACKEND");
    struct devq_backend_pref pref;
    char why[512] = "";
    if (devq__backend_pref_parse(env, &pref, why, sizeof why) < 0)
        return devq__err(-EINVAL, "DEVQ_BACKEND='%.64s': %s", env, why);
    if (!pref.nwant && !pref.nexclude)
        env = NULL; /* unset, empty or only commas */

    char context[96];
    snprintf(context, sizeof context, "DEVQ_BACKEND='%.64s'", env ? env : "");
    for (size_t i = 0; i < pref.nexclude; i++)
        if (!devq__backend_find(pref.exclude[i]))
            return unknown_backend(-EINVAL, context, pref.exclude[i]);
    for (size_t i = 0; i < pref.nwant; i++)
        if (!devq__backend_find(pref.want[i].name))
            return unknown_backend(-EINVAL, context, pref.want[i].name);

    if (!pref.nwant)
        return open_default_order(&pref, env, why, sizeof why, out);
    for (size_t i = 0; i < pref.nwant; i++) {
        struct devq_backend *b = devq__backend_find(pref.want[i].name);
        if (devq__backend_pref_excludes(&pref, b->name))
            continue;
        if (try_candidate(b, &pref.want[i], why, sizeof why, out) == 0)
            return 0;
    }
    return devq__err(-ENODEV, "devq_device_open(NULL): %s: no device: %s", context,
                     why[0] ? why : "every listed backend is excluded");
}

/* ---- public API ---- */

static _Atomic(const struct devq_device_hooks *) hooks;

void devq__device_set_hooks(const struct devq_device_hooks *h)
{
    atomic_store_explicit(&hooks, h, memory_order_release);
}

const struct devq_device_hooks *devq__device_hooks(void)
{
    return atomic_load_explicit(&hooks, memory_order_acquire);
}

/* A fork while another thread holds registry_lock or has a slot busy
 * would leave the child waiting for a thread it does not have: the
 * fork takes the lock first, and the child starts with no busy slot. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void fork_child(void)
{
    busy_slots = NULL;
    pthread_mutex_unlock(&registry_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_register(void)
{
    devq__fork_track();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int devq__registry_open(const char *spec, devq_device **out)
{
    pthread_once(&fork_once, fork_register);
    if (!out)
        return devq__err(-EINVAL, "devq_device_open: out is NULL");
    *out = NULL;
    int r = devq__log_config_error();
    if (r < 0 || (r = devq__env_config_error()) < 0)
        return r;
    return spec ? open_spec(spec, out) : open_preferred(out);
}

DEVQ_API void devq_device_close(devq_device *dev)
{
    if (!dev)
        return;
    if (devq__device_check(dev, "devq_device_close") < 0) {
        devq__log(DEVQ_LOG_BASIC, "%s", devq__errmsg_peek());
        return;
    }
    /* Dropping a reference that is not the last needs no lock: only the
     * 1 -> 0 step races with an opener, and that one takes the lock.
     * Buffers, kernels and queues each hold a reference, so this is hot. */
    if (devq__object_release_unless_last(&dev->obj))
        return;
    pthread_mutex_lock(&registry_lock);
    if (!devq__object_unref(&dev->obj)) {
        pthread_mutex_unlock(&registry_lock);
        return;
    }
    dev->obj.destroy(&dev->obj); /* lets go of registry_lock */
}

/* The last reference, with registry_lock held since the 1 -> 0 step (so
 * no opener revived it from its slot): mark the slot busy so openers
 * wait for the teardown, let go of the lock for the plugin's close, and
 * free.  Called only by devq_device_close (the object header's destroy,
 * so the device has the one release path every object has). */
static void device_destroy(struct devq_object *o)
{
    struct devq_device *dev = (struct devq_device *)o;
    struct busy_slot me;
    busy_begin(&me, dev->backend, dev->ordinal); /* openers wait for the teardown */
    pthread_mutex_unlock(&registry_lock);

    devq__device_hooks()->detach(dev);
    dev->obj.magic = DEVQ_MAGIC_CLOSED;
    dev->ops->device_close(dev->pl);
    devq__log(DEVQ_LOG_FULL, "%s:%u: closed", dev->backend->name, dev->ordinal);

    pthread_mutex_lock(&registry_lock);
    __atomic_store_n(&dev->backend->slots[dev->ordinal], NULL, __ATOMIC_RELEASE);
    busy_end(&me);
    pthread_mutex_unlock(&registry_lock);
    free(dev);
}

DEVQ_API int devq_device_info_get(devq_device *dev, devq_device_info *info)
{
    int r = devq__device_check(dev, "devq_device_info_get");
    if (r < 0)
        return r;
    if (!info)
        return devq__err(-EINVAL, "devq_device_info_get: info is NULL");
    r = devq__device_lost_check(dev);
    if (r < 0)
        return r;
    *info = dev->info;
    return 0;
}

int devq__device_stream_register(struct devq_device *dev, struct devq_stream *st)
{
    if (st->id >= dev->streams_cap) {
        uint32_t cap = dev->streams_cap ? dev->streams_cap : 8;
        while (cap <= st->id)
            cap *= 2;
        struct devq_stream **s = realloc(dev->streams, cap * sizeof *s);
        if (!s)
            return devq__err(-ENOMEM, "out of memory for the stream table");
        for (uint32_t i = dev->streams_cap; i < cap; i++)
            s[i] = NULL;
        dev->streams = s;
        dev->streams_cap = cap;
    }
    dev->streams[st->id] = st;
    return 0;
}
