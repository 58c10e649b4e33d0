/* SPDX-License-Identifier: MIT */
/* The channel suite (DESIGN §11), run on the cpu backend under
 * `mpirun -np 2` by tests/scripts/channels-mpi: every op x dtype x reduction
 * against a host reference, interleaved with kernels on two queues per
 * rank (the tracker orders them through the buffers), groups, misuse
 * that needs a live channel, and failure injection: a rank whose kernel
 * fails skips its collective (its batch fails, naming the kernel), the
 * peer's matching op times out with a message, the channel fails its
 * later ops on both ranks, nothing hangs, and a new channel works.
 *
 * Not a Check suite: Check forks, and MPI must not be used across a fork.
 * Each check prints the rank and line on failure and the run exits 1. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>

#include "chan_ref.h"

static devq_device *dev;
static devq_queue *qa, *qb;
static devq_channel *ch;
static int size;

static devq_buffer *alloc(size_t bytes)
{
    devq_buffer *b = NULL;
    OK(devq_buffer_alloc(dev, bytes, NULL, 7, &b));
    return b;
}

static void fill_input(devq_buffer *b, size_t first, size_t n, enum devq_dtype t, int r)
{
    for (size_t i = 0; i < n; i++)
        store(devq_buffer_host_ptr(b), first + i, t, input(r, i));
}

static void __attribute__((unused)) finish_both(void)
{
    OK(devq_queue_submit(qa));
    OK(devq_queue_submit(qb));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    OK(devq_queue_finish(qb, 60ull * 1000000000ull));
}

/* all_reduce and reduce_scatter: every dtype x every reduction, out of
 * place and in place, on alternating queues. */
static void test_reductions(void)
{
    const size_t n = 37;
    for (int t = DEVQ_I8; t <= DEVQ_F64; t++)
        for (int o = DEVQ_SUM; o <= DEVQ_AVG; o++) {
            devq_queue *q = (t + o) % 2 ? qa : qb;
            devq_buffer *src = alloc(n * size * esz(t)), *dst = alloc(n * size * esz(t)),
                        *inpl = alloc(n * esz(t));
            fill_input(src, 0, n, t, rank);
            fill_input(inpl, 0, n, t, rank);
            OK(devq_queue_all_reduce(q, ch, dst, 0, src, 0, n, t, o));
            OK(devq_queue_all_reduce(q, ch, inpl, 0, inpl, 0, n, t, o));
            OK(devq_queue_submit(q));
            OK(devq_queue_finish(q, 60ull * 1000000000ull));
            int bad = 0;
            for (size_t i = 0; i < n && !bad; i++) {
                double want = reference(o, t, i, size);
                double got = load(devq_buffer_host_ptr(dst), i, t),
                       got2 = load(devq_buffer_host_ptr(inpl), i, t);
                if (got != want || got2 != want) {
                    CHECK(0, "all_reduce %s %s element %zu: got %g (in place %g), want %g", tname(t),
                          oname(o), i, got, got2, want);
                    bad = 1;
                }
            }
            /* reduce_scatter: rank r gets block r of the reduction of
             * every rank's size*n elements (element j of block b is input(., j)). */
            for (int blk = 0; blk < size; blk++)
                fill_input(src, (size_t)blk * n, n, t, rank);
            OK(devq_queue_reduce_scatter(q, ch, dst, 0, src, 0, n, t, o));
            OK(devq_queue_submit(q));
            OK(devq_queue_finish(q, 60ull * 1000000000ull));
            for (size_t i = 0; i < n && !bad; i++) {
                double want = reference(o, t, i, size), got = load(devq_buffer_host_ptr(dst), i, t);
                if (got != want) {
                    CHECK(0, "reduce_scatter %s %s element %zu: got %g, want %g", tname(t), oname(o), i, got,
                          want);
                    bad = 1;
                }
            }
            OK(devq_buffer_free(src, NULL));
            OK(devq_buffer_free(dst, NULL));
            OK(devq_buffer_free(inpl, NULL));
        }
}

/* all_gather, broadcast, send/recv for every dtype. */
static void test_data_movement(void)
{
    const size_t n = 19;
    for (int t = DEVQ_I8; t <= DEVQ_F64; t++) {
        devq_buffer *src = alloc(n * esz(t)), *dst = alloc(n * size * esz(t)), *bc = alloc(n * esz(t));
        fill_input(src, 0, n, t, rank);
        /* In place too: this rank's block of dst already holds its input. */
        devq_buffer *gin = alloc(n * size * esz(t));
        fill_input(gin, (size_t)rank * n, n, t, rank);
        if (rank == 1)
            fill_input(bc, 0, n, t, 1);
        else
            memset(devq_buffer_host_ptr(bc), 0, n * esz(t));
        OK(devq_queue_all_gather(qa, ch, dst, 0, src, 0, n, t));
        OK(devq_queue_all_gather(qa, ch, gin, 0, gin, (size_t)rank * n * esz(t), n, t));
        OK(devq_queue_broadcast(qa, ch, bc, 0, n, t, 1));
        OK(devq_queue_submit(qa));
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < n; i++) {
                double got = load(devq_buffer_host_ptr(dst), (size_t)r * n + i, t);
                double got2 = load(devq_buffer_host_ptr(gin), (size_t)r * n + i, t);
                if (got != input(r, i) || got2 != input(r, i)) {
                    CHECK(0, "all_gather %s block %d element %zu: got %g (in place %g), want %g", tname(t), r,
                          i, got, got2, input(r, i));
                    r = size;
                    break;
                }
            }
        for (size_t i = 0; i < n; i++)
            if (load(devq_buffer_host_ptr(bc), i, t) != input(1, i)) {
                CHECK(0, "broadcast %s element %zu: got %g, want %g", tname(t), i,
                      load(devq_buffer_host_ptr(bc), i, t), input(1, i));
                break;
            }
        /* send/recv in one group on each rank: both send first, which
         * deadlocks on large messages unless the group starts both. */
        devq_buffer *rx = alloc(n * esz(t));
        int peer = rank ^ 1;
        OK(devq_queue_send(qb, ch, src, 0, n, t, peer));
        OK(devq_queue_recv(qb, ch, rx, 0, n, t, peer));
        OK(devq_queue_submit(qb));
        OK(devq_queue_finish(qb, 60ull * 1000000000ull));
        for (size_t i = 0; i < n; i++)
            if (load(devq_buffer_host_ptr(rx), i, t) != input(peer, i)) {
                CHECK(0, "send/recv %s element %zu: got %g, want %g", tname(t), i,
                      load(devq_buffer_host_ptr(rx), i, t), input(peer, i));
                break;
            }
        OK(devq_buffer_free(src, NULL));
        OK(devq_buffer_free(dst, NULL));
        OK(devq_buffer_free(bc, NULL));
        OK(devq_buffer_free(gin, NULL));
        OK(devq_buffer_free(rx, NULL));
    }
}

