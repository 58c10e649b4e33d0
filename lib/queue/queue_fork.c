/* SPDX-License-Identifier: MIT */
/* The error of a queue used in a process forked after it was made
 * (fork.h); the cold end of devq__queue_check. */
#include "queue.h"

int devq__queue_forked(const devq_queue *q, const char *fn)
{
    return devq__forked_err(fn, devq__queue_label(q).s, q->dev->pid);
}
