/* SPDX-License-Identifier: MIT */
/* Timeline signals: lifetime, value, failure, and the pending heap.
 *
 * The hot path is `set` (called on every batch completion from backend
 * callback threads): one CAS on the value, the first touch of its line
 * (raise_value), one load of the waiter count (with nobody asleep: no
 * bump of the futex word, no syscall) and one load of the smallest
 * pending registration value.  Everything else (waits, notifies, fds)
 * is arranged so that `set` never scans. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "error.h"
#include "futex.h"
#include "signal_impl.h"

#define SPIN_DEFAULT_NS 2000 /* first waits spin 2 us; see signal_wait.c */

static _Atomic uint64_t next_signal_id = 1;

/* The last reference: nothing here calls a backend, so it runs on the
 * releasing thread, whichever it is (object.h). */
static void signal_destroy(struct devq_object *o)
{
    struct devq_signal *s = DEVQ_OBJECT_OWNER(o, struct devq_signal, obj);
    /* A raise whose value a waiter saw (and so let the last reference
     * go) may still be publishing: a few stores and a wake, never a
     * wait, so this ends. */
    for (unsigned i = 0; atomic_load_explicit(&s->setting, memory_order_acquire); i++) {
        if (i < 64)
            devq__cpu_relax();
        else
            sched_yield();
    }
    if (s->shared)
        devq__signal_shared_unmap(s);
    pthread_mutex_destroy(&s->lock);
    free(s->heap);
    s->obj.magic = DEVQ_MAGIC_DEAD;
    free(s);
}

int devq__signal_alloc(struct devq_signal **out)
{
    struct devq_signal *s = aligned_alloc(64, sizeof *s);
    if (s)
        memset(s, 0, sizeof *s);
    if (!s)
        return devq__err(-ENOMEM, "devq_signal_create: out of memory");
    devq__object_init(&s->obj, DEVQ_MAGIC_SIGNAL, signal_destroy);
    s->id = atomic_fetch_add(&next_signal_id, 1);
    s->tl = &s->local;
    s->local.magic = DEVQ_TIMELINE_MAGIC;
    s->local.version = DEVQ_TIMELINE_VERSION;
    s->memfd = -1;
    atomic_init(&s->spin_budget, SPIN_DEFAULT_NS);
    atomic_init(&s->pending_min, UINT64_MAX);
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return 0;
}

int devq__signal_check_user(const devq_signal *s, const char *fn)
{
    return devq__signal_check_fast(s, fn);
}

int devq__signal_check_user_err(const devq_signal *s, const char *fn)
{
    if (!s)
        return devq__err(-EINVAL, "%s: signal is NULL", fn);
    if (s->obj.magic != DEVQ_MAGIC_SIGNAL)
        return devq__err(-EINVAL, "%s: %p is not a live devq_signal (garbage or freed pointer)", fn,
                         (const void *)s);
    if (atomic_load_explicit(&s->user_dead, memory_order_relaxed))
        return devq__err(-EINVAL, "%s: %s was destroyed", fn, devq__signal_label(s).s);
    return 0;
}

int devq__signal_check(const devq_signal *s, const char *fn)
{
    return devq__signal_check_user(s, fn);
}

void devq__signal_retain(devq_signal *s)
{
    devq__object_retain(&s->obj);
}

void devq__signal_release(devq_signal *s)
{
    devq__object_release_here(&s->obj);
}

uint64_t devq__signal_id(const devq_signal *s)
{
    return s->id;
}

int devq__signal_settled(const devq_signal *s, uint64_t v)
{
    return devq__tl_value(s) >= v || devq__tl_status(s) ||
           atomic_load_explicit(&s->user_dead, memory_order_relaxed);
}

uint64_t *devq__signal_value_word(devq_signal *s)
{
    /* _Atomic uint64_t has the size and alignment of uint64_t here; the
     * backend writes it with its own atomics (device memory ops). */
    return (uint64_t *)&s->tl->value;
}

