/* SPDX-License-Identifier: MIT */
/* The device's stack: built from the environment, used by devq__mem_*,
 * replaced with devq_device_set_resource; then the same through the
 * public API on the real cpu device.  Check forks each test, so every
 * test reads the environment afresh. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <devq/devq_resource.h>
#include "mem.h"
#include "../helpers/test_mem_fake.h"
#include "../helpers/check_main.h"

static const char *vars[] = { "DEVQ_MEM_POOL", "DEVQ_MEM_BUDGET", "DEVQ_MEM_GUARD", "DEVQ_MEM_LOG" };

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}

static struct devq_device *open_fake(uint64_t caps)
{
    struct fake_config cfg = { .caps = caps, .attach_mem = 1 };
    struct devq_device *dev = NULL;
    int r = fake_device_open_mem(&cfg, &dev);
    ck_assert_msg(r == 0, "open: %d %s", r, devq_errmsg());
    return dev;
}

static int open_fake_err(uint64_t caps)
{
    struct fake_config cfg = { .caps = caps, .attach_mem = 1 };
    struct devq_device *dev = NULL;
    int r = fake_device_open_mem(&cfg, &dev);
    if (r == 0)
        fake_device_close(dev);
    return r;
}

/* "stats <- budget <- pool" style chain, top first. */
static void chain(struct devq_device *dev, char *buf, size_t cap)
{
    buf[0] = 0;
    for (devq_resource *r = devq_device_resource(dev); r; r = devq_resource_inner(r)) {
        strncat(buf, devq_resource_name(r), cap - strlen(buf) - 1);
        if (devq_resource_inner(r))
            strncat(buf, " <- ", cap - strlen(buf) - 1);
    }
}

START_TEST(default_stack_is_pool_and_stats)
{
    clear_env();
    struct devq_device *dev = open_fake(DEVQ_CAP_HOST_VISIBLE);
    char c[256];
    chain(dev, c, sizeof c);
    ck_assert_str_eq(c, "stats <- pool");
    fake_device_close(dev);
    /* With a native allocator, native is the default base. */
    dev = open_fake(DEVQ_CAP_HOST_VISIBLE | DEVQ_CAP_ASYNC_ALLOC);
    chain(dev, c, sizeof c);
    ck_assert_str_eq(c, "stats <- native");
    fake_device_close(dev);
}
END_TEST

START_TEST(full_stack_from_environment)
{
    clear_env();
    char path[] = "/tmp/devq-memstack-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    setenv("DEVQ_MEM_POOL", "direct", 1);
    setenv("DEVQ_MEM_BUDGET", "64K", 1);
    setenv("DEVQ_MEM_GUARD", "1", 1);
    setenv("DEVQ_MEM_LOG", path, 1);
    struct devq_device *dev = open_fake(DEVQ_CAP_HOST_VISIBLE | DEVQ_CAP_ASYNC_ALLOC);
    char c[256];
    chain(dev, c, sizeof c);
    ck_assert_str_eq(c, "logging <- stats <- guard <- budget <- direct");
    void *d, *h;
    ck_assert_int_eq(devq__mem_alloc(dev, 1000, NULL, 3, &d, &h), 0);
    /* The budget counts the guard's canaries too: 64K minus a little. */
    ck_assert_int_eq(devq__mem_alloc(dev, 64 << 10, NULL, 3, &d, &h), -ENOMEM);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "limit 65536"));
    ck_assert_int_eq(devq__mem_free(dev, d, 1000, NULL, 3), 0);
    fake_device_close(dev);
    FILE *f = fopen(path, "r");
    char line[256];
    const char *want[] = { "time_ns,op", ",alloc,", ",alloc_failed,", ",free,", ",reap," };
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_lt(n, 5);
        ck_assert_msg(strstr(line, want[n]), "line %d: %s", n, line);
        n++;
    }
    fclose(f);
    unlink(path);
    ck_assert_int_eq(n, 5); /* the device's close reaps */
    clear_env();
}
END_TEST

