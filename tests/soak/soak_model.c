/* SPDX-License-Identifier: MIT */
/* The soak's model of failure and data (devq(7) FAILURES, DESIGN §5a).
 *
 * soak_round.c appends one soak_mop per op it records, waits included,
 * in recording order.  Batches are recorded one at a time and submitted
 * in that order, so this is the order lib's tracker imposes on
 * conflicting uses of a buffer, same-queue order included: the last op
 * before a read that wrote the buffer is the writer that read sees.
 *
 * soak_predict replays the ops under a root (where the injected fault
 * struck) by the rules: an op fails when its batch already failed (the
 * rest is skipped), when it waits on a failed batch or a failed host
 * signal, when it reads a failed buffer, or when it is the root; a
 * buffer is failed when its last writer failed or was skipped, and a
 * writer that runs, does not read it and covers all of it (fill, write,
 * copy destination of the whole buffer, exec WRITE) clears it; a buffer
 * an op only reads is never spoiled.
 * A batch discarded at submit never reaches the tracker: its ops change
 * no buffer (lib/queue.c devq__batch_discard).
 *
 * soak_check_data replays the values too, with an "unknown" bit per
 * element: a failed op leaves what it would have written unknown (it
 * may have run, or not), a clearing write of part of a buffer leaves the
 * rest as it was.  Every read that succeeded must return the replayed
 * values of its known elements. */
#include <stdlib.h>
#include <string.h>
#include "soak_round.h"

static bool reads_dst(int kind)
{
    return kind == MOP_MIX || kind == MOP_COMBINE;
}

static bool writes(int kind)
{
    return kind >= MOP_MIX && kind <= MOP_STAGED;
}

/* Whether a writer declares the whole of its destination new: a kernel
 * (MIX, COMBINE, GEN: exec arguments have no range), or a fill, write or
 * copy whose range covers the buffer.  Only such a writer clears a
 * failure (devq(7) FAILURES). */
static bool writes_whole(const struct soak_round *r, const struct soak_mop *m)
{
    if (m->kind == MOP_MIX || m->kind == MOP_COMBINE || m->kind == MOP_GEN)
        return true;
    return m->doff == 0 && m->n >= r->buf[m->dst].n;
}

bool soak_switch_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v == '1';
}

/* A switch whose lib bug is fixed: strict unless set to 0 (to tell a
 * regression from a model gap when a round fails). */
bool soak_switch_strict(const char *name)
{
    const char *v = getenv(name);
    return !v || *v != '0';
}

/* SOAK_EXACT_FAIL_OP=1: a failure starts exactly at the op that caused it. */
static bool exact_fail_op(void)
{
    return soak_switch_on("SOAK_EXACT_FAIL_OP");
}

/* lib bug (tests/soak/repro/parked_reader.c, gpu_issue_failure.c): when
 * a batch fails on a wait while deferred, on a driver call while it is
 * issued, or before a wait that defers the rest of it (which is then
 * never issued), the buffers its skipped ops would have written are marked
 * failed only later (by its last callback), and a reader submitted after
 * it but not ordered behind those unissued ops may run first and succeed
 * with the old contents.  So such a buffer is only MAYBE failed.  And a
 * failed writer's mark may land after a writer on another queue,
 * submitted later, cleared the buffer (any failure: seen with a batch
 * that failed on a read at issue): those clears leave it MAYBE failed
 * (their values are still checked).
 * Fixed (skipped ops, and since 2026-11-23 ops whose ordering failed,
 * bind their writes): the rules are expected unless SOAK_LATE_PUBLISH=0. */
static bool late_publish_strict(void)
{
    return soak_switch_strict("SOAK_LATE_PUBLISH");
}

/* Worse of two verdicts: FAILED, then MAYBE, then OK. */
static uint8_t worse(uint8_t a, uint8_t b)
{
    return a == SIM_FAILED || b == SIM_FAILED ? SIM_FAILED
           : a == SIM_MAYBE || b == SIM_MAYBE ? SIM_MAYBE
                                              : SIM_OK;
}

/* The verdict of op i of batch sb (not yet failed) on its own. */
static uint8_t own_verdict(const struct soak_round *r, const struct soak_root *rt, const struct soak_sim *s,
                           int i)
{
    const struct soak_mop *m = &r->mop[i];
    uint8_t v = i == rt->op ? SIM_FAILED : rt->maybe && rt->maybe[i] ? SIM_MAYBE : SIM_OK;
    if (m->kind == MOP_WAIT)
        v = worse(v, s->batch[m->wait]);
    else if (m->kind == MOP_HOST_WAIT && rt->host_failed)
        v = SIM_FAILED;
    if (m->src >= 0)
        v = worse(v, s->buf[m->src]);
    if (reads_dst(m->kind))
        v = worse(v, s->buf[m->dst]);
    return v;
}

