/* SPDX-License-Identifier: MIT */
/* The run plan of a graph_rec (graph.h): what a replay's issue would
 * work out op by op for every submission, worked out once -- which ops
 * form each run of launches (one launch_list, or one native graph_launch),
 * and the distinct buffers each run binds with the union of its
 * accesses (issue.c's bind_run) -- and the end
 * signals, so a submission copies O(runs + buffers) instead of scanning
 * its ops.  Recomputed whenever the buffers are rebound. */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include "graph.h"
#include "issue.h"

/* The distinct buffers of ops [from, end) in order of first use, with
 * their accesses, into out (room for DEVQ_RUN_BUFS); the count, or
 * DEVQ_RUN_BUFS + 1 when there are more (the run is then not planned). */
static uint32_t run_buffers(const struct batch_record *rec, uint32_t from, uint32_t end, struct run_buf *out)
{
    uint32_t n = 0;
    for (uint32_t i = from; i < end; i++) {
        const struct op *o = &rec->ops[i];
        for (uint32_t k = 0; k < o->nuses; k++) {
            const struct buffer_use *u = &rec->uses[o->first_use + k];
            uint32_t at = 0;
            while (at < n && out[at].buf != u->buf)
                at++;
            if (at == DEVQ_RUN_BUFS)
                return DEVQ_RUN_BUFS + 1;
            if (at == n)
                out[n++] = (struct run_buf){ u->buf, 0, 0, 0, 0 };
            out[at].acc |= u->access;
            out[at].counted |= u->counted;
        }
    }
    return n;
}

static int plan_runs(const struct graph_rec *r, struct run_plan **runs, struct run_buf **bufs,
                     uint32_t *out_nrun, uint32_t *out_nbuf)
{
    const struct batch_record *rec = &r->rec;
    uint32_t nrun = 0, nbuf = 0;
    *runs = NULL;
    *bufs = NULL;
    for (uint32_t i = 0; i < rec->nops; i++) {
        if (!devq__op_list_joins(&rec->ops[i]))
            continue;
        uint32_t end = i + 1;
        while (end < rec->nops && devq__op_list_joins(&rec->ops[end]))
            end++;
        struct run_buf tmp[DEVQ_RUN_BUFS];
        uint32_t n = run_buffers(rec, i, end, tmp);
        uint32_t nb_add = n <= DEVQ_RUN_BUFS ? n : 0;
        struct run_plan *nr = realloc(*runs, (nrun + 1) * sizeof *nr);
        struct run_buf *nb = nr ? realloc(*bufs, (nbuf + nb_add + 1) * sizeof *nb) : NULL;
        if (nr)
            *runs = nr;
        if (nb)
            *bufs = nb;
        if (!nr || !nb)
            return -ENOMEM;
        nr[nrun++] = (struct run_plan){ i, end,  nbuf,      n <= DEVQ_RUN_BUFS ? n : DEVQ_RUN_UNPLANNED,
                                        0, NULL, UINT32_MAX };
        for (uint32_t k = 0; k < nb_add; k++)
            nb[nbuf++] = tmp[k];
        i = end - 1;
    }
    *out_nrun = nrun;
    *out_nbuf = nbuf;
    return 0;
}

/* Every use of a planned run carries its generation as an offset from
 * its buffer's base at bind (buffer_use.run_buf): the run's writes of
 * that buffer before it.  The other uses are numbered at issue. */
static void number_uses(struct graph_rec *r, struct run_plan *runs, uint32_t nrun, struct run_buf *bufs)
{
    struct batch_record *rec = &r->rec;
    for (uint32_t i = 0; i < rec->nuses; i++)
        rec->uses[i].run_buf = 0;
    for (uint32_t k = 0; k < nrun; k++) {
        struct run_plan *run = &runs[k];
        if (run->nbuf == DEVQ_RUN_UNPLANNED || run->first_buf + run->nbuf > UINT16_MAX)
            continue;
        struct run_buf *rb = &bufs[run->first_buf];
        for (uint32_t i = run->from; i < run->end; i++) {
            const struct op *o = &rec->ops[i];
            for (uint32_t n = 0; n < o->nuses; n++) {
                struct buffer_use *u = &rec->uses[o->first_use + n];
                uint32_t at = 0;
                while (rb[at].buf != u->buf) /* the run's buffers hold every one of its uses */
                    at++;
                u->gen = rb[at].nw;
                u->run_buf = (uint16_t)(run->first_buf + at + 1);
                rb[at].nw += !!(u->access & DEVQ_WRITE);
            }
        }
        run->lazy = 1;
    }
}

int devq__graph_rec_plan(struct graph_rec *r)
{
    struct run_plan *runs;
    struct run_buf *bufs;
    uint32_t nrun, nbuf;
    if (plan_runs(r, &runs, &bufs, &nrun, &nbuf) < 0) {
        free(runs);
        free(bufs);
        return -ENOMEM;
    }
    number_uses(r, runs, nrun, bufs);
    /* The runs follow from the op kinds alone, which no rebinding
     * changes: each keeps its native handle. */
    for (uint32_t k = 0; k < r->nrun && k < nrun; k++)
        if (runs[k].from == r->run[k].from && runs[k].end == r->run[k].end)
            runs[k].nat = r->run[k].nat;
    free(r->run);
    free(r->runbuf);
    r->run = runs;
    r->runbuf = bufs;
    r->nrun = nrun;
    r->nrunbuf = nbuf;
    r->nowaits = 1;
    for (uint32_t i = 0; i < r->rec.nops; i++)
        if (r->rec.ops[i].kind == OP_WAIT || r->rec.ops[i].kind == OP_ALIGN)
            r->nowaits = 0;
    devq__issue_mark_end_signals(&r->rec);
    return 0;
}
