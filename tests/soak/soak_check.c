/* SPDX-License-Identifier: MIT */
/* Judging a round: which batches may, must and must not have failed
 * given the injected fault, what their messages say, whether results
 * not hit by the fault match the host's reference, and whether host
 * waits done during the round agree with the final outcome. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "soak_round.h"

const char *const soak_fault_names[FAULT_KINDS] = { "none", "host-signal-fail", "cpu-kernel-fail",
                                                    "cuda-call-error", "cuda-sticky-error" };

static bool is_cuda(const struct soak_round *r, int b)
{
    return r->q[r->batch[b].q].dev == 1;
}

/* The first batch whose outcome (in F: failed) the model rules out, or -1. */
static int first_diff(const struct soak_round *r, const soak_bset *F, const struct soak_sim *s)
{
    for (int x = 0; x < r->nbatches; x++)
        if (s->batch[x] != SIM_MAYBE && bset_has(F, x) != (s->batch[x] == SIM_FAILED))
            return x;
    return -1;
}

static void list(const struct soak_round *r, const soak_bset *F, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int b = 0; b < r->nbatches && n + 16 < cap; b++)
        if (bset_has(F, b))
            n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? "," : "", b);
}

static void check_messages(struct soak_round *r, const soak_bset *F, int want_status, const char *want_text,
                           const char *want_text2)
{
    for (int b = 0; b < r->nbatches; b++) {
        if (!bset_has(F, b))
            continue;
        const struct soak_batch *sb = &r->batch[b];
        if (want_status && sb->status != want_status) {
            soak_fail(r, "batch %d failed with %d, not the root cause's %d: %s", b, sb->status, want_status,
                      sb->msg);
            return;
        }
        if (want_text && !strstr(sb->msg, want_text) && !(want_text2 && strstr(sb->msg, want_text2))) {
            /* Each hop of a failure chain prefixes "queue Q batch B waits
             * sN, which failed: " to its cause, in a bounded buffer: past
             * a few hops the root cause is cut off the end. */
            if (strlen(sb->msg) >= 200 && strstr(sb->msg, "which failed: ")) {
                soak_known(r, KNOWN_CAUSE_TRUNCATED,
                           "devq_errmsg() after batch %d's failed wait lost the root "
                           "cause '%s' (%zu characters of hops): %.160s...",
                           b, want_text, strlen(sb->msg), sb->msg);
            } else {
                soak_fail(r,
                          "devq_errmsg() after batch %d's failed wait does not name the root cause '%s': %s",
                          b, want_text, sb->msg);
                return;
            }
        }
    }
}

/* Why batch b fails in the model: its first failed op. */
static void explain(const struct soak_round *r, const struct soak_sim *s, int b, char *out, size_t cap)
{
    const struct soak_batch *sb = &r->batch[b];
    static const char *const names[] = { "waits on batch",
                                         "waits on the host signal",
                                         "mix",
                                         "combine",
                                         "gen",
                                         "copy",
                                         "fill",
                                         "write",
                                         "staged write",
                                         "read",
                                         "failing kernel",
                                         "host_fn" };
    snprintf(out, cap, "%s", sb->discarded ? "discarded at submit" : "fails after its ops");
    for (int i = sb->mop_first; i < sb->mop_end; i++)
        if (s->op[i] == SIM_FAILED) {
            const struct soak_mop *m = &r->mop[i];
            snprintf(out, cap, "op %d (%s%s%d), dst buffer %d, src buffer %d", i - sb->mop_first,
                     names[m->kind], m->kind == MOP_WAIT ? " " : "", m->kind == MOP_WAIT ? m->wait : -1,
                     m->dst, m->src);
            return;
        }
}