/* A failure that lib learns from a callback (a failed wait, a kernel's
 * status) is placed at the batch's last completion point before it
 * (lib/batch_walk.c walks from there): the ops since then may count as
 * failed although they ran (tests/soak/repro/fail_position.c).  A read
 * of a failed buffer is placed exactly. */
static bool placed_late(const struct soak_round *r, const struct soak_root *rt, const struct soak_sim *s,
                        int i)
{
    const struct soak_mop *m = &r->mop[i];
    if (exact_fail_op())
        return false;
    bool by_read =
        (m->src >= 0 && s->buf[m->src] != SIM_OK) || (reads_dst(m->kind) && s->buf[m->dst] != SIM_OK);
    return !by_read || i == rt->op || m->kind == MOP_WAIT || m->kind == MOP_HOST_WAIT;
}

void soak_predict(const struct soak_round *r, const struct soak_root *rt, struct soak_sim *s)
{
    uint32_t haunted[SOAK_MAX_BUFS] = { 0 }; /* queues of failed writers: see late_publish_strict */
    memset(s, 0, sizeof *s);
    for (int b = 0; b < r->nbatches; b++) {
        const struct soak_batch *sb = &r->batch[b];
        /* A batch of a lost device fails, but which of its ops ran before
         * the loss is unknown: they may have failed. */
        bool lost = rt->whole && bset_has(rt->whole, b);
        uint8_t bv = sb->discarded ? SIM_FAILED : lost ? SIM_MAYBE : SIM_OK;
        int since = sb->mop_first; /* the batch's last completion point */
        bool by_wait = false;      /* it failed on a wait (or rt->late) */
        for (int i = sb->mop_first; i < sb->mop_end; i++) {
            const struct soak_mop *m = &r->mop[i];
            uint8_t own = own_verdict(r, rt, s, i);
            uint8_t v = bv == SIM_FAILED ? SIM_FAILED : worse(bv, own);
            /* A batch whose wait fails while it is deferred is failed
             * without issuing anything: even after an op that failed. */
            bool failed_wait = (m->kind == MOP_WAIT || m->kind == MOP_HOST_WAIT) && own != SIM_OK;
            /* A batch deferred before a host fn never ran it: when its wait
             * fails there, the ops before the host fn fail too (replay
             * SOAK_SEED=20863565390 SOAK_ROUND=296: a gen deferred by a
             * hazard, then a host fn, then a wait that fails). */
            int from = failed_wait ? sb->mop_first : since;
            if (((v != SIM_OK && v != bv) || failed_wait) && placed_late(r, rt, s, i))
                for (int j = from; j < i; j++)
                    if (r->mop[j].kind != MOP_HOSTFN && s->op[j] == SIM_OK) {
                        s->op[j] = SIM_MAYBE;
                        if (writes(r->mop[j].kind) && !sb->discarded && s->buf[r->mop[j].dst] == SIM_OK)
                            s->buf[r->mop[j].dst] = SIM_MAYBE;
                        if (writes(r->mop[j].kind) && !sb->discarded && !late_publish_strict())
                            haunted[r->mop[j].dst] |= 1u << sb->q;
                    }
            if (v == SIM_FAILED && bv != SIM_FAILED) {
                by_wait = ((m->kind == MOP_WAIT || m->kind == MOP_HOST_WAIT) && i != rt->op) ||
                          ((i == rt->op || b == rt->end_batch) && rt->late);
                for (int j = i + 1; j < sb->mop_end; j++) /* the rest may never be issued */
                    by_wait |= r->mop[j].kind == MOP_WAIT || r->mop[j].kind == MOP_HOST_WAIT;
            }
            s->op[i] = v;
            bv = v;
            if (m->kind == MOP_HOSTFN)
                since = i;
            if (writes(m->kind) && !sb->discarded) { /* a writer that ran cleared it (or it was clean) */
                bool late = v == SIM_FAILED && by_wait && !late_publish_strict();
                if (v != SIM_OK && !late_publish_strict())
                    haunted[m->dst] |= 1u << sb->q;
                uint8_t nv = late || (v == SIM_OK && (haunted[m->dst] & ~(1u << sb->q))) ? SIM_MAYBE : v;
                if (v == SIM_OK && !writes_whole(r, m)) /* part of it: the rest keeps its state */
                    nv = worse(nv, s->buf[m->dst]);
                s->buf[m->dst] = nv;
            }
        }
        s->batch[b] = b == rt->end_batch || lost ? SIM_FAILED : bv;
    }
}