const char *devq__signal_cause(const devq_signal *s)
{
    if (s->shared)
        return devq__shared_cause(s);
    if (!atomic_load_explicit(&s->tl->status, memory_order_acquire))
        return "";
    return s->tl->cause;
}

int devq__signal_wait_verdict(const devq_signal *s, uint64_t v, char *cause, size_t cap)
{
    /* Through the validating readers: a shared page is never trusted. */
    int st = devq__tl_status(s);
    if (st) {
        snprintf(cause, cap, "%s", devq__signal_cause(s));
        return st;
    }
    uint64_t cur = devq__tl_value(s);
    if (cur >= v || !atomic_load(&s->user_dead))
        return 0;
    snprintf(cause, cap, "%s was destroyed at value %" PRIu64 " before reaching %" PRIu64,
             devq__signal_label(s).s, cur, v);
    return -ECANCELED;
}

int devq__signal_fail_err(const struct devq_signal *s, int status)
{
    if (s->shared)
        return devq__shared_fail_err(s, status);
    return devq__err_str(status, s->tl->cause);
}

int devq__signal_timeout_err(const struct devq_signal *s, uint64_t want)
{
    return devq__err(-ETIMEDOUT, "%s: timed out waiting for %" PRIu64 ", value is %" PRIu64,
                     devq__signal_label(s).s, want, devq__tl_value(s));
}

/* ---- the pending heap (min-heap on value; caller holds s->lock) ---- */

static void heap_place(struct devq_signal *s, size_t i, struct devq_pending *p)
{
    s->heap[i] = p;
    p->heap_index = i;
}

static void sift_up(struct devq_signal *s, size_t i)
{
    struct devq_pending *p = s->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (s->heap[parent]->value <= p->value)
            break;
        heap_place(s, i, s->heap[parent]);
        i = parent;
    }
    heap_place(s, i, p);
}

static void sift_down(struct devq_signal *s, size_t i)
{
    struct devq_pending *p = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && s->heap[c + 1]->value < s->heap[c]->value)
            c++;
        if (p->value <= s->heap[c]->value)
            break;
        heap_place(s, i, s->heap[c]);
        i = c;
    }
    heap_place(s, i, p);
}

static void update_min(struct devq_signal *s)
{
    atomic_store(&s->pending_min, s->nheap ? s->heap[0]->value : UINT64_MAX);
}

int devq__pending_push(struct devq_signal *s, struct devq_pending *p)
{
    if (s->nheap == s->capheap) {
        size_t cap = s->capheap ? 2 * s->capheap : 8;
        struct devq_pending **h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        s->heap = h;
        s->capheap = cap;
    }
    heap_place(s, s->nheap++, p);
    sift_up(s, p->heap_index);
    update_min(s);
    return 0;
}

void devq__pending_remove(struct devq_signal *s, struct devq_pending *p)
{
    size_t i = p->heap_index;
    if (i == SIZE_MAX)
        return;
    p->heap_index = SIZE_MAX;
    struct devq_pending *last = s->heap[--s->nheap];
    if (last != p) {
        heap_place(s, i, last);
        if (i > 0 && s->heap[(i - 1) / 2]->value > last->value)
            sift_up(s, i);
        else
            sift_down(s, i);
    }
    update_min(s);
}

/* ---- delivery ---- */

static void deliver_inline(struct devq_pending *p)
{
    /* A waker lives on the waiting thread's stack: bump and wake it while
     * the signal lock is still held, so its owner (which removes it under
     * the same lock) cannot return in between. */
    atomic_fetch_add(p->u.waker.word, 1);
    devq__futex_wake((const uint32_t *)p->u.waker.word, 1, 0);
}

static void deliver_list(struct devq_pending *list)
{
    while (list) {
        struct devq_pending *p = list;
        list = p->fire_next;
        if (p->kind == PENDING_NOTIFY)
            devq__notify_deliver(p, p->status);
        else
            devq__fd_deliver(p, p->status);
    }
}

/* Pop (under s->lock) every registration that is due; `force` pops all
 * (destroy), with status `force`. */
