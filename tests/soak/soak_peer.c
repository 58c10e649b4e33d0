/* SPDX-License-Identifier: MIT */
/* The soak's peer process (issue 27): every round forks a peer that
 * registers as the producer of a shared signal and raises it, one value
 * a millisecond, up to PEER_TOP; batches on queues of their own (one per
 * device, outside the model: they touch no buffer and no queue of the
 * round) wait on values up to PEER_TOP + 8, and the peer is SIGKILLed at
 * a random moment after the round's build.  Whatever the moment, no
 * batch hangs: one whose value the peer never reached fails with
 * -EOWNERDEAD naming the peer's pid (the peer-lost rule,
 * devq_signal_create_shared(3) PRODUCERS), one that succeeded waited
 * for a value the peer did reach, and a host wait agrees.  Its random
 * numbers are a stream of their own (from the round's seed), so seeds
 * replay the rest of the round as before.  SOAK_PEER=0 leaves it out. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "soak_round.h"

#define PEER_TOP 40 /* the peer's last value */
#define PEER_BATCHES 6

static struct {
    bool on;
    uint64_t rng;
    pid_t pid;
    devq_signal *s;
    devq_queue *q[SOAK_NDEV];
    devq_signal *done[PEER_BATCHES];
    uint64_t want[PEER_BATCHES];
    int dev[PEER_BATCHES];
    int nb;
} P;

static uint32_t peer_below(uint32_t n)
{
    P.rng = P.rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(P.rng >> 33) % n;
}

static void nap_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

/* The peer: only calls that take no lock another thread of the round
 * may have held at fork (its signal has no registration yet). */
static void peer_main(devq_signal *s)
{
    if (devq_signal_add_producer(s) || devq_signal_set(s, 1))
        _exit(2);
    for (uint64_t v = 2; v <= PEER_TOP; v++) {
        nap_us(1000);
        if (devq_signal_set(s, v))
            _exit(3);
    }
    for (;;)
        pause(); /* produced everything; dies by SIGKILL */
}

void soak_peer_start(struct soak_round *r)
{
    const char *e = getenv("SOAK_PEER");
    P = (__typeof__(P)){ .on = !(e && *e == '0'), .rng = r->plan->seed ^ 0x9e3779b97f4a7c15ull };
    if (!P.on)
        return;
    int rc = devq_signal_create_shared(0, &P.s);
    if (rc == 0) {
        P.pid = fork();
        if (P.pid == 0)
            peer_main(P.s);
        if (P.pid < 0)
            rc = -errno;
    }
    /* Registered once it set 1: never kill a peer before that (with no
     * producer registered the rule does not apply). */
    if (rc == 0)
        rc = devq_signal_wait(P.s, 1, SOAK_WAIT_NS);
    /* The cuda faults count driver calls: keep the peer's batches off
     * that device in those rounds, so the fault lands where planned. */
    int ndev = r->plan->fault >= FAULT_CUDA_CALL ? 1 : SOAK_NDEV;
    for (int d = 0; d < ndev && rc == 0; d++)
        rc = devq_queue_create(r->dev[d], NULL, &P.q[d]);
    for (int i = 0; i < PEER_BATCHES && rc == 0; i++) {
        int d = (int)peer_below((uint32_t)ndev);
        uint64_t w = 2 + peer_below(PEER_TOP + 8);
        rc = devq_signal_create(0, &P.done[i]);
        if (rc == 0)
            rc = devq_queue_wait(P.q[d], P.s, w);
        if (rc == 0)
            rc = devq_queue_signal(P.q[d], P.done[i], 1);
        if (rc == 0)
            rc = devq_queue_submit(P.q[d]);
        P.want[i] = w;
        P.dev[i] = d;
        P.nb = i + 1;
    }
    if (rc < 0) {
        soak_fail(r, "peer: setup: %d %s", rc, devq_errmsg());
        P.on = false;
    }
}

void soak_peer_kill(struct soak_round *r)
{
    (void)r;
    if (!P.on || P.pid <= 0)
        return;
    nap_us(peer_below(PEER_TOP * 1000)); /* anywhere in its run, or after */
    kill(P.pid, SIGKILL);
}

static bool names_peer(const char *m)
{
    char want[48];
    snprintf(want, sizeof want, "producer process %d ", (int)P.pid);
    return strstr(m, want) != NULL;
}

void soak_peer_check(struct soak_round *r)
{
    if (!P.on)
        return;
    int st;
    if (P.pid > 0 && waitpid(P.pid, &st, 0) == P.pid && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
        soak_fail(r, "peer: exited with %d before it was killed", st);
    int lost = 0;
    for (int i = 0; i < P.nb; i++) {
        int rc = devq_signal_wait(P.done[i], 1, SOAK_WAIT_NS);
        lost += rc == -EOWNERDEAD;
        uint64_t v = devq_signal_value(P.s);
        if (rc == -ETIMEDOUT)
            soak_fail(r, "HANG: peer batch %d waiting for %llu (peer dead at %llu): %s", i,
                      (unsigned long long)P.want[i], (unsigned long long)v, devq_errmsg());
        else if (rc == 0 && v < P.want[i])
            soak_fail(r, "peer batch %d succeeded but the peer reached only %llu of %llu", i,
                      (unsigned long long)v, (unsigned long long)P.want[i]);
        else if (rc < 0 && (rc != -EOWNERDEAD || !names_peer(devq_errmsg())))
            soak_fail(r,
                      "peer batch %d (on %s, for %llu): %d %s, not -EOWNERDEAD naming "
                      "process %d",
                      i, P.dev[i] ? "cuda" : "cpu", (unsigned long long)P.want[i], rc, devq_errmsg(),
                      (int)P.pid);
    }
    if (getenv("SOAK_VERBOSE"))
        printf("round %d: peer %d killed at value %llu: %d of %d batches lost it "
               "(-EOWNERDEAD)\n",
               r->plan->round, (int)P.pid, (unsigned long long)devq_signal_value(P.s), lost, P.nb);
    /* A host wait past the last value: never reached, the peer is dead. */
    int rc = devq_signal_wait(P.s, PEER_TOP + 9, SOAK_WAIT_NS);
    if (rc != -EOWNERDEAD || !names_peer(devq_errmsg()))
        soak_fail(r, "peer: host wait for %d: %d %s, not -EOWNERDEAD naming process %d", PEER_TOP + 9, rc,
                  devq_errmsg(), (int)P.pid);
    for (int d = 0; d < SOAK_NDEV; d++)
        if (P.q[d])
            devq_queue_destroy(P.q[d]);
    for (int i = 0; i < P.nb; i++)
        devq_signal_destroy(P.done[i]);
    devq_signal_destroy(P.s);
    P.on = false;
}
