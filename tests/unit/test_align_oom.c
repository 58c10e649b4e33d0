/* SPDX-License-Identifier: MIT */
/* Allocation failure inside the tracker's cross-stream wait leaks
 * nothing (lib/queue/align.c; found by `make analyze`).  With DEVQ_TRACE
 * on, each inserted wait allocates the two ends of a flow arrow; when
 * the second allocation failed, the first was neither handed to a host
 * callback nor freed.
 *
 * The program is linked with -Wl,--wrap=malloc,--wrap=free: every
 * malloc and free of libdevq (linked statically here) passes through
 * the wrappers below, which can fail the Nth malloc and keep the set of
 * blocks allocated and not yet freed.  One round (queue a writes a
 * buffer, queue b reads it: the tracker makes b wait for a) is run with
 * its Nth malloc failing, for every N the round makes; after the round
 * and a clean one that drains it, every block the failing round
 * allocated must have been freed.  The trace buffer grows by realloc,
 * which is not wrapped, so it does not count as a leak.
 *
 * Under ASan the wrappers still see libdevq's calls (--wrap renames the
 * references at link time), so the test runs there too. */
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
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void __wrap_free(void *p);

static pthread_mutex_t wrap_lock = PTHREAD_MUTEX_INITIALIZER;
static long armed;   /* 0 off; > 0 fail the malloc numbered this; < 0 count only */
static long counted; /* mallocs seen since armed */
static int tracking; /* record the blocks allocated while set */
static void *live[MAX_LIVE];
static size_t live_size[MAX_LIVE];
static int nlive, overflow;

void *__wrap_malloc(size_t n)
{
    pthread_mutex_lock(&wrap_lock);
    if (armed && ++counted == armed) {
        pthread_mutex_unlock(&wrap_lock);
        errno = ENOMEM;
        return NULL;
    }
    void *p = __real_malloc(n);
    if (p && tracking) {
        if (nlive < MAX_LIVE) {
            live[nlive] = p;
            live_size[nlive++] = n;
        } else {
            overflow = 1;
        }
    }
    pthread_mutex_unlock(&wrap_lock);
    return p;
}

void __wrap_free(void *p)
{
    pthread_mutex_lock(&wrap_lock);
    for (int i = 0; p && i < nlive; i++)
        if (live[i] == p) {
            live[i] = live[--nlive];
            live_size[i] = live_size[nlive];
            break;
        }
    pthread_mutex_unlock(&wrap_lock);
    __real_free(p);
}

/* Arm (as above) and start recording; returns the count since the last arm. */
static long arm(long n, int track)
{
    pthread_mutex_lock(&wrap_lock);
    long was = counted;
    counted = 0;
    armed = n;
    if (track) {
        nlive = 0;
        overflow = 0;
    }
    tracking = track;
    pthread_mutex_unlock(&wrap_lock);
    return was;
}

struct rig {
    devq_device *dev;
    devq_queue *a, *b;
    devq_buffer *x, *y;
};

/* One round: a fills x, b copies x to y (the tracker makes b's stream
 * wait for a's), both finish.  Under a failing malloc any call may
 * refuse with a negative errno; what matters here is what it leaves.
 * Returns the first call's result that is not 0, else 0.  No Check
 * assertion in here: Check allocates, and its mallocs are wrapped too. */
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

/* A failing malloc may leave a queue failed: a new device and queues
 * for each N keep the runs independent. */
START_TEST(flow_ends_never_leak)
{
    struct rig r;
    rig_open(&r);
    for (int i = 0; i < 3; i++) /* warm: pools and caches reach their size */
        ck_assert_int_eq(round_once(&r), 0);
    arm(-1, 1);
    int rc = round_once(&r);
    long m = arm(0, 0); /* stop recording; frees still leave the set */
    ck_assert_msg(rc == 0, "a clean round: %d %s", rc, devq_errmsg());
    ck_assert_msg(m > 0, "a round made no malloc: the wrappers are not linked in");
    rig_close(&r);
    ck_assert_msg(nlive == 0 && !overflow, "a clean round kept %d blocks past the device's close", nlive);
    for (long n = 1; n <= m; n++) {
        rig_open(&r);
        ck_assert_int_eq(round_once(&r), 0);
        arm(n, 1);
        rc = round_once(&r);
        arm(0, 0);
        ck_assert_msg(rc <= 0, "malloc %ld failing: a call returned %d", n, rc);
        rc = round_once(&r); /* may fail too: the queues keep a failure */
        ck_assert_msg(rc <= 0, "the round after: %d", rc);
        rig_close(&r); /* everything the device holds goes here */
        ck_assert_msg(!overflow, "more than %d blocks live", MAX_LIVE);
        ck_assert_msg(nlive == 0,
                      "malloc %ld of %ld failing left %d block(s) allocated after the device closed, "
                      "the first %zu bytes",
                      n, m, nlive, nlive ? live_size[0] : (size_t)0);
    }
}
END_TEST

int main(void)
{
    /* The flow arrows exist only while tracing; the file (written at
     * exit, in the build folder) is not read. */
    setenv("DEVQ_TRACE", "test_align_oom.trace.json", 1);
    Suite *s = suite_create("align_oom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, flow_ends_never_leak);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    return check_run_runner(sr);
}