/* A large exchange in one group (rendezvous-sized messages both ways). */
static void test_group_large(void)
{
    const size_t n = 4u << 20; /* 16 MiB of F32 */
    devq_buffer *tx = alloc(n * 4), *rx = alloc(n * 4);
    float *p = devq_buffer_host_ptr(tx);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(rank * 1000 + (int)(i % 1000));
    int peer = rank ^ 1;
    if (rank == 0) {
        OK(devq_queue_send(qa, ch, tx, 0, n, DEVQ_F32, peer));
        OK(devq_queue_recv(qa, ch, rx, 0, n, DEVQ_F32, peer));
    } else {
        OK(devq_queue_recv(qa, ch, rx, 0, n, DEVQ_F32, peer));
        OK(devq_queue_send(qa, ch, tx, 0, n, DEVQ_F32, peer));
    }
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    const float *q = devq_buffer_host_ptr(rx);
    for (size_t i = 0; i < n; i += 4099)
        if (q[i] != (float)(peer * 1000 + (int)(i % 1000))) {
            CHECK(0, "large exchange element %zu: got %g", i, q[i]);
            break;
        }
    OK(devq_buffer_free(tx, NULL));
    OK(devq_buffer_free(rx, NULL));
}

/* Kernels and collectives on two queues: qa scales x, qb all-reduces it
 * into y (the tracker makes qb wait for qa's write), qa scales y (waits
 * for qb's write).  Repeated, no host synchronisation in between. */
static void test_interleaved(void)
{
    const uint32_t n = 1000;
    devq_kernel *k;
    OK(devq_kernel_load(dev, NULL, 0, "chan_scale", &k));
    devq_buffer *x = alloc(n * 4), *y = alloc(n * 4);
    devq_launch l = { .global = { n }, .local = { 8 } };
    float *xp = devq_buffer_host_ptr(x);
    for (uint32_t i = 0; i < n; i++)
        xp[i] = (float)(rank + 1);
    /* host model */
    double v[2] = { 1, 2 }, yv = 0;
    for (int round = 0; round < 20; round++) {
        devq_arg ax[2] = { DEVQ_ARG_BUF(x, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n) };
        devq_arg ay[2] = { DEVQ_ARG_BUF(y, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&n) };
        OK(devq_queue_exec(qa, k, ax, 2, &l));
        OK(devq_queue_submit(qa));
        OK(devq_queue_all_reduce(qb, ch, y, 0, x, 0, n, DEVQ_F32, DEVQ_SUM));
        OK(devq_queue_submit(qb));
        OK(devq_queue_exec(qa, k, ay, 2, &l));
        OK(devq_queue_submit(qa));
        for (int r = 0; r < 2; r++)
            v[r] = v[r] * 2 + 1;
        yv = (v[0] + v[1]) * 2 + 1;
        if (round == 9) {
            /* keep the numbers exact in floats: restart x from the host */
            OK(devq_queue_finish(qa, 60ull * 1000000000ull));
            OK(devq_queue_finish(qb, 60ull * 1000000000ull));
            const float *yp = devq_buffer_host_ptr(y);
            CHECK(yp[0] == (float)yv && yp[n - 1] == (float)yv, "round %d: y = %g, want %g", round, yp[0],
                  yv);
            for (uint32_t i = 0; i < n; i++)
                xp[i] = (float)(rank + 1);
            v[0] = 1;
            v[1] = 2;
        }
    }
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    OK(devq_queue_finish(qb, 60ull * 1000000000ull));
    const float *yp = devq_buffer_host_ptr(y);
    CHECK(yp[0] == (float)yv && yp[n - 1] == (float)yv, "final: y = %g, want %g", yp[0], yv);
    devq_stats st;
    OK(devq_stats_get(dev, &st));
    CHECK(st.waits_inserted > 0, "the tracker inserted no waits between the queues");
    OK(devq_buffer_free(x, NULL));
    OK(devq_buffer_free(y, NULL));
    devq_kernel_destroy(k);
}

/* One channel from two queues, in an order the tracker fixes the same
 * way on every rank: qb's all_reduce reads what qa's wrote. */
static void test_two_queues(void)
{
    devq_buffer *a = alloc(64), *b = alloc(64), *c = alloc(64);
    for (int round = 0; round < 50; round++) {
        float *ap = devq_buffer_host_ptr(a);
        ap[0] = (float)(rank + 1);
        OK(devq_queue_all_reduce(qa, ch, b, 0, a, 0, 1, DEVQ_F32, DEVQ_SUM)); /* 3 */
        OK(devq_queue_submit(qa));
        OK(devq_queue_all_reduce(qb, ch, c, 0, b, 0, 1, DEVQ_F32, DEVQ_SUM)); /* 6 */
        OK(devq_queue_submit(qb));
        OK(devq_queue_finish(qb, 60ull * 1000000000ull));
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        float got = ((float *)devq_buffer_host_ptr(c))[0];
        if (got != 6.0f) {
            CHECK(0, "round %d: got %g, want 6", round, got);
            break;
        }
    }
    OK(devq_buffer_free(a, NULL));
    OK(devq_buffer_free(b, NULL));
    OK(devq_buffer_free(c, NULL));
}

/* Consecutive ops of a channel in one batch form a group, started
 * together; those that depend on an earlier member (in place on one
 * buffer) must still see its result. */
static void test_dependent_group(void)
{
    devq_buffer *x = alloc(64), *all = alloc(64);
    for (int round = 0; round < 20; round++) {
        float *xp = devq_buffer_host_ptr(x);
        for (int i = 0; i < 4; i++)
            xp[i] = (float)(rank + 1 + i);
        OK(devq_queue_all_reduce(qa, ch, x, 0, x, 0, 4, DEVQ_F32, DEVQ_SUM));
        OK(devq_queue_all_reduce(qa, ch, x, 0, x, 0, 4, DEVQ_F32, DEVQ_SUM));
        OK(devq_queue_all_reduce(qa, ch, x, 0, x, 0, 4, DEVQ_F32, DEVQ_MAX));
        OK(devq_queue_all_gather(qa, ch, all, 0, x, 0, 4, DEVQ_F32));
        OK(devq_queue_submit(qa));
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        const float *ap = devq_buffer_host_ptr(all);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < 4; i++) {
                float want = (float)(2 * (3 + 2 * i)); /* (1+i) + (2+i), doubled */
                if (ap[r * 4 + i] != want) {
                    CHECK(0, "round %d: rank %d element %d: got %g, want %g", round, r, i, ap[r * 4 + i],
                          want);
                    round = 20;
                    r = size;
                    break;
                }
            }
    }
    OK(devq_buffer_free(x, NULL));
    OK(devq_buffer_free(all, NULL));
}

/* Large all_reduces (over 1 MiB: the engine may split them in phases),
 * counts that do not divide by the size, in place and out of place. */
