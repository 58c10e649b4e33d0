/* SPDX-License-Identifier: MIT */
/* devq_signal_add_producer and devq_signal_remove_producer: a process
 * names itself (devq__proc_self, signal_peer.c) in a slot of the shared
 * page's producer table, by CAS, so that waiters can tell when every
 * producer died (the peer-lost rule, signal_peer.c).  Apart from
 * signal_peer.c, which signal.c calls: these call signal.c. */
#include "config.h"
#include <errno.h>
#include <unistd.h>
#include "error.h"
#include "signal_impl.h"

static int check_shared(devq_signal *s, const char *fn)
{
    int r = devq__signal_check_user(s, fn);
    if (r)
        return r;
    if (!s->shared)
        return devq__err(-EINVAL,
                         "%s: %s is not shared; producers are processes sharing "
                         "a signal made with devq_signal_create_shared",
                         fn, devq__signal_label(s).s);
    return devq__shared_check(s);
}

DEVQ_API int devq_signal_add_producer(devq_signal *s)
{
    int r = check_shared(s, "devq_signal_add_producer");
    if (r)
        return r;
    uint64_t me = devq__proc_self(), who;
    for (unsigned i = 0; i < DEVQ_SHARED_PRODUCERS; i++) {
        if ((r = devq__shared_producer(s, i, &who)))
            return devq__shared_fail_err(s, r);
        if (who == me)
            return 0; /* registered already */
    }
    /* A free slot, else one of a dead producer: it no longer counts. */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < DEVQ_SHARED_PRODUCERS; i++) {
            if ((r = devq__shared_producer(s, i, &who)))
                return devq__shared_fail_err(s, r);
            if (pass == 0 ? who != 0 : !who || devq__proc_alive(who))
                continue;
            if (atomic_compare_exchange_strong(&s->tl->producer[i], &who, me))
                return 0;
        }
    }
    return devq__err(-ENOSPC,
                     "devq_signal_add_producer: %s has %d live producers, the "
                     "most a shared signal holds; remove one with "
                     "devq_signal_remove_producer",
                     devq__signal_label(s).s, DEVQ_SHARED_PRODUCERS);
}

DEVQ_API int devq_signal_remove_producer(devq_signal *s)
{
    int r = check_shared(s, "devq_signal_remove_producer");
    if (r)
        return r;
    uint64_t me = devq__proc_self(), who;
    for (unsigned i = 0; i < DEVQ_SHARED_PRODUCERS; i++) {
        if ((r = devq__shared_producer(s, i, &who)))
            return devq__shared_fail_err(s, r);
        if (who == me && atomic_compare_exchange_strong(&s->tl->producer[i], &who, 0))
            return 0;
    }
    return devq__err(-ENOENT,
                     "devq_signal_remove_producer: process %d is not a producer "
                     "of %s; register with devq_signal_add_producer",
                     getpid(), devq__signal_label(s).s);
}
