/* SPDX-License-Identifier: MIT */
/* No thread can start (issue 27, devq(7) THREADS): every call returns 0
 * or a negative errno with a message, nothing is parked where no thread
 * will run it, nothing hangs, and once the limit is lifted the same
 * process works fully (the notify fires, the deferred batch runs).
 *
 * Two ways to stop threads, one scenario:
 *  - shim: tests/helpers/fail_shim.c preloaded (the program re-executes itself
 *    with LD_PRELOAD), its pthread_create failing with EAGAIN on demand;
 *  - nproc: RLIMIT_NPROC lowered to 1.  Root is exempt from it, so as
 *    root the case first drops to uid/gid 65534 (Check runs each case in
 *    a forked child, so the runner keeps its identity).
 * ASan's and TSan's pthread_create end in the shim's; where a build's
 * does not, the shim cases are left out with a note and the nproc ones
 * still run.
 * Every case has Check's timeout as its deadline, plus alarm(). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <devq/devq.h>
#include "../helpers/check_main.h"

#define SEC 1000000000ull
#define CASE_DEADLINE_S 30

static void (*shim_threads)(int on);

static void *idle_thread(void *arg)
{
    return arg;
}

/* Whether the program's pthread_create reaches the shim. */
static int shim_works(void)
{
    if (!shim_threads)
        return 0;
    pthread_t t;
    shim_threads(1);
    int r = pthread_create(&t, NULL, idle_thread, NULL);
    shim_threads(0);
    if (r == 0)
        pthread_join(t, NULL);
    return r == EAGAIN;
}

/* The errno came with a message naming the thread and the way out. */
static void expect_thread_error(int r, const char *call, const char *thread)
{
    ck_assert_msg(r == -EAGAIN || r == -ENOMEM, "%s: %d, want -EAGAIN or -ENOMEM (%s)", call, r,
                  devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), thread), "%s: message does not name the %s: %s", call, thread,
                  devq_errmsg());
    ck_assert_msg(strstr(devq_errmsg(), "RLIMIT_NPROC"), "%s: message does not name the limit: %s", call,
                  devq_errmsg());
}

static _Atomic int fired_status = 1; /* 1: not yet */

static void on_fire(void *arg, int status)
{
    (void)arg;
    atomic_store(&fired_status, status);
}

/* The notify's callback runs within 5 s; its status. */
static int wait_fired(void)
{
    uint64_t end = check_now_ns() + 5 * SEC;
    while (atomic_load(&fired_status) == 1 && check_now_ns() < end)
        check_nap_ms(1);
    return atomic_load(&fired_status);
}

struct world {
    devq_device *dev;
    devq_queue *q;
    devq_kernel *k;
    devq_buffer *buf;
};

/* A cpu kernel of many work groups (the pool's work): out[g] = g + 1.
 * Found by name (-export-dynamic). */
#define GROUPS 256
int exhaust_kernel(void *const *args, const devq_cpu_group *g);
int exhaust_kernel(void *const *args, const devq_cpu_group *g)
{
    uint32_t *out = args[0];
    out[g->group_id[0]] = g->group_id[0] + 1;
    return 0;
}

/* Every work group ran, whoever ran it. */
static void launch_all_groups(struct world *w)
{
    uint32_t host[GROUPS];
    ck_assert_int_eq(devq_queue_fill(w->q, w->buf, 0, sizeof host, 0), 0);
    devq_arg a = DEVQ_ARG_BUF(w->buf, DEVQ_WRITE);
    devq_launch l = { .global = { GROUPS, 1, 1 }, .local = { 1, 1, 1 } };
    ck_assert_int_eq(devq_queue_exec(w->q, w->k, &a, 1, &l), 0);
    ck_assert_int_eq(devq_queue_read(w->q, host, w->buf, 0, sizeof host), 0);
    ck_assert_int_eq(devq_queue_submit(w->q), 0);
    int r = devq_queue_finish(w->q, 10 * SEC);
    ck_assert_msg(r == 0, "launch: %d %s", r, devq_errmsg());
    for (uint32_t i = 0; i < GROUPS; i++)
        ck_assert_uint_eq(host[i], i + 1);
}

