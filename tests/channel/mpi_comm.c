/* SPDX-License-Identifier: MIT */
/* devq_channel_create_mpi (devq_mpi.h) under `mpirun -np 2`, run by
 * tests/scripts/channels-mpi-comm (cpu over the MPI engine) and
 * tests/channels-mpi-{cuda,hip}-emu (NCCL/RCCL, emulated, whose rank 0 id
 * the MPI engine carries): the program initialises MPI itself, joins the
 * launcher's world (desc NULL), splits its world, and makes devq
 * channels over the pieces.  The channel's
 * rank and size must be the sub-communicator's (not the world's), and
 * an all_reduce over it must sum exactly the ranks in it.  Misuse gets
 * -EINVAL with a message naming the fix.
 *
 * Not a Check suite: Check forks, and MPI must not be used across a fork. */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq_mpi.h>

#include "chan_ref.h"

#define TIMEOUT_NS (60ull * 1000000000ull)

static devq_device *dev;
static devq_queue *q;

/* all_reduce SUM of n int32 values v[i] = (mine + 1) * (i + 1) over ch;
 * every rank of ch must see (sum of (r + 1) over ch's world ranks) * (i + 1). */
static void check_sum(devq_channel *ch, int mine, int want_factor, const char *what)
{
    enum { N = 1000 };
    static int32_t p[N];
    devq_buffer *b = NULL;
    OK(devq_buffer_alloc(dev, N * sizeof(int32_t), NULL, 0, &b));
    if (!b)
        return;
    for (int i = 0; i < N; i++)
        p[i] = (mine + 1) * (i + 1);
    /* Through the queue, not a host pointer: cuda/hip memory has none. */
    OK(devq_queue_write(q, b, 0, p, sizeof p));
    OK(devq_queue_all_reduce(q, ch, b, 0, b, 0, N, DEVQ_I32, DEVQ_SUM));
    OK(devq_queue_read(q, p, b, 0, sizeof p));
    OK(devq_queue_submit(q));
    OK(devq_queue_finish(q, TIMEOUT_NS));
    int bad = 0;
    for (int i = 0; i < N && !bad; i++)
        if (p[i] != want_factor * (i + 1)) {
            CHECK(0, "%s: element %d is %d, want %d", what, i, (int)p[i], want_factor * (i + 1));
            bad = 1;
        }
    OK(devq_buffer_free(b, NULL));
}

/* The launcher's world (desc NULL): every rank of mpirun, in its order.
 * On cuda/hip the MPI engine carries rank 0's NCCL/RCCL id. */
static void test_world(int wsize)
{
    devq_channel *ch = NULL;
    OK(devq_channel_create(dev, NULL, &ch));
    if (!ch)
        return;
    CHECK(devq_channel_rank(ch) == rank && devq_channel_size(ch) == wsize, "world rank %d size %d",
          devq_channel_rank(ch), devq_channel_size(ch));
    check_sum(ch, rank, wsize * (wsize + 1) / 2, "world");
    devq_channel_destroy(ch);
}

/* Every rank in one communicator, ranks reversed by the key: the
 * channel's rank must follow the communicator, not the world. */
static void test_reversed(int wsize)
{
    MPI_Comm rev;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - 1 - rank, &rev) == MPI_SUCCESS, "split");
    devq_channel *ch = NULL;
    OK(devq_channel_create_mpi(dev, rev, &ch));
    if (ch) {
        int crank;
        MPI_Comm_rank(rev, &crank);
        CHECK(devq_channel_rank(ch) == crank && crank == wsize - 1 - rank, "rank %d, communicator's %d",
              devq_channel_rank(ch), crank);
        CHECK(devq_channel_size(ch) == wsize, "size %d", devq_channel_size(ch));
        check_sum(ch, rank, wsize * (wsize + 1) / 2, "reversed");
        /* The program's own traffic on rev does not meet devq's (devq
         * talks on a duplicate): an MPI_Allreduce still sees its own data. */
        int one = 1, all = 0;
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, rev);
        CHECK(all == wsize, "program's MPI_Allreduce on the communicator gave %d", all);
        devq_channel_destroy(ch);
    }
    MPI_Comm_free(&rev);
}