static struct devq_pending *pop_due(struct devq_signal *s, int force)
{
    int st = devq__tl_status(s);
    uint64_t v = devq__tl_value(s);
    struct devq_pending *list = NULL, **tail = &list;
    while (s->nheap && (force || st || s->heap[0]->value <= v)) {
        struct devq_pending *p = s->heap[0];
        devq__pending_remove(s, p);
        p->status = force ? force : st;
        if (p->kind == PENDING_WAKER) {
            deliver_inline(p);
            continue;
        }
        p->fire_next = NULL;
        *tail = p;
        tail = &p->fire_next;
    }
    update_min(s);
    return list;
}

void devq__signal_fire_ready(struct devq_signal *s)
{
    /* The notifier comes here for watched shared signals at least every
     * re-check slice: registrations not reached look for dead producers
     * (rate-limited per handle, signal_peer.c). */
    if (__builtin_expect(s->shared, 0)) {
        uint64_t min = atomic_load(&s->pending_min);
        if (min != UINT64_MAX)
            devq__signal_peer_check(s, min);
    }
    pthread_mutex_lock(&s->lock);
    struct devq_pending *list = pop_due(s, 0);
    pthread_mutex_unlock(&s->lock);
    deliver_list(list);
}

void devq__signal_recheck(struct devq_signal *s)
{
    /* UINT64_MAX also means "empty": a registration for UINT64_MAX itself
     * is then found by the locked look, which is rare and cheap. */
    uint64_t min = atomic_load(&s->pending_min);
    if (devq__tl_value(s) >= min || devq__tl_status(s))
        devq__signal_fire_ready(s);
}

/* ---- value and failure ---- */

/* Buckets of the values in (old, new]: a waiter for w sleeps with bit
 * w % 32, so a `set` wakes only waiters whose wanted value it may have
 * reached (and the rare waiter 32*k away that shares the bucket). */
static uint32_t wake_mask(uint64_t old, uint64_t new)
{
    uint64_t span = new - old;
    if (span >= 32)
        return UINT32_MAX;
    uint32_t mask = 0;
    for (uint64_t i = 1; i <= span; i++)
        mask |= devq__signal_bucket(old + i);
    return mask;
}

/* Called with s kept alive (a reference, or s->setting: see
 * raise_value): once the new value is visible a waiter may return and
 * destroy the signal, while this thread still has to bump the word, wake
 * and deliver. */
static __attribute__((noinline)) void publish_slow(struct devq_signal *s, uint64_t old, uint64_t new)
{
    struct devq_timeline *tl = s->tl;
    if (__builtin_expect(s->shared, 0)) { /* other processes, the notifier: as ever */
        atomic_fetch_add(&tl->seq, 1);
        if (atomic_load(&tl->waiters))
            devq__futex_wake_bits((const uint32_t *)&tl->seq, wake_mask(old, new), 1);
    } else if (atomic_load(&tl->waiters)) {
        /* Every sleeper counts itself in `waiters` before it reads `seq`
         * and then the value (signal_wait.c, signal_many.c): one that
         * this load misses counted itself after the value went out
         * (seq_cst), so it sees the value and never sleeps.  Without
         * sleepers the word is left alone: the waiter spinning on this
         * line sees the value without a second write stealing the line
         * back from it. */
        atomic_fetch_add(&tl->seq, 1);
        devq__futex_wake_bits((const uint32_t *)&tl->seq, wake_mask(old, new), 0);
    }
    if (new >= atomic_load(&s->pending_min))
        devq__signal_fire_ready(s);
}

/* The hand-off's common case inline: a private signal that nobody sleeps
 * on and nothing is registered on up to `new` needs nothing more (the
 * loads are after the value went out, as publish_slow's). */
static inline __attribute__((always_inline)) void publish(struct devq_signal *s, uint64_t old, uint64_t new)
{
    if (__builtin_expect(s->shared || atomic_load(&s->tl->waiters) || new >= atomic_load(&s->pending_min), 0))
        publish_slow(s, old, new);
}

