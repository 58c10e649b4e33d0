/* SPDX-License-Identifier: MIT */
/* API misuse table: every public function of devq.h, devq_resource.h and devq_cpu.h
 * called with bad arguments -- NULL handles and out-pointers, garbage
 * and destroyed handles (where the memory stays valid), offsets whose
 * sum with the size wraps size_t, buffers and kernels of another device,
 * zero sizes, invalid enums, polls of values nobody reached.  Each call
 * must return the documented negative errno (or NULL/0 for getters),
 * never crash, and leave devq_errmsg() non-empty and naming the function
 * or the argument.
 *
 * The table is checked against the headers at run time: every name
 * matching devq_[a-z0-9_]+\( in include/devq/devq.h, devq_resource.h and devq_cpu.h
 * must have a row, so a new public function without a misuse row fails
 * this test.
 *
 * Two cpu devices (DEVQ_CPU_DEVICES=2, set before the first devq call)
 * give "another device" for cross-device misuse. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <regex.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include <devq/devq_resource.h>
#include "../helpers/check_main.h"

/* LeakSanitizer of clang <= 16 (CI's clang 14) can crash at exit
 * ("Tracer caught signal 11") in this test's forked children, and it is
 * not about devq's threads: with the hip plugin loaded over an installed
 * ROCm, libstdc++ is dlopened, and its static destructor
 * (ios_base::Init::~Init, an exit handler that runs before LSan's) first
 * touches its thread-local data on the main thread, which allocates a
 * dynamic TLS block.  LSan's __tls_get_addr interceptor takes a block at
 * 16 bytes past a page boundary for a pre-2.25 glibc one and reads its
 * bounds from the 16 bytes before it: a garbage range whose scan crashes.
 * Where malloc puts that block depends on each child's heap, so the same
 * rows crash in every run.  Skipping the interception (LLVM 17 fixed the
 * heuristic) leaves only dynamic TLS unscanned, which holds no devq
 * memory.  See HACKING.md. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}

/* A cpu kernel found by name in this process (linked -export-dynamic). */
int misuse_kernel(void *const *args, const devq_cpu_group *g);
int misuse_kernel(void *const *args, const devq_cpu_group *g)
{
    return 0;
}

/* Memory that is not any devq object: its first word, where every devq
 * handle keeps its magic, is garbage.  Reading it is valid (no ASan
 * report in the test); a library that trusted it would crash or corrupt. */
static _Alignas(64) unsigned char garbage[4096];

static devq_device *dev0, *dev1;
static devq_queue *q0, *q1;
static devq_buffer *b0, *b1; /* 256 bytes each, on dev0 / dev1 */
static devq_signal *sig;
static devq_kernel *k0; /* on dev0 */
static sem_t notified;  /* posted by count_status */

#define BUF_BYTES 256

static void setup(void)
{
    memset(garbage, 0xa5, sizeof garbage);
    ck_assert_int_eq(sem_init(&notified, 0, 0), 0);
    ck_assert_int_eq(devq_device_open("cpu:0", &dev0), 0);
    ck_assert_int_eq(devq_device_open("cpu:1", &dev1), 0);
    ck_assert_ptr_ne(dev0, dev1);
    ck_assert_int_eq(devq_queue_create(dev0, NULL, &q0), 0);
    ck_assert_int_eq(devq_queue_create(dev1, NULL, &q1), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev0, BUF_BYTES, NULL, 1, &b0), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev1, BUF_BYTES, NULL, 1, &b1), 0);
    ck_assert_int_eq(devq_signal_create(0, &sig), 0);
    ck_assert_int_eq(devq_kernel_load(dev0, NULL, 0, "misuse_kernel", &k0), 0);
}

static void teardown(void)
{
    devq_kernel_destroy(k0);
    devq_signal_destroy(sig);
    ck_assert_int_eq(devq_buffer_free(b0, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(b1, NULL), 0);
    devq_queue_destroy(q0);
    devq_queue_destroy(q1);
    devq_device_close(dev0);
    devq_device_close(dev1);
}

/* ---- assertions ---- */

/* Calls on the sentinel leave this message; a misuse call must replace
 * it, so a stale message from an earlier failure never passes. */
#define SENTINEL_CAP 1
static void reset_errmsg(void)
{
    ck_assert_int_eq(devq_backends_report(NULL, SENTINEL_CAP, NULL), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "cap is 1"));
}

static void check_msg(const char *needle, const char *what, int line)
{
    const char *m = devq_errmsg();
    ck_assert_msg(m != NULL && m[0] != '\0', "line %d: %s: devq_errmsg() is empty", line, what);
    ck_assert_msg(strstr(m, "but cap is 1") == NULL || strstr(what, "devq_backends_report"),
                  "line %d: %s: devq_errmsg() was not set (still '%s')", line, what, m);
    ck_assert_msg(strstr(m, needle) != NULL, "line %d: %s: devq_errmsg() '%s' does not name '%s'", line, what,
                  m, needle);
}

static void expect_err_(long r, long want, const char *needle, const char *what, int line)
{
    ck_assert_msg(r == want, "line %d: %s returned %ld, want %ld (devq_errmsg: %s)", line, what, r, want,
                  devq_errmsg());
    check_msg(needle, what, line);
}

/* call must return err and name needle in devq_errmsg(). */
#define EXPECT_ERR(call, err, needle)                                      \
    do {                                                                   \
        reset_errmsg();                                                    \
        expect_err_((long)(call), (long)(err), (needle), #call, __LINE__); \
    } while (0)

/* A recording call: the error is also kept sticky, so submit returns it
 * (naming the cause) and discards the batch; the queue is clean after. */
#define EXPECT_REC_ERR(q, call, err, needle)                                                          \
    do {                                                                                              \
        EXPECT_ERR(call, err, needle);                                                                \
        reset_errmsg();                                                                               \
        expect_err_(devq_queue_submit(q), (err), "batch discarded", "devq_queue_submit after " #call, \
                    __LINE__);                                                                        \
        check_msg(needle, "sticky error of " #call, __LINE__);                                        \
        /* finish reports the discard once, then the queue is clear */                                \
        expect_err_(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), (err), "batch discarded",            \
                    "devq_queue_finish after the discard of " #call, __LINE__);                       \
        ck_assert_int_eq(devq_queue_submit(q), 0);                                                    \
    } while (0)

/* A getter on a bad handle: returns `bad` (NULL or 0), no crash. */
#define EXPECT_VAL(call, bad) \
    ck_assert_msg((call) == (bad), "line %d: %s did not return %s", __LINE__, #call, #bad)

#define G(type) ((type *)(void *)garbage)

/* ---- rows ---- */

static void t_errmsg_version(void)
{
    reset_errmsg();
    ck_assert_ptr_nonnull(devq_errmsg());
    ck_assert_ptr_nonnull(devq_version());
    ck_assert_str_ne(devq_version(), "");
}

static void t_device_open(void)
{
    devq_device *d = (devq_device *)garbage;
    EXPECT_ERR(devq_device_open("cpu:0", NULL), -EINVAL, "out");
    EXPECT_ERR(devq_device_open("", &d), -EINVAL, "devq_device_open");
    ck_assert_ptr_null(d); /* *out cleared on failure */
    EXPECT_ERR(devq_device_open("cpu:", &d), -EINVAL, "ordinal");
    EXPECT_ERR(devq_device_open("cpu:x", &d), -EINVAL, "ordinal");
    EXPECT_ERR(devq_device_open("cpu:99999999999", &d), -EINVAL, "too large");
    EXPECT_ERR(devq_device_open("CPU", &d), -EINVAL, "devq_device_open");
    EXPECT_ERR(devq_device_open("cpu:2", &d), -ENODEV, "cpu");
    EXPECT_ERR(devq_device_open("nosuchbackend", &d), -ENODEV, "nosuchbackend");
    ck_assert_ptr_null(d);
}

static void t_device_close(void)
{
    devq_device_close(NULL); /* no-op, like free(NULL) */
    reset_errmsg();
    devq_device_close(G(devq_device));
    check_msg("devq_device_close", "devq_device_close(garbage)", __LINE__);
    /* A closed device is freed at once when its last reference goes, so
     * "closed" is only testable while another reference keeps it: */
    devq_device *again;
    ck_assert_int_eq(devq_device_open("cpu:0", &again), 0);
    ck_assert_ptr_eq(again, dev0);
    devq_device_close(again);
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev0, &info), 0); /* still open once */
}

static void t_device_info_get(void)
{
    devq_device_info info;
    EXPECT_ERR(devq_device_info_get(NULL, &info), -EINVAL, "devq_device_info_get");
    EXPECT_ERR(devq_device_info_get(G(devq_device), &info), -EINVAL, "devq_device_info_get");
    EXPECT_ERR(devq_device_info_get(dev0, NULL), -EINVAL, "info");
}

static void t_device_synchronize(void)
{
    EXPECT_ERR(devq_device_synchronize(NULL, 0), -EINVAL, "devq_device_synchronize");
    EXPECT_ERR(devq_device_synchronize(G(devq_device), 0), -EINVAL, "devq_device_synchronize");
    /* A poll of a device whose queue waits on a value nobody reached. */
    devq_signal *gate;
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_queue_wait(q0, gate, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q0), 0);
    EXPECT_ERR(devq_device_synchronize(dev0, 0), -ETIMEDOUT, "devq_device_synchronize");
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_device_synchronize(dev0, DEVQ_TIMEOUT_INFINITE), 0);
    devq_signal_destroy(gate);
}

