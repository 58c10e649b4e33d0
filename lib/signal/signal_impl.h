/* SPDX-License-Identifier: MIT */
/* Private layout of timeline signals, shared by lib/signal*.c and
 * lib/notifier.c.  Nothing outside the signal area includes this.
 *
 * A signal is two parts:
 *  - the timeline (struct devq_timeline): the 64-bit value, the 32-bit
 *    futex word, the failure status and a fixed root-cause text.  It is
 *    embedded in the handle for a private signal and lives in a memfd
 *    mapped MAP_SHARED for a process-shared one, so it holds no pointers
 *    and no process-local locks;
 *  - the process-local handle (struct devq_signal): refcount, id, lock and
 *    the min-heap of pending registrations (notifies, wait_fd eventfds,
 *    wait_many fallback wakers) keyed by value, so that `set` only compares
 *    against the smallest pending value. */
#ifndef DEVQ_LIB_SIGNAL_IMPL_H
#define DEVQ_LIB_SIGNAL_IMPL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include "object.h"
#include "signal_int.h"

#define DEVQ_TIMELINE_MAGIC 0x53515644u /* "DVQS" in memory */
/* 2: the failure's writer record and the producer table (signal_peer.c);
 * a version-1 library would fail the page without the record. */
#define DEVQ_TIMELINE_VERSION 2u
#define DEVQ_SIGNAL_CAUSE_MAX 232 /* keeps the v1 part at 256 bytes */
#define DEVQ_SHARED_PRODUCERS 64  /* devq_signal_add_producer slots */
#define DEVQ_SHARED_MAP_SIZE 4096u

enum { FAIL_NONE = 0, FAIL_WRITING = 1, FAIL_DONE = 2 };

struct devq_timeline {
    uint32_t magic;   /* DEVQ_TIMELINE_MAGIC (checked by import) */
    uint32_t version; /* DEVQ_TIMELINE_VERSION */
    _Atomic uint64_t value;
    /* Bumped on every change (value raised, failure published).  Waiters
     * sleep on it with a bitset naming their wanted value's bucket. */
    _Atomic uint32_t seq;
    /* Threads (of any process) that may sleep on `seq`: `set` skips the
     * wake syscall when it is zero. */
    _Atomic uint32_t waiters;
    _Atomic int32_t status;      /* 0, or the failure (published last) */
    _Atomic uint32_t fail_state; /* FAIL_*: first failure wins the CAS */
    char cause[DEVQ_SIGNAL_CAUSE_MAX];
    /* Shared pages only (signal_peer.c), after the v1 part so that its
     * offsets stay put.  A process is named by devq__proc_self(): its
     * pid and its start time, so a reused pid never names it. */
    /* The process failing the page, claimed (CAS from 0) before it moves
     * the fail state, like a robust futex's pending-op record: when it
     * dies half way, the next failing process finds it dead, takes the
     * record over (CAS) and completes or rolls back its failure. */
    _Atomic uint64_t fail_writer;
    /* Registered producers (devq_signal_add_producer), 0 = free. */
    _Atomic uint64_t producer[DEVQ_SHARED_PRODUCERS];
};

/* A registration in a signal's pending heap. */
enum pending_kind {
    PENDING_NOTIFY, /* devq_signal_notify: callback posted to the notifier */
    PENDING_FD,     /* devq_signal_wait_fd: write to lib's eventfd dup */
    PENDING_WAKER,  /* wait_many fallback: bump a futex word, inline */
};

struct devq_pending {
    uint64_t value;
    enum pending_kind kind;
    size_t heap_index;              /* position in the heap; SIZE_MAX when out */
    int status;                     /* delivered status, set when fired */
    struct devq_pending *fire_next; /* local list while being delivered */
    union {
        struct {
            _Atomic uint32_t *word;
        } waker;
        int fd; /* lib's own dup of the eventfd */
    } u;
};

/* Notifier posts (lib/notifier.c) are intrusive list nodes so that a
 * notify fires without a second allocation. */
struct devq_notifier_node {
    struct devq_notifier_node *next;
    void (*fn)(void *arg);
    void *arg;
    int owned; /* freed by the notifier after fn ran */
};

/* Laid out by who writes what, so that a setter and a waiter on two
 * cores share only the timeline's line: read-mostly identity first, then
 * the object header with the refcount (setters hold a reference while
 * they publish; an API call's magic check reads it too), then the
 * waiters' spin state, the registration state, and the timeline. */
struct devq_signal {
    _Atomic int user_dead;    /* devq_signal_destroy was called */
    uint64_t id;              /* unique in the process, internal ones too */
    struct devq_timeline *tl; /* &local, or the shared mapping */
    int shared;               /* futex ops without FUTEX_PRIVATE_FLAG */
    int memfd;                /* shared only */
    /* Smallest pending value, UINT64_MAX when the heap is empty: the one
     * load `set` pays for registrations. */
    _Atomic uint64_t pending_min;
    /* Private signals: tl->status, stored before it (signal.c
     * devq__signal_fail_cause), so that whoever sees the status sees it
     * too.  `set` checks it here instead of on the timeline's line: a
     * load of that line before the raise would fetch it from the
     * spinning waiter's core and then take it again to write it, two
     * cache-line transfers where one RMW takes one (signal.c
     * raise_value). */
    _Atomic int status_copy;

