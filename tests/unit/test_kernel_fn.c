/* SPDX-License-Identifier: MIT */
/* devq_kernel_load_fn: cpu kernels given by function pointer.  This
 * program is linked without -export-dynamic and its kernels are static,
 * so nothing here could be found by name: every kernel that runs was
 * found through its pointer.  Covers the result of a launch, the name in
 * messages (given and generated), checked launches with a signature,
 * a signature of another function, the lifetime (destroyed while a
 * launch is queued; the shared object holding the function kept loaded),
 * and -ENOTSUP on the emulated CUDA driver. */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include "../helpers/check_main.h"

#define SEC 1000000000ull
#define N 1000u

/* y[i] = a * x[i] + y[i], one element per work-item. */
static int saxpy(void *const *args, const devq_cpu_group *g)
{
    float a = *(const float *)args[0];
    const float *x = args[1];
    float *y = args[2];
    for (uint32_t j = 0; j < g->local_size[0]; j++) {
        uint32_t i = g->group_id[0] * g->local_size[0] + j;
        if (i < g->global_size[0])
            y[i] = a * x[i] + y[i];
    }
    return 0;
}
DEVQ_CPU_KERNEL_SIGNATURE(saxpy, DEVQ_CPU_VALUE(float), DEVQ_CPU_BUFFER, DEVQ_CPU_BUFFER);

static int fails_enospc(void *const *args, const devq_cpu_group *g)
{
    (void)args;
    (void)g;
    return -ENOSPC;
}
/* A signature that describes fails_enospc, not saxpy. */
DEVQ_CPU_KERNEL_NO_ARGS(fails_enospc);

static devq_device *dev;
static devq_queue *q;
static devq_buffer *x, *y;

static void setup(void)
{
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, N * sizeof(float), NULL, 0, &x), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, N * sizeof(float), NULL, 0, &y), 0);
    float *hx = devq_buffer_host_ptr(x), *hy = devq_buffer_host_ptr(y);
    ck_assert(hx && hy);
    for (uint32_t i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
    }
}

static void teardown(void)
{
    devq_buffer_free(x, NULL);
    devq_buffer_free(y, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
}

static int exec_saxpy(devq_kernel *k, float a)
{
    devq_arg args[3] = { DEVQ_ARG_VAL(&a), DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ_WRITE) };
    devq_launch l = { .global = { N, 1, 1 }, .local = { 64, 1, 1 } };
    return devq_queue_exec(q, k, args, 3, &l);
}

static void expect_saxpy(float a)
{
    const float *hy = devq_buffer_host_ptr(y);
    for (uint32_t i = 0; i < N; i++)
        ck_assert_msg(hy[i] == a * (float)i + 1.0f, "y[%u] = %g, want %g", i, hy[i], a * (float)i + 1.0f);
}

START_TEST(kernel_by_pointer_runs)
{
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, saxpy, NULL, "saxpy", &k), 0);
    ck_assert_int_eq(exec_saxpy(k, 2.0f), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    expect_saxpy(2.0f);
    devq_kernel_destroy(k);
}
END_TEST

/* Unchecked without a signature: a wrong argument count is the
 * kernel's business, as with an undeclared devq_kernel_load. */
START_TEST(no_signature_is_unchecked)
{
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_enospc, NULL, "nosig", &k), 0);
    int one = 1;
    devq_arg a = DEVQ_ARG_VAL(&one);
    devq_launch l = { .global = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q, k, &a, 1, &l), 0);
    devq_kernel_destroy(k);
}
END_TEST

START_TEST(failure_names_the_kernel)
{
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_enospc, NULL, "out_of_room", &k), 0);
    devq_launch l = { .global = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q, k, NULL, 0, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    int r = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(r == -ENOSPC && strstr(devq_errmsg(), "out_of_room"), "finish: %d %s", r, devq_errmsg());
    devq_kernel_destroy(k);
}
END_TEST

/* A static function has no dynamic symbol: the generated name is its
 * address, in the same form every message shows. */
START_TEST(null_name_is_generated)
{
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_enospc, NULL, NULL, &k), 0);
    char want[64];
    void *p;
    devq_cpu_kernel_fn f = fails_enospc;
    memcpy(&p, &f, sizeof p);
    snprintf(want, sizeof want, "fn@%p", p);
    devq_launch l = { .global = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(q, k, NULL, 0, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    int r = devq_queue_finish(q, 10 * SEC);
    ck_assert_msg(r == -ENOSPC && strstr(devq_errmsg(), want), "finish: %d %s (want %s)", r, devq_errmsg(),
                  want);
    devq_kernel_destroy(k);
}
END_TEST

START_TEST(signature_checks_launches)
{
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, saxpy, &devq_cpu_signature_saxpy, "saxpy", &k), 0);
    /* Two arguments where three are declared: refused at record time. */
    float a = 3.0f;
    devq_arg two[2] = { DEVQ_ARG_VAL(&a), DEVQ_ARG_BUF(x, DEVQ_READ) };
    devq_launch l = { .global = { N, 1, 1 }, .local = { 64, 1, 1 } };
    int r = devq_queue_exec(q, k, two, 2, &l);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), "saxpy"), "exec: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL); /* the batch's sticky error */
    /* A double where a float is declared. */
    double d = 3.0;
    devq_arg wide[3] = { DEVQ_ARG_VAL(&d), DEVQ_ARG_BUF(x, DEVQ_READ), DEVQ_ARG_BUF(y, DEVQ_READ_WRITE) };
    r = devq_queue_exec(q, k, wide, 3, &l);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), "saxpy"), "exec: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    /* finish reports the dropped batches once, then the queue is clean. */
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EINVAL);
    /* The declared shape runs. */
    ck_assert_int_eq(exec_saxpy(k, 3.0f), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    expect_saxpy(3.0f);
    devq_kernel_destroy(k);
}
END_TEST

