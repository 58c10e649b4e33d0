/* SPDX-License-Identifier: MIT */
/* devq soak test with injected faults (see tests/soak/README.md).
 *
 * The parent (soak_main.c) runs rounds, each in a fresh child process
 * because the emulated CUDA driver reads DEVQ_EMU_FAIL/DELAY/SEED once
 * per process.  A child (soak_round.c) opens cpu and cuda (emulated),
 * builds a random workload while simulating its reference result on the
 * host, waits for everything with timeouts, and checks (soak_check.c)
 * results, failure propagation, memory and leaks (soak_proc.c). */
#ifndef DEVQ_SOAK_H
#define DEVQ_SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <devq/devq.h>

#define SOAK_MS (1000000ull)
#define SOAK_SEC (1000000000ull)
/* Every wait of the soak has this timeout: far above any legal latency
 * of the workload, so reaching it means a hang. */
#define SOAK_WAIT_NS (20 * SOAK_SEC)

#define SOAK_NDEV 2 /* 0: cpu, 1: cuda on the emulator */
#define SOAK_QPERDEV 4
#define SOAK_NQ (SOAK_NDEV * SOAK_QPERDEV)
#define SOAK_MAX_BATCHES 384
#define SOAK_TAIL_BATCHES 24 /* after the random ones (soak_round.c tail_batches) */
#define SOAK_MAX_BUFS 256
#define SOAK_MAX_READS 1024
#define SOAK_MAX_STAGING 512
#define SOAK_MAX_PROBES 64
#define SOAK_MAX_MOPS 4096
/* Why a batch may be held up (deferred by lib) for a while. */
#define BLOCK_HOST 1u /* until the host sets its signal */
#define BLOCK_XDEV 2u /* until work on the other device is done */
#define SOAK_BSET_WORDS (SOAK_MAX_BATCHES / 64)

typedef struct {
    uint64_t w[SOAK_BSET_WORDS];
} soak_bset; /* set of batches */

static inline void bset_add(soak_bset *s, int i)
{
    s->w[i / 64] |= 1ull << (i % 64);
}
static inline bool bset_has(const soak_bset *s, int i)
{
    return s->w[i / 64] >> (i % 64) & 1;
}
static inline void bset_or(soak_bset *d, const soak_bset *s)
{
    for (int i = 0; i < SOAK_BSET_WORDS; i++)
        d->w[i] |= s->w[i];
}
static inline bool bset_meets(const soak_bset *a, const soak_bset *b)
{
    for (int i = 0; i < SOAK_BSET_WORDS; i++)
        if (a->w[i] & b->w[i])
            return true;
    return false;
}

/* What a round injects.  At most one root failure per round. */
enum soak_fault {
    FAULT_NONE,
    FAULT_HOST_SIGNAL, /* host fails the signal some batches wait on */
    FAULT_CPU_KERNEL,  /* a cpu kernel returns -EDOM (recoverable) */
    FAULT_CUDA_CALL,   /* DEVQ_EMU_FAIL, a non-sticky error on the spot */
    FAULT_CUDA_STICKY, /* DEVQ_EMU_FAIL, a sticky error: the device is lost */
    FAULT_KINDS
};

/* Kinds of ops, also the bits of soak_batch.kinds. */
enum soak_op { OP_EXEC, OP_COPY, OP_FILL, OP_WRITE, OP_READ, OP_HOSTFN, OP_NKINDS };

struct soak_plan {
    uint64_t seed; /* of this round */
    int round;
    enum soak_fault fault;
    char emu_fail[128];  /* DEVQ_EMU_FAIL value, "" if none */
    char func[48];       /* the failing driver function */
    char error[48];      /* its CUDA_ERROR_* name */
    int nth;             /* which call fails */
    int op_kind;         /* the devq op that calls func once, or -1 */
    unsigned delay_us;   /* DEVQ_EMU_DELAY */
    int batches;         /* batches to build */
    bool fault_in_alloc; /* func is called by devq_buffer_alloc */
};

struct soak_batch {
    int q;                  /* queue index */
    devq_signal *sig;       /* reaches 1 when the batch is done */
    int mop_first, mop_end; /* its ops in r->mop[], in recording order */
    bool discarded;         /* a recording call failed: lib drops it at submit */
    bool host_dep;          /* waits (perhaps transitively) on the host signal */
    unsigned block;         /* BLOCK_* bits: why it may be held up (soak_round.h) */
    bool has_fail_kernel;
    bool aligned;     /* waits on a batch of its own device */
    int device_waits; /* waits that may be device-side (cuda) */
    uint32_t kinds;   /* 1 << soak_op of ops it holds */
    int hostfns;      /* host functions queued */
    atomic_int hostfn_ran;
    bool graph;        /* captured as a graph, instantiated, submitted once */
    int submit_rc;     /* what devq_queue_submit (or devq_graph_submit) returned */
    int status;        /* final: 0 or the failure */
    bool done;         /* final wait returned */
    char msg[520];     /* devq_errmsg() after a failed final wait */
    devq_signal *tail; /* a signal-only batch right after it (tail_batch) */
    int tail_rc;       /* its devq_queue_signal/submit result */
};

struct soak_buf {
    devq_buffer *b;
    int dev;
    uint32_t n; /* elements (uint32_t) */
    bool live;
    bool kept;        /* freed only after the final waits, to read its status */
    int final_status; /* devq_buffer_status() then */
    char final_msg[320];
    unsigned block;  /* BLOCK_* bits of held-up batches that touched it */
    int block_q;     /* the queue of the held-up batch that touched it */
    uint32_t qmask;  /* queues that touched it */
    bool sync_alloc; /* allocated with no queue */
    int alloc_q;     /* the queue it was allocated on, or -1 */
};

