/* SPDX-License-Identifier: MIT */
/* A process-shared signal's page written wrongly by a process sharing it
 * (lib/signal_page.c): every field scribbled in turn, random bytes,
 * all-ones and all-zeros pages, values going down, a child scribbling
 * while this process waits; and a peer that plays by the rules, which
 * must never be called corruption.  The "peer" here is a second mapping
 * of the exported fd (or a forked child), written with plain stores, as
 * another process would. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>
#include "signal_impl.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define CORRUPT "was corrupted by a process sharing it ("

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* The peer's view: the exported fd mapped again. */
static struct devq_timeline *peer_map(devq_signal *s)
{
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
    void *p = mmap(NULL, DEVQ_SHARED_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ck_assert_ptr_ne(p, MAP_FAILED);
    return p;
}

static void peer_unmap(struct devq_timeline *p)
{
    munmap(p, DEVQ_SHARED_MAP_SIZE);
}

static void put32(struct devq_timeline *p, size_t off, uint32_t v)
{
    memcpy((char *)p + off, &v, sizeof v);
}

static void put64(struct devq_timeline *p, size_t off, uint64_t v)
{
    memcpy((char *)p + off, &v, sizeof v);
}

static void assert_printable(const char *m)
{
    size_t n = strnlen(m, 512);
    ck_assert_uint_lt(n, 512);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(m[i] >= 0x20 && m[i] < 0x7f, "byte %zu of \"%s\" is 0x%02x", i, m, (unsigned char)m[i]);
}

static int is_errno(int r)
{
    return r == 0 || (r < 0 && r >= -4095);
}

/* r must be the corruption, named, with `what` in the parentheses. */
static void assert_corrupt(int r, devq_signal *s, const char *what, const char *call)
{
    ck_assert_msg(r == -EBADMSG, "%s returned %d (%s), not -EBADMSG", call, r, devq_errmsg());
    char head[96];
    snprintf(head, sizeof head, "shared signal #");
    const char *m = devq_errmsg();
    ck_assert_msg(strstr(m, head) && strstr(m, CORRUPT), "%s: message \"%s\"", call, m);
    if (what)
        ck_assert_msg(strstr(m, what), "%s: \"%s\" does not say \"%s\"", call, m, what);
    assert_printable(m);
    (void)s;
}

static void cb_status(void *arg, int status)
{
    *(_Atomic int *)arg = status ? status : 1;
}

/* Every call on a corrupted signal says so; value never goes down. */
static void assert_all_corrupt(devq_signal *s, const char *what, uint64_t floor)
{
    assert_corrupt(devq_signal_status(s), s, what, "status");
    assert_corrupt(devq_signal_set(s, devq_signal_value(s) + 1), s, what, "set");
    assert_corrupt(devq_signal_wait(s, 0, 0), s, what, "wait(0, poll)");
    assert_corrupt(devq_signal_wait(s, UINT64_MAX, 5 * MS), s, what, "wait(max, 5 ms)");
    devq_signal *v[1] = { s };
    uint64_t want[1] = { 0 };
    assert_corrupt(devq_signal_wait_many(v, want, 1, DEVQ_WAIT_ANY, 0, NULL), s, what, "wait_many");
    assert_corrupt(devq_signal_fail(s, -EIO), s, what, "fail");
    _Atomic int got = 0;
    assert_corrupt(devq_signal_notify(s, 1, cb_status, (void *)&got, NULL), s, what, "notify");
    int fd = 77;
    assert_corrupt(devq_signal_wait_fd(s, 1, &fd), s, what, "wait_fd");
    ck_assert_int_eq(fd, -1);
    assert_corrupt(devq_signal_export_fd(s, &fd), s, what, "export_fd");
    ck_assert_int_eq(fd, -1);
    ck_assert_uint_ge(devq_signal_value(s), floor);
}

/* One way of writing the page wrong. */
struct scribble {
    const char *name;
    int prep; /* 0 none; 1 set 10 and read it; 2 fail -EPIPE and read it */
    size_t off;
    int size; /* 4 or 8 */
    uint64_t value;
    const char *what; /* expected in the message */
};

#define OFF(f) offsetof(struct devq_timeline, f)

static const struct scribble scribbles[] = {
    { "magic", 0, OFF(magic), 4, 0x41414141, "header changed to magic 0x41414141" },
    { "version", 0, OFF(version), 4, DEVQ_TIMELINE_VERSION + 1, "version 3" },
    { "status positive", 0, OFF(status), 4, 1711276032, "status word 1711276032 is not" },
    { "status below errno", 0, OFF(status), 4, (uint32_t)-4096, "status word -4096" },
    { "status without fail state", 0, OFF(status), 4, (uint32_t)-5, "fail state says not failed" },
    { "fail state 3", 0, OFF(fail_state), 4, 3, "fail state word 3 is not one of" },
    { "fail state all-ones", 0, OFF(fail_state), 4, UINT32_MAX, "fail state word 4294967295" },
    { "fail state done, no status", 0, OFF(fail_state), 4, FAIL_DONE,
      "says failed but the status word is 0" },
    { "value down", 1, OFF(value), 8, 3, "value went down from 10 to 3" },
    { "value to zero", 1, OFF(value), 8, 0, "value went down from 10 to 0" },
    { "status changed", 2, OFF(status), 4, (uint32_t)-EINVAL, "changed from -32 to -22" },
    { "failure cleared", 2, OFF(status), 4, 0, "changed from -32 to 0" },
    { "fail state back to none", 2, OFF(fail_state), 4, FAIL_NONE,
      "status word -32 but the fail state says not failed" },
};

START_TEST(every_field)
{
    const struct scribble *c = &scribbles[_i];
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    struct devq_timeline *p = peer_map(s);
    uint64_t floor = 0;
    if (c->prep == 1) {
        ck_assert_int_eq(devq_signal_set(s, 10), 0);
        floor = 10;
    } else if (c->prep == 2) {
        ck_assert_int_eq(devq_signal_fail(s, -EPIPE), 0);
        ck_assert_int_eq(devq_signal_status(s), -EPIPE);
    }
    struct devq_timeline saved;
    memcpy(&saved, p, sizeof saved);
    if (c->size == 8)
        put64(p, c->off, c->value);
    else
        put32(p, c->off, (uint32_t)c->value);
    assert_all_corrupt(s, c->what, floor);
    /* Sticky: putting the page back does not make it trusted again. */
    memcpy(p, &saved, sizeof saved);
    assert_all_corrupt(s, c->what, floor);
    peer_unmap(p);
    devq_signal_destroy(s);
}
END_TEST

START_TEST(whole_page_all_ones_all_zeros)
{
    for (int ones = 0; ones < 2; ones++) {
        devq_signal *s;
        ck_assert_int_eq(devq_signal_create_shared(5, &s), 0);
        int fd;
        ck_assert_int_eq(devq_signal_export_fd(s, &fd), 0);
        struct devq_timeline *p = peer_map(s);
        memset(p, ones ? 0xff : 0, DEVQ_SHARED_MAP_SIZE);
        assert_all_corrupt(s, ones ? "magic 0xffffffff" : "magic 0x00000000", 5);
        /* Imported now, the page is refused as not a devq signal at all. */
        devq_signal *b = NULL;
        ck_assert_int_eq(devq_signal_import_fd(fd, &b), -EINVAL);
        ck_assert_ptr_null(b);
        ck_assert_ptr_nonnull(strstr(devq_errmsg(), "magic"));
        assert_printable(devq_errmsg());
        close(fd);
        peer_unmap(p);
        devq_signal_destroy(s);
    }
}
END_TEST

START_TEST(import_of_corrupted_page)
{
    devq_signal *a, *b = NULL;
    ck_assert_int_eq(devq_signal_create_shared(0, &a), 0);
    struct devq_timeline *p = peer_map(a);
    int fd;
    ck_assert_int_eq(devq_signal_export_fd(a, &fd), 0);
    put32(p, OFF(status), 1711276032);
    ck_assert_int_eq(devq_signal_import_fd(fd, &b), -EBADMSG);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "status word 1711276032"));
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), CORRUPT));
    close(fd);
    peer_unmap(p);
    devq_signal_destroy(a);
}
END_TEST

