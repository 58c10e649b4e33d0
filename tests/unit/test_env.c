/* SPDX-License-Identifier: MIT */
/* The environment as a user meets it: a malformed value is -EINVAL naming
 * the variable and the value whichever call reads it first (DESIGN §5a;
 * it used to be -ENODEV from devq_device_open(NULL) and -EINVAL from
 * devq_device_open("cpu")), and the messages say what is accepted.
 * Check forks each test, so each reads the environment afresh. */
#include "config.h"
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <devq/devq.h>

/* Sanitizers put their own printf into the program. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif

static const char *const vars[] = {
    "DEVQ_BACKEND",   "DEVQ_LOG",         "DEVQ_LOG_FILE",    "DEVQ_TRACE",
    "DEVQ_TRACE_MAX", "DEVQ_MEM_POOL",    "DEVQ_MEM_BUDGET",  "DEVQ_MEM_GUARD",
    "DEVQ_MEM_LOG",   "DEVQ_CPU_DEVICES", "DEVQ_CPU_THREADS",
};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* One malformed value per variable lib reads, and what the message names. */
static const struct {
    const char *var, *value, *says;
} bad[] = {
    { "DEVQ_MEM_BUDGET", "12Q", "unknown suffix 'Q'" },
    { "DEVQ_MEM_BUDGET", "1.5G", "1536M" },
    { "DEVQ_MEM_BUDGET", "0", "unset it" },
    { "DEVQ_MEM_GUARD", "maybe", "1, on or yes" },
    { "DEVQ_MEM_POOL", "cuda", "native, devq or direct" },
    { "DEVQ_TRACE_MAX", "12Q", "unknown suffix" },
    { "DEVQ_TRACE", "/no/such/dir/t.json", "folder '/no/such/dir'" },
    { "DEVQ_MEM_LOG", "/no/such/dir/m.csv", "folder '/no/such/dir'" },
    { "DEVQ_LOG", "loud", "off, basic or full" },
    { "DEVQ_LOG_FILE", "/no/such/dir/log", "folder '/no/such/dir'" },
    { "DEVQ_CPU_THREADS", "lots", "1..1024" },
    { "DEVQ_CPU_DEVICES", "-1", "0..64" },
    { "DEVQ_BACKEND", "cuda:x", "DEVQ_BACKEND='cuda:x'" },
};
#define NBAD (sizeof bad / sizeof bad[0])

static void expect_einval(const char *spec, int i)
{
    devq_device *dev = NULL;
    int r = devq_device_open(spec, &dev);
    char want[128];
    snprintf(want, sizeof want, "%s='%s'", bad[i].var, bad[i].value);
    ck_assert_msg(r == -EINVAL, "%s: devq_device_open(%s) = %d (%s), expected -EINVAL", want,
                  spec ? spec : "NULL", r, devq_errmsg());
    ck_assert_ptr_null(dev);
    ck_assert_msg(strstr(devq_errmsg(), want), "message '%s' does not name %s", devq_errmsg(), want);
    ck_assert_msg(strstr(devq_errmsg(), bad[i].says), "message '%s' does not say '%s'", devq_errmsg(),
                  bad[i].says);
}

START_TEST(malformed_is_einval_from_every_open)
{
    clear_env();
    setenv(bad[_i].var, bad[_i].value, 1);
    expect_einval(NULL, _i);
    expect_einval("cpu", _i);
    expect_einval(NULL, _i); /* and again: not only the first call */
}
END_TEST

/* The same values, well formed, open the device. */
START_TEST(well_formed_values_open)
{
    clear_env();
    setenv("DEVQ_MEM_BUDGET", "1536M", 1);
    setenv("DEVQ_MEM_GUARD", "yes", 1);
    setenv("DEVQ_TRACE_MAX", "1MiB", 1);
    setenv("DEVQ_TRACE", "/tmp/devq-test-env-trace.json", 1);
    setenv("DEVQ_CPU_THREADS", "2", 1);
    devq_device *dev = NULL;
    ck_assert_msg(devq_device_open(NULL, &dev) == 0, "%s", devq_errmsg());
    devq_device_close(dev);
    unsetenv("DEVQ_TRACE");
    unlink("/tmp/devq-test-env-trace.json");
}
END_TEST

/* "gpu" is one edit from "cpu": the message must not send a GPU user to
 * the cpu.  "cdua" is one edit from cuda, installed or not. */
START_TEST(backend_names)
{
    clear_env();
    devq_device *dev = NULL;
    setenv("DEVQ_BACKEND", "gpu", 1);
    ck_assert_int_eq(devq_device_open(NULL, &dev), -EINVAL);
    ck_assert_msg(!strstr(devq_errmsg(), "did you mean 'cpu'"), "%s", devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "cuda") && strstr(devq_errmsg(), "hip"), "%s", devq_errmsg());
    ck_assert_int_eq(devq_device_open("gpu", &dev), -ENODEV); /* a spec names a device */
    ck_assert_msg(!strstr(devq_errmsg(), "did you mean 'cpu'"), "%s", devq_errmsg());
    setenv("DEVQ_BACKEND", "cdua", 1);
    ck_assert_int_eq(devq_device_open(NULL, &dev), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "did you mean 'cuda'"), "%s", devq_errmsg());
    clear_env();
}
END_TEST

int env_test_seven(void *const *args, const devq_cpu_group *g);
int env_test_seven(void *const *args, const devq_cpu_group *g)
{
    (void)args;
    (void)g;
    return 7;
}

/* A positive return is a failure reported as -EIO; the message shows
 * what the kernel returned, not only the -5 it became. */
START_TEST(kernel_positive_return)
{
    clear_env();
    devq_device *dev;
    devq_queue *q;
    devq_kernel *k;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_msg(devq_kernel_load(dev, NULL, 0, "env_test_seven", &k) == 0, "%s", devq_errmsg());
    devq_launch l = { .global = { 1, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q, k, NULL, 0, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 5000000000ull), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "returned 7") && strstr(devq_errmsg(), "-EIO"), "%s", devq_errmsg());
    devq_kernel_destroy(k);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A C-library or libdevq function is never a kernel: loading one by
 * name is refused (it used to load, and crash when launched). */
START_TEST(library_functions_are_not_kernels)
{
    clear_env();
    devq_device *dev;
    devq_kernel *k = NULL;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    const char *names[] = {
#ifndef SANITIZED
        "printf",
#endif
        "gnu_get_libc_version",
        "devq_version",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(devq_kernel_load(dev, NULL, 0, names[i], &k), -EINVAL);
        ck_assert_ptr_null(k);
        ck_assert_msg(strstr(devq_errmsg(), names[i]) && strstr(devq_errmsg(), "not a kernel"), "%s",
                      devq_errmsg());
    }
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("env");
    TCase *tc = tcase_create("env");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, malformed_is_einval_from_every_open, 0, (int)NBAD);
    tcase_add_test(tc, well_formed_values_open);
    tcase_add_test(tc, backend_names);
    tcase_add_test(tc, kernel_positive_return);
    tcase_add_test(tc, library_functions_are_not_kernels);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
