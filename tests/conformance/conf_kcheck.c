/* SPDX-License-Identifier: MIT */
/* Checked launches (issue 26): on a device with DEVQ_CAP_KERNEL_CHECK, a
 * devq_queue_exec that does not match the kernel's declared interface is
 * -EINVAL, recorded as the queue's sticky error, with one message shape
 * on every backend naming the kernel and the argument; a matching launch
 * still runs.  Devices without the bit skip these cases (said on stderr).
 * The kernels are conf_kernels.c's (declared for cpu there, sizes for the
 * emulated CUDA driver in conf_util.c, push constants in their .comp). */
#include "conf.h"

static int checks(devq_device *dev)
{
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(dev, &info), 0);
    if (info.caps & DEVQ_CAP_KERNEL_CHECK)
        return 1;
    fprintf(stderr, "kcheck: skipped: %s has no DEVQ_CAP_KERNEL_CHECK\n", info.backend);
    return 0;
}

struct fixture {
    devq_device *dev;
    devq_queue *q;
    devq_kernel *k;
    devq_buffer *b[2];
};

static int setup(struct fixture *f, const char *kernel)
{
    f->dev = conf_open();
    if (!checks(f->dev)) {
        devq_device_close(f->dev);
        return 0;
    }
    f->q = conf_queue(f->dev);
    f->k = conf_kernel(f->dev, kernel);
    f->b[0] = conf_buffer(f->dev, 64 * sizeof(float));
    f->b[1] = conf_buffer(f->dev, 64 * sizeof(float));
    return 1;
}

static void teardown(struct fixture *f)
{
    ck_assert_int_eq(devq_queue_finish(f->q, 10 * SEC), 0);
    devq_buffer_free(f->b[0], NULL);
    devq_buffer_free(f->b[1], NULL);
    devq_kernel_destroy(f->k);
    devq_queue_destroy(f->q);
    devq_device_close(f->dev);
}

/* The refused exec: -EINVAL, the message names the kernel and `want`
 * (the argument), the error is sticky until submit discards the batch,
 * and the queue then runs a matching scale launch correctly. */
static void refused(struct fixture *f, const devq_arg *args, size_t nargs, const char *want,
                    const char *want2)
{
    devq_launch l = conf_launch1(64, 1);
    int r = devq_queue_exec(f->q, f->k, args, nargs, &l);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", devq_errmsg());
    ck_assert_msg(r == -EINVAL, "exec returned %d: %s", r, msg);
    ck_assert_msg(strstr(msg, "devq_queue_exec: kernel '"), "message: %s", msg);
    ck_assert_msg(strstr(msg, want), "want '%s' in: %s", want, msg);
    ck_assert_msg(strstr(msg, want2), "want '%s' in: %s", want2, msg);
    /* Sticky: the next recording call returns it, submit discards. */
    ck_assert_int_eq(devq_queue_barrier(f->q), -EINVAL);
    ck_assert_int_eq(devq_queue_submit(f->q), -EINVAL);
    /* finish reports the discarded batch once, naming the cause. */
    r = devq_queue_finish(f->q, 10 * SEC);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), want), "finish: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_queue_finish(f->q, 10 * SEC), 0);
}

/* scale(x, 2.0f) on the first buffer, then read back: the matching
 * launch after a refused one runs as ever. */
static void matching_scale_runs(struct fixture *f)
{
    float host[64], two = 2.0f;
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    conf_upload(f->q, f->b[0], host, sizeof host);
    devq_arg a[] = { DEVQ_ARG_BUF(f->b[0], DEVQ_READ_WRITE), DEVQ_ARG_VAL(&two) };
    devq_launch l = conf_launch1(64, 1);
    ck_assert_msg(devq_queue_exec(f->q, f->k, a, 2, &l) == 0, "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(f->q), 0);
    conf_download(f->q, host, f->b[0], sizeof host);
    for (int i = 0; i < 64; i++)
        ck_assert_msg(host[i] == 2.0f * (float)i, "x[%d] = %g", i, (double)host[i]);
}

START_TEST(matching_launch_runs)
{
    struct fixture f;
    if (!setup(&f, "scale"))
        return;
    matching_scale_runs(&f);
    teardown(&f);
}
END_TEST

START_TEST(too_few_arguments)
{
    struct fixture f;
    if (!setup(&f, "scale"))
        return;
    devq_arg a[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ_WRITE) };
    refused(&f, a, 1, "takes 2 arguments, 1 was passed", "argument 1 (");
    devq_arg none[1];
    refused(&f, none, 0, "takes 2 arguments, 0 were passed", "argument 0 (");
    matching_scale_runs(&f);
    teardown(&f);
}
END_TEST

