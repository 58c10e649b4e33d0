/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "futex.h"

uint64_t devq__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t devq__deadline(uint64_t timeout_ns)
{
    if (timeout_ns == UINT64_MAX)
        return DEVQ_NO_DEADLINE;
    uint64_t now = devq__now_ns();
    return timeout_ns > DEVQ_NO_DEADLINE - 1 - now ? DEVQ_NO_DEADLINE - 1 : now + timeout_ns;
}

const struct timespec *devq__deadline_ts(uint64_t deadline_ns, struct timespec *ts, int *passed)
{
    *passed = 0;
    if (deadline_ns == DEVQ_NO_DEADLINE)
        return NULL;
    if (devq__now_ns() >= deadline_ns) {
        *passed = 1;
        return NULL;
    }
    ts->tv_sec = (time_t)(deadline_ns / 1000000000ull);
    ts->tv_nsec = (long)(deadline_ns % 1000000000ull);
    return ts;
}

int devq__futex_wait_bits(const uint32_t *word, uint32_t expected, uint32_t bits, uint64_t deadline_ns,
                          int shared)
{
    struct timespec ts;
    int passed;
    const struct timespec *tsp = devq__deadline_ts(deadline_ns, &ts, &passed);
    if (passed)
        return -ETIMEDOUT;
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a
     * wait that is woken spuriously and retried never stretches the timeout. */
    int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    long r = syscall(SYS_futex, word, op, expected, tsp, NULL, bits);
    if (r == -1 && errno == ETIMEDOUT)
        return -ETIMEDOUT;
    return 0;
}

int devq__futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns, int shared)
{
    return devq__futex_wait_bits(word, expected, FUTEX_BITSET_MATCH_ANY, deadline_ns, shared);
}

void devq__futex_wake_bits(const uint32_t *word, uint32_t bits, int shared)
{
    int op = FUTEX_WAKE_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    syscall(SYS_futex, word, op, INT_MAX, NULL, NULL, bits);
}

void devq__futex_wake(const uint32_t *word, int n, int shared)
{
    int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    syscall(SYS_futex, word, op, n, NULL, NULL, 0);
}

/* A thread that may run on one CPU only (pinned, or a one-CPU machine or
 * cgroup) cannot be helped by spinning: whoever sets what it waits for
 * shares that CPU (threads inherit their creator's mask) or, if not, gets
 * no worse than a plain futex wait.  While it spins the setter cannot run,
 * so every spin is time taken from the one thread that can end it.
 * Affinity can change at any time; it is read again every 64 calls (a
 * syscall of ~0.2 us, under 4 ns a wait). */
int devq__spin_can_help(void)
{
    static _Thread_local unsigned calls;
    static _Thread_local int alone;
    if (calls++ % 64 == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        alone = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) <= 1;
    }
    return !alone;
}
