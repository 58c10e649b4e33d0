/* SPDX-License-Identifier: MIT */
/* The straight line for one-shot batches (lib/queue/straight.c): taken
 * only when its conditions hold, and when one is broken the general
 * issue path runs, with the same results.  Which path issued a batch is
 * read from the device's count of straight batches (internal); what a
 * batch did is read back from the buffers and signals it touched.
 *
 * Conditions broken here: a buffer last written on another queue's
 * stream (the tracker must order it), a batch deferred earlier on the
 * same queue (it must wait its turn), a wait in the batch, tracing on
 * (in a child process: DEVQ_TRACE is read once).  And a failure: a
 * batch whose input failed earlier still takes the straight line (the
 * verdict is the end callback's), and its output and signal fail with
 * the root cause (DESIGN §5a). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devq/devq.h>
#include "queue.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

static uint64_t straight_count(devq_device *dev)
{
    struct devq_device *d = (struct devq_device *)dev;
    pthread_mutex_lock(&d->lock);
    uint64_t n = d->qs->straight;
    pthread_mutex_unlock(&d->lock);
    return n;
}

/* Read n bytes of b back through q and wait for them. */
static void read_back(devq_queue *q, devq_buffer *b, unsigned char *host, size_t n)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_queue_read(q, host, b, 0, n), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), 0);
    devq_signal_destroy(s);
}

/* Every byte is v (one assertion: a check per byte is slow under ASan). */
static void assert_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    size_t i = 0;
    while (i < n && p[i] == v)
        i++;
    ck_assert_msg(i == n, "byte %zu is %u, want %u", i, i < n ? p[i] : 0, v);
}

/* fill + signal on a queue whose buffer it alone uses: straight, and
 * the fill and the signal happened. */
START_TEST(one_shot_is_straight)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *s;
    unsigned char host[64];
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, sizeof host, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    uint64_t before = straight_count(dev);
    for (uint64_t i = 1; i <= 100; i++) {
        ck_assert_int_eq(devq_queue_fill(q, b, 0, sizeof host, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_signal(q, s, i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        ck_assert_int_eq(devq_signal_wait(s, i, 10 * SEC), 0);
    }
    ck_assert_uint_eq(straight_count(dev) - before, 100);
    read_back(q, b, host, sizeof host); /* a read, then a signal: straight too */
    assert_bytes(host, sizeof host, 100);
    ck_assert_uint_eq(straight_count(dev) - before, 101);
    ck_assert_int_eq(devq_signal_status(s), 0);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A buffer last written on q1's stream, used on q2: not straight (the
 * tracker orders it), and q2 sees q1's write.  Once q2 wrote it and
 * nothing of another stream read it since, q2's next batch is straight. */
START_TEST(cross_queue_buffer_takes_the_general_path)
{
    devq_device *dev;
    devq_queue *q1, *q2;
    devq_buffer *b;
    devq_signal *s1, *s2;
    enum { N = 1 << 16 };
    unsigned char *host = malloc(N);
    ck_assert_ptr_nonnull(host);
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, N, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &s1), 0);
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    for (int round = 1; round <= 20; round++) {
        uint64_t at = straight_count(dev);
        /* q1 writes (straight: its own last write, or none, and q2's
         * reads since are another stream's -- not after round 1). */
        ck_assert_int_eq(devq_queue_fill(q1, b, 0, N, (uint8_t)(0x30 + round)), 0);
        ck_assert_int_eq(devq_queue_signal(q1, s1, (uint64_t)round), 0);
        ck_assert_int_eq(devq_queue_submit(q1), 0);
        ck_assert_uint_eq(straight_count(dev) - at, round == 1 ? 1 : 0);
        /* q2 reads at once, no host wait between: ordered by the tracker. */
        at = straight_count(dev);
        ck_assert_int_eq(devq_queue_read(q2, host, b, 0, N), 0);
        ck_assert_int_eq(devq_queue_signal(q2, s2, (uint64_t)round), 0);
        ck_assert_int_eq(devq_queue_submit(q2), 0);
        ck_assert_uint_eq(straight_count(dev) - at, 0);
        ck_assert_int_eq(devq_signal_wait(s2, (uint64_t)round, 10 * SEC), 0);
        assert_bytes(host, N, (unsigned char)(0x30 + round));
    }
    /* q2 writes it (general: its last write is q1's), then again
     * (straight: its last write and the reads since are q2's own). */
    uint64_t at = straight_count(dev);
    ck_assert_int_eq(devq_queue_fill(q2, b, 0, N, 0x77), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_uint_eq(straight_count(dev) - at, 0);
    ck_assert_int_eq(devq_queue_fill(q2, b, 0, N, 0x78), 0);
    ck_assert_int_eq(devq_queue_submit(q2), 0);
    ck_assert_uint_eq(straight_count(dev) - at, 1);
    read_back(q2, b, host, N);
    assert_bytes(host, N, 0x78);
    ck_assert_int_eq(devq_queue_finish(q1, 10 * SEC), 0);
    devq_signal_destroy(s1);
    devq_signal_destroy(s2);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
    free(host);
}
END_TEST

/* A batch deferred on q (it waits for a host value): the one-shot batch
 * after it queues behind it (general path), and runs after it. */
START_TEST(behind_a_deferred_batch_takes_the_general_path)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *gate, *s;
    unsigned char host[256];
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, sizeof host, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    uint64_t at = straight_count(dev);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0); /* a wait: never straight */
    ck_assert_int_eq(devq_queue_fill(q, b, 0, sizeof host, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_fill(q, b, 0, sizeof host, 2), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_uint_eq(straight_count(dev) - at, 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 50 * 1000000ull), -ETIMEDOUT); /* still behind the gate */
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), 0);
    read_back(q, b, host, sizeof host);
    assert_bytes(host, sizeof host, 2); /* in submission order */
    devq_signal_destroy(gate);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* The input failed earlier (a batch whose wait failed skipped its fill):
 * a copy from it goes out straight, and the end callback fails its
 * destination and its signal with the root cause. */