static void t_backends_report(void)
{
    size_t n = 0;
    EXPECT_ERR(devq_backends_report(NULL, 7, &n), -EINVAL, "cap is 7");
    ck_assert_int_eq(devq_backends_report(NULL, 0, NULL), 0); /* counting needs no n */
    ck_assert_int_eq(devq_backends_report(NULL, 0, &n), 0);
    ck_assert_uint_ge(n, 1);
}

static void t_signal_create(void)
{
    EXPECT_ERR(devq_signal_create(0, NULL), -EINVAL, "devq_signal_create");
}

/* A notify callback that records its status and wakes the test. */
static void count_status(void *arg, int status)
{
    int *out = arg;
    *out = status;
    sem_post(&notified);
}

static void t_signal_destroy(void)
{
    devq_signal_destroy(NULL);
    devq_signal_destroy(G(devq_signal));
    /* A destroyed signal stays in memory while a recorded op holds it:
     * then every call on it must say it was destroyed. */
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_queue_wait(q0, s, 0), 0); /* the batch keeps s alive */
    devq_signal_destroy(s);
    EXPECT_ERR(devq_signal_set(s, 5), -EINVAL, "destroyed");
    EXPECT_ERR(devq_signal_fail(s, -EIO), -EINVAL, "destroyed");
    EXPECT_ERR(devq_signal_status(s), -EINVAL, "destroyed");
    EXPECT_ERR(devq_signal_wait(s, 0, 0), -EINVAL, "destroyed");
    int fd = -1;
    EXPECT_ERR(devq_signal_wait_fd(s, 1, &fd), -EINVAL, "destroyed");
    EXPECT_ERR(devq_signal_notify(s, 1, count_status, NULL, NULL), -EINVAL, "destroyed");
    EXPECT_REC_ERR(q0, devq_queue_signal(q0, s, 1), -EINVAL, "destroyed");
    /* EXPECT_REC_ERR's submit discarded the batch holding s: gone now. */
}

static void t_signal_value(void)
{
    EXPECT_VAL(devq_signal_value(NULL), 0);
    EXPECT_VAL(devq_signal_value(G(devq_signal)), 0);
}

static void t_signal_set(void)
{
    EXPECT_ERR(devq_signal_set(NULL, 1), -EINVAL, "devq_signal_set");
    EXPECT_ERR(devq_signal_set(G(devq_signal), 1), -EINVAL, "devq_signal_set");
    ck_assert_int_eq(devq_signal_set(sig, 10), 0);
    EXPECT_ERR(devq_signal_set(sig, 10), -EINVAL, "devq_signal_set"); /* not above */
    EXPECT_ERR(devq_signal_set(sig, 3), -EINVAL, "devq_signal_set");
    ck_assert_uint_eq(devq_signal_value(sig), 10);
}

static void t_signal_fail(void)
{
    EXPECT_ERR(devq_signal_fail(NULL, -EIO), -EINVAL, "devq_signal_fail");
    EXPECT_ERR(devq_signal_fail(G(devq_signal), -EIO), -EINVAL, "devq_signal_fail");
    EXPECT_ERR(devq_signal_fail(sig, 0), -EINVAL, "devq_signal_fail");
    EXPECT_ERR(devq_signal_fail(sig, EIO), -EINVAL, "devq_signal_fail");
    ck_assert_int_eq(devq_signal_status(sig), 0); /* refused: not failed */
}

static void t_signal_status(void)
{
    EXPECT_ERR(devq_signal_status(NULL), -EINVAL, "devq_signal_status");
    EXPECT_ERR(devq_signal_status(G(devq_signal)), -EINVAL, "devq_signal_status");
}

static void t_signal_wait(void)
{
    EXPECT_ERR(devq_signal_wait(NULL, 1, 0), -EINVAL, "devq_signal_wait");
    EXPECT_ERR(devq_signal_wait(G(devq_signal), 1, 0), -EINVAL, "devq_signal_wait");
    /* Timeouts name the signal (the argument), not the function. */
    EXPECT_ERR(devq_signal_wait(sig, 1, 0), -ETIMEDOUT, "signal #");
    EXPECT_ERR(devq_signal_wait(sig, UINT64_MAX, 1000), -ETIMEDOUT, "signal #");
}

static void t_signal_wait_many(void)
{
    devq_signal *list[2] = { sig, NULL };
    uint64_t vals[2] = { 1, 1 };
    size_t first = 99;
    EXPECT_ERR(devq_signal_wait_many(NULL, vals, 1, DEVQ_WAIT_ALL, 0, &first), -EINVAL, "s is NULL");
    EXPECT_ERR(devq_signal_wait_many(list, NULL, 1, DEVQ_WAIT_ALL, 0, &first), -EINVAL, "values");
    EXPECT_ERR(devq_signal_wait_many(list, vals, 2, DEVQ_WAIT_ALL, 0, &first), -EINVAL, "s[1]");
    EXPECT_ERR(devq_signal_wait_many(list, vals, 1, (enum devq_wait_mode)2, 0, &first), -EINVAL, "mode");
    EXPECT_ERR(devq_signal_wait_many(list, vals, 0, DEVQ_WAIT_ANY, 0, &first), -EINVAL, "ANY of 0");
    ck_assert_int_eq(devq_signal_wait_many(list, vals, 0, DEVQ_WAIT_ALL, 0, &first), 0);
    list[1] = G(devq_signal);
    EXPECT_ERR(devq_signal_wait_many(list, vals, 2, DEVQ_WAIT_ANY, 0, &first), -EINVAL, "s[1]");
    list[1] = sig;
    EXPECT_ERR(devq_signal_wait_many(list, vals, 2, DEVQ_WAIT_ANY, 0, &first), -ETIMEDOUT,
               "devq_signal_wait_many");
    EXPECT_ERR(devq_signal_wait_many(list, vals, 2, DEVQ_WAIT_ALL, 0, NULL), -ETIMEDOUT,
               "devq_signal_wait_many");
}

static void t_signal_notify(void)
{
    devq_notify *h = (devq_notify *)garbage;
    int status = 1;
    EXPECT_ERR(devq_signal_notify(NULL, 1, count_status, &status, &h), -EINVAL, "devq_signal_notify");
    ck_assert_ptr_null(h); /* *handle cleared on failure */
    EXPECT_ERR(devq_signal_notify(G(devq_signal), 1, count_status, &status, &h), -EINVAL,
               "devq_signal_notify");
    EXPECT_ERR(devq_signal_notify(sig, 1, NULL, &status, &h), -EINVAL, "fn is NULL");
    ck_assert_ptr_null(h);
    ck_assert_int_eq(status, 1); /* no callback ran */
}

static void t_notify_cancel(void)
{
    EXPECT_ERR(devq_notify_cancel(NULL), -EINVAL, "devq_notify_cancel");
    EXPECT_ERR(devq_notify_cancel(G(devq_notify)), -EINVAL, "devq_notify_cancel");
    /* A handle whose callback already ran: -EALREADY (and the handle is
     * given back by that call, so it is not used again: it is freed). */
    int status = 1;
    devq_notify *h;
    ck_assert_int_eq(devq_signal_notify(sig, 0, count_status, &status, &h), 0);
    ck_assert_ptr_nonnull(h);
    /* Value 0 is reached: the notifier delivers soon; wait (bounded). */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    ck_assert_int_eq(sem_timedwait(&notified, &deadline), 0);
    ck_assert_int_eq(status, 0);
    EXPECT_ERR(devq_notify_cancel(h), -EALREADY, "devq_notify_cancel");
}

static void t_notify_release(void)
{
    EXPECT_ERR(devq_notify_release(NULL), -EINVAL, "devq_notify_release");
    EXPECT_ERR(devq_notify_release(G(devq_notify)), -EINVAL, "devq_notify_release");
}

static void t_signal_wait_fd(void)
{
    int fd = 1234;
    EXPECT_ERR(devq_signal_wait_fd(NULL, 1, &fd), -EINVAL, "devq_signal_wait_fd");
    EXPECT_ERR(devq_signal_wait_fd(G(devq_signal), 1, &fd), -EINVAL, "devq_signal_wait_fd");
    EXPECT_ERR(devq_signal_wait_fd(sig, 1, NULL), -EINVAL, "fd is NULL");
}

static void t_signal_create_shared(void)
{
    EXPECT_ERR(devq_signal_create_shared(0, NULL), -EINVAL, "devq_signal_create_shared");
}

static void t_signal_export_fd(void)
{
    int fd = -1;
    EXPECT_ERR(devq_signal_export_fd(NULL, &fd), -EINVAL, "devq_signal_export_fd");
    EXPECT_ERR(devq_signal_export_fd(G(devq_signal), &fd), -EINVAL, "devq_signal_export_fd");
    EXPECT_ERR(devq_signal_export_fd(sig, &fd), -EINVAL, "not shared");
    ck_assert_int_eq(fd, -1);
    devq_signal *sh;
    ck_assert_int_eq(devq_signal_create_shared(0, &sh), 0);
    EXPECT_ERR(devq_signal_export_fd(sh, NULL), -EINVAL, "fd is NULL");
    devq_signal_destroy(sh);
}

