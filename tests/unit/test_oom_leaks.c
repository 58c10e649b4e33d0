/* SPDX-License-Identifier: MIT */
/* Allocation failure leaks nothing: whichever malloc, calloc or realloc
 * of libdevq fails, every block it allocated is freed by the time the
 * device is closed and the signals destroyed.
 *
 * The program is linked with -Wl,--wrap for malloc, calloc, realloc and
 * free: every such call of libdevq (linked statically here) passes
 * through the wrappers below, which can fail the Nth allocation and keep
 * the set of blocks allocated and not yet freed.  Two cases:
 *
 *  - flow_ends: a warm device; one round in which queue b reads what
 *    queue a wrote (the tracker makes b's stream wait for a's), with its
 *    Nth allocation failing for every N.  With DEVQ_TRACE on each such
 *    wait allocates the two ends of a flow arrow (lib/queue/align.c);
 *    when the second failed, the first leaked (found by `make analyze`).
 *  - whole_program: from devq_device_open to devq_device_close (queues,
 *    buffers, signals, a host wait, a notify, timestamps, a write, a
 *    read, a host function, the same cross-queue round), the Nth
 *    allocation failing for every N.
 *
 * Blocks the notifier thread frees after a callback may outlive the
 * device's close by a moment: the check waits (bounded) for the set to
 * empty.  The trace buffer is the one block meant to outlive a device (it is
 * written at exit): DEVQ_TRACE_MAX keeps it at its first allocation,
 * made in the warm-up, so it never grows during a measured run.  No
 * Check assertion runs while an allocation may fail: Check allocates, and
 * its calls are wrapped too.  Under ASan and TSan the wrappers still see
 * libdevq's calls (--wrap renames them at link time). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include "../helpers/check_main.h"

#define SEC 1000000000ull
#define MAX_LIVE 4096

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static pthread_mutex_t wrap_lock = PTHREAD_MUTEX_INITIALIZER;
static long armed;   /* 0 off; > 0 fail the allocation numbered this; < 0 count only */
static long counted; /* allocations seen since armed */
static int tracking; /* record the blocks allocated while set */
static void *live[MAX_LIVE];
static size_t live_size[MAX_LIVE];
static int nlive, overflow;

/* Caller holds wrap_lock.  1: this allocation is to fail. */
static int should_fail(void)
{
    return armed && ++counted == armed;
}

static void track(void *p, size_t n)
{
    if (!p || !tracking)
        return;
    if (nlive < MAX_LIVE) {
        live[nlive] = p;
        live_size[nlive++] = n;
    } else {
        overflow = 1;
    }
}

/* The index of p among the live blocks, or -1. */
static int find_live(const void *p)
{
    for (int i = 0; p && i < nlive; i++)
        if (live[i] == p)
            return i;
    return -1;
}

