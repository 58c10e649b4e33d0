/* SPDX-License-Identifier: MIT */
/* Allocation failure anywhere (issue 27): a representative program
 * (open a device, create queues and signals, allocate buffers, submit
 * batches with waits, notify, clean up) runs with its Nth allocation
 * failing, for N swept over the allocations the program makes.  Every
 * call must return 0 or a negative errno with a message; the run must
 * neither crash nor hang; and the same program run again right after,
 * in the same process with nothing failing, must succeed fully.
 *
 * Each N runs in a forked child with alarm() as its deadline.  The
 * allocation failing is made by tests/helpers/fail_shim.c, preloaded (the
 * program re-executes itself with LD_PRELOAD).  Under ASan or TSan the
 * shim is bypassed (the sanitizer's malloc, linked into the program,
 * comes first and never calls another), so the test skips (77) there.
 *
 * make check sweeps a bounded sample (at most MALLOC_SWEEP_RUNS
 * values of N, 150 by default, spread over the whole range; about 3 s);
 * MALLOC_SWEEP=full tries every N; MALLOC_SWEEP_N=n replays one;
 * MALLOC_SWEEP_COLD=1 fails allocations of the first backend scan too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>

#define SEC 1000000000ull
#define RUN_DEADLINE_S 20

static long (*shim_arm)(long n);

/* Whether the program's malloc reaches the shim (a sanitizer's does
 * not): count one call made through a pointer the compiler cannot see. */
static int shim_works(void)
{
    void *(*volatile m)(size_t) = malloc;
    shim_arm(-1);
    void *p = m(16);
    long n = shim_arm(0);
    free(p);
    return n > 0;
}

