/* SPDX-License-Identifier: MIT */
/* A rank killed mid-collective (tests/scripts/channels-mpi-netns, across the
 * simulated hosts): every rank starts a 16 MiB all_reduce on a channel
 * with a 5 s timeout; the last rank kills itself (SIGKILL, no notice
 * sent) once its op is submitted.  Every survivor's finish must fail --
 * not hang -- within the timeout plus slack, with a cause that names the
 * lost rank, and the op's output buffer must be failed.  Each survivor
 * prints "chan_kill: rank R: ok" (the harness counts them); exit 1 on a
 * wrong result.  Needs mpirun's --enable-recovery (Open MPI), so that the
 * launcher leaves the survivors running when a rank dies. */
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

int main(void)
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
    printf("chan_kill: rank %d: %s after %llu ms: %d: %s\n", rank, bad ? "FAILED" : "ok",
           (unsigned long long)took, r, devq_errmsg());
    fflush(stdout);
    /* The dead rank's collective cannot be withdrawn from MPI: leave
     * without tearing down (MPI_Finalize would wait for the dead rank). */
    _exit(bad);
}
