/* SPDX-License-Identifier: MIT */
/* The bases (pool, direct, native) on a fake device whose fences the
 * test completes by hand. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq_resource.h>
#include "mem_resource.h"
#include "../helpers/test_mem_fake.h"
#include "../helpers/check_main.h"

static struct devq_device *dev;
static devq_resource *pool;
static struct devq_stream *A, *B, *C;

static void setup_cfg(size_t limit, uint64_t caps)
{
    struct fake_config cfg = { .caps = caps, .mem_limit = limit };
    dev = fake_device_open(&cfg);
    ck_assert_ptr_nonnull(dev);
    A = fake_stream(dev, 0);
    B = fake_stream(dev, 1);
    C = fake_stream(dev, 2);
    ck_assert_int_eq(devq_resource_pool(dev, &pool), 0);
}

static void setup(void)
{
    setup_cfg(0, DEVQ_CAP_HOST_VISIBLE);
}

static void teardown(void)
{
    /* Seal every stream's frees, then let the streams get there. */
    devq_resource_reap(pool);
    fake_complete_all();
    devq_resource_destroy(pool);
    pool = NULL;
    fake_device_close(dev);
}

static void *alloc_on(struct devq_stream *s, size_t n)
{
    void *d = NULL, *h = NULL;
    int r = devq_resource_allocate(pool, n, s, 7, &d, &h);
    ck_assert_msg(r == 0, "allocate %zu: %d %s", n, r, devq_errmsg());
    ck_assert_ptr_eq(d, h); /* fake memory is host-visible */
    return d;
}

static void free_on(struct devq_stream *s, void *p, size_t n)
{
    int r = devq_resource_deallocate(pool, p, n, s, 7);
    ck_assert_msg(r == 0, "deallocate: %d %s", r, devq_errmsg());
}

static devq_mem_stats stats(void)
{
    devq_mem_stats st;
    ck_assert_int_eq(devq_resource_stats_get(pool, &st), 0);
    return st;
}

START_TEST(reused_on_same_stream_at_once)
{
    void *p = alloc_on(A, 1000);
    uint64_t calls = fake_backend_allocs(), tickets = fake_last_ticket();
    free_on(A, p, 1000);
    /* Nothing knows A is done with it, yet A may take the block back. */
    ck_assert_ptr_eq(alloc_on(A, 1000), p);
    ck_assert_uint_eq(fake_backend_allocs(), calls);
    ck_assert_uint_eq(stats().pending_frees, 0);
    /* The same-stream pair records no fence at all. */
    for (int i = 0; i < 1000; i++) {
        free_on(A, p, 1000);
        ck_assert_ptr_eq(alloc_on(A, 1000), p);
    }
    ck_assert_uint_eq(fake_last_ticket(), tickets);
    free_on(NULL, p, 1000);
}
END_TEST

START_TEST(one_fence_covers_a_batch_of_frees)
{
    enum { N = 10 };
    void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = alloc_on(A, 2048);
    uint64_t t0 = fake_last_ticket();
    for (int i = 0; i < N; i++)
        free_on(A, p[i], 2048);
    ck_assert_uint_eq(fake_last_ticket(), t0);
    ck_assert_uint_eq(stats().pending_frees, N);
    /* B misses: A is sealed with ONE fence for all ten frees. */
    void *q = alloc_on(B, 2048);
    ck_assert_uint_eq(fake_last_ticket(), t0 + 1);
    void *s = alloc_on(B, 2048); /* not reached: no second fence */
    ck_assert_uint_eq(fake_last_ticket(), t0 + 1);
    for (int i = 0; i < N; i++)
        ck_assert(q != p[i] && s != p[i]);
    fake_complete(t0 + 1);
    uint64_t calls = fake_backend_allocs();
    void *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = alloc_on(B, 2048);
        int found = 0;
        for (int j = 0; j < N; j++)
            found += r[i] == p[j];
        ck_assert_int_eq(found, 1);
    }
    ck_assert_uint_eq(fake_backend_allocs(), calls);
    ck_assert_uint_eq(fake_last_ticket(), t0 + 1);
    ck_assert_uint_eq(stats().pending_frees, 0);
    for (int i = 0; i < N; i++)
        free_on(NULL, r[i], 2048);
    free_on(NULL, q, 2048);
    free_on(NULL, s, 2048);
}
END_TEST