static void t_signal_import_fd(void)
{
    devq_signal *s = (devq_signal *)garbage;
    EXPECT_ERR(devq_signal_import_fd(-1, &s), -EINVAL, "devq_signal_import_fd");
    EXPECT_ERR(devq_signal_import_fd(0, NULL), -EINVAL, "out is NULL");
    /* An open fd that is not a shared signal (a pipe, then a tiny file). */
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    EXPECT_ERR(devq_signal_import_fd(p[0], &s), -EINVAL, "devq_signal_import_fd");
    close(p[0]);
    close(p[1]);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    fputs("not a signal", f);
    fflush(f);
    EXPECT_ERR(devq_signal_import_fd(fileno(f), &s), -EINVAL, "devq_signal_import_fd");
    fclose(f);
}

static void t_signal_producer(void)
{
    EXPECT_ERR(devq_signal_add_producer(NULL), -EINVAL, "devq_signal_add_producer");
    EXPECT_ERR(devq_signal_add_producer(G(devq_signal)), -EINVAL, "devq_signal_add_producer");
    EXPECT_ERR(devq_signal_add_producer(sig), -EINVAL, "not shared");
    EXPECT_ERR(devq_signal_remove_producer(NULL), -EINVAL, "devq_signal_remove_producer");
    EXPECT_ERR(devq_signal_remove_producer(G(devq_signal)), -EINVAL, "devq_signal_remove_producer");
    EXPECT_ERR(devq_signal_remove_producer(sig), -EINVAL, "not shared");
    devq_signal *sh;
    ck_assert_int_eq(devq_signal_create_shared(0, &sh), 0);
    EXPECT_ERR(devq_signal_remove_producer(sh), -ENOENT, "is not a producer");
    devq_signal_destroy(sh);
}

static void t_buffer_alloc(void)
{
    devq_buffer *b = NULL;
    EXPECT_ERR(devq_buffer_alloc(NULL, 64, NULL, 0, &b), -EINVAL, "devq_buffer_alloc");
    EXPECT_ERR(devq_buffer_alloc(G(devq_device), 64, NULL, 0, &b), -EINVAL, "devq_buffer_alloc");
    EXPECT_ERR(devq_buffer_alloc(dev0, 64, NULL, 0, NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_buffer_alloc(dev0, 0, NULL, 0, &b), -EINVAL, "size is 0");
    EXPECT_ERR(devq_buffer_alloc(dev0, 64, G(devq_queue), 0, &b), -EINVAL, "devq_buffer_alloc");
    EXPECT_ERR(devq_buffer_alloc(dev0, 64, q1, 0, &b), -EINVAL, "cpu:1"); /* queue of dev1 */
    ck_assert_ptr_null(b);
    /* More than any machine has: refused, not wrapped into a small block. */
    reset_errmsg();
    int r = devq_buffer_alloc(dev0, SIZE_MAX, NULL, 0, &b);
    ck_assert_msg(r == -ENOMEM || r == -EINVAL, "SIZE_MAX alloc returned %d", r);
    check_msg("18446744073709551615", "devq_buffer_alloc(SIZE_MAX)", __LINE__); /* the size */
    ck_assert_ptr_null(b);
    r = devq_buffer_alloc(dev0, SIZE_MAX - 4095, q0, 0, &b);
    ck_assert_msg(r == -ENOMEM || r == -EINVAL, "SIZE_MAX-4095 alloc returned %d", r);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(devq_queue_submit(q0), 0);
}

static void t_buffer_free(void)
{
    EXPECT_ERR(devq_buffer_free(NULL, NULL), -EINVAL, "devq_buffer_free");
    EXPECT_ERR(devq_buffer_free(G(devq_buffer), NULL), -EINVAL, "devq_buffer_free");
    EXPECT_ERR(devq_buffer_free(b0, G(devq_queue)), -EINVAL, "devq_buffer_free");
    EXPECT_ERR(devq_buffer_free(b0, q1), -EINVAL, "cpu:1"); /* queue of another device */
    /* A freed buffer stays in memory while a recorded op still holds it:
     * then it must be refused as freed, and freeing it again too. */
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev0, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_queue_fill(q0, b, 0, 64, 1), 0); /* unissued use */
    ck_assert_int_eq(devq_buffer_free(b, q0), 0);          /* pending */
    EXPECT_ERR(devq_buffer_free(b, q0), -EINVAL, "already freed");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b, 0, 8, 2), -EINVAL, "freed");
    /* The submit inside EXPECT_REC_ERR discarded the batch with the
     * first fill, which issues the pending free. */
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
}

static void t_buffer_getters(void)
{
    EXPECT_VAL(devq_buffer_size(NULL), 0);
    EXPECT_VAL(devq_buffer_size(G(devq_buffer)), 0);
    EXPECT_VAL(devq_buffer_device_ptr(NULL), NULL);
    EXPECT_VAL(devq_buffer_device_ptr(G(devq_buffer)), NULL);
    EXPECT_VAL(devq_buffer_host_ptr(NULL), NULL);
    EXPECT_VAL(devq_buffer_host_ptr(G(devq_buffer)), NULL);
    ck_assert_uint_eq(devq_buffer_size(b0), BUF_BYTES);
}

static void t_buffer_status(void)
{
    EXPECT_ERR(devq_buffer_status(NULL), -EINVAL, "devq_buffer_status");
    EXPECT_ERR(devq_buffer_status(G(devq_buffer)), -EINVAL, "devq_buffer_status");
    ck_assert_int_eq(devq_buffer_status(b0), 0);
}

