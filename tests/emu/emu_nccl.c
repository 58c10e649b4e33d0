/* SPDX-License-Identifier: MIT */
/* The emulated NCCL (libnccl-emu.so) and, built with -DEMU_RCCL, the
 * emulated RCCL (librccl-emu.so): the NCCL API of plugins/gpu_common/
 * nccl_abi.h over the emulated driver's streams.  See tests/emu/README.md.
 *
 * Ranks are threads or processes.  A communicator is a POSIX shared
 * memory segment named from the unique id: a header per rank (barrier
 * counter, pid, the op it is running), a staging area per rank for
 * collectives and a byte ring per ordered pair of ranks for send/recv.
 *
 * Every op is stream-ordered: ncclAllReduce & co. enqueue one host
 * function ("unit") on the caller's emulated stream, through the engine
 * table the driver exports (emu_export.h); the unit runs when the stream
 * reaches it, waits for the units issued before it on this communicator
 * (ops of a communicator run in issue order, the n-th on every rank
 * meets the n-th), then exchanges data with the peers through the
 * segment.  A group (ncclGroupStart/End) makes one unit per
 * communicator: its collectives run in order, then its sends and
 * receives progress together, so a send and a receive to one peer in a
 * group never deadlock; ops of the group on other streams make those
 * streams join the unit (struct join).
 *
 * Failures: a failing op records the communicator's async error
 * (ncclCommGetAsyncError), tells the peers through the segment (they
 * fail their op with ncclRemoteError) and poisons the stream's context
 * like a sticky kernel error.  A peer that does not come within
 * DEVQ_EMU_NCCL_TIMEOUT_MS fails the op with ncclSystemError; a peer
 * process that exited without destroying the communicator is seen
 * within ~20 ms (ncclRemoteError); one that destroyed it left cleanly.
 * ncclCommAbort wakes the blocked ops of the communicator (they end
 * without poisoning) and tells the peers.
 *
 * Environment (read at each ncclCommInitRank, unless noted):
 *   DEVQ_EMU_NCCL_TIMEOUT_MS=N  peer wait limit (default 10000)
 *   DEVQ_EMU_NCCL_FAIL=R:K[:CODE],...  rank R fails its K-th op (1-based,
 *                               counted per communicator) with CODE
 *                               (ncclSystemError by default; a name or number)
 *   DEVQ_EMU_NCCL_HANG=R:K,...  rank R stops in its K-th op until aborted
 *   DEVQ_EMU_NCCL_DIE=R:K,...   rank R's process _exit(86)s in the middle
 *                               of its K-th op (after publishing its data)
 *   DEVQ_EMU_NCCL_DELAY=US      random delay up to US µs before each unit
 *                               (seeded by DEVQ_EMU_SEED when set)
 *   DEVQ_EMU_NCCL_CALL_FAIL=func:N:CODE,...  the N-th call of func in the
 *                               process returns CODE (read once)
 *   DEVQ_EMU_NCCL_VERSION=N     what ncclGetVersion reports
 *   DEVQ_EMU_NCCL_DRIVER=PATH   the emulated driver to enqueue on (default:
 *                               DEVQ_CUDA_LIBRARY, for RCCL DEVQ_HIP_LIBRARY,
 *                               else devq_emu_engine found in the process)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "nccl_abi.h"
#include "emu_export.h"
#include "emu_nccl.h"

/* Declared from nccl_abi.h's types: a definition that disagrees with
 * the header does not compile. */
extern __typeof__(*(ncclGetVersion_fn)0) ncclGetVersion;
extern __typeof__(*(ncclGetUniqueId_fn)0) ncclGetUniqueId;
extern __typeof__(*(ncclCommInitRank_fn)0) ncclCommInitRank;
extern __typeof__(*(ncclCommSplit_fn)0) ncclCommSplit;
extern __typeof__(*(ncclCommDestroy_fn)0) ncclCommDestroy;
extern __typeof__(*(ncclCommAbort_fn)0) ncclCommAbort;
extern __typeof__(*(ncclCommGetAsyncError_fn)0) ncclCommGetAsyncError;
extern __typeof__(*(ncclCommCount_fn)0) ncclCommCount;
extern __typeof__(*(ncclCommUserRank_fn)0) ncclCommUserRank;
extern __typeof__(*(ncclGetErrorString_fn)0) ncclGetErrorString;
extern __typeof__(*(ncclGetLastError_fn)0) ncclGetLastError;
extern __typeof__(*(ncclAllReduce_fn)0) ncclAllReduce;
extern __typeof__(*(ncclAllGather_fn)0) ncclAllGather;
extern __typeof__(*(ncclReduceScatter_fn)0) ncclReduceScatter;
extern __typeof__(*(ncclBroadcast_fn)0) ncclBroadcast;
extern __typeof__(*(ncclSend_fn)0) ncclSend;
extern __typeof__(*(ncclRecv_fn)0) ncclRecv;
extern __typeof__(*(ncclGroupStart_fn)0) ncclGroupStart;
extern __typeof__(*(ncclGroupEnd_fn)0) ncclGroupEnd;

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#ifdef EMU_RCCL
#define LIB "RCCL"
#define DRIVER_ENV "DEVQ_HIP_LIBRARY"
#define DEFAULT_VERSION 21803 /* RCCL 2.18.3 (ROCm 6.0) */
#else
#define LIB "NCCL"
#define DRIVER_ENV "DEVQ_CUDA_LIBRARY"
#define DEFAULT_VERSION 22105 /* NCCL 2.21.5 */
#endif

#define MAX_RANKS 64
#define STAGE_BYTES (256u * 1024)
#define RING_BYTES (64u * 1024)
#define SHM_MAGIC 0x6465767165636c31ull
#define ID_PREFIX "devq-emu-nccl:"
#define DIE_STATUS 86
#define MAX_RULES 8

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_SEND, OP_RECV };
static const char *const op_names[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
                                        "ncclBroadcast", "ncclSend",      "ncclRecv" };

/* ---- the shared segment ---- */

struct desc {
    int32_t kind, dtype, op, root;
    uint64_t count, seq;
};