/* Threads of this process whose name starts with prefix. */
static int threads_named(const char *prefix)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && !strncmp(comm, prefix, strlen(prefix)))
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Threads still allowed: a device and a queue (its stream worker). */
static void world_open(struct world *w)
{
    int r = devq_device_open("cpu", &w->dev);
    ck_assert_msg(r == 0, "devq_device_open: %d %s", r, devq_errmsg());
    r = devq_queue_create(w->dev, NULL, &w->q);
    ck_assert_msg(r == 0, "devq_queue_create: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_kernel_load(w->dev, NULL, 0, "exhaust_kernel", &w->k), 0);
    ck_assert_int_eq(devq_buffer_alloc(w->dev, GROUPS * sizeof(uint32_t), NULL, 0, &w->buf), 0);
}

/* No new thread can start now. */
static void while_blocked(struct world *w)
{
    devq_signal *s, *gate, *out, *shared;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &out), 0);

    /* A notify that no thread could run is refused, not parked. */
    int r = devq_signal_notify(s, 1, on_fire, NULL, NULL);
    expect_thread_error(r, "devq_signal_notify", "notifier thread");
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    check_nap_ms(20);
    ck_assert_int_eq(atomic_load(&fired_status), 1); /* never registered */

    /* So is one on a shared signal (the notifier watches its page). */
    if (devq_signal_create_shared(0, &shared) == 0) {
        r = devq_signal_notify(shared, 1, on_fire, NULL, NULL);
        expect_thread_error(r, "devq_signal_notify (shared)", "notifier thread");
        devq_signal_destroy(shared);
    }

    /* A batch that must be deferred fails, with its signals, and the
     * submit says so; finish ends with that failure, no timeout. */
    ck_assert_int_eq(devq_queue_wait(w->q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_signal(w->q, out, 1), 0);
    r = devq_queue_submit(w->q);
    expect_thread_error(r, "devq_queue_submit", "notifier thread");
    ck_assert_msg(strstr(devq_errmsg(), "cannot defer"), "submit: %s", devq_errmsg());
    r = devq_signal_wait(out, 1, 5 * SEC);
    ck_assert_msg(r == -EAGAIN || r == -ENOMEM, "the deferred batch's signal: %d (%s)", r, devq_errmsg());
    ck_assert_int_eq(devq_signal_status(out), r);
    r = devq_queue_finish(w->q, 5 * SEC);
    ck_assert_msg(r == -EAGAIN || r == -ENOMEM, "finish after the failed batch: %d (%s)", r, devq_errmsg());

    /* A queue needs a stream worker: refused with the reason. */
    devq_queue *q2 = NULL;
    r = devq_queue_create(w->dev, NULL, &q2);
    expect_thread_error(r, "devq_queue_create", "stream worker thread");
    ck_assert_ptr_null(q2);

    /* The kernel pool cannot start: the stream worker runs every work
     * group itself. */
    ck_assert_int_eq(threads_named("devq-cpu-p"), 0);
    launch_all_groups(w);
    ck_assert_int_eq(threads_named("devq-cpu-p"), 0);

    /* Work that needs no new thread still runs. */
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_signal(w->q, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(w->q), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 5 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(w->q, 5 * SEC), 0);

    devq_signal_destroy(done);
    devq_signal_destroy(s);
    devq_signal_destroy(gate);
    devq_signal_destroy(out);
}

