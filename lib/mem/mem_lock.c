/* SPDX-License-Identifier: MIT */
/* Slow paths of the memory resources' lock (see mem_lock.h). */
#include "config.h"
#include "futex.h"
#include "mem_lock.h"

#define SPINS 64

void devq__mem_lock_slow(struct mem_lock *l)
{
    for (int i = 0; i < SPINS; i++) {
        uint32_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
        if (w == 0 && atomic_compare_exchange_weak_explicit(&l->word, &w, 1, memory_order_acquire,
                                                            memory_order_relaxed))
            return;
        if (w == 2)
            break; /* others already sleep: join them */
        devq__cpu_relax();
    }
    /* Mark "held with sleepers" and sleep until it was free when marked.
     * Whoever takes it this way unlocks with a wake, which may be spare
     * but never missing. */
    while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
        devq__futex_wait((const uint32_t *)&l->word, 2, DEVQ_NO_DEADLINE, 0);
}

void devq__mem_unlock_wake(struct mem_lock *l)
{
    devq__futex_wake((const uint32_t *)&l->word, 1, 0);
}