START_TEST(failed_input_fails_the_straight_batch)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *a, *b;
    devq_signal *gate, *s;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &a), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(q, a, 0, 64, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    uint64_t at = straight_count(dev);
    ck_assert_int_eq(devq_queue_copy(q, b, 0, a, 0, 64), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_uint_eq(straight_count(dev) - at, 1);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    ck_assert_int_eq(devq_buffer_status(a), -EIO);
    ck_assert_int_eq(devq_buffer_status(b), -EIO);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "which failed")); /* the root: the failed wait */
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EIO);
    devq_signal_destroy(gate);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_buffer_free(a, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* The child of tracing_takes_the_general_path, run as this program
 * again (exec: DEVQ_TRACE is read once per process, and a forked child
 * would inherit the parent's answer): exit 0 when a fill batch went
 * out, but not straight. */
static int trace_child(void)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *s;
    if (devq_device_open("cpu", &dev) || devq_queue_create(dev, NULL, &q) ||
        devq_buffer_alloc(dev, 64, NULL, 0, &b) || devq_signal_create(0, &s))
        return 2;
    uint64_t at = straight_count(dev);
    int ok = devq_queue_fill(q, b, 0, 64, 9) == 0 && devq_queue_signal(q, s, 1) == 0 &&
             devq_queue_submit(q) == 0 && devq_signal_wait(s, 1, 10 * SEC) == 0;
    ok = ok && straight_count(dev) == at;
    devq_signal_destroy(s);
    devq_buffer_free(b, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
    return ok ? 0 : 3; /* returned from main: the trace is written at exit */
}

/* DEVQ_TRACE on: every batch takes the general path, which marks its
 * ops, and the trace has the fill's slice. */
START_TEST(tracing_takes_the_general_path)
{
    char path[] = "/tmp/devq-test-straight-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("DEVQ_TRACE", path, 1);
        setenv("TEST_STRAIGHT_TRACE_CHILD", "1", 1);
        execl("/proc/self/exe", "test_straight", (char *)NULL);
        _exit(4);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    ck_assert_ptr_nonnull(strstr(text, "\"fill\""));
}
END_TEST

static Suite *straight_suite(void)
{
    Suite *s = suite_create("straight");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_shot_is_straight);
    tcase_add_test(tc, cross_queue_buffer_takes_the_general_path);
    tcase_add_test(tc, behind_a_deferred_batch_takes_the_general_path);
    tcase_add_test(tc, failed_input_fails_the_straight_batch);
    tcase_add_test(tc, tracing_takes_the_general_path);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (getenv("TEST_STRAIGHT_TRACE_CHILD"))
        return trace_child();
    return check_run(straight_suite());
}
