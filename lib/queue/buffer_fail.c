/* SPDX-License-Identifier: MIT */
/* Failure that follows data (DESIGN §5a): a buffer remembers the failure
 * its last writer left, and every op that reads it inherits it.
 *
 * The state is written only by the completion callbacks of the batches
 * that write the buffer, at the end of the unit of work that wrote it
 * (batch_walk.c).  The tracker orders every other use of the buffer
 * after that unit (RAW) or before it (WAR), so a reader's own callbacks
 * always see the verdict of the writer it was ordered after, whether the
 * wait was inserted or elided.  The fast path is one atomic load; the
 * cause text lives on the heap, only while the buffer is failed, under
 * a striped lock (callbacks of unrelated buffers never contend). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "buffer_fail.h"
#include "cause.h"
#include "error.h"
#include "signal_int.h"

#define STRIPES 32
static pthread_mutex_t stripe[STRIPES] = {
#define M PTHREAD_MUTEX_INITIALIZER
    M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
#undef M
};

static pthread_mutex_t *lock_of(const devq_buffer *b)
{
    uintptr_t h = (uintptr_t)b >> 6;
    return &stripe[(h ^ (h >> 5)) % STRIPES];
}

/* Buffers failed right now, in the whole process.  While it is zero no
 * read can fail and no write has anything to clear, so a batch's walk
 * has nothing to do: the success path costs one load per callback.  A
 * writer's increment happens before the stream point its readers are
 * ordered after, so they cannot miss it. */
static _Atomic long live_failed;

int devq__buffer_any_failed(void)
{
    return atomic_load_explicit(&live_failed, memory_order_acquire) != 0;
}

struct devq_label devq__buffer_label(const devq_buffer *b)
{
    size_t n = b->size;
    const char *unit = "bytes";
    if (n >= (1u << 20) && n % (1u << 20) == 0) {
        n >>= 20;
        unit = "MiB";
    } else if (n >= 1024 && n % 1024 == 0) {
        n >>= 10;
        unit = "KiB";
    }
    char detail[64];
    snprintf(detail, sizeof detail, "tag %u, %zu %s", b->tag, n, unit);
    return devq__name_label(&b->name, DEVQ_NAME_BUFFER, detail);
}

/* Generations wrap: compared as a signed distance (writes in flight on
 * one buffer are far fewer than 2^31 apart). */
static int gen_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

/* Writes are marked in their generation's order, except a batch that
 * failed while being issued, which marks what it writes at once: its
 * failure may then come before an earlier write's verdict.  The state
 * keeps the newest failure's cause and the oldest failed generation not
 * yet overwritten, so that a reader between two failed writes still
 * fails, and a reader before an early-marked one does not. */
void devq__buffer_fail(devq_buffer *b, int err, const char *cause, uint32_t gen)
{
    char *text = malloc(DEVQ_CAUSE_MAX);
    if (text)
        devq__cause_compact(text, DEVQ_CAUSE_MAX, cause && *cause ? cause : "failed");
    pthread_mutex_t *m = lock_of(b);
    pthread_mutex_lock(m);
    char *old = text;
    if (!atomic_load_explicit(&b->fail_err, memory_order_relaxed)) {
        atomic_fetch_add(&live_failed, 1);
        b->fail_lo = b->fail_gen = gen;
        old = b->fail_cause;
        b->fail_cause = text;
    } else {
        if (gen_le(b->fail_gen, gen)) { /* the newest failure says why */
            b->fail_gen = gen;
            old = b->fail_cause;
            b->fail_cause = text;
        }
        if (!gen_le(b->fail_lo, gen))
            b->fail_lo = gen;
    }
    atomic_store_explicit(&b->fail_err, err < 0 ? err : -EIO, memory_order_release);
    pthread_mutex_unlock(m);
    free(old);
}

void devq__buffer_clear(devq_buffer *b, uint32_t gen)
{
    if (!atomic_load_explicit(&b->fail_err, memory_order_acquire))
        return;
    pthread_mutex_t *m = lock_of(b);
    pthread_mutex_lock(m);
    char *old = NULL;
    if (gen_le(b->fail_gen, gen)) { /* newer than every failure */
        old = b->fail_cause;
        b->fail_cause = NULL;
        if (atomic_exchange_explicit(&b->fail_err, 0, memory_order_acq_rel))
            atomic_fetch_sub(&live_failed, 1);
    } else if (gen_le(b->fail_lo, gen)) {
        b->fail_lo = b->fail_gen; /* only the early-marked failure is left */
    }
    pthread_mutex_unlock(m);
    free(old);
}

/* The failure a reader sees: of writes up to gen, or (any) the latest. */
static int failed(const devq_buffer *b, int any, uint32_t gen, char *cause, size_t cap)
{
    if (!atomic_load_explicit(&b->fail_err, memory_order_acquire))
        return 0;
    pthread_mutex_t *m = lock_of(b);
    pthread_mutex_lock(m);
    int err = atomic_load_explicit(&b->fail_err, memory_order_relaxed);
    if (err && !any && !gen_le(b->fail_lo, gen))
        err = 0; /* only later writes failed */
    if (err && cap)
        snprintf(cause, cap, "%s", b->fail_cause ? b->fail_cause : "failed (no memory for the cause)");
    pthread_mutex_unlock(m);
    return err;
}

int devq__buffer_failed(const devq_buffer *b, char *cause, size_t cap)
{
    return failed(b, 1, 0, cause, cap);
}

int devq__buffer_failed_at(const devq_buffer *b, uint32_t gen, char *cause, size_t cap)
{
    return failed(b, 0, gen, cause, cap);
}

void devq__buffer_fail_fini(devq_buffer *b)
{
    if (atomic_exchange(&b->fail_err, 0))
        atomic_fetch_sub(&live_failed, 1);
    free(b->fail_cause);
    b->fail_cause = NULL;
}