/* Raise to v if above the current value: 1 raised, 0 not.  *cur: the
 * value found before (either way), for the check of a shared page.
 * `held`: the caller holds a reference of its own across the call (and
 * looks at s after it), so s stays.  Otherwise s->setting keeps it: the
 * last release waits for it (signal_destroy), and counting there writes
 * a line only setters touch, where a reference would write the header
 * line every waiter reads (signal_impl.h).
 *
 * The value's line is written by one CAS and read by nothing before it.
 * A waiter spins on that line, so this core holds it shared at best, or
 * not at all (AMD hands a line written and then read to the reader
 * outright): a load first would fetch it from the waiter's core and the
 * CAS would then take it again, two transfers on the hand-off where the
 * plain spin-then-futex pays one (bench/RESULTS.md, 2026-11-28 11:00).
 * So the CAS guesses the value it replaces, v - 1 (a timeline's next
 * step); a wrong guess costs a second CAS on the line it already owns. */
static inline int raise_value(struct devq_signal *s, uint64_t v, uint64_t *cur, int held)
{
    struct devq_timeline *tl = s->tl;
    if (__builtin_expect(v == 0, 0)) { /* never above anything (nor is v - 1 its predecessor) */
        *cur = atomic_load_explicit(&tl->value, memory_order_relaxed);
        return 0;
    }
    /* Before the value is out: whoever sees the value sees the count. */
    if (!held)
        atomic_fetch_add_explicit(&s->setting, 1, memory_order_relaxed);
    uint64_t old = v - 1;
    while (!atomic_compare_exchange_weak(&tl->value, &old, v)) {
        if (v <= old) {
            *cur = old;
            if (!held)
                atomic_fetch_sub_explicit(&s->setting, 1, memory_order_release);
            return 0;
        }
    }
    *cur = old;
    publish(s, old, v);
    if (!held) /* the last touch of s */
        atomic_fetch_sub_explicit(&s->setting, 1, memory_order_release);
    return 1;
}

static int advance_shared(struct devq_signal *s, uint64_t v);

static inline int advance(devq_signal *s, uint64_t v, int held)
{
    if (__builtin_expect(s->shared, 0))
        return advance_shared(s, v);
    int st = atomic_load_explicit(&s->status_copy, memory_order_acquire); /* not tl's line: raise_value */
    if (st)
        return st;
    uint64_t cur;
    raise_value(s, v, &cur, held); /* unless held, s may be gone once it returns */
    return 0;
}

int devq__signal_advance(devq_signal *s, uint64_t v)
{
    return advance(s, v, 0);
}

/* The caller's own reference (a batch's) outlives the call, so no
 * temporary one: a completing batch would otherwise add and drop one on
 * the refcount line every signal, bouncing it with the recording thread,
 * which takes references on that line as it records. */
int devq__signal_advance_held(devq_signal *s, uint64_t v)
{
    return advance(s, v, 1);
}

/* A failure passed on through a wait reads "<hop>, which failed: <the
 * cause of what it waited on>", so a chain grows by a hop at every
 * signal and the root cause, at its end, is the first thing a bounded
 * copy loses.  Keep the immediate hop and the root, elide the middle:
 * "<hop>, which failed: ... <root>".  Should even that not fit, the root
 * wins: "... <root>", cut at the end. */
static const char hop_sep[] = "which failed: ";
static const char elided[] = "... ";

void devq__cause_compact(char *dst, size_t cap, const char *cause)
{
    size_t len = strlen(cause);
    const char *first = strstr(cause, hop_sep), *last = first;
    if (len < cap || !first) {
        snprintf(dst, cap, "%s", cause);
        return;
    }
    for (const char *p; (p = strstr(last + 1, hop_sep));)
        last = p;
    const char *root = last + sizeof hop_sep - 1;
    if (!strncmp(root, elided, sizeof elided - 1))
        root += sizeof elided - 1; /* elided by an earlier hop */
    size_t head = (size_t)(first - cause) + sizeof hop_sep - 1;
    if (head + sizeof elided - 1 + strlen(root) < cap)
        snprintf(dst, cap, "%.*s%s%s", (int)head, cause, elided, root);
    else
        snprintf(dst, cap, "%s%s", elided, root);
}

