/* SPDX-License-Identifier: MIT */
/* Decorators (budget, stats, logging, guard) and user-written resources,
 * on the fake device. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <devq/devq_resource.h>
#include "../helpers/test_mem_fake.h"
#include "../helpers/check_main.h"

static struct devq_device *dev;
static struct devq_stream *A, *B;

static void setup_with(int defer)
{
    struct fake_config cfg = { .caps = DEVQ_CAP_HOST_VISIBLE, .defer_host_fn = defer };
    dev = fake_device_open(&cfg);
    ck_assert_ptr_nonnull(dev);
    A = fake_stream(dev, 0);
    B = fake_stream(dev, 1);
}

static void setup(void)
{
    setup_with(0);
}

static void setup_deferred(void)
{
    setup_with(1);
}

static void teardown(void)
{
    fake_run_host_fns();
    fake_complete_all();
    fake_device_close(dev);
}

static devq_resource *pool_base(void)
{
    devq_resource *p;
    ck_assert_int_eq(devq_resource_pool(dev, &p), 0);
    return p;
}

/* ---- budget ---- */

START_TEST(budget_refuses_then_recovers)
{
    devq_resource *b;
    ck_assert_int_eq(devq_resource_budget(pool_base(), 4096, &b), 0);
    void *p, *q, *h;
    ck_assert_int_eq(devq_resource_allocate(b, 3000, A, 0, &p, &h), 0);
    ck_assert_int_eq(devq_resource_allocate(b, 2000, A, 0, &q, &h), -ENOMEM);
    ck_assert_str_eq(devq_errmsg(), "budget: need 2000, outstanding 3000, limit 4096");
    ck_assert_int_eq(devq_resource_allocate(b, 1096, B, 0, &q, &h), 0); /* exactly full */
    ck_assert_int_eq(devq_resource_allocate(b, 1, B, 0, &h, &h), -ENOMEM);
    ck_assert_str_eq(devq_errmsg(), "budget: need 1, outstanding 4096, limit 4096");
    /* A stream-ordered free gives the bytes back at once. */
    ck_assert_int_eq(devq_resource_deallocate(b, p, 3000, A, 0), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(b), 1096);
    ck_assert_int_eq(devq_resource_allocate(b, 2000, A, 0, &p, &h), 0);
    /* A refused free (foreign pointer) does not change the count. */
    int x;
    ck_assert_int_eq(devq_resource_deallocate(b, &x, 8, A, 0), -EINVAL);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(b), 3096);
    ck_assert_int_eq(devq_resource_deallocate(b, p, 2000, NULL, 0), 0);
    ck_assert_int_eq(devq_resource_deallocate(b, q, 1096, NULL, 0), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(b), 0);
    devq_resource_reap(b); /* seal A's frees ... */
    fake_complete_all();   /* else the pool keeps A's block: it may be in use */
    devq_resource_destroy(b);
    devq_resource *base = pool_base();
    ck_assert_int_eq(devq_resource_budget(base, 0, &b), -EINVAL);
    devq_resource_destroy(base);
}
END_TEST

START_TEST(decorator_refuses_owned_inner)
{
    devq_resource *p = pool_base(), *b, *c;
    ck_assert_int_eq(devq_resource_budget(p, 100, &b), 0);
    ck_assert_int_eq(devq_resource_stats(p, &c), -EBUSY);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "already belongs"));
    devq_resource_destroy(p); /* owned: ignored, b still works */
    void *d, *h;
    ck_assert_int_eq(devq_resource_allocate(b, 10, NULL, 0, &d, &h), 0);
    ck_assert_int_eq(devq_resource_deallocate(b, d, 10, NULL, 0), 0);
    ck_assert_ptr_eq(devq_resource_inner(b), p);
    ck_assert_str_eq(devq_resource_name(b), "budget");
    devq_resource_destroy(b);
}
END_TEST

/* ---- stats ---- */