/* Random bytes over random fields, between calls: whatever the page
 * holds, every call returns 0 or a negative errno, every message is
 * printable, the value never goes down and nothing hangs. */
START_TEST(random_bytes)
{
    const char *env = getenv("CORRUPT_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL);
    printf("random_bytes: CORRUPT_SEED=%u\n", seed);
    srand(seed);
    int corrupted = 0;
    for (int round = 0; round < 300; round++) {
        devq_signal *s;
        ck_assert_int_eq(devq_signal_create_shared((uint64_t)(rand() % 4), &s), 0);
        struct devq_timeline *p = peer_map(s);
        uint64_t last = devq_signal_value(s);
        int said = 0;
        for (int step = 0; step < 12; step++) {
            int n = 1 + rand() % 8;
            for (int k = 0; k < n; k++)
                ((unsigned char *)p)[rand() % sizeof *p] = (unsigned char)rand();
            int r;
            switch (rand() % 7) {
            case 0:
                r = devq_signal_status(s);
                break;
            case 1:
                r = devq_signal_set(s, devq_signal_value(s) + 1);
                break;
            case 2:
                r = devq_signal_wait(s, (uint64_t)rand(), 0);
                break;
            case 3:
                r = devq_signal_wait(s, devq_signal_value(s) + 1, 1 * MS);
                break;
            case 4:
                r = devq_signal_fail(s, -EIO);
                break;
            case 5: {
                devq_signal *v[1] = { s };
                uint64_t w[1] = { (uint64_t)rand() };
                r = devq_signal_wait_many(v, w, 1, DEVQ_WAIT_ALL, 0, NULL);
                break;
            }
            default: {
                int fd = -1;
                r = devq_signal_wait_fd(s, (uint64_t)rand(), &fd);
                if (!r)
                    close(fd);
            }
            }
            ck_assert_msg(is_errno(r), "seed %u round %d: returned %d", seed, round, r);
            if (r) {
                assert_printable(devq_errmsg());
                if (strstr(devq_errmsg(), CORRUPT))
                    said = 1;
                else
                    ck_assert_msg(!said, "seed %u round %d: %d (%s) after corruption", seed, round, r,
                                  devq_errmsg());
            } else {
                ck_assert_msg(!said, "seed %u round %d: 0 after corruption", seed, round);
            }
            uint64_t v = devq_signal_value(s);
            ck_assert_uint_ge(v, last);
            last = v;
        }
        corrupted += said;
        peer_unmap(p);
        devq_signal_destroy(s);
    }
    ck_assert_int_gt(corrupted, 100); /* the random pages were mostly caught */
}
END_TEST

/* The peer may change seq and waiters as it likes (they are futex
 * bookkeeping): that costs wake-ups, never a wrong answer or corruption,
 * and a waiter whose wake was skipped still sees its value. */
START_TEST(seq_and_waiters_are_not_corruption)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    struct devq_timeline *p = peer_map(s);
    put32(p, OFF(seq), 0xdeadbeef);
    put32(p, OFF(waiters), UINT32_MAX);
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 0), 0);
    ck_assert_int_eq(devq_signal_status(s), 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* Raise the value the way a set would, but zero the waiter count
         * first so no wake is made: the parent must find it by itself. */
        struct timespec ts = { 0, 50 * 1000000 };
        nanosleep(&ts, NULL);
        put32(p, OFF(waiters), 0);
        atomic_store(&p->value, 2);
        _exit(0);
    }
    uint64_t t0 = now_ns();
    ck_assert_msg(devq_signal_wait(s, 2, 10 * SEC) == 0, "%s", devq_errmsg());
    ck_assert_uint_lt(now_ns() - t0, 5 * SEC);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    peer_unmap(p);
    devq_signal_destroy(s);
}
END_TEST