struct rank_hdr {
    _Atomic uint64_t bar; /* barriers passed */
    _Atomic int32_t joined, pid;
    struct desc desc; /* the collective being run */
    _Atomic uint64_t split_seq, split_ack;
    int32_t color, key;
} __attribute__((aligned(128)));

struct ring {
    _Atomic uint64_t head __attribute__((aligned(64))); /* bytes written (sender) */
    _Atomic uint64_t tail __attribute__((aligned(64))); /* bytes read (receiver) */
};

struct shm {
    _Atomic uint64_t magic;
    _Atomic int32_t nranks, arrived;
    _Atomic int32_t fail; /* the first failure: (rank + 1) << 8 | ncclResult_t */
    struct rank_hdr rank[MAX_RANKS];
    /* then stage[nranks][STAGE_BYTES], ring[nranks*nranks], data[nranks*nranks][RING_BYTES] */
};

static size_t shm_size(int n)
{
    return sizeof(struct shm) + (size_t)n * STAGE_BYTES + (size_t)n * n * sizeof(struct ring) +
           (size_t)n * n * RING_BYTES;
}

/* ---- communicators ---- */

struct rule {
    int rank;
    uint64_t k;
    int code;
};

struct ncclComm {
    uint32_t magic;
    int nranks, rank;
    struct shm *shm;
    size_t size;
    char name[64]; /* the segment's name */
    char hex[33];  /* the id's random part */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t issued, done; /* units: ticket order */
    unsigned pending;      /* units enqueued, not run */
    atomic_int refs;       /* the user + pending units */
    atomic_bool aborted;
    atomic_int async_err;
    char errmsg[512];
    /* owned by the unit running (units of a communicator run one by one) */
    uint64_t bar_epoch, coll_seq, ops_run;
    unsigned rng;
    /* host side */
    uint64_t split_seq;
    bool init_done;
    /* environment */
    unsigned timeout_ms, delay_us;
    struct rule fail[MAX_RULES], hang[MAX_RULES], die[MAX_RULES];
    int nfail, nhang, ndie;
};
#define COMM_MAGIC 0x4e43434cu

static const struct emu_engine_api *eng;
static char eng_error[256];
static pthread_once_t eng_once = PTHREAD_ONCE_INIT;

/* ncclGetLastError's text: one buffer for the process, as in NCCL (a
 * communicator with an async error answers with its own message). */
static char last_error[1024];
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;

static void set_last(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_last(const char *fmt, ...)
{
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&last_mu);
    if (strncmp(msg, "emulated ", 9) == 0)
        snprintf(last_error, sizeof last_error, "%s", msg);
    else
        snprintf(last_error, sizeof last_error, "emulated " LIB ": %.1000s", msg);
    pthread_mutex_unlock(&last_mu);
}

#define BAD(code, ...) (set_last(__VA_ARGS__), (code))

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000 };
    nanosleep(&ts, NULL);
}

/* ---- error names ---- */

static const char *const result_names[] = {
    "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
    "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress",
};

static int parse_code(const char *s)
{
    for (int i = 1; i < (int)(sizeof result_names / sizeof *result_names); i++)
        if (strcmp(s, result_names[i]) == 0)
            return i;
    int v = atoi(s);
    return v > 0 && v < ncclNumResults ? v : ncclSystemError;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

/* ---- DEVQ_EMU_NCCL_CALL_FAIL ---- */

#define MAX_CALL_RULES 16
static struct {
    char func[40];
    unsigned n;
    int code;
    atomic_uint calls;
} call_rules[MAX_CALL_RULES];
static int ncall_rules;
static pthread_once_t call_once = PTHREAD_ONCE_INIT;

static void call_rules_parse(void)
{
    const char *v = getenv("DEVQ_EMU_NCCL_CALL_FAIL");
    if (!v)
        return;
    char *copy = strdup(v), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && ncall_rules < MAX_CALL_RULES;
         tok = strtok_r(NULL, ",", &save)) {
        char *a = strchr(tok, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b)
            continue;
        *a = *b = '\0';
        snprintf(call_rules[ncall_rules].func, sizeof call_rules[0].func, "%s", tok);
        call_rules[ncall_rules].n = (unsigned)atoi(a + 1);
        call_rules[ncall_rules].code = parse_code(b + 1);
        ncall_rules++;
    }
    free(copy);
}

static ncclResult_t inject(const char *func)
{
    pthread_once(&call_once, call_rules_parse);
    for (int i = 0; i < ncall_rules; i++)
        if (strcmp(call_rules[i].func, func) == 0 &&
            atomic_fetch_add(&call_rules[i].calls, 1) + 1 == call_rules[i].n)
            return BAD((ncclResult_t)call_rules[i].code, "%s: injected failure (DEVQ_EMU_NCCL_CALL_FAIL)",
                       func);
    return ncclSuccess;
}

#define CHECK_INJECT(func)              \
    do {                                \
        ncclResult_t r_ = inject(func); \
        if (r_ != ncclSuccess)          \
            return r_;                  \
    } while (0)

/* ---- the emulated driver ---- */

static void eng_resolve(void)
{
    const char *path = getenv("DEVQ_EMU_NCCL_DRIVER");
    if (!path || !*path)
        path = getenv(DRIVER_ENV);
    void *sym;
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(eng_error, sizeof eng_error, "cannot load the emulated driver %s: %s", path, dlerror());
            return;
        }
        sym = dlsym(h, "devq_emu_engine");
    } else {
        sym = dlsym(RTLD_DEFAULT, "devq_emu_engine");
    }
    if (!sym) {
        snprintf(eng_error, sizeof eng_error,
                 "no emulated driver (devq_emu_engine): set DEVQ_EMU_NCCL_DRIVER or " DRIVER_ENV);
        return;
    }
    const struct emu_engine_api *a = ((devq_emu_engine_fn)sym)();
    if (!a || a->version != EMU_ENGINE_API_VERSION) {
        snprintf(eng_error, sizeof eng_error, "emulated driver engine API version mismatch");
        return;
    }
    eng = a;
}

static bool engine(void)
{
    pthread_once(&eng_once, eng_resolve);
    return eng != NULL;
}

/* ---- communicator state ---- */

