/* Judging a round: which batches may, must and must not have failed
 * given the injected fault, what their messages say, whether results
 * not hit by the fault match the host's reference, and whether host
 * waits done during the round agree with the final outcome. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "soak_round.h"

const char *const soak_fault_names[FAULT_KINDS] = { "none", "host-signal-fail", "cpu-kernel-fail",
                                                    "cuda-call-error", "cuda-sticky-error" };

/* b follows x through signal waits (b == x included). */
static bool downstream(const struct soak_round *r, int b, int x)
{
    return bset_has(&r->batch[b].up, x);
}

static bool is_cuda(const struct soak_round *r, int b)
{
    return r->q[r->batch[b].q].dev == 1;
}

/* Every batch downstream of a failed one failed too. */
static void check_closed(struct soak_round *r, const soak_bset *F)
{
    for (int x = 0; x < r->nbatches; x++) {
        if (!bset_has(F, x))
            continue;
        for (int b = x + 1; b < r->nbatches; b++)
            if (downstream(r, b, x) && !bset_has(F, b)) {
                soak_fail(r, "batch %d follows failed batch %d (%d: %s) but reached its value", b, x,
                          r->batch[x].status, r->batch[x].msg);
                return;
            }
    }
}

/* F must be exactly the batches downstream of root. */
static bool equals_downstream(const struct soak_round *r, const soak_bset *F, int root)
{
    for (int b = 0; b < r->nbatches; b++)
        if (bset_has(F, b) != downstream(r, b, root))
            return false;
    return true;
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
            soak_fail(r, "batch %d failed with %d, not the root cause's %d: %s", b, sb->status, want_status, sb->msg);
            return;
        }
        if (want_text && !strstr(sb->msg, want_text) && !(want_text2 && strstr(sb->msg, want_text2))) {
            /* Each hop of a failure chain prefixes "queue Q batch B waits
             * sN, which failed: " to its cause, in a bounded buffer: past
             * a few hops the root cause is cut off the end. */
            if (strlen(sb->msg) >= 200 && strstr(sb->msg, "which failed: "))
                soak_known(r, KNOWN_CAUSE_TRUNCATED, "devq_errmsg() after batch %d's failed wait lost the root "
                           "cause '%s' (%zu characters of hops): %.160s...", b, want_text, strlen(sb->msg), sb->msg);
            else {
                soak_fail(r, "devq_errmsg() after batch %d's failed wait does not name the root cause '%s': %s", b,
                          want_text, sb->msg);
                return;
            }
        }
    }
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
    check_closed(r, F);

    switch (p->fault) {
    case FAULT_NONE:
        if (!none)
            soak_fail(r, "batches failed with no fault injected: %s (first: %s)", names,
                      r->batch[__builtin_ctzll(F->w[0] ? F->w[0] : 1)].msg);
        break;
    case FAULT_HOST_SIGNAL:
        for (int b = 0; b < r->nbatches; b++)
            if (bset_has(F, b) != r->batch[b].host_dep) {
                soak_fail(r, "batch %d: %s, but it %s on the failed host signal (failed: %s)", b,
                          bset_has(F, b) ? "failed" : "reached its value",
                          r->batch[b].host_dep ? "follows" : "does not follow", names);
                break;
            }
        check_messages(r, F, -ENOTCONN, "devq_signal_fail", NULL);
        break;
    case FAULT_CPU_KERNEL:
        if (r->fail_batch < 0)
            break;
        if (!equals_downstream(r, F, r->fail_batch))
            soak_fail(r, "the failing cpu kernel is in batch %d, but the failed batches are not exactly those "
                      "downstream of it: failed %s", r->fail_batch, names);
        check_messages(r, F, -EDOM, "soak_fail_kernel", NULL);
        break;
    case FAULT_CUDA_CALL: {
        bool fired = p->op_kind >= 0 && r->ops_of_kind[1][p->op_kind] >= p->nth;
        if (none) {
            if (fired && !r->call_errors)
                soak_fail(r, "%d %s ops were submitted on cuda, so call %d of %s failed, yet nothing failed",
                          r->ops_of_kind[1][p->op_kind], soak_op_names[p->op_kind], p->nth, p->func);
            break;
        }
        int root = -1;
        for (int b = 0; b < r->nbatches && root < 0; b++)
            if (bset_has(F, b) && is_cuda(r, b) && equals_downstream(r, F, b))
                root = b;
        if (root < 0)
            soak_fail(r, "a non-sticky %s must fail one cuda batch and what follows it; failed: %s", p->func, names);
        else if (p->op_kind >= 0 && !(r->batch[root].kinds & (1u << p->op_kind)))
            soak_fail(r, "batch %d failed from %s but holds no %s op", root, p->func, soak_op_names[p->op_kind]);
        check_messages(r, F, 0, p->error, p->func);
        break;
    }
    case FAULT_CUDA_STICKY:
        for (int b = 0; b < r->nbatches; b++) {
            if (!bset_has(F, b))
                continue;
            bool after_cuda = false;
            for (int x = 0; x <= b && !after_cuda; x++)
                after_cuda = is_cuda(r, x) && downstream(r, b, x);
            if (!after_cuda) {
                soak_fail(r, "batch %d on %s failed (%d: %s) but follows no cuda batch; failed: %s", b,
                          is_cuda(r, b) ? "cuda" : "cpu", r->batch[b].status, r->batch[b].msg, names);
                break;
            }
        }
        if (none && p->op_kind >= 0 && r->ops_of_kind[1][p->op_kind] >= p->nth && !r->call_errors)
            soak_fail(r, "%d %s ops were submitted on cuda, so call %d of %s lost the device, yet nothing failed",
                      r->ops_of_kind[1][p->op_kind], soak_op_names[p->op_kind], p->nth, p->func);
        /* Batches whose recording failed on the lost device were failed
         * by the soak itself: theirs and their followers' cause is that. */
        check_messages(r, F, 0, p->error, r->self_failed ? "devq_signal_fail(-ENODEV)" : NULL);
        break;
    default:
        break;
    }
}

