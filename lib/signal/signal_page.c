/* SPDX-License-Identifier: MIT */
/* The page of a process-shared signal is written by every process that
 * maps it, and one of them may be buggy or hostile.  Nothing read from
 * it is trusted: each read is validated here, where it is made, against
 * what an honest sharer can do (raise the value, fail once: fail state
 * NONE -> WRITING -> DONE with the status, a negative errno, published
 * between the two) and against what this process has already seen.  A
 * page that breaks those rules makes this handle *corrupted*, for good
 * (the state lives in the handle, where no other process can reset it):
 * every call returns DEVQ_SHARED_CORRUPT naming what was wrong, and
 * sleepers are woken to see it.
 *
 * Orders that keep an honest sharer from ever looking corrupt: what this
 * process saw (seen_value, seen_status) is loaded *before* the page word
 * it is compared with, and stored after the page word it came from, so a
 * comparison never puts a newer memory against an older page read. */
#include "config.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "error.h"
#include "futex.h"
#include "log.h"
#include "signal_impl.h"

#define ERRNO_MAX 4095 /* the kernel's MAX_ERRNO: -4095..-1 are errnos */

static struct devq_signal *mut(const struct devq_signal *s)
{
    /* Handles are never const objects: the const of the public API is a
     * promise about the timeline, not about this process's bookkeeping. */
    return (struct devq_signal *)s;
}

static uint32_t page_u32(const uint32_t *p)
{
    return *(const volatile uint32_t *)p;
}

/* Mark s corrupted (the first finder names it) and wake everyone that may
 * sleep on the page: this process's waiters and notifier, and the other
 * processes' (which then look for themselves).  corrupted() below is the
 * way to call it: it yields DEVQ_SHARED_CORRUPT where the caller can see
 * it (the analyzer does not follow a variadic call's return value). */
