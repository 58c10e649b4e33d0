/* SPDX-License-Identifier: MIT */
/* lib/queue/kernel_args.c without a backend (internal API): the
 * interface lib keeps from a plugin's kernel_iface, and every rule of
 * devq_queue_exec's check, on positional interfaces (cpu, cuda) and on
 * vulkan's (bindings and push-constant members, packed at 4-byte
 * alignment, covering the block the kernel reads), with the exact
 * messages devq_queue_exec(3) documents. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "kernel.h"
#include "kernel_args.h"
#include "queue.h"
#include "../helpers/check_main.h"

static int fake_buffer_storage;
#define BUF ((devq_buffer *)&fake_buffer_storage)
#define A_BUF ((devq_arg){ .buf = BUF, .access = DEVQ_READ_WRITE })
#define A_VAL(n) ((devq_arg){ .value = value_bytes, .size = (n) })
static const unsigned char value_bytes[64];

static struct devq_pl_param P_BUF = { .kind = DEVQ_PL_PARAM_BUFFER, .offset = UINT32_MAX };
static struct devq_pl_param p_val(uint32_t n, uint32_t off)
{
    return (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_VALUE, .size = n, .offset = off };
}
static struct devq_pl_param p_bytes(uint32_t n)
{
    return (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_BYTES, .size = n, .offset = UINT32_MAX };
}

static devq_kernel kernel(uint32_t flags, const struct devq_pl_param *p, uint32_t n, uint32_t block)
{
    devq_kernel k;
    memset(&k, 0, sizeof k);
    strcpy(k.name, "saxpy");
    k.checked = 1;
    k.iface =
        (struct devq_pl_kernel_iface){ .flags = flags, .nparams = n, .params = p, .value_block = block };
    return k;
}

/* -EINVAL with exactly `want` as devq_errmsg(). */
static void refused(const devq_kernel *k, const devq_arg *a, size_t n, const char *want)
{
    int r = devq__kernel_args_check(k, a, n, "devq_queue_exec");
    ck_assert_msg(r == -EINVAL, "returned %d for '%s'", r, want);
    ck_assert_str_eq(devq_errmsg(), want);
}

static void accepted(const devq_kernel *k, const devq_arg *a, size_t n)
{
    int r = devq__kernel_args_check(k, a, n, "devq_queue_exec");
    ck_assert_msg(r == 0, "refused: %s", devq_errmsg());
}

START_TEST(unchecked_kernel_takes_anything)
{
    devq_kernel k = kernel(DEVQ_PL_IFACE_POSITIONAL, NULL, 0, 0);
    k.checked = 0;
    devq_arg a[] = { A_BUF, A_VAL(3) };
    accepted(&k, a, 2);
    accepted(&k, NULL, 0);
}
END_TEST

START_TEST(positional_counts)
{
    struct devq_pl_param p[] = { p_val(4, UINT32_MAX), P_BUF, P_BUF };
    devq_kernel k = kernel(DEVQ_PL_IFACE_POSITIONAL, p, 3, 0);
    devq_arg a[] = { A_VAL(4), A_BUF, A_BUF, A_BUF };
    accepted(&k, a, 3);
    refused(&k, a, 2,
            "devq_queue_exec: kernel 'saxpy' takes 3 arguments, 2 were passed: "
            "argument 2 (a buffer) is missing");
    refused(&k, a, 1,
            "devq_queue_exec: kernel 'saxpy' takes 3 arguments, 1 was passed: "
            "argument 1 (a buffer) is missing");
    refused(&k, a, 4,
            "devq_queue_exec: kernel 'saxpy' takes 3 arguments, 4 were passed: "
            "argument 3 is one too many");
    devq_kernel none = kernel(DEVQ_PL_IFACE_POSITIONAL, NULL, 0, 0);
    accepted(&none, NULL, 0);
    refused(&none, a, 1,
            "devq_queue_exec: kernel 'saxpy' takes 0 arguments, 1 was passed: "
            "argument 0 is one too many");
}
END_TEST