/* One communicator per rank (color = world rank): each channel has size
 * 1, and its all_reduce is the rank's own data, although the world
 * holds more ranks. */
static void test_singletons(void)
{
    MPI_Comm solo;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &solo) == MPI_SUCCESS, "split");
    devq_channel *ch = NULL;
    OK(devq_channel_create_mpi(dev, solo, &ch));
    if (ch) {
        CHECK(devq_channel_rank(ch) == 0 && devq_channel_size(ch) == 1, "rank %d size %d",
              devq_channel_rank(ch), devq_channel_size(ch));
        check_sum(ch, rank, rank + 1, "singleton");
        /* A devq split of it works too (the engine's communicator is an
         * ordinary one). */
        devq_channel *sub = NULL;
        OK(devq_channel_split(ch, 0, 0, &sub));
        if (sub) {
            CHECK(devq_channel_size(sub) == 1, "split size %d", devq_channel_size(sub));
            devq_channel_destroy(sub);
        }
        devq_channel_destroy(ch);
    }
    MPI_Comm_free(&solo);
}

static void expect_einval(int r, const char *part, const char *what)
{
    CHECK(r == -EINVAL, "%s returned %d, want -EINVAL", what, r);
    CHECK(strstr(devq_errmsg(), part) != NULL, "%s: message lacks '%s'", what, part);
}

static void test_misuse(void)
{
    devq_channel *ch = (devq_channel *)&ch;
    expect_einval(devq_channel_create_mpi(dev, MPI_COMM_NULL, &ch), "MPI_COMM_NULL", "MPI_COMM_NULL");
    CHECK(ch == NULL, "out not cleared on failure");
    struct devq_mpi_handle h = { DEVQ_MPI_HANDLE_MAGIC, DEVQ_MPI_FAMILY, sizeof(MPI_Comm), MPI_COMM_WORLD };
    expect_einval(devq_channel_create_from_handle(dev, &h, sizeof h - 1, &ch), "devq_channel_create_mpi",
                  "short handle");
    h.magic = 1;
    expect_einval(devq_channel_create_from_handle(dev, &h, sizeof h, &ch), "not a struct devq_mpi_handle",
                  "bad magic");
    h.magic = DEVQ_MPI_HANDLE_MAGIC;
    h.family = DEVQ_MPI_FAMILY == DEVQ_MPI_MPICH ? DEVQ_MPI_OPEN_MPI : DEVQ_MPI_MPICH;
    expect_einval(devq_channel_create_from_handle(dev, &h, sizeof h, &ch), "another MPI", "foreign MPI");
    expect_einval(devq_channel_create_from_handle(dev, NULL, 8, &ch), "handle is NULL", "NULL handle");
    expect_einval(devq_channel_create_from_handle(dev, &h, 0, &ch), "0 bytes", "empty handle");
    expect_einval(devq_channel_create_mpi(NULL, MPI_COMM_WORLD, &ch), "devq_channel_create_from_handle",
                  "NULL device");
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_comm: MPI_Init_thread failed\n");
        return 1;
    }
    int wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    const char *spec = getenv("DEVQ_TEST_DEVICE") ? getenv("DEVQ_TEST_DEVICE") : "cpu";
    if (devq_device_open(spec, &dev) < 0) {
        fprintf(stderr, "mpi_comm: no %s device: %s\n", spec, devq_errmsg());
        MPI_Finalize();
        return 99;
    }
    devq_device_info info;
    OK(devq_device_info_get(dev, &info));
    if (!(info.caps & DEVQ_CAP_CHANNELS)) {
        fprintf(stderr,
                "mpi_comm: skipped: no DEVQ_CAP_CHANNELS on %s (no devq-mpi engine, or no NCCL/RCCL)\n",
                spec);
        devq_device_close(dev);
        MPI_Finalize();
        return 77;
    }
    OK(devq_queue_create(dev, NULL, &q));
    test_world(wsize);
    test_reversed(wsize);
    test_singletons();
    test_misuse();
    devq_queue_destroy(q);
    devq_device_close(dev);
    /* Every rank's verdict, so one rank's failure fails the run on both. */
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: mpi_comm: %s (%d failure(s) on all ranks)\n", rank, all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
