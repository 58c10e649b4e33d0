/* SPDX-License-Identifier: MIT */
/* One round of the soak, in a child process: open cpu and cuda (the
 * emulated driver), build and submit a random workload while computing
 * its expected result on the host, wait for everything (every wait has a
 * timeout), then close everything and hand over to soak_check.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "soak_round.h"

const char *const soak_op_names[OP_NKINDS] = { "exec", "copy", "fill", "write", "read", "host_fn" };
static const char *const dev_names[SOAK_NDEV] = { "cpu", "cuda" };

/* ---- randomness: one generator per round, from the round's seed ---- */

static uint64_t rnd(struct soak_round *r)
{
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t below(struct soak_round *r, uint32_t n)
{
    return n ? (uint32_t)(rnd(r) % n) : 0;
}
static bool chance(struct soak_round *r, uint32_t pct)
{
    return below(r, 100) < pct;
}

void soak_fail(struct soak_round *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "SOAK FAILURE round %d (seed %llu, fault %s%s%s): ", r->plan->round,
            (unsigned long long)r->plan->seed, soak_fault_names[r->plan->fault],
            r->plan->emu_fail[0] ? " DEVQ_EMU_FAIL=" : "", r->plan->emu_fail);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    r->failures++;
}

static const char *const known_names[KNOWN_COUNT] = {
    "lost-device-memory",
    "alloc-message",
    "cause-truncated",
    "free-lost-on-error",
};

/* The four notes were lib bugs, fixed since (tests/unit/test_strict_notes.c
 * keeps each one fixed): they fail a round unless SOAK_STRICT=0 turns
 * them back into notes. */
void soak_known(struct soak_round *r, enum soak_known k, const char *fmt, ...)
{
    static int strict = -1;
    if (strict < 0)
        strict = !(getenv("SOAK_STRICT") && *getenv("SOAK_STRICT") == '0');
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (strict) {
        soak_fail(r, "[lib bug %s, fixed before: see tests/unit/test_strict_notes.c] %s", known_names[k],
                  msg);
        return;
    }
    r->notes++;
    if (!r->noted[k]) {
        r->noted[k] = true;
        printf("round %d: note: lib bug %s (SOAK_STRICT=0 made it a note): %s\n", r->plan->round,
               known_names[k], msg);
    }
}

/* A call outside any batch failed.  Legal only when the round injects a
 * cuda fault, and then its message must name that fault. */
static bool call_ok(struct soak_round *r, int rc, int dev, const char *what)
{
    if (rc == 0)
        return true;
    const struct soak_plan *p = r->plan;
    const char *msg = devq_errmsg();
    bool cuda_fault = p->fault == FAULT_CUDA_CALL || p->fault == FAULT_CUDA_STICKY;
    r->call_errors++;
    snprintf(r->call_error_msg, sizeof r->call_error_msg, "%s: %d %s", what, rc, msg);
    if (p->fault == FAULT_CUDA_STICKY && dev == 1)
        r->device_lost = true;
    if (!cuda_fault || dev != 1)
        soak_fail(r, "%s on %s failed with no fault injected there: %d %s", what, dev_names[dev], rc, msg);
    else if (!strstr(msg, p->error) && !strstr(msg, p->func)) {
        if (strstr(what, "devq_buffer_alloc") && (rc == -ENODEV || rc == -ENOMEM || rc == -EIO)) {
            soak_known(r, KNOWN_ALLOC_MESSAGE, "%s fails (%d) with a message that does not name %s: %s", what,
                       rc, p->error, msg);
        } else {
            soak_fail(r, "%s on cuda failed but its message does not name the injected %s (%s): %d %s", what,
                      p->func, p->error, rc, msg);
        }
    }
    return false;
}

/* SOAK_TRACE=1: a stderr line per op recorded, for replaying a failure. */
static int trace_on = -1;
#define TRACE(...)                                       \
    do {                                                 \
        if (trace_on < 0)                                \
            trace_on = getenv("SOAK_TRACE") != NULL;     \
        if (trace_on)                                    \
            fprintf(stderr, "soak-trace: " __VA_ARGS__); \
    } while (0)

/* ---- buffers and their reference content ---- */

static void *keep(struct soak_round *r, size_t bytes)
{
    if (r->nhost_blocks == (int)(sizeof r->host_blocks / sizeof r->host_blocks[0]))
        return NULL;
    void *p = calloc(1, bytes);
    if (p)
        r->host_blocks[r->nhost_blocks++] = p;
    return p;
}

/* Buffer hazards follow submission order, deferred batches included
 * (lib/hazard.c): work submitted on other queues after a batch held up
 * by the host may use the buffers it touched, and is held up with it
 * (touch() spreads the hold), so the model needs no special care.  Until
 * lib did, such work ran first (stale reads, lost writes) and the soak
 * kept other queues off those buffers; SOAK_DEFERRED_HAZARDS=0 does that
 * again. */
static bool deferred_hazards(void)
{
    static int on = -1;
    if (on < 0)
        on = !(getenv("SOAK_DEFERRED_HAZARDS") &&
               *getenv("SOAK_DEFERRED_HAZARDS") == '0'); /* fixed in lib: on unless =0 */
    return on;
}

/* SOAK_XDEV_RELEASE: mid-round, wait for batches held only by the other
 * device and drop that hold (release_xdev), and let host probes pick
 * cuda batches while a host value is pending.  Both need lib to order a
 * wait for a batch after that batch alone: lib used to align to a
 * stream's tail or to a checkpoint recorded after a wait of the same
 * unit, so a batch also waited for whatever its producer stream was
 * later ordered behind (a device-side wait for an unset host value, or
 * another stream held by one): a false dependency, and a hang for a
 * valid program (the host waits for the batch before setting the value). */
/* Fixed in lib (tests/unit/test_held_alignment.c): on unless =0. */
static bool xdev_release(void)
{
    static int on = -1;
    if (on < 0)
        on = !(getenv("SOAK_XDEV_RELEASE") &&
               *getenv("SOAK_XDEV_RELEASE") == '0'); /* fixed in lib: on unless =0 */
    return on;
}

static bool multi_device_waits(void)
{
    static int on = -1;
    if (on < 0)
        on = !(getenv("SOAK_MULTI_DEVICE_WAITS") &&
               *getenv("SOAK_MULTI_DEVICE_WAITS") == '0'); /* fixed in lib: on unless =0 */
    return on;
}

static bool aligned_then_deferred(void)
{
    static int on = -1;
    if (on < 0)
        on = !(getenv("SOAK_ALIGNED_THEN_DEFERRED") &&
               *getenv("SOAK_ALIGNED_THEN_DEFERRED") == '0'); /* fixed in lib: on unless =0 */
    return on;
}

/* A live buffer of dev that queue qi may touch (-1 if none). */
static int live_buf(struct soak_round *r, int dev, int not, int qi)
{
    int cand[SOAK_MAX_BUFS], n = 0;
    for (int i = 0; i < r->nbufs; i++)
        if (r->buf[i].live && r->buf[i].dev == dev &&
            i != not &&(!r->buf[i].block || r->buf[i].block_q == qi || deferred_hazards()))
            cand[n++] = i;
    return n ? cand[below(r, (uint32_t)n)] : -1;
}

static int queue_of(struct soak_round *r, int dev, bool compute)
{
    int cand[SOAK_QPERDEV], n = 0;
    for (int i = 0; i < SOAK_NQ; i++)
        if (r->q[i].dev == dev && (!compute || r->q[i].kind == DEVQ_QUEUE_COMPUTE))
            cand[n++] = i;
    return cand[below(r, (uint32_t)n)];
}

/* ---- batches ---- */

/* Every fourth cpu batch of a round without injected driver faults is
 * recorded as a graph (devq_queue_begin_capture) and submitted with
 * devq_graph_submit: its results and failures must be those of the
 * one-shot batch the model predicts.  Decided without the round's random
 * stream, so plans and replays are unchanged; SOAK_GRAPHS=0 leaves
 * graphs out. */