    /* magic: DEVQ_MAGIC_SIGNAL while alive; refs: user's + queues' +
     * notify handles'.  On its own line, as refs always was. */
    _Alignas(64) struct devq_object obj;

    _Alignas(64) _Atomic int spin_budget; /* ns to spin before sleeping (adaptive) */
    _Atomic int spin_fails;               /* spins in a row that ended in sleep */

    _Alignas(64) pthread_mutex_t lock; /* heap, watched */
    /* Private raises past their value store (signal.c raise_value): a
     * waiter that saw the value may drop the last reference while the
     * setter still bumps the futex word and wakes, so the last release
     * waits for this to be 0 instead of every set taking a reference.
     * Written by setters only, on a line no waiter reads: a reference
     * would write the object header's line, which every call reads, and
     * cost the hand-off a cache-line transfer before the value goes out. */
    _Atomic uint32_t setting;
    struct devq_pending **heap;
    size_t nheap, capheap;
    int watched; /* shared: the notifier watches tl->seq */
    struct devq_signal *watch_next;

    _Alignas(64) struct devq_timeline local;

    /* Shared only (signal_page.c): what this process has seen of a
     * page that other processes write, so that a page that goes wrong is
     * caught and named instead of trusted.  A line of its own: the
     * waiter raises seen_value as it sees new values. */
    _Alignas(64) _Atomic uint64_t seen_value; /* highest value read from the page */
    _Atomic int seen_status;                  /* the failure once seen: it may never change */
    _Atomic int corrupt;                      /* 0; 1 naming it; 2 named (sticky) */
    char corrupt_what[120];                   /* printable, set once before corrupt = 2 */
    /* signal_peer.c: when waiters last looked for dead producers (ns). */
    _Atomic uint64_t peer_checked_ns;

    /* Cold, at the end so the hot lines above keep their layout:
     * "signal #3", user signals only (name.h). */
    struct devq_name name;
};

/* signal.c */
int devq__signal_alloc(struct devq_signal **out);
/* A signal was made for the user: give it the next user number. */
void devq__signal_number_user(struct devq_signal *s);
int devq__signal_check_user(const devq_signal *s, const char *fn);
/* Its message (s failed the check), out of line. */
int devq__signal_check_user_err(const devq_signal *s, const char *fn);
/* The same check inline, for set and wait: three loads of lines nobody
 * writes while the signal lives. */
static inline int devq__signal_check_fast(const devq_signal *s, const char *fn)
{
    if (__builtin_expect(!s || s->obj.magic != DEVQ_MAGIC_SIGNAL ||
                             atomic_load_explicit(&s->user_dead, memory_order_relaxed),
                         0))
        return devq__signal_check_user_err(s, fn);
    return 0;
}
/* Pop every pending registration that is reached (or all of them when the
 * signal failed) and deliver it.  Cheap when nothing is due. */
void devq__signal_fire_ready(struct devq_signal *s);
/* Heap operations (caller holds s->lock). */
int devq__pending_push(struct devq_signal *s, struct devq_pending *p);
void devq__pending_remove(struct devq_signal *s, struct devq_pending *p);
/* After a registration was added: catch a value or failure published
 * while it was being added (Dekker pairing with `set`). */
void devq__signal_recheck(struct devq_signal *s);
/* The failure message for a waiter (root cause) and return status. */
int devq__signal_fail_err(const struct devq_signal *s, int status);
/* The bucket bit used with FUTEX_WAIT_BITSET for a wanted value. */
static inline uint32_t devq__signal_bucket(uint64_t v)
{
    return 1u << (v & 31);
}
int devq__signal_timeout_err(const struct devq_signal *s, uint64_t want);

/* signal_wait.c: futex returns that found their value not reached. */
extern _Atomic uint64_t devq__signal_early_wakes;

/* signal_notify.c: the notify handle and its delivery. */
void devq__notify_deliver(struct devq_pending *p, int status);
void devq__fd_deliver(struct devq_pending *p, int status);

/* signal_shared.c */
void devq__signal_shared_unmap(struct devq_signal *s);

/* signal_page.c.  A shared signal's page may be written by any process
 * that maps it, correctly or not.  Every read of it goes through these,
 * which validate what they read; a page found wrong makes the handle
 * *corrupted* for good: every call returns DEVQ_SHARED_CORRUPT (see
 * devq_signal_create_shared(3)), sleeping waiters are woken. */
#define DEVQ_SHARED_CORRUPT (-EBADMSG)
/* Another process can change the page without waking anyone, so waits
 * on shared signals re-check it at least this often (ns). */
#define DEVQ_SHARED_RECHECK_NS 100000000ull
/* The status (0 or a negative errno), DEVQ_SHARED_CORRUPT once corrupted;
 * also validates the header, the fail state and the value. */
