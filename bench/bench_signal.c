/* SPDX-License-Identifier: MIT */
/* bench_signal: host-side latency of devq timeline signals.
 *
 *  1. two-thread ping-pong through two signals (one round trip = two
 *     set/wait hand-offs), against, in the same run:
 *       (a) the obvious signal: atomic u64 + pthread mutex/condvar,
 *           set = fetch_max + broadcast;
 *       (b) a raw futex ping-pong (no timeline, no checks, no spin);
 *       (c) a spin-then-futex ping-pong, written plainly: the waiter
 *           spins devq's starting budget (SPIN_NS, checking the clock
 *           every 32 pauses as devq does), then counts itself a sleeper
 *           and sleeps; the setter wakes only a counted sleeper.  The
 *           limit a hand-off between two cores can reach;
 *     and the same with both threads on one CPU (taskset -c 0 in-process),
 *     where spinning cannot help and devq must not lose to (b);
 *  1b. a batch the stream must run (a 4-byte fill + a signal) on the cpu
 *     backend: submit -> the host sees the signal, against (c);
 *  2. notify wake-up: set -> callback on the notifier thread -> set ->
 *     waiting thread;
 *  3. wait_many(ANY) over 1..64 signals, another thread setting one.
 * Medians of per-round-trip times; ratios against (a), (b) and (c).
 * Rounds: DEVQ_BENCH_ROUNDS (default 20000).  Always exits 0 unless a
 * wait fails.  DEVQ_BENCH_ONLY=pingpong, =fast or =fill runs just that
 * devq loop, DEVQ_BENCH_ROUNDS times (for callgrind: instructions per
 * round trip are the difference of two counts over the difference of
 * rounds); =rows prints the two rows and their limit on one line;
 * =lines prints the limit with its store, with a CAS that guesses the
 * old value, and with a load of the word before the CAS (what devq's set
 * did before 2026-11-28). */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>

#define SEC 1000000000ull

static long rounds = 20000;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median(uint64_t *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return (double)v[n / 2];
}

static double mid3(double *v)
{
    double a = v[0], b = v[1], c = v[2];
    if (a > b) {
        double x = a;
        a = b;
        b = x;
    }
    if (b > c) {
        b = c;
    }
    return a > b ? a : b;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_signal: %s: %s\n", what, devq_errmsg());
    exit(1);
}

/* ---- devq ping-pong ---- */

struct devq_pp {
    devq_signal *ping, *pong;
};

/* The handles are copied out of *pp, which lives in bench_devq's frame
 * beside the timespec its clock reads write every round: read from
 * there, they cost the ponger a cache-line transfer per round trip that
 * the limit (its words at fixed addresses) does not pay. */
static void *devq_ponger(void *p)
{
    struct devq_pp *pp = p;
    devq_signal *ping = pp->ping, *pong = pp->pong;
    for (long i = 1; i <= rounds; i++) {
        if (devq_signal_wait(ping, (uint64_t)i, DEVQ_TIMEOUT_INFINITE))
            die("pong wait");
        devq_signal_set(pong, (uint64_t)i);
    }
    return NULL;
}

static int create(int shared, devq_signal **s)
{
    return shared ? devq_signal_create_shared(0, s) : devq_signal_create(0, s);
}

static double bench_devq(uint64_t *t, int shared)
{
    struct devq_pp pp;
    if (create(shared, &pp.ping) || create(shared, &pp.pong))
        die("create");
    pthread_t th;
    pthread_create(&th, NULL, devq_ponger, &pp);
    for (long i = 1; i <= rounds; i++) {
        uint64_t t0 = now_ns();
        devq_signal_set(pp.ping, (uint64_t)i);
        if (devq_signal_wait(pp.pong, (uint64_t)i, DEVQ_TIMEOUT_INFINITE))
            die("ping wait");
        t[i - 1] = now_ns() - t0;
    }
    pthread_join(th, NULL);
    devq_signal_destroy(pp.ping);
    devq_signal_destroy(pp.pong);
    return median(t, rounds);
}

/* ---- one thread: set then a wait that is already reached ----
 * The checks every call pays (and, for a shared signal, the validation
 * of the page) without any hand-off: ns per set+wait pair, median of
 * batches of 1000. */