static bool as_graph(struct soak_round *r, int b, int qi)
{
    static int graphs = -1;
    if (graphs < 0) {
        const char *e = getenv("SOAK_GRAPHS");
        graphs = !(e && *e == '0');
    }
    return graphs && b % 4 == 1 && r->q[qi].dev == 0 &&
           (r->plan->fault == FAULT_NONE || r->plan->fault == FAULT_CPU_KERNEL ||
            r->plan->fault == FAULT_HOST_SIGNAL);
}

/* The batch's submit: one-shot, or its capture made a graph and
 * submitted once.  A capture that fails (a recording error) made no
 * graph and fails no signal: the soak fails the batch's signal with the
 * error, as a one-shot submit would have. */
static int submit_batch(struct soak_round *r, int b)
{
    struct soak_batch *sb = &r->batch[b];
    devq_queue *q = r->q[sb->q].q;
    if (!sb->graph)
        return devq_queue_submit(q);
    devq_graph *g = NULL;
    devq_graph_exec *ge = NULL;
    int rc = devq_queue_end_capture(q, &g);
    if (rc == 0) {
        rc = devq_graph_instantiate(g, &ge);
        devq_graph_destroy(g);
    }
    if (rc == 0) {
        rc = devq_graph_submit(q, ge);
        devq_graph_exec_destroy(ge); /* in flight: it holds its own */
    }
    if (rc < 0)
        devq_signal_fail(sb->sig, rc);
    return rc;
}

static int batch_begin(struct soak_round *r, int qi)
{
    if (r->nbatches == SOAK_MAX_BATCHES)
        return -1;
    int b = r->nbatches;
    struct soak_batch *sb = &r->batch[b];
    memset(sb, 0, sizeof *sb);
    sb->q = qi;
    if (devq_signal_create(0, &sb->sig) < 0) {
        soak_fail(r, "devq_signal_create: %s", devq_errmsg());
        return -1;
    }
    sb->mop_first = sb->mop_end = r->nmops;
    sb->block = r->q_block[qi];
    r->ntouched = 0;
    r->nbatches++;
    if (as_graph(r, b, qi)) {
        int rc = devq_queue_begin_capture(r->q[qi].q);
        if (rc < 0)
            soak_fail(r, "devq_queue_begin_capture for batch %d: %d %s", b, rc, devq_errmsg());
        sb->graph = rc == 0;
    }
    return b;
}

/* Append an op of batch b to the model (soak_model.c). */
static struct soak_mop *mop(struct soak_round *r, int b, int kind, int dst, int src)
{
    static struct soak_mop spill; /* the model is full: the round fails, the op goes here */
    if (r->nmops == SOAK_MAX_MOPS) {
        if (!r->aborted)
            soak_fail(r, "more than %d ops: raise SOAK_MAX_MOPS", SOAK_MAX_MOPS);
        r->aborted = true;
        return &spill;
    }
    struct soak_mop *m = &r->mop[r->nmops++];
    *m = (struct soak_mop){
        .kind = (uint8_t)kind, .batch = b, .dst = dst, .src = src, .read = -1, .wait = -1
    };
    r->batch[b].mop_end = r->nmops;
    return m;
}

static void follow(struct soak_round *r, int b, int w)
{
    struct soak_batch *sb = &r->batch[b];
    TRACE("batch %d q%d: wait batch %d\n", b, sb->q, w);
    int rc = devq_queue_wait(r->q[sb->q].q, r->batch[w].sig, 1);
    if (rc < 0) {
        call_ok(r, rc, r->q[sb->q].dev, "devq_queue_wait");
        return;
    }
    mop(r, b, MOP_WAIT, -1, -1)->wait = w;
    sb->host_dep |= r->batch[w].host_dep;
    if (r->q[r->batch[w].q].dev == r->q[sb->q].dev)
        sb->aligned = true;
    else if (r->native_wait[r->q[sb->q].dev])
        sb->device_waits++;
    sb->block |= r->batch[w].block;
    int wdev = r->q[r->batch[w].q].dev, dev = r->q[sb->q].dev;
    if (wdev != dev && !r->native_wait[dev])
        sb->block |= BLOCK_XDEV; /* lib defers it until the other device is done */
    /* On a device with device-side waits, lib turns a wait on a value
     * produced on the same device into a wait for the producer stream's
     * *current tail*, later work included: if that later work is held
     * up, so is this batch (a false dependency, reported as a lib bug;
     * SOAK_TAIL_WAITS=1 leaves it out of the model to show the hang). */
    /* Fixed in lib (checkpoints before device-side waits): modelled as
     * fixed unless SOAK_TAIL_WAITS=0. */
    const char *tw = getenv("SOAK_TAIL_WAITS");
    if (wdev == dev && r->native_wait[dev] && tw && *tw == '0')
        sb->block |= r->q_block[r->batch[w].q];
}

static void follow_host(struct soak_round *r, int b)
{
    struct soak_batch *sb = &r->batch[b];
    uint64_t v = ++r->host_next;
    TRACE("batch %d q%d: wait host >= %llu\n", b, sb->q, (unsigned long long)v);
    int rc = devq_queue_wait(r->q[sb->q].q, r->host_sig, v);
    if (rc < 0) {
        call_ok(r, rc, r->q[sb->q].dev, "devq_queue_wait(host signal)");
        return;
    }
    mop(r, b, MOP_HOST_WAIT, -1, -1);
    sb->host_dep = true;
    sb->block |= BLOCK_HOST;
    if (r->native_wait[r->q[sb->q].dev])
        sb->device_waits++;
}

static void touch(struct soak_round *r, int b, int bi)
{
    r->batch[b].block |= r->buf[bi].block;
    /* lib's tracker makes a stream wait for the *tail* of the stream that
     * last used a buffer (an event recorded at bind time), so a batch
     * also waits for whatever is held up on those queues now. */
    for (int i = 0; i < SOAK_NQ; i++)
        if (r->buf[bi].qmask >> i & 1)
            r->batch[b].block |= r->q_block[i];
    if (r->ntouched < (int)(sizeof r->touched / sizeof r->touched[0]))
        r->touched[r->ntouched++] = bi;
}

static void hostfn_cb(void *arg)
{
    atomic_fetch_add(&((struct soak_batch *)arg)->hostfn_ran, 1);
}

/* A batch of only a signal, submitted right after batch b on its queue:
 * lib completes it at submit when the queue has nothing pending
 * (lib/queue/inline.c), and it must never be set before b settled.  Read
 * in that order (the tail, then b), a set tail with b unsettled is out of
 * order.  Whether it completes is checked after the finishes. */
static void tail_batch(struct soak_round *r, int b)
{
    struct soak_batch *sb = &r->batch[b];
    if (devq_signal_create(0, &sb->tail) < 0) {
        sb->tail = NULL;
        return;
    }
    /* Give b a moment when nothing holds it up, so the tail often finds
     * the queue idle (then it is completed at submit) and sometimes just
     * not yet (b's signal set, its completion not published). */
    if (!sb->block && !sb->host_dep)
        devq_signal_wait(sb->sig, 1, 5 * SOAK_MS);
    int rc = devq_queue_signal(r->q[sb->q].q, sb->tail, 1);
    sb->tail_rc = rc < 0 ? rc : devq_queue_submit(r->q[sb->q].q);
    if (sb->tail_rc < 0) {
        soak_fail(r, "the signal-only batch after batch %d (queue %d): %d %s", b, sb->q, sb->tail_rc,
                  devq_errmsg());
        return;
    }
    if (devq_signal_value(sb->tail) >= 1 && devq_signal_value(sb->sig) < 1 &&
        devq_signal_status(sb->sig) == 0)
        soak_fail(r, "the signal-only batch after batch %d (queue %d) was set before batch %d settled", b,
                  sb->q, b);
}

