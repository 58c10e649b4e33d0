/* SPDX-License-Identifier: MIT */
/* The device registry through the public API: one shared instance per
 * (backend, ordinal), race-free first open, retryable failed opens, spec
 * errors, DEVQ_BACKEND preferences and the backend report.  Uses the
 * "fake" test plugin, whose device_open counts its calls and can be told
 * to fail or to sleep (tests/plugins/fake.c). */
#include "config.h"
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include "../plugins/testdir.h"
#include "../helpers/check_main.h"

struct fake_knobs {
    _Atomic int *open_calls, *close_calls, *fail_opens, *open_delay_us;
};

static char fake_path[1100];

/* A folder holding the fake backend, on DEVQ_PLUGIN_PATH. */
static void use_fake(void)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    snprintf(fake_path, sizeof fake_path, "%s/devq-fake.so", dir);
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    unsetenv("DEVQ_BACKEND");
}

/* The knobs of the fake instance libdevq loaded (call after a devq call). */
static struct fake_knobs fake_knobs(void)
{
    void *h = dlopen(fake_path, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(h != NULL, "fake plugin not loaded: %s", dlerror());
    struct fake_knobs k = {
        dlsym(h, "devq_fake_open_calls"),
        dlsym(h, "devq_fake_close_calls"),
        dlsym(h, "devq_fake_fail_opens"),
        dlsym(h, "devq_fake_open_delay_us"),
    };
    ck_assert(k.open_calls && k.close_calls && k.fail_opens && k.open_delay_us);
    dlclose(h); /* drops only our reference */
    return k;
}

static void expect_error(const char *spec, int err, const char *msg_part)
{
    devq_device *d = (devq_device *)0x1;
    int r = devq_device_open(spec, &d);
    ck_assert_msg(r == err, "open('%s') = %d, want %d (%s)", spec ? spec : "NULL", r, err, devq_errmsg());
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(devq_errmsg(), msg_part), "open('%s'): '%s' lacks '%s'", spec ? spec : "NULL",
                  devq_errmsg(), msg_part);
}

static devq_device *open_ok(const char *spec)
{
    devq_device *d = NULL;
    int r = devq_device_open(spec, &d);
    ck_assert_msg(r == 0, "open('%s') = %d: %s", spec ? spec : "NULL", r, devq_errmsg());
    ck_assert_ptr_nonnull(d);
    return d;
}

static devq_device_info info_of(devq_device *d)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(d, &info), 0);
    return info;
}

/* ---- sharing and lifetime ---- */

START_TEST(open_shares_one_instance_per_ordinal)
{
    use_fake();
    devq_device *a = open_ok("fake:0");
    struct fake_knobs k = fake_knobs();
    devq_device *b = open_ok("fake"); /* "fake" is "fake:0" */
    devq_device *c = open_ok("fake:1");
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_ne(a, c);
    ck_assert_int_eq(*k.open_calls, 2);
    devq_device_close(a);
    ck_assert_int_eq(*k.close_calls, 0); /* b still holds it */
    ck_assert_str_eq(info_of(b).name, "fake device zero");
    devq_device_close(b);
    ck_assert_int_eq(*k.close_calls, 1);
    devq_device_close(c);
    ck_assert_int_eq(*k.close_calls, 2);

    /* After the last close the next open opens afresh. */
    devq_device *d = open_ok("fake:0");
    ck_assert_int_eq(*k.open_calls, 3);
    devq_device_close(d);
    devq_device_close(NULL); /* harmless */
}
END_TEST

START_TEST(info_reports_plugin_fields_and_identity)
{
    use_fake();
    devq_device *d = open_ok("fake:1");
    devq_device_info info = info_of(d);
    ck_assert_str_eq(info.backend, "fake");
    ck_assert_int_eq(info.ordinal, 1);
    ck_assert_str_eq(info.name, "fake device one");
    ck_assert_uint_eq(info.total_memory, 1ull << 30);
    ck_assert_uint_eq(info.caps, DEVQ_CAP_HOST_VISIBLE);
    ck_assert_uint_eq(info.compute_units, 1);
    ck_assert_int_eq(devq_device_info_get(d, NULL), -EINVAL);
    ck_assert_int_eq(devq_device_info_get(NULL, &info), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "devq_device_info_get"));
    devq_device_close(d);
}
END_TEST

#define RACERS 16
#define ROUNDS 100

struct race {
    pthread_barrier_t start;
    const char *spec;
    devq_device *got[RACERS];
    int rc[RACERS];
};
struct racer {
    struct race *race;
    int i;
};