START_TEST(unfenced_free_on_a_stream_is_sealed_before_crossing)
{
    /* Sealed once, reused on A, freed on A again: the old fence does not
     * cover the new free, so B must wait for a new one. */
    void *p = alloc_on(A, 700);
    free_on(A, p, 700);
    void *q = alloc_on(B, 700);
    fake_complete(fake_last_ticket());
    ck_assert_ptr_eq(alloc_on(A, 700), p); /* A's own list first */
    free_on(A, p, 700);
    void *r = alloc_on(B, 700);
    ck_assert_ptr_ne(r, p);
    fake_complete(fake_last_ticket());
    ck_assert_ptr_eq(alloc_on(B, 700), p);
    free_on(NULL, p, 700);
    free_on(NULL, q, 700);
    free_on(NULL, r, 700);
}
END_TEST

START_TEST(stale_fast_entries_fall_back_to_the_lock)
{
    /* Handed out on A, then on B, freed on A: A's table still names it
     * from the first time; the free is legal, the second one refused. */
    void *p = alloc_on(A, 3000);
    free_on(NULL, p, 3000);
    ck_assert_ptr_eq(alloc_on(B, 3000), p); /* now B's */
    free_on(A, p, 3000);                    /* legal: A orders the free */
    ck_assert_int_eq(devq_resource_deallocate(pool, p, 3000, A, 7), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "double free"));
    ck_assert_ptr_eq(alloc_on(A, 3000), p); /* A's own free list */
    /* Cached in A's slot, then freed again on B and synchronously. */
    free_on(A, p, 3000);
    ck_assert_int_eq(devq_resource_deallocate(pool, p, 3000, B, 7), -EINVAL);
    ck_assert_int_eq(devq_resource_deallocate(pool, p, 3000, NULL, 7), -EINVAL);
    ck_assert_uint_eq(stats().pending_frees, 1);
    ck_assert_uint_eq(stats().bytes_outstanding, 0);
    /* A wrong size never takes the fast path. */
    ck_assert_ptr_eq(alloc_on(A, 3000), p);
    ck_assert_int_eq(devq_resource_deallocate(pool, p, 100000, A, 7), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "allocated as"));
    free_on(A, p, 3000);
    /* A cached block is not stranded: reap and trim give it back. */
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    fake_complete_all();
    ck_assert_int_eq(devq_resource_trim(pool), 0);
    ck_assert_uint_eq(stats().pending_frees, 0);
    ck_assert_uint_eq(fake_backend_bytes(), 0);
    /* The chunk's bookkeeping is reused; A's stale entry is not trusted. */
    void *q = alloc_on(B, 3000);
    ck_assert_int_eq(devq_resource_deallocate(pool, q, 3000, A, 7), 0);
    ck_assert_int_eq(devq_resource_deallocate(pool, q, 3000, A, 7), -EINVAL);
}
END_TEST

START_TEST(other_stream_waits_for_fence)
{
    void *p = alloc_on(A, 1000);
    free_on(A, p, 1000);
    ck_assert_uint_eq(stats().pending_frees, 1);
    void *q = alloc_on(B, 1000); /* seals A: the fence is recorded now */
    ck_assert_ptr_ne(q, p);
    uint64_t fence = fake_last_ticket();
    void *s = alloc_on(NULL, 1000); /* a synchronous request may not take it either */
    ck_assert_ptr_ne(s, p);
    fake_complete(fence);
    void *r = alloc_on(B, 1000);
    ck_assert_ptr_eq(r, p);
    ck_assert_uint_eq(stats().pending_frees, 0);
    free_on(NULL, q, 1000);
    free_on(NULL, r, 1000);
    free_on(NULL, s, 1000);
}
END_TEST