static void batch_end(struct soak_round *r, int b)
{
    struct soak_batch *sb = &r->batch[b];
    struct soak_queue *q = &r->q[sb->q];
    soak_phase("round %d: submitting batch %d on queue %d (%s)", r->plan->round, b, sb->q, dev_names[q->dev]);
    int rc = devq_queue_signal(q->q, sb->sig, 1);
    if (rc < 0) {
        /* Nothing promised the signal: fail it ourselves, or its
         * followers would wait for good (the user's duty, not lib's). */
        call_ok(r, rc, q->dev, "devq_queue_signal");
        sb->discarded = true;
        devq_signal_fail(sb->sig, rc);
        r->self_failed++;
    }
    for (int i = 0; i < r->ntouched; i++)
        r->buf[r->touched[i]].qmask |= 1u << sb->q;
    if (sb->block) {
        r->q_block[sb->q] |= sb->block;
        for (int i = 0; i < r->ntouched; i++) {
            r->buf[r->touched[i]].block |= sb->block;
            r->buf[r->touched[i]].block_q = sb->q;
        }
    }
    static int nth[SOAK_NQ]; /* lib numbers a queue's batches from 1 */
    TRACE("batch %d q%d: submit (its batch %d)\n", b, sb->q, ++nth[sb->q]);
    sb->submit_rc = submit_batch(r, b);
    if (sb->submit_rc < 0) {
        /* The batch is failed: its signal must say so (checked later). */
        const char *msg = devq_errmsg();
        bool cuda_fault = r->plan->fault == FAULT_CUDA_CALL || r->plan->fault == FAULT_CUDA_STICKY;
        if (!cuda_fault || q->dev != 1)
            soak_fail(r, "devq_queue_submit of batch %d on %s: %d %s", b, dev_names[q->dev], sb->submit_rc,
                      msg);
        if (r->plan->fault == FAULT_CUDA_STICKY && q->dev == 1)
            r->device_lost = true;
    }
    /* Every third batch on cpu (decided without the round's random
     * stream, so plans and replays are unchanged; cuda's fault injection
     * counts driver calls, so not there). */
    if (q->dev == 0 && sb->submit_rc == 0 && b % 3 == 2) {
        tail_batch(r, b);
        TRACE("batch %d q%d: signal-only tail (its batch %d)\n", b, sb->q, ++nth[sb->q]);
    }
}

/* Record one op in batch b and update the reference.  Returns false
 * when recording failed (the batch is then discarded at submit). */
static bool rec(struct soak_round *r, int b, int kind, int rc, const char *what)
{
    struct soak_batch *sb = &r->batch[b];
    int dev = r->q[sb->q].dev;
    if (rc < 0) {
        call_ok(r, rc, dev, what);
        sb->discarded = true; /* the error is sticky: submit drops the batch */
        return false;
    }
    sb->kinds |= 1u << kind;
    r->ops_of_kind[dev][kind]++;
    return true;
}

static uint32_t pick_len(struct soak_round *r, uint32_t max)
{
    return 1 + below(r, max);
}

static void op_exec_mix(struct soak_round *r, int b, int bi)
{
    struct soak_buf *B = &r->buf[bi];
    struct soak_batch *sb = &r->batch[b];
    uint32_t n = B->n, k = (uint32_t)rnd(r);
    devq_arg a[3] = { DEVQ_ARG_BUF(B->b, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n), DEVQ_ARG_VAL(&k) };
    uint32_t local = 32u << below(r, 3);
    devq_launch l = { { n, 1, 1 }, { local, 1, 1 }, 0 };
    touch(r, b, bi);
    if (!rec(r, b, OP_EXEC, devq_queue_exec(r->q[sb->q].q, r->mix[B->dev], a, 3, &l),
             "devq_queue_exec(soak_mix)"))
        return;
    TRACE("batch %d q%d: mix buf %d n %u k %u\n", b, sb->q, bi, n, k);
    struct soak_mop *m = mop(r, b, MOP_MIX, bi, -1);
    m->n = n;
    m->k = k;
}

/* exec WRITE: declares new contents of [0, n), clearing a failure. */
static void op_exec_gen(struct soak_round *r, int b, int bi)
{
    struct soak_buf *B = &r->buf[bi];
    struct soak_batch *sb = &r->batch[b];
    uint32_t n = pick_len(r, B->n), k = (uint32_t)rnd(r);
    devq_arg a[3] = { DEVQ_ARG_BUF(B->b, DEVQ_WRITE), DEVQ_ARG_VAL(&n), DEVQ_ARG_VAL(&k) };
    devq_launch l = { { n, 1, 1 }, { 64, 1, 1 }, 0 };
    touch(r, b, bi);
    if (!rec(r, b, OP_EXEC, devq_queue_exec(r->q[sb->q].q, r->gen[B->dev], a, 3, &l),
             "devq_queue_exec(soak_gen)"))
        return;
    TRACE("batch %d q%d: gen buf %d n %u k %u\n", b, sb->q, bi, n, k);
    struct soak_mop *m = mop(r, b, MOP_GEN, bi, -1);
    m->n = n;
    m->k = k;
}

static void op_exec_combine(struct soak_round *r, int b, int di, int si)
{
    struct soak_buf *D = &r->buf[di], *S = &r->buf[si];
    struct soak_batch *sb = &r->batch[b];
    uint32_t n = D->n < S->n ? D->n : S->n;
    devq_arg a[3] = { DEVQ_ARG_BUF(D->b, DEVQ_READ_WRITE), DEVQ_ARG_BUF(S->b, DEVQ_READ), DEVQ_ARG_VAL(&n) };
    devq_launch l = { { n, 1, 1 }, { 64, 1, 1 }, 0 };
    touch(r, b, di);
    touch(r, b, si);
    if (!rec(r, b, OP_EXEC, devq_queue_exec(r->q[sb->q].q, r->combine[D->dev], a, 3, &l),
             "devq_queue_exec(soak_combine)"))
        return;
    TRACE("batch %d q%d: combine buf %d <- buf %d n %u\n", b, sb->q, di, si, n);
    mop(r, b, MOP_COMBINE, di, si)->n = n;
}

static void op_copy(struct soak_round *r, int b, int di, int si)
{
    struct soak_buf *D = &r->buf[di], *S = &r->buf[si];
    uint32_t max = D->n < S->n ? D->n : S->n, n = pick_len(r, max);
    uint32_t doff = below(r, D->n - n + 1), soff = below(r, S->n - n + 1);
    touch(r, b, di);
    touch(r, b, si);
    int rc = devq_queue_copy(r->q[r->batch[b].q].q, D->b, doff * 4u, S->b, soff * 4u, n * 4u);
    if (!rec(r, b, OP_COPY, rc, "devq_queue_copy"))
        return;
    TRACE("batch %d q%d: copy buf %d[%u] <- buf %d[%u] n %u\n", b, r->batch[b].q, di, doff, si, soff, n);
    struct soak_mop *m = mop(r, b, MOP_COPY, di, si);
    m->doff = doff;
    m->soff = soff;
    m->n = n;
}

static void op_fill(struct soak_round *r, int b, int di, bool whole)
{
    struct soak_buf *D = &r->buf[di];
    uint32_t n = whole ? D->n : pick_len(r, D->n), off = whole ? 0 : below(r, D->n - n + 1);
    uint8_t byte = (uint8_t)rnd(r);
    touch(r, b, di);
    int rc = devq_queue_fill(r->q[r->batch[b].q].q, D->b, off * 4u, n * 4u, byte);
    if (!rec(r, b, OP_FILL, rc, "devq_queue_fill"))
        return;
    TRACE("batch %d q%d: fill buf %d[%u] n %u byte %02x\n", b, r->batch[b].q, di, off, n, byte);
    struct soak_mop *m = mop(r, b, MOP_FILL, di, -1);
    m->doff = off;
    m->n = n;
    m->k = byte;
}

static void op_write(struct soak_round *r, int b, int di, bool whole)
{
    struct soak_buf *D = &r->buf[di];
    uint32_t n = whole ? D->n : pick_len(r, D->n), off = whole ? 0 : below(r, D->n - n + 1);
    uint32_t *src = keep(r, n * 4u);
    if (!src)
        return;
    for (uint32_t j = 0; j < n; j++)
        src[j] = (uint32_t)rnd(r);
    touch(r, b, di);
    int rc = devq_queue_write(r->q[r->batch[b].q].q, D->b, off * 4u, src, n * 4u);
    if (!rec(r, b, OP_WRITE, rc, "devq_queue_write"))
        return;
    TRACE("batch %d q%d: write buf %d[%u] n %u (%08x)\n", b, r->batch[b].q, di, off, n, src[0]);
    struct soak_mop *m = mop(r, b, MOP_WRITE, di, -1);
    m->doff = off;
    m->n = n;
    m->data = src;
}