/* The observed failures must be exactly the predicted ones. */
static bool check_prediction(struct soak_round *r, const soak_bset *F, const struct soak_sim *s,
                             const char *root)
{
    int x = first_diff(r, F, s);
    if (x < 0)
        return true;
    char why[160], names[1024];
    explain(r, s, x, why, sizeof why);
    list(r, F, names, sizeof names);
    /* Model gap (2026-11-23, replay SOAK_SEED=2364776700 SOAK_ROUND=899,
     * every time): after a sticky cuda loss a cpu batch can fail with a
     * cause rooted in the lost device through a path the model does not
     * follow (lib's cpu queue 2 batch 3 "waits s63>=1", which the trace
     * of that round does not show).  A note unless SOAK_STRICT_LOSS=1. */
    if (bset_has(F, x) && r->plan->fault == FAULT_CUDA_STICKY && !is_cuda(r, x) &&
        strstr(r->batch[x].msg, "device lost") && !soak_switch_on("SOAK_STRICT_LOSS")) {
        printf("round %d: note: model gap (SOAK_STRICT_LOSS=1 fails the round): cpu batch %d failed from the "
               "lost device, which the model does not predict: %.200s\n",
               r->plan->round, x, r->batch[x].msg);
        r->model_gap = 1; /* what follows from it is not modelled either */
        return true;
    }
    if (bset_has(F, x))
        soak_fail(r,
                  "batch %d (queue %d, %s) failed (%d: %s), but nothing it waits on or reads failed (%s); "
                  "failed: %s",
                  x, r->batch[x].q, is_cuda(r, x) ? "cuda" : "cpu", r->batch[x].status, r->batch[x].msg, root,
                  names);
    else
        soak_fail(r, "batch %d (queue %d, %s) reached its value, but must fail (%s): %s; failed: %s", x,
                  r->batch[x].q, is_cuda(r, x) ? "cuda" : "cpu", root, why, names);
    return false;
}

/* Buffers kept to the end: devq_buffer_status() must say what the model
 * says, with the root cause's errno when there is one. */
static int check_buffer_status(struct soak_round *r, const struct soak_sim *s, int want_status, bool report)
{
    int bad = 0;
    for (int i = 0; i < r->nbufs; i++) {
        const struct soak_buf *B = &r->buf[i];
        if (!B->kept)
            continue;
        bool wrong = (s->buf[i] != SIM_MAYBE && (B->final_status != 0) != (s->buf[i] == SIM_FAILED)) ||
                     (B->final_status && want_status && B->final_status != want_status);
        if (wrong && report && !bad)
            soak_fail(r, "buffer %d (%s) at the end: devq_buffer_status() is %d (%s), but the model says %s",
                      i, B->dev ? "cuda" : "cpu", B->final_status, B->final_msg,
                      s->buf[i] ? "failed (its last writer failed or was skipped)" : "clean");
        bad += wrong;
    }
    return bad;
}

/* lib bug (tests/soak/repro/early_publish.c): a batch that fails while
 * deferred (its wait failed before it was issued) marks the buffers it
 * would have written failed at once, out of submission order, so a read
 * submitted before it but not yet run fails too.  So a read of a buffer
 * that a later batch would write, and that batch fails (or may), may fail
 * (MAYBE); to a fixpoint, as such reads spoil more.  Fixed (write
 * generations, buffer_fail.c): the rules are expected unless
 * SOAK_EARLY_PUBLISH=0. */
static bool early_publish_strict(void)
{
    return soak_switch_strict("SOAK_EARLY_PUBLISH");
}

static void predict(struct soak_round *r, const struct soak_root *root, struct soak_sim *s, bool count)
{
    static uint8_t maybe[SOAK_MAX_MOPS];
    struct soak_root rt = *root;
    memset(maybe, 0, sizeof maybe);
    rt.maybe = maybe;
    for (int n = 0; n < 16; n++) {
        soak_predict(r, &rt, s);
        if (early_publish_strict())
            return;
        int bad_after[SOAK_MAX_BUFS]; /* first later batch with a failed writer of the buffer */
        bool changed = false;
        for (int k = 0; k < r->nbufs; k++)
            bad_after[k] = INT32_MAX;
        for (int i = r->nmops - 1; i >= 0; i--) {
            const struct soak_mop *m = &r->mop[i];
            int k = m->src >= 0 ? m->src : m->kind == MOP_MIX || m->kind == MOP_COMBINE ? m->dst : -1;
            int k2 = m->kind == MOP_COMBINE ? m->dst : -1;
            bool hit = (k >= 0 && bad_after[k] > m->batch && bad_after[k] != INT32_MAX) ||
                       (k2 >= 0 && bad_after[k2] > m->batch && bad_after[k2] != INT32_MAX);
            if (hit && !maybe[i] && s->op[i] == SIM_OK) {
                maybe[i] = 1;
                changed = true;
                r->late_failures += count;
            }
            if (m->dst >= 0 && m->kind >= MOP_MIX && m->kind <= MOP_STAGED && s->op[i] != SIM_OK &&
                !r->batch[m->batch].discarded && m->batch < bad_after[m->dst])
                bad_after[m->dst] = m->batch;
        }
        if (!changed)
            return;
    }
}