START_TEST(positional_kinds_and_sizes)
{
    struct devq_pl_param p[] = { p_val(4, UINT32_MAX), P_BUF, p_val(8, UINT32_MAX) };
    devq_kernel k = kernel(DEVQ_PL_IFACE_POSITIONAL, p, 3, 0);
    devq_arg wrong_kind[] = { A_VAL(4), A_BUF, A_BUF };
    refused(&k, wrong_kind, 3,
            "devq_queue_exec: kernel 'saxpy' argument 2: the kernel declares "
            "an 8-byte value, a buffer was passed");
    devq_arg value_for_buffer[] = { A_VAL(4), A_VAL(8), A_VAL(8) };
    refused(&k, value_for_buffer, 3,
            "devq_queue_exec: kernel 'saxpy' argument 1: the kernel "
            "declares a buffer, an 8-byte value was passed");
    devq_arg wrong_size[] = { A_VAL(2), A_BUF, A_VAL(8) };
    refused(&k, wrong_size, 3,
            "devq_queue_exec: kernel 'saxpy' argument 0: the kernel declares "
            "a 4-byte value, a 2-byte value was passed");
    devq_arg ok[] = { A_VAL(4), A_BUF, A_VAL(8) };
    accepted(&k, ok, 3);
}
END_TEST

/* cuFuncGetParamInfo gives sizes only: a pointer-sized parameter takes a
 * buffer or a value of that size, any other only a value. */
START_TEST(bytes_params)
{
    struct devq_pl_param p[] = { p_bytes(sizeof(void *)), p_bytes(4), p_bytes(16) };
    devq_kernel k = kernel(DEVQ_PL_IFACE_POSITIONAL, p, 3, 0);
    devq_arg buf_first[] = { A_BUF, A_VAL(4), A_VAL(16) };
    accepted(&k, buf_first, 3);
    devq_arg val_first[] = { A_VAL(sizeof(void *)), A_VAL(4), A_VAL(16) };
    accepted(&k, val_first, 3);
    devq_arg short_first[] = { A_VAL(4), A_VAL(4), A_VAL(16) };
    refused(&k, short_first, 3,
            "devq_queue_exec: kernel 'saxpy' argument 0: the kernel declares "
            "an 8-byte parameter (a buffer or an 8-byte value), a 4-byte value "
            "was passed");
    devq_arg buf_second[] = { A_BUF, A_BUF, A_VAL(16) };
    refused(&k, buf_second, 3,
            "devq_queue_exec: kernel 'saxpy' argument 1: the kernel declares "
            "a 4-byte value, a buffer was passed");
    devq_arg big[] = { A_BUF, A_VAL(4), A_VAL(18) };
    refused(&k, big, 3,
            "devq_queue_exec: kernel 'saxpy' argument 2: the kernel declares "
            "a 16-byte value, an 18-byte value was passed");
}
END_TEST

/* vulkan: bindings 0.. and push-constant members, two sequences each in
 * argument order, so a buffer may come after a value. */
START_TEST(sequences_match_in_any_interleaving)
{
    /* layout(push_constant) { float a; uint16_t h; uint n; } at 0, 4, 8 */
    struct devq_pl_param p[] = { P_BUF, p_val(4, 0), P_BUF, p_val(2, 4), p_val(4, 8) };
    devq_kernel k = kernel(0, p, 5, 12);
    devq_arg a[] = { A_VAL(4), A_BUF, A_VAL(2), A_BUF, A_VAL(4) };
    accepted(&k, a, 5);
    devq_arg b[] = { A_BUF, A_BUF, A_VAL(4), A_VAL(2), A_VAL(4) };
    accepted(&k, b, 5);
    devq_arg three_bufs[] = { A_BUF, A_BUF, A_BUF, A_VAL(2), A_VAL(4) };
    refused(&k, three_bufs, 5,
            "devq_queue_exec: kernel 'saxpy' argument 2: the kernel declares "
            "a 4-byte value, a buffer was passed");
    devq_arg four_vals[] = { A_BUF, A_VAL(4), A_VAL(2), A_VAL(4), A_VAL(4) };
    refused(&k, four_vals, 5,
            "devq_queue_exec: kernel 'saxpy' argument 4: the kernel declares "
            "a buffer, a 4-byte value was passed");
    devq_arg wrong_size[] = { A_BUF, A_BUF, A_VAL(4), A_VAL(4), A_VAL(4) };
    refused(&k, wrong_size, 5,
            "devq_queue_exec: kernel 'saxpy' argument 3: the kernel declares "
            "a 2-byte value, a 4-byte value was passed");
    devq_arg missing[] = { A_VAL(4), A_BUF, A_VAL(2), A_VAL(4) };
    refused(&k, missing, 4,
            "devq_queue_exec: kernel 'saxpy' takes 5 arguments, 4 were passed: "
            "argument 4 (a buffer) is missing");
    devq_arg missing_value[] = { A_BUF, A_BUF, A_VAL(4), A_VAL(2) };
    refused(&k, missing_value, 4,
            "devq_queue_exec: kernel 'saxpy' takes 5 arguments, 4 were "
            "passed: argument 4 (a 4-byte value) is missing");
}
END_TEST