/* Write what an earlier batch (perhaps on the other device) read into
 * host memory: the batch must wait for that read first. */
static void op_write_staged(struct soak_round *r, int b, int di, int st)
{
    struct soak_buf *D = &r->buf[di];
    struct soak_staging *S = &r->staging[st];
    uint32_t n = S->n < D->n ? S->n : D->n, off = below(r, D->n - n + 1);
    follow(r, b, S->batch);
    touch(r, b, di);
    int rc = devq_queue_write(r->q[r->batch[b].q].q, D->b, off * 4u, S->data, n * 4u);
    if (!rec(r, b, OP_WRITE, rc, "devq_queue_write(staged)"))
        return;
    TRACE("batch %d q%d: staged write buf %d[%u] n %u from batch %d\n", b, r->batch[b].q, di, off, n,
          S->batch);
    struct soak_mop *m = mop(r, b, MOP_STAGED, di, -1);
    m->doff = off;
    m->n = n;
    m->read = S->read;
}

static void op_read(struct soak_round *r, int b, int si, bool whole)
{
    struct soak_buf *S = &r->buf[si];
    if (r->nreads == SOAK_MAX_READS)
        return;
    uint32_t n = whole ? S->n : pick_len(r, S->n), off = whole ? 0 : below(r, S->n - n + 1);
    uint32_t *got = keep(r, n * 4u);
    if (!got)
        return;
    touch(r, b, si);
    int rc = devq_queue_read(r->q[r->batch[b].q].q, got, S->b, off * 4u, n * 4u);
    if (!rec(r, b, OP_READ, rc, "devq_queue_read"))
        return;
    TRACE("batch %d q%d: read %d buf %d[%u] n %u\n", b, r->batch[b].q, r->nreads, si, off, n);
    struct soak_mop *m = mop(r, b, MOP_READ, -1, si);
    m->soff = off;
    m->n = n;
    m->read = r->nreads;
    r->read[r->nreads] = (struct soak_read){ .batch = b, .got = got, .n = n, .buf = si, .mop = r->nmops - 1 };
    if (r->nstaging < SOAK_MAX_STAGING && chance(r, 50))
        r->staging[r->nstaging++] = (struct soak_staging){ b, got, n, r->nreads };
    r->nreads++;
}

static void op_hostfn(struct soak_round *r, int b)
{
    struct soak_batch *sb = &r->batch[b];
    if (rec(r, b, OP_HOSTFN, devq_queue_host_fn(r->q[sb->q].q, hostfn_cb, sb), "devq_queue_host_fn")) {
        sb->hostfns++;
        mop(r, b, MOP_HOSTFN, -1, -1);
    }
}

static void op_fail_kernel(struct soak_round *r, int b)
{
    int32_t code = -EDOM;
    devq_arg a = DEVQ_ARG_VAL(&code);
    devq_launch l = { { 1, 1, 1 }, { 1, 1, 1 }, 0 };
    if (rec(r, b, OP_EXEC, devq_queue_exec(r->q[r->batch[b].q].q, r->failk, &a, 1, &l),
            "devq_queue_exec(fail)")) {
        TRACE("batch %d q%d: failing kernel\n", b, r->batch[b].q);
        r->batch[b].has_fail_kernel = true;
        r->fail_mop = r->nmops;
        mop(r, b, MOP_FAIL, -1, -1);
    }
}

/* ---- buffers: allocation and stream-ordered free ---- */

static const uint32_t sizes[] = { 16, 64, 100, 256, 1000, 4096 };

static int new_buffer(struct soak_round *r, int dev, int qi /* -1: synchronous */)
{
    if (r->nbufs == SOAK_MAX_BUFS)
        return -1;
    uint32_t n = sizes[below(r, sizeof sizes / sizeof sizes[0])];
    struct soak_buf *B = &r->buf[r->nbufs];
    memset(B, 0, sizeof *B);
    B->dev = dev;
    B->n = n;
    int rc = devq_buffer_alloc(r->dev[dev], n * 4u, qi < 0 ? NULL : r->q[qi].q, (uint32_t)r->nbufs, &B->b);
    if (!call_ok(r, rc, dev, qi < 0 ? "devq_buffer_alloc" : "devq_buffer_alloc(stream-ordered)"))
        return -1;
    B->live = true;
    B->sync_alloc = qi < 0;
    B->alloc_q = qi;
    /* Memory allocated on a queue held up by the host is usable only
     * when that queue gets there. */
    if (qi >= 0 && r->q_block[qi]) {
        B->block = r->q_block[qi];
        B->block_q = qi;
    }
    TRACE("alloc buf %d on %s, %u elements, %s %d: %p\n", r->nbufs, dev_names[dev], n,
          qi < 0 ? "synchronous" : "on queue", qi, devq_buffer_device_ptr(B->b));
    for (int i = 0; i < r->nbufs; i++) {
        /* Two live buffers must never share memory. */
        struct soak_buf *o = &r->buf[i];
        uintptr_t a0 = (uintptr_t)devq_buffer_device_ptr(B->b), a1 = a0 + n * 4u;
        if (!o->live || o->dev != dev)
            continue;
        uintptr_t b0 = (uintptr_t)devq_buffer_device_ptr(o->b), b1 = b0 + o->n * 4u;
        if (a0 < b1 && b0 < a1)
            soak_fail(
                r,
                "devq_buffer_alloc on %s returned [%#lx, %#lx), which overlaps live buffer %d [%#lx, %#lx)",
                dev_names[dev], (unsigned long)a0, (unsigned long)a1, i, (unsigned long)b0,
                (unsigned long)b1);
    }
    /* Initialise it in a batch of its own on any queue of the device:
     * the tracker must order that after the (stream-ordered) alloc. */
    int b = batch_begin(r, B->block && !deferred_hazards() ? qi : queue_of(r, dev, false));
    if (b < 0)
        return r->nbufs++;
    if (chance(r, 50))
        op_fill(r, b, r->nbufs, true);
    else
        op_write(r, b, r->nbufs, true);
    batch_end(r, b);
    return r->nbufs++;
}

static void free_buffer(struct soak_round *r, int bi)
{
    struct soak_buf *B = &r->buf[bi];
    int qi = chance(r, 50) ? queue_of(r, B->dev, false) : -1;
    /* With no queue, a buffer allocated with no queue is freed
     * synchronously: lib (lib/buffer.c wait_uses) records an event at
     * the *current tail* of every stream that ever used the buffer and
     * waits for it on the host, with no timeout, holding the device
     * lock.  If any of those streams is held up (now, even by work
     * submitted after the buffer's last use) until a host signal value
     * this thread sets later, that never returns.  Until lib waits for
     * the uses themselves (or at least with a timeout), free on a queue
     * when any queue of the device may be held up;
     * SOAK_SYNC_FREE_BLOCKED=1 does not, to show the hang. */
    bool held = B->block != 0;
    for (int i = 0; i < SOAK_NQ; i++)
        held |= r->q[i].dev == B->dev && r->q_block[i] != 0;
    /* Fixed in lib (the free is now stream-ordered): exercised unless
     * SOAK_SYNC_FREE_BLOCKED=0. */
    const char *sfb = getenv("SOAK_SYNC_FREE_BLOCKED");
    if (qi < 0 && B->sync_alloc && held && sfb && *sfb == '0')
        qi = queue_of(r, B->dev, false);
    soak_phase("round %d: devq_buffer_free(buffer %d, %s)", r->plan->round, bi, qi < 0 ? "NULL" : "a queue");
    TRACE("free buf %d on queue %d\n", bi, qi);
    int rc = devq_buffer_free(B->b, qi < 0 ? NULL : r->q[qi].q);
    call_ok(r, rc, B->dev, "devq_buffer_free");
    /* The free goes out on the queue named, or with none on the queue it
     * was allocated on (devq_buffer_free(3)) or, for a synchronous
     * allocation, on a queue that used the buffer, after lib made that
     * queue's stream wait for every use (DESIGN.md section 3, freeing: a
     * write hazard against the uses): whatever holds those uses up now
     * holds that queue up too. */
    unsigned hold = B->block;
    for (int i = 0; i < SOAK_NQ; i++)
        if (B->qmask >> i & 1)
            hold |= r->q_block[i];
    for (int i = 0; i < SOAK_NQ; i++)
        if (i == qi || (qi < 0 && ((B->qmask >> i & 1) || i == B->alloc_q)))
            r->q_block[i] |= hold;
    B->live = false;
    B->b = NULL;
}