/* Reports go through write(2): stdio may allocate, and would fail. */
static void say(const char *a, const char *b, long v)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "malloc_sweep: %s %s (%ld)\n", a, b, v);
    if (n > 0)
        (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static int bad;     /* a call broke the contract */
static int strict;  /* nothing may fail: say what did */
static int verbose; /* MALLOC_SWEEP_VERBOSE: say every failed call */

/* r must be 0 or a negative errno with a message; 1 when it is 0. */
static int ok(int r, const char *call)
{
    if (r == 0)
        return 1;
    const char *m = devq_errmsg();
    if (strict || verbose)
        say(call, m, r);
    if (r > 0 || r < -4095 || !m || !m[0]) {
        say(call, "returned no error message or a bad code", r);
        bad = 1;
    }
    return 0;
}

/* One flag per run, passed as the notify's arg: a failed run's notify,
 * released, may still be delivered by the notifier after the strict run
 * has begun, and must not count as the strict run's. */
static _Atomic int fired_in[2];

static void on_fire(void *arg, int status)
{
    atomic_store((_Atomic int *)arg, status == 0 ? 1 : 2);
}

/* The representative program.  strict: nothing may fail. */
static int scenario(int strict_run)
{
    strict = strict_run;
    int failed = 0;
#define CALL(expr) (ok((expr), #expr) ? 1 : (failed = 1, 0))
    devq_device *dev = NULL;
    devq_queue *q1 = NULL, *q2 = NULL;
    devq_signal *gate = NULL, *mid = NULL, *end = NULL, *note = NULL;
    devq_buffer *a = NULL, *b = NULL;
    devq_notify *h = NULL;
    unsigned char host[256], back[256];
    memset(host, 7, sizeof host);
    _Atomic int *fired = &fired_in[strict_run ? 1 : 0];
    atomic_store(fired, 0);

    if (!CALL(devq_device_open("cpu", &dev)))
        goto out;
    CALL(devq_queue_create(dev, NULL, &q1));
    CALL(devq_queue_create(dev, NULL, &q2));
    CALL(devq_signal_create(0, &gate));
    CALL(devq_signal_create(0, &mid));
    CALL(devq_signal_create(0, &end));
    CALL(devq_signal_create(0, &note));
    if (!q1 || !q2 || !gate || !mid || !end || !note)
        goto out;
    CALL(devq_buffer_alloc(dev, 4096, q1, 0, &a));
    CALL(devq_buffer_alloc(dev, 4096, NULL, 0, &b));
    int have_note = CALL(devq_signal_notify(note, 1, on_fire, (void *)fired, &h));
    /* q1 waits for the host (deferred), then writes a; q2 waits for q1
     * and copies a into b; the host reads b back. */
    CALL(devq_queue_wait(q1, gate, 1));
    if (a)
        CALL(devq_queue_write(q1, a, 0, host, sizeof host));
    CALL(devq_queue_signal(q1, mid, 1));
    int sub1 = CALL(devq_queue_submit(q1));
    CALL(devq_queue_wait(q2, mid, 1));
    if (a && b)
        CALL(devq_queue_copy(q2, b, 0, a, 0, sizeof host));
    if (b)
        CALL(devq_queue_read(q2, back, b, 0, sizeof back));
    CALL(devq_queue_signal(q2, end, 1));
    CALL(devq_queue_signal(q2, note, 1));
    int sub2 = CALL(devq_queue_submit(q2));
    CALL(devq_signal_set(gate, 1));
    /* Never hangs: a batch that failed fails `end`; one that runs sets it. */
    int w = devq_signal_wait(end, 1, 10 * SEC);
    if (w == -ETIMEDOUT && sub1 && sub2) {
        say("the batches", "neither finished nor failed in 10 s", w);
        bad = 1;
    }
    if (!ok(w, "devq_signal_wait(end)"))
        failed = 1;
    CALL(devq_queue_finish(q1, 10 * SEC));
    CALL(devq_queue_finish(q2, 10 * SEC));
    if (have_note) {
        /* Delivered once note reached 1 or failed, or cancelled here. */
        if (devq_signal_value(note) < 1 && devq_signal_status(note) == 0)
            CALL(devq_notify_cancel(h));
        else
            CALL(devq_notify_release(h));
        h = NULL;
    }
    if (strict && !failed) {
        struct timespec ts = { 0, 1000000 };
        for (int i = 0; i < 5000 && !atomic_load(fired); i++)
            nanosleep(&ts, NULL);
        if (atomic_load(fired) != 1) {
            say("strict run", "notify did not fire with status 0", atomic_load(fired));
            failed = 1;
        }
        if (memcmp(host, back, sizeof host) != 0) {
            say("strict run", "data did not make the round trip", 0);
            failed = 1;
        }
    }
out:
    if (h)
        devq_notify_release(h);
    if (a)
        CALL(devq_buffer_free(a, NULL));
    if (b)
        CALL(devq_buffer_free(b, NULL));
    if (q1)
        devq_queue_destroy(q1);
    if (q2)
        devq_queue_destroy(q2);
    devq_signal *sigs[] = { gate, mid, end, note };
    for (int i = 0; i < 4; i++)
        if (sigs[i])
            devq_signal_destroy(sigs[i]);
    if (dev)
        devq_device_close(dev);
#undef CALL
    return failed;
}

/* The backend scan runs once per process and keeps its result, an
 * allocation failure in it included (devq_device_open then says the
 * backend is not installed until the process restarts: lib/loader).
 * Unless MALLOC_SWEEP_COLD is set, each child opens a device once before
 * failing anything, so the sweep covers everything after that scan. */
static void warm_up(void)
{
    if (getenv("MALLOC_SWEEP_COLD"))
        return;
    devq_device *dev;
    if (devq_device_open("cpu", &dev) == 0)
        devq_device_close(dev);
}

/* A child: fail allocation n, then run again with nothing failing. */
static int child(long n)
{
    alarm(RUN_DEADLINE_S);
    warm_up();
    shim_arm(n);
    scenario(0);
    shim_arm(0);
    if (bad)
        return 2;
    if (scenario(1) || bad) {
        say("the run after the failure", devq_errmsg(), n);
        return 3;
    }
    return 0;
}

static int run_one(long n)
{
    pid_t p = fork();
    if (p < 0)
        return -1;
    if (p == 0)
        _exit(child(n));
    int st;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFSIGNALED(st))
        fprintf(stderr, "malloc_sweep: N=%ld: killed by signal %d%s\n", n, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (hung past the deadline)" : "");
    else
        fprintf(stderr, "malloc_sweep: N=%ld: exit %d\n", n, WEXITSTATUS(st));
    return 1;
}

static void preload_shim(char **argv)
{
    if (dlsym(RTLD_DEFAULT, "failshim_alloc_arm") || getenv("DEVQ_SWEEP_REEXEC"))
        return;
    const char *shim = TEST_BUILD_DIR "/tests/helpers/.libs/libfailshim.so";
    if (access(shim, R_OK) != 0)
        return;
    char pre[4096];
    const char *had = getenv("LD_PRELOAD");
    snprintf(pre, sizeof pre, "%s%s%s", had ? had : "", had ? ":" : "", shim);
    setenv("LD_PRELOAD", pre, 1);
    setenv("DEVQ_SWEEP_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    perror("malloc_sweep: re-exec with the shim");
}

int main(int argc, char **argv)
{
    (void)argc;
    preload_shim(argv);
    verbose = getenv("MALLOC_SWEEP_VERBOSE") != NULL;
    shim_arm = (long (*)(long))dlsym(RTLD_DEFAULT, "failshim_alloc_arm");
    if (!shim_arm) {
        fprintf(stderr, "malloc_sweep: SKIP: tests/helpers/.libs/libfailshim.so is not loaded\n");
        return 77;
    }
    if (!shim_works()) {
        fprintf(stderr, "malloc_sweep: SKIP: the shim is bypassed (a sanitizer's malloc comes first)\n");
        return 77;
    }
    /* Count the allocations of one clean run, in a child like the rest. */
    long total = 0;
    int pfd[2];
    if (pipe(pfd) != 0)
        return 99;
    pid_t p = fork();
    if (p == 0) {
        alarm(RUN_DEADLINE_S);
        warm_up();
        shim_arm(-1);
        int f = scenario(1);
        long c = shim_arm(0);
        (void)!write(pfd[1], &c, sizeof c);
        _exit(f || bad ? 1 : 0);
    }
    close(pfd[1]);
    int st;
    if (read(pfd[0], &total, sizeof total) != sizeof total || waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
        fprintf(stderr, "malloc_sweep: the clean run failed\n");
        return 1;
    }
    const char *one = getenv("MALLOC_SWEEP_N");
    if (one)
        return run_one(atol(one)) ? 1 : 0;
    const char *mode = getenv("MALLOC_SWEEP");
    const char *runs_env = getenv("MALLOC_SWEEP_RUNS");
    long runs = runs_env ? atol(runs_env) : 150;
    /* Allocations on other threads make the count vary a little between
     * runs: sweep somewhat past it. */
    long last = total + total / 10 + 10;
    long step = mode && !strcmp(mode, "full") ? 1 : (last + runs - 1) / (runs > 0 ? runs : 1);
    if (step < 1)
        step = 1;
    long tried = 0, failures = 0;
    for (long n = 1; n <= last; n += step) {
        tried++;
        failures += run_one(n) != 0;
    }
    printf("malloc_sweep: %ld allocations in a clean run; tried %ld values of N (step %ld), %ld failed\n",
           total, tried, step, failures);
    return failures ? 1 : 0;
}