START_TEST(stats_by_tag_and_stream)
{
    devq_resource *s;
    ck_assert_int_eq(devq_resource_stats(pool_base(), &s), 0);
    void *p1, *p2, *p3, *h;
    ck_assert_int_eq(devq_resource_allocate(s, 100, A, 1, &p1, &h), 0);
    ck_assert_int_eq(devq_resource_allocate(s, 200, A, 2, &p2, &h), 0);
    ck_assert_int_eq(devq_resource_allocate(s, 300, B, 1, &p3, &h), 0);
    devq_mem_usage u;
    ck_assert_int_eq(devq_resource_usage_by_tag(s, 1, &u), 0);
    ck_assert_uint_eq(u.current, 400);
    ck_assert_uint_eq(u.peak, 400);
    ck_assert_uint_eq(u.count, 2);
    ck_assert_int_eq(devq_resource_usage_by_stream(s, 0, &u), 0);
    ck_assert_uint_eq(u.current, 300);
    ck_assert_int_eq(devq_resource_deallocate(s, p1, 100, A, 1), 0);
    ck_assert_int_eq(devq_resource_usage_by_tag(s, 1, &u), 0);
    ck_assert_uint_eq(u.current, 300);
    ck_assert_uint_eq(u.peak, 400);
    ck_assert_int_eq(devq_resource_usage_by_tag(s, 99, &u), 0);
    ck_assert_uint_eq(u.count, 0);
    devq_mem_stats st;
    ck_assert_int_eq(devq_resource_stats_get(s, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 500);
    ck_assert_uint_eq(st.bytes_peak, 600);
    ck_assert_uint_eq(st.allocations, 3);
    ck_assert_uint_eq(st.frees, 1);
    ck_assert_uint_eq(st.pending_frees, 1); /* from the pool below */
    ck_assert_uint_gt(st.bytes_reserved, 0);
    ck_assert_int_eq(devq_resource_reap(s), 0); /* seals A */
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(s), 0);
    ck_assert_int_eq(devq_resource_stats_get(s, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 0);
    ck_assert_int_eq(devq_resource_deallocate(s, p2, 200, NULL, 2), 0);
    ck_assert_int_eq(devq_resource_deallocate(s, p3, 300, NULL, 1), 0);
    devq_resource *b;
    ck_assert_int_eq(devq_resource_budget(pool_base(), 10, &b), 0);
    ck_assert_int_eq(devq_resource_usage_by_tag(b, 1, &u), -ENOENT);
    devq_resource_destroy(b);
    devq_resource_destroy(s);
}
END_TEST

/* ---- logging ---- */

START_TEST(logging_writes_one_csv_line_per_event)
{
    char path[] = "/tmp/devq-memlog-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    devq_resource *b, *l;
    ck_assert_int_eq(devq_resource_budget(pool_base(), 1000, &b), 0);
    ck_assert_int_eq(devq_resource_logging(b, path, &l), 0);
    void *p, *h, *q;
    ck_assert_int_eq(devq_resource_allocate(l, 600, A, 42, &p, &h), 0);
    ck_assert_int_eq(devq_resource_allocate(l, 600, NULL, 43, &q, &h), -ENOMEM);
    ck_assert_int_eq(devq_resource_deallocate(l, p, 600, A, 42), 0);
    /* Seal A below the logging layer, so the log has one reap line. */
    ck_assert_int_eq(devq_resource_reap(devq_resource_inner(b)), 0);
    fake_complete_all();
    ck_assert_int_eq(devq_resource_reap(l), 0);
    devq_resource_destroy(l);

    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "time_ns,op,bytes,address,stream,tag\n");
    const char *ops[] = { "alloc", "alloc_failed", "free", "reap" };
    unsigned long long bytes[] = { 600, 600, 600, 1 };
    uintptr_t addr[] = { (uintptr_t)p, 0, (uintptr_t)p, 0 };
    long long sid[] = { 0, -1, 0, -1 };
    unsigned tag[] = { 42, 43, 42, 0 };
    unsigned long long last_t = 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_lt(n, 4);
        unsigned long long t, by;
        char op[32];
        uintptr_t a;
        long long s;
        unsigned tg;
        int got = sscanf(line, "%llu,%31[a-z_],%llu,0x%" SCNxPTR ",%lld,%u", &t, op, &by, &a, &s, &tg);
        ck_assert_msg(got == 6, "line %d unparseable: %s", n, line);
        ck_assert_str_eq(op, ops[n]);
        ck_assert_uint_eq(by, bytes[n]);
        ck_assert_uint_eq(a, addr[n]);
        ck_assert_int_eq(s, sid[n]);
        ck_assert_uint_eq(tg, tag[n]);
        ck_assert_uint_ge(t, last_t);
        last_t = t;
        n++;
    }
    ck_assert_int_eq(n, 4);
    fclose(f);
    unlink(path);
    devq_resource *base = pool_base();
    ck_assert_int_eq(devq_resource_logging(base, "/nonexistent-dir/x.csv", &l), -ENOENT);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "/nonexistent-dir/x.csv"));
    devq_resource_destroy(base);
}
END_TEST

/* ---- guard ---- */

static devq_resource *guard_over_pool(void)
{
    devq_resource *g;
    ck_assert_int_eq(devq_resource_guard(pool_base(), &g), 0);
    return g;
}