START_TEST(three_stream_steal)
{
    /* In use on A (say a kernel reads it), freed on A after that work:
     * C must not get it before A's free fence, even when B also churns. */
    void *x = alloc_on(A, 4096);
    free_on(A, x, 4096);
    void *b1 = alloc_on(B, 4096); /* seals A */
    ck_assert_ptr_ne(b1, x);
    uint64_t fence = fake_last_ticket();
    free_on(B, b1, 4096);
    void *c0 = alloc_on(C, 4096); /* seals B; neither is reached */
    ck_assert_ptr_ne(c0, x);
    ck_assert_ptr_ne(c0, b1);
    ck_assert_uint_eq(fake_last_ticket(), fence + 1);
    fake_complete(fake_last_ticket()); /* B's free is done, A's is not */
    void *c1 = alloc_on(C, 4096);
    ck_assert_ptr_ne(c1, x);
    ck_assert_ptr_eq(c1, b1); /* the reached one is fine */
    void *c2 = alloc_on(C, 4096);
    ck_assert_ptr_ne(c2, x);
    fake_complete(fence);
    void *c3 = alloc_on(C, 4096);
    ck_assert_ptr_eq(c3, x);
    free_on(NULL, c0, 4096);
    free_on(NULL, c1, 4096);
    free_on(NULL, c2, 4096);
    free_on(NULL, c3, 4096);
}
END_TEST

START_TEST(stuck_fence_does_not_block_others)
{
    enum { N = 1001 };
    void **blocks = calloc(N, sizeof *blocks);
    for (int i = 0; i < N; i++)
        blocks[i] = alloc_on(A, 512);
    free_on(A, blocks[0], 512);
    ck_assert_int_eq(devq_resource_reap(pool), 0); /* seals A: blocks[0] alone */
    uint64_t stuck = fake_last_ticket();
    for (int i = 1; i < N; i++)
        free_on(A, blocks[i], 512);
    ck_assert_int_eq(devq_resource_reap(pool), 0); /* a second batch for the rest */
    ck_assert_uint_eq(fake_last_ticket(), stuck + 1);
    fake_complete_all_but(stuck);
    uint64_t calls = fake_backend_allocs();
    void **again = calloc(N - 1, sizeof *again);
    for (int i = 0; i < N - 1; i++) {
        again[i] = alloc_on(B, 512);
        ck_assert_ptr_ne(again[i], blocks[0]);
    }
    /* All 1,000 came from the reached frees: no new backend memory. */
    ck_assert_uint_eq(fake_backend_allocs(), calls);
    ck_assert_uint_eq(stats().pending_frees, 1);
    for (int i = 0; i < N - 1; i++)
        free_on(NULL, again[i], 512);
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    ck_assert_uint_eq(stats().pending_frees, 1);
    fake_complete(stuck);
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    ck_assert_uint_eq(stats().pending_frees, 0);
    ck_assert_uint_eq(stats().bytes_outstanding, 0);
    free(blocks);
    free(again);
}
END_TEST

START_TEST(sync_free_reusable_anywhere)
{
    void *p = alloc_on(A, 300);
    free_on(NULL, p, 300);
    ck_assert_ptr_eq(alloc_on(B, 300), p);
    free_on(NULL, p, 300);
}
END_TEST

/* Classes are multiples of 256 B (so carved blocks keep the backend's
 * 256-byte alignment): the next multiple up to 2 KiB, then at most a
 * quarter more. */
START_TEST(size_classes_round_to_256_multiples_and_at_most_a_quarter)
{
    size_t sizes[] = { 1,        255,  256,  257,  320,   321,    513,     1000,
                       2047,     2048, 2049, 4097, 65536, 100000, 1 << 20, (32u << 20) - 1,
                       32u << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        void *p = alloc_on(NULL, sizes[i]);
        void *q = alloc_on(NULL, sizes[i]); /* the next block of the chunk */
        uint64_t got = stats().bytes_outstanding / 2;
        ck_assert_uint_ge(got, sizes[i]);
        ck_assert_uint_eq(got % 256, 0);
        ck_assert_msg(got < sizes[i] + 256 || got <= sizes[i] + sizes[i] / 4, "%zu rounded to %llu", sizes[i],
                      (unsigned long long)got);
        ck_assert_msg((uintptr_t)p % 256 == 0 && (uintptr_t)q % 256 == 0, "%zu: blocks %p %p", sizes[i], p,
                      q);
        free_on(NULL, q, sizes[i]);
        /* The whole block is writable memory. */
        memset(p, 0x5a, got);
        free_on(NULL, p, sizes[i]);
    }
}
END_TEST