START_TEST(too_many_arguments)
{
    struct fixture f;
    if (!setup(&f, "scale"))
        return;
    float two = 2.0f;
    devq_arg a[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ_WRITE), DEVQ_ARG_VAL(&two), DEVQ_ARG_VAL(&two) };
    refused(&f, a, 3, "takes 2 arguments, 3 were passed", "argument 2 is one too many");
    matching_scale_runs(&f);
    teardown(&f);
}
END_TEST

START_TEST(wrong_kind)
{
    struct fixture f;
    if (!setup(&f, "scale"))
        return;
    float two = 2.0f;
    /* A buffer where the kernel takes its 4-byte value. */
    devq_arg a[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ_WRITE), DEVQ_ARG_BUF(f.b[1], DEVQ_READ) };
    refused(&f, a, 2, "argument 1: the kernel declares a 4-byte value", "a buffer was passed");
    /* A value where it takes a buffer.  Positional backends (cpu, cuda)
     * refuse the first argument; vulkan matches buffers to bindings and
     * values to push-constant members as two sequences (devq-vulkan(7)),
     * so the first value is the float and the second has no member: the
     * buffer binding is what is left. */
    uint32_t v = 7;
    devq_arg c[] = { DEVQ_ARG_VAL(&v), DEVQ_ARG_VAL(&two) };
    devq_device_info info;
    ck_assert_int_eq(devq_device_info_get(f.dev, &info), 0);
    if (!strcmp(info.backend, "vulkan"))
        refused(&f, c, 2, "argument 1: the kernel declares a buffer", "a 4-byte value was passed");
    else
        refused(&f, c, 2, "argument 0: the kernel declares ", "a 4-byte value was passed");
    matching_scale_runs(&f);
    teardown(&f);
}
END_TEST

START_TEST(wrong_value_size)
{
    struct fixture f;
    if (!setup(&f, "scale"))
        return;
    double two = 2.0;
    devq_arg a[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ_WRITE), DEVQ_ARG_VAL(&two) };
    refused(&f, a, 2, "argument 1: the kernel declares a 4-byte value", "an 8-byte value was passed");
    uint16_t half = 2;
    devq_arg c[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ_WRITE), DEVQ_ARG_VAL(&half) };
    refused(&f, c, 2, "argument 1: the kernel declares a 4-byte value", "a 2-byte value was passed");
    matching_scale_runs(&f);
    teardown(&f);
}
END_TEST

/* slow_copy(src, dst, ms, n) reads two 4-byte values (8 bytes of push
 * constants on vulkan): a short last value leaves bytes the kernel reads
 * unset, refused at that argument; the full launch copies. */
START_TEST(short_push_constants)
{
    struct fixture f;
    if (!setup(&f, "slow_copy"))
        return;
    uint32_t ms = 0, n = 64 * sizeof(float);
    uint16_t short_n = 16;
    devq_arg a[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ), DEVQ_ARG_BUF(f.b[1], DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                     DEVQ_ARG_VAL(&short_n) };
    refused(&f, a, 4, "argument 3: the kernel declares a 4-byte value", "a 2-byte value was passed");
    float src[64], dst[64];
    for (int i = 0; i < 64; i++)
        src[i] = (float)(3 * i);
    conf_upload(f.q, f.b[0], src, sizeof src);
    devq_arg ok[] = { DEVQ_ARG_BUF(f.b[0], DEVQ_READ), DEVQ_ARG_BUF(f.b[1], DEVQ_WRITE), DEVQ_ARG_VAL(&ms),
                      DEVQ_ARG_VAL(&n) };
    devq_launch l = conf_launch1(1, 1);
    ck_assert_msg(devq_queue_exec(f.q, f.k, ok, 4, &l) == 0, "%s", devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(f.q), 0);
    conf_download(f.q, dst, f.b[1], sizeof dst);
    ck_assert_int_eq(memcmp(src, dst, sizeof src), 0);
    teardown(&f);
}
END_TEST

Suite *conf_kcheck_suite(void)
{
    Suite *s = suite_create("kcheck");
    TCase *tc = tcase_create("kcheck");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, matching_launch_runs);
    tcase_add_test(tc, too_few_arguments);
    tcase_add_test(tc, too_many_arguments);
    tcase_add_test(tc, wrong_kind);
    tcase_add_test(tc, wrong_value_size);
    tcase_add_test(tc, short_push_constants);
    suite_add_tcase(s, tc);
    return s;
}