void devq__signal_fail_cause(devq_signal *s, int err, const char *cause)
{
    struct devq_timeline *tl = s->tl;
    if (s->shared) { /* other processes may die half way: signal_peer.c */
        char text[DEVQ_SIGNAL_CAUSE_MAX];
        devq__cause_compact(text, sizeof text, cause && *cause ? cause : "signal failed");
        devq__signal_retain(s); /* waiters may destroy it once they see it */
        if (devq__shared_fail_claim(s, err >= 0 || err < -4095 ? -EIO : err, text)) {
            atomic_fetch_add(&tl->seq, 1);
            if (atomic_load(&tl->waiters))
                devq__futex_wake_bits((const uint32_t *)&tl->seq, UINT32_MAX, 1);
            devq__signal_fire_ready(s);
        }
        devq__signal_release(s);
        return;
    }
    uint32_t expect = FAIL_NONE;
    if (!atomic_compare_exchange_strong(&tl->fail_state, &expect, FAIL_WRITING))
        return;
    devq__signal_retain(s);      /* waiters may destroy it once they see it */
    if (err >= 0 || err < -4095) /* not an errno: every reader must get one */
        err = -EIO;
    devq__cause_compact(tl->cause, sizeof tl->cause, cause && *cause ? cause : "signal failed");
    /* After the cause, the copy before the status: whoever sees the
     * status sees the copy, so a set ordered after a waiter's failure
     * refuses to raise (signal_impl.h). */
    atomic_store(&s->status_copy, err);
    atomic_store(&tl->status, err); /* after the cause: readers see both */
    atomic_store(&tl->fail_state, FAIL_DONE);
    atomic_fetch_add(&tl->seq, 1);
    if (atomic_load(&tl->waiters))
        devq__futex_wake_bits((const uint32_t *)&tl->seq, UINT32_MAX, s->shared);
    devq__signal_fire_ready(s);
    devq__signal_release(s);
}

void devq__signal_peer_check(struct devq_signal *s, uint64_t want)
{
    char cause[DEVQ_SIGNAL_CAUSE_MAX];
    int err = devq__peer_lost(s, want, cause, sizeof cause);
    if (err)
        devq__signal_fail_cause(s, err, cause); /* (its fire_ready looks no more: rate-limited) */
}

/* ---- public ---- */

int devq__signal_create_internal(uint64_t initial, devq_signal **out)
{
    if (!out)
        return devq__err(-EINVAL, "devq_signal_create: out is NULL");
    *out = NULL;
    struct devq_signal *s;
    int r = devq__signal_alloc(&s);
    if (r)
        return r;
    atomic_init(&s->local.value, initial);
    *out = s;
    return 0;
}

DEVQ_API int devq_signal_create(uint64_t initial, devq_signal **out)
{
    int r = devq__signal_create_internal(initial, out);
    if (r == 0)
        devq__signal_number_user(*out);
    return r;
}

DEVQ_API int devq_signal_set_name(devq_signal *s, const char *name)
{
    int r = devq__signal_check_user(s, "devq_signal_set_name");
    if (r < 0)
        return r;
    return devq__name_set(&s->name, DEVQ_NAME_SIGNAL, "devq_signal_set_name", name);
}

DEVQ_API void devq_signal_destroy(devq_signal *s)
{
    if (devq__signal_check_user(s, "devq_signal_destroy"))
        return;
    if (atomic_exchange(&s->user_dead, 1))
        return;
    /* Pending notifies and fds are delivered -ECANCELED, never leaked. */
    pthread_mutex_lock(&s->lock);
    struct devq_pending *list = pop_due(s, -ECANCELED);
    int watched = s->watched;
    pthread_mutex_unlock(&s->lock);
    deliver_list(list);
    if (watched)
        devq__notifier_poke();
    devq__signal_release(s);
}

DEVQ_API uint64_t devq_signal_value(const devq_signal *s)
{
    if (!s || s->obj.magic != DEVQ_MAGIC_SIGNAL)
        return 0;
    return devq__tl_value(s);
}