START_TEST(large_bypasses_bins_and_waits_for_fence)
{
    size_t big = 40u << 20;
    size_t before = fake_backend_bytes();
    void *p = alloc_on(A, big);
    ck_assert_uint_eq(fake_backend_bytes(), before + big);
    free_on(A, p, big);
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before + big); /* fence not reached */
    ck_assert_uint_eq(stats().pending_frees, 1);
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before);
    ck_assert_uint_eq(stats().bytes_reserved, before);
}
END_TEST

START_TEST(double_and_foreign_free_refused)
{
    void *p = alloc_on(A, 100);
    free_on(A, p, 100);
    ck_assert_int_eq(devq_resource_deallocate(pool, p, 100, A, 7), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "double free"));
    int x;
    ck_assert_int_eq(devq_resource_deallocate(pool, &x, 100, A, 7), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "foreign"));
    void *q = alloc_on(NULL, 100);
    ck_assert_int_eq(devq_resource_deallocate(pool, q, 5000, NULL, 7), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "allocated as"));
    free_on(NULL, q, 100);
}
END_TEST

START_TEST(trim_releases_unused_chunks)
{
    void *p = alloc_on(NULL, 10000);
    ck_assert_uint_gt(stats().bytes_reserved, 0);
    free_on(NULL, p, 10000);
    ck_assert_int_eq(devq_resource_trim(pool), 0);
    ck_assert_uint_eq(stats().bytes_reserved, 0);
    ck_assert_uint_eq(fake_backend_bytes(), 0);
}
END_TEST

static void setup_small(void)
{
    setup_cfg(1u << 20, DEVQ_CAP_HOST_VISIBLE);
}

START_TEST(oom_reaps_trims_then_reports)
{
    /* 512 KiB freed on A (fence reached) holds half the device. */
    void *a = alloc_on(A, 512u << 10);
    free_on(A, a, 512u << 10);
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    fake_complete_all();
    /* 640 KiB on B: the backend is short until the pool reaps and trims. */
    void *b = alloc_on(B, 640u << 10);
    ck_assert_uint_eq(stats().bytes_reserved, 640u << 10);
    /* Freed on A with its fence pending: counted as pending in the report. */
    free_on(A, b, 640u << 10);
    void *d = NULL, *h = NULL;
    int r = devq_resource_allocate(pool, 640u << 10, B, 1, &d, &h);
    ck_assert_int_eq(r, -ENOMEM);
    const char *m = devq_errmsg();
    ck_assert_msg(strstr(m, "requested 655360"), "%s", m);
    ck_assert_msg(strstr(m, "reserved 655360"), "%s", m);
    ck_assert_msg(strstr(m, "outstanding 0"), "%s", m);
    ck_assert_msg(strstr(m, "largest free block 0"), "%s", m);
    ck_assert_msg(strstr(m, "pending-free 655360 bytes"), "%s", m);
    ck_assert_msg(strstr(m, "budget none"), "%s", m);
    ck_assert_msg(strstr(m, "fake: device full"), "%s", m);
    /* Once A gets there, the same request succeeds (reaped on the way). */
    fake_complete_all();
    ck_assert_int_eq(devq_resource_allocate(pool, 640u << 10, B, 1, &d, &h), 0);
    ck_assert_ptr_eq(d, b);
    free_on(NULL, d, 640u << 10);
}
END_TEST