static void *racer_main(void *p)
{
    struct racer *me = p;
    pthread_barrier_wait(&me->race->start);
    me->race->rc[me->i] = devq_device_open(me->race->spec, &me->race->got[me->i]);
    return NULL;
}

static void run_race(struct race *race)
{
    pthread_t t[RACERS];
    struct racer who[RACERS];
    pthread_barrier_init(&race->start, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) {
        who[i] = (struct racer){ race, i };
        ck_assert_int_eq(pthread_create(&t[i], NULL, racer_main, &who[i]), 0);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&race->start);
}

START_TEST(racing_first_opens_share_one_plugin_open)
{
    use_fake();
    devq_device_close(open_ok("fake:1")); /* load, to reach the knobs */
    struct fake_knobs k = fake_knobs();
    *k.open_delay_us = 200; /* keep the first open in flight */
    for (int round = 0; round < ROUNDS; round++) {
        int opens = *k.open_calls, closes = *k.close_calls;
        struct race race = { .spec = "fake:0" };
        run_race(&race);
        for (int i = 0; i < RACERS; i++) {
            ck_assert_msg(race.rc[i] == 0, "round %d racer %d: %s", round, i, devq_errmsg());
            ck_assert_ptr_eq(race.got[i], race.got[0]);
        }
        ck_assert_msg(*k.open_calls == opens + 1, "round %d: device_open ran %d times", round,
                      *k.open_calls - opens);
        for (int i = 0; i < RACERS; i++)
            devq_device_close(race.got[i]);
        ck_assert_int_eq(*k.close_calls, closes + 1);
    }
}
END_TEST

START_TEST(failed_open_leaves_slot_retryable)
{
    use_fake();
    devq_device_close(open_ok("fake:1"));
    struct fake_knobs k = fake_knobs();
    int opens = *k.open_calls;
    *k.fail_opens = 1;
    expect_error("fake:0", -EIO, "fake:0: device_open failed on request");
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "devq_device_open('fake:0')"));
    devq_device *d = open_ok("fake:0");
    ck_assert_int_eq(*k.open_calls, opens + 2);
    ck_assert_str_eq(info_of(d).name, "fake device zero");
    devq_device_close(d);
}
END_TEST

START_TEST(failed_open_under_race_fails_once_then_shares)
{
    use_fake();
    devq_device_close(open_ok("fake:1"));
    struct fake_knobs k = fake_knobs();
    *k.open_delay_us = 500;
    for (int round = 0; round < 20; round++) {
        int opens = *k.open_calls;
        *k.fail_opens = 1;
        struct race race = { .spec = "fake:0" };
        run_race(&race);
        int failed = 0;
        devq_device *shared = NULL;
        for (int i = 0; i < RACERS; i++) {
            if (race.rc[i] < 0) {
                ck_assert_int_eq(race.rc[i], -EIO);
                failed++;
                continue;
            }
            if (!shared)
                shared = race.got[i];
            ck_assert_ptr_eq(race.got[i], shared);
        }
        /* The failing open is the only failure; a waiter then reopened. */
        ck_assert_int_eq(failed, 1);
        ck_assert_int_eq(*k.open_calls, opens + 2);
        for (int i = 0; i < RACERS; i++)
            if (race.rc[i] == 0)
                devq_device_close(race.got[i]);
    }
}
END_TEST

/* ---- specs ---- */

START_TEST(spec_errors_are_named)
{
    use_fake();
    ck_assert_int_eq(devq_device_open("fake", NULL), -EINVAL);
    expect_error("", -EINVAL, "empty device spec");
    expect_error("fake:x", -EINVAL, "ordinal 'x' is not a non-negative integer");
    expect_error("fake:-1", -EINVAL, "devq_device_open('fake:-1')");
    expect_error("fake:", -EINVAL, "missing ordinal");
    expect_error("Fake", -EINVAL, "names are [a-z0-9_]");
    expect_error("fake:7", -ENODEV, "no device fake:7; fake has 2 devices (fake:0, fake:1)");
    expect_error("nosuch", -ENODEV, "unknown backend 'nosuch' (have: cpu, fake");
    expect_error("fkae:0", -ENODEV, "unknown backend 'fkae'; did you mean 'fake'? (have: cpu, fake");
    /* A backend devq knows whose plugin is not on the path (only the
     * fake one is): not installed, never "did you mean" the same name. */
    expect_error("cuda", -ENODEV, "backend 'cuda' is not installed (have: cpu, fake");
    ck_assert_msg(strstr(devq_errmsg(), "no devq-cuda.so was found in DEVQ_PLUGIN_PATH") &&
                      !strstr(devq_errmsg(), "did you mean"),
                  "%s", devq_errmsg());
}
END_TEST