START_TEST(guard_catches_double_free)
{
    devq_resource *g = guard_over_pool();
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(g, 128, A, 5, &p, &h), 0);
    ck_assert_int_eq(devq_resource_deallocate(g, p, 128, B, 9), 0);
    ck_assert_int_eq(devq_resource_deallocate(g, p, 128, A, 5), -EINVAL);
    char want[128];
    snprintf(want, sizeof want, "double free of %p", p);
    ck_assert_msg(strstr(devq_errmsg(), want), "%s", devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "first freed on stream 1 with tag 9"), "%s", devq_errmsg());
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_catches_double_free_after_quarantine)
{
    devq_resource *g = guard_over_pool();
    void *p, *h, *q;
    ck_assert_int_eq(devq_resource_allocate(g, 64, NULL, 3, &p, &h), 0);
    ck_assert_int_eq(devq_resource_deallocate(g, p, 64, NULL, 3), 0);
    /* Push p out of the quarantine with other frees. */
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(devq_resource_allocate(g, 8192, NULL, 0, &q, &h), 0);
        ck_assert_int_eq(devq_resource_deallocate(g, q, 8192, NULL, 0), 0);
    }
    ck_assert_int_eq(devq_resource_deallocate(g, p, 64, NULL, 3), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "first freed on stream -1 with tag 3"), "%s", devq_errmsg());
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_catches_use_after_free)
{
    devq_resource *g = guard_over_pool();
    void *p, *h, *q, *qh;
    ck_assert_int_eq(devq_resource_allocate(g, 300, A, 6, &p, &h), 0);
    ck_assert_int_eq(devq_resource_deallocate(g, p, 300, B, 8), 0);
    ((unsigned char *)h)[17] = 1;               /* still quarantined: a write after the free */
    ck_assert_int_eq(devq_resource_reap(g), 0); /* not known until it leaves quarantine */
    for (int i = 0; i < 70; i++) {
        ck_assert_int_eq(devq_resource_allocate(g, 300, B, 0, &q, &qh), 0);
        ck_assert_int_eq(devq_resource_deallocate(g, q, 300, B, 0), 0);
    }
    ck_assert_int_eq(devq_resource_reap(g), -EFAULT);
    char want[160];
    snprintf(want, sizeof want,
             "use after free of %p (300 bytes, tag 6): written after its "
             "free on stream 1 (allocated on stream 0), first changed byte at +17",
             p);
    ck_assert_msg(strstr(devq_errmsg(), want), "%s", devq_errmsg());
    ck_assert_int_eq(devq_resource_reap(g), 0);
    fake_complete_all();
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_catches_foreign_free)
{
    devq_resource *g = guard_over_pool();
    char local[64];
    ck_assert_int_eq(devq_resource_deallocate(g, local, 64, NULL, 0), -EINVAL);
    char want[128];
    snprintf(want, sizeof want, "free of %p, which this resource never allocated", (void *)local);
    ck_assert_msg(strstr(devq_errmsg(), want), "%s", devq_errmsg());
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_catches_overrun_and_poisons)
{
    devq_resource *g = guard_over_pool();
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(g, 100, NULL, 4, &p, &h), 0);
    memset(h, 1, 100);
    ((unsigned char *)h)[100 + 3] = 0; /* 4th byte past the end */
    ck_assert_int_eq(devq_resource_deallocate(g, p, 100, NULL, 4), -EFAULT);
    ck_assert_msg(strstr(devq_errmsg(), "buffer overrun"), "%s", devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "byte 3 past the end"), "%s", devq_errmsg());
    /* Still quarantined, so readable: poisoned. */
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(((unsigned char *)h)[i], 0xDD);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(g), 0);

    ck_assert_int_eq(devq_resource_allocate(g, 100, A, 4, &p, &h), 0);
    ((unsigned char *)h)[-1] = 0; /* underrun */
    ck_assert_int_eq(devq_resource_deallocate(g, p, 100, A, 4), -EFAULT);
    ck_assert_msg(strstr(devq_errmsg(), "underrun"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_resource_reap(g), 0); /* already reported */

    ck_assert_int_eq(devq_resource_allocate(g, 100, A, 4, &p, &h), 0);
    memset(h, 7, 100); /* in bounds: fine */
    ck_assert_int_eq(devq_resource_deallocate(g, p, 100, A, 4), 0);
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_checks_stream_frees_in_stream_order)
{
    devq_resource *g = guard_over_pool();
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(g, 50, A, 1, &p, &h), 0);
    memset(h, 0, 51); /* and one byte past the end */
    /* The stream has not run the check yet: the free cannot know. */
    ck_assert_int_eq(devq_resource_deallocate(g, p, 50, A, 1), 0);
    ck_assert_uint_eq(((unsigned char *)h)[0], 0); /* not poisoned before the stream gets there */
    fake_run_host_fns();
    ck_assert_uint_eq(((unsigned char *)h)[0], 0xDD);
    ck_assert_int_eq(devq_resource_reap(g), -EFAULT);
    ck_assert_msg(strstr(devq_errmsg(), "buffer overrun"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_resource_reap(g), 0); /* reported once */
    devq_resource_destroy(g);
}
END_TEST