START_TEST(reserved_stays_bounded)
{
    enum { LIVE = 16, PAIRS = 100000 };
    void *live[LIVE] = { 0 };
    size_t sz[LIVE] = { 0 };
    struct devq_stream *st[LIVE] = { 0 };
    unsigned seed = 12345;
    uint64_t at_10k = 0, peak = 0;
    for (int i = 0; i < PAIRS; i++) {
        int k = rand_r(&seed) % LIVE;
        if (live[k])
            free_on(st[k], live[k], sz[k]);
        sz[k] = 1 + (size_t)(rand_r(&seed) % (64 << 10));
        int s = rand_r(&seed) % 5;
        st[k] = s == 4 ? NULL : fake_stream(dev, (uint32_t)s);
        live[k] = alloc_on(st[k], sz[k]);
        if (i % 64 == 0)
            fake_complete_all(); /* the streams make progress */
        uint64_t res = stats().bytes_reserved;
        if (res > peak)
            peak = res;
        if (i == 10000)
            at_10k = peak;
    }
    for (int k = 0; k < LIVE; k++)
        free_on(NULL, live[k], sz[k]);
    ck_assert_msg(peak <= 64u << 20, "reserved peaked at %llu", (unsigned long long)peak);
    ck_assert_msg(peak <= at_10k + (4u << 20),
                  "reserved kept growing: %llu after 10k, %llu "
                  "after 100k",
                  (unsigned long long)at_10k, (unsigned long long)peak);
}
END_TEST

START_TEST(stream_gone_settles_its_frees)
{
    void *p = alloc_on(A, 2000), *q = alloc_on(A, 2000);
    free_on(A, p, 2000);
    ck_assert_int_eq(devq_resource_reap(pool), 0); /* sealed ... */
    fake_complete(fake_last_ticket());             /* ... and reached */
    free_on(A, q, 2000);                           /* sealed by stream_gone; never completes */
    /* As devq__mem_stream_gone does when A's queue is destroyed. */
    pool->ops.stream_gone(pool->state, A);
    /* p is idle and goes anywhere; q stays out of use forever. */
    ck_assert_uint_eq(stats().pending_frees, 0);
    void *x = alloc_on(B, 2000), *y = alloc_on(A, 2000);
    ck_assert_ptr_eq(x, p);
    ck_assert_ptr_ne(y, q);
    /* Once its fence is reached after all, a full reap brings q back. */
    ck_assert_uint_eq(stats().bytes_reserved, fake_backend_bytes());
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    void *z = alloc_on(B, 2000);
    ck_assert_ptr_eq(z, q);
    free_on(NULL, x, 2000);
    free_on(NULL, y, 2000);
    free_on(NULL, z, 2000);
}
END_TEST

START_TEST(use_hooks_refused)
{
    void *p = alloc_on(A, 64);
    ck_assert_int_eq(devq_resource_supports_use_tracking(pool), 0);
    ck_assert_int_eq(devq_resource_prepare_use(pool, p, B, DEVQ_READ), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "cannot track"));
    ck_assert_int_eq(devq_resource_finish_use(pool, p, B, DEVQ_WRITE), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "'pool'"));
    free_on(NULL, p, 64);
}
END_TEST

/* ---- threads ---- */

struct hammer {
    int id;
    int errors;
};

static void *hammer(void *arg)
{
    struct hammer *h = arg;
    struct devq_stream *own = fake_stream(dev, (uint32_t)h->id);
    unsigned seed = (unsigned)h->id * 7919u;
    enum { LIVE = 8 };
    uint64_t *blk[LIVE] = { 0 };
    size_t sz[LIVE] = { 0 };
    uint64_t token = (uint64_t)h->id << 32;
    for (int i = 0; i < 20000; i++) {
        int k = rand_r(&seed) % LIVE;
        if (blk[k]) {
            /* Nobody else may have been handed this block meanwhile. */
            if (blk[k][0] != token + (uint64_t)k)
                h->errors++;
            struct devq_stream *fs = rand_r(&seed) % 4 ? own : NULL;
            if (devq_resource_deallocate(pool, blk[k], sz[k], fs, 0) < 0)
                h->errors++;
        }
        sz[k] = 8 + (size_t)(rand_r(&seed) % 20000);
        void *d, *hp;
        struct devq_stream *as = rand_r(&seed) % 4 ? own : NULL;
        if (devq_resource_allocate(pool, sz[k], as, 0, &d, &hp) < 0) {
            h->errors++;
            blk[k] = NULL;
            continue;
        }
        blk[k] = d;
        blk[k][0] = token + (uint64_t)k;
        if (i % 256 == 0)
            fake_complete_all();
    }
    for (int k = 0; k < LIVE; k++)
        if (blk[k] && devq_resource_deallocate(pool, blk[k], sz[k], NULL, 0) < 0)
            h->errors++;
    return NULL;
}

