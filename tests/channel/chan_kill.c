/* SPDX-License-Identifier: MIT */
/* A rank killed mid-collective (tests/scripts/channels-mpi-netns, across the
 * simulated hosts): every rank starts a 16 MiB all_reduce on a channel
 * with a 5 s timeout; the last rank kills itself (SIGKILL, no notice
 * sent) once its op is submitted.  Every survivor's finish must fail --
 * not hang -- within the timeout plus slack, with a cause that names the
 * lost rank, and the op's output buffer must be failed.  Each survivor
 * prints "chan_kill: rank R: ok" (the harness counts them); exit 1 on a
 * wrong result.  Needs mpirun's --enable-recovery (Open MPI), so that the
 * launcher leaves the survivors running when a rank dies.
 *
 * "chan_kill batch": a rank dies between two dependent ops of a batch
 * instead: every rank submits 100 dependent 8-byte all_reduces in one
 * batch (progressed back to back, lib/channel/coll.c) and the last rank
 * kills itself at the start of the 37th (DEVQ_MPI_TEST_KILL_OP, its
 * channel's op 38 after one warm-up op), after its 36th completed.  The
 * survivors must fail the same way, and on 2 ranks the survivor's buffer
 * must hold what 36 ops made (none after ran). */
#include "config.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devq/devq.h>