/* One body for the four set_name functions: the checks are shared. */
#define SET_NAME_ROW(fn, type, good)                                      \
    do {                                                                  \
        char long_name[DEVQ_NAME_MAX + 2];                                \
        memset(long_name, 'x', sizeof long_name - 1);                     \
        long_name[sizeof long_name - 1] = 0;                              \
        EXPECT_ERR(fn(NULL, "x"), -EINVAL, #fn);                          \
        EXPECT_ERR(fn(G(type), "x"), -EINVAL, #fn);                       \
        EXPECT_ERR(fn(good, long_name), -EINVAL, "longer than 63 bytes"); \
        EXPECT_ERR(fn(good, "two\nlines"), -EINVAL, "control character"); \
        long_name[DEVQ_NAME_MAX] = 0;                                     \
        ck_assert_int_eq(fn(good, long_name), 0); /* exactly the limit */ \
        ck_assert_int_eq(fn(good, NULL), 0);                              \
        ck_assert_int_eq(fn(good, ""), 0);                                \
    } while (0)

static void t_set_name(void)
{
    SET_NAME_ROW(devq_signal_set_name, devq_signal, sig);
    SET_NAME_ROW(devq_queue_set_name, devq_queue, q0);
    SET_NAME_ROW(devq_buffer_set_name, devq_buffer, b0);
    SET_NAME_ROW(devq_kernel_set_name, devq_kernel, k0);
}

static void t_mem_stats_get(void)
{
    devq_mem_stats st;
    EXPECT_ERR(devq_mem_stats_get(NULL, &st), -EINVAL, "devq_mem_stats_get");
    EXPECT_ERR(devq_mem_stats_get(G(devq_device), &st), -EINVAL, "devq_mem_stats_get");
    EXPECT_ERR(devq_mem_stats_get(dev0, NULL), -EINVAL, "st is NULL");
}

static void t_mem_reap(void)
{
    EXPECT_ERR(devq_mem_reap(NULL), -EINVAL, "devq_mem_reap");
    EXPECT_ERR(devq_mem_reap(G(devq_device)), -EINVAL, "devq_mem_reap");
}

static void t_kernel_load(void)
{
    devq_kernel *k = NULL;
    EXPECT_ERR(devq_kernel_load(NULL, NULL, 0, "misuse_kernel", &k), -EINVAL, "devq_kernel_load");
    EXPECT_ERR(devq_kernel_load(G(devq_device), NULL, 0, "misuse_kernel", &k), -EINVAL, "devq_kernel_load");
    EXPECT_ERR(devq_kernel_load(dev0, NULL, 0, "misuse_kernel", NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_kernel_load(dev0, NULL, 0, NULL, &k), -EINVAL, "entry");
    EXPECT_ERR(devq_kernel_load(dev0, NULL, 0, "", &k), -EINVAL, "entry");
    reset_errmsg();
    int r = devq_kernel_load(dev0, NULL, 0, "no_such_symbol_in_this_process", &k);
    ck_assert_int_lt(r, 0);
    check_msg("no_such_symbol_in_this_process", "devq_kernel_load(unknown entry)", __LINE__);
    reset_errmsg();
    r = devq_kernel_load(dev0, "/nonexistent/kernels.so", 24, "misuse_kernel", &k);
    ck_assert_int_lt(r, 0);
    check_msg("/nonexistent/kernels.so", "devq_kernel_load(missing file)", __LINE__);
    ck_assert_ptr_null(k);
}

static void t_kernel_load_fn(void)
{
    devq_kernel *k = NULL;
    EXPECT_ERR(devq_kernel_load_fn(NULL, misuse_kernel, NULL, "k", &k), -EINVAL, "devq_kernel_load_fn");
    EXPECT_ERR(devq_kernel_load_fn(G(devq_device), misuse_kernel, NULL, "k", &k), -EINVAL,
               "devq_kernel_load_fn");
    EXPECT_ERR(devq_kernel_load_fn(dev0, misuse_kernel, NULL, "k", NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_kernel_load_fn(dev0, NULL, NULL, "k", &k), -EINVAL, "kernel function is NULL");
    EXPECT_ERR(devq_kernel_load_fn(dev0, misuse_kernel, NULL, "", &k), -EINVAL, "name is empty");
    /* A signature that is not one (garbage bytes: a bad magic). */
    EXPECT_ERR(devq_kernel_load_fn(dev0, misuse_kernel, (const devq_cpu_signature *)garbage, "k", &k),
               -EINVAL, "not a signature");
    ck_assert_ptr_null(k);
}

static void t_kernel_destroy(void)
{
    devq_kernel_destroy(NULL);
    devq_kernel_destroy(G(devq_kernel));
    /* A destroyed kernel stays in memory while a recorded launch holds
     * it ("batches in flight keep it"): a new launch must be refused. */
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load(dev0, NULL, 0, "misuse_kernel", &k), 0);
    devq_launch l = { .global = { 1 } };
    ck_assert_int_eq(devq_queue_exec(q0, k, NULL, 0, &l), 0);
    devq_kernel_destroy(k);
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k, NULL, 0, &l), -EINVAL, "not a live kernel");
}

static void t_queue_create(void)
{
    devq_queue *q = NULL;
    devq_queue_desc bad = { .kind = (enum devq_queue_kind)7, .priority = 0 };
    EXPECT_ERR(devq_queue_create(NULL, NULL, &q), -EINVAL, "devq_queue_create");
    EXPECT_ERR(devq_queue_create(G(devq_device), NULL, &q), -EINVAL, "devq_queue_create");
    EXPECT_ERR(devq_queue_create(dev0, NULL, NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_queue_create(dev0, &bad, &q), -EINVAL, "kind 7");
    bad.kind = (enum devq_queue_kind) - 1;
    EXPECT_ERR(devq_queue_create(dev0, &bad, &q), -EINVAL, "kind -1");
    ck_assert_ptr_null(q);
}

static void t_queue_destroy(void)
{
    devq_queue_destroy(NULL);
    devq_queue_destroy(G(devq_queue));
    /* A destroyed queue is freed at once (lib/queue.c), so calls on it
     * would be use-after-free in this test: not exercised. */
}

static void t_queue_wait_signal(void)
{
    EXPECT_ERR(devq_queue_wait(NULL, sig, 1), -EINVAL, "devq_queue_wait");
    EXPECT_ERR(devq_queue_wait(G(devq_queue), sig, 1), -EINVAL, "devq_queue_wait");
    EXPECT_REC_ERR(q0, devq_queue_wait(q0, NULL, 1), -EINVAL, "devq_queue_wait");
    EXPECT_REC_ERR(q0, devq_queue_wait(q0, G(devq_signal), 1), -EINVAL, "devq_queue_wait");
    EXPECT_ERR(devq_queue_signal(NULL, sig, 1), -EINVAL, "devq_queue_signal");
    EXPECT_ERR(devq_queue_signal(G(devq_queue), sig, 1), -EINVAL, "devq_queue_signal");
    EXPECT_REC_ERR(q0, devq_queue_signal(q0, NULL, 1), -EINVAL, "devq_queue_signal");
    EXPECT_REC_ERR(q0, devq_queue_signal(q0, G(devq_signal), 1), -EINVAL, "devq_queue_signal");
}

static void t_queue_exec(void)
{
    devq_launch l = { .global = { 4 } }, zero = { .global = { 0 } };
    int v = 7;
    devq_arg good[2] = { DEVQ_ARG_BUF(b0, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&v) };
    devq_arg a;
    EXPECT_ERR(devq_queue_exec(NULL, k0, good, 2, &l), -EINVAL, "devq_queue_exec");
    EXPECT_ERR(devq_queue_exec(G(devq_queue), k0, good, 2, &l), -EINVAL, "devq_queue_exec");
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, NULL, good, 2, &l), -EINVAL, "kernel is NULL");
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, G(devq_kernel), good, 2, &l), -EINVAL, "devq_queue_exec");
    EXPECT_REC_ERR(q1, devq_queue_exec(q1, k0, NULL, 0, &l), -EINVAL, "cpu:0"); /* kernel of dev0 */
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, NULL, 2, &l), -EINVAL, "args is NULL");
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, good, SIZE_MAX, &l), -EINVAL, "devq_queue_exec");
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, good, 2, NULL), -EINVAL, "launch is NULL");
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, good, 2, &zero), -EINVAL, "global[0]");
    a = DEVQ_ARG_BUF(b1, DEVQ_READ); /* buffer of dev1 */
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "cpu:1");
    a = DEVQ_ARG_BUF(G(devq_buffer), DEVQ_READ);
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "devq_queue_exec");
    a = DEVQ_ARG_BUF(b0, (enum devq_access)0);
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "access 0");
    a = DEVQ_ARG_BUF(b0, (enum devq_access)4);
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "access 4");
    a = (devq_arg){ .value = NULL, .size = 4 };
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "argument 0");
    a = (devq_arg){ .value = &v, .size = 0 };
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "argument 0");
    a = (devq_arg){ .value = &v, .size = SIZE_MAX };
    EXPECT_REC_ERR(q0, devq_queue_exec(q0, k0, &a, 1, &l), -EINVAL, "argument 0");
    /* The good call still works after all that. */
    ck_assert_int_eq(devq_queue_exec(q0, k0, good, 2, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q0), 0);
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
}

static void t_queue_copy(void)
{
    devq_buffer *c0;
    ck_assert_int_eq(devq_buffer_alloc(dev0, BUF_BYTES, NULL, 0, &c0), 0);
    EXPECT_ERR(devq_queue_copy(NULL, b0, 0, c0, 0, 8), -EINVAL, "devq_queue_copy");
    EXPECT_ERR(devq_queue_copy(G(devq_queue), b0, 0, c0, 0, 8), -EINVAL, "devq_queue_copy");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, NULL, 0, c0, 0, 8), -EINVAL, "devq_queue_copy");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, NULL, 0, 8), -EINVAL, "devq_queue_copy");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, G(devq_buffer), 0, 8), -EINVAL, "devq_queue_copy");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, b1, 0, 8), -EINVAL, "cpu:1");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b1, 0, b0, 0, 8), -EINVAL, "cpu:1");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, c0, 0, 0), -EINVAL, "size is 0");
    /* offset + n wrapping size_t must not pass as "inside the buffer". */
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, SIZE_MAX - 3, c0, 0, 8), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, c0, SIZE_MAX - 3, 8), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 8, c0, 0, SIZE_MAX - 3), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, BUF_BYTES, c0, 0, 1), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_copy(q0, b0, 0, b0, 4, 8), -EINVAL, "overlap");
    ck_assert_int_eq(devq_queue_copy(q0, b0, 0, c0, 0, BUF_BYTES), 0);
    ck_assert_int_eq(devq_queue_submit(q0), 0);
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_buffer_free(c0, NULL), 0);
}

static void t_queue_fill(void)
{
    EXPECT_ERR(devq_queue_fill(NULL, b0, 0, 8, 1), -EINVAL, "devq_queue_fill");
    EXPECT_ERR(devq_queue_fill(G(devq_queue), b0, 0, 8, 1), -EINVAL, "devq_queue_fill");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, NULL, 0, 8, 1), -EINVAL, "devq_queue_fill");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, G(devq_buffer), 0, 8, 1), -EINVAL, "devq_queue_fill");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b1, 0, 8, 1), -EINVAL, "cpu:1");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b0, 0, 0, 1), -EINVAL, "size is 0");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b0, SIZE_MAX - 3, 8, 1), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b0, 8, SIZE_MAX, 1), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_fill(q0, b0, 1, BUF_BYTES, 1), -EINVAL, "outside");
}

static void t_queue_write_read(void)
{
    unsigned char host[16] = { 0 };
    EXPECT_ERR(devq_queue_write(NULL, b0, 0, host, 8), -EINVAL, "devq_queue_write");
    EXPECT_ERR(devq_queue_write(G(devq_queue), b0, 0, host, 8), -EINVAL, "devq_queue_write");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, NULL, 0, host, 8), -EINVAL, "devq_queue_write");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, b0, 0, NULL, 8), -EINVAL, "host pointer");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, b1, 0, host, 8), -EINVAL, "cpu:1");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, b0, 0, host, 0), -EINVAL, "size is 0");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, b0, SIZE_MAX, host, 2), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_write(q0, b0, 16, host, SIZE_MAX - 8), -EINVAL, "outside");
    EXPECT_ERR(devq_queue_read(NULL, host, b0, 0, 8), -EINVAL, "devq_queue_read");
    EXPECT_ERR(devq_queue_read(G(devq_queue), host, b0, 0, 8), -EINVAL, "devq_queue_read");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, NULL, 0, 8), -EINVAL, "devq_queue_read");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, NULL, b0, 0, 8), -EINVAL, "host pointer");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, G(devq_buffer), 0, 8), -EINVAL, "devq_queue_read");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, b1, 0, 8), -EINVAL, "cpu:1");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, b0, 0, 0), -EINVAL, "size is 0");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, b0, SIZE_MAX - 1, 4), -EINVAL, "outside");
    EXPECT_REC_ERR(q0, devq_queue_read(q0, host, b0, BUF_BYTES - 4, 8), -EINVAL, "outside");
}

static void t_queue_barrier(void)
{
    EXPECT_ERR(devq_queue_barrier(NULL), -EINVAL, "devq_queue_barrier");
    EXPECT_ERR(devq_queue_barrier(G(devq_queue)), -EINVAL, "devq_queue_barrier");
}

static void noop_fn(void *arg)
{
    (void)arg;
}

