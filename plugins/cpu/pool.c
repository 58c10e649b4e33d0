/* SPDX-License-Identifier: MIT */
/* cpu backend: the shared work-group pool.
 *
 * One pool per process, DEVQ_CPU_THREADS threads (default: online
 * cores), started on first use.  A stream worker that launches work
 * queues a job and then runs items of that same job itself, so a launch
 * always progresses even when the pool is busy with other streams, and
 * a big launch uses every core.  Pool threads take the job of highest
 * priority (FIFO among equals) and look again whenever a new job
 * arrives, so a high-priority stream's queued items go first when the
 * pool is contended. */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cpu.h"

#define CPU_POOL_MAX_THREADS 1024
#define CPU_POOL_SPIN_NS 20000u

static struct {
    pthread_mutex_t lock;
    struct cpu_job *head; /* sorted by priority, highest first */
    _Atomic uint32_t gen; /* bumped per queued job; idle threads sleep on it */
    unsigned idle;        /* threads between jobs */
    int configured;
    unsigned nthreads; /* wanted */
    unsigned started;  /* running */
    pthread_t *threads;
    int stop;
    uint64_t retry_ns; /* a failed start is tried again from then */
} cpu_pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A fork()ed child has none of the parent's threads: start over, so the
 * child reads DEVQ_CPU_THREADS afresh and starts its own pool. */
static void cpu_pool_atfork_child(void)
{
    pthread_mutex_init(&cpu_pool.lock, NULL);
    cpu_pool.head = NULL;
    cpu_pool.idle = 0;
    cpu_pool.configured = 0;
    cpu_pool.started = 0;
    cpu_pool.threads = NULL; /* the parent's array: leaked in the child */
    cpu_pool.stop = 0;
    cpu_pool.retry_ns = 0;
}

static pthread_once_t cpu_pool_once = PTHREAD_ONCE_INIT;
static void cpu_pool_register_atfork(void)
{
    pthread_atfork(NULL, NULL, cpu_pool_atfork_child);
}

static int cpu_pool_config_locked(void)
{
    if (cpu_pool.configured)
        return 0;
    const char *v = cpu_host->getenv("DEVQ_CPU_THREADS");
    unsigned long n;
    if (!v || !*v) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (unsigned long)cores : 1;
    } else {
        char *end;
        errno = 0;
        n = strtoul(v, &end, 10);
        if (errno || *end || end == v || !isdigit((unsigned char)v[0]) || n < 1 || n > CPU_POOL_MAX_THREADS)
            return cpu_host->error(-EINVAL,
                                   "DEVQ_CPU_THREADS: '%s' is not a thread count "
                                   "(want 1..%d)",
                                   v, CPU_POOL_MAX_THREADS);
    }
    cpu_pool.nthreads = (unsigned)n;
    cpu_pool.configured = 1;
    return 0;
}

int cpu_pool_config(void)
{
    pthread_once(&cpu_pool_once, cpu_pool_register_atfork);
    pthread_mutex_lock(&cpu_pool.lock);
    int err = cpu_pool_config_locked();
    pthread_mutex_unlock(&cpu_pool.lock);
    return err;
}

/* Take items of job until none is left, or (for pool threads) until a
 * new job arrives and the thread should choose again. */
static void cpu_job_work(struct cpu_job *job, uint32_t watch_gen, int watch)
{
    for (;;) {
        uint64_t i = atomic_fetch_add_explicit(&job->next_index, 1, memory_order_relaxed);
        if (i >= job->total)
            return;
        int r = job->run(job, i);
        if (r) {
            int expected = 0;
            atomic_compare_exchange_strong(&job->error, &expected, r);
            /* Stop handing out the rest of this job. */
            atomic_store_explicit(&job->next_index, job->total, memory_order_relaxed);
            return;
        }
        if (watch && atomic_load_explicit(&cpu_pool.gen, memory_order_relaxed) != watch_gen)
            return;
    }
}