#define TIMEOUT_S 5
#define COUNT (4u << 20) /* F32: 16 MiB */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define OK(x)                                                          \
    do {                                                               \
        if ((x) < 0) {                                                 \
            fprintf(stderr, "chan_kill: %s: %s\n", #x, devq_errmsg()); \
            return 1;                                                  \
        }                                                              \
    } while (0)

#define BATCH_OPS 100
#define BATCH_KILL_AT 37

static int check_failed(int r, uint64_t took, int rank, int victim, devq_buffer *b);

/* Warm-up op, then the batch; the victim dies at the batch's 37th op. */
static int batch_mode(devq_device *dev, int rank, int size, int victim)
{
    devq_channel *ch;
    devq_queue *q;
    devq_buffer *b;
    if (rank == victim)
        setenv("DEVQ_MPI_TEST_KILL_OP", "38", 1); /* read when the channel is made */
    OK(devq_channel_create(dev, NULL, &ch));
    unsetenv("DEVQ_MPI_TEST_KILL_OP");
    OK(devq_channel_set_timeout(ch, TIMEOUT_S * 1000000000ull));
    OK(devq_queue_create(dev, NULL, &q));
    OK(devq_buffer_alloc(dev, 8, NULL, 0, &b));
    uint64_t *p = devq_buffer_host_ptr(b);
    p[0] = 1;
    OK(devq_queue_all_reduce(q, ch, b, 0, b, 0, 1, DEVQ_U64, DEVQ_SUM));
    OK(devq_queue_submit(q));
    OK(devq_queue_finish(q, 60ull * 1000000000ull));
    uint64_t want = 1; /* size^37: the warm-up and 36 of the batch */
    for (int i = 0; i < BATCH_KILL_AT; i++)
        want *= (uint64_t)size;
    uint64_t t0 = now_ms();
    for (int i = 0; i < BATCH_OPS; i++)
        OK(devq_queue_all_reduce(q, ch, b, 0, b, 0, 1, DEVQ_U64, DEVQ_SUM));
    OK(devq_queue_submit(q)); /* the victim dies in here */
    int r = devq_queue_finish(q, 60ull * 1000000000ull);
    int bad = check_failed(r, now_ms() - t0, rank, victim, b);
    if (!bad && size == 2 && p[0] != want) {
        fprintf(stderr, "chan_kill: rank %d: the buffer holds %llu, want %llu (36 ops of the batch ran)\n",
                rank, (unsigned long long)p[0], (unsigned long long)want);
        bad = 1;
    }
    printf("chan_kill: rank %d: %s after %llu ms (batch, killed at op %d of %d): %d: %s\n", rank,
           bad ? "FAILED" : "ok", (unsigned long long)(now_ms() - t0), BATCH_KILL_AT, BATCH_OPS, r,
           devq_errmsg());
    fflush(stdout);
    _exit(bad); /* as below: no teardown with a dead rank */
}

int main(int argc, char **argv)
{
    devq_device *dev;
    devq_channel *ch;
    devq_queue *q;
    devq_buffer *b;
    OK(devq_device_open("cpu", &dev));
    OK(devq_channel_create(dev, NULL, &ch));
    int rank = devq_channel_rank(ch), size = devq_channel_size(ch), victim = size - 1;
    if (size < 2) {
        fprintf(stderr,
                "chan_kill: skipped: run on 2 or more ranks (tests/scripts/channels-mpi-netns), not alone\n");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "batch"))
        return batch_mode(dev, rank, size, victim);
    OK(devq_channel_set_timeout(ch, TIMEOUT_S * 1000000000ull));
    OK(devq_queue_create(dev, NULL, &q));
    OK(devq_buffer_alloc(dev, COUNT * sizeof(float), NULL, 0, &b));
    float *p = devq_buffer_host_ptr(b);
    for (size_t i = 0; i < COUNT; i++)
        p[i] = 1.0f;
    /* One op every rank finishes: the channel works across the hosts. */
    OK(devq_queue_all_reduce(q, ch, b, 0, b, 0, COUNT, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(q));
    OK(devq_queue_finish(q, 60ull * 1000000000ull));
    if (p[0] != (float)size || p[COUNT - 1] != (float)size) {
        fprintf(stderr, "chan_kill: rank %d: warm-up all_reduce gave %g, want %d\n", rank, p[0], size);
        return 1;
    }
    OK(devq_queue_all_reduce(q, ch, b, 0, b, 0, COUNT, DEVQ_F32, DEVQ_SUM));
    OK(devq_queue_submit(q));
    if (rank == victim) {
        /* Let the op reach MPI, then die the way a crashed host does. */
        usleep(20000);
        raise(SIGKILL);
    }
    uint64_t t0 = now_ms();
    int r = devq_queue_finish(q, 60ull * 1000000000ull);
    uint64_t took = now_ms() - t0;
    int bad = check_failed(r, took, rank, victim, b);
    printf("chan_kill: rank %d: %s after %llu ms: %d: %s\n", rank, bad ? "FAILED" : "ok",
           (unsigned long long)took, r, devq_errmsg());
    fflush(stdout);
    /* The dead rank's collective cannot be withdrawn from MPI: leave
     * without tearing down (MPI_Finalize would wait for the dead rank). */
    _exit(bad);
}

/* A survivor's verdict: failed, naming the victim, within the timeout
 * plus slack, the output failed.  1 (and why on stderr) when not. */
static int check_failed(int r, uint64_t took, int rank, int victim, devq_buffer *b)
{
    char want[32];
    snprintf(want, sizeof want, "rank %d", victim);
    int bad = 0;
    if (r >= 0) {
        fprintf(stderr, "chan_kill: rank %d: the op finished although rank %d died\n", rank, victim);
        bad = 1;
    } else if (!strstr(devq_errmsg(), want)) {
        fprintf(stderr, "chan_kill: rank %d: the cause does not name %s: %s\n", rank, want, devq_errmsg());
        bad = 1;
    } else if (took > (TIMEOUT_S + 5) * 1000ull) {
        fprintf(stderr, "chan_kill: rank %d: failing took %llu ms (timeout %d s)\n", rank,
                (unsigned long long)took, TIMEOUT_S);
        bad = 1;
    } else if (devq_buffer_status(b) >= 0) {
        fprintf(stderr, "chan_kill: rank %d: the all_reduce's buffer is not failed\n", rank);
        bad = 1;
    }
    return bad;
}