static void t_queue_host_fn(void)
{
    EXPECT_ERR(devq_queue_host_fn(NULL, noop_fn, NULL), -EINVAL, "devq_queue_host_fn");
    EXPECT_ERR(devq_queue_host_fn(G(devq_queue), noop_fn, NULL), -EINVAL, "devq_queue_host_fn");
    EXPECT_REC_ERR(q0, devq_queue_host_fn(q0, NULL, NULL), -EINVAL, "fn is NULL");
}

static void t_queue_submit(void)
{
    EXPECT_ERR(devq_queue_submit(NULL), -EINVAL, "devq_queue_submit");
    EXPECT_ERR(devq_queue_submit(G(devq_queue)), -EINVAL, "devq_queue_submit");
}

static void t_queue_finish(void)
{
    EXPECT_ERR(devq_queue_finish(NULL, 0), -EINVAL, "devq_queue_finish");
    EXPECT_ERR(devq_queue_finish(G(devq_queue), 0), -EINVAL, "devq_queue_finish");
    /* A poll of a queue blocked on a value nobody reached. */
    devq_signal *gate;
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_queue_wait(q0, gate, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q0), 0);
    /* The timeout names the queue and what its batch waits for. */
    EXPECT_ERR(devq_queue_finish(q0, 0), -ETIMEDOUT, "queue");
    EXPECT_ERR(devq_queue_finish(q0, 1000), -ETIMEDOUT, "waits for signal #");
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
    devq_signal_destroy(gate);
}

static void t_barrier(void)
{
    devq_queue *list[3] = { q0, NULL, q0 };
    EXPECT_ERR(devq_barrier(NULL, 2), -EINVAL, "queues is NULL");
    ck_assert_int_eq(devq_barrier(NULL, 0), 0);
    EXPECT_ERR(devq_barrier(list, 2), -EINVAL, "devq_barrier");
    list[1] = G(devq_queue);
    EXPECT_ERR(devq_barrier(list, 2), -EINVAL, "devq_barrier");
    list[1] = q1;
    EXPECT_ERR(devq_barrier(list, 3), -EINVAL, "twice");
}

static void t_timestamps(void)
{
    devq_timestamp *ts = NULL;
    uint64_t ns = 0;
    EXPECT_ERR(devq_queue_timestamp(NULL, &ts), -EINVAL, "devq_queue_timestamp");
    EXPECT_ERR(devq_queue_timestamp(G(devq_queue), &ts), -EINVAL, "devq_queue_timestamp");
    EXPECT_ERR(devq_timestamp_elapsed(NULL, NULL, &ns), -EINVAL, "devq_timestamp_elapsed");
    EXPECT_ERR(devq_timestamp_elapsed(G(devq_timestamp), G(devq_timestamp), &ns), -EINVAL,
               "devq_timestamp_elapsed");
    devq_timestamp_destroy(NULL);
    devq_timestamp_destroy(G(devq_timestamp));
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev0, &info), 0);
    if (!(info.caps & DEVQ_CAP_TIMING)) {
        EXPECT_ERR(devq_queue_timestamp(q0, &ts), -ENOTSUP, "DEVQ_CAP_TIMING");
        return;
    }
    /* Checked before recording starts, so (unlike the other recording
     * calls) not sticky: submit afterwards is not required to fail. */
    EXPECT_ERR(devq_queue_timestamp(q0, NULL), -EINVAL, "out is NULL");
    int sub = devq_queue_submit(q0);
    ck_assert_msg(sub == 0 || sub == -EINVAL, "submit after a refused timestamp: %d", sub);
    devq_timestamp *a, *b, *other;
    ck_assert_int_eq(devq_queue_timestamp(q0, &a), 0);
    ck_assert_int_eq(devq_queue_timestamp(q0, &b), 0);
    ck_assert_int_eq(devq_queue_timestamp(q1, &other), 0);
    /* Before submit: not reached yet. */
    EXPECT_ERR(devq_timestamp_elapsed(a, b, &ns), -EAGAIN, "devq_timestamp_elapsed");
    EXPECT_ERR(devq_timestamp_elapsed(a, b, NULL), -EINVAL, "ns is NULL");
    EXPECT_ERR(devq_timestamp_elapsed(a, other, &ns), -EINVAL, "different devices");
    /* Destroyed while the unsubmitted batch still holds it: the memory
     * stays, and the handle must read as dead. */
    devq_timestamp_destroy(b);
    EXPECT_ERR(devq_timestamp_elapsed(a, b, &ns), -EINVAL, "not a live timestamp");
    devq_timestamp_destroy(b); /* a second destroy is refused, not a double drop */
    ck_assert_int_eq(devq_queue_submit(q0), 0);
    ck_assert_int_eq(devq_queue_submit(q1), 0);
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
    ck_assert_int_eq(devq_queue_finish(q1, DEVQ_TIMEOUT_INFINITE), 0);
    devq_timestamp_destroy(a);
    devq_timestamp_destroy(other);
}

static void t_stats_get(void)
{
    devq_stats st;
    EXPECT_ERR(devq_stats_get(NULL, &st), -EINVAL, "devq_stats_get");
    EXPECT_ERR(devq_stats_get(G(devq_device), &st), -EINVAL, "devq_stats_get");
    EXPECT_ERR(devq_stats_get(dev0, NULL), -EINVAL, "st is NULL");
}

/* ---- memory resources ---- */

static int fake_alloc(void *state, size_t bytes, devq_stream_ref *stream, uint32_t tag, void **device_ptr,
                      void **host_ptr)
{
    return -ENOMEM;
}

static int fake_dealloc(void *state, void *device_ptr, size_t bytes, devq_stream_ref *stream, uint32_t tag)
{
    return 0;
}

static void t_stream_ref_id(void)
{
    ck_assert_uint_eq(devq_stream_ref_id(NULL), DEVQ_STREAM_NONE);
}

static void t_resource_create(void)
{
    devq_resource *r = NULL;
    struct devq_resource_ops ops = {
        .abi_version = DEVQ_RESOURCE_ABI_VERSION,
        .size = sizeof ops,
        .name = "fake",
        .allocate = fake_alloc,
        .deallocate = fake_dealloc,
    };
    EXPECT_ERR(devq_resource_create(NULL, &ops, NULL, &r), -EINVAL, "devq_resource_create");
    EXPECT_ERR(devq_resource_create(G(devq_device), &ops, NULL, &r), -EINVAL, "devq_resource_create");
    EXPECT_ERR(devq_resource_create(dev0, NULL, NULL, &r), -EINVAL, "devq_resource_create");
    EXPECT_ERR(devq_resource_create(dev0, &ops, NULL, NULL), -EINVAL, "devq_resource_create");
    ops.abi_version = 99;
    EXPECT_ERR(devq_resource_create(dev0, &ops, NULL, &r), -ENOTSUP, "version 99");
    ops.abi_version = DEVQ_RESOURCE_ABI_VERSION;
    ops.size = 8;
    EXPECT_ERR(devq_resource_create(dev0, &ops, NULL, &r), -EINVAL, "size 8");
    ops.size = sizeof ops;
    ops.deallocate = NULL;
    EXPECT_ERR(devq_resource_create(dev0, &ops, NULL, &r), -EINVAL, "fake");
    ck_assert_ptr_null(r);
}

