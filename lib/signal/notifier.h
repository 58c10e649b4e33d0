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

/* Start the notifier thread now if it is not running.  Every
 * registration whose delivery needs the thread calls this first, so
 * work is never accepted that no thread will run (devq(7) THREADS).
 * 0, or -EAGAIN / -ENOMEM with a message naming `who`, the thread and
 * the limit; nothing is left behind and the next call tries again. */
int devq__notifier_start(const char *who);

/* True on the notifier thread (for assertions and to avoid self-waits). */
int devq__notifier_is_current(void);

#endif
