/* SPDX-License-Identifier: MIT */
/* Processes on a shared signal's page: a dead one never bricks it.
 *
 * Robust failure.  Failing is the page's one operation of two steps
 * (fail state NONE -> WRITING, status and cause, -> DONE), and a process
 * killed between them used to leave the page unable to fail for good.
 * As with robust futexes, the writer first names itself in a record on
 * the page (fail_writer, claimed by CAS from 0: its pid and its start
 * time, so a reused pid is never mistaken for it).  The next process that
 * fails the page and finds the record naming a dead process takes it
 * over (one CAS, so one survivor) and completes the dead writer's
 * failure when its status was already published (every reader has seen
 * it as failed), or rolls it back and publishes its own when not (no
 * reader saw it).  Setting the value is one CAS and waits and status
 * only read, so they need no record.
 *
 * The peer-lost rule (devq_signal_create_shared(3) PRODUCERS).  A
 * process may register as a producer of the page; a waiter whose value
 * is not reached looks, at most every DEVQ_PEER_CHECK_NS per handle and
 * at every re-check slice of its sleep (DEVQ_SHARED_RECHECK_NS), whether
 * every registered producer died, and then fails the page with
 * -EOWNERDEAD naming one (devq__signal_peer_check, signal.c): every
 * waiter of every process, wait fd, notify and queue batch then fails
 * through the paths a failure already takes.  The page is never
 * trusted: a slot is only a name, and one that cannot be a process
 * (pid 0) makes the handle corrupted.
 *
 * This file calls nothing of signal.c (signal.c calls it, and the
 * layer rule allows no circle of more than 5 files): waking and the
 * cause's compaction stay with the caller; the public producer calls,
 * which need signal.c's checks, are in signal_producer.c. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "error.h"
#include "futex.h"
#include "log.h"
#include "signal_impl.h"

void (*devq__shared_fail_hook)(struct devq_signal *s, int stage);

#define PID_MASK ((UINT64_C(1) << DEVQ_PROC_PID_BITS) - 1)

/* /proc/PID/stat of pid: its state letter and start time (field 22).
 * 0, or -1 when it cannot be read (the pid is gone, or /proc hides it). */
static int proc_stat(int pid, char *state, uint64_t *start)
{
    char path[32], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* Field 2 is the command in parentheses and may hold anything,
     * parentheses and spaces included: count from the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -1;
    p += 2;
    *state = *p;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    char *end;
    *start = strtoull(p, &end, 10);
    return end == p ? -1 : 0;
}

static uint64_t name_of(int pid, uint64_t start)
{
    return (start << DEVQ_PROC_PID_BITS) | ((uint64_t)pid & PID_MASK);
}

uint64_t devq__proc_self(void)
{
    /* Keyed by pid: a child made by fork is another process. */
    static _Atomic uint64_t cached;
    int pid = getpid();
    uint64_t me = atomic_load_explicit(&cached, memory_order_relaxed);
    if (me && devq__proc_pid(me) == pid)
        return me;
    char state;
    uint64_t start = 0;
    if (proc_stat(pid, &state, &start))
        start = 0; /* no /proc: the pid alone (see devq__proc_alive) */
    me = name_of(pid, start);
    atomic_store_explicit(&cached, me, memory_order_relaxed);
    return me;
}

int devq__proc_alive(uint64_t who)
{
    int pid = devq__proc_pid(who);
    uint64_t start = who >> DEVQ_PROC_PID_BITS;
    if (kill(pid, 0) && errno == ESRCH)
        return 0;
    char state;
    uint64_t now;
    if (proc_stat(pid, &state, &now))
        return kill(pid, 0) == 0 || errno != ESRCH; /* hidden (hidepid): trust kill */
    if (state == 'Z' || state == 'X')
        return 0; /* killed, not reaped yet: it runs no more */
    return !start || now == start;
}

/* ---- robust failure ---- */

static void hook(struct devq_signal *s, int stage)
{
    if (__builtin_expect(devq__shared_fail_hook != NULL, 0))
        devq__shared_fail_hook(s, stage);
}

/* Publish a failure: the record is ours, the fail state WRITING. */
static void publish_failure(struct devq_signal *s, int err, const char *cause)
{
    struct devq_timeline *tl = s->tl;
    snprintf(tl->cause, sizeof tl->cause, "%s", cause);
    atomic_store(&tl->status, err); /* after the cause: readers see both */
    hook(s, 3);
    atomic_store(&tl->fail_state, FAIL_DONE);
}