/* Judge a root: failures, then results and buffer states. */
static int judge(struct soak_round *r, const soak_bset *F, const struct soak_root *rt, const char *root,
                 int want_status, bool report, struct soak_sim *s)
{
    predict(r, rt, s, report);
    if (!report)
        return first_diff(r, F, s) >= 0 ? 1
                                        : check_buffer_status(r, s, want_status, false) +
                                              soak_check_data(r, s, false, &r->unknown_elements);
    if (!check_prediction(r, F, s, root))
        return 1;
    if (r->model_gap)
        return 0;
    return check_buffer_status(r, s, want_status, true) + soak_check_data(r, s, true, &r->unknown_elements);
}

/* A non-sticky cuda call failed somewhere: find an op (or the end of a
 * batch) where it struck that explains everything seen.  Returns false
 * when none does. */
/* The devq op kind (soak_op) of a model op, -1 for waits. */
static int op_kind_of(int mop_kind)
{
    static const int8_t kind[] = {
        [MOP_WAIT] = -1,         [MOP_HOST_WAIT] = -1, [MOP_MIX] = OP_EXEC,  [MOP_COMBINE] = OP_EXEC,
        [MOP_GEN] = OP_EXEC,     [MOP_COPY] = OP_COPY, [MOP_FILL] = OP_FILL, [MOP_WRITE] = OP_WRITE,
        [MOP_STAGED] = OP_WRITE, [MOP_READ] = OP_READ, [MOP_FAIL] = OP_EXEC, [MOP_HOSTFN] = OP_HOSTFN
    };
    return kind[mop_kind];
}

static bool judge_cuda_call(struct soak_round *r, const soak_bset *F, struct soak_sim *s, int *root_batch)
{
    struct soak_root rt = { -1, -1, NULL, false, NULL, false };
    if (judge(r, F, &rt, "", 0, false, s) == 0) {
        *root_batch = -1;
        return true;
    }
    /* First the ops that make the failing call, then any point. */
    int want = r->plan->op_kind;
    for (int pass = want >= 0 ? 0 : 1; pass < 2; pass++)
        for (int b = 0; b < r->nbatches; b++) {
            const struct soak_batch *sb = &r->batch[b];
            if (!is_cuda(r, b) || !bset_has(F, b))
                continue;
            rt.late = true;
            for (int i = sb->mop_first; i <= sb->mop_end; i++) {
                if (pass == 0 && (i == sb->mop_end || op_kind_of(r->mop[i].kind) != want))
                    continue;
                rt.op = i < sb->mop_end ? i : -1;
                rt.end_batch = i < sb->mop_end ? -1 : b;
                if (judge(r, F, &rt, "", 0, false, s) == 0) {
                    *root_batch = b;
                    return true;
                }
            }
        }
    return false;
}