START_TEST(guard_needs_host_visible_memory)
{
    dev->info.caps &= ~(uint64_t)DEVQ_CAP_HOST_VISIBLE;
    devq_resource *p = pool_base(), *g;
    ck_assert_int_eq(devq_resource_guard(p, &g), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "not host-visible"));
    devq_resource_destroy(p);
}
END_TEST

/* ---- the whole stack from several threads ---- */

struct worker {
    devq_resource *top;
    int id, errors;
};

static void *stack_worker(void *arg)
{
    struct worker *w = arg;
    struct devq_stream *own = fake_stream(dev, (uint32_t)w->id);
    unsigned seed = (unsigned)w->id + 1;
    for (int i = 0; i < 3000; i++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 5000);
        struct devq_stream *st = rand_r(&seed) % 2 ? own : NULL;
        void *d, *h;
        int r = devq_resource_allocate(w->top, n, st, (uint32_t)w->id, &d, &h);
        if (r == -ENOMEM)
            continue; /* over budget: others hold it */
        if (r < 0) {
            w->errors++;
            continue;
        }
        memset(h, w->id, n);
        if (devq_resource_deallocate(w->top, d, n, st, (uint32_t)w->id) < 0)
            w->errors++;
    }
    return NULL;
}

START_TEST(whole_stack_from_threads)
{
    char path[] = "/tmp/devq-memthreads-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    devq_resource *b, *g, *s, *l;
    ck_assert_int_eq(devq_resource_budget(pool_base(), 64 << 10, &b), 0);
    ck_assert_int_eq(devq_resource_guard(b, &g), 0);
    ck_assert_int_eq(devq_resource_stats(g, &s), 0);
    ck_assert_int_eq(devq_resource_logging(s, path, &l), 0);
    enum { T = 4 };
    pthread_t th[T];
    struct worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){ .top = l, .id = i };
        ck_assert_int_eq(pthread_create(&th[i], NULL, stack_worker, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(w[i].errors, 0);
    }
    devq_mem_stats st;
    ck_assert_int_eq(devq_resource_stats_get(l, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 0);
    ck_assert_uint_eq(st.allocations, st.frees);
    ck_assert_uint_le(st.bytes_peak, 64 << 10);
    ck_assert_int_eq(devq_resource_reap(l), 0); /* no canary was hit */
    fake_complete_all();
    devq_resource_destroy(l);
    unlink(path);
}
END_TEST

/* ---- user resources ---- */

struct counting {
    int allocs, frees, reaps, destroyed;
    int track;
};

static int c_alloc(void *s, size_t n, devq_stream_ref *st, uint32_t tag, void **d, void **h)
{
    struct counting *c = s;
    c->allocs++;
    *d = malloc(n);
    *h = *d;
    return *d ? 0 : -ENOMEM;
}

static int c_free(void *s, void *d, size_t n, devq_stream_ref *st, uint32_t tag)
{
    ((struct counting *)s)->frees++;
    free(d);
    return 0;
}

static int c_reap(void *s)
{
    ((struct counting *)s)->reaps++;
    return 0;
}

static int c_supports(void *s)
{
    return ((struct counting *)s)->track;
}

static int c_use(void *s, void *d, devq_stream_ref *st, enum devq_access a)
{
    return 0;
}

static void c_destroy(void *s)
{
    ((struct counting *)s)->destroyed++;
}

START_TEST(user_resource_minimal_table)
{
    /* A table built against an older header: only up to deallocate. */
    struct counting c = { 0 };
    struct devq_resource_ops ops = { .abi_version = DEVQ_RESOURCE_ABI_VERSION,
                                     .name = "mine",
                                     .allocate = c_alloc,
                                     .deallocate = c_free,
                                     .reap_pending = c_reap,
                                     .destroy = c_destroy };
    ops.size = (uint32_t)(offsetof(struct devq_resource_ops, deallocate) + sizeof(void *));
    devq_resource *r;
    ck_assert_int_eq(devq_resource_create(dev, &ops, &c, &r), 0);
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(r, 33, A, 0, &p, &h), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(r), 33); /* counted by lib */
    ck_assert_int_eq(devq_resource_reap(r), 0);
    ck_assert_int_eq(c.reaps, 0); /* beyond size: not read */
    ck_assert_int_eq(devq_resource_prepare_use(r, p, A, DEVQ_READ), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "'mine' cannot track"));
    ck_assert_int_eq(devq_resource_deallocate(r, p, 33, A, 0), 0);
    ck_assert_uint_eq(devq_resource_bytes_outstanding(r), 0);
    devq_resource_destroy(r);
    ck_assert_int_eq(c.destroyed, 0); /* destroy was beyond size too */

    ops.size = 8;
    ck_assert_int_eq(devq_resource_create(dev, &ops, &c, &r), -EINVAL);
    ops.size = sizeof ops;
    ops.abi_version = 99;
    ck_assert_int_eq(devq_resource_create(dev, &ops, &c, &r), -ENOTSUP);
    ops.abi_version = DEVQ_RESOURCE_ABI_VERSION;
    ops.allocate = NULL;
    ck_assert_int_eq(devq_resource_create(dev, &ops, &c, &r), -EINVAL);
}
END_TEST

