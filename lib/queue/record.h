/* SPDX-License-Identifier: MIT */
/* record.c: recording ops into a queue's open batch. */
#ifndef DEVQ_LIB_RECORD_H
#define DEVQ_LIB_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include "batch.h"

struct devq_queue;
struct devq_object;

/* One op recorded under the recorder role (else -EBUSY): begin, append
 * (a zeroed op, nheld references reserved), fill it in, commit.  Commit
 * returns r, made sticky when negative. */
int devq__record_begin(struct devq_queue *q, const char *fn);
int devq__record_append(struct devq_queue *q, uint32_t nheld, const char *fn, struct op **out);
/* Append an OP_WORK op (caller holds the role): data (size bytes) is
 * copied into the batch, the uses are checked by the caller, hold (may
 * be NULL) is kept alive until the batch completes; writes_whole: its
 * one DEVQ_WRITE use covers that buffer (a success clears its failure);
 * issue (NULL: run in a host callback) enqueues it on the device stream
 * at issue time (batch.h).  The channel layer's
 * entry into recording (DESIGN §11). */
int devq__record_work(struct devq_queue *q, devq_work_fn run, devq_work_issue_fn issue, const void *key,
                      const void *data, size_t size, const struct buffer_use *uses, uint32_t nuses,
                      struct devq_object *hold, int writes_whole, const char *fn);
int devq__record_signal(struct devq_queue *q, devq_signal *s, uint64_t v, enum op_kind kind, const char *fn);
int devq__record_commit(struct devq_queue *q, int r);
/* Submit batch b, filled in, with q's recorder role held (given back
 * here): what devq_queue_submit does once it has its batch; graph
 * submissions (graph_submit.c) come in here with a replayed batch. */
int devq__record_submit(struct devq_queue *q, struct batch *b);
/* A batch from q's pool with nothing recorded (recorder role held). */
struct batch *devq__record_fresh_batch(struct devq_queue *q);

#endif
