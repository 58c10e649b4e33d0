/* SPDX-License-Identifier: MIT */
/* devq_stats_get keeps the DEVQ_0.1 layout for programs linked before
 * devq_stats grew (lib/device/stats.c): devq_stats_get@DEVQ_0.1 writes
 * no byte past signal_waits_native, the default version fills the whole
 * struct.  dlvsym asks for each version by name, as the dynamic linker
 * does for an old binary. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#include "../helpers/check_main.h"

typedef int (*stats_fn)(devq_device *, devq_stats *);

#define V01_SIZE (offsetof(devq_stats, signal_waits_native) + sizeof(uint64_t))

static stats_fn version(const char *v)
{
    void *self = dlopen("libdevq.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(self, "libdevq.so.1 is not loaded: %s", dlerror());
    stats_fn f = (stats_fn)dlvsym(self, "devq_stats_get", v);
    dlclose(self);
    return f;
}

START_TEST(old_layout_gets_old_bytes)
{
    stats_fn v01 = version("DEVQ_0.1");
    ck_assert_msg(v01, "devq_stats_get@DEVQ_0.1 is not exported: old programs would not load");
    devq_device *dev;
    ck_assert_int_eq(devq_device_open(NULL, &dev), 0);
    devq_queue *q;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, DEVQ_TIMEOUT_INFINITE), 0);

    /* An old program's struct, with whatever follows it in its memory. */
    unsigned char mem[sizeof(devq_stats) + 16];
    memset(mem, 0xA5, sizeof mem);
    ck_assert_int_eq(v01(dev, (devq_stats *)(void *)mem), 0);
    for (size_t i = V01_SIZE; i < sizeof mem; i++)
        ck_assert_msg(mem[i] == 0xA5,
                      "devq_stats_get@DEVQ_0.1 wrote byte %zu, past the DEVQ_0.1 struct (%zu)", i,
                      (size_t)V01_SIZE);
    devq_stats old;
    memcpy(&old, mem, V01_SIZE);
    ck_assert_uint_ge(old.batches_submitted, 1);
    ck_assert_uint_ge(old.batches_completed, 1);
    ck_assert_int_eq(v01(dev, NULL), -EINVAL);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "devq_stats_get"));
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

START_TEST(default_fills_the_whole_struct)
{
    stats_fn v04 = version("DEVQ_0.4");
    ck_assert_msg(v04, "devq_stats_get@DEVQ_0.4 is not exported");
    devq_device *dev;
    ck_assert_int_eq(devq_device_open(NULL, &dev), 0);
    devq_stats st;
    memset(&st, 0xA5, sizeof st);
    ck_assert_int_eq(v04(dev, &st), 0);
    ck_assert_uint_eq(st.batches_run_at_submit, 0); /* written: no channel work ran */
    memset(&st, 0xA5, sizeof st);
    ck_assert_int_eq(devq_stats_get(dev, &st), 0); /* what this program binds */
    ck_assert_uint_eq(st.batches_run_at_submit, 0);
    devq_device_close(dev);
}
END_TEST

int main(void)
{
    void *self = dlopen("libdevq.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!self) {
        printf("test_stats_abi: libdevq is linked statically: no symbol versions to test\n");
        return 77;
    }
    dlclose(self);
    Suite *su = suite_create("stats_abi");
    TCase *tc = tcase_create("versions");
    tcase_add_test(tc, old_layout_gets_old_bytes);
    tcase_add_test(tc, default_fills_the_whole_struct);
    suite_add_tcase(su, tc);
    return check_run_forked(su, "test_stats_abi");
}