static void test_large_reduce(void)
{
    const size_t n = (1u << 19) + 3;
    static const struct {
        enum devq_dtype t;
        enum devq_reduce o;
    } cases[] = {
        { DEVQ_F32, DEVQ_SUM },  { DEVQ_F32, DEVQ_AVG }, { DEVQ_BF16, DEVQ_MAX },
        { DEVQ_I64, DEVQ_PROD }, { DEVQ_F16, DEVQ_SUM },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        enum devq_dtype t = cases[c].t;
        enum devq_reduce o = cases[c].o;
        devq_buffer *src = alloc(n * esz(t)), *dst = alloc(n * esz(t)), *inpl = alloc(n * esz(t));
        fill_input(src, 0, n, t, rank);
        fill_input(inpl, 0, n, t, rank);
        /* one queue: two queues would run these in either order, and
         * every rank must run a channel's ops in the same order */
        OK(devq_queue_all_reduce(qa, ch, dst, 0, src, 0, n, t, o));
        OK(devq_queue_submit(qa));
        OK(devq_queue_all_reduce(qa, ch, inpl, 0, inpl, 0, n, t, o));
        OK(devq_queue_submit(qa));
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        for (size_t i = 0; i < n; i++) {
            double want = reference(o, t, i, size);
            double got = load(devq_buffer_host_ptr(dst), i, t), got2 = load(devq_buffer_host_ptr(inpl), i, t);
            if (got != want || got2 != want) {
                CHECK(0, "large all_reduce %s %s element %zu of %zu: got %g (in place %g), want %g", tname(t),
                      oname(o), i, n, got, got2, want);
                break;
            }
        }
        OK(devq_buffer_free(src, NULL));
        OK(devq_buffer_free(dst, NULL));
        OK(devq_buffer_free(inpl, NULL));
    }
}

/* Misuse that needs a live channel: each is -EINVAL naming the argument,
 * sticky, and discarded at submit. */
static void expect_rec_err(devq_queue *q, int r, const char *needle, int line)
{
    if (r != -EINVAL || !strstr(devq_errmsg(), needle)) {
        fprintf(stderr, "rank %d: line %d: got %d '%s', want -EINVAL naming '%s'\n", rank, line, r,
                devq_errmsg(), needle);
        failures++;
    }
    CHECK(devq_queue_submit(q) == -EINVAL, "sticky error at submit");
    devq_queue_finish(q, 60ull * 1000000000ull);
}
#define REC_ERR(q, call, needle) expect_rec_err((q), (call), (needle), __LINE__)

static void test_misuse(void)
{
    devq_buffer *b = alloc(256);
    REC_ERR(qa, devq_queue_send(qa, ch, b, 0, 4, DEVQ_F32, size), "peer 2 is not a rank");
    REC_ERR(qa, devq_queue_recv(qa, ch, b, 0, 4, DEVQ_F32, -1), "peer -1 is not a rank");
    REC_ERR(qa, devq_queue_send(qa, ch, b, 0, 4, DEVQ_F32, rank), "is this rank");
    REC_ERR(qa, devq_queue_broadcast(qa, ch, b, 0, 4, DEVQ_F32, 5), "root 5");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 0, 0, DEVQ_F32, DEVQ_SUM), "count is 0");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 0, 65, DEVQ_F32, DEVQ_SUM), "does not fit");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, SIZE_MAX - 3, b, 0, 1, DEVQ_F32, DEVQ_SUM), "does not fit");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 0, SIZE_MAX / 2, DEVQ_F64, DEVQ_SUM), "does not fit");
    REC_ERR(qa, devq_queue_all_gather(qa, ch, b, 0, b, 0, 64, DEVQ_F32),
            "does not fit"); /* dst needs size*64 */
    REC_ERR(qa, devq_queue_reduce_scatter(qa, ch, b, 0, b, 128, 32, DEVQ_F32, DEVQ_SUM), "does not fit");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 0, 4, (enum devq_dtype)42, DEVQ_SUM), "dtype 42");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 0, 4, DEVQ_F32, (enum devq_reduce)9), "reduction 9");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, b, 0, b, 8, 4, DEVQ_F32, DEVQ_SUM), "overlap");
    REC_ERR(qa, devq_queue_all_reduce(qa, ch, NULL, 0, b, 0, 4, DEVQ_F32, DEVQ_SUM), "dst is NULL");
    /* A channel of another device (DEVQ_CPU_DEVICES=2). */
    devq_device *dev1;
    if (devq_device_open("cpu:1", &dev1) == 0) {
        devq_queue *q1;
        devq_buffer *b1;
        OK(devq_queue_create(dev1, NULL, &q1));
        OK(devq_buffer_alloc(dev1, 256, NULL, 1, &b1));
        REC_ERR(q1, devq_queue_all_reduce(q1, ch, b1, 0, b1, 0, 4, DEVQ_F32, DEVQ_SUM),
                "create a channel per device");
        REC_ERR(qa, devq_queue_all_reduce(qa, ch, b1, 0, b, 0, 4, DEVQ_F32, DEVQ_SUM), "belongs to cpu:1");
        OK(devq_buffer_free(b1, NULL));
        devq_queue_destroy(q1);
        devq_device_close(dev1);
    } else
        CHECK(0, "no cpu:1 (run with DEVQ_CPU_DEVICES=2)");
    devq_channel *sp;
    CHECK(devq_channel_split(ch, -1, 0, &sp) == -EINVAL && strstr(devq_errmsg(), "color -1"),
          "split color -1");
    OK(devq_buffer_free(b, NULL));
}

/* split: each rank alone, then both together in reverse order. */
static void test_split(void)
{
    devq_channel *solo = NULL, *rev = NULL;
    OK(devq_channel_split(ch, rank, 0, &solo));
    OK(devq_channel_split(ch, 0, -rank, &rev));
    CHECK(devq_channel_size(solo) == 1 && devq_channel_rank(solo) == 0, "solo: rank %d size %d",
          devq_channel_rank(solo), devq_channel_size(solo));
    CHECK(devq_channel_size(rev) == size && devq_channel_rank(rev) == size - 1 - rank, "reversed: rank %d",
          devq_channel_rank(rev));
    devq_buffer *b = alloc(64);
    float *p = devq_buffer_host_ptr(b);
    p[0] = (float)(devq_channel_rank(rev) + 1);
    OK(devq_queue_all_reduce(qa, solo, b, 0, b, 0, 1, DEVQ_F32, DEVQ_SUM)); /* alone: unchanged */
    OK(devq_queue_broadcast(qa, rev, b, 0, 1, DEVQ_F32, 0));                /* from world rank 1 */
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    CHECK(p[0] == 1.0f, "split broadcast: got %g, want 1", p[0]);
    devq_channel_destroy(solo);
    devq_channel_destroy(rev);
    OK(devq_buffer_free(b, NULL));
}

/* The id path: rank 0's id handed to every rank (here through the
 * world channel itself), then a channel made from it. */