static void t_resource_destroy(void)
{
    devq_resource_destroy(NULL);
    devq_resource_destroy(G(devq_resource));
    /* The device's own stack is owned: destroying it is a no-op, and the
     * device keeps allocating through it. */
    devq_resource_destroy(devq_device_resource(dev0));
    devq_buffer *b;
    ck_assert_int_eq(devq_buffer_alloc(dev0, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    /* A destroyed user resource is freed at once (lib/mem_resource.c):
     * calls on it would be use-after-free here, so none are made. */
}

static void t_resource_getters(void)
{
    EXPECT_VAL(devq_resource_state(NULL), NULL);
    EXPECT_VAL(devq_resource_state(G(devq_resource)), NULL);
    ck_assert_ptr_nonnull(devq_resource_name(NULL));
    ck_assert_ptr_nonnull(devq_resource_name(G(devq_resource)));
    EXPECT_VAL(devq_resource_inner(NULL), NULL);
    EXPECT_VAL(devq_resource_inner(G(devq_resource)), NULL);
    EXPECT_VAL(devq_resource_bytes_outstanding(NULL), 0);
    EXPECT_VAL(devq_resource_bytes_outstanding(G(devq_resource)), 0);
    EXPECT_VAL(devq_resource_supports_use_tracking(NULL), 0);
    EXPECT_VAL(devq_resource_supports_use_tracking(G(devq_resource)), 0);
    EXPECT_VAL(devq_device_resource(NULL), NULL);
    EXPECT_VAL(devq_device_resource(G(devq_device)), NULL);
}

static void t_resource_bases(void)
{
    devq_resource *r = NULL;
    EXPECT_ERR(devq_resource_direct(NULL, &r), -EINVAL, "devq_resource_direct");
    EXPECT_ERR(devq_resource_direct(G(devq_device), &r), -EINVAL, "devq_resource_direct");
    EXPECT_ERR(devq_resource_direct(dev0, NULL), -EINVAL, "devq_resource_direct");
    EXPECT_ERR(devq_resource_pool(NULL, &r), -EINVAL, "devq_resource_pool");
    EXPECT_ERR(devq_resource_pool(G(devq_device), &r), -EINVAL, "devq_resource_pool");
    EXPECT_ERR(devq_resource_pool(dev0, NULL), -EINVAL, "devq_resource_pool");
    EXPECT_ERR(devq_resource_native(NULL, &r), -EINVAL, "devq_resource_native");
    EXPECT_ERR(devq_resource_native(G(devq_device), &r), -EINVAL, "devq_resource_native");
    reset_errmsg();
    int e = devq_resource_native(dev0, NULL);
    ck_assert_msg(e == -EINVAL || e == -ENOTSUP, "native(dev0, NULL) = %d", e);
    check_msg("devq_resource_native", "devq_resource_native(dev0, NULL)", __LINE__);
    ck_assert_ptr_null(r);
}

static void t_resource_decorators(void)
{
    devq_resource *inner, *r = NULL;
    ck_assert_int_eq(devq_resource_direct(dev0, &inner), 0);
    EXPECT_ERR(devq_resource_budget(NULL, 1024, &r), -EINVAL, "devq_resource_budget");
    EXPECT_ERR(devq_resource_budget(G(devq_resource), 1024, &r), -EINVAL, "devq_resource_budget");
    EXPECT_ERR(devq_resource_budget(inner, 1024, NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_resource_budget(inner, 0, &r), -EINVAL, "limit");
    EXPECT_ERR(devq_resource_stats(NULL, &r), -EINVAL, "devq_resource_stats");
    EXPECT_ERR(devq_resource_stats(G(devq_resource), &r), -EINVAL, "devq_resource_stats");
    EXPECT_ERR(devq_resource_stats(inner, NULL), -EINVAL, "devq_resource_stats");
    EXPECT_ERR(devq_resource_logging(NULL, "/dev/null", &r), -EINVAL, "devq_resource_logging");
    EXPECT_ERR(devq_resource_logging(G(devq_resource), "/dev/null", &r), -EINVAL, "devq_resource_logging");
    EXPECT_ERR(devq_resource_logging(inner, "/dev/null", NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_resource_logging(inner, NULL, &r), -EINVAL, "file name");
    EXPECT_ERR(devq_resource_logging(inner, "", &r), -EINVAL, "file name");
    reset_errmsg();
    int e = devq_resource_logging(inner, "/nonexistent/dir/mem.csv", &r);
    ck_assert_int_lt(e, 0);
    check_msg("/nonexistent/dir/mem.csv", "devq_resource_logging(unopenable file)", __LINE__);
    EXPECT_ERR(devq_resource_guard(NULL, &r), -EINVAL, "devq_resource_guard");
    EXPECT_ERR(devq_resource_guard(G(devq_resource), &r), -EINVAL, "devq_resource_guard");
    EXPECT_ERR(devq_resource_guard(inner, NULL), -EINVAL, "devq_resource_guard");
    ck_assert_ptr_null(r);
    /* A decorator cannot wrap a resource that is already owned (the
     * device's stack): it would be destroyed twice. */
    reset_errmsg();
    e = devq_resource_budget(devq_device_resource(dev0), 1024, &r);
    ck_assert_msg(e == -EBUSY || e == -EINVAL, "budget over an owned resource: %d", e);
    check_msg("devq_resource_budget", "devq_resource_budget(owned inner)", __LINE__);
    ck_assert_ptr_null(r);
    devq_resource_destroy(inner);
}

static void t_resource_calls(void)
{
    devq_resource *r;
    ck_assert_int_eq(devq_resource_direct(dev0, &r), 0);
    void *dp = NULL, *hp = NULL;
    devq_mem_stats st;
    devq_mem_usage u;
    EXPECT_ERR(devq_resource_allocate(NULL, 64, NULL, 0, &dp, &hp), -EINVAL, "devq_resource_allocate");
    EXPECT_ERR(devq_resource_allocate(G(devq_resource), 64, NULL, 0, &dp, &hp), -EINVAL,
               "devq_resource_allocate");
    EXPECT_ERR(devq_resource_allocate(r, 64, NULL, 0, NULL, &hp), -EINVAL, "device_ptr");
    EXPECT_ERR(devq_resource_allocate(r, 0, NULL, 0, &dp, &hp), -EINVAL, "0 bytes");
    reset_errmsg();
    int e = devq_resource_allocate(r, SIZE_MAX, NULL, 0, &dp, &hp);
    ck_assert_int_eq(e, -ENOMEM);
    check_msg("direct", "devq_resource_allocate(SIZE_MAX)", __LINE__);
    EXPECT_ERR(devq_resource_deallocate(NULL, &dp, 64, NULL, 0), -EINVAL, "devq_resource_deallocate");
    EXPECT_ERR(devq_resource_deallocate(G(devq_resource), &dp, 64, NULL, 0), -EINVAL,
               "devq_resource_deallocate");
    EXPECT_ERR(devq_resource_deallocate(r, NULL, 64, NULL, 0), -EINVAL, "NULL pointer");
    EXPECT_ERR(devq_resource_reap(NULL), -EINVAL, "devq_resource_reap");
    EXPECT_ERR(devq_resource_reap(G(devq_resource)), -EINVAL, "devq_resource_reap");
    EXPECT_ERR(devq_resource_trim(NULL), -EINVAL, "devq_resource_trim");
    EXPECT_ERR(devq_resource_trim(G(devq_resource)), -EINVAL, "devq_resource_trim");
    EXPECT_ERR(devq_resource_prepare_use(NULL, dp, NULL, DEVQ_READ), -EINVAL, "devq_resource_prepare_use");
    EXPECT_ERR(devq_resource_prepare_use(G(devq_resource), dp, NULL, DEVQ_READ), -EINVAL,
               "devq_resource_prepare_use");
    EXPECT_ERR(devq_resource_finish_use(NULL, dp, NULL, DEVQ_READ), -EINVAL, "devq_resource_finish_use");
    EXPECT_ERR(devq_resource_finish_use(G(devq_resource), dp, NULL, DEVQ_READ), -EINVAL,
               "devq_resource_finish_use");
    if (!devq_resource_supports_use_tracking(r)) {
        EXPECT_ERR(devq_resource_prepare_use(r, dp, NULL, DEVQ_READ), -ENOTSUP, "devq_resource_prepare_use");
        EXPECT_ERR(devq_resource_finish_use(r, dp, NULL, DEVQ_READ), -ENOTSUP, "devq_resource_finish_use");
    }
    EXPECT_ERR(devq_resource_stats_get(NULL, &st), -EINVAL, "devq_resource_stats_get");
    EXPECT_ERR(devq_resource_stats_get(G(devq_resource), &st), -EINVAL, "devq_resource_stats_get");
    EXPECT_ERR(devq_resource_stats_get(r, NULL), -EINVAL, "st is NULL");
    EXPECT_ERR(devq_resource_usage_by_tag(NULL, 0, &u), -EINVAL, "devq_resource_usage_by_tag");
    EXPECT_ERR(devq_resource_usage_by_tag(G(devq_resource), 0, &u), -EINVAL, "devq_resource_usage_by_tag");
    EXPECT_ERR(devq_resource_usage_by_tag(r, 0, &u), -ENOENT, "stats"); /* no stats layer */
    EXPECT_ERR(devq_resource_usage_by_stream(NULL, 0, &u), -EINVAL, "devq_resource_usage_by_stream");
    EXPECT_ERR(devq_resource_usage_by_stream(G(devq_resource), 0, &u), -EINVAL,
               "devq_resource_usage_by_stream");
    EXPECT_ERR(devq_resource_usage_by_stream(r, DEVQ_STREAM_NONE, &u), -ENOENT, "stats");
    devq_resource *stats;
    ck_assert_int_eq(devq_resource_stats(r, &stats), 0); /* owns r now */
    EXPECT_ERR(devq_resource_usage_by_tag(stats, 0, NULL), -EINVAL, "devq_resource_usage_by_tag");
    EXPECT_ERR(devq_resource_usage_by_stream(stats, 0, NULL), -EINVAL, "devq_resource_usage_by_stream");
    devq_resource_destroy(stats);
}

static void t_device_set_resource(void)
{
    devq_resource *r1;
    ck_assert_int_eq(devq_resource_direct(dev1, &r1), 0);
    EXPECT_ERR(devq_device_set_resource(NULL, r1), -EINVAL, "devq_device_set_resource");
    EXPECT_ERR(devq_device_set_resource(G(devq_device), r1), -EINVAL, "devq_device_set_resource");
    EXPECT_ERR(devq_device_set_resource(dev0, NULL), -EINVAL, "devq_device_set_resource");
    EXPECT_ERR(devq_device_set_resource(dev0, G(devq_resource)), -EINVAL, "devq_device_set_resource");
    EXPECT_ERR(devq_device_set_resource(dev0, r1), -EINVAL, "another device");
    /* b0 is outstanding on dev0's stack: a swap must wait. */
    devq_resource *r0;
    ck_assert_int_eq(devq_resource_direct(dev0, &r0), 0);
    EXPECT_ERR(devq_device_set_resource(dev0, r0), -EBUSY, "devq_device_set_resource");
    devq_resource_destroy(r0);
    devq_resource_destroy(r1);
}


/* Channels: every check here happens before an engine is loaded, so
 * these rows run without MPI (the channel suite, tests/channel/, covers
 * the checks that need a live channel). */
static void t_channel_life(void)
{
    devq_channel *ch = (devq_channel *)garbage;
    unsigned char id[64];
    size_t n = sizeof id;
    EXPECT_ERR(devq_channel_id(NULL, id, &n), -EINVAL, "devq_channel_id");
    EXPECT_ERR(devq_channel_id(G(devq_device), id, &n), -EINVAL, "devq_channel_id");
    EXPECT_ERR(devq_channel_id(dev0, NULL, &n), -EINVAL, "id is NULL");
    EXPECT_ERR(devq_channel_id(dev0, id, NULL), -EINVAL, "size is NULL");
    EXPECT_ERR(devq_channel_create(NULL, NULL, &ch), -EINVAL, "devq_channel_create");
    EXPECT_ERR(devq_channel_create(G(devq_device), NULL, &ch), -EINVAL, "devq_channel_create");
    EXPECT_ERR(devq_channel_create(dev0, NULL, NULL), -EINVAL, "out is NULL");
    devq_channel_desc d = { .rank = 2, .size = 2 };
    EXPECT_ERR(devq_channel_create(dev0, &d, &ch), -EINVAL, "rank 2 / size 2");
    ck_assert_ptr_null(ch);
    d = (devq_channel_desc){ .rank = 0, .size = -1 };
    EXPECT_ERR(devq_channel_create(dev0, &d, &ch), -EINVAL, "rank 0 / size -1");
    d = (devq_channel_desc){ .rank = 0, .size = 2, .id = id, .id_size = 0 };
    EXPECT_ERR(devq_channel_create(dev0, &d, &ch), -EINVAL, "id_size");
    d = (devq_channel_desc){ .rank = -1, .size = -1, .id = id, .id_size = 16 };
    EXPECT_ERR(devq_channel_create(dev0, &d, &ch), -EINVAL, "rank -1");
    int handle = 0;
    EXPECT_ERR(devq_channel_create_from_handle(NULL, &handle, sizeof handle, &ch), -EINVAL,
               "devq_channel_create_from_handle");
    EXPECT_ERR(devq_channel_create_from_handle(G(devq_device), &handle, sizeof handle, &ch), -EINVAL,
               "devq_channel_create_from_handle");
    EXPECT_ERR(devq_channel_create_from_handle(dev0, &handle, sizeof handle, NULL), -EINVAL, "out is NULL");
    EXPECT_ERR(devq_channel_create_from_handle(dev0, NULL, 8, &ch), -EINVAL, "handle is NULL");
    EXPECT_ERR(devq_channel_create_from_handle(dev0, &handle, 0, &ch), -EINVAL, "handle is 0 bytes");
    devq_channel *out;
    EXPECT_ERR(devq_channel_split(NULL, 0, 0, &out), -EINVAL, "devq_channel_split");
    EXPECT_ERR(devq_channel_split(G(devq_channel), 0, 0, &out), -EINVAL, "devq_channel_split");
    EXPECT_ERR(devq_channel_rank(NULL), -EINVAL, "devq_channel_rank");
    EXPECT_ERR(devq_channel_rank(G(devq_channel)), -EINVAL, "devq_channel_rank");
    EXPECT_ERR(devq_channel_size(NULL), -EINVAL, "devq_channel_size");
    EXPECT_ERR(devq_channel_size(G(devq_channel)), -EINVAL, "devq_channel_size");
    EXPECT_ERR(devq_channel_set_timeout(NULL, 1), -EINVAL, "devq_channel_set_timeout");
    EXPECT_ERR(devq_channel_set_timeout(G(devq_channel), 1), -EINVAL, "devq_channel_set_timeout");
    reset_errmsg();
    devq_channel_destroy(NULL); /* no crash */
    devq_channel_destroy(G(devq_channel));
    check_msg("devq_channel_destroy", "devq_channel_destroy(garbage)", __LINE__);
}

static void t_channel_ops(void)
{
    devq_channel *g = G(devq_channel);
    EXPECT_REC_ERR(q0, devq_queue_all_reduce(q0, NULL, b0, 0, b0, 0, 4, DEVQ_F32, DEVQ_SUM), -EINVAL,
                   "channel is NULL");
    EXPECT_REC_ERR(q0, devq_queue_all_reduce(q0, g, b0, 0, b0, 0, 4, DEVQ_F32, DEVQ_SUM), -EINVAL,
                   "not a live channel");
    EXPECT_REC_ERR(q0, devq_queue_all_gather(q0, g, b0, 0, b0, 0, 4, DEVQ_F32), -EINVAL,
                   "not a live channel");
    EXPECT_REC_ERR(q0, devq_queue_reduce_scatter(q0, g, b0, 0, b0, 0, 4, DEVQ_F32, DEVQ_SUM), -EINVAL,
                   "not a live channel");
    EXPECT_REC_ERR(q0, devq_queue_broadcast(q0, NULL, b0, 0, 4, DEVQ_F32, 0), -EINVAL, "channel is NULL");
    EXPECT_REC_ERR(q0, devq_queue_send(q0, g, b0, 0, 4, DEVQ_F32, 1), -EINVAL, "not a live channel");
    EXPECT_REC_ERR(q0, devq_queue_recv(q0, NULL, b0, 0, 4, DEVQ_F32, 1), -EINVAL, "channel is NULL");
    EXPECT_ERR(devq_queue_all_reduce(NULL, g, b0, 0, b0, 0, 4, DEVQ_F32, DEVQ_SUM), -EINVAL,
               "devq_queue_all_reduce");
    EXPECT_ERR(devq_queue_send(G(devq_queue), g, b0, 0, 4, DEVQ_F32, 1), -EINVAL, "devq_queue_send");
}

/* Graphs: capture on q0 (one exec op over b0 and a value), then every
 * graph call with bad handles, another device's queue and buffers, and
 * changes a graph cannot make. */
static void t_graph(void)
{
    devq_graph *g = NULL;
    devq_graph_exec *ge = NULL;
    EXPECT_ERR(devq_queue_begin_capture(NULL), -EINVAL, "devq_queue_begin_capture");
    EXPECT_ERR(devq_queue_begin_capture(G(devq_queue)), -EINVAL, "devq_queue_begin_capture");
    EXPECT_ERR(devq_queue_end_capture(NULL, &g), -EINVAL, "devq_queue_end_capture");
    EXPECT_ERR(devq_queue_end_capture(q0, &g), -EINVAL, "not capturing");
    ck_assert_int_eq(devq_queue_begin_capture(q0), 0);
    EXPECT_ERR(devq_queue_begin_capture(q0), -EBUSY, "already capturing");
    EXPECT_ERR(devq_queue_submit(q0), -EBUSY, "capturing a graph");
    EXPECT_ERR(devq_queue_finish(q0, 0), -EBUSY, "capturing a graph");
    uint32_t v = 1;
    devq_arg a[2] = { DEVQ_ARG_BUF(b0, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&v) };
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q0, k0, a, 2, &l), 0);
    EXPECT_ERR(devq_queue_end_capture(q0, NULL), -EINVAL, "out is NULL");
    ck_assert_int_eq(devq_queue_end_capture(q0, &g), 0);
    EXPECT_ERR(devq_graph_instantiate(NULL, &ge), -EINVAL, "devq_graph_instantiate");
    EXPECT_ERR(devq_graph_instantiate(G(devq_graph), &ge), -EINVAL, "not a live graph");
    EXPECT_ERR(devq_graph_instantiate(g, NULL), -EINVAL, "out is NULL");
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(NULL);
    devq_graph_destroy(G(devq_graph));
    devq_graph_destroy(g);
    EXPECT_ERR(devq_graph_submit(NULL, ge), -EINVAL, "devq_graph_submit");
    EXPECT_ERR(devq_graph_submit(q0, NULL), -EINVAL, "devq_graph_submit");
    EXPECT_ERR(devq_graph_submit(q0, G(devq_graph_exec)), -EINVAL, "not a live graph exec");
    EXPECT_ERR(devq_graph_submit(q1, ge), -EINVAL, "cpu:0"); /* a queue of dev1 */
    EXPECT_ERR(devq_graph_exec_set_arg(NULL, 0, 0, &a[1]), -EINVAL, "devq_graph_exec_set_arg");
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 1, 0, &a[1]), -EINVAL, "op 1 is out of range");
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 0, 2, &a[1]), -EINVAL, "argument 2 is out of range");
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 0, 0, NULL), -EINVAL, "arg is NULL");
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 0, 0, &a[1]), -EINVAL, "between buffer and value");
    devq_arg other = DEVQ_ARG_BUF(b1, DEVQ_READ_WRITE);
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 0, 0, &other), -EINVAL, "cpu:1");
    uint64_t wide = 1;
    devq_arg w = DEVQ_ARG_VAL(&wide);
    EXPECT_ERR(devq_graph_exec_set_arg(ge, 0, 1, &w), -EINVAL, "8 bytes");
    EXPECT_ERR(devq_graph_exec_set_buffer(NULL, b0, b0), -EINVAL, "devq_graph_exec_set_buffer");
    EXPECT_ERR(devq_graph_exec_set_buffer(ge, b1, b0), -EINVAL, "not used by the graph");
    EXPECT_ERR(devq_graph_exec_set_buffer(ge, b0, b1), -EINVAL, "cpu:1");
    EXPECT_ERR(devq_graph_exec_set_buffer(ge, b0, G(devq_buffer)), -EINVAL, "devq_graph_exec_set_buffer");
    EXPECT_ERR(devq_graph_exec_set_value(NULL, 0, 1, 0), -EINVAL, "devq_graph_exec_set_value");
    EXPECT_ERR(devq_graph_exec_set_value(ge, 0, 1, 0), -EINVAL, "devq_queue_exec");
    EXPECT_ERR(devq_graph_exec_set_value(ge, 5, 1, 0), -EINVAL, "out of range");
    devq_graph_exec_destroy(NULL);
    devq_graph_exec_destroy(G(devq_graph_exec));
    ck_assert_int_eq(devq_graph_submit(q0, ge), 0);
    devq_graph_exec_destroy(ge); /* in flight: the submission holds its own */
    ck_assert_int_eq(devq_queue_finish(q0, DEVQ_TIMEOUT_INFINITE), 0);
}