static void comm_unref(struct ncclComm *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    if (c->shm)
        munmap(c->shm, c->size);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static bool comm_ok(const struct ncclComm *c)
{
    return c && c->magic == COMM_MAGIC;
}

/* Record the communicator's first failure and tell the peers.  Returns
 * the async error (the first failure's code). */
static int comm_fail(struct ncclComm *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int comm_fail(struct ncclComm *c, int code, const char *fmt, ...)
{
    pthread_mutex_lock(&c->mu);
    if (!atomic_load(&c->async_err)) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(c->errmsg, sizeof c->errmsg, "emulated " LIB ": rank %d: ", c->rank);
        vsnprintf(c->errmsg + n, sizeof c->errmsg - (size_t)n, fmt, ap);
        va_end(ap);
        atomic_store(&c->async_err, code);
    }
    pthread_mutex_unlock(&c->mu);
    int zero = 0;
    atomic_compare_exchange_strong(&c->shm->fail, &zero, (c->rank + 1) << 8 | code);
    return atomic_load(&c->async_err);
}

static bool pid_alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* What a wait checks while it waits. */
struct waiter {
    struct ncclComm *c;
    emu_ctx *ctx; /* the stream's context, or NULL (host calls) */
    uint64_t start, last_check;
    unsigned spins;
    const char *what;
};

static void waiter_init(struct waiter *w, struct ncclComm *c, emu_ctx *ctx, const char *what)
{
    *w = (struct waiter){ .c = c, .ctx = ctx, .what = what };
    w->start = w->last_check = now_ms();
}

/* 0 while all is well, else the op's error (recorded). */
static int waiter_check(struct waiter *w)
{
    struct ncclComm *c = w->c;
    if (atomic_load(&c->aborted))
        return ncclInvalidUsage;
    int f = atomic_load(&c->shm->fail);
    if (f) {
        int fc = f & 0xff, fr = (f >> 8) - 1;
        if (fr == c->rank && atomic_load(&c->async_err))
            return atomic_load(&c->async_err);
        return comm_fail(c, ncclRemoteError, "%s: rank %d failed (%s)", w->what, fr,
                         ncclGetErrorString((ncclResult_t)fc));
    }
    if (w->ctx && eng->ctx_status(w->ctx))
        return comm_fail(c, ncclUnhandledCudaError, "%s: the device's context failed", w->what);
    uint64_t now = now_ms();
    if (now - w->last_check >= 20) {
        w->last_check = now;
        int self = getpid();
        for (int r = 0; r < c->nranks; r++) {
            int pid = atomic_load(&c->shm->rank[r].pid);
            /* Read the slot again after finding the process gone: a peer
             * that destroyed its communicator (pid 0, everything it owed
             * delivered) between the two reads and then exited left
             * cleanly; the data it sent is in the ring. */
            if (r != c->rank && pid > 0 && pid != self && !pid_alive(pid) &&
                atomic_load(&c->shm->rank[r].pid) == pid)
                return comm_fail(c, ncclRemoteError, "%s: rank %d (pid %d) exited", w->what, r, pid);
        }
    }
    if (now - w->start >= c->timeout_ms)
        return comm_fail(c, ncclSystemError, "%s: timed out after %u ms waiting for the peers", w->what,
                         c->timeout_ms);
    return 0;
}

/* Progress was made: the timeout counts from now. */
static void waiter_progress(struct waiter *w)
{
    w->start = now_ms();
    w->spins = 0;
}

static void waiter_backoff(struct waiter *w)
{
    if (w->spins < 64)
        sched_yield();
    else
        sleep_us(w->spins < 200 ? 20 : 500);
    w->spins++;
}

/* ---- collectives ---- */

static unsigned char *stage(struct ncclComm *c, int r)
{
    return (unsigned char *)(c->shm + 1) + (size_t)r * STAGE_BYTES;
}

static struct ring *ring(struct ncclComm *c, int src, int dst)
{
    unsigned char *base = (unsigned char *)(c->shm + 1) + (size_t)c->nranks * STAGE_BYTES;
    return (struct ring *)base + (size_t)src * c->nranks + dst;
}

static unsigned char *ring_data(struct ncclComm *c, int src, int dst)
{
    unsigned char *base = (unsigned char *)(c->shm + 1) + (size_t)c->nranks * STAGE_BYTES +
                          (size_t)c->nranks * c->nranks * sizeof(struct ring);
    return base + ((size_t)src * c->nranks + dst) * RING_BYTES;
}

static int barrier(struct waiter *w)
{
    struct ncclComm *c = w->c;
    uint64_t e = ++c->bar_epoch;
    atomic_store_explicit(&c->shm->rank[c->rank].bar, e, memory_order_release);
    for (int r = 0; r < c->nranks; r++)
        while (atomic_load_explicit(&c->shm->rank[r].bar, memory_order_acquire) < e) {
            int err = waiter_check(w);
            if (err)
                return err;
            waiter_backoff(w);
        }
    waiter_progress(w);
    return 0;
}

struct op {
    int kind, dtype, redop, root, peer;
    const void *send;
    void *recv;
    size_t count;
    /* send/recv progress */
    uint64_t done, total;
    unsigned char hdr[16];
};

static bool rule_hit(const struct rule *rules, int n, int rank, uint64_t k, int *code)
{
    for (int i = 0; i < n; i++)
        if (rules[i].rank == rank && rules[i].k == k) {
            if (code)
                *code = rules[i].code;
            return true;
        }
    return false;
}

static int run_collective(struct waiter *w, struct op *o, bool die)
{
    struct ncclComm *c = w->c;
    int n = c->nranks, me = c->rank;
    size_t esz = emu_nccl_dtype_size(o->dtype);
    size_t per = (o->kind == OP_REDUCESCATTER ? STAGE_BYTES / ((size_t)n * esz) : STAGE_BYTES / esz);
    struct desc d = { o->kind,
                      o->dtype,
                      o->kind == OP_ALLREDUCE || o->kind == OP_REDUCESCATTER ? o->redop : -1,
                      o->kind == OP_BROADCAST ? o->root : -1,
                      o->count,
                      ++c->coll_seq };
    c->shm->rank[me].desc = d;
    const unsigned char *send = o->send;
    unsigned char *recv = o->recv;
    bool first = true;
    for (size_t off = 0; first || off < o->count; off += per) {
        size_t m = o->count - off < per ? o->count - off : per;
        unsigned char *mine = stage(c, me);
        switch (o->kind) {
        case OP_ALLREDUCE:
        case OP_ALLGATHER:
            memcpy(mine, send + off * esz, m * esz);
            break;
        case OP_BROADCAST:
            if (me == o->root)
                memcpy(mine, send + off * esz, m * esz);
            break;
        case OP_REDUCESCATTER:
            for (int r = 0; r < n; r++)
                memcpy(mine + (size_t)r * m * esz, send + ((size_t)r * o->count + off) * esz, m * esz);
            break;
        }
        if (die) {
            fprintf(stderr, "emulated " LIB ": rank %d: DEVQ_EMU_NCCL_DIE: exiting in %s\n", me,
                    op_names[o->kind]);
            _exit(DIE_STATUS);
        }
        int err = barrier(w);
        if (err)
            return err;
        if (first)
            for (int r = 0; r < n; r++) {
                struct desc p = c->shm->rank[r].desc;
                if (memcmp(&p, &d, sizeof d) != 0)
                    return comm_fail(c, ncclInvalidUsage,
                                     "op %llu: rank %d called %s (count %zu, type %d, op %d, root %d) "
                                     "but rank %d called %s (count %llu, type %d, op %d, root %d)",
                                     (unsigned long long)d.seq, me, op_names[d.kind], o->count, d.dtype, d.op,
                                     d.root, r, p.kind >= 0 && p.kind <= OP_RECV ? op_names[p.kind] : "?",
                                     (unsigned long long)p.count, p.dtype, p.op, p.root);
            }
        switch (o->kind) {
        case OP_ALLREDUCE:
        case OP_REDUCESCATTER: {
            size_t at = o->kind == OP_REDUCESCATTER ? (size_t)me * m * esz : 0;
            unsigned char *out = recv + off * esz;
            memmove(out, stage(c, 0) + at, m * esz);
            for (int r = 1; r < n; r++)
                emu_nccl_reduce(out, stage(c, r) + at, m, o->dtype, o->redop);
            if (o->redop == ncclAvg)
                emu_nccl_divide(out, m, o->dtype, n);
            break;
        }
        case OP_ALLGATHER:
            for (int r = 0; r < n; r++)
                memmove(recv + ((size_t)r * o->count + off) * esz, stage(c, r), m * esz);
            break;
        case OP_BROADCAST:
            memmove(recv + off * esz, stage(c, o->root), m * esz);
            break;
        }
        if ((err = barrier(w)))
            return err;
        first = false;
        if (o->count == 0)
            break;
    }
    return 0;
}

/* ---- send/recv: a byte stream per ordered pair, each message led by a
 * 16-byte header (magic, size) so a size mismatch is an error ---- */

#define P2P_MAGIC 0x70327064u

static bool p2p_step(struct ncclComm *c, struct op *o, int *err)
{
    bool progress = false;
    bool sending = o->kind == OP_SEND;
    struct ring *rg = sending ? ring(c, c->rank, o->peer) : ring(c, o->peer, c->rank);
    unsigned char *data = sending ? ring_data(c, c->rank, o->peer) : ring_data(c, o->peer, c->rank);
    while (o->done < o->total) {
        uint64_t head = atomic_load_explicit(&rg->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&rg->tail, memory_order_acquire);
        uint64_t room = sending ? RING_BYTES - (head - tail) : head - tail;
        if (!room)
            break;
        uint64_t pos = sending ? head : tail;
        uint64_t chunk = RING_BYTES - pos % RING_BYTES;
        if (chunk > room)
            chunk = room;
        if (chunk > o->total - o->done)
            chunk = o->total - o->done;
        if (o->done < 16 && chunk > 16 - o->done)
            chunk = 16 - o->done;
        unsigned char *mem =
            o->done < 16 ? o->hdr + o->done
                         : (sending ? (unsigned char *)o->send : (unsigned char *)o->recv) + (o->done - 16);
        if (sending)
            memcpy(data + pos % RING_BYTES, mem, chunk);
        else
            memcpy(mem, data + pos % RING_BYTES, chunk);
        o->done += chunk;
        if (sending)
            atomic_store_explicit(&rg->head, head + chunk, memory_order_release);
        else
            atomic_store_explicit(&rg->tail, tail + chunk, memory_order_release);
        progress = true;
        if (!sending && o->done == 16) {
            uint32_t magic;
            uint64_t bytes;
            memcpy(&magic, o->hdr, 4);
            memcpy(&bytes, o->hdr + 8, 8);
            if (magic != P2P_MAGIC || bytes != o->total - 16) {
                *err = comm_fail(c, ncclInvalidUsage,
                                 "ncclRecv of %llu bytes from rank %d matched a send of %llu bytes",
                                 (unsigned long long)(o->total - 16), o->peer, (unsigned long long)bytes);
                return true;
            }
        }
    }
    return progress;
}

static int run_p2p(struct waiter *w, struct op *ops, size_t nops)
{
    struct ncclComm *c = w->c;
    size_t left = 0;
    for (size_t i = 0; i < nops; i++)
        if (ops[i].kind == OP_SEND || ops[i].kind == OP_RECV) {
            struct op *o = &ops[i];
            o->total = 16 + o->count * emu_nccl_dtype_size(o->dtype);
            o->done = 0;
            if (o->kind == OP_SEND) {
                uint32_t magic = P2P_MAGIC;
                uint64_t bytes = o->total - 16;
                memset(o->hdr, 0, sizeof o->hdr);
                memcpy(o->hdr, &magic, 4);
                memcpy(o->hdr + 8, &bytes, 8);
            }
            left++;
        }
    if (!left)
        return 0;
    /* busy[dir * nranks + peer]: an earlier op of the group to that peer is
     * unfinished, so later ones wait (messages to a peer keep their order) */
    bool *busy = calloc(2 * (size_t)c->nranks, sizeof *busy);
    if (!busy)
        return comm_fail(c, ncclSystemError, "out of memory");
    int err = 0;
    while (left && !err) {
        bool progress = false;
        memset(busy, 0, 2 * (size_t)c->nranks * sizeof *busy);
        left = 0;
        for (size_t i = 0; i < nops && !err; i++) {
            struct op *o = &ops[i];
            if (o->kind != OP_SEND && o->kind != OP_RECV)
                continue;
            bool *b = &busy[(o->kind == OP_SEND ? 0 : c->nranks) + o->peer];
            if (o->done == o->total || *b)
                continue;
            progress |= p2p_step(c, o, &err);
            if (o->done < o->total) {
                *b = true;
                left++;
            }
        }
        if (err || !left)
            break;
        if (progress)
            waiter_progress(w);
        else if ((err = waiter_check(w)) == 0)
            waiter_backoff(w);
    }
    free(busy);
    return err;
}

/* ---- units: what a stream runs ---- */

/* A group whose ops of one communicator use several streams: the unit
 * runs on the first; each other stream gets a joiner, a host function
 * that arrives (the unit waits for every joiner: what was queued before
 * on those streams comes first) and then holds its stream until the unit
 * is done, as NCCL orders a group's streams. */
struct join {
    atomic_int refs;  /* the unit + the joiners */
    atomic_int njoin; /* joiners enqueued */
    atomic_int arrived;
    atomic_bool done;
};

static void join_unref(struct join *j)
{
    if (j && atomic_fetch_sub(&j->refs, 1) == 1)
        free(j);
}

static void run_joiner(void *arg, int status)
{
    (void)status; /* a failed stream still lets the group go */
    struct join *j = arg;
    atomic_fetch_add(&j->arrived, 1);
    unsigned spins = 0;
    while (!atomic_load(&j->done))
        sleep_us(spins++ < 100 ? 20 : 500);
    join_unref(j);
}

struct unit {
    struct ncclComm *c;
    emu_stream *stream;
    struct join *join; /* or NULL */
    uint64_t ticket;
    size_t nops;
    struct op ops[];
};

static int run_ops(struct unit *u, emu_ctx *ctx)
{
    struct ncclComm *c = u->c;
    struct waiter w;
    waiter_init(&w, c, ctx, "group");
    if (c->delay_us)
        sleep_us((unsigned)rand_r(&c->rng) % c->delay_us);
    for (size_t i = 0; i < u->nops; i++) {
        struct op *o = &u->ops[i];
        uint64_t k = ++c->ops_run;
        int code;
        w.what = op_names[o->kind];
        if (rule_hit(c->fail, c->nfail, c->rank, k, &code))
            return comm_fail(c, code, "%s: injected failure of op %llu (DEVQ_EMU_NCCL_FAIL)",
                             op_names[o->kind], (unsigned long long)k);
        if (rule_hit(c->hang, c->nhang, c->rank, k, NULL)) {
            while (!atomic_load(&c->aborted))
                sleep_us(1000);
            return ncclInvalidUsage;
        }
        if (o->kind == OP_SEND || o->kind == OP_RECV) {
            if (rule_hit(c->die, c->ndie, c->rank, k, NULL)) {
                fprintf(stderr, "emulated " LIB ": rank %d: DEVQ_EMU_NCCL_DIE: exiting in %s\n", c->rank,
                        op_names[o->kind]);
                _exit(DIE_STATUS);
            }
            continue;
        }
        waiter_progress(&w);
        int err = run_collective(&w, o, rule_hit(c->die, c->ndie, c->rank, k, NULL));
        if (err)
            return err;
    }
    waiter_progress(&w);
    w.what = "ncclSend/ncclRecv";
    return run_p2p(&w, u->ops, u->nops);
}

static void run_unit(void *arg, int status)
{
    struct unit *u = arg;
    struct ncclComm *c = u->c;
    emu_ctx *ctx = eng->stream_ctx(u->stream);
    /* Ops of a communicator run in issue order, whatever their stream. */
    pthread_mutex_lock(&c->mu);
    uint64_t start = now_ms();
    bool late = false;
    while (c->done != u->ticket && !atomic_load(&c->aborted) && !late) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        late = now_ms() - start >= c->timeout_ms;
    }
    pthread_mutex_unlock(&c->mu);

    /* The other streams of the group reach their joiners first. */
    int jerr = 0;
    if (u->join && !late && !status) {
        struct waiter w;
        waiter_init(&w, c, ctx, "a group on several streams");
        while (atomic_load(&u->join->arrived) < atomic_load(&u->join->njoin) &&
               (jerr = waiter_check(&w)) == 0)
            waiter_backoff(&w);
    }

    int err = 0;
    if (atomic_load(&c->aborted))
        err = 0; /* ends quietly: the user aborted */
    else if (jerr)
        err = jerr;
    else if (status)
        err = comm_fail(c, ncclUnhandledCudaError, "%s: the stream failed before the op ran (%d)",
                        op_names[u->ops[0].kind], status);
    else if (late)
        err = comm_fail(c, ncclSystemError, "%s: timed out waiting for the communicator's earlier ops",
                        op_names[u->ops[0].kind]);
    else if ((err = atomic_load(&c->async_err)) == 0)
        err = run_ops(u, ctx);
    /* A failed op fails its stream like a sticky kernel error; an abort
     * only ends the op. */
    if (err && !status && !atomic_load(&c->aborted))
        eng->ctx_poison(ctx, EMU_E_LAUNCH_FAILED);

    if (u->join) {
        atomic_store(&u->join->done, true);
        join_unref(u->join);
    }
    pthread_mutex_lock(&c->mu);
    c->done++;
    c->pending--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    comm_unref(c);
    free(u);
}