/* A peer playing by the rules: raising values (also in big jumps, also
 * to UINT64_MAX), failing once with any errno and any cause bytes.  It is
 * sharing, not corruption; the cause reaches devq_errmsg() printable. */
START_TEST(honest_peer_is_not_corruption)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    struct devq_timeline *p = peer_map(s);
    pid_t pid = fork();
    if (pid == 0) {
        for (uint64_t v = 1; v <= 20000; v += 1 + v % 7) {
            uint64_t cur = atomic_load(&p->value);
            while (cur < v && !atomic_compare_exchange_weak(&p->value, &cur, v))
                ;
            atomic_fetch_add(&p->seq, 1);
            syscall(SYS_futex, &p->seq, FUTEX_WAKE_BITSET, INT32_MAX, NULL, NULL, UINT32_MAX);
        }
        atomic_store(&p->value, UINT64_MAX - 1);
        /* Fail by the rules, with a cause no terminal should see. */
        uint32_t none = FAIL_NONE;
        if (!atomic_compare_exchange_strong(&p->fail_state, &none, FAIL_WRITING))
            _exit(2);
        memset(p->cause, 0, sizeof p->cause);
        snprintf(p->cause, sizeof p->cause, "peer: \x1b]0;owned\x07\x1b[2J\nfake line\r\xff");
        atomic_store(&p->status, -ENOLINK);
        atomic_store(&p->fail_state, FAIL_DONE);
        atomic_fetch_add(&p->seq, 1);
        syscall(SYS_futex, &p->seq, FUTEX_WAKE_BITSET, INT32_MAX, NULL, NULL, UINT32_MAX);
        _exit(0);
    }
    uint64_t last = 0;
    int r;
    while ((r = devq_signal_wait(s, last + 1, 10 * SEC)) == 0) {
        uint64_t v = devq_signal_value(s);
        ck_assert_uint_gt(v, last);
        last = v;
        int st = devq_signal_status(s); /* the peer may have failed it by now */
        ck_assert_msg(st == 0 || st == -ENOLINK, "%d: %s", st, devq_errmsg());
    }
    ck_assert_msg(r == -ENOLINK, "%d: %s", r, devq_errmsg());
    const char *m = devq_errmsg();
    assert_printable(m);
    ck_assert_ptr_null(strstr(m, "corrupted"));
    ck_assert_ptr_nonnull(strstr(m, "peer: ?]0;owned??[2J?fake line??"));
    ck_assert_int_eq(devq_signal_status(s), -ENOLINK);
    ck_assert_int_eq(devq_signal_set(s, UINT64_MAX), -ENOLINK);
    ck_assert_uint_eq(devq_signal_value(s), UINT64_MAX - 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    peer_unmap(p);
    devq_signal_destroy(s);
}
END_TEST