static uint32_t gen_value(uint32_t k, uint32_t j)
{
    return k ^ (j * 0x9e3779b9u);
}

struct content {
    uint32_t *v;
    uint8_t *known;
};

int soak_check_data(struct soak_round *r, const struct soak_sim *s, bool report, int *unknown)
{
    struct content *buf = calloc((size_t)r->nbufs, sizeof *buf),
                   *rd = calloc((size_t)r->nreads + 1, sizeof *rd);
    int bad = 0;
    *unknown = 0;
    for (int i = 0; buf && i < r->nbufs; i++) {
        buf[i].v = calloc(r->buf[i].n, 4);
        buf[i].known = calloc(r->buf[i].n, 1); /* a new buffer holds garbage */
    }
    for (int i = 0; buf && rd && i < r->nmops; i++) {
        const struct soak_mop *m = &r->mop[i];
        if (r->batch[m->batch].discarded)
            continue;
        struct content *D = m->dst >= 0 ? &buf[m->dst] : NULL, *S = m->src >= 0 ? &buf[m->src] : NULL;
        if (!D && !S)
            continue;
        if ((D && !D->v) || (S && !S->v))
            break; /* out of memory: nothing more to judge */
        if (s->op[i] != SIM_OK) {
            if (writes(m->kind))
                memset(D->known + m->doff, 0, m->n);
            continue;
        }
        for (uint32_t j = 0; D && j < m->n; j++) {
            uint32_t *d = &D->v[m->doff + j];
            uint8_t *dk = &D->known[m->doff + j];
            switch (m->kind) {
            case MOP_MIX:
                *d = *d * 2654435761u + m->k + j;
                break;
            case MOP_COMBINE:
                *d = *d * 31u + (S->v[j] ^ 0x5bd1e995u);
                *dk &= S->known[j];
                break;
            case MOP_GEN:
                *d = gen_value(m->k, j);
                *dk = 1;
                break;
            case MOP_FILL:
                memset(d, (int)m->k, 4);
                *dk = 1;
                break;
            case MOP_WRITE:
                *d = m->data[j];
                *dk = 1;
                break;
            case MOP_STAGED:
                /* The staged batch waits for the read's batch: it ran. */
                *d = rd[m->read].v ? rd[m->read].v[j] : 0;
                *dk = rd[m->read].known ? rd[m->read].known[j] : 0;
                break;
            default:
                break;
            }
        }
        if (m->kind == MOP_COPY) {
            memmove(D->v + m->doff, S->v + m->soff, m->n * 4u);
            memmove(D->known + m->doff, S->known + m->soff, m->n);
        }
        if (m->kind != MOP_READ)
            continue;
        /* The op succeeded: the host memory holds the buffer's content
         * (kept for a staged write of it later). */
        struct soak_read *R = &r->read[m->read];
        struct content *C = &rd[m->read];
        C->v = malloc(m->n * 4u);
        C->known = malloc(m->n);
        if (!C->v || !C->known)
            break;
        memcpy(C->v, S->v + m->soff, m->n * 4u);
        memcpy(C->known, S->known + m->soff, m->n);
        for (uint32_t j = 0; j < m->n; j++) {
            if (!C->known[j]) {
                ++*unknown;
                continue;
            }
            if (R->got[j] != C->v[j]) {
                if (report && !bad)
                    soak_fail(
                        r,
                        "read %d (op %d of batch %d on queue %d, buffer %d[%u], %u elements) succeeded (batch "
                        "status %d), but element %u is 0x%08x, expected 0x%08x: stale, lost or reordered data",
                        m->read, i - r->batch[R->batch].mop_first, R->batch, r->batch[R->batch].q, R->buf,
                        m->soff, R->n, r->batch[R->batch].status, j, R->got[j], C->v[j]);
                bad++;
                break;
            }
        }
    }
    for (int i = 0; buf && i < r->nbufs; i++) {
        free(buf[i].v);
        free(buf[i].known);
    }
    for (int i = 0; rd && i < r->nreads; i++) {
        free(rd[i].v);
        free(rd[i].known);
    }
    free(buf);
    free(rd);
    return bad;
}
