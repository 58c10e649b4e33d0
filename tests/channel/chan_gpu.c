/* SPDX-License-Identifier: MIT */
/* The channel suite on a GPU backend (cuda over NCCL, hip over RCCL),
 * run on the emulated drivers and libraries of tests/emu by
 * tests/scripts/channels-cuda-emu and tests/scripts/channels-hip-emu: two ranks as two
 * processes started here (fork, before any devq call), rank 0's
 * devq_channel_id passed to rank 1 through a pipe.
 *
 * Cases (each in a fresh pair of processes, bounded by a kill timer):
 *   ops      every op x dtype x reduction against a host reference,
 *            interleaved with kernels on two queues per rank, groups,
 *            split, misuse (no launcher's world, a bad id size)
 *   kernel   rank 1's kernel fails before its all_reduce: its batch
 *            fails; rank 0's matching op fails (or times out) with a
 *            message; the channel then fails later ops at once
 *   fail     injected NCCL failure (DEVQ_EMU_NCCL_FAIL) in the 2nd op
 *   hang     injected hang (DEVQ_EMU_NCCL_HANG): the watchdog aborts the
 *            communicator after the channel timeout
 *   die      rank 1's process dies in its op (DEVQ_EMU_NCCL_DIE)
 *   skip     rank 1's batch fails before its all_reduce is issued (a
 *            wait on a failed signal): rank 0's times out, rank 1's
 *            channel fails later ops with "skipped"
 *   missing  no library: DEVQ_CAP_CHANNELS clear, -ENOTSUP naming it
 *   watchdog no thread can start (RLIMIT_NPROC at 1, as uid 65534 when
 *            root): the channel's first op is refused with -EAGAIN naming
 *            its watchdog thread (issue 27), and runs once it is lifted
 *
 * Environment: DEVQ_TEST_DEVICE (cuda or hip), DEVQ_TEST_CCL_ENV (the
 * library override variable, DEVQ_NCCL_LIBRARY or DEVQ_RCCL_LIBRARY),
 * CHAN_ONLY=case to run one case.  Exit 77 without channels. */
#include "config.h"
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>

#define NSIZE 2
#define SEC 1000000000ull

static const char *backend;

#include "chan_ref.h"

/* The kernels (chan_ref.h), run by the emulated driver (module below, cpu-args). */
static const char module[] = "devq-emu-module cpu-args\nchan_scale ptr 4\nchan_fail ptr\n";

static devq_device *dev;
static devq_queue *qa, *qb;
static devq_channel *ch;

static devq_buffer *alloc(size_t bytes)
{
    devq_buffer *b = NULL;
    OK(devq_buffer_alloc(dev, bytes, NULL, 0, &b));
    return b;
}

static void finish(devq_queue *q)
{
    OK(devq_queue_submit(q));
    OK(devq_queue_finish(q, 60 * SEC));
}

/* all_reduce (qa) and reduce_scatter (qb):
 * every dtype x every reduction. */