static void check_batches(struct soak_round *r)
{
    for (int b = 0; b < r->nbatches; b++) {
        struct soak_batch *sb = &r->batch[b];
        int ran = atomic_load(&sb->hostfn_ran);
        if (sb->submit_rc < 0 && sb->status == 0)
            soak_fail(r, "batch %d: devq_queue_submit failed (%d) yet its signal reached its value", b, sb->submit_rc);
        if (sb->status == 0 && ran != sb->hostfns)
            soak_fail(r, "batch %d reached its value but %d of its %d host functions ran", b, ran, sb->hostfns);
        if (ran > sb->hostfns)
            soak_fail(r, "batch %d: host functions ran %d times, %d queued", b, ran, sb->hostfns);
    }
}

static void check_reads(struct soak_round *r, const soak_bset *F)
{
    int checked = 0;
    for (int i = 0; i < r->nreads; i++) {
        struct soak_read *rd = &r->read[i];
        if (r->batch[rd->batch].status != 0 || bset_meets(&rd->deps, F))
            continue;          /* hit by the fault: its content is unknown */
        checked++;
        for (uint32_t j = 0; j < rd->n; j++)
            if (rd->got[j] != rd->expect[j]) {
                soak_fail(r, "read %d (batch %d on queue %d, buffer %d, %u elements): element %u is 0x%08x, "
                          "expected 0x%08x: lost or reordered work", i, rd->batch, r->batch[rd->batch].q,
                          rd->buf, rd->n, j, rd->got[j], rd->expect[j]);
                break;
            }
    }
    if (r->plan->fault == FAULT_NONE && checked != r->nreads)
        soak_fail(r, "only %d of %d reads could be checked with no fault injected", checked, r->nreads);
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
            soak_fail(r, "host probe %d (how %d on batch %d%s): returned %d, notified %d with %d, but the "
                      "batch's final status is %d", i, p->how, p->batch[0], p->n > 1 ? " and more" : "", p->rc,
                      atomic_load(&p->notified), atomic_load(&p->notify_status), first_bad);
    }
}

int soak_check_round(struct soak_round *r)
{
    soak_bset F;
    check_failures(r, &F);
    check_batches(r);
    check_reads(r, &F);
    check_probes(r);
    return r->failures;
}