START_TEST(spec_past_the_last_cpu_lists_what_exists)
{
    use_fake();
    unsetenv("DEVQ_CPU_DEVICES");
    expect_error("cpu:99", -ENODEV, "devq_device_open('cpu:99'): no device cpu:99; cpu has 1 device (cpu:0)");
}
END_TEST

START_TEST(unknown_backend_explains_a_skipped_file)
{
    char *dir = testdir_new();
    testdir_link(dir, "future");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    expect_error("future:0", -ENODEV, "devq-future.so was skipped: plugin ABI version 99");
}
END_TEST

START_TEST(missing_driver_reason_is_given)
{
    use_fake();
    setenv("DEVQ_FAKE_DRIVER_MISSING", "1", 1);
    expect_error("fake:0", -ENODEV, "fake: libfake.so.1 not found");
    setenv("DEVQ_BACKEND", "fake", 1);
    expect_error(NULL, -ENODEV, "fake: libfake.so.1 not found");
    /* A preference list falls through to the next backend that works. */
    setenv("DEVQ_BACKEND", "fake,cpu", 1);
    devq_device *d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "cpu");
    devq_device_close(d);
}
END_TEST

/* ---- DEVQ_BACKEND ---- */

START_TEST(default_prefers_an_accelerator_over_cpu)
{
    use_fake();
    devq_device *d = open_ok(NULL);
    devq_device_info info = info_of(d);
    ck_assert_str_eq(info.backend, "fake");
    ck_assert_int_eq(info.ordinal, 0);
    devq_device_close(d);
}
END_TEST

/* 1 when a backend other than cpu has a device (say, one installed in
 * $(libdir)/devq on this machine). */
static int other_backend_has_device(void)
{
    devq_backend_report r[64];
    size_t n = 0;
    ck_assert_int_eq(devq_backends_report(r, 64, &n), 0);
    for (size_t i = 0; i < n && i < 64; i++)
        if (r[i].status == 0 && r[i].devices && strcmp(r[i].name, "cpu"))
            return 1;
    return 0;
}

START_TEST(default_without_plugins_is_cpu)
{
    /* An empty folder, not an unset variable: run from the build tree with
     * DEVQ_PLUGIN_PATH unset, libdevq finds the plugins built beside it. */
    setenv("DEVQ_PLUGIN_PATH", testdir_new(), 1);
    unsetenv("DEVQ_BACKEND");
    if (other_backend_has_device())
        setenv("DEVQ_BACKEND", "cpu", 1); /* an installed accelerator would win */
    devq_device *d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "cpu");
    ck_assert_ptr_eq(d, open_ok("cpu:0"));
    devq_device_close(d);
    devq_device_close(d);
}
END_TEST

START_TEST(backend_list_picks_in_order_and_ordinals)
{
    use_fake();
    setenv("DEVQ_BACKEND", " cpu , fake", 1);
    devq_device *d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "cpu");
    devq_device_close(d);

    setenv("DEVQ_BACKEND", "fake:1,cpu", 1);
    d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "fake");
    ck_assert_int_eq(info_of(d).ordinal, 1);
    devq_device_close(d);

    /* fake:5 does not exist: the list moves on. */
    setenv("DEVQ_BACKEND", "fake:5,cpu", 1);
    d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "cpu");
    devq_device_close(d);
}
END_TEST

START_TEST(backend_exclusion)
{
    use_fake();
    setenv("DEVQ_BACKEND", "^fake", 1);
    devq_device *d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "cpu");
    devq_device_close(d);

    setenv("DEVQ_BACKEND", "^cpu", 1);
    d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "fake");
    devq_device_close(d);

    setenv("DEVQ_BACKEND", "^fake,^cpu", 1);
    expect_error(NULL, -ENODEV, "DEVQ_BACKEND='^fake,^cpu': no device");

    setenv("DEVQ_BACKEND", "fake,^fake", 1);
    expect_error(NULL, -ENODEV, "every listed backend is excluded");

    /* An explicit spec ignores DEVQ_BACKEND. */
    d = open_ok("fake:1");
    devq_device_close(d);
}
END_TEST