static void check_failures(struct soak_round *r, soak_bset *F)
{
    const struct soak_plan *p = r->plan;
    char names[1024];
    memset(F, 0, sizeof *F);
    for (int b = 0; b < r->nbatches; b++)
        if (r->batch[b].status < 0)
            bset_add(F, b);
    list(r, F, names, sizeof names);
    bool none = true;
    for (int i = 0; i < SOAK_BSET_WORDS; i++)
        none &= F->w[i] == 0;
    struct soak_sim *s = calloc(1, sizeof *s);
    if (!s) {
        soak_fail(r, "out of memory for the model");
        return;
    }
    struct soak_root rt = { -1, -1, NULL, false, NULL, false };

    switch (p->fault) {
    case FAULT_NONE:
        judge(r, F, &rt, "no fault injected", 0, true, s);
        if (r->unknown_elements)
            soak_fail(r, "%d read elements could not be compared with no fault injected",
                      r->unknown_elements);
        break;
    case FAULT_HOST_SIGNAL:
        rt.host_failed = true;
        judge(r, F, &rt, "the host signal failed", -ENOTCONN, true, s);
        check_messages(r, F, -ENOTCONN, "devq_signal_fail", NULL);
        break;
    case FAULT_CPU_KERNEL:
        if (r->fail_batch < 0)
            break;
        rt.op = r->fail_mop;
        judge(r, F, &rt, "the failing cpu kernel", -EDOM, true, s);
        check_messages(r, F, -EDOM, "soak_fail_kernel", NULL);
        break;
    case FAULT_CUDA_CALL: {
        bool fired = p->op_kind >= 0 && r->ops_of_kind[1][p->op_kind] >= p->nth;
        if (none) {
            if (fired && !r->call_errors)
                soak_fail(r, "%d %s ops were submitted on cuda, so call %d of %s failed, yet nothing failed",
                          r->ops_of_kind[1][p->op_kind], soak_op_names[p->op_kind], p->nth, p->func);
        }
        int root = -1;
        if (!judge_cuda_call(r, F, s, &root)) {
            /* Nothing explains it: report against the likeliest root, the
             * first failed cuda batch failing from its first op. */
            int first = -1;
            for (int b = 0; b < r->nbatches && first < 0; b++)
                if (bset_has(F, b) && is_cuda(r, b))
                    first = b;
            rt.op = first >= 0 ? r->batch[first].mop_first : -1;
            rt.end_batch = first >= 0 && r->batch[first].mop_first == r->batch[first].mop_end ? first : -1;
            rt.late = true;
            soak_fail(r,
                      "a non-sticky %s failure at no op of a cuda batch explains the failures seen (%s); "
                      "against the first failed cuda batch, %d:",
                      p->func, names, first);
            judge(r, F, &rt, "a cuda call failed in the first failed cuda batch", 0, true, s);
        } else if (root >= 0 && p->op_kind >= 0 && !(r->batch[root].kinds & (1u << p->op_kind))) {
            soak_fail(r, "batch %d failed from %s but holds no %s op", root, p->func,
                      soak_op_names[p->op_kind]);
        }
        check_messages(r, F, 0, p->error, p->func);
        break;
    }
    case FAULT_CUDA_STICKY: {
        /* The device may be lost at any point: the failed cuda batches
         * are the roots, failed from their first op; everything else
         * (cpu batches, and cuda batches that did not fail) must follow
         * the rules exactly. */
        soak_bset roots = { { 0 } };
        for (int b = 0; b < r->nbatches; b++)
            if (bset_has(F, b) && is_cuda(r, b))
                bset_add(&roots, b);
        rt.whole = &roots;
        judge(r, F, &rt, "the cuda device was lost", 0, true, s);
        if (none && p->op_kind >= 0 && r->ops_of_kind[1][p->op_kind] >= p->nth && !r->call_errors)
            soak_fail(
                r, "%d %s ops were submitted on cuda, so call %d of %s lost the device, yet nothing failed",
                r->ops_of_kind[1][p->op_kind], soak_op_names[p->op_kind], p->nth, p->func);
        /* Batches whose recording failed on the lost device were failed
         * by the soak itself: theirs and their followers' cause is that. */
        check_messages(r, F, 0, p->error, r->self_failed ? "devq_signal_fail(-ENODEV)" : NULL);
        break;
    }
    default:
        break;
    }
    free(s);
}

static void check_batches(struct soak_round *r)
{
    for (int b = 0; b < r->nbatches; b++) {
        struct soak_batch *sb = &r->batch[b];
        int ran = atomic_load(&sb->hostfn_ran);
        if (sb->submit_rc < 0 && sb->status == 0)
            soak_fail(r, "batch %d: devq_queue_submit failed (%d) yet its signal reached its value", b,
                      sb->submit_rc);
        if (sb->status == 0 && ran != sb->hostfns)
            soak_fail(r, "batch %d reached its value but %d of its %d host functions ran", b, ran,
                      sb->hostfns);
        if (ran > sb->hostfns)
            soak_fail(r, "batch %d: host functions ran %d times, %d queued", b, ran, sb->hostfns);
    }
}

static void check_probes(struct soak_round *r)
{
    for (int i = 0; i < r->nprobes; i++) {
        struct soak_probe *p = &r->probe[i];
        int ok = 0, bad = 0, first_bad = 0;
        for (int k = 0; k < p->n; k++) {
            int st = r->batch[p->batch[k]].status;
            if (st == 0)
                ok++;
            else if (!bad++)
                first_bad = st;
        }
        bool fine = true;
        switch (p->how) {
        case 0:
        case 3:
            fine = p->rc == 0 ? bad == 0 : p->rc == first_bad || (p->how == 3 && bad);
            break;
        case 1:
            fine = p->rc == 0 ? bad == 0 : bad > 0;
            break;
        case 2:
            fine = p->rc == 0 ? ok > 0 : bad > 0;
            break;
        case 4:
            if (p->rc != 0)
                fine = false;
            else if (atomic_load(&p->notified) != 1 || atomic_load(&p->notify_status) != first_bad)
                fine = false;
            break;
        }
        if (!fine)
            soak_fail(r,
                      "host probe %d (how %d on batch %d%s): returned %d, notified %d with %d, but the "
                      "batch's final status is %d",
                      i, p->how, p->batch[0], p->n > 1 ? " and more" : "", p->rc, atomic_load(&p->notified),
                      atomic_load(&p->notify_status), first_bad);
    }
}

int soak_check_round(struct soak_round *r)
{
    soak_bset F;
    check_failures(r, &F);
    check_batches(r);
    check_probes(r);
    return r->failures;
}
