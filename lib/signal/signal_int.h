/* SPDX-License-Identifier: MIT */
/* Internal side of timeline signals, used by queues and the tracker.
 * The public side is in devq.h; the rules are in devq_signal(3). */
#ifndef DEVQ_LIB_SIGNAL_H
#define DEVQ_LIB_SIGNAL_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include "name.h"

#define DEVQ_MAGIC_SIGNAL 0x5349474eu /* "SIGN" */

/* 0, or -EINVAL naming fn when s is NULL or not a live signal. */
int devq__signal_check(const devq_signal *s, const char *fn);

/* Queues keep signals they will wait on or signal alive until the batch
 * completed: destroy drops the user's reference, memory goes with the last. */
void devq__signal_retain(devq_signal *s);
void devq__signal_release(devq_signal *s);

/* Raise the value to v when v is higher; a lower or equal v is ignored
 * (a queue signalling out of order must not fail anything).  Returns the
 * signal's failure status (0 when not failed). */
int devq__signal_advance(devq_signal *s, uint64_t v);
/* The same, for a caller that holds a reference of its own across the
 * call (a batch holding its signal ops' references). */
int devq__signal_advance_held(devq_signal *s, uint64_t v);

/* Fail with a root-cause message kept for every waiter's devq_errmsg().
 * First failure wins; later calls change nothing. */
void devq__signal_fail_cause(devq_signal *s, int err, const char *cause);

/* Copy a cause chain ("<hop>, which failed: <hop>, which failed: ...
 * <root>") into dst[cap]; one too long keeps its first hop and its root
 * cause, with "... " for the hops elided between them. */
void devq__cause_compact(char *dst, size_t cap, const char *cause);

/* The stored root cause ("" when not failed). */
const char *devq__signal_cause(const devq_signal *s);

/* What a wait for s >= v learns from s now: 0 (reached, or not yet and
 * still alive), its failure, or -ECANCELED when the user destroyed it
 * before it got there; cause[cap] says which, in words. */
int devq__signal_wait_verdict(const devq_signal *s, uint64_t v, char *cause, size_t cap);

/* s reached v, failed, or was destroyed by the user: nothing needs to
 * be ordered after a producer of v any more.  For lib's bookkeeping on
 * hot paths (the tracker's producer records): no call through the
 * exported API, no errmsg written. */
int devq__signal_settled(const devq_signal *s, uint64_t v);

/* Unique in the process, lib's own signals included: an identity for
 * hashing, never printed (messages use the label). */
uint64_t devq__signal_id(const devq_signal *s);

/* How every message names s: `signal #3`, `signal "grads" (#3)`, or
 * `internal signal` for lib's own (name.h, devq(7) NAMES). */
struct devq_label devq__signal_label(const devq_signal *s);

/* A signal lib keeps for itself (a queue's timeline): like
 * devq_signal_create, but it takes no user number. */
int devq__signal_create_internal(uint64_t initial, devq_signal **out);

/* Address of the 64-bit value, for backends that attach device-visible
 * storage (value_attach).  Stable for the signal's life. */
uint64_t *devq__signal_value_word(devq_signal *s);

#endif