static ncclResult_t enqueue_unit(struct ncclComm *c, emu_stream *s, const struct op *ops, size_t n,
                                 struct join *join)
{
    struct unit *u = malloc(sizeof *u + n * sizeof *ops);
    if (!u)
        return BAD(ncclSystemError, "out of memory");
    u->c = c;
    u->stream = s;
    u->join = join;
    u->nops = n;
    memcpy(u->ops, ops, n * sizeof *ops);
    atomic_fetch_add(&c->refs, 1);
    pthread_mutex_lock(&c->mu);
    u->ticket = c->issued++;
    c->pending++;
    int st = eng->enqueue_host_fn(s, run_unit, u, true);
    if (st) {
        c->issued--;
        c->pending--;
    }
    pthread_mutex_unlock(&c->mu);
    if (st) {
        free(u);
        /* A failed device: the op never runs, and the peers must not
         * wait for it (NCCL's would hang; the emulator tells them). */
        if (eng->ctx_status(eng->stream_ctx(s)))
            comm_fail(c, ncclUnhandledCudaError, "%s: the device's context failed (status %d)",
                      op_names[ops[0].kind], st);
        comm_unref(c);
        return BAD(ncclUnhandledCudaError, "%s: cannot enqueue on the stream (emulated driver status %d)",
                   op_names[ops[0].kind], st);
    }
    return ncclSuccess;
}

