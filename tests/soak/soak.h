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

#define SOAK_NDEV 2               /* 0: cpu, 1: cuda on the emulator */
#define SOAK_QPERDEV 4
#define SOAK_NQ (SOAK_NDEV * SOAK_QPERDEV)
#define SOAK_MAX_BATCHES 384
#define SOAK_MAX_BUFS 256
#define SOAK_MAX_READS 1024
#define SOAK_MAX_STAGING 512
#define SOAK_MAX_PROBES 64
/* Why a batch may be held up (deferred by lib) for a while. */
#define BLOCK_HOST 1u               /* until the host sets its signal */
#define BLOCK_XDEV 2u               /* until work on the other device is done */
#define SOAK_BSET_WORDS (SOAK_MAX_BATCHES / 64)

typedef struct { uint64_t w[SOAK_BSET_WORDS]; } soak_bset;    /* set of batches */

static inline void bset_add(soak_bset *s, int i) { s->w[i / 64] |= 1ull << (i % 64); }
static inline bool bset_has(const soak_bset *s, int i) { return s->w[i / 64] >> (i % 64) & 1; }
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
    FAULT_HOST_SIGNAL,       /* host fails the signal some batches wait on */
    FAULT_CPU_KERNEL,        /* a cpu kernel returns -EDOM (recoverable) */
    FAULT_CUDA_CALL,         /* DEVQ_EMU_FAIL, a non-sticky error on the spot */
    FAULT_CUDA_STICKY,       /* DEVQ_EMU_FAIL, a sticky error: the device is lost */
    FAULT_KINDS
};

/* Kinds of ops, also the bits of soak_batch.kinds. */
enum soak_op { OP_EXEC, OP_COPY, OP_FILL, OP_WRITE, OP_READ, OP_HOSTFN, OP_NKINDS };

struct soak_plan {
    uint64_t seed;               /* of this round */
    int round;
    enum soak_fault fault;
    char emu_fail[128];          /* DEVQ_EMU_FAIL value, "" if none */
    char func[48];               /* the failing driver function */
    char error[48];              /* its CUDA_ERROR_* name */
    int nth;                     /* which call fails */
    int op_kind;                 /* the devq op that calls func once, or -1 */
    unsigned delay_us;           /* DEVQ_EMU_DELAY */
    int batches;                 /* batches to build */
    bool fault_in_alloc;         /* func is called by devq_buffer_alloc */
};

struct soak_batch {
    int q;                       /* queue index */
    devq_signal *sig;            /* reaches 1 when the batch is done */
    soak_bset up;                /* batches it follows through signal waits, itself included */
    bool host_dep;               /* waits (perhaps transitively) on the host signal */
    unsigned block;              /* BLOCK_* bits: why it may be held up (soak_round.h) */
    bool has_fail_kernel;
    bool aligned;                /* waits on a batch of its own device */
    int device_waits;            /* waits that may be device-side (cuda) */
    uint32_t kinds;              /* 1 << soak_op of ops it holds */
    int hostfns;                 /* host functions queued */
    atomic_int hostfn_ran;
    int submit_rc;               /* what devq_queue_submit returned */
    int status;                  /* final: 0 or the failure */
    bool done;                   /* final wait returned */
    char msg[520];               /* devq_errmsg() after a failed final wait */
};

struct soak_buf {
    devq_buffer *b;
    int dev;
    uint32_t n;                  /* elements (uint32_t) */
    uint32_t *ref;               /* expected content */
    soak_bset deps;              /* batches whose work produced the content */
    bool live;
    unsigned block;              /* BLOCK_* bits of held-up batches that touched it */
    int block_q;                 /* the queue of the held-up batch that touched it */
    uint32_t qmask;              /* queues that touched it */
    bool sync_alloc;             /* allocated with no queue */
    int alloc_q;                 /* the queue it was allocated on, or -1 */
};

struct soak_read {
    int batch;
    uint32_t *got, *expect;
    uint32_t n;
    soak_bset deps;
    int buf;
};

/* Host memory a read filled and a later write on another queue uses. */
struct soak_staging {
    int batch;                   /* the batch that read into it */
    uint32_t *data;              /* = that read's got */
    uint32_t *expect;
    uint32_t n;
    soak_bset deps;
};

/* A host wait done during the round, checked against the final status. */
struct soak_probe {
    int batch[3];
    int n;
    int how;                     /* 0 wait, 1 wait_many ALL, 2 wait_many ANY, 3 wait_fd, 4 notify */
    int rc;
    atomic_int notified;         /* notify: calls of the callback */
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

/* a failure of the round: printed with the round's seed */
void soak_fail(struct soak_round *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Lib bugs the soak used to report as notes (see README.md), all fixed:
 * a failure, or under SOAK_STRICT=0 a note printed once per round and
 * kind. */
enum soak_known {
    KNOWN_LOST_DEVICE_MEMORY,    /* lost device keeps bytes outstanding */
    KNOWN_ALLOC_MESSAGE,         /* failed allocation hides the driver error */
    KNOWN_CAUSE_TRUNCATED,       /* long cause chains lose the root cause */
    KNOWN_FREE_LOST_ON_ERROR,    /* a stream-ordered free lost when ordering fails */
    KNOWN_COUNT
};
void soak_known(struct soak_round *r, enum soak_known k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