/* ---- one random batch ---- */

/* Debugging aids, to narrow a failure down: SOAK_OPS=<mask of soak_op
 * kinds, +64 waits, +128 staged writes>, SOAK_DEVS=<mask of devices>. */
static long debug_mask(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : -1;
}

static void random_batch(struct soak_round *r, bool fail_here)
{
    static long ops_mask = -2, devs_mask = -2;
    if (ops_mask == -2) {
        ops_mask = debug_mask("SOAK_OPS");
        devs_mask = debug_mask("SOAK_DEVS");
    }
    int qi = (int)below(r, SOAK_NQ);
    if (!(devs_mask >> r->q[qi].dev & 1))
        return;
    if (fail_here)
        qi = queue_of(r, 0, true);
    struct soak_queue *q = &r->q[qi];
    int dev = q->dev;
    int b = batch_begin(r, qi);
    if (b < 0)
        return;
    /* Waits first (they may sit anywhere; a staged write adds its own). */
    /* A wait lib places at submit (same device: a stream wait) followed
     * in the same batch by one it defers (host value; the other device
     * from cpu) loses the first one's failure: the batch reaches its
     * value although a batch it waits for failed (seen on cpu with
     * SOAK_SEED=91535 SOAK_ROUND=72, racy).  So waits that may defer come
     * first, unless SOAK_ALIGNED_THEN_DEFERRED=1. */
    int w[2], nw = 0;
    if (b > 0 && chance(r, 35) && (ops_mask & 64))
        for (int n = 1 + (int)below(r, 2); n > 0; n--)
            w[nw++] = (int)below(r, (uint32_t)b);
    bool host_wait = chance(r, 8);
    /* On cuda a batch with two device-side waits (host values, values
     * of the other device) can lose the failure of one of them and
     * reach its value (SOAK_SEED=67778 SOAK_ROUND=16, batch 74; with
     * work between the waits: /tmp reproducer in the soak's report).
     * So one such wait per cuda batch unless SOAK_MULTI_DEVICE_WAITS=1. */
    if (r->native_wait[dev] && !multi_device_waits()) {
        int xdev = host_wait ? 1 : 0;
        for (int i = 0; i < nw; i++)
            if (r->q[r->batch[w[i]].q].dev != dev && xdev++)
                w[i--] = w[--nw];
    }
    if (aligned_then_deferred()) {
        for (int i = 0; i < nw; i++)
            follow(r, b, w[i]);
        if (host_wait)
            follow_host(r, b);
    } else {
        if (host_wait)
            follow_host(r, b);
        for (int pass = 0; pass < 2; pass++) /* other device first */
            for (int i = 0; i < nw; i++)
                if ((r->q[r->batch[w[i]].q].dev != dev) == (pass == 0))
                    follow(r, b, w[i]);
    }
    int nops = 1 + (int)below(r, 4), fail_at = fail_here ? (int)below(r, (uint32_t)nops) : -1;
    for (int i = 0; i < nops; i++) {
        if (i == fail_at)
            op_fail_kernel(r, b);
        int x = live_buf(r, dev, -1, qi);
        if (x < 0)
            break;
        int y = live_buf(r, dev, x, qi);
        uint32_t pick = below(r, 100);
        static const int kind_of_pick[] = {
            OP_EXEC, OP_COPY, OP_FILL, OP_WRITE, OP_READ, OP_HOSTFN, OP_HOSTFN
        };
        int kind = pick < 30   ? 0
                   : pick < 45 ? 1
                   : pick < 55 ? 2
                   : pick < 65 ? 3
                   : pick < 85 ? 4
                   : pick < 92 ? 5
                               : 6;
        if (!(ops_mask >> kind_of_pick[kind] & 1))
            continue;
        if (q->kind == DEVQ_QUEUE_COMPUTE && pick < 30) {
            uint32_t which = below(r, 3);
            if (y >= 0 && which == 0)
                op_exec_combine(r, b, x, y);
            else if (which == 1)
                op_exec_gen(r, b, x);
            else
                op_exec_mix(r, b, x);
        } else if (pick < 45 && y >= 0) {
            op_copy(r, b, x, y);
        } else if (pick < 55) {
            op_fill(r, b, x, false);
        } else if (pick < 65) {
            int st = r->nstaging ? (int)below(r, (uint32_t)r->nstaging) : -1;
            /* A staged write may add a second device-side wait to a cuda
             * batch, after work even: see multi_device_waits. */
            bool split_ok = !r->native_wait[dev] || multi_device_waits() ||
                            (r->batch[b].kinds == 0 && r->batch[b].device_waits == 0);
            /* ... and a deferring wait after a placed one (see above) */
            if (st >= 0 && !r->native_wait[dev] && r->q[r->batch[r->staging[st].batch].q].dev != dev &&
                r->batch[b].aligned && !aligned_then_deferred())
                split_ok = false;
            if (st >= 0 && r->staging[st].batch < b && split_ok && chance(r, 60) && (ops_mask & 128))
                op_write_staged(r, b, x, st);
            else
                op_write(r, b, x, false);
        } else if (pick < 85) {
            op_read(r, b, x, chance(r, 30));
        } else if (pick < 92) {
            op_hostfn(r, b);
        } else {
            int rc = devq_queue_barrier(q->q);
            if (rc < 0)
                call_ok(r, rc, dev, "devq_queue_barrier");
        }
    }
    if (fail_at >= nops || (fail_here && !r->batch[b].has_fail_kernel))
        op_fail_kernel(r, b);
    if (fail_here)
        r->fail_batch = b;
    batch_end(r, b);
}

static void dump_pending(struct soak_round *r);

/* ---- host waits during the round (checked at the end) ---- */

static void notify_cb(void *arg, int status)
{
    struct soak_probe *p = arg;
    atomic_store(&p->notify_status, status);
    atomic_fetch_add(&p->notified, 1);
}