/* ---- groups ---- */

struct pending {
    struct pending *next;
    struct ncclComm *c; /* an op's, or an init to wait for */
    emu_stream *stream; /* NULL for an init */
    bool joiner;        /* the first op of its communicator on this other stream */
    struct op op;
};

static TLS int group_depth;
static TLS struct pending *group_head, *group_tail;

static void group_add(struct pending *p)
{
    p->next = NULL;
    if (group_tail)
        group_tail->next = p;
    else
        group_head = p;
    group_tail = p;
}

/* ---- the API ---- */

EXPORT ncclResult_t ncclGetVersion(int *version)
{
    CHECK_INJECT("ncclGetVersion");
    if (!version)
        return BAD(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    const char *v = getenv("DEVQ_EMU_NCCL_VERSION");
    *version = v && *v ? atoi(v) : DEFAULT_VERSION;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    CHECK_INJECT("ncclGetUniqueId");
    if (!id)
        return BAD(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return BAD(ncclSystemError, "ncclGetUniqueId: getrandom: %s", strerror(errno));
    memset(id, 0, sizeof *id);
    int n = snprintf(id->internal, sizeof id->internal, ID_PREFIX);
    for (int i = 0; i < 16; i++)
        n += snprintf(id->internal + n, sizeof id->internal - (size_t)n, "%02x", rnd[i]);
    return ncclSuccess;
}

static void parse_rules(const char *env, struct rule *rules, int *n)
{
    *n = 0;
    const char *v = getenv(env);
    if (!v)
        return;
    char *copy = strdup(v), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && *n < MAX_RULES;
         tok = strtok_r(NULL, ",", &save)) {
        char *a = strchr(tok, ':');
        if (!a)
            continue;
        char *b = strchr(a + 1, ':');
        if (b)
            *b = '\0';
        rules[*n] =
            (struct rule){ atoi(tok), strtoull(a + 1, NULL, 10), b ? parse_code(b + 1) : ncclSystemError };
        (*n)++;
    }
    free(copy);
}

static unsigned env_uint(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

/* Wait until every rank has joined. */
static ncclResult_t init_wait(struct ncclComm *c)
{
    struct waiter w;
    waiter_init(&w, c, NULL, "ncclCommInitRank");
    while (atomic_load(&c->shm->arrived) < c->nranks) {
        int err = waiter_check(&w);
        if (err) {
            shm_unlink(c->name);
            set_last("%.400s (%d of %d ranks joined)", c->errmsg, atomic_load(&c->shm->arrived), c->nranks);
            return (ncclResult_t)err;
        }
        waiter_backoff(&w);
    }
    c->init_done = true;
    return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const char *hex, int rank)
{
    if (!engine())
        return BAD(ncclSystemError, "ncclCommInitRank: %s", eng_error);
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        return BAD(ncclSystemError, "out of memory");
    c->magic = COMM_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    c->size = shm_size(nranks);
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    snprintf(c->hex, sizeof c->hex, "%s", hex);
    snprintf(c->name, sizeof c->name, "/devq-emu-nccl-%s", hex);
    c->timeout_ms = env_uint("DEVQ_EMU_NCCL_TIMEOUT_MS", 10000);
    c->delay_us = env_uint("DEVQ_EMU_NCCL_DELAY", 0);
    c->rng = (unsigned)rank * 2654435761u ^ env_uint("DEVQ_EMU_SEED", (unsigned)now_ms());
    parse_rules("DEVQ_EMU_NCCL_FAIL", c->fail, &c->nfail);
    parse_rules("DEVQ_EMU_NCCL_HANG", c->hang, &c->nhang);
    parse_rules("DEVQ_EMU_NCCL_DIE", c->die, &c->ndie);

    int fd = shm_open(c->name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 ||
        ((size_t)st.st_size < c->size && ftruncate(fd, (off_t)c->size) != 0)) {
        set_last("ncclCommInitRank: shared memory %s: %s", c->name, strerror(errno));
        if (fd >= 0)
            close(fd);
        comm_unref(c);
        return ncclSystemError;
    }
    void *p = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        set_last("ncclCommInitRank: mmap %s: %s", c->name, strerror(errno));
        comm_unref(c);
        return ncclSystemError;
    }
    c->shm = p;
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&c->shm->magic, &zero, SHM_MAGIC);
    int none = 0;
    atomic_compare_exchange_strong(&c->shm->nranks, &none, nranks);
    if (atomic_load(&c->shm->nranks) != nranks) {
        set_last("ncclCommInitRank: rank %d says %d ranks, another rank said %d", rank, nranks,
                 atomic_load(&c->shm->nranks));
        comm_unref(c);
        return ncclInvalidUsage;
    }
    none = 0;
    if (!atomic_compare_exchange_strong(&c->shm->rank[rank].joined, &none, 1)) {
        set_last("ncclCommInitRank: rank %d joined twice", rank);
        comm_unref(c);
        return ncclInvalidUsage;
    }
    atomic_store(&c->shm->rank[rank].pid, (int)getpid());
    if (atomic_fetch_add(&c->shm->arrived, 1) + 1 == nranks)
        shm_unlink(c->name); /* all mapped it: no leftover */
    *out = c;
    if (group_depth > 0) {
        struct pending *pd = calloc(1, sizeof *pd);
        if (!pd) {
            *out = NULL;
            comm_unref(c);
            return BAD(ncclSystemError, "out of memory");
        }
        pd->c = c;
        group_add(pd);
        return ncclSuccess;
    }
    ncclResult_t r = init_wait(c);
    if (r != ncclSuccess) {
        *out = NULL;
        c->magic = 0;
        comm_unref(c);
    }
    return r;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    CHECK_INJECT("ncclCommInitRank");
    if (!comm)
        return BAD(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || nranks > MAX_RANKS)
        return BAD(ncclInvalidArgument, "ncclCommInitRank: nranks %d (1..%d)", nranks, MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return BAD(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d", rank, nranks);
    size_t pl = strlen(ID_PREFIX);
    if (memcmp(id.internal, ID_PREFIX, pl) != 0 || strnlen(id.internal + pl, 33) != 32)
        return BAD(ncclInvalidArgument, "ncclCommInitRank: not a unique id of ncclGetUniqueId");
    char hex[33];
    memcpy(hex, id.internal + pl, 32);
    hex[32] = '\0';
    return init_rank(comm, nranks, hex, rank);
}

static ncclResult_t check_comm(const char *func, struct ncclComm *c)
{
    if (!comm_ok(c))
        return BAD(ncclInvalidArgument, "%s: invalid communicator", func);
    int e = atomic_load(&c->async_err);
    if (e) {
        set_last("%s", c->errmsg);
        return (ncclResult_t)e;
    }
    return ncclSuccess;
}

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    (void)config;
    CHECK_INJECT("ncclCommSplit");
    ncclResult_t r = check_comm("ncclCommSplit", comm);
    if (r)
        return r;
    if (!newcomm || color < NCCL_SPLIT_NOCOLOR)
        return BAD(ncclInvalidArgument, "ncclCommSplit: %s", newcomm ? "negative color" : "newcomm is NULL");
    struct ncclComm *c = comm;
    struct rank_hdr *rh = c->shm->rank;
    uint64_t s = ++c->split_seq;
    struct waiter w;
    waiter_init(&w, c, NULL, "ncclCommSplit");
    for (int q = 0; q < c->nranks; q++)
        while (atomic_load(&rh[q].split_ack) < s - 1) {
            int err = waiter_check(&w);
            if (err)
                return BAD((ncclResult_t)err, "%s", c->errmsg);
            waiter_backoff(&w);
        }
    rh[c->rank].color = color;
    rh[c->rank].key = key;
    atomic_store(&rh[c->rank].split_seq, s);
    for (int q = 0; q < c->nranks; q++)
        while (atomic_load(&rh[q].split_seq) < s) {
            int err = waiter_check(&w);
            if (err)
                return BAD((ncclResult_t)err, "%s", c->errmsg);
            waiter_backoff(&w);
        }
    int n = 0, me = 0;
    for (int q = 0; q < c->nranks; q++) {
        if (rh[q].color != color)
            continue;
        if (rh[q].key < key || (rh[q].key == key && q < c->rank))
            me++;
        n++;
    }
    atomic_store(&rh[c->rank].split_ack, s);
    *newcomm = NULL;
    if (color == NCCL_SPLIT_NOCOLOR)
        return ncclSuccess;
    char seed[96], hex[33];
    snprintf(seed, sizeof seed, "%s/%llu/%d", c->hex, (unsigned long long)s, color);
    snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)fnv(seed, 0xcbf29ce484222325ull),
             (unsigned long long)fnv(seed, 0x84222325cbf29ce4ull));
    return init_rank(newcomm, n, hex, me);
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    CHECK_INJECT("ncclCommDestroy");
    if (!comm_ok(comm))
        return BAD(ncclInvalidArgument, "ncclCommDestroy: invalid communicator");
    struct ncclComm *c = comm;
    /* Like ncclCommFinalize: the ops issued finish first (or fail). */
    pthread_mutex_lock(&c->mu);
    while (c->pending)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    /* Left cleanly: everything this rank owed its peers was delivered,
     * so its process ending later is no failure to a peer still busy
     * with others (waiter_check looks only at pids > 0). */
    if (c->shm)
        atomic_store(&c->shm->rank[c->rank].pid, 0);
    c->magic = 0;
    comm_unref(c);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    CHECK_INJECT("ncclCommAbort");
    if (!comm_ok(comm))
        return BAD(ncclInvalidArgument, "ncclCommAbort: invalid communicator");
    struct ncclComm *c = comm;
    c->magic = 0;
    atomic_store(&c->aborted, true);
    int zero = 0;
    atomic_compare_exchange_strong(&c->shm->fail, &zero, (c->rank + 1) << 8 | ncclRemoteError);
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    /* Units still queued keep their reference and end at once when their
     * stream reaches them. */
    comm_unref(c);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!comm_ok(comm) || !asyncError)
        return BAD(ncclInvalidArgument, "ncclCommGetAsyncError: %s",
                   asyncError ? "invalid communicator" : "asyncError is NULL");
    *asyncError = (ncclResult_t)atomic_load(&comm->async_err);
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm_ok(comm) || !count)
        return BAD(ncclInvalidArgument, "ncclCommCount: invalid argument");
    *count = comm->nranks;
    return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm_ok(comm) || !rank)
        return BAD(ncclInvalidArgument, "ncclCommUserRank: invalid argument");
    *rank = comm->rank;
    return ncclSuccess;
}