static double bench_fast(uint64_t *t, long n, int shared)
{
    devq_signal *s;
    if (create(shared, &s))
        die("create");
    uint64_t v = 0;
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        for (int k = 0; k < 1000; k++) {
            v++;
            if (devq_signal_set(s, v) || devq_signal_wait(s, v, 0))
                die("fast set/wait");
        }
        t[i] = now_ns() - t0;
    }
    devq_signal_destroy(s);
    return median(t, n) / 1000.0;
}

/* ---- (a) atomic + mutex/condvar ---- */

struct cv_signal {
    _Atomic uint64_t value;
    pthread_mutex_t m;
    pthread_cond_t c;
};

static void cv_set(struct cv_signal *s, uint64_t v)
{
    uint64_t cur = atomic_load(&s->value);
    while (cur < v && !atomic_compare_exchange_weak(&s->value, &cur, v))
        ;
    pthread_mutex_lock(&s->m);
    pthread_cond_broadcast(&s->c);
    pthread_mutex_unlock(&s->m);
}

static void cv_wait(struct cv_signal *s, uint64_t v)
{
    if (atomic_load(&s->value) >= v)
        return;
    pthread_mutex_lock(&s->m);
    while (atomic_load(&s->value) < v)
        pthread_cond_wait(&s->c, &s->m);
    pthread_mutex_unlock(&s->m);
}

struct cv_pp {
    struct cv_signal ping, pong;
};

static void *cv_ponger(void *p)
{
    struct cv_pp *pp = p;
    for (long i = 1; i <= rounds; i++) {
        cv_wait(&pp->ping, (uint64_t)i);
        cv_set(&pp->pong, (uint64_t)i);
    }
    return NULL;
}

static double bench_condvar(uint64_t *t)
{
    static struct cv_pp pp = {
        .ping = { 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER },
        .pong = { 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER },
    };
    atomic_store(&pp.ping.value, 0);
    atomic_store(&pp.pong.value, 0);
    pthread_t th;
    pthread_create(&th, NULL, cv_ponger, &pp);
    for (long i = 1; i <= rounds; i++) {
        uint64_t t0 = now_ns();
        cv_set(&pp.ping, (uint64_t)i);
        cv_wait(&pp.pong, (uint64_t)i);
        t[i - 1] = now_ns() - t0;
    }
    pthread_join(th, NULL);
    return median(t, rounds);
}

/* ---- (b) raw futex ---- */

static _Atomic uint32_t fx_ping, fx_pong;