static void probe(struct soak_round *r)
{
    if (r->nprobes == SOAK_MAX_PROBES || r->nbatches == 0)
        return;
    struct soak_probe *p = &r->probe[r->nprobes++];
    memset(p, 0, sizeof *p);
    p->how = (int)below(r, 5);
    p->n = p->how == 1 || p->how == 2 ? 1 + (int)below(r, 3) : 1;
    /* Only batches that do not wait on the host signal: those may wait
     * until the end of the round, and these waits are synchronous. */
    /* While a host value is pending, batches with no hold at all are
     * sure to end; on cuda only if lib orders waits exactly (see
     * xdev_release). */
    bool host_pending = r->host_set < r->host_next || r->plan->fault == FAULT_HOST_SIGNAL;
    for (int i = 0; i < p->n; i++) {
        int b = -1;
        for (int tries = 0; tries < 8 && b < 0; tries++) {
            int c = (int)below(r, (uint32_t)r->nbatches);
            if (!r->batch[c].block && (!host_pending || r->q[r->batch[c].q].dev == 0 || xdev_release()))
                b = c;
        }
        if (b < 0) {
            p->n = i;
            break;
        }
        p->batch[i] = b;
    }
    if (p->n == 0) {
        r->nprobes--;
        return;
    }
    soak_phase("round %d: host probe %d (how %d) on batch %d", r->plan->round, r->nprobes - 1, p->how,
               p->batch[0]);
    devq_signal *s[3];
    uint64_t v[3] = { 1, 1, 1 };
    for (int i = 0; i < p->n; i++)
        s[i] = r->batch[p->batch[i]].sig;
    switch (p->how) {
    case 0:
        p->rc = devq_signal_wait(s[0], 1, SOAK_WAIT_NS);
        break;
    case 1:
    case 2: {
        size_t first = 0;
        p->rc = devq_signal_wait_many(s, v, (size_t)p->n, p->how == 1 ? DEVQ_WAIT_ALL : DEVQ_WAIT_ANY,
                                      SOAK_WAIT_NS, &first);
        break;
    }
    case 3: {
        int fd = -1;
        p->rc = devq_signal_wait_fd(s[0], 1, &fd);
        if (p->rc == 0) {
            struct pollfd pfd = { fd, POLLIN, 0 };
            int pr = poll(&pfd, 1, (int)(SOAK_WAIT_NS / SOAK_MS));
            /* readable when reached or failed: which one, a poll says */
            p->rc = pr == 1 ? devq_signal_wait(s[0], 1, 0) : -ETIMEDOUT;
            close(fd);
        }
        break;
    }
    case 4:
        p->rc = devq_signal_notify(s[0], 1, notify_cb, p, NULL);
        break;
    }
    if (p->rc == -ETIMEDOUT) {
        soak_fail(
            r, "HANG: host probe (%s) on batch %d (queue %d, %s) timed out after %llu s: %s",
            (const char *[]){ "wait", "wait_many ALL", "wait_many ANY", "wait_fd+poll", "notify" }[p->how],
            p->batch[0], r->batch[p->batch[0]].q, dev_names[r->q[r->batch[p->batch[0]].q].dev],
            (unsigned long long)(SOAK_WAIT_NS / SOAK_SEC), devq_errmsg());
        dump_pending(r);
        soak_dump_stacks("probe timed out");
        r->aborted = true;
    }
}

/* ---- setup and teardown ---- */

static int open_devices(struct soak_round *r)
{
    for (int d = 0; d < SOAK_NDEV; d++) {
        int rc = devq_device_open(dev_names[d], &r->dev[d]);
        if (rc < 0) {
            soak_fail(r, "devq_device_open(%s): %d %s", dev_names[d], rc, devq_errmsg());
            return rc;
        }
        if (d == 0)
            rc = devq_kernel_load(r->dev[d], NULL, 0, "soak_mix", &r->mix[d]);
        else
            rc = devq_kernel_load(r->dev[d], soak_emu_module, strlen(soak_emu_module) + 1, "soak_mix",
                                  &r->mix[d]);
        if (rc == 0)
            rc = d == 0 ? devq_kernel_load(r->dev[d], NULL, 0, "soak_combine", &r->combine[d])
                        : devq_kernel_load(r->dev[d], soak_emu_module, strlen(soak_emu_module) + 1,
                                           "soak_combine", &r->combine[d]);
        if (rc == 0)
            rc = d == 0 ? devq_kernel_load(r->dev[d], NULL, 0, "soak_gen", &r->gen[d])
                        : devq_kernel_load(r->dev[d], soak_emu_module, strlen(soak_emu_module) + 1,
                                           "soak_gen", &r->gen[d]);
        if (rc < 0) {
            soak_fail(r, "devq_kernel_load on %s: %d %s", dev_names[d], rc, devq_errmsg());
            return rc;
        }
        devq_device_info info;
        if ((rc = devq_device_info_get(r->dev[d], &info)) < 0) {
            soak_fail(r, "devq_device_info_get(%s): %d %s", dev_names[d], rc, devq_errmsg());
            return rc;
        }
        r->native_wait[d] = (info.caps & DEVQ_CAP_WAIT_VALUE) != 0;
        for (int i = 0; i < SOAK_QPERDEV; i++) {
            struct soak_queue *q = &r->q[d * SOAK_QPERDEV + i];
            devq_queue_desc desc = { i == 0 || chance(r, 50) ? DEVQ_QUEUE_COMPUTE : DEVQ_QUEUE_COPY,
                                     (int)below(r, 2) };
            q->dev = d;
            q->kind = desc.kind;
            rc = devq_queue_create(r->dev[d], &desc, &q->q);
            if (rc < 0) {
                soak_fail(r, "devq_queue_create on %s: %d %s", dev_names[d], rc, devq_errmsg());
                return rc;
            }
        }
    }
    int rc = devq_kernel_load(r->dev[0], NULL, 0, "soak_fail_kernel", &r->failk);
    if (rc == 0)
        rc = devq_signal_create(0, &r->host_sig);
    if (rc < 0)
        soak_fail(r, "setup: %d %s", rc, devq_errmsg());
    return rc;
}

/* Wait for every batch; a timeout is a hang, named, with stacks. */
static int wait_all(struct soak_round *r)
{
    for (int b = 0; b < r->nbatches; b++) {
        struct soak_batch *sb = &r->batch[b];
        soak_phase("round %d: final wait for batch %d on queue %d (%s)", r->plan->round, b, sb->q,
                   dev_names[r->q[sb->q].dev]);
        int rc = devq_signal_wait(sb->sig, 1, SOAK_WAIT_NS);
        if (rc == -ETIMEDOUT) {
            soak_fail(r,
                      "HANG: batch %d on queue %d (%s, ops 0x%x, host_dep %d) never completed in %llu s: %s",
                      b, sb->q, dev_names[r->q[sb->q].dev], sb->kinds, sb->host_dep,
                      (unsigned long long)(SOAK_WAIT_NS / SOAK_SEC), devq_errmsg());
            dump_pending(r);
            soak_dump_stacks("final wait timed out");
            return -ETIMEDOUT;
        }
        sb->done = true;
        sb->status = rc;
        if (rc < 0) {
            snprintf(sb->msg, sizeof sb->msg, "%s", devq_errmsg());
            r->failed_batches++;
        }
    }
    return 0;
}

/* Every batch is done: read the failure state of the buffers kept for
 * it (soak_check.c compares it with the model), then free them. */
static void free_kept(struct soak_round *r)
{
    for (int i = 0; i < r->nbufs; i++) {
        struct soak_buf *B = &r->buf[i];
        if (!B->live || !B->kept)
            continue;
        B->final_status = devq_buffer_status(B->b);
        snprintf(B->final_msg, sizeof B->final_msg, "%s", B->final_status ? devq_errmsg() : "");
        free_buffer(r, i);
        B->kept = true; /* free_buffer does not clear it: still judged */
    }
}

/* Notify callbacks run on lib's notifier thread: wait (bounded) for all
 * of them before the probes are judged and freed. */
static void wait_notifies(struct soak_round *r)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < r->nprobes; i++) {
        struct soak_probe *p = &r->probe[i];
        if (p->how != 4 || p->rc != 0)
            continue;
        /* The callback is due once the signal is final: after wait_all
         * it is, so this is a short bounded wait for the thread hop. */
        while (atomic_load(&p->notified) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((uint64_t)(t.tv_sec - t0.tv_sec) * SOAK_SEC > SOAK_WAIT_NS) {
                soak_fail(r, "HANG: notify callback of batch %d never ran", p->batch[0]);
                return;
            }
            devq_signal_wait(r->batch[p->batch[0]].sig, 1, 10 * SOAK_MS);
            sched_yield();
        }
    }
}