__attribute__((format(printf, 2, 3), cold)) static void mark_corrupted(const struct devq_signal *cs,
                                                                       const char *fmt, ...)
{
    struct devq_signal *s = mut(cs);
    int expect = 0;
    if (!atomic_compare_exchange_strong(&s->corrupt, &expect, 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->corrupt_what, sizeof s->corrupt_what, fmt, ap);
    va_end(ap);
    atomic_store_explicit(&s->corrupt, 2, memory_order_release);
    devq__log(DEVQ_LOG_BASIC,
              "shared %s was corrupted by a process sharing "
              "it (%s)",
              devq__signal_label(s).s, s->corrupt_what);
    atomic_fetch_add(&s->tl->seq, 1);
    devq__futex_wake_bits((const uint32_t *)&s->tl->seq, UINT32_MAX, 1);
}
#define corrupted(s, ...) (mark_corrupted((s), __VA_ARGS__), DEVQ_SHARED_CORRUPT)

int devq__shared_corrupted(const struct devq_signal *s, const char *fmt, ...)
{
    char what[sizeof s->corrupt_what];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return corrupted(s, "%s", what);
}

static const char *corrupt_what(const struct devq_signal *s)
{
    /* The finder is between its two stores (a snprintf of numbers). */
    while (atomic_load_explicit(&s->corrupt, memory_order_acquire) == 1)
        devq__cpu_relax();
    return s->corrupt_what;
}

uint64_t devq__shared_floor(const struct devq_signal *s)
{
    return atomic_load_explicit(&s->seen_value, memory_order_acquire);
}

/* A plain store, not a CAS loop: two threads racing may leave the lower
 * of their two values, which only weakens the check (every value stored
 * here was on the page before it was stored), never makes it wrong. */
void devq__shared_saw(const struct devq_signal *s, uint64_t v)
{
    if (v > atomic_load_explicit(&s->seen_value, memory_order_relaxed))
        atomic_store_explicit(&mut(s)->seen_value, v, memory_order_release);
}

int devq__shared_check_floor(const struct devq_signal *s, uint64_t floor, uint64_t cur)
{
    if (cur < floor)
        return corrupted(s, "value went down from %" PRIu64 " to %" PRIu64, floor, cur);
    devq__shared_saw(s, cur);
    return 0;
}

uint64_t devq__shared_value(const struct devq_signal *s)
{
    uint64_t floor = devq__shared_floor(s);
    if (atomic_load_explicit(&s->corrupt, memory_order_relaxed))
        return floor;
    uint64_t v = atomic_load_explicit(&s->tl->value, memory_order_acquire);
    return devq__shared_check_floor(s, floor, v) ? floor : v;
}

static const char *fail_state_name(uint32_t f)
{
    return f == FAIL_NONE ? "not failed" : f == FAIL_WRITING ? "failing" : "failed";
}

/* The failure part of the page: fail state, status, fail state again.
 * An honest failure moves the fail state up only, and publishes the
 * status after WRITING and before DONE, once. */
static int check_failure(const struct devq_signal *s)
{
    const struct devq_timeline *tl = s->tl;
    int seen = atomic_load_explicit(&s->seen_status, memory_order_acquire);
    uint32_t f1 = atomic_load_explicit(&tl->fail_state, memory_order_acquire);
    int st = atomic_load_explicit(&tl->status, memory_order_acquire);
    uint32_t f2 = atomic_load_explicit(&tl->fail_state, memory_order_acquire);
    if (f1 > FAIL_DONE || f2 > FAIL_DONE)
        return corrupted(s, "fail state word %" PRIu32 " is not one of its states 0, 1, 2",
                         f1 > FAIL_DONE ? f1 : f2);
    if (f2 < f1)
        return corrupted(s, "fail state went back from %s to %s", fail_state_name(f1), fail_state_name(f2));
    if (st > 0 || st < -ERRNO_MAX)
        return corrupted(s, "status word %d is not 0 or a negative errno", st);
    if (seen && st != seen)
        return corrupted(s,
                         "status word changed from %d to %d after the failure was "
                         "published",
                         seen, st);
    if (!st && f1 == FAIL_DONE)
        return corrupted(s, "fail state says failed but the status word is 0");
    if (st && f2 == FAIL_NONE)
        return corrupted(s, "status word %d but the fail state says not failed", st);
    if (st && !seen) {
        int expect = 0;
        if (!atomic_compare_exchange_strong(&mut(s)->seen_status, &expect, st) && expect != st)
            return corrupted(s,
                             "status word changed from %d to %d after the failure was "
                             "published",
                             expect, st);
    }
    return st;
}

/* The whole page, read once: 0 with *value, the failure, or
 * DEVQ_SHARED_CORRUPT. */
static int read_page(const struct devq_signal *s, uint64_t *value)
{
    if (atomic_load_explicit(&s->corrupt, memory_order_relaxed))
        return DEVQ_SHARED_CORRUPT;
    const struct devq_timeline *tl = s->tl;
    uint32_t magic = page_u32(&tl->magic), version = page_u32(&tl->version);
    if (magic != DEVQ_TIMELINE_MAGIC || version != DEVQ_TIMELINE_VERSION)
        return corrupted(s,
                         "header changed to magic 0x%08" PRIx32 " version %" PRIu32 ", was 0x%08x version %u",
                         magic, version, DEVQ_TIMELINE_MAGIC, DEVQ_TIMELINE_VERSION);
    int st = check_failure(s);
    if (st)
        return st;
    uint64_t floor = devq__shared_floor(s);
    uint64_t v = atomic_load_explicit(&tl->value, memory_order_acquire);
    if (v == floor) { /* the common case: nothing new */
        *value = v;
        return 0;
    }
    int r = devq__shared_check_floor(s, floor, v);
    *value = r ? floor : v;
    return r;
}

int devq__shared_status(const struct devq_signal *s)
{
    uint64_t v;
    return read_page(s, &v);
}

int devq__shared_probe(const struct devq_signal *s, uint64_t want)
{
    uint64_t v;
    int r = read_page(s, &v);
    return r ? r : v >= want;
}

int devq__shared_check(const struct devq_signal *s)
{
    if (devq__shared_status(s) == DEVQ_SHARED_CORRUPT &&
        atomic_load_explicit(&s->corrupt, memory_order_relaxed))
        return devq__shared_fail_err(s, DEVQ_SHARED_CORRUPT);
    return 0;
}

/* Copy the cause out of the page: at most cap - 1 bytes, up to its NUL
 * if it has one, every byte outside printable ASCII (a terminal escape,
 * a newline in a log line, half of a UTF-8 sequence) replaced by '?'.
 * Read byte by byte, once: another process may be changing it. */
static void copy_cause(const struct devq_signal *s, char *dst, size_t cap)
{
    const volatile char *src = s->tl->cause;
    size_t n = sizeof s->tl->cause < cap ? sizeof s->tl->cause : cap - 1;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (!c)
            break;
        dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    dst[i] = '\0'; /* also where the field had no terminator */
}

static int corrupt_msg(const struct devq_signal *s, char *dst, size_t cap)
{
    return snprintf(dst, cap,
                    "shared %s was corrupted by a process sharing "
                    "it (%s)",
                    devq__signal_label(s).s, corrupt_what(s));
}

int devq__shared_fail_err(const struct devq_signal *s, int status)
{
    char msg[DEVQ_ERRMSG_MAX];
    if (atomic_load_explicit(&s->corrupt, memory_order_acquire)) {
        corrupt_msg(s, msg, sizeof msg);
        return devq__err_str(DEVQ_SHARED_CORRUPT, msg);
    }
    copy_cause(s, msg, sizeof msg);
    return devq__err_str(status, msg);
}

const char *devq__shared_cause(const struct devq_signal *s)
{
    /* Callers print it at once (one per message), so one buffer per
     * thread is enough and nothing of the page is handed out. */
    static _Thread_local char buf[DEVQ_ERRMSG_MAX];
    int st = devq__shared_status(s);
    if (st == DEVQ_SHARED_CORRUPT && atomic_load_explicit(&s->corrupt, memory_order_relaxed))
        corrupt_msg(s, buf, sizeof buf);
    else if (st)
        copy_cause(s, buf, sizeof buf);
    else
        buf[0] = '\0';
    return buf;
}

uint64_t devq__shared_slice(uint64_t deadline)
{
    uint64_t next = devq__now_ns() + DEVQ_SHARED_RECHECK_NS;
    return next < deadline ? next : deadline;
}