/* devq-vulkan(7): value bytes are packed at 4-byte alignment in argument
 * order; a member the packing does not land on is refused. */
START_TEST(sequences_offsets_follow_the_packing)
{
    /* { uint16_t h; uint n; } with n at 4: packs at 0, then 4 */
    struct devq_pl_param good[] = { p_val(2, 0), p_val(4, 4) };
    devq_kernel k = kernel(0, good, 2, 8);
    devq_arg a[] = { A_VAL(2), A_VAL(4) };
    accepted(&k, a, 2);
    /* { uint16_t a; uint16_t b; } at 0 and 2: the packing puts b at 4 */
    struct devq_pl_param tight[] = { p_val(2, 0), p_val(2, 2) };
    devq_kernel t = kernel(0, tight, 2, 4);
    devq_arg b[] = { A_VAL(2), A_VAL(2) };
    refused(&t, b, 2,
            "devq_queue_exec: kernel 'saxpy' argument 1: the kernel reads a value at "
            "push-constant byte 2, the arguments before it pack this one at byte 4 "
            "(values pack at multiples of 4, devq-vulkan(7))");
    /* Offsets unknown (UINT32_MAX): only sizes are checked. */
    struct devq_pl_param loose[] = { p_val(2, UINT32_MAX), p_val(2, UINT32_MAX) };
    devq_kernel l = kernel(0, loose, 2, 0);
    accepted(&l, b, 2);
}
END_TEST

/* One value may cover several members (a C struct for the whole block,
 * as conformance's oracle_op passes), and a value touching no member is
 * padding: std430 puts an 8-byte member after a 4-byte one at byte 8,
 * while values pack at multiples of 4 (devq-vulkan(7)). */
START_TEST(sequences_struct_and_padding)
{
    struct devq_pl_param whole[] = { P_BUF, p_val(12, 0), p_val(12, 12), p_val(4, 24), p_val(4, 28) };
    devq_kernel k = kernel(0, whole, 5, 32);
    devq_arg one[] = { A_BUF, A_VAL(32) };
    accepted(&k, one, 2);
    devq_arg split[] = { A_BUF, A_VAL(24), A_VAL(8) };
    accepted(&k, split, 3);
    devq_arg across[] = { A_BUF, A_VAL(16), A_VAL(16) };
    refused(&k, across, 3,
            "devq_queue_exec: kernel 'saxpy' argument 1: the kernel declares a 12-byte "
            "value, a 16-byte value was passed");
    struct devq_pl_param padded[] = { p_val(4, 0), p_val(8, 8) };
    devq_kernel d = kernel(0, padded, 2, 16);
    devq_arg with_pad[] = { A_VAL(4), A_VAL(4), A_VAL(8) };
    accepted(&d, with_pad, 3);
    devq_arg no_pad[] = { A_VAL(4), A_VAL(8) };
    refused(&d, no_pad, 2,
            "devq_queue_exec: kernel 'saxpy' argument 1: an 8-byte value packed at "
            "push-constant byte 4 does not cover whole members of the kernel's 16-byte "
            "block (values pack at multiples of 4: a 4-byte value before an 8-byte member "
            "needs a 4-byte padding argument, devq-vulkan(7))");
}
END_TEST

/* "short push constants": the packed value bytes end before the block
 * the kernel reads (here a member past the last one the arguments fill,
 * as padding or an unused tail would leave). */