EXPORT const char *ncclGetLastError(ncclComm_t comm)
{
    if (comm_ok(comm) && atomic_load(&comm->async_err))
        return comm->errmsg;
    return last_error;
}

static ncclResult_t submit(const char *func, struct ncclComm *c, void *stream, struct op *o)
{
    CHECK_INJECT(func);
    ncclResult_t r = check_comm(func, c);
    if (r)
        return r;
    size_t esz = emu_nccl_dtype_size(o->dtype);
    if (!esz || o->dtype < 0)
        return BAD(ncclInvalidArgument, "%s: invalid data type %d", func, o->dtype);
    if ((o->kind == OP_ALLREDUCE || o->kind == OP_REDUCESCATTER) &&
        (o->redop < ncclSum || o->redop > ncclAvg))
        return BAD(ncclInvalidArgument, "%s: invalid reduction operation %d", func, o->redop);
    size_t mult = o->kind == OP_ALLGATHER || o->kind == OP_REDUCESCATTER ? (size_t)c->nranks : 1;
    if (o->count > SIZE_MAX / esz / mult)
        return BAD(ncclInvalidArgument, "%s: count %zu too large", func, o->count);
    if (o->count && ((o->kind != OP_RECV && !o->send && !(o->kind == OP_BROADCAST && o->root != c->rank)) ||
                     (o->kind != OP_SEND && !o->recv)))
        return BAD(ncclInvalidArgument, "%s: NULL buffer", func);
    if (o->kind == OP_BROADCAST && (o->root < 0 || o->root >= c->nranks))
        return BAD(ncclInvalidArgument, "%s: root %d of %d ranks", func, o->root, c->nranks);
    if ((o->kind == OP_SEND || o->kind == OP_RECV) && (o->peer < 0 || o->peer >= c->nranks))
        return BAD(ncclInvalidArgument, "%s: peer %d of %d ranks", func, o->peer, c->nranks);
    emu_stream *s = stream;
    if (!s || !eng->stream_valid(s))
        return BAD(ncclInvalidArgument, "%s: invalid stream (the emulator has no default stream)", func);
    if (group_depth > 0) {
        struct pending *p = calloc(1, sizeof *p);
        if (!p)
            return BAD(ncclSystemError, "out of memory");
        p->c = c;
        p->stream = s;
        p->op = *o;
        group_add(p);
        return ncclSuccess;
    }
    return enqueue_unit(c, s, o, 1, NULL);
}

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, void *stream)
{
    struct op o = { .kind = OP_ALLREDUCE,
                    .dtype = datatype,
                    .redop = op,
                    .send = sendbuff,
                    .recv = recvbuff,
                    .count = count };
    return submit("ncclAllReduce", comm, stream, &o);
}

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, void *stream)
{
    struct op o = {
        .kind = OP_ALLGATHER, .dtype = datatype, .send = sendbuff, .recv = recvbuff, .count = sendcount
    };
    return submit("ncclAllGather", comm, stream, &o);
}

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, void *stream)
{
    struct op o = { .kind = OP_REDUCESCATTER,
                    .dtype = datatype,
                    .redop = op,
                    .send = sendbuff,
                    .recv = recvbuff,
                    .count = recvcount };
    return submit("ncclReduceScatter", comm, stream, &o);
}

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, void *stream)
{
    struct op o = { .kind = OP_BROADCAST,
                    .dtype = datatype,
                    .root = root,
                    .send = sendbuff,
                    .recv = recvbuff,
                    .count = count };
    return submit("ncclBroadcast", comm, stream, &o);
}

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, void *stream)
{
    struct op o = { .kind = OP_SEND, .dtype = datatype, .peer = peer, .send = sendbuff, .count = count };
    return submit("ncclSend", comm, stream, &o);
}

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             void *stream)
{
    struct op o = { .kind = OP_RECV, .dtype = datatype, .peer = peer, .recv = recvbuff, .count = count };
    return submit("ncclRecv", comm, stream, &o);
}

