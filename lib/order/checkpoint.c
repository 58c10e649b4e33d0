/* SPDX-License-Identifier: MIT */
/* Checkpoints: events recorded on a stream just before a wait that may
 * hold it up (stream.h), so that other streams needing only the work
 * before that wait align to it rather than to a tail that may wait for
 * the host.  Stream state, kept by the device layer; the queue layer
 * records them (value_wait.c, submit.c).  Device lock held throughout. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "checkpoint.h"
#include "device.h"
#include "event_pool.h"
#include "stream.h"
#include "tracker.h"

/* Make room for one more checkpoint.  Every one may matter while the
 * stream is held up (dropping one makes alignments that needed it wait
 * for the next, behind a held-up wait), so none is dropped until a later
 * one is reached, which covers it at no cost; otherwise the array grows,
 * bounded by the stream's units in flight. */
static int checkpoints_room(struct devq_device *dev, struct devq_stream *st)
{
    uint32_t reached = 0;
    for (uint32_t i = st->ncp; i-- > 1;)
        if (dev->ops->event_query(st->cp[i].ev) == 0) {
            reached = i;
            break;
        }
    if (reached) {
        for (uint32_t i = 0; i < reached; i++)
            devq__event_put(dev, st->cp[i].ev, 0);
        memmove(&st->cp[0], &st->cp[reached], (st->ncp - reached) * sizeof st->cp[0]);
        st->ncp -= reached;
        return 0;
    }
    uint32_t cap = st->capcp ? st->capcp * 2 : 8;
    struct devq_checkpoint *cp = realloc(st->cp, cap * sizeof *cp);
    if (!cp)
        return -ENOMEM;
    st->cp = cp;
    st->capcp = cap;
    return 0;
}

void devq__checkpoint(struct devq_device *dev, struct devq_stream *st)
{
    uint64_t cursor = devq__tracker_cursor(dev->tracker, st->id);
    if (cursor == 0)
        return;
    cursor--; /* the current unit starts with the wait */
    if (st->ncp && st->cp[st->ncp - 1].cursor >= cursor)
        return; /* an earlier checkpoint already covers it */
    devq_pl_event *e;
    if (devq__event_get(dev, 0, &e) < 0)
        return; /* without one, alignments use the tail */
    if (dev->ops->event_record(e, st->pl) < 0) {
        devq__event_put(dev, e, 0);
        return;
    }
    if (st->ncp == st->capcp && checkpoints_room(dev, st) < 0) {
        devq__event_put(dev, e, 0);
        return; /* alignments use a later checkpoint or the tail */
    }
    st->cp[st->ncp++] = (struct devq_checkpoint){ .cursor = cursor, .ev = e };
}

void devq__checkpoints_drop(struct devq_device *dev, struct devq_stream *st)
{
    for (uint32_t i = 0; i < st->ncp; i++)
        devq__event_put(dev, st->cp[i].ev, 0);
    free(st->cp);
    st->cp = NULL;
    st->ncp = st->capcp = 0;
}