START_TEST(user_resource_hooks_forwarded_by_decorators)
{
    struct counting c = { .track = 1 };
    static const struct devq_resource_ops ops = {
        .abi_version = DEVQ_RESOURCE_ABI_VERSION,
        .size = sizeof(struct devq_resource_ops),
        .name = "tracker",
        .allocate = c_alloc,
        .deallocate = c_free,
        .reap_pending = c_reap,
        .supports_use_tracking = c_supports,
        .prepare_use = c_use,
        .finish_use = c_use,
        .destroy = c_destroy,
    };
    devq_resource *r, *b, *s;
    ck_assert_int_eq(devq_resource_create(dev, &ops, &c, &r), 0);
    ck_assert_int_eq(devq_resource_budget(r, 1 << 20, &b), 0);
    ck_assert_int_eq(devq_resource_stats(b, &s), 0);
    ck_assert_int_eq(devq_resource_supports_use_tracking(s), 1);
    void *p, *h;
    ck_assert_int_eq(devq_resource_allocate(s, 10, A, 0, &p, &h), 0);
    ck_assert_int_eq(devq_resource_prepare_use(s, p, B, DEVQ_READ), 0);
    ck_assert_int_eq(devq_resource_finish_use(s, p, B, DEVQ_READ), 0);
    ck_assert_int_eq(devq_resource_reap(s), 0);
    ck_assert_int_eq(c.reaps, 1);
    ck_assert_int_eq(devq_resource_deallocate(s, p, 10, A, 0), 0);
    devq_resource_destroy(s);
    ck_assert_int_eq(c.destroyed, 1);
    ck_assert_int_eq(c.allocs, 1);
    ck_assert_int_eq(c.frees, 1);

    /* The built-in stack over a base that cannot track refuses. */
    ck_assert_int_eq(devq_resource_budget(pool_base(), 100, &b), 0);
    ck_assert_int_eq(devq_resource_stats(b, &s), 0);
    ck_assert_int_eq(devq_resource_supports_use_tracking(s), 0);
    ck_assert_int_eq(devq_resource_prepare_use(s, p, B, DEVQ_WRITE), -ENOTSUP);
    ck_assert_int_eq(devq_resource_finish_use(s, p, B, DEVQ_WRITE), -ENOTSUP);
    devq_resource_destroy(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mem_decorators");
    TCase *t = tcase_create("decorators");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, budget_refuses_then_recovers);
    tcase_add_test(t, decorator_refuses_owned_inner);
    tcase_add_test(t, stats_by_tag_and_stream);
    tcase_add_test(t, logging_writes_one_csv_line_per_event);
    tcase_add_test(t, guard_catches_double_free);
    tcase_add_test(t, guard_catches_double_free_after_quarantine);
    tcase_add_test(t, guard_catches_foreign_free);
    tcase_add_test(t, guard_catches_use_after_free);
    tcase_add_test(t, guard_catches_overrun_and_poisons);
    tcase_add_test(t, guard_needs_host_visible_memory);
    tcase_add_test(t, whole_stack_from_threads);
    tcase_add_test(t, user_resource_minimal_table);
    tcase_add_test(t, user_resource_hooks_forwarded_by_decorators);
    suite_add_tcase(s, t);
    TCase *d = tcase_create("deferred");
    tcase_add_checked_fixture(d, setup_deferred, teardown);
    tcase_add_test(d, guard_checks_stream_frees_in_stream_order);
    suite_add_tcase(s, d);
    return s;
}

int main(void)
{
    return check_run(suite());
}