static int finish_and_check_memory(struct soak_round *r)
{
    /* A sticky fault that hit loses the device, calls failing or not. */
    for (int b = 0; b < r->nbatches; b++)
        if (r->plan->fault == FAULT_CUDA_STICKY && r->batch[b].status < 0 && r->q[r->batch[b].q].dev == 1)
            r->device_lost = true;
    for (int i = 0; i < SOAK_NQ; i++) {
        if (!r->q[i].q)
            continue;
        soak_phase("round %d: devq_queue_finish(queue %d)", r->plan->round, i);
        int rc = devq_queue_finish(r->q[i].q, SOAK_WAIT_NS);
        if (rc == -ETIMEDOUT) {
            soak_fail(r, "HANG: devq_queue_finish(queue %d, %s) timed out: %s", i, dev_names[r->q[i].dev],
                      devq_errmsg());
            soak_dump_stacks("finish timed out");
            return rc;
        }
        /* A failure is reported once: a second finish must be clean. */
        bool lost = r->device_lost && r->q[i].dev == 1;
        if (rc < 0 && !lost && (rc = devq_queue_finish(r->q[i].q, SOAK_WAIT_NS)) != 0)
            soak_fail(r, "second devq_queue_finish(queue %d) after a reported failure: %d %s", i, rc,
                      devq_errmsg());
    }
    /* A signal-only tail fails only with its queue: every one is set. */
    for (int b = 0; b < r->nbatches; b++) {
        int rc;
        if (r->batch[b].tail && r->batch[b].tail_rc == 0 &&
            (rc = devq_signal_wait(r->batch[b].tail, 1, 0)) != 0)
            soak_fail(r, "the signal-only batch after batch %d (queue %d) did not complete: %d %s", b,
                      r->batch[b].q, rc, devq_errmsg());
    }
    for (int d = 0; d < SOAK_NDEV; d++) {
        if (!r->dev[d])
            continue;
        soak_phase("round %d: devq_device_synchronize(%s)", r->plan->round, dev_names[d]);
        int rc = devq_device_synchronize(r->dev[d], SOAK_WAIT_NS);
        if (rc == -ETIMEDOUT) {
            soak_fail(r, "HANG: devq_device_synchronize(%s): %s", dev_names[d], devq_errmsg());
            soak_dump_stacks("synchronize timed out");
            return rc;
        }
        devq_mem_reap(r->dev[d]);
        devq_mem_stats st;
        if ((rc = devq_mem_stats_get(r->dev[d], &st)) < 0) {
            soak_fail(r, "devq_mem_stats_get(%s): %d %s", dev_names[d], rc, devq_errmsg());
            continue;
        }
        bool lost = r->device_lost && d == 1;
        bool ordering_fault =
            r->plan->fault == FAULT_CUDA_CALL && d == 1 &&
            (!strcmp(r->plan->func, "cuEventRecord") || !strcmp(r->plan->func, "cuStreamWaitEvent"));
        if ((st.bytes_outstanding != 0 || st.pending_frees != 0) && lost)
            soak_known(r, KNOWN_LOST_DEVICE_MEMORY,
                       "the lost cuda device keeps %llu bytes outstanding after "
                       "every buffer was freed (allocations %llu, frees %llu)",
                       (unsigned long long)st.bytes_outstanding, (unsigned long long)st.allocations,
                       (unsigned long long)st.frees);
        else if ((st.bytes_outstanding != 0 || st.pending_frees != 0) && ordering_fault)
            soak_known(
                r, KNOWN_FREE_LOST_ON_ERROR,
                "after %s failed, %llu bytes stay outstanding on cuda once every "
                "buffer was freed (allocations %llu, frees %llu): a free whose ordering failed was dropped",
                r->plan->emu_fail, (unsigned long long)st.bytes_outstanding,
                (unsigned long long)st.allocations, (unsigned long long)st.frees);
        else if (st.bytes_outstanding != 0 || st.pending_frees != 0)
            soak_fail(r,
                      "memory of %s not returned after every buffer was freed and every queue finished: "
                      "bytes_outstanding %llu, pending_frees %llu (allocations %llu, frees %llu)%s",
                      dev_names[d], (unsigned long long)st.bytes_outstanding,
                      (unsigned long long)st.pending_frees, (unsigned long long)st.allocations,
                      (unsigned long long)st.frees, r->device_lost && d == 1 ? " [device lost]" : "");
    }
    return 0;
}

static void close_all(struct soak_round *r)
{
    soak_phase("round %d: closing queues, kernels, signals, devices", r->plan->round);
    for (int i = 0; i < SOAK_NQ; i++)
        if (r->q[i].q)
            devq_queue_destroy(r->q[i].q);
    for (int d = 0; d < SOAK_NDEV; d++) {
        if (r->mix[d])
            devq_kernel_destroy(r->mix[d]);
        if (r->combine[d])
            devq_kernel_destroy(r->combine[d]);
        if (r->gen[d])
            devq_kernel_destroy(r->gen[d]);
    }
    if (r->failk)
        devq_kernel_destroy(r->failk);
    for (int b = 0; b < r->nbatches; b++) {
        devq_signal_destroy(r->batch[b].sig);
        if (r->batch[b].tail)
            devq_signal_destroy(r->batch[b].tail);
    }
    if (r->host_sig)
        devq_signal_destroy(r->host_sig);
    for (int d = 0; d < SOAK_NDEV; d++)
        if (r->dev[d])
            devq_device_close(r->dev[d]);
    for (int i = 0; i < r->nhost_blocks; i++)
        free(r->host_blocks[i]);
}

/* ---- the round ---- */

static void unblock(struct soak_round *r);

/* Set every value batches wait for, then wait until what was held up
 * has run: lib issues deferred batches from its notifier thread some
 * time after the set, and orders buffer hazards only at issue, so work
 * submitted before that may overtake them (see live_buf). */
static void release_host(struct soak_round *r)
{
    r->host_set = r->host_next;
    TRACE("host set %llu\n", (unsigned long long)r->host_set);
    int rc = devq_signal_set(r->host_sig, r->host_set);
    if (rc < 0)
        soak_fail(r, "devq_signal_set(host, %llu): %d %s", (unsigned long long)r->host_set, rc,
                  devq_errmsg());
    if (deferred_hazards())
        return;
    for (int b = 0; b < r->nbatches; b++) {
        if (!r->batch[b].block)
            continue;
        soak_phase("round %d: waiting for held-up batch %d after the host set %llu", r->plan->round, b,
                   (unsigned long long)r->host_set);
        rc = devq_signal_wait(r->batch[b].sig, 1, SOAK_WAIT_NS);
        if (rc == -ETIMEDOUT) {
            soak_fail(r,
                      "HANG: batch %d (queue %d), held up by the host signal, did not complete %llu s after "
                      "the host set %llu: %s",
                      b, r->batch[b].q, (unsigned long long)(SOAK_WAIT_NS / SOAK_SEC),
                      (unsigned long long)r->host_set, devq_errmsg());
            dump_pending(r);
            soak_dump_stacks("held-up batch never ran");
            r->aborted = true;
            return;
        }
    }
    unblock(r);
}

/* On a hang: which batches are not done, and what the model expected. */
static void dump_pending(struct soak_round *r)
{
    fprintf(stderr, "soak: batches not done (batch:queue:block bits):");
    for (int b = 0; b < r->nbatches; b++)
        if (devq_signal_value(r->batch[b].sig) == 0 && devq_signal_status(r->batch[b].sig) == 0)
            fprintf(stderr, " %d:q%d:%u", b, r->batch[b].q, r->batch[b].block);
    fprintf(stderr, "\n");
}

/* Wait until batches held up only by the other device have run, then
 * drop BLOCK_XDEV everywhere (what the host holds stays held). */
static void release_xdev(struct soak_round *r)
{
    if (!xdev_release())
        return;
    for (int b = 0; b < r->nbatches; b++) {
        if (r->batch[b].block != BLOCK_XDEV)
            continue;
        soak_phase("round %d: waiting for batch %d, held up by the other device", r->plan->round, b);
        if (devq_signal_wait(r->batch[b].sig, 1, SOAK_WAIT_NS) == -ETIMEDOUT) {
            soak_fail(r,
                      "HANG: batch %d (queue %d), waiting for work on the other device, did not complete in "
                      "%llu s: %s",
                      b, r->batch[b].q, (unsigned long long)(SOAK_WAIT_NS / SOAK_SEC), devq_errmsg());
            dump_pending(r);
            soak_dump_stacks("cross-device wait never done");
            r->aborted = true;
            return;
        }
    }
    for (int i = 0; i < SOAK_NQ; i++)
        r->q_block[i] &= ~BLOCK_XDEV;
    for (int i = 0; i < r->nbufs; i++)
        r->buf[i].block &= ~BLOCK_XDEV;
    for (int b = 0; b < r->nbatches; b++)
        r->batch[b].block &= ~BLOCK_XDEV;
}