static void test_reductions(void)
{
    enum { N = 37 };
    unsigned char host[N * 8 * NSIZE], out[N * 8 * NSIZE];
    for (int t = DEVQ_I8; t <= DEVQ_F64; t++)
        for (int o = DEVQ_SUM; o <= DEVQ_AVG; o++) {
            size_t e = esz((enum devq_dtype)t);
            devq_buffer *src = alloc(N * e), *dst = alloc(N * e), *rs = alloc(N * e * NSIZE);
            for (size_t i = 0; i < N; i++)
                store(host, i, (enum devq_dtype)t, input(rank, i));
            OK(devq_queue_write(qa, src, 0, host, N * e));
            OK(devq_queue_all_reduce(qa, ch, dst, 0, src, 0, N, (enum devq_dtype)t, (enum devq_reduce)o));
            memset(out, 0, sizeof out);
            OK(devq_queue_read(qa, out, dst, 0, N * e));
            finish(qa);
            for (size_t i = 0; i < N; i++) {
                double want = reference((enum devq_reduce)o, (enum devq_dtype)t, i, NSIZE);
                double got = load(out, i, (enum devq_dtype)t);
                CHECK(got == want, "all_reduce %s op %d [%zu]: %g, want %g", tname((enum devq_dtype)t), o, i,
                      got, want);
                if (got != want)
                    break;
            }
            /* reduce_scatter: rank r gets block r of the reduction. */
            for (size_t i = 0; i < N * NSIZE; i++)
                store(host, i, (enum devq_dtype)t, input(rank, i % N));
            OK(devq_queue_write(qb, rs, 0, host, N * e * NSIZE));
            OK(devq_queue_reduce_scatter(qb, ch, dst, 0, rs, 0, N, (enum devq_dtype)t, (enum devq_reduce)o));
            OK(devq_queue_read(qb, out, dst, 0, N * e));
            finish(qb);
            for (size_t i = 0; i < N; i++) {
                double want = reference((enum devq_reduce)o, (enum devq_dtype)t, i, NSIZE);
                double got = load(out, i, (enum devq_dtype)t);
                CHECK(got == want, "reduce_scatter %s op %d [%zu]: %g, want %g", tname((enum devq_dtype)t), o,
                      i, got, want);
                if (got != want)
                    break;
            }
            devq_buffer_free(src, NULL);
            devq_buffer_free(dst, NULL);
            devq_buffer_free(rs, NULL);
        }
}

/* all_gather, broadcast from each root, send/recv both ways in one group:
 * every dtype. */
static void test_data_movement(void)
{
    enum { N = 29 };
    unsigned char host[N * 8 * NSIZE], out[N * 8 * NSIZE];
    for (int ti = DEVQ_I8; ti <= DEVQ_F64; ti++) {
        enum devq_dtype t = (enum devq_dtype)ti;
        size_t e = esz(t);
        devq_buffer *src = alloc(N * e), *all = alloc(N * e * NSIZE), *bc = alloc(N * e), *rv = alloc(N * e);
        for (size_t i = 0; i < N; i++)
            store(host, i, t, input(rank, i));
        OK(devq_queue_write(qa, src, 0, host, N * e));
        OK(devq_queue_all_gather(qa, ch, all, 0, src, 0, N, t));
        OK(devq_queue_read(qa, out, all, 0, N * e * NSIZE));
        finish(qa);
        for (int r = 0; r < NSIZE; r++)
            for (size_t i = 0; i < N; i++)
                CHECK(load(out, r * N + i, t) == input(r, i), "all_gather %s block %d [%zu]: %g", tname(t), r,
                      i, load(out, r * N + i, t));
        /* In place: this rank's block already sits at its offset. */
        memset(host, 0, sizeof host);
        for (size_t i = 0; i < N; i++)
            store(host, rank * N + i, t, input(rank, i) + 1);
        OK(devq_queue_write(qa, all, 0, host, N * e * NSIZE));
        OK(devq_queue_all_gather(qa, ch, all, 0, all, (size_t)rank * N * e, N, t));
        OK(devq_queue_read(qa, out, all, 0, N * e * NSIZE));
        finish(qa);
        for (int r = 0; r < NSIZE; r++)
            for (size_t i = 0; i < N; i++)
                CHECK(load(out, r * N + i, t) == input(r, i) + 1, "all_gather in place %s block %d [%zu]: %g",
                      tname(t), r, i, load(out, r * N + i, t));
        for (int root = 0; root < NSIZE; root++) {
            for (size_t i = 0; i < N; i++)
                store(host, i, t, rank == root ? input(root, i) + 10 : 0);
            OK(devq_queue_write(qb, bc, 0, host, N * e));
            OK(devq_queue_broadcast(qb, ch, bc, 0, N, t, root));
            OK(devq_queue_read(qb, out, bc, 0, N * e));
            finish(qb);
            for (size_t i = 0; i < N; i++)
                CHECK(load(out, i, t) == input(root, i) + 10, "broadcast %s root %d [%zu]: %g", tname(t),
                      root, i, load(out, i, t));
        }
        /* One group: a send and a receive to the peer (never deadlocks). */
        int peer = 1 - rank;
        OK(devq_queue_send(qa, ch, src, 0, N, t, peer));
        OK(devq_queue_recv(qa, ch, rv, 0, N, t, peer));
        OK(devq_queue_read(qa, out, rv, 0, N * e));
        finish(qa);
        for (size_t i = 0; i < N; i++)
            CHECK(load(out, i, t) == input(peer, i), "send/recv %s [%zu]: %g", tname(t), i, load(out, i, t));
        devq_buffer_free(src, NULL);
        devq_buffer_free(all, NULL);
        devq_buffer_free(bc, NULL);
        devq_buffer_free(rv, NULL);
    }
}

