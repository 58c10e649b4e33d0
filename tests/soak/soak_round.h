/* SPDX-License-Identifier: MIT */
/* State of one round, shared by soak_round.c (build, run) and
 * soak_check.c (judge). */
#ifndef DEVQ_SOAK_ROUND_H
#define DEVQ_SOAK_ROUND_H

#include "soak.h"

struct soak_queue {
    devq_queue *q;
    int dev;
    enum devq_queue_kind kind;
};

struct soak_round {
    const struct soak_plan *plan;
    uint64_t rng;
    devq_device *dev[SOAK_NDEV];
    devq_kernel *mix[SOAK_NDEV], *combine[SOAK_NDEV], *gen[SOAK_NDEV], *failk;
    struct soak_queue q[SOAK_NQ];
    devq_signal *host_sig; /* batches wait on values the host sets later */
    uint64_t host_next;    /* next value a batch may wait for */
    uint64_t host_set;     /* value set so far */

    struct soak_batch batch[SOAK_MAX_BATCHES];
    int nbatches;
    int ntail_shaped; /* of them, built as signal-tail batches (tail_batches) */
    struct soak_buf buf[SOAK_MAX_BUFS];
    int nbufs;
    struct soak_read read[SOAK_MAX_READS];
    int nreads;
    struct soak_staging staging[SOAK_MAX_STAGING];
    int nstaging;
    struct soak_probe probe[SOAK_MAX_PROBES];
    int nprobes;
    void *host_blocks[4096]; /* host sources of writes, alive to the end */
    int nhost_blocks;

    struct soak_mop mop[SOAK_MAX_MOPS];
    int nmops;
    int fail_batch;                        /* FAULT_CPU_KERNEL: the failing batch */
    int fail_mop;                          /* ... and its failing op */
    int ops_of_kind[SOAK_NDEV][OP_NKINDS]; /* ops submitted, per device */
    bool device_lost;                      /* a call saw the sticky fault */
    int call_errors;                       /* calls outside batches that failed */
    char call_error_msg[320];
    /* "May be held up" (BLOCK_* bits): batches lib may defer, because
     * they wait on the host signal or, on a device with no device-side
     * wait, on the other device; and what follows one, runs behind one
     * on a queue or touches a buffer one touched.  See live_buf. */
    unsigned q_block[SOAK_NQ];
    bool native_wait[SOAK_NDEV]; /* DEVQ_CAP_WAIT_VALUE */
    int touched[32];             /* buffers the open batch touches */
    int ntouched;
    int self_failed; /* batch signals the soak failed itself */
    int notes;       /* known lib issues seen (not failures) */
    bool noted[KNOWN_COUNT];
    bool aborted; /* a hang: stop building, no teardown */
    int failures; /* checks that failed */
    int failed_batches;
    int late_failures; /* reads a later failed writer may fail (soak_check.c) */
    int unknown_elements;
    int model_gap; /* a known model gap: the results are not compared */
};

/* soak_peer.c: a producer process of a shared signal, killed at random
 * (start after the devices opened, kill after the build, check once the
 * round's batches are done). */
void soak_peer_start(struct soak_round *r);
void soak_peer_kill(struct soak_round *r);
void soak_peer_check(struct soak_round *r);

/* op kind names, for messages */
extern const char *const soak_op_names[OP_NKINDS];

#endif