START_TEST(backend_typo_suggests_nearest)
{
    use_fake();
    setenv("DEVQ_BACKEND", "fkae", 1);
    expect_error(NULL, -EINVAL,
                 "DEVQ_BACKEND='fkae': unknown backend 'fkae'; did you mean 'fake'? (have: cpu, fake");
    ck_assert_ptr_eq(strstr(devq_errmsg(), "DEVQ_BACKEND"), devq_errmsg()); /* leads with it */
    setenv("DEVQ_BACKEND", "cpu,^fak", 1); /* a typo in an exclusion is an error too */
    expect_error(NULL, -EINVAL, "unknown backend 'fak'; did you mean 'fake'?");
    setenv("DEVQ_BACKEND", "zzzzzz", 1);
    expect_error(NULL, -EINVAL, "DEVQ_BACKEND='zzzzzz': unknown backend 'zzzzzz' (have: cpu, fake");
    setenv("DEVQ_BACKEND", "fake:x", 1);
    expect_error(NULL, -EINVAL, "DEVQ_BACKEND='fake:x': entry 'fake:x'");
}
END_TEST

START_TEST(blank_backend_list_is_the_default)
{
    use_fake();
    setenv("DEVQ_BACKEND", " , ", 1);
    devq_device *d = open_ok(NULL);
    ck_assert_str_eq(info_of(d).backend, "fake");
    devq_device_close(d);
}
END_TEST

START_TEST(malformed_log_variable_is_reported_at_open)
{
    use_fake();
    setenv("DEVQ_LOG", "loud", 1);
    expect_error("fake:0", -EINVAL, "DEVQ_LOG='loud'");
}
END_TEST

/* ---- report ---- */

START_TEST(backends_report_counts_and_fills)
{
    char *dir = testdir_new();
    testdir_link(dir, "fake");
    testdir_link(dir, "nullop");
    setenv("DEVQ_PLUGIN_PATH", dir, 1);
    size_t n = 0;
    ck_assert_int_eq(devq_backends_report(NULL, 0, &n), 0);
    ck_assert_uint_ge(n, 3); /* cpu, fake, nullop, then any installed ones */
    ck_assert_int_eq(devq_backends_report(NULL, 2, &n), -EINVAL);

    devq_backend_report r[3];
    memset(r, 0x5a, sizeof r);
    size_t n2 = 0;
    ck_assert_int_eq(devq_backends_report(r, 2, &n2), 0); /* short buffer: filled, total */
    ck_assert_uint_eq(n2, n);
    ck_assert_str_eq(r[0].path, "(built in)");
    ck_assert_str_eq(r[0].name, "cpu");
    ck_assert_str_eq(r[1].name, "fake");
    ck_assert_uint_eq(r[1].devices, 2);
    ck_assert_int_eq(r[1].status, 0);
    ck_assert_str_eq(r[1].reason, "");
    ck_assert_uint_eq((unsigned char)r[2].name[0], 0x5a); /* untouched */
    ck_assert_int_eq(devq_backends_report(r, 3, NULL), 0);
    ck_assert_int_eq(r[2].status, -EINVAL);
    ck_assert_ptr_nonnull(strstr(r[2].reason, "required op 'event_wait' is NULL"));
}
END_TEST

static Suite *device_suite(void)
{
    Suite *s = suite_create("device");
    TCase *t = tcase_create("registry");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, open_shares_one_instance_per_ordinal);
    tcase_add_test(t, info_reports_plugin_fields_and_identity);
    tcase_add_test(t, racing_first_opens_share_one_plugin_open);
    tcase_add_test(t, failed_open_leaves_slot_retryable);
    tcase_add_test(t, failed_open_under_race_fails_once_then_shares);
    suite_add_tcase(s, t);

    t = tcase_create("spec");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_add_test(t, spec_errors_are_named);
    tcase_add_test(t, spec_past_the_last_cpu_lists_what_exists);
    tcase_add_test(t, unknown_backend_explains_a_skipped_file);
    tcase_add_test(t, missing_driver_reason_is_given);
    tcase_add_test(t, malformed_log_variable_is_reported_at_open);
    suite_add_tcase(s, t);

    t = tcase_create("preference");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_add_test(t, default_prefers_an_accelerator_over_cpu);
    tcase_add_test(t, default_without_plugins_is_cpu);
    tcase_add_test(t, backend_list_picks_in_order_and_ordinals);
    tcase_add_test(t, backend_exclusion);
    tcase_add_test(t, backend_typo_suggests_nearest);
    tcase_add_test(t, blank_backend_list_is_the_default);
    suite_add_tcase(s, t);

    t = tcase_create("report");
    tcase_add_checked_fixture(t, NULL, testdir_cleanup);
    tcase_add_test(t, backends_report_counts_and_fills);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return check_run_forked(device_suite(), "test_device");
}