void *__wrap_malloc(size_t n)
{
    pthread_mutex_lock(&wrap_lock);
    void *p = should_fail() ? NULL : __real_malloc(n);
    track(p, n);
    pthread_mutex_unlock(&wrap_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    pthread_mutex_lock(&wrap_lock);
    void *p = should_fail() ? NULL : __real_calloc(n, size);
    track(p, n * size);
    pthread_mutex_unlock(&wrap_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* A block that moves keeps its place in the set; a failed realloc
 * leaves the old block as it was. */
void *__wrap_realloc(void *old, size_t n)
{
    pthread_mutex_lock(&wrap_lock);
    void *p = should_fail() ? NULL : __real_realloc(old, n);
    if (p) {
        int i = find_live(old);
        if (i >= 0) {
            live[i] = p;
            live_size[i] = n;
        } else {
            track(p, n);
        }
    }
    pthread_mutex_unlock(&wrap_lock);
    if (!p)
        errno = ENOMEM;
    return p;
}

void __wrap_free(void *p)
{
    pthread_mutex_lock(&wrap_lock);
    int i = find_live(p);
    if (i >= 0) {
        live[i] = live[--nlive];
        live_size[i] = live_size[nlive];
    }
    pthread_mutex_unlock(&wrap_lock);
    __real_free(p);
}

/* Arm (as above); with track, start a new set and record into it, else
 * stop recording (frees still leave the set).  Returns the number of
 * allocations counted since the last arm. */
static long arm(long n, int track_new)
{
    pthread_mutex_lock(&wrap_lock);
    long was = counted;
    counted = 0;
    armed = n;
    if (track_new) {
        nlive = 0;
        overflow = 0;
    }
    tracking = track_new;
    pthread_mutex_unlock(&wrap_lock);
    return was;
}

struct rig {
    devq_device *dev;
    devq_queue *a, *b;
    devq_buffer *x, *y;
};

/* The cross-queue round: a fills x, b copies x to y (the tracker makes
 * b's stream wait for a's), both finish.  The first result that is not
 * 0, else 0. */
static int round_once(struct rig *r)
{
    int rc[6];
    rc[0] = devq_queue_fill(r->a, r->x, 0, 4096, 0x5a);
    rc[1] = devq_queue_submit(r->a);
    rc[2] = devq_queue_copy(r->b, r->y, 0, r->x, 0, 4096);
    rc[3] = devq_queue_submit(r->b);
    rc[4] = devq_queue_finish(r->b, 10 * SEC);
    rc[5] = devq_queue_finish(r->a, 10 * SEC);
    for (int i = 0; i < 6; i++)
        if (rc[i])
            return rc[i];
    return 0;
}

/* The first result that is not 0 of rc[0..n), else 0. */
static int first_failure(const int *rc, int n)
{
    for (int i = 0; i < n; i++)
        if (rc[i])
            return rc[i];
    return 0;
}

static void host_fn(void *arg)
{
    (void)arg;
}

static void notified(void *arg, int status)
{
    (void)arg;
    (void)status;
}

static char host_bytes[4096];

/* More of the API around the round, on an open rig: a host wait, a
 * notify, timestamps, a write, a read, a host function.  Whatever was
 * made is destroyed; h is set before the finishes, so nothing waits on
 * it whatever failed. */
static int wide_round(struct rig *r)
{
    int rc[24], n = 0;
    devq_signal *h = NULL, *s = NULL;
    devq_buffer *z = NULL;
    devq_timestamp *t0 = NULL, *t1 = NULL;
    rc[n++] = devq_signal_create(0, &h);
    rc[n++] = devq_signal_create(0, &s);
    rc[n++] = devq_buffer_alloc(r->dev, sizeof host_bytes, NULL, 0, &z);
    if (h && s && z) {
        rc[n++] = devq_queue_wait(r->a, h, 1);
        rc[n++] = devq_queue_timestamp(r->a, &t0);
        rc[n++] = devq_queue_write(r->a, z, 0, host_bytes, sizeof host_bytes);
        rc[n++] = devq_queue_signal(r->a, s, 1);
        rc[n++] = devq_queue_submit(r->a);
        rc[n++] = devq_signal_notify(s, 1, notified, NULL, NULL);
        rc[n++] = devq_queue_read(r->b, host_bytes, z, 0, sizeof host_bytes);
        rc[n++] = devq_queue_host_fn(r->b, host_fn, NULL);
        rc[n++] = devq_queue_timestamp(r->b, &t1);
        rc[n++] = devq_queue_submit(r->b);
        rc[n++] = devq_signal_set(h, 1);
        rc[n++] = round_once(r);
    }
    if (t0)
        devq_timestamp_destroy(t0);
    if (t1)
        devq_timestamp_destroy(t1);
    if (z)
        devq_buffer_free(z, NULL);
    if (s)
        devq_signal_destroy(s);
    if (h)
        devq_signal_destroy(h);
    return first_failure(rc, n);
}

/* Open, the wide round, close, each step refused or not: the first
 * result that is not 0, else 0. */
static int whole_program(void)
{
    struct rig r = { 0 };
    int rc[6] = { devq_device_open("cpu", &r.dev) };
    if (rc[0])
        return rc[0];
    rc[1] = devq_queue_create(r.dev, NULL, &r.a);
    rc[2] = devq_queue_create(r.dev, NULL, &r.b);
    rc[3] = devq_buffer_alloc(r.dev, 4096, NULL, 0, &r.x);
    rc[4] = devq_buffer_alloc(r.dev, 4096, NULL, 0, &r.y);
    if (!first_failure(rc, 5))
        rc[5] = wide_round(&r);
    if (!rc[3])
        devq_buffer_free(r.x, NULL);
    if (!rc[4])
        devq_buffer_free(r.y, NULL);
    if (!rc[1])
        devq_queue_destroy(r.a);
    if (!rc[2])
        devq_queue_destroy(r.b);
    devq_device_close(r.dev);
    return first_failure(rc, 6);
}

static void rig_open(struct rig *r)
{
    ck_assert_int_eq(devq_device_open("cpu", &r->dev), 0);
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->a), 0);
    ck_assert_int_eq(devq_queue_create(r->dev, NULL, &r->b), 0);
    ck_assert_int_eq(devq_buffer_alloc(r->dev, 4096, NULL, 0, &r->x), 0);
    ck_assert_int_eq(devq_buffer_alloc(r->dev, 4096, NULL, 0, &r->y), 0);
}

static void rig_close(struct rig *r)
{
    ck_assert_int_eq(devq_buffer_free(r->x, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(r->y, NULL), 0);
    devq_queue_destroy(r->a);
    devq_queue_destroy(r->b);
    devq_device_close(r->dev);
}

/* A notify's record, and the reference to its signal it holds, are
 * freed by the notifier thread once the callback returned, which may be
 * after the device was closed: wait for the set to empty (bounded)
 * before judging what is left. */
static int settled_live(void)
{
    uint64_t deadline = check_now_ns() + 10 * SEC;
    for (;;) {
        pthread_mutex_lock(&wrap_lock);
        int n = nlive;
        pthread_mutex_unlock(&wrap_lock);
        if (!n || check_now_ns() > deadline)
            return n;
        check_nap_ms(1);
    }
}

static void assert_none_live(const char *what, long n, long m, int rc)
{
    settled_live();
    ck_assert_msg(!overflow, "%s: more than %d blocks live", what, MAX_LIVE);
    ck_assert_msg(rc <= 0, "%s: allocation %ld failing: a call returned %d", what, n, rc);
    ck_assert_msg(nlive == 0,
                  "%s: allocation %ld of %ld failing (result %d) left %d block(s) allocated, the first "
                  "%zu bytes",
                  what, n, m, rc, nlive, nlive ? live_size[0] : (size_t)0);
}

/* A failing allocation may leave a queue failed: a new device and queues
 * for each N keep the runs independent. */
START_TEST(flow_ends)
{
    struct rig r;
    rig_open(&r);
    for (int i = 0; i < 3; i++) /* warm: pools and caches reach their size */
        ck_assert_int_eq(round_once(&r), 0);
    arm(-1, 1);
    int rc = round_once(&r);
    long m = arm(0, 0);
    ck_assert_msg(rc == 0, "a clean round: %d %s", rc, devq_errmsg());
    ck_assert_msg(m > 0, "a round made no allocation: the wrappers are not linked in");
    rig_close(&r);
    assert_none_live("flow_ends, nothing failing", 0, m, 0);
    for (long n = 1; n <= m; n++) {
        rig_open(&r);
        ck_assert_int_eq(round_once(&r), 0);
        arm(n, 1);
        rc = round_once(&r);
        arm(0, 0);
        ck_assert_msg(rc <= 0, "allocation %ld failing: a call returned %d", n, rc);
        rc = round_once(&r); /* may fail too: the queues keep a failure */
        rig_close(&r);       /* everything the device holds goes here */
        assert_none_live("flow_ends", n, m, rc);
    }
}
END_TEST

START_TEST(whole_program_sweep)
{
    for (int i = 0; i < 2; i++) /* warm: the trace buffer reaches its size */
        ck_assert_int_eq(whole_program(), 0);
    arm(-1, 1);
    int rc = whole_program();
    long m = arm(0, 0);
    ck_assert_msg(rc == 0, "the program, nothing failing: %d %s", rc, devq_errmsg());
    ck_assert_msg(m > 0, "the program made no allocation: the wrappers are not linked in");
    assert_none_live("whole_program, nothing failing", 0, m, 0);
    for (long n = 1; n <= m; n++) {
        arm(n, 1);
        rc = whole_program();
        arm(0, 0);
        assert_none_live("whole_program", n, m, rc);
    }
}
END_TEST

int main(void)
{
    /* The flow arrows exist only while tracing; the file (written at
     * exit, in the build folder) is not read.  DEVQ_TRACE_MAX 4096, the
     * least: the buffer's first allocation (64 KiB, lib/base/trace.c)
     * holds it, so the buffer never grows after the warm-up. */
    setenv("DEVQ_TRACE", "test_oom_leaks.trace.json", 1);
    setenv("DEVQ_TRACE_MAX", "4096", 1);
    Suite *s = suite_create("oom_leaks");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, flow_ends);
    tcase_add_test(tc, whole_program_sweep);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    return check_run_runner(sr);
}
