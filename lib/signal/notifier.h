/* SPDX-License-Identifier: MIT */
/* The notifier thread: one per process, started lazily.  It runs
 * completion callbacks (devq_signal_notify), submits deferred batches and
 * reaps freed memory, woken by futex/eventfd, never by a sleep loop. */
#ifndef DEVQ_LIB_NOTIFIER_H
#define DEVQ_LIB_NOTIFIER_H

/* Run fn(arg) on the notifier thread, in FIFO order with other posts.
 * Never runs fn inline.  Safe to call from any thread, including plugin
 * host-callback threads and the notifier itself.  0 or -ENOMEM. */
int devq__notifier_post(void (*fn)(void *arg), void *arg);

/* True on the notifier thread (for assertions and to avoid self-waits). */
int devq__notifier_is_current(void);

#endif