START_TEST(malformed_values_name_the_variable)
{
    clear_env();
    setenv("DEVQ_MEM_BUDGET", "12Q", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_BUDGET='12Q'"));
    setenv("DEVQ_MEM_BUDGET", "0", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_BUDGET"));
    clear_env();
    setenv("DEVQ_MEM_POOL", "cuda", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_POOL='cuda'"));
    setenv("DEVQ_MEM_POOL", "native", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_POOL=native"));
    clear_env();
    setenv("DEVQ_MEM_GUARD", "maybe", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_GUARD='maybe'"));
    setenv("DEVQ_MEM_GUARD", "1", 1);
    ck_assert_int_eq(open_fake_err(0), -ENOTSUP);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "not host-visible"));
    clear_env();
    setenv("DEVQ_MEM_LOG", "/nonexistent-dir/m.csv", 1);
    ck_assert_int_eq(open_fake_err(DEVQ_CAP_HOST_VISIBLE), -ENOENT);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "DEVQ_MEM_LOG"));
    clear_env();
}
END_TEST

START_TEST(entry_points_stats_and_reap)
{
    clear_env();
    struct devq_device *dev = open_fake(DEVQ_CAP_HOST_VISIBLE);
    struct devq_stream *A = fake_stream(dev, 0);
    void *d, *h;
    ck_assert_int_eq(devq__mem_alloc(dev, 3000, A, 1, &d, &h), 0);
    devq_mem_stats st;
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 3000);
    ck_assert_uint_eq(st.allocations, 1);
    ck_assert_uint_gt(st.bytes_reserved, 3000);
    ck_assert_int_eq(devq__mem_free(dev, d, 3000, A, 1), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 0);
    ck_assert_uint_eq(st.bytes_peak, 3000);
    ck_assert_uint_eq(st.frees, 1);
    ck_assert_uint_eq(st.pending_frees, 1);
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 1);
    fake_complete_all();
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 0);
    /* A stream going away with a pending free: settled, not leaked. */
    ck_assert_int_eq(devq__mem_alloc(dev, 3000, A, 1, &d, &h), 0);
    ck_assert_int_eq(devq__mem_free(dev, d, 3000, A, 1), 0);
    ck_assert_int_eq(devq_mem_reap(dev), 0); /* seals A's free: its fence ... */
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 1);
    fake_complete_all(); /* ... is reached, but nobody reaped */
    devq__mem_stream_gone(dev, A);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 0);
    ck_assert_int_eq(devq_mem_stats_get(NULL, &st), -EINVAL);
    ck_assert_int_eq(devq_mem_reap(NULL), -EINVAL);
    fake_device_close(dev);
}
END_TEST

/* A user-written resource: counts calls, memory from malloc. */
struct mine {
    int allocs, frees, destroyed;
};

static int m_alloc(void *s, size_t n, devq_stream_ref *st, uint32_t tag, void **d, void **h)
{
    ((struct mine *)s)->allocs++;
    *d = *h = calloc(1, n);
    return *d ? 0 : -ENOMEM;
}

static int m_free(void *s, void *d, size_t n, devq_stream_ref *st, uint32_t tag)
{
    ((struct mine *)s)->frees++;
    free(d);
    return 0;
}

static void m_destroy(void *s)
{
    ((struct mine *)s)->destroyed++;
}

static const struct devq_resource_ops mine_ops = {
    .abi_version = DEVQ_RESOURCE_ABI_VERSION,
    .size = sizeof(struct devq_resource_ops),
    .name = "mine",
    .allocate = m_alloc,
    .deallocate = m_free,
    .destroy = m_destroy,
};