/* Kernels and collectives on two queues, ordered through the buffers:
 * x = scale(x) on qa, all_reduce SUM in place on qb, scale again on qa. */
static void test_interleaved(void)
{
    enum { N = 1000 };
    float host[N], out[N];
    devq_kernel *k = NULL;
    OK(devq_kernel_load(dev, module, sizeof module - 1, "chan_scale", &k));
    devq_buffer *x = alloc(sizeof host), *y = alloc(sizeof host);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < N; i++)
            host[i] = (float)(i % 7 + rank + round);
        uint32_t n = N;
        devq_launch l = { .global = { N, 1, 1 }, .local = { 64, 1, 1 } };
        OK(devq_queue_write(qa, x, 0, host, sizeof host));
        OK(devq_queue_exec(qa, k, (devq_arg[]){ DEVQ_ARG_BUF(x, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n) }, 2, &l));
        OK(devq_queue_submit(qa));
        /* Another stream's collective, after qa's kernel by the tracker,
         * and on y a second collective in the same group. */
        OK(devq_queue_all_reduce(qb, ch, x, 0, x, 0, N, DEVQ_F32, DEVQ_SUM));
        OK(devq_queue_all_reduce(qb, ch, y, 0, x, 0, N, DEVQ_F32, DEVQ_MAX));
        OK(devq_queue_submit(qb));
        OK(devq_queue_exec(qa, k, (devq_arg[]){ DEVQ_ARG_BUF(x, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n) }, 2, &l));
        OK(devq_queue_read(qa, out, x, 0, sizeof out));
        finish(qa);
        OK(devq_queue_finish(qb, 60 * SEC));
        for (size_t i = 0; i < N; i++) {
            float sum = 0;
            for (int r = 0; r < NSIZE; r++)
                sum += (float)(i % 7 + r + round) * 2 + 1;
            CHECK(out[i] == sum * 2 + 1, "interleaved round %d [%zu]: %g, want %g", round, i, out[i],
                  sum * 2 + 1);
            if (out[i] != sum * 2 + 1)
                break;
        }
        OK(devq_queue_read(qb, out, y, 0, sizeof out));
        finish(qb);
        /* y = max over ranks of the summed x (equal on both ranks). */
        for (size_t i = 0; i < N; i++) {
            float sum = 0;
            for (int r = 0; r < NSIZE; r++)
                sum += (float)(i % 7 + r + round) * 2 + 1;
            CHECK(out[i] == sum, "interleaved max round %d [%zu]: %g, want %g", round, i, out[i], sum);
            if (out[i] != sum)
                break;
        }
    }
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_kernel_destroy(k);
}