int devq__shared_status(const struct devq_signal *s);
/* 1 reached, 0 not yet, or the status (a failure or DEVQ_SHARED_CORRUPT). */
int devq__shared_probe(const struct devq_signal *s, uint64_t want);
/* The value, never below one already seen (corrupted when it went down). */
uint64_t devq__shared_value(const struct devq_signal *s);
/* The highest value seen so far: read before the page, compare after
 * with devq__shared_check_floor. */
uint64_t devq__shared_floor(const struct devq_signal *s);
int devq__shared_check_floor(const struct devq_signal *s, uint64_t floor, uint64_t cur);
/* This process raised the value to v itself: never below it again. */
void devq__shared_saw(const struct devq_signal *s, uint64_t v);
/* 0, or DEVQ_SHARED_CORRUPT with its devq_errmsg() when corrupted. */
int devq__shared_check(const struct devq_signal *s);
/* devq__signal_fail_err and devq__signal_cause for shared signals:
 * the cause copied out of the page bounded and printable, or the
 * corruption named. */
int devq__shared_fail_err(const struct devq_signal *s, int status);
const char *devq__shared_cause(const struct devq_signal *s);
/* deadline, cut to the next re-check of a shared signal's page. */
uint64_t devq__shared_slice(uint64_t deadline);

static inline int devq__tl_status(const struct devq_signal *s)
{
    if (__builtin_expect(s->shared, 0))
        return devq__shared_status(s);
    return atomic_load_explicit(&s->tl->status, memory_order_acquire);
}

static inline uint64_t devq__tl_value(const struct devq_signal *s)
{
    if (__builtin_expect(s->shared, 0))
        return devq__shared_value(s);
    return atomic_load_explicit(&s->tl->value, memory_order_acquire);
}

/* signal_page.c: mark s corrupted (the first finder names it), wake its
 * sleepers; returns DEVQ_SHARED_CORRUPT. */
__attribute__((format(printf, 2, 3))) int devq__shared_corrupted(const struct devq_signal *s, const char *fmt,
                                                                 ...);

/* signal_peer.c: processes on a shared page, the robust failure and the
 * peer-lost rule (devq_signal_create_shared(3) PRODUCERS). */
/* The calling process as the page names it: pid in the low
 * DEVQ_PROC_PID_BITS bits, its start time (clock ticks after boot, from
 * /proc/PID/stat) above; never 0. */
#define DEVQ_PROC_PID_BITS 23
uint64_t devq__proc_self(void);
/* 1 while the named process runs (or cannot be looked at), 0 once it
 * exited, is a zombie, or its pid names a younger process. */
int devq__proc_alive(uint64_t who);
static inline int devq__proc_pid(uint64_t who)
{
    return (int)(who & ((1u << DEVQ_PROC_PID_BITS) - 1));
}
/* devq__signal_fail_cause's part on a shared page, the robust protocol:
 * claim the writer record (or take it over from a dead writer) and
 * publish err with cause (already compacted).  1 when the page changed
 * (the caller wakes everyone), 0 when it was failed or being failed. */
int devq__shared_fail_claim(struct devq_signal *s, int err, const char *cause);
/* Producer slot i, validated: 0 with *who (0 = free), or
 * DEVQ_SHARED_CORRUPT (a slot naming pid 0). */
int devq__shared_producer(const struct devq_signal *s, unsigned i, uint64_t *who);
/* The peer-lost rule for a waiter of `want` not reached: at most every
 * DEVQ_PEER_CHECK_NS per handle, whether every registered producer died;
 * then -EOWNERDEAD with cause[cap] naming one, else 0. */
#define DEVQ_PEER_CHECK_NS 50000000ull
int devq__peer_lost(struct devq_signal *s, uint64_t want, char *cause, size_t cap);
/* signal.c: devq__peer_lost, and the failure it rules. */
void devq__signal_peer_check(struct devq_signal *s, uint64_t want);
/* Test hook: called by a failing process at stage 1 (writer record
 * claimed), 2 (fail state WRITING) and 3 (status published), so a test
 * can kill it between the steps.  NULL in the library's own use. */
extern void (*devq__shared_fail_hook)(struct devq_signal *s, int stage);

/* signal_many.c: futex_waitv (Linux 5.16).  Index of a woken word,
 * -EAGAIN (a word differed), -ETIMEDOUT, -EINTR or -ENOSYS. */
struct futex_waitv;
int devq__futex_waitv(struct futex_waitv *w, unsigned n, uint64_t deadline_ns);
/* signal_many.c: test switch to force the futex_waitv fallback. */
void devq__signal_force_no_waitv(int on);
int devq__signal_have_waitv(void);        /* kernel has it and not forced off */
int devq__signal_have_waitv_kernel(void); /* kernel has it (probed once) */

/* notifier.c */
void devq__notifier_post_node(struct devq_notifier_node *n);
/* Shared signals with pending registrations are watched by the notifier
 * (it sleeps on their futex words too, so another process's `set` wakes
 * it).  Caller holds s->lock; 0 or -ENOTSUP when it cannot watch. */
int devq__notifier_watch(struct devq_signal *s);
/* Make the notifier look at its watch list again (a watched signal was
 * destroyed: it drops the watch and the mapping promptly). */
void devq__notifier_poke(void);

#endif