static int cpu_job_exhausted(struct cpu_job *job)
{
    return atomic_load_explicit(&job->next_index, memory_order_relaxed) >= job->total;
}

/* The job a pool thread should work on; drops exhausted jobs. */
static struct cpu_job *cpu_pool_pick_locked(void)
{
    while (cpu_pool.head && cpu_job_exhausted(cpu_pool.head)) {
        cpu_pool.head->queued = 0;
        cpu_pool.head = cpu_pool.head->next;
    }
    return cpu_pool.head;
}

static void cpu_job_release(struct cpu_job *job)
{
    /* The owner may return (and its job go out of scope) as soon as it
     * sees 0; the wake on a stale address is harmless to futex users,
     * who all re-check their condition. */
    if (atomic_fetch_sub_explicit(&job->users, 1, memory_order_acq_rel) == 1)
        cpu_host->futex_wake((const uint32_t *)&job->users, 1);
}

/* An idle pool thread: spin a little (launches come in bursts), then
 * sleep until the generation moves.  Called and returns with the lock. */
static void cpu_pool_idle_locked(void)
{
    uint32_t g = atomic_load_explicit(&cpu_pool.gen, memory_order_relaxed);
    cpu_pool.idle++;
    pthread_mutex_unlock(&cpu_pool.lock);
    uint64_t end = cpu_host->now_ns() + CPU_POOL_SPIN_NS;
    unsigned i = 0;
    while (atomic_load_explicit(&cpu_pool.gen, memory_order_acquire) == g) {
        if ((++i & 63) == 0 && cpu_host->now_ns() > end) {
            cpu_host->futex_wait((const uint32_t *)&cpu_pool.gen, g, CPU_NO_DEADLINE);
            break;
        }
        cpu_spin_step(i);
    }
    pthread_mutex_lock(&cpu_pool.lock);
    cpu_pool.idle--;
}

static void *cpu_pool_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cpu_pool.lock);
    while (!cpu_pool.stop) {
        struct cpu_job *job = cpu_pool_pick_locked();
        if (!job) {
            cpu_pool_idle_locked();
            continue;
        }
        atomic_fetch_add_explicit(&job->users, 1, memory_order_relaxed);
        uint32_t g = atomic_load_explicit(&cpu_pool.gen, memory_order_relaxed);
        pthread_mutex_unlock(&cpu_pool.lock);
        cpu_job_work(job, g, 1);
        cpu_job_release(job);
        pthread_mutex_lock(&cpu_pool.lock);
    }
    pthread_mutex_unlock(&cpu_pool.lock);
    return NULL;
}

#define CPU_POOL_RETRY_NS 1000000000ull

static uint64_t pool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start the threads on first use.  A thread that cannot be created is
 * logged and done without: owners run their own jobs anyway, so no work
 * waits for it (devq(7) THREADS).  The missing ones are tried again at
 * most once a second, so lifting RLIMIT_NPROC brings the pool back
 * without a failed clone on every launch meanwhile. */
