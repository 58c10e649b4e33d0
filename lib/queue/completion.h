/* SPDX-License-Identifier: MIT */
/* Host callbacks, run by the backend in stream order (completion.c):
 * what each one is handed. */
#ifndef DEVQ_LIB_COMPLETION_H
#define DEVQ_LIB_COMPLETION_H

#include <stdint.h>
#include "batch.h"

/* What one gate callback checks: a snapshot taken when the gate was
 * issued, so that issuing a later portion of the same batch (from
 * another thread) never races with a gate still to run. */
struct gate_rec {
    struct batch *b;
    uint32_t from; /* the portion it opens: ops before it are walked */
    uint32_t nsig, nslot;
    struct gate_wait *sig;         /* held by the batch's wait ops */
    struct devq_value_slot **slot; /* held by the batch until its end */
};

/* The end of an issued portion of a batch that continues later. */
struct portion {
    struct batch *b;
    uint32_t upto;
    int forced;         /* b's forced error when it was queued */
    uint32_t fail_from; /* and the op it applies from */
};

/* completion.c: host callbacks. */
int devq__end_cb(void *arg, int status);
int devq__gate_cb(void *arg, int status);
int devq__portion_cb(void *arg, int status);
int devq__signal_cb(void *arg, int status);
int devq__user_fn_cb(void *arg, int status);
int devq__work_cb(void *arg, int status); /* OP_WORK */
/* A host-run OP_WORK op o of b, run on this thread (the stream's
 * callback above, or the submitter: inline.c): the walk up to it, its
 * failed reads, run with group (DEVQ_WORK_* flags), the latch, and b's
 * reference dropped; the op's verdict.  With DEVQ_WORK_INLINE in group, a
 * DEVQ_WORK_PENDING from run returns at once with nothing consumed. */
int devq__work_run_here(struct batch *b, struct op *o, int status, unsigned group, const struct op *head);
/* The backend's signal_tail function (devq_pl_tail_fn): set signal arg
 * to value on the stream, unless a buffer anywhere has failed (the end
 * callback's walk may have to clear it before the signal is seen). */
void devq__tail_set(void *arg, uint64_t value);
int devq__trace_mark_cb(void *arg, int status);
void devq__trace_batch(struct batch *b);
void devq__complete_inline(struct batch *b, int err);
void devq__batch_unref(struct batch *b);

#endif