static void fx_set(_Atomic uint32_t *w, uint32_t v)
{
    atomic_store(w, v);
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void fx_wait(_Atomic uint32_t *w, uint32_t v)
{
    uint32_t cur;
    while ((cur = atomic_load(w)) < v)
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
}

static void *fx_ponger(void *p)
{
    (void)p;
    for (long i = 1; i <= rounds; i++) {
        fx_wait(&fx_ping, (uint32_t)i);
        fx_set(&fx_pong, (uint32_t)i);
    }
    return NULL;
}

static double bench_futex(uint64_t *t)
{
    atomic_store(&fx_ping, 0);
    atomic_store(&fx_pong, 0);
    pthread_t th;
    pthread_create(&th, NULL, fx_ponger, NULL);
    for (long i = 1; i <= rounds; i++) {
        uint64_t t0 = now_ns();
        fx_set(&fx_ping, (uint32_t)i);
        fx_wait(&fx_pong, (uint32_t)i);
        t[i - 1] = now_ns() - t0;
    }
    pthread_join(th, NULL);
    return median(t, rounds);
}

/* ---- (c) spin-then-futex ---- */

/* The spin budget every devq signal starts with (SPIN_DEFAULT_NS in
 * lib/signal/signal.c): a hot hand-off on two free cores lands well
 * inside it, and a partner that is not running costs only this much. */
#define SPIN_NS 2000
#define SPIN_CHECK 32

struct sfx {
    _Alignas(64) _Atomic uint32_t v;
    _Atomic uint32_t sleepers;
};
static struct sfx sf_ping, sf_pong;

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The limit's setter stores blindly.  DEVQ_BENCH_ONLY=lines runs it
 * also with a setter that raises the word by CAS as devq_signal_set
 * does, guessing the old value (sf_setter 1, devq's since 2026-11-28),
 * or loading it first (2, devq's before): the load fetches the line the
 * waiter spins on, and the CAS then takes it again. */
static int sf_setter;

static void sf_set(struct sfx *w, uint32_t v)
{
    if (__builtin_expect(sf_setter != 0, 0)) {
        uint32_t old = sf_setter == 1 ? v - 1 : atomic_load_explicit(&w->v, memory_order_relaxed);
        while (!atomic_compare_exchange_weak(&w->v, &old, v))
            if (old >= v)
                die("spin-then-futex: values only rise");
    } else
        atomic_store(&w->v, v);
    if (atomic_load(&w->sleepers))
        syscall(SYS_futex, &w->v, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void sf_wait(struct sfx *w, uint32_t v)
{
    uint64_t end = now_ns() + SPIN_NS;
    for (;;) {
        for (int i = 0; i < SPIN_CHECK; i++) {
            if (atomic_load_explicit(&w->v, memory_order_acquire) >= v)
                return;
            relax();
        }
        if (now_ns() >= end)
            break;
    }
    atomic_fetch_add(&w->sleepers, 1);
    uint32_t cur;
    while ((cur = atomic_load(&w->v)) < v)
        syscall(SYS_futex, &w->v, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
    atomic_fetch_sub(&w->sleepers, 1);
}

static void *sf_ponger(void *p)
{
    (void)p;
    for (long i = 1; i <= rounds; i++) {
        sf_wait(&sf_ping, (uint32_t)i);
        sf_set(&sf_pong, (uint32_t)i);
    }
    return NULL;
}

static double bench_spin_futex(uint64_t *t)
{
    atomic_store(&sf_ping.v, 0);
    atomic_store(&sf_pong.v, 0);
    pthread_t th;
    pthread_create(&th, NULL, sf_ponger, NULL);
    for (long i = 1; i <= rounds; i++) {
        uint64_t t0 = now_ns();
        sf_set(&sf_ping, (uint32_t)i);
        sf_wait(&sf_pong, (uint32_t)i);
        t[i - 1] = now_ns() - t0;
    }
    pthread_join(th, NULL);
    return median(t, rounds);
}

/* ---- both threads on one CPU ---- */

/* Run fn with the calling thread (and so the ponger it creates, which
 * inherits the mask) confined to the CPU it is on. */
static double on_one_cpu(double (*fn)(uint64_t *), uint64_t *t)
{
    cpu_set_t saved, one;
    pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
    int cpu = sched_getcpu();
    CPU_ZERO(&one);
    CPU_SET(cpu < 0 ? 0 : cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    double r = fn(t);
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    return r;
}

static double devq_private(uint64_t *t)
{
    return bench_devq(t, 0);
}

/* ---- 1b. a batch the stream must run: fill 4 bytes + signal ---- */

static double bench_fill(uint64_t *t, long n)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *buf;
    devq_signal *s;
    if (devq_device_open("cpu", &dev) || devq_queue_create(dev, NULL, &q) ||
        devq_buffer_alloc(dev, 4096, NULL, 0, &buf) || devq_signal_create(0, &s))
        die("fill setup");
    for (long i = 1; i <= n; i++) {
        uint64_t t0 = now_ns();
        if (devq_queue_fill(q, buf, 0, 4, (uint8_t)i) || devq_queue_signal(q, s, (uint64_t)i) ||
            devq_queue_submit(q))
            die("fill submit");
        if (devq_signal_wait(s, (uint64_t)i, 10 * SEC))
            die("fill wait");
        t[i - 1] = now_ns() - t0;
    }
    devq_signal_destroy(s);
    devq_buffer_free(buf, NULL);
    devq_queue_destroy(q);
    devq_device_close(dev);
    return median(t, n);
}

/* DEVQ_BENCH_ONLY: one devq loop alone, for instruction counts. */
static int only(const char *what, uint64_t *t)
{
    if (!strcmp(what, "pingpong"))
        printf("pingpong %ld rounds: median %.0f ns\n", rounds, bench_devq(t, 0));
    else if (!strcmp(what, "rows")) { /* one line: the two rows and their limit, ns */
        /* Median, and the 10th percentile (t is left sorted): on a loaded
         * machine the low percentiles are the rounds nobody preempted. */
        double m[3], p10[3];
        m[0] = bench_devq(t, 0);
        p10[0] = (double)t[rounds / 10];
        m[1] = bench_spin_futex(t);
        p10[1] = (double)t[rounds / 10];
        m[2] = bench_fill(t, rounds);
        p10[2] = (double)t[rounds / 10];
        printf("pingpong %.0f spin_futex %.0f fill %.0f p10: %.0f %.0f %.0f\n", m[0], m[1], m[2], p10[0],
               p10[1], p10[2]);
    } else if (!strcmp(what, "lines")) { /* the limit's setter: store, CAS, load + CAS */
        /* Alternating, three each: the first ping-pong of a process often
         * finds the partner's CPU asleep and settles into futex hand-offs. */
        double m[3][3], p10[3][3];
        for (int rep = 0; rep < 3; rep++)
            for (int k = 0; k < 3; k++) {
                sf_setter = k;
                m[k][rep] = bench_spin_futex(t);
                p10[k][rep] = (double)t[rounds / 10];
            }
        sf_setter = 0;
        printf("store %.0f cas %.0f load_cas %.0f p10: %.0f %.0f %.0f (medians of 3 alternating runs)\n",
               mid3(m[0]), mid3(m[1]), mid3(m[2]), mid3(p10[0]), mid3(p10[1]), mid3(p10[2]));
    } else if (!strcmp(what, "fast"))
        printf("fast %ld x 1000 pairs: %.1f ns per pair\n", rounds / 1000 + 1,
               bench_fast(t, rounds / 1000 + 1, 0));
    else if (!strcmp(what, "fill"))
        printf("fill %ld rounds: median %.0f ns\n", rounds, bench_fill(t, rounds));
    else
        fprintf(stderr, "bench_signal: DEVQ_BENCH_ONLY=%s: want pingpong, fast, fill, rows or lines\n", what);
    return 0;
}

/* ---- notify wake-up ---- */

static void bounce(void *arg, int status)
{
    devq_signal **pair = arg;
    if (!status)
        devq_signal_set(pair[1], devq_signal_value(pair[0]));
}

static double bench_notify(uint64_t *t, long n)
{
    devq_signal *pair[2];
    if (devq_signal_create(0, &pair[0]) || devq_signal_create(0, &pair[1]))
        die("create");
    for (long i = 1; i <= n; i++) {
        if (devq_signal_notify(pair[0], (uint64_t)i, bounce, pair, NULL))
            die("notify");
        uint64_t t0 = now_ns();
        devq_signal_set(pair[0], (uint64_t)i);
        if (devq_signal_wait(pair[1], (uint64_t)i, 10 * SEC))
            die("notify wait");
        t[i - 1] = now_ns() - t0;
    }
    devq_signal_destroy(pair[0]);
    devq_signal_destroy(pair[1]);
    return median(t, n);
}

/* ---- wait_many(ANY) ---- */

struct any_pp {
    devq_signal *go, *s[64];
    size_t n;
    long rounds;
};

static void *any_setter(void *p)
{
    struct any_pp *a = p;
    for (long i = 1; i <= a->rounds; i++) {
        if (devq_signal_wait(a->go, (uint64_t)i, 10 * SEC))
            die("any go");
        devq_signal_set(a->s[(size_t)i % a->n], (uint64_t)i);
    }
    return NULL;
}

static double bench_any(uint64_t *t, size_t n, long r)
{
    struct any_pp a = { .n = n, .rounds = r };
    if (devq_signal_create(0, &a.go))
        die("create");
    for (size_t k = 0; k < n; k++)
        if (devq_signal_create(0, &a.s[k]))
            die("create");
    pthread_t th;
    pthread_create(&th, NULL, any_setter, &a);
    uint64_t values[64];
    for (long i = 1; i <= r; i++) {
        for (size_t k = 0; k < n; k++)
            values[k] = (uint64_t)i;
        uint64_t t0 = now_ns();
        devq_signal_set(a.go, (uint64_t)i);
        size_t first;
        if (devq_signal_wait_many(a.s, values, n, DEVQ_WAIT_ANY, 10 * SEC, &first))
            die("wait_many");
        t[i - 1] = now_ns() - t0;
    }
    pthread_join(th, NULL);
    devq_signal_destroy(a.go);
    for (size_t k = 0; k < n; k++)
        devq_signal_destroy(a.s[k]);
    return median(t, r);
}

int main(void)
{
    const char *env = getenv("DEVQ_BENCH_ROUNDS");
    if (env && atol(env) > 10)
        rounds = atol(env);
    uint64_t *t = malloc((size_t)rounds * sizeof *t);
    if (!t)
        return 1;

    const char *which = getenv("DEVQ_BENCH_ONLY");
    if (which) {
        only(which, t);
        free(t);
        return 0;
    }

    /* Interleave three repetitions so that a noisy neighbour hits every
     * contender alike; report the median of the three medians. */
    double d[3], a[3], b[3], c[3], sh[3], d1[3], b1[3], c1[3], fl[3];
    for (int rep = 0; rep < 3; rep++) {
        d[rep] = bench_devq(t, 0);
        sh[rep] = bench_devq(t, 1);
        a[rep] = bench_condvar(t);
        b[rep] = bench_futex(t);
        c[rep] = bench_spin_futex(t);
        fl[rep] = bench_fill(t, rounds);
    }
    for (int rep = 0; rep < 3; rep++) {
        d1[rep] = on_one_cpu(devq_private, t);
        b1[rep] = on_one_cpu(bench_futex, t);
        c1[rep] = on_one_cpu(bench_spin_futex, t);
    }
    double dm = mid3(d), am = mid3(a), bm = mid3(b), cm = mid3(c), shm = mid3(sh), flm = mid3(fl);
    double load[1] = { 0 };
    getloadavg(load, 1);
    /* With other runnable threads on the machine the two threads often
     * share one core, spinning cannot pay off, and devq falls back to the
     * futex path (about raw-futex speed); print the load so the numbers
     * can be read. */
    printf("machine: %ld cpus online, 1-minute load average %.2f\n", sysconf(_SC_NPROCESSORS_ONLN), load[0]);
    printf("signal ping-pong round trip (2 hand-offs), %ld rounds x 3, median ns\n", rounds);
    printf("  %-44s %10s %10s\n", "contender", "median ns", "devq/x");
    printf("  %-44s %10.0f %10s\n", "devq_signal set/wait", dm, "1.00");
    printf("  %-44s %10.0f %10.2f   (target <= 0.50)\n", "(a) atomic u64 + mutex/condvar broadcast", am,
           dm / am);
    printf("  %-44s %10.0f %10.2f   (target <= 1.30)\n", "(b) raw futex ping-pong", bm, dm / bm);
    printf("  %-44s %10.0f %10.2f   (target <= 1.20)\n", "(c) spin-then-futex ping-pong (2 us spin)", cm,
           dm / cm);
    printf("  %-44s %10.0f %10.2f\n", "devq process-shared signals (create_shared)", shm, dm / shm);
    printf("\nboth threads on one CPU (spinning cannot help), median ns\n");
    printf("  %-44s %10.0f %10s\n", "devq_signal set/wait", mid3(d1), "1.00");
    printf("  %-44s %10.0f %10.2f   (target <= 1.00)\n", "(b) raw futex ping-pong", mid3(b1),
           mid3(d1) / mid3(b1));
    printf("  %-44s %10.0f %10.2f\n", "(c) spin-then-futex ping-pong", mid3(c1), mid3(d1) / mid3(c1));
    printf("\nbatch the stream must run (4-byte fill + signal), submit -> host sees it, cpu, median ns\n");
    printf("  %-44s %10.0f %10.2f   (target <= 2.00 vs (c))\n", "devq fill + signal round trip", flm,
           flm / cm);

    /* The fast path alone: one thread, set then a wait already reached. */
    long fr = rounds / 10 > 100 ? rounds / 10 : 100;
    double fp[3], fs[3];
    for (int rep = 0; rep < 3; rep++) {
        fp[rep] = bench_fast(t, fr, 0);
        fs[rep] = bench_fast(t, fr, 1);
    }
    printf("\nset + reached wait, one thread, ns per pair (median of %ld x 1000)\n", fr);
    printf("  %-44s %10.1f\n", "private signal", mid3(fp));
    printf("  %-44s %10.1f %10.2f   (shared/private)\n", "process-shared signal", mid3(fs),
           mid3(fs) / mid3(fp));

    long nr = rounds / 4 > 1000 ? rounds / 4 : rounds;
    printf("\nnotify wake-up (set -> callback on notifier -> set -> waiter), %ld rounds\n", nr);
    printf("  %-44s %10.0f\n", "devq_signal_notify round trip, median ns", bench_notify(t, nr));

    printf("\nwait_many(ANY) round trip, another thread sets one of n, %ld rounds\n", nr);
    printf("  %-6s %10s %10s\n", "n", "median ns", "vs n=1");
    double base = 0;
    for (size_t n = 1; n <= 64; n *= 2) {
        double m = bench_any(t, n, nr);
        if (n == 1)
            base = m;
        printf("  %-6zu %10.0f %10.2f\n", n, m, m / base);
    }
    free(t);
    return 0;
}