DEVQ_API int devq_signal_status(const devq_signal *s)
{
    int r = devq__signal_check_user(s, "devq_signal_status");
    if (r)
        return r;
    r = devq__tl_status(s);
    return r && s->shared ? devq__signal_fail_err(s, r) : r;
}

static int set_below(const struct devq_signal *s, uint64_t value, uint64_t cur)
{
    return devq__err(-EINVAL,
                     "devq_signal_set: %s: value %" PRIu64 " is not above the current value %" PRIu64
                     " (values only rise)",
                     devq__signal_label(s).s, value, cur);
}

/* Raise a process-shared signal: the page is checked before and after
 * (signal_page.c).  1 raised, 0 not (*cur set), or the failure with its
 * devq_errmsg().  Apart from the private paths so that they stay as
 * short as they were.  Holds a reference: s is looked at after the new
 * value is visible, when a waiter may already destroy it. */
static __attribute__((noinline)) int raise_shared(struct devq_signal *s, uint64_t v, uint64_t *cur)
{
    uint64_t floor = devq__shared_floor(s);
    int r = devq__shared_status(s);
    if (r)
        return devq__signal_fail_err(s, r);
    devq__signal_retain(s);
    int raised = raise_value(s, v, cur, 1);
    if (raised)
        devq__shared_saw(s, v);
    r = devq__shared_check_floor(s, floor, *cur);
    if (r)
        r = devq__signal_fail_err(s, r);
    devq__signal_release(s);
    return r ? r : raised;
}

static int advance_shared(struct devq_signal *s, uint64_t v)
{
    uint64_t cur;
    int r = raise_shared(s, v, &cur);
    return r < 0 ? r : 0;
}

static __attribute__((noinline)) int set_shared(struct devq_signal *s, uint64_t value)
{
    uint64_t cur;
    int r = raise_shared(s, value, &cur);
    if (r < 0)
        return r;
    /* not raised: s is still the caller's, and cur is set (a failure is
     * negative: devq__shared_fail_err, signal_page.c, never returns 0) */
    return r ? 0 : set_below(s, value, cur);   // NOLINT(clang-analyzer-core.CallAndMessage)
}

DEVQ_API int devq_signal_set(devq_signal *s, uint64_t value)
{
    int r = devq__signal_check_fast(s, "devq_signal_set");
    if (r)
        return r;
    if (__builtin_expect(s->shared, 0))
        return set_shared(s, value);
    int st = atomic_load_explicit(&s->status_copy, memory_order_acquire); /* not tl's line: raise_value */
    if (st)
        return devq__signal_fail_err(s, st);
    uint64_t cur;
    if (!raise_value(s, value, &cur, 0))
        return set_below(s, value, cur);
    return 0;
}

static const char *errno_name(int err, char *buf, size_t n)
{
    const char *name = strerrorname_np(-err);
    if (name)
        return name;
    snprintf(buf, n, "%d", -err);
    return buf;
}

DEVQ_API int devq_signal_fail(devq_signal *s, int error)
{
    int r = devq__signal_check_user(s, "devq_signal_fail");
    if (r || (s->shared && (r = devq__shared_check(s))))
        return r;
    if (error >= 0 || error < -4095)
        return devq__err(-EINVAL,
                         "devq_signal_fail: %s"
                         ": error must be a negative errno such as -EIO (got %d)",
                         devq__signal_label(s).s, error);
    char cause[DEVQ_SIGNAL_CAUSE_MAX], num[16];
    snprintf(cause, sizeof cause, "devq_signal_fail(-%s) called on %s", errno_name(error, num, sizeof num),
             devq__signal_label(s).s);
    if (!s->shared) {
        devq__signal_fail_cause(s, error, cause); /* s may be gone once it returns */
        return 0;
    }
    /* A shared page may turn out corrupted while failing it: look after,
     * holding a reference (a waiter may destroy s once it sees it). */
    devq__signal_retain(s);
    devq__signal_fail_cause(s, error, cause);
    r = devq__shared_check(s);
    devq__signal_release(s);
    return r;
}