EXPORT ncclResult_t ncclGroupStart(void)
{
    CHECK_INJECT("ncclGroupStart");
    group_depth++;
    return ncclSuccess;
}

/* One unit per communicator, on the stream of its first op. */
EXPORT ncclResult_t ncclGroupEnd(void)
{
    CHECK_INJECT("ncclGroupEnd");
    if (group_depth <= 0)
        return BAD(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group_depth > 0)
        return ncclSuccess;
    struct pending *list = group_head;
    group_head = group_tail = NULL;
    ncclResult_t res = ncclSuccess;
    /* Communicators created in the group: all ranks join, then wait. */
    for (struct pending *p = list; p; p = p->next)
        if (!p->stream && !p->c->init_done) {
            ncclResult_t r = init_wait(p->c);
            if (r != ncclSuccess && res == ncclSuccess)
                res = r; /* the communicator holds the error */
        }
    size_t n = 0;
    for (struct pending *p = list; p; p = p->next)
        n++;
    struct op *ops = n ? malloc(n * sizeof *ops) : NULL;
    bool *taken = n ? calloc(n, sizeof *taken) : NULL;
    bool oom = n && (!ops || !taken);
    if (oom)
        res = BAD(ncclSystemError, "out of memory");
    size_t i = 0;
    for (struct pending *p = oom ? NULL : list; p; p = p->next, i++) {
        if (!p->stream || taken[i])
            continue;
        size_t k = 0, j = i, nother = 0;
        for (struct pending *q = p; q; q = q->next, j++)
            if (q->stream && q->c == p->c) {
                taken[j] = true;
                ops[k] = q->op;
                /* the other streams, each once */
                bool seen = q->stream == p->stream;
                for (struct pending *e = p; e != q && !seen; e = e->next)
                    seen = e->stream == q->stream && e->c == p->c;
                if (!seen) {
                    q->joiner = true;
                    nother++;
                }
                k++;
            }
        struct join *jn = NULL;
        if (nother) {
            jn = calloc(1, sizeof *jn);
            if (!jn) {
                if (res == ncclSuccess)
                    res = BAD(ncclSystemError, "out of memory");
                continue;
            }
            atomic_init(&jn->refs, 1 + (int)nother);
            atomic_init(&jn->njoin, (int)nother);
        }
        ncclResult_t r = enqueue_unit(p->c, p->stream, ops, k, jn);
        if (r != ncclSuccess) {
            free(jn);
            if (res == ncclSuccess)
                res = r;
            continue;
        }
        for (struct pending *q = p; q && jn; q = q->next)
            if (q->joiner && q->c == p->c) {
                if (eng->enqueue_host_fn(q->stream, run_joiner, jn, true) != 0) {
                    atomic_fetch_sub(&jn->njoin, 1);
                    join_unref(jn);
                    if (res == ncclSuccess)
                        res = BAD(ncclUnhandledCudaError, "ncclGroupEnd: cannot enqueue on a stream");
                }
            }
    }
    free(ops);
    free(taken);
    while (list) {
        struct pending *next = list->next;
        free(list);
        list = next;
    }
    return res;
}