START_TEST(sequences_short_push_constants)
{
    struct devq_pl_param p[] = { P_BUF, p_val(4, 0), p_val(4, 4) };
    devq_kernel k = kernel(0, p, 3, 16);
    devq_arg a[] = { A_BUF, A_VAL(4), A_VAL(4) };
    refused(&k, a, 3,
            "devq_queue_exec: kernel 'saxpy' argument 2: the kernel reads 16 bytes of "
            "push constants, the value arguments end at byte 8");
    k.iface.value_block = 8;
    accepted(&k, a, 3);
    struct devq_pl_param only_buf[] = { P_BUF };
    devq_kernel b = kernel(0, only_buf, 1, 4);
    devq_arg c[] = { A_BUF };
    refused(&b, c, 1,
            "devq_queue_exec: kernel 'saxpy': the kernel reads 4 bytes of push "
            "constants, no value argument was passed");
}
END_TEST

/* ---- devq__kernel_iface_load: the plugin's answer is outside input ---- */

static int iface_rc;
static struct devq_pl_kernel_iface iface_out;
static int fake_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *out)
{
    (void)k;
    if (iface_rc == 0)
        *out = iface_out;
    return iface_rc;
}

static int load(devq_kernel *k, struct devq_device *dev, struct devq_backend_ops *ops)
{
    memset(dev, 0, sizeof *dev);
    memset(k, 0, sizeof *k);
    ops->kernel_iface = fake_iface;
    dev->ops = ops;
    strcpy(dev->info.backend, "fake");
    k->dev = dev;
    strcpy(k->name, "saxpy");
    return devq__kernel_iface_load(k, "devq_kernel_load");
}

START_TEST(iface_load_copies_and_validates)
{
    static struct devq_backend_ops ops;
    static struct devq_device dev;
    devq_kernel k;
    struct devq_pl_param p[] = { P_BUF, p_val(4, UINT32_MAX) };

    iface_rc = -ENOTSUP; /* unknown interface: unchecked */
    ck_assert_int_eq(load(&k, &dev, &ops), 0);
    ck_assert_int_eq(k.checked, 0);

    iface_rc = 0;
    iface_out = (struct devq_pl_kernel_iface){ .flags = DEVQ_PL_IFACE_POSITIONAL, .nparams = 2, .params = p };
    ck_assert_int_eq(load(&k, &dev, &ops), 0);
    ck_assert_int_eq(k.checked, 1);
    ck_assert_ptr_ne(k.iface.params, p); /* lib's own copy */
    ck_assert_int_eq(memcmp(k.iface.params, p, sizeof p), 0);
    free((void *)k.iface.params);

    iface_out.params = NULL; /* 2 parameters at NULL */
    ck_assert_int_eq(load(&k, &dev, &ops), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "a plugin bug"), "%s", devq_errmsg());
    struct devq_pl_param bad[] = { { .kind = 7, .size = 4 } };
    iface_out = (struct devq_pl_kernel_iface){ .nparams = 1, .params = bad };
    ck_assert_int_eq(load(&k, &dev, &ops), -EINVAL);
    ck_assert_msg(strstr(devq_errmsg(), "parameter 0 as kind 7"), "%s", devq_errmsg());
    struct devq_pl_param zero[] = { p_val(0, 0) };
    iface_out = (struct devq_pl_kernel_iface){ .nparams = 1, .params = zero };
    ck_assert_int_eq(load(&k, &dev, &ops), -EINVAL);

    iface_rc = -EIO; /* the backend failed reading it: the load fails */
    ck_assert_int_eq(load(&k, &dev, &ops), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "could not read its parameters"), "%s", devq_errmsg());
    ck_assert_int_eq(k.checked, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_args");
    TCase *tc = tcase_create("kernel_args");
    tcase_add_test(tc, unchecked_kernel_takes_anything);
    tcase_add_test(tc, positional_counts);
    tcase_add_test(tc, positional_kinds_and_sizes);
    tcase_add_test(tc, bytes_params);
    tcase_add_test(tc, sequences_match_in_any_interleaving);
    tcase_add_test(tc, sequences_offsets_follow_the_packing);
    tcase_add_test(tc, sequences_short_push_constants);
    tcase_add_test(tc, sequences_struct_and_padding);
    tcase_add_test(tc, iface_load_copies_and_validates);
    suite_add_tcase(s, tc);
    return check_run(s);
}
