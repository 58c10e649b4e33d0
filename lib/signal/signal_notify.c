/* SPDX-License-Identifier: MIT */
/* devq_signal_notify / devq_notify_cancel / devq_notify_release and
 * devq_signal_wait_fd: registrations in the signal's pending heap.
 *
 * A notify handle is refcounted: one reference for delivery (dropped
 * after the callback returned) and one for the caller when it asked for
 * a handle (dropped by devq_notify_cancel or devq_notify_release).  Each
 * registration leaves the heap exactly once, under the signal lock, either
 * popped by `set`/`fail`/destroy or removed by cancel: that single removal
 * is what makes "runs exactly once" and cancel's 0/-EALREADY agree. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "error.h"
#include "notifier.h"
#include "signal_impl.h"

#define DEVQ_MAGIC_NOTIFY 0x4e4f5446u /* "NOTF" */

struct devq_notify {
    struct devq_object obj;  /* DEVQ_MAGIC_NOTIFY; refs: delivery's + the handle's */
    struct devq_signal *sig; /* holds a signal reference */
    devq_notify_fn fn;
    void *arg;
    struct devq_pending pend;
    struct devq_notifier_node node;
};

/* The last reference: drops the signal's, calls no backend, so it runs
 * on the releasing thread (the notifier, or the caller's). */
static void notify_destroy(struct devq_object *o)
{
    struct devq_notify *n = (struct devq_notify *)o;
    devq__signal_release(n->sig);
    n->obj.magic = DEVQ_MAGIC_DEAD;
    free(n);
}

static void notify_put(struct devq_notify *n)
{
    devq__object_release_here(&n->obj);
}

static void run_notify(void *arg)
{
    struct devq_notify *n = arg;
    n->fn(n->arg, n->pend.status);
    notify_put(n);
}

void devq__notify_deliver(struct devq_pending *p, int status)
{
    struct devq_notify *n = (struct devq_notify *)((char *)p - offsetof(struct devq_notify, pend));
    n->pend.status = status;
    n->node.fn = run_notify;
    n->node.arg = n;
    devq__notifier_post_node(&n->node);
}

/* Add p to s's heap (and have the notifier watch a shared signal). */
static int register_pending(struct devq_signal *s, struct devq_pending *p, const char *fn)
{
    pthread_mutex_lock(&s->lock);
    int r = s->shared ? devq__notifier_watch(s) : 0;
    if (!r)
        r = devq__pending_push(s, p);
    pthread_mutex_unlock(&s->lock);
    if (r == -ENOMEM)
        return devq__err(r, "%s: out of memory registering on %s", fn, devq__signal_label(s).s);
    if (r)
        return r;
    /* A value or failure published while we registered. */
    devq__signal_recheck(s);
    return 0;
}

DEVQ_API int devq_signal_notify(devq_signal *s, uint64_t value, devq_notify_fn fn, void *arg,
                                devq_notify **handle)
{
    if (handle)
        *handle = NULL;
    int r = devq__signal_check_user(s, "devq_signal_notify");
    if (r || (s->shared && (r = devq__shared_check(s))))
        return r;
    if (!fn)
        return devq__err(-EINVAL, "devq_signal_notify: fn is NULL (%s)", devq__signal_label(s).s);
    /* The callback runs on the notifier thread: a notify it could never
     * run is refused here, never parked (devq(7) THREADS). */
    if ((r = devq__notifier_start("devq_signal_notify")) < 0)
        return r;
    struct devq_notify *n = calloc(1, sizeof *n);
    if (!n)
        return devq__err(-ENOMEM, "devq_signal_notify: out of memory");
    devq__object_init(&n->obj, DEVQ_MAGIC_NOTIFY, notify_destroy);
    if (handle)
        devq__object_retain(&n->obj); /* the caller's, besides delivery's */
    n->sig = s;
    n->fn = fn;
    n->arg = arg;
    n->pend = (struct devq_pending){ .value = value, .kind = PENDING_NOTIFY, .heap_index = SIZE_MAX };
    devq__signal_retain(s);
    /* Publish the handle before the callback can run and cancel it. */
    if (handle)
        *handle = n;
    r = register_pending(s, &n->pend, "devq_signal_notify");
    if (r) {
        if (handle)
            *handle = NULL;
        devq__signal_release(s);
        free(n);
        return r;
    }
    return 0;
}

static int notify_check(const devq_notify *h, const char *fn)
{
    if (!h)
        return devq__err(-EINVAL, "%s: handle is NULL", fn);
    if (h->obj.magic != DEVQ_MAGIC_NOTIFY)
        return devq__err(-EINVAL,
                         "%s: %p is not a live devq_notify handle (already "
                         "cancelled or released?)",
                         fn, (const void *)h);
    return 0;
}

DEVQ_API int devq_notify_cancel(devq_notify *h)
{
    int r = notify_check(h, "devq_notify_cancel");
    if (r)
        return r;
    struct devq_signal *s = h->sig;
    pthread_mutex_lock(&s->lock);
    int pending = h->pend.heap_index != SIZE_MAX;
    if (pending)
        devq__pending_remove(s, &h->pend);
    pthread_mutex_unlock(&s->lock);
    if (pending)
        devq__notify_deliver(&h->pend, -ECANCELED);
    else
        r = devq__err(-EALREADY,
                      "devq_notify_cancel: the callback on %s"
                      " for value %" PRIu64 " already ran or is running",
                      devq__signal_label(s).s, h->pend.value);
    notify_put(h);
    return r;
}

DEVQ_API int devq_notify_release(devq_notify *h)
{
    int r = notify_check(h, "devq_notify_release");
    if (r)
        return r;
    notify_put(h);
    return 0;
}

/* ---- wait_fd ---- */

void devq__fd_deliver(struct devq_pending *p, int status)
{
    uint64_t one = 1;
    /* lib's own dup: the caller may have closed its fd already, and its
     * number may have been reused; this one is still our eventfd. */
    ssize_t w = write(p->u.fd, &one, sizeof one);
    (void)w; /* an eventfd write of 1 only fails on counter overflow */
    (void)status;
    close(p->u.fd);
    free(p);
}

DEVQ_API int devq_signal_wait_fd(devq_signal *s, uint64_t value, int *fd)
{
    int r = devq__signal_check_user(s, "devq_signal_wait_fd");
    if (r)
        return r;
    if (!fd)
        return devq__err(-EINVAL, "devq_signal_wait_fd: fd is NULL (%s)", devq__signal_label(s).s);
    *fd = -1;
    if (s->shared && (r = devq__shared_check(s)))
        return r;
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0)
        return devq__err(-errno, "devq_signal_wait_fd: eventfd: %m");
    int mine = fcntl(efd, F_DUPFD_CLOEXEC, 0);
    struct devq_pending *p = mine >= 0 ? malloc(sizeof *p) : NULL;
    if (!p) {
        r = mine < 0 ? devq__err(-errno, "devq_signal_wait_fd: dup: %m")
                     : devq__err(-ENOMEM, "devq_signal_wait_fd: out of memory");
        if (mine >= 0)
            close(mine);
        close(efd);
        return r;
    }
    *p = (struct devq_pending){ .value = value, .kind = PENDING_FD, .heap_index = SIZE_MAX, .u.fd = mine };
    r = register_pending(s, p, "devq_signal_wait_fd");
    if (r) {
        close(mine);
        close(efd);
        free(p);
        return r;
    }
    *fd = efd;
    return 0;
}