static void test_split_and_misuse(const unsigned char *id, size_t id_size)
{
    devq_channel *sub = NULL;
    OK(devq_channel_split(ch, 0, -rank, &sub));
    if (sub) {
        CHECK(devq_channel_size(sub) == NSIZE, "split size %d", devq_channel_size(sub));
        CHECK(devq_channel_rank(sub) == NSIZE - 1 - rank, "split rank %d (key -rank)",
              devq_channel_rank(sub));
        int32_t v = rank + 1, got = 0;
        devq_buffer *b = alloc(4);
        OK(devq_queue_write(qa, b, 0, &v, 4));
        OK(devq_queue_all_reduce(qa, sub, b, 0, b, 0, 1, DEVQ_I32, DEVQ_SUM));
        OK(devq_queue_read(qa, &got, b, 0, 4));
        finish(qa);
        CHECK(got == 3, "all_reduce on the split channel: %d", got);
        devq_buffer_free(b, NULL);
        devq_channel_destroy(sub);
    }
    devq_channel *none = NULL;
    int r = devq_channel_create(dev, NULL, &none);
    CHECK(r == -ENOTSUP && strstr(devq_errmsg(), "launcher's world"), "desc NULL: %d", r);
    /* A program handle is an MPI communicator (devq_mpi.h) on cuda/hip
     * too; this one is short: -EINVAL from the MPI engine, or -ENOTSUP
     * naming it where it is not installed. */
    int handle = 0;
    r = devq_channel_create_from_handle(dev, &handle, sizeof handle, &none);
    CHECK((r == -EINVAL || r == -ENOTSUP) && strstr(devq_errmsg(), "MPI") && !none, "from_handle: %d", r);
    devq_channel_desc d = { .rank = rank, .size = NSIZE, .id = id, .id_size = id_size - 1 };
    r = devq_channel_create(dev, &d, &none);
    CHECK(r == -EINVAL && strstr(devq_errmsg(), "id_size"), "bad id size: %d", r);
    unsigned char small[8];
    size_t ss = sizeof small;
    r = devq_channel_id(dev, small, &ss);
    CHECK(r == -EINVAL, "devq_channel_id with 8 bytes: %d", r);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One all_reduce of 64 ints on qa that is expected to fail: its batch's
 * error and cause (through a signal after it: a finish on a device that
 * the failure lost reports the loss), within the bound. */
static int failing_all_reduce(devq_kernel *kfail, devq_signal *failed, char *msg, size_t len, uint64_t *ms)
{
    enum { N = 64 };
    int32_t host[N], out[N];
    for (int i = 0; i < N; i++)
        host[i] = i;
    uint64_t t0 = now_ms();
    devq_buffer *b = NULL;
    int r = devq_buffer_alloc(dev, sizeof host, NULL, 0, &b);
    if (r < 0) { /* a device the failure lost */
        *ms = now_ms() - t0;
        snprintf(msg, len, "%s", devq_errmsg());
        return r;
    }
    r = devq_queue_write(qa, b, 0, host, sizeof host);
    if (failed) /* the batch fails at issue, before the collective */
        r |= devq_queue_wait(qa, failed, 1);
    if (kfail) {
        devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
        r |= devq_queue_exec(qa, kfail, (devq_arg[]){ DEVQ_ARG_BUF(b, DEVQ_READ_WRITE) }, 1, &l);
    }
    r |= devq_queue_all_reduce(qa, ch, b, 0, b, 0, N, DEVQ_I32, DEVQ_SUM);
    devq_signal *s = NULL;
    OK(devq_signal_create(0, &s));
    r |= devq_queue_signal(qa, s, 1);
    r |= devq_queue_read(qa, out, b, 0, sizeof out);
    int w = r;
    snprintf(msg, len, "%s", devq_errmsg());
    if (r == 0) {
        /* Submit may fail too (an op after the group issued on a device
         * the failure lost): the batch's cause is still its signal's. */
        devq_queue_submit(qa);
        w = devq_signal_wait(s, 1, 60 * SEC);
        snprintf(msg, len, "%s", devq_errmsg());
    }
    int f = devq_queue_finish(qa, 60 * SEC);
    *ms = now_ms() - t0;
    CHECK(f < 0, "the queue finished without the batch's failure");
    devq_signal_destroy(s);
    devq_buffer_free(b, NULL);
    return w;
}

/* DESIGN §5a across ranks: rank 1's input was left failed by a batch on
 * qb that failed at issue (it waited for a failed signal, so its write
 * was skipped).  The all_reduce on qa that reads it is ordered after
 * that write and enqueued at issue; when the stream reaches it the
 * input's failure is known, and the group must not run: rank 1 fails
 * naming the buffer, and rank 0 must fail too -- never get a sum made
 * from rank 1's stale data. */
static int failed_input_all_reduce(char *msg, size_t len, uint64_t *ms)
{
    enum { N = 64 };
    int32_t host[N], out[N];
    for (int i = 0; i < N; i++)
        host[i] = i;
    devq_buffer *b = alloc(sizeof host);
    OK(devq_queue_write(qa, b, 0, host, sizeof host));
    finish(qa);
    if (rank == 1) {
        devq_signal *failed = NULL;
        OK(devq_signal_create(0, &failed));
        OK(devq_signal_fail(failed, -EIO));
        OK(devq_queue_wait(qb, failed, 1));
        OK(devq_queue_write(qb, b, 0, host, sizeof host));
        devq_queue_submit(qb);
        CHECK(devq_queue_finish(qb, 60 * SEC) < 0, "input: qb's batch did not fail");
        CHECK(devq_buffer_status(b) < 0, "input: the skipped write did not fail the buffer");
        devq_signal_destroy(failed);
    }
    uint64_t t0 = now_ms();
    devq_signal *s = NULL;
    OK(devq_signal_create(0, &s));
    OK(devq_queue_all_reduce(qa, ch, b, 0, b, 0, N, DEVQ_I32, DEVQ_SUM));
    OK(devq_queue_signal(qa, s, 1));
    OK(devq_queue_read(qa, out, b, 0, sizeof out));
    devq_queue_submit(qa);
    int w = devq_signal_wait(s, 1, 60 * SEC);
    snprintf(msg, len, "%s", devq_errmsg());
    int f = devq_queue_finish(qa, 60 * SEC);
    *ms = now_ms() - t0;
    CHECK(f < 0, "input: the queue finished without the batch's failure");
    CHECK(devq_buffer_status(b) < 0, "input: the all_reduce's result is not marked failed");
    devq_signal_destroy(s);
    devq_buffer_free(b, NULL);
    return w;
}

/* The batch's cause (its signal's failure) has both needles. */
static int cause_has(const char *msg, const char *a, const char *b)
{
    return strstr(msg, a) && (!b || strstr(msg, b));
}

/* A healthy all_reduce first (the pair works), then the case's fault. */
static void test_fault(const char *which)
{
    devq_channel_set_timeout(ch, 3 * SEC);
    char msg[1024];
    uint64_t ms;
    if (strcmp(which, "kernel")) {
        int32_t v = 1, got = 0;
        devq_buffer *b = alloc(4);
        OK(devq_queue_write(qa, b, 0, &v, 4));
        OK(devq_queue_all_reduce(qa, ch, b, 0, b, 0, 1, DEVQ_I32, DEVQ_SUM));
        OK(devq_queue_read(qa, &got, b, 0, 4));
        finish(qa);
        CHECK(got == 2, "first all_reduce: %d", got);
        devq_buffer_free(b, NULL);
    }
    devq_kernel *kf = NULL;
    if (!strcmp(which, "kernel") && rank == 1)
        OK(devq_kernel_load(dev, module, sizeof module - 1, "chan_fail", &kf));
    devq_signal *failed = NULL;
    if (!strcmp(which, "skip") && rank == 1) {
        OK(devq_signal_create(0, &failed));
        OK(devq_signal_fail(failed, -EIO));
    }
    int r = !strcmp(which, "input") ? failed_input_all_reduce(msg, sizeof msg, &ms)
                                    : failing_all_reduce(kf, failed, msg, sizeof msg, &ms);
    fprintf(stderr, "rank %d: %s: batch %d after %llu ms: %s\n", rank, which, r, (unsigned long long)ms, msg);
    CHECK(r < 0, "%s: the batch with the collective did not fail", which);
    CHECK(ms < 15000, "%s: failing took %llu ms", which, (unsigned long long)ms);
    if (!strcmp(which, "fail"))
        CHECK(cause_has(msg, "asynchronous error", rank == 1 ? "injected failure" : "rank 1 failed"),
              "fail: the batch's cause is not the engine's message: %s", msg);
    if (!strcmp(which, "hang"))
        CHECK(cause_has(msg, rank == 1 ? "timed out" : "channel #1 (rank", rank == 1 ? "aborted" : NULL),
              "hang: no timeout message: %s", msg);
    if (!strcmp(which, "die"))
        CHECK(cause_has(msg, "asynchronous error", NULL), "die: no engine message: %s", msg);
    if (!strcmp(which, "skip"))
        CHECK(cause_has(msg, rank == 1 ? "which failed" : "timed out", NULL), "skip: %s", msg);
    if (!strcmp(which, "input"))
        /* Rank 0: the emulated library tells the peers of an abort
         * (ncclRemoteError); a real one lets them time out. */
        CHECK(rank == 1 ? cause_has(msg, "withheld", "devq_signal_fail(-EIO)")
                        : cause_has(msg, "asynchronous error", NULL) || cause_has(msg, "timed out", NULL),
              "input: %s", msg);
    if (!strcmp(which, "kernel"))
        /* Rank 1: the engine's "the device failed under the op", reported
         * asynchronously (ncclUnhandledCudaError) or by ncclGroupEnd when
         * the kernel had already failed at enqueue (a slow issue, as under
         * TSan: "unhandled cuda error"), or the device's failure itself
         * when it was seen while issuing. */
        CHECK(rank == 0 ? cause_has(msg, "channel #1 (rank 0", NULL)
                        : cause_has(msg, "channel #1 (rank 1", "ncclUnhandledCudaError") ||
                              cause_has(msg, "channel #1 (rank 1", "unhandled cuda error") ||
                              cause_has(msg, "aunch", NULL),
              "kernel: the cause is neither the channel's nor the kernel's: %s", msg);
    /* Later ops fail at once with the first cause. */
    r = failing_all_reduce(NULL, NULL, msg, sizeof msg, &ms);
    CHECK(r < 0 && ms < 2000, "%s: a later op: %d after %llu ms", which, r, (unsigned long long)ms);
    /* With the device alive (the hang ends in an abort, which poisons
     * nothing), the channel's first cause. */
    if (!strcmp(which, "hang") && rank == 1)
        CHECK(r == -EIO && strstr(msg, "timed out"), "hang: a later op's cause: %d %s", r, msg);
    if (!strcmp(which, "skip"))
        CHECK(r == -EIO && strstr(msg, rank == 1 ? "was skipped" : "timed out"),
              "skip: a later op's cause: %d %s", r, msg);
    if (!strcmp(which, "input") && rank == 1)
        CHECK(r == -EIO && strstr(msg, "withheld"), "input: a later op's cause: %d %s", r, msg);
    if (failed) {
        devq_signal_destroy(failed);
        /* Stay until rank 0 has timed out: a process that exits is seen
         * by its peers at once (their ops fail, not time out). */
        struct timespec ts = { 4, 500000000 };
        nanosleep(&ts, NULL);
    }
    if (kf)
        devq_kernel_destroy(kf);
}

static int open_rank(int fd_w, int fd_r, unsigned char *id, size_t *id_size)
{
    int r = devq_device_open(backend, &dev);
    if (r < 0) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, backend, devq_errmsg());
        return 77;
    }
    devq_device_info info;
    devq_device_info_get(dev, &info);
    if (!(info.caps & DEVQ_CAP_CHANNELS)) {
        fprintf(stderr, "rank %d: %s has no DEVQ_CAP_CHANNELS\n", rank, backend);
        return 77;
    }
    if (rank == 0) {
        *id_size = 128;
        if (devq_channel_id(dev, id, id_size) < 0) {
            fprintf(stderr, "rank 0: devq_channel_id: %s\n", devq_errmsg());
            return 1;
        }
        if (write(fd_w, id_size, sizeof *id_size) != sizeof *id_size ||
            write(fd_w, id, *id_size) != (ssize_t)*id_size)
            return 1;
    } else if (read(fd_r, id_size, sizeof *id_size) != sizeof *id_size || *id_size > 128 ||
               read(fd_r, id, *id_size) != (ssize_t)*id_size) {
        fprintf(stderr, "rank 1: no id from rank 0\n");
        return 1;
    }
    devq_channel_desc d = { .rank = rank, .size = NSIZE, .id = id, .id_size = *id_size };
    if (devq_channel_create(dev, &d, &ch) < 0) {
        fprintf(stderr, "rank %d: devq_channel_create: %s\n", rank, devq_errmsg());
        return 1;
    }
    OK(devq_queue_create(dev, NULL, &qa));
    OK(devq_queue_create(dev, NULL, &qb));
    return 0;
}