struct soak_read {
    int batch;
    uint32_t *got;
    uint32_t n;
    int buf;
    int mop; /* its op in r->mop[] */
};

/* Host memory a read filled and a later write on another queue uses. */
struct soak_staging {
    int batch;      /* the batch that read into it */
    uint32_t *data; /* = that read's got */
    uint32_t n;
    int read; /* the read, in r->read[] */
};

/* One op as the model sees it (soak_model.c replays them).  Waits are
 * ops too: a wait in the middle of a batch fails only what follows it. */
enum soak_mop_kind {
    MOP_WAIT,      /* on batch `wait`'s signal */
    MOP_HOST_WAIT, /* on the host signal */
    MOP_MIX,       /* exec READ_WRITE dst[0..n) */
    MOP_COMBINE,   /* exec READ_WRITE dst, READ src, [0..n) */
    MOP_GEN,       /* exec WRITE dst[0..n) */
    MOP_COPY,      /* dst[doff..+n) <- src[soff..+n) */
    MOP_FILL,      /* dst[doff..+n) = byte k */
    MOP_WRITE,     /* dst[doff..+n) <- host data */
    MOP_STAGED,    /* dst[doff..+n) <- what read `read` got */
    MOP_READ,      /* host <- src[soff..+n), read `read` */
    MOP_FAIL,      /* the failing cpu kernel (no buffers) */
    MOP_HOSTFN,
};

struct soak_mop {
    uint8_t kind;
    int batch;
    int dst, src; /* buffers, -1 if none */
    uint32_t doff, soff, n, k;
    const uint32_t *data; /* MOP_WRITE */
    int read;             /* MOP_READ, MOP_STAGED */
    int wait;             /* MOP_WAIT */
};

/* A host wait done during the round, checked against the final status. */
struct soak_probe {
    int batch[3];
    int n;
    int how; /* 0 wait, 1 wait_many ALL, 2 wait_many ANY, 3 wait_fd, 4 notify */
    int rc;
    atomic_int notified; /* notify: calls of the callback */
    atomic_int notify_status;
};

struct soak_round;

extern const char *const soak_fault_names[FAULT_KINDS];

/* soak_kernels.c */
extern const char soak_emu_module[];

/* soak_proc.c */
int soak_count_fds(void);
int soak_count_threads(void);
/* Threads of the emulator's destroyed streams exit on their own (they
 * are detached, like a driver's): wait, bounded, until the count is at
 * most `want`; returns the last count. */
int soak_settle_threads(int want, uint64_t max_ns);
void soak_dump_stacks(const char *why);
/* The phase the child is in, kept in memory shared with the parent so
 * that a child killed by the watchdog is still reported precisely. */
extern char *soak_phase_page;
void soak_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* soak_round.c */
int soak_run_round(const struct soak_plan *plan);

/* soak_check.c */
int soak_check_round(struct soak_round *r);

/* soak_model.c: where the injected fault struck (a guess, for cuda) */
struct soak_root {
    int op;                 /* this op fails, -1: none */
    int end_batch;          /* this batch fails after its ops, -1: none */
    const soak_bset *whole; /* these batches fail, any of their ops may (lost device), or NULL */
    bool host_failed;       /* the host signal failed */
    const uint8_t *maybe;   /* per op: these may fail (see soak_check.c), or NULL */
    bool late;              /* op fails as it is issued (a driver call): see soak_model.c */
};
/* What the rules of devq(7) FAILURES predict from a root, per batch,
 * op and buffer: OK, FAILED, or MAYBE where lib may place a failure
 * earlier in its batch than the op that caused it (soak_model.c). */
enum { SIM_OK, SIM_FAILED, SIM_MAYBE };
struct soak_sim {
    uint8_t batch[SOAK_MAX_BATCHES];
    uint8_t buf[SOAK_MAX_BUFS]; /* at the end */
    uint8_t op[SOAK_MAX_MOPS];
};
/* A failure-model switch (README.md): set to 1 in the environment. */
bool soak_switch_on(const char *name);
bool soak_switch_strict(const char *name);
void soak_predict(const struct soak_round *r, const struct soak_root *rt, struct soak_sim *s);
/* Replays the data under s: every read whose op surely succeeded must
 * match; elements of unknown content (written by an op that failed or
 * may have, and not written since) are not compared: *unknown counts
 * them.  Returns the
 * mismatches, reported through soak_fail when report is set. */
int soak_check_data(struct soak_round *r, const struct soak_sim *s, bool report, int *unknown);

/* a failure of the round: printed with the round's seed */
void soak_fail(struct soak_round *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Lib bugs the soak used to report as notes (see README.md), all fixed:
 * a failure, or under SOAK_STRICT=0 a note printed once per round and
 * kind. */
enum soak_known {
    KNOWN_LOST_DEVICE_MEMORY, /* lost device keeps bytes outstanding */
    KNOWN_ALLOC_MESSAGE,      /* failed allocation hides the driver error */
    KNOWN_CAUSE_TRUNCATED,    /* long cause chains lose the root cause */
    KNOWN_FREE_LOST_ON_ERROR, /* a stream-ordered free lost when ordering fails */
    KNOWN_COUNT
};
void soak_known(struct soak_round *r, enum soak_known k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