static void test_id(void)
{
    unsigned char id[64];
    size_t n = sizeof id;
    OK(devq_channel_id(dev, id, &n));
    devq_buffer *b = alloc(64);
    memcpy(devq_buffer_host_ptr(b), id, n);
    OK(devq_queue_broadcast(qa, ch, b, 0, n, DEVQ_U8, 0));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    devq_channel_desc d = { .rank = rank, .size = size, .id = devq_buffer_host_ptr(b), .id_size = n };
    devq_channel *c2 = NULL;
    OK(devq_channel_create(dev, &d, &c2));
    CHECK(devq_channel_rank(c2) == rank && devq_channel_size(c2) == size, "id channel rank/size");
    devq_channel_destroy(c2);
    size_t small = 4;
    CHECK(devq_channel_id(dev, id, &small) == -EINVAL, "id capacity 4 accepted");
    OK(devq_buffer_free(b, NULL));
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Failure injection.  On rank 0 a kernel that fails comes before the
 * all_reduce in the same batch: rank 0's batch fails with the kernel's
 * cause and the all_reduce is skipped, its dst failed.  Rank 0 tells
 * its peer (a notice, devq_engine.h): rank 1's all_reduce fails at once
 * -- long before its 2 s timeout -- with rank 0's cause, the kernel's
 * name included, its dst failed.  Later ops on the channel fail on both
 * ranks at once; a new channel works. */
static void test_failure(void)
{
    devq_kernel *kf;
    OK(devq_kernel_load(dev, NULL, 0, "chan_fail", &kf));
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    OK(devq_channel_set_timeout(fc, 2ull * 1000000000ull));
    devq_buffer *src = alloc(64), *dst = alloc(64);
    memset(devq_buffer_host_ptr(src), 0, 64);
    if (rank == 0) {
        devq_launch l = { .global = { 1 } };
        devq_arg a = DEVQ_ARG_BUF(src, DEVQ_WRITE);
        OK(devq_queue_exec(qa, kf, &a, 1, &l));
    }
    OK(devq_queue_all_reduce(qa, fc, dst, 0, src, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    int r = devq_queue_finish(qa, 30ull * 1000000000ull);
    if (rank == 0) {
        CHECK(r == -EIO && strstr(devq_errmsg(), "chan_fail"),
              "rank 0: finish %d, want -EIO naming the kernel", r);
    } else {
        CHECK(r == -EIO && strstr(devq_errmsg(), "rank 0 dropped out") && strstr(devq_errmsg(), "chan_fail"),
              "rank 1: finish %d, want -EIO with rank 0's cause", r);
        /* Learnt from rank 0's notice, not from the 2 s timeout: by the
         * cause, not by the clock (a loaded machine may take longer). */
        CHECK(!strstr(devq_errmsg(), "timed out"), "rank 1 learnt of rank 0's failure by its timeout: %s",
              devq_errmsg());
    }
    CHECK(devq_buffer_status(dst) < 0, "dst of the failed collective is not failed (%d)",
          devq_buffer_status(dst));
    /* The channel is out of step now: later ops fail at once, with the cause. */
    devq_buffer *src2 = alloc(64), *dst2 = alloc(64);
    memset(devq_buffer_host_ptr(src2), 0, 64);
    OK(devq_queue_all_reduce(qb, fc, dst2, 0, src2, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qb));
    r = devq_queue_finish(qb, 30ull * 1000000000ull);
    CHECK(r == -EIO && strstr(devq_errmsg(), rank == 0 ? "skipped" : "rank 0 dropped out"),
          "later op on a broken channel: %d", r);
    CHECK(!strstr(devq_errmsg(), "timed out"), "a broken channel's op waited for its timeout: %s",
          devq_errmsg());
    CHECK(devq_buffer_status(dst2) < 0, "dst of an op on a broken channel is not failed");
    OK(devq_buffer_free(src2, NULL));
    OK(devq_buffer_free(dst2, NULL));
    devq_channel_destroy(fc);
    /* A new channel works (the world itself was never touched). */
    devq_channel *nc = NULL;
    OK(devq_channel_create(dev, NULL, &nc));
    /* On rank 0, src was failed by the kernel: a write of all of it
     * declares new contents; so does the all_reduce for all of dst. */
    static const float ones[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    OK(devq_queue_write(qa, src, 0, ones, sizeof ones));
    OK(devq_queue_all_reduce(qa, nc, dst, 0, src, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 30ull * 1000000000ull));
    CHECK(((float *)devq_buffer_host_ptr(dst))[0] == (float)size, "new channel after a failure: %g",
          ((float *)devq_buffer_host_ptr(dst))[0]);
    CHECK(devq_buffer_status(dst) == 0, "dst still failed after a successful all_reduce wrote it");
    devq_channel_destroy(nc);
    /* Rank 1's abandoned all_reduce may still complete inside MPI if the
     * peer ever comes: freeing its buffers must not give their memory to
     * anyone (it stays outstanding).  Rank 0's op never started. */
    devq_mem_stats before, after;
    OK(devq_queue_finish(qa, 30ull * 1000000000ull));
    OK(devq_mem_reap(dev));
    OK(devq_mem_stats_get(dev, &before));
    OK(devq_buffer_free(src, NULL));
    OK(devq_buffer_free(dst, NULL));
    OK(devq_queue_finish(qa, 30ull * 1000000000ull));
    OK(devq_mem_reap(dev));
    OK(devq_mem_stats_get(dev, &after));
    if (rank == 1)
        CHECK(after.bytes_outstanding >= before.bytes_outstanding,
              "rank 1: the abandoned collective's buffers gave back their memory (%llu -> %llu bytes)",
              (unsigned long long)before.bytes_outstanding, (unsigned long long)after.bytes_outstanding);
    else
        CHECK(after.bytes_outstanding + 128 <= before.bytes_outstanding,
              "rank 0: freeing two 64-byte buffers gave back nothing (%llu -> %llu bytes)",
              (unsigned long long)before.bytes_outstanding, (unsigned long long)after.bytes_outstanding);
    devq_kernel_destroy(kf);
}

/* A collective that reads a buffer a failed kernel left (in an earlier
 * batch on another queue) does not run on that rank: its batch fails
 * with the chained cause, and so does the peer's, told at once. */
static void test_failed_input(void)
{
    devq_kernel *kf;
    OK(devq_kernel_load(dev, NULL, 0, "chan_fail", &kf));
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    OK(devq_channel_set_timeout(fc, 1000000000ull));
    devq_buffer *src = alloc(64), *dst = alloc(64);
    memset(devq_buffer_host_ptr(src), 0, 64);
    if (rank == 0) {
        devq_launch l = { .global = { 1 } };
        devq_arg a = DEVQ_ARG_BUF(src, DEVQ_WRITE);
        OK(devq_queue_exec(qa, kf, &a, 1, &l));
        OK(devq_queue_submit(qa));
    }
    OK(devq_queue_all_reduce(qb, fc, dst, 0, src, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qb));
    int r = devq_queue_finish(qb, 30ull * 1000000000ull);
    if (rank == 0) {
        CHECK(r == -EIO && strstr(devq_errmsg(), "which failed") && strstr(devq_errmsg(), "chan_fail"),
              "rank 0: finish %d, want the chained cause", r);
        devq_queue_finish(qa, 30ull * 1000000000ull); /* reports the kernel's failure */
    } else
        CHECK(r == -EIO && strstr(devq_errmsg(), "rank 0 dropped out") &&
                  strstr(devq_errmsg(), "which failed"),
              "rank 1: finish %d, want -EIO with rank 0's chained cause", r);
    CHECK(devq_buffer_status(dst) < 0, "dst of the skipped collective is not failed");
    devq_channel_destroy(fc);
    OK(devq_buffer_free(src, NULL));
    OK(devq_buffer_free(dst, NULL));
    devq_kernel_destroy(kf);
}

/* A peer that never comes: nothing tells rank 0, which times out (1 s)
 * with -ETIMEDOUT -- the bound stays.  Rank 0 then tells rank 1, whose
 * own op on the channel (with a 30 s timeout) fails at once with rank
 * 0's cause.  Point-to-point, so that no op of rank 1 can match the one
 * rank 0 abandoned inside MPI. */
static void test_timeout(void)
{
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    OK(devq_channel_set_timeout(fc, rank == 0 ? 1000000000ull : 30000000000ull));
    devq_buffer *b = alloc(64), *one = alloc(4);
    memset(devq_buffer_host_ptr(one), 0, 4);
    uint64_t t0 = now_ms();
    int r = 0;
    if (rank == 0) {
        OK(devq_queue_recv(qa, fc, b, 0, 16, DEVQ_F32, 1));
        OK(devq_queue_submit(qa));
        r = devq_queue_finish(qa, 30ull * 1000000000ull);
        uint64_t took = now_ms() - t0;
        CHECK(r == -ETIMEDOUT && strstr(devq_errmsg(), "timed out"), "rank 0: finish %d, want -ETIMEDOUT", r);
        /* The roll call: rank 1 is alive but not at this op, so silent. */
        CHECK(strstr(devq_errmsg(), "peer rank 1 did not answer"),
              "rank 0: the cause does not name the silent "
              "peer: %s",
              devq_errmsg());
        CHECK(took >= 900 && took < 20000, "rank 0: the timeout took %llu ms", (unsigned long long)took);
    }
    /* Both ranks here (the world channel): rank 0 has timed out. */
    OK(devq_queue_all_reduce(qb, ch, one, 0, one, 0, 1, DEVQ_I32, DEVQ_SUM));
    OK(devq_queue_submit(qb));
    OK(devq_queue_finish(qb, 30ull * 1000000000ull));
    if (rank == 1) {
        t0 = now_ms();
        OK(devq_queue_recv(qa, fc, b, 0, 16, DEVQ_F32, 0));
        OK(devq_queue_submit(qa));
        r = devq_queue_finish(qa, 60ull * 1000000000ull);
        uint64_t took = now_ms() - t0;
        CHECK(r == -EIO && strstr(devq_errmsg(), "rank 0 dropped out") && strstr(devq_errmsg(), "timed out"),
              "rank 1: finish %d, want -EIO with rank 0's timeout", r);
        CHECK(took < 10000, "rank 1: learning of rank 0's timeout took %llu ms", (unsigned long long)took);
    }
    CHECK(devq_buffer_status(b) < 0, "the recv's dst is not failed");
    devq_channel_destroy(fc);
    devq_buffer_free(one, NULL);
    devq_buffer_free(b, NULL); /* abandoned inside MPI: its memory stays held */
}

/* Large all_gather and reduce_scatter (above the engine's blocking
 * threshold: plugins/mpi/mpi.c blocking_from), in place and out of
 * place, and one group that mixes blocking and non-blocking ops with a
 * dependence between two blocking ones: the results say whether any op
 * ran out of order or against the wrong peer op. */
static void test_large_blocking(void)
{
    const size_t n = (1u << 20) + 5; /* F32: 4 MiB + 20 B per rank */
    devq_buffer *src = alloc(n * 4), *gat = alloc(n * size * 4), *gin = alloc(n * size * 4);
    devq_buffer *rs_src = alloc(n * size * 4), *rs = alloc(n * 4), *rs_in = alloc(n * size * 4);
    fill_input(src, 0, n, DEVQ_F32, rank);
    fill_input(gin, (size_t)rank * n, n, DEVQ_F32, rank);
    for (int blk = 0; blk < size; blk++) {
        fill_input(rs_src, (size_t)blk * n, n, DEVQ_F32, rank);
        fill_input(rs_in, (size_t)blk * n, n, DEVQ_F32, rank);
    }
    OK(devq_queue_all_gather(qa, ch, gat, 0, src, 0, n, DEVQ_F32));
    OK(devq_queue_all_gather(qa, ch, gin, 0, gin, (size_t)rank * n * 4, n, DEVQ_F32));
    OK(devq_queue_reduce_scatter(qa, ch, rs, 0, rs_src, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_reduce_scatter(qa, ch, rs_in, 0, rs_in, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < n; i += 997) {
            double got = load(devq_buffer_host_ptr(gat), (size_t)r * n + i, DEVQ_F32);
            double got2 = load(devq_buffer_host_ptr(gin), (size_t)r * n + i, DEVQ_F32);
            if (got != input(r, i) || got2 != input(r, i)) {
                CHECK(0, "large all_gather block %d element %zu: got %g (in place %g), want %g", r, i, got,
                      got2, input(r, i));
                r = size;
                break;
            }
        }
    for (size_t i = 0; i < n; i += 997) {
        double want = reference(DEVQ_SUM, DEVQ_F32, i, size);
        double got = load(devq_buffer_host_ptr(rs), i, DEVQ_F32),
               got2 = load(devq_buffer_host_ptr(rs_in), i, DEVQ_F32);
        if (got != want || got2 != want) {
            CHECK(0, "large reduce_scatter element %zu: got %g (in place %g), want %g", i, got, got2, want);
            break;
        }
    }
    /* One group: big X (blocking), small Y (non-blocking), big X again
     * (depends on the first), small Y again.  X ends at size^2, Y at
     * size^2: a reordering or a pairing with the wrong op shows. */
    devq_buffer *x = alloc(n * 4), *y = alloc(64);
    float *xp = devq_buffer_host_ptr(x), *yp = devq_buffer_host_ptr(y);
    for (size_t i = 0; i < n; i++)
        xp[i] = 1.0f;
    for (int i = 0; i < 16; i++)
        yp[i] = 1.0f;
    OK(devq_queue_all_reduce(qa, ch, x, 0, x, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_all_reduce(qa, ch, y, 0, y, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_all_reduce(qa, ch, x, 0, x, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_all_reduce(qa, ch, y, 0, y, 0, 16, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    float want = (float)(size * size);
    CHECK(xp[0] == want && xp[n / 2] == want && xp[n - 1] == want && yp[0] == want && yp[15] == want,
          "mixed group: x %g %g %g, y %g %g, want %g", xp[0], xp[n / 2], xp[n - 1], yp[0], yp[15], want);
    devq_buffer *all[] = { src, gat, gin, rs_src, rs, rs_in, x, y };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        OK(devq_buffer_free(all[i], NULL));
}

/* ---- Collectives run by the submitting thread (lib/queue/inline.c) ----
 * On an idle queue a batch of channel ops (and signals) runs at submit;
 * devq_stats counts it in batches_run_at_submit (also when a late peer
 * made it hand the rest to the stream). */
static uint64_t run_at_submit(void)
{
    devq_stats st;
    OK(devq_stats_get(dev, &st));
    return st.batches_run_at_submit;
}

/* Let the queue's stream thread account for the batch it just ended
 * (an idle queue is what the path needs; nothing is timed by this). */
static void settle(void)
{
    struct timespec ts = { 0, 2000000 };
    nanosleep(&ts, NULL);
}

static int all_bytes(devq_buffer *b, size_t n, unsigned char want)
{
    const unsigned char *p = devq_buffer_host_ptr(b);
    for (size_t i = 0; i < n; i++)
        if (p[i] != want)
            return 0;
    return 1;
}

/* Taken on an idle queue; when its signal is set as submit returns, its
 * result is there too.  (Whether a try ends at submit depends on the
 * peer's timing -- over TCP it rarely does -- so that is not asserted;
 * at_submit_error asserts a batch that does.) */
static void test_at_submit(void)
{
    devq_buffer *b = alloc(8);
    float *p = devq_buffer_host_ptr(b);
    devq_signal *s = NULL;
    OK(devq_signal_create(0, &s));
    const int tries = 50;
    int taken = 0;
    for (int i = 0; i < tries; i++) {
        settle();
        p[0] = (float)(rank + 1);
        p[1] = (float)i;
        uint64_t before = run_at_submit();
        OK(devq_queue_all_reduce(qa, ch, b, 0, b, 0, 2, DEVQ_F32, DEVQ_SUM));
        OK(devq_queue_signal(qa, s, (uint64_t)i + 1));
        OK(devq_queue_submit(qa));
        taken += run_at_submit() != before;
        if (devq_signal_value(s) == (uint64_t)i + 1)
            CHECK(p[0] == (float)(size * (size + 1) / 2), "try %d: signal set at submit, element %g", i,
                  p[0]);
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        CHECK(p[0] == (float)(size * (size + 1) / 2) && p[1] == (float)(i * size), "try %d: got %g %g", i,
              p[0], p[1]);
    }
    /* The queue is idle at every try (settle), unless its stream thread
     * was preempted between ending a batch and saying so: most are taken. */
    CHECK(taken >= tries / 2, "%d of %d all_reduces on an idle queue were run at submit", taken, tries);
    devq_signal_destroy(s);
    OK(devq_buffer_free(b, NULL));
}

/* Never early: behind a pending fill on the same queue, and behind a
 * fill of its input on another queue, the collective goes to the stream
 * and reads what the fill wrote. */
static void test_at_submit_order(void)
{
    devq_signal *gate = NULL;
    OK(devq_signal_create(0, &gate));
    devq_buffer *src = alloc(8), *dst = alloc(8), *src2 = alloc(8), *dst2 = alloc(8);
    memset(devq_buffer_host_ptr(src), 0, 8);
    memset(devq_buffer_host_ptr(dst), 0, 8);
    memset(devq_buffer_host_ptr(src2), 0, 8);
    memset(devq_buffer_host_ptr(dst2), 0, 8);
    settle();
    /* Same queue: the fill waits for the gate. */
    OK(devq_queue_wait(qa, gate, 1));
    OK(devq_queue_fill(qa, src, 0, 8, 1));
    OK(devq_queue_submit(qa));
    uint64_t before = run_at_submit();
    OK(devq_queue_all_reduce(qa, ch, dst, 0, src, 0, 8, DEVQ_U8, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    CHECK(run_at_submit() == before, "an all_reduce behind a pending fill ran at submit");
    CHECK(all_bytes(dst, 8, 0), "an all_reduce behind a pending fill wrote its output early");
    OK(devq_signal_set(gate, 1));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    CHECK(all_bytes(dst, 8, (unsigned char)size), "all_reduce behind a fill on its queue: got %u, want %d",
          ((unsigned char *)devq_buffer_host_ptr(dst))[0], size);
    settle();
    /* Another queue writes the input. */
    OK(devq_queue_wait(qb, gate, 2));
    OK(devq_queue_fill(qb, src2, 0, 8, 2));
    OK(devq_queue_submit(qb));
    before = run_at_submit();
    OK(devq_queue_all_reduce(qa, ch, dst2, 0, src2, 0, 8, DEVQ_U8, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    CHECK(run_at_submit() == before, "an all_reduce of an input another queue writes ran at submit");
    CHECK(all_bytes(dst2, 8, 0), "an all_reduce of an input another queue writes ran before the write");
    OK(devq_signal_set(gate, 2));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    OK(devq_queue_finish(qb, 60ull * 1000000000ull));
    CHECK(all_bytes(dst2, 8, (unsigned char)(2 * size)),
          "all_reduce after a fill on another queue: got %u, want %d",
          ((unsigned char *)devq_buffer_host_ptr(dst2))[0], 2 * size);
    devq_buffer *all[] = { src, dst, src2, dst2 };
    for (size_t i = 0; i < 4; i++)
        OK(devq_buffer_free(all[i], NULL));
    devq_signal_destroy(gate);
}

/* The engine fails rank 0's op at start (DEVQ_MPI_TEST_FAIL_OP) on the
 * submitting thread: the batch's signal and the buffer it writes fail
 * with that cause, the peer learns it, and the queue goes on working. */
static void test_at_submit_error(void)
{
    if (rank == 0)
        setenv("DEVQ_MPI_TEST_FAIL_OP", "1", 1);
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    unsetenv("DEVQ_MPI_TEST_FAIL_OP");
    OK(devq_channel_set_timeout(fc, 20ull * 1000000000ull));
    devq_buffer *b = alloc(8);
    float *p = devq_buffer_host_ptr(b);
    p[0] = p[1] = 1.0f;
    devq_signal *s = NULL;
    OK(devq_signal_create(0, &s));
    settle();
    uint64_t before = run_at_submit();
    OK(devq_queue_all_reduce(qa, fc, b, 0, b, 0, 2, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_signal(qa, s, 1));
    OK(devq_queue_submit(qa));
    if (rank == 0) /* the failure comes before any wait for the peer */
        CHECK(run_at_submit() == before + 1 && devq_signal_status(s) < 0,
              "rank 0: the failing op did not end at submit (run at submit %llu -> %llu, signal %d)",
              (unsigned long long)before, (unsigned long long)run_at_submit(), devq_signal_status(s));
    int r = devq_queue_finish(qa, 60ull * 1000000000ull);
    CHECK(r == -EIO && strstr(devq_errmsg(), "DEVQ_MPI_TEST_FAIL_OP") &&
              (rank == 0 || strstr(devq_errmsg(), "rank 0 dropped out")),
          "finish after an injected failure: %d", r);
    CHECK(devq_signal_status(s) < 0, "the batch's signal did not fail");
    CHECK(devq_signal_wait(s, 1, 1000000000ull) < 0 && strstr(devq_errmsg(), "DEVQ_MPI_TEST_FAIL_OP"),
          "the signal's failure does not name the cause");
    CHECK(devq_buffer_status(b) < 0, "the collective's output is not failed");
    devq_channel_destroy(fc);
    devq_signal_destroy(s);
    /* The queue and a new channel work. */
    devq_channel *nc = NULL;
    OK(devq_channel_create(dev, NULL, &nc));
    devq_buffer *c = alloc(8);
    float *cp = devq_buffer_host_ptr(c);
    cp[0] = cp[1] = 1.0f;
    settle();
    OK(devq_queue_all_reduce(qa, nc, c, 0, c, 0, 2, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 60ull * 1000000000ull));
    CHECK(cp[0] == (float)size && cp[1] == (float)size, "after the failure: got %g %g, want %d", cp[0], cp[1],
          size);
    devq_channel_destroy(nc);
    OK(devq_buffer_free(b, NULL));
    OK(devq_buffer_free(c, NULL));
}

/* 100 dependent all_reduces in one batch, progressed back to back (at
 * submit on an idle queue, or on the stream if a peer ran late); the
 * engine fails rank 0's 37th at start (DEVQ_MPI_TEST_FAIL_OP=37).  Every
 * rank's finish fails with that cause (the peers by rank 0's notice,
 * well within the channel's timeout), the signal and the buffer fail;
 * ops 1-36 ran and nothing after the 37th did: rank 0's buffer holds
 * size^36.  On 2 ranks rank 1's holds size^36 too (its 37th never got
 * rank 0's half), or size^35: rank 0's notice, sent after its 36th
 * completed, can overtake that op's data (over TCP, where the data may
 * be later than the wait's 50-us spin), and then rank 1 fails its 36th
 * with the same cause.  The broken channel fails a later batch at once
 * with the same cause. */
#define BATCH_OPS 100
#define BATCH_FAIL_AT 37
static void test_at_submit_batch_fail(void)
{
    if (rank == 0)
        setenv("DEVQ_MPI_TEST_FAIL_OP", "37", 1);
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    unsetenv("DEVQ_MPI_TEST_FAIL_OP");
    OK(devq_channel_set_timeout(fc, 20ull * 1000000000ull));
    devq_buffer *b = alloc(8);
    uint64_t *p = devq_buffer_host_ptr(b);
    p[0] = 1;
    uint64_t want = 1; /* size^36, wrapping as MPI's U64 sum does */
    for (int i = 1; i < BATCH_FAIL_AT; i++)
        want *= (uint64_t)size;
    devq_signal *s = NULL;
    OK(devq_signal_create(0, &s));
    settle();
    for (int i = 0; i < BATCH_OPS; i++)
        OK(devq_queue_all_reduce(qa, fc, b, 0, b, 0, 1, DEVQ_U64, DEVQ_SUM));
    OK(devq_queue_signal(qa, s, 1));
    uint64_t t0 = now_ms();
    OK(devq_queue_submit(qa));
    int r = devq_queue_finish(qa, 60ull * 1000000000ull);
    uint64_t took = now_ms() - t0;
    CHECK(r == -EIO && strstr(devq_errmsg(), "DEVQ_MPI_TEST_FAIL_OP failed op 37") &&
              (rank == 0 || strstr(devq_errmsg(), "rank 0 dropped out")),
          "finish after the 37th of 100 failed: %d: %s", r, devq_errmsg());
    CHECK(took < 10000, "the failure took %llu ms to reach rank %d (timeout 20 s: a notice should end it)",
          (unsigned long long)took, rank);
    CHECK(devq_signal_status(s) < 0, "the batch's signal did not fail");
    CHECK(devq_signal_wait(s, 1, 1000000000ull) < 0 && strstr(devq_errmsg(), "DEVQ_MPI_TEST_FAIL_OP"),
          "the signal's failure does not name the cause: %s", devq_errmsg());
    CHECK(devq_buffer_status(b) < 0, "the collectives' buffer is not failed");
    if (rank == 0)
        CHECK(p[0] == want, "rank 0: the buffer holds %llu, want %llu (ops 1-36 ran, none after the 37th)",
              (unsigned long long)p[0], (unsigned long long)want);
    else if (size == 2)
        CHECK(p[0] == want || p[0] * (uint64_t)size == want,
              "rank 1: the buffer holds %llu, want %llu or %llu (ops 1-35 or 1-36 ran, none after the 37th)",
              (unsigned long long)p[0], (unsigned long long)want,
              (unsigned long long)(want / (uint64_t)size));
    /* The channel stays broken: a later op fails at once, same cause. */
    OK(devq_queue_all_reduce(qa, fc, b, 0, b, 0, 1, DEVQ_U64, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    r = devq_queue_finish(qa, 60ull * 1000000000ull);
    CHECK(r == -EIO && strstr(devq_errmsg(), "DEVQ_MPI_TEST_FAIL_OP"), "an op on the broken channel: %d: %s",
          r, devq_errmsg());
    devq_channel_destroy(fc);
    devq_signal_destroy(s);
    OK(devq_buffer_free(b, NULL));
}

/* A bounded race: one thread multiplies x by the size with in-place
 * all_reduces (a sum of equal values) on qa, mostly at submit, while another
 * copies x to y on qb and reads y.  A copy submitted while an
 * all_reduce runs at submit must wait for it (its uses are parked):
 * every value read is a power of two, never below the last one read nor
 * below what an all_reduce finished before the copy was submitted. */
struct race {
    devq_buffer *x, *y;
    _Atomic int done;
    _Atomic double finished; /* x after the last all_reduce whose finish returned */
    int bad, reads;
};

static void *race_reader(void *arg)
{
    struct race *r = arg;
    double last = 1.0;
    while (!atomic_load(&r->done) && r->reads < 100000) {
        double floor_v = atomic_load(&r->finished); /* done before this copy is submitted */
        if (devq_queue_copy(qb, r->y, 0, r->x, 0, 8) < 0 || devq_queue_submit(qb) < 0 ||
            devq_queue_finish(qb, 60ull * 1000000000ull) < 0) {
            r->bad = 1;
            break;
        }
        double v = *(const double *)devq_buffer_host_ptr(r->y);
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        if (v < last || v < floor_v || (bits & ((1ull << 52) - 1)) != 0) { /* torn, or older */
            r->bad = 2;
            break;
        }
        last = v;
        r->reads++;
    }
    return NULL;
}

static void test_at_submit_race(void)
{
    if (size & (size - 1)) {
        printf("rank %d: at_submit_race: skipped (%d ranks: x would not stay a power of two)\n", rank, size);
        return;
    }
    struct race r = { .x = alloc(8), .y = alloc(8), .finished = 1.0 };
    double *xp = devq_buffer_host_ptr(r.x);
    *xp = 1.0;
    double now = 1.0;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, race_reader, &r) == 0, "no reader thread");
    int lg = 0;
    while ((1 << lg) < size)
        lg++;
    const int rounds = 1000 / lg; /* x ends at 2^1000 or below: every value exact */
    for (int i = 0; i < rounds; i++) {
        OK(devq_queue_all_reduce(qa, ch, r.x, 0, r.x, 0, 1, DEVQ_F64, DEVQ_SUM));
        OK(devq_queue_submit(qa));
        OK(devq_queue_finish(qa, 60ull * 1000000000ull));
        now *= size;
        atomic_store(&r.finished, now);
    }
    atomic_store(&r.done, 1);
    pthread_join(t, NULL);
    CHECK(r.bad == 0, "reader: %s after %d reads", r.bad == 1 ? "a copy failed" : "a torn or older value",
          r.reads);
    double want = 1.0;
    for (int i = 0; i < rounds; i++)
        want *= size;
    CHECK(*xp == want, "x = %g after %d rounds, want %g", *xp, rounds, want);
    OK(devq_buffer_free(r.x, NULL));
    OK(devq_buffer_free(r.y, NULL));
}

/* The threads of this process named name (/proc/self/task/N/comm). */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name)))
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

/* A large (blocking-path) all_reduce that rank 0 skips (its input's
 * kernel fails): rank 1 learns it from the notice, long before its 2 s
 * timeout, and its helper thread is not left inside a blocking MPI call
 * (the call waits behind a barrier rank 0 never joins): destroying the
 * channel joins it, so no more helper threads (devq-mpi-blk) are left
 * than before. */
static void test_blocking_failure(void)
{
    devq_kernel *kf;
    OK(devq_kernel_load(dev, NULL, 0, "chan_fail", &kf));
    const size_t n = 1u << 20; /* F32: 4 MiB */
    int threads = threads_named("devq-mpi-blk");
    devq_channel *fc = NULL;
    OK(devq_channel_create(dev, NULL, &fc));
    OK(devq_channel_set_timeout(fc, 2ull * 1000000000ull));
    /* One op that completes first, so the helper exists on both ranks. */
    devq_buffer *src = alloc(n * 4), *dst = alloc(n * 4);
    memset(devq_buffer_host_ptr(src), 0, n * 4);
    OK(devq_queue_all_reduce(qa, fc, dst, 0, src, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    OK(devq_queue_finish(qa, 30ull * 1000000000ull));
    uint64_t t0 = now_ms();
    if (rank == 0) {
        devq_launch l = { .global = { 1 } };
        devq_arg a = DEVQ_ARG_BUF(src, DEVQ_WRITE);
        OK(devq_queue_exec(qa, kf, &a, 1, &l));
    }
    OK(devq_queue_all_reduce(qa, fc, dst, 0, src, 0, n, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(qa));
    int r = devq_queue_finish(qa, 30ull * 1000000000ull);
    uint64_t took = now_ms() - t0;
    if (rank == 0) {
        CHECK(r == -EIO && strstr(devq_errmsg(), "chan_fail"),
              "rank 0: finish %d, want -EIO naming the kernel", r);
    } else {
        CHECK(r == -EIO && strstr(devq_errmsg(), "rank 0 dropped out") && strstr(devq_errmsg(), "chan_fail"),
              "rank 1: finish %d, want -EIO with rank 0's cause: %s", r, devq_errmsg());
        CHECK(took < 1900, "rank 1: learning of rank 0's failure took %llu ms (the timeout is 2 s)",
              (unsigned long long)took);
    }
    CHECK(devq_buffer_status(dst) < 0, "dst of the failed large collective is not failed");
    devq_channel_destroy(fc);
    /* The end is asynchronous while this rank's notice is still being
     * sent (the engine's sender finishes it): bounded, 5 s. */
    for (int i = 0; i < 500 && threads_named("devq-mpi-blk") > threads; i++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    CHECK(threads_named("devq-mpi-blk") <= threads,
          "rank %d: %d blocking-op helpers (devq-mpi-blk) after the "
          "channel's end, %d before: one is stuck in a blocking MPI call",
          rank, threads_named("devq-mpi-blk"), threads);
    OK(devq_queue_finish(qa, 30ull * 1000000000ull));
    devq_buffer_free(src, NULL);
    devq_buffer_free(dst, NULL); /* abandoned on rank 1: its memory stays held */
    devq_kernel_destroy(kf);
}

int main(void)
{
    setenv("DEVQ_CPU_DEVICES", "2", 0);
    if (devq_device_open("cpu", &dev) < 0) {
        fprintf(stderr, "chan_suite: no cpu device: %s\n", devq_errmsg());
        return 99;
    }
    devq_device_info info;
    OK(devq_device_info_get(dev, &info));
    if (!(info.caps & DEVQ_CAP_CHANNELS)) {
        fprintf(
            stderr,
            "chan_suite: skipped: cpu has no DEVQ_CAP_CHANNELS (no devq-mpi engine; set DEVQ_MPI_ENGINE)\n");
        return 77;
    }
    int r = devq_channel_create(dev, NULL, &ch);
    if (r < 0) {
        fprintf(stderr, "chan_suite: devq_channel_create: %s\n", devq_errmsg());
        return 1;
    }
    rank = devq_channel_rank(ch);
    size = devq_channel_size(ch);
    if (size < 2) {
        fprintf(stderr, "chan_suite: run under mpirun -np 2 or more (size is %d)\n", size);
        return 1;
    }
    OK(devq_queue_create(dev, NULL, &qa));
    OK(devq_queue_create(dev, NULL, &qb));
    const char *only = getenv("CHAN_ONLY");
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "reductions", test_reductions },
        { "data_movement", test_data_movement },
        { "group_large", test_group_large },
        { "interleaved", test_interleaved },
        { "two_queues", test_two_queues },
        { "dependent_group", test_dependent_group },
        { "large_reduce", test_large_reduce },
        { "misuse", test_misuse },
        { "split", test_split },
        { "id", test_id },
        { "failure", test_failure },
        { "failed_input", test_failed_input },
        { "timeout", test_timeout },
        { "large_blocking", test_large_blocking },
        { "blocking_failure", test_blocking_failure },
        { "at_submit", test_at_submit },
        { "at_submit_order", test_at_submit_order },
        { "at_submit_error", test_at_submit_error },
        { "at_submit_race", test_at_submit_race },
        { "at_submit_batch_fail", test_at_submit_batch_fail },
    };
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        if (only && !strstr(only, tests[i].name))
            continue;
        int before = failures;
        uint64_t t0 = now_ms();
        tests[i].fn();
        printf("rank %d: %s: %s (%llu ms)\n", rank, tests[i].name, failures == before ? "ok" : "FAILED",
               (unsigned long long)(now_ms() - t0));
        fflush(stdout);
    }
    devq_queue_destroy(qa);
    devq_queue_destroy(qb);
    devq_channel_destroy(ch);
    devq_device_close(dev);
    return failures ? 1 : 0;
}