static void close_rank(void)
{
    if (qa)
        devq_queue_destroy(qa);
    if (qb)
        devq_queue_destroy(qb);
    if (ch)
        devq_channel_destroy(ch);
    devq_device_close(dev);
}

/* The library cannot be found: no capability, -ENOTSUP naming it. */
static int run_missing(void)
{
    const char *var = getenv("DEVQ_TEST_CCL_ENV");
    setenv(var, "/nonexistent/libccl-missing.so", 1);
    if (devq_device_open(backend, &dev) < 0)
        return 77;
    devq_device_info info;
    devq_device_info_get(dev, &info);
    CHECK(!(info.caps & DEVQ_CAP_CHANNELS), "caps has DEVQ_CAP_CHANNELS without the library");
    unsigned char id[128];
    size_t n = sizeof id;
    int r = devq_channel_id(dev, id, &n);
    CHECK(r == -ENOTSUP && strstr(devq_errmsg(), "libccl-missing") && strstr(devq_errmsg(), var),
          "channel id without the library: %d", r);
    devq_device_close(dev);
    return failures ? 1 : 0;
}

/* The watchdog starts at the channel's first recorded op: with no
 * thread allowed that op is refused (a recording error), and after the
 * lift the same op records and runs on both ranks. */
static void test_watchdog(void)
{
    int32_t v = 1, got = 0;
    devq_buffer *b = alloc(4);
    if (geteuid() == 0) { /* root is exempt from RLIMIT_NPROC */
        OK(setgroups(0, NULL));
        OK(setgid(65534));
        OK(setuid(65534));
    }
    struct rlimit old, low;
    OK(getrlimit(RLIMIT_NPROC, &old));
    low = (struct rlimit){ .rlim_cur = 1, .rlim_max = old.rlim_max };
    OK(setrlimit(RLIMIT_NPROC, &low));
    int r = devq_queue_all_reduce(qa, ch, b, 0, b, 0, 1, DEVQ_I32, DEVQ_SUM);
    CHECK(r == -EAGAIN && strstr(devq_errmsg(), "watchdog thread") && strstr(devq_errmsg(), "RLIMIT_NPROC"),
          "first op with no thread allowed: %d %s", r, devq_errmsg());
    r = devq_queue_submit(qa);
    CHECK(r == -EAGAIN, "submit of the refused op's batch: %d %s", r, devq_errmsg());
    OK(setrlimit(RLIMIT_NPROC, &old));
    /* After the lift: the emulated driver's own streams need threads. */
    r = devq_queue_finish(qa, 10 * SEC); /* reports the discarded batch once */
    CHECK(r == -EAGAIN, "finish after the refused op: %d %s", r, devq_errmsg());
    OK(devq_queue_write(qa, b, 0, &v, 4));
    OK(devq_queue_all_reduce(qa, ch, b, 0, b, 0, 1, DEVQ_I32, DEVQ_SUM));
    OK(devq_queue_read(qa, &got, b, 0, 4));
    finish(qa);
    CHECK(got == 2, "all_reduce after the lift: %d", got);
    devq_buffer_free(b, NULL);
}