START_TEST(signature_of_another_function_is_refused)
{
    devq_kernel *k = NULL;
    int r = devq_kernel_load_fn(dev, saxpy, &devq_cpu_signature_fails_enospc, "saxpy", &k);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), "another function"), "load: %d %s", r, devq_errmsg());
    ck_assert_ptr_null(k);
    /* A signature with a bad magic (not from this devq.h's macro). */
    static const devq_cpu_signature bad = { 0x1234u, 0, NULL, saxpy };
    r = devq_kernel_load_fn(dev, saxpy, &bad, "saxpy", &k);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), "not a signature"), "load: %d %s", r, devq_errmsg());
}
END_TEST

/* Same lifetime as devq_kernel_load: a batch that launches it keeps it. */
START_TEST(destroyed_while_queued_still_runs)
{
    devq_kernel *k;
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_queue_wait(q, s, 1), 0); /* hold the batch on the host */
    ck_assert_int_eq(devq_kernel_load_fn(dev, saxpy, &devq_cpu_signature_saxpy, NULL, &k), 0);
    ck_assert_int_eq(exec_saxpy(k, 4.0f), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    devq_kernel_destroy(k);
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    expect_saxpy(4.0f);
    devq_signal_destroy(s);
}
END_TEST

/* A kernel from a shared object the caller closes at once: the kernel
 * keeps the object loaded (the name comes from dladdr: it is exported
 * there), and lets it go once destroyed and no queue holds it. */
START_TEST(kernel_keeps_its_shared_object_loaded)
{
    const char *top = getenv("top_builddir");
    char so[4096];
    snprintf(so, sizeof so, "%s/tests/helpers/.libs/cpu_kernels.so", top ? top : ".");
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl != NULL, "%s: %s", so, dlerror());
    void *sym = dlsym(dl, "cpu_test_noargs");
    const devq_cpu_signature *sig = dlsym(dl, "devq_cpu_signature_cpu_test_noargs");
    ck_assert(sym && sig);
    devq_cpu_kernel_fn f;
    memcpy(&f, &sym, sizeof f);
    devq_kernel *k;
    ck_assert_int_eq(devq_kernel_load_fn(dev, f, sig, NULL, &k), 0);
    ck_assert_int_eq(dlclose(dl), 0);
    void *probe = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(probe != NULL, "the kernel did not keep %s loaded", so);
    dlclose(probe);
    /* Declared with no arguments: one argument is refused, none runs. */
    int one = 1;
    devq_arg a = DEVQ_ARG_VAL(&one);
    devq_launch l = { .global = { 4, 1, 1 } };
    int r = devq_queue_exec(q, k, &a, 1, &l);
    ck_assert_msg(r == -EINVAL && strstr(devq_errmsg(), "cpu_test_noargs"), "exec: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_queue_submit(q), -EINVAL);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EINVAL);
    ck_assert_int_eq(devq_queue_exec(q, k, NULL, 0, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_kernel_destroy(k);
    devq_queue_destroy(q); /* drops the stream's hold on its last kernel */
    q = NULL;
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    probe = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(probe == NULL, "%s still loaded after the kernel was destroyed", so);
}
END_TEST

/* cuda has no host-function kernels: -ENOTSUP naming the way out. */
START_TEST(cuda_emu_refuses)
{
    const char *top = getenv("top_builddir");
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/tests/emu/.libs/libcuda-emu.so", top ? top : ".");
    setenv("DEVQ_CUDA_LIBRARY", lib, 1);
    devq_device *cu;
    int r = devq_device_open("cuda", &cu);
    if (r < 0) {
        printf("skipped: no cuda plugin in this build: %s\n", devq_errmsg());
        return;
    }
    devq_kernel *k = NULL;
    r = devq_kernel_load_fn(cu, saxpy, NULL, "saxpy", &k);
    ck_assert_msg(r == -ENOTSUP && strstr(devq_errmsg(), "devq_kernel_load"), "load: %d %s", r,
                  devq_errmsg());
    ck_assert_ptr_null(k);
    devq_device_close(cu);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("kernel_fn");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, kernel_by_pointer_runs);
    tcase_add_test(tc, no_signature_is_unchecked);
    tcase_add_test(tc, failure_names_the_kernel);
    tcase_add_test(tc, null_name_is_generated);
    tcase_add_test(tc, signature_checks_launches);
    tcase_add_test(tc, signature_of_another_function_is_refused);
    tcase_add_test(tc, destroyed_while_queued_still_runs);
    tcase_add_test(tc, kernel_keeps_its_shared_object_loaded);
    suite_add_tcase(su, tc);
    TCase *other = tcase_create("other_backends");
    tcase_set_timeout(other, 60);
    tcase_add_test(other, cuda_emu_refuses);
    suite_add_tcase(su, other);
    return check_run(su);
}
