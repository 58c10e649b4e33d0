/* SPDX-License-Identifier: MIT */
/* Futex and clock helpers shared by signals, the notifier and plugins
 * (through the host table). */
#ifndef DEVQ_LIB_FUTEX_H
#define DEVQ_LIB_FUTEX_H

#include <stdint.h>
#include <time.h>

#define DEVQ_NO_DEADLINE UINT64_MAX

uint64_t devq__now_ns(void); /* CLOCK_MONOTONIC */
/* Absolute deadline for a relative timeout; saturates to DEVQ_NO_DEADLINE. */
uint64_t devq__deadline(uint64_t timeout_ns);

/* The timespec a futex call takes for an absolute deadline: NULL for
 * none, or ts filled in; *passed = 1 when the deadline has gone by. */
const struct timespec *devq__deadline_ts(uint64_t deadline_ns, struct timespec *ts, int *passed);

/* Wait while *word == expected, until an absolute CLOCK_MONOTONIC deadline.
 * 0 when woken (or the word differed, or a signal interrupted), -ETIMEDOUT.
 * `shared`: the word may live in memory shared between processes. */
int devq__futex_wait(const uint32_t *word, uint32_t expected, uint64_t deadline_ns, int shared);
void devq__futex_wake(const uint32_t *word, int n, int shared);
/* Wake only waiters whose bitset intersects `bits` (FUTEX_WAKE_BITSET). */
void devq__futex_wake_bits(const uint32_t *word, uint32_t bits, int shared);
int devq__futex_wait_bits(const uint32_t *word, uint32_t expected, uint32_t bits, uint64_t deadline_ns,
                          int shared);

/* 0 when spinning cannot help the calling thread (it may run on one CPU
 * only): then waits go straight to sleep. */
int devq__spin_can_help(void);

/* A pause instruction for spin loops. */
static inline void devq__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