/* The record names `dead`, which died failing the page: take it over.
 * 1 when the caller now holds it with the fail state WRITING and no
 * status published (its own failure goes out), 0 when another survivor
 * took it, 2 when the dead writer's published failure was completed. */
static int take_over(struct devq_signal *s, uint64_t dead, uint64_t me)
{
    struct devq_timeline *tl = s->tl;
    if (!atomic_compare_exchange_strong(&tl->fail_writer, &dead, me))
        return 0;
    uint32_t f = FAIL_NONE;
    atomic_compare_exchange_strong(&tl->fail_state, &f, FAIL_WRITING);
    if (f == FAIL_DONE)
        return 0;
    int st = atomic_load(&tl->status);
    devq__log(DEVQ_LOG_BASIC, "shared %s: process %d died while failing it; %s", devq__signal_label(s).s,
              devq__proc_pid(dead),
              st ? "its published failure is completed"
                 : "its unpublished failure is "
                   "rolled back");
    if (!st)
        return 1;
    atomic_store(&tl->fail_state, FAIL_DONE);
    return 2;
}

int devq__shared_fail_claim(struct devq_signal *s, int err, const char *cause)
{
    struct devq_timeline *tl = s->tl;
    uint64_t me = devq__proc_self(), owner = 0;
    if (atomic_compare_exchange_strong(&tl->fail_writer, &owner, me)) {
        hook(s, 1);
        uint32_t f = FAIL_NONE;
        /* A peer that fails the page by hand, without the record, may
         * hold WRITING: first failure wins, as between two of us. */
        if (!atomic_compare_exchange_strong(&tl->fail_state, &f, FAIL_WRITING))
            return 0;
    } else {
        if (!devq__proc_pid(owner)) {
            devq__shared_corrupted(s, "fail writer record names pid 0");
            return 1; /* wake everyone to see it */
        }
        if (owner == me || atomic_load(&tl->fail_state) == FAIL_DONE || devq__proc_alive(owner))
            return 0; /* failed already, or its writer is still at it */
        int r = take_over(s, owner, me);
        if (r != 1)
            return r != 0;
    }
    hook(s, 2);
    publish_failure(s, err, cause);
    return 1;
}

/* ---- the producer table ---- */

int devq__shared_producer(const struct devq_signal *s, unsigned i, uint64_t *who)
{
    *who = atomic_load(&s->tl->producer[i]);
    if (*who && !devq__proc_pid(*who))
        return devq__shared_corrupted(s, "producer slot %u names pid 0", i);
    return 0;
}

/* ---- the peer-lost rule ---- */

int devq__peer_lost(struct devq_signal *s, uint64_t want, char *cause, size_t cap)
{
    if (!s->shared || atomic_load_explicit(&s->corrupt, memory_order_relaxed))
        return 0;
    uint64_t now = devq__now_ns();
    uint64_t last = atomic_load_explicit(&s->peer_checked_ns, memory_order_relaxed);
    if (now - last < DEVQ_PEER_CHECK_NS || !atomic_compare_exchange_strong(&s->peer_checked_ns, &last, now))
        return 0; /* this process looked just now */
    if (devq__shared_probe(s, want))
        return 0; /* reached, failed or corrupted: nothing to rule on */
    unsigned n = 0;
    uint64_t dead = 0, who;
    for (unsigned i = 0; i < DEVQ_SHARED_PRODUCERS; i++) {
        if (devq__shared_producer(s, i, &who))
            return 0; /* corrupted: every waiter sees that instead */
        if (!who)
            continue;
        if (devq__proc_alive(who))
            return 0;
        n++;
        dead = dead ? dead : who;
    }
    /* The dead set the value no more: read it after finding them dead. */
    uint64_t v = devq__shared_value(s);
    if (!n || v >= want)
        return 0;
    snprintf(cause, cap,
             "producer process %d of a shared signal died (%u of %u "
             "registered producers dead) with the value at %" PRIu64 ", below the %" PRIu64 " waited for",
             devq__proc_pid(dead), n, n, v, want);
    devq__log(DEVQ_LOG_BASIC, "shared %s: %s", devq__signal_label(s).s, cause);
    return -EOWNERDEAD;
}