/* ---- the table ---- */

struct row {
    const char *fn; /* the public function the row covers */
    void (*test)(void);
};

static const struct row rows[] = {
    { "devq_errmsg", t_errmsg_version },
    { "devq_version", t_errmsg_version },
    { "devq_device_open", t_device_open },
    { "devq_device_close", t_device_close },
    { "devq_device_info_get", t_device_info_get },
    { "devq_device_synchronize", t_device_synchronize },
    { "devq_backends_report", t_backends_report },
    { "devq_signal_create", t_signal_create },
    { "devq_signal_destroy", t_signal_destroy },
    { "devq_signal_value", t_signal_value },
    { "devq_signal_set", t_signal_set },
    { "devq_signal_fail", t_signal_fail },
    { "devq_signal_status", t_signal_status },
    { "devq_signal_wait", t_signal_wait },
    { "devq_signal_wait_many", t_signal_wait_many },
    { "devq_signal_notify", t_signal_notify },
    { "devq_notify_cancel", t_notify_cancel },
    { "devq_notify_release", t_notify_release },
    { "devq_signal_wait_fd", t_signal_wait_fd },
    { "devq_signal_create_shared", t_signal_create_shared },
    { "devq_signal_export_fd", t_signal_export_fd },
    { "devq_signal_import_fd", t_signal_import_fd },
    { "devq_signal_add_producer", t_signal_producer },
    { "devq_signal_remove_producer", t_signal_producer },
    { "devq_buffer_alloc", t_buffer_alloc },
    { "devq_buffer_free", t_buffer_free },
    { "devq_buffer_size", t_buffer_getters },
    { "devq_buffer_device_ptr", t_buffer_getters },
    { "devq_buffer_host_ptr", t_buffer_getters },
    { "devq_buffer_status", t_buffer_status },
    { "devq_channel_id", t_channel_life },
    { "devq_channel_create", t_channel_life },
    { "devq_channel_create_from_handle", t_channel_life },
    { "devq_channel_split", t_channel_life },
    { "devq_channel_rank", t_channel_life },
    { "devq_channel_size", t_channel_life },
    { "devq_channel_destroy", t_channel_life },
    { "devq_channel_set_timeout", t_channel_life },
    { "devq_queue_all_reduce", t_channel_ops },
    { "devq_queue_all_gather", t_channel_ops },
    { "devq_queue_reduce_scatter", t_channel_ops },
    { "devq_queue_broadcast", t_channel_ops },
    { "devq_queue_send", t_channel_ops },
    { "devq_queue_recv", t_channel_ops },
    { "devq_signal_set_name", t_set_name },
    { "devq_queue_set_name", t_set_name },
    { "devq_buffer_set_name", t_set_name },
    { "devq_kernel_set_name", t_set_name },
    { "devq_mem_stats_get", t_mem_stats_get },
    { "devq_mem_reap", t_mem_reap },
    { "devq_kernel_load", t_kernel_load },
    { "devq_kernel_load_fn", t_kernel_load_fn },
    { "devq_kernel_destroy", t_kernel_destroy },
    { "devq_queue_create", t_queue_create },
    { "devq_queue_destroy", t_queue_destroy },
    { "devq_queue_wait", t_queue_wait_signal },
    { "devq_queue_signal", t_queue_wait_signal },
    { "devq_queue_exec", t_queue_exec },
    { "devq_queue_copy", t_queue_copy },
    { "devq_queue_fill", t_queue_fill },
    { "devq_queue_write", t_queue_write_read },
    { "devq_queue_read", t_queue_write_read },
    { "devq_queue_barrier", t_queue_barrier },
    { "devq_queue_host_fn", t_queue_host_fn },
    { "devq_queue_submit", t_queue_submit },
    { "devq_queue_finish", t_queue_finish },
    { "devq_barrier", t_barrier },
    { "devq_queue_timestamp", t_timestamps },
    { "devq_timestamp_elapsed", t_timestamps },
    { "devq_timestamp_destroy", t_timestamps },
    { "devq_stats_get", t_stats_get },
    { "devq_stream_ref_id", t_stream_ref_id },
    { "devq_resource_create", t_resource_create },
    { "devq_resource_destroy", t_resource_destroy },
    { "devq_resource_state", t_resource_getters },
    { "devq_resource_name", t_resource_getters },
    { "devq_resource_inner", t_resource_getters },
    { "devq_resource_direct", t_resource_bases },
    { "devq_resource_pool", t_resource_bases },
    { "devq_resource_native", t_resource_bases },
    { "devq_resource_budget", t_resource_decorators },
    { "devq_resource_stats", t_resource_decorators },
    { "devq_resource_logging", t_resource_decorators },
    { "devq_resource_guard", t_resource_decorators },
    { "devq_resource_allocate", t_resource_calls },
    { "devq_resource_deallocate", t_resource_calls },
    { "devq_resource_bytes_outstanding", t_resource_getters },
    { "devq_resource_reap", t_resource_calls },
    { "devq_resource_trim", t_resource_calls },
    { "devq_resource_supports_use_tracking", t_resource_getters },
    { "devq_resource_prepare_use", t_resource_calls },
    { "devq_resource_finish_use", t_resource_calls },
    { "devq_resource_stats_get", t_resource_calls },
    { "devq_resource_usage_by_tag", t_resource_calls },
    { "devq_resource_usage_by_stream", t_resource_calls },
    { "devq_device_set_resource", t_device_set_resource },
    { "devq_device_resource", t_resource_getters },
    { "devq_queue_begin_capture", t_graph },
    { "devq_queue_end_capture", t_graph },
    { "devq_graph_instantiate", t_graph },
    { "devq_graph_destroy", t_graph },
    { "devq_graph_submit", t_graph },
    { "devq_graph_exec_set_arg", t_graph },
    { "devq_graph_exec_set_buffer", t_graph },
    { "devq_graph_exec_set_value", t_graph },
    { "devq_graph_exec_destroy", t_graph },
};
#define NROWS (sizeof rows / sizeof rows[0])