/* The limit is lifted: the same process works fully. */
static void after_lift(struct world *w)
{
    devq_signal *s, *gate, *out;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &out), 0);

    int r = devq_signal_notify(s, 1, on_fire, NULL, NULL);
    ck_assert_msg(r == 0, "notify after the lift: %d %s", r, devq_errmsg());
    ck_assert_int_eq(devq_signal_set(s, 1), 0);
    ck_assert_int_eq(wait_fired(), 0);

    ck_assert_int_eq(devq_queue_wait(w->q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_signal(w->q, out, 1), 0);
    r = devq_queue_submit(w->q);
    ck_assert_msg(r == 0, "submit after the lift: %d %s", r, devq_errmsg());
    ck_assert_uint_eq(devq_signal_value(out), 0); /* deferred: it waits */
    ck_assert_int_eq(devq_signal_set(gate, 1), 0);
    ck_assert_int_eq(devq_signal_wait(out, 1, 5 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(w->q, 5 * SEC), 0);

    devq_queue *q2;
    r = devq_queue_create(w->dev, NULL, &q2);
    ck_assert_msg(r == 0, "queue after the lift: %d %s", r, devq_errmsg());
    devq_queue_destroy(q2);

    /* The pool tries its threads again at most once a second. */
    check_nap_ms(1100);
    launch_all_groups(w);
    ck_assert_msg(threads_named("devq-cpu-p") > 0, "no kernel pool thread after the lift");
    devq_buffer_free(w->buf, NULL);
    devq_kernel_destroy(w->k);

    devq_signal_destroy(s);
    devq_signal_destroy(gate);
    devq_signal_destroy(out);
    devq_queue_destroy(w->q);
    devq_device_close(w->dev);
}

/* The two ways of stopping threads: _i is the case's loop index. */
static struct rlimit nproc_old;

static void block_threads(int nproc)
{
    if (!nproc) {
        shim_threads(1);
        return;
    }
    if (geteuid() == 0) {
        /* Root is exempt from RLIMIT_NPROC: become nobody (all threads:
         * glibc applies setuid process-wide). */
        ck_assert_int_eq(setgroups(0, NULL), 0);
        ck_assert_int_eq(setgid(65534), 0);
        ck_assert_int_eq(setuid(65534), 0);
    }
    ck_assert_int_eq(getrlimit(RLIMIT_NPROC, &nproc_old), 0);
    struct rlimit low = { .rlim_cur = 1, .rlim_max = nproc_old.rlim_max };
    ck_assert_int_eq(setrlimit(RLIMIT_NPROC, &low), 0);
}

static void lift_threads(int nproc)
{
    if (!nproc)
        shim_threads(0);
    else /* an unprivileged process may raise its soft limit to the hard one */
        ck_assert_int_eq(setrlimit(RLIMIT_NPROC, &nproc_old), 0);
}

START_TEST(threads_fail)
{
    alarm(CASE_DEADLINE_S);
    struct world w;
    world_open(&w);
    block_threads(_i);
    while_blocked(&w);
    lift_threads(_i);
    after_lift(&w);
}
END_TEST

/* One thread watches 127 process-shared signals; the 128th with a
 * pending notify needs a watcher thread: refused while none can start,
 * then watched, and a set from another process runs its callback. */
START_TEST(watcher_fail)
{
    alarm(CASE_DEADLINE_S);
    enum { FULL = 127 };
    static devq_signal *sigs[FULL + 1];
    for (int i = 0; i <= FULL; i++)
        ck_assert_int_eq(devq_signal_create_shared(0, &sigs[i]), 0);
    for (int i = 0; i < FULL; i++) {
        int r = devq_signal_notify(sigs[i], 1, on_fire, NULL, NULL);
        ck_assert_msg(r == 0, "notify %d: %d %s", i, r, devq_errmsg());
    }
    block_threads(_i);
    int r = devq_signal_notify(sigs[FULL], 1, on_fire, NULL, NULL);
    expect_thread_error(r, "devq_signal_notify (shared, the 128th)", "watcher thread");
    lift_threads(_i);
    r = devq_signal_notify(sigs[FULL], 1, on_fire, NULL, NULL);
    ck_assert_msg(r == 0, "the 128th notify after the lift: %d %s", r, devq_errmsg());
    /* Set from another process, through a handle of its own (the
     * inherited one holds a copy of our registrations). */
    pid_t pid = fork();
    if (pid == 0) {
        int fd;
        devq_signal *mine;
        _exit(devq_signal_export_fd(sigs[FULL], &fd) || devq_signal_import_fd(fd, &mine) ||
                      devq_signal_set(mine, 1)
                  ? 1
                  : 0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(wait_fired(), 0);
    for (int i = 0; i <= FULL; i++)
        devq_signal_destroy(sigs[i]);
}
END_TEST

/* EXHAUST_BACKEND=vulkan (tests/scripts/exhaust-vulkan): a queue needs its
 * completion thread; refused while none can start, then works. */
START_TEST(vulkan_queue_thread)
{
    alarm(CASE_DEADLINE_S);
    devq_device *dev;
    int r = devq_device_open("vulkan", &dev);
    ck_assert_msg(r == 0, "devq_device_open(vulkan): %d %s", r, devq_errmsg());
    block_threads(_i);
    devq_queue *q = NULL;
    r = devq_queue_create(dev, NULL, &q);
    expect_thread_error(r, "devq_queue_create (vulkan)", "completion thread");
    ck_assert_ptr_null(q);
    lift_threads(_i);
    r = devq_queue_create(dev, NULL, &q);
    ck_assert_msg(r == 0, "vulkan queue after the lift: %d %s", r, devq_errmsg());
    devq_signal *done;
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_queue_signal(q, done, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(done, 1, 10 * SEC), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_signal_destroy(done);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* Re-execute with the shim preloaded, once. */
static void preload_shim(char **argv)
{
    if (dlsym(RTLD_DEFAULT, "failshim_threads") || getenv("DEVQ_EXHAUST_REEXEC"))
        return;
    const char *shim = TEST_BUILD_DIR "/tests/helpers/.libs/libfailshim.so";
    if (access(shim, R_OK) != 0)
        return;
    char pre[4096];
    const char *had = getenv("LD_PRELOAD");
    snprintf(pre, sizeof pre, "%s%s%s", had ? had : "", had ? ":" : "", shim);
    setenv("LD_PRELOAD", pre, 1);
    setenv("DEVQ_EXHAUST_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    perror("test_exhaust: re-exec with the shim");
}

int main(int argc, char **argv)
{
    (void)argc;
    preload_shim(argv);
    shim_threads = (void (*)(int))dlsym(RTLD_DEFAULT, "failshim_threads");
    Suite *su = suite_create("exhaust");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, CASE_DEADLINE_S + 5);
    /* Loop index 0: the shim; 1: RLIMIT_NPROC. */
    int from = 0;
    if (!shim_works()) {
        fprintf(stderr, "test_exhaust: the pthread_create shim is %s: its cases are left out\n",
                shim_threads ? "bypassed (a sanitizer's interceptors come first)" : "not loaded");
        from = 1;
    }
    const char *backend = getenv("EXHAUST_BACKEND");
    if (backend && !strcmp(backend, "vulkan")) {
        devq_device *dev;
        if (devq_device_open("vulkan", &dev) < 0) {
            fprintf(stderr, "test_exhaust: SKIP: no vulkan device: %s\n", devq_errmsg());
            return 77;
        }
        devq_device_close(dev);
        tcase_add_loop_test(tc, vulkan_queue_thread, from, 2);
    } else {
        tcase_add_loop_test(tc, threads_fail, from, 2);
        tcase_add_loop_test(tc, watcher_fail, from, 2);
    }
    suite_add_tcase(su, tc);
    return check_run_forked(su, "test_exhaust");
}
