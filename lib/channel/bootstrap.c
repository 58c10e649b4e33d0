/* SPDX-License-Identifier: MIT */
/* Rendezvous of cuda/hip channels over MPI.  NCCL and RCCL join ranks
 * only through rank 0's unique id, which something else must carry to
 * the other ranks.  Under a launcher (mpirun, srun), or from a program's
 * own MPI communicator (devq_mpi.h), that something is the devq-mpi
 * engine: rank 0 makes the id, one broadcast carries it (with rank 0's
 * error instead, so a failed id fails every rank rather than leaving
 * them waiting), and the MPI group is let go once the NCCL/RCCL one
 * exists.  The broadcast is bounded like any channel wait. */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "channel.h"
#include "device.h"
#include "error.h"
#include "futex.h"

#define ID_MAX 512 /* NCCL's id is 128 bytes */
#define BOOT_TIMEOUT_NS (60ull * 1000000000ull)

/* What rank 0 sends: its id, or why it has none. */
struct boot_msg {
    int64_t status; /* id bytes (> 0) or rank 0's negative errno */
    char text[256]; /* rank 0's message when status < 0 */
    unsigned char id[ID_MAX];
};

int devq__channel_under_launcher(void)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", /* Open MPI's mpirun */
        "PMI_SIZE",
        "PMI_RANK",     /* MPICH's hydra, srun --mpi=pmi2 */
        "PMIX_RANK",    /* PMIx launchers */
        "SLURM_PROCID", /* srun */
    };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

/* One broadcast of m from rank 0 over boot, waited for with bounded
 * back-off (never a blocking MPI wait: see coll.c). */
static int broadcast(const struct devq_engine_ops *mpi, devq_eng_comm *boot, struct boot_msg *m,
                     const char *fn)
{
    struct devq_eng_op op = {
        .kind = DEVQ_ENG_BROADCAST,
        .dst = m,
        .src = m,
        .count = sizeof *m,
        .type = DEVQ_U8,
        .peer = 0,
    };
    devq_eng_req *rq = NULL;
    int r = mpi->start(boot, &op, &rq);
    if (r < 0)
        return devq__err(r, "%s: sending rank 0's NCCL/RCCL id over MPI: %s", fn, devq__errmsg_peek());
    uint64_t start = devq__now_ns(), nap = 1000;
    for (;;) {
        int done = 0;
        if ((r = mpi->test(rq, &done)) < 0)
            return devq__err(r, "%s: sending rank 0's NCCL/RCCL id over MPI: %s", fn, devq__errmsg_peek());
        if (done)
            return 0;
        if (devq__now_ns() - start > BOOT_TIMEOUT_NS) {
            mpi->abandon(rq); /* m stays the caller's: see below */
            return devq__err(-ETIMEDOUT,
                             "%s: rank 0's NCCL/RCCL id did not arrive over MPI in %llu s: every "
                             "rank must create the channel",
                             fn, BOOT_TIMEOUT_NS / 1000000000ull);
        }
        struct timespec ts = { 0, (long)nap };
        nanosleep(&ts, NULL);
        if (nap < 100000)
            nap *= 2;
    }
}

int devq__channel_over_mpi(struct devq_device *dev, const struct devq_engine_ops *mpi, devq_eng_comm *boot,
                           devq_pl_chan **out, const char *fn)
{
    int rank = mpi->comm_rank(boot), size = mpi->comm_size(boot);
    /* On the heap: an abandoned broadcast may still write it, so on a
     * timeout it is never freed (a few hundred bytes, once). */
    struct boot_msg *m = calloc(1, sizeof *m);
    if (!m) {
        mpi->comm_destroy(boot);
        return devq__err(-ENOMEM, "%s: out of memory", fn);
    }
    if (rank == 0) {
        size_t n = sizeof m->id;
        int r = dev->ops->chan_id(dev->pl, m->id, &n);
        m->status = r < 0 ? r : (int64_t)n;
        if (r < 0)
            snprintf(m->text, sizeof m->text, "%s", devq__errmsg_peek());
    }
    int r = broadcast(mpi, boot, m, fn);
    if (r == -ETIMEDOUT) {
        mpi->comm_destroy(boot);
        return r; /* m is leaked on purpose */
    }
    mpi->comm_destroy(boot);
    if (r < 0) {
        free(m);
        return r;
    }
    m->text[sizeof m->text - 1] = '\0';
    if (m->status <= 0 || m->status > ID_MAX) {
        r = m->status < 0 ? (int)m->status : -EPROTO;
        devq__err(r, "%s: rank 0 could not make the %s:%d id this channel needs: %s", fn, dev->info.backend,
                  dev->info.ordinal, m->status < 0 ? m->text : "it sent a malformed id");
        free(m);
        return r;
    }
    devq_pl_chan *pc = NULL;
    r = dev->ops->chan_create(dev->pl, rank, size, m->id, (size_t)m->status, &pc);
    free(m);
    if (r < 0)
        return devq__err(r, "%s: %s", fn, devq__errmsg_peek());
    *out = pc;
    return 0;
}
