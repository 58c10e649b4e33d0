/* SPDX-License-Identifier: MIT */
/* Which process an object belongs to, across fork().
 *
 * A devq_device and its queues hold threads (the cpu backend's stream
 * workers, a GPU driver's) and driver state that fork() does not copy:
 * in the child a queue made by the parent takes batches nobody runs,
 * and a finish waits out its timeout (or for ever) with no word of why.
 * So each records the fork generation it was made in, and every entry
 * point's object check refuses one from an earlier generation with
 * -ENODEV and a message saying so; devq_device_open in the child makes
 * its own device.  The generation is bumped in the child by
 * pthread_atfork, registered before the first device is made. */
#ifndef DEVQ_BASE_FORK_H
#define DEVQ_BASE_FORK_H

#include <stdatomic.h>

extern atomic_uint devq__fork_generation;

/* Register the atfork handler (once; before any device is made). */
void devq__fork_track(void);

/* The current generation: 0 in the process that loaded libdevq, one
 * more in each child forked since. */
static inline unsigned devq__fork_gen(void)
{
    return atomic_load_explicit(&devq__fork_generation, memory_order_relaxed);
}

/* The -ENODEV error for `what` (a label: "queue #1 on cpu:0"), made in
 * process pid, used in this one through fn. */
int devq__forked_err(const char *fn, const char *what, int pid) __attribute__((cold));

#endif