static int run_rank(const char *which, int fd_w, int fd_r)
{
    if (!strcmp(which, "missing"))
        return rank == 0 ? run_missing() : 0;
    /* Faults, read by the emulated library at ncclCommInitRank. */
    if (!strcmp(which, "fail"))
        setenv("DEVQ_EMU_NCCL_FAIL", "1:2", 1);
    if (!strcmp(which, "hang"))
        setenv("DEVQ_EMU_NCCL_HANG", "1:2", 1);
    if (!strcmp(which, "die"))
        setenv("DEVQ_EMU_NCCL_DIE", "1:2", 1);
    unsigned char id[128];
    size_t id_size = 0;
    int r = open_rank(fd_w, fd_r, id, &id_size);
    if (r)
        return r;
    if (!strcmp(which, "ops")) {
        test_reductions();
        test_data_movement();
        test_interleaved();
        test_split_and_misuse(id, id_size);
    } else if (!strcmp(which, "watchdog")) {
        test_watchdog();
    } else {
        test_fault(which);
    }
    close_rank();
    return failures ? 1 : 0;
}

/* Two ranks of one case; 0 passed, 77 skipped, 1 failed. */
static int run_case(const char *which)
{
    int fds[2];
    if (pipe(fds) < 0)
        return 1;
    pid_t pid[NSIZE];
    for (int r = 0; r < NSIZE; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            rank = r;
            alarm(90); /* never hang: SIGALRM ends a stuck rank */
            int rc = run_rank(which, fds[1], fds[0]);
            /* exit, not _exit: LeakSanitizer checks at exit (the parent
             * made no devq call, so its handlers have nothing to do). */
            exit(rc);
        }
    }
    close(fds[0]);
    close(fds[1]);
    int rc[NSIZE];
    for (int r = 0; r < NSIZE; r++) {
        int st = 0;
        waitpid(pid[r], &st, 0);
        rc[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    int die_ok = !strcmp(which, "die") && rc[1] == 86;
    fprintf(stderr, "chan_gpu %s: %s: rank 0 exit %d, rank 1 exit %d%s\n", backend, which, rc[0], rc[1],
            die_ok ? " (died as injected)" : "");
    if (rc[0] == 77)
        return 77;
    return rc[0] == 0 && (rc[1] == 0 || die_ok) ? 0 : 1;
}

int main(void)
{
    backend = getenv("DEVQ_TEST_DEVICE");
    if (!backend || !getenv("DEVQ_TEST_CCL_ENV")) {
        fprintf(
            stderr,
            "chan_gpu: set DEVQ_TEST_DEVICE and DEVQ_TEST_CCL_ENV (see tests/scripts/channels-cuda-emu)\n");
        return 77;
    }
    static const char *const cases[] = { "ops",  "kernel", "fail",    "hang",    "die",
                                         "skip", "input",  "missing", "watchdog" };
    const char *only = getenv("CHAN_ONLY");
    int bad = 0, ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (only && strcmp(only, cases[i]))
            continue;
        int r = run_case(cases[i]);
        if (r == 77) {
            fprintf(stderr, "chan_gpu: skipped: %s has no channels here\n", backend);
            return 77;
        }
        bad += r != 0;
        ran++;
    }
    printf("chan_gpu %s: %d case(s), %d failed\n", backend, ran, bad);
    return bad ? 1 : 0;
}