START_TEST(set_resource_installs_a_user_resource)
{
    clear_env();
    struct devq_device *dev = open_fake(DEVQ_CAP_HOST_VISIBLE);
    struct devq_stream *A = fake_stream(dev, 0);
    struct mine m = { 0 };
    devq_resource *r;
    ck_assert_int_eq(devq_resource_create(dev, &mine_ops, &m, &r), 0);
    void *d, *h;
    /* Outstanding allocation on the default stack: refused. */
    ck_assert_int_eq(devq__mem_alloc(dev, 100, NULL, 0, &d, &h), 0);
    ck_assert_int_eq(devq_device_set_resource(dev, r), -EBUSY);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "1 allocations are outstanding"));
    ck_assert_int_eq(devq__mem_free(dev, d, 100, A, 0), 0);
    /* Freed on a stream that has not got there: still refused. */
    ck_assert_int_eq(devq_device_set_resource(dev, r), -EBUSY);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "pending"));
    fake_complete_all();
    ck_assert_int_eq(devq_device_set_resource(dev, r), 0);
    ck_assert_ptr_eq(devq_device_resource(dev), r);
    ck_assert_int_eq(devq__mem_alloc(dev, 100, A, 0, &d, &h), 0);
    ck_assert_int_eq(m.allocs, 1);
    devq_mem_stats st;
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 100); /* counted by lib */
    ck_assert_int_eq(devq__mem_free(dev, d, 100, A, 0), 0);
    ck_assert_int_eq(m.frees, 1);
    /* Installed: the device owns it; destroy by the user is ignored. */
    devq_resource_destroy(r);
    ck_assert_int_eq(m.destroyed, 0);
    /* Cannot install it twice, nor on another device. */
    ck_assert_int_eq(devq_device_set_resource(dev, r), -EBUSY);
    fake_device_close(dev);
    ck_assert_int_eq(m.destroyed, 1);
}
END_TEST

/* ---- the real cpu device through the public API ---- */

START_TEST(cpu_device_buffers_go_through_the_stack)
{
    clear_env();
    devq_device *dev;
    int r = devq_device_open("cpu", &dev);
    ck_assert_msg(r == 0, "open cpu: %s", devq_errmsg());
    devq_mem_stats st;
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    uint64_t base_allocs = st.allocations;
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 5000, NULL, 9, &b), 0);
    ck_assert_ptr_nonnull(devq_buffer_host_ptr(b));
    memset(devq_buffer_host_ptr(b), 1, 5000);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 5000);
    ck_assert_uint_eq(st.allocations, base_allocs + 1);
    devq_mem_usage u;
    ck_assert_int_eq(devq_resource_usage_by_tag(devq_device_resource(dev), 9, &u), 0);
    ck_assert_uint_eq(u.current, 5000);

    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_buffer *c;
    ck_assert_int_eq(devq_buffer_alloc(dev, 4096, q, 10, &c), 0);
    ck_assert_int_eq(devq_queue_fill(q, c, 0, 4096, 7), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);
    /* Freed on the queue once its work is done (a free while the work
     * runs is completed by the engine later). */
    ck_assert_int_eq(((unsigned char *)devq_buffer_host_ptr(c))[4095], 7);
    ck_assert_int_eq(devq_buffer_free(c, q), 0);
    ck_assert_int_eq(devq_device_synchronize(dev, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 5000);
    /* The stream may not have counted its last host callback done yet, so
     * the free's fence can still be a moment away; destroying the queue
     * settles its frees for certain. */
    ck_assert_uint_le(st.pending_frees, 1);
    devq_queue_destroy(q);
    ck_assert_int_eq(devq_mem_reap(dev), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.pending_frees, 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    ck_assert_int_eq(devq_mem_stats_get(dev, &st), 0);
    ck_assert_uint_eq(st.bytes_outstanding, 0);
    devq_device_close(dev);
}
END_TEST

START_TEST(cpu_device_budget_from_environment)
{
    clear_env();
    setenv("DEVQ_MEM_BUDGET", "1M", 1);
    devq_device *dev;
    int r = devq_device_open("cpu", &dev);
    ck_assert_msg(r == 0, "open cpu: %s", devq_errmsg());
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev, 2u << 20, NULL, 0, &b), -ENOMEM);
    ck_assert_msg(strstr(devq_errmsg(), "budget: need 2097152, outstanding 0, limit 1048576"), "%s",
                  devq_errmsg());
    ck_assert_int_eq(devq_buffer_alloc(dev, 1u << 20, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_device_close(dev);
    clear_env();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mem_stack");
    TCase *t = tcase_create("fake");
    tcase_add_test(t, default_stack_is_pool_and_stats);
    tcase_add_test(t, full_stack_from_environment);
    tcase_add_test(t, malformed_values_name_the_variable);
    tcase_add_test(t, entry_points_stats_and_reap);
    tcase_add_test(t, set_resource_installs_a_user_resource);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("cpu");
    tcase_add_test(c, cpu_device_buffers_go_through_the_stack);
    tcase_add_test(c, cpu_device_budget_from_environment);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    return check_run(suite());
}