START_TEST(misuse_row)
{
    ck_assert_uint_lt((size_t)_i, NROWS);
    /* Rows sharing a test function run it once, at the first of them. */
    for (int i = 0; i < _i; i++)
        if (rows[i].test == rows[_i].test)
            return;
    rows[_i].test();
}
END_TEST

static int covered(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (!strcmp(rows[i].fn, name))
            return 1;
    return 0;
}

/* Every devq_xxx( in a public header must have a row. */
static void check_header(const char *rel, int at_least)
{
    const char *top = getenv("top_srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", top && *top ? top : ".", rel);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s (set top_srcdir)", path);
    regex_t re;
    ck_assert_int_eq(regcomp(&re, "devq_[a-z0-9_]+\\(", REG_EXTENDED), 0);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = line;
        regmatch_t m;
        while (regexec(&re, p, 1, &m, 0) == 0) {
            /* Skip matches inside a longer identifier (my_devq_x(). */
            int inside =
                m.rm_so > 0 && (p[m.rm_so - 1] == '_' || (p[m.rm_so - 1] >= 'a' && p[m.rm_so - 1] <= 'z') ||
                                (p[m.rm_so - 1] >= 'A' && p[m.rm_so - 1] <= 'Z') ||
                                (p[m.rm_so - 1] >= '0' && p[m.rm_so - 1] <= '9'));
            /* "devq_resource(3)" in a comment is a man page, not a call. */
            const char *after = p + m.rm_eo;
            inside |= after[0] >= '0' && after[0] <= '9' && after[1] == ')';
            char name[128];
            int len = (int)(m.rm_eo - m.rm_so - 1);
            snprintf(name, sizeof name, "%.*s", len, p + m.rm_so);
            if (!inside) {
                found++;
                ck_assert_msg(covered(name),
                              "%s declares %s, which has no misuse row in "
                              "tests/unit/test_misuse.c",
                              rel, name);
            }
            p += m.rm_eo;
        }
    }
    regfree(&re);
    fclose(f);
    ck_assert_msg(found >= at_least, "%s: %d declarations seen, at least %d expected", rel, found, at_least);
}

START_TEST(table_covers_headers)
{
    check_header("include/devq/devq.h", 11);
    check_header("include/devq/devq_resource.h", 11);
    check_header("include/devq/devq_cpu.h", 1);
}
END_TEST

static Suite *misuse_suite(void)
{
    Suite *s = suite_create("misuse");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, misuse_row, 0, (int)NROWS);
    suite_add_tcase(s, tc);
    TCase *cov = tcase_create("coverage");
    tcase_add_test(cov, table_covers_headers);
    suite_add_tcase(s, cov);
    return s;
}

int main(void)
{
    /* Two cpu devices, before anything reads the environment. */
    setenv("DEVQ_CPU_DEVICES", "2", 1);
    unsetenv("DEVQ_BACKEND");
    return check_run(misuse_suite());
}