static void cpu_pool_start_locked(void)
{
    if (cpu_pool.stop || cpu_pool_config_locked() || cpu_pool.started == cpu_pool.nthreads)
        return;
    if (cpu_pool.retry_ns && pool_now_ns() < cpu_pool.retry_ns)
        return;
    if (!cpu_pool.threads)
        cpu_pool.threads = calloc(cpu_pool.nthreads, sizeof *cpu_pool.threads);
    if (!cpu_pool.threads) {
        cpu_pool.retry_ns = pool_now_ns() + CPU_POOL_RETRY_NS;
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = cpu_pool.started; i < cpu_pool.nthreads; i++) {
        int rc = pthread_create(&cpu_pool.threads[i], NULL, cpu_pool_thread, NULL);
        if (rc) {
            cpu_host->log(DEVQ_LOG_BASIC,
                          "cpu: started %u of %u pool threads: %s (the "
                          "streams run their launches themselves; retried in 1 s)",
                          i, cpu_pool.nthreads, strerror(rc));
            cpu_pool.retry_ns = pool_now_ns() + CPU_POOL_RETRY_NS;
            break;
        }
        char name[32]; /* the kernel keeps 15 characters */
        snprintf(name, sizeof name, "devq-cpu-p%u", i);
        name[15] = '\0';
        pthread_setname_np(cpu_pool.threads[i], name);
        cpu_pool.started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

unsigned cpu_pool_threads(void)
{
    pthread_mutex_lock(&cpu_pool.lock);
    cpu_pool_start_locked();
    unsigned n = cpu_pool.started;
    pthread_mutex_unlock(&cpu_pool.lock);
    return n;
}

unsigned cpu_pool_size(void)
{
    pthread_mutex_lock(&cpu_pool.lock);
    unsigned n = cpu_pool_config_locked() ? 0 : cpu_pool.nthreads;
    pthread_mutex_unlock(&cpu_pool.lock);
    return n;
}

static void cpu_pool_enqueue_locked(struct cpu_job *job)
{
    struct cpu_job **p = &cpu_pool.head;
    while (*p && (*p)->priority >= job->priority)
        p = &(*p)->next;
    job->next = *p;
    *p = job;
    job->queued = 1;
}

static void cpu_pool_remove_locked(struct cpu_job *job)
{
    for (struct cpu_job **p = &cpu_pool.head; *p; p = &(*p)->next)
        if (*p == job) {
            *p = job->next;
            break;
        }
    job->queued = 0;
}

int cpu_pool_run(struct cpu_job *job)
{
    job->queued = 0;
    atomic_init(&job->next_index, 0);
    atomic_init(&job->error, 0);
    atomic_init(&job->users, 0);
    if (job->total > 1) {
        pthread_mutex_lock(&cpu_pool.lock);
        cpu_pool_start_locked();
        unsigned wake = 0;
        if (cpu_pool.started && !cpu_pool.stop) {
            cpu_pool_enqueue_locked(job);
            atomic_fetch_add_explicit(&cpu_pool.gen, 1, memory_order_release);
            wake = cpu_pool.idle;
        }
        pthread_mutex_unlock(&cpu_pool.lock);
        if (wake) {
            uint64_t want = job->total - 1;
            cpu_host->futex_wake((const uint32_t *)&cpu_pool.gen, want < wake ? (int)want : (int)wake);
        }
    }
    cpu_job_work(job, 0, 0);
    if (job->total > 1) {
        pthread_mutex_lock(&cpu_pool.lock);
        if (job->queued)
            cpu_pool_remove_locked(job);
        pthread_mutex_unlock(&cpu_pool.lock);
        /* No thread can pick the job up now; wait for those that did. */
        uint32_t u;
        while ((u = atomic_load_explicit(&job->users, memory_order_acquire)) != 0)
            cpu_host->futex_wait((const uint32_t *)&job->users, u, CPU_NO_DEADLINE);
    }
    return atomic_load_explicit(&job->error, memory_order_acquire);
}

void cpu_pool_shutdown(void)
{
    pthread_mutex_lock(&cpu_pool.lock);
    if (!cpu_pool.started) {
        pthread_mutex_unlock(&cpu_pool.lock);
        return;
    }
    cpu_pool.stop = 1;
    atomic_fetch_add_explicit(&cpu_pool.gen, 1, memory_order_release);
    unsigned n = cpu_pool.started;
    pthread_mutex_unlock(&cpu_pool.lock);
    cpu_host->futex_wake((const uint32_t *)&cpu_pool.gen, INT_MAX);
    for (unsigned i = 0; i < n; i++)
        pthread_join(cpu_pool.threads[i], NULL);
    pthread_mutex_lock(&cpu_pool.lock);
    free(cpu_pool.threads);
    cpu_pool.threads = NULL;
    cpu_pool.started = 0;
    cpu_pool.stop = 0;
    pthread_mutex_unlock(&cpu_pool.lock);
}