/* A cause with no terminator in its field, from a peer that otherwise
 * failed by the rules: bounded by the field, terminated, printable. */
START_TEST(cause_without_terminator)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    struct devq_timeline *p = peer_map(s);
    atomic_store(&p->fail_state, FAIL_WRITING);
    memset(p->cause, 0x9b, sizeof p->cause); /* CSI, 8-bit form */
    atomic_store(&p->status, -EIO);
    atomic_store(&p->fail_state, FAIL_DONE);
    ck_assert_int_eq(devq_signal_wait(s, 1, 0), -EIO);
    const char *m = devq_errmsg();
    assert_printable(m);
    ck_assert_uint_eq(strlen(m), sizeof p->cause);
    peer_unmap(p);
    devq_signal_destroy(s);
}
END_TEST

struct waiter {
    devq_signal *s;
    int many;
    int result;
    uint64_t took;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    uint64_t t0 = now_ns();
    if (w->many) {
        devq_signal *v[1] = { w->s };
        uint64_t want[1] = { 100 };
        w->result = devq_signal_wait_many(v, want, 1, DEVQ_WAIT_ALL, DEVQ_TIMEOUT_INFINITE, NULL);
    } else {
        w->result = devq_signal_wait(w->s, 100, DEVQ_TIMEOUT_INFINITE);
    }
    w->took = now_ns() - t0;
    return NULL;
}