/* Every value any batch waits for is set: nothing is held up anymore. */
static void unblock(struct soak_round *r)
{
    memset(r->q_block, 0, sizeof r->q_block);
    for (int i = 0; i < r->nbufs; i++)
        r->buf[i].block = 0;
    for (int b = 0; b < r->nbatches; b++)
        r->batch[b].block = 0;
}

/* The one queue that touched buffer x, or -1. */
static int only_queue(const struct soak_round *r, int x)
{
    uint32_t m = r->buf[x].qmask;
    return r->buf[x].live && m && !(m & (m - 1)) ? __builtin_ctz(m) : -1;
}

/* Signal tails (issue #33, lib/queue/straight.c): a batch of write-only
 * stream work over buffers its own queue used, then its signal, gets the
 * signal set on the stream right after the work (the backend's
 * signal_tail), and its end callback does the rest; a buffer failed
 * anywhere (the fault rounds) makes the tail leave the signal to that
 * callback's walk.  After the random batches, SOAK_TAIL_BATCHES such
 * batches on the cpu queues, over four fresh buffers (each batch on the
 * queue that touched its buffer, so lib's straight line takes it: every
 * use local to the queue's stream) and now and then an older one:
 * fills, host writes and soak_gen launches, whole or partial, one to
 * three, each checked against the model like any batch.  They draw from
 * a random stream of their own, so the random batches, and what a seed
 * replays of them, are as before. */
static void tail_batches(struct soak_round *r)
{
    uint64_t saved = r->rng;
    r->rng = r->plan->seed ^ 0x7461696c73ull; /* "tails" */
    /* A batch parked on the device (held up by the host or by the other
     * device) keeps every queue of it off the straight line: what is
     * held up runs first, as the random phase may let it (the host
     * signal of the host-fault round stays unset until its failure). */
    if (r->plan->fault != FAULT_HOST_SIGNAL && r->host_set < r->host_next)
        release_host(r);
    if (!r->aborted)
        release_xdev(r);
    int fresh[4], nfresh = 0;
    for (int k = 0; k < 4 && !r->aborted; k++) {
        int x = new_buffer(r, 0, -1);
        if (x >= 0)
            fresh[nfresh++] = x;
    }
    for (int i = 0; i < SOAK_TAIL_BATCHES && r->nbatches < SOAK_MAX_BATCHES - 40 && !r->aborted; i++) {
        int own = nfresh ? fresh[below(r, (uint32_t)nfresh)] : -1;
        int qi = own >= 0 ? only_queue(r, own) : -1;
        if (qi < 0)
            qi = queue_of(r, 0, chance(r, 50));
        int b = batch_begin(r, qi);
        if (b < 0)
            break;
        for (int k = 1 + (int)below(r, 3); k > 0; k--) {
            int x = own >= 0 && r->buf[own].live && !chance(r, 20) ? own : live_buf(r, 0, -1, qi);
            if (x < 0)
                break;
            uint32_t pick = below(r, 3);
            if (pick == 0 && r->q[qi].kind == DEVQ_QUEUE_COMPUTE)
                op_exec_gen(r, b, x);
            else if (pick == 1)
                op_write(r, b, x, chance(r, 50));
            else
                op_fill(r, b, x, chance(r, 50));
        }
        r->ntail_shaped++;
        batch_end(r, b);
    }
    r->rng = saved;
}

static void build(struct soak_round *r)
{
    const struct soak_plan *p = r->plan;
    for (int d = 0; d < SOAK_NDEV; d++)
        for (int i = 0; i < 3; i++)
            new_buffer(r, d, -1);
    int fail_at = p->fault == FAULT_CPU_KERNEL ? 5 + (int)below(r, (uint32_t)p->batches - 10) : -1;
    r->fail_batch = -1;
    r->fail_mop = -1;
    for (int i = 0; i < p->batches && r->nbatches < SOAK_MAX_BATCHES - 40 && !r->aborted; i++) {
        uint32_t pick = below(r, 100);
        if (pick < 6) {
            int d = (int)below(r, SOAK_NDEV);
            new_buffer(r, d, chance(r, 70) ? queue_of(r, d, false) : -1);
        } else if (pick < 10) {
            int d = (int)below(r, SOAK_NDEV), x = live_buf(r, d, -1, -1);
            int live = 0;
            for (int k = 0; k < r->nbufs; k++)
                live += r->buf[k].live && r->buf[k].dev == d;
            if (x >= 0 && live > 2)
                free_buffer(r, x);
        } else if (pick < 13) {
            probe(r);
        } else if (pick < 15 && p->fault != FAULT_HOST_SIGNAL && r->host_set < r->host_next) {
            release_host(r);
        } else if (pick < 18) {
            release_xdev(r);
        } else {
            random_batch(r, i == fail_at);
        }
    }
    if (r->aborted)
        return;
    tail_batches(r);
    if (r->aborted)
        return;
    /* Read every live buffer back, then free it, stream-ordered. */
    for (int i = 0; i < r->nbufs; i++) {
        if (!r->buf[i].live)
            continue;
        int qi =
            r->buf[i].block && !deferred_hazards() ? r->buf[i].block_q : queue_of(r, r->buf[i].dev, false);
        int b = batch_begin(r, qi);
        if (b < 0)
            break;
        op_read(r, b, i, true);
        batch_end(r, b);
        /* Half are kept until every batch is done, to check their
         * devq_buffer_status() against the model (free_kept). */
        if (chance(r, 50))
            r->buf[i].kept = true;
        else
            free_buffer(r, i);
    }
    for (int i = 0; i < r->nbufs; i++)
        if (r->buf[i].live && !r->buf[i].kept)
            free_buffer(r, i);
    /* Release (or fail) what waits on the host. */
    if (p->fault == FAULT_HOST_SIGNAL) {
        soak_phase("round %d: failing the host signal", p->round);
        devq_signal_fail(r->host_sig, -ENOTCONN);
    } else if (r->host_next > r->host_set) {
        release_host(r);
    }
}

int soak_run_round(const struct soak_plan *plan)
{
    struct soak_round *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "soak: out of memory\n");
        return 1;
    }
    r->plan = plan;
    r->rng = plan->seed;
    soak_phase("round %d: opening devices", plan->round);
    if (open_devices(r) == 0) {
        soak_peer_start(r);
        build(r);
        soak_peer_kill(r);
        if (!r->aborted && wait_all(r) == 0) {
            soak_peer_check(r);
            free_kept(r);
            wait_notifies(r);
            soak_check_round(r);
            finish_and_check_memory(r);
        }
    }
    int failures = r->failures;
    bool hung = false;
    for (int b = 0; b < r->nbatches; b++)
        hung |= !r->batch[b].done;
    hung |= r->aborted;
    if (hung) {
        /* Tearing down under a hang would hang too: report and leave. */
        fprintf(stderr, "soak: round %d: leaving without teardown after a hang\n", plan->round);
        free(r);
        return failures ? failures : 1;
    }
    close_all(r);
    int graphs = 0;
    for (int b = 0; b < r->nbatches; b++)
        graphs += r->batch[b].graph;
    if (failures || getenv("SOAK_VERBOSE"))
        printf(
            "round %d: seed %llu fault %s%s%s: %d batches (%d failed, %d as graphs, %d tail-shaped), %d reads "
            "(%d elements "
            "unknown), "
            "%d buffers, %d probes, %d call errors, %d reads a later failed writer may fail%s\n",
            plan->round, (unsigned long long)plan->seed, soak_fault_names[plan->fault],
            plan->emu_fail[0] ? " DEVQ_EMU_FAIL=" : "", plan->emu_fail, r->nbatches, r->failed_batches,
            graphs, r->ntail_shaped, r->nreads, r->unknown_elements, r->nbufs, r->nprobes, r->call_errors,
            r->late_failures, r->device_lost ? " (cuda device lost)" : "");
    free(r);
    return failures;
}