START_TEST(threads_never_share_a_block)
{
    enum { T = 4 };
    pthread_t th[T];
    struct hammer hs[T];
    for (int i = 0; i < T; i++) {
        hs[i] = (struct hammer){ .id = i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &hs[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(hs[i].errors, 0);
    }
    ck_assert_int_eq(devq_resource_reap(pool), 0); /* seals every stream */
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(pool), 0);
    ck_assert_uint_eq(stats().bytes_outstanding, 0);
    ck_assert_uint_eq(stats().pending_frees, 0);
    ck_assert_int_eq(devq_resource_trim(pool), 0);
    ck_assert_uint_eq(fake_backend_bytes(), 0);
}
END_TEST

/* ---- direct and native ---- */

START_TEST(direct_frees_in_stream_order)
{
    devq_resource *d;
    ck_assert_int_eq(devq_resource_direct(dev, &d), 0);
    void *p, *h;
    size_t before = fake_backend_bytes();
    ck_assert_int_eq(devq_resource_allocate(d, 5000, A, 0, &p, &h), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before + 5000);
    ck_assert_int_eq(devq_resource_deallocate(d, p, 5000, A, 0), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(d), 0);
    ck_assert_int_eq(devq_resource_reap(d), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before + 5000); /* A not there yet */
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(d), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before);
    ck_assert_int_eq(devq_resource_allocate(d, 10, NULL, 0, &p, &h), 0);
    ck_assert_int_eq(devq_resource_prepare_use(d, p, A, DEVQ_READ), -ENOTSUP);
    ck_assert_int_eq(devq_resource_deallocate(d, p, 10, NULL, 0), 0);
    ck_assert_uint_eq(fake_backend_bytes(), before);
    devq_resource_destroy(d);
}
END_TEST

START_TEST(native_needs_the_capability)
{
    devq_resource *n;
    ck_assert_int_eq(devq_resource_native(dev, &n), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "no native"));
    dev->info.caps |= DEVQ_CAP_ASYNC_ALLOC;
    ck_assert_int_eq(devq_resource_native(dev, &n), 0);
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(n, 777, A, 0, &p, &h), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(n), 777);
    ck_assert_int_eq(devq_resource_deallocate(n, p, 777, A, 0), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(n), 0);
    ck_assert_int_eq(devq_resource_finish_use(n, p, A, DEVQ_READ), -ENOTSUP);
    devq_resource_destroy(n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mem_pool");
    TCase *t = tcase_create("pool");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, reused_on_same_stream_at_once);
    tcase_add_test(t, one_fence_covers_a_batch_of_frees);
    tcase_add_test(t, unfenced_free_on_a_stream_is_sealed_before_crossing);
    tcase_add_test(t, stale_fast_entries_fall_back_to_the_lock);
    tcase_add_test(t, other_stream_waits_for_fence);
    tcase_add_test(t, three_stream_steal);
    tcase_add_test(t, stuck_fence_does_not_block_others);
    tcase_add_test(t, sync_free_reusable_anywhere);
    tcase_add_test(t, size_classes_round_to_256_multiples_and_at_most_a_quarter);
    tcase_add_test(t, large_bypasses_bins_and_waits_for_fence);
    tcase_add_test(t, double_and_foreign_free_refused);
    tcase_add_test(t, trim_releases_unused_chunks);
    tcase_add_test(t, reserved_stays_bounded);
    tcase_add_test(t, stream_gone_settles_its_frees);
    tcase_add_test(t, use_hooks_refused);
    tcase_add_test(t, threads_never_share_a_block);
    tcase_add_test(t, direct_frees_in_stream_order);
    tcase_add_test(t, native_needs_the_capability);
    suite_add_tcase(s, t);
    TCase *o = tcase_create("oom");
    tcase_add_checked_fixture(o, setup_small, teardown);
    tcase_add_test(o, oom_reaps_trims_then_reports);
    suite_add_tcase(s, o);
    return s;
}

int main(void)
{
    return check_run(suite());
}