/* A child writes garbage into the status while this process waits with
 * no timeout in three threads, a notify and a wait_fd: nobody wakes them
 * but their own re-check, and they all get the corruption. */
START_TEST(child_scribbles_while_parent_waits)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    _Atomic int got = 0;
    ck_assert_int_eq(devq_signal_notify(s, 100, cb_status, (void *)&got, NULL), 0);
    int efd;
    ck_assert_int_eq(devq_signal_wait_fd(s, 100, &efd), 0);
    struct waiter w[2] = { { s, 0, 1, 0 }, { s, 1, 1, 0 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, wait_thread, &w[i]);
    struct devq_timeline *p = peer_map(s);
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec ts = { 0, 100 * 1000000 };
        nanosleep(&ts, NULL);
        put32(p, OFF(status), 12345); /* plain store, no wake */
        _exit(0);
    }
    int r = devq_signal_wait(s, 100, DEVQ_TIMEOUT_INFINITE);
    assert_corrupt(r, s, "status word 12345", "main wait");
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].result == -EBADMSG, "waiter %d got %d", i, w[i].result);
        ck_assert_uint_lt(w[i].took, 5 * SEC);
    }
    uint64_t t0 = now_ns();
    while (!atomic_load(&got) && now_ns() - t0 < 5 * SEC)
        usleep(1000);
    ck_assert_int_eq(atomic_load(&got), -EBADMSG);
    struct pollfd pf = { .fd = efd, .events = POLLIN };
    ck_assert_int_eq(poll(&pf, 1, 5000), 1);
    close(efd);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    peer_unmap(p);
    devq_signal_destroy(s);
}
END_TEST

/* A queue batch waiting on a shared signal that gets corrupted fails,
 * and the signal it would have signalled carries the corruption as its
 * cause. */
START_TEST(queue_wait_on_corrupted_signal)
{
    devq_device *dev;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    devq_signal *s, *done;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_wait(q, s, 5), 0);
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    struct devq_timeline *p = peer_map(s);
    put32(p, OFF(fail_state), 9);
    int r = devq_signal_wait(done, 1, 10 * SEC);
    ck_assert_msg(r == -EBADMSG, "%d: %s", r, devq_errmsg());
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "fail state word 9"));
    assert_printable(devq_errmsg());
    devq_queue_finish(q, 10 * SEC);
    devq_queue_destroy(q);
    peer_unmap(p);
    devq_signal_destroy(s);
    devq_signal_destroy(done);
    devq_device_close(dev);
}
END_TEST

START_TEST(fail_takes_only_errnos)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create_shared(0, &s), 0);
    ck_assert_int_eq(devq_signal_fail(s, -4096), -EINVAL);
    ck_assert_int_eq(devq_signal_fail(s, INT32_MIN), -EINVAL);
    ck_assert_int_eq(devq_signal_status(s), 0);
    ck_assert_int_eq(devq_signal_fail(s, -4095), 0);
    ck_assert_int_eq(devq_signal_status(s), -4095);
    devq_signal_destroy(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("signal_corrupt");
    TCase *tc = tcase_create("corrupt");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, every_field, 0, (int)(sizeof scribbles / sizeof scribbles[0]));
    tcase_add_test(tc, whole_page_all_ones_all_zeros);
    tcase_add_test(tc, import_of_corrupted_page);
    tcase_add_test(tc, random_bytes);
    tcase_add_test(tc, seq_and_waiters_are_not_corruption);
    tcase_add_test(tc, honest_peer_is_not_corruption);
    tcase_add_test(tc, cause_without_terminator);
    tcase_add_test(tc, child_scribbles_while_parent_waits);
    tcase_add_test(tc, queue_wait_on_corrupted_signal);
    tcase_add_test(tc, fail_takes_only_errnos);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
