/* SPDX-License-Identifier: MIT */
/* The memory resources' lock: a three-state futex mutex (0 free, 1 held,
 * 2 held with sleepers).  Its uncontended round trip is one compare-and-
 * swap and one exchange, with no mutex-type dispatch: the pool takes it
 * once per allocate and once per free, so what glibc's generic
 * pthread_mutex adds on top shows directly in pairs per second.  A
 * contended lock spins briefly (the holder only pops or pushes a list),
 * then sleeps on the futex; it is woken by the unlock, never by polling. */
#ifndef DEVQ_LIB_MEM_LOCK_H
#define DEVQ_LIB_MEM_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

struct mem_lock {
    _Atomic uint32_t word;
};

void devq__mem_lock_slow(struct mem_lock *l);
void devq__mem_unlock_wake(struct mem_lock *l);

static inline void mem_lock_init(struct mem_lock *l)
{
    atomic_init(&l->word, 0);
}

static inline void mem_lock(struct mem_lock *l)
{
    uint32_t free_word = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->word, &free_word, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        devq__mem_lock_slow(l);
}

static inline void mem_unlock(struct mem_lock *l)
{
    if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)
        devq__mem_unlock_wake(l);
}

#endif
