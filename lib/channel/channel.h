/* SPDX-License-Identifier: MIT */
/* Channels (DESIGN §11): one rank of a group on an existing engine
 * (devq_engine.h).  The layer sits above queue: its ops are OP_WORK ops
 * recorded into batches (lib/queue/record.c), run in stream order by
 * the queue's own callbacks, and they fail through the batch walk like
 * any op (§5a).  The channel only orders them (one group at a time per
 * channel, in the order they run), progresses the engine with bounded
 * spinning then back-off, and times out every wait. */
#ifndef DEVQ_LIB_CHANNEL_H
#define DEVQ_LIB_CHANNEL_H

#include <pthread.h>
#include <stdint.h>
#include <devq/devq.h>
#include <devq/devq_engine.h>
#include "object.h"

#define DEVQ_MAGIC_CHANNEL 0x4348414eu /* "CHAN" */
#define DEVQ_CHANNEL_MSG_MAX 384

struct devq_chan_flight;

/* A buffer a stream channel op reads, and the write generation it reads
 * (buffer.h): checked when the stream reaches the op (stream.c). */
struct devq_chan_input {
    struct devq_buffer *buf;
    uint32_t gen;
};

struct devq_channel {
    struct devq_object obj;
    struct devq_device *dev;           /* one reference */
    const struct devq_engine_ops *eng; /* host engine (cpu: MPI), or NULL: */
    devq_eng_comm *comm;
    /* Stream channels (stream.c): the backend's chan_* entries (cuda:
     * NCCL, hip: RCCL) run the ops on the queue's device stream. */
    const struct devq_backend_ops *pl;
    devq_pl_chan *pc;
    const char *engine_name; /* "mpi", "NCCL", "RCCL": messages */
    int rank, size;
    unsigned number;             /* per process, for messages */
    _Atomic uint64_t timeout_ns; /* one op (group) waiting for its peers */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int busy; /* a group holds the channel */
    /* Which (its gid, devq_work_fn): written under lock with busy, read
     * without it by the group's own members (holds(), coll.c), which
     * ask once per op. */
    _Atomic(const void *) holder;
    uint64_t ops_run; /* ops started, for messages */
    /* Ranks out of step / engine failed: later ops fail.  Set under lock
     * with broken_msg; every op reads it without the lock first (0 is
     * the answer almost always), the message under it. */
    _Atomic int broken;
    char broken_msg[DEVQ_CHANNEL_MSG_MAX];
    devq_eng_req **reqs; /* the running group's started ops */
    const char **req_names;
    struct devq_chan_span *spans; /* the memory each reads and writes */
    size_t nreqs, capreqs;
    /* Stream channels.  The group being issued (device lock): */
    struct devq_eng_op *pend;
    struct devq_chan_input *pend_in; /* what each pending op reads */
    size_t npend, cappend;
    const void *pend_gid;
    /* Groups enqueued and not yet completed, for the watchdog (lock). */
    struct devq_chan_flight *flights;
    pthread_t watchdog;
    int wd_started, wd_stop, aborted;
    int abort_req, abort_done; /* a group's input failed: the watchdog aborts */
    pthread_cond_t wd_cv;
    pthread_cond_t abort_cv; /* abort_done set */
};


/* Host memory an op reads [rd_lo, rd_hi) and writes [wr_lo, wr_hi). */
struct devq_chan_span {
    uintptr_t rd_lo, rd_hi, wr_lo, wr_hi;
    /* The buffers that memory is in (src, dst; NULL if none): an op the
     * engine cannot withdraw keeps their memory (devq__buffer_hold_memory). */
    struct devq_buffer *bufs[2];
};

/* One channel op as recorded into the batch (coll.c). */
struct chan_op {
    devq_channel *ch;
    struct devq_eng_op op;
    const char *what; /* "all_reduce", ... (static) */
    struct devq_chan_span span;
    struct devq_chan_flight *flight; /* stream channels: the last member's group */
    /* Host channels, a group's last member run at submit (coll.c): its
     * group was started there and is still running, so the stream
     * callback that takes it over only waits for it. */
    int started;
    int start_err; /* this member's own start failure, or 0 */
    uint64_t op_no;
};

/* engine.c: the engine for dev's backend, loaded on first use (0 or
 * -ENOTSUP with a message naming the module and the fix); *out is NULL
 * when the backend's plugin has channel entries (a stream channel). */
int devq__channel_engine(struct devq_device *dev, const struct devq_engine_ops **out, const char *fn);
/* The MPI engine whatever dev's backend (bootstrap.c carries NCCL/RCCL
 * ids over it); 0 or -ENOTSUP with the loader's message. */
int devq__channel_mpi_engine(const struct devq_engine_ops **out, const char *fn);
/* bootstrap.c: a cuda/hip channel whose rendezvous is an MPI group
 * (boot, consumed: the launcher's world or the program's communicator):
 * rank 0's NCCL/RCCL id travels to the others over it. */
int devq__channel_over_mpi(struct devq_device *dev, const struct devq_engine_ops *mpi, devq_eng_comm *boot,
                           devq_pl_chan **out, const char *fn);
/* Whether this process was started by a launcher devq knows (mpirun,
 * mpiexec, srun): only then is there a world to join. */
int devq__channel_under_launcher(void);
/* Whether channels can work on dev (for DEVQ_CAP_CHANNELS): the engine
 * module is installed; it is not loaded here. */
int devq__channel_engine_present(const struct devq_device *dev);
/* The composition root calls this when a device is set up. */
void devq__channel_attach(struct devq_device *dev);

int devq__channel_check(const devq_channel *ch, const char *fn);
/* coll.c: run the ops of a group to completion (timeout, failure). */
int devq__channel_wait_group(devq_channel *ch, const char *what, uint64_t op_no);
/* The same, but give up after spinning budget_ns with the group still
 * running: DEVQ_WORK_PENDING (batch.h), every op left as it is. */
int devq__channel_wait_group_for(devq_channel *ch, const char *what, uint64_t op_no, uint64_t budget_ns);
/* The first cause wins (coll.c). */
void devq__channel_set_broken(devq_channel *ch, const char *msg);
/* -EIO with the first cause when broken, else 0. */
int devq__channel_broken_err(devq_channel *ch);

/* stream.c: ops of stream channels (OP_WORK issue and run, batch.h). */
/* Start the channel's watchdog thread if it is not running: 0, or
 * -EAGAIN / -ENOMEM with a message naming fn (recording calls). */
int devq__chan_stream_start(devq_channel *ch, const char *fn);
int devq__chan_stream_issue(void *data, devq_pl_stream *s, unsigned group, const void *gid);
int devq__chan_stream_run(void *data, int status, unsigned group, const void *gid);
/* At the channel's end: stop the watchdog, free what is left. */
void devq__chan_stream_fini(devq_channel *ch);

#endif
